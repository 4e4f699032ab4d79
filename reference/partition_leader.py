"""The broker-side partition leader: high watermark, follower fetch state, ISR shrink and expansion.

rules §2.12 (``core/.../cluster/Partition.scala``, ``server/.../replica/Replica.java`` and
``ReplicaState.java``). The leader proposes ISR changes with AlterPartition (§2.10) as conditional
updates carrying its leader and partition epochs; one proposal is in flight at a time. Offsets are
arguments; a follower's fetch reports the offset it fetches from (= its log end offset).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Optional

from kraftspec.reference.alter_partition import AlterPartitionPartition, AlterPartitionPartitionResult
from kraftspec.reference.broker_registration import BrokerRegistration
from kraftspec.reference.errors import Errors
from kraftspec.reference.frozen import FrozenMap, evolve
from kraftspec.reference.partition import PartitionRegistration
from kraftspec.reference.partition_rules import (
    RECOVERED,
    effective_min_isr,
    high_watermark,
    is_broker_epoch_isr_eligible,
    is_caught_up,
    is_hw_candidate,
    last_caught_up_time,
)

REPLICA_LAG_TIME_MAX_MS = 30000
"""``replica.lag.time.max.ms`` default (§1.1)."""
NO_FETCH = -2
"""A follower's broker epoch before its first fetch since this leadership (``Option.empty``)."""

REVERT_ERRORS = frozenset({Errors.OPERATION_NOT_ATTEMPTED, Errors.INELIGIBLE_REPLICA})
"""§2.10 ``handleAlterPartitionError``: back to the last committed state, no retry."""
WAIT_FOR_METADATA_ERRORS = frozenset({
    Errors.UNKNOWN_TOPIC_OR_PARTITION, Errors.UNKNOWN_TOPIC_ID, Errors.FENCED_LEADER_EPOCH,
    Errors.INVALID_UPDATE_VERSION, Errors.INVALID_REQUEST, Errors.NEW_LEADER_ELECTED,
})
"""§2.10: stay pending until new metadata arrives, no retry."""


@dataclass(frozen=True, slots=True, kw_only=True)
class FollowerState:
    """``ReplicaState`` of a remote replica as the leader tracks it; offsets -1 until the first fetch."""

    log_end_offset: int = -1
    last_caught_up_ms: int = 0
    last_fetch_leader_leo: int = -1
    last_fetch_time_ms: int = 0
    broker_epoch: int = NO_FETCH


@dataclass(frozen=True, slots=True, kw_only=True)
class PendingIsrChange:
    """An AlterPartition in flight: the ISR proposed and the maximal ISR used for the HW meanwhile.

    Expansion: maximal = committed ISR + the new member; shrink: maximal = the committed (old) ISR.
    """

    proposed_isr: tuple[int, ...]
    maximal_isr: tuple[int, ...]
    request: AlterPartitionPartition


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionLeaderState:
    """One partition led by ``broker_id``: the committed state, the log end, HW and the followers."""

    broker_id: int
    broker_epoch: int
    partition_id: int
    leader_epoch: int
    partition_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader_recovery_state: int
    log_end_offset: int
    high_watermark: int
    leader_epoch_start_offset: int
    min_insync_replicas: int
    followers: FrozenMap[int, FollowerState]
    eligible_brokers: FrozenMap[int, int]
    pending: Optional[PendingIsrChange] = None
    replica_lag_time_max_ms: int = REPLICA_LAG_TIME_MAX_MS
    alive_brokers: FrozenMap[int, int] = FrozenMap()
    """The metadata cache's ``getAliveBrokerEpoch``: broker → epoch for registered, unfenced brokers (shutting down
    or not); a follower fetching with an older epoch is fenced (``Replica.updateFetchStateOrThrow``)."""

    @property
    def maximal_isr(self) -> tuple[int, ...]:
        """The committed ISR, or the pending change's maximal ISR while an AlterPartition is in flight."""
        return self.isr if self.pending is None else self.pending.maximal_isr


def eligible_broker_epochs(brokers: Mapping[int, BrokerRegistration]) -> FrozenMap[int, int]:
    """The metadata cache's view for ISR eligibility: broker → epoch for registered, unfenced, not-ICS brokers."""
    return FrozenMap({b: r.epoch for b, r in brokers.items() if r.is_active})


def alive_broker_epochs(brokers: Mapping[int, BrokerRegistration]) -> FrozenMap[int, int]:
    """``KRaftMetadataCache.getAliveBrokerEpoch``: broker → epoch for registered, unfenced brokers."""
    return FrozenMap({b: r.epoch for b, r in brokers.items() if not r.fenced})


def become_leader(
    broker_id: int,
    broker_epoch: int,
    partition_id: int,
    registration: PartitionRegistration,
    brokers: Mapping[int, BrokerRegistration],
    *,
    log_end_offset: int,
    high_watermark: int,
    min_insync_replicas: int,
    now_ms: int,
    replica_lag_time_max_ms: int = REPLICA_LAG_TIME_MAX_MS,
) -> PartitionLeaderState:
    """§2.12 ``Partition.makeLeader`` for a new leader: epoch start offset = LEO, followers reset.

    ISR followers are caught up as of now; others never were (``resetReplicaState``). The leader holds its
    partition RECOVERED whatever the registration says (Kafka 4.3 ``makeLeader`` passes
    ``LeaderRecoveryState.RECOVERED`` to ``updateAssignmentAndIsr``): its next AlterPartition reports the recovery.
    """
    followers = FrozenMap({
        r: FollowerState(last_caught_up_ms=now_ms if r in registration.isr else 0)
        for r in registration.replicas if r != broker_id
    })
    state = PartitionLeaderState(
        broker_id=broker_id,
        broker_epoch=broker_epoch,
        partition_id=partition_id,
        leader_epoch=registration.leader_epoch,
        partition_epoch=registration.partition_epoch,
        replicas=registration.replicas,
        isr=registration.isr,
        leader_recovery_state=RECOVERED,
        log_end_offset=log_end_offset,
        high_watermark=high_watermark,
        leader_epoch_start_offset=log_end_offset,
        min_insync_replicas=min_insync_replicas,
        followers=followers,
        eligible_brokers=eligible_broker_epochs(brokers),
        replica_lag_time_max_ms=replica_lag_time_max_ms,
        alive_brokers=alive_broker_epochs(brokers),
    )
    return maybe_increment_high_watermark(state, now_ms)


def update_leader_metadata(
    state: PartitionLeaderState,
    registration: PartitionRegistration,
    brokers: Mapping[int, BrokerRegistration],
    now_ms: int,
) -> PartitionLeaderState:
    """§2.12 ``Partition.makeLeader`` for a broker that already leads: the broker view is refreshed; a registration
    at an older partition epoch changes nothing else (Kafka skips it); otherwise the leader adopts the committed
    ISR (RECOVERED, as ``become_leader``), drops any pending change and maybe advances the HW.

    A higher leader epoch (the controller bumped it, e.g. on a reassignment, keeping this leader) starts anew at
    the LEO: leader epoch and epoch start offset, and every follower's fetch state reset as Kafka 4.3
    ``Replica.resetReplicaState`` does for a leader that already led (its log end and broker epoch kept, its last
    fetch at the LEO, caught up as of now if in the ISR, else at 0). A request already with the
    AlterPartitionManager stays there (the caller's ``in_flight``).
    """
    brokers_view = {"eligible_brokers": eligible_broker_epochs(brokers), "alive_brokers": alive_broker_epochs(brokers)}
    if registration.partition_epoch < state.partition_epoch:
        return evolve(state, **brokers_view)
    followers = dict(state.followers)
    for r in registration.replicas:
        if r != state.broker_id and r not in followers:
            followers[r] = FollowerState()
    followers = {r: f for r, f in followers.items() if r in registration.replicas}
    new_epoch: dict[str, int] = {}
    if registration.leader_epoch > state.leader_epoch:
        leo = state.log_end_offset
        followers = {r: evolve(f, last_fetch_leader_leo=leo,
                               last_fetch_time_ms=now_ms if r in registration.isr else 0,
                               last_caught_up_ms=now_ms if r in registration.isr else 0)
                     for r, f in followers.items()}
        new_epoch = {"leader_epoch": registration.leader_epoch, "leader_epoch_start_offset": leo}
    updated = evolve(
        state,
        partition_epoch=registration.partition_epoch,
        replicas=registration.replicas,
        isr=registration.isr,
        leader_recovery_state=RECOVERED,
        followers=FrozenMap(followers),
        pending=None,
        **brokers_view,
        **new_epoch,
    )
    return maybe_increment_high_watermark(updated, now_ms)


def update_broker_metadata(state: PartitionLeaderState, brokers: Mapping[int, BrokerRegistration]) -> PartitionLeaderState:
    """§2.12: a metadata update that changes only broker registrations refreshes the leader's broker view
    (fenced / shutting down / epochs) used for ISR eligibility; the partition state stays as it is."""
    return evolve(state, eligible_brokers=eligible_broker_epochs(brokers), alive_brokers=alive_broker_epochs(brokers))


def is_replica_isr_eligible(state: PartitionLeaderState, replica: int) -> bool:
    """§2.12 ``isReplicaIsrEligible``: alive, unfenced, not shutting down, and fetching with its current epoch."""
    cached = state.eligible_brokers.get(replica)
    if cached is None:
        return False
    return is_broker_epoch_isr_eligible(state.followers[replica].broker_epoch, cached)


def maybe_increment_high_watermark(state: PartitionLeaderState, now_ms: int) -> PartitionLeaderState:
    """§2.12 ``maybeIncrementLeaderHW``: min LEO over the leader and the HW candidates; frozen under min ISR.

    The effective min ISR counts the leader and its followers (Kafka 4.3 ``Partition.effectiveMinIsr``:
    ``min(min.insync.replicas, remote replicas + 1)``), which is the replication factor unless the broker leads a
    partition it is no replica of.
    """
    maximal = state.maximal_isr
    leos = tuple(
        follower.log_end_offset
        for r, follower in state.followers.items()
        if is_hw_candidate(
            r in maximal,
            is_caught_up(follower.log_end_offset, state.log_end_offset, now_ms, follower.last_caught_up_ms, state.replica_lag_time_max_ms),
            is_replica_isr_eligible(state, r),
        )
    )
    min_isr = effective_min_isr(state.min_insync_replicas, len(state.followers) + 1)
    hw = high_watermark(state.high_watermark, state.log_end_offset, leos, len(state.isr), min_isr)
    return state if hw == state.high_watermark else evolve(state, high_watermark=hw)


def append(state: PartitionLeaderState, count: int, now_ms: int) -> PartitionLeaderState:
    """The leader appends ``count`` records to its log, then maybe advances the HW (``appendRecordsToLeader``)."""
    return maybe_increment_high_watermark(evolve(state, log_end_offset=state.log_end_offset + count), now_ms)


def _proposal(state: PartitionLeaderState, isr: tuple[int, ...]) -> AlterPartitionPartition:
    """``addBrokerEpochToIsr``: own epoch for the leader, last fetch epoch for others, -1 if unknown.

    Members ascending: Kafka lists the leader's ISR ``Set`` (``CommittedPartitionState`` keeps ``Set.copyOf``,
    whose iteration order Java draws per JVM run), so the order carries nothing; the harness reports Kafka's
    proposals ascending too.
    """
    members = tuple(
        (r, state.broker_epoch if r == state.broker_id else max(state.followers[r].broker_epoch, -1))
        for r in sorted(isr)
    )
    return AlterPartitionPartition(
        partition_index=state.partition_id,
        leader_epoch=state.leader_epoch,
        new_isr_with_epochs=members,
        partition_epoch=state.partition_epoch,
        leader_recovery_state=state.leader_recovery_state,
    )


def _propose(state: PartitionLeaderState, isr: tuple[int, ...], maximal: tuple[int, ...]) -> tuple[PartitionLeaderState, AlterPartitionPartition]:
    request = _proposal(state, isr)
    return evolve(state, pending=PendingIsrChange(proposed_isr=isr, maximal_isr=maximal, request=request)), request


def follower_fetch(
    state: PartitionLeaderState,
    follower: int,
    fetch_offset: int,
    fetch_time_ms: int,
    broker_epoch: int,
    *,
    in_flight: bool = False,
) -> tuple[PartitionLeaderState, Optional[AlterPartitionPartition]]:
    """§2.12 ``updateFollowerFetchState``: record the fetch, maybe propose an ISR expansion, maybe move the HW.

    Expansion needs no change in flight, the follower outside the ISR, ISR-eligible, and its LEO at
    least the HW and the leader-epoch start offset. A fetch outside the leader's log (beyond its LEO, below 0) is
    out of range, and one with a broker epoch older than the follower's alive registration is fenced (both raise).
    ``in_flight``: the broker's AlterPartitionManager still holds an unanswered request for the partition (sent
    before new metadata dropped the pending change); Kafka 4.3 ``DefaultAlterPartitionManager.submit`` then fails
    the new one at once with OPERATION_NOT_ATTEMPTED and ``Partition.handleAlterPartitionError`` reverts it: no
    proposal, nothing pending.
    """
    if follower not in state.followers:
        raise ValueError(f"broker {follower} is not a follower of this partition")
    if fetch_offset > state.log_end_offset:
        raise ValueError(f"fetch offset {fetch_offset} beyond the log end offset {state.log_end_offset}")
    if fetch_offset < 0:
        raise ValueError(f"fetch offset {fetch_offset} below the log start offset 0")
    alive = state.alive_brokers.get(follower)
    if broker_epoch != -1 and alive is not None and alive > broker_epoch:
        raise ValueError(f"stale fetch from broker {follower} at epoch {broker_epoch}: its registration has epoch "
                         f"{alive} (Kafka 4.3 Replica.updateFetchStateOrThrow fences it, NOT_LEADER_OR_FOLLOWER)")
    previous = state.followers[follower]
    caught_up_ms = last_caught_up_time(
        fetch_offset, state.log_end_offset, fetch_time_ms,
        previous.last_fetch_leader_leo, previous.last_fetch_time_ms, previous.last_caught_up_ms,
    )
    fetched = FollowerState(
        log_end_offset=fetch_offset,
        last_caught_up_ms=caught_up_ms,
        last_fetch_leader_leo=state.log_end_offset,
        last_fetch_time_ms=fetch_time_ms,
        broker_epoch=broker_epoch,
    )
    updated = evolve(state, followers=state.followers.set(follower, fetched))
    request: Optional[AlterPartitionPartition] = None
    if (
        updated.pending is None
        and follower not in updated.isr
        and is_replica_isr_eligible(updated, follower)
        and fetch_offset >= updated.high_watermark
        and fetch_offset >= updated.leader_epoch_start_offset
    ):
        if not in_flight:
            expanded = updated.isr + (follower,)
            updated, request = _propose(updated, expanded, expanded)
    if previous.log_end_offset != fetch_offset:
        updated = maybe_increment_high_watermark(updated, fetch_time_ms)
    return updated, request


def maybe_shrink_isr(
    state: PartitionLeaderState, now_ms: int, *, in_flight: bool = False
) -> tuple[PartitionLeaderState, Optional[AlterPartitionPartition]]:
    """§2.12 ``maybeShrinkIsr`` (every lag/2): propose the ISR without followers that are not caught up.

    Nothing is proposed while an AlterPartition is in flight; the maximal ISR stays the old ISR. With
    ``in_flight`` (the AlterPartitionManager still holds an earlier request, see :func:`follower_fetch`) the
    proposal fails with OPERATION_NOT_ATTEMPTED and is reverted: nothing changes.
    """
    if state.pending is not None or in_flight:
        return state, None
    out_of_sync = tuple(
        r for r in state.isr
        if r != state.broker_id and not is_caught_up(
            state.followers[r].log_end_offset, state.log_end_offset, now_ms,
            state.followers[r].last_caught_up_ms, state.replica_lag_time_max_ms,
        )
    )
    if not out_of_sync:
        return state, None
    shrunk = tuple(r for r in state.isr if r not in out_of_sync)
    return _propose(state, shrunk, state.isr)


def handle_alter_partition_result(
    state: PartitionLeaderState, result: AlterPartitionPartitionResult, now_ms: int
) -> tuple[PartitionLeaderState, Optional[AlterPartitionPartition]]:
    """§2.10/§2.12 ``handleAlterPartitionUpdate`` / ``handleAlterPartitionError``: ``(state', request to resend)``.

    NONE at our leader epoch and a partition epoch not behind commits the returned ISR; revert errors
    drop the pending change; metadata-wait errors keep it pending; any other error resends it.
    """
    pending = state.pending
    if pending is None:
        return state, None
    if result.error_code == Errors.NONE:
        if result.leader_epoch != state.leader_epoch or result.partition_epoch < state.partition_epoch:
            return state, None
        committed = evolve(
            state,
            isr=result.isr,
            partition_epoch=result.partition_epoch,
            leader_recovery_state=result.leader_recovery_state,
            pending=None,
        )
        return maybe_increment_high_watermark(committed, now_ms), None
    if result.error_code in REVERT_ERRORS:
        return evolve(state, pending=None), None
    if result.error_code in WAIT_FOR_METADATA_ERRORS:
        return state, None
    return state, pending.request
