"""JSON Lines codec: one trace per line (``.jsonl``, or gzip-compressed ``.jsonl.gz``).

Reading never stops at a bad line: each line yields its trace or the :class:`TraceError` that
says why it is unreadable, with its 1-based line number. A line is scanned by msgspec and its parts decoded through
the memos of :mod:`kraftspec.traces.format.fastdecode`; anything unusual (and every error) by the checked decoder, which
names the error.
Writing streams (bounded memory).
"""

from __future__ import annotations

import gzip
import json
import zlib
from pathlib import Path
from typing import IO, Iterable, Iterator, Union

from kraftspec.traces.format import fastdecode
from kraftspec.traces.format.envelope import Trace, trace_from_json, trace_to_json
from kraftspec.traces.format.limits import MAX_LINE_BYTES, LimitError, describe_os_error, loads, open_regular
from kraftspec.traces.format.values import TraceError


def _open(path: Union[str, Path], mode: str) -> IO[bytes]:
    if "r" in mode:  # a regular file only (a FIFO named like a trace never blocks)
        raw = open_regular(path)
        return gzip.GzipFile(fileobj=raw, mode="rb") if str(path).endswith(".gz") else raw  # type: ignore[return-value]
    return gzip.open(path, mode) if str(path).endswith(".gz") else open(path, mode)  # type: ignore[return-value]


def parse_line(line: bytes) -> Trace:
    """One line as a trace; truncated or invalid JSON, JSON beyond the limits (:mod:`kraftspec.traces.format.limits`), bad
    fields and wrong versions raise :class:`TraceError` (:func:`parse_line_checked` decides anything unusual)."""
    try:
        with fastdecode.no_gc():
            return fastdecode.trace(line)
    except Exception:  # noqa: BLE001 - any doubt: the checked decoder decides (and names the error), below
        pass
    return parse_line_checked(line)


def parse_line_checked(line: bytes) -> Trace:
    """:func:`parse_line`'s trace, every check in the order of the format's definition (the errors' order)."""
    try:
        # a column past the end would point at the newline; trace_from_json checks the free-form parts' depth
        obj = loads(line.decode("utf-8").rstrip("\r\n"), depth=False)
    except UnicodeDecodeError as exc:
        raise TraceError(f"not UTF-8 text: {exc.reason} at byte {exc.start}") from None
    except json.JSONDecodeError as exc:
        raise TraceError(f"invalid JSON: {exc.msg} at column {exc.colno}") from None
    except LimitError as exc:
        raise TraceError(str(exc)) from None
    return trace_from_json(obj)


def _lines(stream: IO[bytes]) -> Iterator[bytes]:
    """The lines of ``stream``, each at most :data:`MAX_LINE_BYTES` (a longer one is cut there and its rest skipped,
    so one line never holds more than that in memory); a cut line is returned with no newline at its end."""
    while True:
        line = stream.readline(MAX_LINE_BYTES + 1)
        if not line:
            return
        if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
            while True:  # skip the rest of the over-long line
                rest = stream.readline(MAX_LINE_BYTES)
                if not rest or rest.endswith(b"\n"):
                    break
            yield line[:MAX_LINE_BYTES + 1]
            continue
        yield line


def read_jsonl(path: Union[str, Path]) -> Iterator[tuple[int, Union[Trace, TraceError]]]:
    """(line number, trace or error) for every non-blank line of ``path``; a file that cannot be opened, or a
    compressed stream that breaks off, is one error item (at line 1, or at the line after the last one read)."""
    for number, line in read_lines(path):
        yield number, line if isinstance(line, TraceError) else parse(line)


def parse(line: bytes) -> Union[Trace, TraceError]:
    """:func:`parse_line`'s trace, or the error that makes the line unreadable."""
    try:
        return parse_line(line)
    except TraceError as exc:
        return exc


def read_lines(path: Union[str, Path]) -> Iterator[tuple[int, Union[bytes, TraceError]]]:
    """(line number, line or error) for every non-blank line of ``path``, undecoded; errors as :func:`read_jsonl`."""
    number = 0
    try:
        stream = _open(path, "rb")
    except OSError as exc:
        yield 1, TraceError(f"cannot read: {describe_os_error(exc)}")
        return
    with stream:
        try:
            for number, line in enumerate(_lines(stream), start=1):
                if len(line) > MAX_LINE_BYTES:
                    yield number, TraceError(f"line longer than {MAX_LINE_BYTES} bytes")
                elif line.strip():
                    yield number, line
        except (OSError, EOFError, zlib.error) as exc:  # a truncated or corrupt .gz stream (BadGzipFile is an OSError)
            yield number + 1, TraceError(f"unreadable compressed stream: {describe_os_error(exc)}")


def dumps(trace: Trace) -> str:
    """One compact JSON line (no newline)."""
    return json.dumps(trace_to_json(trace), separators=(",", ":"))


def write_jsonl(path: Union[str, Path], traces: Iterable[Trace]) -> int:
    """Write ``traces`` one per line as they come; returns how many were written."""
    count = 0
    with _open(path, "wb") as stream:
        for trace in traces:
            stream.write(dumps(trace).encode() + b"\n")
            count += 1
    return count
