"""A Hypothesis differential state machine for the partition component (rules §2, traces/FORMAT.md).

:func:`partition_machine` drives an implementation (an :class:`kraftspec.oracle.Adapter`, e.g.
``kraftspec.harness.adapter.KafkaAdapter("partition")``) and the reference side by side with the controller's
partition inputs (AlterPartition, ElectLeaders, the periodic preferred and unclean elections,
AlterPartitionReassignments and what broker events (fenced, unfenced, controlled shutdown, unregistered, a new
incarnation) do to partitions) and the partition leader's on the broker (becoming leader, new metadata, appends,
follower fetches, ISR checks, the controller's answers to its AlterPartition requests, the clock). The initial
state is drawn from the public strategies of
:mod:`kraftspec.models.partition_strategies` (metadata.version, broker views, partition registrations) with one or
two topics of one to three partitions, per-topic ``min.insync.replicas`` and ``unclean.leader.election.enable``,
and log directories on some brokers. A disagreement raises :class:`kraftspec.oracle.DivergenceError`; Hypothesis
shrinks the sequence and the report prints it as a trace that ``kraftspec conform`` and ``kraftspec check`` replay.

:func:`run_differential` runs it with a printed seed (derandomized, reproducible) and counts the steps.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Optional

from hypothesis import HealthCheck, Phase, seed, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule, run_state_machine_as_test

from kraftspec.models.determinism import without_local_constants
from kraftspec.models.partition_strategies import (
    MAX_BROKERS,
    alter_partition_requests,
    broker_views,
    metadata_versions,
    partition_registrations,
)
from kraftspec.oracle import Adapter, Differential
from kraftspec.reference import metadata_version as mv
from kraftspec.reference.broker_registration import BrokerRegistration
from kraftspec.reference.partition_rules import KAFKA_4_0, KAFKA_4_1, KAFKA_4_3, LOST_DIR, MIGRATING_DIR, UNASSIGNED_DIR
from kraftspec.traces.format.values import to_json

CONTROLLER_ACTIONS = ("alter_partition", "elect_leaders", "maybe_balance_partition_leaders",
                      "maybe_elect_unclean_leaders", "alter_partition_reassignment", "handle_broker_fenced",
                      "handle_broker_unfenced", "handle_broker_in_controlled_shutdown", "handle_broker_unregistered",
                      "handle_broker_shutdown")
"""The controller's partition inputs."""
LEADER_ACTIONS = ("become_leader", "update_leader_metadata", "update_broker_metadata", "stop_leading", "append",
                  "follower_fetch", "maybe_shrink_isr", "handle_alter_partition_result", "advance_clock")
"""The partition leader's inputs on the broker (and the trace's clock). ``handle_alter_partition_result`` is drawn
as the controller's answer to a request the broker has in flight: ``alter_partition`` with it, then the answer
(or, sometimes, an error the network or a failed-over controller gives)."""
ACTIONS = CONTROLLER_ACTIONS + LEADER_ACTIONS
"""Every input the machine generates."""
LEADER_FOCUS = LEADER_ACTIONS + ("alter_partition", "handle_broker_fenced", "handle_broker_unfenced",
                                 "handle_broker_in_controlled_shutdown", "handle_broker_shutdown")
"""The leader's inputs with the broker events and AlterPartitions that change what it learns (a run that spends
its steps on the broker side)."""



@dataclass(frozen=True)
class Profile:
    """What a Kafka version's partition component takes: the reference's behaviour for it
    (``partition_rules.PARTITION_BEHAVIOURS``), its latest metadata.version, whether the harness drives the broker's
    leader side on it (4.2 and later) and whether its reassignment request carries KIP-860's
    AllowReplicationFactorChange (4.1 and later)."""

    behaviour: str
    max_metadata_version: int
    leader_side: bool
    replication_factor_flag: bool


PROFILES = {
    "4.0": Profile(KAFKA_4_0.name, 25, False, False),
    "4.1": Profile(KAFKA_4_1.name, 27, False, True),
    "4.2": Profile(KAFKA_4_1.name, 29, True, True),
    "4.3": Profile(KAFKA_4_3.name, 30, True, True),
    "4.4": Profile(KAFKA_4_3.name, 33, True, True),
}
"""By Kafka minor version (``MetadataVersion.LATEST_PRODUCTION`` of each)."""


def profile(kafka_version: str) -> Profile:
    """The profile of a Kafka version such as ``4.3.1``."""
    minor = ".".join(kafka_version.split(".")[:2])
    if minor not in PROFILES:
        raise KeyError(f"no partition profile for Kafka {kafka_version} (known: {', '.join(PROFILES)})")
    return PROFILES[minor]


BROKER_IDS = tuple(range(MAX_BROKERS + 1))
"""Broker ids the inputs name: the strategies' 0..MAX_BROKERS-1 and one never registered."""


def directory_id(broker_id: int, index: int) -> str:
    """A log directory of broker ``broker_id`` (distinct per broker, as Kafka requires): a Uuid in base64."""
    return f"DIR{broker_id}{index}AAAAAAAAAAAAAAAAw"[:21] + "w"


@st.composite
def initial_states(draw: st.DrawFn, kafka: Profile = PROFILES["4.3"]) -> dict[str, Any]:
    """An explicit initial state of the partition component (FORMAT.md) from the public strategies, for the Kafka
    version ``kafka``: its behaviour, a metadata.version it knows, leaders that have become leader already only
    where it has the leader side."""
    level = draw(metadata_versions.filter(lambda v: v <= kafka.max_metadata_version))
    elr = level >= mv.MV_4_0_IV1 and draw(st.booleans())
    directories = level >= mv.MV_3_7_IV2 and draw(st.booleans())
    brokers = []
    view = dict(draw(broker_views()))
    for broker_id in range(MAX_BROKERS):  # the view's four states are uniform; elections need active brokers more
        if broker_id not in view and draw(st.booleans()):
            view[broker_id] = BrokerRegistration(broker_id=broker_id, epoch=100 + broker_id,
                                                 incarnation_id=f"incarnation-{broker_id}", fenced=False)
    for broker_id, registration in sorted(view.items()):
        obj = to_json(registration)
        if draw(st.booleans()):
            obj["fenced"] = obj["in_controlled_shutdown"] = False
        if directories:
            dirs = [directory_id(broker_id, i) for i in range(2) if draw(st.booleans())]
            obj["log_dirs"] = sorted(dirs)
        brokers.append(obj)
    topics, partitions = [], []
    for t in range(draw(st.integers(1, 2))):
        topic_id = ("TOPIC0AAAAAAAAAAAAAAAw", "topic-1")[t]  # a Kafka Uuid, and a name the harness maps
        topics.append({"name": f"t{t}", "topic_id": topic_id,
                       "unclean_leader_election_enable": draw(st.sampled_from((False, False, True))),
                       "min_insync_replicas": draw(st.sampled_from((1, 2, 2, 3) if elr else (1, 2, 3)))})
        for p in range(draw(st.integers(1, 3))):
            registration = draw(partition_registrations(max_replicas=4, elr=elr))
            obj = {"partition_id": p, "topic_id": topic_id, "replicas": list(registration.replicas),
                   "isr": list(registration.isr), "leader": registration.leader,
                   "leader_epoch": registration.leader_epoch, "partition_epoch": registration.partition_epoch,
                   "leader_recovery_state": registration.leader_recovery_state}
            if elr:
                obj["eligible_leader_replicas"] = list(registration.elr)
                obj["last_known_elr"] = list(registration.last_known_elr)
            if directories and draw(st.booleans()):
                obj["directories"] = [draw(st.sampled_from((MIGRATING_DIR, UNASSIGNED_DIR, LOST_DIR,
                                                            directory_id(r, 0), directory_id(r, 1))))
                                      for r in registration.replicas]
            partitions.append(obj)
    registered = {b["broker_id"] for b in brokers}
    became = []
    for p in partitions:  # some leaders have become leader already (the explicit state's ``leaders``)
        if kafka.leader_side and p["leader"] in registered and draw(st.booleans()):
            log_end = draw(st.integers(0, 4))
            became.append({"broker_id": p["leader"], "topic_id": p["topic_id"], "partition_id": p["partition_id"],
                            "log_end_offset": log_end, "high_watermark": draw(st.integers(0, log_end)),
                            "min_insync_replicas": draw(st.sampled_from((1, 2))),
                            "replica_lag_time_max_ms": draw(st.sampled_from((30000, 1000, -1)))})
    return {"metadata_version": level, "elr_enabled": elr, "brokers": brokers, "topics": topics,
            "partitions": partitions, "leaders": became, "next_offset": draw(st.integers(0, 5)),
            "behaviour": kafka.behaviour}


class StepCounter:
    """Steps sent to both sides (the reference refusing an input is not a step)."""

    def __init__(self) -> None:
        self.steps = 0
        self.refused = 0


def partition_machine(adapter: Callable[[], Adapter], actions: tuple[str, ...] = ACTIONS,
                      counter: Optional[StepCounter] = None,
                      kafka: Profile = PROFILES["4.3"]) -> type[RuleBasedStateMachine]:
    """A Hypothesis state machine that gives ``adapter()`` and the reference the same partition inputs.

    Each example draws an explicit initial state (:func:`initial_states` for the Kafka version's profile
    ``kafka``), then rules among ``actions`` (the leader's only where ``kafka`` has the leader side). Run it as
    ``TestX = partition_machine(lambda: KafkaAdapter("partition")).TestCase`` or with :func:`run_differential`.
    """
    enabled = set(actions) if kafka.leader_side else set(actions) & set(CONTROLLER_ACTIONS)
    unknown = set(actions) - set(ACTIONS)
    if unknown:
        raise ValueError(f"unknown partition action(s) {sorted(unknown)} (known: {', '.join(ACTIONS)})")

    class PartitionDifferential(RuleBasedStateMachine):
        """The reference and an implementation given the same partition inputs (see :func:`partition_machine`)."""

        differential: Optional[Differential] = None
        incarnations = 0

        @initialize(initial=initial_states(kafka))
        def start(self, initial: dict[str, Any]) -> None:
            self.differential = Differential(adapter(), {"explicit": initial}, "partition")

        @property
        def _state(self) -> Any:
            assert self.differential is not None
            return self.differential.position.state

        def _send(self, action: str, **args: Any) -> None:
            assert self.differential is not None
            checked = self.differential.step({"action": action, **args})
            if counter is not None:
                if checked is None:
                    counter.refused += 1
                else:
                    counter.steps += 1

        def _keys(self) -> list[tuple[str, int]]:
            return sorted(self._state.partitions)

        def _broker(self, data: st.DataObject) -> int:
            """A broker id: mostly a registered one, sometimes any (an unregistered one is refused by both)."""
            registered = sorted(self._state.brokers)
            if registered and data.draw(st.integers(0, 5), label="any broker"):
                return data.draw(st.sampled_from(registered), label="broker")
            return data.draw(st.sampled_from(BROKER_IDS), label="broker")

        # -------------------------------------------------------------- AlterPartition

        @precondition(lambda self: "alter_partition" in enabled)
        @rule(data=st.data())
        def alter_partition(self, data: st.DataObject) -> None:
            state = self._state
            keys = self._keys()
            shape = data.draw(st.sampled_from(("valid",) * 8 + ("one",) * 6 +
                                              ("two", "unknown-topic", "unknown-partition", "empty")), label="shape")
            if shape == "empty":
                broker_id = data.draw(st.sampled_from(BROKER_IDS), label="broker")
                epoch = state.brokers[broker_id].epoch if broker_id in state.brokers else 7
                self._send("alter_partition", request={"broker_id": broker_id, "broker_epoch": epoch, "topics": []})
                return
            led = [k for k in keys if state.partitions[k].leader in state.brokers]
            if shape == "valid" and led:
                self._valid_alter_partition(data, data.draw(st.sampled_from(led), label="led partition"))
                return
            key = data.draw(st.sampled_from(keys), label="partition")
            partition = state.partitions[key]
            request = data.draw(alter_partition_requests(key[0], partition), label="base request")
            p = request.topics[0].partitions[0]
            requester = request.broker_id
            known = [b for b in (partition.leader, *partition.replicas) if b in state.brokers]
            if requester not in state.brokers and known and data.draw(st.integers(0, 3), label="stranger"):
                requester = known[0]  # mostly the leader, or a replica, when the strategy drew an unregistered broker
            registered = state.brokers.get(requester)
            epoch_choice = data.draw(st.sampled_from(("registered",) * 6 + ("strategy", "stale")), label="epoch")
            broker_epoch = (registered.epoch if registered is not None and epoch_choice == "registered"
                            else registered.epoch - 1 if registered is not None and epoch_choice == "stale"
                            else request.broker_epoch)
            members = []
            for member, member_epoch in p.new_isr_with_epochs:
                choice = data.draw(st.sampled_from(("registered",) * 4 + ("strategy", "unknown")), label="member epoch")
                current = state.brokers.get(member)
                if choice == "registered" and current is not None:
                    member_epoch = current.epoch
                elif choice == "unknown":
                    member_epoch = -1
                members.append([member, member_epoch])
            if data.draw(st.integers(0, 15), label="odd isr") == 0:
                members.append(data.draw(st.sampled_from([[m, e] for m, e in members] + [[MAX_BROKERS, -1]]),
                                         label="extra member"))
            recovery = data.draw(st.sampled_from((p.leader_recovery_state,) * 12 + (2,)), label="recovery")
            partition_data = {"partition_index": key[1], "leader_epoch": p.leader_epoch, "partition_epoch": p.partition_epoch,
                              "new_isr_with_epochs": members, "leader_recovery_state": recovery}
            topics = [{"topic_id": key[0], "partitions": [partition_data]}]
            if shape == "two":
                other = data.draw(st.sampled_from(keys), label="second partition")
                o = state.partitions[other]
                second = {"partition_index": other[1], "leader_epoch": o.leader_epoch, "partition_epoch": o.partition_epoch,
                          "new_isr_with_epochs": [[r, state.brokers[r].epoch if r in state.brokers else -1]
                                                  for r in o.isr if data.draw(st.booleans(), label="keep")] or
                          [[o.leader, -1]], "leader_recovery_state": 0}
                if other[0] == key[0]:
                    topics[0]["partitions"].append(second)
                else:
                    topics.append({"topic_id": other[0], "partitions": [second]})
            elif shape == "unknown-topic":
                topics[0]["topic_id"] = data.draw(st.sampled_from(("AAAAAAAAAAAAAAAAAAAAAA", "no-such-topic")),
                                                  label="unknown topic")
            elif shape == "unknown-partition":
                partition_data["partition_index"] = 7
            self._send("alter_partition", request={"broker_id": requester, "broker_epoch": broker_epoch,
                                                   "topics": topics, "version": request.version})

        def _valid_alter_partition(self, data: st.DataObject, key: tuple[str, int]) -> None:
            """The leader's proposal at the current epochs: itself plus some replicas, mostly eligible ones."""
            state = self._state
            partition = state.partitions[key]
            leader = partition.leader
            registered = state.brokers.get(leader)
            others = data.draw(st.permutations([r for r in partition.replicas if r != leader]), label="order")
            members = [[leader, registered.epoch if registered is not None else -1]]
            for r in others:
                if data.draw(st.booleans(), label="member"):
                    current = state.brokers.get(r)
                    choice = data.draw(st.sampled_from(("registered",) * 4 + ("unknown", "previous", "previous")), label="e")
                    epoch = (-1 if current is None or choice == "unknown"
                             else current.epoch - 1 if choice == "previous" else current.epoch)
                    members.append([r, epoch])
            recovery = 0 if len(members) > 1 else data.draw(st.sampled_from((0, partition.leader_recovery_state)),
                                                                label="recovery")
            self._send("alter_partition", request={
                "broker_id": leader, "broker_epoch": registered.epoch if registered is not None else -1,
                "topics": [{"topic_id": key[0], "partitions": [{
                    "partition_index": key[1],
                    "leader_epoch": partition.leader_epoch - data.draw(st.sampled_from((0,) * 8 + (1,)), label="le"),
                    "partition_epoch": partition.partition_epoch - data.draw(st.sampled_from((0,) * 6 + (1,)), label="pe"),
                    "new_isr_with_epochs": members,
                    "leader_recovery_state": recovery}]}],
                "version": data.draw(st.sampled_from((3, 3, 3, 2)), label="version")})

        # -------------------------------------------------------------- elections

        @precondition(lambda self: "elect_leaders" in enabled)
        @rule(data=st.data())
        def elect_leaders(self, data: st.DataObject) -> None:
            election_type = data.draw(st.sampled_from((0, 1) * 6 + (2,)), label="election type")
            if data.draw(st.booleans(), label="all partitions"):
                wanted = None
            else:
                names = [t.name for _, t in sorted(self._state.topics.items())] + ["nope"]
                wanted = [[name, data.draw(st.lists(st.integers(0, 3), min_size=0, max_size=3, unique=True),
                                           label="partitions")]
                          for name in data.draw(st.lists(st.sampled_from(names), min_size=0, max_size=2, unique=True),
                                                label="topics")]
            self._send("elect_leaders", request={"election_type": election_type, "topic_partitions": wanted})

        @precondition(lambda self: "maybe_balance_partition_leaders" in enabled)
        @rule()
        def maybe_balance_partition_leaders(self) -> None:
            self._send("maybe_balance_partition_leaders")

        @precondition(lambda self: "maybe_elect_unclean_leaders" in enabled)
        @rule()
        def maybe_elect_unclean_leaders(self) -> None:
            self._send("maybe_elect_unclean_leaders")

        # -------------------------------------------------------------- reassignment

        @precondition(lambda self: "alter_partition_reassignment" in enabled)
        @rule(data=st.data())
        def alter_partition_reassignment(self, data: st.DataObject) -> None:
            state = self._state
            if data.draw(st.integers(0, 9), label="unknown partition") == 0:
                name, partition_id = data.draw(st.sampled_from([("nope", 0)] + [
                    (t.name, 5) for _, t in sorted(state.topics.items())]), label="unknown")
            else:
                topic_id, partition_id = data.draw(st.sampled_from(self._keys()), label="partition")
                name = state.topics[topic_id].name
            if data.draw(st.integers(0, 3), label="cancel") == 0:
                target = None
            else:
                pool = sorted(state.brokers) if state.brokers and data.draw(st.integers(0, 4), label="pool") else BROKER_IDS
                target = data.draw(st.lists(st.sampled_from(pool), min_size=1, max_size=4, unique=True),
                                   label="target")
                if data.draw(st.integers(0, 20), label="odd target") == 0:
                    target = data.draw(st.sampled_from(([], target + target[:1])), label="odd")
            self._send("alter_partition_reassignment", topic_name=name, partition_id=partition_id,
                       target_replicas=target,
                       allow_replication_factor_change=not kafka.replication_factor_flag
                       or data.draw(st.booleans(), label="allow rf change"))

        # -------------------------------------------------------------- broker events

        @precondition(lambda self: "handle_broker_fenced" in enabled)
        @rule(data=st.data())
        def handle_broker_fenced(self, data: st.DataObject) -> None:
            self._send("handle_broker_fenced", broker_id=self._broker(data))

        @precondition(lambda self: "handle_broker_unfenced" in enabled)
        @rule(data=st.data())
        def handle_broker_unfenced(self, data: st.DataObject) -> None:
            self._send("handle_broker_unfenced", broker_id=self._broker(data))

        @precondition(lambda self: "handle_broker_in_controlled_shutdown" in enabled)
        @rule(data=st.data())
        def handle_broker_in_controlled_shutdown(self, data: st.DataObject) -> None:
            self._send("handle_broker_in_controlled_shutdown", broker_id=self._broker(data))

        @precondition(lambda self: "handle_broker_unregistered" in enabled)
        @rule(data=st.data())
        def handle_broker_unregistered(self, data: st.DataObject) -> None:
            self._send("handle_broker_unregistered", broker_id=self._broker(data))

        @precondition(lambda self: "handle_broker_shutdown" in enabled)
        @rule(data=st.data(), clean=st.booleans())
        def handle_broker_shutdown(self, data: st.DataObject, clean: bool) -> None:
            broker_id = self._broker(data)
            type(self).incarnations += 1
            n = type(self).incarnations
            self._send("handle_broker_shutdown", broker_id=broker_id, epoch=1000 + n,
                       incarnation_id=f"incarnation-{broker_id}-{n}", is_clean_shutdown=clean)

        # -------------------------------------------------------------- the partition leader on the broker

        def _leader_key(self, data: st.DataObject) -> Optional[tuple[int, str, int]]:
            leaders = sorted(self._state.leaders)
            return data.draw(st.sampled_from(leaders), label="leader state") if leaders else None

        def _leader_args(self, key: tuple[int, str, int]) -> dict[str, Any]:
            return {"broker_id": key[0], "topic_id": key[1], "partition_id": key[2]}

        @precondition(lambda self: "become_leader" in enabled)
        @rule(data=st.data())
        def become_leader(self, data: st.DataObject) -> None:
            state = self._state
            topic_id, partition_id = data.draw(st.sampled_from(self._keys()), label="partition")
            partition = state.partitions[(topic_id, partition_id)]
            candidates = [partition.leader] * 4 + [r for r in partition.replicas if r in state.brokers] + sorted(state.brokers)
            candidates = [b for b in candidates if b in state.brokers] or [partition.leader]
            broker_id = data.draw(st.sampled_from(candidates), label="broker")
            log_end = data.draw(st.integers(0, 6), label="log end")
            self._send("become_leader", broker_id=broker_id, topic_id=topic_id, partition_id=partition_id,
                       log_end_offset=log_end, high_watermark=data.draw(st.integers(0, log_end), label="hw"),
                       min_insync_replicas=data.draw(st.sampled_from((1, 1, 2, 3)), label="min isr"),
                       replica_lag_time_max_ms=data.draw(st.sampled_from((30000, 30000, 1000, 0, -1)), label="lag"))

        @precondition(lambda self: "update_leader_metadata" in enabled)
        @rule(data=st.data())
        def update_leader_metadata(self, data: st.DataObject) -> None:
            key = self._leader_key(data)
            if key is not None:
                self._send("update_leader_metadata", **self._leader_args(key))

        @precondition(lambda self: "update_broker_metadata" in enabled)
        @rule(data=st.data())
        def update_broker_metadata(self, data: st.DataObject) -> None:
            key = self._leader_key(data)
            if key is not None:
                self._send("update_broker_metadata", **self._leader_args(key))

        @precondition(lambda self: "stop_leading" in enabled)
        @rule(data=st.data())
        def stop_leading(self, data: st.DataObject) -> None:
            key = self._leader_key(data)
            if key is not None:
                self._send("stop_leading", **self._leader_args(key))

        @precondition(lambda self: "append" in enabled)
        @rule(data=st.data())
        def append(self, data: st.DataObject) -> None:
            key = self._leader_key(data)
            if key is not None:
                self._send("append", **self._leader_args(key), count=data.draw(st.integers(1, 3), label="count"))

        @precondition(lambda self: "follower_fetch" in enabled)
        @rule(data=st.data())
        def follower_fetch(self, data: st.DataObject) -> None:
            key = self._leader_key(data)
            if key is None:
                return
            state = self._state
            leader = state.leaders[key]
            follower = data.draw(st.sampled_from(sorted(leader.followers) * 12 + [key[0], MAX_BROKERS]), label="follower")
            leo = leader.log_end_offset
            offset = data.draw(st.sampled_from((leo,) * 6 + (max(leo - 1, 0), max(leo - 1, 0), 0, 0, leo + 1)),
                               label="fetch offset")
            registered = state.brokers.get(follower)
            choice = data.draw(st.sampled_from(("registered",) * 10 + ("unknown", "previous", "next")), label="epoch")
            epoch = (-1 if registered is None or choice == "unknown" else registered.epoch - 1 if choice == "previous"
                     else registered.epoch + 1 if choice == "next" else registered.epoch)
            self._send("follower_fetch", **self._leader_args(key), follower=follower, fetch_offset=offset,
                       broker_epoch=epoch)

        @precondition(lambda self: "maybe_shrink_isr" in enabled)
        @rule(data=st.data())
        def maybe_shrink_isr(self, data: st.DataObject) -> None:
            key = self._leader_key(data)
            if key is not None:
                self._send("maybe_shrink_isr", **self._leader_args(key))

        @precondition(lambda self: "handle_alter_partition_result" in enabled)
        @rule(data=st.data())
        def handle_alter_partition_result(self, data: st.DataObject) -> None:
            """The controller answers a request a broker has in flight (the answer reaches it), or an error does."""
            state = self._state
            waiting = sorted(state.in_flight)
            if not waiting:
                return
            key = data.draw(st.sampled_from(waiting), label="request")
            request = state.in_flight[key]
            result: dict[str, Any]
            if data.draw(st.integers(0, 3), label="synthetic"):
                assert self.differential is not None
                checked = self.differential.step({"action": "alter_partition", "request": {
                    "broker_id": key[0], "broker_epoch": state.brokers[key[0]].epoch if key[0] in state.brokers else -1,
                    "topics": [{"topic_id": key[1], "partitions": [to_json(request)]}]}})
                if counter is not None and checked is not None:
                    counter.steps += 1
                if checked is None or checked.step.response is None or not checked.step.response.get("topics"):
                    return
                result = checked.step.response["topics"][0]["partitions"][0]
            else:
                result = {"partition_index": key[2], "error_code": data.draw(st.sampled_from((
                    "OPERATION_NOT_ATTEMPTED", "NOT_CONTROLLER", "UNKNOWN_SERVER_ERROR", "FENCED_LEADER_EPOCH",
                    "INELIGIBLE_REPLICA", "NEW_LEADER_ELECTED", "INVALID_UPDATE_VERSION")), label="error")}
            self._send("handle_alter_partition_result", **self._leader_args(key), result=result)

        @precondition(lambda self: "advance_clock" in enabled)
        @rule(ticks=st.sampled_from((1, 10, 500, 1001, 30001)))
        def advance_clock(self, ticks: int) -> None:
            assert self.differential is not None
            self._send("advance_clock", now=self.differential.position.clock + ticks)

    return PartitionDifferential


def run_differential(adapter: Callable[[], Adapter], run_seed: int, *, max_examples: int = 100, steps: int = 50,
                     shrink: bool = True, actions: tuple[str, ...] = ACTIONS,
                     kafka: Profile = PROFILES["4.3"]) -> dict[str, Any]:
    """Run :func:`partition_machine` with ``run_seed`` (printed; the run depends on it alone) and count its steps.

    Returns ``{"seed", "examples", "steps", "refused", "seconds"}``; a disagreement raises
    :class:`kraftspec.oracle.DivergenceError` (after shrinking, unless ``shrink`` is False), whose message holds the
    minimal trace.
    """
    print(f"kraftspec partition differential: seed={run_seed} max_examples={max_examples} steps={steps}", flush=True)
    counter = StepCounter()
    base = partition_machine(adapter, actions, counter, kafka)
    machine = seed(run_seed)(type(f"PartitionDifferentialSeed{run_seed}", (base,), {}))
    phases = tuple(Phase) if shrink else (Phase.explicit, Phase.reuse, Phase.generate)
    started = time.perf_counter()
    with without_local_constants():  # the seed alone decides the run (kraftspec.models.determinism)
        run_state_machine_as_test(machine, settings=settings(
            max_examples=max_examples, stateful_step_count=steps, derandomize=True, database=None, deadline=None,
            print_blob=True, phases=phases, report_multiple_bugs=False, suppress_health_check=list(HealthCheck)))
    return {"seed": run_seed, "examples": max_examples, "steps": counter.steps, "refused": counter.refused,
            "seconds": time.perf_counter() - started}


__all__ = ["ACTIONS", "CONTROLLER_ACTIONS", "LEADER_ACTIONS", "LEADER_FOCUS", "PROFILES", "Profile", "initial_states",
           "partition_machine", "profile", "run_differential", "StepCounter", "directory_id"]
