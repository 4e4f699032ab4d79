"""Deliberately wrong variants of the KRaft quorum rules and the layers expected to catch each one.

Each replacement keeps the signature of its target in ``kraftspec.reference``; ``tests/test_raft_mutants.py``
applies each one and checks that every layer in ``caught_by`` fails.
"""

from __future__ import annotations

from kraftspec.mutants import Mutant
from kraftspec.reference import raft_rules
from kraftspec.reference.frozen import FrozenMap
from kraftspec.reference.raft_state import (
    ElectionState,
    Leader,
    QuorumConfig,
    QuorumState,
    ReplicaState,
    initial_state,
)

_REFERENCE = {"initial_state": initial_state}  # held in a dict so that applying the mutant does not swap it


def _up_to_date_by_epoch_only(last_epoch: int, end_offset: int, local_last_epoch: int, local_end_offset: int) -> bool:
    """Compares only the last epochs: a shorter log in the same epoch counts as up to date."""
    return last_epoch >= local_last_epoch


def _hw_at_epoch_start(current: int, voter_end_offsets: tuple[int, ...], epoch_start_offset: int) -> int:
    """Adopts a majority offset equal to the epoch start offset (">=" for ">")."""
    candidate = raft_rules.high_watermark_candidate(voter_end_offsets)
    return candidate if candidate >= epoch_start_offset and candidate > current else current


def _hw_from_wrong_voter(current: int, voter_end_offsets: tuple[int, ...], epoch_start_offset: int) -> int:
    """Takes the end offset one place too far up the sorted list (a minority's offset)."""
    ordered = sorted(voter_end_offsets, reverse=True)
    candidate = ordered[max(0, len(ordered) // 2 - 1)]
    return candidate if candidate > epoch_start_offset and candidate > current else current


def _anyone_starts_election(is_voter: bool) -> bool:
    """Lets observers campaign too."""
    return True


def _last_fetched_epoch_reset(current: int, appended_last_epoch: int, appended_count: int) -> int:
    """Forgets the last fetched epoch when a fetch response brings no records."""
    return appended_last_epoch if appended_count else 0


def _restart_as_leader(stored: ElectionState, local_id: int, voters: frozenset[int], log_end_epoch: int,
                       voter_endpoints: FrozenMap[int, tuple[str, ...]], now: int, config: QuorumConfig,
                       jitter: int) -> QuorumState:
    """Resumes leadership of the stored epoch after a restart instead of resigning."""
    if stored.leader_id == local_id and stored.epoch >= log_end_epoch:
        states = FrozenMap({v: ReplicaState(acknowledged=(v == local_id)) for v in voters})
        return Leader(epoch=stored.epoch, local_id=local_id, epoch_start_offset=0, voter_states=states,
                      granting_voters=frozenset((local_id,)),
                      check_quorum_deadline=now + config.check_quorum_timeout_ms, begin_quorum_deadline=now)
    return _REFERENCE["initial_state"](stored, local_id, voters, log_end_epoch, voter_endpoints, now, config,
                                        jitter)


def _check_quorum_always_counts_leader(voter_count: int, fetched_voters: int, leader_is_voter: bool) -> bool:
    """Counts the leader toward the check-quorum majority even when it is not a voter."""
    return fetched_voters >= raft_rules.majority(voter_count) - 1


def _shutdown_ignores_remote_leader(is_voter: bool, voter_count: int, has_remote_leader: bool) -> bool:
    """Lets only an observer or the only voter finish a graceful shutdown: a voter that follows a leader waits
    until its shutdown times out."""
    return not is_voter or voter_count == 1


def _leader_visible_before_catch_up(committed_end: int, epoch_start_offset: int) -> bool:
    """Tells the listener of the local leadership at once, before the committed records up to the epoch start."""
    return True


def _backoff_ignored(now: int, failed_at: int, retry_backoff_ms: int) -> bool:
    """Never backs off: a connection whose request failed is ready again at once."""
    return False


def _bootstrap_first_server(servers: tuple[int, ...], start: int) -> int:
    """Ignores the drawn start index: every Unattached node fetches the first bootstrap server."""
    return servers[0]


MUTANTS: list[Mutant] = [
    Mutant("raft_vote_shorter_log_same_epoch", "raft",
           "grants a vote to a candidate with a shorter log in the same last epoch",
           "kraftspec.reference.raft_rules:is_log_up_to_date", _up_to_date_by_epoch_only,
           ("scenario", "model", "crosshair")),
    Mutant("raft_hw_at_epoch_start", "raft",
           "advances the high watermark at (not past) the epoch start offset",
           "kraftspec.reference.raft_rules:next_high_watermark", _hw_at_epoch_start,
           ("scenario", "crosshair", "agree")),
    Mutant("raft_hw_from_minority", "raft",
           "takes the high watermark from the voter at index floor(n/2) - 1 (a minority)",
           "kraftspec.reference.raft_rules:next_high_watermark", _hw_from_wrong_voter,
           ("scenario", "model", "crosshair")),
    Mutant("raft_observer_starts_election", "raft",
           "lets an observer start an election",
           "kraftspec.reference.raft_rules:can_start_election", _anyone_starts_election,
           ("scenario", "model", "agree")),
    Mutant("raft_reset_last_fetched_epoch", "raft",
           "resets the last fetched epoch after an empty fetch response",
           "kraftspec.reference.raft_rules:last_fetched_epoch_after_append", _last_fetched_epoch_reset,
           ("scenario", "model", "agree")),
    Mutant("raft_restart_as_leader", "raft",
           "restarts as leader in the same epoch instead of Resigned",
           "kraftspec.reference.raft_state:initial_state", _restart_as_leader,
           ("scenario", "model", "agree")),
    Mutant("raft_check_quorum_non_voter_leader", "raft",
           "counts the leader toward the check-quorum majority when the leader is not a voter",
           "kraftspec.reference.raft_rules:check_quorum_reached", _check_quorum_always_counts_leader,
           ("scenario", "crosshair")),
    Mutant("raft_bootstrap_first_server", "raft",
           "fetches the first bootstrap server whatever the drawn start index",
           "kraftspec.reference.raft_rules:bootstrap_server", _bootstrap_first_server,
           ("scenario", "crosshair", "agree")),
    Mutant("raft_shutdown_ignores_remote_leader", "raft",
           "keeps a voter that knows a remote leader shutting down until its timer expires",
           "kraftspec.reference.raft_rules:shutdown_can_complete", _shutdown_ignores_remote_leader,
           ("scenario", "crosshair", "agree"), agree_component="shutdown"),
    Mutant("raft_leader_visible_before_catch_up", "raft",
           "tells the listener of its own leadership before it has the committed records up to the epoch start",
           "kraftspec.reference.raft_rules:listener_caught_up", _leader_visible_before_catch_up,
           ("scenario", "model", "crosshair", "agree"), agree_component="listener"),
    Mutant("raft_retry_backoff_ignored", "raft",
           "sends the next request to a node whose last request failed without waiting quorum.retry.backoff.ms",
           "kraftspec.reference.raft_rules:backing_off", _backoff_ignored,
           ("scenario", "crosshair", "agree"), agree_component="requests"),
]
