"""The ``partition`` component's hooks for the Kafka harness (``org.apache.kafka.controller.PartitionSession``).

* :func:`kafka_initial`: a trace's ``initial`` object (standard or explicit) built by the reference's own
  decoding (:mod:`kraftspec.traces.format.partition`), then written out field by field for the Java session, which
  turns it into metadata records (FeatureLevelRecord, RegisterBrokerRecord, TopicRecord, ConfigRecord,
  PartitionRecord) and replays them on Kafka's controller managers. Both sides start from the same registrations.
* :func:`trace_step`: Kafka's answer as a trace step. Kafka visits partitions in the order of its hash-keyed
  indexes (``BrokersToIsrs``, ``BrokersToElrs``, ``imbalancedPartitions``, ``topicsByName``, a topic's
  partition map); where an input makes it visit several, the step's input states the order Kafka took (its
  records' and response's order) as ``order``, so that the reference takes the same one (traces/FORMAT.md).

The partition leader on the broker (``become_leader``, ``follower_fetch``, ...) is Kafka's ``kafka.cluster.Partition``
(``org.apache.kafka.controller.PartitionLeaders``); the initial state's ``leaders`` become leaders on it as the
reference's explicit state says (``become_leader`` on the partition's registration).

The Java session (``harness/src/partition``) is built for Kafka 4.0 and later; what differs by release goes through
one shim per API change (``harness/src/shim``: where LogContext and the record classes live, how requests cross the
wire, cordoned directories from 4.3, the AlterPartition manager's package). The leader side
(``harness/src/partition-leaders``) is built from 4.2 on, where ``kafka.cluster.Partition``'s collaborators became
Java: before 4.2 a trace with leader-side inputs is not expressible (``differential_partition.profile`` says what
each version takes).
"""

from __future__ import annotations

from typing import Any, Mapping

from kraftspec.harness.adapter import default_trace_step
from kraftspec.reference import partition_leader
from kraftspec.traces.format import partition as partition_trace

CHOICES = ("order",)
"""The input field where a step states what Kafka chose: the order it visited partitions in."""

EVENT_ACTIONS = frozenset({
    "handle_broker_fenced", "handle_broker_unfenced", "handle_broker_in_controlled_shutdown",
    "handle_broker_unregistered", "handle_broker_shutdown", "maybe_balance_partition_leaders",
    "maybe_elect_unclean_leaders",
})
"""Inputs whose partitions Kafka visits in an index's hash order (their ``order`` lists ``[topic_id, partition]``)."""


def initial_state(initial: Mapping[str, Any]) -> partition_trace.PartitionControl:
    """The reference's state for a trace's ``initial`` object: ``{"standard": NAME}`` or ``{"explicit": {...}}``."""
    if "standard" in initial:
        return partition_trace.STANDARD_STATES[initial["standard"]]()
    return partition_trace.cached_explicit_state(dict(initial["explicit"]))


def kafka_initial(initial: Mapping[str, Any]) -> dict[str, Any]:
    """What ``PartitionSession`` opens with: metadata.version, the ELR feature, registrations and the log end."""
    state = initial_state(initial)
    brokers = []
    for broker_id, r in sorted(state.brokers.items()):
        brokers.append({"broker_id": broker_id, "epoch": r.epoch, "incarnation_id": r.incarnation_id,
                        "fenced": r.fenced, "in_controlled_shutdown": r.in_controlled_shutdown, "rack": r.rack,
                        "log_dirs": list(r.log_dirs),
                        "cordoned_log_dirs": None if r.cordoned_log_dirs is None else list(r.cordoned_log_dirs)})
    topics = [{"name": t.name, "topic_id": t.topic_id, "unclean_leader_election_enable": t.unclean_leader_election_enable,
               "min_insync_replicas": t.min_insync_replicas} for _, t in sorted(state.topics.items())]
    partitions = []
    for (topic_id, partition_id), p in sorted(state.partitions.items()):
        partitions.append({"topic_id": topic_id, "partition_id": partition_id, "replicas": list(p.replicas),
                           "directories": list(p.directories), "isr": list(p.isr),
                           "removing_replicas": list(p.removing_replicas), "adding_replicas": list(p.adding_replicas),
                           "elr": list(p.elr), "last_known_elr": list(p.last_known_elr), "leader": p.leader,
                           "leader_recovery_state": p.leader_recovery_state, "leader_epoch": p.leader_epoch,
                           "partition_epoch": p.partition_epoch})
    raw = partition_trace.STANDARD_JSON[initial["standard"]] if "standard" in initial else initial["explicit"]
    leaders = [{"broker_id": leader["broker_id"], "topic_id": leader["topic_id"], "partition_id": leader["partition_id"],
                "log_end_offset": leader.get("log_end_offset") or 0, "high_watermark": leader.get("high_watermark") or 0,
                "min_insync_replicas": 1 if leader.get("min_insync_replicas") is None else leader["min_insync_replicas"],
                "now": leader.get("now") or 0,
                "replica_lag_time_max_ms": (partition_leader.REPLICA_LAG_TIME_MAX_MS
                                            if leader.get("replica_lag_time_max_ms") is None
                                            else leader["replica_lag_time_max_ms"])}
               for leader in raw.get("leaders") or ()]
    return {"metadata_version": state.metadata_version, "elr_enabled": state.elr_enabled, "brokers": brokers,
            "topics": topics, "partitions": partitions, "next_offset": state.next_offset, "leaders": leaders}


def kafka_input(input: Mapping[str, Any]) -> dict[str, Any]:
    """The input as Kafka gets it: a stated ``order`` is Kafka's own choice, so it is not sent."""
    return {key: value for key, value in input.items() if key != "order"}


def _visit_order(input: Mapping[str, Any], output: Mapping[str, Any]) -> Any:
    """The order Kafka visited partitions in, as its outputs show it, or None where it shows no choice."""
    action = input["action"]
    if action in EVENT_ACTIONS:
        seen: list[list[Any]] = []
        for record in output.get("records") or ():
            key = [record["data"]["topicId"], record["data"]["partitionId"]]
            if key not in seen:
                seen.append(key)
        return seen if len(seen) > 1 else None
    if action == "elect_leaders" and (input.get("request") or {}).get("topic_partitions", None) is None:
        response = output.get("response") or {}
        order = [[topic["topic"], [p["partition_id"] for p in topic["partition_results"]]]
                 for topic in response.get("replica_election_results") or ()]
        return order if len(order) > 1 or any(len(ids) > 1 for _, ids in order) else None
    return None


def trace_step(input: Mapping[str, Any], answer: Mapping[str, Any]) -> dict[str, Any]:
    """Kafka's answer as a step (:func:`kraftspec.harness.adapter.default_trace_step`), its visiting order stated."""
    step = default_trace_step(input, answer)
    order = _visit_order(input, answer.get("output") or {})
    if order is not None:
        step["input"] = {**step["input"], "order": order}
    return step
