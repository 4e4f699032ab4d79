"""Immutable, hashable mappings for the fields of frozen state dataclasses (a dict-backed one for small maps, a
persistent one for maps that grow with the cluster), and fast copies and constructors of frozen dataclasses."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Iterable, Mapping, NoReturn, TypeVar

from immutables import Map as PersistentMap

K = TypeVar("K")
V = TypeVar("V")
T = TypeVar("T")
_bind = dict.__setitem__
_update = dict.update
_new = object.__new__
_set = object.__setattr__


def evolve(instance: T, **changes: Any) -> T:
    """``dataclasses.replace`` for a frozen dataclass without ``__post_init__``, as one dict copy.

    The result equals ``replace(instance, **changes)``; the constructor is not re-run, so callers
    name only declared fields (``tests/test_frozen.py`` checks equality with ``replace``).
    """
    new = _new(type(instance))
    # A literal merge, not ``__dict__.copy()``: a copy keeps CPython's key-sharing layout, and attribute
    # reads on both objects then take the slow path (about 2x per read, measured on 3.11).
    _set(new, "__dict__", {**instance.__dict__, **changes})  # type: ignore[attr-defined]
    return new


def dict_setter(cls: type) -> Callable[[Any, dict[str, Any]], None]:
    """The setter of the ``__dict__`` descriptor of ``cls``: called directly it skips the attribute lookup that
    ``object.__setattr__(instance, "__dict__", ...)`` makes (about 5% of an instance's creation on CPython 3.11).
    Hot paths bind it once (``_set = dict_setter(C)``) and build with ``new = object.__new__(C); _set(new, fields)``."""
    descriptor = next((c.__dict__["__dict__"] for c in cls.__mro__ if "__dict__" in c.__dict__), None)
    if descriptor is None:
        raise TypeError(f"{cls.__name__} has no instance dict")
    setter: Callable[[Any, dict[str, Any]], None] = descriptor.__set__
    return setter


_dict_setters: dict[type, Callable[[Any, dict[str, Any]], None]] = {}


def assemble(cls: type[T], fields: dict[str, Any]) -> T:
    """An instance of the frozen dataclass ``cls`` (no ``__post_init__``) from ``fields``, which must name
    every declared field; ``fields`` becomes the instance's own dict, so the caller must not keep it."""
    new = _new(cls)
    try:
        setter = _dict_setters[cls]
    except KeyError:
        setter = _dict_setters[cls] = dict_setter(cls)
    setter(new, fields)
    return new


def assembler(cls: type[T]) -> Callable[[dict[str, Any]], T]:
    """:func:`assemble` bound to ``cls`` (the same instances, without the per-call look-up of its dict setter),
    for the constructions on hot paths, e.g. ``_registration = assembler(PartitionRegistration)``."""
    set_dict = dict_setter(cls)

    def build(fields: dict[str, Any]) -> T:
        new = _new(cls)
        set_dict(new, fields)
        return new

    build.__qualname__ = f"assembler({cls.__qualname__})"
    return build


def dict_init(cls: type[T]) -> type[T]:
    """Class decorator, applied above ``@dataclass(frozen=True)``: a constructor that sets the instance dict in one
    step, as :func:`assemble` does, instead of one ``object.__setattr__`` per field (about 40% less for five fields
    on CPython 3.11). Same signature, defaults and instances; refused for ``__post_init__`` and default factories."""
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]
    if hasattr(cls, "__post_init__") or any(f.default_factory is not dataclasses.MISSING or not f.init for f in fields):
        raise TypeError(f"{cls.__name__}: dict_init needs plain fields and no __post_init__")
    namespace: dict[str, Any] = {"_set_dict": dict_setter(cls)}
    positional, keyword = [], []
    for f in fields:
        if f.default is not dataclasses.MISSING:
            namespace[f"_default_{f.name}"] = f.default
        (keyword if f.kw_only else positional).append(f.name if f.default is dataclasses.MISSING else f"{f.name}=_default_{f.name}")
    parameters = ", ".join(["self", *positional, *(["*", *keyword] if keyword else [])])
    values = ", ".join(f"{f.name!r}: {f.name}" for f in fields)
    exec(f"def __init__({parameters}) -> None:\n    _set_dict(self, {{{values}}})\n", namespace)  # as dataclasses does
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    cls.__init__ = init  # type: ignore[misc]
    return cls


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
