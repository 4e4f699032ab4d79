"""``evolve`` and ``assemble`` build the same frozen dataclass instances as ``replace`` and the constructor."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, strategies as st

from kraftspec.reference.frozen import FrozenMap, assemble, evolve


@dataclasses.dataclass(frozen=True)
class Sample:
    epoch: int
    voters: FrozenMap[int, int]
    leader: int = -1


samples = st.builds(Sample, st.integers(), st.dictionaries(st.integers(), st.integers()).map(FrozenMap), st.integers())


@given(samples, st.integers(), st.integers())
def test_evolve_equals_replace(sample: Sample, epoch: int, leader: int) -> None:
    evolved, replaced = evolve(sample, epoch=epoch, leader=leader), dataclasses.replace(sample, epoch=epoch, leader=leader)
    assert evolved == replaced and hash(evolved) == hash(replaced) and repr(evolved) == repr(replaced)
    assert type(evolved) is Sample and sample == dataclasses.replace(sample)  # the original is untouched


@given(samples)
def test_assemble_equals_constructor(sample: Sample) -> None:
    built = assemble(Sample, {"epoch": sample.epoch, "voters": sample.voters, "leader": sample.leader})
    assert built == sample and hash(built) == hash(sample)


def test_results_stay_frozen() -> None:
    sample = evolve(Sample(1, FrozenMap()), epoch=2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        sample.epoch = 3  # type: ignore[misc]
    assert sample.epoch == 2
