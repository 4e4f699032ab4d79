"""The controller component against Apache Kafka's own classes (``io.kraftspec.harness.ControllerSession``).

* every bundled controller trace (``traces/tla/controller.jsonl.gz``) given to Kafka agrees with the reference;
* a short derandomized differential run (``kraftspec.differential_controller``);
* the comparison can fail: deliberately wrong reference variants (``models/controller_mutants.py``) and planted
  changes to what the harness feeds Kafka are caught;
* one regression test per disagreement found while bringing Kafka in the loop, each a minimal sequence of inputs
  that Kafka and the (corrected) reference agree on, with the outcome Kafka gave pinned.

Larger runs: ``benchmarks/differential_kafka_controller.py`` (100,000+ steps) and ``kraftspec conform --kafka``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterable, Mapping

import pytest
from hypothesis import HealthCheck, settings
from hypothesis.stateful import run_state_machine_as_test

from kraftspec import traces as traces_package
from kraftspec.differential_controller import (
    VERSION_CASES,
    ControllerDifferential,
    ControllerDivergence,
    controller_machine,
    profile,
)
from kraftspec.harness import controller as harness_controller
from kraftspec.harness.adapter import KafkaAdapter
from kraftspec.harness.adapter import hooks
from kraftspec.harness.conform import conform_files, conform_trace, judge, kafka_trace
from kraftspec.harness.jvm import DEFAULT_VERSION, HarnessError, shared
from kraftspec.models.controller_mutants import MUTANTS
from kraftspec.models.determinism import without_local_constants
from kraftspec.traces.format.envelope import trace_from_json, trace_to_json
from kraftspec.traces.format.jsonl import read_jsonl

TLA_TRACES = Path(traces_package.__file__).parent / "tla" / "controller.jsonl.gz"
NEW_PROCESS = {"standard": "controller/new-process"}
REGISTERED = {"standard": "controller/registered-cluster"}
LISTENER = {"name": "CONTROLLER", "host": "controller1", "port": 9093, "security_protocol": 0}


@pytest.fixture(scope="module")
def process():  # type: ignore[no-untyped-def]
    return shared(DEFAULT_VERSION)


def on_kafka(initial: Mapping[str, Any], inputs: Iterable[Mapping[str, Any]]) -> list[Any]:
    """Each input given to Kafka and the reference side by side; the steps Kafka answered (None: both refused)."""
    differential = ControllerDifferential(KafkaAdapter("controller"), initial)
    return [differential.step(dict(input)) for input in inputs]


def sent(steps: list[Any], index: int) -> list[Any]:
    return list(steps[index].step.response["sends"])


def explicit(**manager: Any) -> dict[str, Any]:
    return {"explicit": {"metadata_version": 30, "raft_leader_id": 1,
                         "manager": {"node_id": 1, "incarnation_id": "inc1", "listeners": [LISTENER], **manager}}}


def register(incarnation: str = "inc1", **fields: Any) -> dict[str, Any]:
    return {"action": "register_controller",
            "request": {"controller_id": 1, "incarnation_id": incarnation, "listeners": [LISTENER], **fields}}


# ---------------------------------------------------------------------------------------------------------------
# The bundled traces, a differential run
# ---------------------------------------------------------------------------------------------------------------

def test_every_bundled_controller_trace_agrees_on_kafka(process) -> None:  # type: ignore[no-untyped-def]
    outcomes = [item for _, _, item in conform_files([str(TLA_TRACES)], process)]
    assert len(outcomes) == 1342 and all(not isinstance(item, str) for item in outcomes)
    disagreeing = [item for item in outcomes if item.outcome != "agree"]  # type: ignore[union-attr]
    assert not disagreeing, disagreeing[0]


def test_a_short_derandomized_differential_run_agrees() -> None:
    machine = controller_machine(lambda: KafkaAdapter("controller"))
    with without_local_constants():
        run_state_machine_as_test(machine, settings=settings(
            max_examples=25, stateful_step_count=30, derandomize=True, database=None, deadline=None,
            suppress_health_check=list(HealthCheck)))


# ---------------------------------------------------------------------------------------------------------------
# The comparison can fail
# ---------------------------------------------------------------------------------------------------------------

ZK_READY = [{"action": "start"}, {"action": "on_metadata_update", "metadata_version": 30},
            register(zk_migration_ready=True)]


@pytest.mark.parametrize("name, initial, inputs", [
    ("controller-zk-migration-ready-copied", NEW_PROCESS, ZK_READY),
    ("controller-due-resend-kept", explicit(metadata_version=30, channel_started=True, pending_rpcs=1,
                                            failed_rpcs=1, resend_deadline_ms=100),
     [{"action": "on_response", "error": "NONE", "now": 150}]),
    ("controller-unknown-endpoint-mismatched", NEW_PROCESS,
     [{"action": "describe_cluster", "request": {"version": 1, "endpoint_type": 123}}]),
    ("controller-fenced-brokers-to-v1", NEW_PROCESS, [{"action": "describe_cluster", "request": {"version": 1}}]),
    ("controller-stale-incarnation-accepted", REGISTERED,
     [{"action": "replay_register_controller", "record": {"controller_id": 1, "incarnation_id": "old",
                                                          "end_points": [LISTENER]}},
      {"action": "on_metadata_update", "registration_changed": True}]),
])
def test_a_wrong_reference_variant_is_caught_against_kafka(name: str, initial: dict[str, Any],
                                                          inputs: list[dict[str, Any]]) -> None:
    assert on_kafka(initial, inputs)  # the correct reference agrees with Kafka on these inputs
    mutant = next(m for m in MUTANTS if m.name == name)
    with mutant.applied(), pytest.raises(ControllerDivergence) as caught:
        on_kafka(initial, inputs)
    print(f"{name}: caught against Kafka: {str(caught.value).splitlines()[0]}")


def test_the_mutants_kafka_catches_are_caught_by_conform_over_the_bundled_traces(process) -> None:  # type: ignore[no-untyped-def]
    """A registration mutant is flagged on Kafka's own runs of the bundled traces (not only on chosen inputs)."""
    traces = [item for _, item in read_jsonl(TLA_TRACES)][:200]
    mutant = next(m for m in MUTANTS if m.name == "controller-stale-incarnation-accepted")
    with mutant.applied():
        outcomes = [conform_trace(trace, process).outcome for trace in traces]  # type: ignore[arg-type]
    assert "DISAGREE" in outcomes


@pytest.mark.parametrize("plant", ["log end moved", "broker unfenced", "request's incarnation swapped"])
def test_a_planted_change_to_what_kafka_is_fed_is_caught(plant: str, monkeypatch: pytest.MonkeyPatch) -> None:
    original_initial, original_input = harness_controller.kafka_initial, harness_controller.kafka_input

    def planted_initial(initial: Mapping[str, Any]) -> dict[str, Any]:
        opened = original_initial(initial)
        if plant == "log end moved":
            opened["next_offset"] += 1
        if plant == "broker unfenced":
            opened["brokers"] = [{**b, "fenced": False} for b in opened["brokers"]]
        return opened

    def planted_input(input: Mapping[str, Any]) -> dict[str, Any]:
        sent_input = original_input(input)
        if plant == "request's incarnation swapped" and input["action"] == "register_controller":
            sent_input["request"] = {**sent_input["request"],
                                     "incarnation_id": harness_controller.incarnation_uuid("planted")}
        return sent_input

    inputs = [{"action": "describe_cluster", "request": {"version": 2, "include_fenced_brokers": True}},
              {"action": "start"}, {"action": "on_metadata_update", "metadata_version": 30}, register()]
    assert on_kafka(NEW_PROCESS, inputs)
    monkeypatch.setattr(harness_controller, "kafka_initial", planted_initial)
    monkeypatch.setattr(harness_controller, "kafka_input", planted_input)
    # a changed initial state shows as a divergence; a changed input is refused before it (the step's input must
    # be the trace's, kraftspec.harness.adapter.Hooks.checked_step)
    with pytest.raises((ControllerDivergence, HarnessError)):
        on_kafka(NEW_PROCESS, inputs)


# ---------------------------------------------------------------------------------------------------------------
# Regressions: one per disagreement found (Kafka 4.3.1's outcome pinned)
# ---------------------------------------------------------------------------------------------------------------

def test_registration_writes_zk_migration_ready_false_whatever_the_request_says() -> None:
    """Issue 17: Kafka 4.3 ``ClusterControlManager.registerController`` writes ``setZkMigrationReady(false)``."""
    steps = on_kafka(NEW_PROCESS, ZK_READY)
    record = steps[2].step.records[0][1]
    assert record.zk_migration_ready is False and steps[2].step.response == {"error": "NONE", "message": ""}


@pytest.mark.parametrize("fields, error, message", [
    ({"active": False}, "NOT_CONTROLLER", "This is not the correct controller for this cluster."),
    ({"authorized": False}, "CLUSTER_AUTHORIZATION_FAILED", "Cluster authorization failed."),
    ({}, "NONE", ""),
])
def test_registration_responses_carry_the_error_codes_own_message(fields: dict[str, Any], error: str,
                                                                  message: str) -> None:
    """``ControllerRegistrationRequest.getErrorResponse`` answers ``Errors.message()``; success ``""``."""
    steps = on_kafka(NEW_PROCESS, [{**register(), **fields}])
    assert steps[0].step.response == {"error": error, "message": message}


def test_registration_below_3_7_answers_the_generic_unsupported_version_message() -> None:
    initial = {"explicit": {**explicit()["explicit"], "metadata_version": 14}}
    steps = on_kafka(initial, [register()])
    assert steps[0].step.response == {"error": "UNSUPPORTED_VERSION", "message": "The version of API is not supported."}


def test_a_registrations_endpoints_are_keyed_by_name() -> None:
    """``ControllerRegistration.Builder(record)``: HashMaps keyed by name; the last of a name wins."""
    listeners = [{"name": "PLAINTEXT", "host": "a", "port": 1}, {"name": "CONTROLLER", "host": "b", "port": 2},
                 {"name": "PLAINTEXT", "host": "c", "port": 3}]
    steps = on_kafka(NEW_PROCESS, [{"action": "replay_register_controller",
                                    "record": {"controller_id": 2, "incarnation_id": "x", "end_points": listeners}},
                                   {"action": "describe_cluster", "request": {"version": 1, "endpoint_type": 2},
                                    "receiver": "controller", "listener": "PLAINTEXT"}])
    assert [e["name"] for e in steps[0].step.post["controllers"]["2"]["listeners"]] == ["CONTROLLER", "PLAINTEXT"]
    assert steps[1].step.response["nodes"][0]["host"] == "c"


def test_a_due_resend_fires_before_the_response_is_handled() -> None:
    steps = on_kafka(explicit(metadata_version=30, channel_started=True, pending_rpcs=1, failed_rpcs=1,
                              resend_deadline_ms=100),
                     [{"action": "on_response", "error": "NONE", "now": 150}])
    assert steps[0].step.post["resend_deadline_ms"] is None and steps[0].step.response == {"sends": []}


def test_describe_cluster_lists_nodes_in_kafkas_hash_map_order() -> None:
    """Controllers 3000, 3001 and 1 registered in that order: Kafka's ClusterImage HashMap lists 3001 before 1."""
    records = [{"action": "replay_register_controller",
                "record": {"controller_id": c, "incarnation_id": "c", "end_points": [LISTENER]}} for c in (3000, 3001, 1)]
    steps = on_kafka(NEW_PROCESS, [*records, {"action": "describe_cluster", "request": {"version": 1, "endpoint_type": 2},
                                              "receiver": "controller"}])
    last = steps[-1].step
    assert last.input["order"] == (3000, 3001, 1)
    assert [n["node_id"] for n in last.response["nodes"]] == [3000, 3001, 1]


def test_describe_cluster_reports_only_the_cluster_resources_operations() -> None:
    steps = on_kafka(NEW_PROCESS, [{"action": "describe_cluster",
                                    "request": {"version": 2, "include_cluster_authorized_operations": True},
                                    "authorization": {"authorized_operations": 0xFFFF}}])
    assert steps[0].step.response["cluster_authorized_operations"] == 0x1FA0


def test_a_controllers_alter_denial_names_the_request() -> None:
    steps = on_kafka(NEW_PROCESS, [{"action": "describe_cluster", "request": {"version": 1, "endpoint_type": 2},
                                    "receiver": "controller", "authorization": {"alter_cluster": False}}])
    assert steps[0].step.response["error_message"] == "Request <request> needs ALTER permission."


def test_kafkas_random_choices_are_stated_in_the_step() -> None:
    steps = on_kafka(NEW_PROCESS, [{"action": "describe_cluster", "request": {"version": 2}},
                                   {"action": "start"}, {"action": "on_metadata_update", "metadata_version": 30},
                                   {"action": "on_response", "error": "NOT_CONTROLLER", "now": 7}])
    assert steps[0].step.input["chooser"] in (0, 1)  # brokers 4 and 5 are unfenced
    draw = steps[3].step.input["jitter"]
    assert 0 <= draw < 1 and steps[3].step.post["resend_deadline_ms"] == 7 + int((draw * (1.02 - 0.98) + 0.98) * 100)


def test_inputs_both_sides_refuse() -> None:
    steps = on_kafka(NEW_PROCESS, [{"action": "on_response", "error": "NONE"},
                                   {"action": "describe_cluster", "request": {"version": 0, "endpoint_type": 2}}])
    assert steps == [None, None]


def test_a_trace_from_a_differential_failure_replays_under_conform(process) -> None:  # type: ignore[no-untyped-def]
    differential = ControllerDifferential(KafkaAdapter("controller"), NEW_PROCESS)
    for input in ZK_READY:
        differential.step(input)
    recorded = trace_to_json(differential.trace())
    inputs_only = trace_from_json({**recorded, "steps": [{"input": step["input"]} for step in recorded["steps"]]})
    assert conform_trace(inputs_only, process).outcome == "agree"
    assert conform_trace(differential.trace(), process).recorded.conformant


# ---------------------------------------------------------------------------------------------------------------
# Versions: each case agrees with its own version's behaviour and not with every other one
# ---------------------------------------------------------------------------------------------------------------

VERSIONS = os.environ.get("KRAFTSPEC_KAFKA_VERSIONS", DEFAULT_VERSION).split()
"""The default run checks Kafka 4.3.1; KRAFTSPEC_KAFKA_VERSIONS="3.9.1 4.0.1 4.1.1 4.2.0 4.3.1 4.4.0" checks all."""


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("name, explicit, inputs, show", VERSION_CASES, ids=[c[0] for c in VERSION_CASES])
def test_a_version_difference_case_agrees_with_its_versions_behaviour(version: str, name: str,
                                                                      explicit: dict[str, Any], inputs: list[Any],
                                                                      show: Any) -> None:
    own = profile(version).behaviour
    base = {"format": "1.0", "component": "controller", "id": name, "steps": [{"input": i} for i in inputs]}
    ran, refusal = kafka_trace(trace_from_json({**base, "initial": {"explicit": {**explicit, "behaviour": own}}}),
                               shared(version), hooks("controller"))
    assert judge(ran, refusal).conformant
    others = [b for b in ("3.9", "4.2", "4.3+") if b != own]
    as_other = [judge(trace_from_json({**trace_to_json(ran), "initial": {"explicit": {**explicit, "behaviour": b}}}),
                      refusal).conformant for b in others]
    assert not all(as_other), f"{name}: every behaviour agrees with Kafka {version}"
