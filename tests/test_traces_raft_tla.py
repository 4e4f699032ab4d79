"""Raft traces recorded from TLC's state graph of ``KRaftQuorum.tla`` (``kraftspec generate tla --component raft``):
one node's view of each path, conformant as bundled, reproducible from the seed, covering every transition of
every node, and flagged under the raft mutants that show within the spec's bounds. Needs Java (TLC)."""

from __future__ import annotations

import io
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any, Iterator

import networkx as nx
import pytest

from kraftspec import mutants
from kraftspec.models.raft_mutants import MUTANTS
from kraftspec.spec.agree import load_model
from kraftspec.spec.state_graph import state_graph
from kraftspec.spec.tlc_config import read_constants
from kraftspec.traces.format import jsonl
from kraftspec.traces.recording import raft_tla
from kraftspec.traces.replay.check import EXIT_OK, check_command
from kraftspec.traces.format.envelope import Trace
from kraftspec.traces.recording.generate import generate_command
from kraftspec.traces.replay.verdict import replay

BUNDLED = Path(jsonl.__file__).parents[1] / "tla" / "raft.jsonl.gz"
SEED, WALKS = 20261124, 2500  # the bundle: kraftspec generate tla --component raft --traces 2500 --seed 20261124
SNAPSHOTS = BUNDLED.with_name("raft-snapshots.jsonl.gz")
SNAPSHOT_SEED, SNAPSHOT_WALKS = 20261127, 300
"""The snapshots bundle: kraftspec generate tla --component raft --snapshots --traces 300 --seed 20261127."""
SHOWN = {  # mutant -> (a bundled trace that shows it, the step flagged, its rule, the first differing field)
    "raft_hw_at_epoch_start": ("tla-raft-walk-20261124-167", 5, "_handle_fetch_request",
                               "response.sends[0].high_watermark"),
    "raft_hw_from_minority": ("tla-raft-walk-20261124-4", 5, "_handle_vote_response", "post.high_watermark"),
    "raft_reset_last_fetched_epoch": ("tla-raft-cover-20261124-20", 3, "_handle_fetch_response",
                                      "response.sends[0].last_fetched_epoch"),
    "raft_restart_as_leader": ("tla-raft-cover-20261124-0", 4, "restart", "post.role"),
    "raft_bootstrap_first_server": ("tla-raft-walk-20261124-19", 1, "_poll", "response.sends[0].destination"),
}
LATER_RULES = {  # mutant -> further rules its recordings are flagged by: where the wrong in-flight request first shows
    "raft_bootstrap_first_server": {"_handle_fetch_request", "_handle_fetch_response", "_handle_vote_request",
                                    "_handle_vote_response"},
}
CANNOT_SHOW = {
    # MaxTimeouts = 1: the one candidate of a behaviour asks for votes with an empty log (last epoch 0) and no log
    # holds entries of epoch 0, so no voter's log is longer in the candidate's last epoch.
    "raft_vote_shorter_log_same_epoch",
    # The clock passes only at the observed node's own Timeout, which the spec never gives the observer.
    "raft_observer_starts_election",
    # The leader is always a voter (the observer never campaigns), and no check-quorum deadline passes.
    "raft_check_quorum_non_voter_leader",
    # The spec models neither a graceful shutdown nor the listener: no recording has the input or states the view.
    "raft_shutdown_ignores_remote_leader",
    "raft_leader_visible_before_catch_up",
    # No request fails in the spec (a lost message is never answered), so no connection backs off.
    "raft_retry_backoff_ignored",
}


@pytest.fixture(scope="module")
def graph() -> nx.MultiDiGraph:
    model = load_model("raft")
    found, _ = state_graph(model.module_path, model.config_path, timeout_s=600)
    return found


@pytest.fixture(scope="module")
def bundled() -> list[Trace]:
    return [t for _, t in jsonl.read_jsonl(str(BUNDLED))]


def _generated(graph: nx.MultiDiGraph, seed: int, walks: int) -> list[Trace]:
    return list(raft_tla.generate_tla(seed, walks, graph=graph))


def test_every_bundled_raft_trace_is_conformant_and_a_changed_post_state_is_not(bundled: list[Trace]) -> None:
    assert 2000 <= len(bundled) <= 3000 and BUNDLED.stat().st_size < 400_000
    assert {t.meta["node"] for t in bundled} == {1, 2, 3, 4}
    assert {s.action for t in bundled for s in t.steps} == {
        "tick", "vote_request", "vote_response", "begin_quorum_epoch_request", "fetch_request", "fetch_response",
        "restart"}  # no append: MaxLogLen 1 leaves no room after the leader's LeaderChange record
    assert {s.post["role"] for t in bundled for s in t.steps if s.post} == {
        "Unattached", "Prospective", "Candidate", "Leader", "Follower", "Resigned"}
    out = io.StringIO()
    assert check_command([str(BUNDLED)], False, out) == EXIT_OK, out.getvalue()[-2000:]
    assert out.getvalue().splitlines()[-1] == \
        f"checked {len(bundled)} traces from 1 file(s): {len(bundled)} conformant, 0 divergent, 0 unreadable"
    trace = next(t for t in bundled if any(s.post and s.post["role"] == "Leader" for s in t.steps))
    index = next(i for i, s in enumerate(trace.steps) if s.post and s.post["role"] == "Leader")
    step = trace.steps[index]
    assert step.post is not None
    flipped = replace(step, post={**step.post, "high_watermark": step.post["high_watermark"] + 1})
    verdict = replay(replace(trace, steps=trace.steps[:index] + (flipped,)))
    assert verdict.divergence is not None and verdict.divergence.step == index


def test_generation_is_deterministic_and_reproduces_the_bundle(graph: nx.MultiDiGraph, bundled: list[Trace]) -> None:
    assert _generated(graph, SEED, WALKS) == bundled
    few = _generated(graph, 7, 12)
    assert few == _generated(graph, 7, 12) != _generated(graph, 8, 12)


def test_the_covering_set_takes_every_transition_of_every_node(graph: nx.MultiDiGraph) -> None:
    recorder = raft_tla.Recorder(raft_tla.keyed(graph), read_constants(load_model("raft").config_path))
    taken: dict[int, set[Any]] = {n: set() for n in recorder.nodes}
    for kind, index, node, path in raft_tla.paths(recorder, SEED, 0, "kinds"):
        assert kind == "path"
        taken[node].update(raft_tla.cover_key(recorder, node, "kinds", edge) for edge in path)
        recorder.trace(path, node, f"cover-{index}", {})
    edges = list(recorder.graph.edges(keys=True))
    for node in recorder.nodes:
        every = {raft_tla.cover_key(recorder, node, "kinds", edge) for edge in edges} - {None}
        assert every <= taken[node], node
    assert sum(len(taken[n] - {None}) for n in recorder.nodes) == 291
    assert not recorder.ended  # no path was cut short: every transition taken is in a trace


def test_generate_tla_raft_writes_traces_that_check(graph: nx.MultiDiGraph, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(raft_tla, "state_graph", lambda *args, **kwargs: (graph, None))
    out, report, path = io.StringIO(), io.StringIO(), str(tmp_path / "raft.jsonl.gz")
    assert generate_command("tla", path, 20, 3, stream=out, component="raft") == EXIT_OK, out.getvalue()
    assert "--component raft" in out.getvalue()
    assert check_command([path], False, report) == EXIT_OK, report.getvalue()


def test_the_snapshot_traces_are_conformant_reproducible_and_take_every_snapshot_action(tmp_path: Path) -> None:
    """KIP-630: the walks of ``KRaftQuorum.snapshots.cfg``'s graph create, clean, serve and load snapshots; every
    step's post-state states the log start and latest snapshot id the spec gives, and the reference agrees."""
    model = replace(load_model("raft"), config="snapshots")
    graph, _ = state_graph(model.module_path, model.config_path, timeout_s=600)
    bundled = [t for _, t in jsonl.read_jsonl(str(SNAPSHOTS))]
    assert list(raft_tla.generate_tla(SNAPSHOT_SEED, SNAPSHOT_WALKS, graph=graph, config="snapshots")) == bundled
    assert {s.action for t in bundled for s in t.steps} >= {
        "create_snapshot", "delete_before_snapshot", "fetch_snapshot_request", "fetch_snapshot_response", "restart"}
    assert all("log_start_offset" in s.post for t in bundled for s in t.steps if s.post)
    assert any(s.post["log_start_offset"] > 0 for t in bundled for s in t.steps if s.post)
    out = io.StringIO()
    assert check_command([str(SNAPSHOTS)], False, out) == EXIT_OK, out.getvalue()[-2000:]
    assert out.getvalue().splitlines()[-1].endswith(f"{len(bundled)} conformant, 0 divergent, 0 unreadable")
    with pytest.raises(ValueError, match="unknown raft config"):
        next(raft_tla.generate_tla(1, 1, graph=graph, config="deep"))


def test_every_raft_mutant_is_shown_or_cannot_show_within_the_bounds() -> None:
    assert {m.name for m in MUTANTS} == set(SHOWN) | CANNOT_SHOW and not set(SHOWN) & CANNOT_SHOW


def _recordings(bundled: list[Trace], name: str) -> Iterator[tuple[Trace, Trace]]:
    for trace in bundled:
        yield trace, raft_tla.record(trace, mutants.get(name).applied())


@pytest.mark.parametrize("name", sorted(SHOWN))
def test_a_trace_recorded_under_a_mutant_is_flagged_at_its_step_and_rule(name: str, bundled: list[Trace]) -> None:
    trace_id, index, rule, path = SHOWN[name]
    original = next(t for t in bundled if t.id == trace_id)
    wrong = raft_tla.record(original, mutants.get(name).applied())
    assert replay(wrong, mutants.get(name).applied()).conformant
    divergence = replay(wrong).divergence
    assert divergence is not None and divergence.step == index
    assert divergence.rule == f"kraftspec.reference.raft.{rule}" and divergence.diffs[0].path == path


@pytest.mark.parametrize("name", sorted(m.name for m in MUTANTS))
def test_every_bundled_recording_a_mutant_changes_is_flagged_at_its_first_changed_step(
        name: str, bundled: list[Trace]) -> None:
    rules: Counter[str] = Counter()
    for original, wrong in _recordings(bundled, name):
        if wrong == original:
            continue
        first = next((i for i, (a, b) in enumerate(zip(original.steps, wrong.steps)) if a != b), None)
        if first is None:  # the recording ends before an input the variant refuses; what it states is unchanged
            assert replay(wrong).conformant
            continue
        divergence = replay(wrong).divergence
        assert divergence is not None and divergence.step == first, (original.id, divergence)
        rules[divergence.rule] += 1
    if name in CANNOT_SHOW:
        assert not rules
    else:
        shown = {SHOWN[name][2]} | LATER_RULES.get(name, set())
        assert set(rules) == {f"kraftspec.reference.raft.{rule}" for rule in shown}
