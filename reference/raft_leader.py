"""What the leader tracks: replica end offsets, the high watermark, check quorum, DescribeQuorum.

rules §3.6 and §3.10 (``LeaderState.java``). Each function returns a new :class:`Leader`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Optional

from kraftspec.reference import raft_rules, raft_state
from kraftspec.reference.frozen import FrozenMap, evolve
from kraftspec.reference.raft_state import Leader, QuorumConfig, ReplicaKey, ReplicaState

OBSERVER_SESSION_TIMEOUT_MS = 300_000
_NO_VOTERS: frozenset[int] = frozenset()


def _with_high_watermark(leader: Leader, voter_states: Mapping[int, ReplicaState]) -> int:
    """The HW after a voter's end offset changed (``maybeUpdateHighWatermark``)."""
    return raft_rules.next_high_watermark(leader.high_watermark, tuple(s.end_offset for s in voter_states.values()),
                                          leader.epoch_start_offset)


def update_local_end_offset(leader: Leader, end_offset: int) -> Leader:
    """``updateLocalState``: the leader's flushed end offset; a decrease raises ``ValueError`` (§3.6, scenario 68).

    The leader counts toward the HW only if it is a voter.
    """
    own = leader.voter_states.get(leader.local_id)
    if own is None:
        return leader
    if own.end_offset > end_offset:
        raise ValueError(f"non-monotonic update of the local end offset: {own.end_offset} -> {end_offset}")
    voter_states = leader.voter_states.set(leader.local_id, evolve(own, end_offset=end_offset))
    return evolve(leader, voter_states=voter_states, high_watermark=_with_high_watermark(leader, voter_states))


def _voter_state(leader: Leader, replica_id: int, directory_id: Optional[str]) -> Optional[ReplicaState]:
    """The voter state of the replica key (``voterStates.get(id)`` whose key ``matchesKey``), else None."""
    state = leader.voter_states.get(replica_id)
    if state is None or not raft_rules.replica_matches_key(replica_id, state.directory_id, replica_id, directory_id):
        return None
    return state


def replica_state(leader: Leader, key: ReplicaKey) -> Optional[ReplicaState]:
    """``LeaderState.getReplicaState``: the voter state whose key ``matchesKey``, else the observer state of the key."""
    return _voter_state(leader, key.id, key.directory_id) or leader.observer_states.get(key)


def _own_observer_key(leader: Leader) -> ReplicaKey:
    """The key of the leader's own observer state once it was removed (no fetch from its id is served, so the only
    observer key with its id)."""
    return next((key for key in leader.observer_states if key.id == leader.local_id), ReplicaKey(id=leader.local_id))


def update_voter_and_observer_states(leader: Leader, voters: frozenset[ReplicaKey]) -> Leader:
    """``LeaderState.updateVoterAndObserverStates``: the replica states follow the voter set in force (§3.14): each
    voter keeps the state of its key (``getReplicaState``: its voter state, else its observer state, else a new one)
    and holds its key; a former voter whose id left the set becomes an observer with its state."""
    if voters == {ReplicaKey(id=v, directory_id=s.directory_id) for v, s in leader.voter_states.items()}:
        return leader
    old_voters = dict(leader.voter_states)
    observers = dict(leader.observer_states)
    voter_states = {}
    for key in sorted(voters, key=lambda k: k.id):
        state = replica_state(leader, key) or ReplicaState()
        old_voters.pop(key.id, None)
        observers.pop(key, None)
        voter_states[key.id] = evolve(state, directory_id=key.directory_id)
    for replica_id, state in old_voters.items():
        observers.setdefault(ReplicaKey(id=replica_id, directory_id=state.directory_id), state)
    return evolve(leader, voter_states=FrozenMap(voter_states), observer_states=FrozenMap(observers))


def update_local_state(leader: Leader, end_offset: int, voters: frozenset[ReplicaKey]) -> Leader:
    """``LeaderState.updateLocalState`` with the voter set in force (kraft.version 1, §3.14): the leader's own end
    offset (a voter's or, once removed, an observer's; a decrease raises ``ValueError``), then the replica states follow
    the voter set (:func:`update_voter_and_observer_states`), then the HW over the voters alone."""
    own_key = leader.local_id if leader.local_id in leader.voter_states else _own_observer_key(leader)
    own_states = leader.voter_states if leader.local_id in leader.voter_states else leader.observer_states
    own = own_states.get(own_key, ReplicaState())
    if own.end_offset > end_offset:
        raise ValueError(f"non-monotonic update of the local end offset: {own.end_offset} -> {end_offset}")
    own_states = own_states.set(own_key, evolve(own, end_offset=end_offset))
    if leader.local_id in leader.voter_states:
        leader = evolve(leader, voter_states=own_states)
    else:
        leader = evolve(leader, observer_states=own_states)
    leader = update_voter_and_observer_states(leader, voters)
    return evolve(leader, high_watermark=_with_high_watermark(leader, leader.voter_states))


def followed_replica_state(state: ReplicaState, fetch_offset: int, now: int, leader_end_offset: int) -> ReplicaState:
    """``ReplicaState.updateFollowerState``: the caught-up time first (now if the fetch reached the leader's end offset,
    else the previous fetch's time if it reached the end offset of then), then fetch time and end offset (§3.6)."""
    caught_up = state.last_caught_up_ms
    if leader_end_offset >= 0:
        if fetch_offset >= leader_end_offset:
            caught_up = max(caught_up, now)
        elif 0 < state.last_fetch_leader_end_offset <= fetch_offset:
            caught_up = max(caught_up, state.last_fetch_ms)
    return evolve(state, end_offset=fetch_offset, last_fetch_ms=max(state.last_fetch_ms, now),
                  last_fetch_leader_end_offset=leader_end_offset, last_caught_up_ms=caught_up, acknowledged=True)


def update_replica_state(leader: Leader, replica_id: int, fetch_offset: int, now: int, config: QuorumConfig,
                         directory_id: Optional[str] = None) -> Leader:
    """``LeaderState.updateReplicaState`` after a valid Fetch from the replica key (``replica_id``, ``directory_id``):
    the follower state of ``getOrCreateReplicaState`` (the voter's if its key ``matchesKey``, else the observer state
    of that key) against the leader's end offset (an observer's once the leader was removed); then check quorum
    (``updateCheckQuorumForFollowingVoter``) and, for a voter, the HW, which only voters move (§3.6, scenario 71):
    once the voter set names directory ids, a fetch without the voter's is an observer's (Kafka 4.3
    ``LeaderState.java``)."""
    own = leader.voter_states.get(leader.local_id) or leader.observer_states.get(_own_observer_key(leader))
    leader_end_offset = -1 if own is None else own.end_offset
    voter = _voter_state(leader, replica_id, directory_id)
    if voter is None:
        key = ReplicaKey(id=replica_id, directory_id=directory_id)
        observer = followed_replica_state(leader.observer_states.get(key, ReplicaState(directory_id=directory_id)),
                                          fetch_offset, now, leader_end_offset)
        leader = evolve(leader, observer_states=leader.observer_states.set(key, observer))
        return update_check_quorum_for_following_voter(leader, replica_id, now, config, directory_id)
    voter_states = leader.voter_states.set(replica_id, followed_replica_state(voter, fetch_offset, now,
                                                                              leader_end_offset))
    leader = update_check_quorum_for_following_voter(evolve(leader, voter_states=voter_states), replica_id, now, config,
                                                     directory_id)
    return evolve(leader, high_watermark=_with_high_watermark(leader, voter_states))


def update_check_quorum_for_following_voter(leader: Leader, replica_id: int, now: int, config: QuorumConfig,
                                            directory_id: Optional[str] = None) -> Leader:
    """``LeaderState.updateCheckQuorumForFollowingVoter`` (after a valid Fetch or FetchSnapshot from the replica key
    (``replica_id``, ``directory_id``)): a voter whose key ``matchesKey`` counts as following (``updateFetchedVoters``);
    once the following voters form a majority (:func:`raft_rules.check_quorum_reached`) the check-quorum timer restarts
    (§3.6). The leader's own id is refused, as ``updateFetchedVoters`` throws IllegalArgumentException for it (an
    UpdateRaftVoter naming the leader reaches it once the update succeeds: ``UpdateVoterHandler.storeUpdatedVoters``)."""
    if replica_id == leader.local_id:
        raise ValueError("received a FETCH/FETCH_SNAPSHOT request from the leader itself")
    fetched = leader.fetched_voters
    if _voter_state(leader, replica_id, directory_id) is not None:
        fetched = fetched | {replica_id}
    deadline = leader.check_quorum_deadline
    if raft_rules.check_quorum_reached(len(leader.voter_states), len(fetched), leader.local_id in leader.voter_states):
        fetched, deadline = _NO_VOTERS, now + raft_state.check_quorum_timeout(config.fetch_timeout_ms)
    if fetched == leader.fetched_voters and deadline == leader.check_quorum_deadline:
        return leader
    return evolve(leader, fetched_voters=fetched, check_quorum_deadline=deadline)


def check_quorum_expired(leader: Leader, now: int) -> bool:
    """``timeUntilCheckQuorumExpires`` == 0: never with a single voter (§3.6, scenario 74)."""
    return len(leader.voter_states) > 1 and now >= leader.check_quorum_deadline


def time_until_check_quorum_expires(leader: Leader, now: int) -> int:
    """Remaining check-quorum time in ms; "forever" (2**63-1) with one voter, as Kafka's Long.MAX_VALUE."""
    if len(leader.voter_states) == 1:
        return 2**63 - 1
    return max(0, leader.check_quorum_deadline - now)


def voters_needing_begin_quorum_epoch(leader: Leader, now: int, config: QuorumConfig) -> tuple[int, ...]:
    """Voters (not the leader) whose last fetch is at least fetchTimeout/2 ago, or never (§3.6)."""
    cutoff = now - config.begin_quorum_epoch_timeout_ms
    return tuple(sorted(v for v, s in leader.voter_states.items()
                        if v != leader.local_id and (s.last_fetch_ms < 0 or s.last_fetch_ms <= cutoff)))


def acknowledge(leader: Leader, voter_id: int) -> Leader:
    """``addAcknowledgementFrom``: a voter answered BeginQuorumEpoch; a non-voter raises ``ValueError``."""
    state = leader.voter_states.get(voter_id)
    if state is None:
        raise ValueError(f"unexpected acknowledgement from non-voter {voter_id}")
    if state.acknowledged:
        return leader
    return evolve(leader, voter_states=leader.voter_states.set(voter_id, evolve(state, acknowledged=True)))


def voters_by_descending_end_offset(leader: Leader) -> tuple[int, ...]:
    """``nonLeaderVotersByDescendingFetchOffset``: the preferred successors on resignation (§3.6)."""
    others = [(s.end_offset, v) for v, s in leader.voter_states.items() if v != leader.local_id]
    return tuple(v for _, v in sorted(others, key=lambda p: (-p[0], p[1])))


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplicaDescription:
    """``DescribeQuorumResponseData.ReplicaState`` (§3.10)."""

    replica_id: int
    log_end_offset: int
    last_fetch_timestamp: int
    last_caught_up_timestamp: int


def describe(leader: Leader, now: int) -> tuple[tuple[ReplicaDescription, ...], tuple[ReplicaDescription, ...], Leader]:
    """``describeQuorum``: voters and observers (by replica key: a voter's id under another directory id is an
    observer; observers idle >= 300 s dropped, never the leader's own, ``clearInactiveObservers``); the leader reports
    "now"."""
    observers = {k: s for k, s in leader.observer_states.items()
                 if now - s.last_fetch_ms < OBSERVER_SESSION_TIMEOUT_MS or k.id == leader.local_id}
    pruned = leader if len(observers) == len(leader.observer_states) else evolve(
        leader, observer_states=FrozenMap(observers))

    def one(replica_id: int, s: ReplicaState) -> ReplicaDescription:
        if replica_id == leader.local_id:
            return ReplicaDescription(replica_id=replica_id, log_end_offset=s.end_offset, last_fetch_timestamp=now,
                                      last_caught_up_timestamp=now)
        return ReplicaDescription(replica_id=replica_id, log_end_offset=s.end_offset,
                                  last_fetch_timestamp=s.last_fetch_ms, last_caught_up_timestamp=s.last_caught_up_ms)

    return (tuple(one(r, s) for r, s in sorted(leader.voter_states.items())),
            tuple(one(k.id, s) for k, s in sorted(observers.items(), key=lambda i: (i[0].id, i[0].directory_id or ""))),
            pruned)
