"""Raft traces recorded from TLC's state graph of ``KRaftVoters.tla`` (``kraftspec generate tla --component voters``):
reproduced from the seed by the command, conformant as bundled, every edge out of a walked state made by a raft input
but the ones ``voters_tla.LEFT_OUT`` names, the spec's log stated and checked after each edge, and flagged under the
voter-change mutants that show in one leader's log and answers. Needs Java (TLC). ``kraftspec check --with-tlc``
judges them by ``KRaftVotersTrace.tla``: it accepts every step of the bundle and refuses wrong ones."""

from __future__ import annotations

import io
import random
from collections import Counter
from dataclasses import replace
from pathlib import Path

import networkx as nx
import pytest

from kraftspec import mutants
from kraftspec.spec.agree import load_model
from kraftspec.spec.state_graph import state_graph
from kraftspec.spec.tlc_config import read_constants
from kraftspec.traces.format import jsonl
from kraftspec.traces.format.envelope import Trace
from kraftspec.traces.recording import voters_tla
from kraftspec.traces.recording.broker_tla import random_walks
from kraftspec.traces.recording.generate import generate_command
from kraftspec.traces.replay.check import EXIT_OK, check_command
from kraftspec.traces.replay.verdict import replay

BUNDLE = Path(jsonl.__file__).parents[1] / "tla" / "voters.jsonl.gz"
SEED, WALKS, COVER = 20261127, 300, "kinds"
"""The bundle: kraftspec generate tla --component voters --traces 300 --seed 20261127 --cover kinds (``edges`` would be
38,119 paths of 468,261 edges)."""


@pytest.fixture(scope="module")
def graph() -> nx.MultiDiGraph:
    model = load_model("voters")
    found, _ = state_graph(model.module_path, model.config_path, timeout_s=600)
    return found


@pytest.fixture(scope="module")
def walked(graph: nx.MultiDiGraph) -> tuple[voters_tla.Recorder, nx.MultiDiGraph]:
    recorder = voters_tla.Recorder(graph, read_constants(load_model("voters").config_path))
    return recorder, recorder.steps_graph()


def _bundled() -> list[Trace]:
    return [t for _, t in jsonl.read_jsonl(str(BUNDLE))]


def test_the_command_reproduces_the_bundle_from_its_seed_and_it_is_conformant(
        graph: nx.MultiDiGraph, walked: tuple[voters_tla.Recorder, nx.MultiDiGraph], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(voters_tla, "state_graph", lambda *args, **kwargs: (graph, None))
    monkeypatch.setattr(voters_tla.Recorder, "steps_graph", lambda self: walked[1])  # built once, by the fixture
    out, path = io.StringIO(), str(tmp_path / "voters.jsonl.gz")
    assert generate_command("tla", path, WALKS, SEED, stream=out, cover=COVER, component="voters") == EXIT_OK
    assert "--component voters" in out.getvalue() and f"(seed {SEED})" in out.getvalue()
    bundled = _bundled()
    assert [t for _, t in jsonl.read_jsonl(path)] == bundled
    assert sum("walk" in t.meta for t in bundled) == WALKS and len(bundled) > WALKS  # then the covering set
    report = io.StringIO()
    assert check_command([str(BUNDLE)], False, report) == EXIT_OK, report.getvalue()[-2000:]
    assert report.getvalue().splitlines()[-1] == \
        f"checked {len(bundled)} traces from 1 file(s): {len(bundled)} conformant, 0 divergent, 0 unreadable"


def test_other_seeds_walk_otherwise_and_no_walk_is_cut_short(walked: tuple[voters_tla.Recorder, nx.MultiDiGraph]) -> None:
    recorder, graph = walked
    def traces(seed: int) -> list[Trace]:
        return [recorder.trace(path, f"walk-{i}", {}) for i, path in
                enumerate(random_walks(graph, recorder.initial, random.Random(seed), 12))]
    assert traces(7) == traces(7) != traces(8)
    assert not recorder.ended and all(replay(t).conformant for t in traces(7))


def test_every_edge_out_of_a_walked_state_has_an_input_but_the_left_out_ones(
        graph: nx.MultiDiGraph, walked: tuple[voters_tla.Recorder, nx.MultiDiGraph]) -> None:
    recorder, steps = walked
    missing: Counter[str] = Counter()
    for key in steps:
        if key == recorder.initial:
            continue
        made = {(label, after) for _, after, label in steps.out_edges(key, keys=True)}
        missing.update(label for _, after, label in graph.out_edges(key, keys=True) if (label, after) not in made)
    assert missing == {"NextHighWatermark": 230, "HandleRemoveVoterRequest": 172, "HandleAddVoterApiVersions": 238}
    assert set(missing) == set(voters_tla.LEFT_OUT) - {"HandleCreateSnapshot"}  # no snapshot under this cfg
    assert {label for _, _, label in steps.edges(keys=True)} == {
        voters_tla.INIT, "HandleAddVoterRequest", "HandleAddVoterApiVersions", "HandleRemoveVoterRequest",
        "HandleUpdateVoterRequest", "MaybeAppendUpgradedKraftVersion", "NextHighWatermark", "TruncateControlRecords",
        "BecomeLeader", "ClientAppend", "LoseLeadership", "PendingOperationExpires"}


def test_the_traces_start_at_both_kraft_versions_and_state_the_spec_log() -> None:
    bundled = _bundled()
    assert {t.explicit.get("kraft_version", 0) for t in bundled} == {0, 1}
    assert {s.action for t in bundled for s in t.steps} == {
        "tick", "vote_response", "add_raft_voter_request", "fetch_request", "api_versions_response",
        "remove_raft_voter_request", "update_raft_voter_request", "upgrade_kraft_version", "fetch_response",
        "begin_quorum_epoch_request", "append"}
    records = {e["record"]["type"] for t in bundled for s in t.steps if s.post for e in s.post["log"]
               if isinstance(e["record"], dict)}
    assert records == {"LeaderChangeMessage", "KRaftVersionRecord", "VotersRecord"}
    upgraded = next(t for t in bundled if t.explicit.get("kraft_version", 0) == 0
                    and any(s.action == "upgrade_kraft_version" for s in t.steps))
    index = next(i for i, s in enumerate(upgraded.steps) if s.action == "upgrade_kraft_version")
    step = upgraded.steps[index]
    assert step.post is not None and step.post["log"][-2]["record"]["type"] == "KRaftVersionRecord"
    voters = step.post["log"][-1]["record"]["voters"]
    assert [v["id"] for v in voters] == [1, 2, 3] and all(v["directory_id"] for v in voters)
    told = [*step.post["log"][:-1], {**step.post["log"][-1], "record": {
        **step.post["log"][-1]["record"], "voters": [{**v, "directory_id": None} for v in voters]}}]
    wrong = replace(upgraded, steps=upgraded.steps[:index] + (replace(step, post={**step.post, "log": told}),))
    verdict = replay(wrong)
    assert verdict.divergence is not None and verdict.divergence.step == index


@pytest.mark.parametrize(("mutant", "rule", "least"), [
    ("voters_majority_of_epoch_start", "kraftspec.reference.raft._handle_fetch_request", 10),
    # only a high watermark moved by a Fetch completes a change (KafkaRaftClient.onUpdateLeaderHighWatermark)
    ("voters_committed_at_own_offset", "kraftspec.reference.raft._handle_fetch_request", 8),
    ("voters_no_bootstrap_records", "kraftspec.reference.raft._handle_vote_response", 100),
    ("voters_truncation_keeps_end_offset", "kraftspec.reference.raft._poll", 5),
])
def test_voter_change_mutants_are_flagged_by_the_bundle(mutant: str, rule: str, least: int) -> None:
    bundled = _bundled()
    with mutants.get(mutant).applied():
        flagged = [v.divergence for t in bundled for v in [replay(t)] if v.divergence is not None]
    assert len(flagged) >= least and rule in {d.rule for d in flagged}


def test_snapshots_are_recorded_under_the_snapshots_cfg() -> None:
    """``KRaftVoters.snapshots.cfg`` (not bundled): breadth-first from the initial states, a ``create_snapshot`` makes
    ``HandleCreateSnapshot`` (the reference's snapshot projected as the spec's, with the voter set it carries), a
    ``delete_before_snapshot`` makes ``DeleteBeforeSnapshot`` and the leader's Fetch and FetchSnapshot answers make
    ``HandleFetchSnapshotResponse``; the traces of the first paths to a deleted prefix and to a fetched snapshot, the
    log stated after each edge, replay conformant."""
    model = replace(load_model("voters"), config="snapshots")
    graph, _ = state_graph(model.module_path, model.config_path, timeout_s=600)
    recorder = voters_tla.Recorder(graph, read_constants(model.config_path))
    first: dict[str, tuple[voters_tla.Point, list[voters_tla.Edge]]] = {}
    for label, after, path in recorder.first_paths():
        if label in ("DeleteBeforeSnapshot", "HandleFetchSnapshotResponse"):
            first.setdefault(label, (after, path))
            if len(first) == 2:
                break
    (deleted, to_deleted), (fetched, to_fetched) = first["DeleteBeforeSnapshot"], first["HandleFetchSnapshotResponse"]
    assert [label for _, _, label in to_deleted][-2:] == ["HandleCreateSnapshot", "DeleteBeforeSnapshot"]
    trace = recorder.trace(to_deleted, "deleted", {})
    assert [s.action for s in trace.steps][-2:] == ["create_snapshot", "delete_before_snapshot"]
    assert dict(deleted.key)["logStart"] > 0 and replay(trace).conformant
    trace = recorder.trace(to_fetched, "fetched", {})
    assert [s.action for s in trace.steps][-2:] == ["fetch_response", "fetch_snapshot_response"]
    assert dict(fetched.key)["log"] == () and replay(trace).conformant and not recorder.ended


def test_tlc_accepts_every_step_of_the_bundle() -> None:
    """``kraftspec check --with-tlc``: the bundle goes to ``KRaftVotersTrace`` (not ``KRaftQuorumTrace``) and TLC
    explains every step of every trace (about 6 s for the 302 traces)."""
    from kraftspec.spec import trace_validation
    from kraftspec.traces.replay.tlc_validate import check_with_tlc

    bundled = _bundled()
    (chosen,) = [m for m in trace_validation.MODULES["raft"] if m.spec == "KRaftVoters"]
    assert all(chosen.encode(t, chosen.bounds()).cut is None for t in bundled)  # every step in its vocabulary
    out = io.StringIO()
    assert check_with_tlc([str(BUNDLE)], False, out) == EXIT_OK, out.getvalue()[-2000:]
    assert out.getvalue().splitlines()[-1].endswith(
        f"reference and spec: {len(bundled)} agree, 0 disagree, 0 not judged by the spec (outside its bounds)")
    assert out.getvalue().count("accepted by the spec") == len(bundled)


def _wrong_upgrade(trace: Trace) -> tuple[Trace, int]:
    """The trace cut after its upgrade to kraft.version 1, whose VotersRecord now names no directory id."""
    index = next(i for i, s in enumerate(trace.steps) if s.action == "upgrade_kraft_version")
    step = trace.steps[index]
    assert step.post is not None
    last = step.post["log"][-1]
    told = {**last, "record": {**last["record"], "voters": [{**v, "directory_id": None}
                                                             for v in last["record"]["voters"]]}}
    post = {**step.post, "log": [*step.post["log"][:-1], told]}
    return replace(trace, steps=trace.steps[:index] + (replace(step, post=post),)), index


def _wrong_removal(trace: Trace) -> tuple[Trace, int]:
    """The trace cut after its first removal, which now removes another voter (the stated post-state unchanged)."""
    from kraftspec.spec.agree_voters import directory_id

    index = next(i for i, s in enumerate(trace.steps) if s.action == "remove_raft_voter_request")
    step = trace.steps[index]
    assert step.post is not None
    other = min(v["id"] for v in step.post["log"][-1]["record"]["voters"])
    request = replace(step.input["message"], voter_id=other, voter_directory_id=directory_id(other))
    return replace(trace, steps=trace.steps[:index] + (replace(step, input={**step.input, "message": request}),)), \
        index


def _recorded(trace: Trace) -> Trace:
    """The trace's inputs replayed through the reference as it is bound now, each stated post-state restated as the
    reference has it (up to an input it refuses)."""
    from kraftspec.traces.replay import raft as raft_replay

    node, clock, steps = raft_replay.initial(trace), 0, []
    for step in trace.steps:
        try:
            node, clock, _, _ = raft_replay.run(node, clock, step)
        except (RuntimeError, ValueError):
            break
        steps.append(step if step.post is None else replace(step, post=raft_replay.observe(node, clock, step.post)))
    return replace(trace, steps=tuple(steps))


def test_tlc_refuses_a_wrong_post_state_a_changed_step_and_a_mutant_recording() -> None:
    """A stated post-state the spec never reaches and a step changed under its post-state are rejected by TLC at that
    step (the reference diverges at the same step: they agree); so is every bundled trace whose post-states change when
    recorded under ``voters_committed_at_own_offset``, at its first changed step (a leader that removed itself resigns
    before its VotersRecord commits)."""
    from kraftspec.spec.trace_validation import validate

    bundled = _bundled()
    wrong = [_wrong_upgrade(next(t for t in bundled if any(s.action == "upgrade_kraft_version" for s in t.steps))),
             _wrong_removal(next(t for t in bundled if any(s.action == "remove_raft_voter_request" for s in t.steps)))]
    with mutants.get("voters_committed_at_own_offset").applied():
        mutated = [(m, next(i for i, (a, b) in enumerate(zip(m.steps, t.steps)) if a != b))
                   for t in bundled for m in [_recorded(t)] if m != t]
    assert mutated
    verdicts = validate([bad for bad, _ in wrong + mutated])
    assert [(v.outcome, v.step) for v in verdicts[:len(wrong)]] == [("rejected", at) for _, at in wrong]
    for bad, at in wrong:
        divergence = replay(bad).divergence
        assert divergence is not None and divergence.step == at
    assert [(v.outcome, v.step) for v in verdicts[len(wrong):]] == [("rejected", at) for _, at in mutated]
