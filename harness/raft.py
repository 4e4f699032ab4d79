"""The ``raft`` component's hooks for the Kafka harness (``org.apache.kafka.raft.KraftspecRaftSession``).

One KRaft quorum node run by Kafka's own ``KafkaRaftClient`` over Kafka's raft test utilities (``MockLog``,
``MockQuorumStateStore``, ``MockNetworkChannel``, ``MockableRandom``, ``MockExpirationService``, ``MockTime``); the
Java class documents how each trace input is applied.

* :func:`kafka_initial`: a trace's ``initial`` object as the session opens it: ``{"explicit": STATE}``, STATE being
  the trace format's explicit raft state (checked by the reference's own decoding first, so that both sides start
  from a state the reference can start), and for ``raft/leader`` also ``"granted"``: the votes the reference's
  :func:`kraftspec.traces.format.raft.elected_leader` counts before the node is elected. A ``kraft_version`` 1 state
  starts Kafka's client as ``kafka-storage format --initial-controllers`` leaves a node: the bootstrap checkpoint
  (0, 0) of its ``bootstrap_voters``, ``controller.quorum.voters`` empty and ``controller.quorum.bootstrap.servers``
  those voters' addresses (Kafka numbers them -2, -3, ...).
* A FetchSnapshot answer's chunk from byte 0 states the snapshot's ``control_records`` (a kraft.version 1 snapshot's
  KRaftVersionRecord and VotersRecord): the session parses them out of Kafka's snapshot and writes them into the
  snapshot it feeds Kafka; ``upgrade_kraft_version`` answers ``{sends, upgraded, error}`` (the Java class says how).
* ``config.auto_join`` is ``controller.quorum.auto.join.enable``: an observer that can become a voter then sends the
  leader AddRaftVoter or RemoveRaftVoter itself (reported as the reference's messages, ``source`` the node) and takes
  the leader's ``voter_change_response`` as the AddRaftVoter or RemoveRaftVoter response its ``api`` names.
* :func:`kafka_inputs`: each response input states the request it answers (``answers``: the trace's own send with
  that destination and correlation id, and the step that sent it), so that Kafka gets it as a real network would
  hand it over: under the correlation id Kafka's client gave that same request. Kafka numbers its requests in the
  order it sends them, which may differ from the recorded node's (see ``order`` below), so the trace's id may name
  another of Kafka's requests (a Fetch answered with records from another offset). When Kafka sent no such request
  (its run took another path, as under a mutant's recording), the response answers nothing Kafka asked: it comes
  under an id Kafka never gave (``NO_REQUEST``) and both sides drop it.
* :func:`trace_step`: Kafka's answer as the trace step the adapter's default builds (``response.sends``, no records,
  the post-state): Kafka's sends carry every field of the reference's message classes, correlation ids included,
  and its post-state every field the format has. Where Kafka sent one request to several nodes in an order that is
  not by ascending id (``maybeSendRequests`` iterates a hash set), the step's input states that order as ``order``
  (traces/FORMAT.md), so that the reference takes the same one; a response input states the correlation id Kafka
  got it under (:func:`kafka_inputs`), as does a response Kafka refused (:func:`refused_input`).
"""

from __future__ import annotations

from typing import Any, Iterator, Mapping, Sequence

from kraftspec.harness.adapter import default_trace_step
from kraftspec.traces.format import raft as raft_trace

CHOICES = ("order", "message.correlation_id")
"""The input fields a step may state Kafka's choices in: the order of one round of requests, and the correlation id
of a response (the one Kafka gave the request it answers: :func:`kafka_inputs`)."""
RESPONSE_ACTIONS = ("vote_response", "fetch_response", "quorum_epoch_response", "fetch_snapshot_response",
                    "update_raft_voter_response", "api_versions_response", "voter_change_response")
NO_REQUEST = -1
"""The correlation id of a response that answers none of Kafka's requests (Kafka's ids count from 1)."""
LEADER_STATE = {"local_id": 1, "quorum_state": {"epoch": 1, "voted_key": {"id": 1}}}
"""``raft/leader`` before its election: node 1 restarted from a stored self-vote in epoch 1 (a Candidate);
``elected_leader`` then counts voter 2's vote, which elects it at time 0 (its LeaderChange record written)."""
LEADER_GRANTED = [2]


def kafka_initial(initial: Mapping[str, Any]) -> dict[str, Any]:
    """``{"explicit": STATE}`` (plus ``"granted"`` votes for ``raft/leader``) for the harness session."""
    if "standard" in initial:
        name = initial["standard"]
        if name == "raft/leader":
            return {"explicit": dict(LEADER_STATE), "granted": list(LEADER_GRANTED)}
        if name not in raft_trace.STANDARD_JSON:
            raise KeyError(f"unknown raft standard state {name!r}")
        return {"explicit": dict(raft_trace.STANDARD_JSON[name])}
    explicit = dict(initial["explicit"])
    raft_trace.explicit_state(explicit)  # a state the reference can start (a TraceError otherwise)
    return {"explicit": explicit}


def request_order(sends: Any) -> list[int]:
    """The destinations of the requests among ``sends``, in the order sent (each once)."""
    order: list[int] = []
    for send in sends or ():
        if str(send.get("type", "")).endswith("Request") and send.get("destination") not in order:
            order.append(send["destination"])
    return order


def _requests(step: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    """The requests among a trace step's stated sends."""
    response = (step.get("output") or {}).get("response")
    for send in (response.get("sends") or ()) if isinstance(response, Mapping) else ():
        if str(send.get("type", "")).endswith("Request"):
            yield send


def kafka_inputs(steps: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A trace's inputs for Kafka: a response to a request the trace states it sent carries ``answers``: that
    request and the index of the step that sent it (the session delivers it under Kafka's id for the same request)."""
    asked: dict[tuple[Any, Any], dict[str, Any]] = {}
    inputs = []
    for index, step in enumerate(steps):
        given = dict(step["input"])
        message = given.get("message")
        if given.get("action") in RESPONSE_ACTIONS and isinstance(message, Mapping):
            request = asked.get((message.get("source"), message.get("correlation_id")))
            if request is not None:
                given["answers"] = request
        inputs.append(given)
        for send in _requests(step):
            asked[(send.get("destination"), send.get("correlation_id"))] = {"input": index, "request": dict(send)}
    return inputs


def _delivered(input: Mapping[str, Any], answer: Mapping[str, Any]) -> dict[str, Any]:
    """``input`` without ``answers``, its message under the correlation id Kafka got it under (if restated)."""
    stated = {k: v for k, v in input.items() if k != "answers"}
    if "delivered_correlation_id" in answer:
        stated["message"] = {**stated["message"], "correlation_id": answer["delivered_correlation_id"]}
    return stated


def refused_input(given: Mapping[str, Any], answer: Mapping[str, Any]) -> dict[str, Any]:
    """An input Kafka refused, as the step states it: a response under the correlation id Kafka got it under."""
    return _delivered(given, answer)


def trace_step(input: Mapping[str, Any], answer: Mapping[str, Any]) -> dict[str, Any]:
    """Kafka's answer as a step; ``order`` added to the input where Kafka's requests went out not by ascending id,
    a response's correlation id restated as Kafka got it (:func:`kafka_inputs`)."""
    step = default_trace_step(_delivered(input, answer), answer)
    response = (answer.get("output") or {}).get("response") or {}
    order = request_order(response.get("sends"))
    if order != sorted(order) and "order" not in step["input"]:
        step["input"] = {**step["input"], "order": order}
    return step
