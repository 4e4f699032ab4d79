"""JSON values <-> the reference's frozen dataclasses, with a path in every error.

Requests and metadata records are decoded from their field names (snake_case, as in
``kraftspec.reference.records`` and ``kraftspec.reference.broker``); omitted fields take the
dataclass default, unknown fields are refused (a typo would otherwise pass silently). Error codes
are written as Kafka's names (``STALE_BROKER_EPOCH``); their numbers are accepted on input.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import types
import typing
from typing import Any, Optional, Union

from kraftspec.reference.errors import Errors


class TraceError(ValueError):
    """A trace that cannot be read: the message names the JSON path of the offending value."""


def _type_name(value: object) -> str:
    return "null" if value is None else {bool: "boolean", int: "integer", str: "string", list: "array",
                                         dict: "object", float: "number"}.get(type(value), type(value).__name__)


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def from_json(tp: Any, value: object, path: str) -> Any:
    """``value`` (parsed JSON) as a value of type ``tp``; a :class:`TraceError` naming ``path`` otherwise."""
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        args = typing.get_args(tp)
        if value is None and type(None) in args:
            return None
        (inner,) = [a for a in args if a is not type(None)]
        return from_json(inner, value, path)
    if origin is tuple:
        args = typing.get_args(tp)
        if not isinstance(value, list):
            raise TraceError(f"{path}: expected an array, got {_type_name(value)}")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(from_json(args[0], item, f"{path}[{i}]") for i, item in enumerate(value))
        if len(value) != len(args):
            raise TraceError(f"{path}: expected an array of {len(args)}, got {len(value)} items")
        return tuple(from_json(a, item, f"{path}[{i}]") for i, (a, item) in enumerate(zip(args, value)))
    if tp is Errors:
        if isinstance(value, str) and value in Errors.__members__:
            return Errors[value]
        if isinstance(value, int) and not isinstance(value, bool) and value in set(Errors):
            return Errors(value)
        raise TraceError(f"{path}: unknown error code {value!r}")
    if tp is bool:
        if not isinstance(value, bool):
            raise TraceError(f"{path}: expected a boolean, got {_type_name(value)}")
        return value
    if tp is int:
        if not isinstance(value, int) or isinstance(value, bool):
            raise TraceError(f"{path}: expected an integer, got {_type_name(value)}")
        return value
    if tp is str:
        if not isinstance(value, str):
            raise TraceError(f"{path}: expected a string, got {_type_name(value)}")
        return value
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return dataclass_from_json(tp, value, path)
    raise TypeError(f"no JSON codec for {tp!r}")


def dataclass_from_json(cls: type, value: object, path: str) -> Any:
    """An instance of dataclass ``cls`` from a JSON object; unknown fields are refused, omitted ones take defaults."""
    if not isinstance(value, dict):
        raise TraceError(f"{path}: expected an object, got {_type_name(value)}")
    hints = _hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(value) - names)
    if unknown:
        raise TraceError(f"{path}: unknown field {unknown[0]!r} for {cls.__name__}")
    kwargs = {}
    for f in dataclasses.fields(cls):
        if f.name in value:
            kwargs[f.name] = from_json(hints[f.name], value[f.name], f"{path}.{f.name}")
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise TraceError(f"{path}: missing field {f.name!r} for {cls.__name__}")
    return cls(**kwargs)


def to_json(value: object) -> Any:
    """The JSON form of a reference value: dataclasses as objects, tuples as arrays, enums by name."""
    if isinstance(value, enum.Enum):
        return value.name
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_json(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (tuple, list)):
        return [to_json(item) for item in value]
    if isinstance(value, dict):
        return {str(k): to_json(v) for k, v in value.items()}
    return value


def require(obj: dict[str, Any], key: str, kind: type, path: str, *, optional: bool = False) -> Optional[Any]:
    """``obj[key]`` checked to be a ``kind`` (None when ``optional`` and absent or null)."""
    if key not in obj or obj[key] is None:
        if optional:
            return None
        raise TraceError(f"{path}: missing field {key!r}")
    value = obj[key]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise TraceError(f"{path}.{key}: expected {_type_name(kind())}, got {_type_name(value)}")
    return value
