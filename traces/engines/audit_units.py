"""The per-unit work of ``kraftspec validate --audit``: one metadata-log audit per unit, one report row each.

A unit is one data directory (or metadata partition directory, or single ``.log``/``.checkpoint``
file), audited whole by :func:`kraftspec.traces.metalog.audit.audit_paths` exactly as ``kraftspec
audit`` does; a folder holding several data directories (such as the bundled corpus) becomes one
unit per data directory, so an engine spreads many logs over its tasks.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any, Iterable, Iterator

import pyarrow as pa

from kraftspec.traces.metalog.audit import METADATA_DIR, audit_paths
from kraftspec.traces.metalog.report import AuditReport

AUDIT_SCHEMA = pa.schema([
    ("path", pa.string()), ("verdict", pa.string()), ("metadata_version", pa.int64()), ("files", pa.int64()),
    ("records", pa.int64()), ("violations", pa.int64()), ("rules", pa.string()), ("first_violation", pa.string()),
    ("reason", pa.string()), ("report", pa.string())])
"""One row per audited path: ``verdict`` ``ok``, ``violations``, ``unreadable`` (a file's format error) or
``meta.properties refused`` (the directory's only refused file is meta.properties: its logs were read and replayed
in full, and ``violations`` counts what they showed);
``rules`` counts the violations kept per rule (``rule:count`` lines); ``report`` is ``kraftspec audit
--json``'s text for this path."""
META_REFUSED = "meta.properties refused"
"""The verdict of a directory whose one refused file is its meta.properties (bad input, exit code 2, as ``audit``)."""
UNIT_SCHEMA = pa.schema([("path", pa.string()), ("location", pa.string()), ("rows", pa.int64())])
"""``path`` as given (reported) and ``location``, the absolute path audited (executors have their own working
directories); ``rows`` is 1."""


def plan(paths: Iterable[str]) -> list[dict[str, Any]]:
    """One unit per data directory, metadata partition directory or file; folders of data directories expanded."""
    units: list[dict[str, Any]] = []
    for raw in paths:
        path = Path(raw)
        try:
            nested = sorted(p.parent for p in path.rglob(METADATA_DIR) if p.is_dir()) if path.is_dir() else []
        except OSError:
            nested = []  # a folder that cannot be listed: its one unit's audit reports why
        if path.is_dir() and not (path / METADATA_DIR).is_dir() and path.name != METADATA_DIR and nested:
            units.extend({"path": str(p), "location": str(p.resolve()), "rows": 1} for p in nested)
        else:
            units.append({"path": raw, "location": str(path.resolve()), "rows": 1})
    return units


def audit_unit(unit: dict[str, Any]) -> Iterator[pa.RecordBatch]:
    """Audit one path and yield its single report row (a failure of the audit itself is reported, not raised)."""
    try:
        row = _row(unit["path"], audit_paths([unit["location"]]))
    except Exception as exc:  # a defect of the audit on this input: reported, the job goes on
        row = {"path": unit["path"], "verdict": "unreadable", "reason": f"the audit failed: {type(exc).__name__}: {exc}"}
    yield pa.RecordBatch.from_pylist([row], schema=AUDIT_SCHEMA)


def _row(path: str, report: AuditReport) -> dict[str, Any]:
    (directory,) = report.directories
    rules = Counter(v.rule for v in directory.violations)
    errors = [f"{f.path}: {f.error}" for f in directory.errors]
    first = directory.violations[0] if directory.violations else None
    return {
        "path": path,
        "verdict": (META_REFUSED if directory.only_meta_refused else "unreadable" if errors
                    else "violations" if directory.violation_count else "ok"),
        "metadata_version": directory.metadata_version, "files": len(directory.files),
        "records": sum(directory.record_counts.values()), "violations": directory.violation_count,
        "rules": "\n".join(f"{rule}:{count}" for rule, count in sorted(rules.items())) or None,
        "first_violation": None if first is None else f"{first.rule} at offset {first.offset} of {first.file}: "
                                                      f"{first.explanation}",
        "reason": "; ".join(errors) or None,
        "report": json.dumps(report.to_json()["directories"][0], sort_keys=True)}
