"""spec/KRaftVoters.tla: TLC finds no violation under its bounds, each invariant and property has teeth (a wrong
variant of the spec violates it), and the reference explored under the same bounds has exactly TLC's reachable states
and labelled edges (``kraftspec agree voters``), which a wrong reference rule breaks."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftspec.models.raft_voters_mutants import MUTANTS
from kraftspec.spec.agree import SPEC_DIR, check_agreement, load_model
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
     [("            /\\ volatileVoters' = volatileVoters \\cup {r}\n            /\\ UNCHANGED log\n",
       "            /\\ volatileVoters' = volatileVoters \\cup {r}\n"
       "            /\\ log' = Append(log, VotersRecord(InitVoters, InitVoters))\n")],
     "NoVotersRecordAtKRaftVersion0"),
    ("a committed change stays pending",
     [("       THEN /\\ pending' = NoPending\n            /\\ IF",
       "       THEN /\\ pending' = pending\n            /\\ IF")],
     "PendingChangeIsTheLatestRecord"),
    ("a follower's log is truncated below its high watermark",
     [("    /\\ hw <= end\n", "")],
     "CommittedRecordsStay"),
]
PROPERTIES = {"CommittedRecordsStay", "CommittedKRaftVersionNeverDecreases"}


def test_tlc_checks_the_invariants() -> None:
    result = run_tlc(SPEC_DIR / "KRaftVoters.tla", workers=1)
    assert result.verdict == "ok", result.summary()


@pytest.mark.parametrize("name,edits,violated", VARIANTS, ids=[v[0] for v in VARIANTS])
def test_wrong_spec_variant_is_caught(tmp_path: Path, name: str, edits: list[tuple[str, str]], violated: str) -> None:
    source = (SPEC_DIR / "KRaftVoters.tla").read_text()
    for old, new in edits:
        assert source.count(old) == 1, f"the spec no longer contains the text this variant rewrites: {old!r}"
        source = source.replace(old, new)
    (tmp_path / "KRaftVoters.tla").write_text(source)
    config = (SPEC_DIR / "KRaftVoters.cfg").read_text()
    section = "PROPERTIES" if violated in PROPERTIES else "INVARIANTS"
    (tmp_path / "KRaftVoters.cfg").write_text(f"{config[:config.index('INVARIANTS')]}{section}\n    {violated}\n")
    result = run_tlc(tmp_path / "KRaftVoters.tla", workers=1)
    assert result.verdict != "ok" and result.violated == violated, (name, result.summary())


def test_reference_agrees_with_the_spec() -> None:
    report = check_agreement(load_model("voters"), workers=1)
    assert report.identical, report.summary()
    assert report.spec_states > 10_000 and report.spec_edges > report.spec_states


@pytest.mark.parametrize("mutant", [m for m in MUTANTS if "agree" in m.caught_by], ids=lambda m: m.name)
def test_a_wrong_reference_rule_is_found(mutant) -> None:  # type: ignore[no-untyped-def]
    with mutant.applied():
        found = agreement_difference("voters")
    assert found is not None, f"the agreement misses {mutant.name}: {mutant.description}"
