"""Shared checks for the trace components' tests."""

from __future__ import annotations

import copy
import gzip
import io
import json
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from kraftspec.spec.trace_validation import SpecVerdict
from kraftspec.traces.format import jsonl
from kraftspec.traces.format import parquet
from kraftspec.traces.format.envelope import trace_from_json, trace_to_json
from kraftspec.traces.replay.verdict import replay
from kraftspec.traces.replay.tlc_validate import check_with_tlc


def assert_round_trips(obj: dict[str, Any], folder: Path) -> None:
    """A trace (as JSON) reads back equal from its JSON form, a JSON Lines file and a Parquet file."""
    trace = trace_from_json(obj)
    assert trace_from_json(trace_to_json(trace)) == trace
    jsonl.write_jsonl(str(folder / "t.jsonl"), [trace])
    parquet.write_parquet(str(folder / "t.parquet"), [trace])
    assert [t for _, t in jsonl.read_jsonl(str(folder / "t.jsonl"))] == [trace]
    assert [t for _, _, t in parquet.read_parquet(str(folder / "t.parquet"))] == [trace]


def assert_schema_lists(schema: dict[str, Any], inputs: str, actions: Mapping[str, Any], standard_states: Iterable[str]) -> None:
    """The schema's ``$defs[inputs]`` lists exactly a component's actions (``advance_clock`` is shared), each
    with its arguments and required ones, and one standard-state enum lists exactly its standard states."""
    shared = {i["properties"]["action"]["const"] for i in schema["$defs"]["input"]["oneOf"]}
    own = {i["properties"]["action"]["const"]: i for i in schema["$defs"][inputs]["oneOf"]}
    assert set(own) | (shared & {"advance_clock"}) == set(actions) and "advance_clock" not in own
    for action, spec in own.items():
        args = actions[action].args
        assert set(spec["properties"]) - {"action"} == set(args)
        assert set(spec["required"]) - {"action"} == {name for name, (_, required) in args.items() if required}
    standard = [o["properties"]["standard"]["enum"] for o in schema["properties"]["initial"]["oneOf"]
                if "standard" in o["required"]]
    assert any(set(names) == set(standard_states) for names in standard)


def read_objs(path: Path) -> list[dict[str, Any]]:
    """Every trace of a bundled ``.jsonl.gz`` file as its JSON object."""
    with gzip.open(path, "rt") as lines:
        return [json.loads(line) for line in lines]


def first_step(objs: list[dict[str, Any]], found: Callable[[dict[str, Any]], bool]) -> tuple[dict[str, Any], int]:
    """A copy of the first trace with a step for which ``found`` holds, cut after it, and that step's index."""
    for obj in objs:
        for index, step in enumerate(obj["steps"]):
            if found(step):
                cut = copy.deepcopy(obj)
                cut["steps"] = cut["steps"][:index + 1]
                return cut, index
    raise AssertionError("no bundled step matches")


def assert_rejected_by_both(cases: list[tuple[dict[str, Any], int]], verdicts: list[SpecVerdict]) -> None:
    """Each edited trace diverges in the reference, and is rejected by the spec, at the step the case names."""
    for (obj, step), spec in zip(cases, verdicts, strict=True):
        divergence = replay(trace_from_json(obj)).divergence
        assert divergence is not None and divergence.step == step, obj["id"]
        assert spec.outcome == "rejected" and spec.step == step, (obj["id"], spec)


def assert_outside_not_rejected(cases: list[tuple[dict[str, Any], int, str]], verdicts: list[SpecVerdict]) -> None:
    """Each conformant trace leaves the spec's bounds at the case's step, for the case's reason: not judged."""
    for (obj, step, reason), spec in zip(cases, verdicts, strict=True):
        assert replay(trace_from_json(obj)).conformant, obj.get("id")
        assert spec.outcome == "outside" and spec.step == step and reason in spec.reason, (obj.get("id"), spec)


def with_tlc_report(path: Path, objs: list[dict[str, Any]], exit_code: int) -> str:
    """``kraftspec check --with-tlc`` on a JSON Lines file of ``objs`` written to ``path``: its text report,
    after checking its exit code."""
    path.write_text("".join(json.dumps(obj) + "\n" for obj in objs))
    out = io.StringIO()
    assert check_with_tlc([str(path)], as_json=False, out=out) == exit_code
    return out.getvalue()
