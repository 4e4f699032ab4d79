"""Issue 21: a short run of the readers' fuzzing engine (``kraftspec.traces.format.fuzz``; the long run is
``benchmarks/fuzz_readers.py``), Hypothesis driving the same structure-aware mutations, and the audit image's
indexes against the scans they replace."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kraftspec.reference.partition import PartitionRegistration
from kraftspec.traces.format import fuzz
from kraftspec.traces.metalog.image import PartitionTable, TopicTable

SEED = 2021
INPUTS = 30


@pytest.mark.parametrize("reader", sorted(fuzz.READERS))
def test_a_short_fuzzing_run_breaks_no_contract(reader: str, tmp_path: Path) -> None:
    print(f"fuzz seed {SEED}: python benchmarks/fuzz_readers.py --reader {reader} --seed {SEED} --inputs {INPUTS}")
    stats = fuzz.fuzz(reader, INPUTS, SEED, tmp_path / "work")
    failures = list(stats.distinct[reader].values())
    for failure in failures:
        fuzz.save_reproducer(tmp_path / "failures", failure)
    assert stats.inputs[reader] == INPUTS
    assert not failures, [f"{f.kind} at {f.where}: {f.message} (seed {f.seed}, input {f.index})" for f in failures]


@settings(max_examples=60, deadline=None)
@given(reader=st.sampled_from(["segment", "jsonl", "parquet", "quorum-state", "leader-epoch-checkpoint",
                               "meta.properties", "vectors-verify", "datadir"]),
       rnd=st.randoms(use_true_random=False))
def test_hypothesis_drives_the_structure_aware_mutations(reader: str, rnd: random.Random, tmp_path_factory:
                                                         pytest.TempPathFactory) -> None:
    instance = fuzz.READERS[reader]
    data = instance.mutate(rnd, instance.seeds())
    result = fuzz.run_one(instance, data, tmp_path_factory.mktemp("hypothesis") / "work")
    assert result is None, result


def test_the_fuzzer_finds_the_classes_it_is_meant_to_find() -> None:
    """The mutations reach the hostile classes of issue 21 (so '0 failures' means something)."""
    rng = random.Random(SEED)
    seen = {fuzz.dumps(fuzz.hostile_json(rng))[:30] for _ in range(2000)}
    assert any(text.startswith("[[[[") or text.startswith('{"a":{"a"') for text in seen)
    assert any(len(text) >= 30 and text[:30].lstrip("-").isdigit() for text in seen)
    assert any("\\u00b2" in text for text in seen)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["set", "del", "topic", "untopic"]), st.integers(0, 3), st.integers(0, 3),
                          st.integers(-1, 3), st.booleans()), max_size=60))
def test_the_image_indexes_agree_with_scans(operations: list[tuple[str, int, int, int, bool]]) -> None:
    partitions, topics = PartitionTable(), TopicTable()
    for op, topic, partition, leader, elr in operations:
        key = (f"t{topic}", partition)
        if op == "set":
            partitions[key] = PartitionRegistration(replicas=(1, 2), isr=(1, 2), leader=leader, leader_epoch=0,
                                                    partition_epoch=0, elr=(2,) if elr else ())
        elif op == "del":
            partitions.pop(key, None)
        elif op == "topic":
            topics[f"t{topic}"] = f"name{partition}"
        else:
            topics.pop(f"t{topic}", None)
        for t in range(4):
            assert sorted(partitions.of_topic(f"t{t}")) == sorted(k for k in partitions if k[0] == f"t{t}")
            assert sorted(partitions.with_elr(f"t{t}")) == sorted(
                k for k, p in partitions.items() if k[0] == f"t{t}" and (p.elr or p.last_known_elr))
        for b in range(-1, 4):
            assert sorted(partitions.led_by(b)) == sorted(k for k, p in partitions.items() if p.leader == b)
        for n in range(4):
            assert topics.first_id(f"name{n}") == next((t for t, name in topics.items() if name == f"name{n}"), None)
