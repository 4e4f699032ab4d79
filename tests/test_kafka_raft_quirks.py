"""Suspected Kafka 4.3 problems the reference follows, run through Kafka 4.3.1's own ``KafkaRaftClient`` (issue 23).

Each trace is the smallest one-node story that shows the mechanism: the node under test is Kafka's client, the other
nodes are the trace's inputs (helpers of tests/test_kafka_raft_dynamic.py). Each test asserts what Kafka does, then
that the reference follows Kafka's run: Kafka is the judge of behaviour, and the docstring says what is unsafe about
it and which Kafka method decides it. The whole-quorum story of the two leaders of one epoch is reference-only
(tests/test_raft_quirk_scenarios.py). A removed voter that voted for itself cannot restart: confirmed by
``test_kafka_refuses_to_restart_a_removed_voter_from_its_own_vote`` (tests/test_kafka_raft_dynamic.py). The voter
history emptied by a truncation to a created snapshot's end is confirmed in tests/test_kafka_raft_snapshot_dynamic.py.
docs/kafka-findings.md sums them up.
"""

from __future__ import annotations

from typing import Any

import pytest

from kraftspec.harness import raft_mixed
from kraftspec.traces.format.envelope import trace_from_json
from kraftspec.traces.replay.verdict import replay
from test_kafka_raft_dynamic import DIRECTORY, first_difference, kafka, node_state, run, sent, tick, voter

KRAFT_VERSION_1 = {"type": "KRaftVersionRecord", "version": 0, "kraft_version": 1}


def voters_record(voter_ids: tuple[int, ...]) -> dict[str, Any]:
    return {"type": "VotersRecord", "version": 0,
            "voters": [{**voter(v), "kraft_version_range": [0, 1]} for v in voter_ids]}


def leader_change(leader: int) -> dict[str, Any]:
    return {"type": "LeaderChangeMessage", "leader_id": leader, "voters": [1, 2, 3], "granting_voters": [1, 2],
            "version": 0}


def begin(leader: int, epoch: int, now: int) -> dict[str, Any]:
    """``leader``'s BeginQuorumEpoch of ``epoch`` to node 2 (with its endpoints, as Kafka 4.3 sends it)."""
    return {"action": "begin_quorum_epoch_request", "now": now, "message": {
        "leader_id": leader, "leader_epoch": epoch, "leader_endpoints": [f"CONTROLLER://controller{leader}:9093"],
        "voter_id": 2, "voter_directory_id": DIRECTORY[2], "correlation_id": 10 + now}}


def fetched(leader: int, epoch: int, now: int, high_watermark: int, records: tuple[Any, ...] = (),
            record_epoch: int = 0, **more: Any) -> dict[str, Any]:
    """``leader``'s answer to node 2's outstanding Fetch: ``records`` (each of ``record_epoch``) after its log end."""
    return {"action": "fetch_response", "now": now, "message": {
        "source": leader, "leader_epoch": epoch, "leader_id": leader, "high_watermark": high_watermark,
        "records": [{"epoch": record_epoch, "record": r} for r in records], **more}}


def vote_destinations(step: dict[str, Any]) -> list[int]:
    return sorted(d for d, kind in sent(step) if kind == "VoteRequest")


REWRITTEN = [begin(1, 1, 1),
             fetched(1, 1, 3, 3, (leader_change(1), KRAFT_VERSION_1, voters_record((1, 2, 3)),
                                  voters_record((1, 2, 3, 4))), record_epoch=1),
             begin(3, 2, 4), fetched(3, 2, 5, 3, diverging_epoch=[1, 3]),
             fetched(3, 2, 6, 3, (voters_record((1, 2, 3, 5)),), record_epoch=2), tick(2100), tick(2101)]
"""Follower 2 reads voter set {1, 2, 3, 4} at offset 3 (read position 4), follows leader 3 of epoch 2, truncates to 3
and fetches the VotersRecord {1, 2, 3, 5} at offset 3; its fetch timeout passes (Prospective, pre-votes sent)."""


def test_kafka_does_not_read_a_voters_record_rewritten_below_its_read_position() -> None:
    """Confirmed. ``KRaftControlRecordStateMachine.truncateNewEntries`` drops the voter sets past 3 but keeps
    ``nextOffset`` (4), and ``maybeLoadLog`` reads only from there, so the record at 3 is never read: node 2 asks
    only 1 and 3 for (pre-)votes, and only a restart (which reads the log anew) makes it ask 5 too."""
    steps, verdict = run(node_state(2, (1, 2, 3)), REWRITTEN + [{"action": "restart", "now": 2200}, tick(4500),
                                                                tick(4501)])
    assert steps[3]["post"]["log_end_offset"] == 3 and steps[4]["post"]["log"][3]["record"] == voters_record(
        (1, 2, 3, 5))
    assert steps[5]["post"]["role"] == "Prospective" and vote_destinations(steps[6]) == [1, 3]
    assert steps[8]["post"]["role"] == "Prospective" and vote_destinations(steps[9]) == [1, 3, 5]
    assert verdict.conformant, first_difference(verdict)


def test_kafka_elects_a_leader_by_a_minority_of_the_voters_its_log_holds() -> None:
    """Confirmed, the unsafe consequence: with the stale set {1, 2, 3}, node 2 becomes Candidate on 1's pre-vote and
    Leader of epoch 3 on 1's vote (``CandidateState``'s majority of ``lastVoterSet()``), though its own log's voter
    set {1, 2, 3, 5} needs three votes: a minority can elect a leader that lacks a committed entry (h1's simulations
    lose one so)."""
    def granted(epoch: int, now: int) -> dict[str, Any]:
        return {"action": "vote_response", "now": now, "message": {"source": 1, "leader_epoch": epoch,
                                                                   "vote_granted": True}}

    steps, verdict = run(node_state(2, (1, 2, 3)), REWRITTEN + [granted(2, 2102), tick(2103), granted(3, 2104)])
    assert steps[7]["post"]["role"] == "Candidate" and vote_destinations(steps[7]) == [1, 3]
    post = steps[9]["post"]
    assert (post["role"], post["epoch"], post["leader_id"]) == ("Leader", 3, 2)
    assert post["log"][4]["record"] == leader_change(2)  # voters [1, 2, 3], granted by 1 and 2
    assert verdict.conformant, first_difference(verdict)


@pytest.mark.parametrize("read_to", [12, 6])
def test_kafka_loads_a_fetched_snapshot_only_below_its_read_position(read_to: int) -> None:
    """Confirmed. Follower 2 reads its leader's log to ``read_to``, truncates to 3 under leader 3 of epoch 2 and
    fetches snapshot (10, 2). ``handleFetchSnapshotResponse`` truncates the log to it and calls ``updateState``, but
    ``KRaftControlRecordStateMachine.maybeLoadSnapshot`` loads it only when ``nextOffset`` is below the new log start:
    read to 12 (``truncateNewEntries`` kept 12), node 2 keeps the voters {1, 2, 3} it had (Prospective, asking 1 and
    3); read to 6, it loads the snapshot, here one without control records (the harness does not yet write a
    snapshot's VotersRecord), so it has no voters and fetches from a bootstrap server. Unsafe: what a node counts as
    the voters depends on how far it had read before a truncation, not on its log; a restart reads the snapshot."""
    records = (leader_change(1), KRAFT_VERSION_1, voters_record((1, 2, 3)), "a", "b", voters_record((1, 2, 3, 4)))
    records += tuple(f"x{i}" for i in range(read_to - len(records)))
    snapshot = {"action": "fetch_snapshot_response", "now": 6, "message": {
        "source": 3, "leader_epoch": 2, "leader_id": 3, "snapshot_id": [10, 2], "size": 500, "position": 0,
        "chunk": 500}}
    steps, verdict = run(node_state(2, (1, 2, 3)), [
        begin(1, 1, 1), fetched(1, 1, 2, 3, records, record_epoch=1), begin(3, 2, 3),
        fetched(3, 2, 4, 3, diverging_epoch=[1, 3]), fetched(3, 2, 5, 10, log_start_offset=10, snapshot_id=[10, 2]),
        snapshot, tick(2200), tick(2201)])
    assert steps[3]["post"]["log_end_offset"] == 3 and steps[5]["post"]["log_start_offset"] == 10
    if read_to > 10:
        assert steps[6]["post"]["role"] == "Prospective" and vote_destinations(steps[7]) == [1, 3]
    else:
        assert steps[6]["post"]["role"] == "Follower" and sent(steps[6]) == [(-2, "FetchRequest")]
    assert verdict.conformant, first_difference(verdict)


def test_kafka_restarts_a_follower_that_voted_for_itself_as_a_second_leader_of_its_epoch() -> None:
    """Confirmed. Node 3 voted for itself in epoch 8, lost to 2 and followed it (file: epoch 8, leader 2, voted 3);
    leader 2 removed 1, then itself, so node 3's log ends with voter set {3}. On restart ``QuorumState.initialize``
    tests ``isVotedCandidate`` before ``hasLeader``: Candidate of epoch 8, the only voter, so Leader of epoch 8
    (``KafkaRaftClient.initialize``), writing its LeaderChange in epoch 8 and a file naming itself leader of the
    epoch 2 led. Unsafe: two leaders of one epoch (Raft's election safety); records of epoch 8 at one offset may then
    differ between 2 and 3, which the epoch-based divergence check cannot see."""
    log = [{"epoch": 8, "record": r} for r in (leader_change(2), KRAFT_VERSION_1, voters_record((1, 2, 3)),
                                                voters_record((2, 3)), voters_record((3,)))]
    stored = {"epoch": 8, "leader_id": 2, "voted_key": {"id": 3, "directory_id": DIRECTORY[3]}}
    steps, verdict = run(node_state(3, (1, 2, 3), quorum_state=stored, log=log), [tick(0)])
    post = steps[0]["post"]
    assert (post["role"], post["epoch"], post["leader_id"]) == ("Leader", 8, 3)
    assert post["quorum_state_file"] == {"epoch": 8, "leader_id": 3, "voted_key": None}
    assert post["log"][5] == {"epoch": 8, "record": {**leader_change(3), "voters": [3], "granting_voters": [3]}}
    assert verdict.conformant, first_difference(verdict)


def test_kafka_throws_on_end_quorum_epoch_from_a_leader_it_cannot_reach() -> None:
    """Confirmed. Voter 2 of {1, 2, 3} gets EndQuorumEpoch from leader 4 (added later; not in 2's voter set yet).
    Kafka 4.3's request carries no leader endpoints (``RaftUtil.singletonEndQuorumEpochRequest``);
    ``handleEndQuorumEpochRequest`` -> ``maybeTransition`` takes ``lastVoterSet().listeners(4)``, empty, and
    ``QuorumState.transitionToFollower`` throws IllegalArgumentException out of ``poll`` (fatal for the Raft thread),
    where BeginQuorumEpoch carries the endpoints. The reference refuses the input alike. Not a safety problem: an
    availability one (a node that lags behind a voter change is stopped by a legal message)."""
    end = {"action": "end_quorum_epoch_request", "now": 1, "message": {
        "leader_id": 4, "leader_epoch": 1, "preferred_successors": [2], "correlation_id": 9}}
    steps, verdict = run(node_state(2, (1, 2, 3)), [tick(0), end])
    assert steps[-1]["refused"]["exception"] == "java.lang.IllegalArgumentException"
    assert steps[-1]["refused"]["message"].startswith("Unknown leader endpoints (Endpoints(endpoints={})) after "
                                                      "request or response with leader (4)")
    assert verdict.conformant, first_difference(verdict)


def test_kafka_throws_on_the_fetch_answer_of_a_leader_it_restarted_without_endpoints_for() -> None:
    """Confirmed. Leader 2 of epoch 2 writes the VotersRecord that removes itself; observer 4 fetches it (its log ends
    with voter set {1, 3}) and restarts. ``QuorumState.initialize`` finds leader 2 in the file but no endpoints for it
    in that voter set: Unattached of epoch 2 with leader 2. Its Fetch to a bootstrap server is answered by leader 2,
    still leading epoch 2 until the removal commits. ``maybeHandleCommonResponse`` moves to Follower only when no
    leader is known (``quorum.hasLeader()``), so ``handleFetchResponse`` reaches ``followerStateOrThrow`` and throws
    IllegalStateException out of ``poll``; the reference refuses the input alike. Availability: a legal answer stops
    the node's Raft thread (mixed quorum runs with ``--dynamic`` reach it, e.g. seed 31)."""
    log = [{"epoch": 2, "record": r} for r in (leader_change(2), KRAFT_VERSION_1, voters_record((1, 2, 3)),
                                                voters_record((1, 3)))]
    initial = node_state(4, (1, 2, 3), quorum_state={"epoch": 2, "leader_id": 2}, log=log)
    answer = {"action": "fetch_response", "now": 1, "message": {
        "source": -2, "leader_epoch": 2, "leader_id": 2, "leader_endpoints": ["CONTROLLER://controller2:9093"],
        "high_watermark": 3, "records": []}}
    steps, verdict = run(initial, [tick(0), answer])
    assert (steps[0]["post"]["role"], steps[0]["post"]["leader_id"]) == ("Unattached", 2)
    assert sent(steps[0]) == [(-2, "FetchRequest")]
    assert steps[-1]["refused"]["exception"] == "java.lang.IllegalStateException"
    assert steps[-1]["refused"]["message"].startswith("Expected to be Follower, but the current state is "
                                                      "UnattachedState(epoch=2, leaderId=OptionalInt[2]")
    assert verdict.conformant, first_difference(verdict)


def test_kafka_leads_a_quorum_to_commit_on_a_minority_of_the_voter_set_its_log_holds() -> None:
    """Confirmed in a whole quorum: the mixed quorum's kraft.version 1 run of seed 101 (``harness/raft_mixed.py``,
    ``--dynamic``) with Kafka's client as node 3. Node 3 truncated its log and then fetched the VotersRecord {1, 2, 3,
    5} at offset 4, below its read position, so its voter history still says {1, 2, 3} (case 1 of
    docs/kafka-findings.md). Elected leader of epoch 6, it commits its LeaderChange record at offset 8 once node 1
    holds it (with itself a majority of {1, 2, 3}, a minority of the {1, 2, 3, 5} its log holds), while nodes 2 and 5 lack it and
    node 5, whose log ends with the uncommitted voter set {2, 3, 5}, could be elected by 2 and itself and truncate it.
    Every node's view, Kafka's included, replays on the reference: Raft's leader completeness broken by Kafka's rule."""
    quorum = raft_mixed.MixedQuorum(101, (3,), [kafka()], dynamic=True)
    with pytest.raises(raft_mixed.Safety, match=r"committed offset 8 is durable only on nodes \[1, 3\]: voters "
                                                r"\[2, 5\] lack it and could elect node 5"):
        for _ in range(150):
            quorum.rule()
    leader = quorum.posts[3]
    assert (leader["role"], leader["epoch"], leader["high_watermark"]) == ("Leader", 6, 9)
    assert [v["id"] for v in leader["log"][4]["record"]["voters"]] == [1, 2, 3, 5]
    assert all(replay(trace_from_json(view)).conformant for view in quorum.views().values())
