"""``kraftspec conform --kafka VERSION TRACES...``: Apache Kafka's own code given each trace's inputs, judged by the reference.

For every trace, the harness JVM applies the trace's inputs to Kafka's classes (one round trip per trace) and
Kafka's responses, records and post-states become a trace of their own, which the reference replays exactly as
``kraftspec check`` replays a recorded trace: the first step where Kafka and the reference differ, with the
field-level diff and the deciding rule. An input on which Kafka's code throws agrees only if the reference
refuses it too. The trace's own stated outputs are judged beside it (``check``'s verdict), so a trace recorded
under a wrong variant of the reference shows as flagged while Kafka, given the same inputs, agrees.

Outcomes per trace: ``agree`` (Kafka conforms), ``DISAGREE`` (a finding), ``not expressible`` (the harness
cannot give Kafka some input: a limit of the harness, printed with its reason, never counted as agreement)
and ``unreadable``. Exit code: 1 on any disagreement, else 2 on any unreadable or inexpressible trace or when
the harness is unavailable, else 0.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, replace
from typing import Any, Iterator, Optional, TextIO

from kraftspec.harness.adapter import Hooks, hooks
from kraftspec.harness.jvm import HarnessError, HarnessUnavailable, KafkaProcess
from kraftspec.traces.replay.check import describe, _items
from kraftspec.traces.format.envelope import Trace, components, step_from_json, trace_to_json
from kraftspec.traces.replay.verdict import Divergence, FieldDiff, Verdict, replay
from kraftspec.traces.format.values import TraceError

EXIT_OK, EXIT_FINDING, EXIT_ERROR = 0, 1, 2


@dataclass(frozen=True)
class Conformance:
    """One trace: the reference's verdict on Kafka's run (None if not run) and on the trace's own outputs."""

    trace_id: Optional[str]
    component: str
    kafka: Optional[Verdict]
    recorded: Verdict
    kafka_trace: Optional[Trace] = None
    inexpressible: Optional[str] = None

    @property
    def outcome(self) -> str:
        if self.inexpressible is not None:
            return "not expressible"
        assert self.kafka is not None
        return "agree" if self.kafka.conformant else "DISAGREE"


def _initial(trace: Trace) -> dict[str, Any]:
    return {"standard": trace.standard} if trace.standard is not None else {"explicit": dict(trace.explicit or {})}


def kafka_trace(trace: Trace, process: KafkaProcess, component_hooks: Hooks) -> tuple[Trace, Optional[dict[str, str]]]:
    """The trace's inputs applied to Kafka: Kafka's steps as a trace, and the refusal that ended it, if any.

    A refused input ends the trace with that input alone (no outputs), so that replaying it asks whether the
    reference refuses it too.
    """
    obj = trace_to_json(trace)
    inputs = component_hooks.inputs(obj["steps"])
    answers = process.run(trace.component, component_hooks.kafka_initial(obj["initial"]), inputs)
    component = components()[trace.component]
    steps, refusal = [], None
    for index, (sent, answer) in enumerate(zip(inputs, answers)):
        if "refused" in answer:
            refusal = answer["refused"]
            given = component_hooks.refused_input(obj["steps"][index]["input"], answer)
            steps.append(step_from_json(component, {"input": given}, f"steps[{index}]"))
            break
        step = component_hooks.checked_step(obj["steps"][index]["input"], sent, answer)
        steps.append(step_from_json(component, step, f"kafka steps[{index}]"))
    meta = {**trace.meta, "generator": f"kraftspec conform --kafka {process.kafka_version}",
            "recorded_from": trace.id}
    return replace(trace, steps=tuple(steps), meta=meta), refusal


def judge(kafka: Trace, refusal: Optional[dict[str, str]]) -> Verdict:
    """The reference's verdict on Kafka's trace; a Kafka refusal must meet a refusal by the reference."""
    verdict = replay(kafka)
    if refusal is None:
        return verdict
    last = len(kafka.steps) - 1
    kafka_threw = f"refused by Kafka: {refusal['exception']}: {refusal['message']}"
    d = verdict.divergence
    if d is not None and d.step < last:
        return verdict
    if d is not None and d.step == last and any(f.path == "input" for f in d.diffs):
        return Verdict(verdict.trace_id, len(kafka.steps), None)  # both refuse the input
    accepted = Divergence(last, dict(trace_to_json(kafka)["steps"][last]["input"]),
                          (FieldDiff("input", "accepted by the reference", kafka_threw),), *_rule(kafka, last))
    return Verdict(verdict.trace_id, len(kafka.steps), accepted)


def _rule(trace: Trace, index: int) -> tuple[str, str, str]:
    from kraftspec.traces.replay.verdict import REPLAYERS

    name, doc = REPLAYERS[trace.component].rule(trace.steps[index].action)
    return name, doc, "(see the steps before it)"


def conform_trace(trace: Trace, process: KafkaProcess) -> Conformance:
    recorded = replay(trace)
    try:
        component_hooks = hooks(trace.component)
    except KeyError as exc:
        return Conformance(trace.id, trace.component, None, recorded, inexpressible=str(exc.args[0]))
    try:
        kafka, refusal = kafka_trace(trace, process, component_hooks)
    except HarnessError as exc:
        reason = str(exc).strip().splitlines()[0]
        return Conformance(trace.id, trace.component, None, recorded, inexpressible=reason)
    return Conformance(trace.id, trace.component, judge(kafka, refusal), recorded, kafka_trace=kafka)


def conform_files(paths: list[str], process: KafkaProcess) -> Iterator[tuple[str, str, Any]]:
    """(file, where, Conformance or error text) for every trace of every file."""
    for path in paths:
        for where, _count, item in _items(path):
            if isinstance(item, TraceError):
                yield path, where, " ".join(str(item).split())
                continue
            try:
                yield path, where, conform_trace(item, process)
            except TraceError as exc:  # a stated output field the reference's output does not have
                yield path, where, " ".join(str(exc).split())


def conform_command(paths: list[str], version: str, *, as_json: bool = False, record: Optional[str] = None,
                    out: TextIO = sys.stdout) -> int:
    """Run every trace of ``paths`` on Kafka ``version``; print per trace, per component and the totals."""
    try:
        process = KafkaProcess(version)
    except HarnessUnavailable as exc:
        print(f"kraftspec conform: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    totals = {"agree": 0, "DISAGREE": 0, "not expressible": 0, "unreadable": 0}
    per_component: dict[str, dict[str, int]] = {}
    report: list[dict[str, Any]] = []
    recorded_out = open(record, "w") if record else None
    try:
        for path, where, item in conform_files(paths, process):
            label = f"{path}:{where.split()[-1]}" if where.startswith("line") else f"{path} {where}".strip()
            if isinstance(item, str):
                totals["unreadable"] += 1
                report.append({"file": path, "where": where, "outcome": "unreadable", "error": item})
                if not as_json:
                    print(f"{label}: error: {item}", file=out)
                continue
            totals[item.outcome] += 1
            counts = per_component.setdefault(item.component, {k: 0 for k in ("agree", "DISAGREE", "not expressible",
                                                                               "steps", "recorded flagged")})
            counts[item.outcome] += 1
            counts["steps"] += item.kafka.steps if item.kafka is not None else 0
            counts["recorded flagged"] += not item.recorded.conformant
            if recorded_out is not None and item.kafka_trace is not None:
                from kraftspec.traces.format.jsonl import dumps

                recorded_out.write(dumps(item.kafka_trace) + "\n")
            if as_json:
                report.append(_json(path, where, item))
            else:
                print(f"{label}{f' ({item.trace_id})' if item.trace_id else ''}: {_text(item)}", file=out)
    finally:
        process.close()
        if recorded_out is not None:
            recorded_out.close()
    read = sum(totals.values())
    if as_json:
        json.dump({"kafka": version, "read": read, **totals, "components": per_component, "traces": report}, out,
                  indent=1)
        out.write("\n")
    else:
        for name, counts in sorted(per_component.items()):
            print(f"component {name} on Kafka {version}: {counts['agree']} agree, {counts['DISAGREE']} disagree, "
                  f"{counts['not expressible']} not expressible ({counts['steps']} steps run on Kafka); "
                  f"{counts['recorded flagged']} of the traces' own recordings flagged by the reference", file=out)
        print(f"conformed {read} traces from {len(paths)} file(s) on Kafka {version}: {totals['agree']} agree, "
              f"{totals['DISAGREE']} disagree, {totals['not expressible']} not expressible, "
              f"{totals['unreadable']} unreadable", file=out)
    if totals["DISAGREE"]:
        return EXIT_FINDING
    return EXIT_ERROR if totals["unreadable"] or totals["not expressible"] or not read else EXIT_OK


def _text(item: Conformance) -> str:
    recorded = ("the trace's own outputs conform" if item.recorded.conformant else
                f"the trace's own outputs diverge at step {item.recorded.divergence.step}")  # type: ignore[union-attr]
    if item.inexpressible is not None:
        return f"not expressible to Kafka: {item.inexpressible}; {recorded}"
    assert item.kafka is not None
    if item.kafka.conformant:
        return f"agree ({item.kafka.steps} steps on Kafka); {recorded}"
    return f"DISAGREE: Kafka {describe(item.kafka)}\n  {recorded}"


def _json(path: str, where: str, item: Conformance) -> dict[str, Any]:
    obj: dict[str, Any] = {"file": path, "where": where, "id": item.trace_id, "component": item.component,
                           "outcome": item.outcome, "recorded_conformant": item.recorded.conformant}
    if item.inexpressible is not None:
        obj["reason"] = item.inexpressible
    if item.kafka is not None:
        obj["steps"] = item.kafka.steps
        d = item.kafka.divergence
        if d is not None:
            obj["divergence"] = {"step": d.step, "input": d.input, "rule": d.rule,
                                 "diff": [{"path": f.path, "expected": f.expected, "observed": f.observed}
                                          for f in d.diffs]}
    return obj
