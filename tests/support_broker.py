"""Builders for broker-lifecycle tests, after Kafka's ``ReplicationControlTestContext`` (broker N gets epoch 100 + N)."""

from __future__ import annotations

import base64
from typing import Optional

from kraftspec.reference import broker
from kraftspec.reference.errors import Errors
from kraftspec.reference.metadata_version import LATEST_PRODUCTION, MINIMUM_4X
from kraftspec.reference.partition import TopicInfo
from kraftspec.reference.records import FeatureRange

CLUSTER = "kraftspecTestClusterIdA"


def directory(broker_id: int) -> str:
    """A non-reserved directory id owned by ``broker_id`` (Kafka's tests use TESTBROKER0000NDIRAAAA)."""
    return base64.urlsafe_b64encode(f"TESTBROKER{broker_id:04d}DIR"[:16].encode().ljust(16, b"A")).decode().rstrip("=")


def mv_features(level: int, low: int = MINIMUM_4X) -> tuple[FeatureRange, ...]:
    return (FeatureRange(name="metadata.version", min_supported=low, max_supported=max(level, low)),)


def new_cluster(mv: int = LATEST_PRODUCTION, *, session_timeout: int = 9000, features: Optional[dict[str, int]] = None,
                behaviour: broker.KafkaBehaviour = broker.KAFKA_4_1) -> broker.ClusterControl:
    return broker.initial_state(CLUSTER, mv, session_timeout=session_timeout, features=features, behaviour=behaviour)


def registration(broker_id: int, state: broker.ClusterControl, *, incarnation: Optional[str] = None,
                 previous_epoch: int = -1, version: int = 4, rack: Optional[str] = None,
                 log_dirs: Optional[tuple[str, ...]] = None) -> broker.BrokerRegistrationRequest:
    feats = mv_features(state.metadata_version) + tuple(
        FeatureRange(name=name, min_supported=level, max_supported=level) for name, level in sorted(state.finalized_features.items())
        if name != "metadata.version" and level)
    return broker.BrokerRegistrationRequest(
        broker_id=broker_id, cluster_id=CLUSTER, incarnation_id=incarnation or f"incarnation-{broker_id}",
        features=feats, rack=rack, log_dirs=log_dirs if log_dirs is not None else (directory(broker_id),),
        previous_broker_epoch=previous_epoch, version=version)


def register(state: broker.ClusterControl, broker_id: int, *, epoch: Optional[int] = None, now: int = 0,
             **kwargs: object) -> broker.ClusterControl:
    """Register ``broker_id`` so that its epoch is ``epoch`` (default 100 + id), asserting success."""
    target = 100 + broker_id if epoch is None else epoch
    state = broker.log_advanced(state, max(target, state.next_offset))
    state, out = broker.register_broker(state, registration(broker_id, state, **kwargs), now)
    assert out.response.error is Errors.NONE, out.response
    return state


def unfence(state: broker.ClusterControl, broker_id: int, *, now: int = 0) -> broker.ClusterControl:
    """A caught-up heartbeat that asks to be unfenced, asserting the broker is then unfenced."""
    epoch = state.brokers[broker_id].epoch
    state, out = broker.heartbeat(state, broker.BrokerHeartbeatRequest(broker_id=broker_id, broker_epoch=epoch, current_metadata_offset=10**9, want_fence=False, want_shut_down=False), now)
    assert out.response.error is Errors.NONE and not out.response.is_fenced, out.response
    return state


def brokers_up(state: broker.ClusterControl, ids: list[int], *, now: int = 0) -> broker.ClusterControl:
    for b in ids:
        state = register(state, b, now=now)
    for b in ids:
        state = unfence(state, b, now=now)
    return state


def topic(state: broker.ClusterControl, name: str, assignments: list[list[int]], *, min_isr: int = 1,
          unclean: bool = False) -> tuple[broker.ClusterControl, str]:
    topic_id = base64.urlsafe_b64encode(name.encode().ljust(16, b"_")[:16]).decode().rstrip("=")
    info = TopicInfo(name=name, topic_id=topic_id, min_insync_replicas=min_isr, unclean_leader_election_enable=unclean)
    state, out = broker.create_topic(state, info, tuple(tuple(a) for a in assignments))
    assert out.response is Errors.NONE, out.response
    return state, topic_id
