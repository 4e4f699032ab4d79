"""What every component's trace mapping shares (``kraftspec check --with-tlc``, ``spec/trace_validation.py``).

A component maps a trace (trace format v1, ``traces/FORMAT.md``) into the vocabulary of its trace
module (``spec/<Spec>Trace.tla``, which EXTENDS the spec and constrains its actions to a trace's
steps, as in etcd's and CCF's Raft trace validation): the initial state as the spec's variables and
each step as one TLA+ record. A step the spec cannot express is :class:`Outside`: the trace is cut
there and the verdict is ``outside`` the spec's bounds, never a rejection.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Collection, Iterable, Iterator, Mapping, Optional

from kraftspec.reference.errors import Errors
from kraftspec.spec.tla_values import TlaValue, record
from kraftspec.spec.tlc_config import read_constants
from kraftspec.traces.format.envelope import Step, Trace

SPEC_DIR = Path(__file__).resolve().parent


class Outside(Exception):
    """A trace, step or field the spec's vocabulary cannot express."""


class Unfixed(Exception):
    """A stated output or post-state field that differs from what the spec fixes: the step is rejected."""


@dataclass(frozen=True)
class Encoded:
    """A trace in the trace module's vocabulary: the steps before ``cut`` (the first inexpressible one)."""

    init: Optional[str]
    steps: tuple[str, ...]
    cut: Optional[int] = None
    cut_reason: str = ""


@dataclass(frozen=True)
class TraceModule:
    """A component's trace-validation module: the spec it extends, its variables and the trace mapping.

    ``variables`` lists the spec's variables, then the trace module's own; ``encode`` maps one trace
    of the component under the spec's constants.
    """

    component: str
    spec: str
    variables: tuple[str, ...]
    encode: Callable[[Trace, Mapping[str, TlaValue]], Encoded]

    @property
    def name(self) -> str:
        """The trace module's name (``spec/<name>.tla``)."""
        return f"{self.spec}Trace"

    def bounds(self) -> dict[str, TlaValue]:
        """The constants of ``spec/<Spec>.cfg``: traces are validated under the bounds TLC checks."""
        return read_constants(SPEC_DIR / f"{self.spec}.cfg")


def within(value: int, low: int, high: int, what: str) -> int:
    """``value`` when in ``low..high``; :class:`Outside` otherwise."""
    if not low <= value <= high:
        raise Outside(f"{what} {value} is outside {low}..{high}")
    return value


def error_name(value: Any) -> Optional[str]:
    """An error stated by name (``"NONE"``) or by its numeric code, as its name; None if neither (Kafka's Errors.java)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        try:
            return Errors(value).name
        except ValueError:
            return None
    return value if isinstance(value, str) else None


def encoded(init: Callable[[], str], steps: Callable[[], Iterator[str]]) -> Encoded:
    """A trace's encoding: ``init()``, then the steps ``steps()`` yields (one per trace step) up to the first
    that raises :class:`Outside` (the cut); an inexpressible initial state cuts the trace before its first step."""
    try:
        start = init()
    except Outside as exc:
        return Encoded(None, (), 0, f"initial state: {exc}")
    done: list[str] = []
    try:
        for text in steps():
            done.append(text)
    except Outside as exc:
        return Encoded(start, tuple(done), len(done), str(exc))
    return Encoded(start, tuple(done))


def modelled(step: Step, actions: Collection[str], spec: str) -> str:
    """``step``'s action when it is one of the ``actions`` ``spec`` models; :class:`Outside` otherwise."""
    if step.action not in actions:
        raise Outside(f"action {step.action!r} is not modelled by {spec} (it models {', '.join(sorted(actions))})")
    return step.action


def ok(response: Any) -> str:
    """``yes``/``no``: whether a stated response reports success (its ``error`` is NONE); ``?`` when it does not say."""
    if not isinstance(response, Mapping) or "error" not in response:
        return "?"
    return "yes" if error_name(response["error"]) == "NONE" else "no"


def answered_with_error(message: Any) -> bool:
    """Whether an answer states an error, at its top level or its partition's (an absent field states none)."""
    return any(error_name(getattr(message, name, "NONE")) != "NONE" for name in ("error", "partition_error"))


def stated_post(stated: Mapping[str, TlaValue]) -> dict[str, TlaValue]:
    """A step record's ``stated`` (the post-state variables the step states) and ``post`` (their values; a record
    must have a field, so ``[nothing |-> 0]`` when it states none)."""
    return {"stated": frozenset(stated), "post": record(**(stated or {"nothing": 0}))}


def timed(steps: Iterable[Step]) -> Iterator[tuple[Step, int]]:
    """Each step with the time it happens at: the ``now`` its input states, else the last one stated (0 before any)."""
    clock = 0
    for step in steps:
        clock = step.input.get("now", clock)
        yield step, clock


def fixing(outputs: Callable[[Step], dict[str, TlaValue]]) -> Callable[[Step], dict[str, TlaValue]]:
    """``outputs`` (a step's stated outputs and post-state as step record fields) with ``fixed`` TRUE; ``fixed`` FALSE
    alone when a field is not as the spec fixes it (:class:`Unfixed`) or has another shape than the reference's: no
    successor matches, the step is rejected."""
    @functools.wraps(outputs)
    def fixed(step: Step) -> dict[str, TlaValue]:
        try:
            return {"fixed": True, **outputs(step)}
        except (Unfixed, KeyError, TypeError, ValueError, AttributeError):  # stated JSON of another shape
            return {"fixed": False}
    return fixed
