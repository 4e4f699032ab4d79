"""The mixed quorum (``kraftspec.harness.raft_mixed``) draws its rules as the raft simulation does
(``kraftspec.traces.recording.raft_simulate``): run by the reference alone from the same generator, both reach the
same nodes after every rule, with faults (stopped nodes draw nothing) and snapshots, or with a dynamic (kraft.version 1)
quorum whose voters change. No JVM runs here."""

from __future__ import annotations

import random
import types
from typing import Any, Mapping

import pytest

from kraftspec.harness import raft_mixed
from kraftspec.models.raft import NODES, VOTERS
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


class _OtherHashOrderNode(raft_mixed.ReferenceNode):
    """A reference node that sends each round of requests by descending id, as Kafka's client may in another JVM
    (its rounds follow a hash set's order, which ``Set.of`` salts per JVM): the input states that ``order``."""

    def step(self, obj: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        polled = "now" in obj and obj["action"] != "restart"
        return super().step({**obj, "order": sorted(NODES, reverse=True)} if polled else obj)


def _run_states(seed: int, reordering: int, faults: bool) -> list[Any]:
    """The node states after each of 150 rules of a reference-only mixed quorum, node ``reordering`` sending its
    rounds by descending id (0: none), correlation ids left out (the order in which a round takes them differs)."""
    quorum = raft_mixed.MixedQuorum(seed, (), (), faults)
    if reordering:
        quorum.nodes[reordering] = _OtherHashOrderNode(quorum.explicit[reordering])
    states = []
    for _ in range(150):
        quorum.rule()
        states.append({n: (node.node.state, node.node.log) for n, node in quorum.nodes.items()})
    return states


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_a_run_does_not_depend_on_the_order_a_node_sends_a_round_in(seed: int) -> None:
    """The network takes a round of requests by ascending destination (``raft_mixed.network_order``), so a node
    taking another order, as a Kafka node does from one JVM to the next, reaches the same states: a seed's run is
    repeatable with Kafka nodes in it (without that order some of these runs part: the test below)."""
    for node in VOTERS:
        assert _run_states(seed, node, faults=True) == _run_states(seed, 0, faults=True), \
            f"seed {seed}: node {node} sending rounds by descending id changes the run"


def test_without_the_network_order_the_sending_order_changes_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """The wrong variant: the network takes sends in the order the node sent them; then some run parts."""
    monkeypatch.setattr(raft_mixed, "network_order", list)
    assert any(_run_states(seed, node, faults=True) != _run_states(seed, 0, faults=True)
               for seed in range(4) for node in VOTERS)
