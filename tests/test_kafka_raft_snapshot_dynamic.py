"""Snapshots at kraft.version 1 (KIP-853 over KIP-630) against Apache Kafka's own ``KafkaRaftClient``.

A kraft.version 1 snapshot's first batch holds, after its header, the KRaftVersionRecord and the voter set in force at
its end (``RecordsSnapshotWriter.Builder.build``, given them by ``KafkaRaftClient.createSnapshot`` from
``partitionState.kraftVersionAtOffset`` / ``voterSetAtOffset``). The trace states them as a FetchSnapshot answer's
``control_records`` (the chunk from byte 0); the harness parses them out of Kafka's snapshot and writes them into the
snapshot bytes it feeds Kafka (``harness/src/raft``). Each trace is hand-built (inputs only) and applied to Kafka
4.3.1's client; the tests assert what Kafka does and then that the reference follows Kafka's run.
"""

from __future__ import annotations

from typing import Any, Optional

from test_kafka_raft_dynamic import CANDIDATE, COMMITTED, DIRECTORY, first_difference, node_state, run, sent, tick
from test_kafka_raft_quirks import KRAFT_VERSION_1, begin, fetched, leader_change, vote_destinations, voters_record

SIZE = 600
"""The snapshots' size in bytes (the smallest a kraft.version 1 snapshot of three or four voters can take is ~350)."""


def fetch_snapshot(source: int, now: int, max_bytes: int = 1 << 20) -> dict[str, Any]:
    """``source``'s FetchSnapshot of snapshot (3, 1) from byte 0."""
    return {"action": "fetch_snapshot_request", "now": now, "message": {
        "replica_id": source, "current_leader_epoch": 1, "snapshot_id": [3, 1], "position": 0,
        "max_bytes": max_bytes, "replica_directory_id": DIRECTORY[source], "correlation_id": 400 + now}}


def snapshot_chunk(now: int, position: int, chunk: int, control: Optional[list[dict[str, Any]]] = None,
                   ) -> dict[str, Any]:
    """Leader 1's answer to node 2's FetchSnapshot of (3, 1): ``chunk`` bytes from ``position``; the chunk from byte 0
    states the snapshot's ``control`` records (None: none)."""
    message = {"source": 1, "leader_epoch": 1, "leader_id": 1, "snapshot_id": [3, 1], "size": SIZE,
               "position": position, "chunk": chunk}
    if control is not None:
        message["control_records"] = control
    return {"action": "fetch_snapshot_response", "now": now, "message": message}


def follow_and_fetch_snapshot(control: Optional[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Follower 2 of voters 1-3 follows leader 1, is sent to snapshot (3, 1) and fetches it in two chunks."""
    return [begin(1, 1, 1), fetched(1, 1, 2, 3, snapshot_id=[3, 1]), snapshot_chunk(3, 0, 100, control),
            snapshot_chunk(4, 100, SIZE - 100)]


def test_a_kraft_version_1_leader_serves_its_voters_in_the_first_chunk() -> None:
    """The leader's snapshot (3, 1) holds kraft.version 1 and voters 1-3 (``createSnapshot``); the chunk from byte 0
    carries them, also when it is shorter than the first batch (a 50-byte chunk)."""
    steps, verdict = run(CANDIDATE, COMMITTED + [
        {"action": "create_snapshot", "now": 3, "end_offset": 3, "epoch": 1, "size": SIZE},
        fetch_snapshot(3, 4), fetch_snapshot(3, 5, max_bytes=50)])
    assert steps[3]["output"]["response"]["created"] is True
    for step, chunk in ((steps[4], SIZE), (steps[5], 50)):
        (answer,) = step["output"]["response"]["sends"]
        assert (answer["type"], answer["chunk"]) == ("FetchSnapshotResponse", chunk)
        assert answer["control_records"] == [KRAFT_VERSION_1, voters_record((1, 2, 3))]
    assert verdict.conformant, first_difference(verdict)


def test_a_follower_loads_the_voters_of_a_fetched_snapshot() -> None:
    """Follower 2 of voters 1-3 fetches a snapshot whose voters are 1-4: ``handleFetchSnapshotResponse`` ->
    ``partitionState.updateState`` loads them, so on its fetch timeout it asks 1, 3 and 4 for pre-votes; after a
    restart it reads them again from the snapshot."""
    steps, verdict = run(node_state(2, (1, 2, 3)), follow_and_fetch_snapshot([KRAFT_VERSION_1, voters_record(
        (1, 2, 3, 4))]) + [tick(3000), tick(3001), {"action": "restart", "now": 3002}, tick(6000), tick(6001)])
    assert steps[3]["post"]["latest_snapshot_id"] == [3, 1] and steps[3]["post"]["log_start_offset"] == 3
    assert steps[4]["post"]["role"] == "Prospective" and vote_destinations(steps[5]) == [1, 3, 4]
    assert steps[7]["post"]["role"] == "Prospective" and vote_destinations(steps[8]) == [1, 3, 4]
    assert verdict.conformant, first_difference(verdict)


def test_a_snapshot_without_a_voters_record_leaves_no_voters() -> None:
    """A kraft.version 1 snapshot whose first batch has no VotersRecord (written where the voter history held none,
    ``voterSetAtOffset`` empty): loading it leaves follower 2 with no voter set (``lastVoterSet``: the static voters,
    none for a node formatted with ``--initial-controllers``), so it fetches from a bootstrap server (-2) instead of
    standing for election, and after a restart it is Unattached."""
    steps, verdict = run(node_state(2, (1, 2, 3)), follow_and_fetch_snapshot([KRAFT_VERSION_1]) + [
        tick(3000), {"action": "restart", "now": 3001}, tick(6000)])
    assert sent(steps[4]) == [(-2, "FetchRequest")] and steps[4]["post"]["role"] == "Follower"
    assert steps[6]["post"]["role"] == "Unattached"
    assert verdict.conformant, first_difference(verdict)


def test_a_static_follower_loads_an_upgraded_leaders_snapshot() -> None:
    """A kraft.version 0 follower (static voters 1-3) fetches the snapshot of a leader that upgraded: it reads the
    KRaftVersionRecord and VotersRecord from it (``KRaftControlRecordStateMachine.maybeLoadSnapshot``) and runs as
    kraft.version 1: its pre-vote requests name each voter's directory id (``buildVoteRequest(remoteVoter, ..)``)."""
    static = {"local_id": 2, "directory_id": DIRECTORY[2]}
    steps, verdict = run(static, follow_and_fetch_snapshot([KRAFT_VERSION_1, voters_record((1, 2, 3))]) + [
        tick(3000), tick(3001)])
    votes = [s for s in steps[5]["output"]["response"]["sends"] if s["type"] == "VoteRequest"]
    assert {(s["destination"], s["voter_directory_id"]) for s in votes} == {(1, DIRECTORY[1]), (3, DIRECTORY[3])}
    assert verdict.conformant, first_difference(verdict)


def test_kafka_empties_the_voter_history_by_a_truncation_to_the_snapshot_end() -> None:
    """Confirmed (issue 23's "left open" list; reference: ``test_voter_history_emptied_by_a_truncation_to_the_snapshot_
    end``). Follower 2 holds voters 1-3 at offset 2 and voters 1-4 at offset 5 (HW 5) and writes snapshot (5, 1) (its
    VotersRecord is 1-3, in force at offset 4). Freezing it calls ``partitionState.truncateOldEntries(5)``, which keeps
    only the entry at 5; leader 3 of epoch 2 then truncates the log to 5 (``truncateNewEntries(5)``) and the history
    is empty: node 2 has no voters (``lastVoterSet`` falls back to the static voters, none), so on its fetch timeout
    it fetches from a bootstrap server instead of standing for election, though its snapshot and log say voters 1-3.
    A restart reads the snapshot and it stands again (asking 1 and 3). Unsafe only for liveness: a voter sits out
    elections until restarted."""
    records = (leader_change(1), KRAFT_VERSION_1, voters_record((1, 2, 3)), "a", "b", voters_record((1, 2, 3, 4)))
    steps, verdict = run(node_state(2, (1, 2, 3)), [
        begin(1, 1, 1), fetched(1, 1, 2, 5, records, record_epoch=1),
        {"action": "create_snapshot", "now": 3, "end_offset": 5, "epoch": 1, "size": SIZE},
        begin(3, 2, 4), fetched(3, 2, 5, 5, diverging_epoch=[1, 5]), tick(2200),
        {"action": "restart", "now": 2300}, tick(4600), tick(4601)])
    assert steps[2]["output"]["response"]["created"] is True and steps[4]["post"]["log_end_offset"] == 5
    assert sent(steps[5]) == [(-2, "FetchRequest")] and steps[5]["post"]["role"] == "Follower"
    assert steps[7]["post"]["role"] == "Prospective" and vote_destinations(steps[8]) == [1, 3]
    assert verdict.conformant, first_difference(verdict)


def test_a_follower_with_an_empty_log_installs_a_newer_snapshot_of_its_epoch() -> None:
    """Follower 2's log is empty at snapshot (10, 1); leader 1 sends it to snapshot (11, 1).
    ``handleFetchSnapshotResponse`` freezes it and ``truncateToLatestSnapshot`` replaces the log (production
    ``KafkaRaftLog``: 11 is past the log end 10).
    Found by ``--dynamic --snapshots`` seed 2712 (traces 205 and 392): Kafka's test double ``MockLog`` ends an empty
    log at its latest snapshot, so it found nothing to truncate and threw "Full log truncation expected"; the
    harness's log answers ``endOffset`` as production does (``KraftspecRaftSession.TraceLog.endOffset``)."""
    initial = {"local_id": 2, "snapshot": {"end_offset": 10, "epoch": 1, "size": 300},
               "quorum_state": {"epoch": 1, "leader_id": 1}}
    snapshot = {"action": "fetch_snapshot_response", "now": 3, "message": {
        "source": 1, "leader_epoch": 1, "leader_id": 1, "snapshot_id": [11, 1], "size": 300, "position": 0,
        "chunk": 300}}
    steps, verdict = run(initial, [tick(1), fetched(1, 1, 2, 11, snapshot_id=[11, 1], log_start_offset=11), snapshot])
    assert "refused" not in steps[-1]
    post = steps[-1]["post"]
    assert (post["log_start_offset"], post["log_end_offset"], post["latest_snapshot_id"]) == (11, 11, [11, 1])
    assert verdict.conformant, first_difference(verdict)
