"""Partition traces validated against ``PartitionLeadership.tla`` with TLC, beside the reference (``--with-tlc``).

One TLC run judges every case of this file (``verdicts``): a sample of the bundled TLA+ traces (accepted),
recordings under the partition mutants and hand-edited traces (rejected where the reference first
diverges), and conformant traces that leave the spec's vocabulary or bounds (outside, never rejected).
"""

from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path
from typing import Any, Optional

import pytest

from support_traces import assert_outside_not_rejected, assert_rejected_by_both, first_step, read_objs, with_tlc_report

from kraftspec import traces
from kraftspec.mutants import all_mutants
from kraftspec.spec.trace_validation import SpecVerdict, validate
from kraftspec.traces.replay import partition as partition_replay
from kraftspec.traces.format.envelope import Trace, trace_from_json
from kraftspec.traces.replay.verdict import replay

BUNDLED = Path(traces.__file__).parent / "tla" / "partition.jsonl.gz"
BROKER = Path(traces.__file__).parent / "tla" / "broker.jsonl.gz"
STRIDE = 25
"""Every 25th bundled trace (121 of 3,003): one short TLC run on 2 cores; `kraftspec check --with-tlc` takes them all."""
TOLD_APART = ("partition-accept-stale-partition-epoch", "partition-empty-isr-without-elr",
              "partition-hw-over-all-replicas", "partition-leader-epoch-bump-on-shrink")
"""The partition mutants some sampled bundled trace tells from the reference (the others differ only beyond the
spec's bounds: a fenced leader needs unclean election, an old broker epoch a second restart)."""
TOPIC = "spec-topic"


@pytest.fixture(scope="module")
def objs() -> list[dict[str, Any]]:
    return read_objs(BUNDLED)


def edited(objs: list[dict[str, Any]]) -> list[tuple[dict[str, Any], int]]:
    """Bundled traces made non-conformant at one step, each in another output: post-state, records, response, proposal."""
    hw, at_hw = first_step(objs, lambda s: s["input"]["action"] == "append" and "leaders" in s.get("post", {}))
    for leader in hw["steps"][at_hw]["post"]["leaders"].values():
        leader["high_watermark"] += 1
    record, at_record = first_step(objs, lambda s: s["input"]["action"] == "handle_broker_fenced" and len(s["output"]["records"]) == 1)
    record["steps"][at_record]["output"]["records"][0]["isr"] = [1, 2, 3]
    answer, at_answer = first_step(objs, lambda s: s["input"]["action"] == "alter_partition"
                              and s["output"]["response"]["topics"][0]["partitions"][0]["error_code"] == "NONE")
    answer["steps"][at_answer]["output"]["response"]["topics"][0]["partitions"][0] = {
        "partition_index": 0, "error_code": "INELIGIBLE_REPLICA", "leader_id": 0, "leader_epoch": 0, "isr": [],
        "leader_recovery_state": 0, "partition_epoch": 0}
    proposal, at_proposal = first_step(objs, lambda s: s["input"]["action"] == "maybe_shrink_isr"
                                  and s["output"]["response"]["proposal"] is not None)
    proposal["steps"][at_proposal]["output"]["response"]["proposal"] = None
    proposal["steps"][at_proposal].pop("post", None)
    return [(hw, at_hw), (record, at_record), (answer, at_answer), (proposal, at_proposal)]


def outside(objs: list[dict[str, Any]]) -> list[tuple[dict[str, Any], Optional[int], str]]:
    """Conformant traces the spec cannot judge from a step on: an unmodelled action, ids outside its bounds, the
    partition epoch at MaxEpoch, an input its followers never make, and an initial state other than its Init."""
    def appended(obj: dict[str, Any], step: dict[str, Any]) -> tuple[dict[str, Any], int]:
        longer = copy.deepcopy(obj)
        longer["steps"].append(step)
        return longer, len(longer["steps"]) - 1

    early = objs[0]
    balance, at_balance = appended(early, {"input": {"action": "maybe_balance_partition_leaders"}})
    fourth, at_fourth = appended(early, {"input": {"action": "stop_leading", "broker_id": 4, "topic_id": TOPIC,
                                                  "partition_id": 0}})
    other, at_other = appended(early, {"input": {"action": "stop_leading", "broker_id": 3, "topic_id": "other-topic",
                                                 "partition_id": 0}})
    at_max = next(o for o in objs if o["steps"][-1].get("post", {}).get("partitions", {}).get(
        f"{TOPIC}:0", {}).get("partition_epoch") == 2)
    bounded, at_bounded = appended(at_max, {"input": {"action": "stop_leading", "broker_id": 3, "topic_id": TOPIC,
                                                      "partition_id": 0}})
    fetch, at_fetch = first_step(objs, lambda s: s["input"]["action"] == "follower_fetch" and s["input"]["fetch_offset"] > 0)
    fetch["steps"][at_fetch] = {"input": {**fetch["steps"][at_fetch]["input"],
                                          "fetch_offset": fetch["steps"][at_fetch]["input"]["fetch_offset"] - 1}}
    standard = {"format": "1.0", "component": "partition", "initial": {"standard": "partition/three-replicas"},
                "steps": [{"input": {"action": "handle_broker_fenced", "broker_id": 3}}]}
    return [(balance, at_balance, "'maybe_balance_partition_leaders' is not modelled"),
            (fourth, at_fourth, "broker id 4 is not in the spec's Brokers"),
            (other, at_other, "partition other-topic:0 is not the spec's partition"),
            (bounded, at_bounded, "the partition epoch has reached MaxEpoch"),
            (fetch, at_fetch, "the fetch offset is not the follower's log end after truncation"),
            (standard, None, "initial state: the spec starts from")]


@pytest.fixture(scope="module")
def mutated(objs: list[dict[str, Any]]) -> list[tuple[str, Trace, int]]:
    """Every sampled bundled trace recorded under each partition mutant, where the reference flags the recording."""
    sample = [trace_from_json(obj) for obj in objs[::STRIDE]]
    found = []
    for name, mutant in sorted(all_mutants().items()):
        if mutant.component == "partition":
            for trace in sample:
                divergence = replay(partition_replay.record(trace, mutant.applied())).divergence
                if divergence is not None:
                    found.append((name, partition_replay.record(trace, mutant.applied()), divergence.step))
    return found


@pytest.fixture(scope="module")
def verdicts(objs: list[dict[str, Any]], mutated: list[tuple[str, Trace, int]]) -> dict[str, list[SpecVerdict]]:
    """The spec's verdicts on every case of this file, from one TLC run."""
    cases = {"sample": [trace_from_json(obj) for obj in objs[::STRIDE]],
             "mutated": [trace for _, trace, _ in mutated],
             "edited": [trace_from_json(obj) for obj, _ in edited(objs)],
             "outside": [trace_from_json(obj) for obj, _, _ in outside(objs)]}
    judged = iter(validate([trace for group in cases.values() for trace in group]))
    return {name: [next(judged) for _ in group] for name, group in cases.items()}


def test_a_sample_of_the_bundled_tla_traces_is_accepted_by_the_spec(objs: list[dict[str, Any]],
                                                                    verdicts: dict[str, list[SpecVerdict]]) -> None:
    sample = objs[::STRIDE]
    assert len(verdicts["sample"]) == len(sample) > 100
    assert [v.outcome for v in verdicts["sample"]] == ["accepted"] * len(sample), [
        (obj["id"], v) for obj, v in zip(sample, verdicts["sample"]) if v.outcome != "accepted"][:3]


def test_mutant_recordings_are_rejected_by_the_spec_where_the_reference_flags_them(
        mutated: list[tuple[str, Trace, int]], verdicts: dict[str, list[SpecVerdict]]) -> None:
    assert {name for name, _, _ in mutated} >= set(TOLD_APART)
    for (name, trace, step), spec in zip(mutated, verdicts["mutated"]):
        assert spec.outcome == "rejected" and spec.step == step, (name, trace.id, step, spec)


def test_a_trace_edited_to_be_non_conformant_is_rejected_by_both_at_the_same_step(
        objs: list[dict[str, Any]], verdicts: dict[str, list[SpecVerdict]]) -> None:
    assert_rejected_by_both(edited(objs), verdicts["edited"])


def test_a_trace_outside_the_specs_bounds_is_not_judged_rather_than_rejected(
        objs: list[dict[str, Any]], verdicts: dict[str, list[SpecVerdict]]) -> None:
    assert_outside_not_rejected(outside(objs), verdicts["outside"])


def test_check_with_tlc_judges_partition_and_broker_traces_of_one_file(objs: list[dict[str, Any]],
                                                                       tmp_path: Path) -> None:
    with gzip.open(BROKER, "rt") as lines:
        broker = json.loads(next(lines))
    text = with_tlc_report(tmp_path / "mixed.jsonl", objs[:2] + [edited(objs)[0][0], outside(objs)[0][0], broker], 1)
    assert text.count("spec:      accepted by the spec") == 3
    assert "spec:      REJECTED by the spec at step" in text and "reference: DIVERGES at step" in text
    assert "outside the spec's bounds at step" in text and "no trace-validation module" not in text
    assert text.strip().endswith("checked 5 traces from 1 file(s): 4 conformant, 1 divergent, 0 unreadable; "
                                 "reference and spec: 4 agree, 0 disagree, 1 not judged by the spec "
                                 "(outside its bounds)")
