"""Replaying raft trace steps through one reference node (``kraftspec.reference.raft``, kraft-semantics §3).

``run`` hands one input to ``raft.step`` (or ``raft.restart``) and returns the messages sent as the
response ``{"sends": [...]}``; ``apply`` gives it as JSON; ``post_matches`` compares stated post-state
fields, ``observe`` is the post-state in the trace format's vocabulary and ``summarize`` the state shown
beside a divergence. A sent message is compared on its destination, its type and the fields the trace
states for it. A condition on which Kafka's client stops (``RaftFatalError``) is the reference refusing
the input. Reference functions are looked up at call time, so an applied mutant takes effect here too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Optional

from kraftspec.reference import raft, raft_state
from kraftspec.reference.frozen import evolve
from kraftspec.reference.raft_messages import Append, NotLeaderError, RaftFatalError, Resign, Send, Tick
from kraftspec.traces.format import Step, Trace, Written
from kraftspec.traces.raft_trace import (
    ACTIONS,
    STANDARD_STATES,
    RESPONSES,
    encode_entries,
    encode_message,
    explicit_state,
)
from kraftspec.traces.values import to_json


@dataclass(frozen=True)
class Sends:
    """What the node sent while handling one input, each ``{"destination", "type", ...message fields}`` (§3.4–§3.10)."""

    sends: tuple[dict[str, Any], ...]


@dataclass(frozen=True)
class AppendResult:
    """``scheduleAppend``: the messages sent and the offset of the last record appended, or None when the node
    is not the leader (Kafka throws ``NotLeaderException``, §3.2)."""

    sends: tuple[dict[str, Any], ...]
    last_offset: Optional[int]


def initial(trace: Trace) -> raft.RaftNode:
    """The trace's initial node (named or explicit), started by the reference as it is bound now."""
    if trace.standard is not None:
        return STANDARD_STATES[trace.standard]()
    return explicit_state(trace.explicit or {})


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


def _stepped(node: raft.RaftNode, message: Any, now: int, jitter: int,
             step: Step) -> tuple[raft.RaftNode, tuple[dict[str, Any], ...]]:
    try:
        node, sends = raft.step(node, message, now, jitter)
    except RaftFatalError as exc:  # Kafka's client throws and stops: the reference takes no such input
        raise RuntimeError(f"RaftFatalError: {exc}") from exc
    stated = step.response.get("sends") if step.response is not None else None
    return node, _projected(tuple(map(sent, sends)), stated)


def run(node: raft.RaftNode, clock: int, step: Step) -> Outcome:
    """(node', clock', the response object or None, no records) for one step.

    Raises ``RuntimeError`` (a fatal condition) or ``ValueError`` (an illegal transition) on an input the
    reference refuses. Response inputs without a correlation id answer the request outstanding to their source.
    """
    args, action = step.input, step.action
    if action == "advance_clock":
        return node, args["now"], None, ()
    now, jitter = args.get("now", clock), args.get("jitter", 0)
    if action == "restart":
        return raft.restart(node, now, jitter), now, Sends(()), ()
    if action == "append":
        try:
            node, sends = _stepped(node, Append(args["records"]), now, jitter, step)
        except NotLeaderError:
            return node, now, AppendResult((), None), ()
        return node, now, AppendResult(sends, node.log.end_offset - 1), ()
    message = args["message"] if "message" in args else Resign(args["epoch"]) if action == "resign" else Tick()
    if isinstance(message, RESPONSES) and message.correlation_id is None:
        message = evolve(message, correlation_id=node.inflight.get(message.source, (0, 0))[0])
    node, sends = _stepped(node, message, now, jitter, step)
    return node, now, Sends(sends), ()


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


def _text(value: Any) -> str:
    return json.dumps(value, sort_keys=True)  # exact: true and 1, 1 and 1.0 print differently


def post_matches(node: raft.RaftNode, clock: int, post: Mapping[str, Any]) -> bool:
    """Whether every stated post-state field equals :func:`observe`'s as JSON (True and 1 differ).

    False also for an unknown field; the caller then diffs :func:`observe`'s output, which decides.
    """
    for key, want in post.items():
        observer = OBSERVERS.get(key)
        if observer is None or _text(observer(node, clock)) != _text(want):
            return False
    return True


def summarize(node: raft.RaftNode, clock: int) -> str:
    """One compact line per aspect of the node before a step."""
    log, stored = node.log, node.stored
    inflight = ", ".join(f"to {d}: correlation {c} sent at {t}" for d, (c, t) in sorted(node.inflight.items()))
    return "\n".join((
        f"clock {clock}, node {node.local_id} ({'voter' if node.is_voter else 'observer'} of {sorted(node.voters)}), "
        f"next correlation id {node.next_correlation_id}",
        f"state: {node.state!r}",
        f"log: end offset {log.end_offset}, flushed {log.flushed_end_offset}, last fetched epoch "
        f"{log.last_fetched_epoch}, epochs {list(log.epoch_cache)}",
        f"quorum-state file: epoch {stored.epoch}, leader {stored.leader_id}, vote {_key(stored.voted_key)}",
        f"in flight: {inflight or '(none)'}",
    ))
