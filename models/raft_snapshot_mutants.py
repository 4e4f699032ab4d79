"""Deliberately wrong variants of the KRaft snapshot rules (KIP-630) and the layers expected to catch each one.

Each replacement keeps the signature of its target in ``kraftspec.reference``; ``tests/test_raft_snapshot_mutants.py``
applies each one and checks that every layer in ``caught_by`` fails: ``scenario`` (the transcribed
``KafkaRaftClientSnapshotTest`` checks of ``test_raft_snapshot_scenarios.py``), ``model`` (the quorum model with
snapshots, ``kraftspec.models.raft.RaftSnapshotModel``, fails), ``replay`` (traces of
``kraftspec generate sim --component raft --snapshots`` recorded under the mutant are flagged by the reference) and
``crosshair`` (a contract of ``kraftspec.proofs.raft`` is refuted) and ``kafka`` (those traces run on Kafka 4.3.1's
own ``KafkaRaftClient`` disagree with the mutant).
"""

from __future__ import annotations

from kraftspec.mutants import Mutant


def _fetch_below_log_start_from_log(fetch_offset: int, last_fetched_epoch: int, log_start_offset: int,
                                    earliest_snapshot_epoch: int) -> bool:
    """Sends the snapshot only for a fetch from an epoch older than the snapshot's: a fetch below the log start (or at
    it in another epoch) is served from the log, which no longer holds those records."""
    return last_fetched_epoch < earliest_snapshot_epoch


MUTANTS: list[Mutant] = [
    Mutant("raft_snapshot_fetch_below_log_start", "raft",
           "serves a fetch below the leader's log start from its log instead of answering with its snapshot id",
           "kraftspec.reference.raft_rules:fetch_needs_snapshot", _fetch_below_log_start_from_log,
           ("scenario", "model", "replay", "crosshair", "kafka")),
]
