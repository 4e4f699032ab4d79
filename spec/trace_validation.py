"""Trace validation with TLC: is a broker trace a behaviour of ``BrokerLifecycle.tla`` itself?

The technique of etcd's and CCF's Raft trace validation. ``BrokerLifecycleTrace.tla`` extends the
spec and constrains its actions to the steps of recorded traces; this module maps traces (trace
format v1, ``traces/FORMAT.md``) into that module's vocabulary, writes a generated module with the
traces as the constant ``TraceSet`` (many traces per TLC run: the trace index is chosen in the
initial state), runs TLC, and reads back how far the spec could follow each trace.

A spec verdict is ``accepted`` (every step explained), ``rejected`` at a step (no successor of the
spec matches the step's action, arguments, outputs and stated post-state) or ``outside`` the spec's
bounds at a step (an action the spec does not model, a broker id outside ``Brokers``, the log end at
``MaxOffset``, an input against the spec's assumptions on brokers, ...): the spec cannot judge it,
which is not a rejection.
"""

from __future__ import annotations

import dataclasses
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Sequence

from kraftspec.reference import broker
from kraftspec.reference.errors import Errors
from kraftspec.reference.frozen import FrozenMap
from kraftspec.spec import agree_broker
from kraftspec.spec.tla_parse import to_tla
from kraftspec.spec.tla_values import Fn, TlaValue, fn, record
from kraftspec.spec.tlc import TlcError, run_tlc
from kraftspec.spec.tlc_config import read_constants
from kraftspec.traces import broker_replay
from kraftspec.traces.format import Step, Trace

SPEC_DIR = Path(__file__).resolve().parent
TRACE_MODULE = "BrokerLifecycleTrace"
BATCH = 1000
_REPORT = re.compile(r'^<<"kraftspec-trace", (\d+), (\d+), "((?:[^"\\]|\\.)*)">>\s*$', re.M)
_SPEC_ACTIONS = {"register_broker": "Register", "heartbeat": "Heartbeat", "fence_stale_broker": "FenceStaleBroker",
                 "unregister_broker": "Unregister", "failover": "Failover", "advance_clock": "Tick"}
_UNKNOWN_EPOCH = -2


@dataclass(frozen=True)
class SpecVerdict:
    """What the spec says of one trace: ``accepted``, ``rejected`` or ``outside``; ``step`` is 0-based."""

    outcome: str
    step: Optional[int] = None
    reason: str = ""

    def line(self) -> str:
        """One line for a report."""
        if self.outcome == "accepted":
            return "accepted by the spec"
        if self.outcome == "rejected":
            return f"REJECTED by the spec at step {self.step}: {self.reason}"
        where = "" if self.step is None else f" at step {self.step}"
        return f"outside the spec's bounds{where}: {self.reason}"


class Outside(Exception):
    """A trace, step or field the spec's vocabulary cannot express."""


@dataclass(frozen=True)
class Encoded:
    """A trace in the trace module's vocabulary: the steps before ``cut`` (the first inexpressible one)."""

    init: Optional[str]
    steps: tuple[str, ...]
    cut: Optional[int] = None
    cut_reason: str = ""


def bounds() -> dict[str, TlaValue]:
    """The constants of ``BrokerLifecycle.cfg`` (the bounds the traces are validated under)."""
    return read_constants(SPEC_DIR / "BrokerLifecycle.cfg")


def _brokers(constants: Mapping[str, TlaValue]) -> list[int]:
    return sorted(constants["Brokers"])  # type: ignore[arg-type]


def _broker_id(value: Any, constants: Mapping[str, TlaValue]) -> int:
    if value not in constants["Brokers"]:  # type: ignore[operator]
        raise Outside(f"broker id {value} is not in Brokers {to_tla(constants['Brokers'])}")
    return int(value)


def _incarnation(text: Any, constants: Mapping[str, TlaValue]) -> int:
    if not (isinstance(text, str) and text.lstrip("-").isdigit() and int(text) in constants["Incarnations"]):  # type: ignore[operator]
        raise Outside(f"incarnation id {text!r} is not one of Incarnations {to_tla(constants['Incarnations'])}")
    return int(text)


def _within(value: int, low: int, high: int, what: str) -> int:
    if not low <= value <= high:
        raise Outside(f"{what} {value} is outside {low}..{high}")
    return value


def _initial(trace: Trace, constants: Mapping[str, TlaValue]) -> Fn:
    """The trace's initial state as the spec's variables (the reference builds it from the records)."""
    control = broker_replay.initial(trace)
    if control.session_timeout != constants["SessionTimeout"]:
        raise Outside(f"session timeout {control.session_timeout} is not SessionTimeout {constants['SessionTimeout']}")
    if control.metadata_version != agree_broker.METADATA_VERSION or control.behaviour is not broker.KAFKA_4_1:
        raise Outside(f"the spec models metadata.version {agree_broker.METADATA_VERSION} on Kafka 4.1+, not "
                      f"{control.metadata_version} on {control.behaviour.name}")
    if not control.active:
        raise Outside("the controller is not active")
    for b in control.brokers:
        _broker_id(b, constants)
    if set(control.partitions) != {(agree_broker.TOPIC.topic_id, 0)}:
        raise Outside(f"the spec models one partition, {agree_broker.TOPIC.topic_id}:0")
    try:
        state = agree_broker.project(agree_broker.ExploredState(
            control, 0, FrozenMap({b: "none" for b in _brokers(constants)})))
    except (KeyError, ValueError) as exc:
        raise Outside(f"the initial state has no counterpart in the spec ({exc})") from None
    return record(**state)


def _canonical_registration(request: broker.BrokerRegistrationRequest) -> Optional[str]:
    """The first request field the spec does not model that differs from the spec's broker's registration."""
    canonical = broker.BrokerRegistrationRequest(
        broker_id=request.broker_id, cluster_id=agree_broker.CLUSTER_ID, incarnation_id=request.incarnation_id,
        features=agree_broker.FEATURES, log_dirs=(agree_broker.directory_of(request.broker_id),))
    for f in dataclasses.fields(request):
        if f.name != "version" and getattr(request, f.name) != getattr(canonical, f.name):
            return f.name
    return None


def _post(post: Mapping[str, Any], constants: Mapping[str, TlaValue]) -> dict[str, TlaValue]:
    """The post-state fields a trace states, as the spec's variables (only those stated)."""
    out: dict[str, TlaValue] = {}
    unknown = sorted(set(post) - {"clock", "active", "next_offset", "brokers", "heartbeats", "sessions", "partitions"})
    if unknown:
        raise Outside(f"post-state field {unknown[0]!r} has no counterpart in the spec")
    if post.get("active") is False:
        raise Outside("the controller is not active")
    if "clock" in post:
        out["clock"] = post["clock"]
    if "next_offset" in post:
        out["nextOffset"] = post["next_offset"]
    if "brokers" in post:
        brokers = {_broker_id(int(b), constants): r for b, r in post["brokers"].items()}
        out["reg"] = fn({b: record(epoch=-1, inc=0, fenced=True, ics=False) for b in _brokers(constants)}
                        | {b: record(epoch=r["epoch"], inc=_incarnation(r["incarnation_id"], constants),
                                     fenced=r["fenced"], ics=r["in_controlled_shutdown"]) for b, r in brokers.items()})
    if "heartbeats" in post:
        entries = {_broker_id(int(b), constants): h for b, h in post["heartbeats"].items()}
        out["hb"] = fn({b: record(present=False, fenced=True, offset=-1, cso=-1) for b in _brokers(constants)}
                       | {b: record(present=True, fenced=h["fenced"], offset=h["metadata_offset"],
                                    cso=h["controlled_shutdown_offset"]) for b, h in entries.items()})
    if "sessions" in post:
        triples = set()
        for key, contact in post["sessions"].items():
            b, _, e = key.partition(":")
            triples.add((_broker_id(int(b), constants), int(e), contact))
        out["sessions"] = frozenset(triples)
    if "partitions" in post:
        key = f"{agree_broker.TOPIC.topic_id}:0"
        if set(post["partitions"]) != {key}:
            raise Outside(f"the spec models one partition, {key}")
        p = post["partitions"][key]
        out["part"] = record(leader=p["leader"], isr=tuple(p["isr"]), leaderEpoch=p["leader_epoch"],
                             partitionEpoch=p["partition_epoch"])
    return out


def _ok(response: Optional[Mapping[str, Any]]) -> str:
    """``yes``/``no``: whether the stated response reports success; ``?`` when it does not say."""
    if response is None or "error" not in response:
        return "?"
    error = response["error"]
    return "yes" if error in ("NONE", Errors.NONE.value) and not isinstance(error, bool) else "no"


def _reply(response: Optional[Mapping[str, Any]]) -> str:
    """The control state a successful heartbeat reply grants (``agree_broker.granted_state``), ``?`` if unstated."""
    fields = ("should_shut_down", "in_controlled_shutdown", "is_fenced")
    if response is None or any(f not in response for f in fields):
        return "?"
    return agree_broker.granted_state(broker.BrokerHeartbeatResponse(
        Errors.NONE, is_fenced=response["is_fenced"], in_controlled_shutdown=response["in_controlled_shutdown"],
        should_shut_down=response["should_shut_down"]))


def encode_step(step: Step, clock: int, constants: Mapping[str, TlaValue]) -> tuple[str, int]:
    """The step as a ``BrokerLifecycleTrace`` step record, and the trace's clock after it.

    Raises :class:`Outside` when the step has no counterpart in the spec's vocabulary.
    """
    act = _SPEC_ACTIONS.get(step.action)
    if act is None:
        raise Outside(f"action {step.action!r} is not modelled by the spec "
                      f"(it models {', '.join(sorted(_SPEC_ACTIONS))})")
    args = step.input
    if args.get("authorized") is False:
        raise Outside("the spec does not model authorization")
    now = args.get("now", clock)
    fields: dict[str, TlaValue] = {"act": act, "b": 0, "i": 0, "e": 0, "off": 0, "wf": False, "ws": False,
                                   "now": now, "ok": _ok(step.response), "reply": "?", "ep": _UNKNOWN_EPOCH}
    max_offset = int(constants["MaxOffset"])  # type: ignore[call-overload]
    if act == "Register":
        request = args["request"]
        fields["b"] = _broker_id(request.broker_id, constants)
        fields["i"] = _incarnation(request.incarnation_id, constants)
        differs = _canonical_registration(request)
        if differs is not None:
            raise Outside(f"registration field {differs!r} differs from the spec's brokers' registrations")
        if fields["ok"] == "yes" and step.response is not None and "broker_epoch" in step.response:
            fields["ep"] = step.response["broker_epoch"]
    elif act == "Heartbeat":
        request = args["request"]
        fields["b"] = _broker_id(request.broker_id, constants)
        fields["e"] = _within(request.broker_epoch, 0, max_offset, "broker epoch")
        fields["off"] = _within(request.current_metadata_offset, -1, max_offset, "metadata offset")
        fields["wf"], fields["ws"] = request.want_fence, request.want_shut_down
        if fields["ok"] == "yes":
            fields["reply"] = _reply(step.response)
    elif act == "FenceStaleBroker":
        which = args.get("which")
        if step.response is not None and "expired_session" in step.response:
            which = step.response["expired_session"]
            fields["ok"] = "no" if which is None else "yes"
        else:
            fields["ok"] = "?"
        fields["b"], fields["e"] = (-1, 0) if which is None else (
            _broker_id(which[0], constants), _within(which[1], 0, max_offset, "broker epoch"))
    elif act == "Unregister":
        fields["b"] = _broker_id(args["broker_id"], constants)
    post = _post(step.post or {}, constants)
    fields["nrec"] = -1 if step.records is None else len(step.records)
    fields["stated"] = frozenset(post)
    fields["post"] = record(**(post or {"nothing": 0}))
    return to_tla(record(**fields)), now


def encode(trace: Trace, constants: Mapping[str, TlaValue]) -> Encoded:
    """``trace`` in the trace module's vocabulary, up to its first step the spec cannot express."""
    if trace.component != "broker":
        return Encoded(None, (), 0, f"component {trace.component!r} has no trace-validation module")
    try:
        init = to_tla(_initial(trace, constants))
    except Outside as exc:
        return Encoded(None, (), 0, f"initial state: {exc}")
    steps: list[str] = []
    clock = 0
    for index, step in enumerate(trace.steps):
        try:
            text, clock = encode_step(step, clock, constants)
        except Outside as exc:
            return Encoded(init, tuple(steps), index, str(exc))
        steps.append(text)
    return Encoded(init, tuple(steps))


def _module(name: str, encoded: Sequence[Encoded], constants: Mapping[str, TlaValue]) -> str:
    """The generated root module: the traces as constant definitions, the trace module instantiated with them.

    Each distinct initial state and step is written once (``I<n>``, ``S<n>``) and traces refer to them
    by name: SANY's parsing time grows with the text, and traces share most of their steps.
    Instantiating (rather than substituting ``TraceSet <- Traces`` in the config) lets TLC evaluate the
    traces once, as constant definitions of the root module, instead of at every reference.
    """
    names: dict[str, str] = {}

    def named(prefix: str, text: str) -> str:
        return names.setdefault(text, f"{prefix}{len(names)}")

    traces = [f"[init |-> {named('I', e.init or '')}, steps |-> <<{', '.join(named('S', s) for s in e.steps)}>>]"
              for e in encoded]
    definitions = "".join(f"{label} == {text}\n" for text, label in names.items())
    body = ",\n ".join(traces)
    return (f"---- MODULE {name} ----\nEXTENDS Integers, TLC\nCONSTANTS {', '.join(constants)}\n"
            "VARIABLES clock, nextOffset, reg, hb, sessions, part, lastReply, t, i, outside\n"
            f"{definitions}Traces == <<{body}>>\n"
            f"V == INSTANCE {TRACE_MODULE} WITH TraceSet <- Traces\n"
            "Init == V!TraceInit\nNext == V!TraceNext\n====\n")


def _config(constants: Mapping[str, TlaValue]) -> str:
    assigned = "\n".join(f"    {name} = {to_tla(value)}" for name, value in constants.items())
    return f"CONSTANTS\n{assigned}\nINIT Init\nNEXT Next\n"


def _run_batch(encoded: Sequence[Encoded], constants: Mapping[str, TlaValue], timeout_s: float,
               workers: int) -> dict[int, tuple[int, set[str]]]:
    """One TLC run over ``encoded``: per 1-based trace index, the longest explained prefix and why it stopped."""
    with tempfile.TemporaryDirectory(prefix="kraftspec-tv-") as tmp:
        folder = Path(tmp)
        for tla in (TRACE_MODULE, "BrokerLifecycle"):
            (folder / f"{tla}.tla").write_text((SPEC_DIR / f"{tla}.tla").read_text())
        module = folder / "TraceBatch.tla"
        module.write_text(_module("TraceBatch", encoded, constants))
        (folder / "TraceBatch.cfg").write_text(_config(constants))
        result = run_tlc(module, folder / "TraceBatch.cfg", timeout_s=timeout_s, workers=workers)
    if result.verdict != "ok":
        raise TlcError(f"TLC did not finish validating the traces: {result.summary()}: {result.error_message}", result)
    reached: dict[int, tuple[int, set[str]]] = {}
    for m in _REPORT.finditer(result.output):
        index, k, why = int(m.group(1)), int(m.group(2)), m.group(3)
        best, reasons = reached.get(index, (-1, set()))
        if k > best:
            reached[index] = (k, {why} - {""})
        elif k == best and why:
            reasons.add(why)
    return reached


def validate(traces: Iterable[Trace], *, batch: int = BATCH, timeout_s: float = 900.0,
             workers: int = 1) -> list[SpecVerdict]:
    """The spec's verdict on each trace, in order; ``batch`` traces per TLC run.

    Raises :class:`~kraftspec.spec.tlc.TlcError` when TLC is unavailable or gives no verdict.
    """
    constants = bounds()
    encoded = [encode(trace, constants) for trace in traces]
    verdicts: list[Optional[SpecVerdict]] = [None] * len(encoded)
    runnable = [n for n, e in enumerate(encoded) if e.init is not None]
    for n, e in enumerate(encoded):
        if e.init is None:
            verdicts[n] = SpecVerdict("outside", None, e.cut_reason)
    for start in range(0, len(runnable), batch):
        chunk = runnable[start:start + batch]
        reached = _run_batch([encoded[n] for n in chunk], constants, timeout_s, workers)
        for position, n in enumerate(chunk, start=1):
            verdicts[n] = _verdict(encoded[n], reached.get(position))
    return [v for v in verdicts if v is not None]


def _verdict(encoded: Encoded, reached: Optional[tuple[int, set[str]]]) -> SpecVerdict:
    if reached is None:
        return SpecVerdict("outside", None, "its initial state is not one of the spec's initial states (Init)")
    k, reasons = reached
    if reasons:
        return SpecVerdict("outside", k, "; ".join(sorted(reasons)))
    if k == len(encoded.steps):
        return SpecVerdict("accepted") if encoded.cut is None else SpecVerdict("outside", encoded.cut, encoded.cut_reason)
    return SpecVerdict("rejected", k, "no step of the spec from the state before it matches the step's action, "
                                      "arguments, outputs and stated post-state")
