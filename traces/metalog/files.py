"""Readers of the small files beside a metadata log: quorum-state, leader-epoch-checkpoint, meta.properties,
partition.metadata. Every problem is a :class:`LogFormatError` with the byte offset of the bad line or value.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Optional

from kraftspec.reference.raft_quorum_file import QuorumStateData, QuorumStateFileError
from kraftspec.reference.raft_quorum_file import read_quorum_state as parse_quorum_state
from kraftspec.reference.storage import MetaProperties, StorageError, parse_meta_properties, parse_properties
from kraftspec.reference.storage_rules import uuid_from_string
from kraftspec.traces.format.limits import LimitError, describe_os_error, loads, open_regular, quote
from kraftspec.traces.metalog.errors import LogFormatError

MAX_SMALL_FILE = 1 << 20
"""These files are a few lines; anything larger is refused before it is read."""
_ENTRY = re.compile(r"-?[0-9]{1,19}")
"""An epoch or offset of leader-epoch-checkpoint: ASCII digits only (``str.isdigit`` also takes '²')."""
METADATA_TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"
"""The ``__cluster_metadata`` topic id, UUID(0, 1) (rules §5.1)."""


def _read_text(path: str) -> str:
    try:
        with open_regular(path) as f:  # never a FIFO or a device
            raw = f.read(MAX_SMALL_FILE + 1)
    except OSError as exc:
        raise LogFormatError(path, 0, f"cannot read: {describe_os_error(exc)}") from None
    if len(raw) > MAX_SMALL_FILE:
        raise LogFormatError(path, MAX_SMALL_FILE, f"larger than {MAX_SMALL_FILE} bytes")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise LogFormatError(path, exc.start, "not UTF-8 text") from None


def _line_offsets(text: str) -> list[int]:
    """Byte offset of the start of each line (1-based line n is at index n-1)."""
    offsets, pos = [], 0
    for line in text.splitlines(keepends=True):
        offsets.append(pos)
        pos += len(line.encode("utf-8"))
    return offsets or [0]


def _key_offset(text: str, key: str) -> int:
    """Byte offset of a JSON key in the text (0 if absent), so field errors point at the field."""
    at = text.find(f'"{key}"')
    return len(text[:at].encode("utf-8")) if at >= 0 else 0


def read_quorum_state(path: str) -> QuorumStateData:
    """Parse ``quorum-state`` with ``kraftspec.reference.raft_quorum_file`` (rules §3.3); the error's
    offset is the JSON syntax error's, or the offending key's."""
    text = _read_text(path)
    try:
        loads(text)  # within the limits on nesting and number size (kraftspec.traces.format.limits)
    except LimitError as exc:
        raise LogFormatError(path, 0, str(exc)) from None
    except ValueError:
        pass  # not JSON: the reader below says where
    try:
        return parse_quorum_state(text, path)
    except QuorumStateFileError as exc:
        cause = exc.__cause__
        if isinstance(cause, json.JSONDecodeError):
            offset = len(text[:cause.pos].encode("utf-8"))
        else:
            key = re.search(r"key '(\w+)'", str(exc))
            offset = 0 if key is None else _key_offset(text, key.group(1))
        message = str(exc).removeprefix(f"{path}: ")
        raise LogFormatError(path, offset, message) from None


def read_leader_epoch_checkpoint(path: str) -> list[tuple[int, int]]:
    """Parse ``leader-epoch-checkpoint``: a version line (0), an entry count, then ``epoch startOffset`` lines."""
    text = _read_text(path)
    lines, starts = text.splitlines(), _line_offsets(text)
    if len(lines) < 2:
        raise LogFormatError(path, starts[-1] if text else 0, f"{len(lines)} line(s), needs a version and a count")
    if lines[0].strip() != "0":
        raise LogFormatError(path, 0, f"version {quote(lines[0])}, only version 0 exists")
    if not _ENTRY.fullmatch(lines[1].strip()):
        raise LogFormatError(path, starts[1], f"entry count {quote(lines[1])} is not an integer")
    count = int(lines[1].strip())
    if count != len(lines) - 2:
        raise LogFormatError(path, starts[1], f"entry count {count} but {len(lines) - 2} entry line(s)")
    entries = []
    for n in range(2, len(lines)):
        parts = lines[n].split()
        if len(parts) != 2 or not all(_ENTRY.fullmatch(p) for p in parts):
            raise LogFormatError(path, starts[n], f"entry {quote(lines[n])} is not 'epoch startOffset'")
        entries.append((int(parts[0]), int(parts[1])))
    return entries


def read_meta_properties(path: str) -> MetaProperties:
    """Parse ``meta.properties`` with ``kraftspec.reference.storage.parse_meta_properties`` (KIP-631)."""
    text = _read_text(path)
    try:
        try:
            return parse_meta_properties(text, path)
        except StorageError as exc:
            if exc.key != "cluster.id" or exc.line is None:
                raise
            # Kafka 3.7+ stores whatever cluster.id the storage was formatted with (the 3.7.0 docker image even wrote
            # `Some(...)`): read the rest as Kafka does and keep the value; the audit notes it (issue 20)
            lines = text.splitlines(keepends=True)
            original = next(e.value for e in parse_properties(text, path) if e.key == "cluster.id")
            lines[exc.line - 1] = f"cluster.id={METADATA_TOPIC_ID}\n"
            return replace(parse_meta_properties("".join(lines), path), cluster_id=original)
    except StorageError as exc:
        offset = 0 if exc.line is None else _line_offsets(text)[min(exc.line, len(_line_offsets(text))) - 1]
        raise LogFormatError(path, offset, exc.message) from None


def is_uuid_cluster_id(cluster_id: Optional[str]) -> bool:
    """Whether a meta.properties ``cluster.id`` is a base64 UUID, as ``kafka-storage random-uuid`` makes them."""
    try:
        uuid_from_string(cluster_id or "")
    except ValueError:
        return False
    return True


def read_partition_metadata(path: str) -> str:
    """Parse ``partition.metadata`` (``version: 0`` and ``topic_id: ID`` lines) and return the topic id."""
    text = _read_text(path)
    starts = _line_offsets(text)
    fields: dict[str, tuple[str, int]] = {}
    for n, line in enumerate(text.splitlines()):
        key, sep, value = line.partition(":")
        if not sep:
            raise LogFormatError(path, starts[n], f"line {quote(line)} is not 'key: value'")
        fields[key.strip()] = (value.strip(), starts[n])
    if fields.get("version", ("", 0))[0] != "0":
        raise LogFormatError(path, fields.get("version", ("", 0))[1], "version is not 0")
    if "topic_id" not in fields:
        raise LogFormatError(path, 0, "topic_id is missing")
    return fields["topic_id"][0]
