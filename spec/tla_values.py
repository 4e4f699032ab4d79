"""Python values for TLA+ values, as TLC prints them and as the reference projects its states.

One canonical form per TLA+ value, so that a value parsed from TLC and a value projected from the
reference compare equal exactly when TLC would call them equal:

* integers -> ``int``; strings -> ``str``; booleans -> ``bool``; model values -> :class:`ModelValue`;
* sets -> ``frozenset``;
* functions (records included) -> :class:`Fn`, except that a function whose domain is ``1..n``
  (TLC prints it as a sequence) is a ``tuple`` and the empty function is ``()``.

A record ``[a |-> 1]`` and a function ``("a" :> 1)`` are the same TLA+ value, so both are ``Fn``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Union

from kraftspec.reference.frozen import FrozenMap


@dataclass(frozen=True, order=True)
class ModelValue:
    """A TLC model value (a CONSTANT bound to an uninterpreted name in the config)."""

    name: str

    def __repr__(self) -> str:
        return f"ModelValue({self.name!r})"


class Fn(FrozenMap[Any, Any]):
    """A TLA+ function or record whose domain is not ``1..n``; build it with :func:`fn`."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"Fn({dict.__repr__(self)})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (Fn, (dict(self),))


TlaValue = Union[int, str, bool, ModelValue, frozenset, tuple, Fn]


def _is_sequence_domain(keys: Iterable[Any]) -> bool:
    ks = list(keys)
    return all(type(k) is int for k in ks) and sorted(ks) == list(range(1, len(ks) + 1))


def fn(mapping: Mapping[Any, Any] | Iterable[tuple[Any, Any]]) -> "Fn | tuple[Any, ...]":
    """The canonical value of a TLA+ function given as a mapping (a tuple when the domain is ``1..n``)."""
    items = dict(mapping)
    if items and type(next(iter(items))) is str:  # a record: never a sequence
        return Fn(items)
    if _is_sequence_domain(items):
        return tuple(items[i] for i in range(1, len(items) + 1))
    return Fn(items)


def record(**fields: Any) -> "Fn | tuple[Any, ...]":
    """The canonical value of the TLA+ record ``[f1 |-> v1, ...]``."""
    return fn(fields)
