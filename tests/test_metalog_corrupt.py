"""Corrupt inputs give a precise LogFormatError (file and byte offset), never a traceback, and the audit of the
directory goes on with its other files (rules §5.2, §5.3)."""

from __future__ import annotations

import io
import struct
from pathlib import Path
from typing import Optional

import pytest
from crc32c import crc32c

from kraftspec.traces.metalog.audit import audit_paths
from kraftspec.traces.metalog.corpus import CORPUS_DIR
from kraftspec.traces.metalog.errors import LogFormatError
from kraftspec.traces.metalog.plant import copy_tree, edit_header, rewrite
from kraftspec.traces.metalog.schema import encode_metadata_value
from kraftspec.traces.metalog.segments import CHUNK_SIZE, HEADER_SIZE, Batch, Record, encode_batch, read_batches, reencode
from kraftspec.traces.metalog.snapshot import read_snapshot

LOG = "__cluster_metadata-0/00000000000000000000.log"
SMALL = CORPUS_DIR / "engkoskostaman97__setup_install_kafka_from_windows" / "data"


@pytest.fixture()
def data_dir(tmp_path: Path) -> Path:
    return copy_tree(SMALL, tmp_path / "data")


def batch_starts(path: Path) -> list[int]:
    with open(path, "rb") as f:
        return [b.file_offset for b in read_batches(f, str(path))]


def audit_error(data_dir: Path, name: str = LOG) -> tuple[str, int]:
    """Audit the directory; the named file must be in error, every other file accounted for."""
    report = audit_paths([data_dir]).directories[0]
    assert not report.ok
    by_path = {Path(f.path).relative_to(data_dir).as_posix(): f for f in report.files}
    assert set(by_path) == {p.relative_to(data_dir).as_posix() for p in data_dir.rglob("*") if p.is_file()}
    bad = by_path[name]
    assert bad.status == "error" and bad.error is not None and bad.error_offset is not None
    assert bad.error.startswith(f"{data_dir / name}:{bad.error_offset}: ")
    assert by_path["__cluster_metadata-0/quorum-state"].status == "audited"
    return bad.error, bad.error_offset


def test_flipped_bit_is_a_crc_mismatch_at_the_crc_field(data_dir: Path) -> None:
    log = data_dir / LOG
    start = batch_starts(log)[100]
    raw = bytearray(log.read_bytes())
    raw[start + 70] ^= 0x04
    log.write_bytes(bytes(raw))
    error, offset = audit_error(data_dir)
    assert offset == start + 17 and "CRC-32C mismatch" in error


def test_truncated_batch(data_dir: Path) -> None:
    log = data_dir / LOG
    raw = log.read_bytes()
    last = batch_starts(log)[-1]
    log.write_bytes(raw[:-5])
    error, offset = audit_error(data_dir)
    assert offset == last + 8 and "batchLength" in error and "bytes left in the file" in error


def test_truncated_header(data_dir: Path) -> None:
    log = data_dir / LOG
    raw = log.read_bytes()
    last = batch_starts(log)[-1]
    log.write_bytes(raw[:last + 30])
    error, offset = audit_error(data_dir)
    assert offset == last + 8 and "batchLength" in error


@pytest.mark.parametrize("length", [2**31 - 1, -2**31, 0, 48])
def test_hostile_batch_length(data_dir: Path, length: int) -> None:
    log = data_dir / LOG
    start = batch_starts(log)[3]
    raw = bytearray(log.read_bytes())
    raw[start + 8:start + 12] = struct.pack(">i", length)
    log.write_bytes(bytes(raw))
    error, offset = audit_error(data_dir)
    assert offset == start + 8 and f"batchLength {length} outside [49, " in error


def test_hostile_length_on_an_unbounded_stream_is_refused_without_reading() -> None:
    header = struct.pack(">qi", 0, 2**31 - 1) + bytes(49)
    with pytest.raises(LogFormatError, match="batchLength 2147483647"):
        list(read_batches(io.BytesIO(header), "mem"))


def test_empty_log(data_dir: Path) -> None:
    (data_dir / LOG).write_bytes(b"")
    error, offset = audit_error(data_dir)
    assert offset == 0 and "empty log" in error


def test_empty_snapshot_and_quorum_state(data_dir: Path) -> None:
    (data_dir / "bootstrap.checkpoint").write_bytes(b"")
    (data_dir / "__cluster_metadata-0" / "leader-epoch-checkpoint").write_bytes(b"")
    report = audit_paths([data_dir]).directories[0]
    errors = {Path(f.path).name: f for f in report.errors}
    assert set(errors) == {"bootstrap.checkpoint", "leader-epoch-checkpoint"}
    assert "empty snapshot" in (errors["bootstrap.checkpoint"].error or "")
    assert report.files[1].status == "audited"  # the log


def test_bad_magic(data_dir: Path) -> None:
    log = data_dir / LOG
    start = batch_starts(log)[2]
    raw = bytearray(log.read_bytes())
    raw[start + 16] = 1
    log.write_bytes(bytes(raw))
    error, offset = audit_error(data_dir)
    assert offset == start + 16 and "magic 1" in error


def _replace_value(log: Path, batch_index: int, value: bytes) -> int:
    """Put ``value`` into the first record of a batch; returns the value's file offset."""
    with open(log, "rb") as f:
        target = [b.base_offset for b in read_batches(f, str(log))][batch_index]

    def edit(batch: Batch, records: list[Record]) -> Optional[bytes]:
        if batch.base_offset != target:
            return None
        records[0] = records[0]._replace(value=value)
        return reencode(batch, records)
    rewrite(log, edit)
    with open(log, "rb") as f:
        batch = next(b for b in read_batches(f, str(log)) if b.base_offset == target)
    return batch.file_offset + HEADER_SIZE + 1 + 1 + 1 + 1 + 1 + 1  # length, attrs, ts, offset, key, value len


@pytest.mark.parametrize("value, delta, message", [
    (bytes.fromhex("01630000"), 1, "unknown metadata record apiKey 99"),
    (bytes.fromhex("01140700"), 2, "NoOpRecord has no version 7"),
    (bytes.fromhex("00140000"), 0, "2.8 preview"),
    (bytes.fromhex("0114000000"), 4, "garbage after"),
])
def test_bad_record_values(data_dir: Path, value: bytes, delta: int, message: str) -> None:
    value_at = _replace_value(data_dir / LOG, 50, value)
    error, offset = audit_error(data_dir)
    assert offset == value_at + delta and message in error


def test_compressed_batch_is_refused_with_its_codec(data_dir: Path) -> None:
    log = data_dir / LOG
    with open(log, "rb") as f:
        batch = list(read_batches(f, str(log)))[7]
    edit_header(log, batch.base_offset, attributes=4)
    error, offset = audit_error(data_dir)
    assert offset == batch.file_offset + 21 and "compressed batch (zstd)" in error


def test_hostile_record_count(tmp_path: Path) -> None:
    batch = encode_batch(0, 1, [Record(0, 0, 0, None, encode_metadata_value(20, 0, {}), 0)])
    raw = bytearray(batch)
    raw[57:61] = struct.pack(">i", 2**31 - 1)
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(_with_crc(bytes(raw)))
    report = audit_paths([path]).directories[0]
    assert report.errors[0].error_offset == 57 and "recordsCount 2147483647" in (report.errors[0].error or "")


def _with_crc(raw: bytes) -> bytes:
    return raw[:17] + struct.pack(">I", crc32c(raw[21:])) + raw[21:]


def test_snapshot_errors_name_the_file(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000005-0000000001.checkpoint"
    path.write_bytes(b"\x00" * 10)
    with pytest.raises(LogFormatError) as info:
        read_snapshot(str(path), 1)
    assert (info.value.file, info.value.offset) == (str(path), 0) and "truncated batch" in info.value.message


def test_missing_path_is_reported(tmp_path: Path) -> None:
    report = audit_paths([tmp_path / "nope"])
    assert not report.ok and "no such file" in (report.directories[0].files[0].error or "")


def test_a_batch_beyond_64_mib_is_refused_even_when_the_file_is_that_long(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.log"
    with open(path, "wb") as f:
        f.write(struct.pack(">qi", 0, 80 << 20))
        f.truncate(100 << 20)  # sparse: nothing is written or read beyond the header
    with open(path, "rb") as f, pytest.raises(LogFormatError) as info:
        next(read_batches(f, str(path)))
    assert info.value.offset == 8 and "at most 67108864" in info.value.message


@pytest.mark.parametrize("chunk_size", [HEADER_SIZE, 100, 4096])
def test_any_read_chunk_size_gives_the_same_batches_and_error(data_dir: Path, chunk_size: int) -> None:
    """Batches longer than a read chunk, chunks ending inside a header, and a bad batch after good ones."""
    log = data_dir / LOG
    raw = log.read_bytes()
    whole = list(read_batches(io.BytesIO(raw), "mem"))
    assert list(read_batches(io.BytesIO(raw), "mem", chunk_size)) == whole
    flipped = bytearray(raw)
    flipped[whole[300].file_offset + 70] ^= 0x04
    for size in (chunk_size, CHUNK_SIZE):
        read: list[Batch] = []
        with pytest.raises(LogFormatError) as info:
            read.extend(read_batches(io.BytesIO(bytes(flipped)), "mem", size))
        assert read == whole[:300] and info.value.offset == whole[300].file_offset + 17


def test_records_with_keys_headers_and_long_varints() -> None:
    """The record parser's one-byte-varint path and its general path give the same records."""
    records = [Record(0, 5, 10**12, None, b"v" * 300, 0), Record(0, 6, 10**12 + 7, b"key", b"", 0),
               Record(0, 200, 10**12 - 5, b"", None, 0)]
    batch = next(read_batches(io.BytesIO(encode_batch(5, 1, records, base_timestamp=10**12)), "mem"))
    assert [(r.offset, r.timestamp, r.key, r.value) for r in batch.records()] == \
        [(r.offset, r.timestamp, r.key, r.value) for r in records]
    # 12 bytes: attributes, timestampDelta, offsetDelta, null key, value "v", one header "h" = "xx" (zig-zag lengths)
    with_header = bytes.fromhex("18" "00" "00" "00" "01" "02" "76" "02" "02" "68" "04" "7878")
    headed = encode_batch(0, 1, [Record(0, 0, 0, None, b"v", 0)])
    raw = headed[:HEADER_SIZE] + with_header
    raw = raw[:8] + struct.pack(">i", len(raw) - 12) + raw[12:]
    batch = next(read_batches(io.BytesIO(_with_crc(raw)), "mem"))
    assert [(r.key, r.value) for r in batch.records()] == [(None, b"v")]
