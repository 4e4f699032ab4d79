"""spec/KRaftAutoJoin.tla: TLC finds no violation under its bounds, each invariant and property has teeth (a wrong
variant of the spec violates it), and the Raft reference explored under the same bounds has exactly TLC's reachable
states and labelled edges (``kraftspec agree autojoin``), which each wrong auto-join rule breaks."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftspec.mutants import all_mutants
from kraftspec.spec.agree import SPEC_DIR, check_agreement, load_model
from kraftspec.spec.tlc import run_tlc
from mutant_layers import agreement_difference
from support_spec import check_wrong_variant

PROPERTIES = {"OneRequestInFlight", "NothingBeforeThePeriod"}
VARIANTS = [
    ("a broker (no controller role) asks to join",
     [("== kraftVersion = 1 /\\ canBecomeVoter /\\ autoJoin /\\ t >= upd",
       "== kraftVersion = 1 /\\ autoJoin /\\ t >= upd")],
     "JoinsOnlyWhenAllowed"),
    ("an observer whose id a voter holds under an old directory asks to be added",
     [("Send(IF e = \"old\" THEN \"RemoveRaftVoter\" ELSE \"AddRaftVoter\", t, inf, upd)",
       "Send(\"AddRaftVoter\", t, inf, upd)")],
     "RemovesOnlyItsOldDirectory"),
    ("a kraft.version 0 voter keeps telling a leader that answered it",
     [("THEN e = \"stale\" ELSE ~updated", "THEN e = \"stale\" ELSE TRUE")],
     "UpdatesOnlyWhenNeeded"),
    ("a fetch answer restarts the fetch timer past the period",
     [("    /\\ fetchDeadline' = now + Period\n", "    /\\ fetchDeadline' = now + Period + 1\n")],
     "TimersWithinPeriod"),
    ("a due voter change leaves on a connection still awaiting an answer",
     [("Send(request, t, inf, upd) == IF inf = \"none\"", "Send(request, t, inf, upd) == IF TRUE")],
     "OneRequestInFlight"),
    ("an observer asks to join before the period has passed",
     [("canBecomeVoter /\\ autoJoin /\\ t >= upd", "canBecomeVoter /\\ autoJoin")],
     "NothingBeforeThePeriod"),
]


def test_tlc_checks_the_invariants() -> None:
    result = run_tlc(SPEC_DIR / "KRaftAutoJoin.tla", workers=1)
    assert result.verdict == "ok", result.summary()


@pytest.mark.parametrize("name,edits,violated", VARIANTS, ids=[v[0] for v in VARIANTS])
def test_wrong_spec_variant_is_caught(tmp_path: Path, name: str, edits: list[tuple[str, str]], violated: str) -> None:
    result = check_wrong_variant(tmp_path, "KRaftAutoJoin", edits, violated, PROPERTIES)
    assert result.verdict != "ok" and result.violated == violated, (name, result.summary())


def test_reference_agrees_with_the_spec() -> None:
    report = check_agreement(load_model("autojoin"), workers=1)
    assert report.identical, report.summary()
    assert report.spec_states > 300 and report.spec_edges > report.spec_states


def test_the_agreement_reaches_every_action_and_request() -> None:
    """Each action of the spec's ``Next`` labels some edge of the reference's graph, and every request is sent."""
    from kraftspec.spec.agree import explore_reference
    from kraftspec.spec.tlc_config import read_constants

    model = load_model("autojoin")
    graph = explore_reference(model, read_constants(model.config_path))
    assert {edge[1] for edge in graph.edges} == {
        "Poll", "HandleFetchResponse", "HandleVoterChangeResponse", "HandleUpdateVoterResponse"}
    sent = {(dict(key)["kraftVersion"], dict(key)["inflight"]) for key in graph.nodes}
    assert sent >= {(0, "Fetch"), (0, "UpdateRaftVoter"), (1, "Fetch"), (1, "AddRaftVoter"), (1, "RemoveRaftVoter"),
                    (1, "UpdateRaftVoter")}


AUTOJOIN_MUTANTS = [m for m in all_mutants().values() if m.agree_component == "autojoin" and "agree" in m.caught_by]


def test_the_auto_join_mutants_name_this_agreement() -> None:
    assert sorted(m.name for m in AUTOJOIN_MUTANTS) == [
        "voters_auto_join_at_kraft_version0", "voters_auto_join_keeps_old_directory",
        "voters_auto_join_without_controller_role"]


@pytest.mark.parametrize("mutant", AUTOJOIN_MUTANTS, ids=lambda m: m.name)
def test_a_wrong_reference_rule_is_found(mutant) -> None:  # type: ignore[no-untyped-def]
    with mutant.applied():
        found = agreement_difference("autojoin")
    assert found is not None, f"the agreement misses {mutant.name}: {mutant.description}"
