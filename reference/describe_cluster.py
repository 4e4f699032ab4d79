"""DescribeCluster (apiKey 60, v0–v2) as a pure function of the cluster image and the receiving node.

kraft-semantics §4.2 (and §4.3 for the request serializer rule), Appendix B item 12;
``AuthHelper.computeDescribeClusterResponse``, ``KafkaApis.handleDescribeCluster``,
``ControllerApis.handleDescribeCluster``. The broker's "random unfenced broker" controller id is chosen
by an index argument, never by randomness here.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Optional

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
from kraftspec.reference.frozen import FrozenMap, slotted
from kraftspec.reference.metadata_version import is_controller_registration_supported

INT32_MIN = -(2**31)
ENDPOINT_TYPE_NAMES = {ENDPOINT_BROKER: "BROKER", ENDPOINT_CONTROLLER: "CONTROLLER"}
DIRECT_TO_CONTROLLER_MESSAGE = "Direct-to-controller communication is not supported with the current MetadataVersion."


class Receiver(Enum):
    """The kind of node that receives the request (which ``*Apis`` handles it)."""

    BROKER = "broker"
    CONTROLLER = "controller"


class UnsupportedVersionError(Exception):
    """Client-side ``UnsupportedVersionException`` raised by a generated serializer (§4.3)."""


@slotted
@dataclass(frozen=True)
class DescribeClusterRequest:
    """Request fields: IncludeClusterAuthorizedOperations (v0+), EndpointType int8 (v1+, default 1),
    IncludeFencedBrokers (v2+, KIP-1073)."""

    version: int
    include_cluster_authorized_operations: bool = False
    endpoint_type: int = ENDPOINT_BROKER
    include_fenced_brokers: bool = False


@slotted
@dataclass(frozen=True)
class DescribeClusterNode:
    """One DescribeClusterBroker entry; ``is_fenced`` exists from v2."""

    node_id: int
    host: str
    port: int
    rack: Optional[str] = None
    is_fenced: bool = False


@slotted
@dataclass(frozen=True)
class DescribeClusterResponse:
    """Response fields; an error response keeps every other field at its default (§4.2 step 2)."""

    error: Errors = Errors.NONE
    error_message: Optional[str] = None
    endpoint_type: int = ENDPOINT_BROKER
    cluster_id: str = ""
    controller_id: int = -1
    nodes: tuple[DescribeClusterNode, ...] = ()
    cluster_authorized_operations: int = INT32_MIN


@slotted
@dataclass(frozen=True)
class ClusterImage:
    """What DescribeCluster reads: broker and controller registrations, the Raft leader, MV and cluster id."""

    cluster_id: str
    brokers: FrozenMap[int, BrokerRegistration]
    controllers: FrozenMap[int, ControllerRegistration]
    raft_leader_id: int = -1
    metadata_version: int = 30


@slotted
@dataclass(frozen=True)
class Authorization:
    """Authorizer answers: DESCRIBE / ALTER on CLUSTER, and the operations bitfield if DESCRIBE is allowed."""

    describe_cluster: bool = True
    alter_cluster: bool = True
    authorized_operations: int = 0


def check_request_serializable(request: DescribeClusterRequest) -> None:
    """Generated serializer rule (§4.3): a non-default field at a version lacking it raises
    UnsupportedVersionException, in schema order (endpointType before includeFencedBrokers)."""
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


def broker_nodes(image: ClusterImage, listener: str, include_fenced: bool) -> tuple[DescribeClusterNode, ...]:
    """Broker nodes: registered brokers with an endpoint on ``listener``; fenced ones only if asked (§4.2)."""
    nodes = []
    for broker_id in sorted(image.brokers):
        registration = image.brokers[broker_id]
        endpoint = next((e for e in registration.listeners if e.name == listener), None)
        if endpoint is not None and broker_listed(registration.fenced, include_fenced):
            nodes.append(DescribeClusterNode(broker_id, endpoint.host, endpoint.port, registration.rack, registration.fenced))
    return tuple(nodes)


def controller_nodes(image: ClusterImage, listener: str) -> tuple[DescribeClusterNode, ...]:
    """Controller nodes: every registered controller with an endpoint named ``listener``, regardless of
    liveness; rack null, isFenced false (``describeClusterControllers``, §4.2)."""
    nodes = []
    for controller_id in sorted(image.controllers):
        endpoint = next((e for e in image.controllers[controller_id].listeners if e.name == listener), None)
        if endpoint is not None:
            nodes.append(DescribeClusterNode(controller_id, endpoint.host, endpoint.port, None, False))
    return tuple(nodes)


def random_unfenced_broker_id(image: ClusterImage, chooser: int) -> int:
    """``getRandomAliveBrokerId``: an unfenced broker (any listener) picked by ``chooser`` modulo their
    count in ascending id order; -1 when none (Appendix B item 12)."""
    unfenced = sorted(b for b, r in image.brokers.items() if not r.fenced)
    return unfenced[chooser % len(unfenced)] if unfenced else -1


def describe_cluster(
    image: ClusterImage,
    receiver: Receiver,
    request: DescribeClusterRequest,
    listener: str,
    authorization: Authorization = Authorization(),
    chooser: int = 0,
) -> DescribeClusterResponse:
    """DescribeCluster as handled by a broker or a controller (§4.2).

    Controller only: MV < 3.7-IV0 → UNSUPPORTED_VERSION, then ALTER on CLUSTER required (brokers need no
    permission; the denial's message names the request and is left None here). Then the endpoint-type
    check, authorized operations (0 if DESCRIBE denied), the nodes and the controller id (-1 unless
    among the nodes).
    """
    if receiver is Receiver.CONTROLLER:
        if not is_controller_registration_supported(image.metadata_version):
            return DescribeClusterResponse(error=Errors.UNSUPPORTED_VERSION, error_message=DIRECT_TO_CONTROLLER_MESSAGE)
        if not authorization.alter_cluster:
            return DescribeClusterResponse(error=Errors.CLUSTER_AUTHORIZATION_FAILED)
        served = ENDPOINT_CONTROLLER
    else:
        served = ENDPOINT_BROKER
    error_response = _endpoint_error_response(request, served)
    if error_response is not None:
        return error_response
    operations = INT32_MIN
    if request.include_cluster_authorized_operations:
        operations = authorization.authorized_operations if authorization.describe_cluster else 0
    if receiver is Receiver.CONTROLLER:
        nodes = controller_nodes(image, listener)
        controller_id = image.raft_leader_id
    else:
        nodes = broker_nodes(image, listener, request.include_fenced_brokers)
        controller_id = random_unfenced_broker_id(image, chooser)
    return DescribeClusterResponse(
        endpoint_type=served,
        cluster_id=image.cluster_id,
        controller_id=effective_controller_id(controller_id, tuple(n.node_id for n in nodes)),
        nodes=nodes,
        cluster_authorized_operations=operations,
    )
