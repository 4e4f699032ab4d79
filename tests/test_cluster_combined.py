"""A combined-mode KRaft cluster (3 nodes, each broker and controller) of Kafka 4.3.1, in network namespaces or on
127.0.0.1 ports (``KRAFTSPEC_CLUSTER_NETWORK``; the mode that ran is printed) (issue 20): the
node that is the active controller killed and restarted; audit, quorum audit and live answers after each step."""

from __future__ import annotations

from pathlib import Path

from kraftspec.cluster.runner import Cluster
from kraftspec.cluster.scenarios import COMBINED, check_cluster, run_scenario
from kraftspec.traces.metalog.audit import audit_paths
from kraftspec.traces.metalog.quorum import audit_quorum

SEED = 21


def test_combined_mode_cluster_under_a_killed_leader(tmp_path: Path) -> None:
    print(f"combined cluster seed {SEED} (reproduce: kraftspec cluster run --layout combined --seed {SEED})")
    with Cluster(tmp_path / "cluster", layout="combined", seed=SEED, log=print) as running:
        print(f"network mode {running.mode} ({running.mode_reason})")
        running.start()
        print(f"start-up {running.timings.start:.1f} s, memory (MB) {({k: v >> 20 for k, v in running.memory().items()})}")
        initial = check_cluster(running, tmp_path / "checks" / "initial", "initial")
        assert initial.ok, initial.line()
        for i, name in enumerate(COMBINED):
            result = run_scenario(running, name, SEED + i, tmp_path / "checks")
            assert result.ok, result.render()
        running.stop()
    data_dirs = [str(d) for d in running.data_dirs()]
    report = audit_paths(data_dirs)
    assert report.ok, report.render()
    quorum = audit_quorum(data_dirs)
    assert quorum.ok, quorum.render()
