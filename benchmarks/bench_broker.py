"""Broker-lifecycle benchmarks: heartbeat throughput of the reference in one process, and `kraftspec agree broker`.

Run: ``python benchmarks/bench_broker.py [--heartbeats N] [--skip-agree]``. Target: at least
250,000 heartbeats per second in one process. Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

from kraftspec.models.broker_strategies import BROKER_IDS, running_cluster
from kraftspec.reference import broker


def heartbeat_stream(count: int) -> list[broker.BrokerHeartbeatRequest]:
    """A steady cluster's traffic: every broker heartbeats in turn, reporting an advancing metadata offset."""
    state, _ = running_cluster()
    epochs = {b: state.brokers[b].epoch for b in BROKER_IDS}
    brokers = len(BROKER_IDS)
    return [broker.BrokerHeartbeatRequest(broker_id=BROKER_IDS[i % brokers],
                                          broker_epoch=epochs[BROKER_IDS[i % brokers]],
                                          current_metadata_offset=state.next_offset + i // brokers, want_fence=False,
                                          want_shut_down=False) for i in range(count)]


def bench_heartbeats(count: int, repeats: int = 5) -> list[tuple[str, float, float]]:
    """(label, heartbeats per wall second, per CPU second), best of ``repeats``, for two streams.

    The CPU-time figure (``time.process_time``) is what this process itself spent, so other work
    on a shared machine disturbs it less than the wall-clock figure.
    """
    stream = heartbeat_stream(count)
    start, _ = running_cluster()
    results = []
    for label, requests in (("steady stream (offsets advancing)", stream),
                            ("identical heartbeats", [stream[0]] * count)):
        best_wall = best_cpu = float("inf")
        for _ in range(repeats):
            state = start
            wall, cpu = time.perf_counter(), time.process_time()
            for now, request in enumerate(requests):
                state, _ = broker.heartbeat(state, request, now)
            best_cpu = min(best_cpu, time.process_time() - cpu)
            best_wall = min(best_wall, time.perf_counter() - wall)
        results.append((label, count / best_wall, count / best_cpu))
    return results


def bench_agree() -> float:
    """Wall-clock seconds of ``kraftspec agree broker`` as a whole process (TLC, graph load, exploration, comparison)."""
    began = time.perf_counter()
    completed = subprocess.run([sys.executable, "-m", "kraftspec.cli", "agree", "broker"], capture_output=True,
                               text=True)
    elapsed = time.perf_counter() - began
    print(completed.stdout.strip())
    if completed.returncode != 0:
        print(completed.stderr.strip())
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--heartbeats", type=int, default=300_000)
    parser.add_argument("--skip-agree", action="store_true")
    args = parser.parse_args()
    for label, wall_rate, cpu_rate in bench_heartbeats(args.heartbeats):
        print(f"heartbeat processing, {label}: {wall_rate:,.0f}/s wall, {cpu_rate:,.0f}/s CPU "
              f"(target 250,000; ratio {wall_rate / 250_000:.2f} wall, {cpu_rate / 250_000:.2f} CPU)")
    if not args.skip_agree:
        print(f"kraftspec agree broker: {bench_agree():.1f} s wall clock")


if __name__ == "__main__":
    main()
