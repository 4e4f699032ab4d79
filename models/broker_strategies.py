"""Public Hypothesis strategies for the broker lifecycle, for kraftspec's models and other projects' suites.

``reachable_clusters()`` draws controller states reached by valid operation sequences, so a suite can
start its own checks from realistic states; the request strategies draw well-formed RPCs.
"""

from __future__ import annotations

import base64

from hypothesis import strategies as st

from kraftspec.reference import broker, feature_control
from kraftspec.reference.partition import TopicInfo
from kraftspec.reference.metadata_version import LATEST_PRODUCTION, LEVELS, MINIMUM_4X
from kraftspec.reference.records import FeatureRange, MetadataRecord, PartitionRecord, TopicRecord

BROKER_IDS = (1, 2, 3)
SESSION_TIMEOUT = 10
CLUSTER_ID = "kraftspecModelClusterAA"
TOPIC_ID = "FOOFOOFOOFOOFOOFOOFOOw"


def directory_of(broker_id: int) -> str:
    """A non-reserved log directory id owned by ``broker_id``."""
    return base64.urlsafe_b64encode(bytes([0x20 + broker_id]) * 16).decode().rstrip("=")


def registration_request(broker_id: int, incarnation: int, previous_epoch: int = -1,
                         metadata_version: int = LATEST_PRODUCTION) -> broker.BrokerRegistrationRequest:
    """A well-formed BrokerRegistration for the model cluster (features, one log directory, v4)."""
    return broker.BrokerRegistrationRequest(
        broker_id=broker_id, cluster_id=CLUSTER_ID, incarnation_id=f"incarnation-{broker_id}-{incarnation}",
        features=(FeatureRange(name="metadata.version", min_supported=MINIMUM_4X, max_supported=metadata_version),),
        log_dirs=(directory_of(broker_id),), previous_broker_epoch=previous_epoch)


def leaderless_cluster(metadata_version: int = LATEST_PRODUCTION) -> tuple[broker.ClusterControl,
                                                                           list[tuple[int, MetadataRecord]]]:
    """An active controller after a whole-cluster restart: topic ``foo``'s partitions leaderless, every broker in the ISR.

    Returns the state and the records that built it (offsets 0..).
    """
    records: list[MetadataRecord] = [TopicRecord(name="foo", topic_id=TOPIC_ID)]
    for partition_id, replicas in enumerate((BROKER_IDS, BROKER_IDS[1:] + BROKER_IDS[:1])):
        records.append(PartitionRecord(partition_id=partition_id, topic_id=TOPIC_ID, replicas=replicas, isr=replicas,
                                       leader=-1))
    state = broker.initial_state(CLUSTER_ID, metadata_version, session_timeout=SESSION_TIMEOUT)
    log = []
    for offset, record in enumerate(records):
        state = broker.replay(state, record, offset)
        log.append((offset, record))
    return broker.log_advanced(state, len(records)), log


def running_cluster(metadata_version: int = LATEST_PRODUCTION) -> tuple[broker.ClusterControl,
                                                                        list[tuple[int, MetadataRecord]]]:
    """Every broker registered and unfenced at time 0, then topic ``foo`` created with partitions led by brokers 1 and 2.

    Returns the state and the records written (offsets 0..). Each broker heartbeated once, at time 0.
    """
    state = broker.initial_state(CLUSTER_ID, metadata_version, session_timeout=SESSION_TIMEOUT)
    log: list[tuple[int, MetadataRecord]] = []
    for broker_id in BROKER_IDS:
        state, out = broker.register_broker(state, registration_request(broker_id, 1, -1, metadata_version), 0)
        log.extend(out.records)
    for broker_id in BROKER_IDS:
        request = broker.BrokerHeartbeatRequest(broker_id=broker_id, broker_epoch=state.brokers[broker_id].epoch,
                                                current_metadata_offset=state.next_offset, want_fence=False,
                                                want_shut_down=False)
        state, out = broker.heartbeat(state, request, 0)
        log.extend(out.records)
    topic = TopicInfo(name="foo", topic_id=TOPIC_ID)
    state, out = broker.create_topic(state, topic, (BROKER_IDS, BROKER_IDS[1:] + BROKER_IDS[:1]))
    log.extend(out.records)
    return state, log


FEATURE_NAMES = ("metadata.version", "metadata.version", "eligible.leader.replicas.version", "group.version",
                 "kraft.version", "bar")
"""The features UpdateFeatures inputs name (``bar``: one no node supports)."""
MODEL_CONTROLLER_FEATURES = {"metadata.version": (MINIMUM_4X, 31), "eligible.leader.replicas.version": (0, 1),
                             "group.version": (0, 1), "kraft.version": (0, 1)}
"""What the model's controller software supports (Kafka 4.3's ``QuorumFeatures.defaultSupportedFeatureMap(true)``
for these features)."""


@st.composite
def update_features_requests(draw: st.DrawFn, finalized: dict[str, int]) -> feature_control.UpdateFeaturesRequest:
    """UpdateFeatures requests about the finalized levels: one or two features, each one level down, the same or up
    (or -1), every upgrade type (an unknown code 0 too), sometimes validate-only (§1.11)."""
    updates = []
    for _ in range(draw(st.integers(1, 2))):
        name = draw(st.sampled_from(FEATURE_NAMES))
        level = draw(st.sampled_from((-1, 0, 1, 1))) + finalized.get(name, 0)
        updates.append(feature_control.FeatureUpdate(
            feature=name, max_version_level=level,
            upgrade_type=draw(st.sampled_from((feature_control.UPGRADE, feature_control.UPGRADE,
                                               feature_control.SAFE_DOWNGRADE, feature_control.UNSAFE_DOWNGRADE,
                                               feature_control.UNKNOWN)))))
    return feature_control.UpdateFeaturesRequest(updates=tuple(updates), validate_only=draw(st.booleans()))


def metadata_versions() -> st.SearchStrategy[int]:
    """metadata.version levels Kafka 4.x accepts (3.3-IV3 to the latest production level)."""
    return st.sampled_from([level for level in LEVELS.values() if MINIMUM_4X <= level <= LATEST_PRODUCTION])


def registration_requests(broker_ids: tuple[int,
                                            ...] = BROKER_IDS) -> st.SearchStrategy[broker.BrokerRegistrationRequest]:
    """BrokerRegistration requests for the model cluster: any broker, incarnation and previous epoch."""
    return st.builds(registration_request, st.sampled_from(broker_ids), st.integers(1, 5), st.integers(-1, 50))


def heartbeat_requests(broker_ids: tuple[int, ...] = BROKER_IDS, max_epoch: int = 50,
                       max_offset: int = 60) -> st.SearchStrategy[broker.BrokerHeartbeatRequest]:
    """BrokerHeartbeat requests in any state: any epoch and offset, any wantFence / wantShutDown."""
    return st.builds(broker.BrokerHeartbeatRequest, broker_id=st.sampled_from(broker_ids),
                     broker_epoch=st.integers(0, max_epoch),
                     current_metadata_offset=st.integers(-1, max_offset), want_fence=st.booleans(),
                     want_shut_down=st.booleans())


@st.composite
def reachable_clusters(draw: st.DrawFn, max_steps: int = 30) -> broker.ClusterControl:
    """A controller state reached from :func:`running_cluster` or :func:`leaderless_cluster` by drawn operations."""
    state, _ = running_cluster() if draw(st.booleans()) else leaderless_cluster()
    now = 0
    for _ in range(draw(st.integers(0, max_steps))):
        kind = draw(st.sampled_from(["register", "heartbeat", "tick", "fence"]))
        if kind == "register":
            state, _ = broker.register_broker(state, draw(registration_requests()), now)
        elif kind == "heartbeat":
            request = draw(heartbeat_requests(max_epoch=state.next_offset, max_offset=state.next_offset))
            registered = state.brokers.get(request.broker_id)
            if registered is not None and draw(st.booleans()):
                request = broker.BrokerHeartbeatRequest(broker_id=request.broker_id, broker_epoch=registered.epoch,
                                                        current_metadata_offset=request.current_metadata_offset,
                                                        want_fence=request.want_fence,
                                                        want_shut_down=request.want_shut_down)
            state, _ = broker.heartbeat(state, request, now)
        elif kind == "tick":
            now += draw(st.integers(1, 2 * SESSION_TIMEOUT))
        else:
            state, _ = broker.fence_stale_broker(state, now)
    return state
