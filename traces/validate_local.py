"""The one-process engine of ``kraftspec validate``: every unit in turn, streamed, in bounded memory.

Memory is bounded by one Arrow batch of the input (``validate_traces.BATCH_ROWS`` rows) plus one
report row group (``validate.REPORT_ROW_GROUP`` rows), whatever the size of the set.
"""

from __future__ import annotations

from rich.progress import Progress

from kraftspec.traces.validate import Job, ReportWriter


def run_local(job: Job, report: str, bar: Progress) -> int:
    """Run ``job``'s task over each unit in order, writing ``report``; returns the rows written."""
    task = bar.add_task(f"validate ({job.kind}, local)", total=job.rows)
    with ReportWriter(report, job.schema) as writer:
        for unit in job.units:
            for batch in job.task(unit):
                writer.write(batch)
                bar.advance(task, batch.num_rows)
    return writer.rows
