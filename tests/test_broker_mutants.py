"""Each deliberately wrong broker rule is caught by every layer its mutant names (models/broker_mutants.py)."""

from __future__ import annotations

from typing import Optional

import pytest

import test_broker_scenarios
import test_feature_scenarios
from kraftspec.models.broker import BrokerLifecycleMachine
from kraftspec.models.broker_mutants import MUTANTS
from mutant_layers import layer_result, mutant_cases

CASES = mutant_cases(MUTANTS)


def broker_layer_result(layer: str, spec: str = "broker") -> Optional[str]:
    """``layer_result`` for the broker component, whose scenarios are the lifecycle's and the features' (§1.11), and
    whose ``agree`` layer is ``spec``'s agreement (``features`` for a ``feature_control`` rule)."""
    caught = layer_result(layer, spec if layer == "agree" else "broker", test_broker_scenarios, BrokerLifecycleMachine)
    if caught is None and layer == "scenario":
        caught = layer_result(layer, "broker", test_feature_scenarios, BrokerLifecycleMachine)
    return caught


def test_the_correct_rules_pass_every_layer_that_checks_mutants() -> None:
    for layer in ("scenario", "model", "crosshair"):
        assert broker_layer_result(layer) is None, layer


@pytest.mark.parametrize("mutant,layer", CASES)
def test_mutant_is_caught(mutant, layer) -> None:  # type: ignore[no-untyped-def]
    with mutant.applied():
        caught = broker_layer_result(layer, "features" if ".feature_control:" in mutant.target else "broker")
    assert caught is not None, f"{layer} did not catch {mutant.name}: {mutant.description}"
    print(f"{mutant.name}: caught by {layer}: {caught}")
