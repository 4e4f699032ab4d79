"""Small KRaft quorum rules over plain ints, bools and tuples, so that CrossHair can reach them.

rules §3.2 and §3.4–§3.7. The transitions in ``raft.py``, ``raft_state.py``
and ``raft_log.py`` call these through the module name so that a mutant can replace any of them.
Sentinels: ``-1`` means "unknown" for offsets, high watermarks and leader ids.
"""

from __future__ import annotations

from typing import Optional


def majority(voter_count: int) -> int:
    """``EpochElection``: a majority is ``floor(voters/2) + 1`` of the voter set (§3.5)."""
    return voter_count // 2 + 1


def is_log_up_to_date(last_epoch: int, end_offset: int, local_last_epoch: int, local_end_offset: int) -> bool:
    """``isLogUpToDate``: (lastOffsetEpoch, lastOffset) >= (local last epoch, local LEO), epoch first (§3.4 step 7).

    KIP-595 states the same Raft rule; Kafka compares ``OffsetAndEpoch`` by epoch, then offset.
    """
    if last_epoch != local_last_epoch:
        return last_epoch > local_last_epoch
    return end_offset >= local_end_offset


def is_illegal_vote_epoch(pre_vote: bool, last_epoch: int, replica_epoch: int) -> bool:
    """Vote request epochs: a standard vote needs lastOffsetEpoch < replicaEpoch, a pre-vote only <= (§3.4 step 3)."""
    return last_epoch > replica_epoch if pre_vote else last_epoch >= replica_epoch


def voted_key_matches(voted_id: int, voted_directory: Optional[str], candidate_id: int,
                      candidate_directory: Optional[str]) -> bool:
    """A stored vote matches a candidate with the same id whose directory equals a stored one (§3.3, §3.4 table).

    A vote stored without directory id (kraft.version 0) matches any directory of that node.
    """
    return voted_id == candidate_id and (voted_directory is None or voted_directory == candidate_directory)


# Role names used by ``grant_vote``; ``raft_state`` maps each state class to one of them.
UNATTACHED = "Unattached"
PROSPECTIVE = "Prospective"
CANDIDATE = "Candidate"
LEADER = "Leader"
FOLLOWER = "Follower"
RESIGNED = "Resigned"


def grant_vote(role: str, pre_vote: bool, log_up_to_date: bool, has_voted: bool, vote_matches: bool,
               leader_known: bool, fetched_from_leader: bool) -> bool:
    """``EpochState.canGrantVote`` for every role (§3.4 table).

    Pre-votes: never by a Leader; by a Follower only before its first successful fetch; otherwise iff the
    log is up to date. Standard votes: only Unattached/Prospective; a stored vote decides regardless of the
    log; a known leader rejects; else iff up to date. KIP-595 has no pre-vote (added by KIP-996).
    """
    if role == LEADER:
        return False
    if pre_vote:
        if role == FOLLOWER and fetched_from_leader:
            return False
        return log_up_to_date
    if role != UNATTACHED and role != PROSPECTIVE:
        return False
    if has_voted:
        return vote_matches
    if leader_known:
        return False
    return log_up_to_date


def election_won(voter_count: int, granted: int) -> bool:
    """``EpochElection.isVoteGranted``: granted votes (self included) reach a majority (§3.5)."""
    return granted >= majority(voter_count)


def election_lost(voter_count: int, granted: int, rejected: int) -> bool:
    """``EpochElection.isVoteRejected``: even every unrecorded voter granting could not make a majority (§3.5)."""
    unrecorded = voter_count - granted - rejected
    return granted + unrecorded < majority(voter_count)


def can_start_election(is_voter: bool) -> bool:
    """Only voters become Prospective (and so Candidate); observers never campaign (§3.2)."""
    return is_voter


def high_watermark_candidate(voter_end_offsets: tuple[int, ...]) -> int:
    """The end offset of the voter at index ``floor(n/2)`` sorted descending, unknown (-1) last (§3.6): index
    ``(n-1) // 2`` sorted ascending."""
    ordered = sorted(voter_end_offsets)
    return ordered[(len(ordered) - 1) // 2]


def next_high_watermark(current: int, voter_end_offsets: tuple[int, ...], epoch_start_offset: int) -> int:
    """``LeaderState.maybeUpdateHighWatermark``: adopt the candidate only if > epoch start and > current (§3.6, B.9).

    The strict "> epochStartOffset" means the LeaderChange record of this epoch is on a majority; KIP-595
    says "at least one record of the current epoch", which is the same condition. A smaller value is ignored.
    """
    candidate = high_watermark_candidate(voter_end_offsets)
    if candidate > epoch_start_offset and candidate > current:
        return candidate
    return current


def follower_high_watermark(current: int, local_end_offset: int, response_high_watermark: int) -> int:
    """``updateFollowerHighWatermark``: min(LEO, response HW) when the response carries one (>= 0) (§3.7).

    Raises ``ValueError`` on a decrease, as ``FollowerState.updateHighWatermark`` does (fatal in Kafka).
    """
    if response_high_watermark < 0:
        return current
    new = min(local_end_offset, response_high_watermark)
    if current > new:
        raise ValueError(f"non-monotonic follower high watermark update {current} -> {new}")
    return new


def check_quorum_reached(voter_count: int, fetched_voters: int, leader_is_voter: bool) -> bool:
    """``updateCheckQuorumForFollowingVoter``: fetching voters form a majority, the leader counting itself
    only if it is a voter (§3.6)."""
    needed = majority(voter_count)
    if leader_is_voter:
        needed -= 1
    return fetched_voters >= needed


def replica_matches_key(state_id: int, state_directory_id: Optional[str], replica_id: int,
                        replica_directory_id: Optional[str]) -> bool:
    """``LeaderState.ReplicaState.matchesKey``: a replica state is the fetcher's when the ids match and, if the state's
    key names a directory id, the fetcher names the same one (§3.6, §3.14)."""
    if state_id != replica_id:
        return False
    return state_directory_id is None or state_directory_id == replica_directory_id


def end_offset_for_epoch(epoch_cache: tuple[tuple[int, int], ...], log_end_offset: int,
                         epoch: int) -> tuple[int, int]:
    """``endOffsetForEpoch``: (largest cached epoch <= E, start of the next epoch or LEO) (§3.7).

    ``epoch_cache`` holds (epoch, start offset) ascending. Below every cached epoch: (E, start of the first
    epoch); an empty cache answers (last fetched epoch 0, LEO) (``KafkaMetadataLog.endOffsetForEpoch``).
    """
    if not epoch_cache:
        return (0, log_end_offset)
    if epoch < epoch_cache[0][0]:
        return (epoch, epoch_cache[0][1])
    i = len(epoch_cache) - 1
    while epoch_cache[i][0] > epoch:
        i -= 1
    end = epoch_cache[i + 1][1] if i + 1 < len(epoch_cache) else log_end_offset
    return (epoch_cache[i][0], end)


def end_offset_for_epoch_after_snapshot(epoch_cache: tuple[tuple[int, int], ...], log_end_offset: int,
                                        last_fetched_epoch: int, earliest_snapshot_epoch: int,
                                        epoch: int) -> tuple[int, int]:
    """``endOffsetForEpoch`` of a log with snapshots (Kafka 4.3 ``MockLog.lastOffsetAndEpochFiltered``): the largest
    cached epoch <= E (the earliest snapshot's epoch below every cached one) and the next cached start, else
    (last fetched epoch, LEO) (§3.7)."""
    lower = earliest_snapshot_epoch
    for cached_epoch, start in epoch_cache:
        if cached_epoch > epoch:
            return (lower, start)
        lower = cached_epoch
    return (last_fetched_epoch, log_end_offset)


def fetch_needs_snapshot(fetch_offset: int, last_fetched_epoch: int, log_start_offset: int,
                         earliest_snapshot_epoch: int) -> bool:
    """``RaftLog.validateOffsetAndEpoch``'s snapshot case: with a snapshot at the log start, a fetch below the log
    start, at it in another epoch, or from an epoch older than that snapshot's must fetch the latest snapshot (§3.7,
    KIP-630)."""
    return (fetch_offset < log_start_offset
            or (fetch_offset == log_start_offset and last_fetched_epoch != earliest_snapshot_epoch)
            or last_fetched_epoch < earliest_snapshot_epoch)


def snapshot_replaces_log(snapshot_epoch: int, snapshot_end_offset: int, log_last_epoch: int,
                          log_end_offset: int) -> bool:
    """``truncateToLatestSnapshot``: the latest snapshot replaces the whole log when it is ahead of it, by epoch, then
    end offset (``MockLog``, ``KafkaRaftLog``; ``log_last_epoch`` the epoch cache's last, 0 when empty), KIP-630."""
    return snapshot_epoch > log_last_epoch or (snapshot_epoch == log_last_epoch
                                               and snapshot_end_offset > log_end_offset)


def snapshot_chunk_size(position: int, snapshot_size: int, max_bytes: int) -> int:
    """``handleFetchSnapshotRequest``: a chunk of at most ``max_bytes`` from ``position``, bounded by the snapshot's
    end (``RawSnapshotReader.slice``), KIP-630."""
    return max(0, min(max_bytes, snapshot_size - position))


def is_diverging(fetch_offset: int, last_fetched_epoch: int, end_epoch: int, end_offset: int) -> bool:
    """``validateOffsetAndEpoch``: the fetch diverges when the leader's endOffsetForEpoch(lastFetchedEpoch)
    has another epoch or ends before the fetch offset (§3.7)."""
    return end_epoch != last_fetched_epoch or end_offset < fetch_offset


def truncation_offset(diverging_epoch: int, diverging_end_offset: int, local_epoch: int, local_end: int,
                      log_end_offset: int) -> int:
    """``truncateToEndOffset``: where a follower cuts its log after a DivergingEpoch answer (§3.7).

    ``(local_epoch, local_end)`` is the follower's own endOffsetForEpoch(diverging epoch). Epoch 0 means
    min(endOffset, LEO); a matching local epoch gives min(both ends); otherwise the local end.
    """
    if diverging_epoch == 0:
        return min(diverging_end_offset, log_end_offset)
    if local_epoch == diverging_epoch:
        return min(local_end, diverging_end_offset)
    return local_end


def last_fetched_epoch_after_append(current: int, appended_last_epoch: int, appended_count: int) -> int:
    """The epoch a follower sends as lastFetchedEpoch after appending a fetch response (§3.7).

    It is the epoch of its last log entry: an empty response leaves it unchanged.
    """
    if appended_count == 0:
        return current
    return appended_last_epoch


def end_quorum_epoch_backoff(position: int, size: int, backoff_max_ms: int) -> int:
    """``strictExponentialElectionBackoffMs``: a follower's wait after EndQuorumEpoch by its place among the
    preferred successors (§3.5): 0 first, max if absent, else min(max, (max >> (n-1)) << (p-1)).

    Kafka's ``endEpochElectionBackoff`` gives an absent node the position ``size`` (it counts past the end), so an
    empty list of successors puts every follower first: 0 (Kafka 4.3 ``KafkaRaftClient``).
    """
    if position == 0:
        return 0
    if position < 0 or position >= size:
        return backoff_max_ms
    return min(backoff_max_ms, (backoff_max_ms >> (size - 1)) << (position - 1))


def backing_off(now: int, failed_at: int, retry_backoff_ms: int) -> bool:
    """``ConnectionState.isBackingOff``: a connection whose last request failed at ``failed_at`` sends nothing until
    ``quorum.retry.backoff.ms`` have passed since (§3.13)."""
    return now - failed_at < retry_backoff_ms


def request_in_flight(now: int, sent_at: int, request_timeout_ms: int) -> bool:
    """``ConnectionState.isInflight``: a request sent at ``sent_at`` is awaited until
    ``controller.quorum.request.timeout.ms`` have passed; then the connection is ready again (§3.13)."""
    return now - sent_at < request_timeout_ms


def should_send_add_or_remove_voter_request(reconfig_supported: bool, can_become_voter: bool, auto_join: bool,
                                            update_period_expired: bool) -> bool:
    """``KafkaRaftClient.shouldSendAddOrRemoveVoterRequest`` (Kafka 4.3): an observer following a leader asks to join
    only under kraft.version 1, if it may become a voter (a controller, ``canBecomeVoter``) with
    ``controller.quorum.auto.join.enable`` on, once its update-voter-set period has passed (§3.15, KIP-853)."""
    return reconfig_supported and can_become_voter and auto_join and update_period_expired


def auto_join_removes_old_voter(local_id_in_voters: bool) -> bool:
    """``KafkaRaftClient.pollFollowerAsObserver``: an observer whose id is in the voter set (under another directory
    id, or it would be a voter) first asks to remove that old voter (RemoveRaftVoter), else to add itself
    (AddRaftVoter), §3.15."""
    return local_id_in_voters


def fetch_epoch_error(request_epoch: int, local_epoch: int, is_leader: bool) -> str:
    """``validateLeaderOnlyRequest``: older epoch FENCED_LEADER_EPOCH, newer UNKNOWN_LEADER_EPOCH, then
    NOT_LEADER_OR_FOLLOWER when not leader; "" when valid (§3.7)."""
    # The fetcher follows a leader of an older epoch: it must learn the new one.
    if request_epoch < local_epoch:
        return "FENCED_LEADER_EPOCH"
    # This node has not yet learnt of the fetcher's epoch: the fetcher retries once it has.
    if request_epoch > local_epoch:
        return "UNKNOWN_LEADER_EPOCH"
    # Only the leader serves fetches.
    if not is_leader:
        return "NOT_LEADER_OR_FOLLOWER"
    return ""


def bootstrap_server(servers: tuple[int, ...], start: int) -> int:
    """``RequestManager.findReadyBootstrapServer``: the first ready server from a random start index, in list order.

    Called only when no request is in flight; this is the server at ``start`` (modulo their number), where the search
    begins: the caller takes the first one from there that is not backing off. ``start`` is the caller's draw
    (Kafka's ``random.nextInt``).
    """
    return servers[start % len(servers)]


def shutdown_can_complete(is_voter: bool, voter_count: int, has_remote_leader: bool) -> bool:
    """``maybeCompleteShutdown`` (Kafka 4.3 ``KafkaRaftClient``): a graceful shutdown completes once the node is an
    observer, the only voter, or knows a leader other than itself (§3.13); otherwise it waits for one or times out."""
    return not is_voter or voter_count == 1 or has_remote_leader


def should_fire_leader_change(epoch: int, leader_id: int, fired_epoch: int, fired_leader_id: int) -> bool:
    """``ListenerContext.shouldFireLeaderChange``: the listener learns a (leader, epoch) other than the last it was
    told when the epoch is later, or the same epoch now has a leader where it had none (-1) (§3.12)."""
    if (epoch, leader_id) == (fired_epoch, fired_leader_id):
        return False
    if epoch > fired_epoch:
        return True
    return leader_id != -1 and fired_leader_id == -1


def listener_caught_up(committed_end: int, epoch_start_offset: int) -> bool:
    """``ListenerContext.maybeFireLeaderChange(leaderAndEpoch, epochStartOffset)``: the local leader becomes visible
    to the listener only once it has been handed every committed record up to and including the epoch's start
    (next offset > epoch start offset), so the state machine has the whole committed state before it writes (§3.12)."""
    return committed_end > epoch_start_offset


def listener_loads_snapshot(committed_end: int, starting: bool, high_watermark: int, log_start_offset: int) -> bool:
    """``KafkaRaftClient.updateListenersProgress``: a listener behind the high watermark is handed the latest snapshot
    (when there is one) instead of the log if it is new (next offset -1) or the log no longer holds its next offset
    (§3.12, KIP-630)."""
    next_offset = -1 if starting else committed_end
    return next_offset < high_watermark and (starting or next_offset < log_start_offset)


def int32(value: int) -> int:
    """Java's ``(int)`` cast: the low 32 bits of ``value`` as a signed int (two's complement)."""
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def uuid_hash_code(most_significant_bits: int, least_significant_bits: int) -> int:
    """``Uuid.hashCode``: the two 64-bit halves xored, then the high and low 32 bits of that xored (§3.14)."""
    xor = most_significant_bits ^ least_significant_bits
    return int32((xor >> 32) ^ xor)


def replica_key_hash_code(replica_id: int, directory_hash_code: int) -> int:
    """``ReplicaKey.hashCode``: ``Objects.hash(id, directoryId)``, i.e. ``31 * (31 + id) + hash`` in 32-bit ints; an
    empty ``Optional`` directory id hashes to 0, a present one to its ``Uuid.hashCode`` (§3.14)."""
    return int32(31 * int32(31 + replica_id) + directory_hash_code)


def hash_map_capacity(initial_capacity: int, size: int) -> int:
    """The table length of a ``java.util.HashMap`` (or ``HashSet``) built by ``new HashMap<>(initial_capacity)`` and
    ``size`` puts of distinct keys: the first put allocates ``tableSizeFor(initial_capacity)`` buckets, and the table
    doubles whenever the size passes 3/4 of its length (``HashMap.resize``, load factor 0.75)."""
    capacity = 1
    while capacity < initial_capacity:
        capacity *= 2
    while size > capacity * 3 // 4:
        capacity *= 2
    return capacity


def hash_iteration_order(hash_codes: tuple[int, ...], capacity: int) -> tuple[int, ...]:
    """The order in which a ``java.util.HashMap`` of table length ``capacity`` iterates keys put in the order given (by
    their ``hashCode``): by bucket, ``(h ^ (h >>> 16)) & (capacity - 1)`` (``HashMap.hash``), and within a bucket in
    insertion order, which a resize keeps (``HashMap.split``); returns the keys' positions. Buckets of eight or more
    keys (treeified) do not arise for voter sets."""
    def bucket(position: int) -> int:
        h = hash_codes[position] & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (capacity - 1)
    return tuple(sorted(range(len(hash_codes)), key=lambda position: (bucket(position), position)))
