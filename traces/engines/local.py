"""The local engine of ``kraftspec validate``: every unit in order, in this process or ``--jobs N`` worker processes.

The report is written in the units' order whatever the number of processes. Memory is bounded by one
unit's report per process plus one report row group (``validate.REPORT_ROW_GROUP`` rows), whatever the
size of the set.
"""

from __future__ import annotations

from rich.progress import Progress

from kraftspec.traces.engines.jobs import run_units
from kraftspec.traces.engines.validate import Job, ReportWriter


def run_local(job: Job, report: str, bar: Progress, jobs: int = 1) -> int:
    """Run ``job``'s task over each unit with ``jobs`` processes, writing ``report`` in the units' order; returns the
    rows written."""
    task = bar.add_task(f"validate ({job.kind}, local)", total=job.rows)
    with ReportWriter(report, job.schema) as writer:
        for batches in run_units(job.task, job.units, jobs):
            for batch in batches:
                writer.write(batch)
                bar.advance(task, batch.num_rows)
    return writer.rows
