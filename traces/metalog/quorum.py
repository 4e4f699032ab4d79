"""The quorum audit (``kraftspec audit --quorum DIR...``): the replicas' ``__cluster_metadata-0`` logs checked
against each other, where the per-directory audit judges each log alone.

Rules (rules §3; KIP-595 "Log Matching", "Leader Completeness", "Election Safety"):

* ``quorum-readable``: every replica's log segments read (batch headers, lengths and CRC-32C checked).
* ``quorum-committed-prefix-identical``: the committed prefix is what a majority of the voters hold identically,
  batch for batch (same offsets, epoch and CRC-32C), from the first offset they all hold; every replica, voter or
  observer, holds exactly that at each committed offset it has. The finding names the replica and the first
  record offset that differs (records compared one by one when the batches differ). One exception, a note and not
  a finding: a stale suffix, where a replica's log from some committed offset on holds only batches of epochs
  lower than the committed batch's there (a deposed leader cut off from the others, or a follower, holding entries
  no majority took; KIP-595 log reconciliation truncates them at its next fetch). Files do not say how far a
  replica had applied its log, so such a suffix is taken as uncommitted.
* ``quorum-log-matching``: two replicas' batches at the same offset written in the same epoch are identical
  (only that epoch's one leader writes them).
* ``quorum-no-committed-entry-lost``: a replica holds every committed offset between its log start and its log
  end (no hole), and the leader of the latest epoch (from the LeaderChange records and quorum-state files) holds the
  whole committed prefix from its log start.
* ``quorum-one-leader-per-epoch``: each epoch has at most one leader across every replica's LeaderChange records
  and quorum-state files.
* ``quorum-epoch-checkpoints-agree``: for each epoch that starts in the committed prefix, every replica's
  leader-epoch-checkpoint that lists it gives the same start offset, and that offset is where the epoch's first
  committed batch is.
* ``quorum-state-consistent``: a replica's quorum-state epoch is at least the last epoch of its own log, a
  leader it names is a voter, and it never names a leader another replica's log contradicts for that epoch.

Which replicas are voters: the voters of the latest LeaderChange record found in any replica, or under
kraft.version 1 of a VotersRecord written after it (KIP-853: a leader counts its majority with the latest voter set of
its log, ``VoterSetHistory.lastValue``; latest = highest epoch, then offset); else the quorum-state ``currentVoters``;
with neither, every replica given counts as a voter. A replica's node id comes
from its ``meta.properties``.
"""

from __future__ import annotations

import json
import os
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable, Optional

from kraftspec.traces.format.limits import open_regular
from kraftspec.traces.metalog.control import KRAFT_VOTERS, LEADER_CHANGE, decode_control
from kraftspec.traces.metalog.errors import DecodeError, LogFormatError
from kraftspec.traces.metalog.files import read_leader_epoch_checkpoint, read_meta_properties, read_quorum_state
from kraftspec.traces.metalog.segments import read_batches

METADATA_DIR = "__cluster_metadata-0"

READABLE = "quorum-readable"
COMMITTED_PREFIX_IDENTICAL = "quorum-committed-prefix-identical"
LOG_MATCHING = "quorum-log-matching"
NO_COMMITTED_ENTRY_LOST = "quorum-no-committed-entry-lost"
ONE_LEADER_PER_EPOCH = "quorum-one-leader-per-epoch"
EPOCH_CHECKPOINTS_AGREE = "quorum-epoch-checkpoints-agree"
QUORUM_STATE_CONSISTENT = "quorum-state-consistent"


@dataclass(frozen=True)
class BatchId:
    """What identifies a batch across replicas: its offsets, epoch and CRC-32C (which covers every record)."""

    base_offset: int
    last_offset: int
    epoch: int
    crc: int


@dataclass(frozen=True)
class QuorumViolation:
    replica: str
    """The replica's data directory."""
    file: str
    offset: int
    rule: str
    explanation: str


@dataclass
class Replica:
    """One replica's metadata log, as batch identities, with its side files."""

    data_dir: str
    node_id: Optional[int] = None
    batches: dict[int, BatchId] = field(default_factory=dict)
    """base offset -> batch."""
    where: dict[int, tuple[str, int]] = field(default_factory=dict)
    """base offset -> (segment path, byte position)."""
    leader_changes: dict[int, tuple[int, tuple[int, ...]]] = field(default_factory=dict)
    """epoch -> (leader, voters) from its LeaderChange records."""
    voters_records: dict[tuple[int, int], tuple[int, ...]] = field(default_factory=dict)
    """(epoch, offset) -> voter ids of each VotersRecord in the log (kraft.version 1)."""
    epoch_starts: dict[int, int] = field(default_factory=dict)
    """epoch -> offset of its first batch in this log."""
    log_start: Optional[int] = None
    log_end: Optional[int] = None
    quorum_state: Any = None
    checkpoint: Optional[list[tuple[int, int]]] = None
    error: Optional[str] = None

    @property
    def name(self) -> str:
        return f"node {self.node_id} ({self.data_dir})" if self.node_id is not None else self.data_dir


@dataclass
class QuorumReport:
    replicas: list[Replica]
    voters: tuple[int, ...]
    committed_end: int
    """One past the last committed offset (the majority-identical prefix)."""
    latest_epoch: Optional[int]
    latest_leader: Optional[int]
    violations: list[QuorumViolation] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """Stale suffixes (see the module docstring): what the audit tolerated, and where."""

    @property
    def ok(self) -> bool:
        return not self.violations

    @property
    def exit_code(self) -> int:
        if any(v.rule == READABLE for v in self.violations):
            return 2
        return 0 if self.ok else 1

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok, "voters": list(self.voters), "committed_end": self.committed_end,
            "latest_epoch": self.latest_epoch, "latest_leader": self.latest_leader,
            "replicas": [{"data_dir": r.data_dir, "node_id": r.node_id, "log_start": r.log_start, "log_end": r.log_end,
                          "batches": len(r.batches), "epochs": sorted(r.epoch_starts.items()),
                          "quorum_state_epoch": getattr(r.quorum_state, "leader_epoch", None), "error": r.error}
                         for r in self.replicas],
            "violations": [asdict(v) for v in self.violations],
            "notes": self.notes,
        }

    def render(self) -> str:
        lines = [f"quorum audit: {len(self.replicas)} replica(s), voters {list(self.voters)}, committed prefix ends at "
                 f"offset {self.committed_end}, latest epoch {self.latest_epoch} (leader {self.latest_leader})"]
        for r in self.replicas:
            qs = r.quorum_state
            state = f", quorum-state epoch {qs.leader_epoch} leader {qs.leader_id}" if qs is not None else ""
            lines.append(f"   {r.name}: offsets {r.log_start}..{r.log_end}, {len(r.batches)} batches, "
                         f"epochs {sorted(r.epoch_starts)}{state}" + (f"; ERROR {r.error}" if r.error else ""))
        lines.extend(f"   note: {note}" for note in self.notes)
        for v in self.violations:
            lines.append(f"   VIOLATION {v.rule} at offset {v.offset} in {v.replica}: {v.explanation} [{v.file}]")
        lines.append("quorum audit: OK" if self.ok else f"quorum audit: {len(self.violations)} violation(s)")
        return "\n".join(lines)


def _partition_dir(path: Path) -> tuple[Path, Path]:
    if (path / METADATA_DIR).is_dir():
        return path, path / METADATA_DIR
    if path.name == METADATA_DIR:
        return path.parent, path
    return path, path / METADATA_DIR


def replica_dirs(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """Data directories: each path itself if it holds a metadata partition, else every one below it, sorted."""
    out: list[Path] = []
    for raw in paths:
        path = Path(raw)
        data_dir, partition = _partition_dir(path)
        if partition.is_dir():
            out.append(data_dir)
        elif path.is_dir():
            out.extend(sorted(p.parent for p in path.rglob(METADATA_DIR) if p.is_dir()))
        else:
            out.append(path)
    return out


def read_replica(data_dir: Path) -> Replica:
    """One replica's batch identities (CRC-checked by the reader), LeaderChange records and side files."""
    replica = Replica(str(data_dir))
    data_dir, partition = _partition_dir(data_dir)
    try:
        replica.node_id = read_meta_properties(str(data_dir / "meta.properties")).node_id
    except (LogFormatError, OSError):
        pass
    if not partition.is_dir():
        replica.error = f"{partition}: no metadata partition directory"
        return replica
    segments = sorted((p for p in partition.glob("*.log") if p.name[:-4].isdigit()), key=lambda p: int(p.name[:-4]))
    try:
        for segment in segments:
            with open_regular(str(segment)) as stream:
                for batch in read_batches(stream, str(segment)):
                    _add_batch(replica, batch)
    except (LogFormatError, OSError) as exc:
        replica.error = str(exc)
    for name, reader, attr in (("quorum-state", read_quorum_state, "quorum_state"),
                               ("leader-epoch-checkpoint", read_leader_epoch_checkpoint, "checkpoint")):
        path = partition / name
        if path.is_file():
            try:
                setattr(replica, attr, reader(str(path)))
            except (LogFormatError, OSError) as exc:
                replica.error = replica.error or str(exc)
    return replica


def _add_batch(replica: Replica, batch: Any) -> None:
    ident = BatchId(batch.base_offset, batch.last_offset, batch.leader_epoch, batch.crc)
    if replica.log_start is None:
        replica.log_start = batch.base_offset
    replica.batches[batch.base_offset] = ident
    replica.where[batch.base_offset] = (batch.path, batch.file_offset)
    replica.log_end = batch.last_offset + 1
    replica.epoch_starts.setdefault(batch.leader_epoch, batch.base_offset)
    if batch.is_control:
        for record in batch.iter_records():
            try:
                control = decode_control(record.key, record.value)
            except DecodeError:
                continue  # the per-directory audit reports it
            if control.type == LEADER_CHANGE and control.fields is not None:
                fields = control.fields
                voters = tuple(v.get("voter_id", v.get("voterId", -1)) if isinstance(v, dict) else v
                               for v in fields.get("voters", ()))
                leader = fields.get("leader_id", fields.get("leaderId", -1))
                replica.leader_changes.setdefault(batch.leader_epoch, (leader, voters))
            elif control.type == KRAFT_VOTERS and control.fields is not None:
                replica.voters_records[(batch.leader_epoch, record.offset)] = tuple(
                    sorted(v["voter_id"] for v in control.fields["voters"]))


def _records(replica: Replica, base_offset: int) -> list[tuple[int, int, Optional[bytes], Optional[bytes]]]:
    """``(offset, timestamp, key, value)`` of the replica's batch at ``base_offset`` (read again from its file)."""
    path, position = replica.where[base_offset]
    with open_regular(path) as stream:
        stream.seek(position)
        batch = next(read_batches(stream, path))
    return [(r.offset, r.timestamp, r.key, r.value) for r in batch.iter_records()]


def _first_difference(a: Replica, b: Replica, base_offset: int) -> int:
    """The first record offset at which the two replicas' batches at ``base_offset`` differ."""
    try:
        left, right = _records(a, base_offset), _records(b, base_offset)
    except (LogFormatError, OSError, StopIteration):
        return base_offset
    for x, y in zip(left, right):
        if x != y:
            return x[0]
    return min(left[-1][0] if left else base_offset, right[-1][0] if right else base_offset) + 1 \
        if len(left) != len(right) else base_offset  # same records, other header fields: the batch itself


def audit_quorum(paths: Iterable[str | os.PathLike[str]]) -> QuorumReport:
    """Read every replica under ``paths`` and check them against each other (the rules above)."""
    replicas = [read_replica(d) for d in replica_dirs(paths)]
    violations: list[QuorumViolation] = []

    def add(replica: Replica, file: str, offset: int, rule: str, text: str) -> None:
        violations.append(QuorumViolation(replica.name, file, offset, rule, text))

    for r in replicas:
        if r.error:
            add(r, r.data_dir, r.log_end or 0, READABLE, r.error)

    # voters: the latest LeaderChange anywhere, else quorum-state currentVoters, else every replica
    changes: dict[int, set[tuple[int, tuple[int, ...]]]] = defaultdict(set)
    for r in replicas:
        for epoch, (leader, voters) in r.leader_changes.items():
            changes[epoch].add((leader, tuple(sorted(voters))))
    voters: tuple[int, ...] = ()
    if changes:
        voters = sorted(changes[max(changes)])[0][1]
    records = {key: ids for r in replicas for key, ids in r.voters_records.items()}
    if records and (not changes or max(records)[0] >= max(changes)):  # a voter change in or after the latest epoch
        voters = records[max(records)]
    if not voters:
        listed = [r.quorum_state.current_voters for r in replicas
                  if r.quorum_state is not None and r.quorum_state.current_voters]
        voters = tuple(sorted(listed[0])) if listed else ()
    if not voters:
        voters = tuple(sorted(r.node_id for r in replicas if r.node_id is not None))
    voter_replicas = [r for r in replicas if r.node_id in voters] or replicas
    majority = len(voters) // 2 + 1 if voters else len(voter_replicas) // 2 + 1

    # the committed prefix: batch by batch, from the first offset, what a majority of voters hold identically
    committed: dict[int, BatchId] = {}
    offsets = sorted({o for r in voter_replicas for o in r.batches})
    start = max((r.log_start for r in voter_replicas if r.log_start is not None), default=0)
    committed_end = start
    position = start
    holders: dict[int, list[Replica]] = {}
    while True:
        counts = Counter(r.batches[position] for r in voter_replicas if position in r.batches)
        if not counts:
            break
        ident, count = counts.most_common(1)[0]
        if count < majority:
            break
        committed[position] = ident
        holders[position] = [r for r in voter_replicas if r.batches.get(position) == ident]
        position = ident.last_offset + 1
        committed_end = position
    # offsets before the latest log start that a majority still holds (older replicas keep more)
    for base in offsets:
        if base >= start:
            break
        counts = Counter(r.batches[base] for r in voter_replicas if base in r.batches)
        ident, count = counts.most_common(1)[0]
        held = sum(1 for r in voter_replicas if r.log_start is not None and r.log_start <= base)
        if count >= min(majority, held) and count * 2 > held:
            committed[base] = ident
            holders[base] = [r for r in voter_replicas if r.batches.get(base) == ident]

    # every replica against the committed prefix (up to a stale suffix)
    notes: list[str] = []
    for r in replicas:
        if r.log_start is None:
            continue
        stale = _stale_suffix(r, committed)
        if stale is not None:
            epochs = sorted({b.epoch for o, b in r.batches.items() if o >= stale})
            notes.append(f"{r.name} holds an uncommitted suffix from offset {stale} to {r.log_end} in epoch(s) {epochs}, "
                         f"below the committed epoch {committed[stale].epoch} there (truncated at its next fetch)")
        for base, ident in sorted(committed.items()):
            if base < r.log_start or base >= (r.log_end or 0) or (stale is not None and base >= stale):
                continue
            mine = r.batches.get(base)
            if mine == ident:
                continue
            file = r.where.get(base, (r.data_dir, 0))[0]
            if mine is None:
                add(r, file, base, NO_COMMITTED_ENTRY_LOST,
                    f"committed batch {base}..{ident.last_offset} (epoch {ident.epoch}) is missing inside the log "
                    f"({r.log_start}..{r.log_end})")
                continue
            other = holders[base][0]
            offset = _first_difference(r, other, base) if (mine.last_offset == ident.last_offset) else base
            add(r, file, offset, COMMITTED_PREFIX_IDENTICAL,
                f"batch {base}..{mine.last_offset} epoch {mine.epoch} crc {mine.crc:#010x} differs from the committed "
                f"batch {base}..{ident.last_offset} epoch {ident.epoch} crc {ident.crc:#010x} held by "
                f"{', '.join(str(h.node_id) for h in holders[base])}; first differing record at offset {offset}")

    # log matching beyond the committed prefix: same (offset, epoch) means the same batch
    by_key: dict[tuple[int, int], dict[BatchId, list[Replica]]] = defaultdict(lambda: defaultdict(list))
    for r in replicas:
        for base, ident in r.batches.items():
            if base not in committed:
                by_key[(base, ident.epoch)][ident].append(r)
    for (base, epoch), variants in sorted(by_key.items()):
        if len(variants) > 1:
            ranked = sorted(variants.items(), key=lambda kv: -len(kv[1]))
            reference_replica = ranked[0][1][0]
            for ident, holders_of in ranked[1:]:
                for r in holders_of:
                    offset = _first_difference(r, reference_replica, base) \
                        if ident.last_offset == ranked[0][0].last_offset else base
                    add(r, r.where[base][0], offset, LOG_MATCHING,
                        f"batch at {base} in epoch {epoch} differs from {reference_replica.name}'s "
                        f"(crc {ident.crc:#010x} vs {ranked[0][0].crc:#010x}): two leaders wrote epoch {epoch}")

    # one leader per epoch: LeaderChange records and quorum-state files
    leaders: dict[int, dict[int, list[str]]] = defaultdict(lambda: defaultdict(list))
    for r in replicas:
        for epoch, (leader, _) in r.leader_changes.items():
            leaders[epoch][leader].append(f"{r.name} LeaderChange")
        qs = r.quorum_state
        if qs is not None and qs.leader_id >= 0:
            leaders[qs.leader_epoch][qs.leader_id].append(f"{r.name} quorum-state")
    for epoch, named in sorted(leaders.items()):
        if len(named) > 1:
            text = "; ".join(f"leader {leader} per {', '.join(where)}" for leader, where in sorted(named.items()))
            starts = [r.epoch_starts[epoch] for r in replicas if epoch in r.epoch_starts]
            add(replicas[0], "", min(starts, default=0), ONE_LEADER_PER_EPOCH,
                f"epoch {epoch} has {len(named)} leaders: {text}")
    latest_epoch = max(leaders, default=None)
    latest_leader = None
    if latest_epoch is not None:
        latest_leader = sorted(leaders[latest_epoch])[0]
        leader_replica = next((r for r in replicas if r.node_id == latest_leader), None)
        if leader_replica is not None and leader_replica.log_start is not None and committed_end > 0:
            if (leader_replica.log_end or 0) < committed_end:
                add(leader_replica, leader_replica.data_dir, leader_replica.log_end or 0, NO_COMMITTED_ENTRY_LOST,
                    f"the leader of epoch {latest_epoch} ends its log at {leader_replica.log_end}, before the committed "
                    f"prefix's end {committed_end}")

    # leader-epoch checkpoints against the committed epochs' start offsets
    committed_starts: dict[int, int] = {}
    for base, ident in sorted(committed.items()):
        committed_starts.setdefault(ident.epoch, base)
    for r in replicas:
        if r.checkpoint is None or r.log_start is None:
            continue
        file = str(_partition_dir(Path(r.data_dir))[1] / "leader-epoch-checkpoint")
        for epoch, start_offset in r.checkpoint:
            expected = committed_starts.get(epoch)
            if expected is not None and expected >= r.log_start and start_offset != expected and \
                    not (start_offset < r.log_start and expected == r.log_start):
                add(r, file, start_offset, EPOCH_CHECKPOINTS_AGREE,
                    f"epoch {epoch} starts at {start_offset} in the checkpoint, at {expected} in the committed log")

    # quorum-state files
    for r in replicas:
        qs = r.quorum_state
        if qs is None:
            continue
        file = str(_partition_dir(Path(r.data_dir))[1] / "quorum-state")
        own_epoch = max(r.epoch_starts, default=-1)
        if qs.leader_epoch < own_epoch:
            add(r, file, 0, QUORUM_STATE_CONSISTENT,
                f"quorum-state epoch {qs.leader_epoch} is below its own log's last epoch {own_epoch}")
        if qs.leader_id >= 0 and voters and qs.leader_id not in voters:
            add(r, file, 0, QUORUM_STATE_CONSISTENT, f"quorum-state names leader {qs.leader_id}, not a voter {list(voters)}")
    return QuorumReport(replicas, tuple(voters), committed_end, latest_epoch, latest_leader, violations, notes)


def _stale_suffix(replica: Replica, committed: dict[int, BatchId]) -> Optional[int]:
    """The first committed offset where ``replica`` holds another batch, if from there on its log holds only batches
    of epochs lower than that committed batch's (a stale suffix, KIP-595 log reconciliation); else None."""
    for base, ident in sorted(committed.items()):
        mine = replica.batches.get(base)
        if mine is None or mine == ident:
            continue
        if mine.epoch < ident.epoch and all(b.epoch < ident.epoch for o, b in replica.batches.items() if o >= base):
            return base
        return None
    return None


def quorum_command(paths: list[str], as_json: bool = False) -> int:
    """``kraftspec audit --quorum DIR...``: exit 0 consistent, 1 a violation, 2 a replica unreadable."""
    if not paths:
        print("kraftspec audit --quorum: name the replicas' data directories (or a folder holding them)")
        return 2
    report = audit_quorum(paths)
    print(json.dumps(report.to_json(), indent=2) if as_json else report.render())
    return report.exit_code
