"""``kraftspec vectors DIR``: test vectors for implementations not written in Python, for all four components.

Each case is one step of a trace with the state before it made explicit: a folder
``DIR/COMPONENT/RULE/CASE/`` holding ``pre.json`` (the component's whole reference state and the trace's
clock), ``input.json`` (the step's input, trace format v1), ``expected.json`` (the reference's response and
records) and ``post.json`` (the whole state after the step). ``RULE`` is the reference function that decides
the step, named as the rule book names it (``broker.heartbeat``; ``kraftspec explain RULE``); ``CASE`` names
the trace and step it was first met at (``TRACE-stepN``), and a step met on many traces is one case.
``DIR/README.md`` explains the files and their sentinels, ``DIR/schemas/COMPONENT/KIND.schema.json`` is a
JSON Schema of each file kind, and ``DIR/manifest.json`` lists every file with its sha256. The folder is
written under a temporary name and renamed when complete, so it is never half-written.

``kraftspec vectors --verify DIR --read-log FILE`` is the consumer-side check: it reports every manifest
file a consumer run never read (FILE lists the files it opened, one per line, relative to DIR or absolute),
every file whose hash differs from the manifest, and any file missing or unlisted, with a summary per rule.
``--rule PATTERN`` keeps the rules an implementation covers, for the export and for the check.
"""

from __future__ import annotations

import difflib
import fnmatch
import hashlib
import json
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass, field, fields, is_dataclass
from enum import Enum
from pathlib import Path
from typing import Any, Iterable, Iterator, Optional, Sequence, TextIO

from kraftspec.reference.frozen import PersistentMap
from kraftspec.rulebook import entries
from kraftspec.traces.format.envelope import Trace, components, step_to_json
from kraftspec.traces.format.limits import (LimitError, describe_os_error, escape_controls, is_regular, loads, one_line,
                                     open_regular, quote)
from kraftspec.traces.replay.verdict import REPLAYERS

MANIFEST = "manifest.json"
README = "README.md"
SCHEMAS = "schemas"
FORMAT = "kraftspec-vectors/2"
FILES = ("pre.json", "input.json", "expected.json", "post.json")
EXIT_OK, EXIT_FINDING, EXIT_ERROR = 0, 1, 2
Sourced = tuple[str, int, Trace]
"""A trace with the file and line it was read from (named in case names and error messages)."""


class VectorsError(ValueError):
    """An input, manifest or read log that cannot be used: ``file``, where in it (``line N`` or a JSON path) and
    why (one line, control characters from the input escaped)."""

    def __init__(self, file: Path | str, where: str, message: str) -> None:
        super().__init__(escape_controls(f"{file}{': ' + where if where else ''}: {message}"))


@dataclass(frozen=True)
class Case:
    """One vector: the component, the deciding rule, the case's name (trace and step) and the JSON of its files."""

    component: str
    rule: str
    name: str
    files: dict[str, Any]

    @property
    def id(self) -> str:
        """A digest of the component, pre-state and input: equal steps give one case."""
        key = [self.component, self.files["pre.json"], self.files["input.json"]]
        return hashlib.sha256(_canonical(key)).hexdigest()


def _canonical(value: Any) -> bytes:
    """``value`` as compact JSON with sorted keys: equal values give equal bytes."""
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


def explicit(value: Any) -> Any:
    """A reference value as JSON with nothing left implicit: dataclasses as objects (a Raft role state also
    states its ``role``), enums by name, sets as sorted arrays, tuple keys joined with ``:``."""
    if isinstance(value, Enum):
        return value.name
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if is_dataclass(value) and not isinstance(value, type):
        obj = {f.name: explicit(getattr(value, f.name)) for f in fields(value)}
        role = getattr(type(value), "role", None)
        return {"role": role, **obj} if isinstance(role, str) and "role" not in obj else obj
    if isinstance(value, (dict, PersistentMap)):
        items = list(value.items())
        try:
            items.sort(key=lambda item: item[0])
        except TypeError:  # keys of mixed types
            items.sort(key=lambda item: repr(item[0]))
        return {_key(k): explicit(v) for k, v in items}
    if isinstance(value, (frozenset, set)):
        return sorted((explicit(item) for item in value), key=lambda item: json.dumps(item, sort_keys=True))
    if isinstance(value, (tuple, list)):
        return [explicit(item) for item in value]
    raise TypeError(f"no JSON form for a {type(value).__name__}")


def _key(key: Any) -> str:
    """A map key as a JSON object key: a tuple's parts joined with ``:``."""
    return ":".join(map(str, key)) if isinstance(key, tuple) else str(key)


def state_json(state: Any, clock: int) -> dict[str, Any]:
    """The whole state of a component's reference as JSON (:func:`explicit`), with the trace's clock first."""
    return {"clock": clock, **explicit(state)}


def rule_name(component: str, action: str) -> str:
    """The rule book's name of the function deciding ``action`` (``broker.heartbeat``; ``advance_clock`` has none)."""
    return REPLAYERS[component].rule(action)[0].removeprefix("kraftspec.reference.")


def known_rules() -> dict[str, str]:
    """Every rule a vector folder can be named after, as ``component/rule`` -> rule."""
    from importlib import import_module

    out = {}
    for component in components():
        actions = import_module(f"kraftspec.traces.format.{component}").ACTIONS
        for action in actions:
            rule = rule_name(component, action)
            out[f"{component}/{rule}"] = rule
    return out


def selects(patterns: Sequence[str], component: str, rule: str) -> bool:
    """Whether ``--rule`` ``patterns`` keep a rule: each matches the rule (``broker.heartbeat``), its function name
    (``heartbeat``) or ``component/rule``, shell wildcards allowed; no patterns keep every rule."""
    names = (rule, rule.rsplit(".", 1)[-1], f"{component}/{rule}")
    return not patterns or any(fnmatch.fnmatchcase(name, p) for p in patterns for name in names)


def unknown_patterns(patterns: Sequence[str]) -> list[str]:
    """Each pattern that keeps no known rule, with the closest rule names: one line per pattern."""
    rules = known_rules()
    out = []
    for pattern in patterns:
        if not any(selects([pattern], key.split("/", 1)[0], rule) for key, rule in rules.items()):
            close = difflib.get_close_matches(pattern, sorted(set(rules.values()) | set(rules)), n=5, cutoff=0.4)
            out.append(f"--rule {escape_controls(pattern)}: matches no rule"
                       + (f" (close: {', '.join(close)})" if close else f" (known: {', '.join(sorted(rules))})"))
    return out


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def trace_label(source: str, line: int, trace: Trace) -> str:
    """The trace's id, or its file and line, safe as part of a folder name."""
    label = trace.id or f"{Path(source).name}-line{line}"
    return _UNSAFE.sub("_", label).strip("._")[:100] or "trace"


def cases(traces: Iterable[Sourced], rules: Sequence[str] = ()) -> Iterator[Case]:
    """Every distinct step of ``traces`` whose rule ``rules`` keep, as a case, in the order first met.

    A step the reference refuses raises :class:`VectorsError` naming the file, line and step.
    """
    seen: set[str] = set()
    used: set[str] = set()  # trace labels given out: two traces with one id get TRACE and TRACE-2
    for source, line, trace in traces:
        replayer, component = REPLAYERS[trace.component], components()[trace.component]
        base = label = trace_label(source, line, trace)
        count = 1
        while label in used:
            count += 1
            label = f"{base}-{count}"
        used.add(label)
        state, clock = replayer.initial(trace), 0
        for index, step in enumerate(trace.steps):
            try:
                after, after_clock, response, written = replayer.apply(state, clock, step)
            except (RuntimeError, ValueError, KeyError) as exc:
                raise VectorsError(source, f"line {line}", f"steps[{index}] ({step.action}): refused by the "
                                   f"reference: {one_line(f'{type(exc).__name__}: {exc}')}") from None
            rule = rule_name(trace.component, step.action)
            if selects(rules, trace.component, rule):
                case = Case(trace.component, rule, f"{label}-step{index}", {
                    "pre.json": state_json(state, clock),
                    "input.json": step_to_json(component, step)["input"],
                    "expected.json": {"response": response,
                                      "records": [component.encode_record(o, r) for o, r in written]},
                    "post.json": state_json(after, after_clock)})
                if case.id not in seen:
                    seen.add(case.id)
                    yield case
            state, clock = after, after_clock


def _dump(value: Any) -> bytes:
    """A vector file's bytes: indented JSON with sorted keys and a final newline."""
    return json.dumps(value, indent=1, sort_keys=True).encode() + b"\n"


def export(folder: Path, traces: Iterable[Sourced], source: str = "", rules: Sequence[str] = ()) -> dict[str, Any]:
    """Write every case of ``traces`` (kept by ``rules``), the README, the schemas and the manifest; return the
    manifest. Written in a temporary folder beside ``folder`` and renamed into place only when complete; an
    existing ``folder`` is replaced only if it is empty or a vectors folder (it holds a manifest)."""
    check_target(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", suffix=".partial", dir=folder.parent))
    try:
        manifest = _write(staging, traces, source, rules)
        _install(staging, folder)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return manifest


def check_target(folder: Path) -> None:
    """Refuse a target that exists and is neither an empty folder nor a vectors folder (never overwrite data)."""
    if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
        raise VectorsError(folder, "", "exists and is not a folder; not replaced")
    if folder.is_dir() and any(folder.iterdir()) and not (folder / MANIFEST).is_file():
        raise VectorsError(folder, "", f"exists, is not empty and holds no {MANIFEST}; not replaced")


def _install(staging: Path, folder: Path) -> None:
    """Rename the complete ``staging`` folder to ``folder``, the old one (if any) moved aside and then removed."""
    old = None
    if folder.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", suffix=".old", dir=folder.parent))
        folder.rename(old / "previous")
    staging.rename(folder)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def _write(folder: Path, traces: Iterable[Sourced], source: str, rules: Sequence[str]) -> dict[str, Any]:
    entries: list[dict[str, str]] = []
    per_rule: dict[str, int] = {}
    kinds: dict[tuple[str, str], list[Any]] = {}
    for case in cases(traces, rules):
        base = Path(case.component) / case.rule / case.name
        (folder / base).mkdir(parents=True)
        for name in FILES:
            data = _dump(case.files[name])
            (folder / base / name).write_bytes(data)
            entries.append({"path": (base / name).as_posix(), "sha256": hashlib.sha256(data).hexdigest()})
            kinds.setdefault((case.component, name), []).append(case.files[name])
        key = f"{case.component}/{case.rule}"
        per_rule[key] = per_rule.get(key, 0) + 1
    documents = {README: readme(per_rule, source).encode()}
    for (component, name), values in sorted(kinds.items()):
        documents[f"{SCHEMAS}/{component}/{name.removesuffix('.json')}.schema.json"] = _dump(
            schema_of(component, name, values))
    docs = []
    for path, data in documents.items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_bytes(data)
        docs.append({"path": path, "sha256": hashlib.sha256(data).hexdigest()})
    manifest = {"format": FORMAT, "source": source, "cases": sum(per_rule.values()),
                "per_rule": dict(sorted(per_rule.items())), "files": entries, "documents": docs}
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


SENTINELS: dict[str, str] = {
    "leader": "PartitionChangeRecord: -2 leaves the leader unchanged, -1 means no leader; elsewhere -1 is no leader",
    "fenced": "BrokerRegistrationChangeRecord: 1 fences the broker, -1 unfences it, 0 leaves it unchanged; "
              "elsewhere a boolean",
    "in_controlled_shutdown": "BrokerRegistrationChangeRecord: 1 enters controlled shutdown, 0 leaves it unchanged; "
                              "elsewhere a boolean",
    "leader_recovery_state": "PartitionChangeRecord: -1 leaves it unchanged; 0 recovered, 1 recovering",
    "isr": "PartitionChangeRecord: null leaves the list unchanged, [] empties it",
    "replicas": "PartitionChangeRecord: null leaves the list unchanged",
    "removing_replicas": "PartitionChangeRecord: null leaves the list unchanged, [] empties it",
    "adding_replicas": "PartitionChangeRecord: null leaves the list unchanged, [] empties it",
    "eligible_leader_replicas": "PartitionChangeRecord: null leaves the list unchanged, [] empties it (KIP-966)",
    "last_known_elr": "PartitionChangeRecord: null leaves the list unchanged, [] empties it (KIP-966)",
    "directories": "PartitionChangeRecord: null leaves the list unchanged",
    "response": "null when the input has no response (a timer, a metadata replay, the clock)",
    "clock": "the trace's clock in ms: timed inputs without 'now' happen at it",
}
"""What a field's special values mean, as the README and the schemas explain them."""

_MAP_KEY = re.compile(r"-?[0-9]+(:.*)?|[^:]+:-?[0-9]+")
_JSON_TYPES = ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string"), (type(None), "null"),
               (list, "array"), (dict, "object"))


def _type(value: Any) -> str:
    return next(name for kind, name in _JSON_TYPES if isinstance(value, kind))


def infer(values: list[Any], name: str = "") -> dict[str, Any]:
    """The narrowest JSON Schema (draft 2020-12 keywords) every one of ``values`` satisfies; objects keyed by ids
    (``"1"``, ``"topic:0"``) are maps, and a field of :data:`SENTINELS` carries its explanation."""
    by_type: dict[str, list[Any]] = {}
    for value in values:
        by_type.setdefault(_type(value), []).append(value)
    branches = []
    for kind, group in sorted(by_type.items()):
        if kind == "object":
            keys = sorted({k for obj in group for k in obj})
            if keys and all(_MAP_KEY.fullmatch(k) for k in keys):
                branches.append({"type": "object",
                                 "additionalProperties": infer([v for o in group for v in o.values()])})
            else:
                branches.append({"type": "object",
                                 "properties": {k: infer([o[k] for o in group if k in o], k) for k in keys},
                                 "required": [k for k in keys if all(k in o for o in group)],
                                 "additionalProperties": False})
        elif kind == "array":
            items = [item for array in group for item in array]
            branches.append({"type": "array", "items": infer(items)} if items else {"type": "array", "maxItems": 0})
        else:
            branches.append({"type": kind})
    schema: dict[str, Any] = branches[0] if len(branches) == 1 else {"anyOf": branches}
    if name in SENTINELS:
        schema = {"description": SENTINELS[name], **schema}
    return schema


def schema_of(component: str, kind: str, values: list[Any]) -> dict[str, Any]:
    """The JSON Schema of one file kind of a component, inferred from every file of that kind in the folder."""
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": f"kraftspec vectors: {component} {kind}",
            "description": _KIND_TEXT[kind], **infer(values)}


_KIND_TEXT = {
    "pre.json": "The component's whole reference state before the step, with the trace's clock.",
    "input.json": "The step's input in trace format v1 (traces/FORMAT.md): 'action' and its arguments.",
    "expected.json": "What the reference answers: 'response' (null when the input has none) and the 'records' "
                     "written, each with its offset and type.",
    "post.json": "The component's whole reference state after the step, with the trace's clock.",
}


def readme(per_rule: dict[str, int], source: str) -> str:
    """The vector folder's README: layout, file kinds, sentinels, manifest and how to check a consumer run."""
    lines = [
        "# kraftspec test vectors", "",
        f"Written by `kraftspec vectors` from {source or 'the given traces'}; format `{FORMAT}`.",
        "Each case is one step of a trace, with the state before and after it made explicit, so an implementation",
        "in any language can load `pre.json`, apply `input.json`, and compare its answer with `expected.json` and",
        "its state with `post.json`.", "",
        "## Layout", "",
        "`COMPONENT/RULE/CASE/` holds one case. COMPONENT is `broker`, `partition`, `controller` or `raft`; RULE is",
        "the reference function that decides the step, as the rule book names it (`kraftspec explain RULE` prints",
        "what it decides, the Kafka source and the KIP section; `advance_clock` and `stop_leading` have no rule);",
        "CASE is `TRACE-stepN`: the trace it was first met in (its id, or its file and line) and the 0-based step.",
        "A step met in many traces is one case.", "",
    ]
    lines += [f"* `{name}`: {text}" for name, text in _KIND_TEXT.items()]
    lines += [
        "", f"`{SCHEMAS}/COMPONENT/KIND.schema.json` is a JSON Schema of each file kind, inferred from these files.",
        "", "## Values", "",
        "States are the reference's dataclasses as JSON objects (field names as in `kraftspec.reference`), enums by",
        "name, sets as sorted arrays; maps keyed by a tuple join it with `:` (sessions `\"broker:epoch\"`,",
        "partitions `\"topic:partition\"`, partition leaders `\"broker:topic:partition\"`); a Raft role state",
        "states its `role`. Records are written as the trace format writes them: `offset`, `type`, then every",
        "field. Sentinels:", "",
    ]
    lines += [f"* `{name}`: {text}." for name, text in SENTINELS.items()]
    lines += [
        "", "## Checking a consumer run", "",
        f"`{MANIFEST}` lists every case file with its sha256 (`files`) and these documents (`documents`). Have your",
        "test runner write the path of every vector file it opens, one a line, then run",
        "`kraftspec vectors --verify DIR --read-log FILE [--rule PATTERN...]`: it reports, per rule, the files",
        "never read, with a wrong sha256, missing or not listed. `--rule` keeps the rules your implementation",
        "covers (`broker.heartbeat`, `heartbeat`, `raft/*`).", "",
        "## Cases per rule", "",
        "Each with the first line of its rule-book entry (`kraftspec explain RULE` prints the whole entry).", "",
    ]
    book = entries()
    for key, count in sorted(per_rule.items()):
        rule = key.split("/", 1)[1]
        summary = book[rule].summary if rule in book else ""
        lines.append(f"* `{key}`: {count} cases" + (f". {summary}" if summary else ""))
    return "\n".join(lines) + "\n"


@dataclass
class VerifyReport:
    """What the consumer-side check found; ``ok`` when every listed file was read and matches its hash."""

    files: int
    unread: list[str] = field(default_factory=list)
    mismatched: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    unlisted: list[str] = field(default_factory=list)
    read_matched: int = 0
    per_rule: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """Every kept file read, every hash right, nothing missing or unlisted."""
        return not (self.unread or self.mismatched or self.missing or self.unlisted)


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


def _within(relative: str) -> bool:
    """Whether ``relative`` names a path inside the folder (no absolute path, no ``..`` climbing out of it)."""
    path = Path(relative)
    return bool(relative) and not path.is_absolute() and ".." not in path.parts and "\x00" not in relative


def _entries(where: Path, manifest: dict[str, Any], key: str, optional: bool) -> dict[str, str]:
    files = manifest.get(key, [] if optional else None)
    if not isinstance(files, list):
        raise VectorsError(where, key, "missing, or not an array of {\"path\", \"sha256\"} objects")
    listed: dict[str, str] = {}
    for i, entry in enumerate(files):
        if not isinstance(entry, dict):
            raise VectorsError(where, f"{key}[{i}]", "expected an object with \"path\" and \"sha256\"")
        path, digest = entry.get("path"), entry.get("sha256")
        if not isinstance(path, str) or not _within(path):
            raise VectorsError(where, f"{key}[{i}].path",
                               f"expected a relative path inside the folder, got {quote(path)}")
        if not isinstance(digest, str) or not _SHA256.fullmatch(digest):
            raise VectorsError(where, f"{key}[{i}].sha256", f"expected 64 lowercase hex digits, got {quote(digest)}")
        if path in listed:
            raise VectorsError(where, f"{key}[{i}].path", f"{quote(path)} is listed twice")
        listed[path] = digest
    return listed


def load_manifest(folder: Path) -> tuple[dict[str, str], dict[str, str]]:
    """The manifest's case files and documents, each as path -> sha256, every entry checked: a
    :class:`VectorsError` names the bad one."""
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
        raise VectorsError(where, "format", f"expected {FORMAT!r}, got {quote(manifest.get('format'))} "
                           "(export the vectors again with this kraftspec)")
    files = _entries(where, manifest, "files", optional=False)
    documents = _entries(where, manifest, "documents", optional=True)
    for path in files:
        if len(Path(path).parts) != 4:
            raise VectorsError(where, "files", f"{quote(path)} is not COMPONENT/RULE/CASE/FILE")
    return files, documents


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


def verify(folder: Path, read_log: Path, rules: Sequence[str] = ()) -> VerifyReport:
    """Check ``folder`` against its manifest and ``read_log`` (one opened file per line), only the case files of
    the rules ``rules`` keep; a manifest or read log that cannot be used raises :class:`VectorsError`."""
    listed, documents = load_manifest(folder)
    read = _read_log(folder, read_log)
    kept = {path: digest for path, digest in listed.items() if selects(rules, *Path(path).parts[:2])}
    report = VerifyReport(len(kept), read_matched=len(read & set(listed)))
    for path, digest in sorted({**kept, **documents}.items()):
        file = folder / path
        actual = _sha256(file) if is_regular(file) else None
        counts = report.per_rule.setdefault("/".join(Path(path).parts[:2]), dict.fromkeys(
            ("files", "read", "unread", "mismatched", "missing"), 0)) if path in kept else None
        if counts is not None:
            counts["files"] += 1
        if actual is None:
            report.missing.append(path)
        elif actual != digest:
            report.mismatched.append(path)
        if counts is not None:
            counts["missing" if actual is None else "read" if path in read else "unread"] += 1
            counts["mismatched"] += actual is not None and actual != digest
            if actual is not None and path not in read:
                report.unread.append(path)
    present = {p.relative_to(folder).as_posix() for p in folder.rglob("*")
               if p.is_file() and (p.suffix == ".json" or p.name == README) and p.name != MANIFEST}
    report.unlisted = sorted(present - set(listed) - set(documents))
    return report


def _sources(paths: Sequence[str]) -> Iterator[Sourced]:
    """Every trace of the ``.jsonl``/``.jsonl.gz`` files ``paths``; the first unreadable file or line raises
    :class:`VectorsError` with file and line."""
    from kraftspec.traces.format.jsonl import read_jsonl

    for source in paths:
        if not is_regular(source):
            raise VectorsError(source, "", "no such file" if not Path(source).exists() else "not a regular file")
        for line, item in read_jsonl(source):
            if not isinstance(item, Trace):
                raise VectorsError(source, f"line {line}", one_line(str(item)))
            yield source, line, item


def vectors_command(folder: str, traces: list[str], verify_log: str | None, out: Optional[TextIO] = None,
                    rules: Sequence[str] = ()) -> int:
    """Export vectors from ``traces`` (default: the bundled TLA+ traces of every component), or verify ``folder``
    against a read log; ``rules`` keeps the rules an implementation covers. An unreadable input (file and line)
    writes nothing and exits 2. Messages go to ``out`` (standard output by default)."""
    out = out or sys.stdout
    target = Path(folder)
    bad = unknown_patterns(rules)
    if bad:
        print("\n".join(f"kraftspec vectors: {line}" for line in bad), file=out)
        return EXIT_ERROR
    if verify_log is not None:
        return _verify_command(target, Path(verify_log), rules, out)
    bundled = Path(__file__).parent.parent / "tla"
    sources = traces or [str(bundled / f"{name}.jsonl.gz") for name in ("broker", "partition", "controller", "raft")]
    counted: list[Sourced] = []

    def counting() -> Iterator[Sourced]:
        for item in _sources(sources):
            counted.append(item)
            yield item

    try:
        manifest = export(target, counting(), ", ".join(Path(s).name for s in sources), rules)
    except VectorsError as exc:
        print(f"kraftspec vectors: {exc} (nothing written)", file=out)
        return EXIT_ERROR
    except OSError as exc:
        print(f"kraftspec vectors: {escape_controls(str(target))}: cannot write: {describe_os_error(exc)} "
              "(nothing written)", file=out)
        return EXIT_ERROR
    per = ", ".join(f"{rule} {count}" for rule, count in manifest["per_rule"].items())
    print(f"vectors {target}: {manifest['cases']} cases ({len(manifest['files'])} files) from {len(counted)} traces "
          f"({sum(len(t.steps) for _, _, t in counted)} steps): {per or 'none'}; manifest {target / MANIFEST}",
          file=out)
    if not manifest["cases"]:
        print("kraftspec vectors: no case written: the traces hold no step of the rules kept", file=out)
        return EXIT_ERROR
    return EXIT_OK


def _verify_command(target: Path, log: Path, rules: Sequence[str], out: TextIO) -> int:
    for required in (target / MANIFEST, log):
        if not required.exists():
            print(f"kraftspec vectors: {escape_controls(str(required))}: no such file", file=out)
            return EXIT_ERROR
    try:
        report = verify(target, log, rules)
    except VectorsError as exc:
        print(f"kraftspec vectors: {exc}", file=out)
        return EXIT_ERROR
    for kind in ("unread", "mismatched", "missing", "unlisted"):
        for path in getattr(report, kind):
            print(f"{kind}: {escape_controls(str(target / path))}", file=out)
    for rule, c in sorted(report.per_rule.items()):
        print(f"rule {escape_controls(rule)}: {c['files'] // len(FILES)} cases, {c['read']} of {c['files']} files read, "
              f"{c['unread']} never read, {c['mismatched']} with a wrong sha256, {c['missing']} missing", file=out)
    if not report.read_matched:
        print(f"warning: no line of {escape_controls(str(log))} names a file of the manifest: give paths relative "
              f"to {escape_controls(str(target))} or absolute", file=out)
    if rules and not report.per_rule:
        print(f"warning: --rule {' '.join(map(escape_controls, rules))} keeps no rule of this folder", file=out)
    print(f"vectors {target}: {report.files} files kept of the manifest, {len(report.unread)} never read, "
          f"{len(report.mismatched)} with a wrong sha256, {len(report.missing)} missing, "
          f"{len(report.unlisted)} not in the manifest", file=out)
    return EXIT_OK if report.ok else EXIT_FINDING
