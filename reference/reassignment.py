"""AlterPartitionReassignments (KIP-455) for one partition: start, change or cancel a reassignment.

rules §2.8, ``ReplicationControlManager.alterPartitionReassignment`` /
``changePartitionReassignment`` / ``cancelPartitionReassignment``, ``PartitionReassignmentReplicas``
and ``PartitionReassignmentRevert``. Completion happens in any later build (§2.3 step 1).
"""

from __future__ import annotations

from typing import Mapping, Optional

from kraftspec.reference.broker_registration import BrokerRegistration
from kraftspec.reference.errors import Errors
from kraftspec.reference.frozen import PersistentMap, persistent
from kraftspec.reference.partition import (
    PartitionRegistration,
    TopicInfo,
    TopicPartition,
    apply_records,
    build_partition_change,
    topic_effective_min_isr,
)
from kraftspec.reference.partition_rules import KAFKA_4_3, Election, PartitionBehaviour
from kraftspec.reference.records import PartitionChangeRecord


def reassignment_replicas(
    current: tuple[int, ...], target: tuple[int, ...]
) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """§2.8 ``PartitionReassignmentReplicas``: ``(replicas, removing, adding)`` = (T + removing, C − T, T − C), sorted sets."""
    removing = tuple(sorted(set(current) - set(target)))
    adding = tuple(sorted(set(target) - set(current)))
    return target + removing, removing, adding


def reassignment_revert(partition: PartitionRegistration) -> tuple[tuple[int, ...], tuple[int, ...], bool]:
    """§2.8 ``PartitionReassignmentRevert``: ``(replicas, isr, unclean)`` without the adding replicas.

    An ISR left empty becomes ``[first remaining replica]`` and the revert is unclean.
    """
    replicas = tuple(r for r in partition.replicas if r not in partition.adding_replicas)
    isr = tuple(r for r in partition.isr if r not in partition.adding_replicas)
    if not isr:
        return replicas, replicas[:1], True
    return replicas, isr, False


def validate_manual_assignment(brokers: Mapping[int, BrokerRegistration], replicas: tuple[int, ...]) -> Errors:
    """``validateManualPartitionAssignment``: non-empty, every broker registered, none twice (ascending check)."""
    # A partition needs at least one replica.
    if not replicas:
        return Errors.INVALID_REPLICA_ASSIGNMENT
    previous: Optional[int] = None
    for broker_id in sorted(replicas):
        # Each replica is a distinct, registered broker.
        if broker_id not in brokers or broker_id == previous:
            return Errors.INVALID_REPLICA_ASSIGNMENT
        previous = broker_id
    return Errors.NONE


def alter_partition_reassignment(
    brokers: Mapping[int, BrokerRegistration],
    topics: Mapping[str, TopicInfo],
    partitions: Mapping[TopicPartition, PartitionRegistration],
    topic_name: str,
    partition_id: int,
    target_replicas: Optional[tuple[int, ...]],
    *,
    metadata_version: int,
    elr_enabled: bool,
    behaviour: PartitionBehaviour = KAFKA_4_3,
    allow_replication_factor_change: bool = True,
) -> tuple[PersistentMap[TopicPartition, PartitionRegistration], Errors, tuple[PartitionChangeRecord, ...]]:
    """§2.8 one partition of AlterPartitionReassignments: ``(partitions', error, records)``.

    ``target_replicas`` None cancels (NO_REASSIGNMENT_IN_PROGRESS if none; an unclean revert needs
    unclean election on the topic, else INVALID_REPLICA_ASSIGNMENT). Otherwise the target is validated
    (INVALID_REPLICA_ASSIGNMENT), its size checked unless KIP-860's flag allows a change
    (INVALID_REPLICATION_FACTOR), and removing/adding are set only when non-empty, as Kafka does. Only the
    cancellation elects UNCLEAN on a topic with unclean leader election enabled; a new or changed target builds
    with the ONLINE election whatever the topic says (Kafka 4.3 ``ReplicationControlManager.changePartitionReassignment``
    never calls ``setElection``; ``cancelPartitionReassignment`` does).
    """
    topic = next((t for t in topics.values() if t.name == topic_name), None)
    key = (topic.topic_id, partition_id) if topic is not None else None
    partition = partitions.get(key) if key is not None else None
    # No such topic or partition to reassign.
    if topic is None or partition is None or key is None:
        return persistent(partitions), Errors.UNKNOWN_TOPIC_OR_PARTITION, ()
    election = Election.UNCLEAN if topic.unclean_leader_election_enable else Election.ONLINE
    min_isr = topic_effective_min_isr(topic, partitions, partition_id)
    if target_replicas is None:
        # A cancellation needs a reassignment to cancel.
        if not partition.removing_replicas and not partition.adding_replicas:
            return persistent(partitions), Errors.NO_REASSIGNMENT_IN_PROGRESS, ()
        replicas, isr, unclean = reassignment_revert(partition)
        # Reverting would leave no ISR member, which only an unclean election fixes: refused unless the topic allows it.
        if unclean and not topic.unclean_leader_election_enable:
            return persistent(partitions), Errors.INVALID_REPLICA_ASSIGNMENT, ()
        record = build_partition_change(
            partition, topic.topic_id, partition_id, brokers=brokers, metadata_version=metadata_version,
            min_isr=min_isr, target_isr=isr, target_replicas=replicas, target_removing=(), target_adding=(),
            election=election, elr_enabled=elr_enabled, behaviour=behaviour,
        )
    else:
        error = validate_manual_assignment(brokers, target_replicas)
        if error != Errors.NONE:
            return persistent(partitions), error, ()
        current_rf = len([r for r in partition.replicas if r not in partition.removing_replicas])
        # A reassignment moves replicas; changing their number needs the explicit permission (KIP-860).
        if not allow_replication_factor_change and len(target_replicas) != current_rf:
            return persistent(partitions), Errors.INVALID_REPLICATION_FACTOR, ()
        replicas, removing, adding = reassignment_replicas(partition.replicas, target_replicas)
        record = build_partition_change(
            partition, topic.topic_id, partition_id, brokers=brokers, metadata_version=metadata_version,
            min_isr=min_isr,
            target_replicas=replicas if replicas != partition.replicas else None,
            target_removing=removing or None,
            target_adding=adding or None,
            election=Election.ONLINE,
            elr_enabled=elr_enabled,
            behaviour=behaviour,
        )
    records = () if record is None else (record,)
    return apply_records(partitions, records), Errors.NONE, records
