"""Voter sets of the KRaft quorum under kraft.version 1 (KIP-853), rules §3.14.

A voter set maps each voter id to its node: replica key (id and directory id), listeners and the kraft.version
range it supports. Kafka: ``raft/src/main/java/org/apache/kafka/raft/VoterSet.java`` (``VoterSet``,
``VoterSet.VoterNode``) and ``ReplicaKey.java``. Directory ids are base64 UUID strings; the zero UUID means none.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Optional

from kraftspec.reference import raft_rules
from kraftspec.reference.frozen import FrozenMap
from kraftspec.reference.raft_quorum_file import ZERO_UUID
from kraftspec.reference.raft_state import ReplicaKey

KRAFT_VERSION_0 = 0
KRAFT_VERSION_1 = 1


@dataclass(frozen=True, slots=True, kw_only=True)
class VoterNode:
    """``VoterSet.VoterNode``: a voter's key, its listeners (name -> (host, port)) and supported kraft.version range."""

    voter_key: ReplicaKey
    listeners: FrozenMap[str, tuple[str, int]]
    supported_kraft_version: tuple[int, int]


@dataclass(frozen=True, slots=True, kw_only=True)
class VoterSet:
    """``VoterSet``: voter id -> node. Equal when the maps are equal (``VoterSet.equals``)."""

    voters: FrozenMap[int, VoterNode]


EMPTY_VOTER_SET = VoterSet(voters=FrozenMap())


@dataclass(frozen=True, slots=True, kw_only=True)
class VotersRecord:
    """``VotersRecord`` (control type 6, rules §3.11): the whole voter set, written by a kraft.version 1 leader."""

    voters: tuple[VoterNode, ...]
    version: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class KRaftVersionRecord:
    """``KRaftVersionRecord`` (control type 5, rules §3.11): the finalized kraft.version from its offset on."""

    kraft_version: int
    version: int = 0


def replica_key(replica_id: int, directory_id: Optional[str]) -> ReplicaKey:
    """``ReplicaKey.of``: the zero UUID (``NO_DIRECTORY_ID``) stands for no directory id (§3.14)."""
    return ReplicaKey(id=replica_id, directory_id=None if directory_id in (None, ZERO_UUID) else directory_id)


def voter_node_is_voter(node: VoterNode, key: ReplicaKey) -> bool:
    """``VoterNode.isVoter``: same id, and the same directory id unless the node has none (§3.14).

    A node without directory id (a static kraft.version 0 voter) is matched by id alone.
    """
    if node.voter_key.id != key.id:
        return False
    if node.voter_key.directory_id is not None:
        return node.voter_key.directory_id == key.directory_id
    return True


def is_voter(voters: VoterSet, key: ReplicaKey) -> bool:
    """``VoterSet.isVoter``: the voter with the key's id matches the key (§3.14)."""
    node = voters.voters.get(key.id)
    return node is not None and voter_node_is_voter(node, key)


def is_only_voter(voters: VoterSet, key: ReplicaKey) -> bool:
    """``VoterSet.isOnlyVoter``: the set has one voter and it is ``key`` (a standalone quorum, §3.14)."""
    return len(voters.voters) == 1 and is_voter(voters, key)


def voter_ids(voters: VoterSet) -> frozenset[int]:
    """``VoterSet.voterIds`` (§3.14)."""
    return frozenset(voters.voters)


def voter_keys(voters: VoterSet) -> frozenset[ReplicaKey]:
    """``VoterSet.voterKeys``: the replica keys, directory ids included (§3.14)."""
    return frozenset(node.voter_key for node in voters.voters.values())


def directory_hash_code(directory_id: Optional[str]) -> int:
    """``Optional<Uuid>.hashCode`` of a directory id: 0 when absent, else ``Uuid.hashCode`` of its two 64-bit halves
    (the base64 text's 16 bytes, big-endian), §3.14."""
    if directory_id is None:
        return 0
    raw = base64.urlsafe_b64decode(directory_id + "==")
    return raft_rules.uuid_hash_code(int.from_bytes(raw[:8], "big"), int.from_bytes(raw[8:], "big"))


def voter_keys_in_hash_order(voters: VoterSet) -> tuple[ReplicaKey, ...]:
    """``VoterSet.voterKeys()`` as Java iterates it, which Kafka's messages print: a ``HashSet`` (``Collectors.toSet``,
    16 buckets and up) of the keys taken from the voters map, a ``HashMap<Integer, VoterNode>`` that
    ``VoterSet.fromVotersRecord`` fills in the record's order (``new HashMap<>(size)``); each iterates by bucket of
    the hash code (``Integer.hashCode`` the id, :func:`raft_rules.replica_key_hash_code`), then insertion (§3.14)."""
    nodes = tuple(voters.voters.values())  # the record's order
    by_id = raft_rules.hash_iteration_order(tuple(node.voter_key.id for node in nodes),
                                            raft_rules.hash_map_capacity(len(nodes), len(nodes)))
    keys = tuple(nodes[position].voter_key for position in by_id)
    hashes = tuple(raft_rules.replica_key_hash_code(key.id, directory_hash_code(key.directory_id)) for key in keys)
    return tuple(keys[position] for position in raft_rules.hash_iteration_order(
        hashes, raft_rules.hash_map_capacity(16, len(keys))))


def listeners(voters: VoterSet, voter_id: int) -> FrozenMap[str, tuple[str, int]]:
    """``VoterSet.listeners``: a voter's endpoints, empty for a non-voter (§3.14)."""
    node = voters.voters.get(voter_id)
    return FrozenMap() if node is None else node.listeners


def voter_node(voters: VoterSet, voter_id: int, listener: str) -> Optional[tuple[int, str, int]]:
    """``VoterSet.voterNode``: (id, host, port) of a voter on ``listener``, None if not a voter or not listening (§3.14)."""
    address = listeners(voters, voter_id).get(listener)
    return None if address is None else (voter_id, address[0], address[1])


def endpoint_strings(voter_listeners: FrozenMap[str, tuple[str, int]]) -> tuple[str, ...]:
    """A voter's listeners as the Raft messages carry them, ``NAME://host:port`` by listener name (§3.14)."""
    return tuple(f"{name}://{host}:{port}" for name, (host, port) in sorted(voter_listeners.items()))


def listeners_of(endpoints: tuple[str, ...]) -> FrozenMap[str, tuple[str, int]]:
    """The inverse of :func:`endpoint_strings`: ``NAME://host:port`` strings as listener name -> (host, port)."""
    parsed: dict[str, tuple[str, int]] = {}
    for endpoint in endpoints:
        name, _, address = endpoint.partition("://")
        host, _, port = address.rpartition(":")
        parsed[name] = (host, int(port))
    return FrozenMap(parsed)


def voter_node_needs_update(voters: VoterSet, updated: VoterNode) -> bool:
    """``VoterSet.voterNodeNeedsUpdate``: ``updated`` is a voter (by key) whose node differs from the stored one (§3.14)."""
    node = voters.voters.get(updated.voter_key.id)
    return node is not None and voter_node_is_voter(node, updated.voter_key) and node != updated


def add_voter(voters: VoterSet, node: VoterNode) -> Optional[VoterSet]:
    """``VoterSet.addVoter``: a new set with ``node``, None when its id is already a voter (any directory id, §3.14)."""
    if node.voter_key.id in voters.voters:
        return None
    return VoterSet(voters=voters.voters.set(node.voter_key.id, node))


def remove_voter(voters: VoterSet, key: ReplicaKey) -> Optional[VoterSet]:
    """``VoterSet.removeVoter``: a new set without ``key``; None unless its key equals a voter's exactly and another
    voter remains (a voter set is never emptied, §3.14)."""
    node = voters.voters.get(key.id)
    if node is not None and node.voter_key == key and len(voters.voters) > 1:
        return VoterSet(voters=voters.voters.remove(key.id))
    return None


def update_voter(voters: VoterSet, node: VoterNode) -> Optional[VoterSet]:
    """``VoterSet.updateVoter``: replaces the voter ``node``'s key matches (``VoterNode.isVoter``), else None (§3.14)."""
    old = voters.voters.get(node.voter_key.id)
    if old is not None and voter_node_is_voter(old, node.voter_key):
        return VoterSet(voters=voters.voters.set(node.voter_key.id, node))
    return None


def update_voter_ignoring_directory_id(voters: VoterSet, node: VoterNode) -> Optional[VoterSet]:
    """``VoterSet.updateVoterIgnoringDirectoryId``: replaces the voter with ``node``'s id whatever its directory id;
    used at kraft.version 0, before the upgrade writes directory ids (§3.14)."""
    if node.voter_key.id in voters.voters:
        return VoterSet(voters=voters.voters.set(node.voter_key.id, node))
    return None


def has_overlapping_majority(this: VoterSet, that: VoterSet) -> bool:
    """``VoterSet.hasOverlappingMajority``: each set has at most one replica key the other lacks, so every majority of
    one meets every majority of the other (KIP-853's one change at a time, §3.14)."""
    this_keys, that_keys = voter_keys(this), voter_keys(that)
    if len(this_keys - that_keys) > 1:
        return False
    return len(that_keys - this_keys) <= 1


def supports_version(voters: VoterSet, kraft_version: int) -> bool:
    """``VoterSet.supportsVersion``: every voter's supported range holds ``kraft_version`` (§3.14)."""
    return all(low <= kraft_version <= high for low, high in
               (node.supported_kraft_version for node in voters.voters.values()))


def majority_size(voters: VoterSet) -> int:
    """The size of a majority of the voter set, ``floor(n/2) + 1`` as ``EpochElection`` counts it (§3.5, §3.14)."""
    return raft_rules.majority(len(voters.voters))


def from_voters_record(record: VotersRecord) -> VoterSet:
    """``VoterSet.fromVotersRecord``: each voter by id; a repeated id keeps the last entry (Kafka's HashMap.put, §3.14).

    The record's voter ids are meant to be unique: Kafka's writer (``toVotersRecord``) writes one per voter.
    """
    nodes: dict[int, VoterNode] = {}
    for node in record.voters:
        nodes[node.voter_key.id] = node
    return VoterSet(voters=FrozenMap(nodes))


def to_voters_record(voters: VoterSet, version: int = 0) -> VotersRecord:
    """``VoterSet.toVotersRecord``: one entry per voter (here in ascending id order, §3.14)."""
    return VotersRecord(version=version, voters=tuple(voters.voters[i] for i in sorted(voters.voters)))


def is_reconfig_supported(kraft_version: int) -> bool:
    """``KRaftVersion.isReconfigSupported``: kraft.version 1 or later writes and honours VotersRecords (§3.14)."""
    return kraft_version != KRAFT_VERSION_0

