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
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, TextIO

from kraftspec.reference import broker
from kraftspec.traces import broker_replay
from kraftspec.traces.broker_trace import ACTIONS, BROKER
from kraftspec.traces.format import Trace, step_to_json
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


def _read_log(folder: Path, log: Path) -> set[str]:
    """The files a consumer run opened, as paths relative to ``folder`` (lines outside it are kept as given)."""
    read = set()
    root = folder.resolve()
    for line in log.read_text().splitlines():
        line = line.strip()
        if not line:
            continue
        path = Path(line) if Path(line).is_absolute() else root / line
        try:
            read.add(path.resolve().relative_to(root).as_posix())
        except ValueError:
            read.add(line)
    return read


def verify(folder: Path, read_log: Path) -> VerifyReport:
    """Check ``folder`` against its manifest and ``read_log`` (one opened file per line)."""
    manifest = json.loads((folder / MANIFEST).read_text())
    listed = {entry["path"]: entry["sha256"] for entry in manifest["files"]}
    read = _read_log(folder, read_log)
    report = VerifyReport(len(listed))
    for path, digest in sorted(listed.items()):
        file = folder / path
        if not file.is_file():
            report.missing.append(path)
            continue
        if hashlib.sha256(file.read_bytes()).hexdigest() != digest:
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
        if not (target / MANIFEST).is_file() or not Path(verify_log).is_file():
            missing = target / MANIFEST if not (target / MANIFEST).is_file() else verify_log
            print(f"kraftspec vectors: {missing}: no such file", file=out)
            return EXIT_ERROR
        report = verify(target, Path(verify_log))
        for kind in ("unread", "mismatched", "missing", "unlisted"):
            for path in getattr(report, kind):
                print(f"{kind}: {target / path}", file=out)
        print(f"vectors {target}: {report.files} files in the manifest, {len(report.unread)} never read, "
              f"{len(report.mismatched)} with a wrong sha256, {len(report.missing)} missing, "
              f"{len(report.unlisted)} not in the manifest", file=out)
        return EXIT_OK if report.ok else EXIT_FINDING
    from kraftspec.traces.jsonl import read_jsonl

    sources = traces or [str(Path(__file__).parent / "tla" / "broker.jsonl.gz")]
    read: list[Trace] = []
    unreadable = 0
    for source in sources:
        if not Path(source).is_file():
            print(f"{source}: error: no such file", file=out)
            unreadable += 1
            continue
        for line, item in read_jsonl(source):
            if isinstance(item, Trace):
                read.append(item)
            else:
                print(f"{source}:{line}: error: {' '.join(str(item).split())}", file=out)
                unreadable += 1
    manifest = export(target, read, source=", ".join(Path(s).name for s in sources))
    rules = ", ".join(f"{rule} {count}" for rule, count in sorted(manifest["per_rule"].items()))
    print(f"vectors {target}: {manifest['cases']} cases ({len(manifest['files'])} files) from {len(read)} traces "
          f"({sum(len(t.steps) for t in read)} steps, {unreadable} unreadable): {rules}; manifest {target / MANIFEST}",
          file=out)
    return EXIT_ERROR if unreadable else EXIT_OK
