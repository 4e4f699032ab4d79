"""The ``kraftspec`` command as a user runs it: clear messages and exit codes, never a Python traceback."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

TLA = Path(__file__).parent / "tla"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kraftspec.cli", *args], capture_output=True, text=True, timeout=300)


def test_a_spec_that_does_not_parse_names_the_file_and_line() -> None:
    result = run("tlc", "--module", str(TLA / "SyntaxError.tla"))
    assert result.returncode == 2
    assert "SyntaxError.tla" in result.stdout and "line 6, column 20" in result.stdout
    assert "Traceback" not in result.stdout + result.stderr


def test_a_violation_prints_the_error_trace_with_action_names() -> None:
    result = run("tlc", "--module", str(TLA / "Election.tla"))
    assert result.returncode == 1
    assert "invariant_violated" in result.stdout and "violated: EpochBelowTwo" in result.stdout
    assert "1. initial state" in result.stdout and "3. Elect" in result.stdout
    assert "/\\ epoch = 2" in result.stdout


def test_a_timeout_is_reported_not_raised() -> None:
    result = run("tlc", "--module", str(TLA / "Unbounded.tla"), "--timeout", "3")
    assert result.returncode == 2
    assert "within 3 s" in result.stdout and "Traceback" not in result.stdout + result.stderr


def test_a_bad_config_names_the_missing_invariant() -> None:
    result = run("tlc", "--module", str(TLA / "Counter.tla"), "--config", str(TLA / "MissingInvariant.cfg"))
    assert result.returncode == 2 and "NoSuchInvariant" in result.stdout


def test_an_unknown_component_lists_the_known_ones() -> None:
    result = run("agree", "nosuch")
    from kraftspec.spec.agree import COMPONENTS

    assert result.returncode == 2 and f"known: {', '.join(sorted(COMPONENTS))}\n" in result.stderr
    assert "Traceback" not in result.stderr


def test_broker_spec_model_checks_clean() -> None:
    result = run("tlc", "broker")
    assert result.returncode == 0, result.stdout
    assert "TLC BrokerLifecycle: ok, 16342 distinct states" in result.stdout


def test_a_mutant_named_in_the_environment_reaches_the_command() -> None:
    import os
    env = {**os.environ, "KRAFTSPEC_MUTANT": "broker-session-expiry-inclusive"}
    result = subprocess.run([sys.executable, "-m", "kraftspec.cli", "prove", "broker", "--per-condition-timeout", "3"],
                            capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == 1 and "broker.session_expired: refuted" in result.stdout, result.stdout


def test_a_reader_that_goes_away_ends_the_command_quietly() -> None:
    """`kraftspec table describe-cluster | head -1`: no traceback once the pipe's reader has closed it."""
    read, write = os.pipe()
    os.close(read)  # every write now fails with EPIPE
    try:
        done = subprocess.run([sys.executable, "-m", "kraftspec.cli", "table", "describe-cluster"], stdout=write,
                              stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write)
    assert done.stderr == ""
    assert done.returncode == 2


def test_the_main_job_replays_the_bundled_traces_and_shows_a_divergence_in_full(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kraftspec import main_job, traces

    bundled = Path(traces.__file__).parent / "tla" / "broker.jsonl.gz"
    lines = gzip.decompress(bundled.read_bytes()).decode().splitlines()[:3]
    wrong = json.loads(lines[1])
    step = next(s for s in wrong["steps"] if s.get("post"))
    step["post"] = {**step["post"], "next_offset": -7}
    (tmp_path / "tla").mkdir()
    (tmp_path / "tla" / "broker.jsonl.gz").write_bytes(gzip.compress("\n".join([lines[0], json.dumps(wrong)]).encode()))
    [(_, status, _)] = main_job.traces_job()
    assert status == 0  # the real bundle
    monkeypatch.setattr(traces, "__file__", str(tmp_path / "__init__.py"))
    [(section, status, out)] = main_job.traces_job()
    assert section == main_job.TRACES and status != 0
    assert "checked 2 traces from 1 file(s): 1 conformant, 1 divergent" in out and "post.next_offset" in out
    assert out.count(": conformant (") == 0
