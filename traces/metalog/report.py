"""The audit report: per data directory, per file, every violation; as JSON or plain text."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Optional

from kraftspec.reference.metadata_version import name_of
from kraftspec.traces.format.limits import escape_controls

MAX_VIOLATIONS_KEPT = 1000
"""Violations kept per directory (the rest are only counted) so a broken log cannot exhaust memory."""
MAX_REGISTRATIONS_KEPT = 1000
"""Registrations listed per broker (all are counted)."""


@dataclass(frozen=True)
class Violation:
    """A broken rule: where (file, byte-independent log ``offset``), which ``rule``, and why."""

    file: str
    offset: int
    rule: str
    explanation: str


@dataclass
class FileReport:
    """One input file: what it is, whether it was audited, and the precise format error if reading failed."""

    path: str
    kind: str
    status: str = "audited"
    """``audited``, ``error`` (a LogFormatError stopped it), ``skipped`` (not KRaft metadata) or ``not audited``."""
    error: Optional[str] = None
    error_offset: Optional[int] = None
    note: Optional[str] = None
    size: int = 0
    batches: int = 0
    records: int = 0


@dataclass
class BrokerSummary:
    """A broker id's registrations as ``(offset, epoch, incarnation, record version)`` and its final state."""

    broker_id: int
    registrations: list[tuple[int, int, str, int]] = field(default_factory=list)
    registration_count: int = 0
    epoch: Optional[int] = None
    fenced: Optional[bool] = None
    in_controlled_shutdown: Optional[bool] = None
    registered: bool = False


@dataclass
class DirectoryReport:
    """One data directory: metadata.version, record counts, brokers, Raft epochs, files and violations."""

    path: str
    node_id: Optional[int] = None
    cluster_id: Optional[str] = None
    """From meta.properties."""
    metadata_version: Optional[int] = None
    record_counts: dict[str, int] = field(default_factory=dict)
    brokers: dict[int, BrokerSummary] = field(default_factory=dict)
    controllers: list[int] = field(default_factory=list)
    topics: int = 0
    partitions: int = 0
    raft_epochs: list[tuple[int, int, Optional[int]]] = field(default_factory=list)
    """``(epoch, first offset, leader from its LeaderChange)`` for each epoch in the log."""
    log_start_offset: Optional[int] = None
    log_end_offset: Optional[int] = None
    snapshots_compared: list[str] = field(default_factory=list)
    voters_records: int = 0
    """VotersRecords replayed from the log and its snapshots (rules §3.14)."""
    kraft_version: Optional[int] = None
    voters: Optional[list[int]] = None
    """The last KRaftVersionRecord's level and the last VotersRecord's voter ids (None when there was none)."""
    files: list[FileReport] = field(default_factory=list)
    violations: list[Violation] = field(default_factory=list)
    violation_count: int = 0

    def add(self, violation: Violation) -> None:
        """Record a violation (kept up to :data:`MAX_VIOLATIONS_KEPT`, always counted)."""
        self.violation_count += 1
        if len(self.violations) < MAX_VIOLATIONS_KEPT:
            self.violations.append(violation)

    @property
    def errors(self) -> list[FileReport]:
        """Files whose reading stopped on a format error."""
        return [f for f in self.files if f.status == "error"]

    @property
    def ok(self) -> bool:
        """No violation and no format error."""
        return self.violation_count == 0 and not self.errors

    @property
    def only_meta_refused(self) -> bool:
        """Its one refused file is meta.properties: the logs were read and replayed in full (issue 20), so the
        directory is not unreadable; the exit code is still 2 (a refused file is bad input)."""
        return bool(self.errors) and all(f.kind == "meta.properties" for f in self.errors)


@dataclass
class AuditReport:
    """Every directory audited by :func:`kraftspec.traces.metalog.audit.audit_paths`."""

    directories: list[DirectoryReport] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True iff every directory is free of violations and format errors."""
        return all(d.ok for d in self.directories)

    @property
    def exit_code(self) -> int:
        """The command's exit code: 2 when a file could not be read (bad input), else 1 on a violation, else 0."""
        if any(d.errors for d in self.directories):
            return 2
        return 0 if self.ok else 1

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (broker ids become string keys)."""
        out = []
        for d in self.directories:
            item = asdict(d)
            item["metadata_version_name"] = None if d.metadata_version is None else name_of(d.metadata_version)
            item["brokers"] = {str(k): v for k, v in item["brokers"].items()}
            item["ok"] = d.ok
            out.append(item)
        return {"ok": self.ok, "directories": out}

    def summary_line(self) -> str:
        """One line: directories, files and records audited, and what was found."""
        files = sum(len(d.files) for d in self.directories)
        records = sum(sum(d.record_counts.values()) for d in self.directories)
        violations = sum(d.violation_count for d in self.directories)
        refused = sum(1 for d in self.directories if d.only_meta_refused)
        errors = sum(1 for d in self.directories for f in d.files if f.error) - refused
        return (f"audit: {len(self.directories)} data directories, {files} files, {records} records: "
                f"{violations} violation(s), {errors} unreadable file(s)"
                + (f", {refused} meta.properties refused (their logs read and replayed in full)" if refused else ""))

    def dumps(self) -> str:
        """The JSON text of :meth:`to_json`."""
        return json.dumps(self.to_json(), indent=2, sort_keys=True)

    def render(self) -> str:
        """A plain-text summary for people."""
        lines: list[str] = []
        for d in self.directories:
            mv = "none (pre-3.3: no FeatureLevelRecord)" if d.metadata_version is None else \
                f"{d.metadata_version} ({name_of(d.metadata_version)})"
            verdict = "OK" if d.ok else "VIOLATIONS" if d.violation_count else "UNREADABLE"
            if verdict == "UNREADABLE" and d.only_meta_refused:  # issue 20
                verdict = "META.PROPERTIES REFUSED (the log was read and replayed in full, no violation)"
            lines.append(f"== {d.path}: {verdict}"
                         + ("" if d.node_id is None else f" (node {d.node_id}, cluster {d.cluster_id})"))
            lines.append(f"   metadata.version {mv}; offsets {d.log_start_offset}..{d.log_end_offset}; "
                         f"{d.topics} topic(s), {d.partitions} partition(s)")
            lines.append("   records: " + ", ".join(f"{k} {v}" for k, v in sorted(d.record_counts.items())))
            epochs = ", ".join(f"{e}@{o}" + ("" if leader is None else f" (leader {leader})") for e, o, leader in d.raft_epochs)
            lines.append(f"   raft epochs: {epochs}")
            for b in d.brokers.values():
                state = "unregistered" if not b.registered else ("fenced" if b.fenced else "unfenced") + \
                    (", in controlled shutdown" if b.in_controlled_shutdown else "")
                lines.append(f"   broker {b.broker_id}: {b.registration_count} registration(s), epoch {b.epoch}, {state}")
            if d.controllers:
                lines.append(f"   controllers registered: {d.controllers}")
            if d.voters_records or d.kraft_version is not None:
                lines.append(f"   kraft.version {d.kraft_version}; {d.voters_records} VotersRecord(s) replayed, "
                             f"voters {d.voters}")
            for s in d.snapshots_compared:
                lines.append(f"   snapshot compared with the log: {s}")
            for f in d.files:
                detail = f.error or f.note or ""
                lines.append(f"   [{f.status}] {f.kind}: {f.path}" + (f" — {detail}" if detail else ""))
            for v in d.violations:
                lines.append(f"   VIOLATION {v.rule} at offset {v.offset} of {v.file}: {v.explanation}")
            if d.violation_count > len(d.violations):
                lines.append(f"   ... and {d.violation_count - len(d.violations)} more violation(s)")
        return "\n".join(map(escape_controls, lines))  # a name or value from the input never starts a line
