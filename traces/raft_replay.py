"""Replaying raft trace steps through one reference node (``kraftspec.reference.raft``, rules §3).

``run`` hands one input to ``raft.step`` (or ``raft.restart``) and returns the messages sent as the
response ``{"sends": [...]}``; ``apply`` gives it as JSON; ``post_matches`` compares stated post-state
fields, ``observe`` is the post-state in the trace format's vocabulary and ``summarize`` the state shown
beside a divergence. A sent message is compared on its destination, its type and the fields the trace
states for it. A condition on which Kafka's client stops (``RaftFatalError``) is the reference refusing
the input. Reference functions are looked up at call time, so an applied mutant takes effect here too.
Stated sends and post-states are compared on the reference's own values (``kraftspec.traces.match``): only
a step that differs there has its sends converted to JSON, for the diff that decides.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from operator import is_, itemgetter
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence

from kraftspec.reference import raft, raft_state
from kraftspec.reference.errors import Errors
from kraftspec.reference.frozen import evolve
from kraftspec.reference.raft_log import LogEntry
from kraftspec.reference.raft_records import LeaderChangeMessage
from kraftspec.reference.raft_messages import (
    Append,
    FetchResponse,
    NotLeaderError,
    RaftFatalError,
    Resign,
    Send,
    Tick,
)
from kraftspec.traces.format import Step, Trace, Written
from kraftspec.traces.match import EXACT, fields_of, matches
from kraftspec.traces.raft_trace import (
    ACTIONS,
    STANDARD_STATES,
    RESPONSES,
    encode_entries,
    encode_message,
    cached_explicit_state,
)
from kraftspec.traces.values import to_json


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


def initial(trace: Trace) -> raft.RaftNode:
    """The trace's initial node (named or explicit), started by the reference as it is bound now (shared between
    traces that start alike)."""
    if trace.standard is not None:
        return STANDARD_STATES[trace.standard]()
    return cached_explicit_state(trace.explicit or {})


Outcome = tuple[raft.RaftNode, int, Any, Written]
_ALWAYS = ("destination", "type")  # compared in every sent message
_MISSING = object()  # a field the stated object does not have


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


def _entries_match(entries: tuple[LogEntry, ...], want: Any) -> bool:
    """Whether :func:`encode_entries` of ``entries`` equals the JSON ``want``, read on the entries themselves (the
    same object counts as equal for an epoch and for a record that is its own JSON: a string, an int or null)."""
    if type(want) is not list or len(want) != len(entries):
        return False
    try:
        for entry, given in zip(entries, want):
            if type(given) is not dict or len(given) != 2:
                return False
            got, stated = entry.epoch, given["epoch"]
            if got is not stated and (type(got) is not int or type(stated) is not int or got != stated):
                return False
            got, stated = entry.record, given["record"]
            kind = type(got)
            if kind is str or kind is int:
                if got is not stated and (type(stated) is not kind or got != stated):
                    return False
            elif kind is LeaderChangeMessage:
                if not _leader_change_matches(got, stated):
                    return False
            elif got is not None or stated is not None:
                return False
    except KeyError:  # an entry without an epoch or a record
        return False
    return True


_LEADER_CHANGE_KEYS = ("type", "leader_id", "version", "voters", "granting_voters")  # its JSON: type, then fields
assert set(fields_of(LeaderChangeMessage)) == set(_LEADER_CHANGE_KEYS[1:])
_LEADER_CHANGE_STATED = itemgetter(*_LEADER_CHANGE_KEYS)
_INTS = frozenset((int,))


def _leader_change_matches(record: LeaderChangeMessage, stated: Any) -> bool:
    """Whether :func:`encode_record_value` of a leader-change record equals the JSON ``stated`` (its type, its fields):
    its ints (the leader, the version, the voters and granting voters in order) the same objects, or equal ints."""
    if type(stated) is not dict or len(stated) != 5:
        return False
    try:
        kind, leader, version, voters, granting = _LEADER_CHANGE_STATED(stated)
    except KeyError:
        return False
    got_voters, got_granting = record.voters, record.granting_voters
    if (type(kind) is not str or kind != "LeaderChangeMessage" or type(voters) is not list or type(granting) is not list
            or type(got_voters) is not tuple or type(got_granting) is not tuple or len(voters) != len(got_voters)
            or len(granting) != len(got_granting)):
        return False
    got = (record.leader_id, record.version, *got_voters, *got_granting)
    want = (leader, version, *voters, *granting)
    return all(map(is_, got, want)) or (got == want and _INTS.issuperset(map(type, got + want)))


_MESSAGE_FIELDS: dict[type, frozenset[str]] = {}  # a message class -> its fields (as :func:`sent` writes them)


def _message_fields(kind: type) -> frozenset[str]:
    """The fields of a message class; none for one whose fields shadow ``destination`` or ``type`` (unsure)."""
    names = frozenset(fields_of(kind))
    _MESSAGE_FIELDS[kind] = frozenset() if names & set(_ALWAYS) else names
    return _MESSAGE_FIELDS[kind]


def _sends_match(sends: tuple[Send, ...], stated: Any) -> bool:
    """Whether each message sent equals the one stated at its position as :func:`_projected` keeps it (destination,
    type and the stated fields), read on the reference's messages; False also when unsure (the diff decides).
    Ints, strings, nulls and error codes (by name) are compared inline, other values by :func:`matches`."""
    if type(stated) is not list or len(stated) != len(sends):
        return False
    for send, given in zip(sends, stated):
        message = send.message
        kind = type(message)
        names = _MESSAGE_FIELDS.get(kind) or _message_fields(kind)
        if type(given) is not dict or "destination" not in given:
            return False
        name = given.get("type")
        if type(name) is not str or name != kind.__name__:
            return False
        for key, want in given.items():
            if key in names:
                got = getattr(message, key)
                if got is None:
                    if want is not None or key == "correlation_id":  # a null correlation id: left out of the JSON
                        return False
                    continue
                got_kind = type(got)
                if got_kind is int or got_kind is str:
                    if got is not want and (type(want) is not got_kind or want != got):
                        return False
                elif got_kind is Errors:
                    if type(want) is not str or got._name_ != want:
                        return False
                elif key == "records" and kind is FetchResponse:
                    if not _entries_match(got, want):
                        return False
                elif got is not want and not matches(got, want):
                    return False
            elif key == "destination":
                got = send.destination
                if got is not want and not matches(got, want):
                    return False
            elif key != "type":
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
            after, sends = _stepped(node, Append(records), now, jitter, bootstrap, step, kept)
        except NotLeaderError:
            return node, now, AppendResult((), None), ()
        return after, now, AppendResult(sends, raft.append_offset(node, records)), ()
    message = args["message"] if "message" in args else Resign(args["epoch"]) if action == "resign" else Tick()
    if isinstance(message, RESPONSES) and message.correlation_id is None:
        message = evolve(message, correlation_id=node.inflight.get(message.source, (0, 0))[0])
    node, sends = _stepped(node, message, now, jitter, bootstrap, step, kept)
    return node, now, Sends(sends=sends), ()


def apply(node: raft.RaftNode, clock: int, step: Step) -> tuple[raft.RaftNode, int, Optional[dict[str, Any]], Written]:
    """(node', clock', expected response as JSON or None, no records) for one step (see :func:`run`)."""
    node, clock, response, written = run(node, clock, step)
    return node, clock, None if response is None else to_json(response), written


def rule(action: str) -> tuple[str, str]:
    """The deciding reference function's qualified name and the first paragraph of its docstring."""
    name = ACTIONS[action].rule
    if action == "advance_clock":
        return name, "The trace's clock: timed inputs without 'now' use it (no reference rule)."
    function = getattr(raft, name.split(".")[1])
    doc = (function.__doc__ or "").strip().split("\n\n")[0]
    return f"kraftspec.reference.{name}", " ".join(line.strip() for line in doc.splitlines())


def _key(key: Optional[raft_state.ReplicaKey]) -> Optional[dict[str, Any]]:
    return None if key is None else {"id": key.id, "directory_id": key.directory_id}


OBSERVERS: dict[str, Callable[[raft.RaftNode, int], Any]] = {
    "clock": lambda node, clock: clock,
    "role": lambda node, clock: node.state.role,
    "epoch": lambda node, clock: node.state.epoch,
    "leader_id": lambda node, clock: raft_state.leader_of(node.state),
    "voted_key": lambda node, clock: _key(raft_state.voted_key_of(node.state, node.local_id)),
    "high_watermark": lambda node, clock: getattr(node.state, "high_watermark", -1),
    "log_end_offset": lambda node, clock: node.log.end_offset,
    "flushed_end_offset": lambda node, clock: node.log.flushed_end_offset,
    "last_fetched_epoch": lambda node, clock: node.log.last_fetched_epoch,
    "epoch_cache": lambda node, clock: [list(pair) for pair in node.log.epoch_cache],
    "log": lambda node, clock: encode_entries(node.log.entries),
    "quorum_state_file": lambda node, clock: {"epoch": node.stored.epoch, "leader_id": node.stored.leader_id,
                                              "voted_key": _key(node.stored.voted_key)},
}


def observe(node: raft.RaftNode, clock: int, fields: Iterable[str] = ()) -> dict[str, Any]:
    """The post-state fields a trace may state (``post``), or only ``fields`` of them (FORMAT.md lists them)."""
    wanted = set(fields) or set(OBSERVERS)
    return {name: OBSERVERS[name](node, clock) for name in OBSERVERS if name in wanted}


def _is(got: Any, want: Any) -> bool:
    """A scalar against its stated JSON value, of the exact type (True and 1 differ); False for anything else."""
    return got is want or (type(want) is type(got) and type(got) in EXACT and want == got)


def _key_matches(key: Optional[raft_state.ReplicaKey], want: Any) -> bool:
    """Whether :func:`_key` of ``key`` equals the JSON ``want``."""
    if key is None:
        return want is None
    if type(want) is not dict or len(want) != 2:
        return False
    got, stated = key.id, want.get("id", _MISSING)
    if got is not stated and not _is(got, stated):
        return False
    got, stated = key.directory_id, want.get("directory_id", _MISSING)
    return got is stated or _is(got, stated)


def _epoch_cache_matches(cache: tuple[tuple[int, int], ...], want: Any) -> bool:
    """Whether the JSON of the epoch cache (``[[epoch, start offset], ...]``) equals ``want``; False also when unsure."""
    if type(want) is not list or len(want) != len(cache):
        return False
    for pair, given in zip(cache, want):
        if type(given) is not list or len(given) != 2 or len(pair) != 2:
            return False
        epoch, offset = pair
        stated_epoch, stated_offset = given
        if (type(epoch) is not int or type(offset) is not int or type(stated_epoch) is not int
                or type(stated_offset) is not int or stated_epoch != epoch or stated_offset != offset):
            return False
    return True


def _quorum_state_file_matches(stored: raft_state.ElectionState, want: Any) -> bool:
    """Whether the JSON of the quorum-state file (epoch, leader, vote) equals ``want``."""
    if type(want) is not dict or len(want) != 3:
        return False
    return (_is(stored.epoch, want.get("epoch", _MISSING)) and _is(stored.leader_id, want.get("leader_id", _MISSING))
            and _key_matches(stored.voted_key, want.get("voted_key", _MISSING)))


POST_MATCHERS: dict[str, Callable[[raft.RaftNode, int, Any], bool]] = {
    "voted_key": lambda node, clock, want: _key_matches(raft_state.voted_key_of(node.state, node.local_id), want),
    "epoch_cache": lambda node, clock, want: _epoch_cache_matches(node.log.epoch_cache, want),
    "log": lambda node, clock, want: _entries_match(node.log.entries, want),
    "quorum_state_file": lambda node, clock, want: _quorum_state_file_matches(node.stored, want),
}  # the post-state fields that are not scalars, compared on the node's own values (the others: ``_is``)
assert POST_MATCHERS.keys() <= OBSERVERS.keys()
_SCALARS_STATED = itemgetter("clock", "role", "epoch", "leader_id", "high_watermark", "log_end_offset",
                             "flushed_end_offset", "last_fetched_epoch", "quorum_state_file")
_STORED_STATED = itemgetter("epoch", "leader_id", "voted_key")
_INTS_AND_STRINGS = frozenset((int, str))  # scalars equal in Python and of these types are equal in JSON
_OTHERS_STATED = itemgetter("voted_key", "epoch_cache", "log")
assert not POST_MATCHERS.keys() & set(_SCALARS_STATED(OBSERVERS)[:-1])


def post_matches(node: raft.RaftNode, clock: int, post: Mapping[str, Any]) -> bool:
    """Whether every stated post-state field equals :func:`observe`'s as JSON (True and 1 differ), read on the
    node's own values. False also when unsure or for an unknown field; the caller then diffs :func:`observe`'s
    output, which decides.

    A post-state stating every field (as ``generate sim`` records) compares the scalars (with the quorum-state file's
    epoch and leader) as one tuple of ints and strings, then the others; any other set of fields, or a scalar of
    another type, goes field by field (:func:`_fields_match`).
    """
    if len(post) != len(OBSERVERS):
        return _fields_match(node, clock, post)
    try:
        *scalars, stored_want = _SCALARS_STATED(post)
        if type(stored_want) is not dict or len(stored_want) != 3:
            return False
        stored_epoch, stored_leader, stored_vote = _STORED_STATED(stored_want)
        voted, cache, entries = _OTHERS_STATED(post)
    except KeyError:  # an unknown field instead of one of these (the caller's diff names it)
        return False
    state, log, stored = node.state, node.log, node.stored
    got = (clock, state.role, state.epoch, raft_state.leader_of(state), getattr(state, "high_watermark", -1),
           log.end_offset, log.flushed_end_offset, log.last_fetched_epoch, stored.epoch, stored.leader_id)
    stated = (*scalars, stored_epoch, stored_leader)
    if got != stated or not _INTS_AND_STRINGS.issuperset(map(type, got + stated)):  # then equal type by type
        return _fields_match(node, clock, post)  # unsure (or different): decided field by field
    key, stored_key = raft_state.voted_key_of(state, node.local_id), stored.voted_key
    return ((voted is None if key is None else _key_matches(key, voted))  # no vote: the common case inline
            and (stored_vote is None if stored_key is None else _key_matches(stored_key, stored_vote))
            and _epoch_cache_matches(log.epoch_cache, cache) and _entries_match(log.entries, entries))


def _fields_match(node: raft.RaftNode, clock: int, post: Mapping[str, Any]) -> bool:
    """:func:`post_matches` field by field (any set of fields)."""
    matchers = POST_MATCHERS
    for key, want in post.items():
        matcher = matchers.get(key)
        if matcher is not None:
            if not matcher(node, clock, want):
                return False
            continue
        observer = OBSERVERS.get(key)
        if observer is None:
            return False
        got = observer(node, clock)
        if got is not want and (type(want) is not type(got) or type(got) not in EXACT or want != got):
            return False
    return True


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
        f"{log.last_fetched_epoch}, epochs {list(log.epoch_cache)}",
        f"quorum-state file: epoch {stored.epoch}, leader {stored.leader_id}, vote {_json(_key(stored.voted_key))}",
        f"in flight: {inflight or '(none)'}",
    ))
