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
from typing import Any, Callable, Iterable, Optional, Union

from kraftspec.reference.errors import Errors
from kraftspec.reference.frozen import PersistentMap
from kraftspec.traces.format.limits import escape_controls, quote


class TraceError(ValueError):
    """A trace that cannot be read: the message names the JSON path of the offending value (control characters
    taken from the input are escaped, so the message is one line)."""

    def __init__(self, message: object = "") -> None:
        super().__init__(escape_controls(str(message)))


def _type_name(value: object) -> str:
    return "null" if value is None else {bool: "boolean", int: "integer", str: "string", list: "array",
                                         dict: "object", float: "number"}.get(type(value), type(value).__name__)


def from_json(tp: Any, value: object, path: str) -> Any:
    """``value`` (parsed JSON) as a value of type ``tp``; a :class:`TraceError` naming ``path`` otherwise."""
    return decoder(tp)(value, path)


Decoder = Callable[[object, str], Any]


@functools.cache
def decoder(tp: Any) -> Decoder:
    """The decoding function of type ``tp``, built once per type (trace decoding calls it once per value)."""
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        args = typing.get_args(tp)
        (inner,) = [a for a in args if a is not type(None)]
        inner_decoder = decoder(inner)
        if type(None) not in args:
            return inner_decoder
        return lambda value, path: None if value is None else inner_decoder(value, path)
    if origin is tuple:
        return _tuple_decoder(typing.get_args(tp))
    if tp is Errors:
        return _error
    if tp in _SCALARS:
        return _SCALARS[tp]
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return _dataclass_decoder(tp)
    if tp is Any:  # a field its component decodes itself (a raft snapshot's control records), never read here
        return _component_decoded
    raise TypeError(f"no JSON codec for {tp!r}")


def _component_decoded(value: object, path: str) -> Any:
    raise TraceError(f"{path}: only its component's decoder reads this field")


def _tuple_decoder(args: tuple[Any, ...]) -> Decoder:
    if len(args) == 2 and args[1] is Ellipsis:
        item = decoder(args[0])

        def homogeneous(value: object, path: str) -> tuple[Any, ...]:
            if not isinstance(value, list):
                raise TraceError(f"{path}: expected an array, got {_type_name(value)}")
            return tuple([item(v, f"{path}[{i}]") for i, v in enumerate(value)])
        return homogeneous
    items = [decoder(a) for a in args]

    def fixed(value: object, path: str) -> tuple[Any, ...]:
        if not isinstance(value, list):
            raise TraceError(f"{path}: expected an array, got {_type_name(value)}")
        if len(value) != len(items):
            raise TraceError(f"{path}: expected an array of {len(items)}, got {len(value)} items")
        return tuple([d(v, f"{path}[{i}]") for i, (d, v) in enumerate(zip(items, value))])
    return fixed


def _error(value: object, path: str) -> Errors:
    if isinstance(value, str) and value in Errors.__members__:
        return Errors[value]
    if isinstance(value, int) and not isinstance(value, bool) and value in set(Errors):
        return Errors(value)
    raise TraceError(f"{path}: unknown error code {quote(value)}")


def _scalar(kind: type, name: str) -> Decoder:
    def check(value: object, path: str) -> Any:
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise TraceError(f"{path}: expected {name}, got {_type_name(value)}")
        return value
    return check


_SCALARS: dict[type, Decoder] = {bool: _scalar(bool, "a boolean"), int: _scalar(int, "an integer"),
                                 str: _scalar(str, "a string")}


_ABSENT = object()  # a field the object does not have
FieldPlan = tuple[str, Decoder, Optional[type], bool]
"""How one field is decoded: (name, decoder, the exact scalar type taken as it is or None, required)."""


def decode_fields(obj: dict[str, Any], plan: Iterable[FieldPlan], path: str,
                  missing: Callable[[str], str]) -> dict[str, Any]:
    """The fields of ``obj`` that ``plan`` names, decoded (a scalar of exactly its type is taken as it is);
    a required field that is absent is a :class:`TraceError` with ``missing(name)``."""
    decoded = {}
    for name, field_decoder, exact, required in plan:
        item = obj.get(name, _ABSENT)
        if item is _ABSENT:
            if required:
                raise TraceError(f"{path}: {missing(name)}")
        else:
            decoded[name] = item if type(item) is exact else field_decoder(item, f"{path}.{name}")
    return decoded


def _dataclass_decoder(cls: type) -> Decoder:
    hints = typing.get_type_hints(cls)
    fields = [(f.name, f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING)
              for f in dataclasses.fields(cls)]
    names = frozenset(name for name, _ in fields)
    plan: list[FieldPlan] = []

    def decode(value: object, path: str) -> Any:
        if not isinstance(value, dict):
            raise TraceError(f"{path}: expected an object, got {_type_name(value)}")
        if not names.issuperset(value):
            raise TraceError(f"{path}: unknown field {quote(sorted(set(value) - names)[0])} for {cls.__name__}")
        if not plan:  # resolved on first use: a dataclass may refer to itself
            plan.extend((name, decoder(hints[name]), hints[name] if hints[name] in _SCALARS else None, required)
                        for name, required in fields)
        return cls(**decode_fields(value, plan, path, lambda name: f"missing field {name!r} for {cls.__name__}"))
    return decode


def dataclass_from_json(cls: type, value: object, path: str) -> Any:
    """An instance of dataclass ``cls`` from a JSON object; unknown fields are refused, omitted ones take defaults."""
    return decoder(cls)(value, path)


_JSON_SCALARS = frozenset((int, str, bool, float, type(None)))  # exactly these types: their JSON form is themselves
_DATACLASS_FIELDS: dict[type, tuple[str, ...]] = {}  # a dataclass -> its fields' names, in order


def to_json(value: object) -> Any:
    """The JSON form of a reference value: dataclasses as objects, tuples as arrays, enums by name.

    A dataclass's field names are read once per class (recording a trace converts every response and record).
    """
    kind = type(value)
    if kind in _JSON_SCALARS:
        return value
    names = _DATACLASS_FIELDS.get(kind)
    if names is not None:
        return {name: to_json(getattr(value, name)) for name in names}
    if isinstance(value, enum.Enum):
        return value.name
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        names = _DATACLASS_FIELDS[kind] = tuple(f.name for f in dataclasses.fields(value))
        return {name: to_json(getattr(value, name)) for name in names}
    if isinstance(value, (tuple, list)):
        return [to_json(item) for item in value]
    if isinstance(value, dict):
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, PersistentMap):  # iterates in hash order: keys sorted, so the JSON is the same in every run
        return {str(k): to_json(v) for k, v in sorted(value.items())}
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
