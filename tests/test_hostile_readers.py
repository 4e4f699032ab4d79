"""Issue 21, one regression test per class of hostile input: every reader turns it into its own error with the
file and position (never a traceback), within the stated limits, one line, and the command exits 2."""

from __future__ import annotations

import gzip
import io
import json
import os
import shutil
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kraftspec.traces.format import parquet
from kraftspec.traces.replay.check import check_command
from kraftspec.traces.format.jsonl import dumps, read_jsonl
from kraftspec.traces.format.limits import MAX_JSON_DEPTH, LimitError, escape_controls, loads
from kraftspec.traces.metalog.audit import audit_paths
from kraftspec.traces.metalog.corpus import data_dirs
from kraftspec.traces.metalog.errors import LogFormatError
from kraftspec.traces.metalog.files import read_leader_epoch_checkpoint, read_meta_properties, read_quorum_state
from kraftspec.traces.metalog.schema import encode_metadata_value
from kraftspec.traces.metalog.segments import Record, encode_batch, read_batches
from kraftspec.traces.recording.broker_simulate import generate_sim
from kraftspec.traces.format.values import TraceError
from kraftspec.traces.replay.vectors import vectors_command

DEEP = "[" * 1000 + "]" * 1000
HUGE = "1" * 5000


def a_trace_line() -> dict:
    return json.loads(dumps(next(iter(generate_sim(0, 1, 5)))))


def check(paths: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    return check_command(paths, False, out), out.getvalue()


def one_line(text: str) -> bool:
    return escape_controls(text) == text


# ---- JSON: nesting and number size --------------------------------------------------------------------------

@pytest.mark.parametrize("text", [DEEP, "{\"a\":" * 990 + "1" + "}" * 990, HUGE, "-" + "9" * 4301])
def test_the_json_limits_are_errors_not_tracebacks(text: str) -> None:
    with pytest.raises(LimitError):
        loads(text)


@pytest.mark.parametrize("where", ["meta", "post", "response", "format"])
@pytest.mark.parametrize("hostile", [DEEP, HUGE, "[" * 150 + "]" * 150])
def test_a_trace_line_nested_1000_deep_or_with_5000_digits_is_unreadable_with_its_line(
        tmp_path: Path, where: str, hostile: str) -> None:
    obj = a_trace_line()
    if where == "post":
        obj["steps"][0]["post"] = "HOSTILE"
    elif where == "response":
        obj["steps"][0].setdefault("output", {})["response"] = "HOSTILE"
    else:
        obj[where] = "HOSTILE"
    text = json.dumps(obj).replace('"HOSTILE"', hostile)
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(a_trace_line()) + "\n" + text + "\n")
    items = list(read_jsonl(path))
    assert len(items) == 2 and items[1][0] == 2 and isinstance(items[1][1], TraceError)
    assert one_line(str(items[1][1]))
    code, out = check([str(path)])
    assert code == 2 and f"{path}:2: error:" in out


@pytest.mark.parametrize("corrupt", ["deflate", "truncated", "header", "trailer"])
def test_a_corrupt_gzip_stream_is_one_unreadable_item_after_the_good_lines(tmp_path: Path, corrupt: str) -> None:
    lines = "".join(json.dumps(a_trace_line()) + "\n" for _ in range(200)).encode()
    data = bytearray(gzip.compress(lines, mtime=0))
    if corrupt == "deflate":
        data[len(data) // 2] ^= 0xFF
    elif corrupt == "truncated":
        del data[len(data) // 2:]
    elif corrupt == "header":
        data[0] = 0
    else:
        data[-6] ^= 0xFF  # the CRC-32 of the trailer
    path = tmp_path / "t.jsonl.gz"
    path.write_bytes(bytes(data))
    items = list(read_jsonl(path))
    assert items and isinstance(items[-1][1], TraceError) and "compressed stream" in str(items[-1][1])
    code, out = check([str(path)])
    assert code == 2 and "Traceback" not in out


def parquet_rows(n: int = 2) -> list[dict]:
    return [parquet.to_row(t) for t in generate_sim(3, n, 5)]


@pytest.mark.parametrize("cell", [DEEP, HUGE, '{"a":' * 1200 + "1" + "}" * 1200, '{"x":"\\ud800"}'])
def test_a_parquet_cell_beyond_the_limits_is_an_unreadable_row(tmp_path: Path, cell: str) -> None:
    rows = parquet_rows()
    rows[1]["steps"][0]["post"] = cell
    rows[0]["meta"] = cell
    path = tmp_path / "t.parquet"
    pq.write_table(pa.Table.from_pylist(rows, schema=parquet.SCHEMA), path)
    items = list(parquet.read_parquet(path))
    assert all(isinstance(item, TraceError) for _, _, item in items)
    code, out = check([str(path)])
    assert code == 2 and f"{path} row 0: error: meta:" in out and f"{path} row 1: error:" in out


def test_invalid_utf8_in_a_parquet_string_column_is_an_unreadable_row_group(tmp_path: Path) -> None:
    table = pa.Table.from_pylist(parquet_rows(), schema=parquet.SCHEMA)
    table = table.set_column(1, "component", pa.array([b"\xff\xfe", b"broker"], pa.binary()).view(pa.string()))
    path = tmp_path / "t.parquet"
    pq.write_table(table, path)
    (item,) = list(parquet.read_parquet(path))
    assert item[:2] == (0, 2) and "invalid UTF-8" in str(item[2])
    code, out = check([str(path)])
    assert code == 2 and "rows 0-1: error: row group 0" in out


def test_invalid_utf8_in_a_parquet_column_name_is_an_unreadable_file(tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    pq.write_table(pa.Table.from_pylist(parquet_rows(), schema=parquet.SCHEMA), path, store_schema=False)
    path.write_bytes(path.read_bytes().replace(b"component", b"\xffomponent"))  # the footer is not checksummed
    items = list(parquet.read_parquet(path))
    assert len(items) == 1 and items[0][0] is None and isinstance(items[0][2], TraceError)
    code, out = check([str(path)])
    assert code == 2 and "not a readable Parquet file" in out


# ---- the files beside a metadata log -------------------------------------------------------------------------

def corpus_partition() -> Path:
    return data_dirs()[0] / "__cluster_metadata-0"


@pytest.mark.parametrize("text", [json.dumps({"leaderEpoch": 1}).replace("1", DEEP),
                                  '{"data_version": 0, "leaderEpoch": ' + HUGE + "}"])
def test_quorum_state_beyond_the_json_limits_is_a_format_error(tmp_path: Path, text: str) -> None:
    path = tmp_path / "quorum-state"
    path.write_text(text)
    with pytest.raises(LogFormatError) as info:
        read_quorum_state(str(path))
    assert info.value.file == str(path) and "JSON" in info.value.message


@pytest.mark.parametrize("text", ["0\n1\n\u00b2 0\n", "0\n\u00b2\n", "0\n1\n--1 0\n", "0\n1\n" + HUGE + " 0\n",
                                  "0\n" + HUGE + "\n"])
def test_leader_epoch_checkpoint_with_a_unicode_digit_is_a_format_error(tmp_path: Path, text: str) -> None:
    path = tmp_path / "leader-epoch-checkpoint"
    path.write_text(text)
    with pytest.raises(LogFormatError) as info:
        read_leader_epoch_checkpoint(str(path))
    assert info.value.offset > 0 and len(str(info.value)) < 300


def test_a_meta_properties_value_with_a_newline_cannot_add_a_line_to_the_report(tmp_path: Path) -> None:
    data = tmp_path / "data"
    shutil.copytree(data_dirs()[0], data)
    (data / "meta.properties").write_text("version=1\\n== FAKE: OK\\u001b[2J\ncluster.id=x\nnode.id=1\n")
    with pytest.raises(LogFormatError) as info:
        read_meta_properties(str(data / "meta.properties"))
    assert one_line(str(info.value)) and "\\x0a" in str(info.value)
    report = audit_paths([str(data)])
    assert not any(line.startswith("== FAKE") for line in report.render().splitlines())
    assert all(one_line(line) for line in report.render().splitlines())
    assert report.exit_code == 2


# ---- segments and data directories ---------------------------------------------------------------------------

def test_segment_names_that_are_not_offsets_are_skipped_not_parsed(tmp_path: Path) -> None:
    data = tmp_path / "data"
    shutil.copytree(data_dirs()[0], data)
    partition = data / "__cluster_metadata-0"
    for name in ("\u00b2.log", "\u0663\u0663.log", "12a.log", "-1.log"):
        (partition / name).write_bytes(b"garbage")
    report = audit_paths([str(data)])
    skipped = {Path(f.path).name: f for f in report.directories[0].files if f.status == "skipped"}
    assert {"\u00b2.log", "\u0663\u0663.log", "12a.log", "-1.log"} <= set(skipped)
    assert report.exit_code == 0


def test_a_lone_segment_whose_name_is_not_an_offset_is_audited(tmp_path: Path) -> None:
    source = sorted(corpus_partition().glob("*.log"))[0]
    lone = tmp_path / "backup-copy.log"
    shutil.copy(source, lone)
    report = audit_paths([str(lone)])
    (segment,) = report.directories[0].files
    assert segment.status == "audited" and "not an offset" in (segment.note or "")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_named_like_a_segment_or_a_small_file_does_not_block_the_audit(tmp_path: Path) -> None:
    data = tmp_path / "data"
    shutil.copytree(data_dirs()[0], data)
    partition = data / "__cluster_metadata-0"
    os.mkfifo(partition / "00000000000000999999.log")
    os.mkfifo(partition / "00000000000000000001-0000000001.checkpoint")
    (partition / "quorum-state").unlink()
    os.mkfifo(partition / "quorum-state")
    os.mkfifo(tmp_path / "lone.log")
    done = subprocess.run([sys.executable, "-m", "kraftspec.cli", "audit", str(data), str(tmp_path / "lone.log")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "a FIFO, not a regular file" in done.stdout


def quota_log(path: Path) -> None:
    entity = ({"entity_type": "user", "entity_name": None}, {"entity_type": "user", "entity_name": "alice"},
              {"entity_type": "client-id", "entity_name": None})
    values = [encode_metadata_value(14, 0, {"entity": entity, "key": "producer_byte_rate", "value": 1.0,
                                            "remove": False}),
              encode_metadata_value(14, 0, {"entity": tuple(reversed(entity)), "key": "producer_byte_rate",
                                            "value": 2.0, "remove": False})]
    path.write_bytes(encode_batch(0, 1, [Record(0, i, 0, None, v, 0) for i, v in enumerate(values)]))


def test_client_quota_entities_of_one_type_with_a_null_name_replay(tmp_path: Path) -> None:
    log = tmp_path / "00000000000000000000.log"
    quota_log(log)
    report = audit_paths([str(log)])
    assert not report.directories[0].errors
    assert report.directories[0].record_counts["ClientQuotaRecord"] == 2


def test_a_batch_of_many_records_is_streamed_not_listed(tmp_path: Path) -> None:
    noop = b"\x01\x14\x00\x00"
    records = [Record(0, i, 0, None, noop, 0) for i in range(40_000)]
    log = tmp_path / "00000000000000000000.log"
    log.write_bytes(encode_batch(0, 1, records))
    del records
    tracemalloc.start()
    report = audit_paths([str(log)])
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert report.directories[0].record_counts["NoOpRecord"] == 40_000
    assert peak < 8 * log.stat().st_size  # the batch, its CRC and a chunk: about 3x; a list of records is over 20x


def test_records_before_a_bad_one_are_yielded_first(tmp_path: Path) -> None:
    records = [Record(0, i, 0, None, b"\x01\x14\x00\x00", 0) for i in range(3)]
    data = bytearray(encode_batch(0, 1, records))
    data[-1] = 0x7F  # the last record's headerCount: runs past its end (CRC not recomputed: read the batch raw)
    from crc32c import crc32c
    data[17:21] = crc32c(bytes(data[21:])).to_bytes(4, "big")
    (batch,) = list(read_batches(io.BytesIO(bytes(data)), "x"))
    seen = []
    with pytest.raises(LogFormatError):
        for rec in batch.iter_records():
            seen.append(rec.offset)
    assert seen == [0, 1]


# ---- traces: a raft post-state with a renamed field ---------------------------------------------------------

def test_a_raft_post_state_with_a_renamed_field_is_refused_with_its_path_not_a_key_error(tmp_path: Path) -> None:
    from kraftspec.traces.recording import raft_simulate
    from kraftspec.traces.format.envelope import trace_from_json

    obj = json.loads(dumps(raft_simulate.simulate_one(0, 0, 10)))
    post = obj["steps"][0]["post"]
    post["voted_kex"] = post.pop("voted_key")
    path = tmp_path / "raft.jsonl"
    path.write_text(json.dumps(obj) + "\n")
    trace_from_json(obj)
    code, out = check([str(path)])
    assert code == 2 and "steps[0].post.voted_kex: unknown post-state field" in out


# ---- vectors --verify ------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def vectors(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("vectors")
    source = Path(parquet.__file__).parents[1] / "tla" / "broker.jsonl.gz"
    traces = [(str(source), line, t) for line, t in read_jsonl(source)][:1]
    from kraftspec.traces.replay.vectors import export
    export(folder, traces)
    return folder


@pytest.mark.parametrize("manifest, message", [
    ({"format": "kraftspec-vectors/2"}, "manifest.json: files: missing"),
    ({"format": "kraftspec-vectors/2", "files": [{"path": "../x", "sha256": "0" * 64}]}, "files[0].path"),
    ({"format": "kraftspec-vectors/2", "files": [{"path": "a", "sha256": 1.5}]}, "files[0].sha256"),
    ({"format": "kraftspec-vectors/2", "files": ["x"]}, "files[0]: expected an object"),
    ([], "expected a JSON object"),
])
def test_a_malformed_manifest_names_the_bad_entry(tmp_path: Path, vectors: Path, manifest: object, message: str) -> None:
    folder = tmp_path / "v"
    shutil.copytree(vectors, folder)
    (folder / "manifest.json").write_text(json.dumps(manifest))
    log = tmp_path / "read.log"
    log.write_text("")
    out = io.StringIO()
    assert vectors_command(str(folder), [], str(log), out=out) == 2
    assert message in out.getvalue() and "kraftspec vectors: " in out.getvalue()


@pytest.mark.parametrize("content", [b"{", b"\xff\xfe", b"[" * 5000, b'{"files": ' + HUGE.encode() + b"}"])
def test_a_manifest_that_is_not_json_is_an_error(tmp_path: Path, vectors: Path, content: bytes) -> None:
    folder = tmp_path / "v"
    shutil.copytree(vectors, folder)
    (folder / "manifest.json").write_bytes(content)
    (tmp_path / "read.log").write_text("")
    out = io.StringIO()
    assert vectors_command(str(folder), [], str(tmp_path / "read.log"), out=out) == 2
    assert out.getvalue().startswith("kraftspec vectors: ") and one_line(out.getvalue().strip())


def test_a_read_log_that_is_not_text_is_an_error(tmp_path: Path, vectors: Path) -> None:
    (tmp_path / "read.log").write_bytes(b"pre.json\n\xff\n")
    out = io.StringIO()
    assert vectors_command(str(vectors), [], str(tmp_path / "read.log"), out=out) == 2
    assert "read.log: byte" in out.getvalue()


def test_the_depth_limit_is_what_the_documentation_states() -> None:
    assert loads("[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH) is not None
    with pytest.raises(LimitError):
        loads("[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1))


# ---- validate prints the unreadable rows, not only their count -----------------------------------------------

def test_validate_prints_each_unreadable_row_with_its_reason(tmp_path: Path) -> None:
    from kraftspec.traces.engines.validate import validate_command

    rows = parquet_rows(3)
    rows[1]["meta"] = DEEP
    path = tmp_path / "set.parquet"
    pq.write_table(pa.Table.from_pylist(rows, schema=parquet.SCHEMA), path)
    (tmp_path / "fifo.parquet").write_bytes(b"PAR1 no")
    out = io.StringIO()
    code = validate_command([str(path), str(tmp_path / "fifo.parquet")], "local", str(tmp_path / "r.parquet"),
                            out=out, show_progress=False)
    text = out.getvalue()
    assert code == 2
    assert f"{path} row 1: meta: JSON nested deeper than {MAX_JSON_DEPTH} levels" in text
    assert f"{tmp_path / 'fifo.parquet'}: not a readable Parquet file" in text
