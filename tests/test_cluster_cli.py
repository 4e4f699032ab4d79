"""`kraftspec cluster` and `kraftspec audit --quorum` arguments (no JVM started)."""

from __future__ import annotations

import pytest

from kraftspec.cli import main
from kraftspec.cluster.jars import main_class, version_tuple
from kraftspec.cluster.runner import cluster_id_from_seed
from kraftspec.cluster.scenarios import COMBINED, DYNAMIC, SCENARIOS, SEPARATE


def test_list_names_every_scenario(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cluster", "list"]) == 0
    listed = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert listed == list(SCENARIOS) and set(SEPARATE) | set(COMBINED) | set(DYNAMIC) == set(SCENARIOS)


def test_an_unknown_scenario_is_refused_before_anything_starts(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cluster", "run", "no-such-scenario"]) == 2
    assert "unknown scenario" in capsys.readouterr().err


def test_quorum_audit_needs_directories(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["audit", "--quorum"]) == 2


def test_seeded_cluster_ids_are_kafka_uuids_and_main_classes_follow_the_version() -> None:
    from kraftspec.reference.storage_rules import uuid_from_string

    assert cluster_id_from_seed(7) == cluster_id_from_seed(7) != cluster_id_from_seed(8)
    uuid_from_string(cluster_id_from_seed(7))
    assert main_class("dump-log", "4.3.1") == "org.apache.kafka.tools.DumpLogSegments"
    assert main_class("dump-log", "3.9.1") == "kafka.tools.DumpLogSegments"
    assert version_tuple("4.3.1") > version_tuple("3.9.1")
