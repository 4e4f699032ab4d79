"""DescribeCluster (apiKey 60, v0–v2) as a pure function of the cluster image and the receiving node.

rules §4.2 (and §4.3 for the request serializer rule);
``AuthHelper.computeDescribeClusterResponse``, ``KafkaApis.handleDescribeCluster``,
``ControllerApis.handleDescribeCluster``. The broker's "random unfenced broker" controller id is chosen
by an index argument, never by randomness here.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Iterable, Optional

from kraftspec.reference.broker_registration import BrokerRegistration
from kraftspec.reference.controller_registration import ControllerRegistration
from kraftspec.reference.controller_rules import (
    ENDPOINT_BROKER,
    ENDPOINT_CONTROLLER,
    broker_listed,
    effective_controller_id,
    endpoint_type_error,
)
from kraftspec.reference.errors import Errors
from kraftspec.reference.frozen import FrozenMap
from kraftspec.reference.metadata_version import is_controller_registration_supported

INT32_MIN = -(2**31)
ENDPOINT_TYPE_NAMES = {ENDPOINT_BROKER: "BROKER", ENDPOINT_CONTROLLER: "CONTROLLER"}
DIRECT_TO_CONTROLLER_MESSAGE = "Direct-to-controller communication is not supported with the current MetadataVersion."
REQUEST_PLACEHOLDER = "<request>"
"""Stands for the request's own description in a message (``RequestChannel.Request.toString``: the processor,
connection id and session object of one connection), which no trace states."""
ALTER_DENIED_MESSAGE = f"Request {REQUEST_PLACEHOLDER} needs ALTER permission."
NOT_AUTHORIZED_MESSAGE = f"Request {REQUEST_PLACEHOLDER} is not authorized."
"""The same denial in Kafka 3.9 and 4.0 (``AuthHelper.authorizeClusterOperation`` named no operation)."""
"""A controller's denial (Kafka 4.3 ``AuthHelper.authorizeClusterOperation``: ``ClusterAuthorizationException(s"Request
$request needs $operation permission.")``), kept in the response because ``DescribeClusterRequest.getErrorResponse``
uses ``ApiError.fromThrowable``, which keeps a message other than the error code's own."""
CLUSTER_OPERATIONS = (5, 7, 8, 9, 10, 11, 12)
"""``AclEntry.supportedOperations(CLUSTER)``: CREATE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS,
IDEMPOTENT_WRITE (``AclOperation`` codes)."""
CLUSTER_OPERATIONS_MASK = sum(1 << code for code in CLUSTER_OPERATIONS)  # 0x1fa0


class Receiver(Enum):
    """The kind of node that receives the request (which ``*Apis`` handles it)."""

    BROKER = "broker"
    CONTROLLER = "controller"


class UnsupportedVersionError(Exception):
    """Client-side ``UnsupportedVersionException`` raised by a generated serializer (§4.3)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeClusterRequest:
    """Request fields: IncludeClusterAuthorizedOperations (v0+), EndpointType int8 (v1+, default 1),
    IncludeFencedBrokers (v2+, KIP-1073)."""

    version: int
    include_cluster_authorized_operations: bool = False
    endpoint_type: int = ENDPOINT_BROKER
    include_fenced_brokers: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeClusterNode:
    """One DescribeClusterBroker entry; ``is_fenced`` exists from v2."""

    node_id: int
    host: str
    port: int
    rack: Optional[str] = None
    is_fenced: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeClusterResponse:
    """Response fields; an error response keeps every other field at its default (§4.2 step 2)."""

    error: Errors = Errors.NONE
    error_message: Optional[str] = None
    endpoint_type: int = ENDPOINT_BROKER
    cluster_id: str = ""
    controller_id: int = -1
    nodes: tuple[DescribeClusterNode, ...] = ()
    cluster_authorized_operations: int = INT32_MIN


@dataclass(frozen=True, slots=True, kw_only=True)
class ClusterImage:
    """What DescribeCluster reads: broker and controller registrations, the Raft leader, MV and cluster id."""

    cluster_id: str
    brokers: FrozenMap[int, BrokerRegistration]
    controllers: FrozenMap[int, ControllerRegistration]
    raft_leader_id: int = -1
    metadata_version: int = 30


@dataclass(frozen=True, slots=True, kw_only=True)
class Authorization:
    """Authorizer answers: DESCRIBE / ALTER on CLUSTER asked alone, and ``authorized_operations``, its answer for
    each operation asked in ``AuthHelper.authorizedOperations``' batch (bit ``1 << AclOperation code`` set: allowed),
    consulted if DESCRIBE is allowed."""

    describe_cluster: bool = True
    alter_cluster: bool = True
    authorized_operations: int = 0


DESCRIBE_CLUSTER_MAX_VERSION = 2  # DescribeClusterRequest.json "validVersions": "0-2" (Kafka 4.x)


def check_request_serializable(request: DescribeClusterRequest, max_version: int = DESCRIBE_CLUSTER_MAX_VERSION) -> None:
    """Generated serializer rule (§4.3): a non-default field at a version lacking it raises
    UnsupportedVersionException, in schema order (endpointType before includeFencedBrokers). A version the client
    does not know is refused before (``AbstractRequest``'s constructor: "The DESCRIBE_CLUSTER protocol does not
    support version N"); ``max_version`` is the newest the Kafka version knows (3.9: 1)."""
    if not 0 <= request.version <= max_version:
        raise UnsupportedVersionError(f"The DESCRIBE_CLUSTER protocol does not support version {request.version}")
    if request.version < 1 and request.endpoint_type != ENDPOINT_BROKER:
        raise UnsupportedVersionError(f"Attempted to write a non-default endpointType at version {request.version}")
    if request.version < 2 and request.include_fenced_brokers:
        raise UnsupportedVersionError(
            f"Attempted to write a non-default includeFencedBrokers at version {request.version}"
        )


def endpoint_type_name(endpoint_type: int) -> str:
    """``EndpointType.toString``: BROKER, CONTROLLER or UNKNOWN."""
    return ENDPOINT_TYPE_NAMES.get(endpoint_type, "UNKNOWN")


def _endpoint_error_response(request: DescribeClusterRequest, served: int) -> Optional[DescribeClusterResponse]:
    """The error-only response of §4.2 steps 1–2 (Kafka's messages), or None when the endpoint types agree."""
    error = endpoint_type_error(request.version, request.endpoint_type, served)
    if error == Errors.NONE:
        return None
    if request.endpoint_type not in ENDPOINT_TYPE_NAMES:
        message = f"Unsupported endpoint type {request.endpoint_type}"
    else:
        message = (
            f"The request was sent to an endpoint of type {endpoint_type_name(served)}, "
            f"but we wanted an endpoint of type {endpoint_type_name(request.endpoint_type)}"
        )
    return DescribeClusterResponse(error=error, error_message=message)


def in_order(ids: Iterable[int], order: Optional[tuple[int, ...]]) -> list[int]:
    """``ids`` in the order Kafka iterates its registrations: ``order`` (the image's ``HashMap`` order, which a
    trace states as ``describe_cluster``'s ``order``), ids it leaves out after it in id order; id order without it.

    Kafka lists nodes as it iterates ``ClusterImage.brokers()`` / ``controllers()`` (Kafka 4.3
    ``KRaftMetadataCache.getBrokerNodes``, ``ControllerRegistrationsPublisher.describeClusterControllers``):
    ``HashMap``s rebuilt by every ``ClusterDelta.apply``, whose order depends on the table size and the history
    of insertions (ids 1, 3000 and 3001 may come out as 3000, 3001, 1), a choice the trace states.
    """
    present = set(ids)
    if order is None:
        return sorted(present)
    listed = [i for i in dict.fromkeys(order) if i in present]
    return listed + sorted(present.difference(listed))


def broker_nodes(image: ClusterImage, listener: str, include_fenced: bool,
                 order: Optional[tuple[int, ...]] = None) -> tuple[DescribeClusterNode, ...]:
    """Broker nodes: registered brokers with an endpoint on ``listener``; fenced ones only if asked (§4.2)."""
    nodes = []
    for broker_id in in_order(image.brokers, order):
        registration = image.brokers[broker_id]
        endpoint = next((e for e in registration.listeners if e.name == listener), None)
        if endpoint is not None and broker_listed(registration.fenced, include_fenced):
            nodes.append(DescribeClusterNode(node_id=broker_id, host=endpoint.host, port=endpoint.port,
                                             rack=registration.rack, is_fenced=registration.fenced))
    return tuple(nodes)


def controller_nodes(image: ClusterImage, listener: str,
                     order: Optional[tuple[int, ...]] = None) -> tuple[DescribeClusterNode, ...]:
    """Controller nodes: every registered controller with an endpoint named ``listener``, regardless of
    liveness; rack null, isFenced false (``describeClusterControllers``, §4.2)."""
    nodes = []
    for controller_id in in_order(image.controllers, order):
        endpoint = next((e for e in image.controllers[controller_id].listeners if e.name == listener), None)
        if endpoint is not None:
            nodes.append(DescribeClusterNode(node_id=controller_id, host=endpoint.host, port=endpoint.port, rack=None,
                                             is_fenced=False))
    return tuple(nodes)


def random_unfenced_broker_id(image: ClusterImage, chooser: int) -> int:
    """``getRandomAliveBrokerId``: an unfenced broker (any listener) picked by ``chooser`` modulo their
    count in ascending id order; -1 when none (§4.2)."""
    unfenced = sorted(b for b, r in image.brokers.items() if not r.fenced)
    return unfenced[chooser % len(unfenced)] if unfenced else -1


def describe_cluster(
    image: ClusterImage,
    receiver: Receiver,
    request: DescribeClusterRequest,
    listener: str,
    authorization: Authorization = Authorization(),
    chooser: int = 0,
    order: Optional[tuple[int, ...]] = None,
    denial_names_operation: bool = True,
) -> DescribeClusterResponse:
    """DescribeCluster as handled by a broker or a controller (§4.2).

    Controller only: MV < 3.7-IV0 → UNSUPPORTED_VERSION, then ALTER on CLUSTER required (brokers need no
    permission; the denial's message names the request: :data:`ALTER_DENIED_MESSAGE`, before 4.1
    :data:`NOT_AUTHORIZED_MESSAGE`). Then the endpoint-type
    check, authorized operations (0 if DESCRIBE denied; else the operations the authorizer allows among those
    the CLUSTER resource supports, Kafka 4.3 ``AuthHelper.authorizedOperations``: ``authorized_operations`` is
    the authorizer's answer per operation, so bits of other operations never show), the nodes and the
    controller id (-1 unless among the nodes). Nodes are listed in ``order`` (:func:`in_order`).
    """
    if receiver is Receiver.CONTROLLER:
        # Before 3.7-IV0 controllers do not register, so a controller cannot list them: clients must ask a broker.
        if not is_controller_registration_supported(image.metadata_version):
            return DescribeClusterResponse(error=Errors.UNSUPPORTED_VERSION, error_message=DIRECT_TO_CONTROLLER_MESSAGE)
        # Talking to controllers directly is an administrator's business (ALTER on the cluster).
        if not authorization.alter_cluster:
            return DescribeClusterResponse(error=Errors.CLUSTER_AUTHORIZATION_FAILED, error_message=ALTER_DENIED_MESSAGE
                                           if denial_names_operation else NOT_AUTHORIZED_MESSAGE)
        served = ENDPOINT_CONTROLLER
    else:
        served = ENDPOINT_BROKER
    error_response = _endpoint_error_response(request, served)
    if error_response is not None:
        return error_response
    operations = INT32_MIN
    if request.include_cluster_authorized_operations:
        operations = authorization.authorized_operations & CLUSTER_OPERATIONS_MASK if authorization.describe_cluster else 0
    if receiver is Receiver.CONTROLLER:
        nodes = controller_nodes(image, listener, order)
        controller_id = image.raft_leader_id
    else:
        nodes = broker_nodes(image, listener, request.include_fenced_brokers, order)
        controller_id = random_unfenced_broker_id(image, chooser)
    return DescribeClusterResponse(
        endpoint_type=served,
        cluster_id=image.cluster_id,
        controller_id=effective_controller_id(controller_id, tuple(n.node_id for n in nodes)),
        nodes=nodes,
        cluster_authorized_operations=operations,
    )
