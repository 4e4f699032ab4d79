"""Each deliberately wrong dynamic-voter rule is caught by every layer its mutant names (models/raft_voters_mutants.py).

Layers: ``scenario`` (the transcribed ``VoterSetTest``, ``VoterSetHistoryTest`` and reconfig checks of
``test_raft_voters_scenarios.py`` re-run as functions: at least one fails), ``audit`` (the audit of the crafted
kraft.version 1 logs of ``test_metalog_voters.py``: a planted break goes unreported or the clean log is flagged),
``agree`` (the reference's state graph under ``spec/KRaftVoters.cfg`` or ``KRaftVoters.snapshots.cfg``, or for the
auto-join rules ``spec/KRaftAutoJoin.cfg``, differs from TLC's) and ``kafka`` (the seeded comparisons of
``test_kafka_voters.py`` with Kafka 4.3.1's own classes: one disagrees), ``client`` (the client-level
``KafkaRaftClientReconfigTest`` cases of ``test_raft_reconfig_client_scenarios.py`` and the snapshot fetches of
``test_raft_snapshot_fetch_scenarios.py``: at least one fails), ``replay`` (a ``--dynamic`` simulated raft trace
recorded under the mutant diverges when the reference replays it) and ``model`` (``RaftReconfigModel``'s seeded
simulated quorum under voter changes, or ``RaftUpgradeModel``'s kraft.version 0 quorum upgraded to 1, finds a
violation); ``crosshair`` (a contract of ``kraftspec.proofs.raft`` on the auto-join rules is refuted).
"""

from __future__ import annotations

import inspect
import tempfile
from pathlib import Path
from typing import Optional

import pytest

import test_kafka_voters
import test_metalog_voters
import test_raft_reconfig_client_scenarios
import test_raft_snapshot_fetch_scenarios
import test_raft_voters_scenarios
import test_traces_raft_dynamic
from kraftspec.models.raft_reconfig import RaftReconfigModel
from kraftspec.models.raft_upgrade import RaftUpgradeModel
from kraftspec.models.raft_voters_mutants import MUTANTS
from kraftspec.traces.metalog.audit import audit_paths
from mutant_layers import agreement_difference, crosshair_refutations, model_failure, scenario_failures

LAYERS = ("scenario", "client", "audit", "replay", "model", "agree", "crosshair", "kafka")  # the cheapest first
CASES = [pytest.param(mutant, layer, id=f"{mutant.name}-{layer}",
                      marks=() if layer == min(mutant.caught_by, key=LAYERS.index) else pytest.mark.exhaustive)
         for mutant in MUTANTS for layer in mutant.caught_by]
"""As ``mutant_layers.mutant_cases``: each mutant's cheapest layer by default, the others under ``-m exhaustive``."""


def audit_misses() -> Optional[str]:
    """What the audit gets wrong on the crafted logs (None: every break reported at its step, the clean log clean)."""
    with tempfile.TemporaryDirectory() as tmp:
        clean, _ = test_metalog_voters.audited(Path(tmp) / "clean")
        if not clean.ok:
            return f"the clean log is flagged: {clean.violations[0]}"
        for index, (name, edits, rule, where) in enumerate(test_metalog_voters.VOTER_BREAKS):
            report, at = test_metalog_voters.audited(Path(tmp) / str(index), edits)
            if (rule, at[where]) not in {(v.rule, v.offset) for v in report.violations}:
                return f"{name}: no {rule} at offset {at[where]}"
    return None


def kafka_disagreement() -> Optional[str]:
    """The first seeded comparison with Kafka's classes that fails (None: the reference agrees throughout)."""
    for test in (test_kafka_voters.test_voter_set_operations_agree_with_kafka,
                 test_kafka_voters.test_voter_set_history_agrees_with_kafka):
        for seed in test_kafka_voters.SEEDS:
            try:
                test(seed)
            except AssertionError as exc:
                return str(exc).splitlines()[0]
    return None


def layer_result(layer: str, agree_component: str = "") -> Optional[str]:
    """What ``layer`` reports against the currently applied mutant (None = it did not catch it); ``agree`` runs
    ``agree_component``'s agreement when the mutant names one (``Mutant.agree_component``)."""
    if layer == "scenario":
        failed = scenario_failures(test_raft_voters_scenarios)
        return f"{len(failed)} scenario(s) fail, e.g. {failed[0]}" if failed else None
    if layer == "client":
        failed = scenario_failures(test_raft_reconfig_client_scenarios) + scenario_failures(
            test_raft_snapshot_fetch_scenarios)
        return f"{len(failed)} client scenario(s) fail, e.g. {failed[0]}" if failed else None
    if layer == "model":
        return model_failure(RaftReconfigModel) or model_failure(RaftUpgradeModel)
    if layer == "audit":
        return audit_misses()
    if layer == "agree" and agree_component:
        return agreement_difference(agree_component)
    if layer == "agree":  # KRaftVoters.cfg, then KRaftVoters.snapshots.cfg
        return agreement_difference("voters") or agreement_difference("voters", "snapshots")
    if layer == "crosshair":
        refuted = crosshair_refutations("raft")
        return refuted[0] if refuted else None
    if layer == "kafka":
        return kafka_disagreement()
    raise ValueError(f"unknown layer {layer!r}")


def test_mutant_names_are_unique_and_layers_known() -> None:
    assert len({m.name for m in MUTANTS}) == len(MUTANTS)
    for mutant in MUTANTS:
        assert len(mutant.caught_by) >= 2 and set(mutant.caught_by) <= set(LAYERS), mutant.name
    assert "tmp_path" not in inspect.signature(test_kafka_voters.test_voter_set_history_agrees_with_kafka).parameters


@pytest.mark.parametrize("layer", ("scenario", "client", "audit", "model", "agree"))
def test_the_correct_rules_pass_every_layer(layer: str) -> None:
    assert layer_result(layer) is None, layer


@pytest.mark.parametrize("mutant,layer", CASES)
def test_mutant_is_caught(mutant, layer) -> None:  # type: ignore[no-untyped-def]
    if layer == "replay":  # recorded under the mutant, replayed by the correct reference
        caught = test_traces_raft_dynamic.replay_divergence(mutant)
        assert caught is not None, f"replay did not catch {mutant.name}: {mutant.description}"
        return
    with mutant.applied():
        caught = layer_result(layer, mutant.agree_component)
    assert caught is not None, f"{layer} did not catch {mutant.name}: {mutant.description}"
    print(f"{mutant.name}: caught by {layer}: {caught}")
