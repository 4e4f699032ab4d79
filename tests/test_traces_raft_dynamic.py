"""kraft.version 1 raft traces (KIP-853): a node started from its bootstrap checkpoint, VotersRecord and
KRaftVersionRecord in its log, AddRaftVoter, RemoveRaftVoter and ApiVersions as inputs and VoterChangeResponse and
ApiVersionsRequest as sends; ``kraftspec generate sim --component raft --dynamic``, and its mixed quorum."""

from __future__ import annotations

import copy
import io
import json
import random
from pathlib import Path
from typing import Any, Callable, Optional

import jsonschema
import pytest

from kraftspec.harness import raft_mixed
from kraftspec.models.raft_voters_mutants import MUTANTS
from kraftspec.mutants import Mutant
from kraftspec.reference import raft
from kraftspec.reference.raft_messages import AddRaftVoterRequest, ApiVersionsResponse, RemoveRaftVoterRequest
from kraftspec.reference.raft_voters import KRaftVersionRecord, VotersRecord
from kraftspec.traces.format import jsonl
from kraftspec.traces.format.envelope import trace_from_json, trace_to_json
from kraftspec.traces.format.raft import RAFT, decode_record_value, encode_record_value, explicit_state
from kraftspec.traces.format.values import TraceError
from kraftspec.traces.recording.generate import EXIT_ERROR, EXIT_OK, generate_command
from kraftspec.traces.recording.raft_simulate import DYNAMIC_DIRECTORY_IDS, _Quorum, latest_voters, simulate_one
from kraftspec.traces.replay.verdict import replay
from support_traces import assert_round_trips

SCHEMA = json.loads((Path(jsonl.__file__).parents[1] / "trace-v1.schema.json").read_text())
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)
SEED, STEPS = 1, 100
SHOWN = {"voters_majority_of_epoch_start": (28, 80, "kraftspec.reference.raft._handle_fetch_request")}
"""Each voter mutant replay catches: its ``--dynamic`` trace (index of seed 1, 100 steps), the step it shows at and
its rule."""
BOOTSTRAP = [{"id": v, "directory_id": DYNAMIC_DIRECTORY_IDS[v], "listeners": [f"CONTROLLER://controller{v}:9093"]}
             for v in (1, 2, 3)]
OBSERVER = {"local_id": 4, "kraft_version": 1, "directory_id": DYNAMIC_DIRECTORY_IDS[4], "bootstrap_voters": BOOTSTRAP}
VOTERS_RECORD = {"type": "VotersRecord", "version": 0, "voters": [
    {"id": 1, "directory_id": DYNAMIC_DIRECTORY_IDS[1], "listeners": ["CONTROLLER://controller1:9093"],
     "kraft_version_range": [0, 1]},
    {"id": 4, "directory_id": None, "listeners": ["CONTROLLER://controller4:9093"], "kraft_version_range": [0, 1]}]}


def _dynamic_traces(count: int, steps: int = 150) -> list[Any]:
    return [simulate_one(SEED, index, steps, dynamic=True) for index in range(count)]


def test_an_explicit_kraft_version_1_node_starts_from_its_bootstrap_checkpoint() -> None:
    observer = explicit_state(OBSERVER)
    assert observer.voters == frozenset({1, 2, 3}) and not observer.is_voter and observer.dynamic is not None
    assert observer.can_become_voter and observer.voter_endpoints[4] == ("CONTROLLER://controller4:9093",)
    voter = explicit_state({**OBSERVER, "local_id": 2, "directory_id": DYNAMIC_DIRECTORY_IDS[2],
                            "listeners": ["CONTROLLER://c2:1", "OTHER://c2:2"]})
    assert voter.is_voter and voter.dynamic.local_listeners == {"CONTROLLER": ("c2", 1), "OTHER": ("c2", 2)}
    logged = explicit_state({**OBSERVER, "log": [
        {"epoch": 1, "record": {"type": "LeaderChangeMessage", "leader_id": 1, "voters": [1, 2, 3],
                                "granting_voters": [1, 2]}},
        {"epoch": 1, "record": {"type": "KRaftVersionRecord", "version": 0, "kraft_version": 1}},
        {"epoch": 1, "record": VOTERS_RECORD}]})
    assert logged.voters == frozenset({1, 4}) and logged.is_voter  # the latest VotersRecord of its log
    assert not explicit_state({**OBSERVER, "can_become_voter": False}).can_become_voter


def test_control_records_round_trip() -> None:
    for record in (VOTERS_RECORD, {"type": "KRaftVersionRecord", "version": 0, "kraft_version": 1}):
        value = decode_record_value(record, "r")
        assert isinstance(value, (VotersRecord, KRaftVersionRecord)) and encode_record_value(value) == record
    zero = copy.deepcopy(VOTERS_RECORD)
    zero["voters"][1]["directory_id"] = "AAAAAAAAAAAAAAAAAAAAAA"  # Kafka's zero UUID: no directory id
    assert decode_record_value(zero, "r") == decode_record_value(VOTERS_RECORD, "r")


def test_the_three_actions_decode_and_encode() -> None:
    add = {"voter_id": 4, "voter_directory_id": DYNAMIC_DIRECTORY_IDS[4], "listeners": ["CONTROLLER://c4:9093"],
           "source": 1001, "correlation_id": 1}
    args = RAFT.decode_input("add_raft_voter_request", {"message": add, "now": 5}, "steps[0].input")
    assert args["message"] == AddRaftVoterRequest(voter_id=4, voter_directory_id=DYNAMIC_DIRECTORY_IDS[4],
                                                  listeners=("CONTROLLER://c4:9093",), source=1001, correlation_id=1)
    assert {k: v for k, v in RAFT.encode_input("add_raft_voter_request", args)["message"].items() if k in add} == add
    remove = RAFT.decode_input("remove_raft_voter_request", {"message": {"voter_id": 3, "source": 1002}}, "i")
    assert remove["message"] == RemoveRaftVoterRequest(voter_id=3, source=1002)
    answer = RAFT.decode_input("api_versions_response", {"message": {"source": 4, "kraft_version_range": [0, 1]}}, "i")
    assert answer["message"] == ApiVersionsResponse(source=4, kraft_version_range=(0, 1), correlation_id=None)


BAD_STATES: list[tuple[Callable[[dict[str, Any]], None], str]] = [
    (lambda o: o.pop("directory_id"), "initial.explicit: missing field 'directory_id'"),
    (lambda o: o.pop("bootstrap_voters"), "initial.explicit.bootstrap_voters: a kraft.version 1 node needs"),
    (lambda o: o.update(bootstrap_voters=[]), "initial.explicit.bootstrap_voters: a kraft.version 1 node needs"),
    (lambda o: o.update(voters=[1, 2, 3]), "initial.explicit.voters: not a field of a kraft.version 1 node"),
    (lambda o: o.update(endpoints={}), "initial.explicit.endpoints: not a field of a kraft.version 1 node"),
    (lambda o: o.update(kraft_version=2), "initial.explicit.kraft_version: expected a kraft.version, one of 0, 1"),
    (lambda o: o.update(listeners=["controller4:9093"]),
     "initial.explicit.listeners[0]: expected a listener NAME://host:port"),
    (lambda o: o["bootstrap_voters"].append(dict(BOOTSTRAP[0])), "initial.explicit.bootstrap_voters[3].id: voter 1"),
    (lambda o: o["bootstrap_voters"][1].update(kraft_version_range=[0, 1]),
     "initial.explicit.bootstrap_voters[1]: unknown field 'kraft_version_range'"),
    (lambda o: o.update(log=[{"epoch": 1, "record": {"type": "VotersRecord", "voters": [{"id": 1}]}}]),
     "initial.explicit.log[0].record.voters[0]: missing field 'listeners'"),
    (lambda o: o.update(log=[{"epoch": 1, "record": {"type": "KRaftVersionRecord", "kraft_version": 3}}]),
     "initial.explicit.log[0].record.kraft_version: expected a kraft.version"),
    (lambda o: o.update(log=[{"epoch": 1, "record": {**VOTERS_RECORD, "voters": [
        {**VOTERS_RECORD["voters"][0], "kraft_version_range": [1, 0]}]}}]),
     "initial.explicit.log[0].record.voters[0].kraft_version_range: expected [min, max]"),
]


@pytest.mark.parametrize("change,message", BAD_STATES, ids=[m.split(":")[0] + str(i)
                                                            for i, (_, m) in enumerate(BAD_STATES)])
def test_a_wrong_kraft_version_1_state_is_refused_naming_the_path(change: Callable[[dict[str, Any]], None],
                                                                   message: str) -> None:
    state = copy.deepcopy(OBSERVER)
    change(state)
    with pytest.raises(TraceError) as refused:
        explicit_state(state)
    assert str(refused.value).startswith(message), refused.value


def test_a_kraft_version_0_node_takes_no_kraft_version_1_fields() -> None:
    with pytest.raises(TraceError, match=r"^initial.explicit.bootstrap_voters: not a field of a kraft.version 0"):
        explicit_state({"local_id": 1, "bootstrap_voters": BOOTSTRAP})
    with pytest.raises(TraceError, match=r"^steps\[2\].input.message: unknown field 'voter'"):
        RAFT.decode_input("remove_raft_voter_request", {"message": {"voter": 3}}, "steps[2].input")


def test_dynamic_traces_round_trip_follow_the_schema_and_replay_conformant(tmp_path: Path) -> None:
    actions: set[str] = set()
    records: set[str] = set()
    sends: set[str] = set()
    servers: set[tuple[str, int]] = set()  # bootstrap server ids (-2, -3, -4) fetched from and answering
    for trace in _dynamic_traces(8):
        obj = trace_to_json(trace)
        VALIDATOR.validate(obj)
        assert trace_from_json(json.loads(json.dumps(obj))) == trace
        verdict = replay(trace)
        assert verdict.conformant, (trace.id, verdict.divergence)
        actions |= {step.action for step in trace.steps}
        for step in obj["steps"]:
            records |= {e["record"]["type"] for e in step["post"]["log"] if isinstance(e["record"], dict)}
            sends |= {s["type"] for s in step["output"]["response"].get("sends", [])}
            servers |= {(s["type"], s["destination"]) for s in step["output"]["response"].get("sends", [])
                        if s["destination"] <= -2}
            if step["input"]["action"] == "fetch_response" and step["input"]["message"]["source"] <= -2:
                servers.add(("FetchResponse", step["input"]["message"]["source"]))
    assert_round_trips(obj, tmp_path)
    assert {"add_raft_voter_request", "remove_raft_voter_request", "api_versions_response"} <= actions
    assert {"LeaderChangeMessage", "KRaftVersionRecord", "VotersRecord"} <= records
    assert {"VoterChangeResponse", "ApiVersionsRequest"} <= sends
    assert {("FetchRequest", -2), ("FetchResponse", -2)} <= servers <= {
        (kind, server) for kind in ("FetchRequest", "FetchResponse") for server in (-2, -3, -4)}, servers


def test_a_crash_the_node_could_not_restart_from_is_not_drawn() -> None:
    """Seed ``probe:22``: after 4 rules voter 1, which voted for itself in epoch 1 and then followed 2, is removed;
    the reference refuses to restart it (Kafka's ``QuorumState.initialize`` builds a ``CandidateState``, which throws),
    so both simulations leave it running and record nothing, drawing the restart's jitter all the same."""
    quorum = _Quorum(random.Random("probe:22"), dynamic=True)
    for _ in range(4):
        quorum.rule()
    with pytest.raises(ValueError, match="Local replica 1 must be in the set of voters"):
        raft.restart(quorum.nodes[1], quorum.now, 0)
    node, steps, in_flight, draws = quorum.nodes[1], list(quorum.steps), list(quorum.in_flight), quorum.rng.getstate()
    assert any(send.destination == 1 for send in in_flight)  # a crash would lose it
    quorum.crash(1)
    assert (quorum.nodes[1], quorum.steps, quorum.in_flight) == (node, steps, in_flight)
    assert quorum.rng.getstate() != draws


def test_generate_refuses_dynamic_outside_the_raft_simulation(tmp_path: Path) -> None:
    out = io.StringIO()
    assert generate_command("sim", str(tmp_path / "b.jsonl"), 1, 0, dynamic=True, stream=out) == EXIT_ERROR
    assert "--dynamic is a raft simulation's" in out.getvalue()
    out = io.StringIO()
    assert generate_command("sim", str(tmp_path / "r.jsonl"), 2, 0, 10, component="raft", dynamic=True,
                            stream=out) == EXIT_OK
    assert "--dynamic" in out.getvalue()
    out = io.StringIO()  # without --steps: long enough for voters to change (raft_simulate.DYNAMIC_STEPS)
    assert generate_command("sim", str(tmp_path / "d.jsonl"), 1, 0, component="raft", dynamic=True,
                            stream=out) == EXIT_OK
    assert "--steps 150 --component raft --dynamic" in out.getvalue()


def replay_divergence(mutant: Mutant) -> Optional[str]:
    """The divergence the reference finds replaying the mutant's ``--dynamic`` trace recorded under it (None: none)."""
    index, _, _ = SHOWN[mutant.name]
    divergence = replay(simulate_one(SEED, index, STEPS, mutant.applied(), dynamic=True)).divergence
    return None if divergence is None else f"step {divergence.step}: {divergence.rule}"


def test_the_mutants_replay_catches_show_at_their_step_and_rule() -> None:
    assert set(SHOWN) == {m.name for m in MUTANTS if "replay" in m.caught_by}
    for mutant in MUTANTS:
        if mutant.name in SHOWN:
            index, step, rule = SHOWN[mutant.name]
            assert replay(simulate_one(SEED, index, STEPS, dynamic=True)).conformant  # the correct rules
            assert replay_divergence(mutant) == f"step {step}: {rule}"


@pytest.mark.parametrize("faults", [False, True])
def test_a_dynamic_quorum_of_reference_nodes_is_safe_and_every_view_conformant(faults: bool) -> None:
    """Seeded runs of the mixed quorum's safety checks (one leader per epoch, committed entries kept, durable where
    no lacking majority could elect a node) with voters added and removed. Not every seed keeps them, as Kafka 4.3's
    code reads (reported, not masked): a follower that truncated below its control-record read position may count a
    stale voter set and lead without a committed entry, and a removed leader's last voter may restart from its own
    vote as the only voter and lead the epoch its leader still leads (seeds move as the draws do)."""
    voter_sets = set()
    for seed in (1, 2, 3):
        quorum = raft_mixed.MixedQuorum(seed, (), (), faults, dynamic=True)
        for _ in range(150):
            quorum.rule()  # raises Safety on a break
            voter_sets |= {latest_voters(post["log"]) for post in quorum.posts.values()}
        for node, view in quorum.views().items():
            verdict = replay(trace_from_json(view))
            assert verdict.conformant, (seed, node, verdict.divergence)
    assert len(voter_sets) > 2, voter_sets  # voters were added and removed
