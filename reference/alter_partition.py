"""AlterPartition (apiKey 56, v2–3) on the controller: a partition leader's conditional ISR update.

rules §2.10, ``ReplicationControlManager.alterPartition`` / ``validateAlterPartitionData``.
The KIP-497 text lets the leader change only the ISR; as implemented the change may also complete a
reassignment and elect another leader, which answers NEW_LEADER_ELECTED while writing the record.
"""

from __future__ import annotations

from dataclasses import dataclass
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
    merge,
    topic_effective_min_isr,
)
from kraftspec.reference.partition_rules import (
    KAFKA_4_3,
    PartitionBehaviour,
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


@dataclass(frozen=True, slots=True, kw_only=True)
class AlterPartitionPartition:
    """``AlterPartitionRequest.PartitionData``: the leader's proposal, conditional on both epochs."""

    partition_index: int
    leader_epoch: int
    new_isr_with_epochs: tuple[IsrMember, ...]
    partition_epoch: int
    leader_recovery_state: int = RECOVERED


@dataclass(frozen=True, slots=True, kw_only=True)
class AlterPartitionTopic:
    """``AlterPartitionRequest.TopicData`` (by topic id from v2)."""

    topic_id: str
    partitions: tuple[AlterPartitionPartition, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class AlterPartitionRequest:
    """``AlterPartitionRequest``: from broker ``broker_id`` at ``broker_epoch``; ``version`` 2 or 3."""

    broker_id: int
    broker_epoch: int
    topics: tuple[AlterPartitionTopic, ...]
    version: int = 3


@dataclass(frozen=True, slots=True, kw_only=True)
class AlterPartitionPartitionResult:
    """A partition's answer: on NONE the partition's state after the change; otherwise only the error."""

    partition_index: int
    error_code: Errors
    leader_id: int = 0
    leader_epoch: int = 0
    isr: tuple[int, ...] = ()
    leader_recovery_state: int = RECOVERED
    partition_epoch: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class AlterPartitionTopicResult:
    """A topic's answers, in request order."""

    topic_id: str
    partitions: tuple[AlterPartitionPartitionResult, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class AlterPartitionResponse:
    """``AlterPartitionResponse``: a top-level error (STALE_BROKER_EPOCH) or per-partition results."""

    error_code: Errors
    topics: tuple[AlterPartitionTopicResult, ...] = ()


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
    # The topic exists but not this partition index.
    if partition is None:
        return Errors.UNKNOWN_TOPIC_OR_PARTITION
    leader = partition.leader
    epoch_error = alter_partition_epoch_error(
        requester, data.leader_epoch, data.partition_epoch, leader, partition.leader_epoch, partition.partition_epoch
    )
    if epoch_error != Errors.NONE:
        return epoch_error
    # The proposed ISR must be replicas of the partition, each once.
    if not is_valid_isr(new_isr, partition.replicas):
        return Errors.INVALID_REQUEST
    # The leader proposing the change must stay in its own ISR.
    if leader not in new_isr:
        return Errors.INVALID_REQUEST
    if recovery_state != RECOVERED and recovery_state != RECOVERING:
        raise ValueError(f"invalid leader recovery state {recovery_state}")
    # A leader still recovering after an unclean election is its partition's only ISR member.
    if recovery_state == RECOVERING and len(new_isr) > 1:
        return Errors.INVALID_REQUEST
    # Recovery only ends: a recovered partition cannot go back to recovering.
    if partition.leader_recovery_state == RECOVERED and recovery_state == RECOVERING:
        return Errors.INVALID_REQUEST
    for broker_id, broker_epoch in new_isr_with_epochs:
        registration = brokers.get(broker_id)
        # Only a live, unfenced broker that is not shutting down joins an ISR, and in the incarnation the leader saw.
        if registration is None or not is_isr_member_eligible(
            registration.fenced, registration.in_controlled_shutdown, broker_epoch, registration.epoch
        ):
            return Errors.INELIGIBLE_REPLICA
    return Errors.NONE


def alter_partition(
    brokers: Mapping[int, BrokerRegistration],
    topics: Mapping[str, TopicInfo],
    partitions: Mapping[TopicPartition, PartitionRegistration],
    request: AlterPartitionRequest,
    *,
    metadata_version: int,
    elr_enabled: bool,
    behaviour: PartitionBehaviour = KAFKA_4_3,
) -> tuple[PersistentMap[TopicPartition, PartitionRegistration], AlterPartitionResponse, tuple[PartitionChangeRecord, ...]]:
    """§2.10 ``alterPartition``: ``(partitions', response, records)``; records merged into ``partitions'``.

    Step 0: an unregistered requester or a broker epoch mismatch fails the whole request with
    STALE_BROKER_EPOCH. Every partition is validated and built against the state before the request. A request
    naming no topic is answered NONE, empty, before any check (Kafka 4.3 ``QuorumController.alterPartition``
    completes it without running ``ReplicationControlManager.alterPartition``).
    """
    # A request naming no topic has nothing to check: it is answered at once.
    if not request.topics:
        return persistent(partitions), AlterPartitionResponse(error_code=Errors.NONE), ()
    registration = brokers.get(request.broker_id)
    # Only the current incarnation of a registered broker may change ISRs: a restarted leader's request is stale.
    if registration is None or registration.epoch != request.broker_epoch:
        return persistent(partitions), AlterPartitionResponse(error_code=Errors.STALE_BROKER_EPOCH), ()
    records: list[PartitionChangeRecord] = []
    topic_results = []
    for topic_data in request.topics:
        topic = topics.get(topic_data.topic_id)
        results = []
        for data in topic_data.partitions:
            # A topic id the controller does not know: none of its partitions can change.
            if topic is None:
                results.append(AlterPartitionPartitionResult(partition_index=data.partition_index,
                                                             error_code=Errors.UNKNOWN_TOPIC_ID))
                continue
            result, record = alter_partition_data(brokers, topic, partitions, request, data,
                                                  metadata_version=metadata_version, elr_enabled=elr_enabled,
                                                  behaviour=behaviour)
            results.append(result)
            if record is not None:
                records.append(record)
        topic_results.append(AlterPartitionTopicResult(topic_id=topic_data.topic_id, partitions=tuple(results)))
    # A partition named twice gets two records, each built on the state before the request, replayed in order.
    response = AlterPartitionResponse(error_code=Errors.NONE, topics=tuple(topic_results))
    return apply_records(partitions, records), response, tuple(records)


def alter_partition_data(
    brokers: Mapping[int, BrokerRegistration],
    topic: TopicInfo,
    partitions: Mapping[TopicPartition, PartitionRegistration],
    request: AlterPartitionRequest,
    data: AlterPartitionPartition,
    *,
    metadata_version: int,
    elr_enabled: bool,
    behaviour: PartitionBehaviour = KAFKA_4_3,
) -> tuple[AlterPartitionPartitionResult, Optional[PartitionChangeRecord]]:
    """§2.10 steps 2–4 for one partition of an AlterPartition (Kafka 4.3
    ``ReplicationControlManager.alterPartition``'s loop): validate the proposal, build the change, answer with the
    partition as the change leaves it."""
    index, requester = data.partition_index, request.broker_id
    new_isr_with_epochs = data.new_isr_with_epochs
    if request.version < 3:  # before v3 the ISR carries no broker epochs: none is checked
        new_isr_with_epochs = tuple((broker_id, -1) for broker_id, _ in new_isr_with_epochs)
    new_isr = tuple(broker_id for broker_id, _ in new_isr_with_epochs)
    partition = partitions.get((topic.topic_id, index))
    error = validate_alter_partition_data(brokers, requester, partition, data, new_isr_with_epochs, new_isr)
    if error != Errors.NONE or partition is None:
        return AlterPartitionPartitionResult(partition_index=index, error_code=error), None
    record = build_partition_change(
        partition,
        topic.topic_id,
        index,
        brokers=brokers,
        metadata_version=metadata_version,
        min_isr=topic_effective_min_isr(topic, partitions, index),
        target_isr=new_isr,
        target_leader_recovery_state=data.leader_recovery_state,
        election=Election.UNCLEAN if topic.unclean_leader_election_enable else Election.ONLINE,
        elr_enabled=elr_enabled,
        behaviour=behaviour,
    )
    if record is not None:
        partition = merge(partition, record)
        # The change elected another leader: the requester no longer speaks for the partition.
        if record.leader != requester and record.leader != NO_LEADER_CHANGE:
            return AlterPartitionPartitionResult(partition_index=index, error_code=Errors.NEW_LEADER_ELECTED), record
    return AlterPartitionPartitionResult(
        partition_index=index, error_code=Errors.NONE, leader_id=partition.leader, leader_epoch=partition.leader_epoch,
        isr=partition.isr, leader_recovery_state=partition.leader_recovery_state,
        partition_epoch=partition.partition_epoch), record
