"""Replaying partition trace steps through the reference (rules §2), as ``broker_replay`` does for §1.

``run`` runs one input and returns the reference's own response object and records; ``apply`` gives
the response as JSON; ``OBSERVERS`` read the post-state's fields (``post_matches`` compares the
stated ones on them, ``observe`` writes them as JSON) and ``summarize`` the compact state shown beside a
divergence. Reference functions are looked up on their modules at call time, so an applied mutant
(``kraftspec.mutants``) takes effect here as everywhere else.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterable, Mapping, Optional

from kraftspec.reference import alter_partition, elect_leaders, partition_events, partition_leader, reassignment
from kraftspec.reference.alter_partition import AlterPartitionPartition
from kraftspec.reference.errors import Errors
from kraftspec.reference.frozen import FrozenMap, evolve
from kraftspec.reference.partition import apply_records
from kraftspec.reference.records import PartitionChangeRecord
from kraftspec.traces.format.envelope import Step, Trace, Written
from kraftspec.traces.format.partition import ACTIONS, STANDARD_STATES, PartitionControl, cached_explicit_state
from kraftspec.traces.replay.match import Entries, observe as observed_json, post_matcher
from kraftspec.traces.format.values import to_json

_MODULES = {"alter_partition": alter_partition, "elect_leaders": elect_leaders, "partition_events": partition_events,
            "partition_leader": partition_leader, "reassignment": reassignment}


@dataclass(frozen=True)
class ReassignmentResponse:
    """The trace format's response of ``alter_partition_reassignment``: the partition's error (§2.8)."""

    error: Errors


@dataclass(frozen=True)
class PeriodicResponse:
    """The response of a periodic election task: whether it runs again at once (1000 records written, §2.11)."""

    run_again: bool


@dataclass(frozen=True)
class ProposalResponse:
    """What the leader sends after a fetch or an ISR check: the AlterPartition it proposes, or None (§2.12)."""

    proposal: Optional[AlterPartitionPartition]


@dataclass(frozen=True)
class ResultResponse:
    """What the leader does with an AlterPartition answer: the request it resends, or None (§2.10)."""

    resend: Optional[AlterPartitionPartition]


def initial(trace: Trace) -> PartitionControl:
    """The trace's initial state (named or explicit), shared between traces that start alike."""
    if trace.standard is not None:
        return STANDARD_STATES[trace.standard]()
    return cached_explicit_state(trace.explicit or {})


Outcome = tuple[PartitionControl, int, Any, Written]
Runner = Callable[[PartitionControl, int, Mapping[str, Any]], Outcome]


def run(state: PartitionControl, clock: int, step: Step) -> Outcome:
    """(state', clock', the reference's response object or None, records written) for one step.

    Raises what the reference raises on an input it refuses (``ValueError``, ``KeyError`` for an
    unknown broker, partition or leader state).
    """
    return RUNNERS[step.action](state, clock, step.input)


def apply(state: PartitionControl, clock: int, step: Step) -> tuple[PartitionControl, int, Optional[dict[str, Any]], Written]:
    """(state', clock', expected response as JSON or None, expected records) for one step (see :func:`run`)."""
    state, clock, response, written = run(state, clock, step)
    return state, clock, None if response is None else to_json(response), written


def record(trace: Trace, within: AbstractContextManager[Any]) -> Trace:
    """``trace``'s inputs recorded again by the reference inside ``within`` (e.g. a mutant's ``applied()``).

    Each step states what the original states (response, records, post-state fields), as this
    reference produces them; the recording ends before an input it refuses. The initial state is
    built outside ``within``, as :func:`kraftspec.traces.replay.verdict.replay` builds it.
    """
    state, clock, steps = initial(trace), 0, []
    with within:
        for step in trace.steps:
            try:
                state, clock, response, written = apply(state, clock, step)
            except (RuntimeError, ValueError, KeyError):
                break
            steps.append(Step(step.action, step.input, None if step.response is None else response or {},
                              None if step.records is None else written,
                              None if step.post is None else observe(state, clock, step.post)))
    return replace(trace, steps=tuple(steps))


def _write(state: PartitionControl, records: tuple[PartitionChangeRecord, ...],
           **changes: Any) -> tuple[PartitionControl, Written]:
    """The records written at the log end, in order (their offsets), with ``changes`` to the state."""
    start = state.next_offset
    return (evolve(state, next_offset=start + len(records), **changes),
            tuple((start + i, record) for i, record in enumerate(records)))


def _events(state: PartitionControl) -> dict[str, Any]:
    return {"metadata_version": state.metadata_version, "elr_enabled": state.elr_enabled, "behaviour": state.behaviour}


def _changed(state: PartitionControl, records: tuple[PartitionChangeRecord, ...],
             **changes: Any) -> tuple[PartitionControl, Written]:
    """The records merged into the partitions and written (:func:`_write`)."""
    return _write(state, records, partitions=apply_records(state.partitions, records), **changes)


def _alter_partition(state: PartitionControl, clock: int, args: Mapping[str, Any]) -> Outcome:
    partitions, response, records = alter_partition.alter_partition(
        state.brokers, state.topics, state.partitions, args["request"], **_events(state))
    state, written = _write(state, records, partitions=partitions)
    return state, clock, response, written


def _order(args: Mapping[str, Any]) -> dict[str, Any]:
    """The ``order`` argument where the input states it (the order Kafka's hash-keyed index visited partitions in)."""
    return {"order": args["order"]} if args.get("order") else {}


def _elect_leaders(state: PartitionControl, clock: int, args: Mapping[str, Any]) -> Outcome:
    partitions, response, records = elect_leaders.elect_leaders(
        state.brokers, state.topics, state.partitions, args["request"], **_events(state), **_order(args))
    state, written = _write(state, records, partitions=partitions)
    return state, clock, response, written


def _periodic(name: str) -> Runner:
    def periodic(state: PartitionControl, clock: int, args: Mapping[str, Any]) -> Outcome:
        records, again = getattr(elect_leaders, name)(state.brokers, state.topics, state.partitions, **_events(state),
                                                      **_order(args))
        state, written = _changed(state, records)
        return state, clock, PeriodicResponse(again), written
    return periodic


def _reassignment(state: PartitionControl, clock: int, args: Mapping[str, Any]) -> Outcome:
    flag = {"allow_replication_factor_change": args["allow_replication_factor_change"]} \
        if "allow_replication_factor_change" in args else {}
    partitions, error, records = reassignment.alter_partition_reassignment(
        state.brokers, state.topics, state.partitions, args["topic_name"], args["partition_id"], args["target_replicas"],
        **_events(state), **flag)
    state, written = _write(state, records, partitions=partitions)
    return state, clock, ReassignmentResponse(error), written


def _registration_event(name: str, fenced: Optional[bool], in_controlled_shutdown: Optional[bool]) -> Runner:
    """A broker event: its partition records (computed on the registrations before it), then the broker's new flags."""
    def event(state: PartitionControl, clock: int, args: Mapping[str, Any]) -> Outcome:
        broker_id = args["broker_id"]
        registration = state.brokers[broker_id]
        records = getattr(partition_events, name)(state.brokers, state.topics, state.partitions, broker_id,
                                                  **_events(state), **_order(args))
        flags = {"fenced": registration.fenced if fenced is None else fenced,
                 "in_controlled_shutdown": registration.in_controlled_shutdown if in_controlled_shutdown is None
                 else in_controlled_shutdown}
        brokers = state.brokers.set(broker_id, evolve(registration, **flags))
        state, written = _changed(state, records, brokers=brokers)
        return state, clock, None, written
    return event


def _unregistered(state: PartitionControl, clock: int, args: Mapping[str, Any]) -> Outcome:
    broker_id = args["broker_id"]
    if broker_id not in state.brokers:
        raise KeyError(f"broker {broker_id} is not registered")
    records = partition_events.handle_broker_unregistered(
        state.brokers, state.topics, state.partitions, broker_id, **_events(state), **_order(args))
    state, written = _changed(state, records, brokers=state.brokers.remove(broker_id))
    return state, clock, None, written


def _shutdown(state: PartitionControl, clock: int, args: Mapping[str, Any]) -> Outcome:
    """§1.3/§2.9 re-registration: the old incarnation's partition records, then the new one registered fenced;
    the restarted broker's process holds no leader state."""
    broker_id = args["broker_id"]
    registration = state.brokers[broker_id]
    records = partition_events.handle_broker_shutdown(
        state.brokers, state.topics, state.partitions, broker_id, args.get("is_clean_shutdown", False), **_events(state),
        **_order(args))
    brokers = state.brokers.set(broker_id, evolve(registration, epoch=args["epoch"],
                                                  incarnation_id=args["incarnation_id"], fenced=True,
                                                  in_controlled_shutdown=False))
    leaders = FrozenMap({k: s for k, s in state.leaders.items() if k[0] != broker_id})
    in_flight = FrozenMap({k: r for k, r in state.in_flight.items() if k[0] != broker_id})
    state, written = _changed(state, records, brokers=brokers, leaders=leaders, in_flight=in_flight)
    return state, clock, None, written


def _key(args: Mapping[str, Any]) -> tuple[int, str, int]:
    return args["broker_id"], args["topic_id"], args["partition_id"]


def _become_leader(state: PartitionControl, clock: int, args: Mapping[str, Any]) -> Outcome:
    now = args.get("now", clock)
    key = _key(args)
    lag = {"replica_lag_time_max_ms": args["replica_lag_time_max_ms"]} if "replica_lag_time_max_ms" in args else {}
    leader = partition_leader.become_leader(
        key[0], state.brokers[key[0]].epoch, key[2], state.partitions[key[1:]], state.brokers,
        log_end_offset=args["log_end_offset"], high_watermark=args["high_watermark"],
        min_insync_replicas=args["min_insync_replicas"], now_ms=now, **lag)
    return evolve(state, leaders=state.leaders.set(key, leader)), now, None, ()


def _update_leader_metadata(state: PartitionControl, clock: int, args: Mapping[str, Any]) -> Outcome:
    now = args.get("now", clock)
    key = _key(args)
    leader = partition_leader.update_leader_metadata(state.leaders[key], state.partitions[key[1:]], state.brokers, now)
    return evolve(state, leaders=state.leaders.set(key, leader)), now, None, ()


def _update_broker_metadata(state: PartitionControl, clock: int, args: Mapping[str, Any]) -> Outcome:
    key = _key(args)
    leader = partition_leader.update_broker_metadata(state.leaders[key], state.brokers)
    return evolve(state, leaders=state.leaders.set(key, leader)), clock, None, ()


def _stop_leading(state: PartitionControl, clock: int, args: Mapping[str, Any]) -> Outcome:
    key = _key(args)
    return evolve(state, leaders=state.leaders.remove(key)), clock, None, ()


def _append(state: PartitionControl, clock: int, args: Mapping[str, Any]) -> Outcome:
    now = args.get("now", clock)
    key = _key(args)
    leader = partition_leader.append(state.leaders[key], args["count"], now)
    return evolve(state, leaders=state.leaders.set(key, leader)), now, None, ()


def _proposed(state: PartitionControl, key: tuple[int, str, int], leader: partition_leader.PartitionLeaderState,
              proposal: Optional[AlterPartitionPartition]) -> PartitionControl:
    """The leader state after a step; a proposal goes to the broker's AlterPartitionManager (``in_flight``)."""
    in_flight = state.in_flight if proposal is None else state.in_flight.set(key, proposal)
    return evolve(state, leaders=state.leaders.set(key, leader), in_flight=in_flight)


def _follower_fetch(state: PartitionControl, clock: int, args: Mapping[str, Any]) -> Outcome:
    now = args.get("now", clock)
    key = _key(args)
    leader, proposal = partition_leader.follower_fetch(
        state.leaders[key], args["follower"], args["fetch_offset"], now, args["broker_epoch"],
        in_flight=key in state.in_flight)
    return _proposed(state, key, leader, proposal), now, ProposalResponse(proposal), ()


def _maybe_shrink_isr(state: PartitionControl, clock: int, args: Mapping[str, Any]) -> Outcome:
    now = args.get("now", clock)
    key = _key(args)
    leader, proposal = partition_leader.maybe_shrink_isr(state.leaders[key], now, in_flight=key in state.in_flight)
    return _proposed(state, key, leader, proposal), now, ProposalResponse(proposal), ()


def _handle_result(state: PartitionControl, clock: int, args: Mapping[str, Any]) -> Outcome:
    """The controller's answer reaches the broker's AlterPartitionManager (``DefaultAlterPartitionManager``):
    nothing without a request in flight; otherwise the request is done, and the leader state, if the broker still
    leads, handles the answer (it ignores one for a change it no longer has pending)."""
    now = args.get("now", clock)
    key = _key(args)
    if key not in state.in_flight:
        if key not in state.leaders:
            raise KeyError(f"broker {key[0]} neither leads {key[1]}:{key[2]} nor has an AlterPartition for it")
        return state, now, ResultResponse(None), ()
    state = evolve(state, in_flight=state.in_flight.remove(key))
    if key not in state.leaders:
        return state, now, ResultResponse(None), ()
    leader, resend = partition_leader.handle_alter_partition_result(state.leaders[key], args["result"], now)
    return _proposed(state, key, leader, resend), now, ResultResponse(resend), ()


def _advance_clock(state: PartitionControl, clock: int, args: Mapping[str, Any]) -> Outcome:
    return state, args["now"], None, ()


RUNNERS: dict[str, Runner] = {
    "alter_partition": _alter_partition, "elect_leaders": _elect_leaders,
    "maybe_balance_partition_leaders": _periodic("maybe_balance_partition_leaders"),
    "maybe_elect_unclean_leaders": _periodic("maybe_elect_unclean_leaders"),
    "alter_partition_reassignment": _reassignment,
    "handle_broker_fenced": _registration_event("handle_broker_fenced", True, None),
    "handle_broker_unfenced": _registration_event("handle_broker_unfenced", False, None),
    "handle_broker_in_controlled_shutdown": _registration_event("handle_broker_in_controlled_shutdown", None, True),
    "handle_broker_unregistered": _unregistered, "handle_broker_shutdown": _shutdown,
    "become_leader": _become_leader, "update_leader_metadata": _update_leader_metadata,
    "update_broker_metadata": _update_broker_metadata, "stop_leading": _stop_leading, "append": _append,
    "follower_fetch": _follower_fetch, "maybe_shrink_isr": _maybe_shrink_isr,
    "handle_alter_partition_result": _handle_result, "advance_clock": _advance_clock,
}
assert RUNNERS.keys() == ACTIONS.keys()

_NO_RULE = {
    "stop_leading": "The broker drops its leader state for the partition (Partition.makeFollower, §2.12); no reference rule.",
    "advance_clock": "The trace's clock: timed inputs without 'now' use it (no reference rule).",
}


def rule(action: str) -> tuple[str, str]:
    """The deciding reference function's qualified name and the first paragraph of its docstring."""
    name = ACTIONS[action].rule
    if action in _NO_RULE:
        return name, _NO_RULE[action]
    module, function_name = name.split(".")
    function = getattr(_MODULES[module], function_name)
    doc = (function.__doc__ or "").strip().split("\n\n")[0]
    return f"kraftspec.reference.{name}", " ".join(line.strip() for line in doc.splitlines())


def _leader_view(s: partition_leader.PartitionLeaderState) -> dict[str, Any]:
    """A leader state as the post-state states it: its ISR and pending change are sets (Kafka's leader keeps them in
    ``Set``s, whose order is unspecified), listed ascending."""
    return {
        "leader_epoch": s.leader_epoch, "partition_epoch": s.partition_epoch, "isr": sorted(s.isr),
        "high_watermark": s.high_watermark, "log_end_offset": s.log_end_offset,
        "leader_epoch_start_offset": s.leader_epoch_start_offset,
        "followers": Entries(s.followers, _FOLLOWER),
        "eligible_brokers": Entries(s.eligible_brokers),
        "pending": None if s.pending is None else {"proposed_isr": sorted(s.pending.proposed_isr),
                                                   "maximal_isr": sorted(s.pending.maximal_isr)},
    }


_REGISTRATION = ("epoch", "incarnation_id", "fenced", "in_controlled_shutdown")  # a broker: these fields stated
_PARTITION = ("leader", "isr", "leader_epoch", "partition_epoch", "replicas", "removing_replicas", "adding_replicas",
              "elr", "last_known_elr", "leader_recovery_state")  # a partition: these fields stated, in this order
_FOLLOWER = ("log_end_offset", "broker_epoch")  # a leader's follower: these fields stated
OBSERVERS: dict[str, Callable[[PartitionControl, int], Any]] = {
    "clock": lambda state, clock: clock,
    "brokers": lambda state, clock: Entries(state.brokers, _REGISTRATION),
    "partitions": lambda state, clock: Entries(state.partitions, _PARTITION),
    "leaders": lambda state, clock: Entries(state.leaders, view=_leader_view),
}
post_matches = post_matcher(OBSERVERS)
"""Whether every stated post-state field equals what :data:`OBSERVERS` reads (False also when unsure: the diff decides)."""


def observe(state: PartitionControl, clock: int, fields: Iterable[str] = ()) -> dict[str, Any]:
    """The post-state fields a trace may state (``post``) as JSON, or only ``fields`` of them.

    ``clock``, ``brokers`` (registrations), ``partitions`` (the controller's registrations) and
    ``leaders`` (``"broker:topic:partition"`` to the broker's leader state).
    """
    return observed_json(OBSERVERS, state, clock, fields)


def summarize(state: PartitionControl, clock: int) -> str:
    """One compact line per aspect of the state before a step."""
    brokers = ", ".join(f"{b}: epoch {r.epoch} {'fenced' if r.fenced else 'unfenced'}"
                        f"{' in-controlled-shutdown' if r.in_controlled_shutdown else ''}"
                        for b, r in sorted(state.brokers.items()))
    partitions = ", ".join(
        f"{state.topics[t].name if t in state.topics else t}-{p}: leader {r.leader} isr {list(r.isr)} "
        f"epochs {r.leader_epoch}/{r.partition_epoch} replicas {list(r.replicas)}"
        for (t, p), r in sorted(state.partitions.items()))
    leaders = ", ".join(
        f"{b} leads {t}-{p}: epochs {s.leader_epoch}/{s.partition_epoch} isr {list(s.isr)} LEO {s.log_end_offset} "
        f"HW {s.high_watermark}{' pending ' + str(list(s.pending.proposed_isr)) if s.pending else ''}"
        for (b, t, p), s in sorted(state.leaders.items()))
    return "\n".join((
        f"clock {clock}, metadata.version {state.metadata_version}, ELR {'on' if state.elr_enabled else 'off'}, "
        f"Kafka {state.behaviour.name}",
        f"registrations: {brokers or '(none)'}",
        f"partitions: {partitions or '(none)'}",
        f"leader states: {leaders or '(none)'}",
    ))
