"""Differential runs of the broker component against Apache Kafka's own classes: generated steps, 0 disagreements.

Run: ``python benchmarks/differential_kafka_broker.py [--kafka 4.3.1] [--examples 300] [--seed 20261126]
[--initial NAME ...] [--steps 50]``. For every initial state of ``kraftspec.harness.broker.differential_initials``
(an empty cluster with and without ELR, the standard states, the running cluster at older metadata.versions and
with ELR and topic configs), it runs ``kraftspec.oracle.broker_machine`` with every broker action and the
``variety`` rules (registration and heartbeat error paths), Kafka behind ``KafkaAdapter``, seeded (``--seed`` plus
the state's index; printed). It prints per state the steps Kafka took, the time and steps per second (JVM round
trip included), and the outcomes reached (responses' errors, records by type); on a disagreement, Hypothesis's
shrunk sequence and the trace ``kraftspec conform --kafka`` replays, then exits 1. Nothing is asserted on
timings; the figures depend on the machine and its load.

The reference's behaviour follows the Kafka version (``--kafka``): an explicit initial state gets the matching
``KafkaBehaviour`` (``kraftspec.harness.broker.behaviour_for``); the standard states are 4.1+ states and are run
on 4.1 and later only.
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis.stateful import get_state_machine_test

from kraftspec import oracle
from kraftspec.harness import broker as harness_broker
from kraftspec.harness.adapter import KafkaAdapter
from kraftspec.harness.jvm import DEFAULT_VERSION
from kraftspec.models.determinism import without_local_constants


class CountingAdapter(KafkaAdapter):
    """Kafka behind the Adapter protocol, counting the steps it took and the outcomes it reached."""

    steps = 0
    outcomes: collections.Counter = collections.Counter()

    def step(self, input: Any) -> Any:
        answer = super().step(input)
        CountingAdapter.steps += 1
        action = input["action"]
        response = answer.get("response")
        if isinstance(response, dict) and "error" in response:
            CountingAdapter.outcomes[f"{action} {response['error']}"] += 1
        if action == "heartbeat" and isinstance(response, dict) and response.get("error") == "NONE":
            state = ("shut down" if response["should_shut_down"] else "controlled shutdown"
                     if response["in_controlled_shutdown"] else "fenced" if response["is_fenced"] else "unfenced")
            CountingAdapter.outcomes[f"heartbeat -> {state}"] += 1
        for record in answer.get("records") or ():
            CountingAdapter.outcomes[f"{action} writes {record['type']}"] += 1
        if "order" in answer.get("input", {}):
            CountingAdapter.outcomes[f"{action} states Kafka's order"] += 1
        return answer


def run(name: str, initial: dict[str, Any], version: str, examples: int, steps: int, seed: int) -> bool:
    machine = oracle.broker_machine(lambda: CountingAdapter("broker", version), initial=initial,
                                    actions=oracle.ALL_BROKER_ACTIONS, variety=True)
    test = get_state_machine_test(machine, settings=settings(
        max_examples=examples, stateful_step_count=steps, deadline=None, derandomize=False, database=None,
        suppress_health_check=list(HealthCheck)))
    test._hypothesis_internal_use_seed = seed  # what hypothesis.seed(seed) sets
    CountingAdapter.steps = 0
    CountingAdapter.outcomes = collections.Counter()
    started = time.perf_counter()
    try:
        with without_local_constants():
            test()
    except Exception as exc:  # a disagreement (DivergenceError) or Kafka refusing an input the reference took
        print(f"{name}: DISAGREEMENT (seed {seed}):\n{exc}", flush=True)
        return False
    elapsed = time.perf_counter() - started
    print(f"{name}: {CountingAdapter.steps} steps on Kafka {version} in {elapsed:.1f} s "
          f"({CountingAdapter.steps / elapsed:.0f} steps/s), {examples} examples, seed {seed}, 0 disagreements",
          flush=True)
    print("  " + ", ".join(f"{k}: {v}" for k, v in sorted(CountingAdapter.outcomes.items())), flush=True)
    run.total += CountingAdapter.steps  # type: ignore[attr-defined]
    return True


run.total = 0  # type: ignore[attr-defined]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kafka", default=DEFAULT_VERSION)
    parser.add_argument("--examples", type=int, default=300)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--seed", type=int, default=20261126)
    parser.add_argument("--initial", action="append", help="only these initial states (repeatable)")
    args = parser.parse_args()
    initials = harness_broker.differential_initials(args.kafka)
    names = args.initial or list(initials)
    ok = True
    started = time.perf_counter()
    for index, name in enumerate(names):
        ok &= run(name, initials[name], args.kafka, args.examples, args.steps, args.seed + index)
    elapsed = time.perf_counter() - started
    print(f"total: {run.total} steps on Kafka {args.kafka} in {elapsed:.0f} s "  # type: ignore[attr-defined]
          f"({run.total / elapsed:.0f} steps/s), {'0 disagreements' if ok else 'DISAGREEMENTS'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
