"""Snapshots in a KRaft node (KIP-630, §3.14): the leader serves FetchSnapshot in chunks and the follower loads the
snapshot it fetched in place of its log; the state machine creates snapshots (``createSnapshot``) and the log's cleaner
moves the log start to one (``deleteBeforeSnapshot``). ``KafkaRaftClient.java``, ``RaftLog``.
"""

from __future__ import annotations

from typing import Any

from kraftspec.reference import raft_leader, raft_log, raft_rules, raft_state, raft_voter_history, raft_voters
from kraftspec.reference.errors import Errors
from kraftspec.reference.frozen import FrozenMap, evolve
from kraftspec.reference.raft_log import Snapshot
from kraftspec.reference.raft_messages import (
    METADATA_PARTITION,
    CreateSnapshot,
    DeleteBeforeSnapshot,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    InvalidSnapshotError,
    RaftFatalError,
    Send,
)
from kraftspec.reference.raft_node import (
    Outputs,
    RaftNode,
    answered,
    expected,
    leader_endpoints,
    start_control_records,
    top_level_error,
    update_partition_state,
    with_control,
)
from kraftspec.reference.raft_state import Follower, Leader
from kraftspec.reference.raft_transitions import common_response

# --------------------------------------------------------------------------------------------------
# FetchSnapshot (KIP-630)


def _fetch_snapshot_response(node: RaftNode, req: FetchSnapshotRequest, partition_error: Errors,
                             **snapshot: Any) -> FetchSnapshotResponse:
    """``RaftUtil.singletonFetchSnapshotResponse`` + ``addQuorumLeader``: the receiver's epoch, leader and leader
    endpoints, a partition error or the chunk (``snapshot``: id, size, position, chunk)."""
    return FetchSnapshotResponse(source=node.local_id, partition_error=partition_error, leader_epoch=node.state.epoch,
                                 leader_id=raft_state.leader_of(node.state), leader_endpoints=leader_endpoints(node),
                                 correlation_id=req.correlation_id, **snapshot)


def _fetch_snapshot_error(node: RaftNode, req: FetchSnapshotRequest, error: Errors) -> FetchSnapshotResponse:
    """A top-level error answer (``KafkaRaftClient.handleFetchSnapshotRequest``): no partition, so the leader, id, size
    and position read as the schema's defaults, all 0 (``FetchSnapshotResponse.json``: no default is given)."""
    return FetchSnapshotResponse(source=node.local_id, error=error, leader_epoch=0, leader_id=0,
                                 correlation_id=req.correlation_id)


def _unknown_partition_snapshot_response(node: RaftNode, req: FetchSnapshotRequest) -> FetchSnapshotResponse:
    """``handleFetchSnapshotRequest`` for a partition other than the metadata log's: UNKNOWN_TOPIC_OR_PARTITION for
    it (the answer's partition is not modelled), without ``addQuorumLeader``, so its leader reads as the schema's
    default 0 in epoch 0, while the endpoints given are the quorum leader's (``singletonFetchSnapshotResponse``): a
    receiver finds them for node 0 only if that node leads."""
    endpoints = leader_endpoints(node) if raft_state.leader_of(node.state) == 0 else ()
    return FetchSnapshotResponse(source=node.local_id, partition_error=Errors.UNKNOWN_TOPIC_OR_PARTITION,
                                 leader_epoch=0, leader_id=0, leader_endpoints=endpoints,
                                 correlation_id=req.correlation_id)


def handle_fetch_snapshot_request(node: RaftNode, req: FetchSnapshotRequest, now: int, jitter: int,
                                  out: Outputs) -> RaftNode:
    """``handleFetchSnapshotRequest`` (Kafka 4.3): the leader of the fetcher's epoch serves a chunk of at most
    ``max_bytes`` from ``position`` (:func:`raft_rules.snapshot_chunk_size`) and counts the fetcher as following
    for check quorum (``updateCheckQuorumForFollowingVoter``; the replica's fetch position is not updated), KIP-630.
    A request naming no partition is refused as the 4.3 branch does since apache/kafka#23185 (4.3.1 throws)."""
    src = req.replica_id
    # A node of another cluster must not replicate this quorum's snapshots.
    if req.cluster_id is not None and req.cluster_id != node.cluster_id:
        out.append(Send(destination=src, message=_fetch_snapshot_error(node, req, Errors.INCONSISTENT_CLUSTER_ID)))
        return node
    # A request must name exactly one partition (``RaftUtil.hasValidTopicPartition``; Kafka 4.3.1 throws
    # IndexOutOfBoundsException here instead).
    if req.topic_partition is None:
        out.append(Send(destination=src, message=_fetch_snapshot_error(node, req, Errors.INVALID_REQUEST)))
        return node
    # The quorum replicates one partition, the metadata log's: no other is hosted here.
    if req.topic_partition != METADATA_PARTITION:
        out.append(Send(destination=src, message=_unknown_partition_snapshot_response(node, req)))
        return node
    error = raft_rules.fetch_epoch_error(req.current_leader_epoch, node.state.epoch, type(node.state) is Leader)
    # validateLeaderOnlyRequest: only the leader of the fetcher's epoch serves its snapshots.
    if error:
        out.append(Send(destination=src, message=_fetch_snapshot_response(node, req, Errors[error])))
        return node
    snapshot = next((s for s in node.log.snapshots if s.id == req.snapshot_id), None)
    # A snapshot the leader no longer (or never) had, or the bootstrap checkpoint, which is never replicated.
    if snapshot is None or snapshot.id == raft_log.BOOTSTRAP_SNAPSHOT_ID:
        out.append(Send(destination=src, message=_fetch_snapshot_response(node, req, Errors.SNAPSHOT_NOT_FOUND)))
        return node
    # A position outside the snapshot's bytes reads nothing.
    if req.position < 0 or req.position >= snapshot.size:
        out.append(Send(destination=src, message=_fetch_snapshot_response(node, req, Errors.POSITION_OUT_OF_RANGE)))
        return node
    chunk = raft_rules.snapshot_chunk_size(req.position, snapshot.size, req.max_bytes)
    node = evolve(node, state=raft_leader.update_check_quorum_for_following_voter(node.state, src, now, node.config,
                                                                                  req.replica_directory_id))
    control_records = _snapshot_first_batch(node, snapshot.id) if req.position == 0 else ()
    out.append(Send(destination=src, message=_fetch_snapshot_response(node, req, Errors.NONE, snapshot_id=snapshot.id,
                                                                      size=snapshot.size, position=req.position,
                                                                      chunk=chunk, control_records=control_records)))
    return node


def _snapshot_first_batch(node: RaftNode, snapshot_id: tuple[int, int]) -> tuple[Any, ...]:
    """The control records after the header of a snapshot's first batch, which the chunk from byte 0 carries
    (``RecordsSnapshotWriter.Builder.build``: the kraft.version and voter set in force at its end, none at kraft.version
    0 or for static voters), §3.14."""
    if node.dynamic is None:
        return ()
    records = node.dynamic.snapshot_records.get(snapshot_id)
    # As in :func:`raft_node.read_control`: only the control records of a snapshot this node wrote or loaded are known.
    if records is None:
        raise RaftFatalError(f"the control records of snapshot {snapshot_id} are not known to this node")
    return records


def handle_fetch_snapshot_response(node: RaftNode, resp: FetchSnapshotResponse, now: int, jitter: int,
                                   out: Outputs) -> RaftNode:
    """``handleFetchSnapshotResponse``: common handling (§3.8), then the follower writes the chunk and, with the last
    one, loads the snapshot (:func:`_snapshot_fetched`); a failed response backs the connection off."""
    if not expected(node, resp.source, resp.correlation_id):
        return node
    if resp.error != Errors.NONE:
        return answered(node, resp.source, resp.correlation_id, top_level_error(resp.error), now)
    node, common = common_response(node, resp.partition_error, resp.leader_id, resp.leader_epoch,
                                   resp.leader_endpoints, now, jitter, out)
    if common is not None:
        return answered(node, resp.source, resp.correlation_id, common, now)
    state = node.state
    if not isinstance(state, Follower):  # ``followerStateOrThrow``
        raise RaftFatalError(f"fetch snapshot response handled in state {state.role}")
    # The leader deleted the snapshot before it was fetched: start over with a Fetch.
    if resp.partition_error == Errors.SNAPSHOT_NOT_FOUND or resp.snapshot_id[0] < 0 or resp.snapshot_id[1] < 0:
        state = evolve(state, fetching_snapshot=None, fetch_deadline=now + node.config.fetch_timeout_ms,
                       has_fetched=True)
        return answered(evolve(node, state=state), resp.source, resp.correlation_id, True, now)
    if resp.partition_error != Errors.NONE:
        return answered(node, resp.source, resp.correlation_id, False, now)  # ``handleUnexpectedError``
    return answered(_snapshot_fetched(node, resp, now), resp.source, resp.correlation_id, True, now)


def _snapshot_fetched(node: RaftNode, resp: FetchSnapshotResponse, now: int) -> RaftNode:
    """A chunk of the snapshot being fetched: it must be that snapshot's, at the bytes held so far (else Kafka's
    client throws); with the last byte the snapshot is frozen and replaces the log (:func:`raft_log.
    truncate_to_latest_snapshot`, which must truncate), a kraft.version 1 node reloads its control records from it
    (``partitionState.updateState``: the voter set and kraft.version the first chunk carried replace those it had, the
    static voters when it holds no VotersRecord), the HW moves to the snapshot's end (``updateFollowerHighWatermark``),
    and the fetch timer restarts (KIP-630, §3.14)."""
    state = node.state
    download = state.fetching_snapshot
    # A chunk nobody asked for, of another snapshot, or at another position, cannot be written.
    if download is None:
        raise RaftFatalError(f"Received unexpected fetch snapshot response for {resp.snapshot_id}")
    if (download.end_offset, download.epoch) != resp.snapshot_id:
        raise RaftFatalError(f"Received fetch snapshot response with an invalid id. Expected "
                             f"{(download.end_offset, download.epoch)}; Received {resp.snapshot_id}")
    if download.received != resp.position:
        raise RaftFatalError(f"Received fetch snapshot response with an invalid position. Expected "
                             f"{download.received}; Received {resp.position}")
    download = evolve(download, received=download.received + resp.chunk)
    if resp.position == 0:  # the snapshot's first batch: its header and control records
        download = evolve(download, control_records=resp.control_records)
    log, hw = node.log, state.high_watermark
    if download.received == resp.size:
        log = raft_log.truncate_to_latest_snapshot(raft_log.freeze_snapshot(log, Snapshot(
            end_offset=download.end_offset, epoch=download.epoch, size=resp.size)))
        # The snapshot is ahead of the log by construction: a log it does not replace is an inconsistency.
        if log is None:
            raise RaftFatalError(f"Full log truncation expected but didn't happen. Snapshot of {resp.snapshot_id}")
        if node.dynamic is not None:  # the frozen snapshot holds the control records of its first batch
            node = evolve(node, dynamic=evolve(node.dynamic, snapshot_records=node.dynamic.snapshot_records.set(
                resp.snapshot_id, download.control_records)))
        elif download.control_records:  # static voters loading an upgraded leader's snapshot read its records
            node = start_control_records(evolve(node, log=log),
                                         FrozenMap({resp.snapshot_id: download.control_records}))
        download = None
        node = update_partition_state(evolve(node, log=log))  # the snapshot's voter set (§3.14)
        try:
            hw = raft_rules.follower_high_watermark(hw, log.end_offset, log.start_offset)
        except ValueError as exc:
            raise RaftFatalError(str(exc)) from exc
    state = evolve(state, fetching_snapshot=download, high_watermark=hw, has_fetched=True,
                   fetch_deadline=now + node.config.fetch_timeout_ms)
    return evolve(node, state=state, log=log)


# --------------------------------------------------------------------------------------------------
# Snapshots by the state machine and the log's cleaner (KIP-630)


def with_log_high_watermark(node: RaftNode) -> RaftNode:
    """``log.updateHighWatermark`` wherever the state's high watermark moves (``updateFollowerHighWatermark``,
    ``onUpdateLeaderHighWatermark``): the log keeps the last one known once the state forgets it (a new Leader,
    Resigned and the states after it)."""
    hw = getattr(node.state, "high_watermark", -1)
    if hw < 0 or hw == node.log.high_watermark:
        return node
    return evolve(node, log=evolve(node.log, high_watermark=hw))


def log_high_watermark(node: RaftNode) -> int:
    """The log's high watermark (``RaftLog.highWatermark``), which createSnapshot and deleteBeforeSnapshot check: the
    state's while it knows one, else the last the log was given (:func:`with_log_high_watermark`)."""
    hw = getattr(node.state, "high_watermark", -1)
    return hw if hw >= 0 else node.log.high_watermark


def handle_create_snapshot(node: RaftNode, op: CreateSnapshot, now: int, jitter: int, out: Outputs) -> RaftNode:
    """``createSnapshot(snapshotId)`` (Kafka 4.3 ``KafkaRaftClient``, ``RaftLog.createNewSnapshot``): a writer for a
    valid id at most the log's high watermark (:func:`raft_log.can_create_snapshot`), which the state machine freezes
    with ``size`` bytes; none for an id below the log start or already frozen; refused (:class:`InvalidSnapshotError`)
    otherwise."""
    try:
        created = raft_log.can_create_snapshot(node.log, op.end_offset, op.epoch, log_high_watermark(node))
    except ValueError as exc:
        raise InvalidSnapshotError(str(exc)) from exc
    if not created:
        return node
    node = evolve(node, log=raft_log.freeze_snapshot(node.log, Snapshot(end_offset=op.end_offset, epoch=op.epoch,
                                                                        size=op.size)))
    return node if node.dynamic is None else _snapshot_control_records(node, op.end_offset, op.epoch)


def _snapshot_control_records(node: RaftNode, end_offset: int, epoch: int) -> RaftNode:
    """A kraft.version 1 node's new snapshot starts with the kraft.version and voter set in force at its last contained
    offset (``createSnapshot``: ``kraftVersionAtOffset``, ``voterSetAtOffset``); once frozen, the control-record
    history before it is trimmed (``partitionState.truncateOldEntries``), §3.14."""
    control = node.dynamic.control
    last_contained = end_offset - 1
    kraft_version = raft_voter_history.kraft_version_at_offset(control, last_contained)
    voter_set = raft_voter_history.voter_set_at_offset(control, last_contained)
    records: tuple[Any, ...] = ()
    if raft_voters.is_reconfig_supported(kraft_version):
        records = (raft_voters.KRaftVersionRecord(kraft_version=kraft_version),)
        if voter_set is not None:
            records += (raft_voters.to_voters_record(voter_set),)
    dynamic = evolve(node.dynamic, snapshot_records=node.dynamic.snapshot_records.set((end_offset, epoch), records))
    return with_control(evolve(node, dynamic=dynamic),
                        raft_voter_history.trim_control_records(control, end_offset))


def handle_delete_before_snapshot(node: RaftNode, op: DeleteBeforeSnapshot, now: int, jitter: int,
                                  out: Outputs) -> RaftNode:
    """``deleteBeforeSnapshot`` (:func:`raft_log.delete_before_snapshot`): the log start advances to a frozen snapshot;
    refused (:class:`InvalidSnapshotError`) below the log start or past the log's high watermark."""
    try:
        return evolve(node, log=raft_log.delete_before_snapshot(node.log, op.end_offset, op.epoch,
                                                                log_high_watermark(node)))
    except ValueError as exc:
        raise InvalidSnapshotError(str(exc)) from exc
