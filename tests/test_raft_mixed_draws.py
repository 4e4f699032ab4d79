"""The mixed quorum (``kraftspec.harness.raft_mixed``) draws its rules as the raft simulation does
(``kraftspec.traces.recording.raft_simulate``): run by the reference alone from the same generator, both reach the
same nodes after every rule, with faults (stopped nodes draw nothing) and snapshots, or with a dynamic (kraft.version 1)
quorum whose voters change. No JVM runs here."""

from __future__ import annotations

import random
import types

import pytest

from kraftspec.harness import raft_mixed
from kraftspec.models.raft import NODES
from kraftspec.traces.recording import raft_simulate


def _twins(seed: int, faults: bool, dynamic: bool,
           monkeypatch: pytest.MonkeyPatch) -> tuple[raft_simulate._Quorum, raft_mixed.MixedQuorum]:
    """The simulation and a mixed quorum of reference nodes only, drawing from equal generators (the simulation's
    first draw, the recorded node, is made for the mixed one too); with snapshots, or ``dynamic``."""
    simulated = raft_simulate._Quorum(random.Random(f"twins:{seed}"), faults, snapshots=not dynamic, dynamic=dynamic)
    twin = random.Random(f"twins:{seed}")
    twin.choice(NODES)
    monkeypatch.setattr(raft_mixed, "random", types.SimpleNamespace(Random=lambda _: twin))
    return simulated, raft_mixed.MixedQuorum(seed, (), (), faults, snapshots=not dynamic, dynamic=dynamic)


def _draw_alike(seed: int, faults: bool, dynamic: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    simulated, mixed = _twins(seed, faults, dynamic, monkeypatch)
    for index in range(200):
        simulated.rule()
        mixed.rule()
        differing = [n for n in simulated.ids if simulated.nodes[n] != mixed.nodes[n].node]
        assert not differing, f"seed {seed}, faults {faults}, dynamic {dynamic}: rule {index} parts nodes {differing}"


@pytest.mark.parametrize("faults", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_mixed_quorum_draws_as_the_simulation(seed: int, faults: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    _draw_alike(seed, faults, False, monkeypatch)


@pytest.mark.parametrize("faults", [False, True])
@pytest.mark.parametrize("seed", [0, 2, 3])
def test_the_dynamic_mixed_quorum_draws_as_the_simulation(seed: int, faults: bool,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Seed 1 with faults is left out: in that run the reference, as Kafka 4.3 does, refuses an input (an observer
    restarted with a leader whose endpoints it lacks takes that leader's answer through a bootstrap server)."""
    _draw_alike(seed, faults, True, monkeypatch)
