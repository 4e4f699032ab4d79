"""The controller component of trace format v1: KIP-919 controller registration and DescribeCluster (rules §4).

A controller trace replays on the active controller's view of the cluster (its ``ClusterImage``: broker and
controller registrations, the Raft leader, the metadata.version) beside ONE controller process's
``ControllerRegistrationManager`` (``controller_registration.ManagerState``). Each action is named after
the reference function that decides it: the manager's ``start`` / ``maybe_send`` / ``on_metadata_update`` /
``on_response`` / ``on_deadline`` (output: the ControllerRegistration requests sent), the active
controller's ``register_controller`` (its response and the RegisterControllerRecord written, then replayed
into the image), ``replay_register_controller`` (a record another controller wrote), ``describe_cluster``
and ``check_request_serializable`` (``reference/describe_cluster.py``); ``restart`` starts a new process
(a new incarnation id) and ``advance_clock`` moves the trace's clock.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from kraftspec.reference import controller_registration as cr
from kraftspec.reference.broker_registration import BrokerRegistration
from kraftspec.reference.describe_cluster import Authorization, ClusterImage, DescribeClusterRequest, Receiver
from kraftspec.reference.errors import Errors
from kraftspec.reference.frozen import FrozenMap
from kraftspec.reference.metadata_version import LATEST_PRODUCTION
from kraftspec.reference.records import MetadataRecord, RegisterControllerRecord
from kraftspec.traces.format.broker import BROKER, Action, decode_arguments, input_plans
from kraftspec.traces.format.limits import quote
from kraftspec.traces.replay.state_cache import ExplicitStates
from kraftspec.traces.format.values import TraceError, decoder, require, to_json

_NOW = {"now": (int, False)}
ACTIONS: dict[str, Action] = {a.name: a for a in (
    Action("start", "controller_registration.start", {}),
    Action("maybe_send", "controller_registration.maybe_send", {}),
    Action("on_metadata_update", "controller_registration.on_metadata_update",
           {"metadata_version": (int, False), "registration_changed": (bool, False)}),
    Action("on_response", "controller_registration.on_response",
           {"error": (Errors, False), **_NOW, "jitter": (float, False)}),
    Action("on_deadline", "controller_registration.on_deadline", _NOW),
    Action("restart", "controller_registration.ManagerState", {"incarnation_id": (str, True)}),
    Action("register_controller", "controller_registration.register_controller",
           {"request": (cr.ControllerRegistrationRequest, True), "active": (bool, False), "authorized": (bool, False)}),
    Action("replay_register_controller", "controller_registration.replay_register_controller",
           {"record": (RegisterControllerRecord, True)}),
    Action("describe_cluster", "describe_cluster.describe_cluster",
           {"request": (DescribeClusterRequest, True), "receiver": (Receiver, False), "listener": (str, False),
            "authorization": (Authorization, False), "chooser": (int, False), "order": (tuple[int, ...], False)}),
    Action("check_request_serializable", "describe_cluster.check_request_serializable",
           {"request": (DescribeClusterRequest, True)}),
    Action("advance_clock", "advance_clock", {"now": (int, True)}),
)}
"""Each action's ``rule``: the ``kraftspec.reference`` function (module.name) that decides it."""

DEFAULT_LISTENERS = {Receiver.BROKER: "PLAINTEXT", Receiver.CONTROLLER: "CONTROLLER"}
"""The listener a DescribeCluster request arrives on when the input names none."""


def decode_jitter(value: object, path: str) -> float:
    """The backoff's random draw, a number in [0, 1) (``ThreadLocalRandom.nextDouble`` scaled, rules §4.1)."""
    if type(value) not in (int, float) or not 0 <= value < 1:  # type: ignore[operator]
        raise TraceError(f"{path}: expected a number in [0, 1), got {quote(value)}")
    return value  # type: ignore[return-value]  # as given: 0 stays 0 in the JSON written back


def decode_receiver(value: object, path: str) -> Receiver:
    """``"broker"`` (``KafkaApis``) or ``"controller"`` (``ControllerApis``): which node handles DescribeCluster (§4.2)."""
    names = [r.value for r in Receiver]
    if value not in names:
        raise TraceError(f"{path}: expected one of {', '.join(names)}, got {quote(value)}")
    return Receiver(value)


_SELF_DECODERS: dict[str, Callable[[object, str], Any]] = {"jitter": decode_jitter, "receiver": decode_receiver}
"""Arguments of types the shared codecs do not read, decoded here."""
_INPUT_PLANS = input_plans({name: dataclasses.replace(a,
                                                      args={k: v for k, v in a.args.items() if k not in _SELF_DECODERS})
                            for name, a in ACTIONS.items()})


@dataclass(frozen=True)
class ControllerControl:
    """What a controller trace replays on: the active controller's cluster image, one process's registration
    manager and the metadata log's end offset (the next record's offset)."""

    image: ClusterImage
    manager: cr.ManagerState
    next_offset: int = 0
    behaviour: cr.ControllerBehaviour = cr.KAFKA_4_3
    stuck: bool = False
    """The manager's request flag is set with no request in flight (a channel timeout before Kafka 4.3)."""


_EXPLICIT_FIELDS: dict[str, tuple[Any, bool]] = {
    "cluster_id": (str, False), "metadata_version": (int, False), "brokers": (list, False),
    "controllers": (list, False), "raft_leader_id": (int, False), "next_offset": (int, False), "manager": (dict, True),
    "behaviour": (str, False),
}
CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qg"


def explicit_state(obj: Mapping[str, Any], path: str = "initial.explicit") -> ControllerControl:
    """``{cluster_id, metadata_version=4.3-IV0, brokers=[BrokerRegistration], controllers=[ControllerRegistration],
    raft_leader_id=-1, next_offset=0, manager={ManagerState fields}, behaviour="4.3+"}``: the image as the log
    defines it (§4.1, §4.2); ``behaviour`` names the Kafka version's registration rules
    (``controller_registration.CONTROLLER_BEHAVIOURS``: "3.9", "4.0", "4.1", "4.2", "4.3+", the default)."""
    unknown = sorted(set(obj) - set(_EXPLICIT_FIELDS))
    if unknown:
        raise TraceError(f"{path}: unknown field {unknown[0]!r}")
    values = {name: require(dict(obj), name, tp, path, optional=not required)
              for name, (tp, required) in _EXPLICIT_FIELDS.items()}
    brokers = decoder(tuple[BrokerRegistration, ...])(values["brokers"] or [], f"{path}.brokers")
    controllers = decoder(tuple[cr.ControllerRegistration, ...])(values["controllers"] or [], f"{path}.controllers")
    for where, ids in (("brokers", [b.broker_id for b in brokers]),
                       ("controllers", [c.controller_id for c in controllers])):
        if len(set(ids)) != len(ids):
            raise TraceError(f"{path}.{where}: an id is registered twice")
    image = ClusterImage(
        cluster_id=values["cluster_id"] if values["cluster_id"] is not None else CLUSTER_ID,
        brokers=FrozenMap({b.broker_id: b for b in brokers}),
        controllers=FrozenMap({c.controller_id: cr.keyed_by_name(c) for c in controllers}),
        raft_leader_id=values["raft_leader_id"] if values["raft_leader_id"] is not None else -1,
        metadata_version=values["metadata_version"] if values["metadata_version"] is not None else LATEST_PRODUCTION)
    manager = decoder(cr.ManagerState)(values["manager"], f"{path}.manager")
    next_offset = values["next_offset"] or 0
    if next_offset < 0:
        raise TraceError(f"{path}.next_offset: must not be negative")
    behaviour = cr.CONTROLLER_BEHAVIOURS.get(values["behaviour"] or cr.KAFKA_4_3.name)
    if behaviour is None:
        raise TraceError(f"{path}.behaviour: expected one of {', '.join(cr.CONTROLLER_BEHAVIOURS)}, "
                         f"got {quote(values['behaviour'])}")
    return ControllerControl(image, manager, next_offset, behaviour)


cached_explicit_state = ExplicitStates(explicit_state)
"""``explicit_state(obj, path)``, built once per distinct state and reference identity, then shared."""


def _controller_listener(node_id: int) -> dict[str, Any]:
    return {"name": "CONTROLLER", "host": f"controller{node_id}", "port": 9093}


_BROKERS = [{"broker_id": b, "epoch": 100 + b, "incarnation_id": f"broker{b}-inc", "fenced": b == 6,
             "rack": "r1" if b == 4 else None, "listeners": [{"name": "PLAINTEXT", "host": f"broker{b}", "port": 9092}]}
            for b in (4, 5, 6)]
_MANAGER = {"node_id": 1, "incarnation_id": "inc1", "listeners": [_controller_listener(1)]}
STANDARD_JSON: dict[str, dict[str, Any]] = {
    "controller/new-process": {"brokers": _BROKERS, "raft_leader_id": 1, "manager": _MANAGER},
    "controller/registered-cluster": {
        "brokers": _BROKERS, "raft_leader_id": 1, "next_offset": 3,
        "controllers": [{"controller_id": c, "incarnation_id": f"inc{c}", "listeners": [_controller_listener(c)]}
                        for c in (1, 2, 3)],
        "manager": {**_MANAGER, "metadata_version": LATEST_PRODUCTION, "registered": True, "channel_started": True,
                    "successful_rpcs": 1}},
}
"""Standard initial states as explicit ones (FORMAT.md lists them)."""

STANDARD_STATES: dict[str, Callable[[], ControllerControl]] = {
    name: functools.partial(explicit_state, obj, f"initial.standard {name}") for name, obj in STANDARD_JSON.items()}


class ControllerComponent:
    """The ``controller`` component: decoding and encoding of its inputs, records and explicit initial states."""

    name = "controller"
    standard_states = STANDARD_STATES

    def decode_input(self, action: str, obj: dict[str, Any], path: str) -> Mapping[str, Any]:
        """The arguments of ``action`` (only those given; the reference's defaults apply to the rest)."""
        args = decode_arguments(_INPUT_PLANS, "controller", action,
                                {k: v for k, v in obj.items() if k not in _SELF_DECODERS}, path)
        for name, decode in _SELF_DECODERS.items():
            if name in obj:
                if name not in ACTIONS[action].args:
                    raise TraceError(f"{path}: unknown argument {name!r} for action {action!r}")
                args[name] = decode(obj[name], f"{path}.{name}")
        return args

    def encode_input(self, action: str, args: Mapping[str, Any]) -> dict[str, Any]:
        """The JSON arguments of one input (a receiver by its value: ``broker`` / ``controller``)."""
        return {name: value.value if isinstance(value, Receiver) else to_json(value) for name, value in args.items()}

    def decode_record(self, obj: object, path: str) -> tuple[int, MetadataRecord]:
        """``{"offset", "type": "RegisterControllerRecord", ...fields}`` as (offset, record), as for the broker."""
        return BROKER.decode_record(obj, path)

    def encode_record(self, offset: int, record: MetadataRecord) -> dict[str, Any]:
        """A record with its offset and type name first, then all its fields."""
        return BROKER.encode_record(offset, record)

    def check_explicit(self, obj: dict[str, Any], path: str) -> None:
        """Check an explicit initial state by building it (cheap: the replay builds it again)."""
        explicit_state(obj, path)


CONTROLLER = ControllerComponent()
