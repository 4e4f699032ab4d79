"""Observer auto-join (KIP-853, ``controller.quorum.auto.join.enable``) against Apache Kafka's own ``KafkaRaftClient``.

Kafka's ``KafkaRaftClientAutoJoinTest`` as hand-built one-node traces (inputs only), applied to Kafka 4.3.1's client
(``harness/src/raft``) and then replayed by the reference step by step (``conform.judge``). The configuration is
``RaftClientTestContext``'s (fetch timeout 50 s, request timeout 5 s); leader 1 of epoch 1 leads voters 1 and 2. Kafka
polls after each input here, so a Fetch leaves with every answer, and the one outstanding when the update-voter-set
period ends has timed out: the observer's ``pollFollowerAsObserver`` then sends AddRaftVoter or RemoveRaftVoter on the
leader's ready connection, as in Kafka's own test. Kafka showed one difference: the reference listed the node's own
listeners by name, Kafka in the order it was given them (``Endpoints`` keeps the server's map), fixed in
``raft_node.voters_in_force``.
"""

from __future__ import annotations

from typing import Any, Optional

import pytest

from kraftspec.harness import conform
from kraftspec.harness.adapter import hooks
from kraftspec.harness.jvm import DEFAULT_VERSION, shared
from kraftspec.reference import raft
from kraftspec.traces.format import raft as raft_trace
from kraftspec.traces.format.envelope import trace_from_json, trace_to_json
from kraftspec.traces.replay import raft as replay_raft
from kraftspec.traces.replay.verdict import Verdict

DIRECTORY = {1: "a3JhZnRzcGVjLWgxNS1kMQ", 2: "a3JhZnRzcGVjLWgxNS1kMg", 3: "a3JhZnRzcGVjLWgxNS1kMw"}
"""Each node's directory id (a UUID in Kafka's base64 text)."""
NEW_DISK = "a3JhZnRzcGVjLWgxNS1uMg"
"""Node 2's directory id after its disk was replaced (``replicaKey(oldFollower.id(), true)``)."""
LEADER, FOLLOWER, NEW = 1, 2, 3
PERIOD = 50_000
"""The fetch timeout, which is also the update-voter-set period (``FollowerState.updateVoterPeriodMs``)."""
CONFIG = {"election_timeout_ms": 10_000, "fetch_timeout_ms": PERIOD, "election_backoff_max_ms": 100,
          "request_timeout_ms": 5_000}
"""``RaftClientTestContext.Builder``'s timeouts."""


def kafka() -> Any:
    return shared(DEFAULT_VERSION)


def voter(node: int, directory: Optional[str] = None) -> dict[str, Any]:
    return {"id": node, "directory_id": directory or DIRECTORY[node],
            "listeners": [f"CONTROLLER://controller{node}:9093"]}


def observer(local: int, directory: str, auto_join: bool = True, **more: Any) -> dict[str, Any]:
    """``withStartingVoters(1, 2; KRAFT_VERSION_1)``, ``withElectedLeader(1, 1)``, ``withAutoJoin(auto_join)``."""
    return {"local_id": local, "kraft_version": 1, "directory_id": directory,
            "bootstrap_voters": [voter(LEADER), voter(FOLLOWER)], "quorum_state": {"epoch": 1, "leader_id": LEADER},
            "config": {**CONFIG, "auto_join": auto_join}, **more}


def tick(now: int) -> dict[str, Any]:
    return {"action": "tick", "now": now}


def fetched(now: int, source: int = LEADER, high_watermark: int = 0,
            voters: Optional[list[dict[str, Any]]] = None) -> dict[str, Any]:
    """The answer to the Fetch outstanding to ``source``: empty, or a VotersRecord of ``voters`` at the log end."""
    records = [] if voters is None else [{"epoch": 1, "record": {"type": "VotersRecord", "voters": [
        {**v, "kraft_version_range": [0, 1]} for v in voters]}}]
    return {"action": "fetch_response", "now": now, "message": {
        "source": source, "leader_epoch": 1, "leader_id": LEADER, "high_watermark": high_watermark,
        "records": records}}


def answer(now: int, api: str = "AddRaftVoter", error: str = "NONE") -> dict[str, Any]:
    """The leader's ``voter_change_response`` to the request outstanding to it (``RaftUtil.addVoterResponse``)."""
    return {"action": "voter_change_response", "now": now, "message": {"api": api, "source": LEADER, "error": error}}


def to_the_period() -> list[dict[str, Any]]:
    """``advanceTimeAndCompleteFetch(1, 1, true)`` then ``pollUntilRequest``: a Fetch answered at 49 999 ms, the next
    one outstanding, and the poll at 99 998 ms, after the period (from 0) and the request timeout have passed."""
    return [tick(PERIOD - 1), fetched(PERIOD - 1), tick(2 * PERIOD - 2)]


def run(initial: dict[str, Any], inputs: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], Verdict]:
    """Kafka's steps for ``inputs`` and the reference's verdict on them (a refusal by Kafka ends the steps)."""
    obj = {"format": "1.0", "component": "raft", "id": "auto-join", "initial": {"explicit": initial},
           "steps": [{"input": i} for i in inputs]}
    kafka_run, refusal = conform.kafka_trace(trace_from_json(obj), kafka(), hooks("raft"))
    steps = trace_to_json(kafka_run)["steps"]
    assert refusal is None, refusal
    return steps, conform.judge(kafka_run, refusal)


def sent(step: dict[str, Any]) -> list[tuple[int, str]]:
    """A step's sends as (destination, type)."""
    return [(s["destination"], s["type"]) for s in step["output"]["response"]["sends"]]


def only(step: dict[str, Any], kind: str) -> dict[str, Any]:
    [send] = [s for s in step["output"]["response"]["sends"] if s["type"] == kind]
    return send


def first_difference(verdict: Verdict) -> Optional[tuple[int, frozenset[str]]]:
    d = verdict.divergence
    return None if d is None else (d.step, frozenset(f.path for f in d.diffs))


def assert_add(step: dict[str, Any], local: int, directory: str) -> None:
    """``assertSentAddVoterRequest``: to the leader, the local key and listeners, answered once appended."""
    assert sent(step) == [(LEADER, "AddRaftVoterRequest")]
    add = only(step, "AddRaftVoterRequest")
    assert (add["voter_id"], add["voter_directory_id"], add["source"]) == (local, directory, local)
    assert add["listeners"] == [f"CONTROLLER://controller{local}:9093"] and add["ack_when_committed"] is False


def assert_remove(step: dict[str, Any]) -> None:
    """``assertSentRemoveVoterRequest(oldFollower)``: to the leader, node 2's old key."""
    assert sent(step) == [(LEADER, "RemoveRaftVoterRequest")]
    remove = only(step, "RemoveRaftVoterRequest")
    assert (remove["voter_id"], remove["voter_directory_id"]) == (FOLLOWER, DIRECTORY[FOLLOWER])


def test_auto_remove_old_voter() -> None:
    """Node 2 with a new disk is an observer whose id is a voter's: it asks to remove the old key, and again once the
    period passes with the voter set unchanged."""
    steps, verdict = run(observer(FOLLOWER, NEW_DISK), to_the_period() + [
        answer(2 * PERIOD - 2, "RemoveRaftVoter"), fetched(2 * PERIOD - 2), tick(3 * PERIOD - 3),
        tick(3 * PERIOD - 2)])
    assert_remove(steps[2])
    assert sent(steps[3]) == sent(steps[4]) == [(LEADER, "FetchRequest")]  # the answer restarted the period
    assert sent(steps[5]) == [(-2, "FetchRequest")]  # the Fetch timed out: to a bootstrap server
    assert_remove(steps[6])
    assert verdict.conformant, first_difference(verdict)


def test_auto_add_new_voter() -> None:
    """Observer 3 asks to be added; the request times out (a Fetch next), it asks again, is answered at once
    (KIP-1186) and becomes a voter with the VotersRecord its next Fetch brings: at its fetch timeout it runs for
    election, which an observer never does."""
    later = 3 * PERIOD - 3
    steps, verdict = run(observer(NEW, DIRECTORY[NEW]), to_the_period() + [
        tick(later), fetched(later, source=-2), tick(later + PERIOD - 1), answer(later + PERIOD - 1),
        fetched(later + PERIOD - 1, high_watermark=1, voters=[voter(LEADER), voter(NEW)]),
        tick(later + 2 * PERIOD - 2), tick(later + 2 * PERIOD - 1)])
    assert_add(steps[2], NEW, DIRECTORY[NEW])
    assert sent(steps[3]) == [(-2, "FetchRequest")]
    assert_add(steps[5], NEW, DIRECTORY[NEW])
    assert [s["post"]["role"] for s in steps[-2:]] == ["Follower", "Prospective"]
    assert verdict.conformant, first_difference(verdict)


def test_observer_removes_old_voter_and_auto_joins() -> None:
    """Node 2 with a new disk removes its old key, fetches the voter set without it, then adds itself with the new
    key; a voter then, it sends neither request once the period passes again."""
    t = 2 * PERIOD - 2
    steps, verdict = run(observer(FOLLOWER, NEW_DISK), to_the_period() + [
        answer(t, "RemoveRaftVoter"), fetched(t, high_watermark=1, voters=[voter(LEADER)]), tick(t + PERIOD),
        answer(t + PERIOD), fetched(t + PERIOD, high_watermark=2, voters=[voter(LEADER), voter(FOLLOWER, NEW_DISK)]),
        fetched(t + PERIOD + 1, high_watermark=2), tick(t + 2 * PERIOD)])
    assert_remove(steps[2])
    assert_add(steps[5], FOLLOWER, NEW_DISK)
    assert [k for _, k in sent(steps[-1])] == ["FetchRequest"] and steps[-1]["post"]["role"] == "Follower"
    assert verdict.conformant, first_difference(verdict)


@pytest.mark.parametrize("initial", [
    pytest.param(observer(NEW, DIRECTORY[NEW], can_become_voter=False), id="testObserversDoNotAutoJoin"),
    pytest.param(observer(NEW, DIRECTORY[NEW], auto_join=False), id="testObserverDoesNotAddItselfWhenAutoJoinDisabled"),
    pytest.param({"local_id": NEW, "voters": [LEADER, FOLLOWER], "quorum_state": {"epoch": 1, "leader_id": LEADER},
                  "config": {**CONFIG, "auto_join": True}}, id="testObserverDoesNotAutoJoinWithKRaftVersion0"),
    pytest.param(observer(FOLLOWER, DIRECTORY[FOLLOWER]), id="already-a-voter"),
])
def test_no_auto_join(initial: dict[str, Any]) -> None:
    """After the period only a Fetch from offset 0, neither AddRaftVoter nor RemoveRaftVoter. At kraft.version 0 the
    trace cannot state ``can_become_voter`` (false there), so the kraft.version gate is not shown alone."""
    steps, verdict = run(initial, to_the_period())
    assert [k for _, k in sent(steps[2])] == ["FetchRequest"] and only(steps[2], "FetchRequest")["fetch_offset"] == 0
    assert verdict.conformant, first_difference(verdict)


@pytest.mark.parametrize("api, error, settled", [
    ("AddRaftVoter", "REQUEST_TIMED_OUT", True), ("AddRaftVoter", "DUPLICATE_VOTER", True),
    ("AddRaftVoter", "NOT_LEADER_OR_FOLLOWER", False), ("AddRaftVoter", "BROKER_NOT_AVAILABLE", False),
    ("RemoveRaftVoter", "VOTER_NOT_FOUND", True), ("RemoveRaftVoter", "DUPLICATE_VOTER", False),
])
def test_auto_join_answers(api: str, error: str, settled: bool) -> None:
    """``handleAddVoterResponse`` / ``handleRemoveVoterResponse``: NONE, REQUEST_TIMED_OUT and DUPLICATE_VOTER
    (VOTER_NOT_FOUND for a removal) restart the period; another error backs the leader's connection off (the Fetch
    goes to a bootstrap server) and the period runs on from the request: it asks again one period after it."""
    initial = observer(NEW, DIRECTORY[NEW]) if api == "AddRaftVoter" else observer(FOLLOWER, NEW_DISK)
    t = 2 * PERIOD - 2 + 10
    steps, verdict = run(initial, to_the_period() + [answer(t, api, error), fetched(t + 20, -2 if not settled else 1),
                                                     tick(t - 10 + PERIOD), tick(t + PERIOD)])
    assert sent(steps[3]) == [(LEADER if settled else -2, "FetchRequest")]
    asked = [i for i in (5, 6) if any(k.endswith("VoterRequest") for _, k in sent(steps[i]))]
    assert asked == [6 if settled else 5]
    assert verdict.conformant, first_difference(verdict)


def test_auto_join_lists_the_listeners_in_their_given_order() -> None:
    """``buildAddVoterRequest`` lists ``localListeners`` as the server gave them (``Endpoints`` keeps its map), the
    quorum's listener first; the reference listed them by name (fixed: ``raft_node.voters_in_force``)."""
    listeners = ["CONTROLLER://controller3:9093", "ALPHA://alpha3:9094", "BETA://beta3:9095"]
    steps, verdict = run(observer(NEW, DIRECTORY[NEW], listeners=listeners), to_the_period())
    assert only(steps[2], "AddRaftVoterRequest")["listeners"] == listeners
    assert verdict.conformant, first_difference(verdict)


def test_an_answer_after_an_epoch_change_is_dropped() -> None:
    """A VoteRequest of epoch 2 makes the observer Unattached (its connections reset), so the leader's late answer is
    no longer expected (``isResponseExpected``) and neither side handles it."""
    vote = {"action": "vote_request", "now": 2 * PERIOD - 1, "message": {
        "replica_id": FOLLOWER, "replica_epoch": 2, "last_offset_epoch": 0, "last_offset": 0,
        "replica_directory_id": DIRECTORY[FOLLOWER], "voter_id": NEW, "voter_directory_id": DIRECTORY[NEW]}}
    steps, verdict = run(observer(NEW, DIRECTORY[NEW]), to_the_period() + [vote, answer(2 * PERIOD - 1)])
    assert steps[3]["post"]["role"] == "Unattached" and sent(steps[4]) == []
    assert verdict.conformant, first_difference(verdict)


def test_a_recorded_answer_reaches_kafka_under_kafka_s_correlation_id() -> None:
    """A trace recorded by the reference states its AddRaftVoter under the reference's correlation id; the leader's
    answer under that id reaches Kafka under the id Kafka gave the same request (``harness.raft.kafka_inputs``), and
    Kafka takes it as the reference does (the period restarts: a Fetch, no second AddRaftVoter)."""
    initial = observer(NEW, DIRECTORY[NEW])
    node = raft_trace.explicit_state(initial)
    steps = []
    for given in to_the_period():
        args = raft_trace.RAFT.decode_input(given["action"], {k: v for k, v in given.items() if k != "action"}, "in")
        node, out = raft.step(node, args.get("message") or raft.Tick(), given["now"])
        steps.append({"input": given, "output": {"response": {"sends": [replay_raft.sent(s) for s in out]},
                                                  "records": []}})
    [add] = steps[2]["output"]["response"]["sends"]
    reply = answer(2 * PERIOD - 2)
    reply["message"]["correlation_id"] = add["correlation_id"]
    obj = {"format": "1.0", "component": "raft", "id": "recorded", "initial": {"explicit": initial},
           "steps": steps + [{"input": reply}]}
    kafka_run, refusal = conform.kafka_trace(trace_from_json(obj), kafka(), hooks("raft"))
    last = trace_to_json(kafka_run)["steps"][-1]
    kafka_add = only(trace_to_json(kafka_run)["steps"][2], "AddRaftVoterRequest")["correlation_id"]
    assert kafka_add != add["correlation_id"] and last["input"]["message"]["correlation_id"] == kafka_add
    assert refusal is None and sent(last) == [(LEADER, "FetchRequest")]
    verdict = conform.judge(kafka_run, refusal)
    assert verdict.conformant, first_difference(verdict)
