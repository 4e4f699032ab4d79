"""Replaying raft trace steps through one reference node (``kraftspec.reference.raft``, rules §3).

``run`` hands one input to ``raft.step`` (or ``raft.restart``) and returns the messages sent as the
response ``{"sends": [...]}``; ``apply`` gives it as JSON; ``OBSERVERS`` read the post-state's fields
(``post_matches`` compares the stated ones on them, ``observe`` writes them as JSON) and ``summarize`` the
state shown beside a divergence. A sent message is compared on its destination, its type and the fields the trace
states for it. A condition on which Kafka's client stops (``RaftFatalError``) is the reference refusing
the input. Reference functions are looked up at call time, so an applied mutant takes effect here too.
Stated sends and post-states are compared on the reference's own values (``kraftspec.traces.replay.match``): only
a step that differs there has its sends converted to JSON, for the diff that decides.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import import_module
from typing import Any, Callable, Iterable, Optional, Sequence

from kraftspec.reference import raft, raft_node, raft_state
from kraftspec.reference.frozen import evolve
from kraftspec.reference.raft_log import LogEntry
from kraftspec.reference.raft_records import LeaderChangeMessage
from kraftspec.reference.raft_voters import KRaftVersionRecord, VotersRecord
from kraftspec.reference.raft_state import ListenerView
from kraftspec.reference.raft_messages import (
    Append,
    CreateSnapshot,
    DeleteBeforeSnapshot,
    FetchResponse,
    IllegalUpgradeArgumentError,
    InvalidUpdateVersionError,
    NotLeaderError,
    RaftFatalError,
    Resign,
    Send,
    Shutdown,
    Tick,
    UpgradeKRaftVersion,
    UpgradeStateError,
)
from kraftspec.traces.format.envelope import Step, Trace, Written
from kraftspec.traces.replay.match import Each, Tagged, field_values, observe as observed_json, post_matcher, stated_fields_match
from kraftspec.traces.format.raft import (
    ACTIONS,
    STANDARD_STATES,
    RESPONSES,
    encode_message,
    encode_record_value,
    cached_explicit_state,
)
from kraftspec.traces.format.values import to_json


@dataclass(frozen=True)
class Sends:
    """What the node sent while handling one input, each ``{"destination", "type", ...message fields}`` (§3.4–§3.10)."""

    sends: Sequence[dict[str, Any]]


@dataclass(frozen=True)
class AppendResult:
    """``scheduleAppend``: the messages sent and the offset of the last record appended, or None when the node
    is not the leader (Kafka throws ``NotLeaderException``, §3.2)."""

    sends: Sequence[dict[str, Any]]
    last_offset: Optional[int]


@dataclass(frozen=True)
class SnapshotResult:
    """``createSnapshot``: the messages sent and whether the log gave a writer (``created``; none for an id below the
    log start or already frozen), KIP-630."""

    sends: Sequence[dict[str, Any]]
    created: bool


@dataclass(frozen=True)
class UpgradeResult:
    """``upgradeKRaftVersion``: the messages sent and what the call returned (``upgraded``: True validated or upgraded,
    False already at that version), or the Kafka exception it threw (``error``, its simple name: the node unchanged,
    nothing sent), §3.15."""

    sends: Sequence[dict[str, Any]]
    upgraded: Optional[bool]
    error: Optional[str] = None


UPGRADE_REFUSALS = {NotLeaderError: "NotLeaderException", InvalidUpdateVersionError: "InvalidUpdateVersionException",
                    IllegalUpgradeArgumentError: "IllegalArgumentException", UpgradeStateError: "IllegalStateException"}
"""The reference's refusals of ``upgrade_kraft_version`` by the Kafka exception they stand for."""


def initial(trace: Trace) -> raft.RaftNode:
    """The trace's initial node (named or explicit), started by the reference as it is bound now (shared between
    traces that start alike)."""
    if trace.standard is not None:
        return STANDARD_STATES[trace.standard]()
    return cached_explicit_state(trace.explicit or {})


Outcome = tuple[raft.RaftNode, int, Any, Written]
_ALWAYS = ("destination", "type")  # compared in every sent message


def sent(send: Send) -> dict[str, Any]:
    """One sent message as the trace states it: destination, the message's class name, its fields."""
    return {"destination": send.destination, "type": type(send.message).__name__, **encode_message(send.message)}


def _projected(sends: tuple[dict[str, Any], ...], stated: Any) -> tuple[dict[str, Any], ...]:
    """The reference's sends restricted, position by position, to the destination, the type and the fields the
    trace states for that message (an implementation need not expose correlation ids or endpoints)."""
    if not isinstance(stated, list):
        return sends
    kept = []
    for i, message in enumerate(sends):
        given = stated[i] if i < len(stated) else None
        kept.append({k: v for k, v in message.items() if k in given or k in _ALWAYS}
                    if isinstance(given, dict) else message)
    return tuple(kept)


def _stated_entry(entry: LogEntry) -> Any:
    """A log entry as a trace states it (:func:`encode_entries`): a leader-change record also names its type, a
    kraft.version 1 control record is its JSON (``encode_record_value``), and an entry that continues a batch says
    so (``starts_batch``)."""
    kind = type(entry.record)
    if kind is LeaderChangeMessage:
        stated = {"epoch": entry.epoch, "record": Tagged(entry.record)}
    elif kind is VotersRecord or kind is KRaftVersionRecord:
        stated = {"epoch": entry.epoch, "record": encode_record_value(entry.record)}
    else:
        stated = {"epoch": entry.epoch, "record": entry.record}
    if not entry.starts_batch:
        stated["starts_batch"] = False
    return stated


def _stated_send(send: Send) -> dict[str, Any]:
    """One sent message as :func:`sent` states it, its fields the reference's values (unconverted)."""
    message = send.message
    fields = field_values(message)
    if isinstance(message, FetchResponse):
        fields["records"] = Each(message.records, _stated_entry)
    if fields.get("correlation_id", 0) is None:  # a null correlation id: left out of the JSON
        del fields["correlation_id"]
    return {"destination": send.destination, "type": type(message).__name__, **fields}


def _sends_match(sends: tuple[Send, ...], stated: Any) -> bool:
    """Whether each message sent equals the one stated at its position as :func:`_projected` keeps it (its
    destination, its type and the stated fields); False also when unsure (the diff decides)."""
    if type(stated) is not list or len(stated) != len(sends):
        return False
    for send, given in zip(sends, stated):
        if type(given) is not dict or "destination" not in given or "type" not in given \
                or not stated_fields_match(_stated_send(send), given):
            return False
    return True


def _stepped(node: raft.RaftNode, message: Any, now: int, jitter: int, bootstrap: int, step: Step,
             kept: Optional[frozenset[str]]) -> tuple[raft.RaftNode, Sequence[dict[str, Any]]]:
    """The node after ``message`` and its sends as the trace states them: the stated list itself when equal (the
    replay then sees the response match at once), else the reference's sends as JSON, projected (the diff decides).
    ``kept``: the message types a trace's view records (the others are dropped before comparing)."""
    try:
        node, sends = raft.step(node, message, now, jitter, bootstrap, step.input.get("order", ()))
    except RaftFatalError as exc:  # Kafka's client throws and stops: the reference takes no such input
        raise RuntimeError(f"RaftFatalError: {exc}") from exc
    if kept is not None:
        sends = tuple(send for send in sends if type(send.message).__name__ in kept)
    stated = step.response.get("sends") if step.response is not None else None
    if stated is not None and _sends_match(sends, stated):
        return node, stated
    return node, _projected(tuple(map(sent, sends)), stated)


def run(node: raft.RaftNode, clock: int, step: Step, kept: Optional[frozenset[str]] = None) -> Outcome:
    """(node', clock', the response object or None, no records) for one step (``kept``: a view's message types).

    Raises ``RuntimeError`` (a fatal condition) or ``ValueError`` (an illegal transition) on an input the
    reference refuses. Response inputs without a correlation id answer the request outstanding to their source.
    """
    args, action = step.input, step.action
    if action == "advance_clock":
        return node, args["now"], None, ()
    now, jitter, bootstrap = args.get("now", clock), args.get("jitter", 0), args.get("bootstrap", 0)
    if action == "restart":
        return raft.restart(node, now, jitter), now, Sends(()), ()
    if action == "append":
        records = args["records"]
        try:
            after, sends = _stepped(node, Append(records=records), now, jitter, bootstrap, step, kept)
        except NotLeaderError:
            return node, now, AppendResult((), None), ()
        return after, now, AppendResult(sends, raft.append_offset(node, records)), ()
    if action == "upgrade_kraft_version":
        op = UpgradeKRaftVersion(epoch=args["epoch"], kraft_version=args["kraft_version"],
                                 validate_only=args.get("validate_only", False))
        try:
            after, sends = _stepped(node, op, now, jitter, bootstrap, step, kept)
        except tuple(UPGRADE_REFUSALS) as exc:
            return node, now, UpgradeResult((), None, UPGRADE_REFUSALS[type(exc)]), ()
        return after, now, UpgradeResult(sends, raft.kraft_version_upgraded(node, op)), ()
    message = args["message"] if "message" in args else _operation(action, args)
    if isinstance(message, RESPONSES) and message.correlation_id is None:
        message = evolve(message, correlation_id=node.inflight.get(message.source, (0, 0))[0])
    before = node
    node, sends = _stepped(node, message, now, jitter, bootstrap, step, kept)
    if action == "create_snapshot":
        return node, now, SnapshotResult(sends, raft.snapshot_created(before, message)), ()
    return node, now, Sends(sends=sends), ()


def _operation(action: str, args: Any) -> Any:
    """The client operation or poll of an input without a message: ``resign``, ``shutdown``, ``create_snapshot``,
    ``delete_before_snapshot`` or ``tick``."""
    if action == "resign":
        return Resign(epoch=args["epoch"])
    if action == "shutdown":
        return Shutdown(timeout_ms=args["timeout_ms"])
    if action == "create_snapshot":
        return CreateSnapshot(end_offset=args["end_offset"], epoch=args["epoch"], size=args["size"])
    if action == "delete_before_snapshot":
        return DeleteBeforeSnapshot(end_offset=args["end_offset"], epoch=args["epoch"])
    return Tick()


def apply(node: raft.RaftNode, clock: int, step: Step) -> tuple[raft.RaftNode, int, Optional[dict[str, Any]], Written]:
    """(node', clock', expected response as JSON or None, no records) for one step (see :func:`run`)."""
    node, clock, response, written = run(node, clock, step)
    return node, clock, None if response is None else to_json(response), written


def rule(action: str) -> tuple[str, str]:
    """The deciding reference function's qualified name and the first paragraph of its docstring."""
    name = ACTIONS[action].rule
    if action == "advance_clock":
        return name, "The trace's clock: timed inputs without 'now' use it (no reference rule)."
    module, _, function_name = name.partition(".")
    function = getattr(import_module(f"kraftspec.reference.{module}"), function_name)
    doc = (function.__doc__ or "").strip().split("\n\n")[0]
    return f"kraftspec.reference.{name}", " ".join(line.strip() for line in doc.splitlines())


def _shutdown(node: raft.RaftNode) -> Optional[str]:
    """The graceful shutdown as a trace states it: null (none asked for), ``pending``, ``completed`` or
    ``timed_out``."""
    if node.shutdown is None:
        return None
    return node.shutdown.outcome or "pending"


OBSERVERS: dict[str, Callable[[raft.RaftNode, int], Any]] = {
    "clock": lambda node, clock: clock,
    "role": lambda node, clock: node.state.role,
    "epoch": lambda node, clock: node.state.epoch,
    "leader_id": lambda node, clock: raft_state.leader_of(node.state),
    "voted_key": lambda node, clock: raft_node.voted_key(node),
    "high_watermark": lambda node, clock: getattr(node.state, "high_watermark", -1),
    "log_end_offset": lambda node, clock: node.log.end_offset,
    "flushed_end_offset": lambda node, clock: node.log.flushed_end_offset,
    "last_fetched_epoch": lambda node, clock: node.log.last_fetched_epoch,
    "epoch_cache": lambda node, clock: node.log.epoch_cache,
    "log": lambda node, clock: Each(node.log.entries, _stated_entry),
    "quorum_state_file": lambda node, clock: node.stored,
    "shutdown": lambda node, clock: _shutdown(node),
    "listener": lambda node, clock: node.listener or ListenerView(),
    "log_start_offset": lambda node, clock: node.log.start_offset,
    "latest_snapshot_id": lambda node, clock: None if node.log.latest_snapshot is None else node.log.latest_snapshot.id,
}
SNAPSHOT_FIELDS = ("log_start_offset", "latest_snapshot_id")
"""The post-state fields of snapshots (KIP-630): a recorder without snapshots leaves them out."""
BASE_FIELDS = tuple(name for name in OBSERVERS if name not in SNAPSHOT_FIELDS)
"""The post-state fields every recorder states."""
post_matches = post_matcher(OBSERVERS)
"""Whether every stated post-state field equals what :data:`OBSERVERS` reads (False also when unsure: the diff decides)."""


def observe(node: raft.RaftNode, clock: int, fields: Iterable[str] = ()) -> dict[str, Any]:
    """The post-state fields a trace may state (``post``) as JSON, or only ``fields`` of them (FORMAT.md lists them)."""
    return observed_json(OBSERVERS, node, clock, fields)


def _json(value: Any) -> str:
    """A value as compact JSON, for the summary (sets as sorted arrays)."""
    return json.dumps(to_json(value), separators=(",", ":"),
                      default=lambda v: sorted(v) if isinstance(v, (set, frozenset)) else repr(v))


def summarize(node: raft.RaftNode, clock: int) -> str:
    """One compact line per aspect of the node before a step."""
    log, stored = node.log, node.stored
    inflight = ", ".join(f"to {d}: correlation {c} sent at {t}" for d, (c, t) in sorted(node.inflight.items()))
    return "\n".join((
        f"clock {clock}, node {node.local_id} ({'voter' if node.is_voter else 'observer'} of {sorted(node.voters)}), "
        f"next correlation id {node.next_correlation_id}",
        f"state: {type(node.state).__name__} {_json(node.state)}",
        f"log: end offset {log.end_offset}, flushed {log.flushed_end_offset}, last fetched epoch "
        f"{log.last_fetched_epoch}, epochs {list(log.epoch_cache)}, start {log.start_offset}, snapshots "
        f"{[(snap.end_offset, snap.epoch, snap.size) for snap in log.snapshots]}",
        f"quorum-state file: epoch {stored.epoch}, leader {stored.leader_id}, vote {_json(stored.voted_key)}",
        f"in flight: {inflight or '(none)'}",
    ))
