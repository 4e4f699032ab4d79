"""The replicated metadata log as the Raft client sees it: entries with their epochs plus the epoch cache.

rules §3.7 (``RaftLog``, ``internals/KafkaRaftLog.java``, ``LeaderEpochFileCache``). The log
starts at offset 0 and has no snapshots here. ``flushed_end_offset`` is what survives a crash.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Optional

from kraftspec.reference import raft_rules
from kraftspec.reference.frozen import evolve


@dataclass(frozen=True, slots=True, kw_only=True)
class LogEntry:
    """One record: the epoch of the batch that wrote it and its value (data, or a control message)."""

    epoch: int
    record: Any = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RaftLog:
    """Entries at offsets 0..LEO-1, the epoch cache ((epoch, start offset) ascending) and the flushed end."""

    entries: tuple[LogEntry, ...] = ()
    epoch_cache: tuple[tuple[int, int], ...] = ()
    flushed_end_offset: int = 0
    last_fetched_epoch: int = 0

    @property
    def end_offset(self) -> int:
        """The log end offset (LEO): the offset of the next record."""
        return len(self.entries)


def log_of_epochs(epochs: Iterable[int], flushed: bool = True) -> RaftLog:
    """A log whose entry at offset i has epoch ``epochs[i]`` (values are the offsets); flushed by default."""
    log = append_as_follower(RaftLog(), tuple(LogEntry(epoch=e, record=i) for i, e in enumerate(epochs)))
    return flush(log) if flushed else log


def _cache_with(cache: tuple[tuple[int, int], ...], entries: tuple[LogEntry, ...],
                start: int) -> tuple[tuple[int, int], ...]:
    """``LeaderEpochFileCache.assign``: a new (epoch, start offset) only when the epoch grows."""
    latest = cache[-1][0] if cache else -1
    added = []
    for i, entry in enumerate(entries):
        if entry.epoch > latest:
            added.append((entry.epoch, start + i))
            latest = entry.epoch
        elif entry.epoch < latest:
            raise ValueError(f"epoch {entry.epoch} at offset {start + i} is below the latest epoch {latest}")
    return cache + tuple(added) if added else cache


def append_as_leader(log: RaftLog, records: tuple[Any, ...], epoch: int) -> RaftLog:
    """``appendAsLeader``: records get the leader's epoch at LEO onwards (not yet flushed)."""
    entries = tuple(LogEntry(epoch=epoch, record=r) for r in records)
    return evolve(log, entries=log.entries + entries, epoch_cache=_cache_with(log.epoch_cache, entries, log.end_offset),
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
    return evolve(log, entries=log.entries + entries, epoch_cache=_cache_with(log.epoch_cache, entries, log.end_offset),
                  last_fetched_epoch=raft_rules.last_fetched_epoch_after_append(log.last_fetched_epoch, last,
                                                                                len(entries)))


def flush(log: RaftLog) -> RaftLog:
    """``flush``: every entry is durable."""
    if log.flushed_end_offset == log.end_offset:
        return log
    return evolve(log, flushed_end_offset=log.end_offset)


def recover(log: RaftLog) -> RaftLog:
    """What a restart finds on disk: unflushed entries are lost, and so is an epoch that starts at the recovered end
    (no record of it survived: ``MockLog.reopen``, ``LeaderEpochFileCache.truncateFromEnd`` on log recovery)."""
    log = truncate_to(log, log.flushed_end_offset)
    if log.epoch_cache and log.epoch_cache[-1][1] >= log.end_offset:
        cache = tuple(c for c in log.epoch_cache if c[1] < log.end_offset)
        return evolve(log, epoch_cache=cache, last_fetched_epoch=cache[-1][0] if cache else 0)
    return log


def truncate_to(log: RaftLog, offset: int) -> RaftLog:
    """``truncateTo``: drop entries at offsets >= ``offset`` and the cache entries starting there."""
    if offset >= log.end_offset:
        return log
    cache = tuple(c for c in log.epoch_cache if c[1] < offset)
    return RaftLog(entries=log.entries[:offset], epoch_cache=cache,
                   flushed_end_offset=min(log.flushed_end_offset, offset),
                   last_fetched_epoch=cache[-1][0] if cache else 0)


def end_offset_for_epoch(log: RaftLog, epoch: int) -> tuple[int, int]:
    """``endOffsetForEpoch`` as (epoch, end offset) (§3.7): see ``raft_rules.end_offset_for_epoch``."""
    return raft_rules.end_offset_for_epoch(log.epoch_cache, log.end_offset, epoch)


def validate_offset_and_epoch(log: RaftLog, fetch_offset: int, last_fetched_epoch: int) -> Optional[tuple[int, int]]:
    """``validateOffsetAndEpoch`` without snapshots: None if valid, else the DivergingEpoch (epoch, end offset).

    Fetch offset 0 from an empty follower is always valid (the log starts at 0) (§3.7).
    """
    if fetch_offset == 0:
        return None
    end_epoch, end_offset = end_offset_for_epoch(log, last_fetched_epoch)
    if raft_rules.is_diverging(fetch_offset, last_fetched_epoch, end_epoch, end_offset):
        return (end_epoch, end_offset)
    return None


def truncate_to_end_offset(log: RaftLog, diverging_epoch: int, diverging_end_offset: int) -> tuple[RaftLog, int]:
    """``truncateToEndOffset`` after a DivergingEpoch answer: the new log and the truncation offset (§3.7)."""
    local_epoch, local_end = raft_rules.end_offset_for_epoch(log.epoch_cache, log.end_offset, diverging_epoch)
    offset = raft_rules.truncation_offset(diverging_epoch, diverging_end_offset, local_epoch, local_end,
                                          log.end_offset)
    return truncate_to(log, offset), offset
