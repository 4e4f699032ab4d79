"""A simulated kraft.version 1 quorum whose voters change (KIP-853, rules §3.14–§3.15).

Five nodes bootstrapped with voters 1, 2, 3 (the checkpoint ``0-0``, as ``kafka-storage format
--initial-controllers`` writes it): node 4 an observer controller with ``controller.quorum.auto.join.enable``, which
joins the voters by itself (KIP-853's auto-join, ``canBecomeVoter``), and node 5 a broker (an observer that cannot
become a voter) with the same setting; Hypothesis drives timer polls, delivery in any order, loss, client appends and
admin AddRaftVoter / RemoveRaftVoter requests to the newest leader, whose ApiVersions request the environment answers
with the addressee's kraft.version range. After every step it checks the properties a voter change must keep: one
leader per epoch, a leader's high watermark advancing only over records a majority of its voter set in force holds,
consecutive voter sets in a log sharing a majority, and only nodes that can become voters in a voter set; the rule
``run_fairly`` checks a bounded liveness property: under a fair schedule the auto-joining controller becomes a voter of
the leader's committed voter set (its own view may lag: after a truncation it does not read a VotersRecord rewritten
below its next offset to read until it restarts, as Kafka 4.3's ``KRaftControlRecordStateMachine`` does,
``test_raft_reconfig_client_scenarios.test_voters_record_rewritten_below_the_next_offset_is_not_read``). That same
behaviour lets a voter truncated that way keep a stale voter set and win an election with a removed voter's vote (two
leaders in one epoch, a committed record truncated): seeds other than the fixed one find it once auto-join makes voter
changes frequent; it is Kafka's code as read, confirmed on Kafka (docs/kafka-findings.md). A Hypothesis run ends an
example once a node runs on a voter set its own log does not hold (:func:`stale_read`, :attr:`stop_at_findings`);
replayed past that point, a failure is raised as that :class:`KafkaFinding` and any other stays generic
(tests/test_raft_reconfig_model.py keeps shrunk runs of both). Not driven: crashes. Nodes
snapshot their committed records and delete their logs before them (KIP-630), so a lagging or new voter catches up by
FetchSnapshot in chunks and must take its voters from the snapshot it loads; a node's records before its log start are
those of the snapshot it starts at, as the model recorded them when a node froze it. A BeginQuorumEpoch answer from a
voter the leader has since removed is lost: Kafka 4.3's leader throws on it (``LeaderState.addAcknowledgementFrom``;
``test_raft_reconfig_client_scenarios.test_begin_quorum_epoch_answer_from_removed_voter``).
"""

from __future__ import annotations

import base64
import functools
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Optional

from hypothesis import event, note, reject
from hypothesis.errors import UnsatisfiedAssumption
from hypothesis import strategies as st
from hypothesis.stateful import initialize, invariant, rule

from kraftspec.models.raft import CATCH_UP_ROUNDS, CONFIG, MAX_IN_FLIGHT, NODES, SNAPSHOT_CONFIG, SNAPSHOT_SIZES, \
    QuorumNetwork, bootstraps, jitters
from kraftspec.reference import raft, raft_voter_history
from kraftspec.reference.frozen import FrozenMap, evolve
from kraftspec.reference.raft_log import LogEntry, RaftLog, Snapshot
from kraftspec.reference.raft_messages import (
    AddRaftVoterRequest,
    ApiVersionsRequest,
    ApiVersionsResponse,
    CreateSnapshot,
    DeleteBeforeSnapshot,
    FetchSnapshotResponse,
    QuorumEpochResponse,
    RemoveRaftVoterRequest,
    Send,
    Tick,
)
from kraftspec.reference.raft_state import Leader
from kraftspec.reference.raft_voters import (
    KRaftVersionRecord,
    VoterNode,
    VoterSet,
    VotersRecord,
    from_voters_record,
    has_overlapping_majority,
    is_voter,
    to_voters_record,
)

INITIAL_VOTERS = (1, 2, 3)
LISTENER = "CONTROLLER"
AUTO_JOINER = 4
"""The observer controller with ``controller.quorum.auto.join.enable`` (the admin may still add or remove it)."""
BROKER = 5
"""An observer that cannot become a voter (``canBecomeVoter`` false: a broker), configured with auto-join too."""
MODEL_NODES = (*NODES, BROKER)
AUTO_JOIN_CONFIG = evolve(CONFIG, auto_join=True)
FAIR_ROUNDS = 240
"""Rounds of 100 ms in ``run_fairly`` (24 s, a dozen fetch timeouts): enough for an election, the observer to follow
and catch up, the update-voter-set period (the fetch timeout) to pass and its AddRaftVoter to commit, with an expired
voter change or a lagging refusal (another period) on the way."""

ENVIRONMENT_RULES = frozenset({"append", "deliver", "deliver_all", "lose", "request_add_voter",
                               "request_remove_voter", "run_fairly", "run_isolated", "run_quietly", "tick", "tick_all"})
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
    """A node formatted with the initial voters: the bootstrap checkpoint holds kraft.version 1 and their set; the
    voters and the auto-joiner are controllers (``canBecomeVoter``), the auto-joiner and the broker run with
    ``controller.quorum.auto.join.enable``."""
    initial = VoterSet(voters=FrozenMap({v: voter_node(v) for v in INITIAL_VOTERS}))
    records = FrozenMap({(0, 0): (KRaftVersionRecord(kraft_version=1), to_voters_record(initial))})
    log = RaftLog(snapshots=(Snapshot(end_offset=0, epoch=0, size=100),))
    config = AUTO_JOIN_CONFIG if node_id in (AUTO_JOINER, BROKER) else CONFIG
    config = evolve(config, fetch_snapshot_max_bytes=SNAPSHOT_CONFIG.fetch_snapshot_max_bytes)  # snapshots in chunks
    # Kafka numbers the bootstrap servers (the initial voters' addresses) -2, -3, ...; the model names each by the id
    # of the node listening there, in the same order, so that its network delivers the bootstrap fetches.
    return raft.new_dynamic_node(node_id, directory(node_id), listeners(node_id), config, log, records, now=0,
                                 jitter=jitter, can_become_voter=node_id != BROKER,
                                 bootstrap_servers=tuple(sorted(INITIAL_VOTERS)))


class KafkaFinding(Exception):
    """A failure the model traces to a documented Kafka 4.3 problem (docs/kafka-findings.md), not to the model or the
    reference: raised instead of the generic invariant violation or fatal error it caused."""


def stale_read(node: raft.RaftNode, snapshot_records: Callable[[], tuple[LogEntry, ...]]) -> Optional[str]:
    """Why ``node`` runs on a voter set its own log and snapshot (``snapshot_records``: those before its log start) do
    not hold, the last VotersRecord there lying below its read position (docs/kafka-findings.md §1:
    ``KRaftControlRecordStateMachine.truncateNewEntries`` keeps ``nextOffset``), or None when it runs on the set it
    holds."""
    log = node.log
    found = next(((log.start_offset + i, e.record) for i, e in reversed(list(enumerate(log.entries)))
                  if isinstance(e.record, VotersRecord)), None)
    if found is None:
        found = next(((i, e.record) for i, e in reversed(list(enumerate(snapshot_records())))
                      if isinstance(e.record, VotersRecord)), None)
    if found is None:
        return None
    offset, record = found
    logged = frozenset(v.voter_key.id for v in record.voters)
    next_offset = node.dynamic.control.next_offset
    if node.voters == logged or next_offset <= offset:
        return None
    return (f"its log holds voters {sorted(logged)} at offset {offset}, below its read position {next_offset}, but it "
            f"runs with voters {sorted(node.voters)}")


def attributed(check: Callable[..., None]) -> Callable[..., None]:
    """``check`` (an invariant or a rule) with its failures attributed as :meth:`RaftReconfigModel._attributed` does."""
    @functools.wraps(check)
    def attributed_check(self: "RaftReconfigModel", *args: Any, **kwargs: Any) -> None:
        with self._attributed():
            check(self, *args, **kwargs)
    return attributed_check


class RaftReconfigModel(QuorumNetwork):
    """Rules ``tick``, ``tick_all``, ``run_quietly``, ``deliver``, ``deliver_all``, ``lose``, ``append`` (the
    :class:`~kraftspec.models.raft.QuorumNetwork`'s; ``tick`` polls nodes 1-4, the others every node),
    ``request_add_voter``, ``request_remove_voter``, ``run_fairly``, ``freeze_snapshot``, ``delete_before_snapshot``,
    ``freeze_snapshot_on_every_node``; invariants named after the property they protect."""

    stop_at_findings = True
    """A Hypothesis run ends an example (rejected, counted as an event) once a node runs on a stale voter set: past that
    point Kafka 4.3 itself breaks the invariants, so the run would report Kafka's documented problem, not a new one.
    The replays of tests/test_raft_reconfig_model.py turn it off to show the consequence as a :class:`KafkaFinding`."""

    def __init__(self) -> None:
        super().__init__()
        self.next_request = 1
        self.leader_hw: dict[int, tuple[int, int]] = {}  # node -> (epoch, HW) last seen while it led
        self.snapshot_entries: dict[tuple[int, int], tuple[LogEntry, ...]] = {}  # snapshot id -> the records it holds
        self.first_chunks: dict[int, tuple[Any, ...]] = {}  # node -> control records of the last chunk 0 it received
        self.stale_reads: dict[int, str] = {}  # node -> when it first ran on a voter set its log does not hold
        self.last_checked: dict[int, tuple[int, Any]] = {}  # node -> (log id, (voters, read position, voter)) checked
        self.checked_logs: dict[int, RaftLog] = {}  # node -> the log last checked

    @contextmanager
    def _attributed(self) -> Iterator[None]:
        """A failure after some node ran on a stale voter set (:func:`stale_read`) is that Kafka problem's consequence:
        it is re-raised as :class:`KafkaFinding`; any other failure stays what it is."""
        try:
            yield
        except (KafkaFinding, UnsatisfiedAssumption):  # already attributed, or the example ended at the finding
            raise
        except Exception as exc:
            if not self.stale_reads:
                raise
            raise KafkaFinding(f"docs/kafka-findings.md {next(iter(self.stale_reads.values()))}; "
                               f"then {type(exc).__name__}: {str(exc).splitlines()[0]}") from exc

    @initialize(draws=st.lists(jitters, min_size=len(MODEL_NODES), max_size=len(MODEL_NODES)),
                calm_rounds=st.sampled_from((0, 8, 8)))
    def start(self, draws: list[int], calm_rounds: int) -> None:
        """Every node starts from the bootstrap checkpoint with its own election jitter; most runs begin calm."""
        note(f"model seed: {getattr(type(self), '_hypothesis_internal_use_seed', None)}")
        self.nodes = {n: bootstrapped(n, j) for n, j in zip(MODEL_NODES, draws)}
        self.run_quietly(calm_rounds, draws[0], draws[1] % len(INITIAL_VOTERS))

    def _step(self, node: int, message: Any, jitter: int, bootstrap: int) -> None:
        with self._attributed():
            self._step_attributed(node, message, jitter, bootstrap)
        self._note_stale_read(node)

    def _note_stale_read(self, node_id: int) -> None:
        """Remembers when ``node_id`` first runs on a stale voter set (:func:`stale_read`) as a voter in its own view
        (it votes, and may lead), or with none at all; checked again only when its log, voters or read position
        changed."""
        node = self.nodes[node_id]
        seen = (node.voters, node.dynamic.control.next_offset, node.is_voter)
        if node_id in self.stale_reads or self.last_checked.get(node_id) == (id(node.log), seen):
            return
        self.last_checked[node_id] = (id(node.log), seen)
        self.checked_logs[node_id] = node.log  # keeps the id checked from being reused
        how = stale_read(node, lambda: self.held(node_id)[:node.log.start_offset])
        if how is not None and node.is_voter:
            self.stale_reads[node_id] = f"§1 (stale control-record read position): node {node_id}: {how}"
        elif how is not None and not node.voters:  # it stands for no election, while its voters wait for its vote
            self.stale_reads[node_id] = f"§3 (voter history emptied): node {node_id}: {how}"
        if node_id in self.stale_reads and self.stop_at_findings:
            event(f"ended at docs/kafka-findings.md {self.stale_reads[node_id].split(' (')[0]}")
            reject()

    def _step_attributed(self, node: int, message: Any, jitter: int, bootstrap: int) -> None:
        self.nodes[node], sends = raft.step(self.nodes[node], message, self.now, jitter, bootstrap)
        for send in sends:
            if isinstance(send.message, ApiVersionsRequest):  # answered by the addressee's network layer
                self.in_flight.append(Send(destination=node, message=ApiVersionsResponse(
                    source=send.destination, kraft_version_range=raft.SUPPORTED_KRAFT_VERSIONS,
                    correlation_id=send.message.correlation_id)))
            elif send.destination in self.nodes:  # admin answers (destination -1) leave the quorum
                self.in_flight.append(send)
        del self.in_flight[:-MAX_IN_FLIGHT]
        if isinstance(self.nodes[node].state, Leader):  # a rule of many steps may change the voters after the HW moved
            self.high_watermark_advances_on_a_majority_of_the_voters_in_force()

    def _deliver(self, send: Send, jitter: int, bootstrap: int) -> None:
        receiver, message = self.nodes[send.destination], send.message
        if (isinstance(message, QuorumEpochResponse) and message.api == "BeginQuorumEpoch"
                and isinstance(receiver.state, Leader) and message.source not in receiver.voters):
            return  # see the module docstring: Kafka's leader throws on it
        if isinstance(message, FetchSnapshotResponse) and message.position == 0:
            self.first_chunks[send.destination] = message.control_records
        self._step(send.destination, message, jitter, bootstrap)
        if isinstance(message, FetchSnapshotResponse) and self.nodes[send.destination].log != receiver.log:
            self.a_loaded_snapshot_gives_its_voters(send.destination, receiver.dynamic.control.next_offset)

    def held(self, node_id: int) -> tuple[LogEntry, ...]:
        """Node ``node_id``'s records from offset 0 to its log end: those of the snapshot its log starts at, then its
        log's entries (the bootstrap checkpoint holds none)."""
        log = self.nodes[node_id].log
        if log.start_offset == 0:
            return log.entries
        first = next(s for s in log.snapshots if s.end_offset == log.start_offset)
        return self.snapshot_entries[first.id] + log.entries

    def _freeze(self, node_id: int, size: int, jitter: int, bootstrap: int) -> None:
        """The state machine of ``node_id`` snapshots its records up to its high watermark, in the epoch of the last
        one, when that is past its log start and its latest snapshot."""
        node = self.nodes[node_id]
        hw = getattr(node.state, "high_watermark", -1)
        latest = node.log.latest_snapshot
        if hw <= max(node.log.start_offset, latest.end_offset if latest is not None else 0):
            return
        records = self.held(node_id)[:hw]
        self._step(node_id, CreateSnapshot(end_offset=hw, epoch=records[-1].epoch, size=size), jitter, bootstrap)
        self.snapshot_entries.setdefault((hw, records[-1].epoch), records)

    def _clean(self, node_id: int, jitter: int, bootstrap: int) -> None:
        """The log cleaner of ``node_id`` deletes its log before its latest snapshot, when that is past its log start
        and within its high watermark."""
        log = self.nodes[node_id].log
        latest = log.latest_snapshot
        if log.start_offset < latest.end_offset <= max(getattr(self.nodes[node_id].state, "high_watermark", -1), 0):
            self._step(node_id, DeleteBeforeSnapshot(end_offset=latest.end_offset, epoch=latest.epoch), jitter,
                       bootstrap)

    def a_loaded_snapshot_gives_its_voters(self, node_id: int, read_before: int) -> None:
        """A node that loaded a snapshot fetched from its leader runs with the voter set its first chunk carried, the
        leader's in force at the snapshot's end (§3.14: ``handleFetchSnapshotResponse`` reloads the control records;
        none without a VotersRecord, these nodes having no static voters), not the one it had before. Kafka 4.3 reloads
        only when the control records were read below the snapshot's end (``read_before``, the next offset to read): a
        truncation keeps the read position, so a node that had read further loads nothing
        (``test_raft_snapshot_fetch_scenarios.test_snapshot_fetched_after_truncating_below_the_read_position``)."""
        node = self.nodes[node_id]
        snapshot = node.log.latest_snapshot
        if read_before < node.log.start_offset == snapshot.end_offset == node.log.end_offset:
            shipped = [r for r in self.first_chunks[node_id] if isinstance(r, VotersRecord)]
            expected = frozenset(v.voter_key.id for r in shipped[-1:] for v in r.voters)
            assert node.voters == expected, (
                f"node {node_id} loaded snapshot {snapshot.id} of voters {sorted(expected)} but runs with voters "
                f"{sorted(node.voters)}")

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

    @rule(jitter=jitters, bootstrap=bootstraps)
    @attributed
    def run_fairly(self, jitter: int, bootstrap: int) -> None:
        """Bounded liveness of auto-join: from here on a fair schedule (rounds of 100 ms in which every node polls, with
        election jitters a third of the timeout apart by node and bootstrap draws that change from round to round, and
        every message arrives in order) makes the
        auto-joining controller a voter within :data:`FAIR_ROUNDS` rounds: it catches up, asks, and the newest
        leader's committed voter set holds it."""
        for round_ in range(FAIR_ROUNDS):
            if self._auto_joiner_joined():
                return
            def spread(node: int) -> int:  # one node's election jitter in this round
                return (jitter + 331 * node + 97 * round_) % CONFIG.election_timeout_ms

            self.now += 100
            for node in sorted(self.nodes):  # the bootstrap server's draw varies too: every server gets asked
                self._step(node, Tick(), spread(node), bootstrap + round_)
            batch, self.in_flight = self.in_flight, []
            for send in batch:
                self._deliver(send, spread(send.destination), bootstrap + round_)
        leader = self._newest_leader()
        assert self._auto_joiner_joined(), (
            f"after {FAIR_ROUNDS} fair rounds node {AUTO_JOINER} is no voter: it is "
            f"{type(self.nodes[AUTO_JOINER].state).__name__}, the newest leader {leader} has voters "
            f"{None if leader is None else sorted(self.nodes[leader].voters)}")

    def _auto_joiner_joined(self) -> bool:
        """The newest leader's latest voter set holds the auto-joiner (with its directory) and is committed, or the
        auto-joiner leads (no observer then): a leader that removed itself keeps leading when the removal committed
        after its pending operation expired (Kafka 4.3 ``RemoveVoterHandler.highWatermarkUpdated`` resigns only while
        the operation is pending; ``LeaderState.maybeExpirePendingOperation``)."""
        leader = self._newest_leader()
        if leader is None:
            return False
        if leader == AUTO_JOINER:
            return True
        node = self.nodes[leader]
        entry = raft_voter_history.last_voter_set_entry(node.dynamic.control)
        return (entry is not None and entry[0] < node.state.high_watermark
                and is_voter(entry[1], raft.ReplicaKey(id=AUTO_JOINER, directory_id=directory(AUTO_JOINER))))

    @rule(node=st.sampled_from(NODES), size=st.sampled_from(SNAPSHOT_SIZES), jitter=jitters, bootstrap=bootstraps)
    def freeze_snapshot(self, node: int, size: int, jitter: int, bootstrap: int) -> None:
        """A node's state machine snapshots its committed records (``createSnapshot``): the snapshot starts with the
        kraft.version and voter set in force at its end."""
        self._freeze(node, size, jitter, bootstrap)

    @rule(node=st.sampled_from(NODES), jitter=jitters, bootstrap=bootstraps)
    def delete_before_snapshot(self, node: int, jitter: int, bootstrap: int) -> None:
        """A node's log cleaner advances its log start to its latest snapshot (``deleteBeforeSnapshot``)."""
        self._clean(node, jitter, bootstrap)

    @rule(node=st.sampled_from(NODES), rounds=st.integers(min_value=1, max_value=8),
          change=st.sampled_from((None, "add", "remove")), voter=st.sampled_from(NODES),
          size=st.sampled_from(SNAPSHOT_SIZES), jitter=jitters, bootstrap=bootstraps)
    def run_isolated(self, node: int, rounds: int, change: Optional[str], voter: int, size: int, jitter: int,
                     bootstrap: int) -> None:
        """A node falls behind a voter change and catches up by FetchSnapshot: the admin asks (``change``) to add or
        remove ``voter``; rounds of 300 ms follow in which a client appends a record, every node polls and every
        message arrives in order except those to ``node``, which are lost; then every node snapshots and deletes its
        log before the snapshot (:meth:`freeze_snapshot_on_every_node`) and a calm period lets ``node`` catch up."""
        if change == "add":
            self.request_add_voter(voter, jitter, bootstrap)
        elif change == "remove":
            self.request_remove_voter(voter, jitter, bootstrap)
        self._isolate(node, rounds, jitter, bootstrap)
        self.freeze_snapshot_on_every_node(size, jitter, bootstrap)
        self.run_quietly(CATCH_UP_ROUNDS, jitter, bootstrap)

    @rule(size=st.sampled_from(SNAPSHOT_SIZES), jitter=jitters, bootstrap=bootstraps)
    def freeze_snapshot_on_every_node(self, size: int, jitter: int, bootstrap: int) -> None:
        """Every node snapshots at its high watermark and deletes its log before the snapshot: a node behind the
        leader's new log start (a lagging voter, a new one) catches up only by fetching the snapshot."""
        for node in sorted(self.nodes):
            self._freeze(node, size, jitter, bootstrap)
            self._clean(node, jitter, bootstrap)

    # ---------------------------------------------------------------------------------------------
    # Invariants

    @invariant()
    @attributed
    def at_most_one_leader_per_epoch(self) -> None:
        """:meth:`QuorumNetwork.at_most_one_leader_per_epoch`, its failure attributed as the other invariants'."""
        super().at_most_one_leader_per_epoch()

    @invariant()
    @attributed
    def only_controllers_join_the_voters(self) -> None:
        """A node that cannot become a voter (a broker, ``canBecomeVoter`` false) never asks to join and never enters a
        voter set, auto-join or not (``shouldSendAddOrRemoveVoterRequest``, §3.15)."""
        for node_id, node in self.nodes.items():
            assert BROKER not in node.voters, f"node {node_id}'s voters {sorted(node.voters)} hold broker {BROKER}"

    @invariant()
    @attributed
    def high_watermark_advances_on_a_majority_of_the_voters_in_force(self) -> None:
        """A leader's HW moves only over records held by a majority of the voter set in force (§3.6, §3.14): the
        leader counts itself only while it is a voter. Checked after each step of a leader too, since a rule of many
        steps (an auto-join among them) may change the voter set after the HW moved."""
        for node_id, node in self.nodes.items():
            state = node.state
            if not isinstance(state, Leader):
                self.leader_hw.pop(node_id, None)
                continue
            before = self.leader_hw.get(node_id)
            self.leader_hw[node_id] = (state.epoch, state.high_watermark)
            if state.high_watermark < 0 or (before is not None and before == (state.epoch, state.high_watermark)):
                continue
            prefix = self.held(node_id)[:state.high_watermark]
            holders = sorted(v for v in node.voters if self.held(v)[:state.high_watermark] == prefix)
            assert len(holders) > len(node.voters) // 2, (
                f"leader {node_id} of epoch {state.epoch} moved its HW to {state.high_watermark}, held only by "
                f"{holders} of its voters {sorted(node.voters)}")

    @invariant()
    @attributed
    def consecutive_voter_sets_share_a_majority(self) -> None:
        """One voter change at a time (KIP-853): each VotersRecord in a log differs from the set before it by at most
        one voter (``VoterSet.hasOverlappingMajority``)."""
        initial = VoterSet(voters=FrozenMap({v: voter_node(v) for v in INITIAL_VOTERS}))
        for node_id, node in self.nodes.items():
            previous = initial
            for entry in self.held(node_id):
                if isinstance(entry.record, VotersRecord):
                    current = from_voters_record(entry.record)
                    assert has_overlapping_majority(previous, current), (
                        f"node {node_id}'s log changes the voters from {sorted(previous.voters)} to "
                        f"{sorted(current.voters)} at once")
                    previous = current
