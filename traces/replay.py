"""Replay a trace through the reference and find the first step where the implementation diverged.

Each step's stated outputs are compared with what the reference produces from the same state:
the response fields the trace states, every record written (offset, type and all fields, omitted
fields taking the schema default), and the post-state fields it states. The first difference is
reported as a minimal field-level diff with the rule that decides the step and the state before it.

Speed: a step is first compared on the reference's own values, reading only the fields the trace
states (no JSON conversion, no full post-state); only a step that differs there is converted and
diffed, and the diff decides. Both compare exactly as JSON does (True and 1 differ).
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from enum import Enum
from types import ModuleType
from typing import Any, Mapping, Optional

from kraftspec.reference.errors import Errors
from kraftspec.reference.frozen import field_values
from kraftspec.traces import broker_replay, controller_replay, partition_replay, raft_replay
from kraftspec.traces.format import Step, Trace, Written, components, step_to_json
from kraftspec.traces.match import matches
from kraftspec.traces.values import to_json

REPLAYERS: dict[str, ModuleType] = {"broker": broker_replay, "partition": partition_replay, "raft": raft_replay,
                                     "controller": controller_replay}
ABSENT = "(absent)"
_NO_DIFFS: list["FieldDiff"] = []  # never mutated
_EXACT = frozenset((int, str, float))  # two values of one of these types are equal in JSON exactly when ``==``
_JSON_LEAVES = frozenset((int, float, bool, type(None)))  # the other JSON leaves (strings: by name or value)


@dataclass(frozen=True)
class FieldDiff:
    """One differing leaf: its path in the step's output, the reference's value and the implementation's."""

    path: str
    expected: Any
    observed: Any

    def __str__(self) -> str:
        return f"{self.path}: expected {_show(self.expected)}, observed {_show(self.observed)}"


def _show(value: Any) -> str:
    return ABSENT if value is ABSENT else repr(value)


@dataclass(frozen=True)
class Divergence:
    """The first divergent step (0-based ``step``) with its input, the diff, the deciding rule and prior state."""

    step: int
    input: dict[str, Any]
    diffs: tuple[FieldDiff, ...]
    rule: str
    rule_doc: str
    state_before: str


@dataclass(frozen=True)
class Verdict:
    """The outcome of one trace: ``divergence`` is None when every step conforms."""

    trace_id: Optional[str]
    steps: int
    divergence: Optional[Divergence]

    @property
    def conformant(self) -> bool:
        return self.divergence is None


def diff(expected: Any, observed: Any, path: str) -> list[FieldDiff]:
    """The leaves where two JSON values differ (``True`` and ``1`` differ, as in JSON)."""
    if isinstance(expected, dict) and isinstance(observed, dict):
        found: list[FieldDiff] = []
        for key in list(expected) + [k for k in observed if k not in expected]:
            found.extend(diff(expected.get(key, ABSENT), observed.get(key, ABSENT), f"{path}.{key}"))
        return found
    if isinstance(expected, list) and isinstance(observed, list):
        found = []
        for i in range(max(len(expected), len(observed))):
            found.extend(diff(expected[i] if i < len(expected) else ABSENT,
                              observed[i] if i < len(observed) else ABSENT, f"{path}[{i}]"))
        return found
    if type(expected) is not type(observed) or expected != observed:
        return [FieldDiff(path, expected, observed)]
    return []


def _compact(record: Any) -> Any:
    """A record without its null fields (a whole record in a report)."""
    return {k: v for k, v in record.items() if v is not None} if isinstance(record, dict) else record


def record_diffs(expected: list[dict[str, Any]], observed: list[dict[str, Any]]) -> list[FieldDiff]:
    """Records compared by position: field by field when both have the same type, else as whole records."""
    found: list[FieldDiff] = []
    for i in range(max(len(expected), len(observed))):
        want = expected[i] if i < len(expected) else ABSENT
        got = observed[i] if i < len(observed) else ABSENT
        if isinstance(want, dict) and isinstance(got, dict) and want["type"] == got["type"]:
            found.extend(diff(want, got, f"records[{i}]"))
        elif want != got:
            found.append(FieldDiff(f"records[{i}]", _compact(want), _compact(got)))
    return found


def _normalized_response(response: dict[str, Any]) -> dict[str, Any]:
    error = response.get("error")
    if isinstance(error, int) and not isinstance(error, bool) and error in set(Errors):
        return {**response, "error": Errors(error).name}
    return response


def _matches(got: Any, want: Any) -> bool:
    """Whether ``to_json(got) == want`` with JSON types (True and 1 differ); False also when unsure."""
    kind = type(want)
    if kind is str:
        return got == want if type(got) is str else isinstance(got, Enum) and got._name_ == want
    if kind is list or kind is dict:  # an array or an object: read on the reference's value (a proposal, topics)
        return matches(got, want)
    if kind not in _JSON_LEAVES:  # no JSON value at all (a tuple: the diff tells it apart)
        return False
    return type(got) is kind and got == want


def response_matches(response: Any, stated: Mapping[str, Any]) -> bool:
    """Whether each stated response field equals the reference's (``response``: its response object or None).

    Only the stated fields are read; nothing is converted (nested values by :func:`kraftspec.traces.match.matches`).
    False also when unsure (a numeric error code): the caller then diffs the JSON forms, which decide.
    """
    try:
        fields = field_values(response)
    except AttributeError:  # no response (then no field may be stated), or one without fields to read: unsure
        if response is not None:
            return False
        fields = {}
    try:
        for key, want in stated.items():
            got = fields[key]
            if got is want:  # the same object: True, None, a small int
                continue
            kind = type(got)
            if kind is type(want) and kind in _EXACT:  # the common cases inline: a scalar, an error code by name
                if got != want:
                    return False
            elif kind is Errors and type(want) is str:
                if got._name_ != want:
                    return False
            elif not _matches(got, want):
                return False
    except KeyError:  # a stated field the reference's response does not have
        return False
    return True


def records_match(written: Written, stated: Written) -> bool:
    """Whether the records written equal the stated ones, offsets, types and every field (True and 1 differ)."""
    if len(written) != len(stated):
        return False
    for (offset, got), (stated_offset, want) in zip(written, stated):
        if offset != stated_offset or type(got) is not type(want):
            return False
        if got is not want:
            fields, stated_fields = field_values(got), field_values(want)
            # equal field by field, then of the same types (in one order: else unsure, and the diff decides)
            if fields != stated_fields or list(map(type, fields.values())) != list(map(type, stated_fields.values())):
                return False
    return True


_NO_CONTEXT: AbstractContextManager[Any] = nullcontext()


def replay(trace: Trace, within: AbstractContextManager[Any] = _NO_CONTEXT) -> Verdict:
    """Replay every step of ``trace``; stop at the first divergence.

    The initial state is built by the reference as it is; the steps run inside ``within`` (e.g. a
    mutant's ``applied()``, to check that a variant of the reference produces the trace).
    """
    state = REPLAYERS[trace.component].initial(trace)
    if within is _NO_CONTEXT:
        return replay_steps(trace, state, 0)
    with within:
        return replay_steps(trace, state, 0)


def replay_steps(trace: Trace, state: Any, clock: int, start: int = 0) -> Verdict:
    """Replay ``trace.steps[start:]`` from ``state`` at ``clock``; the verdict of the whole trace."""
    component, steps = trace.component, trace.steps
    replayer = REPLAYERS[component]
    run, post_matches = replayer.run, replayer.post_matches
    for index in range(start, len(steps)):
        step = steps[index]
        # :func:`_check`, inlined (a call and a tuple per step on the hot path)
        try:
            after, after_clock, response, written = run(state, clock, step)
        except (RuntimeError, ValueError, KeyError) as exc:
            return _diverged(trace, index, state, clock, [_refused(exc)])
        stated, records, post = step.response, step.records, step.post
        if ((stated is not None and not response_matches(response, stated))
                or (records is not None and (records or written) and not records_match(written, records))
                or (post and not post_matches(after, after_clock, post))):
            found = step_diffs(component, step, after, after_clock, response, written)
            if found:
                return _diverged(trace, index, state, clock, found)
        state, clock = after, after_clock
    return Verdict(trace.id, len(steps), None)


def check_step(component: str, state: Any, clock: int, step: Step) -> tuple[Any, int, list[FieldDiff]]:
    """(the reference's state', clock', the differences) for one step; state' is None if the reference refuses it.

    The hot path runs the reference and compares only what the step states, on the reference's own
    values (:func:`response_matches`, :func:`records_match`, the component's ``post_matches``); a step
    that does not match there is diffed field by field (:func:`step_diffs`), which decides.
    """
    replayer = REPLAYERS[component]
    return _check(replayer.run, replayer.post_matches, component, state, clock, step)


def _check(run: Any, post_matches: Any, component: str, state: Any, clock: int,
           step: Step) -> tuple[Any, int, list[FieldDiff]]:
    try:
        after, after_clock, response, written = run(state, clock, step)
    except (RuntimeError, ValueError, KeyError) as exc:
        return None, clock, [_refused(exc)]
    stated, records, post = step.response, step.records, step.post
    if ((stated is not None and not response_matches(response, stated))
            or (records is not None and (records or written) and not records_match(written, records))
            or (post and not post_matches(after, after_clock, post))):
        return after, after_clock, step_diffs(component, step, after, after_clock, response, written)
    return after, after_clock, _NO_DIFFS


def _refused(exc: Exception) -> FieldDiff:
    return FieldDiff("input", f"refused by the reference: {type(exc).__name__}: {exc}", "accepted")


def step_diffs(component_name: str, step: Step, after: Any, after_clock: int, response: Any,
               written: Written) -> list[FieldDiff]:
    """The field-level differences between a step's stated outputs and the reference's (JSON forms)."""
    component, replayer = components()[component_name], REPLAYERS[component_name]
    found: list[FieldDiff] = []
    if step.response is not None:
        expected = to_json(response) if response is not None else {}
        found += [d for key, value in _normalized_response(dict(step.response)).items()
                  for d in diff(expected.get(key, ABSENT), value, f"response.{key}")]
    if step.records is not None:
        found += record_diffs([component.encode_record(o, r) for o, r in written],
                              [component.encode_record(o, r) for o, r in step.records])
    if step.post:
        full = replayer.observe(after, after_clock, step.post)
        found += [d for key, value in step.post.items() for d in diff(full.get(key, ABSENT), value, f"post.{key}")]
    return found


def _diverged(trace: Trace, index: int, state: Any, clock: int, found: list[FieldDiff]) -> Verdict:
    replayer, step = REPLAYERS[trace.component], trace.steps[index]
    name, doc = replayer.rule(step.action)
    return Verdict(trace.id, len(trace.steps), Divergence(
        index, step_to_json(components()[trace.component], step)["input"], tuple(found), name, doc,
        replayer.summarize(state, clock)))
