"""Raft traces recorded from TLC's state graph of ``KRaftAutoJoin.tla`` (``kraftspec generate tla --component
autojoin``): conformant as bundled, reproducible from the seed, accepted step by step by ``KRaftAutoJoinTrace.tla``,
and flagged under the auto-join mutants a trace can show (a static node's explicit state cannot say it may become a
voter, so ``voters_auto_join_at_kraft_version0`` has no trace to show it). Needs Java (TLC)."""

from __future__ import annotations

import io
from dataclasses import replace
from pathlib import Path

import networkx as nx
import pytest

from kraftspec import mutants
from kraftspec.spec.agree import load_model
from kraftspec.spec.state_graph import state_graph
from kraftspec.spec.tlc_config import read_constants
from kraftspec.traces.format import jsonl
from kraftspec.traces.format.envelope import Trace
from kraftspec.traces.recording import autojoin_tla
from kraftspec.traces.recording.generate import generate_command
from kraftspec.traces.replay.check import EXIT_OK, check_command
from kraftspec.traces.replay.verdict import replay

BUNDLE = Path(jsonl.__file__).parents[1] / "tla" / "autojoin.jsonl.gz"
SEED, WALKS, COVER = 20261127, 300, "edges"
"""The bundle: kraftspec generate tla --component autojoin --traces 300 --seed 20261127 --cover edges."""


@pytest.fixture(scope="module")
def graph() -> nx.MultiDiGraph:
    model = load_model("autojoin")
    found, _ = state_graph(model.module_path, model.config_path, timeout_s=600, workers=1)
    return found


def _bundled() -> list[Trace]:
    return [t for _, t in jsonl.read_jsonl(str(BUNDLE))]


def test_the_bundle_is_conformant_and_reproduced_from_its_seed(graph: nx.MultiDiGraph) -> None:
    bundled = _bundled()
    assert list(autojoin_tla.generate_tla(SEED, WALKS, COVER, graph=graph)) == bundled
    assert sum("walk" in t.meta for t in bundled) == WALKS and len(bundled) > WALKS  # then the covering set
    out = io.StringIO()
    assert check_command([str(BUNDLE)], False, out) == EXIT_OK, out.getvalue()[-2000:]
    assert out.getvalue().splitlines()[-1] == \
        f"checked {len(bundled)} traces from 1 file(s): {len(bundled)} conformant, 0 divergent, 0 unreadable"


def test_the_traces_start_from_every_expressible_initial_state_and_send_every_request() -> None:
    bundled = _bundled()
    starts = {repr(obj) for obj in autojoin_tla.initial_objects(read_constants(load_model("autojoin").config_path))}
    assert {repr(t.explicit) for t in bundled} == starts and len(starts) == 20
    assert {s.action for t in bundled for s in t.steps} == {
        "tick", "fetch_response", "voter_change_response", "update_raft_voter_response"}
    assert {send["type"] for t in bundled for s in t.steps for send in (s.response or {}).get("sends", ())} == {
        "FetchRequest", "AddRaftVoterRequest", "RemoveRaftVoterRequest", "UpdateRaftVoterRequest"}


@pytest.mark.parametrize("mutant", ["voters_auto_join_without_controller_role", "voters_auto_join_keeps_old_directory"])
def test_the_auto_join_mutants_are_flagged(mutant: str) -> None:
    bundled = _bundled()
    with mutants.get(mutant).applied():
        flagged = [v.divergence for t in bundled for v in [replay(t)] if v.divergence is not None]
    assert len(flagged) > len(bundled) // 20


def test_generate_tla_writes_traces_that_check(graph: nx.MultiDiGraph, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(autojoin_tla, "state_graph", lambda *args, **kwargs: (graph, None))
    out, report, path = io.StringIO(), io.StringIO(), str(tmp_path / "autojoin.jsonl.gz")
    assert generate_command("tla", path, 20, 3, stream=out, component="autojoin") == EXIT_OK, out.getvalue()
    assert "--component autojoin" in out.getvalue() and "(seed 3)" in out.getvalue()
    assert check_command([path], False, report) == EXIT_OK, report.getvalue()


def _removal_restated_as_add(trace: Trace) -> tuple[Trace, int]:
    """The trace cut after its first step that sent RemoveRaftVoter, now stating that it sent AddRaftVoter (what an
    observer that never removes its id's old directory would send)."""
    index = next(i for i, s in enumerate(trace.steps)
                 if any(send["type"] == "RemoveRaftVoterRequest" for send in (s.response or {}).get("sends", ())))
    step = trace.steps[index]
    assert step.response is not None
    sends = [{**send, "type": "AddRaftVoterRequest"} for send in step.response["sends"]]
    return replace(trace, steps=trace.steps[:index] + (replace(step, response={"sends": sends}),)), index


def test_tlc_accepts_the_bundled_traces_and_refuses_a_wrong_one() -> None:
    """``kraftspec check --with-tlc``: the trace module of ``KRaftAutoJoin.tla`` takes its traces (not
    ``KRaftQuorumTrace``), accepts every step of the bundle, and rejects a trace whose stated request the spec never
    sends (the reference diverges at the same step: they agree)."""
    from kraftspec.spec import trace_validation
    from kraftspec.spec.trace_validation import validate

    bundled = _bundled()
    (chosen,) = [m for m in trace_validation.MODULES["raft"] if m.spec == "KRaftAutoJoin"]
    assert all(chosen.encode(t, chosen.bounds()).init is not None for t in bundled)
    bad, at = _removal_restated_as_add(next(t for t in bundled if any(
        send["type"] == "RemoveRaftVoterRequest" for s in t.steps for send in (s.response or {}).get("sends", ()))))
    verdicts = validate(bundled + [bad])
    assert [v.outcome for v in verdicts[:-1]] == ["accepted"] * len(bundled)
    assert (verdicts[-1].outcome, verdicts[-1].step) == ("rejected", at)
    divergence = replay(bad).divergence
    assert divergence is not None and divergence.step == at
