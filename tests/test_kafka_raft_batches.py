"""Record batches against Apache Kafka's own ``KafkaRaftClient``: what the leader's accumulator writes together is
fetched, kept and snapshotted together.

Kafka's leader writes one batch per accumulator drain (the start-of-epoch control records together, an append's
records together, an append that lingered behind the unwritten start-of-epoch records with the next one), its log reads
whole batches and at least one (``KafkaRaftLog.read``: ``UnifiedLog.read`` with ``minOneMessage``; the harness's log
counts records for ``quorum.fetch.max.bytes``), and ``createNewSnapshot`` refuses an id inside a batch. Trace
sim-raft-snapshots-dynamic-2712-37 was not expressible before the reference kept batches: its Fetch cut the lingered
batch. Each trace here is hand-built (inputs only) and applied to Kafka 4.3.1's client; the tests assert what Kafka
does and then that the reference follows Kafka's run.
"""

from __future__ import annotations

from typing import Any

import pytest

from kraftspec.harness import conform
from kraftspec.traces.format.envelope import Trace, trace_from_json, trace_to_json
from test_kafka_raft_dynamic import STANDALONE, fetch, first_difference, kafka, node_state, run, tick
from test_kafka_raft_quirks import begin, fetched


def append(now: int, *records: str) -> dict[str, Any]:
    return {"action": "append", "now": now, "records": list(records)}


START_OF_EPOCH = [tick(0), fetch(2, 0, 1)]
"""The standalone leader writes LeaderChange, KRaftVersion and Voters (offsets 0-2, one batch); observer 2 fetches
from 0."""
LINGERED = [append(0, "r1"), append(1, "r2"), fetch(2, 3, 2)]
"""Trace 2712-37's situation: r1, appended before the leader's first poll, lingers behind its start-of-epoch records
and is written with r2 as one batch (offsets 3-4); observer 2 fetches from 3."""


def trace(inputs: list[dict[str, Any]], fetch_max_records: int = 1000) -> Trace:
    """The standalone leader's trace of ``inputs`` under ``fetch_max_records``."""
    explicit = {**STANDALONE, "config": {"fetch_max_records": fetch_max_records}}
    return trace_from_json({"format": "1.0", "component": "raft", "id": f"batches-{fetch_max_records}",
                            "initial": {"explicit": explicit}, "steps": [{"input": i} for i in inputs]})


def conformed(inputs: list[dict[str, Any]], fetch_max_records: int) -> conform.Conformance:
    return conform.conform_trace(trace(inputs, fetch_max_records), kafka())


def answered(result: conform.Conformance) -> list[dict[str, Any]]:
    """The records of Kafka's answer to the trace's last Fetch."""
    assert result.inexpressible is None and result.kafka is not None and result.kafka_trace is not None
    (answer,) = trace_to_json(result.kafka_trace)["steps"][-1]["output"]["response"]["sends"]
    assert answer["partition_error"] == "NONE"
    return answer["records"]


@pytest.mark.parametrize(("inputs", "limit", "whole"), [(START_OF_EPOCH, 1, 3), (START_OF_EPOCH, 2, 3),
                                                        (START_OF_EPOCH, 3, 3), (LINGERED, 1, 2), (LINGERED, 2, 2)],
                         ids=["start-of-epoch batch, 1", "start-of-epoch batch, 2", "start-of-epoch batch, 3",
                              "lingered append, 1", "lingered append, 2"])
def test_a_fetch_gets_its_first_batch_whole(inputs: list[dict[str, Any]], limit: int, whole: int) -> None:
    """A limit below the batch's size still gets the whole batch, its records after the first marked as continuing
    it; the reference answers the same."""
    result = conformed(inputs, limit)
    records = answered(result)
    assert [r.get("starts_batch", True) for r in records] == [True] + [False] * (whole - 1)
    assert result.outcome == "agree", result.kafka.divergence


@pytest.mark.parametrize(("limit", "count"), [(3, 3), (4, 3), (5, 5), (6, 5)])
def test_a_fetch_adds_whole_batches_within_its_limit(limit: int, count: int) -> None:
    """From offset 0 the start-of-epoch batch (3 records) and the lingered one (2): the second only when all five fit."""
    result = conformed([append(0, "r1"), append(1, "r2"), fetch(2, 0, 2)], limit)
    assert len(answered(result)) == count
    assert result.outcome == "agree", result.kafka.divergence


def test_a_follower_keeps_the_leaders_batches() -> None:
    """Follower 2 fetches a batch of three data records and a single one: Kafka's log holds them as two batches."""
    records = [{"epoch": 1, "record": "a"}, {"epoch": 1, "record": "b", "starts_batch": False},
               {"epoch": 1, "record": "c", "starts_batch": False}, {"epoch": 1, "record": "d"}]
    answer = fetched(1, 1, 2, 0)
    answer["message"]["records"] = records
    steps, verdict = run(node_state(2, (1, 2, 3)), [begin(1, 1, 1), answer])
    assert steps[-1]["post"]["log"] == records
    assert verdict.conformant, first_difference(verdict)


def snapshot(end_offset: int, now: int) -> dict[str, Any]:
    return {"action": "create_snapshot", "now": now, "end_offset": end_offset, "epoch": 1, "size": 600}


COMMITTED_BATCH = [tick(0), append(1, "a", "b", "c")]
"""The standalone leader commits its start-of-epoch batch (offsets 0-2), then a, b, c as one batch (offsets 3-5)."""
SNAPSHOT_AT_4 = COMMITTED_BATCH + [snapshot(4, 2)]


def test_a_snapshot_inside_a_batch_is_refused() -> None:
    """The standalone leader commits a, b, c (one batch, offsets 3-5): a snapshot at 4 is refused with Kafka's
    message; the reference refuses it too."""
    steps, verdict = run(STANDALONE, SNAPSHOT_AT_4)
    assert steps[-1]["refused"]["exception"] == "java.lang.IllegalArgumentException"
    assert "Cannot create snapshot at offset (4) because it is not batch aligned. The batch containing the " \
           "requested offset has a base offset of (3)" in steps[-1]["refused"]["message"], steps[-1]["refused"]
    assert verdict.conformant, first_difference(verdict)


@pytest.mark.parametrize("end_offset", [3, 6])
def test_a_snapshot_at_a_batch_start_or_the_high_watermark_is_created(end_offset: int) -> None:
    steps, verdict = run(STANDALONE, COMMITTED_BATCH + [snapshot(end_offset, 2)])
    assert steps[-1]["output"]["response"]["created"] is True
    assert verdict.conformant, first_difference(verdict)
