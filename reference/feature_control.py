"""Finalized features and UpdateFeatures on the active controller (rules §1.11).

Kafka 4.x ``ControllerApis.handleUpdateFeatures``, ``QuorumController.updateFeatures``,
``ConfigurationControlManager.updateFeatures`` and ``FeatureControlManager.updateFeatures`` / ``updateFeature`` /
``reasonNotSupported`` / ``updateMetadataVersion``. The request is all or nothing: the first feature that fails
fails the whole request and nothing is written (4.x; Kafka 3.9 answered per feature and is not modelled here).
The controller quorum of the broker component is the local controller alone (node 0, no other controller
registration): the checks of other registered controllers are :func:`reason_not_supported`'s, which takes them as
an argument.

Where KIP-584 and Kafka differ: the KIP's ``allowDowngrade`` flag became ``UpgradeType`` (KIP-778); a
metadata.version downgrade that crosses a level which changed the metadata is refused whatever the upgrade type
("Unsafe metadata downgrade is not supported in this version", KAFKA-13896), although KIP-778 describes
UNSAFE_DOWNGRADE as performing it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Optional

from kraftspec.reference import broker_rules, metadata_version as mv
from kraftspec.reference.broker import (
    ELR_FEATURE,
    METADATA_VERSION,
    ClusterControl,
    Output,
    _append,
)
from kraftspec.reference.errors import Errors
from kraftspec.reference.feature_versions import KRAFT_VERSION, SHORT_MAX, FeatureVersions
from kraftspec.reference.frozen import evolve
from kraftspec.reference.raft_messages import IllegalUpgradeArgumentError, InvalidUpdateVersionError
from kraftspec.reference.records import ConfigRecord, FeatureLevelRecord, MetadataRecord, NoOpRecord

LOCAL_CONTROLLER_ID = 0  # the broker component's controller: the whole quorum (QuorumFeatures(0, ..., [0]))
BROKER_RESOURCE = 4  # ConfigResource.Type.BROKER
MIN_IN_SYNC_REPLICAS = "min.insync.replicas"

# FeatureUpdate.UpgradeType codes (UpdateFeaturesRequest v1+); any other code reads as UNKNOWN
UNKNOWN, UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 0, 1, 2, 3

Range = tuple[int, int]
"""A ``VersionRange``: inclusive (min, max)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class FeatureUpdate:
    """One ``FeatureUpdateKey`` of UpdateFeatures (apiKey 57): the feature, its new level, the upgrade type code."""

    feature: str
    max_version_level: int
    upgrade_type: int = UPGRADE


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateFeaturesRequest:
    """UpdateFeatures as ``QuorumController.updateFeatures`` reads it: the updates in request order, validate-only."""

    updates: tuple[FeatureUpdate, ...]
    validate_only: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateFeaturesResponse:
    """The top-level error and message (the per-feature results of v0–1 repeat them and are left out)."""

    error: Errors
    message: Optional[str] = None


# ---------------------------------------------------------------------------------------------
# Small rules (plain values, CrossHair-reachable)
# ---------------------------------------------------------------------------------------------

def range_text(low: int, high: int) -> str:
    """``VersionRange.toString``: ``N`` for one level, ``N+`` up to Short.MAX_VALUE, else ``A-B``."""
    if low == high:
        return str(low)
    if high == SHORT_MAX:
        return f"{low}+"
    return f"{low}-{high}"


def reason_not_supported_by(level: int, who: str, low: int, high: int) -> Optional[str]:
    """``QuorumFeatures.reasonNotSupported``: a level outside a node's range (as a broker's registration is checked,
    §1.3 check 5), worded by whether it has the feature."""
    if broker_rules.feature_level_supported(level, low, high):
        return None
    if high == 0:
        return f"{who} does not support this feature."
    return f"{who} only supports versions {range_text(low, high)}"


def metadata_changed(current: int, target: int, changing: frozenset[int]) -> bool:
    """``MetadataVersion.checkIfMetadataChanged``: some level above the lower one, up to the higher, changed the
    metadata (``didMetadataChange``)."""
    low, high = min(current, target), max(current, target)
    return any(level in changing for level in range(low + 1, high + 1))


def java_string_hash(text: str) -> int:
    """``String.hashCode`` (UTF-16 code units, 32-bit wrap-around), as a signed int."""
    data = text.encode("utf-16-be")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + int.from_bytes(data[i:i + 2], "big")) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def hash_map_order(names: tuple[str, ...]) -> tuple[str, ...]:
    """The iteration order of a ``java.util.HashMap`` filled with ``names`` in order (repeats kept once): by bucket
    ``(h ^ h >>> 16) & (capacity - 1)``, insertion order within one; the capacity doubles from 16 past 0.75 full."""
    unique = tuple(dict.fromkeys(names))
    capacity = 16
    while len(unique) > capacity * 3 // 4:
        capacity *= 2

    def bucket(name: str) -> int:
        h = java_string_hash(name) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (capacity - 1)

    return tuple(sorted(unique, key=lambda name: (bucket(name), unique.index(name))))


def timeline_order(ids: tuple[int, ...]) -> tuple[int, ...]:
    """The iteration order of a ``TimelineHashMap`` (or set) keyed by ints, ``ids`` given in the order they were first
    put in: by slot (``BaseHashTable.findSlot``'s Fibonacci hashing; the table grown from 2 slots to hold the keys at
    most 0.75 full, here from their number now, as tables never shrink), and within one slot the latest first
    (``SnapshottableHashTable.CurrentIterator`` takes a slot's entries from its end)."""
    capacity = 2
    while len(ids) * 3 > capacity * 4:
        capacity *= 2
    shift = 65 - capacity.bit_length()

    def slot(key: int) -> int:
        return ((key * -7046029254386353131) & 0xFFFFFFFFFFFFFFFF) >> shift

    return tuple(sorted(reversed(ids), key=slot))


# ---------------------------------------------------------------------------------------------
# The checks of one feature
# ---------------------------------------------------------------------------------------------

def reason_not_supported(name: str, level: int, local: Mapping[str, Range],
                         brokers: Mapping[int, Mapping[str, Range]], controllers: Mapping[int, Mapping[str, Range]],
                         quorum_ids: tuple[int, ...], metadata_version: int) -> Optional[str]:
    """``FeatureControlManager.reasonNotSupported``: the local controller's range, then every registered broker's (in
    its registration map's order, :func:`timeline_order` of ``brokers`` in registration order), then, from MV 3.7-IV0, every other registered controller's, and every quorum
    member must have registered. A node that does not list the feature supports only level 0."""
    low, high = local.get(name, (0, 0))
    reason = reason_not_supported_by(level, f"Local controller {LOCAL_CONTROLLER_ID}", low, high)
    if reason is not None:
        return reason
    for broker_id in timeline_order(tuple(brokers)):
        low, high = brokers[broker_id].get(name, (0, 0))
        reason = reason_not_supported_by(level, f"Broker {broker_id}", low, high)
        if reason is not None:
            return reason
    if not mv.is_controller_registration_supported(metadata_version):
        return None
    for controller_id in timeline_order(tuple(controllers)):
        if controller_id == LOCAL_CONTROLLER_ID:
            continue
        low, high = controllers[controller_id].get(name, (0, 0))
        reason = reason_not_supported_by(level, f"Controller {controller_id}", low, high)
        if reason is not None:
            return reason
    for controller_id in quorum_ids:
        # A quorum member that never registered may not support the new level.
        if controller_id != LOCAL_CONTROLLER_ID and controller_id not in controllers:
            return f"controller {controller_id} has not registered, and may not support this feature"
    return None


def _invalid(name: str, level: int, message: str) -> UpdateFeaturesResponse:
    """``invalidUpdateVersion``: INVALID_UPDATE_VERSION naming the feature and level."""
    return UpdateFeaturesResponse(error=Errors.INVALID_UPDATE_VERSION,
                                  message=f"Invalid update version {level} for feature {name}. {message}")


def metadata_version_error(current: int, level: int, unsafe: bool,
                           versions: FeatureVersions) -> Optional[UpdateFeaturesResponse]:
    """``FeatureControlManager.updateMetadataVersion``: the level must be one this Kafka defines; a downgrade may not
    cross a level that changed the metadata, UNSAFE_DOWNGRADE included (not supported, KAFKA-13896)."""
    low, high = versions.metadata_versions
    # A level this Kafka does not define has no meaning for its brokers and controllers.
    if not low <= level <= high:
        return UpdateFeaturesResponse(error=Errors.INVALID_UPDATE_VERSION,
                                      message=f"Invalid metadata.version {level}. Valid versions are from {low} to "
                                              f"{high}.")
    # A downgrade across a metadata change could leave records the older level cannot read.
    if level < current and metadata_changed(current, level, versions.metadata_changing):
        reason = ("Unsafe metadata downgrade is not supported in this version." if unsafe else
                  "Refusing to perform the requested downgrade because it might delete metadata information.")
        prefix = (f"Unsupported metadata.version downgrade from {current} to {level}." if
                  versions.downgrade_names_versions else f"Invalid metadata.version {level}.")
        return UpdateFeaturesResponse(error=Errors.INVALID_UPDATE_VERSION, message=f"{prefix} {reason}")
    return None


def dependency_error(name: str, level: int, proposed: Mapping[str, int], versions: FeatureVersions) -> Optional[str]:
    """``Feature.featureFromName``, ``fromFeatureLevel`` and ``Feature.validateVersion``: a known feature at a level it
    defines, whose dependencies the proposed levels (the finalized ones with every update of the request) meet."""
    levels = versions.features.get(name)
    if levels is None:
        return f"Feature {name} not found."
    if level not in levels:
        return f"No feature:{name} with feature level {level}"
    metadata_version = proposed.get(METADATA_VERSION)
    if level >= 1 and (metadata_version is None or metadata_version < mv.MINIMUM_4X):
        return (f"{name} could not be set to {level} because it depends on metadata.version={mv.MINIMUM_4X} "
                f"({mv.name_of(mv.MINIMUM_4X)})")
    for dependency, minimum in levels[level].items():
        if proposed.get(dependency, -1) < minimum:
            return f"{name} could not be set to {level} because it depends on {dependency} level {minimum}"
    return None


@dataclass(frozen=True, slots=True, kw_only=True)
class FeatureDecision:
    """What ``updateFeature`` decided for one feature: an error, or the records it adds (and a kraft.version level the
    Raft client takes)."""

    error: Optional[UpdateFeaturesResponse] = None
    records: tuple[MetadataRecord, ...] = ()
    kraft_version: Optional[int] = None


def kraft_upgrade_error(name: str, level: int, raft_refusal: Optional[Exception]) -> Optional[UpdateFeaturesResponse]:
    """``FeatureControlManager.updateFeature`` around ``upgradeKRaftVersion``: what the Raft client threw
    (``raft.step`` of ``UpgradeKRaftVersion``, rules §3.15) becomes the answer: an ``ApiException``
    (InvalidUpdateVersionException) its own error and message (``ApiError.fromThrowable``), an
    IllegalArgumentException INVALID_UPDATE_VERSION naming the feature. Anything else (the Raft client's
    NotLeaderException, an IllegalStateException) is not caught there: the controller's event handler answers
    NOT_CONTROLLER or UNKNOWN_SERVER_ERROR and fails over (``EventHandlerExceptionInfo``), re-raised here."""
    if raft_refusal is None:
        return None
    if isinstance(raft_refusal, InvalidUpdateVersionError):
        return UpdateFeaturesResponse(error=Errors.INVALID_UPDATE_VERSION, message=str(raft_refusal))
    if isinstance(raft_refusal, IllegalUpgradeArgumentError):
        return _invalid(name, level, str(raft_refusal))
    raise raft_refusal


def update_feature(state: ClusterControl, update: FeatureUpdate, proposed: Mapping[str, int],
                   raft_refusal: Optional[Exception] = None) -> FeatureDecision:
    """``FeatureControlManager.updateFeature``: the checks of one feature in Kafka's order, then its record.

    metadata.version also gets :func:`metadata_version_error`; from 4.1 kraft.version is upgraded by the Raft client
    (``KRaftVersionAccessor.upgradeKRaftVersion``: ``raft_refusal`` what it threw, None when it returned, see
    :func:`kraft_upgrade_error`) with a NoOpRecord to wait on, and is never downgraded (4.0: an ordinary feature at
    level 0); any other feature gets :func:`dependency_error` and a FeatureLevelRecord v0 (level 0 removes it).
    """
    name, level, upgrade_type = update.feature, update.max_version_level, update.upgrade_type
    # An upgrade type this controller does not know cannot be honoured safely.
    if upgrade_type not in (UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE):
        return FeatureDecision(error=_invalid(name, level, "The controller does not support the given upgrade type."))
    versions = state.behaviour.features
    by_raft = name == KRAFT_VERSION and versions.kraft_version_by_raft_client
    current = state.finalized_features.get(name, 0) if by_raft or name != KRAFT_VERSION else 0
    # Feature levels are non-negative; 0 means the feature is off.
    if level < 0:
        return FeatureDecision(error=_invalid(name, level, "A feature version cannot be less than 0."))
    # Every node must understand the new level before it is finalized.
    reason = reason_not_supported(name, level, state.controller_features,
                                  {b: {f.name: (f.min_supported, f.max_supported) for f in r.features}
                                   for b, r in state.brokers.items()}, {}, (LOCAL_CONTROLLER_ID,),
                                  state.metadata_version)
    if reason is not None:
        return FeatureDecision(error=_invalid(name, level, reason))
    # Lowering a level must be asked for explicitly.
    if level < current and upgrade_type == UPGRADE:
        return FeatureDecision(error=_invalid(name, level, "Can't downgrade the version of this feature without "
                                                           "setting the upgrade type to either safe or unsafe "
                                                           "downgrade."))
    # A downgrade request must not raise the level.
    if level > current and upgrade_type != UPGRADE:
        return FeatureDecision(error=_invalid(name, level, "Can't downgrade to a newer version."))
    if name == METADATA_VERSION:
        error = metadata_version_error(current, level, upgrade_type == UNSAFE_DOWNGRADE, versions)
        if error is not None:
            return FeatureDecision(error=error)
        return FeatureDecision(records=(FeatureLevelRecord(name=name, feature_level=level),))
    if by_raft:
        if upgrade_type == UPGRADE:
            # The Raft client refuses a level it does not know.
            if level not in versions.features[KRAFT_VERSION]:
                return FeatureDecision(error=_invalid(name, level, f"Unknown KRaft feature level: {level}"))
            error = kraft_upgrade_error(name, level, raft_refusal)
            if error is not None:
                return FeatureDecision(error=error)
            return FeatureDecision(records=(NoOpRecord(),), kraft_version=level)
        # kraft.version only moves up (KIP-853): the voters' records cannot be taken back.
        if level != current:
            return FeatureDecision(error=_invalid(name, level, "Can't downgrade the version of this feature."))
        return FeatureDecision()
    # A feature level may need other features at some level (Feature.validateVersion).
    reason = dependency_error(name, level, proposed, versions)
    if reason is not None:
        return FeatureDecision(error=_invalid(name, level, reason))
    return FeatureDecision(records=(FeatureLevelRecord(name=name, feature_level=level),))


def elr_safety_records(state: ClusterControl) -> list[MetadataRecord]:
    """``ConfigurationControlManager.maybeGenerateElrSafetyRecords``: before ELR is enabled, a cluster-level
    min.insync.replicas (the static default 1) unless one is set, and every broker-level one removed."""
    records: list[MetadataRecord] = []
    if "" not in state.min_insync_configs:
        records.append(ConfigRecord(resource_type=BROKER_RESOURCE, resource_name="", name=MIN_IN_SYNC_REPLICAS,
                                    value="1"))
    for broker in timeline_order(tuple(int(b) for b in state.min_insync_configs if b)):
        records.append(ConfigRecord(resource_type=BROKER_RESOURCE, resource_name=str(broker),
                                    name=MIN_IN_SYNC_REPLICAS, value=None))
    return records


def update_features(state: ClusterControl, request: UpdateFeaturesRequest, *, authorized: bool = True,
                    raft_refusal: Optional[Exception] = None) -> tuple[ClusterControl, Output[UpdateFeaturesResponse]]:
    """UpdateFeatures (§1.11; Kafka 4.x ``ControllerApis.handleUpdateFeatures``, ``QuorumController.updateFeatures``,
    ``ConfigurationControlManager.updateFeatures``, ``FeatureControlManager.updateFeatures``).

    ALTER on CLUSTER first, then the active controller; the features are checked in the order of Kafka's HashMap of
    the updates (:func:`hash_map_order`; a repeated feature counts once, with its last level and type), each against
    the finalized levels with every update of the request applied (``proposedUpdatedVersions``). The first error
    fails the whole request ("The update failed for all features since the following feature had an error: ...")
    and writes nothing; validate-only writes nothing either. Enabling ELR writes :func:`elr_safety_records` first.
    ``raft_refusal``: what the Raft client's ``upgradeKRaftVersion`` threw for the request's kraft.version upgrade
    (None: it returned), §3.15.
    """
    # ControllerApis: changing cluster-wide features takes ALTER on the cluster.
    if not authorized:
        return state, Output(response=UpdateFeaturesResponse(error=Errors.CLUSTER_AUTHORIZATION_FAILED))
    # Only the active controller writes feature levels: the client must find the active one.
    if not state.active:
        return state, Output(response=UpdateFeaturesResponse(error=Errors.NOT_CONTROLLER))
    if not state.behaviour.updates_features_atomically:
        raise ValueError(f"UpdateFeatures of Kafka {state.behaviour.name} (per-feature results) is not modelled")
    latest = {u.feature: u for u in request.updates}
    proposed = {name: level for name, level in state.finalized_features.items() if name != KRAFT_VERSION}
    proposed.update({name: u.max_version_level for name, u in latest.items()})
    records: list[MetadataRecord] = []
    kraft_version: Optional[int] = None
    for name in hash_map_order(tuple(u.feature for u in request.updates)):
        decision = update_feature(state, latest[name], proposed, raft_refusal)
        if decision.error is not None:
            failed = UpdateFeaturesResponse(error=decision.error.error, message=(
                f"The update failed for all features since the following feature had an error: "
                f"{decision.error.message}"))
            return state, Output(response=failed)
        records.extend(decision.records)
        if decision.kraft_version is not None:
            kraft_version = decision.kraft_version
    if request.validate_only:
        return state, Output(response=UpdateFeaturesResponse(error=Errors.NONE))
    if latest.get(ELR_FEATURE) is not None and latest[ELR_FEATURE].max_version_level > 0:
        records = elr_safety_records(state) + records
    state, written = _append(state, records)
    if kraft_version is not None:
        state = evolve(state, finalized_features=state.finalized_features.set(KRAFT_VERSION, kraft_version))
    return state, Output(response=UpdateFeaturesResponse(error=Errors.NONE), records=written)
