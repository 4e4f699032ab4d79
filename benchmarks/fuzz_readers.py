"""Fuzz every reader of hostile input (issue 21): at least 1,000,000 inputs by default, spread over the readers.

    python benchmarks/fuzz_readers.py [--inputs 1000000] [--seed S] [--jobs N] [--reader NAME ...]
                                      [--timeout 20] [--out fuzz-failures/]
    python benchmarks/fuzz_readers.py --replay FILE --reader NAME

Prints, per reader, the inputs run, inputs/s (CPU of its worker) and the failures (any exception other than
the reader's own error type, a hang past ``--timeout``, a control character in an error or report line, an exit
code outside 0/1/2), and saves the first input of each distinct failure (reader, exception, place) as a
reproducer in ``--out``. The seed is printed; input ``i`` of reader ``R`` is ``random.Random(f"{seed}:{R}:{i}")``.
A worker process that dies (a crash in a native library) is reported with the input it was running.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Optional

from kraftspec.traces.format import fuzz

WEIGHTS = {"segment": 14, "snapshot": 8, "datadir": 4, "quorum-state": 10, "leader-epoch-checkpoint": 10,
           "meta.properties": 10, "partition.metadata": 10, "jsonl": 12, "jsonl.gz": 8, "parquet": 5, "validate": 3,
           "vectors-verify": 6}
"""Shares of the inputs per reader (the slower readers, Parquet and whole data directories, get fewer)."""
CHUNK = 2000
"""Inputs per task handed to a worker."""


def _task(args: tuple[str, int, int, int, float, str]) -> tuple[fuzz.Stats, list[dict[str, Any]]]:
    reader, seed, start, count, timeout, out = args
    work = Path(tempfile.mkdtemp(prefix=f"fuzz-{reader}-"))
    saved: list[dict[str, Any]] = []
    instance = fuzz.READERS[reader]
    seeds = instance.seeds()
    stats = fuzz.Stats({reader: 0}, {reader: 0}, {reader: {}}, {reader: 0.0})
    started = time.process_time()
    progress = Path(out) / f".running-{os.getpid()}"
    for index in range(start, start + count):
        data = fuzz.make_input(instance, seeds, seed, index)
        if index % 200 == 0:
            progress.parent.mkdir(parents=True, exist_ok=True)
            progress.write_text(f"{reader} {seed} {index}\n")
        result = fuzz.run_one(instance, data, work / "input", timeout)
        stats.inputs[reader] += 1
        if result is not None:
            failure = fuzz.Failure(reader, seed, index, *result, data=data)
            stats.failures[reader] += 1
            if failure.key not in stats.distinct[reader]:
                path = fuzz.save_reproducer(Path(out), failure)
                failure.data = b""
                stats.distinct[reader][failure.key] = failure
                saved.append({"key": failure.key, "path": str(path)})
    stats.seconds[reader] = time.process_time() - started
    progress.unlink(missing_ok=True)
    import shutil

    shutil.rmtree(work, ignore_errors=True)
    return stats, saved


def plan(inputs: int, readers: list[str]) -> dict[str, int]:
    total = sum(WEIGHTS[r] for r in readers)
    shares = {r: inputs * WEIGHTS[r] // total for r in readers}
    shares[readers[0]] += inputs - sum(shares.values())
    return shares


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--inputs", type=int, default=1_000_000, help="inputs in all (default 1,000,000)")
    parser.add_argument("--seed", type=int, default=None, help="the seed (default: random, printed)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="worker processes (default: CPUs)")
    parser.add_argument("--reader", action="append", choices=sorted(fuzz.READERS), help="only these readers")
    parser.add_argument("--timeout", type=float, default=20.0, help="seconds per input before it counts as a hang")
    parser.add_argument("--out", default="fuzz-failures", help="folder for reproducers (default fuzz-failures/)")
    parser.add_argument("--replay", metavar="FILE", help="run one saved input again (with --reader)")
    args = parser.parse_args(argv)
    if args.replay:
        if not args.reader or len(args.reader) != 1:
            parser.error("--replay needs exactly one --reader")
        result = fuzz.replay_file(args.reader[0], Path(args.replay), args.timeout)
        print(f"{args.replay}: " + ("the contract holds" if result is None else f"{result[0]} at {result[2]}: {result[1]}"))
        return 0 if result is None else 1
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**32)
    readers = args.reader or list(WEIGHTS)
    shares = plan(args.inputs, readers)
    print(f"fuzz_readers: seed {seed}, {args.inputs} inputs over {len(readers)} readers, {args.jobs} jobs, "
          f"timeout {args.timeout:g} s; reproduce with --seed {seed}", flush=True)
    for reader in readers:  # build every seed corpus once here: the workers inherit it (fork)
        fuzz.READERS[reader].seeds()
    tasks = [(r, seed, start, min(CHUNK, shares[r] - start), args.timeout, args.out)
             for r in readers for start in range(0, shares[r], CHUNK)]
    tasks.sort(key=lambda t: (t[2], t[0]))
    total = fuzz.Stats()
    saved: list[dict[str, Any]] = []
    started = time.perf_counter()
    done = 0
    context = multiprocessing.get_context("fork")
    with context.Pool(args.jobs, maxtasksperchild=20) as pool:
        for stats, found in pool.imap_unordered(_task, tasks):
            total.merge(stats)
            saved += found
            done += sum(stats.inputs.values())
            if done // 100_000 != (done - sum(stats.inputs.values())) // 100_000:
                print(f"  {done} inputs, {sum(total.failures.values())} failures, "
                      f"{time.perf_counter() - started:.0f} s", flush=True)
    wall = time.perf_counter() - started
    print(f"\n{'reader':26} {'inputs':>9} {'inputs/s':>9} {'failures':>9} {'distinct':>9}")
    for reader in readers:
        n, cpu = total.inputs.get(reader, 0), total.seconds.get(reader, 0.0)
        print(f"{reader:26} {n:9} {n / cpu if cpu else 0:9.0f} {total.failures.get(reader, 0):9} "
              f"{len(total.distinct.get(reader, {})):9}")
    n = sum(total.inputs.values())
    print(f"{'all':26} {n:9} {n / wall:9.0f} {sum(total.failures.values()):9} "
          f"{sum(len(d) for d in total.distinct.values()):9}   ({wall:.0f} s wall, inputs/s per worker CPU above)")
    for reader, failures in sorted(total.distinct.items()):
        for failure in failures.values():
            print(f"FAILURE {reader}: {failure.kind} at {failure.where}: {failure.message[:200]!r} "
                  f"(seed {failure.seed}, input {failure.index})")
    for item in saved:
        print(f"  reproducer: {item['path']}")
    leftovers = sorted(Path(args.out).glob(".running-*")) if Path(args.out).is_dir() else []
    for marker in leftovers:  # a worker that died mid-task (a native crash)
        print(f"CRASHED worker: last input {marker.read_text().strip()} (reader seed index, every 200th noted)")
    print(f"seed {seed}")
    return 1 if sum(total.failures.values()) or leftovers else 0


if __name__ == "__main__":
    sys.exit(main())
