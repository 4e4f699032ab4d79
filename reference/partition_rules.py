"""Small rules of partition leadership over plain ints, tuples and bools (rules §2).

Each function is one rule of ``PartitionChangeBuilder``, ``ReplicationControlManager`` or the
broker's ``Partition`` so that CrossHair (``kraftspec.proofs.partition``) can reach it and the
mutants (``kraftspec.models.partition_mutants``) can swap it. Replica lists are tuples in Kafka's
order; sets Kafka builds with ``HashSet<Integer>`` come out ascending, as Java iterates small ints.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Container, Optional

from kraftspec.reference.errors import Errors
from kraftspec.reference.metadata_version import is_leader_epoch_bump_required_on_isr_shrink
from kraftspec.reference.records import NO_LEADER, NO_LEADER_CHANGE

RECOVERED = 0
RECOVERING = 1
NO_RECOVERY_CHANGE = -1

MIGRATING_DIR = "AAAAAAAAAAAAAAAAAAAAAA"
"""``DirectoryId.MIGRATING`` = Uuid(0, 0): replica not yet assigned (pre-JBOD); counts as online."""
UNASSIGNED_DIR = "AAAAAAAAAAAAAAAAAAAAAQ"
"""``DirectoryId.UNASSIGNED`` = Uuid(0, 1): the broker will choose; counts as online."""
LOST_DIR = "AAAAAAAAAAAAAAAAAAAAAg"
"""``DirectoryId.LOST`` = Uuid(0, 2): the directory is offline."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionBehaviour:
    """The version differences of the partition component, as explicit switches.

    ``completion_needs_only_adding_in_isr``: Kafka 4.3's ``PartitionReassignmentReplicas.maybeCompleteReassignment``
    completes a reassignment once its adding replicas are in the ISR (every target replica only when fewer are added
    than removed); 4.0–4.2's waits until the ISR holds every target replica (``newTargetIsr.containsAll``).
    ``last_known_leader_must_be_acceptable``: from 4.1 ``PartitionChangeBuilder.canElectLastKnownLeader`` refuses a
    last known leader that is not acceptable (fenced, shutting down, offline); 4.0's logs that it is not alive and
    elects it all the same. ``last_known_leader_when_isr_empties``: 4.0's ``maybeUpdateLastKnownLeader`` records
    the current leader when the record empties the ISR; from 4.1 when the record leaves the partition leaderless.
    """

    name: str
    completion_needs_only_adding_in_isr: bool
    last_known_leader_must_be_acceptable: bool
    last_known_leader_when_isr_empties: bool


KAFKA_4_0 = PartitionBehaviour(name="4.0", completion_needs_only_adding_in_isr=False,
                               last_known_leader_must_be_acceptable=False, last_known_leader_when_isr_empties=True)
KAFKA_4_1 = PartitionBehaviour(name="4.1-4.2", completion_needs_only_adding_in_isr=False,
                               last_known_leader_must_be_acceptable=True, last_known_leader_when_isr_empties=False)
KAFKA_4_3 = PartitionBehaviour(name="4.3+", completion_needs_only_adding_in_isr=True,
                               last_known_leader_must_be_acceptable=True, last_known_leader_when_isr_empties=False)
PARTITION_BEHAVIOURS = {b.name: b for b in (KAFKA_4_0, KAFKA_4_1, KAFKA_4_3)}


class Election(IntEnum):
    """``PartitionChangeBuilder.Election`` (§2.4)."""

    PREFERRED = 0
    ONLINE = 1
    UNCLEAN = 2


def effective_min_isr(min_insync_replicas: int, replication_factor: int) -> int:
    """§2.3 ``getTopicEffectiveMinIsr``: ``min(min.insync.replicas, replication factor)``."""
    return min_insync_replicas if min_insync_replicas < replication_factor else replication_factor


def is_directory_online(directory: str, online_dirs: tuple[str, ...]) -> bool:
    """§2.4 ``DirectoryId.isOnline``: MIGRATING/UNASSIGNED online, LOST offline, any dir if none registered."""
    if directory == UNASSIGNED_DIR or directory == MIGRATING_DIR:
        return True
    if directory == LOST_DIR:
        return False
    return not online_dirs or directory in online_dirs


def is_acceptable_leader(
    replica: int,
    registered: bool,
    active: bool,
    directory_online: bool,
    broker_to_remove: int,
    broker_to_add: int,
    unclean_shutdown_broker: int,
) -> bool:
    """§2.4/§2.9 ``LeaderAcceptor``: registered, active (or being unfenced), not removed, dir online.

    ``broker_to_remove``/``broker_to_add``/``unclean_shutdown_broker`` are -1 when unused
    (``generateLeaderAndIsrUpdates``); the directory check applies to the broker being added too.
    """
    if replica == broker_to_remove or replica == unclean_shutdown_broker:
        return False
    if not registered or not directory_online:
        return False
    return replica == broker_to_add or active


def is_valid_new_leader(replica: int, target_isr: tuple[int, ...], target_elr: tuple[int, ...], acceptable: bool) -> bool:
    """§2.4 ``isValidNewLeader``: in the target ISR, or in the ELR while the ISR is empty, and acceptable."""
    return (replica in target_isr or (not target_isr and replica in target_elr)) and acceptable


def can_elect_last_known_leader(
    elr_enabled: bool,
    use_last_known_leader: bool,
    target_isr: tuple[int, ...],
    target_elr: tuple[int, ...],
    last_known_elr: tuple[int, ...],
    acceptable_leaders: Container[int],
    *,
    behaviour: PartitionBehaviour = KAFKA_4_3,
) -> bool:
    """§2.4 last-known-leader rule (KIP-966): ISR and ELR empty, one last-known leader, and it is acceptable
    (Kafka 4.0 skips that last test: :class:`PartitionBehaviour`)."""
    if not elr_enabled or not use_last_known_leader:
        return False
    if target_isr or target_elr or len(last_known_elr) != 1:
        return False
    return last_known_elr[0] in acceptable_leaders or not behaviour.last_known_leader_must_be_acceptable


def elect_leader(
    election: int,
    current_leader: int,
    target_replicas: tuple[int, ...],
    target_isr: tuple[int, ...],
    target_elr: tuple[int, ...],
    last_known_elr: tuple[int, ...],
    acceptable_leaders: Container[int],
    elr_enabled: bool,
    use_last_known_leader: bool,
    *,
    behaviour: PartitionBehaviour = KAFKA_4_3,
) -> tuple[int, bool]:
    """§2.4 ``electLeader``: ``(node, unclean)``; never looks outside ``target_replicas`` (except the last leader).

    PREFERRED tries ``target_replicas[0]`` first, then keeps a valid current leader; ONLINE/UNCLEAN keep
    a valid current leader first. Only UNCLEAN falls back to any acceptable replica.
    """
    if election == Election.PREFERRED:
        if target_replicas:
            first = target_replicas[0]
            if is_valid_new_leader(first, target_isr, target_elr, first in acceptable_leaders):
                return first, False
        if is_valid_new_leader(current_leader, target_isr, target_elr, current_leader in acceptable_leaders):
            return current_leader, False
        rest = target_replicas[1:]
    else:
        if is_valid_new_leader(current_leader, target_isr, target_elr, current_leader in acceptable_leaders):
            return current_leader, False
        rest = target_replicas
    for replica in rest:
        if is_valid_new_leader(replica, target_isr, target_elr, replica in acceptable_leaders):
            return replica, False
    if can_elect_last_known_leader(elr_enabled, use_last_known_leader, target_isr, target_elr, last_known_elr,
                                   acceptable_leaders, behaviour=behaviour):
        return last_known_elr[0], True
    if election == Election.UNCLEAN:
        for replica in target_replicas:
            if replica in acceptable_leaders:
                return replica, True
    return NO_LEADER, False


def last_known_leader_update(
    record_leader: int,
    record_isr: Optional[tuple[int, ...]],
    current_leader: int,
    current_last_known: tuple[int, ...],
    *,
    behaviour: PartitionBehaviour = KAFKA_4_3,
) -> Optional[tuple[int, ...]]:
    """§2.3 step 8 ``PartitionChangeBuilder.maybeUpdateLastKnownLeader`` (ELR and the last-known-leader election on):
    the record's lastKnownElr, or None to leave it out. From 4.1: the current leader when the record makes the
    partition leaderless and none is known, empty when it gets a leader; 4.0 (:class:`PartitionBehaviour`): the current
    leader when the record empties the ISR (unless it is already the one known), empty when the record names a leader or
    keeps a leader the partition has."""
    if behaviour.last_known_leader_when_isr_empties:
        if record_isr == () and current_last_known != (current_leader,):
            return (current_leader,)
        keeps_a_leader = record_leader == NO_LEADER_CHANGE and current_leader != NO_LEADER
        return () if (record_leader >= 0 or keeps_a_leader) and current_last_known else None
    if record_leader == NO_LEADER and not current_last_known:
        return (current_leader,)
    return () if record_leader >= 0 and current_last_known else None


def complete_reassignment(
    target_isr: tuple[int, ...],
    target_replicas: tuple[int, ...],
    removing: tuple[int, ...],
    adding: tuple[int, ...],
    *,
    behaviour: PartitionBehaviour = KAFKA_4_3,
) -> Optional[tuple[tuple[int, ...], tuple[int, ...]]]:
    """§2.3 step 1 / §2.8 ``PartitionReassignmentReplicas.maybeCompleteReassignment``: ``(isr, replicas)`` or None
    (which target replicas must be in the ISR depends on the Kafka version: :class:`PartitionBehaviour`)."""
    if not removing and not adding:
        return None
    new_isr = tuple(r for r in target_isr if r not in removing) if removing else target_isr
    if not new_isr:
        return None
    new_replicas = tuple(r for r in target_replicas if r not in removing)
    if not new_replicas:
        return None
    if not behaviour.completion_needs_only_adding_in_isr:
        return None if any(r not in new_isr for r in new_replicas) else (new_isr, new_replicas)
    if any(r not in new_isr for r in adding):
        return None
    if len(adding) < len(removing) and any(r not in new_isr for r in new_replicas):
        return None
    return new_isr, new_replicas


def populate_target_elr(
    min_isr: int,
    target_isr: tuple[int, ...],
    current_isr: tuple[int, ...],
    target_elr: tuple[int, ...],
    target_last_known_elr: tuple[int, ...],
    unclean_shutdown_replicas: tuple[int, ...],
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """§2.3 step 2 / §2.7 ``maybePopulateTargetElr`` (ELR enabled): ``(elr, last_known_elr)``, both ascending.

    At or above min ISR both are cleared; below it the ELR is (ELR ∪ current ISR) minus the target
    ISR and unclean-shutdown replicas, and lastKnownElr collects the rest of the candidates.
    """
    if len(target_isr) >= min_isr:
        return (), ()
    candidates = set(target_elr)
    candidates.update(current_isr)
    elr = tuple(sorted(r for r in candidates if r not in target_isr and r not in unclean_shutdown_replicas))
    candidates.update(target_last_known_elr)
    last_known = tuple(sorted(r for r in candidates if r not in target_isr and r not in elr))
    return elr, last_known


def reassignment_requires_leader_epoch_bump(target_replicas: tuple[int, ...], current_replicas: tuple[int, ...]) -> bool:
    """§2.3 step 4 / §2.5: a replica set that drops any current replica bumps the leader epoch."""
    return any(r not in target_replicas for r in current_replicas)


def isr_shrink_requires_leader_epoch_bump(metadata_version: int, new_isr: tuple[int, ...], current_isr: tuple[int, ...]) -> bool:
    """§2.3 step 7 (KAFKA-15021): below MV 3.6-IV0 an ISR that drops a member bumps the leader epoch."""
    if not is_leader_epoch_bump_required_on_isr_shrink(metadata_version):
        return False
    return any(r not in new_isr for r in current_isr)


def merged_leader_epoch(leader_epoch: int, record_leader: int) -> int:
    """§2.2 merge: any leader value except -2 (also -1 and the same leader) bumps the leader epoch by 1."""
    return leader_epoch if record_leader == NO_LEADER_CHANGE else leader_epoch + 1


def is_valid_isr(isr: tuple[int, ...], replicas: tuple[int, ...]) -> bool:
    """§2.6 ``Replicas.validateIsr``: no duplicates, no negative ids, every member a replica."""
    if len(set(isr)) != len(isr):
        return False
    for r in isr:
        if r < 0 or r not in replicas:
            return False
    return True


def is_isr_member_eligible(fenced: bool, in_controlled_shutdown: bool, requested_epoch: int, registered_epoch: int) -> bool:
    """§2.10 check 11 (KIP-841/KIP-903) for a registered broker: unfenced, not shutting down, epoch -1 or current.

    An unregistered broker is never eligible (the caller checks registration first).
    """
    if fenced or in_controlled_shutdown:
        return False
    return requested_epoch == -1 or requested_epoch == registered_epoch


def high_watermark(
    current_hw: int,
    leader_leo: int,
    hw_candidate_leos: tuple[int, ...],
    isr_size: int,
    min_isr: int,
) -> int:
    """§2.12 ``Partition.maybeIncrementLeaderHW``: min LEO over the leader and the candidates, never backwards.

    The candidates are the maximal-ISR followers and caught-up ISR-eligible ones (the caller picks
    them). While ``|ISR| < min_isr`` (effective) the HW does not advance (KAFKA-15583, 3.7+).
    """
    if isr_size < min_isr:
        return current_hw
    candidate = leader_leo
    for leo in hw_candidate_leos:
        if leo < candidate:
            candidate = leo
    return candidate if candidate > current_hw else current_hw


def is_caught_up(follower_leo: int, leader_leo: int, now_ms: int, last_caught_up_ms: int, lag_max_ms: int) -> bool:
    """§2.12 ``Replica.isCaughtUp``: at the leader's LEO, or caught up within ``replica.lag.time.max.ms``."""
    return follower_leo == leader_leo or now_ms - last_caught_up_ms <= lag_max_ms


def last_caught_up_time(
    fetch_offset: int,
    leader_leo: int,
    fetch_time_ms: int,
    previous_fetch_leader_leo: int,
    previous_fetch_time_ms: int,
    current_last_caught_up_ms: int,
) -> int:
    """§2.12 ``ReplicaState.updateFetchStateOrThrow``: when a follower fetch advances lastCaughtUpTime (never back)."""
    if fetch_offset >= leader_leo:
        return max(current_last_caught_up_ms, fetch_time_ms)
    if fetch_offset >= previous_fetch_leader_leo:
        return max(current_last_caught_up_ms, previous_fetch_time_ms)
    return current_last_caught_up_ms


def alter_partition_epoch_error(
    requester: int,
    request_leader_epoch: int,
    request_partition_epoch: int,
    leader: int,
    leader_epoch: int,
    partition_epoch: int,
) -> Errors:
    """§2.10 checks 2–6, in Kafka's order: the error of an AlterPartition's epochs, NONE if they match.

    Epochs ahead of the controller → NOT_CONTROLLER (41); leader epoch behind → FENCED_LEADER_EPOCH (74);
    requester not the leader → INVALID_REQUEST (42); partition epoch behind → INVALID_UPDATE_VERSION (95).
    """
    # Epochs this controller has not reached: it lags the log, so the leader should find the active controller.
    if request_leader_epoch > leader_epoch or request_partition_epoch > partition_epoch:
        return Errors.NOT_CONTROLLER
    # The requester leads an older epoch: a new leader was elected since.
    if request_leader_epoch < leader_epoch:
        return Errors.FENCED_LEADER_EPOCH
    # Only the partition's leader may change its ISR.
    if requester != leader:
        return Errors.INVALID_REQUEST
    # The proposal was built on an older partition state: the leader must learn the current one first.
    if request_partition_epoch < partition_epoch:
        return Errors.INVALID_UPDATE_VERSION
    return Errors.NONE


def is_broker_epoch_isr_eligible(fetched_broker_epoch: int, cached_broker_epoch: int) -> bool:
    """§2.12 ``Partition.isBrokerEpochIsrEligible`` (KIP-903): the epoch the follower last fetched with is
    -1 (unknown to an old follower) or its registered epoch in the leader's metadata cache.

    ``-2`` stands for "no fetch since this broker became leader" and is never eligible.
    """
    if fetched_broker_epoch == -2:
        return False
    return fetched_broker_epoch == -1 or fetched_broker_epoch == cached_broker_epoch


def is_hw_candidate(in_maximal_isr: bool, caught_up: bool, isr_eligible: bool) -> bool:
    """§2.12 ``maybeIncrementLeaderHW``: a follower bounds the HW if it is in the maximal ISR or is
    caught up and ISR-eligible (the leader waits for it to join)."""
    return in_maximal_isr or (caught_up and isr_eligible)


def isr_record_field(
    target_isr: tuple[int, ...], current_isr: tuple[int, ...], elr_enabled: bool
) -> Optional[tuple[int, ...]]:
    """§2.3 step 6: the record's ISR when the election left it unset: the target if it differs from the
    current ISR and is non-empty or ELR is enabled; else None. Without ELR the ISR never becomes empty."""
    if (target_isr or elr_enabled) and target_isr != current_isr:
        return target_isr
    return None
