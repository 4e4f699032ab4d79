"""``kraftspec vectors DIR``: test vectors for implementations not written in Python.

Each case is one step of a trace with the state before it made explicit: a folder
``DIR/COMPONENT/RULE/CASE/`` holding ``pre.json`` (the full controller state and the trace's clock),
``input.json`` (the step's input, trace format v1), ``expected.json`` (the reference's response and
records) and ``post.json`` (the full state after the step). ``RULE`` is the reference function that
decides the step (``kraftspec.traces.broker_trace.ACTIONS``); ``CASE`` is a digest of the pre-state
and input, so a step met on many traces is one case. ``DIR/manifest.json`` lists every case file
with its sha256.

``kraftspec vectors --verify DIR --read-log FILE`` is the consumer-side check: it reports every
manifest file a consumer run never read (FILE lists the files it opened, one per line, relative to
DIR or absolute), every file whose hash differs from the manifest, and any file missing or unlisted.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Optional, TextIO

from kraftspec.reference import broker
from kraftspec.traces import broker_replay
from kraftspec.traces.broker_trace import ACTIONS, BROKER
from kraftspec.traces.format import Trace, step_to_json
from kraftspec.traces.limits import LimitError, describe_os_error, escape_controls, is_regular, loads, one_line, open_regular, quote
from kraftspec.traces.values import to_json

MANIFEST = "manifest.json"
FORMAT = "kraftspec-vectors/1"
FILES = ("pre.json", "input.json", "expected.json", "post.json")
EXIT_OK, EXIT_FINDING, EXIT_ERROR = 0, 1, 2


@dataclass(frozen=True)
class Case:
    """One vector: the component, the deciding rule, and the JSON of each of its files."""

    component: str
    rule: str
    files: dict[str, Any]

    @property
    def id(self) -> str:
        """A digest of the pre-state and the input: equal steps give one case."""
        return hashlib.sha256(_canonical([self.files["pre.json"], self.files["input.json"]])).hexdigest()[:16]


def _canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


def state_json(state: broker.ClusterControl, clock: int) -> dict[str, Any]:
    """The whole controller state as JSON (``to_json``), sessions and partitions keyed as in trace ``post``."""
    obj = to_json(state)
    obj["sessions"] = {f"{b}:{e}": contact for (b, e), contact in sorted(state.sessions.items())}
    obj["partitions"] = {f"{t}:{p}": to_json(r) for (t, p), r in sorted(state.partitions.items())}
    return {"clock": clock, **obj}


def cases(traces: Iterable[Trace]) -> Iterator[Case]:
    """Every distinct step of ``traces`` (broker traces) as a case, in the order first met."""
    seen: set[str] = set()
    for trace in traces:
        state, clock = broker_replay.initial(trace), 0
        for step in trace.steps:
            after, after_clock, response, written = broker_replay.apply(state, clock, step)
            case = Case(trace.component, ACTIONS[step.action].rule, {
                "pre.json": state_json(state, clock),
                "input.json": step_to_json(BROKER, step)["input"],
                "expected.json": {"response": response,
                                  "records": [BROKER.encode_record(o, r) for o, r in written]},
                "post.json": state_json(after, after_clock)})
            if case.id not in seen:
                seen.add(case.id)
                yield case
            state, clock = after, after_clock


def export(folder: Path, traces: Iterable[Trace], source: str = "") -> dict[str, Any]:
    """Write every case of ``traces`` under ``folder`` and the manifest; return the manifest."""
    entries: list[dict[str, str]] = []
    per_rule: dict[str, int] = {}
    for case in cases(traces):
        base = Path(case.component) / case.rule / case.id
        (folder / base).mkdir(parents=True, exist_ok=True)
        for name in FILES:
            data = json.dumps(case.files[name], indent=1, sort_keys=True).encode() + b"\n"
            (folder / base / name).write_bytes(data)
            entries.append({"path": (base / name).as_posix(), "sha256": hashlib.sha256(data).hexdigest()})
        key = f"{case.component}/{case.rule}"
        per_rule[key] = per_rule.get(key, 0) + 1
    manifest = {"format": FORMAT, "source": source, "cases": sum(per_rule.values()), "per_rule": per_rule,
                "files": entries}
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


@dataclass
class VerifyReport:
    """What the consumer-side check found; ``ok`` when every listed file was read and matches its hash."""

    files: int
    unread: list[str] = field(default_factory=list)
    mismatched: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    unlisted: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.unread or self.mismatched or self.missing or self.unlisted)


class VectorsError(ValueError):
    """A manifest or read log that cannot be used: ``file``, where in it (``line N`` or a JSON path) and why (one
    line, control characters from the input escaped)."""

    def __init__(self, file: Path, where: str, message: str) -> None:
        super().__init__(escape_controls(f"{file}{': ' + where if where else ''}: {message}"))


MAX_MANIFEST_BYTES = 256 << 20
"""A manifest or read log larger than this is refused before it is read (the bundled vectors' is about 1 MB)."""
_SHA256 = re.compile(r"[0-9a-f]{64}")


def _read_text(path: Path) -> str:
    """A manifest or read log: a regular UTF-8 file of at most :data:`MAX_MANIFEST_BYTES`."""
    try:
        with open_regular(path) as f:
            raw = f.read(MAX_MANIFEST_BYTES + 1)
    except OSError as exc:
        raise VectorsError(path, "", f"cannot read: {describe_os_error(exc)}") from None
    if len(raw) > MAX_MANIFEST_BYTES:
        raise VectorsError(path, "", f"larger than {MAX_MANIFEST_BYTES} bytes")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise VectorsError(path, f"byte {exc.start}", "not UTF-8 text") from None


def _within(root: Path, relative: str) -> bool:
    """Whether ``relative`` names a path inside ``root`` (no absolute path, no ``..`` climbing out of it)."""
    path = Path(relative)
    return bool(relative) and not path.is_absolute() and ".." not in path.parts and "\x00" not in relative


def load_manifest(folder: Path) -> dict[str, str]:
    """The manifest's files as path -> sha256, every entry checked: a :class:`VectorsError` names the bad one."""
    where = folder / MANIFEST
    text = _read_text(where)
    try:
        manifest = loads(text)
    except json.JSONDecodeError as exc:
        raise VectorsError(where, f"line {exc.lineno} column {exc.colno}", f"invalid JSON: {exc.msg}") from None
    except LimitError as exc:
        raise VectorsError(where, "", str(exc)) from None
    if not isinstance(manifest, dict):
        raise VectorsError(where, "", "expected a JSON object")
    if manifest.get("format") != FORMAT:
        raise VectorsError(where, "format", f"expected {FORMAT!r}, got {quote(manifest.get('format'))}")
    files = manifest.get("files")
    if not isinstance(files, list):
        raise VectorsError(where, "files", "missing, or not an array of {\"path\", \"sha256\"} objects")
    listed: dict[str, str] = {}
    for i, entry in enumerate(files):
        if not isinstance(entry, dict):
            raise VectorsError(where, f"files[{i}]", "expected an object with \"path\" and \"sha256\"")
        path, digest = entry.get("path"), entry.get("sha256")
        if not isinstance(path, str) or not _within(folder, path):
            raise VectorsError(where, f"files[{i}].path", f"expected a relative path inside the folder, got {quote(path)}")
        if not isinstance(digest, str) or not _SHA256.fullmatch(digest):
            raise VectorsError(where, f"files[{i}].sha256", f"expected 64 lowercase hex digits, got {quote(digest)}")
        if path in listed:
            raise VectorsError(where, f"files[{i}].path", f"{quote(path)} is listed twice")
        listed[path] = digest
    return listed


def _sha256(file: Path) -> Optional[str]:
    """The sha256 of a regular file, read in chunks; None if it cannot be read."""
    digest = hashlib.sha256()
    try:
        with open_regular(file) as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                digest.update(chunk)
    except OSError:
        return None
    return digest.hexdigest()


def _read_log(folder: Path, log: Path) -> set[str]:
    """The files a consumer run opened, as paths relative to ``folder`` (lines outside it are kept as given)."""
    read = set()
    root = folder.resolve()
    for number, line in enumerate(_read_text(log).splitlines(), start=1):
        line = line.strip()
        if not line:
            continue
        if "\x00" in line:
            raise VectorsError(log, f"line {number}", "a NUL character in a path")
        path = Path(line) if Path(line).is_absolute() else root / line
        try:
            read.add(path.resolve().relative_to(root).as_posix())
        except (ValueError, OSError, RuntimeError):  # outside the folder, or unresolvable (a symlink loop)
            read.add(line)
    return read


def verify(folder: Path, read_log: Path) -> VerifyReport:
    """Check ``folder`` against its manifest and ``read_log`` (one opened file per line); a manifest or read log
    that cannot be used raises :class:`VectorsError`."""
    listed = load_manifest(folder)
    read = _read_log(folder, read_log)
    report = VerifyReport(len(listed))
    for path, digest in sorted(listed.items()):
        file = folder / path
        actual = _sha256(file) if is_regular(file) else None
        if actual is None:
            report.missing.append(path)
            continue
        if actual != digest:
            report.mismatched.append(path)
        if path not in read:
            report.unread.append(path)
    present = {p.relative_to(folder).as_posix() for p in folder.rglob("*.json") if p.name != MANIFEST}
    report.unlisted = sorted(present - set(listed))
    return report


def vectors_command(folder: str, traces: list[str], verify_log: str | None, out: TextIO = sys.stdout) -> int:
    """Export vectors from ``traces`` (default: the bundled TLA+ traces), or verify ``folder`` against a read log.

    Every trace read is accounted for: an unreadable line or file is reported with file and line, the
    readable traces are still exported, and the exit code is then 2.
    """
    target = Path(folder)
    if verify_log is not None:
        for required in (target / MANIFEST, Path(verify_log)):
            if not required.exists():
                print(f"kraftspec vectors: {escape_controls(str(required))}: no such file", file=out)
                return EXIT_ERROR
        try:
            report = verify(target, Path(verify_log))
        except VectorsError as exc:
            print(f"kraftspec vectors: {exc}", file=out)
            return EXIT_ERROR
        for kind in ("unread", "mismatched", "missing", "unlisted"):
            for path in getattr(report, kind):
                print(f"{kind}: {escape_controls(str(target / path))}", file=out)
        print(f"vectors {target}: {report.files} files in the manifest, {len(report.unread)} never read, "
              f"{len(report.mismatched)} with a wrong sha256, {len(report.missing)} missing, "
              f"{len(report.unlisted)} not in the manifest", file=out)
        return EXIT_OK if report.ok else EXIT_FINDING
    from kraftspec.traces.jsonl import read_jsonl

    sources = traces or [str(Path(__file__).parent / "tla" / "broker.jsonl.gz")]
    read: list[Trace] = []
    unreadable = 0
    for source in sources:
        if not is_regular(source):
            print(f"{escape_controls(source)}: error: {'no such file' if not Path(source).exists() else 'not a regular file'}",
                  file=out)
            unreadable += 1
            continue
        for line, item in read_jsonl(source):
            if isinstance(item, Trace) and item.component == BROKER.name:
                read.append(item)
            elif isinstance(item, Trace):
                print(f"{escape_controls(source)}:{line}: error: a {item.component} trace: vectors are exported from "
                      f"broker traces only", file=out)
                unreadable += 1
            else:
                print(f"{escape_controls(source)}:{line}: error: {one_line(str(item))}", file=out)
                unreadable += 1
    manifest = export(target, read, source=", ".join(Path(s).name for s in sources))
    rules = ", ".join(f"{rule} {count}" for rule, count in sorted(manifest["per_rule"].items()))
    print(f"vectors {target}: {manifest['cases']} cases ({len(manifest['files'])} files) from {len(read)} traces "
          f"({sum(len(t.steps) for t in read)} steps, {unreadable} unreadable): {rules}; manifest {target / MANIFEST}",
          file=out)
    return EXIT_ERROR if unreadable else EXIT_OK
