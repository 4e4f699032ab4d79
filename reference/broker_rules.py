"""Small rule functions of broker registration and heartbeats, kept CrossHair-reachable (plain ints and bools).

Each is one named rule of rules §1; the transitions in ``broker.py`` call them by name.
"""

from __future__ import annotations

from enum import Enum

NO_CONTROLLED_SHUTDOWN = -1
NO_BROKER_EPOCH = -2  # ``storedBrokerEpoch`` when there is no existing registration (§1.3)
INT64_MAX = 2**63 - 1  # ``lowestActiveOffset`` with no active broker


class BrokerControlState(Enum):
    """``BrokerControlState``: the controller's view of a heartbeating broker (§1.5)."""

    FENCED = "fenced"
    UNFENCED = "unfenced"
    CONTROLLED_SHUTDOWN = "controlled shutdown"
    SHUTDOWN_NOW = "shutdown now"

    @property
    def fenced(self) -> bool:
        """``BrokerControlState.fenced``: the reply's ``isFenced``, true for FENCED and SHUTDOWN_NOW."""
        return self is FENCED or self is SHUTDOWN_NOW

    @property
    def should_shut_down(self) -> bool:
        """``BrokerControlState.shouldShutDown``: only SHUTDOWN_NOW tells the broker to shut down."""
        return self is SHUTDOWN_NOW


# Kafka's names for the members, as the rules below read them
FENCED = BrokerControlState.FENCED
UNFENCED = BrokerControlState.UNFENCED
CONTROLLED_SHUTDOWN = BrokerControlState.CONTROLLED_SHUTDOWN
SHUTDOWN_NOW = BrokerControlState.SHUTDOWN_NOW


def session_expired(contact_time: int, now: int, session_timeout: int) -> bool:
    """``BrokerHeartbeatTracker.isExpired``: strictly past ``contact + timeout``; a future contact never expires (§1.2)."""
    return now > contact_time and contact_time + session_timeout < now


def is_caught_up(current_metadata_offset: int, register_record_offset: int) -> bool:
    """A broker is caught up once its reported offset reached its RegisterBrokerRecord's own offset (§1.5 step 8)."""
    return current_metadata_offset >= register_record_offset


def is_duplicate_registration(has_existing: bool, same_incarnation: bool, existing_session_valid: bool) -> bool:
    """DUPLICATE_BROKER_REGISTRATION: another incarnation while the existing epoch's session is valid (§1.3 check 2).

    The same incarnation may always re-register (an amendment).
    """
    return has_existing and existing_session_valid and not same_incarnation


def feature_level_supported(finalized_level: int, min_supported: int, max_supported: int) -> bool:
    """A finalized feature level must lie in the broker's inclusive supported range (§1.3 check 5)."""
    return min_supported <= finalized_level <= max_supported


def is_clean_shutdown(detection_enabled: bool, stored_broker_epoch: int, previous_broker_epoch: int) -> bool:
    """Clean shutdown: detection on (request v3+, Kafka 4.0+) and previousBrokerEpoch = stored epoch (-2 if none) (§1.3)."""
    return detection_enabled and stored_broker_epoch == previous_broker_epoch


def shutdown_granted(leads_partitions: bool, controlled_shutdown_offset: int, lowest_active_offset: int) -> bool:
    """Controlled shutdown completes when the broker leads nothing and every active broker reached its offset (§1.7)."""
    return not leads_partitions and controlled_shutdown_offset <= lowest_active_offset


def current_control_state(fenced: bool, controlled_shutdown_offset: int) -> BrokerControlState:
    """``currentBrokerState``: shutting down (offset >= 0) wins over fenced (§1.5 step 4)."""
    if controlled_shutdown_offset >= 0:
        return CONTROLLED_SHUTDOWN
    if fenced:
        return FENCED
    return UNFENCED


def next_control_state(current: BrokerControlState, want_fence: bool, want_shut_down: bool, caught_up: bool,
                       leads_partitions: bool, controlled_shutdown_offset: int,
                       lowest_active_offset: int) -> BrokerControlState:
    """``calculateNextBrokerState``: the heartbeat transition table of rules §1.5 step 4."""
    if current is UNFENCED:
        if want_fence:
            return SHUTDOWN_NOW if want_shut_down else FENCED
        if want_shut_down:
            return CONTROLLED_SHUTDOWN if leads_partitions else SHUTDOWN_NOW
        return UNFENCED
    if current is FENCED:
        if want_shut_down:
            return SHUTDOWN_NOW
        if not want_fence and caught_up:
            return UNFENCED
        return FENCED
    if shutdown_granted(leads_partitions, controlled_shutdown_offset, lowest_active_offset):
        return SHUTDOWN_NOW
    return CONTROLLED_SHUTDOWN


def is_reserved_directory(most_significant: int, least_significant: int) -> bool:
    """Reserved directory ids: most-significant 64 bits zero and least-significant below 100 (§1.3 check 4).

    The halves are signed, as Java's ``long``s: ``DirectoryId.reserved`` compares signed, so a negative low half is reserved too.
    """
    return most_significant == 0 and least_significant < 100


MAX_TOPIC_NAME_LENGTH = 249


def is_valid_topic_name(name: str) -> bool:
    """``Topic.validate``: not empty, not "." or "..", at most 249 characters, only ASCII alphanumerics, '.', '_', '-'."""
    if name in ("", ".", "..") or len(name) > MAX_TOPIC_NAME_LENGTH:
        return False
    return all("a" <= c <= "z" or "A" <= c <= "Z" or "0" <= c <= "9" or c in "._-" for c in name)


def topic_names_collide(name: str, existing: str) -> bool:
    """``Topic.hasCollisionChars`` / ``unifyCollisionChars``: two names with '.' or '_' that are equal once every '.'
    is read as '_' (metric names could not tell them apart)."""
    def has_collision_chars(topic: str) -> bool:
        return "." in topic or "_" in topic
    return (has_collision_chars(name) and has_collision_chars(existing)
            and name.replace(".", "_") == existing.replace(".", "_"))
