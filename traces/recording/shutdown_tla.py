"""``kraftspec generate tla --component shutdown``: raft traces of the node ``KRaftShutdown.tla`` follows, recorded from
TLC's state graph (rules §3.13, §3.5, §3.9).

TLC explores the spec under ``KRaftShutdown.cfg`` and dumps its state graph; seeded random walks and a covering set
(the loop ``broker_tla.walked_traces`` shares) become traces of the spec's ``Local`` node, the node under test. The
spec has several initial states (each voter set, each starting role): the walks start from a root added to the
graph whose ``Init`` edges lead to them, so the first edge of a path chooses the initial state. Every spec action
is an input of the node and the poll that follows it (``spec/agree_shutdown.py``): ``HandleShutdown`` is
``shutdown`` (``ShutdownTimeout`` ms), ``Poll`` a ``tick`` one ms later, ``HandleEndQuorumEpochRequest`` /
``HandleBeginQuorumEpochRequest`` those requests, ``HandleAppend`` an ``append``; the other voters' answers
(``HandleVoteResponsePreVote``, ``HandleVoteResponse``, ``HandleQuorumEpochResponse``) are a ``tick`` at the same
time (whose poll sends the requests they answer) and then the answers, without correlation ids (each answers the
request outstanding to its source). Each edge's steps are the reference's, matched to TLC's edge by the projected
target (``agree_shutdown.project``); the last states as ``post`` what the spec's state gives of the node (role,
epoch, leader, log end, the shutdown's outcome, the clock).

The initial states are explicit nodes started from their quorum-state file under the spec's timeouts
(``agree_shutdown``'s ``FAR`` ms election, fetch and request timeouts, ``BackoffMax`` back-off); a Leader cannot be
restored from the file, so a Leader's trace starts from the Candidate of epoch 1 and its first two steps are the
granted vote that elects it (the spec's ``HandleVoteResponse`` from that Candidate reaches the same state).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Iterator, Mapping, Optional

import networkx as nx

from kraftspec.reference import raft_state
from kraftspec.reference.raft_messages import (
    BeginQuorumEpochRequest,
    EndQuorumEpochRequest,
    NotLeaderError,
    QuorumEpochResponse,
    ShutDownError,
    VoteResponse,
)
from kraftspec.spec import agree_shutdown as agree
from kraftspec.spec.agree import load_model
from kraftspec.spec.state_graph import StateKey, state_graph, state_key
from kraftspec.spec.tlc_config import read_constants
from kraftspec.traces.format.envelope import Step, Trace
from kraftspec.traces.format.raft import explicit_state
from kraftspec.traces.format.values import to_json
from kraftspec.traces.recording.broker_tla import Edge, walked_traces
from kraftspec.traces.recording.raft_inputs import message, tick
from kraftspec.traces.recording.raft_tla import REFUSALS, Point, posted, replayed

INIT = "Init"
"""The label of the root's edges to the spec's initial states."""
SHUTDOWN = {"none": None, "running": "pending", "completed": "completed", "timed_out": "timed_out"}
"""The spec's ``shutdown`` as the trace's ``shutdown`` post-state field."""


def explicit(voters: frozenset[int], stored: Optional[dict[str, Any]], constants: Mapping[str, Any]) -> dict[str, Any]:
    """The trace's explicit initial state: ``Local`` of ``voters`` started from ``stored`` under the spec's timeouts."""
    ids = sorted(constants["Ids"])
    obj: dict[str, Any] = {
        "local_id": int(constants["Local"]), "voters": sorted(voters),
        "endpoints": {str(i): [f"CONTROLLER://controller{i}:9093"] for i in ids},
        "config": to_json(agree._config(constants)),
    }
    return obj if stored is None else {**obj, "quorum_state": stored}


def spec_post(state: Mapping[str, Any]) -> dict[str, Any]:
    """What the spec's state gives of the node as trace post-state fields (``raft_replay.observe``'s names)."""
    return {"role": state["role"], "epoch": state["epoch"], "leader_id": state["leader"],
            "log_end_offset": state["logEnd"], "shutdown": SHUTDOWN[state["shutdown"]], "clock": state["now"]}


def _answer(source: int, response: Any) -> Step:
    """An answer to the request outstanding to ``source`` (no correlation id)."""
    action = "vote_response" if isinstance(response, VoteResponse) else "quorum_epoch_response"
    return message(action, dataclasses.replace(response, source=source, correlation_id=None))


def moves(point: Point, constants: Mapping[str, Any]) -> Iterator[tuple[str, list[Step]]]:
    """Every input of the spec's ``Next`` with every parameter choice, as trace steps (``agree_shutdown.successors``'
    inputs, in its order)."""
    node, now = point.node, point.clock
    timeout, epoch = int(constants["ShutdownTimeout"]), node.state.epoch
    yield "HandleShutdown", [Step("shutdown", {"timeout_ms": timeout})]
    if now < int(constants["MaxTime"]):
        yield "Poll", [tick(now + 1)]
    leader, others = raft_state.leader_of(node.state), sorted(node.voters - {node.local_id})
    if node.is_voter and leader not in (agree.NONE, node.local_id):
        for succ in agree._successor_lists(node.voters, leader):
            request = EndQuorumEpochRequest(leader_id=leader, leader_epoch=epoch, preferred_successors=succ)
            yield "HandleEndQuorumEpochRequest", [message("end_quorum_epoch_request", request)]
    if node.is_voter:
        for l in others:
            for e in (epoch, epoch + 1):
                if e <= int(constants["MaxEpoch"]) and not (e == epoch and leader != agree.NONE):
                    request = BeginQuorumEpochRequest(leader_id=l, leader_epoch=e, voter_id=node.local_id)
                    yield "HandleBeginQuorumEpochRequest", [message("begin_quorum_epoch_request", request)]
    poll = tick(now)
    if isinstance(node.state, raft_state.Prospective):
        grant = VoteResponse(source=others[0], leader_epoch=epoch, vote_granted=True)
        yield "HandleVoteResponsePreVote", [poll, _answer(others[0], grant)]
        yield "HandleVoteResponsePreVote", [poll] + [_answer(v, VoteResponse(source=v, leader_epoch=epoch))
                                                     for v in others]
    if isinstance(node.state, raft_state.Candidate):
        yield "HandleVoteResponse", [poll, _answer(others[0], VoteResponse(source=others[0], leader_epoch=epoch,
                                                                           vote_granted=True))]
    if isinstance(node.state, raft_state.Resigned):
        for v in sorted(node.state.unacked_voters):
            answer = QuorumEpochResponse(source=v, api="EndQuorumEpoch", leader_epoch=epoch, leader_id=node.local_id)
            yield "HandleQuorumEpochResponse", [poll, _answer(v, answer)]
    yield "HandleAppend", [Step("append", {"records": ("r",)})]


def _appended(step: Step, response: Any) -> bool:
    """Whether ``step`` is no append the node refused as not the leader (Kafka throws NotLeaderException: no edge of
    the spec)."""
    return step.action != "append" or response.last_offset is not None


def _run(point: Point, steps: list[Step]) -> Optional[tuple[Point, list[Step]]]:
    """The steps replayed from ``point`` with the reference's outputs (``raft_tla.replayed``); None if the node
    refuses one, a shut-down node any input."""
    made = replayed(point.node, point.clock, steps, REFUSALS + (ShutDownError, NotLeaderError), _appended)
    return None if made is None else (Point(made[0], made[1]), made[2])


def _key(point: Point) -> StateKey:
    return state_key(agree.project(agree.ExploredState(point.node, point.clock)))


def initial_traces(constants: Mapping[str, Any]) -> Iterator[tuple[dict[str, Any], list[Step]]]:
    """Each of the spec's initial states as an explicit node and the steps that bring it there
    (``agree_shutdown.initial_states``: a Leader is the Candidate of epoch 1 elected by a granted vote)."""
    local = int(constants["Local"])
    for voters in sorted((frozenset(v) for v in constants["VoterSets"]), key=sorted):
        if voters == {local}:
            yield explicit(voters, None, constants), [tick(0)]  # the first poll writes its LeaderChange
            continue
        others = sorted(voters - {local})
        yield explicit(voters, {"epoch": 1, "leader_id": others[0]}, constants), []
        yield explicit(voters, {"epoch": 1}, constants), []
        if local not in voters:
            continue
        candidate = explicit(voters, {"epoch": 1, "voted_key": {"id": local}}, constants)
        yield candidate, []
        grant = VoteResponse(source=others[0], leader_epoch=1, vote_granted=True)
        yield candidate, [tick(0), _answer(others[0], grant)]


class Recorder:
    """Turns paths of TLC's graph (from the added root) into traces of the spec's node. A focused spec of one node
    whose initial states are explicit nodes (and the steps that bring them there) records its traces with a subclass
    that names its own ``component`` and the functions below (``requests_tla`` does)."""

    component = "shutdown"
    initial_traces = staticmethod(initial_traces)
    moves = staticmethod(moves)
    key = staticmethod(_key)
    spec_post = staticmethod(spec_post)

    def __init__(self, graph: nx.MultiDiGraph, constants: Mapping[str, Any]) -> None:
        self.constants = constants
        self.starts: dict[StateKey, tuple[dict[str, Any], list[Step]]] = {}
        unlike = f"the reference's initial states are not TLC's: run `kraftspec agree {self.component}`"
        for obj, prefix in self.initial_traces(constants):
            point = Point(explicit_state(obj), 0)
            made = _run(point, prefix)
            if made is None:
                raise ValueError(f"the reference refuses the start of {obj}")
            point, steps = made
            key = self.key(point)
            if not graph.nodes.get(key, {}).get("initial"):
                raise ValueError(unlike)
            if steps:
                steps = posted(steps, point.node, point.clock, self.spec_post(dict(key)), INIT)
            self.starts[key] = (obj, steps)
        initials = {key for key, initial in graph.nodes(data="initial") if initial}
        if initials != set(self.starts):
            raise ValueError(unlike)
        variables = sorted(name for name, _ in next(iter(initials)))
        self.initial = state_key({name: "start" for name in variables})
        self.graph = graph.copy()
        for key in sorted(initials, key=repr):
            self.graph.add_edge(self.initial, key, INIT)

    def trace(self, path: list[Edge], trace_id: str, meta: dict[str, Any]) -> Trace:
        """The trace of a path from the root: its ``Init`` edge's explicit node, then each edge's inputs."""
        (_, start, _), rest = path[0], path[1:]
        obj, prefix = self.starts[start]
        point, steps = Point(explicit_state(obj), 0), list(prefix)
        if prefix:
            point, _ = _run(point, prefix) or (point, [])
        for _, target, label in rest:
            match = next((made for action, inputs in self.moves(point, self.constants) if action == label
                          for made in [_run(point, inputs)] if made is not None and self.key(made[0]) == target),
                         None)
            if match is None:
                raise ValueError(f"no input makes the spec's {label} edge: run `kraftspec agree {self.component}`")
            point, made = match
            steps.extend(posted(made, point.node, point.clock, self.spec_post(dict(target)), label))
        return Trace(component="raft", steps=tuple(steps), explicit=obj, id=trace_id, meta=meta)


def generate_tla(seed: int, walks: int, cover: str = "kinds", *, timeout_s: float = 600.0,
                 graph: Optional[nx.MultiDiGraph] = None) -> Iterator[Trace]:
    """``walks`` seeded random walks of TLC's graph of ``KRaftShutdown.tla`` (from the root), then the covering set
    (``cover``: ``kinds`` or ``edges``, ``broker_tla.walked_traces``); ``graph``: TLC's graph if already loaded."""
    model = load_model("shutdown")
    if graph is None:
        graph, _ = state_graph(model.module_path, model.config_path, timeout_s=timeout_s)
    yield from recorded(Recorder, graph, seed, walks, cover)


def recorded(recorder: type[Recorder], graph: nx.MultiDiGraph, seed: int, walks: int, cover: str) -> Iterator[Trace]:
    """The walks and covering set (``broker_tla.walked_traces``) of ``graph``, TLC's graph of the spec of
    ``recorder.component``, as that recorder's traces."""
    model = load_model(recorder.component)
    made = recorder(graph, read_constants(model.config_path))
    yield from walked_traces(made.graph, made.initial, seed, walks, cover, model.spec_module,
                             f"tla-{recorder.component}-", made.trace)
