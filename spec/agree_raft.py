"""The KRaft quorum explored under ``KRaftQuorum.cfg``'s bounds, in the spec's vocabulary.

Each node is a ``raft.RaftNode`` and every spec action calls the reference: ``Timeout`` ~ ``raft._to_prospective``
(a Prospective: ``raft._prospective_lost``; a Resigned node: ``raft_transitions.to_unattached``), ``HandleVoteRequest``
/ ``HandleVoteResponse`` / ``HandleBeginQuorumEpochRequest`` / ``HandleFetchRequest`` / ``HandleFetchResponse`` ~ the
handler of that message in ``raft.py`` (``HandleFetchSnapshotRequest`` / ``HandleFetchSnapshotResponse``:
``raft_snapshot.py``), ``ClientAppend`` ~ ``raft._handle_append``, ``Crash`` ~ ``raft.restart``,
``HandleCreateSnapshot`` ~ ``raft_snapshot.handle_create_snapshot`` (at the node's high watermark, in the epoch of the
last record it covers, when ``raft.snapshot_created`` says the state machine gets a writer), ``DeleteBeforeSnapshot`` ~
``raft_snapshot.handle_delete_before_snapshot`` (for each snapshot past the log start, at most the high watermark);
``MaybeSendVoteRequests`` builds its request with ``raft._vote_request`` (a pre-vote from a Prospective),
``MaybeSendFetchOrFetchSnapshot`` takes the Fetch requests of the node's poll (``raft._poll``:
``raft._maybe_send_fetch_to_any_bootstrap`` / ``raft._maybe_send_fetch_to_best_node``; a Follower fetching a
snapshot sends its leader the FetchSnapshot of ``raft._maybe_send_fetch_or_fetch_snapshot``).

What the spec abstracts, and how this projection follows it:

* Timers: every call runs at time 0 with jitter 0 and skips the poll ``raft.step`` runs after each input (the
  poll's timeouts and sends are the spec's ``Timeout`` and send actions), so deadlines never differ; Fetch
  requests carry maxWaitMs 0 (nothing is parked). ``MaybeSendFetchOrFetchSnapshot`` is what the poll (``raft._poll``)
  sends with each bootstrap draw, a Follower's also once its leader's Fetch has timed out (request timeouts are not
  modelled, so they may fire at any time); whether a Fetch is still in flight is the spec's ``FetchInFlight``.
* The log's own high watermark (the spec's ``logHw``): ``raft.step`` gives the log the state's high watermark after
  the input and after the poll (``raft_snapshot.with_log_high_watermark``); here after each handler and each timer.
* Correlation ids: a response taken from the bag is handed to the handler as the answer to the request the node
  has outstanding (its in-flight entry is set just before, and is empty again after). The spec takes a Vote
  response only while the node is a Candidate (a pre-vote's: a Prospective) of the epoch the request was sent in,
  and a Fetch response only at the position (offset, last fetched epoch) and snapshot download it answers and never
  at a Prospective (``transitionToProspective`` resets every connection); other responses are discarded, as Kafka
  drops them.
* Snapshots (KIP-630) are one chunk: every snapshot the state machine creates has ``SNAPSHOT_SIZE`` bytes, smaller
  than a FetchSnapshot's ``max_bytes``, so the first (position 0) answer carries it whole; the spec's messages carry
  the snapshot id only (a FetchSnapshot response also the id it was asked for, standing for its correlation id: it
  is taken only while the node downloads that snapshot).
* Messages in the bag hold the spec's fields only; log entries travel as their epochs (their records are not
  carried, as the spec's logs hold epochs only); BeginQuorumEpoch responses are not modelled.
* Hidden reference state (timers, replica fetch times, acknowledgements, a Candidate's rejected votes, record
  values) is not projected: it does not decide any modelled step.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping

from kraftspec.reference import raft, raft_snapshot, raft_transitions
from kraftspec.reference.errors import Errors
from kraftspec.reference.frozen import FrozenMap, evolve
from kraftspec.reference.raft_log import LogEntry
from kraftspec.reference.raft_messages import (
    Append,
    BeginQuorumEpochRequest,
    CreateSnapshot,
    DeleteBeforeSnapshot,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    InvalidSnapshotError,
    VoteRequest,
    VoteResponse,
)
from kraftspec.reference.raft_state import (
    Candidate,
    Follower,
    IllegalTransition,
    Leader,
    Prospective,
    QuorumConfig,
    leader_of,
    voted_key_of,
)
from kraftspec.spec.agree import AgreementModel, Step
from kraftspec.spec.tla_values import Fn, TlaValue, record

NOW = 0
JITTER = 0
CORRELATION_ID = 1
CONFIG = QuorumConfig(fetch_max_wait_ms=0)
DATA = "client-record"
NO_NODE = -1
NO_SNAPSHOT = (-1, -1)
SNAPSHOT_SIZE = 1
"""The bytes of every snapshot the state machine creates: one FetchSnapshot chunk."""
ENVIRONMENT_ACTIONS = frozenset({"Timeout", "ClientAppend", "Crash", "Drop", "Duplicate"})
"""Actions of ``KRaftQuorum.tla``'s ``Next`` that move the environment (timers, clients, crashes, the network)."""

Message = Any  # a spec message: a TLA+ record (``Fn``)


@dataclass(frozen=True)
class ExploredState:
    """The nodes (by id, ascending), the bag of spec messages and the spec's history and bound counters."""

    nodes: tuple[raft.RaftNode, ...]
    msgs: FrozenMap[Message, int]
    committed: tuple[int, ...] = ()
    faults: int = 0
    timeouts: int = 0
    snapshots: int = 0
    node_hashes: tuple[int, ...] = field(default=(), compare=False, repr=False)  # kept by ``_with``

    def __post_init__(self) -> None:
        if len(self.node_hashes) != len(self.nodes):
            object.__setattr__(self, "node_hashes", tuple(map(hash, self.nodes)))

    def __hash__(self) -> int:
        """Hashes the nodes' hashes (a node left unchanged by a step is not hashed again)."""
        return hash((self.node_hashes, self.msgs, self.committed, self.faults, self.timeouts, self.snapshots))


def _bounds(constants: Mapping[str, TlaValue]) -> dict[str, int]:
    return {k: int(constants[k])
            for k in ("MaxEpoch", "MaxLogLen", "MaxMsgs", "MaxFaults", "MaxTimeouts", "MaxSnapshots")}


def initial_states(constants: Mapping[str, TlaValue]) -> Iterator[ExploredState]:
    """``Init``: every node fresh (no quorum-state file, empty log), Unattached in epoch 0."""
    voters = frozenset(constants["Voters"])
    endpoints = FrozenMap({v: (f"CONTROLLER://controller{v}:9093",) for v in voters})
    ids = sorted(voters | frozenset(constants["Observers"]))
    yield ExploredState(tuple(raft.new_node(n, voters, endpoints, CONFIG, now=NOW, jitter=JITTER) for n in ids),
                        FrozenMap())


def _in_flight(msgs: FrozenMap[Message, int]) -> int:
    return sum(msgs.values())


def _add(msgs: FrozenMap[Message, int], m: Message) -> FrozenMap[Message, int]:
    return msgs.set(m, msgs.get(m, 0) + 1)


def _remove(msgs: FrozenMap[Message, int], m: Message) -> FrozenMap[Message, int]:
    return msgs.remove(m) if msgs[m] == 1 else msgs.set(m, msgs[m] - 1)


def _fetch_in_flight(msgs: FrozenMap[Message, int], n: int) -> bool:
    """The spec's ``FetchInFlight``: node ``n``'s Fetch or its answer is in the bag (``hasAnyInflightRequest``)."""
    return any((m["type"] == "FetchReq" and m["src"] == n) or (m["type"] == "FetchResp" and m["dst"] == n)
               for m in msgs)


def _poll_fetches(node: raft.RaftNode) -> set[tuple[int, FetchRequest | FetchSnapshotRequest]]:
    """The Fetch and FetchSnapshot requests of the node's poll at time 0 with their destinations, over every bootstrap
    draw, with nothing in flight and, for a Follower, with its leader's Fetch timed out
    (``raft._maybe_send_fetch_to_best_node``)."""
    pollings = [FrozenMap()]
    if isinstance(node.state, Follower):
        pollings.append(FrozenMap({node.state.leader_id: (CORRELATION_ID, NOW - CONFIG.request_timeout_ms)}))
    fetches: set[tuple[int, FetchRequest | FetchSnapshotRequest]] = set()
    for inflight in pollings:
        for draw in range(len(node.voters)):
            out: list[Any] = []
            raft._poll(evolve(node, inflight=inflight), NOW, JITTER, draw, out)
            fetches.update((s.destination, s.message) for s in out
                           if isinstance(s.message, (FetchRequest, FetchSnapshotRequest)))
    return fetches


def _call(handler: Callable[..., raft.RaftNode], node: raft.RaftNode, message: Any) -> tuple[raft.RaftNode, list[Any]]:
    """One handler of ``raft.py`` at time 0, without the poll; the node keeps no in-flight entry, and its log is given
    the high watermark the handler leaves the state, as ``raft.step`` does after the input."""
    out: list[Any] = []
    node = raft_snapshot.with_log_high_watermark(handler(node, message, NOW, JITTER, out))
    if node.inflight:
        node = evolve(node, inflight=FrozenMap())
    return node, out


def _answering(node: raft.RaftNode, source: int) -> raft.RaftNode:
    """The node with a request outstanding to ``source`` whose correlation id the response will carry."""
    return evolve(node, inflight=FrozenMap({source: (CORRELATION_ID, NOW)}))


def _epochs(entries: Any) -> tuple[int, ...]:
    return tuple(e.epoch for e in entries)


def _committed(state: ExploredState, node: raft.RaftNode) -> tuple[int, ...]:
    """The spec's history variable: the leader's HW prefix when it is longer than what was committed (before its log
    start, what was committed: the spec's ``FullLog``)."""
    hw, start = node.state.high_watermark, node.log.start_offset
    return state.committed[:start] + _epochs(node.log.entries[:hw - start]) if hw > len(state.committed) \
        else state.committed


def _with(state: ExploredState, index: int, node: raft.RaftNode, **changes: Any) -> ExploredState:
    nodes = state.nodes[:index] + (node,) + state.nodes[index + 1:]
    hashes = state.node_hashes if node is state.nodes[index] else (
        state.node_hashes[:index] + (hash(node),) + state.node_hashes[index + 1:])
    return ExploredState(nodes, changes.get("msgs", state.msgs), changes.get("committed", state.committed),
                         changes.get("faults", state.faults), changes.get("timeouts", state.timeouts),
                         changes.get("snapshots", state.snapshots), hashes)


def _timeout(node: raft.RaftNode, max_log_len: int) -> raft.RaftNode | None:
    """The election timer: a Resigned node moves to the next epoch, a Prospective has lost its pre-vote; others
    start a pre-vote if the reference lets them (``raft._poll``; its log is then given the state's high watermark, as
    ``raft.step`` does after the poll)."""
    after = _timer_fired(node, max_log_len)
    return None if after is None else raft_snapshot.with_log_high_watermark(after)


def _timer_fired(node: raft.RaftNode, max_log_len: int) -> raft.RaftNode | None:
    """What the timer's transition leaves the node, or None when it has none."""
    out: list[Any] = []
    if node.state.role == "Resigned":
        return raft_transitions.to_unattached(node, node.state.epoch + 1, NOW, JITTER, out)
    if isinstance(node.state, Prospective):
        return raft._prospective_lost(node, NOW, JITTER, out)
    if node.log.end_offset >= max_log_len:
        return None
    try:
        return raft._to_prospective(node, NOW, JITTER, out)
    except IllegalTransition:
        return None


def _asks_vote(node: raft.RaftNode, voter: int) -> bool:
    """The spec's ``MaybeSendVoteRequests``: a Prospective asks a voter that has neither granted nor rejected its
    pre-vote, a Candidate one that has not granted (the spec keeps no Candidate's rejections)."""
    state = node.state
    if isinstance(state, Prospective):
        return voter not in state.granted | state.rejected
    return isinstance(state, Candidate) and voter not in state.granted


def _node_moves(state: ExploredState, index: int, bounds: dict[str, int]) -> Iterator[Step[ExploredState]]:
    node = state.nodes[index]
    n, role = node.local_id, node.state.role
    if node.state.epoch < bounds["MaxEpoch"] and state.timeouts < bounds["MaxTimeouts"]:
        after = _timeout(node, bounds["MaxLogLen"])
        if after is not None:
            yield Step("Timeout", f"timeout(node {n})", _with(state, index, after, timeouts=state.timeouts + 1))
    if role == "Leader" and node.log.end_offset < bounds["MaxLogLen"]:
        after, _ = _call(raft._handle_append, node, Append(records=(DATA,)))
        yield Step("ClientAppend", f"step(node {n}, Append)",
                   _with(state, index, after, committed=_committed(state, after)))
    if state.faults < bounds["MaxFaults"]:
        yield Step("Crash", f"restart(node {n})", _with(state, index, raft.restart(node, NOW, JITTER),
                                                         faults=state.faults + 1))
    yield from _snapshot_moves(state, index, bounds)
    if _in_flight(state.msgs) >= bounds["MaxMsgs"]:
        return
    fetches = _poll_fetches(node) if not _fetch_in_flight(state.msgs, n) else set()
    for v in sorted(node.voters):
        sends = []
        if _asks_vote(node, v):
            req = raft._vote_request(node, role == "Prospective")
            sends.append(("MaybeSendVoteRequests", record(type="VoteReq", src=n, dst=v, epoch=req.replica_epoch,
                                                          preVote=req.pre_vote, lastEpoch=req.last_offset_epoch,
                                                          lastOffset=req.last_offset)))
        if role == "Leader" and v != n:
            sends.append(("MaybeSendBeginQuorumEpochRequests",
                          record(type="BeginEpoch", src=n, dst=v, epoch=node.state.epoch)))
        for dst, req in sorted(fetches, key=repr):
            if dst == v and isinstance(req, FetchRequest):
                sends.append(("MaybeSendFetchOrFetchSnapshot",
                              record(type="FetchReq", src=n, dst=v, epoch=req.current_leader_epoch,
                                     offset=req.fetch_offset, lastEpoch=req.last_fetched_epoch,
                                     download=_downloading(node))))
            elif dst == v:
                sends.append(("MaybeSendFetchOrFetchSnapshot",
                              record(type="FetchSnapReq", src=n, dst=v, epoch=req.current_leader_epoch,
                                     snapshot=req.snapshot_id)))
        for action, m in sends:
            yield Step(action, f"node {n} sends {action} to {v}", _with(state, index, node, msgs=_add(state.msgs, m)))


def _snapshot_moves(state: ExploredState, index: int, bounds: dict[str, int]) -> Iterator[Step[ExploredState]]:
    """``HandleCreateSnapshot`` at the log's high watermark (``raft_snapshot.log_high_watermark``: the state's if
    known, else the last the log was given) and ``DeleteBeforeSnapshot`` to each snapshot past the log start within
    it; an input the reference refuses (``InvalidSnapshotError``) is no step, so the spec's shows as a difference."""
    node = state.nodes[index]
    n, hw, log = node.local_id, raft_snapshot.log_high_watermark(node), node.log
    if state.snapshots < bounds["MaxSnapshots"] and hw > log.start_offset:
        op = CreateSnapshot(end_offset=hw, epoch=log.entries[hw - 1 - log.start_offset].epoch, size=SNAPSHOT_SIZE)
        if raft.snapshot_created(node, op):
            try:
                after, _ = _call(raft_snapshot.handle_create_snapshot, node, op)
            except InvalidSnapshotError:
                pass
            else:
                yield Step("HandleCreateSnapshot", f"step(node {n}, {op})",
                           _with(state, index, after, snapshots=state.snapshots + 1))
    for snapshot in log.snapshots:
        if log.start_offset < snapshot.end_offset <= hw:
            op_ = DeleteBeforeSnapshot(end_offset=snapshot.end_offset, epoch=snapshot.epoch)
            try:
                after, _ = _call(raft_snapshot.handle_delete_before_snapshot, node, op_)
            except InvalidSnapshotError:
                continue
            yield Step("DeleteBeforeSnapshot", f"step(node {n}, {op_})", _with(state, index, after))


def _downloading(node: raft.RaftNode) -> tuple[int, int]:
    """The id of the snapshot a Follower is fetching (the spec's ``fetchingSnap``), else ``NO_SNAPSHOT``."""
    download = getattr(node.state, "fetching_snapshot", None)
    return NO_SNAPSHOT if download is None else (download.end_offset, download.epoch)


def _deliver(state: ExploredState, index: int, m: Message) -> ExploredState:
    """Node ``index`` takes message ``m`` off the network and handles it."""
    node = state.nodes[index]
    msgs = _remove(state.msgs, m)
    kind, src = m["type"], m["src"]
    if kind == "VoteReq":
        after, out = _call(raft._handle_vote_request, node,
                           VoteRequest(replica_id=src, replica_epoch=m["epoch"], last_offset_epoch=m["lastEpoch"],
                                       last_offset=m["lastOffset"], pre_vote=m["preVote"]))
        resp = out[0].message
        reply = record(type="VoteResp", src=node.local_id, dst=src, reqEpoch=m["epoch"], preVote=m["preVote"],
                       epoch=resp.leader_epoch, leader=resp.leader_id, granted=resp.vote_granted)
        return _with(state, index, after, msgs=_add(msgs, reply))
    if kind == "VoteResp":
        asked_as = Prospective if m["preVote"] else Candidate
        if not (isinstance(node.state, asked_as) and node.state.epoch == m["reqEpoch"]):
            return _with(state, index, node, msgs=msgs)
        after, _ = _call(raft._handle_vote_response, _answering(node, src),
                         VoteResponse(source=src, error=Errors.NONE, partition_error=Errors.NONE,
                                      leader_epoch=m["epoch"], leader_id=m["leader"], vote_granted=m["granted"],
                                      leader_endpoints=(),
                                      correlation_id=CORRELATION_ID))
        return _with(state, index, after, msgs=msgs)
    if kind == "BeginEpoch":
        after, _ = _call(raft._handle_begin_quorum_epoch_request, node,
                         BeginQuorumEpochRequest(leader_id=src, leader_epoch=m["epoch"]))
        return _with(state, index, after, msgs=msgs)
    if kind == "FetchReq":
        after, out = _call(raft._handle_fetch_request, node,
                           FetchRequest(replica_id=src, current_leader_epoch=m["epoch"], fetch_offset=m["offset"],
                                        last_fetched_epoch=m["lastEpoch"], max_wait_ms=0, high_watermark=-1))
        (send,) = out
        resp = send.message
        reply = record(type="FetchResp", src=node.local_id, dst=src, epoch=resp.leader_epoch, leader=resp.leader_id,
                       error=resp.partition_error.name, hw=resp.high_watermark, diverging=resp.diverging_epoch,
                       snapshot=resp.snapshot_id, entries=_epochs(resp.records), offset=m["offset"],
                       lastEpoch=m["lastEpoch"], download=m["download"])
        committed = _committed(state, after) if isinstance(after.state, Leader) else state.committed
        return _with(state, index, after, msgs=_add(msgs, reply), committed=committed)
    if kind == "FetchSnapReq":
        after, out = _call(raft_snapshot.handle_fetch_snapshot_request, node,
                           FetchSnapshotRequest(replica_id=src, current_leader_epoch=m["epoch"],
                                                snapshot_id=m["snapshot"], position=0,
                                                max_bytes=CONFIG.fetch_snapshot_max_bytes))
        (send,) = out
        resp = send.message
        reply = record(type="FetchSnapResp", src=node.local_id, dst=src, epoch=resp.leader_epoch,
                       leader=resp.leader_id, error=resp.partition_error.name, snapshot=resp.snapshot_id,
                       reqSnapshot=m["snapshot"])
        return _with(state, index, after, msgs=_add(msgs, reply))
    if kind == "FetchSnapResp":
        if _downloading(node) != m["reqSnapshot"]:
            return _with(state, index, node, msgs=msgs)
        whole = SNAPSHOT_SIZE if m["error"] == "NONE" else 0
        after, _ = _call(raft_snapshot.handle_fetch_snapshot_response, _answering(node, src),
                         FetchSnapshotResponse(source=src, partition_error=Errors[m["error"]],
                                               leader_epoch=m["epoch"], leader_id=m["leader"],
                                               snapshot_id=m["snapshot"], size=whole, position=0, chunk=whole,
                                               correlation_id=CORRELATION_ID))
        return _with(state, index, after, msgs=msgs)
    if ((m["offset"], m["lastEpoch"], m["download"]) != (node.log.end_offset, node.log.last_fetched_epoch,
                                                          _downloading(node))
            or isinstance(node.state, Prospective)):
        return _with(state, index, node, msgs=msgs)
    response = FetchResponse(source=src, error=Errors.NONE, partition_error=Errors[m["error"]],
                             leader_epoch=m["epoch"], leader_id=m["leader"], leader_endpoints=(),
                             high_watermark=m["hw"], log_start_offset=0, snapshot_id=m["snapshot"],
                             diverging_epoch=m["diverging"], records=tuple(LogEntry(epoch=e) for e in m["entries"]),
                             correlation_id=CORRELATION_ID)
    after, _ = _call(raft._handle_fetch_response, _answering(node, src), response)
    return _with(state, index, after, msgs=msgs)


_HANDLE = {"VoteReq": "HandleVoteRequest", "VoteResp": "HandleVoteResponse",
           "BeginEpoch": "HandleBeginQuorumEpochRequest", "FetchReq": "HandleFetchRequest",
           "FetchResp": "HandleFetchResponse", "FetchSnapReq": "HandleFetchSnapshotRequest",
           "FetchSnapResp": "HandleFetchSnapshotResponse"}


def successors(state: ExploredState, constants: Mapping[str, TlaValue]) -> Iterator[Step[ExploredState]]:
    """Every action of the spec's ``Next`` with every parameter choice, as reference calls."""
    bounds = _bounds(constants)
    for index in range(len(state.nodes)):
        yield from _node_moves(state, index, bounds)
    for m in sorted(state.msgs, key=repr):
        index = [node.local_id for node in state.nodes].index(m["dst"])
        yield Step(_HANDLE[m["type"]], f"node {m['dst']} handles {dict(m)}", _deliver(state, index, m))
        if state.faults < bounds["MaxFaults"]:
            yield Step("Drop", f"lose {dict(m)}", ExploredState(state.nodes, _remove(state.msgs, m), state.committed,
                                                                 state.faults + 1, state.timeouts, state.snapshots,
                                                                 state.node_hashes))
            yield Step("Duplicate", f"duplicate {dict(m)}", ExploredState(state.nodes, _add(state.msgs, m),
                                                                          state.committed, state.faults + 1,
                                                                          state.timeouts, state.snapshots,
                                                                          state.node_hashes))


def _end_offsets(node: raft.RaftNode) -> tuple[int, ...]:
    voters = sorted(node.voters)
    if isinstance(node.state, Leader):
        return tuple(node.state.voter_states[v].end_offset for v in voters)
    return tuple(-1 for _ in voters)


_PER_NODE = ("role", "epoch", "leader", "voted", "granted", "rejected", "fetched", "hw", "log", "flushed", "endOff",
             "start", "snaps", "fetchingSnap", "logHw")


def _node_row(node: raft.RaftNode) -> tuple[TlaValue, ...]:
    """One node's value of each per-node variable, in ``_PER_NODE``'s order."""
    state = node.state
    voted = voted_key_of(state, node.local_id)
    return (
        state.role,
        state.epoch,
        leader_of(state),
        NO_NODE if voted is None else voted.id,
        frozenset(state.granted) if isinstance(state, (Prospective, Candidate)) else frozenset(),
        frozenset(state.rejected) if isinstance(state, Prospective) else frozenset(),
        isinstance(state, Follower) and state.has_fetched,
        getattr(state, "high_watermark", -1),
        _epochs(node.log.entries),
        node.log.flushed_end_offset,
        _end_offsets(node),
        node.log.start_offset,
        frozenset(s.id for s in node.log.snapshots),
        _downloading(node),
        node.log.high_watermark,
    )


def project(state: ExploredState) -> dict[str, TlaValue]:
    """The spec's variables, each a function of the node id (``role``, ``epoch``, ... ``fetchingSnap``, ``logHw``),
    then ``msgs`` and the history and bound counters."""
    ids = tuple(node.local_id for node in state.nodes)
    is_sequence = ids == tuple(range(1, len(ids) + 1))  # ``fn``'s test, once for all variables
    columns = zip(*map(_node_row, state.nodes))
    projected: dict[str, TlaValue] = {name: column if is_sequence else Fn(zip(ids, column))
                                      for name, column in zip(_PER_NODE, columns)}
    projected.update(msgs=Fn(dict(state.msgs)) if state.msgs else (), committed=state.committed,
                     faults=state.faults, timeouts=state.timeouts, snapshots=state.snapshots)
    return projected


MODEL: AgreementModel[ExploredState] = AgreementModel(
    component="raft",
    spec_module="KRaftQuorum",
    extra_configs=("snapshots",),  # KRaftQuorum.snapshots.cfg: snapshots (KIP-630) under smaller bounds
    initial_states=initial_states,
    successors=successors,
    project=project,
)
