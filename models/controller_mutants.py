"""Deliberately wrong variants of the controller-registration, DescribeCluster, admin-bootstrap and
kafka-cluster rules, with the layers expected to catch each (``tests/test_controller_mutants.py``)."""

from __future__ import annotations

import math
from typing import Optional

from kraftspec.mutants import Mutant
from kraftspec.reference.controller_registration import (
    ERROR_MESSAGES,
    KAFKA_4_3,
    SUCCESS_MESSAGE,
    ControllerRegistrationRequest,
    ControllerRegistrationResponse,
    ManagerState,
    ControllerBehaviour,
)
from kraftspec.reference.controller_rules import backoff_ms
from kraftspec.reference.frozen import evolve
from kraftspec.reference.metadata_version import is_controller_registration_supported
from kraftspec.reference.records import RegisterControllerRecord
from kraftspec.reference.admin_bootstrap import NEITHER_MESSAGE
from kraftspec.reference.describe_cluster import DescribeClusterNode
from kraftspec.reference.errors import Errors


def registered_if_any_registration(log_incarnation: Optional[str], own_incarnation: str) -> bool:
    """Wrong: any registration for our id counts, so a stale incarnation's record is accepted."""
    return log_incarnation is not None


def fenced_always_listed(is_fenced: bool, include_fenced_brokers: bool) -> bool:
    """Wrong: fenced brokers are returned whatever the request asked (so also to v0/v1 requests)."""
    return True


def state_column_always(list_controller_endpoints: bool) -> bool:
    """Wrong: the STATE column is printed for controller endpoints too."""
    return True


def rack_column_only_with_racks(nodes: tuple[DescribeClusterNode, ...]) -> bool:
    """Wrong: the RACK column is dropped when no node has a rack."""
    return any(node.rack is not None for node in nodes)


def accept_both_bootstrap_settings(servers_set: bool, controllers_set: bool) -> Optional[str]:
    """Wrong: setting both bootstrap.servers and bootstrap.controllers is accepted."""
    return NEITHER_MESSAGE if not servers_set and not controllers_set else None


def unknown_type_as_mismatched(request_version: int, requested_type: int, served_type: int) -> Errors:
    """Wrong: an unknown endpoint type answers MISMATCHED_ENDPOINT_TYPE instead of UNSUPPORTED_ENDPOINT_TYPE."""
    if requested_type == served_type:
        return Errors.NONE
    return Errors.INVALID_REQUEST if request_version == 0 else Errors.MISMATCHED_ENDPOINT_TYPE


def backoff_uncapped(failed_attempts: int, jitter_draw: float) -> int:
    """Wrong: exponential backoff without the 120000 ms cap."""
    return int((0.98 + 0.04 * jitter_draw) * 100 * math.pow(2, failed_attempts))


def zk_migration_ready_copied(
    request: ControllerRegistrationRequest, mv: int, is_active: bool, authorized: bool = True,
    behaviour: ControllerBehaviour = KAFKA_4_3,
) -> tuple[ControllerRegistrationResponse, tuple[RegisterControllerRecord, ...]]:
    """Wrong for 4.x: the record copies the request's ZkMigrationReady, as Kafka 3.9 did (issue 17)."""
    if not authorized:
        error = Errors.CLUSTER_AUTHORIZATION_FAILED
    elif not is_active:
        error = Errors.NOT_CONTROLLER
    elif not is_controller_registration_supported(mv):
        error = Errors.UNSUPPORTED_VERSION
    else:
        record = RegisterControllerRecord(controller_id=request.controller_id, incarnation_id=request.incarnation_id,
                                          zk_migration_ready=request.zk_migration_ready,
                                          end_points=request.listeners, features=request.features, version=0)
        return ControllerRegistrationResponse(error=Errors.NONE, message=SUCCESS_MESSAGE), (record,)
    return ControllerRegistrationResponse(error=error, message=ERROR_MESSAGES[error]), ()


def due_resend_kept(
    state: ManagerState, error: Errors, now_ms: int, jitter_draw: float, behaviour: ControllerBehaviour = KAFKA_4_3,
) -> tuple[ManagerState, tuple[ControllerRegistrationRequest, ...]]:
    """Wrong: a success handled at or after the resend deadline leaves the resend scheduled (Kafka's event queue
    fires the due resend first)."""
    if error != Errors.REQUEST_TIMED_OUT or behaviour.timeout_clears_pending:
        state = evolve(state, pending_rpcs=state.pending_rpcs - 1)
    if error == Errors.NONE:
        return evolve(state, successful_rpcs=state.successful_rpcs + 1, failed_rpcs=0), ()
    delay = backoff_ms(state.failed_rpcs, jitter_draw)
    return evolve(state, failed_rpcs=state.failed_rpcs + 1, resend_deadline_ms=now_ms + delay), ()


MUTANTS: list[Mutant] = [
    Mutant("controller-stale-incarnation-accepted", "controller",
           "registeredInLog ignores the incarnation id, so a delayed record of an older incarnation wins",
           "kraftspec.reference.controller_rules:is_registered_in_log", registered_if_any_registration,
           ("scenario", "model", "crosshair", "agree")),
    Mutant("controller-fenced-brokers-to-v1", "controller",
           "DescribeCluster lists fenced brokers without IncludeFencedBrokers (e.g. to a v1 request)",
           "kraftspec.reference.controller_rules:broker_listed", fenced_always_listed,
           ("scenario", "crosshair")),
    Mutant("controller-state-column-for-controllers", "controller",
           "kafka-cluster list-endpoints prints the STATE column with --bootstrap-controller",
           "kraftspec.reference.cluster_tool:shows_state_column", state_column_always,
           ("scenario", "crosshair")),
    Mutant("controller-rack-column-only-with-racks", "controller",
           "kafka-cluster list-endpoints drops the RACK column when no node has a rack (Kafka prints it, null per node)",
           "kraftspec.reference.cluster_tool:shows_rack_column", rack_column_only_with_racks,
           ("scenario", "crosshair")),
    Mutant("controller-both-bootstrap-settings", "controller",
           "the admin client accepts bootstrap.servers and bootstrap.controllers together",
           "kraftspec.reference.admin_bootstrap:bootstrap_error", accept_both_bootstrap_settings,
           ("scenario", "crosshair")),
    Mutant("controller-unknown-endpoint-mismatched", "controller",
           "an unknown EndpointType answers MISMATCHED_ENDPOINT_TYPE (114) instead of UNSUPPORTED_ENDPOINT_TYPE (115)",
           "kraftspec.reference.controller_rules:endpoint_type_error", unknown_type_as_mismatched,
           ("scenario", "crosshair")),
    Mutant("controller-backoff-uncapped", "controller",
           "the registration resend backoff grows past 120000 ms",
           "kraftspec.reference.controller_rules:backoff_ms", backoff_uncapped,
           ("scenario", "crosshair")),
    Mutant("controller-zk-migration-ready-copied", "controller",
           "the RegisterControllerRecord copies the request's ZkMigrationReady (3.9's rule) where 4.x writes false; "
           "Kafka 4.3 catches it (tests/test_kafka_controller.py)",
           "kraftspec.reference.controller_registration:register_controller", zk_migration_ready_copied,
           ("scenario",)),
    Mutant("controller-due-resend-kept", "controller",
           "a response handled at or after the resend deadline leaves the resend scheduled; Kafka 4.3 catches it "
           "(tests/test_kafka_controller.py)",
           "kraftspec.reference.controller_registration:on_response", due_resend_kept,
           ("scenario",)),
]
