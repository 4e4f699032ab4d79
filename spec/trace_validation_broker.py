"""Broker traces in the vocabulary of ``BrokerLifecycleTrace.tla`` (``kraftspec check --with-tlc``).

Each step names one of the spec's actions (RegisterBroker, Heartbeat, FenceStaleBroker, UnregisterBroker,
Failover, Tick) with its arguments, whether the request succeeded, the state a heartbeat granted,
the number of records written and the stated post-state variables (rules §1). A broker id
outside ``Brokers``, an incarnation outside ``Incarnations``, a registration that differs from the
spec's brokers' in a field the spec does not model, unauthorized requests and the actions the spec
does not model are outside its bounds.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping, Optional

from kraftspec.reference import broker
from kraftspec.reference.errors import Errors
from kraftspec.reference.frozen import FrozenMap
from kraftspec.spec import agree_broker
from kraftspec.spec.tla_parse import to_tla
from kraftspec.spec.tla_values import Fn, TlaValue, fn, record
from kraftspec.spec.trace_validation_common import (Encoded, Outside, TraceModule, encoded, modelled, ok, stated_post,
                                                    timed, within)
from kraftspec.traces.replay import broker as broker_replay
from kraftspec.traces.format.envelope import Step, Trace

_SPEC_ACTIONS = {"register_broker": "RegisterBroker", "heartbeat": "Heartbeat",
                 "fence_stale_broker": "FenceStaleBroker", "unregister_broker": "UnregisterBroker", "failover": "Failover", "advance_clock": "Tick"}
_UNKNOWN_EPOCH = -2


def _brokers(constants: Mapping[str, TlaValue]) -> list[int]:
    return sorted(constants["Brokers"])  # type: ignore[arg-type]


def _broker_id(value: Any, constants: Mapping[str, TlaValue]) -> int:
    if value not in constants["Brokers"]:  # type: ignore[operator]
        raise Outside(f"broker id {value} is not in Brokers {to_tla(constants['Brokers'])}")
    return int(value)


def _incarnation(text: Any, constants: Mapping[str, TlaValue]) -> int:
    if not (isinstance(text, str) and text.lstrip("-").isdigit() and int(text) in constants["Incarnations"]):  # type: ignore[operator]
        raise Outside(f"incarnation id {text!r} is not one of Incarnations {to_tla(constants['Incarnations'])}")
    return int(text)


def _initial(trace: Trace, constants: Mapping[str, TlaValue]) -> Fn:
    """The trace's initial state as the spec's variables (the reference builds it from the records)."""
    control = broker_replay.initial(trace)
    if control.session_timeout != constants["SessionTimeout"]:
        raise Outside(f"session timeout {control.session_timeout} is not SessionTimeout {constants['SessionTimeout']}")
    if control.metadata_version != agree_broker.METADATA_VERSION or control.behaviour is not broker.KAFKA_4_1:
        raise Outside(f"the spec models metadata.version {agree_broker.METADATA_VERSION} on Kafka 4.1+, not "
                      f"{control.metadata_version} on {control.behaviour.name}")
    if not control.active:
        raise Outside("the controller is not active")
    for b in control.brokers:
        _broker_id(b, constants)
    if set(control.partitions) != {(agree_broker.TOPIC.topic_id, 0)}:
        raise Outside(f"the spec models one partition, {agree_broker.TOPIC.topic_id}:0")
    try:
        state = agree_broker.project(agree_broker.ExploredState(
            control, 0, FrozenMap({b: "none" for b in _brokers(constants)})))
    except (KeyError, ValueError) as exc:
        raise Outside(f"the initial state has no counterpart in the spec ({exc})") from None
    return record(**state)


def _canonical_registration(request: broker.BrokerRegistrationRequest) -> Optional[str]:
    """The first request field the spec does not model that differs from the spec's broker's registration."""
    canonical = broker.BrokerRegistrationRequest(
        broker_id=request.broker_id, cluster_id=agree_broker.CLUSTER_ID, incarnation_id=request.incarnation_id,
        features=agree_broker.FEATURES, log_dirs=(agree_broker.directory_of(request.broker_id),))
    for f in dataclasses.fields(request):
        if f.name != "version" and getattr(request, f.name) != getattr(canonical, f.name):
            return f.name
    return None


def _post(post: Mapping[str, Any], constants: Mapping[str, TlaValue]) -> dict[str, TlaValue]:
    """The post-state fields a trace states, as the spec's variables (only those stated)."""
    out: dict[str, TlaValue] = {}
    unknown = sorted(set(post) - {"clock", "active", "next_offset", "features", "brokers", "heartbeats", "sessions",
                                  "partitions"})
    if unknown:
        raise Outside(f"post-state field {unknown[0]!r} has no counterpart in the spec")
    if "features" in post and post["features"] != {broker.METADATA_VERSION: agree_broker.METADATA_VERSION}:
        raise Outside(f"finalized features {post['features']}: the spec models metadata.version "
                      f"{agree_broker.METADATA_VERSION} alone (§1.11 is not in the spec)")
    if post.get("active") is False:
        raise Outside("the controller is not active")
    if "clock" in post:
        out["clock"] = post["clock"]
    if "next_offset" in post:
        out["nextOffset"] = post["next_offset"]
    if "brokers" in post:
        brokers = {_broker_id(int(b), constants): r for b, r in post["brokers"].items()}
        out["reg"] = fn({b: record(epoch=-1, inc=0, fenced=True, ics=False) for b in _brokers(constants)}
                        | {b: record(epoch=r["epoch"], inc=_incarnation(r["incarnation_id"], constants),
                                     fenced=r["fenced"], ics=r["in_controlled_shutdown"]) for b, r in brokers.items()})
    if "heartbeats" in post:
        entries = {_broker_id(int(b), constants): h for b, h in post["heartbeats"].items()}
        out["hb"] = fn({b: record(present=False, fenced=True, offset=-1, cso=-1) for b in _brokers(constants)}
                       | {b: record(present=True, fenced=h["fenced"], offset=h["metadata_offset"],
                                    cso=h["controlled_shutdown_offset"]) for b, h in entries.items()})
    if "sessions" in post:
        triples = set()
        for key, contact in post["sessions"].items():
            b, _, e = key.partition(":")
            triples.add((_broker_id(int(b), constants), int(e), contact))
        out["sessions"] = frozenset(triples)
    if "partitions" in post:
        key = f"{agree_broker.TOPIC.topic_id}:0"
        if set(post["partitions"]) != {key}:
            raise Outside(f"the spec models one partition, {key}")
        p = post["partitions"][key]
        out["part"] = record(leader=p["leader"], isr=tuple(p["isr"]), leaderEpoch=p["leader_epoch"],
                             partitionEpoch=p["partition_epoch"])
    return out


def _reply(response: Optional[Mapping[str, Any]]) -> str:
    """The control state a successful heartbeat reply grants (``agree_broker.granted_state``), ``?`` if unstated."""
    fields = ("should_shut_down", "in_controlled_shutdown", "is_fenced")
    if response is None or any(f not in response for f in fields):
        return "?"
    return agree_broker.granted_state(broker.BrokerHeartbeatResponse(
        error=Errors.NONE, is_fenced=response["is_fenced"], in_controlled_shutdown=response["in_controlled_shutdown"],
        should_shut_down=response["should_shut_down"]))


def encode_step(step: Step, now: int, constants: Mapping[str, TlaValue]) -> str:
    """The step, which happens at ``now``, as a ``BrokerLifecycleTrace`` step record.

    Raises :class:`Outside` when the step has no counterpart in the spec's vocabulary.
    """
    act = _SPEC_ACTIONS[modelled(step, _SPEC_ACTIONS, "the spec")]
    args = step.input
    if args.get("authorized") is False:
        raise Outside("the spec does not model authorization")
    fields: dict[str, TlaValue] = {"act": act, "b": 0, "i": 0, "e": 0, "off": 0, "wf": False, "ws": False,
                                   "now": now, "ok": ok(step.response), "reply": "?", "ep": _UNKNOWN_EPOCH}
    max_offset = int(constants["MaxOffset"])  # type: ignore[call-overload]
    if act == "RegisterBroker":
        request = args["request"]
        fields["b"] = _broker_id(request.broker_id, constants)
        fields["i"] = _incarnation(request.incarnation_id, constants)
        differs = _canonical_registration(request)
        if differs is not None:
            raise Outside(f"registration field {differs!r} differs from the spec's brokers' registrations")
        if fields["ok"] == "yes" and step.response is not None and "broker_epoch" in step.response:
            fields["ep"] = step.response["broker_epoch"]
    elif act == "Heartbeat":
        request = args["request"]
        fields["b"] = _broker_id(request.broker_id, constants)
        fields["e"] = within(request.broker_epoch, 0, max_offset, "broker epoch")
        fields["off"] = within(request.current_metadata_offset, -1, max_offset, "metadata offset")
        fields["wf"], fields["ws"] = request.want_fence, request.want_shut_down
        if fields["ok"] == "yes":
            fields["reply"] = _reply(step.response)
    elif act == "FenceStaleBroker":
        which = args.get("which")
        if step.response is not None and "expired_session" in step.response:
            which = step.response["expired_session"]
            fields["ok"] = "no" if which is None else "yes"
        else:
            fields["ok"] = "?"
        fields["b"], fields["e"] = (-1, 0) if which is None else (
            _broker_id(which[0], constants), within(which[1], 0, max_offset, "broker epoch"))
    elif act == "UnregisterBroker":
        fields["b"] = _broker_id(args["broker_id"], constants)
    fields["nrec"] = -1 if step.records is None else len(step.records)
    return to_tla(record(**fields, **stated_post(_post(step.post or {}, constants))))


def encode(trace: Trace, constants: Mapping[str, TlaValue]) -> Encoded:
    """``trace`` in the trace module's vocabulary, up to its first step the spec cannot express."""
    return encoded(lambda: to_tla(_initial(trace, constants)),
                   lambda: (encode_step(step, now, constants) for step, now in timed(trace.steps)))


MODULE = TraceModule("broker", "BrokerLifecycle",
                     ("clock", "nextOffset", "reg", "hb", "sessions", "part", "lastReply", "t", "i", "outside"), encode)
"""``spec/BrokerLifecycleTrace.tla``: the spec's variables, then the trace index, the steps explained, why it stopped."""
