"""The simulated quorum model (``kraftspec.models.raft``) and properties over the public raft strategies."""

from __future__ import annotations

from collections import Counter
from typing import Optional

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kraftspec.models.raft import run_model
from kraftspec.models.raft_strategies import epochs, epoch_sequences, fetch_requests, logs, vote_requests
from kraftspec.reference import raft, raft_log
from kraftspec.reference.frozen import FrozenMap
from kraftspec.reference.raft_log import log_of_epochs
from kraftspec.reference.raft_messages import FetchResponse, VoteResponse
from kraftspec.reference.raft_state import ElectionState, QuorumConfig, ReplicaKey


@pytest.mark.parametrize("model_seed", [1, 2, 3])
def test_quorum_model_keeps_raft_safety(model_seed: int) -> None:
    run_model(model_seed, max_examples=120, steps=60)


@pytest.mark.parametrize("model_seed", [1, 2, 3])
def test_quorum_model_with_snapshots_keeps_raft_safety(model_seed: int) -> None:
    run_model(model_seed, max_examples=120, steps=60, snapshots=True)


def test_the_snapshot_model_reaches_fetch_snapshot_and_loading(monkeypatch: pytest.MonkeyPatch) -> None:
    """Seed 1 of the snapshot model sends fetchers behind a log start to the snapshot (offset 0 and above it), and
    followers load fetched snapshots in place of their logs: the invariants are exercised on these paths."""
    reached: Counter[str] = Counter()
    fetch_snapshot_id, truncate = raft_log.fetch_snapshot_id, raft_log.truncate_to_latest_snapshot

    def counted_fetch_snapshot_id(log: raft_log.RaftLog, offset: int, epoch: int) -> Optional[tuple[int, int]]:
        found = fetch_snapshot_id(log, offset, epoch)
        reached["sent to a snapshot" + (" from above offset 0" if found and offset > 0 else "")] += found is not None
        return found

    def counted_truncate(log: raft_log.RaftLog) -> Optional[raft_log.RaftLog]:
        loaded = truncate(log)
        reached["loaded"] += loaded is not None
        return loaded

    monkeypatch.setattr(raft_log, "fetch_snapshot_id", counted_fetch_snapshot_id)
    monkeypatch.setattr(raft_log, "truncate_to_latest_snapshot", counted_truncate)
    run_model(1, max_examples=120, steps=60, snapshots=True)
    assert min(reached.values()) > 0 and len(reached) == 3, reached


def brute_end_offset_for_epoch(epochs_per_offset: tuple[int, ...], epoch: int) -> tuple[int, int]:
    """endOffsetForEpoch from the entries themselves (§3.7)."""
    if not epochs_per_offset:
        return (0, 0)
    present = [e for e in epochs_per_offset if e <= epoch]
    if not present:
        return (epoch, 0)
    largest = max(present)
    later = [i for i, e in enumerate(epochs_per_offset) if e > largest]
    return (largest, later[0] if later else len(epochs_per_offset))


@given(epoch_sequences(), epochs())
def test_end_offset_for_epoch_matches_the_entries(sequence: tuple[int, ...], epoch: int) -> None:
    assert raft_log.end_offset_for_epoch(log_of_epochs(sequence), epoch) == brute_end_offset_for_epoch(sequence, epoch)


@given(epoch_sequences(), epoch_sequences())
def test_reconciliation_converges_to_a_prefix_of_the_leader(leader_epochs: tuple[int, ...],
                                                            follower_epochs: tuple[int, ...]) -> None:
    """Fetching and truncating as §3.7 says ends with the follower's log a prefix of the leader's, when the
    follower's log agrees with the leader's wherever both have an entry of the same epoch (log matching)."""
    common = 0
    while (common < min(len(leader_epochs), len(follower_epochs))
           and leader_epochs[common] == follower_epochs[common]):
        common += 1
    tail = follower_epochs[common:]
    if any(e in leader_epochs for e in tail):  # same epoch at different offsets cannot happen under Raft
        return
    leader, follower = log_of_epochs(leader_epochs), log_of_epochs(follower_epochs)
    for _ in range(len(follower_epochs) + 1):
        diverging = raft_log.validate_offset_and_epoch(leader, follower.end_offset, follower.last_fetched_epoch)
        if diverging is None:
            break
        follower, _ = raft_log.truncate_to_end_offset(follower, *diverging)
    assert diverging is None
    assert follower.entries == leader.entries[:follower.end_offset]
    assert follower.end_offset >= common


VOTERS = frozenset({0, 1, 2})
ENDPOINTS = FrozenMap({v: (f"h{v}",) for v in VOTERS})


@settings(max_examples=200)
@given(logs(), st.sampled_from([ElectionState(epoch=3), ElectionState(epoch=3, leader_id=1), ElectionState(epoch=3, leader_id=-1, voted_key=ReplicaKey(id=2)),
                                ElectionState(epoch=3, leader_id=0)]),
       st.lists(st.one_of(vote_requests(), fetch_requests()), max_size=5))
def test_requests_never_break_a_node(log: raft_log.RaftLog, stored: ElectionState, requests: list) -> None:
    """Any sequence of (valid or invalid) requests gets exactly one response each and keeps epochs monotonic."""
    node = raft.new_node(0, VOTERS, ENDPOINTS, QuorumConfig(), log, stored)
    for request in requests:
        epoch = node.state.epoch
        node, out = raft.step(node, request, 0)
        responses = [s for s in out if isinstance(s.message, (VoteResponse, FetchResponse))]
        parked = len(node.parked)
        assert len(responses) + parked >= 1
        assert node.state.epoch >= epoch
