"""Controller traces in the vocabulary of ``ControllerRegistrationTrace.tla`` (``kraftspec check --with-tlc``).

The correspondences of ``spec/agree_controller.py`` and ``traces/recording/controller_tla.py``, read backwards
(rules §4.1): ``start``, ``maybe_send``, ``on_metadata_update``, ``on_response`` and
``on_deadline`` are the spec's Start, MaybeSend, OnMetadataUpdate, OnResponse and OnDeadline;
``register_controller`` on the active controller is RegisterController, refused (inactive:
NOT_CONTROLLER, unauthorized: CLUSTER_AUTHORIZATION_FAILED) RegisterControllerFails; ``restart`` is
Restart. The spec's process ``k`` has incarnation id ``inc<k>``; its requests and records are node 1's
with the listeners of ``agree_controller`` and no features, which are checked as constants, as is the
quorum's metadata.version 4.3-IV0. A trace is judged from ``controller_tla.EXPLICIT`` (the spec's ``Init``)
only. The spec's time is abstract: ``now``, the backoff draw and the resend deadline's value are not judged
(only whether one is scheduled; an ``on_deadline`` that leaves it scheduled was not due, a stutter), nor are
``clock``, ``next_offset``, ``successful_rpcs`` or an error's message. DescribeCluster and other controllers'
records are not modelled: outside.
"""

from __future__ import annotations

import json
import re
from typing import Any, Callable, Mapping, Optional

from kraftspec.reference import controller_registration as cr
from kraftspec.reference.errors import Errors
from kraftspec.reference.metadata_version import LATEST_PRODUCTION
from kraftspec.reference.records import RegisterControllerRecord
from kraftspec.spec import agree_controller as agree
from kraftspec.spec.tla_parse import to_tla
from kraftspec.spec.tla_values import TlaValue, record
from kraftspec.spec.trace_validation_common import (Encoded, Outside, TraceModule, Unfixed, encoded, error_name,
                                                    fixing, modelled)
from kraftspec.traces.replay import controller as controller_replay
from kraftspec.traces.recording.controller_tla import EXPLICIT
from kraftspec.traces.format.controller import explicit_state
from kraftspec.traces.format.envelope import Step, Trace
from kraftspec.traces.format.values import to_json

_SPEC_ACTIONS = {"start": "Start", "maybe_send": "MaybeSend", "on_metadata_update": "Update", "on_response": "Response",
                 "on_deadline": "Deadline", "restart": "Restart", "register_controller": "Register",
                 "advance_clock": "Tick"}
_MANAGER_ACTIONS = {"start", "maybe_send", "on_metadata_update", "on_response", "on_deadline", "restart"}
_INCARNATION = re.compile(r"inc([1-9][0-9]*)")
_NO_POST: dict[str, TlaValue] = {"inc": 0, "started": False, "mvKnown": False, "registered": False, "pending": 0,
                                  "failed": 0, "timer": False, "log": 0}
"""The post-state fields of a step record, as stated or (not in ``stated``) as placeholders."""
_NOT_JUDGED = {"clock", "next_offset", "successful_rpcs"}
"""Post-state fields the spec has no counterpart of (its time and log offsets are abstract, it counts no successes)."""


def _same(stated: Any, fixed: Any) -> bool:
    """Whether a stated JSON value is the one the spec fixes, as JSON text (True and 1 differ, as in the replay)."""
    return json.dumps(stated, sort_keys=True) == json.dumps(fixed, sort_keys=True)


def _number(incarnation_id: Any) -> Optional[int]:
    """The spec's process number of an incarnation id ``inc<k>``; None for any other id."""
    match = _INCARNATION.fullmatch(incarnation_id) if type(incarnation_id) is str else None
    return None if match is None else int(match.group(1))


def _fixed_number(incarnation_id: Any) -> int:
    k = _number(incarnation_id)
    if k is None:
        raise Unfixed(f"{incarnation_id!r} is not an incarnation id of the spec's process")
    return k


def _sent(request: Any) -> int:
    """A request sent (JSON), as its incarnation's number: anything but node 1's request of that incarnation is unfixed."""
    k = _fixed_number(request.get("incarnation_id") if type(request) is dict else None)
    if not _same(request, to_json(agree.request_of(agree.incarnation(k)))):
        raise Unfixed(f"{request!r} is not the request node 1's process {k} sends")
    return k


def _written(written: Any) -> tuple[int, ...]:
    """RegisterControllerRecords as the incarnations they register (the record copies the request, §4.1)."""
    out = []
    for _, r in written:
        k = _fixed_number(getattr(r, "incarnation_id", None))
        request = agree.request_of(agree.incarnation(k))
        if r != RegisterControllerRecord(controller_id=request.controller_id, incarnation_id=request.incarnation_id,
                                         zk_migration_ready=request.zk_migration_ready,
                                         end_points=request.listeners, features=request.features, version=0):
            raise Unfixed(f"{r!r} is not node 1's registration of process {k}")
        out.append(k)
    return tuple(out)


def _bool(value: Any) -> bool:
    if type(value) is not bool:
        raise Unfixed(f"{value!r} is not a boolean")
    return value


def _int(value: Any) -> int:
    if type(value) is not int:
        raise Unfixed(f"{value!r} is not an integer")
    return value


def _scheduled(deadline: Any) -> bool:
    """A stated resend deadline as the spec's ``timer``: whether one is scheduled (its time is not judged)."""
    if deadline is None:
        return False
    _int(deadline)
    return True


def _log(controllers: Any) -> int:
    """The stated controller registrations as the spec's ``log``: node 1's registered incarnation, 0 when none."""
    if controllers == {}:
        return 0
    if type(controllers) is not dict or set(controllers) != {str(agree.NODE_ID)}:
        raise Unfixed(f"the spec's log holds node {agree.NODE_ID}'s registration only, not {controllers!r}")
    k = _fixed_number(controllers[str(agree.NODE_ID)].get("incarnation_id"))
    request = agree.request_of(agree.incarnation(k))
    expected = cr.ControllerRegistration(controller_id=request.controller_id, incarnation_id=request.incarnation_id,
                                         zk_migration_ready=request.zk_migration_ready,
                                         listeners=request.listeners, features=request.features)
    if not _same(controllers[str(agree.NODE_ID)], to_json(expected)):
        raise Unfixed(f"{controllers!r} is not node 1's registration of process {k}")
    return k


def _known(mv: Any) -> bool:
    """The manager's metadata.version as the spec's ``mvKnown``: the quorum's 4.3-IV0 learnt, or none yet."""
    if _int(mv) == LATEST_PRODUCTION:
        return True
    if mv == cr.MINIMUM_KRAFT_MV:
        return False
    raise Unfixed(f"the manager knows metadata.version {LATEST_PRODUCTION} or none ({cr.MINIMUM_KRAFT_MV}), not {mv!r}")


_POST_VARIABLES: dict[str, tuple[str, Callable[[Any], TlaValue]]] = {
    "incarnation_id": ("inc", _fixed_number), "channel_started": ("started", _bool),
    "known_metadata_version": ("mvKnown", _known), "registered": ("registered", _bool),
    "pending_rpcs": ("pending", _int),
    "failed_rpcs": ("failed", _int), "resend_deadline_ms": ("timer", _scheduled), "controllers": ("log", _log)}
"""Each post-state field with a counterpart in the spec: the spec's variable and the stated value's conversion."""


def _post(post: Mapping[str, Any]) -> dict[str, TlaValue]:
    """The stated post-state as the spec's variables (fields without a counterpart are not judged)."""
    out: dict[str, TlaValue] = {}
    for name, value in post.items():
        if name in _POST_VARIABLES:
            variable, convert = _POST_VARIABLES[name]
            out[variable] = convert(value)
        elif name == "metadata_version":
            if not _same(value, LATEST_PRODUCTION):
                raise Unfixed(f"the spec's quorum runs metadata.version {LATEST_PRODUCTION}, not {value!r}")
        elif name in _NOT_JUDGED:
            _int(value)
        else:
            raise Unfixed(f"unknown post-state field {name!r}")
    return out


def _arguments(step: Step) -> dict[str, TlaValue]:
    """The spec action and its arguments; :class:`Outside` for an input the spec cannot express."""
    args = step.input
    fields: dict[str, TlaValue] = {}
    if step.action == "register_controller":
        request = args["request"]
        k = _number(request.incarnation_id)
        if k is None or request != agree.request_of(request.incarnation_id):
            raise Outside(f"the request is not one node {agree.NODE_ID}'s process sends in the spec (incarnation "
                          "inc<k>, its listeners, no features)")
        fields["n"] = k
        if not args.get("authorized", True):
            fields["act"], fields["deny"] = "Fails", Errors.CLUSTER_AUTHORIZATION_FAILED.name
        elif not args.get("active", True):
            fields["act"], fields["deny"] = "Fails", Errors.NOT_CONTROLLER.name
    elif step.action == "on_response":
        fields["ok"] = args.get("error", Errors.NONE) == Errors.NONE
    elif step.action == "on_metadata_update":
        mv = args.get("metadata_version")
        if mv is not None and mv != LATEST_PRODUCTION:
            raise Outside(f"metadata.version {mv} is published (the spec's quorum runs {LATEST_PRODUCTION})")
        fields["reg"], fields["mv"] = bool(args.get("registration_changed", False)), mv is not None
    elif step.action == "restart":
        k = _number(args["incarnation_id"])
        if k is None:
            raise Outside(f"incarnation id {args['incarnation_id']!r} is not the spec's inc<k>")
        fields["n"] = k
    return fields


@fixing
def _outputs(step: Step) -> dict[str, TlaValue]:
    """The stated outputs and post-state (``fixed`` FALSE instead when one is not as the spec fixes it: ``fixing``)."""
    fields: dict[str, TlaValue] = {}
    response = step.response or {}
    if step.action == "register_controller":
        if not set(response) <= {"error", "message"}:
            raise Unfixed(f"register_controller answers an error and a message, not {response!r}")
        if "error" in response:
            name = error_name(response["error"])
            if name is None:
                raise Unfixed(f"{response['error']!r} is not an error")
            fields["err"] = name
    elif step.action in _MANAGER_ACTIONS:
        if not set(response) <= {"sends"}:
            raise Unfixed(f"the manager answers the requests it sent, not {response!r}")
        if "sends" in response:
            fields["hasSends"], fields["sends"] = True, tuple(_sent(r) for r in response["sends"])
    elif response:
        raise Unfixed(f"{step.action} answers nothing, not {response!r}")
    if step.records is not None:
        fields["nrec"], fields["recs"] = len(step.records), _written(step.records)
    post = _post(step.post or {})
    return {**fields, "stated": frozenset(post), "post": record(**{**_NO_POST, **post})}


def encode_step(step: Step) -> str:
    """The step as a ``ControllerRegistrationTrace`` step record. Raises :class:`Outside` when the spec cannot
    express it."""
    act = _SPEC_ACTIONS[modelled(step, _SPEC_ACTIONS, "the spec")]
    fields: dict[str, TlaValue] = {
        "act": act, "n": 0, "ok": True, "reg": False, "mv": False, "deny": "", "err": "?", "hasSends": False,
        "sends": (), "nrec": -1, "recs": (), "stated": frozenset(), "post": record(**_NO_POST)}
    fields.update(_arguments(step))
    fields.update(_outputs(step))
    return to_tla(record(**fields))


def _initial(trace: Trace, constants: Mapping[str, TlaValue]) -> str:
    """The spec's ``Init``, when the trace starts from the reference state it corresponds to (``controller_tla.EXPLICIT``)."""
    if controller_replay.initial(trace) != explicit_state(EXPLICIT):
        raise Outside(f"the spec starts from node {agree.NODE_ID}'s first process (inc1, channel not started, "
                      "metadata.version unknown) with no controller registered (traces/recording/controller_tla.py EXPLICIT)")
    (state,) = agree.initial_states(constants)
    return to_tla(record(**agree.project(state)))


def encode(trace: Trace, constants: Mapping[str, TlaValue]) -> Encoded:
    """``trace`` in the trace module's vocabulary, up to its first step the spec cannot express."""
    return encoded(lambda: _initial(trace, constants), lambda: map(encode_step, trace.steps))


MODULE = TraceModule("controller", "ControllerRegistration",
                     ("inc", "started", "mvKnown", "registered", "pending", "failed", "timer", "log", "net", "resp",
                      "publishReg", "publishMv", "sent", "restarts", "t", "i", "outside"), encode)
"""``spec/ControllerRegistrationTrace.tla``: the spec's variables, then the trace index, the steps explained and why
it stopped."""
