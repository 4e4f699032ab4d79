"""The raft component's replay workloads for ``bench_replay.py`` (rules §3).

Each builder takes ``(seed, scale)`` and returns traces: one node's view of a simulated quorum
(``kraftspec generate sim --component raft``: elections, fetches, crashes, message loss and reordering), seeded.
"""

from __future__ import annotations

from kraftspec.traces.format.envelope import Trace
from kraftspec.traces.recording.generate import generate_raft_sim


def simulated(seed: int, scale: float) -> list[Trace]:
    """``generate_raft_sim``: 200 traces of up to 200 steps each (times ``scale``), recorded by the reference."""
    return list(generate_raft_sim(seed, max(1, int(200 * scale)), 200, None))
