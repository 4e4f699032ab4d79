"""The quorum audit (`kraftspec audit --quorum`) on replicas made from a bundled log, without Kafka: copies agree;
one changed committed record (CRC recomputed), a replica behind, two leaders named for one epoch."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kraftspec.cli import main
from kraftspec.traces.metalog.corpus import CORPUS_DIR
from kraftspec.traces.metalog.plant import copy_tree, edit_record
from kraftspec.traces.metalog.quorum import (
    COMMITTED_PREFIX_IDENTICAL,
    ONE_LEADER_PER_EPOCH,
    QUORUM_STATE_CONSISTENT,
    audit_quorum,
)
from kraftspec.traces.metalog.segments import read_batches

SOURCE = CORPUS_DIR / "Jeong-Rae__KafkaDemo" / "kraft-combined-logs"
LOG = Path("__cluster_metadata-0") / "00000000000000000000.log"


@pytest.fixture()
def replicas(tmp_path: Path) -> Path:
    """Three replicas of a one-voter quorum's log: node 1 (the voter) and two observers holding the same log."""
    for node in (1, 2, 3):
        data = copy_tree(SOURCE, tmp_path / f"node-{node}")
        meta = data / "meta.properties"
        meta.write_text(meta.read_text().replace("node.id=1", f"node.id={node}"))
    return tmp_path


def test_identical_replicas_pass(replicas: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = audit_quorum([str(replicas)])
    assert report.ok and report.voters == (1,) and report.committed_end == 3072 and report.latest_leader == 1
    assert main(["audit", "--quorum", "--json", str(replicas)]) == 0
    assert json.loads(capsys.readouterr().out)["committed_end"] == 3072


def test_a_changed_committed_record_is_named_at_its_offset_and_replica(replicas: Path) -> None:
    edit_record(replicas / "node-2" / LOG, 300, rack="planted")
    report = audit_quorum([str(replicas)])
    assert [(v.rule, v.offset, v.replica.split()[1]) for v in report.violations] == [
        (COMMITTED_PREFIX_IDENTICAL, 300, "2")], report.render()
    assert main(["audit", "--quorum", str(replicas)]) == 1


def test_a_replica_behind_is_not_a_finding(replicas: Path) -> None:
    log = replicas / "node-3" / LOG
    with open(log, "rb") as stream:
        cut = [b.file_offset for b in read_batches(stream, str(log))][1500]
    log.write_bytes(log.read_bytes()[:cut])
    report = audit_quorum([str(replicas)])
    assert report.ok, report.render()
    assert next(r for r in report.replicas if r.node_id == 3).log_end < report.committed_end


def test_two_leaders_named_for_one_epoch(replicas: Path) -> None:
    state = replicas / "node-3" / "__cluster_metadata-0" / "quorum-state"
    state.write_text(state.read_text().replace('"leaderId":1', '"leaderId":2'))
    rules = {v.rule for v in audit_quorum([str(replicas)]).violations}
    assert rules == {ONE_LEADER_PER_EPOCH, QUORUM_STATE_CONSISTENT}


def _epoch_5_from(log: Path, first: int, last: int) -> None:
    """Rewrite the batches of ``log`` whose base offset is in ``first..last`` into epoch 5 (CRC recomputed)."""
    from kraftspec.traces.metalog.plant import rewrite
    from kraftspec.traces.metalog.segments import reencode

    rewrite(log, lambda batch, records: reencode(batch, records, leader_epoch=5)
            if first <= batch.base_offset <= last else None)


def test_a_stale_suffix_of_lower_epochs_is_a_note_and_a_lower_epoch_inside_the_log_a_finding(replicas: Path) -> None:
    """A deposed leader cut off from the others keeps entries of its old epoch that no majority took (seen in the
    namespace-mode controller-cut-off scenario); KIP-595 log reconciliation truncates them. Only a suffix is stale:
    one lower-epoch batch followed by batches of the committed epoch contradicts the committed prefix."""
    _epoch_5_from(replicas / "node-3" / LOG, 3000, 10**9)
    report = audit_quorum([str(replicas)])
    assert report.ok, report.render()
    assert len(report.notes) == 1 and "node 3" in report.notes[0] and "from offset 3000 to 3072 in epoch(s) [5]" \
        in report.notes[0] and "below the committed epoch 6" in report.notes[0]
    assert "note: node 3" in report.render()
    _epoch_5_from(replicas / "node-2" / LOG, 3000, 3000)
    inside = audit_quorum([str(replicas)])
    assert [(v.rule, v.offset, v.replica.split()[1]) for v in inside.violations] == [
        (COMMITTED_PREFIX_IDENTICAL, 3000, "2")], inside.render()
