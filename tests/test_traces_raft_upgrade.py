"""The ``upgrade_kraft_version`` raft trace action (``upgradeKRaftVersion``, rules §3.15): replayed through the
reference, its answer is what the call returned or the Kafka exception it threw."""

from __future__ import annotations

import copy
from typing import Any

from kraftspec.traces.format.envelope import trace_from_json
from kraftspec.traces.replay.verdict import replay

DIRECTORY = {1: "a3JhZnRzcGVjLW5vZGUtMQ", 2: "a3JhZnRzcGVjLW5vZGUtMg", 3: "a3JhZnRzcGVjLW5vZGUtMw"}


def _fetch(replica: int, offset: int, now: int) -> dict[str, Any]:
    return {"input": {"action": "fetch_request", "now": now, "message": {
        "replica_id": replica, "current_leader_epoch": 1, "fetch_offset": offset, "last_fetched_epoch": 1,
        "replica_directory_id": DIRECTORY[replica]}}}


def _update(voter: int, now: int) -> dict[str, Any]:
    return {"input": {"action": "update_raft_voter_request", "now": now, "message": {
        "voter_id": voter, "current_leader_epoch": 1, "voter_directory_id": DIRECTORY[voter],
        "listeners": [f"CONTROLLER://controller{voter}:9093"]}},
        "output": {"response": {"sends": [{"destination": voter, "type": "UpdateRaftVoterResponse", "error": "NONE"}]}}}


def _upgrade(now: int, response: dict[str, Any], validate_only: bool = False) -> dict[str, Any]:
    return {"input": {"action": "upgrade_kraft_version", "now": now, "epoch": 1, "kraft_version": 1,
                      "validate_only": validate_only}, "output": {"response": response}}


# Node 1 (directory id known, static voters 1-3) restarts as the Candidate of epoch 1 and wins with voter 2's vote; it
# refuses the upgrade until voters 2 and 3 have fetched (the high watermark) and sent UpdateRaftVoter, then validates
# it, upgrades (KRaftVersionRecord and VotersRecord at offsets 1-2) and takes a repeated call as a no-op.
UPGRADE = {"format": "1.0", "component": "raft", "id": "upgrade", "initial": {"explicit": {
    "local_id": 1, "directory_id": DIRECTORY[1], "quorum_state": {"epoch": 1, "voted_key": {"id": 1}}}}, "steps": [
    {"input": {"action": "tick", "now": 0}},
    {"input": {"action": "vote_response", "now": 1, "message": {"source": 2, "leader_epoch": 1,
                                                                 "vote_granted": True}},
     "post": {"role": "Leader", "log_end_offset": 1}},
    _upgrade(2, {"sends": [], "upgraded": None, "error": "InvalidUpdateVersionException"}),
    _fetch(2, 1, 3), _fetch(3, 1, 4),
    _update(2, 5),
    _upgrade(6, {"sends": [], "error": "InvalidUpdateVersionException"}),
    _update(3, 7),
    _upgrade(8, {"sends": [], "upgraded": True, "error": None}, validate_only=True),
    _upgrade(9, {"sends": [], "upgraded": True, "error": None}),
    _upgrade(10, {"sends": [], "upgraded": False, "error": None}),
    {**_fetch(2, 3, 11), "post": {"high_watermark": 3, "log_end_offset": 3,
                                  "quorum_state_file": {"epoch": 1, "leader_id": 1, "voted_key": None}}},
]}


def test_an_upgrade_trace_is_conformant() -> None:
    verdict = replay(trace_from_json(UPGRADE))
    assert verdict.conformant, verdict.divergence


def test_an_upgrade_taken_before_every_voter_updated_is_flagged() -> None:
    wrong = copy.deepcopy(UPGRADE)
    wrong["steps"][6]["output"]["response"] = {"sends": [], "upgraded": True, "error": None}
    verdict = replay(trace_from_json(wrong))
    assert verdict.divergence is not None and verdict.divergence.step == 6


def test_an_upgrade_asked_of_a_follower_throws_not_leader() -> None:
    trace = {"format": "1.0", "component": "raft", "id": "follower", "initial": {"standard": "raft/follower"},
             "steps": [_upgrade(1, {"sends": [], "upgraded": None, "error": "NotLeaderException"})]}
    verdict = replay(trace_from_json(trace))
    assert verdict.conformant, verdict.divergence
