"""The worked examples (``examples/differential_*``): differential testing finds each planted bug, and only it."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import Phase, settings
from hypothesis.stateful import run_state_machine_as_test

from kraftspec import oracle

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "differential_broker" / "differential_test.py"


def load_example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("differential_broker_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_differential_test_finds_the_planted_bug_and_prints_a_shrunk_sequence() -> None:
    example = load_example()
    found = example.find_the_planted_bug()
    sequence = example.shrunk_sequence(found)
    calls = [line for line in sequence.splitlines() if line.startswith("state.") and "teardown" not in line]
    assert calls[-1].startswith("state.heartbeat(") and "behind=0" in calls[-1], sequence
    assert any(call.startswith("state.register_broker(") for call in calls), sequence
    assert len(calls) <= 3, sequence
    report = str(found)
    assert "DIVERGES" in report and "response.is_caught_up: expected true, observed false" in report
    assert "rule: kraftspec.reference.broker.heartbeat" in report
    assert not example.TinyController(planted_bug=False).planted_bug


def test_the_fixed_implementation_agrees_with_the_reference() -> None:
    example = load_example()
    run_state_machine_as_test(example.Fixed, settings=settings(example.SETTINGS, max_examples=60))


RAFT_EXAMPLE = EXAMPLE.parents[1] / "differential_raft" / "differential_raft_test.py"


def test_the_raft_example_finds_its_planted_bug_through_a_partial_view() -> None:
    spec = importlib.util.spec_from_file_location("differential_raft_example", RAFT_EXAMPLE)
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    report = str(example.find_the_planted_bug())
    assert "response.sends[0].vote_granted: expected false, observed true" in report
    assert "raft_rules.is_log_up_to_date(" in report and "-> false" in report
    run_state_machine_as_test(example.Fixed, settings=settings(example.SETTINGS, max_examples=60))


def load(folder: str, name: str) -> ModuleType:
    """An example's differential test module (``examples/FOLDER/NAME.py``; the folders are not packages)."""
    spec = importlib.util.spec_from_file_location(f"{folder}_example", EXAMPLE.parents[1] / folder / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_partition_example_finds_a_fenced_isr_member_accepted_and_reports_the_seed(
        capsys: pytest.CaptureFixture[str]) -> None:
    example = load("differential_partition", "differential_partition_test")
    report = str(example.find_the_planted_bug())
    assert f"seed={example.SEED}" in capsys.readouterr().out
    assert 'response.topics[0].partitions[0].error_code: expected "INELIGIBLE_REPLICA", observed "NONE"' in report
    assert re.search(r"partition_rules\.is_isr_member_eligible\((fenced=true|.*in_controlled_shutdown=true).*-> false",
                     report), report
    assert '"component":"partition"' in report and '"post":{"partitions":' in report  # the trace to replay


def test_the_fixed_partition_example_agrees_with_the_reference(capsys: pytest.CaptureFixture[str]) -> None:
    example = load("differential_partition", "differential_partition_test")
    example.run(example.Fixed, max_examples=60)
    assert f"seed={example.SEED} max_examples=60" in capsys.readouterr().out


def test_the_controller_example_finds_the_checks_out_of_order_and_reports_the_seed(
        capsys: pytest.CaptureFixture[str]) -> None:
    example = load("differential_controller", "differential_controller_test")
    found = example.find_the_planted_bug()
    assert f"seed={example.SEED}" in capsys.readouterr().out
    report = str(found)
    assert 'response.error: expected "NOT_CONTROLLER", observed "UNSUPPORTED_VERSION"' in report
    assert re.search(r"DIVERGES at step \d+ of \d+: register_controller\n  input: \{.*\"active\":false\}\n", report)
    assert "metadata.version 14" in report


def test_the_fixed_controller_example_agrees_with_the_reference(capsys: pytest.CaptureFixture[str]) -> None:
    example = load("differential_controller", "differential_controller_test")
    example.run(example.Fixed, max_examples=60)
    assert f"seed={example.SEED} max_examples=60" in capsys.readouterr().out


def test_the_controller_machine_generates_only_the_actions_given() -> None:
    from kraftspec.differential_controller import controller_machine as build

    every_rule = {rule.function.__name__ for rule in build(object).setup_state().rules}
    assert every_rule == set(oracle.CONTROLLER_RULES)  # the oracle's map names every rule of the machine
    machine = oracle.controller_machine(object, actions=("describe_cluster", "check_request_serializable"))
    assert {rule.function.__name__ for rule in machine.setup_state().rules} == {
        "describe_cluster", "check_request_serializable"}
    with pytest.raises(ValueError, match="unknown controller action"):
        oracle.controller_machine(object, actions=("describe_cluster", "teleport"))


def test_an_implementation_refusing_what_the_reference_accepts_is_reported() -> None:
    example = load("differential_controller", "differential_controller_test")

    class RefusingEverything(example.TinyQuorumController):  # type: ignore[name-defined,misc]
        def step(self, input: Any) -> Any:
            raise oracle.Refused("not today")

    machine = oracle.controller_machine(RefusingEverything, initial=example.initial_states(),
                                        actions=("register_controller",))
    with pytest.raises(AssertionError, match="the implementation refused .* \\(Refused: not today\\); the reference accepts it"):
        run_state_machine_as_test(machine, settings=settings(example.SETTINGS, max_examples=5, phases=[Phase.generate]))
