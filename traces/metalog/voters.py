"""The audit's replay of KRaftVersionRecord and VotersRecord (kraft.version 1, rules §3.14): the reference's
``KRaftControlRecordStateMachine`` (``kraftspec.reference.raft_voter_history``) fed from the log and its snapshots,
each rule named after the reference function that states it. Docs live in ``RULE_DOCS`` like every audit rule.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from kraftspec.reference import raft_voter_history as vh
from kraftspec.reference import raft_voters as rv
from kraftspec.reference.frozen import FrozenMap, evolve
from kraftspec.reference.raft_voters import KRaftVersionRecord, VoterNode, VoterSet, VotersRecord
from kraftspec.traces.metalog.control import KRAFT_VERSION, KRAFT_VOTERS
from kraftspec.traces.metalog.rules import RULE_DOCS
from kraftspec.traces.metalog.snapshot import STRUCTURE

IS_RECONFIG_SUPPORTED = "is_reconfig_supported"
FROM_VOTERS_RECORD = "from_voters_record"
HAS_OVERLAPPING_MAJORITY = "has_overlapping_majority"
VOTER_SET_AT_OFFSET = "voter_set_at_offset"
KRAFT_VERSION_AT_OFFSET = "kraft_version_at_offset"

RULE_DOCS.update({
    IS_RECONFIG_SUPPORTED: "rules §3.14, §3.11: a VotersRecord is written only under kraft.version 1 or later: a "
                           "KRaftVersionRecord of level ≥ 1 comes first (before it in the log, or in the same "
                           "snapshot).",
    FROM_VOTERS_RECORD: "rules §3.14: a VotersRecord lists each voter id once (Kafka's VoterSet.fromVotersRecord would "
                        "keep the last entry of a repeated id).",
    HAS_OVERLAPPING_MAJORITY: "rules §3.14, §3.15: consecutive VotersRecords of the log differ by at most one voter "
                              "added and one removed (KIP-853's one change at a time). Tolerance: the set that follows "
                              "the bootstrap snapshot's (offset −1) is not compared, as Kafka's VoterSetHistory.addAt "
                              "does not compare it.",
    VOTER_SET_AT_OFFSET: "rules §3.14: a snapshot ending at offset E holds the voter set the log had at E−1 (its "
                         "latest VotersRecord at or before E−1), or none when the log had none.",
    KRAFT_VERSION_AT_OFFSET: "rules §3.14: a snapshot ending at offset E holds the kraft.version the log had at E−1 "
                             "(KRaftVersionRecord absent: 0).",
})

Report = Callable[[str, int, str, str], None]
"""``(file, offset, rule, explanation)``: the audit's violation callback."""


def voters_record(fields: dict[str, Any]) -> VotersRecord:
    """A decoded VotersRecord (``schema.CONTROL_MESSAGES[6]``) as the reference's record; listeners by name, a repeated
    name keeping its last endpoint as ``Endpoints.fromVotersRecordEndpoints`` does."""
    return VotersRecord(version=fields["version"], voters=tuple(VoterNode(
        voter_key=rv.replica_key(v["voter_id"], v["voter_directory_id"]),
        listeners=FrozenMap({e["name"]: (e["host"], e["port"]) for e in v["endpoints"]}),
        supported_kraft_version=(v["kraft_version_feature"]["min_supported_version"],
                                 v["kraft_version_feature"]["max_supported_version"])) for v in fields["voters"]))


def control_record(kind: int, fields: Optional[dict[str, Any]]) -> Optional[Any]:
    """The reference's record for a decoded KRaftVersion or Voters control record, else None."""
    if fields is None:
        return None
    if kind == KRAFT_VERSION:
        return KRaftVersionRecord(version=fields["version"], kraft_version=fields["kraft_version"])
    if kind == KRAFT_VOTERS:
        return voters_record(fields)
    return None


def _ids(voters: Optional[VoterSet]) -> Optional[list[int]]:
    return None if voters is None else sorted(voters.voters)


class VotersAudit:
    """The control-record state of one directory's log and the rules judged while it is replayed."""

    def __init__(self, report: Report) -> None:
        self.report = report
        self.state = vh.ControlRecordState()
        self.replayed = 0
        """VotersRecords replayed (log and snapshots)."""

    def _judge_record(self, path: str, offset: int, record: Any) -> None:
        if not isinstance(record, VotersRecord):
            return
        ids = [node.voter_key.id for node in record.voters]
        if len(set(ids)) != len(ids):
            self.report(path, offset, FROM_VOTERS_RECORD, f"voter ids {ids} repeat an id")
        kraft_version = vh.last_kraft_version(self.state)
        if not rv.is_reconfig_supported(kraft_version):
            self.report(path, offset, IS_RECONFIG_SUPPORTED, f"VotersRecord {sorted(set(ids))} under kraft.version "
                                                             f"{kraft_version}")

    def log_record(self, path: str, offset: int, kind: int, fields: Optional[dict[str, Any]]) -> None:
        """A KRaftVersion or Voters control record of the log at ``offset``: judged, then replayed."""
        record = control_record(kind, fields)
        if record is None or offset < self.state.next_offset:  # below: in the snapshot the log was seeded from
            return
        self._judge_record(path, offset, record)
        if isinstance(record, VotersRecord):
            self.replayed += 1
            previous = vh.last_voter_set_entry(self.state)
            new = rv.from_voters_record(record)
            if previous is not None and previous[0] >= 0 and not rv.has_overlapping_majority(previous[1], new):
                self.report(path, offset, HAS_OVERLAPPING_MAJORITY, f"voters {_ids(previous[1])} at offset "
                            f"{previous[0]}, then {_ids(new)}: more than one voter changed")
        self.state = evolve(vh.handle_control_record(self.state, offset, record), next_offset=offset + 1)

    def _snapshot_records(self, path: str, end: int, fields: list[tuple[int, dict[str, Any]]]) -> tuple[Any, ...]:
        records = tuple(r for r in (control_record(kind, f) for kind, f in fields) if r is not None)
        self.replayed += sum(isinstance(r, VotersRecord) for r in records)
        saved, self.state = self.state, vh.ControlRecordState()
        kept = []
        for record in records:  # judged in the snapshot's own order: KRaftVersion before Voters
            self._judge_record(path, end, record)
            try:
                self.state = vh.handle_control_record(self.state, end - 1, record)
                kept.append(record)
            except ValueError:  # Kafka's load would throw: a second record of the kind at the same offset
                self.report(path, end, STRUCTURE, f"a second {type(record).__name__} in the snapshot")
        self.state = saved
        return tuple(kept)

    def load_snapshot(self, path: str, end: int, fields: list[tuple[int, dict[str, Any]]]) -> None:
        """A snapshot ending at ``end`` that the log continues (the bootstrap ``0-0.checkpoint``, or the snapshot
        seeding a log that starts above 0): its records become the history at ``end − 1``."""
        self.state = vh.load_snapshot(self.state, end - 1, self._snapshot_records(path, end, fields))

    def compare_snapshot(self, path: str, end: int, fields: list[tuple[int, dict[str, Any]]]) -> None:
        """A snapshot ending at ``end`` after the log's records below ``end`` were replayed: same voters and
        kraft.version as the log at ``end − 1``."""
        snapshot = vh.load_snapshot(vh.ControlRecordState(), end - 1, self._snapshot_records(path, end, fields))
        log = evolve(self.state, next_offset=max(self.state.next_offset, end))
        log_voters, snapshot_voters = vh.voter_set_at_offset(log, end - 1), vh.voter_set_at_offset(snapshot, end - 1)
        if log_voters != snapshot_voters:
            self.report(path, end, VOTER_SET_AT_OFFSET, f"snapshot voters {_ids(snapshot_voters)}, the log's at "
                        f"offset {end - 1} are {_ids(log_voters)}" + (" (same ids, other directories, listeners or "
                                                                       "kraft.version ranges)" if
                                                                       _ids(log_voters) == _ids(snapshot_voters) else ""))
        log_version, snapshot_version = vh.kraft_version_at_offset(log, end - 1), \
            vh.kraft_version_at_offset(snapshot, end - 1)
        if log_version != snapshot_version:
            self.report(path, end, KRAFT_VERSION_AT_OFFSET, f"snapshot kraft.version {snapshot_version}, the log's at "
                                                            f"offset {end - 1} is {log_version}")

    def reconfig_supported(self) -> bool:
        """The log replayed so far is at kraft.version 1 or later (its last KRaftVersionRecord, log or snapshot)."""
        return rv.is_reconfig_supported(vh.last_kraft_version(self.state))

    def summary(self) -> tuple[int, Optional[int], Optional[list[int]]]:
        """(VotersRecords replayed, the last kraft.version, the last voter ids) — None when no record set them."""
        entry = vh.last_voter_set_entry(self.state)
        has_version = vh.last_entry(self.state.kraft_version_history) is not None
        return self.replayed, vh.last_kraft_version(self.state) if has_version else None, \
            None if entry is None else _ids(entry[1])
