"""The replicated metadata log as the Raft client sees it: entries with their epochs plus the epoch cache.

rules §3.7 (``RaftLog``, ``internals/KafkaRaftLog.java``, ``LeaderEpochFileCache``), KIP-630. The log starts at
``start_offset``, 0 until a snapshot lets it advance (:func:`delete_before_snapshot`, :func:`truncate_to_latest_snapshot`);
its frozen snapshots are kept by id. ``flushed_end_offset`` is what survives a crash, and so do the snapshots. Entries
form record batches as the leader's accumulator wrote them (``LogEntry.starts_batch``): a fetch reads whole batches, and
a snapshot starts at a batch's first record.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Optional

from kraftspec.reference import raft_rules
from kraftspec.reference.frozen import evolve


@dataclass(frozen=True, slots=True, kw_only=True)
class LogEntry:
    """One record: the epoch of the batch that wrote it, its value (data, or a control message) and whether it is its
    batch's first record (``starts_batch``; the records of one ``BatchAccumulator`` drain share a batch)."""

    epoch: int
    record: Any = None
    starts_batch: bool = True


@dataclass(frozen=True, slots=True, kw_only=True)
class Snapshot:
    """A frozen snapshot: its id (``OffsetAndEpoch``: the end offset it covers and that offset's epoch) and its size in
    bytes (what the state machine wrote; the bytes themselves are not modelled)."""

    end_offset: int
    epoch: int
    size: int

    @property
    def id(self) -> tuple[int, int]:
        """The snapshot id as (end offset, epoch), ``OffsetAndEpoch``'s order."""
        return (self.end_offset, self.epoch)


BOOTSTRAP_SNAPSHOT_ID = (0, 0)
"""``Snapshots.BOOTSTRAP_SNAPSHOT_ID``: the bootstrap checkpoint, never served to a fetcher."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RaftLog:
    """Entries at offsets start..LEO-1, the epoch cache ((epoch, start offset) ascending), the flushed end, the
    frozen snapshots, ascending by id, and the log's own high watermark: the last one the client gave it
    (``MockLog.updateHighWatermark``), which outlives the role that knew it; 0 in a reopened log."""

    entries: tuple[LogEntry, ...] = ()
    epoch_cache: tuple[tuple[int, int], ...] = ()
    flushed_end_offset: int = 0
    last_fetched_epoch: int = 0
    start_offset: int = 0
    snapshots: tuple[Snapshot, ...] = ()
    high_watermark: int = 0

    @property
    def end_offset(self) -> int:
        """The log end offset (LEO): the offset of the next record."""
        return self.start_offset + len(self.entries)

    @property
    def latest_snapshot(self) -> Optional[Snapshot]:
        """``latestSnapshotId``: the snapshot with the largest id, if any."""
        return self.snapshots[-1] if self.snapshots else None

    @property
    def earliest_snapshot(self) -> Optional[Snapshot]:
        """``earliestSnapshotId``: the snapshot with the smallest id, if any."""
        return self.snapshots[0] if self.snapshots else None


def _epoch_floor(log: RaftLog) -> int:
    """The epoch a batch must exceed to start a cache entry when the cache is empty: the latest snapshot's
    (``MockLog.appendBatch`` compares with ``lastFetchedEpoch``), or -1 without one."""
    return log.snapshots[-1].epoch if log.snapshots else -1


def _epoch_without_cache(log: RaftLog) -> int:
    """``lastFetchedEpoch`` of a log whose epoch cache is empty: the latest snapshot's epoch, else 0."""
    return log.snapshots[-1].epoch if log.snapshots else 0


def log_of_epochs(epochs: Iterable[int], flushed: bool = True) -> RaftLog:
    """A log whose entry at offset i has epoch ``epochs[i]`` (values are the offsets); flushed by default."""
    log = append_as_follower(RaftLog(), tuple(LogEntry(epoch=e, record=i) for i, e in enumerate(epochs)))
    return flush(log) if flushed else log


def _cache_with(cache: tuple[tuple[int, int], ...], entries: tuple[LogEntry, ...],
                start: int, floor: int = -1) -> tuple[tuple[int, int], ...]:
    """``LeaderEpochFileCache.assign``: a new (epoch, start offset) only when the epoch grows (past ``floor`` when the
    cache is empty: :func:`_epoch_floor`)."""
    latest = cache[-1][0] if cache else floor
    added = []
    for i, entry in enumerate(entries):
        if entry.epoch > latest:
            added.append((entry.epoch, start + i))
            latest = entry.epoch
        elif entry.epoch < latest:
            raise ValueError(f"epoch {entry.epoch} at offset {start + i} is below the latest epoch {latest}")
    return cache + tuple(added) if added else cache


def append_as_leader(log: RaftLog, records: tuple[Any, ...], epoch: int) -> RaftLog:
    """``appendAsLeader``: one batch of records with the leader's epoch at LEO onwards (not yet flushed)."""
    entries = tuple(LogEntry(epoch=epoch, record=r, starts_batch=i == 0) for i, r in enumerate(records))
    return evolve(log, entries=log.entries + entries,
                  epoch_cache=_cache_with(log.epoch_cache, entries, log.end_offset, _epoch_floor(log)),
                  last_fetched_epoch=epoch if entries else log.last_fetched_epoch)


def initialize_leader_epoch(log: RaftLog, epoch: int) -> RaftLog:
    """``initializeLeaderEpoch`` (``onBecomeLeader``): the new leader's epoch starts at LEO in the epoch cache before
    any record of it is written, replacing entries from LEO or of that epoch on; it is the last fetched epoch
    (Kafka 4.3 ``MockLog.initializeLeaderEpoch``, ``KafkaRaftLog``: ``assignEpochStartOffset``)."""
    start = log.end_offset
    cache = tuple(c for c in log.epoch_cache if c[1] < start and c[0] < epoch) + ((epoch, start),)
    return evolve(log, epoch_cache=cache, last_fetched_epoch=epoch)


def append_as_follower(log: RaftLog, entries: tuple[LogEntry, ...]) -> RaftLog:
    """``appendAsFollower``: fetched entries at LEO onwards; lastFetchedEpoch follows the last one (§3.7)."""
    last = entries[-1].epoch if entries else -1
    return evolve(log, entries=log.entries + entries,
                  epoch_cache=_cache_with(log.epoch_cache, entries, log.end_offset, _epoch_floor(log)),
                  last_fetched_epoch=raft_rules.last_fetched_epoch_after_append(log.last_fetched_epoch, last,
                                                                                len(entries)))


def flush(log: RaftLog) -> RaftLog:
    """``flush``: every entry is durable."""
    if log.flushed_end_offset == log.end_offset:
        return log
    return evolve(log, flushed_end_offset=log.end_offset)


def recover(log: RaftLog) -> RaftLog:
    """What a restart finds on disk: unflushed entries are lost, and so is an epoch that starts at the recovered end
    (no record of it survived: ``MockLog.reopen``, ``LeaderEpochFileCache.truncateFromEnd`` on log recovery); the
    flushed end is kept and the high watermark is 0 (``MockLog.reopen``). Snapshots survive, and a latest snapshot
    past what survived replaces the log as the production log is opened (Kafka 4.3 ``KafkaRaftLog.createLog`` runs
    ``truncateToLatestSnapshot``, judging by ``UnifiedLog.latestEpoch``, the last surviving record's epoch): the log
    starts and ends at it, older snapshots forgotten and its end the high watermark (:func:`_replaced_by`)."""
    log = truncate_to(evolve(log, high_watermark=0), log.flushed_end_offset)
    if log.epoch_cache and log.epoch_cache[-1][1] >= log.end_offset:
        cache = tuple(c for c in log.epoch_cache if c[1] < log.end_offset)
        log = evolve(log, epoch_cache=cache, last_fetched_epoch=cache[-1][0] if cache else _epoch_without_cache(log))
    latest = log.latest_snapshot
    last_epoch = log.entries[-1].epoch if log.entries else 0
    if latest is not None and raft_rules.snapshot_replaces_log(latest.epoch, latest.end_offset, last_epoch,
                                                               log.end_offset):
        return _replaced_by(latest)
    return log


def truncate_to(log: RaftLog, offset: int) -> RaftLog:
    """``truncateTo``: drop entries at offsets >= ``offset`` and the cache entries starting there."""
    if offset >= log.end_offset:
        return log
    cache = tuple(c for c in log.epoch_cache if c[1] < offset)
    return evolve(log, entries=log.entries[:max(0, offset - log.start_offset)], epoch_cache=cache,
                  flushed_end_offset=min(log.flushed_end_offset, offset),
                  last_fetched_epoch=cache[-1][0] if cache else _epoch_without_cache(log))


def end_offset_for_epoch(log: RaftLog, epoch: int) -> tuple[int, int]:
    """``endOffsetForEpoch`` as (epoch, end offset) (§3.7): see ``raft_rules.end_offset_for_epoch``; with snapshots
    ``raft_rules.end_offset_for_epoch_after_snapshot``."""
    if log.snapshots:
        return raft_rules.end_offset_for_epoch_after_snapshot(log.epoch_cache, log.end_offset, log.last_fetched_epoch,
                                                              log.snapshots[0].epoch, epoch)
    return raft_rules.end_offset_for_epoch(log.epoch_cache, log.end_offset, epoch)


def entries_from(log: RaftLog, offset: int, count: int) -> tuple[LogEntry, ...]:
    """``read`` from ``offset`` (at least the log start): whole batches, the first one even when it holds more than
    ``count`` records, then as many more as keep the total within ``count`` (``KafkaRaftLog.read`` returns at least
    one batch and never a part of one; ``count`` stands for ``quorum.fetch.max.bytes``)."""
    first = offset - log.start_offset
    end = _batch_end(log.entries, first)
    while end < len(log.entries) and _batch_end(log.entries, end) - first <= count:
        end = _batch_end(log.entries, end)
    return log.entries[first:end]


def _batch_end(entries: tuple[LogEntry, ...], index: int) -> int:
    """The index just past the batch holding ``entries[index]`` (its last record's index + 1)."""
    index += 1
    while index < len(entries) and not entries[index].starts_batch:
        index += 1
    return index


def batch_base_offset(log: RaftLog, offset: int) -> int:
    """The base offset of the batch holding ``offset``: ``offset`` itself at or past the log end or at its start."""
    index = offset - log.start_offset
    if index <= 0 or index >= len(log.entries):
        return offset
    while index > 0 and not log.entries[index].starts_batch:
        index -= 1
    return log.start_offset + index


def fetch_snapshot_id(log: RaftLog, fetch_offset: int, last_fetched_epoch: int) -> Optional[tuple[int, int]]:
    """``tryCompleteFetchRequest``: the latest snapshot's id (end offset, epoch) when the fetcher must fetch it
    instead of the log, else None: always for an empty fetcher when a snapshot other than the bootstrap one exists,
    otherwise as :func:`snapshot_to_fetch` says (KIP-630)."""
    latest = log.latest_snapshot
    # An empty follower is better served by the snapshot than by the log (Kafka's comment in tryCompleteFetchRequest).
    if fetch_offset == 0 and latest is not None and latest.id != BOOTSTRAP_SNAPSHOT_ID:
        return latest.id
    return snapshot_to_fetch(log, fetch_offset, last_fetched_epoch)


def snapshot_to_fetch(log: RaftLog, offset: int, epoch: int) -> Optional[tuple[int, int]]:
    """``RaftLog.validateOffsetAndEpoch``'s snapshot case: the latest snapshot's id when the position (offset, epoch)
    lies before what the log holds (:func:`raft_rules.fetch_needs_snapshot`), else None (KIP-630)."""
    if not log.snapshots or (log.start_offset == 0 and offset == 0):
        return None
    if raft_rules.fetch_needs_snapshot(offset, epoch, log.start_offset, log.snapshots[0].epoch):
        return log.snapshots[-1].id
    return None


def can_create_snapshot(log: RaftLog, end_offset: int, epoch: int, high_watermark: int) -> bool:
    """``createNewSnapshot`` (Kafka 4.3 ``MockLog``, ``KafkaRaftLog``): False (no writer) for an id below the log
    start or one already frozen; True for a valid one. Raises ``ValueError`` (``IllegalArgumentException``) past the
    high watermark, for an id ``validateOffsetAndEpoch`` does not call valid, or inside a batch, KIP-630."""
    # A snapshot below the log start would cover records the log no longer has.
    if end_offset < log.start_offset:
        return False
    # Only committed records may be snapshotted: they never change.
    if end_offset > high_watermark:
        raise ValueError(f"Cannot create a snapshot with an id ({end_offset}, {epoch}) greater than the "
                         f"high-watermark ({high_watermark})")
    # The id must name a point of this log: its epoch there, as a fetch at that offset would be checked.
    if snapshot_to_fetch(log, end_offset, epoch) is not None or validate_offset_and_epoch(log, end_offset,
                                                                                         epoch) is not None:
        raise ValueError(f"Snapshot id ({end_offset}, {epoch}) is not valid according to the log")
    # A follower loading the snapshot fetches from its end, which must be where a batch starts.
    base_offset = batch_base_offset(log, end_offset) if end_offset < high_watermark else end_offset
    if base_offset != end_offset:
        raise ValueError(f"Cannot create snapshot at offset ({end_offset}) because it is not batch aligned. The batch "
                         f"containing the requested offset has a base offset of ({base_offset})")
    return all(s.id != (end_offset, epoch) for s in log.snapshots)


def freeze_snapshot(log: RaftLog, snapshot: Snapshot) -> RaftLog:
    """``RawSnapshotWriter.freeze``: the snapshot joins the log's, kept in id order (an id already there is kept,
    ``putIfAbsent``)."""
    if any(s.id == snapshot.id for s in log.snapshots):
        return log
    return evolve(log, snapshots=tuple(sorted(log.snapshots + (snapshot,), key=lambda s: s.id)))


def truncate_to_latest_snapshot(log: RaftLog) -> Optional[RaftLog]:
    """``truncateToLatestSnapshot`` (Kafka 4.3 ``MockLog``): when the latest snapshot is ahead of the log
    (:func:`raft_rules.snapshot_replaces_log`) the whole log is dropped, the log starts (and ends, flushed) at the
    snapshot, older snapshots are forgotten and the log's high watermark moves to the snapshot's end; else None
    (nothing truncated), KIP-630."""
    latest = log.latest_snapshot
    last_epoch = log.epoch_cache[-1][0] if log.epoch_cache else 0
    if latest is None or not raft_rules.snapshot_replaces_log(latest.epoch, latest.end_offset, last_epoch,
                                                              log.end_offset):
        return None
    return _replaced_by(latest)


def _replaced_by(latest: Snapshot) -> RaftLog:
    """The log truncated fully to its latest snapshot: it starts and ends, flushed, there, in its epoch; older
    snapshots are forgotten and the snapshot's end is its high watermark (``truncateFullyAndStartAt``)."""
    return RaftLog(entries=(), epoch_cache=(), flushed_end_offset=latest.end_offset, last_fetched_epoch=latest.epoch,
                   start_offset=latest.end_offset, snapshots=(latest,), high_watermark=latest.end_offset)


def delete_before_snapshot(log: RaftLog, end_offset: int, epoch: int, high_watermark: int) -> RaftLog:
    """``deleteBeforeSnapshot`` as Kafka 4.3's ``MockLog`` does it (the log the harness and Kafka's own tests run): for
    a frozen snapshot, older snapshots are forgotten and the log starts at its end offset, the epoch cache keeping
    the epoch in force there. Raises ``ValueError`` (``OffsetOutOfRangeException``) for an id below the log start or
    past the high watermark; an id not frozen changes nothing. ``KafkaRaftLog`` (production) returns false instead of
    raising below the log start; its retention cleaner (``maybeClean``) picks the snapshot, here the input does."""
    # The log start never moves back: records before it are gone.
    if log.start_offset > end_offset:
        raise ValueError(f"New log start ({end_offset}, {epoch}) is less than the current log start offset "
                         f"({log.start_offset})")
    # Records past the high watermark are not committed: the log must keep them.
    if high_watermark < end_offset:
        raise ValueError(f"New log start ({end_offset}, {epoch}) is greater than the high watermark ({high_watermark})")
    if all(s.id != (end_offset, epoch) for s in log.snapshots):
        return log
    before = tuple(c for c in log.epoch_cache if c[1] <= end_offset)
    cache = ((before[-1][0], end_offset),) if before else ()
    cache += tuple(c for c in log.epoch_cache if c[1] > end_offset)
    return evolve(log, entries=log.entries[end_offset - log.start_offset:], epoch_cache=cache, start_offset=end_offset,
                  snapshots=tuple(s for s in log.snapshots if s.id >= (end_offset, epoch)))


def validate_offset_and_epoch(log: RaftLog, fetch_offset: int, last_fetched_epoch: int) -> Optional[tuple[int, int]]:
    """``validateOffsetAndEpoch`` once :func:`fetch_snapshot_id` found no snapshot to fetch: None if valid, else the
    DivergingEpoch (epoch, end offset).

    Fetch offset 0 is always valid in a log that starts at 0 (§3.7).
    """
    if fetch_offset == 0 and log.start_offset == 0:
        return None
    end_epoch, end_offset = end_offset_for_epoch(log, last_fetched_epoch)
    if raft_rules.is_diverging(fetch_offset, last_fetched_epoch, end_epoch, end_offset):
        return (end_epoch, end_offset)
    return None


def truncate_to_end_offset(log: RaftLog, diverging_epoch: int, diverging_end_offset: int) -> tuple[RaftLog, int]:
    """``truncateToEndOffset`` after a DivergingEpoch answer: the new log and the truncation offset (§3.7)."""
    local_epoch, local_end = end_offset_for_epoch(log, diverging_epoch)
    offset = raft_rules.truncation_offset(diverging_epoch, diverging_end_offset, local_epoch, local_end,
                                          log.end_offset)
    return truncate_to(log, offset), offset
