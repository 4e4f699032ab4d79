"""kafka-cluster.sh output: ``list-endpoints``, ``cluster-id`` and ``unregister`` (4.3).

rules §4.4; ``tools/src/main/java/org/apache/kafka/tools/ClusterTool.java``. The functions take
what the admin client returned (nodes, cluster id, the error) and return the exact text printed.
"""

from __future__ import annotations

from typing import Optional

from kraftspec.reference.describe_cluster import DescribeClusterNode
from kraftspec.reference.errors import Errors

INCLUDE_FENCED_WITH_CONTROLLER_MESSAGE = (
    "The option --include-fenced-brokers is only supported with --bootstrap-server option"
)
NO_CLUSTER_ID_MESSAGE = "No cluster ID found. The Kafka version is probably too old."
UNREGISTER_UNSUPPORTED_MESSAGE = "The target cluster does not support the broker unregistration API."


class ToolArgumentError(Exception):
    """``IllegalArgumentException`` thrown by ClusterTool for an invalid option combination."""


class ToolConnectionError(Exception):
    """argparse4j refuses the command line: exactly one of --bootstrap-server / --bootstrap-controller."""


def _pad(value: str, width: int) -> str:
    """Java ``%-Ns``: left-justified to at least ``width`` characters, never truncated."""
    return value.ljust(width)


def check_connection_options(bootstrap_server: Optional[str], bootstrap_controller: Optional[str]) -> None:
    """The required mutually exclusive group of -b/--bootstrap-server and -C/--bootstrap-controller (§4.4).

    The messages follow argparse4j's wording (as Python argparse); they were not checked against Kafka's output.
    """
    if bootstrap_server is not None and bootstrap_controller is not None:
        raise ToolConnectionError("argument --bootstrap-controller/-C: not allowed with argument --bootstrap-server/-b")
    if bootstrap_server is None and bootstrap_controller is None:
        raise ToolConnectionError("one of the arguments --bootstrap-server/-b --bootstrap-controller/-C is required")


def shows_state_column(list_controller_endpoints: bool) -> bool:
    """The STATE column appears only with --bootstrap-server (§4.4)."""
    return not list_controller_endpoints


def shows_rack_column(nodes: tuple[DescribeClusterNode, ...]) -> bool:
    """The RACK column is printed whatever the nodes' racks, ``null`` for a node without one (§4.4, scenarios
    127 and 130). Dropping it when no node has a rack, as the issue expected, is not what ClusterTool does."""
    return True


def rack_width(nodes: tuple[DescribeClusterNode, ...]) -> int:
    """RACK width: the longest non-null rack, 10 when no node has a rack (the column itself is always printed)."""
    racks = [len(n.rack) for n in nodes if n.rack is not None]
    return max(racks) if racks else 10


def list_endpoints_table(nodes: tuple[DescribeClusterNode, ...], list_controller_endpoints: bool) -> str:
    """``listEndpoints``' printf table: ``ID HOST PORT RACK [STATE] ENDPOINT_TYPE``, widths 10 / longest
    host (100 if none) / 10 / ``rack_width`` / [10] / 15, one space between, each line ending in a newline.
    A null rack prints ``null``; rows in ascending id order (the hash map's order for small ids)."""
    host_width = max((len(n.host) for n in nodes), default=100)
    widths = [10, host_width, 10]
    header = ["ID", "HOST", "PORT"]
    rack = shows_rack_column(nodes)
    if rack:
        widths.append(rack_width(nodes))
        header.append("RACK")
    state = shows_state_column(list_controller_endpoints)
    if state:
        widths.append(10)
        header.append("STATE")
    widths.append(15)
    header.append("ENDPOINT_TYPE")
    lines = [header]
    for node in sorted(nodes, key=lambda n: n.node_id):
        row = [str(node.node_id), node.host, str(node.port)]
        if rack:
            row.append("null" if node.rack is None else node.rack)
        if state:
            row.append("fenced" if node.is_fenced else "unfenced")
        row.append("controller" if list_controller_endpoints else "broker")
        lines.append(row)
    return "".join(" ".join(_pad(v, w) for v, w in zip(line, widths)) + "\n" for line in lines)


def list_endpoints(
    nodes: tuple[DescribeClusterNode, ...],
    list_controller_endpoints: bool,
    include_fenced_brokers: bool,
    unsupported_version_message: Optional[str] = None,
) -> str:
    """``list-endpoints``: --include-fenced-brokers with --bootstrap-controller is refused before any call;
    an UnsupportedVersionException's message is printed instead of the table (§4.4)."""
    if include_fenced_brokers and list_controller_endpoints:
        raise ToolArgumentError(INCLUDE_FENCED_WITH_CONTROLLER_MESSAGE)
    if unsupported_version_message is not None:
        return unsupported_version_message + "\n"
    return list_endpoints_table(nodes, list_controller_endpoints)


def cluster_id_output(cluster_id: Optional[str]) -> str:
    """``cluster-id``: ``Cluster ID: <id>``, or the too-old message when the cluster returns none (§4.4)."""
    return f"Cluster ID: {cluster_id}\n" if cluster_id is not None else NO_CLUSTER_ID_MESSAGE + "\n"


def unregister_output(broker_id: int, error: Errors) -> str:
    """``unregister --id N``: success text, or the not-supported text for UNSUPPORTED_VERSION; any other
    error propagates (raised as ``RuntimeError`` naming the code) (§4.4)."""
    if error == Errors.NONE:
        return f"Broker {broker_id} is no longer registered.\n"
    if error == Errors.UNSUPPORTED_VERSION:
        return UNREGISTER_UNSUPPORTED_MESSAGE + "\n"
    raise RuntimeError(f"unregister failed with {error.name}")
