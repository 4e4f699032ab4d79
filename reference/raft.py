"""One KRaft quorum node as a pure state machine: ``step(node, input, now, jitter) -> (node', sends)``.

kraft-semantics §3.2–§3.10; ``KafkaRaftClient.java``. In the etcd-raft "Step" shape: an input is a
request, a response, a timer poll (``Tick``) or a client operation; responses first go through the
handling every role shares (§3.8: older epoch ignored, newer epoch or fencing errors move the node),
then to the role; after every input the node polls its role's timers (as Kafka's ``poll`` does).
Outputs are ``Send`` values. Time (ms) and the random draws (election jitter, the bootstrap server's start
index) are arguments. Not modelled: snapshots, dynamic voters (kraft.version 1 reconfiguration), graceful
shutdown, request back-off. KIP-595 as implemented differs from its text: elections start with a pre-vote
(KIP-996, Prospective), a leader that restarts or resigns is Resigned, and a node without a leader (voter or
observer) discovers it by fetching from one bootstrap server at a time (KAFKA-17030).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

from kraftspec.reference import raft_leader, raft_log, raft_rules, raft_state
from kraftspec.reference.errors import Errors
from kraftspec.reference.frozen import EMPTY_MAP, FrozenMap, builder, evolve, evolver, slotted
from kraftspec.reference.raft_log import RaftLog
from kraftspec.reference.raft_messages import (
    METADATA_PARTITION,
    METADATA_TOPIC_ID,
    NO_DIVERGING_EPOCH,
    Append,
    BeginQuorumEpochRequest,
    DescribeQuorumRequest,
    DescribeQuorumResponse,
    EndQuorumEpochRequest,
    FetchRequest,
    FetchResponse,
    NotLeaderError,
    QuorumEpochResponse,
    RaftFatalError,
    Resign,
    Send,
    Tick,
    VoteRequest,
    VoteResponse,
)
from kraftspec.reference.raft_records import LeaderChangeMessage
from kraftspec.reference.raft_state import (
    NO_LEADER,
    Candidate,
    ElectionState,
    Follower,
    Leader,
    ParkedFetch,
    Prospective,
    QuorumConfig,
    QuorumState,
    ReplicaKey,
    Resigned,
    Unattached,
)

_NONE = Errors.NONE
NOT_LEADER_MESSAGE = ("For requests intended only for the leader, this error indicates that the broker is not the "
                      "current leader. For requests intended for any replica, this error indicates that the broker "
                      "is not a replica of the topic partition.")


@slotted
@dataclass(frozen=True)
class RaftNode:
    """A quorum member or observer: static voters, its state, its log, the quorum-state file, in-flight requests.

    ``stored`` is the quorum-state file (written by durable transitions); ``inflight`` maps a destination
    to (correlation id, send time) of the one request outstanding to it (``RequestManager``).
    """

    local_id: int
    voters: frozenset[int]
    voter_endpoints: FrozenMap[int, tuple[str, ...]]
    config: QuorumConfig
    state: QuorumState
    log: RaftLog
    stored: ElectionState
    inflight: FrozenMap[int, tuple[int, int]] = EMPTY_MAP
    next_correlation_id: int = 1
    directory_id: Optional[str] = None
    cluster_id: Optional[str] = None

    @property
    def is_voter(self) -> bool:
        """``QuorumState.isVoter``: the local id is in the voter set."""
        return self.local_id in self.voters


Outputs = list[Send]


def new_node(local_id: int, voters: frozenset[int], voter_endpoints: FrozenMap[int, tuple[str, ...]],
             config: QuorumConfig = QuorumConfig(), log: RaftLog = RaftLog(), stored: Optional[ElectionState] = None,
             now: int = 0, jitter: int = 0, directory_id: Optional[str] = None,
             cluster_id: Optional[str] = None) -> RaftNode:
    """Start a node: ``QuorumState.initialize`` from the quorum-state file (absent ⇒ epoch 0) and the log (§3.2)."""
    stored = stored if stored is not None else ElectionState(0)
    state = raft_state.initial_state(stored, local_id, voters, log.last_fetched_epoch, voter_endpoints, now, config,
                                     jitter)
    return RaftNode(local_id, voters, voter_endpoints, config, state, log, raft_state.election_state(state, local_id),
                    directory_id=directory_id, cluster_id=cluster_id)


def restart(node: RaftNode, now: int, jitter: int = 0) -> RaftNode:
    """A crash and restart: unflushed records and all soft state are lost; the quorum-state file survives.

    Correlation ids keep counting, standing in for the connections a restart closes: no response to a
    request of the previous incarnation is ever taken for one of the new.
    """
    fresh = new_node(node.local_id, node.voters, node.voter_endpoints, node.config, raft_log.recover(node.log),
                     node.stored, now, jitter, node.directory_id, node.cluster_id)
    return evolve(fresh, next_correlation_id=node.next_correlation_id)


def step(node: RaftNode, message: Any, now: int, jitter: int = 0,
         bootstrap: int = 0) -> tuple[RaftNode, tuple[Send, ...]]:
    """Handle one input, then poll the role's timers once; returns the new node and the messages to send.

    As in Kafka, a transition made by the poll sends its requests on the next poll (the next ``Tick``).
    ``bootstrap`` is ``RequestManager``'s random start index into the bootstrap servers (any non-negative int).
    """
    out: Outputs = []
    node = _HANDLERS[type(message)](node, message, now, jitter, out)
    node = _poll(node, now, jitter, bootstrap, out)
    return node, tuple(out)


# --------------------------------------------------------------------------------------------------
# State changes shared by every handler


def _moved(node: RaftNode, state: QuorumState, durable: bool, out: Outputs) -> RaftNode:
    """Switch state: write the quorum-state file if durable, reset connections, fail parked fetches (§3.2)."""
    old = node.state
    if isinstance(old, Leader):
        for parked in old.parked:
            out.append(Send(parked.source, _fetch_error_response(node, Errors.NOT_LEADER_OR_FOLLOWER, parked.request,
                                                                 state)))
    stored = raft_state.election_state(state, node.local_id) if durable else node.stored
    return evolve(node, state=state, stored=stored, inflight=FrozenMap())


def _to_unattached(node: RaftNode, epoch: int, now: int, jitter: int, out: Outputs,
                   leader_id: int = NO_LEADER) -> RaftNode:
    """``transitionToUnattached`` (durable), keeping the election timer as §3.2 says."""
    deadline = raft_state.election_deadline(node.config, now, jitter, node.is_voter)
    state = raft_state.transition_to_unattached(node.state, epoch, deadline, len(node.voters), leader_id)
    return _moved(node, state, True, out)


def _to_follower(node: RaftNode, epoch: int, leader_id: int, endpoints: tuple[str, ...], now: int,
                 out: Outputs) -> RaftNode:
    """``transitionToFollower``; endpoints missing from the message come from the voter set."""
    endpoints = endpoints or node.voter_endpoints.get(leader_id, ())
    state = raft_state.transition_to_follower(node.state, node.local_id, epoch, leader_id, endpoints,
                                              now + node.config.fetch_timeout_ms)
    return _moved(node, state, True, out)


def _to_prospective(node: RaftNode, now: int, jitter: int, out: Outputs) -> RaftNode:
    """``transitionToProspective``; a single voter goes on to Candidate and Leader at once (§3.5)."""
    deadline = raft_state.election_deadline(node.config, now, jitter)
    node = _moved(node, raft_state.transition_to_prospective(node.state, node.local_id, node.is_voter, deadline),
                  False, out)
    return _maybe_prospective_won(node, now, jitter, out)


def _maybe_prospective_won(node: RaftNode, now: int, jitter: int, out: Outputs) -> RaftNode:
    """``maybeTransitionToCandidate``: a majority of pre-votes (self included) makes a Candidate (§3.5)."""
    state = node.state
    if raft_rules.election_won(len(node.voters), len(state.granted & node.voters)):
        return _to_candidate(node, now, jitter, out)
    return node


def _to_candidate(node: RaftNode, now: int, jitter: int, out: Outputs) -> RaftNode:
    """``transitionToCandidate`` (durable vote for itself); a lone voter is at once Leader (§3.5)."""
    deadline = raft_state.election_deadline(node.config, now, jitter)
    node = _moved(node, raft_state.transition_to_candidate(node.state, node.local_id, deadline), True, out)
    return _maybe_candidate_won(node, now, out)


def _maybe_candidate_won(node: RaftNode, now: int, out: Outputs) -> RaftNode:
    """``maybeTransitionToLeader``: a majority of granted votes (self included) makes the Leader (§3.5)."""
    if raft_rules.election_won(len(node.voters), len(node.state.granted & node.voters)):
        return _to_leader(node, now, out)
    return node


def _to_leader(node: RaftNode, now: int, out: Outputs) -> RaftNode:
    """``onBecomeLeader``: epochStartOffset = LEO, then the LeaderChange control record is appended and flushed."""
    leader = raft_state.transition_to_leader(node.state, node.local_id, node.voters, node.log.end_offset, now,
                                             node.config)
    node = _moved(node, leader, True, out)
    record = LeaderChangeMessage(node.local_id, tuple(sorted(node.voters)), tuple(sorted(leader.granting_voters)))
    return _leader_append(node, (record,), now, out)


def _leader_append(node: RaftNode, records: tuple[Any, ...], now: int, out: Outputs) -> RaftNode:
    """``appendAsLeader`` + ``flushLeaderLog``: the leader's end offset counts once flushed; parked fetches retry."""
    leader = node.state
    log = raft_log.flush(raft_log.append_as_leader(node.log, records, leader.epoch))
    leader = raft_leader.update_local_end_offset(leader, log.end_offset)
    node = evolve(node, log=log, state=leader)
    return _complete_parked(node, now, out, lambda parked: True)


def _resign(node: RaftNode, now: int, jitter: int, out: Outputs) -> RaftNode:
    """``transitionToResigned``: EndQuorumEpoch to the other voters, best successors first (§3.6)."""
    successors = raft_leader.voters_by_descending_end_offset(node.state)
    deadline = raft_state.election_deadline(node.config, now, jitter)
    return _moved(node, raft_state.transition_to_resigned(node.state, successors, node.voters, deadline), False, out)


def _maybe_transition(node: RaftNode, leader_id: int, epoch: int, endpoints: tuple[str, ...], now: int, jitter: int,
                      out: Outputs) -> RaftNode:
    """``maybeTransition`` (§3.8): a newer epoch or a newly learnt (better reachable) leader moves the node."""
    state = node.state
    local_leader = raft_state.leader_of(state)
    if epoch == state.epoch and leader_id != NO_LEADER and local_leader != NO_LEADER and leader_id != local_leader:
        raise RaftFatalError(f"leader {leader_id} in epoch {epoch} conflicts with known leader {local_leader}")
    if epoch > state.epoch:
        if leader_id != NO_LEADER:
            return _to_follower(node, epoch, leader_id, endpoints, now, out)
        return _to_unattached(node, epoch, now, jitter, out)
    endpoints = endpoints or node.voter_endpoints.get(leader_id, ())
    if leader_id != NO_LEADER and (local_leader == NO_LEADER or len(endpoints) > len(_leader_endpoints(node))):
        return _to_follower(node, epoch, leader_id, endpoints, now, out)
    return node


def _leader_endpoints(node: RaftNode) -> tuple[str, ...]:
    """``quorum.leaderEndpoints()``: the followed leader's, our own as leader/resigned, else none."""
    state = node.state
    if isinstance(state, (Leader, Resigned)):
        return node.voter_endpoints.get(node.local_id, ())
    return getattr(state, "leader_endpoints", ())


def _common_response(node: RaftNode, error: Errors, leader_id: int, epoch: int, endpoints: tuple[str, ...],
                     now: int, jitter: int, out: Outputs) -> tuple[RaftNode, bool]:
    """``maybeHandleCommonResponse`` (§3.8): (node, handled). Unhandled means "go on with the role's handling"."""
    local_epoch = node.state.epoch
    if epoch < local_epoch or error == Errors.UNKNOWN_LEADER_EPOCH:
        return node, True
    if epoch > local_epoch or error in (Errors.FENCED_LEADER_EPOCH, Errors.NOT_LEADER_OR_FOLLOWER):
        return _maybe_transition(node, leader_id, epoch, endpoints, now, jitter, out), True
    if leader_id != NO_LEADER and raft_state.leader_of(node.state) == NO_LEADER:
        node = _to_follower(node, epoch, leader_id, endpoints, now, out)
        return node, error != Errors.NONE
    if error == Errors.BROKER_NOT_AVAILABLE:
        return node, True
    if error == Errors.INVALID_REQUEST:
        raise RaftFatalError("a request from this node was rejected as INVALID_REQUEST")
    return node, False


def _expected(node: RaftNode, source: int, correlation_id: int) -> Optional[RaftNode]:
    """``RequestManager.isResponseExpected``: the node without the in-flight entry, or None to drop the response."""
    pending = node.inflight.get(source)
    if pending is None or pending[0] != correlation_id:
        return None
    return evolve(node, inflight=node.inflight.remove(source))


def _send_request(node: RaftNode, destination: int, request: Any, now: int, out: Outputs) -> RaftNode:
    """Send ``request`` with a fresh correlation id and remember it as outstanding to ``destination``."""
    cid = node.next_correlation_id
    out.append(Send(destination, evolve(request, correlation_id=cid)))
    return evolve(node, inflight=node.inflight.set(destination, (cid, now)), next_correlation_id=cid + 1)


def _ready(node: RaftNode, destination: int, now: int) -> bool:
    """No request outstanding to ``destination``, or it timed out (``controller.quorum.request.timeout.ms``)."""
    pending = node.inflight.get(destination)
    return pending is None or now >= pending[1] + node.config.request_timeout_ms


def _without_timed_out(node: RaftNode, now: int) -> RaftNode:
    """``RequestManager.hasAnyInflightRequest`` first forgets the requests that timed out (their answers are then
    dropped); the node has a request in flight iff ``inflight`` is still not empty."""
    timeout = node.config.request_timeout_ms
    live = {dst: pending for dst, pending in node.inflight.items() if now < pending[1] + timeout}
    return node if len(live) == len(node.inflight) else evolve(node, inflight=FrozenMap(live))


def _valid_voter_key(node: RaftNode, voter_id: Optional[int], voter_directory_id: Optional[str]) -> bool:
    """``isValidVoterKey``: an absent key matches; a directory is compared only when given (§3.4 step 6)."""
    if voter_id is None:
        return True
    return voter_id == node.local_id and (voter_directory_id is None or voter_directory_id == node.directory_id)


def _voter_only_error(node: RaftNode, remote_id: int, remote_epoch: int) -> Optional[Errors]:
    """``validateVoterOnlyRequest``: an older epoch is fenced; a negative id is invalid (§3.4 step 4, §3.9)."""
    if remote_epoch < node.state.epoch:
        return Errors.FENCED_LEADER_EPOCH
    if remote_id < 0:
        return Errors.INVALID_REQUEST
    return None


# --------------------------------------------------------------------------------------------------
# Vote (§3.4, §3.5)


def can_grant_vote(node: RaftNode, candidate: ReplicaKey, log_up_to_date: bool, pre_vote: bool) -> bool:
    """``QuorumState.canGrantVote`` for the node's current state (§3.4 table)."""
    state = node.state
    voted = getattr(state, "voted_key", None)
    matches = voted is not None and raft_rules.voted_key_matches(voted.id, voted.directory_id, candidate.id,
                                                                 candidate.directory_id)
    return raft_rules.grant_vote(state.role, pre_vote, log_up_to_date, voted is not None, matches,
                                 raft_state.leader_of(state) != NO_LEADER, getattr(state, "has_fetched", False))


def _vote_response(node: RaftNode, partition_error: Errors, granted: bool, correlation_id: int) -> VoteResponse:
    """``buildVoteResponse``: the receiver's epoch, leader and leader endpoints after handling (§3.4 step 10)."""
    return VoteResponse(node.local_id, Errors.NONE, partition_error, node.state.epoch,
                        raft_state.leader_of(node.state), granted, _leader_endpoints(node), correlation_id)


def _on_vote_request(node: RaftNode, req: VoteRequest, now: int, jitter: int, out: Outputs) -> RaftNode:
    """``handleVoteRequest`` in the order of §3.4."""
    src, cid = req.replica_id, req.correlation_id
    if req.cluster_id is not None and req.cluster_id != node.cluster_id:
        out.append(Send(src, VoteResponse(node.local_id, Errors.INCONSISTENT_CLUSTER_ID, correlation_id=cid)))
        return node
    if req.topic_partition != METADATA_PARTITION:
        out.append(Send(src, VoteResponse(node.local_id, Errors.INVALID_REQUEST, correlation_id=cid)))
        return node
    if (req.last_offset < 0 or req.last_offset_epoch < 0
            or raft_rules.is_illegal_vote_epoch(req.pre_vote, req.last_offset_epoch, req.replica_epoch)):
        out.append(Send(src, _vote_response(node, Errors.INVALID_REQUEST, False, cid)))
        return node
    error = _voter_only_error(node, req.replica_id, req.replica_epoch)
    if error is not None:
        out.append(Send(src, _vote_response(node, error, False, cid)))
        return node
    if req.replica_epoch > node.state.epoch:
        node = _to_unattached(node, req.replica_epoch, now, jitter, out)
    if not _valid_voter_key(node, req.voter_id, req.voter_directory_id):
        out.append(Send(src, _vote_response(node, Errors.INVALID_VOTER_KEY, False, cid)))
        return node
    up_to_date = raft_rules.is_log_up_to_date(req.last_offset_epoch, req.last_offset, node.log.last_fetched_epoch,
                                              node.log.end_offset)
    candidate = ReplicaKey(req.replica_id, req.replica_directory_id)
    granted = can_grant_vote(node, candidate, up_to_date, req.pre_vote)
    state = node.state
    if (granted and not req.pre_vote and isinstance(state, (Unattached, Prospective))
            and state.voted_key is None):
        deadline = raft_state.election_deadline(node.config, now, jitter)
        voted = raft_state.transition_to_unattached_voted(state, state.epoch, candidate, deadline)
        node = evolve(node, state=voted, stored=raft_state.election_state(voted, node.local_id))
    out.append(Send(src, _vote_response(node, Errors.NONE, granted, cid)))
    return node


def _on_vote_response(node: RaftNode, resp: VoteResponse, now: int, jitter: int, out: Outputs) -> RaftNode:
    """``handleVoteResponse``: pre-votes may flip, standard votes may not; UNSUPPORTED_VERSION skips pre-vote."""
    expected = _expected(node, resp.source, resp.correlation_id)
    if expected is None:
        return node
    node = expected
    if resp.error != Errors.NONE:
        if resp.error == Errors.UNSUPPORTED_VERSION and isinstance(node.state, Prospective):
            return _to_candidate(node, now, jitter, out)
        return node
    node, handled = _common_response(node, resp.partition_error, resp.leader_id, resp.leader_epoch,
                                     resp.leader_endpoints, now, jitter, out)
    if handled or resp.partition_error != Errors.NONE:
        return node
    state, voter = node.state, resp.source
    if isinstance(state, Candidate):
        if (voter in state.rejected and resp.vote_granted) or (voter in state.granted and not resp.vote_granted):
            raise RaftFatalError(f"voter {voter} changed its vote in epoch {state.epoch}")
        if resp.vote_granted:
            node = evolve(node, state=evolve(state, granted=state.granted | {voter}))
            return _maybe_candidate_won(node, now, out)
        return evolve(node, state=evolve(state, rejected=state.rejected | {voter}))
    if isinstance(state, Prospective):
        if resp.vote_granted:
            state = evolve(state, granted=state.granted | {voter}, rejected=state.rejected - {voter})
            return _maybe_prospective_won(evolve(node, state=state), now, jitter, out)
        state = evolve(state, rejected=state.rejected | {voter}, granted=state.granted - {voter})
        node = evolve(node, state=state)
        if raft_rules.election_lost(len(node.voters), len(state.granted & node.voters),
                                    len(state.rejected & node.voters)):
            return _prospective_lost(node, now, jitter, out)
    return node


def _prospective_lost(node: RaftNode, now: int, jitter: int, out: Outputs) -> RaftNode:
    """``prospectiveTransitionAfterElectionLoss``: back to the known leader, else Unattached in the epoch (§3.5)."""
    state = node.state
    if state.leader_id != NO_LEADER and state.leader_endpoints:
        return _to_follower(node, state.epoch, state.leader_id, state.leader_endpoints, now, out)
    return _to_unattached(node, state.epoch, now, jitter, out, state.leader_id)


# --------------------------------------------------------------------------------------------------
# Fetch (§3.7)


def _fetch_error_response(node: RaftNode, error: Errors, req: FetchRequest,
                          state: Optional[QuorumState] = None) -> FetchResponse:
    """``buildEmptyFetchResponse``: a partition error with the current leader and epoch of ``state`` (§3.7)."""
    state = state if state is not None else node.state
    return FetchResponse(node.local_id, Errors.NONE, error, state.epoch, raft_state.leader_of(state),
                         _leader_endpoints(evolve(node, state=state)), -1, 0, NO_DIVERGING_EPOCH, (),
                         req.correlation_id)


_fetch_response = builder(FetchResponse)
_send = builder(Send)
_evolve_node = evolver(RaftNode)


def _try_complete_fetch(node: RaftNode, req: FetchRequest, now: int) -> tuple[RaftNode, FetchResponse]:
    """``tryCompleteFetchRequest``: leader validation, then diverging epoch or records (valid fetches update
    the replica state, check quorum and perhaps the HW)."""
    state = node.state
    error = raft_rules.fetch_epoch_error(req.current_leader_epoch, state.epoch, type(state) is Leader)
    if error:
        return node, _fetch_error_response(node, Errors[error], req)
    log = node.log
    fetch_offset = req.fetch_offset
    diverging = raft_log.validate_offset_and_epoch(log, fetch_offset, req.last_fetched_epoch)
    local = node.local_id
    try:  # a subscript costs less than ``get``; a leader outside the voter set has no endpoints
        endpoints = node.voter_endpoints[local]
    except KeyError:
        endpoints = ()
    if diverging is not None:
        return node, FetchResponse(local, _NONE, _NONE, state.epoch, local, endpoints, state.high_watermark, 0,
                                   diverging, (), req.correlation_id)
    config = node.config
    leader = raft_leader.update_replica_state(state, req.replica_id, fetch_offset, now, config)
    records = log.entries[fetch_offset:fetch_offset + config.fetch_max_records]  # ``read``, uncommitted
    return _evolve_node(node, state=leader), _fetch_response(
        local, _NONE, _NONE, leader.epoch, local, endpoints, leader.high_watermark, 0, NO_DIVERGING_EPOCH, records,
        req.correlation_id)


def _on_fetch_request(node: RaftNode, req: FetchRequest, now: int, jitter: int, out: Outputs) -> RaftNode:
    """``handleFetchRequest``: validation order of §3.7; an empty answer may be parked up to maxWaitMs."""
    src = req.replica_id
    if req.cluster_id is not None and req.cluster_id != node.cluster_id:
        out.append(Send(src, FetchResponse(node.local_id, Errors.INCONSISTENT_CLUSTER_ID,
                                           correlation_id=req.correlation_id)))
        return node
    if ((req.topic_partition is not METADATA_PARTITION and req.topic_partition != METADATA_PARTITION)
            or req.topic_id != METADATA_TOPIC_ID):  # the identity test spares a tuple comparison
        out.append(Send(src, FetchResponse(node.local_id, Errors.INVALID_REQUEST, correlation_id=req.correlation_id)))
        return node
    if (req.max_wait_ms < 0 or req.fetch_offset < 0 or req.last_fetched_epoch < 0
            or req.last_fetched_epoch > req.current_leader_epoch):
        out.append(Send(src, _fetch_error_response(node, Errors.INVALID_REQUEST, req)))
        return node
    old = node.state  # a Leader if the fetch leaves the node one: answering a fetch changes no role
    node, resp = _try_complete_fetch(node, req, now)
    if (req.max_wait_ms == 0 or resp.records or resp.partition_error is not _NONE
            or resp.diverging_epoch != NO_DIVERGING_EPOCH or req.high_watermark < resp.high_watermark):
        out.append(_send(src, resp))
    else:
        leader = node.state
        node = evolve(node, state=evolve(leader, parked=leader.parked + (ParkedFetch(src, req, now + req.max_wait_ms),)))
    state = node.state
    if type(state) is Leader and state.parked and state.high_watermark != old.high_watermark:
        node = _complete_parked_except(node, src, now, out)
    return node


def _complete_parked_except(node: RaftNode, src: int, now: int, out: Outputs) -> RaftNode:
    """The HW moved on ``src``'s fetch: complete the fetches parked by the other replicas (§3.7)."""
    return _complete_parked(node, now, out, lambda parked: parked.source != src)


def _expire_parked(node: RaftNode, now: int, out: Outputs) -> RaftNode:
    """Complete the parked fetches whose maxWaitMs deadline has passed (§3.7)."""
    return _complete_parked(node, now, out, lambda parked: parked.deadline <= now)


def _complete_parked(node: RaftNode, now: int, out: Outputs, which: Callable[[ParkedFetch], bool]) -> RaftNode:
    """Complete parked fetches selected by ``which`` (records appended, HW moved, or deadline passed)."""
    leader = node.state
    done = tuple(p for p in leader.parked if which(p))
    if not done:
        return node
    node = evolve(node, state=evolve(leader, parked=tuple(p for p in leader.parked if not which(p))))
    for parked in done:
        node, resp = _try_complete_fetch(node, parked.request, now)
        out.append(Send(parked.source, resp))
    return node


def _on_fetch_response(node: RaftNode, resp: FetchResponse, now: int, jitter: int, out: Outputs) -> RaftNode:
    """``handleFetchResponse``: truncate on a diverging epoch, else append and take min(LEO, HW) (§3.7)."""
    expected = _expected(node, resp.source, resp.correlation_id)
    if expected is None or resp.error != Errors.NONE:
        return node if expected is None else expected
    node, handled = _common_response(expected, resp.partition_error, resp.leader_id, resp.leader_epoch,
                                     resp.leader_endpoints, now, jitter, out)
    if handled or resp.partition_error != Errors.NONE:
        return node
    state = node.state
    if not isinstance(state, Follower):
        raise RaftFatalError(f"fetch response handled in state {state.role}")
    log = node.log
    hw = state.high_watermark
    if resp.diverging_epoch[0] >= 0:
        epoch, end_offset = resp.diverging_epoch
        if hw >= 0 and end_offset < hw:
            raise RaftFatalError(f"leader requested truncation to {end_offset}, below the high watermark {hw}")
        log, _ = raft_log.truncate_to_end_offset(log, epoch, end_offset)
    else:
        log = raft_log.append_as_follower(log, resp.records)
        if node.is_voter:
            log = raft_log.flush(log)
        try:
            hw = raft_rules.follower_high_watermark(hw, log.end_offset, resp.high_watermark)
        except ValueError as exc:
            raise RaftFatalError(str(exc)) from exc
    state = Follower(state.epoch, state.leader_id, state.leader_endpoints, now + node.config.fetch_timeout_ms,
                     state.voted_key, hw, True)
    return evolve(node, state=state, log=log)


# --------------------------------------------------------------------------------------------------
# BeginQuorumEpoch / EndQuorumEpoch (§3.9) and DescribeQuorum (§3.10)


def _epoch_response(node: RaftNode, api: str, partition_error: Errors, cid: int) -> QuorumEpochResponse:
    """``buildBegin/EndQuorumEpochResponse``: the receiver's epoch, leader and endpoints (§3.9)."""
    return QuorumEpochResponse(node.local_id, api, Errors.NONE, partition_error, node.state.epoch,
                               raft_state.leader_of(node.state), _leader_endpoints(node), cid)


def _rejected_quorum_epoch_request(node: RaftNode, req: BeginQuorumEpochRequest | EndQuorumEpochRequest, api: str,
                                   out: Outputs) -> bool:
    """The checks Begin/EndQuorumEpoch share (§3.9): cluster id, metadata partition, then the epoch rules.

    On a failure the error response is appended to ``out`` and True is returned.
    """
    src, cid = req.leader_id, req.correlation_id
    if req.cluster_id is not None and req.cluster_id != node.cluster_id:
        out.append(Send(src, QuorumEpochResponse(node.local_id, api, Errors.INCONSISTENT_CLUSTER_ID, correlation_id=cid)))
        return True
    if req.topic_partition != METADATA_PARTITION:
        out.append(Send(src, QuorumEpochResponse(node.local_id, api, Errors.INVALID_REQUEST, correlation_id=cid)))
        return True
    error = _voter_only_error(node, req.leader_id, req.leader_epoch)
    if error is not None:
        out.append(Send(src, _epoch_response(node, api, error, cid)))
        return True
    return False


def _on_begin_quorum_epoch(node: RaftNode, req: BeginQuorumEpochRequest, now: int, jitter: int,
                           out: Outputs) -> RaftNode:
    """``handleBeginQuorumEpochRequest``: validate, follow the new leader, then check the voter key."""
    api, src, cid = "BeginQuorumEpoch", req.leader_id, req.correlation_id
    if _rejected_quorum_epoch_request(node, req, api, out):
        return node
    endpoints = req.leader_endpoints or node.voter_endpoints.get(req.leader_id, ())
    node = _maybe_transition(node, req.leader_id, req.leader_epoch, endpoints, now, jitter, out)
    if not _valid_voter_key(node, req.voter_id, req.voter_directory_id):
        out.append(Send(src, _epoch_response(node, api, Errors.INVALID_VOTER_KEY, cid)))
        return node
    out.append(Send(src, _epoch_response(node, api, Errors.NONE, cid)))
    return node


def _on_end_quorum_epoch(node: RaftNode, req: EndQuorumEpochRequest, now: int, jitter: int,
                         out: Outputs) -> RaftNode:
    """``handleEndQuorumEpochRequest``: a follower of the resigning leader waits its backoff, then campaigns."""
    api, src, cid = "EndQuorumEpoch", req.leader_id, req.correlation_id
    if _rejected_quorum_epoch_request(node, req, api, out):
        return node
    node = _maybe_transition(node, req.leader_id, req.leader_epoch, node.voter_endpoints.get(req.leader_id, ()), now,
                             jitter, out)
    state = node.state
    if isinstance(state, Follower) and state.leader_id == req.leader_id:
        successors = req.preferred_successors
        position = successors.index(node.local_id) if node.local_id in successors else -1
        backoff = raft_rules.end_quorum_epoch_backoff(position, len(successors), node.config.election_backoff_max_ms)
        node = evolve(node, state=evolve(state, fetch_deadline=now + backoff))
    out.append(Send(src, _epoch_response(node, api, Errors.NONE, cid)))
    return node


def _on_quorum_epoch_response(node: RaftNode, resp: QuorumEpochResponse, now: int, jitter: int,
                              out: Outputs) -> RaftNode:
    """Begin/EndQuorumEpoch responses: common handling, then the leader (or resigned leader) records the ack."""
    expected = _expected(node, resp.source, resp.correlation_id)
    if expected is None or resp.error != Errors.NONE:
        return node if expected is None else expected
    node, handled = _common_response(expected, resp.partition_error, resp.leader_id, resp.leader_epoch,
                                     resp.leader_endpoints, now, jitter, out)
    if handled or resp.partition_error != Errors.NONE:
        return node
    state = node.state
    if isinstance(state, Leader) and resp.api == "BeginQuorumEpoch":
        return evolve(node, state=raft_leader.acknowledge(state, resp.source))
    if isinstance(state, Resigned) and resp.api == "EndQuorumEpoch":
        return evolve(node, state=evolve(state, unacked_voters=state.unacked_voters - {resp.source}))
    return node


def _on_describe_quorum(node: RaftNode, req: DescribeQuorumRequest, now: int, jitter: int, out: Outputs) -> RaftNode:
    """``handleDescribeQuorumRequest`` (§3.10): only the leader describes; others answer NOT_LEADER_OR_FOLLOWER."""
    if req.topic_partition != METADATA_PARTITION:
        out.append(Send(req.source, DescribeQuorumResponse(Errors.NONE, Errors.UNKNOWN_TOPIC_OR_PARTITION)))
        return node
    state = node.state
    if not isinstance(state, Leader):
        out.append(Send(req.source, DescribeQuorumResponse(Errors.NONE, Errors.NOT_LEADER_OR_FOLLOWER,
                                                           NOT_LEADER_MESSAGE)))
        return node
    voters, observers, state = raft_leader.describe(state, now)
    nodes = tuple(sorted(node.voter_endpoints.items())) if req.version >= 2 else ()
    out.append(Send(req.source, DescribeQuorumResponse(Errors.NONE, Errors.NONE, None, node.local_id, state.epoch,
                                                       state.high_watermark, voters, observers, nodes)))
    return evolve(node, state=state)


# --------------------------------------------------------------------------------------------------
# Client operations and timers


def _on_append(node: RaftNode, op: Append, now: int, jitter: int, out: Outputs) -> RaftNode:
    """``scheduleAppend``: only a leader appends; others raise :class:`NotLeaderError` (scenario 94)."""
    if not isinstance(node.state, Leader):
        raise NotLeaderError(f"node {node.local_id} is {node.state.role} in epoch {node.state.epoch}, not leader")
    return _leader_append(node, op.records, now, out)


def _on_resign(node: RaftNode, op: Resign, now: int, jitter: int, out: Outputs) -> RaftNode:
    """``resign(epoch)``: a leader of that epoch resigns; otherwise nothing happens."""
    if isinstance(node.state, Leader) and node.state.epoch == op.epoch:
        return _resign(node, now, jitter, out)
    return node


def _on_tick(node: RaftNode, tick: Tick, now: int, jitter: int, out: Outputs) -> RaftNode:
    """A poll with no input: the timers are handled by :func:`_poll`, which runs after every input."""
    return node


def _fetch_request(node: RaftNode) -> FetchRequest:
    """``buildFetchRequest``: the follower's position (LEO, last fetched epoch) in its current epoch."""
    hw = getattr(node.state, "high_watermark", -1)
    return FetchRequest(node.local_id, node.state.epoch, node.log.end_offset, node.log.last_fetched_epoch,
                        node.config.fetch_max_wait_ms, hw, node.directory_id, node.cluster_id)


def _fetch_any_bootstrap(node: RaftNode, now: int, bootstrap: int, out: Outputs) -> RaftNode:
    """``maybeSendFetchToAnyBootstrap``: nothing while any request is in flight; else one Fetch to the bootstrap
    server ``findReadyBootstrapServer`` picks from the start index ``bootstrap``. With static voters the bootstrap
    servers are every voter, the local one included (``KafkaRaftClient.initialize``)."""
    node = _without_timed_out(node, now)
    if node.inflight:
        return node
    server = raft_rules.bootstrap_server(tuple(sorted(node.voters)), bootstrap)
    return _send_request(node, server, _fetch_request(node), now, out)


def _fetch_best_node(node: RaftNode, now: int, bootstrap: int, out: Outputs) -> RaftNode:
    """``maybeSendFetchToBestNode``: when the leader's Fetch timed out, fetch from a bootstrap server instead (which
    may be the leader again); otherwise fetch from the leader once no request at all is in flight."""
    leader = node.state.leader_id
    if leader in node.inflight and _ready(node, leader, now):  # hasRequestTimedOut(leader): reset its connection
        return _fetch_any_bootstrap(node, now, bootstrap, out)
    node = _without_timed_out(node, now)
    return node if node.inflight else _send_request(node, leader, _fetch_request(node), now, out)


def _send_to_ready(node: RaftNode, targets: Any, request: Any, now: int, out: Outputs) -> RaftNode:
    """Send ``request`` to each target (not itself) that has nothing outstanding (``RequestManager``)."""
    for target in sorted(targets):
        if target != node.local_id and _ready(node, target, now):
            node = _send_request(node, target, request, now, out)
    return node


def _vote_request(node: RaftNode, pre_vote: bool) -> VoteRequest:
    """A (pre-)vote request for the current epoch with the log's (last fetched epoch, LEO) (§3.5)."""
    return VoteRequest(node.local_id, node.state.epoch, node.log.last_fetched_epoch, node.log.end_offset, pre_vote,
                       node.directory_id, cluster_id=node.cluster_id)


def _poll(node: RaftNode, now: int, jitter: int, bootstrap: int, out: Outputs) -> RaftNode:
    """``pollCurrentState``: expire the role's timer, otherwise send what is due (§3.5, §3.6); ``bootstrap`` is the
    random start index of :func:`_fetch_any_bootstrap`."""
    state = node.state
    if type(state) is Leader:
        if now >= state.check_quorum_deadline and raft_leader.check_quorum_expired(state, now):
            return _resign(node, now, jitter, out)
        if state.parked:
            node = _expire_parked(node, now, out)
            state = node.state
        if now >= state.begin_quorum_deadline:
            targets = raft_leader.voters_needing_begin_quorum_epoch(node.state, now, node.config)
            request = BeginQuorumEpochRequest(node.local_id, state.epoch, _leader_endpoints(node),
                                              cluster_id=node.cluster_id)
            for target in targets:  # ``maybeSendRequests``: only to a voter with no request outstanding
                if _ready(node, target, now):
                    node = _send_request(node, target, evolve(request, voter_id=target), now, out)
            deadline = now + node.config.begin_quorum_epoch_timeout_ms
            node = evolve(node, state=evolve(node.state, begin_quorum_deadline=deadline))
        return node
    if isinstance(state, Follower):  # an observer's fetch timeout fires nothing since KAFKA-19354
        if node.is_voter and now >= state.fetch_deadline:
            return _to_prospective(node, now, jitter, out)
        return _fetch_best_node(node, now, bootstrap, out)
    if isinstance(state, Unattached):
        if now >= state.election_deadline and raft_rules.can_start_election(node.is_voter):
            return _to_prospective(node, now, jitter, out)
        return _fetch_any_bootstrap(node, now, bootstrap, out)
    if isinstance(state, Prospective):
        if now >= state.election_deadline:
            return _prospective_lost(node, now, jitter, out)
        return _send_to_ready(node, node.voters - state.granted - state.rejected, _vote_request(node, True), now, out)
    if isinstance(state, Candidate):
        if now >= state.election_deadline:
            return _to_prospective(node, now, jitter, out)
        if raft_rules.election_lost(len(node.voters), len(state.granted & node.voters),
                                    len(state.rejected & node.voters)):
            return node
        return _send_to_ready(node, node.voters - state.granted - state.rejected, _vote_request(node, False), now, out)
    if now >= state.election_deadline:
        return _to_unattached(node, state.epoch + 1, now, jitter, out)
    request = EndQuorumEpochRequest(node.local_id, state.epoch, state.preferred_successors, node.cluster_id)
    return _send_to_ready(node, state.unacked_voters, request, now, out)


_HANDLERS: dict[type, Callable[..., RaftNode]] = {
    VoteRequest: _on_vote_request,
    VoteResponse: _on_vote_response,
    FetchRequest: _on_fetch_request,
    FetchResponse: _on_fetch_response,
    BeginQuorumEpochRequest: _on_begin_quorum_epoch,
    EndQuorumEpochRequest: _on_end_quorum_epoch,
    QuorumEpochResponse: _on_quorum_epoch_response,
    DescribeQuorumRequest: _on_describe_quorum,
    Append: _on_append,
    Resign: _on_resign,
    Tick: _on_tick,
}
