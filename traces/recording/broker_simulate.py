"""``kraftspec generate sim``: seeded multi-broker simulations recorded as traces (rules §1.2–§1.9, §1.11).

Brokers follow the reference's broker-side lifecycle (``reference/broker_lifecycle.py``: register,
catch up, unfence, heartbeat, controlled shutdown); the controller is the reference. Faults are
injected: restarts (clean or not) with new incarnations, delayed and duplicated requests (so old
incarnations' heartbeats arrive with stale epochs), heartbeats that time out, clock jumps past the
session timeout, metadata that lags, unregistrations, other writes to the log and controller
failover. An operator also sends UpdateFeatures (:meth:`_Simulation.update_features`). Each controller
input becomes a step with the outputs and post-state the reference produced (the finalized feature
levels among them). With a mutant applied the recorded outputs are the mutant's, so they are
non-conformant.
"""

from __future__ import annotations

import random
from contextlib import AbstractContextManager, nullcontext
from dataclasses import replace
from typing import Any, Iterator, Optional

from kraftspec import mutants
from kraftspec.models import broker_strategies
from kraftspec.reference import broker, broker_lifecycle as life
from kraftspec.reference.broker import FeatureRange
from kraftspec.reference.feature_control import (
    SAFE_DOWNGRADE,
    UNSAFE_DOWNGRADE,
    UPGRADE,
    FeatureUpdate,
    UpdateFeaturesRequest,
)
from kraftspec.reference.feature_versions import METADATA_VERSION
from kraftspec.reference.metadata_version import MINIMUM_4X
from kraftspec.traces.replay import broker as broker_replay
from kraftspec.traces.format.envelope import Step, Trace
from kraftspec.traces.format.values import from_json

CONFIG = life.LifecycleConfig(heartbeat_interval=3, initial_registration_timeout=10**9,
                              catch_up_heartbeat_delay=1, first_shutdown_heartbeat_delay=1)
POST_FIELDS = ("next_offset", "brokers", "heartbeats", "sessions", "features")
FAULTS = ("tick", "tick", "tick", "deliver", "deliver", "deliver", "deliver", "fence", "fence", "apply", "apply",
          "restart", "shutdown", "jump", "failover", "log", "unregister", "timeout", "redeliver", "features")
LEVEL_SPREAD = 2
"""An UpdateFeatures asks for a level at most this far from the finalized one."""
_RELEASE = broker.KAFKA_4_1.features
FEATURES_CLUSTER: dict[str, Any] = {
    "cluster_id": broker_strategies.CLUSTER_ID, "metadata_version": _RELEASE.latest_production - 3,
    "controller_features": {METADATA_VERSION: [MINIMUM_4X, _RELEASE.latest_production],
                            **{name: [0, max(levels)] for name, levels in _RELEASE.features.items()}}}
"""The explicit initial state of a third of the simulations: a freshly bootstrapped cluster whose controller supports
every level of its release, the brokers registering during the run, each incarnation's software with ranges of its own
(:meth:`_Simulation._template`), so that the brokers' ranges decide UpdateFeatures."""


class _Simulation:
    """One simulated cluster: the controller, the brokers' lifecycles, the network, the recorded steps."""

    def __init__(self, rng: random.Random, standard: Optional[str]) -> None:
        self.rng = rng
        self.state = broker_replay.initial(Trace("broker", (), standard=standard,  # built once, shared (immutable)
                                                 explicit=None if standard else FEATURES_CLUSTER))
        self.software_varies = standard is None
        self.clock = 0
        self.steps: list[Step] = []
        self.network: list[tuple[int, int, str, life.Request]] = []  # (due, broker, incarnation, request)
        self.sent_registrations: list[broker.BrokerRegistrationRequest] = []
        self.incarnation = {b: 1 for b in broker_strategies.BROKER_IDS}
        self.brokers: dict[int, life.BrokerLifecycle] = {}
        for b in broker_strategies.BROKER_IDS:
            lifecycle = life.BrokerLifecycle(template=self._template(b), config=CONFIG)
            registration = self.state.brokers.get(b)
            if registration is None:
                lifecycle = life.start(lifecycle, 0)
            else:
                lifecycle = replace(lifecycle, state=life.BrokerState.RUNNING, broker_epoch=registration.epoch,
                                    registered=True, ready_to_unfence=True, metadata_offset=self.state.next_offset - 1,
                                    next_send_at=rng.randint(0, CONFIG.heartbeat_interval))
            self.brokers[b] = lifecycle

    def _template(self, b: int) -> broker.BrokerRegistrationRequest:
        """Broker ``b``'s registration; in :data:`FEATURES_CLUSTER` its software supports metadata.version up to a
        drawn level and each other feature up to a drawn level, or not at all."""
        request = broker_strategies.registration_request(b, self.incarnation[b], -1, self.state.metadata_version)
        if not self.software_varies:
            return request
        top = _RELEASE.latest_production
        ranges = [FeatureRange(name=METADATA_VERSION, min_supported=MINIMUM_4X,
                               max_supported=self.rng.randint(top - 2, top))]
        ranges += [FeatureRange(name=name, min_supported=0, max_supported=self.rng.randint(0, max(levels)))
                   for name, levels in sorted(_RELEASE.features.items()) if self.rng.random() < 0.6]
        return replace(request, features=tuple(ranges))

    def record(self, action: str, **args: Any) -> Optional[dict[str, Any]]:
        """Run one controller input through the reference and record it; None if the reference refuses it."""
        step = Step(action, args)
        try:
            state, clock, response, written = broker_replay.apply(self.state, self.clock, step)
        except (RuntimeError, ValueError, KeyError):
            return None
        self.steps.append(replace(step, response=response, records=written,
                                  post=broker_replay.observe(state, clock, POST_FIELDS)))
        self.state, self.clock = state, clock
        return response

    def poll_brokers(self) -> None:
        """Each broker sends what is due; most requests arrive at once, some later (delayed), some twice."""
        for b, lifecycle in self.brokers.items():
            lifecycle, request = life.poll(lifecycle, self.clock)
            self.brokers[b] = lifecycle
            if request is not None:
                due = self.clock + (0 if self.rng.random() < 0.8 else self.rng.randint(1, 6))
                self.network.append((due, b, lifecycle.template.incarnation_id, request))
                if self.rng.random() < 0.1:
                    self.network.append((due + self.rng.randint(0, 4), b, "duplicate", request))

    def deliver(self, timed_out: bool = False) -> None:
        """Deliver one request that is due; its reply reaches the broker only if it is still that incarnation's."""
        due = [m for m in self.network if m[0] <= self.clock]
        if not due:
            return
        message = self.rng.choice(due)
        self.network.remove(message)
        _, b, incarnation, request = message
        if isinstance(request, broker.BrokerRegistrationRequest):
            self.sent_registrations.append(request)
            response = self.record("register_broker", request=request)
            kind: type = broker.BrokerRegistrationResponse
        else:
            response = self.record("heartbeat_timed_out" if timed_out else "heartbeat", request=request)
            kind = broker.BrokerHeartbeatResponse
        lifecycle = self.brokers[b]
        if response is None or incarnation != lifecycle.template.incarnation_id or not lifecycle.in_flight:
            return
        reply = from_json(kind, response, "response")
        if kind is broker.BrokerRegistrationResponse:
            self.brokers[b] = life.on_registration_response(lifecycle, reply, self.clock)
        else:
            self.brokers[b] = life.on_heartbeat_response(lifecycle, reply, self.clock)

    def apply_metadata(self) -> None:
        """A broker replays the log, possibly lagging; once caught up and past STARTING it is ready to unfence."""
        b = self.rng.choice(sorted(self.brokers))
        lifecycle = self.brokers[b]
        if lifecycle.state in (life.BrokerState.NOT_RUNNING, life.BrokerState.SHUTTING_DOWN):
            return
        end = self.state.next_offset - 1
        lifecycle = life.metadata_applied(lifecycle, end if self.rng.random() < 0.7 else self.rng.randint(-1, end))
        if lifecycle.state is life.BrokerState.RECOVERY:
            lifecycle = life.set_ready_to_unfence(lifecycle)
        self.brokers[b] = lifecycle

    def restart(self) -> None:
        """A broker process restarts as a new incarnation; a clean shutdown passes its epoch as previousBrokerEpoch."""
        b = self.rng.choice(sorted(self.brokers))
        old = self.brokers[b]
        clean = old.state is life.BrokerState.SHUTTING_DOWN
        self.incarnation[b] += 1
        self.brokers[b] = life.start(life.BrokerLifecycle(template=self._template(b), config=CONFIG), self.clock,
                                     old.broker_epoch if clean else -1)

    def update_features(self) -> None:
        """An operator's UpdateFeatures (§1.11): one feature of the release's table, or two, each at a level near its
        finalized one with any upgrade type, sometimes validate-only. The brokers register with a metadata.version
        range alone, so they support only level 0 of every other feature: their ranges decide many answers."""
        names = sorted(self.state.behaviour.features.features) + [METADATA_VERSION]
        updates = []
        for name in self.rng.sample(names, 2 if self.rng.random() < 0.2 else 1):
            level = max(0, self.state.finalized_features.get(name, 0) + self.rng.randint(-LEVEL_SPREAD, LEVEL_SPREAD))
            kind = self.rng.choice((UPGRADE, UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE))
            updates.append(FeatureUpdate(feature=name, max_version_level=level, upgrade_type=kind))
        self.record("update_features",
                    request=UpdateFeaturesRequest(updates=tuple(updates), validate_only=self.rng.random() < 0.1))

    def step(self) -> None:
        """One fault or event, chosen at random."""
        kind = self.rng.choice(FAULTS)
        if kind in ("tick", "jump"):
            width = 1 if kind == "tick" else self.rng.randint(self.state.session_timeout // 2, 2 * self.state.session_timeout)
            self.record("advance_clock", now=self.clock + width)
            self.poll_brokers()
        elif kind in ("deliver", "timeout"):
            self.deliver(timed_out=kind == "timeout")
        elif kind == "fence":
            self.record("fence_stale_broker")
        elif kind == "apply":
            self.apply_metadata()
        elif kind == "restart":
            self.restart()
        elif kind == "shutdown":
            b = self.rng.choice(sorted(self.brokers))
            self.brokers[b] = life.begin_controlled_shutdown(self.brokers[b], self.clock)
        elif kind == "failover":
            self.record("failover")
        elif kind == "log":
            self.record("log_advanced", next_offset=self.state.next_offset + self.rng.randint(1, 3))
        elif kind == "features":
            self.update_features()
        elif kind == "redeliver":
            if self.sent_registrations:  # a retransmitted registration: same or older incarnation, reply lost
                self.record("register_broker", request=self.rng.choice(self.sent_registrations[-6:]))
        else:
            stopped = [b for b, lc in self.brokers.items() if lc.state is life.BrokerState.SHUTTING_DOWN
                       and b in self.state.brokers]
            if stopped:
                self.record("unregister_broker", broker_id=self.rng.choice(stopped))



def simulate_one(seed: int, index: int, steps: int, recording: AbstractContextManager[Any] = nullcontext()) -> Trace:
    """Trace ``index`` of seed ``seed``: ``steps`` controller inputs from a random standard initial state.

    The standard initial state is built by the reference as it is; only the steps are recorded
    inside ``recording`` (a mutant's ``applied()``).
    """
    rng = random.Random(f"{seed}:{index}")
    standard = rng.choice(sorted(broker_replay.STANDARD_STATES) + [None])
    sim = _Simulation(rng, standard)
    with recording:
        while len(sim.steps) < steps:
            sim.step()
    return Trace(component="broker", steps=tuple(sim.steps[:steps]), standard=standard,
                 explicit=None if standard else FEATURES_CLUSTER, id=f"sim-{seed}-{index}",
                 meta={"generator": "kraftspec generate sim", "seed": seed, "index": index})


def generate_sim(seed: int, traces: int, steps: int, mutant: Optional[str] = None) -> Iterator[Trace]:
    """``traces`` simulated broker traces of ``steps`` steps each; with ``mutant`` its outputs are recorded.

    Trace ``i`` depends only on (seed, i) and the mutant, and its ``meta`` says all three. An unknown
    mutant, or one of another component, is refused at once (before anything is generated).
    """
    variant = mutants.get(mutant) if mutant is not None else None
    if variant is not None and variant.component != "broker":
        raise ValueError(f"mutant {mutant!r} belongs to component {variant.component!r}; simulation covers broker")

    def generated() -> Iterator[Trace]:
        for index in range(traces):
            if variant is None:
                yield simulate_one(seed, index, steps)
            else:
                trace = simulate_one(seed, index, steps, variant.applied())
                yield replace(trace, meta={**trace.meta, "mutant": mutant})

    return generated()
