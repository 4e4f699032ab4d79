"""Planted violations: copies of real corpus directories with one thing changed (CRCs recomputed) are reported
at the right offset under the right rule, and nothing is reported before the planted change."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

import pytest

from kraftspec.traces.metalog.audit import audit_paths
from kraftspec.traces.metalog.control import LEADER_CHANGE
from kraftspec.traces.metalog.corpus import CORPUS_DIR
from kraftspec.traces.metalog.plant import copy_tree, edit_header, edit_record, replace_with_noop, rewrite, set_control
from kraftspec.traces.metalog.rules import RULE_DOCS
from kraftspec.traces.metalog.segments import Batch, Record, reencode

ICH = "ichwansh03__kafka-migration-log4j2/data"  # MV 21, 1173 PartitionChangeRecords, 13 epochs
REN = "renoagilsaputra__kafka/data"  # MV 14, snapshot 7111-1
JEO = "Jeong-Rae__KafkaDemo/kraft-combined-logs"  # MV 14, epochs 1,2,3,5,6
ENG = "engkoskostaman97__setup_install_kafka_from_windows/data"  # MV 14, 506 batches
FUR = "furkancets__flink-docker/kafka/data"  # pre-3.3: no metadata.version record
LOG = "__cluster_metadata-0/00000000000000000000.log"
SNAPSHOT = "__cluster_metadata-0/00000000000000007111-0000000001.checkpoint"


@dataclass(frozen=True)
class Plant:
    name: str
    directory: str
    change: Callable[[Path], None]
    expected: tuple[tuple[str, int], ...]
    """(rule, offset) pairs that must be reported."""
    planted_at: int
    """No violation may be reported at a smaller offset in the log."""


def _text(name: str, old: str, new: str) -> Callable[[Path], None]:
    def change(d: Path) -> None:
        path = d / name
        text = path.read_text()
        assert old in text
        path.write_text(text.replace(old, new))
    return change


def _key_on_record(offset: int) -> Callable[[Path], None]:
    def change(d: Path) -> None:
        def edit(batch: Batch, records: list[Record]) -> Optional[bytes]:
            if batch.base_offset != offset:
                return None
            return reencode(batch, [r._replace(key=b"k") for r in records])
        rewrite(d / LOG, edit)
    return change


NO_CHANGE = {"leader": -2, "replicas": None, "removing_replicas": None, "adding_replicas": None,
             "leader_recovery_state": -1, "directories": None}


def _rename(old: str, new: str) -> Callable[[Path], None]:
    def change(d: Path) -> None:
        (d / old).rename(d / new)
    return change


PLANTS = [
    Plant("log directories at MV 3.6", ENG, lambda d: edit_record(d / LOG, 7, version=2, log_dirs=("AAAAAAAAAAAAAAAAAAAAAw",)),
          (("broker_change_fields_for_mv", 7),), 7),
    Plant("data record with a key", ENG, _key_on_record(100), (("control_batch_records", 100),), 100),
    Plant("controller registration at MV 3.6", REN,
          lambda d: edit_record(d / LOG, 359, api_key=27, version=0, controller_id=1),
          (("controller_registration_for_mv", 359), ("snapshot_matches_log", 7111)), 359),
    Plant("ISR shrink without a leader epoch bump before 3.6", FUR,
          lambda d: edit_record(d / LOG, 6, api_key=5, version=0, partition_id=1, isr=(), **NO_CHANGE),
          (("leader_epoch_bump_on_isr_shrink", 6),), 6),
    Plant("undefined metadata.version", ENG, lambda d: edit_record(d / LOG, 2, feature_level=99),
          (("metadata_version_valid", 2),), 2),
    Plant("transaction at MV 3.6-IV0", ENG, lambda d: edit_record(d / LOG, 2, feature_level=12),
          (("transactions_for_mv", 4),), 4),
    Plant("invalid leader recovery state", ICH, lambda d: edit_record(d / LOG, 7706, leader_recovery_state=5),
          (("partition_change_values", 7706),), 7706),
    Plant("partition created twice", ICH, lambda d: edit_record(d / LOG, 1834, partition_id=0),
          (("partition_record_is_new", 1834),), 1834),
    Plant("partition of an unknown topic", ICH, lambda d: edit_record(d / LOG, 192, topic_id="AAAAAAAAAAAAAAAAAAAAAw"),
          (("partition_topic_exists", 192),), 192),
    Plant("duplicate replica", ICH, lambda d: edit_record(d / LOG, 7706, replicas=(1, 1)),
          (("replicas_valid", 7706),), 7706),
    Plant("leader outside the ISR", ICH, lambda d: edit_record(d / LOG, 7706, isr=()),
          (("leader_in_isr", 7706), ("isr_not_empty_without_elr", 7706), ("unclean_leader_recovering", 7851)), 7706),
    Plant("replica dropped without a leader epoch bump", ICH,
          lambda d: edit_record(d / LOG, 7706, leader=-2, isr=(2,), replicas=(2,), directories=("AAAAAAAAAAAAAAAAAAAAAA",)),
          (("leader_epoch_bump_on_replica_removal", 7706), ("isr_additions_active", 7706)), 7706),
    Plant("ISR not within replicas", ICH, lambda d: edit_record(d / LOG, 7706, isr=(1, 5)),
          (("isr_valid", 7706), ("isr_additions_active", 7706)), 7706),
    Plant("partition created at a skipped epoch", ICH, lambda d: edit_record(d / LOG, 192, partition_epoch=1),
          (("partition_created_at_epoch_zero", 192),), 192),
    Plant("fenced broker elected", ICH, lambda d: edit_record(d / LOG, 7705, fenced=0),
          (("new_leader_active", 7706),), 7706),
    Plant("empty partition change", ICH, lambda d: edit_record(d / LOG, 7706, leader=-2),
          (("partition_change_not_empty", 7706),), 7706),
    Plant("fenced broker still leading", REN, lambda d: edit_record(d / LOG, 10309, leader=-2),
          (("partition_change_not_empty", 10309), ("fenced_broker_leads_nothing", 10360)), 10309),
    Plant("duplicate topic name", ICH, lambda d: edit_record(d / LOG, 1829, name="learn-kafka"),
          (("topic_unique", 1829),), 1829),
    Plant("broker epoch goes back", JEO, lambda d: edit_record(d / LOG, 300, broker_epoch=3),
          (("broker_epoch_increases", 300), ("broker_change_matches_epoch", 301)), 300),
    Plant("broker epoch after its record", JEO, lambda d: edit_record(d / LOG, 300, broker_epoch=900),
          (("broker_epoch_not_after_record", 300),), 300),
    Plant("new incarnation registered unfenced", JEO, lambda d: edit_record(d / LOG, 300, fenced=False),
          (("new_registration_fenced", 300),), 300),
    Plant("fence record with a stale epoch", ENG, lambda d: edit_record(d / LOG, 508, broker_epoch=4),
          (("broker_change_matches_epoch", 508),), 508),
    Plant("invalid fencing value", ENG, lambda d: edit_record(d / LOG, 7, fenced=2),
          (("broker_change_values", 7),), 7),
    Plant("UnfenceBrokerRecord at MV 3.6", ENG, lambda d: edit_record(d / LOG, 7, api_key=8, version=0, id=1, epoch=5),
          (("fencing_record_for_mv", 7),), 7),
    Plant("RegisterBrokerRecord version ahead of the MV", ENG, lambda d: edit_record(d / LOG, 5, version=3),
          (("record_version_for_mv", 5),), 5),
    Plant("nested metadata transaction", ENG, lambda d: edit_record(d / LOG, 4, api_key=23, version=0, name="x"),
          (("transaction_nesting", 4),), 4),
    Plant("missing LeaderChange at a new epoch", JEO, lambda d: replace_with_noop(d / LOG, 354),
          (("epoch_starts_with_leader_change", 354),), 354),
    Plant("LeaderChange naming a non-voter", JEO, lambda d: set_control(d / LOG, 298, LEADER_CHANGE, {
        "version": 0, "leader_id": 2, "voters": ({"voter_id": 1},), "granting_voters": ({"voter_id": 1},)}),
          (("leader_change_consistent", 298),), 298),
    Plant("offset gap", ENG, lambda d: edit_header(d / LOG, 100, base_offset=101),
          (("offsets_contiguous", 101),), 101),
    Plant("leader epoch goes back", ICH, lambda d: edit_header(d / LOG, 150, leader_epoch=1),
          (("leader_epoch_monotonic", 150), ("epoch_starts_with_leader_change", 151)), 150),
    Plant("non-KRaft producer id", ENG, lambda d: edit_header(d / LOG, 200, producer_id=7),
          (("batch_kraft_fields", 200),), 200),
    Plant("snapshot disagrees with the log", REN, lambda d: edit_record(d / SNAPSHOT, 3, broker_epoch=4),
          (("snapshot_matches_log", 7111),), 7111),
    Plant("snapshot named after the wrong epoch", REN,
          _rename(SNAPSHOT, "__cluster_metadata-0/00000000000000007111-0000000002.checkpoint"),
          (("snapshot_id_matches_log", 7111), ("snapshot_structure", 0)), 7111),
    Plant("segment named after the wrong offset", ENG, _rename(LOG, "__cluster_metadata-0/00000000000000000001.log"),
          (("segment_name_matches_base_offset", 0),), 0),
    Plant("bootstrap snapshot with another metadata.version", ENG,
          lambda d: edit_record(d / "bootstrap.checkpoint", 1, feature_level=13),
          (("bootstrap_matches_log", 0),), 0),
    Plant("quorum-state behind the log", JEO, _text("__cluster_metadata-0/quorum-state", '"leaderEpoch":6', '"leaderEpoch":5'),
          (("quorum_state_matches_log", 0),), 0),
    Plant("quorum-state names another leader", JEO, _text("__cluster_metadata-0/quorum-state", '"leaderId":1', '"leaderId":3'),
          (("quorum_state_matches_log", 0),), 0),
    Plant("leader-epoch-checkpoint disagrees", JEO, _text("__cluster_metadata-0/leader-epoch-checkpoint", "3 354", "3 355"),
          (("leader_epoch_checkpoint_matches", 0),), 0),
    Plant("partition.metadata of another topic", JEO,
          _text("__cluster_metadata-0/partition.metadata", "AAAAAAAAAAAAAAAAAAAAAQ", "AAAAAAAAAAAAAAAAAAAAAg"),
          (("partition_metadata_topic_id", 0),), 0),
]


@pytest.mark.parametrize("plant", PLANTS, ids=[p.name for p in PLANTS])
def test_planted_violation_is_reported(plant: Plant, tmp_path: Path) -> None:
    data = copy_tree(CORPUS_DIR / plant.directory, tmp_path / "data")
    plant.change(data)
    report = audit_paths([data]).directories[0]
    assert not report.errors, [f.error for f in report.errors]
    found = {(v.rule, v.offset) for v in report.violations}
    assert set(plant.expected) <= found, report.violations[:5]
    log_violations = [v for v in report.violations if v.file.endswith(".log")]
    assert all(v.offset >= plant.planted_at for v in log_violations), log_violations[:3]
    for rule, _ in plant.expected:
        assert rule in RULE_DOCS and "§" in RULE_DOCS[rule]


def test_every_rule_is_planted_here_or_in_the_synthetic_logs() -> None:
    from test_metalog_synthetic import BREAKS
    from test_metalog_voters import VOTER_BREAKS

    planted = {rule for p in PLANTS for rule, _ in p.expected} | {b[3] for b in BREAKS if b[3]} | \
        {b[2] for b in VOTER_BREAKS}
    assert set(RULE_DOCS) - planted == {"log_start_has_snapshot"}  # tests/test_metalog_layouts.py
    assert len(planted) >= 12
