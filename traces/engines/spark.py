"""The Spark engine of ``kraftspec validate``: one Spark task per unit, through ``mapInArrow``.

The units (Parquet row groups, or metadata logs) become a DataFrame with one unit per partition;
``mapInArrow`` hands each task its units as an Arrow batch, and the task runs the same function as the
one-process engine (:mod:`kraftspec.traces.engines.trace_units`: pyarrow streams the row group, columns
are converted to Python once per Arrow batch, each trace is replayed; nothing is grouped per trace).
Spark writes the report rows as part files beside ``--report``; the driver merges them, in unit
order, into the one report file. Input and report paths must therefore be visible to every executor
(a local folder for ``local[*]`` and a one-machine cluster, a shared file system otherwise), and
executors need kraftspec installed (``PYSPARK_PYTHON`` names its Python; this Python for ``local[*]``).

The session is ``local[*]`` unless ``--master URL`` is given or the module runs under spark-submit,
which sets the master; this module is the job spark-submit runs, unchanged::

    spark-submit --master spark://HOST:7077 "$(python -c 'import kraftspec.traces.engines.spark as m; print(m.__file__)')" \\
        traces/ --report report.parquet
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import threading
from functools import partial
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Optional, Sequence

import pyarrow as pa
import pyarrow.parquet as pq
from rich.progress import Progress

from kraftspec.traces.engines.validate import EngineError, Job, ReportWriter

JOB_GROUP = "kraftspec-validate"
POLL_SECONDS = 0.5
SPARK_TYPES = {pa.string(): "string", pa.int64(): "bigint"}
JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
"""The JVMs only move units and report rows (Python replays): the quick compiler alone and one GC thread
halve their CPU time on a job (C2's compilations and G1's threads cost more than they save here)."""


def _ddl(schema: pa.Schema) -> str:
    """The Spark DDL of a report or unit schema (strings and 64-bit integers only)."""
    return ", ".join(f"`{f.name}` {SPARK_TYPES[f.type]}" for f in schema)


def _quiet_log_config() -> str:
    """A log4j2 configuration that lets the driver JVM print errors only (no start-up warnings)."""
    path = Path(tempfile.gettempdir()) / "kraftspec-spark-log4j2.properties"
    if not path.exists():
        path.write_text("rootLogger.level = error\nrootLogger.appenderRef.stderr.ref = console\n"
                        "appender.console.type = Console\nappender.console.name = console\n"
                        "appender.console.target = SYSTEM_ERR\nappender.console.layout.type = PatternLayout\n"
                        "appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex\n")
    return str(path)


def session(master: Optional[str]) -> Any:
    """A Spark session: ``master`` if given, spark-submit's when launched by it, else ``local[*]``."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None and master is not None and active.sparkContext.master != master:
        active.stop()  # another master was asked for: a session serves one master
    builder = (SparkSession.builder.appName("kraftspec validate").config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")  # the rich progress display replaces it
               .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{_quiet_log_config()} {JVM_OPTIONS}")
               .config("spark.executor.extraJavaOptions", JVM_OPTIONS))
    under_submit = "PYSPARK_GATEWAY_PORT" in os.environ  # spark-submit started this driver and set the master
    if master is not None or not under_submit:
        url = master or "local[*]"
        builder = builder.master(url)
        if url.startswith("local") and "PYSPARK_PYTHON" not in os.environ:
            # The context starts local workers with $PYSPARK_PYTHON (default: `python3` on the PATH, which
            # may lack kraftspec); the spark.pyspark.python setting is only read by spark-submit.
            os.environ["PYSPARK_PYTHON"] = sys.executable
    try:
        spark = builder.getOrCreate()
    except Exception as exc:  # no Java, a bad master URL, ...: said plainly, with the way out
        raise EngineError(f"the spark engine could not start ({type(exc).__name__}: {' '.join(str(exc).split())[:300]}); "
                          "check `java -version` and --master, or use --engine local") from exc
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def run_units(task: Callable[[dict[str, Any]], Iterator[pa.RecordBatch]],
              batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The ``mapInArrow`` function: each unit of each incoming batch, through ``task``."""
    for batch in batches:
        for unit in batch.to_pylist():
            yield from task(unit)


def _poll(spark: Any, bar: Progress, task: Any, stop: threading.Event) -> None:
    """Move the progress bar with the tasks Spark's status tracker reports completed."""
    tracker = spark.sparkContext.statusTracker()
    while not stop.wait(POLL_SECONDS):
        done = 0
        for job_id in tracker.getJobIdsForGroup(JOB_GROUP):
            info = tracker.getJobInfo(job_id)
            for stage_id in info.stageIds if info is not None else ():
                stage = tracker.getStageInfo(stage_id)
                done += stage.numCompletedTasks if stage is not None else 0
        bar.update(task, completed=done)


def run_spark(job: Job, report: str, master: Optional[str], bar: Progress) -> int:
    """Run ``job`` as one Spark task per unit and merge the part files into ``report``; returns the rows written."""
    spark = session(master)
    parts = Path(f"{report}.parts")
    units = [tuple(unit[name] for name in job.unit_schema.names) for unit in job.units]
    frame = spark.createDataFrame(spark.sparkContext.parallelize(units, len(units)), _ddl(job.unit_schema))
    results = frame.mapInArrow(partial(run_units, job.task), _ddl(job.schema))
    progress = bar.add_task(f"validate ({job.kind}, spark: tasks)", total=len(units))
    stop = threading.Event()
    poller = threading.Thread(target=_poll, args=(spark, bar, progress, stop), daemon=True)
    spark.sparkContext.setJobGroup(JOB_GROUP, f"kraftspec validate: {len(units)} units")
    poller.start()
    try:
        results.write.mode("overwrite").parquet(str(parts.resolve()))
    except Exception as exc:
        raise EngineError(f"the Spark job failed: {type(exc).__name__}: {' '.join(str(exc).split())[:1000]}") from exc
    finally:
        stop.set()
        poller.join()
    try:
        return merge_parts(parts, report, job.schema)
    finally:
        shutil.rmtree(parts, ignore_errors=True)


def merge_parts(parts: Path, report: str, schema: pa.Schema) -> int:
    """Stream Spark's part files, in partition (so unit) order, into one report file; returns the rows."""
    with ReportWriter(report, schema) as writer:
        for part in sorted(parts.glob("part-*.parquet")):
            for batch in pq.ParquetFile(part).iter_batches():
                writer.write(batch)
    return writer.rows


def main(argv: Optional[Sequence[str]] = None) -> int:
    """The job as spark-submit runs it: ``validate_spark.py PATH... [--report OUT] [--audit]``."""
    from kraftspec.traces.engines.validate import validate_command

    parser = argparse.ArgumentParser(prog="validate_spark.py", description="kraftspec validate on Spark")
    parser.add_argument("paths", nargs="+", help="Parquet trace files or folders (metadata logs with --audit)")
    parser.add_argument("--report", default="validate-report.parquet", help="the report file (Parquet)")
    parser.add_argument("--audit", action="store_true", help="audit metadata logs instead of replaying traces")
    args = parser.parse_args(argv)
    return validate_command(args.paths, "spark", args.report, audit=args.audit)


if __name__ == "__main__":
    sys.exit(main())
