"""A fuzzing engine for every reader of hostile input (issue 21): structure-aware mutations seeded from the
bundled files, a contract checked on every input, failures saved as reproducers.

Readers (:data:`READERS`): metadata-log ``segment``, ``snapshot`` and whole ``datadir`` audits, the small files
(``quorum-state``, ``leader-epoch-checkpoint``, ``meta.properties``, ``partition.metadata``), traces
(``jsonl``, ``jsonl.gz``, ``parquet``, each trace read is also replayed and its verdict rendered),
``validate`` (the per-unit task of ``kraftspec validate``) and ``vectors-verify``.

Mutations know the formats: a metadata log is decoded into batches and records, a record's value into its
fields (``kraftspec.traces.metalog.schema``), a field is changed and everything is encoded again with a correct
CRC-32C, so the rules and the image are reached, not only the CRC check; traces are mutated as JSON trees
(a field renamed, deleted or replaced by a hostile value: nested 1,000 deep, 5,000 digits, '²', control
characters), then sometimes as bytes; Parquet cells also get invalid UTF-8. Every random choice comes from one
``random.Random(seed)``: an input is reproduced from (reader, seed, index) or from its saved bytes.

The contract (:func:`run_one`): a reader raises nothing but its own error type (``LogFormatError``, ``TraceError``,
``VectorsError``), which it turns into a report or an error item; a command's exit code is 0, 1 or 2 and 2
exactly when something was unreadable; no error text or report line carries a control character from the
input; every input finishes within the timeout. Anything else is a failure.
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import io
import json
import os
import random
import re
import shutil
import signal
import struct
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029]")
"""Control characters no report or error line may carry (a newline only separates lines of our own)."""
INTERESTING_INTS = (0, 1, -1, 2, -2, 127, 128, 255, 256, 32767, -32768, 65535, 2**31 - 1, -2**31, 2**31,
                    2**63 - 1, -2**63, 2**63, 2**64, 10**18, -10**18)
HOSTILE_STRINGS = ("", "²", "٣", "1²", "-", "--1", "+1", " 1", "1 ", "\n", "a\nb", "\r\n", "\x1b[31mred", "\x00",
                   "\u2028", "\u202e", "é", "\ud7ff", "☃" * 10, "x" * 5000, "1" * 5000, "-" + "9" * 4400, "null",
                   "AAAAAAAAAAAAAAAAAAAAAQ", "AAAAAAAAAAAAAAAAAAAAAA", "../../etc/passwd", "/abs", "a\x00b", "1.0",
                   "2.0", "0.x", "²." + "0", "NaN", "1e999")


class Raw(str):
    """JSON text written as it is by :func:`dumps` (a number of 6,000 digits: Python cannot make it an ``int``)."""


def hostile_json(rng: random.Random) -> Any:
    """A JSON value chosen to break readers: deep nesting, huge numbers, odd strings, wrong types."""
    kind = rng.randrange(12)
    if kind == 0:
        depth = rng.choice((99, 100, 101, 500, 990, 1000, 1001, 5000, 20000))
        value: Any = 0
        for _ in range(depth):
            value = [value] if rng.random() < 0.5 else {"a": value}
        return value
    if kind == 1:
        return Raw(rng.choice(("1", "9", "-9")) + "0" * rng.choice((10, 19, 20, 100, 4299, 4300, 4301, 6000)))
    if kind == 2:
        return rng.choice(INTERESTING_INTS)
    if kind == 3:
        return rng.choice(HOSTILE_STRINGS)
    if kind == 4:
        return rng.choice((None, True, False, 0.5, -0.0, 1e308, float("inf"), float("nan")))
    if kind == 5:
        return [rng.choice(INTERESTING_INTS) for _ in range(rng.randrange(6))]
    if kind == 6:
        return {rng.choice(HOSTILE_STRINGS[:20]): rng.choice(INTERESTING_INTS)}
    if kind == 7:
        return []
    if kind == 8:
        return {}
    if kind == 9:
        return [None] * rng.randrange(1, 4)
    if kind == 10:
        return "".join(chr(rng.randrange(0, 0x3000)) for _ in range(rng.randrange(1, 12)))
    return rng.randrange(-1000, 1000)


def dumps(value: Any) -> str:
    """Compact JSON text of ``value`` without recursion (``json.dumps`` cannot write a value nested 20,000 deep);
    NaN and infinities as Python writes them, lone surrogates escaped."""
    out: list[str] = []
    stack: list[tuple[bool, Any]] = [(False, value)]
    while stack:
        literal, item = stack.pop()
        if literal:
            out.append(item)
            continue
        kind = type(item)
        if kind is Raw:
            out.append(item)
        elif kind is dict:
            tokens: list[tuple[bool, Any]] = []
            for n, (key, child) in enumerate(item.items()):
                if n:
                    tokens.append((True, ","))
                tokens += [(True, json.dumps(str(key)) + ":"), (False, child)]
            out.append("{")
            stack.append((True, "}"))
            stack.extend(reversed(tokens))
        elif kind is list or kind is tuple:
            tokens = []
            for n, child in enumerate(item):
                if n:
                    tokens.append((True, ","))
                tokens.append((False, child))
            out.append("[")
            stack.append((True, "]"))
            stack.extend(reversed(tokens))
        else:
            out.append(json.dumps(item, allow_nan=True))
    return "".join(out)


def _paths(value: Any, prefix: tuple[Any, ...] = (), out: Optional[list[tuple[Any, ...]]] = None,
           limit: int = 4000) -> list[tuple[Any, ...]]:
    """Every path (keys and indexes) into a JSON tree, the root included (at most ``limit``)."""
    out = [] if out is None else out
    stack = [(value, prefix)]
    while stack and len(out) < limit:
        node, path = stack.pop()
        out.append(path)
        if isinstance(node, dict):
            stack.extend((v, path + (k,)) for k, v in node.items())
        elif isinstance(node, list):
            stack.extend((v, path + (i,)) for i, v in enumerate(node))
    return out


def _get(value: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        value = value[key]
    return value


def mutate_json(rng: random.Random, value: Any, donors: tuple[Any, ...] = ()) -> Any:
    """One to three structure-aware changes to a (deep-copied) JSON tree: replace, delete, rename, duplicate or
    splice in a subtree from a donor."""
    value = json.loads(json.dumps(value))  # seeds are shallow; what is spliced in later is never copied again
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        paths = _paths(value)
        path = rng.choice(paths)
        if not path:
            if rng.random() < 0.1:
                return hostile_json(rng)
            continue
        parent, key = _get(value, path[:-1]), path[-1]
        action = rng.randrange(7)
        if action <= 1:
            parent[key] = hostile_json(rng)
        elif action == 2:
            del parent[key]
        elif action == 3 and isinstance(parent, dict):  # a renamed field
            item = parent.pop(key)
            parent[rng.choice((key + "x", key[:-1], key.upper(), rng.choice(HOSTILE_STRINGS[:12])))] = item
        elif action == 4 and isinstance(parent, list):
            parent.insert(key, parent[key])  # shared, not copied: it may be nested 20,000 deep
        elif action == 5 and donors:
            donor = rng.choice(donors)
            donor_paths = _paths(donor, limit=500)
            parent[key] = json.loads(json.dumps(_get(donor, rng.choice(donor_paths))))
        else:
            node = parent[key]
            if isinstance(node, int) and not isinstance(node, bool):
                parent[key] = rng.choice((node + 1, node - 1, -node, node * 2**32, rng.choice(INTERESTING_INTS)))
            elif isinstance(node, str):
                parent[key] = rng.choice((node + rng.choice(HOSTILE_STRINGS[:20]), node[::-1], node[:1],
                                          rng.choice(HOSTILE_STRINGS)))
            elif isinstance(node, list) and node:
                rng.shuffle(node)
            else:
                parent[key] = hostile_json(rng)
    return value


def mutate_bytes(rng: random.Random, data: bytes, max_len: int = 1 << 22) -> bytes:
    """Byte-level havoc: flips, interesting bytes, insertions, deletions, truncation, duplication."""
    buf = bytearray(data)
    for _ in range(rng.choice((1, 1, 2, 4, 8))):
        op = rng.randrange(8)
        pos = rng.randrange(len(buf) + 1)
        if op == 0 and buf:
            i = rng.randrange(len(buf))
            buf[i] ^= 1 << rng.randrange(8)
        elif op == 1 and buf:
            buf[rng.randrange(len(buf))] = rng.choice((0, 1, 0x7F, 0x80, 0xFF, 0x0A, 0xC0, 0xED, 0xF4, 0xFE))
        elif op == 2:
            buf[pos:pos] = rng.choice((b"\xff", b"\x00", b"\n", b"\xc3\x28", b"\xed\xa0\x80", b"\xc2\xb2", b"9" * 40,
                                       b"[" * 1200, b'"', b"\\", b"{", b"}", b"\x1b", b"\r"))
        elif op == 3 and buf:
            end = min(len(buf), pos + rng.randrange(1, 64))
            del buf[pos:end]
        elif op == 4:
            del buf[pos:]
        elif op == 5 and buf:
            start = rng.randrange(len(buf))
            chunk = buf[start:start + rng.randrange(1, 256)]
            buf[pos:pos] = chunk
        elif op == 6 and len(buf) >= 4:
            i = rng.randrange(len(buf) - 3)
            buf[i:i + 4] = struct.pack(">i", rng.choice(INTERESTING_INTS[:12]))
        elif buf:
            i = rng.randrange(len(buf))
            buf[i] = rng.randrange(256)
    return bytes(buf[:max_len])


# ---------------------------------------------------------------------------------------------------
# Metadata logs: batches and records, mutated as structures and encoded again with a correct CRC-32C.

@dataclass
class LogSeed:
    """A metadata log as ``(header fields, [(key, value), ...])`` per batch (offsets renumbered contiguously)."""

    batches: list[tuple[dict[str, int], list[tuple[Optional[bytes], Optional[bytes]]]]]


def _read_log_seed(path: Path, max_batches: int, keep_noops: int = 3) -> Optional[LogSeed]:
    from kraftspec.traces.metalog.schema import NOOP_VALUE
    from kraftspec.traces.metalog.segments import read_batches

    batches: list[tuple[dict[str, int], list[tuple[Optional[bytes], Optional[bytes]]]]] = []
    noops = 0
    with open(path, "rb") as f:
        for batch in read_batches(f, str(path)):
            records = [(r.key, r.value) for r in batch.records()]
            if not batch.is_control and len(records) == 1 and records[0][1] == NOOP_VALUE:
                noops += 1
                if noops > keep_noops:
                    continue
            header = {"leader_epoch": batch.leader_epoch, "attributes": batch.attributes,
                      "base_timestamp": batch.base_timestamp, "producer_id": batch.producer_id,
                      "producer_epoch": batch.producer_epoch, "base_sequence": batch.base_sequence}
            batches.append((header, records))
            if len(batches) >= max_batches:
                break
    return LogSeed(batches) if batches else None


def encode_log(seed: LogSeed, base: int = 0) -> bytes:
    """The bytes of a log: every batch encoded with contiguous offsets from ``base`` and a correct CRC-32C."""
    from kraftspec.traces.metalog.segments import Record, encode_batch

    out = bytearray()
    offset = base
    for header, records in seed.batches:
        recs = [Record(0, offset + i, header["base_timestamp"] + i, k, v, 0) for i, (k, v) in enumerate(records)]
        out += encode_batch(offset, header["leader_epoch"], recs, attributes=header["attributes"],
                            base_timestamp=header["base_timestamp"], producer_id=header["producer_id"],
                            producer_epoch=header["producer_epoch"], base_sequence=header["base_sequence"])
        offset += max(len(records), 1)
    return bytes(out)


def _hostile_field(rng: random.Random, kind: str, nullable: bool, current: Any) -> Any:
    if nullable and rng.random() < 0.2:
        return None
    if kind.startswith("[]"):
        inner = kind[2:]
        if isinstance(current, (tuple, list)) and current and rng.random() < 0.5:
            items = list(current)
            op = rng.randrange(4)
            if op == 0:
                items.append(items[rng.randrange(len(items))])
            elif op == 1:
                items.pop(rng.randrange(len(items)))
            elif op == 2:
                rng.shuffle(items)
            else:
                items = items * rng.choice((2, 50))
            return tuple(items)
        if inner in ("int32", "int64", "int8", "int16"):
            return tuple(rng.choice((-1, 0, 1, 2, 3, 1000, 2**31 - 1)) for _ in range(rng.randrange(5)))
        if inner == "uuid":
            return tuple(rng.choice(("AAAAAAAAAAAAAAAAAAAAAA", "AAAAAAAAAAAAAAAAAAAAAQ")) for _ in range(rng.randrange(3)))
        if inner == "string":
            return tuple(rng.choice(HOSTILE_STRINGS[:20]) for _ in range(rng.randrange(3)))
        return current
    bounds = {"int8": (-128, 127), "int16": (-32768, 32767), "int32": (-2**31, 2**31 - 1), "int64": (-2**63, 2**63 - 1),
              "uint16": (0, 65535)}
    if kind in bounds:
        lo, hi = bounds[kind]
        choice = rng.choice((lo, hi, 0, -1, 1, 2, -2, 3, rng.randrange(lo, hi + 1),
                             (current if isinstance(current, int) else 0) + rng.choice((-1, 1))))
        return min(max(choice, lo), hi)
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "float64":
        return rng.choice((0.0, -1.0, 1e308, float("inf"), float("nan"), 1.5))
    if kind == "uuid":
        return rng.choice(("AAAAAAAAAAAAAAAAAAAAAA", "AAAAAAAAAAAAAAAAAAAAAQ", "_____________________w", current))
    if kind == "string":
        return rng.choice(HOSTILE_STRINGS[:30] + ((current,) if isinstance(current, str) else ()))
    if kind == "bytes":
        return rng.choice((b"", b"\x00" * 40, bytes(range(256))))
    return current


def mutate_value(rng: random.Random, value: Optional[bytes], donors: list[bytes]) -> Optional[bytes]:
    """A metadata record value changed at one field (decoded, changed, encoded: the frame stays valid), replaced by
    a fresh record of a random type, or changed as bytes."""
    from kraftspec.traces.metalog.errors import DecodeError
    from kraftspec.traces.metalog.schema import METADATA_RECORDS, decode_metadata_value, encode_metadata_value

    choice = rng.randrange(10)
    if choice == 0 or value is None:
        api_key = rng.choice(sorted(METADATA_RECORDS))
        schema = METADATA_RECORDS[api_key]
        version = rng.randint(schema.lo, schema.hi)
        fields = {f.key: _hostile_field(rng, f.type, f.nullable is not None and version >= f.nullable, None)
                  for f in schema.fields if version >= f.versions and not f.fields}
        with contextlib.suppress(Exception):
            return encode_metadata_value(api_key, version, fields)
        return value
    if choice == 1:
        return mutate_bytes(rng, value, 1 << 16)
    if choice == 2 and donors:
        return rng.choice(donors)
    try:
        api_key, version, fields = decode_metadata_value(value)
    except DecodeError:
        return mutate_bytes(rng, value, 1 << 16)
    schema = METADATA_RECORDS.get(api_key)
    if schema is None or not schema.fields:
        return value
    for _ in range(rng.choice((1, 1, 2))):
        f = rng.choice(schema.fields)
        if version < f.versions:
            continue
        if f.fields and isinstance(fields.get(f.key), (tuple, list)):  # an array of structs: change one sub-field
            items = [dict(item) for item in fields[f.key]]
            if items:
                item = rng.choice(items)
                sub = rng.choice(f.fields)
                item[sub.key] = _hostile_field(rng, sub.type, sub.nullable is not None, item.get(sub.key))
                if rng.random() < 0.3:
                    items.append(dict(item))
            fields[f.key] = tuple(items)
            continue
        fields[f.key] = _hostile_field(rng, f.type, f.nullable is not None and version >= f.nullable, fields.get(f.key))
    if rng.random() < 0.1:
        version = rng.randint(schema.lo, schema.hi)
    try:
        return encode_metadata_value(api_key, version, fields)
    except Exception:  # noqa: BLE001 - a value the encoder cannot write: keep the original
        return value


def mutate_log(rng: random.Random, seed: LogSeed, donors: list[bytes]) -> bytes:
    """A mutated log: records and headers changed structurally (CRC-32C recomputed), batches moved, duplicated or
    dropped, and now and then bytes changed after encoding (the CRC then no longer matches: the reader's first check)."""
    from kraftspec.traces.metalog.control import encode_control

    batches = [(dict(h), list(r)) for h, r in seed.batches]
    for _ in range(rng.choice((1, 1, 2, 3, 5))):
        if not batches:
            break
        i = rng.randrange(len(batches))
        header, records = batches[i]
        op = rng.randrange(14)
        if op <= 4 and records:
            j = rng.randrange(len(records))
            key, value = records[j]
            if header["attributes"] & 0x20:  # a control record
                if rng.random() < 0.5:
                    kind = rng.choice((0, 1, 2, 3, 4, 5, 6, 7, -1))
                    key = b"\x00\x00" + struct.pack(">h", kind)
                else:
                    value = mutate_bytes(rng, value or b"", 4096)
            else:
                value = mutate_value(rng, value, donors)
            records[j] = (key, value)
        elif op == 5:
            field_name = rng.choice(sorted(header))
            header[field_name] = rng.choice(INTERESTING_INTS[:16]) if field_name != "attributes" else \
                rng.choice((0, 0x20, 0x10, 0x01, 0x04, 0x07, 0x30, 0xFF))
            if field_name in ("leader_epoch",):
                header[field_name] = max(min(header[field_name], 2**31 - 1), -2**31)
            if field_name in ("producer_epoch", "attributes"):
                header[field_name] = max(min(header[field_name], 32767), -32768)
            if field_name == "base_sequence":
                header[field_name] = max(min(header[field_name], 2**31 - 1), -2**31)
        elif op == 6:
            batches.insert(rng.randrange(len(batches) + 1), (dict(header), list(records)))
        elif op == 7:
            batches.pop(i)
        elif op == 8 and len(batches) > 1:
            k = rng.randrange(len(batches))
            batches[i], batches[k] = batches[k], batches[i]
        elif op == 9:
            records.append((None, mutate_value(rng, None, donors)))
        elif op == 10 and records:
            records.pop(rng.randrange(len(records)))
        elif op == 11:  # a LeaderChange in a control batch
            fields = {"version": 0, "leader_id": rng.choice((1, 2, -1)), "voters": ({"voter_id": 1},),
                      "granting_voters": rng.choice(((), ({"voter_id": 1},), ({"voter_id": 7},)))}
            with contextlib.suppress(Exception):
                key, value = encode_control(2, fields)
                batches.insert(i, ({**header, "attributes": 0x20, "leader_epoch": header["leader_epoch"] + 1},
                                   [(key, value)]))
        elif op == 12 and records:
            records[:] = records * rng.choice((2, 10))
        else:
            header["leader_epoch"] = max(min(header["leader_epoch"] + rng.choice((-1, 1, 5)), 2**31 - 1), -2**31)
    try:
        data = encode_log(LogSeed(batches), base=rng.choice((0, 0, 0, 1, 100)))
    except (struct.error, OverflowError, ValueError):
        data = encode_log(seed)
    if rng.random() < 0.15:
        data = mutate_bytes(rng, data)
    return data


# ---------------------------------------------------------------------------------------------------
# Bundles: several files in one input (a data directory, a vectors folder), saved as one JSON reproducer.

FIFO = "<fifo>"
"""A bundle entry written as a FIFO instead of a file."""


def pack(files: dict[str, Optional[bytes]]) -> bytes:
    return json.dumps({name: None if data is None else base64.b64encode(data).decode()
                       for name, data in files.items()}).encode()


def unpack(data: bytes) -> dict[str, Optional[bytes]]:
    return {name: None if text is None else base64.b64decode(text) for name, text in json.loads(data).items()}


def write_bundle(folder: Path, files: dict[str, Optional[bytes]]) -> None:
    for name, data in files.items():
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if data is None:
            os.mkfifo(target)
        else:
            target.write_bytes(data)


# ---------------------------------------------------------------------------------------------------
# The readers.

class Unexpected(Exception):
    """A broken contract that raised nothing (a control character in a message, an exit code outside 0-2...)."""


def _clean(text: str, what: str) -> None:
    match = CONTROL.search(text)
    if match:
        raise Unexpected(f"{what} carries control character {match.group()!r}: {text[:200]!r}")


def _check_report(report: Any) -> int:
    """The contract of an audit report: one-line errors and report lines, exit code 2 iff a file is unreadable."""
    code = report.exit_code
    if code not in (0, 1, 2):
        raise Unexpected(f"exit code {code}")
    unreadable = any(d.errors for d in report.directories)
    if (code == 2) != unreadable:
        raise Unexpected(f"exit code {code} but unreadable files: {unreadable}")
    for line in report.render().split("\n"):
        _clean(line, "report line")
    report.dumps()
    return code


def _check_trace_item(item: Any) -> None:
    from kraftspec.traces.replay.check import describe
    from kraftspec.traces.replay.verdict import replay
    from kraftspec.traces.format.values import TraceError

    if isinstance(item, TraceError):
        _clean(str(item), "trace error")
        return
    try:
        verdict = replay(item)
    except TraceError as exc:  # a stated output field the reference's output does not have
        _clean(str(exc), "trace error")
        return
    describe(verdict)


@dataclass
class Reader:
    """One reader under fuzzing: its seeds, how to mutate one, the input's file name and how to run it."""

    name: str
    file_name: str
    seeds: Callable[[], list[Any]]
    mutate: Callable[[random.Random, list[Any]], bytes]
    run: Callable[[Path], None]
    bundle: bool = False


def _corpus() -> Path:
    from kraftspec.traces.metalog.corpus import CORPUS_DIR

    return CORPUS_DIR


def _tla_dir() -> Path:
    from kraftspec import traces

    return Path(traces.__file__).parent / "tla"


_CACHE: dict[str, Any] = {}


def _cached(name: str, build: Callable[[], Any]) -> Any:
    if name not in _CACHE:
        _CACHE[name] = build()
    return _CACHE[name]


def log_seeds() -> list[LogSeed]:
    def build() -> list[LogSeed]:
        seeds = []
        for path in sorted(_corpus().glob("**/__cluster_metadata-0/*.log")):
            seed = _read_log_seed(path, 120)
            if seed is not None:
                seeds.append(seed)
                half = LogSeed(seed.batches[len(seed.batches) // 2:])
                if half.batches:
                    seeds.append(half)
        return seeds
    return _cached("logs", build)


def snapshot_seeds() -> list[LogSeed]:
    def build() -> list[LogSeed]:
        seeds = []
        for path in sorted(_corpus().glob("**/*.checkpoint")):
            seed = _read_log_seed(path, 200, keep_noops=1000)
            if seed is not None:
                seeds.append(seed)
        return seeds
    return _cached("snapshots", build)


def _value_donors() -> list[bytes]:
    def build() -> list[bytes]:
        values = {v for seed in log_seeds() + snapshot_seeds() for h, records in seed.batches for _, v in records
                  if v is not None and not h["attributes"] & 0x20}
        return sorted(values)[:2000]
    return _cached("donors", build)


def _mutate_segment(rng: random.Random, seeds: list[Any]) -> bytes:
    return mutate_log(rng, rng.choice(seeds), _value_donors())


def _run_audit(path: Path) -> None:
    from kraftspec.traces.metalog.audit import audit_paths

    _check_report(audit_paths([str(path)]))


def _small_file_seeds(name: str) -> Callable[[], list[bytes]]:
    def seeds() -> list[bytes]:
        return sorted({p.read_bytes() for p in _corpus().glob(f"**/{name}")})
    return seeds


def _mutate_text(rng: random.Random, seeds: list[bytes]) -> bytes:
    data = rng.choice(seeds)
    if rng.random() < 0.5:
        lines = data.split(b"\n")
        for _ in range(rng.choice((1, 2))):
            i = rng.randrange(len(lines))
            op = rng.randrange(6)
            hostile = rng.choice(HOSTILE_STRINGS).encode("utf-8", "surrogatepass")
            if op == 0:
                lines[i] = lines[i] + hostile
            elif op == 1:
                lines.insert(i, hostile)
            elif op == 2:
                lines.pop(i)
            elif op == 3:
                parts = re.split(rb"([=: ])", lines[i])
                parts[-1] = hostile
                lines[i] = b"".join(parts)
            elif op == 4:
                lines[i] = re.sub(rb"[0-9]+", lambda m: rng.choice((b"\xc2\xb2", b"9" * 5000, b"-", b"-1", b"1" * 20)),
                                  lines[i], count=1)
            else:
                lines.insert(i, lines[i])
        data = b"\n".join(lines)
    if rng.random() < 0.4:
        data = mutate_bytes(rng, data, 1 << 21)
    return data


def _mutate_quorum(rng: random.Random, seeds: list[bytes]) -> bytes:
    data = rng.choice(seeds)
    if rng.random() < 0.7:
        with contextlib.suppress(ValueError, RecursionError):  # a file mutated before may be too deep to parse
            return dumps(mutate_json(rng, json.loads(data))).encode("utf-8", "surrogatepass")
    return mutate_bytes(rng, data)


def _run_small(reader: Callable[[str], Any]) -> Callable[[Path], None]:
    def run(path: Path) -> None:
        from kraftspec.traces.metalog.errors import LogFormatError

        try:
            reader(str(path))
        except LogFormatError as exc:
            _clean(str(exc), "error")
    return run


def trace_seeds() -> list[Any]:
    def build() -> list[Any]:
        seeds = []
        for path in sorted(_tla_dir().glob("*.jsonl.gz")):
            with gzip.open(path, "rb") as f:
                lines = [line for line in f.read().splitlines() if line.strip()]
            step = max(1, len(lines) // 60)
            seeds += [json.loads(line) for line in lines[::step][:60]]
        from kraftspec.traces.format.jsonl import dumps
        from kraftspec.traces.recording.broker_simulate import generate_sim

        from kraftspec.traces.recording import raft_simulate

        seeds += [json.loads(dumps(t)) for t in generate_sim(0, 8, 25)]
        seeds += [json.loads(dumps(raft_simulate.simulate_one(0, i, 25))) for i in range(8)]
        return seeds
    return _cached("traces", build)


def _mutated_lines(rng: random.Random, seeds: list[Any]) -> bytes:
    lines = []
    for _ in range(rng.choice((1, 1, 2, 3))):
        obj = mutate_json(rng, rng.choice(seeds), tuple(rng.sample(seeds, min(3, len(seeds)))))
        line = dumps(obj).encode("utf-8", "surrogatepass")
        if rng.random() < 0.2:
            line = mutate_bytes(rng, line)
        lines.append(line)
    return b"\n".join(lines) + rng.choice((b"\n", b"", b"\r\n", b"\n\n"))


def _run_jsonl(path: Path) -> None:
    from kraftspec.traces.format.jsonl import read_jsonl

    for _, item in read_jsonl(path):
        _check_trace_item(item)


def _mutate_gz(rng: random.Random, seeds: list[Any]) -> bytes:
    data = gzip.compress(_mutated_lines(rng, seeds), compresslevel=1, mtime=0)
    if rng.random() < 0.4:
        op = rng.randrange(4)
        if op == 0:  # corrupt deflate stream
            i = rng.randrange(10, max(11, len(data) - 8))
            data = data[:i] + bytes([data[i] ^ 0xFF]) + data[i + 1:]
        elif op == 1:
            data = data[:rng.randrange(len(data))]
        elif op == 2:
            data = data + rng.choice((b"\x1f\x8b", b"garbage", gzip.compress(b"{}\n")))
        else:
            data = mutate_bytes(rng, data)
    return data


def _rows(seeds: list[Any]) -> list[dict[str, Any]]:
    def build() -> list[dict[str, Any]]:
        from kraftspec.traces.format.envelope import trace_from_json
        from kraftspec.traces.format.parquet import to_row

        rows = []
        for obj in seeds[::3]:
            with contextlib.suppress(Exception):
                rows.append(to_row(trace_from_json(obj)))
        return rows
    return _cached("rows", build)


def _parquet_bytes(rows: list[dict[str, Any]], rng: random.Random) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from kraftspec.traces.format.parquet import SCHEMA

    sink = io.BytesIO()
    mode = rng.randrange(10)
    if mode == 0:  # invalid UTF-8 in a string column (bytes viewed as a string: pyarrow does not validate a view)
        table = pa.Table.from_pylist(rows, schema=SCHEMA)
        column = rng.choice(["format", "component", "id", "meta", "initial"])
        raw = [rng.choice((b"\xff\xfe", b"\xc3\x28", b"1.0\xed\xa0\x80", b"\xc2")) for _ in range(table.num_rows)]
        table = table.set_column(table.schema.get_field_index(column), column,
                                 pa.array(raw, type=pa.binary()).view(pa.string()))
    elif mode == 1:  # columns of other types, or missing
        table = pa.Table.from_pylist(rows, schema=SCHEMA)
        name = rng.choice(SCHEMA.names)
        index = table.schema.get_field_index(name)
        table = table.remove_column(index) if rng.random() < 0.5 else table.set_column(
            index, name, pa.array([rng.randrange(100) for _ in range(table.num_rows)], type=pa.int64()))
    else:
        table = pa.Table.from_pylist(rows, schema=SCHEMA)
    pq.write_table(table, sink, row_group_size=max(1, rng.choice((1, 2, 1000))))
    data = sink.getvalue()
    if rng.random() < 0.08:  # a column name with invalid UTF-8: the footer is not checksummed
        name = rng.choice([b"format", b"component", b"initial", b"steps"])
        at = data.rfind(name)
        if at > 0:
            data = data[:at] + b"\xff" + data[at + 1:]
    if rng.random() < 0.08:
        data = mutate_bytes(rng, data)
    return data


def _mutate_parquet(rng: random.Random, seeds: list[Any]) -> bytes:
    base = _rows(seeds)
    rows = [dict(r) for r in rng.sample(base, min(len(base), rng.choice((1, 2, 4))))]
    for row in rows:
        for _ in range(rng.choice((1, 2))):
            column = rng.choice(["format", "component", "id", "meta", "initial", "steps", "steps", "steps"])
            if column == "steps" and row["steps"]:
                steps = [dict(s) for s in row["steps"]]
                step = rng.choice(steps)
                part = rng.choice(["input", "response", "post", "action", "now", "records"])
                if part in ("input", "response", "post"):
                    text = step[part]
                    try:
                        value = json.loads(text) if text is not None else {}
                        step[part] = dumps(mutate_json(rng, value))
                    except (ValueError, RecursionError):
                        step[part] = text
                    if rng.random() < 0.2:
                        step[part] = rng.choice(('{"a":' * 1500 + "1" + "}" * 1500, "1" * 5000, "[" * 5000,
                                                 "{} x", "", '{"\\ud800":1}'))
                elif part == "action":
                    step[part] = rng.choice(HOSTILE_STRINGS[:20] + (None,))
                elif part == "now":
                    step[part] = rng.choice((None, -1, 2**63 - 1, -2**63, 0))
                else:
                    records = step["records"]
                    if records:
                        r = dict(rng.choice(records))
                        r[rng.choice(["offset", "type", "fields"])] = rng.choice(
                            (None, "x", '{"offset":1}', "1" * 5000)) if rng.random() < 0.5 else None
                        if not isinstance(r.get("offset"), (int, type(None))):
                            r["offset"] = 0
                        step["records"] = [r] + list(records)
                        for item in step["records"]:
                            if not isinstance(item.get("offset"), int) and item.get("offset") is not None:
                                item["offset"] = 0
                            if not isinstance(item.get("type"), (str, type(None))):
                                item["type"] = None
                            if not isinstance(item.get("fields"), (str, type(None))):
                                item["fields"] = None
                    else:
                        step["records"] = [{"offset": 0, "type": "TopicRecord", "fields": "{}"}]
                row["steps"] = steps
            elif column == "steps":
                row["steps"] = None
            else:
                value = hostile_json(rng) if rng.random() < 0.5 else rng.choice(HOSTILE_STRINGS)
                row[column] = value if isinstance(value, str) or value is None else dumps(value)
    try:
        return _parquet_bytes(rows, rng)
    except Exception:  # noqa: BLE001 - a row pyarrow will not write: an untouched one instead
        return _parquet_bytes([dict(base[0])], rng)


def _run_parquet(path: Path) -> None:
    from kraftspec.traces.format.parquet import read_parquet

    for _, _, item in read_parquet(path):
        _check_trace_item(item)


def _run_validate(path: Path) -> None:
    from kraftspec.traces.engines.trace_units import plan, validate_unit

    for unit in plan([str(path)]):
        rows = 0
        for batch in validate_unit(unit):
            rows += batch.num_rows
            for reason in batch.column("reason").to_pylist():
                if reason is not None:
                    _clean(reason, "validate reason")
        if rows != unit["rows"]:
            raise Unexpected(f"validate wrote {rows} rows for a unit of {unit['rows']}")


def _data_dir_seeds() -> list[dict[str, Optional[bytes]]]:
    def build() -> list[dict[str, Optional[bytes]]]:
        from kraftspec.traces.metalog.corpus import data_dirs

        bundles = []
        for i, directory in enumerate(data_dirs()):
            files: dict[str, Optional[bytes]] = {}
            for path in sorted(directory.rglob("*")):
                if not path.is_file():
                    continue
                name = path.relative_to(directory).as_posix()
                if path.suffix == ".log":
                    seed = _read_log_seed(path, 60)
                    files[name] = encode_log(seed) if seed is not None else b""
                elif path.suffix == ".checkpoint" and "bootstrap" not in path.name:
                    continue  # a snapshot at offset 7111: it would not match the shortened log
                else:
                    files[name] = path.read_bytes()
            bundles.append(files)
        return bundles
    return _cached("datadirs", build)


def _mutate_data_dir(rng: random.Random, seeds: list[Any]) -> bytes:
    files = dict(rng.choice(seeds))
    for _ in range(rng.choice((1, 1, 2))):
        name = rng.choice(sorted(files))
        op = rng.randrange(10)
        data = files[name]
        if op <= 4 and data is not None:
            if name.endswith(".log"):
                seed = _read_seed_from_bytes(data)
                files[name] = mutate_log(rng, seed, _value_donors()) if seed else mutate_bytes(rng, data)
            elif name.endswith("quorum-state"):
                files[name] = _mutate_quorum(rng, [data])
            elif name.endswith(".checkpoint"):
                files[name] = mutate_bytes(rng, data)
            else:
                files[name] = _mutate_text(rng, [data])
        elif op == 5:
            files.pop(name)
            if not files:
                files["meta.properties"] = b""
        elif op == 6:  # a segment or snapshot name that is not an offset, or a FIFO named like one
            folder = "__cluster_metadata-0/"
            files[folder + rng.choice(("\u00b2.log", "\u0663.log", "00000000000000000000.log", "abc.log",
                                       "99999999999999999999.log", "1.log", "00000000000000000001-0000000001.checkpoint",
                                       "\u00b2" * 20 + "-" + "0" * 10 + ".checkpoint"))] = \
                None if rng.random() < 0.4 else files.get(name)
        elif op == 7:
            files[rng.choice(("meta.properties", "__cluster_metadata-0/quorum-state",
                              "__cluster_metadata-0/leader-epoch-checkpoint"))] = None  # a FIFO
        elif op == 8:  # a file name with a newline and an escape sequence: no report line may carry them
            files["__cluster_metadata-0/bad\nname\x1b[2J.log"] = files.get(name)
        else:
            files[name] = None if data is not None and rng.random() < 0.2 else data
    return pack(files)


def _read_seed_from_bytes(data: bytes) -> Optional[LogSeed]:
    with tempfile.NamedTemporaryFile(suffix=".log") as tmp:
        tmp.write(data)
        tmp.flush()
        try:
            return _read_log_seed(Path(tmp.name), 10_000, keep_noops=10_000)
        except Exception:  # noqa: BLE001 - not a readable log: the caller mutates bytes
            return None


def _run_data_dir(folder: Path) -> None:
    _run_audit(folder)


def _vectors_seed() -> dict[str, Optional[bytes]]:
    def build() -> dict[str, Optional[bytes]]:
        from kraftspec.traces.format.jsonl import read_jsonl
        from kraftspec.traces.replay.vectors import export

        source = _tla_dir() / "broker.jsonl.gz"
        traces = [(str(source), line, t) for line, t in read_jsonl(source)][:2]
        with tempfile.TemporaryDirectory() as tmp:
            export(Path(tmp), traces)
            files: dict[str, Optional[bytes]] = {p.relative_to(tmp).as_posix(): p.read_bytes()
                                                 for p in sorted(Path(tmp).rglob("*")) if p.is_file()}
        names = sorted(n for n in files if n != "manifest.json")
        files = {n: files[n] for n in names[:12]} | {"manifest.json": files["manifest.json"]}
        files["read.log"] = "\n".join(names[:10]).encode()
        return files
    return _cached("vectors", build)


def _mutate_vectors(rng: random.Random, seeds: list[Any]) -> bytes:
    files = dict(seeds[0])
    op = rng.randrange(6)
    if op <= 2:
        manifest = json.loads(files["manifest.json"])
        manifest["files"] = manifest["files"][:14]
        files["manifest.json"] = dumps(mutate_json(rng, manifest)).encode("utf-8", "surrogatepass")
    elif op == 3:
        files["read.log"] = _mutate_text(rng, [files["read.log"] or b""])
    elif op == 4:
        files["manifest.json"] = mutate_bytes(rng, files["manifest.json"] or b"")
    else:
        files[rng.choice(("manifest.json", "read.log"))] = None
    return pack(files)


def _run_vectors(folder: Path) -> None:
    from kraftspec.traces.replay.vectors import VectorsError, vectors_command, verify

    try:
        verify(folder, folder / "read.log")
    except VectorsError as exc:
        _clean(str(exc), "vectors error")
    out = io.StringIO()
    code = vectors_command(str(folder), [], str(folder / "read.log"), out=out)
    if code not in (0, 1, 2):
        raise Unexpected(f"vectors --verify exit code {code}")
    for line in out.getvalue().splitlines():
        _clean(line, "vectors output")


READERS: dict[str, Reader] = {reader.name: reader for reader in (
    Reader("segment", "00000000000000000000.log", log_seeds, _mutate_segment, _run_audit),
    Reader("snapshot", "00000000000000000000-0000000001.checkpoint", snapshot_seeds, _mutate_segment, _run_audit),
    Reader("datadir", "data", _data_dir_seeds, _mutate_data_dir, _run_data_dir, bundle=True),
    Reader("quorum-state", "quorum-state", _small_file_seeds("quorum-state"), _mutate_quorum,
           _run_small(lambda p: __import__("kraftspec.traces.metalog.files", fromlist=["x"]).read_quorum_state(p))),
    Reader("leader-epoch-checkpoint", "leader-epoch-checkpoint", _small_file_seeds("leader-epoch-checkpoint"),
           _mutate_text, _run_small(lambda p: __import__("kraftspec.traces.metalog.files", fromlist=["x"])
                                    .read_leader_epoch_checkpoint(p))),
    Reader("meta.properties", "meta.properties", _small_file_seeds("meta.properties"), _mutate_text,
           _run_small(lambda p: __import__("kraftspec.traces.metalog.files", fromlist=["x"]).read_meta_properties(p))),
    Reader("partition.metadata", "partition.metadata", _small_file_seeds("partition.metadata"), _mutate_text,
           _run_small(lambda p: __import__("kraftspec.traces.metalog.files", fromlist=["x"])
                      .read_partition_metadata(p))),
    Reader("jsonl", "traces.jsonl", trace_seeds, _mutated_lines, _run_jsonl),
    Reader("jsonl.gz", "traces.jsonl.gz", trace_seeds, _mutate_gz, _run_jsonl),
    Reader("parquet", "traces.parquet", trace_seeds, _mutate_parquet, _run_parquet),
    Reader("validate", "set.parquet", trace_seeds, _mutate_parquet, _run_validate),
    Reader("vectors-verify", "vectors", lambda: [_vectors_seed()], _mutate_vectors, _run_vectors, bundle=True),
)}


# ---------------------------------------------------------------------------------------------------
# Running.

class Timeout(Exception):
    """An input that did not finish within the timeout (a hang)."""


@contextlib.contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    def expire(signum: int, frame: Any) -> None:
        raise Timeout(f"no result within {seconds:g} s")
    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@dataclass
class Failure:
    """A broken contract: the reader, the input's seed and index, what happened and where (the dedup key)."""

    reader: str
    seed: int
    index: int
    kind: str
    message: str
    where: str
    data: bytes = b""

    @property
    def key(self) -> str:
        return f"{self.reader}|{self.kind}|{self.where}"


def _where(exc: BaseException) -> str:
    """The innermost kraftspec frame of a traceback (file:line), the failure's identity."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if "kraftspec" in f.filename]
    if not frames:
        frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return "?"
    frame = frames[-1]
    return f"{Path(frame.filename).name}:{frame.lineno}"


def place(reader: Reader, data: bytes, work: Path) -> Path:
    """Write one input under ``work`` (a fresh folder) and return the path the reader is given."""
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    if reader.bundle:
        folder = work / reader.file_name
        folder.mkdir()
        write_bundle(folder, unpack(data))
        return folder
    path = work / reader.file_name
    path.write_bytes(data)
    return path


def run_one(reader: Reader, data: bytes, work: Path, timeout: float = 20.0) -> Optional[tuple[str, str, str]]:
    """Run one input; None if the contract held, else ``(kind, message, where)``."""
    path = place(reader, data, work)
    try:
        with _deadline(timeout):
            reader.run(path)
    except Timeout as exc:
        return "timeout", str(exc), "timeout"
    except Unexpected as exc:
        return "contract", str(exc)[:500], _where(exc)
    except RecursionError as exc:
        return "RecursionError", str(exc)[:500], _where(exc)
    except Exception as exc:  # noqa: BLE001 - any other exception is a failure of the reader
        return type(exc).__name__, str(exc)[:500], _where(exc)
    return None


@dataclass
class Stats:
    """Per reader: inputs run, failures (all, and distinct by type and place), time spent."""

    inputs: dict[str, int] = field(default_factory=dict)
    failures: dict[str, int] = field(default_factory=dict)
    distinct: dict[str, dict[str, Failure]] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)

    def merge(self, other: "Stats") -> None:
        for name, count in other.inputs.items():
            self.inputs[name] = self.inputs.get(name, 0) + count
            self.failures[name] = self.failures.get(name, 0) + other.failures.get(name, 0)
            self.seconds[name] = self.seconds.get(name, 0.0) + other.seconds.get(name, 0.0)
            for key, failure in other.distinct.get(name, {}).items():
                self.distinct.setdefault(name, {}).setdefault(key, failure)


def fuzz(reader_name: str, inputs: int, seed: int, work: Path, timeout: float = 20.0,
         on_failure: Optional[Callable[[Failure], None]] = None) -> Stats:
    """Run ``inputs`` mutated inputs of one reader from ``random.Random(seed)``; input ``i`` uses
    ``random.Random(f"{seed}:{reader}:{i}")`` so it is reproduced alone."""
    reader = READERS[reader_name]
    seeds = reader.seeds()
    stats = Stats({reader_name: 0}, {reader_name: 0}, {reader_name: {}}, {reader_name: 0.0})
    started = time.perf_counter()
    for index in range(inputs):
        data = make_input(reader, seeds, seed, index)
        result = run_one(reader, data, work, timeout)
        stats.inputs[reader_name] += 1
        if result is not None:
            kind, message, where = result
            failure = Failure(reader_name, seed, index, kind, message, where, data)
            stats.failures[reader_name] += 1
            if failure.key not in stats.distinct[reader_name]:
                stats.distinct[reader_name][failure.key] = failure
                if on_failure is not None:
                    on_failure(failure)
    stats.seconds[reader_name] = time.perf_counter() - started
    shutil.rmtree(work, ignore_errors=True)
    return stats


def make_input(reader: Reader, seeds: list[Any], seed: int, index: int) -> bytes:
    """Input ``index`` of the run with ``seed``: a mutation of a seed (every 50th input is a seed unchanged)."""
    rng = random.Random(f"{seed}:{reader.name}:{index}")
    if index % 50 == 0 and not reader.bundle and isinstance(seeds[0], bytes):
        return rng.choice(seeds)
    return reader.mutate(rng, seeds)


def save_reproducer(folder: Path, failure: Failure) -> Path:
    """Write a failure's input (``<reader>-<seed>-<index>.bin``) and a note saying how to run it."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{failure.reader}-{failure.seed}-{failure.index}.bin"
    path.write_bytes(failure.data)
    path.with_suffix(".txt").write_text(
        f"reader {failure.reader}, seed {failure.seed}, input {failure.index}\n{failure.kind} at {failure.where}: "
        f"{failure.message!r}\nreproduce: python benchmarks/fuzz_readers.py --replay {path} --reader {failure.reader}\n")
    return path


def replay_file(reader_name: str, path: Path, timeout: float = 20.0) -> Optional[tuple[str, str, str]]:
    """Run one saved input again (``None``: the contract holds now)."""
    with tempfile.TemporaryDirectory() as tmp:
        return run_one(READERS[reader_name], path.read_bytes(), Path(tmp) / "work", timeout)
