"""Each deliberately wrong snapshot rule is caught by every layer its mutant names (models/raft_snapshot_mutants.py).

Layers: ``scenario`` (the transcribed ``KafkaRaftClientSnapshotTest`` checks of ``test_raft_snapshot_scenarios.py``
and the batch scenarios of ``test_raft_batches.py`` re-run as functions: at least one fails), ``model`` (the quorum model with snapshots,
``kraftspec.models.raft.RaftSnapshotModel``, derandomized, must fail), ``replay`` (simulated traces with snapshots recorded under the mutant: the
reference flags one at the step the mutant shows), ``crosshair`` (a contract of ``kraftspec.proofs.raft`` is
refuted) and ``kafka`` (that trace, or a batch mutant's hand-built trace (:data:`HAND_BUILT`), run on Kafka 4.3.1's
own ``KafkaRaftClient``: with the mutant applied, the reference no longer replays Kafka's outputs).
"""

from __future__ import annotations

from typing import Optional

import pytest

import test_kafka_raft_batches
import test_raft_batches
import test_raft_snapshot_scenarios
from kraftspec.harness import conform
from kraftspec.harness.jvm import DEFAULT_VERSION, shared
from kraftspec.models.raft import RaftSnapshotModel
from kraftspec.models.raft_snapshot_mutants import MUTANTS
from kraftspec.traces.recording.raft_simulate import simulate_one
from kraftspec.traces.replay.verdict import replay
from mutant_layers import crosshair_refutations, model_failure, scenario_failures

LAYERS = ("scenario", "model", "replay", "crosshair", "kafka")  # the cheapest first
CASES = [pytest.param(mutant, layer, id=f"{mutant.name}-{layer}",
                      marks=() if layer == min(mutant.caught_by, key=LAYERS.index) else pytest.mark.exhaustive)
         for mutant in MUTANTS for layer in mutant.caught_by]
"""As ``mutant_layers.mutant_cases``: each mutant's cheapest layer by default, the others under ``-m exhaustive``."""
SEED, STEPS = 1, 100
SHOWN = {"raft_snapshot_fetch_below_log_start": (12, 89, "kraftspec.reference.raft._handle_fetch_request")}
"""Each mutant's simulated trace (index of seed 1, 100 steps, ``--snapshots``), the step it shows at and its rule."""
HAND_BUILT = {
    "raft_fetch_cuts_batches": lambda: test_kafka_raft_batches.trace(test_kafka_raft_batches.START_OF_EPOCH, 1),
    "raft_snapshot_inside_a_batch": lambda: test_kafka_raft_batches.trace(test_kafka_raft_batches.SNAPSHOT_AT_4),
}
"""The batch mutants' traces for the ``kafka`` layer (simulated appends write one record per batch)."""
MODEL_EXAMPLES, MODEL_STEPS = 300, 50
"""The snapshot model's budget (derandomized): the correct rules pass it, every mutant naming ``model`` fails it."""
MODEL_EXAMPLES_FOR = {"raft_snapshot_inside_a_batch": 1500}
"""A larger budget where the mutant needs a rarer path: a snapshot drawn just below a committed batch's end."""


def replay_miss(name: str) -> Optional[str]:
    """What the replay of the mutant's recorded trace reports (None: the reference finds nothing)."""
    index, _, _ = SHOWN[name]
    divergence = replay(simulate_one(SEED, index, STEPS, snapshots=True)).divergence
    return None if divergence is None else f"step {divergence.step}: {divergence.rule}"


def layer_result(layer: str, name: str) -> Optional[str]:
    """What ``layer`` reports against the currently applied mutant (None = it did not catch it)."""
    if layer == "scenario":
        failed = scenario_failures(test_raft_snapshot_scenarios) + scenario_failures(test_raft_batches)
        return f"{len(failed)} scenario(s) fail, e.g. {failed[0]}" if failed else None
    if layer == "model":
        return model_failure(RaftSnapshotModel, max_examples=MODEL_EXAMPLES_FOR.get(name, MODEL_EXAMPLES),
                             steps=MODEL_STEPS)
    if layer == "replay":
        return replay_miss(name)
    if layer == "crosshair":
        refuted = crosshair_refutations("raft")
        return refuted[0] if refuted else None
    if layer == "kafka":
        trace = HAND_BUILT[name]() if name in HAND_BUILT else simulate_one(SEED, SHOWN[name][0], STEPS,
                                                                            snapshots=True)
        result = conform.conform_trace(trace, shared(DEFAULT_VERSION))
        return None if result.outcome == "agree" else f"{result.outcome}: {result.kafka.divergence}"
    raise ValueError(f"unknown layer {layer!r}")


def test_mutant_names_are_unique_and_layers_known() -> None:
    assert len({m.name for m in MUTANTS}) == len(MUTANTS) and set(SHOWN) | set(HAND_BUILT) == {m.name for m in MUTANTS}
    for mutant in MUTANTS:
        assert len(mutant.caught_by) >= 2 and set(mutant.caught_by) <= set(LAYERS), mutant.name


def test_the_correct_rules_pass_the_scenarios_the_model_and_replay() -> None:
    assert layer_result("scenario", "") is None
    assert layer_result("model", "") is None
    for name in SHOWN:
        assert replay_miss(name) is None, name


@pytest.mark.parametrize("mutant,layer", CASES)
def test_mutant_is_caught(mutant, layer) -> None:  # type: ignore[no-untyped-def]
    if layer == "replay":  # recorded under the mutant, replayed by the correct reference
        index, step, rule = SHOWN[mutant.name]
        trace = simulate_one(SEED, index, STEPS, mutant.applied(), snapshots=True)
        divergence = replay(trace).divergence
        assert divergence is not None, f"trace {index} of seed {SEED} does not show {mutant.name}"
        assert (divergence.step, divergence.rule) == (step, rule)
        return
    with mutant.applied():
        caught = layer_result(layer, mutant.name)
    assert caught is not None, f"{layer} did not catch {mutant.name}: {mutant.description}"
    print(f"{mutant.name}: caught by {layer}: {caught}")
