"""The audit replays KRaftVersionRecord and VotersRecord (rules §3.14) from the log, the bootstrap checkpoint and
later snapshots: a synthetic kraft.version 1 log whose voters change one at a time audits clean, and breaking it
one record at a time trips the rule named after the reference function that states it (the corpus's real
kraft.version 1 logs, ``netns-dynamic-quorum-seed30``, are checked in ``test_cluster_dynamic.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import pytest

from kraftspec.traces.metalog import voters as V
from kraftspec.traces.metalog import raft_rules as R
from kraftspec.traces.metalog.audit import audit_paths
from kraftspec.traces.metalog.quorum import audit_quorum
from kraftspec.traces.metalog.control import KRAFT_VERSION, KRAFT_VOTERS, SNAPSHOT_FOOTER, SNAPSHOT_HEADER, \
    encode_control
from kraftspec.traces.metalog.report import DirectoryReport
from kraftspec.traces.metalog.schema import uuid_text
from kraftspec.traces.metalog.segments import CONTROL_FLAG, Record, encode_batch, read_batches
from test_metalog_synthetic import LogBuilder

Pair = tuple[bytes, bytes]


def voter(v: int, generation: int = 0) -> dict[str, Any]:
    return {"voter_id": v, "voter_directory_id": uuid_text(bytes([0xA0 + v + 16 * generation]) * 16),
            "endpoints": ({"name": "CONTROLLER", "host": f"c{v}", "port": 9093},),
            "kraft_version_feature": {"min_supported_version": 0, "max_supported_version": 1}}


def voters(*ids: int) -> Pair:
    return encode_control(KRAFT_VOTERS, {"version": 0, "voters": tuple(voter(v) for v in ids)})


def kraft(level: int) -> Pair:
    return encode_control(KRAFT_VERSION, {"version": 0, "kraft_version": level})


def snapshot(epoch: int, stamp: int, *control: Pair) -> bytes:
    """A snapshot file: header batch (SnapshotHeader and ``control``), footer batch; no data records."""
    header = encode_control(SNAPSHOT_HEADER, {"version": 0, "last_contained_log_timestamp": stamp})
    pairs = (header, *control)
    out = encode_batch(0, epoch, [Record(0, i, stamp, *p, 0) for i, p in enumerate(pairs)], attributes=CONTROL_FLAG,
                       base_timestamp=stamp)
    footer = encode_control(SNAPSHOT_FOOTER, {"version": 0})
    return out + encode_batch(len(pairs), epoch, [Record(0, len(pairs), stamp, *footer, 0)], attributes=CONTROL_FLAG,
                              base_timestamp=stamp)


DEFAULT: dict[str, tuple[Pair, ...]] = {
    "bootstrap": (kraft(1), voters(1, 2, 3)),
    "add4": (voters(1, 2, 3, 4),),
    "remove1": (voters(2, 3, 4),),
    "snapshot": (kraft(1), voters(2, 3, 4)),
    "add5": (voters(2, 3, 4, 5),),
}


def build(tmp: Path, edits: Optional[dict[str, tuple[Pair, ...]]] = None) -> tuple[Path, dict[str, int]]:
    """Bootstrap checkpoint (kraft.version 1, voters 1-3), then a log: election, voter 4 added, voter 1 removed, a
    snapshot taken after the removal, voter 5 added after it. ``edits`` replaces named steps' control records.
    Returns the data directory and each step's offset (the snapshot's: its end offset)."""
    steps = {**DEFAULT, **(edits or {})}
    log, at = LogBuilder(), {}
    log.elect(1, (1, 2))
    log.noops(2)
    at["add4"] = log._batch(list(steps["add4"]), control=True)
    log.noops(2)
    at["remove1"] = log._batch(list(steps["remove1"]), control=True)
    log.noops(2)
    at["snapshot"], stamp = log.offset, log.time
    log.noops(2)
    at["add5"] = log._batch(list(steps["add5"]), control=True)
    log.noops(1)
    data = tmp / "data"
    part = data / "__cluster_metadata-0"
    part.mkdir(parents=True)
    (part / "00000000000000000000.log").write_bytes(bytes(log.out))
    (part / "00000000000000000000-0000000000.checkpoint").write_bytes(snapshot(0, 0, *steps["bootstrap"]))
    (part / f"{at['snapshot']:020d}-{log.epoch:010d}.checkpoint").write_bytes(snapshot(log.epoch, stamp,
                                                                                        *steps["snapshot"]))
    (part / "quorum-state").write_text(
        '{"leaderId":1,"leaderEpoch":1,"votedId":-1,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":1}')
    (part / "leader-epoch-checkpoint").write_text(f"0\n{len(log.epochs)}\n" + "".join(f"{e} {o}\n" for e, o in log.epochs))
    (data / "meta.properties").write_text("version=1\nnode.id=1\ncluster.id=PCbusMznQZi20FQlE8ke6g\n")
    return data, at


def audited(tmp: Path, edits: Optional[dict[str, tuple[Pair, ...]]] = None) -> tuple[DirectoryReport, dict[str, int]]:
    data, at = build(tmp, edits)
    report = audit_paths([data]).directories[0]
    assert not report.errors, [f.error for f in report.errors]
    return report, at


def test_voters_changing_one_at_a_time_audit_clean(tmp_path: Path) -> None:
    report, _ = audited(tmp_path)
    assert report.ok, report.violations[:5]
    assert (report.voters_records, report.kraft_version, report.voters) == (5, 1, [2, 3, 4, 5])
    assert report.snapshots_compared == [f"{9:020d}-{1:010d}.checkpoint at offset 9"]


VOTER_BREAKS = [
    ("two voters removed at once", {"remove1": (voters(3, 4),)}, V.HAS_OVERLAPPING_MAJORITY, "remove1"),
    ("two voters added at once", {"remove1": (voters(1, 2, 3, 4, 5, 6),)}, V.HAS_OVERLAPPING_MAJORITY, "remove1"),
    ("a voter id twice", {"add4": (voters(1, 2, 3, 4, 4),)}, V.FROM_VOTERS_RECORD, "add4"),
    ("voters under kraft.version 0", {"bootstrap": (voters(1, 2, 3),)}, V.IS_RECONFIG_SUPPORTED, "add4"),
    ("a snapshot with the voters before the removal", {"snapshot": (kraft(1), voters(1, 2, 3, 4))},
     V.VOTER_SET_AT_OFFSET, "snapshot"),
    ("a snapshot without voters", {"snapshot": (kraft(1),)}, V.VOTER_SET_AT_OFFSET, "snapshot"),
    ("a snapshot at kraft.version 0", {"snapshot": (kraft(0),)}, V.KRAFT_VERSION_AT_OFFSET, "snapshot"),
]
"""(name, edits, rule, the step whose offset the rule must name)."""


@pytest.mark.parametrize("name, edits, rule, where", VOTER_BREAKS, ids=[b[0] for b in VOTER_BREAKS])
def test_breaking_the_voters_log(tmp_path: Path, name: str, edits: dict[str, tuple[Pair, ...]], rule: str,
                                 where: str) -> None:
    report, at = audited(tmp_path, edits)
    found = {(v.rule, v.offset) for v in report.violations}
    assert (rule, at[where]) in found, report.violations[:5]
    assert all(v.offset >= at[where] or v.file.endswith("0000000000.checkpoint") for v in report.violations), \
        report.violations[:5]


def test_a_replaced_directory_counts_as_one_removal_and_one_addition(tmp_path: Path) -> None:
    """``VoterSet.hasOverlappingMajority`` compares replica keys: voter 4 moving to a new directory while voter 1 is
    removed is two removals (1 and the old 4) and one addition."""
    moved = encode_control(KRAFT_VOTERS, {"version": 0, "voters": (voter(2), voter(3), voter(4, generation=1))})
    then = encode_control(KRAFT_VOTERS, {"version": 0, "voters": (voter(2), voter(3), voter(4, generation=1),
                                                                   voter(5))})
    report, at = audited(tmp_path, {"remove1": (moved,), "snapshot": (kraft(1), moved), "add5": (then,)})
    assert {(v.rule, v.offset) for v in report.violations} == {(V.HAS_OVERLAPPING_MAJORITY, at["remove1"])}


def seeded(data: Path, start: int) -> Path:
    """The same directory after Kafka deleted the log's prefix below the snapshot: one segment from ``start``."""
    part = data / "__cluster_metadata-0"
    segment = part / "00000000000000000000.log"
    with open(segment, "rb") as f:
        kept = b"".join(bytes(b.data) for b in read_batches(f, str(segment)) if b.base_offset >= start)
    segment.unlink()
    (part / "00000000000000000000-0000000000.checkpoint").unlink()
    (part / f"{start:020d}.log").write_bytes(kept)
    return data


def test_a_log_seeded_from_its_snapshot_continues_from_the_snapshots_voters(tmp_path: Path) -> None:
    """A log starting above 0 is read from the snapshot it starts at (``maybeLoadSnapshot``): the snapshot's voters
    stand at its last contained offset, and the next VotersRecord is judged against them."""
    data, at = build(tmp_path / "clean")
    report = audit_paths([seeded(data, at["snapshot"])]).directories[0]
    assert report.ok, report.violations[:5]
    assert (report.log_start_offset, report.voters_records, report.voters) == (at["snapshot"], 2, [2, 3, 4, 5])
    data, at = build(tmp_path / "broken", {"add5": (voters(3, 4, 5, 6),)})
    report = audit_paths([seeded(data, at["snapshot"])]).directories[0]
    assert {(v.rule, v.offset) for v in report.violations} == {(V.HAS_OVERLAPPING_MAJORITY, at["add5"])}


OBSERVER_STATE = '{"clusterId":"","leaderId":1,"leaderEpoch":1,"votedId":-1,"appliedOffset":0,"currentVoters":%s,' \
                 '"data_version":0}'


@pytest.mark.parametrize("listed, bootstrap, clean", [
    ("[]", None, True),  # an observer without static voters wrote it before reading the KRaftVersionRecord
    ('[{"voterId":3}]', None, False),  # voters it cannot have had: neither static nor the LeaderChange's
    ('[{"voterId":1},{"voterId":2},{"voterId":3}]', None, True),  # the LeaderChange's voters, as at kraft.version 0
    ("[]", (kraft(0), voters(1, 2, 3)), False),  # at kraft.version 0 the file lists the voters
])
def test_a_version_0_quorum_state_in_a_kraft_version_1_log(tmp_path: Path, listed: str,
                                                           bootstrap: Optional[tuple[Pair, ...]], clean: bool) -> None:
    """``ElectionState.toQuorumStateData(0)`` writes the voter ids the node had (``QuorumState.durableTransitionTo``
    with ``partitionState.lastKraftVersion()``): a node formatted ``--no-initial-controllers`` has none until it
    reads the log's KRaftVersionRecord, so its first file is version 0 with ``currentVoters`` empty (seen on Kafka
    4.3.1's observers); the audit reads it and compares non-empty lists with the LeaderChange as before."""
    data, _ = build(tmp_path, None if bootstrap is None else {"bootstrap": bootstrap})
    (data / "__cluster_metadata-0" / "quorum-state").write_text(OBSERVER_STATE % listed)
    report = audit_paths([data]).directories[0]
    found = {(v.rule, v.offset) for v in report.violations}
    assert ((R.QUORUM_STATE_MATCHES_LOG, 0) not in found) == clean, report.violations[:5]


def test_the_quorum_audit_counts_the_voters_of_the_latest_voters_record(tmp_path: Path) -> None:
    """Under kraft.version 1 the majority is the latest voter set's (``VoterSetHistory.lastValue``), not the
    LeaderChange's (voters 1 and 2 at the election; 2-5 after the changes)."""
    data, _ = build(tmp_path)
    quorum = audit_quorum([data])
    assert quorum.voters == (2, 3, 4, 5), quorum.render()
