"""A Hypothesis state machine of one partition: controller, leader and followers with their logs.

Rules race AlterPartition requests (delayed, reordered, duplicated, carrying stale epochs) against broker
fencing/unfencing, controlled shutdown, restarts with a new broker epoch (clean, unclean, or unclean
with the log's tail lost), reassignments and elections. Brokers learn the controller's state only when
``propagate`` runs for them, so stale leaders keep appending and followers keep fetching from them.

Invariants (rules §2.5, §2.6, §2.12): the leader is in the ISR or there is none, and is an
active broker; ISR ⊆ replicas without duplicates and never empty without ELR; leader and partition
epochs only grow; every offset below the leader's HW is in every ISR member's log; with unclean
election disabled no committed record is lost, unless a lost log tail was not covered by ELR (KIP-966: one
loss with min ISR 2 and ELR is covered; Kafka without ELR, or after more unclean restarts, may lose data).

Races the random search rarely reaches are spelled out in ``RACES`` and replayed by :func:`replay`.
Rule names follow the reference: ``append``, ``follower_fetch``, ``maybe_shrink_isr``,
``alter_partition``, ``handle_broker_fenced``, ``handle_broker_unfenced``,
``handle_broker_in_controlled_shutdown``, ``handle_broker_shutdown``, ``elect_leaders``,
``alter_partition_reassignment``, ``maybe_balance_partition_leaders``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from kraftspec.reference import metadata_version as mv
from kraftspec.reference.alter_partition import AlterPartitionPartition, AlterPartitionRequest, AlterPartitionTopic, alter_partition
from kraftspec.reference.broker_registration import BrokerRegistration
from kraftspec.reference.elect_leaders import PREFERRED_ELECTION, UNCLEAN_ELECTION, ElectLeadersRequest, elect_leaders, maybe_balance_partition_leaders
from kraftspec.reference.errors import Errors
from kraftspec.reference.frozen import FrozenMap, PersistentMap
from kraftspec.reference.partition import PartitionRegistration, TopicInfo, apply_records
from kraftspec.reference.partition_events import (
    handle_broker_fenced,
    handle_broker_in_controlled_shutdown,
    handle_broker_shutdown,
    handle_broker_unfenced,
)
from kraftspec.reference import partition_leader as pl
from kraftspec.reference.reassignment import alter_partition_reassignment
from kraftspec.reference.records import NO_LEADER, PartitionChangeRecord

TOPIC_ID = "model-topic"
TOPIC = "model"
KEY = (TOPIC_ID, 0)
BROKER_IDS = (0, 1, 2, 3)
LAG = pl.REPLICA_LAG_TIME_MAX_MS
BROKER_EVENTS = (
    "handle_broker_unfenced", "handle_broker_unfenced", "handle_broker_unfenced", "handle_broker_fenced",
    "handle_broker_in_controlled_shutdown", "restart-clean", "restart-unclean", "restart-disk-loss",
)


@dataclass
class BrokerProcess:
    """What a broker knows and stores: its log (record ids), HW, broker epoch and last metadata."""

    epoch: int
    log: tuple[int, ...] = ()
    hw: int = 0
    known: Optional[PartitionRegistration] = None
    known_brokers: Optional[FrozenMap[int, BrokerRegistration]] = None
    leader: Optional[pl.PartitionLeaderState] = None


@dataclass
class InFlight:
    """An AlterPartition on the wire: sender, its broker epoch when sent, the partition data."""

    sender: int
    sender_epoch: int
    data: AlterPartitionPartition


@dataclass
class Cluster:
    """The controller's image plus the broker processes and the wire."""

    metadata_version: int
    elr_enabled: bool
    topic: TopicInfo
    brokers: FrozenMap[int, BrokerRegistration]
    partitions: PersistentMap[tuple[str, int], PartitionRegistration]
    processes: dict[int, BrokerProcess]
    wire: list[InFlight] = field(default_factory=list)
    delivered: list[InFlight] = field(default_factory=list)
    now: int = 0
    next_record: int = 0
    next_epoch: int = 200
    unclean_restarts: int = 0
    disk_losses: int = 0
    committed: set[int] = field(default_factory=set)


def _registration(broker_id: int, epoch: int, fenced: bool = False) -> BrokerRegistration:
    return BrokerRegistration(broker_id=broker_id, epoch=epoch, incarnation_id=f"incarnation-{broker_id}-{epoch}",
                              fenced=fenced)


ENVIRONMENT_RULES = frozenset({"broker_event", "propagate", "propagate_all", "replicate", "tick"})
"""Rules that move the environment, named for what happens rather than after a reference rule: the clock, the network
between the leader and the controller, followers fetching in turn, and broker events dispatched to the
``handle_broker_*`` rules."""


class PartitionMachine(RuleBasedStateMachine):
    """One partition (replicas 0,1,2; broker 3 spare) under racing controller and broker actions."""

    c: Cluster

    @initialize(
        level=st.sampled_from((mv.MV_3_3_IV3, mv.MV_3_6_IV1, mv.MV_4_0_IV1, mv.LATEST_PRODUCTION)),
        elr=st.booleans(), min_isr=st.sampled_from((1, 2)), unclean=st.sampled_from((False, False, False, True)),
    )
    def start(self, level: int, elr: bool, min_isr: int, unclean: bool) -> None:
        brokers = FrozenMap({b: _registration(b, 100 + b) for b in BROKER_IDS})
        partition = PartitionRegistration(replicas=(0, 1, 2), isr=(0, 1, 2), leader=0)
        self.c = Cluster(
            metadata_version=level,
            elr_enabled=elr and level >= mv.MV_4_0_IV1,
            topic=TopicInfo(name=TOPIC, topic_id=TOPIC_ID, unclean_leader_election_enable=unclean,
                            min_insync_replicas=min_isr),
            brokers=brokers,
            partitions=PersistentMap({KEY: partition}),
            processes={b: BrokerProcess(epoch=100 + b) for b in BROKER_IDS},
        )
        self.last_epochs = (0, 0)
        for b in BROKER_IDS:
            self._propagate(b)

    # --- helpers -----------------------------------------------------------------------------

    @property
    def partition(self) -> PartitionRegistration:
        return self.c.partitions[KEY]

    def _apply(self, records: tuple[PartitionChangeRecord, ...]) -> None:
        self.c.partitions = apply_records(self.c.partitions, records)

    def _topics(self) -> dict[str, TopicInfo]:
        return {TOPIC_ID: self.c.topic}

    def _events(self) -> dict:
        return dict(metadata_version=self.c.metadata_version, elr_enabled=self.c.elr_enabled)

    def _propagate(self, b: int) -> None:
        """Broker ``b`` applies the controller's latest partition and broker registrations."""
        proc = self.c.processes[b]
        registration = self.partition
        if proc.known is not None and registration.partition_epoch <= proc.known.partition_epoch:
            if proc.leader is not None and proc.known_brokers != self.c.brokers:
                proc.leader = pl.update_broker_metadata(proc.leader, self.c.brokers)
            proc.known_brokers = self.c.brokers
            return
        proc.known = registration
        proc.known_brokers = self.c.brokers
        if registration.leader != b:
            proc.leader = None
            return
        if proc.leader is None or proc.leader.leader_epoch != registration.leader_epoch:
            proc.leader = pl.become_leader(
                b, proc.epoch, 0, registration, self.c.brokers, log_end_offset=len(proc.log),
                high_watermark=min(proc.hw, len(proc.log)), min_insync_replicas=self.c.topic.min_insync_replicas,
                now_ms=self.c.now,
            )
        else:
            proc.leader = pl.update_leader_metadata(proc.leader, registration, self.c.brokers, self.c.now)
        proc.hw = proc.leader.high_watermark

    def _send(self, sender: int, data: Optional[AlterPartitionPartition]) -> None:
        if data is not None:
            self.c.wire.append(InFlight(sender, self.c.processes[sender].epoch, data))

    # --- broker-side rules -------------------------------------------------------------------

    @rule(b=st.sampled_from(BROKER_IDS))
    def append(self, b: int) -> None:
        proc = self.c.processes[b]
        if proc.leader is None:
            return
        proc.log = proc.log + (self.c.next_record,)
        self.c.next_record += 1
        proc.leader = pl.append(proc.leader, 1, self.c.now)
        proc.hw = proc.leader.high_watermark

    @rule(count=st.integers(0, 3), lagging=st.sampled_from((None,) + BROKER_IDS))
    def replicate(self, count: int, lagging: Optional[int]) -> None:
        """A round of traffic: every self-believed leader appends ``count`` records, then every broker but
        ``lagging`` fetches."""
        for b in BROKER_IDS:
            for _ in range(count):
                self.append(b)
        for f in BROKER_IDS:
            if f != lagging:
                self.follower_fetch(f)

    @rule()
    def propagate_all(self) -> None:
        """Every broker catches up with the controller's metadata."""
        for b in BROKER_IDS:
            self._propagate(b)

    @rule(f=st.sampled_from(BROKER_IDS))
    def follower_fetch(self, f: int) -> None:
        proc = self.c.processes[f]
        if proc.known is None or proc.known.leader in (NO_LEADER, f):
            return
        leader_proc = self.c.processes[proc.known.leader]
        state = leader_proc.leader
        if state is None or state.leader_epoch != proc.known.leader_epoch or f not in state.followers:
            return
        common = 0
        while common < min(len(proc.log), len(leader_proc.log)) and proc.log[common] == leader_proc.log[common]:
            common += 1
        proc.log = proc.log[:common]
        state, request = pl.follower_fetch(state, f, len(proc.log), self.c.now, proc.epoch)
        leader_proc.leader = state
        leader_proc.hw = state.high_watermark
        proc.log = leader_proc.log
        proc.hw = min(state.high_watermark, len(proc.log))
        self._send(proc.known.leader, request)

    @rule(b=st.sampled_from(BROKER_IDS))
    def maybe_shrink_isr(self, b: int) -> None:
        proc = self.c.processes[b]
        if proc.leader is None:
            return
        self.c.now += LAG + 1
        proc.leader, request = pl.maybe_shrink_isr(proc.leader, self.c.now)
        self._send(b, request)

    @rule(ms=st.sampled_from((100, LAG // 2)))
    def tick(self, ms: int) -> None:
        self.c.now += ms

    @rule(b=st.sampled_from(BROKER_IDS))
    def propagate(self, b: int) -> None:
        self._propagate(b)

    # --- the wire and the controller ---------------------------------------------------------

    @precondition(lambda self: self.c.wire)
    @rule(pick=st.integers(0, 7))
    def alter_partition(self, pick: int) -> None:
        """The controller processes one AlterPartition on the wire (in any order)."""
        if not self.c.wire:  # a replayed trace may reach this without a request on the wire
            return
        self._deliver(self.c.wire.pop(pick % len(self.c.wire)))

    @precondition(lambda self: self.c.delivered)
    @rule(pick=st.integers(0, 7))
    def alter_partition_retry(self, pick: int) -> None:
        """An AlterPartition the controller already processed arrives again (a broker retry after a timeout)."""
        if not self.c.delivered:
            return
        self._deliver(self.c.delivered[-1 - pick % len(self.c.delivered)])

    def _deliver(self, message: InFlight) -> None:
        self.c.delivered.append(message)
        request = AlterPartitionRequest(broker_id=message.sender, broker_epoch=message.sender_epoch,
                                        topics=(AlterPartitionTopic(topic_id=TOPIC_ID, partitions=(message.data,)),))
        self.c.partitions, response, _ = alter_partition(
            self.c.brokers, self._topics(), self.c.partitions, request, **self._events()
        )
        sender = self.c.processes[message.sender]
        if sender.leader is None or sender.epoch != message.sender_epoch:
            return
        if response.error_code != Errors.NONE:
            self._send(message.sender, message.data)
            return
        sender.leader, resend = pl.handle_alter_partition_result(sender.leader, response.topics[0].partitions[0],
                                                                 self.c.now)
        sender.hw = sender.leader.high_watermark
        self._send(message.sender, resend)

    def handle_broker_fenced(self, b: int) -> None:
        if self.c.brokers[b].fenced:
            return
        self._apply(handle_broker_fenced(self.c.brokers, self._topics(), self.c.partitions, b, **self._events()))
        self.c.brokers = self.c.brokers.set(b, _registration(b, self.c.brokers[b].epoch, fenced=True))

    def handle_broker_unfenced(self, b: int) -> None:
        registration = self.c.brokers[b]
        if not registration.fenced or registration.in_controlled_shutdown:
            return
        records = handle_broker_unfenced(self.c.brokers, self._topics(), self.c.partitions, b, **self._events())
        self.c.brokers = self.c.brokers.set(b, _registration(b, registration.epoch))
        self._apply(records)

    def handle_broker_in_controlled_shutdown(self, b: int) -> None:
        registration = self.c.brokers[b]
        if not registration.is_active or self.c.metadata_version < mv.MV_3_3_IV3:
            return
        self.c.brokers = self.c.brokers.set(b, BrokerRegistration(
            broker_id=b, epoch=registration.epoch, incarnation_id=registration.incarnation_id, fenced=False,
            in_controlled_shutdown=True))
        self._apply(handle_broker_in_controlled_shutdown(self.c.brokers, self._topics(), self.c.partitions, b,
                                                         **self._events()))

    @rule(b=st.sampled_from(BROKER_IDS), event=st.sampled_from(BROKER_EVENTS), keep=st.integers(0, 5))
    def broker_event(self, b: int, event: str, keep: int) -> None:
        """A broker lifecycle event; unfencing is drawn more often so that brokers mostly come back."""
        if event.startswith("restart-"):
            self.handle_broker_shutdown(b, event[len("restart-"):], keep)
        else:
            getattr(self, event)(b)

    def handle_broker_shutdown(self, b: int, kind: str, keep: int) -> None:
        """The broker restarts and re-registers with a new incarnation and broker epoch (§1.3, §2.9)."""
        proc = self.c.processes[b]
        if kind != "clean":
            self.c.unclean_restarts += 1
        if kind == "disk-loss":
            self.c.disk_losses += 1
            proc.log = proc.log[: min(keep, len(proc.log))]
            proc.hw = min(proc.hw, len(proc.log))
        self._apply(handle_broker_shutdown(self.c.brokers, self._topics(), self.c.partitions, b, kind == "clean",
                                           **self._events()))
        self.c.brokers = self.c.brokers.set(b, _registration(b, self.c.next_epoch, fenced=True))
        self.c.processes[b] = BrokerProcess(epoch=self.c.next_epoch, log=proc.log, hw=proc.hw)
        self.c.next_epoch += 1

    @rule(unclean=st.booleans())
    def elect_leaders(self, unclean: bool) -> None:
        if unclean and not self.c.topic.unclean_leader_election_enable:
            return
        request = ElectLeadersRequest(election_type=UNCLEAN_ELECTION if unclean else PREFERRED_ELECTION,
                                      topic_partitions=((TOPIC, (0,)),))
        self.c.partitions, _, _ = elect_leaders(self.c.brokers, self._topics(), self.c.partitions, request,
                                                **self._events())

    @rule(replicas=st.one_of(st.none(), st.permutations(BROKER_IDS).map(lambda p: tuple(p[:3]))))
    def alter_partition_reassignment(self, replicas: Optional[tuple[int, ...]]) -> None:
        self.c.partitions, _, _ = alter_partition_reassignment(
            self.c.brokers, self._topics(), self.c.partitions, TOPIC, 0, replicas, **self._events()
        )

    @rule()
    def maybe_balance_partition_leaders(self) -> None:
        records, _ = maybe_balance_partition_leaders(self.c.brokers, self._topics(), self.c.partitions,
                                                     **self._events())
        self._apply(records)

    # --- invariants --------------------------------------------------------------------------

    def _legit_leader(self) -> Optional[BrokerProcess]:
        """The process that leads at the controller's current leader epoch, if it knows it."""
        p = self.partition
        if p.leader == NO_LEADER:
            return None
        proc = self.c.processes[p.leader]
        if proc.leader is None or proc.leader.leader_epoch != p.leader_epoch:
            return None
        return proc

    @invariant()
    def leader_in_isr_or_none(self) -> None:
        p = self.partition
        assert p.leader == NO_LEADER or p.leader in p.isr, f"leader {p.leader} not in ISR {p.isr}"

    @invariant()
    def leader_is_active(self) -> None:
        p = self.partition
        assert p.leader == NO_LEADER or self.c.brokers[p.leader].is_active, f"leader {p.leader} is {self.c.brokers[p.leader]}"

    @invariant()
    def isr_within_replicas(self) -> None:
        p = self.partition
        assert len(set(p.isr)) == len(p.isr) and set(p.isr) <= set(p.replicas), f"ISR {p.isr}, replicas {p.replicas}"
        assert p.isr or self.c.elr_enabled, "empty ISR without ELR"
        assert not set(p.elr) & set(p.isr), f"ELR {p.elr} overlaps ISR {p.isr}"

    @invariant()
    def epochs_only_grow(self) -> None:
        p = self.partition
        epochs = (p.leader_epoch, p.partition_epoch)
        assert epochs[0] >= self.last_epochs[0] and epochs[1] >= self.last_epochs[1], f"epochs {self.last_epochs} -> {epochs}"
        self.last_epochs = epochs

    @invariant()
    def offsets_below_hw_in_every_isr_member(self) -> None:
        leader = self._legit_leader()
        if leader is None or leader.leader is None:
            return
        hw = leader.leader.high_watermark
        for r in self.partition.isr:
            log = self.c.processes[r].log
            assert log[:hw] == leader.log[:hw], f"ISR member {r} has {log} below HW {hw}; leader has {leader.log}"
        self.c.committed.update(leader.log[:hw])

    def _loss_uncovered(self) -> bool:
        """KIP-966 covers one unclean restart losing a log tail when ELR and min ISR 2 keep every committed
        record on another eligible replica; any other lost tail may lose committed data in Kafka too."""
        covered = self.c.elr_enabled and self.c.topic.min_insync_replicas == 2 and self.c.unclean_restarts <= 1
        return self.c.disk_losses > 0 and not covered

    @invariant()
    def no_committed_record_lost(self) -> None:
        if self.c.topic.unclean_leader_election_enable or self._loss_uncovered():
            return
        leader = self._legit_leader()
        if leader is None:
            return
        lost = self.c.committed - set(leader.log)
        assert not lost, f"committed records {sorted(lost)} missing from the leader's log {leader.log}"




INVARIANTS = (
    "leader_in_isr_or_none", "leader_is_active", "isr_within_replicas", "epochs_only_grow",
    "offsets_below_hw_in_every_isr_member", "no_committed_record_lost",
)

Trace = tuple[tuple[str, dict[str, object]], ...]

RACES: dict[str, Trace] = {
    # A retried AlterPartition from before the controller fenced broker 1 arrives after 1 is back but behind.
    "retried-alter-partition-after-fence": (
        ("start", dict(level=mv.LATEST_PRODUCTION, elr=False, min_isr=1, unclean=False)),
        ("replicate", dict(count=1, lagging=None)),
        ("replicate", dict(count=1, lagging=2)),
        ("replicate", dict(count=0, lagging=2)),
        ("maybe_shrink_isr", dict(b=0)),
        ("alter_partition", dict(pick=0)),
        ("broker_event", dict(b=1, event="handle_broker_fenced", keep=0)),
        ("propagate", dict(b=0)),
        ("replicate", dict(count=2, lagging=1)),
        ("broker_event", dict(b=1, event="handle_broker_unfenced", keep=0)),
        ("alter_partition_retry", dict(pick=0)),
    ),
    # An ISR expansion sent for broker 2 lands after 2 lost its log tail and re-registered (KIP-903).
    "expansion-after-restart-with-lost-tail": (
        ("start", dict(level=mv.LATEST_PRODUCTION, elr=True, min_isr=2, unclean=False)),
        ("replicate", dict(count=1, lagging=None)),
        ("replicate", dict(count=1, lagging=2)),
        ("replicate", dict(count=0, lagging=2)),
        ("maybe_shrink_isr", dict(b=0)),
        ("alter_partition", dict(pick=0)),
        ("replicate", dict(count=1, lagging=None)),
        ("replicate", dict(count=0, lagging=None)),
        ("broker_event", dict(b=2, event="restart-disk-loss", keep=0)),
        ("broker_event", dict(b=2, event="handle_broker_unfenced", keep=0)),
        ("alter_partition", dict(pick=0)),
    ),
}
"""Races the random search reaches only rarely, replayed step by step on :class:`PartitionMachine`."""


def replay(trace: Trace) -> None:
    """Run ``trace``'s rules in order on a fresh machine, checking every invariant after each step."""
    machine = PartitionMachine()
    try:
        for name, arguments in trace:
            getattr(machine, name)(**arguments)
            for invariant_name in INVARIANTS:
                getattr(machine, invariant_name)()
    finally:
        machine.teardown()
