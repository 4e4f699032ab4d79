"""The one exception every metadata-log reader raises: which file, which byte, what is wrong."""

from __future__ import annotations

from kraftspec.traces.format.limits import escape_controls


class LogFormatError(ValueError):
    """A malformed input: ``file`` and absolute byte ``offset`` of the first bad byte, and a plain ``message``
    (control characters from the input, in the message or the file name, are escaped: one line)."""

    def __init__(self, file: str, offset: int, message: str) -> None:
        file, message = escape_controls(str(file)), escape_controls(str(message))
        super().__init__(f"{file}:{offset}: {message}")
        self.file = file
        self.offset = offset
        self.message = message


class DecodeError(ValueError):
    """A malformed record value at ``position`` inside the value; readers turn it into a :class:`LogFormatError`."""

    def __init__(self, position: int, message: str) -> None:
        super().__init__(message)
        self.position = position
        self.message = message
