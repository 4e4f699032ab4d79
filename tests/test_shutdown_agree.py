"""spec/KRaftShutdown.tla: TLC finds no violation under its bounds, each invariant and property has teeth (a wrong
variant of the spec violates it), and the Raft reference explored under the same bounds has exactly TLC's reachable
states and labelled edges (``kraftspec agree shutdown``), which a wrong reference rule breaks."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftspec.mutants import all_mutants
from kraftspec.spec.agree import SPEC_DIR, check_agreement, load_model
from kraftspec.spec.tlc import run_tlc
from mutant_layers import agreement_difference
from support_spec import check_wrong_variant

PROPERTIES = {"FinishedTakesNoInput", "NoAppendWhileShuttingDown"}
VARIANTS = [
    ("a leader counts itself as the remote leader it may leave to",
     [("leader \\notin {None, Local}\n", "leader # None\n")],
     "FinishedNeverLeads"),
    ("a leader shutting down does not resign",
     [("               THEN role' = \"Resigned\" /\\ unacked' = Others\n",
       "               THEN UNCHANGED <<role, unacked>>\n")],
     "ShuttingDownNeverLeads"),
    ("an Unattached voter completes before its timer",
     [("    /\\ IF CanComplete\n", "    /\\ IF CanComplete \\/ role = \"Unattached\"\n")],
     "CompletesOnlyWhenItMayLeave"),
    ("the shutdown's timer never fires",
     [("(t >= deadline \\/ CanComplete)", "CanComplete")],
     "RunsUntilItsTimer"),
    ("a won election resigns without a shutdown",
     [("    /\\ IF shutdown = \"running\"\n       THEN role' = \"Resigned\"",
       "    /\\ IF shutdown # \"completed\"\n       THEN role' = \"Resigned\"")],
     "ResignedOnlyWhileShuttingDown"),
    ("an absent successor waits longer than the maximum back-off",
     [("ELSE IF position >= size THEN BackoffMax\n", "ELSE IF position >= size THEN BackoffMax + 1\n")],
     "BackoffAhead"),
    ("a finished node is still polled",
     [("Poll ==\n    /\\ Running\n", "Poll ==\n")],
     "FinishedTakesNoInput"),
    ("a won election writes its LeaderChange record while shutting down",
     [("unacked' = Others /\\ UNCHANGED logEnd", "unacked' = Others /\\ logEnd' = logEnd + 1")],
     "NoAppendWhileShuttingDown"),
]


def test_tlc_checks_the_invariants() -> None:
    result = run_tlc(SPEC_DIR / "KRaftShutdown.tla", workers=1)
    assert result.verdict == "ok", result.summary()


@pytest.mark.parametrize("name,edits,violated", VARIANTS, ids=[v[0] for v in VARIANTS])
def test_wrong_spec_variant_is_caught(tmp_path: Path, name: str, edits: list[tuple[str, str]], violated: str) -> None:
    result = check_wrong_variant(tmp_path, "KRaftShutdown", edits, violated, PROPERTIES)
    assert result.verdict != "ok" and result.violated == violated, (name, result.summary())


def test_reference_agrees_with_the_spec() -> None:
    report = check_agreement(load_model("shutdown"), workers=1)
    assert report.identical, report.summary()
    assert report.spec_states > 1_000 and report.spec_edges > report.spec_states


def test_the_agreement_reaches_every_action() -> None:
    """Each action of the spec's ``Next`` labels some edge of the reference's graph (none is vacuous)."""
    from kraftspec.spec.agree import explore_reference
    from kraftspec.spec.tlc_config import read_constants

    model = load_model("shutdown")
    graph = explore_reference(model, read_constants(model.config_path))
    assert {edge[1] for edge in graph.edges} == {
        "HandleShutdown", "Poll", "HandleEndQuorumEpochRequest", "HandleBeginQuorumEpochRequest",
        "HandleVoteResponsePreVote", "HandleVoteResponse", "HandleQuorumEpochResponse", "HandleAppend"}


SHUTDOWN_MUTANTS = [m for m in all_mutants().values() if m.agree_component == "shutdown" and "agree" in m.caught_by]


def test_a_mutant_names_this_agreement() -> None:
    assert [m.name for m in SHUTDOWN_MUTANTS] == ["raft_shutdown_ignores_remote_leader"]


@pytest.mark.parametrize("mutant", SHUTDOWN_MUTANTS, ids=lambda m: m.name)
def test_a_wrong_reference_rule_is_found(mutant) -> None:  # type: ignore[no-untyped-def]
    with mutant.applied():
        found = agreement_difference("shutdown")
    assert found is not None, f"the agreement misses {mutant.name}: {mutant.description}"
