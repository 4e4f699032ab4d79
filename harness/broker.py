"""The ``broker`` component's hooks for the Kafka harness (``org.apache.kafka.controller.KraftspecBrokerSession``).

* :func:`kafka_initial`: a trace's ``initial`` object as the Java session opens it. An explicit state goes as it
  is, its records decoded by the trace format and written out in Kafka's JSON form (every field stated, camelCase
  names); a standard state is built by the reference (``kraftspec.models.broker_strategies``) and sent as the log
  that built it plus the active controller's soft state (heartbeat entries and sessions), so both sides start
  from the same state.
* :func:`trace_step`: Kafka's answer as a trace step. Where Kafka chose what the input leaves open, the step's
  input states Kafka's choice, so that the reference takes the same one: the expired session the stale-broker
  task fenced (``which``: the first expired entry in Kafka's tracker map, a hash order), the topic id
  ``create_topic`` drew (``Uuid.randomUuid``) and the order it changed partitions in (``order``: Kafka walks
  ``BrokersToIsrs``, ``BrokersToElrs`` and ``directoriesToPartitions``, hash-keyed by topic id, and each broker's
  partitions in the order they joined). :func:`kafka_input` keeps a stated ``order`` from Kafka.
* :func:`behaviour_for` and :func:`differential_initials`: the reference's ``KafkaBehaviour`` of a Kafka version and
  the initial states the differential runs start from (``benchmarks/differential_kafka_broker.py``;
  ``benchmarks/kafka_broker_versions.py`` shows the behaviours that differ between versions).

A standard state's trace is a 4.1+ trace (``KafkaBehaviour`` "4.1+", Kafka 4.1 to 4.3; for UpdateFeatures, §1.11,
Kafka 4.3's feature levels: Kafka 4.1 and 4.2 traces that update features state the behaviours "4.1" and "4.2");
Kafka 3.9's heartbeat manager takes no soft state from outside, so on 3.9 the standard states are not expressible
(state them explicitly).
"""

from __future__ import annotations

import re
from typing import Any, Callable, Mapping

from kraftspec.harness.adapter import default_trace_step
from kraftspec.models import broker_strategies
from kraftspec.reference import broker
from kraftspec.reference.records import MetadataRecord
from kraftspec.traces.format.broker import BROKER

_RENAMED = {"min_supported": "minSupportedVersion", "max_supported": "maxSupportedVersion"}
_SNAKE = re.compile(r"_([a-z0-9])")

STANDARD_LOGS: dict[str, Callable[[], tuple[broker.ClusterControl, list[tuple[int, MetadataRecord]]]]] = {
    "broker/running-cluster": broker_strategies.running_cluster,
    "broker/leaderless": broker_strategies.leaderless_cluster,
}
"""How each standard state was built: the reference's state and the records it wrote (with offsets)."""


def camel_case(name: str) -> str:
    """``in_controlled_shutdown`` -> ``inControlledShutdown``; the feature range bounds by Kafka's names."""
    renamed = _RENAMED.get(name)
    return renamed if renamed is not None else _SNAKE.sub(lambda m: m.group(1).upper(), name)


def _kafka_fields(value: Any) -> Any:
    if isinstance(value, dict):
        return {camel_case(key): _kafka_fields(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_kafka_fields(item) for item in value]
    return value


def kafka_record(offset: int, record: MetadataRecord) -> dict[str, Any]:
    """A reference record as the harness reads it: ``{"offset", "type", "version", "data"}``, every field stated.

    The session reads the data at the record type's highest version (replay looks at the fields, never at the
    version), so a record the trace states at a version too old for some of its fields still replays as stated.
    """
    obj = BROKER.encode_record(offset, record)
    data = {key: value for key, value in obj.items() if key not in ("offset", "type", "version")}
    return {"offset": offset, "type": obj["type"], "version": obj.get("version", 0), "data": _kafka_fields(data)}


def _soft_state(state: broker.ClusterControl) -> dict[str, Any]:
    return {"heartbeats": {str(b): {"fenced": h.fenced, "metadata_offset": h.metadata_offset,
                                    "controlled_shutdown_offset": h.controlled_shutdown_offset}
                           for b, h in sorted(state.heartbeats.items())},
            "sessions": {f"{b}:{e}": t for (b, e), t in sorted(state.sessions.items())}}


def kafka_initial(initial: Mapping[str, Any]) -> dict[str, Any]:
    """What ``KraftspecBrokerSession`` opens with: the explicit state's fields, its records in Kafka's form."""
    if "standard" in initial:
        state, log = STANDARD_LOGS[initial["standard"]]()
        features = {name: level for name, level in state.finalized_features.items() if name != broker.METADATA_VERSION}
        return {"cluster_id": state.cluster_id, "metadata_version": state.metadata_version,
                "session_timeout": state.session_timeout, "features": features,
                "records": [kafka_record(offset, record) for offset, record in log],
                "next_offset": state.next_offset, "active": state.active, "activated_at": 0,
                "soft": _soft_state(state)}
    explicit = dict(initial["explicit"])
    records = [kafka_record(*BROKER.decode_record(item, f"initial.explicit.records[{i}]"))
               for i, item in enumerate(explicit.get("records") or ())]
    opened = {key: value for key, value in explicit.items() if key not in ("records", "behaviour")}
    opened["records"] = records
    return opened


ORDERED_ACTIONS = frozenset({"register_broker", "heartbeat", "fence_stale_broker", "unregister_broker"})
"""Inputs whose partition changes Kafka makes in a hash-keyed index's order (their ``order``)."""


CHOICES = ("which", "order", "topic.topic_id")
"""The input fields where a step states what Kafka chose (see the module's docstring)."""


def kafka_input(input: Mapping[str, Any]) -> dict[str, Any]:
    """The input as Kafka gets it: a stated ``order`` is Kafka's own choice, so it is not sent."""
    return {key: value for key, value in input.items() if key != "order"}


def change_order(records: Any) -> list[list[Any]]:
    """The partitions of Kafka's PartitionChangeRecords, in the order it wrote them (``[topic_id, partition]``)."""
    return [[r["data"]["topicId"], r["data"]["partitionId"]] for r in records or ()
            if r["type"] == "PartitionChangeRecord"]


def trace_step(input: Mapping[str, Any], answer: Mapping[str, Any]) -> dict[str, Any]:
    """Kafka's answer as a trace step, its choices stated in the input (see the module's docstring)."""
    step = default_trace_step(input, answer)
    choice = answer.get("choice") or {}
    stated = dict(step["input"])
    if stated["action"] == "fence_stale_broker":
        stated.pop("which", None)
        if "which" in choice:
            stated["which"] = list(choice["which"])
    if "topic_id" in choice:
        stated["topic"] = {**stated["topic"], "topic_id": choice["topic_id"]}
    if stated["action"] in ORDERED_ACTIONS:
        order = change_order((answer.get("output") or {}).get("records"))
        if len(order) > 1:
            stated["order"] = order
    step["input"] = stated
    return step


def _explicit(log: Any, metadata_version: int, features: Mapping[str, int] | None = None,
              extra: tuple[tuple[int, MetadataRecord], ...] = ()) -> dict[str, Any]:
    records = [*log, *extra]
    return {"explicit": {"cluster_id": broker_strategies.CLUSTER_ID, "metadata_version": metadata_version,
                         "session_timeout": broker_strategies.SESSION_TIMEOUT, "features": dict(features or {}),
                         "records": [BROKER.encode_record(offset, record) for offset, record in records],
                         "next_offset": max(offset for offset, _ in records) + 1}}


def behaviour_for(version: str) -> str:
    """The reference's ``KafkaBehaviour`` name for a Kafka version (``reference/broker.py`` ``BEHAVIOURS``)."""
    major, minor = (int(part) for part in version.split(".")[:2])
    if (major, minor) < (4, 0):
        return broker.KAFKA_3_9.name
    if (major, minor) < (4, 1):
        return broker.KAFKA_4_0.name
    if (major, minor) == (4, 1):  # "4.1+" but for the feature levels it knows (§1.11)
        return broker.KAFKA_4_1_ONLY.name
    if (major, minor) == (4, 2):
        return broker.KAFKA_4_2.name
    if (major, minor) < (4, 4):
        return broker.KAFKA_4_1.name
    return broker.KAFKA_4_4.name


LATEST_METADATA_VERSION = {"3.9": 21, "4.0": 25, "4.1": 27, "4.2": 29, "4.3": 30, "4.4": 33}
"""The highest metadata.version each Kafka line knows as production-ready (``MetadataVersion.LATEST_PRODUCTION``)."""


def differential_initials(version: str = "4.3.1") -> dict[str, dict[str, Any]]:
    """The initial states the Kafka differential runs start from, by name: an empty cluster (with and without ELR),
    the running cluster and the whole-cluster restart (the standard states where the version's latest
    metadata.version and behaviour are theirs, else the same logs restored explicitly), the running cluster with ELR
    on (topic ``foo`` at min.insync.replicas 2, a second topic with unclean leader election), and the running cluster
    restored from its log at older metadata.versions. Explicit states carry ``version``'s ``KafkaBehaviour``; ELR
    needs metadata.version 4.0-IV1."""
    from kraftspec.oracle import EMPTY_BROKER_CLUSTER
    from kraftspec.reference.metadata_version import LATEST_PRODUCTION
    from kraftspec.reference.records import ConfigRecord, PartitionRecord, TopicRecord

    behaviour = behaviour_for(version)
    latest = LATEST_METADATA_VERSION[".".join(version.split(".")[:2])]
    elr = {"eligible.leader.replicas.version": 1}
    _, log = broker_strategies.running_cluster(latest)
    end = max(offset for offset, _ in log) + 1
    configured = (
        (end, ConfigRecord(resource_type=2, resource_name="foo", name="min.insync.replicas", value="2")),
        (end + 1, TopicRecord(name="bar", topic_id="BARBARBARBARBARBARBARw")),
        (end + 2, ConfigRecord(resource_type=2, resource_name="bar", name="unclean.leader.election.enable", value="true")),
        (end + 3, PartitionRecord(partition_id=0, topic_id="BARBARBARBARBARBARBARw", replicas=(3, 1), isr=(3, 1),
                                  leader=3, directories=(broker_strategies.directory_of(3),
                                                         broker_strategies.directory_of(1)))),
    )
    initials: dict[str, dict[str, Any]] = {"empty": {"explicit": {**EMPTY_BROKER_CLUSTER["explicit"],
                                                                  "metadata_version": latest}}}
    if latest >= 23:  # 4.0-IV1: ELR
        initials["empty-elr"] = {"explicit": {**initials["empty"]["explicit"], "features": elr}}
        initials["running-elr-configs"] = _explicit(log, latest, elr, configured)
    if behaviour == broker.KAFKA_4_1.name and latest == LATEST_PRODUCTION:
        initials["running-cluster"] = {"standard": "broker/running-cluster"}
        initials["leaderless"] = {"standard": "broker/leaderless"}
    else:
        initials["running-cluster"] = _explicit(log, latest)
        initials["leaderless"] = _explicit(broker_strategies.leaderless_cluster(latest)[1], latest)
    for level in (7, 14, 17, 23):  # 3.3-IV3 (the oldest 4.x reads), 3.6-IV2, 3.7-IV2 (directories), 4.0-IV1
        if level < latest:
            initials[f"running-mv{level}"] = _explicit(broker_strategies.running_cluster(level)[1], level)
    if behaviour != broker.KAFKA_4_1.name:
        for initial in initials.values():
            initial["explicit"]["behaviour"] = behaviour
    return initials
