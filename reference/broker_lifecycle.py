"""Broker side: ``BrokerState`` and the ``BrokerLifecycleManager`` state machine (rules §1.9).

The broker registers, heartbeats, catches up (STARTING -> RECOVERY), is unfenced (-> RUNNING) and
shuts down in a controlled way (PENDING_CONTROLLED_SHUTDOWN -> SHUTTING_DOWN). One RPC is in flight
at a time; ``poll`` emits the next request when it is due. KIP-631 describes the same states; Kafka
additionally gives up (shuts down) when no registration succeeded within
``initial.broker.registration.timeout.ms``.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Optional, Union

from kraftspec.reference.broker import (
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
)
from kraftspec.reference.errors import Errors
from kraftspec.reference.frozen import evolve


class BrokerState(IntEnum):
    """``BrokerState`` numeric values (public API; 4 and 5 are unused in KRaft; unknown bytes map to UNKNOWN)."""

    NOT_RUNNING = 0
    STARTING = 1
    RECOVERY = 2
    RUNNING = 3
    PENDING_CONTROLLED_SHUTDOWN = 6
    SHUTTING_DOWN = 7
    UNKNOWN = 127

    @classmethod
    def from_value(cls, value: int) -> "BrokerState":
        """``BrokerState.fromValue``: any value Kafka does not define is UNKNOWN."""
        try:
            return cls(value)
        except ValueError:
            return cls.UNKNOWN


@dataclass(frozen=True, slots=True, kw_only=True)
class LifecycleConfig:
    """Broker-side timing (§1.1): heartbeat interval and initial registration timeout, in ms."""

    heartbeat_interval: int = 2000
    initial_registration_timeout: int = 60000
    catch_up_heartbeat_delay: int = 10
    first_shutdown_heartbeat_delay: int = 50


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerLifecycle:
    """One broker process: its state, epoch, and when it next talks to the controller."""

    template: BrokerRegistrationRequest  # everything the broker registers with (id, cluster, incarnation, ...)
    config: LifecycleConfig = LifecycleConfig()
    state: BrokerState = BrokerState.NOT_RUNNING
    broker_epoch: int = -1
    registered: bool = False
    ready_to_unfence: bool = False
    metadata_offset: int = -1
    registration_deadline: int = -1
    next_send_at: Optional[int] = None
    in_flight: bool = False
    shutdown_heartbeats: int = 0
    retrigger: bool = False  # a communication fell due while the RPC was in flight: the next one goes out at once

    @property
    def broker_id(self) -> int:
        return self.template.broker_id


Request = Union[BrokerRegistrationRequest, BrokerHeartbeatRequest]


def start(lifecycle: BrokerLifecycle, now: int, previous_broker_epoch: int = -1) -> BrokerLifecycle:
    """``start()``: STARTING, registration deadline set, registration due now (previousBrokerEpoch from the clean-shutdown file)."""
    template = evolve(lifecycle.template, previous_broker_epoch=previous_broker_epoch)
    return evolve(lifecycle, template=template, state=BrokerState.STARTING,
                  registration_deadline=now + lifecycle.config.initial_registration_timeout, next_send_at=now)


def poll(lifecycle: BrokerLifecycle, now: int) -> tuple[BrokerLifecycle, Optional[Request]]:
    """Emit the request that is due: the registration until one succeeded, then heartbeats; one in flight at a time.

    Heartbeats carry ``wantFence = not readyToUnfence`` and ``wantShutDown`` in PENDING_CONTROLLED_SHUTDOWN.
    """
    if lifecycle.state in (BrokerState.NOT_RUNNING, BrokerState.SHUTTING_DOWN) or lifecycle.in_flight:
        return lifecycle, None
    if lifecycle.next_send_at is None or now < lifecycle.next_send_at:
        return lifecycle, None
    sent = evolve(lifecycle, in_flight=True, next_send_at=None)
    if not lifecycle.registered:
        return sent, lifecycle.template
    return sent, BrokerHeartbeatRequest(
        broker_id=lifecycle.broker_id, broker_epoch=lifecycle.broker_epoch,
        current_metadata_offset=lifecycle.metadata_offset, want_fence=not lifecycle.ready_to_unfence,
        want_shut_down=lifecycle.state is BrokerState.PENDING_CONTROLLED_SHUTDOWN)


def _after_success(lifecycle: BrokerLifecycle, now: int) -> BrokerLifecycle:
    """``scheduleNextCommunication`` after a successful response: a communication that fell due while the RPC was
    in flight (:func:`begin_controlled_shutdown`) makes the next one immediate (§1.9); an error drops it."""
    if not lifecycle.retrigger:
        return lifecycle
    return evolve(lifecycle, retrigger=False, next_send_at=None if lifecycle.next_send_at is None else now)


def on_registration_response(lifecycle: BrokerLifecycle, response: BrokerRegistrationResponse,
                             now: int) -> BrokerLifecycle:
    """Success stores the epoch and heartbeats at once; any error retries after the heartbeat interval."""
    done = evolve(lifecycle, in_flight=False, retrigger=False)
    if response.error is not Errors.NONE:
        return evolve(done, next_send_at=now + lifecycle.config.heartbeat_interval)
    return evolve(done, registered=True, broker_epoch=response.broker_epoch, next_send_at=now)


def on_heartbeat_response(lifecycle: BrokerLifecycle, response: BrokerHeartbeatResponse,
                          now: int) -> BrokerLifecycle:
    """The per-state reactions of §1.9; an error leaves the state unchanged and retries after the interval.

    The broker never re-registers on STALE_BROKER_EPOCH.
    """
    interval = lifecycle.config.heartbeat_interval
    if response.error is not Errors.NONE:
        return evolve(lifecycle, in_flight=False, retrigger=False, next_send_at=now + interval)
    return _after_success(_heartbeat_reaction(evolve(lifecycle, in_flight=False), response, now), now)


def _heartbeat_reaction(lifecycle: BrokerLifecycle, response: BrokerHeartbeatResponse, now: int) -> BrokerLifecycle:
    """The state change and next heartbeat time of a successful heartbeat response, per state (§1.9)."""
    interval = lifecycle.config.heartbeat_interval
    state = lifecycle.state
    if state is BrokerState.STARTING:
        if response.is_caught_up:
            return evolve(lifecycle, state=BrokerState.RECOVERY, next_send_at=now + lifecycle.config.catch_up_heartbeat_delay)
        return evolve(lifecycle, next_send_at=now + lifecycle.config.catch_up_heartbeat_delay)
    if state is BrokerState.RECOVERY:
        if not response.is_fenced:
            return evolve(lifecycle, state=BrokerState.RUNNING, next_send_at=now + interval)
        return evolve(lifecycle, next_send_at=now + interval)
    if state is BrokerState.PENDING_CONTROLLED_SHUTDOWN:
        if response.should_shut_down:
            return evolve(lifecycle, state=BrokerState.SHUTTING_DOWN, next_send_at=None)
        delay = lifecycle.config.first_shutdown_heartbeat_delay if lifecycle.shutdown_heartbeats == 0 else interval
        return evolve(lifecycle, shutdown_heartbeats=lifecycle.shutdown_heartbeats + 1, next_send_at=now + delay)
    if state is BrokerState.SHUTTING_DOWN:
        return lifecycle
    return evolve(lifecycle, next_send_at=now + interval)


def begin_controlled_shutdown(lifecycle: BrokerLifecycle, now: int) -> BrokerLifecycle:
    """``beginControlledShutdown``: RUNNING -> PENDING_CONTROLLED_SHUTDOWN with a heartbeat now; PENDING stays; else shut down."""
    if lifecycle.state is BrokerState.RUNNING:
        if lifecycle.in_flight:  # the heartbeat it asks for falls due with one in flight: sent after the response
            return evolve(lifecycle, state=BrokerState.PENDING_CONTROLLED_SHUTDOWN, next_send_at=None, retrigger=True)
        return evolve(lifecycle, state=BrokerState.PENDING_CONTROLLED_SHUTDOWN, next_send_at=now)
    if lifecycle.state is BrokerState.PENDING_CONTROLLED_SHUTDOWN:
        return lifecycle
    return evolve(lifecycle, state=BrokerState.SHUTTING_DOWN, next_send_at=None)


def set_ready_to_unfence(lifecycle: BrokerLifecycle) -> BrokerLifecycle:
    """``setReadyToUnfence``: after the initial catch-up and first metadata publish the broker stops asking to stay fenced."""
    return evolve(lifecycle, ready_to_unfence=True)


def metadata_applied(lifecycle: BrokerLifecycle, offset: int) -> BrokerLifecycle:
    """The broker applied metadata up to ``offset``; heartbeats report it as ``currentMetadataOffset``."""
    return evolve(lifecycle, metadata_offset=max(lifecycle.metadata_offset, offset))


def check_registration_timeout(lifecycle: BrokerLifecycle, now: int) -> BrokerLifecycle:
    """No registration succeeded by ``initial.broker.registration.timeout.ms``: shut down with epoch -1."""
    if not lifecycle.registered and lifecycle.state is BrokerState.STARTING and now >= lifecycle.registration_deadline:
        return evolve(lifecycle, state=BrokerState.SHUTTING_DOWN, next_send_at=None)
    return lifecycle
