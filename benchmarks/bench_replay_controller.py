"""The controller component's replay workloads for ``bench_replay.py`` (controller registration, DescribeCluster).

Each builder takes ``(seed, scale)`` and returns traces: the bundled TLC-recorded ones.
"""

from __future__ import annotations

from pathlib import Path

from kraftspec import traces as traces_package
from kraftspec.traces.format import jsonl
from kraftspec.traces.format.envelope import Trace


def bundled_tla(seed: int, scale: float) -> list[Trace]:
    """The bundled TLC-recorded traces (``traces/tla/controller.jsonl.gz``), all of them whatever the scale."""
    path = Path(traces_package.__file__).parent / "tla" / "controller.jsonl.gz"
    return [item for _, item in jsonl.read_jsonl(path) if isinstance(item, Trace)]
