"""The ``raft`` component's hooks for the Kafka harness (``org.apache.kafka.raft.KraftspecRaftSession``).

One KRaft quorum node run by Kafka's own ``KafkaRaftClient`` over Kafka's raft test utilities (``MockLog``,
``MockQuorumStateStore``, ``MockNetworkChannel``, ``MockableRandom``, ``MockExpirationService``, ``MockTime``); the
Java class documents how each trace input is applied.

* :func:`kafka_initial`: a trace's ``initial`` object as the session opens it: ``{"explicit": STATE}``, STATE being
  the trace format's explicit raft state (checked by the reference's own decoding first, so that both sides start
  from a state the reference can start), and for ``raft/leader`` also ``"granted"``: the votes the reference's
  :func:`kraftspec.traces.raft_trace.elected_leader` counts before the node is elected.
* :func:`trace_step`: Kafka's answer as the trace step the adapter's default builds (``response.sends``, no records,
  the post-state): Kafka's sends carry every field of the reference's message classes, correlation ids included,
  and its post-state every field the format has. Where Kafka sent one request to several nodes in an order that is
  not by ascending id (``maybeSendRequests`` iterates a hash set), the step's input states that order as ``order``
  (traces/FORMAT.md), so that the reference takes the same one.
"""

from __future__ import annotations

from typing import Any, Mapping

from kraftspec.harness.adapter import default_trace_step
from kraftspec.traces import raft_trace

CHOICES = ("order",)
"""The input field a step may add to state Kafka's choice: the order of one round of requests (:func:`trace_step`)."""
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


def trace_step(input: Mapping[str, Any], answer: Mapping[str, Any]) -> dict[str, Any]:
    """Kafka's answer as a step; ``order`` added to the input where Kafka's requests went out not by ascending id."""
    step = default_trace_step(input, answer)
    response = (answer.get("output") or {}).get("response") or {}
    order = request_order(response.get("sends"))
    if order != sorted(order) and "order" not in step["input"]:
        step["input"] = {**step["input"], "order": order}
    return step
