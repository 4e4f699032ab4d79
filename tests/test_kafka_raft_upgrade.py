"""The kraft.version 0 -> 1 upgrade (KIP-853, rules §3.15) against Apache Kafka's own ``KafkaRaftClient``.

The trace action ``upgrade_kraft_version`` is ``KafkaRaftClient.upgradeKRaftVersion``, run by the harness as its glue
does (``LeaderState.maybeAppendUpgradedKRaftVersion`` against ``partitionState.lastKraftVersion`` / ``lastVoterSet``)
so that the boolean it returns is stated (``upgraded``), a refusal by the exception's simple name (``error``). Each
trace is hand-built (inputs only) and applied to Kafka 4.3.1's client; the tests assert what Kafka does and then that
the reference follows Kafka's run.
"""

from __future__ import annotations

import copy
from typing import Any

from test_kafka_raft_dynamic import first_difference, run
from test_kafka_raft_quirks import KRAFT_VERSION_1, begin, fetched, leader_change, voters_record
from test_traces_raft_upgrade import DIRECTORY, UPGRADE

CANDIDATE = UPGRADE["initial"]["explicit"]
"""Node 1 of the static voters 1-3 (kraft.version 0, directory id known), restarted as the Candidate of epoch 1."""


def upgrade_inputs(with_directory_ids: bool = True) -> list[dict[str, Any]]:
    """tests/test_traces_raft_upgrade.py's upgrade: elected by 2's vote, refused before 2 and 3 fetched and sent
    UpdateRaftVoter, then validated, upgraded and repeated (a no-op), committed by 2's fetch; each fetch names the
    fetcher's directory id (as Kafka 4.x followers send it) unless ``with_directory_ids`` is false."""
    inputs = [copy.deepcopy(step["input"]) for step in UPGRADE["steps"]]
    for given in inputs:
        if given["action"] == "fetch_request" and not with_directory_ids:
            del given["message"]["replica_directory_id"]
    return inputs


def upgrade(now: int, epoch: int = 1, kraft_version: int = 1) -> dict[str, Any]:
    return {"action": "upgrade_kraft_version", "now": now, "epoch": epoch, "kraft_version": kraft_version}


def answered(step: dict[str, Any]) -> tuple[Any, Any]:
    response = step["output"]["response"]
    return response["upgraded"], response["error"]


def test_a_leader_whose_voters_all_updated_upgrades() -> None:
    """``maybeAppendUpgradedKRaftVersion``: InvalidUpdateVersionException before every voter sent UpdateRaftVoter
    (the in-memory voters lack directory ids), then True validated (nothing written), True upgraded
    (KRaftVersionRecord 1 and the voter set with directory ids, one batch at offsets 1-2), False repeated; committed
    by voter 2's fetch. Then a downgrade (InvalidUpdateVersionException), another epoch (``validateEpoch``) and an
    unknown level (``KRaftVersion.fromFeatureLevel``) are refused, IllegalArgumentException both."""
    steps, verdict = run(CANDIDATE, upgrade_inputs() + [upgrade(12, kraft_version=0), upgrade(13, epoch=2),
                                                         upgrade(14, kraft_version=7)])
    assert [answered(steps[i]) for i in (2, 6, 8, 9, 10)] == [
        (None, "InvalidUpdateVersionException"), (None, "InvalidUpdateVersionException"), (True, None), (True, None),
        (False, None)]
    assert steps[8]["post"]["log_end_offset"] == 1 and steps[9]["post"]["log_end_offset"] == 3
    log = steps[11]["post"]["log"]
    assert [entry["record"] for entry in log[1:]] == [KRAFT_VERSION_1, {**voters_record((1, 2, 3)), "voters": [
        {"id": v, "directory_id": DIRECTORY[v], "listeners": [f"CONTROLLER://controller{v}:9093"],
         "kraft_version_range": [0, 1]} for v in (1, 2, 3)]}]
    assert steps[11]["post"]["high_watermark"] == 3
    assert [answered(s) for s in steps[12:]] == [(None, "InvalidUpdateVersionException"),
                                                 (None, "IllegalArgumentException"), (None, "IllegalArgumentException")]
    assert verdict.conformant, first_difference(verdict)


def test_a_follower_refuses_the_upgrade_as_not_leader() -> None:
    """``upgradeKRaftVersion`` on a node that does not lead: NotLeaderException, nothing sent."""
    steps, verdict = run({"local_id": 2, "directory_id": DIRECTORY[2]}, [begin(1, 1, 1), upgrade(2)])
    assert answered(steps[1]) == (None, "NotLeaderException") and steps[1]["output"]["response"]["sends"] == []
    assert verdict.conformant, first_difference(verdict)


def test_a_static_follower_reads_the_upgrade() -> None:
    """A kraft.version 0 follower fetches its leader's upgrade (LeaderChange, KRaftVersionRecord 1, VotersRecord):
    from then on it runs as kraft.version 1, so its pre-vote requests name each voter's directory id
    (``buildVoteRequest(remoteVoter, ..)``)."""
    voters = {**voters_record((1, 2, 3)), "voters": [
        {"id": v, "directory_id": DIRECTORY[v], "listeners": [f"CONTROLLER://controller{v}:9093"],
         "kraft_version_range": [0, 1]} for v in (1, 2, 3)]}
    steps, verdict = run({"local_id": 2, "directory_id": DIRECTORY[2]}, [
        begin(1, 1, 1), fetched(1, 1, 2, 3, (leader_change(1), KRAFT_VERSION_1, voters), record_epoch=1),
        {"action": "tick", "now": 3000}, {"action": "tick", "now": 3001}])
    votes = [s for s in steps[3]["output"]["response"]["sends"] if s["type"] == "VoteRequest"]
    assert {(s["destination"], s["voter_directory_id"]) for s in votes} == {(1, DIRECTORY[1]), (3, DIRECTORY[3])}
    assert verdict.conformant, first_difference(verdict)


def test_after_the_upgrade_a_fetch_without_the_voters_directory_id_is_an_observers() -> None:
    """D8, fixed: once the leader's voter set names directory ids, ``LeaderState.updateReplicaState`` finds the
    fetcher by ``getOrCreateReplicaState(ReplicaKey)``, and ``ReplicaState.matchesKey`` wants the voter's directory
    id: voter 2's fetch without one is an observer's, so Kafka's high watermark stays 1; the reference keys replica
    states as Kafka does (``raft_leader.update_replica_state``) and follows. A DescribeQuorum then lists 2 both as a
    voter (not fetched since the upgrade) and as an observer."""
    describe = {"action": "describe_quorum_request", "now": 12, "message": {"source": 1000}}
    steps, verdict = run(CANDIDATE, upgrade_inputs(with_directory_ids=False) + [describe])
    assert steps[11]["post"]["high_watermark"] == 1  # Kafka: the fetch at 3 is not voter 2's
    assert [o["replica_id"] for o in steps[12]["output"]["response"]["sends"][0]["observers"]] == [2]
    assert verdict.conformant, first_difference(verdict)
