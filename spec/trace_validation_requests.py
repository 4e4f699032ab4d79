"""Raft traces of ``KRaftRequests.tla``'s node in the vocabulary of ``KRaftRequestsTrace.tla`` (``kraftspec check
--with-tlc``; rules §3.13, §3.5, §3.7).

A raft trace goes here when its initial state is one of the spec's (``requests_tla.initial_traces``: node ``Local`` of
the voters 1..N restarted from its quorum-state file under ``agree_requests``' timeouts, then its first poll at time 0,
the Prospective's after its leader's EndQuorumEpoch), as the traces recorded from the spec's graph
(``traces/tla/requests.jsonl.gz``) are. Each later step is one input with its bootstrap draw (modulo N): a ``tick``
(its time), or a ``fetch_response`` / ``vote_response`` answering the request outstanding to its source, either failed
(top-level BROKER_NOT_AVAILABLE) or naming the leader of an epoch (a Fetch answer from that leader without error, from
another node NOT_LEADER_OR_FOLLOWER; a vote answer naming none, granted or not); and the stated post-state fields the
spec has (role, epoch, leader, the clock). Other inputs, other errors and answers carrying records, a diverging epoch
or a snapshot are outside its bounds; the node's sends are not judged by TLC (the replay judges them), but the spec's
state follows them: an answer comes only from where the spec awaits one.
"""

from __future__ import annotations

from typing import Any, Iterator, Mapping

from kraftspec.reference.raft_messages import FetchResponse, VoteResponse
from kraftspec.reference.raft_state import NO_LEADER
from kraftspec.spec import agree_requests
from kraftspec.spec.tla_parse import to_tla
from kraftspec.spec.tla_values import TlaValue, record
from kraftspec.spec.trace_validation_common import (Encoded, Outside, TraceModule, encoded, error_name, modelled,
                                                    stated_post, timed, within)
from kraftspec.traces.format.envelope import Step, Trace
from kraftspec.traces.replay import raft as raft_replay

_KINDS = {"tick": "tick", "fetch_response": "fetch", "vote_response": "vote"}
_POST = {"role": "role", "epoch": "epoch", "leader_id": "leader", "clock": "now"}


def _prefix(trace: Trace) -> int:
    """How many leading steps belong to the spec's initial state: those up to its first poll (a ``tick``)."""
    return next((i + 1 for i, step in enumerate(trace.steps) if step.action == "tick"), len(trace.steps))


def _initial(trace: Trace, constants: Mapping[str, TlaValue]) -> str:
    """The trace's initial state as the spec's variables: one of the spec's initial nodes after its first poll."""
    from kraftspec.traces.recording.requests_tla import initial_traces

    prefix = list(trace.steps[:_prefix(trace)])
    starts = [(obj, [(s.action, s.input) for s in steps]) for obj, steps in initial_traces(constants)]
    if trace.standard is not None or (trace.explicit, [(s.action, s.input) for s in prefix]) not in starts:
        raise Outside("the node and its first steps are not one of KRaftRequests.tla's initial states "
                      "(requests_tla.initial_traces)")
    node, clock = raft_replay.initial(trace), 0
    for step in prefix:
        node, clock, _, _ = raft_replay.run(node, clock, step)
    return to_tla(record(**agree_requests.project(agree_requests.ExploredState(node, clock))))


def _answer(message: Any, fields: dict[str, TlaValue], constants: Mapping[str, TlaValue]) -> None:
    """The answer's source, and whether it failed or what it names, into ``fields`` (:class:`Outside` for the
    answers the spec's environment never gives)."""
    fields["d"] = within(message.source, 1, int(constants["N"]), "the answer's source")  # type: ignore[call-overload]
    error, partition = error_name(message.error), error_name(message.partition_error)
    if error == "BROKER_NOT_AVAILABLE" and partition == "NONE":
        fields["kind"] = f"{fields['kind']}Failed"
        return
    if error != "NONE":
        raise Outside(f"an answer with top-level error {error} (the spec's fail with BROKER_NOT_AVAILABLE)")
    fields["e"] = message.leader_epoch
    if isinstance(message, VoteResponse):
        if partition != "NONE" or message.leader_id != NO_LEADER:
            raise Outside("a vote answer with an error or naming a leader")
        fields["granted"] = message.vote_granted
        return
    fields["l"] = message.leader_id
    if partition != ("NONE" if message.leader_id == message.source else "NOT_LEADER_OR_FOLLOWER"):
        raise Outside(f"a Fetch answer with partition error {partition} from {message.source} naming leader "
                      f"{message.leader_id}")
    if message.records or message.diverging_epoch[0] >= 0 or message.snapshot_id[0] >= 0:
        raise Outside("a Fetch answer carrying records, a diverging epoch or a snapshot")


def _stated(step: Step) -> dict[str, TlaValue]:
    """The step's stated post-state fields as the spec's variables (step record fields)."""
    post = step.post or {}
    return stated_post({variable: post[name] for name, variable in _POST.items() if name in post})


def _start(step: Step) -> str:
    """A step of the initial state's prefix as a ``start`` step record (the spec's initial state already follows it;
    it keeps the verdict's step numbers the trace's own)."""
    return to_tla(record(kind="start", now=0, draw=0, d=1, l=-1, e=-1, granted=False, **_stated(step)))


def encode_step(step: Step, now: int, constants: Mapping[str, TlaValue]) -> str:
    """The step, which happens at ``now``, as a ``KRaftRequestsTrace`` step record (:class:`Outside` when the spec
    cannot express it)."""
    kind = _KINDS[modelled(step, _KINDS, "KRaftRequests.tla")]
    draw = step.input.get("bootstrap", 0) % int(constants["N"])  # type: ignore[call-overload]
    fields: dict[str, TlaValue] = {"kind": kind, "now": now, "draw": draw, "d": 1, "l": -1, "e": -1,
                                   "granted": False}
    if kind != "tick":
        message = step.input["message"]
        if not isinstance(message, (FetchResponse, VoteResponse)):
            raise Outside(f"a {type(message).__name__} (the spec's answers are Fetch and Vote responses)")
        _answer(message, fields, constants)
    return to_tla(record(**fields, **_stated(step)))


def encode(trace: Trace, constants: Mapping[str, TlaValue]) -> Encoded:
    """``trace`` in the trace module's vocabulary, up to its first step the spec cannot express: the initial state's
    prefix as ``start`` steps, then one record per step."""
    prefix = _prefix(trace)

    def steps() -> Iterator[str]:
        yield from (_start(step) for step in trace.steps[:prefix])
        yield from (encode_step(step, now, constants) for step, now in timed(trace.steps[prefix:]))

    return encoded(lambda: _initial(trace, constants), steps)


MODULE = TraceModule("raft", "KRaftRequests", ("role", "epoch", "leader", "inflight", "failed", "rejected", "now",
                                               "t", "i", "outside"), encode)
"""``spec/KRaftRequestsTrace.tla``: the spec's variables, then the trace index, the steps explained, why it stopped."""
