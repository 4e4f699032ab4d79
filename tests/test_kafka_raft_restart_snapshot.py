"""A restart whose latest snapshot lies past the records that survived, against Apache Kafka's own ``KafkaRaftClient``.

The production log, opened after a crash, runs ``truncateToLatestSnapshot`` (Kafka 4.3 ``KafkaRaftLog.createLog``):
when the latest snapshot is past what survived, the log starts and ends at it, older snapshots are forgotten and its
end is the log's high watermark (``UnifiedLog.truncateFullyAndStartAt``). An observer flushes nothing, so its
fetched records are lost in a crash while its snapshots survive. The harness reopens Kafka's ``MockLog`` and runs the
same truncation, as the production log does. Trace sim-raft-snapshots-7101-565 showed the difference: the reference
started such a log at its latest snapshot but kept the older snapshots and no high watermark, and the harness (without
the truncation) at its earliest. Each trace is hand-built (inputs only) and applied to Kafka 4.3.1's client.
"""

from __future__ import annotations

from typing import Any

from test_kafka_raft_dynamic import DIRECTORY, first_difference, run, tick
from test_kafka_raft_quirks import begin, fetched, leader_change

OBSERVER = {"local_id": 4, "voters": [1, 2, 3], "directory_id": DIRECTORY[4],
            "quorum_state": {"epoch": 1, "leader_id": 1}}
"""Node 4 of a kraft.version 0 quorum, not a voter (so it never flushes), restarted following leader 1 in epoch 1."""
FETCHED = [tick(0), fetched(1, 1, 1, 3, (leader_change(1), "x", "y"), record_epoch=1),
           tick(2), fetched(1, 1, 3, 5, ("a", "b"), record_epoch=1)]
"""The observer fetches leader 1's records 0-4 with high watermark 5 and flushes none of them."""


def snapshot(end_offset: int, now: int) -> dict[str, Any]:
    return {"action": "create_snapshot", "now": now, "end_offset": end_offset, "epoch": 1, "size": 600}


def delete(end_offset: int, now: int) -> dict[str, Any]:
    return {"action": "delete_before_snapshot", "now": now, "end_offset": end_offset, "epoch": 1}


def test_a_restarted_observer_starts_at_its_latest_snapshot_and_forgets_the_older() -> None:
    """Snapshots (3, 1) and (5, 1), the log starting at 3, then a restart: no record survives, so Kafka's log starts
    and ends at 5 holding only (5, 1), and its high watermark 5 lets the cleaner delete before (5, 1) at once."""
    steps, verdict = run(OBSERVER, FETCHED + [snapshot(3, 4), delete(3, 5), snapshot(5, 6),
                                              {"action": "restart", "now": 7, "jitter": 0}, delete(5, 8)])
    assert steps[4]["post"]["flushed_end_offset"] == 0
    restarted = steps[7]["post"]
    assert (restarted["log_start_offset"], restarted["log_end_offset"], restarted["latest_snapshot_id"]) == (5, 5, [5, 1])
    assert "refused" not in steps[8]
    assert verdict.conformant, first_difference(verdict)


def test_a_restarted_observer_keeps_a_snapshot_at_its_log_start() -> None:
    """One snapshot, at the log start, and nothing flushed: the log is that snapshot either way."""
    steps, verdict = run(OBSERVER, FETCHED + [snapshot(5, 4), delete(5, 5), {"action": "restart", "now": 6,
                                                                             "jitter": 0}])
    assert (steps[-1]["post"]["log_start_offset"], steps[-1]["post"]["log_end_offset"]) == (5, 5)
    assert verdict.conformant, first_difference(verdict)


VOTER = {"local_id": 2, "voters": [1, 2, 3], "directory_id": DIRECTORY[2]}
"""Node 2, a voter of a kraft.version 0 quorum (it flushes what it fetches)."""


def test_a_restarted_voter_keeps_the_records_of_its_snapshots_epoch() -> None:
    """Follower 2 loads leader 1's snapshot (2, 1), then fetches record 2 of epoch 1 and restarts: its last record's
    epoch is the snapshot's and the log ends past it, so the production log keeps the record (``UnifiedLog``'s epoch
    cache holds epoch 1 from offset 2). Found by ``kraftspec agree raft`` under logs of two records, where the spec
    judged by the last record's epoch and the reference by an epoch cache that, as ``MockLog``'s, leaves out an epoch
    equal to the latest snapshot's; the harness, too, judges as the production log does."""
    snapshot = {"action": "fetch_snapshot_response", "now": 3, "message": {
        "source": 1, "leader_epoch": 1, "leader_id": 1, "snapshot_id": [2, 1], "size": 500, "position": 0,
        "chunk": 500}}
    steps, verdict = run(VOTER, [begin(1, 1, 1), fetched(1, 1, 2, 2, log_start_offset=2, snapshot_id=[2, 1]), snapshot,
                                 fetched(1, 1, 4, 3, ("a",), record_epoch=1), {"action": "restart", "now": 5,
                                                                               "jitter": 0}])
    assert steps[2]["post"]["log_start_offset"] == 2 and steps[3]["post"]["log_end_offset"] == 3
    restarted = steps[-1]["post"]
    assert (restarted["log_start_offset"], restarted["log_end_offset"], restarted["log"]) == (
        2, 3, [{"epoch": 1, "record": "a"}])
    assert verdict.conformant, first_difference(verdict)
