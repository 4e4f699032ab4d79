"""The per-unit work of ``kraftspec validate`` on Parquet trace sets: one report row per trace.

A unit is one row group of one Parquet file (or a file whose footer cannot be read). The task
streams the row group with pyarrow (``iter_batches``), converts each Arrow batch's columns to Python
once, rebuilds each row's trace (:func:`kraftspec.traces.format.parquet.from_row`) and replays it exactly
as ``kraftspec check`` does (:func:`kraftspec.traces.replay.verdict.replay`). Every row yields one report
row, whatever happens: a row that cannot be decoded, a row group that cannot be read and a file
that is not Parquet are reported ``unreadable`` with the reason, never dropped.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterable, Iterator, Optional

import pyarrow as pa
import pyarrow.parquet as pq

from kraftspec.traces.format.limits import is_regular, one_line
from kraftspec.traces.format.parquet import SCHEMA as TRACE_SCHEMA
from kraftspec.traces.format.parquet import from_row, reason
from kraftspec.traces.replay.verdict import Verdict, replay
from kraftspec.traces.format.values import TraceError

REPORT_SCHEMA = pa.schema([
    ("file", pa.string()), ("row", pa.int64()), ("trace_id", pa.string()), ("component", pa.string()),
    ("verdict", pa.string()), ("steps", pa.int64()), ("step", pa.int64()), ("action", pa.string()),
    ("rule", pa.string()), ("diff", pa.string()), ("reason", pa.string())])
"""One row per trace: ``row`` is 0-based (null for a file that is not Parquet at all); ``step``,
``action``, ``rule`` and ``diff`` (one field difference per line) describe the first divergent step;
``reason`` says why an ``unreadable`` row could not be replayed."""
UNIT_SCHEMA = pa.schema([("file", pa.string()), ("location", pa.string()), ("group", pa.int64()),
                         ("first_row", pa.int64()), ("rows", pa.int64()), ("error", pa.string())])
"""A unit of work: row group ``group`` of ``file`` (rows ``first_row`` .. ``first_row + rows - 1``), or
a whole ``file`` with the ``error`` that makes it unreadable (``group`` and ``first_row`` null, 1 row).
``file`` is the path as given (reported); ``location`` the absolute path read (executors have their
own working directories)."""
REQUIRED = ("format", "component", "initial", "steps")
"""Columns every trace row needs (``id`` and ``meta`` are optional, null meaning absent)."""
BATCH_ROWS = 256
"""Rows per Arrow batch read: bounds a task's memory whatever the row group's size."""


def _one_line(text: str) -> str:
    return one_line(text)


def parquet_files(paths: Iterable[str]) -> Iterator[str]:
    """Each path given, with directories expanded to the ``.parquet`` files under them (sorted)."""
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            yield from (str(p) for p in sorted(path.rglob("*.parquet")) if p.is_file())
        else:
            yield raw


def plan(paths: Iterable[str]) -> list[dict[str, Any]]:
    """The units of ``paths`` (read from the Parquet footers only): one per row group, one per unreadable file."""
    units: list[dict[str, Any]] = []
    for file in parquet_files(paths):
        if not is_regular(file):  # never a FIFO or a device: it could block the job
            units.append(_file_unit(file, "no such file" if not os.path.lexists(file) else "not a regular file"))
            continue
        try:
            metadata = pq.ParquetFile(file).metadata
            groups = [metadata.row_group(group).num_rows for group in range(metadata.num_row_groups)]
        except Exception as exc:  # noqa: BLE001 - pyarrow raises ArrowException, OSError, UnicodeDecodeError...
            units.append(_file_unit(file, f"not a readable Parquet file: {reason(exc)}"))
            continue
        first = 0
        for group, rows in enumerate(groups):
            units.append({"file": file, "location": str(Path(file).resolve()), "group": group, "first_row": first,
                          "rows": rows, "error": None})
            first += rows
    return units


def _file_unit(file: str, error: str) -> dict[str, Any]:
    return {"file": file, "location": str(Path(file).resolve()), "group": None, "first_row": None, "rows": 1,
            "error": _one_line(error)}


class _Rows:
    """Report rows being gathered column by column, emitted as one Arrow batch."""

    def __init__(self) -> None:
        self.columns: dict[str, list[Any]] = {name: [] for name in REPORT_SCHEMA.names}

    def add(self, **values: Any) -> None:
        for name, column in self.columns.items():
            column.append(values.get(name))

    def unreadable(self, file: str, row: Optional[int], reason: str, **values: Any) -> None:
        self.add(file=file, row=row, verdict="unreadable", reason=_one_line(reason), **values)

    def verdict(self, file: str, row: int, component: str, verdict: Verdict) -> None:
        d = verdict.divergence
        if d is None:
            self.add(file=file, row=row, trace_id=verdict.trace_id, component=component, verdict="conformant",
                     steps=verdict.steps)
        else:
            self.add(file=file, row=row, trace_id=verdict.trace_id, component=component, verdict="divergent",
                     steps=verdict.steps, step=d.step, action=d.input.get("action"), rule=d.rule,
                     diff="\n".join(str(field) for field in d.diffs))

    def batch(self) -> pa.RecordBatch:
        return pa.RecordBatch.from_pydict(self.columns, schema=REPORT_SCHEMA)

    def __len__(self) -> int:
        return len(self.columns["file"])


def judge_row(row: dict[str, Any], file: str, index: int, out: _Rows) -> None:
    """Decode one Parquet row and replay its trace, adding its report row to ``out``."""
    trace_id = row.get("id") if isinstance(row.get("id"), str) else None
    component = row.get("component") if isinstance(row.get("component"), str) else None
    missing = [name for name in REQUIRED if row.get(name) is None]
    if missing:
        out.unreadable(file, index, f"missing column(s) {', '.join(missing)} (absent from the file "
                       "or null)", trace_id=trace_id, component=component)
        return
    try:
        trace = from_row(row)
    except TraceError as exc:
        out.unreadable(file, index, str(exc), trace_id=trace_id, component=component)
        return
    except Exception as exc:  # noqa: BLE001 - a defect of the decoder on this input: reported, the job goes on
        out.unreadable(file, index, f"the decoder failed: {type(exc).__name__}: {exc}", trace_id=trace_id,
                       component=component)
        return
    try:
        verdict = replay(trace, explain=False)  # the report rows name the rule, not its checks
    except TraceError as exc:  # a stated output field the reference's output does not have
        out.unreadable(file, index, str(exc), trace_id=trace_id, component=component)
        return
    except Exception as exc:  # a defect of the reference on this input: reported, the job goes on
        out.unreadable(file, index, f"the replay failed: {type(exc).__name__}: {exc}",
                       trace_id=trace_id, component=component)
        return
    out.verdict(file, index, trace.component, verdict)


def validate_unit(unit: dict[str, Any], batch_rows: int = BATCH_ROWS) -> Iterator[pa.RecordBatch]:
    """The report rows of one unit, one Arrow batch per batch read; exactly ``unit["rows"]`` rows in all."""
    file = unit["file"]
    if unit["error"] is not None:
        out = _Rows()
        out.unreadable(file, None, unit["error"])
        yield out.batch()
        return
    first, rows = unit["first_row"], unit["rows"]
    done, error = 0, None
    try:
        parquet = pq.ParquetFile(unit["location"])
        present = [name for name in TRACE_SCHEMA.names if name in parquet.schema_arrow.names]
        for batch in parquet.iter_batches(batch_size=batch_rows, row_groups=[unit["group"]], columns=present):
            columns = {name: batch.column(name).to_pylist() for name in present}  # once per batch
            out = _Rows()
            for offset in range(min(batch.num_rows, rows - done)):
                judge_row({name: values[offset] for name, values in columns.items()}, file, first + done + offset, out)
            report = out.batch()  # before counting: a row that cannot be written is accounted for below
            done += len(out)
            yield report
    except Exception as exc:  # noqa: BLE001 - any failure of pyarrow on these bytes (invalid UTF-8 included)
        error = f"row group {unit['group']} (rows {first}-{first + rows - 1}) unreadable: {reason(exc)}"
    if done < rows:  # the rest of the row group is accounted for, never dropped
        out = _Rows()
        for index in range(first + done, first + rows):
            out.unreadable(file, index, error or f"row group {unit['group']} ended after {done} of its {rows} rows")
        yield out.batch()
