"""The worked example (``examples/differential_broker``): differential testing finds the planted bug, and only it."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

from hypothesis import settings
from hypothesis.stateful import run_state_machine_as_test

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
