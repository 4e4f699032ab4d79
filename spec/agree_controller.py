"""Controller registration explored under ``ControllerRegistration.cfg``'s bounds, in the spec's vocabulary.

Each successor calls the reference (``kraftspec.reference.controller_registration``) with one choice of
the spec action's parameters: ``RegisterController(r, d)`` ~ ``register_controller`` on an active
controller + ``replay_register_controller``, ``RegisterControllerFails(r)`` ~ ``register_controller`` on an
inactive one (NOT_CONTROLLER), ``OnResponse(m)`` ~ ``on_response``, ``OnMetadataUpdate`` ~
``on_metadata_update``, ``OnDeadline`` ~ ``on_deadline`` at the deadline, ``MaybeSend`` ~ ``maybe_send``,
``Start`` ~ ``start``, ``Restart`` ~ a fresh ``ManagerState`` with the next incarnation. The quorum runs
metadata.version 4.3-IV0; the backoff draw is 0.5 and the clock stays at 0 (time is abstracted).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterator, Mapping, Optional

from kraftspec.reference import controller_registration as cr
from kraftspec.reference.errors import Errors
from kraftspec.reference.frozen import FrozenMap
from kraftspec.reference.metadata_version import LATEST_PRODUCTION, is_controller_registration_supported
from kraftspec.reference.records import Endpoint
from kraftspec.spec.agree import AgreementModel, Step
from kraftspec.spec.tla_values import TlaValue

NODE_ID = 1
LISTENERS = (Endpoint(name="CONTROLLER", host="localhost", port=9093),)
ENVIRONMENT_ACTIONS = frozenset({"Restart"})
"""Actions of ``ControllerRegistration.tla``'s ``Next`` that move the environment (a new incarnation of the
controller)."""


def incarnation(number: int) -> str:
    """The incarnation id of the ``number``-th process start."""
    return f"inc{number}"


def incarnation_number(incarnation_id: str) -> int:
    """The spec's number for an incarnation id."""
    return int(incarnation_id[3:])


@dataclass(frozen=True)
class ExploredState:
    """The manager, the log's registrations, requests and responses in flight, and the publish flags."""

    manager: cr.ManagerState
    log: FrozenMap[int, cr.ControllerRegistration]
    net: frozenset[tuple[int, str]]
    resp: frozenset[tuple[int, str, Errors]]
    publish_reg: bool
    publish_mv: bool
    sent: int
    restarts: int


def fresh_manager(number: int) -> cr.ManagerState:
    """A new process: new incarnation id, nothing known yet."""
    return cr.ManagerState(node_id=NODE_ID, incarnation_id=incarnation(number), listeners=LISTENERS)


def with_manager(state: ExploredState, manager: cr.ManagerState,
                 sent: tuple[cr.ControllerRegistrationRequest, ...], **changes: object) -> ExploredState:
    """The state after a manager transition: its requests join the network with the next ids."""
    net = set(state.net)
    next_id = state.sent
    for request in sent:
        net.add((next_id, request.incarnation_id))
        next_id += 1
    return replace(state, manager=manager, net=frozenset(net), sent=next_id, **changes)  # type: ignore[arg-type]


def request_of(incarnation_id: str) -> cr.ControllerRegistrationRequest:
    """The request a process of that incarnation sends (``ManagerState`` builds the same one)."""
    return cr.ControllerRegistrationRequest(controller_id=NODE_ID, incarnation_id=incarnation_id,
                                            zk_migration_ready=False, listeners=LISTENERS, features=())


def initial_states(constants: Mapping[str, TlaValue]) -> Iterator[ExploredState]:
    """``Init``: first incarnation, channel not started, nothing registered; the features image unpublished."""
    yield ExploredState(fresh_manager(1), FrozenMap({}), frozenset(), frozenset(), False, True, 0, 0)


def successors(state: ExploredState, constants: Mapping[str, TlaValue]) -> Iterator[Step[ExploredState]]:
    """Every action of the spec's ``Next`` with every parameter choice, as reference calls."""
    manager = state.manager
    may_send = state.sent < int(constants["MaxSends"])
    if may_send and not manager.channel_started:
        after, sent = cr.start(manager)
        yield Step("Start", "start(manager)", with_manager(state, after, sent))
    for request_id, inc in sorted(state.net):
        request = request_of(inc)
        response, records = cr.register_controller(request, LATEST_PRODUCTION, is_active=True)
        log = state.log
        for record in records:
            log = cr.replay_register_controller(log, record)
        for duplicate in (False, True):
            net, resp = state.net, state.resp
            if not duplicate:
                net = net - {(request_id, inc)}
                resp = resp | {(request_id, inc, response.error)}
            yield Step("RegisterController",
                       f"register_controller(request {request_id} of {inc}, duplicate={duplicate})",
                       replace(state, log=log, net=net, resp=resp, publish_reg=state.publish_reg or bool(records)))
        refused, _ = cr.register_controller(request, LATEST_PRODUCTION, is_active=False)
        yield Step("RegisterControllerFails", f"register_controller(request {request_id} of {inc}, is_active=False)",
                   replace(state, net=state.net - {(request_id, inc)},
                           resp=state.resp | {(request_id, inc, refused.error)}))
    for message in sorted(state.resp):
        if message[1] == manager.incarnation_id:
            after, sent = cr.on_response(manager, message[2], now_ms=0, jitter_draw=0.5)
            yield Step("OnResponse", f"on_response({message[2].name} for request {message[0]})",
                       with_manager(state, after, sent, resp=state.resp - {message}))
    if may_send:
        new_mv = LATEST_PRODUCTION if state.publish_mv else None
        after, sent = cr.on_metadata_update(manager, new_mv, state.publish_reg, state.log.get(NODE_ID))
        yield Step("OnMetadataUpdate", f"on_metadata_update(new_mv={new_mv}, changed={state.publish_reg})",
                   with_manager(state, after, sent, publish_reg=False, publish_mv=False))
        if manager.resend_deadline_ms is not None:
            after, sent = cr.on_deadline(manager, manager.resend_deadline_ms)
            yield Step("OnDeadline", f"on_deadline(now={manager.resend_deadline_ms})", with_manager(state, after, sent))
        after, sent = cr.maybe_send(manager)
        yield Step("MaybeSend", "maybe_send(manager)", with_manager(state, after, sent))
    if state.restarts < int(constants["MaxRestarts"]):
        number = incarnation_number(manager.incarnation_id) + 1
        yield Step("Restart", f"ManagerState(incarnation {incarnation(number)})",
                   replace(state, manager=fresh_manager(number), resp=frozenset(), publish_reg=True, publish_mv=True,
                           restarts=state.restarts + 1))


def _log_number(registration: Optional[cr.ControllerRegistration]) -> int:
    """The spec's ``log``: the registered incarnation's number, 0 when none."""
    return 0 if registration is None else incarnation_number(registration.incarnation_id)


def project(state: ExploredState) -> dict[str, TlaValue]:
    """The spec's variables."""
    manager = state.manager
    return {
        "inc": incarnation_number(manager.incarnation_id),
        "started": manager.channel_started,
        "mvKnown": is_controller_registration_supported(manager.metadata_version),
        "registered": manager.registered,
        "pending": manager.pending_rpcs,
        "failed": manager.failed_rpcs,
        "timer": manager.resend_deadline_ms is not None,
        "log": _log_number(state.log.get(NODE_ID)),
        "net": frozenset((i, incarnation_number(inc)) for i, inc in state.net),
        "resp": frozenset((i, incarnation_number(inc), error == Errors.NONE) for i, inc, error in state.resp),
        "publishReg": state.publish_reg,
        "publishMv": state.publish_mv,
        "sent": state.sent,
        "restarts": state.restarts,
    }


MODEL: AgreementModel[ExploredState] = AgreementModel(
    component="controller",
    spec_module="ControllerRegistration",
    initial_states=initial_states,
    successors=successors,
    project=project,
)
