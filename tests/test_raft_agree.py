"""spec/KRaftQuorum.tla: TLC finds no violation under its bounds, and the reference explored under the same
bounds has exactly TLC's reachable states and labelled edges (``kraftspec agree raft``)."""

from __future__ import annotations

from pathlib import Path

from kraftspec.spec.agree import SPEC_DIR, check_agreement, graph_from_tlc, load_model
from kraftspec.spec.state_graph import state_graph
from kraftspec.spec.tlc import run_tlc


def test_tlc_checks_the_invariants() -> None:
    result = run_tlc(SPEC_DIR / "KRaftQuorum.tla")
    assert result.verdict == "ok", result.summary()


def test_reference_agrees_with_the_spec() -> None:
    report = check_agreement(load_model("raft"))
    assert report.identical, report.summary()
    assert report.spec_states > 1000 and report.spec_edges > report.spec_states


def test_a_spec_whose_voters_store_a_granted_pre_vote_is_caught_by_the_agreement_check(tmp_path: Path) -> None:
    """KIP-996: granting a pre-vote changes nothing at the voter. A spec whose voters store the pre-vote they grant as
    their vote differs from the reference at the first pre-vote a voter answers."""
    model = load_model("raft")
    source = model.module_path.read_text()
    rule = "stores == grant /\\ ~m.preVote /\\ v = NoNode"
    assert source.count(rule) == 1, "the spec no longer contains the line this variant rewrites"
    (tmp_path / "KRaftQuorum.tla").write_text(source.replace(rule, "stores == grant /\\ v = NoNode"))
    (tmp_path / "KRaftQuorum.cfg").write_text(model.config_path.read_text())
    dump, _ = state_graph(tmp_path / "KRaftQuorum.tla", tmp_path / "KRaftQuorum.cfg")
    report = check_agreement(model, spec=(graph_from_tlc(dump), 0.0), stop_early=True)
    assert not report.identical and report.difference is not None
    assert report.difference.kind == "edge only in reference"
    assert report.difference.edge is not None and report.difference.edge[1] == "HandleVoteRequest"
