"""Value rules of KIP-631 storage (rules §4.5): Kafka UUID text, Java ``Integer.parseInt``, reserved directory ids.

``clients/.../common/Uuid.java`` (``fromString``), ``common/DirectoryId.java`` (``reserved``). Plain
strings and ints in, a value or a ``ValueError`` with Kafka's message out.
"""

from __future__ import annotations

import re

from kraftspec.reference import broker_rules

_INT_RE = re.compile(r"[+-]?[0-9]+")
_BASE64URL = re.compile(r"[A-Za-z0-9_-]*")
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


def parse_java_int(text: str) -> int:
    """``Integer.parseInt``: optional sign and ASCII digits only (no whitespace), within int32."""
    if not _INT_RE.fullmatch(text):
        raise ValueError(f'For input string: "{text}"')
    value = int(text)
    if not INT32_MIN <= value <= INT32_MAX:
        raise ValueError(f'For input string: "{text}"')
    return value


def _decode_base64url(text: str) -> bytes:
    """``Base64.getUrlDecoder().decode``: URL alphabet, optional ``=`` padding, no dangling 6-bit unit."""
    body = text.rstrip("=")
    padding = len(text) - len(body)
    if not _BASE64URL.fullmatch(body):
        bad = next(c for c in body if not _BASE64URL.fullmatch(c))
        raise ValueError(f"Illegal base64 character {ord(bad):x}")
    if len(body) % 4 == 1 or padding > 2 or (padding and (len(body) + padding) % 4 != 0):
        raise ValueError("Last unit does not have enough valid bits")
    bits = "".join(format("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".index(c), "06b") for c in body)
    return bytes(int(bits[i:i + 8], 2) for i in range(0, len(bits) - len(bits) % 8, 8))


def uuid_from_string(text: str) -> tuple[int, int]:
    """``Uuid.fromString``: at most 24 characters of base64url decoding to exactly 16 bytes (so 22
    characters unpadded); returns the (most, least) significant 64-bit halves, unsigned."""
    if len(text) > 24:
        raise ValueError(f"Input string with prefix `{text[:24]}` is too long to be decoded as a base64 UUID")
    raw = _decode_base64url(text)
    if len(raw) != 16:
        raise ValueError(
            f"Input string `{text}` decoded as {len(raw)} bytes, which is not equal to the expected 16 bytes "
            "of a base64-encoded UUID"
        )
    return int.from_bytes(raw[:8], "big"), int.from_bytes(raw[8:], "big")


def is_reserved_directory_id(most: int, least: int) -> bool:
    """``DirectoryId.reserved`` on the unsigned halves :func:`uuid_from_string` gives: the registration's rule
    (``broker_rules.is_reserved_directory``, §1.3 check 4) on the halves as Java's signed ``long``s."""
    return broker_rules.is_reserved_directory(_as_long(most), _as_long(least))


def _as_long(half: int) -> int:
    """An unsigned 64-bit half as Java's signed ``long``."""
    return half - (1 << 64) if half >= 1 << 63 else half
