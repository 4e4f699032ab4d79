"""Controller partition operations beyond the catalogue: reassignment (§2.8), creation (§2.1),
broker events (§2.9) and periodic elections (§2.11)."""

from __future__ import annotations

from kraftspec.reference import metadata_version as mv
from kraftspec.reference.alter_partition import AlterPartitionPartition, AlterPartitionRequest, AlterPartitionTopic, alter_partition
from kraftspec.reference.elect_leaders import (
    PREFERRED_ELECTION,
    ElectLeadersRequest,
    elect_leaders,
    maybe_balance_partition_leaders,
    maybe_elect_unclean_leaders,
)
from kraftspec.reference.errors import Errors
from kraftspec.reference.frozen import FrozenMap
from kraftspec.reference.partition import PartitionRegistration, TopicInfo, apply_records, replay_clear_elr
from kraftspec.reference.partition_creation import create_partition
from kraftspec.reference.partition_events import handle_broker_fenced, handle_broker_unfenced, handle_broker_unregistered
from kraftspec.reference.partition_rules import RECOVERED
from kraftspec.reference.reassignment import alter_partition_reassignment
from kraftspec.reference.records import NO_LEADER, ClearElrRecord, PartitionRecord

from support_partition import broker, broker_dir, brokers, topic_partitions

T = "topic-id"
FOO = TopicInfo(name="foo", topic_id=T)
TOPICS = {T: FOO}
LATEST = mv.LATEST_PRODUCTION


def reassign(regs, parts, target, topics=TOPICS, **kwargs):
    return alter_partition_reassignment(regs, topics, parts, "foo", 0, target, metadata_version=LATEST, elr_enabled=False,
                                        **kwargs)


def test_reassignment_completes_through_alter_partition_with_new_leader_elected() -> None:
    regs = brokers([1, 2, 3, 4, 5])
    parts = topic_partitions(FOO, [(1, 2, 3)])
    parts, error, records = reassign(regs, parts, (4, 5, 2))
    p = parts[(T, 0)]
    assert error == Errors.NONE and len(records) == 1
    assert (p.replicas, p.removing_replicas, p.adding_replicas, p.isr, p.leader, p.leader_epoch) == (
        (4, 5, 2, 1, 3), (1, 3), (4, 5), (1, 2, 3), 1, 0)
    request = AlterPartitionRequest(broker_id=1, broker_epoch=101, topics=(AlterPartitionTopic(topic_id=T, partitions=(AlterPartitionPartition(
        partition_index=0, leader_epoch=0, new_isr_with_epochs=tuple((b, 100 + b) for b in (1, 2, 3, 4, 5)), partition_epoch=1),)),))
    parts, response, records = alter_partition(regs, TOPICS, parts, request, metadata_version=LATEST, elr_enabled=False)
    assert response.topics[0].partitions[0].error_code == Errors.NEW_LEADER_ELECTED
    p = parts[(T, 0)]
    assert (p.replicas, p.isr, p.leader, p.removing_replicas, p.adding_replicas, p.leader_epoch) == (
        (4, 5, 2), (2, 4, 5), 4, (), (), 1)
    assert p.directories == tuple(broker_dir(b) for b in (4, 5, 2))


def test_reassignment_cancel_and_errors() -> None:
    regs = brokers([1, 2, 3, 4])
    parts = topic_partitions(FOO, [(1, 2, 3)])
    assert reassign(regs, parts, None)[1] == Errors.NO_REASSIGNMENT_IN_PROGRESS
    assert reassign(regs, parts, (1, 2, 9))[1] == Errors.INVALID_REPLICA_ASSIGNMENT
    assert reassign(regs, parts, (1, 2, 2))[1] == Errors.INVALID_REPLICA_ASSIGNMENT
    assert reassign(regs, parts, ())[1] == Errors.INVALID_REPLICA_ASSIGNMENT
    assert reassign(regs, parts, (1, 2), allow_replication_factor_change=False)[1] == Errors.INVALID_REPLICATION_FACTOR
    assert alter_partition_reassignment(regs, TOPICS, parts, "nope", 0, (1,), metadata_version=LATEST,
                                        elr_enabled=False)[1] == Errors.UNKNOWN_TOPIC_OR_PARTITION
    moving, _, _ = reassign(regs, parts, (1, 2, 4))
    reverted, error, records = reassign(regs, moving, None)
    p = reverted[(T, 0)]
    assert error == Errors.NONE and (p.replicas, p.isr, p.removing_replicas, p.adding_replicas) == ((1, 2, 3), (1, 2, 3), (), ())


def test_unclean_revert_needs_unclean_election() -> None:
    regs = brokers([1, 2, 3, 4])
    parts = FrozenMap({(T, 0): PartitionRegistration(replicas=(4, 1), isr=(4,), adding_replicas=(4,), removing_replicas=(1,),
                                                     leader=4)})
    assert reassign(regs, parts, None)[1] == Errors.INVALID_REPLICA_ASSIGNMENT
    unclean = {T: TopicInfo(name="foo", topic_id=T, unclean_leader_election_enable=True)}
    parts2, error, records = reassign(regs, parts, None, topics=unclean)
    p = parts2[(T, 0)]
    # ISR := [first remaining replica] directly, so the election that follows is a clean one.
    assert error == Errors.NONE and (p.replicas, p.isr, p.leader, p.leader_recovery_state) == ((1,), (1,), 1, RECOVERED)


def test_create_partition() -> None:
    regs = FrozenMap({1: broker(1), 2: broker(2, fenced=True), 3: broker(3, ics=True), 4: broker(4)})
    error, record = create_partition(regs, T, 0, (2, 4, 1, 3), metadata_version=LATEST)
    assert error == Errors.NONE and record == PartitionRecord(
        partition_id=0, topic_id=T, replicas=(2, 4, 1, 3), isr=(4, 1), leader=4,
        directories=tuple(broker_dir(b) for b in (2, 4, 1, 3)), version=2)
    assert create_partition(regs, T, 0, (2, 3), metadata_version=LATEST) == (Errors.INVALID_REPLICATION_FACTOR, None)
    assert create_partition(regs, T, 0, (1, 9), metadata_version=LATEST) == (Errors.INVALID_REPLICA_ASSIGNMENT, None)
    assert create_partition(regs, T, 0, (1,), metadata_version=mv.MV_3_6_IV0)[1].directories == ()
    p = PartitionRegistration.from_record(record)
    assert (p.isr, p.leader, p.leader_epoch, p.partition_epoch, p.elr) == ((4, 1), 4, 0, 0, ())


def test_unfenced_broker_counts_as_acceptable_and_unregister_keeps_elr() -> None:
    topics = {T: TopicInfo(name="foo", topic_id=T, min_insync_replicas=2)}
    regs = brokers([1, 2])
    parts = topic_partitions(FOO, [(1, 2)])
    for b in (2, 1):
        parts = apply_records(parts, handle_broker_fenced(regs, topics, parts, b, metadata_version=LATEST, elr_enabled=True))
        regs = regs.set(b, broker(b, fenced=True))
    p = parts[(T, 0)]
    assert (p.leader, p.isr, p.elr, p.last_known_elr) == (NO_LEADER, (), (1, 2), (1,))
    records = handle_broker_unfenced(regs, topics, parts, 2, metadata_version=LATEST, elr_enabled=True)
    p2 = apply_records(parts, records)[(T, 0)]
    assert (p2.leader, p2.isr, p2.elr) == (2, (2,), (1,))
    # Kafka 4.3 handleBrokerUnregistered: the ELR pass removes broker 2 as brokerToRemove, not as an unclean
    # shutdown, so it stays in the ELR; with nobody electable the pass writes nothing (found against Kafka 4.3.1)
    records = handle_broker_unregistered(regs, topics, parts, 2, metadata_version=LATEST, elr_enabled=True)
    p3 = apply_records(parts, records)[(T, 0)]
    assert records == () and (p3.leader, p3.isr, p3.elr) == (NO_LEADER, (), (1, 2))


def test_periodic_elections() -> None:
    regs = brokers([1, 2, 3])
    parts = topic_partitions(FOO, [(1, 2, 3), (2, 3, 1)])
    parts = apply_records(parts, handle_broker_fenced(regs, TOPICS, parts, 1, metadata_version=LATEST, elr_enabled=False))
    regs = regs.set(1, broker(1, fenced=True))
    assert [p.leader for _, p in sorted(parts.items())] == [2, 2]
    records, again = maybe_balance_partition_leaders(regs, TOPICS, parts, metadata_version=LATEST, elr_enabled=False)
    assert records == () and not again  # broker 1 is fenced and out of the ISR
    expand = AlterPartitionRequest(broker_id=2, broker_epoch=102, topics=(AlterPartitionTopic(topic_id=T, partitions=(AlterPartitionPartition(
        partition_index=0, leader_epoch=1, new_isr_with_epochs=((2, 102), (3, 103), (1, 101)), partition_epoch=1),)),))
    _, response, records = alter_partition(regs, TOPICS, parts, expand, metadata_version=LATEST, elr_enabled=False)
    assert (response.topics[0].partitions[0].error_code, records) == (Errors.INELIGIBLE_REPLICA, ())
    regs = regs.set(1, broker(1))
    parts, _, records = alter_partition(regs, TOPICS, parts, expand, metadata_version=LATEST, elr_enabled=False)
    assert parts[(T, 0)].isr == (2, 3, 1)
    records, again = maybe_balance_partition_leaders(regs, TOPICS, parts, metadata_version=LATEST, elr_enabled=False)
    assert [(r.partition_id, r.leader) for r in records] == [(0, 1)] and not again
    _, response, _ = elect_leaders(regs, TOPICS, parts, ElectLeadersRequest(election_type=PREFERRED_ELECTION, topic_partitions=None), metadata_version=LATEST,
                                   elr_enabled=False)
    assert [(r.partition_id, r.error_code) for r in response.replica_election_results[0].partition_results] == [(0, Errors.NONE)]
    assert elect_leaders(regs, TOPICS, parts, ElectLeadersRequest(election_type=7, topic_partitions=None), metadata_version=LATEST,
                         elr_enabled=False)[1].error_code == Errors.INVALID_REQUEST
    unclean_topics = {T: TopicInfo(name="foo", topic_id=T, unclean_leader_election_enable=True)}
    offline = FrozenMap({(T, 0): PartitionRegistration(replicas=(1, 2), isr=(1,), leader=NO_LEADER)})
    records, _ = maybe_elect_unclean_leaders(brokers([2], fenced=[1]), unclean_topics, offline, metadata_version=LATEST,
                                             elr_enabled=False)
    assert [(r.leader, r.isr) for r in records] == [(2, (2,))]
    assert maybe_elect_unclean_leaders(brokers([2], fenced=[1]), TOPICS, offline, metadata_version=LATEST,
                                       elr_enabled=False) == ((), False)


def test_clear_elr_record_bumps_only_partitions_with_elr() -> None:
    """§2.7: a min.insync.replicas change clears ELR and lastKnownElr of the topic (empty name: all topics)."""
    other = TopicInfo(name="bar", topic_id="bar-id")
    topics = {T: FOO, "bar-id": other}
    parts = FrozenMap({
        (T, 0): PartitionRegistration(replicas=(1, 2), isr=(), elr=(1, 2), last_known_elr=(1,), leader=NO_LEADER,
                                      partition_epoch=5),
        (T, 1): PartitionRegistration(replicas=(1, 2), isr=(1, 2), leader=1, partition_epoch=5),
        ("bar-id", 0): PartitionRegistration(replicas=(1,), isr=(), elr=(1,), leader=NO_LEADER, partition_epoch=5),
    })
    cleared = replay_clear_elr(parts, topics, ClearElrRecord(topic_name="foo"))
    assert (cleared[(T, 0)].elr, cleared[(T, 0)].last_known_elr, cleared[(T, 0)].partition_epoch) == ((), (), 6)
    assert cleared[(T, 1)] == parts[(T, 1)] and cleared[("bar-id", 0)] == parts[("bar-id", 0)]
    everything = replay_clear_elr(parts, topics, ClearElrRecord(topic_name=""))
    assert [everything[key].partition_epoch for key in parts] == [6, 5, 6]
