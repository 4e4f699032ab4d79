"""ElectLeaders (apiKey 43) and the controller's periodic preferred / unclean elections.

rules §2.11, ``ReplicationControlManager.electLeaders`` / ``electLeader`` /
``maybeBalancePartitionLeaders`` / ``maybeElectUncleanLeaders``. Kafka iterates topics and
partitions in hash order; the reference uses topic name, then partition id, ascending, unless given the
``order`` Kafka took (as a trace states it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Optional, Sequence

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
from kraftspec.reference.records import NO_LEADER, PartitionChangeRecord

PREFERRED_ELECTION = 0
"""``ElectionType.PREFERRED`` on the wire."""
UNCLEAN_ELECTION = 1
"""``ElectionType.UNCLEAN`` on the wire."""
MAX_ELECTIONS_PER_IMBALANCE = 1000
"""``ReplicationControlManager.MAX_ELECTIONS_PER_IMBALANCE``: records per periodic run (§1.1)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ElectLeadersRequest:
    """``ElectLeadersRequest``: ``topic_partitions`` None means every partition of every topic."""

    election_type: int
    topic_partitions: Optional[tuple[tuple[str, tuple[int, ...]], ...]]


@dataclass(frozen=True, slots=True, kw_only=True)
class ElectLeadersPartitionResult:
    """One partition's answer."""

    partition_id: int
    error_code: Errors


@dataclass(frozen=True, slots=True, kw_only=True)
class ElectLeadersTopicResult:
    """A topic's answers (by topic name)."""

    topic: str
    partition_results: tuple[ElectLeadersPartitionResult, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ElectLeadersResponse:
    """``ElectLeadersResponse``: top-level INVALID_REQUEST for an unknown election type, else per partition."""

    error_code: Errors
    replica_election_results: tuple[ElectLeadersTopicResult, ...] = ()


Brokers = Mapping[int, BrokerRegistration]
Topics = Mapping[str, TopicInfo]
Partitions = Mapping[TopicPartition, PartitionRegistration]


def _topic_by_name(topics: Topics, name: str) -> Optional[TopicInfo]:
    for topic in topics.values():
        if topic.name == name:
            return topic
    return None


def elect_leader(
    brokers: Brokers,
    topics: Topics,
    partitions: Partitions,
    topic_name: str,
    partition_id: int,
    election_type: int,
    *,
    metadata_version: int,
    elr_enabled: bool,
    behaviour: PartitionBehaviour = KAFKA_4_3,
) -> tuple[Errors, Optional[PartitionChangeRecord]]:
    """§2.11 ``electLeader``: one partition's error and record.

    PREFERRED with the preferred replica leading, or UNCLEAN with any leader → ELECTION_NOT_NEEDED; no
    record → PREFERRED_LEADER_NOT_AVAILABLE / ELIGIBLE_LEADERS_NOT_AVAILABLE. A PREFERRED run that only
    changes other fields (the ELR, say) still answers NONE.
    """
    topic = _topic_by_name(topics, topic_name)
    partition = None if topic is None else partitions.get((topic.topic_id, partition_id))
    # No such topic or partition to elect for.
    if topic is None or partition is None:
        return Errors.UNKNOWN_TOPIC_OR_PARTITION, None
    preferred = partition.replicas[0] if partition.replicas else NO_LEADER
    # The preferred replica already leads.
    if election_type == PREFERRED_ELECTION and partition.leader == preferred:
        return Errors.ELECTION_NOT_NEEDED, None
    # An unclean election is only for a partition without a leader.
    if election_type == UNCLEAN_ELECTION and partition.leader != NO_LEADER:
        return Errors.ELECTION_NOT_NEEDED, None
    record = build_partition_change(
        partition,
        topic.topic_id,
        partition_id,
        brokers=brokers,
        metadata_version=metadata_version,
        min_isr=topic_effective_min_isr(topic, partitions, partition_id),
        election=Election.PREFERRED if election_type == PREFERRED_ELECTION else Election.UNCLEAN,
        elr_enabled=elr_enabled,
        behaviour=behaviour,
    )
    # Nothing changed: no replica the election may choose can lead.
    if record is None:
        if election_type == PREFERRED_ELECTION:
            return Errors.PREFERRED_LEADER_NOT_AVAILABLE, None
        return Errors.ELIGIBLE_LEADERS_NOT_AVAILABLE, None
    return Errors.NONE, record


def elect_leaders(
    brokers: Brokers,
    topics: Topics,
    partitions: Partitions,
    request: ElectLeadersRequest,
    *,
    metadata_version: int,
    elr_enabled: bool,
    behaviour: PartitionBehaviour = KAFKA_4_3,
    order: Sequence[tuple[str, Sequence[int]]] = (),
) -> tuple[PersistentMap[TopicPartition, PartitionRegistration], ElectLeadersResponse, tuple[PartitionChangeRecord, ...]]:
    """§2.11 ``electLeaders``: ``(partitions', response, records)``; all partitions are built on the old state.

    With ``topic_partitions`` None every partition is tried and ELECTION_NOT_NEEDED answers are left out; Kafka
    visits topics in ``topicsByName``'s and partitions in the topic's map's hash order: ``order`` (``[(topic name,
    partition ids)]``, as a trace states Kafka's) comes first, the rest by name and id.

    As Kafka 4.3 answers: an empty, non-null partition list is answered NONE, empty, before any check
    (``QuorumController.electLeaders``); an unknown election type throws INVALID_REQUEST
    (``ReplicationControlManager.electionType``), which ``ControllerApis.handleElectLeaders`` answers with
    ``ElectLeadersRequest.getErrorResponse``: the top-level error and the same error for every requested partition.
    """
    if request.topic_partitions is not None and not request.topic_partitions:
        return persistent(partitions), ElectLeadersResponse(error_code=Errors.NONE), ()
    # Only preferred and unclean elections exist.
    if request.election_type not in (PREFERRED_ELECTION, UNCLEAN_ELECTION):
        invalid = tuple(
            ElectLeadersTopicResult(topic=name, partition_results=tuple(
                ElectLeadersPartitionResult(partition_id=pid, error_code=Errors.INVALID_REQUEST) for pid in ids))
            for name, ids in request.topic_partitions or ())
        return persistent(partitions), ElectLeadersResponse(error_code=Errors.INVALID_REQUEST,
                                                            replica_election_results=invalid), ()
    records: list[PartitionChangeRecord] = []
    results = []
    if request.topic_partitions is None:
        wanted = [
            (topic.name, tuple(sorted(pid for tid, pid in partitions if tid == topic.topic_id)))
            for topic in sorted(topics.values(), key=lambda t: t.name)
        ]
        if order:
            wanted = _in_order(wanted, order)
    else:
        wanted = list(request.topic_partitions)
    for topic_name, partition_ids in wanted:
        answers = []
        for partition_id in partition_ids:
            error, record = elect_leader(
                brokers, topics, partitions, topic_name, partition_id, request.election_type,
                metadata_version=metadata_version, elr_enabled=elr_enabled, behaviour=behaviour,
            )
            if record is not None:
                records.append(record)
            if request.topic_partitions is None and error == Errors.ELECTION_NOT_NEEDED:
                continue
            answers.append(ElectLeadersPartitionResult(partition_id=partition_id, error_code=error))
        results.append(ElectLeadersTopicResult(topic=topic_name, partition_results=tuple(answers)))
    response = ElectLeadersResponse(error_code=Errors.NONE, replica_election_results=tuple(results))
    return apply_records(partitions, records), response, tuple(records)


def _in_order(wanted: list[tuple[str, tuple[int, ...]]],
              order: Sequence[tuple[str, Sequence[int]]]) -> list[tuple[str, tuple[int, ...]]]:
    """``wanted`` (topic name, partition ids) with the topics and partitions ``order`` names first, in its order."""
    topic_rank = {name: i for i, (name, _) in reversed(list(enumerate(order)))}
    ids_rank = {name: {pid: i for i, pid in reversed(list(enumerate(ids)))} for name, ids in reversed(list(order))}
    arranged = []
    for name, ids in sorted(wanted, key=lambda entry: topic_rank.get(entry[0], len(topic_rank))):
        rank = ids_rank.get(name, {})
        arranged.append((name, tuple(sorted(ids, key=lambda pid: rank.get(pid, len(rank))))))
    return arranged


def _keys_in_order(partitions: Partitions, order: Sequence[TopicPartition]) -> list[TopicPartition]:
    """The partitions' keys, those ``order`` names first (in its order), then ascending."""
    keys = sorted(partitions)
    if order:
        rank = {key: i for i, key in reversed(list(enumerate(order)))}
        keys.sort(key=lambda key: rank.get(key, len(rank)))
    return keys


def maybe_balance_partition_leaders(
    brokers: Brokers, topics: Topics, partitions: Partitions, *, metadata_version: int, elr_enabled: bool,
    behaviour: PartitionBehaviour = KAFKA_4_3,
    order: Sequence[TopicPartition] = (),
) -> tuple[tuple[PartitionChangeRecord, ...], bool]:
    """§2.11 auto leader rebalance: PREFERRED builds for imbalanced partitions (leader ≠ replicas[0]).

    Stops at 1000 records; the flag says whether to run again at once (Kafka: ``records >= 1000``). Kafka visits
    its ``imbalancedPartitions`` set in hash order: ``order`` (as a trace states Kafka's) first, then ascending.
    """
    records: list[PartitionChangeRecord] = []
    for key in _keys_in_order(partitions, order):
        if len(records) >= MAX_ELECTIONS_PER_IMBALANCE:
            break
        partition = partitions[key]
        topic = topics.get(key[0])
        if topic is None or (partition.replicas and partition.leader == partition.replicas[0]):
            continue
        record = build_partition_change(
            partition, key[0], key[1], brokers=brokers, metadata_version=metadata_version,
            min_isr=topic_effective_min_isr(topic, partitions, key[1]),
            election=Election.PREFERRED, elr_enabled=elr_enabled, behaviour=behaviour,
        )
        if record is not None:
            records.append(record)
    return tuple(records), len(records) >= MAX_ELECTIONS_PER_IMBALANCE


def maybe_elect_unclean_leaders(
    brokers: Brokers, topics: Topics, partitions: Partitions, *, metadata_version: int, elr_enabled: bool,
    behaviour: PartitionBehaviour = KAFKA_4_3,
    order: Sequence[TopicPartition] = (),
) -> tuple[tuple[PartitionChangeRecord, ...], bool]:
    """§2.11 periodic unclean election: leaderless partitions of topics with unclean election enabled.

    Each runs ``electLeader(UNCLEAN)``; at most 1000 records per run, flag as for rebalancing. Kafka visits
    ``BrokersToIsrs.partitionsWithNoLeader`` in hash order: ``order`` first, then ascending.
    """
    records: list[PartitionChangeRecord] = []
    for key in _keys_in_order(partitions, order):
        if len(records) >= MAX_ELECTIONS_PER_IMBALANCE:
            break
        topic = topics.get(key[0])
        if topic is None or partitions[key].leader != NO_LEADER or not topic.unclean_leader_election_enable:
            continue
        _, record = elect_leader(
            brokers, topics, partitions, topic.name, key[1], UNCLEAN_ELECTION,
            metadata_version=metadata_version, elr_enabled=elr_enabled, behaviour=behaviour,
        )
        if record is not None:
            records.append(record)
    return tuple(records), len(records) >= MAX_ELECTIONS_PER_IMBALANCE
