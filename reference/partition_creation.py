"""Creating a partition with a manual replica assignment (CreateTopics / CreatePartitions).

rules §2.1 creation rule (``ReplicationControlManager.createTopic`` /
``createPartitions`` / ``buildPartitionRegistration``): ISR = the active assigned replicas in
assignment order, leader = ``isr[0]``, both epochs 0, RECOVERED. Automatic placement (the
``ReplicaPlacer``) is not modelled.
"""

from __future__ import annotations

from typing import Mapping, Optional

from kraftspec.reference.broker_registration import BrokerRegistration
from kraftspec.reference.errors import Errors
from kraftspec.reference.metadata_version import is_directory_assignment_supported, partition_change_record_version
from kraftspec.reference.partition import default_directory
from kraftspec.reference.partition_rules import RECOVERED
from kraftspec.reference.reassignment import validate_manual_assignment
from kraftspec.reference.records import PartitionRecord


def partition_record_version(metadata_version: int) -> int:
    """``MetadataVersion.partitionRecordVersion``: same thresholds as the change record (2 / 1 / 0)."""
    return partition_change_record_version(metadata_version)


def create_partition(
    brokers: Mapping[int, BrokerRegistration],
    topic_id: str,
    partition_id: int,
    replicas: tuple[int, ...],
    *,
    metadata_version: int,
) -> tuple[Errors, Optional[PartitionRecord]]:
    """§2.1: the PartitionRecord for a manually assigned partition, or the error.

    INVALID_REPLICA_ASSIGNMENT for an empty list, an unregistered or repeated broker; INVALID_REPLICATION_FACTOR
    when every assigned broker is fenced or in controlled shutdown. Directories (MV ≥ 3.7-IV2) are each
    broker's default directory; below that PartitionRecord v0 carries none.
    """
    error = validate_manual_assignment(brokers, replicas)
    if error != Errors.NONE:
        return error, None
    isr = tuple(r for r in replicas if brokers[r].is_active)
    # A partition needs at least one active replica to start with a leader.
    if not isr:
        return Errors.INVALID_REPLICATION_FACTOR, None
    directories: tuple[str, ...] = ()
    if is_directory_assignment_supported(metadata_version):
        directories = tuple(default_directory(brokers, r) for r in replicas)
    return Errors.NONE, PartitionRecord(
        partition_id=partition_id,
        topic_id=topic_id,
        replicas=replicas,
        isr=isr,
        leader=isr[0],
        leader_epoch=0,
        partition_epoch=0,
        leader_recovery_state=RECOVERED,
        directories=directories,
        version=partition_record_version(metadata_version),
    )
