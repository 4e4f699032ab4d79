"""A simulated kraft.version 1 quorum whose voters change (KIP-853, rules §3.14–§3.15).

Four nodes bootstrapped with voters 1, 2, 3 (the checkpoint ``0-0``, as ``kafka-storage format
--initial-controllers`` writes it) and node 4 an observer; Hypothesis drives timer polls, delivery in any order, loss,
client appends and admin AddRaftVoter / RemoveRaftVoter requests to the newest leader, whose ApiVersions request the
environment answers with the addressee's kraft.version range. After every step it checks the properties a voter change
must keep: one leader per epoch, a leader's high watermark advancing only over records a majority of its voter set in
force holds, and consecutive voter sets in a log sharing a majority. Not driven: crashes (a new voter flushes only once
it reads itself a voter, ``canBecomeVoter`` not being modelled) and snapshots. A BeginQuorumEpoch answer from a voter
the leader has since removed is lost: Kafka 4.3's leader throws on it (``LeaderState.addAcknowledgementFrom``;
``test_raft_reconfig_client_scenarios.test_begin_quorum_epoch_answer_from_removed_voter``).
"""

from __future__ import annotations

import base64
from typing import Any

from hypothesis import note
from hypothesis import strategies as st
from hypothesis.stateful import initialize, invariant, rule

from kraftspec.models.raft import CONFIG, MAX_IN_FLIGHT, NODES, QuorumNetwork, bootstraps, jitters
from kraftspec.reference import raft
from kraftspec.reference.frozen import FrozenMap
from kraftspec.reference.raft_log import RaftLog, Snapshot
from kraftspec.reference.raft_messages import (
    AddRaftVoterRequest,
    ApiVersionsRequest,
    ApiVersionsResponse,
    QuorumEpochResponse,
    RemoveRaftVoterRequest,
    Send,
)
from kraftspec.reference.raft_state import Leader
from kraftspec.reference.raft_voters import (
    KRaftVersionRecord,
    VoterNode,
    VoterSet,
    VotersRecord,
    from_voters_record,
    has_overlapping_majority,
    to_voters_record,
)

INITIAL_VOTERS = (1, 2, 3)
LISTENER = "CONTROLLER"

ENVIRONMENT_RULES = frozenset({"append", "deliver", "deliver_all", "lose", "request_add_voter",
                               "request_remove_voter", "run_quietly", "tick", "tick_all"})
"""Rules that move the environment: the network, the clock and the client and admin inputs ``raft.step`` takes."""


def directory(node_id: int) -> str:
    """Node ``node_id``'s (fixed) directory id."""
    return base64.urlsafe_b64encode(bytes([0x40, node_id]) * 8).decode().rstrip("=")


def listeners(node_id: int) -> FrozenMap[str, tuple[str, int]]:
    return FrozenMap({LISTENER: (f"controller{node_id}", 9093)})


def voter_node(node_id: int) -> VoterNode:
    return VoterNode(voter_key=raft.ReplicaKey(id=node_id, directory_id=directory(node_id)),
                     listeners=listeners(node_id), supported_kraft_version=raft.SUPPORTED_KRAFT_VERSIONS)


def bootstrapped(node_id: int, jitter: int) -> raft.RaftNode:
    """A node formatted with the initial voters: the bootstrap checkpoint holds kraft.version 1 and their set."""
    initial = VoterSet(voters=FrozenMap({v: voter_node(v) for v in INITIAL_VOTERS}))
    records = FrozenMap({(0, 0): (KRaftVersionRecord(kraft_version=1), to_voters_record(initial))})
    log = RaftLog(snapshots=(Snapshot(end_offset=0, epoch=0, size=100),))
    return raft.new_dynamic_node(node_id, directory(node_id), listeners(node_id), CONFIG, log, records, now=0,
                                 jitter=jitter)


class RaftReconfigModel(QuorumNetwork):
    """Rules ``tick``, ``tick_all``, ``run_quietly``, ``deliver``, ``deliver_all``, ``lose``, ``append`` (the
    :class:`~kraftspec.models.raft.QuorumNetwork`'s), ``request_add_voter``, ``request_remove_voter``; invariants
    named after the property they protect."""

    def __init__(self) -> None:
        super().__init__()
        self.next_request = 1
        self.leader_hw: dict[int, tuple[int, int]] = {}  # node -> (epoch, HW) last seen while it led

    @initialize(draws=st.lists(jitters, min_size=len(NODES), max_size=len(NODES)),
                calm_rounds=st.sampled_from((0, 8, 8)))
    def start(self, draws: list[int], calm_rounds: int) -> None:
        """Every node starts from the bootstrap checkpoint with its own election jitter; most runs begin calm."""
        note(f"model seed: {getattr(type(self), '_hypothesis_internal_use_seed', None)}")
        self.nodes = {n: bootstrapped(n, j) for n, j in zip(NODES, draws)}
        self.run_quietly(calm_rounds, draws[0], draws[1] % len(INITIAL_VOTERS))

    def _step(self, node: int, message: Any, jitter: int, bootstrap: int) -> None:
        self.nodes[node], sends = raft.step(self.nodes[node], message, self.now, jitter, bootstrap)
        for send in sends:
            if isinstance(send.message, ApiVersionsRequest):  # answered by the addressee's network layer
                self.in_flight.append(Send(destination=node, message=ApiVersionsResponse(
                    source=send.destination, kraft_version_range=raft.SUPPORTED_KRAFT_VERSIONS,
                    correlation_id=send.message.correlation_id)))
            elif send.destination in self.nodes:  # admin answers (destination -1) leave the quorum
                self.in_flight.append(send)
        del self.in_flight[:-MAX_IN_FLIGHT]

    def _deliver(self, send: Send, jitter: int, bootstrap: int) -> None:
        receiver, message = self.nodes[send.destination], send.message
        if (isinstance(message, QuorumEpochResponse) and message.api == "BeginQuorumEpoch"
                and isinstance(receiver.state, Leader) and message.source not in receiver.voters):
            return  # see the module docstring: Kafka's leader throws on it
        self._step(send.destination, message, jitter, bootstrap)

    @rule(voter=st.sampled_from(NODES), jitter=jitters, bootstrap=bootstraps)
    def request_add_voter(self, voter: int, jitter: int, bootstrap: int) -> None:
        """An admin asks the newest leader to add ``voter`` (AddRaftVoter, answered once committed)."""
        leader = self._newest_leader()
        if leader is not None:
            self.next_request += 1
            request = AddRaftVoterRequest(voter_id=voter, voter_directory_id=directory(voter),
                                          listeners=(f"{LISTENER}://controller{voter}:9093",),
                                          correlation_id=self.next_request)
            self._step(leader, request, jitter, bootstrap)

    @rule(voter=st.sampled_from(NODES), jitter=jitters, bootstrap=bootstraps)
    def request_remove_voter(self, voter: int, jitter: int, bootstrap: int) -> None:
        """An admin asks the newest leader to remove ``voter`` (RemoveRaftVoter, the leader itself included)."""
        leader = self._newest_leader()
        if leader is not None:
            self.next_request += 1
            request = RemoveRaftVoterRequest(voter_id=voter, voter_directory_id=directory(voter),
                                             correlation_id=self.next_request)
            self._step(leader, request, jitter, bootstrap)

    # ---------------------------------------------------------------------------------------------
    # Invariants

    @invariant()
    def high_watermark_advances_on_a_majority_of_the_voters_in_force(self) -> None:
        """A leader's HW moves only over records held by a majority of the voter set in force (§3.6, §3.14): the
        leader counts itself only while it is a voter."""
        for node_id, node in self.nodes.items():
            state = node.state
            if not isinstance(state, Leader):
                self.leader_hw.pop(node_id, None)
                continue
            before = self.leader_hw.get(node_id)
            self.leader_hw[node_id] = (state.epoch, state.high_watermark)
            if state.high_watermark < 0 or (before is not None and before == (state.epoch, state.high_watermark)):
                continue
            prefix = node.log.entries[:state.high_watermark]
            holders = sorted(v for v in node.voters if self.nodes[v].log.entries[:state.high_watermark] == prefix)
            assert len(holders) > len(node.voters) // 2, (
                f"leader {node_id} of epoch {state.epoch} moved its HW to {state.high_watermark}, held only by "
                f"{holders} of its voters {sorted(node.voters)}")

    @invariant()
    def consecutive_voter_sets_share_a_majority(self) -> None:
        """One voter change at a time (KIP-853): each VotersRecord in a log differs from the set before it by at most
        one voter (``VoterSet.hasOverlappingMajority``)."""
        initial = VoterSet(voters=FrozenMap({v: voter_node(v) for v in INITIAL_VOTERS}))
        for node_id, node in self.nodes.items():
            previous = initial
            for entry in node.log.entries:
                if isinstance(entry.record, VotersRecord):
                    current = from_voters_record(entry.record)
                    assert has_overlapping_majority(previous, current), (
                        f"node {node_id}'s log changes the voters from {sorted(previous.voters)} to "
                        f"{sorted(current.voters)} at once")
                    previous = current
