"""Comparing a reference value with a stated JSON value without converting it (the replay's fast path).

``matches(value, want)`` is True only when ``to_json(value)`` equals ``want`` as the replay's diff and
JSON text both see it: scalars of the exact type (true is not 1, 1 is not 1.0), tuples and lists as
arrays, dicts and dataclasses as objects of all their fields, enums by name. A False means "not shown equal":
the caller then converts and diffs, which decides (see ``kraftspec.traces.replay``).
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Any

from kraftspec.traces.values import to_json

_SCALARS = frozenset((int, str, bool, float, type(None)))
EXACT = (int, str)  # two values of one of these types are equal in JSON exactly when ``==``
_MISSING = object()  # a field the stated object does not have
_FIELDS: dict[type, tuple[str, ...]] = {}  # a dataclass -> its fields' names (read once per class)


def same(got: Any, want: Any) -> bool:
    """Whether two JSON values are equal with JSON types (the diff finds nothing)."""
    kind = type(got)
    if kind is dict:
        return type(want) is dict and len(want) == len(got) and all(
            key in want and same(value, want[key]) for key, value in got.items())
    if kind is list:
        return type(want) is list and len(want) == len(got) and all(map(same, got, want))
    return type(want) is kind and want == got


def fields_of(kind: type) -> tuple[str, ...]:
    """The field names of a dataclass type, in order (memoized)."""
    names = _FIELDS.get(kind)
    if names is None:
        names = _FIELDS[kind] = tuple(f.name for f in dataclasses.fields(kind))
    return names


def field_values(value: Any) -> dict[str, Any]:
    """A dataclass instance's fields by name, in order (``AttributeError`` for a value that is no dataclass)."""
    kind = type(value)
    names = _FIELDS.get(kind)
    if names is None:
        if not dataclasses.is_dataclass(kind):
            raise AttributeError(f"{kind.__name__} has no fields")
        names = fields_of(kind)
    return {name: getattr(value, name) for name in names}


def matches(got: Any, want: Any) -> bool:
    """Whether ``to_json(got)`` equals the JSON value ``want`` (False also when unsure)."""
    kind = type(got)
    if kind in _SCALARS:
        return type(want) is kind and want == got
    if kind is tuple or kind is list:
        if type(want) is not list or len(want) != len(got):
            return False
        for item, given in zip(got, want):
            if type(item) is int:  # the common case inline: a node id, an epoch, an offset
                if type(given) is not int or given != item:
                    return False
            elif not matches(item, given):
                return False
        return True
    if kind is dict:  # keys other than strings: unsure
        return type(want) is dict and len(want) == len(got) and all(
            type(key) is str and key in want and matches(value, want[key]) for key, value in got.items())
    names = _FIELDS.get(kind)
    if names is None and dataclasses.is_dataclass(kind):
        names = fields_of(kind)
    if names is not None:
        if type(want) is not dict or len(want) != len(names):
            return False
        for name in names:
            given = want.get(name, _MISSING)
            item = getattr(got, name)
            if item is given:  # True, None, a small int
                continue
            if type(item) in EXACT:  # the common case inline
                if type(given) is not type(item) or given != item:
                    return False
            elif given is _MISSING or not matches(item, given):
                return False
        return True
    if isinstance(got, enum.Enum):
        return type(want) is str and got.name == want
    return same(to_json(got), want)
