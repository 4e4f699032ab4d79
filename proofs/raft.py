"""CrossHair contracts (PEP316) on the KRaft quorum rules in ``kraftspec.reference.raft_rules`` (and
``raft_voter_history``).

Each contract carries the name of the rule it checks and states a property, not the implementation.
Run: ``python -m crosshair check --analysis_kind=PEP316 --per_condition_timeout=5 kraftspec.proofs.raft``.
``KRAFTSPEC_MUTANT=name`` applies a deliberately wrong variant first (see ``kraftspec.models.raft_mutants``).
"""

from __future__ import annotations

from kraftspec import mutants
from kraftspec.reference import raft_rules, raft_voter_history

mutants.apply_from_environment()  # for ``python -m crosshair check`` run under KRAFTSPEC_MUTANT

ROLES = ("Unattached", "Prospective", "Candidate", "Leader", "Follower", "Resigned")


def is_log_up_to_date(last_epoch: int, end_offset: int, local_last_epoch: int, local_end_offset: int) -> bool:
    """A candidate's log is up to date iff (last epoch, end offset) >= the local pair, epoch first (§3.4).

    pre: last_epoch >= 0 and local_last_epoch >= 0 and end_offset >= 0 and local_end_offset >= 0
    post: __return__ == ((last_epoch, end_offset) >= (local_last_epoch, local_end_offset))
    post: implies(last_epoch == local_last_epoch and end_offset < local_end_offset, not __return__)
    post: implies(last_epoch > local_last_epoch, __return__)
    """
    return raft_rules.is_log_up_to_date(last_epoch, end_offset, local_last_epoch, local_end_offset)


def implies(a: bool, b: bool) -> bool:
    """Logical implication, for the contracts."""
    return (not a) or b


def grant_vote(role: str, pre_vote: bool, log_up_to_date: bool, has_voted: bool, vote_matches: bool,
               leader_known: bool, fetched_from_leader: bool) -> bool:
    """``canGrantVote`` (§3.4 table): leaders never grant; standard votes only from Unattached/Prospective;
    a stored vote decides a standard vote; otherwise a vote needs an up-to-date log.

    pre: role in ROLES
    pre: implies(vote_matches, has_voted)
    post: implies(role == "Leader", not __return__)
    post: implies(not pre_vote and role not in ("Unattached", "Prospective"), not __return__)
    post: implies(not pre_vote and has_voted and role in ("Unattached", "Prospective"), __return__ == vote_matches)
    post: implies(not log_up_to_date and not (has_voted and not pre_vote), not __return__)
    post: implies(role == "Follower" and fetched_from_leader, not __return__)
    post: implies(not pre_vote and not has_voted and leader_known, not __return__)
    """
    return raft_rules.grant_vote(role, pre_vote, log_up_to_date, has_voted, vote_matches, leader_known,
                                 fetched_from_leader)


def next_high_watermark(current: int, voter_end_offsets: tuple[int, int, int], epoch_start_offset: int) -> int:
    """The leader's HW never decreases, moves only past the epoch start offset, and never exceeds what a
    majority of voters hold (§3.6, B.9); checked for three voters, the model's quorum.

    pre: all(o >= -1 for o in voter_end_offsets)
    pre: current >= -1 and epoch_start_offset >= 0
    pre: current == -1 or current > epoch_start_offset
    post: __return__ >= current
    post: __return__ == current or __return__ > epoch_start_offset
    post: __return__ == current or sum(1 for o in voter_end_offsets if o >= __return__) >= 2
    """
    return raft_rules.next_high_watermark(current, voter_end_offsets, epoch_start_offset)


def check_quorum_reached(voter_count: int, fetched_voters: int, leader_is_voter: bool) -> bool:
    """Check quorum (§3.6): the fetching voters, plus the leader only if it is a voter, form a majority.

    pre: 1 <= voter_count <= 9
    pre: 0 <= fetched_voters <= voter_count - (1 if leader_is_voter else 0)
    post: __return__ == (fetched_voters + (1 if leader_is_voter else 0) >= voter_count // 2 + 1)
    """
    return raft_rules.check_quorum_reached(voter_count, fetched_voters, leader_is_voter)


def _cache(epochs: tuple[int, ...]) -> tuple[tuple[int, int], ...]:
    cache: list[tuple[int, int]] = []
    for offset, epoch in enumerate(epochs):
        if not cache or epoch > cache[-1][0]:
            cache.append((epoch, offset))
    return tuple(cache)


def is_diverging(epochs: tuple[int, ...], fetch_offset: int, last_fetched_epoch: int) -> bool:
    """Divergence on the leader (§3.7): a fetch at (offset, epoch) is accepted only if the leader's log has
    that epoch reaching the fetch offset; otherwise the DivergingEpoch answer is never ahead of the fetch.

    pre: len(epochs) <= 4 and all(1 <= e <= 4 for e in epochs)
    pre: all(epochs[i] <= epochs[i + 1] for i in range(len(epochs) - 1))
    pre: 1 <= fetch_offset <= 6 and 1 <= last_fetched_epoch <= 4
    post: implies(not __return__, last_fetched_epoch in epochs and fetch_offset <= len(epochs))
    post: implies(not __return__, max(i for i, e in enumerate(epochs) if e == last_fetched_epoch) >= fetch_offset - 1)
    post: implies(__return__, _diverging_end(epochs, last_fetched_epoch) <= len(epochs))
    """
    end_epoch, end = raft_rules.end_offset_for_epoch(_cache(epochs), len(epochs), last_fetched_epoch)
    return raft_rules.is_diverging(fetch_offset, last_fetched_epoch, end_epoch, end)


def _diverging_end(epochs: tuple[int, ...], epoch: int) -> int:
    return raft_rules.end_offset_for_epoch(_cache(epochs), len(epochs), epoch)[1]


def truncation_offset(diverging_epoch: int, diverging_end_offset: int, local_epoch: int, local_end: int,
                      log_end_offset: int) -> int:
    """Truncation after a DivergingEpoch (§3.7) never grows the log and never keeps entries past the leader's
    end offset of a shared epoch.

    pre: 0 <= local_end <= log_end_offset and diverging_end_offset >= 0 and diverging_epoch >= 0
    pre: local_epoch <= diverging_epoch
    post: 0 <= __return__ <= log_end_offset
    post: implies(local_epoch == diverging_epoch or diverging_epoch == 0, __return__ <= diverging_end_offset)
    """
    return raft_rules.truncation_offset(diverging_epoch, diverging_end_offset, local_epoch, local_end,
                                        log_end_offset)


def bootstrap_server(servers: tuple[int, int, int], start: int) -> int:
    """``findReadyBootstrapServer`` with every server ready (request back-off not modelled): one of the servers, and
    successive draws walk the list in order, so every server is reached from some draw (KAFKA-17030).

    pre: len(set(servers)) == 3 and start >= 0
    post: __return__ in servers
    post: raft_rules.bootstrap_server(servers, start + 1) == servers[(servers.index(__return__) + 1) % 3]
    """
    return raft_rules.bootstrap_server(servers, start)


def shutdown_can_complete(is_voter: bool, voter_count: int, has_remote_leader: bool) -> bool:
    """``maybeCompleteShutdown`` (§3.13): a node that need not hand leadership over may leave: an observer, the only
    voter, or a voter that knows another node leads; a voter of several without a remote leader waits.

    pre: voter_count >= 1
    post: implies(not is_voter or has_remote_leader, __return__)
    post: implies(is_voter and voter_count == 1, __return__)
    post: implies(is_voter and voter_count > 1 and not has_remote_leader, not __return__)
    """
    return raft_rules.shutdown_can_complete(is_voter, voter_count, has_remote_leader)


def backing_off(now: int, failed_at: int, retry_backoff_ms: int) -> bool:
    """``ConnectionState.isBackingOff`` (§3.13): a connection whose request failed waits exactly the back-off, from
    the failure on; the wait never grows as time passes.

    pre: retry_backoff_ms >= 0 and now >= failed_at >= 0
    post: __return__ == (now < failed_at + retry_backoff_ms)
    post: implies(not __return__, not raft_rules.backing_off(now + 1, failed_at, retry_backoff_ms))
    """
    return raft_rules.backing_off(now, failed_at, retry_backoff_ms)


def request_in_flight(now: int, sent_at: int, request_timeout_ms: int) -> bool:
    """``ConnectionState.isInflight`` (§3.13): a request is awaited for exactly the request timeout from its send.

    pre: request_timeout_ms >= 0 and now >= sent_at >= 0
    post: __return__ == (now < sent_at + request_timeout_ms)
    """
    return raft_rules.request_in_flight(now, sent_at, request_timeout_ms)


def should_fire_leader_change(epoch: int, leader_id: int, fired_epoch: int, fired_leader_id: int) -> bool:
    """``shouldFireLeaderChange`` (§3.12): the listener is told each later epoch, and a leader newly known in the same
    epoch; never the same (leader, epoch) twice, nor the loss of a known leader (epochs never go back, so Kafka does
    not compare them then).

    pre: leader_id >= -1 and fired_leader_id >= -1 and epoch >= fired_epoch
    post: implies((epoch, leader_id) == (fired_epoch, fired_leader_id), not __return__)
    post: implies(epoch > fired_epoch, __return__)
    post: implies(epoch == fired_epoch and leader_id == -1, not __return__)
    post: implies(epoch == fired_epoch and fired_leader_id != -1, not __return__)
    """
    return raft_rules.should_fire_leader_change(epoch, leader_id, fired_epoch, fired_leader_id)


def listener_caught_up(committed_end: int, epoch_start_offset: int) -> bool:
    """``maybeFireLeaderChange(leaderAndEpoch, epochStartOffset)`` (§3.12): the local leader becomes visible only
    after the record at its epoch start offset (its LeaderChange) has been handed to the listener.

    pre: committed_end >= 0 and epoch_start_offset >= 0
    post: __return__ == (committed_end >= epoch_start_offset + 1)
    """
    return raft_rules.listener_caught_up(committed_end, epoch_start_offset)



def fetch_needs_snapshot(fetch_offset: int, last_fetched_epoch: int, log_start_offset: int,
                         earliest_snapshot_epoch: int) -> bool:
    """``validateOffsetAndEpoch`` (KIP-630): a fetch from before the log start can never be served from the log, so it
    is sent the snapshot; a fetch past the log start from an epoch no older than the snapshot's is left to the log.

    pre: fetch_offset >= 0 and log_start_offset >= 0 and last_fetched_epoch >= 0 and earliest_snapshot_epoch >= 0
    post: implies(fetch_offset < log_start_offset, __return__)
    post: implies(last_fetched_epoch < earliest_snapshot_epoch, __return__)
    post: implies(fetch_offset > log_start_offset and last_fetched_epoch >= earliest_snapshot_epoch, not __return__)
    """
    return raft_rules.fetch_needs_snapshot(fetch_offset, last_fetched_epoch, log_start_offset, earliest_snapshot_epoch)


def snapshot_chunk_size(position: int, snapshot_size: int, max_bytes: int) -> int:
    """``handleFetchSnapshotRequest`` (KIP-630): a chunk is never larger than asked nor past the snapshot's end, and a
    position inside the snapshot gets at least one byte.

    pre: 0 <= position < snapshot_size and max_bytes >= 1
    post: 1 <= __return__ <= max_bytes
    post: position + __return__ <= snapshot_size
    post: __return__ == max_bytes or position + __return__ == snapshot_size
    """
    return raft_rules.snapshot_chunk_size(position, snapshot_size, max_bytes)


def should_send_add_or_remove_voter_request(reconfig_supported: bool, can_become_voter: bool, auto_join: bool,
                                            update_period_expired: bool) -> bool:
    """``shouldSendAddOrRemoveVoterRequest`` (§3.15): an observer asks to join only when all four hold: kraft.version
    1 (voters are static under 0), the controller role, auto-join configured, and the update-voter-set period over.

    post: implies(__return__, reconfig_supported)
    post: implies(__return__, can_become_voter)
    post: implies(__return__, auto_join and update_period_expired)
    post: implies(reconfig_supported and can_become_voter and auto_join and update_period_expired, __return__)
    """
    return raft_rules.should_send_add_or_remove_voter_request(reconfig_supported, can_become_voter, auto_join,
                                                              update_period_expired)


def auto_join_removes_old_voter(local_id_in_voters: bool) -> bool:
    """``pollFollowerAsObserver`` (§3.15): an observer whose id a voter already holds (an old directory) removes it
    first, since an id joins the voters once; an id outside the voter set is added.

    post: implies(local_id_in_voters, __return__)
    post: implies(not local_id_in_voters, not __return__)
    """
    return raft_rules.auto_join_removes_old_voter(local_id_in_voters)


def snapshot_load_needed(next_offset: int, log_start_offset: int) -> bool:
    """``maybeLoadSnapshot`` (§3.14): control records are read from the latest snapshot when nothing was read yet or
    the log start passed the read position, as a snapshot fetched from the leader does; else the log is read on.

    pre: next_offset >= -1 and log_start_offset >= 0
    post: implies(next_offset == -1, __return__)
    post: implies(next_offset < log_start_offset, __return__)
    post: implies(next_offset >= log_start_offset, not __return__)
    """
    return raft_voter_history.snapshot_load_needed(next_offset, log_start_offset)
