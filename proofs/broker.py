"""CrossHair contracts on the broker-lifecycle rules (rules §1); each post-condition is a fact, not the code.

Run: ``kraftspec prove broker``.
"""

from __future__ import annotations

from kraftspec.reference import broker_rules, feature_control


def session_expired(contact_time: int, now: int, session_timeout: int) -> bool:
    """A session is live through exactly contact + timeout; later it is expired, unless the contact is in the future (§1.2, scenario 5).

    pre: session_timeout >= 0
    post: (now <= contact_time + session_timeout) or (now <= contact_time) or __return__
    post: not (now <= contact_time + session_timeout) or not __return__
    post: not (now <= contact_time) or not __return__
    """
    return broker_rules.session_expired(contact_time, now, session_timeout)


def is_caught_up(current_metadata_offset: int, register_record_offset: int) -> bool:
    """Caught up exactly when the reported offset reached the RegisterBrokerRecord's offset (§1.5 step 8).

    post: __return__ == (current_metadata_offset >= register_record_offset)
    """
    return broker_rules.is_caught_up(current_metadata_offset, register_record_offset)


def is_duplicate_registration(has_existing: bool, same_incarnation: bool, session_valid: bool) -> bool:
    """Only another incarnation of a registered broker with a valid session is refused (§1.3 check 2).

    post: __return__ == (has_existing and session_valid and not same_incarnation)
    """
    return broker_rules.is_duplicate_registration(has_existing, same_incarnation, session_valid)


def feature_level_supported(finalized_level: int, min_supported: int, max_supported: int) -> bool:
    """A finalized level is accepted exactly when it lies in the broker's inclusive range (§1.3 check 5).

    post: __return__ == (min_supported <= finalized_level and finalized_level <= max_supported)
    """
    return broker_rules.feature_level_supported(finalized_level, min_supported, max_supported)


def shutdown_granted(leads_partitions: bool, controlled_shutdown_offset: int, lowest_active_offset: int) -> bool:
    """Shutdown is granted exactly when the broker leads nothing and every active broker reached its offset (§1.7).

    pre: controlled_shutdown_offset >= 0
    post: __return__ == ((not leads_partitions) and controlled_shutdown_offset <= lowest_active_offset)
    """
    return broker_rules.shutdown_granted(leads_partitions, controlled_shutdown_offset, lowest_active_offset)


def is_clean_shutdown(detection_enabled: bool, stored_broker_epoch: int, previous_broker_epoch: int) -> bool:
    """A shutdown is clean only with detection on and the broker's previous epoch equal to the stored one (§1.3).

    post: detection_enabled or not __return__
    post: stored_broker_epoch == previous_broker_epoch or not __return__
    """
    return broker_rules.is_clean_shutdown(detection_enabled, stored_broker_epoch, previous_broker_epoch)


def next_control_state(fenced: bool, controlled_shutdown_offset: int, want_fence: bool, want_shut_down: bool,
                         caught_up: bool, leads_partitions: bool, lowest_active_offset: int) -> str:
    """The heartbeat table's safety facts (§1.5 step 4, §1.7).

    A fenced broker is unfenced only if caught up and not asking to stay fenced; a broker enters
    controlled shutdown only while it leads something; shutdown from controlled shutdown needs no
    leadership and every active broker past its offset; wantShutDown never unfences.

    pre: controlled_shutdown_offset >= -1
    post: not (controlled_shutdown_offset < 0 and fenced and __return__ == "UNFENCED") or (caught_up and not want_fence)
    post: not (controlled_shutdown_offset < 0 and __return__ == "CONTROLLED_SHUTDOWN") or leads_partitions
    post: not (controlled_shutdown_offset >= 0 and __return__ == "SHUTDOWN_NOW") or (not leads_partitions and controlled_shutdown_offset <= lowest_active_offset)
    post: not want_shut_down or __return__ != "UNFENCED"
    """
    current = broker_rules.current_control_state(fenced, controlled_shutdown_offset)
    return broker_rules.next_control_state(current, want_fence, want_shut_down, caught_up, leads_partitions,
                                           controlled_shutdown_offset, lowest_active_offset).name


def is_reserved_directory(most_significant: int, least_significant: int) -> bool:
    """Directory ids with a zero high half and a low half below 100, compared as signed longs, are reserved (§1.3 check 4).

    pre: -2**63 <= most_significant < 2**63 and -2**63 <= least_significant < 2**63
    post: __return__ == (most_significant == 0 and least_significant < 100)
    """
    return broker_rules.is_reserved_directory(most_significant, least_significant)



def metadata_changed(current: int, target: int) -> bool:
    """Moving metadata.version between two levels of one side of 4.0-IV1 (level 23, which changed the metadata)
    changes no metadata, and crossing it always does (§1.11; Kafka 4.3's ``didMetadataChange`` table).

    pre: 18 <= current <= 29 and 18 <= target <= 29
    post: __return__ == ((current < 23) != (target < 23))
    """
    return feature_control.metadata_changed(current, target, frozenset({7, 8, 11, 13, 14, 15, 17, 23, 30}))
