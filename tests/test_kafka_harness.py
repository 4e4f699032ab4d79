"""The Kafka harness's own plumbing: build, protocol, refusals and harness errors (the `echo` component)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftspec.harness import jvm
from kraftspec.harness.adapter import hooks
from kraftspec.harness.jvm import DEFAULT_VERSION, HarnessError, HarnessUnavailable, kafka_line, shared, source_folders
from kraftspec.harness.kafka_records import snake_case, to_trace


def test_the_harness_runs_the_asked_kafka_version() -> None:
    process = shared(DEFAULT_VERSION)
    assert process.kafka_version == DEFAULT_VERSION
    assert "echo" in process.components


def test_a_step_answers_output_and_post_and_kafka_exceptions_are_refusals() -> None:
    process = shared(DEFAULT_VERSION)
    process.open("echo", {})
    assert process.step({"action": "x", "n": 1}) == {"output": {"response": {"action": "x", "n": 1}},
                                                     "post": {"steps": 1}}
    refused = process.step({"action": "fail"})
    assert refused == {"refused": {"exception": "java.lang.IllegalStateException", "message": "asked to fail"}}
    steps = process.run("echo", {}, [{"action": "a"}, {"action": "fail"}, {"action": "never"}])
    assert [sorted(s) for s in steps] == [["output", "post"], ["refused"]]  # stops after the refusal


def test_an_input_the_harness_cannot_express_is_an_error_not_a_verdict() -> None:
    process = shared(DEFAULT_VERSION)
    process.open("echo", {})
    with pytest.raises(HarnessError, match="not expressible"):
        process.step({"action": "unsupported"})
    with pytest.raises(HarnessError, match="no component 'nope'"):
        process.open("nope", {})


def test_versions_map_to_source_lines_and_old_ones_are_refused() -> None:
    assert kafka_line("4.3.1") == "4.x" and kafka_line("3.9.1") == "3.9"
    with pytest.raises(HarnessUnavailable):
        kafka_line("3.8.0")
    with pytest.raises(HarnessUnavailable):
        kafka_line("latest")


def test_each_release_builds_the_sessions_its_kafka_apis_serve() -> None:
    """Partition from 4.0, its leader side from 4.2, raft on 4.3; every folder a version names exists."""
    built = {v: source_folders(v) for v in ("3.9.1", "4.0.1", "4.1.1", "4.2.0", "4.3.1", "4.4.0")}
    assert [v for v in built if built[v]["harness.partition"] != "none"] == ["4.0.1", "4.1.1", "4.2.0", "4.3.1", "4.4.0"]
    assert [v for v in built if built[v]["harness.leaders"] == "partition-leaders"] == ["4.2.0", "4.3.1", "4.4.0"]
    assert [v for v in built if built[v]["harness.raft"] != "none"] == ["4.3.1"]
    assert built["4.0.1"]["shim.requests"] != built["4.1.1"]["shim.requests"]
    assert built["4.3.1"]["shim.log-context"] != built["4.4.0"]["shim.log-context"]
    source = Path(jvm.__file__).parent / "src"
    for folders in built.values():
        for name, folder in folders.items():
            path = source / (f"line-{folder}" if name == "kafka.line" else f"shim/{folder}" if name.startswith("shim.")
                             else folder) / "java"
            assert folder == "none" or path.is_dir(), path


def test_kafka_record_json_maps_onto_the_trace_names() -> None:
    assert snake_case("inControlledShutdown") == "in_controlled_shutdown"
    assert snake_case("minSupportedVersion") == "min_supported"
    record = {"offset": 4, "type": "RegisterControllerRecord", "version": 0,
              "data": {"controllerId": 1, "endPoints": [{"name": "CONTROLLER", "securityProtocol": 0}],
                       "features": [{"name": "kraft.version", "minSupportedVersion": 0, "maxSupportedVersion": 1}]}}
    assert to_trace(record) == {"offset": 4, "type": "RegisterControllerRecord", "version": 0, "controller_id": 1,
                                "end_points": [{"name": "CONTROLLER", "security_protocol": 0}],
                                "features": [{"name": "kraft.version", "min_supported": 0, "max_supported": 1}]}


def test_a_component_without_hooks_is_named() -> None:
    with pytest.raises(KeyError, match="does not cover"):
        hooks("echo")


def test_a_harness_that_changes_what_it_feeds_kafka_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """A planted change in a component's ``kafka_input`` (a heartbeat's epoch bumped on its way to Kafka) cannot pass
    as the trace's own input: conform reports the harness, never an agreement."""
    import dataclasses
    import itertools
    from pathlib import Path

    from kraftspec import traces as traces_package
    from kraftspec.harness import conform
    from kraftspec.traces.format.jsonl import read_jsonl

    honest = hooks("broker")

    def planted(input):  # type: ignore[no-untyped-def]
        sent = honest.kafka_input(input)
        if sent["action"] == "heartbeat":
            sent["request"] = {**sent["request"], "broker_epoch": sent["request"]["broker_epoch"] + 1}
        return sent

    monkeypatch.setattr(conform, "hooks", lambda component: dataclasses.replace(honest, kafka_input=planted))
    path = Path(traces_package.__file__).parent / "tla" / "broker.jsonl.gz"
    traces = [t for _, t in itertools.islice(read_jsonl(path), 200)
              if any(step.action == "heartbeat" for step in t.steps)][:5]
    assert traces
    results = [conform.conform_trace(trace, shared(DEFAULT_VERSION)) for trace in traces]
    assert all(r.inexpressible is not None and "changed the input" in r.inexpressible for r in results), results
