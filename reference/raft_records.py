"""KRaft control records in the metadata log (rules §3.11, rules §5.2 and §5.9).

A control batch (attribute bit 0x20) holds records whose key is ``[int16 version=0][int16 type]``.
Source: ``clients/.../record/internal/ControlRecordType.java``, ``ControlRecordUtils.java``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from enum import IntEnum

CONTROL_BATCH_ATTRIBUTE = 0x20
LEADER_CHANGE_CURRENT_VERSION = 0


class ControlRecordType(IntEnum):
    """``ControlRecordType``: the int16 type in a control record key; anything unknown reads as UNKNOWN."""

    UNKNOWN = -1
    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6


def control_record_key(record_type: ControlRecordType) -> bytes:
    """The 4-byte key ``[int16 version 0][int16 type]`` written for a control record (§3.11)."""
    return struct.pack(">hh", 0, int(record_type))


def parse_control_record_key(key: bytes) -> ControlRecordType:
    """``ControlRecordType.parse``: needs at least 4 bytes; key versions above 0 read as 0; unknown → UNKNOWN.

    Raises ``ValueError`` for a key shorter than 4 bytes or with a negative version (Kafka: InvalidRecordException).
    """
    if len(key) < 4:
        raise ValueError(f"control record key has {len(key)} bytes, needs at least 4")
    version, code = struct.unpack_from(">hh", key)
    if version < 0:
        raise ValueError(f"control record key version {version} is negative")
    try:
        return ControlRecordType(code)
    except ValueError:
        return ControlRecordType.UNKNOWN


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaderChangeMessage:
    """``LeaderChangeMessage`` v0, the first record of every leader's epoch (§3.6, §3.11).

    ``voters`` are all voter ids of the epoch, ``granting_voters`` those that granted the vote (leader included).
    """

    leader_id: int
    voters: tuple[int, ...]
    granting_voters: tuple[int, ...]
    version: int = LEADER_CHANGE_CURRENT_VERSION

    record_type = ControlRecordType.LEADER_CHANGE
