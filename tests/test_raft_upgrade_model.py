"""The kraft.version 0 -> 1 upgrade under a simulated quorum (``models/raft_upgrade.py``), seeded and derandomized."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, seed, settings
from hypothesis.stateful import run_state_machine_as_test

from kraftspec.models.determinism import without_local_constants
from kraftspec.models.raft_upgrade import RaftUpgradeModel
from kraftspec.reference import raft, raft_node, raft_snapshot, raft_transitions, raft_voter_history


def run_upgrade_model(model_seed: int, max_examples: int = 100, steps: int = 50) -> None:
    """Run :class:`RaftUpgradeModel` with a fixed seed (printed), derandomized; a failure shows the shortest rules."""
    print(f"kraftspec raft upgrade model: seed={model_seed} max_examples={max_examples} steps={steps}")
    machine = seed(model_seed)(type(f"RaftUpgradeModelSeed{model_seed}", (RaftUpgradeModel,), {}))
    with without_local_constants():
        run_state_machine_as_test(machine, settings=settings(
            max_examples=max_examples, stateful_step_count=steps, derandomize=True, database=None, deadline=None,
            print_blob=True, report_multiple_bugs=False, suppress_health_check=list(HealthCheck),
            phases=tuple(Phase)))


@pytest.mark.parametrize("model_seed", [1, 2])
def test_upgrade_model_keeps_its_properties(model_seed: int) -> None:
    run_upgrade_model(model_seed)


def test_the_upgrade_model_reaches_upgrades_reads_and_truncations(monkeypatch: pytest.MonkeyPatch) -> None:
    """Seed 2 upgrades leaders, nodes with static voters read the upgrade they fetch or recover, and some truncate an
    uncommitted upgrade back to kraft.version 0: the invariants are exercised on these paths."""
    reached: Counter[str] = Counter()
    start, truncate = raft_node.start_control_records, raft_voter_history.truncate_control_records
    teardown = RaftUpgradeModel.teardown

    def counted_start(node: raft.RaftNode, *snapshot_records: Any) -> raft.RaftNode:
        reached["read by a follower" if node.state.role != "Leader" else "written by a leader"] += 1
        return start(node, *snapshot_records)

    def counted_truncate(state: raft_voter_history.ControlRecordState,
                         end_offset: int) -> raft_voter_history.ControlRecordState:
        after = truncate(state, end_offset)
        reached["truncated back to 0"] += (raft_voter_history.last_kraft_version(state) == 1
                                           and raft_voter_history.last_kraft_version(after) == 0)
        return after

    def counted_teardown(model: RaftUpgradeModel) -> None:
        reached["runs with an upgrade"] += model.upgrades > 0
        teardown(model)

    for caller in (raft, raft_snapshot, raft_transitions):  # each module that reads an upgrade's records
        monkeypatch.setattr(caller, "start_control_records", counted_start)
    monkeypatch.setattr(raft_voter_history, "truncate_control_records", counted_truncate)
    monkeypatch.setattr(RaftUpgradeModel, "teardown", counted_teardown)
    run_upgrade_model(2)
    assert len(reached) == 4 and min(reached.values()) > 0, reached
