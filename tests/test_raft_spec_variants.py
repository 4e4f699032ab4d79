"""The KRaftQuorum spec's invariants and property have teeth: a wrong variant of the spec violates each one.

Each case rewrites lines of ``spec/KRaftQuorum.tla`` into a temporary copy, checks only the named invariant or
property (some with a second election or longer logs than the bundled bounds) and expects TLC to report it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kraftspec.spec.agree import SPEC_DIR
from kraftspec.spec.tlc import run_tlc

TWO_ELECTIONS = {"MaxEpoch": 2, "MaxTimeouts": 2}
SNAPSHOTS = {"MaxSnapshots": 1}
VARIANTS = [
    ("a voter forgets its vote within the epoch",
     [("IF v # NoNode THEN v = src ELSE l = NoNode /\\ upToDate", "l = NoNode /\\ upToDate")],
     {"MaxTimeouts": 2}, "OneLeaderPerEpoch"),
    ("the leader answers a diverging fetch with records",
     [("          ELSE IF diverging\n", "          ELSE IF FALSE\n")],
     {**TWO_ELECTIONS, "MaxLogLen": 2}, "LogMatching"),
    ("a new leader takes its own end offset as the HW",
     [("/\\ hw' = [hw EXCEPT ![n] = NextHw(-1, offsets, LEO(n))]", "/\\ hw' = [hw EXCEPT ![n] = start[n] + Len(newLog)]")],
     {}, "HwOnMajority"),
    ("votes and pre-votes ignore the log",
     [("ELSE l = NoNode /\\ upToDate", "ELSE l = NoNode"),
      ("/\\ ~(r = \"Follower\" /\\ f) /\\ upToDate", "/\\ ~(r = \"Follower\" /\\ f)")],
     TWO_ELECTIONS, "LeaderCompleteness"),
    ("voters do not flush fetched records",
     [("IF n \\in Voters THEN newEnd ELSE Min(flushed[n], newEnd)", "Min(flushed[n], newEnd)")],
     {}, "CommittedNeverLost"),
    ("the leader adopts any majority offset, even a lower one",
     [("IF HwCandidate(offsets) > epochStart /\\ HwCandidate(offsets) > current THEN", "IF TRUE THEN")],
     {"MaxMsgs": 2}, "HwNeverDecreases"),
    # KIP-630 snapshots (one in a behaviour)
    ("the state machine snapshots its whole log, past the high watermark",
     [("    /\\ LogHw(n) > start[n]\n    /\\ <<LogHw(n), EpochAt(n, LogHw(n) - 1)>> \\notin snaps[n]\n"
       "    /\\ snaps' = [snaps EXCEPT ![n] = @ \\cup {<<LogHw(n), EpochAt(n, LogHw(n) - 1)>>}]",
       "    /\\ LEO(n) > start[n]\n    /\\ <<LEO(n), EpochAt(n, LEO(n) - 1)>> \\notin snaps[n]\n"
       "    /\\ snaps' = [snaps EXCEPT ![n] = @ \\cup {<<LEO(n), EpochAt(n, LEO(n) - 1)>>}]")],
     SNAPSHOTS, "SnapshotsCommitted"),
    ("a follower loading a snapshot takes its last record's offset as the HW",
     [("            /\\ hw' = [hw EXCEPT ![n] = m.snapshot[1]]", "            /\\ hw' = [hw EXCEPT ![n] = m.snapshot[1] - 1]")],
     SNAPSHOTS, "LogStartBelowHw"),
    ("a follower forgets the snapshot it loaded",
     [("            /\\ snaps' = [snaps EXCEPT ![n] = {m.snapshot}]", "            /\\ snaps' = [snaps EXCEPT ![n] = {}]")],
     SNAPSHOTS, "LogStartsAtSnapshot"),
]


def _config(checked: str, overrides: dict[str, int]) -> str:
    text = (SPEC_DIR / "KRaftQuorum.cfg").read_text()
    for name, value in overrides.items():
        text, count = re.subn(rf"^(\s*{name}) = \d+$", rf"\1 = {value}", text, flags=re.M)
        assert count == 1, name
    head = text[:text.index("INVARIANTS")]
    section = "PROPERTIES" if checked == "HwNeverDecreases" else "INVARIANTS"
    return f"{head}{section}\n    {checked}\n"


@pytest.mark.parametrize("name,edits,overrides,violated", VARIANTS, ids=[v[0] for v in VARIANTS])
def test_wrong_spec_variant_is_caught(tmp_path: Path, name: str, edits: list[tuple[str, str]],
                                      overrides: dict[str, int], violated: str) -> None:
    source = (SPEC_DIR / "KRaftQuorum.tla").read_text()
    for old, new in edits:
        assert source.count(old) == 1, f"the spec no longer contains the line this variant rewrites: {old!r}"
        source = source.replace(old, new)
    (tmp_path / "KRaftQuorum.tla").write_text(source)
    (tmp_path / "KRaftQuorum.cfg").write_text(_config(violated, overrides))
    # 1800 s: since the pre-vote, the HW variant's violation lies past 3.5 million distinct states (422 s on 2 cores)
    result = run_tlc(tmp_path / "KRaftQuorum.tla", tmp_path / "KRaftQuorum.cfg", timeout_s=1800)
    assert result.verdict in ("invariant_violated", "property_violated"), result.summary()
    assert result.violated == violated, result.summary()
