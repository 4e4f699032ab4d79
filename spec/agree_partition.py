"""Partition leadership and replication explored under ``PartitionLeadership.cfg``'s bounds, in the spec's vocabulary.

One partition with replicas (1, 2, 3), metadata.version 4.3-IV0, ELR and unclean election off, min ISR 1;
broker ``b``'s ``k``-th incarnation registers with broker epoch ``100 * (k + 1) + b``. The brokers' logs,
what each learned and each leader's :class:`~kraftspec.reference.partition_leader.PartitionLeaderState` sit
beside the controller's registrations. Time is 0 throughout and ``replica.lag.time.max.ms`` is -1: the lag
may have elapsed at any moment, so a follower is caught up only at the leader's log end offset. Each
successor calls the reference: ``HandleBrokerFenced``/``HandleBrokerUnfenced`` ~
``handle_broker_fenced``/``handle_broker_unfenced``, ``HandleBrokerShutdown`` ~ ``handle_broker_shutdown`` and a
new registration, ``Learn`` ~ ``become_leader`` /
``update_leader_metadata`` / ``update_broker_metadata``, ``AppendRecords`` ~ ``append``, ``FollowerFetch`` ~
``follower_fetch``, ``MaybeShrinkIsr`` ~ ``maybe_shrink_isr``, ``AlterPartition`` ~ ``alter_partition`` and
``handle_alter_partition_result``.

The correspondences are public for the trace tools that share them (``traces/recording/partition_tla.py`` records
traces from TLC's graph, ``spec/trace_validation_partition.py`` maps traces back into the spec):
:func:`broker_epoch` / :func:`incarnation` / :func:`incarnation_id`, :func:`common_prefix`,
:func:`kept_lengths`, :func:`with_committed` and :data:`NOT_LEADING`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterator, Mapping, Optional

from kraftspec.reference import partition_leader as pl
from kraftspec.reference.alter_partition import AlterPartitionPartition, AlterPartitionRequest, AlterPartitionTopic, alter_partition
from kraftspec.reference.broker_registration import BrokerRegistration
from kraftspec.reference.errors import Errors
from kraftspec.reference.frozen import FrozenMap, PersistentMap
from kraftspec.reference.metadata_version import LATEST_PRODUCTION
from kraftspec.reference.partition import PartitionRegistration, TopicInfo, apply_records
from kraftspec.reference.partition_events import handle_broker_fenced, handle_broker_shutdown, handle_broker_unfenced
from kraftspec.reference.records import NO_LEADER
from kraftspec.spec.agree import AgreementModel, Step
from kraftspec.spec.tla_values import TlaValue, record

TOPIC_ID = "spec-topic"
KEY = (TOPIC_ID, 0)
REPLICAS = (1, 2, 3)
TOPICS = {TOPIC_ID: TopicInfo(name="spec", topic_id=TOPIC_ID)}
EVENTS = dict(metadata_version=LATEST_PRODUCTION, elr_enabled=False)
LAG = -1
ENVIRONMENT_ACTIONS = frozenset({"Learn"})
"""Actions of ``PartitionLeadership.tla``'s ``Next`` that move the environment: ``Learn`` is metadata propagation
(the model's ``propagate``), whose broker calls one of several reference rules."""
"""``replica.lag.time.max.ms`` in the explored brokers: with every step at time 0, only a follower at the LEO is caught up."""


@dataclass(frozen=True)
class InFlight:
    """An AlterPartition on the wire: sender, its broker epoch when sent, the partition data."""

    sender: int
    sender_epoch: int
    data: AlterPartitionPartition


@dataclass(frozen=True)
class ExploredState:
    """The controller's registrations, the wire, and each broker's log, learned leader and leader state."""

    brokers: FrozenMap[int, BrokerRegistration]
    partitions: PersistentMap[tuple[str, int], PartitionRegistration]
    net: frozenset[InFlight]
    logs: tuple[tuple[int, ...], ...]
    known: tuple[tuple[int, int], ...]
    leaders: tuple[Optional[pl.PartitionLeaderState], ...]
    appends: int
    committed: frozenset[tuple[int, int]]

    @property
    def partition(self) -> PartitionRegistration:
        return self.partitions[KEY]


def broker_epoch(broker_id: int, incarnation: int) -> int:
    """The reference broker epoch of broker ``broker_id``'s ``incarnation``-th registration (the spec's
    ``brokerEpoch``, counting restarts from 0): ``100 * (incarnation + 1) + broker_id``."""
    return 100 * (incarnation + 1) + broker_id


def incarnation(epoch: int) -> int:
    """The spec's broker epoch (incarnation count) of a reference broker epoch; -1 and -2 stay.

    The inverse of :func:`broker_epoch` on its image only: check ``broker_epoch(b, incarnation(e)) == e``.
    """
    return epoch if epoch < 0 else epoch // 100 - 1


def incarnation_id(broker_id: int, incarnation: int) -> str:
    """The incarnation id the explored brokers register with (a restart registers a new one, §1.3)."""
    return f"incarnation-{broker_id}-{incarnation}"


def _broker(broker_id: int, incarnation: int, fenced: bool) -> BrokerRegistration:
    return BrokerRegistration(broker_id=broker_id, epoch=broker_epoch(broker_id, incarnation),
                              incarnation_id=incarnation_id(broker_id, incarnation), fenced=fenced)


def _set(values: tuple, index: int, value: object) -> tuple:
    return values[:index] + (value,) + values[index + 1:]


def _become_leader(b: int, brokers: Mapping[int, BrokerRegistration], registration: PartitionRegistration,
                   log: tuple[int, ...]) -> pl.PartitionLeaderState:
    return pl.become_leader(b, brokers[b].epoch, 0, registration, brokers, log_end_offset=len(log), high_watermark=0,
                            min_insync_replicas=1, now_ms=0, replica_lag_time_max_ms=LAG)


def with_committed(state: ExploredState) -> ExploredState:
    """``state`` with the spec's history variable ``committed`` updated (its ``Commit``): every record below a
    (self-believed) leader's high watermark."""
    records = set(state.committed)
    for b, leader in zip(REPLICAS, state.leaders):
        if leader is not None:
            log = state.logs[b - 1]
            records.update((o + 1, log[o]) for o in range(leader.high_watermark))
    return state if len(records) == len(state.committed) else replace(state, committed=frozenset(records))


def initial_states(constants: Mapping[str, TlaValue]) -> Iterator[ExploredState]:
    """``Init``: every broker unfenced and aware of leader 1 at epoch 0, ISR = replicas, logs empty."""
    brokers = FrozenMap({b: _broker(b, 0, False) for b in REPLICAS})
    partition = PartitionRegistration(replicas=REPLICAS, isr=REPLICAS, leader=1)
    yield ExploredState(
        brokers=brokers,
        partitions=PersistentMap({KEY: partition}),
        net=frozenset(),
        logs=((), (), ()),
        known=((1, 0),) * 3,
        leaders=(_become_leader(1, brokers, partition, ()), None, None),
        appends=0,
        committed=frozenset(),
    )


def kept_lengths(state: ExploredState, b: int) -> range:
    """Lengths broker ``b``'s log may keep on a restart (the spec's ``Kept``): only an uncommitted suffix is lost."""
    log = state.logs[b - 1]
    n = len(log)
    while n > 0 and (n, log[n - 1]) not in state.committed:
        n -= 1
    return range(n, len(log) + 1)


def _controller_steps(state: ExploredState, constants: Mapping[str, TlaValue]) -> Iterator[Step[ExploredState]]:
    incarnations = {b: incarnation(r.epoch) for b, r in state.brokers.items()}
    for b in REPLICAS:
        registration = state.brokers[b]
        if not registration.fenced:
            records = handle_broker_fenced(state.brokers, TOPICS, state.partitions, b, **EVENTS)
            yield Step("HandleBrokerFenced", f"handle_broker_fenced(broker {b})",
                       replace(state, brokers=state.brokers.set(b, _broker(b, incarnations[b], True)),
                               partitions=apply_records(state.partitions, records)))
        else:
            records = handle_broker_unfenced(state.brokers, TOPICS, state.partitions, b, **EVENTS)
            yield Step("HandleBrokerUnfenced", f"handle_broker_unfenced(broker {b})",
                       replace(state, brokers=state.brokers.set(b, _broker(b, incarnations[b], False)),
                               partitions=apply_records(state.partitions, records)))
        if sum(incarnations.values()) < int(constants["MaxRestarts"]):
            records = handle_broker_shutdown(state.brokers, TOPICS, state.partitions, b, False, **EVENTS)
            restarted = replace(state, brokers=state.brokers.set(b, _broker(b, incarnations[b] + 1, True)),
                                partitions=apply_records(state.partitions, records),
                                known=_set(state.known, b - 1, (NO_LEADER, -1)),
                                leaders=_set(state.leaders, b - 1, None))
            for n in kept_lengths(state, b):
                yield Step("HandleBrokerShutdown", f"handle_broker_shutdown(broker {b}), log kept up to {n}",
                           replace(restarted, logs=_set(state.logs, b - 1, state.logs[b - 1][:n])))


def _learn(state: ExploredState, b: int) -> ExploredState:
    """Broker ``b`` applies the controller's latest partition and broker registrations."""
    partition = state.partition
    current = state.leaders[b - 1]
    if partition.leader != b:
        leader = None
    elif current is None or current.leader_epoch != partition.leader_epoch:
        leader = _become_leader(b, state.brokers, partition, state.logs[b - 1])
    elif current.partition_epoch != partition.partition_epoch:
        leader = pl.update_leader_metadata(current, partition, state.brokers, 0)
    else:
        leader = pl.update_broker_metadata(current, state.brokers)
    return replace(state, known=_set(state.known, b - 1, (partition.leader, partition.leader_epoch)),
                   leaders=_set(state.leaders, b - 1, leader))


def common_prefix(a: tuple[int, ...], b: tuple[int, ...]) -> int:
    """How many leading records two logs share (the spec's ``CommonPrefix``): a follower's fetch offset
    after truncating to the leader's log (Kafka's divergence check, KIP-101)."""
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def queued(state: ExploredState, b: int) -> bool:
    """The spec's ``Queued(b)``: broker ``b``'s current incarnation has an AlterPartition on the wire, which its
    AlterPartitionManager holds until the answer (a new proposal fails with OPERATION_NOT_ATTEMPTED)."""
    return any(m.sender == b and m.sender_epoch == state.brokers[b].epoch for m in state.net)


def _broker_steps(state: ExploredState, constants: Mapping[str, TlaValue]) -> Iterator[Step[ExploredState]]:
    for b in REPLICAS:
        yield Step("Learn", f"broker {b} learns the partition (become_leader / update_leader_metadata)",
                   _learn(state, b))
        leader = state.leaders[b - 1]
        if leader is not None and state.appends < int(constants["MaxAppends"]):
            yield Step("AppendRecords", f"append(leader {b})",
                       replace(state, logs=_set(state.logs, b - 1, state.logs[b - 1] + (leader.leader_epoch,)),
                               leaders=_set(state.leaders, b - 1, pl.append(leader, 1, 0)), appends=state.appends + 1))
        if leader is not None:
            shrunk, request = pl.maybe_shrink_isr(leader, 0, in_flight=queued(state, b))
            if request is not None:
                yield Step("MaybeShrinkIsr", f"maybe_shrink_isr(leader {b})",
                           replace(state, leaders=_set(state.leaders, b - 1, shrunk),
                                   net=state.net | {InFlight(b, state.brokers[b].epoch, request)}))
        source, epoch = state.known[b - 1]
        served = state.leaders[source - 1] if source not in (NO_LEADER, b) else None
        if served is not None and served.leader_epoch == epoch:
            offset = common_prefix(state.logs[b - 1], state.logs[source - 1])
            fetched, request = pl.follower_fetch(served, b, offset, 0, state.brokers[b].epoch,
                                                 in_flight=queued(state, source))
            net = state.net if request is None else state.net | {InFlight(source, state.brokers[source].epoch, request)}
            yield Step("FollowerFetch", f"follower_fetch(leader {source}, follower {b}, offset {offset})",
                       replace(state, leaders=_set(state.leaders, source - 1, fetched), net=net,
                               logs=_set(state.logs, b - 1, state.logs[source - 1])))


def _deliver(state: ExploredState, message: InFlight) -> ExploredState:
    """The controller processes the request; the answer reaches the sender's incarnation if it still leads."""
    request = AlterPartitionRequest(broker_id=message.sender, broker_epoch=message.sender_epoch,
                                    topics=(AlterPartitionTopic(topic_id=TOPIC_ID, partitions=(message.data,)),))
    partitions, response, _ = alter_partition(state.brokers, TOPICS, state.partitions, request, **EVENTS)
    delivered = replace(state, partitions=partitions, net=state.net - {message})
    sender = state.leaders[message.sender - 1]
    if sender is None or state.brokers[message.sender].epoch != message.sender_epoch or response.error_code != Errors.NONE:
        return delivered
    answered, resend = pl.handle_alter_partition_result(sender, response.topics[0].partitions[0], 0)
    net = delivered.net if resend is None else delivered.net | {InFlight(message.sender, message.sender_epoch, resend)}
    return replace(delivered, leaders=_set(state.leaders, message.sender - 1, answered), net=net)


def successors(state: ExploredState, constants: Mapping[str, TlaValue]) -> Iterator[Step[ExploredState]]:
    """Every action of the spec's ``Next`` with every parameter choice, as reference calls."""
    if state.partition.partition_epoch >= int(constants["MaxEpoch"]):
        return
    steps = list(_controller_steps(state, constants)) + list(_broker_steps(state, constants))
    for message in sorted(state.net, key=repr):
        steps.append(Step("AlterPartition",
                          f"alter_partition(from {message.sender} at epochs ({message.data.leader_epoch}, "
                          f"{message.data.partition_epoch}), isr={list(message.data.new_isr_with_epochs)})",
                          _deliver(state, message)))
    for step in steps:
        yield replace(step, state=with_committed(step.state))


NOT_LEADING = record(epoch=-1, pe=-1, isr=frozenset(), hw=0, start=0, leo=(-1, -1, -1), fep=(-2, -2, -2),
                     elig=(-1, -1, -1), pending=record(isr=frozenset(), max=frozenset()))
"""The spec's ``NotLeading``: the leader state of a broker that does not believe it leads."""


def _leader_state(s: Optional[pl.PartitionLeaderState]) -> TlaValue:
    if s is None:
        return NOT_LEADING
    followers = s.followers
    return record(
        epoch=s.leader_epoch, pe=s.partition_epoch, isr=frozenset(s.isr), hw=s.high_watermark,
        start=s.leader_epoch_start_offset,
        leo=tuple(followers[r].log_end_offset if r in followers else -1 for r in REPLICAS),
        fep=tuple(incarnation(followers[r].broker_epoch) if r in followers else pl.NO_FETCH for r in REPLICAS),
        elig=tuple(incarnation(s.eligible_brokers[r]) if r in s.eligible_brokers else -1 for r in REPLICAS),
        pending=record(isr=frozenset(), max=frozenset()) if s.pending is None else
        record(isr=frozenset(s.pending.proposed_isr), max=frozenset(s.pending.maximal_isr)),
    )


def _message(m: InFlight) -> TlaValue:
    return record(s=m.sender, se=incarnation(m.sender_epoch), le=m.data.leader_epoch, pe=m.data.partition_epoch,
                  isr=frozenset((r, incarnation(e)) for r, e in m.data.new_isr_with_epochs))


def project(state: ExploredState) -> dict[str, TlaValue]:
    """The spec's variables."""
    partition = state.partition
    return {
        "leader": partition.leader,
        "isr": frozenset(partition.isr),
        "leaderEpoch": partition.leader_epoch,
        "partitionEpoch": partition.partition_epoch,
        "fenced": frozenset(b for b, r in state.brokers.items() if r.fenced),
        "brokerEpoch": tuple(incarnation(state.brokers[b].epoch) for b in REPLICAS),
        "net": frozenset(_message(m) for m in state.net),
        "log": state.logs,
        "known": state.known,
        "ls": tuple(_leader_state(s) for s in state.leaders),
        "appends": state.appends,
        "committed": state.committed,
    }


MODEL: AgreementModel[ExploredState] = AgreementModel(
    component="partition",
    spec_module="PartitionLeadership",
    initial_states=initial_states,
    successors=successors,
    project=project,
)
