"""The cluster image a metadata log (or snapshot) defines, built record by record.

Broker records replay through ``kraftspec.reference.broker_registration`` (kraft-semantics §1.3–1.4),
partition records through ``kraftspec.reference.partition`` (§2.2); the other record types replay as
metadata-records §7 describes. The audit reads the image *before* each record to judge it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from kraftspec.reference.broker_registration import BrokerRegistration, ReplayError, apply_change, registration_from_record
from kraftspec.reference.partition import PartitionRegistration, merge
from kraftspec.reference.records import PartitionChangeRecord

TOPIC_RESOURCE = 2
"""ConfigRecord ResourceType TOPIC (metadata-records §5)."""
METADATA_VERSION = "metadata.version"
KRAFT_VERSION = "kraft.version"
ELR_VERSION = "eligible.leader.replicas.version"
CLEAR_ELR = PartitionChangeRecord(partition_id=-1, topic_id="", eligible_leader_replicas=(), last_known_elr=())
"""The change merged into each partition with a non-empty ELR or last-known ELR by ClearElrRecord (§2.2)."""


def _frozen(value: Any) -> Any:
    """A hashable, comparable form of a decoded dict (nested dicts become sorted item tuples)."""
    if isinstance(value, dict):
        return tuple(sorted((k, _frozen(v)) for k, v in value.items()))
    if isinstance(value, tuple):
        return tuple(_frozen(v) for v in value)
    return value


@dataclass
class Image:
    """The replicated state: features, brokers, controllers, topics, partitions and the other record families."""

    features: dict[str, int] = field(default_factory=dict)
    brokers: dict[int, BrokerRegistration] = field(default_factory=dict)
    controllers: dict[int, Any] = field(default_factory=dict)
    topics: dict[str, str] = field(default_factory=dict)
    partitions: dict[tuple[str, int], PartitionRegistration] = field(default_factory=dict)
    configs: dict[tuple[int, str], dict[str, str]] = field(default_factory=dict)
    client_quotas: dict[Any, dict[str, float]] = field(default_factory=dict)
    next_producer_id: Optional[int] = None
    acls: dict[str, Any] = field(default_factory=dict)
    scram_credentials: dict[tuple[str, int], Any] = field(default_factory=dict)
    delegation_tokens: dict[str, Any] = field(default_factory=dict)
    zk_migration_state: Optional[int] = None

    @property
    def metadata_version(self) -> Optional[int]:
        """The finalized metadata.version level, ``None`` before any FeatureLevelRecord (pre-3.3 logs)."""
        return self.features.get(METADATA_VERSION)

    @property
    def elr_enabled(self) -> bool:
        """ELR is on iff ``eligible.leader.replicas.version`` ≥ 1 (kraft-semantics §2.7)."""
        return self.features.get(ELR_VERSION, 0) >= 1

    def topic_id_by_name(self, name: str) -> Optional[str]:
        """The id of the topic called ``name``, if any."""
        return next((tid for tid, n in self.topics.items() if n == name), None)

    def apply(self, api_key: int, record: Any) -> None:
        """Replay one record (dataclass for the types the reference models, dict for the others).

        Raises ``ReplayError`` where Kafka's replay would throw (broker records with a wrong epoch).
        """
        handler = _REPLAY.get(api_key)
        if handler is not None:
            handler(self, record)

    def comparable(self) -> dict[str, Any]:
        """Every family in a comparable form; kraft.version lives in control records, not here (metadata-records §6)."""
        return {
            "features": {k: v for k, v in self.features.items() if k != KRAFT_VERSION},
            "brokers": self.brokers, "controllers": self.controllers, "topics": self.topics,
            "partitions": self.partitions, "configs": self.configs, "client_quotas": self.client_quotas,
            "next_producer_id": self.next_producer_id, "acls": self.acls, "scram_credentials": self.scram_credentials,
            "delegation_tokens": self.delegation_tokens, "zk_migration_state": self.zk_migration_state,
        }


def differences(expected: Image, actual: Image, limit: int = 5) -> list[str]:
    """Where the log's image (``expected``) and a snapshot's (``actual``) differ, at most ``limit`` entries; a
    snapshot holding no ZkMigrationStateRecord (4.x replays it as a no-op, metadata-records §5) is not judged on it."""
    out: list[str] = []
    left, right = expected.comparable(), actual.comparable()
    for family, a in left.items():
        b = right[family]
        if a == b or (family == "zk_migration_state" and b is None):
            continue
        if isinstance(a, dict) and isinstance(b, dict):
            for key in sorted(set(a) | set(b), key=repr):
                if a.get(key) != b.get(key):
                    out.append(f"{family}[{key!r}]: log {_short(a.get(key))} vs snapshot {_short(b.get(key))}")
                    if len(out) >= limit:
                        return out
        else:
            out.append(f"{family}: log {_short(a)} vs snapshot {_short(b)}")
        if len(out) >= limit:
            break
    return out


def _short(value: Any) -> str:
    text = "absent" if value is None else repr(value)
    return text if len(text) <= 300 else text[:297] + "..."


# ---------------------------------------------------------------------------------------------------
# Replay of each record type.

def _register_broker(image: Image, rec: Any) -> None:
    image.brokers[rec.broker_id] = registration_from_record(rec)


def _unregister_broker(image: Image, rec: Any) -> None:
    current = image.brokers.get(rec.broker_id)
    if current is None or current.epoch != rec.broker_epoch:
        raise ReplayError(f"broker {rec.broker_id} is not registered with epoch {rec.broker_epoch}")
    del image.brokers[rec.broker_id]


def _broker_change(image: Image, rec: Any) -> None:
    broker_id = rec.id if hasattr(rec, "id") else rec.broker_id
    image.brokers[broker_id] = apply_change(image.brokers.get(broker_id), rec)


def _topic(image: Image, rec: Any) -> None:
    image.topics[rec.topic_id] = rec.name


def _remove_topic(image: Image, rec: Any) -> None:
    name = image.topics.pop(rec.topic_id, None)
    for key in [k for k in image.partitions if k[0] == rec.topic_id]:
        del image.partitions[key]
    if name is not None:
        image.configs.pop((TOPIC_RESOURCE, name), None)


def _partition(image: Image, rec: Any) -> None:
    image.partitions[(rec.topic_id, rec.partition_id)] = PartitionRegistration.from_record(rec)


def _partition_change(image: Image, rec: Any) -> None:
    key = (rec.topic_id, rec.partition_id)
    current = image.partitions.get(key)
    if current is not None:
        image.partitions[key] = merge(current, rec)


def _config(image: Image, d: dict[str, Any]) -> None:
    resource = (d["resource_type"], d["resource_name"])
    entries = dict(image.configs.get(resource, {}))
    if d["value"] is None:
        entries.pop(d["name"], None)
    else:
        entries[d["name"]] = d["value"]
    if entries:
        image.configs[resource] = entries
    else:
        image.configs.pop(resource, None)


def _feature_level(image: Image, rec: Any) -> None:
    if rec.feature_level == 0 and rec.name != METADATA_VERSION:
        image.features.pop(rec.name, None)
    else:
        image.features[rec.name] = rec.feature_level


def _client_quota(image: Image, d: dict[str, Any]) -> None:
    entity = tuple(sorted((e["entity_type"], e["entity_name"]) for e in d["entity"]))
    quotas = dict(image.client_quotas.get(entity, {}))
    if d["remove"]:
        quotas.pop(d["key"], None)
    else:
        quotas[d["key"]] = d["value"]
    if quotas:
        image.client_quotas[entity] = quotas
    else:
        image.client_quotas.pop(entity, None)


def _producer_ids(image: Image, d: dict[str, Any]) -> None:
    image.next_producer_id = d["next_producer_id"]


def _register_controller(image: Image, rec: Any) -> None:
    image.controllers[rec.controller_id] = (rec.incarnation_id, rec.zk_migration_ready, rec.end_points, rec.features)


def _clear_elr(image: Image, rec: Any) -> None:
    topic_id = image.topic_id_by_name(rec.topic_name) if rec.topic_name else None
    for key, partition in list(image.partitions.items()):
        if (not rec.topic_name or key[0] == topic_id) and (partition.elr or partition.last_known_elr):
            image.partitions[key] = merge(partition, CLEAR_ELR)


def _keyed(family: str, *keys: str, remove: bool = False) -> Any:
    """Replay for record families stored whole under a key (ACLs, SCRAM credentials, delegation tokens)."""
    def replay(image: Image, d: dict[str, Any]) -> None:
        store = getattr(image, family)
        key = d[keys[0]] if len(keys) == 1 else tuple(d[k] for k in keys)
        if remove:
            store.pop(key, None)
        else:
            store[key] = _frozen(d)
    return replay


def _zk_migration(image: Image, d: dict[str, Any]) -> None:
    image.zk_migration_state = d["zk_migration_state"]


_REPLAY = {
    0: _register_broker, 1: _unregister_broker, 2: _topic, 3: _partition, 4: _config, 5: _partition_change,
    7: _broker_change, 8: _broker_change, 9: _remove_topic,
    10: _keyed("delegation_tokens", "token_id"), 11: _keyed("scram_credentials", "name", "mechanism"),
    12: _feature_level, 14: _client_quota, 15: _producer_ids, 17: _broker_change,
    18: _keyed("acls", "id"), 19: _keyed("acls", "id", remove=True),
    21: _zk_migration, 22: _keyed("scram_credentials", "name", "mechanism", remove=True),
    26: _keyed("delegation_tokens", "token_id", remove=True), 27: _register_controller, 28: _clear_elr,
}
"""apiKey -> replay; NoOp (20) and the transaction markers (23–25) change nothing."""
