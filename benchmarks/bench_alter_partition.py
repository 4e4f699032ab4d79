"""AlterPartition processing throughput on the controller, in one process (no assertions).

A cluster of 5 brokers and N partitions of RF 3 (ELR on, min ISR 2); each request comes from a
partition's leader and alternately shrinks the ISR to two members and expands it back (each writes one
record), so every request passes all §2.10 checks, runs the change builder and merges the record.
The transition returns a new partitions map, so its cost grows with N (a copy of the map per request);
the figure for N = 10 is the request processing itself. Each request is built, as a leader would, from
the state it is sent to; that costs about a sixth of the whole at N = 10 and is included (building the
stream beforehand and replaying it was measured slower: 100,000 live requests make every garbage
collection scan them). The best and the median of ``--runs`` passes are printed, with the load average first,
by wall-clock time and by the process's CPU time (which other processes on the machine disturb less); then the
CPU time of building the requests alone (the same loop without ``alter_partition``, so against the initial
state: every request shrinks the ISR) and the processing rate that leaves, best CPU time minus that.
Run: ``python benchmarks/bench_alter_partition.py [--requests 100000] [--runs 5]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from kraftspec.reference.alter_partition import AlterPartitionPartition, AlterPartitionRequest, AlterPartitionTopic, alter_partition
from kraftspec.reference.broker_registration import BrokerRegistration
from kraftspec.reference.frozen import FrozenMap
from kraftspec.reference.metadata_version import LATEST_PRODUCTION
from kraftspec.reference.partition import PartitionRegistration, TopicInfo

BROKERS = 5
TOPIC = "bench-topic-id"


def run(requests: int, partition_count: int, process: bool = True) -> tuple[float, float, int]:
    """Process ``requests`` AlterPartition requests against ``partition_count`` partitions: (seconds, CPU seconds, records).

    With ``process`` false the requests are only built (the state stays the initial one)."""
    brokers = FrozenMap({
        b: BrokerRegistration(broker_id=b, epoch=100 + b, incarnation_id=f"i{b}", fenced=False, log_dirs=(f"dir{b}",))
        for b in range(BROKERS)
    })
    topics = {TOPIC: TopicInfo("bench", TOPIC, min_insync_replicas=2)}
    partitions = FrozenMap({
        (TOPIC, p): PartitionRegistration(
            replicas=(r := tuple((p + k) % BROKERS for k in range(3))),
            directories=tuple(f"dir{b}" for b in r), isr=r, leader=r[0],
        )
        for p in range(partition_count)
    })
    start, cpu_start = time.perf_counter(), time.process_time()
    ok = 0
    for i in range(requests):
        pid = i % partition_count
        current = partitions[(TOPIC, pid)]
        isr = current.replicas[:2] if len(current.isr) == 3 else current.replicas
        request = AlterPartitionRequest(current.leader, 100 + current.leader, (AlterPartitionTopic(TOPIC, (
            AlterPartitionPartition(pid, current.leader_epoch, tuple([(b, 100 + b) for b in isr]), current.partition_epoch),)),))
        if process:
            partitions, response, records = alter_partition(
                brokers, topics, partitions, request, metadata_version=LATEST_PRODUCTION, elr_enabled=True)
            ok += len(records)
    return time.perf_counter() - start, time.process_time() - cpu_start, ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; target 100,000 requests/s")
    for partition_count in (10, 1000):
        passes = [run(args.requests, partition_count) for _ in range(args.runs)]
        rates = [args.requests / seconds for seconds, _, _ in passes]
        cpu_rates = [args.requests / cpu_seconds for _, cpu_seconds, _ in passes]
        print(f"{partition_count:>5} partitions: {args.requests} AlterPartition requests ({passes[0][2]} records) per pass: "
              f"best {max(rates):,.0f} requests/s, median {statistics.median(rates):,.0f} requests/s; "
              f"CPU time best {max(cpu_rates):,.0f}, median {statistics.median(cpu_rates):,.0f} requests/s "
              f"({args.runs} passes, load average {os.getloadavg()[0]:.2f})")
        building = min(run(args.requests, partition_count, process=False)[1] for _ in range(args.runs))
        processing = min(cpu_seconds for _, cpu_seconds, _ in passes) - building
        print(f"{'':>18}building the requests alone: CPU time best {building / args.requests * 1e6:.2f} us/request; "
              f"processing alone (best CPU time minus that) {args.requests / processing:,.0f} requests/s")


if __name__ == "__main__":
    main()
