"""KIP-919 controller registration: the active controller's handler, replay, and the controller process's
``ControllerRegistrationManager`` as pure transitions.

kraft-semantics §4.1; ``ClusterControlManager.registerController``, ``ControllerApis``,
``core/src/main/scala/kafka/server/ControllerRegistrationManager.scala``. Time (ms) and the backoff's
random draw are arguments; outputs are records, responses and requests to send.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from kraftspec.reference.controller_rules import backoff_ms, is_registered_in_log, should_send_registration
from kraftspec.reference.errors import Errors
from kraftspec.reference.frozen import FrozenMap, evolve, slotted
from kraftspec.reference.metadata_version import is_controller_registration_supported
from kraftspec.reference.records import Endpoint, FeatureRange, RegisterControllerRecord

MV_TOO_OLD_MESSAGE = "The current MetadataVersion is too old to support controller registrations."
MINIMUM_KRAFT_MV = 1  # MetadataVersion.MINIMUM_KRAFT_VERSION (3.0-IV1): the manager's MV before any update


@slotted
@dataclass(frozen=True)
class ControllerRegistrationRequest:
    """ControllerRegistration (apiKey 70, v0): who registers, with which incarnation, listeners and features."""

    controller_id: int
    incarnation_id: str
    zk_migration_ready: bool = False
    listeners: tuple[Endpoint, ...] = ()
    features: tuple[FeatureRange, ...] = ()


@slotted
@dataclass(frozen=True)
class ControllerRegistrationResponse:
    """The response: an error code and message (NONE / None on success)."""

    error: Errors
    message: Optional[str] = None


@slotted
@dataclass(frozen=True)
class ControllerRegistration:
    """``ControllerRegistration`` in the cluster image, as the latest RegisterControllerRecord defines it."""

    controller_id: int
    incarnation_id: str
    zk_migration_ready: bool = False
    listeners: tuple[Endpoint, ...] = ()
    features: tuple[FeatureRange, ...] = ()


def register_controller(
    request: ControllerRegistrationRequest, mv: int, is_active: bool, authorized: bool = True
) -> tuple[ControllerRegistrationResponse, tuple[RegisterControllerRecord, ...]]:
    """Controller-side handling of ControllerRegistration (§4.1): one atomic RegisterControllerRecord v0.

    Order as implemented: CLUSTER_ACTION (``ControllerApis``) → NOT_CONTROLLER (write event on an
    inactive controller) → MV < 3.7-IV0 → UNSUPPORTED_VERSION. The issue lists the MV check first;
    in Kafka an inactive controller answers NOT_CONTROLLER whatever the MV.
    """
    if not authorized:
        return ControllerRegistrationResponse(Errors.CLUSTER_AUTHORIZATION_FAILED), ()
    if not is_active:
        return ControllerRegistrationResponse(Errors.NOT_CONTROLLER), ()
    if not is_controller_registration_supported(mv):
        return ControllerRegistrationResponse(Errors.UNSUPPORTED_VERSION, MV_TOO_OLD_MESSAGE), ()
    record = RegisterControllerRecord(
        controller_id=request.controller_id,
        incarnation_id=request.incarnation_id,
        zk_migration_ready=request.zk_migration_ready,
        end_points=request.listeners,
        features=request.features,
        version=0,
    )
    return ControllerRegistrationResponse(Errors.NONE), (record,)


def replay_register_controller(
    controllers: FrozenMap[int, ControllerRegistration], record: RegisterControllerRecord
) -> FrozenMap[int, ControllerRegistration]:
    """Replay of RegisterControllerRecord: replaces any registration for that id, with no epoch check (§4.1)."""
    return controllers.set(
        record.controller_id,
        ControllerRegistration(
            controller_id=record.controller_id,
            incarnation_id=record.incarnation_id,
            zk_migration_ready=record.zk_migration_ready,
            listeners=record.end_points,
            features=record.features,
        ),
    )


@slotted
@dataclass(frozen=True)
class ManagerState:
    """``ControllerRegistrationManager`` fields: one per process start (``incarnation_id`` is new each start)."""

    node_id: int
    incarnation_id: str
    listeners: tuple[Endpoint, ...] = ()
    features: tuple[FeatureRange, ...] = ()
    metadata_version: int = MINIMUM_KRAFT_MV
    registered: bool = False
    channel_started: bool = False
    pending_rpcs: int = 0
    successful_rpcs: int = 0
    failed_rpcs: int = 0
    resend_deadline_ms: Optional[int] = None  # the deferred "communication" event, if scheduled


def _request_of(state: ManagerState) -> ControllerRegistrationRequest:
    """The request ``sendControllerRegistration`` builds: our id, incarnation, listeners, features, zkMigrationReady=false."""
    return ControllerRegistrationRequest(
        controller_id=state.node_id,
        incarnation_id=state.incarnation_id,
        zk_migration_ready=False,
        listeners=state.listeners,
        features=state.features,
    )


def maybe_send(state: ManagerState) -> tuple[ManagerState, tuple[ControllerRegistrationRequest, ...]]:
    """``maybeSendControllerRegistration``: send one request if ``should_send_registration`` holds (§4.1).

    Kafka runs it on start, after relevant metadata updates and when the deferred resend fires; the
    issue's periodic self-check is this same function driven by a timer (Kafka 4.3 has no timer).
    """
    mv_supported = is_controller_registration_supported(state.metadata_version)
    if not should_send_registration(state.registered, state.channel_started, mv_supported, state.pending_rpcs):
        return state, ()
    return evolve(state, pending_rpcs=state.pending_rpcs + 1), (_request_of(state),)


def start(state: ManagerState) -> tuple[ManagerState, tuple[ControllerRegistrationRequest, ...]]:
    """``start(channelManager)``: the channel is available; try to send (§4.1)."""
    return maybe_send(evolve(state, channel_started=True))


def on_metadata_update(
    state: ManagerState,
    new_mv: Optional[int],
    own_registration_changed: bool,
    log_registration: Optional[ControllerRegistration],
) -> tuple[ManagerState, tuple[ControllerRegistrationRequest, ...]]:
    """``onMetadataUpdate``/``MetadataUpdateEvent``: registeredInLog comes **only** from the log (§4.1).

    ``new_mv`` is the image's MV when the delta changed features (else None); when this node's
    controller registration changed, ``registered`` = the log's registration has our incarnation.
    Kafka ignores deltas that touch neither.
    """
    if new_mv is None and not own_registration_changed:
        return state, ()
    updated = state
    if new_mv is not None:
        updated = evolve(updated, metadata_version=new_mv)
    if own_registration_changed:
        log_incarnation = None if log_registration is None else log_registration.incarnation_id
        updated = evolve(updated, registered=is_registered_in_log(log_incarnation, state.incarnation_id))
    return maybe_send(updated)


def on_response(
    state: ManagerState, error: Errors, now_ms: int, jitter_draw: float
) -> tuple[ManagerState, tuple[ControllerRegistrationRequest, ...]]:
    """``RegistrationResponseHandler``: success counts but does **not** mark registered; any failure
    (error code, authentication, version mismatch, timeout) schedules a resend after
    ``backoff_ms(failed_rpcs)`` and increments the failure count (§4.1, scenario 122).
    """
    state = evolve(state, pending_rpcs=state.pending_rpcs - 1)
    if error == Errors.NONE:
        return evolve(state, successful_rpcs=state.successful_rpcs + 1, failed_rpcs=0), ()
    delay = backoff_ms(state.failed_rpcs, jitter_draw)
    return evolve(state, failed_rpcs=state.failed_rpcs + 1, resend_deadline_ms=now_ms + delay), ()


def on_deadline(state: ManagerState, now_ms: int) -> tuple[ManagerState, tuple[ControllerRegistrationRequest, ...]]:
    """The deferred "communication" event fires at its deadline and runs ``maybe_send`` (§4.1)."""
    if state.resend_deadline_ms is None or now_ms < state.resend_deadline_ms:
        return state, ()
    return maybe_send(evolve(state, resend_deadline_ms=None))

