"""Raft traces recorded from ``KRaftVoters.snapshots.cfg``'s graph (``traces/recording/voters_tla.py``) given to
Apache Kafka 4.3.1's own ``KafkaRaftClient``: the node creates a snapshot (``create_snapshot``: the kraft.version and
voter set in force at its end), deletes the log before it (``delete_before_snapshot``) or, as a follower, loads its
leader's snapshot fetched whole (``fetch_response`` naming it, then ``fetch_snapshot_response`` with its control
records), and Kafka does what the reference says, step by step. The traces are the first paths, breadth-first from the
spec's initial states, that end in each of the three snapshot actions."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from kraftspec.harness import conform
from kraftspec.harness.jvm import DEFAULT_VERSION, shared
from kraftspec.spec.agree import load_model
from kraftspec.spec.state_graph import state_graph
from kraftspec.spec.tlc_config import read_constants
from kraftspec.traces.format.envelope import Trace
from kraftspec.traces.recording import voters_tla
from kraftspec.traces.replay.check import describe

SNAPSHOT_ACTIONS = {"HandleCreateSnapshot": 3, "DeleteBeforeSnapshot": 3, "HandleFetchSnapshotResponse": 6}
"""How many traces end in each snapshot action (past the first two edges, so that the node has led and followed)."""


def snapshot_traces() -> list[Trace]:
    model = replace(load_model("voters"), config="snapshots")
    graph, _ = state_graph(model.module_path, model.config_path, timeout_s=600)
    recorder = voters_tla.Recorder(graph, read_constants(model.config_path))
    wanted, ends = Counter(SNAPSHOT_ACTIONS), []
    for label, _, path in recorder.first_paths():
        if wanted[label] > 0 and len(path) > 3:
            wanted[label] -= 1
            ends.append(path)
            if not +wanted:
                break
    assert not +wanted, wanted
    return [recorder.trace(path, f"voters-snapshots-{i}", {}) for i, path in enumerate(ends)]


def test_recorded_snapshot_traces_agree_with_kafka() -> None:
    traces = snapshot_traces()
    actions = {step.action for trace in traces for step in trace.steps}
    assert {"create_snapshot", "delete_before_snapshot", "fetch_snapshot_response"} <= actions
    outcomes = [conform.conform_trace(trace, shared(DEFAULT_VERSION)) for trace in traces]
    disagree = [o for o in outcomes if o.outcome != "agree"]
    assert not disagree, [(o.trace_id, o.inexpressible or describe(o.kafka)) for o in disagree[:3]]
