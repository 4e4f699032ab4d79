"""Streaming reader (and writer) of magic-v2 record batches: metadata-records §2.

The reader holds one read chunk plus at most one batch in memory whatever the file's length. It
checks, before allocating anything a length field asks for: batchLength between the header size and
the bytes left in the file (and at most 64 MiB), magic = 2, the CRC-32C of attributes..end, and, when records are read,
every record length, key/value length and record count against the batch's own bytes.

Compressed batches: KRaft writes compression 0 only (metadata-records §2), so a batch whose
attributes name a codec is reported as a :class:`LogFormatError` (with the codec) instead of being
decompressed; its CRC is still checked first, so a flipped bit is reported as such.
"""

from __future__ import annotations

import struct
from typing import BinaryIO, Iterator, NamedTuple, Optional, Sequence

from crc32c import crc32c

from kraftspec.traces.metalog.errors import LogFormatError

HEADER = struct.Struct(">qiibIhiqqqhii")
"""baseOffset .. recordsCount: the 61-byte batch header (metadata-records §2)."""
HEADER_SIZE = HEADER.size
LOG_OVERHEAD = 12
"""baseOffset + batchLength: the bytes not counted by batchLength."""
MIN_BATCH_LENGTH = HEADER_SIZE - LOG_OVERHEAD
MAX_BATCH_LENGTH = 64 << 20
"""Refused above 64 MiB, far beyond KRaft's 8 MiB maximum batch size (kraft-semantics §3.1), so one batch
never makes the reader hold more than that."""
CRC_START = 21
MAGIC_V2 = 2
CONTROL_FLAG = 0x20
TRANSACTIONAL_FLAG = 0x10
COMPRESSION_MASK = 0x07
CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
MIN_RECORD_SIZE = 7
"""length, attributes, timestampDelta, offsetDelta, keyLength, valueLength, headersCount: one byte each at least."""
CHUNK_SIZE = 1 << 20


class Record(NamedTuple):
    """One record of a batch: its absolute ``offset`` and ``timestamp``, ``key``/``value`` (``None`` = null)."""

    file_offset: int
    offset: int
    timestamp: int
    key: Optional[bytes]
    value: Optional[bytes]
    value_file_offset: int
    """Absolute file position of the value's first byte (for errors inside the value)."""


class Batch(NamedTuple):
    """A v2 batch whose header, length and CRC-32C were checked; ``data`` holds all its bytes."""

    base_offset: int
    batch_length: int
    leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int
    file_offset: int
    data: bytes
    path: str

    @property
    def is_control(self) -> bool:
        """Attribute bit 5: a control batch (metadata-records §2)."""
        return bool(self.attributes & CONTROL_FLAG)

    @property
    def last_offset(self) -> int:
        """baseOffset + lastOffsetDelta."""
        return self.base_offset + self.last_offset_delta

    def records(self) -> list[Record]:
        """Parse the records (signed zig-zag varints, §2); any inconsistency is a :class:`LogFormatError`."""
        buf, pos, end = self.data, HEADER_SIZE, len(self.data)
        base = self.file_offset
        if self.records_count < 0 or self.records_count * MIN_RECORD_SIZE > end - pos:
            raise LogFormatError(self.path, base + HEADER_SIZE - 4,
                                 f"recordsCount {self.records_count} cannot fit in the batch's {end - pos} record bytes")
        out = []
        for _ in range(self.records_count):
            start = pos
            length, pos = _zigzag(buf, pos, end, 5, self.path, base)
            if length < 0 or pos + length > end:
                raise LogFormatError(self.path, base + start,
                                     f"record length {length} exceeds the {end - pos} byte(s) left in the batch")
            rec_end = pos + length
            pos += 1  # attributes: unused (§2)
            ts_delta, pos = _zigzag(buf, pos, rec_end, 10, self.path, base)
            offset_delta, pos = _zigzag(buf, pos, rec_end, 5, self.path, base)
            key, pos, _ = _blob(buf, pos, rec_end, "key", self.path, base)
            value, pos, value_pos = _blob(buf, pos, rec_end, "value", self.path, base)
            headers, pos = _zigzag(buf, pos, rec_end, 5, self.path, base)
            if headers < 0 or headers * 2 > rec_end - pos:
                raise LogFormatError(self.path, base + pos, f"headersCount {headers} cannot fit in the record")
            for _ in range(headers):
                _, pos, _ = _blob(buf, pos, rec_end, "header key", self.path, base)
                _, pos, _ = _blob(buf, pos, rec_end, "header value", self.path, base)
            if pos != rec_end:
                raise LogFormatError(self.path, base + pos,
                                     f"record declares {length} byte(s) but its fields end {rec_end - pos} byte(s) early")
            out.append(Record(base + start, self.base_offset + offset_delta, self.base_timestamp + ts_delta,
                              key, value, base + value_pos))
        if pos != end:
            raise LogFormatError(self.path, base + pos, f"{end - pos} byte(s) after the last of {self.records_count} records")
        return out


def _zigzag(buf: bytes, pos: int, end: int, max_bytes: int, path: str, base: int) -> tuple[int, int]:
    """Signed zig-zag varint (varint: 5 bytes max, varlong: 10) ending before ``end``."""
    value = shift = 0
    for _ in range(max_bytes):
        if pos >= end:
            raise LogFormatError(path, base + pos, "varint runs past the end of the record")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return (value >> 1) ^ -(value & 1), pos
        shift += 7
    raise LogFormatError(path, base + pos - max_bytes, f"varint longer than {max_bytes} bytes")


def _blob(buf: bytes, pos: int, end: int, what: str, path: str, base: int) -> tuple[Optional[bytes], int, int]:
    """A varint length (−1 = null) then that many bytes; returns (bytes, next position, start of bytes)."""
    start = pos
    length, pos = _zigzag(buf, pos, end, 5, path, base)
    if length == -1:
        return None, pos, pos
    if length < 0 or pos + length > end:
        raise LogFormatError(path, base + start, f"{what} length {length} exceeds the {end - pos} byte(s) left in the record")
    return buf[pos:pos + length], pos + length, pos


def read_batches(stream: BinaryIO, path: str, chunk_size: int = CHUNK_SIZE) -> Iterator[Batch]:
    """Yield each batch of a seekable binary ``stream`` from its current position to its end (§2).

    Raises :class:`LogFormatError` naming ``path`` and the absolute offset of: a header cut off by the end of
    the file, a batchLength below the header size or beyond the bytes left, magic ≠ 2, a CRC-32C mismatch,
    or a compressed batch.
    """
    start = stream.tell()
    size = stream.seek(0, 2)
    stream.seek(start)
    unpack, new = HEADER.unpack_from, tuple.__new__
    buf, buf_offset, pos, end = b"", start, 0, 0
    while True:
        if end - pos < HEADER_SIZE:
            buf, buf_offset, pos = buf[pos:] + stream.read(chunk_size), buf_offset + pos, 0
            end = len(buf)
            if not end:
                return
            if end < HEADER_SIZE:
                _short_header(buf, buf_offset, size, path)
        header = unpack(buf, pos)
        length = header[1]
        total = LOG_OVERHEAD + length
        if length < MIN_BATCH_LENGTH or length > MAX_BATCH_LENGTH or buf_offset + pos + total > size:
            at = buf_offset + pos
            raise LogFormatError(path, at + 8, f"batchLength {length} outside [{MIN_BATCH_LENGTH}, "
                                               f"{_limit(size, at)}] (the bytes left in the file, at most "
                                               f"{MAX_BATCH_LENGTH})")
        if end - pos < total:
            buf = buf[pos:] + stream.read(max(chunk_size, total - (end - pos)))
            buf_offset, pos, end = buf_offset + pos, 0, len(buf)
            if end < total:
                raise LogFormatError(path, buf_offset, f"truncated batch: {end} of {total} byte(s) readable")
        at = buf_offset + pos
        if header[3] != MAGIC_V2:
            raise LogFormatError(path, at + 16, f"magic {header[3]}, only magic 2 batches exist in KRaft logs")
        data = buf[pos:pos + total]
        computed = crc32c(data[CRC_START:])
        if computed != header[4]:
            raise LogFormatError(path, at + 17, f"CRC-32C mismatch: stored {header[4]:#010x}, computed {computed:#010x}")
        if header[5] & COMPRESSION_MASK:
            codec = header[5] & COMPRESSION_MASK
            raise LogFormatError(path, at + CRC_START, f"compressed batch ({CODECS.get(codec, codec)}): KRaft writes "
                                                        f"uncompressed batches and this reader does not decompress")
        yield new(Batch, header + (at, data, path))
        pos += total


def _limit(size: int, at: int) -> int:
    """The largest batchLength a batch starting at ``at`` may declare."""
    return max(min(size - at - LOG_OVERHEAD, MAX_BATCH_LENGTH), 0)


def _short_header(buf: bytes, at: int, size: int, path: str) -> None:
    """The file ends less than a header after ``at``: name the batchLength if it is readable, else the cut."""
    if len(buf) >= LOG_OVERHEAD:
        length = int.from_bytes(buf[8:12], "big", signed=True)
        if length < MIN_BATCH_LENGTH or length > size - at - LOG_OVERHEAD:
            raise LogFormatError(path, at + 8, f"batchLength {length} outside [{MIN_BATCH_LENGTH}, "
                                               f"{_limit(size, at)}] (the bytes left in the file)")
    raise LogFormatError(path, at, f"truncated batch: {len(buf)} byte(s) where a {HEADER_SIZE}-byte header starts")


# ---------------------------------------------------------------------------------------------------
# Writing batches (used to build and plant logs in tests and benchmarks).

def _write_zigzag(value: int, out: bytearray) -> None:
    value = (value << 1) ^ (value >> 63)
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def encode_record(offset_delta: int, timestamp_delta: int, key: Optional[bytes], value: Optional[bytes]) -> bytes:
    """One record in the §2 layout with no headers."""
    body = bytearray(b"\x00")
    _write_zigzag(timestamp_delta, body)
    _write_zigzag(offset_delta, body)
    for blob in (key, value):
        if blob is None:
            _write_zigzag(-1, body)
        else:
            _write_zigzag(len(blob), body)
            body.extend(blob)
    _write_zigzag(0, body)
    out = bytearray()
    _write_zigzag(len(body), out)
    return bytes(out + body)


def encode_batch(base_offset: int, leader_epoch: int, records: Sequence[Record], *, attributes: int = 0,
                 base_timestamp: int = 0, max_timestamp: Optional[int] = None, producer_id: int = -1,
                 producer_epoch: int = -1, base_sequence: int = -1) -> bytes:
    """A v2 batch with a correct CRC-32C (producer fields default to KRaft's −1); record offsets/timestamps are absolute."""
    body = b"".join(encode_record(r.offset - base_offset, r.timestamp - base_timestamp, r.key, r.value) for r in records)
    last_delta = records[-1].offset - base_offset if records else 0
    if max_timestamp is None:
        max_timestamp = max((r.timestamp for r in records), default=base_timestamp)
    after_crc = struct.pack(">hiqqqhii", attributes, last_delta, base_timestamp, max_timestamp, producer_id,
                            producer_epoch, base_sequence, len(records)) + body
    crc = crc32c(after_crc)
    return struct.pack(">qiibI", base_offset, len(after_crc) + 9, leader_epoch, MAGIC_V2, crc) + after_crc


def reencode(batch: Batch, records: Sequence[Record], **header: int) -> bytes:
    """``batch`` with new ``records`` and any header field overridden (``base_offset``, ``leader_epoch``,
    ``attributes``, ``producer_id``...), its CRC recomputed; records move with a new base offset."""
    fields = {"base_offset": batch.base_offset, "leader_epoch": batch.leader_epoch, "attributes": batch.attributes,
              "base_timestamp": batch.base_timestamp, "max_timestamp": batch.max_timestamp,
              "producer_id": batch.producer_id, "producer_epoch": batch.producer_epoch,
              "base_sequence": batch.base_sequence}
    fields.update(header)
    shift = fields["base_offset"] - batch.base_offset
    moved = [r._replace(offset=r.offset + shift) for r in records]
    return encode_batch(fields.pop("base_offset"), fields.pop("leader_epoch"), moved, **fields)
