"""Differential testing of ``TinyVoter`` against the kraftspec reference node, with a partial view.

The voter answers votes only, so the machine compares VoteResponses only (``view``) while the reference runs
the whole node (its Fetches, timers). ``python -m pytest examples/differential_raft``: the fixed voter passes and the
planted bug is found; ``python examples/differential_raft/differential_raft_test.py`` prints the shrunk sequence and
kraftspec's report.
"""

from __future__ import annotations

import sys
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis.stateful import run_state_machine_as_test

from kraftspec.oracle import DivergenceError, raft_machine

sys.path.insert(0, str(Path(__file__).parent))
from tiny_votes import TinyVoter  # noqa: E402  (this folder is not a package)

INITIAL = {"explicit": {"local_id": 1, "log": [{"epoch": 1, "record": "a"}, {"epoch": 1, "record": "b"},
                                               {"epoch": 2, "record": "c"}]}}
VIEW = {"sends": ["VoteResponse"]}  # what TinyVoter sends; the reference's other sends are not compared
SETTINGS = settings(max_examples=200, stateful_step_count=12, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])

Fixed = raft_machine(TinyVoter, initial=INITIAL, actions=("vote_request",), view=VIEW, pre_vote=False)
Buggy = raft_machine(lambda: TinyVoter(planted_bug=True), initial=INITIAL, actions=("vote_request",), view=VIEW,
                     pre_vote=False)
TestFixedTinyVoter = Fixed.TestCase
TestFixedTinyVoter.settings = SETTINGS


def find_the_planted_bug() -> DivergenceError:
    """Run the buggy voter until Hypothesis finds (and shrinks) a divergence; return it."""
    try:
        run_state_machine_as_test(Buggy, settings=SETTINGS)
    except DivergenceError as found:
        return found
    raise AssertionError("the planted bug was not found")


def test_the_planted_bug_is_found() -> None:
    found = str(find_the_planted_bug())
    assert "response.sends[0].vote_granted: expected false, observed true" in found
    assert "kraftspec.reference.raft_rules.is_log_up_to_date(" in found and '"view":{"sends":["VoteResponse"]}' in found


if __name__ == "__main__":
    error = find_the_planted_bug()
    print("\n".join(getattr(error, "__notes__", [])))
    print(error)
