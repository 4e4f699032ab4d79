"""Auto-join and a voter's UpdateRaftVoter (the non-leader side of KIP-853) explored under ``KRaftAutoJoin.cfg``'s
bounds, in the spec's vocabulary.

The node is a ``raft.RaftNode`` following leader ``Leader`` in epoch 1 and every spec action is a ``raft.step`` (an
input and the poll that follows it): ``Poll`` ~ a ``Tick`` one ms later, ``HandleFetchResponse`` ~ the leader's
``FetchResponse`` (empty, or a VotersRecord that adds the node, drops its id's old directory or takes its own
listeners), ``HandleVoterChangeResponse`` ~ a ``VoterChangeResponse`` (to AddRaftVoter or RemoveRaftVoter) and
``HandleUpdateVoterResponse`` ~ an ``UpdateRaftVoterResponse``, each carrying the correlation id of the request the
node has outstanding to the leader. Which request that is comes from what the steps sent (the node keeps only its
correlation id).

The reference runs with its election and request timeouts (``FAR`` ms) beyond ``MaxTime`` and
``quorum.retry.backoff.ms`` 0, so only the fetch timeout (which is also the update-voter-set period, ``Period``)
fires within the bounds; the spec polls a voter only before its fetch timeout (the leader answers in time: no
pre-vote). Hidden reference state (correlation ids, the log, the high watermark) is not projected.
"""

from __future__ import annotations

import base64
import uuid
from dataclasses import dataclass
from typing import Any, Iterator, Mapping, Optional

from kraftspec.reference import raft, raft_state, raft_voter_history, raft_voters
from kraftspec.reference.errors import Errors
from kraftspec.reference.frozen import FrozenMap, evolve
from kraftspec.reference.raft_log import LogEntry, RaftLog, Snapshot
from kraftspec.reference.raft_messages import FetchResponse, Tick, UpdateRaftVoterResponse, VoterChangeResponse
from kraftspec.reference.raft_node import ADD_VOTER, REMOVE_VOTER, SUPPORTED_KRAFT_VERSIONS, last_kraft_version
from kraftspec.reference.raft_state import ElectionState, QuorumConfig, ReplicaKey
from kraftspec.spec.agree import AgreementModel, Step
from kraftspec.spec.agree_shutdown import FAR, canonical_node
from kraftspec.spec.tla_values import TlaValue

OTHER = 3
"""A voter besides the leader and the node (``KRaftAutoJoin.cfg``: leader 1, node 2)."""
ENVIRONMENT_ACTIONS = frozenset({"Poll"})
"""The action of ``KRaftAutoJoin.tla``'s ``Next`` that moves the environment (time); the others are the node's
handlers of its leader's answers."""
REQUESTS = {"FetchRequest": "Fetch", "AddRaftVoterRequest": ADD_VOTER, "RemoveRaftVoterRequest": REMOVE_VOTER,
            "UpdateRaftVoterRequest": "UpdateRaftVoter"}
"""The spec's name of each request the node sends, by its message type."""
VOTER_CHANGE_ERRORS = (Errors.NONE, Errors.REQUEST_TIMED_OUT, Errors.DUPLICATE_VOTER, Errors.VOTER_NOT_FOUND,
                       Errors.NOT_LEADER_OR_FOLLOWER)
"""The leader's answers to AddRaftVoter and RemoveRaftVoter tried: those that restart the period and an unexpected
one."""
UPDATE_VOTER_ERRORS = (Errors.NONE, Errors.UNSUPPORTED_VERSION, Errors.REQUEST_TIMED_OUT)
CHANGES = {"absent": "same", "old": "absent", "stale": "same"}
"""What a VotersRecord fetched from the leader makes of the node's entry (kraft.version 1): it added the node, removed
its id's old directory, or took its own listeners."""


def directory_id(replica_id: int, generation: int = 0) -> str:
    """A replica's directory id on disk ``generation`` (0: its current disk, 1: the one its id had before): the UUID
    numbered after both, base64 as Kafka writes it."""
    raw = uuid.UUID(int=(generation << 64) | replica_id).bytes
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def listeners(replica_id: int, port_base: int = 9000) -> FrozenMap[str, tuple[str, int]]:
    return FrozenMap({"CONTROLLER": ("localhost", port_base + replica_id)})


def voter_node(replica_id: int, generation: int = 0, port_base: int = 9000) -> raft_voters.VoterNode:
    key = ReplicaKey(id=replica_id, directory_id=directory_id(replica_id, generation))
    return raft_voters.VoterNode(voter_key=key, listeners=listeners(replica_id, port_base),
                                 supported_kraft_version=SUPPORTED_KRAFT_VERSIONS)


def entry_node(local: int, entry: str) -> Optional[raft_voters.VoterNode]:
    """The node's entry in a kraft.version 1 voter set: none, its id under the old directory, its own key with its
    listeners, or its own key with listeners it no longer has."""
    return {"absent": None, "old": voter_node(local, generation=1), "same": voter_node(local),
            "stale": voter_node(local, port_base=8000)}[entry]


def voter_set(local: int, leader: int, entry: str) -> raft_voters.VoterSet:
    voters = {leader: voter_node(leader), OTHER: voter_node(OTHER)}
    node = entry_node(local, entry)
    if node is not None:
        voters[local] = node
    return raft_voters.VoterSet(voters=FrozenMap(dict(sorted(voters.items()))))


@dataclass(frozen=True)
class ExploredState:
    """The node, the clock and the request it has outstanding to the leader ("none" when there is none)."""

    node: raft.RaftNode
    now: int
    request: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "node", canonical_node(self.node))


def _config(constants: Mapping[str, TlaValue], auto_join: bool) -> QuorumConfig:
    return QuorumConfig(election_timeout_ms=FAR, fetch_timeout_ms=int(constants["Period"]), request_timeout_ms=FAR,
                        retry_backoff_ms=0, auto_join=auto_join)


def _start(constants: Mapping[str, TlaValue], kraft_version: int, entry: str, can_become_voter: bool,
           auto_join: bool) -> raft.RaftNode:
    """The node as it starts following the leader in epoch 1 (its quorum-state file names it): static voters at
    kraft.version 0, else a bootstrap checkpoint's KRaftVersionRecord and VotersRecord."""
    local, leader = int(constants["Local"]), int(constants["Leader"])
    config, stored = _config(constants, auto_join), ElectionState(epoch=1, leader_id=leader)
    if kraft_version == 0:
        ids = {leader, OTHER} | ({local} if entry == "same" else set())
        endpoints = FrozenMap({i: (f"CONTROLLER://localhost:{9000 + i}",) for i in sorted(ids | {local})})
        node = raft.new_node(local, frozenset(ids), endpoints, config, stored=stored, directory_id=directory_id(local))
        return evolve(node, can_become_voter=can_become_voter)
    log = RaftLog(snapshots=(Snapshot(end_offset=0, epoch=0, size=100),))
    records = FrozenMap({(0, 0): (raft_voters.KRaftVersionRecord(kraft_version=1),
                                  raft_voters.to_voters_record(voter_set(local, leader, entry)))})
    return raft.new_dynamic_node(local, directory_id(local), listeners(local), config, log, records, stored,
                                 can_become_voter=can_become_voter)


def initial_choices() -> Iterator[tuple[int, str, bool, bool]]:
    """The spec's initial states as (kraft.version, entry, canBecomeVoter, autoJoin): kraft.version 0 (an observer or a
    static voter) or 1 (an observer whose id is absent or a voter's under an old directory, or a voter whose listeners
    are or are not its own), each way a controller or not, with auto-join on or off."""
    for kraft_version, entries in ((0, ("absent", "same")), (1, ("absent", "old", "same", "stale"))):
        for entry in entries:
            for can_become_voter in (False, True):
                for auto_join in (False, True):
                    yield kraft_version, entry, can_become_voter, auto_join


def initial_states(constants: Mapping[str, TlaValue]) -> Iterator[ExploredState]:
    """``Init``: each of :func:`initial_choices`, following the leader from time 0 with nothing sent yet."""
    for choice in initial_choices():
        yield ExploredState(_start(constants, *choice), 0, "none")


def outstanding(node: raft.RaftNode, previous: str, sent: list[tuple[int, str]]) -> str:
    """The request outstanding to the leader after a step whose poll sent ``sent`` (destination, message type): the
    one sent, else the one before (``previous``) while the node still awaits its answer, else "none"."""
    leader = node.state.leader_id
    stray = [destination for destination, _ in sent if destination != leader]
    if stray:
        raise AssertionError(f"the node sent to {stray}, not to its leader {leader}")
    return REQUESTS[sent[-1][1]] if sent else (previous if leader in node.inflight else "none")


def _after(state: ExploredState, message: Any, now: int) -> ExploredState:
    """One input and its poll; the request outstanding to the leader is the one the poll sent, if any."""
    node, sent = raft.step(state.node, message, now)
    request = outstanding(node, state.request, [(s.destination, type(s.message).__name__) for s in sent])
    return ExploredState(node, now, request)


def _answer(state: ExploredState, response: Any) -> ExploredState:
    """``response`` from the leader to the request outstanding to it, at the same time."""
    correlation_id, _ = state.node.inflight[state.node.state.leader_id]
    return _after(state, evolve(response, correlation_id=correlation_id), state.now)


def _fetch_answers(node: raft.RaftNode) -> Iterator[tuple[str, FetchResponse]]:
    """The leader's Fetch answers: empty, or (kraft.version 1) with a VotersRecord changing the node's entry."""
    leader, end = node.state.leader_id, node.log.end_offset
    yield "empty", FetchResponse(source=leader, leader_epoch=1, leader_id=leader, high_watermark=end)
    entry = _entry(node)
    if last_kraft_version(node) == 1 and entry in CHANGES:
        record = raft_voters.to_voters_record(voter_set(node.local_id, leader, CHANGES[entry]))
        yield f"VotersRecord ({entry} -> {CHANGES[entry]})", FetchResponse(
            source=leader, leader_epoch=1, leader_id=leader, high_watermark=end + 1,
            records=(LogEntry(epoch=1, record=record),))


def inputs(state: ExploredState, constants: Mapping[str, TlaValue]) -> Iterator[tuple[str, str, Any, int]]:
    """Every input of the spec's ``Next`` with every parameter choice: (action, what it is, the message, its time).
    An answer is to the request outstanding to the leader (its correlation id is set when it is handed over)."""
    node, now, leader = state.node, state.now, state.node.state.leader_id
    if now < int(constants["MaxTime"]) and not (node.is_voter and now + 1 >= node.state.fetch_deadline):
        yield "Poll", "Tick()", Tick(), now + 1
    if state.request == "Fetch":
        for name, response in _fetch_answers(node):
            yield "HandleFetchResponse", f"FetchResponse: {name}", response, now
    if state.request in (ADD_VOTER, REMOVE_VOTER):
        for error in VOTER_CHANGE_ERRORS:
            yield ("HandleVoterChangeResponse", f"{state.request} answered {error.name}",
                   VoterChangeResponse(api=state.request, source=leader, error=error), now)
    if state.request == "UpdateRaftVoter":
        for error in UPDATE_VOTER_ERRORS:
            response = UpdateRaftVoterResponse(source=leader, error=error, leader_epoch=1, leader_id=leader,
                                               leader_endpoints=(f"CONTROLLER://localhost:{9000 + leader}",))
            yield "HandleUpdateVoterResponse", f"UpdateRaftVoter answered {error.name}", response, now


def successors(state: ExploredState, constants: Mapping[str, TlaValue]) -> Iterator[Step[ExploredState]]:
    """Every input of :func:`inputs` as a ``raft.step`` call."""
    for action, what, message, now in inputs(state, constants):
        after = _after(state, message, now) if isinstance(message, Tick) else _answer(state, message)
        yield Step(action, f"step({what}, {now})", after)


def _entry(node: raft.RaftNode) -> str:
    """The node's entry in the voter set in force: absent, its id under another directory, or its own key with its
    listeners ("same") or others ("stale"); a static voter is "same"."""
    if node.dynamic is None:
        return "same" if node.local_id in node.voters else "absent"
    voter = raft_voter_history.last_voter_set(node.dynamic.control).voters.get(node.local_id)
    if voter is None:
        return "absent"
    if voter.voter_key.directory_id != node.directory_id:
        return "old"
    return "same" if voter.listeners == node.dynamic.local_listeners else "stale"


def project(state: ExploredState) -> dict[str, TlaValue]:
    """The spec's variables."""
    node = state.node
    s = node.state
    if not isinstance(s, raft_state.Follower):
        raise AssertionError(f"the node left the Follower state: {s}")
    return {
        "kraftVersion": last_kraft_version(node),
        "entry": _entry(node),
        "canBecomeVoter": node.can_become_voter,
        "autoJoin": node.config.auto_join,
        "now": state.now,
        "fetchDeadline": s.fetch_deadline,
        "updateDeadline": s.update_voter_deadline,
        "updatedLeader": s.has_updated_leader,
        "inflight": state.request,
    }


MODEL: AgreementModel[ExploredState] = AgreementModel(
    component="autojoin",
    spec_module="KRaftAutoJoin",
    initial_states=initial_states,
    successors=successors,
    project=project,
)
