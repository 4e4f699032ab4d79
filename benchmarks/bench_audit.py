"""Audit throughput and peak memory of ``kraftspec.traces.metalog.audit`` (issue 8).

Throughput: the largest bundled corpus log, audited whole (CRC-32C, decoding, replay and every rule) in
this one process, N times; prints best and median wall-clock MB/s, records/s and batches/s, and the median
over process CPU time (the steadier figure on a shared machine).
Memory: the same log repeated k = 1, 4, 16 times (offsets rewritten, see ``plant.repeated``) is audited
in a fresh process each; its peak RSS (``resource.getrusage``) above the post-import baseline must not
grow with k, since the reader streams and the image does not grow with the log's length.

Run: ``python benchmarks/bench_audit.py [--runs N]``.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def throughput(runs: int) -> None:
    from kraftspec.traces.metalog.audit import audit_paths
    from kraftspec.traces.metalog.corpus import largest_log

    log = largest_log()
    size = log.stat().st_size
    audit_paths([log])  # warm-up: imports, compiled decoders
    times, cpu, report = [], [], None
    for _ in range(runs):
        start, start_cpu = time.perf_counter(), time.process_time()
        report = audit_paths([log])
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    assert report is not None and report.ok
    directory = report.directories[0]
    records = sum(directory.record_counts.values())
    batches = sum(f.batches for f in directory.files)
    print(f"log: {log.relative_to(log.parents[3])} ({size / 1e6:.2f} MB, {batches} batches, {records} records)")
    for label, t in (("best", min(times)), ("median", statistics.median(times)),
                     ("CPU median", statistics.median(cpu))):
        print(f"  {label:10}: {size / t / 1e6:6.1f} MB/s  {records / t:10.0f} records/s  {batches / t:10.0f} batches/s"
              f"  ({t * 1e3:.1f} ms)")


def child(path: str) -> None:
    """Print the peak RSS growth (KiB) of auditing ``path`` in this process."""
    from kraftspec.traces.metalog.audit import audit_paths

    audit_paths([])
    baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    report = audit_paths([path])
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    directory = report.directories[0]
    print(peak - baseline, peak, directory.log_end_offset, directory.violation_count)


def memory(factors: list[int]) -> None:
    from kraftspec.traces.metalog.corpus import largest_log
    from kraftspec.traces.metalog.plant import repeated

    print("peak memory (fresh process per size; RSS growth over the post-import baseline):")
    with tempfile.TemporaryDirectory() as tmp:
        for k in factors:
            path = Path(tmp) / "00000000000000000000.log"
            with open(path, "wb") as out:
                for raw in repeated(largest_log(), k):
                    out.write(raw)
            result = subprocess.run([sys.executable, __file__, "--child", str(path)], check=True,
                                    capture_output=True, text=True)
            growth, peak, offsets, violations = (int(x) for x in result.stdout.split())
            print(f"  x{k:<3} {path.stat().st_size / 1e6:7.1f} MB, {offsets:8d} offsets: peak RSS {peak / 1024:6.1f} MiB, "
                  f"growth {growth / 1024:5.1f} MiB ({violations} violations from the repeated epochs, kept ≤ 1000)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--child")
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return
    throughput(args.runs)
    memory([1, 4, 16, 64])


if __name__ == "__main__":
    main()
