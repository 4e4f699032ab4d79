"""Explicit initial states built once per distinct state and reference identity, then shared (states are immutable).

Every component's ``cached_explicit_state`` is an :class:`ExplicitStates` over its ``explicit_state`` builder:
traces that start from the same explicit state share one, and a state built while a mutant is applied is never
reused without it (:func:`reference_identity`). An unreadable state raises its ``TraceError`` every time.
"""

from __future__ import annotations

import functools
import importlib
import marshal
from typing import Any, Callable, Generic, Mapping, TypeVar

S = TypeVar("S")
_BY_OBJECT_LIMIT = 1 << 12


@functools.cache
def _mutant_targets() -> tuple[tuple[dict[str, Any], str], ...]:
    """Each registered mutant's target as (its module's namespace, the function's name)."""
    from kraftspec.mutants import all_mutants

    targets = (mutant.target.split(":") for mutant in all_mutants().values())
    return tuple((vars(importlib.import_module(module)), name) for module, name in targets)


def reference_identity() -> tuple[Any, ...]:
    """The functions currently bound at every registered mutant's target: an applied mutant changes it
    (``kraftspec.mutants`` swaps the target in every loaded module, its own included)."""
    return tuple([namespace[name] for namespace, name in _mutant_targets()])


class ExplicitStates(Generic[S]):
    """``build(obj, path)`` memoized by the state's exact JSON value (``marshal``: True and 1, 1 and 1.0 differ)
    and the reference identity; an object seen before (decoding a trace builds its state, replaying the trace
    reads it back) is found by identity without marshalling it again. That object is held, so its id is not
    reused; a decoded trace's explicit state is a value, never changed after decoding."""

    def __init__(self, build: Callable[[Mapping[str, Any], str], S]) -> None:
        self._build = build
        self._by_value = functools.lru_cache(maxsize=256)(self._from_blob)
        self._by_object: dict[int, tuple[Mapping[str, Any], tuple[Any, ...], S]] = {}

    def _from_blob(self, blob: bytes, path: str, identity: tuple[Any, ...]) -> S:
        return self._build(marshal.loads(blob), path)

    def __call__(self, obj: Mapping[str, Any], path: str = "initial.explicit") -> S:
        identity = reference_identity()
        seen = self._by_object.get(id(obj))
        if seen is not None and seen[0] is obj and seen[1] == identity:
            return seen[2]
        try:
            blob = marshal.dumps(obj, 0)  # type: ignore[arg-type]
        except ValueError:  # not plain JSON values (a Mapping built in Python): no caching
            return self._build(obj, path)
        state = self._by_value(blob, path, identity)
        if len(self._by_object) >= _BY_OBJECT_LIMIT:
            self._by_object.clear()
        self._by_object[id(obj)] = (obj, identity, state)
        return state
