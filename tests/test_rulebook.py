"""The rule book (``docs/rules.md``, ``kraftspec explain``): generated from the docstrings, complete, and every
citation in the project resolves to it."""

from __future__ import annotations

import importlib
import inspect
import io
import re
from pathlib import Path

import pytest

from kraftspec.cli import main as cli_main
from kraftspec.rulebook import CITATION, NO_RULE, NOT_RULES, entries, explain_command, render, traced_rules
from kraftspec.rulebook_sections import SECTIONS

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "reference"
TEXT = {".py", ".md", ".tla", ".cfg", ".json", ".toml", ".txt", ".java", ".xml"}
SKIPPED = {".git", "kraftspec.egg-info", "__pycache__", ".hypothesis", ".pytest_cache"}
GONE = ("kraft-" + "semantics", "metadata-" + "records", "Appendix " + "A", "Appendix " + "B")
"""Documents the project once cited but does not ship (spelt in two parts so that this file does not cite them)."""
MISSING = "\u00a79.9"
"""A citation of a section that does not exist (escaped so that this file does not cite it)."""


def test_docs_rules_md_is_the_generated_book() -> None:
    assert (ROOT / "docs" / "rules.md").read_text(encoding="utf-8") == render(), \
        "docs/rules.md is stale: run python -m kraftspec.rulebook docs/rules.md"


def test_every_rule_function_has_an_entry() -> None:
    missing = []
    for path in sorted(REFERENCE.glob("*.py")):
        if path.stem.startswith("_") or path.stem in NOT_RULES:
            continue
        module = importlib.import_module(f"kraftspec.reference.{path.stem}")
        for name, function in inspect.getmembers(module, inspect.isfunction):
            if function.__module__ == module.__name__ and not name.startswith("_"):
                if f"{path.stem}.{name}" not in entries():
                    missing.append(f"{path.stem}.{name}")
    assert not missing, missing
    assert traced_rules() <= set(entries()), "a rule a trace input names has no entry"


def test_every_entry_names_a_rule_function() -> None:
    for name in entries():
        if name in NO_RULE:
            continue
        module, _, attribute = name.partition(".")
        target = getattr(importlib.import_module(f"kraftspec.reference.{module}"), attribute, None)
        target = inspect.unwrap(target) if target is not None else None  # a rule cached by kraftspec.accelerate
        assert target is not None and (inspect.isfunction(target) or inspect.isclass(target)), name
        assert target.__module__ == f"kraftspec.reference.{module}", name


def test_every_entry_says_what_it_decides_and_cites_what_exists() -> None:
    for name, entry in entries().items():
        assert entry.summary, f"{name} has no docstring"
        assert set(entry.sections) <= set(SECTIONS), (name, entry.sections)
    for number, section in SECTIONS.items():
        assert section.title and section.decides and section.kafka and section.kip, number


def _tree_texts() -> list[tuple[Path, str]]:
    out = []
    for path in ROOT.rglob("*"):
        if SKIPPED & set(path.relative_to(ROOT).parts) or path.suffix not in TEXT or not path.is_file():
            continue
        try:
            out.append((path, path.read_text(encoding="utf-8")))
        except UnicodeDecodeError:
            continue
    return out


def test_every_citation_in_the_project_resolves_to_the_rule_book() -> None:
    unresolved, gone = [], []
    texts = _tree_texts()
    assert len(texts) > 100
    for path, text in texts:
        where = path.relative_to(ROOT)
        for match in CITATION.finditer(text):
            if match.group(1) not in SECTIONS:
                unresolved.append(f"{where}:{text.count(chr(10), 0, match.start()) + 1}: {match.group(0)}")
        for name in GONE:
            if name in text:
                gone.append(f"{where}: {name}")
    assert not unresolved, unresolved
    assert not gone, gone


def test_a_citation_of_a_missing_section_would_be_found() -> None:
    assert [m.group(1) for m in CITATION.finditer(f"see §1.5, rules §2.3 and {MISSING}")] == ["1.5", "2.3", "9.9"]
    assert "9.9" not in SECTIONS


def test_explain_prints_an_entry_and_a_section() -> None:
    out = io.StringIO()
    assert explain_command(["broker.heartbeat", "§1.5", "kraftspec.reference.raft._handle_vote_request"], out=out) == 0
    text = out.getvalue()
    assert "#### `broker.heartbeat`" in text and "processBrokerHeartbeat" in text and "KIP-631" in text
    assert "### §1.5 BrokerHeartbeat" in text and "`raft._handle_vote_request`" in text
    assert "<a id" not in text and "](#" not in text


@pytest.mark.parametrize("name", ["hartbeat", "broker.heartbeet", MISSING])
def test_explain_an_unknown_rule_exits_2_with_close_names(name: str, capsys: pytest.CaptureFixture) -> None:
    assert cli_main(["explain", name]) == 2
    out = capsys.readouterr().out
    assert f"no rule or section named {name!r}" in out
    if "heart" in name:
        assert re.search(r"close: .*broker\.heartbeat", out)


def test_explain_list_names_every_rule(capsys: pytest.CaptureFixture) -> None:
    assert cli_main(["explain", "--list"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert len(listed) == len(SECTIONS) + len(entries())
