"""Faster construction and derivation of the reference's frozen dataclasses, installed at run time.

The reference is plain ``@dataclass(frozen=True, slots=True, kw_only=True)`` classes, derived with ``frozen.evolve``
(``dataclasses.replace``). Their generated ``__init__`` sets each field through ``object.__setattr__``;
:func:`install` instead gives every such class of ``kraftspec.reference`` a constructor that fills a mutable twin
with the same slots and then gives it the frozen class, and points ``evolve`` in every loaded kraftspec module at
per-class evolvers built the same way (about 2.5x faster on CPython 3.11), as pyspec injects its caches into the
plain spec at build time. Instances are the same objects by value: fields, equality, hash, repr, pickling.
It also caches the results of the pure rules in :data:`MEMOIZED` (their arguments are few, hashable and recur on
every step of a running cluster), as pyspec caches its pure helpers.
``tests/test_frozen.py`` checks this on every class and replays the bundled traces with and without it.

The replay layer (``kraftspec.traces``) and the agreement engine install it; ``KRAFTSPEC_PLAIN=1`` in the
environment keeps the reference plain.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import os
import pkgutil
import sys
from typing import Any, Callable

from kraftspec.reference import frozen

_new = object.__new__
_evolvers: dict[type, Callable[..., Any]] = {}
_accelerated: list[type] = []

MEMOIZED = (("kraftspec.reference.broker", "heartbeat_reply"),)
"""Pure reference rules whose results are cached (module, function): each answers a frozen value from a handful of
hashable arguments (``heartbeat_reply``: the next control state and whether the broker caught up)."""


def evolve(instance: Any, /, **changes: Any) -> Any:
    """``frozen.evolve`` through the class's generated evolver; ``dataclasses.replace`` for any other class."""
    evolver = _evolvers.get(type(instance))
    if evolver is None:
        return dataclasses.replace(instance, **changes)
    return evolver(instance, changes)


def _rebuild(cls: type, values: tuple[Any, ...]) -> Any:
    """Unpickling and copies: the instance of ``cls`` with these field values, whether or not installed here."""
    new = _new(cls)
    for field, value in zip(dataclasses.fields(cls), values):
        object.__setattr__(new, field.name, value)
    return new


def _reduce(instance: Any) -> tuple[Any, ...]:
    return _rebuild, (type(instance), tuple(getattr(instance, f.name) for f in dataclasses.fields(instance)))


def _accelerable(cls: Any, module: str) -> bool:
    """A frozen, slotted dataclass defined in ``module`` whose bases add no fields to the layout (``Generic``, or
    none), so that a twin can share it, and whose fields all go through ``__init__`` without factories."""
    if not (isinstance(cls, type) and dataclasses.is_dataclass(cls) and cls.__module__ == module
            and all(base.__dict__.get("__slots__") == () for base in cls.__mro__[1:-1])):
        return False
    fields = dataclasses.fields(cls)
    return (cls.__dataclass_params__.frozen and "__slots__" in cls.__dict__  # type: ignore[attr-defined]
            and all(f.init and f.default_factory is dataclasses.MISSING for f in fields))


def _generate(source: str, name: str, namespace: dict[str, Any], qualname: str) -> Callable[..., Any]:
    exec(source, namespace)  # generated, as dataclasses generates __init__
    function: Callable[..., Any] = namespace[name]
    function.__qualname__ = qualname
    return function


def _accelerate(cls: type) -> None:
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]
    names = [f.name for f in fields]
    layout = {"__slots__": cls.__slots__, "__module__": cls.__module__}  # type: ignore[attr-defined]
    if "__orig_bases__" in cls.__dict__:  # a Generic[...] class: its twin is one too
        layout["__orig_bases__"] = cls.__dict__["__orig_bases__"]
    twin = type(f"{cls.__name__}Fields", cls.__bases__, layout)
    namespace: dict[str, Any] = {"_new": _new, "_twin": twin, "_cls": cls}
    positional, keyword = [], []
    for f in fields:
        if f.default is not dataclasses.MISSING:
            namespace[f"_default_{f.name}"] = f.default
        parameter = f.name if f.default is dataclasses.MISSING else f"{f.name}=_default_{f.name}"
        (keyword if f.kw_only else positional).append(parameter)
    parameters = ", ".join(["cls", *positional, *(["*", *keyword] if keyword else [])])
    post_init = "    new.__post_init__()\n" if hasattr(cls, "__post_init__") else ""
    stores = "".join(f"    new.{name} = {name}\n" for name in names)
    constructor = _generate(f"def __new__({parameters}):\n    new = _new(_twin)\n{stores}    new.__class__ = cls\n"
                            f"{post_init}    return new\n", "__new__", namespace, f"{cls.__qualname__}.__new__")
    namespace.update(_fields=frozenset(names), _setattr=setattr)
    copies = "".join(f"    new.{name} = instance.{name}\n" for name in names)
    _evolvers[cls] = _generate(
        f"def evolve(instance, changes):\n    new = _new(_twin)\n{copies}"
        f"    for name, value in changes.items():\n"
        f"        if name not in _fields:\n"
        f"            raise TypeError(f'{cls.__qualname__} has no field {{name!r}}')\n"
        f"        _setattr(new, name, value)\n"
        f"    new.__class__ = _cls\n{post_init}    return new\n",
        "evolve", namespace, f"evolve({cls.__qualname__})")
    cls.__new__ = constructor  # type: ignore[method-assign]
    cls.__init__ = object.__init__  # type: ignore[misc]
    cls.__reduce__ = _reduce  # type: ignore[method-assign, assignment]
    _accelerated.append(cls)


def _rebind(old: Callable[..., Any], new: Callable[..., Any]) -> None:
    """Every kraftspec module's binding of ``old`` becomes ``new``."""
    for name, module in list(sys.modules.items()):
        if name.startswith("kraftspec") and module is not None:
            for attribute, value in list(vars(module).items()):
                if value is old:
                    setattr(module, attribute, new)


def _memoize(module_name: str, name: str) -> None:
    """Every binding of the pure rule ``module_name.name`` becomes a cached wrapper of it (same results)."""
    rule = getattr(importlib.import_module(module_name), name)
    _rebind(rule, functools.lru_cache(maxsize=None)(rule))


def install() -> None:
    """Accelerate every frozen dataclass of ``kraftspec.reference`` (once; not when ``KRAFTSPEC_PLAIN`` is set)."""
    if _accelerated or os.environ.get("KRAFTSPEC_PLAIN"):
        return
    package = importlib.import_module("kraftspec.reference")
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"kraftspec.reference.{info.name}")
        for value in list(vars(module).values()):
            if _accelerable(value, module.__name__):
                _accelerate(value)
    old = frozen.evolve
    frozen.evolve = evolve  # type: ignore[assignment]
    _rebind(old, evolve)
    for module_name, name in MEMOIZED:
        _memoize(module_name, name)

