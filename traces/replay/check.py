"""``kraftspec check TRACES...``: replay trace files through the reference and report every trace.

Every trace read is accounted for: conformant + divergent + unreadable = read. An unreadable line
or row gets a one-line error with the file and line (JSON Lines, 1-based) or row (Parquet,
0-based), and the rest of the file is still checked. A file holding no trace is an error: nothing was checked.
Exit code: 0 all conformant, 1 a divergence, 2 an unreadable trace or file, or a file without a trace.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Optional, TextIO, Union

from kraftspec.traces.format.envelope import Trace
from kraftspec.traces.format.jsonl import read_jsonl
from kraftspec.traces.format.limits import escape_controls, is_regular, one_line
from kraftspec.traces.format.parquet import read_parquet
from kraftspec.traces.replay.verdict import ABSENT, Verdict, replay, show
from kraftspec.traces.format.values import TraceError

EXIT_OK, EXIT_FINDING, EXIT_ERROR = 0, 1, 2


@dataclass(frozen=True)
class Entry:
    """One item read: where it is (``line N``, ``row N``, or ``""`` for a whole file), how many traces it stands for."""

    file: str
    where: str
    count: int
    verdict: Optional[Verdict] = None
    error: Optional[str] = None
    component: Optional[str] = None

    @property
    def outcome(self) -> str:
        if self.error is not None:
            return "unreadable"
        assert self.verdict is not None
        return "conformant" if self.verdict.conformant else "divergent"


def _items(path: str) -> Iterator[tuple[str, int, Union[Trace, TraceError]]]:
    if not is_regular(path):  # never a FIFO or a device: it could block the command
        yield "", 1, TraceError("no such file" if not os.path.lexists(path) else "not a regular file")
    elif path.endswith(".parquet"):
        for row, count, item in read_parquet(path):
            where = "" if row is None else f"row {row}" if count == 1 else f"rows {row}-{row + count - 1}"
            yield where, count, item
    else:
        for line, item in read_jsonl(path):
            yield f"line {line}", 1, item


NO_TRACE = "no trace in this file: nothing was checked"


def check_file(path: str, items: Optional[Iterable[tuple[str, int, Union[Trace, TraceError]]]] = None
               ) -> Iterator[Entry]:
    """Every trace of one file (JSON Lines, ``.jsonl.gz`` or ``.parquet``), or the given ``items`` of it (where, traces,
    trace or error), replayed or reported unreadable.

    A file without any item is one unreadable entry standing for no trace (:data:`NO_TRACE`).
    """
    empty = True
    for where, count, item in _items(path) if items is None else items:
        empty = False
        if isinstance(item, TraceError):
            yield Entry(path, where, count, error=one_line(str(item)))  # one line, whatever the cause says
            continue
        try:
            verdict = replay(item)
        except TraceError as exc:  # a stated output field the reference's output does not have
            yield Entry(path, where, count, error=one_line(str(exc)))
            continue
        except Exception as exc:  # noqa: BLE001 - a defect of the reference on this input: reported as validate does
            yield Entry(path, where, count, error=one_line(f"the replay failed: {type(exc).__name__}: {exc}"))
            continue
        yield Entry(path, where, count, verdict=verdict, component=item.component)
    if empty:
        yield Entry(path, "", 0, error=NO_TRACE)


def _print_entry(entry: Entry, out: TextIO) -> None:
    file = escape_controls(entry.file)
    if entry.where.startswith("line"):
        label = f"{file}:{entry.where.split()[-1]}"
    else:
        label = f"{file} {entry.where}" if entry.where else file
    if entry.error is not None:
        print(f"{label}: error: {escape_controls(entry.error)}", file=out)
        return
    verdict = entry.verdict
    assert verdict is not None
    name = f" ({escape_controls(verdict.trace_id)})" if verdict.trace_id else ""
    text = describe(verdict)  # its lines are ours; a value from the trace never starts another one
    print(f"{label}{name}: " + "\n".join(map(escape_controls, text.split("\n"))), file=out)


def describe(verdict: Verdict) -> str:
    """``conformant (N steps)``, or the divergence: step, input, field-level diff (values as JSON), the handler,
    the rule checks it made with their arguments and results, and the prior state (indented)."""
    d = verdict.divergence
    if d is None:
        return f"conformant ({verdict.steps} steps)"
    lines = [f"DIVERGES at step {d.step} of {verdict.steps}: {d.input['action']}",
             f"  input: {json.dumps(d.input, separators=(',', ':'))}"]
    lines += [f"  {field}" for field in d.diffs]
    lines += [f"  rule: {d.rule}: {d.rule_doc}"]
    if not d.checks:
        lines += ["  rule checks it made: none (the handler decides this step without a rule function)"]
    else:
        lines += ["  rule checks it made (arguments -> result, in order; \"decides\": the other answer gives the "
                  "observed values):"]
        lines += [f"    {check}" for check in d.checks]
    lines += ["  state before the step:"]
    lines += [f"    {line}" for line in d.state_before.splitlines()]
    return "\n".join(lines)


def _json_entry(entry: Entry) -> dict[str, Any]:
    obj: dict[str, Any] = {"file": entry.file, "where": entry.where, "traces": entry.count, "outcome": entry.outcome}
    if entry.error is not None:
        obj["error"] = entry.error
    elif entry.verdict is not None:
        obj["id"] = entry.verdict.trace_id
        obj["steps"] = entry.verdict.steps
        d = entry.verdict.divergence
        if d is not None:
            obj["divergence"] = {
                "step": d.step, "input": d.input, "rule": d.rule, "rule_doc": d.rule_doc, "state_before": d.state_before,
                "diff": [{"path": f.path, "expected": _json_value(f.expected), "observed": _json_value(f.observed)}
                         for f in d.diffs],
                "checks": [{"rule": c.rule, "args": {name: _json_value(v) for name, v in c.args},
                            "result": _json_value(c.result), "decides": c.decides} for c in d.checks]}
    return obj


def _json_value(value: Any) -> Any:
    """A reported value as JSON (a missing one as the string ``(absent)``, a value JSON cannot hold as its repr)."""
    try:
        return value if value is ABSENT else json.loads(show(value))
    except ValueError:
        return repr(value)


def check_command(paths: list[str], as_json: bool, out: TextIO = sys.stdout, jobs: int = 1) -> int:
    """Check every trace in ``paths`` (with ``jobs`` processes, :mod:`kraftspec.traces.engines.jobs`); print per trace (or one
    JSON report), per component and the totals.

    Returns the exit code. Per component: conformant and divergent traces and their steps (an
    unreadable trace's component is unknown, so it counts in the totals only).
    """
    totals = {"conformant": 0, "divergent": 0, "unreadable": 0}
    per_component: dict[str, dict[str, int]] = {}
    report: list[dict[str, Any]] = []
    empty_files = 0
    from kraftspec.traces.engines.jobs import check_entries

    for entries in check_entries(paths, jobs):
        for entry in entries:
            totals[entry.outcome] += entry.count
            empty_files += entry.error == NO_TRACE
            if entry.component is not None and entry.verdict is not None:
                counts = per_component.setdefault(entry.component, {"conformant": 0, "divergent": 0, "steps": 0})
                counts[entry.outcome] += 1
                counts["steps"] += entry.verdict.steps
            if as_json:
                report.append(_json_entry(entry))
            else:
                _print_entry(entry, out)
    read = sum(totals.values())
    if as_json:
        json.dump({"read": read, **totals, "files_without_traces": empty_files, "components": per_component,
                   "traces": report}, out, indent=1)
        out.write("\n")
    else:
        for name, counts in sorted(per_component.items()):
            print(f"component {name}: {counts['conformant']} conformant, {counts['divergent']} divergent "
                  f"({counts['steps']} steps)", file=out)
        print(f"checked {read} traces from {len(paths)} file(s): {totals['conformant']} conformant, "
              f"{totals['divergent']} divergent, {totals['unreadable']} unreadable"
              + (f"; {empty_files} file(s) without a trace: nothing checked there" if empty_files else ""), file=out)
    if totals["unreadable"] or empty_files:
        return EXIT_ERROR
    return EXIT_FINDING if totals["divergent"] else EXIT_OK
