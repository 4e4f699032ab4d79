"""The ``controller`` component's hooks for the Kafka harness (``io.kraftspec.harness.ControllerSession``).

* :func:`kafka_initial`: a trace's ``initial`` object as the Java session opens it, built by the reference's own
  trace code (``kraftspec.traces.format.controller``: the standard states and ``explicit_state``), so both sides
  start from the same cluster image and manager.
* :func:`kafka_input`: an input as Kafka gets it (incarnation names as Kafka ``Uuid`` strings).
* :func:`trace_step`: Kafka's answer as a trace step, in the trace's names again. Where Kafka drew a random value,
  the step's input states Kafka's draw so that the reference takes the same: ``on_response``'s ``jitter`` (the
  ``ThreadLocalRandom.nextDouble()`` that Kafka's ``ExponentialBackoff.backoff`` took) and ``describe_cluster``'s
  ``chooser`` (the broker ``KRaftMetadataCache.getRandomAliveBrokerId`` picked, as the response's controller id
  shows it, as an index among the unfenced brokers in id order, the reference's convention) and ``order`` (the order Kafka iterated the image's
  registrations in, a ``HashMap`` order, stated when it is not id order).

Incarnation ids: Kafka's are ``Uuid``s, a trace's any string. A name maps to the Uuid made of the first 16 bytes
of its SHA-256 (base64url, as ``Uuid.toString`` writes it); the names seen are remembered so that the Uuids in
Kafka's answers map back to them.
"""

from __future__ import annotations

import base64
import hashlib
from typing import Any, Mapping

from kraftspec.traces.format.controller import STANDARD_STATES, ControllerControl, explicit_state
from kraftspec.traces.format.values import to_json

_NAMES: dict[str, str] = {}
"""Kafka Uuid string -> the trace's incarnation name."""


def incarnation_uuid(name: str) -> str:
    """The Kafka ``Uuid`` (its string form) that stands for the trace's incarnation id ``name``."""
    digest = bytearray(hashlib.sha256(name.encode()).digest()[:16])
    uuid = base64.urlsafe_b64encode(bytes(digest)).decode().rstrip("=")
    _NAMES[uuid] = name
    return uuid


def incarnation_name(uuid: str) -> str:
    """The trace's name for a Uuid Kafka answered with (the Uuid itself if no trace name maps to it)."""
    return _NAMES.get(uuid, uuid)


def _state(initial: Mapping[str, Any]) -> ControllerControl:
    if "standard" in initial:
        return STANDARD_STATES[initial["standard"]]()
    return explicit_state(dict(initial["explicit"]))


def _with_uuid(obj: dict[str, Any]) -> dict[str, Any]:
    return {**obj, "incarnation_id": incarnation_uuid(obj["incarnation_id"])}


def kafka_initial(initial: Mapping[str, Any]) -> dict[str, Any]:
    """What ``ControllerSession`` opens with: the image (brokers, controllers, metadata.version, Raft leader, log
    end) and the manager's fields, as the reference's initial state holds them."""
    state = _state(initial)
    image, manager = state.image, state.manager
    return {
        "cluster_id": image.cluster_id,
        "metadata_version": image.metadata_version,
        "raft_leader_id": image.raft_leader_id,
        "next_offset": state.next_offset,
        "brokers": [_with_uuid(to_json(b)) for _, b in sorted(image.brokers.items())],
        "controllers": [_with_uuid(to_json(c)) for _, c in sorted(image.controllers.items())],
        "manager": _with_uuid(to_json(manager)),
    }


CHOICES = ("jitter", "chooser", "order")
"""The input fields where a step states what Kafka chose (see the module's docstring)."""


def kafka_input(input: Mapping[str, Any]) -> dict[str, Any]:
    """The input with its incarnation names as Kafka Uuids."""
    sent = dict(input)
    action = sent.get("action")
    if action == "restart":
        sent["incarnation_id"] = incarnation_uuid(sent["incarnation_id"])
    elif action == "register_controller" and isinstance(sent.get("request"), dict):
        sent["request"] = _with_uuid(sent["request"])
    elif action == "replay_register_controller" and isinstance(sent.get("record"), dict):
        sent["record"] = _with_uuid(sent["record"])
    return sent


def _named(obj: dict[str, Any]) -> dict[str, Any]:
    return {**obj, "incarnation_id": incarnation_name(obj["incarnation_id"])}


def _trace_input(sent: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`kafka_input` undone."""
    input = dict(sent)
    action = input.get("action")
    if action == "restart":
        input["incarnation_id"] = incarnation_name(input["incarnation_id"])
    elif action == "register_controller" and isinstance(input.get("request"), dict):
        input["request"] = _named(input["request"])
    elif action == "replay_register_controller" and isinstance(input.get("record"), dict):
        input["record"] = _named(input["record"])
    return input


def _record(record: Mapping[str, Any]) -> dict[str, Any]:
    """A RegisterControllerRecord in Kafka's JSON form as a trace record."""
    if record["type"] != "RegisterControllerRecord":
        raise ValueError(f"the controller component writes no {record['type']}")
    data = record["data"]
    return {"offset": record["offset"], "type": record["type"], "controller_id": data["controllerId"],
            "incarnation_id": incarnation_name(data["incarnationId"]), "zk_migration_ready": data["zkMigrationReady"],
            "end_points": [{"name": e["name"], "host": e["host"], "port": e["port"],
                            "security_protocol": e["securityProtocol"]} for e in data["endPoints"]],
            "features": [{"name": f["name"], "min_supported": f["minSupportedVersion"],
                          "max_supported": f["maxSupportedVersion"]} for f in data["features"]],
            "version": record["version"]}


def trace_step(sent: Mapping[str, Any], answer: Mapping[str, Any]) -> dict[str, Any]:
    """Kafka's answer as a trace step: its outputs and post-state in the trace's names, its random draws stated."""
    input = _trace_input(sent)
    choices = answer.get("choices") or {}
    if "jitter" in choices:
        input["jitter"] = choices["jitter"]
    for name in ("chooser", "order"):
        if name in choices:
            input[name] = choices[name]
    step: dict[str, Any] = {"input": input}
    output = answer.get("output") or {}
    stated: dict[str, Any] = {}
    if "response" in output:
        response = dict(output["response"])
        if "sends" in response:
            response["sends"] = [_named(s) for s in response["sends"]]
        stated["response"] = response
    if "records" in output:
        stated["records"] = [_record(r) for r in output["records"]]
    if stated:
        step["output"] = stated
    post = answer.get("post")
    if post is not None:
        post = dict(post)
        if "incarnation_id" in post:
            post["incarnation_id"] = incarnation_name(post["incarnation_id"])
        if "controllers" in post:
            post["controllers"] = {k: _named(v) for k, v in post["controllers"].items()}
        step["post"] = post
    return step

