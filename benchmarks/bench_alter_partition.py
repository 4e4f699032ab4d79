"""AlterPartition processing throughput on the controller, in one process (target 100,000 requests/s; no assertions).

A cluster of 5 brokers and N partitions of RF 3 (ELR on, min ISR 2) in the controller's persistent partitions map;
each request comes from a partition's leader and alternately shrinks the ISR to two members and expands it back
(each writes one record), so every request passes all §2.10 checks, runs the change builder and merges the record.
Two figures per N, each the best and the median of ``--runs`` passes, by the process's CPU time (which other
processes on the machine disturb less) and by wall-clock time, with the load average:

* processing (the target): the request stream is recorded once (each request built, as a leader would, from
  the state it is sent to), then replayed through ``alter_partition`` from the same initial state; only the
  replay is timed. The recorded stream is moved out of the collector's sight (``gc.freeze``), as a live
  controller never holds 100,000 requests at once.
* live: each request built from the current state and then processed, both timed (building costs about
  2 us of a request).

Run: ``python benchmarks/bench_alter_partition.py [--requests 100000] [--runs 5]``.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import time

from kraftspec.reference.alter_partition import AlterPartitionPartition, AlterPartitionRequest, AlterPartitionTopic, alter_partition
from kraftspec.reference.broker_registration import BrokerRegistration
from kraftspec.reference.frozen import FrozenMap, PersistentMap
from kraftspec.reference.metadata_version import LATEST_PRODUCTION
from kraftspec.reference.partition import PartitionRegistration, TopicInfo, TopicPartition

BROKERS = 5
TOPIC = "bench-topic-id"


def initial_state(partition_count: int) -> tuple[FrozenMap[int, BrokerRegistration], dict[str, TopicInfo],
                                                 PersistentMap[TopicPartition, PartitionRegistration]]:
    """Five unfenced brokers, one topic and ``partition_count`` partitions with their whole replica set in the ISR."""
    brokers = FrozenMap({
        b: BrokerRegistration(broker_id=b, epoch=100 + b, incarnation_id=f"i{b}", fenced=False, log_dirs=(f"dir{b}",))
        for b in range(BROKERS)
    })
    topics = {TOPIC: TopicInfo(name="bench", topic_id=TOPIC, min_insync_replicas=2)}
    partitions = PersistentMap({
        (TOPIC, p): PartitionRegistration(
            replicas=(r := tuple((p + k) % BROKERS for k in range(3))),
            directories=tuple(f"dir{b}" for b in r), isr=r, leader=r[0],
        )
        for p in range(partition_count)
    })
    return brokers, topics, partitions


def next_request(partitions: PersistentMap[TopicPartition, PartitionRegistration], i: int) -> AlterPartitionRequest:
    """Request ``i``: partition ``i mod N``'s leader shrinks its ISR to two members, or expands it back to three."""
    pid = i % len(partitions)
    current = partitions[(TOPIC, pid)]
    isr = current.replicas[:2] if len(current.isr) == 3 else current.replicas
    return AlterPartitionRequest(broker_id=current.leader, broker_epoch=100 + current.leader,
                                 topics=(AlterPartitionTopic(topic_id=TOPIC, partitions=(
        AlterPartitionPartition(partition_index=pid, leader_epoch=current.leader_epoch,
                                new_isr_with_epochs=tuple([(b, 100 + b) for b in isr]),
                                partition_epoch=current.partition_epoch),)),))


def live(requests: int, partition_count: int) -> tuple[float, float, int]:
    """Build each request from the current state and process it: (seconds, CPU seconds, records written)."""
    brokers, topics, partitions = initial_state(partition_count)
    start, cpu_start = time.perf_counter(), time.process_time()
    written = 0
    for i in range(requests):
        partitions, _, records = alter_partition(brokers, topics, partitions, next_request(partitions, i),
                                                 metadata_version=LATEST_PRODUCTION, elr_enabled=True)
        written += len(records)
    return time.perf_counter() - start, time.process_time() - cpu_start, written


def record_stream(requests: int, partition_count: int) -> list[AlterPartitionRequest]:
    """The requests of :func:`live`, recorded (built and processed, untimed)."""
    brokers, topics, partitions = initial_state(partition_count)
    stream = []
    for i in range(requests):
        request = next_request(partitions, i)
        partitions, _, _ = alter_partition(brokers, topics, partitions, request,
                                           metadata_version=LATEST_PRODUCTION, elr_enabled=True)
        stream.append(request)
    return stream


def processing(stream: list[AlterPartitionRequest], partition_count: int) -> tuple[float, float, int]:
    """Replay the recorded ``stream`` from the initial state: (seconds, CPU seconds, records written)."""
    brokers, topics, partitions = initial_state(partition_count)
    start, cpu_start = time.perf_counter(), time.process_time()
    written = 0
    for request in stream:
        partitions, _, records = alter_partition(brokers, topics, partitions, request,
                                                 metadata_version=LATEST_PRODUCTION, elr_enabled=True)
        written += len(records)
    return time.perf_counter() - start, time.process_time() - cpu_start, written


def report(label: str, requests: int, passes: list[tuple[float, float, int]]) -> None:
    """One line: best and median requests/s of ``passes`` by CPU and wall time, and the records each pass wrote."""
    cpu = [requests / cpu_seconds for _, cpu_seconds, _ in passes]
    wall = [requests / seconds for seconds, _, _ in passes]
    print(f"{'':>7}{label:<11}: CPU time best {max(cpu):,.0f}, median {statistics.median(cpu):,.0f} requests/s; "
          f"wall best {max(wall):,.0f}, median {statistics.median(wall):,.0f} "
          f"({len(passes)} passes of {requests} requests, {passes[0][2]} records each; load {os.getloadavg()[0]:.2f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; target 100,000 requests/s (processing)")
    for partition_count in (10, 1000):
        print(f"{partition_count:>5} partitions:")
        stream = record_stream(args.requests, partition_count)
        gc.freeze()
        report("processing", args.requests, [processing(stream, partition_count) for _ in range(args.runs)])
        del stream
        gc.unfreeze()
        report("live", args.requests, [live(args.requests, partition_count) for _ in range(args.runs)])


if __name__ == "__main__":
    main()
