"""Audit KRaft data directories: read every metadata file, replay the log, judge every record and batch.

``audit_paths(paths)`` takes data directories (holding ``__cluster_metadata-0/``), metadata partition
directories, or single ``.log`` / ``.checkpoint`` files. A format error stops only the file it is in
(its report names file and byte offset); every file found is listed in the report with its status.
Record rules: :mod:`kraftspec.traces.metalog.rules`; Raft and file rules: :mod:`~.raft_rules`.
"""

from __future__ import annotations

import math
import os
import re
import struct
import sys
from collections import Counter
from itertools import chain
from pathlib import Path
from typing import Any, Callable, Iterable, Optional

from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, Progress as RichProgress, TransferSpeedColumn

from kraftspec.reference.broker_registration import ReplayError
from kraftspec.traces.format.limits import describe_os_error, escape_controls, is_regular, open_regular
from kraftspec.traces.metalog import raft_rules as R
from kraftspec.traces.metalog.control import (
    ABORT,
    COMMIT,
    KRAFT_VERSION,
    KRAFT_VOTERS,
    LEADER_CHANGE,
    control_type,
    decode_control,
)
from kraftspec.traces.metalog.convert import to_record
from kraftspec.traces.metalog.errors import DecodeError, LogFormatError
from kraftspec.traces.metalog.files import (
    METADATA_TOPIC_ID,
    is_uuid_cluster_id,
    read_leader_epoch_checkpoint,
    read_meta_properties,
    read_partition_metadata,
    read_quorum_state,
)
from kraftspec.traces.metalog.image import METADATA_VERSION, Image, differences
from kraftspec.traces.metalog.report import (
    MAX_REGISTRATIONS_KEPT,
    AuditReport,
    BrokerSummary,
    DirectoryReport,
    FileReport,
    Violation,
)
from kraftspec.traces.metalog.rules import RECORD_RULES, History, partition_after
from kraftspec.traces.metalog.schema import NOOP_VALUE, decode_metadata_value, record_name
from kraftspec.traces.metalog.segments import (
    CRC_START,
    HEADER_SIZE,
    LOG_OVERHEAD,
    TRANSACTIONAL_FLAG,
    Batch,
    batch_at,
    encode_record,
    read_chunks,
)
from kraftspec.traces.metalog.snapshot import Snapshot, read_snapshot, snapshot_id
from kraftspec.traces.metalog.voters import VotersAudit

METADATA_DIR = "__cluster_metadata-0"
BOOTSTRAP_FILE = "bootstrap.checkpoint"
NOOP_RECORD = encode_record(0, 0, None, NOOP_VALUE)
"""The record bytes of a batch holding one NoOpRecord (most of every log): recognised without decoding."""
NOOP_TAIL = b"\xff" * 14 + b"\x00\x00\x00\x01" + NOOP_RECORD
"""A batch's bytes from producerId on when it holds one NoOpRecord: producer fields −1, one record."""
NOOP_BATCH_SIZE = HEADER_SIZE + len(NOOP_RECORD)
NOOP_RUN_FIRST, NOOP_RUN_MAX = 16, 512
"""How many batches the NoOp fast path checks at once: 16 after any other batch, doubling up to 512 while the
run goes on."""
NOOP_LENGTHS = struct.Struct(">ii")
"""batchLength and partitionLeaderEpoch, bytes 8–15 of a batch."""
TIMESTAMP = struct.Struct(">q")
BASE_TIMESTAMP_AT = 27
MAX_OFFSET = (1 << 63) - 1
_STEPS = struct.pack(f">{NOOP_RUN_MAX}q", *range(NOOP_RUN_MAX))
"""0, 1, 2... as int64s: added to ``expected`` in every slot, the base offsets a run of NoOp batches must have."""
_ONES = (bytes(7) + b"\x01") * NOOP_RUN_MAX
_TAIL_WORDS = tuple(NOOP_TAIL[5 + 8 * j:13 + 8 * j] for j in range(3))
"""Bytes 48–71 of a NoOp batch (the end of producerId .. the record) as three 8-byte words."""
NOOP_NAME = record_name(20)
SKIPPED = {
    ".index": "offset index (derived from the log)", ".timeindex": "time index (derived from the log)",
    ".snapshot": "producer-state snapshot (not KRaft metadata)", ".part": "partial file (never completed)",
    ".deleted": "file marked for deletion", ".swap": "log cleaner temporary file", ".cleaned": "log cleaner temporary file",
    ".kafka_cleanshutdown": "clean-shutdown marker",
    "cleaner-offset-checkpoint": "log cleaner state", "log-start-offset-checkpoint": "log manager state",
    "recovery-point-offset-checkpoint": "log manager state", "replication-offset-checkpoint": "log manager state",
}
Progress = Callable[[int], None]


class _LogAudit:
    """The state of one directory's log audit: image, rule history, Raft epochs, pending snapshot comparisons."""

    def __init__(self, report: DirectoryReport, snapshots: list[tuple[int, int, str]], progress: Optional[Progress]):
        self.report = report
        self.image = Image()
        self.history = History()
        self.counts: Counter[str] = Counter()
        self._set_pending(snapshots)
        """``pending``: ``(end offset, epoch, path)`` of snapshots still to compare, ascending."""
        self.progress = progress
        self.next_offset: Optional[int] = None
        self.epoch: Optional[int] = None
        self.leader_change_due = False
        self.last_timestamp: Optional[int] = None
        self.replay_from = 0
        """Records below this offset are in the seeding snapshot: judged at the Raft level only."""
        self.replaying = True
        self.leader_changes: dict[int, tuple[int, tuple[int, ...]]] = {}
        """epoch -> (leader, voters) from its LeaderChangeMessage."""
        self.first_mv: Optional[int] = None
        self.voters = VotersAudit(self.violation)
        """KRaftVersion and Voters records replayed through the reference (rules §3.14)."""

    def violation(self, file: str, offset: int, rule: str, explanation: str) -> None:
        self.report.add(Violation(file, offset, rule, explanation))

    # -- log start and snapshots ----------------------------------------------------------------------

    def start(self, batch: Batch) -> None:
        """First batch of the log: a log starting above 0 is rebuilt from the first snapshot ending at or after it."""
        self.report.log_start_offset = batch.base_offset
        if batch.base_offset == 0:
            return
        seeds = [s for s in self.pending if s[0] >= batch.base_offset]
        if not seeds:
            self.violation(batch.path, batch.base_offset, R.LOG_START_HAS_SNAPSHOT,
                           f"the log starts at offset {batch.base_offset} and no snapshot ends at or after it; "
                           f"records are judged at the Raft level only")
            self.replaying = False
            self._structure_only(self.pending, "ends before the log start")
            self._set_pending([])
            return
        end, epoch, path = seeds[0]
        self._structure_only([s for s in self.pending if s[0] < end], "ends before the log start")
        self._set_pending([s for s in self.pending if s[0] > end])
        snap = self._read_snapshot(path, epoch, f"seeds the image (the log starts at {batch.base_offset})")
        if snap is None:
            self.replaying = False
            self._structure_only(self.pending, "not comparable: the seeding snapshot is unreadable")
            self._set_pending([])
            return
        self.image, self.replay_from = snap.image, end
        self.voters.load_snapshot(path, end, snap.control_fields)

    def load_bootstrap_voters(self, path: str) -> None:
        """The bootstrap checkpoint ``0-0``: Kafka loads its KRaftVersion and Voters records at offset −1, before
        the log (rules §3.14). Its structure and image are judged as a bootstrap snapshot (``_audit_bootstrap``)."""
        try:
            snap = read_snapshot(path, 0)
        except LogFormatError:
            return  # reported by _audit_bootstrap
        self.voters.load_snapshot(path, 0, snap.control_fields)

    def _structure_only(self, snapshots: list[tuple[int, int, str]], why: str) -> None:
        """Snapshots that cannot be compared with the log are still read and checked for structure."""
        for end, epoch, path in snapshots:
            self._read_snapshot(path, epoch, f"ends at {end}, {why}: structure checked, not compared")

    def _read_snapshot(self, path: str, epoch: int, note: str) -> Optional[Snapshot]:
        file = FileReport(path, "snapshot", note=note, size=_size(Path(path)))
        self.report.files.append(file)
        try:
            snap = read_snapshot(path, epoch)
        except LogFormatError as exc:
            file.status, file.error, file.error_offset = "error", str(exc), exc.offset
            return None
        file.batches, file.records = snap.batches, snap.records
        for v in snap.violations:
            self.report.add(v)
        return snap

    def _set_pending(self, snapshots: list[tuple[int, int, str]]) -> None:
        self.pending = snapshots
        self.snapshot_due: float = snapshots[0][0] if snapshots else math.inf
        """End offset of the next snapshot to compare (infinity when none is pending)."""

    def compare_snapshots(self, offset: int) -> None:
        """Compare every pending snapshot ending at or before ``offset`` with the image built so far."""
        while self.snapshot_due <= offset:
            end, epoch, path = self.pending[0]
            self._set_pending(self.pending[1:])
            snap = self._read_snapshot(path, epoch, "compared with the log")
            if snap is None:
                continue
            if self.epoch is not None and epoch != self.epoch:
                self.violation(path, end, R.SNAPSHOT_ID_MATCHES_LOG,
                               f"snapshot epoch {epoch}, but log record {end - 1} is in epoch {self.epoch}")
            stamp = None if snap.header is None else snap.header["last_contained_log_timestamp"]
            if stamp is not None and stamp != self.last_timestamp:
                self.violation(path, end, R.SNAPSHOT_ID_MATCHES_LOG,
                               f"header LastContainedLogTimestamp {stamp}, log record {end - 1} has {self.last_timestamp}")
            for diff in differences(self.image, snap.image):
                self.violation(path, end, R.SNAPSHOT_MATCHES_LOG, diff)
            self.voters.compare_snapshot(path, end, snap.control_fields)
            self.report.snapshots_compared.append(f"{Path(path).name} at offset {end}")

    # -- the log --------------------------------------------------------------------------------------

    def segment(self, path: str, file: FileReport) -> None:
        """Stream one segment (raises LogFormatError on unreadable bytes; the caller records it).

        A batch holding exactly one NoOpRecord in the running epoch, at the expected offset and with KRaft's
        producer fields, passes every rule by construction and is only counted (its CRC-32C was checked by the
        reader); such batches are recognised a run at a time (:func:`noop_run`, up to ``NOOP_RUN_MAX`` at once,
        growing from ``NOOP_RUN_FIRST`` while runs go on). All others (and each segment's first batch) take
        :meth:`batch`. ``expected`` is the offset the next NoOp batch must start at, or None while the fast path
        is closed (first batch, LeaderChange due); ``self.next_offset`` / ``self.last_timestamp`` are brought up
        to date before each :meth:`batch`.
        """
        name_offset = segment_offset(Path(path).name)  # None: a lone file whose name is not an offset
        progress, noop_size = self.progress, NOOP_BATCH_SIZE
        expected: Optional[int] = None
        stamp, snapshot_due = self.last_timestamp, self.snapshot_due
        lengths = b""  # batchLength and partitionLeaderEpoch of a NoOp batch in the running epoch (once it is known)
        batches, general, records, size = 0, 0, 0, NOOP_RUN_FIRST
        try:
            f = open_regular(path)  # a regular file only: a FIFO named like a segment never blocks the audit
        except OSError as exc:
            raise LogFormatError(path, 0, f"cannot read: {describe_os_error(exc)}") from None
        with f:
            for buf, buf_offset, starts, end in read_chunks(f, path):
                batches += len(starts)
                view, i, count = memoryview(buf), 0, len(starts)
                while i < count:
                    pos = starts[i]
                    if expected is not None:
                        limit = min(size, count - i, (end - pos) // noop_size, snapshot_due - expected,
                                    MAX_OFFSET + 1 - expected)  # each below the next snapshot's end, within int64
                        run = noop_run(view, pos, int(limit), expected, lengths) if limit > 0 and expected >= 0 else 0
                        if run:
                            i += run
                            expected += run
                            stamp = TIMESTAMP.unpack_from(buf, pos + noop_size * (run - 1) + BASE_TIMESTAMP_AT)[0]
                            size = min(2 * size, NOOP_RUN_MAX) if run == limit else NOOP_RUN_FIRST
                            continue
                    i += 1
                    batch = batch_at(buf, buf_offset, pos, path)
                    if expected is not None:
                        self.next_offset = expected
                    self.last_timestamp = stamp
                    if general == 0:  # the segment's first batch (the fast path opens after it)
                        if name_offset is not None and batch.base_offset != name_offset:
                            self.violation(path, batch.base_offset, R.SEGMENT_NAME_MATCHES_BASE_OFFSET,
                                           f"segment named {name_offset} starts at offset {batch.base_offset}")
                        if self.next_offset is None:
                            self.start(batch)
                    general += 1
                    if self.snapshot_due <= batch.base_offset:
                        self.compare_snapshots(batch.base_offset)
                    records += self.batch(batch)
                    expected = None if self.leader_change_due else self.next_offset
                    lengths = NOOP_LENGTHS.pack(noop_size - LOG_OVERHEAD, self.epoch)
                    stamp, snapshot_due, size = self.last_timestamp, self.snapshot_due, NOOP_RUN_FIRST
                if progress is not None:
                    progress(end - starts[0])
        if expected is not None:
            self.next_offset = expected
        self.last_timestamp = stamp
        noops = batches - general
        self.counts[NOOP_NAME] += noops
        file.batches, file.records = batches, records + noops
        if name_offset is None:
            file.note = "file name is not an offset: segment_name_matches_base_offset not checked"
        if batches == 0:
            if self.next_offset is not None and name_offset is not None and name_offset != self.next_offset:
                self.violation(path, name_offset, R.SEGMENT_NAME_MATCHES_BASE_OFFSET,
                               f"empty segment named {name_offset}, the log continues at {self.next_offset}")
            file.note = "empty segment"

    def batch(self, batch: Batch) -> int:
        """The general path: Raft checks, then every record decoded, judged and replayed. Returns the record count."""
        path, base = batch.path, batch.base_offset
        if self.next_offset is not None and base != self.next_offset:
            self.violation(path, base, R.OFFSETS_CONTIGUOUS, f"batch starts at {base}, expected {self.next_offset}")
        if batch.last_offset_delta != batch.records_count - 1:
            self.violation(path, base, R.OFFSETS_CONTIGUOUS,
                           f"lastOffsetDelta {batch.last_offset_delta} for {batch.records_count} record(s)")
        producer = (batch.producer_id, batch.producer_epoch, batch.base_sequence)
        if producer != (-1, -1, -1) or batch.attributes & TRANSACTIONAL_FLAG:
            self.violation(path, base, R.BATCH_KRAFT_FIELDS,
                           f"producerId {batch.producer_id}, producerEpoch {batch.producer_epoch}, baseSequence "
                           f"{batch.base_sequence}, attributes {batch.attributes:#x}")
        new_epoch = batch.leader_epoch != self.epoch
        first_of_log = self.next_offset is None
        if new_epoch:
            if self.epoch is not None and batch.leader_epoch < self.epoch:
                self.violation(path, base, R.LEADER_EPOCH_MONOTONIC,
                               f"batch epoch {batch.leader_epoch} after epoch {self.epoch}")
            self.report.raft_epochs.append((batch.leader_epoch, base, None))
            self.epoch = batch.leader_epoch
        records = batch.iter_records()  # streamed: a batch's records are never held at once
        first = next(records, None)
        if (new_epoch and not first_of_log) or self.leader_change_due or (first_of_log and base == 0):
            if batch.is_control and first is not None and self._control_type(batch, first) == LEADER_CHANGE:
                self.leader_change_due = False
            elif first_of_log:
                self.leader_change_due = True
            else:
                self.violation(path, base, R.EPOCH_STARTS_WITH_LEADER_CHANGE,
                               f"epoch {batch.leader_epoch} begins without a LeaderChange control record")
                self.leader_change_due = False
        expected, judge, count = base, self.control if batch.is_control else self.data, 0
        for rec in chain((first,), records) if first is not None else ():
            count += 1
            if rec.offset != expected:
                self.violation(path, rec.offset, R.OFFSETS_CONTIGUOUS, f"record offset {rec.offset}, expected {expected}")
            expected = rec.offset + 1
            if self.snapshot_due <= rec.offset:
                self.compare_snapshots(rec.offset)
            judge(batch, rec)
            self.last_timestamp = rec.timestamp
        self.next_offset = base + batch.last_offset_delta + 1
        return count

    def _control_type(self, batch: Batch, rec: Any) -> int:
        try:
            return control_type(rec.key)
        except DecodeError as exc:
            raise LogFormatError(batch.path, rec.file_offset, exc.message) from None

    def control(self, batch: Batch, rec: Any) -> None:
        try:
            decoded = decode_control(rec.key, rec.value)
        except DecodeError as exc:
            raise LogFormatError(batch.path, rec.value_file_offset + exc.position, exc.message) from None
        self.counts[decoded.name] += 1
        if decoded.type in (ABORT, COMMIT):
            self.violation(batch.path, rec.offset, R.CONTROL_BATCH_RECORDS, f"{decoded.name} marker in a KRaft log")
        if decoded.type in (KRAFT_VERSION, KRAFT_VOTERS):
            self.voters.log_record(batch.path, rec.offset, decoded.type, decoded.fields)
        if decoded.type != LEADER_CHANGE:
            return
        fields = decoded.fields or {}
        leader = fields["leader_id"]
        voters = tuple(v["voter_id"] for v in fields["voters"])
        granting = tuple(v["voter_id"] for v in fields["granting_voters"])
        if batch.leader_epoch in self.leader_changes:
            self.violation(batch.path, rec.offset, R.LEADER_CHANGE_CONSISTENT,
                           f"second LeaderChange in epoch {batch.leader_epoch}")
        if leader not in voters or leader not in granting or any(g not in voters for g in granting):
            self.violation(batch.path, rec.offset, R.LEADER_CHANGE_CONSISTENT,
                           f"leader {leader}, voters {voters}, granting voters {granting}")
        self.leader_changes[batch.leader_epoch] = (leader, voters)
        epoch, start, _ = self.report.raft_epochs[-1]
        if epoch == batch.leader_epoch:
            self.report.raft_epochs[-1] = (epoch, start, leader)

    def data(self, batch: Batch, rec: Any) -> None:
        if rec.key is not None or rec.value is None:
            self.violation(batch.path, rec.offset, R.CONTROL_BATCH_RECORDS, "data record with a key or a null value")
            return
        try:
            api_key, version, fields = decode_metadata_value(rec.value)
        except DecodeError as exc:
            raise LogFormatError(batch.path, rec.value_file_offset + exc.position, exc.message) from None
        self.counts[record_name(api_key)] += 1
        if not self.replaying or rec.offset < self.replay_from:
            return
        record = to_record(api_key, version, fields)
        history, image = self.history, self.image
        if api_key == 3 or api_key == 5:
            history.partition_after = partition_after(image, record)
        for check in RECORD_RULES.get(api_key, ()):
            explanation = check(image, history, record, rec.offset)
            if explanation is not None:
                self.violation(batch.path, rec.offset, check.__name__, explanation)
        if api_key == 0:
            history.broker_epochs[record.broker_id] = (record.broker_epoch, record.incarnation_id)
            summary = self.report.brokers.setdefault(record.broker_id, BrokerSummary(record.broker_id))
            summary.registration_count += 1
            if len(summary.registrations) < MAX_REGISTRATIONS_KEPT:
                summary.registrations.append((rec.offset, record.broker_epoch, record.incarnation_id, version))
        elif api_key == 23:
            history.in_transaction = True
        elif api_key == 24 or api_key == 25:
            history.in_transaction = False
        elif api_key == 12 and record.name == METADATA_VERSION and self.first_mv is None:
            self.first_mv = record.feature_level
        if api_key == 5 and history.partition_after is not None:
            image.partitions[(record.topic_id, record.partition_id)] = history.partition_after  # merged once
            return
        try:
            image.apply(api_key, record)
        except ReplayError:
            pass  # reported by broker_change_matches_epoch; Kafka's replay would stop here

    def finish(self) -> None:
        """After the last segment: snapshots ending at the log end, then the final summaries."""
        if self.next_offset is not None:
            self.compare_snapshots(self.next_offset)
        self._structure_only(self.pending, "beyond the log end" if self.next_offset is not None else "no log to compare")
        self._set_pending([])
        self.report.log_end_offset = self.next_offset
        self.report.record_counts = dict(self.counts)
        image = self.image
        self.report.metadata_version = image.metadata_version
        for broker_id, registration in image.brokers.items():
            summary = self.report.brokers.setdefault(broker_id, BrokerSummary(broker_id))
            summary.epoch, summary.fenced = registration.epoch, registration.fenced
            summary.in_controlled_shutdown, summary.registered = registration.in_controlled_shutdown, True
        self.report.controllers = sorted(image.controllers)
        self.report.topics, self.report.partitions = len(image.topics), len(image.partitions)
        self.report.voters_records, self.report.kraft_version, self.report.voters = self.voters.summary()


def noop_run(view: memoryview, pos: int, count: int, expected: int, lengths: bytes) -> int:
    """How many of the ``count`` batches from ``pos`` on are each a NoOp batch (:meth:`_LogAudit.segment`) that
    starts at the next offset: batch ``j`` at ``pos + 72 j`` with baseOffset ``expected + j``, bytes 8–15 =
    ``lengths`` (batchLength 60 and the running epoch), attributes and lastOffsetDelta 0 (bytes 21–26) and
    ``NOOP_TAIL`` from byte 43 on. Each check compares one column of the run (a byte range at a 72-byte stride)
    with what it must hold; the run ends at the first batch failing one. The reader has checked these batches'
    CRC-32C, and ``count`` keeps them within its verified bytes and offsets within int64 (``expected`` ≥ 0).

    Batch ``j`` is only at ``pos + 72 j`` if all before it are 60 bytes long, which their own bytes 8–11 show:
    columns past the first failing batch may read misaligned bytes, but the run stops before them.
    """
    words = view[pos:pos + NOOP_BATCH_SIZE * count].cast("Q")  # 9 words a batch
    halves = view[pos + CRC_START:pos + NOOP_BATCH_SIZE * count - 23].cast("H")  # from byte 21, 36 a batch
    size = 8 * count
    bases = (int.from_bytes(_ONES[:size], "big") * expected + int.from_bytes(_STEPS[:size], "big")).to_bytes(size, "big")
    zero, ones = bytes(2 * count), b"\xff\xff" * count
    columns = ((words[0::9], bases), (words[1::9], lengths * count), (words[6::9], _TAIL_WORDS[0] * count),
               (words[7::9], _TAIL_WORDS[1] * count), (words[8::9], _TAIL_WORDS[2] * count),
               (halves[0::36], zero), (halves[1::36], zero), (halves[2::36], zero),  # bytes 21-26
               (halves[11::36], ones), (halves[12::36], ones), (halves[13::36], ones))  # bytes 43-48
    run = count
    for column, wanted in columns:
        actual = column.tobytes()
        if actual != wanted:
            first = len(actual) - ((int.from_bytes(actual, "big") ^ int.from_bytes(wanted, "big")).bit_length() + 7) // 8
            run = min(run, first * count // len(actual))
    return run


# ---------------------------------------------------------------------------------------------------
# Directories.

SEGMENT_NAME = re.compile(r"([0-9]{1,20})\.log")
"""A log segment's name: its base offset in ASCII digits (Kafka writes 20; ``str.isdigit`` would also take '²')."""


def segment_offset(name: str) -> Optional[int]:
    """The base offset a segment file name states, or None if the name is not ``<digits>.log``."""
    match = SEGMENT_NAME.fullmatch(name)
    return None if match is None else int(match.group(1))


def _files_report(directory: Path, handled: set[Path], report: DirectoryReport) -> None:
    """Account for every other entry of ``directory``: known non-metadata files and other partitions are skipped,
    and so is anything that is not a regular file (a FIFO, socket or device is never opened)."""
    for entry in sorted(directory.iterdir()):
        if entry in handled:
            continue
        if entry.is_dir():
            report.files.append(FileReport(str(entry), "directory", status="skipped", note="not the metadata partition"))
            continue
        if not is_regular(entry):
            report.files.append(FileReport(str(entry), "other", status="skipped", note=_not_regular(entry)))
            continue
        reason = next((why for suffix, why in SKIPPED.items() if entry.name.endswith(suffix)), "unknown file")
        report.files.append(FileReport(str(entry), "other", status="skipped", note=reason, size=_size(entry)))


def _not_regular(path: Path) -> str:
    try:
        with open_regular(path):
            pass
    except OSError as exc:
        return describe_os_error(exc)
    return "not a regular file"


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _small_file(report: DirectoryReport, path: Path, kind: str, reader: Callable[[str], Any]) -> Any:
    """Read one small file into the report; None (and an error entry) when it is unreadable."""
    file = FileReport(str(path), kind, size=_size(path))
    report.files.append(file)
    try:
        return reader(str(path))
    except LogFormatError as exc:
        file.status, file.error, file.error_offset = "error", str(exc), exc.offset
        return None


def audit_directory(data_dir: Path, partition_dir: Optional[Path], progress: Optional[Progress] = None) -> DirectoryReport:
    """Audit one data directory (``partition_dir`` = its ``__cluster_metadata-0``, if present)."""
    report = DirectoryReport(str(data_dir))
    handled: set[Path] = set()
    meta = data_dir / "meta.properties"
    if is_regular(meta):
        handled.add(meta)
        properties = _small_file(report, meta, "meta.properties", read_meta_properties)
        if properties is not None:
            report.node_id, report.cluster_id = properties.node_id, properties.cluster_id
            if properties.cluster_id is not None and not is_uuid_cluster_id(properties.cluster_id):  # issue 20
                report.files[-1].note = (f"cluster.id {properties.cluster_id!r} is not a base64 UUID: Kafka 3.7+ keeps "
                                         f"any string the storage was formatted with (a note, not a violation)")
    if partition_dir is None:
        report.files.append(FileReport(str(data_dir / METADATA_DIR), "metadata partition", status="error",
                                       error=f"{data_dir}: no {METADATA_DIR} directory"))
        _files_report(data_dir, handled, report)
        return report
    handled.add(partition_dir)
    entries = sorted(p for p in partition_dir.iterdir() if is_regular(p))  # FIFOs, devices... are listed as skipped
    segments = sorted((p for p in entries if segment_offset(p.name) is not None), key=lambda p: segment_offset(p.name))
    snapshots = sorted((sid[0], sid[1], str(p)) for p in entries if (sid := snapshot_id(p.name)) is not None)
    bootstraps = [p for p in (data_dir / BOOTSTRAP_FILE,) if is_regular(p)]
    bootstraps += [Path(s[2]) for s in snapshots if s[0] == 0]
    audit = _LogAudit(report, [s for s in snapshots if s[0] > 0], progress)
    handled.update(segments, bootstraps, (Path(s[2]) for s in snapshots))
    for end, _, path in snapshots[:1]:
        if end == 0:
            audit.load_bootstrap_voters(path)
    _audit_log(audit, segments)
    audit.finish()
    for path in bootstraps:
        _audit_bootstrap(report, path, audit.first_mv)
    small: dict[str, Any] = {}
    for name, kind, reader in (("quorum-state", "quorum-state", read_quorum_state),
                               ("leader-epoch-checkpoint", "leader-epoch-checkpoint", read_leader_epoch_checkpoint),
                               ("partition.metadata", "partition.metadata", read_partition_metadata)):
        path = partition_dir / name
        if is_regular(path):
            handled.add(path)
            small[name] = _small_file(report, path, kind, reader)
    _check_partition_files(report, audit, partition_dir, small)
    _files_report(partition_dir, handled, report)
    _files_report(data_dir, handled, report)
    return report


def _audit_log(audit: _LogAudit, segments: list[Path]) -> None:
    failed: Optional[str] = None
    for path in segments:
        file = FileReport(str(path), "log segment", size=_size(path))
        audit.report.files.append(file)
        if failed is not None:
            file.status, file.note = "not audited", f"an earlier segment is unreadable ({failed})"
            continue
        try:
            audit.segment(str(path), file)
        except LogFormatError as exc:
            file.status, file.error, file.error_offset = "error", str(exc), exc.offset
            failed = path.name
    if segments and audit.next_offset is None and failed is None:
        file = audit.report.files[-1]
        file.status, file.error, file.error_offset = "error", f"{segments[-1]}:0: empty log: no record batch", 0


def _audit_bootstrap(report: DirectoryReport, path: Path, first_mv: Optional[int]) -> None:
    """A bootstrap snapshot: its structure, and its metadata.version against the log's first one."""
    file = FileReport(str(path), "bootstrap snapshot", size=_size(path))
    report.files.append(file)
    try:
        snap = read_snapshot(str(path), 0)
    except LogFormatError as exc:
        file.status, file.error, file.error_offset = "error", str(exc), exc.offset
        return
    file.batches, file.records = snap.batches, snap.records
    for v in snap.violations:
        report.add(v)
    mv = snap.image.metadata_version
    if report.log_start_offset == 0 and mv is not None and first_mv is not None and mv != first_mv:
        report.add(Violation(str(path), 0, R.BOOTSTRAP_MATCHES_LOG,
                             f"bootstrap metadata.version {mv}, the log's first is {first_mv}"))


def _check_partition_files(report: DirectoryReport, audit: _LogAudit, partition_dir: Path, small: dict[str, Any]) -> None:
    """leader-epoch-checkpoint, quorum-state and partition.metadata against the log."""
    epochs = [(e, start) for e, start, _ in report.raft_epochs]
    checkpoint = small.get("leader-epoch-checkpoint")
    if checkpoint is not None and epochs:
        start = report.log_start_offset or 0
        first_epoch = epochs[0][0]
        listed = [(e, max(s, start)) for e, s in checkpoint if e >= first_epoch]
        if len(listed) > 1 and listed[-1][0] > epochs[-1][0] and listed[-1][1] == report.log_end_offset:
            # a new leader assigns its epoch at the log end before its LeaderChange batch is appended: a node stopped
            # in between leaves that entry with no batch behind it (seen on a controller of a cluster stopped at
            # once, issue 20); Kafka truncates it on restart
            listed = listed[:-1]
        if not listed or listed != epochs[:len(listed)]:
            report.add(Violation(str(partition_dir / "leader-epoch-checkpoint"), 0, R.LEADER_EPOCH_CHECKPOINT_MATCHES,
                                 f"checkpoint lists {listed}, the log's epochs start at {epochs}"))
    quorum = small.get("quorum-state")
    if quorum is not None and epochs:
        last_epoch = epochs[-1][0]
        where = str(partition_dir / "quorum-state")
        if quorum.leader_epoch < last_epoch:
            report.add(Violation(where, 0, R.QUORUM_STATE_MATCHES_LOG,
                                 f"leaderEpoch {quorum.leader_epoch} is below the log's last epoch {last_epoch}"))
        elif quorum.leader_epoch == last_epoch and last_epoch in audit.leader_changes:
            leader, voters = audit.leader_changes[last_epoch]
            if quorum.leader_id not in (-1, leader):
                report.add(Violation(where, 0, R.QUORUM_STATE_MATCHES_LOG,
                                     f"leaderId {quorum.leader_id} in epoch {last_epoch}, the LeaderChange names {leader}"))
            # a version-0 file holds the voter ids the node had when it wrote it (QuorumState.durableTransitionTo:
            # ElectionState.toQuorumStateData(partitionState.lastKraftVersion()) with lastVoterSet's ids); a node of a
            # kraft.version 1 log that wrote it before reading that log's KRaftVersionRecord had only its static
            # voters, none with controller.quorum.bootstrap.servers (an observer formatted --no-initial-controllers)
            unread = not quorum.current_voters and audit.voters.reconfig_supported()
            if quorum.current_voters is not None and set(quorum.current_voters) != set(voters) and not unread:
                report.add(Violation(where, 0, R.QUORUM_STATE_MATCHES_LOG,
                                     f"currentVoters {quorum.current_voters}, the LeaderChange's voters are {voters}"))
    topic_id = small.get("partition.metadata")
    if topic_id is not None and topic_id != METADATA_TOPIC_ID:
        report.add(Violation(str(partition_dir / "partition.metadata"), 0, R.PARTITION_METADATA_TOPIC_ID,
                             f"topic_id {topic_id}"))


def _single_file(path: Path, progress: Optional[Progress]) -> DirectoryReport:
    """A lone ``.log`` segment or ``.checkpoint`` snapshot, audited without the files around it."""
    report = DirectoryReport(str(path))
    if path.suffix == ".log":
        audit = _LogAudit(report, [], progress)
        _audit_log(audit, [path])
        audit.finish()
        return report
    file = FileReport(str(path), "snapshot", size=_size(path))
    report.files.append(file)
    sid = snapshot_id(path.name)
    try:
        snap = read_snapshot(str(path), None if sid is None else sid[1])
    except LogFormatError as exc:
        file.status, file.error, file.error_offset = "error", str(exc), exc.offset
        return report
    file.batches, file.records = snap.batches, snap.records
    report.record_counts = dict(snap.record_counts)
    report.metadata_version = snap.image.metadata_version
    for v in snap.violations:
        report.add(v)
    return report


def _classify(path: Path) -> tuple[Path, Optional[Path]]:
    """``(data dir, metadata partition dir)`` for a data directory or a metadata partition directory."""
    if (path / METADATA_DIR).is_dir():
        return path, path / METADATA_DIR
    if path.name == METADATA_DIR or any(p.suffix == ".log" for p in path.iterdir()):
        return path.parent, path
    return path, None


def _targets(path: Path) -> list[tuple[Path, Optional[Path]]]:
    """The directories to audit for ``path``: itself, or, for a folder that holds no metadata partition of
    its own (a corpus, or one folder per node of a quorum), every data directory below it, sorted."""
    data_dir, partition_dir = _classify(path)
    if partition_dir is not None:
        return [(data_dir, partition_dir)]
    nested = sorted(p.parent for p in path.rglob(METADATA_DIR) if p.is_dir())
    return [(d, d / METADATA_DIR) for d in nested] or [(data_dir, None)]


def total_bytes(paths: Iterable[str | os.PathLike[str]]) -> int:
    """Bytes of the log segments the audit of ``paths`` will stream (for a progress bar)."""
    total = 0
    for p in map(Path, paths):
        try:
            if is_regular(p):
                total += _size(p)
            elif p.is_dir():
                for _, partition in _targets(p):
                    if partition is not None:
                        total += sum(_size(s) for s in partition.glob("*.log") if is_regular(s))
        except OSError:
            continue  # the audit reports it
    return total


def audit_paths(paths: Iterable[str | os.PathLike[str]], progress: Optional[Progress] = None) -> AuditReport:
    """Audit each path (data dir, ``__cluster_metadata-0`` dir, a folder of data dirs, or one
    ``.log``/``.checkpoint`` file).

    ``progress``, if given, is called with the number of log bytes streamed since its last call.
    A path that does not exist is reported as an error entry, never raised.
    """
    report = AuditReport()
    for raw in paths:
        path = Path(raw)
        try:
            if is_regular(path):
                report.directories.append(_single_file(path, progress))
            elif path.is_dir():
                for data_dir, partition_dir in _targets(path):
                    try:
                        report.directories.append(audit_directory(data_dir, partition_dir, progress))
                    except OSError as exc:  # a directory that cannot be listed (permissions, vanished)
                        report.directories.append(_unreadable(data_dir, exc))
            else:
                why = "no such file or directory" if not os.path.lexists(path) else _not_regular(path)
                missing = DirectoryReport(escape_controls(str(path)))
                missing.files.append(FileReport(str(path), "path", status="error",
                                                error=f"{escape_controls(str(path))}: {why}"))
                report.directories.append(missing)
        except OSError as exc:
            report.directories.append(_unreadable(path, exc))
    return report


def _unreadable(path: Path, exc: OSError) -> DirectoryReport:
    """A path the audit could not list or read, as a report with one error entry."""
    failed = DirectoryReport(escape_controls(str(path)))
    failed.files.append(FileReport(str(path), "path", status="error",
                                   error=f"{escape_controls(str(path))}: cannot read: {describe_os_error(exc)}"))
    return failed


def audit_command(paths: list[str], as_json: bool = False, show_progress: bool = True) -> int:
    """``kraftspec audit DATA_DIR... [--json]``: print the report; exit status 2 when a file is unreadable (a format
    error, bad input), else 1 on any violation (a finding), else 0."""
    if show_progress and sys.stderr.isatty():
        with RichProgress("auditing", BarColumn(), DownloadColumn(), TransferSpeedColumn(), transient=True,
                          console=Console(stderr=True)) as bar:
            task = bar.add_task("audit", total=total_bytes(paths))
            report = audit_paths(paths, lambda n: bar.advance(task, n))
    else:
        report = audit_paths(paths)
    print(report.dumps() if as_json else report.render())
    return report.exit_code
