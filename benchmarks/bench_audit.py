"""Audit throughput and peak memory of ``kraftspec.traces.metalog.audit`` (issue 8: at least 20 MB/s on the
largest corpus log, in one process, with every batch's CRC-32C and every rule check; memory that does not
grow with the log's length).

Throughput: the largest bundled corpus log is audited whole (CRC-32C, decoding, replay and every rule) in this
one process. After a warm-up pass, each of ``--samples`` samples times as many consecutive passes as fill about
``--sample-seconds``, so that a single scheduler slice or page-cache hiccup cannot make a sample; the script
prints best and median per pass, over wall-clock and over process CPU time (the steadier figure on a shared
machine), the spread median/best, the garbage collections during the samples, and the load average before and
after. The same log repeated ``--long`` times (offsets rewritten, see ``plant.repeated``) is then timed in one
pass per sample: the figure for a long log, with no per-pass setup to amortise.
Memory: the log repeated k = 1, 4, 16, 64 times is audited in a fresh process each; its peak RSS
(``resource.getrusage``) above the post-import baseline and the peak of Python's heap during the audit
(``tracemalloc``) must not grow with k, since the reader streams and the image does not grow with the log's length.

Figures are printed, never asserted. Run: ``python benchmarks/bench_audit.py [--samples N] [--sample-seconds S]``.
"""

from __future__ import annotations

import argparse
import gc
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Callable

TARGET_MB_S = 20.0


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _write_repeated(path: Path, times: int) -> None:
    from kraftspec.traces.metalog.corpus import largest_log
    from kraftspec.traces.metalog.plant import repeated

    with open(path, "wb") as out:
        for raw in repeated(largest_log(), times):
            out.write(raw)


def _timed(run: Callable[[], object], samples: int, passes: int) -> tuple[list[float], list[float]]:
    """Wall-clock and CPU seconds per pass of each sample (``passes`` consecutive runs)."""
    wall, cpu = [], []
    for _ in range(samples):
        start, start_cpu = time.perf_counter(), time.process_time()
        for _ in range(passes):
            run()
        wall.append((time.perf_counter() - start) / passes)
        cpu.append((time.process_time() - start_cpu) / passes)
    return wall, cpu


def _table(size: int, records: int, batches: int, wall: list[float], cpu: list[float]) -> None:
    print(f"  {'':11} {'MB/s':>7} {'records/s':>11} {'batches/s':>11} {'ms/pass':>9}")
    for label, t in (("wall best", min(wall)), ("wall median", statistics.median(wall)),
                     ("CPU best", min(cpu)), ("CPU median", statistics.median(cpu))):
        print(f"  {label:11} {size / t / 1e6:7.1f} {records / t:11.0f} {batches / t:11.0f} {t * 1e3:9.1f}")
    print(f"  spread median/best: wall {statistics.median(wall) / min(wall):.2f}, CPU "
          f"{statistics.median(cpu) / min(cpu):.2f}; target {TARGET_MB_S:.0f} MB/s")


def throughput(samples: int, sample_seconds: float, long_times: int) -> None:
    from kraftspec.traces.metalog.audit import audit_paths
    from kraftspec.traces.metalog.corpus import largest_log

    log = largest_log()
    size = log.stat().st_size
    print(f"machine: {os.cpu_count()} CPUs, Python {sys.version.split()[0]}; load average {_load()} (1, 5, 15 min)")
    start = time.perf_counter()
    report = audit_paths([log])  # warm-up: imports, compiled decoders, uuid cache
    one_pass = time.perf_counter() - start
    directory = report.directories[0]
    records = sum(directory.record_counts.values())
    batches = sum(f.batches for f in directory.files)
    verdict = "0 violations" if report.ok else f"NOT CLEAN: {directory.violation_count} violation(s) or errors"
    print(f"log: {log.relative_to(log.parents[3])} ({size / 1e6:.2f} MB, {batches} batches, {records} records, {verdict})")
    passes = max(1, math.ceil(sample_seconds / one_pass))
    collections = [s["collections"] for s in gc.get_stats()]
    load_before = _load()
    wall, cpu = _timed(lambda: audit_paths([log]), samples, passes)
    collected = [s["collections"] - c for s, c in zip(gc.get_stats(), collections)]
    print(f"throughput: {samples} samples of {passes} passes (about {sample_seconds:g} s each); load average "
          f"{load_before} before, {_load()} after")
    _table(size, records, batches, wall, cpu)
    print(f"  garbage collections during the samples: generation 0: {collected[0]}, 1: {collected[1]}, 2: {collected[2]}")

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "00000000000000000000.log"
        _write_repeated(path, long_times)
        long_size = path.stat().st_size
        report = audit_paths([path])
        directory = report.directories[0]
        long_records = sum(directory.record_counts.values())
        long_batches = sum(f.batches for f in directory.files)
        load_before = _load()
        long_samples = max(3, samples // 3)
        wall, cpu = _timed(lambda: audit_paths([path]), long_samples, 1)
        print(f"long log: the log {long_times} times ({long_size / 1e6:.1f} MB, {long_batches} batches, "
              f"{directory.violation_count} violations from the repeated epochs), {long_samples} samples of one pass; "
              f"load average {load_before} before, {_load()} after")
        _table(long_size, long_records, long_batches, wall, cpu)


def child(path: str) -> None:
    """Print the peak RSS growth and peak (KiB) of auditing ``path`` in this process, then the peak of Python's
    heap during a second audit (``tracemalloc``, bytes): RSS is a high-water mark that imports may already have
    set, the heap peak is the audit's own."""
    from kraftspec.traces.metalog.audit import audit_paths

    audit_paths([])
    baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    report = audit_paths([path])
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    tracemalloc.start()
    audit_paths([path])
    heap = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    directory = report.directories[0]
    print(peak - baseline, peak, heap, directory.log_end_offset, directory.violation_count)


def memory(factors: list[int]) -> None:
    print(f"peak memory (fresh process per size; RSS growth over the post-import baseline); load average {_load()}:")
    with tempfile.TemporaryDirectory() as tmp:
        for k in factors:
            path = Path(tmp) / "00000000000000000000.log"
            _write_repeated(path, k)
            result = subprocess.run([sys.executable, __file__, "--child", str(path)], check=True,
                                    capture_output=True, text=True)
            growth, peak, heap, offsets, violations = (int(x) for x in result.stdout.split())
            print(f"  x{k:<3} {path.stat().st_size / 1e6:7.1f} MB, {offsets:8d} offsets: peak RSS {peak / 1024:6.1f} MiB, "
                  f"growth {growth / 1024:5.1f} MiB, Python heap peak {heap / 2**20:5.1f} MiB ({violations} violations "
                  f"from the repeated epochs, kept ≤ 1000)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=15, help="timed samples (default 15)")
    parser.add_argument("--sample-seconds", type=float, default=0.5, help="length of one sample (default 0.5 s)")
    parser.add_argument("--long", type=int, default=8, help="times the log is repeated for the long-log figure")
    parser.add_argument("--child")
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return
    throughput(args.samples, args.sample_seconds, args.long)
    memory([1, 4, 16, 64])


if __name__ == "__main__":
    main()
