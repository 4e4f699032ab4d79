"""Replay a trace through the reference and find the first step where the implementation diverged.

Each step's stated outputs are compared with what the reference produces from the same state:
the response fields the trace states, every record written (offset, type and all fields, omitted
fields taking the schema default), and the post-state fields it states; a trace with a ``view`` has the
reference's sends and records restricted to the types it lists. The first difference is reported as a
minimal field-level diff with the handler, the rule checks it made (values given and returned) and the
state before it. A stated field the reference's output does not have is refused (:class:`TraceError`).

Speed: a step is first compared on the reference's own values, reading only the fields the trace
states (no JSON conversion, no full post-state); only a step that differs there is converted and
diffed, and the diff decides. Both compare exactly as JSON does (True and 1 differ).
"""

from __future__ import annotations

import json
import sys
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, replace
from types import CodeType, FrameType, ModuleType
from typing import Any, Callable, Mapping, Optional

from kraftspec.reference.errors import Errors
from kraftspec.traces.replay import broker as broker_replay
from kraftspec.traces.replay import controller as controller_replay
from kraftspec.traces.replay import partition as partition_replay
from kraftspec.traces.replay import raft as raft_replay
from kraftspec.traces.format.envelope import Step, Trace, Written, components, step_to_json
from kraftspec.traces.replay.match import field_values, stated_fields_match
from kraftspec.traces.format.values import TraceError, to_json

REPLAYERS: dict[str, ModuleType] = {"broker": broker_replay, "partition": partition_replay, "raft": raft_replay,
                                     "controller": controller_replay}
ABSENT = "(absent)"
_NO_DIFFS: list["FieldDiff"] = []  # never mutated
ERROR_FIELDS = frozenset(("error", "error_code", "partition_error"))  # fields holding an error code, by name or number
RULE_MODULES = ("broker_rules", "partition_rules", "controller_rules", "raft_rules", "storage_rules")
Runner = Callable[[Any, int, Step], tuple[Any, int, Any, Written]]


@dataclass(frozen=True)
class FieldDiff:
    """One differing leaf: its path in the step's output, the reference's value and the implementation's."""

    path: str
    expected: Any
    observed: Any

    def __str__(self) -> str:
        return f"{self.path}: expected {show(self.expected)}, observed {show(self.observed)}"


def show(value: Any) -> str:
    """A value as compact JSON (``(absent)`` for a missing one; a value JSON cannot hold as its Python repr)."""
    if value is ABSENT:
        return ABSENT
    try:
        return json.dumps(to_json(value), separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


@dataclass(frozen=True)
class RuleCheck:
    """One call of a rule function (``kraftspec.reference.*_rules``) while the reference ran the divergent step."""

    rule: str
    args: tuple[tuple[str, Any], ...]
    result: Any
    decides: bool = False
    """The opposite result would have produced the implementation's values in the differing fields."""

    def __str__(self) -> str:
        given = ", ".join(f"{name}={show(value)}" for name, value in self.args)
        return f"{self.rule}({given}) -> {show(self.result)}" + ("  <- decides" if self.decides else "")


@dataclass(frozen=True)
class Divergence:
    """The first divergent step (0-based ``step``) with its input, the diff, the deciding rule and prior state."""

    step: int
    input: dict[str, Any]
    diffs: tuple[FieldDiff, ...]
    rule: str
    rule_doc: str
    state_before: str
    checks: tuple[RuleCheck, ...] = ()


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


def normalized(value: Any) -> Any:
    """A stated output with every known numeric error code (``error``, ``error_code``, ``partition_error``) named."""
    if isinstance(value, list):
        return [normalized(item) for item in value]
    if not isinstance(value, dict):
        return value
    named = {}
    for key, item in value.items():
        if key in ERROR_FIELDS and type(item) is int and item in _ERROR_CODES:
            named[key] = Errors(item).name
        else:
            named[key] = normalized(item)
    return named


_ERROR_CODES = frozenset(map(int, Errors))


OMITTED_AT_DEFAULT = frozenset({"starts_batch", "snapshot_id", "records_offset", "control_records"})
"""Fields a trace states only where they differ from their default (traces/FORMAT.md: a raft log entry's
``starts_batch``, a Fetch answer's ``snapshot_id`` and ``records_offset``, a FetchSnapshot answer's
``control_records``), so that the reference's object at the same place, or the one an array's extra element is read
against, may lack them: a difference there is a divergence, not a misspelt field."""


def unknown_field(expected: Any, stated: Any, path: str) -> Optional[str]:
    """The path of the first stated field name that the reference's object at that place lacks, or None.

    Read at the top level and in the objects of arrays (never in maps keyed by data); an object of another
    ``type`` than the reference's (a different message) is a divergence, not a misspelling.
    """
    if isinstance(stated, dict) and isinstance(expected, dict):
        if "type" in stated and stated["type"] != expected.get("type"):
            return None
        for key, value in stated.items():
            if key not in expected:
                if key in OMITTED_AT_DEFAULT:
                    continue
                return f"{path}.{key}"
            if isinstance(value, list):
                found = unknown_field(expected[key], value, f"{path}.{key}")
                if found:
                    return found
    elif isinstance(stated, list) and isinstance(expected, list) and expected:
        for i, value in enumerate(stated):
            found = unknown_field(expected[min(i, len(expected) - 1)], value, f"{path}[{i}]")
            if found:
                return found
    return None


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


def replay(trace: Trace, within: AbstractContextManager[Any] = _NO_CONTEXT, explain: bool = True) -> Verdict:
    """Replay every step of ``trace``; stop at the first divergence.

    The initial state is built by the reference as it is; the steps run inside ``within`` (e.g. a
    mutant's ``applied()``, to check that a variant of the reference produces the trace). ``explain=False``
    leaves a divergence's rule checks out (they run the step again; a bulk verdict needs no report).
    """
    state = REPLAYERS[trace.component].initial(trace)
    if within is _NO_CONTEXT:
        return replay_steps(trace, state, 0, explain=explain)
    with within:
        return replay_steps(trace, state, 0, explain=explain)


def runner(component: str, view: Optional[Mapping[str, frozenset[str]]] = None) -> Runner:
    """The component's ``run``, its sends and records restricted to a trace's ``view`` when it has one."""
    replayer = REPLAYERS[component]
    if view is None:
        return replayer.run
    kept_sends, kept_records = view.get("sends"), view.get("records")

    def run_in_view(state: Any, clock: int, step: Step) -> tuple[Any, int, Any, Written]:
        if kept_sends is None:
            after, after_clock, response, written = replayer.run(state, clock, step)
        else:
            after, after_clock, response, written = replayer.run(state, clock, step, kept_sends)
        if kept_records is not None:
            written = tuple(item for item in written if type(item[1]).__name__ in kept_records)
        return after, after_clock, response, written

    return run_in_view


def replay_steps(trace: Trace, state: Any, clock: int, start: int = 0, explain: bool = True) -> Verdict:
    """Replay ``trace.steps[start:]`` from ``state`` at ``clock``; the verdict of the whole trace.

    Raises :class:`TraceError` (path ``steps[N]...``) for a stated field the reference's output does not have.
    """
    component, steps = trace.component, trace.steps
    replayer = REPLAYERS[component]
    run, post_matches = runner(component, trace.view), replayer.post_matches
    for index in range(start, len(steps)):
        step = steps[index]
        # :func:`_check`, inlined (a call and a tuple per step on the hot path)
        try:
            after, after_clock, response, written = run(state, clock, step)
        except (RuntimeError, ValueError, KeyError) as exc:
            return _diverged(trace, index, state, clock, [_refused(exc)], explain)
        stated, records, post = step.response, step.records, step.post
        if ((stated is not None and not stated_fields_match(response, stated))
                or (records is not None and (records or written) and not records_match(written, records))
                or (post and not post_matches(after, after_clock, post))):
            try:
                found = step_diffs(component, step, after, after_clock, response, written)
            except TraceError as exc:
                raise TraceError(f"steps[{index}].{exc}") from None
            if found:
                return _diverged(trace, index, state, clock, found, explain)
        state, clock = after, after_clock
    return Verdict(trace.id, len(steps), None)


def check_step(component: str, state: Any, clock: int, step: Step,
               view: Optional[Mapping[str, frozenset[str]]] = None) -> tuple[Any, int, list[FieldDiff]]:
    """(the reference's state', clock', the differences) for one step; state' is None if the reference refuses it.

    The hot path runs the reference and compares only what the step states, on the reference's own
    values (:func:`kraftspec.traces.replay.match.stated_fields_match` for the response and, through the component's
    ``OBSERVERS``, its ``post_matches``; :func:`records_match`); a step
    that does not match there is diffed field by field (:func:`step_diffs`), which decides. ``view``: a trace's.
    """
    return _check(runner(component, view), REPLAYERS[component].post_matches, component, state, clock, step)


def _check(run: Any, post_matches: Any, component: str, state: Any, clock: int,
           step: Step) -> tuple[Any, int, list[FieldDiff]]:
    try:
        after, after_clock, response, written = run(state, clock, step)
    except (RuntimeError, ValueError, KeyError) as exc:
        return None, clock, [_refused(exc)]
    stated, records, post = step.response, step.records, step.post
    if ((stated is not None and not stated_fields_match(response, stated))
            or (records is not None and (records or written) and not records_match(written, records))
            or (post and not post_matches(after, after_clock, post))):
        return after, after_clock, step_diffs(component, step, after, after_clock, response, written)
    return after, after_clock, _NO_DIFFS


def _refused(exc: Exception) -> FieldDiff:
    return FieldDiff("input", f"refused by the reference: {type(exc).__name__}: {exc}", "accepted")


def step_diffs(component_name: str, step: Step, after: Any, after_clock: int, response: Any,
               written: Written) -> list[FieldDiff]:
    """The field-level differences between a step's stated outputs and the reference's (JSON forms).

    Raises :class:`TraceError` (path from ``output``/``post``) for a stated field the reference's output lacks.
    """
    component, replayer = components()[component_name], REPLAYERS[component_name]
    found: list[FieldDiff] = []
    if step.response is not None:
        expected = to_json(response) if response is not None else {}
        stated = normalized(dict(step.response))
        misspelt = unknown_field(expected, stated, "output.response")
        if misspelt:
            known = ", ".join(expected) or "none: this action answers nothing"
            raise TraceError(f"{misspelt}: unknown field (the reference's {step.action} output has: {known})")
        found += [d for key, value in stated.items() for d in diff(expected.get(key, ABSENT), value, f"response.{key}")]
    if step.records is not None:
        found += record_diffs([component.encode_record(o, r) for o, r in written],
                              [component.encode_record(o, r) for o, r in step.records])
    if step.post:
        for key in step.post:
            if key not in replayer.OBSERVERS:
                raise TraceError(f"post.{key}: unknown post-state field (known: {', '.join(replayer.OBSERVERS)})")
        full = replayer.observe(after, after_clock, step.post)
        found += [d for key, value in step.post.items() for d in diff(full.get(key, ABSENT), value, f"post.{key}")]
    return found


def divergence(component: str, step: Step, index: int, state: Any, clock: int, found: list[FieldDiff],
               view: Optional[Mapping[str, frozenset[str]]] = None, explain: bool = True) -> Divergence:
    """The report of a divergent step: its input, the diff, the handler, the rule checks it made (unless not
    ``explain``), the state before."""
    replayer, run = REPLAYERS[component], runner(component, view)
    name, doc = replayer.rule(step.action)
    checks = rule_checks(run, state, clock, step) if explain else ()
    differing = {d.path for d in found}
    checks = tuple(replace(check, decides=_decides(run, component, state, clock, step, checks, i, differing))
                   for i, check in enumerate(checks))
    return Divergence(index, step_to_json(components()[component], step)["input"], tuple(found), name, doc,
                      replayer.summarize(state, clock), checks)


_HOLDERS: dict[int, tuple[Any, list[tuple[Any, str]]]] = {}  # id(function) -> (function, its (module, name) holders)


def _holders(function: Any) -> list[tuple[Any, str]]:
    """Every (loaded kraftspec module, attribute) that holds ``function`` (found once per function)."""
    known = _HOLDERS.get(id(function))
    if known is None or known[0] is not function:
        found = [(module, attr) for module in list(sys.modules.values())
                 if getattr(module, "__name__", "").startswith("kraftspec")
                 for attr, value in list(vars(module).items()) if value is function]
        known = _HOLDERS[id(function)] = (function, found)
    return known[1]


def _decides(run: Runner, component: str, state: Any, clock: int, step: Step, checks: tuple[RuleCheck, ...],
             index: int, differing: set[str]) -> bool:
    """Whether the boolean check ``checks[index]``, answered the other way, makes every differing field match."""
    check = checks[index]
    if type(check.result) is not bool:
        return False
    module_name, _, name = check.rule.rpartition(".")
    original = getattr(sys.modules[module_name], name)
    nth = sum(1 for c in checks[:index] if c.rule == check.rule)
    calls = [0]

    def flipped(*args: Any, **kwargs: Any) -> Any:
        """The rule, its ``nth`` call's answer reversed."""
        result = original(*args, **kwargs)
        calls[0] += 1
        return (not result) if calls[0] == nth + 1 else result

    holders = _holders(original)
    for module, attr in holders:
        setattr(module, attr, flipped)
    try:
        after, after_clock, response, written = run(state, clock, step)
        remaining = step_diffs(component, step, after, after_clock, response, written)
    except Exception:  # noqa: BLE001 - the other answer made the reference refuse the step: it does not decide
        return False
    finally:
        for module, attr in holders:
            setattr(module, attr, original)
    return not differing & {d.path for d in remaining}


def _diverged(trace: Trace, index: int, state: Any, clock: int, found: list[FieldDiff], explain: bool) -> Verdict:
    return Verdict(trace.id, len(trace.steps),
                   divergence(trace.component, trace.steps[index], index, state, clock, found, trace.view, explain))


def _rule_codes() -> dict[CodeType, str]:
    """The code of every rule function as the reference calls it now (an applied mutant's too), by qualified name."""
    codes: dict[CodeType, str] = {}
    for module_name in RULE_MODULES:
        module = sys.modules.get(f"kraftspec.reference.{module_name}")
        for name, value in (vars(module) if module is not None else {}).items():
            code = getattr(value, "__code__", None)
            if isinstance(code, CodeType) and not name.startswith("_"):
                codes.setdefault(code, f"kraftspec.reference.{module_name}.{name}")
    return codes


def rule_checks(run: Runner, state: Any, clock: int, step: Step) -> tuple[RuleCheck, ...]:
    """The rule-function calls the reference makes on ``step`` from ``state``, in order, with arguments and results.

    The step is run again under a profiler (only for a report: the replay itself is never traced).
    """
    codes = _rule_codes()
    calls: list[tuple[str, tuple[tuple[str, Any], ...], FrameType]] = []
    results: dict[int, Any] = {}

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        name = codes.get(frame.f_code)
        if name is None:
            return
        if event == "call":
            code = frame.f_code
            params = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
            calls.append((name, tuple((p, frame.f_locals[p]) for p in params if p in frame.f_locals), frame))
        elif event == "return":
            results[id(frame)] = arg

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        run(state, clock, step)
    except Exception:  # noqa: BLE001 - a refused step: the checks made until then are still the report
        pass
    finally:
        sys.setprofile(previous)
    return tuple(RuleCheck(name, args, results.get(id(frame))) for name, args, frame in calls)
