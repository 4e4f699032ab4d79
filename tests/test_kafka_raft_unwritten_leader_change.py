"""Voter changes asked of a lone leader whose start-of-epoch records are still unwritten, against Kafka's own client.

A node formatted ``--standalone`` (the only voter, kraft.version 1) leads from ``KafkaRaftClient.initialize``, and a
lone voter that restarts leads the next epoch at once; either way its LeaderChange (at first with the KRaftVersion and
Voters records) waits in the accumulator for the poll (the reference's ``Leader.unwritten``), so the leader has no
high watermark yet. Each trace hands the leader AddRaftVoter, RemoveRaftVoter or UpdateRaftVoter before that poll (the
harness applies a request, then polls: ``harness/src/raft``). Kafka answers REQUEST_TIMED_OUT (AddVoterHandler /
RemoveVoterHandler: "... waiting for leader to establish HWM ...", UpdateVoterHandler: no message) after its cluster
id, epoch and request checks; the step's poll then writes the records and the high watermark follows them. Each test
asserts what Kafka does, then that the reference follows Kafka's run (helpers of tests/test_kafka_raft_dynamic.py).

Kafka's driver never hands a request over at that point: ``KafkaRaftClient.poll`` runs ``pollCurrentState`` (which
writes the records) before it handles a message; the harness and the reference take a request, then poll.
"""

from __future__ import annotations

from typing import Any

import pytest

from test_kafka_raft_dynamic import DIRECTORY, STANDALONE, add, first_difference, remove, run, sent, tick

NO_HWM = "Request timed out waiting for leader to establish HWM and fence previous voter changes"
"""The message of AddVoterHandler's and RemoveVoterHandler's answer while the leader has no high watermark."""


def update(voter: int, now: int, epoch: int = 1, **fields: Any) -> dict[str, Any]:
    """``voter``'s UpdateRaftVoter to the leader of ``epoch``, with its own directory id and listener."""
    return {"action": "update_raft_voter_request", "now": now, "message": {
        "voter_id": voter, "current_leader_epoch": epoch, "voter_directory_id": DIRECTORY[voter],
        "listeners": [f"CONTROLLER://controller{voter}:9093"], "correlation_id": 500 + now, **fields}}


def with_cluster(request: dict[str, Any], cluster_id: str) -> dict[str, Any]:
    return {**request, "message": {**request["message"], "cluster_id": cluster_id}}


RESTARTED = [tick(0), {"action": "restart", "now": 1}]
"""The standalone leader writes its epoch-1 records and restarts: Leader of epoch 2, its LeaderChange unwritten."""

ADMIN_ANSWER = ("AddRaftVoter", "RemoveRaftVoter")


@pytest.mark.parametrize(("before", "change", "answer"), [
    ([], add(2, 0), ("AddRaftVoter", "REQUEST_TIMED_OUT", NO_HWM)),
    ([], add(2, 0, ack_when_committed=False), ("AddRaftVoter", "REQUEST_TIMED_OUT", NO_HWM)),
    ([], add(1, 0), ("AddRaftVoter", "REQUEST_TIMED_OUT", NO_HWM)),
    ([], remove(1, 0), ("RemoveRaftVoter", "REQUEST_TIMED_OUT", NO_HWM)),
    ([], remove(2, 0), ("RemoveRaftVoter", "REQUEST_TIMED_OUT", NO_HWM)),
    ([], update(1, 0), ("UpdateRaftVoter", "REQUEST_TIMED_OUT")),
    ([], update(1, 0, listeners=["CONTROLLER://controller1:9093", "OTHER://controller1:9094"]),
     ("UpdateRaftVoter", "REQUEST_TIMED_OUT")),
    ([], update(2, 0), ("UpdateRaftVoter", "REQUEST_TIMED_OUT")),
    ([], update(1, 0, epoch=2), ("UpdateRaftVoter", "UNKNOWN_LEADER_EPOCH")),
    ([], update(1, 0, epoch=0), ("UpdateRaftVoter", "FENCED_LEADER_EPOCH")),
    ([], update(1, 0, voter_directory_id=None), ("UpdateRaftVoter", "INVALID_REQUEST")),
    (RESTARTED, add(2, 2), ("AddRaftVoter", "REQUEST_TIMED_OUT", NO_HWM)),
    (RESTARTED, remove(1, 2), ("RemoveRaftVoter", "REQUEST_TIMED_OUT", NO_HWM)),
    (RESTARTED, update(1, 2, epoch=2), ("UpdateRaftVoter", "REQUEST_TIMED_OUT")),
], ids=["add", "add without ack", "add the leader", "remove the leader", "remove a non-voter", "update",
        "update with a new listener", "update from a non-voter", "update of a later epoch", "update of an earlier epoch",
        "update without directory id", "restarted: add", "restarted: remove", "restarted: update"])
def test_a_voter_change_before_the_lone_leaders_first_poll(before: list[dict[str, Any]], change: dict[str, Any],
                                                          answer: tuple[str, ...]) -> None:
    steps, verdict = run(STANDALONE, before + [change, tick(change["now"] + 1)])
    asked, polled = steps[len(before)], steps[len(before) + 1]
    leader_end = 3 if not before else 4  # the epoch's LeaderChange (at first with KRaftVersion and Voters) written
    if answer[0] in ADMIN_ANSWER:
        (send,) = asked["output"]["response"]["sends"]
        assert (send["api"], send["error"], send["error_message"]) == answer
    else:
        assert sent(asked) == [(change["message"]["voter_id"], "UpdateRaftVoterResponse")]
        assert ("UpdateRaftVoter", asked["output"]["response"]["sends"][0]["error"]) == answer
    assert (asked["post"]["role"], asked["post"]["log_end_offset"], asked["post"]["high_watermark"]) == (
        "Leader", leader_end, leader_end)
    assert asked["post"]["log"][-1 if before else 0]["record"]["type"] == "LeaderChangeMessage"
    assert polled["post"]["log_end_offset"] == leader_end and sent(polled) == []
    assert verdict.conformant, first_difference(verdict)


def test_the_cluster_id_is_checked_before_the_high_watermark() -> None:
    """A node with a cluster id: an AddRaftVoter naming another is INCONSISTENT_CLUSTER_ID, also before the poll."""
    steps, verdict = run({**STANDALONE, "cluster_id": "kraftspec-c1"},
                         [with_cluster(add(2, 0), "kraftspec-c2"), tick(1)])
    (send,) = steps[0]["output"]["response"]["sends"]
    assert (send["api"], send["error"]) == ("AddRaftVoter", "INCONSISTENT_CLUSTER_ID")
    assert verdict.conformant, first_difference(verdict)
