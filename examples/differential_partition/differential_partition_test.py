"""Differential testing of ``TinyPartitions`` against the kraftspec reference, with Hypothesis.

``python -m pytest examples/differential_partition``: the fixed implementation passes and the planted bug is
found; ``python examples/differential_partition/differential_partition_test.py`` prints the shrunk sequence and
kraftspec's report.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, seed, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, run_state_machine_as_test

from kraftspec.models.partition_strategies import broker_views, partition_registrations
from kraftspec.models.determinism import without_local_constants
from kraftspec.oracle import DivergenceError, partition_machine
from kraftspec.traces.format.values import to_json

sys.path.insert(0, str(Path(__file__).parent))
from tiny_partitions import TinyPartitions  # noqa: E402  (this folder is not a package)

ACTIONS = ("alter_partition", "handle_broker_fenced", "handle_broker_unfenced", "handle_broker_in_controlled_shutdown")
"""What TinyPartitions implements (the machine generates nothing else)."""
METADATA_VERSION = 30  # 4.3-IV0 (TinyPartitions takes 3.6-IV0 or later)
BROKER_FIELDS = ("broker_id", "epoch", "incarnation_id", "fenced", "in_controlled_shutdown")
SEED = 1
SETTINGS = settings(max_examples=150, stateful_step_count=12, deadline=None, derandomize=True, database=None,
                    phases=set(Phase) - {Phase.explain}, suppress_health_check=list(HealthCheck))


@st.composite
def initial_states(draw: st.DrawFn) -> dict[str, Any]:
    """Where TinyPartitions applies: kraftspec's broker views and partitions without ELR (two topics, up to three
    partitions each), unclean election off, no reassignment in progress, no log directories."""
    brokers = [{field: value for field, value in to_json(registration).items() if field in BROKER_FIELDS}
               for _, registration in sorted(draw(broker_views()).items())]
    topics, partitions = [], []
    for t, topic_id in enumerate(draw(st.sampled_from((["TOPIC0AAAAAAAAAAAAAAAw"],
                                                       ["TOPIC0AAAAAAAAAAAAAAAw", "TOPIC1AAAAAAAAAAAAAAAw"])))):
        topics.append({"name": f"t{t}", "topic_id": topic_id, "unclean_leader_election_enable": False,
                       "min_insync_replicas": 1})
        for index in range(draw(st.integers(1, 3))):
            registration = to_json(draw(partition_registrations(max_replicas=3, elr=False)))
            partitions.append({"topic_id": topic_id, "partition_id": index, **{
                field: registration[field] for field in ("replicas", "isr", "leader", "leader_epoch",
                                                         "partition_epoch", "leader_recovery_state")}})
    return {"explicit": {"metadata_version": METADATA_VERSION, "brokers": brokers, "topics": topics,
                         "partitions": partitions}}


Fixed = partition_machine(TinyPartitions, initial=initial_states(), actions=ACTIONS)
Buggy = partition_machine(lambda: TinyPartitions(planted_bug=True), initial=initial_states(), actions=ACTIONS)


def run(machine: type[RuleBasedStateMachine], run_seed: int = SEED, max_examples: int = 150) -> None:
    """Run ``machine`` from ``run_seed`` (printed: the run depends on it alone)."""
    print(f"differential_partition: seed={run_seed} max_examples={max_examples}", flush=True)
    seeded = seed(run_seed)(type(f"{machine.__name__}Seed{run_seed}", (machine,), {}))
    with without_local_constants():  # the seed alone decides the run, whatever else the process imported
        run_state_machine_as_test(seeded, settings=settings(SETTINGS, max_examples=max_examples))


def find_the_planted_bug(run_seed: int = SEED) -> DivergenceError:
    """Run the buggy implementation until Hypothesis finds (and shrinks) a divergence; return it."""
    try:
        run(Buggy, run_seed)
    except DivergenceError as found:
        return found
    raise AssertionError(f"the planted bug was not found (seed={run_seed})")


def test_the_fixed_implementation_agrees_with_the_reference() -> None:
    run(Fixed)


def test_the_planted_bug_is_found() -> None:
    found = str(find_the_planted_bug())
    assert 'error_code: expected "INELIGIBLE_REPLICA", observed "NONE"' in found, found


if __name__ == "__main__":
    error = find_the_planted_bug(int(sys.argv[1]) if len(sys.argv) > 1 else SEED)
    print("\n".join(getattr(error, "__notes__", [])))
    print(error)
