"""The listener's view explored under ``KRaftListener.cfg``'s bounds, in the spec's vocabulary.

One node (``Local``, a voter with ``Others``) is a reference :class:`~kraftspec.reference.raft.RaftNode`. Its listener
actions are the reference's own: ``PollListeners`` is ``raft._poll_listeners``, ``UpdateListenersProgress``
``raft._update_listeners_progress`` and ``MaybeFireLeaderChange`` ``raft_transitions.maybe_fire_leader_change`` (which
call ``raft_rules.listener_loads_snapshot``, ``should_fire_leader_change`` and ``listener_caught_up``). The environment
moves the node with the reference's transitions and log operations: ``raft_state.transition_to_prospective``,
``transition_to_candidate``, ``transition_to_follower`` (through ``raft_transitions.moved``), ``raft._to_leader``,
``raft_transitions.leader_append``, ``raft_log.append_as_follower``, ``can_create_snapshot``, ``freeze_snapshot``,
``delete_before_snapshot``, ``raft_rules.next_high_watermark``, ``follower_high_watermark`` and ``raft.restart``. The
explored state adds what the environment remembers: the highest high watermark known (``committed``) and the restarts.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterator, Mapping, Optional

from kraftspec.reference import raft, raft_log, raft_state, raft_transitions
from kraftspec.reference.frozen import FrozenMap, evolve
from kraftspec.reference.raft_log import LogEntry, Snapshot
from kraftspec.reference.raft_rules import follower_high_watermark, next_high_watermark
from kraftspec.reference.raft_state import Candidate, Follower, Leader, ListenerView, ReplicaKey, Resigned, Unattached
from kraftspec.spec.agree import AgreementModel, Step
from kraftspec.spec.tla_values import TlaValue, record

ENVIRONMENT_ACTIONS = frozenset({"AdvanceHighWatermark", "AppendRecord", "CreateSnapshot", "AdvanceLogStart",
                                 "StartElection", "WinElection", "LearnLeader", "Restart"})
"""Actions of ``KRaftListener.tla``'s ``Next`` that move the node (its quorum, its state machine, a crash)."""

NONE = -1
DATA = "data"
NO_SNAPSHOT = record(end=NONE, epoch=NONE)
ROLES = {Unattached: "Unattached", Candidate: "Candidate", Leader: "Leader", Follower: "Follower",
         Resigned: "Resigned"}


@dataclass(frozen=True)
class ExploredState:
    """The reference node, the highest high watermark it has known and its restarts so far."""

    node: raft.RaftNode
    committed: int
    restarts: int


def _endpoints(replica_id: int) -> tuple[str, ...]:
    return (f"CONTROLLER://localhost:{9000 + replica_id}",)


def initial_states(constants: Mapping[str, TlaValue]) -> Iterator[ExploredState]:
    """``Init``: a node started on an empty log, Unattached in epoch 0, its listener not registered yet."""
    local = int(constants["Local"])
    voters = frozenset({local}) | frozenset(constants["Others"])
    node = raft.new_node(local, voters, FrozenMap({v: _endpoints(v) for v in sorted(voters)}))
    yield ExploredState(node=node, committed=0, restarts=0)


def _with_node(state: ExploredState, node: raft.RaftNode) -> ExploredState:
    return replace(state, node=node)


def listener_successors(state: ExploredState) -> Iterator[Step[ExploredState]]:
    """The reference's own listener functions."""
    node = state.node
    yield Step("PollListeners", "_poll_listeners", _with_node(state, raft._poll_listeners(node)))
    if node.listener is None:
        return
    yield Step("UpdateListenersProgress", "_update_listeners_progress",
               _with_node(state, raft._update_listeners_progress(node)))
    if not isinstance(node.state, Resigned):
        yield Step("MaybeFireLeaderChange", "_maybe_fire_leader_change",
                   _with_node(state, raft_transitions.maybe_fire_leader_change(node)))


def _high_watermarks(state: ExploredState) -> Iterator[Step[ExploredState]]:
    """``AdvanceHighWatermark``: a majority of the leader's at m, or a follower's leader answering m."""
    node, current = state.node, getattr(state.node.state, "high_watermark", NONE)
    end = node.log.end_offset
    for m in range(0, end + 1):
        if isinstance(node.state, Leader):
            hwm = next_high_watermark(current, (m,), node.state.epoch_start_offset)
            call = f"next_high_watermark({current}, majority at {m}, {node.state.epoch_start_offset})"
        elif isinstance(node.state, Follower) and m >= state.committed and m > current:
            hwm = follower_high_watermark(current, end, m)
            call = f"follower_high_watermark({current}, {end}, {m})"
        else:
            continue
        if hwm != current:
            moved = evolve(node, state=evolve(node.state, high_watermark=hwm))
            yield Step("AdvanceHighWatermark", call, replace(state, node=moved, committed=max(state.committed, hwm)))


def _snapshots(state: ExploredState) -> Iterator[Step[ExploredState]]:
    """``CreateSnapshot`` past the latest snapshot up to the high watermark, ``AdvanceLogStart`` to the latest."""
    node = state.node
    log, hw = node.log, getattr(node.state, "high_watermark", NONE)
    latest = log.latest_snapshot
    for e in range(max(log.start_offset, NONE if latest is None else latest.end_offset) + 1, hw + 1):
        epoch = log.entries[e - 1 - log.start_offset].epoch
        if raft_log.can_create_snapshot(log, e, epoch, hw):
            frozen = raft_log.freeze_snapshot(log, Snapshot(end_offset=e, epoch=epoch, size=1))
            yield Step("CreateSnapshot", f"can_create_snapshot({e}, {epoch}); freeze_snapshot",
                       _with_node(state, evolve(node, log=frozen)))
    if latest is not None and log.start_offset < latest.end_offset <= hw:
        yield Step("AdvanceLogStart", f"delete_before_snapshot({latest.id})", _with_node(state, evolve(
            node, log=raft_log.delete_before_snapshot(log, latest.end_offset, latest.epoch, hw))))


def _elections(state: ExploredState, constants: Mapping[str, TlaValue]) -> Iterator[Step[ExploredState]]:
    """``StartElection``, ``WinElection`` and ``LearnLeader`` through the reference's quorum-state transitions."""
    node = state.node
    role = type(node.state)
    if role in (Unattached, Candidate, Follower) and node.state.epoch < int(constants["MaxEpoch"]):
        prospective = raft_state.transition_to_prospective(node.state, node.local_id, True, 0)
        candidate = raft_state.transition_to_candidate(prospective, node.local_id, 0)
        yield Step("StartElection", "transition_to_prospective; transition_to_candidate",
                   _with_node(state, raft_transitions.moved(node, candidate, True, [])))
    if role is Candidate and node.log.end_offset < int(constants["MaxLog"]):
        won = evolve(node, state=evolve(node.state, granted=node.voters))  # the other voters grant their votes
        yield Step("WinElection", "_to_leader", _with_node(state, raft._to_leader(won, 0, [])))
    for r in sorted(constants["Others"]):
        for e in range(node.state.epoch, int(constants["MaxEpoch"]) + 1):
            if e == node.state.epoch and role not in (Unattached, Candidate, Resigned):
                continue
            follower = raft_state.transition_to_follower(node.state, node.local_id, e, r, _endpoints(r), 0)
            yield Step("LearnLeader", f"transition_to_follower({e}, {r})",
                       _with_node(state, raft_transitions.moved(node, follower, True, [])))


def successors(state: ExploredState, constants: Mapping[str, TlaValue]) -> Iterator[Step[ExploredState]]:
    """Every action of the spec's ``Next`` with every parameter choice, as reference calls."""
    yield from listener_successors(state)
    node = state.node
    yield from _high_watermarks(state)
    if isinstance(node.state, (Leader, Follower)) and node.log.end_offset < int(constants["MaxLog"]):
        if isinstance(node.state, Leader):
            appended = raft_transitions.leader_append(node, ((DATA,),), 0, [])
        else:
            entry = LogEntry(epoch=node.state.epoch, record=DATA)
            appended = evolve(node, log=raft_log.flush(raft_log.append_as_follower(node.log, (entry,))))
        yield Step("AppendRecord", "append", _with_node(state, appended))
    yield from _snapshots(state)
    yield from _elections(state, constants)
    if state.restarts < int(constants["MaxRestarts"]):
        yield Step("Restart", "restart", replace(state, node=raft.restart(node, 0), restarts=state.restarts + 1))


def _snapshot_id(snapshot_id: Optional[tuple[int, int]]) -> TlaValue:
    return NO_SNAPSHOT if snapshot_id is None else record(end=snapshot_id[0], epoch=snapshot_id[1])


def project(state: ExploredState) -> dict[str, TlaValue]:
    """The spec's variables: the log's epochs from its start, the latest snapshot, the state's high watermark and
    leader, and the listener's view (a fresh one while not registered)."""
    node = state.node
    view = node.listener or ListenerView()
    latest = node.log.latest_snapshot
    return {
        "log": tuple(entry.epoch for entry in node.log.entries),
        "logStart": node.log.start_offset,
        "snapshot": _snapshot_id(None if latest is None else latest.id),
        "hw": getattr(node.state, "high_watermark", NONE),
        "committed": state.committed,
        "role": ROLES[type(node.state)],
        "epoch": node.state.epoch,
        "votedSelf": raft_state.voted_key_of(node.state, node.local_id) == ReplicaKey(id=node.local_id),
        "leader": raft_state.leader_of(node.state),
        "epochStart": node.state.epoch_start_offset if isinstance(node.state, Leader) else NONE,
        "registered": node.listener is not None,
        "listener": record(next=view.committed_end, leader=view.leader_id, epoch=view.epoch,
                           snapshot=_snapshot_id(view.loaded_snapshot)),
        "restarts": state.restarts,
    }


MODEL: AgreementModel[ExploredState] = AgreementModel(
    component="listener",
    spec_module="KRaftListener",
    initial_states=initial_states,
    successors=successors,
    project=project,
)
