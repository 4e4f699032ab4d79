"""Replay throughput of the conformance oracle, in steps per second, per component and workload.

Run: ``python benchmarks/bench_replay.py [--component broker] [--seed N] [--scale F]``. For each
workload it prints, best of ``--repeats`` runs in this one process (CPU time of the process):

* ``reference``: the reference alone running every step's input (the floor: no comparison at all);
* ``replay``: :func:`kraftspec.traces.replay.verdict.replay` on decoded traces (decode excluded);
* ``jsonl`` / ``parquet``: decoding from JSON Lines bytes in memory / a Parquet file, then replaying
  (decode included; pyarrow may read with several threads, whose CPU time all counts);
* ``jsonl dec`` / ``parquet dec``: the decoding alone (each trace dropped once decoded, as ``check`` drops it);
* the replay layer's own cost per step (replay minus reference, in microseconds).

The six are measured in interleaved rounds, so a change in load affects them alike.

Target: at least 250,000 steps per second for replay (decode excluded). The figures depend on the
machine and its load (printed first); nothing here is asserted. Workloads are seeded and the seed is
printed. A component adds its workloads to ``WORKLOADS``.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

import bench_replay_controller  # this folder: the script's own directory is first on sys.path
import bench_replay_partition
import bench_replay_raft
from kraftspec import traces as traces_package
from kraftspec.models.broker_strategies import BROKER_IDS
from kraftspec.traces.replay import broker as broker_replay
from kraftspec.traces.format import jsonl
from kraftspec.traces.format import parquet
from kraftspec.traces.format.envelope import Step, Trace
from kraftspec.traces.replay.verdict import REPLAYERS, replay
from kraftspec.traces.recording.broker_simulate import generate_sim

TARGET = 250_000


@dataclass(frozen=True)
class Workload:
    """A named set of traces of one component, built from a seed and a scale factor."""

    name: str
    description: str
    build: Callable[[int, float], list[Trace]]


def bundled_tla(seed: int, scale: float) -> list[Trace]:
    """The bundled TLC-recorded traces (``traces/tla/broker.jsonl.gz``), all of them whatever the scale."""
    path = Path(traces_package.__file__).parent / "tla" / "broker.jsonl.gz"
    return [item for _, item in jsonl.read_jsonl(path) if isinstance(item, Trace)]


def simulated(seed: int, scale: float) -> list[Trace]:
    """``kraftspec generate sim``: faults of every kind; every step states outputs and four post-state fields."""
    return list(generate_sim(seed, max(1, int(200 * scale)), 200))


def steady(post: tuple[str, ...]) -> Callable[[int, float], list[Trace]]:
    """A running cluster's steady traffic: each broker heartbeats in turn with an advancing metadata offset."""
    def build(seed: int, scale: float) -> list[Trace]:
        out = []
        for index in range(max(1, int(40 * scale))):
            state, clock = broker_replay.initial(Trace("broker", (), standard="broker/running-cluster")), 0
            steps = []
            for i in range(1000):
                b = BROKER_IDS[(i + index) % len(BROKER_IDS)]
                request = broker_replay.broker.BrokerHeartbeatRequest(
                    broker_id=b, broker_epoch=state.brokers[b].epoch, current_metadata_offset=state.next_offset + i // 3, want_fence=False, want_shut_down=False)
                step = Step("heartbeat", {"request": request, "now": i // len(BROKER_IDS)})
                state, clock, response, written = broker_replay.apply(state, clock, step)
                steps.append(Step("heartbeat", step.input, response, written,
                                  broker_replay.observe(state, clock, post) if post else None))
            out.append(Trace("broker", tuple(steps), standard="broker/running-cluster", id=f"steady-{seed}-{index}"))
        return out
    return build


WORKLOADS: dict[str, list[Workload]] = {
    "broker": [
        Workload("steady", "heartbeats of a running cluster; response and records stated", steady(())),
        Workload("steady+post", "the same, also stating post-state sessions and heartbeats",
                 steady(("sessions", "heartbeats"))),
        Workload("tla", "bundled TLC-recorded traces (explicit initial states, mostly failover)", bundled_tla),
        Workload("sim", "seeded simulation with faults (mixed actions, four post-state fields)", simulated),
    ],
}
WORKLOADS["partition"] = [
    Workload("steady", "a leader's appends, follower fetches and ISR checks; responses stated", bench_replay_partition.steady(())),
    Workload("steady+post", "the same, also stating the post-state leader states", bench_replay_partition.steady(("leaders",))),
    Workload("tla", "bundled TLC-recorded partition traces (controller and leader steps, post-states)",
             bench_replay_partition.bundled_tla),
]
WORKLOADS["raft"] = [
    Workload("sim", "one node of a simulated quorum (elections, fetches, crashes, lost and reordered messages)",
             bench_replay_raft.simulated),
]
WORKLOADS["controller"] = [
    Workload("tla", "bundled TLC-recorded controller-registration traces (explicit initial states, post-states)",
             bench_replay_controller.bundled_tla),
]


def best_of(repeats: int, work: dict[str, Callable[[], object]]) -> dict[str, float]:
    """The smallest CPU time of this process for each of ``work`` over ``repeats`` rounds, run interleaved so
    that a change in the machine's load affects them alike (CPU time: other processes on a shared machine
    change it far less than wall-clock time; the work is single-threaded, so the two agree on an idle machine)."""
    times: dict[str, float] = {label: float("inf") for label in work}
    for _ in range(repeats):
        for label, run in work.items():
            began = time.process_time()
            run()
            times[label] = min(times[label], time.process_time() - began)
    return times


def reference_only(batch: Iterable[Trace]) -> None:
    """Every step's input run by the reference, nothing compared (the floor the replay layer adds to)."""
    for trace in batch:
        replayer = REPLAYERS[trace.component]
        state, clock, run = replayer.initial(trace), 0, replayer.run
        for step in trace.steps:
            state, clock, _, _ = run(state, clock, step)


def replay_all(batch: Iterable[Trace]) -> int:
    """Replay every trace; the number of divergent ones (0 for every workload here)."""
    return sum(not replay(trace).conformant for trace in batch)


def drain(items: Iterable[object]) -> None:
    """Consume ``items``, keeping none."""
    for _ in items:
        pass


def measure(workload: Workload, seed: int, scale: float, repeats: int) -> None:
    """Print one workload's figures."""
    batch = workload.build(seed, scale)
    steps = sum(len(t.steps) for t in batch)
    lines = [jsonl.dumps(t).encode() for t in batch]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "set.parquet")
        parquet.write_parquet(path, batch)
        divergent = replay_all(batch)
        times = best_of(repeats, {
            "reference": lambda: reference_only(batch),
            "replay": lambda: replay_all(batch),
            "jsonl": lambda: replay_all(jsonl.parse_line(line) for line in lines),
            "parquet": lambda: replay_all(item for _, _, item in parquet.read_parquet(path) if isinstance(item, Trace)),
            "jsonl dec": lambda: drain(jsonl.parse_line(line) for line in lines),
            "parquet dec": lambda: drain(item for _, _, item in parquet.read_parquet(path)),
        })
    print(f"  {workload.name}: {len(batch)} traces, {steps} steps ({workload.description}); {divergent} divergent")
    for label, seconds in times.items():
        print(f"    {label:<10} {steps / seconds:>11,.0f} steps/s")
    overhead = (times["replay"] - times["reference"]) / steps * 1e6
    print(f"    replay layer {overhead:.2f} us/step over the reference (replay at "
          f"{times['reference'] / times['replay']:.0%} of the reference's rate); replay / target "
          f"{steps / times['replay'] / TARGET:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--component", choices=sorted(WORKLOADS), action="append")
    parser.add_argument("--workload", action="append", help="only these workloads (by name)")
    parser.add_argument("--seed", type=int, default=20261122)
    parser.add_argument("--scale", type=float, default=1.0, help="multiplies the generated workloads' sizes")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores; "
          f"seed {args.seed}; scale {args.scale}; best of {args.repeats}; target {TARGET:,} steps/s (replay)")
    for component in args.component or sorted(WORKLOADS):
        print(f"component {component}:")
        for workload in WORKLOADS[component]:
            if not args.workload or workload.name in args.workload:
                measure(workload, args.seed, args.scale, args.repeats)


if __name__ == "__main__":
    main()
