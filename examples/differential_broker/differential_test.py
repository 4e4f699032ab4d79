"""Differential testing of ``TinyController`` against the kraftspec reference, with Hypothesis.

Run ``python -m pytest examples/differential_broker`` (the fixed implementation passes, and the
planted bug is found), or ``python examples/differential_broker/differential_test.py`` to watch
Hypothesis find the planted bug and print the shrunk sequence of inputs, then kraftspec's report.
"""

from __future__ import annotations

import sys
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis.stateful import run_state_machine_as_test

from kraftspec.oracle import DivergenceError, broker_machine

sys.path.insert(0, str(Path(__file__).parent))
from tiny_controller import TinyController  # noqa: E402  (this folder is not a package)

ACTIONS = ("register_broker", "heartbeat", "advance_clock")  # what TinyController implements
SETTINGS = settings(max_examples=300, stateful_step_count=20, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])

Fixed = broker_machine(TinyController, actions=ACTIONS)
Buggy = broker_machine(lambda: TinyController(planted_bug=True), actions=ACTIONS)
TestFixedTinyController = Fixed.TestCase
TestFixedTinyController.settings = SETTINGS


def find_the_planted_bug() -> DivergenceError:
    """Run the buggy implementation until Hypothesis finds (and shrinks) a divergence; return it."""
    try:
        run_state_machine_as_test(Buggy, settings=SETTINGS)
    except DivergenceError as found:
        return found
    raise AssertionError("the planted bug was not found")


def test_the_planted_bug_is_found() -> None:
    found = find_the_planted_bug()
    assert "state.heartbeat(" in shrunk_sequence(found)
    assert "response.is_caught_up: expected true, observed false" in str(found)


def shrunk_sequence(found: DivergenceError) -> str:
    """Hypothesis's falsifying example (the shrunk sequence of rule calls), attached to the error as notes."""
    return "\n".join(getattr(found, "__notes__", []))


if __name__ == "__main__":
    error = find_the_planted_bug()
    print(shrunk_sequence(error))
    print(error)
