"""A Hypothesis differential state machine for one KRaft quorum node (the raft component, traces/FORMAT.md).

:func:`raft_machine` drives an implementation of one node (an :class:`kraftspec.oracle.Adapter`) and the reference
node side by side with what the node receives: Vote, Fetch, BeginQuorumEpoch and EndQuorumEpoch requests from the
other voters and an observer (drawn around the node's epoch and log end, valid and not), answers to the requests it
has in flight, timer polls, leader appends, resignations and restarts. A ``view`` (``{"sends": ["VoteResponse"]}``)
compares only the messages an implementation covers while the reference runs the whole node. A disagreement raises
:class:`kraftspec.oracle.DivergenceError`; Hypothesis shrinks the sequence and the report ends with it as a trace.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Optional

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, precondition, rule

from kraftspec.models.raft_strategies import epochs
from kraftspec.oracle import Adapter, Differential
from kraftspec.reference.raft_state import Leader

ACTIONS = ("vote_request", "vote_response", "fetch_request", "fetch_response", "begin_quorum_epoch_request",
           "end_quorum_epoch_request", "tick", "append", "resign", "restart")
"""Every input the machine generates (``advance_clock`` is implied by each input's ``now``)."""
OBSERVER = 4
"""A node id that is no voter of the standard states (voters 1-3)."""
FRESH_VOTER: Mapping[str, Any] = {"standard": "raft/fresh-voter"}
"""The default initial state: voter 1 of 1-3, no quorum-state file, an empty log."""


def raft_machine(adapter: Callable[[], Adapter], initial: Mapping[str, Any] = FRESH_VOTER,
                 actions: tuple[str, ...] = ACTIONS, view: Optional[Mapping[str, Any]] = None,
                 pre_vote: bool = True) -> type[RuleBasedStateMachine]:
    """A state machine sending ``adapter()`` and the reference node the same inputs (only those in ``actions``).

    ``initial`` is a trace's ``initial`` object; ``view`` as a trace states it (None: every send compared);
    ``pre_vote=False`` draws standard vote requests only. Run it as ``TestX = raft_machine(MyNode).TestCase``.
    """
    enabled = set(actions)
    unknown = enabled - set(ACTIONS)
    if unknown:
        raise ValueError(f"unknown raft action(s) {sorted(unknown)} (known: {', '.join(ACTIONS)})")

    class RaftDifferential(RuleBasedStateMachine):
        """The reference node and an implementation given the same inputs (see :func:`raft_machine`)."""

        def __init__(self) -> None:
            super().__init__()
            self.differential = Differential(adapter(), initial, "raft", view)

        @property
        def _node(self) -> Any:
            return self.differential.position.state

        def _others(self) -> list[int]:
            return sorted(set(self._node.voters) - {self._node.local_id}) + [OBSERVER]

        def _send(self, action: str, **args: Any) -> None:
            self.differential.step({"action": action, "now": self.differential.position.clock, **args})

        @precondition(lambda self: "vote_request" in enabled)
        @rule(data=st.data(), epoch_ahead=st.integers(-1, 2), log_epoch_behind=st.integers(-1, 2),
              offset_ahead=st.integers(-2, 2))
        def vote_request(self, data: st.DataObject, epoch_ahead: int, log_epoch_behind: int,
                         offset_ahead: int) -> None:
            node = self._node
            epoch = max(0, node.state.epoch + epoch_ahead)
            self._send("vote_request", message={
                "replica_id": data.draw(st.sampled_from(self._others()), label="candidate"), "replica_epoch": epoch,
                "last_offset_epoch": max(0, node.log.last_fetched_epoch - log_epoch_behind),
                "last_offset": max(0, node.log.end_offset + offset_ahead),
                "pre_vote": pre_vote and data.draw(st.booleans(), label="pre_vote")})

        @precondition(lambda self: "vote_response" in enabled)
        @rule(data=st.data(), granted=st.booleans(), epoch_ahead=st.integers(-1, 1))
        def vote_response(self, data: st.DataObject, granted: bool, epoch_ahead: int) -> None:
            self._send("vote_response", message={
                "source": data.draw(st.sampled_from(self._others()), label="voter"), "vote_granted": granted,
                "leader_epoch": max(0, self._node.state.epoch + epoch_ahead)})

        @precondition(lambda self: "fetch_request" in enabled)
        @rule(data=st.data(), epoch_ahead=st.integers(-1, 1), offset_behind=st.integers(-1, 2),
              fetched_epoch=epochs(3))
        def fetch_request(self, data: st.DataObject, epoch_ahead: int, offset_behind: int, fetched_epoch: int) -> None:
            node = self._node
            self._send("fetch_request", message={
                "replica_id": data.draw(st.sampled_from(self._others()), label="replica"),
                "current_leader_epoch": max(0, node.state.epoch + epoch_ahead),
                "fetch_offset": max(0, node.log.end_offset - offset_behind),
                "last_fetched_epoch": min(fetched_epoch, node.log.last_fetched_epoch)})

        @precondition(lambda self: "fetch_response" in enabled)
        @rule(data=st.data(), records=st.integers(0, 2), high_watermark=st.integers(-1, 3))
        def fetch_response(self, data: st.DataObject, records: int, high_watermark: int) -> None:
            node = self._node
            leader = getattr(node.state, "leader_id", -1)
            source = leader if leader in node.voters else data.draw(st.sampled_from(self._others()), label="source")
            epoch = node.state.epoch
            self._send("fetch_response", message={
                "source": source, "leader_epoch": epoch, "leader_id": source,
                "high_watermark": min(high_watermark, node.log.end_offset + records),
                "records": [{"epoch": epoch, "record": f"r{i}"} for i in range(records)]})

        @precondition(lambda self: "begin_quorum_epoch_request" in enabled)
        @rule(data=st.data(), epoch_ahead=st.integers(-1, 2))
        def begin_quorum_epoch_request(self, data: st.DataObject, epoch_ahead: int) -> None:
            self._send("begin_quorum_epoch_request", message={
                "leader_id": data.draw(st.sampled_from(self._others()[:-1]), label="leader"),
                "leader_epoch": max(0, self._node.state.epoch + epoch_ahead)})

        @precondition(lambda self: "end_quorum_epoch_request" in enabled)
        @rule(data=st.data(), epoch_ahead=st.integers(-1, 1))
        def end_quorum_epoch_request(self, data: st.DataObject, epoch_ahead: int) -> None:
            leader = data.draw(st.sampled_from(self._others()[:-1]), label="leader")
            self._send("end_quorum_epoch_request", message={
                "leader_id": leader, "leader_epoch": max(0, self._node.state.epoch + epoch_ahead),
                "preferred_successors": [self._node.local_id]})

        @precondition(lambda self: "tick" in enabled)
        @rule(ms=st.integers(1, 2500), jitter=st.integers(0, 999))
        def tick(self, ms: int, jitter: int) -> None:
            self.differential.step({"action": "tick", "now": self.differential.position.clock + ms, "jitter": jitter})

        @precondition(lambda self: "append" in enabled and isinstance(self._node.state, Leader))
        @rule(count=st.integers(1, 3))
        def append(self, count: int) -> None:
            self._send("append", records=[f"a{i}" for i in range(count)])

        @precondition(lambda self: "resign" in enabled)
        @rule()
        def resign(self) -> None:
            self._send("resign", epoch=self._node.state.epoch)

        @precondition(lambda self: "restart" in enabled)
        @rule()
        def restart(self) -> None:
            self._send("restart")

    return RaftDifferential
