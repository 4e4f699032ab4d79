"""What the raft harness cannot give Kafka is reported as not expressible, never as Kafka's answer.

The reference's ``fetch_max_records`` (its stand-in for ``quorum.fetch.max.bytes``) counts records and takes every log
entry for a batch, while Kafka's leader writes what its accumulator holds together as one batch and its log reads
whole batches (``KafkaRaftLog.read``: ``UnifiedLog.read`` with ``minOneMessage``). A Fetch answer the reference cuts
inside such a batch has no Kafka counterpart: the harness's log raises a ``HarnessError`` inside
``KafkaRaftClient.tryCompleteFetchRequest``, whose own ``catch (Exception)`` would answer UNKNOWN_SERVER_ERROR, so the
session remembers the error and throws it after Kafka's call, naming the step (``harness/src/raft``). Trace
sim-raft-snapshots-dynamic-2712-37 showed it as a disagreement before: its leader wrote an append that lingered behind
its unwritten LeaderChange together with the next append. Each trace here is hand-built (inputs only, helpers of
tests/test_kafka_raft_dynamic.py) and applied to Kafka 4.3.1's client.
"""

from __future__ import annotations

from typing import Any

import pytest

from kraftspec.harness import conform
from kraftspec.traces.format.envelope import trace_from_json, trace_to_json
from test_kafka_raft_dynamic import ADMIN, DIRECTORY, STANDALONE, fetch, kafka, tick


def append(now: int, *records: str) -> dict[str, Any]:
    return {"action": "append", "now": now, "records": list(records)}


START_OF_EPOCH = [tick(0), fetch(2, 0, 1)]
"""The standalone leader writes LeaderChange, KRaftVersion and Voters (offsets 0-2, one batch); observer 2 fetches
from 0."""
LINGERED = [append(0, "r1"), append(1, "r2"), fetch(2, 3, 2)]
"""Trace 2712-37's situation: r1, appended before the leader's first poll, lingers behind its start-of-epoch records
and is written with r2 as one batch (offsets 3-4); observer 2 fetches from 3."""


def conformed(inputs: list[dict[str, Any]], fetch_max_records: int) -> conform.Conformance:
    explicit = {**STANDALONE, "config": {"fetch_max_records": fetch_max_records}}
    trace = trace_from_json({"format": "1.0", "component": "raft", "id": f"inexpressible-{fetch_max_records}",
                             "initial": {"explicit": explicit}, "steps": [{"input": i} for i in inputs]})
    return conform.conform_trace(trace, kafka())


@pytest.mark.parametrize(("inputs", "cut", "batch"), [(START_OF_EPOCH, 2, "3 records at offset 0"),
                                                      (LINGERED, 1, "2 records at offset 3")],
                         ids=["start-of-epoch batch", "lingered append"])
def test_a_fetch_cut_inside_a_batch_is_not_expressible(inputs: list[dict[str, Any]], cut: int, batch: str) -> None:
    """The Fetch is the trace's last step; the report names it and the batch, and Kafka's run is not judged."""
    result = conformed(inputs, cut)
    assert result.outcome == "not expressible" and result.kafka is None
    assert result.inexpressible is not None
    step = len(inputs) - 1
    assert f"step {step} (fetch_request): fetch_max_records {cut} would split the batch of {batch}" in \
        result.inexpressible, result.inexpressible


@pytest.mark.parametrize(("inputs", "whole"), [(START_OF_EPOCH, 3), (LINGERED, 2)],
                         ids=["start-of-epoch batch", "lingered append"])
def test_a_fetch_cut_between_batches_agrees(inputs: list[dict[str, Any]], whole: int) -> None:
    """The same traces with a limit that ends at the batch's end: Kafka answers the whole batch, as the reference."""
    result = conformed(inputs, whole)
    assert result.inexpressible is None and result.kafka is not None
    assert result.outcome == "agree", result.kafka.divergence
    assert result.kafka_trace is not None
    (answer,) = trace_to_json(result.kafka_trace)["steps"][-1]["output"]["response"]["sends"]
    assert (answer["partition_error"], len(answer["records"])) == ("NONE", whole)


@pytest.mark.parametrize("action", ["add_raft_voter_request", "remove_raft_voter_request"])
def test_a_voter_change_naming_a_cluster_id_at_a_node_without_one_is_not_expressible(action: str) -> None:
    """Kafka's node always has a cluster id; the harness's stand-in for a node the trace gives none would show in the
    refusal's message ("doesn't match the cluster id ..."), where the reference has none to name."""
    message = {"voter_id": 2, "voter_directory_id": DIRECTORY[2], "cluster_id": "kraftspec-other", "source": ADMIN,
               "correlation_id": 7}
    if action == "add_raft_voter_request":
        message["listeners"] = ["CONTROLLER://controller2:9093"]
    trace = trace_from_json({"format": "1.0", "component": "raft", "id": "no-cluster-id",
                             "initial": {"explicit": STANDALONE},
                             "steps": [{"input": tick(0)}, {"input": {"action": action, "now": 1, "message": message}}]})
    result = conform.conform_trace(trace, kafka())
    assert result.outcome == "not expressible" and result.inexpressible is not None
    assert "names cluster id kraftspec-other but the node has none" in result.inexpressible, result.inexpressible
