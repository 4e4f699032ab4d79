"""``kraftspec generate sim|tla``: write generated traces to a ``.jsonl``, ``.jsonl.gz`` or ``.parquet`` file.

Writing streams: traces are produced one at a time and written as they come (Parquet in row
groups), so memory stays bounded whatever ``--traces`` is. The seed is printed with the result.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Iterable, Optional, TextIO

from kraftspec.spec.tlc import TlcError
from kraftspec.traces.format import Trace
from kraftspec.traces.jsonl import write_jsonl
from kraftspec.traces.parquet import write_parquet

EXIT_OK, EXIT_ERROR = 0, 2


def write_traces(out: str, traces: Iterable[Trace]) -> int:
    """Stream ``traces`` to ``out`` (codec chosen by its suffix); returns how many were written."""
    if out.endswith(".parquet"):
        return write_parquet(out, traces)
    if out.endswith((".jsonl", ".jsonl.gz")):
        return write_jsonl(out, traces)
    raise ValueError(f"{out}: the output must end in .jsonl, .jsonl.gz or .parquet")


def generate_command(kind: str, out: str, traces: int, seed: int, steps: int = 40, mutant: Optional[str] = None,
                     stream: TextIO = sys.stdout, cover: str = "kinds") -> int:
    """Generate ``traces`` traces of ``kind`` into ``out``.

    ``sim``: simulations of ``steps`` steps (``mutant`` recorded); ``tla``: ``traces`` random walks of
    TLC's state graph, then the covering set (``cover``: ``kinds`` or ``edges``).
    """
    try:
        if kind == "sim":
            from kraftspec.traces.simulate import generate_sim

            generated = generate_sim(seed, traces, steps, mutant)
        elif kind == "tla" and mutant is None:
            from kraftspec.traces.tla_traces import generate_tla

            generated = generate_tla(seed, traces, cover)
        else:
            raise ValueError(f"unknown trace generator {kind!r}" if kind != "tla" else
                             "--mutant applies to simulated traces only (TLA+ traces follow the spec)")
        count = write_traces(out, generated)
    except (KeyError, ValueError, TlcError) as exc:
        Path(out).unlink(missing_ok=True)  # no partial output
        print(f"generate {kind}: error: {exc.args[0] if exc.args else exc}", file=stream)
        return EXIT_ERROR
    print(f"generate {kind}: wrote {count} traces to {out} (seed {seed}"
          f"{f', mutant {mutant}' if mutant else ''}); reproduce with: kraftspec generate {kind} --traces {traces} "
          f"--seed {seed}{f' --steps {steps}' if kind == 'sim' else f' --cover {cover}'}{f' --mutant {mutant}' if mutant else ''} "
          f"--out {out}", file=stream)
    return EXIT_OK
