"""Replay a trace through the reference and find the first step where the implementation diverged.

Each step's stated outputs are compared with what the reference produces from the same state:
the response fields the trace states, every record written (offset, type and all fields, omitted
fields taking the schema default), and the post-state fields it states. The first difference is
reported as a minimal field-level diff with the rule that decides the step and the state before it.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Optional

from kraftspec.reference.errors import Errors
from kraftspec.traces import broker_replay
from kraftspec.traces.format import Component, Trace, components, step_to_json

REPLAYERS: dict[str, ModuleType] = {"broker": broker_replay}
ABSENT = "(absent)"


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


def replay(trace: Trace, within: AbstractContextManager[Any] = nullcontext()) -> Verdict:
    """Replay every step of ``trace``; stop at the first divergence.

    The initial state is built by the reference as it is; the steps run inside ``within`` (e.g. a
    mutant's ``applied()``, to check that a variant of the reference produces the trace).
    """
    component = components()[trace.component]
    replayer = REPLAYERS[trace.component]
    state, clock = replayer.initial(trace), 0
    with within:
        return _replay_steps(trace, component, replayer, state, clock)


def _replay_steps(trace: Trace, component: Component, replayer: ModuleType, state: Any, clock: int) -> Verdict:
    for index, step in enumerate(trace.steps):
        try:
            after, after_clock, response, written = replayer.apply(state, clock, step)
        except (RuntimeError, ValueError, KeyError) as exc:
            found = [FieldDiff("input", f"refused by the reference: {type(exc).__name__}: {exc}", "accepted")]
        else:
            found = []
            if step.response is not None:
                expected = response or {}
                found += [d for key, value in _normalized_response(dict(step.response)).items()
                          for d in diff(expected.get(key, ABSENT), value, f"response.{key}")]
            if step.records is not None:
                found += record_diffs([component.encode_record(o, r) for o, r in written],
                                      [component.encode_record(o, r) for o, r in step.records])
            if step.post:
                full = replayer.observe(after, after_clock, step.post)
                found += [d for key, value in step.post.items()
                          for d in diff(full.get(key, ABSENT), value, f"post.{key}")]
        if found:
            name, doc = replayer.rule(step.action)
            return Verdict(trace.id, len(trace.steps), Divergence(
                index, step_to_json(component, step)["input"], tuple(found), name, doc,
                replayer.summarize(state, clock)))
        state, clock = after, after_clock
    return Verdict(trace.id, len(trace.steps), None)
