"""Hypothesis model of KIP-919 controller registration with delayed, duplicated and reordered
registration messages and process restarts (new incarnations).

One controller process (node 1) runs ``ControllerRegistrationManager`` (``reference/controller_registration``);
an always-active quorum controller handles its requests and writes RegisterControllerRecords. Requests of
every incarnation stay in the network until delivered, in any order, possibly more than once.
Invariant ``log_settles_to_running_incarnation`` (rules §4.1): from any state, delivering
everything and letting the manager run (its resend timer and the periodic self-check) ends with the log's
registration for node 1 being the running incarnation's. Rule names follow the reference functions.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Optional

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

import kraftspec.reference.controller_registration as cr
from kraftspec.models.controller_strategies import jitter_draws, registration_failures
from kraftspec.reference.errors import Errors
from kraftspec.reference.frozen import FrozenMap
from kraftspec.reference.metadata_version import is_controller_registration_supported
from kraftspec.reference.records import Endpoint

NODE_ID = 1
LISTENERS = (Endpoint(name="CONTROLLER", host="localhost", port=9093),)
SETTLE_STEPS = 200


@dataclass
class World:
    """The whole system: the manager, the log's registrations, the network, the clock."""

    manager: cr.ManagerState
    mv: int
    log: FrozenMap[int, cr.ControllerRegistration] = field(default_factory=lambda: FrozenMap({}))
    requests: list[tuple[int, cr.ControllerRegistrationRequest]] = field(default_factory=list)
    responses: list[tuple[int, str, Errors]] = field(default_factory=list)  # (request id, incarnation, error)
    publish_registration: bool = False  # the manager has not yet seen the latest change of its registration
    publish_mv: bool = False
    now_ms: int = 0
    next_request_id: int = 0
    restarts: int = 0

    def copy(self) -> "World":
        """A copy whose network lists can be changed independently."""
        return replace(self, requests=list(self.requests), responses=list(self.responses))


def new_manager(incarnation: str) -> cr.ManagerState:
    """A fresh process: new incarnation id, nothing known yet."""
    return cr.ManagerState(node_id=NODE_ID, incarnation_id=incarnation, listeners=LISTENERS)


def send(world: World, sent: tuple[cr.ControllerRegistrationRequest, ...]) -> None:
    """Put the manager's requests on the network."""
    for request in sent:
        world.requests.append((world.next_request_id, request))
        world.next_request_id += 1


def handle_request(world: World, index: int, respond: bool) -> None:
    """The active controller handles request ``index``: records replayed into the log, maybe a response."""
    request_id, request = world.requests[index]
    response, records = cr.register_controller(request, world.mv, is_active=True)
    for record in records:
        world.log = cr.replay_register_controller(world.log, record)
        world.publish_registration = True
    if respond:
        world.requests.pop(index)
        world.responses.append((request_id, request.incarnation_id, response.error))


def deliver_response(world: World, index: int, jitter: float) -> None:
    """A response reaches the process; responses to a previous incarnation are dropped with it."""
    _, incarnation, error = world.responses.pop(index)
    if incarnation == world.manager.incarnation_id:
        world.manager, sent = cr.on_response(world.manager, error, world.now_ms, jitter)
        send(world, sent)


def publish(world: World) -> None:
    """The metadata loader publishes the log's latest state to the manager."""
    new_mv = world.mv if world.publish_mv else None
    world.manager, sent = cr.on_metadata_update(world.manager, new_mv, world.publish_registration,
                                                world.log.get(NODE_ID))
    world.publish_registration = world.publish_mv = False
    send(world, sent)


def settle(world: World) -> World:
    """Deliver everything and let the manager run to quiescence (on a copy)."""
    world = world.copy()
    if not world.manager.channel_started:
        world.manager, sent = cr.start(world.manager)
        send(world, sent)
    for _ in range(SETTLE_STEPS):
        if world.publish_registration or world.publish_mv:
            publish(world)
        elif world.responses:
            deliver_response(world, 0, 0.5)
        elif world.requests:
            handle_request(world, 0, respond=True)
        elif world.manager.resend_deadline_ms is not None:
            world.now_ms = max(world.now_ms, world.manager.resend_deadline_ms)
            world.manager, sent = cr.on_deadline(world.manager, world.now_ms)
            send(world, sent)
        else:
            world.manager, sent = cr.maybe_send(world.manager)  # the periodic self-check
            if not sent:
                return world
            send(world, sent)
    raise AssertionError(f"the system did not settle within {SETTLE_STEPS} steps")


ENVIRONMENT_RULES = frozenset({"restart", "upgrade_mv"})
"""Rules that move the environment, named for what happens rather than after a reference rule: a process restart and a
metadata.version upgrade."""


class ControllerRegistrationMachine(RuleBasedStateMachine):
    """Rules: start, deliver/duplicate/fail a request, deliver a response, publish metadata, advance time,
    restart with a new incarnation, upgrade MV, self-check."""

    world: World

    @initialize(mv=st.sampled_from((14, 15, 30)), registered_before=st.booleans())
    def init(self, mv: int, registered_before: bool) -> None:
        """A process (incarnation inc0) and a quorum at ``mv``; the log may already hold the registration of
        the process that ran before (incarnation "old") when ``mv`` allows; nothing is published yet."""
        self.world = World(manager=new_manager("inc0"), mv=mv, publish_mv=True)
        if registered_before and is_controller_registration_supported(mv):
            _, records = cr.register_controller(cr.ControllerRegistrationRequest(controller_id=NODE_ID,
                                                                                 incarnation_id="old",
                                                                                 listeners=LISTENERS),
                                                mv, is_active=True)
            self.world.log = cr.replay_register_controller(self.world.log, records[0])
            self.world.publish_registration = True

    @rule()
    def start(self) -> None:
        """``start``: the channel becomes available (once per process)."""
        if not self.world.manager.channel_started:
            self.world.manager, sent = cr.start(self.world.manager)
            send(self.world, sent)

    @precondition(lambda self: self.world.requests)
    @rule(data=st.data(), duplicate=st.booleans())
    def register_controller(self, data: st.DataObject, duplicate: bool) -> None:
        """The controller handles any in-flight request; a duplicate delivery writes again but is not answered."""
        index = data.draw(st.integers(0, len(self.world.requests) - 1), label="request")
        handle_request(self.world, index, respond=not duplicate)

    @precondition(lambda self: self.world.requests)
    @rule(data=st.data(), error=registration_failures())
    def register_controller_fails(self, data: st.DataObject, error: Errors) -> None:
        """The controller (or the transport) answers any in-flight request with an error."""
        index = data.draw(st.integers(0, len(self.world.requests) - 1), label="request")
        request_id, request = self.world.requests.pop(index)
        self.world.responses.append((request_id, request.incarnation_id, error))

    @precondition(lambda self: self.world.responses)
    @rule(data=st.data(), jitter=jitter_draws())
    def on_response(self, data: st.DataObject, jitter: float) -> None:
        """Any response reaches the process."""
        deliver_response(self.world, data.draw(st.integers(0, len(self.world.responses) - 1), label="response"), jitter)

    @rule()
    def on_metadata_update(self) -> None:
        """The loader publishes the log to the manager."""
        publish(self.world)

    @rule(ms=st.sampled_from((1, 50, 100, 1000, 200000)))
    def on_deadline(self, ms: int) -> None:
        """Time passes; a due resend fires."""
        self.world.now_ms += ms
        self.world.manager, sent = cr.on_deadline(self.world.manager, self.world.now_ms)
        send(self.world, sent)

    @precondition(lambda self: self.world.restarts < 3)
    @rule()
    def restart(self) -> None:
        """The process restarts with a new incarnation; its old requests may still land."""
        self.world.restarts += 1
        self.world.manager = new_manager(f"inc{self.world.restarts}")
        self.world.responses.clear()  # connections of the old process are gone; its requests may still arrive
        self.world.publish_registration = self.world.publish_mv = True  # the loader publishes the full image

    @precondition(lambda self: not is_controller_registration_supported(self.world.mv))
    @rule()
    def upgrade_mv(self) -> None:
        """metadata.version is raised to 3.7-IV0."""
        self.world.mv = 15
        self.world.publish_mv = True

    @rule()
    def maybe_send(self) -> None:
        """The periodic self-check."""
        self.world.manager, sent = cr.maybe_send(self.world.manager)
        send(self.world, sent)

    @invariant()
    def pending_rpcs_match_network(self) -> None:
        """Every RPC the running incarnation counts as pending is in flight as a request or its answer."""
        own = self.world.manager.incarnation_id
        in_flight = sum(1 for _, r in self.world.requests if r.incarnation_id == own)
        in_flight += sum(1 for _, inc, _ in self.world.responses if inc == own)
        assert self.world.manager.pending_rpcs == in_flight, (self.world.manager, self.world.requests,
                                                              self.world.responses)

    @invariant()
    def log_settles_to_running_incarnation(self) -> None:
        """Once everything is delivered, the log holds the running incarnation's registration (§4.1)."""
        settled = settle(self.world)
        registration: Optional[cr.ControllerRegistration] = settled.log.get(NODE_ID)
        if is_controller_registration_supported(settled.mv):
            assert registration is not None and registration.incarnation_id == settled.manager.incarnation_id, (
                f"log has {registration}, running incarnation {settled.manager.incarnation_id}")
            assert settled.manager.registered
        else:
            assert registration is None


TestControllerRegistration = ControllerRegistrationMachine.TestCase
