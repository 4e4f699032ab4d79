"""Kafka's own broker-lifecycle scenarios (kafka-scenarios.md sections A, B, C and J's broker items), by number."""

from __future__ import annotations

import dataclasses

import pytest

from kraftspec.reference import broker, broker_lifecycle as lc, broker_rules
from kraftspec.reference.broker import (
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    BrokerRegistrationResponse,
    HeartbeatState,
    IllegalStateError,
)
from kraftspec.reference.broker_lifecycle import BrokerState
from kraftspec.reference.broker_rules import BrokerControlState as S
from kraftspec.reference.errors import Errors
from kraftspec.reference.frozen import FrozenMap, evolve
from kraftspec.reference.metadata_version import LATEST_PRODUCTION, LEVELS
from kraftspec.reference.records import (
    BrokerRegistrationChangeRecord,
    Endpoint,
    FeatureRange,
    PartitionChangeRecord,
    RegisterBrokerRecord,
    UnregisterBrokerRecord,
)
from support_broker import brokers_up, directory, new_cluster, register, registration, topic, unfence

MS = 1_000_000  # the tracker's tests use nanosecond clocks


# --- A. Broker heartbeat tracker and heartbeat manager ------------------------------------------

def test_scenario_01_update_contact_time() -> None:
    state = new_cluster()
    assert (1, 100) not in state.sessions
    state = broker.track_heartbeat(state, 1, 100, 0)
    assert state.sessions[(1, 100)] == 0


def test_scenario_02_nothing_expires_while_all_up_to_date() -> None:
    state = new_cluster(session_timeout=10 * MS)
    for key in ((0, 0), (1, 100), (2, 200)):
        state = broker.track_heartbeat(state, *key, 5 * MS)
    assert broker.expired_sessions(state, 5 * MS) == []
    assert broker.fence_stale_broker(state, 5 * MS)[1].response.expired_session is None


def test_scenario_04_sessions_are_keyed_by_id_and_epoch() -> None:
    state = broker.track_heartbeat(new_cluster(session_timeout=10 * MS), 2, 200, 0)
    assert not broker.has_valid_session(state, 2, 100, 0)
    assert broker.has_valid_session(state, 2, 200, 0)
    assert not broker.has_valid_session(state, 3, 300, 0)


def test_scenario_05_expiry_is_strict_and_never_backwards() -> None:
    timeout = 10_000_000
    assert not broker_rules.session_expired(456, 456, timeout)
    assert not broker_rules.session_expired(456, 466, timeout)
    assert not broker_rules.session_expired(456, 456 + timeout, timeout)
    assert broker_rules.session_expired(456, 456 + timeout + 1, timeout)
    assert not broker_rules.session_expired(456, 0, timeout)


def _with_heartbeats(entries: dict[int, HeartbeatState]) -> broker.ClusterControl:
    return evolve(new_cluster(), heartbeats=FrozenMap(entries))


def test_scenario_07_active_set_orders_by_offset_then_id() -> None:
    state = _with_heartbeats({1: HeartbeatState(fenced=False, metadata_offset=800), 2: HeartbeatState(fenced=False, metadata_offset=400), 3: HeartbeatState(fenced=False, metadata_offset=100)})
    assert broker.active_brokers(state) == [3, 2, 1]
    state = _with_heartbeats({1: HeartbeatState(fenced=False, metadata_offset=5), 2: HeartbeatState(fenced=False, metadata_offset=5), 3: HeartbeatState(fenced=False, metadata_offset=5)})
    assert broker.active_brokers(state) == [1, 2, 3]


def test_scenario_08_lowest_active_offset_and_usable_brokers() -> None:
    state = _with_heartbeats({0: HeartbeatState(fenced=False, metadata_offset=100), 1: HeartbeatState(fenced=False, metadata_offset=100), 2: HeartbeatState(fenced=False, metadata_offset=98),
                              3: HeartbeatState(fenced=False, metadata_offset=100), 4: HeartbeatState(fenced=True, metadata_offset=100)})
    assert broker.lowest_active_offset(state) == 98
    assert [u for u in broker.usable_brokers(state) if u[0] % 3 != 0] == [(1, False), (2, False), (4, True)]
    state = broker.maybe_update_controlled_shutdown_offset(state, 2, 98)
    assert broker.lowest_active_offset(state) == 100
    assert 2 not in [b for b, _ in broker.usable_brokers(state)]
    with pytest.raises(IllegalStateError, match="Fenced brokers cannot enter controlled shutdown."):
        broker.maybe_update_controlled_shutdown_offset(state, 4, 100)


def test_scenario_10_calculate_next_broker_state() -> None:
    state = _with_heartbeats({0: HeartbeatState(fenced=True, metadata_offset=100), 1: HeartbeatState(fenced=False, metadata_offset=98), 2: HeartbeatState(fenced=False, metadata_offset=100),
                              3: HeartbeatState(fenced=False, metadata_offset=100), 4: HeartbeatState(fenced=True, metadata_offset=100),
                              5: HeartbeatState(fenced=False, metadata_offset=99, controlled_shutdown_offset=99)})

    def nxt(s: broker.ClusterControl, b: int, fence: bool, shut: bool, offset: int = 100,
            leads: bool = False) -> tuple[S, S]:
        if leads:
            from kraftspec.reference.partition import PartitionRegistration
            s = evolve(s, partitions=FrozenMap({("t", 0): PartitionRegistration(replicas=(b,), isr=(b,), leader=b)}))
        return broker.calculate_next_broker_state(s, b, BrokerHeartbeatRequest(broker_id=b, broker_epoch=0, current_metadata_offset=offset, want_fence=fence, want_shut_down=shut), 100)

    assert nxt(state, 0, False, True) == (S.FENCED, S.SHUTDOWN_NOW)
    assert nxt(state, 0, False, False, 100) == (S.FENCED, S.UNFENCED)
    assert nxt(state, 0, False, False, 50) == (S.FENCED, S.FENCED)
    assert nxt(state, 0, True, False) == (S.FENCED, S.FENCED)
    assert nxt(state, 1, False, True, leads=True) == (S.UNFENCED, S.CONTROLLED_SHUTDOWN)
    assert nxt(state, 1, False, True) == (S.UNFENCED, S.SHUTDOWN_NOW)
    assert nxt(state, 1, False, False) == (S.UNFENCED, S.UNFENCED)
    assert nxt(state, 5, False, True, leads=True) == (S.CONTROLLED_SHUTDOWN, S.CONTROLLED_SHUTDOWN)
    assert nxt(state, 5, False, True) == (S.CONTROLLED_SHUTDOWN, S.CONTROLLED_SHUTDOWN)  # 99 > lowest 98
    state = broker.touch(state, 1, True, 98)
    assert broker.lowest_active_offset(state) == 100
    assert nxt(state, 5, False, True) == (S.CONTROLLED_SHUTDOWN, S.SHUTDOWN_NOW)
    assert nxt(state, 5, False, True, leads=True) == (S.CONTROLLED_SHUTDOWN, S.CONTROLLED_SHUTDOWN)
    for unknown in (6, 7):
        with pytest.raises(IllegalStateError, match=f"Broker {unknown} is not registered."):
            nxt(state, unknown, False, False)


def test_scenario_11_touch_requires_registration() -> None:
    with pytest.raises(IllegalStateError, match="Broker 2 is not registered."):
        broker.touch(new_cluster(), 2, False, 0)


# --- B. Broker registration -------------------------------------------------------------------

@pytest.mark.parametrize("mv_name,version", [("3.3-IV3", 1), ("3.7-IV2", 3), ("4.3-IV0", 4)])
def test_scenario_13_register_broker_record_version(mv_name: str, version: int) -> None:
    level = LEVELS[mv_name]
    state = broker.log_advanced(new_cluster(level), 123)
    request = registration(0, state)
    request = dataclasses.replace(request, features=(FeatureRange(name="metadata.version", min_supported=level, max_supported=level),))
    _, out = broker.register_broker(state, request, 0)
    assert out.response == BrokerRegistrationResponse(error=Errors.NONE, broker_epoch=123)
    assert len(out.records) == 1
    offset, record = out.records[0]
    assert offset == 123
    assert record == RegisterBrokerRecord(
        broker_id=0, incarnation_id=request.incarnation_id, broker_epoch=123, rack=None, fenced=True,
        in_controlled_shutdown=False, features=(FeatureRange(name="metadata.version", min_supported=level, max_supported=level),),
        log_dirs=(directory(0),) if level >= LEVELS["3.7-IV2"] else (), version=version)


@pytest.mark.parametrize("supported", [7, 8])
def test_scenario_14_unsupported_metadata_version(supported: int) -> None:
    state = new_cluster(LEVELS["3.5-IV0"])
    request = broker.BrokerRegistrationRequest(broker_id=0, cluster_id=state.cluster_id, incarnation_id="i0", features=(
        FeatureRange(name="metadata.version", min_supported=supported, max_supported=supported),))
    _, out = broker.register_broker(state, request, 0)
    assert out.response.error is Errors.UNSUPPORTED_VERSION
    assert out.response.message == (
        f"Unable to register because the broker does not support finalized version 9 of metadata.version. "
        f"The broker wants a version between {supported} and {supported}, inclusive.")
    assert out.records == ()


def test_scenario_16_unsupported_kraft_version() -> None:
    state = new_cluster(features={"kraft.version": 1})
    mv_only = (FeatureRange(name="metadata.version", min_supported=7, max_supported=LATEST_PRODUCTION),)
    for features in (mv_only, mv_only + (FeatureRange(name="kraft.version", min_supported=0, max_supported=0),)):
        request = broker.BrokerRegistrationRequest(broker_id=0, cluster_id=state.cluster_id, incarnation_id="i0", features=features, log_dirs=(directory(0),))
        _, out = broker.register_broker(state, request, 0)
        assert out.response.error is Errors.UNSUPPORTED_VERSION
        assert out.response.message == (
            "Unable to register because the broker does not support finalized version 1 of kraft.version. "
            "The broker wants a version between 0 and 0, inclusive.")
    request = broker.BrokerRegistrationRequest(broker_id=0, cluster_id=state.cluster_id, incarnation_id="i0", log_dirs=(directory(0),),
                                               features=mv_only + (FeatureRange(name="kraft.version", min_supported=1, max_supported=1),))
    assert broker.register_broker(state, request, 0)[1].response.error is Errors.NONE


def test_scenario_17_directory_checks() -> None:
    dirs = ("yJGxmjiiQ1ebtvZRNvZDxA", "Mj3CW3OSRi29cFeNJlXuAQ")
    state = register(new_cluster(), 0, log_dirs=dirs)
    state = register(state, 0, log_dirs=dirs)  # the same incarnation with the same directories
    cases = [((), "No directories specified in request"),
             (("Mj3CW3OSRi29cFeNJlXuAQ",), "Broker 0 is already registered with directory Mj3CW3OSRi29cFeNJlXuAQ"),
             (("AAAAAAAAAAAAAAAAAAAAAQ",), "Reserved directory ID in request"),
             (("AAAAAAAAAAD__________w",), "Reserved directory ID in request"),  # low half -1: signed, so below 100
             (("aaaaaaaaaaaaaaaaaaaaaQ", "aaaaaaaaaaaaaaaaaaaaaQ"), "Duplicate directory ID in request")]
    for log_dirs, message in cases:
        _, out = broker.register_broker(state, registration(1, state, log_dirs=log_dirs), 0)
        assert (out.response.error, out.response.message) == (Errors.INVALID_REGISTRATION, message)


@pytest.mark.parametrize("clean", [True, False])
def test_scenario_19_re_registration_with_clean_shutdown_detection(clean: bool) -> None:
    state = new_cluster(LATEST_PRODUCTION, features={"eligible.leader.replicas.version": 1})
    state = brokers_up(state, [1, 2])
    state, topic_id = topic(state, "foo", [[1, 2]], min_isr=2)
    state, out = broker.heartbeat(state, BrokerHeartbeatRequest(broker_id=1, broker_epoch=101, current_metadata_offset=10**9, want_fence=False, want_shut_down=True), 0)
    assert out.response.in_controlled_shutdown
    assert state.partitions[(topic_id, 0)].elr == (1,)
    state = broker.log_advanced(state, 111)
    request = registration(1, state, incarnation="restarted", previous_epoch=101 if clean else 10)
    state, out = broker.register_broker(state, request, 10**6)
    assert out.response == BrokerRegistrationResponse(error=Errors.NONE, broker_epoch=111)
    kinds = [type(r).__name__ for _, r in out.records]
    assert kinds == (["RegisterBrokerRecord"] if clean else ["PartitionChangeRecord", "RegisterBrokerRecord"])
    assert not state.brokers[1].in_controlled_shutdown and state.brokers[1].epoch == 111


def test_scenario_20_duplicate_registration_with_active_old_broker() -> None:
    state = register(new_cluster(session_timeout=1000 * MS), 0)
    state = unfence(state, 0)
    state = broker.activate(broker.deactivate(state), 1000 * MS)
    request = registration(0, state, incarnation="new-incarnation")
    _, out = broker.register_broker(state, request, 1500 * MS)
    assert out.response.error is Errors.DUPLICATE_BROKER_REGISTRATION
    _, out = broker.register_broker(state, request, 2500 * MS)
    assert out.response.error is Errors.NONE


def test_scenario_22_activation_gives_sessions_only_to_unfenced_brokers() -> None:
    state = register(new_cluster(), 0, epoch=100)
    state = unfence(register(state, 1, epoch=123), 1)
    state = broker.activate(broker.deactivate(state), 777)
    assert (0, 100) not in state.sessions
    assert state.sessions[(1, 123)] == 777
    assert (1, 124) not in state.sessions and (2, 100) not in state.sessions
    assert broker.activate(broker.deactivate(
        evolve(state, behaviour=broker.KAFKA_4_0)), 5).sessions[(0, 100)] == 5  # 4.0: fenced ones too


def test_scenario_23_replay_register_and_unregister() -> None:
    record = RegisterBrokerRecord(broker_id=1, incarnation_id="i", broker_epoch=100, rack="arack",
                                  end_points=(Endpoint(name="PLAINTEXT", host="example.com", port=9092, security_protocol=0),))
    state = broker.replay(new_cluster(), record, 100)
    registration_ = state.brokers[1]
    assert registration_.fenced and not registration_.in_controlled_shutdown and registration_.rack == "arack"
    assert state.register_offsets[1] == 100
    state = broker.replay(state, UnregisterBrokerRecord(broker_id=1, broker_epoch=100), 101)
    assert 1 not in state.brokers and 1 not in state.register_offsets


def test_scenario_25_unregister_broker() -> None:
    state = broker.log_advanced(new_cluster(features={"eligible.leader.replicas.version": 1}), 6)
    state, out = broker.register_broker(state, registration(0, state), 0)
    assert out.response.broker_epoch == 6
    from kraftspec.reference.partition import TopicInfo
    _, created = broker.create_topic(state, TopicInfo(name="foo", topic_id="FOOFOOFOOFOOFOOFOOFOOw"), ((0,),))
    # every assigned broker fenced: Kafka 4.3 ReplicationControlManager.createTopic answers INVALID_REPLICA_ASSIGNMENT
    assert created.response is Errors.INVALID_REPLICA_ASSIGNMENT
    state, out = broker.heartbeat(state, BrokerHeartbeatRequest(broker_id=0, broker_epoch=6, current_metadata_offset=100000, want_fence=False, want_shut_down=False), 0)
    assert out.response == BrokerHeartbeatResponse(error=Errors.NONE, is_caught_up=True, is_fenced=False,
                                                   in_controlled_shutdown=False, should_shut_down=False)
    state, topic_id = topic(state, "foo", [[0]])
    assert state.partitions[(topic_id, 0)].leader == 0
    state, out = broker.unregister_broker(state, 0)
    assert out.response.error is Errors.NONE
    assert state.partitions[(topic_id, 0)].leader == -1
    _, out = broker.heartbeat(state, BrokerHeartbeatRequest(broker_id=0, broker_epoch=6, current_metadata_offset=100000, want_fence=False, want_shut_down=False), 0)
    assert out.response.error is Errors.STALE_BROKER_EPOCH


# --- C. Heartbeat processing, fencing and controlled shutdown ---------------------------------

def test_scenario_26_heartbeat_in_controlled_shutdown() -> None:
    state = brokers_up(new_cluster(LEVELS["3.3-IV3"]), [0, 1, 2])
    state, topic_id = topic(state, "foo", [[0, 1, 2]])
    _, out = broker.heartbeat(state, BrokerHeartbeatRequest(broker_id=0, broker_epoch=100, current_metadata_offset=0, want_fence=False, want_shut_down=True), 0)
    assert [r for _, r in out.records] == [
        BrokerRegistrationChangeRecord(broker_id=0, broker_epoch=100, in_controlled_shutdown=1, version=1),
        PartitionChangeRecord(partition_id=0, topic_id=topic_id, isr=(1, 2), leader=1, version=0),
    ]
    assert out.response.in_controlled_shutdown and not out.response.is_fenced and not out.response.should_shut_down


def test_scenario_28_fencing_removes_leaderships() -> None:
    state = brokers_up(new_cluster(), [0, 1, 2, 3])
    state, _ = topic(state, "foo", [[0, 1, 2], [1, 2, 3], [2, 3, 0], [0, 2, 1]])
    assert sorted(p for (_, p), reg in state.partitions.items() if reg.leader == 0) == [0, 3]
    state, _ = broker._append(state, broker.broker_fenced_records(state, 0))
    assert not any(reg.leader == 0 for reg in state.partitions.values())


def test_scenario_29_fence_multiple_brokers_by_session_expiry() -> None:
    timeout = 1000 * MS
    state = brokers_up(new_cluster(session_timeout=timeout), [1, 2, 3, 4, 5])
    state, topic_id = topic(state, "foo", [[1, 2, 3, 4, 5][i:] + [1, 2, 3, 4, 5][:i] for i in range(5)])
    now = 0
    for _ in range(6):
        now += 500 * MS
        state, _ = broker.heartbeat(state, BrokerHeartbeatRequest(broker_id=1, broker_epoch=101, current_metadata_offset=10**9, want_fence=False, want_shut_down=False), now)
        while True:
            state, out = broker.fence_stale_broker(state, now)
            if out.response.expired_session is None:
                break
    assert all(state.brokers[b].fenced for b in (2, 3, 4, 5)) and not state.brokers[1].fenced
    partition = state.partitions[(topic_id, 0)]
    assert (partition.isr, partition.leader) == ((1,), 1)
    assert all(reg.leader != reg.replicas[0] for (_, p), reg in state.partitions.items() if p > 0)


def test_scenario_31_unclean_shutdown_with_elr() -> None:
    timeout = 1000 * MS
    state = new_cluster(LEVELS["4.0-IV1"], session_timeout=timeout, features={"eligible.leader.replicas.version": 1})
    state = brokers_up(state, [1, 2, 3])
    state, topic_id = topic(state, "foo", [[1, 2, 3]], min_isr=2)
    now = 2 * timeout
    while True:
        state, out = broker.fence_stale_broker(state, now)
        if out.response.expired_session is None:
            break
    partition = state.partitions[(topic_id, 0)]
    assert partition.isr == () and partition.leader == -1
    assert len(partition.elr) == 2 and len(partition.last_known_elr) == 1
    last_leader = partition.last_known_elr[0]
    state = broker.log_advanced(state, state.next_offset + 10)
    state, out = broker.register_broker(state, registration(last_leader, state, incarnation="again"), now + 1)
    assert out.response.error is Errors.NONE
    partition = state.partitions[(topic_id, 0)]
    assert last_leader not in partition.elr and len(partition.elr) == 1
    assert partition.last_known_elr == (last_leader,)


# --- rules on broker epochs, sessions and shutdown (§1.2, §1.3, §1.7) ------------------------

def test_appendix_b3_fast_restart_after_controlled_shutdown_is_a_duplicate_until_the_session_expires() -> None:
    state = brokers_up(new_cluster(session_timeout=1000), [1])
    state, out = broker.heartbeat(state, BrokerHeartbeatRequest(broker_id=1, broker_epoch=101, current_metadata_offset=10**9, want_fence=False, want_shut_down=True), 100)
    assert out.response.should_shut_down and state.brokers[1].fenced
    restart = registration(1, state, incarnation="second")
    assert broker.register_broker(state, restart, 600)[1].response.error is Errors.DUPLICATE_BROKER_REGISTRATION
    state, out = broker.fence_stale_broker(state, 1101)
    assert [type(r).__name__ for _, r in out.records] == ["BrokerRegistrationChangeRecord"]  # redundant fence
    assert broker.register_broker(state, restart, 1101)[1].response.error is Errors.NONE


def test_appendix_b4_fenced_broker_asking_to_shut_down_writes_a_redundant_fence_record() -> None:
    state = register(new_cluster(), 1)
    _, out = broker.heartbeat(state, BrokerHeartbeatRequest(broker_id=1, broker_epoch=101, current_metadata_offset=0, want_fence=True, want_shut_down=True), 0)
    assert out.response.should_shut_down
    assert [r for _, r in out.records] == [BrokerRegistrationChangeRecord(broker_id=1, broker_epoch=101, fenced=1)]


def test_appendix_b5_shutdown_waits_for_active_brokers_to_reach_the_offset() -> None:
    state = brokers_up(new_cluster(), [1, 2])
    state, _ = topic(state, "foo", [[1, 2]])
    state, _ = broker.heartbeat(state, BrokerHeartbeatRequest(broker_id=2, broker_epoch=102, current_metadata_offset=5, want_fence=False, want_shut_down=False), 0)  # 2 reports offset 5
    state, out = broker.heartbeat(state, BrokerHeartbeatRequest(broker_id=1, broker_epoch=101, current_metadata_offset=10**9, want_fence=False, want_shut_down=True), 0)
    cs_offset = out.records[-1][0]
    assert state.heartbeats[1].controlled_shutdown_offset == cs_offset
    _, out = broker.heartbeat(state, BrokerHeartbeatRequest(broker_id=1, broker_epoch=101, current_metadata_offset=10**9, want_fence=False, want_shut_down=True), 1)
    assert not out.response.should_shut_down  # broker 2 is still at offset 5
    state, _ = broker.heartbeat(state, BrokerHeartbeatRequest(broker_id=2, broker_epoch=102, current_metadata_offset=cs_offset, want_fence=False, want_shut_down=False), 1)
    _, out = broker.heartbeat(state, BrokerHeartbeatRequest(broker_id=1, broker_epoch=101, current_metadata_offset=10**9, want_fence=False, want_shut_down=True), 2)
    assert out.response.should_shut_down


@pytest.mark.parametrize("behaviour", [broker.KAFKA_4_1, broker.KAFKA_3_9], ids=lambda b: b.name)
def test_an_unfence_forgets_the_reported_offset_so_a_controlled_shutdown_waits(behaviour: broker.KafkaBehaviour) -> None:
    """Replaying the unfence record registers the entry again with the flag the heartbeat already touched
    (``ClusterControlManager`` replay, ``BrokerHeartbeatManager.register``), so the unfenced broker is active at
    offset -1 until it heartbeats again and another broker's controlled shutdown waits for it. Kafka 3.9.1 does the
    same (its ``register`` is 4.x's; run against Kafka 3.9.1, tests/test_kafka_broker.py)."""
    state = brokers_up(new_cluster(behaviour=behaviour), [1, 2])
    state, topic_id = topic(register(state, 3), "foo", [[1, 2]])
    epoch3 = state.brokers[3].epoch
    state, out = broker.heartbeat(state, BrokerHeartbeatRequest(broker_id=1, broker_epoch=101, current_metadata_offset=10**9, want_fence=False, want_shut_down=True), 0)
    assert out.response.in_controlled_shutdown and state.partitions[(topic_id, 0)].leader == 2
    cs_offset = state.heartbeats[1].controlled_shutdown_offset
    state, _ = broker.heartbeat(state, BrokerHeartbeatRequest(broker_id=2, broker_epoch=102, current_metadata_offset=cs_offset, want_fence=False, want_shut_down=False), 0)
    assert broker.heartbeat(state, BrokerHeartbeatRequest(broker_id=1, broker_epoch=101, current_metadata_offset=10**9, want_fence=False, want_shut_down=True), 0)[1].response.should_shut_down
    state, out = broker.heartbeat(state, BrokerHeartbeatRequest(broker_id=3, broker_epoch=epoch3, current_metadata_offset=10**9, want_fence=False, want_shut_down=False), 0)  # 3 is unfenced
    assert not out.response.is_fenced and out.records
    forgets = behaviour.register_forgets_offset
    assert broker.lowest_active_offset(state) == (-1 if forgets else cs_offset)
    _, out = broker.heartbeat(state, BrokerHeartbeatRequest(broker_id=1, broker_epoch=101, current_metadata_offset=10**9, want_fence=False, want_shut_down=True), 1)
    assert out.response.should_shut_down is not forgets
    assert out.response.in_controlled_shutdown is forgets
    state, _ = broker.heartbeat(state, BrokerHeartbeatRequest(broker_id=3, broker_epoch=epoch3, current_metadata_offset=10**9, want_fence=False, want_shut_down=False), 1)
    _, out = broker.heartbeat(state, BrokerHeartbeatRequest(broker_id=1, broker_epoch=101, current_metadata_offset=10**9, want_fence=False, want_shut_down=True), 2)
    assert out.response.should_shut_down


@pytest.mark.parametrize("behaviour", [broker.KAFKA_4_1, broker.KAFKA_3_9], ids=lambda b: b.name)
def test_a_broker_in_controlled_shutdown_fenced_by_session_expiry_is_told_to_shut_down_now(
        behaviour: broker.KafkaBehaviour) -> None:
    """``BrokerHeartbeatManager.fence`` marks the entry before the fence record is replayed, and the replay's
    ``register`` touches it as fenced, clearing its controlled-shutdown offset (§1.6): its next heartbeat is FENCED ->
    SHUTDOWN_NOW, in Kafka 3.9.1 too (3.9's ``fence`` unlinks the entry from the unfenced list, which is its fenced
    flag)."""
    timeout = 1000
    state = brokers_up(new_cluster(session_timeout=timeout, behaviour=behaviour), [1, 2])
    state, topic_id = topic(state, "foo", [[1, 2]])
    state, out = broker.heartbeat(state, BrokerHeartbeatRequest(broker_id=1, broker_epoch=101, current_metadata_offset=10**9, want_fence=False, want_shut_down=True), 0)
    assert out.response.in_controlled_shutdown and state.partitions[(topic_id, 0)].leader == 2
    cs_offset = state.heartbeats[1].controlled_shutdown_offset
    state, _ = broker.heartbeat(state, BrokerHeartbeatRequest(broker_id=2, broker_epoch=102, current_metadata_offset=5, want_fence=False, want_shut_down=False), 2 * timeout)  # 2 lags at 5
    state, out = broker.fence_stale_broker(state, 2 * timeout)
    assert out.response.fenced and out.response.expired_session[0] == 1 and state.brokers[1].fenced
    forgets = behaviour.register_forgets_offset
    assert state.heartbeats[1] == (HeartbeatState(fenced=True) if forgets else HeartbeatState(fenced=True, metadata_offset=10**9, controlled_shutdown_offset=cs_offset))
    _, out = broker.heartbeat(state, BrokerHeartbeatRequest(broker_id=1, broker_epoch=101, current_metadata_offset=10**9, want_fence=False, want_shut_down=True), 2 * timeout)
    assert (out.response.is_fenced, out.response.in_controlled_shutdown, out.response.should_shut_down) == (
        (True, False, True) if forgets else (False, True, False))


def test_broker_epoch_is_first_record_offset_and_unfencing_waits_for_the_register_record() -> None:
    state = brokers_up(new_cluster(), [1, 2])
    state, topic_id = topic(state, "foo", [[1, 2]])
    state = broker.log_advanced(state, 500)
    state, out = broker.register_broker(state, registration(1, state, incarnation="restarted"), 20_000)
    assert out.response.broker_epoch == 500 and out.records[-1][0] == 501  # ISR cleanup first
    _, hb = broker.heartbeat(state, BrokerHeartbeatRequest(broker_id=1, broker_epoch=500, current_metadata_offset=500, want_fence=False, want_shut_down=False), 0)
    assert hb.response.is_fenced and not hb.response.is_caught_up
    _, hb = broker.heartbeat(state, BrokerHeartbeatRequest(broker_id=1, broker_epoch=500, current_metadata_offset=501, want_fence=False, want_shut_down=False), 0)
    assert not hb.response.is_fenced and hb.response.is_caught_up


def test_same_incarnation_re_registration_keeps_the_epoch() -> None:
    state = brokers_up(new_cluster(), [1])
    state = broker.log_advanced(state, 300)
    state, out = broker.register_broker(state, registration(1, state), 0)
    assert out.response.broker_epoch == 101 and not state.brokers[1].fenced
    assert state.register_offsets[1] == 300


def test_legacy_3_9_sessions_do_not_protect_fenced_brokers() -> None:
    state = register(new_cluster(behaviour=broker.KAFKA_3_9, session_timeout=1000), 1)
    state, _ = broker.heartbeat(state, BrokerHeartbeatRequest(broker_id=1, broker_epoch=101, current_metadata_offset=0, want_fence=True, want_shut_down=False), 0)  # fenced, heartbeating
    assert broker.register_broker(state, registration(1, state, incarnation="x"), 1)[1].response.error is Errors.NONE
    modern = register(new_cluster(session_timeout=1000), 1)
    modern, _ = broker.heartbeat(modern, BrokerHeartbeatRequest(broker_id=1, broker_epoch=101, current_metadata_offset=0, want_fence=True, want_shut_down=False), 0)
    assert broker.register_broker(modern, registration(1, modern, incarnation="x"), 1)[1].response.error is \
        Errors.DUPLICATE_BROKER_REGISTRATION


# --- J. Broker side: BrokerLifecycleManager ------------------------------------------------------

def _broker_process(epoch_file: int = -1) -> lc.BrokerLifecycle:
    template = broker.BrokerRegistrationRequest(broker_id=1, cluster_id="cluster", incarnation_id="incarnation")
    return lc.start(lc.BrokerLifecycle(template=template), 0, previous_broker_epoch=epoch_file)


def test_scenario_119_successful_registration() -> None:
    process, request = lc.poll(_broker_process(10), 0)
    assert isinstance(request, broker.BrokerRegistrationRequest) and request.previous_broker_epoch == 10
    process = lc.on_registration_response(process, BrokerRegistrationResponse(error=Errors.NONE, broker_epoch=1000), 1)
    assert process.broker_epoch == 1000 and process.registered


def test_scenario_121_controlled_shutdown() -> None:
    process, _ = lc.poll(_broker_process(), 0)
    process = lc.on_registration_response(process, BrokerRegistrationResponse(error=Errors.NONE, broker_epoch=1000), 0)
    process, _ = lc.poll(process, 0)
    process = lc.on_heartbeat_response(process, BrokerHeartbeatResponse(error=Errors.NONE, is_caught_up=True), 0)
    assert process.state is BrokerState.RECOVERY
    process, _ = lc.poll(process, 10)
    process = lc.on_heartbeat_response(process, BrokerHeartbeatResponse(error=Errors.NONE, is_caught_up=True, is_fenced=False), 10)
    assert process.state is BrokerState.RUNNING
    process = lc.begin_controlled_shutdown(process, 20)
    assert process.state is BrokerState.PENDING_CONTROLLED_SHUTDOWN
    process, request = lc.poll(process, 20)
    assert isinstance(request, BrokerHeartbeatRequest) and request.want_shut_down
    process = lc.on_heartbeat_response(process, BrokerHeartbeatResponse(error=Errors.NONE, is_caught_up=True, is_fenced=True, in_controlled_shutdown=False, should_shut_down=True), 21)
    assert process.state is BrokerState.SHUTTING_DOWN


def test_broker_state_values_and_registration_timeout() -> None:
    assert [s.value for s in BrokerState] == [0, 1, 2, 3, 6, 7, 127]
    assert BrokerState.from_value(4) is BrokerState.UNKNOWN
    process, _ = lc.poll(_broker_process(), 0)
    process = lc.on_registration_response(process, BrokerRegistrationResponse(error=Errors.NOT_CONTROLLER), 0)
    assert process.next_send_at == 2000 and process.state is BrokerState.STARTING
    assert lc.check_registration_timeout(process, 59_999).state is BrokerState.STARTING
    timed_out = lc.check_registration_timeout(process, 60_000)
    assert timed_out.state is BrokerState.SHUTTING_DOWN and timed_out.broker_epoch == -1


def test_kafka_unfences_a_shutting_down_broker_that_retracts_its_shutdown() -> None:
    """Found by the model: the in-controlled-shutdown flag does not stop an unfence, which elects the broker (§2.4).

    A real broker never sends this after SHUTDOWN_NOW, so the spec assumes it away; the reference keeps Kafka's behaviour.
    """
    state = brokers_up(new_cluster(), [1])
    state, topic_id = topic(state, "foo", [[1]])
    state, out = broker.heartbeat(state, BrokerHeartbeatRequest(broker_id=1, broker_epoch=101, current_metadata_offset=10**9, want_fence=False, want_shut_down=True), 0)
    assert out.response.in_controlled_shutdown and state.partitions[(topic_id, 0)].leader == -1
    state, out = broker.heartbeat(state, BrokerHeartbeatRequest(broker_id=1, broker_epoch=101, current_metadata_offset=10**9, want_fence=False, want_shut_down=True), 0)
    assert out.response.should_shut_down and state.brokers[1].fenced
    state, out = broker.heartbeat(state, BrokerHeartbeatRequest(broker_id=1, broker_epoch=101, current_metadata_offset=10**9, want_fence=False, want_shut_down=False), 0)
    assert not out.response.is_fenced
    assert state.brokers[1].in_controlled_shutdown and state.partitions[(topic_id, 0)].leader == 1


def test_unauthorized_requests_fail_before_any_other_check() -> None:
    state = broker.deactivate(brokers_up(new_cluster(), [1]))  # inactive: NOT_CONTROLLER would come next
    _, out = broker.register_broker(state, registration(1, state), 0, authorized=False)
    assert out.response.error is Errors.CLUSTER_AUTHORIZATION_FAILED
    _, out = broker.heartbeat(state, BrokerHeartbeatRequest(broker_id=1, broker_epoch=101, current_metadata_offset=0, want_fence=False, want_shut_down=False), 0, authorized=False)
    assert out.response.error is Errors.CLUSTER_AUTHORIZATION_FAILED
    after, out = broker.unregister_broker(state, 1, authorized=False)
    assert out.response.error is Errors.CLUSTER_AUTHORIZATION_FAILED and after is state


def test_expired_heartbeat_touches_the_soft_state_only_at_the_current_epoch() -> None:
    """§1.5 step 10 (``processExpiredBrokerHeartbeat``): the epoch is checked first, so a timed-out heartbeat with a
    stale epoch leaves the soft state as it was; at the current epoch it records the reported offset."""
    state = brokers_up(new_cluster(), [1, 2])
    before = state.heartbeats[1]
    stale, out = broker.heartbeat_timed_out(state, BrokerHeartbeatRequest(broker_id=1, broker_epoch=999, current_metadata_offset=5, want_fence=False, want_shut_down=False), 10)
    assert out.response.error is Errors.REQUEST_TIMED_OUT and stale.heartbeats[1] == before
    current, out = broker.heartbeat_timed_out(state, BrokerHeartbeatRequest(broker_id=1, broker_epoch=101, current_metadata_offset=5, want_fence=False, want_shut_down=False), 10)
    assert out.response.error is Errors.REQUEST_TIMED_OUT and current.heartbeats[1].metadata_offset == 5


def _running_with_heartbeat_in_flight(now: int) -> lc.BrokerLifecycle:
    process, _ = lc.poll(_broker_process(), 0)
    process = lc.on_registration_response(process, BrokerRegistrationResponse(error=Errors.NONE, broker_epoch=1000), 0)
    process, _ = lc.poll(process, 0)
    process = lc.on_heartbeat_response(process, BrokerHeartbeatResponse(error=Errors.NONE, is_caught_up=True), 0)
    process, _ = lc.poll(process, 10)
    process = lc.on_heartbeat_response(process, BrokerHeartbeatResponse(error=Errors.NONE, is_caught_up=True, is_fenced=False), 10)
    process, request = lc.poll(process, now)
    assert process.state is BrokerState.RUNNING and process.in_flight and isinstance(request, BrokerHeartbeatRequest)
    return process


def test_a_communication_due_while_one_is_in_flight_goes_out_right_after_the_response() -> None:
    """§1.9: one RPC in flight; the heartbeat controlled shutdown asks for while one is in flight is sent as soon as
    the response is in (not after the usual delay), and an error response drops it (retry after the interval)."""
    process = lc.begin_controlled_shutdown(_running_with_heartbeat_in_flight(2010), 2012)
    assert lc.poll(process, 2012)[1] is None  # still in flight
    answered = lc.on_heartbeat_response(process, BrokerHeartbeatResponse(error=Errors.NONE, is_caught_up=True, is_fenced=False, in_controlled_shutdown=True, should_shut_down=False), 2013)
    answered, request = lc.poll(answered, 2013)
    assert isinstance(request, BrokerHeartbeatRequest) and request.want_shut_down
    failed = lc.on_heartbeat_response(process, BrokerHeartbeatResponse(error=Errors.NOT_CONTROLLER), 2013)
    assert failed.next_send_at == 2013 + 2000 and not failed.retrigger
