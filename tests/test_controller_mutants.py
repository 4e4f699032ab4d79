"""Each deliberately wrong controller rule is caught by every layer its mutant names
(models/controller_mutants.py): the section J scenarios re-run as functions, the Hypothesis model under a
fixed seed, and CrossHair on ``kraftspec.proofs.controller``."""

from __future__ import annotations

import pytest

import test_controller_scenarios
from kraftspec.models.controller import ControllerRegistrationMachine
from kraftspec.models.controller_mutants import MUTANTS
from mutant_layers import layer_result, mutant_cases

CASES = mutant_cases(MUTANTS)


def test_the_issue_mutants_exist() -> None:
    assert {m.name for m in MUTANTS} >= {
        "controller-stale-incarnation-accepted", "controller-fenced-brokers-to-v1",
        "controller-state-column-for-controllers", "controller-both-bootstrap-settings",
        "controller-rack-column-only-with-racks"}


def test_the_correct_rules_pass_every_layer_that_checks_mutants() -> None:
    for layer in ("scenario", "model", "crosshair"):
        assert layer_result(layer, "controller", test_controller_scenarios, ControllerRegistrationMachine) is None, layer


@pytest.mark.parametrize("mutant,layer", CASES)
def test_mutant_is_caught(mutant, layer) -> None:  # type: ignore[no-untyped-def]
    with mutant.applied():
        caught = layer_result(layer, "controller", test_controller_scenarios, ControllerRegistrationMachine)
    assert caught is not None, f"{layer} did not catch {mutant.name}: {mutant.description}"
    print(f"{mutant.name}: caught by {layer}: {caught}")
