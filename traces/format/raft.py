"""The raft component of trace format v1: one KRaft quorum node's view (rules §3, KIP-595 as in Kafka 4.x).

A raft trace is what ONE node (the implementation under test) received and sent. Each input is a
message from ``kraftspec.reference.raft_messages`` handed to ``raft.step(node, message, now, jitter, bootstrap, order)``
(action ``vote_request``, ``fetch_response``, ... after the message's class), a timer poll (``tick``),
a leader append (``append``), ``resign``, a graceful ``shutdown`` (``timeout_ms``), a snapshot the state machine
creates (``create_snapshot``: ``end_offset``, ``epoch``, ``size`` in bytes; the response says whether a writer was
given, ``created``), the log's cleaner advancing the log start to a snapshot (``delete_before_snapshot``), a crash and
restart (``restart``, ``raft.restart``) or ``advance_clock``. The output is the list of messages the node sent (``response.sends``); Raft writes
no metadata records of its own, so ``records`` stays empty.

JSON of messages: the reference's field names; a sent message is ``{"destination", "type", ...fields}``;
a log entry is ``{"epoch", "record"}`` whose record is a data value (string, integer, null) or a control
record ``{"type": "LeaderChangeMessage", ...}`` (§3.11). A response input without ``correlation_id``
answers the request the node has outstanding to its ``source`` (``RequestManager``), so a recorder need
not map the implementation's correlation ids onto the reference's.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable, Mapping, Optional

from kraftspec.reference import raft
from kraftspec.reference.frozen import FrozenMap, evolve
from kraftspec.reference.raft_log import LogEntry, RaftLog, Snapshot, append_as_follower, flush
from kraftspec.reference.raft_messages import (
    BeginQuorumEpochRequest,
    DescribeQuorumRequest,
    EndQuorumEpochRequest,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    NO_SNAPSHOT_ID,
    QuorumEpochResponse,
    UpdateRaftVoterRequest,
    UpdateRaftVoterResponse,
    VoteRequest,
    VoteResponse,
)
from kraftspec.reference.raft_records import LeaderChangeMessage
from kraftspec.reference.raft_state import ElectionState, QuorumConfig
from kraftspec.reference.records import MetadataRecord
from kraftspec.traces.format.broker import Action, decode_arguments, input_plans
from kraftspec.traces.replay.state_cache import ExplicitStates
from kraftspec.traces.format.values import TraceError, decoder, require, to_json

_TIMED = {"now": (int, False), "jitter": (int, False)}
_POLLED = {**_TIMED, "bootstrap": (int, False), "order": (tuple[int, ...], False)}
"""Inputs ``raft.step`` polls after: the bootstrap server's draw and the order of one round of requests."""


def _message(cls: type) -> dict[str, tuple[Any, bool]]:
    return {"message": (cls, True), **_POLLED}


ACTIONS: dict[str, Action] = {a.name: a for a in (
    Action("vote_request", "raft._handle_vote_request", _message(VoteRequest)),
    Action("vote_response", "raft._handle_vote_response", _message(VoteResponse)),
    Action("fetch_request", "raft._handle_fetch_request", _message(FetchRequest)),
    Action("fetch_response", "raft._handle_fetch_response", _message(FetchResponse)),
    Action("begin_quorum_epoch_request", "raft._handle_begin_quorum_epoch_request", _message(BeginQuorumEpochRequest)),
    Action("end_quorum_epoch_request", "raft._handle_end_quorum_epoch_request", _message(EndQuorumEpochRequest)),
    Action("quorum_epoch_response", "raft._handle_quorum_epoch_response", _message(QuorumEpochResponse)),
    Action("describe_quorum_request", "raft._handle_describe_quorum_request", _message(DescribeQuorumRequest)),
    Action("fetch_snapshot_request", "raft._handle_fetch_snapshot_request", _message(FetchSnapshotRequest)),
    Action("fetch_snapshot_response", "raft._handle_fetch_snapshot_response", _message(FetchSnapshotResponse)),
    Action("update_raft_voter_request", "raft._handle_update_voter_request", _message(UpdateRaftVoterRequest)),
    Action("update_raft_voter_response", "raft._handle_update_voter_response", _message(UpdateRaftVoterResponse)),
    Action("tick", "raft._poll", _POLLED),
    Action("append", "raft._handle_append", {"records": (tuple, True), **_POLLED}),
    Action("resign", "raft._handle_resign", {"epoch": (int, True), **_POLLED}),
    Action("shutdown", "raft._handle_shutdown", {"timeout_ms": (int, True), **_POLLED}),
    Action("create_snapshot", "raft._handle_create_snapshot",
           {"end_offset": (int, True), "epoch": (int, True), "size": (int, True), **_POLLED}),
    Action("delete_before_snapshot", "raft._handle_delete_before_snapshot",
           {"end_offset": (int, True), "epoch": (int, True), **_POLLED}),
    Action("restart", "raft.restart", _TIMED),
    Action("advance_clock", "advance_clock", {"now": (int, True)}),
)}
"""Each action's ``rule``: the ``kraftspec.reference`` function that decides it (``raft.step`` polls after each)."""

_SELF_DECODED = ("message", "records")  # decoded here: log entries hold records of any type
_INPUT_PLANS = input_plans({name: dataclasses.replace(a,
                                                      args={k: v for k, v in a.args.items() if k not in _SELF_DECODED})
                            for name, a in ACTIONS.items()})
RESPONSES = (VoteResponse, FetchResponse, QuorumEpochResponse, FetchSnapshotResponse,
             UpdateRaftVoterResponse)  # answers to the node's requests
QUORUM_EPOCH_APIS = ("BeginQuorumEpoch", "EndQuorumEpoch")  # the two RPCs a QuorumEpochResponse answers (§3.9)


def decode_record_value(value: object, path: str) -> Any:
    """A log record: a data value (string, integer, null) or ``{"type": "LeaderChangeMessage", ...}`` (§3.11)."""
    if value is None or type(value) in (str, int):
        return value
    if isinstance(value, dict) and value.get("type") == "LeaderChangeMessage":
        return decoder(LeaderChangeMessage)({k: v for k, v in value.items() if k != "type"}, path)
    raise TraceError(f"{path}: expected a string, an integer, null or a LeaderChangeMessage object")


def encode_record_value(value: Any) -> Any:
    """The JSON of a log record (:func:`decode_record_value` reads it back)."""
    if isinstance(value, LeaderChangeMessage):
        return {"type": "LeaderChangeMessage", **to_json(value)}
    return value


def decode_entries(value: object, path: str) -> tuple[LogEntry, ...]:
    """Log entries ``[{"epoch", "record"}]`` (§3.7)."""
    if not isinstance(value, list):
        raise TraceError(f"{path}: expected an array of log entries")
    entries = []
    for i, item in enumerate(value):
        where = f"{path}[{i}]"
        if not isinstance(item, dict) or not {"epoch", "record"}.issuperset(item):
            raise TraceError(f"{where}: expected an object with fields epoch, record")
        record = decode_record_value(item.get("record"), f"{where}.record")
        entries.append(LogEntry(epoch=require(item, "epoch", int, where), record=record))
    return tuple(entries)


def encode_entries(entries: tuple[LogEntry, ...]) -> list[dict[str, Any]]:
    """The JSON of log entries."""
    return [{"epoch": e.epoch, "record": encode_record_value(e.record)} for e in entries]


def decode_message(cls: type, value: object, path: str) -> Any:
    """A message of ``cls``: its records as log entries; a response without ``correlation_id`` has None there."""
    if not isinstance(value, dict):
        raise TraceError(f"{path}: expected an object")
    unanswered = cls in RESPONSES and value.get("correlation_id") is None
    dropped = ("records", "correlation_id") if unanswered else ("records",)
    fields = {k: v for k, v in value.items() if k not in dropped}
    message = decoder(cls)(fields, path)
    changes: dict[str, Any] = {}
    if "records" in value:
        if cls is not FetchResponse:
            raise TraceError(f"{path}: unknown field 'records' for {cls.__name__}")
        changes["records"] = decode_entries(value["records"], f"{path}.records")
    if cls is QuorumEpochResponse and message.api not in QUORUM_EPOCH_APIS:
        raise TraceError(f"{path}.api: expected one of {', '.join(QUORUM_EPOCH_APIS)}, got {message.api!r}")
    if unanswered:
        changes["correlation_id"] = None
    return evolve(message, **changes) if changes else message


def encode_message(message: Any) -> dict[str, Any]:
    """The JSON of a message (records as log entries; a correlation id of None left out; a Fetch answer's
    ``snapshot_id`` and ``records_offset`` only when they say something: no snapshot and the fetcher's LEO read as
    their defaults)."""
    obj = to_json(evolve(message, records=()) if isinstance(message, FetchResponse) else message)
    if isinstance(message, FetchResponse):
        obj["records"] = encode_entries(message.records)
        if message.snapshot_id == NO_SNAPSHOT_ID:
            del obj["snapshot_id"]
        if message.records_offset is None:
            del obj["records_offset"]
    if obj.get("correlation_id", 0) is None:
        del obj["correlation_id"]
    return obj


_EXPLICIT_FIELDS: dict[str, tuple[Any, bool]] = {
    "local_id": (int, True), "voters": (list, False), "endpoints": (dict, False), "config": (dict, False),
    "quorum_state": (dict, False), "log": (list, False), "now": (int, False), "jitter": (int, False),
    "directory_id": (str, False), "cluster_id": (str, False), "snapshot": (dict, False),
}
DEFAULT_VOTERS = (1, 2, 3)


def _endpoints(obj: Optional[dict[str, Any]], voters: frozenset[int], path: str) -> FrozenMap[int, tuple[str, ...]]:
    if obj is None:
        return FrozenMap({v: (f"CONTROLLER://controller{v}:9093",) for v in sorted(voters)})
    endpoints = {}
    for key, listeners in obj.items():
        if not key.lstrip("-").isdigit():
            raise TraceError(f"{path}.endpoints.{key}: expected a node id as the key")
        endpoints[int(key)] = decoder(tuple[str, ...])(listeners, f"{path}.endpoints.{key}")
    return FrozenMap(endpoints)


def explicit_state(obj: Mapping[str, Any], path: str = "initial.explicit") -> raft.RaftNode:
    """A node started by ``raft.new_node`` from its quorum-state file and flushed log (§3.2, ``QuorumState.initialize``).

    ``{local_id, voters=[1,2,3], endpoints={"ID": [listener]} (default CONTROLLER://controllerID:9093 per voter),
    config={QuorumConfig fields} (Kafka's defaults), quorum_state={epoch, leader_id=-1, voted_key={id,
    directory_id}|null}|null (no file: epoch 0), log=[{epoch, record}] (flushed), now=0, jitter=0,
    directory_id, cluster_id, snapshot={end_offset, epoch, size}|null}``: with a ``snapshot`` the log starts at its
    end offset (a node that loaded or created it and cleaned its log), ``log`` holding the entries after it.
    """
    unknown = sorted(set(obj) - set(_EXPLICIT_FIELDS))
    if unknown:
        raise TraceError(f"{path}: unknown field {unknown[0]!r}")
    values = {name: require(dict(obj), name, tp, path, optional=not required)
              for name, (tp, required) in _EXPLICIT_FIELDS.items()}
    voters = frozenset(decoder(tuple[int, ...])(values["voters"] or list(DEFAULT_VOTERS), f"{path}.voters"))
    config = decoder(QuorumConfig)(values["config"] or {}, f"{path}.config")
    stored = (None if values["quorum_state"] is None
              else decoder(ElectionState)(values["quorum_state"], f"{path}.quorum_state"))
    entries = decode_entries(values["log"] or [], f"{path}.log")
    endpoints = _endpoints(values["endpoints"], voters, path)
    start = RaftLog()
    if values["snapshot"] is not None:
        snapshot = decoder(Snapshot)(values["snapshot"], f"{path}.snapshot")
        start = RaftLog(start_offset=snapshot.end_offset, flushed_end_offset=snapshot.end_offset,
                        last_fetched_epoch=snapshot.epoch, snapshots=(snapshot,))
    try:
        return raft.new_node(values["local_id"], voters, endpoints, config,
                             flush(append_as_follower(start, entries)),
                             stored, values["now"] or 0, values["jitter"] or 0, values["directory_id"],
                             values["cluster_id"])
    except ValueError as exc:  # epochs decreasing in the log, an impossible stored state
        raise TraceError(f"{path}: not a node the reference can start: {exc}") from exc


cached_explicit_state = ExplicitStates(explicit_state)
"""``explicit_state(obj, path)``, built once per distinct state and reference identity, then shared."""


def elected_leader() -> raft.RaftNode:
    """Node 1 of voters 1-3 (Kafka's default timeouts) elected leader of epoch 1 at time 0 by votes 1 and 2 (§3.5, §3.6).

    It restarts from a stored self-vote (a Candidate of epoch 1), counts voter 2's vote and becomes
    leader as ``raft`` does: the LeaderChange record at offset 0, flushed; BeginQuorumEpoch due at once.
    """
    candidate = explicit_state({"local_id": 1, "quorum_state": {"epoch": 1, "voted_key": {"id": 1}}})
    candidate = evolve(candidate, state=evolve(candidate.state, granted=frozenset((1, 2))))
    return raft._maybe_candidate_won(candidate, 0, [])


STANDARD_JSON: dict[str, dict[str, Any]] = {
    "raft/fresh-voter": {"local_id": 1},
    "raft/fresh-observer": {"local_id": 4},
    "raft/follower": {"local_id": 2, "quorum_state": {"epoch": 1, "leader_id": 1}, "log": [
        {"epoch": 1, "record": {"type": "LeaderChangeMessage", "leader_id": 1, "voters": [1, 2, 3],
                                "granting_voters": [1, 2]}}]},
}
"""Standard initial states given as explicit ones (FORMAT.md lists them)."""

STANDARD_STATES: dict[str, Callable[[], raft.RaftNode]] = {
    **{name: functools.partial(explicit_state, obj, f"initial.standard {name}") for name, obj in STANDARD_JSON.items()},
    "raft/leader": elected_leader,
}


class RaftComponent:
    """The ``raft`` component: decoding and encoding of its inputs and explicit initial states (no records)."""

    name = "raft"

    @property
    def standard_states(self) -> Mapping[str, Callable[[], raft.RaftNode]]:
        return STANDARD_STATES

    def decode_input(self, action: str, obj: dict[str, Any], path: str) -> Mapping[str, Any]:
        """The arguments of ``action``: the message (or records) decoded here, the rest by the shared plans."""
        args = decode_arguments(_INPUT_PLANS, "raft", action, {k: v for k, v in obj.items() if k not in _SELF_DECODED},
                                path)
        spec = ACTIONS[action].args
        for name in _SELF_DECODED:
            if name in obj and name not in spec:
                raise TraceError(f"{path}: unknown argument {name!r} for action {action!r}")
            if name in spec and name not in obj:
                raise TraceError(f"{path}: action {action!r} needs {name!r}")
        if "message" in obj:
            args["message"] = decode_message(spec["message"][0], obj["message"], f"{path}.message")
        if "records" in obj:
            where = f"{path}.records"
            if not isinstance(obj["records"], list):
                raise TraceError(f"{where}: expected an array of records")
            args["records"] = tuple(decode_record_value(r, f"{where}[{i}]") for i, r in enumerate(obj["records"]))
        return args

    def encode_input(self, action: str, args: Mapping[str, Any]) -> dict[str, Any]:
        """The JSON arguments of one input."""
        return {name: encode_message(value) if name == "message" else
                [encode_record_value(r) for r in value] if name == "records" else to_json(value)
                for name, value in args.items()}

    def decode_record(self, obj: object, path: str) -> tuple[int, MetadataRecord]:
        """Refused: a Raft node writes no metadata records of its own (its output is ``response.sends``)."""
        raise TraceError(f"{path}: the raft component writes no metadata records; state the messages sent in "
                         f"output.response.sends")

    def encode_record(self, offset: int, record: MetadataRecord) -> dict[str, Any]:
        """Never called: raft steps write no records."""
        raise TypeError("the raft component writes no metadata records")

    def check_explicit(self, obj: dict[str, Any], path: str) -> None:
        """Check an explicit initial state by starting the node (cheap: the replay starts it again)."""
        explicit_state(obj, path)


RAFT = RaftComponent()
