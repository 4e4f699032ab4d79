"""Fetch-handling throughput on a KRaft leader in one process (target >= 200,000 fetches/s; no assertions).

Run: ``python benchmarks/bench_fetch.py [--fetches N] [--runs R]``. Every fetch goes through ``raft.step``
(validation, epoch cache check, replica state, check quorum, HW, then the leader's timers) exactly as in
the model; a 3-voter leader (node 1) answers its two followers (2, 3) and one observer (4) in turn, each
fetch one ms later, with maxWaitMs 0. Two workloads:

* caught up: every replica fetches at the leader's end offset (a quorum without new records); the
  replica states and check quorum change, the HW does not.
* replicating: the leader's log holds N/3 * 5 + 101 records of its epoch and ``fetch.max.records`` is 5;
  every replica starts at offset 0 and each fetch returns 5 records, so every voter fetch moves that
  voter's end offset and recomputes the HW (half of them advance it), as when followers keep up with a
  leader appending 5 records per fetch round. The log is built before the timing.

Each pass starts from a fresh leader; the requests are built before the timing. The garbage collector
runs as usual (it scans the leader's log, so replicating passes cost more per fetch as N grows). For each
workload the best and median of ``--runs`` passes are printed in CPU time (``time.process_time``, the
figure to compare on a shared machine) and wall time, with the load average before and after.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import time

from kraftspec.reference import raft
from kraftspec.reference.frozen import FrozenMap
from kraftspec.reference.raft_messages import Append, FetchRequest, Tick, VoteResponse
from kraftspec.reference.raft_state import QuorumConfig

RECORDS_PER_FETCH = 5
EPOCH = 1  # the epoch ``leader_node`` is elected in (printed with the results)
REPLICAS = (2, 3, 4)  # two followers and an observer


def leader_node(records: int = 100, config: QuorumConfig = QuorumConfig()) -> raft.RaftNode:
    """Node 1 elected leader of epoch 1 by voters {1, 2, 3}, with ``records`` data records appended."""
    voters = frozenset({1, 2, 3})
    endpoints = FrozenMap({v: (f"CONTROLLER://h{v}:9093",) for v in voters})
    node = raft.new_node(1, voters, endpoints, config, now=0, jitter=0)
    node, _ = raft.step(node, Tick(), 2000)  # election timeout: Prospective
    node, sends = raft.step(node, Tick(), 2000)  # pre-votes sent
    while node.state.role != "Leader":
        send = sends[0]  # the first voter asked grants; that is a majority of three
        node, sends = raft.step(node, VoteResponse(source=send.destination, leader_epoch=node.state.epoch,
                                                   vote_granted=True, correlation_id=send.message.correlation_id),
                                2000)
    node, _ = raft.step(node, Append(records=tuple(range(records))), 2000)
    return node


def caught_up(fetches: int) -> tuple[raft.RaftNode, list[FetchRequest]]:
    """A leader with 100 records and ``fetches`` requests from 2, 3, 4 in turn at its end offset."""
    node = leader_node()
    end = node.log.end_offset
    requests = [FetchRequest(replica_id=r, current_leader_epoch=EPOCH, fetch_offset=end, last_fetched_epoch=EPOCH,
                             max_wait_ms=0, high_watermark=-1) for r in REPLICAS]
    return node, [requests[i % 3] for i in range(fetches)]


def replicating(fetches: int) -> tuple[raft.RaftNode, list[FetchRequest]]:
    """A leader far ahead, 5 records per fetch; 2, 3, 4 fetch in turn from offset 0 onwards.

    The requests are built first and frozen out of the garbage collector's sight (``gc.freeze``): they
    stand for messages arriving from outside; the leader's log is scanned by collections as in a node.
    """
    rounds = -(-fetches // len(REPLICAS))
    requests = [FetchRequest(replica_id=r, current_leader_epoch=EPOCH, fetch_offset=k * RECORDS_PER_FETCH,
                             last_fetched_epoch=EPOCH if k else 0, max_wait_ms=0, high_watermark=-1)
                for k in range(rounds) for r in REPLICAS][:fetches]
    gc.freeze()
    node = leader_node(rounds * RECORDS_PER_FETCH + 100, QuorumConfig(fetch_max_records=RECORDS_PER_FETCH))
    return node, requests


def one_pass(workload: str, fetches: int) -> tuple[float, float, raft.RaftNode]:
    """Run one pass of ``workload``: (CPU seconds, wall seconds, final node)."""
    node, requests = WORKLOADS[workload](fetches)
    step = raft.step
    now = 3000
    cpu, wall = time.process_time(), time.perf_counter()
    for request in requests:
        node, _ = step(node, request, now)
        now += 1
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    gc.unfreeze()
    return cpu, wall, node


WORKLOADS = {"caught up": caught_up, "replicating": replicating}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fetches", type=int, default=150_000, help="fetches per pass")
    parser.add_argument("--runs", type=int, default=5, help="passes per workload")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; target 200,000 fetches/s; "
          f"{args.fetches} fetches per pass, {args.runs} passes")
    for workload in WORKLOADS:
        passes = [one_pass(workload, args.fetches) for _ in range(args.runs)]
        cpu = [args.fetches / p[0] for p in passes]
        wall = [args.fetches / p[1] for p in passes]
        node = passes[-1][2]
        print(f"{workload:>12}: CPU best {max(cpu):,.0f} median {statistics.median(cpu):,.0f} fetches/s; "
              f"wall best {max(wall):,.0f} median {statistics.median(wall):,.0f} fetches/s "
              f"(epoch {node.state.epoch}, HW {node.state.high_watermark} of LEO {node.log.end_offset}; "
              f"load {os.getloadavg()[0]:.2f})")


if __name__ == "__main__":
    main()
