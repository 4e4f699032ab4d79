"""Differential testing of ``TinyQuorumController`` against the kraftspec reference, with Hypothesis.

The implementation is the active controller's side alone, so the machine generates only its inputs (``ACTIONS``)
from cluster images drawn with kraftspec's public strategies. ``python -m pytest examples/differential_controller``:
the fixed controller passes and the planted bug is found; ``python
examples/differential_controller/differential_controller_test.py`` prints the shrunk sequence and kraftspec's
report.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, seed, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, run_state_machine_as_test

from kraftspec.models.controller_strategies import broker_registrations, controller_registrations
from kraftspec.models.determinism import without_local_constants
from kraftspec.oracle import controller_machine
from kraftspec.traces.format.values import to_json

sys.path.insert(0, str(Path(__file__).parent))
from tiny_quorum_controller import TinyQuorumController  # noqa: E402  (this folder is not a package)

ACTIONS = ("register_controller", "replay_register_controller", "describe_cluster", "check_request_serializable")
"""What TinyQuorumController implements: the active controller's inputs, none of the registration manager's."""
SEED = 1
SETTINGS = settings(max_examples=150, stateful_step_count=12, deadline=None, derandomize=True, database=None,
                    phases=set(Phase) - {Phase.explain}, suppress_health_check=list(HealthCheck))


@st.composite
def initial_states(draw: st.DrawFn) -> dict[str, Any]:
    """A cluster image built with kraftspec's public strategies: one to four brokers (ids 1-4) and one to three
    controllers (ids 3000-3002) with random listeners, fencing and racks, a Raft leader, metadata.version 3.6-IV2,
    3.7-IV0 or 4.3-IV0. The manager the format requires is a process of controller 3000 that this implementation
    never sees."""
    brokers = [draw(broker_registrations(i)) for i in draw(st.lists(st.integers(1, 4), min_size=1, unique=True))]
    controllers = [draw(controller_registrations(i))
                   for i in draw(st.lists(st.integers(3000, 3002), min_size=1, unique=True))]
    return {"explicit": {
        "cluster_id": "QtNwvtfVQ3GEFpzOmDEE-w", "metadata_version": draw(st.sampled_from((14, 15, 30))),
        "raft_leader_id": draw(st.sampled_from((-1, 3000, 3001, 3002))), "next_offset": draw(st.integers(0, 5)),
        "brokers": to_json(sorted(brokers, key=lambda b: b.broker_id)),
        "controllers": to_json(sorted(controllers, key=lambda c: c.controller_id)),
        "manager": {"node_id": 3000, "incarnation_id": "inc1"}}}


Fixed = controller_machine(TinyQuorumController, initial=initial_states(), actions=ACTIONS)
Buggy = controller_machine(lambda: TinyQuorumController(planted_bug=True), initial=initial_states(), actions=ACTIONS)


def run(machine: type[RuleBasedStateMachine], run_seed: int = SEED, max_examples: int = 150) -> None:
    """Run ``machine`` from ``run_seed`` (printed: the run depends on it alone)."""
    print(f"differential_controller: seed={run_seed} max_examples={max_examples}", flush=True)
    seeded = seed(run_seed)(type(f"{machine.__name__}Seed{run_seed}", (machine,), {}))
    with without_local_constants():  # the seed alone decides the run, whatever else the process imported
        run_state_machine_as_test(seeded, settings=settings(SETTINGS, max_examples=max_examples))


def find_the_planted_bug(run_seed: int = SEED) -> AssertionError:
    """Run the buggy controller until Hypothesis finds (and shrinks) a divergence; return it
    (``kraftspec.differential_controller.ControllerDivergence``, a ``kraftspec.oracle.DivergenceError`` carrying
    the ``trace``)."""
    try:
        run(Buggy, run_seed)
    except AssertionError as found:
        if not hasattr(found, "trace"):
            raise
        return found
    raise AssertionError(f"the planted bug was not found (seed={run_seed})")


def test_the_fixed_implementation_agrees_with_the_reference() -> None:
    run(Fixed)


def test_the_planted_bug_is_found() -> None:
    found = str(find_the_planted_bug())
    assert 'response.error: expected "NOT_CONTROLLER", observed "UNSUPPORTED_VERSION"' in found, found


if __name__ == "__main__":
    error = find_the_planted_bug(int(sys.argv[1]) if len(sys.argv) > 1 else SEED)
    print("\n".join(getattr(error, "__notes__", [])))
    print(error)
