"""Controller traces validated against ``ControllerRegistration.tla`` with TLC, beside the reference (``--with-tlc``).

One TLC run judges every case of this file (``verdicts``): every bundled TLA+ trace (accepted: 1,342 traces,
about 20 s on 2 cores), recordings under the controller mutants and hand-edited traces (rejected where the
reference first diverges), and conformant traces that leave the spec's vocabulary or bounds (outside, never
rejected).
"""

from __future__ import annotations

import contextlib
import copy
from pathlib import Path
from typing import Any, Callable, Optional

import pytest
from test_traces_controller_mutants import SHOWN

from support_traces import assert_outside_not_rejected, assert_rejected_by_both, first_step, read_objs, with_tlc_report

from kraftspec import traces
from kraftspec.mutants import all_mutants
from kraftspec.spec.trace_validation import SpecVerdict, validate
from kraftspec.traces.replay import controller as controller_replay
from kraftspec.traces.recording.controller_tla import EXPLICIT
from kraftspec.traces.format.envelope import Trace, trace_from_json
from kraftspec.traces.replay.verdict import replay

BUNDLED = Path(traces.__file__).parent / "tla" / "controller.jsonl.gz"
TOLD_APART = ("controller-stale-incarnation-accepted",)
"""The controller mutants some bundled trace tells from the reference. The others decide DescribeCluster, the
kafka-cluster tool, the admin client (none modelled by the spec) or the backoff's length (the spec's time is
abstract, and its MaxSends bound stops well before the 120000 ms cap)."""
POST = ("incarnation_id", "channel_started", "known_metadata_version", "registered", "pending_rpcs", "failed_rpcs",
        "resend_deadline_ms", "controllers", "metadata_version", "successful_rpcs", "next_offset", "clock")
"""Every post-state field a controller trace may state."""
REQUEST = {"controller_id": 1, "incarnation_id": "inc1",
           "listeners": [{"name": "CONTROLLER", "host": "localhost", "port": 9093}]}
"""The request node 1's first process sends in the spec."""


@pytest.fixture(scope="module")
def objs() -> list[dict[str, Any]]:
    return read_objs(BUNDLED)


def action(name: str) -> Callable[[dict[str, Any]], bool]:
    return lambda step: step["input"]["action"] == name


def edited(objs: list[dict[str, Any]]) -> list[tuple[dict[str, Any], int]]:
    """Bundled traces made non-conformant at one step, each in another output: post-state, answer, requests sent,
    records written, a counter and the log's registration."""
    registered, at_registered = first_step(objs, action("on_metadata_update"))
    registered["steps"][at_registered]["post"]["registered"] ^= True
    answer, at_answer = first_step(objs, lambda s: action("register_controller")(s) and "active" not in s["input"])
    answer["steps"][at_answer]["output"]["response"]["error"] = "NOT_CONTROLLER"
    sends, at_sends = first_step(objs, lambda s: action("start")(s) and s["output"]["response"]["sends"])
    sends["steps"][at_sends]["output"]["response"]["sends"] = []
    record, at_record = first_step(objs, lambda s: action("register_controller")(s) and s["output"]["records"])
    record["steps"][at_record]["output"]["records"] = []
    failed, at_failed = first_step(objs, lambda s: action("on_response")(s) and s["input"]["error"] != "NONE")
    failed["steps"][at_failed]["post"]["failed_rpcs"] += 1
    log, at_log = first_step(objs, lambda s: action("register_controller")(s) and s["post"]["controllers"].get(
        "1", {}).get("incarnation_id") == "inc1")
    log["steps"][at_log]["post"]["controllers"]["1"]["incarnation_id"] = "inc2"
    return [(registered, at_registered), (answer, at_answer), (sends, at_sends), (record, at_record),
            (failed, at_failed), (log, at_log)]


def sends_of(obj: dict[str, Any]) -> int:
    return sum(len(s["output"]["response"].get("sends", ())) for s in obj["steps"])


def outside(objs: list[dict[str, Any]]) -> list[tuple[dict[str, Any], Optional[int], str]]:
    """Conformant traces the spec cannot judge from a step on: an unmodelled action, a restart or a send past the
    bounds, a request never sent, an answer not in flight, and an initial state other than its Init."""
    def appended(obj: dict[str, Any], *steps: dict[str, Any]) -> tuple[dict[str, Any], int]:
        longer = copy.deepcopy(obj)
        longer["steps"].extend(steps)
        return longer, len(longer["steps"]) - 1

    early = objs[0]
    describe, at_describe = appended(early, {"input": {"action": "describe_cluster", "request": {"version": 1}}})
    restarted = next(o for o in objs if o["steps"][-1]["post"]["incarnation_id"] == "inc2")
    restart, at_restart = appended(restarted, {"input": {"action": "restart", "incarnation_id": "inc3"}})
    full = next(o for o in objs if sends_of(o) == 3 and not o["steps"][-1]["post"]["channel_started"])
    bounded, at_bounded = appended(full, {"input": {"action": "start"}})
    unsent, at_unsent = appended({**early, "steps": []}, {"input": {"action": "register_controller", "request": REQUEST}})
    pending, at_pending = first_step(objs, lambda s: action("start")(s) and s["output"]["response"]["sends"])
    unanswered, at_unanswered = appended(pending, {"input": {"action": "on_response", "error": "NONE"}})
    standard = {"format": "1.0", "component": "controller", "initial": {"standard": "controller/new-process"},
                "steps": [{"input": {"action": "start"}}]}
    return [(describe, at_describe, "'describe_cluster' is not modelled"),
            (restart, at_restart, "the restarts have reached MaxRestarts"),
            (bounded, at_bounded, "the requests sent have reached MaxSends"),
            (unsent, at_unsent, "the request is not in flight in the spec's network"),
            (unanswered, at_unanswered, "no answer of that outcome to the running incarnation's requests is in flight"),
            (standard, None, "initial state: the spec starts from")]


def stuttering() -> Trace:
    """Inputs the bundled traces never give, with every output and post-state field the reference states: updates
    and a self-check that change nothing, a refusal for authorization, a deadline not yet due, the clock moving."""
    inputs = [{"action": "on_metadata_update", "metadata_version": 30}, {"action": "on_metadata_update"},
              {"action": "start"}, {"action": "maybe_send"},
              {"action": "register_controller", "request": REQUEST, "authorized": False},
              {"action": "on_response", "error": "CLUSTER_AUTHORIZATION_FAILED", "now": 10, "jitter": 0.5},
              {"action": "on_deadline", "now": 50}, {"action": "on_deadline", "now": 110},
              {"action": "advance_clock", "now": 200}, {"action": "register_controller", "request": REQUEST},
              {"action": "on_response", "now": 210}, {"action": "on_metadata_update", "registration_changed": True},
              {"action": "maybe_send"}]
    obj = {"format": "1.0", "component": "controller", "id": "stuttering", "initial": {"explicit": EXPLICIT},
           "steps": [{"input": i, "output": {"response": {}, "records": []}, "post": dict.fromkeys(POST)} for i in inputs]}
    return controller_replay.record(trace_from_json(obj), contextlib.nullcontext())


@pytest.fixture(scope="module")
def bundled(objs: list[dict[str, Any]]) -> list[Trace]:
    return [trace_from_json(obj) for obj in objs]


@pytest.fixture(scope="module")
def mutated(bundled: list[Trace]) -> list[tuple[str, Trace, int]]:
    """Every bundled trace recorded under each controller mutant, where the reference flags the recording."""
    found = []
    for name, mutant in sorted(all_mutants().items()):
        if mutant.component == "controller":
            for trace in bundled:
                wrong = controller_replay.record(trace, mutant.applied())
                divergence = None if wrong == trace else replay(wrong).divergence
                if divergence is not None:
                    found.append((name, wrong, divergence.step))
    return found


@pytest.fixture(scope="module")
def shown() -> list[tuple[str, Trace, int]]:
    """Each mutant's showing trace (``test_traces_controller_mutants``) recorded under it, and where the reference
    flags it."""
    found = []
    for name, (obj, step, _, _) in sorted(SHOWN.items()):
        found.append((name, controller_replay.record(trace_from_json(obj), all_mutants()[name].applied()), step))
    return found


@pytest.fixture(scope="module")
def verdicts(objs: list[dict[str, Any]], bundled: list[Trace], mutated: list[tuple[str, Trace, int]],
             shown: list[tuple[str, Trace, int]]) -> dict[str, list[SpecVerdict]]:
    """The spec's verdicts on every case of this file, from one TLC run per batch."""
    cases = {"bundled": bundled,
             "stuttering": [stuttering()],
             "mutated": [trace for _, trace, _ in mutated],
             "shown": [trace for _, trace, _ in shown],
             "edited": [trace_from_json(obj) for obj, _ in edited(objs)],
             "outside": [trace_from_json(obj) for obj, _, _ in outside(objs)]}
    judged = iter(validate([trace for group in cases.values() for trace in group]))
    return {name: [next(judged) for _ in group] for name, group in cases.items()}


def test_every_bundled_tla_trace_is_accepted_by_the_spec(bundled: list[Trace],
                                                         verdicts: dict[str, list[SpecVerdict]]) -> None:
    assert len(verdicts["bundled"]) == len(bundled) == 1342
    assert [v.outcome for v in verdicts["bundled"]] == ["accepted"] * len(bundled), [
        (trace.id, v) for trace, v in zip(bundled, verdicts["bundled"]) if v.outcome != "accepted"][:3]


def test_inputs_the_spec_ignores_or_refuses_are_accepted_with_every_output_stated(
        verdicts: dict[str, list[SpecVerdict]]) -> None:
    trace = stuttering()
    assert len(trace.steps) == 13 and replay(trace).conformant
    assert trace.steps[6].post["resend_deadline_ms"] == 110 and trace.steps[7].response["sends"]  # type: ignore[index]
    assert verdicts["stuttering"] == [SpecVerdict("accepted")]


def test_mutant_recordings_are_rejected_by_the_spec_where_the_reference_flags_them(
        mutated: list[tuple[str, Trace, int]], verdicts: dict[str, list[SpecVerdict]]) -> None:
    assert {name for name, _, _ in mutated} == set(TOLD_APART)
    assert len(mutated) >= 100
    for (name, trace, step), spec in zip(mutated, verdicts["mutated"]):
        assert spec.outcome == "rejected" and spec.step == step, (name, trace.id, step, spec)


def test_the_other_mutants_showing_traces_are_not_judged_by_the_spec(
        shown: list[tuple[str, Trace, int]], verdicts: dict[str, list[SpecVerdict]]) -> None:
    """They start from a standard state with brokers and three controllers, or use DescribeCluster: the spec stops
    before the step the reference flags, so the spec neither accepts nor rejects them."""
    for (name, trace, step), spec in zip(shown, verdicts["shown"]):
        assert replay(trace).divergence.step == step  # type: ignore[union-attr]
        assert spec.outcome == "outside" and (spec.step is None or spec.step <= step), (name, spec)


def test_a_trace_edited_to_be_non_conformant_is_rejected_by_both_at_the_same_step(
        objs: list[dict[str, Any]], verdicts: dict[str, list[SpecVerdict]]) -> None:
    assert_rejected_by_both(edited(objs), verdicts["edited"])


def test_a_trace_outside_the_specs_bounds_is_not_judged_rather_than_rejected(
        objs: list[dict[str, Any]], verdicts: dict[str, list[SpecVerdict]]) -> None:
    assert_outside_not_rejected(outside(objs), verdicts["outside"])


def test_check_with_tlc_judges_controller_traces(objs: list[dict[str, Any]], tmp_path: Path) -> None:
    text = with_tlc_report(tmp_path / "controller.jsonl", objs[:2] + [edited(objs)[0][0], outside(objs)[0][0]], 1)
    assert text.count("spec:      accepted by the spec") == 2 and "no trace-validation module" not in text
    assert "spec:      REJECTED by the spec at step" in text and "outside the spec's bounds at step" in text
    assert text.strip().endswith("checked 4 traces from 1 file(s): 3 conformant, 1 divergent, 0 unreadable; "
                                 "reference and spec: 3 agree, 0 disagree, 1 not judged by the spec "
                                 "(outside its bounds)")
