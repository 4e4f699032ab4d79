"""AddRaftVoter, RemoveRaftVoter and UpdateRaftVoter on the leader: the checks before a voter change, rules §3.15.

Each function answers what Kafka 4.3 answers: the error code and message of the response (a voter set's keys in
Java's hash-set order, other collections ascending, addresses as unresolved ones), or the voter set the leader appends
as a VotersRecord. Kafka: ``KafkaRaftClient.handleAddVoterRequest`` (and Remove, Update) for the request's own
validity, then ``raft/.../internals/AddVoterHandler.java``, ``RemoveVoterHandler.java``, ``UpdateVoterHandler.java``
over ``LeaderState`` and ``KRaftControlRecordStateMachine``. KIP-853 gives the same order of checks; Kafka answers
REQUEST_TIMED_OUT at once where the KIP would wait (KAFKA-17147).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from kraftspec.reference.errors import Errors
from kraftspec.reference.frozen import FrozenMap
from kraftspec.reference.raft_messages import IllegalUpgradeArgumentError, InvalidUpdateVersionError, NotLeaderError, \
    UpgradeStateError
from kraftspec.reference.raft_state import ReplicaKey
from kraftspec.reference.raft_voter_history import ControlRecordState, last_kraft_version, last_voter_set, \
    last_voter_set_entry
from kraftspec.reference.raft_voters import (
    KRaftVersionRecord,
    VoterNode,
    VoterSet,
    VotersRecord,
    add_voter,
    is_reconfig_supported,
    is_voter,
    remove_voter,
    supports_version,
    to_voters_record,
    update_voter,
    update_voter_ignoring_directory_id,
    voter_ids,
    voter_keys,
    voter_keys_in_hash_order,
    voter_node_needs_update,
)

AN_HOUR_MS = 3_600_000


@dataclass(frozen=True, slots=True, kw_only=True)
class ReconfigLeader:
    """What the handlers read of the leader: its epoch, the control-record state, the high watermark (None until a
    majority has the epoch's first offset: the previous leaders are fenced), whether an add or remove is still
    pending, and the in-memory voters of a kraft.version 0 leader (``LeaderState.volatileVoters``)."""

    epoch: int
    control: ControlRecordState
    high_watermark: Optional[int]
    operation_pending: bool = False
    volatile_voters: Optional[VoterSet] = None
    default_listener: str = "CONTROLLER"


@dataclass(frozen=True, slots=True, kw_only=True)
class ReconfigResponse:
    """An AddRaftVoter / RemoveRaftVoter / UpdateRaftVoter answer: error code and message (Update has no message)."""

    error: Errors
    message: Optional[str] = None


@dataclass(frozen=True, slots=True, kw_only=True)
class VoterChange:
    """A handler's outcome: the response sent now (None while the change waits to commit or, for Add, for the new
    voter's ApiVersions), the voter set appended as a VotersRecord, and a kraft.version 0 leader's new in-memory set."""

    response: Optional[ReconfigResponse] = None
    append: Optional[VoterSet] = None
    volatile_voters: Optional[VoterSet] = None


def _key_text(key: ReplicaKey) -> str:
    return f"ReplicaKey(id={key.id}, directoryId={key.directory_id or '<undefined>'})"


def _keys_text(voters: VoterSet) -> str:
    """``voters.voterKeys()`` in a message: a Java ``HashSet`` printed in its iteration order
    (:func:`raft_voters.voter_keys_in_hash_order`; ``AddVoterHandler``, ``RemoveVoterHandler``)."""
    return "[" + ", ".join(_key_text(key) for key in voter_keys_in_hash_order(voters)) + "]"


def _endpoints_text(voter_listeners: FrozenMap[str, tuple[str, int]]) -> str:
    shown = ", ".join(f"ListenerName({name})={host}/<unresolved>:{port}"
                      for name, (host, port) in sorted(voter_listeners.items()))
    return f"Endpoints(endpoints={{{shown}}})"


def _committed_voters(leader: ReconfigLeader, what: str) -> tuple[Optional[ReconfigResponse], Optional[VoterSet]]:
    """The checks Add and Remove share (``AddVoterHandler`` steps 1-3): nothing pending, the epoch committed,
    kraft.version 1, the latest VotersRecord committed. Returns a refusal or the committed voter set."""
    # Kafka runs one voter change at a time: a pending add or remove is answered at once.
    if leader.operation_pending:
        return ReconfigResponse(error=Errors.REQUEST_TIMED_OUT, message="Request timed out waiting for leader to "
                                "handle previous voter change request"), None
    # Until the leader's epoch commits it has not fenced earlier leaders, which may still be changing the voters.
    if leader.high_watermark is None:
        return ReconfigResponse(error=Errors.REQUEST_TIMED_OUT, message="Request timed out waiting for leader to "
                                "establish HWM and fence previous voter changes"), None
    kraft_version = last_kraft_version(leader.control)
    # Under kraft.version 0 the voters are static configuration: no VotersRecord may change them.
    if not is_reconfig_supported(kraft_version):
        return ReconfigResponse(error=Errors.UNSUPPORTED_VERSION, message=f"Cluster doesn't support {what} voter "
                                f"because the kraft.version feature is {kraft_version}"), None
    entry = last_voter_set_entry(leader.control)
    # A new change starts only from a committed voter set, so consecutive sets differ by one voter.
    if entry is None or entry[0] >= leader.high_watermark:
        at = "Optional.empty" if entry is None else f"Optional[{entry[0]}]"
        return ReconfigResponse(error=Errors.REQUEST_TIMED_OUT, message="Request timed out waiting for voters to "
                                f"commit the latest voter change at {at} with HWM {leader.high_watermark}"), None
    return None, entry[1]


def handle_add_voter_request(leader: ReconfigLeader, voter_key: ReplicaKey,
                             voter_listeners: FrozenMap[str, tuple[str, int]]) -> Optional[ReconfigResponse]:
    """``KafkaRaftClient.handleAddVoterRequest`` and ``AddVoterHandler.handleAddVoterRequest`` up to the ApiVersions
    request: the refusal, or None when the leader goes on to ask the new voter its kraft.version range (§3.15)."""
    # A voter is added with its directory id, which kraft.version 1 voter sets record.
    if voter_key.directory_id is None:
        return ReconfigResponse(error=Errors.INVALID_REQUEST, message="Add voter request didn't include a valid voter")
    # The leader must reach the new voter on the listener it uses itself.
    if leader.default_listener not in voter_listeners:
        return ReconfigResponse(error=Errors.INVALID_REQUEST, message="Add voter request didn't include the endpoint "
                                f"({_endpoints_text(voter_listeners)}) for the default listener "
                                f"ListenerName({leader.default_listener})")
    refusal, voters = _committed_voters(leader, "adding")
    if refusal is not None or voters is None:
        return refusal
    # A voter id is added once: replacing a voter's directory takes a removal first.
    if voter_key.id in voters.voters:
        return ReconfigResponse(error=Errors.DUPLICATE_VOTER, message=f"The voter id for {_key_text(voter_key)} is "
                                f"already part of the set of voters {_keys_text(voters)}.")
    return None


def new_voter_not_ready(voter_key: ReplicaKey) -> ReconfigResponse:
    """``AddVoterHandler.handleAddVoterRequest``: the ApiVersions request cannot go to the new voter now (a request
    outstanding or backing off there), so the add is refused at once (§3.15)."""
    return ReconfigResponse(error=Errors.REQUEST_TIMED_OUT,
                            message=f"New voter {_key_text(voter_key)} is not ready to receive requests")


def is_replica_caught_up(last_caught_up_timestamp: int, last_fetch_timestamp: int, now: int) -> bool:
    """``LeaderState.isReplicaCaughtUp``: the observer has caught up with the leader's end offset once and fetched
    within the last hour (§3.15). Unknown timestamps are -1."""
    return last_caught_up_timestamp > 0 and last_fetch_timestamp > 0 and last_fetch_timestamp > now - AN_HOUR_MS


def handle_add_voter_api_versions(leader: ReconfigLeader, voter_key: ReplicaKey,
                                  voter_listeners: FrozenMap[str, tuple[str, int]], api_error: Errors,
                                  supported: Optional[tuple[int, int]], caught_up: bool) -> VoterChange:
    """``AddVoterHandler.handleApiVersionsResponse``: the new voter's ApiVersions answer decides; the voter set with
    it is appended and the response waits for that record to commit (§3.15)."""
    # An unreachable or failing new voter aborts the operation.
    if api_error != Errors.NONE:
        return VoterChange(response=ReconfigResponse(error=Errors.REQUEST_TIMED_OUT, message="Aborted add voter "
                           f"operation for since API_VERSIONS returned an error {api_error.name}"))
    kraft_version = last_kraft_version(leader.control)
    # The new voter must support the finalized kraft.version.
    if supported is None or not supported[0] <= kraft_version <= supported[1]:
        shown = "(min: 0, max: 0)" if supported is None else f"(min: {supported[0]}, max: {supported[1]}"
        return VoterChange(response=ReconfigResponse(error=Errors.INVALID_REQUEST, message="Aborted add voter "
                           f"operation for {_key_text(voter_key)} since the kraft.version range {shown} doesn't "
                           f"support the finalized version {kraft_version}"))
    # A lagging voter would hold back the high watermark of the larger set.
    if not caught_up:
        return VoterChange(response=ReconfigResponse(error=Errors.REQUEST_TIMED_OUT, message="Aborted add voter "
                           f"operation for {_key_text(voter_key)} since it is lagging behind"))
    new_voters = add_voter(last_voter_set(leader.control), VoterNode(voter_key=voter_key, listeners=voter_listeners,
                                                                      supported_kraft_version=supported))
    if new_voters is None:
        raise ValueError(f"Unable to add {_key_text(voter_key)} to the set of voters")
    return VoterChange(append=new_voters)


def handle_remove_voter_request(leader: ReconfigLeader, voter_key: ReplicaKey) -> VoterChange:
    """``KafkaRaftClient.handleRemoveVoterRequest`` and ``RemoveVoterHandler.handleRemoveVoterRequest``: the refusal,
    or the voter set without ``voter_key`` to append (the response waits for its commit, §3.15)."""
    # A voter is removed by its full key, directory id included.
    if voter_key.directory_id is None:
        return VoterChange(response=ReconfigResponse(error=Errors.INVALID_REQUEST,
                                                     message="Remove voter request didn't include a valid voter"))
    refusal, voters = _committed_voters(leader, "removing")
    if refusal is not None or voters is None:
        return VoterChange(response=refusal)
    new_voters = remove_voter(voters, voter_key)
    # Only a voter of the committed set can go, and never the last one.
    if new_voters is None:
        return VoterChange(response=ReconfigResponse(error=Errors.VOTER_NOT_FOUND, message=f"Cannot remove voter "
                           f"{_key_text(voter_key)} from the set of voters {_keys_text(voters)}"))
    return VoterChange(append=new_voters)


def handle_update_voter_request(leader: ReconfigLeader, voter_key: ReplicaKey,
                                voter_listeners: FrozenMap[str, tuple[str, int]],
                                supported: tuple[int, int]) -> VoterChange:
    """``KafkaRaftClient.handleUpdateVoterRequest`` and ``UpdateVoterHandler.handleUpdateVoterRequest``: a voter's
    new listeners and kraft.version range; under kraft.version 1 appended as a VotersRecord, under 0 kept in the
    leader's memory until the upgrade writes it (§3.15). The response carries no message."""
    def refused(error: Errors) -> VoterChange:
        return VoterChange(response=ReconfigResponse(error=error))

    # The updated voter names its directory id.
    if voter_key.directory_id is None:
        return refused(Errors.INVALID_REQUEST)
    # It must still listen on the leader's default listener.
    if leader.default_listener not in voter_listeners:
        return refused(Errors.INVALID_REQUEST)
    # A range with a negative bound or max below min is malformed.
    if supported[0] < 0 or supported[1] < 0 or supported[1] < supported[0]:
        return refused(Errors.INVALID_REQUEST)
    # One voter change at a time.
    if leader.operation_pending:
        return refused(Errors.REQUEST_TIMED_OUT)
    # The previous leaders are fenced only once the epoch commits.
    if leader.high_watermark is None:
        return refused(Errors.REQUEST_TIMED_OUT)
    kraft_version = last_kraft_version(leader.control)
    if is_reconfig_supported(kraft_version):
        entry = last_voter_set_entry(leader.control)
        # Under kraft.version 1 the update starts from a committed voter set.
        voters = None if entry is None or entry[0] >= leader.high_watermark else entry[1]
    else:
        # Under kraft.version 0 the leader's in-memory voters are updated; none yet means the upgrade is not ready.
        voters = leader.volatile_voters
    if voters is None:
        return refused(Errors.REQUEST_TIMED_OUT)
    # The voter must still support the finalized kraft.version.
    if not supported[0] <= kraft_version <= supported[1]:
        return refused(Errors.INVALID_REQUEST)
    node = VoterNode(voter_key=voter_key, listeners=voter_listeners, supported_kraft_version=supported)
    updated = update_voter(voters, node) if is_reconfig_supported(kraft_version) else \
        update_voter_ignoring_directory_id(voters, node)
    # Only a voter can be updated.
    if updated is None:
        return refused(Errors.VOTER_NOT_FOUND)
    if is_reconfig_supported(kraft_version):
        return VoterChange(response=ReconfigResponse(error=Errors.NONE), append=updated)
    return VoterChange(response=ReconfigResponse(error=Errors.NONE), volatile_voters=updated)


def voter_change_committed(high_watermark: Optional[int], last_offset: int) -> bool:
    """``AddVoterHandler.highWatermarkUpdated`` / ``RemoveVoterHandler.highWatermarkUpdated``: the VotersRecord at
    ``last_offset`` is committed once the high watermark passes it; then the response is NONE (§3.15)."""
    return high_watermark is not None and high_watermark > last_offset


def leader_resigns_after_removal(committed: VoterSet, local_key: ReplicaKey) -> bool:
    """``RemoveVoterHandler.highWatermarkUpdated``: a leader that removed itself resigns once the new set commits
    (§3.15)."""
    return not is_voter(committed, local_key)


def volatile_voters_at_epoch_start(voters_at_epoch_start: VoterSet, local: VoterNode,
                                   kraft_version_at_epoch_start: int) -> Optional[VoterSet]:
    """``LeaderState``'s constructor: a kraft.version 0 leader keeps in memory the static voters with its own node
    (listeners, directory id) in place, for UpdateRaftVoter and the upgrade to write; none at kraft.version 1 (§3.15)."""
    if is_reconfig_supported(kraft_version_at_epoch_start):
        return None
    updated = update_voter_ignoring_directory_id(voters_at_epoch_start, local)
    if updated is None:
        raise ValueError(f"Unable to update voter set with the latest leader information {_key_text(local.voter_key)}")
    return updated


def start_of_epoch_control_records(voters_at_epoch_start: VoterSet, voters_offset_at_epoch_start: Optional[int],
                                   kraft_version_at_epoch_start: int,
                                   local: VoterNode) -> tuple[KRaftVersionRecord | VotersRecord, ...]:
    """``LeaderState.appendStartOfEpochControlRecords``: the records after the LeaderChange record in the new leader's
    first batch. At kraft.version 1, a KRaftVersionRecord and the voter set with the leader's own node, when no
    VotersRecord is in the log yet (the set is the bootstrap checkpoint's, at -1) or its node changed (§3.15)."""
    if not is_reconfig_supported(kraft_version_at_epoch_start):
        return ()
    # A kraft.version 1 partition always has a voter set in its log or checkpoint.
    if voters_offset_at_epoch_start is None:
        raise ValueError(f"The kraft.version is {kraft_version_at_epoch_start} but there is no voter set in the log "
                         "or checkpoint")
    if voters_offset_at_epoch_start != -1 and not voter_node_needs_update(voters_at_epoch_start, local):
        return ()
    updated = update_voter(voters_at_epoch_start, local)
    if updated is None:
        raise ValueError(f"Update expected for leader node {_key_text(local.voter_key)}")
    return (KRaftVersionRecord(kraft_version=kraft_version_at_epoch_start), to_voters_record(updated))


@dataclass(frozen=True, slots=True, kw_only=True)
class KRaftUpgrade:
    """``maybeAppendUpgradedKRaftVersion``'s outcome: ``upgraded`` (False: nothing to do, the version is already the
    one asked for) and the control records appended as one batch (none when only validated)."""

    upgraded: bool
    records: tuple[KRaftVersionRecord | VotersRecord, ...] = ()


def _version_text(kraft_version: int) -> str:
    return f"KRAFT_VERSION_{kraft_version}"


def maybe_append_upgraded_kraft_version(leader_epoch: int, requested_kraft_version: Optional[int],
                                        volatile_voters: Optional[VoterSet], epoch: int, new_version: int,
                                        persisted_version: int, persisted_voters: VoterSet,
                                        validate_only: bool) -> KRaftUpgrade:
    """``LeaderState.maybeAppendUpgradedKRaftVersion`` (Kafka 4.3): the leader of ``epoch`` upgrades kraft.version 0 to
    1 once every voter has sent it UpdateRaftVoter (its in-memory voters, all with a directory id and supporting 1),
    appending a KRaftVersionRecord and the in-memory voter set; refusals raise Kafka's exceptions (§3.15)."""
    # A stale epoch is a leader that has moved on; a later one is a caller's error (``validateEpoch``).
    if epoch < leader_epoch:
        raise NotLeaderError(f"Upgrade kraft version failed because the given epoch {epoch} is stale. Current leader "
                             f"epoch is {leader_epoch}")
    if epoch > leader_epoch:
        raise IllegalUpgradeArgumentError(f"Attempt to append from epoch {epoch} which is larger than the current "
                                          f"epoch of {leader_epoch}")
    # An upgrade already asked for this epoch: the same version is a no-op, another one a conflict.
    if requested_kraft_version is not None:
        if requested_kraft_version == new_version:
            return KRaftUpgrade(upgraded=False)
        raise InvalidUpdateVersionError(f"Invalid concurrent upgrade of kraft.version from version "
                                        f"Version[kraftVersion={_version_text(requested_kraft_version)}] to "
                                        f"{_version_text(new_version)}")
    if persisted_version == new_version:
        return KRaftUpgrade(upgraded=False)
    # kraft.version only moves up: the voters' records cannot be taken back.
    if persisted_version > new_version:
        raise InvalidUpdateVersionError(f"Invalid upgrade of kraft.version from version "
                                        f"{_version_text(persisted_version)} to {_version_text(new_version)} because "
                                        "the new version is a downgrade")
    # Only a kraft.version 0 leader keeps the voters in memory, so only 0 -> 1 is an upgrade.
    if volatile_voters is None:
        raise InvalidUpdateVersionError(f"Invalid upgrade of kraft.version from version "
                                        f"{_version_text(persisted_version)} to {_version_text(new_version)}")
    if voter_ids(volatile_voters) != voter_ids(persisted_voters):
        raise UpgradeStateError(f"Unable to update kraft.version to {_version_text(new_version)} due to missing "
                                f"voters {sorted(voter_ids(volatile_voters))} compared to "
                                f"{sorted(voter_ids(persisted_voters))}")
    # Every voter must run a release that supports the new version: it said so in its UpdateRaftVoter.
    if not supports_version(volatile_voters, new_version):
        raise InvalidUpdateVersionError(f"Invalid upgrade of kraft.version to {_version_text(new_version)} because "
                                        "not all of the voters support it")
    # A kraft.version 1 voter set names each voter's directory: every voter must have sent its own.
    if any(key.directory_id is None for key in voter_keys(volatile_voters)):
        raise UpgradeStateError(f"Directory id must be known for all of the voters: {_keys_text(volatile_voters)}")
    if validate_only:
        return KRaftUpgrade(upgraded=True)
    records: tuple[KRaftVersionRecord | VotersRecord, ...] = (KRaftVersionRecord(kraft_version=new_version),)
    if volatile_voters != persisted_voters:
        records += (to_voters_record(volatile_voters),)
    return KRaftUpgrade(upgraded=True, records=records)
