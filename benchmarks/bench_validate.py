"""``kraftspec validate`` at scale: the one-process engine and local Spark side by side (issue 7).

Generates (once, cached in ``--workdir``) a Parquet set of ``--steps`` steps in traces of
``--steps-per-trace`` steps, ``--mutant-share`` of them recorded under the broker mutants, then runs
``kraftspec validate --engine local`` and ``--engine spark`` (``local[*]``) on it, each as a child
process, one after the other. Prints per engine: wall-clock time (Spark's includes starting its JVM),
steps/s, the CPU time of the engine's process tree, the peak resident memory of the Python side (the
sum over every Python process of that tree: the driver and Spark's Python workers) and of the JVMs,
sampled from ``/proc``; then Spark's cost relative to the one-process engine in wall-clock and in CPU
time (target at most 1.5x; CPU time does not depend on what else the machine runs) and whether
both reports give the same verdict, step and rule for every trace. With ``--memory-steps M`` the same
is measured on an M-step set first, to show that memory does not grow with the input. With
``--cluster`` a standalone cluster (master and one 2-core worker on 127.0.0.1) is the third engine,
and its report is compared too.

Run: ``python benchmarks/bench_validate.py [--steps 10000000] [--memory-steps 1000000] [--cluster]``
(``--steps 200000`` for a quick run; the default takes as long as the replay needs for 10M steps).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
import time
from contextlib import nullcontext
from pathlib import Path
from typing import Optional

import pyarrow.parquet as pq

from kraftspec.traces.engines.spark_cluster import environment, standalone

COMPARED = ["file", "row", "verdict", "step", "rule", "reason"]
PAGE = os.sysconf("SC_PAGE_SIZE")
TICKS = os.sysconf("SC_CLK_TCK")


def _tree(root: int) -> list[tuple[int, str]]:
    """``(pid, command name)`` of ``root`` and all its descendants, from ``/proc``."""
    parents: dict[int, list[tuple[int, str]]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            name = stat[stat.index("(") + 1:stat.rindex(")")]
            ppid = int(stat[stat.rindex(")") + 2:].split()[1])
            parents.setdefault(ppid, []).append((int(entry), name))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        for child in parents.get(pid, []):
            found.append(child)
            todo.append(child[0])
    return found


def _rss(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE
    except (OSError, IndexError, ValueError):
        return 0


def _cpu_seconds(pid: int) -> float:
    """User plus system CPU time of one process so far (``/proc/PID/stat`` fields 14 and 15)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = stat[stat.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


class Sampler(threading.Thread):
    """Peak summed RSS of the Python processes and of the JVMs under one child process, and the CPU
    time of that process tree (the last value seen of each process, sampled every 0.2 s)."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.python, self.java = pid, 0, 0
        self.cpu: dict[int, float] = {}
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(0.2):
            python = _rss(self.pid)
            java = 0
            self.cpu[self.pid] = max(self.cpu.get(self.pid, 0.0), _cpu_seconds(self.pid))
            for pid, name in _tree(self.pid):
                self.cpu[pid] = max(self.cpu.get(pid, 0.0), _cpu_seconds(pid))
                if name.startswith("python"):
                    python += _rss(pid)
                elif name == "java":
                    java += _rss(pid)
            self.python, self.java = max(self.python, python), max(self.java, java)


def generate(workdir: Path, steps: int, per_trace: int, share: float, seed: int) -> tuple[Path, int]:
    """The cached set of ``steps`` steps (generated now if missing); returns it and its trace count."""
    traces = max(1, steps // per_trace)
    out = workdir / f"sim-{traces}x{per_trace}-share{share}-seed{seed}" / "traces.parquet"
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        partial = out.with_name("generating.parquet")
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "kraftspec.cli", "generate", "sim", "--traces", str(traces), "--steps",
                        str(per_trace), "--mutant-share", str(share), "--seed", str(seed), "--out", str(partial)],
                       check=True)
        os.replace(partial, out)
        print(f"  generated {traces * per_trace} steps in {time.perf_counter() - started:.0f} s")
    return out, traces


def run_engine(name: str, traces: Path, master: Optional[str] = None) -> tuple[float, float, int, int, Path]:
    """Validate ``traces`` on engine ``name`` (``local``, ``spark``, ``cluster`` at ``master``) in a child process.

    Returns (seconds, CPU seconds of the process tree, peak Python RSS, peak JVM RSS, report); a cluster's
    own daemons and its executors are not under the child, so neither is counted.
    """
    report = traces.parent / f"report-{name}.parquet"
    options = ["--engine", "local"] if name == "local" else ["--engine", "spark", *(["--master", master] if master else [])]
    started = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-m", "kraftspec.cli", "validate", str(traces), *options, "--report",
                              str(report)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=environment() if master else None)
    sampler = Sampler(child.pid)
    sampler.start()
    stdout, stderr = child.communicate()
    elapsed = time.perf_counter() - started
    sampler.done.set()
    sampler.join()
    if child.returncode not in (0, 1):
        raise SystemExit(f"{name} engine failed ({child.returncode}):\n{stdout}\n{stderr[-3000:]}")
    print(f"  {name:7}: {stdout.strip().splitlines()[-1]}")
    return elapsed, sum(sampler.cpu.values()), sampler.python, sampler.java, report


def same_verdicts(a: Path, b: Path) -> Optional[str]:
    """None if both reports give the same verdict, step, rule and reason for every row, else the first difference."""
    left, right = pq.read_table(a, columns=COMPARED), pq.read_table(b, columns=COMPARED)
    if left.num_rows != right.num_rows:
        return f"{left.num_rows} rows against {right.num_rows}"
    if left.equals(right):
        return None
    for index, (x, y) in enumerate(zip(left.to_pylist(), right.to_pylist())):
        if x != y:
            return f"row {index}: {x} against {y}"
    return "schemas differ"


def measure(workdir: Path, steps: int, args: argparse.Namespace, master: Optional[str]) -> None:
    """The engines on one set, one after the other, with the figures and the comparison."""
    path, traces = generate(workdir, steps, args.steps_per_trace, args.mutant_share, args.seed)
    steps = traces * args.steps_per_trace
    print(f"== {steps:,} steps ({traces:,} traces, {args.mutant_share:.0%} mutant, seed {args.seed}), "
          f"load {os.getloadavg()[0]:.2f} ==")
    results = {name: run_engine(name, path, master if name == "cluster" else None)
               for name in ("local", "spark", *(("cluster",) if master else ()))}
    for name, (seconds, cpu, python, java, _) in results.items():
        print(f"  {name:7}: {seconds:7.1f} s, {steps / seconds:10,.0f} steps/s, "
              f"{f'CPU {cpu:7.1f} s' if name != 'cluster' else 'CPU (in the cluster)'}, peak memory: Python side "
              f"{python / 2**20:,.0f} MB (target < 2,048 MB){f', JVM {java / 2**20:,.0f} MB' if java else ''}")
    ratio = results["spark"][0] / results["local"][0]
    print(f"  Spark's cost / the one-process engine's: {ratio:.2f}x in wall-clock time (target <= 1.5x), "
          f"{results['spark'][1] / results['local'][1]:.2f}x in CPU time (every process of each)")
    for name in results:
        if name != "local":
            difference = same_verdicts(results["local"][4], results[name][4])
            print(f"  same verdict for every trace (local, {name}): {'yes' if difference is None else 'NO: ' + difference}")
    print(f"  load average after: {os.getloadavg()[0]:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=10_000_000, help="steps in the set (default 10,000,000)")
    parser.add_argument("--memory-steps", type=int, default=1_000_000,
                        help="a smaller set measured first, for memory as the input grows (0: none; default 1,000,000)")
    parser.add_argument("--steps-per-trace", type=int, default=40, help="steps per trace (default 40)")
    parser.add_argument("--mutant-share", type=float, default=0.01, help="share of mutant traces (default 0.01)")
    parser.add_argument("--seed", type=int, default=20261122, help="the generator's seed (printed)")
    parser.add_argument("--cluster", action="store_true",
                        help="also run on a standalone cluster (a master and a worker of 2 cores on 127.0.0.1)")
    parser.add_argument("--workdir", default="/tmp/kraftspec-bench-validate", help="where sets are generated and kept")
    args = parser.parse_args()
    workdir = Path(args.workdir)
    with standalone(workdir / "cluster") if args.cluster else nullcontext() as master:
        for steps in sorted({s for s in (args.memory_steps, args.steps) if s > 0}):
            measure(workdir, steps, args, master)


if __name__ == "__main__":
    main()
