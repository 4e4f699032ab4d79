"""The broker lifecycle explored under ``BrokerLifecycle.cfg``'s bounds, in the spec's vocabulary.

Each successor calls one reference function with one choice of the spec action's parameters
(``RegisterBroker(b, i)`` ~ ``register_broker``, ``Heartbeat(b, e, off, wf, ws)`` ~ ``heartbeat``, ...). The
explored state is the controller state plus what the spec keeps beside it: the clock and the control
state granted by each broker's last accepted heartbeat. The spec's model uses metadata.version
3.6-IV2 (no directory assignment, no leader-epoch bump on ISR shrink) and no ELR.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any, Iterator, Mapping

from kraftspec.reference import broker
from kraftspec.reference.errors import Errors
from kraftspec.reference.frozen import FrozenMap
from kraftspec.reference.metadata_version import LEVELS
from kraftspec.reference.partition import TopicInfo
from kraftspec.reference.records import FeatureRange, MetadataRecord, PartitionRecord, RegisterBrokerRecord, TopicRecord
from kraftspec.spec.agree import AgreementModel, Step
from kraftspec.spec.tla_values import TlaValue, fn, record

METADATA_VERSION = LEVELS["3.6-IV2"]
CLUSTER_ID = "kraftspec-agree-cluster"
ENVIRONMENT_ACTIONS = frozenset({"Failover", "Tick"})
"""Actions of ``BrokerLifecycle.tla``'s ``Next`` that move the environment (a controller failover, the clock) rather
than name a reference rule."""
TOPIC = TopicInfo(name="foo", topic_id="FOOFOOFOOFOOFOOFOOFOOw")
FEATURES = (FeatureRange(name="metadata.version", min_supported=LEVELS["3.3-IV3"], max_supported=METADATA_VERSION),)


@dataclass(frozen=True)
class ExploredState:
    """A reachable point of the bounded model: the controller, the clock, each broker's last granted state."""

    control: broker.ClusterControl
    clock: int
    last_reply: FrozenMap[int, str]


def directory_of(broker_id: int) -> str:
    """A log directory id owned by ``broker_id`` (a non-reserved Kafka base64 UUID)."""
    return base64.urlsafe_b64encode(bytes([0x10 + broker_id]) * 16).decode().rstrip("=")


def granted_state(response: broker.BrokerHeartbeatResponse) -> str:
    """The BrokerControlState a successful heartbeat reply reveals."""
    if response.should_shut_down:
        return "SHUTDOWN_NOW"
    if response.in_controlled_shutdown:
        return "CONTROLLED_SHUTDOWN"
    return "FENCED" if response.is_fenced else "UNFENCED"


def initial_log(constants: Mapping[str, TlaValue]) -> list[tuple[int, MetadataRecord]]:
    """The records ``Init`` restores, with their offsets: each broker's registration, then topic ``foo`` and its partition.

    Broker ``brokers[i]`` registered (incarnation 1, epoch and record offset ``i``) and unfenced; the
    partition over every broker led by the first; the topic and partition records sit at the log end.
    """
    brokers = sorted(constants["Brokers"])
    log: list[tuple[int, MetadataRecord]] = [
        (offset, RegisterBrokerRecord(broker_id=b, incarnation_id="1", broker_epoch=offset, features=FEATURES,
                                      fenced=False, log_dirs=(directory_of(b),)))
        for offset, b in enumerate(brokers)]
    log.append((len(brokers), TopicRecord(name=TOPIC.name, topic_id=TOPIC.topic_id)))
    log.append((len(brokers), PartitionRecord(partition_id=0, topic_id=TOPIC.topic_id, replicas=tuple(brokers),
                                              isr=tuple(brokers), leader=brokers[0])))
    return log


def initial_states(constants: Mapping[str, TlaValue]) -> Iterator[ExploredState]:
    """``Init``: a controller just activated on a running cluster, as restored from a snapshot (:func:`initial_log`).

    The log ends after the registrations.
    """
    brokers = sorted(constants["Brokers"])
    control = broker.deactivate(broker.initial_state(CLUSTER_ID, METADATA_VERSION,
                                                     session_timeout=int(constants["SessionTimeout"])))
    for offset, record in initial_log(constants):
        control = broker.replay(control, record, offset)
    control = broker.activate(broker.log_advanced(control, len(brokers)), 0)
    yield ExploredState(control, 0, FrozenMap({b: "none" for b in brokers}))


def never_retracts_shutdown(control: broker.ClusterControl, broker_id: int, epoch: int) -> bool:
    """The spec's broker assumption: a broker whose registration is in controlled shutdown keeps asking to shut down."""
    registration = control.brokers.get(broker_id)
    return not (registration is not None and registration.epoch == epoch and registration.in_controlled_shutdown)


def _known_epochs(state: ExploredState, broker_id: int) -> set[int]:
    registration = state.control.brokers.get(broker_id)
    epochs = {epoch for (b, epoch) in state.control.sessions if b == broker_id}
    if registration is not None:
        epochs.add(registration.epoch)
    return epochs


def successors(state: ExploredState, constants: Mapping[str, TlaValue]) -> Iterator[Step[ExploredState]]:
    """Every action of the spec's ``Next`` with every parameter choice, as reference calls."""
    return (step for step, _, _ in moves(state, constants))


def moves(state: ExploredState,
          constants: Mapping[str, TlaValue]) -> Iterator[tuple[Step[ExploredState], str, dict[str, Any]]]:
    """:func:`successors` with each step's structured input: the trace-format action and its arguments.

    ``RegisterBroker`` is ``register_broker``, ``Heartbeat`` ``heartbeat``, ``FenceStaleBroker``
    ``fence_stale_broker``, ``UnregisterBroker`` ``unregister_broker``, ``Failover`` ``failover`` and ``Tick``
    ``advance_clock`` (``kraftspec.traces.format.broker.ACTIONS``).
    """
    control, clock = state.control, state.clock
    brokers = sorted(constants["Brokers"])
    may_write = control.next_offset < int(constants["MaxOffset"])
    if may_write:
        for b in brokers:
            for incarnation in sorted(constants["Incarnations"]):
                request = broker.BrokerRegistrationRequest(
                    broker_id=b, cluster_id=CLUSTER_ID, incarnation_id=str(incarnation), features=FEATURES,
                    log_dirs=(directory_of(b),))
                after, out = broker.register_broker(control, request, clock)
                if out.response.error is Errors.NONE:
                    yield (Step("RegisterBroker",
                                f"register_broker(broker {b}, incarnation {incarnation}, now={clock})",
                                ExploredState(after, clock, state.last_reply.set(b, "none"))),
                           "register_broker", {"request": request, "now": clock})
        for b in brokers:
            soft = control.heartbeats.get(b)
            offsets = {soft.metadata_offset if soft is not None else -1, control.next_offset - 1}
            for epoch in sorted(_known_epochs(state, b)):
                for offset in sorted(offsets):
                    for want_fence in (False, True):
                        for want_shut_down in (False, True):
                            if not (want_shut_down or never_retracts_shutdown(control, b, epoch)):
                                continue
                            request = broker.BrokerHeartbeatRequest(broker_id=b, broker_epoch=epoch,
                                                                    current_metadata_offset=offset,
                                                                    want_fence=want_fence,
                                                                    want_shut_down=want_shut_down)
                            after, out = broker.heartbeat(control, request, clock)
                            replies = state.last_reply
                            if out.response.error is Errors.NONE:
                                replies = replies.set(b, granted_state(out.response))
                            yield (Step("Heartbeat",
                                        f"heartbeat(broker {b}, epoch {epoch}, offset {offset}, wantFence={want_fence}, "
                                        f"wantShutDown={want_shut_down}, now={clock})",
                                        ExploredState(after, clock, replies)),
                                   "heartbeat", {"request": request, "now": clock})
        for session in broker.expired_sessions(control, clock):
            after, _ = broker.fence_stale_broker(control, clock, which=session)
            yield (Step("FenceStaleBroker", f"fence_stale_broker(now={clock}, which={session})",
                        ExploredState(after, clock, state.last_reply)),
                   "fence_stale_broker", {"now": clock, "which": session})
        for b in brokers:
            if b in control.brokers:
                after, _ = broker.unregister_broker(control, b)
                yield (Step("UnregisterBroker", f"unregister_broker(broker {b})",
                            ExploredState(after, clock, state.last_reply.set(b, "none"))),
                       "unregister_broker", {"broker_id": b})
    yield (Step("Failover", f"activate(deactivate(state), now={clock})",
                ExploredState(broker.activate(broker.deactivate(control), clock), clock, state.last_reply)),
           "failover", {"now": clock})
    if clock < int(constants["MaxTime"]):
        yield (Step("Tick", f"clock {clock} -> {clock + 1}", ExploredState(control, clock + 1, state.last_reply)),
               "advance_clock", {"now": clock + 1})


def project(state: ExploredState) -> dict[str, TlaValue]:
    """The spec's variables (``clock``, ``nextOffset``, ``reg``, ``hb``, ``sessions``, ``part``, ``lastReply``)."""
    control = state.control
    brokers = sorted(state.last_reply)
    reg = {}
    hb = {}
    for b in brokers:
        registration = control.brokers.get(b)
        if registration is None:
            reg[b] = record(epoch=-1, inc=0, fenced=True, ics=False, offset=-1)
        else:
            reg[b] = record(epoch=registration.epoch, inc=int(registration.incarnation_id),
                            fenced=registration.fenced, ics=registration.in_controlled_shutdown,
                            offset=control.register_offsets[b])
        soft = control.heartbeats.get(b)
        if soft is None:
            hb[b] = record(present=False, fenced=True, offset=-1, cso=-1)
        else:
            hb[b] = record(present=True, fenced=soft.fenced, offset=soft.metadata_offset,
                           cso=soft.controlled_shutdown_offset)
    partition = control.partitions[(TOPIC.topic_id, 0)]
    return {
        "clock": state.clock,
        "nextOffset": control.next_offset,
        "reg": fn(reg),
        "hb": fn(hb),
        "sessions": fn({(b, e): t for (b, e), t in control.sessions.items()}),
        "part": record(leader=partition.leader, isr=partition.isr, leaderEpoch=partition.leader_epoch,
                       partitionEpoch=partition.partition_epoch),
        "lastReply": fn(dict(state.last_reply)),
    }


MODEL: AgreementModel[ExploredState] = AgreementModel(
    component="broker",
    spec_module="BrokerLifecycle",
    initial_states=initial_states,
    successors=successors,
    project=project,
)
