"""The controller component of the trace format (rules §4, KIP-919, KIP-1073): hand-written scenarios,
verdicts, codecs, malformed inputs, the schema and the traces recorded from TLC's graph."""

from __future__ import annotations

import copy
import io
import json
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from support_traces import assert_round_trips, assert_schema_lists

from kraftspec import oracle
from kraftspec.traces.replay import controller as controller_replay
from kraftspec.traces.format import jsonl
from kraftspec.traces.replay.check import EXIT_FINDING, EXIT_OK, check_command
from kraftspec.traces.format.controller import ACTIONS, STANDARD_STATES
from kraftspec.traces.format.envelope import Trace, trace_from_json
from kraftspec.traces.replay.verdict import Verdict, replay
from kraftspec.traces.format.values import TraceError

SCHEMA = json.loads((Path(jsonl.__file__).parents[1] / "trace-v1.schema.json").read_text())
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)
BUNDLED = Path(jsonl.__file__).parents[1] / "tla" / "controller.jsonl.gz"
LISTENER = {"name": "CONTROLLER", "host": "controller1", "port": 9093}


def controller_trace(initial: dict[str, Any], *steps: dict[str, Any]) -> dict[str, Any]:
    return {"format": "1.0", "component": "controller", "id": "hand-written", "initial": initial, "steps": list(steps)}


def sent(incarnation: str) -> dict[str, Any]:
    """The ControllerRegistration request node 1 sends (listener CONTROLLER://controller1:9093), as JSON."""
    return {"controller_id": 1, "incarnation_id": incarnation, "zk_migration_ready": False,
            "listeners": [{**LISTENER, "security_protocol": 0}], "features": []}


def example() -> dict[str, Any]:
    """FORMAT.md's controller example: a stale incarnation in the log is not taken for ours (§4.1)."""
    text = (Path(__file__).parents[1] / "traces" / "FORMAT.md").read_text()
    return json.loads(next(b.split("```", 1)[0] for b in text.split("```json\n")[1:] if '"component": "controller"' in b))


# Node 1 restarts as inc1b while the log holds inc1's registration: the new incarnation registers (§4.1), its
# RegisterControllerRecord replaces the old one, RPC success alone does not mark it registered, the log does.
NEW_INCARNATION = controller_trace(
    {"standard": "controller/registered-cluster"},
    {"input": {"action": "restart", "incarnation_id": "inc1b"}, "output": {"response": {"sends": []}},
     "post": {"incarnation_id": "inc1b", "registered": False, "channel_started": False, "known_metadata_version": 1}},
    {"input": {"action": "on_metadata_update", "metadata_version": 30, "registration_changed": True},
     "output": {"response": {"sends": []}}, "post": {"registered": False, "known_metadata_version": 30}},
    {"input": {"action": "start"}, "output": {"response": {"sends": [sent("inc1b")]}}, "post": {"pending_rpcs": 1}},
    {"input": {"action": "register_controller", "request": {"controller_id": 1, "incarnation_id": "inc1b",
                                                            "listeners": [LISTENER]}},
     "output": {"response": {"error": "NONE", "message": ""}, "records": [  # Kafka's success message is ""
         {"offset": 3, "type": "RegisterControllerRecord", "controller_id": 1, "incarnation_id": "inc1b",
          "end_points": [LISTENER]}]},
     "post": {"next_offset": 4}},
    {"input": {"action": "on_response", "now": 10}, "post": {"registered": False, "successful_rpcs": 1, "pending_rpcs": 0}},
    {"input": {"action": "on_metadata_update", "registration_changed": True}, "output": {"response": {"sends": []}},
     "post": {"registered": True, "controllers": {
         "1": {"controller_id": 1, "incarnation_id": "inc1b", "zk_migration_ready": False,
               "listeners": [{**LISTENER, "security_protocol": 0}], "features": []},
         "2": {"controller_id": 2, "incarnation_id": "inc2", "zk_migration_ready": False,
               "listeners": [{"name": "CONTROLLER", "host": "controller2", "port": 9093, "security_protocol": 0}],
               "features": []},
         "3": {"controller_id": 3, "incarnation_id": "inc3", "zk_migration_ready": False,
               "listeners": [{"name": "CONTROLLER", "host": "controller3", "port": 9093, "security_protocol": 0}],
               "features": []}}}},
)

# A delayed record of the previous incarnation lands after ours: the manager sees a stale incarnation and
# registers again (registeredInLog needs our incarnation id, §4.1); the controller refuses nothing on incarnation.
STALE_RECORD = controller_trace(
    {"standard": "controller/registered-cluster"},
    {"input": {"action": "replay_register_controller", "record": {"controller_id": 1, "incarnation_id": "inc0",
                                                                  "end_points": [LISTENER]}},
     "post": {"next_offset": 4}},
    {"input": {"action": "on_metadata_update", "registration_changed": True},
     "output": {"response": {"sends": [sent("inc1")]}}, "post": {"registered": False, "pending_rpcs": 1}},
    {"input": {"action": "register_controller", "active": False, "request": {"controller_id": 1, "incarnation_id": "inc1"}},
     "output": {"response": {"error": "NOT_CONTROLLER"}, "records": []}},
    {"input": {"action": "on_response", "error": "NOT_CONTROLLER", "now": 50, "jitter": 0.5},
     "post": {"failed_rpcs": 1, "resend_deadline_ms": 150, "pending_rpcs": 0}},
    {"input": {"action": "on_deadline", "now": 149}, "output": {"response": {"sends": []}}},
    {"input": {"action": "on_deadline", "now": 150}, "output": {"response": {"sends": [sent("inc1")]}},
     "post": {"resend_deadline_ms": None, "clock": 150}},
)

# KIP-1073: a broker lists fenced brokers only to a v2 request with IncludeFencedBrokers (§4.2); the
# controller id is an unfenced broker chosen by ``chooser``.
BROKER_4 = {"node_id": 4, "host": "broker4", "port": 9092, "rack": "r1", "is_fenced": False}
BROKER_5 = {"node_id": 5, "host": "broker5", "port": 9092, "rack": None, "is_fenced": False}
BROKER_6 = {"node_id": 6, "host": "broker6", "port": 9092, "rack": None, "is_fenced": True}
FENCED_BROKERS = controller_trace(
    {"standard": "controller/new-process"},
    {"input": {"action": "describe_cluster", "request": {"version": 1}},
     "output": {"response": {"error": "NONE", "endpoint_type": 1, "controller_id": 4, "nodes": [BROKER_4, BROKER_5]}}},
    {"input": {"action": "describe_cluster", "request": {"version": 2}, "chooser": 1},
     "output": {"response": {"controller_id": 5, "nodes": [BROKER_4, BROKER_5]}}},
    {"input": {"action": "describe_cluster", "request": {"version": 2, "include_fenced_brokers": True}},
     "output": {"response": {"error": "NONE", "cluster_id": "MkU3OEVBNTcwNTJENDM2Qg",
                             "nodes": [BROKER_4, BROKER_5, BROKER_6]}}},
    {"input": {"action": "check_request_serializable", "request": {"version": 1, "include_fenced_brokers": True}},
     "output": {"response": {"serializable": False,
                             "message": "Attempted to write a non-default includeFencedBrokers at version 1"}}},
)

# Controller endpoints only from a controller, asked with endpoint type 2 (KIP-919, §4.2): every registered
# controller, rack null, the Raft leader as controller id; a mismatched or unknown type is an error.
CONTROLLER_ENDPOINTS = controller_trace(
    {"standard": "controller/registered-cluster"},
    {"input": {"action": "describe_cluster", "receiver": "controller", "request": {"version": 1, "endpoint_type": 2}},
     "output": {"response": {"error": "NONE", "endpoint_type": 2, "controller_id": 1, "nodes": [
         {"node_id": c, "host": f"controller{c}", "port": 9093, "rack": None, "is_fenced": False} for c in (1, 2, 3)]}}},
    {"input": {"action": "describe_cluster", "receiver": "controller", "request": {"version": 2}},
     "output": {"response": {"error": "MISMATCHED_ENDPOINT_TYPE", "endpoint_type": 1, "nodes": [], "controller_id": -1,
                             "error_message": "The request was sent to an endpoint of type CONTROLLER, but we wanted "
                                              "an endpoint of type BROKER"}}},
    {"input": {"action": "describe_cluster", "request": {"version": 2, "endpoint_type": 2}},
     "output": {"response": {"error": "MISMATCHED_ENDPOINT_TYPE", "nodes": []}}},
    {"input": {"action": "describe_cluster", "request": {"version": 1, "endpoint_type": 3}},
     "output": {"response": {"error": "UNSUPPORTED_ENDPOINT_TYPE", "error_message": "Unsupported endpoint type 3"}}},
    {"input": {"action": "describe_cluster", "receiver": "controller", "request": {"version": 2, "endpoint_type": 2},
               "authorization": {"alter_cluster": False}},
     "output": {"response": {"error": "CLUSTER_AUTHORIZATION_FAILED", "nodes": []}}},
)

SCENARIOS = {"example": example(), "new-incarnation": NEW_INCARNATION, "stale-record": STALE_RECORD,
             "fenced-brokers": FENCED_BROKERS, "controller-endpoints": CONTROLLER_ENDPOINTS}


def diverges(obj: dict[str, Any]) -> Verdict:
    verdict = replay(trace_from_json(obj))
    assert verdict.divergence is not None
    return verdict


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_hand_written_scenarios_are_valid_and_conformant(name: str) -> None:
    VALIDATOR.validate(SCENARIOS[name])
    verdict = replay(trace_from_json(SCENARIOS[name]))
    assert verdict.conformant, verdict.divergence


@pytest.mark.parametrize("trace, index, change, path, rule", [
    (NEW_INCARNATION, 4, ("post", "registered", True), "post.registered", "on_response"),
    (NEW_INCARNATION, 5, ("post", "registered", False), "post.registered", "on_metadata_update"),
    (NEW_INCARNATION, 2, ("response", "sends", []), "response.sends[0]", "start"),
    (STALE_RECORD, 1, ("response", "sends", []), "response.sends[0]", "on_metadata_update"),
    (STALE_RECORD, 3, ("post", "resend_deadline_ms", 149), "post.resend_deadline_ms", "on_response"),
    (FENCED_BROKERS, 0, ("response", "nodes", [BROKER_4, BROKER_5, BROKER_6]), "response.nodes[2]", "describe_cluster"),
    (CONTROLLER_ENDPOINTS, 3, ("response", "error", "MISMATCHED_ENDPOINT_TYPE"), "response.error", "describe_cluster"),
    (CONTROLLER_ENDPOINTS, 0, ("response", "controller_id", -1), "response.controller_id", "describe_cluster"),
])
def test_a_wrong_output_is_flagged_at_its_step_with_its_rule(trace: dict[str, Any], index: int,
                                                              change: tuple[str, str, Any], path: str, rule: str) -> None:
    wrong = copy.deepcopy(trace)
    where, field, value = change
    step = wrong["steps"][index]
    (step["post"] if where == "post" else step["output"]["response"])[field] = value
    divergence = diverges(wrong).divergence
    assert divergence is not None and divergence.step == index
    assert divergence.diffs[0].path == path
    assert divergence.rule.endswith(f".{rule}") and divergence.rule_doc


def test_a_record_of_the_wrong_incarnation_is_flagged_at_register_controller() -> None:
    wrong = copy.deepcopy(NEW_INCARNATION)
    wrong["steps"][3]["output"]["records"][0]["incarnation_id"] = "inc1"
    divergence = diverges(wrong).divergence
    assert divergence is not None and divergence.step == 3
    assert [str(d) for d in divergence.diffs] == ['records[0].incarnation_id: expected "inc1b", observed "inc1"']
    assert divergence.rule == "kraftspec.reference.controller_registration.register_controller"
    assert "controller registrations: 1: inc1, 2: inc2, 3: inc3" in divergence.state_before


@pytest.mark.parametrize("given, message", [
    ({"action": "describe_cluster", "request": {"version": 1, "include_fenced_brokers": True}},
     "refused by the reference: ValueError: the request cannot be sent at version 1"),
    ({"action": "describe_cluster", "request": {"version": 0, "endpoint_type": 2}, "receiver": "controller"},
     "refused by the reference: ValueError: the request cannot be sent at version 0"),
    ({"action": "on_response"}, "refused by the reference: ValueError: no ControllerRegistration request is pending"),
])
def test_inputs_the_reference_refuses_diverge_at_that_step(given: dict[str, Any], message: str) -> None:
    divergence = diverges(controller_trace({"standard": "controller/new-process"}, {"input": given})).divergence
    assert divergence is not None and divergence.step == 0 and divergence.diffs[0].path == "input"
    assert str(divergence.diffs[0].expected).startswith(message)


def backoff_trace(failures: int) -> dict[str, Any]:
    """``failures`` timed-out registrations, each resent at its deadline. Draw 0.5 is a factor of exactly 1: the
    n-th failure waits 100 * 2^n ms, at most 120000 ms (§4.1)."""
    steps: list[dict[str, Any]] = [{"input": {"action": "on_metadata_update", "metadata_version": 30}},
                                   {"input": {"action": "start"}}]
    now = 0
    for failure in range(failures):
        wait = min(100 * 2 ** failure, 120000)
        steps.append({"input": {"action": "on_response", "error": "REQUEST_TIMED_OUT", "now": now, "jitter": 0.5},
                      "post": {"resend_deadline_ms": now + wait, "failed_rpcs": failure + 1}})
        now += wait
        steps.append({"input": {"action": "on_deadline", "now": now}, "output": {"response": {"sends": [sent("inc1")]}}})
    return controller_trace({"standard": "controller/new-process"}, *steps)


def test_the_backoff_is_capped_at_120000_ms_after_eleven_failures() -> None:
    obj = backoff_trace(13)
    assert replay(trace_from_json(obj)).conformant
    obj["steps"][-2]["post"]["resend_deadline_ms"] += 1
    assert diverges(obj).divergence.step == len(obj["steps"]) - 2  # type: ignore[union-attr]


def test_every_standard_state_starts_as_documented() -> None:
    assert set(STANDARD_STATES) == {"controller/new-process", "controller/registered-cluster"}
    fresh, registered = (controller_replay.initial(trace_from_json(controller_trace({"standard": name})))
                         for name in sorted(STANDARD_STATES))
    assert not fresh.manager.channel_started and not fresh.image.controllers
    assert sorted(b for b, r in fresh.image.brokers.items() if r.fenced) == [6]
    assert registered.manager.registered and sorted(registered.image.controllers) == [1, 2, 3]


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_scenarios_round_trip_through_json_lines_and_parquet(name: str, tmp_path: Path) -> None:
    assert_round_trips(SCENARIOS[name], tmp_path)


def test_check_reports_a_controller_divergence_with_the_rule(tmp_path: Path) -> None:
    wrong = copy.deepcopy(FENCED_BROKERS)
    wrong["steps"][0]["output"]["response"]["nodes"].append(BROKER_6)
    path = tmp_path / "describe.jsonl"
    path.write_text(json.dumps(FENCED_BROKERS) + "\n" + json.dumps(wrong) + "\n")
    out = io.StringIO()
    assert check_command([str(path)], False, out) == EXIT_FINDING
    text = out.getvalue()
    assert "DIVERGES at step 0 of 4: describe_cluster" in text
    assert 'response.nodes[2]: expected (absent), observed {"node_id":6' in text
    assert "rule: kraftspec.reference.describe_cluster.describe_cluster" in text and "1 conformant, 1 divergent" in text


BAD_INPUTS = [
    ({"action": "register"}, "steps[0].input.action: unknown action 'register' for component controller (known: "
                             "advance_clock, check_request_serializable, describe_cluster, maybe_send, on_deadline, "
                             "on_metadata_update, on_response, register_controller, replay_register_controller, "
                             "restart, start)"),
    ({"action": "restart"}, "steps[0].input: action 'restart' needs 'incarnation_id'"),
    ({"action": "start", "jitter": 0.5}, "steps[0].input: unknown argument 'jitter' for action 'start'"),
    ({"action": "on_response", "jitter": 1.5}, "steps[0].input.jitter: expected a number in [0, 1), got 1.5"),
    ({"action": "on_response", "jitter": True}, "steps[0].input.jitter: expected a number in [0, 1), got True"),
    ({"action": "on_response", "error": "NOPE"}, "steps[0].input.error: unknown error code 'NOPE'"),
    ({"action": "describe_cluster", "request": {"version": 2}, "receiver": "client"},
     "steps[0].input.receiver: expected one of broker, controller, got 'client'"),
    ({"action": "describe_cluster", "request": {"endpoint_type": 2}},
     "steps[0].input.request: missing field 'version' for DescribeClusterRequest"),
    ({"action": "register_controller", "request": {"controller_id": 1, "incarnation_id": "x", "epoch": 1}},
     "steps[0].input.request: unknown field 'epoch' for ControllerRegistrationRequest"),
    ({"action": "replay_register_controller", "record": {"controller_id": 1, "incarnation_id": "x",
                                                         "end_points": [{"name": "C", "host": "h"}]}},
     "steps[0].input.record.end_points[0]: missing field 'port' for Endpoint"),
]


@pytest.mark.parametrize("given, message", BAD_INPUTS)
def test_malformed_controller_inputs_give_one_line_errors_with_the_path(given: dict[str, Any], message: str) -> None:
    with pytest.raises(TraceError) as caught:
        trace_from_json(controller_trace({"standard": "controller/new-process"}, {"input": given}))
    assert str(caught.value) == message and "\n" not in message


@pytest.mark.parametrize("explicit, message", [
    ({"manager": {"node_id": 1, "incarnation_id": "a"}, "leader": 1}, "initial.explicit: unknown field 'leader'"),
    ({"brokers": []}, "initial.explicit: missing field 'manager'"),
    ({"manager": {"node_id": 1}}, "initial.explicit.manager: missing field 'incarnation_id' for ManagerState"),
    ({"manager": {"node_id": 1, "incarnation_id": "a"}, "controllers": [{"controller_id": 1}]},
     "initial.explicit.controllers[0]: missing field 'incarnation_id' for ControllerRegistration"),
    ({"manager": {"node_id": 1, "incarnation_id": "a"},
      "controllers": [{"controller_id": 2, "incarnation_id": "x"}, {"controller_id": 2, "incarnation_id": "y"}]},
     "initial.explicit.controllers: an id is registered twice"),
    ({"manager": {"node_id": 1, "incarnation_id": "a"}, "next_offset": -1},
     "initial.explicit.next_offset: must not be negative"),
])
def test_malformed_explicit_states_give_one_line_errors_with_the_path(explicit: dict[str, Any], message: str) -> None:
    with pytest.raises(TraceError) as caught:
        trace_from_json(controller_trace({"explicit": explicit}))
    assert str(caught.value) == message


def test_a_malformed_line_is_reported_with_its_path_by_check(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    bad = controller_trace({"standard": "controller/new-process"}, {"input": {"action": "on_response", "jitter": 2}})
    path.write_text(json.dumps(NEW_INCARNATION) + "\n" + json.dumps(bad) + "\n")
    out = io.StringIO()
    assert check_command([str(path)], False, out) != EXIT_OK
    assert "steps[0].input.jitter: expected a number in [0, 1), got 2" in out.getvalue()


def test_the_schema_lists_exactly_the_controller_actions_and_standard_states() -> None:
    assert_schema_lists(SCHEMA, "controller_input", ACTIONS, STANDARD_STATES)
    assert set(SCHEMA["$defs"]["post"]["properties"]) >= set(controller_replay.OBSERVERS)
    bad = copy.deepcopy(NEW_INCARNATION)
    bad["steps"][0]["input"]["incarnation_id"] = 7
    assert not VALIDATOR.is_valid(bad)


def test_every_standard_state_action_and_post_field_is_documented() -> None:
    text = (Path(__file__).parents[1] / "traces" / "FORMAT.md").read_text().split("## The controller component")[1]
    text = text.split("## Verdicts")[0]
    assert all(f"`{name}`" in text for name in [*STANDARD_STATES, *ACTIONS, *controller_replay.OBSERVERS])


def test_every_bundled_tla_trace_is_conformant_and_a_changed_post_state_is_not() -> None:
    batch = [t for _, t in jsonl.read_jsonl(BUNDLED)]
    assert len(batch) >= 1000 and all(isinstance(t, Trace) for t in batch)
    assert {s.action for t in batch for s in t.steps} == {
        "start", "register_controller", "on_response", "on_metadata_update", "on_deadline", "maybe_send", "restart"}
    out = io.StringIO()
    assert check_command([str(BUNDLED)], False, out) == EXIT_OK, out.getvalue()[-2000:]
    assert out.getvalue().splitlines()[-1] == \
        f"checked {len(batch)} traces from 1 file(s): {len(batch)} conformant, 0 divergent, 0 unreadable"
    trace = next(t for t in batch if any(s.action == "on_metadata_update" for s in t.steps))
    index = next(i for i, s in enumerate(trace.steps) if s.action == "on_metadata_update")
    step = trace.steps[index]
    assert step.post is not None
    flipped = replace(step, post={**step.post, "registered": not step.post["registered"]})
    verdict = replay(replace(trace, steps=trace.steps[:index] + (flipped,)))
    assert verdict.divergence is not None and verdict.divergence.step == index


def test_the_recorders_moves_are_the_agreement_models_successors() -> None:
    """Breadth-first from the spec's Init: each point's (spec action, projected state) pairs equal
    ``agree_controller.successors``' (which ``kraftspec agree controller`` checks against TLC)."""
    from kraftspec.spec import agree_controller as agree
    from kraftspec.spec.agree import load_model
    from kraftspec.spec.state_graph import state_key
    from kraftspec.spec.tlc_config import read_constants
    from kraftspec.traces.recording import controller_tla

    constants = read_constants(load_model("controller").config_path)
    (spec_initial,) = agree.initial_states(constants)
    start = controller_tla.Point(controller_replay.initial(Trace("controller", (), explicit=controller_tla.EXPLICIT)), 0,
                                 spec_initial)
    assert agree.project(start.explored()) == agree.project(spec_initial)
    queue, seen, labels = [start], {state_key(agree.project(spec_initial))}, set()
    while queue:
        point = queue.pop(0)
        ours = [(label, state_key(agree.project(after.explored())), after)
                for label, after, _ in controller_tla.moves(point, constants)]
        theirs = [(s.action, state_key(agree.project(s.state))) for s in agree.successors(point.explored(), constants)]
        assert Counter((label, key) for label, key, _ in ours) == Counter(theirs)
        labels.update(label for label, _, _ in ours)
        for _, key, after in ours:
            if key not in seen:
                seen.add(key)
                queue.append(after)
    assert len(seen) == 537  # TLC's distinct states under ControllerRegistration.cfg
    assert labels == {"Start", "RegisterController", "RegisterControllerFails", "OnResponse", "OnMetadataUpdate",
                      "OnDeadline", "MaybeSend", "Restart"}


def test_generate_refuses_a_simulation_of_the_controller_component(tmp_path: Path) -> None:
    from kraftspec.traces.recording.generate import generate_command

    out = io.StringIO()
    assert generate_command("sim", str(tmp_path / "c.jsonl"), 1, 3, component="controller", stream=out) == 2
    assert "no simulator for component 'controller'" in out.getvalue() and not (tmp_path / "c.jsonl").exists()


def test_the_oracle_walks_a_registration_one_step_at_a_time() -> None:
    """A new process learns the MV, starts and sends its registration (§4.1)."""
    learnt = oracle.check_step(oracle.start("controller/new-process", component="controller"),
                               {"input": {"action": "on_metadata_update", "metadata_version": 30},
                                "output": {"response": {"sends": []}}, "post": {"known_metadata_version": 30}})
    assert learnt.diffs == () and learnt.after is not None
    started = oracle.check_step(learnt.after, {"input": {"action": "start"},
                                               "output": {"response": {"sends": [sent("inc1")]}}})
    assert started.diffs == ()
    wrong = oracle.check_step(learnt.after, {"input": {"action": "start"},
                                             "output": {"response": {"sends": [sent("inc0")]}}})
    assert [str(d) for d in wrong.diffs] == ['response.sends[0].incarnation_id: expected "inc1", observed "inc0"']
