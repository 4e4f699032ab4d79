"""The mixed KRaft quorum (``kraftspec.harness.raft_mixed``): seeded runs with Kafka-backed nodes, their safety,
their agreement with the reference and how often they reach the hard paths.

For each of ``--kafka-nodes`` (default 1 and 2), runs seeds ``--seeds FIRST END``: each run draws which nodes Kafka's
``KafkaRaftClient`` runs (the others are the reference), applies ``--rules`` rules of the raft simulation, checks the
quorum's safety properties after every rule and judges every node's view with the reference. Prints per setting: runs,
safety violations and refusals (then counted by kind), disagreements (node views that do not replay), steps run on
Kafka, Kafka steps per second (JVM round trips included) and the hard paths reached. ``--faults``: the network also
fails requests and nodes shut down gracefully (then the failed answers and finished shutdowns are counted too).
``--snapshots``: nodes also snapshot their committed logs, clean them and fetch snapshots (KIP-630; the snapshot paths
reached are counted too). ``--dynamic``: a kraft.version 1 quorum (KIP-853) whose voters an admin adds and removes
(not with ``--snapshots``). Exit code 1 on any violation or disagreement.

    python benchmarks/kafka_raft_mixed.py --seeds 0 1000 --kafka-nodes 1 2 [--faults] [--snapshots | --dynamic]
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections import Counter

from kraftspec.harness import raft_mixed
from kraftspec.harness.jvm import DEFAULT_VERSION, KafkaProcess
from kraftspec.traces.replay.check import describe


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kafka", default=DEFAULT_VERSION, help=f"Kafka version (default {DEFAULT_VERSION})")
    parser.add_argument("--seeds", nargs=2, type=int, default=(0, 1000), metavar=("FIRST", "END"))
    parser.add_argument("--kafka-nodes", nargs="+", type=int, default=(1, 2))
    parser.add_argument("--rules", type=int, default=150, help="rules per run (default 150)")
    parser.add_argument("--faults", action="store_true", help="failed requests and graceful shutdowns too")
    parser.add_argument("--snapshots", action="store_true", help="snapshots created, cleaned and fetched too")
    parser.add_argument("--dynamic", action="store_true", help="a kraft.version 1 quorum whose voters change")
    args = parser.parse_args(argv)
    processes = [KafkaProcess(args.kafka) for _ in range(max(args.kafka_nodes))]
    failed = False
    try:
        for count in args.kafka_nodes:
            paths = raft_mixed.HardPaths()
            started, steps, violations, disagreements, inexpressible, shown = time.perf_counter(), 0, 0, 0, 0, 0
            kinds: Counter[str] = Counter()  # the failures, their numbers left out
            for seed in range(*args.seeds):
                result = raft_mixed.run(seed, count, processes, args.rules, args.faults, args.snapshots,
                                        args.dynamic)
                steps += result.kafka_steps
                paths.add(result.paths)
                violations += result.failure is not None
                if result.failure is not None:
                    kinds[re.sub(r"-?\d+", "N", result.failure.split(" (")[0])[:120]] += 1
                disagreements += len(result.disagreements)
                inexpressible += result.inexpressible is not None
                if (result.failure or result.disagreements or result.inexpressible) and shown < 3:
                    shown += 1
                    print(f"seed {seed} (Kafka nodes {result.kafka_nodes}): "
                          f"{result.failure or result.inexpressible or ''}")
                    for node in result.disagreements:
                        print(f"  node {node}: {describe(result.verdicts[node])}")
            seconds = time.perf_counter() - started
            runs = args.seeds[1] - args.seeds[0]
            failed = failed or violations > 0 or disagreements > 0 or inexpressible > 0
            print(f"{count} Kafka-backed node(s), Kafka {args.kafka}: {runs} runs (seeds {args.seeds[0]}.."
                  f"{args.seeds[1] - 1}, {args.rules} rules each): {violations} safety violations or refusals, "
                  f"{disagreements} node views disagreeing, {inexpressible} runs stopped at a step the harness "
                  f"cannot put to Kafka; {steps} steps on Kafka, {steps / seconds:.0f} Kafka steps/s ({seconds:.0f} s)")
            print(f"  hard paths: {paths.truncations_under_hw} truncations of a diverging log under a leader with a "
                  f"high watermark, {paths.leader_changes_with_uncommitted} leader changes with uncommitted entries, "
                  f"restarts by role: {dict(sorted(paths.restarts.items()))}", flush=True)
            for kind, times in kinds.most_common():
                print(f"  {times} x {kind}", flush=True)
            if args.faults:
                print(f"  failed answers: {dict(sorted(paths.failed_requests.items()))}; finished shutdowns: "
                      f"{dict(sorted(paths.shutdowns.items()))}", flush=True)
            if args.snapshots:
                print(f"  snapshot paths: {dict(sorted(paths.snapshots.items()))}", flush=True)
    finally:
        for process in processes:
            process.close()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
