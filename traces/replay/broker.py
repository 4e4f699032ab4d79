"""Replaying broker trace steps through the reference (``kraftspec.reference.broker``), rules §1.

``run`` runs one input and returns the reference's own response object and records (the replay's
hot path); ``apply`` gives the response as JSON; ``OBSERVERS`` read the post-state's fields
(``post_matches`` compares the stated ones on them, ``observe`` writes them as JSON, for diffs and
recording); ``summarize`` is the compact state shown beside a divergence. Initial states
are built once and shared (they are immutable). Functions are looked up on the reference module at
call time, so an applied mutant (``kraftspec.mutants``) takes effect here as everywhere else.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Optional

from kraftspec.reference import broker, feature_control
from kraftspec.reference.errors import Errors
from kraftspec.traces.format.broker import ACTIONS, STANDARD_STATES, cached_explicit_state
from kraftspec.traces.replay.state_cache import reference_identity
from kraftspec.traces.format.envelope import Step, Trace, Written
from kraftspec.traces.replay.match import Entries, observe as observed_json, post_matcher
from kraftspec.traces.format.values import to_json


@dataclass(frozen=True)
class CreateTopicResponse:
    """The trace format's response of ``create_topic``: the error ``broker.create_topic`` decides (§2.1)."""

    error: Errors


@functools.lru_cache(maxsize=64)
def _standard(name: str, identity: tuple[Any, ...]) -> broker.ClusterControl:
    return STANDARD_STATES[name]()


def initial(trace: Trace) -> broker.ClusterControl:
    """The trace's initial controller state (named or explicit), shared between traces that start alike."""
    if trace.standard is not None:
        return _standard(trace.standard, reference_identity())
    return cached_explicit_state(trace.explicit or {})


Outcome = tuple[broker.ClusterControl, int, Any, Written]
Runner = Callable[[broker.ClusterControl, int, Mapping[str, Any]], Outcome]


def run(state: broker.ClusterControl, clock: int, step: Step) -> Outcome:
    """(state', clock', the reference's response object or None, records written) for one step.

    Raises what the reference raises on an input it refuses (``IllegalStateError``, ``ValueError``).
    The reference functions are looked up at call time, so an applied mutant takes effect.
    """
    return RUNNERS[step.action](state, clock, step.input)


def apply(state: broker.ClusterControl, clock: int, step: Step) -> tuple[broker.ClusterControl, int,
                                                                           Optional[dict[str, Any]], Written]:
    """(state', clock', expected response as JSON or None, expected records) for one step (see :func:`run`)."""
    state, clock, response, written = run(state, clock, step)
    return state, clock, None if response is None else to_json(response), written


def _options(args: Mapping[str, Any]) -> dict[str, Any]:
    """The optional keyword arguments an input states (``authorized``, ``order``); the reference's defaults otherwise."""
    return {name: args[name] for name in ("authorized", "order") if name in args}


def _register_broker(state: broker.ClusterControl, clock: int, args: Mapping[str, Any]) -> Outcome:
    now = args.get("now", clock)
    state, out = broker.register_broker(state, args["request"], now, **_options(args))
    return state, now, out.response, out.records


def _heartbeat(state: broker.ClusterControl, clock: int, args: Mapping[str, Any]) -> Outcome:
    now = args.get("now", clock)
    if "authorized" in args or "order" in args:
        state, out = broker.heartbeat(state, args["request"], now, **_options(args))
    else:
        state, out = broker.heartbeat(state, args["request"], now)
    return state, now, out.response, out.records


def _heartbeat_timed_out(state: broker.ClusterControl, clock: int, args: Mapping[str, Any]) -> Outcome:
    now = args.get("now", clock)
    state, out = broker.heartbeat_timed_out(state, args["request"], now)
    return state, now, out.response, out.records


def _fence_stale_broker(state: broker.ClusterControl, clock: int, args: Mapping[str, Any]) -> Outcome:
    now = args.get("now", clock)
    if "order" in args:
        state, out = broker.fence_stale_broker(state, now, args.get("which"), args["order"])
    else:
        state, out = broker.fence_stale_broker(state, now, args.get("which"))
    return state, now, out.response, out.records


def _unregister_broker(state: broker.ClusterControl, clock: int, args: Mapping[str, Any]) -> Outcome:
    state, out = broker.unregister_broker(state, args["broker_id"], **_options(args))
    return state, clock, out.response, out.records


def _create_topic(state: broker.ClusterControl, clock: int, args: Mapping[str, Any]) -> Outcome:
    state, out = broker.create_topic(state, args["topic"], args["assignments"])
    return state, clock, CreateTopicResponse(out.response), out.records


def _update_features(state: broker.ClusterControl, clock: int, args: Mapping[str, Any]) -> Outcome:
    state, out = feature_control.update_features(state, args["request"], **_options(args))
    return state, clock, out.response, out.records


def _log_advanced(state: broker.ClusterControl, clock: int, args: Mapping[str, Any]) -> Outcome:
    return broker.log_advanced(state, args["next_offset"]), clock, None, ()


def _advance_clock(state: broker.ClusterControl, clock: int, args: Mapping[str, Any]) -> Outcome:
    return state, args["now"], None, ()


def _failover(state: broker.ClusterControl, clock: int, args: Mapping[str, Any]) -> Outcome:
    now = args.get("now", clock)
    return broker.activate(broker.deactivate(state), now), now, None, ()


def _deactivate(state: broker.ClusterControl, clock: int, args: Mapping[str, Any]) -> Outcome:
    return broker.deactivate(state), clock, None, ()


def _activate(state: broker.ClusterControl, clock: int, args: Mapping[str, Any]) -> Outcome:
    now = args.get("now", clock)
    return broker.activate(state, now), now, None, ()


RUNNERS: dict[str, Runner] = {
    "register_broker": _register_broker, "heartbeat": _heartbeat, "heartbeat_timed_out": _heartbeat_timed_out,
    "fence_stale_broker": _fence_stale_broker, "unregister_broker": _unregister_broker,
    "create_topic": _create_topic, "update_features": _update_features, "log_advanced": _log_advanced, "advance_clock": _advance_clock,
    "failover": _failover, "deactivate": _deactivate, "activate": _activate,
}
assert RUNNERS.keys() == ACTIONS.keys()


def rule(action: str) -> tuple[str, str]:
    """The deciding reference function's qualified name and the first paragraph of its docstring."""
    module, _, name = ACTIONS[action].rule.rpartition(".")
    function = getattr(feature_control if module == "feature_control" else broker, name, None)
    if function is None:
        return name, "The trace's clock: timed inputs without 'now' use it (no reference rule)."
    doc = (function.__doc__ or "").strip().split("\n\n")[0]
    return f"kraftspec.reference.{module or 'broker'}.{name}", " ".join(line.strip() for line in doc.splitlines())


def observe(state: broker.ClusterControl, clock: int, fields: Iterable[str] = ()) -> dict[str, Any]:
    """The post-state fields a trace may state (``post``) as JSON, or only ``fields`` of them.

    ``clock``, ``active``, ``next_offset``, ``features`` (the finalized levels other than 0), ``brokers`` (registrations), ``heartbeats`` (the active
    controller's soft state), ``sessions`` (``"id:epoch"`` to last contact) and ``partitions``.
    """
    return observed_json(OBSERVERS, state, clock, fields)


OBSERVERS: dict[str, Callable[[broker.ClusterControl, int], Any]] = {
    "clock": lambda state, clock: clock,
    "active": lambda state, clock: state.active,
    "next_offset": lambda state, clock: state.next_offset,
    "features": lambda state, clock: Entries({name: level for name, level in state.finalized_features.items() if level}),
    "brokers": lambda state, clock: Entries(state.brokers, _REGISTRATION),
    "heartbeats": lambda state, clock: Entries(state.heartbeats),
    "sessions": lambda state, clock: Entries(state.sessions),
    "partitions": lambda state, clock: Entries(state.partitions, _PARTITION),
}
_REGISTRATION = ("epoch", "incarnation_id", "fenced", "in_controlled_shutdown")  # a registration: these fields stated
_PARTITION = ("leader", "isr", "leader_epoch", "partition_epoch")  # a partition: these fields stated
post_matches = post_matcher(OBSERVERS)
"""Whether every stated post-state field equals what :data:`OBSERVERS` reads (False also when unsure: the diff decides)."""


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
