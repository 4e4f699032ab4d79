"""A voter change whose VotersRecord the high watermark passes only when a *parked* Fetch completes, against Kafka
4.3.1's own ``KafkaRaftClient`` (helpers of tests/test_kafka_raft_dynamic.py).

Voter 2's Fetch at the leader's end offset is parked, then an older Fetch of its arrives and takes its end offset back;
a later Fetch moves the high watermark up to the record, not past it, and ``fetchPurgatory.completeAll`` completes 2's
parked Fetch, whose ``tryCompleteFetchRequest`` moves it past. Kafka runs ``onUpdateLeaderHighWatermark`` within that
completion: the admin is answered first, then the parked fetches still waiting, then the parked Fetch itself, then
the Fetch that started it, each stating the new high watermark (``buildFetchResponse`` reads it after). The reference
answered the admin last and the outer Fetch with the older high watermark until it followed Kafka
(``raft_transitions.try_complete_fetch``); the reference-only scenario is
tests/test_raft_reconfig_client_scenarios.py::test_remove_voter_committed_by_completing_a_parked_fetch.
"""

from __future__ import annotations

from typing import Any, Optional

from test_kafka_raft_dynamic import ADMIN, DIRECTORY, add, api_versions, fetch, first_difference, node_state, remove, \
    run, sent, tick

RECORD, END = 5, 6
"""The VotersRecord's offset (after the start-of-epoch records 0-2 and the appended records 3-4) and the end offset."""


def candidate(voters: tuple[int, ...]) -> dict[str, Any]:
    """Node 1 of ``voters``, restarted from its vote for itself in epoch 1 (a Candidate)."""
    return node_state(1, voters, quorum_state={"epoch": 1, "voted_key": {"id": 1, "directory_id": DIRECTORY[1]}})


def vote(source: int, now: int) -> dict[str, Any]:
    return {"action": "vote_response", "now": now, "message": {"source": source, "leader_epoch": 1,
                                                                "vote_granted": True}}


def fetch_at(source: int, offset: int, now: int, high_watermark: Optional[int] = None) -> dict[str, Any]:
    """``source``'s Fetch at ``offset``: answered at once, or, knowing ``high_watermark``, parked up to 500 ms."""
    step = fetch(source, offset, now)
    step["message"]["max_wait_ms"] = 0 if high_watermark is None else 500
    if high_watermark is not None:
        step["message"]["high_watermark"] = high_watermark
    return step


def led(voters: tuple[int, ...]) -> list[dict[str, Any]]:
    """Node 1 is elected by 2 and 3, which commit the epoch (high watermark 3); two records are appended at 3-4."""
    return [tick(0), vote(2, 1), vote(3, 2), fetch_at(2, 3, 3), fetch_at(3, 3, 4),
            {"action": "append", "now": 5, "records": ["a", "b"]}]


def parked_then_set_back(now: int, source: int = 2) -> list[dict[str, Any]]:
    """``source``'s Fetch at the end is parked, then an older Fetch of its (at 3) arrives and takes its end offset
    back."""
    return [fetch_at(source, END, now, high_watermark=3), fetch_at(source, 3, now + 1)]


def hw_of(step: dict[str, Any]) -> list[Any]:
    return [s.get("high_watermark") for s in step["output"]["response"]["sends"] if s["type"] == "FetchResponse"]


def test_a_removal_committed_by_completing_a_parked_fetch_is_answered_before_that_fetch() -> None:
    """Voters 1-5 remove 5 (then 3 of {1-4} commit): 3's Fetch moves the high watermark to the record, completing 2's
    parked Fetch moves it past; Kafka answers the admin, then 2, then 3, both with high watermark 6."""
    inputs = led((1, 2, 3, 4, 5)) + [fetch_at(4, 3, 6), remove(5, 7)] + parked_then_set_back(8) + [
        fetch_at(4, RECORD, 10), fetch_at(3, END, 11)]
    steps, verdict = run(candidate((1, 2, 3, 4, 5)), inputs)
    assert steps[7]["post"]["log"][RECORD]["record"]["type"] == "VotersRecord" and sent(steps[8]) == []
    assert steps[10]["post"]["high_watermark"] == 3
    assert sent(steps[11]) == [(ADMIN, "RemoveRaftVoter", "NONE", None), (2, "FetchResponse"), (3, "FetchResponse")]
    assert hw_of(steps[11]) == [END, END] and steps[11]["post"]["high_watermark"] == END
    assert verdict.conformant, first_difference(verdict)


def test_a_parked_fetch_that_commits_completes_the_later_parked_ones_before_its_own_answer() -> None:
    """As above with voter 5's Fetch (no longer a voter once the record is written) parked after 2's: completing 2's
    runs ``onUpdateLeaderHighWatermark``, whose ``completeAll`` answers 5 before 2's own answer is sent."""
    inputs = led((1, 2, 3, 4, 5)) + [fetch_at(4, 3, 6), remove(5, 7)] + parked_then_set_back(8) + [
        fetch_at(5, END, 10, high_watermark=3), fetch_at(4, RECORD, 11), fetch_at(3, END, 12)]
    steps, verdict = run(candidate((1, 2, 3, 4, 5)), inputs)
    assert sent(steps[10]) == []
    assert sent(steps[12]) == [(ADMIN, "RemoveRaftVoter", "NONE", None), (5, "FetchResponse"), (2, "FetchResponse"),
                               (3, "FetchResponse")]
    assert hw_of(steps[12]) == [END, END, END]
    assert verdict.conformant, first_difference(verdict)


def test_an_addition_committed_by_completing_a_parked_fetch_is_answered_before_that_fetch() -> None:
    """Voters 1-4 add caught-up observer 5 (then 3 of {1-5} commit), whose own parked Fetch completes the commit: the
    same order as a removal."""
    inputs = led((1, 2, 3, 4)) + [fetch_at(4, 3, 6), fetch_at(5, RECORD, 7), add(5, 8), api_versions(5, 9)] + \
        parked_then_set_back(10, source=5) + [fetch_at(4, RECORD, 12), fetch_at(3, END, 13)]
    steps, verdict = run(candidate((1, 2, 3, 4)), inputs)
    assert [v["id"] for v in steps[9]["post"]["log"][RECORD]["record"]["voters"]] == [1, 2, 3, 4, 5]
    assert steps[12]["post"]["high_watermark"] == 3
    assert sent(steps[13]) == [(ADMIN, "AddRaftVoter", "NONE", None), (5, "FetchResponse"), (3, "FetchResponse")]
    assert hw_of(steps[13]) == [END, END]
    assert verdict.conformant, first_difference(verdict)


def test_a_leader_removing_itself_by_completing_a_parked_fetch_answers_first_then_resigns() -> None:
    """Voters 1-5 remove the leader (then 3 of {2-5} commit): the admin is answered before 2's and 3's Fetches, the
    step's poll resigns (``RemoveVoterHandler.highWatermarkUpdated``) and the next sends EndQuorumEpoch."""
    inputs = led((1, 2, 3, 4, 5)) + [fetch_at(4, 3, 6), remove(1, 7)] + parked_then_set_back(8) + [
        fetch_at(4, END, 10), fetch_at(5, RECORD, 11), fetch_at(3, END, 12), tick(13)]
    steps, verdict = run(candidate((1, 2, 3, 4, 5)), inputs)
    assert steps[11]["post"]["high_watermark"] == 3
    assert sent(steps[12]) == [(ADMIN, "RemoveRaftVoter", "NONE", None), (2, "FetchResponse"), (3, "FetchResponse")]
    assert hw_of(steps[12]) == [END, END] and steps[12]["post"]["role"] == "Resigned"
    assert sorted(sent(steps[13])) == [(v, "EndQuorumEpochRequest") for v in (2, 3, 4, 5)]
    assert verdict.conformant, first_difference(verdict)


def test_a_parked_fetch_that_expires_commits_nothing() -> None:
    """2's parked Fetch expires as 3's Fetch arrives (500 ms on): it is answered first with what it was parked with
    (its replica state untouched), 3's Fetch moves the high watermark only to the record, and 2's next Fetch commits
    the removal: the admin is answered before it."""
    inputs = led((1, 2, 3, 4, 5)) + [fetch_at(4, 3, 6), remove(5, 7)] + parked_then_set_back(8) + [
        fetch_at(4, RECORD, 10), fetch_at(3, END, 508), fetch_at(2, END, 509)]
    steps, verdict = run(candidate((1, 2, 3, 4, 5)), inputs)
    assert sent(steps[11]) == [(2, "FetchResponse"), (3, "FetchResponse")] and hw_of(steps[11]) == [3, RECORD]
    assert sent(steps[12]) == [(ADMIN, "RemoveRaftVoter", "NONE", None), (2, "FetchResponse")]
    assert hw_of(steps[12]) == [END]
    assert verdict.conformant, first_difference(verdict)
