"""Raft trace inputs the TLA+ recorders of one node (``listener_tla``, ``shutdown_tla``, ``voters_tla``) build alike:
a message handed to the node, a ``tick``, and the last fetched epoch of a fetcher at an offset of the node's log."""

from __future__ import annotations

from typing import Any

from kraftspec.reference import raft
from kraftspec.traces.format.envelope import Step


def message(action: str, message: Any, **args: Any) -> Step:
    """The input ``action`` handing ``message`` to the node (``args``: the step's other inputs, such as ``now``)."""
    return Step(action, {"message": message, **args})


def tick(now: int) -> Step:
    """A poll of the node at ``now``."""
    return Step("tick", {"now": now})


def epoch_at(node: raft.RaftNode, offset: int) -> int:
    """The epoch of the record before ``offset`` (the last fetched epoch of a fetcher at ``offset``): the snapshot's at
    the log start, 0 at offset 0."""
    log = node.log
    if offset > log.start_offset:
        return log.entries[offset - 1 - log.start_offset].epoch
    # At the log start: the epoch of the snapshot the log starts at (none at 0).
    return next((s.epoch for s in log.snapshots if s.end_offset == offset and offset > 0), 0)
