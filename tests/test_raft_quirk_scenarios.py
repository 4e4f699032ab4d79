"""Whole-quorum stories of the Kafka 4.3 problems the reference follows (issue 23), reference only.

The one-node mechanism of each is run through Kafka's own client in tests/test_kafka_raft_quirks.py; here three
kraft.version 1 nodes (voters 1-3, helpers of tests/test_raft_reconfig_client_scenarios.py) exchange their messages
through a hand-driven network that loses the messages a story names.
"""

from __future__ import annotations

from typing import Callable

from kraftspec.reference import raft
from kraftspec.reference.raft_messages import Append, FetchRequest, Send, Tick, VoteRequest
from kraftspec.reference.raft_state import Candidate, ElectionState, Follower, Leader
from kraftspec.reference.raft_records import LeaderChangeMessage

from test_raft_reconfig_client_scenarios import CONFIG, START, dynamic_node, remove_voter, voter_set

Nodes = dict[int, raft.RaftNode]
Pending = list[tuple[int, Send]]


def quorum_at_epoch_7() -> Nodes:
    """Voters 1-3, each restarted Unattached in epoch 7."""
    return {i: dynamic_node(i, voter_set(1, 2, 3), ElectionState(epoch=7)) for i in (1, 2, 3)}


def tick(nodes: Nodes, node_id: int, now: int) -> Pending:
    nodes[node_id], out = raft.step(nodes[node_id], Tick(), now)
    return [(node_id, s) for s in out]


def deliver(nodes: Nodes, pending: Pending, now: int, lost: Callable[[int, Send], bool] = lambda src, s: False) -> None:
    """Hand every message (and the messages it causes) to its destination, in the order sent, except those ``lost``
    (and those to nodes outside ``nodes``, such as the admin client) until none is left."""
    for _ in range(200):
        if not pending:
            return
        source, send = pending.pop(0)
        if send.destination in nodes and not lost(source, send):
            nodes[send.destination], out = raft.step(nodes[send.destination], send.message, now)
            pending += [(send.destination, s) for s in out]
    raise AssertionError("the messages never settled")


def test_a_restarted_follower_that_voted_for_itself_becomes_a_second_leader_of_its_epoch() -> None:
    """Kafka 4.3 ``QuorumState.initialize`` takes a stored vote for itself (``isVotedCandidate``) before the stored
    leader (``hasLeader``). Nodes 2 and 3 both stand in epoch 8; 3's vote requests are lost, 2 wins with 1's vote and
    3 follows it (its file: leader 2, voted 3). Leader 2 removes 1, then itself: 3 fetches the voter set {3} but its
    next fetch (which would commit it and make 2 resign) is lost, and 2 appends "x". Node 3 restarts: Candidate of
    epoch 8, the only voter, Leader of epoch 8 while 2 still leads it, and commits its own LeaderChange at the offset
    where 2 wrote "x" (and sent it to observer 1): two leaders and two different committed-looking entries at one
    (offset, epoch)."""
    nodes = quorum_at_epoch_7()
    now = START + 2 * CONFIG.election_timeout_ms
    prospective = tick(nodes, 2, now) + tick(nodes, 3, now)
    assert prospective == []  # both time out; their pre-votes go out on the next poll
    deliver(nodes, tick(nodes, 2, now) + tick(nodes, 3, now), now,
            lost=lambda src, s: src == 3 and isinstance(s.message, VoteRequest) and not s.message.pre_vote)
    assert isinstance(nodes[2].state, Leader) and nodes[2].state.epoch == 8
    follower = nodes[3].state
    assert isinstance(follower, Follower) and (follower.epoch, follower.leader_id) == (8, 2)
    assert '"leaderId":2,"leaderEpoch":8,"votedId":3' in raft.quorum_state_file(nodes[3])

    nodes[2], out = raft.step(nodes[2], remove_voter(1), now)
    deliver(nodes, [(2, s) for s in out], now)
    assert nodes[2].voters == nodes[3].voters == {2, 3} and nodes[2].state.high_watermark == nodes[2].log.end_offset
    nodes[2], out = raft.step(nodes[2], remove_voter(2), now)
    alone = nodes[2].log.end_offset  # the voter set {3} ends at this offset
    deliver(nodes, [(2, s) for s in out], now,
            lost=lambda src, s: src == 3 and isinstance(s.message, FetchRequest) and s.message.fetch_offset >= alone)
    assert nodes[3].log.end_offset == alone and nodes[3].voters == {3} and isinstance(nodes[2].state, Leader)
    nodes[2], out = raft.step(nodes[2], Append(records=("x",)), now)
    deliver(nodes, [(2, s) for s in out], now)
    assert nodes[1].log.entries[alone].record == "x"

    nodes[3] = raft.restart(nodes[3], now + 1)
    assert isinstance(nodes[3].state, Leader) and nodes[3].state.epoch == 8
    assert nodes[3].log.end_offset == alone  # ``initialize``: the LeaderChange waits for the first poll
    nodes[3], _ = raft.step(nodes[3], Tick(), now + 1)
    assert isinstance(nodes[2].state, Leader) and nodes[2].state.epoch == 8
    theirs, ours = nodes[2].log.entries[alone], nodes[3].log.entries[alone]
    assert theirs.epoch == ours.epoch == 8 and theirs.record == "x"
    assert isinstance(ours.record, LeaderChangeMessage) and ours.record.leader_id == 3
    assert nodes[3].state.high_watermark == alone + 1  # committed by the only voter


def test_a_follower_that_voted_for_itself_without_a_voter_change_stays_a_candidate() -> None:
    """The same restart with the voter set {1, 2, 3} unchanged: Candidate of epoch 8 again, but 1 and 2 have voted
    (or lead) in epoch 8 and refuse it, so the quirk needs a voter set in which the node alone is a majority."""
    nodes = quorum_at_epoch_7()
    now = START + 2 * CONFIG.election_timeout_ms
    assert tick(nodes, 2, now) + tick(nodes, 3, now) == []
    deliver(nodes, tick(nodes, 2, now) + tick(nodes, 3, now), now,
            lost=lambda src, s: src == 3 and isinstance(s.message, VoteRequest) and not s.message.pre_vote)
    nodes[3] = raft.restart(nodes[3], now + 1)
    assert isinstance(nodes[3].state, Candidate) and nodes[3].state.epoch == 8
    deliver(nodes, tick(nodes, 3, now + 2), now + 2)
    assert isinstance(nodes[2].state, Leader) and not isinstance(nodes[3].state, Leader)
