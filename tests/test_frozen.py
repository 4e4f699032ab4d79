"""The reference's one object model (frozen, slotted dataclasses derived by ``evolve``), and the run-time acceleration
(``kraftspec.accelerate``), which builds the same instances as the plain classes."""

from __future__ import annotations

import copy
import dataclasses
import importlib
import os
import pickle
import pkgutil
import subprocess
import sys

import pytest
from hypothesis import given, strategies as st

import kraftspec.reference
from kraftspec import accelerate
from kraftspec.reference.frozen import FrozenMap, PersistentMap, evolve, persistent
from kraftspec.traces.format.values import to_json


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


def test_results_stay_frozen() -> None:
    sample = evolve(Sample(1, FrozenMap()), epoch=2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        sample.epoch = 3  # type: ignore[misc]
    assert sample.epoch == 2



def test_every_reference_class_is_a_frozen_slotted_dataclass() -> None:
    """One object model: each dataclass of ``kraftspec.reference`` is ``@dataclass(frozen=True, slots=True)``."""
    for info in pkgutil.iter_modules(kraftspec.reference.__path__):
        module = importlib.import_module(f"kraftspec.reference.{info.name}")
        for value in vars(module).values():
            if isinstance(value, type) and dataclasses.is_dataclass(value) and value.__module__ == module.__name__:
                params = value.__dataclass_params__  # type: ignore[attr-defined]
                assert params.frozen and "__slots__" in value.__dict__, value


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
    @dataclasses.dataclass(frozen=True, slots=True)
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


def accelerated(cls: type) -> type:
    accelerate._accelerate(cls)
    return cls


PlainSlotted, Slotted = slotted_sample_class(), accelerated(slotted_sample_class())
PlainNormalised, SlottedNormalised = slotted_sample_class(True), accelerated(slotted_sample_class(True))
Slotted.__qualname__, SlottedNormalised.__qualname__ = "Slotted", "SlottedNormalised"  # found by pickle


@given(samples, st.lists(st.integers()).map(tuple))
def test_accelerated_builds_what_the_dataclass_builds(sample: Sample, flags: tuple[int, ...]) -> None:
    """Constructor, ``evolve``, ``replace``, pickling and copies of an accelerated class give the instances the
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
            assert accelerate.evolve(fast, leader=5) == dataclasses.replace(fast, leader=5) \
                == cls(*values[:2], 5, flags=values[3])
            assert repr(accelerate.evolve(fast, leader=5)).partition("(")[2] \
                == repr(dataclasses.replace(plain, leader=5)).partition("(")[2]
            assert pickle.loads(pickle.dumps(fast)) == fast and copy.copy(fast) == fast and copy.deepcopy(fast) == fast
        with pytest.raises(dataclasses.FrozenInstanceError):
            fast.epoch = 3
        with pytest.raises(dataclasses.FrozenInstanceError):
            del fast.epoch
        for bad_args, bad_kwargs in [((sample.epoch,), {}), ((sample.epoch, sample.voters, 1, flags), {}), ((1, 2), {"bogus": 3})]:
            with pytest.raises(TypeError):
                cls(*bad_args, **bad_kwargs)
        with pytest.raises(TypeError):
            accelerate.evolve(fast, bogus=1)


REPLAY_DIGEST = """
import hashlib, sys
from pathlib import Path
from kraftspec import traces
from kraftspec.traces.format import jsonl
from kraftspec.traces.format.envelope import Trace
from kraftspec.traces.replay.verdict import REPLAYERS
digest = hashlib.sha256()
for component in ("broker", "partition", "controller", "raft"):
    path = Path(traces.__file__).parent / "tla" / f"{component}.jsonl.gz"
    for index, (_, trace) in enumerate(jsonl.read_jsonl(path)):
        if index % 10 or not isinstance(trace, Trace):
            continue
        replayer = REPLAYERS[component]
        state, clock = replayer.initial(trace), 0
        for step in trace.steps:
            state, clock, response, written = replayer.apply(state, clock, step)
            digest.update(repr((state, clock, response, written)).encode())
print(digest.hexdigest())
"""


def test_replay_is_the_same_with_and_without_the_acceleration() -> None:
    """Every tenth bundled trace of each component, replayed step by step: the same states, responses and records
    (by their repr) from the accelerated reference as from the plain one (``KRAFTSPEC_PLAIN=1``)."""
    runs = []
    for plain in (False, True):
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        env.pop("KRAFTSPEC_PLAIN", None)
        if plain:
            env["KRAFTSPEC_PLAIN"] = "1"
        done = subprocess.run([sys.executable, "-c", REPLAY_DIGEST], env=env, capture_output=True, text=True,
                              check=True)
        runs.append(done.stdout.strip())
    assert runs[0] == runs[1] and len(runs[0]) == 64


def test_every_reference_dataclass_refuses_positional_construction() -> None:
    """Keyword construction is enforced (``kw_only=True``); a class declared without it is named here."""
    import importlib
    import pkgutil

    import kraftspec.reference

    positional = []
    for info in pkgutil.iter_modules(kraftspec.reference.__path__):
        module = importlib.import_module(f"kraftspec.reference.{info.name}")
        for name, value in vars(module).items():
            if isinstance(value, type) and dataclasses.is_dataclass(value) and value.__module__ == module.__name__:
                if any(not f.kw_only for f in dataclasses.fields(value) if f.init):
                    positional.append(f"{info.name}.{name}")
    assert not positional, f"dataclasses that accept positional arguments: {positional}"
