"""A KRaft quorum node's state (:class:`RaftNode`) and what every handler reads of it, rules §3.2, §3.3, §3.14.

The voter set in force, as a kraft.version 1 node reads it from its log and snapshots (``partitionState``:
``KRaftControlRecordStateMachine``, KIP-853); the vote the quorum-state file keeps (``QuorumState``,
``FileQuorumStateStore``); the requests outstanding to each destination and the connections backing off
(``RequestManager``, ``quorum.retry.backoff.ms``). The handlers that move the node live in :mod:`raft_transitions`
and above; ``raft.step`` dispatches to them (``KafkaRaftClient.java``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from kraftspec.reference import raft_rules, raft_state, raft_voter_history, raft_voters
from kraftspec.reference.errors import Errors
from kraftspec.reference.frozen import EMPTY_MAP, FrozenMap, evolve
from kraftspec.reference.raft_log import LogEntry, RaftLog
from kraftspec.reference.raft_messages import RaftFatalError, Send
from kraftspec.reference.raft_state import (
    ElectionState,
    GracefulShutdown,
    Leader,
    ListenerView,
    ParkedFetch,
    QuorumConfig,
    QuorumState,
    ReplicaKey,
    Resigned,
)

SUPPORTED_KRAFT_VERSIONS = (0, 1)
"""The kraft.version range a Kafka 4.x node supports (``KRaftVersion``: 0 to ``LATEST_PRODUCTION`` 1), which its
UpdateRaftVoter and ApiVersions state and its own voter node carries."""
ADD_VOTER = "AddRaftVoter"
REMOVE_VOTER = "RemoveRaftVoter"


@dataclass(frozen=True, slots=True, kw_only=True)
class DynamicVoters:
    """A kraft.version 1 node's voters (KIP-853, §3.14): not configured but read from its log and snapshots
    (``KRaftControlRecordStateMachine``: ``control``), its own listeners (``listener_name`` the one the quorum uses),
    and the control records each snapshot it holds starts with (by id; the bootstrap checkpoint ``(0, 0)`` holds the
    initial voter set and kraft.version). A node configured with static voters (``controller.quorum.voters``) has
    them here too (``static_voters``, ``static_endpoints``) once its log holds a control record, an upgrade to
    kraft.version 1 (:func:`start_control_records`): they are its voters until a VotersRecord is read, and again once
    a truncation or restart drops the upgrade's records."""

    control: raft_voter_history.ControlRecordState
    local_listeners: FrozenMap[str, tuple[str, int]]
    snapshot_records: FrozenMap[tuple[int, int], tuple[Any, ...]] = EMPTY_MAP
    listener_name: str = "CONTROLLER"
    static_voters: Optional[frozenset[int]] = None
    static_endpoints: FrozenMap[int, tuple[str, ...]] = EMPTY_MAP
    bootstrap_servers: tuple[int, ...] = ()
    """The servers ``controller.quorum.bootstrap.servers`` names, in its order, fixed when the client is built
    (``KafkaRaftClient``'s constructor numbers them -2, -3, ... for its ``RequestManager``), whatever the voters
    become; a simulation may name each by the id of the node listening there instead."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PendingVoterChange:
    """``AddVoterHandlerState`` / ``RemoveVoterHandlerState``: the one voter change the leader runs (``api``), who asked
    (``source``, ``correlation_id``), the voter, the operation's timer (``deadline``), the offset of its VotersRecord
    once appended, and whether the answer already went (an add with ``ack_when_committed`` False), §3.15."""

    api: str
    source: int
    correlation_id: int
    voter_key: ReplicaKey
    deadline: int
    listeners: FrozenMap[str, tuple[str, int]] = EMPTY_MAP
    ack_when_committed: bool = True
    last_offset: Optional[int] = None
    responded: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class RaftNode:
    """A quorum member or observer: static voters, its state, its log, the quorum-state file, in-flight requests.

    ``stored`` is the quorum-state file (written by durable transitions); ``inflight`` maps a destination
    to (correlation id, send time) of the one request outstanding to it (``RequestManager``), ``backoff`` a destination
    whose last request failed to the time it failed, while its back-off runs (``quorum.retry.backoff.ms``); ``parked`` is the fetch
    purgatory, in arrival order (``ThresholdPurgatory``: the client's, not the leader state's, so a leader that
    becomes Unattached keeps its parked fetches until they time out); ``shutdown`` the graceful shutdown asked for,
    if any (a restart starts without one); ``listener`` what the state machine above has learnt, None until the first
    ``pollListeners`` registers it (``processRegistration``; a restart registers it anew). ``dynamic`` is a
    kraft.version 1 node's (KIP-853), whose ``voters`` and ``voter_endpoints`` are the voter set in force, the latest
    in its log (:func:`update_partition_state`); None for static voters (kraft.version 0) until their log holds an
    upgrade's control records (:func:`start_control_records`). ``voter_change`` is the
    voter change a leader runs (§3.15). ``can_become_voter`` is ``KafkaRaftClient``'s ``canBecomeVoter`` (a node with
    the controller role): it flushes what it fetches as a voter does and, with ``controller.quorum.auto.join.enable``
    (``config.auto_join``), an observer asks to join the voters (:func:`raft_reconfig_client.auto_join`).
    """

    local_id: int
    voters: frozenset[int]
    voter_endpoints: FrozenMap[int, tuple[str, ...]]
    config: QuorumConfig
    state: QuorumState
    log: RaftLog
    stored: ElectionState
    inflight: FrozenMap[int, tuple[int, int]] = EMPTY_MAP
    backoff: FrozenMap[int, int] = EMPTY_MAP
    next_correlation_id: int = 1
    parked: tuple[ParkedFetch, ...] = ()
    directory_id: Optional[str] = None
    cluster_id: Optional[str] = None
    shutdown: Optional[GracefulShutdown] = None
    listener: Optional[ListenerView] = None
    dynamic: Optional[DynamicVoters] = None
    voter_change: Optional[PendingVoterChange] = None
    can_become_voter: bool = False

    @property
    def is_voter(self) -> bool:
        """``QuorumState.isVoter``: the local id is in the voter set; in a kraft.version 1 voter set with the local
        directory id too (``VoterSet.isVoter``: a node whose id is a voter's under another directory is an observer)."""
        if self.local_id not in self.voters:
            return False
        return self.dynamic is None or raft_voters.is_voter(raft_voter_history.last_voter_set(self.dynamic.control),
                                                            ReplicaKey(id=self.local_id, directory_id=self.directory_id))


Outputs = list[Send]


# --------------------------------------------------------------------------------------------------
# The voter set in force (KIP-853, §3.14)


def read_control(dynamic: DynamicVoters, log: RaftLog) -> raft_voter_history.ControlRecordState:
    """``KRaftControlRecordStateMachine.updateState``: the latest snapshot's control records are loaded when nothing
    was read yet or the log start passed what was read (``maybeLoadSnapshot``,
    :func:`raft_voter_history.snapshot_load_needed`), then the log's records from the next offset to read up to the log
    end (``maybeLoadLog``, uncommitted records included), §3.14."""
    control = dynamic.control
    latest = log.latest_snapshot
    if latest is not None and raft_voter_history.snapshot_load_needed(control.next_offset, log.start_offset):
        records = dynamic.snapshot_records.get(latest.id)
        # The snapshot's bytes are not modelled: only the control records of a snapshot this node wrote, fetched or was
        # bootstrapped with are known (a state built by hand may lack them).
        if records is None:
            raise RaftFatalError(f"the control records of snapshot {latest.id} are not known to this node")
        control = raft_voter_history.load_snapshot(control, latest.end_offset - 1, records)
    offset = max(control.next_offset, log.start_offset)
    while offset < log.end_offset:
        record = log.entries[offset - log.start_offset].record
        control = raft_voter_history.read_batch(control, offset, offset, (record,))
        offset += 1
    return control


def voters_in_force(local_id: int, dynamic: DynamicVoters) -> tuple[frozenset[int],
                                                                    FrozenMap[int, tuple[str, ...]]]:
    """``partitionState.lastVoterSet()``: the ids and endpoints of the latest voter set read (§3.14); the local node's
    endpoints are its own listeners (``quorum.leaderEndpoints`` of a leader), voter or not, in the order it was given
    them: ``Endpoints.fromInetSocketAddresses`` keeps the server's map (``SharedServer.startForController``), which
    ``buildAddVoterRequest`` and ``buildUpdateVoterRequest`` list as it iterates."""
    if dynamic.static_voters is not None and raft_voter_history.last_voter_set_entry(dynamic.control) is None:
        return dynamic.static_voters, dynamic.static_endpoints  # ``staticVoterSet``, as configured
    voter_set = raft_voter_history.last_voter_set(dynamic.control)
    endpoints = {v: raft_voters.endpoint_strings(n.listeners) for v, n in voter_set.voters.items()}
    endpoints[local_id] = tuple(f"{name}://{host}:{port}" for name, (host, port) in dynamic.local_listeners.items())
    return raft_voters.voter_ids(voter_set), FrozenMap(endpoints)


def with_control(node: RaftNode, control: raft_voter_history.ControlRecordState) -> RaftNode:
    """The node with its control-record state replaced and ``voters`` / ``voter_endpoints`` following it."""
    dynamic = evolve(node.dynamic, control=control)
    voters, endpoints = voters_in_force(node.local_id, dynamic)
    if voters == node.voters and endpoints == node.voter_endpoints:
        return evolve(node, dynamic=dynamic)
    return evolve(node, dynamic=dynamic, voters=voters, voter_endpoints=endpoints)


def holds_control_records(entries: tuple[LogEntry, ...]) -> bool:
    """Whether any entry is a KRaftVersionRecord or VotersRecord, which ``KRaftControlRecordStateMachine`` reads."""
    return any(raft_voter_history.is_control_record(e.record) for e in entries)


def static_voter_set(voters: frozenset[int], endpoints: FrozenMap[int, tuple[str, ...]]) -> raft_voters.VoterSet:
    """``VoterSet.fromInetSocketAddresses``: static voters without directory id, their endpoints, kraft.version 0 to 0
    (§3.14)."""
    return raft_voters.VoterSet(voters=FrozenMap({v: raft_voters.VoterNode(
        voter_key=ReplicaKey(id=v), listeners=raft_voters.listeners_of(endpoints.get(v, ())),
        supported_kraft_version=(0, 0)) for v in voters}))


def static_control(local_id: int, voters: frozenset[int], endpoints: FrozenMap[int, tuple[str, ...]], log: RaftLog,
                   snapshot_records: FrozenMap[tuple[int, int], tuple[Any, ...]]) -> DynamicVoters:
    """``KRaftControlRecordStateMachine`` of a node with static voters (its ``staticVoterSet``) after reading its
    snapshots and log (:func:`read_control`): a snapshot whose control records it did not write is a kraft.version 0
    one, which holds none (§3.14)."""
    known = FrozenMap({**{s.id: () for s in log.snapshots}, **snapshot_records})
    dynamic = DynamicVoters(control=raft_voter_history.ControlRecordState(
        static_voter_set=static_voter_set(voters, endpoints)),
        local_listeners=raft_voters.listeners_of(endpoints.get(local_id, ())), snapshot_records=known,
        static_voters=voters, static_endpoints=endpoints)
    return evolve(dynamic, control=read_control(dynamic, log))


def start_control_records(node: RaftNode,
                          snapshot_records: FrozenMap[tuple[int, int], tuple[Any, ...]] = EMPTY_MAP) -> RaftNode:
    """A node with static voters whose log or fetched snapshot (``snapshot_records``) now holds a control record (the
    upgrade's KRaftVersionRecord and VotersRecord, written as its leader or fetched): Kafka's control-record state
    machine runs for every node (``partitionState.updateState``), so from here on its kraft.version and voters are
    those of its log (§3.14, §3.15)."""
    dynamic = static_control(node.local_id, node.voters, node.voter_endpoints, node.log, snapshot_records)
    voters, endpoints = voters_in_force(node.local_id, dynamic)
    return evolve(node, dynamic=dynamic, voters=voters, voter_endpoints=endpoints)


def update_partition_state(node: RaftNode) -> RaftNode:
    """``partitionState.updateState()`` after the log grew or was replaced by a snapshot: a kraft.version 1 node reads
    the new control records (:func:`read_control`), and its voters are the latest set (§3.14); static voters stay."""
    if node.dynamic is None:
        return node
    control = read_control(node.dynamic, node.log)
    return node if control == node.dynamic.control else with_control(node, control)


def voter_keys(node: RaftNode) -> frozenset[ReplicaKey]:
    """``partitionState.lastVoterSet().voterKeys()``: the voters in force with the directory ids their set names (none
    for static voters), §3.14."""
    if node.dynamic is None:
        return frozenset(ReplicaKey(id=v) for v in node.voters)
    return raft_voters.voter_keys(raft_voter_history.last_voter_set(node.dynamic.control))


def local_voter_node(node: RaftNode) -> raft_voters.VoterNode:
    """``quorum.localVoterNodeOrThrow``: the local replica key, its listeners and supported kraft.version range."""
    return raft_voters.VoterNode(voter_key=ReplicaKey(id=node.local_id, directory_id=node.directory_id),
                                 listeners=node.dynamic.local_listeners,
                                 supported_kraft_version=SUPPORTED_KRAFT_VERSIONS)


def persisted_version_and_voters(node: RaftNode) -> tuple[int, raft_voters.VoterSet]:
    """``partitionState.lastKraftVersion`` and ``lastVoterSet``: kraft.version 0 and the static voters until the log
    holds control records (§3.14)."""
    if node.dynamic is None:
        return raft_voters.KRAFT_VERSION_0, static_voter_set(node.voters, node.voter_endpoints)
    control = node.dynamic.control
    return raft_voter_history.last_kraft_version(control), raft_voter_history.last_voter_set(control)


def last_kraft_version(node: RaftNode) -> int:
    """``partitionState.lastKraftVersion`` alone (:func:`persisted_version_and_voters` without building a static voter
    set, as every observer's poll asks it): the latest KRaftVersionRecord read, 0 before any."""
    if node.dynamic is None:
        return raft_voters.KRAFT_VERSION_0
    return raft_voter_history.last_kraft_version(node.dynamic.control)


# --------------------------------------------------------------------------------------------------
# The vote the quorum-state file keeps (§3.2, §3.3) and the leader's endpoints


def voted_key(node: RaftNode) -> Optional[ReplicaKey]:
    """``QuorumState``'s ``ElectionState.votedKey``: the vote the current state holds; a vote for itself (a
    Candidate's, and the one a Prospective keeps after it) is the local replica key, directory id included
    (``localReplicaKeyOrThrow``, ``ElectionState.withVotedCandidate``), §3.2."""
    key = raft_state.voted_key_of(node.state, node.local_id)
    if key is not None and key.id == node.local_id:
        return ReplicaKey(id=node.local_id, directory_id=node.directory_id)
    return key


def stored_election(node: RaftNode, state: QuorumState) -> ElectionState:
    """The election state a durable transition writes, as the quorum-state file reads back: the vote
    (:func:`voted_key`) with its directory id only from data version 1 (kraft.version 1); version 0 keeps the voted id
    alone (``FileQuorumStateStore.writeElectionState``, ``ElectionState.toQuorumStateData``), §3.3."""
    election = raft_state.election_state(state, node.local_id)
    key = voted_key(evolve(node, state=state))
    kraft_version = (raft_voters.KRAFT_VERSION_0 if node.dynamic is None
                     else raft_voter_history.last_kraft_version(node.dynamic.control))
    if key is not None and not raft_voters.is_reconfig_supported(kraft_version):
        key = ReplicaKey(id=key.id)
    return election if key == election.voted_key else evolve(election, voted_key=key)


def leader_endpoints(node: RaftNode) -> tuple[str, ...]:
    """``quorum.leaderEndpoints()``: the followed leader's, our own as leader/resigned, else none."""
    state = node.state
    if isinstance(state, (Leader, Resigned)):
        return node.voter_endpoints.get(node.local_id, ())
    return getattr(state, "leader_endpoints", ())


# --------------------------------------------------------------------------------------------------
# Requests outstanding and backing off (``RequestManager``)


def top_level_error(error: Errors) -> bool:
    """``handleTopLevelError``: the request failed (its connection backs off); CLUSTER_AUTHORIZATION_FAILED is fatal."""
    if error == Errors.CLUSTER_AUTHORIZATION_FAILED:
        raise RaftFatalError("cluster authorization failed")
    return False


def expected(node: RaftNode, source: int, correlation_id: int) -> bool:
    """``RequestManager.isResponseExpected``: the response answers the request outstanding to ``source``."""
    pending = node.inflight.get(source)
    return pending is not None and pending[0] == correlation_id


def answered(node: RaftNode, source: int, correlation_id: int, success: bool, now: int) -> RaftNode:
    """``RequestManager.onResponseResult`` once the response is handled: if the request is still the one outstanding
    (a state change resets every connection), the connection is ready again, or after a failure backs off for
    ``quorum.retry.backoff.ms`` (``ConnectionState.onResponseError``)."""
    pending = node.inflight.get(source)
    if pending is None or pending[0] != correlation_id:
        return node
    inflight = node.inflight.remove(source)
    if success:
        return evolve(node, inflight=inflight)
    return evolve(node, inflight=inflight, backoff=node.backoff.set(source, now))


def send_request(node: RaftNode, destination: int, request: Any, now: int, out: Outputs) -> RaftNode:
    """Send ``request`` with a fresh correlation id and remember it as outstanding to ``destination``."""
    cid = node.next_correlation_id
    out.append(Send(destination=destination, message=evolve(request, correlation_id=cid)))
    backoff = node.backoff.remove(destination) if destination in node.backoff else node.backoff
    return evolve(node, inflight=node.inflight.set(destination, (cid, now)), backoff=backoff,
                  next_correlation_id=cid + 1)


def ready(node: RaftNode, destination: int, now: int) -> bool:
    """``RequestManager.isReady``: no request outstanding to ``destination`` or it timed out
    (``controller.quorum.request.timeout.ms``), and no back-off running there (``quorum.retry.backoff.ms``)."""
    pending = node.inflight.get(destination)
    if pending is not None and raft_rules.request_in_flight(now, pending[1], node.config.request_timeout_ms):
        return False
    return not backing_off(node, destination, now)


def backing_off(node: RaftNode, destination: int, now: int) -> bool:
    """``RequestManager.isBackingOff``: the last request to ``destination`` failed less than the back-off ago."""
    failed_at = node.backoff.get(destination)
    return failed_at is not None and raft_rules.backing_off(now, failed_at, node.config.retry_backoff_ms)


def without_timed_out(node: RaftNode, now: int) -> RaftNode:
    """``RequestManager.hasAnyInflightRequest`` first forgets the requests that timed out (their answers are then
    dropped); the node has a request in flight iff ``inflight`` is still not empty."""
    timeout = node.config.request_timeout_ms
    live = {dst: pending for dst, pending in node.inflight.items()
            if raft_rules.request_in_flight(now, pending[1], timeout)}
    if len(live) != len(node.inflight):
        node = evolve(node, inflight=FrozenMap(live))
    running = {dst: failed_at for dst, failed_at in node.backoff.items() if backing_off(node, dst, now)}
    if len(running) != len(node.backoff):  # back-offs over: ready again
        node = evolve(node, backoff=FrozenMap(running))
    return node
