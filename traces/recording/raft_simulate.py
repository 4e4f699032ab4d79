"""``kraftspec generate sim --component raft``: one node's view of a seeded simulated KRaft quorum (rules §3).

The quorum is ``kraftspec.models.raft``'s: voters 1-3 and observer 4 (kraft.version 0, each node with its directory
id) over a network that delays, reorders, duplicates and loses messages, UpdateRaftVoter and its answer included
(a voter tells each new leader its endpoints); nodes poll their timers as time passes, crash and restart
(losing unflushed records), leaders take client appends and resign. With ``faults`` the network also fails
requests as Kafka's channel reports a disconnect (the sender gets the request's error response, top-level
BROKER_NOT_AVAILABLE: ``KafkaNetworkChannel``, ``RaftUtil.errorResponse``), so the retry back-off
(``quorum.retry.backoff.ms``) is exercised, and nodes shut down gracefully (``shutdown(timeoutMs)``); a node whose
shutdown finished is stopped (requests to it fail) until it restarts. With ``snapshots`` (KIP-630) nodes also
create snapshots at their high watermark and their logs' cleaners advance the log start to their latest snapshot,
so that followers behind the log start (lagging, or restarted observers that lost their unflushed log) fetch the
leader's snapshot in chunks (``fetch_snapshot_max_bytes`` :data:`SNAPSHOT_MAX_BYTES`); the post-states then state the
log start and latest snapshot id too. With ``dynamic`` (KIP-853) the quorum runs kraft.version 1: every node is
formatted with voters 1-3 as ``--initial-controllers`` (their bootstrap checkpoint), nodes 4 and, in half the runs, 5
start as observers, and an admin client (ids 1000 and up, one per request) asks the newest leader to add a node that
is not one of its voters (AddRaftVoter; the addressee's network layer answers the leader's ApiVersions request at
once) or to remove one of its voters (RemoveRaftVoter), so voters come and go and leaders leave the set; a Fetch to a
bootstrap server (-2, -3, -4) reaches the voter listening there and is answered from that id
(:func:`bootstrap_server_node`), and a crash the node could not restart from is not drawn. One node,
drawn per trace, is recorded: every input it receives becomes a step with the messages it sent and its post-state.
With a mutant applied every node runs the mutant, so the recorded node's outputs are the mutant's.
"""

from __future__ import annotations

import dataclasses
import random
from abc import ABC, abstractmethod
from contextlib import AbstractContextManager, nullcontext
from typing import Any, Generic, Mapping, Optional, Sequence, TypeVar

from kraftspec.models.raft import CONFIG, DIRECTORY_IDS, MAX_IN_FLIGHT, NODES, VOTERS, restarted
from kraftspec.reference import raft, raft_snapshot, raft_state
from kraftspec.reference.errors import Errors
from kraftspec.reference.raft_messages import (
    AddRaftVoterRequest,
    ApiVersionsRequest,
    ApiVersionsResponse,
    Append,
    BeginQuorumEpochRequest,
    CreateSnapshot,
    DeleteBeforeSnapshot,
    EndQuorumEpochRequest,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    QuorumEpochResponse,
    RaftFatalError,
    RemoveRaftVoterRequest,
    Resign,
    Send,
    Shutdown,
    Tick,
    UpdateRaftVoterRequest,
    UpdateRaftVoterResponse,
    VoteRequest,
    VoteResponse,
)
from kraftspec.reference.raft_state import Leader
from kraftspec.traces.format.envelope import Step, Trace
from kraftspec.traces.replay.raft import BASE_FIELDS, AppendResult, Sends, SnapshotResult, observe, sent
from kraftspec.traces.format.raft import ACTIONS, encode_entries, explicit_state
from kraftspec.traces.format.values import to_json

_ACTION_OF = {spec[0]: name for name, a in ACTIONS.items() for arg, spec in a.args.items() if arg == "message"}
RULES = ("tick", "tick", "tick_all", "quiet", "deliver", "deliver", "deliver", "deliver_all", "duplicate", "lose",
         "append", "append", "resign", "crash")
"""The simulation's rules, drawn uniformly (repeats weight them), as in ``models.raft.RaftQuorumModel``."""
FAULT_RULES = RULES + ("fail", "fail", "shutdown", "revive")
"""The rules with ``faults``: failed requests, graceful shutdowns, and a stopped node restarting."""
SNAPSHOT_RULES = ("append", "append", "append", "append", "snapshot", "snapshot", "clean", "compact", "compact",
                  "crash")
"""Added with ``snapshots`` (after the others): more appends and crashes (logs to snapshot, observers that lose their
unflushed log), a node snapshots its committed log, a node's cleaner advances its log start to its latest snapshot,
every node does both (``compact``)."""
DYNAMIC_RULES = ("add_voter", "add_voter", "remove_voter", "remove_voter")
"""Added with ``dynamic`` (after the others): an admin asks the newest leader to add a node or remove a voter."""
DYNAMIC_STEPS = 150
"""The default steps of a ``dynamic`` trace: a voter is added, one removed and the leader changes after both in 57 of
100 traces (seed 2711; none at the default 40 steps, 30 at 100, 76 at 200)."""
SPARES = (4, 5)
"""The nodes a ``dynamic`` quorum holds besides the initial voters 1-3: node 4, and node 5 in half the runs."""
DYNAMIC_DIRECTORY_IDS = {**DIRECTORY_IDS, 5: "a3JhZnRzcGVjLW5vZGUtNQ"}
"""The directory ids of a ``dynamic`` quorum's nodes (node 5's: the base64 of ``kraftspec-node-5``)."""
ADMIN_ID = 1000
"""The first admin client's id: the ``n``-th voter-change request comes from ``ADMIN_ID + n``."""
SNAPSHOT_SIZES = (250, 300, 450)
"""Snapshot sizes in bytes drawn: three chunks of :data:`SNAPSHOT_MAX_BYTES` (the last short or full), or five (a
kraft.version-0 snapshot holding a record, header and footer, takes over 200 bytes in Kafka 4.3)."""
DYNAMIC_SNAPSHOT_SIZES = (550, 600, 700)
"""Snapshot sizes drawn for a ``dynamic`` quorum: a kraft.version 1 snapshot starts with its KRaftVersionRecord and
VotersRecord, which take 350 to 460 bytes in Kafka 4.3 for three to five voters."""
SNAPSHOT_MAX_BYTES = 100
"""``fetch_snapshot_max_bytes`` of the simulation with ``snapshots``: snapshots come in chunks."""
SHUTDOWN_TIMEOUTS_MS = (0, 500, 3000)
"""``shutdown(timeoutMs)`` timeouts drawn: at once, shorter and longer than an election."""
UNREACHABLE_MUTANTS = {
    "raft_check_quorum_non_voter_leader": "the voters are static (1-3) and only a voter is ever elected, so every "
                                          "leader is a voter, where the mutant decides as the reference does",
}
"""Raft mutants whose wrong rule this simulation can never reach, with the reason: no trace is recorded under them
(``kraftspec generate`` refuses them and leaves them out of a ``--mutant-share``)."""
FAULTS_ONLY_MUTANTS = {
    "raft_shutdown_ignores_remote_leader": "only a simulation with --faults shuts nodes down",
    "raft_retry_backoff_ignored": "only a simulation with --faults fails requests, after which a connection backs off",
}
"""Raft mutants only the simulation with ``faults`` reaches, with the reason the one without never does."""


DYNAMIC_UNREACHABLE_MUTANTS = {
    "raft_check_quorum_non_voter_leader": "a leader is no voter only between appending its own removal and "
                                          "resigning once it commits; none of 60 --dynamic traces of 150 steps "
                                          "(seed 1) showed the mutant",
}
"""As :data:`UNREACHABLE_MUTANTS`, for the ``dynamic`` simulation."""


def unreachable_mutants(faults: bool, dynamic: bool = False) -> dict[str, str]:
    """The raft mutants the simulation with (or without) ``faults``, ``dynamic`` or not, can never (or was never seen
    to) reach, with the reason."""
    unreached = DYNAMIC_UNREACHABLE_MUTANTS if dynamic else UNREACHABLE_MUTANTS
    return dict(unreached) if faults else {**unreached, **FAULTS_ONLY_MUTANTS}


def failed_response(request: Any, destination: int) -> Send:
    """What the sender of ``request`` to ``destination`` gets when the network fails it: the request's error response
    with top-level BROKER_NOT_AVAILABLE under its correlation id (``KafkaNetworkChannel``: a disconnect or an
    unreachable node; ``RaftUtil.errorResponse``)."""
    error, cid = Errors.BROKER_NOT_AVAILABLE, request.correlation_id
    if isinstance(request, FetchSnapshotRequest):
        return Send(destination=request.replica_id,
                    message=FetchSnapshotResponse(source=destination, error=error, correlation_id=cid))
    if isinstance(request, VoteRequest):
        return Send(destination=request.replica_id,
                    message=VoteResponse(source=destination, error=error, correlation_id=cid))
    if isinstance(request, FetchRequest):
        return Send(destination=request.replica_id,
                    message=FetchResponse(source=destination, error=error, correlation_id=cid))
    if isinstance(request, UpdateRaftVoterRequest):
        return Send(destination=request.voter_id,
                    message=UpdateRaftVoterResponse(source=destination, error=error, correlation_id=cid))
    api = "BeginQuorumEpoch" if isinstance(request, BeginQuorumEpochRequest) else "EndQuorumEpoch"
    return Send(destination=request.leader_id,
                message=QuorumEpochResponse(source=destination, api=api, error=error, correlation_id=cid))


FAILABLE = (VoteRequest, FetchRequest, BeginQuorumEpochRequest, EndQuorumEpochRequest, FetchSnapshotRequest,
            UpdateRaftVoterRequest)
"""The requests the network may fail (a failed one is answered by :func:`failed_response`)."""


def latest_voters(log: Sequence[Mapping[str, Any]]) -> frozenset[int]:
    """The voter ids of the last VotersRecord in ``log`` (entries as a trace states them), else the bootstrap voters
    1-3: a ``dynamic`` node's voters as its log states them (both simulations read them so, off the node or its
    post-state)."""
    for entry in reversed(log):
        record = entry["record"]
        if isinstance(record, dict) and record.get("type") == "VotersRecord":
            return frozenset(voter["id"] for voter in record["voters"])
    return VOTERS


def removed_voter_acknowledges(role: str, log: Sequence[Mapping[str, Any]], message: Mapping[str, Any]) -> bool:
    """Whether ``message`` (a raft input's message) is a BeginQuorumEpoch answer to a leader (``role``, ``log``: its
    own) from a voter its log has since removed: Kafka 4.3's leader throws on it
    (``LeaderState.addAcknowledgementFrom``, and so does the reference:
    ``test_raft_reconfig_client_scenarios.test_begin_quorum_epoch_answer_from_removed_voter``), so the simulations lose
    it in the network, as ``models.raft_reconfig`` does."""
    return (role == "Leader" and message.get("api") == "BeginQuorumEpoch"
            and message["source"] not in latest_voters(log))


def node_ids(rng: random.Random, dynamic: bool) -> tuple[int, ...]:
    """The quorum's nodes: voters 1-3 and observer 4, and with ``dynamic`` node 5 too in half the runs (a draw)."""
    return rng.choice((NODES, NODES + SPARES[1:])) if dynamic else NODES


def explicit_json(n: int, config: dict[str, Any], jitter: int, dynamic: bool) -> dict[str, Any]:
    """Node ``n``'s explicit initial state: a kraft.version 0 node of voters 1-3, or (``dynamic``) a kraft.version 1
    node formatted with ``--initial-controllers`` voters 1-3 (its listener ``CONTROLLER://controller<n>:9093``)."""
    if not dynamic:
        return {"local_id": n, "voters": sorted(VOTERS), "config": config, "jitter": jitter,
                "directory_id": DIRECTORY_IDS[n]}
    return {"local_id": n, "kraft_version": 1, "config": config, "jitter": jitter,
            "directory_id": DYNAMIC_DIRECTORY_IDS[n],
            "bootstrap_voters": [{"id": v, "directory_id": DYNAMIC_DIRECTORY_IDS[v], "listeners": [listener(v)]}
                                 for v in sorted(VOTERS)]}


def listener(n: int) -> str:
    """Node ``n``'s one listener."""
    return f"CONTROLLER://controller{n}:9093"


def add_voter_request(n: int, request: int) -> AddRaftVoterRequest:
    """The admin's ``request``-th voter change: add node ``n`` (its directory id and listener), acknowledged once
    committed."""
    return AddRaftVoterRequest(voter_id=n, voter_directory_id=DYNAMIC_DIRECTORY_IDS[n], listeners=(listener(n),),
                               source=ADMIN_ID + request, correlation_id=request)


def remove_voter_request(n: int, request: int) -> RemoveRaftVoterRequest:
    """The admin's ``request``-th voter change: remove voter ``n``."""
    return RemoveRaftVoterRequest(voter_id=n, voter_directory_id=DYNAMIC_DIRECTORY_IDS[n],
                                  source=ADMIN_ID + request, correlation_id=request)


def bootstrap_server_node(destination: int) -> int:
    """The node a send to ``destination`` reaches: a bootstrap server id (-2, -3, ...: Kafka numbers the
    ``controller.quorum.bootstrap.servers`` so, the i-th being -2-i) is the address of the i-th bootstrap voter in id
    order (the voters 1-3 every ``dynamic`` node is formatted with, as the harness configures them); a node id is that
    node."""
    return sorted(VOTERS)[-2 - destination] if destination <= -2 else destination


def api_versions_answer(sender: int, send: Send) -> Send:
    """The answer of ``send.destination``'s network layer to the ApiVersions request ``sender`` sent it: the
    kraft.version range of a Kafka 4.x node (``raft.SUPPORTED_KRAFT_VERSIONS``)."""
    return Send(destination=sender, message=ApiVersionsResponse(
        source=send.destination, kraft_version_range=raft.SUPPORTED_KRAFT_VERSIONS,
        correlation_id=send.message.correlation_id))


def snapshot_sizes(dynamic: bool) -> tuple[int, ...]:
    """The snapshot sizes a quorum draws from: :data:`DYNAMIC_SNAPSHOT_SIZES` for a ``dynamic`` one."""
    return DYNAMIC_SNAPSHOT_SIZES if dynamic else SNAPSHOT_SIZES


def input_of(message: Any) -> tuple[str, dict[str, Any]]:
    """The action and arguments, but for the time, of a node's input ``message`` in the trace vocabulary."""
    if isinstance(message, Append):
        return "append", {"records": message.records}
    if isinstance(message, Resign):
        return "resign", {"epoch": message.epoch}
    if isinstance(message, Shutdown):
        return "shutdown", {"timeout_ms": message.timeout_ms}
    if isinstance(message, Tick):
        return "tick", {}
    if isinstance(message, CreateSnapshot):
        return "create_snapshot", {"end_offset": message.end_offset, "epoch": message.epoch, "size": message.size}
    if isinstance(message, DeleteBeforeSnapshot):
        return "delete_before_snapshot", {"end_offset": message.end_offset, "epoch": message.epoch}
    return _ACTION_OF[type(message)], {"message": message}


SendT = TypeVar("SendT")


class SimulatedQuorum(ABC, Generic[SendT]):
    """What a simulated quorum draws and how its network routes, whatever runs its nodes (this module's
    :class:`_Quorum` the reference, ``harness.raft_mixed``'s the reference and Kafka's client): the nodes' initial
    states and the rules (:meth:`rule`), drawn from ``rng`` in one order, and a request to a bootstrap server id that
    reaches the voter listening there (:meth:`reach`) and is answered from that id (:meth:`server_of`). A subclass
    runs the nodes and holds the sends in flight (``SendT``) and what a node states, through the abstract methods."""

    def __init__(self, rng: random.Random, faults: bool, snapshots: bool, dynamic: bool) -> None:
        self.rng = rng
        self.faults = faults
        self.snapshots = snapshots
        self.dynamic = dynamic
        self.rules = ((FAULT_RULES if faults else RULES) + (SNAPSHOT_RULES if snapshots else ())
                      + (DYNAMIC_RULES if dynamic else ()))
        self.now = 0
        self.ids = node_ids(rng, dynamic)
        self.campaigners = self.ids if dynamic else tuple(sorted(VOTERS))  # who may lead: asked to resign
        config = dataclasses.asdict(CONFIG)
        if snapshots:
            config["fetch_snapshot_max_bytes"] = SNAPSHOT_MAX_BYTES
        else:
            del config["fetch_snapshot_max_bytes"]
        self.explicit = {n: explicit_json(n, config, rng.randrange(CONFIG.election_timeout_ms), dynamic)
                         for n in self.ids}
        self.requests = 0  # the admin's voter-change requests so far
        # (node, requester, correlation id) -> the bootstrap server id the requester sent the request to
        self.servers: dict[tuple[Optional[int], int, Optional[int]], int] = {}
        self.in_flight: list[SendT] = []
        self.next_value = 0

    @abstractmethod
    def take(self, n: int, message: Any) -> None:
        """Node ``n`` takes an input from its clock, a client or the admin (``message``: the reference's)."""

    @abstractmethod
    def arrive(self, send: SendT) -> None:
        """A send in flight arrives at the node at its destination (:meth:`reach`)."""

    @abstractmethod
    def stopped(self, n: int) -> bool:
        """Whether node ``n`` takes no input until it restarts."""

    @abstractmethod
    def newest_leader(self) -> Optional[int]:
        """The leader of the highest epoch that is not stopped, if any (client appends and admin requests go to it)."""

    @abstractmethod
    def led_epoch(self, n: int) -> Optional[int]:
        """The epoch node ``n`` leads (a leader, or resigned from leading), the one its resignation names; else None."""

    @abstractmethod
    def stated_log(self, n: int) -> Sequence[Mapping[str, Any]]:
        """Node ``n``'s log entries as a trace states them."""

    @abstractmethod
    def failable(self, send: SendT) -> bool:
        """Whether ``send`` is a request the network may fail (:data:`FAILABLE`)."""

    @abstractmethod
    def failure(self, send: SendT) -> SendT:
        """The answer the sender of the failed request ``send`` gets (:func:`failed_response`)."""

    @abstractmethod
    def crash(self, n: int) -> None:
        """A crash and restart of node ``n``: unflushed records and the messages to it are lost."""

    @abstractmethod
    def snapshot(self, n: int) -> None:
        """Node ``n``'s state machine snapshots what it knows committed."""

    @abstractmethod
    def clean(self, n: int) -> None:
        """Node ``n``'s log cleaner advances its log start to its latest snapshot."""

    def jitter(self) -> int:
        """A draw of the election timer's randomization (``QuorumConfig``: 0 to the election timeout)."""
        return self.rng.randrange(CONFIG.election_timeout_ms)

    def bootstrap(self) -> int:
        """A draw of ``RequestManager``'s start index into the bootstrap servers (``raft.step``'s ``bootstrap``)."""
        return self.rng.randrange(len(self.ids) if self.dynamic else len(VOTERS))

    def reach(self, destination: int, requester: Optional[int], correlation_id: Optional[int]) -> int:
        """The node a message to ``destination`` reaches (:func:`bootstrap_server_node`); a request of ``requester``
        (None: the message names none) that reached it through a bootstrap server id is remembered, so that its answer
        comes from that id (:meth:`server_of`)."""
        n = bootstrap_server_node(destination)
        if destination != n and requester is not None:
            self.servers[(n, requester, correlation_id)] = destination
        return n

    def server_of(self, source: Optional[int], destination: int, correlation_id: Optional[int]) -> Optional[int]:
        """The bootstrap server id to state as the ``source`` of node ``source``'s answer to ``destination``'s request
        ``correlation_id``, if that request reached it through one (:meth:`reach`): the requester matches an answer
        by the connection it sent the request on (``RequestManager``)."""
        return self.servers.get((source, destination, correlation_id))

    def tick(self, n: int, elapsed: int) -> None:
        """Time passes and node ``n`` polls its timers."""
        self.now += elapsed
        self.take(n, Tick())

    def deliver_all(self) -> None:
        """Every message now in flight arrives, in order (what they cause stays in flight)."""
        batch, self.in_flight = self.in_flight, []
        for send in batch:
            self.arrive(send)

    def calm(self, rounds: int) -> None:
        """``rounds`` rounds of the ``quiet`` rule: 300 ms pass, every node polls, every message in flight arrives."""
        for _ in range(rounds):
            for n in self.ids:
                self.tick(n, 300 if n == self.ids[0] else 0)
            self.deliver_all()

    def change_voters(self, add: bool) -> None:
        """After a calm spell (so that a leader has committed its epoch start), an admin asks the newest leader to add
        a node that is not one of its voters (``add``) or to remove one of its voters (:func:`latest_voters`), drawn
        among them (nothing when there is no leader or no such node), and another calm spell lets the change commit."""
        self.calm(self.rng.randint(2, 5))
        leader = self.newest_leader()
        if leader is None:
            return
        voters = latest_voters(self.stated_log(leader))
        targets = [n for n in self.ids if (n not in voters) == add]
        if targets:
            target, self.requests = self.rng.choice(targets), self.requests + 1
            self.take(leader, add_voter_request(target, self.requests) if add
                      else remove_voter_request(target, self.requests))
        self.calm(self.rng.randint(2, 5))

    def rule(self) -> None:
        """One rule of the model, drawn at random."""
        kind, rng = self.rng.choice(self.rules), self.rng
        if kind == "tick":
            self.tick(rng.choice(self.ids), rng.choice((0, 100, 600, 1500)))
        elif kind in ("tick_all", "quiet"):
            for _ in range(1 if kind == "tick_all" else rng.randint(1, 4)):
                elapsed = rng.choice((100, 600, 1500)) if kind == "tick_all" else 300
                for n in self.ids:
                    self.tick(n, elapsed if n == self.ids[0] else 0)
                if kind == "quiet":
                    self.deliver_all()
        elif kind == "deliver_all":
            self.deliver_all()
        elif kind == "append":
            leader = self.newest_leader()
            if leader is not None:
                self.next_value += 1
                self.take(leader, Append(records=(f"r{self.next_value}",)))
        elif kind == "resign":  # a leader asks to resign its epoch (``resign`` refuses any other node's call)
            n = rng.choice(self.campaigners)
            epoch = self.led_epoch(n)
            if epoch is not None:
                self.take(n, Resign(epoch=epoch))
        elif kind == "crash":
            self.crash(rng.choice(self.ids))
        elif kind == "shutdown":
            self.take(rng.choice(self.ids), Shutdown(timeout_ms=rng.choice(SHUTDOWN_TIMEOUTS_MS)))
        elif kind == "revive":
            stopped = [n for n in self.ids if self.stopped(n)]
            if stopped:
                self.crash(rng.choice(stopped))
        elif kind == "snapshot":
            self.snapshot(rng.choice(self.ids))
        elif kind == "clean":
            self.clean(rng.choice(self.ids))
        elif kind == "compact":
            for n in self.ids:
                self.snapshot(n)
                self.clean(n)
        elif kind in ("add_voter", "remove_voter"):
            self.change_voters(kind == "add_voter")
        elif kind == "fail":
            requests = [i for i, send in enumerate(self.in_flight) if self.failable(send)]
            if requests:
                self.in_flight.append(self.failure(self.in_flight.pop(rng.choice(requests))))
        elif self.in_flight:
            pick = rng.randrange(len(self.in_flight))
            if kind == "deliver":
                self.arrive(self.in_flight.pop(pick))
            elif kind == "duplicate":
                self.in_flight.append(self.in_flight[pick])
            else:
                self.in_flight.pop(pick)


class _Quorum(SimulatedQuorum[Send]):
    """Four nodes (five in half the ``dynamic`` runs) run by the reference, the network, the clock, and the steps
    recorded for node ``recorded``."""

    def __init__(self, rng: random.Random, faults: bool = False, snapshots: bool = False,
                 dynamic: bool = False) -> None:
        self.recorded = rng.choice(NODES)  # drawn first
        super().__init__(rng, faults, snapshots, dynamic)
        self.post_fields = () if snapshots else BASE_FIELDS  # () states every field
        self.nodes = {n: explicit_state(obj) for n, obj in self.explicit.items()}
        self.steps: list[Step] = []
        self.failed = False  # the recorded node refused an input (only under a mutant): the trace ends there

    def stopped(self, n: int) -> bool:
        """Whether node ``n``'s graceful shutdown has finished (it takes no input until it restarts)."""
        shutdown = self.nodes[n].shutdown
        return shutdown is not None and shutdown.outcome is not None

    def arrive(self, send: Send) -> None:
        self.take(send.destination, send.message)

    def take(self, destination: int, message: Any) -> None:
        """The node at ``destination`` (:meth:`reach`) handles one input; the recorded node's becomes a step (its
        sends and post-state). A stopped node takes none: a request to it fails (with ``faults``)."""
        n = self.reach(destination, getattr(message, "replica_id", None), getattr(message, "correlation_id", None))
        if self.stopped(n):
            if isinstance(message, FAILABLE):
                self.in_flight.append(failed_response(message, destination))
            return
        node = self.nodes[n]
        if (self.dynamic and isinstance(message, QuorumEpochResponse) and isinstance(node.state, Leader)
                and removed_voter_acknowledges("Leader", self.stated_log(n), to_json(message))):
            return
        jitter, bootstrap = self.jitter(), self.bootstrap()
        before = self.nodes[n]
        try:
            node, sends = raft.step(before, message, self.now, jitter, bootstrap)
        except (RaftFatalError, ValueError):  # a mutant broke the protocol: the input is lost
            self.failed = self.failed or n == self.recorded
            return
        self.nodes[n] = node
        self.in_flight.extend(api_versions_answer(n, s) if isinstance(s.message, ApiVersionsRequest)
                              else self._as_server(s)
                              for s in sends if bootstrap_server_node(s.destination) in self.nodes)
        del self.in_flight[:-MAX_IN_FLIGHT]  # the network loses the oldest when saturated
        if n == self.recorded:
            self._record(before, message, jitter, bootstrap, tuple(map(sent, sends)))

    def _as_server(self, send: Send) -> Send:
        """``send`` (a node's) with the bootstrap server id its requester sent the request to as its ``source``, if
        it answers a request that reached the node through one (:meth:`server_of`)."""
        message = send.message
        server = self.server_of(getattr(message, "source", None), send.destination,
                                getattr(message, "correlation_id", None))
        return send if server is None else Send(destination=send.destination,
                                                message=dataclasses.replace(message, source=server))

    def _record(self, before: raft.RaftNode, message: Any, jitter: int, bootstrap: int,
                sends: tuple[dict[str, Any], ...]) -> None:
        """The recorded node's input as ``raft_replay.run`` reads it, with the response it gives."""
        action, args = input_of(message)
        args.update(now=self.now, jitter=jitter, bootstrap=bootstrap)
        response: Any = Sends(sends)
        if isinstance(message, Append):
            response = AppendResult(sends, raft.append_offset(before, message.records))
        elif isinstance(message, CreateSnapshot):
            response = SnapshotResult(sends, raft.snapshot_created(before, message))
        self.steps.append(Step(action, args, to_json(response), None,
                               observe(self.nodes[self.recorded], self.now, self.post_fields)))

    def newest_leader(self) -> Optional[int]:
        leaders = [n for n, node in self.nodes.items() if isinstance(node.state, Leader) and not self.stopped(n)]
        return max(leaders, key=lambda n: self.nodes[n].state.epoch) if leaders else None

    def led_epoch(self, n: int) -> Optional[int]:
        state = self.nodes[n].state
        return state.epoch if raft_state.leader_of(state) == n else None

    def stated_log(self, n: int) -> list[dict[str, Any]]:
        return encode_entries(self.nodes[n].log.entries)

    def failable(self, send: Send) -> bool:
        return isinstance(send.message, FAILABLE)

    def failure(self, send: Send) -> Send:
        return failed_response(send.message, send.destination)

    def crash(self, n: int) -> None:
        """A crash and restart: unflushed records and the messages to the node are lost. A crash the node could not
        restart from is not drawn (``models.raft.restarted``): a trace ending in a restart the reference refuses
        would replay as a divergence, and one without it keeps its remaining steps."""
        jitter = self.jitter()
        node = restarted(self.nodes[n], self.now, jitter)
        if node is None:
            return
        self.nodes[n] = node
        self.in_flight = [s for s in self.in_flight if bootstrap_server_node(s.destination) != n]
        if n == self.recorded:
            self.steps.append(Step("restart", {"now": self.now, "jitter": jitter}, {"sends": []}, None,
                                   observe(self.nodes[n], self.now, self.post_fields)))

    def snapshot(self, n: int) -> None:
        """Node ``n``'s state machine snapshots what it knows committed: an id at its log's high watermark
        (``raft_snapshot.log_high_watermark``: a new or resigned leader's too), in the epoch of the record before it
        (nothing when it knows no committed record past its log start, or is stopped)."""
        node = self.nodes[n]
        hw = raft_snapshot.log_high_watermark(node)
        if self.stopped(n) or hw <= node.log.start_offset:
            return
        epoch = node.log.entries[hw - 1 - node.log.start_offset].epoch
        self.take(n, CreateSnapshot(end_offset=hw, epoch=epoch, size=self.rng.choice(snapshot_sizes(self.dynamic))))

    def clean(self, n: int) -> None:
        """Node ``n``'s log cleaner advances its log start to its latest snapshot, if that is ahead of it and
        committed (``KafkaRaftLog.maybeClean`` picks a snapshot by retention; here always the latest)."""
        node = self.nodes[n]
        latest = node.log.latest_snapshot
        if (self.stopped(n) or latest is None or latest.end_offset <= node.log.start_offset
                or latest.end_offset > raft_snapshot.log_high_watermark(node)):
            return
        self.take(n, DeleteBeforeSnapshot(end_offset=latest.end_offset, epoch=latest.epoch))


def simulate_one(seed: int, index: int, steps: int, recording: AbstractContextManager[Any] = nullcontext(),
                 draw: int = 0, faults: bool = False, snapshots: bool = False, dynamic: bool = False) -> Trace:
    """Trace ``index`` of seed ``seed``: up to ``steps`` inputs of one node of a simulated quorum.

    The nodes are started by the reference as it is; the simulation runs inside ``recording`` (a
    mutant's ``applied()``). It stops after ``steps`` recorded inputs, after 50 rules per step, or when
    the recorded node refuses an input (a mutant's fatal condition). ``draw`` > 0 simulates another run for the
    same trace (``kraftspec.traces.recording.generate`` redraws a mutant's trace until the mutant shows); it is in the id.
    ``faults`` adds failed requests and graceful shutdowns (:data:`FAULT_RULES`): another run, named ``sim-raft-faults-``;
    ``snapshots`` adds snapshots (:data:`SNAPSHOT_RULES`): another run, named ``sim-raft-snapshots-``; ``dynamic``
    a kraft.version 1 quorum whose voters change (:data:`DYNAMIC_RULES`): another run, named ``sim-raft-dynamic-``.
    """
    tags = (":faults" if faults else "") + (":snapshots" if snapshots else "") + (":dynamic" if dynamic else "")
    rng = random.Random(f"raft{tags}:{seed}:{index}" + (f":{draw}" if draw else ""))
    quorum = _Quorum(rng, faults, snapshots, dynamic)
    with recording:
        for _ in range(50 * steps):
            if len(quorum.steps) >= steps or quorum.failed:
                break
            quorum.rule()
    options = ((" --faults" if faults else "") + (" --snapshots" if snapshots else "")
               + (" --dynamic" if dynamic else ""))
    return Trace(component="raft", steps=tuple(quorum.steps[:steps]), explicit=quorum.explicit[quorum.recorded],
                 id=f"sim-raft{tags.replace(':', '-')}-{seed}-{index}" + (f"-draw{draw}" if draw else ""),
                 meta={"generator": "kraftspec generate sim --component raft" + options,
                       "seed": seed, "index": index, "node": quorum.recorded, **({"draw": draw} if draw else {}),
                       **({"faults": True} if faults else {}), **({"snapshots": True} if snapshots else {}),
                       **({"dynamic": True} if dynamic else {})})
