"""Controller-side broker lifecycle: registration, heartbeats, session fencing, controlled shutdown, unregistration.

rules §1.2–§1.8 (``ClusterControlManager``, ``BrokerHeartbeatManager``, ``BrokerHeartbeatTracker``,
``ReplicationControlManager``). Every transition is ``(state, input, now) -> (state', Output)``: the
records it writes carry the offsets they are appended at, and the hard state is obtained by
replaying those records, exactly as Kafka's controller does.

Where KIP-631 and Kafka differ (Kafka wins here): the KIP's broker epoch is "a monotonically
increasing number"; Kafka uses the offset of the first record of the registration operation. The KIP
fences on lease expiry at once; Kafka fences at most one stale broker per periodic run. Sessions are
keyed by (broker id, broker epoch) since Kafka 4.0 (KAFKA-17793); the KIP keys them by broker id.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Generic, Optional, Sequence, TypeVar

from kraftspec.reference import broker_rules, metadata_version as mv, partition_events
from kraftspec.reference.broker_registration import (
    BrokerRegistration,
    ReplayError,
    apply_change,
    registration_from_record,
)
from kraftspec.reference.broker_rules import BrokerControlState
from kraftspec.reference.errors import Errors
from kraftspec.reference.feature_versions import (
    ELR_FEATURE,
    KAFKA_3_9 as FEATURES_3_9,
    KAFKA_4_0 as FEATURES_4_0,
    KAFKA_4_1 as FEATURES_4_1,
    KAFKA_4_2 as FEATURES_4_2,
    KAFKA_4_3 as FEATURES_4_3,
    KAFKA_4_4 as FEATURES_4_4,
    KRAFT_VERSION,
    METADATA_VERSION,
    SHORT_MAX,
    FeatureVersions,
)
from kraftspec.reference.frozen import EMPTY_MAP, FrozenMap, evolve
from kraftspec.reference.partition import PartitionRegistration, TopicInfo, TopicPartition, merge
from kraftspec.reference.partition_creation import create_partition
from kraftspec.reference.partition_rules import KAFKA_4_0 as PARTITION_4_0, KAFKA_4_3 as PARTITION_4_3, PartitionBehaviour
from kraftspec.reference.reassignment import validate_manual_assignment
from kraftspec.reference.records import (
    FENCE,
    UNFENCE,
    BrokerRegistrationChangeRecord,
    ClearElrRecord,
    ConfigRecord,
    Endpoint,
    FeatureRange,
    FeatureLevelRecord,
    FenceBrokerRecord,
    MetadataRecord,
    NoOpRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
    UnfenceBrokerRecord,
    UnregisterBrokerRecord,
)

LEGACY_SESSION_EPOCH = -1  # Kafka 3.9 kept one contact time per registered broker, whatever its epoch

R = TypeVar("R")
Written = tuple[tuple[int, MetadataRecord], ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class KafkaBehaviour:
    """The version differences of rules §1.10, as explicit switches.

    ``sessions_keyed_by_epoch``: 4.0+ tracks sessions per (id, epoch) and also fences already-fenced
    brokers; 3.9 had one session per id, valid only while unfenced: the heartbeat manager's ``lastContactNs`` of each
    registered broker, which every ``touch`` sets (a heartbeat with the current epoch, a registration, the replay of
    a record of the broker, activation; a stale heartbeat touches nothing), see :func:`_touch_contacts`.
    ``activation_sessions_for_fenced``: 4.0 gave fenced brokers a fresh session on controller activation; 4.1+ does
    not (KAFKA-19130).
    ``clean_shutdown_detection``: 4.0+ honours previousBrokerEpoch (``ClusterControlManager.registerBroker``'s
    ``cleanShutdownDetectionEnabled``, request v3+; Kafka 4.0.0 has it, 3.9 not). ``register_forgets_offset``: 4.0+
    ``BrokerHeartbeatManager.register`` touches an entry whose fenced flag it leaves unchanged with offset -1 (3.9.1's
    does too). ``duplicate_registration_message``: the DUPLICATE_BROKER_REGISTRATION message of
    ``ClusterControlManager.registerBroker`` (4.1 added how the duplicate resolves itself).
    ``assignment_needs_uncordoned_dirs``: 4.4+ ``ReplicationControlManager.validateManualPartitionAssignment`` refuses
    a broker whose every log directory is cordoned (KIP-1066). ``restart_leaves_isr``: 4.0+ ``handleBrokerShutdown``
    takes a new incarnation's broker out of its ISRs as if fenced when ELR is off; 3.9's
    ``handleBrokerUncleanShutdown`` writes nothing below the ELR metadata.version. ``registration_needs_metadata_version``:
    4.0+ refuses a registration without a metadata.version range (INVALID_REGISTRATION); 3.9 checks the range 1–1 for
    it (``processRegistrationFeature``'s default). ``partition``: the partition rules the broker events run
    (``partition_rules.PartitionBehaviour``; 3.9's ``PartitionChangeBuilder`` elects and records the last known leader
    as 4.0's does; the broker component runs no reassignment, where 4.1–4.2 and 4.3 differ). ``features``: the feature
    levels the release knows (§1.11): "4.1" and "4.2" are "4.1+" with Kafka 4.1's and 4.2's tables (fewer
    metadata.version levels; 4.1 words a refused downgrade as 4.0 does), "4.1+" takes 4.3's. ``updates_features_atomically``: 4.0+ fails a whole
    UpdateFeatures at its first error; 3.9 answered per feature (not modelled). ``skips_kraft_version_records``: 4.0+
    replays no FeatureLevelRecord of kraft.version (KAFKA-18979); 3.9 finalized it. "4.1+" is Kafka 4.1 to 4.3, "4.4+" 4.4
    on.
    """

    name: str
    sessions_keyed_by_epoch: bool
    activation_sessions_for_fenced: bool
    clean_shutdown_detection: bool
    register_forgets_offset: bool
    duplicate_registration_message: str = ""
    assignment_needs_uncordoned_dirs: bool = False
    restart_leaves_isr: bool = True
    registration_needs_metadata_version: bool = True
    partition: PartitionBehaviour = PARTITION_4_3
    features: FeatureVersions = FEATURES_4_3
    updates_features_atomically: bool = True
    skips_kraft_version_records: bool = True


_DUPLICATE = "Another broker is registered with that broker id."
_DUPLICATE_4_1 = (f"{_DUPLICATE} If the broker was recently restarted this should self-resolve once the heartbeat "
                  f"manager expires the broker's session.")
KAFKA_3_9 = KafkaBehaviour(name="3.9", sessions_keyed_by_epoch=False, activation_sessions_for_fenced=True,
                           clean_shutdown_detection=False, register_forgets_offset=True,
                           duplicate_registration_message=_DUPLICATE, restart_leaves_isr=False,
                           registration_needs_metadata_version=False, partition=PARTITION_4_0,
                           features=FEATURES_3_9, updates_features_atomically=False,
                           skips_kraft_version_records=False)
KAFKA_4_0 = KafkaBehaviour(name="4.0", sessions_keyed_by_epoch=True, activation_sessions_for_fenced=True,
                           clean_shutdown_detection=True, register_forgets_offset=True,
                           duplicate_registration_message=_DUPLICATE, partition=PARTITION_4_0,
                           features=FEATURES_4_0)
KAFKA_4_1 = KafkaBehaviour(name="4.1+", sessions_keyed_by_epoch=True, activation_sessions_for_fenced=False,
                           clean_shutdown_detection=True, register_forgets_offset=True,
                           duplicate_registration_message=_DUPLICATE_4_1)
KAFKA_4_1_ONLY = evolve(KAFKA_4_1, name="4.1", features=FEATURES_4_1)
KAFKA_4_2 = evolve(KAFKA_4_1, name="4.2", features=FEATURES_4_2)
KAFKA_4_4 = evolve(KAFKA_4_1, name="4.4+", assignment_needs_uncordoned_dirs=True, features=FEATURES_4_4)
BEHAVIOURS = {b.name: b for b in (KAFKA_3_9, KAFKA_4_0, KAFKA_4_1, KAFKA_4_1_ONLY, KAFKA_4_2, KAFKA_4_4)}


@dataclass(frozen=True, slots=True, kw_only=True)
class HeartbeatState:
    """``BrokerHeartbeatState``: the active controller's soft state for one broker (§1.2)."""

    fenced: bool
    metadata_offset: int = -1
    controlled_shutdown_offset: int = broker_rules.NO_CONTROLLED_SHUTDOWN


def _untouched_entry(fenced: bool) -> HeartbeatState:
    """A broker's heartbeat entry as registered, before any heartbeat: its fenced flag, no offsets (§1.2)."""
    return HeartbeatState(fenced=fenced)


@dataclass(frozen=True, slots=True, kw_only=True)
class ClusterControl:
    """The controller's state for brokers: hard state (rebuilt from the log) and the active controller's soft state.

    ``next_offset`` is the log's next write offset; ``sessions`` maps (id, epoch) to the last contact
    time; ``heartbeats`` exists only while ``active``. Times are integers in the unit of
    ``session_timeout`` (Kafka uses nanoseconds). ``controller_features`` are the levels this controller's software
    supports (``QuorumFeatures.localSupportedFeatures``, §1.11); ``min_insync_configs`` the cluster-level ("") and
    broker-level min.insync.replicas configs (enabling ELR rewrites them).
    """

    cluster_id: str
    finalized_features: FrozenMap[str, int]
    session_timeout: int = 9000
    behaviour: KafkaBehaviour = KAFKA_4_1
    active: bool = True
    next_offset: int = 0
    brokers: FrozenMap[int, BrokerRegistration] = FrozenMap()
    register_offsets: FrozenMap[int, int] = FrozenMap()
    sessions: FrozenMap[tuple[int, int], int] = FrozenMap()
    heartbeats: FrozenMap[int, HeartbeatState] = FrozenMap()
    topics: FrozenMap[str, TopicInfo] = FrozenMap()
    partitions: FrozenMap[TopicPartition, PartitionRegistration] = FrozenMap()
    controller_features: FrozenMap[str, tuple[int, int]] = FrozenMap()
    min_insync_configs: FrozenMap[str, str] = FrozenMap()

    @property
    def metadata_version(self) -> int:
        """The finalized metadata.version level (0 when none is finalized: pre-3.3 logs)."""
        return self.finalized_features.get(METADATA_VERSION, 0)

    @property
    def elr_enabled(self) -> bool:
        """ELR is on iff ``eligible.leader.replicas.version`` >= 1 (§2.7)."""
        return self.finalized_features.get(ELR_FEATURE, 0) >= 1


def _touched_entry(entry: HeartbeatState, fenced: bool, metadata_offset: int) -> HeartbeatState:
    """``BrokerHeartbeatManager.touch`` on one entry: fencing clears the controlled-shutdown offset (§1.2)."""
    return HeartbeatState(fenced=fenced, metadata_offset=metadata_offset,
                          controlled_shutdown_offset=(broker_rules.NO_CONTROLLED_SHUTDOWN if fenced
                                                      else entry.controlled_shutdown_offset))


@dataclass(frozen=True, slots=True, kw_only=True)
class Output(Generic[R]):
    """What a transition emits: the RPC response (or timer result) and the records appended, with offsets."""

    response: R
    records: Written = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerRegistrationRequest:
    """BrokerRegistration RPC (apiKey 62, v0–4) as the controller sees it (§1.3)."""

    broker_id: int
    cluster_id: str
    incarnation_id: str
    listeners: tuple[Endpoint, ...] = ()
    features: tuple[FeatureRange, ...] = ()
    rack: Optional[str] = None
    is_migrating_zk_broker: bool = False
    log_dirs: tuple[str, ...] = ()
    previous_broker_epoch: int = -1
    version: int = 4


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerRegistrationResponse:
    """The reply: an error code (with Kafka's message) or the assigned broker epoch."""

    error: Errors
    broker_epoch: int = -1
    message: Optional[str] = None


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerHeartbeatRequest:
    """BrokerHeartbeat RPC (apiKey 63, v0–2) (§1.5)."""

    broker_id: int
    broker_epoch: int
    current_metadata_offset: int
    want_fence: bool
    want_shut_down: bool
    offline_log_dirs: tuple[str, ...] = ()
    cordoned_log_dirs: Optional[tuple[str, ...]] = None  # v2+; null until the broker has caught up (KIP-1066)


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerHeartbeatResponse:
    """The reply; on an error only ``error`` is meaningful (defaults as in the schema: fenced, not caught up)."""

    error: Errors
    is_caught_up: bool = False
    is_fenced: bool = True
    in_controlled_shutdown: bool = False
    should_shut_down: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class UnregisterBrokerResponse:
    """UnregisterBroker RPC (apiKey 64) reply."""

    error: Errors
    message: Optional[str] = None


@dataclass(frozen=True, slots=True, kw_only=True)
class StaleBrokerFencing:
    """Result of one run of the stale-broker task: which session expired (if any) and whether it fenced."""

    expired_session: Optional[tuple[int, int]]
    fenced: bool


def initial_state(cluster_id: str, metadata_version: int, *, session_timeout: int = 9000,
                  behaviour: KafkaBehaviour = KAFKA_4_1, features: Optional[dict[str, int]] = None,
                  next_offset: int = 0,
                  controller_features: Optional[dict[str, tuple[int, int]]] = None) -> ClusterControl:
    """An active controller of a freshly bootstrapped cluster at ``metadata_version``.

    Its software supports ``controller_features``; by default the release's production-ready metadata.version levels
    (``QuorumFeatures.defaultSupportedFeatureMap``), every level of each bootstrapped feature, and no other feature
    (§1.11).
    """
    finalized = {METADATA_VERSION: metadata_version, **(features or {})}
    versions = behaviour.features
    supported = controller_features if controller_features is not None else {
        **{name: (0, SHORT_MAX) for name in finalized},
        METADATA_VERSION: (versions.metadata_versions[0], versions.latest_production)}
    return ClusterControl(cluster_id=cluster_id, finalized_features=FrozenMap(finalized),
                          session_timeout=session_timeout, behaviour=behaviour, next_offset=next_offset,
                          controller_features=FrozenMap(supported))


# ---------------------------------------------------------------------------------------------
# Sessions (BrokerHeartbeatTracker)
# ---------------------------------------------------------------------------------------------

def _session_key(state: ClusterControl, broker_id: int, broker_epoch: int) -> tuple[int, int]:
    return (broker_id, broker_epoch) if state.behaviour.sessions_keyed_by_epoch else (broker_id, LEGACY_SESSION_EPOCH)


def has_valid_session(state: ClusterControl, broker_id: int, broker_epoch: int, now: int) -> bool:
    """``hasValidSession``: a tracker entry for exactly (id, epoch) that has not expired (§1.2).

    Kafka 3.9: one entry per id, and only an unfenced broker has a session (§1.10).
    """
    contact = state.sessions.get(_session_key(state, broker_id, broker_epoch))
    if contact is None or broker_rules.session_expired(contact, now, state.session_timeout):
        return False
    if not state.behaviour.sessions_keyed_by_epoch:
        hb = state.heartbeats.get(broker_id)
        return hb is not None and not hb.fenced
    return True


def lowest_active_offset(state: ClusterControl) -> int:
    """``lowestActiveOffset``: the smallest reported offset among unfenced, not-shutting-down brokers (§1.2)."""
    offsets = [hb.metadata_offset for hb in state.heartbeats.values()
               if not hb.fenced and hb.controlled_shutdown_offset < 0]
    return min(offsets) if offsets else broker_rules.INT64_MAX


# ---------------------------------------------------------------------------------------------
# Replay: how records change the hard state (and, on the active controller, the heartbeat entries)
# ---------------------------------------------------------------------------------------------

def replay(state: ClusterControl, record: MetadataRecord, offset: int) -> ClusterControl:
    """Apply one broker or partition record written at ``offset`` (§1.3 replay, §1.4, §2.2)."""
    if isinstance(record, RegisterBrokerRecord):
        registration = registration_from_record(record)
        changes: dict[str, object] = {
            "brokers": state.brokers.set(record.broker_id, registration),
            "register_offsets": state.register_offsets.set(record.broker_id, offset),
        }
        if state.active:  # the heartbeat entry is removed and registered afresh with the record's fenced flag
            changes["heartbeats"] = state.heartbeats.set(record.broker_id, _untouched_entry(record.fenced))
        return evolve(state, **changes)
    if isinstance(record, (BrokerRegistrationChangeRecord, FenceBrokerRecord, UnfenceBrokerRecord)):
        broker_id = record.id if isinstance(record, (FenceBrokerRecord, UnfenceBrokerRecord)) else record.broker_id
        updated = apply_change(state.brokers.get(broker_id), record)
        if not state.active:
            return evolve(state, brokers=state.brokers.set(broker_id, updated))
        # the heartbeat entry is registered again with the resulting fenced flag, even after a no-op change
        return evolve(state, brokers=state.brokers.set(broker_id, updated),
                      heartbeats=registered_heartbeats(state, broker_id, updated.fenced))
    if isinstance(record, UnregisterBrokerRecord):
        existing = state.brokers.get(record.broker_id)
        if existing is None or existing.epoch != record.broker_epoch:
            raise ReplayError(f"UnregisterBrokerRecord for broker {record.broker_id} epoch {record.broker_epoch} "
                              f"does not match the registration")
        return evolve(state, brokers=state.brokers.remove(record.broker_id),
                       register_offsets=state.register_offsets.remove(record.broker_id),
                       heartbeats=state.heartbeats.remove(record.broker_id))
    if isinstance(record, PartitionChangeRecord):
        key = (record.topic_id, record.partition_id)
        return evolve(state, partitions=state.partitions.set(key, merge(state.partitions[key], record)))
    if isinstance(record, PartitionRecord):
        key = (record.topic_id, record.partition_id)
        return evolve(state, partitions=state.partitions.set(key, PartitionRegistration.from_record(record)))
    if isinstance(record, TopicRecord):
        topic = TopicInfo(name=record.name, topic_id=record.topic_id)
        return evolve(state, topics=state.topics.set(record.topic_id, topic))
    if isinstance(record, ConfigRecord):
        return _replay_config(state, record)
    if isinstance(record, FeatureLevelRecord):
        return replay_feature_level(state, record)
    if isinstance(record, NoOpRecord):
        return state
    if isinstance(record, ClearElrRecord):
        cleared = [(key, p) for key, p in state.partitions.items()
                   if (not record.topic_name or (key[0] in state.topics and state.topics[key[0]].name == record.topic_name))
                   and (p.elr or p.last_known_elr)]
        partitions = state.partitions
        for key, p in cleared:
            partitions = partitions.set(key, evolve(p, elr=(), last_known_elr=()))
        return evolve(state, partitions=partitions)
    raise TypeError(f"the broker lifecycle does not replay {type(record).__name__}")


def replay_feature_level(state: ClusterControl, record: FeatureLevelRecord) -> ClusterControl:
    """``FeatureControlManager.replay``: a level the controller's software does not support is a fault; level 0
    removes a feature; a kraft.version record is skipped (4.x, KAFKA-18979: the Raft client owns that level) (§1.11)."""
    low, high = state.controller_features.get(record.name, (0, 0))
    if not low <= record.feature_level <= high:
        raise ReplayError(f"FeatureLevelRecord {record.name}={record.feature_level}: this controller only supports "
                          f"versions {low}-{high}")
    if record.name == KRAFT_VERSION and state.behaviour.skips_kraft_version_records:
        return state
    if record.feature_level == 0 and record.name != METADATA_VERSION:
        return evolve(state, finalized_features=state.finalized_features.remove(record.name))
    return evolve(state, finalized_features=state.finalized_features.set(record.name, record.feature_level))


def _replay_config(state: ClusterControl, record: ConfigRecord) -> ClusterControl:
    """A topic's ``unclean.leader.election.enable`` or ``min.insync.replicas`` (a null value restores the default), a
    cluster or broker min.insync.replicas; other configs and resources are not modelled here
    (``ConfigurationControlManager.replay``)."""
    if record.resource_type == BROKER_RESOURCE and record.name == MIN_IN_SYNC_REPLICAS:
        configs = state.min_insync_configs
        if record.value is None:
            return evolve(state, min_insync_configs=configs.remove(record.resource_name)
                          if record.resource_name in configs else configs)
        return evolve(state, min_insync_configs=configs.set(record.resource_name, record.value))
    if record.resource_type != TOPIC_RESOURCE or record.name not in (UNCLEAN_LEADER_ELECTION_ENABLE,
                                                                      MIN_IN_SYNC_REPLICAS):
        return state
    for topic_id, topic in state.topics.items():
        if topic.name == record.resource_name:
            if record.name == UNCLEAN_LEADER_ELECTION_ENABLE:
                changed = evolve(topic, unclean_leader_election_enable=(record.value or "").lower() == "true")
            else:
                changed = evolve(topic, min_insync_replicas=int(record.value) if record.value is not None else 1)
            return evolve(state, topics=state.topics.set(topic_id, changed))
    return state


def registered_heartbeats(state: ClusterControl, broker_id: int, fenced: bool) -> FrozenMap[int, HeartbeatState]:
    """``BrokerHeartbeatManager.register``, called by ``ClusterControlManager``'s replay of a fence, unfence or
    registration-change record on the active controller (§1.4).

    A missing entry is created untouched. An entry whose fenced flag changes keeps its reported offset; one whose
    flag stays is touched with offset -1 (4.0+; 3.9 left it alone), which also clears a fenced entry's
    controlled-shutdown offset. On the heartbeat and session-expiry paths the entry already holds the new flag when
    the records are replayed, so the broker's reported offset is forgotten until its next heartbeat.
    """
    entry = state.heartbeats.get(broker_id)
    if entry is None:
        return state.heartbeats.set(broker_id, _untouched_entry(fenced))
    if entry.fenced != fenced:
        return state.heartbeats.set(broker_id, _touched_entry(entry, fenced, entry.metadata_offset))
    if state.behaviour.register_forgets_offset:
        return state.heartbeats.set(broker_id, _touched_entry(entry, fenced, -1))
    return state.heartbeats


def _append(state: ClusterControl, records: list[MetadataRecord]) -> tuple[ClusterControl, Written]:
    """Append ``records`` at the next write offsets and replay them, as the controller does after a write.

    Replay does not read the log end, so it is moved once, past the last record."""
    if not records:
        return state, ()
    first = state.next_offset
    written = tuple(enumerate(records, first))
    for offset, record in written:
        state = replay(state, record, offset)
    return evolve(state, next_offset=first + len(written)), written


def _touch_contacts(state: ClusterControl, written: Written, now: Optional[int]) -> ClusterControl:
    """Kafka 3.9 (sessions not keyed by epoch): replaying a record of a broker registers it with the heartbeat manager
    again, whose ``touch`` sets its last contact to ``now``; replaying its unregistration drops it (``remove``).

    3.9 ``ClusterControlManager.replay`` / ``replayRegistrationChange`` -> ``BrokerHeartbeatManager.register`` ->
    ``touch``. From 4.0 contacts live in the ``BrokerHeartbeatTracker``, which replay does not touch.
    """
    if state.behaviour.sessions_keyed_by_epoch or not written:
        return state
    sessions = state.sessions
    for _, record in written:
        if isinstance(record, UnregisterBrokerRecord):
            key = (record.broker_id, LEGACY_SESSION_EPOCH)
            if key in sessions:
                sessions = sessions.remove(key)
        elif isinstance(record, (RegisterBrokerRecord, BrokerRegistrationChangeRecord)) and now is not None:
            sessions = sessions.set((record.broker_id, LEGACY_SESSION_EPOCH), now)
        elif isinstance(record, (FenceBrokerRecord, UnfenceBrokerRecord)) and now is not None:
            sessions = sessions.set((record.id, LEGACY_SESSION_EPOCH), now)
    return evolve(state, sessions=sessions)


def _fence_record(state: ClusterControl, registration: BrokerRegistration) -> MetadataRecord:
    """Fencing writes FenceBrokerRecord below MV 3.3-IV2, else BrokerRegistrationChangeRecord v0 fenced=1 (§1.4)."""
    if mv.writes_fence_records(state.metadata_version):
        return FenceBrokerRecord(id=registration.broker_id, epoch=registration.epoch)
    return BrokerRegistrationChangeRecord(broker_id=registration.broker_id, broker_epoch=registration.epoch,
                                          fenced=FENCE, version=0)


def _unfence_record(state: ClusterControl, registration: BrokerRegistration) -> MetadataRecord:
    """Unfencing writes UnfenceBrokerRecord below MV 3.3-IV2, else BrokerRegistrationChangeRecord v0 fenced=-1."""
    if mv.writes_fence_records(state.metadata_version):
        return UnfenceBrokerRecord(id=registration.broker_id, epoch=registration.epoch)
    return BrokerRegistrationChangeRecord(broker_id=registration.broker_id, broker_epoch=registration.epoch,
                                          fenced=UNFENCE, version=0)


def _partition_context(state: ClusterControl) -> dict[str, object]:
    return {"metadata_version": state.metadata_version, "elr_enabled": state.elr_enabled,
            "behaviour": state.behaviour.partition}


Order = tuple[TopicPartition, ...]
"""The partitions Kafka wrote PartitionChangeRecords for in one operation, in its order, as a trace states it.

Kafka visits partitions in the order of hash-keyed indexes (``BrokersToIsrs``, ``BrokersToElrs``,
``directoriesToPartitions``); one operation may make several visits (a fence, then each directory gone offline).
Each visit takes the partitions it changes in the order of their first occurrence in what is left of ``order``
(the rest ascending), and uses those occurrences up (:func:`_rest_of_order`)."""


def _rest_of_order(order: Order, records: Sequence[MetadataRecord]) -> Order:
    """``order`` without the first occurrence of each partition a visit wrote ``records`` for."""
    if not order:
        return order
    rest = list(order)
    for record in records:
        if isinstance(record, PartitionChangeRecord):
            key = (record.topic_id, record.partition_id)
            if key in rest:
                rest.remove(key)
    return tuple(rest)


def broker_fenced_records(state: ClusterControl, broker_id: int, order: Order = ()) -> list[MetadataRecord]:
    """``handleBrokerFenced``: ISR removals and re-elections, then the fence record (§2.9)."""
    changes = partition_events.handle_broker_fenced(state.brokers, state.topics, state.partitions, broker_id,
                                                    **_partition_context(state), order=order)
    return [*changes, _fence_record(state, state.brokers[broker_id])]


def broker_unfenced_records(state: ClusterControl, broker_id: int, order: Order = ()) -> list[MetadataRecord]:
    """``handleBrokerUnfenced``: the unfence record, then elections of leaderless partitions (§2.9)."""
    changes = partition_events.handle_broker_unfenced(state.brokers, state.topics, state.partitions, broker_id,
                                                      **_partition_context(state), order=order)
    return [_unfence_record(state, state.brokers[broker_id]), *changes]


def directories_offline_records(state: ClusterControl, broker_id: int,
                                offline_log_dirs: tuple[str, ...], order: Order = ()) -> list[MetadataRecord]:
    """``handleDirectoriesOffline`` (§1.5 step 7, MV >= 3.7-IV2): for each registered directory newly reported offline,
    ISR removals and re-elections of the partitions placed on it, then BrokerRegistrationChangeRecord v2
    with the remaining directories. Directories the registration does not list are ignored, so a
    repeated report writes nothing.
    """
    registration = state.brokers[broker_id]
    newly_offline = [d for d in registration.log_dirs if d in offline_log_dirs]
    if not newly_offline:
        return []
    records: list[MetadataRecord] = []
    for directory in newly_offline:
        changes = partition_events.handle_directory_offline(
            state.brokers, state.topics, state.partitions, broker_id, directory, **_partition_context(state),
            order=order)
        records.extend(changes)
        order = _rest_of_order(order, changes)
    remaining = tuple(d for d in registration.log_dirs if d not in offline_log_dirs)
    records.append(BrokerRegistrationChangeRecord(broker_id=broker_id, broker_epoch=registration.epoch,
                                                  log_dirs=remaining, version=2))
    return records


def directories_cordoned_records(state: ClusterControl, broker_id: int,
                                 cordoned_log_dirs: tuple[str, ...]) -> list[MetadataRecord]:
    """``handleDirectoriesCordoned`` (KIP-1066, MV >= 4.3-IV0; Kafka 4.3 ``ReplicationControlManager``): a heartbeat
    stating cordoned directories other than the registration's (compared as sets; a registration that never had
    any, null, always differs) writes BrokerRegistrationChangeRecord v3 with the list as stated."""
    current = state.brokers[broker_id].cordoned_log_dirs
    if current is not None and set(current) == set(cordoned_log_dirs):
        return []
    return [BrokerRegistrationChangeRecord(broker_id=broker_id, broker_epoch=state.brokers[broker_id].epoch,
                                           cordoned_log_dirs=tuple(cordoned_log_dirs), version=3)]


def broker_in_controlled_shutdown_records(state: ClusterControl, broker_id: int,
                                          order: Order = ()) -> list[MetadataRecord]:
    """``handleBrokerInControlledShutdown``: ICS record v1 (if not yet ICS and MV supports it), then ISR removals (§1.7)."""
    registration = state.brokers[broker_id]
    records: list[MetadataRecord] = []
    if not registration.in_controlled_shutdown and mv.is_in_controlled_shutdown_supported(state.metadata_version):
        records.append(BrokerRegistrationChangeRecord(broker_id=broker_id, broker_epoch=registration.epoch,
                                                      in_controlled_shutdown=1, version=1))
    records.extend(partition_events.handle_broker_in_controlled_shutdown(
        state.brokers, state.topics, state.partitions, broker_id, **_partition_context(state), order=order))
    return records


# ---------------------------------------------------------------------------------------------
# Registration (§1.3)
# ---------------------------------------------------------------------------------------------

def _uuid_halves(uuid_text: str) -> Optional[tuple[int, int]]:
    """The two 64-bit halves of a Kafka base64 UUID, or None for text that is not one."""
    try:
        raw = base64.urlsafe_b64decode(uuid_text + "==")
    except (binascii.Error, ValueError):
        return None
    if len(raw) != 16:
        return None
    return int.from_bytes(raw[:8], "big", signed=True), int.from_bytes(raw[8:], "big", signed=True)


def _directory_error(state: ClusterControl, request: BrokerRegistrationRequest) -> Optional[str]:
    """The INVALID_REGISTRATION message of the directory checks, in Kafka's order (§1.3 check 4)."""
    # Replicas are assigned to directories: a broker must name at least one.
    if not request.log_dirs:
        return "No directories specified in request"
    for directory in request.log_dirs:
        halves = _uuid_halves(directory)
        # The low ids (UNASSIGNED, LOST, MIGRATING) mean "no directory" in assignments, so none can be a real one.
        if halves is not None and broker_rules.is_reserved_directory(*halves):
            return "Reserved directory ID in request"
    # An assignment names one directory: the same id twice would make it ambiguous.
    if len(set(request.log_dirs)) != len(request.log_dirs):
        return "Duplicate directory ID in request"
    for directory in request.log_dirs:
        # A directory belongs to one broker: another broker's id would send replicas to the wrong disk.
        for other in state.brokers.values():
            if other.broker_id != request.broker_id and directory in other.log_dirs:
                return f"Broker {other.broker_id} is already registered with directory {directory}"
    return None


def _feature_error(state: ClusterControl, request: BrokerRegistrationRequest) -> Optional[tuple[Errors, str]]:
    """The feature checks of ``processRegistrationFeature`` in order (§1.3 checks 5–7)."""
    listed = {f.name for f in request.features}
    for feature in request.features:
        level = state.finalized_features.get(feature.name, 0)
        # A broker that cannot read a finalized feature level would misread the metadata log.
        if not broker_rules.feature_level_supported(level, feature.min_supported, feature.max_supported):
            return Errors.UNSUPPORTED_VERSION, _unsupported_message(feature.name, level, feature.min_supported,
                                                                    feature.max_supported)
    if METADATA_VERSION not in listed:
        # 4.0+: a broker must say which metadata.version levels it reads; the controller does not guess.
        if state.behaviour.registration_needs_metadata_version:
            return Errors.INVALID_REGISTRATION, "Request features do not contain 'metadata.version'"
        level = state.metadata_version  # 3.9: the range 1-1 (MINIMUM_KRAFT_VERSION) stands in for the missing one
        if not broker_rules.feature_level_supported(level, 1, 1):
            return Errors.UNSUPPORTED_VERSION, _unsupported_message(METADATA_VERSION, level, 1, 1)
    for name, level in sorted(state.finalized_features.items()):
        # A finalized feature the broker does not list is one it does not support.
        if level != 0 and name not in listed:
            return Errors.UNSUPPORTED_VERSION, _unsupported_message(name, level, 0, 0)
    return None


def _registered_features(state: ClusterControl, request: BrokerRegistrationRequest) -> tuple[FeatureRange, ...]:
    """The record's feature ranges: the request's; on 3.9 a missing metadata.version range is recorded as 1-1."""
    if state.behaviour.registration_needs_metadata_version or any(f.name == METADATA_VERSION for f in request.features):
        return request.features
    return (*request.features, FeatureRange(name=METADATA_VERSION, min_supported=1, max_supported=1))


def _unsupported_message(name: str, level: int, low: int, high: int) -> str:
    return (f"Unable to register because the broker does not support finalized version {level} of {name}. "
            f"The broker wants a version between {low} and {high}, inclusive.")


def registration_as_received(request: BrokerRegistrationRequest) -> BrokerRegistrationRequest:
    """The request as the controller reads it off the wire at its ``version`` (``BrokerRegistrationRequest.json``).

    ``LogDirs`` (v2+) and ``PreviousBrokerEpoch`` (v3+) are ignorable: a broker sending an older version drops them
    and the controller reads their defaults (no directories, -1). ``IsMigratingZkBroker`` (v1+) is not: a v0 request
    cannot carry ``true`` at all (the broker's serializer refuses it), so such an input is refused.
    """
    version = request.version
    if version >= 3:
        return request
    if version < 1 and request.is_migrating_zk_broker:
        raise ValueError("a BrokerRegistration v0 cannot carry isMigratingZkBroker (added in v1)")
    return evolve(request, previous_broker_epoch=-1, log_dirs=request.log_dirs if version >= 2 else ())


def register_broker(state: ClusterControl, request: BrokerRegistrationRequest, now: int, *,
                    authorized: bool = True, order: Order = ()) -> tuple[ClusterControl, Output[BrokerRegistrationResponse]]:
    """``registerBroker``: the ordered checks of §1.3, then the records and the epoch.

    The epoch is the offset of the first record of the operation (cleanup records of a new
    incarnation come before the RegisterBrokerRecord); an amendment by the same incarnation keeps
    the epoch, fenced and controlled-shutdown flags. Registration does not create a session.
    ``authorized`` is CLUSTER_ACTION on CLUSTER, checked by ``ControllerApis`` before the controller. The request is
    read as the controller receives it at its version (:func:`registration_as_received`).
    The DUPLICATE_BROKER_REGISTRATION message is the version's (``KafkaBehaviour.duplicate_registration_message``;
    Kafka 4.1+ ``ClusterControlManager.registerBroker``: "... once the heartbeat manager expires the broker's session").
    """
    def fail(error: Errors, message: Optional[str] = None) -> tuple[ClusterControl, Output[BrokerRegistrationResponse]]:
        return state, Output(response=BrokerRegistrationResponse(error=error, message=message))

    request = registration_as_received(request)

    # ControllerApis: only a broker (CLUSTER_ACTION on the cluster) may register, checked before the controller.
    if not authorized:
        return fail(Errors.CLUSTER_AUTHORIZATION_FAILED)
    # Only the active controller writes registrations: the broker must find the active one.
    if not state.active:
        return fail(Errors.NOT_CONTROLLER)
    # A broker formatted for another cluster must not join this one.
    if request.cluster_id != state.cluster_id:
        return fail(Errors.INCONSISTENT_CLUSTER_ID,
                    f"Expected cluster ID {state.cluster_id}, but got cluster ID {request.cluster_id}")
    existing = state.brokers.get(request.broker_id)
    # Another incarnation of this id still has a live session: two processes must not share one broker id.
    if broker_rules.is_duplicate_registration(
            existing is not None, existing is not None and existing.incarnation_id == request.incarnation_id,
            existing is not None and has_valid_session(state, request.broker_id, existing.epoch, now)):
        return fail(Errors.DUPLICATE_BROKER_REGISTRATION, state.behaviour.duplicate_registration_message)
    # ZooKeeper migration is gone from KRaft-only Kafka: a broker still migrating has nothing to register with.
    if request.is_migrating_zk_broker:
        return fail(Errors.BROKER_ID_NOT_REGISTERED, "Controller does not support registering ZK brokers.")
    directories_supported = mv.is_directory_assignment_supported(state.metadata_version)
    if directories_supported:
        message = _directory_error(state, request)
        if message is not None:
            return fail(Errors.INVALID_REGISTRATION, message)
    feature_error = _feature_error(state, request)
    if feature_error is not None:
        return fail(*feature_error)

    first_offset = state.next_offset
    records: list[MetadataRecord] = []
    if existing is None or existing.incarnation_id != request.incarnation_id:
        stored_epoch = existing.epoch if existing else broker_rules.NO_BROKER_EPOCH
        clean = broker_rules.is_clean_shutdown(state.behaviour.clean_shutdown_detection and request.version >= 3,
                                               stored_epoch, request.previous_broker_epoch)
        if state.behaviour.restart_leaves_isr or state.elr_enabled:
            records.extend(partition_events.handle_broker_shutdown(
                state.brokers, state.topics, state.partitions, request.broker_id, clean, **_partition_context(state),
                order=order))
        epoch, fenced, in_controlled_shutdown = first_offset, True, False
    else:
        epoch, fenced, in_controlled_shutdown = existing.epoch, existing.fenced, existing.in_controlled_shutdown
    records.append(RegisterBrokerRecord(
        broker_id=request.broker_id, incarnation_id=request.incarnation_id, broker_epoch=epoch,
        end_points=request.listeners, features=_registered_features(state, request), rack=request.rack, fenced=fenced,
        in_controlled_shutdown=in_controlled_shutdown,
        log_dirs=tuple(request.log_dirs) if directories_supported else (),
        version=mv.register_broker_record_version(state.metadata_version)))
    state, written = _append(state, records)
    response = BrokerRegistrationResponse(error=Errors.NONE, broker_epoch=epoch)
    return _touch_contacts(state, written, now), Output(response=response, records=written)


# ---------------------------------------------------------------------------------------------
# Heartbeats (§1.5) and controlled shutdown (§1.7)
# ---------------------------------------------------------------------------------------------

class IllegalStateError(RuntimeError):
    """A call Kafka's controller answers with IllegalStateException (a bug in the caller, not an RPC error)."""


def _heartbeat_entry(state: ClusterControl, broker_id: int) -> HeartbeatState:
    entry = state.heartbeats.get(broker_id)
    if entry is None:
        raise IllegalStateError(f"Broker {broker_id} is not registered.")
    return entry


def touched_heartbeats(state: ClusterControl, broker_id: int, fenced: bool,
                       metadata_offset: int) -> FrozenMap[int, HeartbeatState]:
    """``BrokerHeartbeatManager.touch``: record fenced flag and offset; fencing clears the controlled-shutdown offset."""
    return state.heartbeats.set(broker_id, _touched_entry(_heartbeat_entry(state, broker_id), fenced, metadata_offset))


def touch(state: ClusterControl, broker_id: int, fenced: bool, metadata_offset: int) -> ClusterControl:
    """``touch`` applied to the state (see :func:`touched_heartbeats`)."""
    return evolve(state, heartbeats=touched_heartbeats(state, broker_id, fenced, metadata_offset))


def maybe_update_controlled_shutdown_offset(state: ClusterControl, broker_id: int, offset: int) -> ClusterControl:
    """``maybeUpdateControlledShutdownOffset``: set once (never overwritten); a fenced broker cannot enter (§1.5 step 9)."""
    entry = _heartbeat_entry(state, broker_id)
    if entry.fenced:
        raise IllegalStateError("Fenced brokers cannot enter controlled shutdown.")
    if entry.controlled_shutdown_offset >= 0:
        return state
    return evolve(state, heartbeats=state.heartbeats.set(broker_id, evolve(entry, controlled_shutdown_offset=offset)))


def active_brokers(state: ClusterControl) -> list[int]:
    """The active set: unfenced, not shutting down, ordered by (reported offset, id) (``MetadataOffsetComparator``)."""
    return [b for _, b in sorted((hb.metadata_offset, b) for b, hb in state.heartbeats.items()
                                 if not hb.fenced and hb.controlled_shutdown_offset < 0)]


def usable_brokers(state: ClusterControl) -> list[tuple[int, bool]]:
    """Brokers usable for replica placement, with their fenced flag: all but those shutting down (``usableBrokers``)."""
    return [(b, hb.fenced) for b, hb in sorted(state.heartbeats.items()) if hb.controlled_shutdown_offset < 0]


def calculate_next_broker_state(state: ClusterControl, broker_id: int, request: "BrokerHeartbeatRequest",
                                register_record_offset: int) -> tuple[BrokerControlState, BrokerControlState]:
    """``BrokerHeartbeatManager.calculateNextBrokerState``: (current, next) for a heartbeat (§1.5 step 4).

    An unknown broker is an illegal state. Kafka asks for the broker's leaderships and the lowest active offset only
    where the transition table reads them.
    """
    entry = _heartbeat_entry(state, broker_id)
    current = broker_rules.current_control_state(entry.fenced, entry.controlled_shutdown_offset)
    shutting_down = current is broker_rules.CONTROLLED_SHUTDOWN
    want_fence, want_shut_down = request.want_fence, request.want_shut_down
    leads = ((shutting_down or (want_shut_down and not want_fence))
             and partition_events.leads_any_partition(state.partitions, broker_id))
    following = broker_rules.next_control_state(
        current, want_fence, want_shut_down,
        broker_rules.is_caught_up(request.current_metadata_offset, register_record_offset), leads,
        entry.controlled_shutdown_offset, lowest_active_offset(state) if shutting_down else broker_rules.INT64_MAX)
    return current, following


def refreshed_sessions(state: ClusterControl, broker_id: int, broker_epoch: int,
                       now: int) -> FrozenMap[tuple[int, int], int]:
    """``trackBrokerHeartbeat``: every heartbeat refreshes (id, epoch) before any validation (§1.2)."""
    return state.sessions.set(_session_key(state, broker_id, broker_epoch), now)


def track_heartbeat(state: ClusterControl, broker_id: int, broker_epoch: int, now: int) -> ClusterControl:
    """``trackBrokerHeartbeat`` applied to the state (see :func:`refreshed_sessions`)."""
    return evolve(state, sessions=refreshed_sessions(state, broker_id, broker_epoch, now))


def heartbeat_reply(following: BrokerControlState, caught_up: bool) -> BrokerHeartbeatResponse:
    """``BrokerHeartbeatReply``: whether the broker caught up, and its next control state's flags (§1.5 step 8)."""
    return BrokerHeartbeatResponse(error=Errors.NONE, is_caught_up=caught_up, is_fenced=following.fenced,
                                   in_controlled_shutdown=following is broker_rules.CONTROLLED_SHUTDOWN,
                                   should_shut_down=following.should_shut_down)


def _transition_records(state: ClusterControl, broker_id: int, current: BrokerControlState,
                        following: BrokerControlState, order: Order = ()) -> list[MetadataRecord]:
    """§1.5 step 5: the records of a change of control state (none when it stays)."""
    if current is following:
        return []
    if following.fenced:
        return broker_fenced_records(state, broker_id, order)
    if following is broker_rules.UNFENCED:
        return broker_unfenced_records(state, broker_id, order)
    return broker_in_controlled_shutdown_records(state, broker_id, order)


def heartbeat(state: ClusterControl, request: BrokerHeartbeatRequest, now: int, *,
              authorized: bool = True, order: Order = ()) -> tuple[ClusterControl, Output[BrokerHeartbeatResponse]]:
    """``QuorumController.processBrokerHeartbeat`` then ``ReplicationControlManager.processBrokerHeartbeat``: refresh
    the session, check the epoch, move along the §1.5 table, write records, touch the entry, reply.

    After the transition's records, those of directories reported offline (:func:`directories_offline_records`) and,
    from MV 4.3-IV0, of a change of cordoned directories (:func:`directories_cordoned_records`).

    A stale or unknown epoch still refreshes its (id, epoch) session (``trackBrokerHeartbeat``). The entry is touched
    with the next state and the reported offset (``touch``) before the records are replayed (their replay may
    register it again, see :func:`registered_heartbeats`). Entering controlled shutdown then records the offset of
    the last record written (``maybeUpdateControlledShutdownOffset``), once.
    ``authorized`` is CLUSTER_ACTION on CLUSTER (``ControllerApis``), checked before anything else. ``order`` is
    the order Kafka changed partitions in (:data:`Order`).
    """
    # ControllerApis: only a broker (CLUSTER_ACTION on the cluster) may heartbeat, checked before the controller.
    if not authorized:
        return state, Output(response=BrokerHeartbeatResponse(error=Errors.CLUSTER_AUTHORIZATION_FAILED))
    # Only the active controller keeps heartbeat state: the broker must find the active one.
    if not state.active:
        return state, Output(response=BrokerHeartbeatResponse(error=Errors.NOT_CONTROLLER))
    broker_id, epoch = request.broker_id, request.broker_epoch
    register_offset = state.register_offsets.get(broker_id)
    registration = state.brokers.get(broker_id)
    stale = register_offset is None or registration is None or registration.epoch != epoch
    # 3.9: a heartbeat of an unregistered broker or an older registration is refused before any session is touched.
    if stale and not state.behaviour.sessions_keyed_by_epoch:
        return state, Output(response=BrokerHeartbeatResponse(error=Errors.STALE_BROKER_EPOCH))
    sessions = refreshed_sessions(state, broker_id, epoch, now)
    # 4.0+: the same refusal after the (id, epoch) session was refreshed (registerBrokerRecordOffset, checkBrokerEpoch).
    if stale:
        stale = BrokerHeartbeatResponse(error=Errors.STALE_BROKER_EPOCH)
        return evolve(state, sessions=sessions), Output(response=stale)
    current, following = calculate_next_broker_state(state, broker_id, request, register_offset)
    records = _transition_records(state, broker_id, current, following, order)
    state = evolve(state, sessions=sessions,
                   heartbeats=touched_heartbeats(state, broker_id, following.fenced, request.current_metadata_offset))
    if request.offline_log_dirs and mv.is_directory_assignment_supported(state.metadata_version):
        records += directories_offline_records(state, broker_id, request.offline_log_dirs,
                                               _rest_of_order(order, records))
    if request.cordoned_log_dirs is not None and mv.is_cordoned_log_dirs_supported(state.metadata_version):
        records += directories_cordoned_records(state, broker_id, request.cordoned_log_dirs)
    caught_up = broker_rules.is_caught_up(request.current_metadata_offset, register_offset)
    state, written = _append(state, records)
    state = _touch_contacts(state, written, now)
    if following is broker_rules.CONTROLLED_SHUTDOWN:  # processBatchEndOffset: the offset of the batch's last record
        state = maybe_update_controlled_shutdown_offset(
            state, broker_id, written[-1][0] if written else state.next_offset - 1)
    return state, Output(response=heartbeat_reply(following, caught_up), records=written)


def heartbeat_timed_out(state: ClusterControl, request: BrokerHeartbeatRequest,
                        now: int) -> tuple[ClusterControl, Output[BrokerHeartbeatResponse]]:
    """``processExpiredBrokerHeartbeat``: a heartbeat that waited past its deadline only touches the soft state (§1.5 step 10).

    Kafka checks the broker epoch first (``checkBrokerEpoch``): an unregistered broker or a stale epoch touches nothing.
    """
    # Only the active controller keeps heartbeat state: the broker must find the active one.
    if not state.active:
        return state, Output(response=BrokerHeartbeatResponse(error=Errors.NOT_CONTROLLER))
    registration = state.brokers.get(request.broker_id)
    current = registration is not None and registration.epoch == request.broker_epoch
    if state.behaviour.sessions_keyed_by_epoch or (current and request.broker_id in state.heartbeats):
        state = track_heartbeat(state, request.broker_id, request.broker_epoch, now)  # 3.9: the touch below's
    if current and request.broker_id in state.heartbeats:
        state = touch(state, request.broker_id, registration.fenced, request.current_metadata_offset)
    # The heartbeat waited in the controller's queue past its deadline: the broker retries with fresh state.
    return state, Output(response=BrokerHeartbeatResponse(error=Errors.REQUEST_TIMED_OUT))


# ---------------------------------------------------------------------------------------------
# Session expiry (§1.6)
# ---------------------------------------------------------------------------------------------

def expired_sessions(state: ClusterControl, now: int) -> list[tuple[int, int]]:
    """Tracker entries past their session timeout, in (id, epoch) order (3.9: only unfenced brokers')."""
    expired = [key for key, contact in state.sessions.items()
               if broker_rules.session_expired(contact, now, state.session_timeout)]
    if not state.behaviour.sessions_keyed_by_epoch:
        expired = [key for key in expired
                   if key[0] in state.heartbeats and not state.heartbeats[key[0]].fenced]
    return sorted(expired)


def fence_stale_broker(state: ClusterControl, now: int, which: Optional[tuple[int, int]] = None,
                       order: Order = ()) -> tuple[ClusterControl, Output[StaleBrokerFencing]]:
    """``maybeFenceOneStaleBroker``: drop at most one expired session; fence its broker if the epoch is current.

    Kafka takes the first expired entry in its map's iteration order; the reference takes
    ``which`` (it must be expired) or the smallest (id, epoch). An already-fenced broker is fenced
    again (a redundant fence record) in 4.0+. ``BrokerHeartbeatManager.fence`` marks the entry fenced before the
    fence record is replayed, so in 4.0+ the replay clears its reported and controlled-shutdown offsets.
    """
    if not state.active:
        return state, Output(response=StaleBrokerFencing(expired_session=None, fenced=False))
    expired = expired_sessions(state, now)
    if which is not None and which not in expired:
        raise ValueError(f"session {which} has not expired at {now}")
    if not expired:
        return state, Output(response=StaleBrokerFencing(expired_session=None, fenced=False))
    key = which if which is not None else expired[0]
    state = evolve(state, sessions=state.sessions.remove(key))
    broker_id, epoch = key
    registration = state.brokers.get(broker_id)
    if registration is None:
        not_fenced = StaleBrokerFencing(expired_session=key, fenced=False)
        return evolve(state, heartbeats=state.heartbeats.remove(broker_id)), Output(response=not_fenced)
    if state.behaviour.sessions_keyed_by_epoch and registration.epoch != epoch:
        return state, Output(response=StaleBrokerFencing(expired_session=key, fenced=False))
    records = broker_fenced_records(state, broker_id, order)
    state = evolve(state, heartbeats=state.heartbeats.set(broker_id, evolve(state.heartbeats[broker_id], fenced=True)))
    state, written = _append(state, records)
    fenced = StaleBrokerFencing(expired_session=key, fenced=True)
    return _touch_contacts(state, written, now), Output(response=fenced, records=written)


# ---------------------------------------------------------------------------------------------
# Unregistration (§1.8) and controller failover (§1.2 activation)
# ---------------------------------------------------------------------------------------------

def unregister_broker(state: ClusterControl, broker_id: int, *, authorized: bool = True,
                      order: Order = ()) -> tuple[ClusterControl, Output[UnregisterBrokerResponse]]:
    """``unregisterBroker``: leave every ISR, then every ELR, then UnregisterBrokerRecord v0 (§1.8).

    ``authorized`` is ALTER on CLUSTER (``ControllerApis``), checked first.
    """
    # ControllerApis: unregistering takes ALTER on the cluster, an administrator's right, checked first.
    if not authorized:
        return state, Output(response=UnregisterBrokerResponse(error=Errors.CLUSTER_AUTHORIZATION_FAILED))
    # Only the active controller writes the unregistration: the client must find the active one.
    if not state.active:
        return state, Output(response=UnregisterBrokerResponse(error=Errors.NOT_CONTROLLER))
    registration = state.brokers.get(broker_id)
    # Nothing to remove: the id is not registered.
    if registration is None:
        return state, Output(response=UnregisterBrokerResponse(error=Errors.BROKER_ID_NOT_REGISTERED,
                                                      message=f"Broker ID {broker_id} is not currently registered"))
    records: list[MetadataRecord] = list(partition_events.handle_broker_unregistered(
        state.brokers, state.topics, state.partitions, broker_id, **_partition_context(state), order=order))
    records.append(UnregisterBrokerRecord(broker_id=broker_id, broker_epoch=registration.epoch))
    state, written = _append(state, records)
    response = UnregisterBrokerResponse(error=Errors.NONE)
    return _touch_contacts(state, written, None), Output(response=response, records=written)


def deactivate(state: ClusterControl) -> ClusterControl:
    """Losing leadership drops all soft state: heartbeat entries and sessions (§1.2)."""
    return evolve(state, active=False, sessions=EMPTY_MAP, heartbeats=EMPTY_MAP)


def activate(state: ClusterControl, now: int) -> ClusterControl:
    """``ClusterControlManager.activate``: register every broker; only unfenced ones get a session (4.1+; 4.0 all).

    Only a controller that is not active claims leadership: told that it leads while it already does, Kafka keeps
    its soft state (Kafka 4.3 ``QuorumController.QuorumMetaLogListener.handleLeaderChange`` only moves the claim
    epoch; ``claim`` runs ``ClusterControlManager.activate`` for a standby controller alone).
    """
    if state.active:
        return state
    heartbeats: dict[int, HeartbeatState] = {}
    sessions: dict[tuple[int, int], int] = {}
    for b in state.brokers.values():
        heartbeats[b.broker_id] = _untouched_entry(b.fenced)
        if not b.fenced or state.behaviour.activation_sessions_for_fenced:
            sessions[_session_key(state, b.broker_id, b.epoch)] = now
    return evolve(state, active=True, sessions=FrozenMap(sessions), heartbeats=FrozenMap(heartbeats))


METADATA_TOPIC = "__cluster_metadata"
TOPIC_RESOURCE = 2  # ConfigResource.Type.TOPIC
BROKER_RESOURCE = 4  # ConfigResource.Type.BROKER
UNCLEAN_LEADER_ELECTION_ENABLE = "unclean.leader.election.enable"
MIN_IN_SYNC_REPLICAS = "min.insync.replicas"


def topic_config_records(state: ClusterControl, topic: TopicInfo) -> list[MetadataRecord]:
    """The ConfigRecords of a new topic's non-default configs, then a ClearElrRecord for it when ELR is on and
    min.insync.replicas is set (``ConfigurationControlManager.incrementalAlterConfig``,
    ``createClearElrRecordsAsNeeded``).

    Kafka walks the configs in its HashMap's order, which puts min.insync.replicas before
    unclean.leader.election.enable.
    """
    records: list[MetadataRecord] = []
    if topic.min_insync_replicas != 1:
        records.append(ConfigRecord(resource_type=TOPIC_RESOURCE, resource_name=topic.name, name=MIN_IN_SYNC_REPLICAS,
                                    value=str(topic.min_insync_replicas)))
    if topic.unclean_leader_election_enable:
        records.append(ConfigRecord(resource_type=TOPIC_RESOURCE, resource_name=topic.name,
                                    name=UNCLEAN_LEADER_ELECTION_ENABLE, value="true"))
    if state.elr_enabled and topic.min_insync_replicas != 1:
        records.append(ClearElrRecord(topic_name=topic.name))
    return records


def topic_name_error(state: ClusterControl, name: str) -> Errors:
    """``validateNewTopicNames`` and the existence check of ``createTopics``, in Kafka's order: an invalid name or
    one colliding with an existing topic's is INVALID_TOPIC_EXCEPTION, an existing name TOPIC_ALREADY_EXISTS (which
    Kafka puts over the collision error)."""
    existing = [t.name for t in state.topics.values()]
    # A topic name is a topic's identity for clients: two topics cannot share one.
    if name in existing:
        return Errors.TOPIC_ALREADY_EXISTS
    # Names become file and metric names: only safe characters, and no two names metrics could not tell apart.
    if not broker_rules.is_valid_topic_name(name) or any(broker_rules.topic_names_collide(name, other)
                                                          for other in existing):
        return Errors.INVALID_TOPIC_EXCEPTION
    return Errors.NONE


def assignment_error(state: ClusterControl, assignments: tuple[tuple[int, ...], ...]) -> Errors:
    """The manual assignment checks of ``createTopic``, partition by partition: ``validateManualPartitionAssignment``
    (an empty list, an unregistered or repeated broker, a replication factor unlike the previous partitions') and
    no active replica ("All brokers specified in the manual partition assignment for partition N are fenced or in
    controlled shutdown"), all INVALID_REPLICA_ASSIGNMENT (Kafka 3.9–4.3 ``ReplicationControlManager.createTopic``).
    Kafka 4.4 also refuses a broker whose log directories are all cordoned
    (``KafkaBehaviour.assignment_needs_uncordoned_dirs``)."""
    factor: Optional[int] = None
    for replicas in assignments:
        # Each replica must be a distinct registered broker (validateManualPartitionAssignment).
        if validate_manual_assignment(state.brokers, replicas) != Errors.NONE:
            return Errors.INVALID_REPLICA_ASSIGNMENT
        # 4.4+: a broker whose every directory is cordoned takes no new replicas (KIP-1066).
        if state.behaviour.assignment_needs_uncordoned_dirs and not all(state.brokers[r].has_uncordoned_dirs
                                                                        for r in replicas):
            return Errors.INVALID_REPLICA_ASSIGNMENT
        # All partitions of a topic have one replication factor.
        if factor is not None and len(replicas) != factor:
            return Errors.INVALID_REPLICA_ASSIGNMENT
        factor = len(replicas)
        # A partition with no active replica would have no leader from its creation.
        if not any(state.brokers[r].is_active for r in replicas):
            return Errors.INVALID_REPLICA_ASSIGNMENT
    return Errors.NONE


def create_topic(state: ClusterControl, topic: TopicInfo,
                 assignments: tuple[tuple[int, ...], ...]) -> tuple[ClusterControl, Output[Errors]]:
    """CreateTopics with a manual assignment (§2.1 creation rule; Kafka 4.3 ``ControllerApis.createTopics``,
    ``ReplicationControlManager.createTopics`` / ``createTopic``).

    ``__cluster_metadata`` is refused by ``ControllerApis`` (INVALID_REQUEST) before the controller; then the name
    (:func:`topic_name_error`) and the assignment (:func:`assignment_error`). The records: TopicRecord, the configs'
    records (:func:`topic_config_records`), one PartitionRecord per partition. The topic id is Kafka's draw
    (``Uuid.randomUuid``), stated in ``topic``. Without any partition Kafka would place replicas itself (the
    default partition count and replication factor), which this component does not model: refused.
    """
    # ControllerApis: the metadata log's own topic is internal to the controllers and cannot be created by a client.
    if topic.name == METADATA_TOPIC:
        return state, Output(response=Errors.INVALID_REQUEST)
    # Only the active controller creates topics: the client must find the active one.
    if not state.active:
        return state, Output(response=Errors.NOT_CONTROLLER)
    if not assignments:
        raise ValueError("create_topic needs a manual assignment of at least one partition (automatic placement is "
                         "not modelled)")
    error = topic_name_error(state, topic.name)
    if error == Errors.NONE:
        error = assignment_error(state, assignments)
    if error != Errors.NONE:
        return state, Output(response=error)
    records: list[MetadataRecord] = [TopicRecord(name=topic.name, topic_id=topic.topic_id),
                                     *topic_config_records(state, topic)]
    for partition_id, replicas in enumerate(assignments):
        error, partition = create_partition(state.brokers, topic.topic_id, partition_id, replicas,
                                            metadata_version=state.metadata_version)
        if partition is None:
            return state, Output(response=error)
        records.append(partition)
    state, written = _append(state, records)
    return evolve(state, topics=state.topics.set(topic.topic_id, topic)), Output(response=Errors.NONE, records=written)


def log_advanced(state: ClusterControl, next_offset: int) -> ClusterControl:
    """Other records (NoOpRecords every ``metadata.max.idle.interval.ms``, other components' writes) moved the log end."""
    if next_offset < state.next_offset:
        raise ValueError(f"the log end offset cannot go back from {state.next_offset} to {next_offset}")
    return evolve(state, next_offset=next_offset)
