"""Raft traces of ``KRaftVoters.tla``'s node in the vocabulary of ``KRaftVotersTrace.tla`` (``kraftspec check
--with-tlc``; rules §3.14, §3.15).

A raft trace goes here when its initial state is one of the Candidates the spec's ``Init`` is elected from
(``voters_tla.explicit``: node ``Local`` of ``InitVoters`` with static voters or a bootstrap checkpoint), as the traces
recorded from the spec's graph (``traces/tla/voters.jsonl.gz``) are: its steps up to its first stated post-state are
that election (``start``), the post the spec's initial leader. Each later step is one input, with whether the node
took it as its answer tells (``must``) where the answer tells it: ``add_raft_voter_request`` /
``remove_raft_voter_request`` (no answer at once: pending), ``update_raft_voter_request``, ``upgrade_kraft_version``
(upgraded), ``api_versions_response`` (its source, whether it may join), ``fetch_request`` (the
fetch offset), ``fetch_response`` (a diverging epoch's end offset), ``begin_quorum_epoch_request`` of another leader
(accepted), ``tick``, ``vote_response`` (the node elected: it sends BeginQuorumEpoch) and ``append`` of one record
(appended). The stated post-state fields the spec has (the log, its end and start, a leader's role and high watermark)
are checked; other roles count as the spec's Follower, and the messages sent are not judged. Other inputs, snapshots,
records fetched from another leader, answers with errors and a removal committed at once are outside its bounds.
"""

from __future__ import annotations

from typing import Any, Iterator, Mapping

from kraftspec.spec.tla_parse import to_tla
from kraftspec.spec.tla_values import TlaValue, record
from kraftspec.spec.trace_validation_common import (Encoded, Outside, TraceModule, answered_with_error, encoded,
                                                    modelled, stated_post)
from kraftspec.traces.format.envelope import Step, Trace

_KINDS = {"add_raft_voter_request": "add", "remove_raft_voter_request": "remove", "update_raft_voter_request": "update",
          "upgrade_kraft_version": "upgrade", "api_versions_response": "apiVersions", "fetch_request": "fetchReq",
          "fetch_response": "fetchResp", "begin_quorum_epoch_request": "beginEpoch", "tick": "tick",
          "vote_response": "vote", "append": "append"}
_RECORDS = {"LeaderChangeMessage": "LeaderChange", "KRaftVersionRecord": "KRaftVersion", "VotersRecord": "Voters"}


def _version(trace: Trace, constants: Mapping[str, TlaValue]) -> int:
    """The bootstrap kraft.version of the spec's initial node the trace starts from (``voters_tla.explicit``)."""
    from kraftspec.traces.recording.voters_tla import explicit

    for version in (0, 1):
        if trace.standard is None and trace.explicit == explicit(version, constants):
            return version
    raise Outside("the node is not one that KRaftVoters.tla's Init is elected from (voters_tla.explicit)")


def _election(trace: Trace) -> int:
    """How many leading steps elect the spec's initial leader: up to the first stating a post, which states a Leader."""
    first = next((n for n, step in enumerate(trace.steps) if step.post is not None), None)
    if first is None or (trace.steps[first].post or {}).get("role") != "Leader":
        raise Outside("the trace does not start with the election of KRaftVoters.tla's initial leader")
    return first + 1


def _sends(step: Step, kind: str) -> list[Mapping[str, Any]]:
    """The messages of type ``kind`` the node sent in the step."""
    return [send for send in (step.response or {}).get("sends", ()) if send.get("type") == kind]


def _log_record(entry: Mapping[str, Any]) -> TlaValue:
    """A stated log entry as the spec's record: its type and, for a VotersRecord, its voters and those with a directory
    id; a record that is no control record is a data record, a control record the spec does not have is outside."""
    value, first = entry["record"], entry.get("starts_batch", True)
    kind = _RECORDS.get(value["type"], "?") if isinstance(value, Mapping) else "Data"
    if kind == "?":
        raise Outside(f"a {value['type']} in the log (not modelled)")
    if kind == "KRaftVersion" and value["kraft_version"] != 1:
        raise Outside(f"a KRaftVersionRecord of kraft.version {value['kraft_version']} (the spec's upgrade is to 1)")
    voters = frozenset(v["id"] for v in value["voters"]) if kind == "Voters" else frozenset()
    named = frozenset(v["id"] for v in value["voters"] if v.get("directory_id")) if kind == "Voters" else frozenset()
    return record(type=kind, voters=voters, directoryIds=named, batchStart=first)


def _post(post: Mapping[str, Any]) -> dict[str, TlaValue]:
    """The stated post-state fields the spec has: a Leader's high watermark (-1 while unknown), any other role as the
    spec's Follower."""
    stated: dict[str, TlaValue] = {}
    if "role" in post:
        stated["role"] = "Leader" if post["role"] == "Leader" else "Follower"
        if post["role"] == "Leader" and "high_watermark" in post:
            stated["hw"] = -1 if post["high_watermark"] is None else post["high_watermark"]
    if "log_end_offset" in post:
        stated["logEnd"] = post["log_end_offset"]
    if "log_start_offset" in post:
        stated["logStart"] = post["log_start_offset"]
    if "log" in post:
        stated["log"] = tuple(_log_record(entry) for entry in post["log"])
    return stated


def _fields(step: Step) -> dict[str, TlaValue]:
    """The step record's input fields: the replica it names (``r``), a bound on offsets (``o``), whether the spec must
    take an action (``must``: the answer says the node took the input) and whether a new voter may join (``joins``: it
    supports kraft.version 1 and the node did not refuse its add)."""
    kind = _KINDS[modelled(step, _KINDS, "KRaftVoters.tla")]
    fields: dict[str, TlaValue] = {"kind": kind, "r": 0, "o": -1, "must": False, "joins": False}
    message = step.input.get("message")
    if kind in ("add", "remove"):
        answers = _sends(step, "VoterChangeResponse")
        if any(answer.get("error") == "NONE" for answer in answers):
            raise Outside("a voter change committed as it is asked (the spec commits it by a later NextHighWatermark)")
        fields.update(r=message.voter_id, must=not answers)
    elif kind == "update":
        fields["r"] = message.voter_id
    elif kind == "upgrade":
        if step.input["kraft_version"] != 1:
            raise Outside(f"an upgrade to kraft.version {step.input['kraft_version']} (the spec's is to 1)")
        fields["must"] = bool((step.response or {}).get("upgraded"))
    elif kind == "apiVersions":
        if answered_with_error(message):
            raise Outside("an ApiVersions answer with an error (the spec's new voter answers without one)")
        low, high = message.kraft_version_range
        aborted = any(answer.get("error") != "NONE" for answer in _sends(step, "VoterChangeResponse"))
        fields.update(r=message.source, joins=low <= 1 <= high and not aborted)
    elif kind == "fetchReq":
        fields.update(r=message.replica_id, o=message.fetch_offset)
    elif kind == "fetchResp":
        if answered_with_error(message) or message.records or tuple(message.snapshot_id) != (-1, -1):
            raise Outside("a Fetch answer with an error, records or a snapshot (the spec's follower only truncates)")
        fields["o"] = message.diverging_epoch[1] if tuple(message.diverging_epoch) != (-1, -1) else -1
    elif kind == "beginEpoch":
        fields["must"] = any(answer.get("error") == "NONE" for answer in _sends(step, "QuorumEpochResponse"))
    elif kind == "vote":
        fields["must"] = bool(_sends(step, "BeginQuorumEpochRequest"))
    elif kind == "append":
        if len(step.input["records"]) != 1:
            raise Outside("an append of other than one record (the spec's ClientAppend writes one offset)")
        fields["must"] = (step.response or {}).get("last_offset") is not None
    return fields


def encode_step(step: Step, start: bool) -> str:
    """The step as a ``KRaftVotersTrace`` step record, ``start`` for a step of the initial leader's election
    (:class:`Outside` when the spec cannot express it)."""
    fields = {"kind": "start", "r": 0, "o": -1, "must": False, "joins": False} if start else _fields(step)
    return to_tla(record(**fields, **stated_post(_post(step.post or {}))))


def encode(trace: Trace, constants: Mapping[str, TlaValue]) -> Encoded:
    """``trace`` in the trace module's vocabulary, up to its first step the spec cannot express."""
    def initial() -> str:
        version = _version(trace, constants)
        _election(trace)
        return to_tla(record(bootstrapVersion=version))

    def steps() -> Iterator[str]:
        election = _election(trace)
        return (encode_step(step, n < election) for n, step in enumerate(trace.steps))
    return encoded(initial, steps)


MODULE = TraceModule("raft", "KRaftVoters", ("bootstrapVersion", "log", "hw", "epochStart", "role", "pending",
                                             "volatileVoters", "requestedVersion", "changes", "elections", "logStart",
                                             "snapshots", "readEnd", "snapshotsTaken", "t", "i", "outside"), encode)
"""``spec/KRaftVotersTrace.tla``: the spec's variables, then the trace index, the steps explained, why it stopped."""
