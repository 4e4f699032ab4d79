"""Issue 19 item 6: the fast path (msgspec scan, parts decoded once per distinct text, memos kept from a part's
second sight) decodes every trace as the checked decoder does, on first sight, second sight and memo hits alike,
and hands every doubtful line to the checked decoder, whose error message it keeps."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kraftspec.traces.format import fastdecode
from kraftspec.traces.format import jsonl
from kraftspec.traces.format import parquet
from kraftspec.traces.format import raft_typed
from kraftspec.traces.format.raft import RAFT
from kraftspec.traces.recording.generate import generate_raft_sim
from kraftspec.traces.recording.broker_simulate import generate_sim
from kraftspec.traces.format.values import TraceError
from support_perturb import perturbed

SEED = 20261126
HEARTBEAT = {"action": "heartbeat", "now": 1, "request": {"broker_id": 1, "broker_epoch": 0,
                                                            "current_metadata_offset": 8, "want_fence": False,
                                                            "want_shut_down": False}}
PLAIN = {"format": "1.0", "component": "broker", "initial": {"standard": "broker/running-cluster"},
         "steps": [{"input": HEARTBEAT, "output": {"response": {"error": "NONE", "is_fenced": False}}}]}


def generated_lines(seed: int) -> list[bytes]:
    """Seeded raft and broker simulations: messages, records, responses and post-states of every kind."""
    traces = list(generate_raft_sim(seed, 6, 80, None)) + list(generate_sim(seed, 6, 80))
    return [jsonl.dumps(trace).encode() for trace in traces]


@pytest.mark.parametrize("seed", [SEED, SEED + 1])
def test_every_sight_of_a_generated_trace_decodes_as_the_checked_decoder(seed: int) -> None:
    lines = generated_lines(seed)
    for sight in range(3):  # first sight (nothing kept), second (kept), third (from the memos)
        for number, line in enumerate(lines):
            checked = jsonl.parse_line_checked(line)
            assert fastdecode.trace(line) == checked, f"seed {seed}, line {number}, sight {sight}"
            row = parquet.to_row(checked)
            assert parquet._from_row_memoized(row) == checked, f"seed {seed}, row {number}, sight {sight}"


def test_a_part_is_kept_from_its_second_sight_on() -> None:
    line = json.dumps({**PLAIN, "steps": [{"input": {**HEARTBEAT, "now": 987654}}]}).encode()
    key = ("broker", json.dumps({**HEARTBEAT, "now": 987654}).encode())
    fastdecode._INPUTS.pop(key, None)
    fastdecode._INPUTS.seen.pop(key, None)
    fastdecode.trace(line)
    assert key not in fastdecode._INPUTS and key in fastdecode._INPUTS.seen
    first = fastdecode.trace(line)
    assert fastdecode._INPUTS[key][1] is first.steps[0].input
    assert fastdecode.trace(line).steps[0].input is first.steps[0].input


SPELLINGS = [
    json.dumps(PLAIN, indent=1),  # whitespace everywhere
    json.dumps(PLAIN) + "\r\n",
    json.dumps({**PLAIN, "id": None, "meta": None, "view": None}),
    json.dumps({**PLAIN, "meta": {}, "steps": [{**PLAIN["steps"][0], "post": None}]}),
    json.dumps({**PLAIN, "steps": [{"input": HEARTBEAT, "output": None}]}),
    json.dumps({**PLAIN, "steps": [{"input": HEARTBEAT, "output": {"response": None, "records": None}}]}),
    json.dumps({**PLAIN, "steps": [{"input": HEARTBEAT, "output": {"records": []}, "post": {}}]}),
    json.dumps(PLAIN).replace('"format": "1.0"', '"format": "9.9", "format": "1.0"'),  # the last of a repeated key
    json.dumps(PLAIN).replace('{"input": {', '{"input": {"now": 5}, "input": {'),
    json.dumps(PLAIN).replace('"now": 1', '"now": 1, "now": 2'),
    json.dumps({**PLAIN, "meta": {"walk": [1, {"a": None}]}, "id": "t\u00e9\u2028"}),
]


@pytest.mark.parametrize("text", SPELLINGS)
def test_plain_spellings_take_the_fast_path_and_read_as_json_reads_them(text: str) -> None:
    line = text.encode()
    for _ in range(3):
        assert fastdecode.trace(line) == jsonl.parse_line_checked(line)


BAD = [
    json.dumps(PLAIN).replace('"now": 1', '"now": true'),
    json.dumps(PLAIN).replace('"now": 1', '"now": 1.0'),
    json.dumps(PLAIN).replace('"now": 1', '"now": "\\ud800"'),
    json.dumps(PLAIN).replace('"broker_id": 1', '"broker_id": 1, "typo": 2'),
    json.dumps({**PLAIN, "steps": [{"input": HEARTBEAT, "output": {"response": [1]}}]}),
    json.dumps({**PLAIN, "steps": [{"input": HEARTBEAT, "output": {"records": [{"type": "FenceBrokerRecord"}]}}]}),
    json.dumps({**PLAIN, "steps": [{"input": HEARTBEAT, "post": 3}]}),
    json.dumps({**PLAIN, "steps": None}),
    json.dumps({**PLAIN, "meta": [1]}),
    json.dumps({**PLAIN, "id": 7}),
    json.dumps({**PLAIN, "format": "2.0"}),
    json.dumps({**PLAIN, "initial": None}),
    json.dumps({**PLAIN, "view": {"records": ["NoSuchRecord"]}}),
    json.dumps(PLAIN) + " x",
]


@pytest.mark.parametrize("text", BAD)
def test_a_bad_line_fails_with_the_checked_decoders_message_whatever_the_memos_hold(text: str) -> None:
    plain = json.dumps(PLAIN).encode()
    for _ in range(2):  # the plain line's parts seen twice: kept in the memos
        jsonl.parse_line(plain)
    with pytest.raises(TraceError) as checked:
        jsonl.parse_line_checked(text.encode())
    with pytest.raises(TraceError) as fast:
        jsonl.parse_line(text.encode())
    assert str(fast.value) == str(checked.value)


def test_invalid_utf8_inside_a_part_is_refused_even_beside_kept_parts() -> None:
    plain = json.dumps(PLAIN).encode()
    for _ in range(2):
        jsonl.parse_line(plain)
    broken = plain.replace(b'"error": "NONE"', b'"error": "NO\xffNE"')
    with pytest.raises(TraceError) as fast:
        jsonl.parse_line(broken)
    assert "not UTF-8" in str(fast.value)


def test_a_row_group_read_column_by_column_decodes_as_its_rows_do(tmp_path: Path) -> None:
    traces = [jsonl.parse_line_checked(line) for line in generated_lines(SEED)]
    path = tmp_path / "set.parquet"
    parquet.write_parquet(path, traces, batch_size=5)
    file = pq.ParquetFile(path)
    rows = [row for group in range(file.num_row_groups)
            for row in parquet.row_group_rows(file, group, 0, file.metadata.row_group(group).num_rows)]
    rows[7]["steps"][1]["input"] = '{"request": 1'  # unreadable: the row's own conversion and the checked decoder
    rows[8]["steps"][0]["records"] = [{"offset": 3, "type": "NoSuchRecord", "fields": "{}"}]
    bad = tmp_path / "bad.parquet"
    pq.write_table(pa.Table.from_pylist(rows, schema=parquet.SCHEMA), bad, row_group_size=5)
    for _ in range(2):  # first sight, then from the memos
        read = [item for _, _, item in parquet.read_parquet(bad)]
        assert read[:7] + read[9:] == traces[:7] + traces[9:]
        for number in (7, 8):
            with pytest.raises(TraceError) as checked:
                parquet._from_row_checked(rows[number])
            assert isinstance(read[number], TraceError) and str(read[number]) == str(checked.value)


def _checked_input(obj: Any) -> Any:
    """What the checked decoder makes of one raft input: (action, arguments), or "refused"."""
    try:
        return obj["action"], dict(RAFT.decode_input(obj["action"], obj, "input"))
    except (TraceError, KeyError, TypeError):
        return "refused"


def _dropped(value: Any) -> Any:
    """``value`` with one key of one of its objects dropped, each in turn (``perturbed`` drops only the first)."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield {k: v for k, v in value.items() if k != key}
            for other in _dropped(item):
                yield {**value, key: other}
    elif isinstance(value, list):
        for i, item in enumerate(value):
            for other in _dropped(item):
                yield [*value[:i], other, *value[i + 1:]]


def _typed_input(text: bytes) -> Any:
    try:
        action, arguments = raft_typed.decode_input(text)
    except Exception:  # noqa: BLE001 - any doubt: the checked decoder decides
        return "refused"
    return action, dict(arguments)


@pytest.mark.parametrize("seed", [SEED, SEED + 2])
def test_raft_inputs_read_by_msgspec_are_read_as_the_checked_decoder_reads_them(seed: int) -> None:
    """Every raft input of a simulation, and every perturbation of it (a scalar of another JSON type, a field
    dropped or added, an array shortened or lengthened), is either left to the checked decoder or read by the typed
    decoding exactly as the checked decoder reads it; never accepted where the checked decoder refuses."""
    inputs = [json.loads(jsonl.dumps(trace))["steps"] for trace in generate_raft_sim(seed, 4, 60, None)]
    read = 0
    for number, given in enumerate(step["input"] for steps in inputs for step in steps):
        for variant in (given, *perturbed(given), *_dropped(given)):
            typed = _typed_input(json.dumps(variant).encode())
            if typed != "refused":
                read += 1
                assert typed == _checked_input(json.loads(json.dumps(variant))), \
                    f"seed {seed}, input {number}: {json.dumps(variant)}"
    assert read > len(inputs)  # the typed decoding reads most plain inputs
