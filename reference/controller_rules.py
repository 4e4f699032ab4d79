"""Small predicates and arithmetic of controller registration and DescribeCluster (plain ints/bools).

Kept apart from the transitions so CrossHair can reach them (``kraftspec.proofs.controller``).
Sources: rules §4.1–§4.3; ``ControllerRegistrationManager.scala``, ``AuthHelper.scala``,
``KafkaApis.handleDescribeCluster``, ``clients/.../utils/ExponentialBackoff.java``.
"""

from __future__ import annotations

import math
from typing import Optional

from kraftspec.reference.errors import Errors

BACKOFF_INITIAL_MS = 100
BACKOFF_MULTIPLIER = 2
BACKOFF_MAX_MS = 120000
BACKOFF_JITTER = 0.02

ENDPOINT_BROKER = 1
ENDPOINT_CONTROLLER = 2


EXP_MAX = math.log(BACKOFF_MAX_MS / BACKOFF_INITIAL_MS) / math.log(BACKOFF_MULTIPLIER)  # 10.23: 2^EXP_MAX = 1200
CAPPED_TERM = BACKOFF_INITIAL_MS * math.pow(BACKOFF_MULTIPLIER, EXP_MAX)  # 120000.00000000004
TERMS = tuple(BACKOFF_INITIAL_MS * BACKOFF_MULTIPLIER**n for n in range(math.ceil(EXP_MAX)))  # 100 .. 102400


JITTER_ORIGIN = 1 - BACKOFF_JITTER  # ExponentialBackoff: nextDouble(1 - jitter, 1 + jitter)
JITTER_BOUND = 1 + BACKOFF_JITTER
JITTER_SPAN = JITTER_BOUND - JITTER_ORIGIN  # 0.040000000000000036, not 2 * 0.02
JITTER_TOP = math.nextafter(JITTER_BOUND, JITTER_ORIGIN)


def backoff_ms(failed_attempts: int, jitter_draw: float) -> int:
    """``new ExponentialBackoff(100, 2, 120000, 0.02).backoff(failedRpcs)`` with the random draw as an argument.

    ``jitter_draw`` in [0, 1) is ``ThreadLocalRandom.nextDouble()``, which ``nextDouble(1 - 0.02, 1 + 0.02)``
    scales as JDK 17's ``RandomSupport.boundedNextDouble`` does: ``draw * (1.02 - 0.98) + 0.98``, kept below
    1.02, in that floating-point order (Kafka 4.3 ``clients/.../utils/ExponentialBackoff.backoff``). The
    exponent is capped at log2(120000 / 100) (below the cap ``100 * 2^n`` is exact, hence the table ``TERMS``)
    and the result at 120000 ms (rules §4.1). Floating point lets a draw just below 1 give 102 ms at
    attempt 0.
    """
    term = TERMS[failed_attempts] if failed_attempts < len(TERMS) else CAPPED_TERM
    factor = jitter_draw * JITTER_SPAN + JITTER_ORIGIN
    if factor >= JITTER_BOUND:
        factor = JITTER_TOP
    value = int(factor * term)
    return BACKOFF_MAX_MS if value > BACKOFF_MAX_MS else value


def is_registered_in_log(log_incarnation: Optional[str], own_incarnation: str) -> bool:
    """registeredInLog: the log holds a registration for our id **with our incarnation id** (§4.1).

    Kafka sets it only from metadata updates; an RPC success never sets it.
    """
    return log_incarnation is not None and log_incarnation == own_incarnation


def should_send_registration(registered: bool, channel_started: bool, mv_supported: bool, pending_rpcs: int) -> bool:
    """``maybeSendControllerRegistration``: send only when unregistered, started, MV ≥ 3.7-IV0 and nothing pending."""
    return (not registered) and channel_started and mv_supported and pending_rpcs == 0


def endpoint_type_error(request_version: int, requested_type: int, served_type: int) -> Errors:
    """``AuthHelper.computeDescribeClusterResponse`` steps 1–2: the error for a request's endpoint type (§4.2).

    UNKNOWN (anything but 1/2) → UNSUPPORTED_ENDPOINT_TYPE, a different known type →
    MISMATCHED_ENDPOINT_TYPE; at version 0 both are INVALID_REQUEST. NONE when the types agree.
    """
    # Only broker and controller endpoints exist.
    if requested_type not in (ENDPOINT_BROKER, ENDPOINT_CONTROLLER):
        return Errors.INVALID_REQUEST if request_version == 0 else Errors.UNSUPPORTED_ENDPOINT_TYPE
    # The client asked for the other kind of node than this endpoint serves: its answer would list the wrong nodes.
    if requested_type != served_type:
        return Errors.INVALID_REQUEST if request_version == 0 else Errors.MISMATCHED_ENDPOINT_TYPE
    return Errors.NONE


def broker_listed(is_fenced: bool, include_fenced_brokers: bool) -> bool:
    """``KafkaApis.handleDescribeCluster``: a fenced broker is listed only when IncludeFencedBrokers is set (§4.2)."""
    return (not is_fenced) or include_fenced_brokers


def effective_controller_id(controller_id: int, listed_ids: tuple[int, ...]) -> int:
    """AuthHelper step 4: the controller id is returned only if it is among the returned nodes, else -1."""
    return controller_id if controller_id in listed_ids else -1
