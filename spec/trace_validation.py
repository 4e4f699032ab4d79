"""Trace validation with TLC: is a trace a behaviour of its component's TLA+ spec itself?

The technique of etcd's and CCF's Raft trace validation. A component's trace module
(``BrokerLifecycleTrace.tla``, ``PartitionLeadershipTrace.tla``) extends its spec and constrains
the spec's actions to the steps of recorded traces; the component's mapping
(``trace_validation_broker``, ``trace_validation_partition``) puts traces (trace format v1,
``traces/FORMAT.md``) into that module's vocabulary. This module writes a generated module with
the traces as the constant ``TraceSet`` (many traces per TLC run: the trace index is chosen in the
initial state), runs TLC once per batch and component, and reads back how far the spec could
follow each trace.

A spec verdict is ``accepted`` (every step explained), ``rejected`` at a step (no successor of the
spec matches the step's action, arguments, outputs and stated post-state) or ``outside`` the spec's
bounds at a step (an action the spec does not model, an id outside the spec's constants, a bound
such as ``MaxOffset`` reached, an input against the spec's assumptions on its environment, ...):
the spec cannot judge it, which is not a rejection.
"""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping, Optional, Sequence

from kraftspec.spec import trace_validation_broker, trace_validation_partition
from kraftspec.spec import trace_validation_controller
from kraftspec.spec import trace_validation_raft
from kraftspec.spec import trace_validation_features
from kraftspec.spec import trace_validation_listener, trace_validation_shutdown, trace_validation_voters
from kraftspec.spec import trace_validation_autojoin
from kraftspec.spec import trace_validation_requests
from kraftspec.spec.tla_parse import to_tla
from kraftspec.spec.tla_values import TlaValue
from kraftspec.spec.tlc import TlcError, run_tlc
from kraftspec.spec.trace_validation_common import SPEC_DIR, Encoded, TraceModule
from kraftspec.traces.format.envelope import Trace

BATCH = 1000
MODULES: dict[str, tuple[TraceModule, ...]] = {
    "broker": (trace_validation_features.MODULE, trace_validation_broker.MODULE),
    "partition": (trace_validation_partition.MODULE,),
    "controller": (trace_validation_controller.MODULE,),
    "raft": (trace_validation_listener.MODULE, trace_validation_shutdown.MODULE, trace_validation_voters.MODULE,
             trace_validation_autojoin.MODULE, trace_validation_requests.MODULE, trace_validation_raft.MODULE)}
"""The trace-validation modules of each trace-format component, the focused specs' before the component's own: a trace
goes to the first whose spec can start from its initial state (a broker trace of ``FeatureLevels.tla``'s controller to
``trace_validation_features``, a raft trace of ``KRaftListener.tla``'s, ``KRaftShutdown.tla``'s, ``KRaftVoters.tla``'s or
``KRaftAutoJoin.tla``'s node to ``trace_validation_listener``, ``trace_validation_shutdown``, ``trace_validation_voters``
or ``trace_validation_autojoin``, one of ``KRaftRequests.tla``'s to ``trace_validation_requests``); a trace none can
start from is outside for the last module's reason (the component's own spec's)."""
_REPORT = re.compile(r'<<\s*"kraftspec-trace",\s*(\d+),\s*(\d+),\s*"((?:[^"\\]|\\.)*)"\s*>>')
"""A trace module's ``Report`` line; TLC breaks a tuple wider than its line width over several lines."""


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


def _module(name: str, trace_module: TraceModule, encoded: Sequence[Encoded], constants: Mapping[str, TlaValue]) -> str:
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
            f"VARIABLES {', '.join(trace_module.variables)}\n"
            f"{definitions}Traces == <<{body}>>\n"
            f"V == INSTANCE {trace_module.name} WITH TraceSet <- Traces\n"
            "Init == V!TraceInit\nNext == V!TraceNext\n====\n")


def _config(constants: Mapping[str, TlaValue]) -> str:
    assigned = "\n".join(f"    {name} = {to_tla(value)}" for name, value in constants.items())
    return f"CONSTANTS\n{assigned}\nINIT Init\nNEXT Next\n"


def _run_batch(trace_module: TraceModule, encoded: Sequence[Encoded], constants: Mapping[str, TlaValue],
               timeout_s: float, workers: int) -> dict[int, tuple[int, set[str]]]:
    """One TLC run of ``trace_module`` over ``encoded``: per 1-based trace index, the longest explained prefix
    and why it stopped."""
    with tempfile.TemporaryDirectory(prefix="kraftspec-tv-") as tmp:
        folder = Path(tmp)
        for tla in (trace_module.name, trace_module.spec):
            (folder / f"{tla}.tla").write_text((SPEC_DIR / f"{tla}.tla").read_text())
        module = folder / "TraceBatch.tla"
        module.write_text(_module("TraceBatch", trace_module, encoded, constants))
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
    """The spec's verdict on each trace, in order: each component's traces against its spec, ``batch`` per TLC run.

    A trace of a component without a trace-validation module is outside from its initial state on.
    Raises :class:`~kraftspec.spec.tlc.TlcError` when TLC is unavailable or gives no verdict.
    """
    traces = list(traces)
    verdicts: list[Optional[SpecVerdict]] = [None] * len(traces)
    for n, trace in enumerate(traces):
        if trace.component not in MODULES:
            verdicts[n] = SpecVerdict("outside", None, f"initial state: component {trace.component!r} has no "
                                                      f"trace-validation module (known: {', '.join(sorted(MODULES))})")
    for component, modules in MODULES.items():
        mine = [n for n, trace in enumerate(traces) if trace.component == component]
        for trace_module in modules:
            if not mine:
                break
            constants = trace_module.bounds()
            encoded = {n: trace_module.encode(traces[n], constants) for n in mine}
            for n, e in encoded.items():
                if e.init is None:
                    verdicts[n] = SpecVerdict("outside", None, e.cut_reason)
            runnable = [n for n in mine if encoded[n].init is not None]
            for start in range(0, len(runnable), batch):
                chunk = runnable[start:start + batch]
                reached = _run_batch(trace_module, [encoded[n] for n in chunk], constants, timeout_s, workers)
                for position, n in enumerate(chunk, start=1):
                    verdicts[n] = _verdict(encoded[n], reached.get(position))
            mine = [n for n in mine if encoded[n].init is None]
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
