"""Raft traces validated against ``KRaftQuorum.tla`` with TLC, beside the reference (``--with-tlc``).

A raft trace is one node's view; ``KRaftQuorumTrace.tla`` judges that node with the spec's own per-node
actions. One TLC run judges every case of this file (``verdicts``): a sample of the bundled TLA+ traces and
conformant traces recorded from the reference (hand-chosen inputs and seeded simulations; accepted, or
outside where they leave the spec's abstractions), hand-edited traces and recordings under the raft mutants
(rejected where the reference first diverges), and conformant traces with a step the spec does not model
(outside, never rejected).
"""

from __future__ import annotations

import copy
from dataclasses import replace
import gzip
import json
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

import pytest

from support_traces import assert_outside_not_rejected, with_tlc_report

from kraftspec import mutants, traces
from kraftspec.spec.trace_validation import SpecVerdict, validate
from kraftspec.traces.replay import raft as raft_replay
from kraftspec.traces.format.envelope import Step, Trace, trace_from_json
from kraftspec.traces.recording.raft_simulate import simulate_one
from kraftspec.traces.format.raft import RAFT
from kraftspec.traces.replay.verdict import replay

BUNDLED = Path(traces.__file__).parent / "tla" / "raft.jsonl.gz"
SNAPSHOTS = Path(traces.__file__).parent / "tla" / "raft-snapshots.jsonl.gz"
SNAPSHOT_ACTIONS = {"create_snapshot", "delete_before_snapshot", "fetch_snapshot_request", "fetch_snapshot_response"}
STRIDE = 10
"""Every 10th bundled trace (255 of 2,548): one short TLC run; `kraftspec check --with-tlc` takes them all."""
FRESH_VOTER = {"standard": "raft/fresh-voter"}
LEADER_CHANGE = {"type": "LeaderChangeMessage", "leader_id": 2, "voters": [1, 2, 3], "granting_voters": [1, 2]}

# Fresh voter 1 grants candidate 2's vote in epoch 1 (then fetches from one bootstrap server to find the leader:
# itself, with the default draw), answers voter 3's pre-vote, follows 2 on BeginQuorumEpoch, takes its LeaderChange
# record and the high watermark, and restarts a Follower (§3.2-§3.9).
FOLLOW = [
    {"action": "vote_request", "message": {"replica_id": 2, "replica_epoch": 1, "last_offset_epoch": 0, "last_offset": 0}},
    {"action": "vote_request", "message": {"replica_id": 3, "replica_epoch": 1, "last_offset_epoch": 0, "last_offset": 0,
                                           "pre_vote": True}},
    {"action": "begin_quorum_epoch_request", "message": {"leader_id": 2, "leader_epoch": 1}},
    {"action": "fetch_response", "message": {"source": 2, "leader_epoch": 1, "leader_id": 2, "high_watermark": 0,
                                             "records": [{"epoch": 1, "record": LEADER_CHANGE}]}},
    {"action": "fetch_response", "message": {"source": 2, "leader_epoch": 1, "leader_id": 2, "high_watermark": 1}},
    {"action": "restart"},
]
# Fresh voter 1's election timer fires (Prospective), it sends its pre-votes, voter 2's grant makes it Candidate
# of epoch 1 and 2's vote Leader (BeginQuorumEpoch to both); it answers fetches (the HW moves), appends, answers
# voter 3 and restarts Resigned (§3.5-§3.7); its next poll would send EndQuorumEpoch, which the spec does not model.
ELECT = [
    {"action": "tick", "now": 10},
    {"action": "tick", "now": 5000},
    {"action": "tick"},
    {"action": "vote_response", "message": {"source": 2, "leader_epoch": 0, "vote_granted": True}},
    {"action": "vote_response", "message": {"source": 2, "leader_epoch": 1, "vote_granted": True}},
    {"action": "fetch_request", "message": {"replica_id": 2, "current_leader_epoch": 1, "fetch_offset": 0,
                                            "last_fetched_epoch": 0}},
    {"action": "fetch_request", "message": {"replica_id": 2, "current_leader_epoch": 1, "fetch_offset": 1,
                                            "last_fetched_epoch": 1}},
    {"action": "append", "records": ["x"]},
    {"action": "fetch_request", "message": {"replica_id": 3, "current_leader_epoch": 1, "fetch_offset": 0,
                                            "last_fetched_epoch": 0}},
    {"action": "restart"},
]
# Fresh observer 4 fetches from one bootstrap server; when that Fetch and the election timeout have long passed it
# fetches again (observers never campaign, §3.5).
OBSERVE = [{"action": "tick", "now": 10}, {"action": "tick", "now": 5000}]
# Follower 2 of epoch 1 holds two records; candidate 3 of epoch 2 with one record is refused (§3.4 step 8).
VOTER_WITH_TWO = {"explicit": {"local_id": 2, "quorum_state": {"epoch": 1, "leader_id": 1},
                               "log": [{"epoch": 1, "record": {**LEADER_CHANGE, "leader_id": 1}}, {"epoch": 1, "record": "a"}]}}
REFUSE = [{"action": "vote_request", "message": {"replica_id": 3, "replica_epoch": 2, "last_offset_epoch": 1,
                                                 "last_offset": 1}}]
MUTANTS = {  # mutant -> (initial state, inputs, the step the reference flags)
    "raft_hw_from_minority": (FRESH_VOTER, ELECT, 4),  # the HW moves on election
    "raft_hw_at_epoch_start": (FRESH_VOTER, ELECT, 5),  # the HW in the first fetch answer
    "raft_restart_as_leader": (FRESH_VOTER, ELECT, 9),  # Leader after the restart, not Resigned
    "raft_reset_last_fetched_epoch": (FRESH_VOTER, FOLLOW, 4),  # the next fetch's last fetched epoch
    "raft_observer_starts_election": ({"standard": "raft/fresh-observer"}, OBSERVE, 1),  # observer 4 Prospective
    "raft_vote_shorter_log_same_epoch": (VOTER_WITH_TWO, REFUSE, 0),  # the vote granted
}
UNOBSERVABLE = {"raft_check_quorum_non_voter_leader",  # the spec's leaders are voters and never check quorum
                "raft_shutdown_ignores_remote_leader",  # the spec models no graceful shutdown (the action is outside)
                # The spec's sends are untimed (no request back-off): a recording under it would be accepted, as an
                # abstraction, but none is recorded here yet.
                "raft_retry_backoff_ignored",
                # Its fetch below the log start needs a fetch offset other than 0 below it: a log start of 2 (at
                # MaxLogLen 2, the deep bounds), which no recording here reaches.
                "raft_snapshot_fetch_below_log_start",
                # The spec's batches hold one record each (an append of one, a kraft.version 0 LeaderChange): no batch
                # to cut in a Fetch answer or to snapshot inside.
                "raft_fetch_cuts_batches", "raft_snapshot_inside_a_batch"}
ABSTRACTED = {  # mutant -> (initial state, inputs, the step the reference flags) where the spec allows what it does
    # The spec picks the bootstrap server nondeterministically: the draw a trace states is the reference's alone.
    "raft_bootstrap_first_server": ({"standard": "raft/fresh-observer"}, [{"action": "tick", "now": 10, "bootstrap": 1}],
                                    0),
    # The spec has no listener: the post-state's ``listener`` is the reference's alone (the new leader told at once).
    "raft_leader_visible_before_catch_up": (FRESH_VOTER, ELECT, 4),
}
SIMULATED_MUTANTS = {  # mutant -> (index of a seed-1 simulation of 40 steps it shows in, the step the reference flags)
    "raft_hw_at_epoch_start": (2, 10), "raft_hw_from_minority": (2, 9), "raft_observer_starts_election": (7, 6),
    "raft_reset_last_fetched_epoch": (1, 37)}
"""Seed-1 recordings under the mutant whose node stays within the spec up to the step the mutant shows at."""
SIMULATED = range(60)
"""Seed-1 simulations of 40 steps (``kraftspec generate sim --component raft``): conformant, never rejected (most
leave the spec's bounds or abstractions, e.g. by a resign: 4 of these 60 stay within them)."""


def recorded(initial: dict[str, Any], inputs: list[dict[str, Any]],
             within: AbstractContextManager[Any] = nullcontext()) -> dict[str, Any]:
    """A trace of ``inputs`` from ``initial`` stating every send and the whole post-state the reference gives
    (under ``within``, e.g. a mutant applied)."""
    obj: dict[str, Any] = {"format": "1.0", "component": "raft", "id": "hand-chosen", "initial": initial, "steps": []}
    with within:
        node, clock = raft_replay.initial(trace_from_json(obj)), 0
        for given in inputs:
            args = RAFT.decode_input(given["action"], {k: v for k, v in given.items() if k != "action"}, "input")
            node, clock, response, _ = raft_replay.apply(node, clock, Step(given["action"], args))
            obj["steps"].append({"input": given, "output": {"response": response},
                                 "post": raft_replay.observe(node, clock)})
    return obj


# KIP-996 in the spec: voter 1, having voted in epoch 1, moves to epoch 2 on a pre-vote request of that epoch and
# grants it (its log is as long); fresh voter 1 starts its pre-vote and both other voters reject it: Unattached again.
NEWER_PREVOTE = FOLLOW[:1] + [{"action": "vote_request", "message": {
    "replica_id": 3, "replica_epoch": 2, "last_offset_epoch": 0, "last_offset": 0, "pre_vote": True}}]
LOST_PREVOTE = ELECT[:3] + [{"action": "vote_response", "message": {"source": 2, "leader_epoch": 0}},
                            {"action": "vote_response", "message": {"source": 3, "leader_epoch": 0}}]


def conformant() -> list[dict[str, Any]]:
    return [recorded(FRESH_VOTER, FOLLOW), recorded(FRESH_VOTER, ELECT),
            recorded({"standard": "raft/fresh-observer"}, OBSERVE), recorded(VOTER_WITH_TWO, REFUSE),
            recorded(FRESH_VOTER, NEWER_PREVOTE), recorded(FRESH_VOTER, LOST_PREVOTE)]


def edited() -> list[tuple[dict[str, Any], int]]:
    """Conformant traces made non-conformant at one step: a sent request's field, a reply's field, a post-state epoch."""
    follow, elect = recorded(FRESH_VOTER, FOLLOW), recorded(FRESH_VOTER, ELECT)
    begin = copy.deepcopy(elect)
    begin["steps"][4]["output"]["response"]["sends"][1]["leader_epoch"] = 2
    refused = copy.deepcopy(follow)
    refused["steps"][0]["output"]["response"]["sends"][0]["vote_granted"] = False
    epoch = copy.deepcopy(follow)
    epoch["steps"][2]["post"]["epoch"] = 2
    hw = copy.deepcopy(elect)
    hw["steps"][6]["output"]["response"]["sends"][0]["high_watermark"] = 0
    return [(begin, 4), (refused, 0), (epoch, 2), (hw, 6)]


def outside() -> list[tuple[dict[str, Any], int, str]]:
    """Conformant traces with a step the spec does not model or beyond its bounds."""
    def then(inputs: list[dict[str, Any]], *more: dict[str, Any]) -> tuple[dict[str, Any], int]:
        return recorded(FRESH_VOTER, inputs + list(more)), len(inputs)

    leading = ELECT[:8]
    resign, at_resign = then(leading, {"action": "resign", "epoch": 1})
    describe, at_describe = then(leading, {"action": "describe_quorum_request", "message": {"source": 7}})
    newer, at_newer = then(FOLLOW, {"action": "begin_quorum_epoch_request", "message": {"leader_id": 3, "leader_epoch": 3}})
    crashes, at_crashes = then(FOLLOW, {"action": "restart"})
    return [(resign, at_resign, "action 'resign' is not modelled"),
            (describe, at_describe, "action 'describe_quorum_request' is not modelled"),
            (newer, at_newer, "epoch 3 is outside 0..MaxEpoch (2)"),
            (crashes, at_crashes, "the crashes have reached MaxFaults")]


@pytest.fixture(scope="module")
def mutated() -> list[tuple[str, Trace, int]]:
    """Each raft mutant's recording of its inputs, and simulations under some, with the step the reference flags."""
    found = [(name, trace_from_json(recorded(initial, inputs, mutants.get(name).applied())), step)
             for name, (initial, inputs, step) in sorted(MUTANTS.items())]
    found += [(name, simulate_one(1, index, 40, mutants.get(name).applied()), step)
              for name, (index, step) in sorted(SIMULATED_MUTANTS.items())]
    for name, trace, step in found:
        divergence = replay(trace).divergence
        assert divergence is not None and divergence.step == step, (name, trace.id, divergence)
    return found


def with_snapshots() -> list[Trace]:
    """The bundled traces of ``KRaftQuorum.snapshots.cfg`` that take a snapshot action (KIP-630)."""
    with gzip.open(SNAPSHOTS, "rt") as lines:
        found = [trace_from_json(json.loads(line)) for line in lines]
    return [t for t in found if SNAPSHOT_ACTIONS & {s.action for s in t.steps}]


def snapshot_edited() -> list[tuple[Trace, int]]:
    """A bundled trace whose node loads a fetched snapshot, stated as keeping its log start at 0, and one whose
    cleaner's step states a latest snapshot it does not have: both diverge there."""
    found = []
    for action, field, value in (("fetch_snapshot_response", "log_start_offset", 0),
                                 ("delete_before_snapshot", "latest_snapshot_id", [1, 0])):
        trace = next(t for t in with_snapshots()
                     if any(s.action == action and s.post and s.post.get("log_start_offset") for s in t.steps))
        step = next(i for i, s in enumerate(trace.steps)
                    if s.action == action and s.post and s.post.get("log_start_offset"))
        edited = replace(trace.steps[step], post={**trace.steps[step].post, field: value})
        found.append((replace(trace, steps=trace.steps[:step] + (edited,) + trace.steps[step + 1:]), step))
    return found


@pytest.fixture(scope="module")
def verdicts(mutated: list[tuple[str, Trace, int]]) -> dict[str, list[SpecVerdict]]:
    """The spec's verdicts on every case of this file, from one TLC run."""
    with gzip.open(BUNDLED, "rt") as lines:
        bundled = [trace_from_json(json.loads(line)) for line in lines][::STRIDE]
    cases = {"bundled": bundled,
             "conformant": [trace_from_json(obj) for obj in conformant()],
             "simulated": [simulate_one(1, index, 40) for index in SIMULATED],
             "mutated": [trace for _, trace, _ in mutated],
             "abstracted": [trace_from_json(recorded(initial, inputs, mutants.get(name).applied()))
                            for name, (initial, inputs, _) in sorted(ABSTRACTED.items())],
             "edited": [trace_from_json(obj) for obj, _ in edited()],
             "outside": [trace_from_json(obj) for obj, _, _ in outside()],
             "snapshots": with_snapshots(),
             "snapshot_edited": [trace for trace, _ in snapshot_edited()]}
    judged = iter(validate([trace for group in cases.values() for trace in group]))
    return {name: [next(judged) for _ in group] for name, group in cases.items()}


def test_a_sample_of_the_bundled_tla_traces_is_accepted_by_the_spec(verdicts: dict[str, list[SpecVerdict]]) -> None:
    assert len(verdicts["bundled"]) > 200
    assert [v.outcome for v in verdicts["bundled"]] == ["accepted"] * len(verdicts["bundled"]), [
        v for v in verdicts["bundled"] if v.outcome != "accepted"][:3]


def test_the_bundled_traces_with_snapshots_are_accepted_by_the_spec(verdicts: dict[str, list[SpecVerdict]]) -> None:
    """KIP-630: traces recorded from ``KRaftQuorum.snapshots.cfg`` that create, clean, serve and load snapshots."""
    judged = verdicts["snapshots"]
    assert {s.action for t in with_snapshots() for s in t.steps} >= SNAPSHOT_ACTIONS and len(judged) > 100
    assert [v.outcome for v in judged] == ["accepted"] * len(judged), [v for v in judged if v.outcome != "accepted"][:3]


def test_a_snapshot_trace_edited_to_be_non_conformant_is_rejected_by_both_at_the_same_step(
        verdicts: dict[str, list[SpecVerdict]]) -> None:
    for (trace, step), spec in zip(snapshot_edited(), verdicts["snapshot_edited"]):
        divergence = replay(trace).divergence
        assert divergence is not None and divergence.step == step, (trace.id, divergence)
        assert spec.outcome == "rejected" and spec.step == step, (trace.id, step, spec)


def test_conformant_traces_of_a_voter_and_an_observer_are_accepted(verdicts: dict[str, list[SpecVerdict]]) -> None:
    for obj, verdict in zip(conformant(), verdicts["conformant"]):
        assert replay(trace_from_json(obj)).conformant
        assert verdict.outcome == "accepted", (obj["initial"], verdict)


def test_simulated_traces_are_accepted_or_outside_never_rejected(verdicts: dict[str, list[SpecVerdict]]) -> None:
    outcomes = [v.outcome for v in verdicts["simulated"]]
    assert "rejected" not in outcomes, [(i, v) for i, v in zip(SIMULATED, verdicts["simulated"]) if v.outcome == "rejected"]
    assert outcomes.count("accepted") >= 3, outcomes


def test_every_raft_mutant_is_recorded_or_listed_as_unobservable() -> None:
    assert {m.name for m in mutants.all_mutants().values() if m.component == "raft"} == set(MUTANTS) | UNOBSERVABLE | set(ABSTRACTED)


def test_mutant_recordings_are_rejected_by_the_spec_where_the_reference_flags_them(
        mutated: list[tuple[str, Trace, int]], verdicts: dict[str, list[SpecVerdict]]) -> None:
    for (name, _, step), spec in zip(mutated, verdicts["mutated"]):
        assert spec.outcome == "rejected" and spec.step == step, (name, step, spec)


def test_a_mutant_the_spec_abstracts_is_flagged_by_the_reference_and_accepted_by_the_spec(
        verdicts: dict[str, list[SpecVerdict]]) -> None:
    for (name, (initial, inputs, step)), spec in zip(sorted(ABSTRACTED.items()), verdicts["abstracted"]):
        divergence = replay(trace_from_json(recorded(initial, inputs, mutants.get(name).applied()))).divergence
        assert divergence is not None and divergence.step == step, (name, divergence)
        assert spec.outcome == "accepted", (name, spec)


def test_a_trace_edited_to_be_non_conformant_is_rejected_by_both_at_the_same_step(
        verdicts: dict[str, list[SpecVerdict]]) -> None:
    for (obj, step), spec in zip(edited(), verdicts["edited"]):
        divergence = replay(trace_from_json(obj)).divergence
        assert divergence is not None and divergence.step == step
        assert spec.outcome == "rejected" and spec.step == step, (step, spec)


def test_a_step_the_spec_does_not_model_is_outside_rather_than_rejected(verdicts: dict[str, list[SpecVerdict]]) -> None:
    assert_outside_not_rejected(outside(), verdicts["outside"])


def test_check_with_tlc_judges_raft_traces(tmp_path: Path) -> None:
    text = with_tlc_report(tmp_path / "raft.jsonl", conformant()[:2] + [edited()[0][0], outside()[0][0]], 1)
    assert text.count("spec:      accepted by the spec") == 2
    assert "spec:      REJECTED by the spec at step 4" in text and "reference: DIVERGES at step 4" in text
    assert "outside the spec's bounds at step 8: action 'resign' is not modelled" in text
    assert text.strip().endswith("checked 4 traces from 1 file(s): 3 conformant, 1 divergent, 0 unreadable; "
                                 "reference and spec: 3 agree, 0 disagree, 1 not judged by the spec "
                                 "(outside its bounds)")
