"""``kraftspec generate tla --component autojoin``: raft traces of the node ``KRaftAutoJoin.tla`` follows, recorded from
TLC's state graph (rules §3.15).

TLC explores the spec under ``KRaftAutoJoin.cfg`` and dumps its state graph; seeded random walks and a covering set
(the loop ``broker_tla.walked_traces`` shares) become traces of the spec's ``Local`` node. The walks start from a root
added to the graph whose ``Init`` edges lead to the initial states a trace can start from, so the first edge of a path
chooses the initial state. Every spec action is an input of the node and the poll that follows it, the inputs
``agree_autojoin.inputs`` lists: ``Poll`` is a ``tick`` one ms later, ``HandleFetchResponse`` a ``fetch_response``
(empty, or with a VotersRecord), ``HandleVoterChangeResponse`` a ``voter_change_response`` and
``HandleUpdateVoterResponse`` an ``update_raft_voter_response``, each without a correlation id (it answers the request
outstanding to the leader). Each edge's step is the reference's, matched to TLC's edge by the projected target
(``agree_autojoin.project``), and states as ``post`` what the spec's state gives of the node (role, epoch, leader, the
clock); the request it sent is in its recorded sends.

The initial states are explicit nodes started from their quorum-state file (epoch 1, leader ``Leader``) under
``agree_autojoin``'s timeouts: static voters at kraft.version 0, a bootstrap checkpoint at 1. A static node's
explicit state cannot say it may become a voter (``can_become_voter`` is a kraft.version 1 field), so the spec's
kraft.version 0 initial states with ``canBecomeVoter`` have no traces.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Iterator, Mapping, Optional

import networkx as nx

from kraftspec.reference import raft
from kraftspec.reference.raft_messages import FetchResponse, Tick, VoterChangeResponse
from kraftspec.spec import agree_autojoin as agree
from kraftspec.spec.agree import load_model
from kraftspec.spec.state_graph import StateKey, state_graph, state_key
from kraftspec.spec.tlc_config import read_constants
from kraftspec.traces.format.envelope import Step, Trace
from kraftspec.traces.format.raft import explicit_state
from kraftspec.traces.format.values import to_json
from kraftspec.traces.recording.broker_tla import Edge, walked_traces
from kraftspec.traces.recording.raft_inputs import message, tick
from kraftspec.traces.recording.raft_tla import posted, replayed

INIT = "Init"
"""The label of the root's edges to the spec's initial states."""


@dataclass(frozen=True)
class Point:
    """The node as the trace has made it, the clock and the request it has outstanding to the leader."""

    node: raft.RaftNode
    clock: int
    request: str

    @property
    def key(self) -> StateKey:
        return state_key(agree.project(agree.ExploredState(self.node, self.clock, self.request)))


def _listeners(listeners: Mapping[str, tuple[str, int]]) -> list[str]:
    return [f"{name}://{host}:{port}" for name, (host, port) in listeners.items()]


def explicit(kraft_version: int, entry: str, can_become_voter: bool, auto_join: bool,
             constants: Mapping[str, Any]) -> Optional[dict[str, Any]]:
    """The trace's explicit initial state of the spec's initial state with these values (``agree_autojoin._start``),
    None for a static node that may become a voter (not expressible)."""
    local, leader = int(constants["Local"]), int(constants["Leader"])
    common = {"local_id": local, "directory_id": agree.directory_id(local),
              "quorum_state": {"epoch": 1, "leader_id": leader}, "config": to_json(agree._config(constants, auto_join))}
    if kraft_version == 0:
        if can_become_voter:
            return None
        ids = {leader, agree.OTHER} | ({local} if entry == "same" else set())
        return {**common, "voters": sorted(ids),
                "endpoints": {str(i): _listeners(agree.listeners(i)) for i in sorted(ids | {local})}}
    voters = agree.voter_set(local, leader, entry).voters
    bootstrap = [{"id": v.voter_key.id, "directory_id": v.voter_key.directory_id, "listeners": _listeners(v.listeners)}
                 for _, v in sorted(voters.items())]
    return {**common, "kraft_version": 1, "bootstrap_voters": bootstrap,
            "listeners": _listeners(agree.listeners(local)), "can_become_voter": can_become_voter}


def initial_objects(constants: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """The explicit initial states, in ``agree_autojoin.initial_choices``' order, of those a trace can express."""
    for choice in agree.initial_choices():
        obj = explicit(*choice, constants)
        if obj is not None:
            yield obj


def spec_post(state: Mapping[str, Any], constants: Mapping[str, Any]) -> dict[str, Any]:
    """What the spec's state gives of the node as trace post-state fields (``raft_replay.observe``'s names)."""
    return {"role": "Follower", "epoch": 1, "leader_id": int(constants["Leader"]), "clock": state["now"]}


_ACTIONS = {FetchResponse: "fetch_response", VoterChangeResponse: "voter_change_response"}


def _input(input_message: Any, now: int) -> Step:
    """An input of ``agree_autojoin.inputs`` as a trace step (an answer without correlation id)."""
    if isinstance(input_message, Tick):
        return tick(now)
    action = _ACTIONS.get(type(input_message), "update_raft_voter_response")
    return message(action, dataclasses.replace(input_message, correlation_id=None))


def _run(point: Point, step: Step) -> Optional[tuple[Point, list[Step]]]:
    """The step replayed from ``point`` with the reference's outputs; None if the node refuses it."""
    made = replayed(point.node, point.clock, [step])
    if made is None:
        return None
    node, clock, steps = made
    sent = [(s["destination"], s["type"]) for s in (steps[-1].response or {}).get("sends", ())]
    return Point(node, clock, agree.outstanding(node, point.request, sent)), steps


class Recorder:
    """Turns paths of TLC's graph (from the added root) into traces of the spec's node."""

    def __init__(self, graph: nx.MultiDiGraph, constants: Mapping[str, Any]) -> None:
        self.constants = constants
        self.starts = {Point(explicit_state(obj), 0, "none").key: obj for obj in initial_objects(constants)}
        initials = {key for key, initial in graph.nodes(data="initial") if initial}
        if not set(self.starts) <= initials:
            raise ValueError("the reference's initial states are not TLC's: run `kraftspec agree autojoin`")
        variables = sorted(name for name, _ in next(iter(initials)))
        self.initial = state_key({name: "start" for name in variables})
        self.graph = graph.copy()
        for key in sorted(self.starts, key=repr):
            self.graph.add_edge(self.initial, key, INIT)

    def trace(self, path: list[Edge], trace_id: str, meta: dict[str, Any]) -> Trace:
        """The trace of a path from the root: its ``Init`` edge's explicit node, then each edge's input."""
        obj = self.starts[path[0][1]]
        point, steps = Point(explicit_state(obj), 0, "none"), []
        for _, target, label in path[1:]:
            state = agree.ExploredState(point.node, point.clock, point.request)
            match = next((made for action, _, sent, now in agree.inputs(state, self.constants) if action == label
                          for made in [_run(point, _input(sent, now))] if made is not None and made[0].key == target),
                         None)
            if match is None:
                raise ValueError(f"no input makes the spec's {label} edge: run `kraftspec agree autojoin`")
            point, made = match
            steps.extend(posted(made, point.node, point.clock, spec_post(dict(target), self.constants), label))
        return Trace(component="raft", steps=tuple(steps), explicit=obj, id=trace_id, meta=meta)


def generate_tla(seed: int, walks: int, cover: str = "kinds", *, timeout_s: float = 600.0,
                 graph: Optional[nx.MultiDiGraph] = None) -> Iterator[Trace]:
    """``walks`` seeded random walks of TLC's graph of ``KRaftAutoJoin.tla`` (from the root), then the covering set
    (``cover``: ``kinds`` or ``edges``, ``broker_tla.walked_traces``); ``graph``: TLC's graph if already loaded."""
    model = load_model("autojoin")
    constants = read_constants(model.config_path)
    if graph is None:
        graph, _ = state_graph(model.module_path, model.config_path, timeout_s=timeout_s)
    recorder = Recorder(graph, constants)
    yield from walked_traces(recorder.graph, recorder.initial, seed, walks, cover, model.spec_module,
                             "tla-autojoin-", recorder.trace)
