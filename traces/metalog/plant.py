"""Write modified copies of metadata logs and snapshots: plant a violation in a real log (tests), or build
a long log from a short one (benchmarks). Every rewritten batch gets a correct CRC-32C (rules §5.2)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

from kraftspec.traces.metalog.control import encode_control
from kraftspec.traces.metalog.schema import NOOP_VALUE, decode_metadata_value, encode_metadata_value
from kraftspec.traces.metalog.segments import CONTROL_FLAG, Batch, Record, read_batches, reencode

BatchEdit = Callable[[Batch, list[Record]], Optional[bytes]]
"""Given a batch and its records, the bytes to write instead, or None to keep the batch."""


def copy_tree(src: Path, dst: Path) -> Path:
    """A writable copy of a data directory."""
    shutil.copytree(src, dst)
    for path in dst.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    return dst


def rewrite(path: Path, edit: BatchEdit) -> None:
    """Rewrite ``path`` in place, batch by batch."""
    out = bytearray()
    with open(path, "rb") as f:
        for batch in read_batches(f, str(path)):
            records = batch.records()
            replacement = edit(batch, records)
            out += batch.data if replacement is None else replacement
    path.write_bytes(bytes(out))


def _at(offset: int, change: Callable[[Batch, list[Record], int], bytes]) -> BatchEdit:
    def edit(batch: Batch, records: list[Record]) -> Optional[bytes]:
        if batch.base_offset <= offset <= batch.last_offset:
            return change(batch, records, offset - batch.base_offset)
        return None
    return edit


def edit_record(path: Path, offset: int, version: Optional[int] = None, api_key: Optional[int] = None,
                **changes: Any) -> dict[str, Any]:
    """Decode the data record at ``offset``, apply ``changes`` (and a new version / apiKey), re-encode it.

    Returns the record's fields after the change."""
    result: dict[str, Any] = {}

    def change(batch: Batch, records: list[Record], index: int) -> bytes:
        key, old_version, fields = decode_metadata_value(records[index].value or b"")
        fields.update(changes)
        result.update(fields)
        value = encode_metadata_value(key if api_key is None else api_key,
                                      old_version if version is None else version, fields)
        records[index] = records[index]._replace(value=value)
        return reencode(batch, records)
    rewrite(path, _at(offset, change))
    return result


def replace_with_noop(path: Path, offset: int) -> None:
    """Turn the batch holding ``offset`` into a data batch of NoOpRecords at the same offsets and epoch."""
    def change(batch: Batch, records: list[Record], index: int) -> bytes:
        noops = [r._replace(key=None, value=NOOP_VALUE) for r in records]
        return reencode(batch, noops, attributes=batch.attributes & ~CONTROL_FLAG)
    rewrite(path, _at(offset, change))


def set_control(path: Path, offset: int, kind: int, fields: dict[str, Any]) -> None:
    """Replace the control record at ``offset`` by a control record of type ``kind`` with ``fields``."""
    def change(batch: Batch, records: list[Record], index: int) -> bytes:
        key, value = encode_control(kind, fields)
        records[index] = records[index]._replace(key=key, value=value)
        return reencode(batch, records)
    rewrite(path, _at(offset, change))


def edit_header(path: Path, offset: int, **header: int) -> None:
    """Override header fields (``base_offset``, ``leader_epoch``, ``producer_id``...) of the batch holding ``offset``."""
    rewrite(path, _at(offset, lambda batch, records, index: reencode(batch, records, **header)))


def repeated(path: Path, times: int) -> Iterator[bytes]:
    """The batches of a log ``times`` over, offsets shifted so they stay contiguous (a longer, still valid log
    for memory and throughput measurements: its epochs repeat, which only Raft rules would notice)."""
    with open(path, "rb") as f:
        batches = [(b, b.records()) for b in read_batches(f, str(path))]
    span = batches[-1][0].last_offset + 1 - batches[0][0].base_offset
    for k in range(times):
        for batch, records in batches:
            yield batch.data if k == 0 else reencode(batch, records, base_offset=batch.base_offset + k * span)
