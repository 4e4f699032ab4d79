"""``kraftspec generate tla --component partition``: traces recorded from TLC's state graph of ``PartitionLeadership.tla``.

As ``tla_traces`` does for the broker: TLC explores the spec under ``PartitionLeadership.cfg`` and
dumps its state graph; seeded random walks and a covering set are turned into traces. Each edge
becomes the reference calls that produce it (the calls ``spec/agree_partition.py``'s successors make:
``HandleBrokerFenced`` is ``handle_broker_fenced``, ``Learn`` one of ``become_leader`` / ``update_leader_metadata`` /
``update_broker_metadata`` / ``stop_leading``, ``AlterPartition`` is ``alter_partition`` followed, when
the answer reaches the leader, by ``handle_alter_partition_result``, ...), recorded with the
reference's responses and records, and matched to TLC's edge by the projected target state. The
last step of an edge states as ``post`` the trace-format fields the spec's state after the edge
gives and that the edge changed (rules §2.3-§2.12).

What the spec keeps beside the implementation's state (each broker's log, what it learned, the
requests on the wire, the history of committed records) is the recorder's environment: it chooses
the inputs (fetch offsets, proposals delivered) as the spec's actions do.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Iterator, Mapping, Optional

import networkx as nx

from kraftspec.reference.alter_partition import AlterPartitionRequest, AlterPartitionTopic
from kraftspec.reference.errors import Errors
from kraftspec.reference.partition_leader import NO_FETCH
from kraftspec.reference.records import NO_LEADER
from kraftspec.spec import agree_partition as agree
from kraftspec.spec.agree import load_model
from kraftspec.spec.state_graph import StateKey, state_graph, state_key
from kraftspec.spec.tlc_config import read_constants
from kraftspec.traces.replay import partition as partition_replay
from kraftspec.traces.format.envelope import Step, Trace
from kraftspec.traces.format.partition import PartitionControl, cached_explicit_state
from kraftspec.traces.recording.broker_tla import COVERS, Edge, walked_traces
from kraftspec.traces.format.values import to_json

TOPIC, PARTITION = agree.TOPIC_ID, 0
_LEADER = {"topic_id": TOPIC, "partition_id": PARTITION}

EXPLICIT: dict[str, Any] = {
    "metadata_version": agree.EVENTS["metadata_version"], "elr_enabled": agree.EVENTS["elr_enabled"],
    "brokers": [{"broker_id": b, "epoch": agree.broker_epoch(b, 0), "incarnation_id": agree.incarnation_id(b, 0),
                 "fenced": False}
                for b in agree.REPLICAS],
    "topics": [{"name": t.name, "topic_id": t.topic_id} for t in agree.TOPICS.values()],
    "partitions": [{"partition_id": PARTITION, "topic_id": TOPIC, "replicas": list(agree.REPLICAS),
                    "isr": list(agree.REPLICAS), "leader": 1}],
    "leaders": [{"broker_id": 1, **_LEADER, "replica_lag_time_max_ms": agree.LAG}],
}
"""The spec's ``Init`` as an explicit initial state: brokers 1-3 unfenced, broker 1 leading at LEO 0."""


@dataclass(frozen=True)
class Environment:
    """The spec's variables beside the implementation's state (``agree_partition.ExploredState``'s others)."""

    net: frozenset[agree.InFlight]
    logs: tuple[tuple[int, ...], ...]
    known: tuple[tuple[int, int], ...]
    appends: int
    committed: frozenset[tuple[int, int]]


Point = tuple[PartitionControl, Environment]
Move = tuple[str, StateKey, Point, tuple[Step, ...]]  # spec action, projected target, the point after, the steps


def explored(point: Point) -> agree.ExploredState:
    """The point as the agreement model's state (the leader states of the spec's partition by broker)."""
    control, env = point
    return agree.ExploredState(
        brokers=control.brokers, partitions=control.partitions, net=env.net, logs=env.logs, known=env.known,
        leaders=tuple(control.leaders.get((b, TOPIC, PARTITION)) for b in agree.REPLICAS),
        appends=env.appends, committed=env.committed)


def _run(point: Point, inputs: list[tuple[str, dict[str, Any]]], **env: Any) -> tuple[Point, tuple[Step, ...],
                                                                                      list[Any]]:
    """Run ``inputs`` through the replay; the point after (committed history updated), the recorded steps, the responses."""
    control, steps, responses = point[0], [], []
    for action, args in inputs:
        step = Step(action, args)
        control, _, response, written = partition_replay.run(control, 0, step)
        responses.append(response)
        steps.append(Step(action, args, None if response is None else to_json(response), written))
    after = (control, replace(point[1], **env))
    committed = agree.with_committed(explored(after)).committed
    return (control, replace(after[1], committed=committed)), tuple(steps), responses


def _set(values: tuple[Any, ...], b: int, value: Any) -> tuple[Any, ...]:
    return values[:b - 1] + (value,) + values[b:]


def moves(point: Point, constants: Mapping[str, Any]) -> Iterator[tuple[str, Point, tuple[Step, ...]]]:
    """Every action of the spec's ``Next`` with every parameter choice, as trace steps.

    The calls and the order of ``agree_partition.successors``; the environment moves as the spec says.
    """
    control, env = point
    partition = control.partitions[(TOPIC, PARTITION)]
    if partition.partition_epoch >= int(constants["MaxEpoch"]):
        return
    incarnations = {b: agree.incarnation(r.epoch) for b, r in control.brokers.items()}
    state = explored(point)
    for b in agree.REPLICAS:
        event = "handle_broker_unfenced" if control.brokers[b].fenced else "handle_broker_fenced"
        after, steps, _ = _run(point, [(event, {"broker_id": b})])
        yield ("HandleBrokerUnfenced" if control.brokers[b].fenced else "HandleBrokerFenced"), after, steps
        if sum(incarnations.values()) < int(constants["MaxRestarts"]):
            k = incarnations[b] + 1
            shutdown = ("handle_broker_shutdown", {"broker_id": b, "epoch": agree.broker_epoch(b, k),
                                                   "incarnation_id": agree.incarnation_id(b, k)})
            for n in agree.kept_lengths(state, b):
                after, steps, _ = _run(point, [shutdown], logs=_set(env.logs, b, env.logs[b - 1][:n]),
                                       known=_set(env.known, b, (NO_LEADER, -1)))
                yield "HandleBrokerShutdown", after, steps
    for b in agree.REPLICAS:
        after, steps, _ = _run(point, [_learn(control, b, len(env.logs[b - 1]))],
                               known=_set(env.known, b, (partition.leader, partition.leader_epoch)))
        yield "Learn", after, steps
        leader = control.leaders.get((b, TOPIC, PARTITION))
        key = {"broker_id": b, **_LEADER}
        if leader is not None and env.appends < int(constants["MaxAppends"]):
            after, steps, _ = _run(point, [("append", {**key, "count": 1})], appends=env.appends + 1,
                                   logs=_set(env.logs, b, env.logs[b - 1] + (leader.leader_epoch,)))
            yield "AppendRecords", after, steps
        if leader is not None:
            after, steps, (response,) = _run(point, [("maybe_shrink_isr", key)])
            if response.proposal is not None:
                net = env.net | {agree.InFlight(b, control.brokers[b].epoch, response.proposal)}
                yield "MaybeShrinkIsr", (after[0], replace(after[1], net=net)), steps
        source, epoch = env.known[b - 1]
        served = control.leaders.get((source, TOPIC, PARTITION)) if source not in (NO_LEADER, b) else None
        if served is not None and served.leader_epoch == epoch:
            fetch = {"broker_id": source, **_LEADER, "follower": b,
                     "fetch_offset": agree.common_prefix(env.logs[b - 1], env.logs[source - 1]),
                     "broker_epoch": control.brokers[b].epoch}
            after, steps, (response,) = _run(point, [("follower_fetch", fetch)],
                                             logs=_set(env.logs, b, env.logs[source - 1]))
            if response.proposal is not None:
                net = env.net | {agree.InFlight(source, control.brokers[source].epoch, response.proposal)}
                after = (after[0], replace(after[1], net=net))
            yield "FollowerFetch", after, steps
    for message in sorted(env.net, key=repr):
        after, steps = _deliver(point, message)
        yield "AlterPartition", after, steps


def _learn(control: PartitionControl, b: int, log_end: int) -> tuple[str, dict[str, Any]]:
    """Broker ``b`` applies the controller's latest registrations (``agree_partition``'s ``Learn``: its choice of call)."""
    partition = control.partitions[(TOPIC, PARTITION)]
    current = control.leaders.get((b, TOPIC, PARTITION))
    key = {"broker_id": b, **_LEADER}
    if partition.leader != b:
        return "stop_leading", key
    if current is None or current.leader_epoch != partition.leader_epoch:
        return "become_leader", {**key, "log_end_offset": log_end, "high_watermark": 0,
                                 "min_insync_replicas": 1, "replica_lag_time_max_ms": agree.LAG}
    if current.partition_epoch != partition.partition_epoch:
        return "update_leader_metadata", key
    return "update_broker_metadata", key


def _deliver(point: Point, message: agree.InFlight) -> tuple[Point, tuple[Step, ...]]:
    """The controller processes the request; the answer reaches the sender's incarnation (its AlterPartitionManager,
    which held the request; the leader state, if the broker still leads, handles it)."""
    control, env = point
    request = AlterPartitionRequest(broker_id=message.sender, broker_epoch=message.sender_epoch,
                                    topics=(AlterPartitionTopic(topic_id=TOPIC, partitions=(message.data,)),))
    after, steps, (response,) = _run(point, [("alter_partition", {"request": request})], net=env.net - {message})
    if control.brokers[message.sender].epoch != message.sender_epoch or response.error_code != Errors.NONE:
        return after, steps
    result = {"broker_id": message.sender, **_LEADER, "result": response.topics[0].partitions[0]}
    answered, more, (resend,) = _run(after, [("handle_alter_partition_result", result)])
    if resend.resend is not None:
        resent = agree.InFlight(message.sender, message.sender_epoch, resend.resend)
        answered = (answered[0], replace(answered[1], net=answered[1].net | {resent}))
    return answered, steps + more


def _ordered(spec_set: frozenset[int], reference: tuple[int, ...]) -> list[int]:
    """A set of the spec's state in the reference's order (the spec keeps ISRs as sets; the two must agree)."""
    if frozenset(reference) != spec_set:
        raise ValueError(f"the spec's {sorted(spec_set)} is not the reference's {list(reference)}")
    return list(reference)


def _fetch_epoch(replica: int, incarnation: int) -> int:
    return NO_FETCH if incarnation == NO_FETCH else agree.broker_epoch(replica, incarnation)


def spec_post(state: Mapping[str, Any], control: PartitionControl) -> dict[str, Any]:
    """A TLC state of ``PartitionLeadership.tla`` as trace post-state fields (``partition_replay.observe``'s names).

    Broker ``b``'s ``k``-th incarnation is epoch ``100 * (k + 1) + b`` (``agree_partition``); the fields the
    spec fixes (one partition on replicas 1-3, no reassignment, no ELR, RECOVERED) are its constants. ISRs
    are sets in the spec: the controller's is listed in the order of ``control``, the reference's state after the
    edge; a leader's ISR and pending change are sets in Kafka too, listed ascending (``partition_replay.observe``).
    """
    partition = control.partitions[(TOPIC, PARTITION)]
    leaders: dict[str, Any] = {}
    for b in agree.REPLICAS:
        s = state["ls"][b - 1]
        if s["epoch"] < 0:
            continue
        reference = control.leaders[(b, TOPIC, PARTITION)]
        pending = s["pending"]
        leaders[f"{b}:{TOPIC}:{PARTITION}"] = {
            "leader_epoch": s["epoch"], "partition_epoch": s["pe"], "isr": sorted(_ordered(s["isr"], reference.isr)),
            "high_watermark": s["hw"], "log_end_offset": len(state["log"][b - 1]),
            "leader_epoch_start_offset": s["start"],
            "followers": {str(r): {"log_end_offset": s["leo"][r - 1], "broker_epoch": _fetch_epoch(r, s["fep"][r - 1])}
                          for r in agree.REPLICAS if r != b},
            "eligible_brokers": {str(r): agree.broker_epoch(r,
                                                            s["elig"][r - 1]) for r in agree.REPLICAS if s["elig"][r - 1] >= 0},
            "pending": None if not pending["max"] else {
                "proposed_isr": sorted(_ordered(pending["isr"],
                                                reference.pending.proposed_isr if reference.pending else ())),
                "maximal_isr": sorted(_ordered(pending["max"],
                                               reference.pending.maximal_isr if reference.pending else ()))},
        }
    return {
        "brokers": {str(b): {"epoch": agree.broker_epoch(b, k), "incarnation_id": agree.incarnation_id(b, k),
                             "fenced": b in state["fenced"], "in_controlled_shutdown": False}
                    for b, k in zip(agree.REPLICAS, state["brokerEpoch"])},
        "partitions": {f"{TOPIC}:{PARTITION}": {
            "leader": state["leader"], "isr": _ordered(state["isr"], partition.isr),
            "leader_epoch": state["leaderEpoch"],
            "partition_epoch": state["partitionEpoch"], "replicas": list(agree.REPLICAS), "removing_replicas": [],
            "adding_replicas": [], "elr": [], "last_known_elr": [], "leader_recovery_state": 0}},
        "leaders": leaders,
    }


class Recorder:
    """Turns paths of TLC's graph into traces through the reference calls that produce each edge."""

    def __init__(self, graph: nx.MultiDiGraph, constants: Mapping[str, Any]) -> None:
        self.graph = graph
        self.constants = constants
        control = cached_explicit_state(EXPLICIT)
        (spec_initial,) = agree.initial_states(constants)
        env = Environment(spec_initial.net, spec_initial.logs, spec_initial.known, spec_initial.appends,
                          spec_initial.committed)
        self.initial_point: Point = (control, env)
        self.initial = state_key(agree.project(explored(self.initial_point)))
        if self.initial not in graph or not graph.nodes[self.initial].get("initial"):
            raise ValueError("the reference's initial state is not TLC's: run `kraftspec agree partition`")
        self.moves: dict[Point, list[Move]] = {}

    def _moves(self, point: Point) -> list[Move]:
        found = self.moves.get(point)
        if found is None:
            if len(self.moves) >= 100_000:
                self.moves.clear()
            found = self.moves[point] = [(label, state_key(agree.project(explored(after))), after, steps)
                                         for label, after, steps in moves(point, self.constants)]
        return found

    def trace(self, path: list[Edge], trace_id: str, meta: dict[str, Any]) -> Trace:
        """The trace of a path from the initial state: each edge's reference calls, outputs and changed spec fields."""
        point, steps = self.initial_point, []
        for source, target, label in path:
            match = next(((after, made) for spec_action, key, after, made in self._moves(point)
                          if spec_action == label and key == target), None)
            if match is None:
                raise ValueError(f"no reference call produces the spec's {label} edge: run `kraftspec agree partition`")
            after, made = match
            before = spec_post(self.graph.nodes[source]["state"], point[0])
            post = spec_post(self.graph.nodes[target]["state"], after[0])
            changed = {name: value for name, value in post.items() if before[name] != value}
            steps.extend(made[:-1])
            steps.append(replace(made[-1], post=changed or None))
            point = after
        return Trace(component="partition", steps=tuple(steps), explicit=EXPLICIT, id=trace_id, meta=meta)


def generate_tla(seed: int, walks: int, cover: str = "kinds", *, timeout_s: float = 900.0,
                 graph: Optional[nx.MultiDiGraph] = None) -> Iterator[Trace]:
    """``walks`` seeded random walks of TLC's partition graph (1 to ``MAX_WALK`` edges), then the covering set.

    ``cover`` is ``edges`` or ``kinds`` (``tla_traces.covering_paths``); the walks count as covering
    what they take. ``graph``: TLC's state graph of ``PartitionLeadership.cfg`` if already loaded.
    """
    if cover not in COVERS:
        raise ValueError(f"unknown cover {cover!r} (known: {', '.join(COVERS)})")
    model = load_model("partition")
    constants = read_constants(model.config_path)
    if graph is None:
        graph, _ = state_graph(model.module_path, model.config_path, timeout_s=timeout_s)
    recorder = Recorder(graph, constants)
    yield from walked_traces(graph, recorder.initial, seed, walks, cover, model.spec_module, "tla-partition-",
                             recorder.trace)
