"""A node's requests, their timeouts and back-offs explored under ``KRaftRequests.cfg``'s bounds, in the spec's
vocabulary.

The node is a ``raft.RaftNode`` and every spec action is a ``raft.step`` (an input and the poll that follows it), tried
with every bootstrap draw (``step``'s ``bootstrap``, ``RequestManager``'s random start index): ``Poll`` ~ a ``Tick``
one ms later; ``HandleFetchResponseFailed`` / ``HandleVoteResponseFailed`` ~ the BROKER_NOT_AVAILABLE answer a
disconnect gives the request outstanding to a destination (``raft_simulate.failed_response``); ``HandleFetchResponse``
~ a Fetch answer naming the leader of the node's epoch (the leader's own answer, else NOT_LEADER_OR_FOLLOWER);
``HandleVoteResponse`` ~ a (pre-)vote answer.
Each answer carries the correlation id of the request outstanding, and only a request not yet timed out is answered.

The reference runs with its election and fetch timeouts (``FAR`` ms) beyond ``MaxTime``, jitter 0, and the spec's
``RetryBackoff`` and ``RequestTimeout``. A request timed out or a back-off over is no longer projected (the spec's
connections at ``now``); the request kinds and the rest of the node's state are not projected.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator, Mapping

from kraftspec.reference import raft, raft_state
from kraftspec.reference.errors import Errors
from kraftspec.reference.frozen import FrozenMap, evolve
from kraftspec.reference.raft_messages import EndQuorumEpochRequest, FetchResponse, Tick, VoteResponse
from kraftspec.reference.raft_state import ElectionState, QuorumConfig, ReplicaKey
from kraftspec.spec import agree_shutdown
from kraftspec.spec.agree import AgreementModel, Step
from kraftspec.spec.agree_shutdown import FAR, NONE, ROLES, canonical_node, voter_endpoints
from kraftspec.spec.tla_values import TlaValue

ENVIRONMENT_ACTIONS = frozenset({"Poll"})
"""The action of ``KRaftRequests.tla``'s ``Next`` that moves the environment (time); the others are the node's handlers
of the answers its environment sends."""
FETCHING = (raft_state.Follower, raft_state.Unattached)


@dataclass(frozen=True)
class ExploredState(agree_shutdown.ExploredState):
    """The node and the clock, the send times of the requests outstanding kept (here they decide the timeouts)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "node", canonical_node(self.node, keep_send_times=True))


def _config(constants: Mapping[str, TlaValue]) -> QuorumConfig:
    return QuorumConfig(election_timeout_ms=FAR, fetch_timeout_ms=FAR,
                        request_timeout_ms=int(constants["RequestTimeout"]),
                        retry_backoff_ms=int(constants["RetryBackoff"]))


def _draws(constants: Mapping[str, TlaValue]) -> range:
    """Every start index ``findReadyBootstrapServer`` may draw."""
    return range(int(constants["N"]))


def _restarted(constants: Mapping[str, TlaValue]) -> Iterator[raft.RaftNode]:
    """The nodes of ``Init`` before their first poll: restarted from the quorum-state file as a Follower of
    ``KnownLeader``, Unattached or a Candidate; a Prospective is that Follower told by its leader's EndQuorumEpoch
    (no successors: no wait) to campaign, keeping the leader."""
    local, ids = int(constants["Local"]), frozenset(range(1, int(constants["N"]) + 1))
    known = int(constants["KnownLeader"])

    def start(stored: ElectionState) -> raft.RaftNode:
        return raft.new_node(local, ids, voter_endpoints(ids), _config(constants), stored=stored)

    follower = start(ElectionState(epoch=1, leader_id=known))
    yield follower
    yield start(ElectionState(epoch=1))
    resigned = EndQuorumEpochRequest(leader_id=known, leader_epoch=1, preferred_successors=())
    yield raft.step(follower, resigned, 0)[0]
    yield start(ElectionState(epoch=1, voted_key=ReplicaKey(id=local)))


def initial_states(constants: Mapping[str, TlaValue]) -> Iterator[ExploredState]:
    """``Init``: each restarted node after its first poll at time 0, with every bootstrap draw."""
    for node in _restarted(constants):
        for draw in _draws(constants):
            yield ExploredState(raft.step(node, Tick(), 0, bootstrap=draw)[0], 0)


def _live(state: ExploredState) -> list[int]:
    """The destinations whose request is outstanding and not timed out at ``now``."""
    node, timeout = state.node, state.node.config.request_timeout_ms
    return [d for d, (_, sent) in sorted(node.inflight.items()) if state.now < sent + timeout]


def _fetch_answers(state: ExploredState, source: int) -> Iterator[FetchResponse]:
    """The answers ``source`` may give a Fetch: it names the leader of the node's epoch, the one the node follows,
    or (to an Unattached node, unless it is the node itself) any other voter, or none."""
    node = state.node
    s, local = node.state, node.local_id
    known = raft_state.leader_of(s)
    leaders = [known] if known != NONE or source == local else [NONE] + sorted(node.voters - {local})
    for leader in leaders:
        endpoints = node.voter_endpoints.get(leader, ())
        if leader == source:
            yield FetchResponse(source=source, leader_epoch=s.epoch, leader_id=leader, leader_endpoints=endpoints)
        else:
            yield FetchResponse(source=source, partition_error=Errors.NOT_LEADER_OR_FOLLOWER, leader_epoch=s.epoch,
                                leader_id=leader, leader_endpoints=endpoints)


def answers(state: ExploredState) -> Iterator[tuple[str, int, Any]]:
    """(action, source, answer) for every request outstanding: its failure, then what the role may be told."""
    s = state.node.state
    fetching = isinstance(s, FETCHING)
    for source in _live(state):
        if fetching:
            yield "HandleFetchResponseFailed", source, FetchResponse(source=source, error=Errors.BROKER_NOT_AVAILABLE)
            for answer in _fetch_answers(state, source):
                yield "HandleFetchResponse", source, answer
            continue
        yield "HandleVoteResponseFailed", source, VoteResponse(source=source, error=Errors.BROKER_NOT_AVAILABLE)
        for granted in ((True, False) if isinstance(s, raft_state.Prospective) else (False,)):
            yield "HandleVoteResponse", source, VoteResponse(source=source, leader_epoch=s.epoch,
                                                             vote_granted=granted)


def _step(state: ExploredState, message: Any, now: int, draw: int) -> ExploredState:
    return ExploredState(raft.step(state.node, message, now, bootstrap=draw)[0], now)


def successors(state: ExploredState, constants: Mapping[str, TlaValue]) -> Iterator[Step[ExploredState]]:
    """Every action of the spec's ``Next`` with every parameter choice and bootstrap draw, as ``raft.step`` calls."""
    node, now = state.node, state.now
    for draw in _draws(constants):
        if now < int(constants["MaxTime"]):
            yield Step("Poll", f"step(Tick(), {now + 1}, bootstrap={draw})", _step(state, Tick(), now + 1, draw))
        for action, source, answer in answers(state):
            answer = evolve(answer, correlation_id=node.inflight[source][0])
            yield Step(action, f"step({answer}, {now}, bootstrap={draw})", _step(state, answer, now, draw))


def _connections(times: FrozenMap[int, int], ids: range, period: int, now: int) -> tuple[int, ...]:
    """Per destination, the time kept while ``period`` has not passed since it at ``now``, else None."""
    return tuple(times[d] if d in times and now < times[d] + period else NONE for d in ids)


def project(state: ExploredState) -> dict[str, TlaValue]:
    """The spec's variables: the requests awaited and the back-offs running at ``now``."""
    node, now = state.node, state.now
    s, config = node.state, node.config
    ids = range(1, len(node.voters) + 1)
    voting = isinstance(s, (raft_state.Prospective, raft_state.Candidate))
    sent = FrozenMap({d: pending[1] for d, pending in node.inflight.items()})
    return {
        "role": ROLES[type(s)],
        "epoch": s.epoch,
        "leader": raft_state.leader_of(s),
        "inflight": _connections(sent, ids, config.request_timeout_ms, now),
        "failed": _connections(node.backoff, ids, config.retry_backoff_ms, now),
        "rejected": frozenset(s.rejected - {node.local_id}) if voting else frozenset(),
        "now": now,
    }


MODEL: AgreementModel[ExploredState] = AgreementModel(
    component="requests",
    spec_module="KRaftRequests",
    initial_states=initial_states,
    successors=successors,
    project=project,
)
