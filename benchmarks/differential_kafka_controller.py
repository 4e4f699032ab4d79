"""Differential runs of the controller component against Apache Kafka's own classes: generated steps, 0 disagreements.

Run: ``python benchmarks/differential_kafka_controller.py [--kafka 4.3.1] [--steps 100000] [--seed 20261126]
[--examples 200] [--length 50]``. Runs ``kraftspec.differential_controller.controller_machine`` (Kafka behind
``KafkaAdapter``, the reference beside it) in rounds of ``--examples`` Hypothesis examples of up to ``--length``
steps, round i seeded with ``--seed + i`` (printed), with the inputs and the reference's behaviour that the
Kafka version calls for (``differential_controller.profile``), until ``--steps`` steps have been judged. It prints the
steps, the time and steps per second (JVM round trip included), how often each path of interest was taken
(``differential_controller.paths_of``) and the inputs both sides refused; on a disagreement, Hypothesis's shrunk
sequence and the trace ``kraftspec conform --kafka`` replays, then exits 1. Nothing is asserted on timings; the
figures depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import sys
import time

from hypothesis import HealthCheck, seed, settings
from hypothesis.stateful import run_state_machine_as_test

from kraftspec import differential_controller as dc
from kraftspec.harness.adapter import KafkaAdapter
from kraftspec.harness.jvm import DEFAULT_VERSION, shared
from kraftspec.models.determinism import without_local_constants


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kafka", default=DEFAULT_VERSION)
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=20261126)
    parser.add_argument("--examples", type=int, default=200)
    parser.add_argument("--length", type=int, default=50)
    args = parser.parse_args()
    started = time.perf_counter()
    shared(args.kafka)  # build and start the JVM before the clock for the steps starts
    ready = time.perf_counter()
    machine = dc.controller_machine(lambda: KafkaAdapter("controller", args.kafka), args.kafka)
    rounds = 0
    try:
        while dc.STEPS[0] < args.steps:
            round_seed = args.seed + rounds
            before = dc.STEPS[0]
            with without_local_constants():
                run_state_machine_as_test(seed(round_seed)(machine), settings=settings(
                    max_examples=args.examples, stateful_step_count=args.length, deadline=None, database=None,
                    suppress_health_check=list(HealthCheck)))
            rounds += 1
            elapsed = time.perf_counter() - ready
            print(f"round {rounds} (seed {round_seed}): {dc.STEPS[0] - before} steps; total {dc.STEPS[0]} in "
                  f"{elapsed:.0f} s ({dc.STEPS[0] / elapsed:.0f} steps/s)", flush=True)
    except Exception as exc:  # noqa: BLE001 - a disagreement (or a harness failure): reported, exit 1
        print(f"DISAGREEMENT in round {rounds + 1} (seed {args.seed + rounds}) on Kafka {args.kafka}:\n{exc}")
        return 1
    elapsed = time.perf_counter() - ready
    print(f"\ncontroller on Kafka {args.kafka}: {dc.STEPS[0]} steps judged in {rounds} rounds (seeds {args.seed}.."
          f"{args.seed + rounds - 1}), 0 disagreements; {elapsed:.0f} s, {dc.STEPS[0] / elapsed:.0f} steps/s "
          f"(JVM round trip included; harness start {ready - started:.1f} s)")
    print("paths taken:")
    for path, count in sorted(dc.PATHS.items()):
        print(f"  {count:8d}  {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
