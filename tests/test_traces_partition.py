"""The partition component of the trace format (rules §2): reading, replay, verdicts, the schema."""

from __future__ import annotations

import copy
import io
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from kraftspec.traces.format import jsonl
from kraftspec.traces.format import parquet
from kraftspec.traces.replay import partition as partition_replay
from kraftspec.traces.replay.check import EXIT_OK, check_command
from kraftspec.traces.format.envelope import Step, Trace, trace_from_json, trace_to_json
from kraftspec.traces.format.partition import ACTIONS, STANDARD_STATES
from kraftspec.traces.replay.verdict import replay, step_diffs
from kraftspec.traces.format.values import TraceError

SCHEMA = json.loads((Path(jsonl.__file__).parents[1] / "trace-v1.schema.json").read_text())
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)
TOPIC = "FOOFOOFOOFOOFOOFOOFOOw"
LEADER = {"broker_id": 1, "topic_id": TOPIC, "partition_id": 0}


def example() -> dict[str, Any]:
    """FORMAT.md's partition example."""
    text = (Path(__file__).parents[1] / "traces" / "FORMAT.md").read_text()
    block = next(b.split("```", 1)[0] for b in text.split("```json\n")[1:] if '"component": "partition"' in b)
    return json.loads(block)


def trace_of(*inputs: dict[str, Any], standard: str = "partition/three-replicas") -> Trace:
    """A trace of ``inputs`` with the outputs and full post-state the reference produces (a recording)."""
    bare = trace_from_json({"format": "1.0", "component": "partition", "initial": {"standard": standard},
                            "steps": [{"input": i} for i in inputs]})
    state, clock, steps = partition_replay.initial(bare), 0, []
    for step in bare.steps:
        state, clock, response, written = partition_replay.apply(state, clock, step)
        steps.append(Step(step.action, step.input, response, written, partition_replay.observe(state, clock)))
    return Trace("partition", tuple(steps), standard=standard, id="recorded")


SCENARIO = (  # fence 3, learn, fetch, append, shrink, deliver the proposal and its answer, elect, reassign
    {"action": "handle_broker_fenced", "broker_id": 3},
    {"action": "update_leader_metadata", **LEADER},
    {"action": "append", **LEADER, "count": 2, "now": 1},
    {"action": "follower_fetch", **LEADER, "follower": 2, "fetch_offset": 1, "broker_epoch": 102},
    {"action": "maybe_shrink_isr", **LEADER, "now": 40_000},
    {"action": "alter_partition", "request": {"broker_id": 1, "broker_epoch": 101, "topics": [{"topic_id": TOPIC, "partitions": [
        {"partition_index": 0, "leader_epoch": 0, "partition_epoch": 1, "new_isr_with_epochs": [[1, 101]]}]}]}},
    {"action": "handle_alter_partition_result", **LEADER, "result": {
        "partition_index": 0, "error_code": "NONE", "leader_id": 1, "leader_epoch": 0, "isr": [1], "partition_epoch": 2}},
    {"action": "handle_broker_unfenced", "broker_id": 3},
    {"action": "elect_leaders", "request": {"election_type": 0, "topic_partitions": None}},
    {"action": "alter_partition_reassignment", "topic_name": "foo", "partition_id": 0, "target_replicas": [3, 2]},
    {"action": "maybe_balance_partition_leaders"},
    {"action": "handle_broker_shutdown", "broker_id": 1, "epoch": 201, "incarnation_id": "again"},
    {"action": "stop_leading", **LEADER},
)


def test_the_format_example_is_valid_and_conformant_and_a_wrong_isr_is_flagged() -> None:
    obj = example()
    VALIDATOR.validate(obj)
    assert replay(trace_from_json(obj)).conformant
    wrong = copy.deepcopy(obj)
    wrong["steps"][2]["post"]["partitions"][f"{TOPIC}:0"]["isr"] = [1, 2, 3]  # as if AlterPartition had been applied
    verdict = replay(trace_from_json(wrong))
    assert verdict.divergence is not None and verdict.divergence.step == 2
    assert verdict.divergence.rule == "kraftspec.reference.alter_partition.alter_partition"
    assert [str(d) for d in verdict.divergence.diffs] == [
        f"post.partitions.{TOPIC}:0.isr[2]: expected (absent), observed 3"]
    assert "registrations: 1: epoch 101 unfenced, 2: epoch 102 unfenced, 3: epoch 103 fenced" in verdict.divergence.state_before


def test_a_recorded_scenario_round_trips_validates_and_replays(tmp_path: Path) -> None:
    trace = trace_of(*SCENARIO)
    assert {s.action for s in trace.steps} >= {"alter_partition", "handle_alter_partition_result", "elect_leaders"}
    assert trace.steps[5].records and trace.steps[4].response["proposal"] is not None  # the shrink was proposed and written
    obj = trace_to_json(trace)
    VALIDATOR.validate(obj)
    assert trace_from_json(json.loads(json.dumps(obj))) == trace
    jsonl.write_jsonl(tmp_path / "p.jsonl", [trace])
    parquet.write_parquet(tmp_path / "p.parquet", [trace])
    assert [t for _, t in jsonl.read_jsonl(tmp_path / "p.jsonl")] == [trace]
    assert [t for _, _, t in parquet.read_parquet(tmp_path / "p.parquet")] == [trace]
    assert replay(trace).conformant


@pytest.mark.parametrize("index", range(len(SCENARIO)))
def test_the_fast_path_and_the_full_diff_agree_on_a_perturbed_step(index: int) -> None:
    """Each step's stated post-state perturbed: both the fast path and the field diff must see it, at that step."""
    trace = trace_of(*SCENARIO)
    state, clock = partition_replay.initial(trace), 0
    for step in trace.steps[:index]:
        state, clock, _, _ = partition_replay.run(state, clock, step)
    step = trace.steps[index]
    after, after_clock, response, written = partition_replay.run(state, clock, step)
    assert partition_replay.post_matches(after, after_clock, step.post)
    assert step_diffs("partition", step, after, after_clock, response, written) == []
    leader = f"1:{TOPIC}:0"
    for field, perturb in (
        ("post.brokers.2.fenced", lambda post: post["brokers"]["2"].update(fenced=1)),  # 1 is not true
        (f"post.partitions.{TOPIC}:0.leader_epoch",
         lambda post: post["partitions"][f"{TOPIC}:0"].update(leader_epoch=post["partitions"][f"{TOPIC}:0"]["leader_epoch"] + 1)),
        (f"post.leaders.{leader}.followers.2.broker_epoch",
         lambda post: post["leaders"][leader]["followers"]["2"].update(broker_epoch=True)),
        (f"post.leaders.{leader}.pending",
         lambda post: post["leaders"][leader].update(pending=None if post["leaders"][leader]["pending"] else {})),
    ):
        post = copy.deepcopy(dict(step.post))
        if field.startswith("post.leaders") and leader not in post["leaders"]:
            continue
        perturb(post)
        assert not partition_replay.post_matches(after, after_clock, post), field
        diffs = step_diffs("partition", Step(step.action, step.input, post=post), after, after_clock, None, ())
        assert diffs and all(d.path.startswith(field) for d in diffs), (field, diffs)
        verdict = replay(Trace("partition", trace.steps[:index] + (Step(step.action, step.input, post=post),),
                               standard=trace.standard))
        assert verdict.divergence is not None and verdict.divergence.step == index
        assert verdict.divergence.rule.endswith(ACTIONS[step.action].rule)


def test_inputs_the_reference_refuses_diverge_at_that_step() -> None:
    refused = trace_of({"action": "append", **LEADER, "count": 1})
    bad = Trace("partition", refused.steps + (Step("follower_fetch", {**LEADER, "follower": 2, "fetch_offset": 5,
                                                                       "broker_epoch": 102}),), standard=refused.standard)
    verdict = replay(bad)
    assert verdict.divergence is not None and verdict.divergence.step == 1
    assert "beyond the log end offset" in str(verdict.divergence.diffs[0])
    no_leader = Trace("partition", (Step("maybe_shrink_isr", {**LEADER, "broker_id": 2}),), standard="partition/three-replicas")
    assert not replay(no_leader).conformant


def test_readers_refuse_what_the_schema_refuses() -> None:
    obj = example()
    for change, message in (
        (lambda o: o["steps"][0]["input"].update(action="heartbeat"), "unknown action 'heartbeat' for component partition"),
        (lambda o: o["steps"][0]["input"].update(broker_id="3"), r"steps\[0\]\.input\.broker_id: expected an integer"),
        (lambda o: o["steps"][2]["input"]["request"]["topics"][0]["partitions"][0].update(isr=[1]), "unknown field 'isr'"),
        (lambda o: o.update(initial={"standard": "broker/running-cluster"}), "unknown initial state"),
        (lambda o: o.update(initial={"explicit": {"metadata_version": 30, "cluster_id": "x"}}), "unknown field 'cluster_id'"),
    ):
        bad = copy.deepcopy(obj)
        change(bad)
        assert not VALIDATOR.is_valid(bad), message
        with pytest.raises(TraceError, match=message):
            trace_from_json(bad)


def test_an_explicit_initial_state_builds_leaders_on_its_registrations() -> None:
    explicit = {"metadata_version": 30, "brokers": [{"broker_id": b, "epoch": b, "incarnation_id": "i", "fenced": b == 2}
                                                    for b in (1, 2)],
                "topics": [{"name": "t", "topic_id": "T"}],
                "partitions": [{"partition_id": 0, "topic_id": "T", "replicas": [2, 1], "isr": [1], "leader": 1}],
                "leaders": [{"broker_id": 1, "topic_id": "T", "partition_id": 0, "log_end_offset": 4}], "next_offset": 7}
    obj = {"format": "1.0", "component": "partition", "initial": {"explicit": explicit}, "steps": [
        {"input": {"action": "handle_broker_unfenced", "broker_id": 2}},
        {"input": {"action": "elect_leaders", "request": {"election_type": 0, "topic_partitions": [["t", [0]]]}},
         "output": {"response": {"error_code": "NONE"}, "records": [{"offset": 7, "type": "PartitionChangeRecord",
                                                                     "partition_id": 0, "topic_id": "T", "leader": 2,
                                                                     "version": 2}]}}]}
    VALIDATOR.validate(obj)
    trace = trace_from_json(obj)
    assert partition_replay.initial(trace).leaders[(1, "T", 0)].log_end_offset == 4
    # broker 2 is not in the ISR: a preferred election cannot choose it (§2.4), so the stated record is wrong
    verdict = replay(trace)
    assert verdict.divergence is not None and verdict.divergence.step == 1
    assert verdict.divergence.rule == "kraftspec.reference.elect_leaders.elect_leaders"
    with pytest.raises(TraceError, match="no partition T:1"):
        trace_from_json({**obj, "initial": {"explicit": {**explicit, "leaders": [{"broker_id": 1, "topic_id": "T",
                                                                                 "partition_id": 1}]}}})


def test_every_standard_state_and_action_is_documented() -> None:
    text = (Path(__file__).parents[1] / "traces" / "FORMAT.md").read_text().split("## The partition component")[1]
    assert all(f"`{name}`" in text for name in STANDARD_STATES)
    assert all(f"`{name}`" in text for name in ACTIONS)


BUNDLED = Path(jsonl.__file__).parents[1] / "tla" / "partition.jsonl.gz"
SPEC_ACTIONS = {"handle_broker_fenced", "handle_broker_unfenced", "handle_broker_shutdown", "become_leader",
                "update_leader_metadata", "update_broker_metadata", "stop_leading", "append", "follower_fetch",
                "maybe_shrink_isr", "alter_partition", "handle_alter_partition_result"}


def test_every_bundled_tla_trace_is_conformant_and_a_changed_post_state_is_not() -> None:
    batch = [t for _, t in jsonl.read_jsonl(BUNDLED)]
    assert len(batch) >= 3000 and all(isinstance(t, Trace) for t in batch)
    assert {s.action for t in batch for s in t.steps} == SPEC_ACTIONS
    out = io.StringIO()
    assert check_command([str(BUNDLED)], False, out) == EXIT_OK, out.getvalue()[-2000:]
    assert out.getvalue().splitlines()[-1] == \
        f"checked {len(batch)} traces from 1 file(s): {len(batch)} conformant, 0 divergent, 0 unreadable"
    trace = next(t for t in batch if any(s.post and "leaders" in s.post and s.post["leaders"] for s in t.steps))
    index = next(i for i, s in enumerate(trace.steps) if s.post and "leaders" in s.post and s.post["leaders"])
    post = copy.deepcopy(dict(trace.steps[index].post))
    state = next(iter(post["leaders"].values()))
    state["high_watermark"] += 1
    wrong = replace(trace, steps=trace.steps[:index] + (replace(trace.steps[index], post=post),))
    verdict = replay(wrong)
    assert verdict.divergence is not None and verdict.divergence.step == index


def test_the_recorders_moves_are_the_agreement_models_successors() -> None:
    """Breadth-first from the spec's Init: each point's (spec action, projected state) pairs equal
    ``agree_partition.successors``' (which ``kraftspec agree partition`` checks against TLC)."""
    from kraftspec.spec import agree_partition as agree
    from kraftspec.spec.agree import load_model
    from kraftspec.spec.tlc_config import read_constants
    from kraftspec.traces.recording import partition_tla

    constants = read_constants(load_model("partition").config_path)
    (spec_initial,) = agree.initial_states(constants)
    start = (partition_replay.initial(Trace("partition", (), explicit=partition_tla.EXPLICIT)),
             partition_tla.Environment(spec_initial.net, spec_initial.logs, spec_initial.known, spec_initial.appends,
                                       spec_initial.committed))
    assert agree.project(partition_tla.explored(start)) == agree.project(spec_initial)
    queue, seen, labels = [start], set(), set()
    while queue and len(seen) < 400:
        point = queue.pop(0)
        ours = sorted((label, repr(sorted(agree.project(partition_tla.explored(after)).items())))
                      for label, after, _ in partition_tla.moves(point, constants))
        theirs = sorted((s.action, repr(sorted(agree.project(s.state).items())))
                        for s in agree.successors(partition_tla.explored(point), constants))
        assert ours == theirs
        labels.update(label for label, _ in ours)
        for label, after, _ in partition_tla.moves(point, constants):
            key = repr(sorted(agree.project(partition_tla.explored(after)).items()))
            if key not in seen:
                seen.add(key)
                queue.append(after)
    assert labels == {"HandleBrokerFenced", "HandleBrokerUnfenced", "HandleBrokerShutdown", "Learn", "AppendRecords",
                      "FollowerFetch", "MaybeShrinkIsr", "AlterPartition"}


def test_generate_refuses_a_simulation_of_the_partition_component(tmp_path: Path) -> None:
    from kraftspec.traces.recording.generate import generate_command

    out = io.StringIO()
    assert generate_command("sim", str(tmp_path / "p.jsonl"), 1, 3, component="partition", stream=out) == 2
    assert "no simulator for component 'partition'" in out.getvalue() and not (tmp_path / "p.jsonl").exists()
