"""A simulated kraft.version 0 quorum upgraded to kraft.version 1 (KIP-853, rules §3.14–§3.15).

Voters 1, 2, 3 configured statically (``controller.quorum.voters``, each node with its directory id) and node 4 an
observer; Hypothesis drives timer polls, delivery in any order, loss, crashes, client appends and the controller's
``upgradeKRaftVersion`` at the newest leader, which Kafka refuses until every voter has sent that leader UpdateRaftVoter
(InvalidUpdateVersionException, taken here as the answer). After every step it checks that every node runs the
kraft.version and voters its log gives (the static voters before an upgrade's records, or once a truncation or a
restart drops them) and that the voter set an upgrade writes names every static voter with its directory id and a
kraft.version range holding 1. Fetch answers may hold few records (``fetch_max_records`` 3), never part of a batch:
the upgrade's two records are one batch (``raft_log.entries_from``).
"""

from __future__ import annotations

from hypothesis import note
from hypothesis import strategies as st
from hypothesis.stateful import initialize, invariant, rule

from kraftspec.models.raft import CONFIG, DIRECTORY_IDS, NODES, VOTERS, QuorumNetwork, bootstraps, jitters
from kraftspec.reference import raft, raft_voter_history
from kraftspec.reference.frozen import FrozenMap
from kraftspec.reference.raft_messages import InvalidUpdateVersionError, UpgradeKRaftVersion
from kraftspec.reference.raft_voters import KRaftVersionRecord, VotersRecord, listeners_of

ENDPOINTS = FrozenMap({n: (f"CONTROLLER://controller{n}:9093",) for n in NODES})
"""Every node's listener: the voters' are ``controller.quorum.voters``, the observer's its own."""

ENVIRONMENT_RULES = frozenset({"append", "crash", "deliver", "deliver_all", "lose", "run_quietly", "tick",
                               "tick_all"})
"""Rules that move the environment: the network, the clock, crashes and the client appends ``raft.step`` takes."""


class RaftUpgradeModel(QuorumNetwork):
    """Rules ``tick``, ``tick_all``, ``run_quietly``, ``deliver``, ``deliver_all``, ``lose``, ``append`` (the
    :class:`~kraftspec.models.raft.QuorumNetwork`'s), ``crash`` and ``maybe_append_upgraded_kraft_version``;
    invariants named after the property they protect."""

    def __init__(self) -> None:
        super().__init__()
        self.upgrades = 0  # upgrades Kafka's leader accepted and wrote

    @initialize(draws=st.lists(jitters, min_size=len(NODES), max_size=len(NODES)),
                calm_rounds=st.sampled_from((24, 16, 0)))
    def start(self, draws: list[int], calm_rounds: int) -> None:
        """Every node starts fresh with the static voters; most runs begin calm, which elects a leader and lets the
        voters send it UpdateRaftVoter."""
        note(f"model seed: {getattr(type(self), '_hypothesis_internal_use_seed', None)}")
        self.nodes = {n: raft.new_node(n, VOTERS, ENDPOINTS, CONFIG, now=0, jitter=j,
                                       directory_id=DIRECTORY_IDS[n]) for n, j in zip(NODES, draws)}
        for _ in range(calm_rounds):
            self.tick_all(300, draws[0], draws[1] % len(VOTERS))
            self.deliver_all(draws[0], draws[1] % len(VOTERS))

    @rule(validate_only=st.booleans(), jitter=jitters, bootstrap=bootstraps)
    def maybe_append_upgraded_kraft_version(self, validate_only: bool, jitter: int, bootstrap: int) -> None:
        """The controller asks the newest leader, in its epoch, to finalize kraft.version 1 (UpdateFeatures)."""
        leader = self._newest_leader()
        if leader is None:
            return
        before = self.nodes[leader]
        try:
            self._step(leader, UpgradeKRaftVersion(epoch=before.state.epoch, kraft_version=1,
                                                   validate_only=validate_only), jitter, bootstrap)
        except InvalidUpdateVersionError:
            return  # not every voter has told this leader it supports kraft.version 1
        self.upgrades += self.nodes[leader].log.end_offset > before.log.end_offset

    @rule(node=st.sampled_from(NODES), jitter=jitters)
    def crash(self, node: int, jitter: int) -> None:
        """A node crashes and restarts: unflushed records (an observer's) and messages to it are lost."""
        self.nodes[node] = raft.restart(self.nodes[node], self.now, jitter)
        self.in_flight = [s for s in self.in_flight if s.destination != node]

    # ---------------------------------------------------------------------------------------------
    # Invariants

    @invariant()
    def nodes_run_the_kraft_version_and_voters_of_their_log(self) -> None:
        """Every node's kraft.version is its log's latest KRaftVersionRecord (0 without one) and its voters are the
        latest VotersRecord's (the static voters without one): a node that fetched the upgrade switched to it, and one
        whose upgrade records were truncated or lost went back (``KRaftControlRecordStateMachine``, §3.14)."""
        for node_id, node in self.nodes.items():
            versions = [e.record.kraft_version for e in node.log.entries if isinstance(e.record, KRaftVersionRecord)]
            voter_sets = [e.record for e in node.log.entries if isinstance(e.record, VotersRecord)]
            expected = frozenset(v.voter_key.id for v in voter_sets[-1].voters) if voter_sets else VOTERS
            assert raft.kraft_version(node) == (versions[-1] if versions else 0), (
                f"node {node_id} runs kraft.version {raft.kraft_version(node)}, its log says {versions}")
            assert node.voters == expected, f"node {node_id}'s voters {sorted(node.voters)}, its log's {sorted(expected)}"
            control = None if node.dynamic is None else node.dynamic.control
            assert control is None or raft_voter_history.last_kraft_version(control) == raft.kraft_version(node)

    @invariant()
    def upgraded_voter_sets_know_every_voter(self) -> None:
        """The voter set an upgrade writes holds every static voter with its own directory id, its listener and a
        kraft.version range that holds 1: the leader upgrades only once each has sent it UpdateRaftVoter (§3.15)."""
        for node_id, node in self.nodes.items():
            for entry in node.log.entries:
                if not isinstance(entry.record, VotersRecord):
                    continue
                voters = {v.voter_key.id: v for v in entry.record.voters}
                assert set(voters) == VOTERS, f"node {node_id}'s log holds voters {sorted(voters)}"
                for voter_id, voter in voters.items():
                    low, high = voter.supported_kraft_version
                    assert (voter.voter_key.directory_id == DIRECTORY_IDS[voter_id] and low <= 1 <= high
                            and voter.listeners == listeners_of(ENDPOINTS[voter_id])), (
                        f"node {node_id}'s log names voter {voter}")
