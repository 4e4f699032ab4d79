"""``kraftspec generate tla --component features``: broker traces recorded from TLC's state graph of
``FeatureLevels.tla`` (rules §1.11, §1.3 checks 5-7).

As ``broker_tla`` does for the broker lifecycle: TLC explores the spec under ``FeatureLevels.cfg`` and dumps its
state graph; seeded random walks and a covering set are turned into traces of the broker component (the component
whose trace format carries ``update_features``). Each edge becomes the reference call that produces it
(``spec/agree_features.py``'s ``moves``: ``RegisterBroker`` is ``register_broker``, ``UnregisterBroker``
``unregister_broker``, ``UpdateFeatures`` ``update_features``; same action, same projected target), recorded with
the reference's response and records; each step states as ``post`` the finalized levels (``features``) and the log
end (``next_offset``) of the spec's state after the edge, so replaying checks the reference against the spec. Before
each edge a request the spec has no edge for is sent too (:func:`refusals`: a registration or an UpdateFeatures the
reference refuses there, taken in turn), stated with the reference's error and message and an unchanged ``post``,
so the traces also say what is refused and why (and Kafka's classes answer it under ``kraftspec conform``).
"""

from __future__ import annotations

from typing import Any, Iterator, Mapping

import networkx as nx

from kraftspec.reference import broker, feature_control
from kraftspec.reference.errors import Errors
from kraftspec.spec import agree_features
from kraftspec.spec.agree import load_model
from kraftspec.spec.state_graph import state_graph, state_key
from kraftspec.spec.tlc_config import read_constants
from kraftspec.traces.format.envelope import Step, Trace
from kraftspec.traces.recording.broker_tla import COVERS, Edge, walked_traces
from kraftspec.traces.replay import broker as broker_replay


def spec_post(state: Mapping[str, Any]) -> dict[str, Any]:
    """A TLC state of ``FeatureLevels.tla`` as trace post-state fields (the finalized levels other than 0)."""
    return {"features": {name: level for name, level in sorted(state["fin"].items()) if level},
            "next_offset": state["nextOffset"]}


def refusals(state: agree_features.ExploredState, constants: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The inputs of the spec's actions the reference refuses in ``state`` (no edge of the spec): registrations, then
    UpdateFeatures requests, in ``agree_features.moves``' order."""
    refused: list[tuple[str, dict[str, Any]]] = []
    for b in state.brokers:
        for software in sorted(constants["Softwares"]):
            request = agree_features.registration(b, software)
            if broker.register_broker(state.control, request, 0)[1].response.error is not Errors.NONE:
                refused.append(("register_broker", {"request": request, "now": 0}))
    for update in agree_features.requests(constants):
        if feature_control.update_features(state.control, update)[1].response.error is not Errors.NONE:
            refused.append(("update_features", {"request": update}))
    return refused


class _Recorder:
    """Turns paths of TLC's graph into traces through the reference calls that produce each edge."""

    def __init__(self, graph: nx.MultiDiGraph, constants: Mapping[str, Any]) -> None:
        self.constants = constants
        (self.initial_state,) = agree_features.initial_states(constants)
        self.initial = state_key(agree_features.project(self.initial_state))
        if not graph.nodes[self.initial].get("initial"):
            raise ValueError("the reference's initial state is not TLC's: run `kraftspec agree features`")

    def trace(self, path: list[Edge], trace_id: str, meta: dict[str, Any]) -> Trace:
        """The trace of a path from the initial state: each edge's reference call, its outputs and the spec's post."""
        state, steps = self.initial_state, []
        for _, target, label in path:
            refused = refusals(state, self.constants)  # an edge leaves the state: it is below MaxOffset
            if refused:
                action, args = refused[(len(steps) * 7 + len(path)) % len(refused)]
                _, _, response, written = broker_replay.apply(state.control, 0, Step(action, args))
                steps.append(Step(action, args, response, written, spec_post(agree_features.project(state))))
            moves = agree_features.moves(state, self.constants)
            match = next(((step.state, action, args) for step, action, args in moves
                          if step.action == label and state_key(agree_features.project(step.state)) == target), None)
            if match is None:
                raise ValueError(f"no reference call produces the spec's {label} edge: run `kraftspec agree features`")
            after, action, args = match
            step = Step(action, args)
            _, _, response, written = broker_replay.apply(state.control, 0, step)
            steps.append(Step(action, args, response, written, spec_post(dict(target))))
            state = after
        return Trace(component="broker", steps=tuple(steps), explicit=agree_features.EXPLICIT, id=trace_id, meta=meta)


def generate_tla(seed: int, walks: int, cover: str = "kinds", *, timeout_s: float = 900.0) -> Iterator[Trace]:
    """``walks`` seeded random walks of TLC's graph of ``FeatureLevels.tla``, then the covering set (``cover``:
    ``edges`` or ``kinds``, as ``broker_tla.generate_tla``)."""
    if cover not in COVERS:
        raise ValueError(f"unknown cover {cover!r} (known: {', '.join(COVERS)})")
    model = load_model("features")
    constants = read_constants(model.config_path)
    graph, _ = state_graph(model.module_path, model.config_path, timeout_s=timeout_s)
    recorder = _Recorder(graph, constants)
    yield from walked_traces(graph, recorder.initial, seed, walks, cover, model.spec_module, "tla-features-",
                             recorder.trace)
