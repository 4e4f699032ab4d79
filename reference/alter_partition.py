"""AlterPartition (apiKey 56, v2–3) on the controller: a partition leader's conditional ISR update.

kraft-semantics §2.10, ``ReplicationControlManager.alterPartition`` / ``validateAlterPartitionData``.
The KIP-497 text lets the leader change only the ISR; as implemented the change may also complete a
reassignment and elect another leader, which answers NEW_LEADER_ELECTED while writing the record.
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import itemgetter
from typing import Mapping

from kraftspec.reference.broker_registration import BrokerRegistration
from kraftspec.reference.errors import Errors
from kraftspec.reference.frozen import PersistentMap, builder, persistent, slotted
from kraftspec.reference.partition import (
    PartitionRegistration,
    TopicInfo,
    TopicPartition,
    apply_records,
    build_partition_change,
    merge,
    topic_effective_min_isr,
)
from kraftspec.reference.partition_rules import (
    RECOVERED,
    RECOVERING,
    Election,
    alter_partition_epoch_error,
    is_isr_member_eligible,
    is_valid_isr,
)
from kraftspec.reference.records import NO_LEADER_CHANGE, PartitionChangeRecord

IsrMember = tuple[int, int]
"""``BrokerState``: ``(broker_id, broker_epoch)``; epoch -1 skips the epoch check (and is all v<3 carries)."""
_broker_id = itemgetter(0)  # an IsrMember's broker id
# Enum members bound once: ``Enum.MEMBER`` goes through ``EnumType.__getattr__`` (~70 ns each on the hot path).
_NONE, _ONLINE, _UNCLEAN = Errors.NONE, Election.ONLINE, Election.UNCLEAN


@slotted
@dataclass(frozen=True)
class AlterPartitionPartition:
    """``AlterPartitionRequest.PartitionData``: the leader's proposal, conditional on both epochs."""

    partition_index: int
    leader_epoch: int
    new_isr_with_epochs: tuple[IsrMember, ...]
    partition_epoch: int
    leader_recovery_state: int = RECOVERED


@slotted
@dataclass(frozen=True)
class AlterPartitionTopic:
    """``AlterPartitionRequest.TopicData`` (by topic id from v2)."""

    topic_id: str
    partitions: tuple[AlterPartitionPartition, ...]


@slotted
@dataclass(frozen=True)
class AlterPartitionRequest:
    """``AlterPartitionRequest``: from broker ``broker_id`` at ``broker_epoch``; ``version`` 2 or 3."""

    broker_id: int
    broker_epoch: int
    topics: tuple[AlterPartitionTopic, ...]
    version: int = 3


@slotted
@dataclass(frozen=True)
class AlterPartitionPartitionResult:
    """A partition's answer: on NONE the partition's state after the change; otherwise only the error."""

    partition_index: int
    error_code: Errors
    leader_id: int = 0
    leader_epoch: int = 0
    isr: tuple[int, ...] = ()
    leader_recovery_state: int = RECOVERED
    partition_epoch: int = 0


@slotted
@dataclass(frozen=True)
class AlterPartitionTopicResult:
    """A topic's answers, in request order."""

    topic_id: str
    partitions: tuple[AlterPartitionPartitionResult, ...]


@slotted
@dataclass(frozen=True)
class AlterPartitionResponse:
    """``AlterPartitionResponse``: a top-level error (STALE_BROKER_EPOCH) or per-partition results."""

    error_code: Errors
    topics: tuple[AlterPartitionTopicResult, ...] = ()


_partition_result = builder(AlterPartitionPartitionResult)
_topic_result = builder(AlterPartitionTopicResult)
_response = builder(AlterPartitionResponse)


def validate_alter_partition_data(
    brokers: Mapping[int, BrokerRegistration],
    requester: int,
    partition: PartitionRegistration | None,
    data: AlterPartitionPartition,
    new_isr_with_epochs: tuple[IsrMember, ...],
    new_isr: tuple[int, ...],
) -> Errors:
    """§2.10 step 2: the first failing per-partition check, in Kafka's order, or NONE.

    A ``leader_recovery_state`` other than 0/1 is outside the protocol: Kafka 4.3
    ``ReplicationControlManager.validateAlterPartitionData`` reads it with ``LeaderRecoveryState.of``, which
    throws, only after the partition, epoch and ISR checks passed (so a stale epoch still answers, e.g.
    FENCED_LEADER_EPOCH); then ValueError.
    """
    recovery_state = data.leader_recovery_state
    if partition is None:
        return Errors.UNKNOWN_TOPIC_OR_PARTITION
    leader = partition.leader
    epoch_error = alter_partition_epoch_error(
        requester, data.leader_epoch, data.partition_epoch, leader, partition.leader_epoch, partition.partition_epoch
    )
    if epoch_error != _NONE:
        return epoch_error
    if not is_valid_isr(new_isr, partition.replicas):
        return Errors.INVALID_REQUEST
    if leader not in new_isr:
        return Errors.INVALID_REQUEST
    if recovery_state != RECOVERED and recovery_state != RECOVERING:
        raise ValueError(f"invalid leader recovery state {recovery_state}")
    if recovery_state == RECOVERING and len(new_isr) > 1:
        return Errors.INVALID_REQUEST
    if partition.leader_recovery_state == RECOVERED and recovery_state == RECOVERING:
        return Errors.INVALID_REQUEST
    for broker_id, broker_epoch in new_isr_with_epochs:
        registration = brokers.get(broker_id)
        if registration is None or not is_isr_member_eligible(
            registration.fenced, registration.in_controlled_shutdown, broker_epoch, registration.epoch
        ):
            return Errors.INELIGIBLE_REPLICA
    return _NONE


def alter_partition(
    brokers: Mapping[int, BrokerRegistration],
    topics: Mapping[str, TopicInfo],
    partitions: Mapping[TopicPartition, PartitionRegistration],
    request: AlterPartitionRequest,
    *,
    metadata_version: int,
    elr_enabled: bool,
) -> tuple[PersistentMap[TopicPartition, PartitionRegistration], AlterPartitionResponse, tuple[PartitionChangeRecord, ...]]:
    """§2.10 ``alterPartition``: ``(partitions', response, records)``; records merged into ``partitions'``.

    Step 0: an unregistered requester or a broker epoch mismatch fails the whole request with
    STALE_BROKER_EPOCH. Every partition is validated and built against the state before the request. A request
    naming no topic is answered NONE, empty, before any check (Kafka 4.3 ``QuorumController.alterPartition``
    completes it without running ``ReplicationControlManager.alterPartition``).
    """
    if not request.topics:
        return persistent(partitions), _response(_NONE, ()), ()
    requester = request.broker_id
    registration = brokers.get(requester)
    if registration is None or registration.epoch != request.broker_epoch:
        return persistent(partitions), AlterPartitionResponse(Errors.STALE_BROKER_EPOCH), ()
    without_epochs = request.version < 3
    records: list[PartitionChangeRecord] = []
    merged: dict[TopicPartition, PartitionRegistration] = {}
    topic_results = []
    for topic_data in request.topics:
        topic = topics.get(topic_data.topic_id)
        if topic is None:
            topic_results.append(AlterPartitionTopicResult(topic_data.topic_id, tuple(
                AlterPartitionPartitionResult(p.partition_index, Errors.UNKNOWN_TOPIC_ID) for p in topic_data.partitions
            )))
            continue
        topic_id = topic.topic_id
        election = _UNCLEAN if topic.unclean_leader_election_enable else _ONLINE
        results = []
        for data in topic_data.partitions:
            index = data.partition_index
            new_isr_with_epochs = data.new_isr_with_epochs
            if without_epochs:
                new_isr_with_epochs = tuple((broker_id, -1) for broker_id, _ in new_isr_with_epochs)
            key = (topic_id, index)
            partition = partitions.get(key)
            new_isr = tuple(map(_broker_id, new_isr_with_epochs))
            error = validate_alter_partition_data(brokers, requester, partition, data, new_isr_with_epochs, new_isr)
            if error != _NONE or partition is None:
                results.append(AlterPartitionPartitionResult(index, error))
                continue
            record = build_partition_change(
                partition,
                topic_id,
                index,
                brokers=brokers,
                metadata_version=metadata_version,
                min_isr=topic_effective_min_isr(topic, partitions, index),
                target_isr=new_isr,
                target_leader_recovery_state=data.leader_recovery_state,
                election=election,
                elr_enabled=elr_enabled,
            )
            if record is not None:
                records.append(record)
                partition = merge(partition, record)
                merged[key] = partition
                if record.leader != requester and record.leader != NO_LEADER_CHANGE:
                    results.append(AlterPartitionPartitionResult(index, Errors.NEW_LEADER_ELECTED))
                    continue
            results.append(_partition_result(index, _NONE, partition.leader, partition.leader_epoch, partition.isr,
                                             partition.leader_recovery_state, partition.partition_epoch))
        topic_results.append(_topic_result(topic_data.topic_id, tuple(results)))
    response = _response(_NONE, tuple(topic_results))
    if len(merged) == len(records):
        new_partitions = persistent(partitions)
        for key, partition in merged.items():  # ``set`` per change: cheaper than ``update`` for the usual one
            new_partitions = new_partitions.set(key, partition)
    else:  # a partition named twice: Kafka replays both records, the second built on the old state
        new_partitions = apply_records(partitions, records)
    return new_partitions, response, tuple(records)
