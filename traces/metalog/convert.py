"""Decoded record dicts -> the reference's frozen record dataclasses (``kraftspec.reference.records``).

The dict keys are the schema's snake_case names (rules §5.8); the dataclasses use the same
names except for the endpoint/feature structs, whose ``min/max_supported_version`` become
``min_supported``/``max_supported``. Record types the reference does not model stay dicts.
"""

from __future__ import annotations

from typing import Any, Callable

from kraftspec.reference import records as r

Converter = Callable[[dict[str, Any], int], Any]


def _endpoints(items: tuple[dict[str, Any], ...]) -> tuple[r.Endpoint, ...]:
    return tuple(r.Endpoint(name=e["name"], host=e["host"], port=e["port"],
                            security_protocol=e["security_protocol"]) for e in items)


def _features(items: tuple[dict[str, Any], ...]) -> tuple[r.FeatureRange, ...]:
    return tuple(r.FeatureRange(name=f["name"], min_supported=f["min_supported_version"],
                                max_supported=f["max_supported_version"]) for f in items)


def _register_broker(d: dict[str, Any], v: int) -> r.RegisterBrokerRecord:
    return r.RegisterBrokerRecord(
        broker_id=d["broker_id"], incarnation_id=d["incarnation_id"], broker_epoch=d["broker_epoch"],
        end_points=_endpoints(d["end_points"]), features=_features(d["features"]), rack=d["rack"],
        fenced=d["fenced"], in_controlled_shutdown=d["in_controlled_shutdown"], log_dirs=d["log_dirs"],
        is_migrating_zk_broker=d["is_migrating_zk_broker"], cordoned_log_dirs=d["cordoned_log_dirs"], version=v)


def _register_controller(d: dict[str, Any], v: int) -> r.RegisterControllerRecord:
    return r.RegisterControllerRecord(
        controller_id=d["controller_id"], incarnation_id=d["incarnation_id"],
        zk_migration_ready=d["zk_migration_ready"],
        end_points=_endpoints(d["end_points"]), features=_features(d["features"]), version=v)


def _plain(cls: type) -> Converter:
    """Dataclasses whose fields are exactly the schema's keys."""
    return lambda d, v: cls(**d, version=v)


CONVERTERS: dict[int, Converter] = {
    0: _register_broker,
    1: _plain(r.UnregisterBrokerRecord),
    2: _plain(r.TopicRecord),
    3: _plain(r.PartitionRecord),
    5: _plain(r.PartitionChangeRecord),
    7: _plain(r.FenceBrokerRecord),
    8: _plain(r.UnfenceBrokerRecord),
    9: _plain(r.RemoveTopicRecord),
    12: _plain(r.FeatureLevelRecord),
    17: _plain(r.BrokerRegistrationChangeRecord),
    27: _register_controller,
    28: _plain(r.ClearElrRecord),
}
"""apiKey -> converter, for every record type ``kraftspec.reference.records`` defines (NoOp needs none)."""


def to_record(api_key: int, version: int, fields: dict[str, Any]) -> Any:
    """The reference dataclass for a decoded record, or the dict itself for types the reference does not model."""
    convert = CONVERTERS.get(api_key)
    return fields if convert is None else convert(fields, version)
