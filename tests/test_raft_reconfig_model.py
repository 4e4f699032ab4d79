"""``RaftReconfigModel`` (models/raft_reconfig.py) beyond its fixed seed: runs it found under other seeds, shrunk.

Each run is replayed rule by rule, the invariants checked after each rule as Hypothesis does. A run that reaches a
documented Kafka 4.3 problem (docs/kafka-findings.md) must end in exactly that :class:`KafkaFinding`, naming the node
whose voter set its own log does not hold, and the consequence the model saw; any other failure stays the model's
generic one. Seeds of the runs (``seed(n)``, 300 examples of 50 steps, no shrinking): the name of each test.
"""

from __future__ import annotations

import inspect
from typing import Any

import pytest

import kraftspec.models.raft_reconfig as model
from kraftspec.models.raft_reconfig import KafkaFinding, RaftReconfigModel

Steps = tuple[tuple[str, dict[str, Any]], ...]

INVARIANTS = tuple(name for name, f in inspect.getmembers(RaftReconfigModel)
                   if getattr(f, "hypothesis_stateful_invariant", None) is not None)
# Hypothesis marks invariants with this attribute (hypothesis.stateful.INVARIANT_MARKER).


def replay(steps: Steps) -> RaftReconfigModel:
    """Runs ``steps`` on a fresh model, checking every invariant after each, as Hypothesis's stateful runner does."""
    machine = RaftReconfigModel()
    machine.stop_at_findings = False
    for rule, arguments in steps:
        getattr(machine, rule)(**arguments)
        for name in INVARIANTS:
            getattr(machine, name)()
    return machine


@pytest.fixture(autouse=True)
def no_notes(monkeypatch: pytest.MonkeyPatch) -> None:
    """``start`` notes the Hypothesis seed, which only a Hypothesis test can do."""
    monkeypatch.setattr(model, "note", lambda _: None)


def test_invariants_are_found() -> None:
    assert {"at_most_one_leader_per_epoch", "consecutive_voter_sets_share_a_majority"} <= set(INVARIANTS)


SEED_7: Steps = (
    ("start", dict(calm_rounds=0, draws=[373, 234, 522, 935, 231])),
    ("tick_all", dict(bootstrap=0, elapsed=100, jitter=718)),
    ("run_isolated", dict(bootstrap=0, change='add', jitter=87, node=1, rounds=1, size=450, voter=2)),
    ("tick_all", dict(bootstrap=0, elapsed=600, jitter=301)),
    ("run_isolated", dict(bootstrap=0, change=None, jitter=59, node=3, rounds=3, size=450, voter=2)),
    ("tick", dict(bootstrap=0, elapsed=600, jitter=209, node=1)),
    ("tick", dict(bootstrap=2, elapsed=600, jitter=327, node=3)),
    ("tick_all", dict(bootstrap=0, elapsed=1500, jitter=943)),
    ("tick", dict(bootstrap=2, elapsed=100, jitter=361, node=3)),
    ("deliver_all", dict(bootstrap=0, jitter=29)),
    ("run_isolated", dict(bootstrap=2, change=None, jitter=535, node=1, rounds=3, size=450, voter=3)),
    ("tick_all", dict(bootstrap=0, elapsed=600, jitter=193)),
    ("run_isolated", dict(bootstrap=2, change=None, jitter=535, node=1, rounds=3, size=450, voter=3)),
    ("request_remove_voter", dict(bootstrap=2, jitter=228, voter=1)),
)
"""Node 2 (epoch 5, VotersRecord {1,2,3,4} at 6 read, read position 7) is truncated to 4 by leader 1 of epoch 7 and
fetches {1,2,3,4} again at 4: not read. It leads epoch 8 on {1,2,3}, and the admin's removal of 1 writes {2,3}."""


def test_seed_7_stale_leader_removes_two_voters_at_once() -> None:
    expected = (
        r"§1 .*node 2: its log holds voters \[1, 2, 3, 4\] at offset 4, below its "
        r"read position 7, but it runs with voters \[1, 2, 3\].*then AssertionError: "
        r"node 2's log changes the voters from \[1, 2, 3, 4\] to \[2, 3\] at once")
    with pytest.raises(KafkaFinding, match=expected):
        replay(SEED_7)


SEED_21: Steps = (
    ("start", dict(calm_rounds=0, draws=[464, 224, 331, 211, 200])),
    ("run_fairly", dict(bootstrap=0, jitter=640)),
    ("deliver_all", dict(bootstrap=0, jitter=156)),
    ("run_isolated", dict(bootstrap=0, change=None, jitter=219, node=2, rounds=7, size=250, voter=3)),
    ("run_isolated", dict(bootstrap=1, change='add', jitter=286, node=4, rounds=2, size=450, voter=4)),
    ("run_isolated", dict(bootstrap=2, change=None, jitter=209, node=4, rounds=2, size=250, voter=4)),
    ("run_isolated", dict(bootstrap=1, change='remove', jitter=252, node=4, rounds=6, size=250, voter=4)),
    ("run_quietly", dict(bootstrap=2, jitter=999, rounds=2)),
    ("tick_all", dict(bootstrap=2, elapsed=1500, jitter=999)),
    ("request_remove_voter", dict(bootstrap=0, jitter=129, voter=1)),
    ("run_quietly", dict(bootstrap=0, jitter=170, rounds=6)),
    ("run_isolated", dict(bootstrap=1, change='add', jitter=807, node=4, rounds=3, size=300, voter=1)),
)
"""Node 2, truncated to 5 below its read position 11, leads epoch 6 and writes the removal of 4 ({1,2,3}) at 7: its
own VotersRecord lies below its read position, so it keeps {1,2,3,4}; node 1 (on {1,2,3}) and node 2 (on {2,3,4} after
removing 1) both lead epoch 8."""


def test_seed_21_two_leaders_in_one_epoch() -> None:
    expected = (
        r"§1 .*node 2: its log holds voters \[1, 2, 3\] at offset 7, below its read "
        r"position 11.*then RaftFatalError: leader 1 in epoch 8 conflicts with known "
        r"leader 2")
    with pytest.raises(KafkaFinding, match=expected):
        replay(SEED_21)


SEED_4: Steps = (
    ("start", dict(calm_rounds=8, draws=[43, 198, 289, 243, 0])),
    ("tick", dict(bootstrap=1, elapsed=1500, jitter=256, node=1)),
    ("run_isolated", dict(bootstrap=1, change=None, jitter=822, node=1, rounds=4, size=450, voter=3)),
    ("tick_all", dict(bootstrap=0, elapsed=600, jitter=88)),
    ("deliver_all", dict(bootstrap=2, jitter=744)),
    ("run_quietly", dict(bootstrap=2, jitter=830, rounds=6)),
    ("lose", dict(pick=38)),
    ("request_remove_voter", dict(bootstrap=2, jitter=816, voter=2)),
    ("append", dict(bootstrap=1, jitter=4)),
    ("lose", dict(pick=31)),
    ("deliver_all", dict(bootstrap=2, jitter=712)),
    ("run_isolated", dict(bootstrap=0, change=None, jitter=161, node=3, rounds=6, size=300, voter=2)),
)
"""Node 1 runs on {1,2,3} below a VotersRecord {1,2,3,4} it does not read (truncated, read position 7); later a
follower is asked to truncate below its high watermark: an entry counted as committed is lost (Kafka's fatal error)."""


def test_seed_4_committed_entry_truncated() -> None:
    expected = (
        r"§1 .*node 1: its log holds voters \[1, 2, 3, 4\] at offset 3, below its "
        r"read position 7.*then RaftFatalError: leader requested truncation to 5, "
        r"below the high watermark 6")
    with pytest.raises(KafkaFinding, match=expected):
        replay(SEED_4)


SEED_24: Steps = (
    ("start", dict(calm_rounds=8, draws=[168, 12, 171, 398, 57])),
    ("tick", dict(bootstrap=2, elapsed=600, jitter=408, node=2)),
    ("run_isolated", dict(bootstrap=0, change='remove', jitter=239, node=3, rounds=2, size=450, voter=1)),
    ("request_remove_voter", dict(bootstrap=1, jitter=17, voter=2)),
    ("run_fairly", dict(bootstrap=1, jitter=206)),
    ("run_isolated", dict(bootstrap=0, change='remove', jitter=159, node=1, rounds=6, size=250, voter=4)),
    ("tick_all", dict(bootstrap=1, elapsed=1500, jitter=478)),
    ("tick", dict(bootstrap=1, elapsed=100, jitter=40, node=3)),
    ("run_isolated", dict(bootstrap=2, change='add', jitter=141, node=2, rounds=5, size=300, voter=2)),
    ("tick", dict(bootstrap=1, elapsed=1500, jitter=302, node=3)),
    ("run_isolated", dict(bootstrap=2, change='remove', jitter=215, node=4, rounds=6, size=300, voter=3)),
    ("run_fairly", dict(bootstrap=2, jitter=437)),
)
"""Node 1's voter history is emptied by a truncation (docs/kafka-findings.md §3): it stands for no election, and the
voters {1,4} elect no leader, so the auto-joiner's liveness check fails."""


def test_seed_24_emptied_voter_history_elects_no_leader() -> None:
    expected = (
        r"§3 .*node 1: .*runs with voters \[\].*then AssertionError: after 240 "
        r"fair rounds node 4 is no voter: it is Prospective, the newest leader None")
    with pytest.raises(KafkaFinding, match=expected):
        replay(SEED_24)


def test_a_failure_without_a_stale_voter_set_is_not_attributed() -> None:
    machine = replay(SEED_7[:1])
    assert machine.stale_reads == {}
    with pytest.raises(AssertionError, match="planted"), machine._attributed():
        raise AssertionError("planted")
