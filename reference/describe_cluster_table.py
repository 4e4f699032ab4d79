"""The DescribeCluster outcome table: version × receiver × EndpointType × IncludeFencedBrokers.

Each cell runs the request serializer (rules §4.3) and then ``describe_cluster`` (§4.2) on
one fixed example cluster, so the table is the reference's own answer. ``kraftspec table
describe-cluster`` prints it.
"""

from __future__ import annotations

from dataclasses import dataclass

from kraftspec.reference.broker_registration import BrokerRegistration
from kraftspec.reference.controller_registration import ControllerRegistration
from kraftspec.reference.describe_cluster import (
    ClusterImage,
    DescribeClusterRequest,
    DescribeClusterResponse,
    Receiver,
    UnsupportedVersionError,
    check_request_serializable,
    describe_cluster,
)
from kraftspec.reference.errors import Errors
from kraftspec.reference.frozen import FrozenMap
from kraftspec.reference.records import Endpoint

VERSIONS = (0, 1, 2)
ENDPOINT_TYPES = (1, 2, 123)  # BROKER, CONTROLLER, an unknown value
INCLUDE_FENCED = (False, True)
BROKER_LISTENER = "PLAINTEXT"
CONTROLLER_LISTENER = "CONTROLLER"


def example_image() -> ClusterImage:
    """Brokers 1 (unfenced), 2 (fenced), 3 (unfenced, no PLAINTEXT endpoint); controllers 3000 (Raft
    leader), 3001, and 3002 (no CONTROLLER endpoint); MV 4.3-IV0."""
    def broker(broker_id: int, fenced: bool, listener: str) -> BrokerRegistration:
        """A broker with one endpoint on ``listener``."""
        return BrokerRegistration(
            broker_id=broker_id, epoch=100 + broker_id, incarnation_id=f"b{broker_id}", fenced=fenced,
            listeners=(Endpoint(name=listener, host=f"broker{broker_id}", port=9092),),
        )

    def controller(controller_id: int, listener: str) -> ControllerRegistration:
        """A controller with one endpoint on ``listener``."""
        endpoint = Endpoint(name=listener, host=f"ctl{controller_id}", port=9093)
        return ControllerRegistration(controller_id=controller_id, incarnation_id=f"c{controller_id}",
                                      listeners=(endpoint,))

    return ClusterImage(
        cluster_id="QtNwvtfVQ3GEFpzOmDEE-w",
        brokers=FrozenMap({1: broker(1, False, BROKER_LISTENER), 2: broker(2, True, BROKER_LISTENER), 3: broker(3, False, "INTERNAL")}),
        controllers=FrozenMap({3000: controller(3000, CONTROLLER_LISTENER), 3001: controller(3001, CONTROLLER_LISTENER), 3002: controller(3002, "OTHER")}),
        raft_leader_id=3000,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Cell:
    """One combination: whether the Java client can encode it (``client``: ``sent`` or the
    UnsupportedVersionException message) and what the receiver computes from those request fields
    (``server``: an error name, or the nodes listed and the controller id). Fields a version lacks never
    reach a server on the wire; the server column is what Kafka's handler does with them in memory, as
    its unit tests (scenarios 124, 125) call it."""

    version: int
    receiver: Receiver
    endpoint_type: int
    include_fenced: bool
    client: str
    server: str


def _describe(response: DescribeClusterResponse) -> str:
    """A cell's server text: the error name, or the nodes (fenced marked) and the controller id."""
    if response.error != Errors.NONE:
        return response.error.name
    nodes = ", ".join(f"{n.node_id}{' (fenced)' if n.is_fenced else ''}" for n in response.nodes)
    return f"nodes [{nodes}] controllerId {response.controller_id}"


def cell(version: int, receiver: Receiver, endpoint_type: int, include_fenced: bool, chooser: int = 0) -> Cell:
    """The outcome of one request against ``example_image()`` (listener per receiver, chooser index 0)."""
    request = DescribeClusterRequest(version=version, endpoint_type=endpoint_type, include_fenced_brokers=include_fenced)
    try:
        check_request_serializable(request)
        client = "sent"
    except UnsupportedVersionError as exc:
        client = f"UnsupportedVersionException: {exc}"
    listener = CONTROLLER_LISTENER if receiver is Receiver.CONTROLLER else BROKER_LISTENER
    response = describe_cluster(example_image(), receiver, request, listener, chooser=chooser)
    return Cell(version=version, receiver=receiver, endpoint_type=endpoint_type, include_fenced=include_fenced,
                client=client, server=_describe(response))


def table() -> tuple[Cell, ...]:
    """Every cell, ordered by version, receiver, endpoint type, include-fenced."""
    return tuple(
        cell(v, r, t, f) for v in VERSIONS for r in (Receiver.BROKER, Receiver.CONTROLLER) for t in ENDPOINT_TYPES for f in INCLUDE_FENCED
    )


def rows() -> tuple[tuple[str, str, str, str, str, str], ...]:
    """The table as string rows: version, receiver, endpointType, includeFencedBrokers, client, server."""
    return tuple(
        (str(c.version), c.receiver.value, str(c.endpoint_type), str(c.include_fenced).lower(), c.client, c.server)
        for c in table()
    )


def markdown() -> str:
    """The table as Markdown, one row per cell."""
    header = "| version | receiver | endpointType | includeFencedBrokers | client | server |\n|---|---|---|---|---|---|\n"
    return header + "".join(f"| {' | '.join(row)} |\n" for row in rows())
