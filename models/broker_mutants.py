"""Deliberately wrong variants of the broker-lifecycle rules, and the layers expected to catch each.

Layers: ``scenario`` (tests/test_broker_scenarios.py, tests/test_feature_scenarios.py), ``model`` (models/broker.py),
``crosshair`` (proofs/broker.py), ``agree`` (spec/BrokerLifecycle.tla via ``kraftspec agree broker``; a
``feature_control`` mutant: spec/FeatureLevels.tla via ``kraftspec agree features``).
``tests/test_broker_mutants.py`` applies each one and checks that every named layer fails.
"""

from __future__ import annotations

from typing import Mapping, Optional

from kraftspec.mutants import Mutant
from kraftspec.reference import broker, feature_control
from kraftspec.reference.broker import ClusterControl, HeartbeatState
from kraftspec.reference.frozen import FrozenMap
from kraftspec.reference.records import MetadataRecord


def session_expired_inclusive(contact_time: int, now: int, session_timeout: int) -> bool:
    """Wrong: ``>=`` for ``>``, so a session expires at exactly contact + timeout."""
    return now > contact_time and contact_time + session_timeout <= now


def always_caught_up(current_metadata_offset: int, register_record_offset: int) -> bool:
    """Wrong: unfences a broker before it replayed its own RegisterBrokerRecord."""
    return True


def duplicate_ignoring_incarnation(has_existing: bool, same_incarnation: bool, existing_session_valid: bool) -> bool:
    """Wrong: ignores the incarnation id, so a live broker cannot even amend its own registration."""
    return has_existing and existing_session_valid


def never_duplicate(has_existing: bool, same_incarnation: bool, existing_session_valid: bool) -> bool:
    """Wrong: no duplicate check, so a new incarnation takes over a broker id whose session is live."""
    return False


def refreshed_sessions_unfenced_only(state: ClusterControl, broker_id: int, broker_epoch: int,
                                     now: int) -> FrozenMap[tuple[int, int], int]:
    """Wrong: a heartbeat does not refresh the session of a fenced broker."""
    registration = state.brokers.get(broker_id)
    if registration is not None and registration.fenced:
        return state.sessions
    return state.sessions.set((broker_id, broker_epoch), now)


def shutdown_ignoring_lagging_brokers(leads_partitions: bool, controlled_shutdown_offset: int,
                                      lowest_active_offset: int) -> bool:
    """Wrong: grants shutdown before every active broker replayed the controlled-shutdown records."""
    return not leads_partitions


def fence_without_partition_changes(state: ClusterControl, broker_id: int, order: broker.Order = ()) -> list[MetadataRecord]:
    """Wrong: fences the broker but leaves it leader and in every ISR."""
    return [broker._fence_record(state, state.brokers[broker_id])]


def registered_keeping_unchanged_entries(state: ClusterControl, broker_id: int,
                                         fenced: bool) -> FrozenMap[int, HeartbeatState]:
    """Wrong (what the reference once took for 3.9's ``register``; Kafka 3.9.1's forgets the offset too): replaying a
    fence, unfence or registration change leaves an entry whose flag the heartbeat already set, so a just-unfenced
    broker counts at the offset it reported, and a broker in controlled shutdown fenced by session expiry stays in
    controlled shutdown."""
    entry = state.heartbeats.get(broker_id)
    if entry is not None and entry.fenced == fenced:
        return state.heartbeats
    if entry is None:
        return state.heartbeats.set(broker_id, broker._untouched_entry(fenced))
    return state.heartbeats.set(broker_id, broker._touched_entry(entry, fenced, entry.metadata_offset))


def reason_not_supported_locally_only(name: str, level: int, local: Mapping[str, feature_control.Range],
                                      brokers: Mapping[int, Mapping[str, feature_control.Range]],
                                      controllers: Mapping[int, Mapping[str, feature_control.Range]],
                                      quorum_ids: tuple[int, ...], metadata_version: int) -> Optional[str]:
    """Wrong: only the local controller's range is checked, so a level the registered brokers cannot read is
    finalized (and a downgrade below their minimum too)."""
    low, high = local.get(name, (0, 0))
    return feature_control.reason_not_supported_by(level, f"Local controller {feature_control.LOCAL_CONTROLLER_ID}",
                                                   low, high)


MUTANTS: list[Mutant] = [
    Mutant("broker-session-expiry-inclusive", "broker", "session expiry uses >= instead of >",
           "kraftspec.reference.broker_rules:session_expired", session_expired_inclusive,
           ("scenario", "crosshair", "agree")),
    # not "agree": since 4.0 the unfence record's replay forgets the reported offset, so an early unfence reaches the
    # very state a caught-up one does (the spec's UnfencedOnlyWhenCaughtUp reads the step's parameters instead)
    Mutant("broker-unfence-before-caught-up", "broker", "unfencing before the broker reached its registration record",
           "kraftspec.reference.broker_rules:is_caught_up", always_caught_up,
           ("scenario", "model", "crosshair")),
    Mutant("broker-duplicate-ignores-incarnation", "broker", "the duplicate-registration check ignores the incarnation id",
           "kraftspec.reference.broker_rules:is_duplicate_registration", duplicate_ignoring_incarnation,
           ("scenario", "crosshair", "agree")),
    Mutant("broker-no-duplicate-check", "broker", "a new incarnation may take over a live session",
           "kraftspec.reference.broker_rules:is_duplicate_registration", never_duplicate,
           ("scenario", "model", "crosshair", "agree")),
    Mutant("broker-heartbeat-skips-fenced-session", "broker", "a heartbeat does not refresh a fenced broker's session",
           "kraftspec.reference.broker:refreshed_sessions", refreshed_sessions_unfenced_only,
           ("scenario", "agree")),
    Mutant("broker-shutdown-ignores-lagging-brokers", "broker",
           "controlled shutdown granted before active brokers caught up",
           "kraftspec.reference.broker_rules:shutdown_granted", shutdown_ignoring_lagging_brokers,
           ("scenario", "crosshair", "agree")),
    Mutant("broker-fence-keeps-leadership", "broker", "fencing leaves the broker leader and in the ISR",
           "kraftspec.reference.broker:broker_fenced_records", fence_without_partition_changes,
           ("scenario", "model", "agree")),
    Mutant("broker-register-keeps-reported-offset", "broker",
           "replaying a broker record keeps the offset the heartbeat reported",
           "kraftspec.reference.broker:registered_heartbeats", registered_keeping_unchanged_entries,
           ("scenario", "agree")),
    Mutant("feature-update-ignores-broker-ranges", "broker",
           "UpdateFeatures checks only the local controller's supported range, not the registered brokers'",
           "kraftspec.reference.feature_control:reason_not_supported", reason_not_supported_locally_only,
           ("scenario", "model", "agree")),  # agree: spec/FeatureLevels.tla; and Kafka: tests/test_kafka_broker.py
]
