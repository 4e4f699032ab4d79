"""kraft.version 1 (KIP-853) against Apache Kafka's own ``KafkaRaftClient``: AddRaftVoter, RemoveRaftVoter, ApiVersions.

Each trace is hand-built (inputs only) and applied to Kafka 4.3.1's client started from a bootstrap checkpoint as
``kafka-storage format --initial-controllers`` writes it (``harness/src/raft``); the tests assert what Kafka does
(the ApiVersions request, the VotersRecord, the answer once committed, the refusals) and then that the reference
follows Kafka's run. The seven differences Kafka showed (D1-D7, each fixed in the reference citing the Kafka method
that decides it) are asserted where they show: the addressee's directory id in VoteRequest and BeginQuorumEpoch (D1),
the candidate's directory id in its quorum-state file (D2), the admin answered before the fetch that commits its
change (D3), the "" message of a refusal by a node that does not lead (D4), "The request timed out." of an expired
change (D5), the bootstrap servers -2, -3, ... (D6) and the voter keys of a message in Java's hash-set order (D7).
"""

from __future__ import annotations

from typing import Any, Optional

import pytest

from kraftspec.harness import conform
from kraftspec.harness.adapter import hooks
from kraftspec.harness.jvm import DEFAULT_VERSION, shared
from kraftspec.traces.format.envelope import trace_from_json, trace_to_json
from kraftspec.traces.replay.verdict import Verdict

DIRECTORY = {1: "a3JhZnRzcGVjLWgyLWRyMQ", 2: "a3JhZnRzcGVjLWgyLWRyMg", 3: "a3JhZnRzcGVjLWgyLWRyMw",
             4: "a3JhZnRzcGVjLWgyLWRyNA", 5: "a3JhZnRzcGVjLWgyLWRyNQ"}
"""Each node's directory id (a UUID in Kafka's base64 text)."""
ADMIN = 1000
"""The admin client's id (``source`` of AddRaftVoter / RemoveRaftVoter, as the simulator numbers it)."""


def kafka() -> Any:
    return shared(DEFAULT_VERSION)


def voter(node: int) -> dict[str, Any]:
    return {"id": node, "directory_id": DIRECTORY[node], "listeners": [f"CONTROLLER://controller{node}:9093"]}


def node_state(local: int, voters: tuple[int, ...], **more: Any) -> dict[str, Any]:
    return {"local_id": local, "kraft_version": 1, "directory_id": DIRECTORY[local],
            "bootstrap_voters": [voter(v) for v in voters], **more}


CANDIDATE = node_state(1, (1, 2, 3), quorum_state={"epoch": 1, "voted_key": {"id": 1, "directory_id": DIRECTORY[1]}})
"""Node 1 of voters 1-3, restarted from its vote for itself in epoch 1 (a Candidate)."""
STANDALONE = node_state(1, (1,))
"""Node 1 formatted ``--standalone``: the only voter, leader from ``initialize``."""


def tick(now: int) -> dict[str, Any]:
    return {"action": "tick", "now": now}


def fetch(source: int, offset: int, now: int) -> dict[str, Any]:
    return {"action": "fetch_request", "now": now, "message": {
        "replica_id": source, "current_leader_epoch": 1, "fetch_offset": offset,
        "last_fetched_epoch": 1 if offset else 0, "replica_directory_id": DIRECTORY[source],
        "correlation_id": 100 + now}}


def add(node: int, now: int, ack_when_committed: bool = True) -> dict[str, Any]:
    return {"action": "add_raft_voter_request", "now": now, "message": {
        "voter_id": node, "voter_directory_id": DIRECTORY[node], "listeners": [f"CONTROLLER://controller{node}:9093"],
        "ack_when_committed": ack_when_committed, "source": ADMIN, "correlation_id": 200 + now}}


def remove(node: int, now: int) -> dict[str, Any]:
    return {"action": "remove_raft_voter_request", "now": now, "message": {
        "voter_id": node, "voter_directory_id": DIRECTORY[node], "source": ADMIN, "correlation_id": 300 + now}}


def api_versions(source: int, now: int, kraft_versions: Optional[tuple[int, int]] = (0, 1),
                 error: str = "NONE") -> dict[str, Any]:
    """The ApiVersions answer of ``source``: its kraft.version range (None: the feature not listed)."""
    return {"action": "api_versions_response", "now": now, "message": {
        "source": source, "error": error,
        "kraft_version_range": None if kraft_versions is None else list(kraft_versions)}}


ELECTED = [tick(0), {"action": "vote_response", "now": 1, "message": {"source": 2, "leader_epoch": 1,
                                                                     "vote_granted": True}}]
"""The Candidate asks 2 and 3 for votes and is elected by 2's: LeaderChange, KRaftVersion and Voters records at 0-2."""
COMMITTED = ELECTED + [fetch(2, 3, 2)]
"""... and voter 2 fetches them: the epoch is committed (high watermark 3)."""
GROWN = [tick(0), fetch(2, 3, 2), add(2, 3, False), api_versions(2, 4), fetch(2, 4, 5),
         fetch(3, 4, 6), add(3, 7, False), api_versions(3, 9), fetch(2, 5, 10), fetch(3, 5, 11)]
"""The standalone leader adds 2, then 3 (each answered once appended, committed by the next fetches): voters 1-3."""


def run(initial: dict[str, Any], inputs: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], Verdict]:
    """Kafka's steps for ``inputs`` and the reference's verdict on them (a refusal by Kafka ends the steps)."""
    obj = {"format": "1.0", "component": "raft", "id": "kraft-version-1", "initial": {"explicit": initial},
           "steps": [{"input": i} for i in inputs]}
    trace = trace_from_json(obj)
    kafka_run, refusal = conform.kafka_trace(trace, kafka(), hooks("raft"))
    steps = trace_to_json(kafka_run)["steps"]
    if refusal is not None:
        steps[-1]["refused"] = refusal
    return steps, conform.judge(kafka_run, refusal)


def sent(step: dict[str, Any]) -> list[tuple[Any, ...]]:
    """A step's sends as (destination, type), an admin answer as (destination, api, error, message)."""
    return [(s["destination"], s["api"], s["error"], s["error_message"]) if s["type"] == "VoterChangeResponse"
            else (s["destination"], s["type"]) for s in step["output"]["response"]["sends"]]


def first_difference(verdict: Verdict) -> Optional[tuple[int, frozenset[str]]]:
    """The step where the reference first differs from Kafka's run and the fields that differ there (None: agree)."""
    d = verdict.divergence
    return None if d is None else (d.step, frozenset(f.path for f in d.diffs))


# ------------------------------------------------------------------------------------------------
# What Kafka's client does


def test_a_kraft_version_1_leader_writes_its_voters_after_the_leader_change() -> None:
    """The bootstrap checkpoint (0, 0) gives the voters; the new leader's first batch holds LeaderChange,
    KRaftVersionRecord 1 and the voter set with its own node (``appendStartOfEpochControlRecords``). D1, D2: each
    VoteRequest names its addressee's directory id from the voter set (``KafkaRaftClient.buildVoteRequest(remoteVoter,
    ..)`` -> ``RaftUtil.singletonVoteRequest``) and the quorum-state file (data version 1,
    ``ElectionState.toQuorumStateData``) keeps the candidate's own directory id."""
    steps, verdict = run(CANDIDATE, ELECTED)
    post = steps[1]["post"]
    assert post["role"] == "Leader" and post["latest_snapshot_id"] == [0, 0]
    assert [e["record"]["type"] for e in post["log"]] == ["LeaderChangeMessage", "KRaftVersionRecord", "VotersRecord"]
    assert post["log"][1]["record"]["kraft_version"] == 1
    assert post["log"][2]["record"]["voters"] == [{**voter(v), "kraft_version_range": [0, 1]} for v in (1, 2, 3)]
    votes = steps[0]["output"]["response"]["sends"]
    assert {(s["destination"], s["voter_directory_id"]) for s in votes} == {(2, DIRECTORY[2]), (3, DIRECTORY[3])}
    assert steps[0]["post"]["quorum_state_file"]["voted_key"] == {"id": 1, "directory_id": DIRECTORY[1]}
    assert verdict.conformant, first_difference(verdict)


def test_a_leader_of_three_adds_a_caught_up_observer() -> None:
    """The leader asks observer 4 for its ApiVersions, refuses a second change while this one runs, appends the
    voter set with 4 on the answer and answers the admin once a majority of the four (1, 2, 4) has the record."""
    steps, verdict = run(CANDIDATE, COMMITTED + [fetch(4, 3, 3), add(4, 10), add(5, 11), api_versions(4, 12),
                                                 fetch(2, 4, 13), fetch(4, 4, 14)])
    assert sent(steps[4]) == [(4, "ApiVersionsRequest")]
    assert sent(steps[5]) == [(ADMIN, "AddRaftVoter", "REQUEST_TIMED_OUT",
                               "Request timed out waiting for leader to handle previous voter change request")]
    assert sent(steps[6]) == [] and steps[6]["post"]["log"][3]["record"]["voters"][3]["id"] == 4
    assert sent(steps[7]) == [(2, "FetchResponse")] and steps[7]["post"]["high_watermark"] == 3
    assert sent(steps[8]) == [(ADMIN, "AddRaftVoter", "NONE", None), (4, "FetchResponse")]
    assert steps[8]["post"]["high_watermark"] == 4
    assert verdict.conformant, first_difference(verdict)


def test_a_leader_removes_a_voter_and_answers_once_the_smaller_set_commits() -> None:
    """D3: the fetch that commits the VotersRecord answers the admin first (``tryCompleteFetchRequest`` ->
    ``onUpdateLeaderHighWatermark`` -> ``RemoveVoterHandler.highWatermarkUpdated``, then ``buildFetchResponse``)."""
    steps, verdict = run(CANDIDATE, COMMITTED + [remove(3, 10), fetch(2, 4, 11)])
    assert sent(steps[3]) == [] and [v["id"] for v in steps[3]["post"]["log"][3]["record"]["voters"]] == [1, 2]
    assert sent(steps[4]) == [(ADMIN, "RemoveRaftVoter", "NONE", None), (2, "FetchResponse")]
    assert verdict.conformant, first_difference(verdict)


def test_a_leader_that_removes_itself_resigns_once_the_removal_commits() -> None:
    """Without the leader the set {2, 3} needs both; then ``RemoveVoterHandler.highWatermarkUpdated`` resigns it, and
    the next poll sends EndQuorumEpoch."""
    steps, verdict = run(CANDIDATE, COMMITTED + [remove(1, 10), fetch(2, 4, 11), fetch(3, 4, 12), tick(13)])
    assert steps[4]["post"]["role"] == "Leader" and steps[4]["post"]["high_watermark"] == 3
    assert sent(steps[5]) == [(ADMIN, "RemoveRaftVoter", "NONE", None), (3, "FetchResponse")]
    assert steps[5]["post"]["role"] == "Resigned"
    assert sorted(sent(steps[6])) == [(2, "EndQuorumEpochRequest"), (3, "EndQuorumEpochRequest")]
    assert verdict.conformant, first_difference(verdict)


HASH_ORDER = f"[{', '.join(f'ReplicaKey(id={v}, directoryId={DIRECTORY[v]})' for v in (1, 3, 2))}]"
"""D7: voters 1-3 as Kafka's messages list them, ``VoterSet.voterKeys()`` (a ``HashSet``) in its iteration order."""
REFUSALS = {
    "not the leader": ([tick(0), add(4, 1)], "AddRaftVoter", "NOT_LEADER_OR_FOLLOWER", ""),
    "epoch not committed": (ELECTED + [remove(3, 2)], "RemoveRaftVoter", "REQUEST_TIMED_OUT",
                            "Request timed out waiting for leader to establish HWM and fence previous voter changes"),
    "unknown voter": (COMMITTED + [remove(5, 10)], "RemoveRaftVoter", "VOTER_NOT_FOUND",
                      f"Cannot remove voter ReplicaKey(id=5, directoryId={DIRECTORY[5]}) from the set of voters "
                      f"{HASH_ORDER}"),
    "duplicate voter": (COMMITTED + [add(2, 10)], "AddRaftVoter", "DUPLICATE_VOTER",
                        f"The voter id for ReplicaKey(id=2, directoryId={DIRECTORY[2]}) is already part of the set of "
                        f"voters {HASH_ORDER}."),
    "not caught up": (COMMITTED + [add(4, 10), api_versions(4, 11)], "AddRaftVoter", "REQUEST_TIMED_OUT",
                      f"Aborted add voter operation for ReplicaKey(id=4, directoryId={DIRECTORY[4]}) since it is "
                      f"lagging behind"),
    "ApiVersions failed": (COMMITTED + [fetch(4, 3, 3), add(4, 10), api_versions(4, 11, error="UNSUPPORTED_VERSION")],
                           "AddRaftVoter", "REQUEST_TIMED_OUT",
                           "Aborted add voter operation for since API_VERSIONS returned an error UNSUPPORTED_VERSION"),
    "no kraft.version": (COMMITTED + [fetch(4, 3, 3), add(4, 10), api_versions(4, 11, kraft_versions=None)],
                         "AddRaftVoter", "INVALID_REQUEST",
                         f"Aborted add voter operation for ReplicaKey(id=4, directoryId={DIRECTORY[4]}) since the "
                         f"kraft.version range (min: 0, max: 0) doesn't support the finalized version 1"),
    "timed out": (COMMITTED + [remove(3, 10), tick(2010)], "RemoveRaftVoter", "REQUEST_TIMED_OUT",
                  "The request timed out."),
}


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_a_voter_change_kafka_refuses(case: str) -> None:
    """Each refusal as Kafka words it (D4: a node that does not lead answers the message ""; D5: an expired change
    "The request timed out."; D7: the voters in hash-set order); the last input is the one refused."""
    inputs, api, error, message = REFUSALS[case]
    steps, verdict = run(CANDIDATE, inputs)
    assert sent(steps[-1])[0] == (ADMIN, api, error, message)
    assert verdict.conformant, first_difference(verdict)


def test_kafka_lists_the_voters_of_a_refusal_in_hash_order() -> None:
    """D7: ``AddVoterHandler``'s DUPLICATE_VOTER message shows ``voterKeys()`` (a ``HashSet`` of ``ReplicaKey``) as
    Java iterates it; with these directory ids that is not ascending by id (``raft_voters.voter_keys_in_hash_order``
    follows it)."""
    steps, verdict = run(STANDALONE, GROWN + [add(2, 12)])
    message = sent(steps[-1])[0][3]
    listed = [int(part.split(",")[0]) for part in message.split("ReplicaKey(id=")[2:]]
    assert listed == [1, 3, 2]
    assert verdict.conformant, first_difference(verdict)


def test_an_expired_change_is_answered_with_the_errors_message() -> None:
    """D5 (and D1 for the BeginQuorumEpoch the same poll resends): the add of 3 appended its voter set, nobody
    fetches it, and the request timeout after the add answers REQUEST_TIMED_OUT "The request timed out."
    (``LeaderState.maybeExpirePendingOperation`` passes no message; ``RaftUtil.addVoterResponse`` puts in
    ``Errors.message()``)."""
    steps, verdict = run(STANDALONE, [tick(0), fetch(2, 3, 2), add(2, 3, False), api_versions(2, 4), fetch(2, 4, 5),
                                      fetch(3, 4, 6), add(3, 7), api_versions(3, 9), tick(2007)])
    assert sent(steps[-1])[0] == (ADMIN, "AddRaftVoter", "REQUEST_TIMED_OUT", "The request timed out.")
    assert {(s["destination"], s["voter_directory_id"]) for s in steps[-1]["output"]["response"]["sends"][1:]} == {
        (2, DIRECTORY[2]), (3, DIRECTORY[3])}  # in the order Kafka's set gives, which the step states
    assert verdict.conformant, first_difference(verdict)


def test_a_voter_that_does_not_lead_answers_with_an_empty_message() -> None:
    """D4 (and D6 for the bootstrap Fetch the same poll sends): voter 2, Unattached, refuses an add with
    NOT_LEADER_OR_FOLLOWER and the message "" (``handleAddVoterRequest`` builds that answer with
    ``new AddRaftVoterResponseData().setErrorCode(..)``, whose message keeps its default)."""
    steps, verdict = run(node_state(2, (1, 2, 3)), [add(4, 0)])
    assert sent(steps[0]) == [(ADMIN, "AddRaftVoter", "NOT_LEADER_OR_FOLLOWER", ""), (-2, "FetchRequest")]
    assert verdict.conformant, first_difference(verdict)


def test_kafka_throws_on_a_begin_quorum_epoch_answer_from_a_voter_it_removed() -> None:
    """The suspected Kafka 4.3 problem, confirmed: voter 3's answer to the leader's BeginQuorumEpoch arrives after
    its removal committed; ``handleBeginQuorumEpochResponse`` -> ``LeaderState.addAcknowledgementFrom`` throws
    IllegalArgumentException ("Unexpected acknowledgement from non-voter 3") out of ``poll``. The reference refuses
    the input too (ValueError)."""
    answer = {"action": "quorum_epoch_response", "now": 12, "message": {
        "source": 3, "api": "BeginQuorumEpoch", "leader_epoch": 1, "leader_id": 1}}
    steps, verdict = run(CANDIDATE, COMMITTED + [remove(3, 10), fetch(2, 4, 11), answer])
    assert steps[-1]["refused"] == {"exception": "java.lang.IllegalArgumentException",
                                    "message": "Unexpected acknowledgement from non-voter 3"}
    assert verdict.conformant, first_difference(verdict)


def test_an_observer_fetches_from_the_bootstrap_servers() -> None:
    """D6: a spare node formatted with the initial controllers starts an observer and fetches from a bootstrap server,
    which Kafka numbers -2, -3, ... in ``controller.quorum.bootstrap.servers``'s order (``KafkaRaftClient``'s
    constructor; the harness lists the bootstrap voters' addresses in id order), whatever the voters' own ids; the
    trace's ``bootstrap`` draw picks the start (``RequestManager.findReadyBootstrapServer``)."""
    for draw, server in ((0, -2), (1, -3), (2, -4)):
        steps, verdict = run(node_state(4, (1, 2, 3)), [{**tick(0), "bootstrap": draw}])
        assert steps[0]["post"]["role"] == "Unattached" and sent(steps[0]) == [(server, "FetchRequest")]
        assert verdict.conformant, first_difference(verdict)


# ------------------------------------------------------------------------------------------------
# Where the reference and Kafka agree end to end


def test_a_standalone_leader_grows_to_three_voters_as_kafka_does() -> None:
    """``--standalone``: node 1 leads from ``initialize``; 2 and 3 are added with ``ack_when_committed`` false
    (answered once appended), a change asked while one is pending is refused, and each set commits once a majority
    of it has fetched the record. The reference follows Kafka step by step."""
    steps, verdict = run(STANDALONE, [
        tick(0), fetch(2, 3, 2), add(2, 3, False), api_versions(2, 4), fetch(2, 4, 5),
        fetch(3, 4, 6), add(3, 7, False), add(4, 8), api_versions(3, 9), fetch(2, 5, 10), fetch(3, 5, 11)])
    assert steps[0]["post"]["role"] == "Leader" and steps[0]["post"]["high_watermark"] == 3
    assert sent(steps[3]) == [(ADMIN, "AddRaftVoter", "NONE", None)] and steps[3]["post"]["log_end_offset"] == 4
    assert steps[4]["post"]["high_watermark"] == 4
    assert sent(steps[7])[0][2] == "REQUEST_TIMED_OUT"
    assert steps[9]["post"]["high_watermark"] == 5  # 1 and 2 of {1, 2, 3}
    assert [v["id"] for v in steps[10]["post"]["log"][-1]["record"]["voters"]] == [1, 2, 3]
    assert verdict.conformant, first_difference(verdict)


def test_the_fetch_that_commits_a_removal_answers_the_admin_first() -> None:
    """The standalone leader grown to {1, 2, 3} removes 2: the set {1, 3} commits on 3's fetch, which answers the
    admin before the fetcher (D3)."""
    steps, verdict = run(STANDALONE, GROWN + [remove(2, 12), fetch(3, 6, 13)])
    assert sent(steps[-1]) == [(ADMIN, "RemoveRaftVoter", "NONE", None), (3, "FetchResponse")]
    assert verdict.conformant, first_difference(verdict)


def test_a_voter_reads_voter_sets_from_its_fetches_and_after_a_restart() -> None:
    """Follower 2 learns the leader from BeginQuorumEpoch, fetches the leader's first batch (a voter set with 4), and
    reads it again from its log after a restart."""
    leader_change = {"type": "LeaderChangeMessage", "leader_id": 1, "voters": [1, 2, 3], "granting_voters": [1, 2],
                     "version": 0}
    voters = {"type": "VotersRecord", "version": 0,
              "voters": [{**voter(v), "kraft_version_range": [0, 1]} for v in (1, 2, 3, 4)]}
    records = [{"epoch": 1, "record": r} for r in (leader_change, {"type": "KRaftVersionRecord", "version": 0,
                                                                   "kraft_version": 1}, voters)]
    begin = {"action": "begin_quorum_epoch_request", "now": 1, "message": {
        "leader_id": 1, "leader_epoch": 1, "leader_endpoints": ["CONTROLLER://controller1:9093"], "voter_id": 2,
        "voter_directory_id": DIRECTORY[2], "correlation_id": 7}}
    steps, verdict = run(node_state(2, (1, 2, 3)), [
        begin, {"action": "fetch_response", "now": 3, "message": {
            "source": 1, "leader_epoch": 1, "leader_id": 1, "high_watermark": 3, "records": records}},
        {"action": "restart", "now": 5}, tick(6)])
    assert steps[1]["post"]["log"][2]["record"] == voters and steps[1]["post"]["high_watermark"] == 3
    assert steps[3]["post"]["role"] == "Follower" and sent(steps[3]) == [(1, "FetchRequest")]
    assert verdict.conformant, first_difference(verdict)


def test_an_api_versions_answer_reaches_kafka_under_the_id_kafka_gave_its_request() -> None:
    """The trace numbers the leader's ApiVersions request 99; the answer stating 99 is handed to Kafka under the id
    Kafka gave that request (``harness.raft.kafka_inputs``), so the add goes on."""
    inputs = GROWN[:2] + [add(2, 3, False), api_versions(2, 4)]
    steps = [{"input": i} for i in inputs]
    steps[2]["output"] = {"response": {"sends": [{"destination": 2, "type": "ApiVersionsRequest",
                                                  "correlation_id": 99}]}, "records": []}
    steps[3]["input"]["message"]["correlation_id"] = 99
    obj = {"format": "1.0", "component": "raft", "id": "answers", "initial": {"explicit": STANDALONE}, "steps": steps}
    kafka_run, refusal = conform.kafka_trace(trace_from_json(obj), kafka(), hooks("raft"))
    ran = trace_to_json(kafka_run)["steps"]
    assert refusal is None and ran[3]["input"]["message"]["correlation_id"] == ran[2]["output"]["response"][
        "sends"][0]["correlation_id"] != 99
    assert sent(ran[3]) == [(ADMIN, "AddRaftVoter", "NONE", None)]


def test_a_planted_change_to_the_api_versions_kafka_is_fed_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Kafka is fed kraft.version range [0, 0] where the trace says [0, 1]: Kafka aborts the add, the reference
    (given Kafka's inputs as the trace states them) appends the voter set, and the replay says so."""
    process = kafka()
    honest = process.run

    def planted(component: str, initial: Any, inputs: Any, **options: Any) -> Any:
        fed = [{**i, "message": {**i["message"], "kraft_version_range": [0, 0]}}
               if i["action"] == "api_versions_response" else i for i in inputs]
        return honest(component, initial, fed, **options)

    inputs = GROWN[:2] + [add(2, 3, False), api_versions(2, 4)]
    assert run(STANDALONE, inputs)[1].conformant
    monkeypatch.setattr(process, "run", planted)
    steps, verdict = run(STANDALONE, inputs)
    assert sent(steps[3])[0][2] == "INVALID_REQUEST"
    assert first_difference(verdict) == (3, frozenset({
        "response.sends[0].error", "response.sends[0].error_message", "post.log_end_offset", "post.flushed_end_offset",
        "post.log[3]"}))


AGREEING = {
    "DescribeQuorum": (STANDALONE, GROWN + [{"action": "describe_quorum_request", "now": 12,
                                             "message": {"source": ADMIN}}]),
    "restart": (STANDALONE, GROWN + [{"action": "restart", "now": 20}, tick(21), tick(1500), tick(2500)]),
    "resign": (STANDALONE, GROWN + [{"action": "resign", "now": 20, "epoch": 1}, tick(21)]),
    "shutdown": (STANDALONE, GROWN + [{"action": "shutdown", "now": 20, "timeout_ms": 500}, tick(21), tick(600)]),
    "BeginQuorumEpoch for another directory": (node_state(2, (1, 2, 3)), [{
        "action": "begin_quorum_epoch_request", "now": 1, "message": {
            "leader_id": 1, "leader_epoch": 1, "leader_endpoints": ["CONTROLLER://controller1:9093"], "voter_id": 2,
            "voter_directory_id": DIRECTORY[4], "correlation_id": 7}}]),
}


@pytest.mark.parametrize("case", sorted(AGREEING))
def test_a_kraft_version_1_node_agrees_with_kafka(case: str) -> None:
    """Paths that meet none of D1-D7: the grown standalone quorum's leader answering DescribeQuorum, restarting
    (reading its voters back from the checkpoint and log), resigning, shutting down; a voter answering
    INVALID_VOTER_KEY to a BeginQuorumEpoch addressed to another directory of its id (and following that leader)."""
    initial, inputs = AGREEING[case]
    steps, verdict = run(initial, inputs)
    assert len(steps) == len(inputs) and "refused" not in steps[-1]
    assert verdict.conformant, first_difference(verdict)


# ------------------------------------------------------------------------------------------------
# Found by the 300 simulated kraft.version 1 traces (seed 2711) once D1-D7 were fixed


def leader_records(voter_ids: tuple[int, ...]) -> list[dict[str, Any]]:
    """Leader 1's first batch of epoch 1 (LeaderChange, KRaftVersion 1, the voter set ``voter_ids``) as fetched."""
    leader_change = {"type": "LeaderChangeMessage", "leader_id": 1, "voters": [1, 2, 3], "granting_voters": [1, 2],
                     "version": 0}
    voters = {"type": "VotersRecord", "version": 0,
              "voters": [{**voter(v), "kraft_version_range": [0, 1]} for v in voter_ids]}
    return [{"epoch": 1, "record": r} for r in (leader_change, {"type": "KRaftVersionRecord", "version": 0,
                                                                "kraft_version": 1}, voters)]


def follow_leader_1(voter_ids: tuple[int, ...]) -> list[dict[str, Any]]:
    """Node 2 follows leader 1 (BeginQuorumEpoch) and fetches its first batch, whose voter set is ``voter_ids``."""
    begin = {"action": "begin_quorum_epoch_request", "now": 1, "message": {
        "leader_id": 1, "leader_epoch": 1, "leader_endpoints": ["CONTROLLER://controller1:9093"], "voter_id": 2,
        "voter_directory_id": DIRECTORY[2], "correlation_id": 7}}
    return [begin, {"action": "fetch_response", "now": 3, "message": {
        "source": 1, "leader_epoch": 1, "leader_id": 1, "high_watermark": 3, "records": leader_records(voter_ids)}}]


@pytest.mark.parametrize("can_become_voter", [True, False])
def test_an_observer_flushes_what_it_fetches_when_it_can_become_a_voter(can_become_voter: bool) -> None:
    """``KafkaRaftClient.appendAsFollower``: an observer (no voter before the append) flushes the records it fetched
    only with ``canBecomeVoter`` (a controller's ``KafkaRaftManager``); the harness passes the trace's
    ``can_become_voter`` (default true, as the trace format's state does). It learns leader 1 from bootstrap server
    -2's answer and fetches from 1 in the same poll."""
    found = {"action": "fetch_response", "now": 1, "message": {"source": -2, "leader_epoch": 1, "leader_id": 1,
                                                               "leader_endpoints": ["CONTROLLER://controller1:9093"],
                                                               "high_watermark": 0}}
    fetched = {"action": "fetch_response", "now": 3, "message": {
        "source": 1, "leader_epoch": 1, "leader_id": 1, "high_watermark": 3, "records": leader_records((1, 2, 3))}}
    steps, verdict = run(node_state(4, (1, 2, 3), can_become_voter=can_become_voter),
                         [tick(0), found, fetched])
    assert sent(steps[0]) == [(-2, "FetchRequest")] and sent(steps[1]) == [(1, "FetchRequest")]
    assert steps[2]["post"]["log_end_offset"] == 3 and steps[2]["post"]["role"] == "Follower"
    assert steps[2]["post"]["flushed_end_offset"] == (3 if can_become_voter else 0)
    assert verdict.conformant, first_difference(verdict)


def test_a_lone_voter_elected_by_its_own_timer_writes_its_records_at_the_next_poll() -> None:
    """Follower 2 reads a voter set of itself alone; its fetch timeout makes it Prospective, Candidate and Leader of
    epoch 2 in that poll (``pollFollowerAsVoter`` -> ``transitionToProspective`` .. ``onBecomeLeader``), whose records
    wait in the accumulator until the next poll writes them (``pollLeader``: ``maybeAppendBatches``)."""
    steps, verdict = run(node_state(2, (1, 2, 3)), follow_leader_1((2,)) + [tick(2003), tick(2004)])
    assert steps[2]["post"]["role"] == "Leader" and steps[2]["post"]["epoch"] == 2
    assert steps[2]["post"]["log_end_offset"] == 3 and steps[3]["post"]["log_end_offset"] > 3
    assert steps[3]["post"]["log"][3]["record"]["type"] == "LeaderChangeMessage"
    assert verdict.conformant, first_difference(verdict)


def test_kafka_refuses_to_restart_a_removed_voter_from_its_own_vote() -> None:
    """Node 2 voted for itself in epoch 1, then followed leader 1, whose voter set no longer has it: on restart
    ``QuorumState.initialize`` takes the stored self-vote first (Candidate, before the known leader) and
    ``CandidateState``'s constructor throws IllegalArgumentException; the reference refuses the restart too."""
    candidate = node_state(2, (1, 2, 3), quorum_state={"epoch": 1, "voted_key": {"id": 2,
                                                                                 "directory_id": DIRECTORY[2]}})
    steps, verdict = run(candidate, follow_leader_1((1, 3)) + [{"action": "restart", "now": 5}])
    assert steps[1]["post"]["role"] == "Follower" and steps[1]["post"]["voted_key"]["id"] == 2
    assert steps[-1]["refused"]["exception"] == "java.lang.IllegalArgumentException"
    assert steps[-1]["refused"]["message"].startswith(f"Local replica (2, {DIRECTORY[2]}) must be in the set of voters")
    assert verdict.conformant, first_difference(verdict)
