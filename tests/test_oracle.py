"""``kraftspec.oracle``: replay and single-step checks from Python, the differential driver, the fast path's verdicts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

import pytest
from hypothesis import settings
from hypothesis.stateful import run_state_machine_as_test

from kraftspec import oracle, traces
from kraftspec.traces.replay import broker as broker_replay
from kraftspec.traces.format import jsonl
from kraftspec.traces.format import parquet
from kraftspec.traces.format.broker import BROKER
from kraftspec.traces.format.envelope import Step, Trace, trace_to_json
from kraftspec.traces.replay.verdict import replay_steps, step_diffs
from kraftspec.traces.recording.broker_simulate import generate_sim
from support_perturb import judged

BUNDLED = Path(traces.__file__).parent / "tla" / "broker.jsonl.gz"
HEARTBEAT = {"action": "heartbeat", "now": 1, "request": {
    "broker_id": 1, "broker_epoch": 0, "current_metadata_offset": 8, "want_fence": False, "want_shut_down": False}}


def trace_of(*steps: Mapping[str, Any]) -> dict[str, Any]:
    return {"format": "1.0", "component": "broker", "id": "t", "initial": {"standard": "broker/running-cluster"},
            "steps": list(steps)}


def test_replay_takes_a_trace_its_json_object_or_a_json_line() -> None:
    obj = trace_of({"input": HEARTBEAT, "output": {"response": {"error": "NONE", "is_fenced": False}}})
    assert oracle.replay(obj).conformant
    assert oracle.replay(json.dumps(obj)).conformant
    assert oracle.replay(jsonl.parse_line(json.dumps(obj).encode())).conformant
    wrong = trace_of({"input": HEARTBEAT, "output": {"response": {"error": "NONE", "is_fenced": True}}})
    verdict = oracle.replay(wrong)
    assert verdict.divergence is not None and verdict.divergence.step == 0
    assert "response.is_fenced: expected false, observed true" in oracle.describe(verdict)
    with pytest.raises(AssertionError, match="trace t DIVERGES at step 0 of 1: heartbeat"):
        oracle.assert_conformant(wrong)
    with pytest.raises(oracle.TraceError, match="unknown action 'teleport'"):
        oracle.replay(trace_of({"input": {"action": "teleport"}}))


def test_read_names_lines_and_rows(tmp_path: Path) -> None:
    batch = list(generate_sim(seed=3, traces=2, steps=5))
    jsonl.write_jsonl(tmp_path / "a.jsonl", batch)
    parquet.write_parquet(tmp_path / "a.parquet", batch)
    assert [where for where, _ in oracle.read(tmp_path / "a.jsonl")] == ["line 1", "line 2"]
    assert [where for where, _ in oracle.read(tmp_path / "a.parquet")] == ["row 0", "row 1"]
    assert all(isinstance(item, Trace) for _, item in oracle.read(tmp_path / "a.parquet"))


def test_walking_a_trace_step_by_step_agrees_with_replay() -> None:
    for _, trace in list(jsonl.read_jsonl(BUNDLED))[:50]:
        assert isinstance(trace, Trace)
        position = oracle.start(dict(trace_to_json(trace)["initial"]))
        for step in trace.steps:
            checked = oracle.check_step(position, step)
            assert checked.conformant, checked.diffs
            assert checked.after is not None
            position = checked.after


def test_check_step_gives_the_differences_and_the_reference_post_state() -> None:
    position = oracle.start("broker/running-cluster")
    checked = oracle.check_step(position, {"input": HEARTBEAT, "output": {"response": {"is_caught_up": False}},
                                           "post": {"clock": 1}})
    assert [str(d) for d in checked.diffs] == ["response.is_caught_up: expected true, observed false"]
    assert checked.after is not None and checked.after.clock == 1
    verdict = checked.verdict()
    assert verdict.divergence is not None and verdict.divergence.rule == "kraftspec.reference.broker.heartbeat"
    refused = oracle.check_step(position, {"input": {"action": "log_advanced", "next_offset": 2}})
    assert refused.after is None
    assert [d.path for d in refused.diffs] == ["input"] and "cannot go back" in refused.diffs[0].expected


def test_the_fast_path_and_the_full_diff_agree_on_every_simulated_step() -> None:
    """Each step's fast comparison says 'same' exactly when the field-level diff is empty (mutated outputs too)."""
    batch = list(generate_sim(seed=11, traces=20, steps=60, mutant="broker-unfence-before-caught-up"))
    for trace in batch:
        state, clock = broker_replay.initial(trace), 0
        for step in trace.steps:
            after, after_clock, response, written = broker_replay.run(state, clock, step)
            slow = step_diffs("broker", step, after, after_clock, response, written)
            verdict = replay_steps(Trace("broker", (step,)), state, clock)
            assert verdict.conformant == (not slow)
            state, clock = after, after_clock


@pytest.mark.parametrize("stated, conformant", [
    ({"fenced": 1, "epoch": 0, "incarnation_id": "incarnation-1-1", "in_controlled_shutdown": False}, False),
    ({"fenced": False, "epoch": 0.0, "incarnation_id": "incarnation-1-1", "in_controlled_shutdown": False}, False),
    ({"fenced": False, "epoch": 0, "incarnation_id": "incarnation-1-1", "in_controlled_shutdown": False}, True),
])
def test_json_types_are_compared_exactly(stated: dict[str, Any], conformant: bool) -> None:
    """True and 1 (and 0 and 0.0) differ in a stated post-state, as in JSON."""
    brokers = broker_replay.observe(oracle.start().state, 1, ["brokers"])["brokers"]
    post = {"brokers": {**brokers, "1": stated}}
    assert oracle.replay(trace_of({"input": HEARTBEAT, "post": post})).conformant is conformant
    response = {"error": "NONE", "is_fenced": 0}
    assert not oracle.replay(trace_of({"input": HEARTBEAT, "output": {"response": response}})).conformant
    assert oracle.replay(trace_of({"input": HEARTBEAT, "output": {"response": {"error": 0}}})).conformant


class Recorder:
    """An adapter that answers with the reference's own outputs, optionally lying about one field."""

    def __init__(self, lie: bool = False) -> None:
        self.lie, self.inputs = lie, []

    def reset(self, initial: Mapping[str, Any]) -> None:
        self.position = oracle.start(initial)

    def step(self, input: Mapping[str, Any]) -> Mapping[str, Any]:
        self.inputs.append(dict(input))
        step = oracle.check_step(self.position, {"input": dict(input)}).step
        state, clock, response, written = broker_replay.apply(self.position.state, self.position.clock, step)
        self.position = oracle.Position("broker", state, clock)
        if self.lie and input["action"] == "heartbeat" and response and response["error"] == "NONE":
            response = {**response, "is_caught_up": not response["is_caught_up"]}
        return {"response": response, "records": [BROKER.encode_record(o, r) for o, r in written]}


def test_differential_accepts_an_honest_adapter_and_replays_its_trace() -> None:
    differential = oracle.Differential(Recorder())
    request = dict(HEARTBEAT["request"], broker_id=2)
    assert differential.step({"action": "register_broker", "request": {
        "broker_id": 2, "cluster_id": "kraftspecDifferentialAA", "incarnation_id": "i",
        "features": [{"name": "metadata.version", "min_supported": 7, "max_supported": 30}],
        "log_dirs": ["ISEhISEhISEhISEhISEhIQ"]}}) is not None
    assert differential.step({"action": "heartbeat", "request": request}) is not None
    assert oracle.replay(differential.trace()).conformant


def test_differential_reports_a_lie_with_a_replayable_trace() -> None:
    machine = oracle.broker_machine(lambda: Recorder(lie=True), actions=("register_broker", "heartbeat"))
    with pytest.raises(oracle.DivergenceError) as raised:
        run_state_machine_as_test(machine, settings=settings(max_examples=50, derandomize=True, deadline=None))
    assert "response.is_caught_up" in str(raised.value)
    assert not oracle.replay(raised.value.trace).conformant


def test_broker_machine_refuses_unknown_actions() -> None:
    with pytest.raises(ValueError, match="unknown broker action"):
        oracle.broker_machine(Recorder, actions=("heartbeat", "teleport"))


def _perturbations(value: Any) -> list[Any]:
    """Values close to ``value`` that JSON tells apart from it (and ``value`` itself)."""
    found: list[Any] = [value]
    if isinstance(value, bool):
        found += [not value, int(value)]
    elif isinstance(value, int):
        found += [value + 1, float(value), bool(value)]
    elif isinstance(value, list):
        found += [value[:-1], value + [0], [*map(float, value)] if value and all(type(v) is int for v in value) else []]
    elif isinstance(value, dict):
        for key in list(value)[:3]:
            found += [{**value, key: other} for other in _perturbations(value[key])[1:]]
        found += [{k: v for k, v in list(value.items())[1:]}, {**value, "extra": 1}]
    return found


def test_the_fast_path_agrees_with_the_full_diff_on_perturbed_outputs() -> None:
    """Every stated response and post-state field of simulated steps, perturbed: both paths judge alike."""
    checked = 0
    for trace in generate_sim(seed=5, traces=6, steps=40):
        state, clock = broker_replay.initial(trace), 0
        for step in trace.steps:
            after, after_clock, response, written = broker_replay.run(state, clock, step)
            variants = [Step(step.action, step.input, r, step.records, step.post)
                        for r in _perturbations(dict(step.response or {}))]
            variants += [Step(step.action, step.input, step.response, step.records, p)
                         for p in _perturbations(dict(step.post or {}))]
            for variant in variants:
                slow = judged(lambda: not step_diffs("broker", variant, after, after_clock, response, written))
                fast = judged(lambda: replay_steps(Trace("broker", (variant,)), state, clock).conformant)
                assert fast == slow, variant
                checked += 1
            state, clock = after, after_clock
    assert checked > 1000
