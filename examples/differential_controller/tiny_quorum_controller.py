"""The active controller's side of KIP-919 controller registration and KIP-1073 DescribeCluster, written
independently of kraftspec's reference.

It speaks the trace format's JSON (the ``kraftspec.oracle.Adapter`` protocol) and keeps a cluster image as plain
dicts: broker and controller registrations, the Raft leader, the metadata.version. It handles

* ``register_controller``: authorization, then whether this controller is active, then whether the
  metadata.version has controller registrations (3.7-IV0); a RegisterControllerRecord at the log end, replayed;
* ``replay_register_controller``: another controller's record, replayed (the latest registration of an id wins);
* ``describe_cluster`` on a broker or a controller (rules §4.2), refusing (``kraftspec.oracle.Refused``) a request
  its version cannot carry, and ``check_request_serializable`` (§4.3).

It leaves the registration manager (the controller process that sends its own registration) out.
``TinyQuorumController(planted_bug=True)`` checks the metadata.version before whether it is active, in the order
the issue lists the checks: an inactive controller at an old metadata.version then answers UNSUPPORTED_VERSION
where Kafka answers NOT_CONTROLLER, which sends the registering controller to another one instead of waiting.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional

from kraftspec.oracle import Refused

CONTROLLER_REGISTRATION_MV = 15  # 3.7-IV0: controllers register in the log
BROKER, CONTROLLER = 1, 2
ENDPOINT_TYPES = {BROKER: "BROKER", CONTROLLER: "CONTROLLER"}
MAX_VERSION = 2  # DescribeCluster v0-v2 (v2: IncludeFencedBrokers, KIP-1073)
CLUSTER_OPERATIONS = sum(1 << code for code in (5, 7, 8, 9, 10, 11, 12))  # what the CLUSTER resource supports
NO_OPERATIONS = -(2**31)  # "not asked for"
MESSAGES = {"CLUSTER_AUTHORIZATION_FAILED": "Cluster authorization failed.",
            "NOT_CONTROLLER": "This is not the correct controller for this cluster.",
            "UNSUPPORTED_VERSION": "The version of API is not supported."}
"""A registration error's message: the error code's own text."""


class TinyQuorumController:
    """The active controller's cluster image (the trace-format adapter)."""

    def __init__(self, planted_bug: bool = False) -> None:
        self.planted_bug = planted_bug
        self.reset({"explicit": {}})

    def reset(self, initial: Mapping[str, Any]) -> None:
        """Start from an explicit initial state (only its cluster image counts here; 4.3's rules)."""
        image = initial["explicit"]
        if image.get("behaviour", "4.3+") != "4.3+":
            raise ValueError("TinyQuorumController follows Kafka 4.3's rules only")
        self.cluster_id = image.get("cluster_id", "")
        self.metadata_version = image.get("metadata_version", 30)
        self.raft_leader_id = image.get("raft_leader_id", -1)
        self.next_offset = image.get("next_offset", 0)
        self.brokers = {b["broker_id"]: b for b in image.get("brokers", [])}
        self.controllers: dict[int, dict[str, Any]] = {}
        for registration in image.get("controllers", []):
            self._replay({**registration, "end_points": registration.get("listeners", [])})

    def step(self, input: Mapping[str, Any]) -> dict[str, Any]:
        """One input (trace-format JSON) to the response and records this implementation exposes."""
        action = input["action"]
        if action == "register_controller":
            response, records = self._register(input["request"], input.get("active", True),
                                               input.get("authorized", True))
            return {"response": response, "records": records}
        if action == "replay_register_controller":  # another controller's record, at the log end
            self._replay(input["record"])
            self.next_offset += 1
            return {}
        if action == "describe_cluster":
            return {"response": self._describe(input)}
        if action == "check_request_serializable":
            problem = _unserializable(input["request"])
            return {"response": {"serializable": problem is None, "message": problem}}
        raise ValueError(f"TinyQuorumController does not implement {action!r}")

    # ------------------------------------------------------------------ KIP-919 registration

    def _register(self, request: Mapping[str, Any], active: bool,
                  authorized: bool) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        supported = self.metadata_version >= CONTROLLER_REGISTRATION_MV
        if not authorized:
            error = "CLUSTER_AUTHORIZATION_FAILED"
        elif self.planted_bug and not supported:
            error = "UNSUPPORTED_VERSION"
        elif not active:
            error = "NOT_CONTROLLER"
        elif not supported:
            error = "UNSUPPORTED_VERSION"
        else:
            record = {"offset": self.next_offset, "type": "RegisterControllerRecord",
                      "controller_id": request["controller_id"], "incarnation_id": request["incarnation_id"],
                      "zk_migration_ready": False,  # no ZooKeeper in 4.x, whatever the request says
                      "end_points": request.get("listeners", []), "features": request.get("features", []),
                      "version": 0}
            self.next_offset += 1
            self._replay(record)
            return {"error": "NONE", "message": ""}, [record]
        return {"error": error, "message": MESSAGES[error]}, []

    def _replay(self, record: Mapping[str, Any]) -> None:
        """A registration replaces the id's previous one; its listeners are keyed by name (the last one counts)."""
        self.controllers[record["controller_id"]] = {
            "listeners": {endpoint["name"]: endpoint for endpoint in record.get("end_points", [])}}

    # ------------------------------------------------------------------ KIP-1073 DescribeCluster

    def _describe(self, input: Mapping[str, Any]) -> dict[str, Any]:
        request = input["request"]
        problem = _unserializable(request)
        if problem is not None:
            raise Refused(problem)  # a client cannot send it
        version, wanted = request["version"], request.get("endpoint_type", BROKER)
        receiver = input.get("receiver", "broker")
        authorization = input.get("authorization", {})
        if receiver == "controller":
            if self.metadata_version < CONTROLLER_REGISTRATION_MV:
                return _error("UNSUPPORTED_VERSION", "Direct-to-controller communication is not supported with "
                                                     "the current MetadataVersion.")
            if not authorization.get("alter_cluster", True):
                return _error("CLUSTER_AUTHORIZATION_FAILED", "Request <request> needs ALTER permission.")
        served = CONTROLLER if receiver == "controller" else BROKER
        if wanted not in ENDPOINT_TYPES:
            return _error("INVALID_REQUEST" if version == 0 else "UNSUPPORTED_ENDPOINT_TYPE",
                          f"Unsupported endpoint type {wanted}")
        if wanted != served:
            return _error("INVALID_REQUEST" if version == 0 else "MISMATCHED_ENDPOINT_TYPE",
                          f"The request was sent to an endpoint of type {ENDPOINT_TYPES[served]}, but we wanted an "
                          f"endpoint of type {ENDPOINT_TYPES[wanted]}")
        operations = NO_OPERATIONS
        if request.get("include_cluster_authorized_operations", False):
            operations = (authorization.get("authorized_operations", 0) & CLUSTER_OPERATIONS
                          if authorization.get("describe_cluster", True) else 0)
        order = input.get("order")
        if served == CONTROLLER:
            listener = input.get("listener", "CONTROLLER")
            nodes = [_node(node_id, self.controllers[node_id]["listeners"].get(listener), None, False)
                     for node_id in _in_order(self.controllers, order)]
            controller_id = self.raft_leader_id
        else:
            listener = input.get("listener", "PLAINTEXT")
            include_fenced = request.get("include_fenced_brokers", False)
            nodes = [_node(broker_id, _endpoint(self.brokers[broker_id], listener), self.brokers[broker_id].get("rack"),
                           self.brokers[broker_id].get("fenced", True))
                     for broker_id in _in_order(self.brokers, order)
                     if include_fenced or not self.brokers[broker_id].get("fenced", True)]
            unfenced = sorted(b for b, registration in self.brokers.items() if not registration.get("fenced", True))
            controller_id = unfenced[input.get("chooser", 0) % len(unfenced)] if unfenced else -1
        listed = [node for node in nodes if node is not None]
        return {"error": "NONE", "error_message": None, "endpoint_type": served, "cluster_id": self.cluster_id,
                "controller_id": controller_id if controller_id in [n["node_id"] for n in listed] else -1,
                "nodes": listed, "cluster_authorized_operations": operations}


def _unserializable(request: Mapping[str, Any]) -> Optional[str]:
    """Why a client cannot write this DescribeCluster request at its version (None: it can)."""
    version = request["version"]
    if not 0 <= version <= MAX_VERSION:
        return f"The DESCRIBE_CLUSTER protocol does not support version {version}"
    if version < 1 and request.get("endpoint_type", BROKER) != BROKER:
        return f"Attempted to write a non-default endpointType at version {version}"
    if version < 2 and request.get("include_fenced_brokers", False):
        return f"Attempted to write a non-default includeFencedBrokers at version {version}"
    return None


def _error(error: str, message: str) -> dict[str, Any]:
    """An error response: every other field at its default."""
    return {"error": error, "error_message": message, "endpoint_type": BROKER, "cluster_id": "", "controller_id": -1,
            "nodes": [], "cluster_authorized_operations": NO_OPERATIONS}


def _in_order(registrations: Mapping[int, Any], order: Optional[list[int]]) -> list[int]:
    """Node ids as the image iterates them: ``order`` if the input states one, then the rest by id."""
    listed = [i for i in dict.fromkeys(order or []) if i in registrations]
    return listed + sorted(set(registrations) - set(listed))


def _endpoint(broker: Mapping[str, Any], listener: str) -> Optional[Mapping[str, Any]]:
    return next((e for e in broker.get("listeners", []) if e["name"] == listener), None)


def _node(node_id: int, endpoint: Optional[Mapping[str, Any]], rack: Optional[str],
          fenced: bool) -> Optional[dict[str, Any]]:
    """A node listed on ``endpoint``'s host and port; None without an endpoint on the listener."""
    if endpoint is None:
        return None
    return {"node_id": node_id, "host": endpoint["host"], "port": endpoint["port"], "rack": rack, "is_fenced": fenced}
