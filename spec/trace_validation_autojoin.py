"""Raft traces of ``KRaftAutoJoin.tla``'s node in the vocabulary of ``KRaftAutoJoinTrace.tla`` (``kraftspec check
--with-tlc``; rules §3.15).

A raft trace goes here when its initial state is one of the spec's (``autojoin_tla.initial_objects``: node ``Local``
following ``Leader`` in epoch 1 under ``agree_autojoin``'s timeouts), as the traces recorded from the spec's graph
(``traces/tla/autojoin.jsonl.gz``) are. Each step is one input: ``tick`` (its time), ``fetch_response`` (the node's
entry in the VotersRecord it carries, if any), ``voter_change_response`` (its API and error) or
``update_raft_voter_response`` (its error), and what the trace states of it: the request its poll sent to the leader
(from its sends) and the post-state fields the spec has (role, epoch, leader, the clock). Other inputs, answers from
another node, leader or epoch, errors the spec's leader does not give and records other than one VotersRecord are
outside its bounds.
"""

from __future__ import annotations

from typing import Any, Mapping

from kraftspec.reference import raft_voters
from kraftspec.spec import agree_autojoin
from kraftspec.spec.tla_parse import to_tla
from kraftspec.spec.tla_values import TlaValue, record
from kraftspec.spec.trace_validation_common import (Encoded, Outside, TraceModule, encoded, error_name, modelled,
                                                    stated_post, timed)
from kraftspec.traces.format.envelope import Step, Trace
from kraftspec.traces.replay import raft as raft_replay

_KINDS = {"tick": "tick", "fetch_response": "fetch", "voter_change_response": "voterChange",
          "update_raft_voter_response": "updateVoter"}
_POST = {"role": "role", "epoch": "epoch", "leader_id": "leader", "clock": "now"}


def _initial(trace: Trace, constants: Mapping[str, TlaValue]) -> str:
    """The trace's initial state as the spec's variables: one of the spec's initial nodes, nothing sent yet."""
    from kraftspec.traces.recording.autojoin_tla import initial_objects

    if trace.standard is not None or trace.explicit not in list(initial_objects(constants)):
        raise Outside("the node is not one of KRaftAutoJoin.tla's initial nodes (autojoin_tla.initial_objects)")
    state = agree_autojoin.ExploredState(raft_replay.initial(trace), 0, "none")
    return to_tla(record(**agree_autojoin.project(state)))


def _entry(answer: Any, explicit: Mapping[str, Any]) -> str:
    """The node's entry in the voter set a Fetch answer carries ("" for none): its id absent, under another directory,
    or its own key with its listeners or others (as ``agree_autojoin._entry`` reads the voter set in force)."""
    if not answer.records:
        return ""
    (entry,) = answer.records if len(answer.records) == 1 else (None,)
    if entry is None or not isinstance(entry.record, raft_voters.VotersRecord):
        raise Outside("a Fetch answer with other records than one VotersRecord")
    voter = next((v for v in entry.record.voters if v.voter_key.id == explicit["local_id"]), None)
    if voter is None:
        return "absent"
    if voter.voter_key.directory_id != explicit["directory_id"]:
        return "old"
    own = agree_autojoin.listeners(explicit["local_id"])
    return "same" if voter.listeners == own else "stale"


def _sent(step: Step, leader: int) -> str:
    """The request the step's poll sent to the leader ("none"; "elsewhere" when it sent to another node)."""
    sends = [(s["destination"], s["type"]) for s in (step.response or {}).get("sends", ())]
    if any(destination != leader for destination, _ in sends):
        return "elsewhere"
    return agree_autojoin.REQUESTS.get(sends[-1][1], sends[-1][1]) if sends else "none"


def encode_step(step: Step, now: int, trace: Trace, constants: Mapping[str, TlaValue]) -> str:
    """The step, which happens at ``now``, as a ``KRaftAutoJoinTrace`` step record (:class:`Outside` when the spec
    cannot express it)."""
    kind = _KINDS[modelled(step, _KINDS, "KRaftAutoJoin.tla")]
    leader = int(constants["Leader"])  # type: ignore[call-overload]
    fields: dict[str, TlaValue] = {"kind": kind, "now": now, "entry": "", "api": "", "error": "NONE"}
    if kind != "tick":
        answer = step.input["message"]
        if answer.source != leader:
            raise Outside("an answer from another node than the leader")
        if kind != "voterChange" and (answer.leader_id, answer.leader_epoch) != (leader, 1):
            raise Outside("an answer naming another leader or epoch")
        fields["error"] = error_name(answer.error) or "?"
        if kind == "fetch":
            if fields["error"] != "NONE" or error_name(answer.partition_error) != "NONE":
                raise Outside("a Fetch answer with an error")
            fields["entry"] = _entry(answer, trace.explicit or {})
        if kind == "voterChange":
            fields["api"] = answer.api
    post = step.post or {}
    stated: dict[str, TlaValue] = {variable: post[name] for name, variable in _POST.items() if name in post}
    if step.response is not None:
        stated["sent"] = _sent(step, leader)
    return to_tla(record(**fields, **stated_post(stated)))


def encode(trace: Trace, constants: Mapping[str, TlaValue]) -> Encoded:
    """``trace`` in the trace module's vocabulary, up to its first step the spec cannot express."""
    return encoded(lambda: _initial(trace, constants),
                   lambda: (encode_step(step, now, trace, constants) for step, now in timed(trace.steps)))


MODULE = TraceModule("raft", "KRaftAutoJoin", ("kraftVersion", "entry", "canBecomeVoter", "autoJoin", "now",
                                               "fetchDeadline", "updateDeadline", "updatedLeader", "inflight", "t",
                                               "i", "outside"), encode)
"""``spec/KRaftAutoJoinTrace.tla``: the spec's variables, then the trace index, the steps explained, why it stopped."""
