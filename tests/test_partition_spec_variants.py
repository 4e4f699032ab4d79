"""The PartitionLeadership spec's invariants and properties have teeth: a wrong variant of the spec violates each one.

Each case rewrites one line of ``spec/PartitionLeadership.tla`` into a temporary copy, checks only the
named invariant or property (so TLC's breadth-first search reports that one, not an earlier symptom)
under the given bounds, and expects TLC to report it violated.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftspec.spec.agree import SPEC_DIR
from kraftspec.spec.tlc import run_tlc

SMALL = dict(MaxEpoch=2, MaxAppends=1, MaxRestarts=0)
VARIANTS = [
    ("leader elected outside the ISR",
     "ELSE LET valid == {i \\in 1..Len(Replicas) : Replicas[i] \\in targetIsr /\\ Replicas[i] \\in acceptable}",
     "ELSE LET valid == {i \\in 1..Len(Replicas) : Replicas[i] \\in acceptable}",
     "LeaderInIsrOrNone", SMALL),
    ("ISR emptied without ELR",
     "ELSE IF targetIsr = {} THEN isr ELSE targetIsr", "ELSE targetIsr",
     "IsrNeverEmptyWithoutElr", SMALL),
    ("leader epoch reset on an ISR-only change",
     "/\\ leaderEpoch' = IF newLeader = leader THEN leaderEpoch ELSE leaderEpoch + 1",
     "/\\ leaderEpoch' = IF newLeader = leader THEN 0 ELSE leaderEpoch + 1",
     "EpochsOnlyGrow", SMALL),
    ("high watermark may move back",
     "IN IF h > s.hw THEN h ELSE s.hw", "IN h",
     "HwOnlyGrows", dict(SMALL, MaxRestarts=1)),
    ("high watermark ignores the followers",
     "h == Min({leo} \\cup {s.leo[r] : r \\in candidates})", "h == leo",
     "OffsetsBelowHwInIsr", SMALL),
    ("a restart loses committed records",
     "Kept(b) == {n \\in 0..Len(log[b]) : \\A o \\in (n + 1)..Len(log[b]) : <<o, log[b][o]>> \\notin committed}",
     "Kept(b) == 0..Len(log[b])",
     "NoCommittedLoss", dict(SMALL, MaxRestarts=1)),
    ("unclean election enabled (the invariant's guard dropped)",
     "NoCommittedLoss == ~Unclean => \\A r \\in isr :", "NoCommittedLoss == \\A r \\in isr :",
     "NoCommittedLoss", dict(SMALL, Unclean="TRUE")),
    ("a leader shrinks its ISR without the controller's conditional update",
     "/\\ ls' = [ls EXCEPT ![b].pending = [isr |-> s.isr \\ out, max |-> s.isr]]",
     "/\\ ls' = [ls EXCEPT ![b] = WithHw(b, [s EXCEPT !.isr = s.isr \\ out], Len(log[b]))]",
     "NoConflictingCommits", dict(SMALL, MaxAppends=2)),
    ("a restarted replica rejoins the ISR on its old fetch state",
     "eligible == \\A p \\in m.isr : p[1] \\notin fenced /\\ (p[2] = -1 \\/ p[2] = brokerEpoch[p[1]])",
     "eligible == \\A p \\in m.isr : p[1] \\notin fenced",
     "OffsetsBelowHwInIsr", dict(MaxEpoch=2, MaxAppends=2, MaxRestarts=1)),
]
PROPERTIES = {"EpochsOnlyGrow", "LeaderEpochBumpImpliesPartitionEpochBump", "HwOnlyGrows"}


def _config(checked: str, constants: dict[str, object]) -> str:
    constants = {"Unclean": "FALSE", **constants}
    lines = ["CONSTANTS"] + [f"    {name} = {value}" for name, value in constants.items()]
    lines += ["INIT Init", "NEXT Next", "PROPERTIES" if checked in PROPERTIES else "INVARIANTS", f"    {checked}"]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("name,old,new,violated,constants", VARIANTS, ids=[v[0] for v in VARIANTS])
def test_wrong_spec_variant_is_caught(tmp_path: Path, name: str, old: str, new: str, violated: str,
                                      constants: dict[str, object]) -> None:
    source = (SPEC_DIR / "PartitionLeadership.tla").read_text()
    assert source.count(old) == 1, f"the spec no longer contains the line this variant rewrites: {old!r}"
    (tmp_path / "PartitionLeadership.tla").write_text(source.replace(old, new))
    (tmp_path / "PartitionLeadership.cfg").write_text(_config(violated, constants))
    result = run_tlc(tmp_path / "PartitionLeadership.tla", tmp_path / "PartitionLeadership.cfg", timeout_s=900)
    assert result.verdict in ("invariant_violated", "property_violated"), result.summary()
    assert result.violated == violated, result.summary()
