"""A kraft.version 1 node loading a snapshot fetched from its leader (KIP-630 with KIP-853, rules §3.14), Kafka 4.3.

Kafka's own tests of this path are ``KRaftControlRecordStateMachineTest``'s snapshot cases: a snapshot made with
``createNewSnapshotUnchecked`` and ``truncateToLatestSnapshot``, exactly what ``handleFetchSnapshotResponse`` does with
a fetched one, then ``updateState``; they and its other cases are transcribed by name over
``raft_node.read_control`` (the state machine's ``updateState``) and ``raft_voter_history`` (its ``truncateNewEntries``
and ``truncateOldEntries``), static voters 1, 2, 3. ``KafkaRaftClientSnapshotTest`` fetches snapshots only with static
voters (its ``withKip853Rpc`` variants change the RPC versions, not the kraft.version), so the client-level cases
below are this project's, named after what they show: the leader's chunk from byte 0 carries the snapshot's control
records (``RecordsSnapshotWriter``: its first batch), and the follower that loads the snapshot takes its voters from
them.
Helpers and timeouts are those of ``test_raft_reconfig_client_scenarios.py``. ``RecordsSnapshotWriterTest``'s cases,
last, read the control records a snapshot of the client starts with (``createSnapshot`` builds it).
Left out: the metrics and buffer suppliers of ``KRaftControlRecordStateMachineTest`` (``number-of-voters``,
``setIgnoredStaticVoters``, ``testBufferSupplier*``), the header, footer and batches ``RecordsSnapshotWriterTest`` reads
(byte format) and its ``testBuilderKRaftVersion0WithVoterSet`` (the builder's exception on misuse: ``createSnapshot``
finds no voter set at kraft.version 0).
"""

from __future__ import annotations

from typing import Any

from kraftspec.reference import raft, raft_log, raft_node, raft_voter_history
from kraftspec.reference.frozen import FrozenMap, evolve
from kraftspec.reference.raft_log import RaftLog, Snapshot
from kraftspec.reference.raft_messages import (
    CreateSnapshot,
    DeleteBeforeSnapshot,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    Tick,
    UpgradeKRaftVersion,
)
from kraftspec.reference.raft_state import ElectionState, Follower
from kraftspec.reference.raft_voters import EMPTY_VOTER_SET, KRaftVersionRecord, VoterSet, VotersRecord, \
    from_voters_record, to_voters_record, voter_ids

from test_raft_reconfig_client_scenarios import (
    CONFIG,
    LOCAL,
    START,
    directory,
    dynamic_node,
    leader,
    listeners,
    only,
    upgradable_leader,
    voter_set,
)
from test_raft_scenarios import follower as static_follower
from test_raft_snapshot_scenarios import log_leader, snapshotted

SNAPSHOT_ID = (10, 1)
KRAFT_VERSION_1 = KRaftVersionRecord(kraft_version=1)


def partition_state(snapshot_records: tuple[Any, ...]) -> raft.DynamicVoters:
    """``buildPartitionListener`` with static voters 1, 2, 3 (nothing read yet), knowing the records of
    :data:`SNAPSHOT_ID`."""
    control = raft_voter_history.ControlRecordState(static_voter_set=voter_set(1, 2, 3))
    return raft.DynamicVoters(control=control, local_listeners=listeners(LOCAL),
                              snapshot_records=FrozenMap({SNAPSHOT_ID: snapshot_records}))


def snapshot_log() -> RaftLog:
    """``createNewSnapshotUnchecked(10-1)``, frozen, then ``log.truncateToLatestSnapshot()``."""
    log = raft_log.truncate_to_latest_snapshot(raft_log.freeze_snapshot(RaftLog(), Snapshot(
        end_offset=SNAPSHOT_ID[0], epoch=SNAPSHOT_ID[1], size=100)))
    assert log is not None and (log.start_offset, log.end_offset) == (10, 10)
    return log


def test_update_with_snapshot() -> None:
    voters = voter_set(4, 5, 6)
    dynamic = partition_state((KRAFT_VERSION_1, to_voters_record(voters)))
    assert raft_voter_history.last_voter_set(dynamic.control) == voter_set(1, 2, 3)
    log = snapshot_log()
    control = raft_node.read_control(dynamic, log)
    assert raft_voter_history.last_voter_set(control) == voters
    assert raft_voter_history.voter_set_at_offset(control, log.end_offset - 1) == voters
    assert raft_voter_history.kraft_version_at_offset(control, log.end_offset - 1) == 1


def test_update_with_empty_snapshot() -> None:
    """A snapshot without control records leaves the static voters and kraft.version 0 (this check is not Kafka's);
    the KRaftVersionRecord and VotersRecord appended after it are read."""
    dynamic = partition_state(())
    log = snapshot_log()
    loaded = raft_node.read_control(dynamic, log)
    assert raft_voter_history.last_voter_set(loaded) == voter_set(1, 2, 3)
    assert raft_voter_history.last_kraft_version(loaded) == 0
    voters = voter_set(4, 5, 6)
    log = raft_log.append_as_leader(log, (KRAFT_VERSION_1,), 1)
    log = raft_log.append_as_leader(log, (to_voters_record(voters),), 1)
    control = raft_node.read_control(dynamic, log)
    assert raft_voter_history.last_voter_set(control) == voters
    assert raft_voter_history.voter_set_at_offset(control, log.end_offset - 1) == voters
    assert raft_voter_history.kraft_version_at_offset(control, log.end_offset - 1) == 1


def test_update_with_snapshot_and_log_override() -> None:
    snapshot_voters = voter_set(4, 5, 6)
    dynamic = partition_state((KRAFT_VERSION_1, to_voters_record(snapshot_voters)))
    voters = voter_set(4, 5, 6, 7)
    log = raft_log.append_as_leader(snapshot_log(), (to_voters_record(voters),), 1)
    control = raft_node.read_control(dynamic, log)
    assert raft_voter_history.last_voter_set(control) == voters
    assert raft_voter_history.voter_set_at_offset(control, log.end_offset - 1) == voters
    assert raft_voter_history.kraft_version_at_offset(control, log.end_offset - 1) == 1
    assert raft_voter_history.voter_set_at_offset(control, SNAPSHOT_ID[0] - 1) == snapshot_voters


def test_empty_partition() -> None:
    assert raft_voter_history.last_voter_set(raft_node.read_control(partition_state(()), RaftLog())) == voter_set(
        1, 2, 3)


def test_empty_partition_with_no_static_voters() -> None:
    dynamic = raft.DynamicVoters(control=raft_voter_history.ControlRecordState(), local_listeners=listeners(LOCAL))
    assert raft_voter_history.last_voter_set(raft_node.read_control(dynamic, RaftLog())) == EMPTY_VOTER_SET


def test_update_without_snapshot() -> None:
    voters = voter_set(4, 5, 6)
    log = raft_log.append_as_leader(raft_log.append_as_leader(RaftLog(), (KRAFT_VERSION_1,), 1),
                                    (to_voters_record(voters),), 1)
    control = raft_node.read_control(partition_state(()), log)
    last = log.end_offset - 1
    assert raft_voter_history.last_voter_set(control) == voters == raft_voter_history.voter_set_at_offset(control, last)
    assert raft_voter_history.kraft_version_at_offset(control, last) == 1


def two_voter_sets_read() -> tuple[raft_voter_history.ControlRecordState, VoterSet, VoterSet]:
    """The kraft.version at offset 0, voters 4, 5, 6 at 1 and 4, 5, 6, 7 at 2, all read (static voters 1, 2, 3)."""
    first, second = voter_set(4, 5, 6), voter_set(4, 5, 6, 7)
    log = RaftLog()
    for record in (KRAFT_VERSION_1, to_voters_record(first), to_voters_record(second)):
        log = raft_log.append_as_leader(log, (record,), 1)
    control = raft_node.read_control(partition_state(()), log)
    assert raft_voter_history.last_voter_set(control) == second
    return control, first, second


def test_truncate_to() -> None:
    control, first, _ = two_voter_sets_read()
    control = raft_voter_history.truncate_control_records(control, 2)
    assert raft_voter_history.last_voter_set(control) == first
    control = raft_voter_history.truncate_control_records(control, 0)
    assert raft_voter_history.last_voter_set(control) == voter_set(1, 2, 3)


def test_trim_prefix_to() -> None:
    control, first, second = two_voter_sets_read()
    assert raft_voter_history.kraft_version_at_offset(control, 0) == 1
    for start in (0, 1, 2):
        control = raft_voter_history.trim_control_records(control, start)
        assert raft_voter_history.kraft_version_at_offset(control, 0) == 1, start
        if start == 1:
            assert raft_voter_history.voter_set_at_offset(control, 1) == first
    assert raft_voter_history.voter_set_at_offset(control, 1) is None
    assert raft_voter_history.voter_set_at_offset(control, 2) == second


# --------------------------------------------------------------------------------------------------
# The client: the leader serves the control records, the follower loads them (this project's cases)


def snapshot_leader() -> raft.RaftNode:
    """LOCAL leads voters LOCAL and 2 in epoch 4 over its start-of-epoch records and three data records, all committed
    (voter 2 fetched them), snapshotted at the high watermark and its log deleted before it."""
    node, now = leader(LOCAL, 2)
    for record in ("a", "b", "c"):
        node, _ = raft.step(node, raft.Append(records=(record,)), now)
    epoch, end = node.state.epoch, node.log.end_offset
    node, _ = raft.step(node, FetchRequest(replica_id=2, replica_directory_id=directory(2), current_leader_epoch=epoch,
                                           fetch_offset=end, last_fetched_epoch=epoch, correlation_id=7), now)
    assert node.state.high_watermark == end
    node, _ = raft.step(node, CreateSnapshot(end_offset=end, epoch=epoch, size=15), now)
    node, _ = raft.step(node, DeleteBeforeSnapshot(end_offset=end, epoch=epoch), now)
    assert node.log.start_offset == end
    return node


def fetch_snapshot(node: raft.RaftNode, position: int) -> FetchSnapshotResponse:
    snapshot = node.log.latest_snapshot
    request = FetchSnapshotRequest(replica_id=3, current_leader_epoch=node.state.epoch, snapshot_id=snapshot.id,
                                   position=position, max_bytes=10, correlation_id=9)
    _, out = raft.step(node, request, START)
    return only(out, FetchSnapshotResponse)


def test_leader_sends_the_snapshot_control_records_in_the_first_chunk() -> None:
    """The chunk from byte 0 holds the snapshot's first batch: the kraft.version and the VotersRecord in force at its
    end, as the leader's log wrote them at its epoch start; a later chunk holds none."""
    node = snapshot_leader()
    assert node.log.entries == ()  # the log was deleted before the snapshot: its voters are known from it only
    first = fetch_snapshot(node, 0)
    assert (first.chunk, first.size) == (10, 15)
    (kraft_version, voters) = first.control_records
    assert kraft_version == KRAFT_VERSION_1 and isinstance(voters, VotersRecord)
    assert voter_ids(from_voters_record(voters)) == frozenset({LOCAL, 2}) == node.voters
    assert fetch_snapshot(node, 10).control_records == ()


def test_static_leader_sends_no_control_records() -> None:
    """At kraft.version 0 (static voters) a snapshot has no control records after its header."""
    node = snapshotted(log_leader(), 9, 4)
    request = FetchSnapshotRequest(replica_id=1, current_leader_epoch=5, snapshot_id=(9, 4), position=0, max_bytes=10,
                                   correlation_id=9)
    _, out = raft.step(node, request, 0)
    assert only(out, FetchSnapshotResponse).control_records == ()


def fetching_follower(voters: tuple[int, ...] = (LOCAL, 2)) -> tuple[raft.RaftNode, FetchSnapshotRequest]:
    """LOCAL, bootstrapped with ``voters``, follows leader 2 in epoch 5 and is told to fetch snapshot (10, 4)."""
    node = dynamic_node(LOCAL, voter_set(*voters), ElectionState(epoch=5, leader_id=2))
    node = evolve(node, config=evolve(CONFIG, fetch_snapshot_max_bytes=10))
    node, out = raft.step(node, Tick(), START)
    fetch = only(out, FetchRequest)
    node, out = raft.step(node, FetchResponse(source=2, leader_epoch=5, leader_id=2, high_watermark=10,
                                              log_start_offset=10, snapshot_id=(10, 4),
                                              correlation_id=fetch.correlation_id), START)
    return node, only(out, FetchSnapshotRequest)


def chunk(request: FetchSnapshotRequest, position: int, size: int,
          records: tuple[Any, ...] = ()) -> FetchSnapshotResponse:
    return FetchSnapshotResponse(source=2, leader_epoch=5, leader_id=2, snapshot_id=(10, 4), size=15,
                                 position=position, chunk=size, control_records=records,
                                 correlation_id=request.correlation_id)


def test_follower_takes_its_voters_from_a_fetched_snapshot() -> None:
    """The voters of the snapshot's first chunk replace the follower's once the last chunk froze it (not before): LOCAL
    is no longer a voter, fetches on from the snapshot's end, and a restart reads the same voters from the snapshot."""
    node, request = fetching_follower()
    records = (KRAFT_VERSION_1, to_voters_record(voter_set(2, 3, 4)))
    node, out = raft.step(node, chunk(request, 0, 10, records), START)
    assert node.voters == frozenset({LOCAL, 2}) and (10, 4) not in node.dynamic.snapshot_records
    node, out = raft.step(node, chunk(only(out, FetchSnapshotRequest), 10, 5), START)
    assert node.log.latest_snapshot.id == (10, 4) and node.state.fetching_snapshot is None
    assert node.voters == frozenset({2, 3, 4}) and not node.is_voter
    assert node.dynamic.snapshot_records[(10, 4)] == records
    assert raft_voter_history.kraft_version_at_offset(node.dynamic.control, 9) == 1
    fetch = only(out, FetchRequest)
    assert (fetch.fetch_offset, fetch.last_fetched_epoch) == (10, 4)
    restarted = raft.restart(node, START + 1)
    assert restarted.voters == frozenset({2, 3, 4}) and isinstance(restarted.state, Follower)


def test_follower_loads_a_fetched_snapshot_without_voters_record() -> None:
    """A kraft.version 1 snapshot without a VotersRecord (``voterSetAtOffset`` empty at its end) leaves the static
    voters, which a node bootstrapped from a checkpoint has none of (``VoterSetHistory.lastValue``)."""
    node, request = fetching_follower()
    node, out = raft.step(node, chunk(request, 0, 10, (KRAFT_VERSION_1,)), START)
    node, out = raft.step(node, chunk(only(out, FetchSnapshotRequest), 10, 5), START)
    assert node.voters == frozenset() and raft_voter_history.last_kraft_version(node.dynamic.control) == 1
    assert only(out, FetchRequest).fetch_offset == 10


def test_follower_fetches_the_snapshot_of_a_kraft_version_1_leader() -> None:
    """End to end: a new node (bootstrapped with voters LOCAL and 2 but holding none of the log) fetches the leader's
    snapshot chunk by chunk and holds the same control records and voters as the leader."""
    source = snapshot_leader()
    snapshot = source.log.latest_snapshot
    node = dynamic_node(3, voter_set(LOCAL, 2), ElectionState(epoch=source.state.epoch, leader_id=LOCAL))
    node = evolve(node, config=evolve(CONFIG, fetch_snapshot_max_bytes=10))
    node, out = raft.step(node, Tick(), START)
    for _ in range(3):  # a Fetch answered with the snapshot id, then two chunks
        (request,) = out
        source, (answer,) = raft.step(source, request.message, START)
        node, out = raft.step(node, answer.message, START)
    assert node.log.start_offset == snapshot.end_offset
    assert node.dynamic.snapshot_records[snapshot.id] == source.dynamic.snapshot_records[snapshot.id]
    assert node.voters == source.voters == frozenset({LOCAL, 2})


def test_static_follower_keeps_its_voters_after_a_fetched_snapshot() -> None:
    """kraft.version 0: a follower with static voters loads a snapshot with no control records and keeps its voters."""
    node = evolve(static_follower((0, 1), 1, 1), config=evolve(CONFIG, fetch_snapshot_max_bytes=10))
    node, out = raft.step(node, Tick(), 0)
    fetch = only(out, FetchRequest)
    node, out = raft.step(node, FetchResponse(source=1, leader_epoch=1, leader_id=1, high_watermark=5,
                                              log_start_offset=5, snapshot_id=(5, 1),
                                              correlation_id=fetch.correlation_id), 0)
    request = only(out, FetchSnapshotRequest)
    node, out = raft.step(node, FetchSnapshotResponse(source=1, leader_epoch=1, leader_id=1, snapshot_id=(5, 1),
                                                      size=5, position=0, chunk=5,
                                                      correlation_id=request.correlation_id), 0)
    assert node.log.latest_snapshot.id == (5, 1) and node.voters == frozenset({0, 1}) and node.dynamic is None


# --------------------------------------------------------------------------------------------------
# Likely Kafka 4.3 problems, kept as the reference follows them: the first confirmed through Kafka's client
# (tests/test_kafka_raft_quirks.py), the second too (tests/test_kafka_raft_snapshot_dynamic.py)


def test_snapshot_fetched_after_truncating_below_the_read_position() -> None:
    """``truncateNewEntries`` keeps the next offset to read, so a follower that had read past a snapshot's end, then
    truncated below it, loads nothing from the snapshot it fetches (``maybeLoadSnapshot``: the next offset is not below
    the new log start; the comment in ``handleFetchSnapshotResponse`` says it always reloads) nor the records after it
    up to its old read position: its voters stay those before the truncation until a restart reads them anew."""
    node = dynamic_node(LOCAL, voter_set(LOCAL, 2), ElectionState(epoch=5, leader_id=2))
    node = evolve(node, config=evolve(CONFIG, fetch_snapshot_max_bytes=10))
    node, out = raft.step(node, Tick(), START)
    records = ["a", "b", "c", "d", to_voters_record(voter_set(LOCAL, 2, 3))] + [f"x{i}" for i in range(7)]
    node, out = raft.step(node, FetchResponse(source=2, leader_epoch=5, leader_id=2, high_watermark=0, records=tuple(
        raft_log.LogEntry(epoch=3, record=r) for r in records), correlation_id=only(out, FetchRequest).correlation_id),
        START)
    assert node.voters == frozenset({LOCAL, 2, 3}) and node.dynamic.control.next_offset == 12
    node, out = raft.step(node, FetchResponse(source=2, leader_epoch=5, leader_id=2, high_watermark=0,
                                              diverging_epoch=(3, 2),
                                              correlation_id=only(out, FetchRequest).correlation_id), START)
    assert node.log.end_offset == 2 and node.voters == frozenset({LOCAL, 2})
    node, out = raft.step(node, FetchResponse(source=2, leader_epoch=5, leader_id=2, high_watermark=10,
                                              log_start_offset=10, snapshot_id=(10, 4),
                                              correlation_id=only(out, FetchRequest).correlation_id), START)
    request = only(out, FetchSnapshotRequest)
    snapshot_voters = (KRAFT_VERSION_1, to_voters_record(voter_set(2, 4, 5)))
    node, out = raft.step(node, chunk(request, 0, 10, snapshot_voters), START)
    node, out = raft.step(node, chunk(only(out, FetchSnapshotRequest), 10, 5), START)
    assert node.log.start_offset == 10 and node.voters == frozenset({LOCAL, 2})  # the snapshot's voters not loaded
    later = (raft_log.LogEntry(epoch=5, record=to_voters_record(voter_set(2, 4))),)
    node, out = raft.step(node, FetchResponse(source=2, leader_epoch=5, leader_id=2, high_watermark=11, records=later,
                                              correlation_id=only(out, FetchRequest).correlation_id), START)
    assert node.log.end_offset == 11 and node.voters == frozenset({LOCAL, 2})  # below the read position: not read
    assert raft.restart(node, START + 1).voters == frozenset({2, 4})


def test_voter_history_emptied_by_a_truncation_to_the_snapshot_end() -> None:
    """``truncateOldEntries(end)`` on freezing a snapshot keeps only the latest entry at or before ``end``: a
    VotersRecord written at ``end`` itself (not in the snapshot) displaces the one in force inside it, and a truncation
    to ``end`` (allowed when the high watermark is there) then leaves no voter set at all (``lastValue``: the static
    voters, none for a node bootstrapped from a checkpoint); a snapshot written next has no VotersRecord."""
    control = raft_voter_history.ControlRecordState()
    control = raft_voter_history.load_snapshot(control, -1, (KRAFT_VERSION_1, to_voters_record(voter_set(1, 2, 3))))
    control = raft_voter_history.read_batch(control, 0, 4, ())
    control = raft_voter_history.read_batch(control, 5, 5, (to_voters_record(voter_set(1, 2, 3, 4)),))
    trimmed = raft_voter_history.trim_control_records(control, 5)
    assert [offset for offset, _ in trimmed.voter_set_history.entries] == [5]
    truncated = raft_voter_history.truncate_control_records(trimmed, 5)
    assert truncated.voter_set_history.entries == () and raft_voter_history.last_voter_set(truncated).voters == {}
    assert raft_voter_history.voter_set_at_offset(truncated, 4) is None
    assert raft_voter_history.kraft_version_at_offset(truncated, 4) == 1  # its entry at -1 is older than the start


# --------------------------------------------------------------------------------------------------
# RecordsSnapshotWriterTest: the control records after a snapshot's header, as ``createSnapshot`` builds them


def test_builder_kraft_version0() -> None:
    """At kraft.version 0 none: the snapshot of an upgraded leader ending before its upgrade's records."""
    node, now = upgradable_leader()
    end, epoch = node.log.end_offset, node.state.epoch
    node, _ = raft.step(node, UpgradeKRaftVersion(epoch=epoch, kraft_version=1), now)
    node, _ = raft.step(node, CreateSnapshot(end_offset=end, epoch=epoch, size=15), now)
    assert node.dynamic.snapshot_records[(end, epoch)] == () and fetch_snapshot(node, 0).control_records == ()


def test_k_builder_raft_version1_with_voter_set() -> None:
    """Named as Kafka's ``testKBuilderRaftVersion1WithVoterSet`` (sic): the kraft.version and the voters in force."""
    node = snapshot_leader()
    assert node.dynamic.snapshot_records[node.log.latest_snapshot.id] == (KRAFT_VERSION_1,
                                                                          to_voters_record(voter_set(LOCAL, 2)))


def test_builder_kraft_version1_without_voter_set() -> None:
    """The kraft.version record alone: a follower that loaded a snapshot without a VotersRecord snapshots later."""
    node, request = fetching_follower()
    node, out = raft.step(node, chunk(request, 0, 10, (KRAFT_VERSION_1,)), START)
    node, out = raft.step(node, chunk(only(out, FetchSnapshotRequest), 10, 5), START)
    node, _ = raft.step(node, FetchResponse(source=2, leader_epoch=5, leader_id=2, high_watermark=12, records=(
        raft_log.LogEntry(epoch=5, record="a"), raft_log.LogEntry(epoch=5, record="b")),
        correlation_id=only(out, FetchRequest).correlation_id), START)
    node, _ = raft.step(node, CreateSnapshot(end_offset=12, epoch=5, size=15), START)
    assert node.dynamic.snapshot_records[(12, 5)] == (KRAFT_VERSION_1,)
