"""CrossHair contracts (PEP316) on the small rules of controller registration, DescribeCluster, the admin
bootstrap and kafka-cluster (rules §4.1–§4.4).

Each contract calls the reference rule through its module, so an applied mutant (``kraftspec.mutants``,
``kraftspec.prove``) is what CrossHair explores. Check with
``python -m crosshair check --analysis_kind=PEP316 --per_condition_timeout=5 kraftspec.proofs.controller``.
"""

from __future__ import annotations

from typing import Optional

from kraftspec.reference import admin_bootstrap, cluster_tool, controller_rules
from kraftspec.reference.describe_cluster import DescribeClusterNode


def endpoint_type_error(request_version: int, requested_type: int, served_type: int) -> int:
    """§4.2 steps 1–2: no error exactly when the types agree; v0 errors are INVALID_REQUEST (42);
    v1+ errors are MISMATCHED (114) for a known type and UNSUPPORTED (115) for an unknown one.

    pre: 0 <= request_version <= 2
    pre: served_type in (1, 2)
    pre: -128 <= requested_type <= 127
    post: (__return__ == 0) == (requested_type == served_type)
    post: request_version != 0 or __return__ in (0, 42)
    post: request_version == 0 or __return__ in (0, 114, 115)
    post: request_version == 0 or (__return__ == 115) == (requested_type not in (1, 2))
    """
    return int(controller_rules.endpoint_type_error(request_version, requested_type, served_type))


def broker_listed(is_fenced: bool, include_fenced: bool, request_version: int) -> bool:
    """§4.2: a fenced broker is listed only with IncludeFencedBrokers, which only a v2 request can carry;
    so no v0/v1 request ever lists a fenced broker.

    pre: 0 <= request_version <= 2
    pre: request_version == 2 or not include_fenced
    post: __return__ == ((not is_fenced) or include_fenced)
    post: not (is_fenced and request_version < 2 and __return__)
    """
    return controller_rules.broker_listed(is_fenced, include_fenced)


def effective_controller_id(controller_id: int, a: int, b: int) -> int:
    """§4.2 step 4: the returned controller id is -1 or one of the listed nodes.

    pre: controller_id >= -1 and a >= 0 and b >= 0
    post: __return__ == -1 or __return__ in (a, b)
    post: controller_id == -1 or (controller_id in (a, b)) == (__return__ == controller_id)
    """
    return controller_rules.effective_controller_id(controller_id, (a, b))


def _concrete(value: int, bound: int) -> int:
    """``value`` (0..bound) as a plain int, by an explicit case split: CrossHair then explores one path per
    value instead of non-linear float arithmetic it cannot decide."""
    for candidate in range(bound + 1):
        if value == candidate:
            return candidate
    raise ValueError(f"{value} is outside 0..{bound}")


# Draws of ``ThreadLocalRandom.nextDouble``'s unit interval: both ends and the middle (the factor is linear in it).
JITTER_DRAWS = (0.0, 0.5, 1.0 - 2.0**-53)
INCARNATIONS = (None, "incA", "incB")


def backoff_ms(failed_attempts: int, draw: int) -> int:
    """§4.1: below the cap (n ≤ 10) the backoff is 100 ms × 2^n with ±2 % jitter.

    pre: 0 <= failed_attempts <= 10
    pre: 0 <= draw <= 2
    post: 98 * 2 ** failed_attempts <= __return__ <= 102 * 2 ** failed_attempts
    post: __return__ < 120000
    """
    return controller_rules.backoff_ms(_concrete(failed_attempts, 10), JITTER_DRAWS[_concrete(draw, 2)])


def backoff_ms_at_cap(attempts_past_cap: int, draw: int) -> int:
    """§4.1: from the 12th failure on (2^11 × 100 > 120000) the backoff stays within jitter of the cap.

    pre: attempts_past_cap >= 0
    pre: 0 <= draw <= 2
    post: 117599 <= __return__ <= 120000
    """
    return controller_rules.backoff_ms(11 + attempts_past_cap, JITTER_DRAWS[_concrete(draw, 2)])


def is_registered_in_log(log_incarnation: int, own_incarnation: int) -> bool:
    """§4.1: registered only if the log's registration (none, incA or incB) carries the running incarnation.

    pre: 0 <= log_incarnation <= 2
    pre: 1 <= own_incarnation <= 2
    post: __return__ == (log_incarnation == own_incarnation)
    """
    return controller_rules.is_registered_in_log(INCARNATIONS[log_incarnation], str(INCARNATIONS[own_incarnation]))


def should_send_registration(registered: bool, channel_started: bool, mv_supported: bool, pending_rpcs: int) -> bool:
    """§4.1: a request is sent only when unregistered, started, MV ≥ 3.7-IV0 and none is pending.

    pre: pending_rpcs >= 0
    post: __return__ == ((not registered) and channel_started and mv_supported and pending_rpcs == 0)
    """
    return controller_rules.should_send_registration(registered, channel_started, mv_supported, pending_rpcs)


def bootstrap_error(servers_set: bool, controllers_set: bool) -> Optional[str]:
    """§4.3: exactly one of bootstrap.servers / bootstrap.controllers is accepted.

    post: (__return__ is None) == (servers_set != controllers_set)
    """
    return admin_bootstrap.bootstrap_error(servers_set, controllers_set)


def shows_rack_column(racks: list[Optional[str]]) -> bool:
    """§4.4: the RACK column is printed whatever the racks, also when no node has one.

    post: __return__
    """
    nodes = tuple(DescribeClusterNode(node_id=i, host="h", port=9092, rack=rack) for i, rack in enumerate(racks))
    return cluster_tool.shows_rack_column(nodes)


def shows_state_column(list_controller_endpoints: bool) -> bool:
    """§4.4: the STATE column is printed only with --bootstrap-server.

    post: __return__ == (not list_controller_endpoints)
    """
    return cluster_tool.shows_state_column(list_controller_endpoints)

