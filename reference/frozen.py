"""Frozen state. Every state, input and output of the reference is a ``@dataclass(frozen=True, slots=True,
kw_only=True)``: built with keywords only and derived with :func:`evolve`; map fields hold the immutable, hashable mappings below (a dict-backed
one for small maps, a persistent one for maps that grow with the cluster)."""

from __future__ import annotations

import dataclasses
from typing import Any, Iterable, Mapping, NoReturn, TypeVar

from immutables import Map as PersistentMap

K = TypeVar("K")
V = TypeVar("V")
T = TypeVar("T")
_bind = dict.__setitem__
_update = dict.update


def evolve(instance: T, **changes: Any) -> T:
    """A copy of the frozen dataclass ``instance`` with the fields in ``changes`` replaced (``dataclasses.replace``)."""
    return dataclasses.replace(instance, **changes)  # type: ignore[type-var]


class FrozenMap(dict[K, V]):
    """A ``dict`` that refuses mutation and hashes by content; derive new maps with :meth:`set`/:meth:`remove`."""

    __slots__ = ("_hash",)

    def __hash__(self) -> int:  # type: ignore[override]
        try:
            return self._hash
        except AttributeError:
            self._hash: int = hash(frozenset(self.items()))
            return self._hash

    def _immutable(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise TypeError("FrozenMap is immutable")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = _immutable  # type: ignore[assignment]
    __ior__ = _immutable  # type: ignore[assignment]

    def set(self, key: K, value: V) -> "FrozenMap[K, V]":
        """A copy with ``key`` bound to ``value``."""
        new = FrozenMap(self)
        _bind(new, key, value)
        return new

    def set_many(self, items: Mapping[K, V] | Iterable[tuple[K, V]]) -> "FrozenMap[K, V]":
        """A copy with every pair of ``items`` bound."""
        new = type(self)(self)
        _update(new, items)
        return new

    def remove(self, key: K) -> "FrozenMap[K, V]":
        """A copy without ``key`` (unchanged if absent)."""
        if key not in self:
            return self
        new = type(self)(self)
        dict.__delitem__(new, key)
        return new

    def __repr__(self) -> str:
        return f"FrozenMap({dict.__repr__(self)})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenMap, (dict(self),))


def persistent(mapping: Mapping[K, V]) -> "PersistentMap[K, V]":
    """``mapping`` as a :class:`PersistentMap` (a hash array mapped trie, ``immutables.Map``), without copying one
    that already is. Its ``set``/``update``/``delete`` share structure with the map they derive from: O(log n) per
    changed key instead of a copy of the whole map, for the controller's partitions (one change per request).
    Equal maps hash alike; it never equals a ``dict``, and it iterates in hash order, so readers sort."""
    return mapping if type(mapping) is PersistentMap else PersistentMap(mapping)


EMPTY_MAP: FrozenMap[Any, Any] = FrozenMap()
"""The empty :class:`FrozenMap`, shared (it never changes): the default of map fields."""
