"""``kraftspec generate tla --component controller``: traces recorded from TLC's state graph of ``ControllerRegistration.tla``.

As ``tla_traces`` does for the broker: TLC explores the spec under ``ControllerRegistration.cfg`` and dumps
its state graph; seeded random walks and a covering set are turned into traces. Each edge becomes the
trace input that produces it (the calls ``spec/agree_controller.py``'s successors make: ``Start`` is
``start``, ``RegisterController`` ``register_controller`` on the active controller, ``RegisterControllerFails``
``register_controller`` on an inactive one (NOT_CONTROLLER), ``OnResponse`` ``on_response`` with the
response's error and jitter draw 0.5, ``OnMetadataUpdate`` ``on_metadata_update``, ``OnDeadline``
``on_deadline`` at the deadline, ``MaybeSend`` ``maybe_send``, ``Restart`` ``restart`` with the next
incarnation), recorded with the reference's outputs and matched to TLC's edge by the projected target.
Each step states as ``post`` every trace field the spec's state after the edge gives (a manager's
``registered`` is checked after every step, not only when it changes; rules §4.1). The
requests and responses in flight and the unpublished changes are the recorder's environment, which
chooses the inputs as the spec's actions do.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Iterator, Mapping, Optional

import networkx as nx

from kraftspec.reference.controller_registration import MINIMUM_KRAFT_MV, ControllerRegistration
from kraftspec.reference.metadata_version import LATEST_PRODUCTION
from kraftspec.spec import agree_controller as agree
from kraftspec.spec.agree import load_model
from kraftspec.spec.state_graph import state_graph, state_key
from kraftspec.spec.tlc_config import read_constants
from kraftspec.traces.replay import controller as controller_replay
from kraftspec.traces.format.controller import ControllerControl, explicit_state
from kraftspec.traces.format.envelope import Step, Trace
from kraftspec.traces.recording.broker_tla import COVERS, Edge, walked_traces
from kraftspec.traces.format.values import to_json

JITTER = 0.5  # the backoff draw agree_controller uses
EXPLICIT: dict[str, Any] = {
    "metadata_version": LATEST_PRODUCTION,
    "manager": {"node_id": agree.NODE_ID, "incarnation_id": agree.incarnation(1),
                "listeners": to_json(agree.LISTENERS)},
}
"""The spec's ``Init`` as an explicit initial state: incarnation 1, not started, no registration in the log."""


@dataclass(frozen=True)
class Point:
    """The trace state, its clock and the spec's other variables: ``env`` is the agreement model's state,
    whose manager and log are the trace state's (:meth:`explored`)."""

    control: ControllerControl
    clock: int
    env: agree.ExploredState

    def explored(self) -> agree.ExploredState:
        """The point as the agreement model's state."""
        return replace(self.env, manager=self.control.manager, log=self.control.image.controllers)


def _step(point: Point, action: str, args: dict[str, Any], answered: Optional[tuple[int, str]] = None,
          **env: Any) -> tuple[Point, Step]:
    """Run one input through the replay: its requests join the network with the next ids; ``answered``: the
    request (id, incarnation) whose response, with the reference's error, joins the responses in flight."""
    step = Step(action, args)
    control, clock, response, written = controller_replay.run(point.control, point.clock, step)
    base = replace(point.env, **env)
    if answered is not None:
        base = replace(base, resp=base.resp | {(*answered, response.error)})
    requests = response.sends if isinstance(response, controller_replay.Sends) else ()
    after = Point(control, clock, agree.with_manager(base, control.manager, requests))
    return after, Step(action, args, None if response is None else to_json(response), written)


def moves(point: Point, constants: Mapping[str, Any]) -> Iterator[tuple[str, Point, Step]]:
    """Every action of the spec's ``Next`` with every parameter choice, as trace steps
    (in ``agree_controller.successors``' order)."""
    manager, env = point.control.manager, point.env
    may_send = env.sent < int(constants["MaxSends"])
    if may_send and not manager.channel_started:
        yield ("Start", *_step(point, "start", {}))
    for request_id, inc in sorted(env.net):
        request, delivered = {"request": agree.request_of(inc)}, env.net - {(request_id, inc)}
        yield ("RegisterController", *_step(point, "register_controller", request, (request_id, inc), net=delivered,
                                            publish_reg=True))
        yield ("RegisterController", *_step(point, "register_controller", request, publish_reg=True))  # a duplicate
        yield ("RegisterControllerFails", *_step(point, "register_controller", {**request, "active": False},
                                                 (request_id, inc), net=delivered))
    for message in sorted(env.resp):
        if message[1] == manager.incarnation_id:
            yield ("OnResponse", *_step(point, "on_response", {"error": message[2], "jitter": JITTER},
                                        resp=env.resp - {message}))
    if may_send:
        update = {"registration_changed": env.publish_reg,
                  **({"metadata_version": LATEST_PRODUCTION} if env.publish_mv else {})}
        yield ("OnMetadataUpdate", *_step(point, "on_metadata_update", update, publish_reg=False, publish_mv=False))
        if manager.resend_deadline_ms is not None:
            yield ("OnDeadline", *_step(point, "on_deadline", {"now": max(point.clock, manager.resend_deadline_ms)}))
        yield ("MaybeSend", *_step(point, "maybe_send", {}))
    if env.restarts < int(constants["MaxRestarts"]):
        number = agree.incarnation_number(manager.incarnation_id) + 1
        yield ("Restart", *_step(point, "restart", {"incarnation_id": agree.incarnation(number)}, resp=frozenset(),
                                 publish_reg=True, publish_mv=True, restarts=env.restarts + 1))


def spec_post(state: Mapping[str, Any]) -> dict[str, Any]:
    """A TLC state of ``ControllerRegistration.tla`` as trace post-state fields (``controller_replay.observe``'s names).

    ``timer`` off is ``resend_deadline_ms`` null; on, the deadline is the reference's (time is abstract in the spec).
    """
    log = state["log"]
    registration = ControllerRegistration(controller_id=agree.NODE_ID, incarnation_id=agree.incarnation(log),
                                          zk_migration_ready=False, listeners=agree.LISTENERS, features=())
    return {
        "incarnation_id": agree.incarnation(state["inc"]),
        "channel_started": state["started"],
        "known_metadata_version": LATEST_PRODUCTION if state["mvKnown"] else MINIMUM_KRAFT_MV,
        "registered": state["registered"],
        "pending_rpcs": state["pending"],
        "failed_rpcs": state["failed"],
        "controllers": {str(agree.NODE_ID): to_json(registration)} if log else {},
        **({} if state["timer"] else {"resend_deadline_ms": None}),
    }


class Recorder:
    """Turns paths of TLC's graph into traces through the trace inputs that produce each edge."""

    def __init__(self, graph: nx.MultiDiGraph, constants: Mapping[str, Any]) -> None:
        self.graph, self.constants = graph, constants
        (spec_initial,) = agree.initial_states(constants)
        self.initial_point = Point(explicit_state(EXPLICIT), 0, spec_initial)
        self.initial = state_key(agree.project(self.initial_point.explored()))
        if self.initial not in graph or not graph.nodes[self.initial].get("initial"):
            raise ValueError("the reference's initial state is not TLC's: run `kraftspec agree controller`")

    def trace(self, path: list[Edge], trace_id: str, meta: dict[str, Any]) -> Trace:
        """The trace of a path from the initial state: each edge's input, outputs and the spec's state after it."""
        point, steps = self.initial_point, []
        for _, target, label in path:
            match = next(((after, step) for action, after, step in moves(point, self.constants)
                          if action == label and state_key(agree.project(after.explored())) == target), None)
            if match is None:
                raise ValueError(f"no reference call produces the spec's {label} edge: run `kraftspec agree controller`")
            point, step = match
            steps.append(replace(step, post=spec_post(self.graph.nodes[target]["state"])))
        return Trace(component="controller", steps=tuple(steps), explicit=EXPLICIT, id=trace_id, meta=meta)


def generate_tla(seed: int, walks: int, cover: str = "kinds", *, timeout_s: float = 600.0,
                 graph: Optional[nx.MultiDiGraph] = None) -> Iterator[Trace]:
    """``walks`` seeded random walks of TLC's controller graph, then the covering set (``cover``: ``kinds`` or
    ``edges``, ``tla_traces.covering_paths``; the walks count as covering what they take)."""
    if cover not in COVERS:
        raise ValueError(f"unknown cover {cover!r} (known: {', '.join(COVERS)})")
    model = load_model("controller")
    constants = read_constants(model.config_path)
    if graph is None:
        graph, _ = state_graph(model.module_path, model.config_path, timeout_s=timeout_s)
    recorder = Recorder(graph, constants)
    yield from walked_traces(graph, recorder.initial, seed, walks, cover, model.spec_module, "tla-controller-",
                             recorder.trace)
