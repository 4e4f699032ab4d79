"""A small controller's partition leadership and ISR handling, written independently of kraftspec's reference.

It speaks the trace format's JSON (the ``kraftspec.oracle.Adapter`` protocol) and implements what a controller
without eligible leader replicas (ELR), unclean election, reassignments or log directories does with a partition's
leader and ISR (rules §2.9, §2.10), at metadata.version 3.6-IV0 or later:

* ``alter_partition``: a leader's conditional ISR change (KIP-497/KIP-903), checked in Kafka's order;
* ``handle_broker_fenced`` / ``handle_broker_in_controlled_shutdown``: the broker leaves every ISR and leadership
  moves to the first active ISR replica (the ISR never empties: its last member stays, leaderless);
* ``handle_broker_unfenced``: every leaderless partition elects the first acceptable ISR replica.

It answers AlterPartition's response and states every partition's registration after each step (``post``); it
keeps no log, so it states no records. ``TinyPartitions(planted_bug=True)`` forgets one check of KIP-903: it
accepts an ISR member that is fenced or shutting down as long as its broker epoch is right.
"""

from __future__ import annotations

from typing import Any, Mapping

NO_LEADER = -1
RECOVERED, RECOVERING = 0, 1


class TinyPartitions:
    """Broker registrations (epoch and flags) and partition registrations, as plain dicts."""

    def __init__(self, planted_bug: bool = False) -> None:
        self.planted_bug = planted_bug
        self.brokers: dict[int, dict[str, Any]] = {}
        self.topics: set[str] = set()
        self.partitions: dict[tuple[str, int], dict[str, Any]] = {}

    def reset(self, initial: Mapping[str, Any]) -> None:
        """Start from an explicit initial state without ELR, unclean election, reassignments or log directories, at
        metadata.version 3.6-IV0 (level 12) or later, where an ISR shrink alone keeps the leader epoch."""
        state = initial["explicit"]
        if (state["metadata_version"] < 12 or state.get("elr_enabled")
                or any(t.get("unclean_leader_election_enable") for t in state["topics"])
                or any(p.get("adding_replicas") or p.get("removing_replicas") or p.get("directories")
                       for p in state["partitions"])):
            raise ValueError("TinyPartitions handles neither old metadata.versions, ELR, unclean election, "
                             "reassignments nor log directories")
        self.brokers = {b["broker_id"]: {"epoch": b["epoch"], "fenced": b.get("fenced", True),
                                         "in_controlled_shutdown": b.get("in_controlled_shutdown", False)}
                        for b in state["brokers"]}
        self.topics = {t["topic_id"] for t in state["topics"]}
        self.partitions = {(p["topic_id"], p["partition_id"]): {
            "replicas": list(p["replicas"]), "isr": list(p["isr"]), "leader": p["leader"],
            "leader_epoch": p["leader_epoch"], "partition_epoch": p["partition_epoch"],
            "leader_recovery_state": p.get("leader_recovery_state", RECOVERED)} for p in state["partitions"]}

    def step(self, input: Mapping[str, Any]) -> dict[str, Any]:
        """One input (trace-format JSON) to what this implementation exposes: a response and the partitions."""
        action = input["action"]
        answer: dict[str, Any] = {}
        if action == "alter_partition":
            answer["response"] = self._alter_partition(input["request"])
        elif action in ("handle_broker_fenced", "handle_broker_in_controlled_shutdown"):
            self._remove_from_isrs(input["broker_id"])
            flag = "fenced" if action == "handle_broker_fenced" else "in_controlled_shutdown"
            self.brokers[input["broker_id"]][flag] = True
        elif action == "handle_broker_unfenced":
            self._elect_leaderless(input["broker_id"])
            self.brokers[input["broker_id"]]["fenced"] = False
        else:
            raise ValueError(f"TinyPartitions does not implement {action!r}")
        answer["post"] = {"partitions": {f"{topic}:{index}": {
            **p, "removing_replicas": [], "adding_replicas": [], "elr": [], "last_known_elr": []}
            for (topic, index), p in self.partitions.items()}}
        return answer

    # ------------------------------------------------------------------ AlterPartition

    def _alter_partition(self, request: Mapping[str, Any]) -> dict[str, Any]:
        if not request["topics"]:
            return {"error_code": "NONE", "topics": []}
        requester = self.brokers.get(request["broker_id"])
        if requester is None or requester["epoch"] != request["broker_epoch"]:
            return {"error_code": "STALE_BROKER_EPOCH", "topics": []}
        changes = []  # every partition is judged on the state before the request, then the changes apply in order
        topics = []
        for topic in request["topics"]:
            results = []
            for data in topic["partitions"]:
                key = (topic["topic_id"], data["partition_index"])
                error = ("UNKNOWN_TOPIC_ID" if topic["topic_id"] not in self.topics
                         else self._alter_partition_error(request, key, data))
                if error != "NONE":
                    results.append(_error_result(data["partition_index"], error))
                    continue
                current = self.partitions[key]
                isr = [member for member, _ in data["new_isr_with_epochs"]]
                changed = {"isr": isr} if isr != current["isr"] else {}
                if data.get("leader_recovery_state", RECOVERED) != current["leader_recovery_state"]:
                    changed["leader_recovery_state"] = data["leader_recovery_state"]
                after = dict(current, **changed, partition_epoch=current["partition_epoch"] + bool(changed))
                if changed:
                    changes.append((key, changed))
                results.append({"partition_index": key[1], "error_code": "NONE", "leader_id": after["leader"],
                                "leader_epoch": after["leader_epoch"], "isr": after["isr"],
                                "leader_recovery_state": after["leader_recovery_state"],
                                "partition_epoch": after["partition_epoch"]})
            topics.append({"topic_id": topic["topic_id"], "partitions": results})
        for key, changed in changes:
            partition = self.partitions[key]
            partition.update(changed, partition_epoch=partition["partition_epoch"] + 1)
        return {"error_code": "NONE", "topics": topics}

    def _alter_partition_error(self, request: Mapping[str, Any], key: tuple[str, int], data: Mapping[str, Any]) -> str:
        """The first failing check of one partition's proposal, in Kafka's order."""
        partition = self.partitions.get(key)
        if partition is None:
            return "UNKNOWN_TOPIC_OR_PARTITION"
        if data["leader_epoch"] > partition["leader_epoch"] or data["partition_epoch"] > partition["partition_epoch"]:
            return "NOT_CONTROLLER"  # this controller lags the leader: it should find the active one
        if data["leader_epoch"] < partition["leader_epoch"]:
            return "FENCED_LEADER_EPOCH"
        if request["broker_id"] != partition["leader"]:
            return "INVALID_REQUEST"
        if data["partition_epoch"] < partition["partition_epoch"]:
            return "INVALID_UPDATE_VERSION"
        members = [member for member, _ in data["new_isr_with_epochs"]]
        if len(set(members)) != len(members) or any(m not in partition["replicas"] for m in members):
            return "INVALID_REQUEST"
        if partition["leader"] not in members:
            return "INVALID_REQUEST"
        recovery = data.get("leader_recovery_state", RECOVERED)
        if recovery == RECOVERING and len(members) > 1:
            return "INVALID_REQUEST"
        if recovery == RECOVERING and partition["leader_recovery_state"] == RECOVERED:
            return "INVALID_REQUEST"
        for member, epoch in data["new_isr_with_epochs"]:
            if not self._eligible(member, epoch if request.get("version", 3) >= 3 else -1):
                return "INELIGIBLE_REPLICA"
        return "NONE"

    def _eligible(self, broker_id: int, epoch: int) -> bool:
        """KIP-903: an ISR member is a registered, active broker, in the incarnation the leader saw (-1: unchecked)."""
        broker = self.brokers.get(broker_id)
        if broker is None:
            return False
        if not self.planted_bug and (broker["fenced"] or broker["in_controlled_shutdown"]):
            return False
        return epoch in (-1, broker["epoch"])

    # ------------------------------------------------------------------ broker events

    def _active(self, broker_id: int, leaving: int = NO_LEADER, joining: int = NO_LEADER) -> bool:
        """Whether a replica may lead: registered, unfenced and not shutting down (or the broker being unfenced)."""
        broker = self.brokers.get(broker_id)
        if broker is None or broker_id == leaving:
            return False
        return broker_id == joining or not (broker["fenced"] or broker["in_controlled_shutdown"])

    def _elect(self, partition: dict[str, Any], isr: list[int], leaving: int = NO_LEADER,
               joining: int = NO_LEADER) -> None:
        """Keep the leader if it is in ``isr`` and may lead, else the first replica that is and may; the ISR never
        empties. Any change bumps the partition epoch, a new leader (or none) the leader epoch too."""
        candidates = [partition["leader"]] + partition["replicas"]
        leader = next((r for r in candidates if r in isr and self._active(r, leaving, joining)), NO_LEADER)
        changed = False
        if isr and isr != partition["isr"]:
            partition["isr"], changed = isr, True
        if leader != partition["leader"]:
            partition["leader"], partition["leader_epoch"], changed = leader, partition["leader_epoch"] + 1, True
        partition["partition_epoch"] += changed

    def _remove_from_isrs(self, broker_id: int) -> None:
        for _, partition in sorted(self.partitions.items()):
            if broker_id in partition["isr"]:
                self._elect(partition, [r for r in partition["isr"] if r != broker_id], leaving=broker_id)

    def _elect_leaderless(self, broker_id: int) -> None:
        for _, partition in sorted(self.partitions.items()):
            if partition["leader"] == NO_LEADER:
                self._elect(partition, partition["isr"], joining=broker_id)


def _error_result(index: int, error: str) -> dict[str, Any]:
    """A partition's error answer: only the error, every other field at its default."""
    return {"partition_index": index, "error_code": error, "leader_id": 0, "leader_epoch": 0, "isr": [],
            "leader_recovery_state": 0, "partition_epoch": 0}
