"""``kraftspec diff MODULE:FUNC RULE``: search for inputs where a user's function and a reference rule disagree.

A thin wrapper over CrossHair's ``diffbehavior`` (symbolic execution): RULE names one of the small
rule functions of ``kraftspec.reference`` (``broker_rules.session_expired``, or fully qualified), the
user's function takes the same parameters. Every input found where the two return different values
(or raise differently) is printed as a ready-to-paste pytest test that compares the user's function
with the reference rule on those inputs: it fails against the user's function and passes against
the rule. No difference within the budget is not a proof, unless CrossHair exhausted every path.
"""

from __future__ import annotations

import importlib
import inspect
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional, TextIO

EXIT_OK, EXIT_FINDING, EXIT_ERROR = 0, 1, 2
REFERENCE = "kraftspec.reference"
_ENUM_REPR = re.compile(r"<(\w+)\.(\w+): [^<>]*>")


class DiffError(Exception):
    """The function or rule cannot be loaded or compared; the message says why."""


@dataclass(frozen=True)
class Difference:
    """Arguments (Python literals by name) where the user's function and the rule behave differently."""

    args: dict[str, str]
    user: str
    rule: str


@dataclass(frozen=True)
class DiffReport:
    """The differences found, CrossHair's iteration count and whether it exhausted every path."""

    differences: list[Difference]
    iterations: int
    exhausted: bool


def load_user(target: str) -> tuple[str, str, Callable[..., Any]]:
    """``MODULE:FUNC`` (the module importable from the current directory) as (module, name, function)."""
    module_name, sep, name = target.partition(":")
    if not sep or not module_name or not name:
        raise DiffError(f"expected MODULE:FUNC (e.g. mypkg.rules:session_expired), got {target!r}")
    if str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise DiffError(f"cannot import {module_name!r}: {exc}") from None
    function = getattr(module, name, None)
    if not inspect.isfunction(function):
        raise DiffError(f"{module_name} has no function {name!r}")
    return module_name, name, function


def load_rule(rule: str) -> tuple[str, str, Callable[..., Any]]:
    """A reference rule by ``module.function`` relative to kraftspec.reference, or fully qualified."""
    qualified = rule if rule.startswith(REFERENCE + ".") else f"{REFERENCE}.{rule}"
    module_name, _, name = qualified.rpartition(".")
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        raise DiffError(f"no reference module {module_name!r} for rule {rule!r}") from None
    function = getattr(module, name, None)
    if not (inspect.isfunction(function) and function.__module__ == module_name):
        known = sorted(n for n, f in vars(module).items()
                       if inspect.isfunction(f) and f.__module__ == module_name and not n.startswith("_"))
        raise DiffError(f"{module_name} has no rule {name!r} (its rules: {', '.join(known)})")
    return module_name, name, function


def search(user: Callable[..., Any], rule: Callable[..., Any], *, max_iterations: int = 100,
           per_condition_timeout: float = 20.0) -> DiffReport:
    """Run CrossHair's diff_behavior on the two functions within the budget."""
    from collections import Counter

    import crosshair.core_and_libs  # noqa: F401  (loads CrossHair's opcode patches and plugins)
    from crosshair.diff_behavior import ExceptionEquivalenceType, diff_behavior
    from crosshair.fnutil import FunctionInfo
    from crosshair.options import DEFAULT_OPTIONS, AnalysisOptionSet

    if list(inspect.signature(user).parameters) != list(inspect.signature(rule).parameters):
        raise DiffError(f"the parameters differ: {inspect.signature(user)} vs the rule's {inspect.signature(rule)}")
    stats: Counter[str] = Counter()
    options = DEFAULT_OPTIONS.overlay(AnalysisOptionSet(
        max_uninteresting_iterations=max_iterations, per_condition_timeout=per_condition_timeout, stats=stats))
    found = diff_behavior(FunctionInfo.from_fn(user), FunctionInfo.from_fn(rule), options,
                          ExceptionEquivalenceType.SAME_TYPE)
    if isinstance(found, str):
        raise DiffError(f"CrossHair could not compare them: {found}")
    differences = [Difference(dict(d.args), _describe(d.result1), _describe(d.result2)) for d in found]
    return DiffReport(differences, stats["num_paths"], stats["exhaustion"] > 0)


def _describe(result: Any) -> str:
    return f"raises {result.error}" if result.error is not None else f"returns {result.return_repr}"


def pytest_source(user_module: str, user_name: str, rule_module: str, rule_name: str,
                  parameters: list[str], differences: list[Difference], command: str) -> str:
    """A pytest module asserting that the user's function behaves as the rule on each differing input."""
    rule_fn = getattr(importlib.import_module(rule_module), rule_name)
    enums = set()

    def literal(text: str) -> str:
        def name(match: re.Match[str]) -> str:
            enums.add(match.group(1))
            return f"{match.group(1)}.{match.group(2)}"
        return _ENUM_REPR.sub(name, text)

    rows = []
    for d in differences:
        values = ", ".join(literal(d.args[p]) for p in parameters)
        rows.append(f"    ({values}{',' if len(parameters) == 1 else ''}),  # {user_name} {d.user}; {rule_name} {d.rule}")
    doc = " ".join((rule_fn.__doc__ or "").strip().split("\n\n")[0].split())
    imports = [f"from {rule_module} import {', '.join(sorted({rule_name} | enums))}"]
    if user_name == rule_name:
        imports.append(f"from {user_module} import {user_name} as user_{user_name}")
        call = f"user_{user_name}"
    else:
        imports.append(f"from {user_module} import {user_name}")
        call = user_name
    args = ", ".join(parameters)
    return "\n".join([
        f'"""Generated by `{command}` (CrossHair diffbehavior).',
        "",
        f"Inputs where {user_module}.{user_name} and {rule_module}.{rule_name} disagree. The rule:",
        f"{doc}",
        '"""',
        "",
        "import pytest",
        "",
        *imports,
        "",
        "",
        "def outcome(function, *args):",
        '    """What a call does: its value, or the type of exception it raises."""',
        "    try:",
        '        return ("returns", function(*args))',
        "    except Exception as exc:",
        '        return ("raises", type(exc).__name__)',
        "",
        "",
        f'@pytest.mark.parametrize("{args}", [',
        *rows,
        "])",
        f"def test_{user_name}_behaves_as_{rule_name}({args}):",
        f"    assert outcome({call}, {args}) == outcome({rule_name}, {args})",
        "",
    ])


def diff_command(target: str, rule: str, *, max_iterations: int = 100, per_condition_timeout: float = 20.0,
                 out: TextIO = sys.stdout) -> int:
    """Print the differences as a pytest module (exit 1), or that none was found within the budget (exit 0)."""
    try:
        user_module, user_name, user = load_user(target)
        rule_module, rule_name, rule_fn = load_rule(rule)
        report = search(user, rule_fn, max_iterations=max_iterations, per_condition_timeout=per_condition_timeout)
    except DiffError as exc:
        print(f"kraftspec diff: {exc}", file=sys.stderr)
        return EXIT_ERROR
    if not report.differences:
        likely = ("all paths exhausted: the functions are likely equivalent" if report.exhausted else
                  "not every path was explored: raise --max-iterations or --per-condition-timeout to search longer")
        print(f"# kraftspec diff: no difference between {target} and {rule_module}.{rule_name} within the budget "
              f"({report.iterations} iterations; {likely})", file=out)
        return EXIT_OK
    command = f"kraftspec diff {target} {rule}"
    parameters = list(inspect.signature(rule_fn).parameters)
    out.write(pytest_source(user_module, user_name, rule_module, rule_name, parameters, report.differences, command))
    print(f"# {len(report.differences)} difference(s) found in {report.iterations} iterations", file=sys.stderr)
    return EXIT_FINDING
