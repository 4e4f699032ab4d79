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
    evolve_slotted = _evolvers.get(type(instance))
    if evolve_slotted is not None:
        evolved: T = evolve_slotted(instance, **changes)
        return evolved
    values = instance.__dict__
    new = _new(type(instance))
    # A literal merge, not ``__dict__.copy()``: a copy keeps CPython's key-sharing layout, and attribute
    # reads on both objects then take the slow path (about 2x per read, measured on 3.11).
    _set(new, "__dict__", {**values, **changes})
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
    if cls in _slotted_fields:
        return builder(cls)(**fields)
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
    if cls in _slotted_fields:
        build_slotted = builder(cls)
        return lambda fields: build_slotted(**fields)
    set_dict = dict_setter(cls)

    def build(fields: dict[str, Any]) -> T:
        new = _new(cls)
        set_dict(new, fields)
        return new

    build.__qualname__ = f"assembler({cls.__qualname__})"
    return build


def _init_parameters(first: str, fields: Iterable[dataclasses.Field[Any]], namespace: dict[str, Any]) -> str:
    """The parameter list of a dataclass's generated ``__init__`` after ``first``: positional fields, then ``*`` and the
    keyword-only ones; each default is bound in ``namespace`` as ``_default_<name>``."""
    positional, keyword = [], []
    for f in fields:
        if f.default is not dataclasses.MISSING:
            namespace[f"_default_{f.name}"] = f.default
        (keyword if f.kw_only else positional).append(f.name if f.default is dataclasses.MISSING else f"{f.name}=_default_{f.name}")
    return ", ".join([first, *positional, *(["*", *keyword] if keyword else [])])

def dict_init(cls: type[T]) -> type[T]:
    """Class decorator, applied above ``@dataclass(frozen=True)``: a constructor that sets the instance dict in one
    step, as :func:`assemble` does, instead of one ``object.__setattr__`` per field (about 40% less for five fields
    on CPython 3.11). Same signature, defaults and instances; refused for ``__post_init__`` and default factories."""
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]
    if hasattr(cls, "__post_init__") or any(f.default_factory is not dataclasses.MISSING or not f.init for f in fields):
        raise TypeError(f"{cls.__name__}: dict_init needs plain fields and no __post_init__")
    namespace: dict[str, Any] = {"_set_dict": dict_setter(cls)}
    parameters = _init_parameters("self", fields, namespace)
    values = ", ".join(f"{f.name!r}: {f.name}" for f in fields)
    exec(f"def __init__({parameters}) -> None:\n    _set_dict(self, {{{values}}})\n", namespace)  # as dataclasses does
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    cls.__init__ = init  # type: ignore[misc]
    return cls



_slotted_fields: dict[type, tuple[str, ...]] = {}
_builders: dict[type, Callable[..., Any]] = {}
_evolvers: dict[type, Callable[..., Any]] = {}
_UNCHANGED = object()


def _refuse_assignment(self: Any, name: str, value: Any = None) -> NoReturn:
    raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")


def _rebuild(cls: type[T], values: tuple[Any, ...]) -> T:
    """An instance of the :func:`slotted` class ``cls`` from its field values in declared order (pickling, copies)."""
    built: T = builder(cls)(*values)
    return built


def _reduce(self: Any) -> tuple[Any, ...]:
    cls = type(self)
    return (_rebuild, (cls, tuple([getattr(self, name) for name in _slotted_fields[cls]])))


def slotted(cls: type[T]) -> type[T]:
    """Class decorator, applied above ``@dataclass(frozen=True)``: the same frozen dataclass (fields, defaults,
    ``__init__``, equality, hash, repr, pickling) with its fields in slots of a mutable base class, so that
    :func:`builder` sets them with plain attribute stores and then gives the instance its frozen class. On CPython
    3.11 that builds an instance in about half the time of :func:`assemble`, and reads its fields about a third faster.
    Only a class whose bases hold no dataclass fields; instances have no ``__dict__``."""
    names = tuple(f.name for f in dataclasses.fields(cls))  # type: ignore[arg-type]
    if any(dataclasses.is_dataclass(base) for base in cls.__mro__[1:]):
        raise TypeError(f"{cls.__name__}: slotted needs a dataclass without dataclass bases")
    base = type(f"{cls.__name__}Fields", cls.__bases__, {"__slots__": names, "__module__": cls.__module__})
    namespace = {k: v for k, v in cls.__dict__.items() if k not in names and k not in ("__dict__", "__weakref__")}
    namespace.update(__slots__=(), __setattr__=_refuse_assignment, __delattr__=_refuse_assignment, __reduce__=_reduce)
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]
    if all(f.default_factory is dataclasses.MISSING and f.init for f in fields):
        namespace.update(__new__=_constructor(cls, base, fields), __init__=object.__init__)
    new: type[T] = type(cls)(cls.__name__, (base,), namespace)
    new.__qualname__ = cls.__qualname__
    _slotted_fields[new] = names
    _evolvers[new] = _evolver(new, base, names)
    return new


def _evolver(cls: type, base: type, names: tuple[str, ...]) -> Callable[..., Any]:
    """:func:`evolve` for the :func:`slotted` class ``cls``: each field named is replaced, the others copied."""
    namespace: dict[str, Any] = {"_new": _new, "_base": base, "_cls": cls, "_UNCHANGED": _UNCHANGED}
    parameters = ", ".join(f"{name}=_UNCHANGED" for name in names)
    stores = "".join(f"    new.{name} = instance.{name} if {name} is _UNCHANGED else {name}\n" for name in names)
    # Defaults of positional parameters, not keyword-only ones: CPython 3.11 fills a missing keyword-only argument
    # with a dict look-up in ``__kwdefaults__``, a positional one from a tuple (callers pass keywords).
    exec(f"def evolve(instance{', ' if names else ''}{parameters}):\n    new = _new(_base)\n{stores}    new.__class__ = _cls\n    return new\n",
         namespace)  # generated, as dataclasses generates __init__
    evolve_slotted: Callable[..., Any] = namespace["evolve"]
    evolve_slotted.__qualname__ = f"evolve({cls.__qualname__})"
    return evolve_slotted


def _constructor(cls: type, base: type, fields: tuple[dataclasses.Field[Any], ...]) -> Callable[..., Any]:
    """The ``__new__`` of a :func:`slotted` class: the dataclass ``__init__``'s signature and defaults, the fields
    set as :func:`builder` sets them, then ``__post_init__`` if the class has one (``__init__`` is ``object``'s)."""
    namespace: dict[str, Any] = {"_new": _new, "_base": base}
    parameters = _init_parameters("cls", fields, namespace)
    stores = "".join(f"    new.{f.name} = {f.name}\n" for f in fields)
    post_init = "    new.__post_init__()\n" if hasattr(cls, "__post_init__") else ""
    exec(f"def __new__({parameters}):\n    new = _new(_base)\n{stores}    new.__class__ = cls\n{post_init}    return new\n",
         namespace)  # generated, as dataclasses generates __init__
    constructor: Callable[..., Any] = namespace["__new__"]
    constructor.__qualname__ = f"{cls.__qualname__}.__new__"
    return constructor


def field_values(instance: Any) -> dict[str, Any]:
    """The fields of a frozen dataclass instance by name, in declared order: its ``__dict__`` itself (not to be
    changed), or for a :func:`slotted` class a new dict."""
    names = _slotted_fields.get(type(instance))
    if names is None:
        values: dict[str, Any] = instance.__dict__
        return values
    return {name: getattr(instance, name) for name in names}

def evolver(cls: type[T]) -> Callable[..., T]:
    """:func:`evolve` for instances of exactly the :func:`slotted` class ``cls``, without the look-up by type, for the
    derivations on hot paths, e.g. ``_evolve_node = evolver(RaftNode)``."""
    evolve_slotted: Callable[..., T] = _evolvers[cls]
    return evolve_slotted


def builder(cls: type[T]) -> Callable[..., T]:
    """The positional constructor of the :func:`slotted` class ``cls``: every field in declared order, no defaults and
    no ``__post_init__`` (the caller passes final values), e.g. ``_registration = builder(PartitionRegistration)``."""
    try:
        return _builders[cls]
    except KeyError:
        pass
    names = _slotted_fields[cls]
    namespace: dict[str, Any] = {"_new": _new, "_base": cls.__bases__[0], "_cls": cls}
    stores = "".join(f"    new.{name} = {name}\n" for name in names)
    exec(f"def build({', '.join(names)}):\n    new = _new(_base)\n{stores}    new.__class__ = _cls\n    return new\n",
         namespace)  # generated, as dataclasses generates __init__
    build: Callable[..., T] = namespace["build"]
    build.__qualname__ = f"builder({cls.__qualname__})"
    _builders[cls] = build
    return build

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
"""The empty :class:`FrozenMap`, shared (it never changes): a default for map fields, where a factory would make the
dataclass's constructor the slow one of :func:`slotted`."""
