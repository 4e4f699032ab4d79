"""The schema table of every metadata record and KRaft control message, and its compiled codecs.

``METADATA_RECORDS`` transcribes rules §5.5 and §5.8, ``CONTROL_MESSAGES`` §5.9. The flexible
encoding (§5.4) is compiled from the table once per (schema, version), at import: each decoder into the
source of one Python function (no hand-written decoder per record), each encoder into closures.
Decoded values are dicts keyed by the snake_case field names, lists are tuples and uuids are their
22-character base64 text.
"""

from __future__ import annotations

import base64
import functools
import re
import struct
from dataclasses import dataclass, field
from typing import Any, Callable, NoReturn, Optional

from kraftspec.traces.metalog.errors import DecodeError

Writer = Callable[[Any, bytearray], None]


@dataclass(frozen=True)
class Field:
    """One schema field (rules §5.8 columns): ``type`` is ``int32``, ``[]int32``, ``[]Struct``, ``Struct``..."""

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
    """Table-row shorthand: ``versions``/``nullable`` as ``"N+"``; tagged fields are tagged in all their versions (§5.8)."""
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
"""apiKey -> schema (rules §5.5, §5.8). UnregisterControllerRecord (29) is trunk-only (MV 4.4-IV2) and §5.8
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
"""Control record type -> message schema (rules §5.2 control types, §5.9 tables)."""

# ---------------------------------------------------------------------------------------------------
# Primitive codecs (rules §5.4).

_FIXED = {"int16": struct.Struct(">h"), "int32": struct.Struct(">i"), "int64": struct.Struct(">q"),
          "uint16": struct.Struct(">H"), "float64": struct.Struct(">d")}
_MIN_SIZE = {"int8": 1, "int16": 2, "int32": 4, "int64": 8, "uint16": 2, "float64": 8, "bool": 1, "uuid": 16,
             "string": 1, "bytes": 1}
_CODES = {"int8": "b", "int16": "h", "int32": "i", "int64": "q", "uint16": "H", "float64": "d", "bool": "?", "uuid": "16s"}
"""The fixed-size types as ``struct`` codes (bool: any non-zero byte is true; uuid: its 16 raw bytes)."""
_SMALL_ARRAYS = {code: tuple(struct.Struct(f">{n}{code}") for n in range(32))
                 for kind, code in _CODES.items() if kind != "uuid"}
"""Arrays of up to 31 fixed-size numbers or bools decode with one of these; longer ones build their Struct."""
ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"


def read_uvarint(buf: bytes, pos: int, limit: int) -> tuple[int, int]:
    """Unsigned varint, 7 bits a byte, low group first (§5.4), at most 5 bytes, ending before ``limit``."""
    value = shift = 0
    for _ in range(5):
        if pos >= limit:
            raise DecodeError(pos, "varint runs past the end of the value")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7
    raise DecodeError(pos - 5, "varint longer than 5 bytes")


def write_uvarint(value: int, out: bytearray) -> None:
    """Inverse of :func:`read_uvarint`."""
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


@functools.lru_cache(maxsize=1 << 16)
def uuid_text(raw: bytes) -> str:
    """A uuid's 22-character URL-safe base64 text without padding (§5.4); cached, as topic ids recur."""
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def uuid_bytes(text: str) -> bytes:
    """Inverse of :func:`uuid_text`."""
    raw = base64.urlsafe_b64decode(text + "==")
    if len(raw) != 16:
        raise ValueError(f"not a uuid: {text!r}")
    return raw


def _fixed_error(pos: int, limit: int, kinds: tuple[str, ...]) -> NoReturn:
    """A run of fixed-size fields (``kinds``, read with one ``struct``) does not fit before ``limit``: the error
    names the first field that does not."""
    while pos + _MIN_SIZE[kinds[0]] <= limit:
        pos += _MIN_SIZE[kinds[0]]
        kinds = kinds[1:]
    raise DecodeError(pos, f"{kinds[0]} needs {_MIN_SIZE[kinds[0]]} byte(s), {limit - pos} left")


def _length(buf: bytes, pos: int, limit: int, what: str, nullable: bool, elem_size: int) -> tuple[int, int]:
    """Compact length ``n+1`` (``0`` = null, returned as −1): refuses lengths the bytes left before ``limit``
    cannot hold (``elem_size`` bytes an element at least) before anything is allocated."""
    start = pos
    raw, pos = read_uvarint(buf, pos, limit)
    length = raw - 1
    if length < 0:
        if not nullable:
            raise DecodeError(start, f"null {what} in a non-nullable field")
        return -1, pos
    if length * elem_size > limit - pos:
        raise DecodeError(start, f"{what} length {length} exceeds the {limit - pos} byte(s) left")
    return length, pos


def _read_text(buf: bytes, pos: int, limit: int) -> tuple[str, int]:
    """A non-nullable string (an element of a string array)."""
    length, pos = _length(buf, pos, limit, "string", False, 1)
    try:
        return buf[pos:pos + length].decode("utf-8"), pos + length
    except UnicodeDecodeError as exc:
        raise DecodeError(pos + exc.start, "string is not UTF-8") from None


def _read_bytes(buf: bytes, pos: int, limit: int) -> tuple[bytes, int]:
    """A non-nullable bytes value (an element of a bytes array)."""
    length, pos = _length(buf, pos, limit, "bytes", False, 1)
    return bytes(buf[pos:pos + length]), pos + length


def _min_size(f: Field, version: int) -> int:
    """Fewest bytes one element of the field's type takes at ``version`` (to refuse hostile array lengths)."""
    kind = f.type[2:] if f.type.startswith("[]") else f.type
    if kind in _MIN_SIZE:
        return _MIN_SIZE[kind]
    return 1 + sum(1 if sub.type.startswith("[]") else _min_size(sub, version)
                   for sub in f.fields if sub.tag is None and version >= sub.versions)


def default_of(f: Field) -> Any:
    """The schema default (§5.8 ``default`` column; empty = the type's zero value)."""
    if f.default is not None:
        return f.default
    if f.nullable is not None and f.tag is not None:
        return None
    if f.type.startswith("[]"):
        return ()
    if f.fields:
        return {sub.key: default_of(sub) for sub in f.fields}
    return {"bool": False, "uuid": ZERO_UUID, "string": "", "bytes": b"", "float64": 0.0}.get(f.type, 0)


# ---------------------------------------------------------------------------------------------------
# Decoders: each (struct, version) of the table compiled once, at import, into the source of one function
# (rules §5.4). Runs of fixed-size fields are read with one ``struct``, one-byte lengths inline; the
# general cases and every error go through the helpers above, so positions and messages do not depend on the
# path taken.

Decoder = Callable[[bytes, int, int], "tuple[dict[str, Any], int]"]
"""``decode(buf, pos, limit) -> (fields, next position)``; the struct's bytes must end by ``limit`` (``len(buf)``,
or the end of the tagged field holding it)."""


class _Source:
    """The lines of a generated module and the objects its code refers to by name."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.names: dict[str, Any] = {"DecodeError": DecodeError, "read_uvarint": read_uvarint, "_length": _length,
                                      "_fixed_error": _fixed_error, "uuid_text": uuid_text, "Struct": struct.Struct}

    def name(self, value: Any) -> str:
        """A name bound to ``value`` in the generated module."""
        key = f"c{len(self.names)}"
        self.names[key] = value
        return key

    def emit(self, indent: int, *lines: str) -> None:
        """Append ``lines`` at ``indent`` levels of four spaces."""
        self.lines.extend("    " * indent + line for line in lines)


def _emit_field(src: _Source, f: Field, version: int, var: str, indent: int) -> None:
    """Code reading one field that is not a fixed-size scalar into ``var`` (``pos`` advances)."""
    nullable = f.nullable is not None and version >= f.nullable
    if f.fields and not f.type.startswith("[]"):
        src.emit(indent, f"{var}, pos = {src.name(compile_decoder(f.fields, version))}(buf, pos, limit)")
        return
    kind = f.type[2:] if f.type.startswith("[]") else f.type
    what = "array" if f.type.startswith("[]") else kind
    size = _min_size(f, version) if f.type.startswith("[]") else 1
    src.emit(indent,
             f"if pos < limit and 0 < buf[pos] < 128 and (buf[pos] - 1) * {size} < limit - pos:",
             "    length = buf[pos] - 1",
             "    pos += 1",
             "else:",
             f"    length, pos = _length(buf, pos, limit, {what!r}, {nullable}, {size})")
    if nullable:
        src.emit(indent, "if length < 0:", f"    {var} = None", "else:")
        indent += 1
    if not f.type.startswith("[]"):
        if kind == "string":
            src.emit(indent, "try:", f"    {var} = buf[pos:pos + length].decode('utf-8')",
                     "except UnicodeDecodeError as exc:",
                     "    raise DecodeError(pos + exc.start, 'string is not UTF-8') from None")
        else:
            src.emit(indent, f"{var} = bytes(buf[pos:pos + length])")
        src.emit(indent, "pos += length")
    elif kind == "uuid":
        src.emit(indent, f"{var} = tuple(uuid_text(buf[p:p + 16]) for p in range(pos, pos + 16 * length, 16))",
                 "pos += 16 * length")
    elif kind in _CODES:
        code, arrays = _CODES[kind], src.name(_SMALL_ARRAYS[_CODES[kind]])
        src.emit(indent,
                 f"{var} = ({arrays}[length] if length < 32 else Struct(f'>{{length}}{code}')).unpack_from(buf, pos)",
                 f"pos += {_MIN_SIZE[kind]} * length")
    else:
        element = src.name({"string": _read_text, "bytes": _read_bytes}[kind] if kind in _MIN_SIZE
                           else compile_decoder(f.fields, version))
        src.emit(indent, "items = []", "for _ in range(length):", f"    item, pos = {element}(buf, pos, limit)",
                 "    items.append(item)", f"{var} = tuple(items)")


def _emit_fixed_run(src: _Source, run: list[tuple[Field, str]], indent: int) -> None:
    """Code reading consecutive fixed-size fields with one ``struct`` (uuids become their text)."""
    layout = struct.Struct(">" + "".join(_CODES[f.type] for f, _ in run))
    kinds = tuple(f.type for f, _ in run)
    targets = ", ".join(var for _, var in run) + ("," if len(run) == 1 else "")
    src.emit(indent, f"if pos + {layout.size} > limit:", f"    _fixed_error(pos, limit, {src.name(kinds)})",
             f"{targets} = {src.name(layout)}.unpack_from(buf, pos)", f"pos += {layout.size}")
    for f, var in run:
        if f.type == "uuid":
            src.emit(indent, f"{var} = uuid_text({var})")


def _emit_fields(src: _Source, fields: list[tuple[Field, str]], version: int, indent: int) -> None:
    """Code reading ``fields`` in order, each into its variable."""
    run: list[tuple[Field, str]] = []
    for f, var in fields:
        if f.type in _CODES:
            run.append((f, var))
            continue
        if run:
            _emit_fixed_run(src, run, indent)
            run = []
        _emit_field(src, f, version, var, indent)
    if run:
        _emit_fixed_run(src, run, indent)


def compile_decoder(fields: tuple[Field, ...], version: int) -> Decoder:
    """The decoder of a struct at ``version``: inline fields in order, then the tagged-field section (§5.4), where
    unknown tags are skipped and a known one must use exactly its declared size.

    Fields absent at ``version`` decode to their default, so every decoded dict has every key of the schema, in
    schema order.
    """
    src = _Source()
    present = [f for f in fields if version >= f.versions]
    var = {f.key: f"v{i}" for i, f in enumerate(fields)}
    tagged = [f for f in present if f.tag is not None]
    for f in tagged:  # one function per tagged field: its value must end exactly at the field's end
        src.emit(0, f"def tag{f.tag}(buf, pos, limit):")
        _emit_fields(src, [(f, "value")], version, 1)
        src.emit(1, "return value, pos")
    src.emit(0, "def decode(buf, pos, limit):")
    _emit_fields(src, [(f, var[f.key]) for f in present if f.tag is None], version, 1)
    for f in tagged:
        src.emit(1, f"{var[f.key]} = {src.name(default_of(f))}")
    src.emit(1, "if pos < limit and buf[pos] < 128:", "    count = buf[pos]", "    pos += 1", "else:",
             "    count, pos = read_uvarint(buf, pos, limit)",
             "for _ in range(count):",
             "    tag, pos = read_uvarint(buf, pos, limit)",
             "    size, pos = read_uvarint(buf, pos, limit)",
             "    end = pos + size",
             "    if end > limit:",
             "        raise DecodeError(pos, f'tagged field {tag} of {size} byte(s) runs past the end')")
    for i, f in enumerate(tagged):
        src.emit(2, f"{'if' if i == 0 else 'elif'} tag == {f.tag}:", f"    {var[f.key]}, used = tag{f.tag}(buf, pos, end)")
    if tagged:
        src.emit(2, "else:", "    pos = end", "    continue",
                 "if used != end:",
                 "    raise DecodeError(used, f'tagged field {tag} declares {size} byte(s), its value used {used - pos}')")
    src.emit(2, "pos = end")
    items = ", ".join(f"{f.key!r}: {var[f.key] if version >= f.versions else src.name(default_of(f))}" for f in fields)
    src.emit(1, f"return {{{items}}}, pos")
    exec(compile("\n".join(src.lines), f"<decoder {', '.join(f.name for f in fields)[:60]} v{version}>", "exec"),
         src.names)
    decode: Decoder = src.names["decode"]
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
    """A closure encoding a struct dict at ``version``; tagged fields are written only when not default (§5.4)."""
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
# Frame (rules §5.3) and the compiled tables.

DECODERS: dict[tuple[int, int], Decoder] = {
    (api_key, v): compile_decoder(s.fields, v) for api_key, s in METADATA_RECORDS.items() for v in range(s.lo, s.hi + 1)
}
ENCODERS: dict[tuple[int, int], Writer] = {
    (api_key, v): compile_encoder(s.fields, v) for api_key, s in METADATA_RECORDS.items() for v in range(s.lo, s.hi + 1)
}
NOOP_API_KEY = 20
NOOP_VALUE = b"\x01\x14\x00\x00"
"""The whole value of NoOpRecord v0 (rules §5.4 worked example), decoded without the generic path."""


_FRAMES: dict[bytes, tuple[int, int, Schema, Decoder]] = {
    bytes((1, api_key, v)): (api_key, v, METADATA_RECORDS[api_key], decoder)
    for (api_key, v), decoder in DECODERS.items() if api_key < 0x80 and v < 0x80
}
"""The three frame bytes (frame version 1, apiKey, version, each a one-byte varint) of every record version."""


def decode_metadata_value(value: bytes) -> tuple[int, int, dict[str, Any]]:
    """Decode a framed record value to ``(api_key, version, fields)`` (rules §5.3).

    Raises :class:`DecodeError` for frame version ≠ 1 (0 = the 2.8 preview format), an apiKey or version
    beyond int16, an unknown apiKey, a version the apiKey does not have, a malformed body, or garbage after it.
    """
    if value == NOOP_VALUE:
        return NOOP_API_KEY, 0, {}
    known = _FRAMES.get(value[:3])
    if known is None:
        api_key, version, pos = _frame(value)
        schema, decoder = METADATA_RECORDS[api_key], DECODERS[(api_key, version)]
    else:
        api_key, version, schema, decoder = known
        pos = 3
    fields, end = decoder(value, pos, len(value))
    if end != len(value):
        raise DecodeError(end, f"{len(value) - end} byte(s) of garbage after the {schema.name} v{version} body")
    return api_key, version, fields


def _frame(value: bytes) -> tuple[int, int, int]:
    """``(api_key, version, body position)`` of a frame whose bytes are not those of a known record version:
    the error it breaks, or a known version in a longer varint encoding."""
    limit = len(value)
    frame, pos = read_uvarint(value, 0, limit)
    if frame != 1:
        if frame == 0:
            raise DecodeError(0, "frame version 0 is the unsupported Kafka 2.8 preview format")
        raise DecodeError(0, f"unknown frame version {frame}")
    key_pos = pos
    api_key, pos = read_uvarint(value, pos, limit)
    if api_key > 0x7FFF:
        raise DecodeError(key_pos, f"apiKey {api_key} does not fit in int16")
    version_pos = pos
    version, pos = read_uvarint(value, pos, limit)
    if version > 0x7FFF:
        raise DecodeError(version_pos, f"record version {version} does not fit in int16")
    schema = METADATA_RECORDS.get(api_key)
    if schema is None:
        raise DecodeError(key_pos, f"unknown metadata record apiKey {api_key}")
    if (api_key, version) not in DECODERS:
        raise DecodeError(version_pos, f"{schema.name} has no version {version} (valid {schema.lo}-{schema.hi})")
    return api_key, version, pos


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
