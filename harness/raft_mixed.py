"""A mixed KRaft quorum: the raft simulation with some of its nodes run by Kafka's own ``KafkaRaftClient``.

The quorum, network and rules are ``kraftspec.traces.recording.raft_simulate``'s (voters 1-3, observer 4, the model's
timeouts; timer polls, delivery in any order, loss, duplication, client appends to the newest leader, resignation by a
leader, crashes that lose unflushed records; UpdateRaftVoter and its answer travel as the other messages do). Each
node is either the reference (``raft.step``) or a harness session of Kafka's client (one ``KafkaProcess`` per
Kafka-backed node). Messages travel between them in the trace vocabulary (a send ``{"destination", "type", ...}``
becomes the receiver's input of that message), so a Kafka node and a reference node talk to each other as two
implementations would; a round of requests goes on the network by ascending destination whatever order its sender took
(:func:`network_order`), so that a seed's run is the same in every JVM. With ``faults`` the run also draws
``raft_simulate``'s fault rules: the network fails requests (the sender gets the request's BROKER_NOT_AVAILABLE
answer, as Kafka's channel reports a disconnect), nodes shut down gracefully, and a node whose shutdown finished is
stopped (requests to it fail) until it restarts. With ``snapshots`` it also draws ``raft_simulate``'s snapshot rules
(KIP-630): nodes snapshot their committed log, their cleaners advance the log start, and followers behind it fetch
snapshots. With ``dynamic`` it runs ``raft_simulate``'s kraft.version 1 quorum (KIP-853): nodes formatted with voters
1-3, spare observers, and the admin's AddRaftVoter / RemoveRaftVoter draws, the leader's ApiVersions request answered
by the addressee's network layer; a Fetch to a bootstrap server (-2, -3, -4) reaches the voter listening there and is
answered from that id, as ``raft_simulate`` routes it, Kafka's nodes included (the harness configures their
``controller.quorum.bootstrap.servers`` so).

After every rule the quorum's safety properties are checked on the nodes' post-states (:class:`Safety`): at most
one leader per epoch, a committed entry is never lost (durable on a majority of voters) or changed, every leader
holds what earlier epochs committed, no node's high watermark decreases (between restarts) or passes its log end.
Every node's view is recorded as a raft trace and judged by the reference after the run (a Kafka node's view is
Kafka's outputs: a divergence is a disagreement with Kafka). :class:`HardPaths` counts how often the run reached
the hard paths: truncation of a diverging log while the leader already has a high watermark, a leader change while
uncommitted entries exist, restarts in every role, (with faults) failed requests and shutdowns by outcome, and (with
snapshots) Fetch answers naming a snapshot, FetchSnapshot chunks served and snapshots loaded. A node's log starts at
its ``log_start_offset``: what lies before it is in its snapshot, durable and no longer compared entry by entry.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Sequence

from kraftspec.harness import raft as hooks
from kraftspec.harness.jvm import HarnessError, KafkaProcess
from kraftspec.models.raft import MAX_IN_FLIGHT, NODES, VOTERS, restarted
from kraftspec.traces.replay import raft as raft_replay
from kraftspec.traces.format.envelope import Step, trace_from_json
from kraftspec.traces.recording.raft_simulate import (
    SimulatedQuorum,
    api_versions_answer,
    bootstrap_server_node,
    failed_response,
    input_of,
    latest_voters,
    removed_voter_acknowledges,
    snapshot_sizes,
)
from kraftspec.reference.raft_messages import (
    ApiVersionsRequest,
    BeginQuorumEpochRequest,
    CreateSnapshot,
    DeleteBeforeSnapshot,
    EndQuorumEpochRequest,
    FetchRequest,
    FetchSnapshotRequest,
    Send,
    UpdateRaftVoterRequest,
    VoteRequest,
)
from kraftspec.traces.format.raft import RAFT, decode_message, explicit_state
from kraftspec.traces.replay.verdict import Verdict, replay
from kraftspec.traces.format.values import to_json

ACTION_OF_TYPE = {"VoteRequest": "vote_request", "VoteResponse": "vote_response", "FetchRequest": "fetch_request",
                  "FetchResponse": "fetch_response", "BeginQuorumEpochRequest": "begin_quorum_epoch_request",
                  "EndQuorumEpochRequest": "end_quorum_epoch_request", "QuorumEpochResponse": "quorum_epoch_response",
                  "FetchSnapshotRequest": "fetch_snapshot_request", "FetchSnapshotResponse": "fetch_snapshot_response",
                  "UpdateRaftVoterRequest": "update_raft_voter_request",
                  "UpdateRaftVoterResponse": "update_raft_voter_response",
                  "ApiVersionsResponse": "api_versions_response"}
"""The input a node receives for each message type on the network (others: DescribeQuorum answers go to clients)."""
_TYPE_OF_ACTION = {action: kind for kind, action in ACTION_OF_TYPE.items()}
FAILABLE = {cls.__name__: cls for cls in (VoteRequest, FetchRequest, BeginQuorumEpochRequest, EndQuorumEpochRequest,
                                          FetchSnapshotRequest, UpdateRaftVoterRequest)}
"""The requests the network may fail, by their type on the network."""
STOPPED = ("completed", "timed_out")
"""A node's ``shutdown`` once it has finished: it takes no input until it restarts."""


def failed(send: Mapping[str, Any]) -> dict[str, Any]:
    """The answer the sender of a failed request gets (``raft_simulate.failed_response``), as a send."""
    message = {k: v for k, v in send.items() if k not in ("destination", "type")}
    request = decode_message(FAILABLE[send["type"]], message, "send")
    return raft_replay.sent(failed_response(request, send["destination"]))


def network_order(sends: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """A step's sends as they go on the network: each round of one request type to several nodes by ascending
    destination, the order the reference takes by itself (``raft._ordered``). Kafka's client sends a round in the
    order of a hash set, which changes from one JVM to the next; putting its requests on the network in the
    reference's order makes a seed's run the same in every JVM (the correlation ids stay as Kafka gave them)."""
    ordered: list[Mapping[str, Any]] = []
    for send in sends:
        start = len(ordered)
        while (start > 0 and str(send.get("type", "")).endswith("Request")
               and ordered[start - 1].get("type") == send.get("type")
               and ordered[start - 1].get("destination", 0) > send.get("destination", 0)):
            start -= 1
        ordered.insert(start, send)
    return ordered


def _entry(post: Mapping[str, Any], offset: int) -> Any:
    """The entry a node's post-state holds at ``offset`` (its log starts at ``log_start_offset``), None past its end."""
    index = offset - post["log_start_offset"]
    return post["log"][index] if 0 <= index < len(post["log"]) else None


class Refused(Exception):
    """A node refused an input (the reference raised, or Kafka's client threw): a finding."""


class ReferenceNode:
    """A node run by the reference, stepped through the trace vocabulary (``raft_replay.run``)."""

    kafka = False

    def __init__(self, explicit: Mapping[str, Any]) -> None:
        self.node = explicit_state(dict(explicit))
        self.clock = 0

    def step(self, obj: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """(the step as recorded: input, output, post; the post-state)."""
        action = obj["action"]
        args = RAFT.decode_input(action, {k: v for k, v in obj.items() if k != "action"}, "input")
        try:
            self.node, self.clock, response, _ = raft_replay.run(self.node, self.clock,
                                                                 Step(action, args, None, None, None))
        except Exception as exc:  # the reference refuses the input
            raise Refused(f"reference node {self.node.local_id}: {type(exc).__name__}: {exc}") from exc
        post = raft_replay.observe(self.node, self.clock)
        step: dict[str, Any] = {"input": dict(obj), "post": post}
        if response is not None:
            step["output"] = {"response": to_json(response)}
        return step, post


class KafkaNode:
    """A node run by Kafka's client in a harness JVM (its own process: a harness JVM holds one session)."""

    kafka = True

    def __init__(self, process: KafkaProcess, explicit: Mapping[str, Any]) -> None:
        self.process = process
        process.open("raft", hooks.kafka_initial({"explicit": dict(explicit)}))

    def step(self, obj: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        answer = self.process.step(dict(obj))
        if "refused" in answer:
            raise Refused(f"Kafka: {answer['refused']['exception']}: {answer['refused']['message']}")
        step = hooks.trace_step(dict(obj), answer)
        return step, answer["post"]


@dataclass
class HardPaths:
    """How often a run reached the paths that are hard to get right."""

    truncations_under_hw: int = 0  # a follower truncated on a DivergingEpoch from a leader that has a HW
    leader_changes_with_uncommitted: int = 0  # a new leader while some log holds entries past the committed prefix
    restarts: Counter = field(default_factory=Counter)  # restarts by the role the node had ("kafka:Leader", ...)
    failed_requests: Counter = field(default_factory=Counter)  # failed answers delivered, by type ("kafka:...")
    shutdowns: Counter = field(default_factory=Counter)  # finished shutdowns by outcome and role ("kafka:completed:...")
    snapshots: Counter = field(default_factory=Counter)  # "kafka:fetch answered with a snapshot id", "...:loaded", ...

    def add(self, other: "HardPaths") -> None:
        self.truncations_under_hw += other.truncations_under_hw
        self.leader_changes_with_uncommitted += other.leader_changes_with_uncommitted
        self.restarts.update(other.restarts)
        self.failed_requests.update(other.failed_requests)
        self.shutdowns.update(other.shutdowns)
        self.snapshots.update(other.snapshots)


class Safety(AssertionError):
    """A safety property broken (the message names it and the nodes)."""


@dataclass
class MixedQuorum(SimulatedQuorum[dict[str, Any]]):
    """One seeded run: four nodes (five in half the ``dynamic`` runs), ``kafka_nodes`` of them run by Kafka (one process
    each, from ``processes``); ``raft_simulate.SimulatedQuorum`` draws the rules, sends in flight as the trace states
    them."""

    seed: int
    kafka_nodes: tuple[int, ...]
    processes: Sequence[KafkaProcess]
    faults: bool = False
    snapshots: bool = False
    dynamic: bool = False

    def __post_init__(self) -> None:
        tags = (":snapshots" if self.snapshots else "") + (":dynamic" if self.dynamic else "")
        super().__init__(random.Random(f"raft-mixed{tags}:{self.seed}"), self.faults, self.snapshots, self.dynamic)
        backing = dict(zip(self.kafka_nodes, self.processes))
        self.nodes = {n: KafkaNode(backing[n], self.explicit[n]) if n in backing else ReferenceNode(self.explicit[n])
                      for n in self.ids}
        self.posts = {n: raft_replay.observe(explicit_state(self.explicit[n]), 0) for n in self.ids}
        self.steps: dict[int, list[dict[str, Any]]] = {n: [] for n in self.ids}
        self.down: set[int] = set()  # Kafka nodes whose restart Kafka's client refused (``dynamic``)
        self.paths = HardPaths()
        self.leaders: dict[int, int] = {}  # epoch -> its one leader
        self.highest_hw: dict[int, int] = {}
        self.committed: dict[int, Any] = {}  # offset -> its committed entry (as JSON), as far as a leader showed it
        self.commit_epochs: dict[int, int] = {}  # the epoch of the leader that first committed each offset
        self.committed_end = 0  # every offset below it is committed

    # -------------------------------------------------------------------------------------------
    # inputs

    def _timed(self) -> dict[str, Any]:
        return {"now": self.now, "jitter": self.jitter(), "bootstrap": self.bootstrap()}

    def _kind(self, n: int) -> str:
        return "kafka" if self.nodes[n].kafka else "reference"

    def stopped(self, n: int) -> bool:
        """Whether node ``n``'s graceful shutdown has finished, or Kafka's client refused to restart it
        (:meth:`crash`)."""
        return n in self.down or self.posts[n].get("shutdown") in STOPPED

    def input(self, n: int, obj: dict[str, Any], timed: bool = True, address: Optional[int] = None) -> None:
        """Node ``n`` takes one input (``timed``: with the time, jitter and bootstrap index drawn now); its sends go on
        the network, its post-state is checked. A stopped node takes none but a restart: a request to it (sent to
        ``address``, default ``n``) fails, and nothing is drawn for it (``raft_simulate``'s ``take``: both runs
        draw in the same order)."""
        before = self.posts[n]
        if self.stopped(n) and (obj["action"] != "restart" or n in self.down):
            if obj["action"].endswith("_request") and obj["action"] in _TYPE_OF_ACTION:
                self.in_flight.append(failed({"destination": n if address is None else address,
                                              "type": _TYPE_OF_ACTION[obj["action"]], **obj["message"]}))
            return
        if (self.dynamic and obj["action"] == "quorum_epoch_response"
                and removed_voter_acknowledges(before["role"], before["log"], obj["message"])):
            return
        if timed:
            obj = {**obj, **self._timed()}
        if obj.get("message", {}).get("error") == "BROKER_NOT_AVAILABLE":
            self.paths.failed_requests[f"{self._kind(n)}:{obj['action']}"] += 1
        step, post = self.nodes[n].step(obj)
        self.steps[n].append(step)
        self.posts[n] = post
        sends = network_order(step.get("output", {}).get("response", {}).get("sends", []))
        self.in_flight.extend(self._answered(n, s) if s["type"] == "ApiVersionsRequest" else self._as_server(s)
                              for s in sends if bootstrap_server_node(s["destination"]) in self.nodes
                              and (s["type"] in ACTION_OF_TYPE or s["type"] == "ApiVersionsRequest"))
        del self.in_flight[:-MAX_IN_FLIGHT]  # the network loses the oldest when saturated
        if obj["action"] == "fetch_response":
            self._count_truncation(obj, before, post)
        self._count_snapshot_paths(n, obj, step, before, post)
        if post["role"] == "Leader" and before["role"] != "Leader":
            self._count_leader_change()
        if post.get("shutdown") in STOPPED and before.get("shutdown") not in STOPPED:
            self.paths.shutdowns[f"{self._kind(n)}:{post['shutdown']}:{before['role']}"] += 1
        self._check(n)

    @staticmethod
    def _answered(n: int, send: Mapping[str, Any]) -> dict[str, Any]:
        """``raft_simulate.api_versions_answer``: the addressee's network layer answers node ``n``'s ApiVersions."""
        request = ApiVersionsRequest(correlation_id=send["correlation_id"])
        return raft_replay.sent(api_versions_answer(n, Send(destination=send["destination"], message=request)))

    def _as_server(self, send: dict[str, Any]) -> dict[str, Any]:
        """``raft_simulate``'s ``_as_server``: an answer to a request that came through a bootstrap server id names
        that id as its ``source`` (``SimulatedQuorum.server_of``)."""
        server = self.server_of(send.get("source"), send["destination"], send.get("correlation_id"))
        return send if server is None else {**send, "source": server}

    def take(self, n: int, message: Any) -> None:
        """Node ``n`` takes ``message`` as a trace states the input (``raft_simulate.input_of``)."""
        action, args = input_of(message)
        self.input(n, {"action": action, **RAFT.encode_input(action, args)})

    def arrive(self, send: dict[str, Any]) -> None:
        """``raft_simulate``'s ``take``: to the node at the send's destination (``SimulatedQuorum.reach``)."""
        message = {k: v for k, v in send.items() if k not in ("destination", "type")}
        n = self.reach(send["destination"], message.get("replica_id"), message.get("correlation_id"))
        self.input(n, {"action": ACTION_OF_TYPE[send["type"]], "message": message}, address=send["destination"])

    def newest_leader(self) -> Optional[int]:
        leaders = [n for n in self.ids if self.posts[n]["role"] == "Leader" and not self.stopped(n)]
        return max(leaders, key=lambda n: self.posts[n]["epoch"]) if leaders else None

    def led_epoch(self, n: int) -> Optional[int]:
        return self.posts[n]["epoch"] if self.posts[n]["leader_id"] == n else None

    def stated_log(self, n: int) -> list[dict[str, Any]]:
        return self.posts[n]["log"]

    def failable(self, send: dict[str, Any]) -> bool:
        return send["type"] in FAILABLE

    def failure(self, send: dict[str, Any]) -> dict[str, Any]:
        return failed(send)

    def crash(self, n: int) -> None:
        """``raft_simulate``'s ``crash``: not drawn for a reference node the reference refuses to restart
        (``models.raft.restarted``). Kafka's client refusing to restart a Kafka node (``dynamic``) leaves it down
        (its view ends there; counted as a ``refused`` restart)."""
        jitter, node = self.jitter(), self.nodes[n]
        if isinstance(node, ReferenceNode) and restarted(node.node, self.now, jitter) is None:
            return
        role = self.posts[n]["role"]
        self.paths.restarts[f"{self._kind(n)}:{role}"] += 1
        try:
            self.input(n, {"action": "restart", "now": self.now, "jitter": jitter}, timed=False)
        except Refused:
            if not (self.dynamic and node.kafka):
                raise
            self.paths.restarts[f"kafka:refused:{role}"] += 1
            self.down.add(n)
        self.in_flight = [s for s in self.in_flight if bootstrap_server_node(s["destination"]) != n]
        self.highest_hw.pop(n, None)

    def snapshot(self, n: int) -> None:
        """``raft_simulate``'s ``snapshot``: node ``n`` snapshots its log at its high watermark (read off its
        post-state)."""
        post = self.posts[n]
        hw, start = post["high_watermark"], post["log_start_offset"]
        if self.stopped(n) or hw <= start:
            return
        self.take(n, CreateSnapshot(end_offset=hw, epoch=post["log"][hw - 1 - start]["epoch"],
                                    size=self.rng.choice(snapshot_sizes(self.dynamic))))

    def clean(self, n: int) -> None:
        """``raft_simulate``'s ``clean``: node ``n``'s cleaner advances its log start to its latest snapshot."""
        post = self.posts[n]
        latest = post["latest_snapshot_id"]
        if (self.stopped(n) or latest is None or latest[0] <= post["log_start_offset"]
                or latest[0] > max(post["high_watermark"], 0)):
            return
        self.take(n, DeleteBeforeSnapshot(end_offset=latest[0], epoch=latest[1]))

    # -------------------------------------------------------------------------------------------
    # safety (on the post-states) and hard paths

    def _check(self, n: int) -> None:
        post = self.posts[n]
        if post["role"] in ("Leader", "Resigned") and post["leader_id"] == n:
            first = self.leaders.setdefault(post["epoch"], n)
            if first != n:
                raise Safety(f"epoch {post['epoch']} has leaders {first} and {n}")
        hw, end = post["high_watermark"], post["log_end_offset"]
        if hw > end:
            raise Safety(f"node {n}: high watermark {hw} passes its log end {end}")
        if hw >= 0:
            if hw < self.highest_hw.get(n, -1):
                raise Safety(f"node {n}: high watermark went from {self.highest_hw[n]} down to {hw}")
            self.highest_hw[n] = hw
            for offset in range(post["log_start_offset"], hw):  # below the log start: in its snapshot
                entry = _entry(post, offset)
                if offset in self.committed and self.committed[offset] != entry:
                    raise Safety(f"node {n}: its committed prefix (HW {hw}) differs from what was committed")
                if post["role"] == "Leader" and offset not in self.committed:
                    self.committed[offset], self.commit_epochs[offset] = entry, post["epoch"]
            if post["role"] == "Leader":
                self.committed_end = max(self.committed_end, hw)
        if post["role"] == "Leader":
            for offset, entry in self.committed.items():
                epoch = self.commit_epochs[offset]
                if (epoch < post["epoch"] and offset >= post["log_start_offset"]
                        and _entry(post, offset) != entry):
                    raise Safety(f"leader {n} of epoch {post['epoch']} lacks offset {offset}, committed in {epoch}")
        electorates = {x: self.durable_voters(x) for x in self.ids}
        positions = {x: self.durable_position(x) for x in self.ids}
        for offset, entry in self.committed.items():
            held = {v for v in self.ids if offset < self.posts[v]["log_start_offset"]
                    or (offset < self.posts[v]["flushed_end_offset"] and _entry(self.posts[v], offset) == entry)}
            for x, voters in electorates.items():
                granting = {v for v in voters - held if not self.dynamic or positions[v] <= positions[x]}
                if x in granting and len(granting) > len(voters) // 2:
                    raise Safety(f"committed offset {offset} is durable only on nodes {sorted(held)}: voters "
                                 f"{sorted(granting)} lack it and could elect node {x} (a majority of its voters "
                                 f"{sorted(voters)})")

    def _count_truncation(self, obj: Mapping[str, Any], before: Mapping[str, Any], after: Mapping[str, Any]) -> None:
        message = obj["message"]
        diverging = message.get("diverging_epoch") or [-1, -1]
        if (diverging[0] >= 0 and after["log_end_offset"] < before["log_end_offset"]
                and message.get("high_watermark", -1) >= 0):
            self.paths.truncations_under_hw += 1

    def durable_voters(self, n: int) -> frozenset[int]:
        """The voters node ``n`` would count votes by after a restart: voters 1-3, or (``dynamic``) those of the last
        VotersRecord it has flushed (``raft_simulate.latest_voters``). A committed entry must be durable on enough of
        them that those lacking it whose logs are no more up to date than ``n``'s (:meth:`durable_position`) are no
        majority, or ``n`` could be elected without it (a voter set takes effect once appended: a leader commits by a
        set whose VotersRecord is not committed yet, and a removed voter may still count the old set, KIP-853)."""
        if not self.dynamic:
            return VOTERS
        post = self.posts[n]
        return latest_voters(post["log"][:post["flushed_end_offset"] - post["log_start_offset"]])

    def durable_position(self, n: int) -> tuple[int, int]:
        """Node ``n``'s flushed log as a vote compares it: (the epoch of its last flushed entry, its flushed end)."""
        post = self.posts[n]
        flushed = post["flushed_end_offset"]
        last = _entry(post, flushed - 1)
        return (last["epoch"] if last is not None else -1, flushed)

    def committed_voters(self) -> frozenset[int]:
        """The voters in force as far as a leader showed the log committed: voters 1-3, or (``dynamic``) those of the
        last committed VotersRecord (``raft_simulate.latest_voters``)."""
        return latest_voters([self.committed[o] for o in sorted(self.committed)]) if self.dynamic else VOTERS

    def _count_leader_change(self) -> None:
        if any(self.posts[v]["log_end_offset"] > self.committed_end for v in self.committed_voters()):
            self.paths.leader_changes_with_uncommitted += 1

    def _count_snapshot_paths(self, n: int, obj: Mapping[str, Any], step: Mapping[str, Any],
                              before: Mapping[str, Any], after: Mapping[str, Any]) -> None:
        kind = self._kind(n)
        for send in step.get("output", {}).get("response", {}).get("sends", []):
            if send["type"] == "FetchResponse" and "snapshot_id" in send:
                self.paths.snapshots[f"{kind}:fetch answered with a snapshot id"] += 1
            elif send["type"] == "FetchSnapshotResponse" and send.get("chunk", 0) > 0:
                self.paths.snapshots[f"{kind}:chunk served"] += 1
        if obj["action"] == "fetch_snapshot_response" and after["log_start_offset"] > before["log_start_offset"]:
            self.paths.snapshots[f"{kind}:snapshot loaded by {'a voter' if n in VOTERS else 'the observer'}"] += 1
        if obj["action"] == "restart" and after["log_start_offset"] > 0:
            self.paths.snapshots[f"{kind}:restart from a snapshot"] += 1

    # -------------------------------------------------------------------------------------------

    def views(self) -> dict[int, dict[str, Any]]:
        """Every node's view as a raft trace (``meta.kafka``: whether Kafka's client produced its outputs)."""
        return {n: {"format": "1.0", "component": "raft", "id": f"raft-mixed-{self.seed}-node{n}",
                    "meta": {"generator": "kraftspec.harness.raft_mixed", "seed": self.seed, "node": n,
                             "kafka": self.nodes[n].kafka},
                    "initial": {"explicit": self.explicit[n]}, "steps": self.steps[n]} for n in self.ids}


@dataclass
class RunResult:
    """One run: its seed, the Kafka-backed nodes, the verdict on each node's view, a safety break or refusal, or the
    step the harness cannot put to Kafka (``inexpressible``: the run stops there, its views are still judged)."""

    seed: int
    kafka_nodes: tuple[int, ...]
    verdicts: dict[int, Verdict]
    paths: HardPaths
    failure: Optional[str] = None
    kafka_steps: int = 0
    inexpressible: Optional[str] = None

    @property
    def disagreements(self) -> list[int]:
        return [n for n, v in self.verdicts.items() if not v.conformant]


def run(seed: int, kafka_count: int, processes: Sequence[KafkaProcess], rules: int = 150,
        faults: bool = False, snapshots: bool = False, dynamic: bool = False) -> RunResult:
    """One seeded run with ``kafka_count`` Kafka-backed nodes (drawn by the seed): ``rules`` rules (with ``faults``:
    failed requests and graceful shutdowns too; with ``snapshots``: snapshots created, cleaned and fetched; with
    ``dynamic``: a kraft.version 1 quorum whose voters change), then every node's view judged by the reference."""
    pick = random.Random(f"raft-mixed-nodes:{seed}")
    kafka_nodes = tuple(sorted(pick.sample(NODES, kafka_count)))
    quorum = MixedQuorum(seed, kafka_nodes, processes[:kafka_count], faults, snapshots, dynamic)
    failure = inexpressible = None
    try:
        for _ in range(rules):
            quorum.rule()
    except (Safety, Refused) as exc:
        failure = f"{type(exc).__name__}: {exc}"
    except HarnessError as exc:
        inexpressible = str(exc).strip().splitlines()[0]
    verdicts = {n: replay(trace_from_json(obj)) for n, obj in quorum.views().items()}
    return RunResult(seed, kafka_nodes, verdicts, quorum.paths, failure,
                     sum(len(quorum.steps[n]) for n in kafka_nodes), inexpressible)
