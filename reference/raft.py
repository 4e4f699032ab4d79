"""One KRaft quorum node as a pure state machine: ``step(node, input, now, jitter) -> (node', sends)``.

rules §3.2–§3.10; ``KafkaRaftClient.java``. In the etcd-raft "Step" shape: an input is a
request, a response, a timer poll (``Tick``) or a client operation; responses first go through the
handling every role shares (§3.8: older epoch ignored, newer epoch or fencing errors move the node),
then to the role; after every input the node polls its role's timers (as Kafka's ``poll`` does).
Outputs are ``Send`` values. Time (ms) and the random draws (election jitter, the bootstrap server's start
index) are arguments. Snapshots (KIP-630): a Fetch behind the leader's log start is answered with its latest
snapshot's id, which the follower fetches in chunks (FetchSnapshot) and loads in place of its log; the state machine
creates snapshots (``CreateSnapshot``) and the log's cleaner advances the log start to one (``DeleteBeforeSnapshot``);
a restart recovers from the snapshots and the flushed log. Dynamic voters (KIP-853): a kraft.version 1 node
(:func:`new_dynamic_node`) takes its voters from the latest VotersRecord of its log or snapshot, else the bootstrap
checkpoint's, and follows appends, truncations, snapshots and restarts; majorities count the voter set in force
(a removed leader not counting itself); its leader writes the start-of-epoch control records and handles
AddRaftVoter, RemoveRaftVoter and UpdateRaftVoter, answering once the VotersRecord commits or the change times out;
a kraft.version 0 node keeps its static voters, its leader the voters' UpdateRaftVoter endpoints in memory, which
``upgradeKRaftVersion`` writes with a KRaftVersionRecord(1) once every voter has sent them
(:func:`_handle_upgrade_kraft_version`); from then on the leader and every node that reads those records run as
kraft.version 1, until a truncation or restart drops them (:func:`_start_control_records`); with
``controller.quorum.auto.join.enable`` a kraft.version 1 observer that can become a voter asks its leader to remove
its id's old directory and to add it (:func:`_auto_join`). Not modelled: the snapshots' bytes (only their sizes and
the control records of a kraft.version 1 snapshot's first batch,
which the FetchSnapshot chunk from byte 0 carries to a follower that reloads its voters from them), batches of
several records (each entry is a batch, so a fetch cut by ``fetch_max_records`` may split the upgrade's two records,
which Kafka writes as one batch), what a shut-down node's
driver does after the shutdown finished (it takes no input until a restart), the FetchSnapshot answer of a partition
other than the metadata log's (a request for one is answered). A graceful shutdown (``shutdown(timeoutMs)``) runs until
the node may leave or its timer expires; a failed request backs its connection off (``quorum.retry.backoff.ms``,
``RequestManager``). KIP-595 as implemented differs from its text: elections start with a pre-vote
(KIP-996, Prospective), a leader that restarts or resigns is Resigned, and a node without a leader (voter or
observer) discovers it by fetching from one bootstrap server at a time (KAFKA-17030).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

from kraftspec.reference import raft_leader, raft_log, raft_reconfig, raft_rules, raft_state, raft_voter_history, \
    raft_voters
from kraftspec.reference.errors import Errors
from kraftspec.reference.frozen import EMPTY_MAP, FrozenMap, evolve
from kraftspec.reference.raft_log import LogEntry, RaftLog, Snapshot
from kraftspec.reference.raft_messages import (
    METADATA_PARTITION,
    METADATA_TOPIC_ID,
    NO_DIVERGING_EPOCH,
    NO_SNAPSHOT_ID,
    AddRaftVoterRequest,
    ApiVersionsRequest,
    ApiVersionsResponse,
    Append,
    BeginQuorumEpochRequest,
    CreateSnapshot,
    DeleteBeforeSnapshot,
    DescribeQuorumRequest,
    DescribeQuorumResponse,
    EndQuorumEpochRequest,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    IllegalUpgradeArgumentError,
    InvalidResignError,
    InvalidSnapshotError,
    NotLeaderError,
    QuorumEpochResponse,
    RaftFatalError,
    RemoveRaftVoterRequest,
    Resign,
    Send,
    ShutDownError,
    Shutdown,
    Tick,
    UpdateRaftVoterRequest,
    UpdateRaftVoterResponse,
    UpgradeKRaftVersion,
    VoteRequest,
    VoteResponse,
    VoterChangeResponse,
)
from kraftspec.reference.raft_quorum_file import write_quorum_state
from kraftspec.reference.raft_records import LeaderChangeMessage
from kraftspec.reference.raft_state import (
    NO_LEADER,
    Candidate,
    ElectionState,
    Follower,
    GracefulShutdown,
    Leader,
    ListenerView,
    ParkedFetch,
    Prospective,
    QuorumConfig,
    QuorumState,
    ReplicaKey,
    Resigned,
    SnapshotDownload,
    Unattached,
)

UNKNOWN_TOPIC_MESSAGE = "This server does not host this topic-partition."
NOT_LEADER_MESSAGE = ("For requests intended only for the leader, this error indicates that the broker is not the "
                      "current leader. For requests intended for any replica, this error indicates that the broker "
                      "is not a replica of the topic partition.")
SUPPORTED_KRAFT_VERSIONS = (0, 1)
"""The kraft.version range a Kafka 4.x node supports (``KRaftVersion``: 0 to ``LATEST_PRODUCTION`` 1), which its
UpdateRaftVoter and ApiVersions state and its own voter node carries."""
VOTER_CHANGE_ERROR_MESSAGES = {Errors.NOT_LEADER_OR_FOLLOWER: NOT_LEADER_MESSAGE,
                               Errors.REQUEST_TIMED_OUT: "The request timed out."}
"""``Errors.message()`` of the errors a pending voter change is answered with without a message of its own: the leader
losing its epoch (``LeaderState.close``) and the change's timer expiring (``maybeExpirePendingOperation``)."""
ADD_VOTER = "AddRaftVoter"
REMOVE_VOTER = "RemoveRaftVoter"


@dataclass(frozen=True, slots=True, kw_only=True)
class DynamicVoters:
    """A kraft.version 1 node's voters (KIP-853, §3.14): not configured but read from its log and snapshots
    (``KRaftControlRecordStateMachine``: ``control``), its own listeners (``listener_name`` the one the quorum uses),
    and the control records each snapshot it holds starts with (by id; the bootstrap checkpoint ``(0, 0)`` holds the
    initial voter set and kraft.version). A node configured with static voters (``controller.quorum.voters``) has
    them here too (``static_voters``, ``static_endpoints``) once its log holds a control record, an upgrade to
    kraft.version 1 (:func:`_start_control_records`): they are its voters until a VotersRecord is read, and again once
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
    in its log (:func:`_update_partition_state`); None for static voters (kraft.version 0) until their log holds an
    upgrade's control records (:func:`_start_control_records`). ``voter_change`` is the
    voter change a leader runs (§3.15). ``can_become_voter`` is ``KafkaRaftClient``'s ``canBecomeVoter`` (a node with
    the controller role): it flushes what it fetches as a voter does and, with ``controller.quorum.auto.join.enable``
    (``config.auto_join``), an observer asks to join the voters (:func:`_auto_join`).
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


def new_node(local_id: int, voters: frozenset[int], voter_endpoints: FrozenMap[int, tuple[str, ...]],
             config: QuorumConfig = QuorumConfig(), log: RaftLog = RaftLog(), stored: Optional[ElectionState] = None,
             now: int = 0, jitter: int = 0, directory_id: Optional[str] = None,
             cluster_id: Optional[str] = None) -> RaftNode:
    """Start a node: ``QuorumState.initialize`` from the quorum-state file (absent ⇒ epoch 0) and the log (§3.2), then
    ``KafkaRaftClient.initialize`` (:func:`_initialize`). A log holding control records (an upgrade to kraft.version
    1) is read first, as every node's ``partitionState.updateState`` does (:func:`_new_static_node`)."""
    return _new_static_node(local_id, voters, voter_endpoints, config, log, stored, now, jitter, directory_id,
                            cluster_id, EMPTY_MAP)


def _new_static_node(local_id: int, voters: frozenset[int], voter_endpoints: FrozenMap[int, tuple[str, ...]],
                     config: QuorumConfig, log: RaftLog, stored: Optional[ElectionState], now: int, jitter: int,
                     directory_id: Optional[str], cluster_id: Optional[str],
                     snapshot_records: FrozenMap[tuple[int, int], tuple[Any, ...]]) -> RaftNode:
    """``KafkaRaftClient.initialize`` of a node with static voters: ``partitionState.updateState`` reads the control
    records of its latest snapshot (those it wrote after an upgrade, else none) and log before
    ``QuorumState.initialize``, so an upgraded log gives the voters of its latest VotersRecord (§3.14, §3.15)."""
    if not _holds_control_records(log.entries) and not any(snapshot_records.values()):
        return _initialize(_quorum_initialize(local_id, voters, voter_endpoints, config, log, stored, now, jitter,
                                              directory_id, cluster_id), now, jitter)
    dynamic = _static_control(local_id, voters, voter_endpoints, log, snapshot_records)
    voters_in_force, endpoints = _voters_in_force(local_id, dynamic)
    node = _quorum_initialize(local_id, voters_in_force, endpoints, config, log, stored, now, jitter, directory_id,
                              cluster_id)
    return _initialize(_with_dynamic_voters(node, dynamic), now, jitter)


def _quorum_initialize(local_id: int, voters: frozenset[int], voter_endpoints: FrozenMap[int, tuple[str, ...]],
                       config: QuorumConfig, log: RaftLog, stored: Optional[ElectionState], now: int, jitter: int,
                       directory_id: Optional[str], cluster_id: Optional[str]) -> RaftNode:
    """``QuorumState.initialize``: the state the quorum-state file and the log's last epoch give (§3.2)."""
    stored = stored if stored is not None else ElectionState(epoch=0)
    state = raft_state.initial_state(stored, local_id, voters, log.last_fetched_epoch, voter_endpoints, now, config,
                                     jitter)
    return RaftNode(local_id=local_id, voters=voters, voter_endpoints=voter_endpoints, config=config, state=state,
                    log=log, stored=raft_state.election_state(state, local_id),
                    directory_id=directory_id, cluster_id=cluster_id)


def _initialize(node: RaftNode, now: int, jitter: int) -> RaftNode:
    """``KafkaRaftClient.initialize``: the only voter does not wait for an election timeout; Unattached, Follower or
    Resigned it starts an election at once (``transitionToProspective``), a Candidate checks its votes
    (``onBecomeCandidate``), and either way it is Leader before its first poll (§3.5); no poll follows, so its
    start-of-epoch records wait for the next one (``Leader.unwritten``; Kafka 4.3 ``KafkaRaftClient.initialize``: a
    restarted lone leader has not written its LeaderChange yet)."""
    if node.voters != frozenset({node.local_id}) or not node.is_voter:  # ``isOnlyVoter(localReplicaKey)``
        return node
    out: Outputs = []  # the only voter has no one to send to
    if isinstance(node.state, Candidate):
        return _maybe_candidate_won(node, now, out, in_poll=True)
    if isinstance(node.state, (Unattached, Follower, Resigned)):
        return _to_prospective(node, now, jitter, out, in_poll=True)
    return node


def new_dynamic_node(local_id: int, directory_id: str, local_listeners: FrozenMap[str, tuple[str, int]],
                     config: QuorumConfig = QuorumConfig(), log: RaftLog = RaftLog(),
                     snapshot_records: FrozenMap[tuple[int, int], tuple[Any, ...]] = EMPTY_MAP,
                     stored: Optional[ElectionState] = None, now: int = 0, jitter: int = 0,
                     cluster_id: Optional[str] = None, listener_name: str = "CONTROLLER",
                     can_become_voter: bool = False, bootstrap_servers: Optional[tuple[int, ...]] = None) -> RaftNode:
    """Start a kraft.version 1 node (KIP-853): ``KafkaRaftClient.initialize`` reads the control records of its latest
    snapshot (the bootstrap checkpoint's at first) and log (``partitionState.updateState``) before
    ``QuorumState.initialize``, so its voters are the latest voter set there (§3.14); ``can_become_voter`` is
    ``canBecomeVoter``; its bootstrap servers are ``bootstrap_servers`` (:attr:`DynamicVoters.bootstrap_servers`), by
    default the addresses of the voters it starts with (the bootstrap checkpoint's), in id order, as Kafka numbers
    them: -2, -3, ... (``KafkaRaftClient``'s constructor; ``controller.quorum.voters`` stays empty, which
    ``StorageTool`` requires of a node formatted with ``--initial-controllers``)."""
    dynamic = DynamicVoters(control=raft_voter_history.ControlRecordState(), local_listeners=local_listeners,
                            snapshot_records=snapshot_records, listener_name=listener_name)
    dynamic = evolve(dynamic, control=_read_control(dynamic, log))
    voters, endpoints = _voters_in_force(local_id, dynamic)
    if bootstrap_servers is None:
        bootstrap_servers = tuple(-2 - i for i in range(len(voters)))
    if not bootstrap_servers:  # ``KafkaRaftClient.initialize``: no static voters and no bootstrap servers
        raise ValueError("Missing kraft bootstrap servers: controller.quorum.bootstrap.servers must name some")
    dynamic = evolve(dynamic, bootstrap_servers=bootstrap_servers)
    node = _quorum_initialize(local_id, voters, endpoints, config, log, stored, now, jitter, directory_id, cluster_id)
    return _initialize(evolve(_with_dynamic_voters(node, dynamic), can_become_voter=can_become_voter), now, jitter)


def _with_dynamic_voters(node: RaftNode, dynamic: DynamicVoters) -> RaftNode:
    """The node started by ``QuorumState.initialize`` given the control records it read: ``durableTransitionTo`` its
    first state writes the quorum-state file at the kraft.version read, so from kraft.version 1 a vote keeps its
    directory id, its own included (:func:`_stored_election`; ``ElectionState.toQuorumStateData``), §3.3."""
    node = evolve(node, dynamic=dynamic)
    return evolve(node, stored=_stored_election(node, node.state))


def quorum_state_file(node: RaftNode) -> str:
    """The quorum-state file as Kafka writes it (``FileQuorumStateStore.writeElectionState``): data version 0 with the
    voters under kraft.version 0, data version 1 with the voted directory id under kraft.version 1 (§3.3)."""
    kraft_version = (raft_voters.KRAFT_VERSION_0 if node.dynamic is None
                     else raft_voter_history.last_kraft_version(node.dynamic.control))
    stored = node.stored
    if stored.voted_key is not None and stored.voted_key.id == node.local_id:  # a vote for itself: its own key
        stored = evolve(stored, voted_key=ReplicaKey(id=node.local_id, directory_id=node.directory_id))
    return write_quorum_state(stored, kraft_version, node.voters)


def restart(node: RaftNode, now: int, jitter: int = 0) -> RaftNode:
    """A crash and restart: unflushed records and all soft state are lost; the quorum-state file survives.

    Correlation ids keep counting, standing in for the connections a restart closes: no response to a
    request of the previous incarnation is ever taken for one of the new. A kraft.version 1 node reads its voters
    anew from its snapshots and recovered log (:func:`new_dynamic_node`).
    """
    dynamic = node.dynamic
    if dynamic is not None and dynamic.static_voters is not None:  # configured static voters, read anew
        fresh = _new_static_node(node.local_id, dynamic.static_voters, dynamic.static_endpoints, node.config,
                                 raft_log.recover(node.log), node.stored, now, jitter, node.directory_id,
                                 node.cluster_id, dynamic.snapshot_records)
        return evolve(fresh, next_correlation_id=node.next_correlation_id, can_become_voter=node.can_become_voter)
    if dynamic is not None:
        fresh = new_dynamic_node(node.local_id, node.directory_id, dynamic.local_listeners, node.config,
                                 raft_log.recover(node.log), dynamic.snapshot_records, node.stored, now, jitter,
                                 node.cluster_id, dynamic.listener_name, node.can_become_voter,
                                 dynamic.bootstrap_servers)
        return evolve(fresh, next_correlation_id=node.next_correlation_id)
    fresh = new_node(node.local_id, node.voters, node.voter_endpoints, node.config, raft_log.recover(node.log),
                     node.stored, now, jitter, node.directory_id, node.cluster_id)
    return evolve(fresh, next_correlation_id=node.next_correlation_id, can_become_voter=node.can_become_voter)


def step(node: RaftNode, message: Any, now: int, jitter: int = 0, bootstrap: int = 0,
         order: tuple[int, ...] = ()) -> tuple[RaftNode, tuple[Send, ...]]:
    """Handle one input, then poll the role's timers once; returns the new node and the messages to send.

    As in Kafka, a transition made by the poll sends its requests on the next poll (the next ``Tick``). Parked
    fetches whose deadline has come are answered first (the expiration service fires when the clock reaches it).
    ``bootstrap`` is ``RequestManager``'s random start index into the bootstrap servers (any non-negative int).
    ``order`` is the order in which a poll that sends one request to several nodes sends them (:func:`_ordered`).
    A node whose graceful shutdown has finished takes no input (:class:`ShutDownError`). The listener is handed what
    the input committed (:func:`_update_listeners_progress`), then, unless the poll finished a shutdown (Kafka's
    ``poll`` returns at once), learns what the poll changed (:func:`_poll_listeners`). A leader's voter change is
    answered once the high watermark commits its VotersRecord (:func:`_maybe_complete_voter_change`): by a fetch that
    moves it, before that fetch's answer (:func:`_on_update_leader_high_watermark`), or by the leader's own flush of
    the poll that writes the record, before the parked fetches (:func:`_leader_append`).
    """
    if node.shutdown is not None and node.shutdown.outcome is not None:
        raise ShutDownError(f"node {node.local_id}'s graceful shutdown has finished ({node.shutdown.outcome})")
    out: Outputs = []
    if node.parked:
        node = _expire_parked(node, now, out)
    node = _update_listeners_progress(_HANDLERS[type(message)](node, message, now, jitter, out))
    if node.voter_change is not None:
        node = _maybe_complete_voter_change(node, out)
    node = _poll(node, now, jitter, bootstrap, out, order)
    if node.shutdown is None or node.shutdown.outcome is None:
        node = _poll_listeners(node)
    return node, tuple(out)


def _update_listeners_progress(node: RaftNode) -> RaftNode:
    """``updateListenersProgress`` (run wherever the high watermark moves, and by ``pollListeners``): a listener behind
    a known high watermark is handed the latest snapshot if :func:`raft_rules.listener_loads_snapshot`
    (``fireHandleSnapshot``), then the committed records up to the high watermark (``handleCommit``), §3.12, KIP-630.
    A listener handed nothing yet counts as new (Kafka's one reset to offset 0 at a high watermark of 0 would skip a
    later snapshot ending at offset 0; the view keeps no such difference)."""
    hw = getattr(node.state, "high_watermark", -1)
    view, latest = node.listener, node.log.latest_snapshot
    if view is None or hw < 0:
        return node
    starting = view.committed_end == 0 and view.loaded_snapshot is None
    if latest is not None and raft_rules.listener_loads_snapshot(view.committed_end, starting, hw,
                                                                 node.log.start_offset):
        view = evolve(view, committed_end=latest.end_offset, loaded_snapshot=latest.id)
    if hw > view.committed_end:
        view = evolve(view, committed_end=hw)
    return node if view is node.listener else evolve(node, listener=view)


def _maybe_fire_leader_change(node: RaftNode) -> RaftNode:
    """``maybeFireLeaderChange`` (by ``pollListeners``, ``pollLeader`` and the transitions to Unattached, Candidate and
    Follower): a registered listener learns the current (leader, epoch) when
    :func:`raft_rules.should_fire_leader_change`; the local leader only once :func:`raft_rules.listener_caught_up` to
    its epoch start (Kafka's listener contract, §3.12)."""
    state, view = node.state, node.listener
    if view is None:
        return node
    leader = raft_state.leader_of(state)
    if not raft_rules.should_fire_leader_change(state.epoch, leader, view.epoch, view.leader_id):
        return node
    if type(state) is Leader and not raft_rules.listener_caught_up(view.committed_end, state.epoch_start_offset):
        return node
    return evolve(node, listener=evolve(view, leader_id=leader, epoch=state.epoch))


def _poll_listeners(node: RaftNode) -> RaftNode:
    """``pollListeners``, last in every poll: the listener is registered if it is not yet, catches up to the high
    watermark, then learns the leader and epoch, except in Resigned (the local node leads, but appends would fail and
    no epoch start is tracked), §3.12."""
    if node.listener is None:
        node = evolve(node, listener=ListenerView())
    node = _update_listeners_progress(node)
    return node if isinstance(node.state, Resigned) else _maybe_fire_leader_change(node)


# --------------------------------------------------------------------------------------------------
# The voter set in force (KIP-853, §3.14)


def _read_control(dynamic: DynamicVoters, log: RaftLog) -> raft_voter_history.ControlRecordState:
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


def _voters_in_force(local_id: int, dynamic: DynamicVoters) -> tuple[frozenset[int],
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


def _with_control(node: RaftNode, control: raft_voter_history.ControlRecordState) -> RaftNode:
    """The node with its control-record state replaced and ``voters`` / ``voter_endpoints`` following it."""
    dynamic = evolve(node.dynamic, control=control)
    voters, endpoints = _voters_in_force(node.local_id, dynamic)
    if voters == node.voters and endpoints == node.voter_endpoints:
        return evolve(node, dynamic=dynamic)
    return evolve(node, dynamic=dynamic, voters=voters, voter_endpoints=endpoints)


def _holds_control_records(entries: tuple[LogEntry, ...]) -> bool:
    """Whether any entry is a KRaftVersionRecord or VotersRecord, which ``KRaftControlRecordStateMachine`` reads."""
    return any(raft_voter_history.is_control_record(e.record) for e in entries)


def _static_voter_set(voters: frozenset[int], endpoints: FrozenMap[int, tuple[str, ...]]) -> raft_voters.VoterSet:
    """``VoterSet.fromInetSocketAddresses``: static voters without directory id, their endpoints, kraft.version 0 to 0
    (§3.14)."""
    return raft_voters.VoterSet(voters=FrozenMap({v: raft_voters.VoterNode(
        voter_key=ReplicaKey(id=v), listeners=raft_voters.listeners_of(endpoints.get(v, ())),
        supported_kraft_version=(0, 0)) for v in voters}))


def _static_control(local_id: int, voters: frozenset[int], endpoints: FrozenMap[int, tuple[str, ...]], log: RaftLog,
                    snapshot_records: FrozenMap[tuple[int, int], tuple[Any, ...]]) -> DynamicVoters:
    """``KRaftControlRecordStateMachine`` of a node with static voters (its ``staticVoterSet``) after reading its
    snapshots and log (:func:`_read_control`): a snapshot whose control records it did not write is a kraft.version 0
    one, which holds none (§3.14)."""
    known = FrozenMap({**{s.id: () for s in log.snapshots}, **snapshot_records})
    dynamic = DynamicVoters(control=raft_voter_history.ControlRecordState(
        static_voter_set=_static_voter_set(voters, endpoints)),
        local_listeners=raft_voters.listeners_of(endpoints.get(local_id, ())), snapshot_records=known,
        static_voters=voters, static_endpoints=endpoints)
    return evolve(dynamic, control=_read_control(dynamic, log))


def _start_control_records(node: RaftNode,
                           snapshot_records: FrozenMap[tuple[int, int], tuple[Any, ...]] = EMPTY_MAP) -> RaftNode:
    """A node with static voters whose log or fetched snapshot (``snapshot_records``) now holds a control record (the
    upgrade's KRaftVersionRecord and VotersRecord, written as its leader or fetched): Kafka's control-record state
    machine runs for every node (``partitionState.updateState``), so from here on its kraft.version and voters are
    those of its log (§3.14, §3.15)."""
    dynamic = _static_control(node.local_id, node.voters, node.voter_endpoints, node.log, snapshot_records)
    voters, endpoints = _voters_in_force(node.local_id, dynamic)
    return evolve(node, dynamic=dynamic, voters=voters, voter_endpoints=endpoints)


def _update_partition_state(node: RaftNode) -> RaftNode:
    """``partitionState.updateState()`` after the log grew or was replaced by a snapshot: a kraft.version 1 node reads
    the new control records (:func:`_read_control`), and its voters are the latest set (§3.14); static voters stay."""
    if node.dynamic is None:
        return node
    control = _read_control(node.dynamic, node.log)
    return node if control == node.dynamic.control else _with_control(node, control)


def _voter_keys(node: RaftNode) -> frozenset[ReplicaKey]:
    """``partitionState.lastVoterSet().voterKeys()``: the voters in force with the directory ids their set names (none
    for static voters), §3.14."""
    if node.dynamic is None:
        return frozenset(ReplicaKey(id=v) for v in node.voters)
    return raft_voters.voter_keys(raft_voter_history.last_voter_set(node.dynamic.control))


def _local_voter_node(node: RaftNode) -> raft_voters.VoterNode:
    """``quorum.localVoterNodeOrThrow``: the local replica key, its listeners and supported kraft.version range."""
    return raft_voters.VoterNode(voter_key=ReplicaKey(id=node.local_id, directory_id=node.directory_id),
                                 listeners=node.dynamic.local_listeners,
                                 supported_kraft_version=SUPPORTED_KRAFT_VERSIONS)


def _volatile_voters_at_epoch_start(node: RaftNode) -> Optional[raft_voters.VoterSet]:
    """``LeaderState``'s constructor: a kraft.version 0 leader keeps in memory the voters at its epoch start with its
    own node in place (:func:`raft_reconfig.volatile_voters_at_epoch_start`); static voters are
    ``VoterSet.fromInetSocketAddresses``'s (no directory id, their endpoints, kraft.version 0 to 0), §3.15."""
    if node.dynamic is not None:
        control = node.dynamic.control
        return raft_reconfig.volatile_voters_at_epoch_start(raft_voter_history.last_voter_set(control),
                                                            _local_voter_node(node),
                                                            raft_voter_history.last_kraft_version(control))
    static = _static_voter_set(node.voters, node.voter_endpoints)
    local = raft_voters.VoterNode(voter_key=ReplicaKey(id=node.local_id, directory_id=node.directory_id),
                                  listeners=raft_voters.listeners_of(node.voter_endpoints.get(node.local_id, ())),
                                  supported_kraft_version=SUPPORTED_KRAFT_VERSIONS)
    return raft_reconfig.volatile_voters_at_epoch_start(static, local, raft_voters.KRAFT_VERSION_0)


def _start_of_epoch_records(node: RaftNode) -> tuple[Any, ...]:
    """``LeaderState.appendStartOfEpochControlRecords`` after the LeaderChange record: a kraft.version 1 leader writes
    the kraft.version and its own voter node when the set is the bootstrap checkpoint's or lacks it
    (:func:`raft_reconfig.start_of_epoch_control_records`), §3.15."""
    if node.dynamic is None:
        return ()
    control = node.dynamic.control
    entry = raft_voter_history.last_voter_set_entry(control)
    return raft_reconfig.start_of_epoch_control_records(
        raft_voter_history.last_voter_set(control), None if entry is None else entry[0],
        raft_voter_history.last_kraft_version(control), _local_voter_node(node))


# --------------------------------------------------------------------------------------------------
# State changes shared by every handler


def _moved(node: RaftNode, state: QuorumState, durable: bool, out: Outputs) -> RaftNode:
    """Switch state: write the quorum-state file if durable, reset connections (§3.2; ``RequestManager.resetAll``:
    nothing outstanding, nothing backing off).

    Parked fetches fail with NOT_LEADER_OR_FOLLOWER only on becoming Resigned (``transitionToResigned``, answered
    as the leader still) or Follower (``onBecomeFollower``, answered as the follower), in purgatory order; other
    transitions leave them parked (Kafka 4.3 ``KafkaRaftClient``: ``transitionToUnattached`` does not touch the
    fetch purgatory). A voter change the leader was running is answered NOT_LEADER_OR_FOLLOWER (``LeaderState.close``).
    """
    if node.parked and isinstance(state, (Follower, Resigned)):
        answering = node.state if isinstance(state, Resigned) else state
        for parked in _purgatory_order(node.parked):
            # A node no longer leading cannot complete a fetch: the fetcher learns who leads now.
            out.append(Send(destination=parked.source,
                            message=_fetch_error_response(node, Errors.NOT_LEADER_OR_FOLLOWER, parked.request,
                                                                 answering)))
        node = evolve(node, parked=())
    if node.voter_change is not None and not isinstance(state, Leader):
        node = _voter_change_done(node, Errors.NOT_LEADER_OR_FOLLOWER, None, out)  # ``LeaderState.close``
    stored = _stored_election(node, state) if durable else node.stored
    return evolve(node, state=state, stored=stored, inflight=EMPTY_MAP, backoff=EMPTY_MAP)


def voted_key(node: RaftNode) -> Optional[ReplicaKey]:
    """``QuorumState``'s ``ElectionState.votedKey``: the vote the current state holds; a vote for itself (a
    Candidate's, and the one a Prospective keeps after it) is the local replica key, directory id included
    (``localReplicaKeyOrThrow``, ``ElectionState.withVotedCandidate``), §3.2."""
    key = raft_state.voted_key_of(node.state, node.local_id)
    if key is not None and key.id == node.local_id:
        return ReplicaKey(id=node.local_id, directory_id=node.directory_id)
    return key


def _stored_election(node: RaftNode, state: QuorumState) -> ElectionState:
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


def _to_unattached(node: RaftNode, epoch: int, now: int, jitter: int, out: Outputs,
                   leader_id: int = NO_LEADER) -> RaftNode:
    """``transitionToUnattached`` (durable), keeping the election timer as §3.2 says; the listener may learn it
    (:func:`_maybe_fire_leader_change`)."""
    deadline = raft_state.election_deadline(node.config, now, jitter, node.is_voter)
    state = raft_state.transition_to_unattached(node.state, epoch, deadline, len(node.voters), leader_id)
    return _maybe_fire_leader_change(_moved(node, state, True, out))


def _to_follower(node: RaftNode, epoch: int, leader_id: int, endpoints: tuple[str, ...], now: int,
                 out: Outputs) -> RaftNode:
    """``transitionToFollower``; endpoints missing from the message come from the voter set; the listener may learn it
    (:func:`_maybe_fire_leader_change`)."""
    endpoints = endpoints or node.voter_endpoints.get(leader_id, ())
    state = raft_state.transition_to_follower(node.state, node.local_id, epoch, leader_id, endpoints,
                                              now + node.config.fetch_timeout_ms)
    return _maybe_fire_leader_change(_moved(node, state, True, out))


def _to_prospective(node: RaftNode, now: int, jitter: int, out: Outputs, in_poll: bool = False) -> RaftNode:
    """``transitionToProspective``; a single voter goes on to Candidate and Leader at once (§3.5); ``in_poll``: the
    poll's own timer moved it (:func:`_to_leader`)."""
    deadline = raft_state.election_deadline(node.config, now, jitter)
    node = _moved(node, raft_state.transition_to_prospective(node.state, node.local_id, node.is_voter, deadline),
                  False, out)
    return _maybe_prospective_won(node, now, jitter, out, in_poll)


def _maybe_prospective_won(node: RaftNode, now: int, jitter: int, out: Outputs, in_poll: bool = False) -> RaftNode:
    """``maybeTransitionToCandidate``: a majority of pre-votes (self included) makes a Candidate (§3.5)."""
    state = node.state
    if raft_rules.election_won(len(node.voters), len(state.granted & node.voters)):
        return _to_candidate(node, now, jitter, out, in_poll)
    return node


def _to_candidate(node: RaftNode, now: int, jitter: int, out: Outputs, in_poll: bool = False) -> RaftNode:
    """``transitionToCandidate`` (durable vote for itself), which the listener may learn
    (:func:`_maybe_fire_leader_change`); a lone voter is at once Leader (§3.5)."""
    deadline = raft_state.election_deadline(node.config, now, jitter)
    node = _moved(node, raft_state.transition_to_candidate(node.state, node.local_id, deadline), True, out)
    return _maybe_candidate_won(_maybe_fire_leader_change(node), now, out, in_poll)


def _maybe_candidate_won(node: RaftNode, now: int, out: Outputs, in_poll: bool = False) -> RaftNode:
    """``maybeTransitionToLeader``: a majority of granted votes (self included) makes the Leader (§3.5)."""
    if raft_rules.election_won(len(node.voters), len(node.state.granted & node.voters)):
        return _to_leader(node, now, out, in_poll)
    return node


def _to_leader(node: RaftNode, now: int, out: Outputs, in_poll: bool = False) -> RaftNode:
    """``onBecomeLeader``: epochStartOffset = LEO, the epoch starts there in the log's epoch cache
    (:func:`raft_log.initialize_leader_epoch`), then the LeaderChange control record is appended and flushed.

    Kafka puts the record in the accumulator, which the poll that follows writes (``pollLeader``:
    ``maybeAppendBatches``); a node shutting down resigns in that poll first, so its record is never written (Kafka
    4.3 ``KafkaRaftClient.onBecomeLeader``, ``pollLeader``). A leader elected by the poll's own timer (``in_poll``: a
    lone voter's ``pollFollowerAsVoter``, ``pollUnattachedAsVoter``, ``pollCandidate``) is written by the next poll:
    its records wait in ``Leader.unwritten``. A kraft.version 1 leader's start-of-epoch control records follow the
    LeaderChange record (:func:`_start_of_epoch_records`); a kraft.version 0 leader keeps its voters in memory
    (:func:`_volatile_voters_at_epoch_start`).
    """
    leader = raft_state.transition_to_leader(node.state, node.local_id, node.voters, node.log.end_offset, now,
                                             node.config, FrozenMap({k.id: k.directory_id for k in _voter_keys(node)}))
    leader = evolve(leader, volatile_voters=_volatile_voters_at_epoch_start(node))
    node = evolve(_moved(node, leader, True, out), log=raft_log.initialize_leader_epoch(node.log, leader.epoch))
    if node.shutdown is not None:
        return node
    record = LeaderChangeMessage(leader_id=node.local_id, voters=tuple(sorted(node.voters)),
                                 granting_voters=tuple(sorted(leader.granting_voters)))
    if in_poll:
        return evolve(node, state=evolve(node.state, unwritten=(record,) + _start_of_epoch_records(node)))
    return _leader_append(node, (record,) + _start_of_epoch_records(node), now, out)


def _leader_append(node: RaftNode, records: tuple[Any, ...], now: int, out: Outputs) -> RaftNode:
    """``appendAsLeader`` + ``flushLeaderLog``: the leader's end offset counts once flushed; parked fetches retry. A
    kraft.version 1 leader reads the control records it wrote (``partitionState.updateState``), and its replica states
    and high watermark follow the voter set in force (:func:`raft_leader.update_local_state`, §3.14). A high watermark
    the flush moved answers the committed voter change before the parked fetches (Kafka 4.3 ``KafkaRaftClient``
    ``updateLeaderEndOffsetAndTimestamp``: :func:`_on_update_leader_high_watermark`)."""
    high_watermark = node.state.high_watermark
    log = raft_log.flush(raft_log.append_as_leader(node.log, records, node.state.epoch))
    if node.dynamic is None and not any(raft_voter_history.is_control_record(r) for r in records):
        node = evolve(node, log=log, state=raft_leader.update_local_end_offset(node.state, log.end_offset))
    else:  # a static leader's upgrade starts its control-record state machine (§3.15)
        node = evolve(node, log=log)
        node = _start_control_records(node) if node.dynamic is None else _update_partition_state(node)
        node = evolve(node, state=raft_leader.update_local_state(node.state, log.end_offset, _voter_keys(node)))
    if node.state.high_watermark != high_watermark:
        return _on_update_leader_high_watermark(node, now, out)
    return _complete_parked(node, now, out) if node.parked else node


def _resign(node: RaftNode, now: int, jitter: int, out: Outputs) -> RaftNode:
    """``transitionToResigned``: EndQuorumEpoch to the other voters (from the next poll), best successors first (§3.6)."""
    successors = raft_leader.voters_by_descending_end_offset(node.state)
    deadline = raft_state.election_deadline(node.config, now, jitter)
    return _moved(node, raft_state.transition_to_resigned(node.state, successors, node.voters, deadline), False, out)


def _maybe_transition(node: RaftNode, leader_id: int, epoch: int, endpoints: tuple[str, ...], now: int, jitter: int,
                      out: Outputs) -> RaftNode:
    """``maybeTransition`` (§3.8): a newer epoch or a newly learnt (better reachable) leader moves the node."""
    state = node.state
    local_leader = raft_state.leader_of(state)
    if epoch == state.epoch and leader_id != NO_LEADER and local_leader != NO_LEADER and leader_id != local_leader:
        raise RaftFatalError(f"leader {leader_id} in epoch {epoch} conflicts with known leader {local_leader}")
    if epoch > state.epoch:
        if leader_id != NO_LEADER:
            return _to_follower(node, epoch, leader_id, endpoints, now, out)
        return _to_unattached(node, epoch, now, jitter, out)
    endpoints = endpoints or node.voter_endpoints.get(leader_id, ())
    if leader_id != NO_LEADER and (local_leader == NO_LEADER or len(endpoints) > len(_leader_endpoints(node))):
        return _to_follower(node, epoch, leader_id, endpoints, now, out)
    return node


def _leader_endpoints(node: RaftNode) -> tuple[str, ...]:
    """``quorum.leaderEndpoints()``: the followed leader's, our own as leader/resigned, else none."""
    state = node.state
    if isinstance(state, (Leader, Resigned)):
        return node.voter_endpoints.get(node.local_id, ())
    return getattr(state, "leader_endpoints", ())


def _common_response(node: RaftNode, error: Errors, leader_id: int, epoch: int, endpoints: tuple[str, ...],
                     now: int, jitter: int, out: Outputs) -> tuple[RaftNode, Optional[bool]]:
    """``maybeHandleCommonResponse`` (§3.8): (node, outcome). ``None``: not handled here, go on with the role's
    handling; ``True``/``False``: handled, and whether the request succeeded (False: BROKER_NOT_AVAILABLE, the
    connection backs off). INVALID_VOTER_KEY is handled (the request was not for that voter)."""
    local_epoch = node.state.epoch
    if epoch < local_epoch or error == Errors.UNKNOWN_LEADER_EPOCH:
        return node, True
    if epoch > local_epoch or error in (Errors.FENCED_LEADER_EPOCH, Errors.NOT_LEADER_OR_FOLLOWER):
        return _maybe_transition(node, leader_id, epoch, endpoints, now, jitter, out), True
    if leader_id != NO_LEADER and raft_state.leader_of(node.state) == NO_LEADER:
        node = _to_follower(node, epoch, leader_id, endpoints, now, out)
        return node, None if error == Errors.NONE else True
    if error == Errors.BROKER_NOT_AVAILABLE:
        return node, False
    if error == Errors.INVALID_VOTER_KEY:
        return node, True
    if error == Errors.INVALID_REQUEST:
        raise RaftFatalError("a request from this node was rejected as INVALID_REQUEST")
    return node, None


def _top_level_error(error: Errors) -> bool:
    """``handleTopLevelError``: the request failed (its connection backs off); CLUSTER_AUTHORIZATION_FAILED is fatal."""
    if error == Errors.CLUSTER_AUTHORIZATION_FAILED:
        raise RaftFatalError("cluster authorization failed")
    return False


def _expected(node: RaftNode, source: int, correlation_id: int) -> bool:
    """``RequestManager.isResponseExpected``: the response answers the request outstanding to ``source``."""
    pending = node.inflight.get(source)
    return pending is not None and pending[0] == correlation_id


def _answered(node: RaftNode, source: int, correlation_id: int, success: bool, now: int) -> RaftNode:
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


def _send_request(node: RaftNode, destination: int, request: Any, now: int, out: Outputs) -> RaftNode:
    """Send ``request`` with a fresh correlation id and remember it as outstanding to ``destination``."""
    cid = node.next_correlation_id
    out.append(Send(destination=destination, message=evolve(request, correlation_id=cid)))
    backoff = node.backoff.remove(destination) if destination in node.backoff else node.backoff
    return evolve(node, inflight=node.inflight.set(destination, (cid, now)), backoff=backoff,
                  next_correlation_id=cid + 1)


def _ready(node: RaftNode, destination: int, now: int) -> bool:
    """``RequestManager.isReady``: no request outstanding to ``destination`` or it timed out
    (``controller.quorum.request.timeout.ms``), and no back-off running there (``quorum.retry.backoff.ms``)."""
    pending = node.inflight.get(destination)
    if pending is not None and raft_rules.request_in_flight(now, pending[1], node.config.request_timeout_ms):
        return False
    return not _backing_off(node, destination, now)


def _backing_off(node: RaftNode, destination: int, now: int) -> bool:
    """``RequestManager.isBackingOff``: the last request to ``destination`` failed less than the back-off ago."""
    failed_at = node.backoff.get(destination)
    return failed_at is not None and raft_rules.backing_off(now, failed_at, node.config.retry_backoff_ms)


def _without_timed_out(node: RaftNode, now: int) -> RaftNode:
    """``RequestManager.hasAnyInflightRequest`` first forgets the requests that timed out (their answers are then
    dropped); the node has a request in flight iff ``inflight`` is still not empty."""
    timeout = node.config.request_timeout_ms
    live = {dst: pending for dst, pending in node.inflight.items()
            if raft_rules.request_in_flight(now, pending[1], timeout)}
    if len(live) != len(node.inflight):
        node = evolve(node, inflight=FrozenMap(live))
    backing_off = {dst: failed_at for dst, failed_at in node.backoff.items() if _backing_off(node, dst, now)}
    if len(backing_off) != len(node.backoff):  # back-offs over: ready again
        node = evolve(node, backoff=FrozenMap(backing_off))
    return node


def _valid_voter_key(node: RaftNode, voter_id: Optional[int], voter_directory_id: Optional[str]) -> bool:
    """``isValidVoterKey``: an absent key matches; a directory is compared only when given (§3.4 step 6)."""
    if voter_id is None:
        return True
    return voter_id == node.local_id and (voter_directory_id is None or voter_directory_id == node.directory_id)


def _voter_only_error(node: RaftNode, remote_id: int, remote_epoch: int) -> Optional[Errors]:
    """``validateVoterOnlyRequest``: an older epoch is fenced; a negative id is invalid (§3.4 step 4, §3.9)."""
    # A request from an older epoch is from a node that missed an election: it learns the current epoch.
    if remote_epoch < node.state.epoch:
        return Errors.FENCED_LEADER_EPOCH
    # Only a replica (a non-negative id) can vote or lead.
    if remote_id < 0:
        return Errors.INVALID_REQUEST
    return None


# --------------------------------------------------------------------------------------------------
# Vote (§3.4, §3.5)


def can_grant_vote(node: RaftNode, candidate: ReplicaKey, log_up_to_date: bool, pre_vote: bool) -> bool:
    """``QuorumState.canGrantVote`` for the node's current state (§3.4 table)."""
    state = node.state
    voted = getattr(state, "voted_key", None)
    matches = voted is not None and raft_rules.voted_key_matches(voted.id, voted.directory_id, candidate.id,
                                                                 candidate.directory_id)
    return raft_rules.grant_vote(state.role, pre_vote, log_up_to_date, voted is not None, matches,
                                 raft_state.leader_of(state) != NO_LEADER, getattr(state, "has_fetched", False))


def _vote_response(node: RaftNode, partition_error: Errors, granted: bool, correlation_id: int) -> VoteResponse:
    """``buildVoteResponse``: the receiver's epoch, leader and leader endpoints after handling (§3.4 step 10)."""
    return VoteResponse(source=node.local_id, partition_error=partition_error, leader_epoch=node.state.epoch,
                        leader_id=raft_state.leader_of(node.state), vote_granted=granted,
                        leader_endpoints=_leader_endpoints(node), correlation_id=correlation_id)


def _handle_vote_request(node: RaftNode, req: VoteRequest, now: int, jitter: int, out: Outputs) -> RaftNode:
    """``handleVoteRequest`` in the order of §3.4."""
    src, cid = req.replica_id, req.correlation_id
    # A node of another cluster must not take part in this quorum's elections.
    if req.cluster_id is not None and req.cluster_id != node.cluster_id:
        out.append(Send(destination=src,
                        message=VoteResponse(source=node.local_id, error=Errors.INCONSISTENT_CLUSTER_ID,
                                          correlation_id=cid)))
        return node
    # The quorum replicates one partition, the metadata log's: a vote for any other is malformed.
    if req.topic_partition != METADATA_PARTITION:
        out.append(Send(destination=src, message=VoteResponse(source=node.local_id, error=Errors.INVALID_REQUEST,
                                                              correlation_id=cid)))
        return node
    # A negative offset or epoch, or a last epoch beyond the epoch asked for, is no log a candidate could have.
    if (req.last_offset < 0 or req.last_offset_epoch < 0
            or raft_rules.is_illegal_vote_epoch(req.pre_vote, req.last_offset_epoch, req.replica_epoch)):
        out.append(Send(destination=src, message=_vote_response(node, Errors.INVALID_REQUEST, False, cid)))
        return node
    error = _voter_only_error(node, req.replica_id, req.replica_epoch)
    if error is not None:
        out.append(Send(destination=src, message=_vote_response(node, error, False, cid)))
        return node
    if req.replica_epoch > node.state.epoch:
        node = _to_unattached(node, req.replica_epoch, now, jitter, out)
    # The vote was asked of another voter (id or directory): this node must not answer for it.
    if not _valid_voter_key(node, req.voter_id, req.voter_directory_id):
        out.append(Send(destination=src, message=_vote_response(node, Errors.INVALID_VOTER_KEY, False, cid)))
        return node
    up_to_date = raft_rules.is_log_up_to_date(req.last_offset_epoch, req.last_offset, node.log.last_fetched_epoch,
                                              node.log.end_offset)
    candidate = ReplicaKey(id=req.replica_id, directory_id=req.replica_directory_id)
    granted = can_grant_vote(node, candidate, up_to_date, req.pre_vote)
    state = node.state
    if (granted and not req.pre_vote and isinstance(state, (Unattached, Prospective))
            and state.voted_key is None):
        deadline = raft_state.election_deadline(node.config, now, jitter)
        voted = raft_state.transition_to_unattached_voted(state, state.epoch, candidate, deadline, node.local_id)
        node = evolve(node, state=voted, stored=_stored_election(node, voted))
    out.append(Send(destination=src, message=_vote_response(node, Errors.NONE, granted, cid)))
    return node


def _handle_vote_response(node: RaftNode, resp: VoteResponse, now: int, jitter: int, out: Outputs) -> RaftNode:
    """``handleVoteResponse``: pre-votes may flip, standard votes may not; UNSUPPORTED_VERSION skips pre-vote.
    A failed response (an error not handled in common) backs the connection off (:func:`_answered`)."""
    if not _expected(node, resp.source, resp.correlation_id):
        return node
    node, success = _vote_response_handled(node, resp, now, jitter, out)
    return _answered(node, resp.source, resp.correlation_id, success, now)


def _vote_response_handled(node: RaftNode, resp: VoteResponse, now: int, jitter: int,
                           out: Outputs) -> tuple[RaftNode, bool]:
    """:func:`_handle_vote_response`'s handling: (node, whether the request succeeded)."""
    if resp.error != Errors.NONE:
        if resp.error == Errors.UNSUPPORTED_VERSION and isinstance(node.state, Prospective):
            return _to_candidate(node, now, jitter, out), True
        return node, _top_level_error(resp.error)
    node, common = _common_response(node, resp.partition_error, resp.leader_id, resp.leader_epoch,
                                    resp.leader_endpoints, now, jitter, out)
    if common is not None:
        return node, common
    if resp.partition_error != Errors.NONE:
        return node, False  # ``handleUnexpectedError``
    state, voter = node.state, resp.source
    if isinstance(state, Candidate):
        if (voter in state.rejected and resp.vote_granted) or (voter in state.granted and not resp.vote_granted):
            raise RaftFatalError(f"voter {voter} changed its vote in epoch {state.epoch}")
        if resp.vote_granted:
            node = evolve(node, state=evolve(state, granted=state.granted | {voter}))
            return _maybe_candidate_won(node, now, out), True
        return evolve(node, state=evolve(state, rejected=state.rejected | {voter})), True
    if isinstance(state, Prospective):
        if resp.vote_granted:
            state = evolve(state, granted=state.granted | {voter}, rejected=state.rejected - {voter})
            return _maybe_prospective_won(evolve(node, state=state), now, jitter, out), True
        state = evolve(state, rejected=state.rejected | {voter}, granted=state.granted - {voter})
        node = evolve(node, state=state)
        if raft_rules.election_lost(len(node.voters), len(state.granted & node.voters),
                                    len(state.rejected & node.voters)):
            return _prospective_lost(node, now, jitter, out), True
    return node, True


def _prospective_lost(node: RaftNode, now: int, jitter: int, out: Outputs) -> RaftNode:
    """``prospectiveTransitionAfterElectionLoss``: back to the known leader, else Unattached in the epoch (§3.5)."""
    state = node.state
    if state.leader_id != NO_LEADER and state.leader_endpoints:
        return _to_follower(node, state.epoch, state.leader_id, state.leader_endpoints, now, out)
    return _to_unattached(node, state.epoch, now, jitter, out, state.leader_id)


# --------------------------------------------------------------------------------------------------
# Fetch (§3.7)


def _fetch_error_response(node: RaftNode, error: Errors, req: FetchRequest,
                          state: Optional[QuorumState] = None) -> FetchResponse:
    """``buildEmptyFetchResponse``: a partition error with the current leader and epoch of ``state`` and the log start
    (Kafka 4.3 ``KafkaRaftClient.buildFetchResponse`` sets ``logStartOffset`` on every answer), §3.7."""
    state = state if state is not None else node.state
    return FetchResponse(source=node.local_id, partition_error=error, leader_epoch=state.epoch,
                         leader_id=raft_state.leader_of(state),
                         leader_endpoints=_leader_endpoints(evolve(node, state=state)), high_watermark=-1,
                         log_start_offset=node.log.start_offset, correlation_id=req.correlation_id)


def _try_complete_fetch(node: RaftNode, req: FetchRequest, now: int) -> tuple[RaftNode, FetchResponse]:
    """``KafkaRaftClient.tryCompleteFetchRequest``: leader-only validation, then ``validateOffsetAndEpoch``; a valid
    fetch reads the log from the fetch offset (uncommitted) and updates the replica's state, which may move the HW."""
    state = node.state
    error = raft_rules.fetch_epoch_error(req.current_leader_epoch, state.epoch, type(state) is Leader)
    # validateLeaderOnlyRequest: only the leader of the fetcher's epoch serves a fetch; the answer names the leader.
    if error:
        return node, _fetch_error_response(node, Errors[error], req)
    snapshot_id = raft_log.fetch_snapshot_id(node.log, req.fetch_offset, req.last_fetched_epoch)
    diverging = (None if snapshot_id is not None
                 else raft_log.validate_offset_and_epoch(node.log, req.fetch_offset, req.last_fetched_epoch))
    records: tuple[LogEntry, ...] = ()
    if diverging is None and snapshot_id is None:
        records = raft_log.entries_from(node.log, req.fetch_offset, node.config.fetch_max_records)
        node = evolve(node, state=raft_leader.update_replica_state(state, req.replica_id, req.fetch_offset, now,
                                                                   node.config, req.replica_directory_id))
    return node, FetchResponse(source=node.local_id, leader_epoch=node.state.epoch, leader_id=node.local_id,
                               leader_endpoints=_leader_endpoints(node), high_watermark=node.state.high_watermark,
                               log_start_offset=node.log.start_offset,
                               diverging_epoch=NO_DIVERGING_EPOCH if diverging is None else diverging,
                               snapshot_id=NO_SNAPSHOT_ID if snapshot_id is None else snapshot_id,
                               records=records, correlation_id=req.correlation_id)


def _handle_fetch_request(node: RaftNode, req: FetchRequest, now: int, jitter: int, out: Outputs) -> RaftNode:
    """``handleFetchRequest``: validation order of §3.7; an empty answer may be parked up to maxWaitMs.

    The partition is checked by topic id and partition index (``RaftUtil.hasValidTopicPartition`` for Fetch): the
    topic name is not on the wire from Fetch v13 on.
    """
    src = req.replica_id
    # A node of another cluster must not replicate this quorum's log.
    if req.cluster_id is not None and req.cluster_id != node.cluster_id:
        out.append(Send(destination=src,
                        message=FetchResponse(source=node.local_id, error=Errors.INCONSISTENT_CLUSTER_ID,
                                           correlation_id=req.correlation_id)))
        return node
    # The quorum replicates one partition, the metadata log's: a fetch of any other is malformed.
    if ((req.topic_partition is not METADATA_PARTITION and req.topic_partition[1] != METADATA_PARTITION[1])
            or req.topic_id != METADATA_TOPIC_ID):  # by topic id and partition index: Fetch v13+ carries no name
        out.append(Send(destination=src, message=FetchResponse(source=node.local_id, error=Errors.INVALID_REQUEST,
                                           correlation_id=req.correlation_id)))
        return node
    # A negative wait, offset or epoch, or a fetched epoch beyond the fetcher's leader epoch, is no real fetch.
    if (req.max_wait_ms < 0 or req.fetch_offset < 0 or req.last_fetched_epoch < 0
            or req.last_fetched_epoch > req.current_leader_epoch):
        out.append(Send(destination=src, message=_fetch_error_response(node, Errors.INVALID_REQUEST, req)))
        return node
    old = node.state  # a Leader if the fetch leaves the node one: answering a fetch changes no role
    node, resp = _try_complete_fetch(node, req, now)
    if type(old) is Leader and node.state.high_watermark != old.high_watermark:
        node = _on_update_leader_high_watermark(node, now, out)  # before this fetch is answered
    if (req.max_wait_ms == 0 or resp.records or resp.partition_error is not Errors.NONE
            or resp.diverging_epoch != NO_DIVERGING_EPOCH or resp.snapshot_id != NO_SNAPSHOT_ID
            or req.high_watermark < resp.high_watermark):
        out.append(Send(destination=src, message=resp))
    else:
        node = evolve(node, parked=node.parked + (ParkedFetch(source=src, request=req, deadline=now + req.max_wait_ms,
                                                              response=resp),))
    return node


def _on_update_leader_high_watermark(node: RaftNode, now: int, out: Outputs) -> RaftNode:
    """``KafkaRaftClient.onUpdateLeaderHighWatermark`` when a fetch moves the leader's high watermark, before that
    fetch is answered (``tryCompleteFetchRequest``), or the leader's own flush does (:func:`_leader_append`): the
    voter change whose VotersRecord is now committed is answered first (``AddVoterHandler`` /
    ``RemoveVoterHandler.highWatermarkUpdated``, :func:`_maybe_complete_voter_change`), then the parked fetches
    complete (``fetchPurgatory.completeAll``), §3.15."""
    if node.voter_change is not None:
        node = _maybe_complete_voter_change(node, out)
    return _complete_parked(node, now, out) if node.parked else node


def _purgatory_order(parked: tuple[ParkedFetch, ...]) -> list[ParkedFetch]:
    """``ThresholdPurgatory`` completes by (fetch offset, arrival): its keys are (threshold, id)."""
    return sorted(parked, key=lambda p: p.request.fetch_offset)


def _expire_parked(node: RaftNode, now: int, out: Outputs) -> RaftNode:
    """Parked fetches whose maxWaitMs deadline has come get the answer computed when they arrived, by (deadline,
    arrival) (``MockExpirationService`` fires when the clock reaches a deadline; the replica state is not updated)."""
    due = sorted((p for p in node.parked if p.deadline <= now), key=lambda p: p.deadline)
    if not due:
        return node
    for parked in due:
        out.append(Send(destination=parked.source, message=parked.response))
    return evolve(node, parked=tuple(p for p in node.parked if p.deadline > now))


def _complete_parked(node: RaftNode, now: int, out: Outputs) -> RaftNode:
    """Complete every parked fetch, in purgatory order, answered as of now (``completeAll`` after an HW change,
    ``maybeComplete(LEO)`` after an append: every parked fetch offset is at most the leader's end offset)."""
    done = _purgatory_order(node.parked)
    node = evolve(node, parked=())
    for parked in done:
        node, resp = _try_complete_fetch(node, parked.request, now)
        out.append(Send(destination=parked.source, message=resp))
    return node


def _handle_fetch_response(node: RaftNode, resp: FetchResponse, now: int, jitter: int, out: Outputs) -> RaftNode:
    """``handleFetchResponse``: truncate on a diverging epoch, else append and take min(LEO, HW) (§3.7). A failed
    response (a top-level error, or a partition error not handled in common) backs the connection off."""
    if not _expected(node, resp.source, resp.correlation_id):
        return node
    if resp.error != Errors.NONE:
        return _answered(node, resp.source, resp.correlation_id, _top_level_error(resp.error), now)
    node, common = _common_response(node, resp.partition_error, resp.leader_id, resp.leader_epoch,
                                    resp.leader_endpoints, now, jitter, out)
    if common is not None:
        return _answered(node, resp.source, resp.correlation_id, common, now)
    if not isinstance(node.state, Follower):  # ``followerStateOrThrow`` comes before the error is looked at
        raise RaftFatalError(f"fetch response handled in state {node.state.role}")
    if resp.partition_error != Errors.NONE:
        return _answered(node, resp.source, resp.correlation_id, False, now)  # ``handleUnexpectedError``
    snapshot_epoch, snapshot_end = resp.snapshot_id[1], resp.snapshot_id[0]
    if resp.diverging_epoch[0] < 0 and (snapshot_epoch >= 0 or snapshot_end >= 0):
        # A snapshot id with a negative epoch or end offset names no snapshot: the answer is logged and failed.
        if snapshot_epoch < 0 or snapshot_end < 0:
            return _answered(node, resp.source, resp.correlation_id, False, now)
        return _answered(_fetching_snapshot(node, snapshot_end, snapshot_epoch, now), resp.source,
                         resp.correlation_id, True, now)
    return _answered(_fetched(node, resp, now), resp.source, resp.correlation_id, True, now)


def _fetching_snapshot(node: RaftNode, end_offset: int, epoch: int, now: int) -> RaftNode:
    """The leader asks for its snapshot (``handleFetchResponse``): the follower starts fetching it from byte 0
    (``createNewSnapshotUnchecked``: not checked against the log, which the snapshot is ahead of), unless the log
    already holds that snapshot (no download); the fetch timer restarts (KIP-630)."""
    state = node.state
    held = any(s.id == (end_offset, epoch) for s in node.log.snapshots)
    download = None if held else SnapshotDownload(end_offset=end_offset, epoch=epoch)
    return evolve(node, state=evolve(state, fetching_snapshot=download, has_fetched=True,
                                     fetch_deadline=now + node.config.fetch_timeout_ms))


def _accepted_entries(node: RaftNode, resp: FetchResponse) -> tuple[LogEntry, ...]:
    """``appendAsFollower`` (Kafka 4.3 ``MockLog.append``, ``UnifiedLog``): fetched batches must continue the log, or
    Kafka's client throws; from the first batch whose epoch exceeds the follower's epoch on, none is kept (KAFKA-18723:
    a deposed leader's answer may carry them); an answer left with none is refused and logged
    (``CorruptRecordException``), the response handled all the same."""
    # A batch that does not start at the log end would leave a gap or overwrite records.
    if resp.records and resp.records_offset is not None and resp.records_offset != node.log.end_offset:
        raise RaftFatalError(f"Illegal append at offset {resp.records_offset} with current end offset of "
                             f"{node.log.end_offset}")
    epoch = node.state.epoch
    for i, entry in enumerate(resp.records):
        # Records of a later epoch than the one fetched in cannot be this leader's: the rest is skipped.
        if entry.epoch > epoch:
            return resp.records[:i]
    return resp.records


def _fetched(node: RaftNode, resp: FetchResponse, now: int) -> RaftNode:
    """A successful Fetch answer: the follower truncates or appends (:func:`_accepted_entries`), takes the HW and
    restarts its fetch timer. A kraft.version 1 node forgets the voter sets truncated and reads those appended, so its
    voters may change (§3.14); a node with static voters reads the control records of an upgrade it fetches and from
    then on its kraft.version and voters are its log's (:func:`_start_control_records`, §3.15)."""
    state = node.state
    log = node.log
    hw = state.high_watermark
    if resp.diverging_epoch[0] >= 0:
        epoch, end_offset = resp.diverging_epoch
        if hw >= 0 and end_offset < hw:
            raise RaftFatalError(f"leader requested truncation to {end_offset}, below the high watermark {hw}")
        log, truncated = raft_log.truncate_to_end_offset(log, epoch, end_offset)
        if node.dynamic is not None:  # ``partitionState.truncateNewEntries``
            node = _with_control(node, raft_voter_history.truncate_control_records(node.dynamic.control, truncated))
    else:
        accepted = _accepted_entries(node, resp)
        log = raft_log.append_as_follower(log, accepted)
        if node.is_voter or node.can_become_voter:  # a node the leader may count as a voter flushes first
            log = raft_log.flush(log)
        if node.dynamic is not None:
            node = _update_partition_state(evolve(node, log=log))
        elif _holds_control_records(accepted):
            node = _start_control_records(evolve(node, log=log))
        try:
            hw = raft_rules.follower_high_watermark(hw, log.end_offset, resp.high_watermark)
        except ValueError as exc:
            raise RaftFatalError(str(exc)) from exc
    state = evolve(state, fetch_deadline=now + node.config.fetch_timeout_ms, high_watermark=hw, has_fetched=True)
    return evolve(node, state=state, log=log)


# --------------------------------------------------------------------------------------------------
# FetchSnapshot (KIP-630)


def _fetch_snapshot_response(node: RaftNode, req: FetchSnapshotRequest, partition_error: Errors,
                             **snapshot: Any) -> FetchSnapshotResponse:
    """``RaftUtil.singletonFetchSnapshotResponse`` + ``addQuorumLeader``: the receiver's epoch, leader and leader
    endpoints, a partition error or the chunk (``snapshot``: id, size, position, chunk)."""
    return FetchSnapshotResponse(source=node.local_id, partition_error=partition_error, leader_epoch=node.state.epoch,
                                 leader_id=raft_state.leader_of(node.state), leader_endpoints=_leader_endpoints(node),
                                 correlation_id=req.correlation_id, **snapshot)


def _fetch_snapshot_error(node: RaftNode, req: FetchSnapshotRequest, error: Errors) -> FetchSnapshotResponse:
    """A top-level error answer (``KafkaRaftClient.handleFetchSnapshotRequest``): no partition, so the leader, id, size
    and position read as the schema's defaults, all 0 (``FetchSnapshotResponse.json``: no default is given)."""
    return FetchSnapshotResponse(source=node.local_id, error=error, leader_epoch=0, leader_id=0,
                                 correlation_id=req.correlation_id)


def _unknown_partition_snapshot_response(node: RaftNode, req: FetchSnapshotRequest) -> FetchSnapshotResponse:
    """``handleFetchSnapshotRequest`` for a partition other than the metadata log's: UNKNOWN_TOPIC_OR_PARTITION for
    it (the answer's partition is not modelled), without ``addQuorumLeader``, so its leader reads as the schema's
    default 0 in epoch 0, while the endpoints given are the quorum leader's (``singletonFetchSnapshotResponse``): a
    receiver finds them for node 0 only if that node leads."""
    endpoints = _leader_endpoints(node) if raft_state.leader_of(node.state) == 0 else ()
    return FetchSnapshotResponse(source=node.local_id, partition_error=Errors.UNKNOWN_TOPIC_OR_PARTITION,
                                 leader_epoch=0, leader_id=0, leader_endpoints=endpoints,
                                 correlation_id=req.correlation_id)


def _handle_fetch_snapshot_request(node: RaftNode, req: FetchSnapshotRequest, now: int, jitter: int,
                                   out: Outputs) -> RaftNode:
    """``handleFetchSnapshotRequest`` (Kafka 4.3): the leader of the fetcher's epoch serves a chunk of at most
    ``max_bytes`` from ``position`` (:func:`raft_rules.snapshot_chunk_size`) and counts the fetcher as following
    for check quorum (``updateCheckQuorumForFollowingVoter``; the replica's fetch position is not updated), KIP-630.
    A request naming no partition is refused as the 4.3 branch does since apache/kafka#23185 (4.3.1 throws)."""
    src = req.replica_id
    # A node of another cluster must not replicate this quorum's snapshots.
    if req.cluster_id is not None and req.cluster_id != node.cluster_id:
        out.append(Send(destination=src, message=_fetch_snapshot_error(node, req, Errors.INCONSISTENT_CLUSTER_ID)))
        return node
    # A request must name exactly one partition (``RaftUtil.hasValidTopicPartition``; Kafka 4.3.1 throws
    # IndexOutOfBoundsException here instead).
    if req.topic_partition is None:
        out.append(Send(destination=src, message=_fetch_snapshot_error(node, req, Errors.INVALID_REQUEST)))
        return node
    # The quorum replicates one partition, the metadata log's: no other is hosted here.
    if req.topic_partition != METADATA_PARTITION:
        out.append(Send(destination=src, message=_unknown_partition_snapshot_response(node, req)))
        return node
    error = raft_rules.fetch_epoch_error(req.current_leader_epoch, node.state.epoch, type(node.state) is Leader)
    # validateLeaderOnlyRequest: only the leader of the fetcher's epoch serves its snapshots.
    if error:
        out.append(Send(destination=src, message=_fetch_snapshot_response(node, req, Errors[error])))
        return node
    snapshot = next((s for s in node.log.snapshots if s.id == req.snapshot_id), None)
    # A snapshot the leader no longer (or never) had, or the bootstrap checkpoint, which is never replicated.
    if snapshot is None or snapshot.id == raft_log.BOOTSTRAP_SNAPSHOT_ID:
        out.append(Send(destination=src, message=_fetch_snapshot_response(node, req, Errors.SNAPSHOT_NOT_FOUND)))
        return node
    # A position outside the snapshot's bytes reads nothing.
    if req.position < 0 or req.position >= snapshot.size:
        out.append(Send(destination=src, message=_fetch_snapshot_response(node, req, Errors.POSITION_OUT_OF_RANGE)))
        return node
    chunk = raft_rules.snapshot_chunk_size(req.position, snapshot.size, req.max_bytes)
    node = evolve(node, state=raft_leader.update_check_quorum_for_following_voter(node.state, src, now, node.config,
                                                                                  req.replica_directory_id))
    control_records = _snapshot_first_batch(node, snapshot.id) if req.position == 0 else ()
    out.append(Send(destination=src, message=_fetch_snapshot_response(node, req, Errors.NONE, snapshot_id=snapshot.id,
                                                                      size=snapshot.size, position=req.position,
                                                                      chunk=chunk, control_records=control_records)))
    return node


def _snapshot_first_batch(node: RaftNode, snapshot_id: tuple[int, int]) -> tuple[Any, ...]:
    """The control records after the header of a snapshot's first batch, which the chunk from byte 0 carries
    (``RecordsSnapshotWriter.Builder.build``: the kraft.version and voter set in force at its end, none at kraft.version
    0 or for static voters), §3.14."""
    if node.dynamic is None:
        return ()
    records = node.dynamic.snapshot_records.get(snapshot_id)
    # As in :func:`_read_control`: only the control records of a snapshot this node wrote or loaded are known.
    if records is None:
        raise RaftFatalError(f"the control records of snapshot {snapshot_id} are not known to this node")
    return records


def _handle_fetch_snapshot_response(node: RaftNode, resp: FetchSnapshotResponse, now: int, jitter: int,
                                    out: Outputs) -> RaftNode:
    """``handleFetchSnapshotResponse``: common handling (§3.8), then the follower writes the chunk and, with the last
    one, loads the snapshot (:func:`_snapshot_fetched`); a failed response backs the connection off."""
    if not _expected(node, resp.source, resp.correlation_id):
        return node
    if resp.error != Errors.NONE:
        return _answered(node, resp.source, resp.correlation_id, _top_level_error(resp.error), now)
    node, common = _common_response(node, resp.partition_error, resp.leader_id, resp.leader_epoch,
                                    resp.leader_endpoints, now, jitter, out)
    if common is not None:
        return _answered(node, resp.source, resp.correlation_id, common, now)
    state = node.state
    if not isinstance(state, Follower):  # ``followerStateOrThrow``
        raise RaftFatalError(f"fetch snapshot response handled in state {state.role}")
    # The leader deleted the snapshot before it was fetched: start over with a Fetch.
    if resp.partition_error == Errors.SNAPSHOT_NOT_FOUND or resp.snapshot_id[0] < 0 or resp.snapshot_id[1] < 0:
        state = evolve(state, fetching_snapshot=None, fetch_deadline=now + node.config.fetch_timeout_ms,
                       has_fetched=True)
        return _answered(evolve(node, state=state), resp.source, resp.correlation_id, True, now)
    if resp.partition_error != Errors.NONE:
        return _answered(node, resp.source, resp.correlation_id, False, now)  # ``handleUnexpectedError``
    return _answered(_snapshot_fetched(node, resp, now), resp.source, resp.correlation_id, True, now)


def _snapshot_fetched(node: RaftNode, resp: FetchSnapshotResponse, now: int) -> RaftNode:
    """A chunk of the snapshot being fetched: it must be that snapshot's, at the bytes held so far (else Kafka's
    client throws); with the last byte the snapshot is frozen and replaces the log (:func:`raft_log.
    truncate_to_latest_snapshot`, which must truncate), a kraft.version 1 node reloads its control records from it
    (``partitionState.updateState``: the voter set and kraft.version the first chunk carried replace those it had, the
    static voters when it holds no VotersRecord), the HW moves to the snapshot's end (``updateFollowerHighWatermark``),
    and the fetch timer restarts (KIP-630, §3.14)."""
    state = node.state
    download = state.fetching_snapshot
    # A chunk nobody asked for, of another snapshot, or at another position, cannot be written.
    if download is None:
        raise RaftFatalError(f"Received unexpected fetch snapshot response for {resp.snapshot_id}")
    if (download.end_offset, download.epoch) != resp.snapshot_id:
        raise RaftFatalError(f"Received fetch snapshot response with an invalid id. Expected "
                             f"{(download.end_offset, download.epoch)}; Received {resp.snapshot_id}")
    if download.received != resp.position:
        raise RaftFatalError(f"Received fetch snapshot response with an invalid position. Expected "
                             f"{download.received}; Received {resp.position}")
    download = evolve(download, received=download.received + resp.chunk)
    if resp.position == 0:  # the snapshot's first batch: its header and control records
        download = evolve(download, control_records=resp.control_records)
    log, hw = node.log, state.high_watermark
    if download.received == resp.size:
        log = raft_log.truncate_to_latest_snapshot(raft_log.freeze_snapshot(log, Snapshot(
            end_offset=download.end_offset, epoch=download.epoch, size=resp.size)))
        # The snapshot is ahead of the log by construction: a log it does not replace is an inconsistency.
        if log is None:
            raise RaftFatalError(f"Full log truncation expected but didn't happen. Snapshot of {resp.snapshot_id}")
        if node.dynamic is not None:  # the frozen snapshot holds the control records of its first batch
            node = evolve(node, dynamic=evolve(node.dynamic, snapshot_records=node.dynamic.snapshot_records.set(
                resp.snapshot_id, download.control_records)))
        elif download.control_records:  # static voters loading an upgraded leader's snapshot read its records
            node = _start_control_records(evolve(node, log=log),
                                          FrozenMap({resp.snapshot_id: download.control_records}))
        download = None
        node = _update_partition_state(evolve(node, log=log))  # the snapshot's voter set (§3.14)
        try:
            hw = raft_rules.follower_high_watermark(hw, log.end_offset, log.start_offset)
        except ValueError as exc:
            raise RaftFatalError(str(exc)) from exc
    state = evolve(state, fetching_snapshot=download, high_watermark=hw, has_fetched=True,
                   fetch_deadline=now + node.config.fetch_timeout_ms)
    return evolve(node, state=state, log=log)


# --------------------------------------------------------------------------------------------------
# Snapshots by the state machine and the log's cleaner (KIP-630)


def _log_high_watermark(node: RaftNode) -> int:
    """The log's high watermark (``RaftLog.highWatermark``): the state's, 0 while unknown (a reopened log's)."""
    return max(getattr(node.state, "high_watermark", -1), 0)


def _handle_create_snapshot(node: RaftNode, op: CreateSnapshot, now: int, jitter: int, out: Outputs) -> RaftNode:
    """``createSnapshot(snapshotId)`` (Kafka 4.3 ``KafkaRaftClient``, ``RaftLog.createNewSnapshot``): a writer for a
    valid id at most the high watermark (:func:`raft_log.can_create_snapshot`), which the state machine freezes with
    ``size`` bytes; none for an id below the log start or already frozen; refused (:class:`InvalidSnapshotError`)
    otherwise."""
    try:
        created = raft_log.can_create_snapshot(node.log, op.end_offset, op.epoch, _log_high_watermark(node))
    except ValueError as exc:
        raise InvalidSnapshotError(str(exc)) from exc
    if not created:
        return node
    node = evolve(node, log=raft_log.freeze_snapshot(node.log, Snapshot(end_offset=op.end_offset, epoch=op.epoch,
                                                                        size=op.size)))
    return node if node.dynamic is None else _snapshot_control_records(node, op.end_offset, op.epoch)


def _snapshot_control_records(node: RaftNode, end_offset: int, epoch: int) -> RaftNode:
    """A kraft.version 1 node's new snapshot starts with the kraft.version and voter set in force at its last contained
    offset (``createSnapshot``: ``kraftVersionAtOffset``, ``voterSetAtOffset``); once frozen, the control-record
    history before it is trimmed (``partitionState.truncateOldEntries``), §3.14."""
    control = node.dynamic.control
    last_contained = end_offset - 1
    kraft_version = raft_voter_history.kraft_version_at_offset(control, last_contained)
    voter_set = raft_voter_history.voter_set_at_offset(control, last_contained)
    records: tuple[Any, ...] = ()
    if raft_voters.is_reconfig_supported(kraft_version):
        records = (raft_voters.KRaftVersionRecord(kraft_version=kraft_version),)
        if voter_set is not None:
            records += (raft_voters.to_voters_record(voter_set),)
    dynamic = evolve(node.dynamic, snapshot_records=node.dynamic.snapshot_records.set((end_offset, epoch), records))
    return _with_control(evolve(node, dynamic=dynamic),
                         raft_voter_history.trim_control_records(control, end_offset))


def snapshot_created(before: RaftNode, op: CreateSnapshot) -> bool:
    """Whether ``createSnapshot`` gave a writer: the id is not below the log start and was not frozen yet."""
    return (op.end_offset >= before.log.start_offset
            and all(s.id != (op.end_offset, op.epoch) for s in before.log.snapshots))


def _handle_delete_before_snapshot(node: RaftNode, op: DeleteBeforeSnapshot, now: int, jitter: int,
                                   out: Outputs) -> RaftNode:
    """``deleteBeforeSnapshot`` (:func:`raft_log.delete_before_snapshot`): the log start advances to a frozen snapshot;
    refused (:class:`InvalidSnapshotError`) below the log start or past the high watermark."""
    try:
        return evolve(node, log=raft_log.delete_before_snapshot(node.log, op.end_offset, op.epoch,
                                                                _log_high_watermark(node)))
    except ValueError as exc:
        raise InvalidSnapshotError(str(exc)) from exc


# --------------------------------------------------------------------------------------------------
# BeginQuorumEpoch / EndQuorumEpoch (§3.9) and DescribeQuorum (§3.10)


def _epoch_response(node: RaftNode, api: str, partition_error: Errors, cid: int) -> QuorumEpochResponse:
    """``buildBegin/EndQuorumEpochResponse``: the receiver's epoch, leader and endpoints (§3.9)."""
    return QuorumEpochResponse(source=node.local_id, api=api, partition_error=partition_error,
                               leader_epoch=node.state.epoch, leader_id=raft_state.leader_of(node.state),
                               leader_endpoints=_leader_endpoints(node), correlation_id=cid)


def _rejected_quorum_epoch_request(node: RaftNode, req: BeginQuorumEpochRequest | EndQuorumEpochRequest, api: str,
                                   out: Outputs) -> bool:
    """The checks Begin/EndQuorumEpoch share (§3.9): cluster id, metadata partition, then the epoch rules.

    On a failure the error response is appended to ``out`` and True is returned.
    """
    src, cid = req.leader_id, req.correlation_id
    # A leader of another cluster must not lead this quorum.
    if req.cluster_id is not None and req.cluster_id != node.cluster_id:
        out.append(Send(destination=src,
                        message=QuorumEpochResponse(source=node.local_id, api=api, error=Errors.INCONSISTENT_CLUSTER_ID,
                                                 correlation_id=cid)))
        return True
    # The quorum replicates one partition, the metadata log's: a request for any other is malformed.
    if req.topic_partition != METADATA_PARTITION:
        out.append(Send(destination=src,
                        message=QuorumEpochResponse(source=node.local_id, api=api, error=Errors.INVALID_REQUEST,
                                                 correlation_id=cid)))
        return True
    error = _voter_only_error(node, req.leader_id, req.leader_epoch)
    if error is not None:
        out.append(Send(destination=src, message=_epoch_response(node, api, error, cid)))
        return True
    return False


def _handle_begin_quorum_epoch_request(node: RaftNode, req: BeginQuorumEpochRequest, now: int, jitter: int,
                                       out: Outputs) -> RaftNode:
    """``handleBeginQuorumEpochRequest``: validate, follow the new leader, then check the voter key."""
    api, src, cid = "BeginQuorumEpoch", req.leader_id, req.correlation_id
    if _rejected_quorum_epoch_request(node, req, api, out):
        return node
    endpoints = req.leader_endpoints or node.voter_endpoints.get(req.leader_id, ())
    node = _maybe_transition(node, req.leader_id, req.leader_epoch, endpoints, now, jitter, out)
    # The announcement was meant for another voter (id or directory): it is not acknowledged for it.
    if not _valid_voter_key(node, req.voter_id, req.voter_directory_id):
        out.append(Send(destination=src, message=_epoch_response(node, api, Errors.INVALID_VOTER_KEY, cid)))
        return node
    out.append(Send(destination=src, message=_epoch_response(node, api, Errors.NONE, cid)))
    return node


def _handle_end_quorum_epoch_request(node: RaftNode, req: EndQuorumEpochRequest, now: int, jitter: int,
                                     out: Outputs) -> RaftNode:
    """``handleEndQuorumEpochRequest``: a follower of the resigning leader waits its backoff, then campaigns."""
    api, src, cid = "EndQuorumEpoch", req.leader_id, req.correlation_id
    if _rejected_quorum_epoch_request(node, req, api, out):
        return node
    node = _maybe_transition(node, req.leader_id, req.leader_epoch, node.voter_endpoints.get(req.leader_id, ()), now,
                             jitter, out)
    state = node.state
    if isinstance(state, Follower) and state.leader_id == req.leader_id:
        successors = req.preferred_successors  # ``endEpochElectionBackoff``: absent counts as past the end
        position = successors.index(node.local_id) if node.local_id in successors else len(successors)
        backoff = raft_rules.end_quorum_epoch_backoff(position, len(successors), node.config.election_backoff_max_ms)
        node = evolve(node, state=evolve(state, fetch_deadline=now + backoff))
    out.append(Send(destination=src, message=_epoch_response(node, api, Errors.NONE, cid)))
    return node


def _handle_quorum_epoch_response(node: RaftNode, resp: QuorumEpochResponse, now: int, jitter: int,
                                  out: Outputs) -> RaftNode:
    """Begin/EndQuorumEpoch responses: common handling, then the leader (or resigned leader) records the ack; a
    failed response backs the connection off."""
    if not _expected(node, resp.source, resp.correlation_id):
        return node
    if resp.error != Errors.NONE:
        return _answered(node, resp.source, resp.correlation_id, _top_level_error(resp.error), now)
    node, common = _common_response(node, resp.partition_error, resp.leader_id, resp.leader_epoch,
                                    resp.leader_endpoints, now, jitter, out)
    if common is not None or resp.partition_error != Errors.NONE:
        return _answered(node, resp.source, resp.correlation_id, bool(common), now)
    state = node.state
    if isinstance(state, Leader) and resp.api == "BeginQuorumEpoch":
        node = evolve(node, state=raft_leader.acknowledge(state, resp.source))
    elif isinstance(state, Resigned) and resp.api == "EndQuorumEpoch":
        node = evolve(node, state=evolve(state, unacked_voters=state.unacked_voters - {resp.source}))
    return _answered(node, resp.source, resp.correlation_id, True, now)


def _handle_describe_quorum_request(node: RaftNode, req: DescribeQuorumRequest, now: int, jitter: int,
                                    out: Outputs) -> RaftNode:
    """``handleDescribeQuorumRequest`` (§3.10): only the leader describes; others answer NOT_LEADER_OR_FOLLOWER.

    As Kafka 4.3 writes them (``DescribeQuorumResponse.singletonErrorResponse``,
    ``DescribeQuorumRequest.getPartitionLevelErrorResponse``, ``RaftUtil.singletonDescribeQuorumResponse``): an
    error answer carries the error's message (from version 2, which has the field) and the partition's schema
    defaults (leader 0, epoch 0, high watermark 0); a success leaves the message at its default, "". The nodes are the
    voters' (a kraft.version 1 leader removed from the set is not among them).
    """
    # The quorum has one partition, the metadata log's: no other can be described.
    if req.topic_partition != METADATA_PARTITION:
        out.append(Send(destination=req.source, message=_describe_quorum_error(req, Errors.UNKNOWN_TOPIC_OR_PARTITION,
                                                           UNKNOWN_TOPIC_MESSAGE)))
        return node
    state = node.state
    # Only the leader knows every replica's progress.
    if not isinstance(state, Leader):
        out.append(Send(destination=req.source, message=_describe_quorum_error(req, Errors.NOT_LEADER_OR_FOLLOWER,
                                                                               NOT_LEADER_MESSAGE)))
        return node
    voters, observers, state = raft_leader.describe(state, now)
    nodes = tuple(sorted((v, e) for v, e in node.voter_endpoints.items()
                         if node.dynamic is None or v in node.voters)) if req.version >= 2 else ()
    out.append(Send(destination=req.source,
                    message=DescribeQuorumResponse(error=Errors.NONE, partition_error=Errors.NONE, error_message="",
                                                   leader_id=node.local_id, leader_epoch=state.epoch,
                                                   high_watermark=state.high_watermark, current_voters=voters,
                                                   observers=observers, nodes=nodes)))
    return evolve(node, state=state)


def _describe_quorum_error(req: DescribeQuorumRequest, error: Errors, message: str) -> DescribeQuorumResponse:
    """A partition-level DescribeQuorum error: the message only where the version has the field (2+)."""
    return DescribeQuorumResponse(error=Errors.NONE, partition_error=error,
                                  error_message=message if req.version >= 2 else "", leader_id=0, leader_epoch=0,
                                  high_watermark=0)


# --------------------------------------------------------------------------------------------------
# AddRaftVoter, RemoveRaftVoter and UpdateRaftVoter on the leader (KIP-853, §3.15)


def _leader_only_error(node: RaftNode, request_epoch: int) -> Optional[Errors]:
    """``validateLeaderOnlyRequest``: the epoch rules of :func:`raft_rules.fetch_epoch_error`, then a leader shutting
    down is BROKER_NOT_AVAILABLE."""
    error = raft_rules.fetch_epoch_error(request_epoch, node.state.epoch, type(node.state) is Leader)
    if error:
        return Errors[error]
    return Errors.BROKER_NOT_AVAILABLE if node.shutdown is not None else None


def _reconfig_leader(node: RaftNode) -> raft_reconfig.ReconfigLeader:
    """What the voter-change handlers read of the leader (a kraft.version 0 node reads an empty history: its
    kraft.version is 0), and its in-memory voters (``volatileVoters``)."""
    state = node.state
    control = raft_voter_history.ControlRecordState() if node.dynamic is None else node.dynamic.control
    listener = "CONTROLLER" if node.dynamic is None else node.dynamic.listener_name
    return raft_reconfig.ReconfigLeader(epoch=state.epoch, control=control,
                                        high_watermark=None if state.high_watermark < 0 else state.high_watermark,
                                        operation_pending=node.voter_change is not None,
                                        volatile_voters=state.volatile_voters, default_listener=listener)


def _voter_change_response(node: RaftNode, api: str, destination: int, cid: int, error: Errors,
                           message: Optional[str]) -> Send:
    """``RaftUtil.addVoterResponse`` / ``removeVoterResponse``: the error and its message to the admin client or the
    auto-joining observer that asked; an error given no message gets the error's own (``Errors.message()``:
    :data:`VOTER_CHANGE_ERROR_MESSAGES`), success none."""
    if message is None and error is not Errors.NONE:
        message = VOTER_CHANGE_ERROR_MESSAGES[error]
    return Send(destination=destination, message=VoterChangeResponse(api=api, source=node.local_id, error=error,
                                                                     error_message=message, correlation_id=cid))


def _voter_change_done(node: RaftNode, error: Errors, message: Optional[str], out: Outputs) -> RaftNode:
    """``LeaderState.resetAddVoterHandlerState`` / ``resetRemoveVoterHandlerState``: the pending change is answered
    (unless it already was) and forgotten."""
    change = node.voter_change
    if not change.responded:
        out.append(_voter_change_response(node, change.api, change.source, change.correlation_id, error, message))
    return evolve(node, voter_change=None)


def _expire_voter_change(node: RaftNode, now: int) -> tuple[RaftNode, Optional[Send]]:
    """``LeaderState.maybeExpirePendingOperation``: a change whose timer (the request timeout) expired is answered
    REQUEST_TIMED_OUT; returns the node and that answer, if any."""
    change = node.voter_change
    if change is None or now < change.deadline:
        return node, None
    out: Outputs = []
    node = _voter_change_done(node, Errors.REQUEST_TIMED_OUT, None, out)
    return node, out[0] if out else None


def _maybe_complete_voter_change(node: RaftNode, out: Outputs) -> RaftNode:
    """``AddVoterHandler`` / ``RemoveVoterHandler.highWatermarkUpdated``: once the high watermark passes the change's
    VotersRecord (:func:`raft_reconfig.voter_change_committed`) it is answered NONE; a leader that removed itself then
    resigns at the next poll (:func:`raft_reconfig.leader_resigns_after_removal`), §3.15."""
    change, state = node.voter_change, node.state
    if type(state) is not Leader or change.last_offset is None:
        return node
    if not raft_reconfig.voter_change_committed(None if state.high_watermark < 0 else state.high_watermark,
                                                change.last_offset):
        return node
    node = _voter_change_done(node, Errors.NONE, None, out)
    local = ReplicaKey(id=node.local_id, directory_id=node.directory_id)
    if change.api == REMOVE_VOTER and raft_reconfig.leader_resigns_after_removal(
            raft_voter_history.last_voter_set(node.dynamic.control), local):
        node = evolve(node, state=evolve(node.state, resign_requested=True))
    return node


def _append_voters(node: RaftNode, voter_set: raft_voters.VoterSet) -> tuple[RaftNode, int]:
    """``LeaderState.appendVotersRecord``: the new voter set as a VotersRecord in the accumulator behind the records
    already there (``appendControlMessages``' ``forceDrain``); (node, its offset). The poll writes it after its
    check-quorum test, which still counts the old voters (Kafka 4.3 ``KafkaRaftClient.pollLeader``:
    ``maybeAppendBatches``), unless that poll resigns first."""
    state = node.state
    waiting = state.unwritten + state.lingering + (raft_voters.to_voters_record(voter_set),)
    return evolve(node, state=evolve(state, unwritten=waiting, lingering=())), node.log.end_offset + len(waiting) - 1


def _admit_voter_change(node: RaftNode, api: str, src: int, cid: int, cluster_id: Optional[str], now: int,
                        out: Outputs) -> tuple[RaftNode, bool]:
    """What ``handleAddVoterRequest`` and ``handleRemoveVoterRequest`` check first: the cluster id, then that this node
    leads (``validateLeaderOnlyRequest``; refused with the message ``""``: ``new AddRaftVoterResponseData()
    .setErrorCode(..)`` keeps the field's default); an admitted request first expires a pending change whose timer
    ran out (:func:`_expire_voter_change`). Returns the node and whether the request goes on to its handler (§3.15)."""
    # A node or client of another cluster must not change this quorum.
    if cluster_id is not None and cluster_id != node.cluster_id:
        out.append(_voter_change_response(node, api, src, cid, Errors.INCONSISTENT_CLUSTER_ID,
                                          f'The given id "{cluster_id}" doesn\'t match the cluster id '
                                          f'"{node.cluster_id}"'))
        return node, False
    error = _leader_only_error(node, node.state.epoch)
    # Only the leader changes the voters. Kafka builds this answer without RaftUtil: its message is the field's "".
    if error is not None:
        out.append(_voter_change_response(node, api, src, cid, error, ""))
        return node, False
    node, expired = _expire_voter_change(node, now)
    if expired is not None:
        out.append(expired)
    return node, True


def _handle_add_voter_request(node: RaftNode, req: AddRaftVoterRequest, now: int, jitter: int,
                              out: Outputs) -> RaftNode:
    """``handleAddVoterRequest``: cluster id, leader only, then :func:`raft_reconfig.handle_add_voter_request`; a
    valid add asks the new voter its kraft.version range (ApiVersions), unless a request is outstanding to it
    (:func:`raft_reconfig.new_voter_not_ready`); the change's timer is the request timeout (§3.15)."""
    src, cid = req.source, req.correlation_id
    node, admitted = _admit_voter_change(node, ADD_VOTER, src, cid, req.cluster_id, now, out)
    if not admitted:
        return node
    key = raft_voters.replica_key(req.voter_id, req.voter_directory_id)
    listeners = raft_voters.listeners_of(req.listeners)
    refusal = raft_reconfig.handle_add_voter_request(_reconfig_leader(node), key, listeners)
    # The leader must be able to ask the new voter now.
    if refusal is None and not _ready(node, key.id, now):
        refusal = raft_reconfig.new_voter_not_ready(key)
    if refusal is not None:
        out.append(_voter_change_response(node, ADD_VOTER, src, cid, refusal.error, refusal.message))
        return node
    node = _send_request(node, key.id, ApiVersionsRequest(), now, out)
    change = PendingVoterChange(api=ADD_VOTER, source=src, correlation_id=cid, voter_key=key, listeners=listeners,
                                ack_when_committed=req.ack_when_committed,
                                deadline=now + node.config.request_timeout_ms)
    return evolve(node, voter_change=change)


def _handle_api_versions_response(node: RaftNode, resp: ApiVersionsResponse, now: int, jitter: int,
                                  out: Outputs) -> RaftNode:
    """``handleApiVersionsResponse``: ignored unless the leader awaits it from the voter being added
    (``expectingApiResponse``); then :func:`raft_reconfig.handle_add_voter_api_versions` aborts the add or appends the
    voter set with the new voter, answered now if ``ack_when_committed`` is False; an error answer backs off
    (§3.15)."""
    if not _expected(node, resp.source, resp.correlation_id):
        return node
    change = node.voter_change
    if (type(node.state) is not Leader or change is None or change.api != ADD_VOTER
            or change.last_offset is not None or change.voter_key.id != resp.source):
        return _answered(node, resp.source, resp.correlation_id, True, now)
    replica = raft_leader.replica_state(node.state, change.voter_key) or raft_state.ReplicaState()
    caught_up = raft_reconfig.is_replica_caught_up(replica.last_caught_up_ms, replica.last_fetch_ms, now)
    outcome = raft_reconfig.handle_add_voter_api_versions(_reconfig_leader(node), change.voter_key, change.listeners,
                                                          resp.error, resp.kraft_version_range, caught_up)
    if outcome.response is not None:
        node = _voter_change_done(node, outcome.response.error, outcome.response.message, out)
        return _answered(node, resp.source, resp.correlation_id, resp.error == Errors.NONE, now)
    node, offset = _append_voters(node, outcome.append)
    change = evolve(change, last_offset=offset)
    if not change.ack_when_committed:
        out.append(_voter_change_response(node, ADD_VOTER, change.source, change.correlation_id, Errors.NONE,
                                          None))
        change = evolve(change, responded=True)
    return _answered(evolve(node, voter_change=change), resp.source, resp.correlation_id, True, now)


def _handle_remove_voter_request(node: RaftNode, req: RemoveRaftVoterRequest, now: int, jitter: int,
                                 out: Outputs) -> RaftNode:
    """``handleRemoveVoterRequest``: cluster id, leader only, then :func:`raft_reconfig.handle_remove_voter_request`;
    the voter set without the voter is appended and the answer waits for it to commit or the request timeout
    (§3.15)."""
    src, cid = req.source, req.correlation_id
    node, admitted = _admit_voter_change(node, REMOVE_VOTER, src, cid, req.cluster_id, now, out)
    if not admitted:
        return node
    key = raft_voters.replica_key(req.voter_id, req.voter_directory_id)
    outcome = raft_reconfig.handle_remove_voter_request(_reconfig_leader(node), key)
    if outcome.response is not None:
        out.append(_voter_change_response(node, REMOVE_VOTER, src, cid, outcome.response.error,
                                          outcome.response.message))
        return node
    node, offset = _append_voters(node, outcome.append)
    change = PendingVoterChange(api=REMOVE_VOTER, source=src, correlation_id=cid, voter_key=key, last_offset=offset,
                                deadline=now + node.config.request_timeout_ms)
    return evolve(node, voter_change=change)


def _handle_update_voter_request(node: RaftNode, req: UpdateRaftVoterRequest, now: int, jitter: int,
                                 out: Outputs) -> RaftNode:
    """``handleUpdateVoterRequest``: cluster id, leader only for the request's epoch, then
    :func:`raft_reconfig.handle_update_voter_request` (the sender's range: :data:`SUPPORTED_KRAFT_VERSIONS`); an update
    is answered at once: kraft.version 1 appends the voter set with the voter's new node, kraft.version 0 replaces the
    leader's in-memory voters and writes nothing; either way the voter counts as following for check quorum
    (``UpdateVoterHandler.storeUpdatedVoters``), §3.15."""
    src, cid = req.voter_id, req.correlation_id

    def answer(error: Errors) -> None:
        state = node.state
        out.append(Send(destination=src, message=UpdateRaftVoterResponse(
            source=node.local_id, error=error, leader_epoch=state.epoch, leader_id=raft_state.leader_of(state),
            leader_endpoints=_leader_endpoints(node), correlation_id=cid)))

    # A voter of another cluster must not change this quorum.
    if req.cluster_id is not None and req.cluster_id != node.cluster_id:
        answer(Errors.INCONSISTENT_CLUSTER_ID)
        return node
    error = _leader_only_error(node, req.current_leader_epoch)
    # Only the leader of the sender's epoch updates the voters.
    if error is not None:
        answer(error)
        return node
    node, expired = _expire_voter_change(node, now)
    if expired is not None:
        out.append(expired)
    key = raft_voters.replica_key(req.voter_id, req.voter_directory_id)
    outcome = raft_reconfig.handle_update_voter_request(_reconfig_leader(node), key,
                                                        raft_voters.listeners_of(req.listeners),
                                                        SUPPORTED_KRAFT_VERSIONS)
    if outcome.append is not None:
        node, _ = _append_voters(node, outcome.append)
    if outcome.volatile_voters is not None:
        node = evolve(node, state=evolve(node.state, volatile_voters=outcome.volatile_voters))
    if outcome.response.error == Errors.NONE:
        node = evolve(node, state=raft_leader.update_check_quorum_for_following_voter(node.state, key.id, now,
                                                                                      node.config, key.directory_id))
    answer(outcome.response.error)
    return node


def _handle_update_voter_response(node: RaftNode, resp: UpdateRaftVoterResponse, now: int, jitter: int,
                                  out: Outputs) -> RaftNode:
    """``handleUpdateVoterResponse``: common handling (§3.8: INVALID_REQUEST is fatal), then NONE or UNSUPPORTED_VERSION
    marks the leader updated (``setHasUpdatedLeader``: a kraft.version 0 voter sends it no more) and restarts the
    follower's fetch timer as a fetch would; another error backs the connection off (``handleUnexpectedError``), so
    the voter asks again after the next update-voter-set period."""
    if not _expected(node, resp.source, resp.correlation_id):
        return node
    node, common = _common_response(node, resp.error, resp.leader_id, resp.leader_epoch, resp.leader_endpoints, now,
                                    jitter, out)
    if common is not None:
        return _answered(node, resp.source, resp.correlation_id, common, now)
    if resp.error not in (Errors.NONE, Errors.UNSUPPORTED_VERSION):
        return _answered(node, resp.source, resp.correlation_id, False, now)  # ``handleUnexpectedError``
    state = node.state
    if not isinstance(state, Follower):  # ``followerStateOrThrow``
        raise RaftFatalError(f"update voter response handled in state {state.role}")
    node = evolve(node, state=evolve(state, has_updated_leader=True, fetch_deadline=now + node.config.fetch_timeout_ms))
    return _answered(node, resp.source, resp.correlation_id, True, now)


def _should_send_update_voter(node: RaftNode) -> bool:
    """``shouldSendUpdateVoteRequest``: a kraft.version 1 voter whose node in the voter set differs from its own
    (listeners, kraft.version range); under kraft.version 0 a voter whose leader has not answered it yet
    (``hasUpdatedLeader``: every new leader learns its endpoints, as it does not persist them)."""
    if node.dynamic is None:
        return not node.state.has_updated_leader
    control = node.dynamic.control
    if not raft_voters.is_reconfig_supported(raft_voter_history.last_kraft_version(control)):
        return not node.state.has_updated_leader
    return raft_voters.voter_node_needs_update(raft_voter_history.last_voter_set(control), _local_voter_node(node))


# --------------------------------------------------------------------------------------------------
# Client operations and timers


def _handle_append(node: RaftNode, op: Append, now: int, jitter: int, out: Outputs) -> RaftNode:
    """``prepareAppend`` + ``schedulePreparedAppend``: only a leader appends; others raise :class:`NotLeaderError`
    (scenario 94); no records is refused (``IllegalArgumentException``).

    Kafka's leader puts the records in its accumulator, and its next poll writes and flushes them
    (``pollLeader``: ``maybeAppendBatches``), unless that poll resigns first (check quorum expired, a resign
    requested, or shutting down): then they are never written, though the append returned their offsets (:func:`append_offset`).
    Behind start-of-epoch records still unwritten they linger one poll more (``Leader.lingering``; Kafka 4.3
    ``BatchAccumulator.append`` and ``drain`` after ``appendControlMessages``' ``forceDrain``); records that lingered
    are written with these.
    """
    state = node.state
    if not isinstance(state, Leader):
        raise NotLeaderError(f"node {node.local_id} is {state.role} in epoch {state.epoch}, not leader")
    if not op.records:
        raise ValueError("Append failed because there are no records")
    if _leader_resigns(state, now, node.shutdown is not None):
        return node
    if state.unwritten:
        return evolve(node, state=evolve(state, lingering=state.lingering + op.records))
    return _leader_append(evolve(node, state=evolve(state, lingering=())), state.lingering + op.records, now, out)


def append_offset(node: RaftNode, records: tuple[Any, ...]) -> int:
    """The offset an accepted append returns: its last record's, counted from the leader's log end and the records
    still in its accumulator (``BatchAccumulator.append``)."""
    state = node.state
    waiting = len(state.unwritten) + len(state.lingering) if isinstance(state, Leader) else 0
    return node.log.end_offset + waiting + len(records) - 1


def _handle_upgrade_kraft_version(node: RaftNode, op: UpgradeKRaftVersion, now: int, jitter: int,
                                  out: Outputs) -> RaftNode:
    """``KafkaRaftClient.upgradeKRaftVersion``: only a leader upgrades (:class:`NotLeaderError` otherwise), checked by
    :func:`raft_reconfig.maybe_append_upgraded_kraft_version` against its kraft.version and voter set
    (``partitionState.lastKraftVersion``, ``lastVoterSet``: the static voters at kraft.version 0). An upgrade takes the
    in-memory voters (the kraft.version is the requested one at once) and appends a KRaftVersionRecord(1) and the
    voter set, from which the leader and each node that fetches them run as kraft.version 1 (§3.15). An unknown level
    is refused (``KRaftVersion.fromFeatureLevel``: :class:`IllegalUpgradeArgumentError`).

    Kafka writes the two records as one batch from the accumulator in the next poll, unless that poll resigns first
    (as :func:`_handle_append`), after any records still in the accumulator (``appendControlMessages``); here they
    are two entries, which a fetch answer cut by ``fetch_max_records`` could
    split (not modelled: Kafka never splits a batch).
    """
    if op.kraft_version not in SUPPORTED_KRAFT_VERSIONS:
        raise IllegalUpgradeArgumentError(f"Unknown KRaft feature level: {op.kraft_version}")
    state = node.state
    if not isinstance(state, Leader):
        raise NotLeaderError("Upgrade kraft version failed because the replica is not the current leader")
    version, voters = _persisted_version_and_voters(node)
    upgrade = raft_reconfig.maybe_append_upgraded_kraft_version(
        state.epoch, state.requested_kraft_version, state.volatile_voters, op.epoch, op.kraft_version, version, voters,
        op.validate_only)
    if not upgrade.records:
        return node
    node = evolve(node, state=evolve(state, volatile_voters=None, requested_kraft_version=op.kraft_version,
                                     lingering=()))
    if _leader_resigns(state, now, node.shutdown is not None):
        return node
    if state.unwritten:  # ``appendControlMessages``' ``forceDrain`` completes the lingering batch before its own
        return evolve(node, state=evolve(node.state, unwritten=state.unwritten + state.lingering + upgrade.records))
    return _leader_append(node, state.lingering + upgrade.records, now, out)


def _persisted_version_and_voters(node: RaftNode) -> tuple[int, raft_voters.VoterSet]:
    """``partitionState.lastKraftVersion`` and ``lastVoterSet``: kraft.version 0 and the static voters until the log
    holds control records (§3.14)."""
    if node.dynamic is None:
        return raft_voters.KRAFT_VERSION_0, _static_voter_set(node.voters, node.voter_endpoints)
    control = node.dynamic.control
    return raft_voter_history.last_kraft_version(control), raft_voter_history.last_voter_set(control)


def kraft_version(node: RaftNode) -> int:
    """``KafkaRaftClient.kraftVersion``: the version a leader's upgrade asked for, else the latest KRaftVersionRecord
    read (0 for static voters), §3.15."""
    requested = getattr(node.state, "requested_kraft_version", None)
    return requested if requested is not None else _persisted_version_and_voters(node)[0]


def kraft_version_upgraded(node: RaftNode, op: UpgradeKRaftVersion) -> bool:
    """What ``upgradeKRaftVersion`` returns to its caller when ``node`` (the state before) takes ``op`` without
    refusing it: True when validated or upgraded, False when the version is already the one asked for
    (:func:`raft_reconfig.maybe_append_upgraded_kraft_version`), §3.15."""
    state = node.state
    version, voters = _persisted_version_and_voters(node)
    return raft_reconfig.maybe_append_upgraded_kraft_version(
        state.epoch, state.requested_kraft_version, state.volatile_voters, op.epoch, op.kraft_version, version, voters,
        op.validate_only).upgraded


def _leader_resigns(state: Leader, now: int, shutting_down: bool) -> bool:
    """``pollLeader`` resigns: the node is shutting down (§3.13), a resign was requested, or check quorum expired
    (§3.6)."""
    return shutting_down or state.resign_requested or (now >= state.check_quorum_deadline
                                                       and raft_leader.check_quorum_expired(state, now))


def _handle_resign(node: RaftNode, op: Resign, now: int, jitter: int, out: Outputs) -> RaftNode:
    """``resign(epoch)`` (Kafka 4.3 ``KafkaRaftClient.resign``): the leader of that epoch resigns at the poll that
    follows (``LeaderState.requestResign``; ``pollLeader`` moves it to Resigned, EndQuorumEpoch goes out on the poll
    after that); an older epoch, or a node that already resigned from it, is ignored; a negative epoch, a later one
    or the current epoch of a node that is not its leader is refused (``IllegalArgumentException``)."""
    state = node.state
    if op.epoch < 0 or op.epoch > state.epoch:
        raise InvalidResignError(f"cannot resign from epoch {op.epoch}: the current epoch is {state.epoch}")
    if op.epoch < state.epoch:
        return node
    if raft_state.leader_of(state) != node.local_id:
        raise InvalidResignError(f"cannot resign from epoch {op.epoch} since node {node.local_id} is not the leader")
    if type(state) is Leader:
        return evolve(node, state=evolve(state, resign_requested=True))
    return node


def _handle_shutdown(node: RaftNode, op: Shutdown, now: int, jitter: int, out: Outputs) -> RaftNode:
    """``shutdown(timeoutMs)`` (Kafka 4.3 ``KafkaRaftClient``): a new ``GracefulShutdown`` whose timer ends
    ``timeout_ms`` from now replaces any earlier one; the poll that follows may complete it
    (:func:`_maybe_complete_shutdown`) or, for a leader, resign (§3.13)."""
    return evolve(node, shutdown=GracefulShutdown(deadline=now + op.timeout_ms))


def _maybe_complete_shutdown(node: RaftNode, now: int) -> RaftNode:
    """``maybeCompleteShutdown``, first in every poll: the shutdown times out once its timer expires, else completes
    when :func:`raft_rules.shutdown_can_complete` (an observer, the only voter, or a remote leader known), §3.13."""
    shutdown = node.shutdown
    if now >= shutdown.deadline:
        return evolve(node, shutdown=evolve(shutdown, outcome=raft_state.SHUTDOWN_TIMED_OUT))
    leader = raft_state.leader_of(node.state)
    if raft_rules.shutdown_can_complete(node.is_voter, len(node.voters),
                                        leader != NO_LEADER and leader != node.local_id):
        return evolve(node, shutdown=evolve(shutdown, outcome=raft_state.SHUTDOWN_COMPLETED))
    return node


def _handle_tick(node: RaftNode, tick: Tick, now: int, jitter: int, out: Outputs) -> RaftNode:
    """A poll with no input: the timers are handled by :func:`_poll`, which runs after every input."""
    return node


def _fetch_request(node: RaftNode) -> FetchRequest:
    """``buildFetchRequest``: the follower's position (LEO, last fetched epoch) in its current epoch."""
    hw = getattr(node.state, "high_watermark", -1)
    return FetchRequest(replica_id=node.local_id, current_leader_epoch=node.state.epoch,
                        fetch_offset=node.log.end_offset, last_fetched_epoch=node.log.last_fetched_epoch,
                        max_wait_ms=node.config.fetch_max_wait_ms, high_watermark=hw,
                        replica_directory_id=node.directory_id, cluster_id=node.cluster_id)


def _maybe_send_fetch_to_any_bootstrap(node: RaftNode, now: int, bootstrap: int, out: Outputs) -> RaftNode:
    """``maybeSendFetchToAnyBootstrap``: nothing while any request is in flight; else one Fetch to the bootstrap
    server ``findReadyBootstrapServer`` picks: the first ready one (not backing off) from the start index
    ``bootstrap``, none if all back off. With static voters the bootstrap servers are every voter, the local one
    included (``KafkaRaftClient.initialize``), else the configured ones (:attr:`DynamicVoters.bootstrap_servers`),
    which do not follow the voter set. It is always a Fetch, even while a snapshot is being fetched (Kafka 4.3
    ``maybeSendFetchToAnyBootstrap`` builds it with ``buildFetchRequest``)."""
    node = _without_timed_out(node, now)
    if node.inflight:
        return node
    servers = _bootstrap_servers(node)
    start = servers.index(raft_rules.bootstrap_server(servers, bootstrap))
    for i in range(len(servers)):  # the first server from the drawn one that is not backing off
        server = servers[(start + i) % len(servers)]
        if _ready(node, server, now):
            return _send_request(node, server, _fetch_request(node), now, out)
    return node


def _bootstrap_servers(node: RaftNode) -> tuple[int, ...]:
    """The servers a node fetches from when it knows no leader, in ``RequestManager``'s order: its static voters by id
    (``KafkaRaftClient.initialize``), else its configured bootstrap servers (fixed at start)."""
    if node.dynamic is None:
        return tuple(sorted(node.voters))
    if node.dynamic.static_voters is not None:
        return tuple(sorted(node.dynamic.static_voters))
    return node.dynamic.bootstrap_servers


def _maybe_send_fetch_to_best_node(node: RaftNode, now: int, bootstrap: int, out: Outputs) -> RaftNode:
    """``maybeSendFetchToBestNode``: when the leader's Fetch timed out, fetch from a bootstrap server instead (which
    may be the leader again); otherwise fetch from the leader once no request at all is in flight."""
    leader = node.state.leader_id
    if leader in node.inflight and _ready(node, leader, now):  # hasRequestTimedOut(leader): reset its connection
        return _maybe_send_fetch_to_any_bootstrap(node, now, bootstrap, out)
    if _backing_off(node, leader, now):  # the leader's last request failed: ask another voter meanwhile
        return _maybe_send_fetch_to_any_bootstrap(node, now, bootstrap, out)
    node = _without_timed_out(node, now)
    return node if node.inflight else _maybe_send_fetch_or_fetch_snapshot(node, leader, now, out)


def _maybe_send_fetch_or_fetch_snapshot(node: RaftNode, destination: int, now: int, out: Outputs) -> RaftNode:
    """``maybeSendFetchOrFetchSnapshot``: a FetchSnapshot for the bytes after those held of the snapshot being
    fetched (``buildFetchSnapshotRequest``), else a Fetch from the node's position, to ``destination``."""
    download = getattr(node.state, "fetching_snapshot", None)
    if download is None:
        return _send_request(node, destination, _fetch_request(node), now, out)
    request = FetchSnapshotRequest(replica_id=node.local_id, current_leader_epoch=node.state.epoch,
                                   snapshot_id=(download.end_offset, download.epoch), position=download.received,
                                   max_bytes=node.config.fetch_snapshot_max_bytes,
                                   replica_directory_id=node.directory_id, cluster_id=node.cluster_id)
    return _send_request(node, destination, request, now, out)


def _ordered(targets: Any, order: tuple[int, ...]) -> list[int]:
    """The targets of one round of requests in the order they are sent: the nodes of ``order`` first, in that order,
    then the others by ascending id (no ``order``: ascending ids).

    Kafka's ``maybeSendRequests`` iterates a hash set (``EpochElection.unrecordedVoters``, the ``toUnmodifiableSet``
    of ``LeaderState.needToSendBeginQuorumRequests``, ``VoterSet.voterNodes``), whose order is not specified (a
    ``Set.of`` changes it from one JVM to the next): a recorder states the order it took as the input's ``order``.
    """
    if not order:
        return sorted(targets)
    rank = {target: index for index, target in enumerate(order)}
    return sorted(targets, key=lambda target: (rank.get(target, len(rank)), target))


def _update_voter(node: RaftNode, now: int, out: Outputs) -> RaftNode:
    """``pollFollowerAsVoter`` once the update-voter-set period has passed (Kafka 4.3): under kraft.version 0 a voter
    that has not updated this leader (:func:`_should_send_update_voter`) sends it
    UpdateRaftVoter instead of a Fetch, if nothing is outstanding to the leader (``maybeSendUpdateVoterRequest``),
    and then restarts the period; otherwise it sends nothing and tries again at the next poll."""
    state = node.state
    if not _ready(node, state.leader_id, now):
        return node
    request = UpdateRaftVoterRequest(voter_id=node.local_id, current_leader_epoch=state.epoch,
                                     voter_directory_id=node.directory_id,
                                     listeners=node.voter_endpoints.get(node.local_id, ()), cluster_id=node.cluster_id)
    node = _send_request(node, state.leader_id, request, now, out)
    return evolve(node, state=evolve(node.state, update_voter_deadline=now + node.config.fetch_timeout_ms))


def _last_kraft_version(node: RaftNode) -> int:
    """``partitionState.lastKraftVersion`` alone (:func:`_persisted_version_and_voters` without building a static voter
    set, as every observer's poll asks it): the latest KRaftVersionRecord read, 0 before any."""
    if node.dynamic is None:
        return raft_voters.KRAFT_VERSION_0
    return raft_voter_history.last_kraft_version(node.dynamic.control)


def _auto_join(node: RaftNode, now: int, out: Outputs) -> RaftNode:
    """``pollFollowerAsObserver`` once :func:`raft_rules.should_send_add_or_remove_voter_request` holds (Kafka 4.3):
    instead of a Fetch, an observer whose id is in the voter set under an old directory id asks the leader to remove
    that voter (:func:`raft_rules.auto_join_removes_old_voter`), otherwise to add itself with its listeners, answered
    once the VotersRecord is appended (``buildAddVoterRequest``: ``ackWhenCommitted`` false); sent only when the
    leader's connection is ready (``maybeSendRequest``), and then the update-voter-set period restarts (§3.15,
    KIP-853)."""
    state = node.state
    if not _ready(node, state.leader_id, now):
        return node
    old = _persisted_version_and_voters(node)[1].voters.get(node.local_id)
    if raft_rules.auto_join_removes_old_voter(old is not None):
        request: Any = RemoveRaftVoterRequest(voter_id=node.local_id, voter_directory_id=old.voter_key.directory_id,
                                              cluster_id=node.cluster_id, source=node.local_id)
    else:
        request = AddRaftVoterRequest(voter_id=node.local_id, voter_directory_id=node.directory_id,
                                      listeners=node.voter_endpoints.get(node.local_id, ()), ack_when_committed=False,
                                      cluster_id=node.cluster_id, source=node.local_id)
    node = _send_request(node, state.leader_id, request, now, out)
    return evolve(node, state=evolve(node.state, update_voter_deadline=now + node.config.fetch_timeout_ms))


def _handle_voter_change_response(node: RaftNode, resp: VoterChangeResponse, now: int, jitter: int,
                                  out: Outputs) -> RaftNode:
    """``handleAddVoterResponse`` / ``handleRemoveVoterResponse`` (Kafka 4.3): the auto-joining observer's answer. NONE,
    REQUEST_TIMED_OUT and DUPLICATE_VOTER (AddRaftVoter) or VOTER_NOT_FOUND (RemoveRaftVoter) restart the
    update-voter-set period, so it asks again only once that passes; another error is unexpected
    (``handleUnexpectedError``): the leader's connection backs off. The answer carries no leader or epoch."""
    if not _expected(node, resp.source, resp.correlation_id):
        return node
    settled = Errors.DUPLICATE_VOTER if resp.api == ADD_VOTER else Errors.VOTER_NOT_FOUND
    if resp.error not in (Errors.NONE, Errors.REQUEST_TIMED_OUT, settled):
        return _answered(node, resp.source, resp.correlation_id, False, now)
    state = node.state
    if not isinstance(state, Follower):  # ``followerStateOrThrow``
        raise RaftFatalError(f"{resp.api} response handled in state {state.role}")
    node = evolve(node, state=evolve(state, update_voter_deadline=now + node.config.fetch_timeout_ms))
    return _answered(node, resp.source, resp.correlation_id, True, now)


def _send_to_ready(node: RaftNode, targets: Any, request: Any, now: int, out: Outputs,
                   order: tuple[int, ...] = ()) -> RaftNode:
    """Send ``request`` to each target (not itself) that has nothing outstanding (``RequestManager``), in
    :func:`_ordered` order. A VoteRequest names its addressee (``voter_id``, :func:`_voter_directory_id`): Kafka 4.x's
    ``buildVoteRequest(remoteVoter, preVote)`` sets ``VoterId`` (VoteRequest v1+, ``RaftUtil.singletonVoteRequest``),
    as BeginQuorumEpoch does."""
    addressed = type(request) is VoteRequest
    for target in _ordered(targets, order):
        if target != node.local_id and _ready(node, target, now):
            node = _send_request(node, target, evolve(request, voter_id=target, voter_directory_id=_voter_directory_id(
                node, target)) if addressed else request, now, out)
    return node


def _voter_directory_id(node: RaftNode, voter_id: int) -> Optional[str]:
    """The addressee's directory id in a VoteRequest or BeginQuorumEpochRequest: that of the remote voter's key in the
    voter set (``KafkaRaftClient.buildVoteRequest(remoteVoter, ..)``, ``buildBeginQuorumEpochRequest(remoteVoter)``;
    ``RaftUtil.singletonVoteRequest``, ``singletonBeginQuorumEpochRequest``); static voters have none (§3.14)."""
    if node.dynamic is None:
        return None
    voter = raft_voter_history.last_voter_set(node.dynamic.control).voters.get(voter_id)
    return None if voter is None else voter.voter_key.directory_id


def _vote_request(node: RaftNode, pre_vote: bool) -> VoteRequest:
    """A (pre-)vote request for the current epoch with the log's (last fetched epoch, LEO) (§3.5)."""
    return VoteRequest(replica_id=node.local_id, replica_epoch=node.state.epoch,
                       last_offset_epoch=node.log.last_fetched_epoch, last_offset=node.log.end_offset,
                       pre_vote=pre_vote,
                       replica_directory_id=node.directory_id, cluster_id=node.cluster_id)


def _maybe_send_vote_requests(node: RaftNode, pre_vote: bool, now: int, out: Outputs,
                              order: tuple[int, ...] = ()) -> RaftNode:
    """``maybeSendVoteRequests``: a (pre-)vote request to each voter that has neither granted nor rejected it
    (§3.5)."""
    state = node.state
    return _send_to_ready(node, node.voters - state.granted - state.rejected, _vote_request(node, pre_vote), now, out,
                          order)


def _maybe_send_begin_quorum_epoch_requests(node: RaftNode, now: int, out: Outputs,
                                            order: tuple[int, ...] = ()) -> RaftNode:
    """``maybeSendBeginQuorumEpochRequests``: once its timer expires, the leader announces its epoch to the voters
    that need it (§3.9), each with nothing outstanding (``maybeSendRequests``) and addressed by its key
    (:func:`_voter_directory_id`), and restarts the timer."""
    state = node.state
    if now < state.begin_quorum_deadline:
        return node
    targets = raft_leader.voters_needing_begin_quorum_epoch(state, now, node.config)
    request = BeginQuorumEpochRequest(leader_id=node.local_id, leader_epoch=state.epoch,
                                      leader_endpoints=_leader_endpoints(node), cluster_id=node.cluster_id)
    for target in _ordered(targets, order):
        if _ready(node, target, now):
            node = _send_request(node, target, evolve(request, voter_id=target,
                                                      voter_directory_id=_voter_directory_id(node, target)), now, out)
    deadline = now + node.config.begin_quorum_epoch_timeout_ms
    return evolve(node, state=evolve(node.state, begin_quorum_deadline=deadline))


def _poll(node: RaftNode, now: int, jitter: int, bootstrap: int, out: Outputs,
          order: tuple[int, ...] = ()) -> RaftNode:
    """``poll``: a graceful shutdown may finish first (:func:`_maybe_complete_shutdown`: then nothing else happens);
    else ``pollCurrentState`` expires the role's timer, otherwise sends what is due (§3.5, §3.6); ``bootstrap`` is the
    random start index of :func:`_maybe_send_fetch_to_any_bootstrap`.

    While shutting down (Kafka 4.3 ``pollLeader``, ``pollCandidate``, ``pollProspective``, ``pollUnattachedAsVoter``,
    ``pollResigned``) a leader resigns, a nominee keeps asking for votes, an Unattached voter waits, a Resigned node
    keeps sending EndQuorumEpoch, and no election timer fires; a Follower or observer never gets there (its shutdown
    completes first), §3.13.
    """
    shutting_down = node.shutdown is not None
    if shutting_down:
        node = _maybe_complete_shutdown(node, now)
        if node.shutdown.outcome is not None:
            return node
    state = node.state
    if type(state) is Leader:
        node = _maybe_fire_leader_change(node)  # ``pollLeader`` first tells a caught-up listener
        if _leader_resigns(state, now, shutting_down):
            return _resign(node, now, jitter, out)
        if node.voter_change is not None:
            node, expired = _expire_voter_change(node, now)
            if expired is not None:
                out.append(expired)
        if node.state.unwritten:  # ``maybeAppendBatches``: start-of-epoch or voter records (not the lingering)
            node = _leader_append(evolve(node, state=evolve(node.state, unwritten=())), node.state.unwritten, now, out)
        elif node.state.lingering:  # ``maybeAppendBatches``: the linger time (0) has passed
            node = _leader_append(evolve(node, state=evolve(node.state, lingering=())), node.state.lingering, now, out)
        return _maybe_send_begin_quorum_epoch_requests(node, now, out, order)
    if isinstance(state, Follower):  # an observer's fetch timeout fires nothing since KAFKA-19354
        if node.is_voter:
            if now >= state.fetch_deadline:
                return _to_prospective(node, now, jitter, out, in_poll=True)
            if now >= state.update_voter_deadline:
                if _should_send_update_voter(node):
                    return _update_voter(node, now, out)
                node = evolve(node, state=evolve(state, update_voter_deadline=now + node.config.fetch_timeout_ms))
        elif raft_rules.should_send_add_or_remove_voter_request(
                raft_voters.is_reconfig_supported(_last_kraft_version(node)), node.can_become_voter,
                node.config.auto_join, now >= state.update_voter_deadline):
            return _auto_join(node, now, out)
        return _maybe_send_fetch_to_best_node(node, now, bootstrap, out)
    if isinstance(state, Unattached):
        if shutting_down:  # a voter without a leader: it stays until an epoch bump or the shutdown's end
            return node
        if now >= state.election_deadline and raft_rules.can_start_election(node.is_voter):
            return _to_prospective(node, now, jitter, out, in_poll=True)
        return _maybe_send_fetch_to_any_bootstrap(node, now, bootstrap, out)
    if isinstance(state, Prospective):
        if now >= state.election_deadline and not shutting_down:
            return _prospective_lost(node, now, jitter, out)
        return _maybe_send_vote_requests(node, True, now, out, order)
    if isinstance(state, Candidate):
        if now >= state.election_deadline and not shutting_down:
            return _to_prospective(node, now, jitter, out, in_poll=True)
        if raft_rules.election_lost(len(node.voters), len(state.granted & node.voters),
                                    len(state.rejected & node.voters)):
            return node
        return _maybe_send_vote_requests(node, False, now, out, order)
    request = EndQuorumEpochRequest(leader_id=node.local_id, leader_epoch=state.epoch,
                                    preferred_successors=state.preferred_successors, cluster_id=node.cluster_id)
    node = _send_to_ready(node, state.unacked_voters, request, now, out, order)  # ``pollResigned``: sends first
    if now >= state.election_deadline and not shutting_down:
        return _to_unattached(node, state.epoch + 1, now, jitter, out)
    return node


_HANDLERS: dict[type, Callable[..., RaftNode]] = {
    VoteRequest: _handle_vote_request,
    VoteResponse: _handle_vote_response,
    FetchRequest: _handle_fetch_request,
    FetchResponse: _handle_fetch_response,
    BeginQuorumEpochRequest: _handle_begin_quorum_epoch_request,
    EndQuorumEpochRequest: _handle_end_quorum_epoch_request,
    QuorumEpochResponse: _handle_quorum_epoch_response,
    DescribeQuorumRequest: _handle_describe_quorum_request,
    FetchSnapshotRequest: _handle_fetch_snapshot_request,
    FetchSnapshotResponse: _handle_fetch_snapshot_response,
    Append: _handle_append,
    CreateSnapshot: _handle_create_snapshot,
    DeleteBeforeSnapshot: _handle_delete_before_snapshot,
    Resign: _handle_resign,
    Shutdown: _handle_shutdown,
    Tick: _handle_tick,
    AddRaftVoterRequest: _handle_add_voter_request,
    RemoveRaftVoterRequest: _handle_remove_voter_request,
    UpdateRaftVoterRequest: _handle_update_voter_request,
    UpdateRaftVoterResponse: _handle_update_voter_response,
    ApiVersionsResponse: _handle_api_versions_response,
    VoterChangeResponse: _handle_voter_change_response,
    UpgradeKRaftVersion: _handle_upgrade_kraft_version,
}
