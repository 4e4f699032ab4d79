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
log start and latest snapshot id too. One node, drawn per trace, is recorded: every input it receives becomes a step with the messages it sent and its post-state. With a
mutant applied every node runs the mutant, so the recorded node's outputs are the mutant's.
"""

from __future__ import annotations

import dataclasses
import random
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from kraftspec.models.raft import CONFIG, DIRECTORY_IDS, MAX_IN_FLIGHT, NODES, VOTERS
from kraftspec.reference import raft, raft_state
from kraftspec.reference.errors import Errors
from kraftspec.reference.raft_messages import (
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
from kraftspec.traces.format.raft import ACTIONS, explicit_state
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
SNAPSHOT_SIZES = (250, 300, 450)
"""Snapshot sizes in bytes drawn: three chunks of :data:`SNAPSHOT_MAX_BYTES` (the last short or full), or five (a
kraft.version-0 snapshot holding a record, header and footer, takes over 200 bytes in Kafka 4.3)."""
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


def unreachable_mutants(faults: bool) -> dict[str, str]:
    """The raft mutants the simulation with (or without) ``faults`` can never reach, with the reason."""
    return dict(UNREACHABLE_MUTANTS) if faults else {**UNREACHABLE_MUTANTS, **FAULTS_ONLY_MUTANTS}


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


class _Quorum:
    """Four nodes, the network, the clock, and the steps recorded for node ``recorded``."""

    def __init__(self, rng: random.Random, faults: bool = False, snapshots: bool = False) -> None:
        self.rng = rng
        self.faults = faults
        self.snapshots = snapshots
        self.rules = (FAULT_RULES if faults else RULES) + (SNAPSHOT_RULES if snapshots else ())
        self.post_fields = () if snapshots else BASE_FIELDS  # () states every field
        self.now = 0
        self.recorded = rng.choice(NODES)
        config = dataclasses.asdict(CONFIG)
        if snapshots:
            config["fetch_snapshot_max_bytes"] = SNAPSHOT_MAX_BYTES
        else:
            del config["fetch_snapshot_max_bytes"]
        self.explicit = {n: {"local_id": n, "voters": sorted(VOTERS), "config": config,
                             "jitter": rng.randrange(CONFIG.election_timeout_ms), "directory_id": DIRECTORY_IDS[n]}
                         for n in NODES}
        self.nodes = {n: explicit_state(obj) for n, obj in self.explicit.items()}
        self.in_flight: list[Send] = []
        self.steps: list[Step] = []
        self.next_value = 0
        self.failed = False  # the recorded node refused an input (only under a mutant): the trace ends there

    def jitter(self) -> int:
        """A draw of the election timer's randomization (``QuorumConfig``: 0 to the election timeout)."""
        return self.rng.randrange(CONFIG.election_timeout_ms)

    def stopped(self, n: int) -> bool:
        """Whether node ``n``'s graceful shutdown has finished (it takes no input until it restarts)."""
        shutdown = self.nodes[n].shutdown
        return shutdown is not None and shutdown.outcome is not None

    def deliver(self, n: int, message: Any) -> None:
        """Node ``n`` handles one input; the recorded node's becomes a step (its sends and post-state). A stopped
        node takes none: a request to it fails (with ``faults``)."""
        if self.stopped(n):
            if isinstance(message, FAILABLE):
                self.in_flight.append(failed_response(message, n))
            return
        jitter, bootstrap = self.jitter(), self.rng.randrange(len(VOTERS))
        before = self.nodes[n]
        try:
            node, sends = raft.step(before, message, self.now, jitter, bootstrap)
        except (RaftFatalError, ValueError):  # a mutant broke the protocol: the input is lost
            self.failed = self.failed or n == self.recorded
            return
        self.nodes[n] = node
        self.in_flight.extend(s for s in sends if s.destination in self.nodes)
        del self.in_flight[:-MAX_IN_FLIGHT]  # the network loses the oldest when saturated
        if n == self.recorded:
            self._record(before, message, jitter, bootstrap, tuple(map(sent, sends)))

    def _record(self, before: raft.RaftNode, message: Any, jitter: int, bootstrap: int,
                sends: tuple[dict[str, Any], ...]) -> None:
        """The recorded node's input as ``raft_replay.run`` reads it, with the response it gives."""
        timed = {"now": self.now, "jitter": jitter, "bootstrap": bootstrap}
        response: Any = Sends(sends)
        if isinstance(message, Append):
            action, args = "append", {"records": message.records, **timed}
            response = AppendResult(sends, raft.append_offset(before, message.records))
        elif isinstance(message, Resign):
            action, args = "resign", {"epoch": message.epoch, **timed}
        elif isinstance(message, Shutdown):
            action, args = "shutdown", {"timeout_ms": message.timeout_ms, **timed}
        elif isinstance(message, Tick):
            action, args = "tick", timed
        elif isinstance(message, CreateSnapshot):
            action = "create_snapshot"
            args = {"end_offset": message.end_offset, "epoch": message.epoch, "size": message.size, **timed}
            response = SnapshotResult(sends, raft.snapshot_created(before, message))
        elif isinstance(message, DeleteBeforeSnapshot):
            action, args = "delete_before_snapshot", {"end_offset": message.end_offset, "epoch": message.epoch,
                                                      **timed}
        else:
            action, args = _ACTION_OF[type(message)], {"message": message, **timed}
        self.steps.append(Step(action, args, to_json(response), None,
                               observe(self.nodes[self.recorded], self.now, self.post_fields)))

    def tick(self, n: int, elapsed: int) -> None:
        """Time passes and node ``n`` polls its timers."""
        self.now += elapsed
        self.deliver(n, Tick())

    def deliver_all(self) -> None:
        """Every message now in flight arrives, in order (what they cause stays in flight)."""
        batch, self.in_flight = self.in_flight, []
        for send in batch:
            self.deliver(send.destination, send.message)

    def crash(self, n: int) -> None:
        """A crash and restart: unflushed records and the messages to the node are lost."""
        jitter = self.jitter()
        self.nodes[n] = raft.restart(self.nodes[n], self.now, jitter)
        self.in_flight = [s for s in self.in_flight if s.destination != n]
        if n == self.recorded:
            self.steps.append(Step("restart", {"now": self.now, "jitter": jitter}, {"sends": []}, None,
                                   observe(self.nodes[n], self.now, self.post_fields)))

    def snapshot(self, n: int) -> None:
        """Node ``n``'s state machine snapshots what it knows committed: an id at its high watermark, in the epoch of
        the record before it (nothing when it knows no committed record past its log start, or is stopped)."""
        node = self.nodes[n]
        hw = getattr(node.state, "high_watermark", -1)
        if self.stopped(n) or hw <= node.log.start_offset:
            return
        epoch = node.log.entries[hw - 1 - node.log.start_offset].epoch
        self.deliver(n, CreateSnapshot(end_offset=hw, epoch=epoch, size=self.rng.choice(SNAPSHOT_SIZES)))

    def clean(self, n: int) -> None:
        """Node ``n``'s log cleaner advances its log start to its latest snapshot, if that is ahead of it and
        committed (``KafkaRaftLog.maybeClean`` picks a snapshot by retention; here always the latest)."""
        node = self.nodes[n]
        latest = node.log.latest_snapshot
        if (self.stopped(n) or latest is None or latest.end_offset <= node.log.start_offset
                or latest.end_offset > max(getattr(node.state, "high_watermark", -1), 0)):
            return
        self.deliver(n, DeleteBeforeSnapshot(end_offset=latest.end_offset, epoch=latest.epoch))

    def rule(self) -> None:
        """One rule of the model, drawn at random."""
        kind, rng = self.rng.choice(self.rules), self.rng
        if kind == "tick":
            self.tick(rng.choice(NODES), rng.choice((0, 100, 600, 1500)))
        elif kind in ("tick_all", "quiet"):
            for _ in range(1 if kind == "tick_all" else rng.randint(1, 4)):
                elapsed = rng.choice((100, 600, 1500)) if kind == "tick_all" else 300
                for n in NODES:
                    self.tick(n, elapsed if n == NODES[0] else 0)
                if kind == "quiet":
                    self.deliver_all()
        elif kind == "deliver_all":
            self.deliver_all()
        elif kind == "append":
            leaders = [n for n, node in self.nodes.items() if isinstance(node.state, Leader) and not self.stopped(n)]
            if leaders:
                self.next_value += 1
                self.deliver(max(leaders, key=lambda n: self.nodes[n].state.epoch),
                             Append(records=(f"r{self.next_value}",)))
        elif kind == "resign":  # a leader asks to resign its epoch (``resign`` refuses any other node's call)
            n = rng.choice(sorted(VOTERS))
            if raft_state.leader_of(self.nodes[n].state) == n:
                self.deliver(n, Resign(epoch=self.nodes[n].state.epoch))
        elif kind == "crash":
            self.crash(rng.choice(NODES))
        elif kind == "shutdown":
            self.deliver(rng.choice(NODES), Shutdown(timeout_ms=rng.choice(SHUTDOWN_TIMEOUTS_MS)))
        elif kind == "revive":
            stopped = [n for n in NODES if self.stopped(n)]
            if stopped:
                self.crash(rng.choice(stopped))
        elif kind == "snapshot":
            self.snapshot(rng.choice(NODES))
        elif kind == "clean":
            self.clean(rng.choice(NODES))
        elif kind == "compact":
            for n in NODES:
                self.snapshot(n)
                self.clean(n)
        elif kind == "fail":
            requests = [i for i, send in enumerate(self.in_flight) if isinstance(send.message, FAILABLE)]
            if requests:
                send = self.in_flight.pop(rng.choice(requests))
                self.in_flight.append(failed_response(send.message, send.destination))
        elif self.in_flight:
            pick = rng.randrange(len(self.in_flight))
            if kind == "deliver":
                send = self.in_flight.pop(pick)
                self.deliver(send.destination, send.message)
            elif kind == "duplicate":
                self.in_flight.append(self.in_flight[pick])
            else:
                self.in_flight.pop(pick)


def simulate_one(seed: int, index: int, steps: int, recording: AbstractContextManager[Any] = nullcontext(),
                 draw: int = 0, faults: bool = False, snapshots: bool = False) -> Trace:
    """Trace ``index`` of seed ``seed``: up to ``steps`` inputs of one node of a simulated quorum.

    The nodes are started by the reference as it is; the simulation runs inside ``recording`` (a
    mutant's ``applied()``). It stops after ``steps`` recorded inputs, after 50 rules per step, or when
    the recorded node refuses an input (a mutant's fatal condition). ``draw`` > 0 simulates another run for the
    same trace (``kraftspec.traces.recording.generate`` redraws a mutant's trace until the mutant shows); it is in the id.
    ``faults`` adds failed requests and graceful shutdowns (:data:`FAULT_RULES`): another run, named ``sim-raft-faults-``;
    ``snapshots`` adds snapshots (:data:`SNAPSHOT_RULES`): another run, named ``sim-raft-snapshots-``.
    """
    tags = (":faults" if faults else "") + (":snapshots" if snapshots else "")
    rng = random.Random(f"raft{tags}:{seed}:{index}" + (f":{draw}" if draw else ""))
    quorum = _Quorum(rng, faults, snapshots)
    with recording:
        for _ in range(50 * steps):
            if len(quorum.steps) >= steps or quorum.failed:
                break
            quorum.rule()
    options = (" --faults" if faults else "") + (" --snapshots" if snapshots else "")
    return Trace(component="raft", steps=tuple(quorum.steps[:steps]), explicit=quorum.explicit[quorum.recorded],
                 id=f"sim-raft{tags.replace(':', '-')}-{seed}-{index}" + (f"-draw{draw}" if draw else ""),
                 meta={"generator": "kraftspec generate sim --component raft" + options,
                       "seed": seed, "index": index, "node": quorum.recorded, **({"draw": draw} if draw else {}),
                       **({"faults": True} if faults else {}), **({"snapshots": True} if snapshots else {})})
