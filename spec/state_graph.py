"""Load the state graph TLC writes with ``-dump dot,actionlabels`` into a ``networkx.MultiDiGraph``.

TLC's dot file has one line per state, ``FP [label="<state>"]`` (``,style = filled`` for initial
states), and one line per generated transition, ``FP1 -> FP2 [label="Action",...]``. A state label
is the state printed as ``/\\ var = value`` conjuncts with dot escaping (``\\n`` between conjuncts,
``\\"`` and ``\\\\``). Nodes of the loaded graph are :func:`state_key` values of the parsed states.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any, Iterator, Mapping

import networkx as nx

from kraftspec.spec.tla_parse import parse_state, to_tla
from kraftspec.spec.tla_values import TlaValue
from kraftspec.spec.tlc import TlcResult, run_tlc

__all__ = ["StateKey", "state_key", "dot_statements", "load_dot", "state_graph"]

_INITIAL_END = '",style = filled]'


class StateKey(frozenset):  # type: ignore[type-arg]
    """A state as the frozenset of its ``(variable, value)`` pairs; ``dict(key)`` gives it back.

    Equal to (and hashing like) the plain frozenset of the same pairs. A frozenset caches its hash,
    which keeps graph operations cheap on states with large values. The repr prints the state in
    TLA+ with variables and set elements in a fixed order, so sorting keys by ``repr`` is
    deterministic across processes.
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return "StateKey(" + " /\\ ".join(f"{var} = {to_tla(value)}" for var, value in sorted(self)) + ")"


def state_key(state: Mapping[str, TlaValue]) -> StateKey:
    """The hashable, canonical key of a state (see :class:`StateKey`)."""
    return StateKey(state.items())


def _undot(label: str) -> str:
    """The text of a dot string body as TLC escapes it (``\\\\``, ``\\"`` and ``\\n``)."""
    if "\\" not in label:
        return label
    return "\\".join(part.replace('\\"', '"').replace("\\n", "\n") for part in label.split("\\\\"))


def dot_statements(path: str | os.PathLike[str]) -> Iterator[tuple[str, str, str, bool]]:
    """The dump's statements read line by line, as ``(source, target, text, initial)``: an edge (``target`` set,
    ``text`` its action) or a state (``target`` empty, ``text`` the state as TLC printed it)."""
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            head, is_statement, rest = line.rstrip("\n").partition(' [label="')
            if not is_statement:
                continue
            source, is_edge, target = head.partition(" -> ")
            if is_edge:
                yield source, target, _undot(rest.partition('"')[0]), False
                continue
            rest = rest.rstrip(";")
            initial = rest.endswith(_INITIAL_END)
            if not initial and not rest.endswith('"]'):
                raise ValueError(f"{path}: not a TLC dot state line: {line[:200]!r}")
            yield source, "", _undot(rest[: -len(_INITIAL_END)] if initial else rest[:-2]), initial


def load_dot(path: str | os.PathLike[str]) -> nx.MultiDiGraph:
    """The state graph in a TLC dot dump.

    Nodes are :func:`state_key` values with attributes ``state`` (the parsed dict) and ``initial``;
    edges carry ``action`` and are keyed by it, so a transition TLC generated more than once (for
    different action parameters, say) appears once.
    """
    graph = nx.MultiDiGraph()
    node_of: dict[str, StateKey] = {}
    edges: dict[tuple[str, str, str], None] = {}
    for source, target, text, initial in dot_statements(path):
        if target:
            edges[source, target, text] = None
            continue
        state = parse_state(text)
        key = state_key(state)
        node_of[source] = key
        graph.add_node(key, state=state, initial=initial)
    for source, target, action in edges:  # add_edge in a loop is about twice as fast as add_edges_from
        graph.add_edge(node_of[source], node_of[target], key=action, action=action)
    return graph


def state_graph(
    module_path: str | os.PathLike[str], config_path: str | os.PathLike[str] | None = None, **tlc_args: Any
) -> tuple[nx.MultiDiGraph, TlcResult]:
    """Run TLC on the module with ``-dump dot,actionlabels`` and load the graph (see :func:`load_dot`).

    ``tlc_args`` go to :func:`kraftspec.spec.tlc.run_tlc`; the dot file lives in a temporary
    directory. Raises :class:`kraftspec.spec.tlc.TlcError` subclasses like ``run_tlc``.
    """
    with tempfile.TemporaryDirectory(prefix="kraftspec-graph-") as tmp:
        dot = Path(tmp) / "states.dot"
        result = run_tlc(module_path, config_path, dump_graph_to=dot, **tlc_args)
        return load_dot(dot), result
