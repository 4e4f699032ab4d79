"""Differential runs of the partition component against Apache Kafka's own controller code, and their throughput.

Each seed runs ``kraftspec.differential_partition.partition_machine`` (derandomized from the printed seed) with
``kraftspec.harness.adapter.KafkaAdapter("partition", VERSION)``: the reference and Kafka's
ReplicationControlManager / PartitionChangeBuilder / ClusterControlManager and the brokers' kafka.cluster.Partition
leaders given the same inputs, every output, record and post-state compared; odd seeds draw the leader's inputs
with the broker events (``--focus``). A disagreement stops the run and prints the shrunk trace (``kraftspec conform
--kafka VERSION`` replays it). Steps per second include the JVM round trip, Hypothesis' generation and the
reference's replay of each step.

    python benchmarks/bench_kafka_partition.py --seeds 100 110 --examples 500 --steps 50
"""

from __future__ import annotations

import argparse
import sys
import time

from kraftspec.differential_partition import ACTIONS, LEADER_FOCUS, profile, run_differential
from kraftspec.harness.adapter import KafkaAdapter
from kraftspec.harness.jvm import DEFAULT_VERSION
from kraftspec.oracle import DivergenceError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kafka", default=DEFAULT_VERSION, help=f"Kafka version (default {DEFAULT_VERSION})")
    parser.add_argument("--seeds", nargs=2, type=int, default=(100, 110), metavar=("FIRST", "END"),
                        help="seeds FIRST..END-1 (default 100 110)")
    parser.add_argument("--examples", type=int, default=500, help="examples per seed (default 500)")
    parser.add_argument("--steps", type=int, default=50, help="rules per example at most (default 50)")
    parser.add_argument("--no-shrink", action="store_true", help="report the first disagreement unshrunk")
    parser.add_argument("--focus", choices=("all", "leader", "alternate"), default="alternate",
                        help="inputs drawn: all, the leader's (with the broker events), or alternating per seed "
                             "(default)")
    args = parser.parse_args(argv)
    adapter = KafkaAdapter("partition", args.kafka)
    total_steps, total_seconds, started = 0, 0.0, time.perf_counter()
    kafka = profile(args.kafka)
    print(f"Kafka {args.kafka}: {kafka}", flush=True)
    for run_seed in range(*args.seeds):
        leader = kafka.leader_side and (args.focus == "leader" or (args.focus == "alternate" and run_seed % 2 == 1))
        actions = LEADER_FOCUS if leader else ACTIONS
        try:
            result = run_differential(lambda: adapter, run_seed, max_examples=args.examples, steps=args.steps,
                                      shrink=not args.no_shrink, actions=actions, kafka=kafka)
        except DivergenceError as exc:
            print(f"seed {run_seed}: DISAGREEMENT with Kafka {args.kafka}\n{exc}", flush=True)
            return 1
        total_steps += result["steps"]
        total_seconds += result["seconds"]
        print(f"seed {run_seed} ({'leader inputs' if leader else 'all inputs'}): {result['steps']} steps agree "
              f"({result['refused']} inputs refused by the reference "
              f"and not sent), {result['seconds']:.1f} s, {result['steps'] / result['seconds']:.0f} steps/s",
              flush=True)
    print(f"Kafka {args.kafka}, partition component: {total_steps} steps, 0 disagreements, "
          f"{total_steps / max(total_seconds, 1e-9):.0f} steps/s (JVM round trip included; "
          f"{time.perf_counter() - started:.0f} s wall)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
