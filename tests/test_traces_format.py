"""Trace format v1: JSON Lines and Parquet round trips, versioning, the published JSON Schema."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from hypothesis import given, settings, strategies as st

from kraftspec.models import broker_strategies
from kraftspec.reference.partition import TopicInfo
from kraftspec.reference.records import (
    BrokerRegistrationChangeRecord,
    FeatureRange,
    FenceBrokerRecord,
    PartitionChangeRecord,
    RegisterBrokerRecord,
    UnregisterBrokerRecord,
)
from kraftspec.traces.format import jsonl
from kraftspec.traces.format import parquet
from kraftspec.traces.format.envelope import Step, Trace, trace_from_json, trace_to_json
from kraftspec.traces.replay.verdict import replay
from kraftspec.traces.recording.broker_simulate import generate_sim
from kraftspec.traces.format.values import TraceError

SCHEMA = json.loads((Path(jsonl.__file__).parents[1] / "trace-v1.schema.json").read_text())
small = st.integers(-1, 1000)
json_leaf = st.one_of(st.none(), st.booleans(), st.integers(-2**40, 2**40), st.text(max_size=8))
json_values = st.recursive(json_leaf, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                              st.dictionaries(st.text(max_size=5), inner, max_size=3)),
                           max_leaves=8)
json_objects = st.dictionaries(st.text(max_size=6), json_values, max_size=4)
int_tuples = st.lists(st.integers(0, 5), max_size=3).map(tuple)
records = st.one_of(
    st.builds(FenceBrokerRecord, id=small, epoch=small),
    st.builds(UnregisterBrokerRecord, broker_id=small, broker_epoch=small),
    st.builds(BrokerRegistrationChangeRecord, broker_id=small, broker_epoch=small, fenced=st.sampled_from([-1, 0, 1]),
              in_controlled_shutdown=st.sampled_from([0, 1]), cordoned_log_dirs=st.none() | st.just(("a",)),
              version=st.integers(0, 3)),
    st.builds(RegisterBrokerRecord, broker_id=small, incarnation_id=st.text(max_size=6), broker_epoch=small,
              features=st.lists(st.builds(FeatureRange, name=st.text(max_size=4), min_supported=small, max_supported=small), max_size=2).map(tuple),
              rack=st.none() | st.text(max_size=3), fenced=st.booleans()),
    st.builds(PartitionChangeRecord, partition_id=small, topic_id=st.text(max_size=6), isr=st.none() | int_tuples,
              leader=st.integers(-2, 5), last_known_elr=st.none() | int_tuples),
)
inputs = st.one_of(
    st.tuples(st.just("register_broker"), st.fixed_dictionaries(
        {"request": broker_strategies.registration_requests()}, optional={"now": small, "authorized": st.booleans()})),
    st.tuples(st.just("heartbeat"), st.fixed_dictionaries(
        {"request": broker_strategies.heartbeat_requests()}, optional={"now": small})),
    st.tuples(st.just("fence_stale_broker"), st.fixed_dictionaries(
        {}, optional={"now": small, "which": st.none() | st.tuples(small, small)})),
    st.tuples(st.just("unregister_broker"), st.fixed_dictionaries({"broker_id": small})),
    st.tuples(st.just("create_topic"), st.fixed_dictionaries(
        {"topic": st.builds(TopicInfo, name=st.text(max_size=5), topic_id=st.text(max_size=5)),
         "assignments": st.lists(int_tuples, max_size=3).map(tuple)})),
    st.tuples(st.sampled_from(["advance_clock", "failover"]), st.fixed_dictionaries({"now": small})),
    st.tuples(st.just("log_advanced"), st.fixed_dictionaries({"next_offset": small})),
)
steps = st.builds(lambda given, response, written, post: Step(given[0], given[1], response, written, post),
                  inputs, st.none() | json_objects,
                  st.none() | st.lists(st.tuples(small, records), max_size=3).map(tuple), st.none() | json_objects)
traces = st.builds(Trace, component=st.just("broker"), steps=st.lists(steps, max_size=4).map(tuple),
                   standard=st.sampled_from(["broker/running-cluster", "broker/leaderless"]),
                   id=st.none() | st.text(max_size=8), meta=json_objects)


@given(traces)
def test_jsonl_round_trip(trace: Trace) -> None:
    assert jsonl.parse_line(jsonl.dumps(trace).encode()) == trace


@settings(max_examples=25)
@given(st.lists(traces, max_size=5))
def test_parquet_round_trip(tmp_path_factory: pytest.TempPathFactory, batch: list[Trace]) -> None:
    path = tmp_path_factory.mktemp("pq") / "traces.parquet"
    assert parquet.write_parquet(path, batch, batch_size=2) == len(batch)
    read = list(parquet.read_parquet(path))
    assert [item for _, _, item in read] == batch
    assert [row for row, _, _ in read] == list(range(len(batch)))


def test_simulated_traces_round_trip_through_both_codecs_and_the_schema(tmp_path: Path) -> None:
    batch = list(generate_sim(seed=11, traces=20, steps=30))
    validator = jsonschema.Draft202012Validator(SCHEMA)
    for trace in batch:
        validator.validate(trace_to_json(trace))
    jsonl.write_jsonl(tmp_path / "t.jsonl.gz", batch)
    parquet.write_parquet(tmp_path / "t.parquet", batch, batch_size=7)
    assert [t for _, t in jsonl.read_jsonl(tmp_path / "t.jsonl.gz")] == batch
    assert [t for _, _, t in parquet.read_parquet(tmp_path / "t.parquet")] == batch


def _minimal(**changes: object) -> dict[str, object]:
    return {"format": "1.0", "component": "broker", "initial": {"standard": "broker/running-cluster"},
            "steps": [{"input": {"action": "advance_clock", "now": 3}}], **changes}


def test_a_newer_minor_version_is_read_and_its_unknown_fields_ignored() -> None:
    trace = trace_from_json(_minimal(format="1.7", provenance={"tool": "x"}))
    assert trace.format == "1.7" and trace.steps[0].action == "advance_clock"


@pytest.mark.parametrize("version", ["2.0", "0.9", 1, "one"])
def test_another_major_version_is_refused_with_a_clear_message(version: object) -> None:
    with pytest.raises(TraceError, match="format"):
        trace_from_json(_minimal(format=version))
    if version == "2.0":
        with pytest.raises(TraceError, match="major version 1"):
            trace_from_json(_minimal(format=version))


def test_the_schema_accepts_the_documented_example_and_rejects_a_wrong_type() -> None:
    example = json.loads((Path(__file__).parents[1] / "traces" / "FORMAT.md").read_text()
                         .split("```json\n", 1)[1].split("```", 1)[0])
    jsonschema.Draft202012Validator(SCHEMA).validate(example)
    assert replay(trace_from_json(example)).conformant
    bad = json.loads(json.dumps(example))
    bad["steps"][0]["input"]["request"]["broker_epoch"] = "0"
    assert not jsonschema.Draft202012Validator(SCHEMA).is_valid(bad)
    with pytest.raises(TraceError, match=r"steps\[0\]\.input\.request\.broker_epoch: expected an integer"):
        trace_from_json(bad)


def test_an_explicit_initial_state_replays_its_records() -> None:
    explicit = {"cluster_id": broker_strategies.CLUSTER_ID, "metadata_version": 21, "session_timeout": 10,
                "records": [{"offset": 0, "type": "RegisterBrokerRecord", "broker_id": 1, "incarnation_id": "a",
                             "broker_epoch": 0, "fenced": False}], "activated_at": 5}
    stale = {"input": {"action": "fence_stale_broker", "now": 16}, "output": {
        "response": {"expired_session": [1, 0], "fenced": True},
        "records": [{"offset": 1, "type": "BrokerRegistrationChangeRecord", "broker_id": 1, "broker_epoch": 0,
                     "fenced": 1}]}, "post": {"brokers": {"1": {"epoch": 0, "incarnation_id": "a", "fenced": True,
                                                               "in_controlled_shutdown": False}}}}
    obj = {"format": "1.0", "component": "broker", "initial": {"explicit": explicit}, "steps": [stale]}
    jsonschema.Draft202012Validator(SCHEMA).validate(obj)
    assert replay(trace_from_json(obj)).conformant
    early = json.loads(json.dumps(obj))
    early["steps"][0]["input"]["now"] = 15  # contact 5 + timeout 10 is not yet past the timeout (§1.2)
    verdict = replay(trace_from_json(early))
    assert verdict.divergence is not None and verdict.divergence.rule.endswith(".fence_stale_broker")
    with pytest.raises(TraceError, match="does not replay"):
        trace_from_json({**obj, "initial": {"explicit": {**explicit, "records": [
            {"offset": 0, "type": "UnregisterBrokerRecord", "broker_id": 1, "broker_epoch": 0}]}}})


def test_the_schema_lists_exactly_the_actions_and_record_types_the_reader_accepts() -> None:
    from kraftspec.traces.format import partition as partition_trace
    from kraftspec.traces.format.broker import ACTIONS as BROKER_ACTIONS, RECORD_TYPES, STANDARD_STATES as BROKER_STATES

    ACTIONS = {**BROKER_ACTIONS, **partition_trace.ACTIONS}  # advance_clock: the same in both components
    STANDARD_STATES = {**BROKER_STATES, **partition_trace.STANDARD_STATES}
    assert {i["properties"]["action"]["const"] for i in SCHEMA["$defs"]["input"]["oneOf"]} == set(ACTIONS)
    assert {r["properties"]["type"]["const"] for r in SCHEMA["$defs"]["record"]["oneOf"]} == set(RECORD_TYPES)
    assert set(SCHEMA["properties"]["initial"]["oneOf"][0]["properties"]["standard"]["enum"]) == set(STANDARD_STATES)
    for spec in SCHEMA["$defs"]["input"]["oneOf"]:
        action = ACTIONS[spec["properties"]["action"]["const"]]
        assert set(spec["properties"]) - {"action"} == set(action.args)
        assert set(spec["required"]) - {"action"} == {name for name, (_, required) in action.args.items() if required}


def _decoded(decode: object, row: dict[str, object]) -> str:
    try:
        return repr(decode(row))  # type: ignore[operator]  # repr: True and 1, 1 and 1.0 differ
    except TraceError as exc:
        return f"error: {exc}"


@settings(max_examples=50)
@given(st.lists(traces, min_size=1, max_size=3), st.data())
def test_parquet_rows_decode_alike_from_the_memos_and_the_checked_decoder(batch: list[Trace],
                                                                         data: st.DataObject) -> None:
    """``from_row`` decodes repeated texts from memos; whatever the row, it gives the checked decoder's result."""
    for trace in batch:
        row = parquet.to_row(trace)
        first = _decoded(parquet.from_row, row)
        assert first == _decoded(parquet._from_row_checked, row) and parquet.from_row(row) == trace
        assert _decoded(parquet.from_row, row) == first  # now from the memos
        if not row["steps"]:
            continue
        step = data.draw(st.sampled_from(row["steps"]))
        part = data.draw(st.sampled_from(["input", "response", "post", "now", "fields"]))
        bad = data.draw(st.sampled_from([" {} ", "{", "[]", "0", "null", '{"offset":1}', '{"type":"X"}', '{"fenced":1}',
                                         '{"now":true}', '{"action":"heartbeat"}', True, 1.0, None]))
        if part == "fields":
            if not step["records"]:
                continue
            step["records"][0]["fields"] = bad if not isinstance(bad, (bool, float)) else str(bad)
        elif part == "now":
            step["now"] = bad if not isinstance(bad, str) else None
        else:
            step[part] = bad if not isinstance(bad, (bool, float)) else json.dumps(bad)
        assert _decoded(parquet.from_row, row) == _decoded(parquet._from_row_checked, row)
