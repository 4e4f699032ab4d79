"""What long ``--dynamic`` raft simulations (``kraftspec generate sim --component raft --dynamic``, 150 steps) showed
Kafka 4.3.1's ``KafkaRaftClient`` doing differently from the reference, each cut down to a hand-built trace: the
VotersRecord of a voter change waits in the accumulator for the poll (R3, R4) and a removed leader restarting
Resigned has an election timer (R5). Each was fixed in the reference citing the Kafka method that decides it; the
reference-only scenarios are in tests/test_raft_reconfig_client_scenarios.py.
"""

from __future__ import annotations

from typing import Any

from test_kafka_raft_dynamic import ADMIN, STANDALONE, add, api_versions, fetch, first_difference, node_state, remove, \
    run, sent, tick

CHECK_QUORUM_MS = 3000
"""1.5 x the harness's fetch timeout (2000 ms): a leader of two voters not fetched from for this long resigns."""


def parked_fetch(source: int, offset: int, high_watermark: int, now: int) -> dict[str, Any]:
    """A fetch at the leader's end offset that knows its high watermark: nothing to answer yet, parked 500 ms."""
    step = fetch(source, offset, now)
    step["message"].update(max_wait_ms=500, high_watermark=high_watermark)
    return step


def test_a_lone_leader_adding_a_voter_writes_it_after_its_check_quorum_test() -> None:
    """R3: the standalone leader last fetched from at 2 adds observer 2 when two voters would have expired check quorum;
    ``pollLeader`` tests ``timeUntilCheckQuorumExpires`` (one voter: never) before ``maybeAppendBatches`` writes the
    VotersRecord ``appendVotersRecord`` left in the accumulator, so it stays Leader."""
    late = 2 + CHECK_QUORUM_MS
    steps, verdict = run(STANDALONE, [tick(0), fetch(2, 3, 2), add(2, late - 1), api_versions(2, late)])
    post = steps[3]["post"]
    assert post["role"] == "Leader" and [v["id"] for v in post["log"][-1]["record"]["voters"]] == [1, 2]
    assert sent(steps[3]) == []
    assert verdict.conformant, first_difference(verdict)


def test_a_removal_the_leaders_own_flush_commits_answers_the_admin_before_parked_fetches() -> None:
    """R4: the leader of {1, 2} removes 2 while observer 3's fetch is parked; the poll's flush commits the VotersRecord
    (``updateLeaderEndOffsetAndTimestamp`` -> ``onUpdateLeaderHighWatermark``): ``RemoveVoterHandler
    .highWatermarkUpdated`` answers the admin before ``fetchPurgatory.completeAll`` answers 3."""
    steps, verdict = run(STANDALONE, [tick(0), fetch(2, 3, 2), add(2, 3, False), api_versions(2, 4), fetch(2, 4, 5),
                                      parked_fetch(3, 4, 4, 6), remove(2, 7)])
    assert steps[4]["post"]["high_watermark"] == 4 and sent(steps[5]) == []
    assert sent(steps[6]) == [(ADMIN, "RemoveRaftVoter", "NONE", None), (3, "FetchResponse")]
    assert steps[6]["post"]["high_watermark"] == 5
    assert verdict.conformant, first_difference(verdict)


def test_a_removed_leader_restarting_resigned_times_out() -> None:
    """R5: node 1 stored as leader of epoch 1 restarts Resigned though the voters are {2, 3} (``QuorumState.initialize``
    gives ``ResignedState`` a random election timeout either way); ``pollResigned`` then moves it to Unattached of
    epoch 2."""
    steps, verdict = run(node_state(1, (2, 3), quorum_state={"epoch": 1, "leader_id": 1}), [tick(0), tick(5000)])
    assert steps[0]["post"]["role"] == "Resigned"
    assert steps[1]["post"]["role"] == "Unattached" and steps[1]["post"]["epoch"] == 2
    assert verdict.conformant, first_difference(verdict)
