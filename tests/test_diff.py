"""``kraftspec diff``: CrossHair's diffbehavior between a user's function and a reference rule."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from kraftspec.diff import EXIT_ERROR, EXIT_FINDING, EXIT_OK, diff_command

USER_RULES = '''
def expired(contact_time: int, now: int, session_timeout: int) -> bool:
    """Deliberately wrong: expires at contact + timeout instead of strictly after it."""
    return contact_time + session_timeout <= now


def equal(contact_time: int, now: int, session_timeout: int) -> bool:
    """The same rule written differently."""
    return now > contact_time and now - session_timeout > contact_time
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
