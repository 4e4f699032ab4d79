"""Voter-set changes explored under ``KRaftVoters.cfg``'s bounds, in the spec's vocabulary.

Each successor calls the reference (``kraftspec.reference.raft_reconfig``, ``raft_voter_history``, ``raft_voters``,
``raft_rules``) with one choice of the spec action's parameters: ``HandleAddVoterRequest(r)`` ~
``handle_add_voter_request``, ``HandleAddVoterApiVersions(caughtUp)`` ~ ``handle_add_voter_api_versions`` (ApiVersions
answered without error, kraft.version range 0..1), ``HandleRemoveVoterRequest(r)`` ~ ``handle_remove_voter_request``,
``HandleUpdateVoterRequest(r)`` ~ ``handle_update_voter_request`` (the voter's own listeners and range again),
``MaybeAppendUpgradedKraftVersion`` ~ ``maybe_append_upgraded_kraft_version`` (to kraft.version 1 in the leader's
epoch, from the persisted version and voter set as ``KafkaRaftClient.upgradeKRaftVersion`` passes them),
``NextHighWatermark(m)`` ~ ``next_high_watermark`` with a majority at ``m`` then ``voter_change_committed`` and
``leader_resigns_after_removal``, ``TruncateControlRecords(end)`` ~ ``truncate_control_records`` (at a batch's
start: Kafka truncates whole batches). Appended records are read back with ``read_batch``; the bootstrap checkpoint is
``load_snapshot`` at -1; static voters are ``VoterSet.fromInetSocketAddresses``'s (no directory id, kraft.version
0..0). The environment:
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
from kraftspec.reference.raft_rules import next_high_watermark
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
    """One node's control-record state and log (with its batches' first offsets), high watermark, leadership, pending
    change and upgrade, with the counters."""

    control: vh.ControlRecordState
    log: tuple[object, ...]  # LEADER_CHANGE, DATA, a KRaftVersionRecord or a VotersRecord per offset
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


def appended(state: ExploredState, *batch: object) -> ExploredState:
    """The state with ``batch`` written at the log end and read back by the control-record state machine (which skips
    the records other than KRaftVersionRecord and VotersRecord; a data batch has no control records)."""
    offset = len(state.log)
    records = () if batch == (DATA,) else batch
    return replace(state, log=state.log + batch, batch_starts=state.batch_starts | {offset},
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
        start = ExploredState(control=control, log=(), batch_starts=frozenset(), hw=0, epoch_start=0, leader_hwm=None,
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
    room = len(state.log) < int(constants["MaxLog"])
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
                                   pending=Pending("remove", r, len(state.log))))
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
                           replace(written, pending=replace(pending, offset=len(state.log))))
            elif change.append is None:
                yield Step("HandleAddVoterApiVersions", call, replace(state, pending=None))
    upgrade = upgraded(state, constants)
    if upgrade is not None:
        yield upgrade
    current = -1 if state.leader_hwm is None else state.leader_hwm
    for m in range(1, len(state.log) + 1):
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
    if not upgrade.records or len(state.log) + len(upgrade.records) > int(constants["MaxLog"]):
        return None
    return Step("MaybeAppendUpgradedKraftVersion", "maybe_append_upgraded_kraft_version(1)",
                replace(appended(state, *upgrade.records), volatile_voters=None, requested_kraft_version=1))


def successors(state: ExploredState, constants: Mapping[str, TlaValue]) -> Iterator[Step[ExploredState]]:
    """Every action of the spec's ``Next`` with every parameter choice, as reference calls."""
    local = int(constants["Local"])
    if state.is_leader:
        yield from leader_successors(state, constants)
        if len(state.log) < int(constants["MaxLog"]):
            yield Step("ClientAppend", "a data batch appended", appended(state, DATA))
        yield Step("LoseLeadership", "another leader elected",
                   replace(state, is_leader=False, leader_hwm=None, pending=None, volatile_voters=None,
                           requested_kraft_version=None))
        if state.pending is not None:
            yield Step("PendingOperationExpires", "the pending operation timed out", replace(state, pending=None))
        return
    for end in sorted(start for start in state.batch_starts if start >= state.hw):
        yield Step("TruncateControlRecords", f"truncate_control_records({end})",
                   replace(state, log=state.log[:end], batch_starts=frozenset(s for s in state.batch_starts if s < end),
                           control=vh.truncate_control_records(state.control, end)))
    voters = vh.last_voter_set(state.control)
    batch = start_of_epoch(state, local)
    if (state.elections < int(constants["MaxElections"]) and len(state.log) + len(batch) <= int(constants["MaxLog"])
            and rv.is_voter(voters, key(local))):
        volatile = rc.volatile_voters_at_epoch_start(voters, node(local), vh.last_kraft_version(state.control))
        yield Step("BecomeLeader", "elected; start_of_epoch_control_records", replace(
            appended(state, *batch), epoch_start=len(state.log), is_leader=True, leader_hwm=None,
            volatile_voters=volatile, elections=state.elections + 1))


def named(voters: rv.VoterSet) -> frozenset[int]:
    """The voters ``voters`` names with a directory id."""
    return frozenset(i for i, voter in voters.voters.items() if voter.voter_key.directory_id is not None)


def project(state: ExploredState) -> dict[str, TlaValue]:
    """The spec's variables; each VotersRecord's set is the one ``voter_set_at_offset`` reads there, its voters and
    those named with a directory id; the in-memory voters are those known with a directory id."""
    log = []
    for offset, entry in enumerate(state.log):
        first = offset in state.batch_starts
        if entry in (LEADER_CHANGE, DATA):
            log.append(record(type=entry, voters=frozenset(), directoryIds=frozenset(), batchStart=first))
        elif isinstance(entry, rv.KRaftVersionRecord):
            log.append(record(type="KRaftVersion", voters=frozenset(), directoryIds=frozenset(), batchStart=first))
        else:
            voters = vh.voter_set_at_offset(state.control, offset)
            ids, named_ids = (frozenset(), frozenset()) if voters is None else (rv.voter_ids(voters), named(voters))
            log.append(record(type="Voters", voters=ids, directoryIds=named_ids, batchStart=first))
    pending = state.pending or Pending("none", 0)
    return {
        "bootstrapVersion": vh.kraft_version_at_offset(state.control, -1),
        "log": tuple(log),
        "hw": state.hw,
        "epochStart": state.epoch_start,
        "role": "Leader" if state.is_leader else "Follower",
        "pending": record(kind=pending.kind, voter=pending.voter, offset=pending.offset),
        "volatileVoters": frozenset() if state.volatile_voters is None else named(state.volatile_voters),
        "requestedVersion": -1 if state.requested_kraft_version is None else state.requested_kraft_version,
        "changes": state.changes,
        "elections": state.elections,
    }


MODEL: AgreementModel[ExploredState] = AgreementModel(
    component="voters",
    spec_module="KRaftVoters",
    initial_states=initial_states,
    successors=successors,
    project=project,
)
