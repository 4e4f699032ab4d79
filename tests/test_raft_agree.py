"""spec/KRaftQuorum.tla: TLC finds no violation under its bounds, and the reference explored under the same
bounds has exactly TLC's reachable states and labelled edges (``kraftspec agree raft``)."""

from __future__ import annotations

from kraftspec.spec.agree import SPEC_DIR, check_agreement, load_model
from kraftspec.spec.tlc import run_tlc


def test_tlc_checks_the_invariants() -> None:
    result = run_tlc(SPEC_DIR / "KRaftQuorum.tla")
    assert result.verdict == "ok", result.summary()


def test_reference_agrees_with_the_spec() -> None:
    report = check_agreement(load_model("raft"))
    assert report.identical, report.summary()
    assert report.spec_states > 1000 and report.spec_edges > report.spec_states
