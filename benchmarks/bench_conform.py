"""Throughput of Kafka-backed checking: steps per second with Kafka's own classes in the loop, JVM round trip included.

Run: ``python benchmarks/bench_conform.py [--component broker] [--kafka 4.3.1] [--traces 300]``. For each
component the harness covers, on the first ``--traces`` bundled TLA+ traces (``traces/tla/COMPONENT.jsonl.gz``),
it prints in steps per second (wall clock, best of ``--repeats``):

* ``kafka batched``: every trace's inputs sent to Kafka in one round trip per trace (what ``conform`` does),
  Kafka's answers turned into trace steps;
* ``judge``: the reference replaying Kafka's traces (what ``conform`` does next);
* ``conform``: both, the whole of ``kraftspec conform`` per step;
* ``kafka per step``: one round trip per input (what the differential state machines do), through
  :class:`kraftspec.harness.adapter.KafkaAdapter`.

The JVM is started once before timing (its start-up and the harness build are printed apart). The figures
depend on the machine and its load (printed first); nothing here is asserted.
"""

from __future__ import annotations

import argparse
import itertools
import os
import time
from pathlib import Path

from kraftspec import traces as traces_package
from kraftspec.harness.adapter import KafkaAdapter, hooks
from kraftspec.harness.conform import judge, kafka_trace
from kraftspec.harness.jvm import DEFAULT_VERSION, KafkaProcess, build
from kraftspec.traces.format.envelope import components, trace_to_json
from kraftspec.traces.format.jsonl import read_jsonl

COMPONENTS = ("broker", "partition", "controller", "raft")


def _best(repeats: int, run) -> float:
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - started)
    return best


def bench(component: str, process: KafkaProcess, count: int, repeats: int) -> None:
    path = Path(traces_package.__file__).parent / "tla" / f"{component}.jsonl.gz"
    loaded = [item for _, item in itertools.islice(read_jsonl(path), count) if not isinstance(item, Exception)]
    component_hooks = hooks(component)
    steps = sum(len(t.steps) for t in loaded)
    kafka_runs: list = []

    def run_kafka() -> None:
        kafka_runs[:] = [kafka_trace(t, process, component_hooks) for t in loaded]

    def run_judge() -> None:
        for kafka, refusal in kafka_runs:
            judge(kafka, refusal)

    def run_per_step() -> None:
        adapter = KafkaAdapter(component, process=process)
        for trace in loaded:
            obj = trace_to_json(trace)
            adapter.reset(obj["initial"])
            for step in obj["steps"]:
                try:
                    adapter.step(step["input"])
                except RuntimeError:
                    break

    kafka = _best(repeats, run_kafka)
    judged = _best(repeats, run_judge)
    per_step = _best(repeats, run_per_step)
    print(f"{component}: {len(loaded)} traces, {steps} steps")
    print(f"  kafka batched   {steps / kafka:>10,.0f} steps/s")
    print(f"  judge           {steps / judged:>10,.0f} steps/s")
    print(f"  conform         {steps / (kafka + judged):>10,.0f} steps/s")
    print(f"  kafka per step  {steps / per_step:>10,.0f} steps/s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--component", action="append", choices=COMPONENTS)
    parser.add_argument("--kafka", default=DEFAULT_VERSION)
    parser.add_argument("--traces", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} cores")
    started = time.perf_counter()
    build(args.kafka)
    built = time.perf_counter()
    with KafkaProcess(args.kafka) as process:
        print(f"harness build (cached or not) {built - started:.1f} s, JVM start {time.perf_counter() - built:.1f} s, "
              f"Kafka {process.kafka_version}")
        for component in args.component or COMPONENTS:
            if component not in components():
                continue
            try:
                hooks(component)
            except KeyError:
                print(f"{component}: not covered by the harness")
                continue
            bench(component, process, args.traces, args.repeats)


if __name__ == "__main__":
    main()
