"""The codecs' fast path: orjson parsing and memos of decoded parts, for traces that are plainly valid.

A trace is first decoded here, each part (a step's input, a record, a response or post-state) decoded
once per distinct JSON text and then shared; anything unusual raises, and the codec then decodes the
trace with its checked decoder, which decides and names the error. Both give the same trace, so the
fast path only answers for texts on which orjson and ``json`` agree (no number of 19 digits or more: orjson reads
an integer beyond 64 bits as a float) and that are within the limits of :mod:`kraftspec.traces.limits`.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Any, Iterator, Mapping, Optional, Union

import orjson

from kraftspec.traces.format import Component, Step, Trace, check_in_view, components, trace_from_json
from kraftspec.traces.limits import MAX_JSON_DEPTH

MEMO_ENTRIES = 1 << 14
"""Entries per memo (each is cleared when full): bounds their memory whatever the set's size."""
_TRACE_KEYS = frozenset(("format", "component", "id", "meta", "initial", "view", "steps"))
_STEP_KEYS = frozenset(("input", "output", "post"))
_OUTPUT_KEYS = frozenset(("response", "records"))
_PARSED: dict[Union[str, bytes], Any] = {}  # a JSON text -> its value (responses, post-states); never mutated
_INPUTS: dict[tuple[str, bytes], tuple[str, Mapping[str, Any]]] = {}  # (component, input text) -> action, arguments
_RECORDS: dict[tuple[str, bytes], Any] = {}  # (component, record text without its offset) -> the record
_UNSEEN = object()
_DIGITS = bytes(48 if 48 <= byte <= 57 else 32 for byte in range(256))  # digits as "0", every other byte a space
_LONG_RUN = b"0" * 19


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


def memo_put(memo: dict[Any, Any], key: Any, value: Any) -> Any:
    """``memo[key] = value`` (the memo cleared first when it holds :data:`MEMO_ENTRIES`); returns ``value``."""
    if len(memo) >= MEMO_ENTRIES:
        memo.clear()
    memo[key] = value
    return value


def long_number(text: Union[str, bytes]) -> bool:
    """Whether a JSON text holds a run of 19 digits or more (where orjson and ``json`` may differ)."""
    return _LONG_RUN in (text.encode() if type(text) is str else text).translate(_DIGITS)  # type: ignore[union-attr]


def within_depth(value: Any) -> bool:
    """Whether parsed JSON ``value`` nests at most :data:`MAX_JSON_DEPTH` deep (iterative)."""
    level, depth = [value], 0
    while level:
        below: list[Any] = []
        for item in level:
            kind = type(item)
            if depth == MAX_JSON_DEPTH and (kind is dict or kind is list):
                return False
            if kind is dict:
                below.extend(item.values())
            elif kind is list:
                below.extend(item)
        level, depth = below, depth + 1
    return True


def shallow(text: bytes, value: Any) -> bool:
    """Whether ``value``, parsed from JSON ``text``, nests at most :data:`MAX_JSON_DEPTH` deep (counted brackets
    first: a text with few of them needs no walk)."""
    return text.count(b"[") + text.count(b"{") <= MAX_JSON_DEPTH or within_depth(value)


def parsed_object(text: Union[str, bytes]) -> dict[str, Any]:
    """The JSON object a text holds, within the limits, parsed once per distinct text (shared: never mutate)."""
    value = _PARSED.get(text, _UNSEEN)
    if value is _UNSEEN:
        if long_number(text):
            raise NotFast("a number of 19 digits or more")
        value = orjson.loads(text)
        if type(value) is not dict or not within_depth(value):
            raise NotFast("not an object within the limits")
        memo_put(_PARSED, text, value)
    return value


def stated_object(value: Any) -> Optional[dict[str, Any]]:
    """A response or post-state of a line (None: not stated), shared with every equal one already checked."""
    if value is None:
        return None
    key = orjson.dumps(value)
    known = _PARSED.get(key)
    if known is None:
        if type(value) is not dict or not shallow(key, value):
            raise NotFast("not an object within the limits")
        known = memo_put(_PARSED, key, value)
    return known


def step_input(component: Component, given: Any, path: str) -> tuple[str, Mapping[str, Any]]:
    """A step's action and decoded arguments, decoded once per distinct input (the arguments are shared)."""
    key = (component.name, orjson.dumps(given))
    decoded = _INPUTS.get(key)
    if decoded is None:
        if type(given) is not dict or type(given.get("action")) is not str or not shallow(key[1], given):
            raise NotFast("not an input within the limits")
        decoded = memo_put(_INPUTS, key, (given["action"], component.decode_input(given["action"], given, path)))
    return decoded


def record(component: Component, offset: Any, fields: Mapping[str, Any], path: str) -> tuple[int, Any]:
    """One written record (``fields`` without offset), decoded once per distinct fields text."""
    if type(offset) is not int:
        raise NotFast("a record offset that is not an integer")
    key = (component.name, orjson.dumps(fields))
    decoded = _RECORDS.get(key)
    if decoded is None:
        if not shallow(key[1], fields):
            raise NotFast("a record beyond the limits")
        _, decoded = component.decode_record({"offset": offset, **fields}, path)
        memo_put(_RECORDS, key, decoded)
    return offset, decoded


def trace(line: bytes) -> Trace:
    """The trace of a JSON Lines line, decoded through the memos; :class:`NotFast` (or any error) when the checked
    decoder must decide."""
    if long_number(line):
        raise NotFast("a number of 19 digits or more")
    obj = orjson.loads(line)
    if (type(obj) is not dict or not _TRACE_KEYS.issuperset(obj) or type(obj["steps"]) is not list
            or not all(within_depth(value) for key, value in obj.items() if key != "steps")):
        raise NotFast("not a plain trace object")
    header = trace_from_json({**obj, "steps": []})
    component = components()[header.component]
    steps = []
    for i, given in enumerate(obj["steps"]):
        if type(given) is not dict or not _STEP_KEYS.issuperset(given):
            raise NotFast("not a plain step")
        path = f"steps[{i}]"
        action, arguments = step_input(component, given["input"], f"{path}.input")
        output = given.get("output")
        response = records = None
        if output is not None:
            if type(output) is not dict or not _OUTPUT_KEYS.issuperset(output):
                raise NotFast("not a plain output")
            response = stated_object(output.get("response"))
            listed = output.get("records")
            if listed is not None:
                records = tuple([record(component, r.pop("offset", None), r, f"{path}.output.records[{j}]")
                                 for j, r in enumerate(listed)])
        step = Step(action, arguments, response, records, stated_object(given.get("post")))
        if header.view is not None:
            check_in_view(header.view, step, path)
        steps.append(step)
    return Trace(header.component, tuple(steps), header.standard, header.explicit, header.id, header.meta,
                 header.format, header.view)

