"""Raft traces recorded from TLC's state graph of ``KRaftRequests.tla`` (``kraftspec generate tla --component
requests``): conformant as bundled, reproducible from the seed, starting from every initial state and taking every
action, accepted step by step by ``KRaftRequestsTrace.tla``, and flagged under the mutant of the request back-off,
which no trace of ``KRaftQuorum.tla`` can show (its requests never fail). Needs Java (TLC)."""

from __future__ import annotations

import io
from dataclasses import replace
from pathlib import Path

import networkx as nx
import pytest

from kraftspec import mutants
from kraftspec.traces.format.envelope import Trace
from kraftspec.traces.recording import requests_tla
from kraftspec.traces.recording.generate import generate_command
from kraftspec.traces.replay.check import EXIT_OK, check_command
from kraftspec.traces.replay.verdict import replay
from support_spec import BUNDLES, bundled_traces, spec_state_graph

BUNDLE = BUNDLES / "requests.jsonl.gz"
SEED, WALKS, COVER = 20261127, 300, "edges"
"""The bundle: kraftspec generate tla --component requests --traces 300 --seed 20261127 --cover edges."""


@pytest.fixture(scope="module")
def graph() -> nx.MultiDiGraph:
    return spec_state_graph("requests")


@pytest.fixture(scope="module")
def bundled() -> list[Trace]:
    return bundled_traces("requests")


def test_the_bundle_is_conformant_and_reproduced_from_its_seed(graph: nx.MultiDiGraph, bundled: list[Trace]) -> None:
    assert list(requests_tla.generate_tla(SEED, WALKS, COVER, graph=graph)) == bundled
    assert sum("walk" in t.meta for t in bundled) == WALKS and len(bundled) > WALKS  # then the covering set
    few = list(requests_tla.generate_tla(7, 12, graph=graph))
    assert few == list(requests_tla.generate_tla(7, 12, graph=graph))
    assert few != list(requests_tla.generate_tla(8, 12, graph=graph))
    out = io.StringIO()
    assert check_command([str(BUNDLE)], False, out) == EXIT_OK, out.getvalue()[-2000:]
    assert out.getvalue().splitlines()[-1] == \
        f"checked {len(bundled)} traces from 1 file(s): {len(bundled)} conformant, 0 divergent, 0 unreadable"


def test_the_traces_start_from_every_initial_state_and_take_every_input(bundled: list[Trace]) -> None:
    first_posts = {next(s.post["role"] for s in t.steps if s.post) for t in bundled}
    assert first_posts == {"Follower", "Unattached", "Prospective", "Candidate"}
    assert {s.action for t in bundled for s in t.steps} == {
        "tick", "fetch_response", "vote_response", "end_quorum_epoch_request"}
    failed = [s for t in bundled for s in t.steps if s.action.endswith("_response") and s.input["message"].error]
    assert {type(s.input["message"]).__name__ for s in failed} == {"FetchResponse", "VoteResponse"}
    assert {s.input.get("bootstrap", 0) for t in bundled for s in t.steps} == {0, 1, 2}


@pytest.mark.parametrize(("mutant", "rules"), [
    ("raft_retry_backoff_ignored", {"kraftspec.reference.raft._handle_fetch_response",
                                    "kraftspec.reference.raft._handle_vote_response"}),
    ("raft_bootstrap_first_server", {"kraftspec.reference.raft._poll"}),
])
def test_the_mutants_of_the_requests_are_flagged(bundled: list[Trace], mutant: str, rules: set[str]) -> None:
    with mutants.get(mutant).applied():
        flagged = [v.divergence for t in bundled for v in [replay(t)] if v.divergence is not None]
    assert len(flagged) > len(bundled) // 3 and rules <= {d.rule for d in flagged}


def test_generate_tla_writes_traces_that_check(graph: nx.MultiDiGraph, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(requests_tla, "state_graph", lambda *args, **kwargs: (graph, None))
    out, report, path = io.StringIO(), io.StringIO(), str(tmp_path / "requests.jsonl.gz")
    assert generate_command("tla", path, 20, 3, stream=out, component="requests") == EXIT_OK, out.getvalue()
    assert "--component requests" in out.getvalue() and "(seed 3)" in out.getvalue()
    assert check_command([path], False, report) == EXIT_OK, report.getvalue()


def _wrong_leader(trace: Trace) -> tuple[Trace, int]:
    """The trace cut at its first step where an Unattached node learns a leader, now stating another leader."""
    index = next(i for i, s in enumerate(trace.steps) if i and s.post and s.post["role"] == "Follower"
                 and trace.steps[i - 1].post and trace.steps[i - 1].post["role"] == "Unattached")
    step = trace.steps[index]
    assert step.post is not None
    other = 3 if step.post["leader_id"] == 2 else 2
    return replace(trace, steps=trace.steps[:index] + (replace(step, post={**step.post, "leader_id": other}),)), index


def test_tlc_accepts_the_bundled_traces_and_refuses_a_wrong_one(bundled: list[Trace]) -> None:
    """``kraftspec check --with-tlc``: ``KRaftRequestsTrace`` takes these traces (no other focused spec's module),
    accepts every step of the bundle's first 200, and rejects a trace whose stated post-state the spec never reaches
    (the reference diverges at the same step: they agree)."""
    from kraftspec.spec import trace_validation
    from kraftspec.spec.trace_validation import validate

    first = bundled[:200]
    modules = trace_validation.MODULES["raft"]
    assert all([m.spec for m in modules if m.encode(t, m.bounds()).init is not None][0] == "KRaftRequests"
               for t in first)
    bad, at = _wrong_leader(next(t for t in bundled if _learns_a_leader(t)))
    verdicts = validate(first + [bad])
    assert [v.outcome for v in verdicts[:-1]] == ["accepted"] * len(first)
    assert (verdicts[-1].outcome, verdicts[-1].step) == ("rejected", at)
    divergence = replay(bad).divergence
    assert divergence is not None and divergence.step == at


def _learns_a_leader(trace: Trace) -> bool:
    try:
        _wrong_leader(trace)
    except StopIteration:
        return False
    return True
