"""The rule book: every rule of the reference with what it decides, Kafka's source, the KIP and where they differ.

Built from two sources the package ships: the sections (``kraftspec.rulebook_sections``, the project's account of
each part of KRaft, cited as ``§N.M`` or ``rules §N.M``) and the reference's own docstrings (read from the source,
so the book never goes stale and needs no import of the reference). ``docs/rules.md`` is its rendering
(``python -m kraftspec.rulebook docs/rules.md`` writes it, ``--check`` fails when it differs), and
``kraftspec explain RULE`` prints one entry or section.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import importlib.util
import re
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Optional, Sequence, TextIO

from kraftspec.rulebook_sections import SECTIONS, Section

CITATION = re.compile(r"§\s?(\d+(?:\.\d+)?)")
"""A rule-book citation in any text: ``§1.5`` (also written ``rules §1.5``)."""
_KIP = re.compile(r"KIP-\d+")
_KAFKA = re.compile(r"\b[\w/.]*[A-Z]\w*\.(?:java|scala)\b|\b[A-Z][a-z][A-Za-z0-9]*\.[a-z][A-Za-z0-9]+\b"
                    r"|``[A-Z][a-z]+(?:[A-Z][a-z0-9]+)+``")
"""Kafka source named in a docstring: a ``.java``/``.scala`` file, ``Class.method``, or a ``CamelCase`` class."""
_NOT_KAFKA = re.compile(r"(?:Error|Exception|Map|Set|List)\b")
NOT_RULES = frozenset({"frozen", "errors", "records", "raft_messages"})
"""Reference modules of data types and helpers, not rules (their functions are not entries)."""
NO_RULE: dict[str, str] = {
    "advance_clock": "A trace input that only moves the trace's clock: later timed inputs without 'now' happen at it. "
                     "No reference rule decides it.",
    "stop_leading": "A partition trace input: the broker drops its leader state for the partition (Kafka's "
                    "Partition.makeFollower, §2.12). No reference rule decides it.",
}
"""Trace inputs that no reference function decides (vectors name folders after them too)."""


@dataclass(frozen=True)
class Entry:
    """One rule: ``module.function`` and what its docstring says, with the sections it cites."""

    name: str
    summary: str
    details: str
    sections: tuple[str, ...]
    kafka: tuple[str, ...]
    kips: tuple[str, ...]
    differs: tuple[str, ...]


def _package_dir(package: str) -> Path:
    """The folder of an installed package, found without importing it."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"package {package} not found")
    return Path(list(spec.submodule_search_locations)[0])


def _paragraphs(doc: str) -> tuple[str, str]:
    """A docstring's first paragraph on one line, and the rest (paragraphs kept, lines joined)."""
    parts = [" ".join(p.split()) for p in doc.strip().split("\n\n") if p.strip()]
    return (parts[0] if parts else ""), "\n\n".join(parts[1:])


def _unique(items: Sequence[str]) -> tuple[str, ...]:
    """``items`` without repeats, in first-seen order."""
    return tuple(dict.fromkeys(items))


def traced_rules() -> set[str]:
    """The rules trace inputs name (``Action(name, rule, ...)`` in each component's ``kraftspec.traces.format``
    module), as ``module.function`` (the broker component names functions of ``reference/broker.py`` without their
    module)."""
    out = set()
    for path in sorted(_package_dir("kraftspec.traces.format").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Action" and len(node.args) > 1
                    and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)):
                rule = node.args[1].value
                out.add(rule if "." in rule or rule in NO_RULE else f"broker.{rule}")
    return out - set(NO_RULE)


def _entry(name: str, doc: str, module_sections: tuple[str, ...], python: frozenset[str]) -> Entry:
    """The entry of rule ``name`` from its docstring; ``python`` are the reference's own class names (not Kafka's)."""
    summary, details = _paragraphs(doc)
    flat = " ".join(doc.split())
    sections = _unique(CITATION.findall(flat)) or module_sections
    sentences = re.split(r"(?<=[.;])\s+", flat)
    return Entry(name, summary, details, sections,
                 _unique([k for k in (m.strip("`") for m in _KAFKA.findall(flat))
                          if k.split(".")[0] not in python and not _NOT_KAFKA.search(k.split(".")[0])]),
                 _unique(_KIP.findall(flat)),
                 _unique([s for s in sentences if "KIP" in s and s != summary]))


@lru_cache(maxsize=1)
def entries() -> dict[str, Entry]:
    """Every rule: the public functions of the reference's rule modules and every function a trace input names."""
    root = _package_dir("kraftspec.reference")
    wanted = traced_rules()
    trees = {path.stem: ast.parse(path.read_text(encoding="utf-8")) for path in sorted(root.glob("*.py"))
             if not path.stem.startswith("_")}
    python = frozenset(node.name for tree in trees.values() for node in ast.walk(tree)
                       if isinstance(node, ast.ClassDef))
    out: dict[str, Entry] = {}
    for module, tree in trees.items():
        module_sections = _unique(CITATION.findall(ast.get_docstring(tree) or ""))
        for node in tree.body:
            if not isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                continue
            name = f"{module}.{node.name}"
            public_rule = (isinstance(node, ast.FunctionDef) and not node.name.startswith("_")
                           and module not in NOT_RULES)
            if public_rule or name in wanted:
                out[name] = _entry(name, ast.get_docstring(node) or "", module_sections, python)
    for name, text in NO_RULE.items():
        out[name] = _entry(name, text, (), python)
    return dict(sorted(out.items()))


def citing(number: str) -> list[str]:
    """The rules whose docstrings cite section ``number``."""
    return [name for name, entry in entries().items() if number in entry.sections]


def _section_key(number: str) -> tuple[int, ...]:
    """Sections in reading order (1.10 after 1.9)."""
    return tuple(int(part) for part in number.split("."))


def render_section(number: str, section: Section) -> str:
    """One section in Markdown, with the rules that cite it."""
    rules = citing(number)
    lines = [f'<a id="s{number}"></a>', f"### §{number} {section.title}", "",
             f"**Decides.** {section.decides}", "", f"**Kafka.** {section.kafka}", "", f"**KIP.** {section.kip}"]
    if section.kip_differs:
        lines += ["", f"**Where the KIP and Kafka differ.** {section.kip_differs}"]
    if rules:
        lines += ["", "**Rules.** " + ", ".join(f"[`{r}`](#{_anchor(r)})" for r in rules)]
    return "\n".join(lines) + "\n"


def _anchor(name: str) -> str:
    """The HTML anchor of a rule's entry in docs/rules.md."""
    return "rule-" + name.replace(".", "-")


def render_entry(entry: Entry) -> str:
    """One rule in Markdown: what it decides, its sections, Kafka's source, the KIP, the differences, details."""
    lines = [f'<a id="{_anchor(entry.name)}"></a>', f"#### `{entry.name}`", "", entry.summary or "(no docstring)"]
    facts = []
    if entry.sections:
        facts.append("sections: " + ", ".join(f"[§{s}](#s{s}) {SECTIONS[s].title}" if s in SECTIONS else f"§{s}"
                                              for s in entry.sections))
    kafka = entry.kafka or _unique([SECTIONS[s].kafka for s in entry.sections if s in SECTIONS][:1])
    if kafka:
        facts.append("Kafka: " + "; ".join(f"`{k}`" if not k.count(" ") else k for k in kafka)
                     + ("" if entry.kafka else " (from its section)"))
    kips = entry.kips or _unique([SECTIONS[s].kip for s in entry.sections if s in SECTIONS][:1])
    if kips:
        facts.append("KIP: " + "; ".join(kips))
    differs = entry.differs + _unique([SECTIONS[s].kip_differs for s in entry.sections
                                       if s in SECTIONS and SECTIONS[s].kip_differs][:1])
    if differs:
        facts.append("where the KIP and Kafka differ: " + " ".join(differs))
    lines += [""] + [f"* {fact}" for fact in facts]
    if entry.details:
        lines += [""] + [f"> {line}" if line else ">" for line in entry.details.split("\n")]
    return "\n".join(lines) + "\n"


def render() -> str:
    """The whole rule book in Markdown (``docs/rules.md``)."""
    out = [
        "# The kraftspec rule book", "",
        "Generated by `python -m kraftspec.rulebook docs/rules.md` from the sections the project wrote",
        "(`src/kraftspec/rulebook_sections.py`) and the reference's docstrings; a test fails when this file is",
        "stale, when a rule function has no entry or an entry names no function. `kraftspec explain NAME` prints",
        "one entry (`broker.heartbeat`) or section (`§1.5`).", "",
        "A citation `§N.M` (or `rules §N.M`) anywhere in the project names a section below; a rule is named",
        "`module.function` after `kraftspec.reference.module.function`. The facts are Kafka's (the 4.x line, the",
        "source file and method named in each section) and the KIPs'; the text is the project's.", "",
        "## Sections", "",
    ]
    for number in sorted(SECTIONS, key=_section_key):
        out.append(render_section(number, SECTIONS[number]))
    out += ["## Rules", ""]
    module = ""
    for name, entry in entries().items():
        here = name.split(".", 1)[0] if "." in name else "trace inputs without a rule"
        if here != module:
            module = here
            out += [f"### {module}", ""]
        out.append(render_entry(entry))
    return "\n".join(out)


def lookup(query: str) -> tuple[list[str], list[str]]:
    """(sections, rules) named by ``query``: ``§1.5``, ``rules §1.5``, ``1.5``, ``broker.heartbeat``,
    ``kraftspec.reference.broker.heartbeat``, ``broker/broker.heartbeat`` (a vector folder) or a function name."""
    text = query.strip().removeprefix("rules").strip().removeprefix("§").strip()
    if text in SECTIONS:
        return [text], []
    name = text.removeprefix("kraftspec.reference.").split("/", 1)[-1]
    if name in entries():
        return [], [name]
    return [], [n for n in entries() if n.rsplit(".", 1)[-1] == name]


def close_names(query: str) -> list[str]:
    """Up to eight known names close to ``query``."""
    known = list(entries()) + [f"§{s}" for s in SECTIONS]
    close = difflib.get_close_matches(query, known, n=8, cutoff=0.5)
    return close or [n for n in known if query.lower() in n.lower()][:8]


def explain_command(names: Sequence[str], list_all: bool = False, out: Optional[TextIO] = None) -> int:
    """``kraftspec explain NAME...``: print each entry or section; an unknown name exits 2 with close names."""
    out = out or sys.stdout
    if list_all:
        for number in sorted(SECTIONS, key=_section_key):
            print(f"§{number}  {SECTIONS[number].title}", file=out)
        for name, entry in entries().items():
            print(f"{name}  {entry.summary[:100]}", file=out)
        return 0
    if not names:
        print("kraftspec explain: name a rule (broker.heartbeat) or a section (§1.5), or give --list", file=out)
        return 2
    unknown = 0
    for query in names:
        sections, rules = lookup(query)
        for number in sections:
            print(_plain(render_section(number, SECTIONS[number])), file=out)
        for name in rules:
            print(_plain(render_entry(entries()[name])), file=out)
        if not sections and not rules:
            unknown += 1
            close = close_names(query)
            print(f"kraftspec explain: no rule or section named {query!r}"
                  + (f"; close: {', '.join(close)}" if close else "") + " (kraftspec explain --list names them all)",
                  file=out)
    return 2 if unknown else 0


def _plain(markdown: str) -> str:
    """A rendered entry for the terminal: no HTML anchors, links as their text."""
    text = re.sub(r'<a id="[^"]*"></a>\n', "", markdown)
    return re.sub(r"\[([^\]]*)\]\(#[^)]*\)", r"\1", text)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python -m kraftspec.rulebook [--check] FILE``: write the rule book to FILE, or check that FILE is current."""
    parser = argparse.ArgumentParser(prog="python -m kraftspec.rulebook", description=main.__doc__)
    parser.add_argument("file", type=Path, help="the Markdown file (docs/rules.md)")
    parser.add_argument("--check", action="store_true", help="exit 1 if FILE differs from the generated book")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = args.file.read_text(encoding="utf-8") if args.file.is_file() else ""
        if current != text:
            print(f"{args.file} is stale: run python -m kraftspec.rulebook {args.file}", file=sys.stderr)
            return 1
        return 0
    args.file.write_text(text, encoding="utf-8")
    print(f"{args.file}: {len(SECTIONS)} sections, {len(entries())} rules")
    return 0


if __name__ == "__main__":
    sys.exit(main())
