"""Kafka's own snapshot tests (``KafkaRaftClientSnapshotTest``, Kafka 4.3) against the reference (KIP-630).

Each test is named after the Kafka test it transcribes (its ``withKip853Rpc`` variants are one: kraft.version 1 is
not modelled; where one test stands for two, its docstring names both); all 41 are here. Timeouts follow
``RaftClientTestContext`` as in ``tests/test_raft_scenarios.py``; jitter 0. Kafka's tests append several records in
one batch; so does the reference (``LogEntry.starts_batch``), which the last case (batch alignment) of
``testCreateSnapshotAsLeaderWithInvalidSnapshotId`` and of ``testCreateSnapshotAsFollowerWithInvalidSnapshotId``
relies on; elsewhere ``appended`` writes one record per batch, which none of them tells apart. Snapshots hold no bytes here, only a size: Kafka's checks of a snapshot's records are left out, the listener's
view (``ListenerView.loaded_snapshot``) tells which snapshot it was handed.
"""

from __future__ import annotations

import pytest

from kraftspec.reference import raft, raft_log
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
    VoteRequest,
    VoteResponse,
)
from kraftspec.reference.raft_state import Follower, Leader, Prospective, Resigned, Unattached

from test_raft_scenarios import CONFIG, follower, leader, make_node, respond

MAX_BYTES = 10
CLUSTER_ID = "I4ZmrWqfT2e-upky_4fdPA"


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


def batch(epoch: int, *records: str) -> tuple[LogEntry, ...]:
    """``RaftClientTestContext.buildBatch``: the records as one batch of ``epoch``."""
    return tuple(LogEntry(epoch=epoch, record=r, starts_batch=i == 0) for i, r in enumerate(records))


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


def _fetching_follower(voters: tuple[int, ...] = (0, 1), epoch: int = 1,
                       snapshot_id: tuple[int, int] = (5, 1)) -> tuple[raft.RaftNode, tuple[Send, ...]]:
    """A follower of leader 1 in ``epoch`` with an empty log told to fetch ``snapshot_id``, and what it sent then (each
    answer is followed by a poll, which sends the next request at once)."""
    node = evolve(follower(voters, epoch, 1), config=evolve(CONFIG, fetch_snapshot_max_bytes=MAX_BYTES))
    node, out = raft.step(node, Tick(), 0)
    assert answer(out, FetchRequest).fetch_offset == 0
    return respond(node, 1, FetchResponse(source=1, leader_epoch=epoch, leader_id=1, high_watermark=snapshot_id[0],
                                          log_start_offset=snapshot_id[0], snapshot_id=snapshot_id), 0)


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
    assert node.state.high_watermark == 5 and node.log.last_fetched_epoch == 1
    assert (node.listener.loaded_snapshot, node.listener.committed_end) == ((5, 1), 5)
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
    node, _ = raft.step(caught_up(node), Append(records=("d", "e", "f")), 0)
    assert node.log.end_offset == node.state.high_watermark + 3 == 7
    with pytest.raises(InvalidSnapshotError, match="greater than the high-watermark"):
        raft.step(node, CreateSnapshot(end_offset=7, epoch=3, size=1), 0)
    with pytest.raises(InvalidSnapshotError, match="not valid according to the log"):
        raft.step(node, CreateSnapshot(end_offset=4, epoch=4, size=1), 0)
    with pytest.raises(InvalidSnapshotError, match="not valid according to the log"):
        raft.step(node, CreateSnapshot(end_offset=4, epoch=2, size=1), 0)
    node = caught_up(node)
    with pytest.raises(InvalidSnapshotError, match=r"^Cannot create snapshot at offset \(6\) because it is not batch "
                                                   r"aligned. The batch containing the requested offset has a base "
                                                   r"offset of \(4\)$"):
        raft.step(node, CreateSnapshot(end_offset=6, epoch=3, size=1), 0)


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


def test_restart_replaces_the_log_with_a_latest_snapshot_past_what_survived() -> None:
    """Not one of Kafka's tests (tests/test_kafka_raft_restart_snapshot.py runs it against Kafka): the production log
    runs ``truncateToLatestSnapshot`` when opened (``KafkaRaftLog.createLog``). Records 0-7 of epoch 1, flushed to 4,
    snapshots (3, 1) and (6, 1): the log starts and ends at 6, holds (6, 1) only and its high watermark is 6; with
    7 flushed the log stays as it survived."""
    log = evolve(raft_log.log_of_epochs([1] * 8, flushed=False), flushed_end_offset=4, high_watermark=8)
    for end in (3, 6):
        log = raft_log.freeze_snapshot(log, Snapshot(end_offset=end, epoch=1, size=1))
    recovered = raft_log.recover(log)
    assert (recovered.start_offset, recovered.end_offset, recovered.high_watermark) == (6, 6, 6)
    assert [s.id for s in recovered.snapshots] == [(6, 1)] and recovered.flushed_end_offset == 6
    kept = raft_log.recover(evolve(log, flushed_end_offset=7))
    assert (kept.start_offset, kept.end_offset, kept.high_watermark, len(kept.snapshots)) == (0, 7, 0, 2)


def test_restart_keeps_the_records_of_the_snapshots_epoch_after_it() -> None:
    """The production log judges by its last record's epoch (``UnifiedLog.latestEpoch``): a log loaded from snapshot
    (2, 1) that then appended record 2 of epoch 1 keeps it, though the epoch cache (as ``MockLog``'s) has no entry for
    an epoch equal to the snapshot's (found by ``kraftspec agree raft`` under logs of two records)."""
    loaded = raft_log.RaftLog(start_offset=2, flushed_end_offset=2, last_fetched_epoch=1,
                              snapshots=(Snapshot(end_offset=2, epoch=1, size=1),), high_watermark=2)
    log = raft_log.flush(raft_log.append_as_follower(loaded, (LogEntry(epoch=1, record="a"),)))
    assert log.epoch_cache == ()
    recovered = raft_log.recover(log)
    assert (recovered.start_offset, recovered.end_offset, recovered.entries) == (2, 3, log.entries)


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


def _log_with_snapshot(delete: bool) -> raft_log.RaftLog:
    """``appendToLog(1, [a, b, c])``, ``appendToLog(1, [d, e, f])``, ``withEmptySnapshot((3, 1))`` and, with ``delete``,
    ``deleteBeforeSnapshot((3, 1))`` (an empty snapshot's bytes are not modelled: its size is arbitrary)."""
    log = raft_log.freeze_snapshot(log_of_epochs([1] * 6), Snapshot(end_offset=3, epoch=1, size=25))
    return raft_log.delete_before_snapshot(log, 3, 1, high_watermark=6) if delete else log


def test_latest_snapshot_id() -> None:
    node = follower((0, 1), 2, 1, _log_with_snapshot(delete=False))
    assert node.log.latest_snapshot.id == (3, 1)


def test_latest_snapshot_id_missing() -> None:
    node = follower((0, 1), 2, 1, log_of_epochs([1] * 6))
    assert node.log.latest_snapshot is None


def test_leader_immediately_sends_snapshot_id() -> None:
    """A fetch at a position the snapshot covers is answered at once with the snapshot id, not parked for its wait."""
    log = raft_log.freeze_snapshot(log_of_epochs([4] * 9), Snapshot(end_offset=3, epoch=4, size=25))
    node = leader((0, 1), 5, raft_log.delete_before_snapshot(log, 3, 4, high_watermark=9))
    request = FetchRequest(replica_id=1, current_leader_epoch=5, fetch_offset=6, last_fetched_epoch=2, max_wait_ms=500,
                           correlation_id=5)
    node, out = raft.step(node, request, 0)
    response = answer(out, FetchResponse)
    assert (response.partition_error, response.leader_epoch, response.leader_id, response.snapshot_id) == (
        Errors.NONE, 5, 0, (3, 4))
    assert node.parked == ()


def test_fetch_request_with_larger_last_fetched_epoch() -> None:
    """A last fetched epoch past the fetcher's current epoch is an invalid request (answered with the leader)."""
    node = caught_up(leader((0, 1), 3, log_of_epochs([2] * 6)))
    node = appended(snapshotted(node, 3, 2), "g", "h", "i")
    node, out = raft.step(node, fetch(1, 3, 4, 4), 0)
    response = answer(out, FetchResponse)
    assert (response.partition_error, response.leader_epoch, response.leader_id) == (Errors.INVALID_REQUEST, 3, 0)


def test_fetch_snapshot_request_bootstrap_snapshot() -> None:
    """The bootstrap checkpoint (0, 0) is never served, though the leader holds it (kraft.version 1's voters in it are
    not modelled: the voters are static)."""
    bootstrap = Snapshot(end_offset=0, epoch=0, size=25)
    node = leader((0, 1), 4, raft_log.RaftLog(snapshots=(bootstrap,)))
    assert node.log.latest_snapshot == bootstrap
    request = FetchSnapshotRequest(replica_id=1, current_leader_epoch=4, snapshot_id=(0, 0), position=0,
                                   max_bytes=2 ** 31 - 1, correlation_id=3)
    node, out = raft.step(node, request, 0)
    assert answer(out, FetchSnapshotResponse).partition_error == Errors.SNAPSHOT_NOT_FOUND


def test_fetch_snapshot_request_with_partial_data() -> None:
    """Reads of ``max_bytes`` each, then the remainder (the snapshot's bytes are its size only)."""
    node = snapshotted(caught_up(leader((0, 1), 2, log_of_epochs([1]))), 1, 1, size=25)
    size = node.log.latest_snapshot.size
    reads = next(n for n in range(2, size) if size % n)
    max_bytes = size // reads
    position = 0
    for _ in range(reads + 1):
        request = FetchSnapshotRequest(replica_id=1, current_leader_epoch=2, snapshot_id=(1, 1), position=position,
                                       max_bytes=max_bytes, correlation_id=3)
        node, out = raft.step(node, request, 0)
        response = answer(out, FetchSnapshotResponse)
        assert (response.leader_epoch, response.leader_id, response.position) == (2, 0, position)
        assert response.chunk == (max_bytes if position < max_bytes * reads else size % reads)
        position += response.chunk
    assert position == size


def test_fetch_response_with_invalid_snapshot_id() -> None:
    """A snapshot id with a negative epoch or end offset fails the answer: its connection backs off (the next Fetch
    goes to a bootstrap server, ``maybeSendFetchToAnyBootstrap``) and the fetch timer is not restarted: the follower
    becomes Prospective at its expiry."""
    node = follower((0, 1), 2, 1)
    node, out = raft.step(node, Tick(), 0)
    now = 0
    for invalid in ((100, -1), (-1, 1)):
        request = [s for s in out if isinstance(s.message, FetchRequest)]
        assert len(request) == 1 and (request[0].message.fetch_offset, request[0].message.last_fetched_epoch) == (0, 0)
        node, out = respond(node, request[0].destination,
                            FetchResponse(source=request[0].destination, leader_epoch=2, leader_id=1,
                                          high_watermark=200, snapshot_id=invalid), now)
        assert node.state.fetching_snapshot is None and request[0].destination in node.backoff
        now += CONFIG.retry_backoff_ms
    node, _ = raft.step(node, Tick(), CONFIG.fetch_timeout_ms)
    node, out = raft.step(node, Tick(), CONFIG.fetch_timeout_ms)
    assert isinstance(node.state, Prospective)
    vote = answer(out, VoteRequest)
    assert (vote.pre_vote, vote.replica_epoch, vote.last_offset_epoch, vote.last_offset) == (True, 2, 0, 0)


def test_fetch_snapshot_response_partial_data() -> None:
    """Half the snapshot, then the rest from where the first half ended; then the follower fetches from the snapshot's
    end, holding the snapshot (its size; its records are not modelled), its listener handed everything up to it."""
    node, out = _fetching_follower(epoch=2, snapshot_id=(100, 1))
    request = answer(out, FetchSnapshotRequest)
    assert (request.snapshot_id, request.position, request.max_bytes) == ((100, 1), 0, MAX_BYTES)
    size = 15
    node, out = respond(node, 1, FetchSnapshotResponse(source=1, leader_epoch=2, leader_id=1, snapshot_id=(100, 1),
                                                       size=size, position=0, chunk=size // 2), 0)
    request = answer(out, FetchSnapshotRequest)
    assert (request.snapshot_id, request.position, request.max_bytes) == ((100, 1), size // 2, MAX_BYTES)
    node, out = respond(node, 1, FetchSnapshotResponse(source=1, leader_epoch=2, leader_id=1, snapshot_id=(100, 1),
                                                       size=size, position=size // 2, chunk=size - size // 2), 0)
    fetched = answer(out, FetchRequest)
    assert (fetched.current_leader_epoch, fetched.fetch_offset, fetched.last_fetched_epoch) == (2, 100, 1)
    assert node.log.latest_snapshot == Snapshot(end_offset=100, epoch=1, size=size)
    assert (node.listener.loaded_snapshot, node.listener.committed_end) == ((100, 1), 100)


def test_fetch_snapshot_response_from_newer_epoch_not_leader() -> None:
    """A FENCED_LEADER_EPOCH answer naming another leader of a newer epoch: the follower follows it and fetches from it
    from the start of its (empty) log."""
    node, _ = _fetching_follower(voters=(0, 1, 2), epoch=2, snapshot_id=(100, 1))
    node, out = respond(node, 1, FetchSnapshotResponse(source=1, partition_error=Errors.FENCED_LEADER_EPOCH,
                                                       leader_epoch=3, leader_id=2), 0)
    assert isinstance(node.state, Follower) and (node.state.epoch, node.state.leader_id) == (3, 2)
    assert len(out) == 1 and out[0].destination == 2 and isinstance(out[0].message, FetchRequest)
    assert (out[0].message.current_leader_epoch, out[0].message.fetch_offset, out[0].message.last_fetched_epoch) == (
        3, 0, 0)


def test_fetch_snapshot_response_from_older_epoch() -> None:
    """An UNKNOWN_LEADER_EPOCH answer from an older epoch is handled and ignored: the follower asks for the same bytes
    again."""
    node, _ = _fetching_follower(epoch=2, snapshot_id=(100, 1))
    node, out = respond(node, 1, FetchSnapshotResponse(source=1, partition_error=Errors.UNKNOWN_LEADER_EPOCH,
                                                       leader_epoch=1, leader_id=2), 0)
    assert isinstance(node.state, Follower) and (node.state.epoch, node.state.leader_id) == (2, 1)
    request = answer(out, FetchSnapshotRequest)
    assert (request.snapshot_id, request.position, request.max_bytes) == ((100, 1), 0, MAX_BYTES)


def test_fetch_snapshot_response_to_not_follower() -> None:
    """A follower whose fetch timer expires mid-download becomes Prospective; the late chunk is not expected and is
    ignored."""
    node, out = _fetching_follower(epoch=2, snapshot_id=(100, 1))
    request = answer(out, FetchSnapshotRequest)
    cid = node.inflight[1][0]
    assert request.correlation_id == cid
    node, _ = raft.step(node, Tick(), CONFIG.fetch_timeout_ms)
    node, out = raft.step(node, Tick(), CONFIG.fetch_timeout_ms)
    assert isinstance(node.state, Prospective)
    vote = answer(out, VoteRequest)
    assert (vote.pre_vote, vote.replica_epoch, vote.last_offset_epoch, vote.last_offset) == (True, 2, 0, 0)
    late = FetchSnapshotResponse(source=1, leader_epoch=2, leader_id=1, snapshot_id=(100, 1), size=15, position=0,
                                 chunk=0, correlation_id=cid)
    after, _ = raft.step(node, late, CONFIG.fetch_timeout_ms)
    assert isinstance(after.state, Prospective) and after.log == node.log


def test_fetch_snapshot_request_cluster_id_validation() -> None:
    """The leader's own cluster id and none are accepted (answered for the partition: the bootstrap id is not found);
    an empty or another cluster id is refused with INCONSISTENT_CLUSTER_ID."""
    node = evolve(leader((0, 1), 5), cluster_id=CLUSTER_ID)
    for cluster_id, error, partition_error in ((CLUSTER_ID, Errors.NONE, Errors.SNAPSHOT_NOT_FOUND),
                                               (None, Errors.NONE, Errors.SNAPSHOT_NOT_FOUND),
                                               ("", Errors.INCONSISTENT_CLUSTER_ID, Errors.NONE),
                                               ("invalid-uuid", Errors.INCONSISTENT_CLUSTER_ID, Errors.NONE)):
        request = FetchSnapshotRequest(replica_id=1, current_leader_epoch=5, snapshot_id=(0, 0), position=0,
                                       max_bytes=2 ** 31 - 1, cluster_id=cluster_id, correlation_id=3)
        node, out = raft.step(node, request, 0)
        response = answer(out, FetchSnapshotResponse)
        assert (response.error, response.partition_error) == (error, partition_error), cluster_id


def test_create_snapshot_as_follower_with_invalid_snapshot_id() -> None:
    """A follower's snapshot: not past its high watermark (0 while unknown), its id must be valid in its log, and
    it must start a batch (the last case: an id inside the fetched batch of three records)."""
    node = follower((0, 1, 2), 5, 1, log_of_epochs([1]))
    assert node.state.high_watermark == -1
    with pytest.raises(InvalidSnapshotError, match=r"\(1, 1\) greater than the high-watermark \(0\)"):
        raft.step(node, CreateSnapshot(end_offset=1, epoch=1, size=1), 0)
    node, out = raft.step(node, Tick(), 0)
    assert (answer(out, FetchRequest).fetch_offset, answer(out, FetchRequest).last_fetched_epoch) == (1, 1)
    node, out = respond(node, 1, FetchResponse(source=1, leader_epoch=5, leader_id=1, high_watermark=0,
                                               records=batch(3, "b", "c")),
                        0)
    assert node.state.high_watermark == 0
    with pytest.raises(InvalidSnapshotError, match=r"\(1, 5\) greater than the high-watermark \(0\)"):
        raft.step(node, CreateSnapshot(end_offset=1, epoch=5, size=1), 0)
    assert (answer(out, FetchRequest).fetch_offset, answer(out, FetchRequest).last_fetched_epoch) == (3, 3)
    node, _ = respond(node, 1, FetchResponse(source=1, leader_epoch=5, leader_id=1, high_watermark=6,
                                             records=batch(4, "d", "e", "f")), 0)
    assert node.state.high_watermark == 6
    with pytest.raises(InvalidSnapshotError, match="not valid according to the log"):
        raft.step(node, CreateSnapshot(end_offset=6, epoch=6, size=1), 0)
    assert raft_log.end_offset_for_epoch(node.log, 3) == (3, 3)
    with pytest.raises(InvalidSnapshotError, match="not valid according to the log"):
        raft.step(node, CreateSnapshot(end_offset=6, epoch=3, size=1), 0)
    assert raft_log.end_offset_for_epoch(node.log, 4) == (4, 6)
    with pytest.raises(InvalidSnapshotError, match=r"offset \(5\) because it is not batch aligned. The batch "
                                                   r"containing the requested offset has a base offset of \(3\)$"):
        raft.step(node, CreateSnapshot(end_offset=5, epoch=4, size=1), 0)


@pytest.mark.parametrize("entire_log", [True, False])
def test_leader_listener_notified(entire_log: bool) -> None:
    """A new listener is handed the latest snapshot first, even where the log still holds what it covers, then the
    committed records after it."""
    node = leader((0, 1), 2, _log_with_snapshot(delete=not entire_log))
    assert node.listener.loaded_snapshot is None and node.state.high_watermark == -1
    node = caught_up(node)
    assert node.listener.loaded_snapshot == (3, 1) != raft_log.BOOTSTRAP_SNAPSHOT_ID
    assert node.listener.committed_end == node.state.high_watermark == node.log.end_offset


def _follower_fetched_to_end(entire_log: bool) -> raft.RaftNode:
    """A follower of leader 1 in epoch 2 over a, b, c, d, e, f with snapshot (3, 1), told its whole log is committed."""
    node = follower((0, 1), 2, 1, _log_with_snapshot(delete=not entire_log))
    node, out = raft.step(node, Tick(), 0)
    assert (answer(out, FetchRequest).fetch_offset, answer(out, FetchRequest).last_fetched_epoch) == (6, 1)
    node, out = respond(node, 1, FetchResponse(source=1, leader_epoch=2, leader_id=1, high_watermark=6), 0)
    assert (answer(out, FetchRequest).fetch_offset, answer(out, FetchRequest).high_watermark) == (6, 6)
    return node


@pytest.mark.parametrize("entire_log", [True, False])
def test_follower_listener_notified(entire_log: bool) -> None:
    node = _follower_fetched_to_end(entire_log)
    assert (node.listener.loaded_snapshot, node.listener.committed_end) == ((3, 1), 6)


@pytest.mark.parametrize("entire_log", [True, False])
def test_second_listener_notified(entire_log: bool) -> None:
    """The reference keeps one listener: the second registers in its place (``register``, then a poll's
    ``pollListeners``) and is handed the snapshot as a new listener."""
    node = evolve(_follower_fetched_to_end(entire_log), listener=None)
    node, _ = raft.step(node, Tick(), 0)
    assert (node.listener.loaded_snapshot, node.listener.committed_end) == ((3, 1), 6)


def test_listener_renotified() -> None:
    """A listener whose next offset falls below a log start that moved on is handed the latest snapshot again.

    Kafka's listener stops reading; the reference's reads every batch at once, so it is never behind the log start
    (the log start never passes the high watermark): it is stood in for by the view such a listener keeps, the first
    snapshot's, set back by hand.
    """
    log = raft_log.freeze_snapshot(log_of_epochs([1] * 9), Snapshot(end_offset=3, epoch=1, size=25))
    node = caught_up(leader((0, 1), 2, raft_log.delete_before_snapshot(log, 3, 1, high_watermark=9)))
    assert (node.listener.loaded_snapshot, node.listener.committed_end) == ((3, 1), 10)
    node = snapshotted(node, 10, 2, delete=True)
    node, _ = raft.step(node, Tick(), 0)
    assert node.listener.loaded_snapshot == (3, 1)  # a listener that read everything is not handed it
    node, _ = raft.step(evolve(node, listener=evolve(node.listener, committed_end=3)), Tick(), 0)
    assert (node.listener.loaded_snapshot, node.listener.committed_end) == ((10, 2), 10)


def test_listener_receives_bootstrap_snapshot() -> None:
    """A lone voter whose log holds only the bootstrap checkpoint hands it to its listener (``handleLoadBootstrap``)
    once its high watermark is known (the checkpoint's voters and records are not modelled: its size stands for them).
    The lone voter is Leader from ``initialize`` on."""
    node = make_node((0,), log=raft_log.RaftLog(snapshots=(Snapshot(end_offset=0, epoch=0, size=25),)))
    assert node.listener is None or node.listener.loaded_snapshot is None
    node, _ = raft.step(node, Tick(), 0)  # ``pollUntil(highWatermark().isPresent())`` polls at least once
    assert isinstance(node.state, Leader) and node.state.high_watermark >= 0
    assert node.listener.loaded_snapshot == raft_log.BOOTSTRAP_SNAPSHOT_ID


def test_listener_receives_bootstrap_snapshot_via_follower_fetch() -> None:
    node = leader((0, 1), 4, raft_log.RaftLog(snapshots=(Snapshot(end_offset=0, epoch=0, size=25),)))
    assert node.listener.loaded_snapshot is None
    node = caught_up(node)
    assert node.listener.loaded_snapshot == raft_log.BOOTSTRAP_SNAPSHOT_ID
    assert node.listener.committed_end == node.state.high_watermark == node.log.end_offset


def test_fetch_snapshot_request_unknown_partition() -> None:
    """A partition other than the metadata log's is not hosted: UNKNOWN_TOPIC_OR_PARTITION, with no leader named."""
    node = leader((0, 1), 4)
    request = FetchSnapshotRequest(replica_id=1, current_leader_epoch=4, snapshot_id=(0, 0), position=0,
                                   max_bytes=2 ** 31 - 1, topic_partition=("unknown", 0), correlation_id=3)
    node, out = raft.step(node, request, 0)
    response = answer(out, FetchSnapshotResponse)
    assert (response.error, response.partition_error) == (Errors.NONE, Errors.UNKNOWN_TOPIC_OR_PARTITION)
    assert (response.leader_id, response.leader_epoch) == (0, 0)  # the schema's defaults: no ``addQuorumLeader``


def test_fetch_snapshot_request_without_topics_or_partitions() -> None:
    """``testFetchSnapshotRequestWithoutTopics`` and ``testFetchSnapshotRequestWithoutPartitions``: a request naming
    no partition (no topic, or a topic without partitions: one input here) is an INVALID_REQUEST at the top level
    (the 4.3 branch since apache/kafka#23185, which added these tests; Kafka 4.3.1 throws IndexOutOfBoundsException)."""
    node = leader((0, 1), 4)
    request = FetchSnapshotRequest(replica_id=1, current_leader_epoch=4, snapshot_id=(0, 0), position=0,
                                   max_bytes=2 ** 31 - 1, topic_partition=None, correlation_id=3)
    node, out = raft.step(node, request, 0)
    response = answer(out, FetchSnapshotResponse)
    assert (response.error, response.partition_error) == (Errors.INVALID_REQUEST, Errors.NONE)


# -------------------------------------------------------------------------------------------------
# Beyond Kafka's tests: the log's own high watermark (``MockLog.highWatermark``), which createSnapshot and
# deleteBeforeSnapshot check, outlives the state that knew it (Kafka 4.3.1 judged: tests/test_kafka_raft_snapshot_hw.py)


def _resigned() -> raft.RaftNode:
    """``log_leader`` (high watermark 10) without fetches past the check-quorum timeout: Resigned, which knows no high
    watermark (``EpochState.highWatermark`` is empty), while its log keeps 10."""
    node, _ = raft.step(log_leader(), Tick(), 80_000)
    assert isinstance(node.state, Resigned) and node.log.high_watermark == 10
    return node


def test_a_resigned_leader_and_its_successor_state_snapshot_up_to_the_log_high_watermark() -> None:
    """Resigned creates snapshot (10, 5) at the log's high watermark, and the Unattached state of epoch 6 after it
    (which carries no high watermark) moves the log start there; a restart (``MockLog.reopen``) leaves the log's high
    watermark 0, so the same move is then refused."""
    node, _ = raft.step(_resigned(), CreateSnapshot(end_offset=10, epoch=5, size=1), 80_000)
    assert node.log.latest_snapshot.id == (10, 5)
    restarted = raft.restart(node, 80_001)
    node, _ = raft.step(node, Tick(), 100_000)
    assert isinstance(node.state, Unattached) and node.state.high_watermark == -1
    node, _ = raft.step(node, DeleteBeforeSnapshot(end_offset=10, epoch=5), 100_000)
    assert node.log.start_offset == 10
    assert restarted.log.high_watermark == 0 and isinstance(restarted.state, Resigned)  # the leader restarts so
    with pytest.raises(InvalidSnapshotError, match=r"greater than the high watermark \(0\)"):
        raft.step(restarted, DeleteBeforeSnapshot(end_offset=10, epoch=5), 80_001)


def test_a_new_leader_snapshots_up_to_the_log_high_watermark_before_its_epoch_commits() -> None:
    """Node 0, Unattached in epoch 6 after resigning, wins the pre-vote and the vote of epoch 7: its LeaderState knows
    no high watermark until the epoch commits, but the log's is still 10, so createSnapshot (10, 5) gets a writer and
    deleteBeforeSnapshot moves the log start to it; past 10 a snapshot is refused."""
    node = _resigned()
    for now in (100_000, 100_001, 100_002):
        node, _ = raft.step(node, Tick(), now)
    node, _ = respond(node, 1, VoteResponse(source=1, leader_epoch=6, vote_granted=True), 100_003)
    node, _ = raft.step(node, Tick(), 100_004)
    node, _ = respond(node, 1, VoteResponse(source=1, leader_epoch=7, vote_granted=True), 100_005)
    assert isinstance(node.state, Leader) and node.state.high_watermark == -1 and node.log.high_watermark == 10
    with pytest.raises(InvalidSnapshotError, match=r"greater than the high-watermark \(10\)"):
        raft.step(node, CreateSnapshot(end_offset=11, epoch=7, size=1), 100_006)
    node, _ = raft.step(node, CreateSnapshot(end_offset=10, epoch=5, size=1), 100_006)
    node, _ = raft.step(node, DeleteBeforeSnapshot(end_offset=10, epoch=5), 100_006)
    assert node.log.latest_snapshot.id == (10, 5) and node.log.start_offset == 10
