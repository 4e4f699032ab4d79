"""The partition and controller replays' fast paths judge every step as the diff does.

``partition_replay.post_matches`` / ``controller_replay.post_matches`` and ``match.stated_fields_match`` (nested
response fields read on the reference's values) must never call a step equal that the field-level diff (``step_diffs``) tells apart. Every leaf of bundled TLC-recorded steps' stated responses and
post-states is perturbed one at a time into a value JSON tells apart (true for 1, 1.0 for 1, a string subclass,
a dropped or added element or key); the replay of the perturbed step must diverge exactly when the diff finds
something (a fast path unsure of a step leaves it to the diff, so only a wrong "equal" can fail here).
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from kraftspec import traces
from kraftspec.traces.replay import controller as controller_replay
from kraftspec.traces.replay import partition as partition_replay
from kraftspec.traces.format.envelope import Step, Trace
from kraftspec.traces.format.jsonl import read_jsonl
from kraftspec.traces.replay.verdict import replay_steps, step_diffs
from support_perturb import judged, perturbed, perturbed_steps

REPLAYERS = {"partition": partition_replay, "controller": controller_replay}
STRIDE = {"partition": 60, "controller": 30}
"""Every 60th bundled partition trace and every 30th controller trace (about 50 each): every kind of step, and the
suite stays short on 2 cores."""


def _bundled(component: str) -> list[Trace]:
    path = Path(traces.__file__).parent / "tla" / f"{component}.jsonl.gz"
    found = [item for _, item in read_jsonl(path) if isinstance(item, Trace)]
    return found[::STRIDE[component]]


def _judged_alike(component: str, replayer: ModuleType, state: Any, clock: int, step: Step) -> bool:
    """Whether the replay (fast path first, through :func:`replay_steps`) and :func:`step_diffs` agree on ``step``."""
    after, after_clock, response, written = replayer.run(state, clock, step)
    slow = judged(lambda: not step_diffs(component, step, after, after_clock, response, written))
    return judged(lambda: replay_steps(Trace(component, (step,)), state, clock).conformant) == slow


@pytest.mark.parametrize("component", sorted(REPLAYERS))
def test_the_fast_path_agrees_with_the_diff_on_every_perturbed_response_and_post_state_field(component: str) -> None:
    replayer, checked = REPLAYERS[component], 0
    for trace in _bundled(component):
        state, clock = replayer.initial(trace), 0
        for step in trace.steps:
            after, after_clock, _, _ = replayer.run(state, clock, step)
            assert replayer.post_matches(after, after_clock, step.post or {}), step  # the fast path decides it
            for variant in perturbed_steps(step):
                assert _judged_alike(component, replayer, state, clock, variant), variant
                checked += 1
            state, clock = after, after_clock
    assert checked > 5_000


def test_a_partition_post_state_stating_some_fields_is_compared_field_by_field() -> None:
    for trace in _bundled("partition")[:10]:
        state, clock = partition_replay.initial(trace), 0
        for step in trace.steps:
            after, after_clock, _, _ = partition_replay.run(state, clock, step)
            post = {"clock": after_clock, **dict(step.post or {})}
            assert partition_replay.post_matches(after, after_clock, post)
            for key in post:
                some = {key: post[key]}
                for variant in perturbed(some):
                    assert _judged_alike("partition", partition_replay, state, clock,
                                         Step(step.action, step.input, step.response, step.records, variant)), variant
            state, clock = after, after_clock
