"""Test vectors for other implementations (``kraftspec vectors``), all four components, and the consumer-side check."""

from __future__ import annotations

import gzip
import hashlib
import io
import itertools
import json
from pathlib import Path

import jsonschema
import pytest

from kraftspec import traces
from kraftspec.cli import main as cli_main
from kraftspec.reference import broker
from kraftspec.rulebook import entries
from kraftspec.traces.replay import broker as broker_replay
from kraftspec.traces.format.broker import BROKER
from kraftspec.traces.format.envelope import Trace, trace_from_json
from kraftspec.traces.format.jsonl import read_jsonl
from kraftspec.traces.replay.vectors import (FILES, MANIFEST, README, Sourced, cases, export, state_json, vectors_command,
                                      verify)

BUNDLED = Path(traces.__file__).parent / "tla"
COMPONENTS = ("broker", "partition", "controller", "raft")


def bundled(component: str, count: int) -> list[Sourced]:
    source = BUNDLED / f"{component}.jsonl.gz"
    return [(str(source), line, item) for line, item in itertools.islice(read_jsonl(source), count)
            if isinstance(item, Trace)]


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    folder = tmp_path_factory.mktemp("vectors") / "out"
    sources = [item for component in COMPONENTS for item in bundled(component, 15)]
    return folder, export(folder, sources, source="first 15 bundled traces of each component")


def case_dirs(folder: Path) -> list[Path]:
    return sorted(p for p in folder.glob("*/*/*") if p.is_dir() and p.parts[-3] != "schemas")


def test_every_component_one_folder_per_case_named_after_the_rule_and_the_trace_step(exported) -> None:
    folder, manifest = exported
    listed = {entry["path"]: entry["sha256"] for entry in manifest["files"]}
    dirs = case_dirs(folder)
    assert len(dirs) == manifest["cases"] == sum(manifest["per_rule"].values()) > 0
    assert {d.parts[-3] for d in dirs} == set(COMPONENTS)
    assert {d.parent.name for d in dirs} <= set(entries()), "a rule folder the rule book does not explain"
    ids = {t.id for c in COMPONENTS for _, _, t in bundled(c, 15)}
    for case in dirs:
        trace_id, _, step = case.name.rpartition("-step")
        assert trace_id in ids and step.isdigit(), case.name
        assert sorted(f.name for f in case.iterdir()) == sorted(FILES)
        for name in FILES:
            path = (case / name).relative_to(folder).as_posix()
            assert listed[path] == hashlib.sha256((case / name).read_bytes()).hexdigest()
    assert json.loads((folder / MANIFEST).read_text()) == manifest


def test_the_folder_describes_itself_readme_and_a_schema_per_file_kind(exported) -> None:
    folder, manifest = exported
    readme = (folder / README).read_text()
    for sentinel in ("-2 leaves the leader unchanged", "1 fences the broker, -1 unfences it, 0 leaves it unchanged",
                     "null leaves the list unchanged", "kraftspec explain RULE", "TRACE-stepN"):
        assert sentinel in readme
    for key, count in manifest["per_rule"].items():
        summary = entries()[key.split("/", 1)[1]].summary
        assert f"* `{key}`: {count} cases. {summary}" in readme
    documents = {entry["path"] for entry in manifest["documents"]}
    validators: dict[str, jsonschema.Draft202012Validator] = {}
    for case in case_dirs(folder):
        for name in FILES:
            schema_path = f"schemas/{case.parts[-3]}/{name.removesuffix('.json')}.schema.json"
            assert schema_path in documents
            if schema_path not in validators:
                schema = json.loads((folder / schema_path).read_text())
                jsonschema.Draft202012Validator.check_schema(schema)
                validators[schema_path] = jsonschema.Draft202012Validator(schema)
            validators[schema_path].validate(json.loads((case / name).read_text()))
    first = case_dirs(folder)[0]
    broken = json.loads((first / "expected.json").read_text()) | {"surprise": 1}
    with pytest.raises(jsonschema.ValidationError):
        validators[f"schemas/{first.parts[-3]}/expected.schema.json"].validate(broken)


def test_steps_met_twice_are_one_case() -> None:
    trace = bundled("raft", 1)[0]
    assert len(list(cases([trace, trace]))) == len(list(cases([trace])))


def test_every_broker_case_replays_from_its_explicit_pre_state(exported) -> None:
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
    from kraftspec.traces.format.values import from_json

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
                              for k, v in fields["partitions"].items()}),
        controller_features=FrozenMap({name: tuple(span) for name, span in fields["controller_features"].items()}),
        min_insync_configs=FrozenMap(fields["min_insync_configs"]))


def test_raft_pre_state_states_the_role(exported) -> None:
    folder, _ = exported
    roles = {json.loads((case / "pre.json").read_text())["state"]["role"] for case in folder.glob("raft/*/*")}
    assert roles and roles <= {"Unattached", "Prospective", "Candidate", "Leader", "Follower", "Resigned"}


def test_verify_reports_unread_files_and_wrong_hashes_per_rule(exported, tmp_path: Path) -> None:
    folder, manifest = exported
    paths = [entry["path"] for entry in manifest["files"]]
    log = tmp_path / "read.log"
    log.write_text("\n".join([str(folder / p) for p in paths[:-2]] + [paths[-2]]) + "\n")  # absolute and relative
    report = verify(folder, log)
    assert report.unread == [paths[-1]] and not report.mismatched and not report.missing and not report.unlisted
    log.write_text("\n".join(paths) + "\n")
    assert verify(folder, log).ok
    tampered = folder / paths[0]
    original = tampered.read_bytes()
    try:
        tampered.write_bytes(original.replace(b"1", b"2", 1))
        out = io.StringIO()
        assert vectors_command(str(folder), [], str(log), out=out) == 1
        assert f"mismatched: {folder / paths[0]}" in out.getvalue()
        rule = "/".join(Path(paths[0]).parts[:2])
        assert f"rule {rule}: " in out.getvalue() and "1 with a wrong sha256" in out.getvalue()
    finally:
        tampered.write_bytes(original)


def test_verify_keeps_the_rules_an_implementation_covers(exported, tmp_path: Path) -> None:
    folder, manifest = exported
    votes = [e["path"] for e in manifest["files"] if e["path"].startswith("raft/raft._handle_vote_")]
    assert votes
    log = tmp_path / "read.log"
    log.write_text("\n".join(votes) + "\n")
    out = io.StringIO()
    assert vectors_command(str(folder), [], str(log), out=out, rules=["raft._handle_vote_*"]) == 0, out.getvalue()
    assert "never read" in out.getvalue() and "rule raft/raft._handle_vote_" in out.getvalue()
    assert "rule broker/" not in out.getvalue()
    assert vectors_command(str(folder), [], str(log), out=io.StringIO()) == 1  # without the filter: the rest unread


def test_a_read_log_matching_nothing_is_warned_about(exported, tmp_path: Path) -> None:
    folder, _ = exported
    log = tmp_path / "read.log"
    log.write_text("elsewhere/broker/x/pre.json\n")
    out = io.StringIO()
    assert vectors_command(str(folder), [], str(log), out=out) == 1
    assert "warning: no line of" in out.getvalue()


def _lines(component: str, count: int) -> list[str]:
    with gzip.open(BUNDLED / f"{component}.jsonl.gz", "rt") as lines:
        return list(itertools.islice(lines, count))


def test_the_command_exports_every_component_from_one_mixed_file(tmp_path: Path) -> None:
    source = tmp_path / "mixed.jsonl"
    source.write_text("".join(_lines(c, 2)[1] for c in COMPONENTS))
    out = io.StringIO()
    assert vectors_command(str(tmp_path / "out"), [str(source)], None, out=out) == 0, out.getvalue()
    assert {p.name for p in (tmp_path / "out").iterdir()} == {*COMPONENTS, "schemas", README, MANIFEST}


def test_bad_input_writes_nothing_and_names_file_and_line(tmp_path: Path) -> None:
    good = tmp_path / "good.jsonl"
    good.write_text(_lines("broker", 1)[0])
    assert vectors_command(str(tmp_path / "out"), [str(good)], None, out=io.StringIO()) == 0
    before = {p: p.read_bytes() for p in (tmp_path / "out").rglob("*") if p.is_file()}
    bad = tmp_path / "bad.jsonl"
    bad.write_text(_lines("partition", 1)[0] + "{truncated\n")
    refused = tmp_path / "refused.jsonl"
    refused.write_text(json.dumps({"format": "1.0", "component": "controller", "id": "no-pending",
                                   "initial": {"standard": "controller/new-process"},
                                   "steps": [{"input": {"action": "on_response", "error": "NONE"}}]}) + "\n")
    for sources, message in (([str(bad)], f"{bad}: line 2: invalid JSON"),
                             ([str(tmp_path / "absent.jsonl")], "absent.jsonl: no such file"),
                             ([str(refused)], f"{refused}: line 1: steps[0] (on_response): refused by the reference")):
        for target in ("out", "new"):
            out = io.StringIO()
            assert vectors_command(str(tmp_path / target), sources, None, out=out) == 2
            assert message in out.getvalue() and "nothing written" in out.getvalue()
    assert not (tmp_path / "new").exists()
    assert {p: p.read_bytes() for p in (tmp_path / "out").rglob("*") if p.is_file()} == before  # the old one intact
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")], "a temporary folder was left behind"


def test_a_folder_that_is_not_a_vectors_folder_is_never_replaced(tmp_path: Path) -> None:
    good = tmp_path / "good.jsonl"
    good.write_text(_lines("broker", 1)[0])
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "precious.txt").write_text("keep me")
    out = io.StringIO()
    assert vectors_command(str(tmp_path / "data"), [str(good)], None, out=out) == 2
    assert "not replaced" in out.getvalue() and (tmp_path / "data" / "precious.txt").read_text() == "keep me"


def test_cli_refuses_read_log_without_verify_and_unknown_rules(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    log = tmp_path / "read.log"
    log.write_text("x\n")
    assert cli_main(["vectors", str(tmp_path / "out"), "--read-log", str(log)]) == 2
    assert "--read-log is for --verify" in capsys.readouterr().err and not (tmp_path / "out").exists()
    assert cli_main(["vectors", str(tmp_path / "out"), "--rule", "hartbeat"]) == 2
    assert "close: broker.heartbeat" in capsys.readouterr().out and not (tmp_path / "out").exists()
    assert cli_main(["vectors", "--verify", str(tmp_path / "nowhere"), "--read-log", str(log)]) == 2
    assert "no such file" in capsys.readouterr().out


def test_two_traces_with_one_id_get_distinct_case_names(tmp_path: Path) -> None:
    first, second = (json.loads(line) | {"id": "same"} for line in _lines("broker", 2))
    (tmp_path / "a.jsonl").write_text(json.dumps(first) + "\n")
    (tmp_path / "b.jsonl").write_text(json.dumps(second) + "\n")
    assert vectors_command(str(tmp_path / "out"), [str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl")], None,
                           out=io.StringIO()) == 0
    labels = {case.name.rpartition("-step")[0] for case in case_dirs(tmp_path / "out")}
    assert labels == {"same", "same-2"}


def test_a_file_the_manifest_does_not_list_is_reported(exported, tmp_path: Path) -> None:
    folder, manifest = exported
    log = tmp_path / "read.log"
    log.write_text("\n".join(entry["path"] for entry in manifest["files"]) + "\n")
    stray = folder / "broker" / "stray.json"
    stray.write_text("{}\n")
    try:
        assert verify(folder, log).unlisted == ["broker/stray.json"]
    finally:
        stray.unlink()
    assert verify(folder, log).ok


def test_a_rule_name_with_a_control_character_is_escaped_in_the_per_rule_summary(tmp_path: Path) -> None:
    """Found by the 1,000,000-input fuzz run (vectors-verify, seed 20261126, input 14599): a manifest listing a file
    under a rule folder named with DEL printed that character in its ``rule ...:`` summary line."""
    folder = tmp_path / "vectors"
    folder.mkdir()
    path = "broker/bro\x7fker.heartbeat/case-step0/pre.json"
    (folder / MANIFEST).write_text(json.dumps({"format": "kraftspec-vectors/2", "files": [
        {"path": path, "sha256": "0" * 64}]}))
    log = tmp_path / "read.log"
    log.write_text(path + "\n")
    out = io.StringIO()
    vectors_command(str(folder), [], str(log), out=out)
    assert "rule broker/bro\\x7fker.heartbeat: " in out.getvalue(), out.getvalue()
    assert not any(ord(c) < 32 and c != "\n" or ord(c) == 0x7f for c in out.getvalue())
