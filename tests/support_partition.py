"""Fixtures shared by the partition tests: brokers as ReplicationControlTestContext registers them.

Broker N has epoch 100 + N and one log dir (kafka-scenarios "Test-fixture conventions").
"""

from __future__ import annotations

from typing import Iterable

from kraftspec.reference.broker_registration import BrokerRegistration
from kraftspec.reference.frozen import FrozenMap, PersistentMap
from kraftspec.reference.partition import PartitionRegistration, TopicInfo, TopicPartition


def broker_dir(broker_id: int) -> str:
    """``TESTBROKER0000NDIRAAAA``: the single log dir of broker N."""
    return f"TESTBROKER{broker_id:05d}DIRAAAA"


def broker(broker_id: int, *, fenced: bool = False, ics: bool = False, epoch: int | None = None) -> BrokerRegistration:
    """A registration of broker ``broker_id`` (epoch 100 + id unless given)."""
    return BrokerRegistration(
        broker_id=broker_id,
        epoch=100 + broker_id if epoch is None else epoch,
        incarnation_id=f"incarnation-{broker_id}",
        fenced=fenced,
        in_controlled_shutdown=ics,
        log_dirs=(broker_dir(broker_id),),
    )


def brokers(unfenced: Iterable[int], fenced: Iterable[int] = ()) -> FrozenMap[int, BrokerRegistration]:
    """Registered brokers, unfenced and fenced."""
    regs = {b: broker(b) for b in unfenced}
    regs.update({b: broker(b, fenced=True) for b in fenced})
    return FrozenMap(regs)


def topic_partitions(topic: TopicInfo, assignments: Iterable[tuple[int, ...]]) -> PersistentMap[TopicPartition, PartitionRegistration]:
    """Partitions as created with all replicas active: ISR = replicas, leader = replicas[0], dirs per broker."""
    return PersistentMap({
        (topic.topic_id, pid): PartitionRegistration(
            replicas=replicas,
            directories=tuple(broker_dir(r) for r in replicas),
            isr=replicas,
            leader=replicas[0],
        )
        for pid, replicas in enumerate(assignments)
    })
