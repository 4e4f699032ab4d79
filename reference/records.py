"""Metadata records the reference writes and replays (rules §5.8), as frozen dataclasses.

Field names are the schema's in snake_case; ``version`` is the record schema version the controller
would write. List fields of PartitionChangeRecord use ``None`` for "unchanged" and ``()`` for "empty",
exactly as the schema's nullable fields do. UUIDs are their base64 string form.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Union


NO_LEADER = -1
NO_LEADER_CHANGE = -2


@dataclass(frozen=True, slots=True, kw_only=True)
class Endpoint:
    """A listener endpoint: name, host, port and security protocol (PLAINTEXT=0, SSL=1, ...)."""

    name: str
    host: str
    port: int
    security_protocol: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class FeatureRange:
    """A supported-version range ``[min_supported, max_supported]`` of one feature."""

    name: str
    min_supported: int
    max_supported: int


@dataclass(frozen=True, slots=True, kw_only=True)
class RegisterBrokerRecord:
    """apiKey 0: a broker's whole registration; ``broker_epoch`` is assigned by the controller (§1.3)."""

    broker_id: int
    incarnation_id: str
    broker_epoch: int
    end_points: tuple[Endpoint, ...] = ()
    features: tuple[FeatureRange, ...] = ()
    rack: Optional[str] = None
    fenced: bool = True
    in_controlled_shutdown: bool = False
    log_dirs: tuple[str, ...] = ()
    is_migrating_zk_broker: bool = False
    cordoned_log_dirs: Optional[tuple[str, ...]] = None
    version: int = 0
    API_KEY = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class UnregisterBrokerRecord:
    """apiKey 1: removes a registration; the epoch must match the current one (§1.4)."""

    broker_id: int
    broker_epoch: int
    version: int = 0
    API_KEY = 1


@dataclass(frozen=True, slots=True, kw_only=True)
class FenceBrokerRecord:
    """apiKey 7: fence change written below MV 3.3-IV2, still replayed in 4.x (§1.4)."""

    id: int
    epoch: int
    version: int = 0
    API_KEY = 7


@dataclass(frozen=True, slots=True, kw_only=True)
class UnfenceBrokerRecord:
    """apiKey 8: unfence change written below MV 3.3-IV2, still replayed in 4.x (§1.4)."""

    id: int
    epoch: int
    version: int = 0
    API_KEY = 8


FENCE = 1
UNFENCE = -1
NO_FENCING_CHANGE = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerRegistrationChangeRecord:
    """apiKey 17: a delta; ``fenced`` 1 = fence, -1 = unfence, 0 = no change; ``in_controlled_shutdown`` 1 = enter."""

    broker_id: int
    broker_epoch: int
    fenced: int = NO_FENCING_CHANGE
    in_controlled_shutdown: int = 0
    log_dirs: tuple[str, ...] = ()
    cordoned_log_dirs: Optional[tuple[str, ...]] = None
    version: int = 0
    API_KEY = 17


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicRecord:
    """apiKey 2: a topic's name and id."""

    name: str
    topic_id: str
    version: int = 0
    API_KEY = 2


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfigRecord:
    """apiKey 4: sets one config of a resource (``resource_type`` 2 = TOPIC, 4 = BROKER); a null value deletes it."""

    resource_type: int
    resource_name: str
    name: str
    value: Optional[str] = None
    version: int = 0
    API_KEY = 4


@dataclass(frozen=True, slots=True, kw_only=True)
class RemoveTopicRecord:
    """apiKey 9: removes a topic, its partitions and configs."""

    topic_id: str
    version: int = 0
    API_KEY = 9


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionRecord:
    """apiKey 3: a partition's full state at creation (or in a snapshot)."""

    partition_id: int
    topic_id: str
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int = 0
    partition_epoch: int = 0
    removing_replicas: tuple[int, ...] = ()
    adding_replicas: tuple[int, ...] = ()
    leader_recovery_state: int = 0
    directories: tuple[str, ...] = ()
    eligible_leader_replicas: Optional[tuple[int, ...]] = None
    last_known_elr: Optional[tuple[int, ...]] = None
    version: int = 0
    API_KEY = 3


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionChangeRecord:
    """apiKey 5: a delta; ``None`` lists are unchanged, leader -2 is unchanged, recovery state -1 is unchanged."""

    partition_id: int
    topic_id: str
    isr: Optional[tuple[int, ...]] = None
    leader: int = NO_LEADER_CHANGE
    replicas: Optional[tuple[int, ...]] = None
    removing_replicas: Optional[tuple[int, ...]] = None
    adding_replicas: Optional[tuple[int, ...]] = None
    leader_recovery_state: int = -1
    directories: Optional[tuple[str, ...]] = None
    eligible_leader_replicas: Optional[tuple[int, ...]] = None
    last_known_elr: Optional[tuple[int, ...]] = None
    version: int = 0
    API_KEY = 5


@dataclass(frozen=True, slots=True, kw_only=True)
class FeatureLevelRecord:
    """apiKey 12: finalizes a feature at a level (level 0 removes it)."""

    name: str
    feature_level: int
    version: int = 0
    API_KEY = 12


@dataclass(frozen=True, slots=True, kw_only=True)
class RegisterControllerRecord:
    """apiKey 27: a controller's registration (KIP-919); replay replaces the previous one."""

    controller_id: int
    incarnation_id: str
    zk_migration_ready: bool = False
    end_points: tuple[Endpoint, ...] = ()
    features: tuple[FeatureRange, ...] = ()
    version: int = 0
    API_KEY = 27


@dataclass(frozen=True, slots=True, kw_only=True)
class ClearElrRecord:
    """apiKey 28: clears ELR and lastKnownElr of a topic's partitions (empty name = all topics)."""

    topic_name: str = ""
    version: int = 0
    API_KEY = 28


@dataclass(frozen=True, slots=True, kw_only=True)
class NoOpRecord:
    """apiKey 20: written by the active controller every ``metadata.max.idle.interval.ms``."""

    version: int = 0
    API_KEY = 20


MetadataRecord = Union[
    RegisterBrokerRecord, UnregisterBrokerRecord, FenceBrokerRecord, UnfenceBrokerRecord,
    BrokerRegistrationChangeRecord, TopicRecord, ConfigRecord, RemoveTopicRecord, PartitionRecord,
    PartitionChangeRecord, FeatureLevelRecord, RegisterControllerRecord, ClearElrRecord, NoOpRecord,
]
