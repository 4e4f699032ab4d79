"""Heartbeats reporting offline log directories (rules §1.5 step 7, ``handleDirectoriesOffline``)."""

from __future__ import annotations

from kraftspec.reference import broker
from kraftspec.reference.broker import BrokerHeartbeatRequest
from kraftspec.reference.errors import Errors
from kraftspec.reference.metadata_version import LEVELS
from kraftspec.reference.records import BrokerRegistrationChangeRecord, PartitionChangeRecord

from support_broker import directory, new_cluster, register, topic, unfence

DIR_A, DIR_B = directory(11), directory(12)


def cluster_with_two_dirs_on_broker_1(level: str) -> tuple[broker.ClusterControl, str]:
    """Brokers 1-3 up; broker 1 has DIR_A and DIR_B; partition 0 (led by 1) sits on DIR_A, partition 1 on DIR_B."""
    state = new_cluster(LEVELS[level])
    state = register(state, 1, log_dirs=(DIR_A, DIR_B))
    for b in (2, 3):
        state = register(state, b)
    for b in (1, 2, 3):
        state = unfence(state, b)
    state, topic_id = topic(state, "foo", [[1, 2, 3], [2, 1, 3]])
    placements = {0: (DIR_A, directory(2), directory(3)), 1: (directory(2), DIR_B, directory(3))}
    for partition_id, dirs in placements.items():
        state = broker.replay(state, PartitionChangeRecord(partition_id=partition_id, topic_id=topic_id,
                                                           directories=dirs, version=1), state.next_offset)
        state = broker.log_advanced(state, state.next_offset + 1)
    return state, topic_id


def offline(state: broker.ClusterControl, *dirs: str) -> tuple[broker.ClusterControl, broker.Output]:
    request = BrokerHeartbeatRequest(broker_id=1, broker_epoch=state.brokers[1].epoch, current_metadata_offset=10**9, want_fence=False, want_shut_down=False, offline_log_dirs=dirs)
    state, out = broker.heartbeat(state, request, 0)
    assert out.response.error is Errors.NONE and not out.response.is_fenced
    return state, out


def test_offline_directory_moves_its_partitions_then_lists_the_remaining_dirs() -> None:
    state, topic_id = cluster_with_two_dirs_on_broker_1("3.7-IV2")
    state, out = offline(state, DIR_A)
    records = [r for _, r in out.records]
    assert [type(r) for r in records] == [PartitionChangeRecord, BrokerRegistrationChangeRecord]
    change = records[0]
    assert (change.partition_id, change.leader, change.isr) == (0, 2, (2, 3))
    assert records[1] == BrokerRegistrationChangeRecord(broker_id=1, broker_epoch=state.brokers[1].epoch,
                                                        log_dirs=(DIR_B,), version=2)
    assert state.brokers[1].log_dirs == (DIR_B,)
    assert state.partitions[(topic_id, 1)].isr == (2, 1, 3)  # on DIR_B: untouched


def test_repeated_report_writes_nothing_and_a_further_dir_moves_only_its_partitions() -> None:
    state, topic_id = cluster_with_two_dirs_on_broker_1("3.7-IV2")
    state, _ = offline(state, DIR_A)
    state, again = offline(state, DIR_A)
    assert again.records == ()
    state, out = offline(state, DIR_A, DIR_B)
    records = [r for _, r in out.records]
    assert [(type(r).__name__, getattr(r, "partition_id", None)) for r in records] == [
        ("PartitionChangeRecord", 1), ("BrokerRegistrationChangeRecord", None)]
    assert state.partitions[(topic_id, 1)].isr == (2, 3)
    assert records[1].log_dirs == ()


def test_unknown_directories_are_ignored() -> None:
    state, _ = cluster_with_two_dirs_on_broker_1("3.7-IV2")
    _, out = offline(state, directory(99))
    assert out.records == ()


def test_before_directory_assignment_offline_dirs_are_not_read() -> None:
    state, topic_id = cluster_with_two_dirs_on_broker_1("3.7-IV1")
    state, out = offline(state, DIR_A)
    assert out.records == ()
    assert state.partitions[(topic_id, 0)].leader == 1


def test_fencing_and_offline_dirs_in_one_heartbeat_are_computed_from_the_same_state() -> None:
    """Kafka builds all of a heartbeat's records before replaying any: partition 0 changes twice."""
    state, _ = cluster_with_two_dirs_on_broker_1("3.7-IV2")
    request = BrokerHeartbeatRequest(broker_id=1, broker_epoch=state.brokers[1].epoch, current_metadata_offset=10**9, want_fence=True, want_shut_down=False, offline_log_dirs=(DIR_A,))
    _, out = broker.heartbeat(state, request, 0)
    kinds = [(type(r).__name__, getattr(r, "partition_id", None)) for _, r in out.records]
    assert kinds == [("PartitionChangeRecord", 0), ("PartitionChangeRecord", 1),
                     ("BrokerRegistrationChangeRecord", None), ("PartitionChangeRecord", 0),
                     ("BrokerRegistrationChangeRecord", None)]
