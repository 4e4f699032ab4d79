"""Kafka's own snapshot tests (``KafkaRaftClientSnapshotTest``, Kafka 4.3) against the reference (KIP-630).

Each test is named after the Kafka test it transcribes (its ``withKip853Rpc`` variants are one: kraft.version 1 is
not modelled). Timeouts follow ``RaftClientTestContext`` as in ``tests/test_raft_scenarios.py``; jitter 0. Kafka's
tests append several records in one batch; here each entry is a batch (``raft_log``), which none of these relies on
but ``testCreateSnapshotAsLeaderWithInvalidSnapshotId``'s last case (batch alignment), left out.
"""

from __future__ import annotations

import pytest

from kraftspec.reference import raft
from kraftspec.reference.errors import Errors
from kraftspec.reference.frozen import evolve
from kraftspec.reference.raft_log import LogEntry, Snapshot, log_of_epochs
from kraftspec.reference.raft_messages import (
    NO_SNAPSHOT_ID,
    Append,
    CreateSnapshot,
    DeleteBeforeSnapshot,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    InvalidSnapshotError,
    RaftFatalError,
    Send,
    Tick,
)
from kraftspec.reference.raft_state import Follower, Leader

from test_raft_scenarios import CONFIG, follower, leader, respond

MAX_BYTES = 10


def fetch(replica: int, epoch: int, offset: int, last_epoch: int) -> FetchRequest:
    return FetchRequest(replica_id=replica, current_leader_epoch=epoch, fetch_offset=offset,
                        last_fetched_epoch=last_epoch, correlation_id=5)


def answer(outputs: tuple[Send, ...], kind: type) -> object:
    found = [s.message for s in outputs if isinstance(s.message, kind)]
    assert len(found) == 1, outputs
    return found[0]


def caught_up(node: raft.RaftNode, now: int = 0) -> raft.RaftNode:
    """``advanceLocalLeaderHighWatermarkToLogEndOffset``: every other voter fetches at the leader's log end."""
    for voter in sorted(node.voters - {node.local_id}):
        node, _ = raft.step(node, fetch(voter, node.state.epoch, node.log.end_offset, node.log.last_fetched_epoch),
                            now)
    assert node.state.high_watermark == node.log.end_offset
    return node


def appended(node: raft.RaftNode, *records: str) -> raft.RaftNode:
    for record in records:
        node, _ = raft.step(node, Append(records=(record,)), 0)
    return node


def snapshotted(node: raft.RaftNode, end_offset: int, epoch: int, size: int = 25, delete: bool = False) -> raft.RaftNode:
    """``createSnapshot(id).freeze()``, then (``delete``) ``log.deleteBeforeSnapshot(id)``."""
    node, _ = raft.step(node, CreateSnapshot(end_offset=end_offset, epoch=epoch, size=size), 0)
    assert node.log.latest_snapshot.id == (end_offset, epoch)
    if delete:
        node, _ = raft.step(node, DeleteBeforeSnapshot(end_offset=end_offset, epoch=epoch), 0)
        assert node.log.start_offset == end_offset
    return node


def log_leader() -> raft.RaftNode:
    """The leader of epoch 5 of voters 0-2 over a, b, c, d, e, f in epoch 2 and g, h, i in epoch 4, caught up."""
    node = leader((0, 1, 2), 5, log_of_epochs([2] * 6 + [4] * 3))
    return caught_up(node)


def test_fetch_request_offset_less_than_log_start() -> None:
    node = appended(leader((0, 1), 1), "a", "b", "c")
    node = caught_up(node)
    end = node.log.end_offset
    node = snapshotted(node, end, 1, delete=True)
    node, out = raft.step(node, fetch(1, 1, end - 2, 1), 0)
    response = answer(out, FetchResponse)
    assert (response.partition_error, response.leader_epoch, response.leader_id) == (Errors.NONE, 1, 0)
    assert response.snapshot_id == (end, 1) and response.records == () and response.log_start_offset == end


def test_fetch_request_offset_at_zero() -> None:
    """An empty fetcher is sent the latest snapshot even though the log still starts at 0."""
    node = caught_up(appended(leader((0, 1), 1), "a", "b", "c"))
    node = snapshotted(node, node.log.end_offset, 1)
    assert node.log.start_offset == 0
    node, out = raft.step(node, fetch(1, 1, 0, 0), 0)
    assert answer(out, FetchResponse).snapshot_id == (node.log.end_offset, 1)


def test_fetch_request_at_log_start_offset_with_valid_epoch() -> None:
    node = snapshotted(log_leader(), 3, 2)
    node, out = raft.step(node, fetch(1, 5, 3, 2), 0)
    response = answer(out, FetchResponse)
    assert (response.partition_error, response.snapshot_id, response.diverging_epoch) == (Errors.NONE, NO_SNAPSHOT_ID,
                                                                                         (-1, -1))


def test_fetch_request_at_log_start_offset_with_invalid_epoch() -> None:
    node = snapshotted(log_leader(), 3, 2, delete=True)
    node, out = raft.step(node, fetch(1, 5, 3, 3), 0)
    assert answer(out, FetchResponse).snapshot_id == (3, 2)


def test_fetch_request_with_last_fetched_epoch_less_than_oldest_snapshot() -> None:
    node = snapshotted(log_leader(), 3, 2)
    node, out = raft.step(node, fetch(1, 5, node.log.end_offset, 1), 0)
    assert answer(out, FetchResponse).snapshot_id == (3, 2)


def test_fetch_request_truncate_to_log_start() -> None:
    """A fetcher ahead of the log start in a diverging epoch is told to truncate (the snapshot does not cover it)."""
    node = snapshotted(log_leader(), 3, 2, delete=True)
    node, out = raft.step(node, fetch(1, 5, 8, 3), 0)
    response = answer(out, FetchResponse)
    assert response.snapshot_id == NO_SNAPSHOT_ID and response.diverging_epoch == (2, 6)


def test_fetch_snapshot_request_missing_snapshot() -> None:
    node = leader((0, 1), 1)
    request = FetchSnapshotRequest(replica_id=1, current_leader_epoch=1, snapshot_id=(0, 0), position=0,
                                   max_bytes=MAX_BYTES, correlation_id=3)
    node, out = raft.step(node, request, 0)
    assert answer(out, FetchSnapshotResponse).partition_error == Errors.SNAPSHOT_NOT_FOUND


def test_fetch_snapshot_request_as_leader() -> None:
    node = caught_up(appended(leader((0, 1), 1), "a", "b"))
    node = snapshotted(node, 3, 1, size=8)
    request = FetchSnapshotRequest(replica_id=1, current_leader_epoch=1, snapshot_id=(3, 1), position=0,
                                   max_bytes=MAX_BYTES, correlation_id=3)
    node, out = raft.step(node, request, 0)
    response = answer(out, FetchSnapshotResponse)
    assert (response.partition_error, response.snapshot_id, response.size, response.position, response.chunk) == (
        Errors.NONE, (3, 1), 8, 0, 8)
    assert (response.leader_id, response.leader_epoch) == (0, 1)


def test_partial_fetch_snapshot_request_as_leader() -> None:
    node = snapshotted(caught_up(appended(leader((0, 1), 1), "a", "b")), 3, 1, size=25)
    chunks = []
    for position in (0, 10, 20):
        request = FetchSnapshotRequest(replica_id=1, current_leader_epoch=1, snapshot_id=(3, 1), position=position,
                                       max_bytes=MAX_BYTES, correlation_id=3)
        node, out = raft.step(node, request, 0)
        chunks.append(answer(out, FetchSnapshotResponse).chunk)
    assert chunks == [10, 10, 5]


def test_fetch_snapshot_request_with_invalid_position() -> None:
    node = snapshotted(caught_up(appended(leader((0, 1), 1), "a", "b")), 3, 1, size=8)
    for position in (-1, 8):
        request = FetchSnapshotRequest(replica_id=1, current_leader_epoch=1, snapshot_id=(3, 1), position=position,
                                       max_bytes=MAX_BYTES, correlation_id=3)
        node, out = raft.step(node, request, 0)
        assert answer(out, FetchSnapshotResponse).partition_error == Errors.POSITION_OUT_OF_RANGE


@pytest.mark.parametrize(("epoch", "error"), [(0, Errors.FENCED_LEADER_EPOCH), (2, Errors.UNKNOWN_LEADER_EPOCH)])
def test_fetch_snapshot_request_with_older_and_newer_epoch(epoch: int, error: Errors) -> None:
    """``testFetchSnapshotRequestWithOlderEpoch`` and ``testFetchSnapshotRequestWithNewerEpoch``."""
    node = leader((0, 1), 1)
    request = FetchSnapshotRequest(replica_id=1, current_leader_epoch=epoch, snapshot_id=(0, 0), position=0,
                                   max_bytes=MAX_BYTES, correlation_id=3)
    node, out = raft.step(node, request, 0)
    assert answer(out, FetchSnapshotResponse).partition_error == error


def test_fetch_snapshot_request_as_follower() -> None:
    node = follower((0, 1), 1, 1)
    request = FetchSnapshotRequest(replica_id=1, current_leader_epoch=1, snapshot_id=(0, 0), position=0,
                                   max_bytes=MAX_BYTES, correlation_id=3)
    node, out = raft.step(node, request, 0)
    assert answer(out, FetchSnapshotResponse).partition_error == Errors.NOT_LEADER_OR_FOLLOWER


def _fetching_follower() -> tuple[raft.RaftNode, tuple[Send, ...]]:
    """A follower of leader 1 in epoch 1 with an empty log told to fetch snapshot (5, 1), and what it sent then (each
    answer is followed by a poll, which sends the next request at once)."""
    node = evolve(follower((0, 1), 1, 1), config=evolve(CONFIG, fetch_snapshot_max_bytes=MAX_BYTES))
    node, out = raft.step(node, Tick(), 0)
    assert answer(out, FetchRequest).fetch_offset == 0
    return respond(node, 1, FetchResponse(source=1, leader_epoch=1, leader_id=1, high_watermark=5, log_start_offset=5,
                                          snapshot_id=(5, 1)), 0)


def test_fetch_response_with_snapshot_id() -> None:
    """The follower fetches the snapshot in chunks, then loads it: its whole log replaced, starting (and ending) at
    the snapshot's end offset, the high watermark there; then it fetches from there."""
    node, out = _fetching_follower()
    request = answer(out, FetchSnapshotRequest)
    assert (request.snapshot_id, request.position, request.max_bytes) == ((5, 1), 0, MAX_BYTES)
    node, out = respond(node, 1, FetchSnapshotResponse(source=1, leader_epoch=1, leader_id=1, snapshot_id=(5, 1),
                                                       size=15, position=0, chunk=10), 0)
    assert node.state.fetching_snapshot.received == 10 and answer(out, FetchSnapshotRequest).position == 10
    node, out = respond(node, 1, FetchSnapshotResponse(source=1, leader_epoch=1, leader_id=1, snapshot_id=(5, 1),
                                                       size=15, position=10, chunk=5), 0)
    assert node.state.fetching_snapshot is None
    assert (node.log.start_offset, node.log.end_offset, node.log.latest_snapshot) == (5, 5, Snapshot(end_offset=5,
                                                                                                     epoch=1, size=15))
    assert node.state.high_watermark == 5 and node.log.last_fetched_epoch == 1 and node.listener.committed_end == 5
    assert (answer(out, FetchRequest).fetch_offset, answer(out, FetchRequest).last_fetched_epoch) == (5, 1)


def test_fetch_snapshot_response_missing_snapshot() -> None:
    node, _ = _fetching_follower()
    node, out = respond(node, 1, FetchSnapshotResponse(source=1, partition_error=Errors.SNAPSHOT_NOT_FOUND,
                                                       leader_epoch=1, leader_id=1), 0)
    assert node.state.fetching_snapshot is None and answer(out, FetchRequest).fetch_offset == 0


def test_fetch_snapshot_response_with_invalid_id() -> None:
    """A chunk of another snapshot, or at another position, is fatal."""
    node, _ = _fetching_follower()
    for wrong in ({"snapshot_id": (6, 1), "position": 0}, {"snapshot_id": (5, 1), "position": 3}):
        with pytest.raises(RaftFatalError):
            respond(node, 1, FetchSnapshotResponse(source=1, leader_epoch=1, leader_id=1, size=15, chunk=5, **wrong),
                    0)


def test_fetch_snapshot_response_from_newer_epoch_leader() -> None:
    """A newer leader's answer moves the follower to it: the download is dropped with the old state."""
    node, _ = _fetching_follower()
    node, _ = respond(node, 1, FetchSnapshotResponse(source=1, partition_error=Errors.FENCED_LEADER_EPOCH,
                                                     leader_epoch=2, leader_id=1), 0)
    assert isinstance(node.state, Follower) and node.state.epoch == 2 and node.state.fetching_snapshot is None


def test_create_snapshot_as_leader_with_invalid_snapshot_id() -> None:
    node = leader((0, 1), 3, log_of_epochs([2, 2, 2]))
    with pytest.raises(InvalidSnapshotError, match="greater than the high-watermark"):
        raft.step(node, CreateSnapshot(end_offset=4, epoch=2, size=1), 0)
    node = appended(caught_up(node), "d", "e", "f")
    assert node.log.end_offset == node.state.high_watermark + 3 == 7
    with pytest.raises(InvalidSnapshotError, match="greater than the high-watermark"):
        raft.step(node, CreateSnapshot(end_offset=7, epoch=3, size=1), 0)
    with pytest.raises(InvalidSnapshotError, match="not valid according to the log"):
        raft.step(node, CreateSnapshot(end_offset=4, epoch=4, size=1), 0)
    with pytest.raises(InvalidSnapshotError, match="not valid according to the log"):
        raft.step(node, CreateSnapshot(end_offset=4, epoch=2, size=1), 0)


def test_create_snapshot_below_log_start_or_twice_gives_no_writer() -> None:
    node = snapshotted(log_leader(), 6, 2, delete=True)
    for end_offset, epoch in ((3, 2), (6, 2)):
        after, _ = raft.step(node, CreateSnapshot(end_offset=end_offset, epoch=epoch, size=1), 0)
        assert after.log == node.log
        assert not raft.snapshot_created(node, CreateSnapshot(end_offset=end_offset, epoch=epoch, size=1))


def test_restart_recovers_from_the_snapshot_and_the_log() -> None:
    """A restarted node starts from its snapshot and its flushed log: log start, last fetched epoch, epoch."""
    node = appended(snapshotted(log_leader(), 6, 2, delete=True), "j")
    restarted = raft.restart(node, 100)
    assert restarted.log.start_offset == 6 and restarted.log.entries == node.log.entries
    assert restarted.log.latest_snapshot.id == (6, 2) and restarted.state.epoch == 5


def test_follower_refuses_fetched_batches_of_a_later_epoch() -> None:
    """KAFKA-18723: records of an epoch past the follower's are not appended (the rest of the answer is handled)."""
    node = follower((0, 1), 1, 1)
    node, _ = raft.step(node, Tick(), 0)
    node, _ = respond(node, 1, FetchResponse(source=1, leader_epoch=1, leader_id=1, high_watermark=1,
                                             records=(LogEntry(epoch=1, record="a"), LogEntry(epoch=2, record="b"))),
                      0)
    assert node.log.end_offset == 1 and node.state.high_watermark == 1


def test_follower_refuses_fetched_batches_that_do_not_continue_its_log() -> None:
    node = follower((0, 1), 1, 1)
    node, _ = raft.step(node, Tick(), 0)
    with pytest.raises(RaftFatalError, match="Illegal append"):
        respond(node, 1, FetchResponse(source=1, leader_epoch=1, leader_id=1, high_watermark=1, records_offset=2,
                                       records=(LogEntry(epoch=1, record="a"),)), 0)


def test_leader_counts_fetch_snapshot_for_check_quorum() -> None:
    """``testLeaderShouldResignLeadershipIfNotGetFetchSnapshotRequestFromMajorityVoters``: a FetchSnapshot from a voter
    keeps the leader's check-quorum timer going."""
    node = snapshotted(caught_up(appended(leader((0, 1, 2), 1), "a")), 2, 1, size=5)
    deadline = node.state.check_quorum_deadline
    request = FetchSnapshotRequest(replica_id=1, current_leader_epoch=1, snapshot_id=(2, 1), position=0,
                                   max_bytes=MAX_BYTES, correlation_id=3)
    node, _ = raft.step(node, request, deadline - 1)
    assert isinstance(node.state, Leader) and node.state.check_quorum_deadline > deadline
