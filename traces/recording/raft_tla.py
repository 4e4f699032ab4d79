"""``kraftspec generate tla --component raft``: one node's view of paths through TLC's graph of ``KRaftQuorum.tla``.

TLC explores the spec under ``KRaftQuorum.cfg`` (voters 1-3, observer 4, a message bag) and dumps its state
graph; seeded random walks and a covering set become traces of ONE node each, "the implementation" (walk i
observes the first node from the i-th in turn that it changes; the covering set takes, for every node, each
transition of that node, :data:`COVERS`).
Each edge that is an input to the observed node becomes trace steps (the calls ``spec/agree_raft.py`` makes,
through ``raft.step``), recorded with the reference's outputs and matched to TLC's edge by the node's projected
state (``agree_raft.project``); each edge's last step states as ``post`` what the spec's state gives of the node.

* ``HandleX``: the message taken off the bag, as ``agree_raft`` builds it (a response without a correlation id
  answers the request outstanding to its source, ``raft_trace``); its reply is among the sends. ``Crash``:
  ``restart``; ``ClientAppend``: ``append`` of one record; ``Timeout``: a ``tick`` at the node's election (a
  Follower's fetch) deadline, which makes a voter Prospective (KIP-996's pre-vote; the pre-vote requests and
  answers are the spec's ``MaybeSendVoteRequests`` and vote messages), ends a Prospective's pre-vote as lost, or moves a
  Resigned leader to the next epoch.
* Timers: the node runs Kafka's default timeouts with ``fetch_max_wait_ms`` 0 (nothing is parked) and jitter
  0, and the clock stands still except at a ``Timeout``. A step's bootstrap draw (``raft.step``'s ``bootstrap``)
  is the one that makes the node's poll fetch from the voter whose Fetch response the path hands it next.
  The poll ``raft.step`` runs after each input, which ``agree_raft`` skips, then fires no timer (every
  deadline is later) and only sends the requests its role sends with none outstanding (BeginQuorumEpoch as
  soon as a leader is elected, one Fetch to the leader or the drawn bootstrap server): these
  are the trace's outputs, and they change no projected state. No clock and jitter make that poll silent
  (a state change empties the in-flight requests, then the poll sends), so the spec's
  ``MaybeSendVoteRequests``, ``MaybeSendFetchOrFetchSnapshot`` and ``MaybeSendBeginQuorumEpochRequests`` are the
  environment here: they stand for requests the node
  sent from a poll (or resends it makes no sooner than an answer or a request timeout).
* Which edges cannot be steps: a response the spec takes but the node has no request outstanding for
  (the spec's resends have no counterpart, ``RequestManager``), or one the node takes but the spec drops.
  If the spec leaves the node unchanged the message is withheld (as if the network lost it); otherwise the
  trace ends before that edge (``Recorder.ended`` counts them by action). A ``tick`` before a response
  lets a node that has not polled since it started or restarted send the request it answers. Under
  ``KRaftQuorum.cfg`` every response is a step: none is withheld, no trace ends early. Other nodes' edges, ``Drop`` and
  ``Duplicate`` are the environment. A ``Crash`` that changes no node is the observed node's when its restart
  changes nothing the spec sees, and another node's (withheld) otherwise. ``ClientAppend`` never occurs
  under ``KRaftQuorum.cfg`` (``MaxLogLen`` 1 is the leader's LeaderChange record).
"""

from __future__ import annotations

import functools
import random
from collections import Counter
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from typing import Any, Callable, Hashable, Iterator, Mapping, Optional

import networkx as nx

from kraftspec.reference import raft
from kraftspec.reference.errors import Errors
from kraftspec.reference.frozen import FrozenMap
from kraftspec.reference.raft_log import LogEntry
from kraftspec.reference.raft_messages import (
    BeginQuorumEpochRequest,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    VoteRequest,
    VoteResponse,
)
from kraftspec.reference.raft_state import Follower
from kraftspec.spec import agree_raft as agree
from kraftspec.spec.agree import load_model
from kraftspec.spec.state_graph import StateKey, state_graph
from kraftspec.spec.tlc_config import read_constants
from kraftspec.traces.replay import raft as raft_replay
from kraftspec.traces.format.envelope import Step, Trace
from kraftspec.traces.format.raft import explicit_state
from kraftspec.traces.recording.broker_tla import Edge, covering_paths, random_walks
from kraftspec.traces.format.values import to_json

NODE_VARIABLES = ("role", "epoch", "leader", "voted", "granted", "rejected", "fetched", "hw", "log", "flushed",
                  "endOff", "start", "snaps", "fetchingSnap")
"""The spec's per-node variables: a node's view of a state."""
CONFIG = {"fetch_max_wait_ms": agree.CONFIG.fetch_max_wait_ms}
HANDLERS = {"VoteReq": "vote_request", "VoteResp": "vote_response", "BeginEpoch": "begin_quorum_epoch_request",
            "FetchReq": "fetch_request", "FetchResp": "fetch_response", "FetchSnapReq": "fetch_snapshot_request",
            "FetchSnapResp": "fetch_snapshot_response"}
"""The trace action of each spec message type."""


def explicit(node: int, voters: tuple[int, ...]) -> dict[str, Any]:
    """The spec's ``Init`` for one node: no quorum-state file, an empty log (Unattached in epoch 0)."""
    return {"local_id": node, "voters": list(voters), "config": CONFIG}


def _at(value: Any, node: int) -> Any:
    """A TLA+ function's value at ``node`` (a function on 1..n is a tuple)."""
    return value[node - 1] if isinstance(value, tuple) else value[node]


def view(state: Mapping[str, Any], node: int) -> tuple[Any, ...]:
    """What a TLC state says of ``node``: its per-node variables."""
    return tuple(_at(state[name], node) for name in NODE_VARIABLES)


def node_view(node: raft.RaftNode) -> tuple[Any, ...]:
    """A reference node projected as ``agree_raft`` projects it, as :func:`view` gives it."""
    projected = agree.project(agree.ExploredState((node,), FrozenMap()))
    return view(projected, node.local_id)


def _bag(state: Mapping[str, Any]) -> dict[Any, int]:
    msgs = state["msgs"]
    return {} if msgs == () else dict(msgs)


def bag_change(source: Mapping[str, Any], target: Mapping[str, Any]) -> tuple[list[Any], list[Any]]:
    """The messages an edge takes off the bag and the messages it puts in."""
    before, after = _bag(source), _bag(target)
    return ([m for m, count in before.items() if after.get(m, 0) < count],
            [m for m, count in after.items() if before.get(m, 0) < count])


def message_of(m: Any) -> Any:
    """A spec message as the reference message ``agree_raft`` hands to its handler (responses: no correlation id)."""
    kind, src = m["type"], m["src"]
    if kind == "VoteReq":
        return VoteRequest(replica_id=src, replica_epoch=m["epoch"], last_offset_epoch=m["lastEpoch"],
                           last_offset=m["lastOffset"], pre_vote=m["preVote"])
    if kind == "VoteResp":
        return VoteResponse(source=src, error=Errors.NONE, partition_error=Errors.NONE, leader_epoch=m["epoch"],
                            leader_id=m["leader"], vote_granted=m["granted"], leader_endpoints=(), correlation_id=None)
    if kind == "BeginEpoch":
        return BeginQuorumEpochRequest(leader_id=src, leader_epoch=m["epoch"])
    if kind == "FetchReq":
        return FetchRequest(replica_id=src, current_leader_epoch=m["epoch"], fetch_offset=m["offset"],
                            last_fetched_epoch=m["lastEpoch"], max_wait_ms=0, high_watermark=-1)
    if kind == "FetchSnapReq":
        return FetchSnapshotRequest(replica_id=src, current_leader_epoch=m["epoch"], snapshot_id=tuple(m["snapshot"]),
                                    position=0, max_bytes=agree.CONFIG.fetch_snapshot_max_bytes)
    if kind == "FetchSnapResp":
        whole = agree.SNAPSHOT_SIZE if m["error"] == "NONE" else 0
        return FetchSnapshotResponse(source=src, partition_error=Errors[m["error"]], leader_epoch=m["epoch"],
                                     leader_id=m["leader"], snapshot_id=tuple(m["snapshot"]), size=whole, position=0,
                                     chunk=whole, correlation_id=None)
    return FetchResponse(source=src, error=Errors.NONE, partition_error=Errors[m["error"]], leader_epoch=m["epoch"],
                         leader_id=m["leader"], leader_endpoints=(), high_watermark=m["hw"], log_start_offset=0,
                         diverging_epoch=tuple(m["diverging"]), snapshot_id=tuple(m["snapshot"]),
                         records=tuple(LogEntry(epoch=e) for e in m["entries"]), correlation_id=None)


def answers(send: Mapping[str, Any], reply: Any) -> bool:
    """Whether a message the node sent (trace JSON) is the spec's reply ``reply`` in the reference's vocabulary."""
    same = send["destination"] == reply["dst"] and send["leader_epoch"] == reply["epoch"] \
        and send["leader_id"] == reply["leader"]
    if reply["type"] == "VoteResp":
        return same and send["type"] == "VoteResponse" and send["vote_granted"] == reply["granted"]
    if reply["type"] == "FetchSnapResp":
        return (same and send["type"] == "FetchSnapshotResponse" and send["partition_error"] == reply["error"]
                and tuple(send["snapshot_id"]) == tuple(reply["snapshot"]))
    return (same and send["type"] == "FetchResponse" and send["partition_error"] == reply["error"]
            and send["high_watermark"] == reply["hw"] and tuple(send["diverging_epoch"]) == tuple(reply["diverging"])
            and tuple(send.get("snapshot_id", agree.NO_SNAPSHOT)) == tuple(reply["snapshot"])
            and tuple(e["epoch"] for e in send["records"]) == tuple(reply["entries"]))


def spec_post(state: Mapping[str, Any], node: int, snapshots: bool = False) -> dict[str, Any]:
    """What the spec's state gives of ``node`` as trace post-state fields (``raft_replay.observe``'s names). With
    ``snapshots`` (a config whose ``MaxSnapshots`` > 0) also the log start and latest snapshot id; the epoch cache only
    while the node has no snapshot (it then depends on how the log came to start where it does, which the spec
    forgets)."""
    epoch, leader, voted, log = (_at(state[name], node) for name in ("epoch", "leader", "voted", "log"))
    start, snaps = _at(state["start"], node), _at(state["snaps"], node)
    latest = max(snaps) if snaps else None
    voted_key = None if voted == agree.NO_NODE else {"id": voted, "directory_id": None}
    post = {
        "role": _at(state["role"], node), "epoch": epoch, "leader_id": leader, "voted_key": voted_key,
        "high_watermark": _at(state["hw"], node), "log_end_offset": start + len(log),
        "flushed_end_offset": _at(state["flushed"], node),
        "last_fetched_epoch": log[-1] if log else latest[1] if latest else 0,
        "quorum_state_file": {"epoch": epoch, "leader_id": leader, "voted_key": voted_key},
    }
    if not snaps:
        post["epoch_cache"] = [[e, start + i] for i, e in enumerate(log) if i == 0 or log[i - 1] != e]
    if snapshots:
        post.update(log_start_offset=start, latest_snapshot_id=None if latest is None else list(latest))
    return post


class _Keyed(StateKey):
    """A state key that computes its repr (what ``tla_traces`` orders out-edges by) once: this graph's states
    are compared by repr hundreds of thousands of times."""

    __slots__ = ("_text",)

    def __repr__(self) -> str:
        try:
            return self._text  # type: ignore[no-any-return]
        except AttributeError:
            self._text = StateKey.__repr__(self)
            return self._text


def keyed(graph: nx.MultiDiGraph) -> nx.MultiDiGraph:
    """The graph with :class:`_Keyed` states (equal and hashing as before, so edges and lookups are unchanged)."""
    return nx.relabel_nodes(graph, {key: _Keyed(key) for key in graph}, copy=True)


@dataclass(frozen=True)
class Point:
    """The observed node as the trace has it so far, and the trace's clock."""

    node: raft.RaftNode
    clock: int


def _timeout_steps(point: Point) -> list[Step]:
    """The timer of the observed node: a ``tick`` at its election deadline (a Follower's: its fetch deadline)."""
    state = point.node.state
    deadline = state.fetch_deadline if isinstance(state, Follower) else state.election_deadline
    return [Step("tick", {"now": max(point.clock, deadline)})]


def _drawn(step: Step, draw: int) -> Step:
    """``step`` with the bootstrap draw ``draw`` (left out when 0; a restart does not poll, so takes none)."""
    return step if not draw or step.action == "restart" else Step(step.action, {**step.input, "bootstrap": draw})


REFUSALS: tuple[type[Exception], ...] = (RuntimeError, ValueError)
"""What ``raft_replay.run`` raises on an input the reference refuses (a fatal condition, an illegal transition)."""


def replayed(node: raft.RaftNode, clock: int, steps: list[Step], refusals: tuple[type[Exception], ...] = REFUSALS,
             taken: Callable[[Step, Any], bool] = lambda step, response: True,
             ) -> Optional[tuple[raft.RaftNode, int, list[Step]]]:
    """``steps`` replayed from ``node`` at ``clock``: the node and the clock after them, and the steps with the
    reference's responses; None if the reference refuses one, raising one of ``refusals`` or answering so that
    ``taken(step, response)`` is false (the step-to-trace loop of the raft recorders)."""
    recorded: list[Step] = []
    for step in steps:
        try:
            node, clock, response, _ = raft_replay.run(node, clock, step)
        except refusals:
            return None
        if not taken(step, response):
            return None
        recorded.append(Step(step.action, step.input, to_json(response)))
    return node, clock, recorded


def posted(made: list[Step], node: raft.RaftNode, clock: int, post: dict[str, Any], after: str) -> list[Step]:
    """``made``, the steps of one edge, with the last stating ``post`` (what the spec's state after the edge gives of
    the node) once it is checked to be the reference's (``node`` at ``clock``); ``after`` names the edge."""
    if not raft_replay.post_matches(node, clock, post):
        raise ValueError(f"the spec's post-state is not the reference's after {after}: {post} vs "
                         f"{raft_replay.observe(node, clock, post)}")
    return made[:-1] + [replace(made[-1], post=post)]


def _run(point: Point, steps: list[Step]) -> Optional[tuple[Point, list[Step]]]:
    """The steps replayed from ``point`` with the reference's outputs; None if the reference refuses one."""
    made = replayed(point.node, point.clock, steps)
    return None if made is None else (Point(made[0], made[1]), made[2])


class Recorder:
    """Turns paths of TLC's graph into traces of one observed node each."""

    def __init__(self, graph: nx.MultiDiGraph, constants: Mapping[str, Any]) -> None:
        self.graph = graph
        self.views: dict[StateKey, tuple[tuple[Any, ...], ...]] = {}
        self.voters = tuple(sorted(constants["Voters"]))
        self.snapshots = int(constants["MaxSnapshots"]) > 0
        self.nodes = tuple(sorted(frozenset(constants["Voters"]) | frozenset(constants["Observers"])))
        (self.initial,) = [key for key, initial in graph.nodes(data="initial") if initial]
        self.ended: Counter[str] = Counter()
        self.withheld: Counter[str] = Counter()

    def view(self, key: StateKey, node: int) -> tuple[Any, ...]:
        """:func:`view` of a state of the graph (computed once per state)."""
        views = self.views.get(key)
        if views is None:
            state = self.graph.nodes[key]["state"]
            views = self.views[key] = tuple(view(state, n) for n in self.nodes)
        return views[self.nodes.index(node)]

    def changes(self, edge: Edge, node: int) -> bool:
        """Whether ``edge`` changes ``node``."""
        return self.view(edge[0], node) != self.view(edge[1], node)

    def _candidates(self, point: Point, edge: Edge, node: int) -> Optional[list[list[Step]]]:
        """The step sequences that may make ``edge`` for ``node`` (first match wins); None: not an input to it."""
        label, others = edge[2], [n for n in self.nodes if n != node]
        if label.startswith("Handle") and label != "HandleCreateSnapshot":  # a message taken off the bag
            taken, _ = bag_change(self.graph.nodes[edge[0]]["state"], self.graph.nodes[edge[1]]["state"])
            (m,) = taken
            if m["dst"] != node:
                return None
            step = Step(HANDLERS[m["type"]], {"message": message_of(m)})
            return [[step], [Step("tick", {}), step]]
        if label not in ("Timeout", "ClientAppend", "Crash", "HandleCreateSnapshot", "DeleteBeforeSnapshot"):
            return None  # a send, Drop or Duplicate: the environment
        if any(self.changes(edge, n) for n in others):
            return None
        if label in ("HandleCreateSnapshot", "DeleteBeforeSnapshot"):
            return [[self._snapshot_step(edge, node)]] if self.changes(edge, node) else None
        if label == "Timeout":
            return [_timeout_steps(point)] if self.changes(edge, node) else None
        if label == "ClientAppend":
            return [[Step("append", {"records": (agree.DATA,)})]] if self.changes(edge, node) else None
        return [[Step("restart", {})]]

    def _snapshot_step(self, edge: Edge, node: int) -> Step:
        """``create_snapshot`` of the snapshot the edge adds (``SNAPSHOT_SIZE`` bytes), or ``delete_before_snapshot``
        of the snapshot the edge's new log start is at."""
        before, after = (_at(self.graph.nodes[k]["state"]["snaps"], node) for k in edge[:2])
        if edge[2] == "HandleCreateSnapshot":
            (end, epoch), = set(after) - set(before)
            return Step("create_snapshot", {"end_offset": end, "epoch": epoch, "size": agree.SNAPSHOT_SIZE})
        start = _at(self.graph.nodes[edge[1]]["state"]["start"], node)
        (end, epoch), = (s for s in after if s[0] == start)
        return Step("delete_before_snapshot", {"end_offset": end, "epoch": epoch})

    def _reply_sent(self, edge: Edge, steps: list[Step]) -> bool:
        """The spec's reply to a request (if the edge makes one) is among the last step's sends."""
        source, target = (self.graph.nodes[k]["state"] for k in edge[:2])
        _, added = bag_change(source, target)
        sends = steps[-1].response.get("sends", []) if steps and steps[-1].response else []
        return all(any(answers(s, reply) for s in sends) for reply in added)

    def _draw(self, path: list[Edge], position: int, node: int) -> int:
        """The bootstrap draw that makes the node's next poll fetch from where the path answers it: the index among
        the voters of the source of the next Fetch response the path hands to ``node`` after ``position`` (else 0).
        The steps made for an edge poll with the draw for that edge, the last one with the draw for the next."""
        for edge in path[position + 1:]:
            if edge[2] == "HandleFetchResponse":
                (m,), _ = bag_change(self.graph.nodes[edge[0]]["state"], self.graph.nodes[edge[1]]["state"])
                if m["dst"] == node:
                    return self.voters.index(m["src"])
        return 0

    def trace(self, path: list[Edge], node: int, trace_id: str, meta: dict[str, Any]) -> Trace:
        """The trace of ``node`` along a path from the initial state (ended before an edge it cannot make)."""
        obj = explicit(node, self.voters)
        point, steps = Point(explicit_state(obj), 0), []
        for position, edge in enumerate(path):
            candidates = self._candidates(point, edge, node)
            if candidates is None:
                continue
            here, then = self._draw(path, position - 1, node), self._draw(path, position, node)
            candidates = [[_drawn(step, here) for step in candidate[:-1]] + [_drawn(candidate[-1], then)]
                          for candidate in candidates]
            wanted = self.view(edge[1], node)
            match = next((found for found in (_run(point, c) for c in candidates)
                          if found is not None and node_view(found[0].node) == wanted
                          and self._reply_sent(edge, found[1])), None)
            if match is None:
                if not self.changes(edge, node):
                    self.withheld[edge[2]] += 1
                    continue
                self.ended[edge[2]] += 1
                break
            point, made = match
            steps.extend(posted(made, point.node, point.clock,
                                spec_post(self.graph.nodes[edge[1]]["state"], node, self.snapshots),
                                f"{edge[2]} (node {node})"))
        return Trace(component="raft", steps=tuple(steps), explicit=obj, id=trace_id, meta={**meta, "node": node})


def node_edge(recorder: Recorder, node: int, edge: Edge) -> Hashable:
    """An edge as ``node`` sees it: its state before and after, the action and the message it takes."""
    source, target, label = edge
    taken, _ = bag_change(recorder.graph.nodes[source]["state"], recorder.graph.nodes[target]["state"])
    return recorder.view(source, node), label, recorder.view(target, node), tuple(taken)


COVERS: dict[str, Callable[[Recorder, int, Edge], Hashable]] = {
    "edges": lambda recorder, node, edge: edge,
    "kinds": node_edge,
}
"""What the covering set takes at least once for each node, among the edges that change it: every edge of TLC's
graph, or every transition as the node sees it (``node_edge``: 291 under ``KRaftQuorum.cfg``)."""


def cover_key(recorder: Recorder, node: int, cover: str, edge: Edge) -> Hashable:
    """The ``cover`` key of an edge that changes ``node``; None (counted as covered) for the others."""
    return COVERS[cover](recorder, node, edge) if recorder.changes(edge, node) else None


def paths(recorder: Recorder, seed: int, walks: int, cover: str) -> Iterator[tuple[str, int, int, list[Edge]]]:
    """(``walk`` or ``path``, index, observed node, path): ``walks`` seeded random walks, then for each node the
    covering paths of the edges that change it (the walks count as covering what they take). Walk i observes
    the first node from ``NODES[i % 4]`` on (in turn) that it changes; a walk that changes none is left out."""
    graph, nodes = recorder.graph, recorder.nodes
    keys = {n: functools.partial(cover_key, recorder, n, cover) for n in nodes}
    covered: dict[int, set[Hashable]] = {n: {None} for n in nodes}
    for index, path in enumerate(random_walks(graph, recorder.initial, random.Random(seed), walks)):
        turn = nodes[index % len(nodes):] + nodes[:index % len(nodes)]
        node = next((n for n in turn if any(recorder.changes(edge, n) for edge in path)), None)
        if node is not None:
            covered[node].update(map(keys[node], path))
            yield "walk", index, node, path
    index = 0
    for node in nodes:
        for path in covering_paths(graph, recorder.initial, covered[node], keys[node]):
            yield "path", index, node, path
            index += 1


def generate_tla(seed: int, walks: int, cover: str = "kinds", *, timeout_s: float = 600.0,
                 graph: Optional[nx.MultiDiGraph] = None, config: str = "") -> Iterator[Trace]:
    """The traces of :func:`paths` through TLC's raft graph (``cover``: ``kinds`` or ``edges``, :data:`COVERS`)
    under ``KRaftQuorum.cfg``, or under ``KRaftQuorum.<config>.cfg`` (``snapshots``: ids ``tla-raft-snapshots-…``,
    ``meta.config``); ``graph``: TLC's graph if already loaded (:func:`state_graph` runs TLC otherwise)."""
    if cover not in COVERS:
        raise ValueError(f"unknown cover {cover!r} (known: {', '.join(COVERS)})")
    model = load_model("raft")
    if config not in model.extra_configs + ("",):
        raise ValueError(f"unknown raft config {config!r} (known: {', '.join(model.extra_configs)})")
    model = replace(model, config=config)
    constants = read_constants(model.config_path)
    if graph is None:
        graph, _ = state_graph(model.module_path, model.config_path, timeout_s=timeout_s)
    made = Recorder(keyed(graph), constants)
    meta = {"generator": "kraftspec generate tla", "spec": model.spec_module, "seed": seed, "cover": cover}
    meta, prefix = ({**meta, "config": model.config_path.name}, f"tla-raft-{config}") if config else (meta, "tla-raft")
    for kind, index, node, path in paths(made, seed, walks, cover):
        label = "walk" if kind == "walk" else "cover"
        yield made.trace(path, node, f"{prefix}-{label}-{seed}-{index}", {**meta, kind: index})


def record(trace: Trace, within: AbstractContextManager[Any]) -> Trace:
    """``trace``'s inputs recorded again by the reference inside ``within`` (e.g. a mutant's ``applied()``).

    Each step states what the original states (sends, post-state fields), as this reference produces them;
    the recording ends before an input it refuses. The initial node is started outside ``within``, as
    :func:`kraftspec.traces.replay.verdict.replay` starts it.
    """
    node, clock, steps = raft_replay.initial(trace), 0, []
    with within:
        for step in trace.steps:
            try:
                node, clock, response, _ = raft_replay.run(node, clock, step)
            except (RuntimeError, ValueError):
                break
            post = None if step.post is None else raft_replay.observe(node, clock, step.post)
            output = None if step.response is None else to_json(response)
            steps.append(Step(step.action, step.input, output, None, post))
    return replace(trace, steps=tuple(steps))
