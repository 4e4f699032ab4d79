"""The summary of a ``kraftspec validate`` report: counts per verdict, per component and per rule (rich tables).

It is computed from the report file itself, streamed one batch at a time, so both engines are
summarized by the same code and memory does not grow with the report.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import pyarrow.parquet as pq
from rich.console import Console
from rich.table import Table

from kraftspec.traces.format.limits import escape_controls
from kraftspec.traces.engines.audit_units import META_REFUSED

REASONS_SHOWN = 10
"""Distinct reasons for unreadable rows listed (the others are counted)."""
UNREADABLE_SHOWN = 100
"""Unreadable rows printed one per line with file, row and reason (the others are in the report's ``reason`` column)."""


@dataclass
class Summary:
    """Counts over one report: ``kind`` is ``traces`` (verdicts of traces) or ``audit`` (verdicts of logs)."""

    kind: str
    verdicts: Counter[str] = field(default_factory=Counter)
    components: Counter[tuple[str, str]] = field(default_factory=Counter)
    rules: Counter[str] = field(default_factory=Counter)
    reasons: Counter[str] = field(default_factory=Counter)
    steps: int = 0
    unreadable: list[str] = field(default_factory=list)
    """The first :data:`UNREADABLE_SHOWN` unreadable rows as ``file row N: reason`` (audit: ``path: reason``)."""

    @property
    def total(self) -> int:
        return sum(self.verdicts.values())

    @property
    def exit_code(self) -> int:
        """0 all good, 1 a finding (a divergence, a violation), 2 an unreadable row or path (bad input), as
        ``kraftspec check`` and ``kraftspec audit``."""
        if self.verdicts["unreadable"] or self.verdicts[META_REFUSED]:
            return 2
        if self.kind == "audit":
            return 0 if self.verdicts["ok"] == self.total else 1
        return 1 if self.verdicts["divergent"] else 0

    def line(self) -> str:
        """One line with the totals (the accounting: every row read is in exactly one verdict)."""
        order = (("ok", "violations", META_REFUSED, "unreadable") if self.kind == "audit"
                 else ("conformant", "divergent", "unreadable"))
        counts = ", ".join(f"{self.verdicts[v]} {v}" for v in order)
        if self.kind == "audit":
            return f"audited {self.total} paths: {counts}"
        return f"validated {self.total} traces ({self.steps} steps): {counts}"

    def print(self, console: Console, how: str, report: str) -> None:
        """The tables and the totals line (``how``: the engine and its time)."""
        table = Table(title="verdicts")
        table.add_column("verdict")
        table.add_column("count", justify="right")
        for verdict, count in sorted(self.verdicts.items()):
            table.add_row(verdict, str(count))
        console.print(table)
        if self.components:
            per = Table(title="per component")
            verdicts = sorted(self.verdicts)
            per.add_column("component")
            for verdict in verdicts:
                per.add_column(verdict, justify="right")
            for component in sorted({c for c, _ in self.components}):
                per.add_row(component, *(str(self.components[component, v]) for v in verdicts))
            console.print(per)
        if self.rules:
            rules = Table(title="divergences per rule" if self.kind == "traces" else "violations per rule")
            rules.add_column("rule")
            rules.add_column("count", justify="right")
            for rule, count in self.rules.most_common():
                rules.add_row(rule, str(count))
            console.print(rules)
        if self.reasons:
            reasons = Table(title="unreadable: reasons")
            reasons.add_column("reason")
            reasons.add_column("count", justify="right")
            for reason, count in self.reasons.most_common(REASONS_SHOWN):
                reasons.add_row(reason, str(count))
            if len(self.reasons) > REASONS_SHOWN:
                reasons.add_row(f"... {len(self.reasons) - REASONS_SHOWN} other reasons",
                                str(sum(c for _, c in self.reasons.most_common()[REASONS_SHOWN:])))
            console.print(reasons)
        if self.unreadable:
            console.print("unreadable:", highlight=False)
            for line in self.unreadable:
                console.print(f"  {line}", highlight=False, soft_wrap=True, markup=False)
            more = self.verdicts["unreadable"] + self.verdicts[META_REFUSED] - len(self.unreadable)
            if more > 0:
                console.print(f"  ... and {more} more (the report's reason column has every one)", highlight=False)
        console.print(f"{self.line()} ({how}); report: {report}", highlight=False, soft_wrap=True)


def summarize(kind: str, report: str) -> Summary:
    """Count the verdicts, components, rules and unreadable reasons of ``report``."""
    summary = Summary(kind)
    parquet = pq.ParquetFile(report)
    shown = summary.unreadable
    if kind == "audit":
        for batch in parquet.iter_batches(columns=["verdict", "rules", "reason", "path"]):
            for verdict, rules, reason, path in zip(*(batch.column(i).to_pylist() for i in range(4))):
                summary.verdicts[verdict] += 1
                for line in (rules or "").splitlines():
                    rule, _, count = line.rpartition(":")
                    summary.rules[rule] += int(count)
                if reason:
                    summary.reasons[reason] += 1
                if verdict in ("unreadable", META_REFUSED) and len(shown) < UNREADABLE_SHOWN:
                    shown.append(escape_controls(f"{path}: {reason}"))
        return summary
    for batch in parquet.iter_batches(columns=["component", "verdict", "rule", "reason", "steps", "file", "row"]):
        columns = [batch.column(i).to_pylist() for i in range(7)]
        for component, verdict, rule, reason, steps, file, row in zip(*columns):
            summary.verdicts[verdict] += 1
            summary.components[component or "(unknown)", verdict] += 1
            summary.steps += steps or 0
            if rule:
                summary.rules[rule] += 1
            if reason:
                summary.reasons[reason] += 1
            if verdict == "unreadable" and len(shown) < UNREADABLE_SHOWN:
                shown.append(escape_controls(f"{file}{'' if row is None else f' row {row}'}: {reason}"))
    return summary
