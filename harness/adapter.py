"""Kafka as a :class:`kraftspec.oracle.Adapter`: the reference's differential machines drive Kafka's own code.

A component's hooks live in ``kraftspec.harness.<component>``: ``kafka_initial`` (a trace's ``initial`` object
as the harness session opens it), optionally ``kafka_input`` (an input as Kafka gets it) and ``trace_step``
(Kafka's answer as a trace step). :func:`hooks` fills in the defaults.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional

from kraftspec.harness.jvm import DEFAULT_VERSION, KafkaProcess, shared
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
    """How one component's trace vocabulary meets its harness session."""

    kafka_initial: Callable[[Mapping[str, Any]], dict[str, Any]]
    kafka_input: Callable[[Mapping[str, Any]], dict[str, Any]]
    trace_step: Callable[[Mapping[str, Any], Mapping[str, Any]], dict[str, Any]]


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
                 trace_step=getattr(module, "trace_step", default_trace_step))


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
        step = self.hooks.trace_step(sent, answer)
        return {"input": step["input"], **step.get("output", {})} | ({"post": step["post"]} if "post" in step else {})
