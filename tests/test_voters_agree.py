"""spec/KRaftVoters.tla: TLC finds no violation under its bounds, each invariant and property has teeth (a wrong
variant of the spec violates it), and the reference explored under the same bounds has exactly TLC's reachable states
and labelled edges (``kraftspec agree voters``), which a wrong reference rule breaks."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from kraftspec.models.raft_voters_mutants import MUTANTS
from kraftspec.spec.agree import SPEC_DIR, check_agreement, load_model, spec_graph
from kraftspec.spec.tlc import run_tlc
from mutant_layers import agreement_difference

VARIANTS = [
    ("a change starts from an uncommitted voter set",
     [("    /\\ LastKRaftVersion = 1\n    /\\ LastVoterSetOffset < LeaderHwm\n", "    /\\ LastKRaftVersion = 1\n")],
     "AtMostOneUncommittedVotersRecord"),
    ("an add or remove at kraft.version 0",
     [("    /\\ LastKRaftVersion = 1\n    /\\ LastVoterSetOffset < LeaderHwm\n",
       "    /\\ LastVoterSetOffset < LeaderHwm\n")],
     "VoterChangesOnlyAtKRaftVersion1"),
    ("the upgrade does not wait for every voter's directory id",
     [("    /\\ volatileVoters = InitVoters\n", "")],
     "VotersRecordsNameEveryDirectory"),
    ("the high watermark moves back",
     [("    /\\ m > hw\n", "")],
     "CommittedKRaftVersionNeverDecreases"),
    ("the last voter is removed",
     [("    /\\ Cardinality(LastVoterSet) > 1\n", "")],
     "VoterSetNeverEmpty"),
    ("a removal also drops the leader",
     [("VotersRecord(LastVoterSet \\ {r}, ", "VotersRecord(LastVoterSet \\ {r, Local}, ")],
     "ConsecutiveVoterSetsOverlap"),
    ("an update at kraft.version 0 writes a VotersRecord",
     [("            /\\ volatileVoters' = volatileVoters \\cup {r}\n            /\\ UNCHANGED <<log, readEnd>>\n",
       "            /\\ volatileVoters' = volatileVoters \\cup {r}\n"
       "            /\\ Appended(<<VotersRecord(InitVoters, InitVoters)>>)\n")],
     "NoVotersRecordAtKRaftVersion0"),
    ("a committed change stays pending",
     [("       THEN /\\ pending' = NoPending\n            /\\ IF",
       "       THEN /\\ pending' = pending\n            /\\ IF")],
     "PendingChangeIsTheLatestRecord"),
    ("a follower's log is truncated below its high watermark",
     [("    /\\ hw <= end\n", "")],
     "CommittedRecordsStay"),
    ("a snapshot of records not committed yet",
     [("    /\\ s > LatestSnapshotEnd\n    /\\ s <= hw\n", "    /\\ s > LatestSnapshotEnd\n")],
     "SnapshotsAreCommitted"),
    ("a snapshot that does not carry the VotersRecord",
     [("     voters |-> IF KRaftVersionAt(s - 1) = 1 THEN VoterSetAt(s - 1) ELSE {},\n", "     voters |-> {},\n")],
     "SnapshotCarriesTheVotersInForce"),
    ("deleting the prefix also drops the snapshot at the new log start",
     [("    /\\ snapshots' = {sn \\in snapshots : sn.end >= s}\n",
       "    /\\ snapshots' = {sn \\in snapshots : sn.end > s}\n")],
     "LogStartsAtASnapshot"),
    ("the voter set before the log start is the bootstrap's, not the snapshot's",
     [("FromSnapshot == logStart > 0 /\\ StartSnapshot.kraftVersion = 1\n", "FromSnapshot == FALSE\n")],
     "DeletingThePrefixKeepsTheVotersInForce"),
]
PROPERTIES = {"CommittedRecordsStay", "CommittedKRaftVersionNeverDecreases", "DeletingThePrefixKeepsTheVotersInForce"}
SNAPSHOT_CHECKS = {"SnapshotsAreCommitted", "LogStartsAtASnapshot", "SnapshotCarriesTheVotersInForce",
                   "DeletingThePrefixKeepsTheVotersInForce"}
"""Checked under ``KRaftVoters.snapshots.cfg`` (``KRaftVoters.cfg`` takes no snapshot)."""


@pytest.mark.parametrize("config", ["KRaftVoters.cfg", "KRaftVoters.snapshots.cfg"])
def test_tlc_checks_the_invariants(config: str) -> None:
    result = run_tlc(SPEC_DIR / "KRaftVoters.tla", SPEC_DIR / config, workers=1)
    assert result.verdict == "ok", result.summary()


@pytest.mark.parametrize("name,edits,violated", VARIANTS, ids=[v[0] for v in VARIANTS])
def test_wrong_spec_variant_is_caught(tmp_path: Path, name: str, edits: list[tuple[str, str]], violated: str) -> None:
    source = (SPEC_DIR / "KRaftVoters.tla").read_text()
    for old, new in edits:
        assert source.count(old) == 1, f"the spec no longer contains the text this variant rewrites: {old!r}"
        source = source.replace(old, new)
    (tmp_path / "KRaftVoters.tla").write_text(source)
    named = "KRaftVoters.snapshots.cfg" if violated in SNAPSHOT_CHECKS else "KRaftVoters.cfg"
    config = (SPEC_DIR / named).read_text()
    section = "PROPERTIES" if violated in PROPERTIES else "INVARIANTS"
    (tmp_path / "KRaftVoters.cfg").write_text(f"{config[:config.index('INVARIANTS')]}{section}\n    {violated}\n")
    result = run_tlc(tmp_path / "KRaftVoters.tla", workers=1)
    assert result.verdict != "ok" and result.violated == violated, (name, result.summary())


def test_reference_agrees_with_the_spec() -> None:
    report = check_agreement(load_model("voters"), workers=1)
    assert report.identical, report.summary()
    assert report.spec_states > 10_000 and report.spec_edges > report.spec_states


def test_reference_agrees_with_the_spec_with_snapshots() -> None:
    """``KRaftVoters.snapshots.cfg``: snapshots created, their prefixes deleted and fetched ones loaded, every one of
    these actions taken; the reference's graph is TLC's."""
    model = replace(load_model("voters"), config="snapshots")
    assert model in load_model("voters").under_each_config()
    spec, seconds = spec_graph(model, workers=1)
    assert {"HandleCreateSnapshot", "DeleteBeforeSnapshot", "HandleFetchSnapshotResponse"} <= {e[1] for e in spec.edges}
    report = check_agreement(model, spec=(spec, seconds))
    assert report.identical, report.summary()
    assert report.spec_states > 10_000 and report.spec_edges > report.spec_states


@pytest.mark.parametrize("mutant", [m for m in MUTANTS if "agree" in m.caught_by and not m.agree_component],
                         ids=lambda m: m.name)  # the auto-join mutants: tests/test_autojoin_agree.py
def test_a_wrong_reference_rule_is_found(mutant) -> None:  # type: ignore[no-untyped-def]
    with mutant.applied():
        found = agreement_difference("voters") or agreement_difference("voters", "snapshots")
    assert found is not None, f"the agreement misses {mutant.name}: {mutant.description}"
