"""A Hypothesis differential state machine for the ``controller`` component: Apache Kafka's own classes (through
the harness, :class:`kraftspec.harness.adapter.KafkaAdapter`) and the reference, given the same inputs.

Inputs are drawn from the public strategies of ``kraftspec.models.controller_strategies`` (cluster images, broker
and controller registrations, endpoints, DescribeCluster requests, registration failures, jitter draws) around
the reference's current state (the manager's own incarnation, the pending request, the resend deadline), so that
the paths that matter are reached often: registration by the running and by stale incarnations, failures and
their backoff, the resend timer (due, not yet due, due while a request is pending), restarts, metadata.version
changes, and DescribeCluster at every version on both receivers with every endpoint type, listener and
authorization. Every step is judged as ``kraftspec check`` judges a recorded step; an input one side refuses
must be refused by the other (a refused input changes neither side). A disagreement fails with
:class:`ControllerDivergence`, whose message holds the trace so far; ``kraftspec conform --kafka VERSION`` replays
it on Kafka again and ``kraftspec check`` on the reference.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from typing import Any, Callable, Mapping, Optional

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule

from kraftspec import oracle
from kraftspec.models.controller_strategies import (
    LISTENERS,
    cluster_images,
    describe_cluster_requests,
    endpoints,
    jitter_draws,
    registration_failures,
)
from kraftspec.reference.errors import Errors
from kraftspec.reference.records import FeatureRange
from kraftspec.traces.replay import verdict as replay_module
from kraftspec.traces.format.envelope import Step, Trace, components, step_from_json
from kraftspec.traces.format.jsonl import dumps
from kraftspec.traces.format.values import to_json

COMPONENT = "controller"
INCARNATIONS = ("incA", "incB", "incC", "inc1", "old", "new")
CONTROLLER_IDS = (3000, 3001, 3002)
FEATURE_NAMES = ("metadata.version", "kraft.version", "group.version")
METADATA_VERSIONS = (7, 14, 15, 21, 30, 31)
"""Levels Kafka 4.3 defines: 3.3-IV3 (the 4.x minimum), 3.6-IV2, 3.7-IV0 (controller registration), 3.9-IV0,
4.3-IV0, 4.4-IV0."""


@dataclass(frozen=True)
class Profile:
    """What a Kafka version knows: the metadata.versions drawn (each defined by that version) and the reference's
    behaviour for it (``controller_registration.CONTROLLER_BEHAVIOURS``); the standard states (4.3-IV0, 4.1+
    rules) only where both hold."""

    metadata_versions: tuple[int, ...]
    behaviour: str
    standard_states: bool
    include_fenced_brokers: bool = True  # the DescribeCluster request has the field (KIP-1073, 4.0)


PROFILES = {
    "3.9": Profile((1, 7, 14, 15, 21), "3.9", False, False),
    "4.0": Profile((7, 14, 15, 21, 25), "4.0", False),
    "4.1": Profile((7, 14, 15, 21, 27), "4.1", False),
    "4.2": Profile((7, 14, 15, 21, 29, 30), "4.2", False),
    "4.3": Profile(METADATA_VERSIONS, "4.3+", True),
    "4.4": Profile((*METADATA_VERSIONS, 33), "4.3+", True),
}
"""By Kafka minor version (``MetadataVersion``'s levels: 3.9 knows 1–23, 4.0 7–26, 4.1 7–29, 4.2 7–30, 4.3 7–31,
4.4 7–34)."""


def profile(kafka_version: str) -> Profile:
    """The profile of a Kafka version such as ``4.3.1``."""
    minor = ".".join(kafka_version.split(".")[:2])
    if minor not in PROFILES:
        raise KeyError(f"no controller profile for Kafka {kafka_version} (known: {', '.join(PROFILES)})")
    return PROFILES[minor]


class ControllerDivergence(oracle.DivergenceError):
    """The implementation behind the adapter (Kafka, or a user's) and the reference disagree; the message is the
    report and the trace so far (JSON Lines)."""


def feature_ranges() -> st.SearchStrategy[tuple[FeatureRange, ...]]:
    """Up to two supported-feature ranges with distinct names."""
    return st.lists(st.builds(FeatureRange, name=st.sampled_from(FEATURE_NAMES), min_supported=st.integers(0, 3),
                              max_supported=st.integers(3, 31)),
                    max_size=2, unique_by=lambda f: f.name).map(tuple)


def listener_lists() -> st.SearchStrategy[list[Any]]:
    """Up to three endpoints (``endpoints()``) with distinct listener names, as JSON."""
    return st.lists(endpoints(), max_size=3, unique_by=lambda e: e.name).map(to_json)


@st.composite
def initial_states(draw: st.DrawFn, kafka: Profile = PROFILES["4.3"]) -> dict[str, Any]:
    """A trace ``initial``: a standard state, or an explicit one built from ``cluster_images()`` with a manager
    for one of its controller ids, fresh or in the middle of its work (MV known, started, registered, a request
    pending, failures counted, a resend scheduled); metadata.versions and the behaviour as ``kafka`` knows them."""
    kind = draw(st.sampled_from(("standard", "explicit", "explicit") if kafka.standard_states else ("explicit",)))
    if kind == "standard":
        return {"standard": draw(st.sampled_from(("controller/new-process", "controller/registered-cluster")))}
    image = draw(cluster_images())
    manager: dict[str, Any] = {
        "node_id": draw(st.sampled_from(CONTROLLER_IDS)),
        "incarnation_id": draw(st.sampled_from(INCARNATIONS)),
        "listeners": draw(listener_lists()),
        "features": to_json(draw(feature_ranges())),
    }
    if draw(st.booleans()):
        manager.update({
            "metadata_version": draw(st.sampled_from((1, *kafka.metadata_versions, 15, kafka.metadata_versions[-1]))),
            "registered": draw(st.sampled_from((False, False, True))),
            "channel_started": draw(st.sampled_from((False, True, True))),
            "pending_rpcs": draw(st.integers(0, 1)),
            "successful_rpcs": draw(st.integers(0, 3)),
            "failed_rpcs": draw(st.integers(0, 12)),
            "resend_deadline_ms": draw(st.one_of(st.none(), st.integers(1, 400))),
        })
    explicit = {
        "cluster_id": image.cluster_id,
        "metadata_version": image.metadata_version if image.metadata_version in kafka.metadata_versions
        else draw(st.sampled_from(kafka.metadata_versions)),
        "behaviour": kafka.behaviour,
        "brokers": [to_json(b) for _, b in sorted(image.brokers.items())],
        "controllers": [to_json(c) for _, c in sorted(image.controllers.items())],
        "raft_leader_id": image.raft_leader_id,
        "next_offset": draw(st.integers(0, 5)),
        "manager": manager,
    }
    return {"explicit": explicit}


def sendable_describe_cluster_requests() -> st.SearchStrategy[Any]:
    """DescribeCluster requests the client can write at their version (``describe_cluster_requests()`` draws any):
    EndpointType only from v1, IncludeFencedBrokers only from v2."""
    from kraftspec.reference.describe_cluster import DescribeClusterRequest

    return st.integers(0, 2).flatmap(lambda v: st.builds(
        DescribeClusterRequest, version=st.just(v), include_cluster_authorized_operations=st.booleans(),
        endpoint_type=st.sampled_from((1, 2, 0, 3, 123, -1)) if v >= 1 else st.just(1),
        include_fenced_brokers=st.booleans() if v >= 2 else st.just(False)))


CHOICES = ("jitter", "chooser", "order")
"""Input arguments that state a random or hash-order choice Kafka made (``kraftspec.harness.controller``)."""


def _without_choices(input: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in input.items() if key not in CHOICES}


class ControllerDifferential:
    """Kafka (an adapter) and the reference side by side for the controller component.

    Unlike :class:`kraftspec.oracle.Differential`, an input the reference refuses is sent to Kafka too, and
    must be refused there (and the other way round). Kafka's random draws and hash orders come back in the step's
    input (``jitter``, ``chooser``, ``order``), which the reference then takes; any other difference between the
    input sent and the input the step states is a failure (the harness gave Kafka something else).
    """

    def __init__(self, adapter: Any, initial: Mapping[str, Any]) -> None:
        self.adapter, self.initial = adapter, dict(initial)
        self.position = oracle.start(self.initial, COMPONENT)
        self.steps: list[Step] = []
        self.refusals = 0
        adapter.reset(self.initial)

    def trace(self, trace_id: str = "differential-controller") -> Trace:
        """The steps taken so far (refused inputs left out: they changed neither side) as a trace."""
        return Trace(COMPONENT, tuple(self.steps), standard=self.initial.get("standard"),
                     explicit=self.initial.get("explicit"), id=trace_id,
                     meta={"generator": "kraftspec.differential_controller"})

    def _fail(self, report: str) -> None:
        trace = self.trace()
        raise ControllerDivergence(f"the implementation and the reference disagree: {report}\n  the trace so far (kraftspec "
                                   f"conform --kafka replays it on Kafka, kraftspec check on the reference):\n"
                                   f"{dumps(trace)}", trace)

    def step(self, input: Mapping[str, Any]) -> Optional[oracle.StepCheck]:
        """Send ``input`` to both; None if both refuse it; :class:`ControllerDivergence` if they disagree."""
        from kraftspec.harness.adapter import KafkaRefused

        component = components()[COMPONENT]
        bare = step_from_json(component, {"input": dict(input)})
        refused_by_reference = replay_module.check_step(COMPONENT, self.position.state, self.position.clock,
                                                        bare)[0] is None
        try:
            output = dict(self.adapter.step(dict(input)))
        except KafkaRefused as exc:
            if refused_by_reference:
                self.refusals += 1
                PATHS.update(paths_of(input, self.position.state, self.position.state, None))
                return None
            self._fail(f"the implementation refused {dict(input)} ({exc}); the reference accepts it")
        if refused_by_reference:
            self._fail(f"the reference refuses {dict(input)}; the implementation accepted it: {output}")
        stated = dict(output.pop("input", input))
        if _without_choices(stated) != _without_choices(input):
            self._fail(f"the step Kafka answered states another input than the one sent: sent {dict(input)}, "
                       f"stated {stated} (only Kafka's choices {', '.join(CHOICES)} may be added)")
        obj: dict[str, Any] = {"input": stated}
        if "response" in output or "records" in output:
            obj["output"] = {key: output[key] for key in ("response", "records") if key in output}
        if "post" in output:
            obj["post"] = output["post"]
        step = step_from_json(component, obj, f"steps[{len(self.steps)}]")
        checked = oracle.check_step(self.position, step)
        self.steps.append(step)
        if not checked.conformant:
            verdict = checked.verdict(len(self.steps) - 1, len(self.steps), "differential-controller")
            self._fail(oracle.describe(verdict))
        assert checked.after is not None
        PATHS.update(paths_of(obj["input"], self.position.state, checked.after.state, step))
        self.position = checked.after
        return checked


STEPS = [0]
"""Steps judged so far in this process (every machine's), for the benchmark's count."""
PATHS: Counter[str] = Counter()
"""How often each path of interest was taken (:func:`paths_of`), over every machine of this process."""


def paths_of(input: Mapping[str, Any], before: Any, after: Any, step: Optional[Step]) -> list[str]:
    """The paths of interest one judged step took (None: both sides refused it), for the benchmark's report."""
    action = input["action"]
    if step is None:
        return [f"{action}: refused by both"]
    found = [action]
    response = step.response or {}
    if response.get("sends"):
        found.append(f"{action}: sent a registration")
    manager, previous = after.manager, before.manager
    if action == "on_response":
        found.append("on_response: success" if input.get("error", "NONE") == "NONE" else "on_response: failure")
        if previous.failed_rpcs >= 11 and input.get("error", "NONE") != "NONE":
            found.append("on_response: failure at the backoff cap")
        deadline = previous.resend_deadline_ms
        if deadline is not None and after.manager is not None and input.get("now", -1) >= deadline:
            found.append("on_response: a due resend fired first")
    if action == "on_deadline" and previous.resend_deadline_ms is not None and manager.resend_deadline_ms is None:
        found.append("on_deadline: the resend fired")
    if manager.registered and not previous.registered:
        found.append("registered in the log")
    if manager.registered is False and previous.registered:
        found.append("registration lost (another incarnation or removed)")
    if action in ("register_controller", "describe_cluster") and "error" in response:
        receiver = input.get("receiver", "broker") if action == "describe_cluster" else ""
        found.append(f"{action}{' ' + receiver if receiver else ''}: {response['error']}")
    if action == "describe_cluster" and "chooser" in input:
        found.append("describe_cluster: Kafka's random broker reported")
    if action == "check_request_serializable":
        found.append(f"check_request_serializable: {response.get('serializable')}")
    return found


def controller_machine(adapter: Callable[[], Any], kafka_version: str = "4.3.1") -> type[RuleBasedStateMachine]:
    """A Hypothesis state machine driving ``adapter()`` (e.g. ``KafkaAdapter("controller")``) and the reference;
    the inputs and the reference's behaviour follow ``kafka_version`` (:func:`profile`)."""
    kafka = profile(kafka_version)

    def expressible(request: Any) -> Any:
        """The request as this Kafka's schema can hold it (3.9's has no IncludeFencedBrokers)."""
        return request if kafka.include_fenced_brokers else replace(request, include_fenced_brokers=False)

    class ControllerDifferentialMachine(RuleBasedStateMachine):
        """Kafka's controller registration and DescribeCluster beside the reference (see the module docstring)."""

        differential: ControllerDifferential

        @initialize(initial=initial_states(kafka))
        def init(self, initial: dict[str, Any]) -> None:
            self.differential = ControllerDifferential(adapter(), initial)

        @property
        def _state(self) -> Any:
            return self.differential.position.state

        @property
        def _clock(self) -> int:
            return self.differential.position.clock

        def _send(self, action: str, **args: Any) -> None:
            self.differential.step({"action": action, **args})
            STEPS[0] += 1

        def _registration(self, data: st.DataObject, controller_id: Optional[int]) -> dict[str, Any]:
            manager = self._state.manager
            if controller_id is None:
                controller_id = data.draw(st.sampled_from((manager.node_id, *CONTROLLER_IDS, 1)), label="id")
            own = controller_id == manager.node_id and data.draw(st.booleans(), label="own incarnation")
            incarnation = manager.incarnation_id if own else data.draw(st.sampled_from(INCARNATIONS), label="inc")
            listeners = (to_json(manager.listeners) if own and data.draw(st.booleans(), label="own listeners")
                         else data.draw(listener_lists(), label="listeners"))
            return {"controller_id": controller_id, "incarnation_id": incarnation,
                    "zk_migration_ready": data.draw(st.booleans(), label="zk"), "listeners": listeners,
                    "features": to_json(data.draw(feature_ranges(), label="features"))}

        restarts = 0

        @precondition(lambda self: not self._state.manager.channel_started)
        @rule()
        def start(self) -> None:
            self._send("start")

        @rule()
        def maybe_send(self) -> None:
            self._send("maybe_send")

        @rule(mv=st.one_of(st.none(), st.sampled_from(kafka.metadata_versions), st.just(kafka.metadata_versions[-1])),
              registration_changed=st.booleans())
        def on_metadata_update(self, mv: Optional[int], registration_changed: bool) -> None:
            args: dict[str, Any] = {"registration_changed": registration_changed}
            if mv is not None:
                args["metadata_version"] = mv
            self._send("on_metadata_update", **args)

        unsolicited = 0

        @precondition(lambda self: self._state.manager.pending_rpcs == 0 and self.unsolicited < 1)
        @rule(error=st.one_of(st.just(Errors.NONE), registration_failures()))
        def unsolicited_response(self, error: Errors) -> None:
            """A response with no request pending (once per run): both sides refuse it."""
            self.unsolicited += 1
            self._send("on_response", error=error.name)

        @precondition(lambda self: self._state.manager.pending_rpcs > 0)
        @rule(error=st.one_of(st.just(Errors.NONE), registration_failures()), jitter=jitter_draws(),
              when=st.sampled_from(("clock", "later", "at deadline", "past deadline")), later=st.integers(0, 300))
        def on_response(self, error: Errors, jitter: float, when: str, later: int) -> None:
            deadline = self._state.manager.resend_deadline_ms
            now: Optional[int] = None  # "clock": the trace's clock
            if when == "later" or (when != "clock" and deadline is None):
                now = self._clock + later
            elif when == "at deadline":
                now = deadline
            elif when == "past deadline":
                now = deadline + later  # type: ignore[operator]
            args: dict[str, Any] = {"error": error.name, "jitter": jitter}
            if now is not None:
                args["now"] = now
            self._send("on_response", **args)

        @rule(when=st.sampled_from(("at deadline", "before deadline", "later")), later=st.integers(0, 200000))
        def on_deadline(self, when: str, later: int) -> None:
            deadline = self._state.manager.resend_deadline_ms
            if deadline is None or when == "later":
                now = self._clock + later
            else:
                now = deadline if when == "at deadline" else max(0, deadline - 1 - later % 50)
            self._send("on_deadline", now=now)

        @precondition(lambda self: self.restarts < 2)
        @rule(incarnation=st.sampled_from(INCARNATIONS))
        def restart(self, incarnation: str) -> None:
            self.restarts += 1
            self._send("restart", incarnation_id=incarnation)

        @precondition(lambda self: self._state.manager.pending_rpcs > 0)
        @rule(active=st.sampled_from((True, True, True, False)))
        def register_own(self, active: bool) -> None:
            """The active controller handles the running incarnation's own request (the happy path)."""
            manager = self._state.manager
            request = {"controller_id": manager.node_id, "incarnation_id": manager.incarnation_id,
                       "zk_migration_ready": False, "listeners": to_json(manager.listeners),
                       "features": to_json(manager.features)}
            self._send("register_controller", request=request, **({} if active else {"active": False}))

        @rule(data=st.data(), active=st.sampled_from((True, True, True, False)),
              authorized=st.sampled_from((True, True, True, False)))
        def register_controller(self, data: st.DataObject, active: bool, authorized: bool) -> None:
            args: dict[str, Any] = {"request": self._registration(data, None)}
            if not active:
                args["active"] = False
            if not authorized:
                args["authorized"] = False
            self._send("register_controller", **args)

        @rule(data=st.data())
        def replay_register_controller(self, data: st.DataObject) -> None:
            request = self._registration(data, None)
            record = {"controller_id": request["controller_id"], "incarnation_id": request["incarnation_id"],
                      "zk_migration_ready": request["zk_migration_ready"], "end_points": request["listeners"],
                      "features": request["features"]}
            self._send("replay_register_controller", record=record)

        @rule(request=st.one_of(describe_cluster_requests(), sendable_describe_cluster_requests(),
                                sendable_describe_cluster_requests()).map(expressible),
              receiver=st.sampled_from(("broker", "controller")),
              listener=st.one_of(st.none(), st.sampled_from(LISTENERS)), describe=st.booleans(),
              alter=st.booleans(), operations=st.one_of(st.just(0), st.integers(0, 2**16 - 1)))
        def describe_cluster(self, request: Any, receiver: str, listener: Optional[str], describe: bool,
                             alter: bool, operations: int) -> None:
            """Kafka picks the "random" broker; the step it answers states its pick as ``chooser``."""
            args: dict[str, Any] = {"request": to_json(request), "receiver": receiver,
                                    "authorization": {"describe_cluster": describe, "alter_cluster": alter,
                                                      "authorized_operations": operations}}
            if listener is not None:
                args["listener"] = listener
            self._send("describe_cluster", **args)

        @rule(request=describe_cluster_requests().map(expressible))
        def check_request_serializable(self, request: Any) -> None:
            self._send("check_request_serializable", request=to_json(request))

        @rule(later=st.integers(0, 500))
        def advance_clock(self, later: int) -> None:
            self._send("advance_clock", now=self._clock + later)

    return ControllerDifferentialMachine


# ---------------------------------------------------------------------------------------------------------------
# The behaviours that differ between Kafka versions (benchmarks/controller_versions.py prints them as a table)
# ---------------------------------------------------------------------------------------------------------------

_LISTENER = {"name": "CONTROLLER", "host": "controller1", "port": 9093, "security_protocol": 0}


def _initial(mv: int = 15) -> dict[str, Any]:
    return {"metadata_version": mv, "raft_leader_id": 1,
            "manager": {"node_id": 1, "incarnation_id": "inc1", "listeners": [_LISTENER]}}


VERSION_CASES: list[tuple[str, dict[str, Any], list[dict[str, Any]], Callable[[Any], str]]] = [
    ("RegisterControllerRecord's ZkMigrationReady for a request saying true", _initial(),
     [{"action": "register_controller", "request": {"controller_id": 1, "incarnation_id": "inc1",
                                                    "zk_migration_ready": True, "listeners": [_LISTENER]}}],
     lambda steps: f"zk_migration_ready {str(steps[-1].records[0][1].zk_migration_ready).lower()}"),
    ("a channel timeout, then the resend deadline", _initial(),
     [{"action": "start"}, {"action": "on_metadata_update", "metadata_version": 15},
      {"action": "on_response", "error": "REQUEST_TIMED_OUT", "now": 0}, {"action": "on_deadline", "now": 1000}],
     lambda steps: f"resends {len(steps[-1].response['sends'])}, pending {steps[-1].post['pending_rpcs']}"),
    ("DescribeCluster v2 (IncludeFencedBrokers)", _initial(),
     [{"action": "check_request_serializable", "request": {"version": 2}}],
     lambda steps: "serializable" if steps[-1].response["serializable"] else steps[-1].response["message"]),
    ("a controller's DescribeCluster denied ALTER", _initial(),
     [{"action": "describe_cluster", "request": {"version": 1, "endpoint_type": 2}, "receiver": "controller",
       "authorization": {"alter_cluster": False}}],
     lambda steps: steps[-1].response["error_message"]),
]
"""(name, explicit initial state without its behaviour, inputs, what Kafka's run shows): one case per row of the
version table, each passing under its own version's behaviour and failing under another's."""
