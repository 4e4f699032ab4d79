"""Agreement between the reference and a TLA+ spec: same reachable states, same labelled edges.

``kraftspec agree COMPONENT`` explores the reference breadth-first under the bounds in the spec's
TLC config, projects every reference state onto the spec's variables, and compares that labelled
graph with TLC's full state graph (``-dump dot,actionlabels``). Self-loops are left out on both
sides (a rejected request leaves the reference unchanged; TLC has no step for it). On a
difference it prints the shortest path from an initial state to the first edge that differs, in
the spec's vocabulary (TLA+ states and action names) and the reference's (function calls).
The command compares fingerprints first (:mod:`kraftspec.spec.agree_fingerprint`, which also takes the deep
configs); the exact sets here explain its differences and serve the tests that need the states themselves.
"""

from __future__ import annotations

import importlib
import time
from collections import deque
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Generic, Hashable, Iterable, Mapping, Optional, TypeVar

import networkx as nx

from kraftspec import accelerate
from kraftspec.spec.state_graph import StateKey, state_key
from kraftspec.spec.tla_values import TlaValue

accelerate.install()  # the exploration runs the reference with faster constructors (checked equal)

S = TypeVar("S", bound=Hashable)
Edge = tuple[StateKey, str, StateKey]

COMPONENTS: dict[str, str] = {
    "broker": "kraftspec.spec.agree_broker",
    "partition": "kraftspec.spec.agree_partition",
    "raft": "kraftspec.spec.agree_raft",
    "controller": "kraftspec.spec.agree_controller",
    "voters": "kraftspec.spec.agree_voters",
    "features": "kraftspec.spec.agree_features",
    "shutdown": "kraftspec.spec.agree_shutdown",
    "listener": "kraftspec.spec.agree_listener",
    "autojoin": "kraftspec.spec.agree_autojoin",
    "requests": "kraftspec.spec.agree_requests",
}
SPEC_DIR = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Step(Generic[S]):
    """One reference transition: the spec action it corresponds to, the call in the reference's words, the result."""

    action: str
    call: str
    state: S


@dataclass(frozen=True)
class AgreementModel(Generic[S]):
    """How to explore one component's reference under its spec's bounds (see DEVELOPERS.md)."""

    component: str
    spec_module: str
    initial_states: Callable[[Mapping[str, TlaValue]], Iterable[S]]
    successors: Callable[[S, Mapping[str, TlaValue]], Iterable[Step[S]]]
    project: Callable[[S], Mapping[str, TlaValue]]
    deep: bool = False  # explore under the spec's ``.deep.cfg`` (see :meth:`deepened`)
    extra_configs: tuple[str, ...] = ()  # ``<Spec>.<name>.cfg`` agreed too (smaller bounds for more actions)
    config: str = ""  # which of ``extra_configs`` this model runs under ("": the spec's own ``.cfg``)

    @property
    def module_path(self) -> Path:
        return SPEC_DIR / f"{self.spec_module}.tla"

    @property
    def config_path(self) -> Path:
        named = f".{self.config}" if self.config else ""
        return SPEC_DIR / f"{self.spec_module}{named}{'.deep' if self.deep else ''}.cfg"

    @property
    def run_name(self) -> str:
        """The spec's name in reports, with the config's when it is one of ``extra_configs``."""
        return f"{self.spec_module} ({self.config_path.name})" if self.config else self.spec_module

    def under_each_config(self) -> "list[AgreementModel[S]]":
        """This model under the spec's ``.cfg``, then under each of ``extra_configs`` (what ``agree`` and the main
        job run)."""
        return [self] + [replace(self, config=name) for name in self.extra_configs]

    def deepened(self) -> "Optional[AgreementModel[S]]":
        """This model under the spec's deeper bounds (its ``.deep.cfg``), or None when the spec has none."""
        deep = replace(self, deep=True)
        return deep if deep.config_path.exists() else None


@dataclass
class LabelledGraph:
    """A reachable state graph in the spec's vocabulary, with how each edge was produced by the reference."""

    initial: set[StateKey] = field(default_factory=set)
    nodes: set[StateKey] = field(default_factory=set)
    edges: set[Edge] = field(default_factory=set)
    calls: dict[Edge, str] = field(default_factory=dict)
    witnesses: dict[StateKey, Any] = field(default_factory=dict)

    @property
    def edge_count(self) -> int:
        return len(self.edges)


class _Escaped(Exception):
    """Raised inside the exploration when the reference leaves the graph it must stay within."""


def explore_reference(model: AgreementModel[S], constants: Mapping[str, TlaValue], *,
                      within: Optional[LabelledGraph] = None) -> LabelledGraph:
    """Breadth-first exploration of the reference's reachable states under the spec's bounds.

    Each distinct reference state is projected once; edges are kept in the spec's vocabulary with
    the reference call that produced them. With ``within``, the exploration stops at the first
    initial state or edge that graph lacks (which is then the last one added).
    """
    graph = LabelledGraph()
    keys: dict[S, StateKey] = {}
    queue: deque[S] = deque()

    def visit(state: S) -> StateKey:
        key = keys.get(state)
        if key is None:
            key = keys[state] = state_key(model.project(state))
            queue.append(state)
            graph.nodes.add(key)
            graph.witnesses.setdefault(key, state)
        return key

    try:
        for state in model.initial_states(constants):
            key = visit(state)
            graph.initial.add(key)
            if within is not None and key not in within.initial:
                raise _Escaped
        while queue:
            state = queue.popleft()
            source = keys[state]
            for step in model.successors(state, constants):
                target = visit(step.state)
                if target != source:
                    edge = (source, step.action, target)
                    if edge not in graph.calls:
                        graph.edges.add(edge)
                        graph.calls[edge] = step.call
                        if within is not None and edge not in within.edges:
                            raise _Escaped
    except _Escaped:
        pass
    return graph


def graph_from_tlc(dump: "nx.MultiDiGraph") -> LabelledGraph:
    """The spec's graph from TLC's dump (nodes are state keys with attribute ``initial``; edges carry ``action``)."""
    graph = LabelledGraph()
    for node, data in dump.nodes(data=True):
        graph.nodes.add(node)
        if data.get("initial"):
            graph.initial.add(node)
    for source, target, data in dump.edges(data=True):
        if source != target:
            graph.edges.add((source, data["action"], target))
    return graph


@dataclass(frozen=True)
class Difference:
    """The first differing edge (or initial state), with the shortest path that reaches it."""

    kind: str  # "edge only in reference", "edge only in spec", "initial state only in ..."
    path: tuple[Edge, ...]
    edge: Optional[Edge]
    state: Optional[StateKey]


@dataclass(frozen=True)
class AgreementReport:
    """The outcome of one agreement check."""

    component: str
    spec_states: int
    spec_edges: int
    reference_states: int
    reference_edges: int
    difference: Optional[Difference]
    reference_seconds: float
    tlc_seconds: float

    @property
    def identical(self) -> bool:
        return self.difference is None

    def summary(self) -> str:
        if self.identical:
            return f"agree {self.component}: {self.spec_states} states, {self.spec_edges} edges, identical"
        return (f"agree {self.component}: DIFFERENT (spec {self.spec_states} states / {self.spec_edges} edges, "
                f"reference {self.reference_states} states / {self.reference_edges} edges): {self.difference.kind}")


def _shortest_paths(graph: LabelledGraph) -> dict[StateKey, tuple[Edge, ...]]:
    """Breadth-first shortest edge paths from the initial states to every node."""
    adjacency: dict[StateKey, list[Edge]] = {}
    for edge in sorted(graph.edges, key=repr):
        adjacency.setdefault(edge[0], []).append(edge)
    paths: dict[StateKey, tuple[Edge, ...]] = {key: () for key in graph.initial}
    queue = deque(sorted(graph.initial, key=repr))
    while queue:
        node = queue.popleft()
        for edge in adjacency.get(node, []):
            if edge[2] not in paths:
                paths[edge[2]] = paths[node] + (edge,)
                queue.append(edge[2])
    return paths


def first_difference(reference: LabelledGraph, spec: LabelledGraph, *, one_sided: bool = False) -> Optional[Difference]:
    """The difference closest to an initial state, or None when the graphs are identical.

    ``one_sided`` looks only for what the reference has and the spec lacks.
    """
    sides = (("reference", reference, spec),) if one_sided else (("reference", reference, spec), ("spec", spec, reference))
    for side, mine, other in sides:
        extra = sorted(mine.initial - other.initial, key=repr)
        if extra:
            return Difference(f"initial state only in {side}", (), None, extra[0])
    candidates: list[tuple[int, str, Difference]] = []
    for side, mine, other in sides:
        extra_edges = mine.edges - other.edges
        if not extra_edges:
            continue  # the shortest paths (edges sorted by their TLA+ text) only for a side with a difference
        paths = _shortest_paths(mine)
        for edge in extra_edges:
            path = paths.get(edge[0])
            if path is not None:
                candidates.append((len(path), repr(edge), Difference(f"edge only in {side}", path, edge, None)))
    if candidates:
        return min(candidates, key=lambda c: (c[0], c[1]))[2]
    return None


def load_model(component: str) -> AgreementModel[Any]:
    """The agreement model of ``component`` (a clear error for one that does not exist yet)."""
    if component not in COMPONENTS:
        raise KeyError(f"unknown component {component!r}; known: {', '.join(sorted(COMPONENTS))}")
    try:
        module = importlib.import_module(COMPONENTS[component])
    except ModuleNotFoundError as exc:
        if exc.name == COMPONENTS[component]:
            raise KeyError(f"component {component!r} has no agreement model yet") from exc
        raise
    return module.MODEL


def graph_from_dot(path: str | Path) -> LabelledGraph:
    """The spec's graph read straight from TLC's dot dump (``graph_from_tlc(load_dot(path))`` without networkx)."""
    from kraftspec.spec.state_graph import dot_statements
    from kraftspec.spec.tla_parse import parse_state

    graph = LabelledGraph()
    key_of: dict[str, StateKey] = {}
    transitions: list[tuple[str, str, str]] = []
    for source, target, text, initial in dot_statements(path):
        if target:
            transitions.append((source, text, target))
            continue
        key = key_of[source] = state_key(parse_state(text))
        graph.nodes.add(key)
        if initial:
            graph.initial.add(key)
    for source, action, target in transitions:
        edge = (key_of[source], action, key_of[target])
        if edge[0] != edge[2]:
            graph.edges.add(edge)
    return graph


def spec_graph(model: AgreementModel[Any], *, timeout_s: float = 600.0, workers: int = 2) -> tuple[LabelledGraph, float]:
    """TLC's full state graph of the component's spec (TLC run with ``-deadlock``), and the seconds it took."""
    import tempfile

    from kraftspec.spec.tlc import run_tlc

    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="kraftspec-graph-") as tmp:
        dot = Path(tmp) / "states.dot"
        run_tlc(model.module_path, model.config_path, dump_graph_to=dot, timeout_s=timeout_s, workers=workers)
        return graph_from_dot(dot), time.perf_counter() - started


def check_agreement(model: AgreementModel[Any], *, timeout_s: float = 600.0, workers: int = 2,
                    spec: Optional[tuple[LabelledGraph, float]] = None, stop_early: bool = False) -> AgreementReport:
    """Run TLC's state-graph dump (unless ``spec`` is given) and the reference exploration, and compare them.

    Without ``spec``, TLC (a separate process) runs while the reference is explored. ``stop_early`` first
    explores the reference only until it leaves the spec's graph (a fast verdict for a wrong reference); the
    full comparison follows only when it never does.
    """
    from concurrent.futures import ThreadPoolExecutor

    from kraftspec.spec.tlc_config import read_constants

    constants = read_constants(model.config_path)
    with ThreadPoolExecutor(max_workers=1) as pool:
        pending = None if spec is not None else pool.submit(spec_graph, model, timeout_s=timeout_s, workers=workers)
        reference = None
        if pending is not None and not stop_early:
            started = time.perf_counter()
            reference = explore_reference(model, constants)
            reference_seconds = time.perf_counter() - started
        spec, tlc_seconds = spec if pending is None else pending.result()
    difference = None
    if reference is None:
        started = time.perf_counter()
        if stop_early:
            reference = explore_reference(model, constants, within=spec)
            difference = first_difference(reference, spec, one_sided=True)
        if difference is None:
            reference = explore_reference(model, constants)
        reference_seconds = time.perf_counter() - started
    if difference is None:
        difference = first_difference(reference, spec)
    return AgreementReport(
        component=model.component, spec_states=len(spec.nodes), spec_edges=spec.edge_count,
        reference_states=len(reference.nodes), reference_edges=reference.edge_count,
        difference=difference, reference_seconds=reference_seconds,
        tlc_seconds=tlc_seconds,
    )


def explain(report: AgreementReport, model: AgreementModel[Any]) -> str:
    """The shortest path to the first difference, in the spec's vocabulary and the reference's."""
    from kraftspec.spec.tla_parse import to_tla
    from kraftspec.spec.tlc_config import read_constants

    difference = report.difference
    if difference is None:
        return report.summary()
    reference = explore_reference(model, read_constants(model.config_path))
    lines = [report.summary(), ""]

    def show(key: StateKey) -> list[str]:
        return [f"      /\\ {name} = {to_tla(value)}" for name, value in key]

    if difference.state is not None:
        lines.append(f"{difference.kind}:")
        lines.extend(show(difference.state))
        return "\n".join(lines)
    lines.append(f"Shortest path to the first differing edge ({len(difference.path)} steps before it):")
    start = difference.path[0][0] if difference.path else difference.edge[0]
    lines.append("  initial state:")
    lines.extend(show(start))
    for index, edge in enumerate(difference.path + (difference.edge,), start=1):
        last = index == len(difference.path) + 1
        call = reference.calls.get(edge, "(no reference call takes this edge)")
        marker = f"  DIFFERS ({difference.kind})" if last else ""
        lines.append(f"  step {index}: spec action {edge[1]}; reference call {call}{marker}")
        lines.extend(show(edge[2]))
    return "\n".join(lines)
