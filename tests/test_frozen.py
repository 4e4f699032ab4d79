"""``evolve``, ``assemble`` and ``slotted`` build the same frozen dataclass instances as ``replace`` and the constructor."""

from __future__ import annotations

import copy
import dataclasses
import pickle

import pytest
from hypothesis import given, strategies as st

from kraftspec.reference.frozen import (
    FrozenMap, PersistentMap, assemble, assembler, builder, dict_init, evolve, persistent, slotted,
)
from kraftspec.traces.values import to_json


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
    bound = assembler(Sample)({"epoch": sample.epoch, "voters": sample.voters, "leader": sample.leader})
    assert bound == sample and hash(bound) == hash(sample) and type(bound) is Sample


def test_results_stay_frozen() -> None:
    sample = evolve(Sample(1, FrozenMap()), epoch=2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        sample.epoch = 3  # type: ignore[misc]
    assert sample.epoch == 2



def flagged_sample_class() -> type:
    @dataclasses.dataclass(frozen=True)
    class FlaggedSample:
        epoch: int
        voters: FrozenMap[int, int]
        leader: int = -1
        flags: tuple[int, ...] = dataclasses.field(default=(), kw_only=True)

    return FlaggedSample


Plain, Fast = flagged_sample_class(), dict_init(flagged_sample_class())


@given(samples, st.lists(st.integers()).map(tuple))
def test_dict_init_builds_what_the_dataclass_init_builds(sample: Sample, flags: tuple[int, ...]) -> None:
    calls = [
        ((sample.epoch, sample.voters), {}),
        ((sample.epoch, sample.voters, sample.leader), {"flags": flags}),
        ((), {"flags": flags, "voters": sample.voters, "epoch": sample.epoch}),
    ]
    for args, kwargs in calls:
        fast, plain = Fast(*args, **kwargs), Plain(*args, **kwargs)
        assert vars(fast) == vars(plain) and list(vars(fast)) == list(vars(plain))
        assert repr(fast) == repr(plain) and hash(fast) == hash(Fast(*args, **kwargs)) and fast == Fast(*args, **kwargs)
    with pytest.raises(dataclasses.FrozenInstanceError):
        fast.epoch = 3
    for bad_args, bad_kwargs in [((sample.epoch,), {}), ((sample.epoch, sample.voters, 1, flags), {}), ((1, 2), {"bogus": 3})]:
        with pytest.raises(TypeError):
            Fast(*bad_args, **bad_kwargs)


def test_dict_init_refuses_post_init_and_factories() -> None:
    @dataclasses.dataclass(frozen=True)
    class Normalised:
        value: int

        def __post_init__(self) -> None:
            pass

    @dataclasses.dataclass(frozen=True)
    class Factory:
        values: list[int] = dataclasses.field(default_factory=list)

    for cls in (Normalised, Factory):
        with pytest.raises(TypeError):
            dict_init(cls)


@given(st.dictionaries(st.tuples(st.text(max_size=3), st.integers(0, 5)), st.integers(), max_size=40))
def test_persistent_map_derives_without_touching_its_source(entries: dict[tuple[str, int], int]) -> None:
    """``persistent`` keeps a PersistentMap as it is and copies anything else; ``set`` leaves the source as it was,
    and the JSON form lists keys sorted whatever order the trie iterates in."""
    source = persistent(entries)
    assert type(source) is PersistentMap and dict(source) == entries and persistent(source) is source
    changed = source.set(("new", 9), 1)
    assert dict(source) == entries and dict(changed) == {**entries, ("new", 9): 1}
    assert list(to_json(source)) == [str(key) for key in sorted(entries)]


def slotted_sample_class(post_init: bool = False) -> type:
    @dataclasses.dataclass(frozen=True)
    class SlottedSample:
        """A sample."""

        epoch: int
        voters: FrozenMap[int, int]
        leader: int = -1
        flags: tuple[int, ...] = dataclasses.field(default=(), kw_only=True)
        LIMIT = 7  # a class constant, not a field

        if post_init:
            def __post_init__(self) -> None:
                if self.leader == -1:
                    object.__setattr__(self, "leader", self.epoch)

    return SlottedSample


PlainSlotted, Slotted = slotted_sample_class(), slotted(slotted_sample_class())
PlainNormalised, SlottedNormalised = slotted_sample_class(True), slotted(slotted_sample_class(True))
Slotted.__qualname__, SlottedNormalised.__qualname__ = "Slotted", "SlottedNormalised"  # found by pickle


@given(samples, st.lists(st.integers()).map(tuple))
def test_slotted_builds_what_the_dataclass_builds(sample: Sample, flags: tuple[int, ...]) -> None:
    """Constructor, builder, ``evolve``, ``replace``, pickling and copies of a slotted class give the instances the
    plain dataclass gives (same fields, repr, equality and hash), and ``__post_init__`` still runs."""
    calls = [((sample.epoch, sample.voters), {}), ((sample.epoch, sample.voters, sample.leader), {"flags": flags}),
             ((), {"flags": flags, "voters": sample.voters, "epoch": sample.epoch})]
    for plain_cls, cls in ((PlainSlotted, Slotted), (PlainNormalised, SlottedNormalised)):
        for args, kwargs in calls:
            fast, plain = cls(*args, **kwargs), plain_cls(*args, **kwargs)
            values = tuple(getattr(plain, f.name) for f in dataclasses.fields(plain))
            assert tuple(getattr(fast, f.name) for f in dataclasses.fields(fast)) == values
            assert repr(fast).partition("(")[2] == repr(plain).partition("(")[2]  # the class names differ
            assert hash(fast) == hash(cls(*args, **kwargs)) and fast == cls(*args, **kwargs)
            assert type(fast) is cls and not hasattr(fast, "__dict__") and fast.LIMIT == 7
            assert builder(cls)(*values) == fast and assemble(cls, vars(plain)) == fast
            assert evolve(fast, leader=5) == dataclasses.replace(fast, leader=5) == cls(*values[:2], 5, flags=values[3])
            assert pickle.loads(pickle.dumps(fast)) == fast and copy.copy(fast) == fast and copy.deepcopy(fast) == fast
        with pytest.raises(dataclasses.FrozenInstanceError):
            fast.epoch = 3
        with pytest.raises(dataclasses.FrozenInstanceError):
            del fast.epoch
        for bad_args, bad_kwargs in [((sample.epoch,), {}), ((sample.epoch, sample.voters, 1, flags), {}), ((1, 2), {"bogus": 3})]:
            with pytest.raises(TypeError):
                cls(*bad_args, **bad_kwargs)
        with pytest.raises(TypeError):
            evolve(fast, bogus=1)
