"""``kraftspec generate tla --component voters``: raft traces of the node ``KRaftVoters.tla`` follows, recorded from
TLC's state graph (rules §3.14, §3.15).

TLC explores the spec under ``KRaftVoters.cfg`` and dumps its state graph. The spec has two initial states (static
voters at kraft.version 0, a bootstrap checkpoint at kraft.version 1), each a leader of the voters ``InitVoters``
that has written its first batch: the walks start from a root added to the walked graph whose ``Init`` edges lead
to them. A trace's explicit node is the Candidate of epoch 1 (``Local`` of ``InitVoters``, ``VOTERS_CONFIG``'s fetch
timeout, so that no check quorum interrupts a walk), and its first steps are the granted vote that elects it. Every
spec action is a raft input of that node and the poll that follows it (``spec/agree_voters.py`` names the reference
rule each one follows):

* ``HandleAddVoterRequest(r)`` / ``HandleRemoveVoterRequest(r)``: an admin's ``add_raft_voter_request`` /
  ``remove_raft_voter_request`` for ``r`` (its directory id and listener as ``agree_voters`` concretizes them).
* ``HandleAddVoterApiVersions(TRUE)``: a Fetch from ``r`` at the log end (``r`` caught up, at a time after 0), then
  ``r``'s ``api_versions_response`` (kraft.version 0 to 1); ``FALSE``: the answer alone (``r`` never fetched: lagging),
  else one stating kraft.version 0 to 0 (``r`` caught up before: the add is aborted all the same).
* ``HandleUpdateVoterRequest(r)``: ``r``'s ``update_raft_voter_request`` in the leader's epoch (``r`` another voter).
* ``MaybeAppendUpgradedKraftVersion``: ``upgrade_kraft_version`` to 1 in the leader's epoch.
* ``NextHighWatermark(m)``: Fetches at ``m`` (a batch's end) from the voters in force (ascending ids, those not known
  at ``m`` yet) until the leader's high watermark is ``m``.
* ``TruncateControlRecords(end)``: the Fetch answer of the leader the node follows with the diverging epoch (the epoch
  of the record before ``end``, ``end``), after a ``tick`` that sends the Fetch if none is outstanding; a node that
  follows no leader (Resigned) first gets another voter's BeginQuorumEpoch of the next epoch.
* ``BecomeLeader``: a ``tick`` at the election (a follower's fetch) deadline, then per round (pre-vote, vote) a
  ``tick`` that sends the requests and granted answers from the other voters in force (ascending ids, a leader the
  node knows last) until it has a majority.
* ``ClientAppend``: ``append`` of one record; ``LoseLeadership``: another voter's BeginQuorumEpoch of the next epoch;
  ``PendingOperationExpires``: a ``tick`` at the pending change's deadline.
* ``HandleCreateSnapshot(s)``: ``create_snapshot`` of ``(s, the epoch of the record before s)``;
  ``DeleteBeforeSnapshot(s)``: ``delete_before_snapshot`` of that snapshot; ``HandleFetchSnapshotResponse(e, v, s)``:
  as for a truncation, the leader's Fetch answer, here naming its snapshot ``(e, its epoch)``, then its FetchSnapshot
  answer holding the whole snapshot with the KRaftVersionRecord and VotersRecord the spec's snapshot carries (none at
  kraft.version 0). ``KRaftVoters.cfg`` takes no snapshot; ``KRaftVoters.snapshots.cfg`` does.

Each edge's steps are the reference's, matched to TLC's edge by the projected target (:func:`project`); the last
states as ``post`` what the spec's state gives of the node (:func:`spec_post`). An edge no input makes is left out of
the walked graph (:meth:`Recorder.steps_graph`); :data:`LEFT_OUT` says which under ``KRaftVoters.cfg``. The
pending change, the in-memory voters and the requested kraft.version have no post-state field: they show in the
node's answers (a VoterChangeResponse when a change completes, fails or times out; an upgrade accepted).
"""

from __future__ import annotations

import functools
from collections import Counter, deque
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping, Optional

import networkx as nx

from kraftspec.reference import raft, raft_voters
from kraftspec.reference.frozen import FrozenMap
from kraftspec.reference.raft_log import LogEntry
from kraftspec.reference.raft_messages import (
    AddRaftVoterRequest,
    ApiVersionsResponse,
    BeginQuorumEpochRequest,
    FetchRequest,
    FetchResponse,
    FetchSnapshotResponse,
    RemoveRaftVoterRequest,
    UpdateRaftVoterRequest,
    VoteResponse,
)
from kraftspec.reference.raft_node import ADD_VOTER
from kraftspec.reference.raft_records import LeaderChangeMessage
from kraftspec.reference.raft_state import Candidate, Follower, Leader, Prospective
from kraftspec.spec import agree_voters as agree
from kraftspec.spec.agree import load_model
from kraftspec.spec.state_graph import StateKey, state_graph, state_key
from kraftspec.spec.tla_values import TlaValue, record
from kraftspec.spec.tlc_config import read_constants
from kraftspec.traces.format.envelope import Step, Trace
from kraftspec.traces.format.raft import encode_entries, encode_record_value, explicit_state
from kraftspec.traces.recording.broker_tla import Edge, walked_traces
from kraftspec.traces.recording.raft_inputs import epoch_at, message, tick
from kraftspec.traces.recording.raft_tla import posted, replayed

INIT = "Init"
"""The label of the root's edges to the spec's initial states."""
VOTERS_CONFIG = {"fetch_timeout_ms": 60000}
"""The explicit nodes' ``QuorumConfig``: a check quorum of 90 s, so that the pending changes' timers (2 s) may expire
in a walk without the leader resigning for want of fetches."""
ADMIN = 1000
"""The admin client's id: its ``n``-th voter change comes from ``ADMIN + n`` with correlation id ``n``."""
DATA = "data"
SNAPSHOT_SIZE = 1000
"""The bytes of each snapshot the node creates (not modelled beyond their count)."""
LEFT_OUT = {
    "HandleRemoveVoterRequest": "to a voter set of the leader alone: the leader is a majority by itself, so Kafka's "
                                "high watermark passes the VotersRecord as it is written and the removal completes at "
                                "once (the spec commits it by a later NextHighWatermark)",
    "HandleAddVoterApiVersions": "caught up, from two voters to three while the log holds uncommitted records: the "
                                 "new voter, fetched up to the log end, makes a majority with the leader, so Kafka's "
                                 "high watermark moves as the VotersRecord is written (the spec moves it by a later "
                                 "NextHighWatermark); or the leader that removed itself added back: its own Fetch "
                                 "would show it caught up, and Kafka's leader throws on a Fetch from itself "
                                 "(LeaderState.updateFetchedVoters)",
    "NextHighWatermark": "to an offset inside a batch: a follower fetches whole batches (Kafka's leader answers a Fetch "
                         "from inside a batch with the whole batch), so the majority's offset is a batch's end",
    "HandleCreateSnapshot": "by a node whose voter history lacks a VotersRecord its log holds (one rewritten below "
                            "its read position: Kafka's truncateNewEntries keeps nextOffset, as test_kafka_raft_quirks "
                            "confirms): its snapshot carries the voter set that history gives (voterSetAtOffset), the "
                            "spec's the log's (under KRaftVoters.snapshots.cfg)",
}
"""The edges of ``KRaftVoters.tla`` no raft input makes under ``KRaftVoters.cfg``, by action, and why (every other edge
out of a walked state has one)."""


@dataclass(frozen=True)
class Point:
    """The node as the trace has it so far, the trace's clock, its bootstrap kraft.version, and what the spec counts
    beside the node: the highest high watermark the node has known (its ``hw``), its last epoch's start offset, the
    voter changes accepted, the elections won after the first, the highest log end read (kept only while a snapshot may
    still be fetched: the spec's ``ReadEnd``), the snapshots taken and the spec's bound on them."""

    node: raft.RaftNode
    clock: int
    bootstrap_version: int
    committed: int = 0
    epoch_start: int = 0
    changes: int = 0
    elections: int = 0
    read_end: int = 0
    snapshots_taken: int = 0
    max_snapshots: int = 0

    @functools.cached_property
    def key(self) -> StateKey:
        """The spec's state this point is (:func:`project`)."""
        return state_key(project(self))


def _kind(value: Any) -> str:
    if isinstance(value, LeaderChangeMessage):
        return "LeaderChange"
    if isinstance(value, raft_voters.KRaftVersionRecord):
        return "KRaftVersion"
    if isinstance(value, raft_voters.VotersRecord):
        return "Voters"
    return "Data"


def _starts_batch(kind: str, before: Optional[str], bootstrap_version: int) -> bool:
    """Whether a record of ``kind`` after one of kind ``before`` starts a batch of the spec's: a VotersRecord after a
    KRaftVersionRecord is the upgrade's or the start of epoch's batch, and a KRaftVersionRecord after a LeaderChange
    record is the start of epoch's under a bootstrap checkpoint (static voters never copy one: their upgrade's batch
    starts with its KRaftVersionRecord)."""
    if kind == "Voters":
        return before != "KRaftVersion"
    if kind == "KRaftVersion":
        return not (before == "LeaderChange" and bootstrap_version == 1)
    return True


def project(point: Point) -> dict[str, TlaValue]:
    """The spec's variables of a point (``agree_voters.project``'s values): each record of the log by type, a
    VotersRecord as its voters and those it names with a directory id."""
    node, state = point.node, point.node.state
    log, before = [], None
    for entry in node.log.entries:
        kind = _kind(entry.record)
        voters = named = frozenset()
        if kind == "Voters":
            voters = frozenset(v.voter_key.id for v in entry.record.voters)
            named = frozenset(v.voter_key.id for v in entry.record.voters if v.voter_key.directory_id is not None)
        log.append(record(type=kind, voters=voters, directoryIds=named,
                          batchStart=_starts_batch(kind, before, point.bootstrap_version)))
        before = kind
    change = node.voter_change
    pending = (record(kind="none", voter=0, offset=-1) if change is None else
               record(kind="add" if change.api == ADD_VOTER else "remove", voter=change.voter_key.id,
                      offset=-1 if change.last_offset is None else change.last_offset))
    leading = isinstance(state, Leader)
    volatile = state.volatile_voters if leading else None
    requested = state.requested_kraft_version if leading else None
    return {
        "bootstrapVersion": point.bootstrap_version,
        "log": tuple(log),
        "hw": point.committed,
        "epochStart": point.epoch_start,
        "role": "Leader" if leading else "Follower",
        "pending": pending,
        "volatileVoters": frozenset() if volatile is None else agree.named(volatile),
        "requestedVersion": -1 if requested is None else requested,
        "changes": point.changes,
        "elections": point.elections,
        "logStart": node.log.start_offset,
        "snapshots": frozenset(agree.project_snapshot(s.end_offset, _snapshot_records(node, s.id))
                               for s in node.log.snapshots if s.end_offset > 0),
        "readEnd": point.read_end,
        "snapshotsTaken": point.snapshots_taken,
    }


def _snapshot_records(node: raft.RaftNode, snapshot_id: tuple[int, int]) -> tuple[Any, ...]:
    """The control records a snapshot of the node starts with (none for a node with static voters)."""
    return () if node.dynamic is None else node.dynamic.snapshot_records.get(snapshot_id, ())


def _voters_record(spec_record: Mapping[str, Any]) -> raft_voters.VotersRecord:
    """A spec VotersRecord as ``agree_voters`` concretizes it: each voter's one directory id (if named) and listener."""
    named = spec_record["directoryIds"]
    return raft_voters.to_voters_record(raft_voters.VoterSet(voters=FrozenMap(
        {i: agree.node(i, static=i not in named) for i in sorted(spec_record["voters"])})))


def _stated_log(state: Mapping[str, Any], node: raft.RaftNode) -> list[dict[str, Any]]:
    """The spec's log as trace entries, in the spec's batches (``batchStart``); the spec abstracts each record's epoch
    and the LeaderChange record's voters, which are the node's (the data record is :data:`DATA`)."""
    entries = []
    for spec_record, entry in zip(state["log"], node.log.entries):
        kind = spec_record["type"]
        if kind == "Voters":
            value: Any = _voters_record(spec_record)
        elif kind == "KRaftVersion":
            value = raft_voters.KRaftVersionRecord(kraft_version=1)
        elif kind == "LeaderChange" and isinstance(entry.record, LeaderChangeMessage):
            value = entry.record
        else:
            value = DATA
        (encoded,) = encode_entries((LogEntry(epoch=entry.epoch, record=value,
                                              starts_batch=spec_record["batchStart"]),))
        entries.append({**encoded, "record": encode_record_value(value)})
    return entries


def spec_post(state: Mapping[str, Any], node: raft.RaftNode) -> dict[str, Any]:
    """What the spec's state gives of the node as trace post-state fields (``raft_replay.observe``'s names): its log
    (:func:`_stated_log`) and, while it leads, its role and high watermark (``LeaderHwm``: -1 until it passes the epoch
    start); the spec's Follower is any other role, whose high watermark Kafka keeps (Follower) or drops (Resigned)."""
    post = {"log_end_offset": state["logStart"] + len(state["log"]), "log": _stated_log(state, node)}
    if state["role"] != "Leader":
        return post
    return {"role": "Leader", **post, "high_watermark": state["hw"] if state["hw"] > state["epochStart"] else -1}


class _Run:
    """Steps replayed one at a time from a point, recorded with the reference's outputs; ``refused`` once the
    reference refused one (the run then takes no more); ``sent_hw`` the highest high watermark its Fetch answers told
    (a leader that removed itself resigns in the step whose Fetch commits the removal)."""

    def __init__(self, point: Point) -> None:
        self.point, self.node, self.clock = point, point.node, point.clock
        self.steps: list[Step] = []
        self.sent_hw = -1
        self.refused = False

    def do(self, step: Step) -> bool:
        """Replay ``step`` (``raft_tla.replayed``); whether the reference took it."""
        made = None if self.refused else replayed(self.node, self.clock, [step])
        if made is None:
            self.refused = True
            return False
        self.node, self.clock, (recorded,) = made
        for send in (recorded.response or {}).get("sends", ()):
            if send.get("type") == "FetchResponse":
                self.sent_hw = max(self.sent_hw, send["high_watermark"])
        self.steps.append(recorded)
        return True

    def made(self, label: str) -> Optional[tuple[Point, list[Step]]]:
        """The point after the run as the edge ``label`` of the spec leaves it; None if the reference refused a step."""
        if self.refused or not self.steps:
            return None
        point, state = self.point, self.node.state
        leading = isinstance(state, Leader)
        known = state.high_watermark if leading or isinstance(state, Follower) else -1
        hw = max(point.committed, self.sent_hw, -1 if known is None else known)
        counted = label in ("HandleAddVoterRequest", "HandleRemoveVoterRequest", "HandleUpdateVoterRequest")
        taken = point.snapshots_taken + (label in ("HandleCreateSnapshot", "HandleFetchSnapshotResponse"))
        end = self.node.log.end_offset
        after = Point(self.node, self.clock, point.bootstrap_version, hw,
                      state.epoch_start_offset if leading else point.epoch_start,
                      point.changes + counted, point.elections + (label == "BecomeLeader"),
                      max(point.read_end, end) if taken < point.max_snapshots else end, taken, point.max_snapshots)
        return after, self.steps


Plan = Callable[[_Run], None]
"""An input sequence: steps handed to a run, which may depend on what the node did with the earlier ones."""


def _listener(replica_id: int) -> str:
    """The replica's one listener as ``agree_voters.listeners`` has it, ``NAME://host:port``."""
    ((name, (host, port)),) = agree.listeners(replica_id).items()
    return f"{name}://{host}:{port}"


def _fetch(node: raft.RaftNode, replica: int, offset: int, now: int) -> Step:
    """``replica``'s Fetch at ``offset`` in the leader's epoch."""
    request = FetchRequest(replica_id=replica, current_leader_epoch=node.state.epoch, fetch_offset=offset,
                           last_fetched_epoch=epoch_at(node, offset), replica_directory_id=agree.directory_id(replica))
    return message("fetch_request", request, now=now)


def _others(node: raft.RaftNode, ids: list[int]) -> list[int]:
    """The replicas other than the node: the voters in force first (ascending, a leader the node knows last), then
    the other ids."""
    leader = getattr(node.state, "leader_id", -1)
    voters = sorted(node.voters - {node.local_id}, key=lambda v: (v == leader, v))
    return voters + [i for i in ids if i not in voters and i != node.local_id]


def _elect(run: _Run) -> None:
    """An election the node wins: its election (fetch) deadline, then each round's requests and granted answers."""
    state = run.node.state
    deadline = state.fetch_deadline if isinstance(state, Follower) else getattr(state, "election_deadline", run.clock)
    if not isinstance(state, Candidate) and not run.do(tick(max(run.clock, deadline))):
        return
    for round_state in (Prospective, Candidate):
        if not isinstance(run.node.state, round_state):
            continue
        run.do(tick(run.clock))
        for voter in _others(run.node, []):
            if not isinstance(run.node.state, round_state):
                break
            run.do(message("vote_response", VoteResponse(source=voter, leader_epoch=run.node.state.epoch,
                                                         vote_granted=True, correlation_id=None)))


def _high_watermark(m: int) -> Plan:
    def fetches(run: _Run) -> None:
        for voter in sorted(run.node.voters - {run.node.local_id}):
            state = run.node.state
            if not isinstance(state, Leader) or state.high_watermark == m:
                return
            known = state.voter_states.get(voter)
            if known is None or known.end_offset < m:
                run.do(_fetch(run.node, voter, m, run.clock))
    return fetches


def _following(run: _Run, leader: int, poll: bool) -> Optional[Follower]:
    """The state of the node following the leader whose answers come next: first ``leader``'s BeginQuorumEpoch of the
    next epoch if it follows none, then a ``tick`` if ``poll`` (which sends the Fetch if none is outstanding); None (the
    run refused) if it still follows none."""
    if not isinstance(run.node.state, Follower):
        run.do(message("begin_quorum_epoch_request", BeginQuorumEpochRequest(
            leader_id=leader, leader_epoch=run.node.state.epoch + 1, voter_id=run.node.local_id)))
    state = run.node.state
    if not isinstance(state, Follower):
        run.refused = True
        return None
    if poll:
        run.do(tick(run.clock))
    return state


def _truncation(end: int, leader: int, poll: bool) -> Plan:
    def diverging(run: _Run) -> None:
        state = _following(run, leader, poll)
        if state is None:
            return
        run.do(message("fetch_response", FetchResponse(
            source=state.leader_id, leader_epoch=state.epoch, leader_id=state.leader_id, high_watermark=-1,
            diverging_epoch=(epoch_at(run.node, end), end), correlation_id=None)))
    return diverging


def _snapshot_fetch(snapshot: Mapping[str, Any], leader: int, poll: bool) -> Plan:
    """The leader's Fetch answer naming its snapshot (``snapshot``'s end, in the leader's epoch), then the FetchSnapshot
    answer holding it whole, its first batch with the control records the spec's snapshot carries."""
    def fetched(run: _Run) -> None:
        state = _following(run, leader, poll)
        if state is None:
            return
        snapshot_id = (snapshot["end"], state.epoch)
        run.do(message("fetch_response", FetchResponse(
            source=state.leader_id, leader_epoch=state.epoch, leader_id=state.leader_id, snapshot_id=snapshot_id,
            correlation_id=None)))
        records = () if snapshot["kraftVersion"] == 0 else (raft_voters.KRaftVersionRecord(kraft_version=1),
                                                              _voters_record(snapshot))
        run.do(message("fetch_snapshot_response", FetchSnapshotResponse(
            source=state.leader_id, leader_epoch=state.epoch, leader_id=state.leader_id, snapshot_id=snapshot_id,
            size=SNAPSHOT_SIZE, position=0, chunk=SNAPSHOT_SIZE, control_records=records, correlation_id=None)))
    return fetched


def _steps(*steps: Step) -> Plan:
    def fixed(run: _Run) -> None:
        for step in steps:
            run.do(step)
    return fixed


def _api_versions(voter: int, supported: tuple[int, int]) -> Step:
    return message("api_versions_response", ApiVersionsResponse(source=voter, kraft_version_range=supported,
                                                                correlation_id=None))


def inputs(point: Point, label: str, target: Mapping[str, Any], ids: list[int]) -> list[Plan]:
    """The input sequences that may make an edge labelled ``label`` to ``target`` (first match wins)."""
    node, state, now = point.node, point.node.state, point.clock
    request = point.changes + 1
    if label == "HandleAddVoterRequest":
        r = target["pending"]["voter"]
        add = AddRaftVoterRequest(voter_id=r, voter_directory_id=agree.directory_id(r), listeners=(_listener(r),),
                                  source=ADMIN + request, correlation_id=request)
        sent = node.inflight.get(r, (0, now))[1]  # a request to r still outstanding: asked once it timed out
        return [_steps(message("add_raft_voter_request", add, now=t))
                for t in sorted({now, max(now, sent + node.config.request_timeout_ms)})]
    if label == "HandleRemoveVoterRequest":
        r = target["pending"]["voter"]
        return [_steps(message("remove_raft_voter_request", RemoveRaftVoterRequest(
            voter_id=r, voter_directory_id=agree.directory_id(r), source=ADMIN + request, correlation_id=request)))]
    if label == "HandleUpdateVoterRequest":
        return [_steps(message("update_raft_voter_request", UpdateRaftVoterRequest(
            voter_id=r, current_leader_epoch=state.epoch, voter_directory_id=agree.directory_id(r),
            listeners=(_listener(r),), correlation_id=request)))
                for r in ids if r != node.local_id]  # a voter asks its leader, never itself
    if label == "HandleAddVoterApiVersions" and node.voter_change is not None:
        r = node.voter_change.voter_key.id
        if len(target["log"]) > len(node.log.entries):  # caught up
            return [_steps(_fetch(node, r, node.log.end_offset, max(now, 1)), _api_versions(r, (0, 1)))]
        return [_steps(_api_versions(r, (0, 1))), _steps(_api_versions(r, (0, 0)))]
    if label == "MaybeAppendUpgradedKraftVersion":
        return [_steps(Step("upgrade_kraft_version", {"epoch": state.epoch, "kraft_version": 1}))]
    if label == "NextHighWatermark":
        m, log, start = target["hw"], target["log"], target["logStart"]
        return [_high_watermark(m)] if m == start + len(log) or log[m - start]["batchStart"] else []  # whole batches
    if label == "TruncateControlRecords":
        end, leader = target["logStart"] + len(target["log"]), _others(node, ids)[0]
        return [_truncation(end, leader, poll) for poll in (True, False)]
    if label == "BecomeLeader":
        return [_elect]
    if label == "ClientAppend":
        return [_steps(Step("append", {"records": (DATA,)}))]
    if label == "LoseLeadership":
        return [_steps(message("begin_quorum_epoch_request", BeginQuorumEpochRequest(
            leader_id=l, leader_epoch=state.epoch + 1, voter_id=node.local_id))) for l in _others(node, ids)]
    if label == "PendingOperationExpires" and node.voter_change is not None:
        return [_steps(tick(max(now, node.voter_change.deadline)))]
    if label == "HandleCreateSnapshot":
        (end,) = {s["end"] for s in target["snapshots"]} - {s.end_offset for s in node.log.snapshots}
        epoch = epoch_at(node, end)
        return [_steps(Step("create_snapshot", {"end_offset": end, "epoch": epoch, "size": SNAPSHOT_SIZE}))]
    if label == "HandleFetchSnapshotResponse":
        (snapshot,) = target["snapshots"]
        return [_snapshot_fetch(snapshot, _others(node, ids)[0], poll) for poll in (True, False)]
    if label == "DeleteBeforeSnapshot":
        (epoch,) = {s.epoch for s in node.log.snapshots if s.end_offset == target["logStart"]}
        return [_steps(Step("delete_before_snapshot", {"end_offset": target["logStart"], "epoch": epoch}))]
    return []


def explicit(kraft_version: int, constants: Mapping[str, Any]) -> dict[str, Any]:
    """The Candidate of epoch 1 that becomes the spec's initial leader: ``Local`` of ``InitVoters``, with static voters
    (kraft.version 0) or formatted with them as the initial controllers (1), each voter's directory id and listener
    as ``agree_voters`` concretizes them."""
    local, voters = int(constants["Local"]), sorted(constants["InitVoters"])
    vote = {"id": local} if kraft_version == 0 else {"id": local, "directory_id": agree.directory_id(local)}
    obj: dict[str, Any] = {"local_id": local, "directory_id": agree.directory_id(local), "config": VOTERS_CONFIG,
                           "quorum_state": {"epoch": 1, "voted_key": vote}}
    if kraft_version == 0:
        return {**obj, "voters": voters, "endpoints": {str(v): [_listener(v)] for v in voters}}
    return {**obj, "kraft_version": 1, "bootstrap_voters": [
        {"id": v, "directory_id": agree.directory_id(v), "listeners": [_listener(v)]} for v in voters]}


def _edge_order(edge: Edge) -> tuple[Any, ...]:
    """A fixed order of the edges out of one state (TLC's dump may list them in any order): by action, then by what
    tells apart the targets of one action's edges (its parameter's mark on the state)."""
    _, target, label = edge
    state = dict(target)
    return (label, state["hw"], len(state["log"]), state["pending"]["voter"], sorted(state["volatileVoters"]),
            state["role"], state["logStart"], sorted(s["end"] for s in state["snapshots"]))


def _posted(steps: list[Step], point: Point, label: str) -> list[Step]:
    """``steps``, the edge ``label``'s, with the last stating the spec's state at ``point`` (``raft_tla.posted``)."""
    return posted(steps, point.node, point.clock, spec_post(dict(point.key), point.node), label)


class Recorder:
    """Builds the walked graph from TLC's (from an added root) and turns its paths into traces of the spec's node."""

    def __init__(self, graph: nx.MultiDiGraph, constants: Mapping[str, Any]) -> None:
        self.tlc, self.ids = graph, sorted(constants["Ids"])
        self.starts: dict[StateKey, tuple[dict[str, Any], Point, list[Step]]] = {}
        for kraft_version in (0, 1):
            obj = explicit(kraft_version, constants)
            run = _Run(Point(explicit_state(obj), 0, kraft_version, max_snapshots=int(constants["MaxSnapshots"])))
            _elect(run)
            made = run.made(INIT)
            if made is None or not graph.nodes.get(made[0].key, {}).get("initial"):
                raise ValueError("the reference's initial states are not TLC's: run `kraftspec agree voters`")
            point, steps = made
            self.starts[point.key] = (obj, point, _posted(steps, point, INIT))
        if {key for key, initial in graph.nodes(data="initial") if initial} != set(self.starts):
            raise ValueError("the reference's initial states are not TLC's: run `kraftspec agree voters`")
        self.initial = state_key({name: "start" for name, _ in next(iter(self.starts))})
        self.ended: Counter[str] = Counter()

    def moves(self, point: Point) -> Iterator[tuple[str, Point, list[Step]]]:
        """(action, point after, steps) for each edge of TLC's graph out of the point's state that an input makes (the
        first input found per edge)."""
        for _, after, label in sorted(self.tlc.out_edges(point.key, keys=True), key=_edge_order):
            made = self.move(point, label, after)
            if made is not None:
                yield label, made[0], made[1]

    def move(self, point: Point, label: str, target: StateKey) -> Optional[tuple[Point, list[Step]]]:
        """The point after and the steps of the first input that makes the edge ``label`` to ``target``; None if no
        input makes it."""
        for candidate in inputs(point, label, dict(target), self.ids):
            run = _Run(point)
            candidate(run)
            made = run.made(label)
            if made is not None and made[0].key == target:
                return made
        return None

    def first_paths(self) -> Iterator[tuple[str, Point, list[Edge]]]:
        """Breadth-first from the initial states, each state the reference reaches, when first reached: the action
        that reached it, its point and its path of the walked graph (the ``Init`` edge first), as :meth:`trace`
        takes it."""
        paths = {key: [(self.initial, key, INIT)] for key in self.starts}
        queue = deque(point for _, point, _ in self.starts.values())
        while queue:
            point = queue.popleft()
            for label, after, _ in self.moves(point):
                if after.key not in paths:
                    paths[after.key] = paths[point.key] + [(point.key, after.key, label)]
                    queue.append(after)
                    yield label, after, paths[after.key]

    def steps_graph(self) -> nx.MultiDiGraph:
        """The walked graph: the root, its ``Init`` edges, and from each initial state an edge per action and state
        it leads the reference to (its first point reached breadth-first stands for a state)."""
        walked = nx.MultiDiGraph()
        walked.add_node(self.initial, initial=True)
        points: dict[StateKey, Point] = {}
        queue: deque[Point] = deque()
        for key, (_, point, _) in sorted(self.starts.items(), key=lambda item: repr(item[0])):
            walked.add_edge(self.initial, key, INIT)
            points[key] = point
            queue.append(point)
        while queue:
            point = queue.popleft()
            for label, after, _ in self.moves(point):
                key = after.key
                if key not in points:
                    points[key] = after
                    queue.append(after)
                walked.add_edge(point.key, key, label)
        return walked

    def trace(self, path: list[Edge], trace_id: str, meta: dict[str, Any]) -> Trace:
        """The trace of a path of the walked graph: its ``Init`` edge's explicit node and election, then each edge's
        inputs, the last stating the spec's state after it (a path whose edge the reference, along this path, does
        not make ends before it, counted in ``ended`` by action)."""
        (_, start, _), rest = path[0], path[1:]
        obj, point, prefix = self.starts[start]
        steps = list(prefix)
        for _, target, label in rest:
            match = self.move(point, label, target)
            if match is None:
                self.ended[label] += 1
                break
            point, made = match
            steps.extend(_posted(made, point, label))
        return Trace(component="raft", steps=tuple(steps), explicit=obj, id=trace_id, meta=meta)


def generate_tla(seed: int, walks: int, cover: str = "kinds", *, timeout_s: float = 600.0,
                 graph: Optional[nx.MultiDiGraph] = None) -> Iterator[Trace]:
    """``walks`` seeded random walks of the walked graph of ``KRaftVoters.tla`` (:meth:`Recorder.steps_graph`, from
    the root), then its covering set (``cover``: ``kinds`` or ``edges``, ``broker_tla.walked_traces``); ``graph``:
    TLC's graph if already loaded."""
    model = load_model("voters")
    constants = read_constants(model.config_path)
    if graph is None:
        graph, _ = state_graph(model.module_path, model.config_path, timeout_s=timeout_s)
    recorder = Recorder(graph, constants)
    yield from walked_traces(recorder.steps_graph(), recorder.initial, seed, walks, cover, model.spec_module,
                             "tla-voters-", recorder.trace)
