"""``kraftspec validate PATH... --engine spark|local``: trace sets (or metadata logs) at scale, one report row each.

A job is a list of units (Parquet row groups, or metadata logs with ``--audit``) and a task that
turns one unit into report rows (:mod:`kraftspec.traces.engines.trace_units`,
:mod:`kraftspec.traces.engines.audit_units`). An engine runs the task over every unit and writes the
report, one Parquet file: ``local`` in this process (:mod:`kraftspec.traces.engines.local`), ``spark``
as one Spark task per unit (:mod:`kraftspec.traces.engines.spark`). Both run the same task, so their
reports are identical row for row. Afterwards the summary is printed and every input row is
accounted for: the report has exactly one row per trace read (per path audited).

Exit code: 0 all conformant (all logs clean), 1 a divergence (a violation), 2 an unreadable trace,
file or log, or an engine that cannot start (the command's convention for bad input); the first
unreadable rows are printed with file, row and reason.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Callable, Iterator, Optional, TextIO

import pyarrow as pa
import pyarrow.parquet as pq
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn, TimeRemainingColumn

from kraftspec.traces.engines import audit_units as validate_audit
from kraftspec.traces.engines import trace_units as validate_traces
from kraftspec.traces.engines.jobs import default_jobs
from kraftspec.traces.format.limits import escape_controls
from kraftspec.traces.engines.summary import summarize

EXIT_OK, EXIT_FINDING, EXIT_ERROR = 0, 1, 2
ENGINES = ("spark", "local")
REPORT_ROW_GROUP = 65536
"""Report rows per Parquet row group: bounds the writer's buffer."""


class EngineError(RuntimeError):
    """The engine could not run the job (Spark would not start, a job failed): the message says what to do."""


@dataclass(frozen=True)
class Job:
    """What to run: ``units`` (rows of ``unit_schema``; each has ``rows``, the report rows it yields) and ``task``."""

    kind: str
    units: list[dict[str, Any]]
    unit_schema: pa.Schema
    task: Callable[[dict[str, Any]], Iterator[pa.RecordBatch]]
    schema: pa.Schema

    @property
    def rows(self) -> int:
        """Report rows the job must produce: one per trace (per audited path)."""
        return sum(unit["rows"] for unit in self.units)


def trace_job(paths: list[str], report: str) -> Job:
    """Replay every trace of the Parquet files (and folders of them) in ``paths``, ``report`` itself excepted."""
    own = Path(report).resolve()
    units = [u for u in validate_traces.plan(paths) if Path(u["file"]).resolve() != own]
    return Job("traces", units, validate_traces.UNIT_SCHEMA, validate_traces.validate_unit,
               validate_traces.REPORT_SCHEMA)


def audit_job(paths: list[str]) -> Job:
    """Audit every data directory (or log file) in ``paths``."""
    return Job("audit", validate_audit.plan(paths), validate_audit.UNIT_SCHEMA, validate_audit.audit_unit,
               validate_audit.AUDIT_SCHEMA)


class ReportWriter:
    """Write report batches to one Parquet file in row groups of :data:`REPORT_ROW_GROUP` rows, as they come."""

    def __init__(self, path: str, schema: pa.Schema) -> None:
        self.schema = schema
        self.writer = pq.ParquetWriter(path, schema)
        self.pending: list[pa.RecordBatch] = []
        self.buffered = 0
        self.rows = 0

    def write(self, batch: pa.RecordBatch) -> None:
        """Add one batch (cast to the report schema) and flush a row group when enough rows are buffered."""
        table = pa.Table.from_batches([batch])
        if not table.schema.equals(self.schema):  # Spark's part files: same columns, its own field metadata
            table = table.select(self.schema.names).cast(self.schema)
        self.pending.extend(table.to_batches())
        self.buffered += batch.num_rows
        self.rows += batch.num_rows
        if self.buffered >= REPORT_ROW_GROUP:
            self.flush()

    def flush(self) -> None:
        if self.pending:
            self.writer.write_table(pa.Table.from_batches(self.pending, schema=self.schema))
        self.pending, self.buffered = [], 0

    def __enter__(self) -> "ReportWriter":
        return self

    def __exit__(self, kind: Optional[type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        self.flush()
        self.writer.close()


def progress_bar(enabled: bool) -> Progress:
    """The progress display (on standard error, only when it is a terminal)."""
    return Progress("{task.description}", BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), TimeRemainingColumn(),
                    console=Console(stderr=True), transient=True, disable=not enabled)


def run_job(job: Job, engine: str, report: str, master: Optional[str], show_progress: bool, jobs: int = 1) -> int:
    """Run ``job`` on ``engine`` (``local``: with ``jobs`` processes) into ``report``; returns the rows written."""
    with progress_bar(show_progress) as bar:
        if engine == "local":
            from kraftspec.traces.engines.local import run_local

            return run_local(job, report, bar, jobs)
        from kraftspec.traces.engines.spark import run_spark

        return run_spark(job, report, master, bar)


def validate_command(paths: list[str], engine: str = "spark", report: str = "validate-report.parquet",
                     master: Optional[str] = None, audit: bool = False, out: Optional[TextIO] = None,
                     show_progress: Optional[bool] = None, jobs: Optional[int] = None) -> int:
    """Validate ``paths`` on ``engine`` (``local``: with ``jobs`` processes, None: all cores), write ``report``, print
    the summary to ``out`` (standard output when None, looked up at call time); return the exit code."""
    out = sys.stdout if out is None else out
    if engine not in ENGINES:
        print(f"validate: error: unknown engine {engine!r} (known: {', '.join(ENGINES)})", file=out)
        return EXIT_ERROR
    if master is not None and engine != "spark":
        print("validate: error: --master applies to --engine spark only", file=out)
        return EXIT_ERROR
    if jobs is not None and engine != "local":
        print("validate: error: --jobs applies to --engine local only (Spark sets its own parallelism)", file=out)
        return EXIT_ERROR
    job = audit_job(paths) if audit else trace_job(paths, report)
    if not job.units:
        print(f"validate: error: no {'metadata logs' if audit else 'Parquet trace files (or no rows in them)'} found in "
              f"{escape_controls(', '.join(paths))}", file=out)
        return EXIT_ERROR
    Path(report).parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    try:
        written = run_job(job, engine, report, master, sys.stderr.isatty() if show_progress is None else show_progress,
                          default_jobs() if jobs is None else jobs)
    except EngineError as exc:
        Path(report).unlink(missing_ok=True)  # no partial report
        print(f"validate: error: {exc}", file=out)
        return EXIT_ERROR
    summary = summarize(job.kind, report)
    summary.print(Console(file=out, width=120), f"{engine} engine, {time.perf_counter() - started:.1f} s", report)
    if written != job.rows or summary.total != job.rows:
        print(f"validate: error: the report has {written} rows, {job.rows} expected (one per "
              f"{'path' if audit else 'trace'} read)", file=out)
        return EXIT_ERROR
    return summary.exit_code
