"""The raft component of the trace format (rules §3): hand-written KRaft scenarios, verdicts, codecs, errors."""

from __future__ import annotations

import copy
import io
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from support_traces import assert_round_trips, assert_schema_lists

from kraftspec import oracle
from kraftspec.traces.format import jsonl
from kraftspec.traces.replay import raft as raft_replay
from kraftspec.traces.replay.check import EXIT_FINDING, EXIT_OK, check_command
from kraftspec.traces.format.envelope import trace_from_json
from kraftspec.traces.format.raft import ACTIONS, STANDARD_STATES
from kraftspec.traces.replay.verdict import Verdict, replay
from kraftspec.traces.format.values import TraceError

SCHEMA = json.loads((Path(jsonl.__file__).parents[1] / "trace-v1.schema.json").read_text())
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)
LEADER_CHANGE = {"type": "LeaderChangeMessage", "leader_id": 1, "voters": [1, 2, 3], "granting_voters": [1, 2]}


def raft_trace(initial: dict[str, Any], *steps: dict[str, Any]) -> dict[str, Any]:
    return {"format": "1.0", "component": "raft", "id": "hand-written", "initial": initial, "steps": list(steps)}


def diverges(obj: dict[str, Any]) -> Verdict:
    verdict = replay(trace_from_json(obj))
    assert verdict.divergence is not None
    return verdict


def example() -> dict[str, Any]:
    """FORMAT.md's raft example."""
    text = (Path(__file__).parents[1] / "traces" / "FORMAT.md").read_text()
    blocks = text.split("```json\n")[1:]
    return json.loads(next(b.split("```", 1)[0] for b in blocks if '"component": "raft", "id": "example-3"' in b))


# Follower 2 of leader 1 in epoch 1 holds offsets 0-1 of epoch 1. Candidate 3 (epoch 2) has only offset 0
# of epoch 1: refused (its log is shorter in the same last epoch, §3.4 step 8), then the Unattached node fetches
# from the bootstrap server its draw picks (voter 3); candidate 1 is as long: granted.
VOTES = raft_trace(
    {"explicit": {"local_id": 2, "quorum_state": {"epoch": 1, "leader_id": 1},
                  "log": [{"epoch": 1, "record": LEADER_CHANGE}, {"epoch": 1, "record": "a"}]}},
    {"input": {"action": "vote_request", "now": 100, "bootstrap": 2,
               "message": {"replica_id": 3, "replica_epoch": 2, "last_offset_epoch": 1, "last_offset": 1}},
     "output": {"response": {"sends": [
         {"destination": 3, "type": "VoteResponse", "leader_epoch": 2, "leader_id": -1, "vote_granted": False},
         {"destination": 3, "type": "FetchRequest", "current_leader_epoch": 2}]}},
     "post": {"role": "Unattached", "epoch": 2, "voted_key": None,
              "quorum_state_file": {"epoch": 2, "leader_id": -1, "voted_key": None}}},
    {"input": {"action": "vote_request", "now": 150,
               "message": {"replica_id": 1, "replica_epoch": 2, "last_offset_epoch": 1, "last_offset": 2}},
     "output": {"response": {"sends": [{"destination": 1, "type": "VoteResponse", "vote_granted": True}]}},
     "post": {"role": "Unattached", "epoch": 2, "voted_key": {"id": 1, "directory_id": None}}},
)

# Follower 2 of epoch 3 holds an entry of epoch 2 the leader never had: the diverging epoch (1, 2) truncates it,
# the refetch brings the leader's epoch-3 record and the high watermark (§3.7).
TRUNCATION = raft_trace(
    {"explicit": {"local_id": 2, "quorum_state": {"epoch": 3, "leader_id": 1},
                  "log": [{"epoch": 1, "record": LEADER_CHANGE}, {"epoch": 1, "record": "a"}, {"epoch": 2, "record": "b"}]}},
    {"input": {"action": "tick", "now": 10},
     "output": {"response": {"sends": [{"destination": 1, "type": "FetchRequest", "fetch_offset": 3, "last_fetched_epoch": 2,
                                        "correlation_id": 1}]}}},
    {"input": {"action": "fetch_response", "now": 20,
               "message": {"source": 1, "leader_epoch": 3, "leader_id": 1, "diverging_epoch": [1, 2]}},
     "output": {"response": {"sends": [
         {"destination": 1, "type": "FetchRequest", "fetch_offset": 2, "last_fetched_epoch": 1}]}},
     "post": {"log_end_offset": 2, "last_fetched_epoch": 1, "epoch_cache": [[1, 0]], "high_watermark": -1}},
    {"input": {"action": "fetch_response", "now": 40,
               "message": {"source": 1, "leader_epoch": 3, "leader_id": 1, "high_watermark": 3, "correlation_id": 2,
                           "records": [{"epoch": 3, "record": {**LEADER_CHANGE, "granting_voters": [1, 3]}}]}},
     "output": {"response": {"sends": [{"destination": 1, "type": "FetchRequest", "fetch_offset": 3, "last_fetched_epoch": 3,
                                        "high_watermark": 3}]}},
     "post": {"role": "Follower", "high_watermark": 3, "log_end_offset": 3, "flushed_end_offset": 3,
              "epoch_cache": [[1, 0], [3, 2]]}},
    {"input": {"action": "append", "now": 50, "records": ["x"]},
     "output": {"response": {"sends": [], "last_offset": None}}},
)

# The leader of epoch 1 (log: its LeaderChange record) answers a fetch claiming offset 2 of epoch 1 with the
# diverging epoch (1, 1), then polls: BeginQuorumEpoch to both voters (§3.6); a fetch at its end moves the high
# watermark once a majority (1, 2) holds offset 1; then it appends, resigns and restarts Resigned (§3.2).
LEADER = raft_trace(
    {"standard": "raft/leader"},
    {"input": {"action": "fetch_request", "now": 10,
               "message": {"replica_id": 3, "current_leader_epoch": 1, "fetch_offset": 2, "last_fetched_epoch": 1}},
     "output": {"response": {"sends": [{"destination": 3, "type": "FetchResponse", "diverging_epoch": [1, 1],
                                        "high_watermark": -1, "records": []},
                                       {"destination": 2, "type": "BeginQuorumEpochRequest", "leader_epoch": 1},
                                       {"destination": 3, "type": "BeginQuorumEpochRequest", "leader_epoch": 1}]}}},
    {"input": {"action": "fetch_request", "now": 20,
               "message": {"replica_id": 2, "current_leader_epoch": 1, "fetch_offset": 1, "last_fetched_epoch": 1}},
     "output": {"response": {"sends": [{"destination": 2, "type": "FetchResponse", "diverging_epoch": [-1, -1],
                                        "high_watermark": 1}]}},
     "post": {"role": "Leader", "high_watermark": 1}},
    {"input": {"action": "append", "now": 30, "records": ["y", 7]},
     "output": {"response": {"sends": [], "last_offset": 2}},
     "post": {"log_end_offset": 3, "log": [{"epoch": 1, "record": {**LEADER_CHANGE, "version": 0}},
                                           {"epoch": 1, "record": "y"},
                                           {"epoch": 1, "record": 7, "starts_batch": False}]}},
    {"input": {"action": "resign", "epoch": 1, "now": 40},  # the poll after resign() resigns (Kafka's pollLeader)
     "output": {"response": {"sends": []}}, "post": {"role": "Resigned"}},
    {"input": {"action": "tick", "now": 45},  # and the next one sends EndQuorumEpoch (pollResigned)
     "output": {"response": {"sends": [
         {"destination": 2, "type": "EndQuorumEpochRequest", "preferred_successors": [2, 3]},
         {"destination": 3, "type": "EndQuorumEpochRequest", "preferred_successors": [2, 3]}]}},
     "post": {"role": "Resigned"}},
    {"input": {"action": "restart", "now": 50}, "output": {"response": {"sends": []}},
     "post": {"role": "Resigned", "epoch": 1, "quorum_state_file": {"epoch": 1, "leader_id": 1, "voted_key": None}}},
)

SCENARIOS = {"votes": VOTES, "truncation": TRUNCATION, "leader": LEADER, "example": example()}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_hand_written_scenarios_are_valid_and_conformant(name: str) -> None:
    VALIDATOR.validate(SCENARIOS[name])
    assert replay(trace_from_json(SCENARIOS[name])).conformant


def test_a_vote_granted_to_a_shorter_log_is_flagged_with_the_vote_handler() -> None:
    wrong = copy.deepcopy(VOTES)
    wrong["steps"][0]["output"]["response"]["sends"][0]["vote_granted"] = True
    divergence = diverges(wrong).divergence
    assert divergence.step == 0 and divergence.rule == "kraftspec.reference.raft._handle_vote_request"
    assert [str(d) for d in divergence.diffs] == ["response.sends[0].vote_granted: expected false, observed true"]
    assert "handleVoteRequest" in divergence.rule_doc
    assert 'state: Follower {"epoch":1,"leader_id":1,' in divergence.state_before


def test_a_follower_that_does_not_truncate_is_flagged_at_the_diverging_fetch() -> None:
    wrong = copy.deepcopy(TRUNCATION)
    wrong["steps"][1]["post"]["log_end_offset"] = 3
    divergence = diverges(wrong).divergence
    assert divergence.step == 1 and divergence.rule == "kraftspec.reference.raft._handle_fetch_response"
    assert [str(d) for d in divergence.diffs] == ["post.log_end_offset: expected 2, observed 3"]
    assert "log: end offset 3, flushed 3, last fetched epoch 2" in divergence.state_before


@pytest.mark.parametrize("change, path", [
    (lambda s: s[0]["output"]["response"]["sends"][0].update(diverging_epoch=[1, 0]),
     "response.sends[0].diverging_epoch[1]"),
    (lambda s: s[0]["output"]["response"]["sends"][0].update(destination=2), "response.sends[0].destination"),
    (lambda s: s[2]["output"]["response"].update(last_offset=3), "response.last_offset"),
    (lambda s: s[0]["output"]["response"]["sends"].pop(), "response.sends[2]"),
    (lambda s: s[4]["post"].update(role="Leader"), "post.role"),
    # fields stated only away from their default: a difference there diverges (it is no misspelt field)
    (lambda s: s[1]["output"]["response"]["sends"][0].update(snapshot_id=[1, 1]), "response.sends[0].snapshot_id"),
    (lambda s: s[2]["post"]["log"][1].update(starts_batch=False), "post.log[1].starts_batch"),
    (lambda s: s[2]["post"]["log"][2].pop("starts_batch"), "post.log[2].starts_batch"),
])
def test_a_wrong_send_of_the_leader_is_flagged_at_its_step(change: Any, path: str) -> None:
    wrong = copy.deepcopy(LEADER)
    change(wrong["steps"])
    divergence = diverges(wrong).divergence
    assert [d.path for d in divergence.diffs] == [path] and divergence.rule.startswith("kraftspec.reference.raft.")


def test_only_the_stated_fields_of_a_sent_message_are_compared() -> None:
    """A trace may leave out correlation ids and endpoints; the destination, type and the count still count."""
    terse = copy.deepcopy(TRUNCATION)
    terse["steps"][0]["output"]["response"]["sends"] = [{"destination": 1, "type": "FetchRequest"}]
    assert replay(trace_from_json(terse)).conformant
    terse["steps"][0]["output"]["response"]["sends"][0]["type"] = "VoteRequest"
    divergence = diverges(terse).divergence
    assert divergence.step == 0 and divergence.rule == "kraftspec.reference.raft._poll"
    assert [str(d) for d in divergence.diffs] == ['response.sends[0].type: expected "FetchRequest", observed "VoteRequest"']


def test_a_fatal_condition_is_the_reference_refusing_the_input() -> None:
    """A second leader in a known leader's epoch: Kafka's client throws (§3.8)."""
    obj = copy.deepcopy(TRUNCATION)
    obj["steps"].append({"input": {"action": "begin_quorum_epoch_request", "now": 60,
                                   "message": {"leader_id": 3, "leader_epoch": 3}}})
    divergence = diverges(obj).divergence
    assert divergence.step == 4 and divergence.rule == "kraftspec.reference.raft._handle_begin_quorum_epoch_request"
    assert "RaftFatalError: leader 3 in epoch 3 conflicts with known leader 1" in str(divergence.diffs[0].expected)


def test_every_standard_state_starts_and_the_leader_is_elected() -> None:
    assert set(STANDARD_STATES) == {"raft/fresh-voter", "raft/fresh-observer", "raft/follower", "raft/leader"}
    roles = {name: raft_replay.initial(trace_from_json(raft_trace({"standard": name}))).state.role
             for name in STANDARD_STATES}
    assert roles == {"raft/fresh-voter": "Unattached", "raft/fresh-observer": "Unattached",
                     "raft/follower": "Follower", "raft/leader": "Leader"}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_scenarios_round_trip_through_json_lines_and_parquet(name: str, tmp_path: Path) -> None:
    assert_round_trips(SCENARIOS[name], tmp_path)


def test_check_reports_a_raft_divergence_with_the_rule(tmp_path: Path) -> None:
    wrong = copy.deepcopy(VOTES)
    wrong["steps"][1]["post"]["voted_key"] = None
    path = tmp_path / "votes.jsonl"
    path.write_text(json.dumps(VOTES) + "\n" + json.dumps(wrong) + "\n")
    out = io.StringIO()
    assert check_command([str(path)], False, out) == EXIT_FINDING
    text = out.getvalue()
    assert "DIVERGES at step 1 of 2: vote_request" in text and 'post.voted_key: expected {"id":1' in text
    assert "rule: kraftspec.reference.raft._handle_vote_request" in text and "1 conformant, 1 divergent" in text


BAD_INPUTS = [
    ({"action": "vote", "now": 1}, "steps[0].input.action: unknown action 'vote' for component raft (known: "
                                   f"{', '.join(sorted(ACTIONS))})"),
    ({"action": "vote_request"}, "steps[0].input: action 'vote_request' needs 'message'"),
    ({"action": "tick", "message": {}}, "steps[0].input: unknown argument 'message' for action 'tick'"),
    ({"action": "tick", "jitter": "5"}, "steps[0].input.jitter: expected an integer, got string"),
    ({"action": "vote_request", "message": {"replica_id": 1, "replica_epoch": 1, "last_offset_epoch": 0,
                                            "last_offset": 0, "granted": True}},
     "steps[0].input.message: unknown field 'granted' for VoteRequest"),
    ({"action": "fetch_response", "message": {"source": 1, "records": [{"epoch": 1, "record": [1]}]}},
     "steps[0].input.message.records[0].record: expected a string, an integer, null or a LeaderChangeMessage, "
     "VotersRecord or KRaftVersionRecord object"),
    ({"action": "fetch_response", "message": {"source": 1, "records": [{"record": "a"}]}},
     "steps[0].input.message.records[0]: missing field 'epoch'"),
    ({"action": "vote_response", "message": {"source": 1, "records": []}},
     "steps[0].input.message: unknown field 'records' for VoteResponse"),
    ({"action": "append", "records": "a"}, "steps[0].input.records: expected an array of records"),
    ({"action": "append", "records": [{"type": "LeaderChangeMessage", "leader_id": 1}]},
     "steps[0].input.records[0]: missing field 'voters' for LeaderChangeMessage"),
    ({"action": "quorum_epoch_response", "message": {"source": 1, "api": "BeginQuorumEpoch", "error": "NOPE"}},
     "steps[0].input.message.error: unknown error code 'NOPE'"),
    ({"action": "quorum_epoch_response", "message": {"source": 1, "api": "Begin"}},
     "steps[0].input.message.api: expected one of BeginQuorumEpoch, EndQuorumEpoch, got 'Begin'"),
]


@pytest.mark.parametrize("given, message", BAD_INPUTS)
def test_malformed_raft_inputs_give_one_line_errors_with_the_path(given: dict[str, Any], message: str) -> None:
    with pytest.raises(TraceError) as caught:
        trace_from_json(raft_trace({"standard": "raft/fresh-voter"}, {"input": given}))
    assert str(caught.value) == message


@pytest.mark.parametrize("explicit, message", [
    ({"local_id": 1, "term": 2}, "initial.explicit: unknown field 'term'"),
    ({"voters": [1]}, "initial.explicit: missing field 'local_id'"),
    ({"local_id": 1, "config": {"election_timeout": 5}},
     "initial.explicit.config: unknown field 'election_timeout' for QuorumConfig"),
    ({"local_id": 1, "log": [{"epoch": 2, "record": 0}, {"epoch": 1, "record": 1}]},
     "initial.explicit: not a node the reference can start: epoch 1 at offset 1 is below the latest epoch 2"),
    ({"local_id": 1, "endpoints": {"one": ["x"]}}, "initial.explicit.endpoints.one: expected a node id as the key"),
])
def test_malformed_explicit_states_give_one_line_errors_with_the_path(explicit: dict[str, Any], message: str) -> None:
    with pytest.raises(TraceError) as caught:
        trace_from_json(raft_trace({"explicit": explicit}))
    assert str(caught.value) == message


def test_raft_steps_write_no_records() -> None:
    obj = copy.deepcopy(TRUNCATION)
    obj["steps"][0]["output"]["records"] = [{"offset": 0, "type": "NoOpRecord"}]
    with pytest.raises(TraceError, match=r"^steps\[0\].output.records\[0\]: the raft component writes no metadata"):
        trace_from_json(obj)


def test_the_schema_lists_exactly_the_raft_actions_and_standard_states() -> None:
    assert_schema_lists(SCHEMA, "raft_input", ACTIONS, STANDARD_STATES)
    bad = copy.deepcopy(VOTES)
    bad["steps"][0]["input"]["message"]["pre_vote"] = "yes"
    assert not VALIDATOR.is_valid(bad)


def test_check_accepts_the_example_from_the_command_line(tmp_path: Path) -> None:
    path = tmp_path / "example.jsonl"
    path.write_text(json.dumps(example()) + "\n")
    out = io.StringIO()
    assert check_command([str(path)], False, out) == EXIT_OK, out.getvalue()


def test_the_oracle_walks_a_raft_node_one_step_at_a_time() -> None:
    """A fresh voter's election timer fires: Prospective, then pre-votes to 2 and 3 on the next poll (§3.5, KIP-996)."""
    fired = oracle.check_step(oracle.start("raft/fresh-voter", component="raft"),
                              {"input": {"action": "tick", "now": 1000}, "post": {"role": "Prospective", "epoch": 0}})
    assert fired.diffs == () and fired.after is not None
    pre_votes = [{"destination": v, "type": "VoteRequest", "pre_vote": True, "replica_epoch": 0} for v in (2, 3)]
    polled = oracle.check_step(fired.after, {"input": {"action": "tick", "now": 1000},
                                             "output": {"response": {"sends": pre_votes}}})
    assert polled.diffs == ()
    pre_votes[1]["pre_vote"] = False
    wrong = oracle.check_step(fired.after, {"input": {"action": "tick", "now": 1000},
                                            "output": {"response": {"sends": pre_votes}}})
    assert [str(d) for d in wrong.diffs] == ["response.sends[1].pre_vote: expected true, observed false"]
