"""A small, independent broker-registration and heartbeat controller, to be checked against kraftspec.

It knows nothing of kraftspec's reference: plain dicts, written from the rules as a reader of
rules §1.2–§1.5 would state them. It handles ``register_broker``, ``heartbeat`` and
``advance_clock`` on a cluster without topics, and exposes responses only (an implementation need
not expose the records it writes; it must still count them, since broker epochs are log offsets).

``TinyController(planted_bug=True)`` has one deliberate mistake: it calls a broker caught up only
once its reported metadata offset is strictly past the offset of its registration record, where
the rule is "has reached" it. ``differential_test.py`` finds it.
"""

from __future__ import annotations

from typing import Any, Mapping


class TinyController:
    """An active controller's view of broker registrations, sessions and fencing (the trace-format adapter)."""

    def __init__(self, planted_bug: bool = False) -> None:
        self.planted_bug = planted_bug
        self.reset({"explicit": {"cluster_id": "", "metadata_version": 0}})

    def reset(self, initial: Mapping[str, Any]) -> None:
        """Start empty: a controller with no broker registered (only explicit initial states without records)."""
        explicit = initial["explicit"]
        if explicit.get("records"):
            raise ValueError("TinyController starts from an empty cluster only")
        self.cluster_id = explicit["cluster_id"]
        self.session_timeout = explicit.get("session_timeout", 9000)
        self.next_offset = explicit.get("next_offset", 0)
        self.clock = 0
        self.brokers: dict[int, dict[str, Any]] = {}   # id -> epoch, incarnation, fenced, register_offset
        self.sessions: dict[tuple[int, int], int] = {}  # (id, epoch) -> last contact

    def step(self, input: Mapping[str, Any]) -> dict[str, Any]:
        """One input (trace-format JSON) to the output this implementation exposes."""
        action = input["action"]
        if action == "advance_clock":
            self.clock = input["now"]
            return {}
        now = input.get("now", self.clock)
        self.clock = now
        if action == "register_broker":
            return {"response": self._register(input["request"], now)}
        if action == "heartbeat":
            return {"response": self._heartbeat(input["request"], now)}
        raise ValueError(f"TinyController does not implement {action!r}")

    def _write(self) -> int:
        """Append one record; its offset."""
        self.next_offset += 1
        return self.next_offset - 1

    def _session_alive(self, broker_id: int, epoch: int, now: int) -> bool:
        contact = self.sessions.get((broker_id, epoch))
        return contact is not None and not (now > contact and contact + self.session_timeout < now)

    def _register(self, request: Mapping[str, Any], now: int) -> dict[str, Any]:
        if request["cluster_id"] != self.cluster_id:
            return {"error": "INCONSISTENT_CLUSTER_ID"}
        broker_id, incarnation = request["broker_id"], request["incarnation_id"]
        existing = self.brokers.get(broker_id)
        if existing is not None and existing["incarnation"] == incarnation:  # the same process again: keep the epoch
            existing["register_offset"] = self._write()
            return {"error": "NONE", "broker_epoch": existing["epoch"]}
        if existing is not None and self._session_alive(broker_id, existing["epoch"], now):
            return {"error": "DUPLICATE_BROKER_REGISTRATION"}
        offset = self._write()
        self.brokers[broker_id] = {"epoch": offset, "incarnation": incarnation, "fenced": True,
                                   "register_offset": offset}
        return {"error": "NONE", "broker_epoch": offset}

    def _caught_up(self, reported: int, register_offset: int) -> bool:
        if self.planted_bug:
            return reported > register_offset
        return reported >= register_offset

    def _heartbeat(self, request: Mapping[str, Any], now: int) -> dict[str, Any]:
        broker_id, epoch = request["broker_id"], request["broker_epoch"]
        self.sessions[(broker_id, epoch)] = now  # every heartbeat counts as contact, even a stale one
        registration = self.brokers.get(broker_id)
        if registration is None or registration["epoch"] != epoch:
            return {"error": "STALE_BROKER_EPOCH"}
        caught_up = self._caught_up(request["current_metadata_offset"], registration["register_offset"])
        fence, shut_down = request["want_fence"], request["want_shut_down"]
        if registration["fenced"]:
            shutdown_now, fenced = shut_down, shut_down or fence or not caught_up
        else:  # no partitions here, so a shut-down request completes at once
            shutdown_now, fenced = shut_down, fence or shut_down
        if fenced != registration["fenced"] or shutdown_now:  # a fence or unfence record
            self._write()
        registration["fenced"] = fenced
        return {
            "error": "NONE", "is_caught_up": caught_up, "is_fenced": fenced, "in_controlled_shutdown": False,
            "should_shut_down": shutdown_now}
