"""A synthetic Kafka 4.3-style three-controller log (kraft.version 1, ELR on, record versions 4.3 writes) audits
clean, and breaking it one record at a time trips the matching rule: the corpus only has 3.x single-node logs."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import pytest

from kraftspec.traces.metalog.audit import audit_paths
from kraftspec.traces.metalog.control import (
    KRAFT_VERSION,
    KRAFT_VOTERS,
    LEADER_CHANGE,
    SNAPSHOT_FOOTER,
    SNAPSHOT_HEADER,
    encode_control,
)
from kraftspec.traces.metalog.schema import encode_metadata_value, uuid_text
from kraftspec.traces.metalog.segments import CONTROL_FLAG, Record, encode_batch

DIR_A, DIR_B, DIR_C = (uuid_text(bytes([0xD0 + i]) * 16) for i in range(3))
TOPIC = uuid_text(b"\x70" * 16)
INCARNATION = [uuid_text(bytes([0x10 + i]) * 16) for i in range(9)]
MV_4_3 = 30
Rec = tuple[int, int, dict[str, Any]]


class LogBuilder:
    """Appends batches the way a leader would: contiguous offsets, the current epoch, one timestamp per batch."""

    def __init__(self) -> None:
        self.out = bytearray()
        self.offset, self.epoch, self.time = 0, 0, 1_760_000_000_000
        self.epochs: list[tuple[int, int]] = []

    def _batch(self, pairs: list[tuple[Optional[bytes], bytes]], control: bool) -> int:
        first = self.offset
        self.time += 500
        records = [Record(0, first + i, self.time, key, value, 0) for i, (key, value) in enumerate(pairs)]
        self.out += encode_batch(first, self.epoch, records, attributes=CONTROL_FLAG if control else 0,
                                 base_timestamp=self.time)
        self.offset += len(pairs)
        return first

    def elect(self, leader: int, granting: tuple[int, ...], with_voters: bool = False) -> int:
        self.epoch += 1
        self.epochs.append((self.epoch, self.offset))
        voters = tuple({"voter_id": v} for v in (1, 2, 3))
        pairs = [encode_control(LEADER_CHANGE, {"version": 0, "leader_id": leader, "voters": voters,
                                                "granting_voters": tuple({"voter_id": g} for g in granting)})]
        if with_voters:
            pairs += [encode_control(KRAFT_VERSION, {"version": 0, "kraft_version": 1}), voters_record()]
        return self._batch(pairs, control=True)

    def data(self, *records: Rec) -> int:
        return self._batch([(None, encode_metadata_value(*r)) for r in records], control=False)

    def noops(self, n: int) -> None:
        for _ in range(n):
            self.data((20, 0, {}))


def voters_record() -> tuple[bytes, bytes]:
    return encode_control(KRAFT_VOTERS, {"version": 0, "voters": tuple(
        {"voter_id": v, "voter_directory_id": uuid_text(bytes([0xA0 + v]) * 16), "endpoints": (
            {"name": "CONTROLLER", "host": f"c{v}", "port": 9093},),
         "kraft_version_feature": {"min_supported_version": 0, "max_supported_version": 1}} for v in (1, 2, 3))})


def register(broker: int, epoch: int, incarnation: str, dirs: tuple[str, ...]) -> Rec:
    return (0, 4, {"broker_id": broker, "incarnation_id": incarnation, "broker_epoch": epoch, "log_dirs": dirs,
                   "end_points": ({"name": "PLAINTEXT", "host": f"b{broker}", "port": 9092, "security_protocol": 0},),
                   "features": ({"name": "metadata.version", "min_supported_version": 7, "max_supported_version": 30},)})


def change(broker: int, epoch: int, **fields: Any) -> Rec:
    version = 1 if fields.get("in_controlled_shutdown") else 0
    return (17, version, {"broker_id": broker, "broker_epoch": epoch, **fields})


def partition_change(**fields: Any) -> Rec:
    return (5, 2, {"partition_id": 0, "topic_id": TOPIC, **fields})


def build(tmp: Path, edits: Optional[dict[str, Rec]] = None) -> tuple[Path, dict[str, int]]:
    """Write the data directory; ``edits`` replaces named steps. Returns the directory and each step's offset."""
    edits = edits or {}
    at: dict[str, int] = {}
    log = LogBuilder()

    def step(name: str, record: Rec) -> int:
        at[name] = log.data(edits.get(name, record))
        return at[name]

    log.elect(1, (1, 2), with_voters=True)
    at["bootstrap"] = log.data(
        (23, 0, {"name": "Bootstrap records"}), (12, 0, {"name": "metadata.version", "feature_level": MV_4_3}),
        (12, 0, {"name": "eligible.leader.replicas.version", "feature_level": 1}),
        (4, 0, {"resource_type": 4, "resource_name": "", "name": "min.insync.replicas", "value": "1"}), (24, 0, {}))
    for c in (1, 2, 3):
        log.data((27, 0, {"controller_id": c, "incarnation_id": INCARNATION[c], "end_points": (
            {"name": "CONTROLLER", "host": f"c{c}", "port": 9093, "security_protocol": 0},)}))
    epochs = {}
    for b, d in ((4, DIR_A), (5, DIR_B), (6, DIR_C)):
        epochs[b] = log.offset
        step(f"register{b}", register(b, log.offset, INCARNATION[b], (d,)))
        step(f"unfence{b}", change(b, epochs[b], fenced=-1))
    log.noops(3)
    step("topic", (2, 0, {"name": "orders", "topic_id": TOPIC}))
    step("partition", (3, 2, {"partition_id": 0, "topic_id": TOPIC, "replicas": (4, 5, 6), "isr": (4, 5, 6),
                              "leader": 4, "leader_epoch": 0, "partition_epoch": 0, "directories": (DIR_A, DIR_B, DIR_C)}))
    step("shrink", partition_change(isr=(4, 5)))
    log.noops(2)
    step("ics4", change(4, epochs[4], in_controlled_shutdown=1))
    step("move", partition_change(leader=5, isr=(5,)))
    step("fence4", change(4, epochs[4], fenced=1))
    log.elect(2, (2, 3))
    log.noops(2)
    epochs[4] = log.offset
    step("reregister4", register(4, log.offset, INCARNATION[7], (DIR_A,)))
    step("unfence4b", change(4, epochs[4], fenced=-1))
    step("expand", partition_change(isr=(5, 4)))
    step("reassign", partition_change(replicas=(5, 4), leader=5, directories=(DIR_B, DIR_A)))
    step("clear_elr", (28, 0, {"topic_name": ""}))
    log.noops(3)

    data = tmp / "data"
    part = data / "__cluster_metadata-0"
    part.mkdir(parents=True)
    (part / "00000000000000000000.log").write_bytes(bytes(log.out))
    (part / "quorum-state").write_text(
        '{"leaderId":2,"leaderEpoch":2,"votedId":-1,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":1}')
    (part / "leader-epoch-checkpoint").write_text(
        f"0\n{len(log.epochs)}\n" + "".join(f"{e} {o}\n" for e, o in log.epochs))
    header = encode_control(SNAPSHOT_HEADER, {"version": 0, "last_contained_log_timestamp": 0})
    kraft = encode_control(KRAFT_VERSION, {"version": 0, "kraft_version": 1})
    bootstrap = encode_batch(0, 0, [Record(0, 0, 0, *header, 0), Record(0, 1, 0, *kraft, 0),
                                    Record(0, 2, 0, *voters_record(), 0)], attributes=CONTROL_FLAG)
    bootstrap += encode_batch(3, 0, [Record(0, 3, 0, *encode_control(SNAPSHOT_FOOTER, {"version": 0}), 0)],
                              attributes=CONTROL_FLAG)
    (part / "00000000000000000000-0000000000.checkpoint").write_bytes(bootstrap)
    (data / "meta.properties").write_text("version=1\nnode.id=2\ncluster.id=PCbusMznQZi20FQlE8ke6g\n")
    return data, at


def test_a_three_controller_4_3_log_audits_clean(tmp_path: Path) -> None:
    data, _ = build(tmp_path)
    report = audit_paths([data]).directories[0]
    assert report.ok, report.violations[:5]
    assert report.metadata_version == MV_4_3 and report.controllers == [1, 2, 3]
    assert [(e, leader) for e, _, leader in report.raft_epochs] == [(1, 1), (2, 2)]
    assert report.record_counts["KRaftVersion"] == 1 and report.record_counts["Voters"] == 1
    assert (report.brokers[4].epoch, report.brokers[4].fenced, len(report.brokers[4].registrations)) == (
        report.brokers[4].registrations[-1][1], False, 2)
    assert {f.kind for f in report.files} >= {"bootstrap snapshot", "log segment", "quorum-state"}


BREAKS = [
    ("unfence with a stale epoch", "unfence4b", change(4, 1, fenced=-1), "broker_change_matches_epoch", "unfence4b"),
    ("v3 registration at 4.3", "register5", (0, 3, register(5, 0, INCARNATION[5], (DIR_B,))[2]),
     "record_version_for_mv", "register5"),
    ("v1 partition change at 4.3", "shrink", (5, 1, {"partition_id": 0, "topic_id": TOPIC, "isr": (4, 5)}),
     "record_version_for_mv", "shrink"),
    ("ISR emptied under its leader", "shrink", partition_change(isr=()), "leader_in_isr", "shrink"),
    ("controlled-shutdown broker kept as leader", "move", partition_change(isr=(5,)), "leader_in_isr", "move"),
    ("fenced broker added to the ISR", "unfence4b", change(4, 0, fenced=0), "isr_additions_active", "expand"),
    ("leader moved to an unregistered broker", "move", partition_change(leader=7, isr=(7,), replicas=(4, 5, 7)),
     "new_leader_active", "move"),
    ("controller registered twice is fine", "topic", (27, 0, {"controller_id": 2, "incarnation_id": INCARNATION[8]}),
     None, "topic"),
]


@pytest.mark.parametrize("name, step, record, rule, where", BREAKS, ids=[b[0] for b in BREAKS])
def test_breaking_the_synthetic_log(tmp_path: Path, name: str, step: str, record: Rec, rule: Optional[str],
                                    where: str) -> None:
    data, at = build(tmp_path, {step: record})
    report = audit_paths([data]).directories[0]
    found = {(v.rule, v.offset) for v in report.violations}
    if rule is None:
        assert report.violations == [] or all(v.offset > at[where] for v in report.violations), report.violations[:3]
    else:
        assert (rule, at[where]) in found, report.violations[:5]


def test_a_same_incarnation_re_registration_at_a_new_epoch_audits_clean(tmp_path: Path) -> None:
    """§1.3: controllers before the amendment (3.7's ``registerBroker``) gave a re-registering incarnation a new
    epoch and registered it fenced, as a new incarnation; a log does not say which controller wrote it, so both
    forms audit clean, and an epoch that goes back is still reported."""
    _, at = build(tmp_path / "plain")
    data, _ = build(tmp_path / "new-epoch", {"reregister4": register(4, at["reregister4"], INCARNATION[4], (DIR_A,))})
    assert audit_paths([data]).directories[0].violations == []
    data, at = build(tmp_path / "back", {"reregister4": register(4, 1, INCARNATION[4], (DIR_A,))})
    found = {(v.rule, v.offset) for v in audit_paths([data]).directories[0].violations}
    assert ("broker_epoch_increases", at["reregister4"]) in found
