"""Issue 19 item 6: the codecs' fast path (orjson, memos) decodes as the checked decoder does, and ``--jobs N``
gives the report one process gives (``check`` and ``validate --engine local``)."""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kraftspec import traces
from kraftspec.traces.format import fastdecode
from kraftspec.traces.format import jsonl
from kraftspec.traces.format import parquet
from kraftspec.traces.replay.check import EXIT_ERROR, check_command
from kraftspec.traces.format.envelope import Trace
from kraftspec.traces.engines.validate import validate_command
from kraftspec.traces.format.values import TraceError

TLA = Path(traces.__file__).parent / "tla"
GOOD = ('{"format":"1.0","component":"broker","initial":{"standard":"broker/running-cluster"},"steps":['
        '{"input":{"action":"heartbeat","now":1,"request":{"broker_id":1,"broker_epoch":0,'
        '"current_metadata_offset":8,"want_fence":false,"want_shut_down":false}},'
        '"output":{"response":{"error":"NONE","is_fenced":false%s}}}]}')


def bundled_lines(name: str, count: int) -> list[bytes]:
    with gzip.open(TLA / name) as stream:
        return [line for _, line in zip(range(count), stream)]


@pytest.mark.parametrize("name", ["broker.jsonl.gz", "partition.jsonl.gz", "controller.jsonl.gz", "raft.jsonl.gz",
                                  "features.jsonl.gz"])
def test_fast_path_decodes_every_bundled_trace_as_the_checked_decoder(name: str) -> None:
    for line in bundled_lines(name, 300):
        fast = fastdecode.trace(line)  # raises if the fast path refused a plain trace
        assert fast == jsonl.parse_line_checked(line)
        row = parquet.to_row(fast)
        assert parquet._from_row_memoized(row) == parquet._from_row_checked(row) == fast


def test_a_long_integer_is_decoded_as_json_reads_it_never_as_orjson_float() -> None:
    as_float, as_int = (GOOD % ',"extra":1e25').encode(), (GOOD % ',"extra":10000000000000000000000000').encode()
    for line in (as_float, as_int, as_float):  # the memos never hand one's value to the other
        trace = jsonl.parse_line(line)
        assert trace == jsonl.parse_line_checked(line)
        assert type(trace.steps[0].response["extra"]) is (float if b"e25" in line else int)
    row = parquet.to_row(jsonl.parse_line(as_int))
    assert parquet.from_row(row).steps[0].response["extra"] == 10 ** 25


@pytest.mark.parametrize("depth, readable", [(99, True), (100, False), (5000, False)])
def test_the_depth_limit_holds_on_the_fast_path_with_the_checked_message(depth: int, readable: bool) -> None:
    line = (GOOD % (',"deep":' + "[" * depth + "]" * depth)).encode()  # the response object adds one level
    if readable:
        assert jsonl.parse_line(line) == jsonl.parse_line_checked(line)
        return
    with pytest.raises(TraceError) as fast:
        jsonl.parse_line(line)
    with pytest.raises(TraceError) as checked:
        jsonl.parse_line_checked(line)
    assert str(fast.value) == str(checked.value) and "nested deeper than 100" in str(fast.value)


def test_unknown_top_level_fields_are_left_to_the_checked_decoder() -> None:
    line = GOOD.replace('{"format"', '{"later":{"x":[1]},"format"') % ""
    assert jsonl.parse_line(line.encode()) == jsonl.parse_line_checked(line.encode())


def mixed_set(tmp_path: Path) -> list[str]:
    """Bundled traces of every component, one divergent broker trace, one raft trace missing a send (an
    ``(absent)`` value), an unreadable line, a blank line, a Parquet file with several row groups, an empty file
    and a missing one."""
    broker = bundled_lines("broker.jsonl.gz", 70)
    wrong = json.loads(broker[40])
    stated = next(s for s in wrong["steps"] if s.get("output", {}).get("response", {}).get("error") == "NONE")
    stated["output"]["response"]["error"] = "STALE_BROKER_EPOCH"
    raft = bundled_lines("raft.jsonl.gz", 40)
    lost = json.loads(raft[0])
    sent = next(s for s in lost["steps"] if len(s.get("output", {}).get("response", {}).get("sends", [])) > 1)
    sent["output"]["response"]["sends"].pop()
    lines = broker[:40] + [json.dumps(wrong).encode() + b"\n", b"{not json\n", b"\n"] + broker[41:]
    lines += [json.dumps(lost).encode() + b"\n"] + raft[1:]
    (tmp_path / "mixed.jsonl").write_bytes(b"".join(lines))
    part = [jsonl.parse_line(line) for line in bundled_lines("partition.jsonl.gz", 90)]
    parquet.write_parquet(tmp_path / "part.parquet", part + [jsonl.parse_line(json.dumps(wrong).encode())],
                          batch_size=50)
    (tmp_path / "empty.jsonl").write_bytes(b"")
    return [str(tmp_path / "mixed.jsonl"), str(TLA / "controller.jsonl.gz"), str(tmp_path / "part.parquet"),
            str(tmp_path / "empty.jsonl"), str(tmp_path / "missing.jsonl")]


def check(paths: list[str], as_json: bool, jobs: int) -> tuple[int, str]:
    out = io.StringIO()
    return check_command(paths, as_json, out, jobs=jobs), out.getvalue()


def first_difference(one: str, two: str) -> str:
    """The first line where two reports differ (for the failure message)."""
    return next((f"{a!r} != {b!r}" for a, b in zip(one.splitlines(), two.splitlines()) if a != b), "lengths differ")


@pytest.mark.parametrize("as_json", [False, True])
def test_check_reports_the_same_with_two_processes(tmp_path: Path, as_json: bool) -> None:
    paths = mixed_set(tmp_path)
    one, two = check(paths, as_json, 1), check(paths, as_json, 2)
    assert one == two, first_difference(one[1], two[1])
    code, text = one
    assert code == EXIT_ERROR
    assert ("observed (absent)" in text or '"observed": "(absent)"' in text) and "DIVERGES" in text or as_json
    assert "mixed.jsonl:42: error: invalid JSON" in text or '"where": "line 42"' in text


def test_check_reports_the_same_with_two_processes_on_the_bundled_traces() -> None:
    paths = [str(TLA / name) for name in ("broker.jsonl.gz", "controller.jsonl.gz")]
    assert check(paths, False, 1) == check(paths, False, 2)


def test_a_row_group_that_cannot_be_read_is_one_entry_whatever_the_processes(tmp_path: Path) -> None:
    rows = [parquet.to_row(jsonl.parse_line(line)) for line in bundled_lines("broker.jsonl.gz", 80)]
    path = tmp_path / "bad.parquet"
    pq.write_table(pa.Table.from_pylist(rows, schema=parquet.SCHEMA), path, row_group_size=70, compression="none")
    data = bytearray(path.read_bytes())
    data[data.find(b"tla-walk")] = 0xFF  # invalid UTF-8 in the first trace id: row group 0 (rows 0-69)
    path.write_bytes(bytes(data))
    one, two = check([str(path)], False, 1), check([str(path)], False, 2)
    assert one == two, first_difference(one[1], two[1])
    assert one[1].count("error: row group 0 (rows 0-69) unreadable: invalid UTF-8") == 1
    assert one[1].splitlines()[-1].endswith("10 conformant, 0 divergent, 70 unreadable")


def test_validate_local_writes_the_same_report_with_two_processes(tmp_path: Path) -> None:
    paths = mixed_set(tmp_path)
    tables = []
    for jobs in (1, 2):
        report = tmp_path / f"report-{jobs}.parquet"
        code = validate_command([paths[2], paths[2]], "local", str(report), out=io.StringIO(), jobs=jobs)
        assert code == 1
        tables.append(pq.read_table(report))
    assert tables[0].equals(tables[1]) and tables[0].num_rows == 2 * 91


def test_jobs_is_for_the_local_engine_only(tmp_path: Path) -> None:
    out = io.StringIO()
    assert validate_command([str(tmp_path)], "spark", str(tmp_path / "r.parquet"), out=out, jobs=2) == EXIT_ERROR
    assert "--jobs applies to --engine local only" in out.getvalue()


def test_every_decoded_trace_is_a_trace() -> None:
    assert all(isinstance(jsonl.parse(line), Trace) for line in bundled_lines("controller.jsonl.gz", 50))
