"""A tiny KRaft vote handler, written independently of kraftspec: it answers standard VoteRequests and nothing else.

It speaks the trace format's JSON (the ``kraftspec.oracle.Adapter`` protocol) and states only what it decides in
its answers: the destination, the message type and ``vote_granted``. ``planted_bug=True`` compares logs by end
offset before epoch, where a candidate's log is up to date when its (last epoch, end offset) pair is at least the
voter's, epoch first.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional


class TinyVoter:
    """One voter's election state (epoch, vote) and the position of its log's end, as plain values (like Kafka,
    it takes a vote request from any replica id, voter or not)."""

    def __init__(self, planted_bug: bool = False) -> None:
        self.planted_bug = planted_bug
        self.epoch, self.log_epoch, self.log_end = 0, 0, 0
        self.voted: Optional[int] = None

    def reset(self, initial: Mapping[str, Any]) -> None:
        """Start from a trace's explicit initial state: its log of ``{"epoch", "record"}`` (no quorum-state file)."""
        explicit = initial["explicit"]
        log = explicit.get("log", [])
        self.log_epoch, self.log_end = (log[-1]["epoch"] if log else 0), len(log)
        self.epoch, self.voted = self.log_epoch, None

    def _up_to_date(self, last_epoch: int, last_offset: int) -> bool:
        """Whether a candidate's log end is at least this voter's (the planted bug compares offsets first)."""
        if self.planted_bug:
            return (last_offset, last_epoch) >= (self.log_end, self.log_epoch)
        return (last_epoch, last_offset) >= (self.log_epoch, self.log_end)

    def step(self, input: Mapping[str, Any]) -> Mapping[str, Any]:
        """Answer a vote request (the only input this voter handles)."""
        request = input["message"]
        candidate, epoch = request["replica_id"], request["replica_epoch"]
        granted = False
        valid = request["last_offset_epoch"] < epoch and request["last_offset"] >= 0
        if valid and epoch >= self.epoch:
            if epoch > self.epoch:
                self.epoch, self.voted = epoch, None
            if self.voted is not None:
                granted = self.voted == candidate
            elif self._up_to_date(request["last_offset_epoch"], request["last_offset"]):
                granted, self.voted = True, candidate
        answer = {"destination": candidate, "type": "VoteResponse", "vote_granted": granted}
        return {"response": {"sends": [answer]}}
