"""Voter-set changes explored under ``KRaftVoters.cfg``'s bounds, in the spec's vocabulary.

Each successor calls the reference (``kraftspec.reference.raft_reconfig``, ``raft_voter_history``, ``raft_voters``,
``raft_rules``) with one choice of the spec action's parameters: ``HandleAddVoterRequest(r)`` ~
``handle_add_voter_request``, ``HandleAddVoterApiVersions(caughtUp)`` ~ ``handle_add_voter_api_versions`` (ApiVersions
answered without error, kraft.version range 0..1), ``HandleRemoveVoterRequest(r)`` ~ ``handle_remove_voter_request``,
``HandleUpdateVoterRequest(r)`` ~ ``handle_update_voter_request`` (the voter's own listeners and range again),
``MaybeAppendUpgradedKraftVersion`` ~ ``maybe_append_upgraded_kraft_version`` (to kraft.version 1 in the leader's epoch,
from the persisted version and voter set as ``KafkaRaftClient.upgradeKRaftVersion`` passes them),
``NextHighWatermark(m)`` ~ ``next_high_watermark`` with a majority at ``m`` then ``voter_change_committed`` and
``leader_resigns_after_removal``, ``TruncateControlRecords(end)`` ~ ``truncate_control_records`` (at a batch's start:
Kafka truncates whole batches; not to a snapshot's end where a VotersRecord starts, as the spec leaves out),
``HandleCreateSnapshot(s)`` ~ ``raft_snapshot.handle_create_snapshot`` at a batch's end (its
``_snapshot_control_records``: the records of ``kraft_version_at_offset`` and ``voter_set_at_offset`` at ``s - 1``,
then ``trim_control_records``), ``DeleteBeforeSnapshot(s)`` ~ ``raft_log.delete_before_snapshot`` (the log only: the
control records stay), ``HandleFetchSnapshotResponse(e, v, s)`` ~ ``raft_snapshot._snapshot_fetched`` (the log
replaced; ``snapshot_load_needed`` then ``load_snapshot``; ``follower_high_watermark`` at the snapshot's end).
Appended records are read back with ``read_batch``; the bootstrap checkpoint is ``load_snapshot`` at -1; static voters
are ``VoterSet.fromInetSocketAddresses``'s (no directory id, kraft.version 0..0).
The environment:
``BecomeLeader`` (``volatile_voters_at_epoch_start``; a first batch of the LeaderChange record and
``start_of_epoch_control_records``, as the initial leader writes it), ``ClientAppend`` (a data batch: no
control records), ``LoseLeadership`` and ``PendingOperationExpires``. A refused request leaves the state as it was
(no edge).
"""

from __future__ import annotations

import base64
import uuid
from dataclasses import dataclass, replace
from typing import Iterator, Mapping, Optional

from kraftspec.reference import raft_reconfig as rc
from kraftspec.reference import raft_voter_history as vh
from kraftspec.reference import raft_voters as rv
from kraftspec.reference.errors import Errors
from kraftspec.reference.frozen import FrozenMap
from kraftspec.reference.raft_messages import InvalidUpdateVersionError, UpgradeStateError
from kraftspec.reference.raft_rules import follower_high_watermark, next_high_watermark
from kraftspec.reference.raft_state import ReplicaKey
from kraftspec.spec.agree import AgreementModel, Step
from kraftspec.spec.tla_values import TlaValue, record

SUPPORTED = (0, 1)
LEADER_CHANGE = "LeaderChange"
DATA = "Data"
ENVIRONMENT_ACTIONS = frozenset({"BecomeLeader", "LoseLeadership", "ClientAppend", "PendingOperationExpires"})
"""Actions of ``KRaftVoters.tla``'s ``Next`` that move the environment (other nodes' elections, the data records of
the state machine above Raft, the pending operation's timer)."""


def directory_id(replica_id: int) -> str:
    """The replica's one directory id: the UUID numbered ``replica_id``, base64 as Kafka writes it."""
    return base64.urlsafe_b64encode(uuid.UUID(int=replica_id).bytes).rstrip(b"=").decode()


def key(replica_id: int) -> ReplicaKey:
    return ReplicaKey(id=replica_id, directory_id=directory_id(replica_id))


def listeners(replica_id: int) -> FrozenMap[str, tuple[str, int]]:
    return FrozenMap({"CONTROLLER": ("localhost", 9000 + replica_id)})


def node(replica_id: int, static: bool = False) -> rv.VoterNode:
    """A replica as a voter; a static (kraft.version 0) voter has no directory id and kraft.version range 0..0 until
    its UpdateRaftVoter."""
    if static:
        return rv.VoterNode(voter_key=ReplicaKey(id=replica_id), listeners=listeners(replica_id),
                            supported_kraft_version=(0, 0))
    return rv.VoterNode(voter_key=key(replica_id), listeners=listeners(replica_id), supported_kraft_version=SUPPORTED)


def voter_set(ids: frozenset[int], static: bool = False) -> rv.VoterSet:
    return rv.VoterSet(voters=FrozenMap({i: node(i, static) for i in ids}))


@dataclass(frozen=True)
class Pending:
    """The leader's pending add or remove; ``offset`` is its VotersRecord's (-1 while an add awaits ApiVersions)."""

    kind: str
    voter: int
    offset: int = -1


@dataclass(frozen=True)
class ExploredState:
    """One node's control-record state and log from its start offset (with its batches' first offsets), snapshots,
    high watermark, leadership, pending change and upgrade, with the counters."""

    control: vh.ControlRecordState
    bootstrap_version: int
    log: tuple[object, ...]  # LEADER_CHANGE, DATA, a KRaftVersionRecord or a VotersRecord per offset from log_start
    batch_starts: frozenset[int]
    hw: int
    epoch_start: int
    leader_hwm: Optional[int]  # the leader's high watermark, None until known (and for a follower)
    is_leader: bool
    pending: Optional[Pending]
    volatile_voters: Optional[rv.VoterSet]
    requested_kraft_version: Optional[int]
    changes: int
    elections: int
    log_start: int = 0
    snapshots: frozenset[tuple[int, tuple[object, ...]]] = frozenset()  # (end offset, control records) per snapshot
    read_end: int = 0  # the highest log end read (Kafka's nextOffset, which a truncation leaves)
    snapshots_taken: int = 0

    @property
    def log_end(self) -> int:
        return self.log_start + len(self.log)

    @property
    def latest_snapshot_end(self) -> int:
        return max((end for end, _ in self.snapshots), default=0)


def appended(state: ExploredState, *batch: object) -> ExploredState:
    """The state with ``batch`` written at the log end and read back by the control-record state machine (which skips
    the records other than KRaftVersionRecord and VotersRecord; a data batch has no control records)."""
    offset = state.log_end
    records = () if batch == (DATA,) else batch
    return replace(state, log=state.log + batch, batch_starts=state.batch_starts | {offset},
                   read_end=max(state.read_end, offset + len(batch)),
                   control=vh.read_batch(state.control, offset, offset + len(batch) - 1, records))


def start_of_epoch(state: ExploredState, local: int) -> tuple[object, ...]:
    """The new leader's first batch: its LeaderChange record and ``start_of_epoch_control_records``."""
    entry = vh.last_voter_set_entry(state.control)
    return (LEADER_CHANGE,) + rc.start_of_epoch_control_records(
        vh.last_voter_set(state.control), None if entry is None else entry[0], vh.last_kraft_version(state.control),
        node(local))


def initial_states(constants: Mapping[str, TlaValue]) -> Iterator[ExploredState]:
    """``Init``: kraft.version 0 with static voters, or 1 from a bootstrap checkpoint; the node leads from offset 0."""
    ids, local = frozenset(constants["InitVoters"]), int(constants["Local"])
    for kraft_version in (rv.KRAFT_VERSION_0, rv.KRAFT_VERSION_1):
        if kraft_version == rv.KRAFT_VERSION_0:
            control = vh.ControlRecordState(static_voter_set=voter_set(ids, static=True))
        else:
            control = vh.load_snapshot(vh.ControlRecordState(), -1, (
                rv.KRaftVersionRecord(kraft_version=kraft_version), rv.to_voters_record(voter_set(ids))))
        start = ExploredState(control=control, bootstrap_version=kraft_version, log=(), batch_starts=frozenset(), hw=0,
                              epoch_start=0, leader_hwm=None,
                              is_leader=True, pending=None, changes=0, elections=0, requested_kraft_version=None,
                              volatile_voters=rc.volatile_voters_at_epoch_start(vh.last_voter_set(control), node(local),
                                                                                kraft_version))
        yield appended(start, *start_of_epoch(start, local))


def reconfig_leader(state: ExploredState) -> rc.ReconfigLeader:
    return rc.ReconfigLeader(epoch=state.elections + 1, control=state.control, high_watermark=state.leader_hwm,
                             operation_pending=state.pending is not None, volatile_voters=state.volatile_voters)


def leader_successors(state: ExploredState, constants: Mapping[str, TlaValue]) -> Iterator[Step[ExploredState]]:
    """The leader's handlers and its high watermark."""
    ids, local = sorted(constants["Ids"]), int(constants["Local"])
    room = state.log_end < int(constants["MaxLog"])
    leader = reconfig_leader(state)
    if state.changes < int(constants["MaxChanges"]):
        counted = replace(state, changes=state.changes + 1)
        for r in ids:
            if rc.handle_add_voter_request(leader, key(r), listeners(r)) is None:
                yield Step("HandleAddVoterRequest", f"handle_add_voter_request({r})",
                           replace(counted, pending=Pending("add", r)))
            removal = rc.handle_remove_voter_request(leader, key(r))
            if removal.append is not None and room:
                yield Step("HandleRemoveVoterRequest", f"handle_remove_voter_request({r})",
                           replace(appended(counted, rv.to_voters_record(removal.append)),
                                   pending=Pending("remove", r, state.log_end)))
            update = rc.handle_update_voter_request(leader, key(r), listeners(r), SUPPORTED)
            if update.response is not None and update.response.error == Errors.NONE:
                if update.append is not None and room:
                    yield Step("HandleUpdateVoterRequest", f"handle_update_voter_request({r})",
                               appended(counted, rv.to_voters_record(update.append)))
                elif update.append is None:
                    yield Step("HandleUpdateVoterRequest", f"handle_update_voter_request({r}) at kraft.version 0",
                               replace(counted, volatile_voters=update.volatile_voters))
    pending = state.pending
    if pending is not None and pending.kind == "add" and pending.offset == -1:
        for caught_up in (False, True):
            change = rc.handle_add_voter_api_versions(leader, key(pending.voter), listeners(pending.voter), Errors.NONE,
                                                      SUPPORTED, caught_up)
            call = f"handle_add_voter_api_versions({pending.voter}, caught_up={caught_up})"
            if change.append is not None and room:
                written = appended(state, rv.to_voters_record(change.append))
                yield Step("HandleAddVoterApiVersions", call,
                           replace(written, pending=replace(pending, offset=state.log_end)))
            elif change.append is None:
                yield Step("HandleAddVoterApiVersions", call, replace(state, pending=None))
    upgrade = upgraded(state, constants)
    if upgrade is not None:
        yield upgrade
    current = -1 if state.leader_hwm is None else state.leader_hwm
    for m in range(1, state.log_end + 1):
        hwm = next_high_watermark(current, (m,), state.epoch_start)
        if hwm == current:
            continue
        after = replace(state, hw=hwm, leader_hwm=hwm)
        if pending is not None and pending.offset >= 0 and rc.voter_change_committed(hwm, pending.offset):
            after = replace(after, pending=None)
            if pending.kind == "remove" and rc.leader_resigns_after_removal(vh.last_voter_set(state.control),
                                                                            key(local)):
                after = replace(after, is_leader=False, leader_hwm=None, volatile_voters=None,
                                requested_kraft_version=None)
        yield Step("NextHighWatermark", f"next_high_watermark({current}, majority at {m}, {state.epoch_start})", after)


def upgraded(state: ExploredState, constants: Mapping[str, TlaValue]) -> Optional[Step[ExploredState]]:
    """``upgradeKRaftVersion`` to 1 in the leader's epoch with the persisted kraft.version and voter set: the upgrade's
    batch appended, the leader keeping the requested version instead of its in-memory voters; none when Kafka
    answers false or refuses it, or when the batch would pass ``MaxLog``."""
    epoch = state.elections + 1
    try:
        upgrade = rc.maybe_append_upgraded_kraft_version(
            epoch, state.requested_kraft_version, state.volatile_voters, epoch, rv.KRAFT_VERSION_1,
            vh.last_kraft_version(state.control), vh.last_voter_set(state.control), validate_only=False)
    except (InvalidUpdateVersionError, UpgradeStateError):
        return None
    if not upgrade.records or state.log_end + len(upgrade.records) > int(constants["MaxLog"]):
        return None
    return Step("MaybeAppendUpgradedKraftVersion", "maybe_append_upgraded_kraft_version(1)",
                replace(appended(state, *upgrade.records), volatile_voters=None, requested_kraft_version=1))


def successors(state: ExploredState, constants: Mapping[str, TlaValue]) -> Iterator[Step[ExploredState]]:
    """Every action of the spec's ``Next`` with every parameter choice, as reference calls; the read position is kept
    only while a snapshot may still be fetched (the spec's ``ReadEnd``), else it is the log end."""
    for step in actions(state, constants):
        after = step.state
        if after.snapshots_taken >= int(constants["MaxSnapshots"]) and after.read_end != after.log_end:
            step = replace(step, state=replace(after, read_end=after.log_end))
        yield step


def actions(state: ExploredState, constants: Mapping[str, TlaValue]) -> Iterator[Step[ExploredState]]:
    """Every action of the spec's ``Next`` with every parameter choice, as reference calls."""
    local = int(constants["Local"])
    if state.is_leader:
        yield from leader_successors(state, constants)
        yield from snapshot_successors(state, constants)
        if state.log_end < int(constants["MaxLog"]):
            yield Step("ClientAppend", "a data batch appended", appended(state, DATA))
        yield Step("LoseLeadership", "another leader elected",
                   replace(state, is_leader=False, leader_hwm=None, pending=None, volatile_voters=None,
                           requested_kraft_version=None))
        if state.pending is not None:
            yield Step("PendingOperationExpires", "the pending operation timed out", replace(state, pending=None))
        return
    snapshot_ends = {end for end, _ in state.snapshots}
    for end in sorted(start for start in state.batch_starts if start >= state.hw):
        if end in snapshot_ends and isinstance(state.log[end - state.log_start], rv.VotersRecord):
            continue  # Kafka 4.3 forgets every voter set there (docs/kafka-findings.md 3): left out of the spec
        yield Step("TruncateControlRecords", f"truncate_control_records({end})",
                   replace(state, log=state.log[:end - state.log_start],
                           batch_starts=frozenset(s for s in state.batch_starts if s < end),
                           control=vh.truncate_control_records(state.control, end)))
    yield from snapshot_successors(state, constants)
    yield from fetched_snapshots(state, constants)
    voters = vh.last_voter_set(state.control)
    batch = start_of_epoch(state, local)
    if (state.elections < int(constants["MaxElections"]) and state.log_end + len(batch) <= int(constants["MaxLog"])
            and rv.is_voter(voters, key(local))):
        volatile = rc.volatile_voters_at_epoch_start(voters, node(local), vh.last_kraft_version(state.control))
        yield Step("BecomeLeader", "elected; start_of_epoch_control_records", replace(
            appended(state, *batch), epoch_start=state.log_end, is_leader=True, leader_hwm=None,
            volatile_voters=volatile, elections=state.elections + 1))


def snapshot_control_records(control: vh.ControlRecordState, end_offset: int) -> tuple[object, ...]:
    """``raft_snapshot._snapshot_control_records``' records: the kraft.version and voter set in force at the
    snapshot's last contained offset, none at kraft.version 0."""
    kraft_version = vh.kraft_version_at_offset(control, end_offset - 1)
    voters = vh.voter_set_at_offset(control, end_offset - 1)
    if not rv.is_reconfig_supported(kraft_version):
        return ()
    return (rv.KRaftVersionRecord(kraft_version=kraft_version),) + (() if voters is None else
                                                                     (rv.to_voters_record(voters),))


def snapshot_successors(state: ExploredState, constants: Mapping[str, TlaValue]) -> Iterator[Step[ExploredState]]:
    """``HandleCreateSnapshot(s)`` at each batch's end past the latest snapshot and at most the high watermark, then
    ``DeleteBeforeSnapshot`` before each snapshot past the log start."""
    if state.snapshots_taken < int(constants["MaxSnapshots"]):
        ends = sorted((state.batch_starts | {state.log_end}) - {0})
        for s in (s for s in ends if state.latest_snapshot_end < s <= state.hw):
            yield Step("HandleCreateSnapshot", f"_handle_create_snapshot({s})", replace(
                state, snapshots=state.snapshots | {(s, snapshot_control_records(state.control, s))},
                control=vh.trim_control_records(state.control, s), snapshots_taken=state.snapshots_taken + 1))
    for end, _ in sorted(state.snapshots, key=lambda snapshot: snapshot[0]):
        if state.log_start < end <= state.hw:
            yield Step("DeleteBeforeSnapshot", f"delete_before_snapshot({end})", replace(
                state, log=state.log[end - state.log_start:], log_start=end,
                batch_starts=frozenset(s for s in state.batch_starts if s >= end),
                snapshots=frozenset(snapshot for snapshot in state.snapshots if snapshot[0] >= end)))


def committed_in_force(state: ExploredState, init_voters: frozenset[int]) -> tuple[int, frozenset[int]]:
    """The kraft.version and voter ids in force before the high watermark as the node's log, the snapshot at its start
    and the bootstrap (or static voters) say: the environment's view, which the leader's snapshot starts from."""
    kraft_version, voters = state.bootstrap_version, init_voters
    start = next((records for end, records in state.snapshots if end == state.log_start and end > 0), None)
    if start is not None:
        kraft_version = 1 if start else 0
        voters = next((rv.voter_ids(rv.from_voters_record(r)) for r in start if isinstance(r, rv.VotersRecord)), voters)
    for record in state.log[:state.hw - state.log_start]:
        if isinstance(record, rv.KRaftVersionRecord):
            kraft_version = record.kraft_version
        elif isinstance(record, rv.VotersRecord):
            voters = rv.voter_ids(rv.from_voters_record(record))
    return kraft_version, voters


def fetched_snapshots(state: ExploredState, constants: Mapping[str, TlaValue]) -> Iterator[Step[ExploredState]]:
    """``HandleFetchSnapshotResponse(e, v, s)``: the leader's snapshot ending at ``e`` past what the node has read, at
    kraft.version ``v`` (at least the committed one; 0: no control records) with the committed voter set or one voter
    added or removed, loaded in place of the whole log (``_snapshot_fetched``)."""
    if state.snapshots_taken >= int(constants["MaxSnapshots"]):
        return
    committed_version, committed = committed_in_force(state, frozenset(constants["InitVoters"]))
    choices: list[tuple[int, frozenset[int]]] = [(0, frozenset())] if committed_version == 0 else []
    sets = {committed} | {committed | {r} for r in constants["Ids"]} | {committed - {r} for r in committed}
    choices += [(1, voters) for voters in sorted(sets - {frozenset()}, key=sorted)]
    for e in range(state.read_end + 1, int(constants["MaxLog"])):
        for version, voters in choices:
            records: tuple[object, ...] = () if version == 0 else (
                rv.KRaftVersionRecord(kraft_version=version), rv.to_voters_record(voter_set(voters)))
            control = state.control
            if vh.snapshot_load_needed(control.next_offset, e):
                control = vh.load_snapshot(control, e - 1, records)
            hw = follower_high_watermark(state.hw, e, e)
            call = f"_snapshot_fetched({e}, kraft.version {version}, {sorted(voters)})"
            yield Step("HandleFetchSnapshotResponse", call, replace(
                state, control=control, log=(), log_start=e, batch_starts=frozenset(), hw=hw, read_end=e,
                snapshots=frozenset({(e, records)}), snapshots_taken=state.snapshots_taken + 1))


def named(voters: rv.VoterSet) -> frozenset[int]:
    """The voters ``voters`` names with a directory id."""
    return frozenset(i for i, voter in voters.voters.items() if voter.voter_key.directory_id is not None)


def project(state: ExploredState) -> dict[str, TlaValue]:
    """The spec's variables; each VotersRecord's set is the one ``voter_set_at_offset`` reads there, its voters and
    those named with a directory id; the in-memory voters are those known with a directory id."""
    log = []
    for offset, entry in enumerate(state.log, start=state.log_start):
        first = offset in state.batch_starts
        if entry in (LEADER_CHANGE, DATA):
            log.append(record(type=entry, voters=frozenset(), directoryIds=frozenset(), batchStart=first))
        elif isinstance(entry, rv.KRaftVersionRecord):
            log.append(record(type="KRaftVersion", voters=frozenset(), directoryIds=frozenset(), batchStart=first))
        else:
            # Below the latest snapshot the history was trimmed (truncateOldEntries): the record itself says.
            voters = (vh.voter_set_at_offset(state.control, offset) if offset >= state.latest_snapshot_end
                      else rv.from_voters_record(entry))
            ids, named_ids = (frozenset(), frozenset()) if voters is None else (rv.voter_ids(voters), named(voters))
            log.append(record(type="Voters", voters=ids, directoryIds=named_ids, batchStart=first))
    pending = state.pending or Pending("none", 0)
    return {
        "bootstrapVersion": state.bootstrap_version,
        "log": tuple(log),
        "hw": state.hw,
        "epochStart": state.epoch_start,
        "role": "Leader" if state.is_leader else "Follower",
        "pending": record(kind=pending.kind, voter=pending.voter, offset=pending.offset),
        "volatileVoters": frozenset() if state.volatile_voters is None else named(state.volatile_voters),
        "requestedVersion": -1 if state.requested_kraft_version is None else state.requested_kraft_version,
        "changes": state.changes,
        "elections": state.elections,
        "logStart": state.log_start,
        "snapshots": frozenset(project_snapshot(end, records) for end, records in state.snapshots),
        "readEnd": state.read_end,
        "snapshotsTaken": state.snapshots_taken,
    }


def project_snapshot(end: int, records: tuple[object, ...]) -> TlaValue:
    """A snapshot as the spec has it: its end, the kraft.version it carries (0 without a KRaftVersionRecord) and its
    VotersRecord's voters and those named with a directory id (none without one)."""
    versions = [r.kraft_version for r in records if isinstance(r, rv.KRaftVersionRecord)]
    sets = [rv.from_voters_record(r) for r in records if isinstance(r, rv.VotersRecord)]
    voters, named_ids = (rv.voter_ids(sets[0]), named(sets[0])) if sets else (frozenset(), frozenset())
    return record(end=end, kraftVersion=versions[0] if versions else 0, voters=voters, directoryIds=named_ids)


MODEL: AgreementModel[ExploredState] = AgreementModel(
    component="voters",
    spec_module="KRaftVoters",
    initial_states=initial_states,
    successors=successors,
    project=project,
    extra_configs=("snapshots",),  # KRaftVoters.snapshots.cfg: one snapshot, under smaller bounds
)
