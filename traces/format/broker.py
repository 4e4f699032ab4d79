"""The broker component of trace format v1: its actions, records and initial states (rules §1).

Each action is named after the reference function that decides it (``heartbeat`` is
``kraftspec.reference.broker.heartbeat``); ``failover`` is ``activate(deactivate(state), now)`` and
``advance_clock`` only moves the trace's clock, which timed inputs use when they give no ``now``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional

from kraftspec.models import broker_strategies
from kraftspec.reference import broker, feature_control, records as records_module
from kraftspec.reference.partition import TopicInfo
from kraftspec.reference.records import MetadataRecord
from kraftspec.traces.replay.state_cache import ExplicitStates
from kraftspec.traces.format.values import FieldPlan, TraceError, decode_fields, decoder, from_json, require, to_json

RECORD_TYPES: dict[str, type] = {
    name: cls for name, cls in vars(records_module).items()
    if isinstance(cls, type) and dataclasses.is_dataclass(cls) and hasattr(cls, "API_KEY")}


@dataclass(frozen=True)
class Action:
    """An input kind: the reference function (``rule``) that decides it and its arguments (type, required)."""

    name: str
    rule: str
    args: Mapping[str, tuple[Any, bool]]


_NOW = {"now": (int, False)}
_AUTH = {"authorized": (bool, False)}
_ORDER = {"order": (tuple[tuple[str, int], ...], False)}  # the partitions Kafka changed, in its order (broker.Order)
ACTIONS: dict[str, Action] = {a.name: a for a in (
    Action("register_broker", "register_broker", {"request": (broker.BrokerRegistrationRequest, True), **_NOW, **_AUTH,
                                                  **_ORDER}),
    Action("heartbeat", "heartbeat", {"request": (broker.BrokerHeartbeatRequest, True), **_NOW, **_AUTH, **_ORDER}),
    Action("heartbeat_timed_out", "heartbeat_timed_out", {"request": (broker.BrokerHeartbeatRequest, True), **_NOW}),
    Action("fence_stale_broker", "fence_stale_broker", {**_NOW, "which": (Optional[tuple[int, int]], False), **_ORDER}),
    Action("unregister_broker", "unregister_broker", {"broker_id": (int, True), **_AUTH, **_ORDER}),
    Action("create_topic", "create_topic", {"topic": (TopicInfo, True),
                                            "assignments": (tuple[tuple[int, ...], ...], True)}),
    Action("update_features", "feature_control.update_features",
           {"request": (feature_control.UpdateFeaturesRequest, True), **_AUTH}),
    Action("log_advanced", "log_advanced", {"next_offset": (int, True)}),
    Action("advance_clock", "advance_clock", {"now": (int, True)}),
    Action("failover", "activate", _NOW),
    Action("deactivate", "deactivate", {}),
    Action("activate", "activate", _NOW),
)}

InputPlan = tuple[frozenset[str], tuple[FieldPlan, ...]]
"""An action's decoding plan: the fields an input may have, and each argument's (name, decoder, exact type, required)."""


def input_plans(actions: Mapping[str, Action]) -> dict[str, InputPlan]:
    """Each action's decoding plan (an argument of an exact scalar type is taken as it is, without its decoder)."""
    return {a.name: (frozenset(a.args) | {"action"},
                     tuple((name, decoder(tp), tp if tp in (bool, int, str) else None, required)
                           for name, (tp, required) in a.args.items()))
            for a in actions.values()}


def decode_arguments(plans: Mapping[str, InputPlan], component: str, action: str, obj: dict[str, Any],
                     path: str) -> dict[str, Any]:
    """The arguments of one input of ``component`` (only those given; the reference's defaults apply to the rest)."""
    plan = plans.get(action)
    if plan is None:
        raise TraceError(f"{path}.action: unknown action {action!r} for component {component} "
                         f"(known: {', '.join(sorted(plans))})")
    allowed, arguments = plan
    if not allowed.issuperset(obj):
        unknown = sorted(set(obj) - allowed)
        raise TraceError(f"{path}: unknown argument {unknown[0]!r} for action {action!r}")
    return decode_fields(obj, arguments, path, lambda name: f"action {action!r} needs {name!r}")


_INPUT_PLANS = input_plans(ACTIONS)

STANDARD_STATES: dict[str, Callable[[], broker.ClusterControl]] = {
    "broker/running-cluster": lambda: broker_strategies.running_cluster()[0],
    "broker/leaderless": lambda: broker_strategies.leaderless_cluster()[0],
}

_EXPLICIT_FIELDS: dict[str, tuple[Any, bool]] = {
    "cluster_id": (str, True), "metadata_version": (int, True), "session_timeout": (int, False),
    "behaviour": (str, False), "features": (dict, False), "records": (list, False), "next_offset": (int, False),
    "active": (bool, False), "activated_at": (int, False), "controller_features": (dict, False),
}


class BrokerComponent:
    """The ``broker`` component: decoding and encoding of its inputs, records and explicit initial states."""

    name = "broker"
    standard_states = STANDARD_STATES

    def decode_input(self, action: str, obj: dict[str, Any], path: str) -> Mapping[str, Any]:
        """The arguments of ``action`` (only those given; the reference's defaults apply to the rest)."""
        return decode_arguments(_INPUT_PLANS, "broker", action, obj, path)

    def encode_input(self, action: str, args: Mapping[str, Any]) -> dict[str, Any]:
        """The JSON arguments of one input."""
        return {name: to_json(value) for name, value in args.items()}

    def decode_record(self, obj: object, path: str) -> tuple[int, MetadataRecord]:
        """``{"offset": N, "type": "RegisterBrokerRecord", ...fields}`` as (offset, record)."""
        if not isinstance(obj, dict):
            raise TraceError(f"{path}: expected an object")
        offset = require(obj, "offset", int, path)
        kind = require(obj, "type", str, path)
        cls = RECORD_TYPES.get(kind)
        if cls is None:
            raise TraceError(f"{path}.type: unknown record type {kind!r}")
        return offset, from_json(cls, {k: v for k, v in obj.items() if k not in ("offset", "type")}, path)

    def encode_record(self, offset: int, record: MetadataRecord) -> dict[str, Any]:
        """A record with its offset and type name first, then all its fields."""
        return {"offset": offset, "type": type(record).__name__, **to_json(record)}

    def check_explicit(self, obj: dict[str, Any], path: str) -> None:
        """Check an explicit initial state by building it (its records must replay); replays reuse it."""
        cached_explicit_state(obj, path)


def explicit_state(obj: Mapping[str, Any], path: str = "initial.explicit") -> broker.ClusterControl:
    """An explicit initial state: a bootstrapped controller, the records replayed, then activated (§1.2).

    ``{cluster_id, metadata_version, session_timeout=9000, behaviour="4.1+", features={}, records=[],
    next_offset=(one past the last record), active=true, activated_at=0, controller_features=(the behaviour's
    production-ready metadata.version levels, every level of each feature in features)}``: a controller restored from
    a snapshot and a log (records replayed at their offsets, in order), whose log ends at
    ``next_offset``; activation gives every unfenced broker a session at ``activated_at``. ``controller_features``
    maps a feature to the ``[min, max]`` levels the controller's software supports (§1.11).
    """
    unknown = sorted(set(obj) - set(_EXPLICIT_FIELDS))
    if unknown:
        raise TraceError(f"{path}: unknown field {unknown[0]!r}")
    values = {name: require(dict(obj), name, tp, path, optional=not required)
              for name, (tp, required) in _EXPLICIT_FIELDS.items()}
    behaviour = broker.BEHAVIOURS.get(values["behaviour"] or broker.KAFKA_4_1.name)
    if behaviour is None:
        raise TraceError(f"{path}.behaviour: unknown Kafka behaviour {values['behaviour']!r} "
                         f"(known: {', '.join(broker.BEHAVIOURS)})")
    features = {name: from_json(int, level, f"{path}.features.{name}")
                for name, level in (values["features"] or {}).items()}
    supported = None
    if values["controller_features"] is not None:
        supported = {name: _level_range(span, f"{path}.controller_features.{name}")
                     for name, span in values["controller_features"].items()}
    state = broker.deactivate(broker.initial_state(
        values["cluster_id"], values["metadata_version"], session_timeout=values["session_timeout"] or 9000,
        behaviour=behaviour, features=features, controller_features=supported))
    end = 0
    for i, item in enumerate(values["records"] or []):
        offset, record = BROKER.decode_record(item, f"{path}.records[{i}]")
        if offset < end - 1:
            raise TraceError(f"{path}.records[{i}].offset: {offset} comes after offset {end - 1}")
        try:
            state = broker.replay(state, record, offset)
        except (ValueError, TypeError, KeyError) as exc:
            raise TraceError(f"{path}.records[{i}]: does not replay: {exc}") from exc
        end = offset + 1
    next_offset = values["next_offset"] if values["next_offset"] is not None else end
    if next_offset < 0:
        raise TraceError(f"{path}.next_offset: must not be negative")
    state = broker.log_advanced(state, next_offset)
    if values["active"] is False:
        return state
    return broker.activate(state, values["activated_at"] or 0)


def _level_range(span: object, path: str) -> tuple[int, int]:
    """A ``[min, max]`` pair of levels."""
    if (not isinstance(span, list) or len(span) != 2
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in span)):
        raise TraceError(f"{path}: expected [min, max] levels")
    return span[0], span[1]


cached_explicit_state = ExplicitStates(explicit_state)
"""``explicit_state(obj, path)``, built once per distinct state and reference identity, then shared."""


BROKER = BrokerComponent()
