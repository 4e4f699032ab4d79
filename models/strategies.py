"""Public Hypothesis strategies for other projects' property-test suites, one import for every component.

``from kraftspec.models.strategies import heartbeat_requests, partition_registrations, logs`` and so
on; each component's module (``broker_strategies``, ``partition_strategies``, ``raft_strategies``,
``controller_strategies``) documents its own.
"""

from __future__ import annotations

from kraftspec.models.broker_strategies import (
    heartbeat_requests,
    leaderless_cluster,
    metadata_versions,
    reachable_clusters,
    registration_requests,
    running_cluster,
)
from kraftspec.models.controller_strategies import (
    broker_registrations,
    cluster_images,
    controller_registrations,
    describe_cluster_requests,
    endpoints,
)
from kraftspec.models.partition_strategies import alter_partition_requests, broker_views, partition_registrations
from kraftspec.models.raft_strategies import epoch_sequences, epochs, fetch_requests, logs, replica_ids, vote_requests

__all__ = [
    "alter_partition_requests", "broker_registrations", "broker_views", "cluster_images", "controller_registrations",
    "describe_cluster_requests", "endpoints", "epoch_sequences", "epochs", "fetch_requests", "heartbeat_requests",
    "leaderless_cluster", "logs", "metadata_versions", "partition_registrations", "reachable_clusters",
    "registration_requests", "replica_ids", "running_cluster", "vote_requests",
]
