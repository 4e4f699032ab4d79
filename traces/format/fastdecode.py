"""The codecs' fast path: msgspec scanning, orjson parsing and memos of decoded parts, for traces that are plainly valid.

A JSON Lines trace is first scanned by msgspec into its envelope and steps, each step's parts (input, records,
response, post-state) left as JSON texts; each distinct text is decoded once (orjson, then the component's typed
decoding) and then shared, and so is each distinct envelope (format, component, initial state, meta, view). Anything
unusual raises, and the codec then decodes the trace with its checked decoder, which decides and names the error.
Both give the same trace, so the fast path only answers for texts on which orjson and ``json`` agree (no number of
19 digits or more: orjson reads an integer beyond 64 bits as a float) and that are within the limits of
:mod:`kraftspec.traces.format.limits`.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Any, Iterator, Mapping, Optional, Union

import msgspec
import orjson

from kraftspec.traces.format import raft_typed
from kraftspec.traces.format.envelope import Component, Step, Trace, check_in_view, components, trace_from_json
from kraftspec.traces.format.limits import MAX_JSON_DEPTH
from kraftspec.traces.replay.state_cache import reference_identity

MEMO_ENTRIES = 1 << 14
"""Entries per memo (each is cleared when full): bounds their memory whatever the set's size."""


class Memo(dict):  # type: ignore[type-arg]  # a dict: ``get`` stays the dict's own
    """Decoded parts by their JSON text, each kept from its second sight on: a part seen once (a raft input
    with its own time) costs no memory and no garbage-collector work; :data:`MEMO_ENTRIES` at most."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: dict[Any, None] = {}

    def put(self, key: Any, value: Any) -> Any:
        """Keep ``value`` for ``key`` if ``key`` was seen before (a full memo is cleared first); returns ``value``."""
        if key in self.seen:
            if len(self) >= MEMO_ENTRIES:
                self.clear()
            self[key] = value
        else:
            if len(self.seen) >= MEMO_ENTRIES:
                self.seen.clear()
            self.seen[key] = None
        return value


TYPED_INPUTS = {"raft": raft_typed}
"""Components whose inputs msgspec reads straight into the reference's (``decode_input`` for a JSON Lines input,
``decode_arguments`` for a Parquet row's): almost every one of their inputs is unique, so no memo helps."""
_PARSED = Memo()  # a JSON text -> its value (responses, post-states); never mutated
_INPUTS = Memo()  # (component, input text) -> action, arguments
_RECORDS = Memo()  # (component, record fields text without its offset) -> the record
_UNSEEN = object()
_DIGITS = bytes(48 if 48 <= byte <= 57 else 32 for byte in range(256))  # digits as "0", every other byte a space
_LONG_RUN = b"0" * 19
_BRACKETS = (b"[", b"{")


class NotFast(ValueError):
    """This input is for the checked decoder (unusual, beyond the limits, or in error)."""


@contextmanager
def no_gc() -> Iterator[None]:
    """The cyclic garbage collector paused while one trace is decoded: it builds only acyclic objects, and the
    collections their number would trigger (each walking every live object) cost more than the decoding."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def long_number(text: Union[str, bytes]) -> bool:
    """Whether a JSON text holds a run of 19 digits or more (where orjson and ``json`` may differ)."""
    return _LONG_RUN in (text.encode() if type(text) is str else text).translate(_DIGITS)  # type: ignore[union-attr]


def within_depth(value: Any, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether parsed JSON ``value`` nests at most ``limit`` deep (iterative)."""
    level, depth = [value], 0
    while level:
        below: list[Any] = []
        for item in level:
            kind = type(item)
            if depth == limit and (kind is dict or kind is list):
                return False
            if kind is dict:
                below.extend(item.values())
            elif kind is list:
                below.extend(item)
        level, depth = below, depth + 1
    return True


def shallow(text: Union[str, bytes], value: Any, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether ``value``, parsed from JSON ``text``, nests at most ``limit`` deep (counted brackets first: a text
    with few of them needs no walk)."""
    brackets = _BRACKETS if type(text) is bytes else ("[", "{")
    return text.count(brackets[0]) + text.count(brackets[1]) <= limit or within_depth(value, limit)  # type: ignore[arg-type]


def parsed_object(text: Union[str, bytes]) -> dict[str, Any]:
    """The JSON object a text holds, within the limits, parsed once per distinct text (shared: never mutate)."""
    value = _PARSED.get(text, _UNSEEN)
    if value is _UNSEEN:
        if long_number(text):
            raise NotFast("a number of 19 digits or more")
        value = orjson.loads(text)
        if type(value) is not dict or not shallow(text, value):
            raise NotFast("not an object within the limits")
        _PARSED.put(text, value)
    return value


_POST_FIELDS = msgspec.json.Decoder(dict[str, msgspec.Raw])
_FIELD_VALUES = Memo()  # a post-state field's JSON text -> its value (shared: never mutate)


def post_state(text: Union[str, bytes]) -> dict[str, Any]:
    """A post-state object within the limits, each field's value shared with every equal field text seen before
    (from its second sight): consecutive steps mostly restate a field unchanged (a Raft node's log, its quorum-state
    file), and the replay then recognizes the value it already compared (``kraftspec.traces.replay.match``)."""
    known = _PARSED.get(text, _UNSEEN)
    if known is not _UNSEEN:
        return known  # type: ignore[no-any-return]
    if long_number(text):
        raise NotFast("a number of 19 digits or more")
    post = {}
    for name, raw in _POST_FIELDS.decode(text).items():
        field = bytes(raw)
        value = _FIELD_VALUES.get(field, _UNSEEN)
        if value is _UNSEEN:
            value = orjson.loads(field)
            if not shallow(field, value, MAX_JSON_DEPTH - 1):  # one level below the post-state object
                raise NotFast("a post-state beyond the limits")
            _FIELD_VALUES.put(field, value)
        post[name] = value
    return _PARSED.put(text, post)  # type: ignore[no-any-return]


_ABSENT = msgspec.Raw(b"null")  # a part the line does not give reads as one it gives as null


class _Output(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """A step's ``output``, its parts as undecoded JSON texts (``Raw``)."""

    response: msgspec.Raw = _ABSENT
    records: Optional[list[msgspec.Raw]] = None


class _Step(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """A step, its parts as undecoded JSON texts: each is decoded once per distinct text."""

    input: msgspec.Raw
    output: Optional[_Output] = None
    post: msgspec.Raw = _ABSENT


class _Line(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """A JSON Lines trace as msgspec scans it: the envelope's strings, the free-form parts as texts, the steps."""

    steps: list[_Step]
    format: Any = None
    component: Any = None
    id: Any = None
    initial: msgspec.Raw = _ABSENT
    meta: msgspec.Raw = _ABSENT
    view: msgspec.Raw = _ABSENT


_LINE = msgspec.json.Decoder(_Line)
_HEADERS = Memo()  # envelope texts, reference identity -> header, component
_RAW_RECORDS = Memo()  # (component, record text) -> offset, record


def text_of(raw: msgspec.Raw) -> Optional[bytes]:
    """The JSON text of a part (None: absent or null)."""
    text = bytes(raw)
    return None if text == b"null" else text


def parsed_value(text: Union[str, bytes]) -> Any:
    """Any JSON value of a part, within the limits (not memoized: a record's text names its offset)."""
    if long_number(text):
        raise NotFast("a number of 19 digits or more")
    value = orjson.loads(text)
    if not shallow(text, value):
        raise NotFast("a value beyond the limits")
    return value


def header(format: object, component: object, initial: Optional[Union[str, bytes]],
           view: Optional[Union[str, bytes]]) -> tuple[Trace, Component]:
    """A trace's envelope without steps, id and meta, from the JSON texts of its ``initial`` and ``view`` (None:
    absent), decoded once per distinct envelope and reference identity (an explicit initial state is checked by
    building it with the reference, which a mutant may change)."""
    if type(format) is not str or type(component) is not str:
        raise NotFast("not a plain envelope")
    key = (format, component, initial, view, reference_identity())
    known = _HEADERS.get(key)
    if known is None:
        obj = {"format": format, "component": component, "steps": []}
        for name, text in (("initial", initial), ("view", view)):
            if text is not None:
                obj[name] = parsed_value(text)
        decoded = trace_from_json(obj)
        known = _HEADERS.put(key, (decoded, components()[decoded.component]))
    return known


def meta(text: Optional[Union[str, bytes]]) -> dict[str, Any]:
    """A trace's ``meta`` object from its JSON text (None: absent; ``{}``), within the limits."""
    if text is None:
        return {}
    value = parsed_value(text)
    if type(value) is not dict:
        raise NotFast("a meta that is not an object")
    return value


def step_input(component: Component, text: bytes, path: str) -> tuple[str, Mapping[str, Any]]:
    """A step's action and decoded arguments, decoded once per distinct input text (the arguments are shared); a
    component in :data:`TYPED_INPUTS` has its inputs read by msgspec straight into the reference's."""
    key = (component.name, text)
    decoded = _INPUTS.get(key)
    if decoded is None:
        typed = TYPED_INPUTS.get(component.name)
        if typed is not None:
            if long_number(text):
                raise NotFast("a number of 19 digits or more")
            return _INPUTS.put(key, typed.decode_input(text))  # type: ignore[no-any-return]
        given = parsed_value(text)
        if type(given) is not dict or type(given.get("action")) is not str:
            raise NotFast("not an input within the limits")
        decoded = _INPUTS.put(key, (given["action"], component.decode_input(given["action"], given, path)))
    return decoded


def record(component: Component, text: bytes, path: str) -> tuple[int, Any]:
    """One written record, decoded once per distinct text, and once per distinct fields text (without offset)."""
    decoded = _RAW_RECORDS.get((component.name, text))
    if decoded is None:
        fields = parsed_value(text)
        offset = fields.pop("offset", None) if type(fields) is dict else None
        if type(offset) is not int:
            raise NotFast("a record offset that is not an integer")
        key = (component.name, orjson.dumps(fields))
        value = _RECORDS.get(key)
        if value is None:
            _, value = component.decode_record({"offset": offset, **fields}, path)
            _RECORDS.put(key, value)
        decoded = _RAW_RECORDS.put((component.name, text), (offset, value))
    return decoded


def stated(raw: msgspec.Raw) -> Optional[dict[str, Any]]:
    """A response or post-state (None: not stated), shared with every equal text already checked."""
    text = text_of(raw)
    return None if text is None else parsed_object(text)


def trace(line: bytes) -> Trace:
    """The trace of a JSON Lines line, decoded through the memos; :class:`NotFast` (or any error) when the checked
    decoder must decide."""
    scanned = _LINE.decode(line)
    if scanned.id is not None and type(scanned.id) is not str:
        raise NotFast("not a plain id")
    head, component = header(scanned.format, scanned.component, text_of(scanned.initial), text_of(scanned.view))
    view = head.view
    steps = []
    for i, given in enumerate(scanned.steps):
        path = f"steps[{i}]"
        action, arguments = step_input(component, bytes(given.input), f"{path}.input")
        output = given.output
        response = records = None
        if output is not None:
            response = stated(output.response)
            if output.records is not None:
                records = tuple([record(component, bytes(r), f"{path}.output.records[{j}]")
                                 for j, r in enumerate(output.records)])
        post = text_of(given.post)
        step = Step(action, arguments, response, records, None if post is None else post_state(post))
        if view is not None:
            check_in_view(view, step, path)
        steps.append(step)
    return Trace(head.component, tuple(steps), head.standard, head.explicit, scanned.id, meta(text_of(scanned.meta)),
                 head.format, view)
