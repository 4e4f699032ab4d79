"""Deliberately wrong variants of the KRaft snapshot rules (KIP-630) and of the record batches that fetches and
snapshots keep whole, and the layers expected to catch each one.

Each replacement keeps the signature of its target in ``kraftspec.reference``; ``tests/test_raft_snapshot_mutants.py``
applies each one and checks that every layer in ``caught_by`` fails: ``scenario`` (the transcribed
``KafkaRaftClientSnapshotTest`` checks of ``test_raft_snapshot_scenarios.py`` and the batch scenarios of
``test_raft_batches.py``), ``model`` (the quorum model with
snapshots, ``kraftspec.models.raft.RaftSnapshotModel``, fails), ``replay`` (traces of
``kraftspec generate sim --component raft --snapshots`` recorded under the mutant are flagged by the reference) and
``crosshair`` (a contract of ``kraftspec.proofs.raft`` is refuted) and ``kafka`` (those traces, or for a batch mutant
a hand-built trace of ``test_kafka_raft_batches.py``, run on Kafka 4.3.1's own ``KafkaRaftClient`` disagree with the
mutant).
"""

from __future__ import annotations

from kraftspec.mutants import Mutant
from kraftspec.reference.raft_log import LogEntry, RaftLog


def _fetch_below_log_start_from_log(fetch_offset: int, last_fetched_epoch: int, log_start_offset: int,
                                    earliest_snapshot_epoch: int) -> bool:
    """Sends the snapshot only for a fetch from an epoch older than the snapshot's: a fetch below the log start (or at
    it in another epoch) is served from the log, which no longer holds those records."""
    return last_fetched_epoch < earliest_snapshot_epoch


def _read_cutting_batches(log: RaftLog, offset: int, count: int) -> tuple[LogEntry, ...]:
    """Reads ``count`` records from ``offset``, cutting a batch where the count ends (and never more than asked)."""
    first = offset - log.start_offset
    return log.entries[first:first + count]


def _every_offset_a_batch_start(log: RaftLog, offset: int) -> int:
    """Takes every offset for the start of its batch: a snapshot may end inside a batch."""
    return offset


MUTANTS: list[Mutant] = [
    Mutant("raft_snapshot_fetch_below_log_start", "raft",
           "serves a fetch below the leader's log start from its log instead of answering with its snapshot id",
           "kraftspec.reference.raft_rules:fetch_needs_snapshot", _fetch_below_log_start_from_log,
           ("scenario", "model", "replay", "crosshair", "kafka")),
    Mutant("raft_fetch_cuts_batches", "raft",
           "answers a Fetch with at most fetch_max_records records, cutting a batch where the count ends",
           "kraftspec.reference.raft_log:entries_from", _read_cutting_batches, ("scenario", "model", "kafka")),
    Mutant("raft_snapshot_inside_a_batch", "raft",
           "creates a snapshot whose end offset lies inside a batch",
           "kraftspec.reference.raft_log:batch_base_offset", _every_offset_a_batch_start, ("scenario", "model", "kafka")),
]
