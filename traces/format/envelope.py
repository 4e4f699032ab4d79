"""Trace format v1 (``traces/FORMAT.md``, ``traces/trace-v1.schema.json``): the envelope and its checks.

A trace is a component, an initial state (a named standard one or an explicit one) and steps; a
step is an input (``action`` and its arguments) with the outputs the implementation produced
(``response`` fields, ``records`` written with offsets) and optionally observed ``post`` fields.
Versioning: major 1 is read; unknown fields of a newer minor are ignored; any other major is
refused with a message saying which majors this kraftspec reads.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Protocol

from kraftspec.reference.records import MetadataRecord
from kraftspec.traces.format.limits import MAX_JSON_DEPTH, quote, too_deep
from kraftspec.traces.format.values import TraceError, require

FORMAT_VERSION = "1.0"
MAJOR = 1
Written = tuple[tuple[int, MetadataRecord], ...]


@dataclass(frozen=True)
class Step:
    """One input with what the implementation did: ``input`` holds the decoded arguments of ``action``.

    ``response`` (observed response fields, JSON values), ``records`` (offset, record) and ``post``
    (observed post-state fields) are None when the trace does not state them.
    """

    action: str
    input: Mapping[str, Any]
    response: Optional[Mapping[str, Any]] = None
    records: Optional[Written] = None
    post: Optional[Mapping[str, Any]] = None


@dataclass(frozen=True)
class Trace:
    """A component, its initial state (``standard`` name or ``explicit`` JSON object), the steps and metadata."""

    component: str
    steps: tuple[Step, ...]
    standard: Optional[str] = None
    explicit: Optional[Mapping[str, Any]] = None
    id: Optional[str] = None
    meta: Mapping[str, Any] = field(default_factory=dict)
    format: str = FORMAT_VERSION
    view: Optional[Mapping[str, frozenset[str]]] = None
    """The outputs the trace records (``sends``: message types, ``records``: record types); None: all of them."""


class Component(Protocol):
    """What a component contributes to the format: its actions, records and initial states."""

    name: str
    standard_states: Mapping[str, Any]

    def decode_input(self, action: str, obj: dict[str, Any], path: str) -> Mapping[str, Any]: ...

    def encode_input(self, action: str, args: Mapping[str, Any]) -> dict[str, Any]: ...

    def decode_record(self, obj: object, path: str) -> tuple[int, MetadataRecord]: ...

    def encode_record(self, offset: int, record: MetadataRecord) -> dict[str, Any]: ...

    def check_explicit(self, obj: dict[str, Any], path: str) -> None: ...


def components() -> dict[str, Component]:
    """The components traces may name (each module registers its own actions)."""
    from kraftspec.traces.format.broker import BROKER
    from kraftspec.traces.format.controller import CONTROLLER
    from kraftspec.traces.format.partition import PARTITION
    from kraftspec.traces.format.raft import RAFT

    return {BROKER.name: BROKER, PARTITION.name: PARTITION, RAFT.name: RAFT, CONTROLLER.name: CONTROLLER}


def check_version(version: object) -> None:
    """Accept ``1.x`` (any minor); refuse other majors and malformed versions with a clear message."""
    major_text = version.partition(".")[0] if isinstance(version, str) else ""
    if not (0 < len(major_text) <= 9 and major_text.isascii() and major_text.isdigit()):  # not '²', not 5,000 digits
        raise TraceError(f"format: expected a version string like \"{FORMAT_VERSION}\", got {quote(version)}")
    major = int(major_text)
    if major != MAJOR:
        raise TraceError(f"format: trace format version {str(version)[:80]} is not supported: this kraftspec reads "
                         f"major version {MAJOR} (1.x); convert the trace or use a kraftspec that reads {major}.x")


def trace_from_json(obj: object) -> Trace:
    """Decode and check one trace (parsed JSON); a :class:`TraceError` names the first bad field."""
    if not isinstance(obj, dict):
        raise TraceError("trace: expected a JSON object")
    check_version(obj.get("format"))
    name = require(obj, "component", str, "trace")
    component = components().get(name)
    if component is None:
        raise TraceError(f"component: unknown component {quote(name)} (known: {', '.join(sorted(components()))})")
    initial = require(obj, "initial", dict, "trace")
    standard = require(initial, "standard", str, "initial", optional=True)
    explicit = require(initial, "explicit", dict, "initial", optional=True)
    if (standard is None) == (explicit is None):
        raise TraceError("initial: give exactly one of 'standard' and 'explicit'")
    if standard is not None and standard not in component.standard_states:
        raise TraceError(f"initial.standard: unknown initial state {quote(standard)} "
                         f"(known: {', '.join(sorted(component.standard_states))})")
    if explicit is not None:
        _bounded(explicit, "initial.explicit")
        component.check_explicit(explicit, "initial.explicit")
    steps = require(obj, "steps", list, "trace")
    meta = require(obj, "meta", dict, "trace", optional=True) or {}
    _bounded(meta, "meta")
    view = obj.get("view")
    view = None if view is None else view_from_json(name, view)
    decoded = tuple(step_from_json(component, s, f"steps[{i}]") for i, s in enumerate(steps))
    if view is not None:
        for i, step in enumerate(decoded):
            check_in_view(view, step, f"steps[{i}]")
    return Trace(component=name, steps=decoded, standard=standard, explicit=explicit,
                 id=require(obj, "id", str, "trace", optional=True), meta=meta, format=obj["format"], view=view)


def view_kinds(component: str) -> dict[str, frozenset[str]]:
    """The outputs a ``component``'s trace may restrict its view to, each with the type names it may list."""
    if component == "raft":
        from kraftspec.reference import raft_messages

        polled = {"Tick", "Append", "Resign", "Shutdown", "CreateSnapshot", "DeleteBeforeSnapshot",
                  "UpgradeKRaftVersion", "Send"}  # inputs of ``raft.step``, never sent
        # Never sent by a Raft node: the ApiVersions answer of a node's network layer (an auto-joining observer sends
        # AddRaftVoter and RemoveRaftVoter itself).
        untraced = {"ApiVersionsResponse"}
        return {"sends": frozenset(name for name, cls in vars(raft_messages).items() if isinstance(cls, type)
                                   and cls.__module__ == raft_messages.__name__ and hasattr(cls, "__dataclass_fields__")
                                   and name not in polled | untraced)}
    from kraftspec.traces.format.broker import RECORD_TYPES

    return {"records": frozenset(RECORD_TYPES)}


def view_from_json(component: str, obj: object) -> dict[str, frozenset[str]]:
    """A trace's ``view``: for each output it restricts, the type names it records (unknown names refused)."""
    if not isinstance(obj, dict) or not obj:
        raise TraceError("view: expected a non-empty object such as {\"sends\": [\"VoteResponse\"]}")
    kinds = view_kinds(component)
    view: dict[str, frozenset[str]] = {}
    for output, names in obj.items():
        known = kinds.get(output)
        if known is None:
            raise TraceError(f"view.{quote(output)}: a {component} trace restricts only {', '.join(sorted(kinds))}")
        if not isinstance(names, list):
            raise TraceError(f"view.{output}: expected an array of type names")
        for i, name in enumerate(names):
            if name not in known:
                raise TraceError(f"view.{output}[{i}]: unknown type {quote(name)} (known: {', '.join(sorted(known))})")
        view[output] = frozenset(names)
    return view


def check_in_view(view: Mapping[str, frozenset[str]], step: Step, path: str) -> None:
    """Refuse a stated send or record whose type the trace's view leaves out (it could never be compared)."""
    sends = view.get("sends")
    if sends is not None and step.response is not None and isinstance(step.response.get("sends"), list):
        for i, sent in enumerate(step.response["sends"]):
            kind = sent.get("type") if isinstance(sent, dict) else None
            if kind not in sends:
                raise TraceError(f"{path}.output.response.sends[{i}].type: {quote(kind)} is outside the trace's view "
                                 f"(view.sends: {', '.join(sorted(sends))})")
    kept = view.get("records")
    if kept is not None and step.records:
        for i, (_, record) in enumerate(step.records):
            if type(record).__name__ not in kept:
                raise TraceError(f"{path}.output.records[{i}]: {type(record).__name__} is outside the trace's view "
                                 f"(view.records: {', '.join(sorted(kept))})")


def _bounded(value: object, path: str) -> None:
    """A free-form JSON part (no type bounds its shape) nests at most ``MAX_JSON_DEPTH`` deep (kraftspec.traces.format.limits)."""
    if too_deep(value):
        raise TraceError(f"{path}: JSON nested deeper than {MAX_JSON_DEPTH} levels")


def step_from_json(component: Component, obj: object, path: str = "step") -> Step:
    """Decode and check one step (``{"input", "output", "post"}``); a :class:`TraceError` names the bad field."""
    if type(obj) is not dict:
        if not isinstance(obj, dict):
            raise TraceError(f"{path}: expected an object")
    given: Any = obj.get("input")
    action: Any = given.get("action") if type(given) is dict else None
    if type(action) is not str:  # the checks again, for their messages
        given = require(obj, "input", dict, path)
        action = require(given, "action", str, f"{path}.input")
    args = component.decode_input(action, given, f"{path}.input")
    output, post = obj.get("output"), obj.get("post")
    response = records = None
    if output is not None:
        if type(output) is not dict:
            output = require(obj, "output", dict, path, optional=True)
        response = output.get("response")
        if response is not None and type(response) is not dict:
            response = require(output, "response", dict, f"{path}.output", optional=True)
        listed = output.get("records")
        if listed is not None:
            if type(listed) is not list:
                listed = require(output, "records", list, f"{path}.output", optional=True)
            records = tuple([component.decode_record(r, f"{path}.output.records[{i}]") for i, r in enumerate(listed)])
    if post is not None and type(post) is not dict:
        post = require(obj, "post", dict, path, optional=True)
    if response is not None:
        _bounded(response, f"{path}.output.response")
    if post is not None:
        _bounded(post, f"{path}.post")
    return Step(action, args, response, records, post)


def trace_to_json(trace: Trace) -> dict[str, Any]:
    """The JSON object of ``trace`` (decoding it gives ``trace`` back)."""
    component = components()[trace.component]
    initial = {"standard": trace.standard} if trace.standard is not None else {"explicit": dict(trace.explicit or {})}
    obj: dict[str, Any] = {"format": trace.format, "component": trace.component}
    if trace.id is not None:
        obj["id"] = trace.id
    if trace.meta:
        obj["meta"] = dict(trace.meta)
    obj["initial"] = initial
    if trace.view is not None:
        obj["view"] = {output: sorted(names) for output, names in trace.view.items()}
    obj["steps"] = [step_to_json(component, step) for step in trace.steps]
    return obj


def step_to_json(component: Component, step: Step) -> dict[str, Any]:
    """One step as JSON: ``input``, then ``output`` and ``post`` when the trace states them."""
    obj: dict[str, Any] = {"input": {"action": step.action, **component.encode_input(step.action, step.input)}}
    output: dict[str, Any] = {}
    if step.response is not None:
        output["response"] = dict(step.response)
    if step.records is not None:
        output["records"] = [component.encode_record(offset, record) for offset, record in step.records]
    if step.response is not None or step.records is not None:
        obj["output"] = output
    if step.post is not None:
        obj["post"] = dict(step.post)
    return obj
