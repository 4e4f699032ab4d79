"""Perturbations of stated JSON values, for the tests that hold a replay's fast path against the field-level diff.

Each perturbation changes one element into a value JSON tells apart from it (true for 1, 1.0 for 1, a string
subclass, a dropped or added element or key, a tuple for an array); a fast path that calls such a step equal
while the diff finds a difference is wrong.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator, Union

from kraftspec.traces.format.envelope import Step
from kraftspec.traces.format.values import TraceError


class Text(str):
    """A string that equals its plain twin in Python but is not a JSON string for the diff (types differ)."""


def leaf_variants(value: Any) -> list[Any]:
    """Values equal to ``value`` in Python or close to it that the diff tells apart from it."""
    if isinstance(value, bool):
        return [not value, int(value), float(value)]
    if isinstance(value, int):
        return [value + 1, float(value), bool(value), str(value)] + ([True, 1.0] if value == 1 else [])
    if isinstance(value, str):
        return [Text(value), value + "x"]
    if value is None:
        return [0, False, "null", {}]
    return []


def perturbed(value: Any) -> Iterator[Any]:
    """``value`` with one element changed: a leaf, an array shortened, lengthened or made a tuple, an object with a
    key dropped or added."""
    if isinstance(value, dict):
        for key, item in value.items():
            for other in perturbed(item):
                yield {**value, key: other}
        if value:
            yield dict(list(value.items())[1:])
        yield {**value, "extra": 1}
    elif isinstance(value, list):
        for i, item in enumerate(value):
            for other in perturbed(item):
                yield [*value[:i], other, *value[i + 1:]]
        if value:
            yield value[:-1]
            yield tuple(value)
        yield [*value, 0]
    else:
        yield from leaf_variants(value)


def perturbed_steps(step: Step) -> Iterator[Step]:
    """``step`` with one element of its stated post-state, or of its stated response, perturbed."""
    for post in perturbed(dict(step.post or {})):
        yield Step(step.action, step.input, step.response, step.records, post)
    if step.response is not None:
        for response in perturbed(dict(step.response)):
            yield Step(step.action, step.input, response, step.records, step.post)


def judged(judge: Callable[[], bool]) -> Union[bool, str]:
    """Whether a step conforms, or ``"refused"`` when it states a field the reference's output does not have."""
    try:
        return judge()
    except TraceError:
        return "refused"
