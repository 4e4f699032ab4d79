"""``kraftspec check``: the bundled TLA+ traces, malformed input, the accounting invariant, the JSON report."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kraftspec import traces
from kraftspec.traces.format import jsonl
from kraftspec.traces.format import parquet
from kraftspec.traces.replay.check import EXIT_ERROR, EXIT_FINDING, EXIT_OK, check_command
from kraftspec.traces.recording.broker_simulate import generate_sim

BUNDLED = Path(traces.__file__).parent / "tla" / "broker.jsonl.gz"
GOOD = ('{"format":"1.0","component":"broker","initial":{"standard":"broker/running-cluster"},"steps":['
        '{"input":{"action":"heartbeat","now":1,"request":{"broker_id":1,"broker_epoch":0,'
        '"current_metadata_offset":8,"want_fence":false,"want_shut_down":false}},'
        '"output":{"response":{"error":"NONE","is_fenced":%s}}}]}')


def run(paths: list[str], as_json: bool = False) -> tuple[int, str]:
    out = io.StringIO()
    return check_command(paths, as_json, out), out.getvalue()


def totals(text: str) -> str:
    return text.strip().splitlines()[-1]


def test_every_bundled_tla_trace_is_conformant() -> None:
    code, text = run([str(BUNDLED)])
    read = sum(1 for _ in jsonl.read_jsonl(BUNDLED))
    assert read >= 3000
    assert code == EXIT_OK, text[-2000:]
    assert totals(text) == f"checked {read} traces from 1 file(s): {read} conformant, 0 divergent, 0 unreadable"


def test_each_malformed_line_gives_one_error_line_and_the_rest_is_checked(tmp_path: Path) -> None:
    lines = [
        GOOD % "false",                                                          # 1 conformant
        GOOD % "false",                                                          # 2 truncated below
        GOOD.replace('"broker_epoch":0', '"broker_epoch":"0"') % "false",        # 3 wrong type
        GOOD.replace('"action":"heartbeat"', '"action":"teleport"') % "false",   # 4 unknown action
        GOOD.replace('"format":"1.0"', '"format":"2.0"') % "false",              # 5 wrong major
        GOOD % "true",                                                           # 6 divergent
        GOOD % "false",                                                          # 7 conformant
    ]
    lines[1] = lines[1][:57]
    path = tmp_path / "mixed.jsonl"
    path.write_text("\n".join(lines) + "\n")
    code, text = run([str(path)])
    errors = [line for line in text.splitlines() if ": error: " in line]
    assert [line.split(": error: ")[0] for line in errors] == [f"{path}:{n}" for n in (2, 3, 4, 5)]
    assert "invalid JSON" in errors[0]
    assert "steps[0].input.request.broker_epoch: expected an integer, got string" in errors[1]
    assert "unknown action 'teleport'" in errors[2]
    assert "version 2.0 is not supported" in errors[3] and "major version 1" in errors[3]
    assert f"{path}:1: conformant" in text and f"{path}:7: conformant" in text
    assert f"{path}:6: DIVERGES at step 0 of 1: heartbeat" in text
    assert "response.is_fenced: expected false, observed true" in text
    assert "rule: kraftspec.reference.broker.heartbeat: " in text
    assert "kraftspec.reference.broker_rules.next_control_state(" in text  # the rule checks it made, with values
    assert "registrations: 1: epoch 0" in text
    assert totals(text) == "checked 7 traces from 1 file(s): 2 conformant, 1 divergent, 4 unreadable"
    assert code == EXIT_ERROR


def test_parquet_errors_name_the_row_and_the_file_is_still_checked(tmp_path: Path) -> None:
    rows = [parquet.to_row(t) for t in generate_sim(seed=5, traces=4, steps=10)]
    rows[1]["steps"][0]["input"] = "{not json"
    rows[2]["format"] = "3.1"
    path = tmp_path / "bad-rows.parquet"
    pq.write_table(pa.Table.from_pylist(rows, schema=parquet.SCHEMA), path)
    code, text = run([str(path)])
    errors = [line for line in text.splitlines() if ": error: " in line]
    assert len(errors) == 2
    assert errors[0].startswith(f"{path} row 1: error: steps[0].input: invalid JSON text")
    assert errors[1].startswith(f"{path} row 2: error: format: trace format version 3.1 is not supported")
    assert totals(text) == "checked 4 traces from 1 file(s): 2 conformant, 0 divergent, 2 unreadable"
    assert code == EXIT_ERROR


def test_a_corrupt_parquet_file_is_one_error_and_other_files_are_still_checked(tmp_path: Path) -> None:
    good = tmp_path / "good.parquet"
    parquet.write_parquet(good, generate_sim(seed=6, traces=3, steps=10))
    corrupt = tmp_path / "corrupt.parquet"
    data = good.read_bytes()
    corrupt.write_bytes(data[: len(data) // 2])
    code, text = run([str(corrupt), str(good)])
    assert text.splitlines()[0].startswith(f"{corrupt}: error: not a readable Parquet file")
    assert totals(text) == "checked 4 traces from 2 file(s): 3 conformant, 0 divergent, 1 unreadable"
    assert code == EXIT_ERROR


def test_a_corrupt_row_group_is_one_error_line_and_the_other_row_groups_are_checked(tmp_path: Path) -> None:
    path = tmp_path / "groups.parquet"
    parquet.write_parquet(path, generate_sim(seed=5, traces=6, steps=10), batch_size=3)
    data = bytearray(path.read_bytes())
    start = pq.ParquetFile(path).metadata.row_group(0).column(5).data_page_offset  # the steps column
    data[start:start + 200] = b"\xab" * 200
    path.write_bytes(bytes(data))
    code, text = run([str(path)])
    lines = text.splitlines()
    assert lines[0].startswith(f"{path} rows 0-2: error: row group 0 (rows 0-2) unreadable")
    assert [line.split(" (")[0] for line in lines[1:4]] == [f"{path} row {n}" for n in (3, 4, 5)]
    assert totals(text) == "checked 6 traces from 1 file(s): 3 conformant, 0 divergent, 3 unreadable"
    assert code == EXIT_ERROR


def test_a_truncated_gzip_file_reports_where_it_ends(tmp_path: Path) -> None:
    whole, cut = tmp_path / "whole.jsonl.gz", tmp_path / "cut.jsonl.gz"
    jsonl.write_jsonl(whole, generate_sim(seed=5, traces=6, steps=10))
    data = whole.read_bytes()
    cut.write_bytes(data[: len(data) * 2 // 3])
    code, text = run([str(cut)])
    errors = [line for line in text.splitlines() if ": error: " in line]
    assert len(errors) == 1 and "unreadable compressed stream" in errors[0]
    assert code == EXIT_ERROR and ", 1 unreadable" in totals(text)


@pytest.mark.parametrize("suffix", [".jsonl", ".jsonl.gz", ".parquet"])
def test_accounting_and_the_json_report(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"sim{suffix}"
    batch = list(generate_sim(seed=8, traces=12, steps=40, mutant="broker-unfence-before-caught-up"))
    (parquet.write_parquet if suffix == ".parquet" else jsonl.write_jsonl)(path, batch)
    code, text = run([str(path)], as_json=True)
    report = json.loads(text)
    assert report["read"] == 12 == report["conformant"] + report["divergent"] + report["unreadable"]
    assert len(report["traces"]) == 12 and report["unreadable"] == 0
    assert report["divergent"] > 0 and code == EXIT_FINDING
    divergent = [t for t in report["traces"] if t["outcome"] == "divergent"]
    first = divergent[0]["divergence"]
    assert first["rule"] == "kraftspec.reference.broker.heartbeat"
    assert first["diff"] and {"path", "expected", "observed"} <= set(first["diff"][0])


def test_a_missing_file_is_accounted_as_unreadable(tmp_path: Path) -> None:
    code, text = run([str(tmp_path / "nope.jsonl")])
    assert text.splitlines()[0] == f"{tmp_path / 'nope.jsonl'}: error: no such file"
    assert code == EXIT_ERROR and totals(text).endswith("1 unreadable")


def test_record_diffs_are_field_level_for_the_same_type_and_whole_records_otherwise() -> None:
    from kraftspec.traces.replay.verdict import ABSENT, record_diffs

    fence = {"offset": 4, "type": "BrokerRegistrationChangeRecord", "broker_id": 2, "broker_epoch": 1, "fenced": 1}
    change = {"offset": 4, "type": "PartitionChangeRecord", "partition_id": 0, "isr": [1], "directories": None}
    assert [str(d) for d in record_diffs([fence], [{**fence, "fenced": -1}])] == [
        "records[0].fenced: expected 1, observed -1"]
    whole = record_diffs([change, fence], [fence])
    assert [(d.path, d.expected, d.observed) for d in whole] == [
        ("records[0]", {k: v for k, v in change.items() if v is not None}, fence), ("records[1]", fence, ABSENT)]


def test_counts_per_component_in_the_text_and_the_json_report(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text("\n".join([GOOD % "false", GOOD % "true", "{"]) + "\n")
    code, text = run([str(path)])
    assert text.splitlines()[-2] == "component broker: 1 conformant, 1 divergent (2 steps)"
    assert totals(text) == "checked 3 traces from 1 file(s): 1 conformant, 1 divergent, 1 unreadable"
    report = json.loads(run([str(path)], as_json=True)[1])
    assert report["components"] == {"broker": {"conformant": 1, "divergent": 1, "steps": 2}}



@pytest.mark.parametrize("field,retyped", [("fenced", int), ("in_controlled_shutdown", int), ("epoch", float)])
def test_a_post_state_entry_of_another_json_type_diverges_even_in_the_recorded_order(field: str, retyped: type) -> None:
    """A post-state entry stated in the recorded order but with another JSON type diverges (1 is not true, 0.0 is
    not 0), on that field alone."""
    from kraftspec.traces.format.envelope import trace_from_json
    from kraftspec.traces.replay.verdict import replay

    trace = next(iter(generate_sim(seed=5, traces=1, steps=10)))
    assert replay(trace).conformant
    obj = json.loads(jsonl.dumps(trace))
    step = next(i for i, s in enumerate(obj["steps"]) if s["post"]["brokers"])
    entry = next(iter(obj["steps"][step]["post"]["brokers"].values()))
    entry[field] = retyped(entry[field])
    verdict = replay(trace_from_json(obj))
    assert verdict.divergence is not None and verdict.divergence.step == step
    broker = next(iter(obj["steps"][step]["post"]["brokers"]))
    assert [d.path for d in verdict.divergence.diffs] == [f"post.brokers.{broker}.{field}"]
