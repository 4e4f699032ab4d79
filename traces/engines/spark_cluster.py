"""A one-machine Spark standalone cluster (a master and one worker on 127.0.0.1) for tests and benchmarks.

Both daemons are started with pyspark's own launcher (``bin/spark-class``) on free ports, each in its
own process group, and stopped with their executors when the context exits, whatever happened.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

READY_SECONDS = 90


def spark_home() -> Path:
    """The Spark distribution inside the pyspark package."""
    import pyspark

    return Path(str(pyspark.__file__)).parent


def environment() -> dict[str, str]:
    """The environment for the daemons, spark-submit and drivers: loopback only, this Python everywhere."""
    return {**os.environ, "SPARK_HOME": str(spark_home()), "SPARK_LOCAL_IP": "127.0.0.1",
            "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start(command: list[str], log: Path, ready: str, processes: list[subprocess.Popen[bytes]]) -> None:
    """Start one daemon in its own process group and wait until ``ready`` appears in its log."""
    with open(log, "wb") as handle:
        processes.append(subprocess.Popen(command, stdout=handle, stderr=subprocess.STDOUT, env=environment(),
                                          start_new_session=True))
    deadline = time.monotonic() + READY_SECONDS
    while ready not in log.read_text(errors="replace"):
        if processes[-1].poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"{command[1]} did not start: {log.read_text(errors='replace')[-3000:]}")
        time.sleep(0.5)


@contextmanager
def standalone(folder: Path, cores: int = 2, memory: str = "2g") -> Iterator[str]:
    """Run a master and a worker (logs and work directory in ``folder``); yields the master URL."""
    folder.mkdir(parents=True, exist_ok=True)
    port = free_port()
    url = f"spark://127.0.0.1:{port}"
    launcher = str(spark_home() / "bin" / "spark-class")
    processes: list[subprocess.Popen[bytes]] = []
    try:
        _start([launcher, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
                "--webui-port", str(free_port())], folder / "master.log", "I have been elected leader", processes)
        _start([launcher, "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1", "--cores", str(cores),
                "--memory", memory, "--webui-port", str(free_port()), "--work-dir", str(folder / "work"), url],
               folder / "worker.log", "Successfully registered with master", processes)
        yield url
    finally:
        for process in reversed(processes):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in reversed(processes):
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
