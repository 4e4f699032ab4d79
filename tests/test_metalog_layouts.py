"""Directory layouts real clusters produce beyond the corpus: a log in several segments, a log whose prefix was
deleted after a snapshot (rules §5.1), a much longer log; and the small files' readers."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftspec.traces.metalog.audit import audit_paths
from kraftspec.traces.metalog.corpus import CORPUS_DIR, data_dirs
from kraftspec.traces.metalog.errors import LogFormatError
from kraftspec.traces.metalog.files import read_leader_epoch_checkpoint, read_meta_properties, read_quorum_state
from kraftspec.traces.metalog.plant import copy_tree, repeated
from kraftspec.traces.metalog.segments import read_batches

REN = CORPUS_DIR / "renoagilsaputra__kafka" / "data"
PARTITION = "__cluster_metadata-0"


def split_log(data: Path, cuts: list[int], drop_before: int = 0) -> list[str]:
    """Rewrite the log as segments starting at the first batch at or after each cut; drop batches before one."""
    log = data / PARTITION / "00000000000000000000.log"
    with open(log, "rb") as f:
        batches = [(b.base_offset, b.data) for b in read_batches(f, str(log))]
    log.unlink()
    segments: dict[int, bytearray] = {}
    current = None
    for base, raw in batches:
        if base < drop_before:
            continue
        if current is None or any(current < cut <= base for cut in cuts):
            current = base
            segments[current] = bytearray()
        segments[current] += raw
    for base, raw in segments.items():
        (data / PARTITION / f"{base:020d}.log").write_bytes(bytes(raw))
    return [f"{base:020d}.log" for base in segments]


def test_a_log_in_three_segments_is_clean(tmp_path: Path) -> None:
    data = copy_tree(REN, tmp_path / "data")
    names = split_log(data, [5000, 12000])
    report = audit_paths([data]).directories[0]
    assert report.ok, report.violations[:3]
    segments = [f for f in report.files if f.kind == "log segment"]
    assert [Path(f.path).name for f in segments] == names and len(names) == 3
    assert sum(f.batches for f in segments) == 18149
    assert report.snapshots_compared == ["00000000000000007111-0000000001.checkpoint at offset 7111"]


def test_the_noop_fast_path_is_taken_in_every_segment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the batches that are not single NoOps at the next offset, and each segment's first, take the general
    path (a throughput property: every batch's CRC is checked by the reader either way)."""
    from kraftspec.traces.metalog import audit

    general: list[int] = []
    checked = audit._LogAudit.batch

    def counted(self: audit._LogAudit, batch: audit.Batch) -> int:
        general.append(batch.base_offset)
        return checked(self, batch)
    monkeypatch.setattr(audit._LogAudit, "batch", counted)
    audit_paths([REN])
    whole = len(general)
    general.clear()
    data = copy_tree(REN, tmp_path / "data")
    names = split_log(data, [5000, 12000])
    audit_paths([data])
    assert whole < 40 and len(general) <= whole + len(names) - 1


def test_a_misnamed_second_segment_is_reported(tmp_path: Path) -> None:
    data = copy_tree(REN, tmp_path / "data")
    names = split_log(data, [5000])
    (data / PARTITION / names[1]).rename(data / PARTITION / "00000000000000004000.log")
    report = audit_paths([data]).directories[0]
    assert [(v.rule, v.offset) for v in report.violations] == [("segment_name_matches_base_offset", int(names[1][:-4]))]


def test_a_log_whose_prefix_was_deleted_is_rebuilt_from_the_snapshot(tmp_path: Path) -> None:
    data = copy_tree(REN, tmp_path / "data")
    split_log(data, [], drop_before=7000)
    report = audit_paths([data]).directories[0]
    assert report.ok, report.violations[:3]
    assert report.log_start_offset is not None and 7000 <= report.log_start_offset <= 7111
    seed = next(f for f in report.files if f.kind == "snapshot")
    assert seed.note is not None and "seeds the image" in seed.note
    assert report.partitions == 51 and report.brokers[1].epoch == 17633


def test_a_log_without_its_prefix_or_a_snapshot_is_reported(tmp_path: Path) -> None:
    data = copy_tree(REN, tmp_path / "data")
    split_log(data, [], drop_before=8000)
    report = audit_paths([data]).directories[0]
    assert [(v.rule, v.offset) for v in report.violations] == [("log_start_has_snapshot", report.log_start_offset)]
    snapshot = next(f for f in report.files if f.kind == "snapshot")
    assert snapshot.status == "audited" and "structure checked" in (snapshot.note or "")


def test_a_long_log_keeps_its_records_and_bounded_violations(tmp_path: Path) -> None:
    log = tmp_path / "00000000000000000000.log"
    with open(log, "wb") as out:
        for raw in repeated(REN / PARTITION / "00000000000000000000.log", 3):
            out.write(raw)
    report = audit_paths([log]).directories[0]
    assert report.log_end_offset == 3 * 18566 and report.record_counts["NoOpRecord"] == 3 * 18122
    rules = {v.rule for v in report.violations}
    assert "offsets_contiguous" not in rules and "leader_epoch_monotonic" in rules


@pytest.mark.parametrize("text, offset, message", [
    ('{"leaderId":1}', 0, "key 'data_version' is missing"),
    ('{"leaderId":1,"data_version":2}', 14, "key 'data_version' is 2"),
    ('{"leaderId":"x","leaderEpoch":1,"votedId":-1,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":1}', 1,
     "key 'leaderId' must be an integer"),
    ('{"leaderId":1,\n "leaderEpoch":}', 30, "not valid JSON"),
])
def test_quorum_state_errors(tmp_path: Path, text: str, offset: int, message: str) -> None:
    path = tmp_path / "quorum-state"
    path.write_text(text)
    with pytest.raises(LogFormatError) as info:
        read_quorum_state(str(path))
    assert info.value.offset == offset and message in info.value.message


def test_quorum_state_v1(tmp_path: Path) -> None:
    path = tmp_path / "quorum-state"
    path.write_text('{"leaderId":2,"leaderEpoch":7,"votedId":-1,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":1}')
    state = read_quorum_state(str(path))
    assert (state.leader_id, state.leader_epoch, state.current_voters, state.data_version) == (2, 7, None, 1)


@pytest.mark.parametrize("text, offset, message", [
    ("1\n0\n", 0, "only version 0"),
    ("0\n2\n1 0\n", 2, "entry count 2 but 1"),
    ("0\nx\n", 2, "not an integer"),
    ("0\n2\n1 0\n2 x\n", 8, "not 'epoch startOffset'"),
    ("", 0, "needs a version and a count"),
])
def test_leader_epoch_checkpoint_errors(tmp_path: Path, text: str, offset: int, message: str) -> None:
    path = tmp_path / "leader-epoch-checkpoint"
    path.write_text(text)
    with pytest.raises(LogFormatError) as info:
        read_leader_epoch_checkpoint(str(path))
    assert info.value.offset == offset and message in info.value.message


def test_meta_properties_error_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "meta.properties"
    path.write_text("#\nversion=1\nnode.id=x\ncluster.id=PCbusMznQZi20FQlE8ke6g\n")
    with pytest.raises(LogFormatError) as info:
        read_meta_properties(str(path))
    assert info.value.offset == 12 and "node.id" in info.value.message


def test_a_checkpoint_lagging_the_newest_epoch_is_tolerated(tmp_path: Path) -> None:
    data = copy_tree(REN, tmp_path / "data")
    checkpoint = data / PARTITION / "leader-epoch-checkpoint"
    checkpoint.write_text("0\n4\n1 0\n2 10365\n3 11973\n4 17541\n")
    assert audit_paths([data]).ok
    checkpoint.write_text("0\n4\n1 0\n2 10365\n3 11973\n5 17541\n")
    assert [v.rule for v in audit_paths([data]).directories[0].violations] == ["leader_epoch_checkpoint_matches"]


def test_a_folder_of_data_directories_audits_each_one(tmp_path: Path) -> None:
    """A corpus or one folder per quorum node: every data directory below it is audited, none twice."""
    for node in ("node-1", "node-2"):
        copy_tree(REN, tmp_path / "quorum" / node / "data")
    report = audit_paths([tmp_path / "quorum"])
    assert [Path(d.path).parent.name for d in report.directories] == ["node-1", "node-2"]
    assert report.ok
    corpus = audit_paths([CORPUS_DIR])
    assert len(corpus.directories) == len(data_dirs()) and corpus.ok


def test_a_folder_without_any_metadata_partition_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    report = audit_paths([tmp_path / "empty"])
    assert not report.ok
    assert "no __cluster_metadata-0 directory" in report.render()
