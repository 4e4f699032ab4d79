"""``kraftspec generate tla --component requests``: raft traces of the node ``KRaftRequests.tla`` follows, recorded from
TLC's state graph (rules §3.13, §3.5, §3.7).

TLC explores the spec under ``KRaftRequests.cfg`` and dumps its state graph; seeded random walks and a covering set
become traces of the spec's ``Local`` node, as ``shutdown_tla`` records them (its :class:`~shutdown_tla.Recorder`,
with this spec's initial nodes, inputs and projection). Every spec action is an input of the node and the poll that
follows it, with the poll's bootstrap draw as the step's ``bootstrap`` (``spec/agree_requests.py``): ``Poll`` is a
``tick`` one ms later; ``HandleFetchResponseFailed`` / ``HandleVoteResponseFailed`` a ``fetch_response`` /
``vote_response`` with top-level BROKER_NOT_AVAILABLE (a disconnect, ``raft_simulate.failed_response``);
``HandleFetchResponse`` / ``HandleVoteResponse`` the answers ``agree_requests.answers`` lists, each without a
correlation id (it answers the request outstanding to its source). The steps record the reference's sends, so a
replay judges to whom and when the node sends; the last step of an edge states as ``post`` what the spec's state gives
of the node (role, epoch, leader, the clock).

The initial states are explicit nodes restarted from their quorum-state file under ``agree_requests``' timeouts, then
their first poll at time 0 (a ``tick`` with each bootstrap draw); the Prospective is the Follower sent campaigning
by its leader's EndQuorumEpoch (no successors) before that poll.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Iterator, Mapping, Optional

import networkx as nx

from kraftspec.reference.raft_messages import EndQuorumEpochRequest, FetchResponse
from kraftspec.spec import agree_requests as agree
from kraftspec.spec.agree import load_model
from kraftspec.spec.state_graph import StateKey, state_graph, state_key
from kraftspec.traces.format.envelope import Step, Trace
from kraftspec.traces.format.values import to_json
from kraftspec.traces.recording import shutdown_tla
from kraftspec.traces.recording.raft_inputs import message
from kraftspec.traces.recording.raft_tla import Point

ANSWERS = {FetchResponse: "fetch_response"}
"""The trace action of an answer of this type (else ``vote_response``)."""


def _drawn(draw: int) -> dict[str, int]:
    """A step's ``bootstrap`` input (left out when 0, its default)."""
    return {"bootstrap": draw} if draw else {}


def _tick(now: int, draw: int) -> Step:
    """A poll at ``now`` with the bootstrap draw ``draw``."""
    return Step("tick", {"now": now, **_drawn(draw)})


def explicit(stored: dict[str, Any], constants: Mapping[str, Any]) -> dict[str, Any]:
    """The trace's explicit initial state: ``Local`` of the voters 1..N restarted from ``stored`` under the spec's
    timeouts."""
    ids = range(1, int(constants["N"]) + 1)
    return {"local_id": int(constants["Local"]), "voters": list(ids),
            "endpoints": {str(i): list(agree.voter_endpoints(frozenset(ids))[i]) for i in ids},
            "config": to_json(agree._config(constants)), "quorum_state": stored}


def spec_post(state: Mapping[str, Any]) -> dict[str, Any]:
    """What the spec's state gives of the node as trace post-state fields (``raft_replay.observe``'s names)."""
    return {"role": state["role"], "epoch": state["epoch"], "leader_id": state["leader"], "clock": state["now"]}


def initial_traces(constants: Mapping[str, Any]) -> Iterator[tuple[dict[str, Any], list[Step]]]:
    """Each of the spec's initial nodes as an explicit node and the steps that bring it there, with each bootstrap
    draw of its first poll (``agree_requests.initial_states``)."""
    local, known = int(constants["Local"]), int(constants["KnownLeader"])
    follower = explicit({"epoch": 1, "leader_id": known}, constants)
    resigned = EndQuorumEpochRequest(leader_id=known, leader_epoch=1, preferred_successors=())
    starts = [(follower, []), (explicit({"epoch": 1}, constants), []),
              (follower, [message("end_quorum_epoch_request", resigned)]),
              (explicit({"epoch": 1, "voted_key": {"id": local}}, constants), [])]
    for obj, before in starts:
        for draw in agree._draws(constants):
            yield obj, before + [_tick(0, draw)]


def moves(point: Point, constants: Mapping[str, Any]) -> Iterator[tuple[str, list[Step]]]:
    """Every input of the spec's ``Next`` with every parameter choice and draw, as trace steps
    (``agree_requests.successors``' inputs, in its order)."""
    now = point.clock
    outstanding = list(agree.answers(agree.ExploredState(point.node, now)))
    for draw in agree._draws(constants):
        if now < int(constants["MaxTime"]):
            yield "Poll", [_tick(now + 1, draw)]
        for action, source, answer in outstanding:
            unnumbered = dataclasses.replace(answer, correlation_id=None)
            yield action, [message(ANSWERS.get(type(answer), "vote_response"), unnumbered, **_drawn(draw))]


def _key(point: Point) -> StateKey:
    return state_key(agree.project(agree.ExploredState(point.node, point.clock)))


class Recorder(shutdown_tla.Recorder):
    """Turns paths of TLC's graph of ``KRaftRequests.tla`` (from the added root) into traces of the spec's node."""

    component = "requests"
    initial_traces = staticmethod(initial_traces)
    moves = staticmethod(moves)
    key = staticmethod(_key)
    spec_post = staticmethod(spec_post)


def generate_tla(seed: int, walks: int, cover: str = "kinds", *, timeout_s: float = 600.0,
                 graph: Optional[nx.MultiDiGraph] = None) -> Iterator[Trace]:
    """``walks`` seeded random walks of TLC's graph of ``KRaftRequests.tla`` (from the root), then the covering set
    (``cover``: ``kinds`` or ``edges``); ``graph``: TLC's graph if already loaded."""
    if graph is None:
        model = load_model("requests")
        graph, _ = state_graph(model.module_path, model.config_path, timeout_s=timeout_s)
    yield from shutdown_tla.recorded(Recorder, graph, seed, walks, cover)
