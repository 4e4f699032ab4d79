"""What broker lifecycle events do to partitions (rules §2.9, ``ReplicationControlManager``).

Every handler returns the PartitionChangeRecords Kafka writes for the event, in Kafka's order; the
caller writes them together with its broker record (fence/ICS/unregister/register) in the order of
the §2.9 table and merges them with :func:`kraftspec.reference.partition.merge`. Kafka iterates its
``BrokersToIsrs`` index (hash order); the reference visits partitions in ascending key order
``(topic_id, partition_id)`` so that the result is deterministic, or in the ``order`` given (the order Kafka
took, as a trace states it). Partitions of topics missing from ``topics`` are skipped, as Kafka skips unknown
topic ids.
"""

from __future__ import annotations

from typing import Callable, Iterable, Mapping, Sequence

from kraftspec.reference.broker_registration import BrokerRegistration
from kraftspec.reference.partition import (
    PartitionRegistration,
    TopicInfo,
    TopicPartition,
    build_partition_change,
    topic_effective_min_isr,
)
from kraftspec.reference.partition_rules import KAFKA_4_3, Election, PartitionBehaviour
from kraftspec.reference.records import NO_LEADER, PartitionChangeRecord

Brokers = Mapping[int, BrokerRegistration]
Topics = Mapping[str, TopicInfo]
Partitions = Mapping[TopicPartition, PartitionRegistration]


def _visit(
    partitions: Partitions, wanted: Callable[[PartitionRegistration], bool], order: Sequence[TopicPartition] = ()
) -> list[TopicPartition]:
    """The keys of the partitions ``wanted`` selects: those ``order`` names first, in its order, then ascending.

    ``order`` is the order Kafka's hash-keyed index visited them in (a trace states it where it shows).
    """
    keys = sorted(key for key, partition in partitions.items() if wanted(partition))
    if order:
        rank = {key: i for i, key in reversed(list(enumerate(order)))}
        keys.sort(key=lambda key: rank.get(key, len(rank)))
    return keys


def generate_leader_and_isr_updates(
    brokers: Brokers,
    topics: Topics,
    partitions: Partitions,
    keys: Iterable[TopicPartition],
    *,
    broker_to_remove: int,
    broker_to_add: int,
    unclean_shutdown_broker: int,
    metadata_version: int,
    elr_enabled: bool,
    behaviour: PartitionBehaviour = KAFKA_4_3,
) -> tuple[PartitionChangeRecord, ...]:
    """§2.9 ``generateLeaderAndIsrUpdates``: target ISR = ISR minus the removed/unclean broker, re-elect.

    Election is UNCLEAN for topics with ``unclean.leader.election.enable``, else ONLINE.
    """
    records = []
    for key in keys:
        topic = topics.get(key[0])
        if topic is None:
            continue
        partition = partitions[key]
        target_isr = tuple(r for r in partition.isr if r != broker_to_remove and r != unclean_shutdown_broker)
        record = build_partition_change(
            partition,
            key[0],
            key[1],
            brokers=brokers,
            metadata_version=metadata_version,
            min_isr=topic_effective_min_isr(topic, partitions, key[1]),
            target_isr=target_isr,
            election=Election.UNCLEAN if topic.unclean_leader_election_enable else Election.ONLINE,
            elr_enabled=elr_enabled,
            behaviour=behaviour,
            broker_to_remove=broker_to_remove,
            broker_to_add=broker_to_add,
            unclean_shutdown_broker=unclean_shutdown_broker,
        )
        if record is not None:
            records.append(record)
    return tuple(records)


def handle_broker_fenced(
    brokers: Brokers, topics: Topics, partitions: Partitions, broker_id: int, *, metadata_version: int, elr_enabled: bool,
    behaviour: PartitionBehaviour = KAFKA_4_3,
    order: Sequence[TopicPartition] = (),
) -> tuple[PartitionChangeRecord, ...]:
    """§2.9 fenced: every partition with the broker in its ISR loses it and re-elects (before the fence record)."""
    return generate_leader_and_isr_updates(
        brokers, topics, partitions, _visit(partitions, lambda p: broker_id in p.isr, order),
        broker_to_remove=broker_id, broker_to_add=NO_LEADER, unclean_shutdown_broker=NO_LEADER,
        metadata_version=metadata_version, elr_enabled=elr_enabled, behaviour=behaviour,
    )


def handle_broker_unfenced(
    brokers: Brokers, topics: Topics, partitions: Partitions, broker_id: int, *, metadata_version: int, elr_enabled: bool,
    behaviour: PartitionBehaviour = KAFKA_4_3,
    order: Sequence[TopicPartition] = (),
) -> tuple[PartitionChangeRecord, ...]:
    """§2.9 unfenced: every leaderless partition re-elects, the broker counting as active (after the unfence record)."""
    return generate_leader_and_isr_updates(
        brokers, topics, partitions, _visit(partitions, lambda p: p.leader == NO_LEADER, order),
        broker_to_remove=NO_LEADER, broker_to_add=broker_id, unclean_shutdown_broker=NO_LEADER,
        metadata_version=metadata_version, elr_enabled=elr_enabled, behaviour=behaviour,
    )


def handle_broker_in_controlled_shutdown(
    brokers: Brokers, topics: Topics, partitions: Partitions, broker_id: int, *, metadata_version: int, elr_enabled: bool,
    behaviour: PartitionBehaviour = KAFKA_4_3,
    order: Sequence[TopicPartition] = (),
) -> tuple[PartitionChangeRecord, ...]:
    """§2.9 controlled shutdown: like fencing, the broker leaves every ISR and leadership moves (after the ICS record)."""
    return handle_broker_fenced(
        brokers, topics, partitions, broker_id, metadata_version=metadata_version, elr_enabled=elr_enabled,
        behaviour=behaviour, order=order
    )


def handle_directory_offline(
    brokers: Brokers, topics: Topics, partitions: Partitions, broker_id: int, directory: str, *,
    metadata_version: int, elr_enabled: bool,
    behaviour: PartitionBehaviour = KAFKA_4_3, order: Sequence[TopicPartition] = ()
) -> tuple[PartitionChangeRecord, ...]:
    """§1.5 step 7 ``handleDirectoriesOffline``: partitions with a replica placed on ``directory`` lose the broker.

    Kafka indexes partitions by directory id alone (``directoriesToPartitions``), so any replica on it counts.
    """
    return generate_leader_and_isr_updates(
        brokers, topics, partitions, _visit(partitions, lambda p: directory in p.directories, order),
        broker_to_remove=broker_id, broker_to_add=NO_LEADER, unclean_shutdown_broker=NO_LEADER,
        metadata_version=metadata_version, elr_enabled=elr_enabled, behaviour=behaviour,
    )


def handle_broker_unregistered(
    brokers: Brokers, topics: Topics, partitions: Partitions, broker_id: int, *, metadata_version: int, elr_enabled: bool,
    behaviour: PartitionBehaviour = KAFKA_4_3,
    order: Sequence[TopicPartition] = (),
) -> tuple[PartitionChangeRecord, ...]:
    """§2.9 unregister: its ISR partitions, then its ELR partitions, each as for fencing (the broker removed).

    Kafka 4.3 ``ReplicationControlManager.handleBrokerUnregistered`` runs both passes with the broker as
    ``brokerToRemove`` only (not as an unclean shutdown), so an ELR member stays in the ELR: the ELR pass only
    re-elects without it, and writes nothing when that changes nothing.
    """
    in_isr = generate_leader_and_isr_updates(
        brokers, topics, partitions, _visit(partitions, lambda p: broker_id in p.isr, order),
        broker_to_remove=broker_id, broker_to_add=NO_LEADER, unclean_shutdown_broker=NO_LEADER,
        metadata_version=metadata_version, elr_enabled=elr_enabled, behaviour=behaviour,
    )
    in_elr = generate_leader_and_isr_updates(
        brokers, topics, partitions, _visit(partitions, lambda p: broker_id in p.elr, order),
        broker_to_remove=broker_id, broker_to_add=NO_LEADER, unclean_shutdown_broker=NO_LEADER,
        metadata_version=metadata_version, elr_enabled=elr_enabled, behaviour=behaviour,
    )
    return in_isr + in_elr


def handle_broker_shutdown(
    brokers: Brokers,
    topics: Topics,
    partitions: Partitions,
    broker_id: int,
    is_clean_shutdown: bool,
    *,
    metadata_version: int,
    elr_enabled: bool,
    behaviour: PartitionBehaviour = KAFKA_4_3,
    order: Sequence[TopicPartition] = (),
) -> tuple[PartitionChangeRecord, ...]:
    """§1.3/§2.9 re-registration with a new incarnation (records before the RegisterBrokerRecord).

    With ELR enabled and an unclean shutdown the broker leaves every ISR, then every ELR, and is no
    leader candidate; otherwise (ELR off, or clean) its ISR partitions change as for fencing.
    """
    if elr_enabled and not is_clean_shutdown:
        in_isr = generate_leader_and_isr_updates(
            brokers, topics, partitions, _visit(partitions, lambda p: broker_id in p.isr, order),
            broker_to_remove=NO_LEADER, broker_to_add=NO_LEADER, unclean_shutdown_broker=broker_id,
            metadata_version=metadata_version, elr_enabled=elr_enabled, behaviour=behaviour,
        )
        in_elr = generate_leader_and_isr_updates(
            brokers, topics, partitions, _visit(partitions, lambda p: broker_id in p.elr, order),
            broker_to_remove=NO_LEADER, broker_to_add=NO_LEADER, unclean_shutdown_broker=broker_id,
            metadata_version=metadata_version, elr_enabled=elr_enabled, behaviour=behaviour,
        )
        return in_isr + in_elr
    return handle_broker_fenced(
        brokers, topics, partitions, broker_id, metadata_version=metadata_version, elr_enabled=elr_enabled,
        behaviour=behaviour, order=order
    )


def leads_any_partition(partitions: Partitions, broker_id: int) -> bool:
    """§1.7: controlled shutdown completes only once the broker leads no partition."""
    return any(partition.leader == broker_id for partition in partitions.values())
