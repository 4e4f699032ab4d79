"""Raft traces in the vocabulary of ``KRaftQuorumTrace.tla`` (``kraftspec check --with-tlc``).

A raft trace is one node's view (``traces/FORMAT.md``): the spec's per-node handlers judge that node and
the other nodes are its environment. The correspondences of ``spec/agree_raft.py``, read backwards: an
input message is the spec's message in the bag (log entries as their epochs; a response carries the
position or epoch of the request it answers, the request the node has outstanding to its source, as
Kafka's correlation ids decide, so an unanswerable response is one the spec discards); each message the
node sent is the handler's reply or the message of a send action; ``append`` of one record is
ClientAppend, ``restart`` is Crash, ``tick`` only polls, ``create_snapshot`` / ``delete_before_snapshot`` are
HandleCreateSnapshot / DeleteBeforeSnapshot, FetchSnapshot requests and answers the spec's (KIP-630; one chunk
each); the node's timer firing is the spec's Timeout (into
Prospective, KIP-996's pre-vote, whose requests and answers are the spec's vote messages with ``preVote``). Time
is abstract (``now``, ``jitter`` and ``clock`` are not judged); a QuorumEpochResponse answering
BeginQuorumEpoch is not modelled, so not judged. UpdateRaftVoter at kraft.version 0 (§3.15): a request to the node
is the spec's ``OnUpdateVoterRequest`` (its answer ``UpdateVoterError``; ``malformed``: no directory id or no
CONTROLLER listener), one the node sends ``MaybeSendUpdateVoterRequest``, an answer NONE or UNSUPPORTED_VERSION
``OnUpdateVoterResponse`` (taken without moving; other answers, and one from another leader or epoch, are outside).
Outside:
EndQuorumEpoch, DescribeQuorum, ``resign``, parked fetches, appends of other than one record, ids other
than the spec's nodes, epochs or offsets beyond ``KRaftQuorum.deep.cfg``'s bounds (the deeper ones TLC
checks; with up to ``MaxLogLen`` snapshots), fields the spec's nodes never set, a snapshot fetched in more than one
chunk or created elsewhere than at the high watermark.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator, Mapping, Optional

from kraftspec.reference import raft
from kraftspec.reference.frozen import FrozenMap
from kraftspec.reference.raft_state import leader_of
from kraftspec.reference.raft_messages import (
    METADATA_PARTITION,
    METADATA_TOPIC_ID,
    BeginQuorumEpochRequest,
    FetchRequest,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    UpdateRaftVoterRequest,
    UpdateRaftVoterResponse,
    VoteRequest,
    VoteResponse,
)
from kraftspec.spec import agree_raft
from kraftspec.spec.tla_parse import to_tla
from kraftspec.spec.tla_values import TlaValue, record
from kraftspec.spec.tlc_config import read_constants
from kraftspec.spec.trace_validation_common import (SPEC_DIR, Encoded, Outside, TraceModule, encoded, error_name,
                                                    modelled, stated_post)
from kraftspec.traces.replay import raft as raft_replay
from kraftspec.traces.format.envelope import Step, Trace

_FETCH_ERRORS = ("NONE", "FENCED_LEADER_EPOCH", "UNKNOWN_LEADER_EPOCH", "NOT_LEADER_OR_FOLLOWER")
_FETCH_SNAPSHOT_ERRORS = _FETCH_ERRORS + ("SNAPSHOT_NOT_FOUND",)
"""The partition errors the spec's fetch answers carry (§3.7 epoch validation)."""
_NO_MESSAGE = record(type="none")
_UNANSWERED = -1
"""The position or request epoch of a response no outstanding request awaits: the spec discards it."""
_UNANSWERED_SNAPSHOT = (-2, -2)
"""The snapshot id a FetchSnapshot response answers when no request awaits it (never a download's)."""
_STEP_KINDS = {"tick": "tick", "advance_clock": "clock", "restart": "restart"}
_MODELLED = ("vote_request", "vote_response", "fetch_request", "fetch_response", "begin_quorum_epoch_request", "append",
             "fetch_snapshot_request", "fetch_snapshot_response", "create_snapshot", "delete_before_snapshot",
             "update_raft_voter_request", "update_raft_voter_response", *_STEP_KINDS)
_UPDATE_VOTER_TAKEN = ("NONE", "UNSUPPORTED_VERSION")
"""The UpdateRaftVoter answers a kraft.version 0 follower takes without moving (``setHasUpdatedLeader``, §3.15)."""
_POST = {"role": "role", "epoch": "epoch", "leader_id": "leader", "high_watermark": "hw",
         "flushed_end_offset": "flushed", "log_end_offset": "leo", "last_fetched_epoch": "lfe",
         "log_start_offset": "start"}


@dataclass(frozen=True)
class _Bounds:
    nodes: frozenset[int]
    max_epoch: int
    max_len: int

    def node(self, value: Any, what: str, none_ok: bool = False) -> int:
        if (none_ok and value == agree_raft.NO_NODE) or value in self.nodes:
            return int(value)
        raise Outside(f"{what} {value} is not one of the spec's nodes {sorted(self.nodes)}")

    def epoch(self, value: Any, what: str) -> int:
        if not 0 <= value <= self.max_epoch:
            raise Outside(f"{what} {value} is outside 0..MaxEpoch ({self.max_epoch})")
        return int(value)

    def offset(self, value: Any, what: str, low: int = 0) -> int:
        if not low <= value <= self.max_len:
            raise Outside(f"{what} {value} is outside {low}..MaxLogLen ({self.max_len})")
        return int(value)


def _bounds(constants: Mapping[str, TlaValue]) -> _Bounds:
    return _Bounds(frozenset(constants["Voters"]) | frozenset(constants["Observers"]),  # type: ignore[arg-type]
                   int(constants["MaxEpoch"]), int(constants["MaxLogLen"]))  # type: ignore[call-overload]


def _of_node(value: TlaValue, n: int) -> TlaValue:
    """Node ``n``'s value of a one-node projection (a function of domain ``{1}`` is the sequence of one value)."""
    return value[n - 1] if isinstance(value, tuple) else value[n]  # type: ignore[index]


def _initial(trace: Trace, constants: Mapping[str, TlaValue], bounds: _Bounds) -> str:
    """The trace's initial node as the spec's variables of that node (``agree_raft.project``), with its id.

    The other nodes are the environment: they start in ``Init`` and never move; the node may start in any state
    of the spec's vocabulary within the bounds (the explicit states of ``traces/FORMAT.md``)."""
    node = raft_replay.initial(trace)
    bounds.node(node.local_id, "the node")
    if node.voters != frozenset(constants["Voters"]):  # type: ignore[arg-type]
        raise Outside(f"voters {sorted(node.voters)} are not the spec's Voters {to_tla(constants['Voters'])}")
    if node.config.fetch_max_records < bounds.max_len:
        raise Outside(f"fetch_max_records {node.config.fetch_max_records} is below MaxLogLen (the spec's leaders "
                      f"send their whole log)")
    bounds.epoch(node.state.epoch, "the epoch")
    bounds.offset(node.log.end_offset, "the log end offset")
    for entry in node.log.entries:
        bounds.epoch(entry.epoch, "a log entry's epoch")
    values = agree_raft.project(agree_raft.ExploredState((node,), FrozenMap()))
    own = {name: _of_node(values[name], node.local_id)
           for name in ("role", "epoch", "leader", "voted", "granted", "rejected", "fetched", "hw", "log", "flushed",
                        "endOff", "start", "snaps", "fetchingSnap")}
    return to_tla(record(node=node.local_id, **own))


def _epochs(entries: Any, bounds: _Bounds) -> tuple[int, ...]:
    if len(entries) > bounds.max_len:
        raise Outside(f"{len(entries)} log entries exceed MaxLogLen ({bounds.max_len})")
    return tuple(bounds.epoch(e.epoch, "a log entry's epoch") for e in entries)


class _View:
    """What the trace has shown of the node so far: its id, the requests outstanding (``RequestManager``)
    by destination with their send times, the clock, and the role, epoch and leader it last stated (a change of
    them resets the requests)."""

    def __init__(self, node: raft.RaftNode, bounds: _Bounds) -> None:
        self.n = node.local_id
        self.cluster_id = node.cluster_id
        self.bounds = bounds
        self.request_timeout = node.config.request_timeout_ms
        self.clock = 0
        self.outstanding: dict[int, tuple[dict[str, Any], int]] = {}
        self.position = (node.state.role, node.state.epoch, leader_of(node.state))

    def answered(self, source: int, correlation_id: Optional[int], kind: str) -> Optional[dict[str, Any]]:
        """The outstanding request a response from ``source`` answers (it is no longer outstanding), or None."""
        request, _ = self.outstanding.get(source, (None, 0))
        if request is None or request["type"] != kind or (
                correlation_id is not None and request.get("correlation_id") not in (None, correlation_id)):
            return None
        del self.outstanding[source]
        return request

    def after(self, step: Step, sent: list[dict[str, Any]]) -> None:
        """Forget the requests a restart or a stated change of role, epoch or leader cancels, and those timed out
        when an Unattached node or a Follower polls (``raft_node.without_timed_out``); note the new ones."""
        post = step.post or {}
        position = tuple(post.get(name, old) for name, old in zip(("role", "epoch", "leader_id"), self.position))
        self.clock = step.input.get("now", self.clock)
        if step.action == "restart" or position != self.position:
            self.outstanding.clear()
        elif step.action != "advance_clock" and position[0] in ("Unattached", "Follower"):
            self.outstanding = {dst: (request, sent_at) for dst, (request, sent_at) in self.outstanding.items()
                                if self.clock < sent_at + self.request_timeout}
        self.position = position
        for message in sent:
            if message.get("type") in ("VoteRequest", "FetchRequest", "FetchSnapshotRequest",
                                       "UpdateRaftVoterRequest"):
                self.outstanding[message["destination"]] = (message, self.clock)


def _canonical(message: Any, view: _View, what: str, **allowed: Any) -> None:
    """Outside when ``message`` names another cluster or partition than the spec's one."""
    if getattr(message, "cluster_id", None) not in (None, view.cluster_id):
        raise Outside(f"the {what} names another cluster")
    if (message.topic_partition, getattr(message, "topic_id", METADATA_TOPIC_ID)) != (METADATA_PARTITION, METADATA_TOPIC_ID):
        raise Outside(f"the {what} is not for the metadata partition")
    for name, values in allowed.items():
        if getattr(message, name) not in values:
            raise Outside(f"the {what}'s {name} {getattr(message, name)!r} is not one the spec's nodes send")


def _input(step: Step, view: _View) -> TlaValue:
    """The spec message delivered by a message input."""
    message, b, n = step.input["message"], view.bounds, view.n
    if isinstance(message, VoteRequest):
        _canonical(message, view, "vote request", voter_id=(None, n), voter_directory_id=(None,))
        if message.last_offset_epoch > message.replica_epoch:
            raise Outside("the vote request's last offset epoch is beyond its epoch (the spec's candidates never)")
        return record(
            type="VoteReq", src=b.node(message.replica_id, "the candidate"), dst=n, preVote=message.pre_vote,
            epoch=b.epoch(message.replica_epoch, "the vote request's epoch"),
            lastEpoch=b.epoch(message.last_offset_epoch, "the vote request's last epoch"),
            lastOffset=b.offset(message.last_offset, "the vote request's last offset"))
    if isinstance(message, FetchRequest):
        _canonical(message, view, "fetch request")
        if message.last_fetched_epoch > message.current_leader_epoch or message.max_wait_ms < 0:
            raise Outside("the fetch request is invalid (the spec's nodes never send it)")
        return record(type="FetchReq", src=b.node(message.replica_id, "the fetching replica"), dst=n,
                             epoch=b.epoch(message.current_leader_epoch, "the fetch request's epoch"),
                             offset=b.offset(message.fetch_offset, "the fetch offset"),
                             lastEpoch=b.epoch(message.last_fetched_epoch, "the last fetched epoch"),
                             download=agree_raft.NO_SNAPSHOT)  # what the fetcher downloads: not on the wire
    if isinstance(message, FetchSnapshotRequest):
        _canonical(message, view, "FetchSnapshot request")
        if message.position != 0 or message.max_bytes < agree_raft.SNAPSHOT_SIZE:
            raise Outside("the FetchSnapshot asks for a later chunk (the spec's snapshots are one chunk)")
        return record(type="FetchSnapReq", src=b.node(message.replica_id, "the fetching replica"), dst=n,
                      epoch=b.epoch(message.current_leader_epoch, "the FetchSnapshot's epoch"),
                      snapshot=_snapshot_id(message.snapshot_id, b))
    if isinstance(message, BeginQuorumEpochRequest):
        _canonical(message, view, "BeginQuorumEpoch request", voter_id=(None, n), voter_directory_id=(None,))
        return record(type="BeginEpoch", src=b.node(message.leader_id, "the leader"), dst=n,
                             epoch=b.epoch(message.leader_epoch, "the BeginQuorumEpoch epoch"))
    if isinstance(message, UpdateRaftVoterRequest):
        if getattr(message, "cluster_id", None) not in (None, view.cluster_id):
            raise Outside("the UpdateRaftVoter request names another cluster")
        names = {endpoint.partition("://")[0] for endpoint in message.listeners}
        return record(type="UpdateVoterReq", src=b.node(message.voter_id, "the updated voter"), dst=n,
                      epoch=b.epoch(message.current_leader_epoch, "the UpdateRaftVoter epoch"),
                      malformed=message.voter_directory_id is None or "CONTROLLER" not in names)
    source = b.node(message.source, "the responder")
    leader = b.node(message.leader_id, "the responder's leader", none_ok=True)
    epoch = b.epoch(message.leader_epoch, "the response's epoch")
    if isinstance(message, UpdateRaftVoterResponse):
        if message.error.name not in _UPDATE_VOTER_TAKEN:
            raise Outside(f"an UpdateRaftVoter answer with {message.error.name} (the spec models the ones a follower "
                          f"takes without moving: {', '.join(_UPDATE_VOTER_TAKEN)})")
        request = view.answered(source, message.correlation_id, "UpdateRaftVoterRequest")
        return record(type="UpdateVoterResp", src=source, dst=n, epoch=epoch, leader=leader,
                      error=message.error.name, answers=request is not None)
    if message.error.name != "NONE":
        raise Outside(f"a response with error {message.error.name} (the spec's nodes answer without one)")
    if isinstance(message, VoteResponse):
        if message.partition_error.name not in ("NONE", "FENCED_LEADER_EPOCH"):
            raise Outside(f"a vote response with {message.partition_error.name} (the spec's voters never answer so)")
        request = view.answered(source, message.correlation_id, "VoteRequest")
        if request is not None and epoch < request["replica_epoch"]:
            # No voter answers below the epoch it was asked in: the answer of an older request (a duplicate taken for
            # the outstanding one), which the reference ignores (§3.8) and the spec discards.
            request = None
        return record(type="VoteResp", src=source, dst=n, epoch=epoch, leader=leader, granted=message.vote_granted,
                      preVote=request is not None and request.get("pre_vote") is True,
                      reqEpoch=_UNANSWERED if request is None else request["replica_epoch"])
    if isinstance(message, FetchSnapshotResponse):
        if message.partition_error.name not in _FETCH_SNAPSHOT_ERRORS:
            raise Outside(f"a FetchSnapshot response with {message.partition_error.name} (the spec's leaders never "
                          f"answer so)")
        if message.partition_error.name == "NONE" and (message.position != 0 or message.chunk != message.size):
            raise Outside("a snapshot in more than one chunk (the spec's snapshots are one chunk)")
        request = view.answered(source, message.correlation_id, "FetchSnapshotRequest")
        return record(type="FetchSnapResp", src=source, dst=n, epoch=epoch, leader=leader,
                      error=message.partition_error.name, snapshot=_snapshot_id(message.snapshot_id, b),
                      reqSnapshot=_UNANSWERED_SNAPSHOT if request is None else tuple(request["snapshot_id"]))
    if message.partition_error.name not in _FETCH_ERRORS:
        raise Outside(f"a fetch response with {message.partition_error.name} (the spec's leaders never answer so)")
    request = view.answered(source, message.correlation_id, "FetchRequest")
    diverging = message.diverging_epoch
    if diverging[0] >= 0:
        b.epoch(diverging[0], "the diverging epoch")
        b.offset(diverging[1], "the diverging end offset")
    return record(
        type="FetchResp", src=source, dst=n, epoch=epoch, leader=leader, error=message.partition_error.name,
        hw=b.offset(message.high_watermark, "the fetch response's high watermark", -1),
        diverging=tuple(diverging), entries=_epochs(message.records, b),
        snapshot=_snapshot_id(message.snapshot_id, b), download=agree_raft.NO_SNAPSHOT,  # download: set by the module
        offset=_UNANSWERED if request is None else request["fetch_offset"],
        lastEpoch=_UNANSWERED if request is None else request["last_fetched_epoch"])


def _snapshot_id(value: Any, b: _Bounds) -> tuple[int, int]:
    """A snapshot id (end offset, epoch) within the bounds; Kafka's empty id and the bootstrap one as they are."""
    end, epoch = value
    if (end, epoch) not in (agree_raft.NO_SNAPSHOT, (0, 0)):
        b.offset(end, "a snapshot's end offset")
        b.epoch(epoch, "a snapshot's epoch")
    return (int(end), int(epoch))


_REPLY_FIELDS = {"VoteResponse": {"leader_epoch": "epoch", "leader_id": "leader", "vote_granted": "granted"},
                 "FetchResponse": {"leader_epoch": "epoch", "leader_id": "leader", "partition_error": "error",
                                   "high_watermark": "hw", "diverging_epoch": "diverging", "records": "entries",
                                   "snapshot_id": "snapshot"},
                 "FetchSnapshotResponse": {"leader_epoch": "epoch", "leader_id": "leader", "partition_error": "error",
                                           "snapshot_id": "snapshot"},
                 "UpdateRaftVoterResponse": {"leader_epoch": "epoch", "leader_id": "leader", "error": "error"}}
_REQUEST_FIELDS = {"VoteRequest": ("VoteReq", {"replica_epoch": "epoch", "last_offset_epoch": "lastEpoch",
                                               "last_offset": "lastOffset", "pre_vote": "preVote"}),
                   "FetchRequest": ("FetchReq", {"current_leader_epoch": "epoch", "fetch_offset": "offset",
                                                 "last_fetched_epoch": "lastEpoch"}),
                   "BeginQuorumEpochRequest": ("BeginEpoch", {"leader_epoch": "epoch"}),
                   "FetchSnapshotRequest": ("FetchSnapReq", {"current_leader_epoch": "epoch",
                                                             "snapshot_id": "snapshot"}),
                   "UpdateRaftVoterRequest": ("UpdateVoterReq", {"current_leader_epoch": "epoch"})}


def _typed(value: Any, expected: type) -> Any:
    """``value`` if of exactly type ``expected`` (TLC cannot compare, say, a string with an integer); ValueError else."""
    if type(value) is not expected:
        raise ValueError(f"{value!r} is not of type {expected.__name__}")
    return value


def _ints(values: Any) -> tuple[int, ...]:
    return tuple(_typed(v, int) for v in _typed(values, list))


def _stated(message: Mapping[str, Any], names: Mapping[str, str]) -> dict[str, TlaValue]:
    """The spec's fields of a sent message that the trace states (only those are compared, as the replay does)."""
    out: dict[str, TlaValue] = {}
    for name, field in names.items():
        if name in message:
            value = message[name]
            out[field] = (_typed(error_name(value), str) if name in ("partition_error", "error")
                          else _ints(value) if name in ("diverging_epoch", "snapshot_id")
                          else _ints([e["epoch"] for e in _typed(value, list)]) if name == "records"
                          else _typed(value, bool if name in ("vote_granted", "pre_vote") else int))
    return out


def _reply(message: Mapping[str, Any], delivered: TlaValue, view: _View) -> TlaValue:
    """A sent response as the spec's reply to the delivered request (the position or epoch it answers is the request's)."""
    if message["type"] != "UpdateRaftVoterResponse" and message.get("error", "NONE") not in ("NONE", 0):
        raise Outside(f"the {message['type']} answers with error {message['error']}")
    fields = _stated(message, _REPLY_FIELDS[message["type"]])
    if message["type"] == "UpdateRaftVoterResponse":
        return record(type="UpdateVoterResp", src=view.n, dst=message["destination"], **fields)
    if message["type"] == "VoteResponse":
        return record(type="VoteResp", src=view.n, dst=message["destination"],
                      reqEpoch=delivered["epoch"], preVote=delivered["preVote"], **fields)  # type: ignore[index]
    if message["type"] == "FetchSnapshotResponse":
        return record(type="FetchSnapResp", src=view.n, dst=message["destination"],
                      reqSnapshot=delivered["snapshot"], **fields)  # type: ignore[index]
    return record(type="FetchResp", src=view.n, dst=message["destination"], offset=delivered["offset"],  # type: ignore[index]
                  lastEpoch=delivered["lastEpoch"], **fields)  # type: ignore[index]


def _request(message: Mapping[str, Any], view: _View) -> TlaValue:
    """A sent request as the message of the spec's send action (its stated fields)."""
    kind, names = _REQUEST_FIELDS[message["type"]]
    return record(type=kind, src=view.n, dst=message["destination"], **_stated(message, names))


def _sends(step: Step, kind: str, delivered: TlaValue,
           view: _View) -> tuple[tuple[TlaValue, ...], tuple[TlaValue, ...]]:
    """(the handler's reply, the requests sent) of the stated sends."""
    stated = [] if step.response is None else list(step.response.get("sends") or [])
    request_input = (kind == "msg"
                     and delivered["type"] in ("VoteReq", "FetchReq", "FetchSnapReq",  # type: ignore[index]
                                               "UpdateVoterReq"))
    reply: list[TlaValue] = []
    requests: list[TlaValue] = []
    for position, message in enumerate(stated):
        what = message.get("type")
        _typed(message.get("destination"), int)
        if what in ("VoteResponse", "FetchResponse", "FetchSnapshotResponse", "UpdateRaftVoterResponse"):
            if not (request_input and position == 0 and message.get("destination") == delivered["src"]):  # type: ignore[index]
                raise Outside(f"a {what} the spec's handlers do not send here (a parked fetch answered, ...)")
            reply.append(_reply(message, delivered, view))
        elif what == "QuorumEpochResponse" and step.action == "begin_quorum_epoch_request":
            continue  # the spec does not model BeginQuorumEpoch's answer
        elif what in ("VoteRequest", "FetchRequest", "BeginQuorumEpochRequest", "FetchSnapshotRequest",
                      "UpdateRaftVoterRequest"):
            requests.append(_request(message, view))
        else:
            raise Outside(f"the node sends a {what}, which the spec does not model")
    if request_input and not reply:
        if delivered["type"] == "FetchReq" and step.input["message"].max_wait_ms > 0:  # type: ignore[index]
            raise Outside("the leader parks the fetch (the spec answers every fetch at once)")
    return tuple(reply), tuple(requests)


def _post(post: Mapping[str, Any]) -> dict[str, TlaValue]:
    """The stated post-state as the node's spec variables (``clock`` is not judged: the spec's time is abstract)."""
    out: dict[str, TlaValue] = {_POST[name]: _typed(value, str if name == "role" else int)
                                for name, value in post.items() if name in _POST}
    if "voted_key" in post:
        out["voted"] = agree_raft.NO_NODE if post["voted_key"] is None else _typed(post["voted_key"]["id"], int)
    if "log" in post:
        out["log"] = _ints([e["epoch"] for e in _typed(post["log"], list)])
    if "epoch_cache" in post:
        out["cache"] = frozenset(_ints(pair) for pair in _typed(post["epoch_cache"], list))
    if "quorum_state_file" in post:
        out["qepoch"] = _typed(post["quorum_state_file"]["epoch"], int)
    if "latest_snapshot_id" in post:
        latest = post["latest_snapshot_id"]
        out["latest"] = agree_raft.NO_SNAPSHOT if latest is None else _ints(latest)
    return out


def encode_step(step: Step, view: _View) -> str:
    """The step as a ``KRaftQuorumTrace`` step record. Raises :class:`Outside` when the spec cannot express it."""
    action = modelled(step, _MODELLED, "the spec")
    m, extra = _NO_MESSAGE, {}
    if "message" in step.input:
        kind, m = "msg", _input(step, view)
    elif action == "append":
        records = step.input["records"]
        if len(records) != 1:
            raise Outside(f"an append of {len(records)} records (the spec's leaders append one at a time)")
        if step.response is None or "last_offset" not in step.response:
            raise Outside("the append does not state whether the node appended (last_offset)")
        kind = "noappend" if step.response["last_offset"] is None else "append"
    elif action in ("create_snapshot", "delete_before_snapshot"):
        snap = (_typed(step.input["end_offset"], int), _typed(step.input["epoch"], int))
        kind, extra = ("create", {"snap": snap}) if action == "create_snapshot" else ("delete", {"snap": snap})
        if action == "create_snapshot":
            if step.response is None or "created" not in step.response:
                raise Outside("the snapshot creation does not state whether the node got a writer (created)")
            if step.input["size"] > agree_raft.SNAPSHOT_SIZE:
                raise Outside("a snapshot larger than one chunk of the spec's")
            extra["created"] = bool(step.response["created"])
    else:
        kind = _STEP_KINDS[action]
    try:
        reply, requests = _sends(step, kind, m, view)
        post = _post(step.post or {})
        view.after(step, [] if step.response is None else list(step.response.get("sends") or []))
        readable = True
    except (KeyError, TypeError, ValueError, AttributeError):  # stated JSON of another shape than the reference's
        reply, requests, post, readable = (), (), {}, False
    extra = {"snap": (-1, -1), "created": False, **extra}
    return to_tla(record(kind=kind, m=m, reply=reply, reqs=requests, readable=readable, **extra,
                         role=post.get("role", "?"), **stated_post(post)))


def encode(trace: Trace, constants: Mapping[str, TlaValue]) -> Encoded:
    """``trace`` in the trace module's vocabulary, up to its first step the spec cannot express."""
    bounds = _bounds(constants)

    def steps() -> Iterator[str]:
        view = _View(raft_replay.initial(trace), bounds)
        for step in trace.steps:
            yield encode_step(step, view)
    return encoded(lambda: _initial(trace, constants, bounds), steps)


@dataclass(frozen=True)
class _RaftTraceModule(TraceModule):
    """The raft trace module, validated under ``KRaftQuorum.deep.cfg``: a trace holds one node's states, so the
    deeper bounds TLC also checks cost nothing here; and with up to one snapshot per record (``MaxSnapshots`` =
    ``MaxLogLen``: the deep config creates none, to keep TLC's run as it was)."""

    def bounds(self) -> dict[str, TlaValue]:
        deep = read_constants(SPEC_DIR / f"{self.spec}.deep.cfg")
        return {**deep, "MaxSnapshots": deep["MaxLogLen"]}


MODULE = _RaftTraceModule("raft", "KRaftQuorum",
                          ("role", "epoch", "leader", "voted", "granted", "rejected", "fetched", "hw", "log", "flushed",
                           "endOff", "msgs", "committed", "faults", "timeouts", "start", "snaps", "fetchingSnap",
                           "snapshots", "logHw", "t", "i", "outside", "ph", "k"), encode)
"""``spec/KRaftQuorumTrace.tla``: the spec's variables, then the trace index, the steps explained, why it stopped,
the phase within a step and the requests sent so far."""
