"""Reference replay versus TLC trace validation on the same 1,000 short traces (target: replay >= 10,000x faster).

The traces are the first N random walks of the bundled ``traces/tla/broker.jsonl.gz`` (1 to 24 steps
each). Whole-process figures: each side runs as a fresh process on the same file, start-up and
decoding included (``kraftspec check FILE`` for the reference; ``kraftspec.spec.trace_validation``
for TLC: encoding, generated module, JVM and TLC, one TLC run per batch). In-process figures
separate replay alone (traces decoded beforehand; the best of ``--repeats`` runs); a few traces
validated with one TLC run each give the unbatched figure (a JVM start per trace), extrapolated to
all. No randomness. The summary
names each ratio by how TLC is run (batched as this project runs it, measured; one run per trace,
extrapolated) and by which replay figure it divides (in process, whole process).

    python benchmarks/bench_tlc_ratio.py [--traces 1000] [--batch 1000] [--single 5] [--repeats 5]
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kraftspec import traces as traces_package
from kraftspec.spec.trace_validation import validate
from kraftspec.traces.format.envelope import Trace
from kraftspec.traces.format.jsonl import read_jsonl
from kraftspec.traces.replay.verdict import replay

BUNDLED = Path(traces_package.__file__).parent / "tla" / "broker.jsonl.gz"
TARGET = 10_000
TLC_SIDE = """
import sys
from kraftspec.spec.trace_validation import validate
from kraftspec.traces.format.jsonl import read_jsonl
verdicts = validate([t for _, t in read_jsonl(sys.argv[1])], batch=int(sys.argv[2]))
print(sum(v.outcome == "accepted" for v in verdicts))
"""


def timed(command: list[str]) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return elapsed, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=int, default=1000)
    parser.add_argument("--batch", type=int, default=1000, help="traces per TLC run (default 1000)")
    parser.add_argument("--single", type=int, default=5,
                        help="also time this many traces with one TLC run each, extrapolated to all (default 5)")
    parser.add_argument("--repeats", type=int, default=5,
                        help="in-process replay: the best of this many runs (default 5)")
    args = parser.parse_args()
    with gzip.open(BUNDLED, "rt") as lines:
        chosen = [line for line in itertools.islice(lines, args.traces) if json.loads(line)["id"].startswith("tla-walk")]
    with tempfile.TemporaryDirectory(prefix="kraftspec-bench-") as tmp:
        path = Path(tmp) / "short.jsonl"
        path.write_text("".join(chosen))
        decoded = [t for _, t in read_jsonl(path) if isinstance(t, Trace)]
        steps = sum(len(t.steps) for t in decoded)
        print(f"{len(decoded)} traces, {steps} steps (1 to {max(len(t.steps) for t in decoded)} per trace)")

        replay_s = replay_cpu = float("inf")
        for _ in range(args.repeats):
            start, cpu = time.perf_counter(), time.process_time()
            conformant = sum(replay(t).conformant for t in decoded)
            replay_s = min(replay_s, time.perf_counter() - start)
            replay_cpu = min(replay_cpu, time.process_time() - cpu)
        ref_s, ref_out = timed([sys.executable, "-m", "kraftspec.cli", "check", str(path)])
        tlc_s, tlc_out = timed([sys.executable, "-c", TLC_SIDE, str(path), str(args.batch)])
        start = time.perf_counter()
        validate(decoded[:args.single], batch=1)
        single_s = (time.perf_counter() - start) / max(args.single, 1) * len(decoded)
    accepted = int(tlc_out.strip().splitlines()[-1])
    print(f"reference, in process (replay only, best of {args.repeats}): {replay_s:.3f} s "
          f"({steps / replay_s:,.0f} steps/s; CPU time {replay_cpu:.3f} s, {steps / replay_cpu:,.0f} steps/s), "
          f"{conformant} conformant")
    print(f"reference, whole process (kraftspec check): {ref_s:.2f} s  [{ref_out.strip().splitlines()[-1]}]")
    print(f"TLC validation, whole process: {tlc_s:.1f} s, {accepted} accepted by the spec")
    print(f"ratio, whole process: {tlc_s / ref_s:,.0f}x   (target {TARGET:,}x)")
    print(f"ratio, TLC whole process / in-process replay: {tlc_s / replay_s:,.0f}x   (target {TARGET:,}x)")
    print(f"one TLC run per trace (the unbatched way; extrapolated from {args.single}): {single_s:,.0f} s; "
          f"ratio to whole-process replay {single_s / ref_s:,.0f}x, to in-process replay {single_s / replay_s:,.0f}x")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (other processes slow both sides)")
    print(f"summary, TLC time / replay time for the same {len(decoded)} traces (target {TARGET:,}x), by how TLC is run "
          f"(wall-clock; TLC's JVM uses several cores, so load changes the ratios):")
    for label, tlc in ((f"TLC batched as this project runs it ({args.batch} traces per TLC run, measured)", tlc_s),
                       (f"TLC one run per trace (the usual way; extrapolated from {args.single} traces)", single_s)):
        inside, whole = tlc / replay_s, tlc / ref_s
        print(f"  {label}: {inside:,.0f}x in-process replay ({'meets' if inside >= TARGET else 'below'} the target), "
              f"{whole:,.0f}x whole-process kraftspec check ({'meets' if whole >= TARGET else 'below'} the target)")


if __name__ == "__main__":
    main()
