"""The schema table of every metadata record and KRaft control message, and its compiled codecs.

``METADATA_RECORDS`` transcribes metadata-records §5 and §8, ``CONTROL_MESSAGES`` §9. One generic
flexible-encoding codec (§4) is compiled from the table once per (schema, version) into closures;
decoded values are dicts keyed by the snake_case field names, lists are tuples and uuids are their
22-character base64 text.
"""

from __future__ import annotations

import base64
import functools
import re
import struct
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from kraftspec.traces.metalog.errors import DecodeError

Reader = Callable[[bytes, int], "tuple[Any, int]"]
Writer = Callable[[Any, bytearray], None]
Decoder = Callable[[bytes, int], "tuple[dict[str, Any], int]"]


@dataclass(frozen=True)
class Field:
    """One schema field (metadata-records §8 columns): ``type`` is ``int32``, ``[]int32``, ``[]Struct``, ``Struct``..."""

    name: str
    type: str
    versions: int
    nullable: Optional[int] = None
    tag: Optional[int] = None
    default: Any = None
    fields: tuple["Field", ...] = ()

    @property
    def key(self) -> str:
        """The snake_case key of the field in decoded dicts."""
        return snake_case(self.name)


@dataclass(frozen=True)
class Schema:
    """A message: its name, valid versions ``lo..hi`` and fields in schema order."""

    name: str
    lo: int
    hi: int
    fields: tuple[Field, ...] = field(default=())


def snake_case(name: str) -> str:
    """``IsMigratingZkBroker`` -> ``is_migrating_zk_broker``; ``KRaftVersion`` -> ``kraft_version``."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name.replace("KRaft", "Kraft")).lower()


def F(name: str, type_: str, versions: str = "0+", *, nullable: Optional[str] = None, tag: Optional[int] = None,
      default: Any = None, fields: tuple[Field, ...] = ()) -> Field:
    """Table-row shorthand: ``versions``/``nullable`` as ``"N+"``; tagged fields are tagged in all their versions (§8)."""
    return Field(name, type_, int(versions.rstrip("+")), None if nullable is None else int(nullable.rstrip("+")),
                 tag, default, fields)


_ENDPOINT = (F("Name", "string"), F("Host", "string"), F("Port", "uint16"), F("SecurityProtocol", "int16"))
_FEATURE = (F("Name", "string"), F("MinSupportedVersion", "int16"), F("MaxSupportedVersion", "int16"))

METADATA_RECORDS: dict[int, Schema] = {
    0: Schema("RegisterBrokerRecord", 0, 4, (
        F("BrokerId", "int32"), F("IsMigratingZkBroker", "bool", "2+", default=False), F("IncarnationId", "uuid"),
        F("BrokerEpoch", "int64"), F("EndPoints", "[]BrokerEndpoint", fields=_ENDPOINT),
        F("Features", "[]BrokerFeature", fields=_FEATURE), F("Rack", "string", nullable="0+"),
        F("Fenced", "bool", default=True), F("InControlledShutdown", "bool", "1+", default=False),
        F("LogDirs", "[]uuid", "3+", tag=0), F("CordonedLogDirs", "[]uuid", "4+", nullable="4+", tag=1))),
    1: Schema("UnregisterBrokerRecord", 0, 0, (F("BrokerId", "int32"), F("BrokerEpoch", "int64"))),
    2: Schema("TopicRecord", 0, 0, (F("Name", "string"), F("TopicId", "uuid"))),
    3: Schema("PartitionRecord", 0, 2, (
        F("PartitionId", "int32", default=-1), F("TopicId", "uuid"), F("Replicas", "[]int32"), F("Isr", "[]int32"),
        F("RemovingReplicas", "[]int32"), F("AddingReplicas", "[]int32"), F("Leader", "int32", default=-1),
        F("LeaderRecoveryState", "int8", tag=0, default=0), F("LeaderEpoch", "int32", default=-1),
        F("PartitionEpoch", "int32", default=-1), F("Directories", "[]uuid", "1+"),
        F("EligibleLeaderReplicas", "[]int32", "2+", nullable="2+", tag=1),
        F("LastKnownElr", "[]int32", "2+", nullable="2+", tag=2))),
    4: Schema("ConfigRecord", 0, 0, (
        F("ResourceType", "int8"), F("ResourceName", "string"), F("Name", "string"),
        F("Value", "string", nullable="0+"))),
    5: Schema("PartitionChangeRecord", 0, 2, (
        F("PartitionId", "int32", default=-1), F("TopicId", "uuid"),
        F("Isr", "[]int32", nullable="0+", tag=0), F("Leader", "int32", tag=1, default=-2),
        F("Replicas", "[]int32", nullable="0+", tag=2), F("RemovingReplicas", "[]int32", nullable="0+", tag=3),
        F("AddingReplicas", "[]int32", nullable="0+", tag=4), F("LeaderRecoveryState", "int8", tag=5, default=-1),
        F("Directories", "[]uuid", "1+", nullable="1+", tag=8),
        F("EligibleLeaderReplicas", "[]int32", "2+", nullable="2+", tag=6),
        F("LastKnownElr", "[]int32", "2+", nullable="2+", tag=7))),
    7: Schema("FenceBrokerRecord", 0, 0, (F("Id", "int32"), F("Epoch", "int64"))),
    8: Schema("UnfenceBrokerRecord", 0, 0, (F("Id", "int32"), F("Epoch", "int64"))),
    9: Schema("RemoveTopicRecord", 0, 0, (F("TopicId", "uuid"),)),
    10: Schema("DelegationTokenRecord", 0, 0, (
        F("Owner", "string"), F("Requester", "string"), F("Renewers", "[]string"), F("IssueTimestamp", "int64"),
        F("MaxTimestamp", "int64"), F("ExpirationTimestamp", "int64"), F("TokenId", "string"))),
    11: Schema("UserScramCredentialRecord", 0, 0, (
        F("Name", "string"), F("Mechanism", "int8"), F("Salt", "bytes"), F("StoredKey", "bytes"),
        F("ServerKey", "bytes"), F("Iterations", "int32"))),
    12: Schema("FeatureLevelRecord", 0, 0, (F("Name", "string"), F("FeatureLevel", "int16"))),
    14: Schema("ClientQuotaRecord", 0, 0, (
        F("Entity", "[]EntityData", fields=(F("EntityType", "string"), F("EntityName", "string", nullable="0+"))),
        F("Key", "string"), F("Value", "float64"), F("Remove", "bool"))),
    15: Schema("ProducerIdsRecord", 0, 0, (
        F("BrokerId", "int32"), F("BrokerEpoch", "int64", default=-1), F("NextProducerId", "int64"))),
    17: Schema("BrokerRegistrationChangeRecord", 0, 3, (
        F("BrokerId", "int32"), F("BrokerEpoch", "int64"), F("Fenced", "int8", tag=0),
        F("InControlledShutdown", "int8", "1+", tag=1), F("LogDirs", "[]uuid", "2+", tag=2),
        F("CordonedLogDirs", "[]uuid", "3+", nullable="3+", tag=3))),
    18: Schema("AccessControlEntryRecord", 0, 0, (
        F("Id", "uuid"), F("ResourceType", "int8"), F("ResourceName", "string"), F("PatternType", "int8"),
        F("Principal", "string"), F("Host", "string"), F("Operation", "int8"), F("PermissionType", "int8"))),
    19: Schema("RemoveAccessControlEntryRecord", 0, 0, (F("Id", "uuid"),)),
    20: Schema("NoOpRecord", 0, 0),
    21: Schema("ZkMigrationStateRecord", 0, 0, (F("ZkMigrationState", "int8"),)),
    22: Schema("RemoveUserScramCredentialRecord", 0, 0, (F("Name", "string"), F("Mechanism", "int8"))),
    23: Schema("BeginTransactionRecord", 0, 0, (F("Name", "string", nullable="0+", tag=0),)),
    24: Schema("EndTransactionRecord", 0, 0),
    25: Schema("AbortTransactionRecord", 0, 0, (F("Reason", "string", nullable="0+", tag=0),)),
    26: Schema("RemoveDelegationTokenRecord", 0, 0, (F("TokenId", "string"),)),
    27: Schema("RegisterControllerRecord", 0, 0, (
        F("ControllerId", "int32"), F("IncarnationId", "uuid"), F("ZkMigrationReady", "bool"),
        F("EndPoints", "[]ControllerEndpoint", fields=_ENDPOINT),
        F("Features", "[]ControllerFeature", fields=_FEATURE))),
    28: Schema("ClearElrRecord", 0, 0, (F("TopicName", "string"),)),
}
"""apiKey -> schema (metadata-records §5, §8). UnregisterControllerRecord (29) is trunk-only (MV 4.4-IV2) and §8
gives no field table for it, so it decodes as an unknown apiKey; apiKeys 6, 13 and 16 are unassigned or removed."""

_VOTER = (F("VoterId", "int32"), F("VoterDirectoryId", "uuid", "1+"))

CONTROL_MESSAGES: dict[int, Schema] = {
    2: Schema("LeaderChangeMessage", 0, 1, (
        F("Version", "int16"), F("LeaderId", "int32"), F("Voters", "[]Voter", fields=_VOTER),
        F("GrantingVoters", "[]Voter", fields=_VOTER))),
    3: Schema("SnapshotHeaderRecord", 0, 0, (F("Version", "int16"), F("LastContainedLogTimestamp", "int64"))),
    4: Schema("SnapshotFooterRecord", 0, 0, (F("Version", "int16"),)),
    5: Schema("KRaftVersionRecord", 0, 0, (F("Version", "int16"), F("KRaftVersion", "int16"))),
    6: Schema("VotersRecord", 0, 0, (
        F("Version", "int16"),
        F("Voters", "[]Voter", fields=(
            F("VoterId", "int32"), F("VoterDirectoryId", "uuid"),
            F("Endpoints", "[]Endpoint", fields=(F("Name", "string"), F("Host", "string"), F("Port", "uint16"))),
            F("KRaftVersionFeature", "KRaftVersionFeature", fields=(
                F("MinSupportedVersion", "int16"), F("MaxSupportedVersion", "int16"))))))),
}
"""Control record type -> message schema (metadata-records §2 control types, §9 tables)."""

# ---------------------------------------------------------------------------------------------------
# Primitive codecs (metadata-records §4).

_FIXED = {"int16": struct.Struct(">h"), "int32": struct.Struct(">i"), "int64": struct.Struct(">q"),
          "uint16": struct.Struct(">H"), "float64": struct.Struct(">d")}
_MIN_SIZE = {"int8": 1, "int16": 2, "int32": 4, "int64": 8, "uint16": 2, "float64": 8, "bool": 1, "uuid": 16,
             "string": 1, "bytes": 1}
ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"


def read_uvarint(buf: bytes, pos: int, max_bytes: int = 5) -> tuple[int, int]:
    """Unsigned varint, 7 bits a byte, low group first (§4); at most ``max_bytes`` bytes."""
    value = shift = 0
    for i in range(max_bytes):
        if pos >= len(buf):
            raise DecodeError(pos, "varint runs past the end of the value")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7
    raise DecodeError(pos - max_bytes, f"varint longer than {max_bytes} bytes")


def write_uvarint(value: int, out: bytearray) -> None:
    """Inverse of :func:`read_uvarint`."""
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


@functools.lru_cache(maxsize=1 << 16)
def uuid_text(raw: bytes) -> str:
    """A uuid's 22-character URL-safe base64 text without padding (§4); cached, as topic ids recur."""
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def uuid_bytes(text: str) -> bytes:
    """Inverse of :func:`uuid_text`."""
    raw = base64.urlsafe_b64decode(text + "==")
    if len(raw) != 16:
        raise ValueError(f"not a uuid: {text!r}")
    return raw


def _need(buf: bytes, pos: int, size: int, what: str) -> None:
    if pos + size > len(buf):
        raise DecodeError(pos, f"{what} needs {size} byte(s), {len(buf) - pos} left")


def _fixed_reader(kind: str) -> Reader:
    unpack = _FIXED[kind].unpack_from
    size = _FIXED[kind].size

    def read(buf: bytes, pos: int) -> tuple[Any, int]:
        if pos + size > len(buf):
            raise DecodeError(pos, f"{kind} needs {size} byte(s), {len(buf) - pos} left")
        return unpack(buf, pos)[0], pos + size
    return read


def _read_int8(buf: bytes, pos: int) -> tuple[int, int]:
    _need(buf, pos, 1, "int8")
    value = buf[pos]
    return (value - 256 if value > 127 else value), pos + 1


def _read_bool(buf: bytes, pos: int) -> tuple[bool, int]:
    _need(buf, pos, 1, "bool")
    return buf[pos] != 0, pos + 1


def _read_uuid(buf: bytes, pos: int) -> tuple[str, int]:
    _need(buf, pos, 16, "uuid")
    return uuid_text(buf[pos:pos + 16]), pos + 16


def _length_reader(what: str, nullable: bool, elem_size: int) -> Callable[[bytes, int], "tuple[int, int]"]:
    """Compact length ``n+1`` (``0`` = null): refuses lengths the remaining bytes cannot hold before allocating."""
    def read(buf: bytes, pos: int) -> tuple[int, int]:
        start = pos
        raw, pos = read_uvarint(buf, pos)
        length = raw - 1
        if length < 0:
            if not nullable:
                raise DecodeError(start, f"null {what} in a non-nullable field")
            return -1, pos
        if length * elem_size > len(buf) - pos:
            raise DecodeError(start, f"{what} length {length} exceeds the {len(buf) - pos} byte(s) left")
        return length, pos
    return read


def _string_reader(nullable: bool) -> Reader:
    length_of = _length_reader("string", nullable, 1)

    def read(buf: bytes, pos: int) -> tuple[Optional[str], int]:
        length, pos = length_of(buf, pos)
        if length < 0:
            return None, pos
        try:
            return buf[pos:pos + length].decode("utf-8"), pos + length
        except UnicodeDecodeError as exc:
            raise DecodeError(pos + exc.start, "string is not UTF-8") from None
    return read


def _bytes_reader(nullable: bool) -> Reader:
    length_of = _length_reader("bytes", nullable, 1)

    def read(buf: bytes, pos: int) -> tuple[Optional[bytes], int]:
        length, pos = length_of(buf, pos)
        if length < 0:
            return None, pos
        return bytes(buf[pos:pos + length]), pos + length
    return read


def _min_size(f: Field, version: int) -> int:
    """Fewest bytes one element of the field's type takes at ``version`` (to refuse hostile array lengths)."""
    kind = f.type[2:] if f.type.startswith("[]") else f.type
    if kind in _MIN_SIZE:
        return _MIN_SIZE[kind]
    return 1 + sum(1 if sub.type.startswith("[]") else _min_size(sub, version)
                   for sub in f.fields if sub.tag is None and version >= sub.versions)


def _array_reader(f: Field, version: int, nullable: bool) -> Reader:
    element = _element_reader(f, version)
    length_of = _length_reader("array", nullable, _min_size(f, version))

    def read(buf: bytes, pos: int) -> tuple[Optional[tuple[Any, ...]], int]:
        count, pos = length_of(buf, pos)
        if count < 0:
            return None, pos
        items = []
        for _ in range(count):
            item, pos = element(buf, pos)
            items.append(item)
        return tuple(items), pos
    return read


def _element_reader(f: Field, version: int) -> Reader:
    kind = f.type[2:] if f.type.startswith("[]") else f.type
    if kind in _MIN_SIZE:
        return _scalar_reader(kind, False)
    return compile_decoder(f.fields, version)


def _scalar_reader(kind: str, nullable: bool) -> Reader:
    if kind in _FIXED:
        return _fixed_reader(kind)
    return {"int8": lambda n: _read_int8, "bool": lambda n: _read_bool, "uuid": lambda n: _read_uuid,
            "string": _string_reader, "bytes": _bytes_reader}[kind](nullable)


def field_reader(f: Field, version: int) -> Reader:
    """The reader of one field's value at ``version`` (nullability is per version)."""
    nullable = f.nullable is not None and version >= f.nullable
    if f.type.startswith("[]"):
        return _array_reader(f, version, nullable)
    if f.fields:
        return compile_decoder(f.fields, version)
    return _scalar_reader(f.type, nullable)


def default_of(f: Field) -> Any:
    """The schema default (§8 ``default`` column; empty = the type's zero value)."""
    if f.default is not None:
        return f.default
    if f.nullable is not None and f.tag is not None:
        return None
    if f.type.startswith("[]"):
        return ()
    if f.fields:
        return {sub.key: default_of(sub) for sub in f.fields}
    return {"bool": False, "uuid": ZERO_UUID, "string": "", "bytes": b"", "float64": 0.0}.get(f.type, 0)


def compile_decoder(fields: tuple[Field, ...], version: int) -> Decoder:
    """A closure decoding a struct at ``version``: inline fields in order, then the tagged-field section (§4).

    Fields absent at ``version`` decode to their default, so every decoded dict has every key of the schema.
    """
    inline = tuple((f.key, field_reader(f, version)) for f in fields if version >= f.versions and f.tag is None)
    tagged = {f.tag: (f.key, field_reader(f, version)) for f in fields if version >= f.versions and f.tag is not None}
    defaults = {f.key: default_of(f) for f in fields}

    def decode(buf: bytes, pos: int) -> tuple[dict[str, Any], int]:
        out = dict(defaults)
        for key, read in inline:
            out[key], pos = read(buf, pos)
        count, pos = read_uvarint(buf, pos)
        for _ in range(count):
            tag, pos = read_uvarint(buf, pos)
            size, pos = read_uvarint(buf, pos)
            end = pos + size
            if end > len(buf):
                raise DecodeError(pos, f"tagged field {tag} of {size} byte(s) runs past the end")
            spec = tagged.get(tag)
            if spec is not None:
                key, read = spec
                out[key], used = read(buf[:end], pos)
                if used != end:
                    raise DecodeError(used, f"tagged field {tag} declares {size} byte(s), its value used {used - pos}")
            pos = end
        return out, pos
    return decode


# ---------------------------------------------------------------------------------------------------
# Writers: the inverse codec, used to plant records in tests and to build logs.

def _scalar_writer(kind: str) -> Writer:
    if kind in _FIXED:
        pack = _FIXED[kind].pack
        return lambda v, out: out.extend(pack(v))
    if kind == "int8":
        return lambda v, out: out.append(v & 0xFF)
    if kind == "bool":
        return lambda v, out: out.append(1 if v else 0)
    if kind == "uuid":
        return lambda v, out: out.extend(uuid_bytes(v))

    def write(v: Any, out: bytearray) -> None:
        if v is None:
            out.append(0)
            return
        raw = v.encode("utf-8") if kind == "string" else v
        write_uvarint(len(raw) + 1, out)
        out.extend(raw)
    return write


def field_writer(f: Field, version: int) -> Writer:
    """The writer of one field's value at ``version`` (inverse of :func:`field_reader`)."""
    if f.type.startswith("[]"):
        kind = f.type[2:]
        element = _scalar_writer(kind) if kind in _MIN_SIZE else compile_encoder(f.fields, version)

        def write_array(v: Any, out: bytearray) -> None:
            if v is None:
                out.append(0)
                return
            write_uvarint(len(v) + 1, out)
            for item in v:
                element(item, out)
        return write_array
    if f.fields:
        return compile_encoder(f.fields, version)
    return _scalar_writer(f.type)


def compile_encoder(fields: tuple[Field, ...], version: int) -> Writer:
    """A closure encoding a struct dict at ``version``; tagged fields are written only when not default (§4)."""
    inline = tuple((f.key, field_writer(f, version)) for f in fields if version >= f.versions and f.tag is None)
    tagged = sorted((f.tag, f.key, field_writer(f, version), default_of(f))
                    for f in fields if version >= f.versions and f.tag is not None)

    def encode(value: dict[str, Any], out: bytearray) -> None:
        for key, write in inline:
            write(value[key], out)
        present = [(tag, key, write) for tag, key, write, default in tagged if value.get(key, default) != default]
        write_uvarint(len(present), out)
        for tag, key, write in present:
            body = bytearray()
            write(value[key], body)
            write_uvarint(tag, out)
            write_uvarint(len(body), out)
            out.extend(body)
    return encode


# ---------------------------------------------------------------------------------------------------
# Frame (metadata-records §3) and the compiled tables.

DECODERS: dict[tuple[int, int], Decoder] = {
    (api_key, v): compile_decoder(s.fields, v) for api_key, s in METADATA_RECORDS.items() for v in range(s.lo, s.hi + 1)
}
ENCODERS: dict[tuple[int, int], Writer] = {
    (api_key, v): compile_encoder(s.fields, v) for api_key, s in METADATA_RECORDS.items() for v in range(s.lo, s.hi + 1)
}
NOOP_API_KEY = 20
NOOP_VALUE = b"\x01\x14\x00\x00"
"""The whole value of NoOpRecord v0 (metadata-records §4 worked example), decoded without the generic path."""


def decode_metadata_value(value: bytes) -> tuple[int, int, dict[str, Any]]:
    """Decode a framed record value to ``(api_key, version, fields)`` (metadata-records §3).

    Raises :class:`DecodeError` for frame version ≠ 1 (0 = the 2.8 preview format), an apiKey or version
    beyond int16, an unknown apiKey, a version the apiKey does not have, a malformed body, or garbage after it.
    """
    if value == NOOP_VALUE:
        return NOOP_API_KEY, 0, {}
    frame, pos = read_uvarint(value, 0)
    if frame != 1:
        if frame == 0:
            raise DecodeError(0, "frame version 0 is the unsupported Kafka 2.8 preview format")
        raise DecodeError(0, f"unknown frame version {frame}")
    key_pos = pos
    api_key, pos = read_uvarint(value, pos)
    if api_key > 0x7FFF:
        raise DecodeError(key_pos, f"apiKey {api_key} does not fit in int16")
    version_pos = pos
    version, pos = read_uvarint(value, pos)
    if version > 0x7FFF:
        raise DecodeError(version_pos, f"record version {version} does not fit in int16")
    schema = METADATA_RECORDS.get(api_key)
    if schema is None:
        raise DecodeError(key_pos, f"unknown metadata record apiKey {api_key}")
    decoder = DECODERS.get((api_key, version))
    if decoder is None:
        raise DecodeError(version_pos, f"{schema.name} has no version {version} (valid {schema.lo}-{schema.hi})")
    fields, end = decoder(value, pos)
    if end != len(value):
        raise DecodeError(end, f"{len(value) - end} byte(s) of garbage after the {schema.name} v{version} body")
    return api_key, version, fields


def encode_metadata_value(api_key: int, version: int, fields: dict[str, Any]) -> bytes:
    """Frame and encode a record (inverse of :func:`decode_metadata_value`); missing fields take their default."""
    schema = METADATA_RECORDS[api_key]
    full = {f.key: default_of(f) for f in schema.fields}
    full.update(fields)
    out = bytearray()
    for number in (1, api_key, version):
        write_uvarint(number, out)
    ENCODERS[(api_key, version)](full, out)
    return bytes(out)


def record_name(api_key: int) -> str:
    """The record's name for reports (``apiKey N`` when unknown)."""
    schema = METADATA_RECORDS.get(api_key)
    return schema.name if schema else f"apiKey {api_key}"
