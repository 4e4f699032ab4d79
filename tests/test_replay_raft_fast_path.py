"""The raft replay's fast path (``raft_replay.post_matches`` and the stated sends) judges every step as the diff does.

Every leaf of simulated steps' stated sends and post-states is perturbed one at a time into a value JSON tells
apart (true for 1, 1.0 for 1, a string subclass, a dropped or added element): the fast comparison must say
"differs" exactly when the field-level diff finds something.
"""

from __future__ import annotations

from typing import Any

from kraftspec.traces.replay import raft as raft_replay
from kraftspec.traces.format.envelope import Step, Trace
from kraftspec.traces.recording.generate import generate_raft_sim
from kraftspec.traces.replay.verdict import replay_steps, step_diffs
from support_perturb import judged, perturbed, perturbed_steps


def _judged_alike(state: Any, clock: int, step: Step) -> bool:
    """Whether the replay (with its fast paths) and the diff alone agree on ``step``: the diff's side runs the step
    with the sends never found equal (the reference's sends as JSON, projected on the stated fields)."""
    fast_sends = raft_replay._sends_match
    raft_replay._sends_match = lambda sends, stated: False
    try:
        after, after_clock, response, written = raft_replay.run(state, clock, step)
    finally:
        raft_replay._sends_match = fast_sends
    slow = judged(lambda: not step_diffs("raft", step, after, after_clock, response, written))
    return judged(lambda: replay_steps(Trace("raft", (step,)), state, clock).conformant) == slow


def test_the_fast_path_agrees_with_the_diff_on_every_perturbed_send_and_post_state_field() -> None:
    checked = 0
    for trace in generate_raft_sim(3, 4, 50, None):
        state, clock = raft_replay.initial(trace), 0
        for step in trace.steps:
            assert _judged_alike(state, clock, step), step
            for variant in perturbed_steps(step):
                assert _judged_alike(state, clock, variant), variant
                checked += 1
            state, clock, _, _ = raft_replay.run(state, clock, step)
    assert checked > 10_000


def test_a_post_state_stating_some_fields_is_compared_field_by_field() -> None:
    trace = next(iter(generate_raft_sim(3, 1, 30, None)))
    state, clock = raft_replay.initial(trace), 0
    for step in trace.steps:
        post = dict(step.post or {})
        for keys in (("clock",), ("log", "role"), ("epoch_cache", "quorum_state_file", "voted_key")):
            some = {key: post[key] for key in keys}
            assert _judged_alike(state, clock, Step(step.action, step.input, step.response, step.records, some))
            for variant in perturbed(some):
                assert _judged_alike(state, clock, Step(step.action, step.input, step.response, step.records, variant))
        state, clock, _, _ = raft_replay.run(state, clock, step)
