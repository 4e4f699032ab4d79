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
(:func:`handle_upgrade_kraft_version`); from then on the leader and every node that reads those records run as
kraft.version 1, until a truncation or restart drops them (:func:`start_control_records`); with
``controller.quorum.auto.join.enable`` a kraft.version 1 observer that can become a voter asks its leader to remove
its id's old directory and to add it (:func:`auto_join`). Not modelled: the snapshots' bytes (only their sizes and
the control records of a kraft.version 1 snapshot's first batch, which the FetchSnapshot chunk from byte 0 carries to
a follower that reloads its voters from them), what a shut-down node's driver does after the shutdown finished (it
takes no input until a restart), the FetchSnapshot answer of a partition other than the metadata log's (a request for
one is answered). A graceful shutdown (``shutdown(timeoutMs)``) runs until
the node may leave or its timer expires; a failed request backs its connection off (``quorum.retry.backoff.ms``,
``RequestManager``). KIP-595 as implemented differs from its text: elections start with a pre-vote
(KIP-996, Prospective), a leader that restarts or resigns is Resigned, and a node without a leader (voter or
observer) discovers it by fetching from one bootstrap server at a time (KAFKA-17030).

This module starts, restarts, steps and polls a node and holds the election, Fetch, Begin/EndQuorumEpoch and
DescribeQuorum handlers and the client operations; below it :mod:`raft_snapshot` handles snapshots,
:mod:`raft_reconfig_client` the voter changes and the kraft.version upgrade, :mod:`raft_transitions` the state changes
every handler shares, :mod:`raft_voter_change` the answers to a leader's pending voter change, and :mod:`raft_node`
the node's state, its voter set in force and its outstanding requests.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from kraftspec.reference import raft_leader, raft_log, raft_reconfig, raft_rules, raft_state, raft_voter_history, \
    raft_voters
from kraftspec.reference.errors import Errors
from kraftspec.reference.frozen import EMPTY_MAP, FrozenMap, evolve
from kraftspec.reference.raft_log import LogEntry, RaftLog
from kraftspec.reference.raft_messages import (
    METADATA_PARTITION,
    METADATA_TOPIC_ID,
    NO_DIVERGING_EPOCH,
    NO_SNAPSHOT_ID,
    AddRaftVoterRequest,
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
    InvalidResignError,
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
from kraftspec.reference.raft_node import (
    SUPPORTED_KRAFT_VERSIONS,
    DynamicVoters,
    Outputs,
    RaftNode,
    answered,
    backing_off,
    expected,
    holds_control_records,
    last_kraft_version,
    leader_endpoints,
    local_voter_node,
    persisted_version_and_voters,
    read_control,
    ready,
    send_request,
    start_control_records,
    static_control,
    static_voter_set,
    stored_election,
    top_level_error,
    update_partition_state,
    voter_keys,
    voters_in_force,
    with_control,
    without_timed_out,
)
from kraftspec.reference.raft_quorum_file import write_quorum_state
from kraftspec.reference.raft_reconfig_client import (
    auto_join,
    handle_add_voter_request,
    handle_api_versions_response,
    handle_remove_voter_request,
    handle_update_voter_request,
    handle_update_voter_response,
    handle_upgrade_kraft_version,
    handle_voter_change_response,
    should_send_update_voter,
    update_voter,
)
from kraftspec.reference.raft_records import LeaderChangeMessage
from kraftspec.reference.raft_snapshot import (
    handle_create_snapshot,
    handle_delete_before_snapshot,
    handle_fetch_snapshot_request,
    handle_fetch_snapshot_response,
    with_log_high_watermark,
)
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
    ReplicaKey,
    Resigned,
    SnapshotDownload,
    Unattached,
)
from kraftspec.reference.raft_transitions import (
    common_response,
    fetch_error_response,
    leader_append,
    leader_resigns,
    maybe_fire_leader_change,
    maybe_transition,
    moved,
    to_follower,
    to_unattached,
    try_complete_fetch,
)
from kraftspec.reference.raft_voter_change import NOT_LEADER_MESSAGE, expire_voter_change

UNKNOWN_TOPIC_MESSAGE = "This server does not host this topic-partition."


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
    if not holds_control_records(log.entries) and not any(snapshot_records.values()):
        return _initialize(_quorum_initialize(local_id, voters, voter_endpoints, config, log, stored, now, jitter,
                                              directory_id, cluster_id), now, jitter)
    dynamic = static_control(local_id, voters, voter_endpoints, log, snapshot_records)
    in_force, endpoints = voters_in_force(local_id, dynamic)
    node = _quorum_initialize(local_id, in_force, endpoints, config, log, stored, now, jitter, directory_id,
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
    dynamic = evolve(dynamic, control=read_control(dynamic, log))
    voters, endpoints = voters_in_force(local_id, dynamic)
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
    directory id, its own included (:func:`stored_election`; ``ElectionState.toQuorumStateData``), §3.3."""
    node = evolve(node, dynamic=dynamic)
    return evolve(node, stored=stored_election(node, node.state))


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
    answered where the high watermark passes its VotersRecord
    (:func:`raft_transitions.on_update_leader_high_watermark`): within the fetch that moves it, a parked one too,
    before that fetch's answer (:func:`try_complete_fetch`, Kafka 4.3 ``tryCompleteFetchRequest``), or by the
    leader's own flush of the poll that writes the record, before the parked fetches (:func:`leader_append`).
    The log is given the high watermark the input and the poll leave the state (:func:`with_log_high_watermark`).
    """
    if node.shutdown is not None and node.shutdown.outcome is not None:
        raise ShutDownError(f"node {node.local_id}'s graceful shutdown has finished ({node.shutdown.outcome})")
    out: Outputs = []
    if node.parked:
        node = _expire_parked(node, now, out)
    handled = _HANDLERS[type(message)](node, message, now, jitter, out)
    node = _update_listeners_progress(with_log_high_watermark(handled))
    node = with_log_high_watermark(_poll(node, now, jitter, bootstrap, out, order))
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


def _poll_listeners(node: RaftNode) -> RaftNode:
    """``pollListeners``, last in every poll: the listener is registered if it is not yet, catches up to the high
    watermark, then learns the leader and epoch, except in Resigned (the local node leads, but appends would fail and
    no epoch start is tracked), §3.12."""
    if node.listener is None:
        node = evolve(node, listener=ListenerView())
    node = _update_listeners_progress(node)
    return node if isinstance(node.state, Resigned) else maybe_fire_leader_change(node)


# --------------------------------------------------------------------------------------------------
# Elections (§3.5, §3.6)


def _to_prospective(node: RaftNode, now: int, jitter: int, out: Outputs, in_poll: bool = False) -> RaftNode:
    """``transitionToProspective``; a single voter goes on to Candidate and Leader at once (§3.5); ``in_poll``: the
    poll's own timer moved it (:func:`_to_leader`)."""
    deadline = raft_state.election_deadline(node.config, now, jitter)
    node = moved(node, raft_state.transition_to_prospective(node.state, node.local_id, node.is_voter, deadline),
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
    (:func:`maybe_fire_leader_change`); a lone voter is at once Leader (§3.5)."""
    deadline = raft_state.election_deadline(node.config, now, jitter)
    node = moved(node, raft_state.transition_to_candidate(node.state, node.local_id, deadline), True, out)
    return _maybe_candidate_won(maybe_fire_leader_change(node), now, out, in_poll)


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
                                             node.config, FrozenMap({k.id: k.directory_id for k in voter_keys(node)}))
    leader = evolve(leader, volatile_voters=_volatile_voters_at_epoch_start(node))
    node = evolve(moved(node, leader, True, out), log=raft_log.initialize_leader_epoch(node.log, leader.epoch))
    if node.shutdown is not None:
        return node
    record = LeaderChangeMessage(leader_id=node.local_id, voters=tuple(sorted(node.voters)),
                                 granting_voters=tuple(sorted(leader.granting_voters)))
    if in_poll:
        return evolve(node, state=evolve(node.state, unwritten=((record,) + _start_of_epoch_records(node),)))
    return leader_append(node, ((record,) + _start_of_epoch_records(node),), now, out)


def _volatile_voters_at_epoch_start(node: RaftNode) -> Optional[raft_voters.VoterSet]:
    """``LeaderState``'s constructor: a kraft.version 0 leader keeps in memory the voters at its epoch start with its
    own node in place (:func:`raft_reconfig.volatile_voters_at_epoch_start`); static voters are
    ``VoterSet.fromInetSocketAddresses``'s (no directory id, their endpoints, kraft.version 0 to 0), §3.15."""
    if node.dynamic is not None:
        control = node.dynamic.control
        return raft_reconfig.volatile_voters_at_epoch_start(raft_voter_history.last_voter_set(control),
                                                            local_voter_node(node),
                                                            raft_voter_history.last_kraft_version(control))
    static = static_voter_set(node.voters, node.voter_endpoints)
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
        raft_voter_history.last_kraft_version(control), local_voter_node(node))


def _resign(node: RaftNode, now: int, jitter: int, out: Outputs) -> RaftNode:
    """``transitionToResigned``: EndQuorumEpoch to the other voters (from the next poll), best successors first (§3.6)."""
    successors = raft_leader.voters_by_descending_end_offset(node.state)
    deadline = raft_state.election_deadline(node.config, now, jitter)
    return moved(node, raft_state.transition_to_resigned(node.state, successors, node.voters, deadline), False, out)


# --------------------------------------------------------------------------------------------------
# Vote (§3.4, §3.5)


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
                        leader_endpoints=leader_endpoints(node), correlation_id=correlation_id)


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
        node = to_unattached(node, req.replica_epoch, now, jitter, out)
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
        node = evolve(node, state=voted, stored=stored_election(node, voted))
    out.append(Send(destination=src, message=_vote_response(node, Errors.NONE, granted, cid)))
    return node


def _handle_vote_response(node: RaftNode, resp: VoteResponse, now: int, jitter: int, out: Outputs) -> RaftNode:
    """``handleVoteResponse``: pre-votes may flip, standard votes may not; UNSUPPORTED_VERSION skips pre-vote.
    A failed response (an error not handled in common) backs the connection off (:func:`answered`)."""
    if not expected(node, resp.source, resp.correlation_id):
        return node
    node, success = _vote_response_handled(node, resp, now, jitter, out)
    return answered(node, resp.source, resp.correlation_id, success, now)


def _vote_response_handled(node: RaftNode, resp: VoteResponse, now: int, jitter: int,
                           out: Outputs) -> tuple[RaftNode, bool]:
    """:func:`_handle_vote_response`'s handling: (node, whether the request succeeded)."""
    if resp.error != Errors.NONE:
        if resp.error == Errors.UNSUPPORTED_VERSION and isinstance(node.state, Prospective):
            return _to_candidate(node, now, jitter, out), True
        return node, top_level_error(resp.error)
    node, common = common_response(node, resp.partition_error, resp.leader_id, resp.leader_epoch,
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
        return to_follower(node, state.epoch, state.leader_id, state.leader_endpoints, now, out)
    return to_unattached(node, state.epoch, now, jitter, out, state.leader_id)


# --------------------------------------------------------------------------------------------------
# Fetch (§3.7)


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
        out.append(Send(destination=src, message=fetch_error_response(node, Errors.INVALID_REQUEST, req)))
        return node
    node, resp = try_complete_fetch(node, req, now, out)  # a voter change it commits is answered before it
    if (req.max_wait_ms == 0 or resp.records or resp.partition_error is not Errors.NONE
            or resp.diverging_epoch != NO_DIVERGING_EPOCH or resp.snapshot_id != NO_SNAPSHOT_ID
            or req.high_watermark < resp.high_watermark):
        out.append(Send(destination=src, message=resp))
    else:
        node = evolve(node, parked=node.parked + (ParkedFetch(source=src, request=req, deadline=now + req.max_wait_ms,
                                                              response=resp),))
    return node


def _expire_parked(node: RaftNode, now: int, out: Outputs) -> RaftNode:
    """Parked fetches whose maxWaitMs deadline has come get the answer computed when they arrived, by (deadline,
    arrival) (``MockExpirationService`` fires when the clock reaches a deadline; the replica state is not updated)."""
    due = sorted((p for p in node.parked if p.deadline <= now), key=lambda p: p.deadline)
    if not due:
        return node
    for parked in due:
        out.append(Send(destination=parked.source, message=parked.response))
    return evolve(node, parked=tuple(p for p in node.parked if p.deadline > now))


def _handle_fetch_response(node: RaftNode, resp: FetchResponse, now: int, jitter: int, out: Outputs) -> RaftNode:
    """``handleFetchResponse``: truncate on a diverging epoch, else append and take min(LEO, HW) (§3.7). A failed
    response (a top-level error, or a partition error not handled in common) backs the connection off."""
    if not expected(node, resp.source, resp.correlation_id):
        return node
    if resp.error != Errors.NONE:
        return answered(node, resp.source, resp.correlation_id, top_level_error(resp.error), now)
    node, common = common_response(node, resp.partition_error, resp.leader_id, resp.leader_epoch,
                                   resp.leader_endpoints, now, jitter, out)
    if common is not None:
        return answered(node, resp.source, resp.correlation_id, common, now)
    if not isinstance(node.state, Follower):  # ``followerStateOrThrow`` comes before the error is looked at
        raise RaftFatalError(f"fetch response handled in state {node.state.role}")
    if resp.partition_error != Errors.NONE:
        return answered(node, resp.source, resp.correlation_id, False, now)  # ``handleUnexpectedError``
    snapshot_epoch, snapshot_end = resp.snapshot_id[1], resp.snapshot_id[0]
    if resp.diverging_epoch[0] < 0 and (snapshot_epoch >= 0 or snapshot_end >= 0):
        # A snapshot id with a negative epoch or end offset names no snapshot: the answer is logged and failed.
        if snapshot_epoch < 0 or snapshot_end < 0:
            return answered(node, resp.source, resp.correlation_id, False, now)
        return answered(_fetching_snapshot(node, snapshot_end, snapshot_epoch, now), resp.source,
                        resp.correlation_id, True, now)
    return answered(_fetched(node, resp, now), resp.source, resp.correlation_id, True, now)


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
    then on its kraft.version and voters are its log's (:func:`start_control_records`, §3.15)."""
    state = node.state
    log = node.log
    hw = state.high_watermark
    if resp.diverging_epoch[0] >= 0:
        epoch, end_offset = resp.diverging_epoch
        if hw >= 0 and end_offset < hw:
            raise RaftFatalError(f"leader requested truncation to {end_offset}, below the high watermark {hw}")
        log, truncated = raft_log.truncate_to_end_offset(log, epoch, end_offset)
        if node.dynamic is not None:  # ``partitionState.truncateNewEntries``
            node = with_control(node, raft_voter_history.truncate_control_records(node.dynamic.control, truncated))
    else:
        accepted = _accepted_entries(node, resp)
        log = raft_log.append_as_follower(log, accepted)
        if node.is_voter or node.can_become_voter:  # a node the leader may count as a voter flushes first
            log = raft_log.flush(log)
        if node.dynamic is not None:
            node = update_partition_state(evolve(node, log=log))
        elif holds_control_records(accepted):
            node = start_control_records(evolve(node, log=log))
        try:
            hw = raft_rules.follower_high_watermark(hw, log.end_offset, resp.high_watermark)
        except ValueError as exc:
            raise RaftFatalError(str(exc)) from exc
    state = evolve(state, fetch_deadline=now + node.config.fetch_timeout_ms, high_watermark=hw, has_fetched=True)
    return evolve(node, state=state, log=log)


# --------------------------------------------------------------------------------------------------
# BeginQuorumEpoch / EndQuorumEpoch (§3.9) and DescribeQuorum (§3.10)


def _epoch_response(node: RaftNode, api: str, partition_error: Errors, cid: int) -> QuorumEpochResponse:
    """``buildBegin/EndQuorumEpochResponse``: the receiver's epoch, leader and endpoints (§3.9)."""
    return QuorumEpochResponse(source=node.local_id, api=api, partition_error=partition_error,
                               leader_epoch=node.state.epoch, leader_id=raft_state.leader_of(node.state),
                               leader_endpoints=leader_endpoints(node), correlation_id=cid)


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
    node = maybe_transition(node, req.leader_id, req.leader_epoch, endpoints, now, jitter, out)
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
    node = maybe_transition(node, req.leader_id, req.leader_epoch, node.voter_endpoints.get(req.leader_id, ()), now,
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
    if not expected(node, resp.source, resp.correlation_id):
        return node
    if resp.error != Errors.NONE:
        return answered(node, resp.source, resp.correlation_id, top_level_error(resp.error), now)
    node, common = common_response(node, resp.partition_error, resp.leader_id, resp.leader_epoch,
                                   resp.leader_endpoints, now, jitter, out)
    if common is not None or resp.partition_error != Errors.NONE:
        return answered(node, resp.source, resp.correlation_id, bool(common), now)
    state = node.state
    if isinstance(state, Leader) and resp.api == "BeginQuorumEpoch":
        node = evolve(node, state=raft_leader.acknowledge(state, resp.source))
    elif isinstance(state, Resigned) and resp.api == "EndQuorumEpoch":
        node = evolve(node, state=evolve(state, unacked_voters=state.unacked_voters - {resp.source}))
    return answered(node, resp.source, resp.correlation_id, True, now)


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
# Client operations, and what they return to their caller


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
    if leader_resigns(state, now, node.shutdown is not None):
        return node
    if state.unwritten:
        return evolve(node, state=evolve(state, lingering=state.lingering + op.records))
    return leader_append(evolve(node, state=evolve(state, lingering=())), (state.lingering + op.records,), now, out)


def append_offset(node: RaftNode, records: tuple[Any, ...]) -> int:
    """The offset an accepted append returns: its last record's, counted from the leader's log end and the records
    still in its accumulator (``BatchAccumulator.append``)."""
    state = node.state
    waiting = sum(map(len, state.unwritten)) + len(state.lingering) if isinstance(state, Leader) else 0
    return node.log.end_offset + waiting + len(records) - 1


def snapshot_created(before: RaftNode, op: CreateSnapshot) -> bool:
    """Whether ``createSnapshot`` gave a writer: the id is not below the log start and was not frozen yet."""
    return (op.end_offset >= before.log.start_offset
            and all(s.id != (op.end_offset, op.epoch) for s in before.log.snapshots))


def kraft_version(node: RaftNode) -> int:
    """``KafkaRaftClient.kraftVersion``: the version a leader's upgrade asked for, else the latest KRaftVersionRecord
    read (0 for static voters), §3.15."""
    requested = getattr(node.state, "requested_kraft_version", None)
    return requested if requested is not None else persisted_version_and_voters(node)[0]


def kraft_version_upgraded(node: RaftNode, op: UpgradeKRaftVersion) -> bool:
    """What ``upgradeKRaftVersion`` returns to its caller when ``node`` (the state before) takes ``op`` without
    refusing it: True when validated or upgraded, False when the version is already the one asked for
    (:func:`raft_reconfig.maybe_append_upgraded_kraft_version`), §3.15."""
    state = node.state
    version, voters = persisted_version_and_voters(node)
    return raft_reconfig.maybe_append_upgraded_kraft_version(
        state.epoch, state.requested_kraft_version, state.volatile_voters, op.epoch, op.kraft_version, version, voters,
        op.validate_only).upgraded


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


# --------------------------------------------------------------------------------------------------
# The poll: timers and the requests due (§3.5–§3.7, §3.9)


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
    node = without_timed_out(node, now)
    if node.inflight:
        return node
    servers = _bootstrap_servers(node)
    start = servers.index(raft_rules.bootstrap_server(servers, bootstrap))
    for i in range(len(servers)):  # the first server from the drawn one that is not backing off
        server = servers[(start + i) % len(servers)]
        if ready(node, server, now):
            return send_request(node, server, _fetch_request(node), now, out)
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
    if leader in node.inflight and ready(node, leader, now):  # hasRequestTimedOut(leader): reset its connection
        return _maybe_send_fetch_to_any_bootstrap(node, now, bootstrap, out)
    if backing_off(node, leader, now):  # the leader's last request failed: ask another voter meanwhile
        return _maybe_send_fetch_to_any_bootstrap(node, now, bootstrap, out)
    node = without_timed_out(node, now)
    return node if node.inflight else _maybe_send_fetch_or_fetch_snapshot(node, leader, now, out)


def _maybe_send_fetch_or_fetch_snapshot(node: RaftNode, destination: int, now: int, out: Outputs) -> RaftNode:
    """``maybeSendFetchOrFetchSnapshot``: a FetchSnapshot for the bytes after those held of the snapshot being
    fetched (``buildFetchSnapshotRequest``), else a Fetch from the node's position, to ``destination``."""
    download = getattr(node.state, "fetching_snapshot", None)
    if download is None:
        return send_request(node, destination, _fetch_request(node), now, out)
    request = FetchSnapshotRequest(replica_id=node.local_id, current_leader_epoch=node.state.epoch,
                                   snapshot_id=(download.end_offset, download.epoch), position=download.received,
                                   max_bytes=node.config.fetch_snapshot_max_bytes,
                                   replica_directory_id=node.directory_id, cluster_id=node.cluster_id)
    return send_request(node, destination, request, now, out)


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


def _send_to_ready(node: RaftNode, targets: Any, request: Any, now: int, out: Outputs,
                   order: tuple[int, ...] = ()) -> RaftNode:
    """Send ``request`` to each target (not itself) that has nothing outstanding (``RequestManager``), in
    :func:`_ordered` order. A VoteRequest names its addressee (``voter_id``, :func:`_voter_directory_id`): Kafka 4.x's
    ``buildVoteRequest(remoteVoter, preVote)`` sets ``VoterId`` (VoteRequest v1+, ``RaftUtil.singletonVoteRequest``),
    as BeginQuorumEpoch does."""
    addressed = type(request) is VoteRequest
    for target in _ordered(targets, order):
        if target != node.local_id and ready(node, target, now):
            node = send_request(node, target, evolve(request, voter_id=target, voter_directory_id=_voter_directory_id(
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
                                      leader_endpoints=leader_endpoints(node), cluster_id=node.cluster_id)
    for target in _ordered(targets, order):
        if ready(node, target, now):
            node = send_request(node, target, evolve(request, voter_id=target,
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
        node = maybe_fire_leader_change(node)  # ``pollLeader`` first tells a caught-up listener
        if leader_resigns(state, now, shutting_down):
            return _resign(node, now, jitter, out)
        if node.voter_change is not None:
            node, expired = expire_voter_change(node, now)
            if expired is not None:
                out.append(expired)
        if node.state.unwritten:  # ``maybeAppendBatches``: start-of-epoch or voter records (not the lingering)
            node = leader_append(evolve(node, state=evolve(node.state, unwritten=())), node.state.unwritten, now, out)
        elif node.state.lingering:  # ``maybeAppendBatches``: the linger time (0) has passed
            node = leader_append(evolve(node, state=evolve(node.state, lingering=())), (node.state.lingering,), now,
                                 out)
        return _maybe_send_begin_quorum_epoch_requests(node, now, out, order)
    if isinstance(state, Follower):  # an observer's fetch timeout fires nothing since KAFKA-19354
        if node.is_voter:
            if now >= state.fetch_deadline:
                return _to_prospective(node, now, jitter, out, in_poll=True)
            if now >= state.update_voter_deadline:
                if should_send_update_voter(node):
                    return update_voter(node, now, out)
                node = evolve(node, state=evolve(state, update_voter_deadline=now + node.config.fetch_timeout_ms))
        elif raft_rules.should_send_add_or_remove_voter_request(
                raft_voters.is_reconfig_supported(last_kraft_version(node)), node.can_become_voter,
                node.config.auto_join, now >= state.update_voter_deadline):
            return auto_join(node, now, out)
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
        return to_unattached(node, state.epoch + 1, now, jitter, out)
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
    FetchSnapshotRequest: handle_fetch_snapshot_request,
    FetchSnapshotResponse: handle_fetch_snapshot_response,
    Append: _handle_append,
    CreateSnapshot: handle_create_snapshot,
    DeleteBeforeSnapshot: handle_delete_before_snapshot,
    Resign: _handle_resign,
    Shutdown: _handle_shutdown,
    Tick: _handle_tick,
    AddRaftVoterRequest: handle_add_voter_request,
    RemoveRaftVoterRequest: handle_remove_voter_request,
    UpdateRaftVoterRequest: handle_update_voter_request,
    UpdateRaftVoterResponse: handle_update_voter_response,
    ApiVersionsResponse: handle_api_versions_response,
    VoterChangeResponse: handle_voter_change_response,
    UpgradeKRaftVersion: handle_upgrade_kraft_version,
}
