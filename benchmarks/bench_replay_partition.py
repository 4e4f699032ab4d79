"""The partition component's replay workloads for ``bench_replay.py`` (rules §2).

Each builder takes ``(seed, scale)`` and returns traces: the bundled TLC-recorded ones, and a leader's
steady traffic (appends and follower fetches at an advancing clock, the periodic ISR check), seeded.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Callable

from kraftspec import traces as traces_package
from kraftspec.traces.format import jsonl
from kraftspec.traces.replay import partition as partition_replay
from kraftspec.traces.format.envelope import Step, Trace

TOPIC = "FOOFOOFOOFOOFOOFOOFOOw"
STANDARD = "partition/three-replicas"


def bundled_tla(seed: int, scale: float) -> list[Trace]:
    """The bundled TLC-recorded traces (``traces/tla/partition.jsonl.gz``), all of them whatever the scale."""
    path = Path(traces_package.__file__).parent / "tla" / "partition.jsonl.gz"
    return [item for _, item in jsonl.read_jsonl(path) if isinstance(item, Trace)]


def steady(post: tuple[str, ...]) -> Callable[[int, float], list[Trace]]:
    """A leader's steady traffic: broker 1 appends, followers 2 and 3 fetch up to its log end, the ISR check runs.

    Each step states its response (and ``post`` fields, if any) as the reference produces them.
    """
    def build(seed: int, scale: float) -> list[Trace]:
        rng, out = random.Random(seed), []
        for index in range(max(1, int(40 * scale))):
            state, clock = partition_replay.initial(Trace("partition", (), standard=STANDARD)), 0
            key = {"broker_id": 1, "topic_id": TOPIC, "partition_id": 0}
            steps = []
            for i in range(1000):
                leader = state.leaders[(1, TOPIC, 0)]
                kind = i % 4
                if kind == 0:
                    step = Step("append", {**key, "count": rng.randint(1, 5), "now": i})
                elif kind in (1, 2):
                    follower = 1 + kind
                    step = Step("follower_fetch", {**key, "follower": follower, "now": i,
                                                   # from the follower's log end (-1 before its first fetch)
                                                   "fetch_offset": rng.randint(
                                                       max(0, leader.followers[follower].log_end_offset),
                                                       leader.log_end_offset),
                                                   "broker_epoch": state.brokers[follower].epoch})
                else:
                    step = Step("maybe_shrink_isr", {**key, "now": i})
                state, clock, response, written = partition_replay.apply(state, clock, step)
                steps.append(Step(step.action, step.input, response, written,
                                  partition_replay.observe(state, clock, post) if post else None))
            out.append(Trace("partition", tuple(steps), standard=STANDARD, id=f"steady-{seed}-{index}"))
        return out
    return build
