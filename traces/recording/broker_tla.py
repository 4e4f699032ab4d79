"""``kraftspec generate tla``: traces recorded from TLC's state graph of ``BrokerLifecycle.tla``.

TLC explores the spec under ``BrokerLifecycle.cfg`` and dumps its state graph; seeded random walks
and a covering set (every edge, self-loops included, taken at least once) are turned into traces.
Each edge becomes the reference call that produces it (``spec/agree_broker.py``'s ``moves``: same
action, same projected target), recorded with the reference's response and records; each step's
``post`` holds the spec variables the edge changed, in the trace format's vocabulary, so replaying
checks the reference's post-state against the spec's state after every step.
"""

from __future__ import annotations

import random
from collections import deque
from typing import Any, Callable, Hashable, Iterator, Mapping, Optional

import networkx as nx

from kraftspec.spec import agree_broker
from kraftspec.spec.agree import load_model
from kraftspec.spec.state_graph import StateKey, state_graph, state_key
from kraftspec.spec.tlc_config import read_constants
from kraftspec.traces.replay import broker as broker_replay
from kraftspec.traces.format.broker import BROKER
from kraftspec.traces.format.envelope import Step, Trace

Edge = tuple[StateKey, StateKey, str]
MAX_WALK = 24


def _entries(value: Any) -> list[tuple[Any, Any]]:
    """The (argument, value) pairs of a TLA+ function (a tuple is a function on 1..n)."""
    return list(enumerate(value, start=1)) if isinstance(value, tuple) else sorted(value.items())


def spec_post(state: Mapping[str, Any]) -> dict[str, Any]:
    """A TLC state of ``BrokerLifecycle.tla`` as trace post-state fields (``broker_replay.observe``'s names)."""
    partition = state["part"]
    return {
        "clock": state["clock"],
        "next_offset": state["nextOffset"],
        "brokers": {str(b): {"epoch": r["epoch"], "incarnation_id": str(r["inc"]), "fenced": r["fenced"],
                             "in_controlled_shutdown": r["ics"]} for b, r in _entries(state["reg"]) if r["epoch"] >= 0},
        "heartbeats": {str(b): {"fenced": h["fenced"], "metadata_offset": h["offset"],
                                "controlled_shutdown_offset": h["cso"]} for b, h in _entries(state["hb"]) if h["present"]},
        "sessions": {f"{b}:{e}": t for (b, e), t in _entries(state["sessions"])},
        "partitions": {f"{agree_broker.TOPIC.topic_id}:0": {
            "leader": partition["leader"], "isr": list(partition["isr"]), "leader_epoch": partition["leaderEpoch"],
            "partition_epoch": partition["partitionEpoch"]}},
    }


class _Recorder:
    """Turns paths of TLC's graph into traces through the reference calls that produce each edge."""

    def __init__(self, graph: nx.MultiDiGraph, constants: Mapping[str, Any]) -> None:
        self.graph = graph
        self.constants = constants
        (self.initial_state,) = agree_broker.initial_states(constants)
        self.initial = state_key(agree_broker.project(self.initial_state))
        if not graph.nodes[self.initial].get("initial"):
            raise ValueError("the reference's initial state is not TLC's: run `kraftspec agree broker`")
        self.moves: dict[agree_broker.ExploredState, list[tuple[str, StateKey, agree_broker.ExploredState, str, dict[str, Any]]]] = {}
        self.explicit = {
            "cluster_id": agree_broker.CLUSTER_ID, "metadata_version": agree_broker.METADATA_VERSION,
            "session_timeout": int(constants["SessionTimeout"]),
            "records": [BROKER.encode_record(offset, record) for offset, record in agree_broker.initial_log(constants)],
            "next_offset": self.initial_state.control.next_offset, "activated_at": 0}

    def _moves(self, state: agree_broker.ExploredState) -> list[tuple[str, StateKey, agree_broker.ExploredState, str, dict[str, Any]]]:
        found = self.moves.get(state)
        if found is None:
            found = self.moves[state] = [(step.action, state_key(agree_broker.project(step.state)), step.state, action, args)
                                         for step, action, args in agree_broker.moves(state, self.constants)]
        return found

    def trace(self, path: list[Edge], trace_id: str, meta: dict[str, Any]) -> Trace:
        """The trace of a path from the initial state: each edge's reference call, outputs and changed spec variables."""
        state, steps = self.initial_state, []
        for source, target, label in path:
            match = next(((after, action, args) for spec_action, key, after, action, args in self._moves(state)
                          if spec_action == label and key == target), None)
            if match is None:
                raise ValueError(f"no reference call produces the spec's {label} edge: run `kraftspec agree broker`")
            after, action, args = match
            step = Step(action, args)
            _, _, response, written = broker_replay.apply(state.control, state.clock, step)
            before, post = spec_post(dict(source)), spec_post(dict(target))
            changed = {name: value for name, value in post.items() if before[name] != value}
            steps.append(Step(action, args, response, written, changed or None))
            state = after
        return Trace(component="broker", steps=tuple(steps), explicit=self.explicit, id=trace_id, meta=meta)


def _out_edges(graph: nx.MultiDiGraph, node: StateKey) -> list[Edge]:
    return sorted(((u, v, a) for u, v, a in graph.out_edges(node, keys=True)), key=lambda e: (e[2], repr(e[1])))


def edge_kind(edge: Edge) -> tuple[str, frozenset[str]]:
    """What an edge does: its action and the set of spec variables it changes."""
    source, target, action = edge
    before = dict(source)
    return action, frozenset(name for name, value in target if before[name] != value)


COVERS: dict[str, Callable[[Edge], Hashable]] = {"edges": lambda edge: edge, "kinds": edge_kind}


def covering_paths(graph: nx.MultiDiGraph, initial: StateKey, covered: set[Hashable],
                   key: Callable[[Edge], Hashable]) -> Iterator[list[Edge]]:
    """Paths from ``initial`` that together take an edge of every ``key`` not in ``covered`` at least once.

    Each reaches an edge of an uncovered key by a shortest path, then follows such edges greedily.
    With ``key`` the identity every edge is taken (72,102 paths, 508,736 steps under
    ``BrokerLifecycle.cfg``); with :func:`edge_kind` every kind of transition is.
    """
    parent: dict[StateKey, Optional[Edge]] = {initial: None}
    order, queue = [initial], deque([initial])
    while queue:
        node = queue.popleft()
        for edge in _out_edges(graph, node):
            if edge[1] not in parent:
                parent[edge[1]] = edge
                order.append(edge[1])
                queue.append(edge[1])
    for node in order:
        for edge in _out_edges(graph, node):
            if key(edge) in covered:
                continue
            path: list[Edge] = []
            back = parent[node]
            while back is not None:
                path.append(back)
                back = parent[back[0]]
            path.reverse()
            path.append(edge)
            covered.update(key(e) for e in path)
            while len(path) < MAX_WALK:
                nxt = next((e for e in _out_edges(graph, path[-1][1]) if key(e) not in covered), None)
                if nxt is None:
                    break
                path.append(nxt)
                covered.add(key(nxt))
            yield path


def random_walks(graph: nx.MultiDiGraph, initial: StateKey, rng: random.Random, walks: int) -> Iterator[list[Edge]]:
    """``walks`` random walks from ``initial``, each of 1 to ``MAX_WALK`` edges drawn by ``rng`` among a state's
    out-edges in a fixed order (a walk ends early at a state without successors)."""
    for _ in range(walks):
        node, path = initial, []
        for _ in range(rng.randint(1, MAX_WALK)):
            out = _out_edges(graph, node)
            if not out:
                break
            edge = rng.choice(out)
            path.append(edge)
            node = edge[1]
        yield path


def walked_traces(graph: nx.MultiDiGraph, initial: StateKey, seed: int, walks: int, cover: str, spec: str,
                  prefix: str, trace: Callable[[list[Edge], str, dict[str, Any]], Trace]) -> Iterator[Trace]:
    """The loop every ``*_tla`` recorder shares: ``walks`` seeded random walks of ``graph`` from ``initial``
    (:func:`random_walks`, ids ``<prefix>walk-<seed>-<i>``, meta ``walk``), then the covering set of what they left
    uncovered (:func:`covering_paths` under ``COVERS[cover]``, ids ``<prefix>cover-<seed>-<i>``, meta ``path``), each
    path made a trace by ``trace(path, id, meta)``."""
    if cover not in COVERS:
        raise ValueError(f"unknown cover {cover!r} (known: {', '.join(COVERS)})")
    key = COVERS[cover]
    covered: set[Hashable] = set()
    meta = {"generator": "kraftspec generate tla", "spec": spec, "seed": seed, "cover": cover}
    for index, path in enumerate(random_walks(graph, initial, random.Random(seed), walks)):
        covered.update(map(key, path))
        yield trace(path, f"{prefix}walk-{seed}-{index}", {**meta, "walk": index})
    for index, path in enumerate(covering_paths(graph, initial, covered, key)):
        yield trace(path, f"{prefix}cover-{seed}-{index}", {**meta, "path": index})


def generate_tla(seed: int, walks: int, cover: str = "kinds", *, timeout_s: float = 900.0) -> Iterator[Trace]:
    """``walks`` seeded random walks of TLC's broker graph (1 to ``MAX_WALK`` steps), then the covering set.

    ``cover`` is ``edges`` (every edge of TLC's graph) or ``kinds`` (every kind of transition, see
    :func:`edge_kind`); the walks count as covering what they take.
    """
    if cover not in COVERS:
        raise ValueError(f"unknown cover {cover!r} (known: {', '.join(COVERS)})")
    model = load_model("broker")
    constants = read_constants(model.config_path)
    graph, _ = state_graph(model.module_path, model.config_path, timeout_s=timeout_s)
    recorder = _Recorder(graph, constants)
    yield from walked_traces(graph, recorder.initial, seed, walks, cover, model.spec_module, "tla-", recorder.trace)
