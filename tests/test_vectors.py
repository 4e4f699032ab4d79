"""Test vectors for other implementations (``kraftspec vectors``) and the consumer-side check."""

from __future__ import annotations

import gzip
import hashlib
import io
import itertools
import json
from pathlib import Path

import pytest

from kraftspec import traces
from kraftspec.reference import broker
from kraftspec.traces import broker_replay
from kraftspec.traces.broker_trace import BROKER
from kraftspec.traces.format import Trace, trace_from_json
from kraftspec.traces.jsonl import read_jsonl
from kraftspec.traces.vectors import FILES, MANIFEST, cases, export, state_json, vectors_command, verify

BUNDLED = Path(traces.__file__).parent / "tla" / "broker.jsonl.gz"


def bundled(count: int) -> list[Trace]:
    return [item for _, item in itertools.islice(read_jsonl(BUNDLED), count) if isinstance(item, Trace)]


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    folder = tmp_path_factory.mktemp("vectors")
    return folder, export(folder, bundled(40), source="first 40 bundled traces")


def test_one_folder_per_case_grouped_by_component_and_rule_with_every_file_in_the_manifest(exported) -> None:
    folder, manifest = exported
    listed = {entry["path"]: entry["sha256"] for entry in manifest["files"]}
    case_dirs = sorted(p for p in folder.glob("*/*/*") if p.is_dir())
    assert len(case_dirs) == manifest["cases"] == sum(manifest["per_rule"].values()) > 0
    assert {p.parent.name for p in case_dirs} <= {"register_broker", "heartbeat", "fence_stale_broker",
                                                   "unregister_broker", "activate", "advance_clock"}
    for case in case_dirs:
        assert sorted(f.name for f in case.iterdir()) == sorted(FILES)
        for name in FILES:
            path = (case / name).relative_to(folder).as_posix()
            assert listed[path] == hashlib.sha256((case / name).read_bytes()).hexdigest()
    assert json.loads((folder / MANIFEST).read_text()) == manifest


def test_steps_met_twice_are_one_case() -> None:
    trace = bundled(1)[0]
    assert len(list(cases([trace, trace]))) == len(list(cases([trace])))


def test_every_case_replays_from_its_explicit_pre_state(exported) -> None:
    """A consumer's view: rebuild the pre-state from pre.json alone, apply input.json, compare with the rest."""
    folder, _ = exported
    for case in sorted(p for p in folder.glob("broker/*/*") if p.is_dir()):
        pre = json.loads((case / "pre.json").read_text())
        state = rebuild(pre)
        step = trace_from_json({"format": "1.0", "component": "broker", "initial": {"standard": "broker/leaderless"},
                                "steps": [{"input": json.loads((case / "input.json").read_text())}]}).steps[0]
        after, clock, response, written = broker_replay.apply(state, pre["clock"], step)
        expected = json.loads((case / "expected.json").read_text())
        assert {"response": response, "records": [BROKER.encode_record(o, r) for o, r in written]} == expected, case
        assert state_json(after, clock) == json.loads((case / "post.json").read_text()), case


def rebuild(pre: dict) -> broker.ClusterControl:
    """The controller state written in ``pre.json`` (the whole ClusterControl)."""
    from kraftspec.reference.frozen import FrozenMap
    from kraftspec.reference.partition import PartitionRegistration, TopicInfo
    from kraftspec.traces.values import from_json

    fields = dict(pre)
    fields.pop("clock")
    return broker.ClusterControl(
        cluster_id=fields["cluster_id"], finalized_features=FrozenMap(fields["finalized_features"]),
        session_timeout=fields["session_timeout"], behaviour=broker.BEHAVIOURS[fields["behaviour"]["name"]],
        active=fields["active"], next_offset=fields["next_offset"],
        brokers=FrozenMap({int(b): from_json(broker.BrokerRegistration, r, "pre.brokers")
                           for b, r in fields["brokers"].items()}),
        register_offsets=FrozenMap({int(b): o for b, o in fields["register_offsets"].items()}),
        sessions=FrozenMap({tuple(map(int, k.split(":"))): t for k, t in fields["sessions"].items()}),
        heartbeats=FrozenMap({int(b): broker.HeartbeatState(**h) for b, h in fields["heartbeats"].items()}),
        topics=FrozenMap({t: from_json(TopicInfo, v, "pre.topics") for t, v in fields["topics"].items()}),
        partitions=FrozenMap({(k.rsplit(":", 1)[0], int(k.rsplit(":", 1)[1])):
                              from_json(PartitionRegistration, v, "pre.partitions")
                              for k, v in fields["partitions"].items()}))


def test_verify_reports_unread_files_and_wrong_hashes(exported, tmp_path: Path) -> None:
    folder, manifest = exported
    paths = [entry["path"] for entry in manifest["files"]]
    log = tmp_path / "read.log"
    log.write_text("\n".join([str(folder / p) for p in paths[:-2]] + [paths[-2]]) + "\n")  # absolute and relative
    report = verify(folder, log)
    assert report.unread == [paths[-1]] and not report.mismatched and not report.missing
    log.write_text("\n".join(paths) + "\n")
    assert verify(folder, log).ok
    tampered = folder / paths[0]
    original = tampered.read_bytes()
    try:
        tampered.write_bytes(original.replace(b"1", b"2", 1))
        out = io.StringIO()
        assert vectors_command(str(folder), [], str(log), out=out) == 1
        assert f"mismatched: {folder / paths[0]}" in out.getvalue()
        assert "1 with a wrong sha256" in out.getvalue()
    finally:
        tampered.write_bytes(original)


def test_the_command_exports_and_a_missing_manifest_is_an_error(tmp_path: Path) -> None:
    source = tmp_path / "two.jsonl"
    source.write_text("".join(line for line in _lines(2)))
    out = io.StringIO()
    assert vectors_command(str(tmp_path / "out"), [str(source)], None, out=out) == 0
    assert "cases" in out.getvalue() and (tmp_path / "out" / MANIFEST).is_file()
    bad = tmp_path / "bad.jsonl"
    bad.write_text(_lines(1)[0] + "{truncated\n")
    out = io.StringIO()
    assert vectors_command(str(tmp_path / "out2"), [str(bad), str(tmp_path / "absent.jsonl")], None, out=out) == 2
    assert f"{bad}:2: error:" in out.getvalue() and "absent.jsonl: error: no such file" in out.getvalue()
    assert "2 unreadable" in out.getvalue() and (tmp_path / "out2" / MANIFEST).is_file()
    out = io.StringIO()
    assert vectors_command(str(tmp_path / "nowhere"), [], str(source), out=out) == 2
    assert "no such file" in out.getvalue()


def _lines(count: int) -> list[str]:
    with gzip.open(BUNDLED, "rt") as lines:
        return list(itertools.islice(lines, count))
