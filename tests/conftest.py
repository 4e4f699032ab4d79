"""Hypothesis profiles: ``ci`` (derandomized, reproducible) is used when CI is set; ``dev`` otherwise.

For the whole session Hypothesis draws no constants from loaded modules' source, so a derandomized
test generates the same examples whether it runs alone, in a selection or in the full suite
(:mod:`kraftspec.models.determinism`).

Under pytest-xdist (``-n auto``, the default options) each test file runs on one worker, in its order,
so a module's fixtures (a real Kafka cluster, a harness JVM) are built once; the files that start Kafka clusters or
network namespaces (``test_cluster_*.py``) share one worker, so two clusters never compete for the cores or a subnet."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterator

import pytest
from hypothesis import HealthCheck, settings

from kraftspec.models.determinism import without_local_constants

settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True, max_examples=200,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", deadline=None, print_blob=True, max_examples=100,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


CLUSTER_FILES = "test_cluster_"  # the files that start real Kafka clusters or network namespaces


def _scope(nodeid: str) -> str:
    """The unit one xdist worker runs whole and in order: a test's file, or all the cluster files together."""
    file = nodeid.split("::", 1)[0]
    return "kafka-cluster" if Path(file).name.startswith(CLUSTER_FILES) else file


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist (its loadgroup marks are lost with pytest 9.2)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    from xdist.scheduler import LoadScopeScheduling

    class FileScheduling(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return _scope(nodeid)

    return FileScheduling(config, log)


@pytest.fixture(autouse=True, scope="session")
def _examples_depend_on_the_seed_alone() -> Iterator[None]:
    with without_local_constants():
        yield
