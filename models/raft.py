"""A simulated KRaft quorum: three voters and one observer over a faulty network (rules §3).

Hypothesis drives the rules (timer polls, message delivery in any order, loss, duplication, client
appends, crashes that lose unflushed records) and checks after every step that the reference keeps
Raft's safety properties. Any exception the reference raises (a fatal Kafka condition or an illegal
transition) is a failure too. :func:`run_model` runs it with a fixed seed and prints the seed; Hypothesis
prints the shortest failing sequence of rules.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, Phase, note, seed, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule, \
    run_state_machine_as_test

from kraftspec.models.determinism import without_local_constants
from kraftspec.reference import raft, raft_state
from kraftspec.reference.frozen import FrozenMap
from kraftspec.reference.raft_messages import Append, Resign, Send, Tick, UpdateRaftVoterRequest
from kraftspec.reference.raft_state import Follower, Leader, QuorumConfig, Unattached

VOTERS = frozenset({1, 2, 3})
OBSERVER = 4
NODES = (1, 2, 3, OBSERVER)
ENDPOINTS = FrozenMap({v: (f"CONTROLLER://controller{v}:9093",) for v in VOTERS})
CONFIG = QuorumConfig(election_timeout_ms=1000, fetch_timeout_ms=2000, election_backoff_max_ms=100,
                      request_timeout_ms=1000, fetch_max_wait_ms=500, fetch_max_records=3)
MAX_IN_FLIGHT = 40
MAJORITY = len(VOTERS) // 2 + 1

jitters = st.integers(min_value=0, max_value=CONFIG.election_timeout_ms - 1)
bootstraps = st.integers(min_value=0, max_value=len(VOTERS) - 1)
"""``RequestManager``'s random start index into the bootstrap servers (the voters), ``raft.step``'s ``bootstrap``."""


ENVIRONMENT_RULES = frozenset({
    "append", "crash", "deliver", "deliver_all", "duplicate", "lose", "resign", "run_quietly", "tick", "tick_all"
})
"""Rules that move the environment, named for what happens rather than after a reference rule: the network (delivery,
loss, duplication), the clock, crashes and the client inputs ``raft.step`` takes (Append, Resign)."""


class RaftQuorumModel(RuleBasedStateMachine):
    """Rules ``tick``, ``tick_all``, ``run_quietly``, ``deliver``, ``deliver_all``, ``duplicate``, ``lose``, ``append``, ``resign``,
    ``crash``; invariants named after the property they protect."""

    def __init__(self) -> None:
        super().__init__()
        self.now = 0
        self.nodes: dict[int, raft.RaftNode] = {}
        self.in_flight: list[Send] = []
        self.next_value = 0
        self.leaders: dict[int, int] = {}  # epoch -> the one leader seen in it
        self.highest_hw: dict[int, int] = {}  # node -> highest HW since its last restart
        self.committed: list[Any] = []  # the committed prefix (entries)
        self.commit_epochs: list[int] = []  # the leader epoch in which each committed offset was first committed

    @initialize(draws=st.lists(jitters, min_size=len(NODES), max_size=len(NODES)),
                calm_rounds=st.sampled_from((0, 0, 8)))
    def start(self, draws: list[int], calm_rounds: int) -> None:
        """Every node starts fresh (empty log, no quorum-state file) with its own election jitter; some runs
        begin with a calm period, which usually elects a first leader."""
        note(f"model seed: {getattr(type(self), '_hypothesis_internal_use_seed', None)}")
        self.nodes = {n: raft.new_node(n, VOTERS, ENDPOINTS, CONFIG, now=0, jitter=j) for n, j in zip(NODES, draws)}
        for _ in range(calm_rounds):
            self.tick_all(300, draws[0], draws[1] % len(VOTERS))
            self.deliver_all(draws[0], draws[1] % len(VOTERS))

    def _step(self, node: int, message: Any, jitter: int, bootstrap: int) -> None:
        self.nodes[node], sends = raft.step(self.nodes[node], message, self.now, jitter, bootstrap)
        self.in_flight.extend(s for s in sends if s.destination in self.nodes  # UpdateRaftVoter is lost: the
                              and not isinstance(s.message, UpdateRaftVoterRequest))  # leader's answer is not modelled
        del self.in_flight[:-MAX_IN_FLIGHT]  # the network loses the oldest when saturated

    @rule(node=st.sampled_from(NODES), elapsed=st.sampled_from((0, 100, 600, 1500)), jitter=jitters,
          bootstrap=bootstraps)
    def tick(self, node: int, elapsed: int, jitter: int, bootstrap: int) -> None:
        """Time passes and one node polls its timers."""
        self.now += elapsed
        self._step(node, Tick(), jitter, bootstrap)

    @rule(elapsed=st.sampled_from((100, 600, 1500)), jitter=jitters, bootstrap=bootstraps)
    def tick_all(self, elapsed: int, jitter: int, bootstrap: int) -> None:
        """Time passes and every node polls its timers."""
        self.now += elapsed
        for node in NODES:
            self._step(node, Tick(), jitter, bootstrap)

    @rule(rounds=st.integers(min_value=1, max_value=6), jitter=jitters, bootstrap=bootstraps)
    def run_quietly(self, rounds: int, jitter: int, bootstrap: int) -> None:
        """A calm period: rounds of 300 ms in which every node polls and every message arrives in order."""
        for _ in range(rounds):
            self.tick_all(300, jitter, bootstrap)
            self.deliver_all(jitter, bootstrap)

    @precondition(lambda self: self.in_flight)
    @rule(jitter=jitters, bootstrap=bootstraps)
    def deliver_all(self, jitter: int, bootstrap: int) -> None:
        """Every message now in flight arrives, in order (what they cause stays in flight)."""
        batch, self.in_flight = self.in_flight, []
        for send in batch:
            self._step(send.destination, send.message, jitter, bootstrap)

    @precondition(lambda self: self.in_flight)
    @rule(pick=st.integers(min_value=0, max_value=MAX_IN_FLIGHT), jitter=jitters, bootstrap=bootstraps)
    def deliver(self, pick: int, jitter: int, bootstrap: int) -> None:
        """Any in-flight message arrives (reordering)."""
        send = self.in_flight.pop(pick % len(self.in_flight))
        self._step(send.destination, send.message, jitter, bootstrap)

    @precondition(lambda self: self.in_flight)
    @rule(pick=st.integers(min_value=0, max_value=MAX_IN_FLIGHT))
    def duplicate(self, pick: int) -> None:
        """A message is delivered twice."""
        self.in_flight.append(self.in_flight[pick % len(self.in_flight)])

    @precondition(lambda self: self.in_flight)
    @rule(pick=st.integers(min_value=0, max_value=MAX_IN_FLIGHT))
    def lose(self, pick: int) -> None:
        """A message is lost."""
        self.in_flight.pop(pick % len(self.in_flight))

    @rule(jitter=jitters, bootstrap=bootstraps)
    def append(self, jitter: int, bootstrap: int) -> None:
        """A client appends one unique record to the newest leader, if there is one."""
        leaders = [n for n, node in self.nodes.items() if isinstance(node.state, Leader)]
        if leaders:
            newest = max(leaders, key=lambda n: self.nodes[n].state.epoch)
            self.next_value += 1
            self._step(newest, Append(records=(f"r{self.next_value}",)), jitter, bootstrap)

    @rule(node=st.sampled_from(sorted(VOTERS)), jitter=jitters, bootstrap=bootstraps)
    def resign(self, node: int, jitter: int, bootstrap: int) -> None:
        """A leader resigns its epoch (a resign request; ``resign`` refuses any other node's call)."""
        if raft_state.leader_of(self.nodes[node].state) == node:
            self._step(node, Resign(epoch=self.nodes[node].state.epoch), jitter, bootstrap)

    @rule(node=st.sampled_from(NODES), jitter=jitters)
    def crash(self, node: int, jitter: int) -> None:
        """A node crashes and restarts: unflushed records and messages to it are lost."""
        self.nodes[node] = raft.restart(self.nodes[node], self.now, jitter)
        self.in_flight = [s for s in self.in_flight if s.destination != node]
        self.highest_hw.pop(node, None)

    # ---------------------------------------------------------------------------------------------
    # Invariants

    @invariant()
    def at_most_one_leader_per_epoch(self) -> None:
        for node_id, node in self.nodes.items():
            if isinstance(node.state, Leader):
                first = self.leaders.setdefault(node.state.epoch, node_id)
                assert first == node_id, f"epoch {node.state.epoch} has leaders {first} and {node_id}"

    @invariant()
    def only_voters_campaign(self) -> None:
        state = self.nodes[OBSERVER].state if self.nodes else None
        assert state is None or isinstance(state, (Unattached, Follower)), f"observer is {state.role}"

    @invariant()
    def log_matching(self) -> None:
        logs = [(n, node.log.entries) for n, node in self.nodes.items()]
        for i, (a, left) in enumerate(logs):
            for b, right in logs[i + 1:]:
                for offset in range(min(len(left), len(right)) - 1, -1, -1):
                    if left[offset].epoch == right[offset].epoch:
                        assert left[:offset + 1] == right[:offset + 1], (
                            f"nodes {a} and {b} share epoch {left[offset].epoch} at offset {offset} "
                            f"but not the prefix")
                        break

    @invariant()
    def high_watermark_monotonic_and_on_majority(self) -> None:
        for node_id, node in self.nodes.items():
            hw = getattr(node.state, "high_watermark", -1)
            if hw < 0:
                continue
            assert hw >= self.highest_hw.get(node_id, -1), (
                f"node {node_id} HW went from {self.highest_hw[node_id]} down to {hw}")
            self.highest_hw[node_id] = hw
            prefix = node.log.entries[:hw]
            holders = [v for v in VOTERS if self.nodes[v].log.entries[:hw] == prefix]
            assert len(holders) >= MAJORITY, f"node {node_id} HW {hw} is held only by voters {holders}"
            if isinstance(node.state, Leader):
                self._commit(prefix, node.state.epoch)

    def _commit(self, prefix: tuple[Any, ...], epoch: int) -> None:
        shared = min(len(prefix), len(self.committed))
        assert tuple(self.committed[:shared]) == prefix[:shared], "a committed record was replaced"
        for entry in prefix[shared:]:
            self.committed.append(entry)
            self.commit_epochs.append(epoch)

    @invariant()
    def leader_completeness(self) -> None:
        for node_id, node in self.nodes.items():
            if isinstance(node.state, Leader):
                for offset, (entry, epoch) in enumerate(zip(self.committed, self.commit_epochs)):
                    if epoch < node.state.epoch:
                        assert offset < node.log.end_offset and node.log.entries[offset] == entry, (
                            f"leader {node_id} of epoch {node.state.epoch} lacks committed offset {offset}")

    @invariant()
    def listener_sees_committed_records_and_its_leadership_after_them(self) -> None:
        """§3.12: what a listener was handed is held by a majority of voters; a leader is visible to its own listener
        only once the records through its epoch start were handed over."""
        for node_id, node in self.nodes.items():
            view = node.listener
            if view is None:
                continue
            handed = node.log.entries[:view.committed_end]
            holders = [v for v in VOTERS if self.nodes[v].log.entries[:view.committed_end] == handed]
            assert len(holders) >= MAJORITY, f"node {node_id}'s listener has {view.committed_end} records held " \
                                             f"only by voters {holders}"
            state = node.state
            if isinstance(state, Leader) and (view.leader_id, view.epoch) == (node_id, state.epoch):
                assert view.committed_end > state.epoch_start_offset, (
                    f"leader {node_id} of epoch {state.epoch} visible to its listener at {view.committed_end}, "
                    f"before its epoch start {state.epoch_start_offset}")

    @invariant()
    def committed_records_never_lost(self) -> None:
        for offset, entry in enumerate(self.committed):
            durable = [v for v in VOTERS if offset < self.nodes[v].log.flushed_end_offset
                       and self.nodes[v].log.entries[offset] == entry]
            assert len(durable) >= MAJORITY, f"committed offset {offset} is durable only on voters {durable}"


def run_model(model_seed: int, max_examples: int = 40, steps: int = 60, shrink: bool = True) -> None:
    """Run the model with a fixed seed (printed), derandomized; a failure shows the shortest rule sequence
    (``shrink=False`` stops at the first failure unshrunk, for checks that only need to see it fail)."""
    print(f"kraftspec raft model: seed={model_seed} max_examples={max_examples} steps={steps}")
    machine = seed(model_seed)(type(f"RaftQuorumModelSeed{model_seed}", (RaftQuorumModel,), {}))
    phases = tuple(Phase) if shrink else (Phase.explicit, Phase.reuse, Phase.generate)
    with without_local_constants():  # the seed alone decides the run (kraftspec.models.determinism)
        run_state_machine_as_test(machine, settings=settings(
            max_examples=max_examples, stateful_step_count=steps, derandomize=True, database=None, deadline=None,
            print_blob=True, phases=phases, report_multiple_bugs=False, suppress_health_check=list(HealthCheck)))


TestRaftQuorumModel = RaftQuorumModel.TestCase
