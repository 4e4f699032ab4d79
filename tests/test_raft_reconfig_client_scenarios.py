"""Kafka's ``KafkaRaftClientReconfigTest`` (4.3) at the client level: dynamic voters (KIP-853) driven through
``raft.step``, each test named after Kafka's.

A node is built as ``RaftClientTestContext.Builder.withBootstrapSnapshot`` builds it: a kraft.version 1 node whose
log holds the bootstrap checkpoint ``0-0`` with a KRaftVersionRecord and the initial VotersRecord. Kafka's random
replica id is fixed (local 1, follower 2, new voter 3) and its ``MockTime`` starts here at 1000 ms (a caught-up
time must be positive). Timeouts follow ``RaftClientTestContext`` as in tests/test_raft_scenarios.py; jitter 0.
"""

from __future__ import annotations

import base64
from typing import Any, Optional

from kraftspec.reference import raft, raft_log, raft_voter_history
from kraftspec.reference.errors import Errors
from kraftspec.reference.frozen import FrozenMap, evolve
from kraftspec.reference.raft_log import RaftLog, Snapshot
from kraftspec.reference.raft_messages import (
    AddRaftVoterRequest,
    ApiVersionsRequest,
    ApiVersionsResponse,
    EndQuorumEpochRequest,
    FetchRequest,
    FetchResponse,
    QuorumEpochResponse,
    RemoveRaftVoterRequest,
    Resign,
    Send,
    Tick,
    UpdateRaftVoterRequest,
    UpdateRaftVoterResponse,
    VoteRequest,
    VoteResponse,
    VoterChangeResponse,
)
from kraftspec.reference.raft_quorum_file import read_quorum_state
from kraftspec.reference.raft_records import LeaderChangeMessage
from kraftspec.reference.raft_state import ElectionState, Follower, Leader, QuorumConfig, Resigned, Unattached
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
    is Leader from ``initialize`` on)."""
    if isinstance(node.state, Leader):
        return node, now
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
    assert node.state.high_watermark == node.log.end_offset and NEW_VOTER in node.state.observer_states
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
    assert NEW_VOTER not in node.state.observer_states
    node, _ = fetch(node, FOLLOWER, now)  # commits the new voter set (2 of 3)
    assert node.voter_change is None


def test_add_voter_answer_waits_for_commit() -> None:
    """``testAddVoter``'s last steps: the answer goes out with the fetch that commits the VotersRecord."""
    node, now = prepared_for_add(LOCAL, FOLLOWER)
    node, _ = asked_api_versions(node, now)
    node, _ = api_versions_answer(node, now)
    epoch = node.state.epoch
    req = FetchRequest(replica_id=FOLLOWER, current_leader_epoch=epoch, fetch_offset=node.log.end_offset,
                       last_fetched_epoch=epoch, cluster_id=CLUSTER)
    node, out = raft.step(node, req, now)
    assert voter_change_answer(out, raft.ADD_VOTER) == VoterChangeResponse(api=raft.ADD_VOTER, correlation_id=77)


def test_add_voter_completes_early_with_ack_when_committed_false() -> None:
    node, now = prepared_for_add(LOCAL, FOLLOWER)
    node, _ = asked_api_versions(node, now, ack_when_committed=False)
    node, out = api_versions_answer(node, now)
    assert voter_change_answer(out, raft.ADD_VOTER).error == Errors.NONE
    # Still pending until it commits: another add is refused.
    node, out = raft.step(node, add_voter(voter=4, correlation_id=80), now)
    assert voter_change_answer(out, raft.ADD_VOTER).error == Errors.REQUEST_TIMED_OUT
    node, out = fetch(node, FOLLOWER, now)
    node, out = raft.step(node, Tick(), now)
    assert not sends(out, VoterChangeResponse) and node.voter_change is None


def test_add_voter_invalid_cluster_id() -> None:
    node, now = leader(LOCAL, FOLLOWER)
    node, out = raft.step(node, add_voter(cluster_id="invalid-uuid"), now)
    assert voter_change_answer(out, raft.ADD_VOTER).error == Errors.INCONSISTENT_CLUSTER_ID


def test_add_voter_to_not_leader() -> None:
    node = dynamic_node(LOCAL, voter_set(LOCAL, FOLLOWER), ElectionState(epoch=3, leader_id=FOLLOWER))
    node, out = raft.step(node, add_voter(), START)
    assert voter_change_answer(out, raft.ADD_VOTER).error == Errors.NOT_LEADER_OR_FOLLOWER


def test_add_voter_with_missing_default_listener() -> None:
    node, now = leader(LOCAL, FOLLOWER)
    node, out = raft.step(node, add_voter(listeners=("not_the_listener://localhost:9993",)), now)
    assert voter_change_answer(out, raft.ADD_VOTER).error == Errors.INVALID_REQUEST


def test_add_voter_with_pending_add_voter() -> None:
    node, now = prepared_for_add(LOCAL, FOLLOWER)
    node, _ = asked_api_versions(node, now)
    node, out = raft.step(node, add_voter(voter=4, correlation_id=80), now)
    answer = voter_change_answer(out, raft.ADD_VOTER)
    assert answer.error == Errors.REQUEST_TIMED_OUT and answer.correlation_id == 80


def test_add_voter_without_fenced_previous_leaders() -> None:
    node, now = leader(LOCAL, FOLLOWER)
    node, out = raft.step(node, add_voter(), now)  # no fetch yet: no HWM
    answer = voter_change_answer(out, raft.ADD_VOTER)
    assert answer.error == Errors.REQUEST_TIMED_OUT and "establish HWM" in answer.error_message


def test_add_voter_with_kraft_version0() -> None:
    static = raft.new_node(LOCAL, frozenset((LOCAL, FOLLOWER)),
                           FrozenMap({i: endpoint_strings(i) for i in (LOCAL, FOLLOWER)}), CONFIG,
                           stored=ElectionState(epoch=3), now=START, directory_id=directory(LOCAL),
                           cluster_id=CLUSTER)
    node, now = elect(static, START)
    node, _ = fetch(node, FOLLOWER, now)
    node, out = raft.step(node, add_voter(), now)
    assert voter_change_answer(out, raft.ADD_VOTER).error == Errors.UNSUPPORTED_VERSION


def test_add_voter_with_existing_voter() -> None:
    node, now = leader(LOCAL, FOLLOWER)
    node, _ = fetch(node, FOLLOWER, now)
    node, out = raft.step(node, add_voter(voter=FOLLOWER, voter_directory_id=directory(FOLLOWER, 1)), now)
    assert voter_change_answer(out, raft.ADD_VOTER).error == Errors.DUPLICATE_VOTER


def test_add_voter_timeout() -> None:
    node, now = prepared_for_add(LOCAL, FOLLOWER)
    node, _ = asked_api_versions(node, now)
    node, _ = api_versions_answer(node, now)
    node, out = raft.step(node, Tick(), now + CONFIG.request_timeout_ms)
    assert voter_change_answer(out, raft.ADD_VOTER).error == Errors.REQUEST_TIMED_OUT
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
    assert voter_change_answer(out, raft.ADD_VOTER).error == Errors.REQUEST_TIMED_OUT


def test_add_voter_invalid_feature_version() -> None:
    node, now = prepared_for_add(LOCAL, FOLLOWER)
    node, _ = asked_api_versions(node, now)
    node, out = api_versions_answer(node, now, supported=(0, 0))
    assert voter_change_answer(out, raft.ADD_VOTER).error == Errors.INVALID_REQUEST
    assert NEW_VOTER not in node.voters


def test_add_voter_with_lagging_new_voter() -> None:
    node, now = leader(LOCAL, FOLLOWER)
    node, _ = fetch(node, FOLLOWER, now)
    node, _ = fetch(node, NEW_VOTER, now, offset=0)  # behind the leader's end offset
    node, _ = asked_api_versions(node, now)
    node, out = api_versions_answer(node, now)
    answer = voter_change_answer(out, raft.ADD_VOTER)
    assert answer.error == Errors.REQUEST_TIMED_OUT and "lagging behind" in answer.error_message


def test_add_voter_fails_when_losing_leadership() -> None:
    node, now = leader(LOCAL, FOLLOWER)
    node, _ = fetch(node, FOLLOWER, now)
    node, _ = asked_api_versions(node, now)
    node, out = raft.step(node, Resign(epoch=node.state.epoch), now)  # the poll after it resigns
    assert isinstance(node.state, Resigned)
    assert voter_change_answer(out, raft.ADD_VOTER).error == Errors.NOT_LEADER_OR_FOLLOWER


def test_add_voter_with_missing_directory_id() -> None:
    node, now = leader(LOCAL, FOLLOWER)
    node, _ = fetch(node, FOLLOWER, now)
    node, out = raft.step(node, add_voter(voter_directory_id=None), now)
    assert voter_change_answer(out, raft.ADD_VOTER).error == Errors.INVALID_REQUEST


# --------------------------------------------------------------------------------------------------
# RemoveRaftVoter


def test_remove_voter() -> None:
    node, now = leader(LOCAL, FOLLOWER, NEW_VOTER)
    node, _ = fetch(node, FOLLOWER, now)
    node, out = raft.step(node, remove_voter(FOLLOWER), now)
    assert not sends(out, VoterChangeResponse)
    assert FOLLOWER not in node.voters and FOLLOWER in node.state.observer_states
    node, out = fetch(node, NEW_VOTER, now)  # commits the new voter set (2 of 2)
    node, out = raft.step(node, Tick(), now)
    assert node.voter_change is None and isinstance(node.state, Leader)


def test_remove_voter_is_leader() -> None:
    node, now = leader(LOCAL, FOLLOWER, NEW_VOTER)
    node, _ = fetch(node, FOLLOWER, now)
    node, out = raft.step(node, remove_voter(LOCAL), now)
    assert not node.is_voter and node.voters == {FOLLOWER, NEW_VOTER}
    assert LOCAL not in node.state.voter_states and LOCAL in node.state.observer_states
    node, _ = fetch(node, FOLLOWER, now)
    assert node.voter_change is not None  # the leader does not count: 1 of 2 is no majority
    epoch = node.state.epoch
    req = FetchRequest(replica_id=NEW_VOTER, current_leader_epoch=epoch, fetch_offset=node.log.end_offset,
                       last_fetched_epoch=epoch, cluster_id=CLUSTER)
    node, out = raft.step(node, req, now)
    assert voter_change_answer(out, raft.REMOVE_VOTER).error == Errors.NONE
    assert isinstance(node.state, Resigned)  # the poll after the commit resigns
    node, out = raft.step(node, Tick(), now)
    assert sorted(s.destination for s in sends(out, EndQuorumEpochRequest)) == [FOLLOWER, NEW_VOTER]
    node, _ = raft.step(node, Resign(epoch=epoch), now)  # allowed, ignored
    node, _ = raft.step(node, Tick(), now + 2 * CONFIG.election_timeout_ms)
    assert isinstance(node.state, Unattached) and not node.is_voter


def test_remove_voter_invalid_cluster_id() -> None:
    node, now = leader(LOCAL, FOLLOWER)
    node, out = raft.step(node, remove_voter(FOLLOWER, cluster_id="invalid-uuid"), now)
    assert voter_change_answer(out, raft.REMOVE_VOTER).error == Errors.INCONSISTENT_CLUSTER_ID


def test_remove_voter_to_not_leader() -> None:
    node = dynamic_node(LOCAL, voter_set(LOCAL, FOLLOWER), ElectionState(epoch=3, leader_id=FOLLOWER))
    node, out = raft.step(node, remove_voter(FOLLOWER), START)
    assert voter_change_answer(out, raft.REMOVE_VOTER).error == Errors.NOT_LEADER_OR_FOLLOWER


def test_remove_voter_with_pending_remove_voter() -> None:
    node, now = leader(LOCAL, FOLLOWER, NEW_VOTER)
    node, _ = fetch(node, FOLLOWER, now)
    node, _ = raft.step(node, remove_voter(FOLLOWER), now)
    node, out = raft.step(node, remove_voter(NEW_VOTER), now)
    assert voter_change_answer(out, raft.REMOVE_VOTER).error == Errors.REQUEST_TIMED_OUT


def test_remove_voter_without_fenced_previous_leaders() -> None:
    node, now = leader(LOCAL, FOLLOWER)
    node, out = raft.step(node, remove_voter(FOLLOWER), now)
    assert voter_change_answer(out, raft.REMOVE_VOTER).error == Errors.REQUEST_TIMED_OUT


def test_remove_voter_with_kraft_version0() -> None:
    static = raft.new_node(LOCAL, frozenset((LOCAL, FOLLOWER)),
                           FrozenMap({i: endpoint_strings(i) for i in (LOCAL, FOLLOWER)}), CONFIG,
                           stored=ElectionState(epoch=3), now=START, directory_id=directory(LOCAL),
                           cluster_id=CLUSTER)
    node, now = elect(static, START)
    node, _ = fetch(node, FOLLOWER, now)
    node, out = raft.step(node, remove_voter(FOLLOWER), now)
    assert voter_change_answer(out, raft.REMOVE_VOTER).error == Errors.UNSUPPORTED_VERSION


def test_remove_voter_with_none_voter() -> None:
    node, now = leader(LOCAL, FOLLOWER)
    node, _ = fetch(node, FOLLOWER, now)
    node, out = raft.step(node, remove_voter(FOLLOWER, voter_directory_id=directory(FOLLOWER, 1)), now)
    assert voter_change_answer(out, raft.REMOVE_VOTER).error == Errors.VOTER_NOT_FOUND


def test_remove_voter_with_none_voter_id() -> None:
    node, now = leader(LOCAL, FOLLOWER)
    node, _ = fetch(node, FOLLOWER, now)
    node, out = raft.step(node, remove_voter(NEW_VOTER), now)
    assert voter_change_answer(out, raft.REMOVE_VOTER).error == Errors.VOTER_NOT_FOUND


def test_remove_voter_to_empty_voter_set() -> None:
    node, now = leader(LOCAL)
    node, out = raft.step(node, remove_voter(LOCAL), now)
    assert voter_change_answer(out, raft.REMOVE_VOTER).error == Errors.VOTER_NOT_FOUND


def test_remove_voter_timed_out() -> None:
    node, now = leader(LOCAL, FOLLOWER, NEW_VOTER)
    node, _ = fetch(node, FOLLOWER, now)
    node, _ = raft.step(node, remove_voter(FOLLOWER), now)
    node, out = raft.step(node, Tick(), now + CONFIG.request_timeout_ms)
    assert voter_change_answer(out, raft.REMOVE_VOTER).error == Errors.REQUEST_TIMED_OUT
    assert FOLLOWER not in node.voters  # the uncommitted set stays in force


def test_remove_voter_fails_when_losing_leadership() -> None:
    node, now = leader(LOCAL, FOLLOWER, NEW_VOTER)
    node, _ = fetch(node, FOLLOWER, now)
    node, _ = raft.step(node, remove_voter(FOLLOWER), now)
    node, out = raft.step(node, Resign(epoch=node.state.epoch), now)
    assert voter_change_answer(out, raft.REMOVE_VOTER).error == Errors.NOT_LEADER_OR_FOLLOWER


def test_add_voter_with_pending_remove_voter() -> None:
    node, now = leader(LOCAL, FOLLOWER, 4)
    node, _ = fetch(node, FOLLOWER, now)
    node, _ = fetch(node, NEW_VOTER, now)
    node, _ = raft.step(node, remove_voter(4), now)
    node, out = raft.step(node, add_voter(), now)
    assert voter_change_answer(out, raft.ADD_VOTER).error == Errors.REQUEST_TIMED_OUT


def test_remove_voter_with_pending_add_voter() -> None:
    node, now = prepared_for_add(LOCAL, FOLLOWER)
    node, _ = asked_api_versions(node, now)
    node, out = raft.step(node, remove_voter(FOLLOWER), now)
    assert voter_change_answer(out, raft.REMOVE_VOTER).error == Errors.REQUEST_TIMED_OUT


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
    assert update.listeners == ("ANOTHER_LISTENER://localhost:8991", "CONTROLLER://localhost:9991")


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
        assert node.state.update_voter_deadline == now + CONFIG.fetch_timeout_ms and raft._should_send_update_voter(node)
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
    assert raft.voted_key(voted) == raft.ReplicaKey(id=2, directory_id=directory(2))
    assert voted.stored.voted_key == raft.ReplicaKey(id=2)
    candidate = static_node(LOCAL, (LOCAL, 2, 3), ElectionState(epoch=4, voted_key=raft.ReplicaKey(id=LOCAL)))
    assert raft.voted_key(candidate) == raft.ReplicaKey(id=LOCAL, directory_id=directory(LOCAL))
    assert candidate.stored.voted_key == raft.ReplicaKey(id=LOCAL)
