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
import os
from pathlib import Path
from typing import Any, Callable, Mapping

import pytest

from kraftspec.differential_partition import profile, run_differential
from kraftspec.harness.adapter import KafkaAdapter, hooks
from kraftspec.harness.conform import Conformance, conform_trace, judge, kafka_trace
from kraftspec.harness.jvm import DEFAULT_VERSION, shared
from kraftspec.models.partition_mutants import MUTANTS
from kraftspec.oracle import DivergenceError, read
from kraftspec.reference.partition_rules import PARTITION_BEHAVIOURS
from kraftspec.traces.format.envelope import trace_from_json, trace_to_json

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
        assert result.outcome == "agree", f"{where}: {result.outcome} {result.inexpressible or result.kafka}"
    assert outcomes == {"agree": 3003}, outcomes


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


# ------------------------------------------------------------------------------------------------ the leader on the broker

LEADER = {"broker_id": 1, "topic_id": T, "partition_id": 0}


def test_a_leaders_proposal_lists_its_isr_set_ascending() -> None:
    """Kafka's leader keeps its ISR in a Set.copyOf (CommittedPartitionState), whose order Java draws per JVM run; the
    proposal and the post-state list the members ascending, whatever order the registration has."""
    kafka = agreed({"initial": state({"replicas": [1, 2, 3], "isr": [3, 1], "leader": 1}),
                    "steps": [{"input": {"action": "become_leader", **LEADER, "log_end_offset": 0, "high_watermark": 0,
                                         "min_insync_replicas": 1}},
                              {"input": {"action": "follower_fetch", **LEADER, "follower": 2, "fetch_offset": 0,
                                         "broker_epoch": 102}}]})
    assert kafka.steps[1].response["proposal"]["new_isr_with_epochs"] == [[1, 101], [2, 102], [3, -1]]
    assert kafka.steps[1].post["leaders"][f"1:{T}:0"]["isr"] == [1, 3]


def test_a_request_still_unanswered_makes_the_next_proposal_fail() -> None:
    """Kafka 4.3 DefaultAlterPartitionManager.submit refuses a second request for a partition while one is unanswered
    (OPERATION_NOT_ATTEMPTED) and Partition.handleAlterPartitionError reverts it: after new metadata dropped the
    pending shrink, the next shrink proposes nothing until the first request is answered."""
    steps = [{"input": {"action": "become_leader", **LEADER, "log_end_offset": 0, "high_watermark": 0,
                        "min_insync_replicas": 1, "replica_lag_time_max_ms": -1}},
             {"input": {"action": "append", **LEADER, "count": 1}},
             {"input": {"action": "maybe_shrink_isr", **LEADER}},
             {"input": {"action": "handle_broker_fenced", "broker_id": 3}},
             {"input": {"action": "update_leader_metadata", **LEADER}},
             {"input": {"action": "maybe_shrink_isr", **LEADER}},
             {"input": {"action": "handle_alter_partition_result", **LEADER, "result": {
                 "partition_index": 0, "error_code": "INVALID_UPDATE_VERSION"}}},
             {"input": {"action": "maybe_shrink_isr", **LEADER}}]
    kafka = agreed({"initial": state({"replicas": [1, 2, 3], "isr": [1, 2, 3], "leader": 1}), "steps": steps})
    proposals = [step.response["proposal"] for step in kafka.steps if step.action == "maybe_shrink_isr"]
    assert proposals[0] is not None and proposals[1] is None and proposals[2] is not None


def test_an_answer_reaches_a_broker_that_stopped_leading() -> None:
    """The AlterPartitionManager outlives the leader state: the answer is taken (and ignored) after stop_leading, and the
    broker, leading again, proposes again."""
    kafka = agreed({"initial": state({"replicas": [1, 2], "isr": [1, 2], "leader": 1}), "steps": [
        {"input": {"action": "become_leader", **LEADER, "log_end_offset": 1, "high_watermark": 0, "min_insync_replicas": 1,
                   "replica_lag_time_max_ms": -1}},
        {"input": {"action": "maybe_shrink_isr", **LEADER}},
        {"input": {"action": "stop_leading", **LEADER}},
        {"input": {"action": "handle_alter_partition_result", **LEADER, "result": {
            "partition_index": 0, "error_code": "FENCED_LEADER_EPOCH"}}},
        {"input": {"action": "become_leader", **LEADER, "log_end_offset": 1, "high_watermark": 0, "min_insync_replicas": 1,
                   "replica_lag_time_max_ms": -1}},
        {"input": {"action": "maybe_shrink_isr", **LEADER}}]})
    assert kafka.steps[3].response == {"resend": None} and kafka.steps[5].response["proposal"] is not None


def test_a_leader_holds_a_recovering_partition_recovered() -> None:
    """Kafka 4.3 Partition.makeLeader sets RECOVERED: the leader's proposals report the recovery."""
    kafka = agreed({"initial": state({"replicas": [1, 2], "isr": [1], "leader": 1, "leader_recovery_state": 1}),
                    "steps": [{"input": {"action": "become_leader", **LEADER, "log_end_offset": 0, "high_watermark": 0,
                                         "min_insync_replicas": 1}},
                              {"input": {"action": "follower_fetch", **LEADER, "follower": 2, "fetch_offset": 0,
                                         "broker_epoch": 102}}]})
    assert kafka.steps[1].response["proposal"]["leader_recovery_state"] == 0


def test_new_metadata_at_a_higher_leader_epoch_restarts_the_leader_epoch() -> None:
    """Kafka 4.3 makeLeader with a higher leader epoch, for a broker that already leads: the epoch and its start
    offset move to the LEO and the followers' fetch state is reset (resetReplicaState, isNewLeader false)."""
    kafka = agreed({"initial": state({"replicas": [1, 2, 3], "isr": [1, 2, 3], "leader": 1}), "steps": [
        {"input": {"action": "become_leader", **LEADER, "log_end_offset": 2, "high_watermark": 0, "min_insync_replicas": 1}},
        {"input": {"action": "follower_fetch", **LEADER, "follower": 2, "fetch_offset": 1, "broker_epoch": 102}},
        {"input": {"action": "alter_partition_reassignment", "topic_name": "t0", "partition_id": 0,
                   "target_replicas": [1, 2]}},
        {"input": {"action": "update_leader_metadata", **LEADER}}]})
    leader = kafka.steps[3].post["leaders"][f"1:{T}:0"]
    assert (leader["leader_epoch"], leader["leader_epoch_start_offset"]) == (1, 2)
    assert leader["followers"] == {"2": {"log_end_offset": 1, "broker_epoch": 102}}


def test_the_effective_min_isr_counts_the_leader_and_its_followers() -> None:
    """Kafka 4.3 Partition.effectiveMinIsr is min(min.insync.replicas, remote replicas + 1): a broker leading a partition
    it is no replica of counts itself, and its HW stays under min ISR."""
    kafka = agreed({"initial": state({"replicas": [0], "isr": [0], "leader": -1}, registered=(0, 1)), "steps": [
        {"input": {"action": "become_leader", **LEADER, "log_end_offset": 1, "high_watermark": 0, "min_insync_replicas": 2}},
        {"input": {"action": "follower_fetch", **LEADER, "follower": 0, "fetch_offset": 1, "broker_epoch": 100}}]})
    assert kafka.steps[1].post["leaders"][f"1:{T}:0"]["high_watermark"] == 0


def test_a_fetch_with_a_stale_broker_epoch_is_fenced() -> None:
    """Kafka 4.3 Replica.updateFetchStateOrThrow fences a fetch whose broker epoch is older than the follower's alive
    registration (NOT_LEADER_OR_FOLLOWER): both refuse it."""
    refused = conform({"initial": state({"replicas": [1, 2], "isr": [1, 2], "leader": 1}), "steps": [
        {"input": {"action": "become_leader", **LEADER, "log_end_offset": 0, "high_watermark": 0, "min_insync_replicas": 1}},
        {"input": {"action": "follower_fetch", **LEADER, "follower": 2, "fetch_offset": 0, "broker_epoch": 101}}]})
    assert refused.outcome == "agree" and refused.kafka_trace.steps[1].response is None


# ------------------------------------------------------------------------------------------------ versions

VERSIONS = [v for v in os.environ.get("KRAFTSPEC_KAFKA_VERSIONS", DEFAULT_VERSION).split() if not v.startswith("3.")]
"""Kafka 4.3.1 by default; KRAFTSPEC_KAFKA_VERSIONS="4.0.1 4.1.1 4.2.0 4.3.1 4.4.0" checks every release that has the
partition session."""


def _reassign(target: list[int]) -> dict[str, Any]:
    return {"action": "alter_partition_reassignment", "topic_name": "t0", "partition_id": 0, "target_replicas": target}


VERSION_CASES = [
    ("reassignment back to its start", "completion_needs_only_adding_in_isr",
     state({"replicas": [0], "isr": [0], "leader": 0}, level=21), [_reassign([1]), _reassign([0])]),
    ("fenced last known leader", "last_known_leader_must_be_acceptable",
     state({"replicas": [0], "isr": [], "leader": -1, "eligible_leader_replicas": [], "last_known_elr": [0]},
           level=23, elr=True, fenced=(0,)), [{"action": "maybe_balance_partition_leaders"}]),
    ("leader fenced out of a preferred election", "last_known_leader_when_isr_empties",
     state({"replicas": [0, 1, 2], "isr": [2], "leader": 2, "eligible_leader_replicas": [], "last_known_elr": []},
           level=23, elr=True, fenced=(2,)), [{"action": "maybe_balance_partition_leaders"}]),
]
"""The partition rules that differ between Kafka versions (``PartitionBehaviour``), each as a minimal case: replicas
[0] reassigned to [1] and back while 1 is not in the ISR (4.0–4.2 complete the reassignment, 4.3 waits for the
adding replica); a leaderless partition whose only last known leader is fenced (4.0 elects it, recovering; 4.1 does
not); a preferred election that leaves a partition leaderless with its ISR kept (4.1 records the old leader as last
known, 4.0 only when the ISR empties)."""


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("name, switch, initial, inputs", VERSION_CASES, ids=[c[0] for c in VERSION_CASES])
def test_a_version_difference_case_agrees_with_its_versions_rule(version: str, name: str, switch: str,
                                                                 initial: dict[str, Any], inputs: list[Any]) -> None:
    """Kafka's run of the case agrees with the reference under the version's own behaviour and disagrees under
    every behaviour whose switch for the case differs."""
    own = profile(version).behaviour
    explicit = initial["explicit"]
    base = {"format": "1.0", "component": "partition", "id": name, "steps": [{"input": i} for i in inputs]}
    ran, refusal = kafka_trace(trace_from_json({**base, "initial": {"explicit": {**explicit, "behaviour": own}}}),
                               shared(version), hooks("partition"))
    assert judge(ran, refusal).conformant
    differing = [b.name for b in PARTITION_BEHAVIOURS.values()
                 if getattr(b, switch) != getattr(PARTITION_BEHAVIOURS[own], switch)]
    assert differing
    for other in differing:
        as_other = trace_from_json({**trace_to_json(ran), "initial": {"explicit": {**explicit, "behaviour": other}}})
        assert not judge(as_other, refusal).conformant, f"{name}: behaviour {other} agrees with Kafka {version}"
