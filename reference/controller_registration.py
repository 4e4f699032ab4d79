"""KIP-919 controller registration: the active controller's handler, replay, and the controller process's
``ControllerRegistrationManager`` as pure transitions.

rules §4.1; ``ClusterControlManager.registerController``, ``ControllerApis``,
``core/src/main/scala/kafka/server/ControllerRegistrationManager.scala``. Time (ms) and the backoff's
random draw are arguments; outputs are records, responses and requests to send.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from kraftspec.reference.controller_rules import backoff_ms, is_registered_in_log, should_send_registration
from kraftspec.reference.errors import Errors
from kraftspec.reference.frozen import FrozenMap, evolve
from kraftspec.reference.metadata_version import is_controller_registration_supported
from kraftspec.reference.records import Endpoint, FeatureRange, RegisterControllerRecord

MV_TOO_OLD_MESSAGE = "The current MetadataVersion is too old to support controller registrations."
"""The ``UnsupportedVersionException`` ``ClusterControlManager.registerController`` throws; the response does not
carry it (:data:`ERROR_MESSAGES`)."""
MINIMUM_KRAFT_MV = 1  # MetadataVersion.MINIMUM_KRAFT_VERSION (3.0-IV1): the manager's MV before any update

ERROR_MESSAGES = {
    Errors.CLUSTER_AUTHORIZATION_FAILED: "Cluster authorization failed.",
    Errors.NOT_CONTROLLER: "This is not the correct controller for this cluster.",
    Errors.UNSUPPORTED_VERSION: "The version of API is not supported.",
}
"""An error response's message: the error code's own text (``Errors.message()``), whatever the exception said,
because ``ControllerRegistrationRequest.getErrorResponse`` builds it from ``Errors.forException(e).message()``
(Kafka 3.9 and 4.x, ``clients/.../requests/ControllerRegistrationRequest.java``)."""
SUCCESS_MESSAGE = ""
"""A success response's message: ``ControllerApis.handleControllerRegistration`` sends a fresh
``ControllerRegistrationResponseData``, whose nullable ErrorMessage has no schema default and so is ``""``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ControllerBehaviour:
    """The version differences of the controller component (rules §4.1–§4.3), as explicit switches.

    ``copies_zk_migration_ready``: 3.9's ``ClusterControlManager.registerController`` writes the request's
    ZkMigrationReady into the record; 4.x (ZooKeeper removed) writes ``false`` whatever the request says.
    ``describe_cluster_max_version``: DescribeCluster v2 (KIP-1073's IncludeFencedBrokers) came with 4.0; 3.9's
    client and brokers know v0–v1. ``timeout_clears_pending``: when the channel gives up on a registration
    request (``onTimeout``), 4.3's ``RequestTimeoutEvent`` clears ``pendingRpc``; 3.9–4.2's ``onTimeout`` only
    schedules the resend, so the flag stays set and that process never sends again. ``denial_names_operation``:
    a controller's DescribeCluster denial says "Request ... needs ALTER permission." from 4.1
    (``AuthHelper.authorizeClusterOperation``), "Request ... is not authorized." in 3.9 and 4.0.
    """

    name: str
    copies_zk_migration_ready: bool
    describe_cluster_max_version: int = 2
    timeout_clears_pending: bool = True
    denial_names_operation: bool = True


KAFKA_3_9 = ControllerBehaviour(name="3.9", copies_zk_migration_ready=True, describe_cluster_max_version=1,
                                timeout_clears_pending=False, denial_names_operation=False)
KAFKA_4_0 = ControllerBehaviour(name="4.0", copies_zk_migration_ready=False, describe_cluster_max_version=2,
                                timeout_clears_pending=False, denial_names_operation=False)
KAFKA_4_1 = ControllerBehaviour(name="4.1", copies_zk_migration_ready=False, describe_cluster_max_version=2,
                                timeout_clears_pending=False, denial_names_operation=True)
KAFKA_4_2 = ControllerBehaviour(name="4.2", copies_zk_migration_ready=False, describe_cluster_max_version=2,
                                timeout_clears_pending=False, denial_names_operation=True)
KAFKA_4_3 = ControllerBehaviour(name="4.3+", copies_zk_migration_ready=False, describe_cluster_max_version=2,
                                timeout_clears_pending=True, denial_names_operation=True)
CONTROLLER_BEHAVIOURS = {b.name: b for b in (KAFKA_3_9, KAFKA_4_0, KAFKA_4_1, KAFKA_4_2, KAFKA_4_3)}


@dataclass(frozen=True, slots=True, kw_only=True)
class ControllerRegistrationRequest:
    """ControllerRegistration (apiKey 70, v0): who registers, with which incarnation, listeners and features."""

    controller_id: int
    incarnation_id: str
    zk_migration_ready: bool = False
    listeners: tuple[Endpoint, ...] = ()
    features: tuple[FeatureRange, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class ControllerRegistrationResponse:
    """The response: an error code and message (NONE / None on success)."""

    error: Errors
    message: Optional[str] = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ControllerRegistration:
    """``ControllerRegistration`` in the cluster image, as the latest RegisterControllerRecord defines it."""

    controller_id: int
    incarnation_id: str
    zk_migration_ready: bool = False
    listeners: tuple[Endpoint, ...] = ()
    features: tuple[FeatureRange, ...] = ()


def register_controller(
    request: ControllerRegistrationRequest, mv: int, is_active: bool, authorized: bool = True,
    behaviour: ControllerBehaviour = KAFKA_4_3,
) -> tuple[ControllerRegistrationResponse, tuple[RegisterControllerRecord, ...]]:
    """Controller-side handling of ControllerRegistration (§4.1): one atomic RegisterControllerRecord v0.

    Order as implemented: CLUSTER_ACTION (``ControllerApis.handleControllerRegistration``) → NOT_CONTROLLER (the
    quorum controller's write event on an inactive controller) → MV < 3.7-IV0 (``ClusterControlManager.
    registerController`` throws UnsupportedVersionException) → the record. The issue lists the MV check first;
    in Kafka an inactive controller answers NOT_CONTROLLER whatever the MV. Error messages are the error codes'
    own (:data:`ERROR_MESSAGES`), success's ``""`` (:data:`SUCCESS_MESSAGE`). ZkMigrationReady: Kafka 4.x writes
    ``false`` whatever the request says, 3.9 copied the request (``behaviour``; Kafka 4.3
    ``ClusterControlManager.registerController``: ``setZkMigrationReady(false)``).
    """
    # ControllerApis: only a controller (CLUSTER_ACTION on the cluster) may register one.
    if not authorized:
        error = Errors.CLUSTER_AUTHORIZATION_FAILED
    # Only the active controller writes registrations: the sender must find the active one.
    elif not is_active:
        error = Errors.NOT_CONTROLLER
    # Before 3.7-IV0 the log has no ControllerRegistrationRecord to write.
    elif not is_controller_registration_supported(mv):
        error = Errors.UNSUPPORTED_VERSION
    else:
        record = RegisterControllerRecord(
            controller_id=request.controller_id,
            incarnation_id=request.incarnation_id,
            zk_migration_ready=request.zk_migration_ready if behaviour.copies_zk_migration_ready else False,
            end_points=request.listeners,
            features=request.features,
            version=0,
        )
        return ControllerRegistrationResponse(error=Errors.NONE, message=SUCCESS_MESSAGE), (record,)
    return ControllerRegistrationResponse(error=error, message=ERROR_MESSAGES[error]), ()


def replay_register_controller(
    controllers: FrozenMap[int, ControllerRegistration], record: RegisterControllerRecord
) -> FrozenMap[int, ControllerRegistration]:
    """Replay of RegisterControllerRecord: replaces any registration for that id, with no epoch check (§4.1).

    The registration's endpoints and features are maps keyed by name (Kafka 4.3
    ``ControllerRegistration.Builder(RegisterControllerRecord)`` puts them into ``HashMap``s, so a later entry of
    the same name replaces an earlier one and the record's order is not kept); the reference keeps one entry per
    name, the last, in name order.
    """
    return controllers.set(
        record.controller_id,
        ControllerRegistration(
            controller_id=record.controller_id,
            incarnation_id=record.incarnation_id,
            zk_migration_ready=record.zk_migration_ready,
            listeners=_by_name(record.end_points),
            features=_by_name(record.features),
        ),
    )


def keyed_by_name(registration: ControllerRegistration) -> ControllerRegistration:
    """``registration`` with its endpoints and features as :func:`replay_register_controller` keeps them (one per
    name, the last, in name order): how a registration stated in a trace's initial state enters the image."""
    listeners, features = _by_name(registration.listeners), _by_name(registration.features)
    if listeners == registration.listeners and features == registration.features:
        return registration
    return evolve(registration, listeners=listeners, features=features)


def _by_name(entries: tuple[Any, ...]) -> tuple[Any, ...]:
    """One entry per ``name`` (the last of each), in name order: a map keyed by name, as a tuple."""
    if len(entries) < 2:
        return entries
    last = {entry.name: entry for entry in entries}
    return tuple(last[name] for name in sorted(last))


@dataclass(frozen=True, slots=True, kw_only=True)
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
    state: ManagerState, error: Errors, now_ms: int, jitter_draw: float,
    behaviour: ControllerBehaviour = KAFKA_4_3,
) -> tuple[ManagerState, tuple[ControllerRegistrationRequest, ...]]:
    """``RegistrationResponseHandler``: success counts but does **not** mark registered; any failure
    (error code, authentication, version mismatch, timeout) schedules a resend after
    ``backoff_ms(failed_rpcs)`` and increments the failure count (§4.1, scenario 122).

    A resend due by ``now_ms`` fires first (:func:`on_deadline`): the manager's ``KafkaEventQueue`` runs a due
    deferred event before any queued one (Kafka 4.3 ``KafkaEventQueue.EventHandler.handleEvents``), so the
    response event runs after it. With this request still pending the resend sends nothing, and it is gone.
    ``REQUEST_TIMED_OUT`` stands for the channel giving up (``onTimeout``): before 4.3 it leaves the request
    pending (``behaviour.timeout_clears_pending``; Kafka 3.9–4.2 ``RegistrationResponseHandler.onTimeout``).
    """
    fired: tuple[ControllerRegistrationRequest, ...] = ()
    if state.resend_deadline_ms is not None and now_ms >= state.resend_deadline_ms:
        state, fired = on_deadline(state, now_ms)
    if error != Errors.REQUEST_TIMED_OUT or behaviour.timeout_clears_pending:
        state = evolve(state, pending_rpcs=state.pending_rpcs - 1)
    if error == Errors.NONE:
        return evolve(state, successful_rpcs=state.successful_rpcs + 1, failed_rpcs=0), fired
    delay = backoff_ms(state.failed_rpcs, jitter_draw)
    return evolve(state, failed_rpcs=state.failed_rpcs + 1, resend_deadline_ms=now_ms + delay), fired


def on_deadline(state: ManagerState, now_ms: int) -> tuple[ManagerState, tuple[ControllerRegistrationRequest, ...]]:
    """The deferred "communication" event fires at its deadline and runs ``maybe_send`` (§4.1)."""
    if state.resend_deadline_ms is None or now_ms < state.resend_deadline_ms:
        return state, ()
    return maybe_send(evolve(state, resend_deadline_ms=None))

