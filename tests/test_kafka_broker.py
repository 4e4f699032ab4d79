"""The broker component against Apache Kafka's own classes (``KraftspecBrokerSession`` in the harness JVM).

* every bundled broker trace (``traces/tla/broker.jsonl.gz``) given to Kafka agrees with the reference;
* a short derandomized differential run (``oracle.broker_machine`` with every action and the error paths);
* the comparison can fail: deliberately wrong reference variants (``models/broker_mutants.py``) and a planted
  change to what the harness feeds Kafka are caught;
* one regression test per disagreement found while bringing Kafka in the loop, each a minimal sequence of inputs
  that Kafka and the (corrected) reference agree on, with the outcome Kafka gave pinned.

Larger runs: ``benchmarks/differential_kafka_broker.py`` (100,000+ steps) and ``kraftspec conform --kafka``.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
from pathlib import Path
from typing import Any, Iterable, Mapping

import pytest
from hypothesis import HealthCheck, settings
from hypothesis.stateful import run_state_machine_as_test

from kraftspec import oracle
from kraftspec import traces as traces_package
from kraftspec.harness import broker as harness_broker
from kraftspec.harness.adapter import KafkaAdapter, hooks
from kraftspec.harness.conform import conform_files, judge, kafka_trace
from kraftspec.harness.jvm import DEFAULT_VERSION, HarnessError, shared
from kraftspec.models.broker_mutants import MUTANTS
from kraftspec.models.broker_strategies import CLUSTER_ID, directory_of
from kraftspec.reference.records import FeatureLevelRecord, FeatureRange, RegisterBrokerRecord
from kraftspec.traces.format.broker import BROKER
from kraftspec.traces.format.jsonl import read_jsonl

TLA_TRACES = Path(traces_package.__file__).parent / "tla" / "broker.jsonl.gz"
RUNNING = {"standard": "broker/running-cluster"}
LEADERLESS = {"standard": "broker/leaderless"}
FOO = "FOOFOOFOOFOOFOOFOOFOOw"


@pytest.fixture(scope="module")
def process():  # type: ignore[no-untyped-def]
    return shared(DEFAULT_VERSION)


def on_kafka(initial: Mapping[str, Any], inputs: Iterable[Mapping[str, Any]]) -> list[oracle.StepCheck]:
    """Each input given to Kafka and the reference side by side (a disagreement raises ``DivergenceError``)."""
    differential = oracle.Differential(KafkaAdapter("broker"), initial)
    checks = [differential.step(dict(input)) for input in inputs]
    assert all(check is not None for check in checks), "the reference refused an input"
    return checks  # type: ignore[return-value]


def registration(broker_id: int, incarnation: str, **fields: Any) -> dict[str, Any]:
    return {"action": "register_broker", "request": {
        "broker_id": broker_id, "cluster_id": CLUSTER_ID, "incarnation_id": incarnation,
        "features": [{"name": "metadata.version", "min_supported": 7, "max_supported": 30}],
        "log_dirs": [directory_of(broker_id)], **fields}}


def heartbeat(broker_id: int, epoch: int, offset: int = 100, now: int | None = None, **fields: Any) -> dict[str, Any]:
    input = {"action": "heartbeat", "request": {"broker_id": broker_id, "broker_epoch": epoch,
                                                "current_metadata_offset": offset, "want_fence": False,
                                                "want_shut_down": False, **fields}}
    return input if now is None else {**input, "now": now}


def create_topic(name: str, assignments: list[list[int]], **configs: Any) -> dict[str, Any]:
    return {"action": "create_topic", "topic": {"name": name, "topic_id": "AAAAAAAAAAAAAAAAAAAAAA", **configs},
            "assignments": assignments}


# ---------------------------------------------------------------------------------------------------------------
# The bundled traces, a differential run
# ---------------------------------------------------------------------------------------------------------------

def test_every_bundled_broker_trace_agrees_on_kafka(process) -> None:  # type: ignore[no-untyped-def]
    outcomes = [item for _, _, item in conform_files([str(TLA_TRACES)], process)]
    assert all(not isinstance(item, str) for item in outcomes), [i for i in outcomes if isinstance(i, str)][:3]
    disagreeing = [item for item in outcomes if item.outcome != "agree"]  # type: ignore[union-attr]
    assert not disagreeing, oracle.describe(disagreeing[0].kafka) if disagreeing[0].kafka else disagreeing[0]
    assert len(outcomes) == 3004


@pytest.mark.parametrize("name", ["running-cluster", "running-elr-configs"])
def test_a_short_differential_run_against_kafka_finds_no_disagreement(name: str) -> None:
    machine = oracle.broker_machine(lambda: KafkaAdapter("broker"), initial=harness_broker.differential_initials()[name],
                                    actions=oracle.ALL_BROKER_ACTIONS, variety=True)
    run_state_machine_as_test(machine, settings=settings(
        max_examples=15, stateful_step_count=40, deadline=None, derandomize=True, database=None,
        suppress_health_check=list(HealthCheck)))


# ---------------------------------------------------------------------------------------------------------------
# The comparison can fail
# ---------------------------------------------------------------------------------------------------------------

MUTANT_PROBES: dict[str, tuple[Mapping[str, Any], list[dict[str, Any]]]] = {
    # each a sequence on which the mutant's reference and Kafka part ways
    "broker-session-expiry-inclusive": (RUNNING, [{"action": "fence_stale_broker", "now": 10}]),
    "broker-unfence-before-caught-up": (LEADERLESS, [registration(1, "a"), heartbeat(1, 3, offset=2)]),
    "broker-duplicate-ignores-incarnation": (RUNNING, [registration(1, "incarnation-1-1")]),
    "broker-no-duplicate-check": (RUNNING, [registration(1, "another")]),
    "broker-heartbeat-skips-fenced-session": (
        RUNNING, [heartbeat(1, 0, want_fence=True), heartbeat(1, 0, now=5, want_fence=True)]),
    "broker-shutdown-ignores-lagging-brokers": (
        RUNNING, [heartbeat(2, 1, offset=8), heartbeat(3, 2, offset=8), heartbeat(1, 0, want_shut_down=True),
                  heartbeat(1, 0, want_shut_down=True)]),
    "broker-fence-keeps-leadership": (RUNNING, [heartbeat(1, 0, want_fence=True)]),
    "broker-register-keeps-reported-offset": (RUNNING, [heartbeat(1, 0, want_fence=True), heartbeat(1, 0, offset=20)]),
    "feature-update-ignores-broker-ranges": (  # the controller's software reads 4.4-IV0, brokers 1-3 do not
        {"explicit": {"cluster_id": CLUSTER_ID, "metadata_version": 30,
                      "controller_features": {"metadata.version": [7, 31]}}},
        [registration(1, "a"), {"action": "update_features", "request": {"updates": [
            {"feature": "metadata.version", "max_version_level": 31}]}}]),
}


def test_every_broker_mutant_has_a_probe() -> None:
    assert set(MUTANT_PROBES) == {m.name for m in MUTANTS}


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda m: m.name)
def test_a_wrong_reference_variant_is_caught_against_kafka(mutant) -> None:  # type: ignore[no-untyped-def]
    initial, inputs = MUTANT_PROBES[mutant.name]
    on_kafka(initial, inputs)  # the correct reference agrees with Kafka on the probe
    with mutant.applied(), pytest.raises(oracle.DivergenceError):
        on_kafka(initial, inputs)


def test_a_wrong_reference_variant_is_caught_by_conform_on_the_bundled_traces(process) -> None:  # type: ignore[no-untyped-def]
    mutant = next(m for m in MUTANTS if m.name == "broker-fence-keeps-leadership")
    traces = [t for _, t in itertools.islice(read_jsonl(TLA_TRACES), 300)]
    component_hooks = hooks("broker")
    runs = [kafka_trace(t, process, component_hooks) for t in traces]
    assert all(judge(*run).conformant for run in runs)
    with mutant.applied():
        assert not all(judge(*run).conformant for run in runs)


class PlantedProcess:
    """The harness JVM with a planted change to what it is fed: every heartbeat reaches Kafka one offset behind.

    The change is made below the component's hooks (on the requests the JVM receives), so the step the adapter and
    ``conform`` report keeps the input as the trace gave it, and the reference judges Kafka's answer to it.
    """

    def __init__(self, process) -> None:  # type: ignore[no-untyped-def]
        self.process, self.kafka_version = process, process.kafka_version

    @staticmethod
    def planted(input: Mapping[str, Any]) -> dict[str, Any]:
        if input["action"] != "heartbeat":
            return dict(input)
        request = input["request"]
        return {**input, "request": {**request, "current_metadata_offset": request["current_metadata_offset"] - 1}}

    def open(self, component: str, initial: Mapping[str, Any]) -> None:
        self.process.open(component, initial)

    def step(self, input: Mapping[str, Any]) -> dict[str, Any]:
        return self.process.step(self.planted(input))

    def run(self, component: str, initial: Mapping[str, Any], inputs: list[Mapping[str, Any]]) -> list[Any]:
        return self.process.run(component, initial, [self.planted(i) for i in inputs])


def test_a_planted_change_to_what_kafka_is_fed_is_caught(process) -> None:  # type: ignore[no-untyped-def]
    inputs = [registration(1, "a"), heartbeat(1, 3, offset=3)]  # caught up at its registration's offset 3
    on_kafka(LEADERLESS, inputs)
    differential = oracle.Differential(KafkaAdapter("broker", process=PlantedProcess(process)), LEADERLESS)
    differential.step(inputs[0])
    with pytest.raises(oracle.DivergenceError, match="is_caught_up"):  # Kafka heard offset 2
        differential.step(inputs[1])


def test_a_planted_change_is_caught_by_conform_too(process) -> None:  # type: ignore[no-untyped-def]
    traces = [t for _, t in itertools.islice(read_jsonl(TLA_TRACES), 300)]
    component_hooks = hooks("broker")
    assert all(judge(*kafka_trace(t, process, component_hooks)).conformant for t in traces)
    planted = [judge(*kafka_trace(t, PlantedProcess(process), component_hooks)) for t in traces]  # type: ignore[arg-type]
    assert sum(not verdict.conformant for verdict in planted) > 10


def test_a_planted_change_to_the_initial_state_kafka_gets_is_caught(process) -> None:  # type: ignore[no-untyped-def]
    """Kafka opened with a session timeout one unit longer than the trace's: fencing at 11 differs."""
    adapter = KafkaAdapter("broker", process=process)
    adapter.hooks = dataclasses.replace(adapter.hooks, kafka_initial=lambda initial: {
        **harness_broker.kafka_initial(initial), "session_timeout": 11})
    differential = oracle.Differential(adapter, RUNNING)
    with pytest.raises(oracle.DivergenceError, match="expired_session"):
        differential.step({"action": "fence_stale_broker", "now": 11})


# ---------------------------------------------------------------------------------------------------------------
# Regressions: each disagreement found with Kafka in the loop, resolved
# ---------------------------------------------------------------------------------------------------------------

def test_duplicate_registration_message_is_kafka_4_1s() -> None:
    """Kafka 4.1+ ``ClusterControlManager.registerBroker`` names how the duplicate resolves (the reference had
    "... once the heartbeat timeout expires")."""
    check = on_kafka(RUNNING, [registration(1, "another")])[0]
    assert check.step.response["error"] == "DUPLICATE_BROKER_REGISTRATION"
    assert check.step.response["message"].endswith("once the heartbeat manager expires the broker's session.")


def test_activating_an_active_controller_keeps_its_soft_state() -> None:
    """``QuorumMetaLogListener.handleLeaderChange``: the leader staying the leader does not claim again (the
    reference re-registered every broker and reset the sessions)."""
    checks = on_kafka(RUNNING, [heartbeat(1, 0, offset=9, now=4), {"action": "activate", "now": 6}])
    assert checks[-1].step.post["sessions"] == {"1:0": 4, "2:1": 0, "3:2": 0}
    assert checks[-1].step.post["heartbeats"]["1"]["metadata_offset"] == 9


@pytest.mark.parametrize("version", [0, 1])
def test_a_registration_older_than_v2_carries_no_log_dirs(version: int) -> None:
    """``BrokerRegistrationRequest.json``: LogDirs is a v2+ ignorable field, so the controller reads none (the
    reference used the request's directories at every version)."""
    check = on_kafka(LEADERLESS, [registration(1, "a", version=version)])[0]
    assert check.step.response == {"error": "INVALID_REGISTRATION", "message": "No directories specified in request"}


def test_a_registration_older_than_v3_carries_no_previous_broker_epoch() -> None:
    """PreviousBrokerEpoch is v3+: at v2 the controller reads -1, so a clean restart counts as unclean. With ELR on,
    an unclean restart takes broker 3 out of the ELRs it joined when brokers 2 and 3 were fenced below
    min.insync.replicas 2; a clean one leaves them (the reference read the field at every version)."""
    elr = harness_broker.differential_initials()["running-elr-configs"]
    features = [{"name": "metadata.version", "min_supported": 7, "max_supported": 30},
                {"name": "eligible.leader.replicas.version", "min_supported": 0, "max_supported": 1}]
    restarts = {}
    for version in (2, 3):
        checks = on_kafka(elr, [heartbeat(2, 1, want_fence=True), heartbeat(3, 2, want_fence=True),
                                {**registration(3, "again", previous_broker_epoch=2, version=version,
                                                features=features), "now": 20}])
        assert checks[-1].step.response["error"] == "NONE"
        restarts[version] = [type(r).__name__ for _, r in checks[-1].step.records]
    assert restarts[3] == ["RegisterBrokerRecord"] and restarts[2][-1] == "RegisterBrokerRecord"
    assert "PartitionChangeRecord" in restarts[2]


@pytest.mark.parametrize("name,assignments,error", [
    ("bad name!", [[1]], "INVALID_TOPIC_EXCEPTION"),
    ("foo", [[1]], "TOPIC_ALREADY_EXISTS"),
    ("__cluster_metadata", [[1]], "INVALID_REQUEST"),
    ("bar", [[1, 2], [1]], "INVALID_REPLICA_ASSIGNMENT"),  # replication factors differ
    ("bar", [[1, 1]], "INVALID_REPLICA_ASSIGNMENT"),
    ("bar", [[4]], "INVALID_REPLICA_ASSIGNMENT"),
    ("bar", [[]], "INVALID_REPLICA_ASSIGNMENT"),
])
def test_create_topic_refuses_as_kafka_does(name: str, assignments: list[list[int]], error: str) -> None:
    """``ControllerApis.createTopics`` / ``ReplicationControlManager.createTopics``: names, existence, the manual
    assignment (the reference checked none of the names and no replication factor)."""
    assert on_kafka(RUNNING, [create_topic(name, assignments)])[0].step.response == {"error": error}


def test_colliding_topic_names_are_refused() -> None:
    checks = on_kafka(RUNNING, [create_topic("a.b", [[1]]), create_topic("a_b", [[1]])])
    assert [c.step.response["error"] for c in checks] == ["NONE", "INVALID_TOPIC_EXCEPTION"]


def test_a_topic_whose_replicas_are_all_fenced_is_an_invalid_assignment() -> None:
    """``createTopic``: "All brokers specified in the manual partition assignment ... are fenced or in controlled
    shutdown" is INVALID_REPLICA_ASSIGNMENT (the reference answered INVALID_REPLICATION_FACTOR)."""
    checks = on_kafka(LEADERLESS, [registration(1, "a"), create_topic("t", [[1]])])
    assert checks[-1].step.response == {"error": "INVALID_REPLICA_ASSIGNMENT"}


def test_create_topic_writes_the_topics_configs() -> None:
    """Kafka writes a ConfigRecord per config set (after the TopicRecord, before the PartitionRecords) and, with ELR
    on, a ClearElrRecord for min.insync.replicas (the reference wrote no config record)."""
    records = on_kafka(RUNNING, [create_topic("t", [[1, 2]], unclean_leader_election_enable=True,
                                              min_insync_replicas=2)])[0].step.records
    assert [type(r).__name__ for _, r in records] == ["TopicRecord", "ConfigRecord", "ConfigRecord", "PartitionRecord"]
    elr = harness_broker.differential_initials()["running-elr-configs"]
    records = on_kafka(elr, [create_topic("t", [[1, 2]], min_insync_replicas=2)])[0].step.records
    assert [type(r).__name__ for _, r in records] == ["TopicRecord", "ConfigRecord", "ClearElrRecord", "PartitionRecord"]


def test_kafka_states_the_topic_id_it_drew() -> None:
    check = on_kafka(RUNNING, [create_topic("t", [[1]])])[0]
    assert check.step.input["topic"].topic_id != "AAAAAAAAAAAAAAAAAAAAAA"


def test_kafka_changes_partitions_in_its_index_order() -> None:
    """``handleDirectoriesOffline`` walks ``directoriesToPartitions`` (hash order): here partition 1 before 0; the
    step states Kafka's ``order`` and the reference follows it (it took ascending order)."""
    check = on_kafka(RUNNING, [heartbeat(1, 0, offset=8, offline_log_dirs=[directory_of(1)])])[0]
    assert check.step.input["order"] == ((FOO, 1), (FOO, 0))
    assert [r.partition_id for _, r in check.step.records if type(r).__name__ == "PartitionChangeRecord"] == [1, 0]


def test_cordoned_log_dirs_are_written_to_the_registration() -> None:
    """4.3's heartbeat carries cordoned log directories (KIP-1066): a change writes BrokerRegistrationChangeRecord v3,
    the same set again nothing (the reference's request could not carry them)."""
    dirs = [directory_of(1)]
    checks = on_kafka(RUNNING, [heartbeat(1, 0, cordoned_log_dirs=[]), heartbeat(1, 0, cordoned_log_dirs=dirs),
                                heartbeat(1, 0, cordoned_log_dirs=dirs), heartbeat(1, 0)])
    assert [len(c.step.records) for c in checks] == [1, 1, 0, 0]
    assert checks[1].step.records[0][1].version == 3 and checks[1].step.records[0][1].cordoned_log_dirs == tuple(dirs)


def test_fence_stale_broker_states_which_session_kafka_took() -> None:
    check = on_kafka(RUNNING, [{"action": "fence_stale_broker", "now": 11}])[0]
    assert check.step.input["which"] == tuple(check.step.response["expired_session"])


def test_each_kafka_version_maps_to_its_behaviour_and_its_initial_states_build() -> None:
    """``kraftspec.harness.broker.behaviour_for``: the reference's behaviour per Kafka line (the differences are shown
    on real Kafkas by ``benchmarks/kafka_broker_versions.py``)."""
    versions = {"3.9.1": "3.9", "4.0.1": "4.0", "4.1.1": "4.1", "4.2.0": "4.2", "4.3.1": "4.1+", "4.4.0": "4.4+"}
    assert {v: harness_broker.behaviour_for(v) for v in versions} == versions
    for version, behaviour in versions.items():
        for initial in harness_broker.differential_initials(version).values():
            state = oracle.start(initial).state
            assert state.behaviour.name == behaviour


# ---------------------------------------------------------------------------------------------------------------
# UpdateFeatures (§1.11): FeatureControlManagerTest's cases and the rest of the rule, on Kafka's own classes
# ---------------------------------------------------------------------------------------------------------------

def features_initial(metadata_version: int, supported: Mapping[str, tuple[int, int]],
                     brokers: Mapping[int, Mapping[str, tuple[int, int]]] = {}, **finalized: int) -> dict[str, Any]:
    """A controller whose software supports ``supported``, with ``brokers`` registered supporting their ranges."""
    records = [BROKER.encode_record(offset, RegisterBrokerRecord(
        broker_id=broker_id, incarnation_id=f"inc{broker_id}", broker_epoch=offset,
        features=tuple(FeatureRange(name=name, min_supported=low, max_supported=high)
                       for name, (low, high) in ranges.items()))) for offset, (broker_id, ranges) in enumerate(brokers.items())]
    return {"explicit": {"cluster_id": CLUSTER_ID, "metadata_version": metadata_version, "session_timeout": 10,
                         "features": {name.replace("__", "."): level for name, level in finalized.items()},
                         "controller_features": {name: list(span) for name, span in supported.items()},
                         "records": records}}


def update_features(*updates: tuple[str, int, int], validate_only: bool = False) -> dict[str, Any]:
    return {"action": "update_features", "request": {"updates": [
        {"feature": name, "max_version_level": level, "upgrade_type": kind} for name, level, kind in updates],
        "validate_only": validate_only}}


SUPPORTED = {"metadata.version": (7, 31), "kraft.version": (0, 1), "transaction.version": (0, 3),
             "group.version": (0, 1), "eligible.leader.replicas.version": (0, 1), "test.feature.version": (0, 2),
             "foo": (1, 5)}
CREATE_TEST_MANAGER = {**SUPPORTED, "metadata.version": (7, 12)}
"""``createTestManager``'s controller of Kafka 4.3's FeatureControlManagerTest: metadata.version 3.3-IV3 to 3.5-IV2."""


def with_level_records(initial: dict[str, Any], *levels: tuple[str, int]) -> dict[str, Any]:
    """``initial`` with FeatureLevelRecords of ``levels`` in the log the controller replays at the start."""
    start = len(initial["explicit"]["records"])
    initial["explicit"]["records"] += [
        BROKER.encode_record(start + i, FeatureLevelRecord(name=name, feature_level=level))
        for i, (name, level) in enumerate(levels)]
    return initial


FEATURE_CASES: dict[str, tuple[dict[str, Any], list[dict[str, Any]], list[str]]] = {
    # name: (initial, inputs, Kafka's error per input), Kafka 4.3's FeatureControlManagerTest first
    "testUpdateFeatures": (features_initial(7, SUPPORTED), [
        update_features(("test.feature.version", 3, 2)), update_features(("test.feature.version", 1, 1), ("bar", 1, 1)),
        update_features(("test.feature.version", 1, 1))], ["INVALID_UPDATE_VERSION", "INVALID_UPDATE_VERSION", "NONE"]),
    "testReplayKraftVersionFeatureLevel": (with_level_records(features_initial(7, SUPPORTED), ("kraft.version", 1)), [
        update_features(("test.feature.version", 1, 1))], ["NONE"]),
    "testUpdateFeaturesErrorCases": (features_initial(7, SUPPORTED, {5: {"transaction.version": (0, 2)}}), [
        update_features(("foo", 3, 2)), update_features(("transaction.version", 2, 1)),
        update_features(("transaction.version", 1, 1)), update_features(("transaction.version", 1, 2))],
        ["INVALID_UPDATE_VERSION", "NONE", "INVALID_UPDATE_VERSION", "NONE"]),
    "createTestManager (3.4-IV0)": (features_initial(8, CREATE_TEST_MANAGER), [
        update_features(("metadata.version", 9, 2), validate_only=True),
        update_features(("metadata.version", 9, 3), validate_only=True),
        update_features(("metadata.version", 9, 1), validate_only=True),
        update_features(("metadata.version", 7, 2), validate_only=True),
        update_features(("metadata.version", 7, 3), validate_only=True)],
        ["INVALID_UPDATE_VERSION"] * 2 + ["NONE"] + ["INVALID_UPDATE_VERSION"] * 2),
    "testCannotUpgradeToLowerVersion": (features_initial(10, CREATE_TEST_MANAGER), [
        update_features(("metadata.version", 9, 1), validate_only=True)], ["INVALID_UPDATE_VERSION"]),
    "testCanUseSafeDowngradeIfMetadataDidNotChange": (features_initial(9, CREATE_TEST_MANAGER), [
        update_features(("metadata.version", 8, 2), validate_only=True),
        update_features(("metadata.version", 8, 3), validate_only=True)], ["NONE", "NONE"]),
    "testCannotUseSafeDowngradeIfMetadataChanged (replayed level)": (
        with_level_records(features_initial(8, CREATE_TEST_MANAGER), ("metadata.version", 9)), [
            update_features(("metadata.version", 7, 2), validate_only=True)], ["INVALID_UPDATE_VERSION"]),
    "testCannotDowngradeBeforeMinimumKraftVersion": (features_initial(7, SUPPORTED), [
        update_features(("metadata.version", 6, 3), validate_only=True)], ["INVALID_UPDATE_VERSION"]),
    "testCreateFeatureLevelRecords": (features_initial(7, {"metadata.version": (7, 31), "test.feature.version": (0, 2)},
                                                       {1: {"test.feature.version": (0, 3)}}), [
        update_features(("test.feature.version", 1, 1)), update_features(("test.feature.version", 0, 3))],
        ["NONE", "NONE"]),
    "testUpgradeElrFeatureLevel": (features_initial(23, {"metadata.version": (23, 31),
                                                         "eligible.leader.replicas.version": (0, 1)},
                                                    {1: {"eligible.leader.replicas.version": (0, 1)}}), [
        update_features(("eligible.leader.replicas.version", 1, 1))], ["NONE"]),
    # rules no Kafka test covers
    "a metadata.version this Kafka does not define": (features_initial(7, {**SUPPORTED,
                                                                           "metadata.version": (1, 32767)}), [
        update_features(("metadata.version", 3, 3), validate_only=True),
        update_features(("metadata.version", 32, 1), validate_only=True)], ["INVALID_UPDATE_VERSION"] * 2),
    "dependencies and ELR": (features_initial(22, SUPPORTED), [
        update_features(("eligible.leader.replicas.version", 1, 1)),
        update_features(("eligible.leader.replicas.version", 1, 1), ("metadata.version", 23, 1))],
        ["INVALID_UPDATE_VERSION", "NONE"]),
    "kraft.version": (features_initial(30, SUPPORTED, kraft__version=0), [
        update_features(("kraft.version", 1, 1), validate_only=True), update_features(("kraft.version", 1, 1)),
        update_features(("kraft.version", 0, 2))], ["NONE", "NONE", "INVALID_UPDATE_VERSION"]),
    "a broker that cannot read the level": (features_initial(30, SUPPORTED, {1: {"metadata.version": (7, 30)}}), [
        update_features(("metadata.version", 31, 1)), update_features(("metadata.version", 29, 2))],
        ["INVALID_UPDATE_VERSION", "INVALID_UPDATE_VERSION"]),
    "a level not production-ready on this Kafka": (RUNNING, [update_features(("metadata.version", 31, 1))],
                                                    ["INVALID_UPDATE_VERSION"]),
}


@pytest.mark.parametrize("name", sorted(FEATURE_CASES))
def test_update_features_agrees_with_kafka(name: str) -> None:
    """FeatureControlManagerTest's cases (tests/test_feature_scenarios.py) given to Kafka 4.3's
    ``ConfigurationControlManager.updateFeatures`` as ``QuorumController`` calls it: each response, record and
    finalized level agrees, with the outcomes pinned."""
    initial, inputs, errors = FEATURE_CASES[name]
    checks = on_kafka(initial, inputs)
    assert [check.step.response["error"] for check in checks] == errors


def test_conform_agrees_on_traces_that_update_features(process, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """``kraftspec conform``: the cases above as input-only traces, Kafka's outputs judged by the reference; replayed
    under the deliberately wrong UpdateFeatures, the traces where a broker's range decides are flagged."""
    path = tmp_path / "update-features.jsonl"
    path.write_text("".join(json.dumps({"format": "1.0", "component": "broker", "id": name, "initial": initial,
                                        "steps": [{"input": input} for input in inputs]}) + "\n"
                            for name, (initial, inputs, _) in FEATURE_CASES.items()))
    outcomes = [item for _, _, item in conform_files([str(path)], process)]
    assert [getattr(item, "outcome", item) for item in outcomes] == ["agree"] * len(FEATURE_CASES)
    # Kafka's runs replayed as traces (``kraftspec check``) flag the reference's wrong variant
    runs = [kafka_trace(trace, process, hooks("broker")) for _, trace in read_jsonl(path)]
    mutant = next(m for m in MUTANTS if m.name == "feature-update-ignores-broker-ranges")
    with mutant.applied():
        flagged = [kafka.id for kafka, refusal in runs if not judge(kafka, refusal).conformant]
    assert flagged == ["testUpdateFeaturesErrorCases", "a broker that cannot read the level"]


FEATURE_VERSIONS = os.environ.get("KRAFTSPEC_KAFKA_VERSIONS", DEFAULT_VERSION).split()
"""Kafka 4.3.1 by default; KRAFTSPEC_KAFKA_VERSIONS="3.9.1 4.0.1 4.1.1 4.2.0 4.3.1 4.4.0" checks the README's
UpdateFeatures rows on every release."""


@pytest.mark.parametrize("version", FEATURE_VERSIONS)
def test_update_features_follows_each_release(version: str) -> None:
    """The version rows of §1.11 (README) on ``version``'s own classes: a downgrade across a level that changed the
    metadata (worded per release), a level the release does not define (its latest testing level named), kraft.version
    (4.0: an ordinary feature; 4.1+: the Raft client's); 3.9 answers per feature: refused by the reference, not
    expressible to Kafka."""
    process = shared(version)
    behaviour = harness_broker.behaviour_for(version)
    latest = harness_broker.LATEST_METADATA_VERSION[".".join(version.split(".")[:2])]
    initial = {"explicit": {"cluster_id": CLUSTER_ID, "metadata_version": latest, "session_timeout": 10,
                            "behaviour": behaviour, "features": {"kraft.version": 0},
                            "controller_features": {"metadata.version": [7, 40], "kraft.version": [0, 1]}}}
    inputs = [update_features(("metadata.version", 22, 2)), update_features(("metadata.version", 40, 1)),
              update_features(("kraft.version", 1, 1))]
    differential = oracle.Differential(KafkaAdapter("broker", process=process), initial)
    if behaviour == "3.9":
        assert differential.step(inputs[0]) is None
        process.open("broker", harness_broker.kafka_initial(initial))
        with pytest.raises(HarnessError, match="per feature"):
            process.step(inputs[0])
        return
    checks = [differential.step(input) for input in inputs]
    assert [c.step.response["error"] for c in checks if c is not None] == ["INVALID_UPDATE_VERSION"] * 2 + ["NONE"]
