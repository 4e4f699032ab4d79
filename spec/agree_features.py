"""Finalized feature levels explored under ``FeatureLevels.cfg``'s bounds, in the spec's vocabulary.

Each successor calls the reference with one choice of the spec action's parameters: ``RegisterBroker(b, s)`` ~
``broker.register_broker`` (broker ``b`` with software ``s``'s ranges, incarnation ``s``), ``UnregisterBroker(b)`` ~
``broker.unregister_broker``, ``UpdateFeatures(req)`` ~ ``feature_control.update_features`` (one update, or one
metadata.version and one ELR upgrade). A refused request leaves the state as it was (no edge). The controller is the
trace format's explicit state :data:`EXPLICIT` (Kafka 4.1+, 4.3's feature tables, metadata.version 4.0-IV0, no broker
registered), so the traces recorded from the spec replay from the very state explored here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator, Mapping

from kraftspec.reference import broker, feature_control
from kraftspec.reference.errors import Errors
from kraftspec.reference.feature_versions import ELR_FEATURE, KRAFT_VERSION, METADATA_VERSION
from kraftspec.reference.records import FeatureRange
from kraftspec.spec.agree import AgreementModel, Step
from kraftspec.spec.agree_broker import directory_of
from kraftspec.spec.tla_values import TlaValue, fn
from kraftspec.traces.format.broker import explicit_state

CLUSTER_ID = "kraftspec-agree-features"
FEATURES = (METADATA_VERSION, ELR_FEATURE, KRAFT_VERSION)
EXPLICIT: dict[str, Any] = {
    "cluster_id": CLUSTER_ID, "metadata_version": 22, "behaviour": broker.KAFKA_4_1.name, "next_offset": 0,
    "controller_features": {METADATA_VERSION: [7, 30], ELR_FEATURE: [0, 1], KRAFT_VERSION: [0, 1]}}
"""``Init``'s controller as a trace's explicit initial state: ``LocalRange`` is its ``controller_features``."""
SOFTWARE: dict[int, tuple[FeatureRange, ...]] = {
    1: (FeatureRange(name=METADATA_VERSION, min_supported=7, max_supported=23),
        FeatureRange(name=KRAFT_VERSION, min_supported=0, max_supported=1)),
    2: (FeatureRange(name=METADATA_VERSION, min_supported=7, max_supported=24),
        FeatureRange(name=ELR_FEATURE, min_supported=0, max_supported=1),
        FeatureRange(name=KRAFT_VERSION, min_supported=0, max_supported=1)),
}
"""The spec's ``SupportedBy``: the ranges each broker software lists (software 1 does not list ELR)."""
ENVIRONMENT_ACTIONS: frozenset[str] = frozenset()
"""``FeatureLevels.tla``'s ``Next`` moves no environment: each of its actions is a reference rule."""
UPGRADE_TYPES = (feature_control.UPGRADE, feature_control.SAFE_DOWNGRADE, feature_control.UNSAFE_DOWNGRADE)


@dataclass(frozen=True)
class ExploredState:
    """A reachable point of the bounded model: the controller, and the spec's broker ids (``Brokers``)."""

    control: broker.ClusterControl
    brokers: tuple[int, ...]


def initial_states(constants: Mapping[str, TlaValue]) -> Iterator[ExploredState]:
    """``Init``: :data:`EXPLICIT` as the trace format builds it."""
    yield ExploredState(explicit_state(EXPLICIT), tuple(sorted(constants["Brokers"])))  # type: ignore[call-overload]


def registration(broker_id: int, software: int) -> broker.BrokerRegistrationRequest:
    """Broker ``broker_id`` running software ``software`` (its incarnation id), with its own log directory."""
    return broker.BrokerRegistrationRequest(broker_id=broker_id, cluster_id=CLUSTER_ID, incarnation_id=str(software),
                                            features=SOFTWARE[software], log_dirs=(directory_of(broker_id),))


def requests(constants: Mapping[str, TlaValue]) -> list[feature_control.UpdateFeaturesRequest]:
    """The spec's ``Requests``: every single update, and every metadata.version upgrade with an ELR upgrade."""
    def updates(name: str) -> list[feature_control.FeatureUpdate]:
        levels = sorted(constants["MVRequests"]) if name == METADATA_VERSION else [0, 1]  # type: ignore[arg-type]
        return [feature_control.FeatureUpdate(feature=name, max_version_level=level, upgrade_type=kind)
                for level in levels for kind in UPGRADE_TYPES]
    singles = [(u,) for name in FEATURES for u in updates(name)]
    pairs = [(u, v) for u in updates(METADATA_VERSION) for v in updates(ELR_FEATURE)
             if u.upgrade_type == v.upgrade_type == feature_control.UPGRADE]
    return [feature_control.UpdateFeaturesRequest(updates=us) for us in singles + pairs]


def successors(state: ExploredState, constants: Mapping[str, TlaValue]) -> Iterator[Step[ExploredState]]:
    """Every action of the spec's ``Next`` with every parameter choice, as reference calls."""
    return (step for step, _, _ in moves(state, constants))


def moves(state: ExploredState,
          constants: Mapping[str, TlaValue]) -> Iterator[tuple[Step[ExploredState], str, dict[str, Any]]]:
    """:func:`successors` with each step's trace-format action and arguments (the accepted ones only)."""
    control = state.control
    if control.next_offset >= int(constants["MaxOffset"]):  # type: ignore[call-overload]
        return
    for b in state.brokers:
        for software in sorted(constants["Softwares"]):  # type: ignore[call-overload]
            request = registration(b, software)
            after, out = broker.register_broker(control, request, 0)
            if out.response.error is Errors.NONE:
                yield (Step("RegisterBroker", f"register_broker(broker {b}, software {software})",
                            ExploredState(after, state.brokers)), "register_broker", {"request": request, "now": 0})
    for b in state.brokers:
        if b in control.brokers:
            after, _ = broker.unregister_broker(control, b)
            yield (Step("UnregisterBroker", f"unregister_broker(broker {b})", ExploredState(after, state.brokers)),
                   "unregister_broker", {"broker_id": b})
    for request in requests(constants):
        after, out = feature_control.update_features(control, request)
        if out.response.error is Errors.NONE:
            call = ", ".join(f"{u.feature}={u.max_version_level}/{u.upgrade_type}" for u in request.updates)
            yield (Step("UpdateFeatures", f"update_features({call})", ExploredState(after, state.brokers)),
                   "update_features", {"request": request})


def project(state: ExploredState) -> dict[str, TlaValue]:
    """The spec's variables (``fin``, ``reg``, ``minIsr``, ``nextOffset``); a broker's software is its incarnation."""
    control = state.control
    return {
        "fin": fn({name: control.finalized_features.get(name, 0) for name in FEATURES}),
        "reg": fn({b: int(control.brokers[b].incarnation_id) if b in control.brokers else 0 for b in state.brokers}),
        "minIsr": "" in control.min_insync_configs,
        "nextOffset": control.next_offset,
    }


MODEL: AgreementModel[ExploredState] = AgreementModel(
    component="features",
    spec_module="FeatureLevels",
    initial_states=initial_states,
    successors=successors,
    project=project,
)
