"""Fetch-handling throughput on a KRaft leader in one process (target >= 200,000 fetches/s).

Run: ``python benchmarks/bench_fetch.py [--fetches N]``. A 3-voter leader with one observer answers
caught-up Fetch requests (maxWaitMs 0) from its two followers and the observer in turn, each at a
later time; every fetch goes through ``raft.step`` (validation, epoch cache check, replica state,
check quorum, HW) exactly as in the model.
"""

from __future__ import annotations

import argparse
import time

from kraftspec.reference import raft
from kraftspec.reference.frozen import FrozenMap
from kraftspec.reference.raft_messages import Append, FetchRequest, Tick, VoteResponse
from kraftspec.reference.raft_state import QuorumConfig


def leader_node() -> raft.RaftNode:
    """Node 1 elected leader of epoch 1 by voters {1, 2, 3}, with 100 data records appended."""
    voters = frozenset({1, 2, 3})
    endpoints = FrozenMap({v: (f"CONTROLLER://h{v}:9093",) for v in voters})
    node = raft.new_node(1, voters, endpoints, QuorumConfig(), now=0, jitter=0)
    node, _ = raft.step(node, Tick(), 2000)  # election timeout: Prospective
    node, sends = raft.step(node, Tick(), 2000)  # pre-votes sent
    while node.state.role != "Leader":
        send = sends[0]  # the first voter asked grants; that is a majority of three
        node, sends = raft.step(node, VoteResponse(send.destination, leader_epoch=node.state.epoch,
                                                   vote_granted=True, correlation_id=send.message.correlation_id),
                                2000)
    node, _ = raft.step(node, Append(tuple(range(100))), 2000)
    return node


def calibration_ns() -> float:
    """ns per iteration of a fixed pure-Python loop, to compare runs on a loaded machine."""
    start = time.perf_counter()
    total = 0
    for i in range(1_000_000):
        total += i & 7
    return (time.perf_counter() - start) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--fetches", type=int, default=300_000)
    args = parser.parse_args()
    node = leader_node()
    end, epoch = node.log.end_offset, node.state.epoch
    requests = [FetchRequest(r, epoch, end, epoch, 0, -1) for r in (2, 3, 4)]
    step = raft.step
    now = 3000
    start = time.perf_counter()
    for i in range(args.fetches):
        node, out = step(node, requests[i % 3], now + i)
    elapsed = time.perf_counter() - start
    assert out[0].message.high_watermark == end, out
    print(f"{args.fetches} fetches in {elapsed:.3f} s: {args.fetches / elapsed:,.0f} fetches/s "
          f"(leader epoch {epoch}, HW {node.state.high_watermark}; calibration loop {calibration_ns():.0f} ns/iter: "
          f"higher means a busier machine)")


if __name__ == "__main__":
    main()
