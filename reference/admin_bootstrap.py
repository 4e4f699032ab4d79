"""Admin client bootstrap: bootstrap.servers vs bootstrap.controllers, and how describeCluster is sent.

rules §4.3; ``clients/.../admin/internals/AdminBootstrapAddresses.java``,
``KafkaAdminClient.describeCluster``, ``core/.../ControllerApis.scala`` (the APIs a controller serves).
"""

from __future__ import annotations

from enum import Enum
from typing import Optional

from kraftspec.reference.controller_rules import ENDPOINT_BROKER, ENDPOINT_CONTROLLER
from kraftspec.reference.describe_cluster import DescribeClusterRequest

NEITHER_MESSAGE = "You must set either bootstrap.servers or bootstrap.controllers"
BOTH_MESSAGE = "You cannot set both bootstrap.servers and bootstrap.controllers"
FENCED_FROM_CONTROLLER_MESSAGE = "Cannot request fenced brokers from controller endpoint"

# Admin calls whose RPC ``ControllerApis.handle`` dispatches (4.x); any other call is not offered by a
# controller's ApiVersions and fails on the client with UnsupportedVersionException.
CONTROLLER_ADMIN_APIS: frozenset[str] = frozenset({
    "CreateTopics", "DeleteTopics", "CreatePartitions", "AlterConfigs", "IncrementalAlterConfigs",
    "DescribeConfigs", "AlterClientQuotas", "AlterPartitionReassignments", "ListPartitionReassignments",
    "AlterUserScramCredentials", "CreateDelegationToken", "RenewDelegationToken", "ExpireDelegationToken",
    "DescribeAcls", "CreateAcls", "DeleteAcls", "ElectLeaders", "UpdateFeatures", "DescribeCluster",
    "DescribeQuorum", "UnregisterBroker", "AddRaftVoter", "RemoveRaftVoter", "ApiVersions",
})


class ConfigError(Exception):
    """``ConfigException`` from the admin client's configuration."""


class IllegalArgumentError(Exception):
    """``IllegalArgumentException`` raised by the admin client before sending."""


class BootstrapMode(Enum):
    """Which bootstrap setting the admin client uses."""

    SERVERS = "bootstrap.servers"
    CONTROLLERS = "bootstrap.controllers"


def bootstrap_error(servers_set: bool, controllers_set: bool) -> Optional[str]:
    """The ConfigException message for the two settings, or None when exactly one is set (§4.3)."""
    if servers_set and controllers_set:
        return BOTH_MESSAGE
    if not servers_set and not controllers_set:
        return NEITHER_MESSAGE
    return None


def bootstrap_mode(bootstrap_servers: tuple[str, ...], bootstrap_controllers: tuple[str, ...]) -> BootstrapMode:
    """``AdminBootstrapAddresses.fromConfig``: exactly one of the two lists (both default empty) must be set (§4.3)."""
    message = bootstrap_error(bool(bootstrap_servers), bool(bootstrap_controllers))
    if message is not None:
        raise ConfigError(message)
    return BootstrapMode.SERVERS if bootstrap_servers else BootstrapMode.CONTROLLERS


def admin_api_allowed(mode: BootstrapMode, api: str) -> bool:
    """Whether an admin RPC can be served: brokers serve all; controllers only ``CONTROLLER_ADMIN_APIS``."""
    return mode is BootstrapMode.SERVERS or api in CONTROLLER_ADMIN_APIS


def describe_cluster_request(
    mode: BootstrapMode, version: int, include_fenced_brokers: bool, include_authorized_operations: bool = False
) -> DescribeClusterRequest:
    """``describeCluster``'s request: endpointType 2 with bootstrap.controllers, else 1; asking a controller
    endpoint for fenced brokers is an IllegalArgumentException before anything is sent (§4.3)."""
    if mode is BootstrapMode.CONTROLLERS and include_fenced_brokers:
        raise IllegalArgumentError(FENCED_FROM_CONTROLLER_MESSAGE)
    return DescribeClusterRequest(
        version=version,
        include_cluster_authorized_operations=include_authorized_operations,
        endpoint_type=ENDPOINT_CONTROLLER if mode is BootstrapMode.CONTROLLERS else ENDPOINT_BROKER,
        include_fenced_brokers=include_fenced_brokers,
    )


def falls_back_to_metadata(mode: BootstrapMode, include_fenced_brokers: bool, already_using_metadata: bool) -> bool:
    """``handleUnsupportedVersionException``: retry with a Metadata request only with bootstrap.servers,
    only once, and not when fenced brokers were requested (the error is surfaced) (§4.3)."""
    return mode is BootstrapMode.SERVERS and not include_fenced_brokers and not already_using_metadata
