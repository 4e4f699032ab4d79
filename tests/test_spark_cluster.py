"""``kraftspec validate`` on Spark: an embedded ``local[2]`` session and a real standalone cluster on 127.0.0.1.

The cluster is a Spark master and one worker started with pyspark's own launcher (``bin/spark-class``),
on free ports, and stopped in every case by the fixture (:mod:`kraftspec.traces.engines.spark_cluster`). On the same trace set (generated traces with
mutants, plus every kind of unreadable input) the one-process engine, local Spark and the cluster must
report the same verdict, step, rule and reason for every row; the cluster also runs the job module
through spark-submit unchanged, auditing the bundled metadata logs.
"""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pyarrow.parquet as pq
import pytest
from support_validate import make_bad_set

import kraftspec.traces.engines.spark as validate_spark
from kraftspec.traces.recording.generate import generate_command
from kraftspec.traces.metalog.corpus import data_dirs
from kraftspec.traces.engines.spark_cluster import environment, spark_home, standalone

JOB_TIMEOUT = 300
COMPARED = ("file", "row", "trace_id", "component", "verdict", "steps", "step", "action", "rule", "diff", "reason")

pytestmark = pytest.mark.skipif(shutil.which("java") is None, reason="Spark needs Java on the PATH")


def kraftspec(*args: str) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([sys.executable, "-m", "kraftspec.cli", *args], capture_output=True, text=True,
                            timeout=JOB_TIMEOUT, env=environment())
    assert "Traceback" not in result.stdout + result.stderr, result.stderr[-3000:]
    return result


@pytest.fixture(scope="module")
def trace_set(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("validate")
    make_bad_set(folder / "set")
    assert generate_command("sim", str(folder / "set" / "sim.parquet"), 40, 11, 25, mutant_share=0.25, row_group=20,
                            stream=io.StringIO()) == 0
    return folder


@pytest.fixture(scope="module")
def local_report(trace_set: Path) -> list[dict[str, object]]:
    result = kraftspec("validate", str(trace_set / "set"), "--engine", "local", "--report", str(trace_set / "local.parquet"))
    assert result.returncode == 2, result.stdout  # unreadable rows present
    return pq.read_table(trace_set / "local.parquet", columns=list(COMPARED)).to_pylist()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A standalone master and one worker on 127.0.0.1; both stopped (with their executors) whatever happens."""
    with standalone(tmp_path_factory.mktemp("cluster")) as url:
        yield url


def test_local_spark_reports_the_same_verdict_for_every_trace(trace_set: Path, local_report: list[dict[str, object]]) -> None:
    result = kraftspec("validate", str(trace_set / "set"), "--engine", "spark", "--report", str(trace_set / "spark.parquet"))
    assert result.returncode == 2, result.stdout + result.stderr[-3000:]
    assert pq.read_table(trace_set / "spark.parquet", columns=list(COMPARED)).to_pylist() == local_report
    assert any(r["verdict"] == "divergent" for r in local_report)
    assert "validated 57 traces" in result.stdout and "(spark engine, " in result.stdout


def test_a_standalone_cluster_reports_the_same_verdict_for_every_trace(
        trace_set: Path, local_report: list[dict[str, object]], cluster: str) -> None:
    result = kraftspec("validate", str(trace_set / "set"), "--engine", "spark", "--master", cluster,
                       "--report", str(trace_set / "cluster.parquet"))
    assert result.returncode == 2, result.stdout + result.stderr[-3000:]
    assert pq.read_table(trace_set / "cluster.parquet", columns=list(COMPARED)).to_pylist() == local_report


def test_spark_submit_runs_the_job_module_unchanged_auditing_logs_on_the_cluster(trace_set: Path, cluster: str) -> None:
    report = trace_set / "audit.parquet"
    result = subprocess.run([str(spark_home() / "bin" / "spark-submit"), "--master", cluster, validate_spark.__file__,
                             *map(str, data_dirs()), "--audit", "--report", str(report)],
                            capture_output=True, text=True, timeout=JOB_TIMEOUT, env=environment())
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    audited = pq.read_table(report).to_pylist()
    assert [r["path"] for r in audited] == [str(p) for p in data_dirs()]
    assert all(r["verdict"] == "ok" and r["records"] > 0 for r in audited)


LOCAL_WORKER_PYTHON = """
import sys
import pyarrow as pa
from kraftspec.traces.engines.spark import session

def where(batches):
    for _ in batches:
        yield pa.record_batch({"python": [sys.executable]})

spark = session(None)
print(spark.range(1, numPartitions=1).mapInArrow(where, "python string").collect()[0]["python"])
"""


def test_local_spark_workers_run_this_python_not_python3_on_the_path(tmp_path: Path) -> None:
    """Local workers import kraftspec, so they must be this Python even when ``python3`` on the PATH is another."""
    (tmp_path / "python3").write_text("#!/bin/sh\necho 'not the driver Python' >&2\nexit 1\n")
    (tmp_path / "python3").chmod(0o755)
    env = {k: v for k, v in environment().items() if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")}
    env["PATH"] = f"{tmp_path}:{env['PATH']}"
    result = subprocess.run([sys.executable, "-c", LOCAL_WORKER_PYTHON], capture_output=True, text=True,
                            timeout=JOB_TIMEOUT, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().splitlines()[-1] == sys.executable
