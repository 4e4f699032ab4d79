"""Raft traces of ``KRaftListener.tla``'s node in the vocabulary of ``KRaftListenerTrace.tla`` (``kraftspec check
--with-tlc``; rules §3.12).

A raft trace goes here when its initial state is the spec's ``Init`` (``listener_tla.explicit``: node ``Local`` of the
voters ``Local`` and ``Others`` on an empty log), as the traces recorded from the spec's graph
(``traces/tla/listener.jsonl.gz``) are. Each input is the kind of environment move it may cause (``append``,
``fetch_request``, ``fetch_response`` with its records and high watermark, ``vote_response`` granted or not,
``begin_quorum_epoch_request``, ``create_snapshot`` and whether it gave a writer, ``delete_before_snapshot``,
``restart``, ``tick``), and the stated post-state fields the spec has (role, epoch, leader, high watermark, log end and
start, latest snapshot, the listener's view) are checked; the other fields and the messages sent are not judged.
Other inputs, other senders than ``Others``, answers with errors, diverging or snapshot answers are outside its bounds.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional

from kraftspec.spec import agree_listener
from kraftspec.spec.tla_parse import to_tla
from kraftspec.spec.tla_values import TlaValue, record
from kraftspec.spec.trace_validation_common import (Encoded, Outside, TraceModule, answered_with_error, encoded,
                                                    modelled, stated_post)
from kraftspec.traces.format.envelope import Step, Trace

_KINDS = {"append": "append", "fetch_request": "fetchReq", "fetch_response": "fetchResp", "vote_response": "vote",
          "begin_quorum_epoch_request": "beginEpoch", "create_snapshot": "create",
          "delete_before_snapshot": "delete", "restart": "restart", "tick": "tick"}
_FIELDS = {"role": "role", "epoch": "epoch", "leader_id": "leader", "high_watermark": "hw", "log_end_offset": "logEnd",
           "log_start_offset": "logStart"}


def _initial(trace: Trace, constants: Mapping[str, TlaValue]) -> str:
    """The trace's initial state as the spec's variables: only ``Init`` itself."""
    from kraftspec.traces.recording.listener_tla import explicit

    if trace.standard is not None or trace.explicit != explicit(constants):
        raise Outside("the node is not KRaftListener.tla's (listener_tla.explicit)")
    (state,) = agree_listener.initial_states(constants)
    return to_tla(record(**agree_listener.project(state)))


def _snapshot(value: Optional[list[int]]) -> TlaValue:
    return agree_listener.NO_SNAPSHOT if value is None else record(end=value[0], epoch=value[1])


def _sender(source: int, constants: Mapping[str, TlaValue]) -> int:
    if source not in constants["Others"]:  # type: ignore[operator]
        raise Outside(f"a message from {source}, not one of Others")
    return source


def _clean(message: Any, what: str) -> None:
    if answered_with_error(message):
        raise Outside(f"a {what} with an error (the spec's environment answers without one)")


def _post(post: Mapping[str, Any]) -> dict[str, TlaValue]:
    stated: dict[str, TlaValue] = {variable: post[name] for name, variable in _FIELDS.items() if name in post}
    if "latest_snapshot_id" in post:
        stated["snapshot"] = _snapshot(post["latest_snapshot_id"])
    if "listener" in post:
        view = post["listener"]
        stated["listener"] = record(next=view["committed_end"], leader=view["leader_id"], epoch=view["epoch"],
                                    snapshot=_snapshot(view["loaded_snapshot"]))
    return stated


def encode_step(step: Step, constants: Mapping[str, TlaValue]) -> str:
    """The step as a ``KRaftListenerTrace`` step record (:class:`Outside` when the spec cannot express it)."""
    kind = _KINDS[modelled(step, _KINDS, "KRaftListener.tla")]
    fields: dict[str, TlaValue] = {"kind": kind, "n": 0, "need": 0, "hw": -1, "l": -1, "e": -1, "granted": False}
    message, response = step.input.get("message"), step.response or {}
    if kind == "append":
        if "last_offset" not in response:
            raise Outside("the append does not state whether the node appended (last_offset)")
        appended = len(step.input["records"]) if response["last_offset"] is not None else 0
        fields.update(n=appended, need=appended)
    elif kind == "fetchReq":
        _sender(message.replica_id, constants)
    elif kind == "fetchResp":
        _sender(message.source, constants)
        _clean(message, "Fetch answer")
        if tuple(message.diverging_epoch) != (-1, -1) or tuple(message.snapshot_id) != (-1, -1):
            raise Outside("a diverging or snapshot Fetch answer (the spec's followers never truncate or fetch one)")
        fields.update(n=len(message.records), need=len(message.records), hw=message.high_watermark)
    elif kind == "vote":
        _sender(message.source, constants)
        _clean(message, "vote answer")
        fields["granted"] = message.vote_granted
    elif kind == "beginEpoch":
        fields.update(l=_sender(message.leader_id, constants), e=message.leader_epoch)
    elif kind == "create":
        if "created" not in response:
            raise Outside("the snapshot creation does not state whether the node got a writer (created)")
        created = 1 if response["created"] else 0
        fields.update(e=step.input["end_offset"], n=created, need=created)
    elif kind == "restart":
        fields["need"] = 1
    return to_tla(record(**fields, **stated_post(_post(step.post or {}))))


def encode(trace: Trace, constants: Mapping[str, TlaValue]) -> Encoded:
    """``trace`` in the trace module's vocabulary, up to its first step the spec cannot express."""
    return encoded(lambda: _initial(trace, constants), lambda: (encode_step(step, constants) for step in trace.steps))


MODULE = TraceModule("raft", "KRaftListener", ("log", "logStart", "snapshot", "hw", "committed", "role", "epoch",
                                               "votedSelf", "leader", "epochStart", "registered", "listener",
                                               "restarts", "t", "i", "outside", "env"), encode)
"""``spec/KRaftListenerTrace.tla``: the spec's variables, then the trace index, the steps explained, why it stopped,
the environment actions taken for the next step."""
