"""spec/KRaftListener.tla (the listener's view, §3.12): TLC finds no violation under its bounds, each invariant and
property has teeth (a wrong variant of the spec violates it), the bounds reach the cases the listener contract is
about, and the reference explored under the same bounds has exactly TLC's reachable states and labelled edges
(``kraftspec agree listener``), which a wrong reference rule breaks."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftspec.mutants import all_mutants
from kraftspec.reference.raft_state import Leader, Resigned
from kraftspec.spec.agree import SPEC_DIR, check_agreement, explore_reference, load_model
from kraftspec.spec.tlc import run_tlc
from kraftspec.spec.tlc_config import read_constants
from mutant_layers import agreement_difference
from support_spec import check_wrong_variant

PROPERTIES = ("ListenerNeverToldAnOlderEpoch", "LocalLeaderToldOnlyWhileLeading")
VARIANTS = [
    ("handleCommit hands over the records up to the log end",
     [("IN IF hw > w.next THEN [w EXCEPT !.next = hw] ELSE w",
       "IN IF LogEnd > w.next THEN [w EXCEPT !.next = LogEnd] ELSE w")],
     "ListenerNeverPassesHighWatermark"),
    ("the local leadership is told before the listener has the epoch start",
     [("    IF ShouldFire(v) /\\ (role = \"Leader\" => v.next > epochStart)\n", "    IF ShouldFire(v)\n")],
     "LocalLeaderVisibleOnlyCaughtUp"),
    ("a Resigned node's poll tells the listener the leader",
     [("       /\\ listener' = IF role = \"Resigned\" THEN v ELSE Fired(v)\n", "       /\\ listener' = Fired(v)\n")],
     "LocalLeaderToldOnlyWhileLeading"),
    ("the node follows a leader of an older epoch (shouldFireLeaderChange then tells it: a leader where none was)",
     [("    /\\ e >= epoch\n", "")],
     "ListenerNeverToldAnOlderEpoch"),
    ("the state machine snapshots up to the log end, past the high watermark",
     [("    /\\ e <= hw\n    /\\ snapshot' =", "    /\\ e <= LogEnd\n    /\\ snapshot' =")],
     "LoadedSnapshotCommitted"),
]


def test_tlc_checks_the_invariants() -> None:
    result = run_tlc(SPEC_DIR / "KRaftListener.tla", workers=1)
    assert result.verdict == "ok", result.summary()


@pytest.mark.parametrize("name,edits,violated", VARIANTS, ids=[v[0] for v in VARIANTS])
def test_wrong_spec_variant_is_caught(tmp_path: Path, name: str, edits: list[tuple[str, str]], violated: str) -> None:
    result = check_wrong_variant(tmp_path, "KRaftListener", edits, violated, PROPERTIES)
    assert result.verdict != "ok" and result.violated == violated, (name, result.summary())


def test_the_bounds_reach_each_case_of_the_listener_contract() -> None:
    model = load_model("listener")
    states = list(explore_reference(model, read_constants(model.config_path)).witnesses.values())
    registered = [s.node for s in states if s.node.listener is not None]
    withheld = [n for n in registered if isinstance(n.state, Leader) and n.listener.epoch < n.state.epoch
                and n.listener.committed_end <= n.state.epoch_start_offset]
    told = [n for n in registered if isinstance(n.state, Leader) and n.listener.leader_id == n.local_id
            and n.listener.epoch == n.state.epoch]
    loaded_below_log_start = [n for n in registered if n.listener.loaded_snapshot is not None
                              and n.log.start_offset > 0]
    resigned = [n for n in registered if isinstance(n.state, Resigned)]
    assert withheld and told and loaded_below_log_start and resigned


def test_reference_agrees_with_the_spec() -> None:
    report = check_agreement(load_model("listener"), workers=1)
    assert report.identical, report.summary()
    assert report.spec_states > 10_000 and report.spec_edges > report.spec_states


LISTENER_MUTANTS = [m for m in all_mutants().values() if m.agree_component == "listener" and "agree" in m.caught_by]


def test_a_mutant_names_the_listener_agreement() -> None:
    assert any(m.name == "raft_leader_visible_before_catch_up" for m in LISTENER_MUTANTS)


@pytest.mark.parametrize("mutant", LISTENER_MUTANTS, ids=lambda m: m.name)
def test_a_wrong_reference_rule_is_found(mutant) -> None:  # type: ignore[no-untyped-def]
    with mutant.applied():
        found = agreement_difference("listener")
    assert found is not None, f"the agreement misses {mutant.name}: {mutant.description}"
