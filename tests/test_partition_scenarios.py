"""Kafka's own partition scenarios (kafka-scenarios sections D and E, and C 26/28/29/31) on the reference.

Each test is named after its scenario number and takes no arguments, so that the mutant tests can
re-run it as a plain function. D fixtures follow PartitionChangeBuilderTest (FOO, BAR, BAZ).
"""

from __future__ import annotations

from kraftspec.reference import metadata_version as mv
from kraftspec.reference.alter_partition import (
    AlterPartitionPartition,
    AlterPartitionPartitionResult,
    AlterPartitionRequest,
    AlterPartitionTopic,
    alter_partition,
)
from kraftspec.reference.elect_leaders import UNCLEAN_ELECTION, ElectLeadersRequest, elect_leaders
from kraftspec.reference.errors import Errors
from kraftspec.reference.frozen import FrozenMap
from kraftspec.reference.partition import (
    PartitionRegistration,
    TopicInfo,
    apply_records,
    build_partition_change,
    change_record_is_no_op,
    merge,
)
from kraftspec.reference.partition_events import (
    handle_broker_fenced,
    handle_broker_in_controlled_shutdown,
    handle_broker_shutdown,
    handle_broker_unfenced,
    leads_any_partition,
)
from kraftspec.reference.partition_rules import RECOVERING, UNASSIGNED_DIR, Election
from kraftspec.reference.reassignment import reassignment_replicas
from kraftspec.reference.records import NO_LEADER, NO_LEADER_CHANGE, PartitionChangeRecord

from support_partition import broker, broker_dir, brokers, topic_partitions

LATEST = mv.LATEST_PRODUCTION
FOO_ID = "FbrrdcfiR-KC2CPSTHaJrg"
D2, D1, D3 = "S1zMYZczRjWmucidLqGA5g", "9eRNXTvFTsWUJObvW51V5A", "UpePYVBgRAi3c4ujQrf3Kg"
NOT_3 = (0, 1, 2, 4, 5)
NO_BROKERS: FrozenMap = FrozenMap()
PCR_VERSION_MVS = {0: mv.MV_3_6_IV0, 1: mv.MV_3_7_IV2, 2: mv.MV_4_0_IV1}


def foo() -> PartitionRegistration:
    """FOO: replicas [2,1,3], ISR [2,1,3], leader 1, epochs (100, 200)."""
    return PartitionRegistration(
        replicas=(2, 1, 3), directories=(D2, D1, D3), isr=(2, 1, 3), leader=1, leader_epoch=100, partition_epoch=200
    )


def bar() -> PartitionRegistration:
    """BAR: replicas [1,2,3,4], ISR [1,2,3], removing [1], adding [4], leader 1."""
    return PartitionRegistration(
        replicas=(1, 2, 3, 4), directories=("d1", "d2", "d3", "d4"), isr=(1, 2, 3),
        removing_replicas=(1,), adding_replicas=(4,), leader=1, leader_epoch=100, partition_epoch=200,
    )


def baz() -> PartitionRegistration:
    """BAZ: replicas [2,1,3], ISR [1,3], leader 3."""
    return PartitionRegistration(
        replicas=(2, 1, 3), directories=(D2, D1, D3), isr=(1, 3), leader=3, leader_epoch=100, partition_epoch=200
    )


def build(partition: PartitionRegistration, acceptable: tuple[int, ...] = NOT_3, *, metadata_version: int = LATEST,
          min_isr: int = 2, **targets) -> PartitionChangeRecord | None:
    return build_partition_change(
        partition, FOO_ID, 0, brokers=NO_BROKERS, metadata_version=metadata_version, min_isr=min_isr,
        acceptable=acceptable, **targets,
    )


def change(**fields) -> PartitionChangeRecord:
    fields.setdefault("version", 2)
    return PartitionChangeRecord(partition_id=0, topic_id=FOO_ID, **fields)


# --- D. PartitionChangeBuilder -------------------------------------------------------------------


def test_scenario_32_change_record_is_no_op() -> None:
    assert change_record_is_no_op(change())
    for field, value in [
        ("leader", 1), ("isr", (1,)), ("removing_replicas", (1,)), ("adding_replicas", (1,)),
        ("eligible_leader_replicas", (1,)), ("last_known_elr", (1,)), ("leader_recovery_state", 0),
        ("directories", (D1,)), ("isr", ()), ("leader", NO_LEADER),
    ]:
        assert not change_record_is_no_op(change(**{field: value})), field
    assert mv.partition_change_record_version(LATEST) == 2


def test_scenario_34_no_leader_epoch_bump_if_nothing_changed() -> None:
    for level in (mv.MV_3_3_IV3, mv.MV_3_6_IV0, mv.MV_3_7_IV2, LATEST):
        assert build(foo(), metadata_version=level) is None
        assert build(foo(), metadata_version=level, target_isr=(2, 1, 3), target_replicas=(2, 1, 3)) is None


def test_scenario_35_no_leader_epoch_bump_on_isr_shrink() -> None:
    for level in (mv.MV_3_6_IV0, mv.MV_3_7_IV2, mv.LEVELS["4.0-IV0"]):
        record = build(foo(), metadata_version=level, target_isr=(2, 1))
        assert record is not None and record.leader == NO_LEADER_CHANGE and record.isr == (2, 1)
    # Before 3.6-IV0 (KAFKA-15021) the same shrink re-sets the leader: a leader-epoch bump.
    old = build(foo(), metadata_version=mv.LEVELS["3.5-IV2"], target_isr=(2, 1))
    assert old == change(isr=(2, 1), leader=1, version=0)
    assert merge(foo(), old).leader_epoch == 101


def test_scenario_37_no_leader_epoch_bump_on_isr_expansion() -> None:
    for level in (mv.LEVELS["3.5-IV2"], mv.MV_3_6_IV0, mv.MV_3_7_IV2, LATEST):
        record = build(foo(), metadata_version=level, target_isr=(2, 1, 3, 4))
        assert record is not None and record.leader == NO_LEADER_CHANGE and record.isr == (2, 1, 3, 4)


def test_scenario_38_leader_epoch_bump_on_new_replica_set_disjoint() -> None:
    for level in (mv.LEVELS["3.5-IV2"], mv.MV_3_6_IV0, mv.MV_3_7_IV2, LATEST):
        record = build(foo(), metadata_version=level, target_replicas=(2, 1, 4))
        assert record is not None and record.leader == 1 and record.replicas == (2, 1, 4)
        after = merge(foo(), record)
        assert (after.leader, after.leader_epoch, after.partition_epoch) == (1, 101, 201)


def test_scenario_40_no_change() -> None:
    for election in (Election.ONLINE, Election.UNCLEAN):
        assert build(foo(), election=election) is None
        assert build(bar(), election=election) is None
    assert build(baz(), (0, 1, 2, 3, 4), election=Election.PREFERRED) is None


def test_scenario_41_isr_change_doesnt_bump_leader_epoch() -> None:
    record = build(foo(), target_isr=(2, 1))
    assert record == change(isr=(2, 1))
    after = merge(foo(), record)
    assert (after.isr, after.leader_epoch, after.partition_epoch) == ((2, 1), 100, 201)


def test_scenario_43_reassignment_rearranges_replicas() -> None:
    assert build(foo(), target_replicas=(3, 2, 1)) == change(replicas=(3, 2, 1), directories=(D3, D2, D1))
    assert build(foo(), metadata_version=mv.MV_3_6_IV0, target_replicas=(3, 2, 1)) == change(replicas=(3, 2, 1), version=0)


def test_scenario_44_isr_enlargement_completes_reassignment() -> None:
    record = build(bar(), target_isr=(1, 2, 3, 4))
    assert record == change(
        replicas=(2, 3, 4), isr=(2, 3, 4), leader=2, removing_replicas=(), adding_replicas=(),
        directories=("d2", "d3", "d4"),
    )
    after = merge(bar(), record)
    assert (after.leader, after.leader_epoch, after.partition_epoch) == (2, 101, 201)


def test_scenario_46_removing_replica_reassignment() -> None:
    replicas, removing, adding = reassignment_replicas(foo().replicas, (1, 2))
    assert (replicas, removing, adding) == ((1, 2, 3), (3,), ())
    record = build(foo(), target_replicas=replicas, target_removing=removing)
    assert record == change(replicas=(1, 2), isr=(2, 1), leader=1, directories=(D1, D2))


def test_scenario_47_adding_replica_reassignment() -> None:
    replicas, removing, adding = reassignment_replicas(foo().replicas, (1, 2, 3, 4))
    assert (replicas, removing, adding) == ((1, 2, 3, 4), (), (4,))
    record = build(foo(), target_replicas=replicas, target_adding=adding)
    assert record == change(replicas=(1, 2, 3, 4), adding_replicas=(4,), directories=(D1, D2, D3, UNASSIGNED_DIR))


def test_scenario_49_change_in_leadership_does_not_change_recovery_state() -> None:
    recovering = PartitionRegistration(
        replicas=(1, 2, 3), isr=(1,), leader=1, leader_recovery_state=RECOVERING, leader_epoch=100, partition_epoch=200
    )
    record = build(recovering, (), metadata_version=mv.MV_3_3_IV3, target_isr=())
    assert record == change(leader=NO_LEADER, version=0)
    offline = merge(recovering, record)
    assert (offline.leader, offline.isr, offline.leader_recovery_state) == (NO_LEADER, (1,), RECOVERING)
    record = build(offline, (1,), metadata_version=mv.MV_3_3_IV3)
    assert record == change(leader=1, version=0)
    online = merge(offline, record)
    assert (online.leader, online.isr, online.leader_recovery_state) == (1, (1,), RECOVERING)


def test_scenario_50_unclean_sets_leader_recovering_state() -> None:
    offline = PartitionRegistration(replicas=(1, 2, 3), isr=(2, 3), leader=NO_LEADER, leader_epoch=100, partition_epoch=200)
    record = build(offline, (1,), election=Election.UNCLEAN)
    assert record == change(leader=1, isr=(1,), leader_recovery_state=RECOVERING)
    assert build(offline, (1,), election=Election.ONLINE) is None


def test_scenario_52_elr_isr_shrink_below_min_isr() -> None:
    partition = PartitionRegistration(replicas=(1, 2, 3, 4), isr=(1, 2, 3, 4), leader=1, leader_epoch=100, partition_epoch=200)
    for use_last_known in (True, False):
        record = build(partition, (1, 2, 3, 4), min_isr=3, target_isr=(1, 2), elr_enabled=True,
                       use_last_known_leader=use_last_known)
        assert record == change(isr=(1, 2), eligible_leader_replicas=(3, 4))
    assert build(partition, (1, 2, 3, 4), metadata_version=mv.MV_3_7_IV2, min_isr=3, target_isr=(1, 2)) == change(
        isr=(1, 2), version=1)


def test_scenario_53_elr_last_known_elr_populated_when_no_leader() -> None:
    partition = PartitionRegistration(replicas=(1, 2, 3), isr=(1,), elr=(2,), leader=1, leader_epoch=100, partition_epoch=200)
    record = build(partition, (), min_isr=3, elr_enabled=True, election=Election.PREFERRED)
    assert record == change(leader=NO_LEADER, last_known_elr=(1,))


def test_scenario_55_elr_isr_add_new_member_not_in_elr() -> None:
    partition = PartitionRegistration(
        replicas=(1, 2, 3, 4), isr=(1,), elr=(3,), last_known_elr=(2,), leader=1, leader_epoch=100, partition_epoch=200
    )
    for version, level in PCR_VERSION_MVS.items():
        record = build(partition, NOT_3, metadata_version=level, min_isr=3, target_isr=(1, 4), election=Election.PREFERRED,
                       elr_enabled=version >= 2, use_last_known_leader=False)
        if version >= 2:
            assert record == change(isr=(1, 4))
        else:
            assert record == change(isr=(1, 4), eligible_leader_replicas=(), last_known_elr=(), version=version)
        after = merge(partition, record)
        assert (after.elr, after.last_known_elr) == (((3,), (2,)) if version >= 2 else ((), ()))


def test_scenario_56_elr_remove_unclean_shutdown_replicas_from_elr() -> None:
    partition = PartitionRegistration(replicas=(1, 2, 3, 4), isr=(1,), elr=(2, 3), leader=1, leader_epoch=100, partition_epoch=200)
    for version, level in PCR_VERSION_MVS.items():
        record = build(partition, NOT_3, metadata_version=level, min_isr=3, election=Election.PREFERRED,
                       elr_enabled=version >= 2, use_last_known_leader=False, unclean_shutdown_broker=3)
        if version >= 2:
            assert record == change(eligible_leader_replicas=(2,), last_known_elr=(3,))
        else:
            assert record == change(eligible_leader_replicas=(), version=version)


# --- E. AlterPartition, elections, ELR in ReplicationControlManager ------------------------------

FOO = TopicInfo(name="foo", topic_id=FOO_ID)


def alter(brokers_, partitions, requester: int, isr, *, leader_epoch=0, partition_epoch=0, broker_epoch=None,
          version=3, recovery=0, topic_id=FOO_ID, metadata_version=LATEST, elr_enabled=False):
    request = AlterPartitionRequest(
        broker_id=requester,
        broker_epoch=100 + requester if broker_epoch is None else broker_epoch,
        topics=(AlterPartitionTopic(topic_id=topic_id, partitions=(AlterPartitionPartition(
            partition_index=0, leader_epoch=leader_epoch, new_isr_with_epochs=tuple(m if isinstance(m, tuple) else (m, 100 + m) for m in isr), partition_epoch=partition_epoch, leader_recovery_state=recovery),)),),
        version=version,
    )
    return alter_partition(brokers_, {FOO_ID: FOO}, partitions, request, metadata_version=metadata_version,
                           elr_enabled=elr_enabled)


def only_result(response) -> AlterPartitionPartitionResult:
    assert response.error_code == Errors.NONE
    (topic,) = response.topics
    (result,) = topic.partitions
    return result


def test_scenario_58_shrink_and_expand_isr() -> None:
    regs = brokers([0, 1, 2])
    parts = topic_partitions(FOO, [(0, 1, 2)])
    parts, response, records = alter(regs, parts, 0, (0, 1))
    assert records == (change(isr=(0, 1)),)
    assert only_result(response) == AlterPartitionPartitionResult(partition_index=0, error_code=Errors.NONE, leader_id=0, leader_epoch=0, isr=(0, 1), leader_recovery_state=0, partition_epoch=1)
    parts, response, records = alter(regs, parts, 0, (0, 1, 2), partition_epoch=1)
    assert records == (change(isr=(0, 1, 2)),)
    assert only_result(response) == AlterPartitionPartitionResult(partition_index=0, error_code=Errors.NONE, leader_id=0, leader_epoch=0, isr=(0, 1, 2), leader_recovery_state=0, partition_epoch=2)
    assert parts[(FOO_ID, 0)].isr == (0, 1, 2)


def test_scenario_59_invalid_alter_partition_requests() -> None:
    regs = brokers([0, 1, 2])
    parts = topic_partitions(FOO, [(0, 1, 2)])
    cases = [
        (dict(requester=1, isr=(0, 1)), Errors.INVALID_REQUEST),
        (dict(requester=0, isr=(0, 1), leader_epoch=500), Errors.NOT_CONTROLLER),
        (dict(requester=0, isr=(0, 1), partition_epoch=500), Errors.NOT_CONTROLLER),
        (dict(requester=0, isr=(0, 1, 3)), Errors.INVALID_REQUEST),
        (dict(requester=0, isr=(1, 2)), Errors.INVALID_REQUEST),
        (dict(requester=0, isr=(0, 1), recovery=RECOVERING), Errors.INVALID_REQUEST),
        (dict(requester=0, isr=(0,), recovery=RECOVERING), Errors.INVALID_REQUEST),
    ]
    for kwargs, error in cases:
        after, response, records = alter(regs, parts, kwargs.pop("requester"), kwargs.pop("isr"), **kwargs)
        assert (only_result(response).error_code, records, after) == (error, (), parts), kwargs
    after, response, records = alter(regs, parts, 0, (0, 1), broker_epoch=99)
    assert (response.error_code, response.topics, records) == (Errors.STALE_BROKER_EPOCH, (), ())
    # A stale leader epoch is fenced; a stale partition epoch is an invalid update version.
    parts2, _, _ = alter(regs, parts, 0, (0, 1))
    _, response, records = alter(regs, parts2, 0, (0, 1, 2))
    assert (only_result(response).error_code, records) == (Errors.INVALID_UPDATE_VERSION, ())
    bumped = apply_records(parts2, [change(leader=0)])
    _, response, records = alter(regs, bumped, 0, (0, 1, 2), partition_epoch=2)
    assert (only_result(response).error_code, records) == (Errors.FENCED_LEADER_EPOCH, ())
    _, response, _ = alter(regs, parts, 0, (0, 1), topic_id="unknown")
    assert only_result(response).error_code == Errors.UNKNOWN_TOPIC_ID


def test_scenario_61_alter_partition_rejects_brokers_with_stale_epoch() -> None:
    regs = brokers([1, 2, 3, 4])
    parts = FrozenMap({(FOO_ID, 0): PartitionRegistration(replicas=(1, 2, 3, 4), isr=(1, 2, 3), leader=1)})
    restarted = regs.set(4, broker(4, epoch=200))
    _, response, records = alter(restarted, parts, 1, (1, 2, 3, (4, 104)), version=3)
    assert (only_result(response).error_code, records) == (Errors.INELIGIBLE_REPLICA, ())
    _, response, records = alter(restarted, parts, 1, (1, 2, 3, (4, 104)), version=2)
    assert only_result(response).error_code == Errors.NONE and records == (change(isr=(1, 2, 3, 4)),)
    _, response, _ = alter(restarted, parts, 1, (1, 2, 3, (4, 200)), version=3)
    assert only_result(response).error_code == Errors.NONE


def test_scenario_62_alter_partition_rejects_shutting_down_brokers() -> None:
    regs = brokers([1, 2, 3, 4])
    parts = topic_partitions(FOO, [(1, 2, 3, 4)])
    records = handle_broker_in_controlled_shutdown(regs, {FOO_ID: FOO}, parts, 3, metadata_version=LATEST, elr_enabled=False)
    assert records == (change(isr=(1, 2, 4)),)
    parts = apply_records(parts, records)
    regs = regs.set(3, broker(3, ics=True))
    _, response, records = alter(regs, parts, 1, (1, 2, 3, 4), partition_epoch=1)
    assert (only_result(response).error_code, records) == (Errors.INELIGIBLE_REPLICA, ())


def fence(regs, topics, parts, broker_id, *, metadata_version=LATEST, elr_enabled=False):
    records = handle_broker_fenced(regs, topics, parts, broker_id, metadata_version=metadata_version, elr_enabled=elr_enabled)
    return regs.set(broker_id, broker(broker_id, fenced=True)), apply_records(parts, records), records


def test_scenario_64_elect_unclean_leaders_without_elr() -> None:
    level = mv.MV_3_6_IV1
    regs = brokers([0, 1, 2, 3, 4])
    topics = {FOO_ID: FOO}
    parts = topic_partitions(FOO, [(1, 2, 3), (2, 3, 4), (0, 2, 1)])
    for b in (2, 3, 1):
        regs, parts, _ = fence(regs, topics, parts, b, metadata_version=level)
    assert [(p.leader, p.isr) for _, p in sorted(parts.items())] == [(NO_LEADER, (1,)), (4, (4,)), (0, (0,))]
    request = ElectLeadersRequest(election_type=UNCLEAN_ELECTION, topic_partitions=(("foo", (0, 1, 2)),))
    after, response, records = elect_leaders(regs, topics, parts, request, metadata_version=level, elr_enabled=False)
    assert [r.error_code for r in response.replica_election_results[0].partition_results] == [
        Errors.ELIGIBLE_LEADERS_NOT_AVAILABLE, Errors.ELECTION_NOT_NEEDED, Errors.ELECTION_NOT_NEEDED]
    assert records == () and after == parts
    assert handle_broker_unfenced(regs, topics, parts, 2, metadata_version=level, elr_enabled=False) == ()
    regs = regs.set(2, broker(2))
    after, response, records = elect_leaders(regs, topics, parts, request, metadata_version=level, elr_enabled=False)
    assert [r.error_code for r in response.replica_election_results[0].partition_results] == [
        Errors.NONE, Errors.ELECTION_NOT_NEEDED, Errors.ELECTION_NOT_NEEDED]
    assert records == (change(leader=2, isr=(2,), leader_recovery_state=RECOVERING, version=0),)
    assert (after[(FOO_ID, 0)].leader, after[(FOO_ID, 0)].isr) == (2, (2,))


def test_scenario_65_elr_shrink_to_empty_isr() -> None:
    topics = {FOO_ID: TopicInfo(name="foo", topic_id=FOO_ID, min_insync_replicas=3)}
    regs = brokers([0, 1, 2])
    parts = topic_partitions(FOO, [(0, 1, 2)])
    for b in (1, 2):
        regs, parts, _ = fence(regs, topics, parts, b, elr_enabled=True)
    p = parts[(FOO_ID, 0)]
    assert (p.isr, p.elr, p.last_known_elr, p.leader) == ((0,), (1, 2), (), 0)
    records = handle_broker_shutdown(regs, topics, parts, 0, True, metadata_version=LATEST, elr_enabled=True)
    p = apply_records(parts, records)[(FOO_ID, 0)]
    assert (p.isr, p.elr, p.last_known_elr, p.leader) == ((), (0, 1, 2), (0,), NO_LEADER)


# --- C. partition effects of heartbeats, fencing and controlled shutdown --------------------------


def test_scenario_26_controlled_shutdown_moves_leadership() -> None:
    regs = brokers([0, 1, 2])
    parts = topic_partitions(FOO, [(0, 1, 2)])
    records = handle_broker_in_controlled_shutdown(regs, {FOO_ID: FOO}, parts, 0, metadata_version=mv.MV_3_3_IV3,
                                                   elr_enabled=False)
    assert records == (change(isr=(1, 2), leader=1, version=0),)


def test_scenario_28_remove_leaderships() -> None:
    regs = brokers([0, 1, 2, 3])
    parts = topic_partitions(FOO, [(0, 1, 2), (1, 2, 3), (2, 3, 0), (0, 2, 1)])
    assert leads_any_partition(parts, 0)
    assert [key for key, p in sorted(parts.items()) if p.leader == 0] == [(FOO_ID, 0), (FOO_ID, 3)]
    regs, parts, records = fence(regs, {FOO_ID: FOO}, parts, 0)
    assert [(r.partition_id, r.leader, r.isr) for r in records] == [(0, 1, (1, 2)), (2, NO_LEADER_CHANGE, (2, 3)), (3, 2, (2, 1))]
    assert not leads_any_partition(parts, 0)


def test_scenario_29_fence_multiple_brokers() -> None:
    assignments = [tuple((i + k) % 5 + 1 for k in range(1, 6)) for i in range(5)]
    regs = brokers([1, 2, 3, 4, 5])
    parts = topic_partitions(FOO, assignments)
    for b in (2, 3, 4, 5):
        regs, parts, _ = fence(regs, {FOO_ID: FOO}, parts, b)
    assert all((p.leader, p.isr) == (1, (1,)) for p in parts.values())
    assert [p.replicas[0] != p.leader for _, p in sorted(parts.items())] == [True, True, True, True, False]


def test_scenario_31_unclean_shutdown_with_elr() -> None:
    level = mv.MV_4_0_IV1
    topics = {FOO_ID: TopicInfo(name="foo", topic_id=FOO_ID, min_insync_replicas=2)}
    regs = brokers([0, 1, 2])
    parts = topic_partitions(FOO, [(0, 1, 2)])
    for b in (1, 2, 0):
        regs, parts, _ = fence(regs, topics, parts, b, metadata_version=level, elr_enabled=True)
    p = parts[(FOO_ID, 0)]
    assert (p.isr, p.leader, p.elr, p.last_known_elr) == ((), NO_LEADER, (0, 2), (0,))
    records = handle_broker_shutdown(regs, topics, parts, 0, False, metadata_version=level, elr_enabled=True)
    assert records == (change(eligible_leader_replicas=(2,)),)
    p = apply_records(parts, records)[(FOO_ID, 0)]
    assert (p.isr, p.leader, p.elr, p.last_known_elr) == ((), NO_LEADER, (2,), (0,))


def test_fencing_example_from_section_2_9() -> None:
    """§2.9 (testAlterPartitionShouldRejectFencedBrokers): fencing 3 keeps leader 1 and its epoch."""
    regs = brokers([1, 2, 3, 4])
    parts = topic_partitions(FOO, [(1, 2, 3, 4)])
    _, parts, _ = fence(regs, {FOO_ID: FOO}, parts, 3)
    p = parts[(FOO_ID, 0)]
    assert (p.isr, p.leader, p.leader_epoch, p.partition_epoch) == ((1, 2, 4), 1, 0, 1)


def test_directories_follow_broker_default_dir() -> None:
    """§2.3 step 9: a new replica gets its broker's only directory; §2.4: a leader's dir must be online."""
    regs = brokers([1, 2, 3, 4])
    partition = topic_partitions(FOO, [(2, 1, 3)])[(FOO_ID, 0)]
    record = build_partition_change(
        partition, FOO_ID, 0, brokers=regs, metadata_version=LATEST, min_isr=2, target_replicas=(2, 1, 3, 4),
        target_adding=(4,),
    )
    dirs = tuple(broker_dir(b) for b in (2, 1, 3, 4))
    assert record == change(replicas=(2, 1, 3, 4), adding_replicas=(4,), directories=dirs)
    # FOO's directories are not among the brokers' registered ones: every replica is offline.
    assert build_partition_change(foo(), FOO_ID, 0, brokers=regs, metadata_version=LATEST, min_isr=2,
                                  target_isr=(2, 1, 3)) == change(leader=NO_LEADER)
