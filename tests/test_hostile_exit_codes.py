"""The exit-code table of every command (README "Exit codes"): 0 all good, 1 a finding, 2 an error or bad input,
each with a message and never a Python traceback. Each row runs the command as a user does."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Callable

import pytest

from kraftspec.traces.format import parquet
from kraftspec.traces.recording import raft_simulate
from kraftspec.traces.format.envelope import Trace, trace_from_json
from kraftspec.traces.format.jsonl import dumps, write_jsonl
from kraftspec.traces.metalog.corpus import data_dirs
from kraftspec.traces.metalog.plant import copy_tree
from kraftspec.traces.recording.broker_simulate import generate_sim

TLA = Path(parquet.__file__).parents[1] / "tla"


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kraftspec.cli", *args], capture_output=True, text=True, timeout=600,
                          cwd=cwd)


def clean_dir(tmp: Path) -> str:
    return str(data_dirs()[0])


def planted_dir(tmp: Path) -> str:
    """A corpus directory with one violation: a leader-epoch-checkpoint that does not match the log."""
    data = copy_tree(data_dirs()[0], tmp / "planted")
    (data / "__cluster_metadata-0" / "leader-epoch-checkpoint").write_text("0\n1\n99 0\n")  # checkpoint vs log
    return str(data)


def unreadable_dir(tmp: Path) -> str:
    data = copy_tree(data_dirs()[0], tmp / "broken")
    log = sorted((data / "__cluster_metadata-0").glob("*.log"))[0]
    raw = bytearray(log.read_bytes())
    raw[200] ^= 0xFF
    log.write_bytes(bytes(raw))
    return str(data)


def both_dir(tmp: Path) -> str:
    """A violation in one directory and an unreadable file in another: 2 wins over 1."""
    planted_dir(tmp)
    unreadable_dir(tmp)
    return str(tmp)


def conformant_traces(tmp: Path) -> str:
    path = tmp / "ok.jsonl"
    write_jsonl(path, generate_sim(1, 3, 8))
    return str(path)


def divergent_trace() -> Trace:
    """A raft trace whose first post-state states a log end the node does not have: a divergence at step 0."""
    obj = json.loads(dumps(raft_simulate.simulate_one(0, 0, 10)))
    post = obj["steps"][0]["post"]
    post["log_end_offset"] += 1
    return trace_from_json(obj)


def divergent_traces(tmp: Path) -> str:
    path = tmp / "bad.jsonl"
    write_jsonl(path, [divergent_trace()])
    return str(path)


def unreadable_traces(tmp: Path) -> str:
    path = tmp / "deep.jsonl"
    path.write_text("[" * 5000 + "]" * 5000 + "\n")
    return str(path)


def conformant_parquet(tmp: Path) -> str:
    path = tmp / "ok.parquet"
    parquet.write_parquet(path, generate_sim(2, 3, 8))
    return str(path)


def divergent_parquet(tmp: Path) -> str:
    path = tmp / "bad.parquet"
    parquet.write_parquet(path, [divergent_trace()])
    return str(path)


def unreadable_parquet(tmp: Path) -> str:
    path = tmp / "bad.parquet"
    path.write_bytes(b"PAR1 not parquet")
    return str(path)


def vectors_folder(tmp: Path, read_all: bool, manifest: object = None) -> tuple[str, str]:
    folder = tmp / "vectors"
    assert run("vectors", str(folder), "--from", conformant_traces(tmp), cwd=tmp).returncode == 0
    names = [e["path"] for e in json.loads((folder / "manifest.json").read_text())["files"]]
    if manifest is not None:
        (folder / "manifest.json").write_text(json.dumps(manifest))
    log = tmp / "read.log"
    log.write_text("\n".join(names if read_all else names[:1]) + "\n")
    return str(folder), str(log)


Case = tuple[str, Callable[[Path], list[str]], int]
TABLE: list[Case] = [
    ("audit: clean logs", lambda t: ["audit", clean_dir(t)], 0),
    ("audit: a violation", lambda t: ["audit", planted_dir(t)], 1),
    ("audit: an unreadable file", lambda t: ["audit", unreadable_dir(t)], 2),
    ("audit: both, 2 wins", lambda t: ["audit", both_dir(t)], 2),
    ("audit: no such path", lambda t: ["audit", str(t / "missing")], 2),
    ("check: conformant", lambda t: ["check", conformant_traces(t)], 0),
    ("check: a divergence", lambda t: ["check", divergent_traces(t)], 1),
    ("check: an unreadable trace", lambda t: ["check", unreadable_traces(t)], 2),
    ("check: divergence and unreadable, 2 wins", lambda t: ["check", divergent_traces(t), unreadable_traces(t)], 2),
    ("validate: conformant", lambda t: ["validate", "--engine", "local", "--report", str(t / "r.parquet"),
                                        conformant_parquet(t)], 0),
    ("validate: a divergence", lambda t: ["validate", "--engine", "local", "--report", str(t / "r.parquet"),
                                          divergent_parquet(t)], 1),
    ("validate: an unreadable file", lambda t: ["validate", "--engine", "local", "--report", str(t / "r.parquet"),
                                                unreadable_parquet(t)], 2),
    ("validate --audit: clean", lambda t: ["validate", "--audit", "--engine", "local", "--report",
                                           str(t / "r.parquet"), clean_dir(t)], 0),
    ("validate --audit: a violation", lambda t: ["validate", "--audit", "--engine", "local", "--report",
                                                 str(t / "r.parquet"), planted_dir(t)], 1),
    ("validate --audit: unreadable", lambda t: ["validate", "--audit", "--engine", "local", "--report",
                                                str(t / "r.parquet"), unreadable_dir(t)], 2),
    ("vectors: exported", lambda t: ["vectors", str(t / "v"), "--from", conformant_traces(t)], 0),
    ("vectors: an unreadable trace", lambda t: ["vectors", str(t / "v"), "--from", unreadable_traces(t)], 2),
    ("vectors --verify: all read", lambda t: ["vectors", "--verify", *_verify(t, True)], 0),
    ("vectors --verify: a file never read", lambda t: ["vectors", "--verify", *_verify(t, False)], 1),
    ("vectors --verify: manifest without files", lambda t: ["vectors", "--verify",
                                                            *_verify(t, True, {"format": "kraftspec-vectors/2"})], 2),
    ("vectors --verify: no read log", lambda t: ["vectors", "--verify", str(t)], 2),
    ("vectors: --read-log without --verify", lambda t: ["vectors", str(t / "v"), "--read-log", str(t)], 2),
    ("vectors: a --rule matching no rule", lambda t: ["vectors", str(t / "v"), "--rule", "nosuch"], 2),
    ("explain: printed", lambda t: ["explain", "broker.heartbeat"], 0),
    ("explain: an unknown rule", lambda t: ["explain", "nosuch"], 2),
    ("generate: bad output name", lambda t: ["generate", "sim", "--traces", "1", "--out", str(t / "x.txt")], 2),
    ("generate: written", lambda t: ["generate", "sim", "--traces", "1", "--out", str(t / "x.jsonl")], 0),
    ("prove: unknown component", lambda t: ["prove", "nosuch"], 2),
    ("agree: unknown component", lambda t: ["agree", "nosuch"], 2),
    ("tlc: unknown component", lambda t: ["tlc", "nosuch"], 2),
    ("diff: a function that does not import", lambda t: ["diff", "nosuch_module:f", "broker_rules.session_expired"], 2),
    ("table", lambda t: ["table", "describe-cluster"], 0),
    ("mutants", lambda t: ["mutants"], 0),
    ("usage error", lambda t: ["audit", "--no-such-option"], 2),
]


def _verify(tmp: Path, read_all: bool, manifest: object = None) -> list[str]:
    folder, log = vectors_folder(tmp, read_all, manifest)
    return [folder, "--read-log", log]


@pytest.mark.parametrize("name, arguments, expected", TABLE, ids=[case[0] for case in TABLE])
def test_exit_code_table(tmp_path: Path, name: str, arguments: Callable[[Path], list[str]], expected: int) -> None:
    done = run(*arguments(tmp_path), cwd=tmp_path)
    assert done.returncode == expected, f"{name}: exit {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    assert "Traceback" not in done.stdout + done.stderr
    if expected == 2:
        assert (done.stdout + done.stderr).strip(), "an error always has a message"


def test_an_internal_error_is_exit_2_with_a_message_not_a_traceback(tmp_path: Path) -> None:
    """A defect on some input (simulated: the audit module made to raise) is an error, never the finding code."""
    script = ("import sys; import kraftspec.traces.metalog.audit as a\n"
              "def boom(*args, **kwargs): raise ZeroDivisionError('planted')\n"
              "a.audit_command = boom\n"
              "from kraftspec.cli import main; sys.exit(main(['audit', '.']))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 2 and "internal error: ZeroDivisionError: planted" in done.stderr
    assert "Traceback" not in done.stderr
