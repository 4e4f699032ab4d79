"""``kraftspec diff MODULE:FUNC RULE``: search for inputs where a user's function and a reference rule disagree.

A thin wrapper over CrossHair's ``diffbehavior`` (symbolic execution): RULE names one of the small
rule functions of ``kraftspec.reference`` (``broker_rules.session_expired``, or fully qualified), the
user's function takes the same parameters. The search stays within the rule's domain: the ``pre:``
conditions of the contracts in ``kraftspec.proofs`` that call the rule with their own parameters. Every
input found where the two return different values (or raise differently) is printed, not only the
first, as a ready-to-paste pytest test that compares the user's function with the reference rule on
those inputs: it fails against the user's function and passes against the rule. No difference within
the budget is not a proof, unless CrossHair exhausted every path. ``--list`` prints the comparable rules.
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import pkgutil
import re
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from types import CodeType
from typing import Any, Callable, Iterator, TextIO

EXIT_OK, EXIT_FINDING, EXIT_ERROR = 0, 1, 2
REFERENCE = "kraftspec.reference"
PROOFS = "kraftspec.proofs"
RULE_MODULES = ("broker_rules", "partition_rules", "controller_rules", "raft_rules", "storage_rules")
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


@dataclass(frozen=True)
class Precondition:
    """One ``pre:`` line of a contract in ``kraftspec.proofs``, over the rule's parameters (``names``: the
    contract's parameter for each of the rule's)."""

    text: str
    contract: str
    names: tuple[tuple[str, str], ...]
    code: CodeType
    scope: dict[str, Any]

    def holds(self, arguments: dict[str, Any]) -> bool:
        """Whether the condition holds for the rule's arguments (by the rule's parameter names)."""
        return bool(eval(self.code, self.scope, {mine: arguments[theirs] for theirs, mine in self.names}))


def _contract_calls(rule_module: str, rule_name: str) -> Iterator[tuple[Any, ast.FunctionDef, dict[str, str]]]:
    """(proof module, contract, rule parameter -> contract parameter) for each contract that calls the rule with its
    own parameters only (a contract that transforms them says nothing directly about the rule's domain)."""
    rule_params = list(inspect.signature(getattr(importlib.import_module(rule_module), rule_name)).parameters)
    alias = rule_module.rpartition(".")[2]
    proofs = importlib.import_module(PROOFS)
    for info in pkgutil.iter_modules(proofs.__path__):
        module = importlib.import_module(f"{PROOFS}.{info.name}")
        tree = ast.parse(inspect.getsource(module))
        for node in tree.body:
            if not isinstance(node, ast.FunctionDef):
                continue
            own = {a.arg for a in node.args.args}
            for call in ast.walk(node):
                if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                        and call.func.attr == rule_name and isinstance(call.func.value, ast.Name)
                        and call.func.value.id == alias):
                    continue
                given = list(zip(rule_params, call.args)) + [(k.arg, k.value) for k in call.keywords if k.arg]
                if (len(given) == len(rule_params)
                        and all(isinstance(v, ast.Name) and v.id in own for _, v in given)):
                    yield module, node, {param: value.id for param, value in given}  # type: ignore[attr-defined]


def preconditions(rule_module: str, rule_name: str) -> list[Precondition]:
    """The ``pre:`` conditions of every contract in ``kraftspec.proofs`` that calls the rule with its own parameters."""
    found = []
    for module, node, names in _contract_calls(rule_module, rule_name):
        doc = textwrap.dedent(ast.get_docstring(node) or "")
        for line in doc.splitlines():
            if line.strip().startswith("pre:"):
                text = line.strip()[len("pre:"):].strip()
                found.append(Precondition(text, f"{module.__name__}.{node.name}", tuple(names.items()),
                                          compile(text, f"<{module.__name__}.{node.name} pre>", "eval"),
                                          vars(module)))
    return found


def within_domain(function: Callable[..., Any], conditions: list[Precondition]) -> Callable[..., Any]:
    """``function`` called only where every condition holds; elsewhere CrossHair drops the attempt (IgnoreAttempt)."""
    if not conditions:
        return function
    from crosshair.util import IgnoreAttempt

    signature = inspect.signature(function)

    @functools.wraps(function)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        arguments = signature.bind(*args, **kwargs).arguments
        for condition in conditions:
            if not condition.holds(arguments):
                raise IgnoreAttempt(f"outside the rule's domain: {condition.text}")
        return function(*args, **kwargs)

    return guarded


def comparable_rules() -> list[tuple[str, str, list[Precondition]]]:
    """Every rule ``kraftspec diff`` compares with: (``module.function``, its signature, its domain's conditions)."""
    rules = []
    for name in RULE_MODULES:
        module = importlib.import_module(f"{REFERENCE}.{name}")
        for rule_name, function in sorted(vars(module).items()):
            if inspect.isfunction(function) and function.__module__ == module.__name__ and not rule_name.startswith("_"):
                rules.append((f"{name}.{rule_name}", str(inspect.signature(function)).replace("'", ""),
                              preconditions(module.__name__, rule_name)))
    return rules


def list_command(out: TextIO = sys.stdout) -> int:
    """Print every comparable rule with its signature and the preconditions that bound the search."""
    for name, signature, conditions in comparable_rules():
        domain = "; ".join(c.text for c in conditions)
        print(f"{name}{signature}" + (f"\n    domain: {domain}" if domain else ""), file=out)
    return EXIT_OK


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
           per_condition_timeout: float = 20.0, domain: tuple[Precondition, ...] = ()) -> DiffReport:
    """Every difference CrossHair finds between the two functions within the budget, inputs outside ``domain``
    skipped (both orders of the functions are searched, as ``diffbehavior`` does, each input reported once)."""
    from collections import Counter

    import crosshair.core_and_libs  # noqa: F401  (loads CrossHair's opcode patches and plugins)
    from crosshair.diff_behavior import ExceptionEquivalenceType, diff_behavior_with_signature
    from crosshair.fnutil import FunctionInfo
    from crosshair.options import DEFAULT_OPTIONS, AnalysisOptionSet

    if list(inspect.signature(user).parameters) != list(inspect.signature(rule).parameters):
        raise DiffError(f"the parameters differ: {inspect.signature(user)} vs the rule's {inspect.signature(rule)}")
    stats: Counter[str] = Counter()
    options = DEFAULT_OPTIONS.overlay(AnalysisOptionSet(
        max_uninteresting_iterations=max_iterations, per_condition_timeout=per_condition_timeout, stats=stats))
    first, second = options.split_limits(0.5)
    mine, theirs = (within_domain(f, list(domain)) for f in (user, rule))
    resolved = [FunctionInfo.from_fn(f).callable() for f in (mine, theirs)]
    if any(isinstance(item, str) for item in resolved):
        raise DiffError(f"CrossHair could not compare them: {next(i for i in resolved if isinstance(i, str))}")
    (fn1, sig1), (fn2, sig2) = resolved  # type: ignore[misc]
    found = list(diff_behavior_with_signature(fn1, fn2, sig1, first, ExceptionEquivalenceType.SAME_TYPE))
    found += [d.reverse() for d in diff_behavior_with_signature(fn2, fn1, sig2, second,
                                                                ExceptionEquivalenceType.SAME_TYPE)]
    differences: dict[tuple[tuple[str, str], ...], Difference] = {}
    for d in found:
        differences.setdefault(tuple(sorted(d.args.items())),
                               Difference(dict(d.args), _describe(d.result1), _describe(d.result2)))
    return DiffReport(list(differences.values()), stats["num_paths"], stats["exhaustion"] > 0)


def _describe(result: Any) -> str:
    return f"raises {result.error}" if result.error is not None else f"returns {result.return_repr}"


def pytest_source(user_module: str, user_name: str, rule_module: str, rule_name: str,
                  parameters: list[str], differences: list[Difference], command: str,
                  domain: tuple[Precondition, ...] = ()) -> str:
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
        *([f"Searched within the rule's domain: {'; '.join(c.text for c in domain)} "
           f"({', '.join(sorted({c.contract for c in domain}))})."] if domain else []),
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
        domain = tuple(preconditions(rule_module, rule_name))
        report = search(user, rule_fn, max_iterations=max_iterations, per_condition_timeout=per_condition_timeout,
                        domain=domain)
    except DiffError as exc:
        print(f"kraftspec diff: {exc}", file=sys.stderr)
        return EXIT_ERROR
    if not report.differences:
        likely = ("all paths exhausted: the functions are likely equivalent" if report.exhausted else
                  "not every path was explored: raise --max-iterations or --per-condition-timeout to search longer")
        within = f", within the rule's domain ({'; '.join(c.text for c in domain)})" if domain else ""
        print(f"# kraftspec diff: no difference between {target} and {rule_module}.{rule_name} within the budget "
              f"({report.iterations} iterations{within}; {likely})", file=out)
        return EXIT_OK
    command = f"kraftspec diff {target} {rule}"
    parameters = list(inspect.signature(rule_fn).parameters)
    out.write(pytest_source(user_module, user_name, rule_module, rule_name, parameters, report.differences, command,
                            domain))
    print(f"# {len(report.differences)} difference(s) found in {report.iterations} iterations", file=sys.stderr)
    return EXIT_FINDING
