"""The differential machines of ``kraftspec.oracle`` for every component, driven by the reference itself.

An adapter that answers with the reference's own outputs must never diverge (the machines generate inputs the
format takes); the same adapter with one output changed must be caught; a raft ``view`` compares only the listed
messages.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Optional

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis.stateful import RuleBasedStateMachine, run_state_machine_as_test

from kraftspec import oracle
from kraftspec.differential_raft import ACTIONS as RAFT_ACTIONS
from kraftspec.traces.format.envelope import components, step_from_json
from kraftspec.traces.replay.verdict import REPLAYERS

SETTINGS = settings(max_examples=15, stateful_step_count=12, deadline=None, derandomize=True,
                    suppress_health_check=list(HealthCheck))


class Echo:
    """The reference as an adapter: each answer is the reference's (JSON), changed by ``lie`` when given."""

    def __init__(self, component: str, lie: Optional[Callable[[dict[str, Any]], dict[str, Any]]] = None) -> None:
        self.component, self.lie = component, lie

    def reset(self, initial: Mapping[str, Any]) -> None:
        self.position = oracle.start(initial, self.component)

    def step(self, input: Mapping[str, Any]) -> Mapping[str, Any]:
        from kraftspec.harness.adapter import KafkaRefused

        component = components()[self.component]
        step = step_from_json(component, {"input": dict(input)})
        try:
            state, clock, response, written = REPLAYERS[self.component].apply(
                self.position.state, self.position.clock, step)
        except (RuntimeError, ValueError, KeyError) as exc:
            raise KafkaRefused(type(exc).__name__, str(exc)) from None
        self.position = oracle.Position(self.component, state, clock)
        answer: dict[str, Any] = {"records": [component.encode_record(o, r) for o, r in written]}
        if response is not None:
            answer["response"] = response
        return self.lie(answer) if self.lie else answer


def _run(machine: type[RuleBasedStateMachine], examples: int = 15, shrink: bool = True) -> None:
    phases = list(Phase) if shrink else [Phase.explicit, Phase.reuse, Phase.generate]
    run_state_machine_as_test(machine, settings=settings(SETTINGS, max_examples=examples, phases=phases))


def _granting_nothing(answer: dict[str, Any]) -> dict[str, Any]:
    for sent in answer.get("response", {}).get("sends", []):
        if sent["type"] == "VoteResponse":
            sent["vote_granted"] = False
    return answer


def _votes_only(answer: dict[str, Any]) -> dict[str, Any]:
    sends = answer.get("response", {}).get("sends")
    if sends is not None:
        answer["response"]["sends"] = [sent for sent in sends if sent["type"] == "VoteResponse"]
    return answer


def test_every_component_has_a_machine_in_the_public_api() -> None:
    machines = {name for name in oracle.__all__ if name.endswith("_machine")}
    assert machines == {f"{component}_machine" for component in components()}


def test_the_raft_machine_with_the_reference_as_implementation_finds_nothing() -> None:
    _run(oracle.raft_machine(lambda: Echo("raft"), actions=RAFT_ACTIONS))
    _run(oracle.raft_machine(lambda: Echo("raft"), initial={"standard": "raft/leader"}))


def test_the_raft_machine_catches_a_voter_that_never_grants() -> None:
    with pytest.raises(oracle.DivergenceError, match="vote_granted: expected true, observed false"):
        _run(oracle.raft_machine(lambda: Echo("raft", _granting_nothing), actions=("vote_request", "tick")))


def test_a_raft_view_compares_only_the_listed_messages() -> None:
    _run(oracle.raft_machine(lambda: Echo("raft", _votes_only), view={"sends": ["VoteResponse"]}))
    with pytest.raises(oracle.DivergenceError, match=r"response.sends\[\d\]: expected \{\"destination\""):
        _run(oracle.raft_machine(lambda: Echo("raft", _votes_only)))


def test_a_send_outside_the_view_is_refused() -> None:
    machine = oracle.raft_machine(lambda: Echo("raft"), actions=("tick",), view={"sends": ["VoteResponse"]})
    with pytest.raises(oracle.TraceError, match=r"outside the trace's view \(view.sends: VoteResponse\)"):
        _run(machine)


def test_the_raft_machine_refuses_unknown_actions() -> None:
    with pytest.raises(ValueError, match="unknown raft action"):
        oracle.raft_machine(Echo, actions=("vote_request", "teleport"))


def test_the_partition_machine_with_the_reference_as_implementation_finds_nothing_and_a_lie_is_caught() -> None:
    _run(oracle.partition_machine(lambda: Echo("partition")), examples=4)

    def dropping_records(answer: dict[str, Any]) -> dict[str, Any]:
        return {**answer, "records": []}

    with pytest.raises(oracle.DivergenceError, match=r"records\[0\]: expected \{"):
        _run(oracle.partition_machine(lambda: Echo("partition", dropping_records)), examples=4, shrink=False)


def test_the_controller_machine_with_the_reference_as_implementation_finds_nothing_and_a_lie_is_caught() -> None:
    from kraftspec.differential_controller import ControllerDivergence

    _run(oracle.controller_machine(lambda: Echo("controller")), examples=3)

    def dropping_records(answer: dict[str, Any]) -> dict[str, Any]:
        return {**answer, "records": []}

    with pytest.raises(ControllerDivergence, match=r"records\[0\]: expected \{"):
        _run(oracle.controller_machine(lambda: Echo("controller", dropping_records)), examples=4, shrink=False)
