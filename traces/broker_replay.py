"""Replaying broker trace steps through the reference (``kraftspec.reference.broker``), kraft-semantics §1.

``apply`` runs one input and returns what the reference would have produced; ``observe`` is the
post-state in the trace format's vocabulary; ``summarize`` is the compact state shown beside a
divergence. Functions are looked up on the reference module at call time, so an applied mutant
(``kraftspec.mutants``) takes effect here as everywhere else.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Optional

from kraftspec.reference import broker
from kraftspec.traces.broker_trace import ACTIONS, STANDARD_STATES, explicit_state
from kraftspec.traces.format import Step, Trace, Written
from kraftspec.traces.values import to_json


def initial(trace: Trace) -> broker.ClusterControl:
    """The trace's initial controller state (named or explicit)."""
    if trace.standard is not None:
        return STANDARD_STATES[trace.standard]()
    return explicit_state(trace.explicit or {})


def apply(state: broker.ClusterControl, clock: int, step: Step) -> tuple[broker.ClusterControl, int,
                                                                           Optional[dict[str, Any]], Written]:
    """(state', clock', expected response as JSON or None, expected records) for one step.

    Raises what the reference raises on an input it refuses (``IllegalStateError``, ``ValueError``).
    """
    args = step.input
    now = args.get("now", clock)
    auth = {"authorized": args["authorized"]} if "authorized" in args else {}
    action = step.action
    if action in ("register_broker", "heartbeat"):
        state, out = getattr(broker, action)(state, args["request"], now, **auth)
    elif action == "heartbeat_timed_out":
        state, out = broker.heartbeat_timed_out(state, args["request"], now)
    elif action == "fence_stale_broker":
        state, out = broker.fence_stale_broker(state, now, args.get("which"))
    elif action == "unregister_broker":
        state, out = broker.unregister_broker(state, args["broker_id"], **auth)
    elif action == "create_topic":
        state, out = broker.create_topic(state, args["topic"], args["assignments"])
        return state, now, {"error": out.response.name}, out.records
    elif action == "log_advanced":
        return broker.log_advanced(state, args["next_offset"]), now, None, ()
    elif action == "advance_clock":
        return state, now, None, ()
    elif action == "failover":
        return broker.activate(broker.deactivate(state), now), now, None, ()
    elif action == "deactivate":
        return broker.deactivate(state), now, None, ()
    else:
        assert action == "activate", action
        return broker.activate(state, now), now, None, ()
    return state, now, to_json(out.response), out.records


def rule(action: str) -> tuple[str, str]:
    """The deciding reference function's qualified name and the first paragraph of its docstring."""
    name = ACTIONS[action].rule
    function = getattr(broker, name, None)
    if function is None:
        return name, "The trace's clock: timed inputs without 'now' use it (no reference rule)."
    doc = (function.__doc__ or "").strip().split("\n\n")[0]
    return f"kraftspec.reference.broker.{name}", " ".join(line.strip() for line in doc.splitlines())


def observe(state: broker.ClusterControl, clock: int, fields: Iterable[str] = ()) -> dict[str, Any]:
    """The post-state fields a trace may state (``post``), or only ``fields`` of them.

    ``clock``, ``active``, ``next_offset``, ``brokers`` (registrations), ``heartbeats`` (the active
    controller's soft state), ``sessions`` (``"id:epoch"`` to last contact) and ``partitions``.
    """
    wanted = set(fields) or set(OBSERVERS)
    return {name: OBSERVERS[name](state, clock) for name in OBSERVERS if name in wanted}


OBSERVERS: dict[str, Callable[[broker.ClusterControl, int], Any]] = {
    "clock": lambda state, clock: clock,
    "active": lambda state, clock: state.active,
    "next_offset": lambda state, clock: state.next_offset,
    "brokers": lambda state, clock: {
        str(b): {"epoch": r.epoch, "incarnation_id": r.incarnation_id, "fenced": r.fenced,
                 "in_controlled_shutdown": r.in_controlled_shutdown} for b, r in sorted(state.brokers.items())},
    "heartbeats": lambda state, clock: {
        str(b): {"fenced": h.fenced, "metadata_offset": h.metadata_offset,
                 "controlled_shutdown_offset": h.controlled_shutdown_offset} for b, h in sorted(state.heartbeats.items())},
    "sessions": lambda state, clock: {f"{b}:{e}": contact for (b, e), contact in sorted(state.sessions.items())},
    "partitions": lambda state, clock: {
        f"{t}:{p}": {"leader": r.leader, "isr": list(r.isr), "leader_epoch": r.leader_epoch,
                     "partition_epoch": r.partition_epoch} for (t, p), r in sorted(state.partitions.items())},
}


def summarize(state: broker.ClusterControl, clock: int) -> str:
    """One compact line per aspect of the state before a step."""
    brokers = ", ".join(
        f"{b}: epoch {r.epoch} inc {r.incarnation_id} {'fenced' if r.fenced else 'unfenced'}"
        f"{' in-controlled-shutdown' if r.in_controlled_shutdown else ''}" for b, r in sorted(state.brokers.items()))
    soft = ", ".join(f"{b}: {'F' if h.fenced else 'U'} offset {h.metadata_offset} cso {h.controlled_shutdown_offset}"
                     for b, h in sorted(state.heartbeats.items()))
    sessions = ", ".join(f"({b},{e})@{t}" for (b, e), t in sorted(state.sessions.items()))
    partitions = ", ".join(f"{state.topics[t].name if t in state.topics else t}-{p}: leader {r.leader} "
                           f"isr {list(r.isr)} epoch {r.leader_epoch}" for (t, p), r in sorted(state.partitions.items()))
    return "\n".join((
        f"clock {clock}, next offset {state.next_offset}, {'active' if state.active else 'inactive'} controller, "
        f"session timeout {state.session_timeout}, metadata.version {state.metadata_version}",
        f"registrations: {brokers or '(none)'}",
        f"heartbeat entries: {soft or '(none)'}",
        f"sessions: {sessions or '(none)'}",
        f"partitions: {partitions or '(none)'}",
    ))
