"""Differences the simulated traces found between the Raft reference and Kafka 4.3.1's ``KafkaRaftClient`` (issue 23),
each kept as the smallest one-node trace that shows it, run through Kafka's own client (helpers of
tests/test_kafka_raft_dynamic.py). Each test asserts what Kafka does, then that the reference follows Kafka's run.
The reference-only scenarios are in tests/test_raft_scenarios.py.
"""

from __future__ import annotations

from typing import Any

from test_kafka_raft_dynamic import STANDALONE, first_difference, run, tick


def append(now: int, *records: str) -> dict[str, Any]:
    return {"action": "append", "now": now, "records": list(records)}


def test_an_append_behind_the_unwritten_leader_change_lingers_one_poll() -> None:
    """Trace sim-raft-snapshots-dynamic-2712-172: the only voter leads from ``initialize`` with its start-of-epoch
    records (LeaderChange, KRaftVersion, Voters) in the accumulator; an append goes after them (``prepareAppend``
    returns 3) and the poll that writes them leaves the appended batch for the next poll
    (``BatchAccumulator.drain`` after ``appendControlMessages``' ``forceDrain``)."""
    steps, verdict = run(STANDALONE, [append(0, "r1"), tick(1)])
    assert steps[0]["output"]["response"]["last_offset"] == 3 and steps[0]["post"]["log_end_offset"] == 3
    assert steps[0]["post"]["log"][0]["record"]["type"] == "LeaderChangeMessage"
    assert steps[1]["post"]["log_end_offset"] == 4 and steps[1]["post"]["log"][3]["record"] == "r1"
    assert verdict.conformant, first_difference(verdict)


def test_a_restarted_lone_leader_holding_a_snapshot_writes_nothing_before_its_first_poll() -> None:
    """Trace sim-raft-snapshots-dynamic-2712-180: a lone leader with a snapshot restarts Leader of the next epoch
    (``KafkaRaftClient.initialize`` .. ``onBecomeLeader``) with its log as it was and no high watermark; the first
    poll writes its LeaderChange (``pollLeader``: ``maybeAppendBatches``)."""
    steps, verdict = run(STANDALONE, [
        tick(0), append(1, "r1"), {"action": "create_snapshot", "now": 2, "end_offset": 4, "epoch": 1, "size": 600},
        {"action": "restart", "now": 3}, tick(4)])
    restarted, polled = steps[3]["post"], steps[4]["post"]
    assert (restarted["role"], restarted["epoch"], restarted["log_end_offset"]) == ("Leader", 2, 4)
    assert restarted["high_watermark"] == -1
    assert polled["log_end_offset"] > 4 and polled["log"][4] == {"epoch": 2, "record": {
        "type": "LeaderChangeMessage", "leader_id": 1, "voters": [1], "granting_voters": [1], "version": 0}}
    assert verdict.conformant, first_difference(verdict)
