"""Trace validation against the TLA+ spec with TLC, beside the reference (``kraftspec check --with-tlc``)."""

from __future__ import annotations

import copy
import gzip
import io
import json
from pathlib import Path
from typing import Any

import pytest

from kraftspec import traces
from kraftspec.spec.trace_validation import SpecVerdict, validate
from kraftspec.traces.format.envelope import trace_from_json
from kraftspec.traces.replay.verdict import replay
from kraftspec.traces.replay import tlc_validate
from kraftspec.traces.replay.tlc_validate import check_with_tlc

BUNDLED = Path(traces.__file__).parent / "tla" / "broker.jsonl.gz"


def bundled() -> list[dict[str, Any]]:
    with gzip.open(BUNDLED, "rt") as lines:
        return [json.loads(line) for line in lines]


def first_step(objs: list[dict[str, Any]], action: str, want: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """A copy of the first bundled trace with a step of ``action`` whose request has ``want``, and that step's index."""
    for obj in objs:
        for index, step in enumerate(obj["steps"]):
            request = step["input"].get("request", {})
            if step["input"]["action"] == action and all(request.get(k) == v for k, v in want.items()):
                return copy.deepcopy(obj), index
    raise AssertionError(f"no bundled {action} step with {want}")


def test_every_bundled_tla_trace_is_accepted_by_the_reference_and_the_spec() -> None:
    objs = bundled()
    decoded = [trace_from_json(obj) for obj in objs]
    verdicts = validate(decoded)
    assert len(verdicts) == len(objs) == 3004
    assert [v.outcome for v in verdicts] == ["accepted"] * len(objs), [
        (t.id, v) for t, v in zip(decoded, verdicts) if v.outcome != "accepted"][:3]
    assert all(replay(t).conformant for t in decoded)


def edited_traces() -> list[tuple[dict[str, Any], int]]:
    """Bundled traces made non-conformant at one step: a wrong post-state, a wrong reply, a missing record."""
    objs = bundled()
    wrong_post, at_post = first_step(objs, "heartbeat", {"want_shut_down": True})
    wrong_post["steps"][at_post]["post"]["next_offset"] += 1
    wrong_reply, at_reply = first_step(objs, "heartbeat", {"want_fence": False, "want_shut_down": False})
    response = wrong_reply["steps"][at_reply]["output"]["response"]
    response["is_fenced"] = not response["is_fenced"]
    dropped, at_drop = first_step(objs, "register_broker", {"incarnation_id": "2"})
    dropped["steps"][at_drop]["output"]["records"].pop()
    dropped["steps"][at_drop]["post"] = {}
    return [(wrong_post, at_post), (wrong_reply, at_reply), (dropped, at_drop)]


def test_a_trace_edited_to_be_non_conformant_is_rejected_by_both_at_the_same_step() -> None:
    cases = edited_traces()
    decoded = [trace_from_json(obj) for obj, _ in cases]
    for trace, (_, step), spec in zip(decoded, cases, validate(decoded)):
        reference = replay(trace)
        assert reference.divergence is not None and reference.divergence.step == step, trace.id
        assert spec.outcome == "rejected" and spec.step == step, (trace.id, spec)


def out_of_bounds() -> list[tuple[dict[str, Any], int, str]]:
    """Conformant traces that leave the spec's bounds: an unmodelled broker id, time beyond MaxTime."""
    objs = bundled()
    third = copy.deepcopy(objs[0])
    third["steps"].append({"input": {"action": "unregister_broker", "broker_id": 3}})
    late = copy.deepcopy(objs[0])
    late["steps"].append({"input": {"action": "advance_clock", "now": 50}})
    standard = {"format": "1.0", "component": "broker", "initial": {"standard": "broker/running-cluster"},
                "steps": []}
    return [(third, len(third["steps"]) - 1, "broker id 3 is not in Brokers"),
            (late, len(late["steps"]) - 1, "beyond MaxTime"),
            (standard, None, "initial state")]


def test_a_trace_outside_the_specs_bounds_is_not_judged_rather_than_rejected() -> None:
    cases = out_of_bounds()
    decoded = [trace_from_json(obj) for obj, _, _ in cases]
    for trace, (_, step, reason), spec in zip(decoded, cases, validate(decoded)):
        assert replay(trace).conformant
        assert spec.outcome == "outside" and spec.step == step and reason in spec.reason, spec
        assert "outside the spec's bounds" in spec.line()


def test_check_with_tlc_prints_both_verdicts_side_by_side(tmp_path: Path) -> None:
    path = tmp_path / "mixed.jsonl"
    objs = bundled()[:3] + [obj for obj, _ in edited_traces()[:1]] + [obj for obj, _, _ in out_of_bounds()[:1]]
    path.write_text("".join(json.dumps(obj) + "\n" for obj in objs) + "{truncated\n")
    out = io.StringIO()
    assert check_with_tlc([str(path)], as_json=False, out=out) == 2
    text = out.getvalue()
    assert text.count("spec:      accepted by the spec") == 3
    assert "spec:      REJECTED by the spec at step" in text and "reference: DIVERGES at step" in text
    assert "outside the spec's bounds at step" in text
    assert f"{path}:6: error:" in text
    assert text.strip().endswith("checked 6 traces from 1 file(s): 4 conformant, 1 divergent, 1 unreadable; "
                                 "reference and spec: 4 agree, 0 disagree, 1 not judged by the spec "
                                 "(outside its bounds)")
    report = io.StringIO()
    check_with_tlc([str(path)], as_json=True, out=report)
    parsed = json.loads(report.getvalue())
    assert (parsed["read"], parsed["agree"], parsed["disagree"], parsed["not_judged"]) == (6, 4, 0, 1)


def test_a_disagreement_is_a_finding(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A reference that diverges where the spec accepts: the command reports DISAGREE and exits 1."""
    path = tmp_path / "one.jsonl"
    path.write_text(json.dumps(bundled()[0]) + "\n")
    monkeypatch.setattr(tlc_validate, "validate", lambda traces, **_: [SpecVerdict("rejected", 0, "planted")])
    out = io.StringIO()
    assert check_with_tlc([str(path)], as_json=False, out=out) == 1
    assert "DISAGREE" in out.getvalue() and "1 disagree" in out.getvalue()


def test_tlc_unavailable_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    from kraftspec.spec import trace_validation
    from kraftspec.spec.tlc import TlcNotAvailable

    def unavailable(*args: Any, **kwargs: Any) -> None:
        raise TlcNotAvailable("TLC is not available: no `java` executable on PATH")

    monkeypatch.setattr(trace_validation, "run_tlc", unavailable)
    path = tmp_path / "one.jsonl"
    path.write_text(json.dumps(bundled()[0]) + "\n")
    assert check_with_tlc([str(path)], as_json=False, out=io.StringIO()) == 2
    assert f"{path}: error: TLC is not available" in capsys.readouterr().err
