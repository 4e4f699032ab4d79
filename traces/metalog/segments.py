"""Streaming reader (and writer) of magic-v2 record batches: rules §5.2.

The reader holds one read chunk plus at most one batch in memory whatever the file's length. It
checks, before allocating anything a length field asks for: batchLength between the header size and
the bytes left in the file (and at most 64 MiB), magic = 2, the CRC-32C of attributes..end, and, when records are read,
every record length, key/value length and record count against the batch's own bytes.

Compressed batches: KRaft writes compression 0 only (rules §5.2), so a batch whose
attributes name a codec is reported as a :class:`LogFormatError` (with the codec) instead of being
decompressed; its CRC is still checked first, so a flipped bit is reported as such.
"""

from __future__ import annotations

import struct
from typing import BinaryIO, Iterator, NamedTuple, Optional, Sequence

from crc32c import crc32c

from kraftspec.traces.metalog.errors import LogFormatError

HEADER = struct.Struct(">qiibIhiqqqhii")
"""baseOffset .. recordsCount: the 61-byte batch header (rules §5.2)."""
HEADER_SIZE = HEADER.size
CHECK = struct.Struct(">8xi4xbIh")
"""batchLength, magic, crc and attributes: the header fields :func:`read_chunks` checks."""
LOG_OVERHEAD = 12
"""baseOffset + batchLength: the bytes not counted by batchLength."""
MIN_BATCH_LENGTH = HEADER_SIZE - LOG_OVERHEAD
MAX_BATCH_LENGTH = 64 << 20
"""Refused above 64 MiB, far beyond KRaft's 8 MiB maximum batch size (rules §3.1), so one batch
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
ZIGZAG = tuple((byte >> 1) ^ -(byte & 1) for byte in range(0x80))
"""The value of each one-byte signed zig-zag varint."""
Chunk = tuple[bytes, int, list[int], int]
"""``(buf, buf_offset, starts, end)`` from :func:`read_chunks`."""


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
        """Attribute bit 5: a control batch (rules §5.2)."""
        return bool(self.attributes & CONTROL_FLAG)

    @property
    def last_offset(self) -> int:
        """baseOffset + lastOffsetDelta."""
        return self.base_offset + self.last_offset_delta

    def records(self) -> list[Record]:
        """Every record of the batch as a list (:meth:`iter_records`); any inconsistency is a :class:`LogFormatError`."""
        return list(self.iter_records())

    def iter_records(self) -> Iterator[Record]:
        """Parse the records one at a time (signed zig-zag varints, §5.2); any inconsistency is a
        :class:`LogFormatError`, raised when the parse reaches it (the records before it have been yielded), so a
        batch's records are never all held at once: a 64 MiB batch of 7-byte records would be millions of them.

        One-byte varints (almost all of them) are read inline, the others by :func:`_zigzag` and :func:`_blob`,
        which also raise every error."""
        buf, pos, end, path = self.data, HEADER_SIZE, len(self.data), self.path
        base, base_offset, base_timestamp, count = self.file_offset, self.base_offset, self.base_timestamp, self.records_count
        if count < 0 or count * MIN_RECORD_SIZE > end - pos:
            raise LogFormatError(path, base + HEADER_SIZE - 4,
                                 f"recordsCount {count} cannot fit in the batch's {end - pos} record bytes")
        for _ in range(count):
            start = pos
            if pos < end and buf[pos] < 0x80:
                length, pos = ZIGZAG[buf[pos]], pos + 1
            else:
                length, pos = _zigzag(buf, pos, end, 5, path, base)
            if length < 0 or pos + length > end:
                raise LogFormatError(path, base + start,
                                     f"record length {length} exceeds the {end - pos} byte(s) left in the batch")
            rec_end = pos + length
            pos += 1  # attributes: unused (§5.2)
            if pos + 2 < rec_end and buf[pos] < 0x80 and buf[pos + 1] < 0x80 and buf[pos + 2] == 1:
                ts_delta, offset_delta, key, pos = ZIGZAG[buf[pos]], ZIGZAG[buf[pos + 1]], None, pos + 3  # null key
            else:
                ts_delta, pos = _zigzag(buf, pos, rec_end, 10, path, base)
                offset_delta, pos = _zigzag(buf, pos, rec_end, 5, path, base)
                key, pos, _ = _blob(buf, pos, rec_end, "key", path, base)
            if pos < rec_end and buf[pos] < 0x80 and 0 <= ZIGZAG[buf[pos]] <= rec_end - pos - 1:
                value_pos = pos + 1
                pos = value_pos + ZIGZAG[buf[pos]]
                value: Optional[bytes] = buf[value_pos:pos]
            else:
                value, pos, value_pos = _blob(buf, pos, rec_end, "value", path, base)
            if pos + 1 == rec_end and buf[pos] == 0:  # no headers
                pos = rec_end
            else:
                headers, pos = _zigzag(buf, pos, rec_end, 5, path, base)
                if headers < 0 or headers * 2 > rec_end - pos:
                    raise LogFormatError(path, base + pos, f"headersCount {headers} cannot fit in the record")
                for _ in range(headers):
                    _, pos, _ = _blob(buf, pos, rec_end, "header key", path, base)
                    _, pos, _ = _blob(buf, pos, rec_end, "header value", path, base)
                if pos != rec_end:
                    raise LogFormatError(path, base + pos,
                                         f"record declares {length} byte(s) but its fields end {rec_end - pos} byte(s) early")
            yield Record(base + start, base_offset + offset_delta, base_timestamp + ts_delta, key, value,
                         base + value_pos)
        if pos != end:
            raise LogFormatError(path, base + pos, f"{end - pos} byte(s) after the last of {count} records")


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
    """Yield each batch of a seekable binary ``stream`` from its current position to its end (§5.2).

    Raises :class:`LogFormatError` naming ``path`` and the absolute offset of: a header cut off by the end of
    the file, a batchLength below the header size or beyond the bytes left, magic ≠ 2, a CRC-32C mismatch,
    or a compressed batch (every batch before the bad one is yielded first).
    """
    for buf, buf_offset, starts, _ in read_chunks(stream, path, chunk_size):
        for pos in starts:
            yield batch_at(buf, buf_offset, pos, path)


def batch_at(buf: bytes, buf_offset: int, pos: int, path: str) -> Batch:
    """The :class:`Batch` starting at ``pos`` of a chunk from :func:`read_chunks` (already checked)."""
    header = HEADER.unpack_from(buf, pos)
    return tuple.__new__(Batch, header + (buf_offset + pos, buf[pos:pos + LOG_OVERHEAD + header[1]], path))


def read_chunks(stream: BinaryIO, path: str, chunk_size: int = CHUNK_SIZE) -> Iterator[Chunk]:
    """The batches of a seekable binary ``stream``, from its current position to its end, a chunk at a time (§5.2).

    Each :data:`Chunk` is ``(buf, buf_offset, starts, end)``: ``buf`` holds the file's bytes from ``buf_offset``
    on, ``starts`` the positions in ``buf`` of consecutive whole batches whose batchLength, magic, CRC-32C and
    compression were checked, and ``end`` the position after the last of them. At most one read chunk plus one
    batch is held: a batchLength is checked against the bytes left in the file (and 64 MiB) before the read it
    asks for. A bad batch raises :class:`LogFormatError` (the cases :func:`read_batches` lists) once the good
    batches before it have been yielded.
    """
    start = stream.tell()
    size = stream.seek(0, 2)
    stream.seek(start)
    check = CHECK.unpack_from
    buf, buf_offset, pos, end = b"", start, 0, 0
    while True:
        starts: list[int] = []
        append, room, last = starts.append, size - buf_offset, end - HEADER_SIZE
        need, error = HEADER_SIZE, None
        while pos <= last:
            length, magic, stored, attributes = check(buf, pos)
            after = pos + LOG_OVERHEAD + length
            if after > end or length < MIN_BATCH_LENGTH or length > MAX_BATCH_LENGTH:
                if length < MIN_BATCH_LENGTH or length > MAX_BATCH_LENGTH or after > room:
                    at = buf_offset + pos
                    error = LogFormatError(path, at + 8, f"batchLength {length} outside [{MIN_BATCH_LENGTH}, "
                                                         f"{_limit(size, at)}] (the bytes left in the file, at most "
                                                         f"{MAX_BATCH_LENGTH})")
                else:
                    need = after - pos  # the file holds the batch, the chunk does not: read on
                break
            if magic != MAGIC_V2:
                error = LogFormatError(path, buf_offset + pos + 16,
                                       f"magic {magic}, only magic 2 batches exist in KRaft logs")
                break
            computed = crc32c(buf[pos + CRC_START:after])
            if computed != stored:
                error = LogFormatError(path, buf_offset + pos + 17,
                                       f"CRC-32C mismatch: stored {stored:#010x}, computed {computed:#010x}")
                break
            if attributes & COMPRESSION_MASK:
                codec = attributes & COMPRESSION_MASK
                error = LogFormatError(path, buf_offset + pos + CRC_START,
                                       f"compressed batch ({CODECS.get(codec, codec)}): KRaft writes uncompressed "
                                       f"batches and this reader does not decompress")
                break
            append(pos)
            pos = after
        if starts:
            yield buf, buf_offset, starts, pos
        if error is not None:
            raise error
        buf = buf[pos:] + stream.read(max(chunk_size, need - (end - pos)))
        buf_offset, pos, end = buf_offset + pos, 0, len(buf)
        if end < need:
            if not end:
                return
            if end < HEADER_SIZE:
                _short_header(buf, buf_offset, size, path)
            raise LogFormatError(path, buf_offset, f"truncated batch: {end} of {need} byte(s) readable")


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
    """One record in the §5.2 layout with no headers."""
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
