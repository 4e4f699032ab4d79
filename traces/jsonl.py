"""JSON Lines codec: one trace per line (``.jsonl``, or gzip-compressed ``.jsonl.gz``).

Reading never stops at a bad line: each line yields its trace or the :class:`TraceError` that
says why it is unreadable, with its 1-based line number. Writing streams (bounded memory).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import IO, Iterable, Iterator, Union

from kraftspec.traces.format import Trace, trace_from_json, trace_to_json
from kraftspec.traces.values import TraceError


def _open(path: Union[str, Path], mode: str) -> IO[bytes]:
    return gzip.open(path, mode) if str(path).endswith(".gz") else open(path, mode)  # type: ignore[return-value]


def parse_line(line: bytes) -> Trace:
    """One line as a trace; truncated or invalid JSON, bad fields and wrong versions raise :class:`TraceError`."""
    try:
        obj = json.loads(line.decode("utf-8").rstrip("\r\n"))  # a column past the end would point at the newline
    except UnicodeDecodeError as exc:
        raise TraceError(f"not UTF-8 text: {exc.reason} at byte {exc.start}") from exc
    except json.JSONDecodeError as exc:
        raise TraceError(f"invalid JSON: {exc.msg} at column {exc.colno}") from exc
    return trace_from_json(obj)


def read_jsonl(path: Union[str, Path]) -> Iterator[tuple[int, Union[Trace, TraceError]]]:
    """(line number, trace or error) for every non-blank line of ``path``."""
    number = 0
    with _open(path, "rb") as stream:
        try:
            for number, line in enumerate(stream, start=1):
                if not line.strip():
                    continue
                try:
                    yield number, parse_line(line)
                except TraceError as exc:
                    yield number, exc
        except (OSError, EOFError) as exc:  # a truncated or corrupt .gz stream
            yield number + 1, TraceError(f"unreadable compressed stream: {exc}")


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
