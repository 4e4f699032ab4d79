"""Broker traces of ``FeatureLevels.tla``'s controller in the vocabulary of ``FeatureLevelsTrace.tla``
(``kraftspec check --with-tlc``; rules §1.11, §1.3 checks 5-7).

A broker trace goes here when its initial state is ``agree_features.EXPLICIT`` (the spec's ``Init``), as the traces
recorded from the spec's graph (``traces/tla/features.jsonl.gz``) and Kafka's runs of them are. Each step names one
of the spec's actions (RegisterBroker, UnregisterBroker, UpdateFeatures) with its arguments, whether the request
succeeded, the number of records written and the stated post-state variables. A registration other than one of the
spec's brokers' softwares (``agree_features.registration``), a request outside the spec's ``Requests``, validate-only
or unauthorized requests and the actions the spec does not model are outside its bounds.
"""

from __future__ import annotations

from typing import Any, Mapping

from kraftspec.reference import broker
from kraftspec.spec import agree_features
from kraftspec.spec.tla_parse import to_tla
from kraftspec.spec.tla_values import TlaValue, fn, record
from kraftspec.spec.trace_validation_common import Encoded, Outside, TraceModule, encoded, modelled, ok, stated_post
from kraftspec.traces.format.envelope import Step, Trace

_SPEC_ACTIONS = {"register_broker": "RegisterBroker", "unregister_broker": "UnregisterBroker",
                 "update_features": "UpdateFeatures"}


def _initial(trace: Trace, constants: Mapping[str, TlaValue]) -> str:
    """The trace's initial state as the spec's variables: only ``Init`` itself (the spec's controller)."""
    if trace.standard is not None or trace.explicit != agree_features.EXPLICIT:
        raise Outside("the controller is not FeatureLevels.tla's (agree_features.EXPLICIT)")
    (state,) = agree_features.initial_states(constants)
    return to_tla(record(**agree_features.project(state)))


def _software(request: broker.BrokerRegistrationRequest, constants: Mapping[str, TlaValue]) -> int:
    """The spec's software whose registration ``request`` is."""
    for software in sorted(constants["Softwares"]):  # type: ignore[call-overload]
        if request == agree_features.registration(request.broker_id, software):
            return int(software)
    raise Outside("the registration is not one of the spec's brokers' softwares")


def _request(request: Any, constants: Mapping[str, TlaValue]) -> TlaValue:
    """An UpdateFeatures request as the spec's set of updates, when it is one of the spec's ``Requests``."""
    if request.validate_only:
        raise Outside("the spec does not model validate-only requests (they write nothing)")
    if request not in agree_features.requests(constants):
        raise Outside("the request is not one of the spec's Requests")
    return frozenset(record(f=u.feature, level=u.max_version_level, type=u.upgrade_type) for u in request.updates)


def encode_step(step: Step, constants: Mapping[str, TlaValue]) -> str:
    """The step as a ``FeatureLevelsTrace`` step record (:class:`Outside` when the spec cannot express it)."""
    act = _SPEC_ACTIONS[modelled(step, _SPEC_ACTIONS, "FeatureLevels.tla")]
    args = step.input
    if args.get("authorized") is False:
        raise Outside("the spec does not model authorization")
    fields: dict[str, TlaValue] = {"act": act, "b": 0, "s": 0, "req": frozenset(), "ok": ok(step.response)}
    if act == "RegisterBroker":
        request = args["request"]
        if request.broker_id not in constants["Brokers"]:  # type: ignore[operator]
            raise Outside(f"broker id {request.broker_id} is not in Brokers")
        fields["b"], fields["s"] = request.broker_id, _software(request, constants)
    elif act == "UnregisterBroker":
        if args["broker_id"] not in constants["Brokers"]:  # type: ignore[operator]
            raise Outside(f"broker id {args['broker_id']} is not in Brokers")
        fields["b"] = args["broker_id"]
    else:
        fields["req"] = _request(args["request"], constants)
    post = step.post or {}
    unknown = sorted(set(post) - {"features", "next_offset"})
    if unknown:
        raise Outside(f"post-state field {unknown[0]!r} has no counterpart in FeatureLevels.tla")
    stated: dict[str, TlaValue] = {}
    if "features" in post:
        if set(post["features"]) - set(agree_features.FEATURES):
            raise Outside(f"finalized features {post['features']}: the spec models {agree_features.FEATURES}")
        stated["fin"] = fn({name: post["features"].get(name, 0) for name in agree_features.FEATURES})
    if "next_offset" in post:
        stated["nextOffset"] = post["next_offset"]
    fields["nrec"] = -1 if step.records is None else len(step.records)
    return to_tla(record(**fields, **stated_post(stated)))


def encode(trace: Trace, constants: Mapping[str, TlaValue]) -> Encoded:
    """``trace`` in the trace module's vocabulary, up to its first step the spec cannot express."""
    return encoded(lambda: _initial(trace, constants), lambda: (encode_step(step, constants) for step in trace.steps))


MODULE = TraceModule("broker", "FeatureLevels", ("fin", "reg", "minIsr", "nextOffset", "t", "i", "outside"), encode)
"""``spec/FeatureLevelsTrace.tla``: the spec's variables, then the trace index, the steps explained, why it stopped."""
