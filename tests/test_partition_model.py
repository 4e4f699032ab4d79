"""The partition state machine (models/partition.py) under a fixed seed, and its replayed races: every invariant holds."""

from __future__ import annotations

import pytest
from hypothesis import settings
from hypothesis.stateful import run_state_machine_as_test

from kraftspec.models.partition import RACES, PartitionMachine, replay


def test_partition_model_invariants_hold() -> None:
    run_state_machine_as_test(PartitionMachine, settings=settings(
        max_examples=300, stateful_step_count=60, derandomize=True, database=None, deadline=None))


@pytest.mark.parametrize("name", sorted(RACES))
def test_partition_model_races_hold(name: str) -> None:
    replay(RACES[name])
