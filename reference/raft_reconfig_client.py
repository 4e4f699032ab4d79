"""A KRaft node's voter changes (KIP-853, §3.15; ``KafkaRaftClient.java``): the leader's AddRaftVoter,
RemoveRaftVoter and UpdateRaftVoter handlers (over :mod:`raft_reconfig`'s rules) and the ApiVersions answer an add
waits for; a voter telling its leader its endpoints (UpdateRaftVoter), an observer asking to join the voters
(auto-join) and the answers they get; the kraft.version upgrade (``upgradeKRaftVersion``).
"""

from __future__ import annotations

from typing import Any, Optional

from kraftspec.reference import raft_leader, raft_reconfig, raft_rules, raft_state, raft_voter_history, raft_voters
from kraftspec.reference.errors import Errors
from kraftspec.reference.frozen import evolve
from kraftspec.reference.raft_messages import (
    AddRaftVoterRequest,
    ApiVersionsRequest,
    ApiVersionsResponse,
    IllegalUpgradeArgumentError,
    NotLeaderError,
    RaftFatalError,
    RemoveRaftVoterRequest,
    Send,
    UpdateRaftVoterRequest,
    UpdateRaftVoterResponse,
    UpgradeKRaftVersion,
    VoterChangeResponse,
)
from kraftspec.reference.raft_node import (
    ADD_VOTER,
    REMOVE_VOTER,
    SUPPORTED_KRAFT_VERSIONS,
    Outputs,
    PendingVoterChange,
    RaftNode,
    answered,
    expected,
    leader_endpoints,
    local_voter_node,
    persisted_version_and_voters,
    ready,
    send_request,
)
from kraftspec.reference.raft_state import Follower, Leader
from kraftspec.reference.raft_transitions import common_response, leader_append, leader_resigns
from kraftspec.reference.raft_voter_change import expire_voter_change, voter_change_done, voter_change_response

# --------------------------------------------------------------------------------------------------
# AddRaftVoter and RemoveRaftVoter on the leader (§3.15)


def _leader_only_error(node: RaftNode, request_epoch: int) -> Optional[Errors]:
    """``validateLeaderOnlyRequest``: the epoch rules of :func:`raft_rules.fetch_epoch_error`, then a leader shutting
    down is BROKER_NOT_AVAILABLE."""
    error = raft_rules.fetch_epoch_error(request_epoch, node.state.epoch, type(node.state) is Leader)
    if error:
        return Errors[error]
    return Errors.BROKER_NOT_AVAILABLE if node.shutdown is not None else None


def _reconfig_leader(node: RaftNode) -> raft_reconfig.ReconfigLeader:
    """What the voter-change handlers read of the leader (a kraft.version 0 node reads an empty history: its
    kraft.version is 0), and its in-memory voters (``volatileVoters``)."""
    state = node.state
    control = raft_voter_history.ControlRecordState() if node.dynamic is None else node.dynamic.control
    listener = "CONTROLLER" if node.dynamic is None else node.dynamic.listener_name
    return raft_reconfig.ReconfigLeader(epoch=state.epoch, control=control,
                                        high_watermark=None if state.high_watermark < 0 else state.high_watermark,
                                        operation_pending=node.voter_change is not None,
                                        volatile_voters=state.volatile_voters, default_listener=listener)


def _append_voters(node: RaftNode, voter_set: raft_voters.VoterSet) -> tuple[RaftNode, int]:
    """``LeaderState.appendVotersRecord``: the new voter set as a VotersRecord in the accumulator behind the records
    already there (``appendControlMessages``' ``forceDrain``); (node, its offset). The poll writes it after its
    check-quorum test, which still counts the old voters (Kafka 4.3 ``KafkaRaftClient.pollLeader``:
    ``maybeAppendBatches``), unless that poll resigns first."""
    state = node.state
    waiting = state.unwritten + _completed(state.lingering) + ((raft_voters.to_voters_record(voter_set),),)
    offset = node.log.end_offset + sum(map(len, waiting)) - 1
    return evolve(node, state=evolve(state, unwritten=waiting, lingering=())), offset


def _completed(lingering: tuple[Any, ...]) -> tuple[tuple[Any, ...], ...]:
    """The accumulator's current batch as completed by ``appendControlMessages``' ``forceDrain``: none if empty."""
    return (lingering,) if lingering else ()


def _admit_voter_change(node: RaftNode, api: str, src: int, cid: int, cluster_id: Optional[str], now: int,
                        out: Outputs) -> tuple[RaftNode, bool]:
    """What ``handleAddVoterRequest`` and ``handleRemoveVoterRequest`` check first: the cluster id, then that this node
    leads (``validateLeaderOnlyRequest``; refused with the message ``""``: ``new AddRaftVoterResponseData()
    .setErrorCode(..)`` keeps the field's default); an admitted request first expires a pending change whose timer
    ran out (:func:`expire_voter_change`). Returns the node and whether the request goes on to its handler (§3.15)."""
    # A node or client of another cluster must not change this quorum.
    if cluster_id is not None and cluster_id != node.cluster_id:
        out.append(voter_change_response(node, api, src, cid, Errors.INCONSISTENT_CLUSTER_ID,
                                         f'The given id "{cluster_id}" doesn\'t match the cluster id '
                                         f'"{node.cluster_id}"'))
        return node, False
    error = _leader_only_error(node, node.state.epoch)
    # Only the leader changes the voters. Kafka builds this answer without RaftUtil: its message is the field's "".
    if error is not None:
        out.append(voter_change_response(node, api, src, cid, error, ""))
        return node, False
    node, expired = expire_voter_change(node, now)
    if expired is not None:
        out.append(expired)
    return node, True


def handle_add_voter_request(node: RaftNode, req: AddRaftVoterRequest, now: int, jitter: int,
                             out: Outputs) -> RaftNode:
    """``handleAddVoterRequest``: cluster id, leader only, then :func:`raft_reconfig.handle_add_voter_request`; a
    valid add asks the new voter its kraft.version range (ApiVersions), unless a request is outstanding to it
    (:func:`raft_reconfig.new_voter_not_ready`); the change's timer is the request timeout (§3.15)."""
    src, cid = req.source, req.correlation_id
    node, admitted = _admit_voter_change(node, ADD_VOTER, src, cid, req.cluster_id, now, out)
    if not admitted:
        return node
    key = raft_voters.replica_key(req.voter_id, req.voter_directory_id)
    listeners = raft_voters.listeners_of(req.listeners)
    refusal = raft_reconfig.handle_add_voter_request(_reconfig_leader(node), key, listeners)
    # The leader must be able to ask the new voter now.
    if refusal is None and not ready(node, key.id, now):
        refusal = raft_reconfig.new_voter_not_ready(key)
    if refusal is not None:
        out.append(voter_change_response(node, ADD_VOTER, src, cid, refusal.error, refusal.message))
        return node
    node = send_request(node, key.id, ApiVersionsRequest(), now, out)
    change = PendingVoterChange(api=ADD_VOTER, source=src, correlation_id=cid, voter_key=key, listeners=listeners,
                                ack_when_committed=req.ack_when_committed,
                                deadline=now + node.config.request_timeout_ms)
    return evolve(node, voter_change=change)


def handle_api_versions_response(node: RaftNode, resp: ApiVersionsResponse, now: int, jitter: int,
                                 out: Outputs) -> RaftNode:
    """``handleApiVersionsResponse``: ignored unless the leader awaits it from the voter being added
    (``expectingApiResponse``); then :func:`raft_reconfig.handle_add_voter_api_versions` aborts the add or appends the
    voter set with the new voter, answered now if ``ack_when_committed`` is False; an error answer backs off
    (§3.15)."""
    if not expected(node, resp.source, resp.correlation_id):
        return node
    change = node.voter_change
    if (type(node.state) is not Leader or change is None or change.api != ADD_VOTER
            or change.last_offset is not None or change.voter_key.id != resp.source):
        return answered(node, resp.source, resp.correlation_id, True, now)
    replica = raft_leader.replica_state(node.state, change.voter_key) or raft_state.ReplicaState()
    caught_up = raft_reconfig.is_replica_caught_up(replica.last_caught_up_ms, replica.last_fetch_ms, now)
    outcome = raft_reconfig.handle_add_voter_api_versions(_reconfig_leader(node), change.voter_key, change.listeners,
                                                          resp.error, resp.kraft_version_range, caught_up)
    if outcome.response is not None:
        node = voter_change_done(node, outcome.response.error, outcome.response.message, out)
        return answered(node, resp.source, resp.correlation_id, resp.error == Errors.NONE, now)
    node, offset = _append_voters(node, outcome.append)
    change = evolve(change, last_offset=offset)
    if not change.ack_when_committed:
        out.append(voter_change_response(node, ADD_VOTER, change.source, change.correlation_id, Errors.NONE,
                                         None))
        change = evolve(change, responded=True)
    return answered(evolve(node, voter_change=change), resp.source, resp.correlation_id, True, now)


def handle_remove_voter_request(node: RaftNode, req: RemoveRaftVoterRequest, now: int, jitter: int,
                                out: Outputs) -> RaftNode:
    """``handleRemoveVoterRequest``: cluster id, leader only, then :func:`raft_reconfig.handle_remove_voter_request`;
    the voter set without the voter is appended and the answer waits for it to commit or the request timeout
    (§3.15)."""
    src, cid = req.source, req.correlation_id
    node, admitted = _admit_voter_change(node, REMOVE_VOTER, src, cid, req.cluster_id, now, out)
    if not admitted:
        return node
    key = raft_voters.replica_key(req.voter_id, req.voter_directory_id)
    outcome = raft_reconfig.handle_remove_voter_request(_reconfig_leader(node), key)
    if outcome.response is not None:
        out.append(voter_change_response(node, REMOVE_VOTER, src, cid, outcome.response.error,
                                         outcome.response.message))
        return node
    node, offset = _append_voters(node, outcome.append)
    change = PendingVoterChange(api=REMOVE_VOTER, source=src, correlation_id=cid, voter_key=key, last_offset=offset,
                                deadline=now + node.config.request_timeout_ms)
    return evolve(node, voter_change=change)


# --------------------------------------------------------------------------------------------------
# UpdateRaftVoter (§3.15)


def handle_update_voter_request(node: RaftNode, req: UpdateRaftVoterRequest, now: int, jitter: int,
                                out: Outputs) -> RaftNode:
    """``handleUpdateVoterRequest``: cluster id, leader only for the request's epoch, then
    :func:`raft_reconfig.handle_update_voter_request` (the sender's range: :data:`SUPPORTED_KRAFT_VERSIONS`); an update
    is answered at once: kraft.version 1 appends the voter set with the voter's new node, kraft.version 0 replaces the
    leader's in-memory voters and writes nothing; either way the voter counts as following for check quorum
    (``UpdateVoterHandler.storeUpdatedVoters``), §3.15."""
    src, cid = req.voter_id, req.correlation_id

    def answer(error: Errors) -> None:
        state = node.state
        out.append(Send(destination=src, message=UpdateRaftVoterResponse(
            source=node.local_id, error=error, leader_epoch=state.epoch, leader_id=raft_state.leader_of(state),
            leader_endpoints=leader_endpoints(node), correlation_id=cid)))

    # A voter of another cluster must not change this quorum.
    if req.cluster_id is not None and req.cluster_id != node.cluster_id:
        answer(Errors.INCONSISTENT_CLUSTER_ID)
        return node
    error = _leader_only_error(node, req.current_leader_epoch)
    # Only the leader of the sender's epoch updates the voters.
    if error is not None:
        answer(error)
        return node
    node, expired = expire_voter_change(node, now)
    if expired is not None:
        out.append(expired)
    key = raft_voters.replica_key(req.voter_id, req.voter_directory_id)
    outcome = raft_reconfig.handle_update_voter_request(_reconfig_leader(node), key,
                                                        raft_voters.listeners_of(req.listeners),
                                                        SUPPORTED_KRAFT_VERSIONS)
    if outcome.append is not None:
        node, _ = _append_voters(node, outcome.append)
    if outcome.volatile_voters is not None:
        node = evolve(node, state=evolve(node.state, volatile_voters=outcome.volatile_voters))
    if outcome.response.error == Errors.NONE:
        node = evolve(node, state=raft_leader.update_check_quorum_for_following_voter(node.state, key.id, now,
                                                                                      node.config, key.directory_id))
    answer(outcome.response.error)
    return node


def handle_update_voter_response(node: RaftNode, resp: UpdateRaftVoterResponse, now: int, jitter: int,
                                 out: Outputs) -> RaftNode:
    """``handleUpdateVoterResponse``: common handling (§3.8: INVALID_REQUEST is fatal), then NONE or UNSUPPORTED_VERSION
    marks the leader updated (``setHasUpdatedLeader``: a kraft.version 0 voter sends it no more) and restarts the
    follower's fetch timer as a fetch would; another error backs the connection off (``handleUnexpectedError``), so
    the voter asks again after the next update-voter-set period."""
    if not expected(node, resp.source, resp.correlation_id):
        return node
    node, common = common_response(node, resp.error, resp.leader_id, resp.leader_epoch, resp.leader_endpoints, now,
                                   jitter, out)
    if common is not None:
        return answered(node, resp.source, resp.correlation_id, common, now)
    if resp.error not in (Errors.NONE, Errors.UNSUPPORTED_VERSION):
        return answered(node, resp.source, resp.correlation_id, False, now)  # ``handleUnexpectedError``
    state = node.state
    if not isinstance(state, Follower):  # ``followerStateOrThrow``
        raise RaftFatalError(f"update voter response handled in state {state.role}")
    node = evolve(node, state=evolve(state, has_updated_leader=True, fetch_deadline=now + node.config.fetch_timeout_ms))
    return answered(node, resp.source, resp.correlation_id, True, now)


def should_send_update_voter(node: RaftNode) -> bool:
    """``shouldSendUpdateVoteRequest``: a kraft.version 1 voter whose node in the voter set differs from its own
    (listeners, kraft.version range); under kraft.version 0 a voter whose leader has not answered it yet
    (``hasUpdatedLeader``: every new leader learns its endpoints, as it does not persist them)."""
    if node.dynamic is None:
        return not node.state.has_updated_leader
    control = node.dynamic.control
    if not raft_voters.is_reconfig_supported(raft_voter_history.last_kraft_version(control)):
        return not node.state.has_updated_leader
    return raft_voters.voter_node_needs_update(raft_voter_history.last_voter_set(control), local_voter_node(node))


def update_voter(node: RaftNode, now: int, out: Outputs) -> RaftNode:
    """``pollFollowerAsVoter`` once the update-voter-set period has passed (Kafka 4.3): under kraft.version 0 a voter
    that has not updated this leader (:func:`should_send_update_voter`) sends it
    UpdateRaftVoter instead of a Fetch, if nothing is outstanding to the leader (``maybeSendUpdateVoterRequest``),
    and then restarts the period; otherwise it sends nothing and tries again at the next poll."""
    state = node.state
    if not ready(node, state.leader_id, now):
        return node
    request = UpdateRaftVoterRequest(voter_id=node.local_id, current_leader_epoch=state.epoch,
                                     voter_directory_id=node.directory_id,
                                     listeners=node.voter_endpoints.get(node.local_id, ()), cluster_id=node.cluster_id)
    node = send_request(node, state.leader_id, request, now, out)
    return evolve(node, state=evolve(node.state, update_voter_deadline=now + node.config.fetch_timeout_ms))


# --------------------------------------------------------------------------------------------------
# Auto-join: an observer asks to become a voter (§3.15)


def auto_join(node: RaftNode, now: int, out: Outputs) -> RaftNode:
    """``pollFollowerAsObserver`` once :func:`raft_rules.should_send_add_or_remove_voter_request` holds (Kafka 4.3):
    instead of a Fetch, an observer whose id is in the voter set under an old directory id asks the leader to remove
    that voter (:func:`raft_rules.auto_join_removes_old_voter`), otherwise to add itself with its listeners, answered
    once the VotersRecord is appended (``buildAddVoterRequest``: ``ackWhenCommitted`` false); sent only when the
    leader's connection is ready (``maybeSendRequest``), and then the update-voter-set period restarts (§3.15,
    KIP-853)."""
    state = node.state
    if not ready(node, state.leader_id, now):
        return node
    old = persisted_version_and_voters(node)[1].voters.get(node.local_id)
    if raft_rules.auto_join_removes_old_voter(old is not None):
        request: Any = RemoveRaftVoterRequest(voter_id=node.local_id, voter_directory_id=old.voter_key.directory_id,
                                              cluster_id=node.cluster_id, source=node.local_id)
    else:
        request = AddRaftVoterRequest(voter_id=node.local_id, voter_directory_id=node.directory_id,
                                      listeners=node.voter_endpoints.get(node.local_id, ()), ack_when_committed=False,
                                      cluster_id=node.cluster_id, source=node.local_id)
    node = send_request(node, state.leader_id, request, now, out)
    return evolve(node, state=evolve(node.state, update_voter_deadline=now + node.config.fetch_timeout_ms))


def handle_voter_change_response(node: RaftNode, resp: VoterChangeResponse, now: int, jitter: int,
                                 out: Outputs) -> RaftNode:
    """``handleAddVoterResponse`` / ``handleRemoveVoterResponse`` (Kafka 4.3): the auto-joining observer's answer. NONE,
    REQUEST_TIMED_OUT and DUPLICATE_VOTER (AddRaftVoter) or VOTER_NOT_FOUND (RemoveRaftVoter) restart the
    update-voter-set period, so it asks again only once that passes; another error is unexpected
    (``handleUnexpectedError``): the leader's connection backs off. The answer carries no leader or epoch."""
    if not expected(node, resp.source, resp.correlation_id):
        return node
    settled = Errors.DUPLICATE_VOTER if resp.api == ADD_VOTER else Errors.VOTER_NOT_FOUND
    if resp.error not in (Errors.NONE, Errors.REQUEST_TIMED_OUT, settled):
        return answered(node, resp.source, resp.correlation_id, False, now)
    state = node.state
    if not isinstance(state, Follower):  # ``followerStateOrThrow``
        raise RaftFatalError(f"{resp.api} response handled in state {state.role}")
    node = evolve(node, state=evolve(state, update_voter_deadline=now + node.config.fetch_timeout_ms))
    return answered(node, resp.source, resp.correlation_id, True, now)


# --------------------------------------------------------------------------------------------------
# The kraft.version upgrade (§3.15)


def handle_upgrade_kraft_version(node: RaftNode, op: UpgradeKRaftVersion, now: int, jitter: int,
                                 out: Outputs) -> RaftNode:
    """``KafkaRaftClient.upgradeKRaftVersion``: only a leader upgrades (:class:`NotLeaderError` otherwise), checked by
    :func:`raft_reconfig.maybe_append_upgraded_kraft_version` against its kraft.version and voter set
    (``partitionState.lastKraftVersion``, ``lastVoterSet``: the static voters at kraft.version 0). An upgrade takes the
    in-memory voters (the kraft.version is the requested one at once) and appends a KRaftVersionRecord(1) and the
    voter set, from which the leader and each node that fetches them run as kraft.version 1 (§3.15). An unknown level
    is refused (``KRaftVersion.fromFeatureLevel``: :class:`IllegalUpgradeArgumentError`).

    Kafka writes the two records as one batch from the accumulator in the next poll, unless that poll resigns first
    (as ``raft._handle_append``), after any batches still in the accumulator (``appendControlMessages``).
    """
    if op.kraft_version not in SUPPORTED_KRAFT_VERSIONS:
        raise IllegalUpgradeArgumentError(f"Unknown KRaft feature level: {op.kraft_version}")
    state = node.state
    if not isinstance(state, Leader):
        raise NotLeaderError("Upgrade kraft version failed because the replica is not the current leader")
    version, voters = persisted_version_and_voters(node)
    upgrade = raft_reconfig.maybe_append_upgraded_kraft_version(
        state.epoch, state.requested_kraft_version, state.volatile_voters, op.epoch, op.kraft_version, version, voters,
        op.validate_only)
    if not upgrade.records:
        return node
    node = evolve(node, state=evolve(state, volatile_voters=None, requested_kraft_version=op.kraft_version,
                                     lingering=()))
    if leader_resigns(state, now, node.shutdown is not None):
        return node
    if state.unwritten:  # ``appendControlMessages``' ``forceDrain`` completes the lingering batch before its own
        return evolve(node, state=evolve(node.state,
                                         unwritten=state.unwritten + _completed(state.lingering) + (upgrade.records,)))
    return leader_append(node, _completed(state.lingering) + (upgrade.records,), now, out)
