"""The KRaft quorum states and every legal transition between them (rules §3.2, ``QuorumState``).

States are frozen dataclasses; "voted" is a ``voted_key`` held by Unattached, Prospective or Follower,
not a state. Illegal transitions raise :class:`IllegalTransition` (Kafka: IllegalStateException). Timers
are absolute deadlines in ms, computed from ``now`` by the caller; the election jitter is an argument.
KIP-595 has a separate Voted state and no Prospective/Resigned; Kafka 4.x is followed here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional, Union

from kraftspec.reference import raft_rules
from kraftspec.reference.frozen import EMPTY_MAP, FrozenMap, evolve

if TYPE_CHECKING:  # raft_voters imports this module's ReplicaKey
    from kraftspec.reference.raft_voters import VoterSet

NO_LEADER = -1
NEVER = 2**63 - 1  # a timer that never expires (Kafka's Long.MAX_VALUE)


class IllegalTransition(ValueError):
    """A transition ``QuorumState`` forbids; the message names both states and the rule."""


@dataclass(frozen=True, slots=True, kw_only=True)
class QuorumConfig:
    """``QuorumConfig`` timeouts in ms (§3.1 defaults); check-quorum is 1.5 × fetch timeout; ``retry_backoff_ms`` is
    ``quorum.retry.backoff.ms`` (a connection whose request failed waits that long, ``RequestManager``);
    ``fetch_snapshot_max_bytes`` is ``controller.quorum.fetch.snapshot.max.bytes`` (a FetchSnapshot's ``max_bytes``);
    ``auto_join`` is ``controller.quorum.auto.join.enable`` (``QuorumConfig.autoJoin``, off by default): a
    kraft.version 1 observer that can become a voter adds itself to the voters (KIP-853)."""

    election_timeout_ms: int = 1000
    fetch_timeout_ms: int = 2000
    election_backoff_max_ms: int = 1000
    request_timeout_ms: int = 2000
    fetch_max_wait_ms: int = 500
    fetch_max_records: int = 1000
    retry_backoff_ms: int = 20
    fetch_snapshot_max_bytes: int = 1048576
    auto_join: bool = False

    @property
    def check_quorum_timeout_ms(self) -> int:
        """``CHECK_QUORUM_TIMEOUT_FACTOR`` 1.5 × fetch timeout, 3000 ms by default (:func:`check_quorum_timeout`)."""
        return check_quorum_timeout(self.fetch_timeout_ms)

    @property
    def begin_quorum_epoch_timeout_ms(self) -> int:
        """BeginQuorumEpoch resend period: fetch timeout / 2."""
        return self.fetch_timeout_ms // 2


def check_quorum_timeout(fetch_timeout_ms: int) -> int:
    """``CHECK_QUORUM_TIMEOUT_FACTOR`` 1.5 × the fetch timeout in integers: Kafka's ``(int)`` of the product for any
    non-negative timeout, without a float. A function, so that the leader's fetch path calls it without a property."""
    return fetch_timeout_ms * 3 // 2


def election_deadline(config: QuorumConfig, now: int, jitter: int, is_voter: bool = True) -> int:
    """Randomized election timeout: ``electionTimeout + uniform[0, electionTimeout)``; ``jitter`` is that draw.

    Nodes that may not start an election (observers) have no election timer.
    """
    if not raft_rules.can_start_election(is_voter):
        return NEVER
    if config.election_timeout_ms == 0:
        return now
    return now + config.election_timeout_ms + jitter % config.election_timeout_ms


@dataclass(frozen=True, slots=True, kw_only=True)
class ListenerView:
    """What the state machine above Raft (a registered ``RaftClient.Listener``) has learnt, as
    ``KafkaRaftClient.ListenerContext`` tells it: the committed records handed over by ``handleCommit`` end at
    ``committed_end`` (exclusive), and ``handleLeaderChange`` last told it ``leader_id`` (-1 none) in ``epoch``
    (``LeaderAndEpoch.UNKNOWN`` at first); ``loaded_snapshot`` is the id of the snapshot last handed to
    ``handleLoadSnapshot`` (``handleLoadBootstrap`` for the bootstrap checkpoint), None before any (KIP-630). The
    listener is taken to read and close each batch reader at once."""

    committed_end: int = 0
    leader_id: int = NO_LEADER
    epoch: int = 0
    loaded_snapshot: Optional[tuple[int, int]] = None


SHUTDOWN_COMPLETED = "completed"
SHUTDOWN_TIMED_OUT = "timed_out"


@dataclass(frozen=True, slots=True, kw_only=True)
class GracefulShutdown:
    """``KafkaRaftClient.GracefulShutdown``: the end of ``shutdown(timeoutMs)``'s timer and, once finished, how
    (``outcome``: :data:`SHUTDOWN_COMPLETED`, or :data:`SHUTDOWN_TIMED_OUT` when the timer expired first)."""

    deadline: int
    outcome: Optional[str] = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplicaKey:
    """A replica: node id and (kraft.version 1) directory id."""

    id: int
    directory_id: Optional[str] = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ElectionState:
    """``ElectionState``: what the quorum-state file holds (epoch, leader or -1, voted key)."""

    epoch: int
    leader_id: int = NO_LEADER
    voted_key: Optional[ReplicaKey] = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Unattached:
    """No leader known to follow; optionally a known leader id (without endpoints) or a vote cast."""

    epoch: int
    election_deadline: int
    leader_id: int = NO_LEADER
    voted_key: Optional[ReplicaKey] = None
    high_watermark: int = -1
    role = raft_rules.UNATTACHED


@dataclass(frozen=True, slots=True, kw_only=True)
class Prospective:
    """Pre-vote phase in the same epoch; remembers the leader, its endpoints and the vote (KIP-996)."""

    epoch: int
    election_deadline: int
    granted: frozenset[int]
    rejected: frozenset[int] = frozenset()
    leader_id: int = NO_LEADER
    leader_endpoints: tuple[str, ...] = ()
    voted_key: Optional[ReplicaKey] = None
    high_watermark: int = -1
    role = raft_rules.PROSPECTIVE


@dataclass(frozen=True, slots=True, kw_only=True)
class Candidate:
    """Standard vote phase at epoch+1, voted for itself; after losing it waits out its election timeout."""

    epoch: int
    election_deadline: int
    granted: frozenset[int]
    rejected: frozenset[int] = frozenset()
    high_watermark: int = -1
    role = raft_rules.CANDIDATE


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplicaState:
    """``LeaderState.ReplicaState``: what the leader knows of one replica (-1 = unknown); ``directory_id`` that of the
    replica key it holds (``replicaKey``; None: none, as static voters' keys)."""

    directory_id: Optional[str] = None
    end_offset: int = -1
    last_fetch_ms: int = -1
    last_fetch_leader_end_offset: int = -1
    last_caught_up_ms: int = -1
    acknowledged: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class ParkedFetch:
    """A Fetch held in the fetch purgatory until records, an HW change or its deadline (§3.7).

    ``response`` is the answer computed when it arrived, which is what it gets if it times out (Kafka 4.3
    ``KafkaRaftClient.handleFetchRequest``: on ``REQUEST_TIMED_OUT`` "just return the original fetch response").
    """

    source: int
    request: Any
    deadline: int
    response: Any = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Leader:
    """``LeaderState``: epoch start offset, HW (-1 none), replica states, check-quorum and BeginQuorumEpoch timers;
    voter states by id, each holding the voter's key, observer states by replica key (``voterStates``,
    ``observerStates``); ``resign_requested`` once ``resign(epoch)`` asked it to resign (``requestResign``: the next
    poll resigns);
    ``volatile_voters`` a kraft.version 0 leader's in-memory voter set (``volatileVoters``), which UpdateRaftVoter
    updates without writing the log (§3.15), None at kraft.version 1 and once an upgrade took them;
    ``requested_kraft_version`` the kraft.version an upgrade asked for (``requestedKRaftVersion``), None before;
    ``unwritten`` the batches completed in the accumulator (``BatchAccumulator``), which the next poll writes: the
    start-of-epoch records of a leader elected by a poll or by ``initialize``, and a VotersRecord
    (``appendVotersRecord``), behind them (``pollLeader``: ``maybeAppendBatches``); ``lingering`` the records appended
    meanwhile, held in the accumulator's current batch one poll longer (that poll's ``drain`` finds
    the drain ``appendControlMessages`` forced already finished, so it takes the completed batches alone)."""

    epoch: int
    local_id: int
    epoch_start_offset: int
    voter_states: FrozenMap[int, ReplicaState]
    granting_voters: frozenset[int]
    check_quorum_deadline: int
    begin_quorum_deadline: int
    high_watermark: int = -1
    observer_states: FrozenMap[ReplicaKey, ReplicaState] = EMPTY_MAP
    fetched_voters: frozenset[int] = frozenset()
    resign_requested: bool = False
    volatile_voters: Optional[VoterSet] = None
    requested_kraft_version: Optional[int] = None
    unwritten: tuple[tuple[Any, ...], ...] = ()
    lingering: tuple[Any, ...] = ()
    role = raft_rules.LEADER

    @property
    def leader_id(self) -> int:
        """The leader of this epoch is the local node."""
        return self.local_id


@dataclass(frozen=True, slots=True, kw_only=True)
class SnapshotDownload:
    """``FollowerState.fetchingSnapshot``: the snapshot id (end offset, epoch) a follower fetches in chunks, the
    bytes it holds so far (the writer's ``sizeInBytes``) and the control records its first chunk held, KIP-630."""

    end_offset: int
    epoch: int
    received: int = 0
    control_records: tuple[Any, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Follower:
    """Following ``leader_id`` at its endpoints; ``has_fetched`` after a successful fetch (stops pre-votes);
    ``fetching_snapshot`` the snapshot being fetched, if any (lost with the state, as its writer is closed).

    ``update_voter_deadline`` is ``FollowerState``'s update-voter-set period (the fetch timeout from the state's
    start, restarted whenever it passes): then a voter tells the leader its endpoints (UpdateRaftVoter) and an
    auto-joining observer asks it to add it (AddRaftVoter) or to remove its id's old directory (RemoveRaftVoter);
    ``has_updated_leader`` once this leader answered it NONE or UNSUPPORTED_VERSION (``hasUpdatedLeader``).
    """

    epoch: int
    leader_id: int
    leader_endpoints: tuple[str, ...]
    fetch_deadline: int
    voted_key: Optional[ReplicaKey] = None
    high_watermark: int = -1
    has_fetched: bool = False
    update_voter_deadline: int = NEVER
    fetching_snapshot: Optional[SnapshotDownload] = None
    has_updated_leader: bool = False
    role = raft_rules.FOLLOWER


@dataclass(frozen=True, slots=True, kw_only=True)
class Resigned:
    """A leader that resigned or restarted: same epoch, never votes for anyone in it (B.11)."""

    epoch: int
    local_id: int
    election_deadline: int
    unacked_voters: frozenset[int]
    preferred_successors: tuple[int, ...] = ()
    role = raft_rules.RESIGNED

    @property
    def leader_id(self) -> int:
        """Its election state still names the local node as leader of the epoch."""
        return self.local_id


QuorumState = Union[Unattached, Prospective, Candidate, Leader, Follower, Resigned]


def leader_of(state: QuorumState) -> int:
    """``leaderIdOrSentinel``: the leader known in this state, or -1."""
    return getattr(state, "leader_id", NO_LEADER) if not isinstance(state, Candidate) else NO_LEADER


def voted_key_of(state: QuorumState, local_id: int) -> Optional[ReplicaKey]:
    """The vote this state holds: its voted key; a Candidate's vote is for itself."""
    if isinstance(state, Candidate):
        return ReplicaKey(id=local_id)
    return getattr(state, "voted_key", None)


def election_state(state: QuorumState, local_id: int) -> ElectionState:
    """``EpochState.election``: the (epoch, leader, vote) a durable transition writes to the quorum-state file."""
    return ElectionState(epoch=state.epoch, leader_id=leader_of(state), voted_key=voted_key_of(state, local_id))


def _illegal(state: QuorumState, target: str, why: str) -> IllegalTransition:
    return IllegalTransition(f"cannot transition from {state.role} epoch {state.epoch} to {target}: {why}")


def transition_to_unattached(state: QuorumState, epoch: int, random_deadline: int, voter_count: int,
                             leader_id: int = NO_LEADER) -> Unattached:
    """``transitionToUnattached``: epoch > current, or the same epoch only from Prospective (vote kept) (§3.2).

    The election timer keeps running from Candidate, Unattached, Resigned and a Prospective that has not
    lost; otherwise ``random_deadline`` (NEVER for observers). The high watermark is carried over.
    """
    if epoch < state.epoch or (epoch == state.epoch and not isinstance(state, Prospective)):
        raise _illegal(state, f"Unattached epoch {epoch}", "needs a higher epoch, or the same epoch from Prospective")
    deadline = random_deadline
    if random_deadline != NEVER:
        if isinstance(state, (Candidate, Unattached, Resigned)):
            deadline = state.election_deadline
        elif isinstance(state, Prospective) and not raft_rules.election_lost(
                voter_count, len(state.granted), len(state.rejected)):
            deadline = state.election_deadline
    voted = state.voted_key if epoch == state.epoch else None
    return Unattached(epoch=epoch, election_deadline=deadline, leader_id=leader_id, voted_key=voted,
                      high_watermark=getattr(state, "high_watermark", -1))


def transition_to_unattached_voted(state: QuorumState, epoch: int, candidate: ReplicaKey, deadline: int,
                                   local_id: int = -1) -> Union[Unattached, Prospective]:
    """Record a granted standard vote: Unattached or Prospective without a vote, in the same epoch (§3.4 step 9).

    Either way the state is made anew with a fresh election timer (``deadline``): Kafka 4.3
    ``QuorumState.unattachedAddVotedState`` / ``prospectiveAddVotedState`` build a new state with
    ``randomElectionTimeoutMs()``; a new ProspectiveState also starts a new pre-vote election (only ``local_id``'s
    own vote granted), keeping the known leader and its endpoints.
    """
    if epoch != state.epoch:
        raise _illegal(state, f"voted epoch {epoch}", "a vote is recorded only in the current epoch")
    if isinstance(state, Unattached) and state.voted_key is None:
        return Unattached(epoch=epoch, election_deadline=deadline, leader_id=state.leader_id, voted_key=candidate,
                          high_watermark=state.high_watermark)
    if isinstance(state, Prospective) and state.voted_key is None:
        return Prospective(epoch=epoch, election_deadline=deadline, granted=frozenset((local_id,)),
                           rejected=frozenset(), leader_id=state.leader_id,
                           leader_endpoints=state.leader_endpoints, voted_key=candidate,
                           high_watermark=state.high_watermark)
    raise _illegal(state, "voted", "only an Unattached or Prospective state without a vote records one")


def transition_to_prospective(state: QuorumState, local_id: int, is_voter: bool, deadline: int) -> Prospective:
    """``transitionToProspective``: voters only, never from Leader or Prospective; epoch unchanged (§3.2). A Resigned
    node starts one only as the only voter, at ``KafkaRaftClient.initialize``."""
    if not raft_rules.can_start_election(is_voter):
        raise _illegal(state, "Prospective", f"node {local_id} is not a voter")
    if isinstance(state, (Leader, Prospective)):
        raise _illegal(state, "Prospective", "a Leader or Prospective may not start an election")
    leader_id = NO_LEADER if isinstance(state, Candidate) else state.leader_id
    endpoints = state.leader_endpoints if isinstance(state, Follower) else ()
    return Prospective(epoch=state.epoch, election_deadline=deadline, granted=frozenset((local_id,)),
                       rejected=frozenset(), leader_id=leader_id, leader_endpoints=endpoints,
                       voted_key=voted_key_of(state, local_id), high_watermark=getattr(state, "high_watermark", -1))


def transition_to_candidate(state: QuorumState, local_id: int, deadline: int) -> Candidate:
    """``transitionToCandidate``: only from Prospective; epoch + 1 with a (durable) vote for itself (§3.2, §3.5)."""
    if not isinstance(state, Prospective):
        raise _illegal(state, "Candidate", "only Prospective may become Candidate")
    return Candidate(epoch=state.epoch + 1, election_deadline=deadline, granted=frozenset((local_id,)),
                     rejected=frozenset(), high_watermark=state.high_watermark)


def transition_to_leader(state: QuorumState, local_id: int, voters: frozenset[int], epoch_start_offset: int,
                         now: int, config: QuorumConfig,
                         directory_ids: FrozenMap[int, Optional[str]] = EMPTY_MAP) -> Leader:
    """``transitionToLeader``: only a Candidate with a majority of granted votes (§3.2, §3.6).

    The new LeaderState has no high watermark (every other state carries it over); the BeginQuorumEpoch
    timer starts expired. Each voter's state holds its key, with the directory id the voter set names
    (``directory_ids``; ``LeaderState``'s constructor over ``voterSetAtEpochStart``).
    """
    if not isinstance(state, Candidate):
        raise _illegal(state, "Leader", "only a Candidate may become Leader")
    if not raft_rules.election_won(len(voters), len(state.granted & voters)):
        raise _illegal(state, "Leader", f"granted votes {sorted(state.granted)} are not a majority of {sorted(voters)}")
    voter_states = FrozenMap({v: ReplicaState(directory_id=directory_ids.get(v), acknowledged=(v == local_id))
                              for v in voters})
    return Leader(epoch=state.epoch, local_id=local_id, epoch_start_offset=epoch_start_offset,
                  voter_states=voter_states, granting_voters=state.granted,
                  check_quorum_deadline=now + config.check_quorum_timeout_ms, begin_quorum_deadline=now)


def transition_to_follower(state: QuorumState, local_id: int, epoch: int, leader_id: int,
                           endpoints: tuple[str, ...], deadline: int) -> Follower:
    """``transitionToFollower`` (§3.2): a higher epoch, or the same epoch from a state without that leader.

    Same epoch: never from Leader; a Follower only for strictly more leader endpoints;
    Resigned to another leader is allowed (KAFKA-18379). The vote is kept within the epoch. The update-voter-set
    period starts with the fetch timer (both ``deadline``: ``FollowerState``'s timers of the fetch timeout).
    """
    if leader_id == local_id:
        raise _illegal(state, f"Follower of {leader_id}", "a node cannot follow itself")
    if not endpoints:
        raise _illegal(state, f"Follower of {leader_id}", "the leader's endpoints are unknown")
    if epoch < state.epoch:
        raise _illegal(state, f"Follower epoch {epoch}", "epochs never decrease")
    if epoch == state.epoch:
        if isinstance(state, Leader):
            raise _illegal(state, "Follower", "a leader cannot follow in its own epoch")
        if isinstance(state, Follower) and len(endpoints) <= len(state.leader_endpoints):
            raise _illegal(state, "Follower", "the same epoch needs more leader endpoints")
        voted = voted_key_of(state, local_id)
        return Follower(epoch=epoch, leader_id=leader_id, leader_endpoints=endpoints, fetch_deadline=deadline,
                        voted_key=voted, high_watermark=getattr(state, "high_watermark", -1), has_fetched=False,
                        update_voter_deadline=deadline)
    return Follower(epoch=epoch, leader_id=leader_id, leader_endpoints=endpoints, fetch_deadline=deadline,
                    voted_key=None, high_watermark=getattr(state, "high_watermark", -1), has_fetched=False,
                    update_voter_deadline=deadline)


def transition_to_resigned(state: QuorumState, preferred_successors: tuple[int, ...], voters: frozenset[int],
                           deadline: int) -> Resigned:
    """``transitionToResigned``: only a Leader; every other voter is un-acknowledged (§3.2, §3.6)."""
    if not isinstance(state, Leader):
        raise _illegal(state, "Resigned", "only a Leader resigns")
    return Resigned(epoch=state.epoch, local_id=state.local_id, election_deadline=deadline,
                    unacked_voters=voters - {state.local_id}, preferred_successors=preferred_successors)


def initial_state(stored: ElectionState, local_id: int, voters: frozenset[int], log_end_epoch: int,
                  voter_endpoints: FrozenMap[int, tuple[str, ...]], now: int, config: QuorumConfig,
                  jitter: int) -> QuorumState:
    """``QuorumState.initialize`` from the quorum-state file and the log's last epoch (§3.2, B.11).

    A node that was leader restarts Resigned in the stored epoch, never Leader; a stored self-vote
    restarts Candidate, known leader or not, which only a voter can be (``CandidateState``'s constructor throws
    IllegalArgumentException: ValueError here); a known voter leader gives Follower, an unknown one Unattached with the
    leader id. A Resigned node has an election timer even when it is no longer a voter (Kafka 4.3
    ``QuorumState.initialize``: ``randomElectionTimeoutMs``), on whose expiry ``pollResigned`` moves it on.
    """
    deadline = election_deadline(config, now, jitter, local_id in voters)
    if stored.epoch < log_end_epoch:
        return Unattached(epoch=log_end_epoch, election_deadline=deadline)
    if stored.leader_id == local_id:
        return Resigned(epoch=stored.epoch, local_id=local_id, election_deadline=election_deadline(config, now, jitter),
                        unacked_voters=voters - {local_id})
    if stored.voted_key is not None and stored.voted_key.id == local_id:
        if local_id not in voters:
            raise ValueError(f"Local replica {local_id} must be in the set of voters {sorted(voters)}")
        return Candidate(epoch=stored.epoch, election_deadline=deadline, granted=frozenset((local_id,)))
    if stored.leader_id != NO_LEADER:
        endpoints = voter_endpoints.get(stored.leader_id, ())
        if endpoints:
            return Follower(epoch=stored.epoch, leader_id=stored.leader_id, leader_endpoints=endpoints,
                            fetch_deadline=now + config.fetch_timeout_ms,
                            voted_key=stored.voted_key, update_voter_deadline=now + config.fetch_timeout_ms)
        return Unattached(epoch=stored.epoch, election_deadline=deadline, leader_id=stored.leader_id,
                          voted_key=stored.voted_key)
    return Unattached(epoch=stored.epoch, election_deadline=deadline, leader_id=NO_LEADER, voted_key=stored.voted_key)
