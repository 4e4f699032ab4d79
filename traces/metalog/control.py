"""KRaft control records: the 4-byte key and the unframed control messages (rules §5.2, §5.9).

The key is ``[int16 keyVersion][int16 type]``; a reader accepts ≥ 4 bytes and treats key versions
above 0 as 0. The value is the message in flexible encoding without the metadata frame; its first
field ``Version`` (int16) selects the schema version decoded.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Optional

from kraftspec.traces.metalog.errors import DecodeError
from kraftspec.traces.metalog.schema import CONTROL_MESSAGES, Decoder, Writer, compile_decoder, compile_encoder

ABORT, COMMIT, LEADER_CHANGE, SNAPSHOT_HEADER, SNAPSHOT_FOOTER, KRAFT_VERSION, KRAFT_VOTERS = range(7)
TYPE_NAMES = {ABORT: "AbortMarker", COMMIT: "CommitMarker", LEADER_CHANGE: "LeaderChange",
              SNAPSHOT_HEADER: "SnapshotHeader", SNAPSHOT_FOOTER: "SnapshotFooter",
              KRAFT_VERSION: "KRaftVersion", KRAFT_VOTERS: "Voters"}
"""ControlRecordType (§5.2); any other type is UNKNOWN and ignored."""

_DECODERS: dict[tuple[int, int], Decoder] = {
    (t, v): compile_decoder(s.fields, v) for t, s in CONTROL_MESSAGES.items() for v in range(s.lo, s.hi + 1)
}
_ENCODERS: dict[tuple[int, int], Writer] = {
    (t, v): compile_encoder(s.fields, v) for t, s in CONTROL_MESSAGES.items() for v in range(s.lo, s.hi + 1)
}


class ControlRecord(NamedTuple):
    """A decoded control record: its type, name and (for KRaft types 2–6) the message fields."""

    type: int
    name: str
    fields: Optional[dict[str, Any]]


def control_type(key: Optional[bytes]) -> int:
    """The control type from a control record key (§5.2: ≥ 4 bytes; key version ignored)."""
    if key is None or len(key) < 4:
        raise DecodeError(0, f"control record key has {0 if key is None else len(key)} byte(s), needs 4")
    return int.from_bytes(key[2:4], "big", signed=True)


def decode_control(key: Optional[bytes], value: Optional[bytes]) -> ControlRecord:
    """Decode a control record. ABORT/COMMIT markers and unknown types carry no decoded fields.

    Positions in a :class:`DecodeError` are relative to the value (the key is checked first, position 0).
    """
    kind = control_type(key)
    schema = CONTROL_MESSAGES.get(kind)
    if schema is None:
        return ControlRecord(kind, TYPE_NAMES.get(kind, f"UnknownControl({kind})"), None)
    if value is None or len(value) < 2:
        raise DecodeError(0, f"{schema.name} value too short for its Version field")
    version = int.from_bytes(value[0:2], "big", signed=True)
    decoder = _DECODERS.get((kind, version))
    if decoder is None:
        raise DecodeError(0, f"{schema.name} has no version {version} (valid {schema.lo}-{schema.hi})")
    fields, end = decoder(value, 0, len(value))
    if end != len(value):
        raise DecodeError(end, f"{len(value) - end} byte(s) of garbage after the {schema.name} body")
    return ControlRecord(kind, TYPE_NAMES[kind], fields)


def encode_control(kind: int, fields: dict[str, Any]) -> tuple[bytes, bytes]:
    """``(key, value)`` of a control record whose ``version`` field selects the schema version."""
    out = bytearray()
    _ENCODERS[(kind, fields["version"])](fields, out)
    return b"\x00\x00" + kind.to_bytes(2, "big"), bytes(out)
