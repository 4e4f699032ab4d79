"""The KRaft RPCs as values: Vote (52), Fetch (1), BeginQuorumEpoch (53), EndQuorumEpoch (54), DescribeQuorum (55),
FetchSnapshot (59), AddRaftVoter (80), RemoveRaftVoter (81), UpdateRaftVoter (82) and the ApiVersions (18) exchange
of an add (KIP-853).

rules §3.4, §3.7–§3.10. Only the fields the rules read are kept. Every request carries a
``correlation_id`` that its response echoes, and every response its ``source`` node: the client handles
only the response it expects from that node (``RequestManager``); other inputs of ``raft.step`` are timers
and client operations, defined here too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from kraftspec.reference.errors import Errors
from kraftspec.reference.raft_log import LogEntry

METADATA_PARTITION = ("__cluster_metadata", 0)
METADATA_TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"


@dataclass(frozen=True, slots=True, kw_only=True)
class VoteRequest:
    """Vote request partition data (v2: ``pre_vote``); ``voter_id`` / ``voter_directory_id`` name the addressee."""

    replica_id: int
    replica_epoch: int
    last_offset_epoch: int
    last_offset: int
    pre_vote: bool = False
    replica_directory_id: Optional[str] = None
    voter_id: Optional[int] = None
    voter_directory_id: Optional[str] = None
    cluster_id: Optional[str] = None
    topic_partition: tuple[str, int] = METADATA_PARTITION
    correlation_id: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class VoteResponse:
    """Vote response: top-level error, partition error, the receiver's epoch/leader/endpoints, ``vote_granted``."""

    source: int
    error: Errors = Errors.NONE
    partition_error: Errors = Errors.NONE
    leader_epoch: int = -1
    leader_id: int = -1
    vote_granted: bool = False
    leader_endpoints: tuple[str, ...] = ()
    correlation_id: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchRequest:
    """Fetch of ``__cluster_metadata-0`` by a replica: position (offset, last fetched epoch) and its epoch."""

    replica_id: int
    current_leader_epoch: int
    fetch_offset: int
    last_fetched_epoch: int
    max_wait_ms: int = 0
    high_watermark: int = -1
    replica_directory_id: Optional[str] = None
    cluster_id: Optional[str] = None
    topic_id: str = METADATA_TOPIC_ID
    topic_partition: tuple[str, int] = METADATA_PARTITION
    correlation_id: int = 0


NO_DIVERGING_EPOCH = (-1, -1)
NO_SNAPSHOT_ID = (-1, -1)
"""``SnapshotId`` (end offset, epoch) of a Fetch answer that asks for no snapshot."""


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchResponse:
    """Fetch response: current leader, HW (-1 none), divergingEpoch (epoch, endOffset) or (-1, -1), snapshotId (end
    offset, epoch) or (-1, -1), records; ``records_offset`` the first record's offset (None: the fetcher's LEO)."""

    source: int
    error: Errors = Errors.NONE
    partition_error: Errors = Errors.NONE
    leader_epoch: int = -1
    leader_id: int = -1
    leader_endpoints: tuple[str, ...] = ()
    high_watermark: int = -1
    log_start_offset: int = 0
    diverging_epoch: tuple[int, int] = NO_DIVERGING_EPOCH
    snapshot_id: tuple[int, int] = NO_SNAPSHOT_ID
    records: tuple[LogEntry, ...] = ()
    records_offset: Optional[int] = None
    correlation_id: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchSnapshotRequest:
    """FetchSnapshot (59, KIP-630) of ``topic_partition`` (None: the request names no partition, no topic or a topic
    without one): the snapshot id (end offset, epoch), the byte ``position`` to read from and at most ``max_bytes``
    (``quorum.fetch.snapshot.max.bytes``)."""

    replica_id: int
    current_leader_epoch: int
    snapshot_id: tuple[int, int]
    position: int
    max_bytes: int
    replica_directory_id: Optional[str] = None
    cluster_id: Optional[str] = None
    topic_partition: Optional[tuple[str, int]] = METADATA_PARTITION
    correlation_id: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchSnapshotResponse:
    """FetchSnapshot response: top-level and partition errors, the current leader, the snapshot id, its ``size`` in
    bytes, the chunk's ``position`` and its length in bytes (``chunk``; the bytes are not modelled). An error answer
    leaves id, size and position at the schema's defaults, 0 (``FetchSnapshotResponse.json``). The chunk from byte 0
    holds the snapshot's first batch: after the header, the ``control_records`` in force at its end (a kraft.version
    1 snapshot's KRaftVersionRecord and VotersRecord, ``RecordsSnapshotWriter.Builder.build``; none at kraft.version
    0)."""

    source: int
    error: Errors = Errors.NONE
    partition_error: Errors = Errors.NONE
    leader_epoch: int = -1
    leader_id: int = -1
    leader_endpoints: tuple[str, ...] = ()
    snapshot_id: tuple[int, int] = (0, 0)
    size: int = 0
    position: int = 0
    chunk: int = 0
    control_records: tuple[Any, ...] = ()
    correlation_id: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class BeginQuorumEpochRequest:
    """The new leader announces itself to a voter (``voter_id`` / ``voter_directory_id`` name the addressee)."""

    leader_id: int
    leader_epoch: int
    leader_endpoints: tuple[str, ...] = ()
    voter_id: Optional[int] = None
    voter_directory_id: Optional[str] = None
    cluster_id: Optional[str] = None
    topic_partition: tuple[str, int] = METADATA_PARTITION
    correlation_id: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class EndQuorumEpochRequest:
    """A resigning leader tells voters to elect a successor, listing the preferred ones first."""

    leader_id: int
    leader_epoch: int
    preferred_successors: tuple[int, ...] = ()
    cluster_id: Optional[str] = None
    topic_partition: tuple[str, int] = METADATA_PARTITION
    correlation_id: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class QuorumEpochResponse:
    """BeginQuorumEpoch / EndQuorumEpoch response (same shape): the receiver's epoch, leader, endpoints."""

    source: int
    api: str
    error: Errors = Errors.NONE
    partition_error: Errors = Errors.NONE
    leader_epoch: int = -1
    leader_id: int = -1
    leader_endpoints: tuple[str, ...] = ()
    correlation_id: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeQuorumRequest:
    """DescribeQuorum for one partition from an admin client ``source`` (the response goes back to it)."""

    source: int = -1
    topic_partition: tuple[str, int] = METADATA_PARTITION
    version: int = 2


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeQuorumResponse:
    """DescribeQuorum response; ``current_voters`` / ``observers`` hold ``raft_leader.ReplicaDescription``;
    ``nodes`` (v2) are the voters' (id, listeners)."""

    error: Errors = Errors.NONE
    partition_error: Errors = Errors.NONE
    error_message: Optional[str] = None
    leader_id: int = -1
    leader_epoch: int = -1
    high_watermark: int = -1
    current_voters: tuple[Any, ...] = ()
    observers: tuple[Any, ...] = ()
    nodes: tuple[tuple[int, tuple[str, ...]], ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateRaftVoterRequest:
    """UpdateRaftVoter (KIP-853) as a kraft.version-0 voter sends it to each new leader it follows: its id, directory,
    listeners and the epoch (``RaftUtil.updateVoterRequest``; the supported kraft.version range is not kept).

    The leader handles it (``handleUpdateVoterRequest``: kraft.version 1 writes it, 0 keeps it in memory); the sender's
    supported kraft.version range is not on this value: a Kafka 4.x node states 0 to 1
    (``raft.SUPPORTED_KRAFT_VERSIONS``).
    """

    voter_id: int
    current_leader_epoch: int
    voter_directory_id: Optional[str] = None
    listeners: tuple[str, ...] = ()
    cluster_id: Optional[str] = None
    correlation_id: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateRaftVoterResponse:
    """UpdateRaftVoter answer (KIP-853, ``RaftUtil.updateVoterResponse``): the error and the receiver's current leader
    (epoch, id, endpoints) as the other quorum responses carry it."""

    source: int
    error: Errors = Errors.NONE
    leader_epoch: int = -1
    leader_id: int = -1
    leader_endpoints: tuple[str, ...] = ()
    correlation_id: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class AddRaftVoterRequest:
    """AddRaftVoter (KIP-853) from an admin client ``source``: the new voter's id, directory id and listeners
    (``NAME://host:port``); ``ack_when_committed`` False answers once the VotersRecord is appended (v1+)."""

    voter_id: int
    voter_directory_id: Optional[str] = None
    listeners: tuple[str, ...] = ()
    ack_when_committed: bool = True
    cluster_id: Optional[str] = None
    source: int = -1
    correlation_id: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class RemoveRaftVoterRequest:
    """RemoveRaftVoter (KIP-853) from an admin client ``source``: the voter's id and directory id."""

    voter_id: int
    voter_directory_id: Optional[str] = None
    cluster_id: Optional[str] = None
    source: int = -1
    correlation_id: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class VoterChangeResponse:
    """An AddRaftVoter (``api`` "AddRaftVoter") or RemoveRaftVoter answer from ``source`` (the leader): error code and
    message (None: null); an auto-joining observer takes the one to its own request (``handleAddVoterResponse``)."""

    api: str
    source: int = -1
    error: Errors = Errors.NONE
    error_message: Optional[str] = None
    correlation_id: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class ApiVersionsRequest:
    """ApiVersions, which the leader sends a voter being added to learn its supported kraft.version range."""

    correlation_id: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class ApiVersionsResponse:
    """ApiVersions answer from ``source``: its error and its ``kraft.version`` supported range (None: not listed)."""

    source: int
    error: Errors = Errors.NONE
    kraft_version_range: Optional[tuple[int, int]] = None
    correlation_id: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class Tick:
    """A poll: expire whichever timer is due at ``now`` and send what is due."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Append:
    """``scheduleAppend`` of data records; only a leader accepts them (appended and flushed at once)."""

    records: tuple[Any, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Resign:
    """``resign(epoch)`` / graceful shutdown of a leader."""

    epoch: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Shutdown:
    """``shutdown(timeoutMs)``: a graceful shutdown that must finish within ``timeout_ms`` (``GracefulShutdown``)."""

    timeout_ms: int


@dataclass(frozen=True, slots=True, kw_only=True)
class UpgradeKRaftVersion:
    """``upgradeKRaftVersion(epoch, version, validateOnly)`` (``RaftClient``, KIP-853): the controller asks the leader of
    ``epoch`` to finalize ``kraft_version``; ``validate_only`` checks without writing (UpdateFeatures' flag)."""

    epoch: int
    kraft_version: int
    validate_only: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class CreateSnapshot:
    """``createSnapshot(snapshotId)`` by the state machine, then the writer frozen with ``size`` bytes (KIP-630)."""

    end_offset: int
    epoch: int
    size: int


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteBeforeSnapshot:
    """``RaftLog.deleteBeforeSnapshot(snapshotId)``: the log's cleaner advances the log start to a frozen snapshot."""

    end_offset: int
    epoch: int


class InvalidSnapshotError(ValueError):
    """A snapshot operation the log refuses (``IllegalArgumentException``, ``OffsetOutOfRangeException``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Send:
    """An output: ``message`` to ``destination`` (a node id)."""

    destination: int
    message: Any


class NotLeaderError(Exception):
    """``NotLeaderException``: appends to a node that is not the leader (§3.2)."""


class InvalidUpdateVersionError(Exception):
    """``InvalidUpdateVersionException`` (an ``ApiException``, INVALID_UPDATE_VERSION): a kraft.version upgrade refused
    (a downgrade, a concurrent upgrade to another version, voters that do not all support it), §3.15."""


class IllegalUpgradeArgumentError(ValueError):
    """``IllegalArgumentException``: an upgrade asked for an epoch after the leader's (``LeaderState.validateEpoch``)
    or for a kraft.version Kafka does not know (``KRaftVersion.fromFeatureLevel``), §3.15."""


class UpgradeStateError(Exception):
    """``IllegalStateException`` from ``LeaderState.maybeAppendUpgradedKRaftVersion``: the in-memory voters are not the
    persisted voters' ids or lack a directory id (§3.15); not an ``ApiException``, so the controller does not map it to an
    error code."""


class InvalidResignError(ValueError):
    """``resign(epoch)`` refused (``IllegalArgumentException``): a later epoch, or not the leader of the current one."""


class RaftFatalError(Exception):
    """A condition on which Kafka's Raft client throws and stops (§3.7, §3.8)."""


class ShutDownError(RaftFatalError):
    """An input to a node whose graceful shutdown has finished: its driver polls it no more
    (``KafkaRaftClientDriver.isRunning`` is false once ``KafkaRaftClient.isRunning`` is)."""
