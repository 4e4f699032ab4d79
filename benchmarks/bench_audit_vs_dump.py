"""`kraftspec audit` against Kafka's own metadata log dump (`kafka-dump-log --cluster-metadata-decoder`, i.e.
DumpLogSegments run from the jars `kraftspec cluster fetch` resolves) on the same log segments.

Inputs: every log segment of the bundled corpus (`traces/corpus`, the real clusters' logs and this project's own
runs), the largest of them repeated `--long` times (offsets rewritten, `plant.repeated`), and the segments under
any `--logs DIR` (e.g. a folder kept by `kraftspec cluster run --keep`). For each input, both tools run as
whole processes (best of `--samples`), and the audit also in-process (no interpreter start-up). Both must
decode the same number of records (the dump's `| offset:` lines, the audit's per-segment record count): a
difference is printed and makes the exit status 1. Figures are printed, never asserted in tests.

    python benchmarks/bench_audit_vs_dump.py [--kafka 4.3.1] [--samples 3] [--long 8] [--logs DIR ...]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kraftspec.cluster import jars
from kraftspec.traces.metalog.audit import audit_paths
from kraftspec.traces.metalog.corpus import CORPUS_DIR, RUNS_DIR, largest_log

DUMP_JVM = ("-Xmx512m", "-XX:+UseSerialGC", "-Xshare:auto")


def corpus_name(segment: Path) -> str:
    """A corpus segment's name: its public folder, or ``runs/RUN/MOMENT/node-N`` for the project's own runs."""
    if segment.is_relative_to(RUNS_DIR):
        return f"runs/{segment.relative_to(RUNS_DIR).parent.parent.parent}"
    return str(segment.relative_to(CORPUS_DIR).parts[0])


def segments(folder: Path) -> list[Path]:
    return sorted(p for p in folder.glob("**/__cluster_metadata-0/*.log") if p.is_file() and p.stat().st_size > 0)


def best(command: list[str], samples: int) -> tuple[float, str]:
    times, out = [], ""
    for _ in range(samples):
        started = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True)
        times.append(time.perf_counter() - started)
        out = done.stdout
        if done.returncode not in (0, 1):
            raise SystemExit(f"{' '.join(command[:6])}... exited {done.returncode}: {done.stderr[-2000:]}")
    return min(times), out


def audit_records(path: Path) -> tuple[int, float]:
    started = time.perf_counter()
    report = audit_paths([str(path)])
    seconds = time.perf_counter() - started
    return sum(f.records for d in report.directories for f in d.files if f.kind == "log segment"), seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kafka", default="4.3.1", help="Kafka version of the dump tool (default 4.3.1)")
    parser.add_argument("--samples", type=int, default=3, help="runs per tool and input; the best is kept")
    parser.add_argument("--long", type=int, default=8, help="times the largest corpus log is repeated (0: skip)")
    parser.add_argument("--logs", nargs="*", default=[], help="more folders holding __cluster_metadata-0 segments")
    args = parser.parse_args()
    classpath = jars.classpath(args.kafka)
    dump_main = jars.main_class("dump-log", args.kafka)
    inputs = [(corpus_name(p), p) for p in segments(CORPUS_DIR)]
    for folder in args.logs:
        inputs += [(f"{Path(folder).name}/{p.parent.parent.parent.name}", p) for p in segments(Path(folder))]
    scratch = Path(tempfile.mkdtemp(prefix="bench-audit-dump-"))
    if args.long > 0:
        from kraftspec.traces.metalog.plant import repeated

        long_log = scratch / "__cluster_metadata-0" / "00000000000000000000.log"
        long_log.parent.mkdir(parents=True)
        with open(long_log, "wb") as out:
            for raw in repeated(largest_log(), args.long):
                out.write(raw)
        inputs.append((f"largest corpus log x{args.long}", long_log))
    print(f"Kafka {args.kafka} {dump_main} vs kraftspec audit; best of {args.samples}; load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    header = (f"{'input':44} {'MB':>6} {'records':>8} {'dump s':>7} {'audit s':>8} {'ratio':>6} "
              f"{'audit in-proc s':>15} {'ratio':>6}")
    print(header)
    total_dump = total_audit = total_inproc = 0.0
    mismatched = 0
    for name, path in inputs:
        dump_s, dump_out = best(["java", *DUMP_JVM, "-cp", classpath, dump_main, "--cluster-metadata-decoder",
                                 "--files", str(path)], args.samples)
        dump_records = sum(1 for line in dump_out.splitlines() if line.startswith("| offset:"))
        audit_s, _ = best([sys.executable, "-m", "kraftspec.cli", "audit", "--json", str(path)], args.samples)
        records, inproc = min((audit_records(path) for _ in range(args.samples)), key=lambda r: r[1])
        total_dump, total_audit, total_inproc = total_dump + dump_s, total_audit + audit_s, total_inproc + inproc
        flag = "" if records == dump_records else f"  RECORD COUNTS DIFFER: dump {dump_records}, audit {records}"
        mismatched += bool(flag)
        print(f"{name[-44:]:44} {path.stat().st_size / 1e6:6.2f} {records:8d} {dump_s:7.2f} {audit_s:8.2f} "
              f"{dump_s / audit_s:6.2f} {inproc:15.3f} {dump_s / inproc:6.1f}{flag}")
    print(f"{'total':44} {'':6} {'':8} {total_dump:7.2f} {total_audit:8.2f} {total_dump / total_audit:6.2f} "
          f"{total_inproc:15.3f} {total_dump / total_inproc:6.1f}")
    print("ratio = dump-tool seconds / kraftspec audit seconds (above 1: the audit is faster); the audit also checks "
          "every CRC and replays every record through the reference's rules, the dump only decodes and prints")
    print("record counts: " + ("equal for every input" if not mismatched else f"{mismatched} input(s) differ"))
    return 1 if mismatched else 0


if __name__ == "__main__":
    sys.exit(main())
