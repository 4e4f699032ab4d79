"""The voter change a KRaft leader runs (``AddVoterHandlerState`` / ``RemoveVoterHandlerState``, KIP-853, §3.15): how
it is answered, once its VotersRecord commits (``highWatermarkUpdated``), when its timer expires
(``maybeExpirePendingOperation``) or when the leader loses its epoch (``LeaderState.close``). The requests that start
one are handled in :mod:`raft_reconfig_client`; the transitions below them answer it (:mod:`raft_transitions`).
"""

from __future__ import annotations

from typing import Optional

from kraftspec.reference import raft_reconfig, raft_voter_history
from kraftspec.reference.errors import Errors
from kraftspec.reference.frozen import evolve
from kraftspec.reference.raft_messages import Send, VoterChangeResponse
from kraftspec.reference.raft_node import REMOVE_VOTER, Outputs, RaftNode
from kraftspec.reference.raft_state import Leader, ReplicaKey

NOT_LEADER_MESSAGE = ("For requests intended only for the leader, this error indicates that the broker is not the "
                      "current leader. For requests intended for any replica, this error indicates that the broker "
                      "is not a replica of the topic partition.")
VOTER_CHANGE_ERROR_MESSAGES = {Errors.NOT_LEADER_OR_FOLLOWER: NOT_LEADER_MESSAGE,
                               Errors.REQUEST_TIMED_OUT: "The request timed out."}
"""``Errors.message()`` of the errors a pending voter change is answered with without a message of its own: the leader
losing its epoch (``LeaderState.close``) and the change's timer expiring (``maybeExpirePendingOperation``)."""


def voter_change_response(node: RaftNode, api: str, destination: int, cid: int, error: Errors,
                          message: Optional[str]) -> Send:
    """``RaftUtil.addVoterResponse`` / ``removeVoterResponse``: the error and its message to the admin client or the
    auto-joining observer that asked; an error given no message gets the error's own (``Errors.message()``:
    :data:`VOTER_CHANGE_ERROR_MESSAGES`), success none."""
    if message is None and error is not Errors.NONE:
        message = VOTER_CHANGE_ERROR_MESSAGES[error]
    return Send(destination=destination, message=VoterChangeResponse(api=api, source=node.local_id, error=error,
                                                                     error_message=message, correlation_id=cid))


def voter_change_done(node: RaftNode, error: Errors, message: Optional[str], out: Outputs) -> RaftNode:
    """``LeaderState.resetAddVoterHandlerState`` / ``resetRemoveVoterHandlerState``: the pending change is answered
    (unless it already was) and forgotten."""
    change = node.voter_change
    if not change.responded:
        out.append(voter_change_response(node, change.api, change.source, change.correlation_id, error, message))
    return evolve(node, voter_change=None)


def expire_voter_change(node: RaftNode, now: int) -> tuple[RaftNode, Optional[Send]]:
    """``LeaderState.maybeExpirePendingOperation``: a change whose timer (the request timeout) expired is answered
    REQUEST_TIMED_OUT; returns the node and that answer, if any."""
    change = node.voter_change
    if change is None or now < change.deadline:
        return node, None
    out: Outputs = []
    node = voter_change_done(node, Errors.REQUEST_TIMED_OUT, None, out)
    return node, out[0] if out else None


def maybe_complete_voter_change(node: RaftNode, out: Outputs) -> RaftNode:
    """``AddVoterHandler`` / ``RemoveVoterHandler.highWatermarkUpdated``: once the high watermark passes the change's
    VotersRecord (:func:`raft_reconfig.voter_change_committed`) it is answered NONE; a leader that removed itself then
    resigns at the next poll (:func:`raft_reconfig.leader_resigns_after_removal`), §3.15."""
    change, state = node.voter_change, node.state
    if type(state) is not Leader or change.last_offset is None:
        return node
    if not raft_reconfig.voter_change_committed(None if state.high_watermark < 0 else state.high_watermark,
                                                change.last_offset):
        return node
    node = voter_change_done(node, Errors.NONE, None, out)
    local = ReplicaKey(id=node.local_id, directory_id=node.directory_id)
    if change.api == REMOVE_VOTER and raft_reconfig.leader_resigns_after_removal(
            raft_voter_history.last_voter_set(node.dynamic.control), local):
        node = evolve(node, state=evolve(node.state, resign_requested=True))
    return node
