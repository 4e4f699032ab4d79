"""Graceful shutdown and EndQuorumEpoch's back-off explored under ``KRaftShutdown.cfg``'s bounds, in the spec's
vocabulary.

The node is a ``raft.RaftNode`` and every spec action is a ``raft.step`` (an input and the poll that follows it):
``HandleShutdown`` ~ ``Shutdown(ShutdownTimeout)``, ``Poll`` ~ a ``Tick`` one ms later,
``HandleEndQuorumEpochRequest`` / ``HandleBeginQuorumEpochRequest`` ~ those requests from the other voter, and
``HandleAppend`` ~ ``Append``. The answers of the other voters (``HandleVoteResponsePreVote``, ``HandleVoteResponse``,
``HandleQuorumEpochResponse``) follow a ``Tick`` at the same time, whose poll sends the requests they answer; each
answer carries the correlation id of the request the node has outstanding. Every input is tried in every state: a
node whose shutdown finished refuses each (``ShutDownError``), a node that is not leader refuses an append
(``NotLeaderError``); a refused input is no edge.

The reference runs with its election, fetch, request and check-quorum timeouts (``FAR`` ms) beyond ``MaxTime``, jitter
0 and ``election_backoff_max_ms`` = ``BackoffMax``, so only the shutdown's timer and the back-off fire within the
bounds. Hidden reference state (requests in flight, a Candidate's votes, timers beyond the bounds) is not projected.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Iterator, Mapping, Optional

from kraftspec.reference import raft, raft_state
from kraftspec.reference.frozen import FrozenMap, evolve
from kraftspec.reference.raft_messages import (
    Append,
    BeginQuorumEpochRequest,
    EndQuorumEpochRequest,
    NotLeaderError,
    QuorumEpochResponse,
    ShutDownError,
    Shutdown,
    Tick,
    VoteResponse,
)
from kraftspec.reference.raft_state import ElectionState, QuorumConfig, ReplicaKey
from kraftspec.spec.agree import AgreementModel, Step
from kraftspec.spec.tla_values import TlaValue

FAR = 1_000
"""The election, fetch and request timeouts (ms): beyond ``MaxTime`` plus any shutdown timer or back-off."""
NONE = -1
ENVIRONMENT_ACTIONS = frozenset({"Poll"})
"""The action of ``KRaftShutdown.tla``'s ``Next`` that moves the environment (time); the others are the node's handlers
of the inputs its environment sends."""
DEADLINES = ("election_deadline", "fetch_deadline", "update_voter_deadline", "check_quorum_deadline",
             "begin_quorum_deadline")
ROLES = {raft_state.Leader: "Leader", raft_state.Resigned: "Resigned", raft_state.Follower: "Follower",
         raft_state.Unattached: "Unattached", raft_state.Prospective: "Prospective",
         raft_state.Candidate: "Candidate"}


@dataclass(frozen=True)
class ExploredState:
    """The node and the clock."""

    node: raft.RaftNode
    now: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "node", canonical_node(self.node))


def canonical_node(node: raft.RaftNode, keep_send_times: bool = False) -> raft.RaftNode:
    """The node with its hidden bookkeeping renumbered: requests in flight carry correlation ids 1, 2, ... by
    destination and send time 0 (unless ``keep_send_times``: where the request timeout lies within the bounds), and
    timers at or past ``FAR`` are ``FAR``. Neither decides a step within the bounds (no request times out and no such
    timer fires before ``MaxTime``), and without it the ids and timers would grow forever along a cycle of the spec's
    graph (a pre-vote lost, then EndQuorumEpoch again; an answer, then the same request again)."""
    inflight = FrozenMap({d: (i, node.inflight[d][1] if keep_send_times else 0)
                          for i, d in enumerate(sorted(node.inflight), start=1)})
    timers = {name: FAR for name in DEADLINES if getattr(node.state, name, 0) >= FAR}
    state = evolve(node.state, **timers) if timers else node.state
    return evolve(node, inflight=inflight, next_correlation_id=len(inflight) + 1, state=state)


def _config(constants: Mapping[str, TlaValue]) -> QuorumConfig:
    return QuorumConfig(election_timeout_ms=FAR, fetch_timeout_ms=FAR, request_timeout_ms=FAR,
                        election_backoff_max_ms=int(constants["BackoffMax"]))


def voter_endpoints(ids: frozenset[int]) -> FrozenMap[int, tuple[str, ...]]:
    return FrozenMap({i: (f"CONTROLLER://controller{i}:9093",) for i in sorted(ids)})


def _others(node: raft.RaftNode) -> list[int]:
    return sorted(node.voters - {node.local_id})


def _respond(node: raft.RaftNode, source: int, response: Any, now: int) -> raft.RaftNode:
    """``response`` from ``source`` to the request the node has outstanding to it."""
    correlation_id, _ = node.inflight[source]
    return raft.step(node, replace(response, correlation_id=correlation_id), now)[0]


def initial_states(constants: Mapping[str, TlaValue]) -> Iterator[ExploredState]:
    """``Init``: epoch 1 as Leader (elected: it wrote its LeaderChange record), Follower of the lowest other voter,
    Unattached or Candidate (restarted from the quorum-state file); the only voter leads at once and writes its
    LeaderChange record at its first poll (``KafkaRaftClient.initialize``), at time 0; an observer follows or has no
    leader."""
    local, config = int(constants["Local"]), _config(constants)
    ids = frozenset(constants["Ids"])
    for voters in sorted((frozenset(v) for v in constants["VoterSets"]), key=sorted):
        endpoints = voter_endpoints(ids)

        def start(stored: Optional[ElectionState]) -> raft.RaftNode:
            return raft.new_node(local, voters, endpoints, config, stored=stored)

        others = sorted(voters - {local})
        if voters == {local}:
            yield ExploredState(raft.step(start(None), Tick(), 0)[0], 0)
            continue
        yield ExploredState(start(ElectionState(epoch=1, leader_id=others[0])), 0)
        yield ExploredState(start(ElectionState(epoch=1)), 0)
        if local not in voters:
            continue
        candidate = start(ElectionState(epoch=1, voted_key=ReplicaKey(id=local)))
        yield ExploredState(candidate, 0)
        elected = raft.step(candidate, Tick(), 0)[0]
        for voter in others:
            if isinstance(elected.state, raft_state.Candidate):
                elected = _respond(elected, voter, VoteResponse(source=voter, leader_epoch=1, vote_granted=True), 0)
        yield ExploredState(elected, 0)


def _step(state: ExploredState, message: Any, now: int) -> Optional[ExploredState]:
    """One input and its poll; None when the node refuses it."""
    try:
        return ExploredState(raft.step(state.node, message, now)[0], now)
    except (ShutDownError, NotLeaderError):
        return None


def _answers(state: ExploredState, responses: list[tuple[int, Any]]) -> Optional[ExploredState]:
    """A ``Tick`` at the same time (its poll sends the requests), then each answer to the request outstanding."""
    polled = _step(state, Tick(), state.now)
    if polled is None:
        return None
    node = polled.node
    for source, response in responses:
        node = _respond(node, source, response, state.now)
    return ExploredState(node, state.now)


def _successor_lists(voters: frozenset[int], leader: int) -> Iterator[tuple[int, ...]]:
    """Every ordering of every subset of the voters other than the leader."""
    pool = sorted(voters - {leader})

    def extend(prefix: tuple[int, ...]) -> Iterator[tuple[int, ...]]:
        yield prefix
        for v in pool:
            if v not in prefix:
                yield from extend(prefix + (v,))

    yield from extend(())


def successors(state: ExploredState, constants: Mapping[str, TlaValue]) -> Iterator[Step[ExploredState]]:
    """Every input of the spec's ``Next`` with every parameter choice, as ``raft.step`` calls."""
    node, now = state.node, state.now
    timeout = int(constants["ShutdownTimeout"])
    candidates: list[tuple[str, str, Optional[ExploredState]]] = [
        ("HandleShutdown", f"step(Shutdown({timeout}), {now})", _step(state, Shutdown(timeout_ms=timeout), now))]
    if now < int(constants["MaxTime"]):
        candidates.append(("Poll", f"step(Tick(), {now + 1})", _step(state, Tick(), now + 1)))
    epoch, leader = node.state.epoch, raft_state.leader_of(node.state)
    if node.is_voter and leader not in (NONE, node.local_id):
        for succ in _successor_lists(node.voters, leader):
            request = EndQuorumEpochRequest(leader_id=leader, leader_epoch=epoch, preferred_successors=succ)
            candidates.append(("HandleEndQuorumEpochRequest", f"step({request}, {now})", _step(state, request, now)))
    if node.is_voter:
        for l in _others(node):
            for e in (epoch, epoch + 1):
                if e > int(constants["MaxEpoch"]) or (e == epoch and leader != NONE):
                    continue
                request = BeginQuorumEpochRequest(leader_id=l, leader_epoch=e, voter_id=node.local_id)
                candidates.append(("HandleBeginQuorumEpochRequest", f"step({request}, {now})",
                                   _step(state, request, now)))
    others = _others(node)
    if isinstance(node.state, raft_state.Prospective):
        if epoch < int(constants["MaxEpoch"]):
            grant = VoteResponse(source=others[0], leader_epoch=epoch, vote_granted=True)
            candidates.append(("HandleVoteResponsePreVote", "Tick, then a granted pre-vote",
                               _answers(state, [(others[0], grant)])))
        rejections = [(v, VoteResponse(source=v, leader_epoch=epoch, vote_granted=False)) for v in others]
        candidates.append(("HandleVoteResponsePreVote", "Tick, then rejected pre-votes", _answers(state, rejections)))
    if isinstance(node.state, raft_state.Candidate) and (
            node.shutdown is not None or node.log.end_offset < int(constants["MaxLog"])):
        grant = VoteResponse(source=others[0], leader_epoch=epoch, vote_granted=True)
        candidates.append(("HandleVoteResponse", "Tick, then a granted vote", _answers(state, [(others[0], grant)])))
    if isinstance(node.state, raft_state.Resigned):
        for v in sorted(node.state.unacked_voters):
            answer = QuorumEpochResponse(source=v, api="EndQuorumEpoch", leader_epoch=epoch, leader_id=node.local_id)
            candidates.append(("HandleQuorumEpochResponse", f"Tick, then EndQuorumEpoch answered by {v}",
                               _answers(state, [(v, answer)])))
    if node.log.end_offset < int(constants["MaxLog"]):
        candidates.append(("HandleAppend", f"step(Append, {now})", _step(state, Append(records=("r",)), now)))
    for action, call, after in candidates:
        if after is not None:
            yield Step(action, call, after)


def project(state: ExploredState) -> dict[str, TlaValue]:
    """The spec's variables: a Follower's election deadline only when EndQuorumEpoch set it (within the bounds)."""
    node = state.node
    s, shutdown = node.state, node.shutdown
    backoff = s.fetch_deadline if isinstance(s, raft_state.Follower) and s.fetch_deadline < FAR else NONE
    return {
        "voters": node.voters,
        "role": ROLES[type(s)],
        "epoch": s.epoch,
        "leader": raft_state.leader_of(s),
        "shutdown": "none" if shutdown is None else shutdown.outcome or "running",
        "deadline": NONE if shutdown is None else shutdown.deadline,
        "now": state.now,
        "backoff": backoff,
        "unacked": s.unacked_voters if isinstance(s, raft_state.Resigned) else frozenset(),
        "logEnd": node.log.end_offset,
    }


MODEL: AgreementModel[ExploredState] = AgreementModel(
    component="shutdown",
    spec_module="KRaftShutdown",
    initial_states=initial_states,
    successors=successors,
    project=project,
)
