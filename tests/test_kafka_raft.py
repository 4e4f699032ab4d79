"""The raft component against Apache Kafka's own ``KafkaRaftClient`` (the harness's ``raft`` session).

Every trace here is applied to Kafka 4.3.1's client (``kraftspec.harness.conform``: Kafka's outputs and post-states
become a trace that the reference replays), so each test is a comparison the harness could lose: a sample of the
bundled TLA+ traces and of simulated ones, the regressions of every disagreement found so far (each cites the Kafka
source that decided it), a reference mutant that Kafka contradicts, a mutant's recordings that Kafka does not
reproduce, and a planted change to what the harness feeds Kafka.
"""

from __future__ import annotations

import copy
import gzip
import json
from itertools import islice
from pathlib import Path
from typing import Any, Iterator

import pytest

from kraftspec import mutants
from kraftspec.harness import conform
from kraftspec.harness import raft as raft_hooks
from kraftspec.harness.jvm import DEFAULT_VERSION, shared
from kraftspec.reference import raft
from kraftspec.reference.raft_messages import InvalidResignError, Resign, Tick
from kraftspec.traces.replay.check import describe
from kraftspec.traces.format.envelope import trace_from_json, trace_to_json
from kraftspec.traces.recording.raft_simulate import simulate_one
from kraftspec.traces.format.raft import elected_leader, explicit_state
from kraftspec.traces.replay.verdict import replay

BUNDLED = Path(conform.__file__).parents[1] / "traces" / "tla" / "raft.jsonl.gz"
LEADER_CHANGE = {"type": "LeaderChangeMessage", "leader_id": 1, "voters": [1, 2, 3], "granting_voters": [1, 2],
                 "version": 0}
def kafka() -> Any:
    return shared(DEFAULT_VERSION)


def raft_trace(initial: dict[str, Any], *steps: dict[str, Any], trace_id: str = "hand-written") -> dict[str, Any]:
    return {"format": "1.0", "component": "raft", "id": trace_id, "initial": initial, "steps": list(steps)}


def conformed(obj: Any) -> conform.Conformance:
    trace = obj if not isinstance(obj, dict) else trace_from_json(obj)
    return conform.conform_trace(trace, kafka())


def kafka_steps(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """Kafka's run of a hand-written trace (its own outputs conform, and Kafka agrees with the reference)."""
    result = conformed(obj)
    assert result.recorded.conformant, describe(result.recorded)
    assert result.inexpressible is None, result.inexpressible
    assert result.kafka is not None and result.kafka.conformant, describe(result.kafka)
    return trace_to_json(result.kafka_trace)["steps"]


def sends(step: dict[str, Any]) -> list[tuple[int, str]]:
    return [(s["destination"], s["type"]) for s in step["output"]["response"]["sends"]]


def bundled(every: int) -> Iterator[dict[str, Any]]:
    with gzip.open(BUNDLED, "rt") as lines:
        for index, line in enumerate(lines):
            if index % every == 0:
                yield json.loads(line)


# ------------------------------------------------------------------------------------------------
# Conformance over samples


def test_bundled_tla_traces_agree_with_kafka() -> None:
    """Every 4th bundled raft trace (637 of 2,548): Kafka's client does what the reference says, step by step."""
    outcomes = [conformed(obj) for obj in bundled(4)]
    assert len(outcomes) == 637
    disagree = [o for o in outcomes if o.outcome != "agree"]
    assert not disagree, [(o.trace_id, o.inexpressible or describe(o.kafka)) for o in disagree[:3]]


def test_simulated_traces_agree_with_kafka() -> None:
    """150 simulated traces (seed 11): Kafka's client does what the reference says, step by step."""
    outcomes = [conformed(simulate_one(11, index, 40)) for index in range(150)]
    disagree = [o for o in outcomes if o.outcome != "agree"]
    assert not disagree, [(o.trace_id, o.inexpressible or describe(o.kafka)) for o in disagree[:2]]


def test_simulated_traces_with_failed_requests_and_shutdowns_agree_with_kafka() -> None:
    """150 simulated traces with faults (seed 11): failed requests (top-level BROKER_NOT_AVAILABLE, as Kafka's
    channel reports a disconnect) back connections off, nodes shut down gracefully and restart; Kafka's client does
    what the reference says, step by step."""
    traces = [simulate_one(11, index, 40, faults=True) for index in range(150)]
    steps = [step for trace in traces for step in trace_to_json(trace)["steps"]]
    assert sum(step["input"].get("message", {}).get("error") == "BROKER_NOT_AVAILABLE" for step in steps) > 100
    assert {step["post"]["shutdown"] for step in steps} == {None, "pending", "completed", "timed_out"}
    outcomes = [conformed(trace) for trace in traces]
    disagree = [o for o in outcomes if o.outcome != "agree"]
    assert not disagree, [(o.trace_id, o.inexpressible or describe(o.kafka)) for o in disagree[:2]]


def test_the_standard_states_start_as_the_reference_starts_them() -> None:
    """Kafka's client opened on each standard state reports the reference's post-state (nothing happens at time 0)."""
    from kraftspec.traces.replay.raft import observe
    from kraftspec.traces.format.raft import STANDARD_STATES

    for name, build in STANDARD_STATES.items():
        steps = kafka_steps(raft_trace({"standard": name}, {"input": {"action": "advance_clock", "now": 0}}))
        assert steps[0]["post"] == observe(build(), 0), name


# ------------------------------------------------------------------------------------------------
# Regressions: one per disagreement found against Kafka 4.3.1 (the reference follows Kafka)


def test_vote_requests_name_their_voter_and_kafka_states_its_send_order() -> None:
    """``buildVoteRequest(remoteVoter, preVote)`` sets VoterId (``RaftUtil.singletonVoteRequest``); Kafka sends to the
    voters in the order of a hash set (``EpochElection.unrecordedVoters``), which its trace states as ``order``."""
    steps = kafka_steps(raft_trace(
        {"standard": "raft/fresh-voter"},
        {"input": {"action": "tick", "now": 1000}, "post": {"role": "Prospective"}},
        {"input": {"action": "tick", "now": 1000}}))
    votes = steps[1]["output"]["response"]["sends"]
    assert sorted(s["destination"] for s in votes) == [2, 3]
    assert all(s["type"] == "VoteRequest" and s["voter_id"] == s["destination"] and s["pre_vote"] for s in votes)
    if [s["destination"] for s in votes] != [2, 3]:
        assert steps[1]["input"]["order"] == [s["destination"] for s in votes]
    node, out = raft.step(raft.restart(explicit_state({"local_id": 1}), 0), Tick(), 1000)
    node, out = raft.step(node, Tick(), 1000, order=(3, 2))
    assert [(s.destination, s.message.voter_id) for s in out] == [(3, 3), (2, 2)]


def test_resign_takes_effect_at_the_next_poll_and_is_refused_by_a_non_leader() -> None:
    """``KafkaRaftClient.resign``: the leader's resignation is requested, ``pollLeader`` resigns, and EndQuorumEpoch
    goes out on the poll after (not with the resign); a follower asked to resign its epoch throws."""
    steps = kafka_steps(raft_trace(
        {"standard": "raft/leader"},
        {"input": {"action": "resign", "epoch": 1, "now": 40}, "output": {"response": {"sends": []}},
         "post": {"role": "Resigned", "epoch": 1}},
        {"input": {"action": "tick", "now": 45}, "post": {"role": "Resigned"}},
        {"input": {"action": "resign", "epoch": 0, "now": 46}, "output": {"response": {"sends": []}}}))
    assert sorted(sends(steps[1])) == [(2, "EndQuorumEpochRequest"), (3, "EndQuorumEpochRequest")]
    refused = conformed(raft_trace({"standard": "raft/follower"}, {"input": {"action": "resign", "epoch": 1}}))
    assert refused.outcome == "agree" and not refused.recorded.conformant  # both refuse the input
    with pytest.raises(InvalidResignError):
        raft.step(explicit_state({"local_id": 2, "quorum_state": {"epoch": 1, "leader_id": 1}}), Resign(epoch=1), 0)


def test_a_resigned_leader_sends_end_quorum_epoch_before_its_election_timeout_moves_it_on() -> None:
    """``pollResigned`` sends EndQuorumEpoch to the voters that have not answered, then checks its election timer."""
    steps = kafka_steps(raft_trace(
        {"standard": "raft/leader"},
        {"input": {"action": "resign", "epoch": 1, "now": 40}},
        {"input": {"action": "tick", "now": 3000}, "post": {"role": "Unattached", "epoch": 2}}))
    assert sorted(sends(steps[1])) == [(2, "EndQuorumEpochRequest"), (3, "EndQuorumEpochRequest")]


def test_end_quorum_epoch_without_successors_lets_a_follower_campaign_at_once() -> None:
    """``endEpochElectionBackoff`` counts an absent node past the end of the list: an empty list puts it first
    (backoff 0), so the follower's poll in the same step starts the pre-vote; second of two waits max/2."""
    steps = kafka_steps(raft_trace(
        {"standard": "raft/follower"},
        {"input": {"action": "end_quorum_epoch_request", "now": 10,
                   "message": {"leader_id": 1, "leader_epoch": 1, "preferred_successors": []}},
         "post": {"role": "Prospective", "epoch": 1}}))
    assert sends(steps[0]) == [(1, "QuorumEpochResponse")]
    kafka_steps(raft_trace(
        {"standard": "raft/follower"},
        {"input": {"action": "end_quorum_epoch_request", "now": 10,
                   "message": {"leader_id": 1, "leader_epoch": 1, "preferred_successors": [3, 2]}},
         "post": {"role": "Follower"}},
        {"input": {"action": "tick", "now": 509}, "post": {"role": "Follower"}},
        {"input": {"action": "tick", "now": 510}, "post": {"role": "Prospective"}}))


def test_a_prospective_that_grants_a_vote_starts_its_election_anew() -> None:
    """``QuorumState.prospectiveAddVotedState`` builds a new ProspectiveState: a fresh election timer (and a fresh
    pre-vote tally), so a vote granted late in the election postpones its timeout."""
    kafka_steps(raft_trace(
        {"explicit": {"local_id": 1, "quorum_state": {"epoch": 1}}},
        {"input": {"action": "tick", "now": 1000}, "post": {"role": "Prospective", "epoch": 1}},
        {"input": {"action": "tick", "now": 1000}},
        {"input": {"action": "vote_request", "now": 1900, "message": {
            "replica_id": 2, "replica_epoch": 1, "last_offset_epoch": 0, "last_offset": 0}},
         "post": {"role": "Prospective", "voted_key": {"id": 2, "directory_id": None}}},
        {"input": {"action": "tick", "now": 2500}, "post": {"role": "Prospective"}},
        {"input": {"action": "tick", "now": 2900}, "post": {"role": "Unattached", "epoch": 1}}))


def test_a_failed_request_backs_its_connection_off() -> None:
    """``RequestManager.onResponseResult``: a response that fails (here a top-level BROKER_NOT_AVAILABLE) backs the
    connection off for quorum.retry.backoff.ms (20 ms), so the follower's next Fetch goes to the first ready
    bootstrap server from its draw (``maybeSendFetchToBestNode``: the leader is backing off), here voter 2 itself
    (the local node is one of the static bootstrap servers); after the back-off it fetches from the leader again."""
    steps = kafka_steps(raft_trace(
        {"standard": "raft/follower"},
        {"input": {"action": "tick", "now": 10}},
        {"input": {"action": "fetch_response", "now": 20, "bootstrap": 0,
                   "message": {"source": 1, "error": "BROKER_NOT_AVAILABLE"}}},
        {"input": {"action": "fetch_response", "now": 30, "message": {"source": 2, "error": "BROKER_NOT_AVAILABLE"}}},
        {"input": {"action": "tick", "now": 39, "bootstrap": 0}},
        {"input": {"action": "tick", "now": 40, "bootstrap": 0}}))
    assert [sends(step) for step in steps] == [[(1, "FetchRequest")], [(2, "FetchRequest")], [(3, "FetchRequest")],
                                               [], []]
    steps = kafka_steps(raft_trace(
        {"standard": "raft/follower"},
        {"input": {"action": "tick", "now": 10}},
        {"input": {"action": "fetch_response", "now": 20, "message": {"source": 1, "error": "BROKER_NOT_AVAILABLE"}}},
        {"input": {"action": "fetch_response", "now": 45, "message": {"source": 2, "partition_error": "NONE",
                                                                       "leader_epoch": 1, "leader_id": 1}}}))
    assert [sends(step) for step in steps] == [[(1, "FetchRequest")], [(2, "FetchRequest")], [(1, "FetchRequest")]]


def test_a_leader_shutting_down_resigns_and_completes_once_a_new_leader_is_known() -> None:
    """``shutdown(timeoutMs)``: ``pollLeader`` resigns, ``pollResigned`` sends EndQuorumEpoch and waits (no election
    timer) while granting votes; ``maybeCompleteShutdown`` completes once a remote leader is known, after which the
    client takes no input until it restarts (``KafkaRaftClientDriver`` stops polling)."""
    steps = kafka_steps(raft_trace(
        {"standard": "raft/leader"},
        {"input": {"action": "shutdown", "timeout_ms": 5000, "now": 40},
         "post": {"role": "Resigned", "shutdown": "pending"}},
        {"input": {"action": "tick", "now": 3000}, "post": {"role": "Resigned", "shutdown": "pending"}},
        {"input": {"action": "vote_request", "now": 3010, "message": {
            "replica_id": 2, "replica_epoch": 2, "last_offset_epoch": 1, "last_offset": 1}},
         "post": {"role": "Unattached", "epoch": 2, "shutdown": "pending"}},
        {"input": {"action": "begin_quorum_epoch_request", "now": 3020, "message": {
            "leader_id": 2, "leader_epoch": 2}}, "post": {"role": "Follower", "shutdown": "completed"}},
        {"input": {"action": "restart", "now": 3030}, "post": {"role": "Follower", "shutdown": None}}))
    assert sorted(sends(steps[1])) == [(2, "EndQuorumEpochRequest"), (3, "EndQuorumEpochRequest")]
    assert sends(steps[2]) == [(2, "VoteResponse")]
    stopped = conformed(raft_trace({"standard": "raft/follower"},
                                   {"input": {"action": "shutdown", "timeout_ms": 10, "now": 1}},
                                   {"input": {"action": "tick", "now": 2}}))
    assert stopped.outcome == "agree" and not stopped.recorded.conformant  # both refuse the tick


def test_a_shutdown_times_out_and_an_observer_completes_at_once() -> None:
    """``GracefulShutdown``: the timer ends ``timeout_ms`` after the call and the poll that sees it expired fails the
    shutdown; an observer (or a follower) needs no successor and completes at the first poll."""
    kafka_steps(raft_trace(
        {"standard": "raft/leader"},
        {"input": {"action": "shutdown", "timeout_ms": 500, "now": 40}, "post": {"shutdown": "pending"}},
        {"input": {"action": "tick", "now": 539}, "post": {"shutdown": "pending"}},
        {"input": {"action": "tick", "now": 540}, "post": {"role": "Resigned", "shutdown": "timed_out"}}))
    kafka_steps(raft_trace({"standard": "raft/fresh-observer"},
                           {"input": {"action": "shutdown", "timeout_ms": 500, "now": 5},
                            "post": {"role": "Unattached", "shutdown": "completed"}}))


def test_a_candidate_elected_while_shutting_down_never_writes_its_leader_change() -> None:
    """``onBecomeLeader`` starts the epoch in the log (``initializeLeaderEpoch``) and puts the LeaderChange record in
    the accumulator; ``pollLeader`` of a node shutting down resigns before ``maybeAppendBatches`` drains it."""
    kafka_steps(raft_trace(
        {"explicit": {"local_id": 1, "quorum_state": {"epoch": 3, "voted_key": {"id": 1}}}},
        {"input": {"action": "tick", "now": 0}},
        {"input": {"action": "shutdown", "timeout_ms": 60000, "now": 0}},
        {"input": {"action": "tick", "now": 5000}, "post": {"role": "Candidate", "shutdown": "pending"}},
        {"input": {"action": "vote_response", "now": 5001, "message": {
            "source": 2, "leader_epoch": 3, "vote_granted": True}},
         "post": {"role": "Resigned", "log_end_offset": 0, "epoch_cache": [[3, 0]], "last_fetched_epoch": 3}}))


def test_describe_quorum_answers_as_kafka_writes_them() -> None:
    """``singletonErrorResponse`` / ``getPartitionLevelErrorResponse``: an error answer carries the error's message
    (version 2+, the field's first version; "" below) and the partition's defaults (leader 0, epoch 0, HW 0); a
    success leaves the message "" (``singletonDescribeQuorumResponse`` does not set it)."""
    steps = kafka_steps(raft_trace(
        {"standard": "raft/follower"},
        {"input": {"action": "describe_quorum_request", "message": {"source": 9}}},
        {"input": {"action": "describe_quorum_request", "message": {"source": 9, "version": 1}}},
        {"input": {"action": "describe_quorum_request", "message": {"source": 9, "topic_partition": ["x", 0]}}}))
    answers = [step["output"]["response"]["sends"][0] for step in steps]
    assert [(a["partition_error"], a["leader_id"], a["error_message"][:20]) for a in answers] == [
        ("NOT_LEADER_OR_FOLLOWER", 0, "For requests intende"), ("NOT_LEADER_OR_FOLLOWER", 0, ""),
        ("UNKNOWN_TOPIC_OR_PARTITION", 0, "This server does not")]
    steps = kafka_steps(raft_trace({"standard": "raft/leader"},
                                   {"input": {"action": "describe_quorum_request", "message": {"source": 9}}}))
    assert steps[0]["output"]["response"]["sends"][0]["error_message"] == ""


def test_a_fetch_is_checked_by_topic_id_not_by_name() -> None:
    """``RaftUtil.hasValidTopicPartition`` for Fetch compares the topic id and the partition index: from Fetch v13 on
    the name is not on the wire."""
    steps = kafka_steps(raft_trace({"standard": "raft/leader"}, {"input": {"action": "fetch_request", "now": 10,
        "message": {"replica_id": 2, "current_leader_epoch": 1, "fetch_offset": 1, "last_fetched_epoch": 1,
                    "topic_partition": ["", 0]}}}))
    assert steps[0]["output"]["response"]["sends"][0]["partition_error"] == "NONE"


def _leader_with_observer_parked(max_wait: int = 500) -> list[dict[str, Any]]:
    """``raft/leader``: voter 2 catches up (HW 1), "a" is appended (LEO 2), observer 4 fetches at the end with the HW
    it knows, and its Fetch is parked (no records, no news)."""
    return [
        {"input": {"action": "fetch_request", "now": 10, "message": {
            "replica_id": 2, "current_leader_epoch": 1, "fetch_offset": 1, "last_fetched_epoch": 1}},
         "post": {"high_watermark": 1}},
        {"input": {"action": "append", "now": 20, "records": ["a"]}},
        {"input": {"action": "fetch_request", "now": 100, "message": {
            "replica_id": 4, "current_leader_epoch": 1, "fetch_offset": 2, "last_fetched_epoch": 1,
            "high_watermark": 1, "max_wait_ms": max_wait, "correlation_id": 7}},
         "output": {"response": {"sends": []}}},
    ]


def test_a_parked_fetch_completed_by_a_new_high_watermark_is_answered_before_the_fetch_that_moved_it() -> None:
    """``tryCompleteFetchRequest`` moves the HW, ``onUpdateLeaderHighWatermark`` completes the purgatory, and only
    then is the moving fetch answered."""
    steps = kafka_steps(raft_trace(
        {"standard": "raft/leader"}, *_leader_with_observer_parked(),
        {"input": {"action": "fetch_request", "now": 150, "message": {
            "replica_id": 2, "current_leader_epoch": 1, "fetch_offset": 2, "last_fetched_epoch": 1,
            "high_watermark": 1}},
         "post": {"high_watermark": 2}}))
    answered = steps[3]["output"]["response"]["sends"]
    assert [(s["destination"], s["type"], s["high_watermark"]) for s in answered] == [
        (4, "FetchResponse", 2), (2, "FetchResponse", 2)]


def test_a_parked_fetch_that_times_out_gets_its_first_answer_before_the_next_input() -> None:
    """On ``REQUEST_TIMED_OUT`` Kafka returns "the original fetch response" (``handleFetchRequest``): the replica
    state is not touched again, so DescribeQuorum still shows the arrival time; the expiration fires when the clock
    reaches the deadline, before the input at that time is handled."""
    steps = kafka_steps(raft_trace(
        {"standard": "raft/leader"}, *_leader_with_observer_parked(),
        {"input": {"action": "describe_quorum_request", "now": 700, "message": {"source": 9}}}))
    answered = steps[3]["output"]["response"]["sends"]
    assert [(s["destination"], s["type"]) for s in answered] == [(4, "FetchResponse"), (9, "DescribeQuorumResponse")]
    assert answered[0]["high_watermark"] == 1 and answered[0]["correlation_id"] == 7
    assert answered[1]["observers"] == [{"replica_id": 4, "log_end_offset": 2, "last_fetch_timestamp": 100,
                                         "last_caught_up_timestamp": 100}]


def test_a_leader_that_becomes_unattached_keeps_its_parked_fetches() -> None:
    """``transitionToUnattached`` leaves the fetch purgatory alone (only Resigned and Follower fail it): the parked
    Fetch is answered with its original response when it times out."""
    steps = kafka_steps(raft_trace(
        {"standard": "raft/leader"}, *_leader_with_observer_parked(),
        {"input": {"action": "vote_request", "now": 200, "message": {
            "replica_id": 2, "replica_epoch": 2, "last_offset_epoch": 1, "last_offset": 2}},
         "post": {"role": "Unattached", "epoch": 2}},
        {"input": {"action": "tick", "now": 600}}))
    assert sends(steps[3])[0] == (2, "VoteResponse") and (4, "FetchResponse") not in sends(steps[3])
    assert sends(steps[4])[0] == (4, "FetchResponse")
    assert steps[4]["output"]["response"]["sends"][0]["leader_epoch"] == 1


def test_an_append_is_lost_when_the_poll_resigns_first() -> None:
    """``prepareAppend`` fills the accumulator; ``pollLeader`` resigns (check quorum expired) before it drains, so
    the records are never written, though their offset was returned."""
    kafka_steps(raft_trace(
        {"standard": "raft/leader"},
        {"input": {"action": "append", "now": 3000, "records": ["x"]},
         "output": {"response": {"sends": [], "last_offset": 1}},
         "post": {"role": "Resigned", "log_end_offset": 1, "flushed_end_offset": 1}}))


def test_a_fetch_below_the_leaders_first_epoch_diverges_at_that_epoch() -> None:
    """``LeaderEpochFileCache.endOffsetFor`` answers an epoch below every cached one with that epoch and the first
    epoch's start offset (MockLog would answer epoch 0; the harness's log follows the production log)."""
    steps = kafka_steps(raft_trace(
        {"explicit": {"local_id": 1, "quorum_state": {"epoch": 2, "voted_key": {"id": 1}}}},
        {"input": {"action": "tick", "now": 0}},
        {"input": {"action": "vote_response", "now": 0, "message": {
            "source": 2, "leader_epoch": 2, "leader_id": -1, "vote_granted": True}}, "post": {"role": "Leader"}},
        {"input": {"action": "fetch_request", "now": 10, "message": {
            "replica_id": 3, "current_leader_epoch": 2, "fetch_offset": 1, "last_fetched_epoch": 1}}}))
    assert steps[2]["output"]["response"]["sends"][0]["diverging_epoch"] == [1, 0]


def test_leader_change_voter_sets_are_written_in_ascending_order() -> None:
    """``LeaderState`` keeps ``Set.copyOf(grantingVoters)`` (hash order, a different one per JVM); the trace format
    lists the voter sets of a LeaderChange record ascending, as the reference writes them."""
    steps = kafka_steps(raft_trace({"standard": "raft/leader"}, {"input": {"action": "advance_clock", "now": 0}}))
    assert steps[0]["post"]["log"] == [{"epoch": 1, "record": LEADER_CHANGE}]
    assert elected_leader().log.entries[0].record.granting_voters == (1, 2)


def test_a_voter_tells_each_new_leader_its_endpoints_after_a_fetch_timeout() -> None:
    """A voter that has followed a leader for fetch.timeout.ms without updating it sends UpdateRaftVoter instead of
    its Fetch (``pollFollowerAsVoter``, kraft.version 0: ``shouldSendUpdateVoteRequest``), once nothing is outstanding
    to the leader, then restarts the period; an answer NONE marks the leader updated (``setHasUpdatedLeader``) and
    restarts the fetch timer, so the next periods pass with Fetches only."""
    fetched = {"source": 1, "leader_epoch": 1, "leader_id": 1, "high_watermark": 1}
    answered = {"source": 1, "error": "NONE", "leader_epoch": 1, "leader_id": 1,
                "leader_endpoints": ["CONTROLLER://controller1:9093"]}
    steps = kafka_steps(raft_trace(
        {"standard": "raft/follower"},
        {"input": {"action": "tick", "now": 1500}},
        {"input": {"action": "fetch_response", "now": 1600, "message": fetched}},
        {"input": {"action": "tick", "now": 2000}, "output": {"response": {"sends": []}}},
        {"input": {"action": "fetch_response", "now": 2050, "message": fetched}},
        {"input": {"action": "update_raft_voter_response", "now": 2100, "message": answered}},
        {"input": {"action": "fetch_response", "now": 3900, "message": fetched}},
        {"input": {"action": "tick", "now": 4100}, "post": {"role": "Follower"}},
        {"input": {"action": "fetch_response", "now": 5900, "message": fetched}},
        {"input": {"action": "fetch_response", "now": 7800, "message": fetched}, "post": {"role": "Follower"}}))
    update = steps[3]["output"]["response"]["sends"]
    assert [(s["destination"], s["type"], s["voter_id"], s["current_leader_epoch"], s["listeners"]) for s in update] \
        == [(1, "UpdateRaftVoterRequest", 2, 1, ["CONTROLLER://controller2:9093"])]
    assert [sends(step) for step in steps[4:]] == [[(1, "FetchRequest")]] * 2 + [[]] + [[(1, "FetchRequest")]] * 2


def test_an_update_raft_voter_answer_invalid_request_is_fatal() -> None:
    """``maybeHandleCommonResponse`` throws on INVALID_REQUEST (IllegalStateException), whatever the RPC: the answer a
    kraft.version 0 leader gives an UpdateRaftVoter without directory id; the reference refuses it too."""
    fetched = {"source": 1, "leader_epoch": 1, "leader_id": 1, "high_watermark": 1}
    result = conformed(raft_trace(
        {"standard": "raft/follower"},
        {"input": {"action": "tick", "now": 1500}},
        {"input": {"action": "fetch_response", "now": 2050, "message": fetched}},
        {"input": {"action": "update_raft_voter_response", "now": 2100,
                   "message": {"source": 1, "error": "INVALID_REQUEST", "leader_epoch": 1, "leader_id": 1}}}))
    assert result.outcome == "agree", result.inexpressible or describe(result.kafka)
    refused = trace_to_json(result.kafka_trace)["steps"][-1]  # Kafka threw: a step without output or post-state
    assert refused.get("output") is None and refused.get("post") is None


def test_a_kraft_version0_leader_answers_update_raft_voter_from_its_memory() -> None:
    """``UpdateVoterHandler.handleUpdateVoterRequest`` at kraft.version 0: REQUEST_TIMED_OUT until the high
    watermark is known, INVALID_REQUEST without directory id or default listener (``handleUpdateVoterRequest``),
    VOTER_NOT_FOUND for an id outside the static voters, else NONE: the leader's in-memory voters are updated
    (``storeUpdatedVoters``) and nothing is written."""
    directory = "a3JhZnRzcGVjLW5vZGUtMg"

    def update(now: int, **fields: Any) -> dict[str, Any]:
        message = {"voter_id": 2, "current_leader_epoch": 1, "voter_directory_id": directory,
                   "listeners": ["CONTROLLER://controller2:9093", "OTHER://controller2:9094"], **fields}
        return {"input": {"action": "update_raft_voter_request", "now": now, "message": message}}

    steps = kafka_steps(raft_trace(
        {"standard": "raft/leader"},
        update(5),
        {"input": {"action": "fetch_request", "now": 10, "message": {
            "replica_id": 2, "current_leader_epoch": 1, "fetch_offset": 1, "last_fetched_epoch": 1}},
         "post": {"high_watermark": 1}},
        update(20, voter_directory_id=None),
        update(30, listeners=["OTHER://controller2:9094"]),
        update(40, voter_id=4),
        update(50, current_leader_epoch=2),
        {**update(60), "post": {"log_end_offset": 1}}))
    answers = [[(s["destination"], s["error"]) for s in step["output"]["response"]["sends"]
                if s["type"] == "UpdateRaftVoterResponse"] for step in steps]
    assert answers == [[(2, "REQUEST_TIMED_OUT")], [], [(2, "INVALID_REQUEST")], [(2, "INVALID_REQUEST")],
                       [(4, "VOTER_NOT_FOUND")], [(2, "UNKNOWN_LEADER_EPOCH")], [(2, "NONE")]]
    assert steps[-1]["post"]["log_end_offset"] == 1


# ------------------------------------------------------------------------------------------------
# The comparison can fail


def test_a_response_states_the_request_it_answers() -> None:
    """Trace 269 of seed 18: the vote answers (steps 26, 27) name node 1's pre-vote requests of step 21, requests
    name nothing, and a response whose id the trace never sent keeps its id alone."""
    steps = trace_to_json(simulate_one(18, 269, 40))["steps"]
    inputs = raft_hooks.kafka_inputs(steps)
    assert [(inputs[i]["answers"]["input"], inputs[i]["answers"]["request"]["destination"],
             inputs[i]["answers"]["request"]["correlation_id"]) for i in (26, 27)] == [(21, 2, 8), (21, 3, 9)]
    assert not any("answers" in i for i in inputs if i["action"].endswith("_request"))
    stray = copy.deepcopy(steps[:27])
    stray[26]["input"]["message"]["correlation_id"] = 99
    assert "answers" not in raft_hooks.kafka_inputs(stray)[26]


def test_a_response_reaches_kafka_under_the_id_kafka_gave_the_request_it_answers(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Trace 269 of seed 18: node 1's pre-votes (step 21) go to voters 2, 3 in the recording and to 3, 2 in Kafka
    (``EpochElection.unrecordedVoters`` is a hash set), so the recorded ids 8 and 9 name the other voter's request in
    Kafka's run. A network hands an answer over under the id of the request it answers
    (``RequestManager.isResponseExpected`` matches it): Kafka's trace restates the two ids and Kafka agrees.

    Fed the recorded ids as they are, Kafka drops both vote answers, stays Prospective and numbers its later requests
    one lower, so a Fetch answer sent from offset 0 reaches it as the answer to its Fetch from offset 2; the harness
    stamps records from Kafka's log end, MockLog appends epochs 1, 2 behind its epoch 2 (the production log,
    ``UnifiedLog.append``, refuses a first offset below its end), and the reference refuses the input."""
    trace = simulate_one(18, 269, 40)
    result = conformed(trace)
    assert result.recorded.conformant and result.outcome == "agree", describe(result.kafka)
    steps = trace_to_json(result.kafka_trace)["steps"]
    assert steps[21]["input"]["order"] == [3, 2]
    assert [steps[i]["input"]["message"]["correlation_id"] for i in (26, 27)] == [9, 8]
    monkeypatch.delattr(raft_hooks, "kafka_inputs")
    fed_as_recorded = conformed(trace)
    assert fed_as_recorded.outcome == "DISAGREE" and "below the latest epoch" in describe(fed_as_recorded.kafka)


@pytest.mark.parametrize("index", [269, 9874])
def test_answers_to_a_round_kafka_sent_in_another_order_agree(index: int) -> None:
    """Traces 269 and 9874 of seed 18 (the two conformant traces of 10,000 that Kafka disagreed with when the
    recorded ids were fed as they are): every answer comes under the id of a request Kafka sent, some under
    another id than recorded, and Kafka agrees."""
    trace = simulate_one(18, index, 40)
    result = conformed(trace)
    assert result.recorded.conformant and result.outcome == "agree", describe(result.kafka)
    recorded = trace_to_json(trace)["steps"]
    fed = trace_to_json(result.kafka_trace)["steps"]
    ids = [(r["input"]["message"].get("correlation_id"), f["input"]["message"].get("correlation_id"))
           for r, f in zip(recorded, fed) if r["input"]["action"].endswith("_response")]
    assert any(a != b for a, b in ids) and all(b != raft_hooks.NO_REQUEST for _, b in ids)


def test_a_response_to_a_request_kafka_never_sent_answers_nothing() -> None:
    """Trace 3949 of seed 18 under ``raft_bootstrap_first_server``: the recorded node's first Fetch goes to voter
    1, Kafka's to voter 3 (the drawn bootstrap index), so Kafka sent no request that some later answers answer:
    those reach it under an id it never gave (``NO_REQUEST``) and both sides drop them; the recording is flagged."""
    with mutants.get("raft_bootstrap_first_server").applied():
        trace = simulate_one(18, 3949, 40)
    result = conformed(trace)
    assert not result.recorded.conformant
    assert result.outcome == "agree", describe(result.kafka)
    ids = [s["input"]["message"]["correlation_id"] for s in trace_to_json(result.kafka_trace)["steps"]
           if s["input"]["action"].endswith("_response")]
    assert raft_hooks.NO_REQUEST in ids


def test_a_response_kafka_refuses_is_stated_under_the_id_it_came_under(monkeypatch: pytest.MonkeyPatch) -> None:
    """An observer's Fetch answered with no error and no leader: Kafka (``followerStateOrThrow`` in
    ``handleFetchResponse``) and the reference both refuse it. The trace records that Fetch under id 7 where Kafka
    sent it under 1: the answer reaches Kafka under 1, and the refused step states 1 (stated under 7, the reference
    would drop the answer that Kafka refused)."""
    tick = {"input": {"action": "tick", "now": 10, "bootstrap": 0}}
    (first,) = kafka_steps(raft_trace({"standard": "raft/fresh-observer"}, tick))
    (fetch,) = first["output"]["response"]["sends"]
    assert fetch["type"] == "FetchRequest" and fetch["correlation_id"] == 1
    recorded = {**tick, "output": {"response": {"sends": [{**fetch, "correlation_id": 7}]}}}
    answer = {"input": {"action": "fetch_response", "now": 10, "message": {
        "source": fetch["destination"], "leader_epoch": 0, "leader_id": -1, "correlation_id": 7}}}
    result = conformed(raft_trace({"standard": "raft/fresh-observer"}, recorded, answer))
    assert result.outcome == "agree", describe(result.kafka)
    steps = trace_to_json(result.kafka_trace)["steps"]
    assert len(steps) == 2 and steps[1]["input"]["message"]["correlation_id"] == 1
    assert steps[1].get("output") is None and steps[1].get("post") is None
    monkeypatch.delattr(raft_hooks, "refused_input")
    stated_as_recorded = conformed(raft_trace({"standard": "raft/fresh-observer"}, recorded, answer))
    assert stated_as_recorded.outcome == "DISAGREE" and "refused by Kafka" in describe(stated_as_recorded.kafka)


def test_a_reference_mutant_disagrees_with_kafka() -> None:
    """With the reference's HW rule swapped for a minority's offset, Kafka's own outputs no longer replay."""
    sample = list(bundled(40))
    with mutants.get("raft_hw_from_minority").applied():
        outcomes = [conformed(obj) for obj in sample] + [conformed(simulate_one(1, 2, 40))]
    assert any(o.outcome == "DISAGREE" for o in outcomes)


def test_a_shutdown_mutant_disagrees_with_kafka() -> None:
    """With ``raft_shutdown_ignores_remote_leader`` the reference keeps a follower shutting down; Kafka's client
    completes the shutdown at the first poll, and its outputs no longer replay."""
    trace = trace_from_json(raft_trace({"standard": "raft/follower"},
                                       {"input": {"action": "shutdown", "timeout_ms": 100, "now": 1}}))
    assert conformed(trace).outcome == "agree"
    with mutants.get("raft_shutdown_ignores_remote_leader").applied():
        assert conformed(trace).outcome == "DISAGREE"
        outcomes = [conformed(simulate_one(1, index, 40, faults=True)) for index in (1, 7, 12)]
    assert all(o.outcome == "DISAGREE" for o in outcomes)


def test_a_mutant_recording_is_flagged_while_kafka_given_its_inputs_agrees() -> None:
    """Trace 2 of seed 1 recorded under ``raft_hw_from_minority`` states a wrong HW; Kafka, given the same inputs,
    does what the (correct) reference says."""
    with mutants.get("raft_hw_from_minority").applied():
        trace = simulate_one(1, 2, 40)
    result = conformed(trace)
    assert not result.recorded.conformant
    assert result.outcome == "agree"


def test_a_planted_change_to_what_kafka_is_fed_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every bootstrap draw the harness hands Kafka is off by one, while the trace keeps the true draws: an
    Unattached node's Fetch goes to another voter and the reference's replay of Kafka's outputs diverges."""
    process = kafka()
    honest = process.run

    def planted(component: str, initial: Any, inputs: Any, **options: Any) -> Any:
        fed = [{**i, "bootstrap": i.get("bootstrap", 0) + 1} if "bootstrap" in i or i["action"] == "tick" else i
               for i in inputs]
        return honest(component, initial, fed, **options)

    obj = raft_trace({"standard": "raft/fresh-observer"}, {"input": {"action": "tick", "now": 10, "bootstrap": 0}})
    assert conformed(obj).outcome == "agree"
    monkeypatch.setattr(process, "run", planted)
    caught = conformed(copy.deepcopy(obj))
    assert caught.outcome == "DISAGREE" and "destination" in describe(caught.kafka)
    assert replay(trace_from_json(obj)).conformant


# ------------------------------------------------------------------------------------------------
# A mixed quorum: Kafka-backed nodes among reference nodes (benchmarks/kafka_raft_mixed.py runs 1,000 seeds)


@pytest.mark.parametrize("kafka_nodes", [1, 2])
def test_a_mixed_quorum_stays_safe_and_every_view_agrees(kafka_nodes: int) -> None:
    """Eight seeded runs of the raft simulation with one or two nodes run by Kafka's client: no safety property
    breaks, no node refuses an input, and every node's view (Kafka's outputs included) replays on the reference."""
    from kraftspec.harness import raft_mixed
    from kraftspec.harness.jvm import KafkaProcess

    processes = [kafka()] + [KafkaProcess(DEFAULT_VERSION) for _ in range(kafka_nodes - 1)]
    try:
        kafka_steps, reached = 0, raft_mixed.HardPaths()
        for seed in range(8):
            result = raft_mixed.run(seed, kafka_nodes, processes)
            assert result.failure is None and result.inexpressible is None, (seed, result.failure, result.inexpressible)
            assert not result.disagreements, [describe(result.verdicts[n]) for n in result.disagreements][:1]
            kafka_steps += result.kafka_steps
            reached.add(result.paths)
        assert kafka_steps > 300 and sum(reached.restarts.values()) > 0
    finally:
        for process in processes[1:]:
            process.close()


def test_a_mixed_quorum_with_failed_requests_and_shutdowns_stays_safe_and_agrees() -> None:
    """Eight seeded runs with faults and one Kafka-backed node: requests fail (the BROKER_NOT_AVAILABLE answer Kafka's
    channel gives a disconnect), nodes shut down gracefully and restart; no safety property breaks and every view,
    Kafka's included, replays on the reference; Kafka's node takes failed answers and finishes shutdowns."""
    from kraftspec.harness import raft_mixed

    reached = raft_mixed.HardPaths()
    for seed in range(8):
        result = raft_mixed.run(seed, 1, [kafka()], faults=True)
        assert result.failure is None and result.inexpressible is None, (seed, result.failure, result.inexpressible)
        assert not result.disagreements, [describe(result.verdicts[n]) for n in result.disagreements][:1]
        reached.add(result.paths)
    assert any(kind.startswith("kafka:") for kind in reached.failed_requests)
    assert any(kind.startswith("kafka:") for kind in reached.shutdowns)
    assert {kind.split(":")[1] for kind in reached.shutdowns} == {"completed", "timed_out"}


@pytest.mark.parametrize(("seed", "index"), [(24, 96), (1, 6), (1, 12)])
def test_simulated_snapshot_traces_agree_with_kafka(seed: int, index: int) -> None:
    """KIP-630 on Kafka's own client: trace 96 of seed 24 (100 steps, ``--snapshots``) loads a snapshot fetched in
    chunks; trace 6 of seed 1 serves chunks, answers a FetchSnapshot with an error (an answer Kafka 4.3 builds without
    records, which its generated message cannot write: the harness reports it as built) and restarts from a snapshot;
    trace 12 of seed 1 answers a Fetch below its log start with the snapshot id."""
    result = conformed(simulate_one(seed, index, 100, snapshots=True))
    assert result.recorded.conformant and result.inexpressible is None, result.inexpressible
    assert result.outcome == "agree", describe(result.kafka)


def test_a_mixed_quorum_with_snapshots_stays_safe_and_agrees() -> None:
    """Seventeen seeded runs of 300 rules with snapshots (KIP-630) and one Kafka-backed node: nodes snapshot and clean
    their logs, followers behind a log start are sent the snapshot id and fetch chunks, nodes restart from snapshots;
    no safety property breaks (entries below a node's log start count as held in its snapshot) and every view,
    Kafka's included, replays on the reference."""
    from kraftspec.harness import raft_mixed

    reached = raft_mixed.HardPaths()
    for seed in range(17):  # seed 16 is the first whose Kafka node is answered with a snapshot id
        result = raft_mixed.run(seed, 1, [kafka()], rules=300, snapshots=True)
        assert result.failure is None and result.inexpressible is None, (seed, result.failure, result.inexpressible)
        assert not result.disagreements, [describe(result.verdicts[n]) for n in result.disagreements][:1]
        reached.add(result.paths)
    assert {"kafka:fetch answered with a snapshot id", "kafka:restart from a snapshot",
            "reference:chunk served"} <= set(reached.snapshots)
