"""The broker-side partition leader (rules §2.12): HW, caught-up rule, ISR shrink and expansion.

Tests take no arguments so that the mutant tests can re-run them as plain functions.
"""

from __future__ import annotations

from kraftspec.reference import metadata_version as mv
from kraftspec.reference.alter_partition import AlterPartitionPartitionResult, AlterPartitionRequest, AlterPartitionTopic, alter_partition
from kraftspec.reference.errors import Errors
from kraftspec.reference.partition import PartitionRegistration, TopicInfo
from kraftspec.reference.partition_leader import (
    PartitionLeaderState,
    append,
    become_leader,
    follower_fetch,
    handle_alter_partition_result,
    maybe_shrink_isr,
    update_leader_metadata,
)
from kraftspec.reference.partition_rules import high_watermark, is_caught_up, last_caught_up_time

from support_partition import broker, brokers

T = "topic-id"
LAG = 30000


def leader(isr=(1, 2, 3), replicas=(1, 2, 3), min_isr=1, leo=0, hw=0, now=0, regs=None) -> PartitionLeaderState:
    registration = PartitionRegistration(replicas=replicas, isr=isr, leader=1, leader_epoch=5, partition_epoch=7)
    return become_leader(1, 101, 0, registration, regs or brokers([1, 2, 3, 4]), log_end_offset=leo, high_watermark=hw,
                         min_insync_replicas=min_isr, now_ms=now)


def fetch(state, follower, offset, now, epoch=None):
    return follower_fetch(state, follower, offset, now, 100 + follower if epoch is None else epoch)


def test_hw_is_min_leo_over_the_isr() -> None:
    state = append(leader(), 10, 0)
    assert state.high_watermark == 0
    state, request = fetch(state, 2, 10, 1)
    assert request is None and state.high_watermark == 0
    state, _ = fetch(state, 3, 6, 2)
    assert state.high_watermark == 6
    state, _ = fetch(state, 3, 10, 3)
    assert state.high_watermark == 10


def test_hw_ignores_replicas_outside_the_isr_that_are_not_caught_up() -> None:
    state = append(leader(isr=(1, 2), replicas=(1, 2, 3)), 10, 0)
    state, _ = fetch(state, 2, 10, 1)
    assert state.high_watermark == 10
    state = append(state, 5, LAG + 10)
    state, _ = fetch(state, 2, 15, LAG + 11)
    assert state.high_watermark == 15


def test_hw_waits_for_a_caught_up_eligible_follower_outside_the_isr() -> None:
    state = append(leader(isr=(1,), replicas=(1, 2)), 10, 0)
    assert state.high_watermark == 10
    state, request = fetch(state, 2, 10, 1)
    assert request is not None and [m[0] for m in request.new_isr_with_epochs] == [1, 2]
    state = append(state, 5, 2)
    assert state.high_watermark == 10  # follower 2 is in the maximal ISR (pending expansion)


def test_hw_frozen_below_min_isr() -> None:
    state = append(leader(isr=(1,), replicas=(1, 2, 3), min_isr=2), 10, 0)
    assert state.high_watermark == 0
    state = append(leader(isr=(1,), replicas=(1,), min_isr=2), 10, 0)
    assert state.high_watermark == 10  # effective min ISR = min(2, RF 1)
    assert high_watermark(3, 10, (), 1, 2) == 3
    assert high_watermark(3, 10, (2,), 2, 2) == 3  # never backwards


def test_caught_up_rule_and_last_caught_up_time() -> None:
    assert is_caught_up(10, 10, 10**6, 0, LAG)
    assert is_caught_up(5, 10, LAG, 0, LAG)
    assert not is_caught_up(5, 10, LAG + 1, 0, LAG)
    assert last_caught_up_time(10, 10, 500, 8, 400, 100) == 500
    assert last_caught_up_time(8, 10, 500, 8, 400, 100) == 400
    assert last_caught_up_time(7, 10, 500, 8, 400, 100) == 100


def test_isr_shrink_after_lag_time() -> None:
    state = append(leader(), 10, 0)
    state, _ = fetch(state, 2, 10, 1)
    state, _ = fetch(state, 3, 10, 1)
    state = append(state, 5, 2)
    state, _ = fetch(state, 2, 15, LAG)
    assert maybe_shrink_isr(state, LAG + 1) == (state, None)
    shrunk, request = maybe_shrink_isr(state, LAG + 2)
    assert request is not None and request.new_isr_with_epochs == ((1, 101), (2, 102))
    assert (request.leader_epoch, request.partition_epoch) == (5, 7)
    assert shrunk.maximal_isr == (1, 2, 3) and maybe_shrink_isr(shrunk, LAG * 3) == (shrunk, None)
    result = AlterPartitionPartitionResult(partition_index=0, error_code=Errors.NONE, leader_id=1, leader_epoch=5, isr=(1, 2), leader_recovery_state=0, partition_epoch=8)
    committed, resend = handle_alter_partition_result(shrunk, result, LAG + 3)
    assert resend is None and committed.isr == (1, 2) and committed.partition_epoch == 8 and committed.pending is None
    assert committed.high_watermark == 15


def test_isr_expansion_conditions() -> None:
    state = append(leader(isr=(1, 2), replicas=(1, 2, 3)), 10, 0)
    state, _ = fetch(state, 2, 10, 1)
    state, request = fetch(state, 3, 9, 2)
    assert request is None  # below the HW
    fenced = update_leader_metadata(state, PartitionRegistration(replicas=(1, 2, 3), isr=(1, 2), leader=1, leader_epoch=5,
                                                                  partition_epoch=7),
                                    brokers([1, 2], fenced=[3]), 3)
    assert fetch(fenced, 3, 10, 3)[1] is None  # fenced broker
    assert fetch(state, 3, 10, 3, epoch=999)[1] is None  # broker epoch does not match the metadata cache
    expanded, request = fetch(state, 3, 10, 3)
    assert request is not None and request.new_isr_with_epochs == ((1, 101), (2, 102), (3, 103))
    assert fetch(expanded, 3, 10, 4)[1] is None  # one AlterPartition in flight at a time


def test_expansion_needs_leader_epoch_start_offset() -> None:
    state = leader(isr=(1,), replicas=(1, 2), leo=10, hw=4)
    state, request = fetch(state, 2, 8, 1)
    assert request is None and state.leader_epoch_start_offset == 10


def test_restarted_follower_rejoins_only_with_its_new_epoch() -> None:
    """KIP-903: the ISR expansion the leader sent with the old epoch is rejected after the restart."""
    regs = brokers([1, 2, 3])
    topics = {T: TopicInfo(name="t", topic_id=T)}
    parts = {(T, 0): PartitionRegistration(replicas=(1, 2, 3), isr=(1, 2), leader=1, leader_epoch=5, partition_epoch=7)}
    state = append(leader(isr=(1, 2), regs=regs), 10, 0)
    state, _ = fetch(state, 2, 10, 1)
    state, request = fetch(state, 3, 10, 2)
    assert request is not None
    restarted = regs.set(3, broker(3, epoch=300))
    _, response, records = alter_partition(restarted, topics, parts, AlterPartitionRequest(broker_id=1, broker_epoch=101, topics=(AlterPartitionTopic(topic_id=T, partitions=(request,)),)),
                                           metadata_version=mv.LATEST_PRODUCTION, elr_enabled=False)
    result = response.topics[0].partitions[0]
    assert (result.error_code, records) == (Errors.INELIGIBLE_REPLICA, ())
    reverted, resend = handle_alter_partition_result(state, result, 3)
    assert resend is None and reverted.pending is None and reverted.isr == (1, 2)


def test_alter_partition_error_handling() -> None:
    state = append(leader(isr=(1, 2), replicas=(1, 2, 3)), 10, 0)
    state, _ = fetch(state, 2, 10, 1)
    pending, request = fetch(state, 3, 10, 2)
    for error in (Errors.FENCED_LEADER_EPOCH, Errors.INVALID_UPDATE_VERSION, Errors.NEW_LEADER_ELECTED):
        assert handle_alter_partition_result(pending, AlterPartitionPartitionResult(partition_index=0, error_code=error), 3) == (pending, None)
    assert handle_alter_partition_result(pending, AlterPartitionPartitionResult(partition_index=0, error_code=Errors.NOT_CONTROLLER), 3) == (pending, request)
    assert handle_alter_partition_result(pending, AlterPartitionPartitionResult(partition_index=0, error_code=Errors.OPERATION_NOT_ATTEMPTED), 3)[0].pending is None
    stale = AlterPartitionPartitionResult(partition_index=0, error_code=Errors.NONE, leader_id=1, leader_epoch=4, isr=(1, 2, 3), leader_recovery_state=0, partition_epoch=8)
    assert handle_alter_partition_result(pending, stale, 3) == (pending, None)
