"""The voter set and kraft.version in force at each offset of the log, rules §3.14.

Kafka keeps, between the latest snapshot and the log end, every VotersRecord and KRaftVersionRecord by the offset it
was written at: ``raft/.../internals/TreeMapLogHistory.java``, ``VoterSetHistory.java`` and
``KRaftControlRecordStateMachine.java``. The value at an offset is the entry at or before it; a snapshot's records
count at its last contained offset (``-1`` for the bootstrap snapshot ``0-0.checkpoint``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from kraftspec.reference.frozen import evolve
from kraftspec.reference.raft_voters import (
    EMPTY_VOTER_SET,
    KRAFT_VERSION_0,
    KRaftVersionRecord,
    VoterSet,
    VotersRecord,
    from_voters_record,
)

STARTING_NEXT_OFFSET = -1


@dataclass(frozen=True, slots=True, kw_only=True)
class LogHistory:
    """``TreeMapLogHistory``: ``(offset, value)`` entries in ascending offset order."""

    entries: tuple[tuple[int, Any], ...] = ()


EMPTY_HISTORY = LogHistory()


def add_at(history: LogHistory, offset: int, value: Any) -> LogHistory:
    """``TreeMapLogHistory.addAt``: offsets from -1 on, each above the last (§3.14); raises ``ValueError`` otherwise.

    ``VoterSetHistory.addAt`` only logs a new voter set without an overlapping majority; it does not refuse it.
    """
    # -1 is legal: the bootstrap checkpoint's records are loaded at -1.
    if offset < -1:
        raise ValueError(f"Next offset {offset} must be greater than or equal to -1")
    # Values arrive in log order, so a later value never has a lower offset.
    if history.entries and offset <= history.entries[-1][0]:
        raise ValueError(f"Next offset {offset} must be greater than the last offset {history.entries[-1][0]}")
    return LogHistory(entries=history.entries + ((offset, value),))


def value_at_or_before(history: LogHistory, offset: int) -> Optional[Any]:
    """``TreeMapLogHistory.valueAtOrBefore``: the value of the last entry at or before ``offset`` (§3.14)."""
    found = None
    for at, value in history.entries:
        if at > offset:
            break
        found = value
    return found


def last_entry(history: LogHistory) -> Optional[tuple[int, Any]]:
    """``TreeMapLogHistory.lastEntry``: the latest ``(offset, value)``, None when empty (§3.14)."""
    return history.entries[-1] if history.entries else None


def truncate_new_entries(history: LogHistory, end_offset: int) -> LogHistory:
    """``TreeMapLogHistory.truncateNewEntries``: drops every entry at or after ``end_offset`` (log truncation, §3.14)."""
    return LogHistory(entries=tuple(e for e in history.entries if e[0] < end_offset))


def truncate_old_entries(history: LogHistory, start_offset: int) -> LogHistory:
    """``TreeMapLogHistory.truncateOldEntries``: drops entries at or before ``start_offset`` except the last of them,
    so the value at the new log start stays known (§3.14)."""
    older = [e for e in history.entries if e[0] <= start_offset]
    return LogHistory(entries=tuple(older[-1:]) + tuple(e for e in history.entries if e[0] > start_offset))


@dataclass(frozen=True, slots=True, kw_only=True)
class ControlRecordState:
    """``KRaftControlRecordStateMachine``: the static voters (``controller.quorum.voters``, empty when bootstrapped
    dynamically), both histories and the next log offset to read (-1 before anything was read)."""

    static_voter_set: VoterSet = EMPTY_VOTER_SET
    voter_set_history: LogHistory = EMPTY_HISTORY
    kraft_version_history: LogHistory = EMPTY_HISTORY
    next_offset: int = STARTING_NEXT_OFFSET


def last_voter_set(state: ControlRecordState) -> VoterSet:
    """``VoterSetHistory.lastValue``: the latest VotersRecord's set, else the static voters (§3.14)."""
    entry = last_entry(state.voter_set_history)
    return state.static_voter_set if entry is None else entry[1]


def last_voter_set_entry(state: ControlRecordState) -> Optional[tuple[int, VoterSet]]:
    """``KRaftControlRecordStateMachine.lastVoterSetEntry``: the latest VotersRecord's offset and set (§3.14)."""
    return last_entry(state.voter_set_history)


def last_kraft_version(state: ControlRecordState) -> int:
    """``KRaftControlRecordStateMachine.lastKraftVersion``: the latest KRaftVersionRecord's level, else 0 (§3.14)."""
    entry = last_entry(state.kraft_version_history)
    return KRAFT_VERSION_0 if entry is None else entry[1]


def _check_offset_is_valid(state: ControlRecordState, offset: int) -> None:
    # Nothing is known yet at or after the next offset to read.
    if offset >= state.next_offset:
        raise ValueError(f"Attempting the read a value at an offset ({offset}) which is greater than or equal to the "
                         f"largest known offset ({state.next_offset - 1})")


def voter_set_at_offset(state: ControlRecordState, offset: int) -> Optional[VoterSet]:
    """``KRaftControlRecordStateMachine.voterSetAtOffset``: the voter set from the VotersRecord at or before
    ``offset`` (never the static voters); ``ValueError`` for an offset not read yet (§3.14)."""
    _check_offset_is_valid(state, offset)
    return value_at_or_before(state.voter_set_history, offset)


def kraft_version_at_offset(state: ControlRecordState, offset: int) -> int:
    """``KRaftControlRecordStateMachine.kraftVersionAtOffset``: the finalized kraft.version at ``offset``, else 0
    (§3.14); ``ValueError`` for an offset not read yet."""
    _check_offset_is_valid(state, offset)
    found = value_at_or_before(state.kraft_version_history, offset)
    return KRAFT_VERSION_0 if found is None else found


def handle_control_record(state: ControlRecordState, offset: int, record: Any) -> ControlRecordState:
    """``KRaftControlRecordStateMachine.handleBatch`` for one record: a VotersRecord or KRaftVersionRecord is added at
    ``offset``; every other record is skipped (§3.14)."""
    if isinstance(record, VotersRecord):
        return evolve(state, voter_set_history=add_at(state.voter_set_history, offset, from_voters_record(record)))
    if isinstance(record, KRaftVersionRecord):
        return evolve(state, kraft_version_history=add_at(state.kraft_version_history, offset, record.kraft_version))
    return state


def is_control_record(record: Any) -> bool:
    """``KRaftControlRecordStateMachine.handleBatch``: a KRaftVersionRecord or VotersRecord, the records it reads; every
    node reads them, one with static voters too (an upgrade to kraft.version 1 writes them), §3.14."""
    return type(record) in (KRaftVersionRecord, VotersRecord)


def read_batch(state: ControlRecordState, base_offset: int, last_offset: int,
               control_records: tuple[Any, ...]) -> ControlRecordState:
    """``KRaftControlRecordStateMachine.maybeLoadLog`` for one batch: its control records at ``base_offset`` on, then
    the next offset is past the batch (§3.14). A data batch has no control records."""
    for delta, record in enumerate(control_records):
        state = handle_control_record(state, base_offset + delta, record)
    return evolve(state, next_offset=last_offset + 1)


def snapshot_load_needed(next_offset: int, log_start_offset: int) -> bool:
    """``KRaftControlRecordStateMachine.maybeLoadSnapshot``: the latest snapshot's control records are (re)loaded when
    nothing was read yet or the log start passed the next offset to read, as when a snapshot fetched from the leader
    replaced the log (``handleFetchSnapshotResponse`` then ``updateState``), §3.14."""
    return next_offset == STARTING_NEXT_OFFSET or next_offset < log_start_offset


def load_snapshot(state: ControlRecordState, last_contained_log_offset: int,
                  control_records: tuple[Any, ...]) -> ControlRecordState:
    """``KRaftControlRecordStateMachine.maybeLoadSnapshot``: both histories cleared, the snapshot's records added at
    its last contained offset (its end offset − 1), reading resumes after it (§3.14)."""
    state = evolve(state, voter_set_history=EMPTY_HISTORY, kraft_version_history=EMPTY_HISTORY)
    for record in control_records:
        state = handle_control_record(state, last_contained_log_offset, record)
    return evolve(state, next_offset=last_contained_log_offset + 1)


def truncate_control_records(state: ControlRecordState, end_offset: int) -> ControlRecordState:
    """``KRaftControlRecordStateMachine.truncateNewEntries``: the log was truncated to ``end_offset``, so later voter
    sets and kraft.versions are forgotten (§3.14); the next offset to read is Kafka's, left as it was."""
    return evolve(state, voter_set_history=truncate_new_entries(state.voter_set_history, end_offset),
                  kraft_version_history=truncate_new_entries(state.kraft_version_history, end_offset))


def trim_control_records(state: ControlRecordState, start_offset: int) -> ControlRecordState:
    """``KRaftControlRecordStateMachine.truncateOldEntries``: the log start moved to ``start_offset`` (a snapshot),
    entries before it go except the one in force there (§3.14)."""
    return evolve(state, voter_set_history=truncate_old_entries(state.voter_set_history, start_offset),
                  kraft_version_history=truncate_old_entries(state.kraft_version_history, start_offset))
