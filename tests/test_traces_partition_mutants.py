"""The oracle against the partition mutants: their recordings are flagged at the step where they first differ.

The inputs of the bundled TLC-recorded partition traces, and of scenarios beyond the spec's bounds, are
recorded again with each partition mutant
applied (``partition_replay.record``). A recording must conform when replayed under its mutant; through
the reference, ``kraftspec check`` must flag it exactly at the first step where the mutant's outputs or
post-state differ from the reference's on the same prefix, naming a reference transition that calls
the mutant's target there (rules §2; ``models/partition_mutants.py``).
"""

from __future__ import annotations

import io
import itertools
import json
from dataclasses import replace
from pathlib import Path
from typing import Any, Optional

import pytest

from kraftspec import traces
from kraftspec.mutants import Mutant, all_mutants
from kraftspec.traces.replay import partition as partition_replay
from kraftspec.traces.replay.check import EXIT_FINDING, check_command
from kraftspec.traces.format.envelope import Step, Trace
from kraftspec.traces.format.jsonl import read_jsonl, write_jsonl
from kraftspec.traces.format.partition import PARTITION
from kraftspec.traces.replay.verdict import replay

BUNDLED = Path(traces.__file__).parent / "tla" / "partition.jsonl.gz"
PARTITION_MUTANTS = sorted(name for name, m in all_mutants().items() if m.component == "partition")
_CONTROLLER = {"alter_partition", "elect_leaders", "maybe_balance_partition_leaders", "maybe_elect_unclean_leaders",
               "alter_partition_reassignment", "handle_broker_fenced", "handle_broker_unfenced",
               "handle_broker_in_controlled_shutdown", "handle_broker_unregistered", "handle_broker_shutdown"}
# target -> the trace actions whose reference function calls it
CALLERS = {
    "is_acceptable_leader": _CONTROLLER,              # build_partition_change's LeaderAcceptor (§2.4)
    "alter_partition_epoch_error": {"alter_partition"},
    "is_hw_candidate": {"become_leader", "update_leader_metadata", "append", "follower_fetch",
                        "handle_alter_partition_result"},  # via maybe_increment_high_watermark (§2.12)
    "isr_shrink_requires_leader_epoch_bump": _CONTROLLER,
    "isr_record_field": _CONTROLLER,
    "is_isr_member_eligible": {"alter_partition"},    # validate_alter_partition_data (§2.10)
    "handle_broker_unregistered": {"handle_broker_unregistered"},  # partition_events (§2.9)
}


TOPIC = "FOOFOOFOOFOOFOOFOOFOOw"
STRIDE = 4
"""Every fourth bundled trace (about 750): enough for each mutant, and the suite stays short on 2 cores."""
SCENARIOS = (  # beyond the spec's bounds (partition epoch < 2): inputs on partition/three-replicas
    # every replica fenced, the last ISR member stays in the ISR; unfencing another must not elect the fenced one (§2.4)
    [{"action": "handle_broker_fenced", "broker_id": b} for b in (2, 3, 1)]
    + [{"action": "handle_broker_unfenced", "broker_id": 2}],
    # broker 2 restarts with epoch 202; the leader names it with its old epoch 102 (KIP-903, §2.10)
    [{"action": "handle_broker_shutdown", "broker_id": 2, "epoch": 202, "incarnation_id": "again"},
     {"action": "handle_broker_unfenced", "broker_id": 2},
     {"action": "alter_partition", "request": {"broker_id": 1, "broker_epoch": 101, "topics": [
         {"topic_id": TOPIC, "partitions": [{"partition_index": 0, "leader_epoch": 0, "partition_epoch": 1,
                                             "new_isr_with_epochs": [[1, 101], [2, 102], [3, 103]]}]}]}}],
    # ELR on, min ISR 2: broker 2 fenced into the ELR, then unregistered; Kafka keeps it in the ELR (§2.9)
    ("partition/three-replicas-elr", [{"action": "handle_broker_fenced", "broker_id": b} for b in (3, 2)]
     + [{"action": "handle_broker_unregistered", "broker_id": 2}]),
)


def _template(index: int, scenario: Any) -> Trace:
    """Inputs (on partition/three-replicas, or ``(standard state, inputs)``) whose recording states every output and
    post-state field."""
    standard, inputs = scenario if isinstance(scenario, tuple) else ("partition/three-replicas", scenario)
    steps = tuple(Step(i["action"], PARTITION.decode_input(i["action"], {k: v for k, v in i.items() if k != "action"},
                                                           "input"),
                       {}, (), dict.fromkeys(("brokers", "partitions", "leaders"))) for i in inputs)
    return Trace("partition", steps, standard=standard, id=f"scenario-{index}")


@pytest.fixture(scope="module")
def bundled() -> list[Trace]:
    """The bundled traces' inputs (every ``STRIDE``-th), then the scenarios'."""
    traces = [t for _, t in read_jsonl(BUNDLED) if isinstance(t, Trace)]
    return traces[::STRIDE] + [_template(i, s) for i, s in enumerate(SCENARIOS)]


def _outputs(state: Any, clock: int, step: Step) -> tuple[tuple[Any, ...], Any, int]:
    """(what the step produces: response, records, stated post-state fields), the state and clock after it."""
    try:
        after, after_clock, response, written = partition_replay.apply(state, clock, step)
    except (RuntimeError, ValueError, KeyError) as exc:
        return ("refused", type(exc)), None, clock
    return (response, written, partition_replay.observe(after, after_clock, step.post or ())), after, after_clock


def first_difference(trace: Trace, mutant: Mutant) -> Optional[int]:
    """The first step where the mutant's outputs or post-state differ from the reference's on the reference's states."""
    state, clock, path = partition_replay.initial(trace), 0, []
    for step in trace.steps:
        ours, after, after_clock = _outputs(state, clock, step)
        path.append((state, clock, ours))
        if after is None:
            break
        state, clock = after, after_clock
    with mutant.applied():
        return next((i for i, (state, clock, ours) in enumerate(path)
                     if _outputs(state, clock, trace.steps[i])[0] != ours), None)


def _target_runs_at(trace: Trace, index: int, mutant: Mutant) -> bool:
    state, clock = partition_replay.initial(trace), 0
    for step in trace.steps[:index]:
        state, clock, _, _ = partition_replay.run(state, clock, step)
    module_name, name = mutant.target.split(":")
    original = getattr(__import__(module_name, fromlist=[name]), name)
    calls: list[int] = []

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return original(*args, **kwargs)

    with Mutant("spy", mutant.component, "counts calls", mutant.target, counting, ()).applied():
        partition_replay.run(state, clock, trace.steps[index])
    return bool(calls)


def test_every_partition_mutant_target_has_its_callers_listed() -> None:
    assert {all_mutants()[name].target.rsplit(":", 1)[1] for name in PARTITION_MUTANTS} <= set(CALLERS)


@pytest.mark.parametrize("name", PARTITION_MUTANTS)
def test_mutant_recordings_are_flagged_where_the_mutant_first_differs(name: str, bundled: list[Trace],
                                                                      tmp_path: Path) -> None:
    mutant = all_mutants()[name]
    recorded = [replace(partition_replay.record(t, mutant.applied()), meta={**t.meta, "mutant": name}) for t in bundled]
    assert all(replay(t, mutant.applied()).conformant for t in itertools.islice(recorded, 0, None, 10)), \
        "a recording must conform to its mutant"
    differing = [(t, i) for t, i in ((t, first_difference(t, mutant)) for t in recorded) if i is not None]
    assert differing, f"no bundled trace tells {name} from the reference"
    path = tmp_path / f"{name}.jsonl"
    write_jsonl(path, [t for t, _ in differing])
    out = io.StringIO()
    assert check_command([str(path)], True, out) == EXIT_FINDING
    report = json.loads(out.getvalue())
    assert report["divergent"] == len(differing) and report["conformant"] == 0
    callers = CALLERS[mutant.target.rsplit(":", 1)[1]]
    for entry, (trace, index) in zip(report["traces"], differing):
        divergence = entry["divergence"]
        action = divergence["input"]["action"]
        assert entry["id"] == trace.id and divergence["step"] == index, (trace.id, index, divergence["step"])
        assert action in callers and divergence["rule"].endswith(partition_replay.ACTIONS[action].rule), (trace.id, action)
    for trace, index in differing[:20]:
        assert _target_runs_at(trace, index, mutant), (trace.id, index)
