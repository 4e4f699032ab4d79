"""Record batches in the Raft log: what the leader's accumulator writes together is read, fetched and snapshotted
together (``BatchAccumulator``, ``KafkaRaftLog.read``, ``createNewSnapshot``; ``raft_log``, ``LogEntry.starts_batch``).

Not Kafka's own tests: ``tests/test_kafka_raft_batches.py`` runs the same situations against Kafka's client.
"""

from __future__ import annotations

import pytest

from kraftspec.reference import raft, raft_log
from kraftspec.reference.frozen import evolve
from kraftspec.reference.raft_log import LogEntry, RaftLog
from kraftspec.reference.raft_messages import Append, FetchRequest, FetchResponse, Tick
from kraftspec.reference.raft_records import LeaderChangeMessage

from test_raft_scenarios import follower, leader, respond


def batches(*sizes: int, epoch: int = 1) -> RaftLog:
    """A log of batches of the given sizes, each record its offset."""
    log = RaftLog()
    for size in sizes:
        log = raft_log.append_as_leader(log, tuple(range(log.end_offset, log.end_offset + size)), epoch)
    return raft_log.flush(log)


def offsets(entries: tuple[LogEntry, ...]) -> list[int]:
    return [e.record for e in entries]


def test_one_append_is_one_batch() -> None:
    log = batches(3, 1)
    assert [e.starts_batch for e in log.entries] == [True, False, False, True]


@pytest.mark.parametrize("offset, count, expected", [
    (0, 1, [0, 1, 2]),        # the first batch whole, though it holds more than asked
    (0, 3, [0, 1, 2]),        # the next batch (2 records) would pass the count
    (0, 5, [0, 1, 2, 3, 4]),
    (0, 6, [0, 1, 2, 3, 4, 5]),
    (3, 1, [3, 4]),
    (5, 100, [5]),
    (6, 3, []),               # at the log end
])
def test_a_read_returns_whole_batches(offset: int, count: int, expected: list[int]) -> None:
    assert offsets(raft_log.entries_from(batches(3, 2, 1), offset, count)) == expected


@pytest.mark.parametrize("offset, base", [(0, 0), (1, 0), (2, 0), (3, 3), (4, 3), (5, 5), (6, 6)])
def test_batch_base_offset(offset: int, base: int) -> None:
    assert raft_log.batch_base_offset(batches(3, 2, 1), offset) == base


def test_a_leader_serves_its_start_of_epoch_batch_whole() -> None:
    """A fetch that may take one record gets the new leader's LeaderChange and the three data records appended by one
    append as two whole batches in two answers, and the follower keeps the leader's batches."""
    node = leader((0, 1), 1)
    node = evolve(node, config=evolve(node.config, fetch_max_records=1))
    node, _ = raft.step(node, Append(records=("a", "b", "c")), 0)
    assert offsets(node.log.entries[1:]) == ["a", "b", "c"]
    node, out = raft.step(node, FetchRequest(replica_id=1, current_leader_epoch=1, fetch_offset=0,
                                             last_fetched_epoch=0, correlation_id=1), 0)
    (first,) = [s.message for s in out if isinstance(s.message, FetchResponse)]
    assert [type(e.record) for e in first.records] == [LeaderChangeMessage]
    node, out = raft.step(node, FetchRequest(replica_id=1, current_leader_epoch=1, fetch_offset=1,
                                             last_fetched_epoch=1, correlation_id=2), 0)
    (second,) = [s.message for s in out if isinstance(s.message, FetchResponse)]
    assert second.records == node.log.entries[1:] and [e.starts_batch for e in second.records] == [True, False, False]

    other = follower((0, 1), 1, 0, local=1)
    other, _ = raft.step(other, Tick(), 0)
    other, _ = respond(other, 0, evolve(first, correlation_id=None), 0)
    other, _ = respond(other, 0, evolve(second, correlation_id=None), 0)
    assert other.log.entries == node.log.entries


def test_a_snapshot_inside_a_batch_is_refused_at_its_base_offset() -> None:
    log = evolve(batches(3, 2), high_watermark=5)
    with pytest.raises(ValueError, match=r"offset \(4\) because it is not batch aligned.* base offset of \(3\)$"):
        raft_log.can_create_snapshot(log, 4, 1, 5)
    assert raft_log.can_create_snapshot(log, 3, 1, 5) and raft_log.can_create_snapshot(log, 5, 1, 5)


@pytest.mark.parametrize("entries, refused", [
    ([{"epoch": 1, "record": "a", "starts_batch": False}], r"\[0\].starts_batch: false continues a batch"),
    ([{"epoch": 1, "record": "a"}, {"epoch": 2, "record": "b", "starts_batch": False}],
     r"\[1\].starts_batch: false continues a batch"),
    ([{"epoch": 1, "record": "a", "starts_batch": "no"}], r"\[0\].starts_batch: expected boolean"),
])
def test_the_format_refuses_a_batch_continued_from_nothing_or_across_epochs(entries: list, refused: str) -> None:
    from kraftspec.traces.format.raft import decode_entries
    from kraftspec.traces.format.values import TraceError

    with pytest.raises(TraceError, match=refused):
        decode_entries(entries, "log")
    kept = decode_entries([{"epoch": 1, "record": "a"}, {"epoch": 1, "record": "b", "starts_batch": False}], "log")
    assert [e.starts_batch for e in kept] == [True, False]
