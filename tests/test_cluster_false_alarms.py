"""False alarms that real clusters' logs raised (issue 20, item 4): a cluster.id that is not a base64 UUID is a note,
and a broker's listeners or a controller's features, which Kafka builds from hash maps, compare as collections keyed
by name when a snapshot is compared with the log."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kraftspec.reference.broker_registration import BrokerRegistration
from kraftspec.reference.records import Endpoint, FeatureRange
from kraftspec.traces.metalog.audit import audit_paths
from kraftspec.traces.metalog.corpus import data_dirs
from kraftspec.traces.metalog.files import read_meta_properties
from kraftspec.traces.metalog.image import Image, differences


def test_a_cluster_id_that_is_not_a_uuid_is_a_note_not_an_error(tmp_path: Path) -> None:
    data = tmp_path / "data"
    shutil.copytree(data_dirs()[0], data)
    meta = data / "meta.properties"
    text = meta.read_text()
    lines = [line if not line.startswith("cluster.id=") else "cluster.id=Some(my-cluster)" for line in text.splitlines()]
    meta.write_text("\n".join(lines) + "\n")
    assert read_meta_properties(str(meta)).cluster_id == "Some(my-cluster)"
    report = audit_paths([str(data)])
    assert report.ok and report.exit_code == 0, report.render()
    directory = report.directories[0]
    assert directory.cluster_id == "Some(my-cluster)"
    note = next(f.note for f in directory.files if f.kind == "meta.properties")
    assert note is not None and "not a base64 UUID" in note


def test_listeners_and_features_compare_by_name_not_by_order() -> None:
    listeners = (Endpoint(name="PLAINTEXT", host="h", port=9092), Endpoint(name="CONTROLLER", host="h", port=9093))
    features = (FeatureRange(name="metadata.version", min_supported=7, max_supported=27), FeatureRange(name="kraft.version", min_supported=0, max_supported=1))
    log, snapshot = Image(), Image()
    log.brokers[1] = BrokerRegistration(broker_id=1, epoch=5, incarnation_id="inc", listeners=listeners, features=features)
    snapshot.brokers[1] = BrokerRegistration(broker_id=1, epoch=5, incarnation_id="inc", listeners=listeners[::-1], features=features[::-1])
    log.controllers[3] = ("inc3", False, listeners, features)
    snapshot.controllers[3] = ("inc3", False, listeners, features[::-1])
    assert differences(log, snapshot) == []
    snapshot.brokers[1] = BrokerRegistration(broker_id=1, epoch=5, incarnation_id="inc", listeners=(Endpoint(name="PLAINTEXT", host="h", port=9094),), features=features)
    assert [d.split("[")[0] for d in differences(log, snapshot)] == ["brokers"]


def test_a_fenced_broker_in_an_isr_of_a_pre_3_3_log_names_the_kafka_version_that_explains_it() -> None:
    from kraftspec.reference.records import PartitionRecord
    from kraftspec.traces.metalog.rules import History, isr_additions_active

    image = Image()
    image.brokers[1] = BrokerRegistration(broker_id=1, epoch=5, incarnation_id="a", fenced=False)
    image.brokers[2] = BrokerRegistration(broker_id=2, epoch=6, incarnation_id="b", fenced=True)
    record = PartitionRecord(partition_id=0, topic_id="t", replicas=(1, 2), isr=(1, 2), leader=1)
    old = isr_additions_active(image, History(), record, 10)
    assert old is not None and "KAFKA-13916" in old and "3.0–3.2" in old
    image.features["metadata.version"] = 7  # 3.3-IV3: a version that has the fix, so no explanation
    new = isr_additions_active(image, History(), record, 10)
    assert new == "broker 2 added to ISR (1, 2) while fenced"


def test_a_refused_meta_properties_is_not_headlined_unreadable_when_the_log_was_read(tmp_path: Path) -> None:
    data = tmp_path / "data"
    shutil.copytree(data_dirs()[0], data)
    (data / "meta.properties").write_text("version=7\nnode.id=1\n")
    report = audit_paths([str(data)])
    head = report.render().splitlines()[0]
    assert "META.PROPERTIES REFUSED" in head and "UNREADABLE" not in head and "VIOLATIONS" not in head
    assert report.directories[0].violation_count == 0 and report.directories[0].log_end_offset


def test_an_epoch_assigned_at_the_log_end_without_its_batch_is_tolerated(tmp_path: Path) -> None:
    """A node stopped right after becoming leader: its checkpoint lists the new epoch at the log end, where no batch
    was appended yet (seen on a controller of a real 4.3.1 cluster stopped at once)."""
    data = tmp_path / "data"
    shutil.copytree(data_dirs()[0], data)
    checkpoint = data / "__cluster_metadata-0" / "leader-epoch-checkpoint"
    version, _, *entries = checkpoint.read_text().split("\n")
    entries = [e for e in entries if e]
    end = audit_paths([str(data)]).directories[0].log_end_offset
    for extra, clean in ((f"7 {end}", True), (f"7 {end - 1}", False)):
        checkpoint.write_text("\n".join([version, str(len(entries) + 1), *entries, extra]) + "\n")
        report = audit_paths([str(data)])
        rules = [v.rule for v in report.directories[0].violations]
        assert rules == ([] if clean else ["leader_epoch_checkpoint_matches"]), report.render()


def test_a_refused_meta_properties_exits_2_naming_file_and_offset_and_counts_as_refused_not_unreadable(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The README's table: a refused file is bad input (exit 2, file and byte offset), even though the directory's
    log was read and replayed in full; the report says so and neither headlines violations nor unreadable files."""
    from kraftspec.cli import main

    data = tmp_path / "data"
    shutil.copytree(data_dirs()[0], data)
    meta = data / "meta.properties"
    meta.write_text("version=1\nnode.id=1\ncluster.id=abc\nnode.id=x\n")
    assert main(["audit", str(data)]) == 2
    out = capsys.readouterr().out
    head, *rest = out.splitlines()
    assert head.startswith(f"== {data}: META.PROPERTIES REFUSED") and "UNREADABLE" not in out
    assert "VIOLATION" not in out.replace("no violation", "")
    refused = [line for line in rest if line.lstrip().startswith("[error] meta.properties")]
    assert len(refused) == 1 and f"{meta}:" in refused[0], rest
    offset = int(refused[0].split(f"{meta}:")[1].split(":")[0])
    assert offset == meta.read_text().index("node.id=x")
    report = audit_paths([str(data)])
    assert report.exit_code == 2 and report.directories[0].only_meta_refused
    assert report.directories[0].record_counts == audit_paths([str(data_dirs()[0])]).directories[0].record_counts
    assert report.summary_line().endswith("0 violation(s), 0 unreadable file(s), 1 meta.properties refused "
                                          "(their logs read and replayed in full)")
    (data / "__cluster_metadata-0" / "quorum-state").write_text("{")  # a second, other refusal: unreadable again
    again = audit_paths([str(data)])
    assert not again.directories[0].only_meta_refused and "UNREADABLE" in again.render().splitlines()[0]


def test_validate_audit_gives_a_refused_meta_properties_its_own_verdict(tmp_path: Path,
                                                                        capfd: pytest.CaptureFixture[str]) -> None:
    """``validate --audit`` as ``audit``: a directory whose only refused file is meta.properties is neither
    unreadable nor clean; its verdict says so and the exit code is 2 (bad input)."""
    from kraftspec.cli import main

    data = tmp_path / "data"
    shutil.copytree(data_dirs()[0], data)
    (data / "meta.properties").write_text("version=1\nnode.id=1\ncluster.id=abc\nnode.id=x\n")
    report = tmp_path / "report.parquet"
    assert main(["validate", "--audit", "--engine", "local", "--report", str(report), str(data),
                 str(data_dirs()[1])]) == 2
    out = capfd.readouterr().out
    assert "audited 2 paths: 1 ok, 0 violations, 1 meta.properties refused, 0 unreadable" in out, out
    assert any(line.strip().startswith(f"{data}: ") and "meta.properties" in line for line in out.splitlines()), out
