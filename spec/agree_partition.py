"""Partition leadership explored under ``PartitionLeadership.cfg``'s bounds, in the spec's vocabulary.

One partition with replicas (1, 2, 3), metadata.version 4.3-IV0, ELR and unclean election off, brokers
registered with epoch 100 + id. Each successor calls the reference: ``Fence(b)`` ~
``partition_events.handle_broker_fenced`` then the broker's fence, ``Unfence(b)`` ~
``handle_broker_unfenced`` then the unfence, ``Propose(s)`` ~ the leader putting an AlterPartition for
ISR ``s`` (in replica order) at its current epochs on the wire, ``AlterPartition(m)`` ~
``alter_partition.alter_partition`` for one request taken off the wire.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from itertools import combinations
from typing import Iterator, Mapping

from kraftspec.reference.alter_partition import AlterPartitionPartition, AlterPartitionRequest, AlterPartitionTopic, alter_partition
from kraftspec.reference.broker_registration import BrokerRegistration
from kraftspec.reference.frozen import FrozenMap
from kraftspec.reference.metadata_version import LATEST_PRODUCTION
from kraftspec.reference.partition import PartitionRegistration, TopicInfo, apply_records
from kraftspec.reference.partition_events import handle_broker_fenced, handle_broker_unfenced
from kraftspec.reference.records import NO_LEADER
from kraftspec.spec.agree import AgreementModel, Step
from kraftspec.spec.tla_values import TlaValue

TOPIC_ID = "spec-topic"
KEY = (TOPIC_ID, 0)
REPLICAS = (1, 2, 3)
TOPICS = {TOPIC_ID: TopicInfo("spec", TOPIC_ID)}
EVENTS = dict(metadata_version=LATEST_PRODUCTION, elr_enabled=False)

Message = tuple[int, int, int, tuple[int, ...]]
"""An AlterPartition on the wire: sender, leader epoch, partition epoch, proposed ISR."""


@dataclass(frozen=True)
class ExploredState:
    """The controller's brokers and partition, the requests on the wire and how many were sent."""

    brokers: FrozenMap[int, BrokerRegistration]
    partitions: FrozenMap[tuple[str, int], PartitionRegistration]
    net: frozenset[Message]
    sent: int

    @property
    def partition(self) -> PartitionRegistration:
        return self.partitions[KEY]


def _broker(broker_id: int, fenced: bool) -> BrokerRegistration:
    return BrokerRegistration(broker_id=broker_id, epoch=100 + broker_id, incarnation_id=f"incarnation-{broker_id}",
                              fenced=fenced)


def initial_states(constants: Mapping[str, TlaValue]) -> Iterator[ExploredState]:
    """``Init``: every broker unfenced, ISR = replicas, leader 1, both epochs 0, nothing on the wire."""
    yield ExploredState(
        brokers=FrozenMap({b: _broker(b, False) for b in REPLICAS}),
        partitions=FrozenMap({KEY: PartitionRegistration(replicas=REPLICAS, isr=REPLICAS, leader=1)}),
        net=frozenset(),
        sent=0,
    )


def successors(state: ExploredState, constants: Mapping[str, TlaValue]) -> Iterator[Step[ExploredState]]:
    """Every action of the spec's ``Next`` with every parameter choice, as reference calls."""
    partition = state.partition
    if partition.partition_epoch >= int(constants["MaxEpoch"]):
        return
    for b in REPLICAS:
        if not state.brokers[b].fenced:
            records = handle_broker_fenced(state.brokers, TOPICS, state.partitions, b, **EVENTS)
            yield Step("Fence", f"handle_broker_fenced(broker {b})",
                       replace(state, brokers=state.brokers.set(b, _broker(b, True)),
                               partitions=apply_records(state.partitions, records)))
        else:
            records = handle_broker_unfenced(state.brokers, TOPICS, state.partitions, b, **EVENTS)
            yield Step("Unfence", f"handle_broker_unfenced(broker {b})",
                       replace(state, brokers=state.brokers.set(b, _broker(b, False)),
                               partitions=apply_records(state.partitions, records)))
    if state.sent < int(constants["MaxSends"]) and partition.leader != NO_LEADER:
        for size in range(1, len(REPLICAS) + 1):
            for isr in combinations(REPLICAS, size):
                if partition.leader in isr:
                    message = (partition.leader, partition.leader_epoch, partition.partition_epoch, isr)
                    yield Step("Propose", f"leader {partition.leader} sends AlterPartition(isr={list(isr)})",
                               replace(state, net=state.net | {message}, sent=state.sent + 1))
    for message in sorted(state.net):
        sender, leader_epoch, partition_epoch, isr = message
        request = AlterPartitionRequest(sender, 100 + sender, (AlterPartitionTopic(TOPIC_ID, (AlterPartitionPartition(
            0, leader_epoch, tuple((r, 100 + r) for r in isr), partition_epoch),)),))
        partitions, _, _ = alter_partition(state.brokers, TOPICS, state.partitions, request, **EVENTS)
        yield Step("AlterPartition", f"alter_partition(from {sender} at epochs ({leader_epoch}, {partition_epoch}), "
                   f"isr={list(isr)})", replace(state, partitions=partitions, net=state.net - {message}))


def project(state: ExploredState) -> dict[str, TlaValue]:
    """The spec's variables."""
    partition = state.partition
    return {
        "leader": partition.leader,
        "isr": frozenset(partition.isr),
        "leaderEpoch": partition.leader_epoch,
        "partitionEpoch": partition.partition_epoch,
        "fenced": frozenset(b for b, r in state.brokers.items() if r.fenced),
        "net": frozenset((s, le, pe, frozenset(isr)) for s, le, pe, isr in state.net),
        "sent": state.sent,
    }


MODEL: AgreementModel[ExploredState] = AgreementModel(
    component="partition",
    spec_module="PartitionLeadership",
    initial_states=initial_states,
    successors=successors,
    project=project,
)
