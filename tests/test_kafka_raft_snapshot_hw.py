"""The log's own high watermark for createSnapshot and deleteBeforeSnapshot, against Apache Kafka's own ``KafkaRaftClient``.

``KafkaRaftClient.createSnapshot`` asks the log (``RaftLog.createNewSnapshot``), and the log cleaner's
``deleteBeforeSnapshot`` is the log's too: both check the log's high watermark, which the client gives the log
wherever the state's moves (``updateFollowerHighWatermark``, ``onUpdateLeaderHighWatermark``) and which outlives the
state: a new LeaderState knows none until its epoch commits, ResignedState none at all, yet the log keeps the last one.
A reopened ``MockLog`` (the log the harness runs) starts at 0. Each trace is hand-built (inputs only) and applied to
Kafka 4.3.1's client; the tests assert what Kafka does and then that the reference follows Kafka's run.
"""

from __future__ import annotations

from typing import Any

from test_kafka_raft_dynamic import CANDIDATE, COMMITTED, first_difference, node_state, run, tick
from test_kafka_raft_quirks import KRAFT_VERSION_1, begin, fetched, leader_change, voters_record

FOLLOWED = [begin(1, 1, 1), fetched(1, 1, 2, 3, (leader_change(1), KRAFT_VERSION_1, voters_record((1, 2, 3))),
                                    record_epoch=1)]
"""Follower 2 of voters 1-3 fetches leader 1's first batch (offsets 0-2) with high watermark 3."""


def create(now: int) -> dict[str, Any]:
    """The state machine's createSnapshot (3, 1), which it freezes at once."""
    return {"action": "create_snapshot", "now": now, "end_offset": 3, "epoch": 1, "size": 600}


def delete(now: int) -> dict[str, Any]:
    """The log cleaner's deleteBeforeSnapshot (3, 1)."""
    return {"action": "delete_before_snapshot", "now": now, "end_offset": 3, "epoch": 1}


def granted(epoch: int, now: int) -> dict[str, Any]:
    """Voter 1's granted (pre-)vote of ``epoch``."""
    return {"action": "vote_response", "now": now, "message": {"source": 1, "leader_epoch": epoch,
                                                               "vote_granted": True}}


def test_a_new_leader_snapshots_at_the_log_high_watermark_before_its_epoch_commits() -> None:
    """Follower 2 times out, wins 1's pre-vote and vote and leads epoch 2: its LeaderState has no high watermark yet,
    but the log's is 3, so Kafka gives a writer for (3, 1) and moves the log start to it."""
    steps, verdict = run(node_state(2, (1, 2, 3)), FOLLOWED + [
        tick(2100), tick(2101), granted(1, 2102), tick(2103), granted(2, 2104), create(2105), delete(2106)])
    assert (steps[6]["post"]["role"], steps[6]["post"]["epoch"], steps[6]["post"]["high_watermark"]) == (
        "Leader", 2, -1)
    assert steps[7]["output"]["response"]["created"] is True and "refused" not in steps[8]
    assert steps[8]["post"]["log_start_offset"] == 3
    assert verdict.conformant, first_difference(verdict)


def test_a_resigned_leader_snapshots_at_the_log_high_watermark() -> None:
    """Leader 1 (high watermark 3) resigns on its check-quorum timeout: ResignedState knows no high watermark, the
    log still 3, so Kafka gives a writer for (3, 1) and moves the log start to it."""
    steps, verdict = run(CANDIDATE, COMMITTED + [tick(4000), tick(4001), create(4002), delete(4003)])
    assert (steps[3]["post"]["role"], steps[3]["post"]["high_watermark"]) == ("Resigned", -1)
    assert steps[5]["output"]["response"]["created"] is True and "refused" not in steps[6]
    assert steps[6]["post"]["log_start_offset"] == 3
    assert verdict.conformant, first_difference(verdict)


def test_a_follower_of_a_new_epoch_keeps_its_high_watermark() -> None:
    """Follower 2 (high watermark 3) follows leader 3 of epoch 2 before any fetch of that epoch: ``QuorumState`` carries
    the high watermark into the new FollowerState, so the snapshot is created and the log start moved."""
    steps, verdict = run(node_state(2, (1, 2, 3)), FOLLOWED + [begin(3, 2, 3), create(4), delete(5)])
    assert (steps[2]["post"]["epoch"], steps[2]["post"]["high_watermark"]) == (2, 3)
    assert steps[3]["output"]["response"]["created"] is True and steps[4]["post"]["log_start_offset"] == 3
    assert verdict.conformant, first_difference(verdict)


def test_a_restarted_node_has_a_log_high_watermark_of_0() -> None:
    """After a restart the follower knows no high watermark and ``MockLog.reopen`` leaves the log's at 0: Kafka refuses
    createSnapshot (3, 1) as past the high watermark, and so does the reference."""
    steps, verdict = run(node_state(2, (1, 2, 3)), FOLLOWED + [{"action": "restart", "now": 3}, create(4)])
    assert steps[3]["refused"]["message"].endswith("greater than the high-watermark (0)")
    assert verdict.conformant, first_difference(verdict)
