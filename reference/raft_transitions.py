"""The state changes every KRaft handler shares, rules §3.2–§3.8 (``KafkaRaftClient.java``): moving to another state
(the quorum-state file, the connections, the parked fetches and the pending voter change that a move resets), the
handling every response shares (``maybeHandleCommonResponse``, §3.8), the listener learning the leader, and the
leader's own appends with what a high watermark that moves completes (the voter change, then the parked fetches).
"""

from __future__ import annotations

from typing import Any, Optional

from kraftspec.reference import raft_leader, raft_log, raft_rules, raft_state, raft_voter_history
from kraftspec.reference.errors import Errors
from kraftspec.reference.frozen import EMPTY_MAP, evolve
from kraftspec.reference.raft_log import LogEntry
from kraftspec.reference.raft_messages import (
    NO_DIVERGING_EPOCH,
    NO_SNAPSHOT_ID,
    FetchRequest,
    FetchResponse,
    RaftFatalError,
    Send,
)
from kraftspec.reference.raft_node import (
    Outputs,
    RaftNode,
    leader_endpoints,
    start_control_records,
    stored_election,
    update_partition_state,
    voter_keys,
)
from kraftspec.reference.raft_state import NO_LEADER, Follower, Leader, ParkedFetch, QuorumState, Resigned
from kraftspec.reference.raft_voter_change import maybe_complete_voter_change, voter_change_done

# --------------------------------------------------------------------------------------------------
# State changes (§3.2) and the handling every response shares (§3.8)


def moved(node: RaftNode, state: QuorumState, durable: bool, out: Outputs) -> RaftNode:
    """Switch state: write the quorum-state file if durable, reset connections (§3.2; ``RequestManager.resetAll``:
    nothing outstanding, nothing backing off).

    Parked fetches fail with NOT_LEADER_OR_FOLLOWER only on becoming Resigned (``transitionToResigned``, answered
    as the leader still) or Follower (``onBecomeFollower``, answered as the follower), in purgatory order; other
    transitions leave them parked (Kafka 4.3 ``KafkaRaftClient``: ``transitionToUnattached`` does not touch the
    fetch purgatory). A voter change the leader was running is answered NOT_LEADER_OR_FOLLOWER (``LeaderState.close``).
    """
    if node.parked and isinstance(state, (Follower, Resigned)):
        answering = node.state if isinstance(state, Resigned) else state
        for parked in _purgatory_order(node.parked):
            # A node no longer leading cannot complete a fetch: the fetcher learns who leads now.
            out.append(Send(destination=parked.source,
                            message=fetch_error_response(node, Errors.NOT_LEADER_OR_FOLLOWER, parked.request,
                                                                 answering)))
        node = evolve(node, parked=())
    if node.voter_change is not None and not isinstance(state, Leader):
        node = voter_change_done(node, Errors.NOT_LEADER_OR_FOLLOWER, None, out)  # ``LeaderState.close``
    stored = stored_election(node, state) if durable else node.stored
    return evolve(node, state=state, stored=stored, inflight=EMPTY_MAP, backoff=EMPTY_MAP)


def to_unattached(node: RaftNode, epoch: int, now: int, jitter: int, out: Outputs,
                  leader_id: int = NO_LEADER) -> RaftNode:
    """``transitionToUnattached`` (durable), keeping the election timer as §3.2 says; the listener may learn it
    (:func:`maybe_fire_leader_change`)."""
    deadline = raft_state.election_deadline(node.config, now, jitter, node.is_voter)
    state = raft_state.transition_to_unattached(node.state, epoch, deadline, len(node.voters), leader_id)
    return maybe_fire_leader_change(moved(node, state, True, out))


def to_follower(node: RaftNode, epoch: int, leader_id: int, endpoints: tuple[str, ...], now: int,
                out: Outputs) -> RaftNode:
    """``transitionToFollower``; endpoints missing from the message come from the voter set; the listener may learn it
    (:func:`maybe_fire_leader_change`)."""
    endpoints = endpoints or node.voter_endpoints.get(leader_id, ())
    state = raft_state.transition_to_follower(node.state, node.local_id, epoch, leader_id, endpoints,
                                              now + node.config.fetch_timeout_ms)
    return maybe_fire_leader_change(moved(node, state, True, out))


def maybe_transition(node: RaftNode, leader_id: int, epoch: int, endpoints: tuple[str, ...], now: int, jitter: int,
                     out: Outputs) -> RaftNode:
    """``maybeTransition`` (§3.8): a newer epoch or a newly learnt (better reachable) leader moves the node."""
    state = node.state
    local_leader = raft_state.leader_of(state)
    if epoch == state.epoch and leader_id != NO_LEADER and local_leader != NO_LEADER and leader_id != local_leader:
        raise RaftFatalError(f"leader {leader_id} in epoch {epoch} conflicts with known leader {local_leader}")
    if epoch > state.epoch:
        if leader_id != NO_LEADER:
            return to_follower(node, epoch, leader_id, endpoints, now, out)
        return to_unattached(node, epoch, now, jitter, out)
    endpoints = endpoints or node.voter_endpoints.get(leader_id, ())
    if leader_id != NO_LEADER and (local_leader == NO_LEADER or len(endpoints) > len(leader_endpoints(node))):
        return to_follower(node, epoch, leader_id, endpoints, now, out)
    return node


def common_response(node: RaftNode, error: Errors, leader_id: int, epoch: int, endpoints: tuple[str, ...],
                    now: int, jitter: int, out: Outputs) -> tuple[RaftNode, Optional[bool]]:
    """``maybeHandleCommonResponse`` (§3.8): (node, outcome). ``None``: not handled here, go on with the role's
    handling; ``True``/``False``: handled, and whether the request succeeded (False: BROKER_NOT_AVAILABLE, the
    connection backs off). INVALID_VOTER_KEY is handled (the request was not for that voter)."""
    local_epoch = node.state.epoch
    if epoch < local_epoch or error == Errors.UNKNOWN_LEADER_EPOCH:
        return node, True
    if epoch > local_epoch or error in (Errors.FENCED_LEADER_EPOCH, Errors.NOT_LEADER_OR_FOLLOWER):
        return maybe_transition(node, leader_id, epoch, endpoints, now, jitter, out), True
    if leader_id != NO_LEADER and raft_state.leader_of(node.state) == NO_LEADER:
        node = to_follower(node, epoch, leader_id, endpoints, now, out)
        return node, None if error == Errors.NONE else True
    if error == Errors.BROKER_NOT_AVAILABLE:
        return node, False
    if error == Errors.INVALID_VOTER_KEY:
        return node, True
    if error == Errors.INVALID_REQUEST:
        raise RaftFatalError("a request from this node was rejected as INVALID_REQUEST")
    return node, None


def maybe_fire_leader_change(node: RaftNode) -> RaftNode:
    """``maybeFireLeaderChange`` (by ``pollListeners``, ``pollLeader`` and the transitions to Unattached, Candidate and
    Follower): a registered listener learns the current (leader, epoch) when
    :func:`raft_rules.should_fire_leader_change`; the local leader only once :func:`raft_rules.listener_caught_up` to
    its epoch start (Kafka's listener contract, §3.12)."""
    state, view = node.state, node.listener
    if view is None:
        return node
    leader = raft_state.leader_of(state)
    if not raft_rules.should_fire_leader_change(state.epoch, leader, view.epoch, view.leader_id):
        return node
    if type(state) is Leader and not raft_rules.listener_caught_up(view.committed_end, state.epoch_start_offset):
        return node
    return evolve(node, listener=evolve(view, leader_id=leader, epoch=state.epoch))


# --------------------------------------------------------------------------------------------------
# The leader's appends, its high watermark and the fetches it parked (§3.6, §3.7)


def leader_resigns(state: Leader, now: int, shutting_down: bool) -> bool:
    """``pollLeader`` resigns: the node is shutting down (§3.13), a resign was requested, or check quorum expired
    (§3.6)."""
    return shutting_down or state.resign_requested or (now >= state.check_quorum_deadline
                                                       and raft_leader.check_quorum_expired(state, now))


def leader_append(node: RaftNode, batches: tuple[tuple[Any, ...], ...], now: int, out: Outputs) -> RaftNode:
    """``maybeAppendBatches``: each batch ``appendAsLeader``, then one ``flushLeaderLog``: the leader's end offset
    counts once flushed; parked fetches retry. A kraft.version 1 leader reads the control records it wrote
    (``partitionState.updateState``), and its replica states and high watermark follow the voter set in force
    (:func:`raft_leader.update_local_state`, §3.14). A high watermark the flush moved answers the committed voter change before the parked fetches (Kafka 4.3 ``KafkaRaftClient``
    ``updateLeaderEndOffsetAndTimestamp``: :func:`on_update_leader_high_watermark`)."""
    high_watermark = node.state.high_watermark
    log = node.log
    for records in batches:
        log = raft_log.append_as_leader(log, records, node.state.epoch)
    log = raft_log.flush(log)
    if node.dynamic is None and not any(raft_voter_history.is_control_record(r) for b in batches for r in b):
        node = evolve(node, log=log, state=raft_leader.update_local_end_offset(node.state, log.end_offset))
    else:  # a static leader's upgrade starts its control-record state machine (§3.15)
        node = evolve(node, log=log)
        node = start_control_records(node) if node.dynamic is None else update_partition_state(node)
        node = evolve(node, state=raft_leader.update_local_state(node.state, log.end_offset, voter_keys(node)))
    if node.state.high_watermark != high_watermark:
        return on_update_leader_high_watermark(node, now, out)
    return _complete_parked(node, now, out) if node.parked else node


def on_update_leader_high_watermark(node: RaftNode, now: int, out: Outputs) -> RaftNode:
    """``KafkaRaftClient.onUpdateLeaderHighWatermark`` when a fetch moves the leader's high watermark, before that
    fetch is answered (:func:`try_complete_fetch`, a parked one too), or the leader's own flush does
    (:func:`leader_append`): the voter change whose VotersRecord is now committed is answered first
    (``AddVoterHandler`` / ``RemoveVoterHandler.highWatermarkUpdated``, :func:`maybe_complete_voter_change`), then the
    parked fetches complete (``fetchPurgatory.completeAll``), §3.15."""
    if node.voter_change is not None:
        node = maybe_complete_voter_change(node, out)
    return _complete_parked(node, now, out) if node.parked else node


def _purgatory_order(parked: tuple[ParkedFetch, ...]) -> list[ParkedFetch]:
    """``ThresholdPurgatory`` completes by (fetch offset, arrival): its keys are (threshold, id)."""
    return sorted(parked, key=lambda p: p.request.fetch_offset)


def _complete_parked(node: RaftNode, now: int, out: Outputs) -> RaftNode:
    """Complete every parked fetch, in purgatory order, answered as of now (``completeAll`` after an HW change,
    ``maybeComplete(LEO)`` after an append: every parked fetch offset is at most the leader's end offset). A parked
    fetch whose completion moves the high watermark completes the ones after it, and answers a committed voter change,
    before its own answer (Kafka 4.3 ``KafkaRaftClient.handleFetchRequest``: the purgatory future's completion runs
    ``tryCompleteFetchRequest``, which runs ``onUpdateLeaderHighWatermark`` within that ``completeAll``)."""
    while node.parked:
        parked, *rest = _purgatory_order(node.parked)
        node, resp = try_complete_fetch(evolve(node, parked=tuple(rest)), parked.request, now, out)
        out.append(Send(destination=parked.source, message=resp))
    return node


def try_complete_fetch(node: RaftNode, req: FetchRequest, now: int, out: Outputs) -> tuple[RaftNode, FetchResponse]:
    """``KafkaRaftClient.tryCompleteFetchRequest``: leader-only validation, then ``validateOffsetAndEpoch``; a valid
    fetch reads the log from the fetch offset (uncommitted) and updates the replica's state; a high watermark that
    moves runs :func:`on_update_leader_high_watermark` before the answer, which states the high watermark after it."""
    state = node.state
    error = raft_rules.fetch_epoch_error(req.current_leader_epoch, state.epoch, type(state) is Leader)
    # validateLeaderOnlyRequest: only the leader of the fetcher's epoch serves a fetch; the answer names the leader.
    if error:
        return node, fetch_error_response(node, Errors[error], req)
    snapshot_id = raft_log.fetch_snapshot_id(node.log, req.fetch_offset, req.last_fetched_epoch)
    diverging = (None if snapshot_id is not None
                 else raft_log.validate_offset_and_epoch(node.log, req.fetch_offset, req.last_fetched_epoch))
    records: tuple[LogEntry, ...] = ()
    if diverging is None and snapshot_id is None:
        records = raft_log.entries_from(node.log, req.fetch_offset, node.config.fetch_max_records)
        node = evolve(node, state=raft_leader.update_replica_state(state, req.replica_id, req.fetch_offset, now,
                                                                   node.config, req.replica_directory_id))
        if node.state.high_watermark != state.high_watermark:
            node = on_update_leader_high_watermark(node, now, out)
    return node, FetchResponse(source=node.local_id, leader_epoch=node.state.epoch, leader_id=node.local_id,
                               leader_endpoints=leader_endpoints(node), high_watermark=node.state.high_watermark,
                               log_start_offset=node.log.start_offset,
                               diverging_epoch=NO_DIVERGING_EPOCH if diverging is None else diverging,
                               snapshot_id=NO_SNAPSHOT_ID if snapshot_id is None else snapshot_id,
                               records=records, correlation_id=req.correlation_id)


def fetch_error_response(node: RaftNode, error: Errors, req: FetchRequest,
                         state: Optional[QuorumState] = None) -> FetchResponse:
    """``buildEmptyFetchResponse``: a partition error with the current leader and epoch of ``state`` and the log start
    (Kafka 4.3 ``KafkaRaftClient.buildFetchResponse`` sets ``logStartOffset`` on every answer), §3.7."""
    state = state if state is not None else node.state
    return FetchResponse(source=node.local_id, partition_error=error, leader_epoch=state.epoch,
                         leader_id=raft_state.leader_of(state),
                         leader_endpoints=leader_endpoints(evolve(node, state=state)), high_watermark=-1,
                         log_start_offset=node.log.start_offset, correlation_id=req.correlation_id)
