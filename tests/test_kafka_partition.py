"""The partition component against Apache Kafka's own code (harness session ``partition``, Kafka 4.3.1).

* the bundled partition traces given to Kafka (``kraftspec conform``): no disagreement;
* a short derandomized differential run (``kraftspec.differential_partition``) with 0 disagreements;
* the comparison can fail: a wrong reference variant (models/partition_mutants.py) and planted changes to what
  the harness feeds Kafka are caught;
* one regression case per disagreement found against Kafka and fixed in the reference, each replayed on Kafka
  and by the reference (``conform``), with Kafka's answer pinned.

Larger runs: ``python benchmarks/bench_kafka_partition.py``.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Callable, Mapping

import pytest

from kraftspec.differential_partition import run_differential
from kraftspec.harness.adapter import KafkaAdapter
from kraftspec.harness.conform import Conformance, conform_trace
from kraftspec.harness.jvm import DEFAULT_VERSION, HarnessError, shared
from kraftspec.models.partition_mutants import MUTANTS
from kraftspec.oracle import DivergenceError, read
from kraftspec.traces.format import trace_from_json

BUNDLED = Path(__file__).resolve().parents[1] / "traces" / "tla" / "partition.jsonl.gz"
SEED = 20261126
T = "TOPIC0AAAAAAAAAAAAAAAw"


def conform(trace: Mapping[str, Any]) -> Conformance:
    """One trace object given to Kafka and judged by the reference."""
    obj = {"format": "1.0", "component": "partition", "id": trace.get("id", "regression"), **trace}
    return conform_trace(trace_from_json(obj), shared(DEFAULT_VERSION))


def brokers(*ids: int, fenced: tuple[int, ...] = ()) -> list[dict[str, Any]]:
    return [{"broker_id": b, "epoch": 100 + b, "incarnation_id": f"incarnation-{b}", "fenced": b in fenced}
            for b in ids]


def state(partition: Mapping[str, Any], *, level: int = 30, elr: bool = False, min_isr: int = 1, unclean: bool = False,
          registered: tuple[int, ...] = (0, 1, 2, 3), fenced: tuple[int, ...] = ()) -> dict[str, Any]:
    return {"explicit": {
        "metadata_version": level, "elr_enabled": elr, "brokers": brokers(*registered, fenced=fenced),
        "topics": [{"name": "t0", "topic_id": T, "min_insync_replicas": min_isr,
                    "unclean_leader_election_enable": unclean}],
        "partitions": [{"partition_id": 0, "topic_id": T, "leader_epoch": 0, "partition_epoch": 10, **partition}]}}


# ------------------------------------------------------------------------------------------------ bundled traces

def test_bundled_partition_traces_never_disagree_with_kafka() -> None:
    outcomes: dict[str, int] = {}
    for where, item in read(BUNDLED):
        assert not isinstance(item, Exception), where
        result = conform_trace(item, shared(DEFAULT_VERSION))
        outcomes[result.outcome] = outcomes.get(result.outcome, 0) + 1
        assert result.outcome != "DISAGREE", f"{where}: {result.kafka}"
        if result.outcome == "not expressible":  # the broker-side leader inputs only (kafka.cluster.Partition)
            assert "kafka.cluster.Partition" in (result.inexpressible or ""), result.inexpressible
    assert outcomes.get("agree", 0) >= 500, outcomes


# ------------------------------------------------------------------------------------------------ differential

def test_a_short_differential_run_agrees_with_kafka() -> None:
    adapter = KafkaAdapter("partition")
    result = run_differential(lambda: adapter, SEED, max_examples=40, steps=30)
    assert result["steps"] > 500


# ------------------------------------------------------------------------------------------------ it can fail

KAFKA_CAUGHT = [m for m in MUTANTS if "kafka" in m.caught_by]


def test_some_partition_mutants_are_for_kafka_to_catch() -> None:
    assert any(m.name == "partition-unregister-drops-elr" for m in KAFKA_CAUGHT)


def test_a_reference_variant_is_caught_against_kafka() -> None:
    mutant = next(m for m in KAFKA_CAUGHT if m.name == "partition-unregister-drops-elr")
    adapter = KafkaAdapter("partition")
    with mutant.applied(), pytest.raises(DivergenceError, match="handle_broker_unregistered"):
        run_differential(lambda: adapter, SEED, max_examples=300, steps=40, shrink=False)


class PlantedProcess:
    """The harness JVM with a planted change to what it is fed: the hooks state the true initial state and inputs,
    Kafka gets altered ones."""

    def __init__(self, initial: Callable[[dict[str, Any]], None], input: Callable[[dict[str, Any]], None]) -> None:
        self.process, self.alter_initial, self.alter_input = shared(DEFAULT_VERSION), initial, input

    def open(self, component: str, initial: Mapping[str, Any], **options: Any) -> None:
        fed = copy.deepcopy(dict(initial))
        self.alter_initial(fed)
        self.process.open(component, fed, **options)

    def step(self, input: Mapping[str, Any]) -> dict[str, Any]:
        fed = copy.deepcopy(dict(input))
        self.alter_input(fed)
        return self.process.step(fed)


def planted_adapter(initial: Callable[[dict[str, Any]], None] = lambda obj: None,
                    input: Callable[[dict[str, Any]], None] = lambda obj: None) -> KafkaAdapter:
    return KafkaAdapter("partition", process=PlantedProcess(initial, input))  # type: ignore[arg-type]


def _stale_leader_epoch(obj: dict[str, Any]) -> None:
    if obj["action"] == "alter_partition":
        for topic in obj["request"]["topics"]:
            for p in topic["partitions"]:
                p["leader_epoch"] -= 1


def _one_broker_fenced(obj: dict[str, Any]) -> None:
    for b in obj["brokers"]:
        if not b["fenced"]:
            b["fenced"] = True
            return


@pytest.mark.parametrize("planted", [dict(input=_stale_leader_epoch), dict(initial=_one_broker_fenced)],
                         ids=["alter-partition-sent-with-a-stale-leader-epoch", "a-broker-fenced-in-kafkas-initial-state"])
def test_a_planted_change_to_what_kafka_is_fed_is_caught(planted: dict[str, Any]) -> None:
    adapter = planted_adapter(**planted)
    with pytest.raises(DivergenceError):
        run_differential(lambda: adapter, SEED, max_examples=200, steps=40, shrink=False)


def test_broker_side_inputs_are_not_expressible_to_the_controller_harness() -> None:
    adapter = KafkaAdapter("partition")
    adapter.reset({"standard": "partition/three-replicas"})
    with pytest.raises(HarnessError, match="kafka.cluster.Partition"):
        adapter.step({"action": "follower_fetch", "broker_id": 1, "topic_id": "FOOFOOFOOFOOFOOFOOFOOw",
                      "partition_id": 0, "follower": 2, "fetch_offset": 0, "broker_epoch": 102})


# ------------------------------------------------------------------------------------------------ regressions

def agreed(trace: Mapping[str, Any]) -> Any:
    """Kafka's run of ``trace``, which the reference must accept."""
    result = conform(trace)
    assert result.outcome == "agree", f"{result.outcome}: {result.kafka}"
    return result.kafka_trace


def test_unregistering_an_elr_member_keeps_it_in_the_elr() -> None:
    """Kafka 4.3 ReplicationControlManager.handleBrokerUnregistered: the ELR pass removes the broker as
    brokerToRemove, not as an unclean shutdown; it stays in the ELR and nothing is written."""
    kafka = agreed({"initial": state({"replicas": [0, 1, 2, 3], "isr": [3], "leader": 3,
                                      "eligible_leader_replicas": [0], "last_known_elr": []},
                                     level=23, elr=True, min_isr=2),
                    "steps": [{"input": {"action": "handle_broker_unregistered", "broker_id": 0}}]})
    assert kafka.steps[0].records == ()
    assert kafka.steps[0].post["partitions"][f"{T}:0"]["elr"] == [0]


def test_a_reassignment_elects_online_even_on_an_unclean_topic() -> None:
    """Kafka 4.3 changePartitionReassignment never sets the UNCLEAN election (only a cancellation does)."""
    kafka = agreed({"initial": state({"replicas": [0], "isr": [], "leader": -1, "eligible_leader_replicas": [],
                                      "last_known_elr": []}, level=23, elr=True, unclean=True),
                    "steps": [{"input": {"action": "alter_partition_reassignment", "topic_name": "t0",
                                         "partition_id": 0, "target_replicas": [0],
                                         "allow_replication_factor_change": False}}]})
    assert kafka.steps[0].records == () and kafka.steps[0].post["partitions"][f"{T}:0"]["leader"] == -1


def test_an_alter_partition_naming_no_topic_is_answered_before_the_broker_epoch_check() -> None:
    """Kafka 4.3 QuorumController.alterPartition answers an empty request without running it."""
    kafka = agreed({"initial": state({"replicas": [0], "isr": [0], "leader": 0}),
                    "steps": [{"input": {"action": "alter_partition",
                                         "request": {"broker_id": 7, "broker_epoch": 7, "topics": []}}}]})
    assert kafka.steps[0].response == {"error_code": "NONE", "topics": []}


def test_an_invalid_leader_recovery_state_is_read_after_the_epoch_checks() -> None:
    """Issue 17: Kafka 4.3 validateAlterPartitionData reads LeaderRecoveryState.of after the epoch and ISR checks:
    a stale leader epoch answers FENCED_LEADER_EPOCH; with current epochs Kafka throws (both refuse)."""
    partition = {"replicas": [0, 1], "isr": [0, 1], "leader": 0, "leader_epoch": 3}

    def request(leader_epoch: int) -> dict[str, Any]:
        return {"action": "alter_partition", "request": {"broker_id": 0, "broker_epoch": 100, "topics": [
            {"topic_id": T, "partitions": [{"partition_index": 0, "leader_epoch": leader_epoch, "partition_epoch": 10,
                                            "new_isr_with_epochs": [[0, 100]], "leader_recovery_state": 2}]}]}}

    kafka = agreed({"initial": state(partition), "steps": [{"input": request(2)}]})
    assert kafka.steps[0].response["topics"][0]["partitions"][0]["error_code"] == "FENCED_LEADER_EPOCH"
    refused = conform({"initial": state(partition), "steps": [{"input": request(3)}]})
    assert refused.outcome == "agree" and refused.kafka_trace.steps[0].response is None  # Kafka threw; so does the reference


def test_elect_leaders_answers_as_the_controller_and_its_api_do() -> None:
    """Kafka 4.3 QuorumController.electLeaders answers an empty partition list at once; an unknown election type
    is INVALID_REQUEST for the request and, via ElectLeadersRequest.getErrorResponse, for every named partition."""
    initial = state({"replicas": [0, 1], "isr": [0, 1], "leader": 1})
    kafka = agreed({"initial": initial, "steps": [
        {"input": {"action": "elect_leaders", "request": {"election_type": 2, "topic_partitions": []}}},
        {"input": {"action": "elect_leaders", "request": {"election_type": 2, "topic_partitions": [["t0", [0, 4]]]}}}]})
    assert kafka.steps[0].response == {"error_code": "NONE", "replica_election_results": []}
    assert kafka.steps[1].response == {"error_code": "INVALID_REQUEST", "replica_election_results": [
        {"topic": "t0", "partition_results": [{"partition_id": 0, "error_code": "INVALID_REQUEST"},
                                              {"partition_id": 4, "error_code": "INVALID_REQUEST"}]}]}


def test_a_leaderless_partition_whose_epoch_a_reassignment_bumps_records_last_known_leader_minus_one() -> None:
    """Kafka 4.3 PartitionChangeBuilder.maybeUpdateLastKnownLeader tests only the record's leader: the epoch bump
    of a reassignment dropping replicas sets leader -1 on a leaderless partition, and lastKnownElr [-1]."""
    kafka = agreed({"initial": state({"replicas": [0, 3], "isr": [0], "leader": -1, "eligible_leader_replicas": [],
                                      "last_known_elr": []}, level=23, elr=True, fenced=(0, 3)),
                    "steps": [{"input": {"action": "alter_partition_reassignment", "topic_name": "t0",
                                         "partition_id": 0, "target_replicas": [0]}}]})
    record = kafka.steps[0].records[0][1]
    assert (record.leader, record.replicas, record.last_known_elr) == (-1, (0,), (-1,))


def test_kafkas_visiting_order_is_stated_and_taken_by_the_reference() -> None:
    """Kafka visits partitions in its hash-keyed indexes' order; the step states it (``order``) for the reference."""
    two = {"explicit": {
        "metadata_version": 30, "elr_enabled": False, "brokers": brokers(0, 1, 2),
        "topics": [{"name": "t0", "topic_id": T}],
        "partitions": [{"partition_id": p, "topic_id": T, "replicas": [0, 1], "isr": [0, 1], "leader": 0}
                       for p in range(3)]}}
    kafka = agreed({"initial": two, "steps": [{"input": {"action": "handle_broker_fenced", "broker_id": 0}}]})
    step = kafka.steps[0]
    assert sorted(step.input["order"]) == [(T, 0), (T, 1), (T, 2)]
    assert [key for _, r in step.records for key in [(r.topic_id, r.partition_id)]] == list(step.input["order"])
