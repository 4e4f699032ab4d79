"""Kafka's own Raft unit-test scenarios (kafka-scenarios.md sections F, G, H, I) against the reference.

Each test is named after its scenario number. Timeouts follow ``RaftClientTestContext``: election 10000 ms,
fetch 50000 ms (check quorum 75000 ms), election backoff max 100 ms, request timeout 5000 ms; jitter 0.
"""

from __future__ import annotations

import json

import pytest

from kraftspec.reference import raft, raft_leader, raft_log, raft_node, raft_rules, raft_state, raft_transitions
from kraftspec.reference.errors import Errors
from kraftspec.reference.frozen import FrozenMap, evolve
from kraftspec.reference.raft_log import LogEntry, log_of_epochs
from kraftspec.reference.raft_messages import (
    Append,
    BeginQuorumEpochRequest,
    CreateSnapshot,
    EndQuorumEpochRequest,
    FetchRequest,
    FetchResponse,
    NotLeaderError,
    QuorumEpochResponse,
    Send,
    ShutDownError,
    Shutdown,
    Tick,
    VoteRequest,
    VoteResponse,
)
from kraftspec.reference.raft_quorum_file import (
    QuorumStateFileError,
    read_quorum_state,
    write_quorum_state,
)
from kraftspec.reference.raft_records import LeaderChangeMessage
from kraftspec.reference.raft_state import (
    Candidate,
    ElectionState,
    Follower,
    IllegalTransition,
    Leader,
    ListenerView,
    Prospective,
    QuorumConfig,
    ReplicaKey,
    Resigned,
    Unattached,
)

CONFIG = QuorumConfig(election_timeout_ms=10_000, fetch_timeout_ms=50_000, election_backoff_max_ms=100,
                      request_timeout_ms=5_000)
LOCAL = 0


def endpoints(*ids: int) -> FrozenMap[int, tuple[str, ...]]:
    return FrozenMap({i: (f"CONTROLLER://host{i}:9093",) for i in ids})


def make_node(voters: tuple[int, ...], local: int = LOCAL, log: raft_log.RaftLog = raft_log.RaftLog(),
              stored: ElectionState | None = None, now: int = 0) -> raft.RaftNode:
    return raft.new_node(local, frozenset(voters), endpoints(*voters), CONFIG, log, stored, now)


def sends(outputs: tuple[Send, ...], kind: type) -> list[Send]:
    return [s for s in outputs if isinstance(s.message, kind)]


def respond(node: raft.RaftNode, destination: int, response: object, now: int) -> tuple[raft.RaftNode, tuple]:
    """Deliver ``response`` from ``destination`` to the request outstanding to it (echoing its correlation id)."""
    cid, _ = node.inflight[destination]
    return raft.step(node, evolve(response, correlation_id=cid), now)


def follower(voters: tuple[int, ...], epoch: int, leader: int, log: raft_log.RaftLog = raft_log.RaftLog(),
             local: int = LOCAL) -> raft.RaftNode:
    """A node that restarted as Follower of ``leader`` in ``epoch`` (quorum-state file names that leader)."""
    return make_node(voters, local, log, ElectionState(epoch=epoch, leader_id=leader))


def leader(voters: tuple[int, ...], epoch: int, log: raft_log.RaftLog = raft_log.RaftLog(), now: int = 0,
           local: int = LOCAL) -> raft.RaftNode:
    """Elect ``local`` in ``epoch`` (restart as Candidate of epoch-1+1 via the file, then every voter grants)."""
    node = make_node(voters, local, log, ElectionState(epoch=epoch, leader_id=-1, voted_key=ReplicaKey(id=local)), now)
    assert isinstance(node.state, Candidate) and node.state.epoch == epoch
    node, _ = raft.step(node, Tick(), now)
    for voter in voters:
        if voter != local and isinstance(node.state, Candidate):
            node, _ = respond(node, voter, VoteResponse(source=voter, leader_epoch=epoch, vote_granted=True), now)
    assert isinstance(node.state, Leader)
    return node


def vote(replica: int, epoch: int, last_epoch: int, last_offset: int, pre_vote: bool = False) -> VoteRequest:
    return VoteRequest(replica_id=replica, replica_epoch=epoch, last_offset_epoch=last_epoch, last_offset=last_offset, pre_vote=pre_vote, correlation_id=7)


def only_response(outputs: tuple[Send, ...]) -> object:
    responses = [s.message for s in outputs if isinstance(s.message, (VoteResponse, FetchResponse,
                                                                       QuorumEpochResponse))]
    assert len(responses) == 1, outputs
    return responses[0]


def leader_state(voters: frozenset[int], epoch_start: int, local: int = LOCAL) -> Leader:
    candidate = Candidate(epoch=1, election_deadline=0, granted=frozenset(voters))
    return raft_state.transition_to_leader(candidate, local, voters, epoch_start, 0, CONFIG)


# -------------------------------------------------------------------------------------------------
# F. Leader state and high watermark


def test_scenario_67_update_high_watermark_quorum_size_one() -> None:
    state = leader_state(frozenset({LOCAL}), 15)
    state = raft_leader.update_local_end_offset(state, 15)
    assert state.high_watermark == -1
    state = raft_leader.update_local_end_offset(state, 16)
    assert state.high_watermark == 16
    state = raft_leader.update_local_end_offset(state, 20)
    assert state.high_watermark == 20


def test_scenario_68_non_monotonic_local_end_offset_update() -> None:
    state = raft_leader.update_local_end_offset(leader_state(frozenset({LOCAL}), 15), 16)
    with pytest.raises(ValueError, match="non-monotonic"):
        raft_leader.update_local_end_offset(state, 15)


def test_scenario_70_update_high_watermark_quorum_size_three() -> None:
    state = raft_leader.update_local_end_offset(leader_state(frozenset({LOCAL, 1, 2}), 10), 15)
    state = raft_leader.update_replica_state(state, 1, 10, 0, CONFIG)
    state = raft_leader.update_replica_state(state, 2, 10, 0, CONFIG)
    assert state.high_watermark == -1
    state = raft_leader.update_replica_state(state, 2, 15, 0, CONFIG)
    assert state.high_watermark == 15
    state = raft_leader.update_local_end_offset(state, 20)
    assert state.high_watermark == 15
    state = raft_leader.update_replica_state(state, 1, 20, 0, CONFIG)
    assert state.high_watermark == 20


def test_scenario_71_high_watermark_and_new_voters() -> None:
    # A non-voter's fetch does not move the HW.
    state = raft_leader.update_local_end_offset(leader_state(frozenset({LOCAL, 1}), 10), 15)
    state = raft_leader.update_replica_state(state, 1, 10, 0, CONFIG)
    state = raft_leader.update_replica_state(state, 2, 15, 0, CONFIG)
    assert state.high_watermark == -1 and state.observer_states[ReplicaKey(id=2)].end_offset == 15
    # Counting it as a voter raises the HW to its offset (the voter set {0, 1, 2} at 15, 10, 15).
    assert raft_rules.next_high_watermark(-1, (15, 10, 15), 10) == 15
    # A lagging new voter never lowers it: {0, 1} at 15 plus two voters at 10 keeps 15.
    assert raft_rules.next_high_watermark(15, (15, 15, 10, 10), 10) == 15


def test_scenario_73_check_quorum() -> None:
    state = leader_state(frozenset({LOCAL, 1, 2, 3, 4}), 0)
    timeout = CONFIG.check_quorum_timeout_ms
    assert raft_leader.time_until_check_quorum_expires(state, 0) == timeout == 75_000
    now = timeout // 2
    assert raft_leader.time_until_check_quorum_expires(state, now) > 0
    state = raft_leader.update_replica_state(state, 1, 0, now, CONFIG)
    state = raft_leader.update_replica_state(state, 2, 0, now, CONFIG)
    assert raft_leader.time_until_check_quorum_expires(state, now) == timeout
    now += timeout // 2
    assert raft_leader.time_until_check_quorum_expires(state, now) > 0
    state = raft_leader.update_replica_state(state, 1, 0, now, CONFIG)
    state = raft_leader.update_replica_state(state, 5, 0, now, CONFIG)  # an observer
    assert raft_leader.time_until_check_quorum_expires(state, now) > 0
    now += timeout // 2
    assert raft_leader.time_until_check_quorum_expires(state, now) == 0
    assert raft_leader.check_quorum_expired(state, now)


def test_scenario_74_check_quorum_with_one_voter() -> None:
    state = leader_state(frozenset({LOCAL}), 0)
    for now in (0, 10**6, 10**12):
        assert raft_leader.time_until_check_quorum_expires(state, now) == 2**63 - 1
        assert not raft_leader.check_quorum_expired(state, now)


def test_scenario_76_begin_quorum_epoch_timer() -> None:
    state = leader_state(frozenset({LOCAL, 1, 2}), 0)
    assert state.begin_quorum_deadline - 0 == 0
    node = leader((LOCAL, 1, 2), 4, now=100)
    assert node.state.begin_quorum_deadline - 100 == CONFIG.fetch_timeout_ms // 2 == 25_000


# -------------------------------------------------------------------------------------------------
# G. Election states and votes


def test_scenario_77_candidate_vote_counting() -> None:
    assert raft_rules.election_won(1, 1)
    assert raft_rules.election_lost(2, 1, 1) and not raft_rules.election_won(2, 1)
    assert raft_rules.election_won(3, 2)
    assert raft_rules.election_lost(3, 1, 2)
    node = make_node((LOCAL, 1, 2), stored=ElectionState(epoch=3, leader_id=-1, voted_key=ReplicaKey(id=LOCAL)))
    node, _ = raft.step(node, Tick(), 0)
    node, _ = respond(node, 2, VoteResponse(source=2, leader_epoch=3, vote_granted=False), 0)
    assert isinstance(node.state, Candidate) and node.state.rejected == {2}
    node, _ = respond(node, 1, VoteResponse(source=1, leader_epoch=3, vote_granted=True), 0)
    assert isinstance(node.state, Leader) and node.state.epoch == 3


def _prospective(voters: tuple[int, ...], epoch: int = 0) -> raft.RaftNode:
    node = make_node(voters, stored=ElectionState(epoch=epoch))
    node, _ = raft.step(node, Tick(), 20_000)  # election timeout
    assert isinstance(node.state, Prospective)
    node, _ = raft.step(node, Tick(), 20_000)  # pre-votes sent
    return node


def test_scenario_79_prospective_can_change_pre_vote() -> None:
    node = _prospective((LOCAL, 1, 2, 3, 4))
    node, _ = respond(node, 1, VoteResponse(source=1, leader_epoch=0, vote_granted=True), 20_000)
    assert 1 in node.state.granted
    node = evolve(node, inflight=node.inflight.set(1, (99, 20_000)))
    node, _ = raft.step(node, VoteResponse(source=1, leader_epoch=0, vote_granted=False, correlation_id=99), 20_000)
    assert 1 not in node.state.granted and 1 in node.state.rejected
    node = evolve(node, inflight=node.inflight.set(1, (100, 20_000)))
    node, _ = raft.step(node, VoteResponse(source=1, leader_epoch=0, vote_granted=True, correlation_id=100), 20_000)
    assert 1 in node.state.granted and 1 not in node.state.rejected


def test_scenario_80_unattached_grants_vote_without_voted_key() -> None:
    node = make_node((LOCAL, 1, 2), log=log_of_epochs((1, 1, 2)), stored=ElectionState(epoch=5))
    for candidate in (ReplicaKey(id=1), ReplicaKey(id=10)):
        for pre_vote in (True, False):
            assert raft.can_grant_vote(node, candidate, True, pre_vote)
            assert not raft.can_grant_vote(node, candidate, False, pre_vote)
    # Through a request: a candidate with a shorter log in the same last epoch is not up to date.
    _, out = raft.step(node, vote(1, 6, 2, 2), 0)
    assert only_response(out).vote_granted is False
    _, out = raft.step(node, vote(10, 6, 2, 3), 0)
    assert only_response(out).vote_granted is True


def test_scenario_82_unattached_with_leader_grants_only_pre_votes() -> None:
    node = make_node((LOCAL, 1, 2, 3), stored=ElectionState(epoch=5, leader_id=3))
    node = evolve(node, state=Unattached(epoch=5, election_deadline=10_000, leader_id=3))
    for candidate in (ReplicaKey(id=1), ReplicaKey(id=3)):
        assert raft.can_grant_vote(node, candidate, True, True)
        assert not raft.can_grant_vote(node, candidate, False, True)
        assert not raft.can_grant_vote(node, candidate, True, False)
        assert not raft.can_grant_vote(node, candidate, False, False)


def test_scenario_83_follower_pre_votes_until_first_fetch() -> None:
    node = follower((LOCAL, 1, 2), 5, 1)
    assert isinstance(node.state, Follower)
    assert raft.can_grant_vote(node, ReplicaKey(id=2), True, True)
    assert not raft.can_grant_vote(node, ReplicaKey(id=2), False, True)
    assert not raft.can_grant_vote(node, ReplicaKey(id=2), True, False)
    node, _ = raft.step(node, Tick(), 0)  # fetch sent
    node, _ = respond(node, 1, FetchResponse(source=1, leader_epoch=5, leader_id=1, high_watermark=0), 1)
    assert node.state.has_fetched
    assert not raft.can_grant_vote(node, ReplicaKey(id=2), True, True)
    assert not raft.can_grant_vote(node, ReplicaKey(id=2), True, False)


def test_scenario_85_resigned_state() -> None:
    node = make_node((LOCAL, 1), stored=ElectionState(epoch=5, leader_id=LOCAL))
    state = node.state
    assert isinstance(state, Resigned)
    assert raft_state.election_state(state, LOCAL) == ElectionState(epoch=5, leader_id=LOCAL)
    assert state.unacked_voters == {1}
    node, out = raft.step(node, Tick(), 0)
    assert [s.destination for s in sends(out, EndQuorumEpochRequest)] == [1]
    node, _ = respond(node, 1, QuorumEpochResponse(source=1, api="EndQuorumEpoch", leader_epoch=5, leader_id=LOCAL), 10)
    assert node.state.unacked_voters == frozenset()
    assert state.election_deadline - 5_000 == 5_000  # the election timer counts down
    assert raft.can_grant_vote(node, ReplicaKey(id=1), True, True)
    assert not raft.can_grant_vote(node, ReplicaKey(id=1), False, True)
    assert not raft.can_grant_vote(node, ReplicaKey(id=1), True, False)


def test_scenario_86_initialize_primordial_epoch() -> None:
    """QuorumStateTest.testInitializePrimordialEpoch: the quorum state alone (``QuorumState.initialize``)."""
    state = raft_state.initial_state(ElectionState(epoch=0), LOCAL, frozenset({LOCAL}), 0, endpoints(LOCAL), 0, CONFIG,
                                     0)
    assert state == Unattached(epoch=0, election_deadline=10_000)
    prospective = raft_state.transition_to_prospective(state, LOCAL, True, 20_000)
    candidate = raft_state.transition_to_candidate(prospective, LOCAL, 20_000)
    assert candidate.epoch == 1 and candidate.granted == {LOCAL} and raft_rules.election_won(1, 1)


def test_initialize_single_member_quorum() -> None:
    """KafkaRaftClientTest.testInitializeSingleMemberQuorum: ``KafkaRaftClient.initialize`` makes the only voter the
    Leader of epoch 1 before any timer runs; its LeaderChange record waits in the accumulator for the first poll
    (``pollLeader``: ``maybeAppendBatches``; Kafka's testInitializeAsLeaderFromStateStoreSingleMemberQuorum polls
    until it is written)."""
    node = make_node((LOCAL,))
    assert isinstance(node.state, Leader) and node.state.epoch == 1 and node.state.local_id == LOCAL
    assert (node.stored.epoch, node.stored.leader_id) == (1, LOCAL)
    assert node.log.end_offset == 0 and isinstance(node.state.unwritten[0][0], LeaderChangeMessage)
    node, _ = raft.step(node, Tick(), 0)
    assert node.log.end_offset == 1 and node.log.entries[0].epoch == 1 and node.state.unwritten == ()


def test_append_behind_the_unwritten_leader_change_lingers_one_poll() -> None:
    """Not one of Kafka's tests (tests/test_kafka_raft_regressions.py runs it against Kafka): the only voter's
    LeaderChange waits in the accumulator after ``initialize``; an append goes after it (``BatchAccumulator.append``
    returns offset 1), and the poll that writes the LeaderChange leaves the appended batch for the next poll (its
    ``drain`` finds the drain ``appendControlMessages`` forced already finished)."""
    node = make_node((LOCAL,))
    assert raft.append_offset(node, ("r1",)) == 1
    node, _ = raft.step(node, Append(records=("r1",)), 0)
    assert [e.record for e in node.log.entries] == [node.log.entries[0].record] and node.state.lingering == ("r1",)
    assert isinstance(node.log.entries[0].record, LeaderChangeMessage) and node.state.high_watermark == 1
    assert raft.append_offset(node, ("r2",)) == 2
    node, _ = raft.step(node, Tick(), 1)
    assert [e.record for e in node.log.entries[1:]] == ["r1"] and node.state.high_watermark == 2
    assert node.state.lingering == ()


def test_restarted_lone_leader_writes_its_leader_change_at_its_first_poll() -> None:
    """Not one of Kafka's tests (tests/test_kafka_raft_regressions.py runs it against Kafka): a lone leader holding a
    snapshot restarts Leader of the next epoch (``KafkaRaftClient.initialize``) with its log as it was and no high
    watermark; its LeaderChange is written by the first poll after (``pollLeader``: ``maybeAppendBatches``)."""
    node, _ = raft.step(make_node((LOCAL,)), Tick(), 0)
    node, _ = raft.step(node, Append(records=("a", "b")), 0)
    node, _ = raft.step(node, CreateSnapshot(end_offset=3, epoch=1, size=100), 0)
    node = raft.restart(node, 10)
    assert isinstance(node.state, Leader) and node.state.epoch == 2
    assert node.log.end_offset == 3 and node.state.high_watermark == -1 and node.log.snapshots
    node, _ = raft.step(node, Tick(), 10)
    assert node.log.end_offset == 4 and node.log.entries[-1].epoch == 2 and node.state.high_watermark == 4
    assert isinstance(node.log.entries[-1].record, LeaderChangeMessage)


def test_initialize_as_candidate_and_only_voter() -> None:
    """KafkaRaftClientTest.testInitializeAsCandidateAndOnlyVoter: a stored vote for itself in epoch 2 makes a
    Candidate, which as the only voter is Leader of epoch 2 at once (``onBecomeCandidate``)."""
    node = make_node((LOCAL,), stored=ElectionState(epoch=2, leader_id=-1, voted_key=ReplicaKey(id=LOCAL)))
    assert isinstance(node.state, Leader) and node.state.epoch == 2


def test_initialize_as_resigned_only_voter() -> None:
    """KafkaRaftClient.initialize on the only voter that led epoch 3 before a restart: Resigned by the quorum state,
    it starts the next election at once and leads epoch 4."""
    node = make_node((LOCAL,), stored=ElectionState(epoch=3, leader_id=LOCAL, voted_key=ReplicaKey(id=LOCAL)))
    assert isinstance(node.state, Leader) and node.state.epoch == 4


def test_scenario_88_initialize_as_resigned_candidate() -> None:
    node = make_node((LOCAL, 1, 2), stored=ElectionState(epoch=5, leader_id=-1, voted_key=ReplicaKey(id=LOCAL)))
    assert isinstance(node.state, Candidate) and node.state.epoch == 5
    assert node.state.granted == {LOCAL} and node.state.rejected == frozenset()
    _, out = raft.step(node, Tick(), 0)
    assert sorted(s.destination for s in sends(out, VoteRequest)) == [1, 2]


def test_scenario_89_only_prospective_becomes_candidate() -> None:
    unattached = Unattached(epoch=0, election_deadline=10_000)
    with pytest.raises(IllegalTransition, match="only Prospective"):
        raft_state.transition_to_candidate(unattached, LOCAL, 0)
    candidate = Candidate(epoch=1, election_deadline=10_000, granted=frozenset({LOCAL}))
    with pytest.raises(IllegalTransition, match="only Prospective"):
        raft_state.transition_to_candidate(candidate, LOCAL, 0)
    with pytest.raises(IllegalTransition, match="not a majority"):
        raft_state.transition_to_leader(candidate, LOCAL, frozenset({LOCAL, 1, 2}), 0, 0, CONFIG)


def test_scenario_91_resigned_to_follower_in_same_epoch() -> None:
    resigned = Resigned(epoch=5, local_id=LOCAL, election_deadline=10_000, unacked_voters=frozenset({1}))
    with pytest.raises(IllegalTransition, match="cannot follow itself"):
        raft_state.transition_to_follower(resigned, LOCAL, 5, LOCAL, ("h",), 0)
    follower_state = raft_state.transition_to_follower(resigned, LOCAL, 5, 1, ("h1",), 0)
    assert isinstance(follower_state, Follower) and follower_state.epoch == 5 and follower_state.leader_id == 1


# -------------------------------------------------------------------------------------------------
# H. KafkaRaftClient request handling


def test_scenario_92_reject_votes_from_same_epoch_after_resigning() -> None:
    node = make_node((LOCAL, 1, 2), log=log_of_epochs((1, 1)), stored=ElectionState(epoch=2, leader_id=LOCAL))
    node, out = raft.step(node, vote(1, 2, 1, 2), 0)
    response = only_response(out)
    assert (response.partition_error, response.leader_epoch, response.leader_id, response.vote_granted) == (
        Errors.NONE, 2, LOCAL, False)
    assert isinstance(node.state, Resigned)


def test_scenario_94_initialize_as_resigned_leader_from_state_store() -> None:
    node = make_node((LOCAL, 1, 2), stored=ElectionState(epoch=2, leader_id=LOCAL))
    assert isinstance(node.state, Resigned) and node.state.epoch == 2
    with pytest.raises(NotLeaderError):
        raft.step(node, Append(records=("x",)), 0)
    node, out = raft.step(node, Tick(), 0)
    assert sorted(s.destination for s in sends(out, EndQuorumEpochRequest)) == [1, 2]
    node, _ = raft.step(node, Tick(), 10_000)
    assert isinstance(node.state, Unattached) and node.state.epoch == 3
    assert max(0, node.state.election_deadline - 10_000) == 0


def test_scenario_95_handle_valid_vote_request_as_follower() -> None:
    node = make_node((LOCAL, 1, 2), stored=ElectionState(epoch=2))
    node, out = raft.step(node, vote(1, 2, 1, 1), 0)
    assert only_response(out).vote_granted is True
    assert node.state.voted_key == ReplicaKey(id=1) and node.stored == ElectionState(epoch=2, leader_id=-1, voted_key=ReplicaKey(id=1))


def test_scenario_97_handle_invalid_vote_request_with_older_epoch() -> None:
    node = make_node((LOCAL, 1, 2), stored=ElectionState(epoch=2))
    node, out = raft.step(node, vote(1, 1, 0, 0), 0)
    response = only_response(out)
    assert (response.partition_error, response.leader_epoch, response.leader_id, response.vote_granted) == (
        Errors.FENCED_LEADER_EPOCH, 2, -1, False)
    assert node.state.voted_key is None and node.stored == ElectionState(epoch=2)


def test_scenario_98_invalid_vote_request() -> None:
    node = follower((LOCAL, 1, 2), 5, 1)
    for request in (vote(2, 6, 0, -5), vote(2, 6, -1, 0), vote(2, 6, 6, 0)):
        after, out = raft.step(node, request, 0)
        response = only_response(out)
        assert (response.partition_error, response.leader_epoch, response.leader_id, response.vote_granted) == (
            Errors.INVALID_REQUEST, 5, 1, False)
        assert after.state == node.state


def test_scenario_100_leader_accepts_vote_from_observer() -> None:
    node = leader((LOCAL, 1, 2), 4)
    _, out = raft.step(node, vote(10, 3, 0, 0), 0)
    assert only_response(out).partition_error == Errors.FENCED_LEADER_EPOCH
    after, out = raft.step(node, vote(10, 4, 0, 0), 0)
    response = only_response(out)
    assert (response.partition_error, response.vote_granted) == (Errors.NONE, False)
    assert isinstance(after.state, Leader)


def test_scenario_101_leader_immediately_sends_diverging_epoch() -> None:
    log = log_of_epochs((1, 1, 1, 3, 3, 3, 5, 5, 5))
    node = leader((LOCAL, 1, 2), 7, log)
    request = FetchRequest(replica_id=1, current_leader_epoch=7, fetch_offset=6, last_fetched_epoch=2, max_wait_ms=500, correlation_id=3)
    node, out = raft.step(node, request, 0)
    response = only_response(out)
    assert (response.partition_error, response.diverging_epoch, response.records) == (Errors.NONE, (1, 3), ())
    assert node.parked == ()


def test_scenario_103_follower_log_reconciliation() -> None:
    node = follower((LOCAL, 1, 2), 5, 1, log_of_epochs((3, 3, 3)))
    node, out = raft.step(node, Tick(), 0)
    request = sends(out, FetchRequest)[0].message
    assert (request.fetch_offset, request.last_fetched_epoch) == (3, 3)
    node, out = respond(node, 1, FetchResponse(source=1, leader_epoch=5, leader_id=1, diverging_epoch=(3, 2)), 1)
    assert node.log.end_offset == 2
    request = sends(out, FetchRequest)[0].message
    assert (request.fetch_offset, request.last_fetched_epoch) == (2, 3)


def test_scenario_104_candidate_waits_rest_of_election_timeout_after_loss() -> None:
    node = make_node((LOCAL, 1), stored=ElectionState(epoch=1, leader_id=-1, voted_key=ReplicaKey(id=LOCAL)))
    node, _ = raft.step(node, Tick(), 0)
    node, _ = respond(node, 1, VoteResponse(source=1, leader_epoch=1, vote_granted=False), 0)
    assert isinstance(node.state, Candidate) and node.state.rejected == {1}
    node, out = raft.step(node, Tick(), 9_999)
    assert isinstance(node.state, Candidate) and out == ()
    node, _ = raft.step(node, Tick(), 10_000)
    assert isinstance(node.state, Prospective) and node.state.epoch == 1
    assert node.state.voted_key == ReplicaKey(id=LOCAL)
    node, out = raft.step(node, Tick(), 10_000)
    request = sends(out, VoteRequest)[0].message
    assert (request.pre_vote, request.replica_epoch) == (True, 1)


def test_scenario_106_leader_resigns_without_fetches_from_majority() -> None:
    node = leader((LOCAL, 1, 2), 2)
    end = node.log.end_offset
    timeout = CONFIG.check_quorum_timeout_ms
    node, _ = raft.step(node, FetchRequest(replica_id=1, current_leader_epoch=2, fetch_offset=end, last_fetched_epoch=2), timeout // 2)
    node, _ = raft.step(node, Tick(), timeout)
    assert isinstance(node.state, Leader)
    node, _ = raft.step(node, FetchRequest(replica_id=2, current_leader_epoch=2, fetch_offset=end, last_fetched_epoch=2), timeout)
    node, _ = raft.step(node, Tick(), timeout + timeout // 2)
    assert isinstance(node.state, Leader)
    node, _ = raft.step(node, FetchRequest(replica_id=3, current_leader_epoch=2, fetch_offset=end, last_fetched_epoch=2), timeout + timeout // 2)  # observer 3 only
    node, out = raft.step(node, Tick(), 2 * timeout)
    assert isinstance(node.state, Resigned) and node.state.epoch == 2


def test_scenario_107_initialize_as_unattached_and_become_leader() -> None:
    node = make_node((LOCAL, 1))
    assert node.state == Unattached(epoch=0, election_deadline=10_000)
    node, out = raft.step(node, Tick(), 0, bootstrap=1)  # one Fetch, to the bootstrap server the draw picks
    assert [s.destination for s in sends(out, FetchRequest)] == [1]
    node, _ = raft.step(node, Tick(), 10_000)
    assert isinstance(node.state, Prospective)
    node, out = raft.step(node, Tick(), 10_000)
    assert sends(out, VoteRequest)[0].message.pre_vote
    node, out = respond(node, 1, VoteResponse(source=1, leader_epoch=0, vote_granted=True), 10_000)
    assert isinstance(node.state, Candidate) and node.state.epoch == 1
    assert not sends(out, VoteRequest)[0].message.pre_vote
    node, out = respond(node, 1, VoteResponse(source=1, leader_epoch=1, vote_granted=True), 10_000)
    assert isinstance(node.state, Leader) and node.state.epoch == 1
    assert node.log.end_offset == 1
    assert node.log.entries[0] == LogEntry(epoch=1, record=LeaderChangeMessage(leader_id=LOCAL, voters=(LOCAL, 1), granting_voters=(LOCAL, 1)))
    assert [s.destination for s in sends(out, BeginQuorumEpochRequest)] == [1]


def test_scenario_109_handle_pre_vote_request_as_follower() -> None:
    node = follower((LOCAL, 1, 2), 2, 1, log_of_epochs((2,)))
    for requester in (2, 10):
        assert only_response(raft.step(node, vote(requester, 2, 2, 1, True), 0)[1]).vote_granted is True
    fetched, _ = raft.step(node, Tick(), 0)
    fetched, _ = respond(fetched, 1, FetchResponse(source=1, leader_epoch=2, leader_id=1), 1)
    for requester in (2, 10):
        assert only_response(raft.step(fetched, vote(requester, 2, 2, 1, True), 1)[1]).vote_granted is False
    after, out = raft.step(fetched, vote(2, 3, 2, 1, True), 1)
    response = only_response(out)
    assert isinstance(after.state, Unattached) and after.state.epoch == 3 and after.state.voted_key is None
    assert (response.leader_epoch, response.leader_id, response.vote_granted) == (3, -1, True)


def test_scenario_110_invalid_pre_vote_request_with_older_epoch() -> None:
    node = make_node((LOCAL, 1, 2), stored=ElectionState(epoch=2))
    _, out = raft.step(node, vote(1, 1, 0, 0, True), 0)
    assert only_response(out).partition_error == Errors.FENCED_LEADER_EPOCH


def test_scenario_112_invalid_pre_vote_request() -> None:
    node = follower((LOCAL, 1, 2), 5, 1)
    for request in (vote(2, 5, 0, -5, True), vote(2, 5, -1, 0, True), vote(2, 5, 6, 0, True)):
        after, out = raft.step(node, request, 0)
        assert only_response(out).partition_error == Errors.INVALID_REQUEST
        assert after.state == node.state
    _, out = raft.step(node, vote(2, 5, 5, 0, True), 0)
    assert only_response(out).partition_error == Errors.NONE


def test_scenario_113_pre_vote_not_supported_by_remote() -> None:
    node = _prospective((LOCAL, 1, 2), epoch=5)
    cid2, _ = node.inflight[2]
    node, _ = respond(node, 1, VoteResponse(source=1, error=Errors.UNSUPPORTED_VERSION), 20_000)
    assert isinstance(node.state, Candidate) and node.state.epoch == 6
    after, _ = raft.step(node, VoteResponse(source=2, leader_epoch=5, vote_granted=True, correlation_id=cid2), 20_000)
    assert after.state == node.state


def test_scenario_115_prospective_with_leader_transitions_to_follower() -> None:
    base = follower((LOCAL, 1, 2), 5, 1)
    node, _ = raft.step(base, Tick(), 50_000)
    assert isinstance(node.state, Prospective) and node.state.leader_id == 1
    timed_out, _ = raft.step(node, Tick(), 60_000)
    assert isinstance(timed_out.state, Follower) and timed_out.state.leader_id == 1
    node, _ = raft.step(node, Tick(), 50_000)
    for voter in (1, 2):
        node, _ = respond(node, voter, VoteResponse(source=voter, leader_epoch=5, leader_id=1, vote_granted=False), 50_000)
    assert isinstance(node.state, Follower) and (node.state.epoch, node.state.leader_id) == (5, 1)
    prospective, _ = raft.step(base, Tick(), 50_000)
    prospective, _ = raft.step(prospective, Tick(), 50_000)
    after, _ = respond(prospective, 2, VoteResponse(source=2, partition_error=Errors.FENCED_LEADER_EPOCH, leader_epoch=6,
                                                     leader_id=2), 50_000)
    assert isinstance(after.state, Follower) and (after.state.epoch, after.state.leader_id) == (6, 2)


# -------------------------------------------------------------------------------------------------
# I. quorum-state file


def test_scenario_116_write_read_voted_candidate() -> None:
    election = ElectionState(epoch=2, leader_id=-1, voted_key=ReplicaKey(id=1, directory_id="ZqW7bLZlTFadOEVYnHOYhw"))
    data = read_quorum_state(write_quorum_state(election, 1, frozenset({0, 1, 2})))
    assert data.election_state() == election and data.current_voters is None
    data = read_quorum_state(write_quorum_state(election, 0, frozenset({0, 1, 2})))
    assert data.election_state() == ElectionState(epoch=2, leader_id=-1, voted_key=ReplicaKey(id=1))
    assert data.current_voters == (0, 1, 2)


def test_scenario_118_supported_versions() -> None:
    for version in (0, 1):
        text = write_quorum_state(ElectionState(epoch=3, leader_id=1), version, frozenset({1}))
        assert json.loads(text)["data_version"] == version
        assert read_quorum_state(text).election_state() == ElectionState(epoch=3, leader_id=1)
    v1 = json.loads(write_quorum_state(ElectionState(epoch=3, leader_id=1), 1, frozenset({1})))
    assert set(v1) == {"leaderId", "leaderEpoch", "votedId", "votedDirectoryId", "data_version"}
    for bad, key in ((dict(v1, data_version=2), "data_version"), ({k: v for k, v in v1.items() if k != "data_version"},
                                                                  "data_version"),
                     ({k: v for k, v in v1.items() if k != "votedDirectoryId"}, "votedDirectoryId"),
                     (dict(v1, leaderEpoch="3"), "leaderEpoch")):
        with pytest.raises(QuorumStateFileError, match=f"quorum-state: key '{key}'"):
            read_quorum_state(json.dumps(bad))


# -------------------------------------------------------------------------------------------------
# Further rules of rules §3 that the numbered scenarios do not pin down


def test_observer_never_starts_an_election() -> None:
    node = make_node((1, 2, 3), local=4)
    assert node.state.election_deadline == raft_state.NEVER
    node, out = raft.step(node, Tick(), 10**9)
    assert isinstance(node.state, Unattached)
    assert [s.destination for s in sends(out, FetchRequest)] == [1]
    with pytest.raises(IllegalTransition, match="not a voter"):
        raft_state.transition_to_prospective(node.state, 4, False, 0)


def test_last_fetched_epoch_survives_empty_fetch_response() -> None:
    node = follower((LOCAL, 1, 2), 5, 1, log_of_epochs((3, 3, 3)))
    node, _ = raft.step(node, Tick(), 0)
    node, out = respond(node, 1, FetchResponse(source=1, leader_epoch=5, leader_id=1, high_watermark=2), 1)
    request = sends(out, FetchRequest)[0].message
    assert (request.fetch_offset, request.last_fetched_epoch, node.state.high_watermark) == (3, 3, 2)


def test_check_quorum_when_leader_is_not_a_voter() -> None:
    voters = frozenset({1, 2, 3})
    state = Leader(epoch=4, local_id=LOCAL, epoch_start_offset=0, voter_states=FrozenMap({v: raft_state.ReplicaState() for v in voters}), granting_voters=frozenset(), check_quorum_deadline=75_000, begin_quorum_deadline=0)
    state = raft_leader.update_replica_state(state, 1, 0, 10, CONFIG)
    assert state.check_quorum_deadline == 75_000  # one voter of three is no majority without the leader
    state = raft_leader.update_replica_state(state, 2, 0, 10, CONFIG)
    assert state.check_quorum_deadline == 10 + 75_000
    with_leader = raft_leader.update_replica_state(leader_state(frozenset({LOCAL, 1, 2}), 0), 1, 0, 10, CONFIG)
    assert with_leader.check_quorum_deadline == 10 + 75_000


def test_follower_truncation_below_high_watermark_is_fatal() -> None:
    node = follower((LOCAL, 1, 2), 5, 1, log_of_epochs((3, 3, 3)))
    node, _ = raft.step(node, Tick(), 0)
    node, _ = respond(node, 1, FetchResponse(source=1, leader_epoch=5, leader_id=1, high_watermark=3), 1)
    with pytest.raises(raft.RaftFatalError, match="below the high watermark"):
        respond(node, 1, FetchResponse(source=1, leader_epoch=5, leader_id=1, diverging_epoch=(3, 2)), 2)


def test_restart_loses_unflushed_records_of_an_observer() -> None:
    node = follower((1, 2, 3), 5, 1, local=4)
    node, _ = raft.step(node, Tick(), 0)
    node, _ = respond(node, 1, FetchResponse(source=1, leader_epoch=5, leader_id=1, records=(LogEntry(epoch=5, record="a"),)), 1)
    assert node.log.end_offset == 1 and node.log.flushed_end_offset == 0
    assert raft.restart(node, 2).log.end_offset == 0
    voter = follower((LOCAL, 1, 2), 5, 1)
    voter, _ = raft.step(voter, Tick(), 0)
    voter, _ = respond(voter, 1, FetchResponse(source=1, leader_epoch=5, leader_id=1, records=(LogEntry(epoch=5, record="a"),)), 1)
    assert raft.restart(voter, 2).log.end_offset == 1


def test_describe_quorum() -> None:
    from kraftspec.reference.raft_messages import DescribeQuorumRequest
    node = leader((LOCAL, 1, 2), 3)
    node, _ = raft.step(node, FetchRequest(replica_id=1, current_leader_epoch=3, fetch_offset=1, last_fetched_epoch=3), 5)
    node, _ = raft.step(node, FetchRequest(replica_id=7, current_leader_epoch=3, fetch_offset=0, last_fetched_epoch=0), 6)
    _, out = raft.step(node, DescribeQuorumRequest(source=99), 10)
    response = out[0].message
    assert (response.partition_error, response.leader_id, response.leader_epoch, response.high_watermark) == (
        Errors.NONE, LOCAL, 3, 1)
    assert [(r.replica_id, r.log_end_offset, r.last_fetch_timestamp) for r in response.current_voters] == [
        (LOCAL, 1, 10), (1, 1, 5), (2, -1, -1)]
    assert [(r.replica_id, r.log_end_offset) for r in response.observers] == [(7, 0)]
    assert response.nodes == tuple(sorted(endpoints(LOCAL, 1, 2).items()))
    _, out = raft.step(node, DescribeQuorumRequest(source=99, version=1), 10)
    assert out[0].message.nodes == ()
    _, out = raft.step(node, DescribeQuorumRequest(source=99), 6 + raft_leader.OBSERVER_SESSION_TIMEOUT_MS)
    assert out[0].message.observers == ()
    _, out = raft.step(follower((LOCAL, 1, 2), 3, 1), DescribeQuorumRequest(source=99), 0)
    assert (out[0].message.error, out[0].message.partition_error) == (Errors.NONE, Errors.NOT_LEADER_OR_FOLLOWER)


def test_begin_and_end_quorum_epoch() -> None:
    node = make_node((LOCAL, 1, 2), stored=ElectionState(epoch=3))
    node, out = raft.step(node, BeginQuorumEpochRequest(leader_id=1, leader_epoch=4, correlation_id=5), 0)
    assert isinstance(node.state, Follower) and (node.state.epoch, node.state.leader_id) == (4, 1)
    assert only_response(out).partition_error == Errors.NONE
    _, out = raft.step(node, BeginQuorumEpochRequest(leader_id=2, leader_epoch=3), 0)
    assert only_response(out).partition_error == Errors.FENCED_LEADER_EPOCH
    after, _ = raft.step(node, EndQuorumEpochRequest(leader_id=1, leader_epoch=4, preferred_successors=(2, LOCAL)), 100)
    assert after.state.fetch_deadline == 100 + raft_rules.end_quorum_epoch_backoff(1, 2, 100)
    first, _ = raft.step(node, EndQuorumEpochRequest(leader_id=1, leader_epoch=4, preferred_successors=(LOCAL, 2)), 100)
    assert isinstance(first.state, Prospective)  # backoff 0: campaigns on this very poll


def test_control_record_keys() -> None:
    from kraftspec.reference.raft_records import ControlRecordType, control_record_key, parse_control_record_key
    key = control_record_key(ControlRecordType.LEADER_CHANGE)
    assert key == b"\x00\x00\x00\x02"
    assert parse_control_record_key(key) is ControlRecordType.LEADER_CHANGE
    assert parse_control_record_key(b"\x00\x03\x00\x06extra") is ControlRecordType.KRAFT_VOTERS  # newer key version
    assert parse_control_record_key(b"\x00\x00\x00\x63") is ControlRecordType.UNKNOWN
    with pytest.raises(ValueError, match="at least 4"):
        parse_control_record_key(b"\x00\x00\x02")
    assert LeaderChangeMessage(leader_id=1, voters=(1, 2, 3), granting_voters=(1, 2)).record_type is ControlRecordType.LEADER_CHANGE


def test_quorum_state_file_version_0_errors_name_the_key() -> None:
    v0 = json.loads(write_quorum_state(ElectionState(epoch=3, leader_id=1), 0, frozenset({1, 2})))
    assert v0 == {"clusterId": "", "leaderId": 1, "leaderEpoch": 3, "votedId": -1, "appliedOffset": 0,
                  "currentVoters": [{"voterId": 1}, {"voterId": 2}], "data_version": 0}
    for bad, key in ((dict(v0, currentVoters=[{"id": 1}]), "currentVoters"),
                     ({k: v for k, v in v0.items() if k != "appliedOffset"}, "appliedOffset"),
                     (dict(v0, clusterId=5), "clusterId")):
        with pytest.raises(QuorumStateFileError, match=f"my-dir/quorum-state: key '{key}'"):
            read_quorum_state(json.dumps(bad), "my-dir/quorum-state")
    with pytest.raises(QuorumStateFileError, match="not valid JSON"):
        read_quorum_state("{", "quorum-state")


# -------------------------------------------------------------------------------------------------
# Fetching without a leader, or from a leader that does not answer (KafkaRaftClient.maybeSendFetchToAnyBootstrap,
# maybeSendFetchToBestNode; RequestManager.findReadyBootstrapServer, hasAnyInflightRequest)


def fetch_destinations(outputs: tuple[Send, ...]) -> list[int]:
    return [s.destination for s in sends(outputs, FetchRequest)]


def test_unattached_voter_fetches_one_bootstrap_server_at_a_time() -> None:
    node = make_node((LOCAL, 1, 2))
    node, out = raft.step(node, Tick(), 0, bootstrap=2)
    assert fetch_destinations(out) == [2]  # one server, the one at the drawn start index; not every voter
    node, out = raft.step(node, Tick(), 4_999, bootstrap=1)
    assert fetch_destinations(out) == []  # nothing while a request is in flight
    late = FetchResponse(source=2, partition_error=Errors.NOT_LEADER_OR_FOLLOWER, leader_epoch=0,
                         correlation_id=node.inflight[2][0])
    node, out = raft.step(node, Tick(), CONFIG.request_timeout_ms, bootstrap=4)
    assert fetch_destinations(out) == [1] and 2 not in node.inflight  # timed out: forgotten, the next server asked
    assert raft.step(node, late, 5_001)[0].inflight == node.inflight  # the timed-out request's answer is dropped
    node, out = respond(node, 1, FetchResponse(source=1, partition_error=Errors.NOT_LEADER_OR_FOLLOWER, leader_epoch=0),
                        5_001)  # answered: the poll after it asks again, from the start index 0 of this step
    assert isinstance(node.state, Unattached)
    assert fetch_destinations(out) == [LOCAL]  # the bootstrap servers are every voter, the local one included


def test_unattached_observer_follows_the_leader_a_bootstrap_server_names() -> None:
    node = make_node((1, 2, 3), local=4)
    node, out = raft.step(node, Tick(), 0, bootstrap=1)
    assert fetch_destinations(out) == [2]
    node, out = respond(node, 2, FetchResponse(source=2, partition_error=Errors.NOT_LEADER_OR_FOLLOWER, leader_epoch=5,
                                               leader_id=3, leader_endpoints=("CONTROLLER://host3:9093",)), 1)
    assert isinstance(node.state, Follower) and (node.state.epoch, node.state.leader_id) == (5, 3)
    assert fetch_destinations(out) == [3]


def test_observer_keeps_fetching_its_leader_after_the_fetch_timeout() -> None:
    node = follower((1, 2, 3), 5, 1, local=4)
    node, out = raft.step(node, Tick(), CONFIG.fetch_timeout_ms, bootstrap=1)
    assert isinstance(node.state, Follower) and fetch_destinations(out) == [1]  # KAFKA-19354: no bootstrap fan-out


def test_follower_fetches_a_bootstrap_server_when_the_leaders_fetch_times_out() -> None:
    node = follower((LOCAL, 1, 2), 5, 1)
    node, out = raft.step(node, Tick(), 0)
    assert fetch_destinations(out) == [1]
    node, out = raft.step(node, Tick(), CONFIG.request_timeout_ms, bootstrap=2)
    assert fetch_destinations(out) == [2] and set(node.inflight) == {2}
    node, out = raft.step(node, Tick(), CONFIG.request_timeout_ms + 1)
    assert fetch_destinations(out) == []  # not the leader while the bootstrap server's answer is awaited
    node, out = respond(node, 2, FetchResponse(source=2, partition_error=Errors.NOT_LEADER_OR_FOLLOWER, leader_epoch=5,
                                               leader_id=1), CONFIG.request_timeout_ms + 2)
    assert isinstance(node.state, Follower) and fetch_destinations(out) == [1]


def test_begin_quorum_epoch_is_not_resent_while_one_is_outstanding() -> None:
    node = leader((LOCAL, 1, 2), 2)
    node = evolve(node, config=evolve(CONFIG, request_timeout_ms=10 * CONFIG.fetch_timeout_ms))
    period = CONFIG.begin_quorum_epoch_timeout_ms
    node, out = respond(node, 1, QuorumEpochResponse(source=1, api="BeginQuorumEpoch", leader_epoch=2, leader_id=LOCAL), 1)
    node, out = raft.step(node, Tick(), period)
    assert [s.destination for s in sends(out, BeginQuorumEpochRequest)] == [1]  # voter 2's first is outstanding


# -------------------------------------------------------------------------------------------------
# J. Graceful shutdown and resignation (KafkaRaftClientTest, by name; one step is Kafka's input and its poll)


def shutdown_outcome(node: raft.RaftNode) -> str | None:
    """The graceful shutdown's outcome: None while it runs (``isShuttingDown``), else completed or timed_out."""
    assert node.shutdown is not None
    return node.shutdown.outcome


def test_leader_graceful_shutdown() -> None:
    """testLeaderGracefulShutdown: the leader resigns at the poll after ``shutdown``, sends EndQuorumEpoch at the next,
    still grants votes, and completes once a new leader is known."""
    node = leader((LOCAL, 1), 1)
    node, out = raft.step(node, Shutdown(timeout_ms=5_000), 0)
    assert isinstance(node.state, Resigned) and shutdown_outcome(node) is None and out == ()
    node, out = raft.step(node, Tick(), 0)
    assert [s.destination for s in sends(out, EndQuorumEpochRequest)] == [1] and shutdown_outcome(node) is None
    node, out = raft.step(node, vote(1, 2, 1, 1), 0)
    assert only_response(out).vote_granted and shutdown_outcome(node) is None
    node, out = raft.step(node, BeginQuorumEpochRequest(leader_id=1, leader_epoch=2), 0)
    assert shutdown_outcome(node) == raft_state.SHUTDOWN_COMPLETED
    with pytest.raises(ShutDownError):  # the driver polls a finished client no more
        raft.step(node, Tick(), 1)


def test_leader_graceful_shutdown_timeout() -> None:
    """testLeaderGracefulShutdownTimeout: no new leader before the shutdown timer expires: it fails with a timeout."""
    node = leader((LOCAL, 1), 1)
    node, _ = raft.step(node, Shutdown(timeout_ms=5_000), 0)
    node, out = raft.step(node, Tick(), 0)
    assert [s.destination for s in sends(out, EndQuorumEpochRequest)] == [1]
    node, _ = raft.step(node, Tick(), 4_999)
    assert shutdown_outcome(node) is None
    node, out = raft.step(node, Tick(), 5_000)
    assert shutdown_outcome(node) == raft_state.SHUTDOWN_TIMED_OUT and out == ()


def test_follower_graceful_shutdown() -> None:
    """testFollowerGracefulShutdown: a follower knows its leader, so the first poll completes the shutdown."""
    node, _ = raft.step(follower((LOCAL, 1), 5, 1), Tick(), 0)
    node, out = raft.step(node, Shutdown(timeout_ms=5_000), 0)
    assert shutdown_outcome(node) == raft_state.SHUTDOWN_COMPLETED and out == ()


def test_observer_graceful_shutdown() -> None:
    """testObserverGracefulShutdown: an observer completes at once, even with no leader known."""
    node, _ = raft.step(make_node((1, 2), stored=ElectionState(epoch=5)), Tick(), 0)
    assert isinstance(node.state, Unattached) and raft_state.leader_of(node.state) == -1
    node, _ = raft.step(node, Shutdown(timeout_ms=5_000), 0)
    assert shutdown_outcome(node) == raft_state.SHUTDOWN_COMPLETED


def test_graceful_shutdown_single_member_quorum() -> None:
    """testGracefulShutdownSingleMemberQuorum: the only voter completes at once, sending nothing."""
    node, out = raft.step(make_node((LOCAL,)), Tick(), CONFIG.election_timeout_ms)
    assert isinstance(node.state, Leader) and node.state.epoch == 1
    node, out = raft.step(node, Shutdown(timeout_ms=5_000), CONFIG.election_timeout_ms)
    assert shutdown_outcome(node) == raft_state.SHUTDOWN_COMPLETED and out == ()


def test_end_quorum_epoch_sent_based_on_fetch_offset() -> None:
    """testEndQuorumEpochSentBasedOnFetchOffset: a shutting-down leader names the voter that fetched furthest first."""
    close, lagging = 2, 1
    node = leader((LOCAL, lagging, close), 1)
    node, _ = raft.step(node, FetchRequest(replica_id=lagging, current_leader_epoch=1, fetch_offset=1,
                                           last_fetched_epoch=1), 0)
    node, _ = raft.step(node, Append(records=("foo", "bar")), 0)
    node, _ = raft.step(node, FetchRequest(replica_id=close, current_leader_epoch=1, fetch_offset=3,
                                           last_fetched_epoch=1), 0)
    node, _ = raft.step(node, Shutdown(timeout_ms=2 * CONFIG.election_timeout_ms), 0)
    node, out = raft.step(node, Tick(), 0)
    requests = sends(out, EndQuorumEpochRequest)
    assert sorted(s.destination for s in requests) == [lagging, close]
    assert {s.message.preferred_successors for s in requests} == {(close, lagging)}


def test_shutdown_while_candidate_keeps_the_election_and_never_writes_leader_change() -> None:
    """``pollCandidate`` while shutting down keeps asking for votes past the election timeout; won, ``pollLeader``
    resigns before it drains the accumulator, so the LeaderChange record is never written (the epoch is in the
    epoch cache: ``initializeLeaderEpoch``)."""
    node = make_node((LOCAL, 1, 2), stored=ElectionState(epoch=3, voted_key=ReplicaKey(id=LOCAL)))
    node, _ = raft.step(node, Tick(), 0)
    node, _ = raft.step(node, Shutdown(timeout_ms=60_000), 0)
    node, out = raft.step(node, Tick(), 3 * CONFIG.election_timeout_ms)
    assert isinstance(node.state, Candidate) and shutdown_outcome(node) is None
    assert sorted(s.destination for s in sends(out, VoteRequest)) == [1, 2]  # the earlier ones timed out
    node, _ = respond(node, 1, VoteResponse(source=1, leader_epoch=3, vote_granted=True), 3 * CONFIG.election_timeout_ms)
    assert isinstance(node.state, Resigned) and node.log.end_offset == 0
    assert node.log.epoch_cache == ((3, 0),) and node.log.last_fetched_epoch == 3


def test_end_quorum_epoch_retries_while_resigned() -> None:
    """testEndQuorumEpochRetriesWhileResigned: only the voter that has not answered is asked again, once the request
    timed out."""
    node = make_node((LOCAL, 1, 2), stored=ElectionState(epoch=19, leader_id=LOCAL))
    node, out = raft.step(node, Tick(), 0)
    assert sorted(s.destination for s in sends(out, EndQuorumEpochRequest)) == [1, 2]
    node, out = respond(node, 1, QuorumEpochResponse(source=1, api="EndQuorumEpoch", leader_epoch=19, leader_id=LOCAL),
                        0)
    assert out == ()
    node, out = raft.step(node, Tick(), 6_000)
    assert [s.destination for s in sends(out, EndQuorumEpochRequest)] == [2]


def test_handle_end_quorum_request() -> None:
    """testHandleEndQuorumRequest: named first among the successors, the follower starts a pre-vote at once."""
    node = follower((LOCAL, 1), 2, 1)
    node, out = raft.step(node, EndQuorumEpochRequest(leader_id=1, leader_epoch=2, preferred_successors=(LOCAL,)), 0)
    assert only_response(out).partition_error == Errors.NONE and only_response(out).leader_id == 1
    assert isinstance(node.state, Prospective) and raft_state.leader_of(node.state) == 1


def test_handle_end_quorum_request_with_lower_priority_to_become_leader() -> None:
    """testHandleEndQuorumRequestWithLowerPriorityToBecomeLeader: second of two successors, it keeps fetching for
    ``endEpochElectionBackoff`` before its pre-vote."""
    node = follower((LOCAL, 1, 2), 2, 1)
    node, out = raft.step(node, EndQuorumEpochRequest(leader_id=1, leader_epoch=2, preferred_successors=(2, LOCAL)), 0)
    assert only_response(out).partition_error == Errors.NONE
    node, _ = raft.step(node, Tick(), 1)
    assert isinstance(node.state, Follower) and 1 in node.inflight
    node, out = raft.step(node, Tick(), 1 + CONFIG.election_backoff_max_ms)
    assert isinstance(node.state, Prospective) and node.state.epoch == 2
    node, out = raft.step(node, Tick(), 1 + CONFIG.election_backoff_max_ms)
    assert sorted(s.destination for s in sends(out, VoteRequest) if s.message.pre_vote) == [1, 2]


def test_end_quorum_ignored_as_candidate_if_older_epoch() -> None:
    """testEndQuorumIgnoredAsCandidateIfOlderEpoch: FENCED_LEADER_EPOCH, and the candidate waits out its timer."""
    node = make_node((LOCAL, 1), stored=ElectionState(epoch=5, voted_key=ReplicaKey(id=LOCAL)))
    node, out = raft.step(node, EndQuorumEpochRequest(leader_id=1, leader_epoch=3, preferred_successors=(LOCAL,)), 0)
    assert only_response(out).partition_error == Errors.FENCED_LEADER_EPOCH and only_response(out).leader_epoch == 5
    node, _ = raft.step(node, Tick(), CONFIG.election_timeout_ms - 1)
    assert isinstance(node.state, Candidate)
    node, _ = raft.step(node, Tick(), CONFIG.election_timeout_ms)
    assert isinstance(node.state, Prospective)


def test_end_quorum_ignored_as_leader_if_older_epoch() -> None:
    """testEndQuorumIgnoredAsLeaderIfOlderEpoch: FENCED_LEADER_EPOCH naming itself; it stays leader."""
    node = leader((LOCAL, 1, 2), 7)
    node, out = raft.step(node, EndQuorumEpochRequest(leader_id=1, leader_epoch=5, preferred_successors=(LOCAL, 2)), 0)
    assert only_response(out).partition_error == Errors.FENCED_LEADER_EPOCH and only_response(out).leader_id == LOCAL
    node, _ = raft.step(node, Tick(), CONFIG.fetch_timeout_ms - 1)
    assert isinstance(node.state, Leader) and node.state.epoch == 7


# -------------------------------------------------------------------------------------------------
# K. The listener's view (KafkaRaftClientTest, by name): handleCommit and handleLeaderChange (§3.12)


def test_handle_leader_change_fires_after_listener_reaches_epoch_start_offset_on_empty_log() -> None:
    """testHandleLeaderChangeFiresAfterListenerReachesEpochStartOffsetOnEmptyLog: the new leader is told to its
    listener only once the committed records through its LeaderChange record (offset 0) were handed over."""
    node = leader((LOCAL, 1), 2)
    assert node.log.end_offset == 1 and node.listener == ListenerView(leader_id=-1, epoch=2)  # told of the election
    node, _ = raft.step(node, FetchRequest(replica_id=1, current_leader_epoch=2, fetch_offset=0, last_fetched_epoch=0), 0)
    assert node.listener == ListenerView(leader_id=-1, epoch=2)
    node, _ = raft.step(node, FetchRequest(replica_id=1, current_leader_epoch=2, fetch_offset=1, last_fetched_epoch=2), 0)
    assert node.listener == ListenerView(committed_end=1, leader_id=LOCAL, epoch=2)


def test_handle_leader_change_fires_after_listener_reaches_epoch_start_offset() -> None:
    """testHandleLeaderChangeFiresAfterListenerReachesEpochStartOffset: nine records of epochs 1 and 2, then the
    LeaderChange at 9: a follower at offset 3 commits nothing; at 10 the listener gets all ten, then the leadership."""
    node = leader((LOCAL, 1), 5, log_of_epochs([1] * 6 + [2] * 3))
    assert node.state.epoch_start_offset == 9 and node.log.end_offset == 10
    node, _ = raft.step(node, FetchRequest(replica_id=1, current_leader_epoch=5, fetch_offset=3, last_fetched_epoch=1), 0)
    assert node.listener.committed_end == 0 and node.listener.leader_id == -1
    node, _ = raft.step(node, FetchRequest(replica_id=1, current_leader_epoch=5, fetch_offset=10, last_fetched_epoch=5),
                        0)
    assert node.listener == ListenerView(committed_end=10, leader_id=LOCAL, epoch=5)


def test_handle_commit_callback_fires_after_follower_high_watermark_advances() -> None:
    """testHandleCommitCallbackFiresAfterFollowerHighWatermarkAdvances: fetched records reach the listener only as
    the high watermark passes them; the listener knows the remote leader all along."""
    node, _ = raft.step(follower((LOCAL, 1), 5, 1), Tick(), 0)
    assert node.listener == ListenerView(leader_id=1, epoch=5)
    node, _ = respond(node, 1, FetchResponse(source=1, leader_epoch=5, leader_id=1, high_watermark=0, records=tuple(
        LogEntry(epoch=5, record=r) for r in "abc")), 0)
    assert node.listener.committed_end == 0
    node, _ = raft.step(node, Tick(), 0)
    node, _ = respond(node, 1, FetchResponse(source=1, leader_epoch=5, leader_id=1, high_watermark=3, records=tuple(
        LogEntry(epoch=5, record=r) for r in "def")), 0)
    assert node.listener == ListenerView(committed_end=3, leader_id=1, epoch=5)


def test_handle_leader_change_fires_after_unattached_registration() -> None:
    """testHandleLeaderChangeFiresAfterUnattachedRegistration: registered at the first poll, the listener learns the
    epoch without a leader, then the leader a BeginQuorumEpoch names."""
    node = make_node((LOCAL, 1), stored=ElectionState(epoch=7))
    assert node.listener is None  # registered by the first poll (``pollListeners``)
    node, _ = raft.step(node, Tick(), 0)
    assert node.listener == ListenerView(leader_id=-1, epoch=7)
    node, _ = raft.step(node, BeginQuorumEpochRequest(leader_id=1, leader_epoch=7), 0)
    assert node.listener == ListenerView(leader_id=1, epoch=7)


def test_handle_leader_change_fires_after_follower_registration() -> None:
    """testHandleLeaderChangeFiresAfterFollowerRegistration: a follower's listener learns its leader at once."""
    node, _ = raft.step(follower((LOCAL, 1), 7, 1), Tick(), 0)
    assert node.listener == ListenerView(leader_id=1, epoch=7)


def test_handle_leader_change_fires_after_resign_registration() -> None:
    """testHandleLeaderChangeFiresAfterResignRegistration: a Resigned node tells its listener nothing."""
    node, _ = raft.step(make_node((LOCAL, 1), stored=ElectionState(epoch=7, leader_id=LOCAL)), Tick(), 0)
    assert isinstance(node.state, Resigned) and node.listener == ListenerView()


def test_a_restart_registers_the_listener_anew_and_a_finished_shutdown_skips_the_poll_listeners() -> None:
    """A restart is a new process: its listener starts from nothing; the poll that finishes a shutdown returns before
    ``pollListeners``, so what the step's transition fired stays the listener's last view."""
    node, _ = raft.step(follower((LOCAL, 1), 7, 1), Tick(), 0)
    assert raft.restart(node, 1).listener is None
    node = make_node((LOCAL, 1, 2), stored=ElectionState(epoch=7))
    node, _ = raft.step(node, Tick(), 0)
    node, _ = raft.step(node, Shutdown(timeout_ms=1_000), 0)
    assert shutdown_outcome(node) is None
    node, _ = raft.step(node, BeginQuorumEpochRequest(leader_id=1, leader_epoch=8), 1)
    assert shutdown_outcome(node) == raft_state.SHUTDOWN_COMPLETED and node.listener == ListenerView(leader_id=1,
                                                                                                      epoch=8)


# -------------------------------------------------------------------------------------------------
# RequestManagerTest (§3.13): a connection's request in flight, its time-out and its back-off after a failure.
# Its timeouts: request 30000 ms, back-off 100 ms. The reference keeps ``RequestManager`` in the node (``inflight``,
# ``backoff``): ``onRequestSent`` ~ ``raft_node.send_request``, ``onResponseResult`` ~ ``raft_node.answered``,
# ``isReady`` ~ ``raft_node.ready``, ``resetAll`` ~ a state change (``raft_transitions.moved``),
# ``findReadyBootstrapServer`` ~ the poll of a node with no leader (``raft._maybe_send_fetch_to_any_bootstrap``, its
# random start index an argument).
# -------------------------------------------------------------------------------------------------

REQUEST_TIMEOUT_MS = 30_000
RETRY_BACKOFF_MS = 100
RM_CONFIG = QuorumConfig(request_timeout_ms=REQUEST_TIMEOUT_MS, retry_backoff_ms=RETRY_BACKOFF_MS)
NODE_1, NODE_2 = 1, 2


def observer(*bootstrap: int) -> raft.RaftNode:
    """A node with no leader whose bootstrap servers (static voters) are ``bootstrap``: an observer, so it only
    fetches."""
    return raft.new_node(LOCAL, frozenset(bootstrap), endpoints(*bootstrap), RM_CONFIG)


def request_sent(node: raft.RaftNode, destination: int, now: int) -> tuple[raft.RaftNode, int]:
    """``onRequestSent``: a request to ``destination`` at ``now``; returns its correlation id."""
    out: list[Send] = []
    request = FetchRequest(replica_id=LOCAL, current_leader_epoch=0, fetch_offset=0, last_fetched_epoch=0)
    node = raft_node.send_request(node, destination, request, now, out)
    return node, out[0].message.correlation_id


def bootstrap_fetch(node: raft.RaftNode, now: int, start: int = 0) -> tuple[raft.RaftNode, int | None]:
    """``findReadyBootstrapServer`` then ``onRequestSent``: the poll's Fetch, to whom (None: nobody ready)."""
    out: list[Send] = []
    node = raft._maybe_send_fetch_to_any_bootstrap(node, now, start, out)
    return node, (out[0].destination if out else None)


def test_reset_all_connections() -> None:
    node = observer(NODE_1, NODE_2, 3)
    node, _ = request_sent(node, NODE_1, 0)
    assert not raft_node.ready(node, NODE_1, 0)  # a request in flight
    node, cid = request_sent(node, NODE_2, 0)
    node = raft_node.answered(node, NODE_2, cid, False, 0)
    assert not raft_node.ready(node, NODE_2, 0)  # backing off
    node = raft_transitions.moved(node, node.state, False, [])  # a state change: ``resetAll``
    assert raft_node.ready(node, NODE_1, 0) and raft_node.ready(node, NODE_2, 0)


def test_backoff_after_failure() -> None:
    node = observer(NODE_1, NODE_2, 3)
    assert raft_node.ready(node, NODE_1, 0)
    node, cid = request_sent(node, NODE_1, 0)
    assert not raft_node.ready(node, NODE_1, 0)
    node = raft_node.answered(node, NODE_1, cid, False, 0)
    assert not raft_node.ready(node, NODE_1, 0)
    assert not raft_node.ready(node, NODE_1, RETRY_BACKOFF_MS - 1)
    assert raft_node.ready(node, NODE_1, RETRY_BACKOFF_MS)


def test_successful_response() -> None:
    node, cid = request_sent(observer(NODE_1, NODE_2, 3), NODE_1, 0)
    assert not raft_node.ready(node, NODE_1, 0)
    assert raft_node.ready(raft_node.answered(node, NODE_1, cid, True, 0), NODE_1, 0)


def test_ignore_unexpected_response() -> None:
    node, cid = request_sent(observer(NODE_1, NODE_2, 3), NODE_1, 0)
    assert not raft_node.ready(raft_node.answered(node, NODE_1, cid + 1, True, 0), NODE_1, 0)
    assert not raft_node.ready(raft_node.answered(node, NODE_1, cid + 1, False, 0), NODE_1, 0)


def test_request_timeout() -> None:
    node, _ = request_sent(observer(NODE_1, NODE_2, 3), NODE_1, 0)
    assert not raft_node.ready(node, NODE_1, REQUEST_TIMEOUT_MS - 1)
    assert raft_node.ready(node, NODE_1, REQUEST_TIMEOUT_MS)


def test_request_to_bootstrap_list() -> None:
    """Two bootstrap servers: a failure sends the next Fetch to the other one at once; when both back off nobody is
    ready until the first one's back-off ends, 100 ms after its failure."""
    node = observer(NODE_1, NODE_2)
    node, first = bootstrap_fetch(node, 0)
    assert first in (NODE_1, NODE_2)
    assert bootstrap_fetch(node, 0)[1] is None  # one request in flight: nothing more is sent
    cid = node.inflight[first][0]
    node = raft_node.answered(node, first, cid, False, 100)
    node, second = bootstrap_fetch(node, 100)
    assert second is not None and second != first
    assert bootstrap_fetch(node, 100)[1] is None
    cid = node.inflight[second][0]
    node = raft_node.answered(node, second, cid, False, 100 + RETRY_BACKOFF_MS - 1)
    assert bootstrap_fetch(node, 100 + RETRY_BACKOFF_MS - 1)[1] is None  # both back off
    node, third = bootstrap_fetch(node, 100 + RETRY_BACKOFF_MS)
    assert third == first  # the first one's back-off is over, the second's is not


def test_find_ready_with_inflight_request() -> None:
    """A request in flight to a node outside the bootstrap list: no bootstrap server is picked."""
    node, _ = request_sent(observer(NODE_1, NODE_2, 3), 7, 0)
    assert bootstrap_fetch(node, 0)[1] is None


def test_find_ready_with_request_timed_out() -> None:
    node, cid = request_sent(observer(NODE_1, NODE_2, 3), 7, 0)
    assert raft_node.expected(node, 7, cid)
    assert bootstrap_fetch(node, 0)[1] is None
    node, server = bootstrap_fetch(node, REQUEST_TIMEOUT_MS)
    assert server in (NODE_1, NODE_2, 3)
    assert not raft_node.expected(node, 7, cid)


def test_has_request_timed_out() -> None:
    node, server = bootstrap_fetch(observer(NODE_1, NODE_2), 0)
    assert server is not None
    assert raft_node.without_timed_out(node, REQUEST_TIMEOUT_MS - 1).inflight
    assert not raft_node.without_timed_out(node, REQUEST_TIMEOUT_MS).inflight
