"""Agreement by fingerprints: the reference's graph and TLC's compared as sorted arrays of integers.

``kraftspec agree`` takes this path (``--deep`` too, where :mod:`kraftspec.spec.agree`'s sets of states would not fit
in memory). TLC runs in its own process while the reference is explored; its dot dump is then read line by line,
never held whole. A spec state, projected from the reference or printed by TLC, is named by the 128-bit BLAKE2b
digest of its canonical text (variables in name order, each value printed by :func:`to_tla`) and numbered in order of
first sight, the reference's states first; an edge is one 64-bit integer (source, target, action numbers). States,
initial states and edges are compared as sorted numpy arrays, self-loops left out as in the exact check.

Collisions, stated as TLC states its own: two distinct spec states share a digest with probability at most
n^2 / 2^129 (below 1e-24 for 10^7 states); TLC's count of distinct states must equal the dump's count of digests.
The reference's visited set holds each reference state's 64-bit Python hash: a collision would skip a state, with
probability about n^2 / 2^65 (6e-6 for 1.5 x 10^7 reference states), an optimistic figure as TLC's is, since
CPython's hash is not a fingerprint (-1 and -2 hash alike). On a difference the exact check (:func:`kraftspec.spec.agree.check_agreement`) gives
the explanation where it fits in memory; otherwise :func:`explain_fingerprints` re-derives the shortest path.
"""

from __future__ import annotations

import hashlib
import time
from array import array
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Optional

import numpy as np

from kraftspec.spec.agree import AgreementModel, AgreementReport, Difference
from kraftspec.spec.state_graph import dot_statements
from kraftspec.spec.tla_parse import parse_value, state_conjuncts, to_tla
from kraftspec.spec.tla_values import TlaValue
from kraftspec.spec.tlc import TlcResult, run_tlc

ID_BITS, ACTION_BITS = 28, 8
_ID_MASK, _ACTION_MASK = (1 << ID_BITS) - 1, (1 << ACTION_BITS) - 1


def _digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


@lru_cache(maxsize=1 << 18)
def _value_digest(name: str, value: TlaValue) -> bytes:
    """The digest of a variable's projected value. Cached per variable: Python calls ``(0, 1)`` and
    ``(False, True)`` equal, which only values of different variables may be in a spec that TLC type-checks."""
    return _digest(to_tla(value).encode())


@lru_cache(maxsize=1 << 20)
def _text_digest(text: str) -> bytes:
    """The digest of a value as TLC printed it: parsed, then printed canonically."""
    return _digest(to_tla(parse_value(text)).encode())


def _state_digest(pairs: Iterable[tuple[str, bytes]]) -> bytes:
    """A state's digest from its variables' (names hold no ``=``, value digests are 16 bytes: unambiguous)."""
    return _digest(b"".join(name.encode() + b"=" + value for name, value in sorted(pairs)))


def projected_digest(state: Mapping[str, TlaValue]) -> bytes:
    """The digest of a projected reference state."""
    return _state_digest((name, _value_digest(name, value)) for name, value in state.items())


def printed_digest(label: str) -> bytes:
    """The digest of a state as TLC prints it (``/\\ var = value`` conjuncts)."""
    return _state_digest((name, _text_digest(text)) for name, text in state_conjuncts(label))


class Numbering:
    """Dense numbers for keys, in order of first sight (shared by both sides of one check)."""

    def __init__(self, bits: int) -> None:
        self._numbers: dict[Any, int] = {}
        self._limit = 1 << bits

    def __call__(self, key: Any) -> int:
        number = self._numbers.get(key)
        if number is None:
            number = self._numbers[key] = len(self._numbers)
            if number >= self._limit:
                raise OverflowError(f"more than {self._limit} distinct keys: widen the packed edge")
        return number

    def __len__(self) -> int:
        return len(self._numbers)

    def names(self) -> list[Any]:
        return list(self._numbers)


def pack(source: int, action: int, target: int) -> int:
    """One edge as a 64-bit integer."""
    return (source << (ID_BITS + ACTION_BITS)) | (target << ACTION_BITS) | action


def unpack(edge: int) -> tuple[int, int, int]:
    """``(source, action, target)`` of a packed edge."""
    edge = int(edge)
    return edge >> (ID_BITS + ACTION_BITS), edge & _ACTION_MASK, (edge >> ACTION_BITS) & _ID_MASK


@dataclass
class FingerprintGraph:
    """One side's graph as sorted, distinct state numbers and packed edges."""

    initial: np.ndarray
    states: np.ndarray
    edges: np.ndarray
    parents: Optional[np.ndarray] = None  # reference side: per state number, the packed edge that first reached it


def _sorted(values: array) -> np.ndarray:  # type: ignore[type-arg]
    return np.unique(np.frombuffer(values, dtype=np.uint64 if values.typecode == "Q" else np.int64))


def explore_reference(model: AgreementModel[Any], constants: Mapping[str, TlaValue], numbers: Numbering,
                      actions: Numbering, *, progress: Optional[Callable[[str], None]] = None) -> FingerprintGraph:
    """Breadth-first exploration of the reference (as :func:`kraftspec.spec.agree.explore_reference`), keeping
    numbers only. Spec states are numbered here first, in breadth-first order, so ``parents`` spans them all.
    ``progress`` is told the counts every 2^18 reference states."""
    started = time.perf_counter()
    spec_of: dict[int, int] = {}  # reference state's hash -> its spec state's number
    queue: deque[tuple[Any, int]] = deque()
    initial, edges = array("q"), array("Q")
    parents = array("q")  # indexed by spec number: the packed edge first reaching it (-1: initial)
    arriving = -1

    def visit(state: Any) -> int:
        key = hash(state)
        number = spec_of.get(key)
        if number is None:
            number = spec_of[key] = numbers(projected_digest(model.project(state)))
            queue.append((state, number))
            if progress is not None and not len(spec_of) & 0x3FFFF:
                progress(f"reference: {len(spec_of)} states ({len(numbers)} spec states, {len(queue)} queued, "
                         f"{len(edges)} edges) after {time.perf_counter() - started:.0f} s")
            if number == len(parents):
                parents.append(arriving)
        return number

    for state in model.initial_states(constants):
        initial.append(visit(state))
    while queue:
        state, source = queue.popleft()
        for step in model.successors(state, constants):
            arriving = pack(source, actions(step.action), 0)
            target = visit(step.state)
            if target != source:
                edges.append(arriving | (target << ACTION_BITS))
    packed_parents = np.frombuffer(parents, dtype=np.int64).copy()
    reached = np.flatnonzero(packed_parents != -1)  # fix the target field of each first-arrival edge
    packed_parents[reached] |= reached.astype(np.int64) << ACTION_BITS
    return FingerprintGraph(_sorted(initial), np.arange(len(parents), dtype=np.int64), _sorted(edges),
                            packed_parents)


def read_dot(path: str | Path, numbers: Numbering, actions: Numbering) -> tuple[FingerprintGraph, dict[int, int]]:
    """TLC's dot dump read line by line into numbers; also TLC's fingerprint -> state number."""
    tlc_numbers: dict[int, int] = {}
    initial, sources, targets, labels = array("q"), array("q"), array("q"), array("q")
    for source, target, text, is_initial in dot_statements(path):
        if target:
            sources.append(int(source))
            targets.append(int(target))
            labels.append(actions(text))
            continue
        number = tlc_numbers[int(source)] = numbers(printed_digest(text))
        if is_initial:
            initial.append(number)
    fingerprints = np.fromiter(tlc_numbers.keys(), dtype=np.int64, count=len(tlc_numbers))
    mapped = np.fromiter(tlc_numbers.values(), dtype=np.int64, count=len(tlc_numbers))
    order = np.argsort(fingerprints)
    fingerprints, mapped = fingerprints[order], mapped[order]

    def number_of(column: array) -> np.ndarray:  # type: ignore[type-arg]
        tlc = np.frombuffer(column, dtype=np.int64)
        at = np.minimum(np.searchsorted(fingerprints, tlc), max(len(fingerprints) - 1, 0))
        if len(tlc) and not np.array_equal(fingerprints[at], tlc):
            raise ValueError(f"{path}: an edge joins a state the dump never defines")
        return mapped[at]

    src, dst = number_of(sources), number_of(targets)
    keep = src != dst
    edges = ((src[keep].astype(np.uint64) << np.uint64(ID_BITS + ACTION_BITS))
             | (dst[keep].astype(np.uint64) << np.uint64(ACTION_BITS))
             | np.frombuffer(labels, dtype=np.int64)[keep].astype(np.uint64))
    return FingerprintGraph(_sorted(initial), np.unique(mapped), np.unique(edges)), tlc_numbers


def _distances(edges: np.ndarray, initial: np.ndarray, size: int) -> np.ndarray:
    """Breadth-first distance (edges) from the initial states to each state number (-1: unreached)."""
    distance = np.full(size, -1, dtype=np.int64)
    sources = (edges >> np.uint64(ID_BITS + ACTION_BITS)).astype(np.int64)
    targets = ((edges >> np.uint64(ACTION_BITS)) & np.uint64(_ID_MASK)).astype(np.int64)
    frontier, level = initial.astype(np.int64), 0
    distance[frontier] = 0
    while len(frontier):
        level += 1
        nxt = np.unique(targets[np.isin(sources, frontier)])
        nxt = nxt[distance[nxt] == -1]
        distance[nxt] = level
        frontier = nxt
    return distance


@dataclass(frozen=True)
class FingerprintDifference:
    """The difference closest to an initial state, in numbers: an initial state, or an edge and its source's
    distance from the initial states on the side that has it."""

    kind: str
    edge: Optional[tuple[int, int, int]]
    state: Optional[int]
    depth: int
    count: int  # how many initial states / edges differ on that side


def first_difference(reference: FingerprintGraph, spec: FingerprintGraph, size: int) -> Optional[FingerprintDifference]:
    """The closest difference (initial states first, then edges by the depth of their source), or None."""
    sides = (("reference", reference, spec), ("spec", spec, reference))
    for side, mine, other in sides:
        extra = np.setdiff1d(mine.initial, other.initial)
        if len(extra):
            return FingerprintDifference(f"initial state only in {side}", None, int(extra[0]), 0, len(extra))
    found: list[tuple[int, int, FingerprintDifference]] = []
    for side, mine, other in sides:
        extra = np.setdiff1d(mine.edges, other.edges, assume_unique=True)
        if not len(extra):
            continue
        depth = _distances(mine.edges, mine.initial, size)[(extra >> np.uint64(ID_BITS + ACTION_BITS))
                                                          .astype(np.int64)]
        depth = np.where(depth < 0, np.iinfo(np.int64).max, depth)
        at = int(np.argmin(depth))
        found.append((int(depth[at]), int(extra[at]),
                      FingerprintDifference(f"edge only in {side}", unpack(extra[at]), None, int(depth[at]),
                                            len(extra))))
    return min(found, key=lambda f: (f[0], f[1]))[2] if found else None


@dataclass
class FingerprintCheck:
    """A fingerprint agreement check's outcome, with what its explanation needs."""

    report: AgreementReport
    found: Optional[FingerprintDifference]
    reference: FingerprintGraph
    spec: FingerprintGraph
    actions: list[str]
    tlc: Optional[TlcResult]
    tlc_numbers: dict[int, int]  # TLC's fingerprint of each state -> its number


def check_fingerprints(model: AgreementModel[Any], dot_path: str | Path, *, timeout_s: float = 600.0,
                       workers: int = 2, run: bool = True,
                       progress: Optional[Callable[[str], None]] = None) -> FingerprintCheck:
    """TLC's graph (TLC run into ``dot_path`` in a thread, unless ``run`` is false and the dump is there) against
    the reference's, explored meanwhile; compared by fingerprints."""
    from kraftspec.spec.tlc_config import read_constants

    numbers, actions = Numbering(ID_BITS), Numbering(ACTION_BITS)
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=1) as pool:
        tlc: Optional[Future[TlcResult]] = None
        if run:
            tlc = pool.submit(run_tlc, model.module_path, model.config_path, dump_graph_to=dot_path,
                              timeout_s=timeout_s, workers=workers)
        reference = explore_reference(model, read_constants(model.config_path), numbers, actions, progress=progress)
        reference_seconds = time.perf_counter() - started
        result = tlc.result() if tlc is not None else None
    tlc_done = time.perf_counter()
    spec, tlc_numbers = read_dot(dot_path, numbers, actions)
    if result is not None and result.distinct_states != len(spec.states):
        raise ValueError(f"TLC reported {result.distinct_states} distinct states but its dump holds "
                         f"{len(spec.states)} distinct digests ({result.verdict})")
    found = first_difference(reference, spec, len(numbers))
    difference = None if found is None else Difference(f"{found.kind} ({found.count} in all)", (), None, None)
    report = AgreementReport(
        component=model.component, spec_states=len(spec.states), spec_edges=len(spec.edges),
        reference_states=len(reference.states), reference_edges=len(reference.edges), difference=difference,
        reference_seconds=reference_seconds, tlc_seconds=time.perf_counter() - tlc_done
        + (result.duration if result is not None else 0.0))
    return FingerprintCheck(report, found, reference, spec, actions.names(), result, tlc_numbers)


def _labels(dot_path: str | Path, wanted: set[int], tlc_numbers: Mapping[int, int]) -> dict[int, str]:
    """The state text TLC printed for each wanted state number."""
    wanted_tlc = {tlc: number for tlc, number in tlc_numbers.items() if number in wanted}
    found: dict[int, str] = {}
    for source, target, text, _ in dot_statements(dot_path):
        if not target and int(source) in wanted_tlc:
            found[wanted_tlc[int(source)]] = text
    return found


def explain_fingerprints(check: FingerprintCheck, dot_path: str | Path) -> str:
    """The closest difference with the shortest path to it (through the reference's first arrivals where the
    reference reaches the source, else through TLC's edges), states as TLC printed them where it has them."""
    found = check.found
    if found is None:
        return check.report.summary()
    lines = [check.report.summary(), ""]
    path: list[tuple[int, int, int]] = []
    if found.edge is not None:
        node, parents = found.edge[0], check.reference.parents
        if parents is not None and node < len(parents) and (parents[node] != -1 or node in check.reference.initial):
            while parents[node] != -1:
                path.insert(0, unpack(parents[node]))
                node = path[0][0]
        else:
            distance = _distances(check.spec.edges, check.spec.initial, int(found.edge[0]) + 1)
            edges = [unpack(e) for e in check.spec.edges]
            while distance[node] > 0:
                step = min(e for e in edges if e[2] == node and 0 <= distance[e[0]] == distance[node] - 1)
                path.insert(0, step)
                node = step[0]
    wanted = {found.state} if found.state is not None else {e[0] for e in path} | {found.edge[0], found.edge[2]}
    labels = _labels(dot_path, wanted, check.tlc_numbers)

    def show(number: int) -> list[str]:
        text = labels.get(number)
        if text is None:
            return [f"      (state {number}: not a state of the spec)"]
        return [f"      {line}" for line in text.splitlines()]

    if found.state is not None:
        lines.append(f"{found.kind} (state {found.state}):")
        lines.extend(show(found.state))
        return "\n".join(lines)
    start = path[0][0] if path else found.edge[0]
    lines.append(f"Shortest path to the first differing edge ({len(path)} steps before it):")
    lines.append("  initial state:")
    lines.extend(show(start))
    for index, (source, action, target) in enumerate(path + [found.edge], start=1):
        marker = f"  DIFFERS ({found.kind})" if index == len(path) + 1 else ""
        lines.append(f"  step {index}: spec action {check.actions[action]}{marker}")
        lines.extend(show(target))
    return "\n".join(lines)
