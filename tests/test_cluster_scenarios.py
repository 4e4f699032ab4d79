"""Real Apache Kafka KRaft clusters under faults (issue 20): 3 controllers + 3 brokers of Kafka 4.3.1, fetched with
Maven, each node on a test host in its own network namespace (a controller cut off has its link set down), or on
127.0.0.1 ports where namespaces cannot be used or ``KRAFTSPEC_CLUSTER_NETWORK=loopback`` forces them (a controller
cut off is SIGSTOP'd); the mode that ran is printed. One cluster serves every scenario of this module, in order; after each, the audit of
every node's metadata files, the quorum audit across them and the live answers (DescribeCluster v0–v2,
DescribeQuorum, ``kafka-cluster list-endpoints``) must agree with the reference. Then the stopped cluster's data
directories are audited once more, and a planted fault in one replica's copy must fail the quorum audit at its
offset and replica. No timing is asserted; the scenarios' times are printed (``-s``) and in the closing report.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

from kraftspec.cluster import live
from kraftspec.cluster.runner import Cluster
from kraftspec.cluster.scenarios import SEPARATE, check_cluster, fenced, run_scenario, unfenced
from kraftspec.mutants import get as mutant
from kraftspec.traces.metalog.audit import audit_paths
from kraftspec.traces.metalog.plant import copy_tree, edit_record
from kraftspec.traces.metalog.quorum import COMMITTED_PREFIX_IDENTICAL, audit_quorum
from kraftspec.traces.metalog.schema import decode_metadata_value
from kraftspec.traces.metalog.segments import read_batches

SEED = 20


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Cluster, Path]]:
    root = tmp_path_factory.mktemp("kraft-cluster")
    print(f"cluster seed {SEED} (reproduce: kraftspec cluster run --seed {SEED})")
    with Cluster(root / "cluster", seed=SEED, log=print) as running:  # killed on exit, also when a test fails
        running.start()
        print(f"network mode {running.mode} ({running.mode_reason})")
        print(f"start-up {running.timings.start:.1f} s, format {running.timings.format:.1f} s, memory (MB) "
              f"{ {k: v >> 20 for k, v in running.memory().items()} }")
        yield running, root


def test_a_fresh_cluster_audits_clean_and_answers_as_the_reference(cluster: tuple[Cluster, Path]) -> None:
    running, root = cluster
    result = check_cluster(running, root / "checks" / "initial", "initial")
    assert result.ok, result.line()
    assert result.committed_end > 0 and result.live_asked >= 7 * 6


@pytest.mark.parametrize("name", SEPARATE)
def test_scenario(cluster: tuple[Cluster, Path], name: str) -> None:
    running, root = cluster
    result = run_scenario(running, name, SEED + SEPARATE.index(name), root / "checks")
    assert result.ok, result.render()
    assert len(result.checks) >= 2  # during the fault and after it


def test_the_live_checks_catch_deliberately_wrong_reference_rules(cluster: tuple[Cluster, Path]) -> None:
    """With a broker fenced, the reference's wrong variants must disagree with Kafka's live answers."""
    running, root = cluster
    broker = 5
    running.pause(broker)
    try:
        running.wait_for(lambda: fenced(running, broker), f"broker {broker} fenced")
        scratch = root / "checks" / "mutants"
        copy = live.copy_metadata(running.nodes[running.leader()].data_dir, scratch)  # type: ignore[index]
        image = live.cluster_image(live.audited_image(copy))
        assert not image.brokers[broker].is_active
        clean, asked = live.describe_cluster_checks(running, image)
        assert not clean and asked > 0, [m.line() for m in clean]
        with mutant("controller-fenced-brokers-to-v1").applied():
            wrong, _ = live.describe_cluster_checks(running, image)
        assert wrong and all("includeFenced=False" in m.what for m in wrong), [m.line() for m in wrong]
        with mutant("controller-rack-column-only-with-racks").applied():
            tool = live.cluster_tool_checks(running, image)
        assert len(tool) == 3, [m.line() for m in tool]
        with mutant("controller-state-column-for-controllers").applied():
            tool = live.cluster_tool_checks(running, image)
        assert [m.what for m in tool] == [m for m in (f"kafka-cluster list-endpoints --bootstrap-controller "
                                                      f"{running.bootstrap_controllers}",)], [m.line() for m in tool]
    finally:
        running.resume(broker)
    running.wait_for(lambda: unfenced(running, broker), f"broker {broker} unfenced")


def _register_broker_offset(log: Path, below: int) -> int:
    """The offset of the last RegisterBrokerRecord below ``below`` in ``log``."""
    found = -1
    with open(log, "rb") as stream:
        for batch in read_batches(stream, str(log)):
            if batch.is_control:
                continue
            for record in batch.records():
                if record.offset < below and decode_metadata_value(record.value or b"")[0] == 0:
                    found = record.offset
    return found


def test_the_stopped_cluster_audits_clean_and_a_planted_fault_fails_the_quorum_audit(
        cluster: tuple[Cluster, Path]) -> None:
    running, root = cluster
    print(f"memory at the end (RSS, MB) { {k: v >> 20 for k, v in running.memory().items()} }")
    running.stop()
    data_dirs = [str(d) for d in running.data_dirs()]
    report = audit_paths(data_dirs)
    assert report.ok, report.render()
    quorum = audit_quorum(data_dirs)
    assert quorum.ok, quorum.render()
    # one committed record of controller 2's copy changed (CRC recomputed): the quorum audit names it
    planted = root / "planted"
    for node in running.controllers:
        copy_tree(node.data_dir, planted / f"node-{node.node_id}")
    log = planted / "node-2" / "__cluster_metadata-0" / "00000000000000000000.log"
    offset = _register_broker_offset(log, quorum.committed_end)
    assert offset > 0
    edit_record(log, offset, rack="planted-rack")
    assert audit_paths([str(planted / "node-2")]).ok  # alone, the changed log is a valid log
    caught = audit_quorum([str(planted)])
    assert [(v.rule, v.offset, v.replica.split()[:2]) for v in caught.violations] == \
        [(COMMITTED_PREFIX_IDENTICAL, offset, ["node", "2"])], caught.render()
    from kraftspec.cli import main

    assert main(["audit", "--quorum", str(planted)]) == 1
    assert main(["audit", "--quorum", *(str(planted / f"node-{i}") for i in (1, 3))]) == 0
