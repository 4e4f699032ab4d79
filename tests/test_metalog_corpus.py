"""Every bundled real KRaft data directory audits with zero violations, and the report says what the corpus
README says each holds; the project's own cluster runs (``kraftspec__cluster-runs``) also pass the quorum audit."""

from __future__ import annotations

import json
import random
import struct
from pathlib import Path

import pytest

from kraftspec.traces.metalog.audit import audit_command, audit_paths
from kraftspec.traces.metalog.corpus import CORPUS_DIR, RUNS_DIR, data_dirs, public_dirs
from kraftspec.traces.metalog.quorum import audit_quorum
from kraftspec.traces.metalog.report import DirectoryReport

EXPECTED = {
    # folder: (metadata.version, batches, records of interest, raft epochs)
    "furkancets__flink-docker": (None, 4, {"PartitionRecord": 3, "RegisterBrokerRecord": 1, "UnfenceBrokerRecord": 1,
                                           "TopicRecord": 1, "LeaderChange": 1}, [1]),
    "engkoskostaman97__setup_install_kafka_from_windows": (14, 506, {"RegisterBrokerRecord": 1}, [1]),
    "Jeong-Rae__KafkaDemo": (14, 3068, {"RegisterBrokerRecord": 4}, [1, 2, 3, 5, 6]),
    "ichwansh03__kafka-migration-log4j2": (21, 8568, {"RegisterBrokerRecord": 13, "RegisterControllerRecord": 13,
                                                      "PartitionChangeRecord": 1173, "RemoveTopicRecord": 1},
                                           list(range(1, 14))),
    "renoagilsaputra__kafka": (14, 18149, {"PartitionChangeRecord": 357, "RegisterBrokerRecord": 5},
                               [1, 2, 3, 4, 5]),
}


RUNS = {
    # run folder / moment: (nodes, voters, committed end, (epoch, leader) from LeaderChange, nodes with a stale suffix
    # and where it starts, records of interest on node 1)
    "netns-controller-cut-off-seed20/during-cut": (6, (1, 2, 3), 51, [(1, 3), (3, 1)], {3: 46},
                                                   {"RegisterBrokerRecord": 3, "BrokerRegistrationChangeRecord": 6}),
    "netns-controller-cut-off-seed20/stopped": (6, (1, 2, 3), 93, [(1, 3), (3, 1)], {},
                                                {"RegisterBrokerRecord": 3, "BrokerRegistrationChangeRecord": 9}),
    "netns-all-scenarios-seed20/stopped": (4, (1, 2, 3), 539, [(2, 3), (4, 1)], {},
                                           {"RegisterBrokerRecord": 9, "PartitionChangeRecord": 27,
                                            "UnregisterBrokerRecord": 1, "RegisterControllerRecord": 4}),
    "netns-combined-leader-killed-seed21/stopped": (3, (1, 2, 3), 118, [(1, 3), (2, 2)], {},
                                                    {"RegisterBrokerRecord": 5, "RegisterControllerRecord": 4}),
    # kraft.version 1: voters from the VotersRecords (tests/test_cluster_dynamic.py reads what the run did)
    "netns-dynamic-quorum-seed30/added": (4, (1, 2, 3), 39, [(1, 1)], {}, {"Voters": 2, "KRaftVersion": 1}),
    "netns-dynamic-quorum-seed30/removed": (4, (2, 3), 74, [(1, 1), (2, 3)], {}, {"Voters": 3, "KRaftVersion": 1}),
    "netns-dynamic-quorum-seed30/stopped": (4, (1, 2, 3), 136, [(1, 1), (2, 3), (3, 2)], {},
                                            {"Voters": 4, "KRaftVersion": 1}),
}


def _key(path: str) -> str:
    """A public directory by its folder, a run's by ``run/moment/node-N``."""
    relative = Path(path).relative_to(CORPUS_DIR)
    if Path(path).is_relative_to(RUNS_DIR):
        return str(Path(path).relative_to(RUNS_DIR).parent)
    return relative.parts[0]


@pytest.fixture(scope="module")
def reports() -> dict[str, DirectoryReport]:
    report = audit_paths(data_dirs())
    return {_key(d.path): d for d in report.directories}


def test_every_corpus_directory_is_clean(reports: dict[str, DirectoryReport]) -> None:
    runs = {f"{run}/node-{n}" for run, (nodes, *_) in RUNS.items() for n in range(1, nodes + 1)}
    assert set(reports) == set(EXPECTED) | runs
    for name, d in reports.items():
        assert d.violations == [] and d.errors == [], name
        assert all(f.status in ("audited", "skipped") for f in d.files), name


@pytest.mark.parametrize("run", sorted(RUNS))
def test_each_cluster_run_passes_the_quorum_audit(reports: dict[str, DirectoryReport], run: str) -> None:
    """Each kept run (see the corpus README for how it was made): its replicas agree, with the committed prefix,
    leaders and stale suffixes the run left; every node's audit names its own node id and the run's cluster id."""
    nodes, voters, committed_end, leaders, stale, counts = RUNS[run]
    quorum = audit_quorum([RUNS_DIR / run])
    assert quorum.ok and quorum.exit_code == 0, quorum.render()
    assert (len(quorum.replicas), quorum.voters, quorum.committed_end) == (nodes, voters, committed_end)
    assert {int(n.split()[1]): int(n.split("from offset ")[1].split()[0]) for n in quorum.notes} == stale
    mine = [reports[f"{run}/node-{n}"] for n in range(1, nodes + 1)]
    assert [d.node_id for d in mine] == list(range(1, nodes + 1)) and len({d.cluster_id for d in mine}) == 1
    assert {k: mine[0].record_counts.get(k) for k in counts} == counts
    for d in mine:  # a node with a stale suffix has not yet seen the later epochs' LeaderChange
        seen = [(e, leader) for e, _, leader in d.raft_epochs]
        assert seen == leaders if d.node_id not in stale else leaders[:len(seen)] == seen != leaders, d.raft_epochs


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_report_matches_the_corpus_readme(reports: dict[str, DirectoryReport], name: str) -> None:
    mv, batches, counts, epochs = EXPECTED[name]
    d = reports[name]
    assert d.metadata_version == mv
    log = next(f for f in d.files if f.kind == "log segment")
    assert log.batches == batches
    for record, count in counts.items():
        assert d.record_counts[record] == count
    assert [e for e, _, _ in d.raft_epochs] == epochs
    assert all(leader == 1 for _, _, leader in d.raft_epochs)


def test_broker_registrations_and_epochs(reports: dict[str, DirectoryReport]) -> None:
    jeong = reports["Jeong-Rae__KafkaDemo"].brokers[1]
    assert [r[:2] for r in jeong.registrations] == [(6, 6), (300, 300), (384, 384), (741, 741)]
    assert (jeong.epoch, jeong.fenced) == (741, False)
    furkan = reports["furkancets__flink-docker"].brokers[1]
    assert furkan.registrations[0][:2] == (1, 0)  # the broker epoch is not the record's offset


def test_the_kraft_snapshot_is_compared_with_the_log(reports: dict[str, DirectoryReport]) -> None:
    assert reports["renoagilsaputra__kafka"].snapshots_compared == ["00000000000000007111-0000000001.checkpoint at offset 7111"]


def test_every_snapshot_audits_alone() -> None:
    snapshots = sorted(p for d in public_dirs() for p in d.glob("**/*.checkpoint"))
    assert len(snapshots) == 5
    report = audit_paths(snapshots)
    assert report.ok
    kraft = next(d for d in report.directories if d.path.endswith("7111-0000000001.checkpoint"))
    assert kraft.record_counts["PartitionRecord"] == 51 and kraft.metadata_version == 14


def test_json_report_and_exit_status(capsys: pytest.CaptureFixture[str]) -> None:
    assert audit_command([str(p) for p in public_dirs()], as_json=True, show_progress=False) == 0
    parsed = json.loads(capsys.readouterr().out)
    assert parsed["ok"] is True and len(parsed["directories"]) == 5
    assert {d["metadata_version_name"] for d in parsed["directories"]} == {None, "3.6-IV2", "3.9-IV0"}


def test_text_report_and_failing_exit_status(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "00000000000000000000.log"
    bad.write_bytes(b"\x00" * 80)
    assert audit_command([str(bad)], show_progress=False) == 2  # a format error is bad input, not a finding
    out = capsys.readouterr().out
    assert f"{bad}:8: batchLength 0 outside" in out


def test_progress_counts_every_log_byte() -> None:
    seen: list[int] = []
    audit_paths(data_dirs(), seen.append)
    assert sum(seen) == sum(p.stat().st_size for p in CORPUS_DIR.glob("**/*.log"))


def test_the_noop_fast_path_changes_nothing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from kraftspec.traces.metalog import audit
    from kraftspec.traces.metalog.plant import copy_tree, edit_header

    broken = copy_tree(CORPUS_DIR / "Jeong-Rae__KafkaDemo" / "kraft-combined-logs", tmp_path / "data")
    edit_header(broken / "__cluster_metadata-0" / "00000000000000000000.log", 500, leader_epoch=9)
    paths = data_dirs() + [broken]
    fast = audit_paths(paths).dumps()
    monkeypatch.setattr(audit, "NOOP_BATCH_SIZE", -1)
    assert audit_paths(paths).dumps() == fast


def _is_noop_at(data: bytes, pos: int, offset: int, epoch: int) -> bool:
    """The NoOp fast path's condition for one batch, byte range by byte range."""
    from kraftspec.traces.metalog.audit import NOOP_TAIL

    return (data[pos:pos + 8] == offset.to_bytes(8, "big") and data[pos + 8:pos + 16] == struct.pack(">ii", 60, epoch)
            and data[pos + 21:pos + 27] == bytes(6) and data[pos + 43:pos + 72] == NOOP_TAIL)


def test_a_noop_run_ends_at_the_first_batch_that_breaks_the_fast_path_condition() -> None:
    """``noop_run`` checks a run column by column; batch by batch, the run must end at the same batch."""
    from kraftspec.traces.metalog.audit import noop_run
    from kraftspec.traces.metalog.corpus import largest_log
    from kraftspec.traces.metalog.segments import read_batches

    raw = largest_log().read_bytes()
    with open(largest_log(), "rb") as f:
        noops = [(b.file_offset, b.base_offset, b.leader_epoch) for b in read_batches(f, "log") if len(b.data) == 72]
    rng = random.Random(20)
    for _ in range(400):
        pos, offset, epoch = rng.choice(noops)
        count = rng.randint(1, min(512, (len(raw) - pos) // 72))
        window = bytearray(raw[:pos + 72 * count])
        for _ in range(rng.choice([0, 1, 2])):
            window[pos + rng.randrange(72 * count)] ^= 1 << rng.randrange(8)
        data = bytes(window)
        expected = 0
        while expected < count and _is_noop_at(data, pos + 72 * expected, offset + expected, epoch):
            expected += 1
        assert noop_run(memoryview(data), pos, count, offset, struct.pack(">ii", 60, epoch)) == expected
