"""KRaft snapshots (``<endOffset>-<epoch>.checkpoint``, ``bootstrap.checkpoint``): structure and image.

rules §5.1: a control batch opening with SnapshotHeaderRecord (then KRaftVersionRecord and
VotersRecord when kraft.version ≥ 1), data batches, and a last control batch holding SnapshotFooterRecord.
Batches are numbered from offset 0 in the snapshot's epoch. The data records replay into an :class:`Image`.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Optional

from kraftspec.reference.broker_registration import ReplayError
from kraftspec.traces.format.limits import describe_os_error, open_regular
from kraftspec.traces.metalog.control import KRAFT_VERSION, KRAFT_VOTERS, SNAPSHOT_FOOTER, SNAPSHOT_HEADER, decode_control
from kraftspec.traces.metalog.convert import to_record
from kraftspec.traces.metalog.errors import DecodeError, LogFormatError
from kraftspec.traces.metalog.image import Image
from kraftspec.traces.metalog.report import Violation
from kraftspec.traces.metalog.schema import decode_metadata_value, record_name
from kraftspec.traces.metalog.segments import Batch, read_batches

SNAPSHOT_NAME = re.compile(r"^([0-9]{20})-([0-9]{10})\.checkpoint$")
STRUCTURE = "snapshot_structure"
STRUCTURE_DOC = """rules §5.1: header control batch (SnapshotHeader, then optional KRaftVersion and Voters), data
batches, footer control batch (SnapshotFooter) last; batches numbered from offset 0, in the snapshot's epoch."""


def snapshot_id(name: str) -> Optional[tuple[int, int]]:
    """``(endOffset, epoch)`` from a snapshot file name, or None if it is not one (rules §5.1)."""
    match = SNAPSHOT_NAME.match(name)
    return None if match is None else (int(match.group(1)), int(match.group(2)))


@dataclass
class Snapshot:
    """A read snapshot: its header fields, kraft.version and voters (if any), image, counts and structure problems."""

    path: str
    epoch: Optional[int]
    header: Optional[dict[str, Any]] = None
    kraft_version: Optional[int] = None
    voters: Optional[tuple[int, ...]] = None
    control_fields: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    """The KRaftVersion and Voters records' ``(control type, decoded fields)`` in file order."""
    image: Image = field(default_factory=Image)
    record_counts: Counter[str] = field(default_factory=Counter)
    violations: list[Violation] = field(default_factory=list)
    batches: int = 0
    records: int = 0


def _decode(batch: Batch, key: Optional[bytes], value: Optional[bytes], value_offset: int) -> Any:
    try:
        if batch.is_control:
            return decode_control(key, value)
        if key is not None or value is None:
            raise DecodeError(0, "data record with a key or a null value")
        return decode_metadata_value(value)
    except DecodeError as exc:
        raise LogFormatError(batch.path, value_offset + exc.position, exc.message) from None


def read_snapshot(path: str, epoch: Optional[int] = None) -> Snapshot:
    """Read and replay a snapshot; ``epoch`` (from its name) is checked against every batch when given.

    Raises :class:`LogFormatError` for unreadable bytes; structure problems become ``snapshot_structure`` violations.
    """
    snap = Snapshot(path, epoch)
    expected_offset, footer_seen = 0, False

    def problem(offset: int, message: str) -> None:
        snap.violations.append(Violation(path, offset, STRUCTURE, message))

    try:
        f = open_regular(path)  # a regular file only: a FIFO named like a snapshot never blocks
    except OSError as exc:
        raise LogFormatError(path, 0, f"cannot read: {describe_os_error(exc)}") from None
    with f:
        if not f.read(1):
            raise LogFormatError(path, 0, "empty snapshot file: no SnapshotHeader batch")
        f.seek(0)
        for batch in read_batches(f, path):
            snap.batches += 1
            if footer_seen:
                problem(batch.base_offset, "batch after the SnapshotFooter")
            if batch.base_offset != expected_offset:
                problem(batch.base_offset, f"batch at offset {batch.base_offset}, expected {expected_offset}")
            if epoch is not None and batch.leader_epoch != epoch:
                problem(batch.base_offset, f"batch epoch {batch.leader_epoch}, the snapshot's is {epoch}")
            expected_offset = batch.last_offset + 1
            for index, rec in enumerate(batch.iter_records()):  # streamed: never a batch's records at once
                snap.records += 1
                decoded = _decode(batch, rec.key, rec.value, rec.value_file_offset)
                if batch.is_control:
                    snap.record_counts[decoded.name] += 1
                    first_batch = snap.batches == 1
                    if decoded.type == SNAPSHOT_HEADER:
                        if not (first_batch and index == 0):
                            problem(rec.offset, "SnapshotHeader not the first record")
                        snap.header = decoded.fields
                    elif decoded.type in (KRAFT_VERSION, KRAFT_VOTERS):
                        if not first_batch:
                            problem(rec.offset, f"{decoded.name} outside the header batch")
                        snap.control_fields.append((decoded.type, decoded.fields))
                        if decoded.type == KRAFT_VERSION:
                            snap.kraft_version = decoded.fields["kraft_version"]
                        else:
                            snap.voters = tuple(v["voter_id"] for v in decoded.fields["voters"])
                    elif decoded.type == SNAPSHOT_FOOTER:
                        footer_seen = True
                    else:
                        problem(rec.offset, f"{decoded.name} control record in a snapshot")
                    continue
                if snap.batches == 1:
                    problem(rec.offset, "data record before the SnapshotHeader")
                if footer_seen:
                    problem(rec.offset, "data record after the SnapshotFooter")
                api_key, version, fields = decoded
                snap.record_counts[record_name(api_key)] += 1
                try:
                    snap.image.apply(api_key, to_record(api_key, version, fields))
                except ReplayError as exc:
                    problem(rec.offset, f"{record_name(api_key)} does not replay: {exc}")
    if snap.header is None:
        problem(0, "no SnapshotHeader")
    if not footer_seen:
        problem(expected_offset, "no SnapshotFooter")
    return snap
