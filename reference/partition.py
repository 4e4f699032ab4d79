"""A partition's registration, how a PartitionChangeRecord merges into it, and the change builder.

rules §2.1–§2.7 (``PartitionRegistration.java``, ``PartitionChangeBuilder.java``). The
builder follows Kafka's step order exactly and returns the record Kafka would write, or ``None``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping, Optional

from kraftspec.reference.broker_registration import BrokerRegistration
from kraftspec.reference.frozen import PersistentMap, persistent
from kraftspec.reference.metadata_version import is_directory_assignment_supported, partition_change_record_version
from kraftspec.reference.partition_rules import (
    KAFKA_4_3,
    PartitionBehaviour,
    last_known_leader_update,
    MIGRATING_DIR,
    NO_RECOVERY_CHANGE,
    RECOVERED,
    RECOVERING,
    UNASSIGNED_DIR,
    Election,
    complete_reassignment,
    effective_min_isr,
    elect_leader,
    is_acceptable_leader,
    is_directory_online,
    isr_record_field,
    isr_shrink_requires_leader_epoch_bump,
    merged_leader_epoch,
    populate_target_elr,
    reassignment_requires_leader_epoch_bump,
)
from kraftspec.reference.records import NO_LEADER, NO_LEADER_CHANGE, ClearElrRecord, PartitionChangeRecord, PartitionRecord

TopicPartition = tuple[str, int]
"""A partition's key: ``(topic_id, partition_id)``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicInfo:
    """What the partition rules need of a topic: its name, id and the two configs they read (§2.3, §2.4)."""

    name: str
    topic_id: str
    unclean_leader_election_enable: bool = False
    min_insync_replicas: int = 1


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionRegistration:
    """``PartitionRegistration`` (§2.1). Empty ``directories`` are normalised to MIGRATING per replica (§2.2)."""

    replicas: tuple[int, ...]
    directories: tuple[str, ...] = ()
    isr: tuple[int, ...]
    removing_replicas: tuple[int, ...] = ()
    adding_replicas: tuple[int, ...] = ()
    elr: tuple[int, ...] = ()
    last_known_elr: tuple[int, ...] = ()
    leader: int
    leader_recovery_state: int = RECOVERED
    leader_epoch: int = 0
    partition_epoch: int = 0

    def __post_init__(self) -> None:
        if not self.directories and self.replicas:
            object.__setattr__(self, "directories", (MIGRATING_DIR,) * len(self.replicas))

    @classmethod
    def from_record(cls, record: PartitionRecord) -> "PartitionRegistration":
        """Replay of PartitionRecord: absent ELR fields are empty, absent directories MIGRATING (§2.1, §2.7)."""
        return cls(
            replicas=record.replicas,
            directories=_normalised_directories(record.directories, len(record.replicas)),
            isr=record.isr,
            removing_replicas=record.removing_replicas,
            adding_replicas=record.adding_replicas,
            elr=record.eligible_leader_replicas or (),
            last_known_elr=record.last_known_elr or (),
            leader=record.leader,
            leader_recovery_state=record.leader_recovery_state,
            leader_epoch=record.leader_epoch,
            partition_epoch=record.partition_epoch,
        )


def _normalised_directories(directories: Optional[tuple[str, ...]], replica_count: int) -> tuple[str, ...]:
    """§2.2: null or all-MIGRATING directories become MIGRATING for each replica."""
    if not directories or all(d == MIGRATING_DIR for d in directories):
        return (MIGRATING_DIR,) * replica_count
    return directories


def merge(partition: PartitionRegistration, record: PartitionChangeRecord) -> PartitionRegistration:
    """§2.2 ``PartitionRegistration.merge``: non-null fields replace, leader != -2 bumps the leader epoch,
    the partition epoch always bumps."""
    replicas = partition.replicas if record.replicas is None else record.replicas
    directories = partition.directories
    if record.replicas is not None or record.directories is not None:
        directories = _normalised_directories(directories if record.directories is None else record.directories, len(replicas))
    return PartitionRegistration(
        replicas=replicas,
        directories=directories,
        isr=partition.isr if record.isr is None else record.isr,
        removing_replicas=partition.removing_replicas if record.removing_replicas is None else record.removing_replicas,
        adding_replicas=partition.adding_replicas if record.adding_replicas is None else record.adding_replicas,
        elr=partition.elr if record.eligible_leader_replicas is None else record.eligible_leader_replicas,
        last_known_elr=partition.last_known_elr if record.last_known_elr is None else record.last_known_elr,
        leader=partition.leader if record.leader == NO_LEADER_CHANGE else record.leader,
        leader_recovery_state=(partition.leader_recovery_state if record.leader_recovery_state == NO_RECOVERY_CHANGE
                               else record.leader_recovery_state),
        leader_epoch=merged_leader_epoch(partition.leader_epoch, record.leader),
        partition_epoch=partition.partition_epoch + 1,
    )


def default_directory(brokers: Mapping[int, BrokerRegistration], replica: int) -> str:
    """§2.3 step 9 ``ClusterControlManager.defaultDir``: the only dir, MIGRATING if none, else UNASSIGNED."""
    registration = brokers.get(replica)
    if registration is None:
        return UNASSIGNED_DIR
    if not registration.log_dirs:
        return MIGRATING_DIR
    if len(registration.log_dirs) == 1:
        return registration.log_dirs[0]
    return UNASSIGNED_DIR


def _assigned_directory(replicas: tuple[int, ...], directories: tuple[str, ...], replica: int, default: str) -> str:
    """§2.4/§2.3 step 9: the directory paired with ``replica`` in a partition's ``(replicas, directories)``
    (the last pair naming it, as in a dict of the pairs), ``default`` if no pair names it."""
    count = replicas.count(replica)
    if count == 0:
        return default
    if count == 1:
        index = replicas.index(replica)
        return directories[index] if index < len(directories) else default
    return dict(zip(replicas, directories)).get(replica, default)


def accepts_as_leader(partition: PartitionRegistration, brokers: Mapping[int, BrokerRegistration], replica: int, *,
                      broker_to_remove: int, broker_to_add: int, unclean_shutdown_broker: int) -> bool:
    """§2.4/§2.9 ``PartitionChangeBuilder``'s ``LeaderAcceptor.test``: :func:`is_acceptable_leader` for ``replica``,
    given its registration (none: unregistered) and the directory ``partition`` assigns it (UNASSIGNED if none)."""
    registration = brokers.get(replica)
    if registration is None:
        return is_acceptable_leader(replica, False, False, False, broker_to_remove, broker_to_add,
                                    unclean_shutdown_broker)
    directory = _assigned_directory(partition.replicas, partition.directories, replica, UNASSIGNED_DIR)
    return is_acceptable_leader(replica, True, not registration.fenced and not registration.in_controlled_shutdown,
                                is_directory_online(directory, registration.log_dirs), broker_to_remove, broker_to_add,
                                unclean_shutdown_broker)


def topic_effective_min_isr(topic: TopicInfo, partitions: Mapping[TopicPartition, PartitionRegistration], partition_id: int) -> int:
    """§2.3 ``getTopicEffectiveMinIsr``: min ISR capped by the replication factor of the topic's partition 0."""
    first = partitions.get((topic.topic_id, 0)) or partitions[(topic.topic_id, partition_id)]
    return effective_min_isr(topic.min_insync_replicas, len(first.replicas))


def try_election(
    partition: PartitionRegistration,
    election: Election,
    replicas: tuple[int, ...],
    isr: tuple[int, ...],
    elr: tuple[int, ...],
    acceptable: tuple[int, ...],
    *,
    elr_enabled: bool,
    use_last_known_leader: bool,
    behaviour: PartitionBehaviour = KAFKA_4_3,
) -> tuple[tuple[int, ...], tuple[int, ...], int, Optional[tuple[int, ...]], int]:
    """§2.3 step 3 ``PartitionChangeBuilder.tryElection``: (target ISR, target ELR, record leader, record ISR, record
    leader recovery state). A new leader taken from the ELR becomes the whole ISR and leaves the ELR; an unclean one
    is the record's only ISR member, and its partition is recovering."""
    node, unclean = elect_leader(election, partition.leader, replicas, isr, elr, partition.last_known_elr, acceptable,
                                 elr_enabled, use_last_known_leader, behaviour=behaviour)
    if node == partition.leader:
        return isr, elr, NO_LEADER_CHANGE, None, NO_RECOVERY_CHANGE
    if node in elr:
        isr, elr = (node,), tuple(r for r in elr if r != node)
    if not unclean:
        return isr, elr, node, None, NO_RECOVERY_CHANGE
    recovery = RECOVERING if partition.leader_recovery_state != RECOVERING else NO_RECOVERY_CHANGE
    return isr, elr, node, (node,), recovery


def maybe_update_record_elr(
    partition: PartitionRegistration,
    elr: tuple[int, ...],
    last_known: tuple[int, ...],
    record_leader: int,
    record_isr: Optional[tuple[int, ...]],
    *,
    elr_enabled: bool,
    use_last_known_leader: bool,
) -> tuple[Optional[tuple[int, ...]], Optional[tuple[int, ...]]]:
    """§2.3 step 5 ``maybeUpdateRecordElr``: the record's ELR and lastKnownElr, None where unchanged. An unclean
    election or ELR off empties both; without the last-known-leader rule, a partition left with a leader records
    its target lastKnownElr."""
    if record_isr is not None or not elr_enabled:
        elr = last_known = ()
    record_elr = elr if elr != partition.elr else None
    if use_last_known_leader:
        return record_elr, None
    leaderless = record_leader == NO_LEADER or (record_leader == NO_LEADER_CHANGE and partition.leader == NO_LEADER)
    return record_elr, (last_known if not leaderless and last_known != partition.last_known_elr else None)


def set_assignment_changes(
    partition: PartitionRegistration,
    brokers: Mapping[int, BrokerRegistration],
    replicas: tuple[int, ...],
    removing: tuple[int, ...],
    adding: tuple[int, ...],
    metadata_version: int,
) -> tuple[Optional[tuple[int, ...]], Optional[tuple[str, ...]], Optional[tuple[int, ...]], Optional[tuple[int, ...]]]:
    """§2.3 step 9 ``setAssignmentChanges``: the record's replicas, directories, removing and adding replicas, None
    where unchanged. New replicas keep their directory, others get their broker's default (MV with directories)."""
    record_replicas: Optional[tuple[int, ...]] = None
    record_dirs: Optional[tuple[str, ...]] = None
    if replicas and replicas != partition.replicas:
        if is_directory_assignment_supported(metadata_version):
            dirs = tuple(
                _assigned_directory(partition.replicas, partition.directories, r, default_directory(brokers, r))
                for r in replicas)
            if dirs != partition.directories:
                record_dirs = dirs
        record_replicas = replicas
    return (record_replicas, record_dirs, removing if removing != partition.removing_replicas else None,
            adding if adding != partition.adding_replicas else None)


def build_partition_change(
    partition: PartitionRegistration,
    topic_id: str,
    partition_id: int,
    *,
    brokers: Mapping[int, BrokerRegistration],
    metadata_version: int,
    min_isr: int,
    target_isr: Optional[tuple[int, ...]] = None,
    target_replicas: Optional[tuple[int, ...]] = None,
    target_removing: Optional[tuple[int, ...]] = None,
    target_adding: Optional[tuple[int, ...]] = None,
    target_leader_recovery_state: Optional[int] = None,
    election: Election = Election.ONLINE,
    elr_enabled: bool = False,
    behaviour: PartitionBehaviour = KAFKA_4_3,
    use_last_known_leader: bool = True,
    broker_to_remove: int = NO_LEADER,
    broker_to_add: int = NO_LEADER,
    unclean_shutdown_broker: int = NO_LEADER,
    acceptable: Optional[tuple[int, ...]] = None,
) -> Optional[PartitionChangeRecord]:
    """§2.3 ``PartitionChangeBuilder.build``, steps 1–11 in Kafka's order; ``None`` when nothing changes.

    ``min_isr`` is the effective min ISR; ``acceptable`` overrides the broker-derived acceptor (Kafka's
    ``IntPredicate``, :func:`accepts_as_leader`) with the replicas acceptable as leader. Step 8 sets the last known
    leader whenever the record's leader is -1 and none is known ("first time leaderless"); the KIP text stores all
    ELR members there.
    Kafka 4.3 ``PartitionChangeBuilder.maybeUpdateLastKnownLeader`` tests only the record's leader, so a leaderless
    partition whose leader epoch step 4 bumps (a reassignment dropping a replica) records lastKnownElr ``[-1]``.
    """
    current_isr, current_replicas, current_leader = partition.isr, partition.replicas, partition.leader
    current_last_known = partition.last_known_elr
    isr = current_isr if target_isr is None else target_isr
    replicas = current_replicas if target_replicas is None else target_replicas
    removing = partition.removing_replicas if target_removing is None else target_removing
    adding = partition.adding_replicas if target_adding is None else target_adding
    elr, last_known = partition.elr, current_last_known
    # 1. completeReassignmentIfNeeded
    if removing or adding:
        completed = complete_reassignment(isr, replicas, removing, adding, behaviour=behaviour)
        if completed is not None:
            isr, replicas = completed
            removing = adding = ()
    # 2. maybePopulateTargetElr
    if elr_enabled:
        unclean_replicas = (unclean_shutdown_broker,) if unclean_shutdown_broker != NO_LEADER else ()
        elr, last_known = populate_target_elr(min_isr, isr, current_isr, elr, last_known, unclean_replicas)
    # 3. tryElection, among the replicas the LeaderAcceptor accepts of those the election can ask about: the target
    #    replicas, the current leader and the last known leader
    if acceptable is None:
        candidates = dict.fromkeys((*replicas, current_leader, *current_last_known))
        acceptable = tuple(r for r in candidates if accepts_as_leader(
            partition, brokers, r, broker_to_remove=broker_to_remove, broker_to_add=broker_to_add,
            unclean_shutdown_broker=unclean_shutdown_broker))
    isr, elr, record_leader, record_isr, record_lrs = try_election(
        partition, election, replicas, isr, elr, acceptable, elr_enabled=elr_enabled,
        use_last_known_leader=use_last_known_leader, behaviour=behaviour)
    # 4. triggerLeaderEpochBumpForReplicaReassignmentIfNeeded
    if (
        record_leader == NO_LEADER_CHANGE
        and replicas != current_replicas
        and reassignment_requires_leader_epoch_bump(replicas, current_replicas)
    ):
        record_leader = current_leader
    # 5. maybeUpdateRecordElr
    record_elr, record_last_known = maybe_update_record_elr(
        partition, elr, last_known, record_leader, record_isr, elr_enabled=elr_enabled,
        use_last_known_leader=use_last_known_leader)
    # 6. the ISR (never empty without ELR)
    if record_isr is None:
        record_isr = isr_record_field(isr, current_isr, elr_enabled)
    # 7. triggerLeaderEpochBumpForIsrShrinkIfNeeded
    if (
        record_leader == NO_LEADER_CHANGE
        and record_isr is not None
        and isr_shrink_requires_leader_epoch_bump(metadata_version, record_isr, current_isr)
    ):
        record_leader = current_leader
    # 8. maybeUpdateLastKnownLeader (the record's leader is -1 also when step 4 or 7 bumped the epoch of a
    #    leaderless partition: Kafka then records lastKnownElr [-1])
    if elr_enabled and use_last_known_leader:
        updated = last_known_leader_update(record_leader, record_isr, current_leader, current_last_known,
                                           behaviour=behaviour)
        if updated is not None:
            record_last_known = updated
    # 9. setAssignmentChanges
    record_replicas, record_dirs, record_removing, record_adding = set_assignment_changes(
        partition, brokers, replicas, removing, adding, metadata_version)
    # 10. leader recovery state
    if target_leader_recovery_state is not None and target_leader_recovery_state != partition.leader_recovery_state:
        record_lrs = target_leader_recovery_state
    # 11. no-op or the record at the MV's version
    record = PartitionChangeRecord(
        partition_id=partition_id,
        topic_id=topic_id,
        isr=record_isr,
        leader=record_leader,
        replicas=record_replicas,
        removing_replicas=record_removing,
        adding_replicas=record_adding,
        leader_recovery_state=record_lrs,
        directories=record_dirs,
        eligible_leader_replicas=record_elr,
        last_known_elr=record_last_known,
        version=partition_change_record_version(metadata_version),
    )
    return None if change_record_is_no_op(record) else record


def change_record_is_no_op(record: PartitionChangeRecord) -> bool:
    """§2.3 step 11 ``changeRecordIsNoOp``: no list field set, leader -2 and recovery state -1."""
    return (
        record.isr is None and record.eligible_leader_replicas is None and record.last_known_elr is None
        and record.leader == NO_LEADER_CHANGE and record.replicas is None and record.removing_replicas is None
        and record.adding_replicas is None and record.leader_recovery_state == NO_RECOVERY_CHANGE
        and record.directories is None
    )


def apply_records(
    partitions: Mapping[TopicPartition, PartitionRegistration], records: Iterable[PartitionChangeRecord]
) -> PersistentMap[TopicPartition, PartitionRegistration]:
    """Replay PartitionChangeRecords in order, each merged into the partition it names (§2.2)."""
    with persistent(partitions).mutate() as updated:
        for record in records:
            key = (record.topic_id, record.partition_id)
            updated[key] = merge(updated[key], record)
        return updated.finish()


def replay_clear_elr(
    partitions: Mapping[TopicPartition, PartitionRegistration],
    topics: Mapping[str, TopicInfo],
    record: ClearElrRecord,
) -> PersistentMap[TopicPartition, PartitionRegistration]:
    """§2.2/§2.7 ClearElrRecord (written when min.insync.replicas changes): every partition of the named topic
    (every topic for an empty name) with a non-empty ELR or lastKnownElr merges ELR := [], lastKnownElr := [],
    which bumps its partition epoch."""
    wanted = {t.topic_id for t in topics.values() if not record.topic_name or t.name == record.topic_name}
    return apply_records(partitions, [
        PartitionChangeRecord(partition_id=key[1], topic_id=key[0], eligible_leader_replicas=(), last_known_elr=())
        for key, p in sorted(partitions.items()) if key[0] in wanted and (p.elr or p.last_known_elr)
    ])
