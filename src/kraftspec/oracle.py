"""The conformance oracle from Python: replay traces, check single steps, drive another implementation.

* :func:`replay` judges a whole trace (a :class:`~kraftspec.traces.format.envelope.Trace`, its JSON object or
  one JSON line); :func:`read` yields the traces of a JSON Lines or Parquet file, or why an item is
  unreadable; :func:`describe` is the report ``kraftspec check`` prints.
* :func:`start` and :func:`check_step` walk a trace one step at a time: each check gives the
  reference's post-state to continue from, or the field-level differences and the deciding rule.
* :class:`Adapter` is what another implementation provides to be compared with the reference input
  by input (differential testing); :class:`Differential` runs it, and :func:`broker_machine`,
  :func:`partition_machine`, :func:`controller_machine` and :func:`raft_machine` build a Hypothesis
  ``RuleBasedStateMachine`` that generates that component's inputs, so Hypothesis finds and shrinks
  a sequence on which the two disagree. Inputs and outputs are in the trace format's JSON
  vocabulary (``traces/FORMAT.md``), so an adapter needs nothing from the reference; a ``view``
  (``{"sends": ["VoteResponse"]}``) compares only the outputs an implementation covers. An implementation of part
  of a component starts each example from its own ``initial`` states (:func:`partition_machine`,
  :func:`controller_machine`), is given only the ``actions`` it implements, and raises :class:`Refused` for an
  input it refuses. ``examples/`` holds one worked example per component.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Optional, Protocol, Union

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule

from kraftspec.harness.adapter import KafkaRefused
from kraftspec.models.broker_strategies import BROKER_IDS, directory_of, registration_request
from kraftspec.reference.metadata_version import LATEST_PRODUCTION
from kraftspec.traces.replay import verdict as replay_module
from kraftspec.traces.replay.check import describe
from kraftspec.traces.format.envelope import FORMAT_VERSION, Step, Trace, check_in_view, components, step_from_json, \
    trace_from_json
from kraftspec.traces.format.jsonl import dumps, parse_line, read_jsonl
from kraftspec.traces.format.parquet import read_parquet
from kraftspec.traces.replay.verdict import REPLAYERS, FieldDiff, Verdict
from kraftspec.traces.format.values import TraceError, to_json

__all__ = ["Adapter", "CONTROLLER_ACTIONS", "Differential", "DivergenceError", "Position", "Refused", "StepCheck",
           "Trace", "TraceError", "Verdict", "assert_conformant", "broker_machine", "check_step", "controller_machine",
           "describe", "partition_machine", "raft_machine", "read", "replay", "start", "EMPTY_BROKER_CLUSTER"]

TraceLike = Union[Trace, Mapping[str, Any], str, bytes]
EMPTY_BROKER_CLUSTER: dict[str, Any] = {"explicit": {
    "cluster_id": "kraftspecDifferentialAA", "metadata_version": LATEST_PRODUCTION, "session_timeout": 10}}


def _trace(trace: TraceLike) -> Trace:
    if isinstance(trace, Trace):
        return trace
    if isinstance(trace, (str, bytes)):
        return parse_line(trace.encode() if isinstance(trace, str) else trace)
    return trace_from_json(dict(trace))


def replay(trace: TraceLike) -> Verdict:
    """The verdict of one trace: conformant, or the first divergent step (a :class:`TraceError` if unreadable)."""
    return replay_module.replay(_trace(trace))


def assert_conformant(trace: TraceLike) -> Verdict:
    """Replay ``trace``; an ``AssertionError`` carrying the divergence report if it is not conformant."""
    verdict = replay(trace)
    if verdict.divergence is not None:
        raise AssertionError(f"trace {verdict.trace_id or '(no id)'} {describe(verdict)}")
    return verdict


def read(path: Union[str, Path]) -> Iterator[tuple[str, Union[Trace, TraceError]]]:
    """(where, trace or error) for every item of a ``.jsonl``, ``.jsonl.gz`` or ``.parquet`` file.

    ``where`` is ``line N`` (1-based), ``row N`` (0-based), ``rows N-M`` (an unreadable row group) or
    ``""`` (a file that is not Parquet at all), as ``kraftspec check`` prints it.
    """
    if str(path).endswith(".parquet"):
        for row, count, item in read_parquet(path):
            yield ("" if row is None else f"row {row}" if count == 1 else f"rows {row}-{row + count - 1}"), item
    else:
        for line, item in read_jsonl(path):
            yield f"line {line}", item


@dataclass(frozen=True)
class Position:
    """Where a walk through a trace is: the component, the reference's state, the trace's clock and its view."""

    component: str
    state: Any
    clock: int = 0
    view: Optional[Mapping[str, frozenset[str]]] = None


def start(initial: Union[str, Mapping[str, Any]] = "broker/running-cluster", component: str = "broker",
          view: Optional[Mapping[str, Any]] = None) -> Position:
    """The position before the first step: a standard state's name, or a trace's ``initial`` object; ``view``: the
    outputs compared, as a trace states it (e.g. ``{"sends": ["VoteResponse"]}``), None for all."""
    given = {"standard": initial} if isinstance(initial, str) else dict(initial)
    trace = trace_from_json({"format": FORMAT_VERSION, "component": component, "initial": given, "steps": [],
                             **({} if view is None else {"view": dict(view)})})
    return Position(component, REPLAYERS[component].initial(trace), 0, trace.view)


@dataclass(frozen=True)
class StepCheck:
    """One step judged: ``after`` is the reference's position after it (None if the reference refused it)."""

    step: Step
    before: Position
    after: Optional[Position]
    diffs: tuple[FieldDiff, ...]

    @property
    def conformant(self) -> bool:
        return not self.diffs

    def verdict(self, index: int = 0, steps: int = 1, trace_id: Optional[str] = None) -> Verdict:
        """This check as a trace verdict (the step at ``index`` of ``steps``), with the rule and prior state."""
        if self.conformant:
            return Verdict(trace_id, steps, None)
        before = self.before
        return Verdict(trace_id, steps, replay_module.divergence(
            before.component, self.step, index, before.state, before.clock, list(self.diffs), before.view))


def check_step(position: Position, step: Union[Step, Mapping[str, Any]]) -> StepCheck:
    """Judge one step (a :class:`Step` or its JSON object) from ``position``; continue from ``.after``.

    A :class:`TraceError` for a step stating an output outside the position's view, or a field the reference's
    output does not have.
    """
    if not isinstance(step, Step):
        step = step_from_json(components()[position.component], dict(step))
    if position.view is not None:
        check_in_view(position.view, step, "step")
    after, clock, found = replay_module.check_step(position.component, position.state, position.clock, step,
                                                   position.view)
    return StepCheck(step, position, None if after is None else Position(position.component, after, clock,
                                                                         position.view), tuple(found))


class Adapter(Protocol):
    """Another implementation of a component, driven one input at a time (trace-format JSON both ways).

    ``reset`` starts it afresh from a trace's ``initial`` object (``{"standard": NAME}`` or
    ``{"explicit": {...}}``). ``step`` takes an input (``{"action": ..., ...arguments}``) and returns
    what the implementation did: any of ``response`` (the fields it exposes), ``records`` (every
    record written, with offsets) and ``post`` (post-state fields); what it leaves out is not compared. Where the
    implementation made a choice that the input leaves open (which stale broker it fenced, say), it may return
    ``input``: the input with that choice stated, which the reference then takes too.
    """

    def reset(self, initial: Mapping[str, Any]) -> None: ...

    def step(self, input: Mapping[str, Any]) -> Mapping[str, Any]: ...


class Refused(KafkaRefused):
    """Raised by an adapter's ``step`` for an input its implementation refuses (as Kafka's code throws).

    :func:`controller_machine` sends every input to both sides and fails unless both refuse the same inputs; the
    other machines send an input the reference refuses to neither side.
    """

    def __init__(self, reason: str) -> None:
        super().__init__("Refused", reason)


class DivergenceError(AssertionError):
    """The implementation and the reference disagree; the message is the report and the trace so far."""

    def __init__(self, message: str, trace: Trace) -> None:
        super().__init__(message)
        self.trace = trace


class Differential:
    """An adapter and the reference side by side: each input goes to both and the outputs are compared.

    The reference runs first; an input it refuses (e.g. a heartbeat from a broker it has no entry
    for) is not sent to the implementation. The steps taken so far form a trace that ``kraftspec
    check`` replays (:meth:`trace`, printed in every divergence report).
    """

    def __init__(self, adapter: Adapter, initial: Mapping[str, Any] = EMPTY_BROKER_CLUSTER,
                 component: str = "broker", view: Optional[Mapping[str, Any]] = None) -> None:
        self.adapter, self.initial, self.component = adapter, dict(initial), component
        self.position = start(self.initial, component, view)
        self.steps: list[Step] = []
        adapter.reset(self.initial)

    def trace(self, trace_id: str = "differential") -> Trace:
        """The inputs sent and the implementation's outputs, as a trace."""
        given = self.initial
        return Trace(self.component, tuple(self.steps), standard=given.get("standard"),
                     explicit=given.get("explicit"), id=trace_id, meta={"generator": "kraftspec.oracle.Differential"},
                     view=self.position.view)

    def step(self, input: Mapping[str, Any]) -> Optional[StepCheck]:
        """Send ``input`` to both; None if the reference refuses it; :class:`DivergenceError` if they disagree."""
        component = components()[self.component]
        bare = step_from_json(component, {"input": dict(input)})
        if replay_module.check_step(self.component, self.position.state, self.position.clock, bare,
                                    self.position.view)[0] is None:
            return None
        output = dict(self.adapter.step(dict(input)))
        obj: dict[str, Any] = {"input": dict(output.pop("input", input))}  # the adapter may state a choice it made
        if "response" in output or "records" in output:
            obj["output"] = {key: output[key] for key in ("response", "records") if key in output}
        if "post" in output:
            obj["post"] = output["post"]
        step = step_from_json(component, obj, f"steps[{len(self.steps)}]")
        checked = check_step(self.position, step)
        self.steps.append(step)
        if not checked.conformant:
            trace = self.trace()
            verdict = checked.verdict(len(self.steps) - 1, len(self.steps), trace.id)
            raise DivergenceError(f"the implementation {describe(verdict)}\n  the trace so far (kraftspec check "
                                  f"replays it):\n{dumps(trace)}", trace)
        assert checked.after is not None
        self.position = checked.after
        return checked


InitialStates = Union[Mapping[str, Any], st.SearchStrategy[Mapping[str, Any]], None]
"""A trace's ``initial`` object, a Hypothesis strategy of them, or None for the states a machine draws itself."""


def _starting_from(machine: type[RuleBasedStateMachine], initializer: str, initial: InitialStates,
                   begin: Callable[[Any, Mapping[str, Any]], None]) -> type[RuleBasedStateMachine]:
    """``machine`` with its ``initializer`` rule replaced by ``begin`` (which starts from a trace ``initial``
    object) on the states ``initial`` gives; ``machine`` itself if it is None."""
    if initial is None:
        return machine
    strategy = initial if isinstance(initial, st.SearchStrategy) else st.just(dict(initial))

    def starting(self: RuleBasedStateMachine, initial: Mapping[str, Any]) -> None:
        begin(self, initial)

    starting.__name__ = initializer
    return type(machine.__name__, (machine,), {initializer: initialize(initial=strategy)(starting)})


def partition_machine(adapter: Callable[[], Adapter], initial: InitialStates = None,
                      **options: Any) -> type[RuleBasedStateMachine]:
    """:func:`kraftspec.differential_partition.partition_machine`: the partition component's differential machine.

    ``initial``: every example starts from it (a trace ``initial`` object, or a strategy drawing them) instead of
    the explicit states the machine draws, so that an implementation covering part of the component (ELR off, one
    metadata.version, say) starts where it applies (``examples/differential_partition``).
    """
    from kraftspec.differential_partition import partition_machine as build

    def begin(machine: Any, initial: Mapping[str, Any]) -> None:
        machine.differential = Differential(adapter(), initial, "partition")

    return _starting_from(build(adapter, **options), "start", initial, begin)


CONTROLLER_RULES: dict[str, str] = {
    "start": "start", "maybe_send": "maybe_send", "on_metadata_update": "on_metadata_update",
    "unsolicited_response": "on_response", "on_response": "on_response", "on_deadline": "on_deadline",
    "restart": "restart", "register_own": "register_controller", "register_controller": "register_controller",
    "replay_register_controller": "replay_register_controller", "describe_cluster": "describe_cluster",
    "check_request_serializable": "check_request_serializable", "advance_clock": "advance_clock"}
"""The controller machine's rules and the action each sends."""
CONTROLLER_ACTIONS: tuple[str, ...] = tuple(dict.fromkeys(CONTROLLER_RULES.values()))
"""Every controller action :func:`controller_machine` generates."""


def controller_machine(adapter: Callable[[], Adapter], initial: InitialStates = None,
                       actions: tuple[str, ...] = CONTROLLER_ACTIONS, **options: Any) -> type[RuleBasedStateMachine]:
    """:func:`kraftspec.differential_controller.controller_machine`: the controller component's differential machine.

    ``initial`` as for :func:`partition_machine`; ``actions``: the inputs generated (:data:`CONTROLLER_ACTIONS`
    names them), e.g. the active controller's alone, without the registration manager's
    (``examples/differential_controller``). Every input goes to both sides: the adapter raises :class:`Refused` for
    the inputs the reference refuses (a DescribeCluster request its version cannot carry, a response with no request
    pending), and a disagreement fails with ``kraftspec.differential_controller.ControllerDivergence``.
    """
    from kraftspec.differential_controller import controller_machine as build

    unknown = set(actions) - set(CONTROLLER_ACTIONS)
    if unknown:
        raise ValueError(f"unknown controller action(s) {sorted(unknown)} (known: {', '.join(CONTROLLER_ACTIONS)})")
    machine = build(adapter, **options)
    machine = _starting_from(machine, "init", initial, getattr(machine, "init"))
    # Hypothesis collects a machine's rules from its attributes: a rule overridden by None is no rule
    left_out = {name: None for name, action in CONTROLLER_RULES.items() if action not in actions}
    return type(machine.__name__, (machine,), left_out) if left_out else machine


def raft_machine(adapter: Callable[[], Adapter], **options: Any) -> type[RuleBasedStateMachine]:
    """:func:`kraftspec.differential_raft.raft_machine`: one quorum node's differential machine (views allowed)."""
    from kraftspec.differential_raft import raft_machine as build

    return build(adapter, **options)


ALL_BROKER_ACTIONS: tuple[str, ...] = (
    "register_broker", "heartbeat", "heartbeat_timed_out", "advance_clock", "fence_stale_broker", "unregister_broker",
    "create_topic", "log_advanced", "failover", "deactivate", "activate", "update_features")
"""Every broker action :func:`broker_machine` has a rule for (its default ``actions`` are the first five of them)."""


def broker_machine(adapter: Callable[[], Adapter], initial: Mapping[str, Any] = EMPTY_BROKER_CLUSTER,
                   actions: tuple[str, ...] = ("register_broker", "heartbeat", "advance_clock", "fence_stale_broker",
                                               "unregister_broker"),
                   variety: bool = False) -> type[RuleBasedStateMachine]:
    """A Hypothesis state machine that drives ``adapter()`` and the reference with the same broker inputs.

    Rules: ``register_broker`` (incarnations 1–3, sometimes the wrong cluster id or the previous
    epoch), ``heartbeat`` (the current epoch or a stale one, a metadata offset near the log end, the
    fence and shut-down wishes), ``advance_clock``, ``fence_stale_broker`` and ``unregister_broker``,
    ``heartbeat_timed_out``, ``create_topic`` (topics foo, bar, foo.bar, foo_bar and two names Kafka refuses;
    manual assignments of brokers 1–4, mostly well-formed; the unclean-election and min.insync.replicas
    configs), ``log_advanced``, ``failover``, ``deactivate``, ``activate`` and ``update_features`` (one or two
    features at levels about their finalized ones, every upgrade type, validate-only), each only if named in ``actions``
    (:data:`ALL_BROKER_ACTIONS` names them all). ``variety`` adds rules that reach the error paths: registrations
    with every malformed directory list and feature range, at request versions 0–4, as a ZooKeeper broker,
    unauthorized; heartbeats reporting offline or cordoned log directories, or unauthorized; unauthorized
    unregistrations.
    Run it as ``TestX = broker_machine(MyAdapter).TestCase``; a disagreement fails with :class:`DivergenceError`
    and Hypothesis prints the shrunk sequence.
    """
    enabled = set(actions)
    unknown = enabled - set(REPLAYERS["broker"].ACTIONS)
    if unknown:
        raise ValueError(f"unknown broker action(s) {sorted(unknown)} (known: {', '.join(REPLAYERS['broker'].ACTIONS)})")
    leadership = [kind for kind in ("failover", "activate", "deactivate") if kind in enabled]

    class BrokerDifferential(RuleBasedStateMachine):
        """The reference and an implementation given the same broker inputs (see :func:`broker_machine`)."""

        def __init__(self) -> None:
            super().__init__()
            self.differential = Differential(adapter(), initial, "broker")

        @property
        def _state(self) -> Any:
            return self.differential.position.state

        def _send(self, action: str, **args: Any) -> None:
            self.differential.step({"action": action, **args})

        @precondition(lambda self: "register_broker" in enabled)
        @rule(broker_id=st.sampled_from(BROKER_IDS), incarnation=st.integers(1, 3),
              wrong_cluster=st.booleans(), clean=st.booleans())
        def register_broker(self, broker_id: int, incarnation: int, wrong_cluster: bool, clean: bool) -> None:
            existing = self._state.brokers.get(broker_id)
            previous = existing.epoch if clean and existing is not None else -1
            request = to_json(registration_request(broker_id, incarnation, previous, self._state.metadata_version))
            request["cluster_id"] = "someOtherClusterIdAAAA" if wrong_cluster else self._state.cluster_id
            _support_finalized_features(request, self._state)
            self._send("register_broker", request=request)

        @precondition(lambda self: "heartbeat" in enabled)
        @rule(broker_id=st.sampled_from(BROKER_IDS), stale=st.booleans(), behind=st.integers(-1, 3),
              want_fence=st.booleans(), want_shut_down=st.booleans())
        def heartbeat(self, broker_id: int, stale: bool, behind: int, want_fence: bool, want_shut_down: bool) -> None:
            existing = self._state.brokers.get(broker_id)
            epoch = -1 if existing is None else existing.epoch - 1 if stale else existing.epoch
            self._send("heartbeat", request={
                "broker_id": broker_id, "broker_epoch": epoch,
                "current_metadata_offset": max(-1, self._state.next_offset - 1 - behind),
                "want_fence": want_fence, "want_shut_down": want_shut_down})

        @precondition(lambda self: "advance_clock" in enabled)
        @rule(ticks=st.integers(1, 12))
        def advance_clock(self, ticks: int) -> None:
            self._send("advance_clock", now=self.differential.position.clock + ticks)

        @precondition(lambda self: "fence_stale_broker" in enabled)
        @rule()
        def fence_stale_broker(self) -> None:
            self._send("fence_stale_broker")

        @precondition(lambda self: "unregister_broker" in enabled)
        @rule(broker_id=st.sampled_from(BROKER_IDS))
        def unregister_broker(self, broker_id: int) -> None:
            self._send("unregister_broker", broker_id=broker_id)

        # the rules below exist only where enabled: a rule that is never enabled would still change how Hypothesis
        # draws and shrinks the machines that leave it out
        if "heartbeat_timed_out" in enabled:
            @rule(broker_id=st.sampled_from(BROKER_IDS), stale=st.booleans(), behind=st.integers(-1, 3))
            def heartbeat_timed_out(self, broker_id: int, stale: bool, behind: int) -> None:
                existing = self._state.brokers.get(broker_id)
                epoch = -1 if existing is None else existing.epoch - 1 if stale else existing.epoch
                self._send("heartbeat_timed_out", request={
                    "broker_id": broker_id, "broker_epoch": epoch,
                    "current_metadata_offset": max(-1, self._state.next_offset - 1 - behind),
                    "want_fence": False, "want_shut_down": False})

        if "create_topic" in enabled:
            @rule(name=st.sampled_from(_TOPIC_NAMES), assignments=_assignments(), unclean=st.booleans(),
                  min_isr=st.sampled_from((1, 1, 2, 3)))
            def create_topic(self, name: str, assignments: list[list[int]], unclean: bool, min_isr: int) -> None:
                self._send("create_topic", topic={"name": name, "topic_id": _topic_id(name),
                                                  "unclean_leader_election_enable": unclean,
                                                  "min_insync_replicas": min_isr},
                           assignments=assignments)

        if "log_advanced" in enabled:
            @rule(by=st.integers(1, 3))
            def log_advanced(self, by: int) -> None:
                self._send("log_advanced", next_offset=self._state.next_offset + by)

        if "update_features" in enabled:
            @rule(updates=st.lists(st.tuples(st.sampled_from(_FEATURE_NAMES), st.integers(-1, 1),
                                             st.sampled_from((1, 1, 1, 2, 2, 3, 0))), min_size=1, max_size=2),
                  validate_only=st.booleans(), authorized=st.sampled_from((True, True, True, False)))
            def update_features(self, updates: list[tuple[str, int, int]], validate_only: bool, authorized: bool) -> None:
                levels = self._state.finalized_features
                self._send("update_features", request={"updates": [
                    {"feature": name, "max_version_level": max(-1, levels.get(name, 0) + change), "upgrade_type": kind}
                    for name, change, kind in updates], "validate_only": validate_only},
                    **({} if authorized else {"authorized": False}))

        if leadership:
            @rule(kind=st.sampled_from(("failover", "failover", "failover", "activate", "activate", "deactivate")))
            def leadership_change(self, kind: str) -> None:
                self._send(kind if kind in leadership else leadership[0])

        if variety and "register_broker" in enabled:
            @rule(broker_id=st.sampled_from(BROKER_IDS), incarnation=st.integers(1, 3),
                  variant=st.sampled_from(_REGISTRATION_VARIANTS), version=st.sampled_from((0, 1, 2, 3, 4, 4, 4)),
                  authorized=st.sampled_from((True, True, True, False)))
            def register_broker_variant(self, broker_id: int, incarnation: int, variant: str, version: int,
                                        authorized: bool) -> None:
                request = to_json(registration_request(broker_id, incarnation, -1, self._state.metadata_version))
                request.update(cluster_id=self._state.cluster_id, version=version)
                _support_finalized_features(request, self._state)
                _vary_registration(request, variant, self._state)
                self._send("register_broker", request=request, **({} if authorized else {"authorized": False}))

        if variety and "heartbeat" in enabled:
            @rule(broker_id=st.sampled_from(BROKER_IDS), behind=st.integers(-1, 3), want_fence=st.booleans(),
                  want_shut_down=st.booleans(), offline=st.sampled_from(("own", "other", "both", "none", "none")),
                  cordoned=st.sampled_from(("own", "other", "both", "none", None, None)),
                  authorized=st.sampled_from((True, True, False)))
            def heartbeat_variant(self, broker_id: int, behind: int, want_fence: bool, want_shut_down: bool,
                                  offline: str, cordoned: Optional[str], authorized: bool) -> None:
                existing = self._state.brokers.get(broker_id)
                own = [directory_of(broker_id)] if existing is None else list(existing.log_dirs)
                dirs = {"own": own, "other": [directory_of(broker_id % 3 + 1)],
                        "both": own + [directory_of(broker_id + 10)], "none": []}
                request = {"broker_id": broker_id, "broker_epoch": -1 if existing is None else existing.epoch,
                           "current_metadata_offset": max(-1, self._state.next_offset - 1 - behind),
                           "want_fence": want_fence, "want_shut_down": want_shut_down,
                           "offline_log_dirs": dirs[offline]}
                if cordoned is not None:
                    request["cordoned_log_dirs"] = dirs[cordoned]
                self._send("heartbeat", request=request, **({} if authorized else {"authorized": False}))

        if variety and "unregister_broker" in enabled:
            @rule(broker_id=st.sampled_from(BROKER_IDS), authorized=st.sampled_from((True, False)))
            def unregister_broker_variant(self, broker_id: int, authorized: bool) -> None:
                self._send("unregister_broker", broker_id=broker_id, **({} if authorized else {"authorized": False}))

    return BrokerDifferential


_FEATURE_NAMES = ("metadata.version", "metadata.version", "eligible.leader.replicas.version", "group.version",
                  "transaction.version", "kraft.version")
_TOPIC_NAMES = ("foo", "foo", "bar", "bar", "foo.bar", "foo_bar", "bad name!", "__cluster_metadata")
_REGISTRATION_VARIANTS = ("plain", "no_dirs", "reserved_dir", "duplicate_dir", "other_broker_dir", "two_dirs",
                          "no_metadata_version", "metadata_version_too_new", "metadata_version_too_old",
                          "unknown_feature", "unsupported_feature", "elr_feature", "migrating_zk", "rack",
                          "listeners", "wrong_cluster")


def _topic_id(name: str) -> str:
    """A topic id derived from the name (an implementation that draws its own states it instead)."""
    return base64.urlsafe_b64encode(hashlib.sha256(name.encode()).digest()[:16]).decode().rstrip("=")


@st.composite
def _assignments(draw: st.DrawFn) -> list[list[int]]:
    """Manual replica assignments: mostly one replication factor and distinct registered-looking brokers."""
    if draw(st.integers(0, 5)) == 0:  # anything: empty lists, repeats, broker 4, mixed replication factors
        return draw(st.lists(st.lists(st.sampled_from(BROKER_IDS + (4,)), max_size=3), min_size=1, max_size=3))
    factor = draw(st.integers(1, len(BROKER_IDS)))
    return draw(st.lists(st.permutations(BROKER_IDS).map(lambda p: list(p[:factor])), min_size=1, max_size=3))


def _support_finalized_features(request: dict[str, Any], state: Any) -> None:
    """A registration supporting every finalized feature besides metadata.version too (from level 0 up to it)."""
    listed = {feature["name"] for feature in request["features"]}
    for name, level in sorted(state.finalized_features.items()):
        if name not in listed and level:
            request["features"].append({"name": name, "min_supported": 0, "max_supported": level})


def _vary_registration(request: dict[str, Any], variant: str, state: Any) -> None:
    """``request`` (a well-formed registration's JSON) changed the way ``variant`` names."""
    broker_id, level = request["broker_id"], state.metadata_version
    if variant == "no_dirs":
        request["log_dirs"] = []
    elif variant == "reserved_dir":
        request["log_dirs"] = ["AAAAAAAAAAAAAAAAAAAAAQ"]  # DirectoryId.LOST
    elif variant == "duplicate_dir":
        request["log_dirs"] = [directory_of(broker_id)] * 2
    elif variant == "other_broker_dir":
        request["log_dirs"] = [directory_of(broker_id % 3 + 1)]
    elif variant == "two_dirs":
        request["log_dirs"] = [directory_of(broker_id + 10), directory_of(broker_id)]
    elif variant == "no_metadata_version":
        request["features"] = []
    elif variant == "metadata_version_too_new":
        request["features"] = [{"name": "metadata.version", "min_supported": level + 1, "max_supported": level + 2}]
    elif variant == "metadata_version_too_old":
        request["features"] = [{"name": "metadata.version", "min_supported": 1, "max_supported": level - 1}]
    elif variant == "unknown_feature":
        request["features"] = request["features"] + [{"name": "kraftspec.version", "min_supported": 0,
                                                      "max_supported": 1}]
    elif variant == "unsupported_feature":
        request["features"] = request["features"] + [{"name": "kraftspec.version", "min_supported": 1,
                                                      "max_supported": 1}]
    elif variant == "elr_feature":
        request["features"] = request["features"] + [{"name": "eligible.leader.replicas.version", "min_supported": 0,
                                                      "max_supported": 1}]
    elif variant == "migrating_zk":
        request["is_migrating_zk_broker"] = True
    elif variant == "rack":
        request["rack"] = f"rack-{broker_id % 2}"
    elif variant == "listeners":
        request["listeners"] = [{"name": "PLAINTEXT", "host": f"broker{broker_id}", "port": 9092, "security_protocol": 0}]
    elif variant == "wrong_cluster":
        request["cluster_id"] = "someOtherClusterIdAAAA"

