"""Limits every reader enforces on hostile input, and the helpers that enforce them (issue 21).

* **JSON nesting depth**: at most :data:`MAX_JSON_DEPTH` nested arrays/objects in any JSON text read (trace
  lines, Parquet cells, ``quorum-state``, the vectors manifest). The trace format nests about 8 deep.
* **Number size**: a JSON integer has at most :data:`MAX_INT_DIGITS` decimal digits (Python's own
  ``int`` parsing limit, ``sys.get_int_max_str_digits()``); a longer one makes its text unreadable.
* **Line length**: a JSON Lines trace is at most :data:`MAX_LINE_BYTES` (64 MiB) long.
* **Regular files only**: a reader opens a file with ``O_NONBLOCK`` and refuses anything that is not a
  regular file (a FIFO, a socket or a device named like a segment never blocks a command).
* **Error text**: control characters taken from the input (newlines, escape sequences, Unicode line
  separators) are written as ``\\xNN`` / ``\\uNNNN`` escapes, so an error message stays one line and a file
  cannot put fake lines into a report.
"""

from __future__ import annotations

import json
import os
import re
import reprlib
import stat
from typing import IO, Any, Optional, Union

MAX_JSON_DEPTH = 100
"""Nested JSON arrays and objects allowed in one JSON text (the trace format needs about 8)."""
MAX_INT_DIGITS = 4300
"""Decimal digits allowed in one JSON integer (Python's ``int`` parsing limit)."""
MAX_LINE_BYTES = 64 << 20
"""Bytes allowed in one JSON Lines line (one trace), like a metadata log's 64 MiB batch cap: a longer line is
unreadable and is never held whole in memory."""

_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
"""A JSON escape of a UTF-16 surrogate: only a pair of them is a character."""


def _escape(match: "re.Match[str]") -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape_controls(text: str) -> str:
    """``text`` with every control character (C0, DEL, C1, Unicode line/paragraph separators and bidi
    controls) written as an escape: one line whatever the input held."""
    return _CONTROLS.sub(_escape, text) if _CONTROLS.search(text) else text


def one_line(text: str) -> str:
    """``text`` with every run of white space (newlines included) made one space, then any other control escaped."""
    return escape_controls(" ".join(text.split()))


_QUOTE = reprlib.Repr()
_QUOTE.maxstring = _QUOTE.maxother = _QUOTE.maxlong = 80
_QUOTE.maxlevel, _QUOTE.maxlist, _QUOTE.maxdict = 3, 6, 6


def quote(value: Any) -> str:
    """``repr(value)`` for an error message: at most about 80 characters per string or number, 3 levels and 6 items
    per container, never recursing deeper (a value from the input may be huge or nested 1,000 deep)."""
    if type(value) is str and len(value) <= 80:
        return repr(value)
    return _QUOTE.repr(value)


class LimitError(ValueError):
    """A JSON text beyond :data:`MAX_JSON_DEPTH` or :data:`MAX_INT_DIGITS`, or not JSON at all: ``message`` says
    which (the caller wraps it in its own error type with the file and position)."""


def too_deep(value: Any, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether parsed JSON ``value`` nests more than ``limit`` arrays/objects (iterative: no recursion)."""
    kind = type(value)
    if kind is not dict and kind is not list:
        return False
    level, depth = [value], 0
    while level:
        depth += 1
        if depth > limit:
            return True
        below = []
        for item in level:
            for child in (item.values() if type(item) is dict else item):
                kind = type(child)
                if kind is dict or kind is list:
                    below.append(child)
        level = below
    return False


def loads(text: Union[str, bytes], depth: bool = True) -> Any:
    """``json.loads(text)`` within the limits; :class:`LimitError` (or ``json.JSONDecodeError``, a ValueError with
    ``pos``) otherwise. ``bytes`` must be UTF-8 (``UnicodeDecodeError`` otherwise).

    ``depth=False`` leaves the depth check of a text that parsed to the caller (a trace line's typed parts are
    bounded by their decoders, so ``trace_from_json`` checks only its free-form parts, :func:`check_depth`); the
    parser's own recursion limit is still turned into a :class:`LimitError`."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise LimitError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels") from None
    except json.JSONDecodeError:
        raise
    except ValueError as exc:  # an integer of more than 4300 digits (sys.get_int_max_str_digits)
        raise LimitError(f"a JSON number longer than {MAX_INT_DIGITS} digits" if "digits" in str(exc)
                         else f"invalid JSON: {exc}") from None
    if depth:
        check_depth(value)
    check_surrogates(text, value)
    return value


def has_surrogate_escape(text: Union[str, bytes]) -> bool:
    """Whether a JSON text escapes a UTF-16 surrogate (``\\ud800``): a cheap test, true for pairs too."""
    if isinstance(text, bytes):
        return b"\\u" in text and _SURROGATE_ESCAPE.search(text.decode("utf-8", "replace")) is not None
    return "\\u" in text and _SURROGATE_ESCAPE.search(text) is not None


def check_surrogates(text: Union[str, bytes], value: Any) -> None:
    """:class:`LimitError` when a string of ``value`` (parsed from ``text``) holds a lone surrogate: it is no
    Unicode text (it cannot be written as UTF-8, to a terminal or a report)."""
    if not has_surrogate_escape(text):
        return
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise LimitError(f"a JSON string escapes a lone UTF-16 surrogate ({exc.object[exc.start:exc.end]!a})") from None
    except (RecursionError, ValueError):
        raise LimitError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels") from None


def check_depth(value: Any, path: str = "") -> Any:
    """``value`` itself, or :class:`LimitError` when it nests deeper than :data:`MAX_JSON_DEPTH` (``path`` names it)."""
    if too_deep(value):
        raise LimitError(f"{path + ': ' if path else ''}JSON nested deeper than {MAX_JSON_DEPTH} levels")
    return value


class NotRegularFile(OSError):
    """A path that names something other than a regular file (FIFO, socket, device, directory)."""


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device")):
        if test(mode):
            return name
    return "not a regular file"


def open_regular(path: Union[str, "os.PathLike[str]"], mode: str = "rb") -> IO[bytes]:
    """Open ``path`` for binary reading without ever blocking: opened with ``O_NONBLOCK`` (a FIFO's open returns at
    once), then refused with :class:`NotRegularFile` unless it is a regular file."""
    if mode != "rb":
        raise ValueError("open_regular reads binary files only")
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotRegularFile(f"{escape_controls(os.fspath(path))}: {_kind(info.st_mode)}, not a regular file")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def is_regular(path: Union[str, "os.PathLike[str]"]) -> bool:
    """Whether ``path`` is a regular file (after symlinks); False for FIFOs, sockets, devices and missing paths."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def describe_os_error(exc: BaseException) -> str:
    """An ``OSError``'s reason without the path Python repeats (the caller names the file)."""
    if isinstance(exc, NotRegularFile):
        return str(exc).rsplit(": ", 1)[-1]
    reason: Optional[str] = getattr(exc, "strerror", None)
    return escape_controls(reason or str(exc))
