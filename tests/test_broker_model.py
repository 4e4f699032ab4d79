"""The broker lifecycle state machine (models/broker.py) and the public strategies."""

from __future__ import annotations

from hypothesis import given, settings

from kraftspec.models.broker import BrokerLifecycleMachine
from kraftspec.models.broker_strategies import reachable_clusters

TestBrokerLifecycle = BrokerLifecycleMachine.TestCase
TestBrokerLifecycle.settings = settings(max_examples=150, stateful_step_count=40, deadline=None)


@given(reachable_clusters())
def test_reachable_clusters_keep_leaders_active(state) -> None:  # type: ignore[no-untyped-def]
    for partition in state.partitions.values():
        if partition.leader != -1:
            assert state.brokers[partition.leader].is_active
