"""Each deliberately wrong variant of a KRaft rule is caught by every layer its ``caught_by`` names.

Layers: ``scenario`` (the checks of ``test_raft_scenarios.py`` re-run as functions: at least one fails),
``model`` (the quorum model with a fixed seed, derandomized, must fail), ``crosshair`` (the contract of the
same name in ``kraftspec.proofs.raft`` must fail under ``KRAFTSPEC_MUTANT``).
"""

from __future__ import annotations

import inspect
import os
import subprocess
import sys

import pytest

import test_raft_scenarios
from kraftspec.models.raft import run_model
from kraftspec.models.raft_mutants import MUTANTS
from kraftspec.mutants import ENV_VAR, Mutant

MODEL_SEED = 1
MODEL_BUDGET = {"max_examples": 1500, "steps": 80}  # a caught mutant stops at its first failure (seconds)
SCENARIO_CHECKS = [f for name, f in inspect.getmembers(test_raft_scenarios, inspect.isfunction)
                   if name.startswith("test_") and f.__module__ == test_raft_scenarios.__name__]
CROSSHAIR = [sys.executable, "-m", "crosshair", "check", "--analysis_kind=PEP316", "--per_condition_timeout=5"]


def failing_scenarios() -> list[str]:
    failed = []
    for check in SCENARIO_CHECKS:
        try:
            check()
        except Exception:  # noqa: BLE001 - any failure of the check counts
            failed.append(check.__name__)
    return failed


def test_every_layer_passes_without_mutants() -> None:
    assert failing_scenarios() == []


def test_mutant_names_are_unique_and_layers_known() -> None:
    assert len({m.name for m in MUTANTS}) == len(MUTANTS)
    for mutant in MUTANTS:
        assert set(mutant.caught_by) <= {"scenario", "model", "crosshair"}, mutant.name
        assert mutant.caught_by, mutant.name


@pytest.mark.parametrize("mutant", [m for m in MUTANTS if "scenario" in m.caught_by], ids=lambda m: m.name)
def test_scenarios_catch(mutant: Mutant) -> None:
    with mutant.applied():
        failed = failing_scenarios()
    assert failed, f"{mutant.name}: every scenario check still passes"


@pytest.mark.parametrize("mutant", [m for m in MUTANTS if "model" in m.caught_by], ids=lambda m: m.name)
def test_model_catches(mutant: Mutant) -> None:
    with mutant.applied():
        with pytest.raises(BaseException) as caught:
            run_model(MODEL_SEED, shrink=False, **MODEL_BUDGET)
    assert not isinstance(caught.value, (KeyboardInterrupt, SystemExit))


@pytest.mark.parametrize("mutant", [m for m in MUTANTS if "crosshair" in m.caught_by], ids=lambda m: m.name)
def test_crosshair_catches(mutant: Mutant) -> None:
    contract = mutant.target.split(":")[1]
    env = dict(os.environ, **{ENV_VAR: mutant.name})
    result = subprocess.run(CROSSHAIR + [f"kraftspec.proofs.raft.{contract}"], env=env, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode != 0, f"{mutant.name}: CrossHair found no counterexample\n{result.stdout}"
    assert "false" in result.stdout.lower() or "error" in result.stdout.lower(), result.stdout
