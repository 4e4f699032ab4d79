"""The partition component of trace format v1: partition leadership and ISR (rules §2).

Each action is named after the reference function that decides it: the controller's AlterPartition
(``alter_partition.alter_partition``, §2.10), ElectLeaders and its periodic tasks (``elect_leaders``,
§2.11), AlterPartitionReassignments (``reassignment.alter_partition_reassignment``, §2.8), what broker
events do to partitions (``partition_events.handle_broker_*``, §2.9), and the partition leader on the
broker (``partition_leader.become_leader`` ... ``handle_alter_partition_result``, §2.12).
``stop_leading`` drops a broker's leader state (``Partition.makeFollower``) and ``advance_clock`` only
moves the trace's clock, which timed inputs use when they give no ``now``.

The replayed state (:class:`PartitionControl`) is the controller's broker, topic and partition
registrations beside each broker's :class:`~kraftspec.reference.partition_leader.PartitionLeaderState`
of the partitions it leads.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional

from kraftspec.reference import partition_leader
from kraftspec.reference.alter_partition import AlterPartitionPartition, AlterPartitionPartitionResult, AlterPartitionRequest
from kraftspec.reference.broker_registration import BrokerRegistration
from kraftspec.reference.elect_leaders import ElectLeadersRequest
from kraftspec.reference.frozen import FrozenMap, PersistentMap
from kraftspec.reference.metadata_version import LATEST_PRODUCTION
from kraftspec.reference.partition import PartitionRegistration, TopicInfo, TopicPartition
from kraftspec.reference.partition_rules import KAFKA_4_3, PARTITION_BEHAVIOURS, PartitionBehaviour
from kraftspec.reference.records import MetadataRecord, PartitionRecord
from kraftspec.traces.format.broker import BROKER, Action, decode_arguments, input_plans
from kraftspec.traces.format.limits import quote
from kraftspec.traces.replay.state_cache import ExplicitStates
from kraftspec.traces.format.values import TraceError, decoder, require

LeaderKey = tuple[int, str, int]
"""A leader state's key: ``(broker_id, topic_id, partition_id)``."""


@dataclass(frozen=True)
class PartitionControl:
    """The replayed state: the controller's registrations and the brokers' partition-leader states."""

    metadata_version: int
    elr_enabled: bool
    brokers: FrozenMap[int, BrokerRegistration]
    topics: FrozenMap[str, TopicInfo]
    partitions: PersistentMap[TopicPartition, PartitionRegistration]
    leaders: FrozenMap[LeaderKey, partition_leader.PartitionLeaderState]
    next_offset: int = 0
    in_flight: FrozenMap[LeaderKey, AlterPartitionPartition] = FrozenMap()
    """Each broker process's AlterPartitionManager: the request it sent for a partition and has no answer for yet
    (it outlives the leader state: new metadata drops the pending change, not the request; a restart drops it)."""
    behaviour: PartitionBehaviour = KAFKA_4_3
    """The Kafka version's partition rules (``partition_rules.PARTITION_BEHAVIOURS``)."""


_NOW = {"now": (int, False)}
_LEADER = {"broker_id": (int, True), "topic_id": (str, True), "partition_id": (int, True)}
_ORDER = {"order": (Optional[tuple[tuple[str, int], ...]], False)}
"""The order Kafka's hash-keyed index visited partitions in (``[[topic_id, partition]]``), where a trace states it."""
_EVENT = {"broker_id": (int, True), **_ORDER}
ACTIONS: dict[str, Action] = {a.name: a for a in (
    Action("alter_partition", "alter_partition.alter_partition", {"request": (AlterPartitionRequest, True)}),
    Action("elect_leaders", "elect_leaders.elect_leaders", {
        "request": (ElectLeadersRequest, True), "order": (Optional[tuple[tuple[str, tuple[int, ...]], ...]], False)}),
    Action("maybe_balance_partition_leaders", "elect_leaders.maybe_balance_partition_leaders", _ORDER),
    Action("maybe_elect_unclean_leaders", "elect_leaders.maybe_elect_unclean_leaders", _ORDER),
    Action("alter_partition_reassignment", "reassignment.alter_partition_reassignment", {
        "topic_name": (str, True), "partition_id": (int, True), "target_replicas": (Optional[tuple[int, ...]], True),
        "allow_replication_factor_change": (bool, False)}),
    Action("handle_broker_fenced", "partition_events.handle_broker_fenced", _EVENT),
    Action("handle_broker_unfenced", "partition_events.handle_broker_unfenced", _EVENT),
    Action("handle_broker_in_controlled_shutdown", "partition_events.handle_broker_in_controlled_shutdown", _EVENT),
    Action("handle_broker_unregistered", "partition_events.handle_broker_unregistered", _EVENT),
    Action("handle_broker_shutdown", "partition_events.handle_broker_shutdown", {
        **_EVENT, "epoch": (int, True), "incarnation_id": (str, True), "is_clean_shutdown": (bool, False)}),
    Action("become_leader", "partition_leader.become_leader", {
        **_LEADER, "log_end_offset": (int, True), "high_watermark": (int, True), "min_insync_replicas": (int, True),
        "replica_lag_time_max_ms": (int, False), **_NOW}),
    Action("update_leader_metadata", "partition_leader.update_leader_metadata", {**_LEADER, **_NOW}),
    Action("update_broker_metadata", "partition_leader.update_broker_metadata", _LEADER),
    Action("stop_leading", "stop_leading", _LEADER),
    Action("append", "partition_leader.append", {**_LEADER, "count": (int, True), **_NOW}),
    Action("follower_fetch", "partition_leader.follower_fetch", {
        **_LEADER, "follower": (int, True), "fetch_offset": (int, True), "broker_epoch": (int, True), **_NOW}),
    Action("maybe_shrink_isr", "partition_leader.maybe_shrink_isr", {**_LEADER, **_NOW}),
    Action("handle_alter_partition_result", "partition_leader.handle_alter_partition_result", {
        **_LEADER, "result": (AlterPartitionPartitionResult, True), **_NOW}),
    Action("advance_clock", "advance_clock", {"now": (int, True)}),
)}
"""Each action's ``rule``: ``module.function`` in ``kraftspec.reference`` (none for ``stop_leading``, ``advance_clock``)."""

_INPUT_PLANS = input_plans(ACTIONS)

_EXPLICIT_FIELDS: dict[str, tuple[Any, bool]] = {
    "metadata_version": (int, True), "elr_enabled": (bool, False), "brokers": (list, False), "topics": (list, False),
    "partitions": (list, False), "leaders": (list, False), "next_offset": (int, False), "behaviour": (str, False),
}
_LEADER_FIELDS: dict[str, tuple[Any, bool]] = {
    "broker_id": (int, True), "topic_id": (str, True), "partition_id": (int, True), "log_end_offset": (int, False),
    "high_watermark": (int, False), "min_insync_replicas": (int, False), "now": (int, False),
    "replica_lag_time_max_ms": (int, False),
}


def _three_replicas(elr_enabled: bool, min_insync_replicas: int) -> dict[str, Any]:
    """Brokers 1-3 (epochs 101-103) unfenced; topic ``foo``'s partition 0 on (1, 2, 3), led by 1, which has become leader."""
    return {
        "metadata_version": LATEST_PRODUCTION, "elr_enabled": elr_enabled,
        "brokers": [{"broker_id": b, "epoch": 100 + b, "incarnation_id": f"incarnation-{b}", "fenced": False}
                    for b in (1, 2, 3)],
        "topics": [{"name": "foo", "topic_id": "FOOFOOFOOFOOFOOFOOFOOw", "min_insync_replicas": min_insync_replicas}],
        "partitions": [{"partition_id": 0, "topic_id": "FOOFOOFOOFOOFOOFOOFOOw", "replicas": [1, 2, 3],
                        "isr": [1, 2, 3], "leader": 1}],
        "leaders": [{"broker_id": 1, "topic_id": "FOOFOOFOOFOOFOOFOOFOOw", "partition_id": 0}],
    }


STANDARD_JSON: dict[str, dict[str, Any]] = {
    "partition/three-replicas": _three_replicas(False, 1),
    "partition/three-replicas-elr": _three_replicas(True, 2),
}
"""The standard initial states, as explicit states (FORMAT.md lists them)."""


class PartitionComponent:
    """The ``partition`` component: decoding and encoding of its inputs, records and explicit initial states."""

    name = "partition"

    @property
    def standard_states(self) -> Mapping[str, Callable[[], PartitionControl]]:
        return STANDARD_STATES

    def decode_input(self, action: str, obj: dict[str, Any], path: str) -> Mapping[str, Any]:
        """The arguments of ``action`` (only those given; the reference's defaults apply to the rest)."""
        return decode_arguments(_INPUT_PLANS, "partition", action, obj, path)

    def encode_input(self, action: str, args: Mapping[str, Any]) -> dict[str, Any]:
        """The JSON arguments of one input."""
        return BROKER.encode_input(action, args)

    def decode_record(self, obj: object, path: str) -> tuple[int, MetadataRecord]:
        """``{"offset": N, "type": "PartitionChangeRecord", ...fields}`` as (offset, record)."""
        return BROKER.decode_record(obj, path)

    def encode_record(self, offset: int, record: MetadataRecord) -> dict[str, Any]:
        """A record with its offset and type name first, then all its fields."""
        return BROKER.encode_record(offset, record)

    def check_explicit(self, obj: dict[str, Any], path: str) -> None:
        """Check an explicit initial state by building it; replays reuse it."""
        cached_explicit_state(obj, path)


def _items(values: dict[str, Any], name: str, path: str) -> list[tuple[str, Any]]:
    return [(f"{path}.{name}[{i}]", item) for i, item in enumerate(values[name] or [])]


def explicit_state(obj: Mapping[str, Any], path: str = "initial.explicit") -> PartitionControl:
    """An explicit initial state (§2.1, §2.12): registrations as the log defines them, then the leaders.

    ``{metadata_version, elr_enabled=false, brokers=[BrokerRegistration], topics=[TopicInfo],
    partitions=[PartitionRecord fields without offset and type], leaders=[{broker_id, topic_id,
    partition_id, log_end_offset=0, high_watermark=0, min_insync_replicas=1, now=0,
    replica_lag_time_max_ms=30000}], next_offset=0, behaviour="4.3+"}``: records are written from ``next_offset``
    on; each leader is ``become_leader`` on the partition's registration and the brokers at ``now`` (its broker
    epoch: its registration's); ``behaviour`` names the Kafka version's partition rules ("4.0", "4.1-4.2", "4.3+").
    """
    unknown = sorted(set(obj) - set(_EXPLICIT_FIELDS))
    if unknown:
        raise TraceError(f"{path}: unknown field {unknown[0]!r}")
    values = {name: require(dict(obj), name, tp, path, optional=not required)
              for name, (tp, required) in _EXPLICIT_FIELDS.items()}
    brokers: dict[int, BrokerRegistration] = {}
    for where, item in _items(values, "brokers", path):
        registration = decoder(BrokerRegistration)(item, where)
        brokers[registration.broker_id] = registration
    topics: dict[str, TopicInfo] = {}
    for where, item in _items(values, "topics", path):
        topic = decoder(TopicInfo)(item, where)
        topics[topic.topic_id] = topic
    partitions: dict[TopicPartition, PartitionRegistration] = {}
    for where, item in _items(values, "partitions", path):
        record = decoder(PartitionRecord)(item, where)
        if record.topic_id not in topics:
            raise TraceError(f"{where}.topic_id: no topic {record.topic_id!r} in topics")
        partitions[(record.topic_id, record.partition_id)] = PartitionRegistration.from_record(record)
    leaders: dict[LeaderKey, partition_leader.PartitionLeaderState] = {}
    for where, item in _items(values, "leaders", path):
        if not isinstance(item, dict) or not set(_LEADER_FIELDS).issuperset(item):
            raise TraceError(f"{where}: expected an object with fields {', '.join(_LEADER_FIELDS)}")
        given = {name: require(item, name, tp, where, optional=not required)
                 for name, (tp, required) in _LEADER_FIELDS.items()}
        key = (given["broker_id"], given["topic_id"], given["partition_id"])
        if key[1:] not in partitions or key[0] not in brokers:
            raise TraceError(f"{where}: no partition {key[1]}:{key[2]} or no broker {key[0]}")
        lag = given["replica_lag_time_max_ms"]
        leaders[key] = partition_leader.become_leader(
            key[0], brokers[key[0]].epoch, key[2], partitions[key[1:]], brokers,
            log_end_offset=given["log_end_offset"] or 0, high_watermark=given["high_watermark"] or 0,
            min_insync_replicas=1 if given["min_insync_replicas"] is None else given["min_insync_replicas"],
            now_ms=given["now"] or 0,
            replica_lag_time_max_ms=partition_leader.REPLICA_LAG_TIME_MAX_MS if lag is None else lag)
    behaviour = PARTITION_BEHAVIOURS.get(values["behaviour"] or KAFKA_4_3.name)
    if behaviour is None:
        raise TraceError(f"{path}.behaviour: expected one of {', '.join(PARTITION_BEHAVIOURS)}, "
                         f"got {quote(values['behaviour'])}")
    return PartitionControl(values["metadata_version"], bool(values["elr_enabled"]), FrozenMap(brokers),
                            FrozenMap(topics), PersistentMap(partitions), FrozenMap(leaders),
                            values["next_offset"] or 0,
                            behaviour=behaviour)


cached_explicit_state = ExplicitStates(explicit_state)
"""``explicit_state(obj, path)``, built once per distinct state and reference identity, then shared."""


STANDARD_STATES: dict[str, Callable[[], PartitionControl]] = {
    name: functools.partial(cached_explicit_state, obj, f"initial.standard {name}") for name,
    obj in STANDARD_JSON.items()}

PARTITION = PartitionComponent()
