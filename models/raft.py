"""A simulated KRaft quorum: three voters and one observer over a faulty network (rules §3).

Hypothesis drives the rules (timer polls, message delivery in any order, loss, duplication, client
appends, crashes that lose unflushed records) and checks after every step that the reference keeps
Raft's safety properties. Any exception the reference raises (a fatal Kafka condition or an illegal
transition) is a failure too. :func:`run_model` runs it with a fixed seed and prints the seed; Hypothesis
prints the shortest failing sequence of rules. :class:`RaftSnapshotModel` adds snapshots (KIP-630): nodes freeze
snapshots of their committed logs and delete the log before them, so that lagging followers and observers that lost
their log catch up through FetchSnapshot; every invariant reads a node's log from offset 0, what lies before its
log start being the records of the snapshot it starts at (:meth:`RaftQuorumModel.held`).
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, Phase, note, seed, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule, \
    run_state_machine_as_test

from kraftspec.models.determinism import without_local_constants
from kraftspec.reference import raft, raft_log, raft_state
from kraftspec.reference.frozen import FrozenMap, evolve
from kraftspec.reference.raft_log import LogEntry
from kraftspec.reference.raft_messages import (
    Append,
    CreateSnapshot,
    DeleteBeforeSnapshot,
    FetchResponse,
    Resign,
    Send,
    Tick,
)
from kraftspec.reference.raft_state import Follower, Leader, QuorumConfig, Unattached

VOTERS = frozenset({1, 2, 3})
OBSERVER = 4
NODES = (1, 2, 3, OBSERVER)
ENDPOINTS = FrozenMap({v: (f"CONTROLLER://controller{v}:9093",) for v in VOTERS})
DIRECTORY_IDS = FrozenMap({1: "a3JhZnRzcGVjLW5vZGUtMQ", 2: "a3JhZnRzcGVjLW5vZGUtMg", 3: "a3JhZnRzcGVjLW5vZGUtMw",
                           4: "a3JhZnRzcGVjLW5vZGUtNA"})
"""Each node's directory id (the base64 UUID of ``kraftspec-node-N``): a Kafka 4.x node always has one, and a leader
answers an UpdateRaftVoter request without one INVALID_REQUEST, which its sender takes as fatal (§3.15)."""
CONFIG = QuorumConfig(election_timeout_ms=1000, fetch_timeout_ms=2000, election_backoff_max_ms=100,
                      request_timeout_ms=1000, fetch_max_wait_ms=500, fetch_max_records=3)
MAX_IN_FLIGHT = 40
MAJORITY = len(VOTERS) // 2 + 1
SNAPSHOT_CONFIG = evolve(CONFIG, fetch_snapshot_max_bytes=100)
""":class:`RaftSnapshotModel`'s configuration: FetchSnapshot answers carry at most 100 bytes, so snapshots come in
chunks."""
SNAPSHOT_SIZES = (250, 300, 450)
"""Snapshot sizes in bytes drawn by :class:`RaftSnapshotModel`: three or five chunks, the last short or full."""
CATCH_UP_ROUNDS = 20
"""Rounds of 300 ms in ``catch_up_quietly``: enough hops for a Fetch answered with a snapshot id, five chunks and a
Fetch of the records after them, with a request timeout (1000 ms) on the way."""

jitters = st.integers(min_value=0, max_value=CONFIG.election_timeout_ms - 1)
bootstraps = st.integers(min_value=0, max_value=len(VOTERS) - 1)
"""``RequestManager``'s random start index into the bootstrap servers (the voters), ``raft.step``'s ``bootstrap``."""


def restarted(node: raft.RaftNode, now: int, jitter: int) -> raft.RaftNode | None:
    """``node`` restarted, or None when the reference refuses to restart it (ValueError), as Kafka's client throws
    starting it: a removed voter whose quorum-state file holds its own vote (``QuorumState.initialize``, the
    ``CandidateState`` constructor). Simulations then draw no crash: a run goes on without it rather than end."""
    try:
        return raft.restart(node, now, jitter)
    except ValueError:
        return None


def fetch_answer_holds_whole_batches(leader: int, log: tuple[LogEntry, ...], records: tuple[LogEntry, ...]) -> None:
    """A Fetch answer's records are whole batches of the leader's log: they start a batch and the leader's next
    record, if any, starts another (``KafkaRaftLog.read`` never returns part of a batch)."""
    count = len(records)
    starts = [i for i, entry in enumerate(log) if entry == records[0] and log[i:i + count] == records]
    assert starts, f"leader {leader} answered a Fetch with records its log does not hold: {records}"
    end = starts[0] + count
    assert records[0].starts_batch and (end == len(log) or log[end].starts_batch), (
        f"leader {leader} answered a Fetch with part of a batch: {records}")


ENVIRONMENT_RULES = frozenset({
    "append", "append_batch", "catch_up_quietly", "crash", "deliver", "deliver_all", "duplicate", "lose", "resign",
    "run_isolated", "run_quietly", "tick", "tick_all"
})
"""Rules that move the environment, named for what happens rather than after a reference rule: the network (delivery,
loss, duplication), the clock, crashes and the client inputs ``raft.step`` takes (Append, Resign)."""


class QuorumNetwork(RuleBasedStateMachine):
    """The clock, the network and the client of a simulated quorum, which every Raft model shares: rules ``tick``,
    ``tick_all``, ``run_quietly``, ``deliver``, ``deliver_all``, ``lose``, ``append`` over ``self.nodes``; a model
    decides how its nodes start and what its network does with what they send (``_step``, ``_deliver``)."""

    def __init__(self) -> None:
        super().__init__()
        self.now = 0
        self.nodes: dict[int, raft.RaftNode] = {}
        self.in_flight: list[Send] = []
        self.next_value = 0
        self.leaders: dict[int, int] = {}  # epoch -> the one leader seen in it

    def _step(self, node: int, message: Any, jitter: int, bootstrap: int) -> None:
        self.nodes[node], sends = raft.step(self.nodes[node], message, self.now, jitter, bootstrap)
        for send in sends:
            if isinstance(send.message, FetchResponse) and send.message.records:
                fetch_answer_holds_whole_batches(node, self.nodes[node].log.entries, send.message.records)
        self.in_flight.extend(s for s in sends if s.destination in self.nodes)
        del self.in_flight[:-MAX_IN_FLIGHT]  # the network loses the oldest when saturated

    def _deliver(self, send: Send, jitter: int, bootstrap: int) -> None:
        self._step(send.destination, send.message, jitter, bootstrap)

    def _isolate(self, node: int, rounds: int, jitter: int, bootstrap: int) -> None:
        """The calm period of every model's ``run_isolated``: rounds of 300 ms in which a client appends a record, every
        node polls and every message arrives in order (``_deliver``) except those to ``node``, which are lost."""
        for _ in range(rounds):
            self.append(jitter, bootstrap)
            self.tick_all(300, jitter, bootstrap)
            batch, self.in_flight = self.in_flight, []
            for send in batch:
                if send.destination != node:
                    self._deliver(send, jitter, bootstrap)

    def _newest_leader(self) -> int | None:
        leaders = [n for n, node in self.nodes.items() if isinstance(node.state, Leader)]
        return max(leaders, key=lambda n: self.nodes[n].state.epoch) if leaders else None

    @invariant()
    def at_most_one_leader_per_epoch(self) -> None:
        """Every model's first safety property: no two nodes lead the same epoch (§3.5)."""
        for node_id, node in self.nodes.items():
            if isinstance(node.state, Leader):
                first = self.leaders.setdefault(node.state.epoch, node_id)
                assert first == node_id, f"epoch {node.state.epoch} has leaders {first} and {node_id}"

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
        for node in sorted(self.nodes):
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
            self._deliver(send, jitter, bootstrap)

    @precondition(lambda self: self.in_flight)
    @rule(pick=st.integers(min_value=0, max_value=MAX_IN_FLIGHT), jitter=jitters, bootstrap=bootstraps)
    def deliver(self, pick: int, jitter: int, bootstrap: int) -> None:
        """Any in-flight message arrives (reordering)."""
        self._deliver(self.in_flight.pop(pick % len(self.in_flight)), jitter, bootstrap)

    @precondition(lambda self: self.in_flight)
    @rule(pick=st.integers(min_value=0, max_value=MAX_IN_FLIGHT))
    def lose(self, pick: int) -> None:
        """A message is lost."""
        self.in_flight.pop(pick % len(self.in_flight))

    @rule(jitter=jitters, bootstrap=bootstraps)
    def append(self, jitter: int, bootstrap: int) -> None:
        """A client appends one unique record to the newest leader, if there is one."""
        leader = self._newest_leader()
        if leader is not None:
            self.next_value += 1
            self._step(leader, Append(records=(f"r{self.next_value}",)), jitter, bootstrap)


class RaftQuorumModel(QuorumNetwork):
    """Rules ``tick``, ``tick_all``, ``run_quietly``, ``deliver``, ``deliver_all``, ``lose``, ``append`` (the
    :class:`QuorumNetwork`'s), ``duplicate``, ``resign``, ``crash``; invariants named after the property they
    protect."""

    config = CONFIG

    def __init__(self) -> None:
        super().__init__()
        self.highest_hw: dict[int, int] = {}  # node -> highest HW since its last restart
        self.committed: list[Any] = []  # the committed prefix (entries)
        self.commit_epochs: list[int] = []  # the leader epoch in which each committed offset was first committed
        self.snapshot_records: dict[tuple[int, int], tuple[LogEntry, ...]] = {}  # snapshot id -> the records it holds

    @initialize(draws=st.lists(jitters, min_size=len(NODES), max_size=len(NODES)),
                calm_rounds=st.sampled_from((0, 0, 8)))
    def start(self, draws: list[int], calm_rounds: int) -> None:
        """Every node starts fresh (empty log, no quorum-state file) with its own election jitter; some runs
        begin with a calm period, which usually elects a first leader."""
        note(f"model seed: {getattr(type(self), '_hypothesis_internal_use_seed', None)}")
        self.nodes = {n: raft.new_node(n, VOTERS, ENDPOINTS, self.config, now=0, jitter=j,
                                       directory_id=DIRECTORY_IDS[n])
                      for n, j in zip(NODES, draws)}
        for _ in range(calm_rounds):
            self.tick_all(300, draws[0], draws[1] % len(VOTERS))
            self.deliver_all(draws[0], draws[1] % len(VOTERS))

    @precondition(lambda self: self.in_flight)
    @rule(pick=st.integers(min_value=0, max_value=MAX_IN_FLIGHT))
    def duplicate(self, pick: int) -> None:
        """A message is delivered twice."""
        self.in_flight.append(self.in_flight[pick % len(self.in_flight)])

    @rule(node=st.sampled_from(sorted(VOTERS)), jitter=jitters, bootstrap=bootstraps)
    def resign(self, node: int, jitter: int, bootstrap: int) -> None:
        """A leader resigns its epoch (a resign request; ``resign`` refuses any other node's call)."""
        if raft_state.leader_of(self.nodes[node].state) == node:
            self._step(node, Resign(epoch=self.nodes[node].state.epoch), jitter, bootstrap)

    @rule(node=st.sampled_from(NODES), jitter=jitters)
    def crash(self, node: int, jitter: int) -> None:
        """A node crashes and restarts: unflushed records and messages to it are lost (no crash for a node that could
        not restart: :func:`restarted`)."""
        fresh = restarted(self.nodes[node], self.now, jitter)
        if fresh is None:
            return
        self.nodes[node] = fresh
        self.in_flight = [s for s in self.in_flight if s.destination != node]
        self.highest_hw.pop(node, None)

    # ---------------------------------------------------------------------------------------------
    # Invariants

    def held(self, node_id: int) -> tuple[LogEntry, ...]:
        """Node ``node_id``'s records from offset 0 to its log end: those of the snapshot its log starts at (as the
        snapshot's creator held them), then its log's entries."""
        log = self.nodes[node_id].log
        if log.start_offset == 0:
            return log.entries
        first = next((s for s in log.snapshots if s.end_offset == log.start_offset), None)
        assert first is not None and first.id in self.snapshot_records, (
            f"node {node_id}'s log starts at {log.start_offset}, where no snapshot it holds ends: {log.snapshots}")
        return self.snapshot_records[first.id] + log.entries

    @invariant()
    def only_voters_campaign(self) -> None:
        state = self.nodes[OBSERVER].state if self.nodes else None
        assert state is None or isinstance(state, (Unattached, Follower)), f"observer is {state.role}"

    @invariant()
    def log_matching(self) -> None:
        logs = [(n, self.held(n)) for n in self.nodes]
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
            prefix = self.held(node_id)[:hw]
            holders = [v for v in VOTERS if self.held(v)[:hw] == prefix]
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
                held = self.held(node_id)
                for offset, (entry, epoch) in enumerate(zip(self.committed, self.commit_epochs)):
                    if epoch < node.state.epoch:
                        assert offset < node.log.end_offset and held[offset] == entry, (
                            f"leader {node_id} of epoch {node.state.epoch} lacks committed offset {offset}")

    @invariant()
    def listener_sees_committed_records_and_its_leadership_after_them(self) -> None:
        """§3.12: what a listener was handed is held by a majority of voters; a leader is visible to its own listener
        only once the records through its epoch start were handed over."""
        for node_id, node in self.nodes.items():
            view = node.listener
            if view is None:
                continue
            handed = self.held(node_id)[:view.committed_end]
            holders = [v for v in VOTERS if self.held(v)[:view.committed_end] == handed]
            assert len(holders) >= MAJORITY, f"node {node_id}'s listener has {view.committed_end} records held " \
                                             f"only by voters {holders}"
            state = node.state
            if isinstance(state, Leader) and (view.leader_id, view.epoch) == (node_id, state.epoch):
                assert view.committed_end > state.epoch_start_offset, (
                    f"leader {node_id} of epoch {state.epoch} visible to its listener at {view.committed_end}, "
                    f"before its epoch start {state.epoch_start_offset}")

    @invariant()
    def committed_records_never_lost(self) -> None:
        held = {v: self.held(v) for v in VOTERS}  # a snapshot survives a crash: what lies before a log start is durable
        for offset, entry in enumerate(self.committed):
            durable = [v for v in VOTERS if offset < max(self.nodes[v].log.flushed_end_offset,
                                                         self.nodes[v].log.start_offset)
                       and held[v][offset] == entry]
            assert len(durable) >= MAJORITY, f"committed offset {offset} is durable only on voters {durable}"


class RaftSnapshotModel(RaftQuorumModel):
    """The quorum with snapshots (KIP-630, rules §3.16): rules ``freeze_snapshot``, ``delete_before_snapshot``,
    ``freeze_snapshot_on_every_node``, ``run_isolated`` (a node falls behind) and ``catch_up_quietly`` besides the
    quorum's; FetchSnapshot in chunks (:data:`SNAPSHOT_CONFIG`) travels with the other messages. The model keeps what
    each snapshot id holds, as its creator held it."""

    config = SNAPSHOT_CONFIG

    @rule(count=st.integers(min_value=2, max_value=3), jitter=jitters, bootstrap=bootstraps)
    def append_batch(self, count: int, jitter: int, bootstrap: int) -> None:
        """A client appends ``count`` unique records at once to the newest leader, which writes them as one batch:
        fetches (``fetch_max_records`` 3) and snapshots must keep it whole."""
        leader = self._newest_leader()
        if leader is not None:
            records = tuple(f"r{self.next_value + i}" for i in range(1, count + 1))
            self.next_value += count
            self._step(leader, Append(records=records), jitter, bootstrap)

    def _freeze(self, node_id: int, back: int, size: int, jitter: int, bootstrap: int) -> None:
        """The state machine of ``node_id`` snapshots ``back`` records below its high watermark (at the start of the
        batch holding that offset), in the epoch of the record before it; a state machine snapshots forward only: past its log start and not before its
        latest snapshot (an older id is refused: ``validateOffsetAndEpoch`` sends an epoch older than the earliest
        snapshot's to the snapshot)."""
        node = self.nodes[node_id]
        hw = getattr(node.state, "high_watermark", -1)
        latest = node.log.latest_snapshot
        lowest = max(node.log.start_offset + 1, latest.end_offset if latest is not None else 0)
        if hw < lowest:
            return  # no committed record past the log start and the latest snapshot: nothing to snapshot
        records = self.held(node_id)
        end = raft_log.batch_base_offset(node.log, max(lowest, hw - back))
        end = end if end >= lowest else hw
        epoch = records[end - 1].epoch
        self._step(node_id, CreateSnapshot(end_offset=end, epoch=epoch, size=size), jitter, bootstrap)
        if any(s.id == (end, epoch) for s in self.nodes[node_id].log.snapshots):
            known = self.snapshot_records.setdefault((end, epoch), records[:end])
            assert known == records[:end], f"node {node_id} froze snapshot {(end, epoch)} of other records than " \
                                           f"the snapshot of that id frozen before"

    def _clean(self, node_id: int, jitter: int, bootstrap: int) -> None:
        """The log cleaner of ``node_id`` deletes the log before its latest snapshot, when that is past its log start
        and within its high watermark (``KafkaRaftLog.maybeClean`` picks by retention; here the latest)."""
        node = self.nodes[node_id]
        latest = node.log.latest_snapshot
        if (latest is not None and node.log.start_offset < latest.end_offset
                <= max(getattr(node.state, "high_watermark", -1), 0)):
            self._step(node_id, DeleteBeforeSnapshot(end_offset=latest.end_offset, epoch=latest.epoch), jitter,
                       bootstrap)

    @rule(node=st.sampled_from(NODES), rounds=st.integers(min_value=1, max_value=8), jitter=jitters,
          bootstrap=bootstraps)
    def run_isolated(self, node: int, rounds: int, jitter: int, bootstrap: int) -> None:
        """A calm period in which one node hears nothing: rounds of 300 ms in which a client appends a record, every
        node polls and every message arrives in order except those to ``node``, which are lost (it falls behind the
        others' log starts)."""
        self._isolate(node, rounds, jitter, bootstrap)

    @rule(jitter=jitters, bootstrap=bootstraps)
    def catch_up_quietly(self, jitter: int, bootstrap: int) -> None:
        """A long calm period (:data:`CATCH_UP_ROUNDS` rounds of :meth:`run_quietly`): when one leader led one epoch
        throughout, every node (voter or observer) that follows it at the end has reached that leader's log start as
        it was before, whatever it lacked (the leader answers a fetch below its log start with its snapshot, fetched
        in chunks; a restarted node first finds the leader through a bootstrap server; a voter's UpdateRaftVoter is
        answered once per leader, so its Fetches keep going to the leader)."""
        leaders = [n for n, node in self.nodes.items() if isinstance(node.state, Leader)]
        if not leaders:
            return
        leader = max(leaders, key=lambda n: self.nodes[n].state.epoch)
        epoch, start = self.nodes[leader].state.epoch, self.nodes[leader].log.start_offset
        leading = True
        for _ in range(CATCH_UP_ROUNDS):
            self.run_quietly(1, jitter, bootstrap)
            state = self.nodes[leader].state
            leading = leading and isinstance(state, Leader) and state.epoch == epoch
        for node_id, node in self.nodes.items():
            following = isinstance(node.state, Follower) and (node.state.leader_id, node.state.epoch) == (leader,
                                                                                                          epoch)
            assert not (leading and following) or node.log.end_offset >= start, (
                f"node {node_id} (log end {node.log.end_offset}) following leader {leader} in epoch {epoch} "
                f"stayed behind its log start {start} through a calm period")

    @rule(node=st.sampled_from(NODES), back=st.sampled_from((0, 0, 1, 3)), size=st.sampled_from(SNAPSHOT_SIZES),
          jitter=jitters, bootstrap=bootstraps)
    def freeze_snapshot(self, node: int, back: int, size: int, jitter: int, bootstrap: int) -> None:
        """A node's state machine creates and freezes a snapshot of committed records (``createSnapshot``)."""
        self._freeze(node, back, size, jitter, bootstrap)

    @rule(node=st.sampled_from(NODES), jitter=jitters, bootstrap=bootstraps)
    def delete_before_snapshot(self, node: int, jitter: int, bootstrap: int) -> None:
        """A node's log cleaner advances its log start to its latest snapshot (``deleteBeforeSnapshot``)."""
        self._clean(node, jitter, bootstrap)

    @rule(size=st.sampled_from(SNAPSHOT_SIZES), jitter=jitters, bootstrap=bootstraps)
    def freeze_snapshot_on_every_node(self, size: int, jitter: int, bootstrap: int) -> None:
        """Every node snapshots at its high watermark and deletes its log before the snapshot: a follower or observer
        behind every log start can only catch up by fetching a snapshot."""
        for node in NODES:
            self._freeze(node, 0, size, jitter, bootstrap)
            self._clean(node, jitter, bootstrap)

    @invariant()
    def log_start_within_high_watermark(self) -> None:
        """The log start never passes a known high watermark: only committed records are deleted or fetched as a
        snapshot (a restarted node knows no high watermark until a leader tells it)."""
        for node_id, node in self.nodes.items():
            hw = getattr(node.state, "high_watermark", -1)
            assert hw < 0 or node.log.start_offset <= hw, (
                f"node {node_id}'s log starts at {node.log.start_offset}, past its high watermark {hw}")

    @invariant()
    def snapshots_end_at_batch_ends(self) -> None:
        """Every snapshot a node holds ends where a batch of its log ends: the record after it starts one (a follower
        that loads it fetches from there, and Kafka's log reads whole batches: ``createNewSnapshot``)."""
        for node_id, node in self.nodes.items():
            records = self.held(node_id)
            for snapshot in node.log.snapshots:
                assert snapshot.end_offset >= len(records) or records[snapshot.end_offset].starts_batch, (
                    f"node {node_id}'s snapshot {snapshot.id} ends inside a batch")

    @invariant()
    def snapshots_hold_the_committed_prefix(self) -> None:
        """Every snapshot a node holds, frozen by it or fetched from a leader and loaded, holds a prefix of the
        committed records that a majority of voters holds: a follower that loads one has the leader's committed
        prefix."""
        held = {v: self.held(v) for v in VOTERS}
        for node_id, node in self.nodes.items():
            for snapshot in node.log.snapshots:
                records = self.snapshot_records.get(snapshot.id)
                assert records is not None, f"node {node_id} holds snapshot {snapshot.id}, which no node froze"
                shared = min(len(records), len(self.committed))
                assert records[:shared] == tuple(self.committed[:shared]), (
                    f"node {node_id}'s snapshot {snapshot.id} differs from the committed records")
                holders = [v for v in VOTERS if held[v][:snapshot.end_offset] == records]
                assert len(holders) >= MAJORITY, (
                    f"node {node_id}'s snapshot {snapshot.id} is held only by voters {holders}")


def run_model(model_seed: int, max_examples: int = 40, steps: int = 60, shrink: bool = True,
              snapshots: bool = False) -> None:
    """Run the model with a fixed seed (printed), derandomized; a failure shows the shortest rule sequence
    (``shrink=False`` stops at the first failure unshrunk, for checks that only need to see it fail); ``snapshots``
    runs :class:`RaftSnapshotModel`."""
    model = RaftSnapshotModel if snapshots else RaftQuorumModel
    print(f"kraftspec raft model: seed={model_seed} max_examples={max_examples} steps={steps}"
          + (" snapshots" if snapshots else ""))
    machine = seed(model_seed)(type(f"{model.__name__}Seed{model_seed}", (model,), {}))
    phases = tuple(Phase) if shrink else (Phase.explicit, Phase.reuse, Phase.generate)
    with without_local_constants():  # the seed alone decides the run (kraftspec.models.determinism)
        run_state_machine_as_test(machine, settings=settings(
            max_examples=max_examples, stateful_step_count=steps, derandomize=True, database=None, deadline=None,
            print_blob=True, phases=phases, report_multiple_bugs=False, suppress_health_check=list(HealthCheck)))


TestRaftQuorumModel = RaftQuorumModel.TestCase
TestRaftSnapshotModel = RaftSnapshotModel.TestCase
