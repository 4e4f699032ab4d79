"""Properties of the change builder and AlterPartition over the public strategies (models/partition_strategies.py)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kraftspec.models.partition_strategies import (
    alter_partition_requests,
    broker_views,
    metadata_versions,
    partition_registrations,
)
from kraftspec.reference.alter_partition import alter_partition
from kraftspec.reference.errors import Errors
from kraftspec.reference.frozen import PersistentMap
from kraftspec.reference.partition import TopicInfo, build_partition_change, merge
from kraftspec.reference.partition_rules import Election
from kraftspec.reference.records import NO_LEADER, NO_LEADER_CHANGE

T = "topic-id"
PROPERTY = settings(max_examples=150, deadline=None, derandomize=True, database=None)


@PROPERTY
@given(data=st.data(), brokers=broker_views(), level=metadata_versions, election=st.sampled_from(Election),
       fence=st.integers(0, 4), elr=st.booleans())
def test_removing_a_broker_keeps_the_partition_invariants(data, brokers, level, election, fence, elr) -> None:
    """§2.5/§2.6: after a fencing-style build the leader is an acceptable ISR member or -1, epochs step by one."""
    partition = data.draw(partition_registrations(elr=elr))
    record = build_partition_change(
        partition, T, 0, brokers=brokers, metadata_version=level, min_isr=2,
        target_isr=tuple(r for r in partition.isr if r != fence), election=election, elr_enabled=elr,
        broker_to_remove=fence,
    )
    if record is None:
        return
    after = merge(partition, record)
    assert after.partition_epoch == partition.partition_epoch + 1
    assert after.leader_epoch == partition.leader_epoch + (record.leader != NO_LEADER_CHANGE)
    assert after.leader == NO_LEADER or (after.leader in after.isr and after.leader != fence)
    assert after.leader == NO_LEADER or brokers[after.leader].is_active
    assert set(after.isr) <= set(after.replicas) and len(set(after.isr)) == len(after.isr)
    assert after.isr or elr
    assert not set(after.elr) & set(after.isr)


@PROPERTY
@given(data=st.data(), partition=partition_registrations(elr=False), brokers=broker_views(), level=metadata_versions)
def test_alter_partition_is_a_conditional_update(data, partition, brokers, level) -> None:
    """§2.10: only the leader at both current epochs changes the partition, and the ISR keeps the leader."""
    request = data.draw(alter_partition_requests(T, partition))
    before = PersistentMap({(T, 0): partition})
    after, response, records = alter_partition(brokers, {T: TopicInfo(name="t", topic_id=T)}, before, request,
                                                metadata_version=level, elr_enabled=False)
    (sent,) = request.topics[0].partitions
    current = (sent.leader_epoch, sent.partition_epoch) == (partition.leader_epoch, partition.partition_epoch)
    if records:
        assert current and request.broker_id == partition.leader
        assert after[(T, 0)].partition_epoch == partition.partition_epoch + 1
        assert partition.leader in after[(T, 0)].isr or response.topics[0].partitions[0].error_code == Errors.NEW_LEADER_ELECTED
    else:
        assert after == before
    if response.error_code == Errors.NONE and not current:
        assert response.topics[0].partitions[0].error_code != Errors.NONE
