"""The cluster image a metadata log (or snapshot) defines, built record by record.

Broker records replay through ``kraftspec.reference.broker_registration`` (rules §1.3–1.4),
partition records through ``kraftspec.reference.partition`` (§2.2); the other record types replay as
rules §5.7 describes. The audit reads the image *before* each record to judge it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Optional

from kraftspec.reference.broker_registration import BrokerRegistration, ReplayError, apply_change, registration_from_record
from kraftspec.reference.partition import PartitionRegistration, merge
from kraftspec.reference.records import PartitionChangeRecord

TOPIC_RESOURCE = 2
"""ConfigRecord ResourceType TOPIC (rules §5.5)."""
METADATA_VERSION = "metadata.version"
KRAFT_VERSION = "kraft.version"
ELR_VERSION = "eligible.leader.replicas.version"
CLEAR_ELR = PartitionChangeRecord(partition_id=-1, topic_id="", eligible_leader_replicas=(), last_known_elr=())
"""The change merged into each partition with a non-empty ELR or last-known ELR by ClearElrRecord (§2.2)."""


class TopicTable(dict):  # type: ignore[type-arg]
    """topic id -> name (a ``dict``), with an index name -> ids so :meth:`first_id` is not a scan (issue 21: a
    TopicRecord is judged against every name in use)."""

    def __init__(self, items: Any = ()) -> None:
        super().__init__()
        self._by_name: dict[Any, dict[str, None]] = {}
        self._order: dict[str, int] = {}
        self._count = 0
        for key, value in dict(items).items():
            self[key] = value

    def __setitem__(self, topic_id: str, name: Any) -> None:
        if topic_id in self:
            self._unindex(topic_id, dict.__getitem__(self, topic_id))
        else:
            self._order[topic_id] = self._count
            self._count += 1
        dict.__setitem__(self, topic_id, name)
        self._by_name.setdefault(name, {})[topic_id] = None

    def __delitem__(self, topic_id: str) -> None:
        name = dict.__getitem__(self, topic_id)
        dict.__delitem__(self, topic_id)
        self._unindex(topic_id, name)
        del self._order[topic_id]

    def _unindex(self, topic_id: str, name: Any) -> None:
        ids = self._by_name[name]
        del ids[topic_id]
        if not ids:
            del self._by_name[name]

    def pop(self, topic_id: str, *default: Any) -> Any:
        if topic_id in self:
            name = dict.__getitem__(self, topic_id)
            del self[topic_id]
            return name
        if default:
            return default[0]
        raise KeyError(topic_id)

    def first_id(self, name: Any) -> Optional[str]:
        """The id of the earliest-created topic still called ``name`` (as a scan in insertion order would find)."""
        ids = self._by_name.get(name)
        if not ids:
            return None
        return next(iter(ids)) if len(ids) == 1 else min(ids, key=self._order.__getitem__)

    def _unsupported(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("TopicTable: use item assignment, del or pop (the index follows them)")

    update = setdefault = popitem = clear = __ior__ = _unsupported  # type: ignore[assignment]


class PartitionTable(dict):  # type: ignore[type-arg]
    """(topic id, partition id) -> :class:`PartitionRegistration` (a ``dict``), with indexes by topic, by leader
    and of the partitions with an ELR or last-known ELR, so that RemoveTopicRecord, ClearElrRecord and the fencing
    rule touch only the partitions concerned, not every partition (issue 21: linear time in the log's length)."""

    def __init__(self, items: Any = ()) -> None:
        super().__init__()
        self._by_topic: dict[str, dict[tuple[str, int], None]] = {}
        self._by_leader: dict[int, dict[tuple[str, int], None]] = {}
        self._elr_by_topic: dict[str, dict[tuple[str, int], None]] = {}
        for key, value in dict(items).items():
            self[key] = value

    @staticmethod
    def _add(index: dict[Any, dict[tuple[str, int], None]], group: Any, key: tuple[str, int]) -> None:
        index.setdefault(group, {})[key] = None

    @staticmethod
    def _drop(index: dict[Any, dict[tuple[str, int], None]], group: Any, key: tuple[str, int]) -> None:
        keys = index.get(group)
        if keys is not None:
            keys.pop(key, None)
            if not keys:
                del index[group]

    def __setitem__(self, key: tuple[str, int], partition: PartitionRegistration) -> None:
        old = dict.get(self, key)
        if old is None:
            self._add(self._by_topic, key[0], key)
        else:
            if old.leader != partition.leader:
                self._drop(self._by_leader, old.leader, key)
            if (old.elr or old.last_known_elr) and not (partition.elr or partition.last_known_elr):
                self._drop(self._elr_by_topic, key[0], key)
        dict.__setitem__(self, key, partition)
        self._add(self._by_leader, partition.leader, key)
        if partition.elr or partition.last_known_elr:
            self._add(self._elr_by_topic, key[0], key)

    def __delitem__(self, key: tuple[str, int]) -> None:
        old = dict.__getitem__(self, key)
        dict.__delitem__(self, key)
        self._drop(self._by_topic, key[0], key)
        self._drop(self._by_leader, old.leader, key)
        self._drop(self._elr_by_topic, key[0], key)

    def pop(self, key: tuple[str, int], *default: Any) -> Any:
        if key in self:
            value = dict.__getitem__(self, key)
            del self[key]
            return value
        if default:
            return default[0]
        raise KeyError(key)

    def of_topic(self, topic_id: str) -> list[tuple[str, int]]:
        """The keys of ``topic_id``'s partitions."""
        return list(self._by_topic.get(topic_id, ()))

    def led_by(self, broker_id: int) -> list[tuple[str, int]]:
        """The keys of the partitions ``broker_id`` leads."""
        return list(self._by_leader.get(broker_id, ()))

    def with_elr(self, topic_id: Optional[str] = None) -> list[tuple[str, int]]:
        """The keys of the partitions (of ``topic_id``, or of every topic) with a non-empty ELR or last-known ELR."""
        if topic_id is not None:
            return list(self._elr_by_topic.get(topic_id, ()))
        return [key for keys in self._elr_by_topic.values() for key in keys]

    def _unsupported(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("PartitionTable: use item assignment, del or pop (the indexes follow them)")

    update = setdefault = popitem = clear = __ior__ = _unsupported  # type: ignore[assignment]


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
    topics: TopicTable = field(default_factory=TopicTable)
    partitions: PartitionTable = field(default_factory=PartitionTable)
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
        """ELR is on iff ``eligible.leader.replicas.version`` ≥ 1 (rules §2.7)."""
        return self.features.get(ELR_VERSION, 0) >= 1

    def topic_id_by_name(self, name: str) -> Optional[str]:
        """The id of the topic called ``name``, if any (the earliest created, should two share it)."""
        return self.topics.first_id(name)

    def apply(self, api_key: int, record: Any) -> None:
        """Replay one record (dataclass for the types the reference models, dict for the others).

        Raises ``ReplayError`` where Kafka's replay would throw (broker records with a wrong epoch).
        """
        handler = _REPLAY.get(api_key)
        if handler is not None:
            handler(self, record)

    def comparable(self) -> dict[str, Any]:
        """Every family in a comparable form; kraft.version lives in control records, not here (rules §5.6)."""
        return {
            "features": {k: v for k, v in self.features.items() if k != KRAFT_VERSION},
            "brokers": {b: replace(r, listeners=_by_name(r.listeners), features=_by_name(r.features))
                        for b, r in self.brokers.items()},
            "controllers": {c: (v[0], v[1], _by_name(v[2]), _by_name(v[3])) for c, v in self.controllers.items()},
            "topics": self.topics,
            "partitions": self.partitions, "configs": self.configs, "client_quotas": self.client_quotas,
            "next_producer_id": self.next_producer_id, "acls": self.acls, "scram_credentials": self.scram_credentials,
            "delegation_tokens": self.delegation_tokens, "zk_migration_state": self.zk_migration_state,
        }


def _by_name(items: Any) -> Any:
    """Listeners or features as a collection keyed by name: Kafka builds these records from hash maps, so a snapshot
    lists a broker's listeners or a controller's features in another order than the log did (issue 20)."""
    def name(item: Any) -> str:
        value = item.get("name") if isinstance(item, dict) else getattr(item, "name", None)
        return repr(item) if value is None else str(value)
    return tuple(sorted(items, key=name)) if isinstance(items, (tuple, list)) else items


def differences(expected: Image, actual: Image, limit: int = 5) -> list[str]:
    """Where the log's image (``expected``) and a snapshot's (``actual``) differ, at most ``limit`` entries; a
    snapshot holding no ZkMigrationStateRecord (4.x replays it as a no-op, rules §5.5) is not judged on it."""
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
    for key in image.partitions.of_topic(rec.topic_id):
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
    entries = image.configs.get(resource)
    if entries is None:
        entries = image.configs[resource] = {}
    if d["value"] is None:
        entries.pop(d["name"], None)
    else:
        entries[d["name"]] = d["value"]  # in place: a resource's entries are never copied per record
    if not entries:
        del image.configs[resource]


def _feature_level(image: Image, rec: Any) -> None:
    if rec.feature_level == 0 and rec.name != METADATA_VERSION:
        image.features.pop(rec.name, None)
    else:
        image.features[rec.name] = rec.feature_level


def entity_key(entity: Any) -> tuple[tuple[Any, Any], ...]:
    """A client-quota entity as a sorted tuple of (type, name); a null name (the default entity) sorts first among
    names of its type (KIP-546's ``<default>``), so two parts of one type, one of them null, still sort."""
    return tuple(sorted(((e["entity_type"], e["entity_name"]) for e in entity),
                        key=lambda part: (part[0] is not None, part[0] or "", part[1] is not None, part[1] or "")))


def _client_quota(image: Image, d: dict[str, Any]) -> None:
    entity = entity_key(d["entity"])
    quotas = image.client_quotas.get(entity)
    if quotas is None:
        quotas = image.client_quotas[entity] = {}
    if d["remove"]:
        quotas.pop(d["key"], None)
    else:
        quotas[d["key"]] = d["value"]  # in place: an entity's quotas are never copied per record
    if not quotas:
        del image.client_quotas[entity]


def _producer_ids(image: Image, d: dict[str, Any]) -> None:
    image.next_producer_id = d["next_producer_id"]


def _register_controller(image: Image, rec: Any) -> None:
    image.controllers[rec.controller_id] = (rec.incarnation_id, rec.zk_migration_ready, rec.end_points, rec.features)


def _clear_elr(image: Image, rec: Any) -> None:
    if rec.topic_name:
        topic_id = image.topic_id_by_name(rec.topic_name)
        keys = [] if topic_id is None else image.partitions.with_elr(topic_id)
    else:
        keys = image.partitions.with_elr()
    partitions = image.partitions
    for key in keys:  # only the partitions with an ELR or last-known ELR (indexed), not every partition
        partitions[key] = merge(partitions[key], CLEAR_ELR)


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
