"""The kraftspec pytest plugin (registered as a ``pytest11`` entry point, so installing kraftspec enables it).

* ``--kraft-traces PATH`` (repeatable): every trace in the file (``.jsonl``, ``.jsonl.gz``,
  ``.parquet``), or in every such file under a folder, becomes a test item named by its trace id (or
  ``line N`` / ``row N`` when it has none), which replays it through the reference and fails with the
  divergence report. An unreadable line or row, or a file without any trace, is an item that fails with
  its one-line error, so nothing passes unchecked; a folder without trace files is a usage error, a missing
  file pytest's ("file or directory not found").
* The ``oracle`` fixture is :mod:`kraftspec.oracle` (``oracle.replay``, ``oracle.check_step``,
  ``oracle.assert_conformant``, ``oracle.broker_machine``, ...).
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any, Iterator, Optional, Union

import pytest

OPTION = "--kraft-traces"
SUFFIXES = (".jsonl", ".jsonl.gz", ".parquet")
_TRACE_FILES = pytest.StashKey[set]()  # the resolved paths given with --kraft-traces


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kraftspec", "kraftspec conformance oracle")
    group.addoption(OPTION, action="append", default=[], metavar="PATH", dest="kraft_traces",
                    help="replay every trace in PATH (.jsonl, .jsonl.gz, .parquet) as a test item (repeatable)")


def pytest_configure(config: pytest.Config) -> None:
    """Collect the trace files given with ``--kraft-traces`` along with the other arguments."""
    paths = [str(file) for given in config.getoption("kraft_traces") for file in _trace_files(Path(given).resolve())]
    config.stash[_TRACE_FILES] = set(paths)
    config.args.extend(p for p in paths if p not in config.args)


def _trace_files(path: Path) -> list[Path]:
    """``path`` itself, or the trace files under a folder (a usage error when it holds none)."""
    if not path.is_dir():
        return [path]
    found = sorted(f for f in path.rglob("*") if f.is_file() and f.name.endswith(SUFFIXES))
    if not found:
        raise pytest.UsageError(f"{OPTION} {path}: no trace file ({', '.join(SUFFIXES)}) in this folder")
    return found


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> Optional[pytest.Collector]:
    if str(file_path.resolve()) in parent.config.stash.get(_TRACE_FILES, set()):
        return TraceFile.from_parent(parent, path=file_path)
    return None


@pytest.fixture
def oracle() -> ModuleType:
    """:mod:`kraftspec.oracle`: replay traces and check steps against the reference from a test."""
    from kraftspec import oracle as module

    return module


class TraceFile(pytest.File):
    """One trace file given with ``--kraft-traces``: an item per trace (or per unreadable line or row)."""

    def collect(self) -> Iterator[pytest.Item]:
        from kraftspec.oracle import read

        seen: set[str] = set()
        for where, item in read(self.path):
            name = getattr(item, "id", None) or where or "file"
            if name in seen:
                name = f"{name} ({where})"
            seen.add(name)
            yield TraceItem.from_parent(self, name=name, where=where, item=item)
        if not seen:
            from kraftspec.traces.replay.check import NO_TRACE
            from kraftspec.traces.format.values import TraceError

            yield TraceItem.from_parent(self, name="file", where="", item=TraceError(NO_TRACE))


class TraceCheckFailure(Exception):
    """A trace that diverged or could not be read; the message is the report."""


class TraceItem(pytest.Item):
    """One trace replayed through the reference."""

    def __init__(self, *, where: str, item: Union[Any, Exception], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.where, self.item = where, item

    def runtest(self) -> None:
        from kraftspec.oracle import describe, replay
        from kraftspec.traces.format.values import TraceError

        if isinstance(self.item, Exception):
            raise TraceCheckFailure(f"{self._label()}: error: {' '.join(str(self.item).split())}")
        try:
            verdict = replay(self.item)
        except TraceError as exc:  # a stated output field the reference's output does not have
            raise TraceCheckFailure(f"{self._label()}: error: {exc}") from None
        if verdict.divergence is not None:
            raise TraceCheckFailure(f"{self._label()} ({verdict.trace_id or 'no id'}): {describe(verdict)}")

    def _label(self) -> str:
        """``FILE:LINE`` or ``FILE row N``, as ``kraftspec check`` names an item."""
        if self.where.startswith("line "):
            return f"{self.path}:{self.where.split()[1]}"
        return f"{self.path} {self.where}" if self.where else str(self.path)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, TraceCheckFailure):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, Optional[int], str]:
        line = int(self.where.split()[1]) - 1 if self.where.startswith("line ") else None
        return self.path, line, f"trace {self.name}"
