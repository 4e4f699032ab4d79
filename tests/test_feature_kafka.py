"""The traces recorded from ``spec/FeatureLevels.tla`` (``traces/tla/features.jsonl.gz``: registrations with two
brokers' software, UpdateFeatures accepted and refused, §1.11) given to Kafka's own classes: Kafka's
``ClusterControlManager`` and ``FeatureControlManager`` agree with the reference on every step, refusals and their
messages included, and the feature mutant disagrees with Kafka on them."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from kraftspec import oracle
from kraftspec import traces as traces_package
from kraftspec.harness.adapter import hooks
from kraftspec.harness.conform import conform_files, judge, kafka_trace
from kraftspec.harness.jvm import DEFAULT_VERSION, shared
from kraftspec.models.broker_mutants import MUTANTS
from kraftspec.traces.format.jsonl import read_jsonl

FEATURE_TRACES = Path(traces_package.__file__).parent / "tla" / "features.jsonl.gz"


@pytest.fixture(scope="module")
def process():  # type: ignore[no-untyped-def]
    return shared(DEFAULT_VERSION)


def test_every_bundled_feature_trace_agrees_on_kafka(process) -> None:  # type: ignore[no-untyped-def]
    outcomes = [item for _, _, item in conform_files([str(FEATURE_TRACES)], process)]
    assert all(not isinstance(item, str) for item in outcomes), [i for i in outcomes if isinstance(i, str)][:3]
    disagreeing = [item for item in outcomes if item.outcome != "agree"]  # type: ignore[union-attr]
    assert not disagreeing, oracle.describe(disagreeing[0].kafka) if disagreeing[0].kafka else disagreeing[0]
    assert len(outcomes) > 1000


def test_the_feature_mutant_disagrees_with_kafka_on_the_bundled_traces(process) -> None:  # type: ignore[no-untyped-def]
    mutant = next(m for m in MUTANTS if m.name == "feature-update-ignores-broker-ranges")
    runs = [kafka_trace(t, process, hooks("broker")) for _, t in itertools.islice(read_jsonl(FEATURE_TRACES), 200)]
    assert all(judge(*run).conformant for run in runs)
    with mutant.applied():
        assert not all(judge(*run).conformant for run in runs)
