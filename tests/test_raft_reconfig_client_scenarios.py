"""Kafka's ``KafkaRaftClientReconfigTest`` (4.3) at the client level: dynamic voters (KIP-853) driven through
``raft.step``, each test named after Kafka's.

A node is built as ``RaftClientTestContext.Builder.withBootstrapSnapshot`` builds it: a kraft.version 1 node whose
log holds the bootstrap checkpoint ``0-0`` with a KRaftVersionRecord and the initial VotersRecord. Kafka's random
replica id is fixed (local 1, follower 2, new voter 3) and its ``MockTime`` starts here at 1000 ms (a caught-up
time must be positive). Timeouts follow ``RaftClientTestContext`` as in tests/test_raft_scenarios.py; jitter 0.
Left out: the metric objects of ``testLeaderMetricsAreReset`` (their registration and removal; the reference has no
metrics), whose values are checked as the leader state they are read from.
"""

from __future__ import annotations

import base64
from typing import Any, Optional

import pytest

from kraftspec.reference import raft, raft_log, raft_node, raft_reconfig_client, raft_voter_history, raft_voters
from kraftspec.reference.errors import Errors
from kraftspec.reference.frozen import FrozenMap, evolve
from kraftspec.reference.raft_log import RaftLog, Snapshot
from kraftspec.reference.raft_messages import (
    NO_SNAPSHOT_ID,
    AddRaftVoterRequest,
    ApiVersionsRequest,
    ApiVersionsResponse,
    Append,
    BeginQuorumEpochRequest,
    DescribeQuorumRequest,
    DescribeQuorumResponse,
    EndQuorumEpochRequest,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    IllegalUpgradeArgumentError,
    InvalidUpdateVersionError,
    NotLeaderError,
    QuorumEpochResponse,
    RemoveRaftVoterRequest,
    Resign,
    Send,
    Tick,
    UpdateRaftVoterRequest,
    UpdateRaftVoterResponse,
    UpgradeKRaftVersion,
    UpgradeStateError,
    VoteRequest,
    VoteResponse,
    VoterChangeResponse,
)
from kraftspec.reference.raft_node import ADD_VOTER, REMOVE_VOTER
from kraftspec.reference.raft_quorum_file import read_quorum_state
from kraftspec.reference.raft_records import LeaderChangeMessage
from kraftspec.reference.raft_state import Candidate, ElectionState, Follower, Leader, QuorumConfig, Resigned, \
    Unattached
from kraftspec.reference.raft_voters import KRaftVersionRecord, VoterNode, VoterSet, VotersRecord, to_voters_record

CONFIG = QuorumConfig(election_timeout_ms=10_000, fetch_timeout_ms=50_000, election_backoff_max_ms=100,
                      request_timeout_ms=5_000)
LISTENER = "CONTROLLER"
LOCAL, FOLLOWER, NEW_VOTER = 1, 2, 3
ADMIN = -1
START = 1_000
CLUSTER = "cluster-id-AAAAAAAAAA"


def directory(replica_id: int, generation: int = 0) -> str:
    """A fixed stand-in for ``Uuid.randomUuid()``: distinct for each (replica, generation)."""
    raw = bytes([0x40 + generation % 64, replica_id % 256]) * 8
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def key(replica_id: int) -> raft.ReplicaKey:
    """The replica's key with its first directory id."""
    return raft.ReplicaKey(id=replica_id, directory_id=directory(replica_id))


def listeners(replica_id: int, port_base: int = 9990) -> FrozenMap[str, tuple[str, int]]:
    return FrozenMap({LISTENER: ("localhost", port_base + replica_id)})


def endpoint_strings(replica_id: int, port_base: int = 9990) -> tuple[str, ...]:
    return (f"{LISTENER}://localhost:{port_base + replica_id}",)


def voter_node(replica_id: int) -> VoterNode:
    return VoterNode(voter_key=raft.ReplicaKey(id=replica_id, directory_id=directory(replica_id)),
                     listeners=listeners(replica_id), supported_kraft_version=(0, 1))


def voter_set(*ids: int) -> VoterSet:
    """``VoterSetTest.voterSet``."""
    return VoterSet(voters=FrozenMap({i: voter_node(i) for i in ids}))


def dynamic_node(local: int, voters: VoterSet, stored: Optional[ElectionState] = None, now: int = START,
                 log: Optional[RaftLog] = None) -> raft.RaftNode:
    """``withBootstrapSnapshot(voters)``: the checkpoint 0-0 holds kraft.version 1 and ``voters``."""
    log = log if log is not None else RaftLog(snapshots=(Snapshot(end_offset=0, epoch=0, size=100),))
    records = FrozenMap({(0, 0): (KRaftVersionRecord(kraft_version=1), to_voters_record(voters))})
    return raft.new_dynamic_node(local, directory(local), listeners(local), CONFIG, log, records, stored, now,
                                 cluster_id=CLUSTER)


def sends(outputs: tuple[Send, ...], kind: type) -> list[Send]:
    return [s for s in outputs if isinstance(s.message, kind)]


def only(outputs: tuple[Send, ...], kind: type) -> Any:
    found = sends(outputs, kind)
    assert len(found) == 1, outputs
    return found[0].message


def elect(node: raft.RaftNode, now: int) -> tuple[raft.RaftNode, int]:
    """``unattachedToLeader``: the election timer fires and every voter grants the (pre-)votes asked (the only voter
    is Leader from ``initialize`` on; Kafka's first poll writes its LeaderChange before it handles a request)."""
    if isinstance(node.state, Leader):
        return (raft.step(node, Tick(), now)[0] if node.state.unwritten else node), now
    now = max(now, node.state.election_deadline)
    node, out = raft.step(node, Tick(), now)
    for _ in range(6):
        if isinstance(node.state, Leader):
            return node, now
        pending = list(out)
        node, out = raft.step(node, Tick(), now)
        pending += out
        out = ()
        for send in sends(tuple(pending), VoteRequest):
            req = send.message
            response = VoteResponse(source=send.destination, leader_epoch=req.replica_epoch, vote_granted=True,
                                    correlation_id=req.correlation_id)
            node, more = raft.step(node, response, now)
            out += more
    assert isinstance(node.state, Leader), node.state
    return node, now


def leader(*voter_ids: int, epoch: int = 3) -> tuple[raft.RaftNode, int]:
    """``withUnknownLeader(epoch)`` + ``unattachedToLeader``: LOCAL leads epoch + 1."""
    return elect(dynamic_node(LOCAL, voter_set(*voter_ids), ElectionState(epoch=epoch)), START)


def fetch(node: raft.RaftNode, replica: int, now: int, offset: Optional[int] = None) -> tuple[raft.RaftNode, Any]:
    """``context.fetchRequest(epoch, replica, offset (LEO by default), epoch, 0)`` answered at once."""
    epoch = node.state.epoch
    req = FetchRequest(replica_id=replica, current_leader_epoch=epoch,
                       fetch_offset=node.log.end_offset if offset is None else offset, last_fetched_epoch=epoch,
                       max_wait_ms=0, replica_directory_id=directory(replica), cluster_id=CLUSTER)
    node, out = raft.step(node, req, now)
    resp = only(out, FetchResponse)
    assert resp.partition_error == Errors.NONE and resp.leader_id == node.local_id
    return node, resp


def add_voter(voter: int = NEW_VOTER, ports: int = 9990, **fields: Any) -> AddRaftVoterRequest:
    """``context.addVoterRequest(Integer.MAX_VALUE, newVoter, newListeners)``."""
    values: dict[str, Any] = dict(voter_id=voter, voter_directory_id=directory(voter),
                                  listeners=endpoint_strings(voter, ports), cluster_id=CLUSTER, source=ADMIN,
                                  correlation_id=77)
    values.update(fields)
    return AddRaftVoterRequest(**values)


def remove_voter(voter: int, **fields: Any) -> RemoveRaftVoterRequest:
    """``context.removeVoterRequest(voter)``."""
    values: dict[str, Any] = dict(voter_id=voter, voter_directory_id=directory(voter), cluster_id=CLUSTER,
                                  source=ADMIN, correlation_id=78)
    values.update(fields)
    return RemoveRaftVoterRequest(**values)


def update_voter(voter: int, epoch: int, ports: int = 9990, **fields: Any) -> UpdateRaftVoterRequest:
    """``context.updateVoterRequest(voter, kraftVersions, listeners)`` in ``epoch``."""
    values: dict[str, Any] = dict(voter_id=voter, current_leader_epoch=epoch, voter_directory_id=directory(voter),
                                  listeners=endpoint_strings(voter, ports), cluster_id=CLUSTER, correlation_id=79)
    values.update(fields)
    return UpdateRaftVoterRequest(**values)


def voter_change_answer(out: tuple[Send, ...], api: str) -> VoterChangeResponse:
    resp = only(out, VoterChangeResponse)
    assert resp.api == api
    return resp


def prepared_for_add(*voter_ids: int) -> tuple[raft.RaftNode, int]:
    """``prepareLeaderToReceiveAddVoter``: the follower's fetch establishes the HWM, the new voter catches up as an
    observer."""
    node, now = leader(*voter_ids)
    assert NEW_VOTER not in node.voters
    node, _ = fetch(node, FOLLOWER, now)
    node, _ = fetch(node, NEW_VOTER, now)
    assert node.state.high_watermark == node.log.end_offset and key(NEW_VOTER) in node.state.observer_states
    return node, now


def asked_api_versions(node: raft.RaftNode, now: int, **fields: Any) -> tuple[raft.RaftNode, tuple[Send, ...]]:
    """Deliver the add; the leader sends API_VERSIONS to the new voter."""
    node, out = raft.step(node, add_voter(**fields), now)
    assert [s.destination for s in sends(out, ApiVersionsRequest)] == [NEW_VOTER]
    assert not sends(out, VoterChangeResponse)
    return node, out


def api_versions_answer(node: raft.RaftNode, now: int, source: int = NEW_VOTER, error: Errors = Errors.NONE,
                        supported: Optional[tuple[int, int]] = (0, 1)) -> tuple[raft.RaftNode, tuple[Send, ...]]:
    """``apiVersionsResponse(error)`` from ``source``, under the correlation id the leader gave its request."""
    cid, _ = node.inflight[source]
    return raft.step(node, ApiVersionsResponse(source=source, error=error, kraft_version_range=supported,
                                               correlation_id=cid), now)


def entries(node: raft.RaftNode) -> list[Any]:
    return [e.record for e in node.log.entries]


# --------------------------------------------------------------------------------------------------
# Bootstrap records


def test_leader_writes_bootstrap_records() -> None:
    node, _ = leader(LOCAL, FOLLOWER, epoch=0)
    assert node.log.latest_snapshot.id == raft_log.BOOTSTRAP_SNAPSHOT_ID
    assert entries(node) == [LeaderChangeMessage(leader_id=LOCAL, voters=(LOCAL, FOLLOWER),
                                                 granting_voters=(LOCAL, FOLLOWER)),
                             KRaftVersionRecord(kraft_version=1), to_voters_record(voter_set(LOCAL, FOLLOWER))]


def test_leader_does_not_bootstrap_records_with_kraft_version0() -> None:
    static = raft.new_node(LOCAL, frozenset((LOCAL, FOLLOWER)),
                           FrozenMap({i: endpoint_strings(i) for i in (LOCAL, FOLLOWER)}), CONFIG,
                           stored=ElectionState(epoch=0), now=START)
    node, _ = elect(static, START)
    assert entries(node) == [LeaderChangeMessage(leader_id=LOCAL, voters=(LOCAL, FOLLOWER),
                                                 granting_voters=(LOCAL, FOLLOWER))]
    assert raft.quorum_state_file(node).endswith('"data_version":0}')


def test_follower_reads_kraft_bootstrap_records() -> None:
    leader_id, other = 2, 3
    node = dynamic_node(LOCAL, voter_set(LOCAL, leader_id), ElectionState(epoch=5, leader_id=leader_id))
    node, out = raft.step(node, Tick(), START)
    req = only(out, FetchRequest)
    assert (req.fetch_offset, req.last_fetched_epoch) == (0, 0)
    assert other not in node.voters
    records = (LeaderChangeMessage(leader_id=leader_id, voters=(), granting_voters=()),
               KRaftVersionRecord(kraft_version=1), to_voters_record(voter_set(LOCAL, leader_id, other)))
    response = FetchResponse(source=leader_id, leader_epoch=5, leader_id=leader_id, high_watermark=0,
                             records=tuple(raft_log.LogEntry(epoch=5, record=r) for r in records),
                             correlation_id=req.correlation_id)
    node, _ = raft.step(node, response, START)
    assert other in node.voters and node.voter_endpoints[other] == endpoint_strings(other)


def test_voters_follow_truncation_and_restart() -> None:
    """Not one of Kafka's tests: a truncated VotersRecord is forgotten, and a restart reads the log anew."""
    leader_id, other = 2, 3
    node = dynamic_node(LOCAL, voter_set(LOCAL, leader_id), ElectionState(epoch=5, leader_id=leader_id))
    node, out = raft.step(node, Tick(), START)
    req = only(out, FetchRequest)
    records = (raft_log.LogEntry(epoch=5, record=to_voters_record(voter_set(LOCAL, leader_id, other))),)
    node, out = raft.step(node, FetchResponse(source=leader_id, leader_epoch=5, leader_id=leader_id,
                                              high_watermark=0, records=records, correlation_id=req.correlation_id),
                          START)
    assert node.voters == {LOCAL, leader_id, other}
    assert raft.restart(node, START + 1).voters == {LOCAL, leader_id, other}
    req = only(out, FetchRequest)
    node, _ = raft.step(node, FetchResponse(source=leader_id, leader_epoch=5, leader_id=leader_id,
                                            high_watermark=0, diverging_epoch=(4, 0),
                                            correlation_id=req.correlation_id), START + 1)
    assert node.log.end_offset == 0 and node.voters == {LOCAL, leader_id}
    assert raft.restart(node, START + 2).voters == {LOCAL, leader_id}


def test_kraft_version1_quorum_state_file() -> None:
    """Not one of Kafka's tests: a kraft.version 1 node writes data version 1 (``FileQuorumStateStore``)."""
    node, _ = leader(LOCAL, FOLLOWER)
    assert raft.quorum_state_file(node) == ('{"leaderId":1,"leaderEpoch":4,"votedId":-1,'
                                            '"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":1}')
    candidate = evolve(node, stored=ElectionState(epoch=5, voted_key=raft.ReplicaKey(id=LOCAL)))
    data = read_quorum_state(raft.quorum_state_file(candidate))
    assert (data.data_version, data.voted_id, data.voted_directory_id) == (1, LOCAL, directory(LOCAL))


# --------------------------------------------------------------------------------------------------
# AddRaftVoter


def test_add_voter() -> None:
    node, now = prepared_for_add(LOCAL, FOLLOWER)
    node, _ = asked_api_versions(node, now)
    node, out = api_versions_answer(node, now)
    assert not sends(out, VoterChangeResponse)
    # The new voter is a voter once its VotersRecord is in the log, committed or not.
    assert entries(node)[-1] == to_voters_record(voter_set(LOCAL, FOLLOWER, NEW_VOTER))
    assert node.is_voter and NEW_VOTER in node.voters and NEW_VOTER in node.state.voter_states
    assert raft.ReplicaKey(id=NEW_VOTER, directory_id=directory(NEW_VOTER)) not in node.state.observer_states
    node, _ = fetch(node, FOLLOWER, now)  # commits the new voter set (2 of 3)
    assert node.voter_change is None


def test_add_voter_answer_waits_for_commit() -> None:
    """``testAddVoter``'s last steps: the answer goes out with the fetch that commits the VotersRecord."""
    node, now = prepared_for_add(LOCAL, FOLLOWER)
    node, _ = asked_api_versions(node, now)
    node, _ = api_versions_answer(node, now)
    epoch = node.state.epoch
    req = FetchRequest(replica_id=FOLLOWER, replica_directory_id=directory(FOLLOWER),
                       current_leader_epoch=epoch, fetch_offset=node.log.end_offset,
                       last_fetched_epoch=epoch, cluster_id=CLUSTER)
    node, out = raft.step(node, req, now)
    assert voter_change_answer(out, ADD_VOTER) == VoterChangeResponse(api=ADD_VOTER, source=LOCAL,
                                                                           correlation_id=77)


def test_add_voter_completes_early_with_ack_when_committed_false() -> None:
    node, now = prepared_for_add(LOCAL, FOLLOWER)
    node, _ = asked_api_versions(node, now, ack_when_committed=False)
    node, out = api_versions_answer(node, now)
    assert voter_change_answer(out, ADD_VOTER).error == Errors.NONE
    # Still pending until it commits: another add is refused.
    node, out = raft.step(node, add_voter(voter=4, correlation_id=80), now)
    assert voter_change_answer(out, ADD_VOTER).error == Errors.REQUEST_TIMED_OUT
    node, out = fetch(node, FOLLOWER, now)
    node, out = raft.step(node, Tick(), now)
    assert not sends(out, VoterChangeResponse) and node.voter_change is None


def test_add_voter_invalid_cluster_id() -> None:
    node, now = leader(LOCAL, FOLLOWER)
    node, out = raft.step(node, add_voter(cluster_id="invalid-uuid"), now)
    assert voter_change_answer(out, ADD_VOTER).error == Errors.INCONSISTENT_CLUSTER_ID


def test_add_voter_to_not_leader() -> None:
    node = dynamic_node(LOCAL, voter_set(LOCAL, FOLLOWER), ElectionState(epoch=3, leader_id=FOLLOWER))
    node, out = raft.step(node, add_voter(), START)
    assert voter_change_answer(out, ADD_VOTER).error == Errors.NOT_LEADER_OR_FOLLOWER


def test_add_voter_with_missing_default_listener() -> None:
    node, now = leader(LOCAL, FOLLOWER)
    node, out = raft.step(node, add_voter(listeners=("not_the_listener://localhost:9993",)), now)
    assert voter_change_answer(out, ADD_VOTER).error == Errors.INVALID_REQUEST


def test_add_voter_with_pending_add_voter() -> None:
    node, now = prepared_for_add(LOCAL, FOLLOWER)
    node, _ = asked_api_versions(node, now)
    node, out = raft.step(node, add_voter(voter=4, correlation_id=80), now)
    answer = voter_change_answer(out, ADD_VOTER)
    assert answer.error == Errors.REQUEST_TIMED_OUT and answer.correlation_id == 80


def test_add_voter_without_fenced_previous_leaders() -> None:
    node, now = leader(LOCAL, FOLLOWER)
    node, out = raft.step(node, add_voter(), now)  # no fetch yet: no HWM
    answer = voter_change_answer(out, ADD_VOTER)
    assert answer.error == Errors.REQUEST_TIMED_OUT and "establish HWM" in answer.error_message


def test_add_voter_with_kraft_version0() -> None:
    static = raft.new_node(LOCAL, frozenset((LOCAL, FOLLOWER)),
                           FrozenMap({i: endpoint_strings(i) for i in (LOCAL, FOLLOWER)}), CONFIG,
                           stored=ElectionState(epoch=3), now=START, directory_id=directory(LOCAL),
                           cluster_id=CLUSTER)
    node, now = elect(static, START)
    node, _ = fetch(node, FOLLOWER, now)
    node, out = raft.step(node, add_voter(), now)
    assert voter_change_answer(out, ADD_VOTER).error == Errors.UNSUPPORTED_VERSION


def test_add_voter_with_existing_voter() -> None:
    node, now = leader(LOCAL, FOLLOWER)
    node, _ = fetch(node, FOLLOWER, now)
    node, out = raft.step(node, add_voter(voter=FOLLOWER, voter_directory_id=directory(FOLLOWER, 1)), now)
    assert voter_change_answer(out, ADD_VOTER).error == Errors.DUPLICATE_VOTER


def test_add_voter_timeout() -> None:
    node, now = prepared_for_add(LOCAL, FOLLOWER)
    node, _ = asked_api_versions(node, now)
    node, _ = api_versions_answer(node, now)
    node, out = raft.step(node, Tick(), now + CONFIG.request_timeout_ms)
    assert voter_change_answer(out, ADD_VOTER).error == Errors.REQUEST_TIMED_OUT
    # The VotersRecord never committed, yet the new voter is in the voter set in force.
    assert NEW_VOTER in node.voters


def test_add_voter_with_api_versions_from_incorrect_node() -> None:
    node, now = prepared_for_add(LOCAL, FOLLOWER)
    node, _ = asked_api_versions(node, now)
    # The leader has no request outstanding to the follower: the answer is not expected and changes nothing.
    before = node
    node, out = raft.step(node, ApiVersionsResponse(source=FOLLOWER, kraft_version_range=(0, 1), correlation_id=1),
                          now)
    assert node == before and not out
    node, out = raft.step(node, Tick(), now + CONFIG.request_timeout_ms)
    assert voter_change_answer(out, ADD_VOTER).error == Errors.REQUEST_TIMED_OUT


def test_add_voter_invalid_feature_version() -> None:
    node, now = prepared_for_add(LOCAL, FOLLOWER)
    node, _ = asked_api_versions(node, now)
    node, out = api_versions_answer(node, now, supported=(0, 0))
    assert voter_change_answer(out, ADD_VOTER).error == Errors.INVALID_REQUEST
    assert NEW_VOTER not in node.voters


def test_add_voter_with_lagging_new_voter() -> None:
    node, now = leader(LOCAL, FOLLOWER)
    node, _ = fetch(node, FOLLOWER, now)
    node, _ = fetch(node, NEW_VOTER, now, offset=0)  # behind the leader's end offset
    node, _ = asked_api_versions(node, now)
    node, out = api_versions_answer(node, now)
    answer = voter_change_answer(out, ADD_VOTER)
    assert answer.error == Errors.REQUEST_TIMED_OUT and "lagging behind" in answer.error_message


def test_add_voter_fails_when_losing_leadership() -> None:
    node, now = leader(LOCAL, FOLLOWER)
    node, _ = fetch(node, FOLLOWER, now)
    node, _ = asked_api_versions(node, now)
    node, out = raft.step(node, Resign(epoch=node.state.epoch), now)  # the poll after it resigns
    assert isinstance(node.state, Resigned)
    assert voter_change_answer(out, ADD_VOTER).error == Errors.NOT_LEADER_OR_FOLLOWER


def test_add_voter_with_missing_directory_id() -> None:
    node, now = leader(LOCAL, FOLLOWER)
    node, _ = fetch(node, FOLLOWER, now)
    node, out = raft.step(node, add_voter(voter_directory_id=None), now)
    assert voter_change_answer(out, ADD_VOTER).error == Errors.INVALID_REQUEST


# --------------------------------------------------------------------------------------------------
# RemoveRaftVoter


def test_remove_voter() -> None:
    node, now = leader(LOCAL, FOLLOWER, NEW_VOTER)
    node, _ = fetch(node, FOLLOWER, now)
    node, out = raft.step(node, remove_voter(FOLLOWER), now)
    assert not sends(out, VoterChangeResponse)
    assert FOLLOWER not in node.voters and key(FOLLOWER) in node.state.observer_states
    node, out = fetch(node, NEW_VOTER, now)  # commits the new voter set (2 of 2)
    node, out = raft.step(node, Tick(), now)
    assert node.voter_change is None and isinstance(node.state, Leader)


def test_remove_voter_is_leader() -> None:
    node, now = leader(LOCAL, FOLLOWER, NEW_VOTER)
    node, _ = fetch(node, FOLLOWER, now)
    node, out = raft.step(node, remove_voter(LOCAL), now)
    assert not node.is_voter and node.voters == {FOLLOWER, NEW_VOTER}
    assert LOCAL not in node.state.voter_states and key(LOCAL) in node.state.observer_states
    node, _ = fetch(node, FOLLOWER, now)
    assert node.voter_change is not None  # the leader does not count: 1 of 2 is no majority
    epoch = node.state.epoch
    req = FetchRequest(replica_id=NEW_VOTER, replica_directory_id=directory(NEW_VOTER),
                       current_leader_epoch=epoch, fetch_offset=node.log.end_offset,
                       last_fetched_epoch=epoch, cluster_id=CLUSTER)
    node, out = raft.step(node, req, now)
    assert voter_change_answer(out, REMOVE_VOTER).error == Errors.NONE
    assert isinstance(node.state, Resigned)  # the poll after the commit resigns
    node, out = raft.step(node, Tick(), now)
    assert sorted(s.destination for s in sends(out, EndQuorumEpochRequest)) == [FOLLOWER, NEW_VOTER]
    node, _ = raft.step(node, Resign(epoch=epoch), now)  # allowed, ignored
    node, _ = raft.step(node, Tick(), now + 2 * CONFIG.election_timeout_ms)
    assert isinstance(node.state, Unattached) and not node.is_voter


def test_remove_voter_invalid_cluster_id() -> None:
    node, now = leader(LOCAL, FOLLOWER)
    node, out = raft.step(node, remove_voter(FOLLOWER, cluster_id="invalid-uuid"), now)
    assert voter_change_answer(out, REMOVE_VOTER).error == Errors.INCONSISTENT_CLUSTER_ID


def test_remove_voter_to_not_leader() -> None:
    node = dynamic_node(LOCAL, voter_set(LOCAL, FOLLOWER), ElectionState(epoch=3, leader_id=FOLLOWER))
    node, out = raft.step(node, remove_voter(FOLLOWER), START)
    assert voter_change_answer(out, REMOVE_VOTER).error == Errors.NOT_LEADER_OR_FOLLOWER


def test_remove_voter_with_pending_remove_voter() -> None:
    node, now = leader(LOCAL, FOLLOWER, NEW_VOTER)
    node, _ = fetch(node, FOLLOWER, now)
    node, _ = raft.step(node, remove_voter(FOLLOWER), now)
    node, out = raft.step(node, remove_voter(NEW_VOTER), now)
    assert voter_change_answer(out, REMOVE_VOTER).error == Errors.REQUEST_TIMED_OUT


def test_remove_voter_without_fenced_previous_leaders() -> None:
    node, now = leader(LOCAL, FOLLOWER)
    node, out = raft.step(node, remove_voter(FOLLOWER), now)
    assert voter_change_answer(out, REMOVE_VOTER).error == Errors.REQUEST_TIMED_OUT


def test_remove_voter_with_kraft_version0() -> None:
    static = raft.new_node(LOCAL, frozenset((LOCAL, FOLLOWER)),
                           FrozenMap({i: endpoint_strings(i) for i in (LOCAL, FOLLOWER)}), CONFIG,
                           stored=ElectionState(epoch=3), now=START, directory_id=directory(LOCAL),
                           cluster_id=CLUSTER)
    node, now = elect(static, START)
    node, _ = fetch(node, FOLLOWER, now)
    node, out = raft.step(node, remove_voter(FOLLOWER), now)
    assert voter_change_answer(out, REMOVE_VOTER).error == Errors.UNSUPPORTED_VERSION


def test_remove_voter_with_none_voter() -> None:
    node, now = leader(LOCAL, FOLLOWER)
    node, _ = fetch(node, FOLLOWER, now)
    node, out = raft.step(node, remove_voter(FOLLOWER, voter_directory_id=directory(FOLLOWER, 1)), now)
    assert voter_change_answer(out, REMOVE_VOTER).error == Errors.VOTER_NOT_FOUND


def test_remove_voter_with_none_voter_id() -> None:
    node, now = leader(LOCAL, FOLLOWER)
    node, _ = fetch(node, FOLLOWER, now)
    node, out = raft.step(node, remove_voter(NEW_VOTER), now)
    assert voter_change_answer(out, REMOVE_VOTER).error == Errors.VOTER_NOT_FOUND


def test_remove_voter_to_empty_voter_set() -> None:
    node, now = leader(LOCAL)
    node, out = raft.step(node, remove_voter(LOCAL), now)
    assert voter_change_answer(out, REMOVE_VOTER).error == Errors.VOTER_NOT_FOUND


def test_remove_voter_timed_out() -> None:
    node, now = leader(LOCAL, FOLLOWER, NEW_VOTER)
    node, _ = fetch(node, FOLLOWER, now)
    node, _ = raft.step(node, remove_voter(FOLLOWER), now)
    node, out = raft.step(node, Tick(), now + CONFIG.request_timeout_ms)
    assert voter_change_answer(out, REMOVE_VOTER).error == Errors.REQUEST_TIMED_OUT
    assert FOLLOWER not in node.voters  # the uncommitted set stays in force


def test_remove_voter_not_answered_while_the_high_watermark_is_at_its_record() -> None:
    """Not a Kafka test: a majority of the new voters (1-4) holding everything before the VotersRecord moves the high
    watermark to the record's offset, which does not commit it: the change is answered only when the high watermark
    passes it (``RemoveVoterHandlerState``: committed once the high watermark exceeds the record's offset), §3.15."""
    node, now = leader(LOCAL, 2, 3, 4, 5)
    node, _ = fetch(node, 2, now)
    node, _ = fetch(node, 3, now)
    node, _ = raft.step(node, Append(records=("a", "b")), now)
    node, _ = raft.step(node, remove_voter(5), now)
    record = node.voter_change.last_offset
    assert node.state.high_watermark < record
    for replica in (2, 3):
        node, _ = fetch(node, replica, now, record)
    assert node.state.high_watermark == record and node.voter_change is not None
    node, _ = fetch(node, 2, now)
    node, out = raft.step(node, FetchRequest(replica_id=3, current_leader_epoch=node.state.epoch,
                                             fetch_offset=node.log.end_offset, last_fetched_epoch=node.state.epoch,
                                             max_wait_ms=0, replica_directory_id=directory(3), cluster_id=CLUSTER), now)
    assert node.state.high_watermark > record and node.voter_change is None
    assert voter_change_answer(out, REMOVE_VOTER).error == Errors.NONE


def test_remove_voter_committed_by_completing_a_parked_fetch() -> None:
    """Not a Kafka test: the high watermark passes the VotersRecord only when a parked Fetch completes. Voter 2's
    Fetch at the log end is parked, then an older Fetch of its arrives (offset 3) and takes its end offset back; voter
    3's Fetch moves the high watermark to the record's offset, not past it, and completing voter 2's parked Fetch moves
    it past. As Kafka 4.3.1 does (tests/test_kafka_raft_parked_commit.py), the admin is answered first, then voter 2,
    then voter 3, both with the new high watermark: ``tryCompleteFetchRequest`` runs ``onUpdateLeaderHighWatermark``
    for the parked Fetch within the ``completeAll`` that voter 3's Fetch started, before 3's answer is built, §3.15."""
    def fetch_at(node: raft.RaftNode, replica: int, offset: int, max_wait_ms: int) -> FetchRequest:
        epoch = node.state.epoch
        return FetchRequest(replica_id=replica, current_leader_epoch=epoch, fetch_offset=offset,
                            last_fetched_epoch=epoch, max_wait_ms=max_wait_ms,
                            high_watermark=node.state.high_watermark, replica_directory_id=directory(replica),
                            cluster_id=CLUSTER)

    node, now = leader(LOCAL, 2, 3, 4, 5)
    node, _ = fetch(node, 2, now)
    node, _ = fetch(node, 3, now)
    node, _ = raft.step(node, Append(records=("a", "b")), now)
    node, _ = raft.step(node, fetch_at(node, 4, 3, 0), now)
    node, out = raft.step(node, remove_voter(5), now)
    record, end = node.voter_change.last_offset, node.log.end_offset
    assert not sends(out, VoterChangeResponse) and node.state.high_watermark < record
    node, _ = raft.step(node, fetch_at(node, 2, end, 500), now)
    assert len(node.parked) == 1
    node, _ = raft.step(node, fetch_at(node, 2, 3, 0), now)  # an older Fetch of voter 2, arriving late
    node, _ = raft.step(node, fetch_at(node, 4, record, 0), now)
    node, out = raft.step(node, fetch_at(node, 3, end, 0), now)
    assert not node.parked and node.state.high_watermark == end
    assert [(s.destination, type(s.message)) for s in out] == [
        (ADMIN, VoterChangeResponse), (2, FetchResponse), (3, FetchResponse)]
    assert [s.message.high_watermark for s in out[1:]] == [end, end]
    assert voter_change_answer(out, REMOVE_VOTER).error == Errors.NONE and node.voter_change is None


def test_remove_voter_fails_when_losing_leadership() -> None:
    node, now = leader(LOCAL, FOLLOWER, NEW_VOTER)
    node, _ = fetch(node, FOLLOWER, now)
    node, _ = raft.step(node, remove_voter(FOLLOWER), now)
    node, out = raft.step(node, Resign(epoch=node.state.epoch), now)
    assert voter_change_answer(out, REMOVE_VOTER).error == Errors.NOT_LEADER_OR_FOLLOWER


def test_add_voter_with_pending_remove_voter() -> None:
    node, now = leader(LOCAL, FOLLOWER, 4)
    node, _ = fetch(node, FOLLOWER, now)
    node, _ = fetch(node, NEW_VOTER, now)
    node, _ = raft.step(node, remove_voter(4), now)
    node, out = raft.step(node, add_voter(), now)
    assert voter_change_answer(out, ADD_VOTER).error == Errors.REQUEST_TIMED_OUT


def test_remove_voter_with_pending_add_voter() -> None:
    node, now = prepared_for_add(LOCAL, FOLLOWER)
    node, _ = asked_api_versions(node, now)
    node, out = raft.step(node, remove_voter(FOLLOWER), now)
    assert voter_change_answer(out, REMOVE_VOTER).error == Errors.REQUEST_TIMED_OUT


# --------------------------------------------------------------------------------------------------
# UpdateRaftVoter


def test_update_voter() -> None:
    node, now = leader(LOCAL, FOLLOWER)
    node, _ = fetch(node, FOLLOWER, now)
    node, out = raft.step(node, update_voter(FOLLOWER, node.state.epoch, ports=8990), now)
    answer = only(out, UpdateRaftVoterResponse)
    assert (answer.error, answer.leader_id, answer.leader_epoch) == (Errors.NONE, LOCAL, node.state.epoch)
    assert node.voter_endpoints[FOLLOWER] == endpoint_strings(FOLLOWER, 8990)
    assert isinstance(entries(node)[-1], VotersRecord)


def test_update_voter_naming_the_leader_itself_is_refused() -> None:
    """Kafka 4.3.1 throws out of the poll once an UpdateRaftVoter naming the leader's own id succeeds
    (``UpdateVoterHandler.storeUpdatedVoters`` -> ``LeaderState.updateFetchedVoters``: "from the leader itself")."""
    node, now = leader(LOCAL, FOLLOWER)
    node, _ = fetch(node, FOLLOWER, now)
    with pytest.raises(ValueError, match="from the leader itself"):
        raft.step(node, update_voter(LOCAL, node.state.epoch, ports=8990), now)


def test_update_voter_invalid_cluster_id() -> None:
    node, now = leader(LOCAL, FOLLOWER)
    node, out = raft.step(node, update_voter(FOLLOWER, node.state.epoch, cluster_id="invalid-uuid"), now)
    assert only(out, UpdateRaftVoterResponse).error == Errors.INCONSISTENT_CLUSTER_ID


def test_update_voter_old_epoch() -> None:
    node, now = leader(LOCAL, FOLLOWER)
    node, out = raft.step(node, update_voter(FOLLOWER, node.state.epoch - 1), now)
    assert only(out, UpdateRaftVoterResponse).error == Errors.FENCED_LEADER_EPOCH


def test_update_voter_new_epoch() -> None:
    node, now = leader(LOCAL, FOLLOWER)
    node, out = raft.step(node, update_voter(FOLLOWER, node.state.epoch + 1), now)
    assert only(out, UpdateRaftVoterResponse).error == Errors.UNKNOWN_LEADER_EPOCH


def test_update_voter_to_not_leader() -> None:
    node = dynamic_node(LOCAL, voter_set(LOCAL, FOLLOWER), ElectionState(epoch=3, leader_id=FOLLOWER))
    node, out = raft.step(node, update_voter(FOLLOWER, 3), START)
    assert only(out, UpdateRaftVoterResponse).error == Errors.NOT_LEADER_OR_FOLLOWER


def test_update_voter_without_fenced_previous_leaders() -> None:
    node, now = leader(LOCAL, FOLLOWER)
    node, out = raft.step(node, update_voter(FOLLOWER, node.state.epoch), now)
    assert only(out, UpdateRaftVoterResponse).error == Errors.REQUEST_TIMED_OUT


def test_update_voter_with_none_voter() -> None:
    node, now = leader(LOCAL, FOLLOWER)
    node, _ = fetch(node, FOLLOWER, now)
    node, out = raft.step(node, update_voter(FOLLOWER, node.state.epoch,
                                             voter_directory_id=directory(FOLLOWER, 1)), now)
    assert only(out, UpdateRaftVoterResponse).error == Errors.VOTER_NOT_FOUND


def test_update_voter_with_none_voter_id() -> None:
    node, now = leader(LOCAL, FOLLOWER)
    node, _ = fetch(node, FOLLOWER, now)
    node, out = raft.step(node, update_voter(NEW_VOTER, node.state.epoch), now)
    assert only(out, UpdateRaftVoterResponse).error == Errors.VOTER_NOT_FOUND


def test_update_voter_with_pending_add_voter() -> None:
    node, now = prepared_for_add(LOCAL, FOLLOWER)
    node, _ = asked_api_versions(node, now)
    node, out = raft.step(node, update_voter(FOLLOWER, node.state.epoch), now)
    assert only(out, UpdateRaftVoterResponse).error == Errors.REQUEST_TIMED_OUT


def _follower_at_update_period(voters: VoterSet) -> tuple[raft.RaftNode, tuple[Send, ...]]:
    """A restarted follower of FOLLOWER whose first fetch succeeded, polled when its update-voter period ends."""
    node = dynamic_node(LOCAL, voters, ElectionState(epoch=3, leader_id=FOLLOWER))
    node, _ = raft.step(node, Tick(), START)
    cid, _ = node.inflight[FOLLOWER]
    node, _ = raft.step(node, FetchResponse(source=FOLLOWER, leader_epoch=3, leader_id=FOLLOWER, high_watermark=0,
                                            correlation_id=cid), START + 10)
    return raft.step(node, Tick(), START + CONFIG.fetch_timeout_ms)


def test_follower_sends_update_voter() -> None:
    """A voter whose node in the voter set is its own sends no UpdateRaftVoter, only Fetch (kraft.version 1)."""
    node, out = _follower_at_update_period(voter_set(LOCAL, FOLLOWER))
    assert not sends(out, UpdateRaftVoterRequest) and sends(out, FetchRequest)
    assert node.state.update_voter_deadline == START + 2 * CONFIG.fetch_timeout_ms  # the period restarts


def test_follower_sends_update_voter_when_different() -> None:
    stale = voter_set(LOCAL, FOLLOWER)
    stale = VoterSet(voters=stale.voters.set(LOCAL, evolve(voter_node(LOCAL), listeners=listeners(LOCAL, 8990))))
    node, out = _follower_at_update_period(stale)
    req = only(out, UpdateRaftVoterRequest)
    assert req.listeners == endpoint_strings(LOCAL) and req.voter_directory_id == directory(LOCAL)


def test_update_voter_response_causes_epoch_change() -> None:
    stale = voter_set(LOCAL, FOLLOWER)
    stale = VoterSet(voters=stale.voters.set(LOCAL, evolve(voter_node(LOCAL), listeners=listeners(LOCAL, 8990))))
    node, out = _follower_at_update_period(stale)
    now = START + CONFIG.fetch_timeout_ms
    req = only(out, UpdateRaftVoterRequest)
    node, _ = raft.step(node, UpdateRaftVoterResponse(source=FOLLOWER, error=Errors.NONE, leader_epoch=4,
                                                      leader_id=NEW_VOTER, leader_endpoints=endpoint_strings(NEW_VOTER),
                                                      correlation_id=req.correlation_id), now)
    assert isinstance(node.state, Follower) and (node.state.epoch, node.state.leader_id) == (4, NEW_VOTER)


def test_voter_set_in_force_reads_the_history() -> None:
    """The node's control-record state is :mod:`raft_voter_history`'s: the voter set at each offset read."""
    node, now = leader(LOCAL, FOLLOWER)
    control = node.dynamic.control
    assert raft_voter_history.voter_set_at_offset(control, -1) == voter_set(LOCAL, FOLLOWER)
    assert raft_voter_history.last_kraft_version(control) == 1
    try:  # an offset not read yet
        raft_voter_history.voter_set_at_offset(control, node.log.end_offset)
    except ValueError:
        return
    raise AssertionError("a voter set was read past the offsets read")


def test_begin_quorum_epoch_answer_from_removed_voter() -> None:
    """Not one of Kafka's tests: Kafka 4.3's leader throws on a BeginQuorumEpoch answer from a voter it removed while
    the request was out (``handleBeginQuorumEpochResponse`` → ``LeaderState.addAcknowledgementFrom``:
    IllegalArgumentException "Unexpected acknowledgement from non-voter"), and so does the reference."""
    node, now = leader(LOCAL, FOLLOWER, NEW_VOTER)
    node, out = raft.step(node, Tick(), now)
    assert NEW_VOTER in node.inflight
    node, _ = fetch(node, FOLLOWER, now)
    node, _ = raft.step(node, remove_voter(NEW_VOTER), now)
    assert NEW_VOTER not in node.voters
    cid, _ = node.inflight[NEW_VOTER]
    answer = QuorumEpochResponse(source=NEW_VOTER, api="BeginQuorumEpoch", leader_epoch=node.state.epoch,
                                 leader_id=LOCAL, correlation_id=cid)
    try:  # not pytest.raises: its failure is no Exception, which the mutant layers count as failing scenarios
        raft.step(node, answer, now)
    except ValueError as exc:
        assert "non-voter 3" in str(exc)
    else:
        raise AssertionError("the leader took an acknowledgement from a removed voter")


def test_follower_sends_update_voter_if_pending_fetch_during_timeout() -> None:
    voters = voter_set(LOCAL, 2, 3)
    local_listeners = FrozenMap({LISTENER: ("localhost", 9990 + LOCAL),
                                 "ANOTHER_LISTENER": ("localhost", 8990 + LOCAL)})
    log = RaftLog(snapshots=(Snapshot(end_offset=0, epoch=0, size=100),))
    records = FrozenMap({(0, 0): (KRaftVersionRecord(kraft_version=1), to_voters_record(voters))})
    node = raft.new_dynamic_node(LOCAL, directory(LOCAL), local_listeners, CONFIG, log, records,
                                 ElectionState(epoch=4, leader_id=2), START, cluster_id=CLUSTER)
    node, _ = raft.step(node, Tick(), START)
    last = START + CONFIG.fetch_timeout_ms - 1_000  # the last fetch answered before the update-voter period ends
    cid, _ = node.inflight[2]
    node, out = raft.step(node, FetchResponse(source=2, leader_epoch=4, leader_id=2, high_watermark=0,
                                              correlation_id=cid), last)
    fetch_request = only(out, FetchRequest)
    assert (fetch_request.fetch_offset, fetch_request.last_fetched_epoch) == (0, 0)
    now = last + CONFIG.request_timeout_ms - 1
    node, out = raft.step(node, Tick(), now)  # the period is over, but the fetch is still out
    assert not out
    node, out = raft.step(node, FetchResponse(source=2, leader_epoch=4, leader_id=2, high_watermark=0,
                                              correlation_id=fetch_request.correlation_id), now)
    update = only(out, UpdateRaftVoterRequest)
    assert (update.voter_id, update.current_leader_epoch, update.voter_directory_id) == (LOCAL, 4, directory(LOCAL))
    # in the order the node was given them (``Endpoints`` keeps its map; Kafka's test compares them as a map)
    assert update.listeners == ("CONTROLLER://localhost:9991", "ANOTHER_LISTENER://localhost:8991")


def test_voters_record_rewritten_below_the_next_offset_is_not_read() -> None:
    """Not one of Kafka's tests; Kafka 4.3 as its code reads: ``KRaftControlRecordStateMachine.truncateNewEntries``
    forgets the truncated voter sets but leaves ``nextOffset``, and ``maybeLoadLog`` reads only from there, so a
    VotersRecord the new leader's log holds below that offset is not read until a restart reads the log anew."""
    leader_id = 2
    node = dynamic_node(LOCAL, voter_set(LOCAL, leader_id), ElectionState(epoch=5, leader_id=leader_id))

    def answer(node: raft.RaftNode, now: int, **fields: Any) -> raft.RaftNode:
        cid, _ = node.inflight[leader_id]
        node, _ = raft.step(node, FetchResponse(source=leader_id, leader_id=leader_id, correlation_id=cid, **fields),
                            now)
        return node

    node, _ = raft.step(node, Tick(), START)
    old = (raft_log.LogEntry(epoch=5, record="a"),
           raft_log.LogEntry(epoch=5, record=to_voters_record(voter_set(LOCAL, leader_id, 3))))
    node = answer(node, START, leader_epoch=5, high_watermark=0, records=old)
    assert node.voters == {LOCAL, leader_id, 3} and node.dynamic.control.next_offset == 2
    node = answer(node, START, leader_epoch=6, high_watermark=0)  # the leader's epoch 6: the node follows it
    node = answer(node, START, leader_epoch=6, high_watermark=0, diverging_epoch=(5, 1))
    assert node.log.end_offset == 1 and node.voters == {LOCAL, leader_id}
    new = (raft_log.LogEntry(epoch=6, record=to_voters_record(voter_set(LOCAL, leader_id, 4))),)
    node = answer(node, START, leader_epoch=6, high_watermark=0, records=new)
    assert node.log.entries[1].record == to_voters_record(voter_set(LOCAL, leader_id, 4))
    assert node.voters == {LOCAL, leader_id}  # offset 1 is below the next offset to read (2)
    assert raft.restart(node, START + 1).voters == {LOCAL, leader_id, 4}


# --------------------------------------------------------------------------------------------------
# UpdateRaftVoter under kraft.version 0: the leader's in-memory voters, the follower's hasUpdatedLeader


def static_node(local: int, voter_ids: tuple[int, ...], stored: Optional[ElectionState] = None,
                local_endpoints: Optional[tuple[str, ...]] = None) -> raft.RaftNode:
    """``withStaticVoters(voters)`` (kraft.version 0): ``controller.quorum.voters`` on the default listener; the local
    node's listeners ``withLocalListeners`` (default: its voter endpoint)."""
    endpoints = {v: endpoint_strings(v) for v in voter_ids}
    if local_endpoints is not None:
        endpoints[local] = local_endpoints
    return raft.new_node(local, frozenset(voter_ids), FrozenMap(endpoints), CONFIG, stored=stored, now=START,
                         directory_id=directory(local), cluster_id=CLUSTER)


TWO_LISTENERS = ("ANOTHER_LISTENER://localhost:8991", "CONTROLLER://localhost:9991")
"""LOCAL's listeners in Kafka's follower tests: the default one and ANOTHER_LISTENER."""


def test_update_voter_with_kraft_version0() -> None:
    node, now = elect(static_node(LOCAL, (LOCAL, FOLLOWER), ElectionState(epoch=3)), START)
    assert node.dynamic is None and node.state.volatile_voters is not None
    node, _ = fetch(node, FOLLOWER, now)
    end = node.log.end_offset
    new_listeners = (f"ANOTHER_LISTENER://localhost:{8990 + FOLLOWER}", f"CONTROLLER://localhost:{9990 + FOLLOWER}")
    node, out = raft.step(node, update_voter(FOLLOWER, node.state.epoch, listeners=new_listeners), now)
    answer = only(out, UpdateRaftVoterResponse)
    assert (answer.error, answer.leader_id, answer.leader_epoch) == (Errors.NONE, LOCAL, node.state.epoch)
    assert node.log.end_offset == end  # kept in memory: nothing written
    updated = node.state.volatile_voters.voters[FOLLOWER]
    assert updated.voter_key == raft.ReplicaKey(id=FOLLOWER, directory_id=directory(FOLLOWER))
    assert updated.listeners == FrozenMap({LISTENER: ("localhost", 9992), "ANOTHER_LISTENER": ("localhost", 8992)})
    assert updated.supported_kraft_version == raft.SUPPORTED_KRAFT_VERSIONS


def test_update_voter_with_kraft_version0_refusals() -> None:
    """Not one of Kafka's tests; Kafka 4.3 ``KafkaRaftClient.handleUpdateVoterRequest`` and
    ``UpdateVoterHandler.handleUpdateVoterRequest`` at kraft.version 0: before the high watermark REQUEST_TIMED_OUT, a
    request without directory id INVALID_REQUEST, an id outside the static voters VOTER_NOT_FOUND, and another
    directory id of a voter is taken (``updateVoterIgnoringDirectoryId``); the static voters start without directory
    ids, the leader's own node with its listeners (``LeaderState``'s constructor)."""
    node, now = elect(static_node(LOCAL, (LOCAL, FOLLOWER), ElectionState(epoch=3)), START)
    own = node.state.volatile_voters.voters[LOCAL]
    assert own.voter_key.directory_id == directory(LOCAL) and own.supported_kraft_version == (0, 1)
    assert node.state.volatile_voters.voters[FOLLOWER].voter_key.directory_id is None
    node, out = raft.step(node, update_voter(FOLLOWER, node.state.epoch), now)
    assert only(out, UpdateRaftVoterResponse).error == Errors.REQUEST_TIMED_OUT
    node, _ = fetch(node, FOLLOWER, now)
    node, out = raft.step(node, update_voter(FOLLOWER, node.state.epoch, voter_directory_id=None), now)
    assert only(out, UpdateRaftVoterResponse).error == Errors.INVALID_REQUEST
    node, out = raft.step(node, update_voter(NEW_VOTER, node.state.epoch), now)
    assert only(out, UpdateRaftVoterResponse).error == Errors.VOTER_NOT_FOUND
    other = directory(FOLLOWER, 1)
    node, out = raft.step(node, update_voter(FOLLOWER, node.state.epoch, voter_directory_id=other), now)
    assert only(out, UpdateRaftVoterResponse).error == Errors.NONE
    assert node.state.volatile_voters.voters[FOLLOWER].voter_key.directory_id == other


def _static_follower_asked_update(epoch: int = 4, leader_id: int = 2) -> tuple[raft.RaftNode, UpdateRaftVoterRequest,
                                                                               int]:
    """``withStaticVoters(LOCAL, 2, 3)``, ``withElectedLeader(epoch, leader_id)``, ``withLocalListeners`` and
    ``advanceTimeAndCompleteFetch(epoch, leader_id, true)``: a fetch answered, then the update-voter-set period
    passes; the next poll sends UpdateRaftVoter. Returns the node, the request and the time."""
    node = static_node(LOCAL, (LOCAL, 2, 3), ElectionState(epoch=epoch, leader_id=leader_id), TWO_LISTENERS)
    node, out = raft.step(node, Tick(), START)
    fetch_request = only(out, FetchRequest)
    node, _ = raft.step(node, FetchResponse(source=leader_id, leader_epoch=epoch, leader_id=leader_id,
                                            high_watermark=0, correlation_id=fetch_request.correlation_id), START + 1)
    now = START + CONFIG.fetch_timeout_ms
    node, out = raft.step(node, Tick(), now)
    request = only(out, UpdateRaftVoterRequest)
    assert (request.voter_id, request.current_leader_epoch, request.voter_directory_id) == (LOCAL, epoch,
                                                                                           directory(LOCAL))
    assert request.listeners == TWO_LISTENERS and not sends(out, FetchRequest)
    return node, request, now


def _answer_update(node: raft.RaftNode, request: UpdateRaftVoterRequest, error: Errors, now: int,
                   leader_id: int = 2) -> tuple[raft.RaftNode, tuple[Send, ...]]:
    """``context.updateVoterResponse(error, LeaderAndEpoch(leader_id, epoch))`` under the request's correlation id."""
    return raft.step(node, UpdateRaftVoterResponse(source=leader_id, error=error,
                                                   leader_epoch=request.current_leader_epoch, leader_id=leader_id,
                                                   leader_endpoints=endpoint_strings(leader_id),
                                                   correlation_id=request.correlation_id), now)


def _fetches_only(node: raft.RaftNode, now: int, rounds: int, epoch: int = 4, leader_id: int = 2) -> raft.RaftNode:
    """Kafka's loop: ``rounds`` times the clock moves a fetch timeout less 1 ms and the outstanding Fetch is answered;
    the node sends the next Fetch, never UpdateRaftVoter, though each round passes an update-voter-set period."""
    for _ in range(rounds):
        now += CONFIG.fetch_timeout_ms - 1
        cid, _ = node.inflight[leader_id]
        node, out = raft.step(node, FetchResponse(source=leader_id, leader_epoch=epoch, leader_id=leader_id,
                                                  high_watermark=0, correlation_id=cid), now)
        assert not sends(out, UpdateRaftVoterRequest)
        assert only(out, FetchRequest).current_leader_epoch == epoch
    return node


def test_follower_sends_update_voter_with_kraft_version0() -> None:
    for error in (Errors.NONE, Errors.UNSUPPORTED_VERSION):  # Kafka's @EnumSource
        node, request, now = _static_follower_asked_update()
        node, out = _answer_update(node, request, error, now)
        assert node.state.has_updated_leader
        assert only(out, FetchRequest).current_leader_epoch == 4  # the next request is a Fetch
        node = _fetches_only(node, now, 10)
        assert isinstance(node.state, Follower)


def test_follower_sends_update_voter_after_election_with_kraft_version0() -> None:
    for error in (Errors.NONE, Errors.UNSUPPORTED_VERSION):  # Kafka's @EnumSource
        node, request, now = _static_follower_asked_update()
        node, out = _answer_update(node, request, error, now)
        only(out, FetchRequest)
        # A new leader: the voter sends it UpdateRaftVoter again once the period passes.
        node, _ = raft.step(node, raft.BeginQuorumEpochRequest(leader_id=2, leader_epoch=5, voter_id=LOCAL,
                                                               leader_endpoints=endpoint_strings(2),
                                                               cluster_id=CLUSTER), now)
        assert isinstance(node.state, Follower) and node.state.epoch == 5 and not node.state.has_updated_leader
        cid, _ = node.inflight[2]
        node, out = raft.step(node, FetchResponse(source=2, leader_epoch=5, leader_id=2, high_watermark=0,
                                                  correlation_id=cid), now + 1)
        assert only(out, FetchRequest).current_leader_epoch == 5
        now += CONFIG.fetch_timeout_ms
        node, out = raft.step(node, Tick(), now)
        request = only(out, UpdateRaftVoterRequest)
        assert request.current_leader_epoch == 5 and request.listeners == TWO_LISTENERS
        node, out = _answer_update(node, request, Errors.NONE, now)
        assert only(out, FetchRequest).current_leader_epoch == 5


def test_follower_update_voter_error_answer_with_kraft_version0() -> None:
    """Not one of Kafka's tests; Kafka 4.3 ``handleUpdateVoterResponse``: another error (REQUEST_TIMED_OUT,
    VOTER_NOT_FOUND) is ``handleUnexpectedError``: the leader's connection backs off, the leader is not marked updated,
    and the voter asks it again when the next period passes; INVALID_REQUEST (the leader's answer to a request without
    directory id) is fatal in ``maybeHandleCommonResponse`` (IllegalStateException), §3.8."""
    for error in (Errors.REQUEST_TIMED_OUT, Errors.VOTER_NOT_FOUND):
        node, request, now = _static_follower_asked_update()
        node, _ = _answer_update(node, request, error, now)
        assert not node.state.has_updated_leader and 2 in node.backoff
        assert node.state.update_voter_deadline == now + CONFIG.fetch_timeout_ms
        assert raft_reconfig_client.should_send_update_voter(node)
    node, request, now = _static_follower_asked_update()
    try:  # not pytest.raises: its failure is no Exception, which the mutant layers count as failing scenarios
        _answer_update(node, request, Errors.INVALID_REQUEST, now)
    except raft.RaftFatalError:
        return
    raise AssertionError("an INVALID_REQUEST answer was taken")


def test_kraft_version0_quorum_state_file_keeps_the_voted_id_only() -> None:
    """Not one of Kafka's tests; Kafka 4.3 ``FileQuorumStateStore.writeElectionState`` at kraft.version 0 writes
    ``QuorumStateData`` version 0 (``ElectionState.toQuorumStateData``), which has no voted directory id, while the
    state in memory keeps it: a Candidate's vote is its own replica key (``ElectionState.withVotedCandidate``) and a
    granted vote the candidate's key (found by the mixed quorum once its nodes had directory ids)."""
    node = static_node(LOCAL, (LOCAL, 2, 3), ElectionState(epoch=3))
    request = VoteRequest(replica_id=2, replica_epoch=4, last_offset_epoch=0, last_offset=0,
                          replica_directory_id=directory(2), voter_id=LOCAL, cluster_id=CLUSTER, correlation_id=5)
    voted, out = raft.step(node, request, START)
    assert only(out, VoteResponse).vote_granted
    assert raft_node.voted_key(voted) == raft.ReplicaKey(id=2, directory_id=directory(2))
    assert voted.stored.voted_key == raft.ReplicaKey(id=2)
    candidate = static_node(LOCAL, (LOCAL, 2, 3), ElectionState(epoch=4, voted_key=raft.ReplicaKey(id=LOCAL)))
    assert raft_node.voted_key(candidate) == raft.ReplicaKey(id=LOCAL, directory_id=directory(LOCAL))
    assert candidate.stored.voted_key == raft.ReplicaKey(id=LOCAL)

# --------------------------------------------------------------------------------------------------
# Kafka's KafkaRaftClientAutoJoinTest (4.3): an observer with controller.quorum.auto.join.enable joins by itself

AJ_LEADER, AJ_FOLLOWER, AJ_NEW = 5, 6, 7
"""Kafka's random leader id and the ids after it: the follower (``leader.id() + 1``) and the new voter (``+ 2``)."""


def auto_join_node(local: int, voter_ids: tuple[int, ...], *, generation: int = 0, auto_join: bool = True,
                   can_become_voter: bool = True) -> raft.RaftNode:
    """``withStartingVoters(voterSet, KRAFT_VERSION_1)``, ``withElectedLeader(1, AJ_LEADER)``, ``withAutoJoin`` and
    ``withCanBecomeVoter``; the local replica key's directory is of ``generation`` (1: a voter's id with a new disk)."""
    voters = voter_set(*voter_ids)
    log = RaftLog(snapshots=(Snapshot(end_offset=0, epoch=0, size=100),))
    records = FrozenMap({(0, 0): (KRaftVersionRecord(kraft_version=1), to_voters_record(voters))})
    return raft.new_dynamic_node(local, directory(local, generation), listeners(local),
                                 evolve(CONFIG, auto_join=auto_join), log, records,
                                 ElectionState(epoch=1, leader_id=AJ_LEADER), START, cluster_id=CLUSTER,
                                 can_become_voter=can_become_voter)


def _outstanding(node: raft.RaftNode, sent: tuple[Send, ...], kind: type) -> Send:
    """The one ``kind`` request among ``sent`` (what the last inputs' polls sent) that is still outstanding: the
    reference polls after each input, so the request Kafka's next ``poll`` sends may have left with the answer before."""
    found = [s for s in sends(sent, kind) if node.inflight.get(s.destination, (None,))[0] == s.message.correlation_id]
    assert len(found) == 1, (kind.__name__, sent, node.inflight)
    return found[0]


Driven = tuple[raft.RaftNode, int, tuple[Send, ...]]
"""The node, the time and what its last input's poll sent."""


def advance_time_and_complete_fetch(driven: Driven, expire: bool) -> Driven:
    """``advanceTimeAndCompleteFetch(1, AJ_LEADER, expire)``: a fetch timeout less 1 ms passes, the poll sends a Fetch
    (from the log end) and it is answered empty; with ``expire`` another fetch timeout less 1 ms passes, so the
    update-voter-set period is over."""
    node, now, sent = driven
    now += CONFIG.fetch_timeout_ms - 1
    node, out = raft.step(node, Tick(), now)
    send = _outstanding(node, sent + out, FetchRequest)
    assert (send.message.fetch_offset, send.message.current_leader_epoch) == (node.log.end_offset, 1)
    node, out = raft.step(node, FetchResponse(source=send.destination, leader_epoch=1, leader_id=AJ_LEADER,
                                              high_watermark=node.log.end_offset,
                                              correlation_id=send.message.correlation_id), now)
    if expire:
        now += CONFIG.fetch_timeout_ms - 1
    return node, now, out


def poll_and_send_add_voter(driven: Driven, generation: int = 0) -> tuple[Driven, Send]:
    """``pollAndSendAddVoter`` (``assertSentAddVoterRequest``): the poll sends AddRaftVoter to the leader with the local
    key, its listeners and ``ackWhenCommitted`` false, and no Fetch."""
    node, now, _ = driven
    node, out = raft.step(node, Tick(), now)
    send = _outstanding(node, out, AddRaftVoterRequest)
    req = send.message
    assert send.destination == AJ_LEADER and not sends(out, FetchRequest)
    assert (req.voter_id, req.voter_directory_id) == (node.local_id, directory(node.local_id, generation))
    assert req.listeners == endpoint_strings(node.local_id) and not req.ack_when_committed
    assert (req.cluster_id, req.source) == (CLUSTER, node.local_id)
    return (node, now, out), send


def poll_and_deliver_remove_voter(driven: Driven, old: int) -> Driven:
    """``pollAndDeliverRemoveVoter``: the poll sends RemoveRaftVoter of the old voter's key to the leader, answered
    NONE."""
    node, now, _ = driven
    node, out = raft.step(node, Tick(), now)
    send = _outstanding(node, out, RemoveRaftVoterRequest)
    req = send.message
    assert send.destination == AJ_LEADER and not sends(out, FetchRequest)
    assert (req.voter_id, req.voter_directory_id, req.cluster_id) == (old, directory(old), CLUSTER)
    node, out = raft.step(node, VoterChangeResponse(api=REMOVE_VOTER, source=AJ_LEADER,
                                                    correlation_id=req.correlation_id), now)
    return node, now, out


def poll_and_deliver_fetch_to_update_voter_set(driven: Driven, voters: VoterSet) -> Driven:
    """``pollAndDeliverFetchToUpdateVoterSet``: the next request is a Fetch from the log end, answered with a
    VotersRecord of ``voters`` there and a high watermark past it."""
    node, now, sent = driven
    node, out = raft.step(node, Tick(), now)
    send = _outstanding(node, sent + out, FetchRequest)
    end = node.log.end_offset
    assert (send.destination, send.message.fetch_offset) == (AJ_LEADER, end)
    node, out = raft.step(node, FetchResponse(source=AJ_LEADER, leader_epoch=1, leader_id=AJ_LEADER,
                                              high_watermark=end + 1,
                                              records=(raft_log.LogEntry(epoch=1, record=to_voters_record(voters)),),
                                              correlation_id=send.message.correlation_id), now)
    return node, now, out


def answered(driven: Driven, send: Send, error: Errors = Errors.NONE, later: int = 0) -> Driven:
    """``context.deliverResponse(..., RaftUtil.addVoterResponse(error, ...))`` for the AddRaftVoter ``send``."""
    node, now, _ = driven
    node, out = raft.step(node, VoterChangeResponse(api=ADD_VOTER, source=AJ_LEADER, error=error,
                                                    correlation_id=send.message.correlation_id), now + later)
    return node, now, out


def test_auto_remove_old_voter() -> None:
    old_follower = AJ_LEADER + 1  # the same id as the local node, with the directory it had before
    node = auto_join_node(old_follower, (AJ_LEADER, old_follower), generation=1)
    assert old_follower in node.voters and not node.is_voter  # its directory is not the voter's: an observer
    driven = advance_time_and_complete_fetch((node, START, ()), True)
    driven = poll_and_deliver_remove_voter(driven, old_follower)
    driven = advance_time_and_complete_fetch(driven, True)
    # The voter set did not change, so it asks again once the period has passed.
    poll_and_deliver_remove_voter(driven, old_follower)


def test_auto_add_new_voter() -> None:
    driven = advance_time_and_complete_fetch((auto_join_node(AJ_NEW, (AJ_LEADER, AJ_FOLLOWER)), START, ()), True)
    driven, _ = poll_and_send_add_voter(driven)
    driven = advance_time_and_complete_fetch(driven, True)  # the add timed out: the next request is a Fetch
    driven, send = poll_and_send_add_voter(driven)  # the period passed again with the voters unchanged
    # The answer may come before the fetch that brings the VotersRecord (KIP-1186: acknowledged once appended).
    driven = answered(driven, send)
    node, now, _ = driven
    assert node.state.update_voter_deadline == now + CONFIG.fetch_timeout_ms and AJ_LEADER not in node.backoff
    node, _, _ = poll_and_deliver_fetch_to_update_voter_set(driven, voter_set(AJ_LEADER, AJ_NEW))
    assert node.is_voter and node.voters == {AJ_LEADER, AJ_NEW}


def test_observer_removes_old_voter_and_auto_joins() -> None:
    old_follower = AJ_LEADER + 1
    node = auto_join_node(old_follower, (AJ_LEADER, old_follower), generation=1)
    driven = advance_time_and_complete_fetch((node, START, ()), True)
    driven = poll_and_deliver_remove_voter(driven, old_follower)
    driven = poll_and_deliver_fetch_to_update_voter_set(driven, voter_set(AJ_LEADER))
    assert driven[0].voters == {AJ_LEADER} and not driven[0].is_voter
    driven = advance_time_and_complete_fetch(driven, True)
    driven, send = poll_and_send_add_voter(driven, generation=1)
    driven = answered(driven, send)
    new_key = raft.ReplicaKey(id=old_follower, directory_id=directory(old_follower, 1))
    joined = VoterSet(voters=FrozenMap({AJ_LEADER: voter_node(AJ_LEADER),
                                        old_follower: evolve(voter_node(old_follower), voter_key=new_key)}))
    driven = poll_and_deliver_fetch_to_update_voter_set(driven, joined)
    assert driven[0].is_voter
    # A voter now: once the period passes again its next request is a Fetch (its voter node is up to date).
    node, now, sent = advance_time_and_complete_fetch(driven, True)
    node, out = raft.step(node, Tick(), now)
    assert _outstanding(node, sent + out, FetchRequest) and not sends(out, AddRaftVoterRequest)


def _only_fetches_after_the_period(node: raft.RaftNode) -> None:
    """Kafka's common end: a fetch completed, a fetch timeout less 1 ms later (the period over) the poll sends a Fetch
    from the log end, and neither AddRaftVoter nor RemoveRaftVoter."""
    node, now, sent = advance_time_and_complete_fetch((node, START, ()), False)
    now += CONFIG.fetch_timeout_ms - 1
    assert now >= node.state.update_voter_deadline
    node, out = raft.step(node, Tick(), now)
    assert not sends(out, AddRaftVoterRequest) and not sends(out, RemoveRaftVoterRequest)
    assert _outstanding(node, sent + out, FetchRequest).message.fetch_offset == node.log.end_offset


def test_observers_do_not_auto_join() -> None:
    _only_fetches_after_the_period(auto_join_node(AJ_NEW, (AJ_LEADER, AJ_FOLLOWER), can_become_voter=False))


def test_observer_does_not_add_itself_when_auto_join_disabled() -> None:
    _only_fetches_after_the_period(auto_join_node(AJ_NEW, (AJ_LEADER, AJ_FOLLOWER), auto_join=False))


def test_observer_does_not_auto_join_with_kraft_version0() -> None:
    static = raft.new_node(AJ_NEW, frozenset((AJ_LEADER, AJ_FOLLOWER)),
                           FrozenMap({i: endpoint_strings(i) for i in (AJ_LEADER, AJ_FOLLOWER, AJ_NEW)}),
                           evolve(CONFIG, auto_join=True), stored=ElectionState(epoch=1, leader_id=AJ_LEADER),
                           now=START, directory_id=directory(AJ_NEW), cluster_id=CLUSTER)
    _only_fetches_after_the_period(evolve(static, can_become_voter=True))


def test_auto_join_answers() -> None:
    """Not one of Kafka's tests; Kafka 4.3 ``handleAddVoterResponse`` / ``handleRemoveVoterResponse``: REQUEST_TIMED_OUT
    and DUPLICATE_VOTER (VOTER_NOT_FOUND for a removal) restart the update-voter-set period like NONE; another error
    (NOT_LEADER_OR_FOLLOWER) is unexpected: the leader's connection backs off and the period is not restarted."""
    for error in (Errors.REQUEST_TIMED_OUT, Errors.DUPLICATE_VOTER, Errors.NOT_LEADER_OR_FOLLOWER):
        driven = advance_time_and_complete_fetch((auto_join_node(AJ_NEW, (AJ_LEADER, AJ_FOLLOWER)), START, ()), True)
        driven, send = poll_and_send_add_voter(driven)
        node, now, _ = answered(driven, send, error, later=10)
        restarted = now if error == Errors.NOT_LEADER_OR_FOLLOWER else now + 10
        assert node.state.update_voter_deadline == restarted + CONFIG.fetch_timeout_ms, error
        assert (AJ_LEADER in node.backoff) == (error == Errors.NOT_LEADER_OR_FOLLOWER), error
    old = AJ_LEADER + 1
    for error, backs_off in ((Errors.VOTER_NOT_FOUND, False), (Errors.DUPLICATE_VOTER, True)):
        node, now, _ = advance_time_and_complete_fetch((auto_join_node(old, (AJ_LEADER, old), generation=1), START,
                                                        ()), True)
        node, out = raft.step(node, Tick(), now)
        req = _outstanding(node, out, RemoveRaftVoterRequest).message
        node, _ = raft.step(node, VoterChangeResponse(api=REMOVE_VOTER, source=AJ_LEADER, error=error,
                                                      correlation_id=req.correlation_id), now + 10)
        assert (AJ_LEADER in node.backoff) == backs_off, error


def test_auto_join_through_the_leader() -> None:
    """Not one of Kafka's tests: the observer's AddRaftVoter reaches a reference leader (Kafka 4.3
    ``KafkaRaftClient.handleAddVoterRequest``), which asks it its ApiVersions, appends the voter set with it and answers
    at once (``ackWhenCommitted`` false); the answer carries the leader as its source."""
    node, now = prepared_for_add(LOCAL, FOLLOWER)
    observer = evolve(dynamic_node(NEW_VOTER, voter_set(LOCAL, FOLLOWER), ElectionState(epoch=node.state.epoch,
                                                                                         leader_id=LOCAL), now=now),
                      config=evolve(CONFIG, auto_join=True), can_become_voter=True)
    observer, out = raft.step(observer, Tick(), now + CONFIG.fetch_timeout_ms)
    request = only(out, AddRaftVoterRequest)
    node, out = raft.step(node, request, now)
    api = only(out, ApiVersionsRequest)
    node, out = raft.step(node, ApiVersionsResponse(source=NEW_VOTER, kraft_version_range=(0, 1),
                                                    correlation_id=api.correlation_id), now)
    answer = voter_change_answer(out, ADD_VOTER)
    assert (answer.source, answer.error, answer.correlation_id) == (LOCAL, Errors.NONE, request.correlation_id)
    assert node.voters == {LOCAL, FOLLOWER, NEW_VOTER}
    observer, _ = raft.step(observer, answer, now + CONFIG.fetch_timeout_ms)
    assert observer.state.update_voter_deadline == now + 2 * CONFIG.fetch_timeout_ms


# --------------------------------------------------------------------------------------------------
# The kraft.version 0 -> 1 upgrade (``upgradeKRaftVersion``, ``LeaderState.maybeAppendUpgradedKRaftVersion``)


def _refused(kind: type, call: Any) -> Exception:
    """The exception ``call()`` raises, which must be a ``kind`` (an AssertionError otherwise, which the mutant layers
    count as a failing scenario)."""
    try:
        call()
    except kind as exc:
        return exc
    raise AssertionError(f"expected {kind.__name__}")


def upgradable_leader(updated: tuple[int, ...] = (FOLLOWER, NEW_VOTER)) -> tuple[raft.RaftNode, int]:
    """``withStartingVoters(LOCAL, 2, 3 without directory ids, KRAFT_VERSION_0)``, ``unattachedToLeader``, a fetch
    from each voter (the high watermark, previous leaders fenced), then UpdateRaftVoter from the ``updated`` ones with
    their listeners and kraft.version range 0 to 1, each answered NONE."""
    node, now = elect(static_node(LOCAL, (LOCAL, FOLLOWER, NEW_VOTER), ElectionState(epoch=3)), START)
    for voter in (FOLLOWER, NEW_VOTER):
        node, _ = fetch(node, voter, now)
    for voter in updated:
        node, out = raft.step(node, update_voter(voter, node.state.epoch), now)
        answer = only(out, UpdateRaftVoterResponse)
        assert (answer.error, answer.leader_id, answer.leader_epoch) == (Errors.NONE, LOCAL, node.state.epoch)
    return node, now


def _upgrade(epoch: int, version: int = 1, validate_only: bool = False) -> UpgradeKRaftVersion:
    return UpgradeKRaftVersion(epoch=epoch, kraft_version=version, validate_only=validate_only)


def test_kraft_upgrade_version() -> None:
    node, now = upgradable_leader()
    end = node.log.end_offset
    op = _upgrade(node.state.epoch)
    assert raft.kraft_version_upgraded(node, op)
    node, _ = raft.step(node, op, now)
    assert raft.kraft_version(node) == 1
    # One control batch: the kraft.version, then the voter set with every voter's directory id and listeners.
    assert entries(node)[end:] == [KRaftVersionRecord(kraft_version=1),
                                   to_voters_record(voter_set(LOCAL, FOLLOWER, NEW_VOTER))]
    assert node.dynamic is not None and raft_voter_history.last_kraft_version(node.dynamic.control) == 1
    assert node.state.volatile_voters is None and node.voters == {LOCAL, FOLLOWER, NEW_VOTER}


def test_update_voter_after_kraft_version_upgrade() -> None:
    node, now = upgradable_leader()
    node, _ = raft.step(node, _upgrade(node.state.epoch), now)
    assert raft.kraft_version(node) == 1
    for voter in (FOLLOWER, NEW_VOTER):  # the high watermark passes the upgrade's records
        node, _ = fetch(node, voter, now)
    assert node.state.high_watermark == node.log.end_offset
    end = node.log.end_offset
    two = (f"ANOTHER_LISTENER://localhost:{8990 + FOLLOWER}", f"CONTROLLER://localhost:{9990 + FOLLOWER}")
    node, out = raft.step(node, update_voter(FOLLOWER, node.state.epoch, listeners=two), now)
    assert only(out, UpdateRaftVoterResponse).error == Errors.NONE
    written = entries(node)[end:]  # at kraft.version 1 the update is written as a VotersRecord
    assert len(written) == 1 and isinstance(written[0], VotersRecord)
    assert written[0].voters[FOLLOWER - 1].listeners == raft.raft_voters.listeners_of(two)


def test_invalid_kraft_upgrade_version() -> None:
    node, now = elect(static_node(LOCAL, (LOCAL, FOLLOWER, NEW_VOTER), ElectionState(epoch=3)), START)
    # None of the remote voters said it supports kraft.version 1.
    assert raft.kraft_version(node) == 0
    _refused(InvalidUpdateVersionError, lambda: raft.step(node, _upgrade(node.state.epoch), now))
    node, now = upgradable_leader(updated=(FOLLOWER,))
    # Only one of them did.
    assert raft.kraft_version(node) == 0
    _refused(InvalidUpdateVersionError, lambda: raft.step(node, _upgrade(node.state.epoch), now))


def _leader_state_voters(updated: tuple[int, ...]) -> tuple[VoterSet, VoterSet]:
    """``LeaderStateTest``'s ``localWithRemoteVoterSet(1, 2, without directory ids)`` as persisted at kraft.version
    0, and the leader's in-memory voters (its own node in place) with the ``updated`` followers' nodes."""
    persisted = VoterSet(voters=FrozenMap({v: VoterNode(voter_key=raft.ReplicaKey(id=v), listeners=listeners(v),
                                                        supported_kraft_version=(0, 0)) for v in (0, 1, 2)}))
    local = voter_node(0)
    volatile = raft.raft_reconfig.volatile_voters_at_epoch_start(persisted, local, 0)
    for follower in updated:
        volatile = raft.raft_voters.update_voter_ignoring_directory_id(volatile, voter_node(follower))
    return persisted, volatile


def test_invalid_maybe_append_upgraded_kraft_version() -> None:
    """``LeaderStateTest.testInvalidMaybeAppendUpgradedKRaftVersion``: the leader of epoch 5."""
    persisted, volatile = _leader_state_voters(())
    rule = raft.raft_reconfig.maybe_append_upgraded_kraft_version
    _refused(InvalidUpdateVersionError, lambda: rule(5, None, volatile, 5, 1, 0, persisted, False))
    _refused(NotLeaderError, lambda: rule(5, None, volatile, 4, 1, 0, persisted, False))
    _refused(IllegalUpgradeArgumentError, lambda: rule(5, None, volatile, 6, 1, 0, persisted, False))
    assert rule(5, None, volatile, 5, 1, 1, persisted, False) == raft.raft_reconfig.KRaftUpgrade(upgraded=False)


def test_maybe_append_upgraded_kraft_version() -> None:
    """``LeaderStateTest.testMaybeAppendUpgradedKRaftVersion``: both followers updated, the upgrade writes control
    records; asked again (the leader's upgrade state is then the requested version) it is a no-op."""
    persisted, volatile = _leader_state_voters((1, 2))
    rule = raft.raft_reconfig.maybe_append_upgraded_kraft_version
    upgrade = rule(5, None, volatile, 5, 1, 0, persisted, False)
    assert upgrade.upgraded and upgrade.records == (KRaftVersionRecord(kraft_version=1), to_voters_record(volatile))
    assert rule(5, 1, None, 5, 1, 0, persisted, False) == raft.raft_reconfig.KRaftUpgrade(upgraded=False)


def test_kraft_upgrade_validate_only_and_refusals() -> None:
    """Not one of Kafka's tests; Kafka 4.3 ``KafkaRaftClient.upgradeKRaftVersion`` and ``LeaderState``: validate-only
    checks and writes nothing; a node that is not the leader throws NotLeaderException; a concurrent upgrade to
    another version and a downgrade throw InvalidUpdateVersionException; a leader whose own directory id is unknown
    cannot write a kraft.version 1 voter set (IllegalStateException)."""
    node, now = upgradable_leader()
    end = node.log.end_offset
    op = _upgrade(node.state.epoch, validate_only=True)
    assert raft.kraft_version_upgraded(node, op)
    checked, _ = raft.step(node, op, now)
    assert checked.log.end_offset == end and raft.kraft_version(checked) == 0 and checked.dynamic is None
    upgraded, _ = raft.step(node, _upgrade(node.state.epoch), now)
    assert not raft.kraft_version_upgraded(upgraded, _upgrade(node.state.epoch))  # a no-op once asked
    _refused(InvalidUpdateVersionError, lambda: raft.step(upgraded, _upgrade(node.state.epoch, 0), now))
    _refused(IllegalUpgradeArgumentError, lambda: raft.step(node, _upgrade(node.state.epoch, 2), now))
    follower = static_node(FOLLOWER, (LOCAL, FOLLOWER, NEW_VOTER), ElectionState(epoch=4, leader_id=LOCAL))
    _refused(NotLeaderError, lambda: raft.step(follower, _upgrade(4), START))
    anonymous = evolve(node, directory_id=None, state=evolve(node.state, volatile_voters=evolve(
        node.state.volatile_voters, voters=node.state.volatile_voters.voters.set(LOCAL, evolve(
            node.state.volatile_voters.voters[LOCAL], voter_key=raft.ReplicaKey(id=LOCAL))))))
    _refused(UpgradeStateError, lambda: raft.step(anonymous, _upgrade(node.state.epoch), now))


def _upgraded_leader_log() -> tuple[raft_log.LogEntry, ...]:
    node, now = upgradable_leader()
    node, _ = raft.step(node, _upgrade(node.state.epoch), now)
    return node.log.entries


def test_follower_reads_the_kraft_upgrade() -> None:
    """Not one of Kafka's tests; Kafka 4.3 ``KRaftControlRecordStateMachine`` runs for every node: a follower with
    static voters that fetches the upgrade's records reads them (``partitionState.updateState``), so its kraft.version
    is 1 and its voters those of the VotersRecord; its quorum-state file is then written at data version 1. A
    truncation of the uncommitted upgrade takes it back to kraft.version 0 and its static voters (``truncateNewEntries``);
    a restart reads the flushed upgrade anew."""
    log = _upgraded_leader_log()
    node = static_node(FOLLOWER, (LOCAL, FOLLOWER, NEW_VOTER), ElectionState(epoch=4, leader_id=LOCAL))
    node, out = raft.step(node, Tick(), START)
    cid = only(out, FetchRequest).correlation_id
    node, _ = raft.step(node, FetchResponse(source=LOCAL, leader_epoch=4, leader_id=LOCAL, high_watermark=0,
                                            records=log, correlation_id=cid), START)
    assert raft.kraft_version(node) == 1 and node.dynamic is not None
    assert raft_voter_history.last_voter_set(node.dynamic.control) == voter_set(LOCAL, FOLLOWER, NEW_VOTER)
    assert node.voters == {LOCAL, FOLLOWER, NEW_VOTER} and node.voter_endpoints[NEW_VOTER] == endpoint_strings(NEW_VOTER)
    assert not raft_reconfig_client.should_send_update_voter(node)  # its own node in the voter set is up to date
    restarted = raft.restart(node, START + 1)
    assert raft.kraft_version(restarted) == 1 and restarted.voters == {LOCAL, FOLLOWER, NEW_VOTER}
    assert read_quorum_state(raft.quorum_state_file(restarted)).data_version == 1
    # A new leader of epoch 5 whose log ends before the upgrade: the follower truncates it.
    cid, _ = node.inflight[LOCAL]
    node, _ = raft.step(node, FetchResponse(source=LOCAL, leader_epoch=5, leader_id=NEW_VOTER, high_watermark=0,
                                            leader_endpoints=endpoint_strings(NEW_VOTER), correlation_id=cid),
                        START + 2)
    node, _ = raft.step(node, Tick(), START + 2)
    cid, _ = node.inflight[NEW_VOTER]
    node, _ = raft.step(node, FetchResponse(source=NEW_VOTER, leader_epoch=5, leader_id=NEW_VOTER, high_watermark=0,
                                            diverging_epoch=(4, len(log) - 2), correlation_id=cid), START + 2)
    assert node.log.end_offset == len(log) - 2 and raft.kraft_version(node) == 0
    assert node.voters == {LOCAL, FOLLOWER, NEW_VOTER} and node.voter_endpoints == static_node(
        FOLLOWER, (LOCAL, FOLLOWER, NEW_VOTER)).voter_endpoints
    # kraft.version 0 again: it tells each new leader its endpoints
    assert raft_reconfig_client.should_send_update_voter(node)
    assert raft.restart(node, START + 3).dynamic is None


def test_static_follower_loads_an_upgraded_snapshot() -> None:
    """Not one of Kafka's tests; Kafka 4.3: once upgraded, the leader's snapshots start with the kraft.version and voter
    set in force (``createSnapshot``: ``kraftVersionAtOffset``, ``voterSetAtOffset``), so a node with static voters that
    loads one from the leader (``FetchSnapshot``) reads them (``partitionState.updateState``) and runs kraft.version 1."""
    leader, now = upgradable_leader()
    leader, _ = raft.step(leader, UpgradeKRaftVersion(epoch=leader.state.epoch, kraft_version=1), now)
    for voter in (FOLLOWER, NEW_VOTER):
        leader, _ = fetch(leader, voter, now)
    end, epoch = leader.log.end_offset, leader.state.epoch
    leader, _ = raft.step(leader, raft.CreateSnapshot(end_offset=end, epoch=epoch, size=10), now)
    leader, _ = raft.step(leader, raft.DeleteBeforeSnapshot(end_offset=end, epoch=epoch), now)
    node = static_node(NEW_VOTER, (LOCAL, FOLLOWER, NEW_VOTER), ElectionState(epoch=epoch, leader_id=LOCAL))
    node, out = raft.step(node, Tick(), now)
    for _ in range(2):  # the Fetch is answered with the snapshot id, the FetchSnapshot with the whole snapshot
        request = out[0].message
        leader, answers = raft.step(leader, request, now)
        node, out = raft.step(node, only(answers, type(answers[0].message)), now)
    assert node.log.start_offset == end and raft.kraft_version(node) == 1
    assert raft_voter_history.last_voter_set(node.dynamic.control) == voter_set(LOCAL, FOLLOWER, NEW_VOTER)
    assert raft.restart(node, now).voters == {LOCAL, FOLLOWER, NEW_VOTER}


# --------------------------------------------------------------------------------------------------
# Where Kafka 4.3.1's client at kraft.version 1 showed the reference wrong (issue 23, D1-D7;
# tests/test_kafka_raft_dynamic.py runs each against Kafka)


def test_vote_and_begin_quorum_epoch_requests_name_the_voter_directory_id() -> None:
    """D1, not one of Kafka's tests: ``buildVoteRequest(remoteVoter, ..)`` and ``buildBeginQuorumEpochRequest(
    remoteVoter)`` address each voter by its key in the voter set (``RaftUtil.singletonVoteRequest``,
    ``singletonBeginQuorumEpochRequest``); static voters have no directory id."""
    node = dynamic_node(LOCAL, voter_set(LOCAL, FOLLOWER, NEW_VOTER), ElectionState(epoch=3))
    node, _ = raft.step(node, Tick(), node.state.election_deadline)  # Prospective: the pre-votes go next poll
    node, out = raft.step(node, Tick(), node.state.election_deadline - 1)
    assert {(s.destination, s.message.voter_directory_id) for s in sends(out, VoteRequest)} == {
        (FOLLOWER, directory(FOLLOWER)), (NEW_VOTER, directory(NEW_VOTER))}
    node, now = leader(LOCAL, FOLLOWER, NEW_VOTER)  # its first BeginQuorumEpoch requests went: resent on their timer
    node, out = raft.step(node, Tick(), now + CONFIG.begin_quorum_epoch_timeout_ms)
    assert {(s.destination, s.message.voter_directory_id) for s in sends(out, BeginQuorumEpochRequest)} == {
        (FOLLOWER, directory(FOLLOWER)), (NEW_VOTER, directory(NEW_VOTER))}
    static = raft.new_node(LOCAL, frozenset((LOCAL, FOLLOWER)),
                           FrozenMap({i: endpoint_strings(i) for i in (LOCAL, FOLLOWER)}), CONFIG,
                           stored=ElectionState(epoch=3), now=START, directory_id=directory(LOCAL))
    static, _ = raft.step(static, Tick(), static.state.election_deadline)
    static, out = raft.step(static, Tick(), static.state.election_deadline - 1)
    assert [s.message.voter_directory_id for s in sends(out, VoteRequest)] == [None]


def test_kraft_version1_candidate_keeps_its_directory_id_in_the_quorum_state_file() -> None:
    """D2, not one of Kafka's tests: ``QuorumState.initialize`` ends with ``durableTransitionTo`` its first state, whose
    vote at kraft.version 1 is the local replica key, directory id included (``ElectionState.toQuorumStateData``
    version 1); at kraft.version 0 the file keeps the voted id alone (``test_kraft_version0_quorum_state_file_keeps_the
    _voted_id_only``)."""
    vote = ElectionState(epoch=3, voted_key=raft.ReplicaKey(id=LOCAL, directory_id=directory(LOCAL)))
    node = dynamic_node(LOCAL, voter_set(LOCAL, FOLLOWER, NEW_VOTER), vote)
    assert node.stored == vote  # the file Kafka reads back, written anew by ``initialize``
    static = raft.new_node(LOCAL, frozenset((LOCAL, FOLLOWER)),
                           FrozenMap({i: endpoint_strings(i) for i in (LOCAL, FOLLOWER)}), CONFIG, stored=vote,
                           now=START, directory_id=directory(LOCAL))
    assert static.stored.voted_key == raft.ReplicaKey(id=LOCAL)


def test_the_fetch_that_commits_a_voter_change_answers_the_admin_first() -> None:
    """D3 (``testAddVoter``, ``testRemoveVoter``'s last fetch): ``tryCompleteFetchRequest`` ->
    ``onUpdateLeaderHighWatermark`` -> ``AddVoterHandler`` / ``RemoveVoterHandler.highWatermarkUpdated`` complete the
    admin's answer before ``buildFetchResponse``."""
    node, now = prepared_for_add(LOCAL, FOLLOWER)
    node, _ = asked_api_versions(node, now)
    node, _ = api_versions_answer(node, now)
    node, out = raft.step(node, FetchRequest(replica_id=FOLLOWER, replica_directory_id=directory(FOLLOWER),
                                             current_leader_epoch=node.state.epoch,
                                             fetch_offset=node.log.end_offset, last_fetched_epoch=node.state.epoch,
                                             max_wait_ms=0, cluster_id=CLUSTER), now)
    assert [(s.destination, type(s.message)) for s in out] == [(ADMIN, VoterChangeResponse), (FOLLOWER, FetchResponse)]
    node, now = leader(LOCAL, FOLLOWER, NEW_VOTER)
    node, _ = fetch(node, FOLLOWER, now)
    node, _ = raft.step(node, remove_voter(FOLLOWER), now)
    node, out = raft.step(node, FetchRequest(replica_id=NEW_VOTER, replica_directory_id=directory(NEW_VOTER),
                                             current_leader_epoch=node.state.epoch,
                                             fetch_offset=node.log.end_offset, last_fetched_epoch=node.state.epoch,
                                             max_wait_ms=0, cluster_id=CLUSTER), now)
    assert [(s.destination, type(s.message)) for s in out] == [(ADMIN, VoterChangeResponse), (NEW_VOTER, FetchResponse)]


def test_voter_change_answers_without_a_message_of_their_own() -> None:
    """D4 (``testAddVoterToNotLeader``, ``testRemoveVoterToNotLeader``): ``validateLeaderOnlyRequest``'s refusal is
    built as ``new AddRaftVoterResponseData().setErrorCode(..)``, message ""; D5 (``testAddVoterTimeout``,
    ``testRemoveVoterTimedOut``, ``testAddVoterFailsWhenLosingLeadership``): a pending change answered with no message
    gets ``Errors.message()`` (``RaftUtil.addVoterResponse`` / ``removeVoterResponse``); success gets none."""
    follower = dynamic_node(LOCAL, voter_set(LOCAL, FOLLOWER), ElectionState(epoch=3, leader_id=FOLLOWER))
    for request, api in ((add_voter(), ADD_VOTER), (remove_voter(FOLLOWER), REMOVE_VOTER)):
        _, out = raft.step(follower, request, START)
        answer = voter_change_answer(out, api)
        assert (answer.error, answer.error_message) == (Errors.NOT_LEADER_OR_FOLLOWER, "")
    node, now = leader(LOCAL, FOLLOWER, NEW_VOTER)
    node, _ = fetch(node, FOLLOWER, now)
    node, _ = raft.step(node, remove_voter(FOLLOWER), now)
    _, out = raft.step(node, Tick(), now + CONFIG.request_timeout_ms)
    answer = voter_change_answer(out, REMOVE_VOTER)
    assert (answer.error, answer.error_message) == (Errors.REQUEST_TIMED_OUT, "The request timed out.")
    _, out = raft.step(node, Resign(epoch=node.state.epoch), now)
    answer = voter_change_answer(out, REMOVE_VOTER)
    assert (answer.error, answer.error_message) == (Errors.NOT_LEADER_OR_FOLLOWER, raft.NOT_LEADER_MESSAGE)
    _, out = raft.step(node, FetchRequest(replica_id=NEW_VOTER, replica_directory_id=directory(NEW_VOTER),
                                          current_leader_epoch=node.state.epoch,
                                          fetch_offset=node.log.end_offset, last_fetched_epoch=node.state.epoch,
                                          max_wait_ms=0, cluster_id=CLUSTER), now)
    assert voter_change_answer(out, REMOVE_VOTER).error_message is None


def test_observer_unattached_send_fetch_to_bootstrap_servers() -> None:
    """D6 (``KafkaRaftClientTest.testObserverUnattachedSendFetchToBootstrapServers``,
    ``KafkaRaftClientReconfigTest.testObserverDiscoversLeaderWithUnknownVoters``: the destination is -2): a
    kraft.version 1 node fetches from ``controller.quorum.bootstrap.servers``, numbered -2, -3, ... in their order
    (``KafkaRaftClient``'s constructor), by default the initial voters' addresses in id order; the answer of a
    bootstrap server names the leader, which the observer then follows. A restart keeps them; none is an error."""
    observer = dynamic_node(4, voter_set(FOLLOWER, NEW_VOTER), ElectionState(epoch=0))
    assert observer.dynamic.bootstrap_servers == (-2, -3)
    for draw, server in ((0, -2), (1, -3), (2, -2)):
        _, out = raft.step(observer, Tick(), START, bootstrap=draw)
        assert [(s.destination, type(s.message)) for s in out] == [(server, FetchRequest)]
    node, out = raft.step(observer, Tick(), START)
    node, _ = raft.step(node, FetchResponse(source=-2, partition_error=Errors.FENCED_LEADER_EPOCH, leader_epoch=0,
                                            leader_id=FOLLOWER, leader_endpoints=endpoint_strings(FOLLOWER),
                                            correlation_id=out[0].message.correlation_id), START + 1)
    assert isinstance(node.state, Follower) and node.state.leader_id == FOLLOWER
    assert raft.restart(node, START + 2).dynamic.bootstrap_servers == (-2, -3)
    records = FrozenMap({(0, 0): (KRaftVersionRecord(kraft_version=1), to_voters_record(voter_set(FOLLOWER)))})
    try:
        raft.new_dynamic_node(4, directory(4), listeners(4), CONFIG, RaftLog(), records, bootstrap_servers=())
    except ValueError as exc:
        assert "bootstrap servers" in str(exc)
    else:
        raise AssertionError("a kraft.version 1 node without bootstrap servers started")


def test_voter_keys_in_hash_order() -> None:
    """D7, not one of Kafka's tests: messages print ``VoterSet.voterKeys()``, a ``HashSet`` filled from the voters
    ``HashMap`` that ``fromVotersRecord`` builds in the record's order; the orders below are Kafka 4.3.1's for these
    keys (``testAddVoterWithExistingVoter``'s DUPLICATE_VOTER message lists them so)."""
    def order(*ids: int) -> list[int]:
        record = VotersRecord(voters=tuple(voter_node(i) for i in ids))
        return [key.id for key in raft_voters.voter_keys_in_hash_order(raft_voters.from_voters_record(record))]
    assert order(1, 2, 3) == [1, 3, 2] and order(2, 3, 4) == [4, 3, 2] and order(1, 2, 3, 4, 5) == [1, 5, 4, 3, 2]
    assert order(33, 17, 1) == [33, 17, 1] and order(17, 1, 33) == [17, 1, 33]  # one bucket: the record's order
    node, now = leader(LOCAL, FOLLOWER, NEW_VOTER)
    node, _ = fetch(node, FOLLOWER, now)
    _, out = raft.step(node, add_voter(voter=FOLLOWER, voter_directory_id=directory(FOLLOWER, 1)), now)
    listed = voter_change_answer(out, ADD_VOTER).error_message.split("set of voters ")[1]
    assert [int(part.split(",")[0]) for part in listed.split("ReplicaKey(id=")[1:]] == [1, 3, 2]


def test_a_fetch_without_the_voters_directory_id_is_an_observers() -> None:
    """D8, not one of Kafka's tests (tests/test_kafka_raft_upgrade.py runs it against Kafka): once the voter set names
    directory ids, ``LeaderState.updateReplicaState`` -> ``getOrCreateReplicaState`` finds a voter only when
    ``ReplicaState.matchesKey``: FOLLOWER's fetch without its directory id (or with another) is an observer's, which
    moves neither the high watermark nor check quorum, and DescribeQuorum lists it among the observers; its fetch
    under its own key is the voter's."""
    node, now = leader(LOCAL, FOLLOWER, NEW_VOTER)
    end, deadline = node.log.end_offset, node.state.check_quorum_deadline
    for directory_id in (None, directory(FOLLOWER, 1)):
        req = FetchRequest(replica_id=FOLLOWER, replica_directory_id=directory_id,
                           current_leader_epoch=node.state.epoch, fetch_offset=end,
                           last_fetched_epoch=node.state.epoch, cluster_id=CLUSTER)
        node, out = raft.step(node, req, now + 1)
        assert only(out, FetchResponse).partition_error == Errors.NONE
    assert node.state.high_watermark == -1 and node.state.fetched_voters == frozenset()
    assert node.state.check_quorum_deadline == deadline and node.state.voter_states[FOLLOWER].end_offset == -1
    assert {k: s.end_offset for k, s in node.state.observer_states.items()} == {
        raft.ReplicaKey(id=FOLLOWER): end, raft.ReplicaKey(id=FOLLOWER, directory_id=directory(FOLLOWER, 1)): end}
    _, out = raft.step(node, DescribeQuorumRequest(source=ADMIN), now + 2)
    described = only(out, DescribeQuorumResponse)
    assert [(r.replica_id, r.log_end_offset) for r in described.current_voters] == [
        (LOCAL, end), (FOLLOWER, -1), (NEW_VOTER, -1)]
    assert [(r.replica_id, r.log_end_offset) for r in described.observers] == [(FOLLOWER, end), (FOLLOWER, end)]
    node, _ = fetch(node, FOLLOWER, now + 3, end)
    assert node.state.high_watermark == end and node.state.voter_states[FOLLOWER].end_offset == end


def test_lone_voter_elected_by_its_poll_writes_its_records_at_the_next_poll() -> None:
    """Not one of Kafka's tests (tests/test_kafka_raft_dynamic.py runs it against Kafka): a follower that reads a voter
    set of itself alone is elected by its fetch timeout in that poll (``pollFollowerAsVoter`` ..
    ``onBecomeLeader``); its start-of-epoch records wait in the accumulator for the next poll (``pollLeader``:
    ``maybeAppendBatches``), unlike a leader elected by a vote answer, written by the poll after the answer."""
    node = dynamic_node(LOCAL, voter_set(LOCAL, FOLLOWER), ElectionState(epoch=3, leader_id=FOLLOWER))
    assert isinstance(node.state, Follower)
    alone = (raft_log.LogEntry(epoch=3, record=to_voters_record(voter_set(LOCAL))),)
    node, out = raft.step(node, Tick(), START)
    node, _ = raft.step(node, FetchResponse(source=FOLLOWER, leader_epoch=3, leader_id=FOLLOWER, high_watermark=1,
                                            records=alone, correlation_id=only(out, FetchRequest).correlation_id),
                        START + 1)
    assert node.voters == {LOCAL} and node.log.end_offset == 1
    node, _ = raft.step(node, Tick(), node.state.fetch_deadline)
    assert isinstance(node.state, Leader) and node.state.epoch == 4 and node.log.end_offset == 1
    assert isinstance(node.state.unwritten[0][0], LeaderChangeMessage)
    node, _ = raft.step(node, Tick(), node.state.check_quorum_deadline - 1)
    assert node.state.unwritten == () and entries(node)[1] == LeaderChangeMessage(leader_id=LOCAL, voters=(LOCAL,),
                                                                                 granting_voters=(LOCAL,))


def test_removed_voter_cannot_restart_from_its_own_vote() -> None:
    """Not one of Kafka's tests (tests/test_kafka_raft_dynamic.py runs it against Kafka): ``QuorumState.initialize``
    restarts a stored self-vote as Candidate before looking at a known leader, and ``CandidateState``'s constructor
    throws IllegalArgumentException when the local replica is no voter; the reference raises ValueError."""
    vote = ElectionState(epoch=3, leader_id=FOLLOWER, voted_key=raft.ReplicaKey(id=NEW_VOTER,
                                                                                directory_id=directory(NEW_VOTER)))
    for start in (lambda: dynamic_node(NEW_VOTER, voter_set(LOCAL, FOLLOWER), vote),
                  lambda: raft.new_node(NEW_VOTER, frozenset((LOCAL, FOLLOWER)),
                                        FrozenMap({i: endpoint_strings(i) for i in (LOCAL, FOLLOWER)}), CONFIG,
                                        stored=vote, now=START, directory_id=directory(NEW_VOTER))):
        try:
            start()
        except ValueError as exc:
            assert "must be in the set of voters" in str(exc)
        else:
            raise AssertionError("a removed voter restarted from its own vote")
    voter = evolve(vote, leader_id=LOCAL, voted_key=raft.ReplicaKey(id=FOLLOWER, directory_id=directory(FOLLOWER)))
    assert isinstance(dynamic_node(FOLLOWER, voter_set(LOCAL, FOLLOWER), voter).state, Candidate)  # a voter: fine


def test_lone_leader_writes_the_added_voter_after_its_check_quorum_test() -> None:
    """Not one of Kafka's tests (tests/test_kafka_raft_long_dynamic.py runs it against Kafka): the VotersRecord that
    adds a voter to a lone leader waits in the accumulator (``appendVotersRecord``) until the poll's
    ``maybeAppendBatches``, after ``pollLeader``'s check-quorum test, which still counts one voter and never expires."""
    node, now = leader(LOCAL)
    node, _ = fetch(node, NEW_VOTER, now)
    now = node.state.check_quorum_deadline  # no fetch since: two voters would resign
    node, _ = asked_api_versions(node, now)
    node, out = api_versions_answer(node, now)
    assert isinstance(node.state, Leader) and node.voters == {LOCAL, NEW_VOTER}, node.state
    assert entries(node)[-1] == to_voters_record(voter_set(LOCAL, NEW_VOTER)) and not sends(out, VoterChangeResponse)


def test_a_removal_committed_by_the_leaders_flush_answers_the_admin_first() -> None:
    """Not one of Kafka's tests (tests/test_kafka_raft_long_dynamic.py runs it against Kafka): removing the only other
    voter, the poll's flush commits the VotersRecord (``updateLeaderEndOffsetAndTimestamp`` ->
    ``onUpdateLeaderHighWatermark``): ``RemoveVoterHandler.highWatermarkUpdated`` answers before
    ``fetchPurgatory.completeAll`` answers the parked fetches."""
    node, now = leader(LOCAL, FOLLOWER)
    node, _ = fetch(node, FOLLOWER, now)
    end, hw = node.log.end_offset, node.state.high_watermark
    node, out = raft.step(node, FetchRequest(replica_id=NEW_VOTER, replica_directory_id=directory(NEW_VOTER),
                                             current_leader_epoch=node.state.epoch, fetch_offset=end,
                                             last_fetched_epoch=node.state.epoch, max_wait_ms=500, high_watermark=hw,
                                             cluster_id=CLUSTER), now)
    assert out == () and len(node.parked) == 1
    node, out = raft.step(node, remove_voter(FOLLOWER), now)
    assert [(s.destination, type(s.message)) for s in out] == [(ADMIN, VoterChangeResponse), (NEW_VOTER, FetchResponse)]
    assert voter_change_answer(out, "RemoveRaftVoter").error == Errors.NONE and node.voters == {LOCAL}


def test_removed_leader_restarting_resigned_times_out() -> None:
    """Not one of Kafka's tests (tests/test_kafka_raft_long_dynamic.py runs it against Kafka):
    ``QuorumState.initialize`` gives a node stored as leader a ``ResignedState`` with a random election timeout even when it is no longer a
    voter; ``pollResigned`` moves it to Unattached in the next epoch when it expires."""
    node = dynamic_node(LOCAL, voter_set(FOLLOWER, NEW_VOTER), ElectionState(epoch=3, leader_id=LOCAL))
    assert isinstance(node.state, Resigned) and node.state.election_deadline == START + CONFIG.election_timeout_ms
    node, _ = raft.step(node, Tick(), node.state.election_deadline)
    assert isinstance(node.state, Unattached) and node.state.epoch == 4


# --------------------------------------------------------------------------------------------------
# The remaining KafkaRaftClientReconfigTest cases (4.3): the bootstrap checkpoint, the leader's own endpoints, a
# BeginQuorumEpoch naming more endpoints and the state the leader metrics report


def test_bootstrap_checkpoint_is_not_returned_on_fetch() -> None:
    """A fetch from offset 0 is answered with the log, not with the bootstrap checkpoint's id."""
    node, now = leader(LOCAL, FOLLOWER, epoch=0)
    epoch = node.state.epoch
    _, out = raft.step(node, FetchRequest(replica_id=FOLLOWER, replica_directory_id=directory(FOLLOWER),
                                          current_leader_epoch=epoch, fetch_offset=0, last_fetched_epoch=0,
                                          max_wait_ms=0, cluster_id=CLUSTER), now)
    resp = only(out, FetchResponse)
    assert (resp.partition_error, resp.leader_epoch, resp.leader_id) == (Errors.NONE, epoch, LOCAL)
    assert resp.snapshot_id == NO_SNAPSHOT_ID


def test_follower_does_not_request_leader_bootstrap_snapshot() -> None:
    """Told to fetch the bootstrap checkpoint's id, which it holds already, the follower fetches the log again."""
    node = dynamic_node(LOCAL, voter_set(LOCAL, FOLLOWER), ElectionState(epoch=1, leader_id=FOLLOWER))
    node, out = raft.step(node, Tick(), START)
    request = only(out, FetchRequest)
    assert (request.current_leader_epoch, request.fetch_offset, request.last_fetched_epoch) == (1, 0, 0)
    node, out = raft.step(node, FetchResponse(source=FOLLOWER, leader_epoch=1, leader_id=FOLLOWER, high_watermark=0,
                                              snapshot_id=raft_log.BOOTSTRAP_SNAPSHOT_ID,
                                              correlation_id=request.correlation_id), START)
    assert not sends(out, FetchSnapshotRequest) and node.state.fetching_snapshot is None
    request = only(out, FetchRequest)
    assert (request.current_leader_epoch, request.fetch_offset, request.last_fetched_epoch) == (1, 0, 0)


def test_leader_updates_voter() -> None:
    """A leader whose listeners differ from its node in the bootstrap voter set writes its own node at the epoch start;
    the follower's fetch commits it (``lastCommittedVoterSet``: the last VotersRecord below the high watermark)."""
    voters = voter_set(LOCAL, FOLLOWER)
    local_listeners = FrozenMap({LISTENER: ("localhost", 9990 + LOCAL),
                                 "ANOTHER_LISTENER": ("localhost", 8990 + LOCAL)})
    records = FrozenMap({(0, 0): (KRaftVersionRecord(kraft_version=1), to_voters_record(voters))})
    node = raft.new_dynamic_node(LOCAL, directory(LOCAL), local_listeners, CONFIG,
                                 RaftLog(snapshots=(Snapshot(end_offset=0, epoch=0, size=100),)), records,
                                 ElectionState(epoch=3), START, cluster_id=CLUSTER)
    node, now = elect(node, START)
    assert raft_voters.is_voter(raft_voter_history.last_voter_set(node.dynamic.control), key(FOLLOWER))
    node, _ = fetch(node, FOLLOWER, now)
    committed = node.log.entries[:node.state.high_watermark - node.log.start_offset]
    last_committed = [entry.record for entry in committed if isinstance(entry.record, VotersRecord)][-1]
    updated = raft_voters.update_voter(voters, VoterNode(voter_key=key(LOCAL), listeners=local_listeners,
                                                         supported_kraft_version=(0, 1)))
    assert raft_voters.from_voters_record(last_committed) == updated


def test_handle_begin_quorum_request_more_endpoints() -> None:
    """A BeginQuorumEpoch from the known leader naming a second listener keeps the follower on it and is answered."""
    node = dynamic_node(LOCAL, voter_set(LOCAL, FOLLOWER), ElectionState(epoch=3, leader_id=FOLLOWER))
    node, _ = raft.step(node, Tick(), START)
    leader_endpoints = endpoint_strings(FOLLOWER) + (f"ANOTHER_LISTENER://localhost:{8990 + FOLLOWER}",)
    node, out = raft.step(node, BeginQuorumEpochRequest(leader_id=FOLLOWER, leader_epoch=3,
                                                        leader_endpoints=leader_endpoints, voter_id=LOCAL,
                                                        voter_directory_id=directory(LOCAL), cluster_id=CLUSTER,
                                                        correlation_id=5), START)
    assert isinstance(node.state, Follower) and (node.state.epoch, node.state.leader_id) == (3, FOLLOWER)
    answer = only(out, QuorumEpochResponse)
    assert (answer.api, answer.error, answer.partition_error) == ("BeginQuorumEpoch", Errors.NONE, Errors.NONE)
    assert (answer.leader_epoch, answer.leader_id) == (3, FOLLOWER)


def leader_counts(node: raft.RaftNode) -> tuple[int, int, bool]:
    """What ``checkLeaderMetricValues`` reads: the voters (``number-of-voters``), the leader's observer states
    (``number-of-observers``) and whether a voter change is pending (``uncommitted-voter-change``)."""
    return len(node.voters), len(node.state.observer_states), node.voter_change is not None


def test_leader_metrics_are_reset() -> None:
    """The leader's observers and pending change are the leader's own: resigning answers the pending AddRaftVoter and
    the next leadership starts with none (the metric objects themselves are not modelled)."""
    node, now = leader(LOCAL, FOLLOWER)
    epoch = node.state.epoch
    assert leader_counts(node) == (2, 0, False)
    node, _ = fetch(node, FOLLOWER, now)
    node, _ = fetch(node, NEW_VOTER, now)
    node, _ = asked_api_versions(node, now)
    assert leader_counts(node) == (2, 1, True)
    node, out = raft.step(node, Resign(epoch=epoch), now)
    assert voter_change_answer(out, ADD_VOTER).error == Errors.NOT_LEADER_OR_FOLLOWER and len(node.voters) == 2
    node, out = raft.step(node, Tick(), now)
    request = only(out, EndQuorumEpochRequest)
    assert request.leader_epoch == epoch and [s.destination for s in sends(out, EndQuorumEpochRequest)] == [FOLLOWER]
    node, _ = raft.step(node, QuorumEpochResponse(source=FOLLOWER, api="EndQuorumEpoch", leader_epoch=epoch,
                                                  leader_id=LOCAL, correlation_id=request.correlation_id), now)
    now += 2 * CONFIG.election_timeout_ms
    node, _ = raft.step(node, Tick(), now)
    assert node.state.epoch == epoch + 1
    node, _ = elect(node, now)
    assert leader_counts(node) == (2, 0, False)
