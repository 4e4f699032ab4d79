"""AlterPartition processing throughput on the controller, in one process (no assertions).

A cluster of 5 brokers and N partitions of RF 3 (ELR on, min ISR 2); each request comes from a
partition's leader and alternately shrinks the ISR to two members and expands it back (each writes one
record), so every request passes all §2.10 checks, runs the change builder and merges the record.
The transition returns a new partitions map, so its cost grows with N (a copy of the map per request);
the figure for N = 10 is the request processing itself.
Run: ``python benchmarks/bench_alter_partition.py [requests]``.
"""

from __future__ import annotations

import sys
import time

from kraftspec.reference.alter_partition import AlterPartitionPartition, AlterPartitionRequest, AlterPartitionTopic, alter_partition
from kraftspec.reference.broker_registration import BrokerRegistration
from kraftspec.reference.frozen import FrozenMap
from kraftspec.reference.metadata_version import LATEST_PRODUCTION
from kraftspec.reference.partition import PartitionRegistration, TopicInfo

BROKERS = 5
TOPIC = "bench-topic-id"


def run(requests: int, partition_count: int) -> None:
    """Process ``requests`` AlterPartition requests against ``partition_count`` partitions and print the rate."""
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
    start = time.perf_counter()
    ok = 0
    for i in range(requests):
        pid = i % partition_count
        current = partitions[(TOPIC, pid)]
        isr = current.replicas[:2] if len(current.isr) == 3 else current.replicas
        request = AlterPartitionRequest(current.leader, 100 + current.leader, (AlterPartitionTopic(TOPIC, (
            AlterPartitionPartition(pid, current.leader_epoch, tuple((b, 100 + b) for b in isr), current.partition_epoch),)),))
        partitions, response, records = alter_partition(
            brokers, topics, partitions, request, metadata_version=LATEST_PRODUCTION, elr_enabled=True)
        ok += len(records)
    elapsed = time.perf_counter() - start
    print(f"{partition_count:>5} partitions: {requests} AlterPartition requests ({ok} records) in {elapsed:.2f} s: "
          f"{requests / elapsed:,.0f} requests/s")


if __name__ == "__main__":
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    for partitions in (10, 1000):
        run(count, partitions)
