"""Readers for KRaft metadata logs: record batches, metadata records, snapshots and the files beside them,
and the audit that replays a data directory and judges every record (issue 8).

Modules: ``segments`` (v2 batches), ``schema`` (the record table and its codec), ``control`` (control
records), ``snapshot``, ``files`` (quorum-state, leader-epoch-checkpoint, meta.properties,
partition.metadata), ``image`` (replay), ``rules`` and ``raft_rules`` (the checks), ``audit``, ``report``,
``plant`` (rewriting logs for tests and benchmarks), ``corpus`` (the bundled real data directories).
"""

from kraftspec.traces.metalog.audit import audit_command, audit_paths
from kraftspec.traces.metalog.errors import LogFormatError
from kraftspec.traces.metalog.report import AuditReport, DirectoryReport, FileReport, Violation

__all__ = ["AuditReport", "DirectoryReport", "FileReport", "LogFormatError", "Violation", "audit_command", "audit_paths"]
