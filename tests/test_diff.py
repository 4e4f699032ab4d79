"""``kraftspec diff``: CrossHair's diffbehavior between a user's function and a reference rule."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from kraftspec.diff import EXIT_ERROR, EXIT_FINDING, EXIT_OK, diff_command, list_command, load_user, preconditions, \
    search
from kraftspec.reference import broker_rules

USER_RULES = '''
def expired(contact_time: int, now: int, session_timeout: int) -> bool:
    """Deliberately wrong: expires at contact + timeout instead of strictly after it."""
    return contact_time + session_timeout <= now


def equal(contact_time: int, now: int, session_timeout: int) -> bool:
    """The same rule written differently."""
    return now > contact_time and now - session_timeout > contact_time


def off_domain(contact_time: int, now: int, session_timeout: int) -> bool:
    """Differs from the rule only for a negative timeout, which no contract of the rule admits."""
    return now > contact_time + session_timeout


def twice_wrong(contact_time: int, now: int, session_timeout: int) -> bool:
    """Wrong at the boundary (expires one tick early), and never expires a session longer than 100."""
    if session_timeout > 100:
        return False
    return now >= contact_time + session_timeout and now > contact_time
'''


@pytest.fixture
def user_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    module = f"user_rules_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{module}.py").write_text(USER_RULES)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path / f"{module}.py"


def run_pytest(folder: Path, source: str) -> int:
    (folder / "test_generated.py").write_text(source)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_generated.py"],
                          cwd=folder, capture_output=True, text=True).returncode


def test_a_wrong_function_gets_a_counterexample_as_a_test_that_fails_on_it_and_passes_on_the_rule(
        user_module: Path) -> None:
    out = io.StringIO()
    assert diff_command(f"{user_module.stem}:expired", "broker_rules.session_expired", out=out) == EXIT_FINDING
    source = out.getvalue()
    assert "@pytest.mark.parametrize" in source and "session_expired" in source
    folder = user_module.parent
    assert run_pytest(folder, source) == 1  # fails against the wrong function
    against_rule = source.replace(f"from {user_module.stem} import expired",
                                  "from kraftspec.reference.broker_rules import session_expired as expired")
    assert run_pytest(folder, against_rule) == 0  # passes against the reference rule


def test_an_equal_function_has_no_difference_within_the_budget(user_module: Path) -> None:
    out = io.StringIO()
    assert diff_command(f"{user_module.stem}:equal", "kraftspec.reference.broker_rules.session_expired",
                        out=out) == EXIT_OK
    assert "no difference" in out.getvalue() and "within the budget" in out.getvalue()


def test_unknown_functions_and_rules_are_clear_errors(user_module: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert diff_command(f"{user_module.stem}:nothing", "broker_rules.session_expired") == EXIT_ERROR
    assert "has no function 'nothing'" in capsys.readouterr().err
    assert diff_command(f"{user_module.stem}:expired", "broker_rules.nothing") == EXIT_ERROR
    err = capsys.readouterr().err
    assert "has no rule 'nothing'" in err and "session_expired" in err
    assert diff_command(f"{user_module.stem}:expired", "broker_rules.is_caught_up") == EXIT_ERROR
    assert "the parameters differ" in capsys.readouterr().err


def test_a_difference_outside_the_rules_domain_is_not_reported(user_module: Path) -> None:
    out = io.StringIO()
    assert diff_command(f"{user_module.stem}:off_domain", "broker_rules.session_expired", out=out) == EXIT_OK
    assert "within the rule's domain (session_timeout >= 0)" in out.getvalue()
    _, _, user = load_user(f"{user_module.stem}:off_domain")
    unbounded = search(user, broker_rules.session_expired)  # the same search without the contract's precondition
    assert [d.args["session_timeout"].startswith("-") for d in unbounded.differences] == [True]


def test_every_difference_found_is_reported_not_only_the_first(user_module: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    _, _, user = load_user(f"{user_module.stem}:twice_wrong")
    domain = tuple(preconditions(broker_rules.__name__, "session_expired"))
    report = search(user, broker_rules.session_expired, domain=domain)
    outcomes = {(d.user, d.rule) for d in report.differences}
    assert {("returns True", "returns False"), ("returns False", "returns True")} <= outcomes
    assert all(int(d.args["session_timeout"]) >= 0 for d in report.differences)
    out = io.StringIO()
    assert diff_command(f"{user_module.stem}:twice_wrong", "broker_rules.session_expired", out=out) == EXIT_FINDING
    found = int(capsys.readouterr().err.split("# ")[1].split()[0])  # "# N difference(s) found in M iterations"
    assert out.getvalue().count("# twice_wrong returns") == found >= 2  # each one a row of the generated test


def test_list_names_every_comparable_rule_with_its_signature_and_domain() -> None:
    out = io.StringIO()
    assert list_command(out) == EXIT_OK
    text = out.getvalue()
    assert "broker_rules.session_expired(contact_time: int, now: int, session_timeout: int) -> bool\n" \
           "    domain: session_timeout >= 0" in text
    assert "raft_rules.grant_vote(" in text and "storage_rules." in text


def test_diff_without_a_function_is_a_usage_error() -> None:
    done = subprocess.run([sys.executable, "-m", "kraftspec.cli", "diff"], capture_output=True, text=True)
    assert done.returncode == EXIT_ERROR and "--list" in done.stderr
