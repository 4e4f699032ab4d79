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
record ``{"type": "LeaderChangeMessage", ...}`` (§3.11), ``VotersRecord`` or ``KRaftVersionRecord`` (§3.14). A
kraft.version 1 node (KIP-853) also takes an admin client's ``add_raft_voter_request`` and ``remove_raft_voter_request``
(answered by a ``VoterChangeResponse`` to the client) and, as a leader adding a voter, the new voter's
``api_versions_response`` to the ``ApiVersionsRequest`` it sent; an observer that auto-joins sends the leader
AddRaftVoter or RemoveRaftVoter itself and takes its ``voter_change_response``. A response input without ``correlation_id``
answers the request the node has outstanding to its ``source`` (``RequestManager``), so a recorder need
not map the implementation's correlation ids onto the reference's.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from typing import Any, Callable, Mapping, Optional

from kraftspec.reference import raft
from kraftspec.reference.frozen import FrozenMap, evolve
from kraftspec.reference.raft_log import LogEntry, RaftLog, Snapshot, append_as_follower, flush
from kraftspec.reference.raft_messages import (
    AddRaftVoterRequest,
    ApiVersionsResponse,
    BeginQuorumEpochRequest,
    DescribeQuorumRequest,
    EndQuorumEpochRequest,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    NO_SNAPSHOT_ID,
    QuorumEpochResponse,
    RaftFatalError,
    RemoveRaftVoterRequest,
    UpdateRaftVoterRequest,
    UpdateRaftVoterResponse,
    VoteRequest,
    VoteResponse,
    VoterChangeResponse,
)
from kraftspec.reference.raft_records import LeaderChangeMessage
from kraftspec.reference.raft_voters import KRaftVersionRecord, VoterNode, VotersRecord, endpoint_strings, replica_key
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
    Action("fetch_snapshot_request", "raft_snapshot.handle_fetch_snapshot_request", _message(FetchSnapshotRequest)),
    Action("fetch_snapshot_response", "raft_snapshot.handle_fetch_snapshot_response", _message(FetchSnapshotResponse)),
    Action("update_raft_voter_request", "raft_reconfig_client.handle_update_voter_request",
           _message(UpdateRaftVoterRequest)),
    Action("update_raft_voter_response", "raft_reconfig_client.handle_update_voter_response",
           _message(UpdateRaftVoterResponse)),
    Action("add_raft_voter_request", "raft_reconfig_client.handle_add_voter_request", _message(AddRaftVoterRequest)),
    Action("remove_raft_voter_request", "raft_reconfig_client.handle_remove_voter_request",
           _message(RemoveRaftVoterRequest)),
    Action("api_versions_response", "raft_reconfig_client.handle_api_versions_response", _message(ApiVersionsResponse)),
    Action("voter_change_response", "raft_reconfig_client.handle_voter_change_response", _message(VoterChangeResponse)),
    Action("tick", "raft._poll", _POLLED),
    Action("append", "raft._handle_append", {"records": (tuple, True), **_POLLED}),
    Action("resign", "raft._handle_resign", {"epoch": (int, True), **_POLLED}),
    Action("upgrade_kraft_version", "raft_reconfig_client.handle_upgrade_kraft_version",
           {"epoch": (int, True), "kraft_version": (int, True), "validate_only": (bool, False), **_POLLED}),
    Action("shutdown", "raft._handle_shutdown", {"timeout_ms": (int, True), **_POLLED}),
    Action("create_snapshot", "raft_snapshot.handle_create_snapshot",
           {"end_offset": (int, True), "epoch": (int, True), "size": (int, True), **_POLLED}),
    Action("delete_before_snapshot", "raft_snapshot.handle_delete_before_snapshot",
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
             UpdateRaftVoterResponse, ApiVersionsResponse, VoterChangeResponse)  # answers to the node's requests
CONTROL_RECORD_TYPES = (KRaftVersionRecord, VotersRecord)  # what a snapshot's first batch holds after its header
QUORUM_EPOCH_APIS = ("BeginQuorumEpoch", "EndQuorumEpoch")  # the two RPCs a QuorumEpochResponse answers (§3.9)


_LISTENER = re.compile(r"([A-Za-z0-9_.-]+)://(.+):([0-9]{1,5})")
KRAFT_VERSIONS = (0, 1)
"""The kraft.version levels a trace may state (``KRaftVersion``: 0 static voters, 1 dynamic voters, KIP-853)."""


def decode_listeners(value: object, path: str) -> FrozenMap[str, tuple[str, int]]:
    """Listeners ``["NAME://host:port"]`` as listener name -> (host, port) (``raft_voters.listeners_of``)."""
    if not isinstance(value, list) or not value:
        raise TraceError(f"{path}: expected a non-empty array of listeners NAME://host:port")
    parsed: dict[str, tuple[str, int]] = {}
    for i, endpoint in enumerate(value):
        match = _LISTENER.fullmatch(endpoint) if isinstance(endpoint, str) else None
        if match is None:
            raise TraceError(f"{path}[{i}]: expected a listener NAME://host:port, got {endpoint!r}")
        if match[1] in parsed:
            raise TraceError(f"{path}[{i}]: listener {match[1]} given twice")
        parsed[match[1]] = (match[2], int(match[3]))
    return FrozenMap(parsed)


def _kraft_version(value: object, path: str) -> int:
    if type(value) is not int or value not in KRAFT_VERSIONS:
        known = ", ".join(map(str, KRAFT_VERSIONS))
        raise TraceError(f"{path}: expected a kraft.version, one of {known}, got {value!r}")
    return value


def _object(value: object, required: tuple[str, ...], optional: tuple[str, ...], path: str) -> dict[str, Any]:
    """``value`` as an object with the ``required`` fields and at most the ``optional`` ones besides."""
    if not isinstance(value, dict):
        raise TraceError(f"{path}: expected an object")
    unknown = sorted(set(value) - set(required) - set(optional))
    if unknown:
        raise TraceError(f"{path}: unknown field {unknown[0]!r}")
    for name in required:
        require(value, name, object, path)
    return value


def decode_voter_node(value: object, path: str, kraft_version_range: Optional[tuple[int, int]] = None) -> VoterNode:
    """A voter ``{"id", "directory_id" (null: none), "listeners": ["NAME://host:port"], "kraft_version_range":
    [min, max]}`` (``VotersRecord.Voter``, §3.14); with ``kraft_version_range`` given, the field is not read (a
    bootstrap voter supports the range its formatter's version does) and its ``listeners`` default to
    ``CONTROLLER://controller<id>:9093``."""
    bootstrap = kraft_version_range is not None
    obj = _object(value, ("id",) if bootstrap else ("id", "listeners", "kraft_version_range"),
                  ("directory_id", "listeners") if bootstrap else ("directory_id",), path)
    voter_id = require(obj, "id", int, path)
    directory_id = require(obj, "directory_id", str, path, optional=True)
    listeners = obj.get("listeners", [f"CONTROLLER://controller{voter_id}:9093"])
    if not bootstrap:
        low, high = decoder(tuple[int, int])(obj["kraft_version_range"], f"{path}.kraft_version_range")
        if not 0 <= low <= high:
            raise TraceError(f"{path}.kraft_version_range: expected [min, max] with 0 <= min <= max, got {[low, high]}")
        kraft_version_range = (low, high)
    return VoterNode(voter_key=replica_key(voter_id, directory_id),
                     listeners=decode_listeners(listeners, f"{path}.listeners"),
                     supported_kraft_version=kraft_version_range)


def encode_voter_node(node: VoterNode) -> dict[str, Any]:
    """The JSON of a voter (:func:`decode_voter_node` reads it back)."""
    return {"id": node.voter_key.id, "directory_id": node.voter_key.directory_id,
            "listeners": list(endpoint_strings(node.listeners)),
            "kraft_version_range": list(node.supported_kraft_version)}


def _decode_voters(value: object, path: str,
                   kraft_version_range: Optional[tuple[int, int]] = None) -> tuple[VoterNode, ...]:
    """An array of voters, each id once (``VoterSet``: one node per id, §3.14)."""
    if not isinstance(value, list):
        raise TraceError(f"{path}: expected an array of voters")
    voters = tuple(decode_voter_node(v, f"{path}[{i}]", kraft_version_range) for i, v in enumerate(value))
    for i, voter in enumerate(voters):
        if any(other.voter_key.id == voter.voter_key.id for other in voters[:i]):
            raise TraceError(f"{path}[{i}].id: voter {voter.voter_key.id} given twice")
    return voters


def decode_record_value(value: object, path: str) -> Any:
    """A log record: a data value (string, integer, null) or a control record ``{"type": "LeaderChangeMessage", ...}``
    (§3.11), ``{"type": "VotersRecord", "version", "voters": [voter]}`` or ``{"type": "KRaftVersionRecord", "version",
    "kraft_version"}`` (§3.14)."""
    if value is None or type(value) in (str, int):
        return value
    kind = value.get("type") if isinstance(value, dict) else None
    if kind == "LeaderChangeMessage":
        return decoder(LeaderChangeMessage)({k: v for k, v in value.items() if k != "type"}, path)
    if kind == "KRaftVersionRecord":
        obj = _object(value, ("type", "kraft_version"), ("version",), path)
        return KRaftVersionRecord(kraft_version=_kraft_version(obj["kraft_version"], f"{path}.kraft_version"),
                                  version=require(obj, "version", int, path, optional=True) or 0)
    if kind == "VotersRecord":
        obj = _object(value, ("type", "voters"), ("version",), path)
        return VotersRecord(voters=_decode_voters(obj["voters"], f"{path}.voters"),
                            version=require(obj, "version", int, path, optional=True) or 0)
    raise TraceError(f"{path}: expected a string, an integer, null or a LeaderChangeMessage, VotersRecord or "
                     f"KRaftVersionRecord object")


def encode_record_value(value: Any) -> Any:
    """The JSON of a log record (:func:`decode_record_value` reads it back)."""
    if isinstance(value, LeaderChangeMessage):
        return {"type": "LeaderChangeMessage", **to_json(value)}
    if isinstance(value, KRaftVersionRecord):
        return {"type": "KRaftVersionRecord", "version": value.version, "kraft_version": value.kraft_version}
    if isinstance(value, VotersRecord):
        return {"type": "VotersRecord", "version": value.version,
                "voters": [encode_voter_node(v) for v in value.voters]}
    return value


def decode_entries(value: object, path: str) -> tuple[LogEntry, ...]:
    """Log entries ``[{"epoch", "record", "starts_batch"?}]`` (§3.7); ``starts_batch: false`` continues the batch of
    the entry before, in the same epoch."""
    if not isinstance(value, list):
        raise TraceError(f"{path}: expected an array of log entries")
    entries: list[LogEntry] = []
    for i, item in enumerate(value):
        where = f"{path}[{i}]"
        if not isinstance(item, dict) or not {"epoch", "record", "starts_batch"}.issuperset(item):
            raise TraceError(f"{where}: expected an object with fields epoch, record and optionally starts_batch")
        record = decode_record_value(item.get("record"), f"{where}.record")
        entry = LogEntry(epoch=require(item, "epoch", int, where), record=record,
                         starts_batch=require(item, "starts_batch", bool, where) if "starts_batch" in item else True)
        if not entry.starts_batch and (not entries or entries[-1].epoch != entry.epoch):
            raise TraceError(f"{where}.starts_batch: false continues a batch, which needs an entry before it in the "
                             f"same epoch")
        entries.append(entry)
    return tuple(entries)


def encode_entries(entries: tuple[LogEntry, ...]) -> list[dict[str, Any]]:
    """The JSON of log entries (``starts_batch`` only on an entry that continues a batch)."""
    return [{"epoch": e.epoch, "record": encode_record_value(e.record)} | ({} if e.starts_batch else
                                                                             {"starts_batch": False})
            for e in entries]


def decode_message(cls: type, value: object, path: str) -> Any:
    """A message of ``cls``: its records as log entries; a response without ``correlation_id`` has None there."""
    if not isinstance(value, dict):
        raise TraceError(f"{path}: expected an object")
    unanswered = cls in RESPONSES and value.get("correlation_id") is None
    dropped = ("records", "control_records", "correlation_id") if unanswered else ("records", "control_records")
    fields = {k: v for k, v in value.items() if k not in dropped}
    message = decoder(cls)(fields, path)
    changes: dict[str, Any] = {}
    if "records" in value:
        if cls is not FetchResponse:
            raise TraceError(f"{path}: unknown field 'records' for {cls.__name__}")
        changes["records"] = decode_entries(value["records"], f"{path}.records")
    if "control_records" in value:  # a FetchSnapshot chunk from byte 0: the snapshot's control records (§3.14)
        records = value["control_records"]
        if cls is not FetchSnapshotResponse or not isinstance(records, list):
            raise TraceError(f"{path}.control_records: expected an array of control records in a "
                             f"FetchSnapshotResponse")
        decoded = tuple(decode_record_value(r, f"{path}.control_records[{i}]") for i, r in enumerate(records))
        for i, record in enumerate(decoded):
            if not isinstance(record, CONTROL_RECORD_TYPES):
                raise TraceError(f"{path}.control_records[{i}]: expected a KRaftVersionRecord or VotersRecord object")
        changes["control_records"] = decoded
    if cls is QuorumEpochResponse and message.api not in QUORUM_EPOCH_APIS:
        raise TraceError(f"{path}.api: expected one of {', '.join(QUORUM_EPOCH_APIS)}, got {message.api!r}")
    if unanswered:
        changes["correlation_id"] = None
    return evolve(message, **changes) if changes else message


def encode_message(message: Any) -> dict[str, Any]:
    """The JSON of a message (records as log entries; a correlation id of None left out; a Fetch answer's
    ``snapshot_id`` and ``records_offset`` only when they say something: no snapshot and the fetcher's LEO read as
    their defaults; a FetchSnapshot answer's ``control_records`` only when it has some)."""
    obj = to_json(evolve(message, records=()) if isinstance(message, FetchResponse) else message)
    if isinstance(message, FetchResponse):
        obj["records"] = encode_entries(message.records)
        if message.snapshot_id == NO_SNAPSHOT_ID:
            del obj["snapshot_id"]
        if message.records_offset is None:
            del obj["records_offset"]
    if isinstance(message, FetchSnapshotResponse):
        obj["control_records"] = [encode_record_value(r) for r in message.control_records]
        if not message.control_records:
            del obj["control_records"]
    if obj.get("correlation_id", 0) is None:
        del obj["correlation_id"]
    return obj


_EXPLICIT_FIELDS: dict[str, tuple[Any, bool]] = {
    "local_id": (int, True), "voters": (list, False), "endpoints": (dict, False), "config": (dict, False),
    "quorum_state": (dict, False), "log": (list, False), "now": (int, False), "jitter": (int, False),
    "directory_id": (str, False), "cluster_id": (str, False), "snapshot": (dict, False),
    "kraft_version": (int, False), "bootstrap_voters": (list, False), "listeners": (list, False),
    "can_become_voter": (bool, False),
}
DEFAULT_VOTERS = (1, 2, 3)
_STATIC_ONLY = ("voters", "endpoints", "snapshot")
"""Explicit fields of a kraft.version 0 node only: a kraft.version 1 node reads its voters from its bootstrap
checkpoint and log, and a later snapshot's control records have no JSON."""
_DYNAMIC_ONLY = ("bootstrap_voters", "listeners", "can_become_voter")
BOOTSTRAP_CHECKPOINT = Snapshot(end_offset=0, epoch=0, size=100)
"""The bootstrap checkpoint ``0-0`` (``Snapshots.BOOTSTRAP_SNAPSHOT_ID``), never served to a fetcher, so its size is
never read (``models.raft_reconfig.bootstrapped``'s)."""


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
    directory_id, cluster_id, snapshot={end_offset, epoch, size}|null, kraft_version=0}``: with a ``snapshot`` the log
    starts at its end offset (a node that loaded or created it and cleaned its log), ``log`` holding the entries after
    it. With ``kraft_version`` 1 the node is a dynamic one (:func:`_dynamic_state`: ``bootstrap_voters`` and
    ``listeners`` instead of ``voters``, ``endpoints`` and ``snapshot``).
    """
    unknown = sorted(set(obj) - set(_EXPLICIT_FIELDS))
    if unknown:
        raise TraceError(f"{path}: unknown field {unknown[0]!r}")
    values = {name: require(dict(obj), name, tp, path, optional=not required)
              for name, (tp, required) in _EXPLICIT_FIELDS.items()}
    kraft_version = _kraft_version(obj.get("kraft_version", 0), f"{path}.kraft_version")
    given = [name for name in (_STATIC_ONLY if kraft_version else _DYNAMIC_ONLY) if name in obj]
    if given:
        raise TraceError(f"{path}.{given[0]}: not a field of a kraft.version {kraft_version} node")
    if kraft_version:
        return _dynamic_state(values, path)
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


def _dynamic_state(values: Mapping[str, Any], path: str) -> raft.RaftNode:
    """A kraft.version 1 node (``kraft_version: 1``) started by ``raft.new_dynamic_node`` (§3.14): formatted with
    ``--initial-controllers`` (``Formatter.writeDynamicQuorumSnapshot``), its bootstrap checkpoint ``0-0`` holds a
    KRaftVersionRecord of 1 and a VotersRecord of ``bootstrap_voters`` (each supporting kraft.version 0 to 1), whether
    it is one of them or not; ``listeners`` are its own (default: its entry there); ``can_become_voter`` (default true:
    a controller, ``KafkaRaftManager``) makes it flush what it fetches as an observer too (``canBecomeVoter``)."""
    if values["directory_id"] is None:
        raise TraceError(f"{path}: missing field 'directory_id' (a kraft.version 1 node has one)")
    if not values["bootstrap_voters"]:
        # Formatted with --no-initial-controllers, a node has no bootstrap checkpoint (Formatter.DirectoryType
        # STATIC_METADATA_DIRECTORY) and fetches from controller.quorum.bootstrap.servers, which the reference's
        # bootstrap servers (the voters in force) cannot name.
        raise TraceError(f"{path}.bootstrap_voters: a kraft.version 1 node needs the initial voters of its bootstrap "
                         f"checkpoint (a node formatted with --no-initial-controllers is not expressible)")
    voters = _decode_voters(values["bootstrap_voters"], f"{path}.bootstrap_voters", raft.SUPPORTED_KRAFT_VERSIONS)
    local_id = values["local_id"]
    own = [v.listeners for v in voters if v.voter_key.id == local_id]
    listeners = (decode_listeners(values["listeners"], f"{path}.listeners") if values["listeners"] is not None
                 else own[0] if own else FrozenMap({"CONTROLLER": (f"controller{local_id}", 9093)}))
    checkpoint = (KRaftVersionRecord(kraft_version=1), VotersRecord(voters=voters))
    log = RaftLog(snapshots=(BOOTSTRAP_CHECKPOINT,))
    stored = (None if values["quorum_state"] is None
              else decoder(ElectionState)(values["quorum_state"], f"{path}.quorum_state"))
    config = decoder(QuorumConfig)(values["config"] or {}, f"{path}.config")
    entries = decode_entries(values["log"] or [], f"{path}.log")
    try:
        return raft.new_dynamic_node(local_id, values["directory_id"], listeners, config,
                                     flush(append_as_follower(log, entries)),
                                     FrozenMap({BOOTSTRAP_CHECKPOINT.id: checkpoint}), stored, values["now"] or 0,
                                     values["jitter"] or 0, values["cluster_id"],
                                     can_become_voter=values["can_become_voter"] is not False)
    except (ValueError, RaftFatalError) as exc:  # epochs decreasing in the log, an impossible stored state
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
