"""metadata.version feature levels and the behaviour gates keyed on them (rules §5.6).

A level is a plain ``int``; the named constants and gate functions keep comparisons in one place.
"""

from __future__ import annotations

from typing import Final

LEVELS: Final[dict[str, int]] = {
    "3.0-IV1": 1, "3.1-IV0": 2, "3.2-IV0": 3, "3.3-IV0": 4, "3.3-IV1": 5, "3.3-IV2": 6,
    "3.3-IV3": 7, "3.4-IV0": 8, "3.5-IV0": 9, "3.5-IV1": 10, "3.5-IV2": 11, "3.6-IV0": 12,
    "3.6-IV1": 13, "3.6-IV2": 14, "3.7-IV0": 15, "3.7-IV1": 16, "3.7-IV2": 17, "3.7-IV3": 18,
    "3.7-IV4": 19, "3.8-IV0": 20, "3.9-IV0": 21, "4.0-IV0": 22, "4.0-IV1": 23, "4.0-IV2": 24,
    "4.0-IV3": 25, "4.1-IV0": 26, "4.1-IV1": 27, "4.2-IV0": 28, "4.2-IV1": 29, "4.3-IV0": 30,
    "4.4-IV0": 31, "4.4-IV1": 32, "4.4-IV2": 33,
}
NAMES: Final[dict[int, str]] = {level: name for name, level in LEVELS.items()}

MV_3_3_IV2: Final = 6
MV_3_3_IV3: Final = 7
MV_3_4_IV0: Final = 8
MV_3_6_IV0: Final = 12
MV_3_6_IV1: Final = 13
MV_3_7_IV0: Final = 15
MV_3_7_IV2: Final = 17
MV_4_0_IV1: Final = 23
MV_4_1_IV0: Final = 26
MV_4_3_IV0: Final = 30
MINIMUM_4X: Final = MV_3_3_IV3
LATEST_PRODUCTION: Final = MV_4_3_IV0


def name_of(level: int) -> str:
    """The ``X.Y-IVn`` name of a level, or ``level N`` for one Kafka never defined."""
    return NAMES.get(level, f"level {level}")


def from_version_string(text: str) -> int:
    """Parse ``X.Y-IVn``, ``X.Y`` (latest IV of that release) or ``X.Y.Z`` (``MetadataVersion.fromVersionString``)."""
    if text in LEVELS:
        return LEVELS[text]
    parts = text.split(".")
    if len(parts) in (2, 3) and all(p.isdigit() for p in parts):
        prefix = f"{parts[0]}.{parts[1]}-IV"
        matches = [lvl for name, lvl in LEVELS.items() if name.startswith(prefix)]
        if matches:
            return max(matches)
    raise ValueError(f"unknown metadata.version {text!r}")


def writes_fence_records(mv: int) -> bool:
    """Below 3.3-IV2 fencing writes FenceBrokerRecord/UnfenceBrokerRecord, else BrokerRegistrationChangeRecord."""
    return mv < MV_3_3_IV2


def register_broker_record_version(mv: int) -> int:
    """``MetadataVersion.registerBrokerRecordVersion``: 4 from 4.3-IV0, 3 from 3.7-IV2, 2 from 3.4-IV0, else 1."""
    if mv >= MV_4_3_IV0:
        return 4
    if mv >= MV_3_7_IV2:
        return 3
    if mv >= MV_3_4_IV0:
        return 2
    return 1


def partition_change_record_version(mv: int) -> int:
    """``MetadataVersion.partitionChangeRecordVersion``: 2 from 4.0-IV1, 1 from 3.7-IV2, else 0."""
    if mv >= MV_4_0_IV1:
        return 2
    if mv >= MV_3_7_IV2:
        return 1
    return 0


def is_directory_assignment_supported(mv: int) -> bool:
    """JBOD directory assignment (log dirs in registrations and partitions) from 3.7-IV2."""
    return mv >= MV_3_7_IV2


def is_leader_epoch_bump_required_on_isr_shrink(mv: int) -> bool:
    """KAFKA-15021: before 3.6-IV0 an ISR shrink alone bumps the leader epoch."""
    return mv < MV_3_6_IV0


def is_controller_registration_supported(mv: int) -> bool:
    """KIP-919 controller registrations exist from 3.7-IV0."""
    return mv >= MV_3_7_IV0


def is_cordoned_log_dirs_supported(mv: int) -> bool:
    """KIP-1066: heartbeats report cordoned log directories, written to the registration, from 4.3-IV0."""
    return mv >= MV_4_3_IV0


def is_in_controlled_shutdown_supported(mv: int) -> bool:
    """KIP-841: the InControlledShutdown flag is written from 3.3-IV3."""
    return mv >= MV_3_3_IV3


def is_cordoned_dirs_supported(mv: int) -> bool:
    """Cordoned log directories (RegisterBrokerRecord v4, BrokerRegistrationChangeRecord v3) from 4.3-IV0."""
    return mv >= MV_4_3_IV0
