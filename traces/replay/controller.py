"""Replaying controller trace steps through the KIP-919 / KIP-1073 reference (rules §4.1, §4.2).

``run`` applies one input to the trace state (``controller_trace.ControllerControl``) and returns the
reference's response object and the records written; ``apply`` gives the response as JSON;
``OBSERVERS`` read the post-state's fields (``post_matches`` compares the stated ones on them, ``observe``
writes them as JSON) and ``summarize`` the state shown beside a divergence. Reference functions are looked up
at call time (``cr.register_controller``, ...), so an applied mutant takes effect here too.
"""

from __future__ import annotations

import json

from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterable, Mapping, Optional

from kraftspec.reference import controller_registration as cr, describe_cluster as dc
from kraftspec.reference.errors import Errors
from kraftspec.reference.frozen import evolve
from kraftspec.traces.format.controller import (
    ACTIONS,
    DEFAULT_LISTENERS,
    STANDARD_STATES,
    ControllerControl,
    cached_explicit_state,
)
from kraftspec.traces.format.envelope import Step, Trace, Written
from kraftspec.traces.replay.match import Entries, observe as observed_json, post_matcher
from kraftspec.traces.format.values import to_json


@dataclass(frozen=True)
class Sends:
    """The ControllerRegistration requests the manager sent while handling one input (§4.1)."""

    sends: tuple[cr.ControllerRegistrationRequest, ...]


@dataclass(frozen=True)
class Serializable:
    """``check_request_serializable``: whether the client can write the request at its version, else the
    ``UnsupportedVersionException`` message (§4.3)."""

    serializable: bool
    message: Optional[str] = None


Outcome = tuple[ControllerControl, int, Any, Written]
Runner = Callable[[ControllerControl, int, Mapping[str, Any]], Outcome]


def initial(trace: Trace) -> ControllerControl:
    """The trace's initial state (named or explicit), shared between traces that start alike."""
    if trace.standard is not None:
        return STANDARD_STATES[trace.standard]()
    return cached_explicit_state(trace.explicit or {})


def _managed(transition: Callable[..., tuple[cr.ManagerState, tuple[cr.ControllerRegistrationRequest, ...]]],
             state: ControllerControl, clock: int, *args: Any) -> Outcome:
    manager, sent = transition(state.manager, *args)
    return replace(state, manager=manager), clock, Sends(sent), ()


def _start(state: ControllerControl, clock: int, args: Mapping[str, Any]) -> Outcome:
    return _managed(cr.start, state, clock)


def _maybe_send(state: ControllerControl, clock: int, args: Mapping[str, Any]) -> Outcome:
    return _managed(cr.maybe_send, state, clock)


def _on_metadata_update(state: ControllerControl, clock: int, args: Mapping[str, Any]) -> Outcome:
    """A published delta: ``metadata_version`` when it changed features (the image takes it too), and whether it
    changed this node's registration, which the manager then reads from the image (§4.1)."""
    new_mv = args.get("metadata_version")
    if new_mv is not None:
        state = replace(state, image=evolve(state.image, metadata_version=new_mv))
    own = state.image.controllers.get(state.manager.node_id)
    return _managed(cr.on_metadata_update, state, clock, new_mv, args.get("registration_changed", False), own)


def _on_response(state: ControllerControl, clock: int, args: Mapping[str, Any]) -> Outcome:
    """The answer to the request in flight; before Kafka 4.3 a channel timeout (``REQUEST_TIMED_OUT``) leaves the
    manager's request flag set with nothing in flight (``stuck``), so no further answer can come."""
    now = args.get("now", clock)
    if state.manager.pending_rpcs == 0 or state.stuck:
        raise ValueError("no ControllerRegistration request is pending")
    error = args.get("error", Errors.NONE)
    manager, sent = cr.on_response(state.manager, error, now, args.get("jitter", 0), state.behaviour)
    stuck = error == Errors.REQUEST_TIMED_OUT and not state.behaviour.timeout_clears_pending
    return replace(state, manager=manager, stuck=stuck), now, Sends(sent), ()


def _on_deadline(state: ControllerControl, clock: int, args: Mapping[str, Any]) -> Outcome:
    now = args.get("now", clock)
    return _managed(cr.on_deadline, state, now, now)


def _restart(state: ControllerControl, clock: int, args: Mapping[str, Any]) -> Outcome:
    """A new process of the same node: a fresh manager with a new incarnation id, same listeners and features."""
    old = state.manager
    manager = cr.ManagerState(node_id=old.node_id, incarnation_id=args["incarnation_id"], listeners=old.listeners, features=old.features)
    return replace(state, manager=manager, stuck=False), clock, Sends(()), ()


def _written(state: ControllerControl, records: tuple[Any, ...]) -> tuple[ControllerControl, Written]:
    """The records at the log end, in order, replayed into the image's controller registrations."""
    controllers = state.image.controllers
    for record in records:
        controllers = cr.replay_register_controller(controllers, record)
    start = state.next_offset
    return (replace(state, image=evolve(state.image, controllers=controllers), next_offset=start + len(records)),
            tuple((start + i, record) for i, record in enumerate(records)))


def _register_controller(state: ControllerControl, clock: int, args: Mapping[str, Any]) -> Outcome:
    response, records = cr.register_controller(args["request"], state.image.metadata_version,
                                               args.get("active", True), args.get("authorized", True), state.behaviour)
    state, written = _written(state, records)
    return state, clock, response, written


def _replay_register_controller(state: ControllerControl, clock: int, args: Mapping[str, Any]) -> Outcome:
    """A record another controller wrote reaches the log at its end: replayed, nothing written here."""
    state, _ = _written(state, (args["record"],))
    return state, clock, None, ()


def _describe_cluster(state: ControllerControl, clock: int, args: Mapping[str, Any]) -> Outcome:
    """A request the client cannot write at its version never reaches a node: the reference refuses it (§4.3)."""
    request = args["request"]
    try:
        dc.check_request_serializable(request, state.behaviour.describe_cluster_max_version)
    except dc.UnsupportedVersionError as exc:
        raise ValueError(f"the request cannot be sent at version {request.version}: {exc}") from exc
    receiver = args.get("receiver", dc.Receiver.BROKER)
    response = dc.describe_cluster(state.image, receiver, request, args.get("listener", DEFAULT_LISTENERS[receiver]),
                                   args.get("authorization", dc.Authorization()), args.get("chooser", 0),
                                   args.get("order"), state.behaviour.denial_names_operation)
    return state, clock, response, ()


def _check_request_serializable(state: ControllerControl, clock: int, args: Mapping[str, Any]) -> Outcome:
    try:
        dc.check_request_serializable(args["request"], state.behaviour.describe_cluster_max_version)
    except dc.UnsupportedVersionError as exc:
        return state, clock, Serializable(False, str(exc)), ()
    return state, clock, Serializable(True), ()


def _advance_clock(state: ControllerControl, clock: int, args: Mapping[str, Any]) -> Outcome:
    return state, args["now"], None, ()


RUNNERS: dict[str, Runner] = {
    "start": _start, "maybe_send": _maybe_send, "on_metadata_update": _on_metadata_update,
    "on_response": _on_response, "on_deadline": _on_deadline, "restart": _restart,
    "register_controller": _register_controller, "replay_register_controller": _replay_register_controller,
    "describe_cluster": _describe_cluster, "check_request_serializable": _check_request_serializable,
    "advance_clock": _advance_clock,
}


def run(state: ControllerControl, clock: int, step: Step) -> Outcome:
    """(state', clock', the response object or None, records written) for one step.

    Raises ``ValueError`` on an input the reference refuses (a response with no request pending, a
    DescribeCluster request that cannot be written at its version).
    """
    return RUNNERS[step.action](state, clock, step.input)


def apply(state: ControllerControl, clock: int,
          step: Step) -> tuple[ControllerControl, int, Optional[dict[str, Any]], Written]:
    """(state', clock', expected response as JSON or None, records written) for one step (see :func:`run`)."""
    state, clock, response, written = run(state, clock, step)
    return state, clock, None if response is None else to_json(response), written


_MODULES = {"controller_registration": cr, "describe_cluster": dc}


def rule(action: str) -> tuple[str, str]:
    """The deciding reference function's qualified name and the first paragraph of its docstring."""
    name = ACTIONS[action].rule
    if action == "advance_clock":
        return name, "The trace's clock: timed inputs without 'now' use it (no reference rule)."
    module, function = name.split(".")
    doc = (getattr(_MODULES[module], function).__doc__ or "").strip().split("\n\n")[0]
    return f"kraftspec.reference.{name}", " ".join(line.strip() for line in doc.splitlines())


OBSERVERS: dict[str, Callable[[ControllerControl, int], Any]] = {
    "clock": lambda state, clock: clock,
    "next_offset": lambda state, clock: state.next_offset,
    "metadata_version": lambda state, clock: state.image.metadata_version,
    "controllers": lambda state, clock: Entries(state.image.controllers),
    "incarnation_id": lambda state, clock: state.manager.incarnation_id,
    "known_metadata_version": lambda state, clock: state.manager.metadata_version,
    "registered": lambda state, clock: state.manager.registered,
    "channel_started": lambda state, clock: state.manager.channel_started,
    "pending_rpcs": lambda state, clock: state.manager.pending_rpcs,
    "successful_rpcs": lambda state, clock: state.manager.successful_rpcs,
    "failed_rpcs": lambda state, clock: state.manager.failed_rpcs,
    "resend_deadline_ms": lambda state, clock: state.manager.resend_deadline_ms,
}


def observe(state: ControllerControl, clock: int, fields: Iterable[str] = ()) -> dict[str, Any]:
    """The post-state fields a trace may state (``post``), or only ``fields`` of them (FORMAT.md lists them)."""
    return observed_json(OBSERVERS, state, clock, fields)


post_matches = post_matcher(OBSERVERS)
"""Whether every stated post-state field equals what :data:`OBSERVERS` reads (False also when unsure: the diff decides)."""


def summarize(state: ControllerControl, clock: int) -> str:
    """One compact line per aspect of the state before a step."""
    image, manager = state.image, state.manager
    controllers = ", ".join(f"{c}: {r.incarnation_id}" for c, r in sorted(image.controllers.items()))
    brokers = ", ".join(f"{b}{' (fenced)' if r.fenced else ''}" for b, r in sorted(image.brokers.items()))
    return "\n".join((
        f"clock {clock}, next offset {state.next_offset}, metadata.version {image.metadata_version}, "
        f"raft leader {image.raft_leader_id}",
        f"controller registrations: {controllers or '(none)'}",
        f"brokers: {brokers or '(none)'}",
        f"manager: {type(manager).__name__} {json.dumps(to_json(manager), separators=(',', ':'), default=repr)}",
    ))


def record(trace: Trace, within: AbstractContextManager[Any]) -> Trace:
    """``trace``'s inputs recorded again by the reference inside ``within`` (e.g. a mutant's ``applied()``).

    Each step states what the original states, as this reference produces it; the recording ends
    before an input it refuses. The initial state is built outside ``within``, as ``replay`` builds it.
    """
    state, clock, steps = initial(trace), 0, []
    with within:
        for step in trace.steps:
            try:
                state, clock, response, written = apply(state, clock, step)
            except ValueError:
                break
            steps.append(replace(step, response=None if step.response is None else response or {},
                                 records=None if step.records is None else written,
                                 post=None if step.post is None else observe(state, clock, step.post)))
    return replace(trace, steps=tuple(steps))
