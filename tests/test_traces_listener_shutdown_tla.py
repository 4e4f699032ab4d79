"""Raft traces recorded from TLC's state graphs of the focused specs ``KRaftListener.tla`` and ``KRaftShutdown.tla``
(``kraftspec generate tla --component listener|shutdown``): conformant as bundled, reproducible from the seed, every
environment edge made by a raft input but the ones ``listener_tla.LEFT_OUT`` names, and flagged under the raft mutants
of the listener and of the graceful shutdown, which no trace of ``KRaftQuorum.tla`` can show. Needs Java (TLC)."""

from __future__ import annotations

import io
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import networkx as nx
import pytest

from kraftspec import mutants
from kraftspec.spec.agree import load_model
from kraftspec.spec.state_graph import state_graph
from kraftspec.spec.tlc_config import read_constants
from kraftspec.traces.format import jsonl
from kraftspec.traces.format.envelope import Trace
from kraftspec.traces.recording import listener_tla, shutdown_tla
from kraftspec.traces.recording.broker_tla import COVERS, covering_paths
from kraftspec.traces.recording.generate import generate_command
from kraftspec.traces.replay.check import EXIT_OK, check_command
from kraftspec.traces.replay.verdict import replay

TLA = Path(jsonl.__file__).parents[1] / "tla"
SEED, WALKS, COVER = 20261127, 300, "edges"
"""The bundles: kraftspec generate tla --component listener|shutdown --traces 300 --seed 20261127 --cover edges."""
MODULES = {"listener": listener_tla, "shutdown": shutdown_tla}


@pytest.fixture(scope="module")
def graphs() -> dict[str, nx.MultiDiGraph]:
    found = {}
    for component in MODULES:
        model = load_model(component)
        found[component], _ = state_graph(model.module_path, model.config_path, timeout_s=600)
    return found


def _bundled(component: str) -> list[Trace]:
    return [t for _, t in jsonl.read_jsonl(str(TLA / f"{component}.jsonl.gz"))]


@pytest.mark.parametrize("component", sorted(MODULES))
def test_the_bundle_is_conformant_and_reproduced_from_its_seed(component: str,
                                                               graphs: dict[str, nx.MultiDiGraph]) -> None:
    bundled = _bundled(component)
    generated = list(MODULES[component].generate_tla(SEED, WALKS, COVER, graph=graphs[component]))
    assert generated == bundled
    assert sum("walk" in t.meta for t in bundled) == WALKS and len(bundled) > WALKS  # then the covering set
    few = list(MODULES[component].generate_tla(7, 12, graph=graphs[component]))
    assert few == list(MODULES[component].generate_tla(7, 12, graph=graphs[component]))
    assert few != list(MODULES[component].generate_tla(8, 12, graph=graphs[component]))
    out = io.StringIO()
    assert check_command([str(TLA / f"{component}.jsonl.gz")], False, out) == EXIT_OK, out.getvalue()[-2000:]
    assert out.getvalue().splitlines()[-1] == \
        f"checked {len(bundled)} traces from 1 file(s): {len(bundled)} conformant, 0 divergent, 0 unreadable"


def test_the_listener_traces_state_the_view_and_every_environment_action() -> None:
    bundled = _bundled("listener")
    assert {s.action for t in bundled for s in t.steps} == {
        "tick", "vote_response", "begin_quorum_epoch_request", "fetch_request", "fetch_response", "append",
        "create_snapshot", "delete_before_snapshot", "restart"}
    views = [s.post["listener"] for t in bundled for s in t.steps if s.post]
    assert any(v["leader_id"] == 1 for v in views) and any(v["loaded_snapshot"] is not None for v in views)
    assert {s.post["role"] for t in bundled for s in t.steps if s.post} == {
        "Unattached", "Candidate", "Leader", "Follower", "Resigned"}
    trace = next(t for t in bundled if any(s.post and s.post["listener"]["committed_end"] > 0 for s in t.steps))
    index = next(i for i, s in enumerate(trace.steps) if s.post and s.post["listener"]["committed_end"] > 0)
    step = trace.steps[index]
    assert step.post is not None
    told = {**step.post["listener"], "committed_end": step.post["listener"]["committed_end"] - 1}
    verdict = replay(replace(trace, steps=trace.steps[:index] + (replace(step, post={**step.post, "listener": told}),)))
    assert verdict.divergence is not None and verdict.divergence.step == index


def test_every_environment_edge_out_of_a_walked_state_has_an_input_but_the_left_out_ones(
        graphs: dict[str, nx.MultiDiGraph]) -> None:
    graph = graphs["listener"]
    recorder = listener_tla.Recorder(graph, read_constants(load_model("listener").config_path))
    walked = recorder.steps_graph()
    missing: Counter[tuple[str, str]] = Counter()
    for key in walked:
        made = {label for _, _, label in walked.out_edges(key, keys=True)}
        for _, _, label in graph.out_edges(key, keys=True):
            if label not in listener_tla.LISTENER_ACTIONS and label not in made:
                missing[label, dict(key)["role"]] += 1
    assert set(missing) == {("LearnLeader", "Resigned")} == {(a, "Resigned") for a in listener_tla.LEFT_OUT}
    assert {label for _, _, label in walked.edges(keys=True)} == {
        "AdvanceHighWatermark", "AppendRecord", "CreateSnapshot", "AdvanceLogStart", "StartElection", "WinElection",
        "LearnLeader", "Restart"}
    for index, path in enumerate(covering_paths(walked, recorder.initial, set(), COVERS["kinds"])):
        recorder.trace(path, f"cover-{index}", {})
    assert not recorder.ended  # no path of the walked graph is cut short when replayed from the start


def test_the_shutdown_traces_start_from_every_initial_state_and_take_every_action() -> None:
    bundled = _bundled("shutdown")
    assert {(tuple(t.explicit["voters"]), (t.explicit.get("quorum_state") or {}).get("leader_id", -1))
            for t in bundled} >= {((1, 2, 3), 2), ((1,), -1), ((2, 3), 2)}
    assert {s.action for t in bundled for s in t.steps} == {
        "shutdown", "tick", "end_quorum_epoch_request", "begin_quorum_epoch_request", "vote_response",
        "quorum_epoch_response", "append"}
    assert {s.post["shutdown"] for t in bundled for s in t.steps if s.post} == {None, "pending", "completed",
                                                                                 "timed_out"}


@pytest.mark.parametrize(("component", "mutant", "rule"), [
    ("listener", "raft_leader_visible_before_catch_up", "kraftspec.reference.raft._handle_vote_response"),
    ("shutdown", "raft_shutdown_ignores_remote_leader", "kraftspec.reference.raft._handle_shutdown"),
])
def test_the_mutants_no_quorum_trace_can_show_are_flagged(component: str, mutant: str, rule: str) -> None:
    bundled = _bundled(component)
    with mutants.get(mutant).applied():
        flagged = [v.divergence for t in bundled for v in [replay(t)] if v.divergence is not None]
    assert len(flagged) > len(bundled) // 10 and rule in {d.rule for d in flagged}


@pytest.mark.parametrize("component", sorted(MODULES))
def test_generate_tla_writes_traces_that_check(component: str, graphs: dict[str, nx.MultiDiGraph], tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(MODULES[component], "state_graph", lambda *args, **kwargs: (graphs[component], None))
    out, report, path = io.StringIO(), io.StringIO(), str(tmp_path / f"{component}.jsonl.gz")
    assert generate_command("tla", path, 20, 3, stream=out, component=component) == EXIT_OK, out.getvalue()
    assert f"--component {component}" in out.getvalue() and "(seed 3)" in out.getvalue()
    assert check_command([path], False, report) == EXIT_OK, report.getvalue()


def _wrong_listener(trace: Trace) -> tuple[Trace, int]:
    """The trace cut at the last step with a post before the first that tells the listener of the local leadership,
    that step now stating the leadership already told (one step early: the listener has not caught up yet)."""
    index = next(i for i, s in enumerate(trace.steps) if s.post and s.post["listener"]["leader_id"] == 1)
    before = max(i for i in range(index) if trace.steps[i].post)
    step = trace.steps[before]
    assert step.post is not None
    told = {**step.post["listener"], "leader_id": 1, "epoch": step.post["epoch"]}
    return replace(trace, steps=trace.steps[:before] + (replace(step, post={**step.post, "listener": told}),)), before


def _wrong_shutdown(trace: Trace) -> tuple[Trace, int]:
    """The trace cut after its first step whose shutdown is pending, now stating it completed."""
    index = next(i for i, s in enumerate(trace.steps) if s.post and s.post["shutdown"] == "pending")
    step = trace.steps[index]
    assert step.post is not None
    return replace(trace, steps=trace.steps[:index] + (replace(step, post={**step.post, "shutdown": "completed"}),)), \
        index


def _wrong_role_of_the_only_voter(trace: Trace) -> tuple[Trace, int]:
    """The only voter's trace cut after its first step past the first poll (which the spec's initial state already
    follows), that step now stating the node Unattached: the rejection names the trace's own step."""
    if trace.explicit is None or trace.explicit["voters"] != [1]:
        raise ValueError("not the only voter")
    index = next(i for i, s in enumerate(trace.steps) if i > 0 and s.post)
    step = trace.steps[index]
    assert step.post is not None
    return replace(trace, steps=trace.steps[:index] + (replace(step, post={**step.post, "role": "Unattached"}),)), index


@pytest.mark.parametrize(("component", "module", "wrong"), [
    ("listener", "KRaftListener", _wrong_listener), ("shutdown", "KRaftShutdown", _wrong_shutdown),
    ("shutdown", "KRaftShutdown", _wrong_role_of_the_only_voter)])
def test_tlc_accepts_the_bundled_traces_and_refuses_a_wrong_one(component: str, module: str, wrong: Any) -> None:
    """``kraftspec check --with-tlc``: the focused spec's trace module takes its traces (not ``KRaftQuorumTrace``),
    accepts every step of the bundle's first 200, and rejects a trace whose stated post-state the spec never reaches
    (the reference diverges at the same step: they agree)."""
    from kraftspec.spec import trace_validation
    from kraftspec.spec.trace_validation import validate

    bundled = _bundled(component)[:200]
    (chosen,) = [m for m in trace_validation.MODULES["raft"] if m.spec == module]
    assert all(chosen.encode(t, chosen.bounds()).init is not None for t in bundled)
    bad, at = wrong(next(t for t in _bundled(component) if _has_wrong(t, wrong)))
    verdicts = validate(bundled + [bad])
    assert [v.outcome for v in verdicts[:-1]] == ["accepted"] * len(bundled)
    assert (verdicts[-1].outcome, verdicts[-1].step) == ("rejected", at)
    divergence = replay(bad).divergence
    assert divergence is not None and divergence.step == at


def _has_wrong(trace: Trace, wrong: Any) -> bool:
    try:
        wrong(trace)
    except (StopIteration, ValueError):
        return False
    return True
