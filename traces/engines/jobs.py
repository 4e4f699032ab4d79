"""``--jobs N``: ``kraftspec check`` and ``validate --engine local`` split across worker processes, reports unchanged.

The parent reads what is cheap (JSON Lines lines, Parquet footers) and hands out units in order: a chunk of
lines, a slice of a row group's rows, or a whole file that holds no trace or cannot be read. Workers decode
and replay them; the parent takes their results in the order given, so the report is the one a single
process writes. Workers are forks of this process (where the platform forks), so they run the very code and
state it has.
"""

from __future__ import annotations

import io
import itertools
import multiprocessing
import os
import pickle
from typing import Any, Callable, Iterable, Iterator, Optional, Union

import pyarrow as pa
import pyarrow.parquet as pq

from kraftspec.traces.replay import check
from kraftspec.traces.replay import verdict as replay
from kraftspec.traces.format.jsonl import parse, read_lines
from kraftspec.traces.format.limits import is_regular
from kraftspec.traces.format.parquet import from_row, reason, row_group_rows
from kraftspec.traces.format.values import TraceError

CHUNK_LINES = 32
"""JSON Lines lines per unit (fewer when they are long: :data:`CHUNK_BYTES`)."""
CHUNK_BYTES = 4 << 20
CHUNK_ROWS = 32
"""Parquet rows per unit."""

Unit = tuple[Any, ...]
"""``("file", path)``, ``("lines", path, [(number, line or error), ...])`` or ``("rows", path, group, first, rows,
start, stop)``; each with the index of its path first."""


def default_jobs() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def worker_pool(jobs: int) -> Any:
    """``jobs`` worker processes: forks of this one where the platform forks, else the platform's default."""
    forks = "fork" in multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if forks else None).Pool(jobs)


class _Pickler(pickle.Pickler):
    """Pickles the replay's ``ABSENT`` marker by name: the report tells it from a value by identity."""

    def persistent_id(self, obj: Any) -> Optional[str]:
        return "ABSENT" if obj is replay.ABSENT else None


class _Unpickler(pickle.Unpickler):
    def persistent_load(self, pid: Any) -> Any:
        if pid != "ABSENT":
            raise pickle.UnpicklingError(f"unknown persistent id {pid!r}")
        return replay.ABSENT


def _dumps(value: Any) -> bytes:
    out = io.BytesIO()
    _Pickler(out, pickle.HIGHEST_PROTOCOL).dump(value)
    return out.getvalue()


def _loads(data: bytes) -> Any:
    return _Unpickler(io.BytesIO(data)).load()


def check_entries(paths: list[str], jobs: int) -> Iterator[Iterator[check.Entry]]:
    """Per path, its entries as :func:`kraftspec.traces.replay.check.check_file` gives them, worked out by ``jobs``
    processes (in this one when ``jobs`` is 1)."""
    if jobs <= 1:
        yield from (check.check_file(path) for path in paths)
        return
    with worker_pool(jobs) as pool:
        results = pool.imap(_check_unit, _units(paths), chunksize=1)
        failed: set[tuple[int, int]] = set()  # (path index, row group) already reported unreadable
        for _, group in itertools.groupby(results, key=lambda result: result[0]):
            yield _entries(group, failed)


def _entries(results: Iterable[tuple[int, str, Any]], failed: set[tuple[int, int]]) -> Iterator[check.Entry]:
    for index, path, result in results:
        if isinstance(result, bytes):
            yield from _loads(result)
            continue
        group, first, rows, error = result  # a row group that cannot be read: one entry for the whole group
        if (index, group) not in failed:
            failed.add((index, group))
            where = f"row {first}" if rows == 1 else f"rows {first}-{first + rows - 1}"
            yield from check.check_file(path, [(where, rows, TraceError(error))])


def _units(paths: list[str]) -> Iterator[Unit]:
    for index, path in enumerate(paths):
        if is_regular(path) and path.endswith(".parquet"):
            yield from _row_units(index, path)
        elif is_regular(path):
            yield from _line_units(index, path)
        else:
            yield index, "file", path


def _line_units(index: int, path: str) -> Iterator[Unit]:
    chunk: list[tuple[int, Union[bytes, TraceError]]] = []
    size, given = 0, False
    for number, line in read_lines(path):
        chunk.append((number, line))
        size += len(line) if isinstance(line, bytes) else 0
        if len(chunk) == CHUNK_LINES or size >= CHUNK_BYTES:
            yield index, "lines", path, chunk
            chunk, size, given = [], 0, True
    if chunk or not given:  # a file without a line is its own entry (no trace in it)
        yield (index, "lines", path, chunk) if chunk else (index, "file", path)


def _row_units(index: int, path: str) -> Iterator[Unit]:
    try:
        metadata = pq.ParquetFile(path).metadata
        groups = [metadata.row_group(group).num_rows for group in range(metadata.num_row_groups)]
    except Exception:  # noqa: BLE001 - the file's own entry says why (as check_file reads it)
        yield index, "file", path
        return
    if not any(groups):
        yield index, "file", path
        return
    first = 0
    for group, rows in enumerate(groups):
        for start in range(0, rows, CHUNK_ROWS):
            yield index, "rows", path, group, first, rows, start, min(rows, start + CHUNK_ROWS)
        first += rows


_OPEN: dict[str, pq.ParquetFile] = {}  # this worker's open Parquet file (one at a time)


def _check_unit(unit: Unit) -> tuple[int, str, Any]:
    """A unit's entries, pickled (or, for a row group that cannot be read, what its one entry says)."""
    index, kind, path = unit[:3]
    if kind == "file":
        return index, path, _dumps(list(check.check_file(path)))
    if kind == "lines":
        items = ((f"line {number}", 1, line if isinstance(line, TraceError) else parse(line))
                 for number, line in unit[3])
        return index, path, _dumps(list(check.check_file(path, items)))
    group, first, rows, start, stop = unit[3:]
    try:
        if path not in _OPEN:
            _OPEN.clear()
            _OPEN[path] = pq.ParquetFile(path)
        batch = row_group_rows(_OPEN[path], group, start, stop)
    except Exception as exc:  # noqa: BLE001 - as read_parquet: any failure of pyarrow on these bytes
        return index, path, (group, first, rows, f"row group {group} (rows {first}-{first + rows - 1}) unreadable: "
                                                 f"{reason(exc)}")
    items = ((f"row {first + start + offset}", 1, _decoded(row)) for offset, row in enumerate(batch))
    return index, path, _dumps(list(check.check_file(path, items)))


def _decoded(row: dict[str, Any]) -> Any:
    try:
        return from_row(row)
    except TraceError as exc:
        return exc


def run_units(task: Callable[[dict[str, Any]], Iterator[pa.RecordBatch]], units: list[dict[str, Any]],
              jobs: int) -> Iterator[list[pa.RecordBatch]]:
    """Each unit's report batches (``validate``'s task), in the units' order, worked out by ``jobs`` processes."""
    if jobs <= 1 or len(units) <= 1:
        yield from (list(task(unit)) for unit in units)
        return
    with worker_pool(jobs) as pool:
        yield from pool.imap(_run_task, ((task, unit) for unit in units), chunksize=1)


def _run_task(work: tuple[Callable[[dict[str, Any]], Iterator[pa.RecordBatch]], dict[str, Any]]) -> list[pa.RecordBatch]:
    task, unit = work
    return list(task(unit))
