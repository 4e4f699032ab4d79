"""UpdateRaftVoter inside the raft trace validation (``kraftspec check --with-tlc``, §3.15): a kraft.version 0 leader
answers a voter's UpdateRaftVoter (``KRaftQuorum.tla``'s ``UpdateVoterError``: REQUEST_TIMED_OUT until its epoch is
committed, then NONE, the epoch checks first), a follower sends one to its leader and takes the answer without
moving. TLC accepts the reference's recordings of these and rejects a trace stating another answer; one TLC run
judges every case of this file. Needs Java (TLC)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from kraftspec.reference.raft_messages import FetchRequest, UpdateRaftVoterRequest
from kraftspec.spec.trace_validation import SpecVerdict, validate
from kraftspec.traces.format.envelope import Step, Trace
from kraftspec.traces.format.values import to_json
from kraftspec.traces.recording.raft_simulate import simulate_one
from kraftspec.traces.replay import raft as raft_replay
from kraftspec.traces.replay.verdict import replay

POST = ("role", "epoch", "leader_id", "high_watermark", "log_end_offset")


def _update(epoch: int, directory_id: Any = "dir-2") -> Step:
    return Step("update_raft_voter_request", {"message": UpdateRaftVoterRequest(
        voter_id=2, current_leader_epoch=epoch, voter_directory_id=directory_id,
        listeners=("CONTROLLER://controller2:9093",), correlation_id=7)})


def _fetch(offset: int) -> Step:
    return Step("fetch_request", {"message": FetchRequest(replica_id=2, current_leader_epoch=1, fetch_offset=offset,
                                                          last_fetched_epoch=1 if offset else 0)})


def _recorded(steps: list[Step], trace_id: str) -> Trace:
    """The steps as the reference answers them from the elected leader of epoch 1 (voters 1-3), with its post-state."""
    trace = Trace(component="raft", steps=(), standard="raft/leader", id=trace_id)
    node, clock, made = raft_replay.initial(trace), 0, []
    for step in steps:
        node, clock, response, _ = raft_replay.run(node, clock, step)
        made.append(Step(step.action, step.input, to_json(response), None, raft_replay.observe(node, clock, POST)))
    return replace(trace, steps=tuple(made))


def _answer(trace: Trace, index: int) -> str:
    """The UpdateRaftVoter answer of step ``index`` (the first message it sends; the leader's first poll also sends
    BeginQuorumEpoch)."""
    send = trace.steps[index].response["sends"][0]
    assert send["type"] == "UpdateRaftVoterResponse" and send["destination"] == 2
    return str(send["error"])


def _stating(trace: Trace, index: int, error: str) -> Trace:
    """``trace`` cut after step ``index``, whose UpdateRaftVoter answer now states ``error``."""
    step = trace.steps[index]
    send, *rest = step.response["sends"]
    wrong = replace(step, response={"sends": [{**send, "error": error}, *rest]})
    return replace(trace, steps=trace.steps[:index] + (wrong,))


LEADER = _recorded([_update(1), _update(0), _update(2), _fetch(0), _fetch(1), _update(1), _update(1, None)],
                   "leader-answers-update-voter")
"""Before its epoch commits the leader times the update out; an older epoch is fenced, a newer unknown; voter 2
fetching to offset 1 commits the epoch; then the update is taken, and one without a directory id is invalid."""
ANSWERS = ["REQUEST_TIMED_OUT", "FENCED_LEADER_EPOCH", "UNKNOWN_LEADER_EPOCH", "NONE", "INVALID_REQUEST"]
SIMULATED = [simulate_one(11, index, 30) for index in (20, 33, 92, 97)]
"""Seeded simulations in which a follower sends UpdateRaftVoter to its leader and takes its answer within the bounds
(``kraftspec generate sim --component raft --traces 400 --seed 11 --steps 30``)."""
CASES: dict[str, Trace] = {
    "leader": LEADER,
    "answer timed out stated NONE": _stating(LEADER, 0, "NONE"),
    "answer NONE stated REQUEST_TIMED_OUT": _stating(LEADER, 5, "REQUEST_TIMED_OUT"),
    **{trace.id or "": trace for trace in SIMULATED},
}


@pytest.fixture(scope="module")
def verdicts() -> dict[str, SpecVerdict]:
    return dict(zip(CASES, validate(list(CASES.values()))))


def test_the_reference_answers_as_the_spec_says() -> None:
    assert [_answer(LEADER, i) for i in (0, 1, 2, 5, 6)] == ANSWERS
    assert replay(LEADER).conformant


def test_tlc_accepts_the_leaders_answers(verdicts: dict[str, SpecVerdict]) -> None:
    assert verdicts["leader"] == SpecVerdict("accepted"), verdicts["leader"].line()


@pytest.mark.parametrize(("case", "step"), [("answer timed out stated NONE", 0),
                                            ("answer NONE stated REQUEST_TIMED_OUT", 5)])
def test_tlc_rejects_another_answer_where_the_reference_diverges(case: str, step: int,
                                                                 verdicts: dict[str, SpecVerdict]) -> None:
    assert (verdicts[case].outcome, verdicts[case].step) == ("rejected", step)
    divergence = replay(CASES[case]).divergence
    assert divergence is not None and divergence.step == step


def test_a_followers_update_voter_request_and_its_answer_are_judged(verdicts: dict[str, SpecVerdict]) -> None:
    for trace in SIMULATED:
        sends = [m for s in trace.steps for m in ((s.response or {}).get("sends") or [])]
        assert any(m["type"] == "UpdateRaftVoterRequest" for m in sends), trace.id
        assert replay(trace).conformant and verdicts[trace.id or ""] == SpecVerdict("accepted"), trace.id
    assert sum(s.action == "update_raft_voter_response" for t in SIMULATED for s in t.steps) >= 2
