"""spec/KRaftRequests.tla: TLC finds no violation under its bounds, each invariant and property has teeth (a wrong
variant of the spec violates it), and the Raft reference explored under the same bounds has exactly TLC's reachable
states and labelled edges (``kraftspec agree requests``), which a wrong reference rule breaks."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftspec.mutants import all_mutants
from kraftspec.spec.agree import SPEC_DIR, check_agreement, load_model
from kraftspec.spec.tlc import run_tlc
from mutant_layers import agreement_difference
from support_spec import check_wrong_variant

PROPERTIES = {"FollowerFallsBackOnlyWhenLeaderUnavailable"}
VARIANTS = [
    ("a connection backing off counts as ready",
     [("IsReady(c, d, t) == Live(c.inf, t)[d] = None /\\ Running(c.fl, t)[d] = None\n",
       "IsReady(c, d, t) == Live(c.inf, t)[d] = None\n")],
     "NothingSentWhileBackingOff"),
    ("a bootstrap server is fetched while a request is in flight",
     [("    IF HasAnyInflightRequest(c, t) THEN c\n    ELSE LET d ==", "    IF FALSE THEN c\n    ELSE LET d ==")],
     "OneFetchAtATime"),
    ("a follower whose leader backs off waits for it",
     [("ELSE IF IsBackingOff(c, l, t) THEN MaybeSendFetchToAnyBootstrap(c, t, s)\n",
       "ELSE IF IsBackingOff(c, l, t) THEN c\n")],
     "FetchingNodeNeverIdle"),
    ("a voter that rejected the round is asked again",
     [("IF d \\in Others \\ rej /\\ IsReady(c, d, t)", "IF d \\in Others /\\ IsReady(c, d, t)")],
     "VoteRoundNeverIdle"),
    ("a follower fetches a bootstrap server while its leader is ready",
     [("    ELSE IF HasAnyInflightRequest(c, t) THEN c\n    ELSE Send(c, l, t)\n",
       "    ELSE MaybeSendFetchToAnyBootstrap(c, t, s)\n")],
     "FollowerFallsBackOnlyWhenLeaderUnavailable"),
]


def test_tlc_checks_the_invariants() -> None:
    result = run_tlc(SPEC_DIR / "KRaftRequests.tla", workers=1)
    assert result.verdict == "ok", result.summary()


@pytest.mark.parametrize("name,edits,violated", VARIANTS, ids=[v[0] for v in VARIANTS])
def test_wrong_spec_variant_is_caught(tmp_path: Path, name: str, edits: list[tuple[str, str]], violated: str) -> None:
    result = check_wrong_variant(tmp_path, "KRaftRequests", edits, violated, PROPERTIES)
    assert result.verdict != "ok" and result.violated == violated, (name, result.summary())


def test_reference_agrees_with_the_spec() -> None:
    report = check_agreement(load_model("requests"), workers=1)
    assert report.identical, report.summary()
    assert report.spec_states > 1_000 and report.spec_edges > report.spec_states


def test_the_agreement_reaches_every_action_and_role() -> None:
    """Each action of the spec's ``Next`` labels some edge of the reference's graph and each role is reached (none is
    vacuous)."""
    from kraftspec.spec.agree import explore_reference
    from kraftspec.spec.tlc_config import read_constants

    model = load_model("requests")
    graph = explore_reference(model, read_constants(model.config_path))
    assert {edge[1] for edge in graph.edges} == {
        "Poll", "HandleFetchResponseFailed", "HandleFetchResponse", "HandleVoteResponseFailed", "HandleVoteResponse"}
    assert {dict(node)["role"] for node in graph.nodes} == {"Follower", "Unattached", "Prospective", "Candidate"}


REQUESTS_MUTANTS = [m for m in all_mutants().values() if m.agree_component == "requests" and "agree" in m.caught_by]


def test_a_mutant_names_this_agreement() -> None:
    assert [m.name for m in REQUESTS_MUTANTS] == ["raft_retry_backoff_ignored"]


ALSO_FOUND = [all_mutants()["raft_bootstrap_first_server"]]
"""A mutant another agreement names (``raft``) that this one finds too: every bootstrap draw is explored."""


@pytest.mark.parametrize("mutant", REQUESTS_MUTANTS + ALSO_FOUND, ids=lambda m: m.name)
def test_a_wrong_reference_rule_is_found(mutant) -> None:  # type: ignore[no-untyped-def]
    with mutant.applied():
        found = agreement_difference("requests")
    assert found is not None, f"the agreement misses {mutant.name}: {mutant.description}"
