"""The broker behaviours that differ between Kafka versions, each backed by a minimal case run on real Kafkas.

Run: ``python benchmarks/kafka_broker_versions.py [--versions 3.9.1,4.0.1,4.1.1,4.2.0,4.3.1,4.4.0]``. Every case is a
short broker trace; for each Kafka version it is given to Kafka (``kraftspec.harness.conform.kafka_trace``) and
Kafka's run is judged by the reference under the trace's ``KafkaBehaviour`` and under the version's own one
(``kraftspec.harness.broker.behaviour_for``). A row prints, per version, ``ok`` where Kafka agrees with the
reference under the version's behaviour, and whether it agrees with the case's other behaviour: a behaviour
difference shows as a case one version passes and another fails under the same stated behaviour. Exit code 1 if
any version disagrees with its own behaviour (a finding).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from kraftspec.harness import broker as harness_broker
from kraftspec.harness.adapter import hooks
from kraftspec.harness.conform import judge, kafka_trace
from kraftspec.harness.jvm import KafkaProcess
from kraftspec.models.broker_strategies import CLUSTER_ID, directory_of, running_cluster
from kraftspec.reference.records import BrokerRegistrationChangeRecord
from kraftspec.traces.format.broker import BROKER
from kraftspec.traces.format.envelope import trace_from_json

VERSIONS = ("3.9.1", "4.0.1", "4.1.1", "4.2.0", "4.3.1", "4.4.0")


def _cluster(metadata_version: int, extra: tuple[Any, ...] = ()) -> dict[str, Any]:
    """The running cluster (brokers 1-3 unfenced, topic foo) restored from its log at ``metadata_version``."""
    _, log = running_cluster(metadata_version)
    records = [*log, *extra]
    return {"cluster_id": CLUSTER_ID, "metadata_version": metadata_version, "session_timeout": 10,
            "records": [BROKER.encode_record(offset, record) for offset, record in records],
            "next_offset": records[-1][0] + 1}


def _registration(broker_id: int, incarnation: str, level: int) -> dict[str, Any]:
    return {"action": "register_broker", "request": {
        "broker_id": broker_id, "cluster_id": CLUSTER_ID, "incarnation_id": incarnation,
        "features": [{"name": "metadata.version", "min_supported": 7, "max_supported": level}],
        "log_dirs": [directory_of(broker_id)]}}


def cases() -> list[dict[str, Any]]:
    """(name, what differs, the Kafka source, the initial state, the inputs) per behaviour difference."""
    fence_2 = ((9, BrokerRegistrationChangeRecord(broker_id=2, broker_epoch=1, fenced=1)),)
    heartbeat_1 = {"broker_id": 1, "current_metadata_offset": 9, "want_fence": False, "want_shut_down": False}
    return [
        {"name": "stale-heartbeat-session",
         "differs": "a heartbeat with a stale epoch keeps a session of its own (4.0+: the tracker is refreshed before "
                    "the epoch is checked) or touches nothing (3.9)",
         "source": "QuorumController.processBrokerHeartbeat / ClusterControlManager.trackBrokerHeartbeat (4.0)",
         "initial": _cluster(17), "inputs": [{"action": "heartbeat", "now": 5,
                                               "request": {**heartbeat_1, "broker_epoch": 99}}]},
        {"name": "registration-touches-session",
         "differs": "a registration (here an amendment) refreshes the broker's session (3.9: the heartbeat manager's "
                    "touch) or not (4.0+: sessions live in the tracker)",
         "source": "3.9 BrokerHeartbeatManager.register / touch",
         "initial": _cluster(17), "inputs": [{**_registration(1, "incarnation-1-1", 17), "now": 6}]},
        {"name": "restart-leaves-isr",
         "differs": "a new incarnation's registration takes the broker out of its ISRs as if fenced (4.0+) or writes no "
                    "partition change below ELR's metadata.version (3.9)",
         "source": "ReplicationControlManager.handleBrokerShutdown (4.0) / handleBrokerUncleanShutdown (3.9)",
         "initial": _cluster(17), "inputs": [{**_registration(1, "again", 17), "now": 20}]},
        {"name": "registration-without-metadata-version",
         "differs": "a registration without a metadata.version range is INVALID_REGISTRATION (4.0+) or checked against "
                    "the range 1-1, UNSUPPORTED_VERSION (3.9)",
         "source": "ClusterControlManager.registerBroker / processRegistrationFeature",
         "initial": _cluster(17), "inputs": [{**_registration(1, "again", 17),
                                               "request": {**_registration(1, "again", 17)["request"], "features": []},
                                               "now": 20}]},
        {"name": "activation-sessions-for-fenced",
         "differs": "a new active controller gives fenced brokers a session too (4.0) or unfenced ones only (4.1+)",
         "source": "ClusterControlManager.activate (KAFKA-19130, 4.1)",
         "initial": _cluster(25, fence_2), "inputs": [{"action": "failover", "now": 5}]},
        {"name": "duplicate-registration-message",
         "differs": "DUPLICATE_BROKER_REGISTRATION's message names how it resolves itself (4.1+)",
         "source": "ClusterControlManager.registerBroker",
         "initial": _cluster(25), "inputs": [_registration(1, "another", 25)]},
        {"name": "assignment-refuses-cordoned-broker",
         "differs": "a manual assignment to a broker whose log directories are all cordoned is refused (4.4+)",
         "source": "ReplicationControlManager.validateManualPartitionAssignment (4.4)",
         "initial": _cluster(30),
         "inputs": [{"action": "heartbeat", "request": {"broker_id": 1, "broker_epoch": 0,
                                                       "current_metadata_offset": 9, "want_fence": False,
                                                       "want_shut_down": False,
                                                       "cordoned_log_dirs": [directory_of(1)]}},
                    {"action": "create_topic", "topic": {"name": "t", "topic_id": "AAAAAAAAAAAAAAAAAAAAAA"},
                     "assignments": [[1]]}]},
        {"name": "last-known-elr",
         "differs": "an unclean re-registration elects the partition's last known ELR member although it is not an "
                    "acceptable leader (3.9, 4.0: the test is inverted) or does not (4.1+)",
         "source": "PartitionChangeBuilder.tryElection / lastKnownElr (fixed in 4.1)",
         "initial": harness_broker.differential_initials("4.0.1")["running-elr-configs"]["explicit"],
         "inputs": [{"action": "fence_stale_broker", "now": 11}, {"action": "fence_stale_broker", "now": 11},
                    {"action": "unregister_broker", "broker_id": 3},
                    {**_registration(3, "incarnation-3-1", 25), "request": {
                        **_registration(3, "incarnation-3-1", 25)["request"],
                        "features": [{"name": "metadata.version", "min_supported": 7, "max_supported": 25},
                                     {"name": "eligible.leader.replicas.version", "min_supported": 0,
                                      "max_supported": 1}]}}]},
    ]


def verdict(case: dict[str, Any], behaviour: str, process: KafkaProcess) -> str:
    """``agree``, ``DISAGREE`` (the reference under ``behaviour`` judging Kafka's run) or why Kafka cannot run it."""
    initial = {**case["initial"], "behaviour": behaviour}
    trace = trace_from_json({"format": "1.0", "component": "broker", "id": case["name"],
                             "initial": {"explicit": initial}, "steps": [{"input": i} for i in case["inputs"]]})
    try:
        kafka, refusal = kafka_trace(trace, process, hooks("broker"))
    except Exception as exc:  # the version cannot be given the initial state (a metadata.version it does not know)
        return f"n/a ({type(exc).__name__})"
    return "agree" if judge(kafka, refusal).conformant else "DISAGREE"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--versions", default=",".join(VERSIONS))
    args = parser.parse_args()
    versions = args.versions.split(",")
    behaviours = sorted({harness_broker.behaviour_for(v) for v in versions})
    findings = 0
    table: dict[tuple[str, str], dict[str, str]] = {}
    for version in versions:
        with KafkaProcess(version) as process:
            for case in cases():
                table[(case["name"], version)] = {b: verdict(case, b, process) for b in behaviours}
    for case in cases():
        print(f"{case['name']}: {case['differs']} ({case['source']})")
        for version in versions:
            own = harness_broker.behaviour_for(version)
            row = table[(case["name"], version)]
            mark = row[own]
            findings += mark == "DISAGREE"
            others = ", ".join(f"under {b}: {v}" for b, v in row.items() if b != own)
            print(f"  Kafka {version} (behaviour {own}): {mark}; {others}")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
