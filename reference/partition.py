"""A partition's registration, how a PartitionChangeRecord merges into it, and the change builder.

kraft-semantics §2.1–§2.7 (``PartitionRegistration.java``, ``PartitionChangeBuilder.java``). The
builder follows Kafka's step order exactly and returns the record Kafka would write, or ``None``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Container, Iterable, Mapping, Optional

from kraftspec.reference.broker_registration import BrokerRegistration
from kraftspec.reference.frozen import PersistentMap, builder, persistent, slotted
from kraftspec.reference.metadata_version import is_directory_assignment_supported, partition_change_record_version
from kraftspec.reference.partition_rules import (
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


@slotted
@dataclass(frozen=True)
class TopicInfo:
    """What the partition rules need of a topic: its name, id and the two configs they read (§2.3, §2.4)."""

    name: str
    topic_id: str
    unclean_leader_election_enable: bool = False
    min_insync_replicas: int = 1


@slotted
@dataclass(frozen=True, kw_only=True)
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


_registration = builder(PartitionRegistration)
_change_record = builder(PartitionChangeRecord)


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
    return _registration(
        replicas,
        directories,
        partition.isr if record.isr is None else record.isr,
        partition.removing_replicas if record.removing_replicas is None else record.removing_replicas,
        partition.adding_replicas if record.adding_replicas is None else record.adding_replicas,
        partition.elr if record.eligible_leader_replicas is None else record.eligible_leader_replicas,
        partition.last_known_elr if record.last_known_elr is None else record.last_known_elr,
        partition.leader if record.leader == NO_LEADER_CHANGE else record.leader,
        partition.leader_recovery_state if record.leader_recovery_state == NO_RECOVERY_CHANGE else record.leader_recovery_state,
        merged_leader_epoch(partition.leader_epoch, record.leader),
        partition.partition_epoch + 1,
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


class LeaderAcceptor:
    """§2.4/§2.9 ``LeaderAcceptor``, Kafka's ``IntPredicate``: ``replica in acceptor`` is decided when the
    election asks, by ``is_acceptable_leader`` with the directory ``partition`` assigns (others UNASSIGNED)."""

    __slots__ = ("partition", "brokers", "broker_to_remove", "broker_to_add", "unclean_shutdown_broker")

    def __init__(
        self,
        partition: PartitionRegistration,
        brokers: Mapping[int, BrokerRegistration],
        broker_to_remove: int,
        broker_to_add: int,
        unclean_shutdown_broker: int,
    ) -> None:
        self.partition = partition
        self.brokers = brokers
        self.broker_to_remove = broker_to_remove
        self.broker_to_add = broker_to_add
        self.unclean_shutdown_broker = unclean_shutdown_broker

    def __contains__(self, replica: int) -> bool:
        registration = self.brokers.get(replica)
        if registration is None:
            return is_acceptable_leader(
                replica, False, False, False, self.broker_to_remove, self.broker_to_add, self.unclean_shutdown_broker
            )
        partition = self.partition
        return is_acceptable_leader(
            replica,
            True,
            not registration.fenced and not registration.in_controlled_shutdown,
            is_directory_online(
                _assigned_directory(partition.replicas, partition.directories, replica, UNASSIGNED_DIR), registration.log_dirs
            ),
            self.broker_to_remove,
            self.broker_to_add,
            self.unclean_shutdown_broker,
        )


def topic_effective_min_isr(topic: TopicInfo, partitions: Mapping[TopicPartition, PartitionRegistration], partition_id: int) -> int:
    """§2.3 ``getTopicEffectiveMinIsr``: min ISR capped by the replication factor of the topic's partition 0."""
    first = partitions.get((topic.topic_id, 0)) or partitions[(topic.topic_id, partition_id)]
    return effective_min_isr(topic.min_insync_replicas, len(first.replicas))


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
    use_last_known_leader: bool = True,
    broker_to_remove: int = NO_LEADER,
    broker_to_add: int = NO_LEADER,
    unclean_shutdown_broker: int = NO_LEADER,
    acceptable: Optional[tuple[int, ...]] = None,
) -> Optional[PartitionChangeRecord]:
    """§2.3 ``PartitionChangeBuilder.build``, steps 1–11 in Kafka's order; ``None`` when nothing changes.

    ``min_isr`` is the effective min ISR; ``acceptable`` overrides the broker-derived acceptor (Kafka's
    ``IntPredicate``) with the replicas acceptable as leader. Step 8 sets the last known leader whenever the
    record's leader is -1 and none is known ("first time leaderless"); the KIP text stores all ELR members there.
    Kafka 4.3 ``PartitionChangeBuilder.maybeUpdateLastKnownLeader`` tests only the record's leader, so a leaderless
    partition whose leader epoch step 4 bumps (a reassignment dropping a replica) records lastKnownElr ``[-1]``.
    """
    current_isr = partition.isr
    current_replicas = partition.replicas
    current_elr = partition.elr
    current_last_known = partition.last_known_elr
    isr = current_isr if target_isr is None else target_isr
    replicas = current_replicas if target_replicas is None else target_replicas
    removing = partition.removing_replicas if target_removing is None else target_removing
    adding = partition.adding_replicas if target_adding is None else target_adding
    elr = current_elr
    last_known = current_last_known
    current_leader = partition.leader
    # 1. completeReassignmentIfNeeded
    if removing or adding:
        completed = complete_reassignment(isr, replicas, removing, adding)
        if completed is not None:
            isr, replicas = completed
            removing = adding = ()
    # 2. maybePopulateTargetElr
    if elr_enabled:
        unclean_replicas = (unclean_shutdown_broker,) if unclean_shutdown_broker != NO_LEADER else ()
        elr, last_known = populate_target_elr(min_isr, isr, current_isr, elr, last_known, unclean_replicas)
    # 3. tryElection (the election asks only about target replicas, the current leader and lastKnownElr)
    acceptor: Container[int] = (
        LeaderAcceptor(partition, brokers, broker_to_remove, broker_to_add, unclean_shutdown_broker) if acceptable is None else acceptable
    )
    node, unclean = elect_leader(
        election, current_leader, replicas, isr, elr, current_last_known, acceptor, elr_enabled, use_last_known_leader
    )
    record_leader = NO_LEADER_CHANGE
    record_isr: Optional[tuple[int, ...]] = None
    record_lrs = NO_RECOVERY_CHANGE
    if node != current_leader:
        if node in elr:
            isr = (node,)
            elr = tuple(r for r in elr if r != node)
        record_leader = node
        if unclean:
            record_isr = (node,)
            if partition.leader_recovery_state != RECOVERING:
                record_lrs = RECOVERING
    # 4. triggerLeaderEpochBumpForReplicaReassignmentIfNeeded
    if (
        record_leader == NO_LEADER_CHANGE
        and replicas != current_replicas
        and reassignment_requires_leader_epoch_bump(replicas, current_replicas)
    ):
        record_leader = current_leader
    # 5. maybeUpdateRecordElr
    record_elr: Optional[tuple[int, ...]] = None
    record_last_known: Optional[tuple[int, ...]] = None
    if record_isr is not None or not elr_enabled:
        elr = last_known = ()
    if elr != current_elr:
        record_elr = elr
    if not use_last_known_leader:
        leaderless = record_leader == NO_LEADER or (record_leader == NO_LEADER_CHANGE and current_leader == NO_LEADER)
        if not leaderless and last_known != current_last_known:
            record_last_known = last_known
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
        if record_leader == NO_LEADER and not current_last_known:
            record_last_known = (current_leader,)
        elif record_leader >= 0 and current_last_known:
            record_last_known = ()
    # 9. setAssignmentChanges
    record_dirs: Optional[tuple[str, ...]] = None
    record_replicas: Optional[tuple[int, ...]] = None
    if replicas and replicas != current_replicas:
        if is_directory_assignment_supported(metadata_version):
            current_dirs = partition.directories
            dirs = tuple(_assigned_directory(current_replicas, current_dirs, r, default_directory(brokers, r)) for r in replicas)
            if dirs != current_dirs:
                record_dirs = dirs
        record_replicas = replicas
    record_removing = removing if removing != partition.removing_replicas else None
    record_adding = adding if adding != partition.adding_replicas else None
    # 10. leader recovery state
    if target_leader_recovery_state is not None and target_leader_recovery_state != partition.leader_recovery_state:
        record_lrs = target_leader_recovery_state
    # 11. no-op or the record at the MV's version
    record = _change_record(
        partition_id,
        topic_id,
        record_isr,
        record_leader,
        record_replicas,
        record_removing,
        record_adding,
        record_lrs,
        record_dirs,
        record_elr,
        record_last_known,
        partition_change_record_version(metadata_version),
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
