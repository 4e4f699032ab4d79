"""Raft traces of ``KRaftShutdown.tla``'s node in the vocabulary of ``KRaftShutdownTrace.tla`` (``kraftspec check
--with-tlc``; rules §3.13, §3.5, §3.9).

A raft trace goes here when its initial state is one of the spec's (``shutdown_tla.initial_traces``: node ``Local`` of
one of ``VoterSets`` started from its quorum-state file under ``agree_shutdown``'s timeouts), as the traces recorded
from the spec's graph (``traces/tla/shutdown.jsonl.gz``) are. Each step is one input: ``shutdown``, ``tick`` (its
time), ``end_quorum_epoch_request`` / ``begin_quorum_epoch_request`` (leader, epoch, successors),
``vote_response`` (granted), ``quorum_epoch_response`` answering EndQuorumEpoch (its source) or ``append`` of one
record, and the stated post-state fields the spec has (role, epoch, leader, log end, the shutdown's outcome, the
clock). Other inputs, another shutdown timeout, a QuorumEpochResponse answering BeginQuorumEpoch and errors in answers
are outside its bounds; the messages the node sends are not judged (the spec does not model requests on the wire).
"""

from __future__ import annotations

from typing import Any, Iterator, Mapping

from kraftspec.reference import raft
from kraftspec.reference.raft_messages import Tick
from kraftspec.spec import agree_shutdown
from kraftspec.spec.tla_parse import to_tla
from kraftspec.spec.tla_values import TlaValue, record
from kraftspec.spec.trace_validation_common import (Encoded, Outside, TraceModule, answered_with_error, encoded,
                                                    modelled, stated_post, timed)
from kraftspec.traces.format.envelope import Step, Trace
from kraftspec.traces.replay import raft as raft_replay

_KINDS = {"shutdown": "shutdown", "tick": "tick", "end_quorum_epoch_request": "endEpoch",
          "begin_quorum_epoch_request": "beginEpoch", "vote_response": "vote", "quorum_epoch_response": "epochAnswer",
          "append": "append"}
_SHUTDOWN = {None: "none", "pending": "running", "completed": "completed", "timed_out": "timed_out"}
_POST = {"role": "role", "epoch": "epoch", "leader_id": "leader", "log_end_offset": "logEnd", "shutdown": "shutdown",
         "clock": "now"}


def _first_polls(trace: Trace, constants: Mapping[str, TlaValue]) -> int:
    """How many leading steps belong to the spec's initial state: the only voter's first poll at time 0, which writes
    its LeaderChange record (``agree_shutdown.initial_states``)."""
    only_voter = trace.explicit is not None and trace.explicit.get("voters") == [int(constants["Local"])]
    first = trace.steps[0] if trace.steps else None
    return int(only_voter and first is not None and first.action == "tick" and first.input.get("now", 0) == 0)


def _initial(trace: Trace, constants: Mapping[str, TlaValue]) -> str:
    """The trace's initial state as the spec's variables: one of the spec's initial nodes (or the Candidate a Leader
    is elected from; the only voter after its first poll)."""
    from kraftspec.traces.recording.shutdown_tla import initial_traces

    if trace.standard is not None or trace.explicit not in [obj for obj, _ in initial_traces(constants)]:
        raise Outside("the node is not one of KRaftShutdown.tla's initial nodes (shutdown_tla.initial_traces)")
    node = raft_replay.initial(trace)
    if _first_polls(trace, constants):
        node = raft.step(node, Tick(), 0)[0]
    return to_tla(record(**agree_shutdown.project(agree_shutdown.ExploredState(node, 0))))


def _message(step: Step) -> Any:
    return step.input["message"]


def encode_step(step: Step, now: int, constants: Mapping[str, TlaValue]) -> str:
    """The step, which happens at ``now``, as a ``KRaftShutdownTrace`` step record (:class:`Outside` when the spec
    cannot express it)."""
    kind = _KINDS[modelled(step, _KINDS, "KRaftShutdown.tla")]
    fields: dict[str, TlaValue] = {"kind": kind, "now": now, "succ": (), "l": -1, "e": -1, "granted": False, "v": -1}
    timeout = int(constants["ShutdownTimeout"])  # type: ignore[call-overload]
    if kind == "shutdown" and step.input["timeout_ms"] != timeout:
        raise Outside(f"a shutdown timeout of {step.input['timeout_ms']} ms (the spec's is ShutdownTimeout)")
    if kind == "append" and len(step.input["records"]) != 1:
        raise Outside("an append of other than one record")
    if kind in ("endEpoch", "beginEpoch"):
        request = _message(step)
        fields.update(l=request.leader_id, e=request.leader_epoch)
        if kind == "endEpoch":
            fields["succ"] = tuple(request.preferred_successors)
    if kind in ("vote", "epochAnswer"):
        answer = _message(step)
        if answered_with_error(answer):
            raise Outside("an answer with an error (the spec's voters answer without one)")
        if kind == "vote":
            fields["granted"] = answer.vote_granted
        elif answer.api != "EndQuorumEpoch":
            raise Outside("an answer to BeginQuorumEpoch (not modelled)")
        else:
            fields["v"] = answer.source
    post = step.post or {}
    stated: dict[str, TlaValue] = {}
    for name, variable in _POST.items():
        if name in post:
            stated[variable] = _SHUTDOWN.get(post[name], "?") if name == "shutdown" else post[name]
    return to_tla(record(**fields, **stated_post(stated)))


START = to_tla(record(kind="start", now=0, succ=(), l=-1, e=-1, granted=False, v=-1, **stated_post({})))
"""A step the spec's initial state already follows (the only voter's first poll): kept as a step that changes nothing,
so that a verdict's step numbers are the trace's own."""


def encode(trace: Trace, constants: Mapping[str, TlaValue]) -> Encoded:
    """``trace`` in the trace module's vocabulary, up to its first step the spec cannot express: the initial state's
    first poll as a :data:`START` step, then one record per step."""
    first = _first_polls(trace, constants)

    def steps() -> Iterator[str]:
        yield from (START for _ in range(first))
        yield from (encode_step(step, now, constants) for step, now in timed(trace.steps[first:]))

    return encoded(lambda: _initial(trace, constants), steps)


MODULE = TraceModule("raft", "KRaftShutdown", ("voters", "role", "epoch", "leader", "shutdown", "deadline", "now",
                                               "backoff", "unacked", "logEnd", "t", "i", "outside"), encode)
"""``spec/KRaftShutdownTrace.tla``: the spec's variables, then the trace index, the steps explained, why it stopped."""
