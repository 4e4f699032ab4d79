"""``kraftspec generate tla --component listener``: raft traces of the node ``KRaftListener.tla`` follows, recorded from
TLC's state graph (rules §3.12).

TLC explores the spec under ``KRaftListener.cfg`` and dumps its state graph. Its listener actions
(``PollListeners``, ``UpdateListenersProgress``, ``MaybeFireLeaderChange``) may run between any two moves of the node;
Kafka runs them at fixed points of every poll, which a raft trace's inputs run. So the walks here are walks of that
graph in which each environment action is the raft input that causes it, and the listener actions around it are the
ones the node's polls run: an edge of the walked graph (:meth:`Recorder.steps_graph`) goes from a state through
listener edges only (a poll the node ran before the input's handler), one environment edge of TLC's graph and then
listener edges only again (the input's poll) to the state the reference node is in after the input and its poll. The
loop ``broker_tla.walked_traces`` shares then draws seeded walks and a covering set of that graph; each step states as
``post`` what the spec's state gives of the node, its ``listener`` view included, so replaying checks the reference's
listener against the spec after every input.

The inputs (node ``Local`` of the voters ``Local`` and ``Others``; the other voter is the environment):

* ``AdvanceHighWatermark(m)``: a leader gets a Fetch from the other voter at offset ``m`` (the majority's offset);
  a follower gets its leader's Fetch answer with high watermark ``m`` and no records.
* ``AppendRecord``: a leader's ``append`` of one record; a follower's Fetch answer holding one record of its epoch
  (no high watermark: -1 leaves it).
* ``CreateSnapshot`` / ``AdvanceLogStart``: ``create_snapshot`` (1 byte) / ``delete_before_snapshot``.
* ``StartElection``: a ``tick`` at the election (a follower's fetch) deadline, which makes the node Prospective
  (KIP-996: the spec elides it; only the last step states a post), then the other voter's granted pre-vote (after a
  ``tick`` whose poll sends the pre-vote request).
* ``WinElection``: the other voter's granted vote (after a ``tick`` if the node has not polled since it became a
  Candidate).
* ``LearnLeader(r, e)``: BeginQuorumEpoch from ``r`` in epoch ``e``.
* ``Restart``: ``restart``.

An environment edge no input makes (the reference after the input is not at the end of that edge followed by
listener edges) is left out of the walks; :data:`LEFT_OUT` says which under ``KRaftListener.cfg``.
"""

from __future__ import annotations

from collections import Counter, deque
from dataclasses import dataclass
from typing import Any, Iterator, Mapping, Optional

import networkx as nx

from kraftspec.reference import raft
from kraftspec.reference.raft_log import LogEntry
from kraftspec.reference.raft_messages import BeginQuorumEpochRequest, FetchRequest, FetchResponse, VoteResponse
from kraftspec.reference.raft_state import Follower, Leader
from kraftspec.spec import agree_listener as agree
from kraftspec.spec.agree import load_model
from kraftspec.spec.state_graph import StateKey, state_graph, state_key
from kraftspec.spec.tlc_config import read_constants
from kraftspec.traces.format.envelope import Step, Trace
from kraftspec.traces.format.raft import explicit_state
from kraftspec.traces.recording.broker_tla import Edge, walked_traces
from kraftspec.traces.recording.raft_inputs import epoch_at, message, tick
from kraftspec.traces.recording.raft_tla import posted, replayed

LISTENER_ACTIONS = frozenset({"PollListeners", "UpdateListenersProgress", "MaybeFireLeaderChange"})
LEFT_OUT = {"LearnLeader": "from Resigned in the same epoch: the node led that epoch itself, so another leader's "
                            "BeginQuorumEpoch conflicts with it, which Kafka's client (and the reference) treats as "
                            "fatal"}
"""The environment edges of ``KRaftListener.tla`` no raft input makes under ``KRaftListener.cfg``, by action, and why
(every other environment edge out of a walked state has one)."""


@dataclass(frozen=True)
class Point:
    """The node as the trace has it so far, the trace's clock, and what the spec's environment remembers: the
    highest high watermark the node has known and its restarts."""

    node: raft.RaftNode
    clock: int
    committed: int
    restarts: int

    def key(self) -> Optional[StateKey]:
        """The spec's state this point is (``agree_listener.project``); None in a role the spec elides (Prospective)."""
        if type(self.node.state) not in agree.ROLES:
            return None
        return state_key(agree.project(agree.ExploredState(self.node, self.committed, self.restarts)))


def explicit(constants: Mapping[str, Any]) -> dict[str, Any]:
    """The spec's ``Init`` as an explicit initial state: ``Local`` of the voters ``Local`` and ``Others`` on an empty
    log, no quorum-state file (``agree_listener.initial_states``' endpoints)."""
    voters = sorted({int(constants["Local"])} | set(constants["Others"]))
    return {"local_id": int(constants["Local"]), "voters": voters,
            "endpoints": {str(v): list(agree._endpoints(v)) for v in voters}}


def _snapshot_id(value: Mapping[str, Any]) -> Optional[list[int]]:
    return None if value["end"] == agree.NONE else [value["end"], value["epoch"]]


def spec_post(state: Mapping[str, Any]) -> dict[str, Any]:
    """What the spec's state gives of the node as trace post-state fields (``raft_replay.observe``'s names)."""
    view = state["listener"]
    return {
        "role": state["role"], "epoch": state["epoch"], "leader_id": state["leader"], "high_watermark": state["hw"],
        "log_end_offset": state["logStart"] + len(state["log"]), "log_start_offset": state["logStart"],
        "latest_snapshot_id": _snapshot_id(state["snapshot"]),
        "listener": {"committed_end": view["next"], "leader_id": view["leader"], "epoch": view["epoch"],
                     "loaded_snapshot": _snapshot_id(view["snapshot"])},
    }


def _answered(step: Step) -> list[list[Step]]:
    """A response as it comes, or after a ``tick`` that lets the node send the request it answers."""
    return [[step], [Step("tick", {}), step]]


def _from_leader(node: raft.RaftNode, high_watermark: int, records: tuple[LogEntry, ...] = ()) -> Step:
    """The Fetch answer of the leader the node follows (no correlation id: it answers the outstanding Fetch)."""
    epoch, leader = node.state.epoch, node.state.leader_id
    return message("fetch_response", FetchResponse(source=leader, leader_epoch=epoch, leader_id=leader,
                                                   high_watermark=high_watermark, records=records,
                                                   correlation_id=None))


def inputs(point: Point, label: str, target: Mapping[str, Any], others: list[int]) -> list[list[Step]]:
    """The input sequences that may make an environment edge labelled ``label`` to ``target`` (first match wins)."""
    node = point.node
    state = node.state
    voter = others[0]
    if label == "AdvanceHighWatermark" and isinstance(state, Leader):
        m = target["hw"]
        return [[message("fetch_request", FetchRequest(replica_id=voter, current_leader_epoch=state.epoch,
                                                       fetch_offset=m, last_fetched_epoch=epoch_at(node, m)))]]
    if label == "AdvanceHighWatermark" and isinstance(state, Follower):
        return _answered(_from_leader(node, target["hw"]))
    if label == "AppendRecord" and isinstance(state, Leader):
        return [[Step("append", {"records": (agree.DATA,)})]]
    if label == "AppendRecord" and isinstance(state, Follower):
        return _answered(_from_leader(node, -1, (LogEntry(epoch=state.epoch, record=agree.DATA),)))
    if label == "CreateSnapshot":
        snapshot = target["snapshot"]
        return [[Step("create_snapshot", {"end_offset": snapshot["end"], "epoch": snapshot["epoch"], "size": 1})]]
    if label == "AdvanceLogStart":
        snapshot = target["snapshot"]
        return [[Step("delete_before_snapshot", {"end_offset": snapshot["end"], "epoch": snapshot["epoch"]})]]
    if label == "StartElection":
        deadline = state.fetch_deadline if isinstance(state, Follower) else state.election_deadline
        grant = VoteResponse(source=voter, leader_epoch=state.epoch, vote_granted=True, correlation_id=None)
        timeout = tick(max(point.clock, deadline))
        return [[timeout, *answer] for answer in _answered(message("vote_response", grant))]
    if label == "WinElection":
        return _answered(message("vote_response", VoteResponse(source=voter, leader_epoch=state.epoch,
                                                               vote_granted=True, correlation_id=None)))
    if label == "LearnLeader":
        request = BeginQuorumEpochRequest(leader_id=target["leader"], leader_epoch=target["epoch"],
                                          voter_id=node.local_id)
        return [[message("begin_quorum_epoch_request", request)]]
    if label == "Restart":
        return [[Step("restart", {})]]
    return []


def _run(point: Point, steps: list[Step]) -> Optional[tuple[Point, list[Step]]]:
    """The steps replayed from ``point`` with the reference's outputs (``raft_tla.replayed``); None if the reference
    refuses one."""
    made = replayed(point.node, point.clock, steps)
    if made is None:
        return None
    node, clock, recorded = made
    hw = getattr(node.state, "high_watermark", agree.NONE)
    restarts = point.restarts + sum(step.action == "restart" for step in steps)
    return Point(node, clock, max(point.committed, hw), restarts), recorded


def _listener_closure(graph: nx.MultiDiGraph, start: StateKey) -> set[StateKey]:
    """The states reachable from ``start`` through listener edges only (``start`` included)."""
    seen, queue = {start}, deque([start])
    while queue:
        for _, after, label in graph.out_edges(queue.popleft(), keys=True):
            if label in LISTENER_ACTIONS and after not in seen:
                seen.add(after)
                queue.append(after)
    return seen


class Recorder:
    """Builds the walked graph from TLC's and turns its paths into traces of the spec's node."""

    def __init__(self, graph: nx.MultiDiGraph, constants: Mapping[str, Any]) -> None:
        self.tlc, self.constants = graph, constants
        self.others = sorted(constants["Others"])
        self.explicit = explicit(constants)
        self.start = Point(explicit_state(self.explicit), 0, 0, 0)
        self.initial = self.start.key()
        if not graph.nodes.get(self.initial, {}).get("initial"):
            raise ValueError("the reference's initial state is not TLC's: run `kraftspec agree listener`")
        self.closures: dict[StateKey, set[StateKey]] = {}
        self.ended: Counter[str] = Counter()

    def _closure(self, key: StateKey) -> set[StateKey]:
        reach = self.closures.get(key)
        if reach is None:
            reach = self.closures[key] = _listener_closure(self.tlc, key)
        return reach

    def moves(self, point: Point) -> Iterator[tuple[str, Point, list[Step]]]:
        """(environment action, point after, steps) for each environment edge of TLC's graph that an input makes
        from the point's state, after listener edges (a poll that ran before the input's handler) and followed by
        listener edges (the input's poll); the first input found per edge, each (action, state after) once."""
        seen: set[tuple[str, StateKey]] = set()
        for source in sorted(self._closure(point.key()), key=repr):
            for _, after, label in sorted(self.tlc.out_edges(source, keys=True), key=lambda e: (e[2], repr(e[1]))):
                if label in LISTENER_ACTIONS:
                    continue
                for candidate in inputs(point, label, dict(after), self.others):
                    made = _run(point, candidate)
                    key = None if made is None else made[0].key()
                    if key is not None and key in self._closure(after):
                        if (label, key) not in seen:
                            seen.add((label, key))
                            yield label, made[0], made[1]
                        break

    def steps_graph(self) -> nx.MultiDiGraph:
        """The walked graph: from the initial state, an edge per environment action and state it leads the
        reference to (its first point reached breadth-first stands for a state)."""
        walked = nx.MultiDiGraph()
        walked.add_node(self.initial, state=self.tlc.nodes[self.initial]["state"], initial=True)
        points, queue = {self.initial: self.start}, deque([self.start])
        while queue:
            point = queue.popleft()
            for label, after, _ in self.moves(point):
                key = after.key()
                if key not in points:
                    points[key] = after
                    walked.add_node(key, state=self.tlc.nodes[key]["state"])
                    queue.append(after)
                walked.add_edge(point.key(), key, label)
        return walked

    def trace(self, path: list[Edge], trace_id: str, meta: dict[str, Any]) -> Trace:
        """The trace of a path of the walked graph: each edge's inputs, the last stating the spec's state after it (a
        path whose edge the reference, along this path, does not make ends before it, counted in ``ended`` by
        action)."""
        point, steps = self.start, []
        for _, target, label in path:
            match = next(((after, made) for action, after, made in self.moves(point)
                          if action == label and after.key() == target), None)
            if match is None:
                self.ended[label] += 1
                break
            point, made = match
            steps.extend(posted(made, point.node, point.clock, spec_post(self.tlc.nodes[target]["state"]), label))
        return Trace(component="raft", steps=tuple(steps), explicit=self.explicit, id=trace_id, meta=meta)


def generate_tla(seed: int, walks: int, cover: str = "kinds", *, timeout_s: float = 600.0,
                 graph: Optional[nx.MultiDiGraph] = None) -> Iterator[Trace]:
    """``walks`` seeded random walks of the walked graph of ``KRaftListener.tla`` (:meth:`Recorder.steps_graph`),
    then its covering set (``cover``: ``kinds`` or ``edges``, ``broker_tla.walked_traces``); ``graph``: TLC's graph if
    already loaded."""
    model = load_model("listener")
    constants = read_constants(model.config_path)
    if graph is None:
        graph, _ = state_graph(model.module_path, model.config_path, timeout_s=timeout_s)
    recorder = Recorder(graph, constants)
    yield from walked_traces(recorder.steps_graph(), recorder.initial, seed, walks, cover, model.spec_module,
                             "tla-listener-", recorder.trace)
