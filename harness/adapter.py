"""Kafka as a :class:`kraftspec.oracle.Adapter`: the reference's differential machines drive Kafka's own code.

A component's hooks live in ``kraftspec.harness.<component>``: ``kafka_initial`` (a trace's ``initial`` object
as the harness session opens it), optionally ``kafka_input`` (an input as Kafka gets it), ``kafka_inputs`` (a whole
trace's inputs as Kafka gets them, where that needs the trace's own outputs), ``trace_step`` (Kafka's answer as a
trace step), ``refused_input`` (an input Kafka refused, as its step states it: Kafka's choices in it) and
``CHOICES`` (the input fields where a step may state what Kafka chose). :func:`hooks` fills in the defaults.
"""

from __future__ import annotations

import importlib
import json
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional, Sequence

from kraftspec.harness.jvm import DEFAULT_VERSION, HarnessError, KafkaProcess, shared
from kraftspec.harness.kafka_records import to_trace


class KafkaRefused(RuntimeError):
    """Kafka's code threw on an input (``refused``): the exception's class and message."""

    def __init__(self, exception: str, message: str) -> None:
        super().__init__(f"{exception}: {message}")
        self.exception, self.message = exception, message


def default_trace_step(input: Mapping[str, Any], answer: Mapping[str, Any]) -> dict[str, Any]:
    """Kafka's answer as a step: its response and records (mapped onto the trace's names) and its post-state."""
    output = answer.get("output") or {}
    step: dict[str, Any] = {"input": dict(input)}
    stated: dict[str, Any] = {}
    if "response" in output:
        stated["response"] = output["response"]
    if "records" in output:
        stated["records"] = [to_trace(record) for record in output["records"]]
    if stated:
        step["output"] = stated
    if answer.get("post") is not None:
        step["post"] = answer["post"]
    return step


@dataclass(frozen=True)
class Hooks:
    """How one component's trace vocabulary meets its harness session.

    ``choices``: the input fields (dotted paths) where a step may state a choice Kafka made; every other field of
    the step's input must be the input as given (:meth:`checked_step`), so a harness that changed what it fed
    Kafka cannot pass its change off as the trace's input.
    """

    kafka_initial: Callable[[Mapping[str, Any]], dict[str, Any]]
    kafka_input: Callable[[Mapping[str, Any]], dict[str, Any]]
    trace_step: Callable[[Mapping[str, Any], Mapping[str, Any]], dict[str, Any]]
    choices: frozenset[str] = frozenset()
    kafka_inputs: Optional[Callable[[Sequence[Mapping[str, Any]]], list[dict[str, Any]]]] = None
    refused_input: Callable[[Mapping[str, Any], Mapping[str, Any]], Mapping[str, Any]] = lambda given, answer: given

    def inputs(self, steps: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """A trace's inputs (its steps as JSON) as Kafka gets them: by ``kafka_inputs`` if the component has it,
        else each by ``kafka_input``."""
        if self.kafka_inputs is not None:
            return self.kafka_inputs(steps)
        return [self.kafka_input(step["input"]) for step in steps]

    def checked_step(self, given: Mapping[str, Any], sent: Mapping[str, Any],
                     answer: Mapping[str, Any]) -> dict[str, Any]:
        """Kafka's answer to ``sent`` (``given`` as Kafka got it) as a step whose input is ``given`` plus Kafka's choices."""
        step = self.trace_step(sent, answer)
        if _without(step["input"], self.choices) != _without(given, self.choices):
            raise HarnessError(f"the harness changed the input: the trace gave {json.dumps(dict(given))}, "
                               f"Kafka's step states {json.dumps(step['input'])} (only {sorted(self.choices)} "
                               "may state Kafka's choices)")
        return step


def _without(obj: Mapping[str, Any], paths: frozenset[str]) -> dict[str, Any]:
    """``obj`` without the fields at the dotted ``paths``."""
    kept = dict(obj)
    for path in paths:
        head, _, rest = path.partition(".")
        if not rest:
            kept.pop(head, None)
        elif isinstance(kept.get(head), dict):
            kept[head] = _without(kept[head], frozenset([rest]))
    return kept


def hooks(component: str) -> Hooks:
    """The component's hooks module, with the defaults for what it leaves out."""
    try:
        module = importlib.import_module(f"kraftspec.harness.{component}")
    except ModuleNotFoundError as exc:
        if exc.name != f"kraftspec.harness.{component}":
            raise
        raise KeyError(f"the Kafka harness does not cover the {component!r} component") from None
    return Hooks(kafka_initial=module.kafka_initial,
                 kafka_input=getattr(module, "kafka_input", dict),
                 trace_step=getattr(module, "trace_step", default_trace_step),
                 choices=frozenset(getattr(module, "CHOICES", ())),
                 kafka_inputs=getattr(module, "kafka_inputs", None),
                 refused_input=getattr(module, "refused_input", lambda given, answer: given))


class KafkaAdapter:
    """One component of Kafka (its own classes, in the harness JVM) behind the oracle's Adapter protocol."""

    def __init__(self, component: str, version: str = DEFAULT_VERSION,
                 process: Optional[KafkaProcess] = None) -> None:
        self.component, self.version = component, version
        self.hooks = hooks(component)
        self.process = process or shared(version)

    def reset(self, initial: Mapping[str, Any]) -> None:
        self.process.open(self.component, self.hooks.kafka_initial(initial))

    def step(self, input: Mapping[str, Any]) -> Mapping[str, Any]:
        """Kafka's response, records and post-state for ``input``; :class:`KafkaRefused` if Kafka threw."""
        sent = self.hooks.kafka_input(input)
        answer = self.process.step(sent)
        if "refused" in answer:
            raise KafkaRefused(answer["refused"]["exception"], answer["refused"]["message"])
        step = self.hooks.checked_step(input, sent, answer)
        return {"input": step["input"], **step.get("output", {})} | ({"post": step["post"]} if "post" in step else {})
