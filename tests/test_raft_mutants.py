"""Each deliberately wrong KRaft quorum rule is caught by every layer its mutant names (models/raft_mutants.py).

Layers (``tests/mutant_layers.py``): ``scenario`` (the checks of ``test_raft_scenarios.py`` re-run as functions:
at least one fails), ``model`` (the quorum model, derandomized, must fail), ``crosshair`` (a contract of
``kraftspec.proofs.raft`` is refuted) and ``agree`` (the reference no longer agrees with ``KRaftQuorum.tla``).
"""

from __future__ import annotations

import pytest

import test_raft_scenarios
from kraftspec.models.raft import RaftQuorumModel
from kraftspec.models.raft_mutants import MUTANTS
from mutant_layers import layer_result, mutant_cases

CASES = mutant_cases(MUTANTS)
MODEL_STEPS = 150  # an election, a second epoch and a vote on unequal logs: the shorter-log vote needs long runs
MODEL_EXAMPLES = 600  # a leader's restart in its own epoch shows only once a follower has learnt a later high
# watermark: 300 derandomized runs stopped reaching it when the strategies' draw order changed (keyword builds)


def test_mutant_names_are_unique_and_layers_known() -> None:
    assert len({m.name for m in MUTANTS}) == len(MUTANTS)
    for mutant in MUTANTS:
        assert mutant.caught_by and set(mutant.caught_by) <= {"scenario", "model", "crosshair", "agree"}, mutant.name


def test_the_correct_rules_pass_every_layer_that_checks_mutants() -> None:
    for layer in ("scenario", "model", "crosshair", "agree"):
        assert layer_result(layer, "raft", test_raft_scenarios, RaftQuorumModel, model_steps=MODEL_STEPS,
                            model_examples=MODEL_EXAMPLES) is None, layer


@pytest.mark.parametrize("mutant,layer", CASES)
def test_mutant_is_caught(mutant, layer) -> None:  # type: ignore[no-untyped-def]
    with mutant.applied():
        caught = layer_result(layer, "raft", test_raft_scenarios, RaftQuorumModel, model_steps=MODEL_STEPS,
                              model_examples=MODEL_EXAMPLES, agree_component=mutant.agree_component)
    assert caught is not None, f"{layer} did not catch {mutant.name}: {mutant.description}"
    print(f"{mutant.name}: caught by {layer}: {caught}")
