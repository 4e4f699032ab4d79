"""The ``quorum-state`` file: one JSON line holding the election state (rules §3.3).

Source: ``FileQuorumStateStore.java`` and ``QuorumStateData.json`` (versions 0–1, no tagged fields).
``data_version`` 0 (kraft.version 0) also holds ``clusterId`` (written ""), ``appliedOffset`` (0) and
``currentVoters``; version 1 (kraft.version 1) instead holds ``votedDirectoryId``. Every key of the
file's version is mandatory when reading (the generated JSON converter); keys of the other version are
ignored. Errors name the file and the offending key.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any, Optional

from kraftspec.reference.raft_state import NO_LEADER, ElectionState, ReplicaKey

FILE_NAME = "quorum-state"
ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"
SUPPORTED_VERSIONS = (0, 1)
_KEYS = {0: ("clusterId", "leaderId", "leaderEpoch", "votedId", "appliedOffset", "currentVoters"),
         1: ("leaderId", "leaderEpoch", "votedId", "votedDirectoryId")}


class QuorumStateFileError(ValueError):
    """The quorum-state file cannot be read: the message names the file and the offending key."""


@dataclass(frozen=True, slots=True, kw_only=True)
class QuorumStateData:
    """What one quorum-state file holds; ``current_voters`` only in version 0, the directory only in 1."""

    data_version: int
    leader_id: int = NO_LEADER
    leader_epoch: int = -1
    voted_id: int = -1
    voted_directory_id: Optional[str] = None
    current_voters: Optional[tuple[int, ...]] = None

    def election_state(self) -> ElectionState:
        """``ElectionState.fromQuorumStateData``: a vote without directory id matches any directory."""
        voted = ReplicaKey(id=self.voted_id, directory_id=self.voted_directory_id) if self.voted_id >= 0 else None
        return ElectionState(epoch=self.leader_epoch, leader_id=self.leader_id, voted_key=voted)


def write_quorum_state(election: ElectionState, kraft_version: int, voters: frozenset[int]) -> str:
    """``FileQuorumStateStore.writeElectionState``: the single JSON line for ``data_version`` = kraft.version."""
    if kraft_version not in SUPPORTED_VERSIONS:
        raise QuorumStateFileError(f"{FILE_NAME}: unsupported kraft.version {kraft_version}")
    voted = election.voted_key
    data: dict[str, Any] = {"leaderId": election.leader_id, "leaderEpoch": election.epoch,
                            "votedId": voted.id if voted is not None else -1}
    if kraft_version == 0:
        data = {"clusterId": "", **data, "appliedOffset": 0,
                "currentVoters": [{"voterId": v} for v in sorted(voters)]}
    else:
        data["votedDirectoryId"] = (voted.directory_id if voted is not None and voted.directory_id else ZERO_UUID)
    data["data_version"] = kraft_version
    return json.dumps(data, separators=(",", ":"))


def _int(data: dict[str, Any], key: str, file_name: str) -> int:
    value = data[key]
    if not isinstance(value, int) or isinstance(value, bool):
        raise QuorumStateFileError(f"{file_name}: key '{key}' must be an integer, found {value!r}")
    return value


def _directory_id(data: dict[str, Any], file_name: str) -> Optional[str]:
    value = data["votedDirectoryId"]
    if not isinstance(value, str) or len(value) != 22:
        raise QuorumStateFileError(f"{file_name}: key 'votedDirectoryId' must be a 22-character UUID, found {value!r}")
    try:
        base64.urlsafe_b64decode(value + "==")
    except ValueError as exc:
        raise QuorumStateFileError(f"{file_name}: key 'votedDirectoryId' is not base64url: {value!r}") from exc
    return None if value == ZERO_UUID else value


def _voters(data: dict[str, Any], file_name: str) -> Optional[tuple[int, ...]]:
    value = data["currentVoters"]
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, dict) and "voterId" in v for v in value):
        raise QuorumStateFileError(f"{file_name}: key 'currentVoters' must be a list of {{\"voterId\": n}}")
    return tuple(_int(v, "voterId", file_name) for v in value)


def read_quorum_state(text: str, file_name: str = FILE_NAME) -> QuorumStateData:
    """``FileQuorumStateStore.readElectionState``: parse and validate one quorum-state file (§3.3)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise QuorumStateFileError(f"{file_name}: not valid JSON: {exc.msg}") from exc
    if not isinstance(data, dict):
        raise QuorumStateFileError(f"{file_name}: expected a JSON object")
    if "data_version" not in data:
        raise QuorumStateFileError(f"{file_name}: key 'data_version' is missing")
    version = _int(data, "data_version", file_name)
    if version not in SUPPORTED_VERSIONS:
        raise QuorumStateFileError(f"{file_name}: key 'data_version' is {version}, supported versions are 0 to 1")
    for key in _KEYS[version]:
        if key not in data:
            raise QuorumStateFileError(f"{file_name}: key '{key}' is mandatory in version {version}")
    if version == 0:
        if not isinstance(data["clusterId"], str):
            raise QuorumStateFileError(f"{file_name}: key 'clusterId' must be a string")
        _int(data, "appliedOffset", file_name)
        return QuorumStateData(data_version=0, leader_id=_int(data, "leaderId", file_name),
                               leader_epoch=_int(data, "leaderEpoch", file_name),
                               voted_id=_int(data, "votedId", file_name), voted_directory_id=None,
                               current_voters=_voters(data, file_name))
    return QuorumStateData(data_version=1, leader_id=_int(data, "leaderId", file_name),
                           leader_epoch=_int(data, "leaderEpoch", file_name),
                           voted_id=_int(data, "votedId", file_name),
                           voted_directory_id=_directory_id(data, file_name), current_voters=None)
