"""The oracle against itself: simulated traces recorded under each broker mutant are flagged at the right step and rule.

A recorded trace must be conformant when replayed under the mutant it was recorded with (the
recording is exactly that implementation's behaviour); replayed through the reference it must
diverge, at a step where the mutant's target actually runs, and the rule named must be one of the
reference transitions that call the target (directly or through the helpers named below).
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from kraftspec.mutants import Mutant, all_mutants
from kraftspec.traces.replay import broker as broker_replay
from kraftspec.traces.replay.check import EXIT_FINDING, check_command
from kraftspec.traces.format.envelope import Trace
from kraftspec.traces.recording.generate import generate_command
from kraftspec.traces.format.jsonl import read_jsonl
from kraftspec.traces.replay.verdict import replay
from kraftspec.traces.recording.broker_simulate import generate_sim

BROKER_MUTANTS = sorted(name for name, m in all_mutants().items() if m.component == "broker")
# target -> the trace actions whose reference function calls it (kraftspec/reference/broker.py)
CALLERS = {
    "broker_rules:session_expired": {"fence_stale_broker",   # via expired_sessions
                                     "register_broker"},     # via has_valid_session (duplicate check)
    "broker_rules:is_caught_up": {"heartbeat"},              # calculate_next_broker_state and the reply
    "broker_rules:is_duplicate_registration": {"register_broker"},
    "broker:refreshed_sessions": {"heartbeat", "heartbeat_timed_out"},
    "broker_rules:shutdown_granted": {"heartbeat"},          # via next_control_state
    "broker:broker_fenced_records": {"heartbeat", "fence_stale_broker"},
    "broker:registered_heartbeats": {"heartbeat", "fence_stale_broker"},  # via replay of the broker records
    "feature_control:reason_not_supported": {"update_features"},  # the operator's UpdateFeatures (§1.11)
}
SEED, TRACES, STEPS = 20261122, 25, 60


def _spy(mutant: Mutant, calls: list[int]) -> Mutant:
    """A 'mutant' that runs the original target and counts its calls."""
    module_name, func_name = mutant.target.split(":")
    original = getattr(__import__(module_name, fromlist=[func_name]), func_name)

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return original(*args, **kwargs)

    return Mutant("spy", mutant.component, "counts calls", mutant.target, counting, ())


def _target_runs_at(trace: Trace, index: int, mutant: Mutant) -> bool:
    state, clock = broker_replay.initial(trace), 0
    for step in trace.steps[:index]:
        state, clock, _, _ = broker_replay.apply(state, clock, step)
    calls: list[int] = []
    with _spy(mutant, calls).applied():
        broker_replay.apply(state, clock, trace.steps[index])
    return bool(calls)


def test_every_broker_mutant_target_has_its_callers_listed() -> None:
    assert {all_mutants()[name].target.split("reference.")[1] for name in BROKER_MUTANTS} <= set(CALLERS)


@pytest.mark.parametrize("name", BROKER_MUTANTS)
def test_mutant_traces_are_flagged_at_the_right_step_with_the_right_rule(name: str) -> None:
    mutant = all_mutants()[name]
    callers = CALLERS[mutant.target.split("reference.")[1]]
    batch = list(generate_sim(SEED, TRACES, STEPS, mutant=name))
    assert all(t.meta["mutant"] == name and t.meta["seed"] == SEED for t in batch)
    assert all(replay(t, mutant.applied()).conformant for t in batch), "a recording must conform to its mutant"
    verdicts = [replay(t) for t in batch]
    flagged = [(t, v.divergence) for t, v in zip(batch, verdicts) if v.divergence is not None]
    assert flagged, f"no trace of {name} (seed {SEED}) was flagged"
    for trace, divergence in flagged:
        step = trace.steps[divergence.step]
        assert divergence.rule.rsplit(".", 1)[-1] in {broker_replay.ACTIONS[a].rule.rsplit(".", 1)[-1]
                                                      for a in callers}, (trace.id, divergence)
        assert step.action in callers
        assert _target_runs_at(trace, divergence.step, mutant), (trace.id, divergence.step)
        assert divergence.diffs


def test_unmutated_simulations_are_conformant() -> None:
    assert all(replay(t).conformant for t in generate_sim(SEED, 40, STEPS))


def test_generate_command_writes_flagged_traces_and_reports_the_seed(tmp_path: Path) -> None:
    out, stream = tmp_path / "m.jsonl", io.StringIO()
    assert generate_command("sim", str(out), 10, 3, 40, "broker-no-duplicate-check", stream) == 0
    assert "seed 3" in stream.getvalue() and "--mutant broker-no-duplicate-check" in stream.getvalue()
    assert [t.meta["index"] for _, t in read_jsonl(out)] == list(range(10))
    assert check_command([str(out)], False, io.StringIO()) == EXIT_FINDING
    refused = io.StringIO()
    assert generate_command("sim", str(tmp_path / "x.jsonl"), 1, 3, 5, "partition-elect-fenced-replica", refused) == 2
    assert "belongs to component 'partition'" in refused.getvalue() and not (tmp_path / "x.jsonl").exists()
