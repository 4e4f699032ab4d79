"""Simulated raft traces (``kraftspec generate sim --component raft``): conformant as simulated, flagged under mutants."""

from __future__ import annotations

import io
import json
from pathlib import Path

import jsonschema
import pytest

from kraftspec import mutants
from kraftspec.models.raft_mutants import MUTANTS
from kraftspec.traces.format import jsonl
from kraftspec.traces.replay.check import EXIT_OK, check_command
from kraftspec.traces.format.envelope import trace_from_json, trace_to_json
from kraftspec.traces.recording.generate import EXIT_ERROR, generate_command
from kraftspec.traces.recording.raft_simulate import (
    FAULTS_ONLY_MUTANTS,
    UNREACHABLE_MUTANTS,
    simulate_one,
    unreachable_mutants,
)
from kraftspec.traces.replay.verdict import replay

SCHEMA = json.loads((Path(jsonl.__file__).parents[1] / "trace-v1.schema.json").read_text())
SEED = 1
FLAGGED = {  # mutant -> (trace index of seed 1 whose recorded node shows it, first divergent step, its rule)
    "raft_vote_shorter_log_same_epoch": (2, 39, "kraftspec.reference.raft._handle_vote_request"),  # a vote granted
    "raft_hw_at_epoch_start": (2, 10, "kraftspec.reference.raft._handle_fetch_request"),  # the HW in a fetch answer
    "raft_hw_from_minority": (2, 9, "kraftspec.reference.raft._handle_vote_response"),  # the HW on election
    "raft_observer_starts_election": (6, 30, "kraftspec.reference.raft._poll"),  # observer 4 stops fetching
    "raft_reset_last_fetched_epoch": (1, 37, "kraftspec.reference.raft._handle_fetch_response"),
    "raft_restart_as_leader": (2, 33, "kraftspec.reference.raft.restart"),  # Leader, not Resigned
    "raft_bootstrap_first_server": (0, 0, "kraftspec.reference.raft._poll"),  # the first Fetch's destination
    "raft_leader_visible_before_catch_up": (2, 9, "kraftspec.reference.raft._handle_vote_response"),  # the listener
}
UNOBSERVABLE = {"raft_check_quorum_non_voter_leader"}  # the simulated leader is always a voter
FLAGGED_WITH_FAULTS = {  # mutants only the simulation with faults reaches: (trace index of seed 1, step, rule)
    "raft_shutdown_ignores_remote_leader": (1, 18, "kraftspec.reference.raft._handle_shutdown"),  # still pending
    "raft_retry_backoff_ignored": (1, 10, "kraftspec.reference.raft._handle_vote_response"),  # asks again at once
}


def test_simulated_traces_are_conformant_round_trip_and_match_the_schema() -> None:
    validator = jsonschema.Draft202012Validator(SCHEMA)
    actions: set[str] = set()
    for index in range(12):
        trace = simulate_one(SEED, index, 40)
        obj = trace_to_json(trace)
        validator.validate(obj)
        assert trace_from_json(json.loads(json.dumps(obj))) == trace
        verdict = replay(trace)
        assert verdict.conformant, (index, verdict.divergence)
        actions |= {step.action for step in trace.steps}
    assert {"tick", "vote_request", "vote_response", "fetch_request", "fetch_response", "restart"} <= actions


def test_the_simulation_is_seeded() -> None:
    assert simulate_one(SEED, 3, 20) == simulate_one(SEED, 3, 20) != simulate_one(SEED + 1, 3, 20)


def test_every_raft_mutant_is_listed_as_flagged_or_unobservable() -> None:
    assert {m.name for m in MUTANTS} == set(FLAGGED) | UNOBSERVABLE | set(FLAGGED_WITH_FAULTS)
    assert set(UNREACHABLE_MUTANTS) == UNOBSERVABLE
    assert set(unreachable_mutants(faults=False)) == UNOBSERVABLE | set(FLAGGED_WITH_FAULTS)


@pytest.mark.parametrize("name", sorted(UNOBSERVABLE))
def test_a_mutant_the_simulation_cannot_reach_changes_nothing_it_records(name: str) -> None:
    """The reason ``generate`` never draws it: 30 simulations of seed 1 under it record what the reference does."""
    with mutants.get(name).applied():
        traces = [simulate_one(SEED, index, 40) for index in range(30)]
    assert all(replay(trace).conformant for trace in traces)
    assert traces == [simulate_one(SEED, index, 40) for index in range(30)]


@pytest.mark.parametrize("name", sorted(FLAGGED))
def test_traces_simulated_under_a_mutant_are_flagged_at_the_step_it_shows(name: str) -> None:
    index, step, rule = FLAGGED[name]
    assert replay(simulate_one(SEED, index, 40)).conformant
    divergence = replay(simulate_one(SEED, index, 40, mutants.get(name).applied())).divergence
    assert divergence is not None, f"trace {index} of seed {SEED} does not show {name}"
    assert (divergence.step, divergence.rule) == (step, rule)


def test_simulated_traces_with_faults_fail_requests_shut_nodes_down_and_conform() -> None:
    """With faults the network answers failed requests with BROKER_NOT_AVAILABLE and nodes shut down gracefully:
    every outcome of a shutdown and a failed answer to each request kind are recorded, a stopped node restarts, and
    the reference replays every trace."""
    validator = jsonschema.Draft202012Validator(SCHEMA)
    failed: set[str] = set()
    outcomes: set[object] = set()
    restarted_after_shutdown = False
    for index in range(40):
        trace = simulate_one(SEED, index, 40, faults=True)
        obj = trace_to_json(trace)
        validator.validate(obj)
        assert trace_from_json(json.loads(json.dumps(obj))) == trace
        assert replay(trace).conformant, index
        for before, step in zip([None, *obj["steps"]], obj["steps"]):
            if step["input"].get("message", {}).get("error") == "BROKER_NOT_AVAILABLE":
                failed.add(step["input"]["action"])
            outcomes.add(step["post"]["shutdown"])
            stopped = before is not None and before["post"]["shutdown"] in ("completed", "timed_out")
            restarted_after_shutdown |= stopped and step["input"]["action"] == "restart"
    assert failed == {"vote_response", "fetch_response", "quorum_epoch_response"}
    assert outcomes == {None, "pending", "completed", "timed_out"} and restarted_after_shutdown
    assert simulate_one(SEED, 3, 20) != simulate_one(SEED, 3, 20, faults=True)


@pytest.mark.parametrize("name", sorted(FLAGGED_WITH_FAULTS))
def test_traces_simulated_with_faults_under_a_mutant_are_flagged_at_the_step_it_shows(name: str) -> None:
    index, step, rule = FLAGGED_WITH_FAULTS[name]
    assert replay(simulate_one(SEED, index, 40, faults=True)).conformant
    divergence = replay(simulate_one(SEED, index, 40, mutants.get(name).applied(), faults=True)).divergence
    assert divergence is not None, f"trace {index} of seed {SEED} with faults does not show {name}"
    assert (divergence.step, divergence.rule) == (step, rule)


@pytest.mark.parametrize("name", sorted(FLAGGED_WITH_FAULTS))
def test_generate_refuses_a_faults_only_mutant_without_faults_and_records_it_with_them(tmp_path: Path,
                                                                                        name: str) -> None:
    out = io.StringIO()
    path = tmp_path / "x.jsonl"
    assert generate_command("sim", str(path), 1, 0, 5, name, stream=out, component="raft") == EXIT_ERROR
    assert FAULTS_ONLY_MUTANTS[name] in out.getvalue() and not path.exists()
    out = io.StringIO()
    assert generate_command("sim", str(path), 1, SEED, 40, name, stream=out, component="raft", faults=True) == 0
    assert "--faults" in out.getvalue()
    (trace,) = [trace for _, trace in jsonl.read_jsonl(str(path))]
    assert trace.meta["faults"] and trace.meta["mutant"] == name and not replay(trace).conformant


def test_generate_sim_raft_then_check(tmp_path: Path) -> None:
    out, report = io.StringIO(), io.StringIO()
    path = str(tmp_path / "raft.parquet")
    assert generate_command("sim", path, 3, 7, 15, stream=out, component="raft") == 0
    assert "wrote 3 traces" in out.getvalue() and "--component raft" in out.getvalue()
    assert check_command([path], False, report) == EXIT_OK, report.getvalue()
    assert "component raft: 3 conformant, 0 divergent" in report.getvalue()


@pytest.mark.parametrize("kind, mutant, message", [
    ("sim", "broker-no-duplicate-check", "mutant 'broker-no-duplicate-check' belongs to component 'broker', not raft"),
    ("sim", "raft_check_quorum_non_voter_leader",
     "mutant 'raft_check_quorum_non_voter_leader' cannot be exercised by the raft simulation: the voters are static"),
    ("tla", "raft_hw_from_minority", "--mutant and --mutant-share apply to simulated traces only"),
])
def test_generate_refuses_what_it_cannot_record(kind: str, mutant: str, message: str, tmp_path: Path) -> None:
    out = io.StringIO()
    path = tmp_path / "x.jsonl"
    assert generate_command(kind, str(path), 2, 0, 5, mutant, stream=out, component="raft") == EXIT_ERROR
    assert message in out.getvalue() and not path.exists()


def test_a_mutant_share_draws_only_reachable_mutants_and_every_trace_shows_its_mutant(tmp_path: Path) -> None:
    """Seed 18, every trace under a mutant: each reachable mutant once, each trace flagged by the reference; the
    unreachable mutant is never drawn and the report names it with the reason."""
    out = io.StringIO()
    path = str(tmp_path / "raft.jsonl")
    reachable = sorted(set(FLAGGED))
    assert generate_command("sim", path, len(reachable), 18, 40, stream=out, mutant_share=1.0, component="raft") == 0
    traces = [trace for _, trace in jsonl.read_jsonl(path)]
    assert sorted(t.meta["mutant"] for t in traces) == reachable
    for trace in traces:
        assert "exercised" not in trace.meta and not replay(trace).conformant, trace.id
        assert (trace.meta.get("draw", 0) > 0) == ("-draw" in (trace.id or "")), trace.id
    (name,) = UNOBSERVABLE
    assert f"mutant {name}: not drawn: {UNREACHABLE_MUTANTS[name]}" in out.getvalue()
    assert "never exercised" not in out.getvalue()
    assert out.getvalue().count(" exercised, draws per trace mean ") == len(reachable)


def test_simulated_traces_with_snapshots_fetch_snapshots_and_conform(tmp_path: Path) -> None:
    """With ``--snapshots`` nodes snapshot, clean their logs and fetch the leader's snapshot in chunks: seed 24's 100-step
    traces reach every snapshot path (a Fetch answered with a snapshot id, chunks served and taken, a snapshot loaded,
    a restart from a snapshot), state the log start and latest snapshot, follow the schema and replay."""
    out = io.StringIO()
    path = str(tmp_path / "snapshots.jsonl")
    assert generate_command("sim", path, 140, 24, 100, stream=out, component="raft", snapshots=True) == EXIT_OK
    assert "--snapshots" in out.getvalue()
    validator = jsonschema.Draft202012Validator(SCHEMA)
    seen: set[str] = set()
    for _, trace in jsonl.read_jsonl(path):
        obj = trace_to_json(trace)
        validator.validate(obj)
        assert replay(trace).conformant, trace.id
        assert trace.meta["snapshots"] and trace.id.startswith("sim-raft-snapshots-24-")
        for step in obj["steps"]:
            action, message = step["input"]["action"], step["input"].get("message", {})
            assert {"log_start_offset", "latest_snapshot_id"} <= set(step["post"])
            seen.add(action)
            if action == "fetch_snapshot_response" and message.get("chunk", 0) > 0 \
                    and message["position"] + message["chunk"] == message["size"]:
                seen.add("snapshot loaded")
            if action == "restart" and step["post"]["log_start_offset"] > 0:
                seen.add("restart from a snapshot")
            for send in step["output"]["response"]["sends"]:
                if send["type"] == "FetchResponse" and "snapshot_id" in send:
                    seen.add("fetch answered with a snapshot id")
    assert {"create_snapshot", "delete_before_snapshot", "fetch_snapshot_request", "fetch_snapshot_response",
            "snapshot loaded", "restart from a snapshot", "fetch answered with a snapshot id"} <= seen


def test_traces_without_snapshots_state_no_snapshot_fields() -> None:
    """Without ``snapshots`` the recorded post-states and explicit config are those of earlier versions."""
    trace = trace_to_json(simulate_one(SEED, 0, 40))
    assert "fetch_snapshot_max_bytes" not in trace["initial"]["explicit"]["config"]
    assert all("log_start_offset" not in step["post"] for step in trace["steps"])
