"""The schema-driven codec: worked examples of rules §5.4, frame errors of §5.3, round trips of every
(apiKey, version) and control message, and hostile lengths refused before allocation."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kraftspec.traces.metalog.control import (
    CONTROL_MESSAGES,
    LEADER_CHANGE,
    decode_control,
    encode_control,
)
from kraftspec.traces.metalog.errors import DecodeError
from kraftspec.traces.metalog.schema import (
    METADATA_RECORDS,
    Field,
    decode_metadata_value,
    default_of,
    encode_metadata_value,
    snake_case,
    uuid_text,
)

T = "AAAAAAAAAAAAAAAAAAAAAg"  # some topic id (UUID(0, 2))

_SCALARS: dict[str, st.SearchStrategy[Any]] = {
    "int8": st.integers(-2**7, 2**7 - 1), "int16": st.integers(-2**15, 2**15 - 1),
    "int32": st.integers(-2**31, 2**31 - 1), "int64": st.integers(-2**63, 2**63 - 1),
    "uint16": st.integers(0, 2**16 - 1), "bool": st.booleans(), "float64": st.floats(allow_nan=False),
    "uuid": st.binary(min_size=16, max_size=16).map(uuid_text), "string": st.text(max_size=8),
    "bytes": st.binary(max_size=8),
}


def value_strategy(f: Field, version: int) -> st.SearchStrategy[Any]:
    """Any value the field can hold at ``version`` (its default when the version lacks it)."""
    if version < f.versions:
        return st.just(default_of(f))
    if f.type.startswith("[]"):
        kind = f.type[2:]
        element = _SCALARS[kind] if kind in _SCALARS else struct_strategy(f.fields, version)
        base: st.SearchStrategy[Any] = st.lists(element, max_size=3).map(tuple)
    elif f.fields:
        base = struct_strategy(f.fields, version)
    else:
        base = _SCALARS[f.type]
    if f.nullable is not None and version >= f.nullable:
        return st.none() | base
    return base


def struct_strategy(fields: tuple[Field, ...], version: int) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({f.key: value_strategy(f, version) for f in fields})


RECORD_VERSIONS = [(k, v) for k, s in METADATA_RECORDS.items() for v in range(s.lo, s.hi + 1)]


@st.composite
def metadata_records(draw: st.DrawFn) -> tuple[int, int, dict[str, Any]]:
    api_key, version = draw(st.sampled_from(RECORD_VERSIONS))
    return api_key, version, draw(struct_strategy(METADATA_RECORDS[api_key].fields, version))


@settings(max_examples=400)
@given(metadata_records())
def test_every_metadata_record_round_trips(case: tuple[int, int, dict[str, Any]]) -> None:
    api_key, version, fields = case
    assert decode_metadata_value(encode_metadata_value(api_key, version, fields)) == (api_key, version, fields)


@st.composite
def control_messages(draw: st.DrawFn) -> tuple[int, dict[str, Any]]:
    kind = draw(st.sampled_from(sorted(CONTROL_MESSAGES)))
    schema = CONTROL_MESSAGES[kind]
    version = draw(st.integers(schema.lo, schema.hi))
    fields = draw(struct_strategy(schema.fields, version))
    fields["version"] = version
    return kind, fields


@settings(max_examples=200)
@given(control_messages())
def test_every_control_message_round_trips(case: tuple[int, dict[str, Any]]) -> None:
    kind, fields = case
    key, value = encode_control(kind, fields)
    decoded = decode_control(key, value)
    assert (decoded.type, decoded.fields) == (kind, fields)


def test_worked_examples_of_section_4() -> None:
    assert decode_metadata_value(bytes.fromhex("01140000")) == (20, 0, {})
    fence = bytes.fromhex("011100" "00000001" "0000000000000005" "01" "00" "01" "01")
    assert decode_metadata_value(fence)[2] == {"broker_id": 1, "broker_epoch": 5, "fenced": 1,
                                               "in_controlled_shutdown": 0, "log_dirs": (), "cordoned_log_dirs": None}
    feature = bytes.fromhex("010c00" "11") + b"metadata.version" + bytes.fromhex("001e" "00")
    assert decode_metadata_value(feature) == (12, 0, {"name": "metadata.version", "feature_level": 30})
    topic = bytes(16)
    change = bytes.fromhex("010500" "00000000") + topic + bytes.fromhex(
        "02" "00" "09" "03" "00000001" "00000002" "01" "04" "00000001")
    _, _, fields = decode_metadata_value(change)
    assert (fields["isr"], fields["leader"], fields["replicas"]) == ((1, 2), 1, None)
    assert encode_metadata_value(5, 0, fields) == change
    assert encode_metadata_value(17, 0, {"broker_id": 1, "broker_epoch": 5, "fenced": 1}) == fence


def test_register_broker_defaults_absent_versions() -> None:
    _, _, fields = decode_metadata_value(encode_metadata_value(0, 0, {"broker_id": 3, "broker_epoch": 9}))
    assert fields["fenced"] is True and fields["in_controlled_shutdown"] is False
    assert fields["cordoned_log_dirs"] is None and fields["rack"] == ""


@pytest.mark.parametrize("value, position, message", [
    (bytes.fromhex("00140000"), 0, "2.8 preview"),
    (bytes.fromhex("02140000"), 0, "unknown frame version 2"),
    (bytes.fromhex("01060000"), 1, "unknown metadata record apiKey 6"),
    (bytes.fromhex("011d0000"), 1, "unknown metadata record apiKey 29"),
    (bytes.fromhex("01ffff0300"), 1, "does not fit in int16"),
    (bytes.fromhex("01140100"), 2, "NoOpRecord has no version 1"),
    (bytes.fromhex("01000500"), 2, "RegisterBrokerRecord has no version 5"),
    (bytes.fromhex("0114000000"), 4, "1 byte(s) of garbage after the NoOpRecord v0 body"),
    (bytes.fromhex("0114"), 2, "varint runs past the end"),
    (bytes.fromhex("011400808080808001"), 3, "varint longer than 5 bytes"),
])
def test_frame_errors(value: bytes, position: int, message: str) -> None:
    with pytest.raises(DecodeError) as info:
        decode_metadata_value(value)
    assert message in info.value.message
    assert info.value.position == position


def test_hostile_array_length_is_refused_before_allocation() -> None:
    value = bytes.fromhex("010300" "00000000") + bytes(16) + bytes.fromhex("8080808008")  # Replicas count 2^31 - 1
    with pytest.raises(DecodeError) as info:
        decode_metadata_value(value)
    assert "array length 2147483647 exceeds" in info.value.message and info.value.position == 23


def test_hostile_string_length_is_refused() -> None:
    value = bytes.fromhex("010200" "ffffffff07")  # TopicRecord Name of 2^31 - 2 bytes
    with pytest.raises(DecodeError, match="string length"):
        decode_metadata_value(value)


def test_tagged_field_size_must_match_its_value() -> None:
    bad = bytes.fromhex("011100" "00000001" "0000000000000005" "01" "00" "02" "0100")  # Fenced tag says 2 bytes
    with pytest.raises(DecodeError, match="tagged field 0 declares 2 byte"):
        decode_metadata_value(bad)


def test_unknown_tags_are_skipped() -> None:
    value = bytes.fromhex("011400" "01" "63" "02" "abcd")  # NoOp with unknown tag 99 of 2 bytes
    assert decode_metadata_value(value) == (20, 0, {})


def test_leader_change_v0_and_v1_keys_and_short_keys() -> None:
    v1 = {"version": 1, "leader_id": 2, "voters": ({"voter_id": 2, "voter_directory_id": T},),
          "granting_voters": ({"voter_id": 2, "voter_directory_id": T},)}
    key, value = encode_control(LEADER_CHANGE, v1)
    assert decode_control(b"\x00\x01" + key[2:] + b"\x00", value).fields == v1  # key version > 0, 5 bytes
    with pytest.raises(DecodeError, match="needs 4"):
        decode_control(b"\x00\x02", value)
    assert decode_control(b"\x00\x00\x00\x63", b"").name == "UnknownControl(99)"


def test_snake_case_names() -> None:
    assert snake_case("IsMigratingZkBroker") == "is_migrating_zk_broker"
    assert snake_case("KRaftVersionFeature") == "kraft_version_feature"
    assert snake_case("Isr") == "isr"


def test_long_arrays_and_strings_round_trip() -> None:
    """Multi-byte compact lengths and arrays longer than the compiled decoders' small-array table."""
    fields = {"partition_id": 7, "topic_id": T, "replicas": tuple(range(200)), "isr": tuple(range(-3, 40)),
              "directories": tuple(uuid_text(bytes([n]) * 16) for n in range(40))}
    value = encode_metadata_value(3, 1, fields)
    assert {k: decode_metadata_value(value)[2][k] for k in fields} == fields
    name = "é" * 300
    assert decode_metadata_value(encode_metadata_value(2, 0, {"name": name, "topic_id": T}))[2]["name"] == name


def test_a_cut_run_of_fixed_fields_names_the_field_it_cuts() -> None:
    value = encode_metadata_value(3, 0, {"partition_id": 1, "topic_id": T, "replicas": (1,), "isr": (1,)})
    with pytest.raises(DecodeError) as info:
        decode_metadata_value(value[:10])  # frame (3 bytes), PartitionId (4), then 3 of TopicId's 16 bytes
    assert (info.value.position, info.value.message) == (7, "uuid needs 16 byte(s), 3 left")


def test_a_tagged_value_is_read_within_its_declared_size() -> None:
    change = bytes.fromhex("010500" "00000000") + bytes(16) + bytes.fromhex("01" "01" "02" "0001" "00")
    with pytest.raises(DecodeError) as info:  # Leader (tag 1, int32) declared 2 bytes long
        decode_metadata_value(change)
    assert (info.value.position, info.value.message) == (26, "int32 needs 4 byte(s), 2 left")


def test_a_known_record_version_in_longer_varints_decodes() -> None:
    """The frame's three one-byte varints are the common case; a longer encoding of the same numbers is valid."""
    assert decode_metadata_value(bytes.fromhex("81009400800000")) == (20, 0, {})
