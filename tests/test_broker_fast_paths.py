"""A steady heartbeat (no change of control state) changes only its session and its heartbeat entry."""

from __future__ import annotations

from kraftspec.models.broker_strategies import BROKER_IDS, running_cluster
from kraftspec.reference import broker
from kraftspec.reference.frozen import evolve


def distinct_state() -> broker.ClusterControl:
    """A running cluster whose every field holds a value no other field holds (a swapped argument shows)."""
    state, _ = running_cluster()
    return evolve(state, session_timeout=7777, behaviour=broker.KAFKA_4_0, next_offset=state.next_offset + 1000)


def test_steady_heartbeat_equals_session_and_touch() -> None:
    state = distinct_state()
    for offset in (state.next_offset, state.next_offset + 1):  # the entry's offset unchanged, then changed
        for broker_id in BROKER_IDS:
            request = broker.BrokerHeartbeatRequest(broker_id=broker_id, broker_epoch=state.brokers[broker_id].epoch, current_metadata_offset=offset, want_fence=False, want_shut_down=False)
            after, out = broker.heartbeat(state, request, 42)
            assert out.records == () and out.response.is_fenced is False
            expected = evolve(state, sessions=broker.refreshed_sessions(state, broker_id, request.broker_epoch, 42),
                              heartbeats=broker.touched_heartbeats(state, broker_id, False, offset))
            assert after == expected
            state = after
