"""Each deliberately wrong partition rule is caught by every layer its mutant names (models/partition_mutants.py).

The scenario layer re-runs tests/test_partition_scenarios.py and tests/test_partition_leader.py as plain
functions; the model layer runs models/partition.py derandomized; the CrossHair layer analyses the
contracts of proofs/partition.py that state the mutated rule (the whole module is ``kraftspec prove
partition``; its elect_leader contract alone needs minutes); the agree layer compares the reference with
TLC's graph of spec/PartitionLeadership.tla (needs Java, as the other components' agree layers do); the kafka
layer runs the differential machine (kraftspec.differential_partition) against Apache Kafka's own controller code
(the harness JVM), derandomized and unshrunk, and reports its first disagreement.
"""

from __future__ import annotations

import types
from typing import Optional

import pytest

import test_partition_leader
import test_partition_scenarios
from kraftspec.models.partition import RACES, PartitionMachine, replay
from kraftspec.models.partition_mutants import MUTANTS
from kraftspec.proofs import partition as proofs
from kraftspec.prove import check_contract
from hypothesis import Phase, settings
from hypothesis.stateful import run_state_machine_as_test
from mutant_layers import agreement_difference, mutant_cases, scenario_failures

CONTRACTS = {
    "kraftspec.reference.partition_rules:is_acceptable_leader": (proofs.is_acceptable_leader,),
    "kraftspec.reference.partition_rules:alter_partition_epoch_error": (proofs.alter_partition_epoch_error,),
    "kraftspec.reference.partition_rules:is_hw_candidate": (proofs.is_hw_candidate,),
    "kraftspec.reference.partition_rules:isr_shrink_requires_leader_epoch_bump": (proofs.isr_shrink_requires_leader_epoch_bump,),
    "kraftspec.reference.partition_rules:isr_record_field": (proofs.isr_record_field,),
    "kraftspec.reference.partition_rules:is_isr_member_eligible": (proofs.is_isr_member_eligible,),
}
CASES = mutant_cases(MUTANTS)


def model_failure() -> Optional[str]:
    """The model's first failure: a replayed race, else the random search under a fixed seed, unshrunk
    (shrinking adds minutes, not evidence)."""
    for name, trace in RACES.items():
        try:
            replay(trace)
        except AssertionError as exc:
            return f"race {name}: {exc}".splitlines()[0]
    try:
        run_state_machine_as_test(PartitionMachine, settings=settings(
            max_examples=300, stateful_step_count=60, derandomize=True, database=None, deadline=None,
            print_blob=False, phases=(Phase.explicit, Phase.generate)))
    except Exception as exc:  # the model's invariant or rule assertion
        return f"{type(exc).__name__}: {exc}".splitlines()[0]
    return None


def kafka_failure() -> Optional[str]:
    """The first disagreement of a derandomized differential run against Kafka, unshrunk (None if it agrees)."""
    from kraftspec.differential_partition import ACTIONS, LEADER_FOCUS, run_differential
    from kraftspec.harness.adapter import KafkaAdapter, KafkaRefused
    from kraftspec.oracle import DivergenceError

    adapter = KafkaAdapter("partition")
    for actions, examples in ((ACTIONS, 300), (LEADER_FOCUS, 200)):  # every input, then the leader's
        try:
            run_differential(lambda: adapter, 20261126, max_examples=examples, steps=40, shrink=False, actions=actions)
        except (DivergenceError, KafkaRefused) as exc:
            return f"{type(exc).__name__}: {exc}".splitlines()[0]
    return None


def layer_result(layer: str, target: str) -> Optional[str]:
    """What ``layer`` reports against the currently applied mutant of ``target`` (None = not caught)."""
    if layer == "scenario":
        failed = scenario_failures(test_partition_scenarios) + scenario_failures(test_partition_leader)
        return f"{len(failed)} scenario(s) fail, e.g. {failed[0]}" if failed else None
    if layer == "model":
        return model_failure()
    if layer == "crosshair":
        results = [check_contract("partition", contract, 5.0) for contract in CONTRACTS[target]]
        refuted = [r.line() for r in results if r.verdict == "refuted"]
        return refuted[0] if refuted else None
    if layer == "agree":
        return agreement_difference("partition")
    if layer == "kafka":
        return kafka_failure()
    raise ValueError(f"unknown layer {layer!r}")


def test_every_mutant_names_its_contracts() -> None:
    assert {m.target for m in MUTANTS if "crosshair" in m.caught_by} == set(CONTRACTS)
    assert all(isinstance(c, types.FunctionType) for cs in CONTRACTS.values() for c in cs)


def test_the_correct_rules_pass_every_layer_that_checks_mutants() -> None:
    assert layer_result("scenario", "") is None
    for target in CONTRACTS:
        assert layer_result("crosshair", target) is None, target
    assert layer_result("agree", "") is None
    assert layer_result("kafka", "") is None
    # The model layer's baseline is tests/test_partition_model.py (same machine, same settings).


@pytest.mark.parametrize("mutant,layer", CASES)
def test_mutant_is_caught(mutant, layer) -> None:  # type: ignore[no-untyped-def]
    with mutant.applied():
        caught = layer_result(layer, mutant.target)
    assert caught is not None, f"{layer} did not catch {mutant.name}: {mutant.description}"
    print(f"{mutant.name}: caught by {layer}: {caught}")
