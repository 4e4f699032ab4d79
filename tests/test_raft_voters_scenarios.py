"""Kafka's ``VoterSetTest``, ``VoterSetHistoryTest`` and the precondition cases of ``KafkaRaftClientReconfigTest``
(dynamic voters, rules §3.14 and §3.15) transcribed by test name against the reference; each a plain function so the
mutant tests can re-run them.

Transcribed from ``raft/src/test/java/org/apache/kafka/raft/VoterSetTest.java``,
``raft/src/test/java/org/apache/kafka/raft/internals/VoterSetHistoryTest.java`` and
``raft/src/test/java/org/apache/kafka/raft/KafkaRaftClientReconfigTest.java`` (confluentinc/kafka branch 4.3).
``Uuid.randomUuid()`` becomes a fixed directory id per (replica, generation), so no test draws randomness. A reconfig
test's ``RaftClientTestContext`` becomes the ``ReconfigLeader`` it leaves the handler with: a bootstrap snapshot puts
the voters at offset -1 (``withBootstrapSnapshot``), ``withStaticVoters`` leaves kraft.version 0, and "establish a HWM
and fence previous leaders" is a known high watermark past the bootstrap; only the handler's answer is compared
(the Java tests drive the whole client; the wire and timing around it are the Raft reference's, §3.6).
Left out: the IllegalArgumentException of ``VoterSet.voterNodes`` (``testVoterNodes``), the nodes a resigned leader
sends EndQuorumEpoch to (``pollResigned``), which the reference addresses by id; the test is read over ``voter_node``.

Reference functions are called through their modules, never imported by name, so an applied mutant is what runs.
"""

from __future__ import annotations

import base64
from typing import Optional

import pytest

import kraftspec.reference.raft_reconfig as rc
import kraftspec.reference.raft_voter_history as vh
import kraftspec.reference.raft_voters as rv
from kraftspec.reference import raft_rules
from kraftspec.reference.errors import Errors
from kraftspec.reference.frozen import FrozenMap
from kraftspec.reference.raft_state import ReplicaKey
from kraftspec.reference.raft_voters import KRaftVersionRecord, VoterNode, VoterSet, VotersRecord

LISTENER = "LISTENER"
KRAFT_VERSION_RANGE = (0, 1)
"""``Feature.KRAFT_VERSION.supportedVersionRange()`` in 4.3."""


def directory(replica_id: int, generation: int = 0) -> str:
    """A fixed stand-in for ``Uuid.randomUuid()``: distinct for each (replica, generation)."""
    raw = bytes([0x40 + generation % 64, replica_id % 256]) * 8
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def replica_key(replica_id: int, with_directory: bool, generation: int = 0) -> ReplicaKey:
    return rv.replica_key(replica_id, directory(replica_id, generation) if with_directory else None)


def endpoints(replica_id: int, listener: str = LISTENER, base: int = 9990) -> FrozenMap[str, tuple[str, int]]:
    return FrozenMap({listener: ("localhost", base + replica_id)})


def voter_node_of(key: ReplicaKey) -> VoterNode:
    """``VoterSetTest.voterNode(ReplicaKey)``: a key without directory id supports kraft.version 0 only."""
    supported = (0, 0) if key.directory_id is None else KRAFT_VERSION_RANGE
    return VoterNode(voter_key=key, listeners=endpoints(key.id), supported_kraft_version=supported)


def voter_node(replica_id: int, with_directory: bool, generation: int = 0) -> VoterNode:
    return voter_node_of(replica_key(replica_id, with_directory, generation))


def voter_map(ids: tuple[int, ...], with_directory: bool) -> dict[int, VoterNode]:
    return {i: voter_node(i, with_directory) for i in ids}


def voter_set(nodes: dict[int, VoterNode]) -> VoterSet:
    """``VoterSet.fromMap``."""
    return VoterSet(voters=FrozenMap(nodes))


def some(value: Optional[VoterSet]) -> VoterSet:
    """``Optional.get()``."""
    assert value is not None
    return value


# --- VoterSetTest -------------------------------------------------------------------------------------------------

def test_empty_voter_set() -> None:
    assert rv.EMPTY_VOTER_SET == voter_set({})


def test_voter_node() -> None:
    voters = voter_set(voter_map((1, 2, 3), True))
    assert rv.voter_node(voters, 1, LISTENER) == (1, "localhost", 9991)
    assert rv.voter_node(voters, 1, "MISSING") is None
    assert rv.voter_node(voters, 4, LISTENER) is None


def test_voter_nodes() -> None:
    """``voterNodes`` maps ``voterNode`` over the ids and throws when one is missing; the reference has ``voter_node``
    alone, whose None is what makes ``voterNodes`` throw."""
    voters = voter_set(voter_map((1, 2, 3), True))
    assert {rv.voter_node(voters, i, LISTENER) for i in (1, 2)} == {(1, "localhost", 9991), (2, "localhost", 9992)}
    assert None in {rv.voter_node(voters, i, "MISSING") for i in (1, 2)}
    assert None in {rv.voter_node(voters, i, LISTENER) for i in (1, 4)}


def test_voter_ids() -> None:
    assert rv.voter_ids(voter_set(voter_map((1, 2, 3), True))) == {1, 2, 3}


def test_add_voter() -> None:
    a_voter_map = voter_map((1, 2, 3), True)
    voters = voter_set(a_voter_map)
    assert rv.add_voter(voters, voter_node(1, True, generation=1)) is None
    voter4 = voter_node(4, True)
    assert rv.add_voter(voters, voter4) == voter_set({**a_voter_map, 4: voter4})


def test_remove_voter() -> None:
    a_voter_map = voter_map((1, 2, 3), True)
    voters = voter_set(a_voter_map)
    assert rv.remove_voter(voters, rv.replica_key(4, None)) is None
    assert rv.remove_voter(voters, replica_key(4, True)) is None
    voter3 = a_voter_map.pop(3)
    assert rv.remove_voter(voters, voter3.voter_key) == voter_set(a_voter_map)


def test_update_voter() -> None:
    a_voter_map = voter_map((1, 2, 3), True)
    voters = voter_set(a_voter_map)
    assert rv.update_voter(voters, voter_node(4, True)) is None
    assert not rv.voter_node_needs_update(voters, voter_node(4, True))
    assert rv.update_voter(voters, voter_node(3, True, generation=1)) is None
    assert not rv.voter_node_needs_update(voters, voter_node(3, True, generation=1))
    new_voter3 = VoterNode(voter_key=a_voter_map[3].voter_key, listeners=FrozenMap({"ABC": ("abc", 1234)}),
                           supported_kraft_version=(1, 1))
    assert rv.voter_node_needs_update(voters, new_voter3)
    assert rv.update_voter(voters, new_voter3) == voter_set({**a_voter_map, 3: new_voter3})


def test_update_voter_ignoring_directory_id() -> None:
    a_voter_map = voter_map((1, 2, 3), False)
    voters = voter_set(a_voter_map)
    assert rv.update_voter_ignoring_directory_id(voters, voter_node(4, True)) is None
    new_voter3 = voter_node(3, True)
    assert a_voter_map[3].voter_key != new_voter3.voter_key
    a_voter_map[3] = new_voter3
    assert rv.update_voter_ignoring_directory_id(voters, new_voter3) == voter_set(a_voter_map)
    newer_voter3 = voter_node(3, True, generation=1)
    assert a_voter_map[3].voter_key != newer_voter3.voter_key
    a_voter_map[3] = newer_voter3
    assert rv.update_voter_ignoring_directory_id(voters, newer_voter3) == voter_set(a_voter_map)


def test_cannot_remove_to_empty_voter_set() -> None:
    a_voter_map = voter_map((1,), True)
    voters = voter_set(a_voter_map)
    voter1 = a_voter_map[1].voter_key
    assert rv.is_voter(voters, voter1)
    assert rv.remove_voter(voters, voter1) is None


def test_is_voter_with_directory_id() -> None:
    a_voter_map = voter_map((1, 2, 3), True)
    voters = voter_set(a_voter_map)
    dir1 = a_voter_map[1].voter_key.directory_id
    assert rv.is_voter(voters, a_voter_map[1].voter_key)
    assert not rv.is_voter(voters, replica_key(1, True, generation=1))
    assert not rv.is_voter(voters, rv.replica_key(1, None))
    assert not rv.is_voter(voters, rv.replica_key(2, dir1))
    assert not rv.is_voter(voters, rv.replica_key(4, dir1))
    assert not rv.is_voter(voters, rv.replica_key(4, None))


def test_is_voter_without_directory_id() -> None:
    voters = voter_set(voter_map((1, 2, 3), False))
    assert rv.is_voter(voters, rv.replica_key(1, None))
    assert rv.is_voter(voters, replica_key(1, True))
    assert not rv.is_voter(voters, replica_key(4, True))
    assert not rv.is_voter(voters, rv.replica_key(4, None))


def test_voter_node_is_voter_with_directory_id() -> None:
    node = voter_node(1, True)
    assert rv.voter_node_is_voter(node, node.voter_key)
    assert not rv.voter_node_is_voter(node, replica_key(1, True, generation=1))
    assert not rv.voter_node_is_voter(node, rv.replica_key(1, None))
    assert not rv.voter_node_is_voter(node, replica_key(2, True))
    assert not rv.voter_node_is_voter(node, rv.replica_key(2, None))
    assert not rv.voter_node_is_voter(node, rv.replica_key(2, node.voter_key.directory_id))


def test_voter_node_is_voter_without_directory_id() -> None:
    node = voter_node(1, False)
    assert rv.voter_node_is_voter(node, node.voter_key)
    assert rv.voter_node_is_voter(node, replica_key(1, True))
    assert rv.voter_node_is_voter(node, rv.replica_key(1, None))
    assert rv.voter_node_is_voter(node, replica_key(1, True, generation=1))
    assert not rv.voter_node_is_voter(node, replica_key(2, True))
    assert not rv.voter_node_is_voter(node, rv.replica_key(2, None))


@pytest.mark.parametrize("with_directory_id", [True, False])
def test_endpoints(with_directory_id: bool) -> None:
    voters = voter_set(voter_map((1, 2, 3), with_directory_id))
    assert all(rv.listeners(voters, i) != FrozenMap() for i in (1, 2, 3))
    assert rv.listeners(voters, 4) == FrozenMap()


def test_is_only_voter_in_standalone() -> None:
    a_voter_map = voter_map((1,), True)
    voters = voter_set(a_voter_map)
    dir1 = a_voter_map[1].voter_key.directory_id
    assert rv.is_only_voter(voters, a_voter_map[1].voter_key)
    assert not rv.is_only_voter(voters, replica_key(1, True, generation=1))
    assert not rv.is_only_voter(voters, rv.replica_key(1, None))
    assert not rv.is_only_voter(voters, rv.replica_key(4, dir1))
    assert not rv.is_only_voter(voters, rv.replica_key(4, None))


def test_is_only_voter_in_not_standalone() -> None:
    a_voter_map = voter_map((1, 2), True)
    voters = voter_set(a_voter_map)
    dir1 = a_voter_map[1].voter_key.directory_id
    assert not rv.is_only_voter(voters, a_voter_map[1].voter_key)
    assert not rv.is_only_voter(voters, replica_key(1, True, generation=1))
    assert not rv.is_only_voter(voters, rv.replica_key(1, None))
    assert not rv.is_only_voter(voters, rv.replica_key(2, dir1))
    assert not rv.is_only_voter(voters, rv.replica_key(4, dir1))
    assert not rv.is_only_voter(voters, rv.replica_key(4, None))


def test_record_round_trip() -> None:
    voters = voter_set(voter_map((1, 2, 3), True))
    assert rv.from_voters_record(rv.to_voters_record(voters, 0)) == voters


def assert_majorities(overlap: bool, a: VoterSet, b: VoterSet) -> None:
    assert rv.has_overlapping_majority(a, b) == overlap, (a, b)
    assert rv.has_overlapping_majority(b, a) == overlap, (b, a)


def test_overlapping_majority() -> None:
    starting_map = voter_map((1, 2, 3), True)
    starting = voter_set(starting_map)
    bigger = some(rv.add_voter(starting, voter_node(4, True)))
    assert_majorities(True, starting, bigger)
    smaller = some(rv.remove_voter(starting, starting_map[1].voter_key))
    assert_majorities(True, starting, smaller)
    replaced = some(rv.add_voter(some(rv.remove_voter(starting, starting_map[1].voter_key)),
                                 voter_node(1, True, generation=1)))
    assert_majorities(True, starting, replaced)


def test_non_overlapping_majority() -> None:
    starting_map = voter_map((1, 2, 3, 4, 5), True)
    starting = voter_set(starting_map)
    bigger = some(rv.add_voter(some(rv.add_voter(starting, voter_node(6, True))), voter_node(7, True)))
    assert_majorities(False, starting, bigger)
    smaller = some(rv.remove_voter(some(rv.remove_voter(starting, starting_map[1].voter_key)),
                                   starting_map[2].voter_key))
    assert_majorities(False, starting, smaller)
    replaced = starting
    for i in (1, 2):
        replaced = some(rv.add_voter(some(rv.remove_voter(replaced, starting_map[i].voter_key)),
                                     voter_node(i, True, generation=1)))
    assert_majorities(False, starting, replaced)


def test_supports_version() -> None:
    voters = voter_set(voter_map((1, 2, 3), False))
    assert rv.supports_version(voters, rv.KRAFT_VERSION_0)
    assert not rv.supports_version(voters, rv.KRAFT_VERSION_1)
    voters = voter_set(voter_map((1, 2, 3), True))
    assert rv.supports_version(voters, rv.KRAFT_VERSION_0)
    assert rv.supports_version(voters, rv.KRAFT_VERSION_1)


# --- VoterSetHistoryTest --------------------------------------------------------------------------------------------

def history_of(static: VoterSet) -> vh.ControlRecordState:
    """``new VoterSetHistory(staticVoterSet)``: the voter history of a control-record state."""
    return vh.ControlRecordState(static_voter_set=static)


def add_at(state: vh.ControlRecordState, offset: int, voters: VoterSet) -> vh.ControlRecordState:
    return vh.handle_control_record(state, offset, rv.to_voters_record(voters))


def value_at_or_before(state: vh.ControlRecordState, offset: int) -> Optional[VoterSet]:
    return vh.value_at_or_before(state.voter_set_history, offset)


def test_static_voter_set() -> None:
    static = voter_set(voter_map((1, 2, 3), True))
    history = history_of(static)
    for step in (lambda s: s, lambda s: vh.truncate_control_records(s, 100), lambda s: vh.trim_control_records(s, 100)):
        history = step(history)
        assert value_at_or_before(history, 0) is None and value_at_or_before(history, 100) is None
        assert vh.last_voter_set(history) == static


def test_no_static_voter_set() -> None:
    history = history_of(rv.EMPTY_VOTER_SET)
    assert value_at_or_before(history, 0) is None and value_at_or_before(history, 100) is None
    assert vh.last_voter_set(history) == rv.EMPTY_VOTER_SET


def test_add_at() -> None:
    a_voter_map = voter_map((1, 2, 3), True)
    static = voter_set(a_voter_map)
    history = history_of(static)
    with pytest.raises(ValueError):
        add_at(history, -2, voter_set(voter_map((1, 2, 3), True)))
    assert vh.last_voter_set(history) == static
    added = voter_set({**a_voter_map, 4: voter_node(4, True)})
    history = add_at(history, 100, added)
    assert vh.last_voter_set(history) == added
    assert value_at_or_before(history, 99) is None and value_at_or_before(history, 100) == added
    history = add_at(history, 200, static)
    assert vh.last_voter_set(history) == static
    assert value_at_or_before(history, 99) is None
    assert value_at_or_before(history, 199) == added and value_at_or_before(history, 200) == static


def test_bootstrap_add_at() -> None:
    a_voter_map = voter_map((1, 2, 3), True)
    bootstrap = voter_set(a_voter_map)
    history = add_at(history_of(rv.EMPTY_VOTER_SET), -1, bootstrap)
    assert vh.last_voter_set(history) == bootstrap
    assert value_at_or_before(history, -2) is None and value_at_or_before(history, -1) == bootstrap
    added = voter_set({**a_voter_map, 4: voter_node(4, True)})
    history = add_at(history, 100, added)
    assert vh.last_voter_set(history) == added
    assert value_at_or_before(history, 99) == bootstrap and value_at_or_before(history, 100) == added
    history = add_at(history, 200, bootstrap)
    assert value_at_or_before(history, -2) is None and value_at_or_before(history, 99) == bootstrap
    assert value_at_or_before(history, 199) == added and value_at_or_before(history, 200) == bootstrap


def test_add_at_non_overlapping() -> None:
    a_voter_map = voter_map((1, 2, 3), True)
    voters = voter_set(a_voter_map)
    history = add_at(history_of(rv.EMPTY_VOTER_SET), 100, voters)
    removed = some(rv.remove_voter(some(rv.remove_voter(voters, a_voter_map[1].voter_key)), a_voter_map[2].voter_key))
    history = add_at(history, 200, removed)
    assert vh.last_voter_set(history) == removed
    added = some(rv.add_voter(some(rv.add_voter(removed, voter_node(1, True, 1))), voter_node(2, True, 1)))
    history = add_at(history, 300, added)
    assert vh.last_voter_set(history) == added


def test_nonoverlapping_from_static_voter_set() -> None:
    a_voter_map = voter_map((1, 2, 3), True)
    static = voter_set(a_voter_map)
    removed = some(rv.remove_voter(some(rv.remove_voter(static, a_voter_map[1].voter_key)), a_voter_map[2].voter_key))
    history = add_at(history_of(rv.EMPTY_VOTER_SET), 100, removed)
    assert vh.last_voter_set(history) == removed


def _history_1234_12345() -> tuple[vh.ControlRecordState, VoterSet, VoterSet, VoterSet]:
    a_voter_map = voter_map((1, 2, 3), True)
    static = voter_set(a_voter_map)
    set1234 = voter_set({**a_voter_map, 4: voter_node(4, True)})
    set12345 = voter_set({**a_voter_map, 4: voter_node(4, True), 5: voter_node(5, True)})
    return add_at(add_at(history_of(static), 100, set1234), 200, set12345), static, set1234, set12345


def test_truncate_to() -> None:
    history, static, set1234, set12345 = _history_1234_12345()
    for end, expected in ((201, set12345), (200, set1234), (101, set1234), (100, static)):
        history = vh.truncate_control_records(history, end)
        assert vh.last_voter_set(history) == expected, end


def test_trim_prefix_to() -> None:
    history, _, set1234, set12345 = _history_1234_12345()
    for start in (99, 100, 101):
        history = vh.trim_control_records(history, start)
        assert value_at_or_before(history, 99) is None and value_at_or_before(history, 100) == set1234, start
    history = vh.trim_control_records(history, 200)
    assert value_at_or_before(history, 199) is None and value_at_or_before(history, 200) == set12345


def test_clear() -> None:
    history, static, _, _ = _history_1234_12345()
    assert vh.last_voter_set(vh.load_snapshot(history, 300, ())) == static


# --- KafkaRaftClientReconfigTest: the leader's checks ------------------------------------------------------------------

LOCAL = 5


def bootstrapped(*ids: int, kraft_version: int = 1) -> vh.ControlRecordState:
    """``withBootstrapSnapshot(voters)``: KRaftVersionRecord and VotersRecord at offset -1, then the log read."""
    records = (KRaftVersionRecord(kraft_version=kraft_version), VotersRecord(voters=tuple(
        voter_node(i, True) for i in ids)))
    return vh.load_snapshot(vh.ControlRecordState(), -1, records)


def leader_of(control: vh.ControlRecordState, *, high_watermark: Optional[int] = 1, pending: bool = False,
              volatile: Optional[VoterSet] = None) -> rc.ReconfigLeader:
    """The leader after ``unattachedToLeader`` (its LeaderChange at offset 0) and, with a high watermark, after a
    follower's fetch has committed the epoch start ("establish a HWM and fence previous leaders")."""
    return rc.ReconfigLeader(epoch=3, control=control, high_watermark=high_watermark, operation_pending=pending,
                             volatile_voters=volatile, default_listener=LISTENER)


def new_voter_request(leader: rc.ReconfigLeader, key: ReplicaKey, listeners: FrozenMap[str, tuple[str, int]],
                      supported: Optional[tuple[int, int]] = KRAFT_VERSION_RANGE,
                      caught_up: bool = True) -> rc.VoterChange:
    """AddRaftVoter through the ApiVersions round trip the leader makes when the checks pass."""
    refusal = rc.handle_add_voter_request(leader, key, listeners)
    if refusal is not None:
        return rc.VoterChange(response=refusal)
    return rc.handle_add_voter_api_versions(leader, key, listeners, Errors.NONE, supported, caught_up)


def error_of(change: rc.VoterChange) -> Errors:
    assert change.response is not None, change
    return change.response.error


def start_of_epoch(control: vh.ControlRecordState, local: VoterNode) -> tuple[object, ...]:
    """The records after the LeaderChange record in ``unattachedToLeader``'s first batch."""
    entry = vh.last_voter_set_entry(control)
    return rc.start_of_epoch_control_records(vh.last_voter_set(control), None if entry is None else entry[0],
                                            vh.last_kraft_version(control), local)


def test_leader_writes_bootstrap_records() -> None:
    control = bootstrapped(LOCAL, LOCAL + 1)
    records = start_of_epoch(control, voter_node(LOCAL, True))
    assert records == (KRaftVersionRecord(kraft_version=1), rv.to_voters_record(vh.last_voter_set(control)))
    # read back at offsets 1 and 2 (the LeaderChange record is at 0): the voter set is in the log from then on
    control = vh.read_batch(control, 0, 2, ("LeaderChange",) + records)
    assert vh.last_voter_set_entry(control) == (2, vh.last_voter_set(control))
    assert start_of_epoch(control, voter_node(LOCAL, True)) == ()  # the next epoch: nothing to write again


def test_leader_does_not_bootstrap_records_with_kraft_version0() -> None:
    control = vh.ControlRecordState(static_voter_set=voter_set(voter_map((LOCAL, LOCAL + 1), False)))
    assert start_of_epoch(control, voter_node(LOCAL, True)) == ()


def test_leader_rewrites_voters_when_its_endpoints_changed() -> None:
    control = vh.read_batch(bootstrapped(LOCAL, LOCAL + 1), 0, 2, ("LeaderChange",) + start_of_epoch(
        bootstrapped(LOCAL, LOCAL + 1), voter_node(LOCAL, True)))
    moved = VoterNode(voter_key=replica_key(LOCAL, True), listeners=endpoints(LOCAL, base=8990),
                      supported_kraft_version=KRAFT_VERSION_RANGE)
    records = start_of_epoch(control, moved)
    assert len(records) == 2 and rv.from_voters_record(records[1]).voters[LOCAL] == moved


def test_add_voter() -> None:
    leader = leader_of(bootstrapped(LOCAL, LOCAL + 1))
    new_voter = replica_key(LOCAL + 2, True)
    change = new_voter_request(leader, new_voter, endpoints(new_voter.id))
    assert change.response is None and change.append is not None
    assert rv.voter_ids(change.append) == {LOCAL, LOCAL + 1, LOCAL + 2}
    control = vh.read_batch(leader.control, 1, 1, (rv.to_voters_record(change.append),))
    assert not rc.voter_change_committed(1, 1) and rc.voter_change_committed(2, 1)
    assert vh.last_voter_set(control) == change.append


def test_add_voter_with_missing_default_listener() -> None:
    leader = leader_of(bootstrapped(LOCAL, LOCAL + 1))
    new_voter = replica_key(LOCAL + 2, True)
    response = rc.handle_add_voter_request(leader, new_voter, endpoints(new_voter.id, listener="not_the_default"))
    assert response is not None and response.error == Errors.INVALID_REQUEST
    assert response.message is not None and "for the default listener ListenerName(LISTENER)" in response.message


def test_add_voter_with_pending_add_voter() -> None:
    leader = leader_of(bootstrapped(LOCAL, LOCAL + 1), pending=True)
    new_voter = replica_key(LOCAL + 3, True)
    assert error_of(new_voter_request(leader, new_voter, endpoints(new_voter.id))) == Errors.REQUEST_TIMED_OUT


def test_add_voter_without_fenced_previous_leaders() -> None:
    leader = leader_of(bootstrapped(LOCAL, LOCAL + 1), high_watermark=None)
    new_voter = replica_key(LOCAL + 2, True)
    change = new_voter_request(leader, new_voter, endpoints(new_voter.id))
    assert change.response == rc.ReconfigResponse(error=Errors.REQUEST_TIMED_OUT, message="Request timed out "
                                                  "waiting for leader to establish HWM and fence previous voter changes")


def test_add_voter_with_kraft_version0() -> None:
    leader = leader_of(vh.ControlRecordState(static_voter_set=voter_set(voter_map((LOCAL, LOCAL + 1), True)),
                                             next_offset=1), high_watermark=1)
    new_voter = replica_key(LOCAL + 2, True)
    change = new_voter_request(leader, new_voter, endpoints(new_voter.id))
    assert change.response == rc.ReconfigResponse(error=Errors.UNSUPPORTED_VERSION, message="Cluster doesn't "
                                                  "support adding voter because the kraft.version feature is 0")


def test_add_voter_with_existing_voter() -> None:
    leader = leader_of(bootstrapped(LOCAL, LOCAL + 1))
    new_voter = replica_key(LOCAL + 1, True, generation=1)
    assert error_of(new_voter_request(leader, new_voter, endpoints(new_voter.id))) == Errors.DUPLICATE_VOTER


def test_add_voter_invalid_feature_version() -> None:
    leader = leader_of(bootstrapped(LOCAL, LOCAL + 1))
    new_voter = replica_key(LOCAL + 2, True)
    change = new_voter_request(leader, new_voter, endpoints(new_voter.id), supported=(0, 0))
    assert error_of(change) == Errors.INVALID_REQUEST and change.append is None


def test_add_voter_with_lagging_new_voter() -> None:
    leader = leader_of(bootstrapped(LOCAL, LOCAL + 1))
    new_voter = replica_key(LOCAL + 2, True)
    assert not rc.is_replica_caught_up(-1, 1_000, 2_000)
    change = new_voter_request(leader, new_voter, endpoints(new_voter.id), caught_up=False)
    assert error_of(change) == Errors.REQUEST_TIMED_OUT and change.append is None


def test_add_voter_with_missing_directory_id() -> None:
    leader = leader_of(bootstrapped(LOCAL, LOCAL + 1))
    new_voter = replica_key(LOCAL + 2, False)
    change = new_voter_request(leader, new_voter, endpoints(new_voter.id))
    assert change.response == rc.ReconfigResponse(error=Errors.INVALID_REQUEST,
                                                  message="Add voter request didn't include a valid voter")


def test_remove_voter() -> None:
    leader = leader_of(bootstrapped(LOCAL, LOCAL + 1, LOCAL + 2))
    change = rc.handle_remove_voter_request(leader, replica_key(LOCAL + 2, True))
    assert change.response is None and change.append is not None
    assert rv.voter_ids(change.append) == {LOCAL, LOCAL + 1}
    assert not rc.leader_resigns_after_removal(change.append, replica_key(LOCAL, True))


def test_remove_voter_is_leader() -> None:
    leader = leader_of(bootstrapped(LOCAL, LOCAL + 1, LOCAL + 2))
    local = replica_key(LOCAL, True)
    change = rc.handle_remove_voter_request(leader, local)
    assert change.append is not None and rc.leader_resigns_after_removal(change.append, local)


def test_remove_voter_with_pending_remove_voter() -> None:
    leader = leader_of(bootstrapped(LOCAL, LOCAL + 1, LOCAL + 2), pending=True)
    assert error_of(rc.handle_remove_voter_request(leader, replica_key(LOCAL + 1, True))) == Errors.REQUEST_TIMED_OUT


def test_remove_voter_without_fenced_previous_leaders() -> None:
    leader = leader_of(bootstrapped(LOCAL, LOCAL + 1, LOCAL + 2), high_watermark=None)
    assert error_of(rc.handle_remove_voter_request(leader, replica_key(LOCAL + 2, True))) == Errors.REQUEST_TIMED_OUT


def test_remove_voter_with_kraft_version0() -> None:
    static = voter_set(voter_map((LOCAL, LOCAL + 1, LOCAL + 2), True))
    leader = leader_of(vh.ControlRecordState(static_voter_set=static, next_offset=1))
    change = rc.handle_remove_voter_request(leader, replica_key(LOCAL + 2, True))
    assert change.response == rc.ReconfigResponse(error=Errors.UNSUPPORTED_VERSION, message="Cluster doesn't "
                                                  "support removing voter because the kraft.version feature is 0")


def test_remove_voter_with_none_voter() -> None:
    leader = leader_of(bootstrapped(LOCAL, LOCAL + 1, LOCAL + 2))
    change = rc.handle_remove_voter_request(leader, replica_key(LOCAL + 2, True, generation=1))
    assert error_of(change) == Errors.VOTER_NOT_FOUND and change.append is None


def test_remove_voter_with_none_voter_id() -> None:
    leader = leader_of(bootstrapped(LOCAL, LOCAL + 1, LOCAL + 2))
    change = rc.handle_remove_voter_request(leader, rv.replica_key(LOCAL + 3, directory(LOCAL + 2)))
    assert error_of(change) == Errors.VOTER_NOT_FOUND


def test_remove_voter_to_empty_voter_set() -> None:
    leader = leader_of(bootstrapped(LOCAL), high_watermark=1)
    assert error_of(rc.handle_remove_voter_request(leader, replica_key(LOCAL, True))) == Errors.VOTER_NOT_FOUND


def test_add_voter_with_pending_remove_voter() -> None:
    leader = leader_of(bootstrapped(LOCAL, LOCAL + 1, LOCAL + 2))
    change = rc.handle_remove_voter_request(leader, replica_key(LOCAL + 2, True))
    assert change.append is not None
    # The VotersRecord is at offset 1 and the high watermark has not passed it: the remove is pending.
    control = vh.read_batch(leader.control, 1, 1, (rv.to_voters_record(change.append),))
    pending = leader_of(control, high_watermark=1, pending=True)
    new_voter = replica_key(LOCAL + 3, True)
    assert error_of(new_voter_request(pending, new_voter, endpoints(new_voter.id))) == Errors.REQUEST_TIMED_OUT


def test_remove_voter_with_pending_add_voter() -> None:
    leader = leader_of(bootstrapped(LOCAL, LOCAL + 1))
    new_voter = replica_key(LOCAL + 2, True)
    change = new_voter_request(leader, new_voter, endpoints(new_voter.id))
    assert change.append is not None
    control = vh.read_batch(leader.control, 1, 1, (rv.to_voters_record(change.append),))
    pending = leader_of(control, high_watermark=1, pending=True)
    assert error_of(rc.handle_remove_voter_request(pending, replica_key(LOCAL + 1, True))) == Errors.REQUEST_TIMED_OUT


def test_a_voter_change_waits_for_the_previous_voters_record_to_commit() -> None:
    """AddVoterHandler step 3 ("no uncommitted VotersRecord") on its own: an appended VotersRecord at or above the high
    watermark refuses the next change even once no operation is pending (e.g. after a new leader's election)."""
    leader = leader_of(bootstrapped(LOCAL, LOCAL + 1))
    change = new_voter_request(leader, replica_key(LOCAL + 2, True), endpoints(LOCAL + 2))
    assert change.append is not None
    control = vh.read_batch(leader.control, 1, 1, (rv.to_voters_record(change.append),))
    new_voter = replica_key(LOCAL + 3, True)
    refused = new_voter_request(leader_of(control, high_watermark=1), new_voter, endpoints(new_voter.id))
    assert refused.response == rc.ReconfigResponse(error=Errors.REQUEST_TIMED_OUT, message="Request timed out "
                                                   "waiting for voters to commit the latest voter change at "
                                                   "Optional[1] with HWM 1")
    assert new_voter_request(leader_of(control, high_watermark=2), new_voter, endpoints(new_voter.id)).append


def updated_listeners(replica_id: int) -> FrozenMap[str, tuple[str, int]]:
    return FrozenMap({LISTENER: ("localhost", 9990 + replica_id), "ANOTHER_LISTENER": ("localhost", 8990 + replica_id)})


def test_update_voter() -> None:
    leader = leader_of(bootstrapped(LOCAL, LOCAL + 1))
    follower = replica_key(LOCAL + 1, True)
    change = rc.handle_update_voter_request(leader, follower, updated_listeners(follower.id), KRAFT_VERSION_RANGE)
    assert error_of(change) == Errors.NONE and change.append is not None
    assert rv.listeners(change.append, follower.id) == updated_listeners(follower.id)


def test_invalid_update_voter() -> None:
    leader = leader_of(bootstrapped(LOCAL, LOCAL + 1))
    missing_directory = rv.replica_key(LOCAL + 1, rv.ZERO_UUID)
    assert error_of(rc.handle_update_voter_request(leader, missing_directory, FrozenMap(), KRAFT_VERSION_RANGE)) == \
        Errors.INVALID_REQUEST
    follower = replica_key(LOCAL + 1, True)
    assert error_of(rc.handle_update_voter_request(leader, follower, FrozenMap(), KRAFT_VERSION_RANGE)) == \
        Errors.INVALID_REQUEST


def test_update_voter_without_fenced_previous_leaders() -> None:
    leader = leader_of(bootstrapped(LOCAL, LOCAL + 1), high_watermark=None)
    follower = replica_key(LOCAL + 1, True)
    assert error_of(rc.handle_update_voter_request(leader, follower, updated_listeners(follower.id),
                                                   KRAFT_VERSION_RANGE)) == Errors.REQUEST_TIMED_OUT


def test_update_voter_with_kraft_version0() -> None:
    static = voter_set(voter_map((LOCAL, LOCAL + 1), True))
    local = voter_node(LOCAL, True)
    volatile = rc.volatile_voters_at_epoch_start(static, local, rv.KRAFT_VERSION_0)
    leader = leader_of(vh.ControlRecordState(static_voter_set=static, next_offset=1), volatile=volatile)
    follower = replica_key(LOCAL + 1, True)
    change = rc.handle_update_voter_request(leader, follower, updated_listeners(follower.id), KRAFT_VERSION_RANGE)
    assert error_of(change) == Errors.NONE and change.append is None and change.volatile_voters is not None
    assert rv.listeners(change.volatile_voters, follower.id) == updated_listeners(follower.id)


def test_update_voter_with_none_voter() -> None:
    leader = leader_of(bootstrapped(LOCAL, LOCAL + 1))
    other = replica_key(LOCAL + 1, True, generation=1)
    assert error_of(rc.handle_update_voter_request(leader, other, updated_listeners(other.id),
                                                   KRAFT_VERSION_RANGE)) == Errors.VOTER_NOT_FOUND


def test_update_voter_with_none_voter_id() -> None:
    leader = leader_of(bootstrapped(LOCAL, LOCAL + 1))
    other = rv.replica_key(LOCAL + 2, directory(LOCAL + 1))
    assert error_of(rc.handle_update_voter_request(leader, other, updated_listeners(other.id),
                                                   KRAFT_VERSION_RANGE)) == Errors.VOTER_NOT_FOUND


def test_update_voter_with_pending_add_voter() -> None:
    leader = leader_of(bootstrapped(LOCAL, LOCAL + 1), pending=True)
    follower = replica_key(LOCAL + 1, True)
    assert error_of(rc.handle_update_voter_request(leader, follower, updated_listeners(follower.id),
                                                   KRAFT_VERSION_RANGE)) == Errors.REQUEST_TIMED_OUT


def test_check_quorum_majority_when_the_leader_is_not_a_voter() -> None:
    """``LeaderState.updateCheckQuorumForFollowingVoter`` after ``testRemoveVoterIsLeader``'s leader removed itself:
    of 2 remaining voters both must fetch, where a voting leader of 3 needs 1 besides itself; and the high watermark
    is the offset a majority of the voters reached, the leader's own end offset not among them."""
    assert raft_rules.check_quorum_reached(3, 1, True) and not raft_rules.check_quorum_reached(2, 1, False)
    assert raft_rules.check_quorum_reached(2, 2, False)
    assert rv.majority_size(voter_set(voter_map((1, 2, 3, 4), True))) == 3
    assert raft_rules.high_watermark_candidate((10, 4)) == 4  # voters 6 and 7 of the removing leader 5 (at 10)
