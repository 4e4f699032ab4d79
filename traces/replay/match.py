"""The replay's one comparison: a reference value against the JSON value a trace states, without converting it.

``matches(value, want)`` is True only when the value's stated form (:func:`stated_json`) equals ``want`` as the
replay's diff and JSON text both see it: scalars of the exact type (true is not 1, 1 is not 1.0), tuples and
lists as arrays, dataclasses as objects of all their fields, maps as objects (keys as text), enums by name;
objects are compared on their keys. ``stated_fields_match`` reads only the fields a step states (of a response,
or of a post-state through the component's observers). A False means "not shown equal": the caller then
converts and diffs, which decides (see ``kraftspec.traces.replay.verdict``). Where a trace states a value in another
form than its JSON, the component observes a view: :class:`Fields`, :class:`Entries`, :class:`Tagged`, :class:`Each`.
An observer builds a new view at each step and nothing keeps it or changes it: the views are plain slotted classes,
which build in a third of a frozen dataclass's time.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Any, Callable, Mapping, Optional

from kraftspec.traces.format.values import to_json

_SCALARS = frozenset((int, str, bool, float, type(None)))
EXACT = (int, str)  # two values of one of these types are equal in JSON exactly when ``==``
_MISSING = object()  # a field the stated object does not have
_FIELDS: dict[type, tuple[str, ...]] = {}  # a dataclass -> its fields' names (read once per class)
_KEY_TEXT: dict[Any, str] = {}  # a map key -> its text in a trace (memoized: formatting dominates)


@dataclasses.dataclass(slots=True, eq=False)
class Fields:
    """A record as a trace states it: only the fields ``names``, in that order."""

    value: Any
    names: tuple[str, ...]


@dataclasses.dataclass(slots=True, eq=False)
class Entries:
    """A map as a trace states it: keys as text (a tuple's parts joined by ``:``), ascending by key; each value
    as :class:`Fields` of ``names`` when given, else through ``view`` when given, else as it is."""

    items: Mapping[Any, Any]
    names: Optional[tuple[str, ...]] = None
    view: Optional[Callable[[Any], Any]] = None


@dataclasses.dataclass(slots=True, eq=False)
class Tagged:
    """A record as a trace states it: its class name under ``type``, then its fields."""

    value: Any


@dataclasses.dataclass(slots=True, eq=False)
class Each:
    """A sequence as a trace states it: an array of its items, each through ``view``."""

    items: tuple[Any, ...]
    view: Callable[[Any], Any]


_VIEWS = frozenset((Fields, Entries, Tagged, Each))


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


def key_text(key: Any) -> str:
    """A map key as a trace states it: ``"1"``, ``"1:0"``, ``"TOPIC:0"`` (memoized)."""
    text = _KEY_TEXT.get(key)
    if text is None:
        if len(_KEY_TEXT) >= 1 << 16:
            _KEY_TEXT.clear()
        text = _KEY_TEXT[key] = ":".join(map(str, key)) if isinstance(key, tuple) else str(key)
    return text


def stated_json(value: Any) -> Any:
    """The JSON a trace states for ``value``: :func:`to_json`, the views (:class:`Fields`, ...) written as they say."""
    kind = type(value)
    if kind is Entries:
        view, names = value.view, value.names
        return {key_text(k): stated_json(Fields(v, names) if names is not None else view(v) if view else v)
                for k, v in sorted(value.items.items())}
    if kind is Fields:
        return {name: stated_json(getattr(value.value, name)) for name in value.names}
    if kind is Tagged:
        return {"type": type(value.value).__name__, **to_json(value.value)}
    if kind is Each:
        return [stated_json(value.view(item)) for item in value.items]
    if kind is dict:
        return {str(k): stated_json(v) for k, v in value.items()}
    if kind is list:
        return [stated_json(item) for item in value]
    return to_json(value)


def _fields_match(value: Any, names: tuple[str, ...], want: Any) -> bool:
    """Whether ``want`` is an object of exactly ``names``, each equal to ``value``'s field of that name."""
    if type(want) is not dict or len(want) != len(names):
        return False
    for name in names:
        given = want.get(name, _MISSING)
        item = getattr(value, name)
        if item is given:  # True, None, a small int
            continue
        if type(item) in EXACT:  # the common case inline
            if type(given) is not type(item) or given != item:
                return False
        elif given is _MISSING or not matches(item, given):
            return False
    return True


def _entries_match(entries: Entries, want: Any) -> bool:
    items, names, view = entries.items, entries.names, entries.view
    if type(want) is not dict or len(want) != len(items):
        return False
    texts = _KEY_TEXT
    for key, item in items.items():
        given = want.get(texts.get(key) or key_text(key), _MISSING)
        if item is given:  # True, None, a small int
            continue
        if names is not None:
            if not _fields_match(item, names, given):
                return False
        elif type(item) in EXACT:  # a scalar (a session's last contact) inline
            if type(given) is not type(item) or given != item:
                return False
        elif not _item_matches(item if view is None else view(item), given):
            return False
    return True


def _each_match(each: Each, want: Any) -> bool:
    items, view = each.items, each.view
    if type(want) is not list or len(want) != len(items):
        return False
    return all(_item_matches(view(item), given) for item, given in zip(items, want))


def _item_matches(item: Any, given: Any) -> bool:
    """One entry of a map or list view: a scalar (a session's last contact) or a record (a heartbeat or log entry,
    by :func:`_fields_match`) inline, anything else by :func:`matches`."""
    kind = type(item)
    if kind in EXACT:
        return type(given) is kind and given == item
    fields = _FIELDS.get(kind)
    if fields is not None and kind not in _VIEWS:
        return _fields_match(item, fields, given)
    return matches(item, given)


def matches(got: Any, want: Any) -> bool:
    """Whether :func:`stated_json` of ``got`` equals the JSON value ``want`` (False also when unsure)."""
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
    if names is None:
        if isinstance(got, enum.Enum):
            return type(want) is str and got._name_ == want
        if dataclasses.is_dataclass(kind):
            names = fields_of(kind)
    if names is not None:
        if kind is Entries:
            return _entries_match(got, want)
        if kind is Fields:
            return _fields_match(got.value, got.names, want)
        if kind is Tagged:
            value = got.value
            names = fields_of(type(value))
            name = want.get("type") if type(want) is dict else None
            return (type(name) is str and name == type(value).__name__ and "type" not in names
                    and len(want) == len(names) + 1
                    and all(matches(getattr(value, field), want.get(field, _MISSING)) for field in names))
        if kind is Each:
            return _each_match(got, want)
        return _fields_match(got, names, want)
    converted = to_json(got)
    return converted is not got and matches(converted, want)


def value_matches(got: Any, want: Any) -> bool:
    """Whether one stated field ``want`` equals the reference's ``got`` (:func:`matches`, the common cases inline)."""
    if got is want:  # the same object: True, None, a small int
        return True
    kind = type(got)
    if kind is type(want) and kind in EXACT:  # a scalar, a string
        return bool(got == want)
    if type(want) is str and isinstance(got, enum.Enum):  # an error code by name
        return bool(got._name_ == want)
    return matches(got, want)


def stated_fields_match(value: Any, stated: Mapping[str, Any]) -> bool:
    """Whether each stated field of a response equals the reference's (:func:`value_matches`); nothing else is read.

    ``value``: a response (a dataclass; None has no field) or a mapping. False also for a stated field the value
    lacks, or a value of neither kind (the diff then decides or names it).
    """
    names = _FIELDS.get(type(value))
    if names is None:
        if value is None or isinstance(value, Mapping):  # no response (then no field may be stated), a mapping
            fields: Mapping[str, Any] = value or {}
            for key, want in stated.items():
                got = fields.get(key, _MISSING)
                if got is not want and (got is _MISSING or not value_matches(got, want)):
                    return False
            return True
        if not dataclasses.is_dataclass(type(value)):  # a response without fields to read: unsure
            return False
        names = fields_of(type(value))
    for key, want in stated.items():  # a response: only the stated fields are read
        if key not in names:
            return False
        got = getattr(value, key)
        if got is not want and not value_matches(got, want):
            return False
    return True


Observer = Callable[[Any, int], Any]


def anchor(value: Any) -> Any:
    """What an observed value is read from: the map or sequence a view shows, a view's record, else the value."""
    kind = type(value)
    if kind is Entries or kind is Each:
        return value.items
    if kind is Fields or kind is Tagged:
        return value.value
    return value


def post_matcher(observers: Mapping[str, Observer]) -> Callable[[Any, int, Mapping[str, Any]], bool]:
    """A component's ``post_matches``: whether each stated post-state field equals what its observer reads.

    A stated object or array found equal is remembered with the :func:`anchor` of the value it was found equal to;
    when the next step states the very same object for that field and the observer reads from the very same anchor,
    they are equal again without a walk (a Raft node's log between appends). Both sides are immutable: reference
    states are frozen, and decoded stated values are shared, never mutated (each observer shows one view per field).
    """
    recognized: dict[str, tuple[Any, Any]] = {}  # field -> (anchor, stated value) last found equal

    def post_matches(state: Any, clock: int, post: Mapping[str, Any]) -> bool:
        for key, want in post.items():
            observer = observers.get(key)
            if observer is None:  # a field the component does not have: the diff names it
                return False
            got = observer(state, clock)
            if type(want) is list or type(want) is dict:
                source, last = anchor(got), recognized.get(key)
                if last is not None and last[0] is source and last[1] is want:
                    continue
                if not matches(got, want):
                    return False
                recognized[key] = (source, want)
            elif not value_matches(got, want):
                return False
        return True
    return post_matches


_OBSERVED: dict[tuple[int, str], tuple[Any, Any]] = {}  # (observers, field) -> (anchor, its JSON) last written


def observe(observers: Mapping[str, Observer], state: Any, clock: int, fields: Any = ()) -> dict[str, Any]:
    """The post-state as JSON (:func:`stated_json`), all fields or only ``fields``, in the observers' order. A field
    read from the same :func:`anchor` as at the last call gives the same (shared, never mutated) JSON object, so
    a recorded trace shares a value its steps restate, as a decoded one does."""
    wanted = set(fields) or set(observers)
    post = {}
    for name, observer in observers.items():
        if name in wanted:
            value = observer(state, clock)
            if type(value) in _SCALARS:
                post[name] = value
                continue
            key, source = (id(observers), name), anchor(value)
            last = _OBSERVED.get(key)
            if last is None or last[0] is not source:
                last = _OBSERVED[key] = (source, stated_json(value))
            post[name] = last[1]
    return post
