"""The BrokerLifecycle spec's invariants and properties have teeth: a wrong variant of the spec violates each one.

Each case rewrites one line of ``spec/BrokerLifecycle.tla`` into a temporary copy and expects TLC to
report the named invariant or property as violated.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftspec.spec.agree import SPEC_DIR
from kraftspec.spec.tlc import run_tlc

VARIANTS = [
    ("register ignores live sessions",
     "    /\\ ~(Registered(b) /\\ reg[b].inc # i /\\ ValidSession(b, reg[b].epoch))\n", "",
     "NoTwoLiveIncarnations"),
    ("unfence before caught up",
     "nxt == NextState(b, cur, wantFence, wantShutDown, off >= reg[b].offset)",
     "nxt == NextState(b, cur, wantFence, wantShutDown, TRUE)", "UnfencedOnlyWhenCaughtUp"),
    ("fencing keeps leadership",
     "OnRemoval(b) == IF b \\in Range(part.isr) THEN Changed(part, b, -1) ELSE part",
     "OnRemoval(b) == part", "OnlyActiveBrokersLead"),
    ("SHUTDOWN_NOW leaves partitions alone",
     "                      ELSE IF fenced THEN OnRemoval(b)",
     '                      ELSE IF nxt = "SHUTDOWN_NOW" THEN part ELSE IF fenced THEN OnRemoval(b)',
     "OnlyActiveBrokersLead"),
    ("new incarnation keeps the old epoch",
     "reg' = [reg EXCEPT ![b] = [epoch |-> nextOffset, inc |-> i,",
     "reg' = [reg EXCEPT ![b] = [epoch |-> IF Registered(b) THEN reg[b].epoch ELSE nextOffset, inc |-> i,",
     "EpochsOnlyGrow"),
]


@pytest.mark.parametrize("name,old,new,violated", VARIANTS, ids=[v[0] for v in VARIANTS])
def test_wrong_spec_variant_is_caught(tmp_path: Path, name: str, old: str, new: str, violated: str) -> None:
    source = (SPEC_DIR / "BrokerLifecycle.tla").read_text()
    assert source.count(old) == 1, f"the spec no longer contains the line this variant rewrites: {old!r}"
    (tmp_path / "BrokerLifecycle.tla").write_text(source.replace(old, new))
    (tmp_path / "BrokerLifecycle.cfg").write_text((SPEC_DIR / "BrokerLifecycle.cfg").read_text())
    result = run_tlc(tmp_path / "BrokerLifecycle.tla", tmp_path / "BrokerLifecycle.cfg", timeout_s=600)
    assert result.verdict in ("invariant_violated", "property_violated"), result.summary()
    assert result.violated == violated, result.summary()
