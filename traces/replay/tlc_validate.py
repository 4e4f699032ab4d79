"""``kraftspec check --with-tlc``: the reference and the TLA+ spec judge the same traces, side by side.

Each trace is replayed through the reference (``kraftspec.traces.replay.verdict``) and validated against
the spec with TLC (``kraftspec.spec.trace_validation``). They agree when the reference finds the
trace conformant and the spec accepts it, or both stop at the same step. A trace the spec cannot
judge from some step on (outside its bounds) is ``not judged`` unless the reference diverged
earlier, at a step the spec explained: that, like any other difference, is a disagreement (a
finding about the reference or the spec). Every trace read is accounted for. Exit code: 0 all
conformant and in agreement, 1 a divergence or a disagreement, 2 an unreadable trace or TLC unavailable.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from typing import Any, Iterator, Optional, TextIO, Union

from kraftspec.spec.tlc import TlcError
from kraftspec.spec.trace_validation import SpecVerdict, validate
from kraftspec.traces.replay.check import EXIT_ERROR, EXIT_FINDING, EXIT_OK, describe
from kraftspec.traces.format.envelope import Trace
from kraftspec.traces.format.jsonl import read_jsonl
from kraftspec.traces.format.parquet import read_parquet
from kraftspec.traces.replay.verdict import Verdict, replay
from kraftspec.traces.format.values import TraceError


@dataclass(frozen=True)
class Judged:
    """One trace judged by both: where it is, the reference's verdict, the spec's verdict and their agreement."""

    where: str
    reference: Verdict
    spec: SpecVerdict

    @property
    def agreement(self) -> str:
        """``agree``, ``disagree`` or ``not judged`` (the spec stopped at its bounds first)."""
        diverged = self.reference.divergence.step if self.reference.divergence is not None else None
        if self.spec.outcome == "outside":
            reached = -1 if self.spec.step is None else self.spec.step
            return "disagree" if diverged is not None and diverged < reached else "not judged"
        if self.spec.outcome == "accepted":
            return "agree" if diverged is None else "disagree"
        return "agree" if diverged == self.spec.step else "disagree"


def _read(path: str) -> Iterator[tuple[str, Union[Trace, TraceError]]]:
    if path.endswith(".parquet"):
        for row, count, item in read_parquet(path):
            yield ("" if row is None else f"row {row}" if count == 1 else f"rows {row}-{row + count - 1}"), item
    else:
        try:
            yield from ((f"line {line}", item) for line, item in read_jsonl(path))
        except OSError as exc:
            yield "", TraceError(str(exc))


def judge_file(path: str, *, batch: Optional[int] = None) -> tuple[list[Judged], list[tuple[str, str]]]:
    """Every trace of ``path`` judged by both, and the unreadable items (where, one-line error)."""
    traces: list[tuple[str, Trace]] = []
    errors: list[tuple[str, str]] = []
    for where, item in _read(path):
        if isinstance(item, TraceError):
            errors.append((where, " ".join(str(item).split())))
        else:
            traces.append((where, item))
    options = {} if batch is None else {"batch": batch}
    spec = validate([trace for _, trace in traces], **options)
    judged = []
    for (where, trace), verdict in zip(traces, spec):
        try:
            judged.append(Judged(where, replay(trace), verdict))
        except TraceError as exc:  # a stated output field the reference's output does not have
            errors.append((where, " ".join(str(exc).split())))
    return judged, errors


def _label(path: str, where: str) -> str:
    return f"{path}:{where.split()[-1]}" if where.startswith("line") else f"{path} {where}".strip()


def check_with_tlc(paths: list[str], as_json: bool, out: TextIO = sys.stdout) -> int:
    """``kraftspec check --with-tlc``: print each trace's two verdicts (or one JSON report) and the totals."""
    totals = {"conformant": 0, "divergent": 0, "unreadable": 0}
    agreement = {"agree": 0, "disagree": 0, "not judged": 0}
    report: list[dict[str, Any]] = []
    for path in paths:
        try:
            judged, errors = judge_file(path)
        except TlcError as exc:
            print(f"kraftspec check --with-tlc: {path}: error: {' '.join(str(exc).split())}", file=sys.stderr)
            return EXIT_ERROR
        for where, error in errors:
            totals["unreadable"] += 1
            report.append({"file": path, "where": where, "outcome": "unreadable", "error": error})
            if not as_json:
                print(f"{_label(path, where)}: error: {error}", file=out)
        for item in judged:
            totals["conformant" if item.reference.conformant else "divergent"] += 1
            agreement[item.agreement] += 1
            if as_json:
                report.append(_json(path, item))
                continue
            name = f" ({item.reference.trace_id})" if item.reference.trace_id else ""
            mark = "DISAGREE" if item.agreement == "disagree" else item.agreement
            first, *rest = describe(item.reference).split("\n")
            print(f"{_label(path, item.where)}{name}: {mark}", file=out)
            print(f"  reference: {first}", file=out)
            for line in rest:
                print(f"  {line}", file=out)
            print(f"  spec:      {item.spec.line()}", file=out)
    read = sum(totals.values())
    if as_json:
        json.dump({"read": read, **totals, **{k.replace(" ", "_"): v for k, v in agreement.items()},
                   "traces": report}, out, indent=1)
        out.write("\n")
    else:
        print(f"checked {read} traces from {len(paths)} file(s): {totals['conformant']} conformant, "
              f"{totals['divergent']} divergent, {totals['unreadable']} unreadable; reference and spec: "
              f"{agreement['agree']} agree, {agreement['disagree']} disagree, "
              f"{agreement['not judged']} not judged by the spec (outside its bounds)", file=out)
    if totals["unreadable"]:
        return EXIT_ERROR
    return EXIT_FINDING if totals["divergent"] or agreement["disagree"] else EXIT_OK


def _json(path: str, item: Judged) -> dict[str, Any]:
    d = item.reference.divergence
    return {"file": path, "where": item.where, "id": item.reference.trace_id,
            "outcome": "conformant" if d is None else "divergent",
            "reference": None if d is None else {"step": d.step, "rule": d.rule},
            "spec": {"outcome": item.spec.outcome, "step": item.spec.step, "reason": item.spec.reason},
            "agreement": item.agreement}
