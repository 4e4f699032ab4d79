"""Partition traces in the vocabulary of ``PartitionLeadershipTrace.tla`` (``kraftspec check --with-tlc``).

The correspondences of ``spec/agree_partition.py`` and ``traces/recording/partition_tla.py``, read backwards:
``handle_broker_fenced`` / ``handle_broker_unfenced`` / ``handle_broker_shutdown`` are the spec's
HandleBrokerFenced / HandleBrokerUnfenced / HandleBrokerShutdown (steps ``Fence`` / ``Unfence`` / ``Restart``,
rules §2.9); ``become_leader``, ``update_leader_metadata``,
``update_broker_metadata`` and ``stop_leading`` are Learn (§2.12); ``append``, ``follower_fetch`` and
``maybe_shrink_isr`` are AppendRecords, FollowerFetch and MaybeShrinkIsr; ``alter_partition`` is
AlterPartition (§2.10), whose answer the spec delivers at once, so the ``handle_alter_partition_result``
right after it only checks what the leader reported. Broker ``b``'s ``k``-th incarnation has broker
epoch ``100 * (k + 1) + b``. Fields the spec fixes (one partition ``spec-topic:0`` on replicas 1-3, no
reassignment, no ELR, RECOVERED) are checked as constants. The spec's time is abstract
(``replica.lag.time.max.ms`` -1), so ``now`` and the ``clock`` post-state field are not judged, but a
clock going back is outside (with lag -1, only a clock that never goes back leaves every follower
behind unless at the leader's log end). The elections, reassignments, controlled shutdown and
unregistration actions are not modelled: outside.
"""

from __future__ import annotations

from typing import Any, Iterator, Mapping, Optional

from kraftspec.reference.alter_partition import AlterPartitionRequest
from kraftspec.reference.partition_leader import NO_FETCH
from kraftspec.reference.records import PartitionChangeRecord
from kraftspec.spec import agree_partition as agree
from kraftspec.spec.tla_parse import to_tla
from kraftspec.spec.tla_values import TlaValue, record
from kraftspec.spec.trace_validation_common import (Encoded, Outside, TraceModule, Unfixed, encoded, error_name,
                                                    fixing, modelled, stated_post)
from kraftspec.traces.replay import partition as partition_replay
from kraftspec.traces.format.envelope import Step, Trace
from kraftspec.traces.recording.partition_tla import EXPLICIT
from kraftspec.traces.format.partition import cached_explicit_state
from kraftspec.traces.format.values import to_json

_LEARN = ("become_leader", "update_leader_metadata", "update_broker_metadata", "stop_leading")
_SPEC_ACTIONS = {"handle_broker_fenced": "Fence", "handle_broker_unfenced": "Unfence", "handle_broker_shutdown": "Restart",
                 **dict.fromkeys(_LEARN, "Learn"), "append": "Append", "follower_fetch": "Fetch",
                 "maybe_shrink_isr": "Shrink", "alter_partition": "Alter", "handle_alter_partition_result": "Result",
                 "advance_clock": "Tick"}
_NO_MESSAGE = record(s=0, se=0, le=0, pe=0, isr=frozenset())
_NO_PROPOSAL = record(le=0, pe=0, isr=frozenset())
_NO_RESULT = record(leader=0, le=0, isr=frozenset(), pe=0)
_NO_PENDING = record(isr=frozenset(), max=frozenset())
_OUTCOMES = {"NONE": "applied", "NEW_LEADER_ELECTED": "newleader", "INELIGIBLE_REPLICA": "ineligible",
             "NOT_CONTROLLER": "epochs", "FENCED_LEADER_EPOCH": "epochs", "INVALID_REQUEST": "epochs",
             "INVALID_UPDATE_VERSION": "epochs"}
"""A partition's AlterPartition error as the spec's outcome (§2.10: ``alter_partition_epoch_error``'s errors are
the epoch checks); any other error is one the spec's controller never answers."""
_FIXED_PARTITION = {"replicas": list(agree.REPLICAS), "removing_replicas": [], "adding_replicas": [], "elr": [],
                    "last_known_elr": [], "leader_recovery_state": 0}
_LEADER_FIELDS = {"leader_epoch", "partition_epoch", "isr", "high_watermark", "log_end_offset",
                  "leader_epoch_start_offset", "followers", "eligible_brokers", "pending"}


def _int(value: Any) -> int:
    if type(value) is not int:
        raise Unfixed(f"{value!r} is not an integer")
    return value


def _ids(values: Any) -> frozenset[int]:
    """A list of distinct broker ids as the spec's set."""
    if type(values) is not list or len(set(map(_int, values))) != len(values):
        raise Unfixed(f"{values!r} is not a list of distinct ids")
    return frozenset(values)


def _incarnation(broker_id: int, epoch: Any) -> int:
    """The spec's broker epoch of a stated reference broker epoch (negative sentinels stay)."""
    k = agree.incarnation(_int(epoch))
    if epoch >= 0 and agree.broker_epoch(broker_id, k) != epoch:
        raise Unfixed(f"broker epoch {epoch} is no incarnation of broker {broker_id}")
    return k


def _broker_id(value: Any) -> int:
    if value not in agree.REPLICAS:
        raise Outside(f"broker id {value} is not in the spec's Brokers {{1, 2, 3}}")
    return int(value)


def _partition(topic_id: Any, partition_id: Any) -> None:
    if (topic_id, partition_id) != agree.KEY:
        raise Outside(f"partition {topic_id}:{partition_id} is not the spec's partition {agree.TOPIC_ID}:0")


def _initial(trace: Trace, constants: Mapping[str, TlaValue]) -> str:
    """The spec's ``Init``, when the trace starts from the reference state it corresponds to (``partition_tla.EXPLICIT``)."""
    if partition_replay.initial(trace) != cached_explicit_state(EXPLICIT):
        raise Outside(f"the spec starts from brokers 1-3 unfenced at epochs 101-103 and {agree.TOPIC_ID}:0 on "
                      "replicas 1, 2, 3 led by broker 1 at log end 0 with replica.lag.time.max.ms -1 "
                      "(traces/recording/partition_tla.py EXPLICIT)")
    (state,) = agree.initial_states(constants)
    return to_tla(record(**agree.project(state)))


def _isr_with_epochs(members: Any) -> frozenset[tuple[int, int]]:
    """``new_isr_with_epochs`` as the spec's message ISR: ``<<id, broker epoch>>``, -1 for an unknown epoch."""
    if type(members) is not list:
        raise Unfixed(f"{members!r} is not a list of [id, epoch]")
    pairs = frozenset((_int(r), _incarnation(r, e)) for r, e in members)
    if len(pairs) != len(members):
        raise Unfixed(f"{members!r} names a replica twice")
    return pairs


def _message(request: AlterPartitionRequest) -> TlaValue:
    """An AlterPartition request as the spec's message on the wire (one partition: the spec's)."""
    if len(request.topics) != 1 or len(request.topics[0].partitions) != 1:
        raise Outside("the request names more than the spec's one partition")
    data = request.topics[0].partitions[0]
    _partition(request.topics[0].topic_id, data.partition_index)
    sender = _broker_id(request.broker_id)
    if request.version < 3 or data.leader_recovery_state != 0:
        raise Outside("the spec's leaders send AlterPartition v3+ with broker epochs, RECOVERED")
    se = _input_epoch(sender, request.broker_epoch, "the sender")
    try:
        isr = _isr_with_epochs([list(m) for m in data.new_isr_with_epochs])
    except Unfixed as exc:
        raise Outside(f"the request's ISR is not one the spec's leaders propose: {exc}") from None
    return record(s=sender, se=se, le=data.leader_epoch, pe=data.partition_epoch, isr=isr)


def _outcome(response: Optional[Mapping[str, Any]]) -> tuple[str, Optional[TlaValue]]:
    """The controller's stated answer: the spec's outcome (``?`` unstated) and the partition's new state on success.

    :class:`Unfixed` when the answer names other topics or partitions than the request's one.
    """
    if response is None or "error_code" not in response:
        return "?", None
    top = error_name(response["error_code"])
    if top != "NONE":
        return ("stale" if top == "STALE_BROKER_EPOCH" else "other"), None
    if "topics" not in response:
        return "current", None
    (topic,) = response["topics"]
    (result,) = topic["partitions"]
    if topic["topic_id"] != agree.TOPIC_ID or result["partition_index"] != 0:
        raise Unfixed(f"the answer is not for {agree.TOPIC_ID}:0")
    outcome = _OUTCOMES.get(error_name(result["error_code"]) or "", "other")
    if outcome != "applied":
        return outcome, None
    return outcome, record(leader=_int(result["leader_id"]), le=_int(result["leader_epoch"]), isr=_ids(result["isr"]),
                           pe=_int(result["partition_epoch"]))


def _proposal(response: Optional[Mapping[str, Any]]) -> tuple[str, TlaValue]:
    """What a fetch or ISR check proposed: ``yes`` with the request's epochs and ISR, ``no``, ``?`` unstated."""
    if response is None or "proposal" not in response:
        return "?", _NO_PROPOSAL
    proposal = response["proposal"]
    if proposal is None:
        return "no", _NO_PROPOSAL
    if type(proposal) is not dict or proposal.get("partition_index") != 0 or proposal.get("leader_recovery_state", 0) != 0:
        raise Unfixed(f"the spec's leaders propose for partition 0, RECOVERED, not {proposal!r}")
    return "yes", record(le=_int(proposal.get("leader_epoch")), pe=_int(proposal.get("partition_epoch")),
                         isr=_isr_with_epochs(proposal.get("new_isr_with_epochs")))


def _records(written: Any) -> tuple[TlaValue, ...]:
    """PartitionChangeRecords as the ISR and leader they set; a field the spec never writes is :class:`Unfixed`."""
    out = []
    for _, r in written:
        if not isinstance(r, PartitionChangeRecord) or (r.topic_id, r.partition_id) != agree.KEY:
            raise Unfixed(f"the spec writes PartitionChangeRecords of {agree.TOPIC_ID}:0 only, not {r!r}")
        if (r.replicas, r.removing_replicas, r.adding_replicas, r.directories, r.eligible_leader_replicas,
                r.last_known_elr, r.leader_recovery_state) != (None, None, None, None, None, None, -1):
            raise Unfixed(f"the record changes a field the spec never changes: {r!r}")
        out.append(record(hasIsr=r.isr is not None, isr=frozenset(r.isr or ()), leader=r.leader))
    return tuple(out)


def _leader(b: int, w: Any) -> tuple[TlaValue, int]:
    """A stated leader state as the spec's ``ls[b]`` (``agree_partition``'s projection), and its log end offset."""
    if type(w) is not dict or set(w) != _LEADER_FIELDS:
        raise Unfixed(f"leader state {w!r} lacks or adds fields")
    followers, eligible, pending = w["followers"], w["eligible_brokers"], w["pending"]
    if type(followers) is not dict or type(eligible) is not dict or not {str(r) for r in agree.REPLICAS} >= set(followers) | set(eligible):
        raise Unfixed("followers and eligible brokers are the spec's brokers")
    fetched = {int(r): f for r, f in followers.items()}
    if any(type(f) is not dict or set(f) != {"log_end_offset", "broker_epoch"} for f in fetched.values()):
        raise Unfixed(f"follower states {followers!r} lack or add fields")
    if pending is not None and (type(pending) is not dict or set(pending) != {"proposed_isr", "maximal_isr"}):
        raise Unfixed(f"pending {pending!r} lacks or adds fields")
    state = record(
        epoch=_int(w["leader_epoch"]), pe=_int(w["partition_epoch"]), isr=_ids(w["isr"]), hw=_int(w["high_watermark"]),
        start=_int(w["leader_epoch_start_offset"]),
        leo=tuple(_int(fetched[r]["log_end_offset"]) if r in fetched else -1 for r in agree.REPLICAS),
        fep=tuple(_incarnation(r, fetched[r]["broker_epoch"]) if r in fetched else NO_FETCH for r in agree.REPLICAS),
        elig=tuple(_incarnation(r, eligible[str(r)]) if str(r) in eligible else -1 for r in agree.REPLICAS),
        pending=_NO_PENDING if pending is None else record(isr=_ids(pending["proposed_isr"]), max=_ids(pending["maximal_isr"])))
    return state, _int(w["log_end_offset"])


def _post(post: Mapping[str, Any]) -> dict[str, TlaValue]:
    """The stated post-state as the spec's variables (``clock`` is not judged: the spec's time is abstract)."""
    out: dict[str, TlaValue] = {}
    if "brokers" in post:
        brokers = post["brokers"]
        if type(brokers) is not dict or set(brokers) != {str(b) for b in agree.REPLICAS}:
            raise Unfixed(f"the spec registers brokers 1-3, not {sorted(brokers)}")
        epochs = []
        for b in agree.REPLICAS:
            r = brokers[str(b)]
            if type(r) is not dict or set(r) != {"epoch", "incarnation_id", "fenced", "in_controlled_shutdown"}:
                raise Unfixed(f"registration {r!r} lacks or adds fields")
            k = _incarnation(b, r["epoch"])
            if r["incarnation_id"] != agree.incarnation_id(b, k) or r["in_controlled_shutdown"] is not False \
                    or type(r["fenced"]) is not bool:
                raise Unfixed(f"registration {r!r} is not the spec's broker {b} in incarnation {k}")
            epochs.append(k)
        out["brokers"] = record(fenced=frozenset(b for b in agree.REPLICAS if brokers[str(b)]["fenced"]),
                                brokerEpoch=tuple(epochs))
    if "partitions" in post:
        key = f"{agree.TOPIC_ID}:0"
        partitions = post["partitions"]
        if type(partitions) is not dict or set(partitions) != {key}:
            raise Unfixed(f"the spec has one partition, {key}")
        p = partitions[key]
        if type(p) is not dict or set(p) != {"leader", "isr", "leader_epoch", "partition_epoch", *_FIXED_PARTITION} \
                or any(p[name] != value for name, value in _FIXED_PARTITION.items()):
            raise Unfixed(f"partition {p!r} is not on replicas 1, 2, 3 without reassignment or ELR, RECOVERED")
        out["part"] = record(leader=_int(p["leader"]), isr=_ids(p["isr"]), leaderEpoch=_int(p["leader_epoch"]),
                             partitionEpoch=_int(p["partition_epoch"]))
    if "leaders" in post:
        leaders = post["leaders"]
        keys = {f"{b}:{agree.TOPIC_ID}:0": b for b in agree.REPLICAS}
        if type(leaders) is not dict or not set(keys) >= set(leaders):
            raise Unfixed(f"the spec's leader states are {sorted(keys)}, not {sorted(leaders)}")
        states = {keys[k]: _leader(keys[k], w) for k, w in leaders.items()}
        out["leaders"] = record(ls=tuple(states[b][0] if b in states else agree.NOT_LEADING for b in agree.REPLICAS),
                                leo=tuple(states[b][1] if b in states else -1 for b in agree.REPLICAS))
    return out


def _result_consistent(step: Step, previous: Optional[Step]) -> bool:
    """Whether the result a leader handles is the stated answer of the ``alter_partition`` just before (if stated)."""
    response = None if previous is None or previous.action != "alter_partition" else previous.response
    if response is None or "topics" not in response:
        return True
    try:
        answered = dict(response["topics"][0]["partitions"][0])
    except (KeyError, IndexError, TypeError):
        return False
    given = to_json(step.input["result"])
    return {**answered, "error_code": error_name(answered.get("error_code"))} == {**given, "error_code": error_name(given["error_code"])}


def _input_epoch(broker_id: int, epoch: int, what: str) -> int:
    """A broker epoch an input names, as the spec's incarnation; :class:`Outside` if the spec's brokers never have it."""
    try:
        return _incarnation(broker_id, epoch)
    except Unfixed as exc:
        raise Outside(f"{what} registers or fetches with a broker epoch the spec does not use: {exc}") from None


def _arguments(step: Step, previous: Optional[Step], following: Optional[Step]) -> dict[str, TlaValue]:
    """The spec action's arguments and the inputs' checks; :class:`Outside` for an input the spec cannot express."""
    args = step.input
    b = _broker_id(args["broker_id"]) if "broker_id" in args else 0
    if "topic_id" in args:
        _partition(args["topic_id"], args["partition_id"])
    fields: dict[str, TlaValue] = {"b": b}
    if step.action == "handle_broker_shutdown":
        if args.get("is_clean_shutdown", False):
            raise Outside("the spec's brokers restart uncleanly")
        k = fields["ep"] = _input_epoch(b, args["epoch"], "the restarted broker")
        if args["incarnation_id"] != agree.incarnation_id(b, k):
            raise Outside(f"incarnation id {args['incarnation_id']!r} is not the spec's {agree.incarnation_id(b, k)!r}")
    elif step.action in _LEARN:
        fields["call"] = step.action
        if step.action == "become_leader":
            given = (args["high_watermark"], args["min_insync_replicas"], args.get("replica_lag_time_max_ms"))
            if given != (0, 1, agree.LAG):
                raise Outside(f"the spec's leaders start at high watermark 0 with min ISR 1 and replica.lag.time.max.ms "
                              f"{agree.LAG}, not {given}")
            fields["off"] = args["log_end_offset"]
    elif step.action == "append" and args["count"] != 1:
        raise Outside("the spec's leaders append one record at a time")
    elif step.action == "follower_fetch":
        follower = fields["f"] = _broker_id(args["follower"])
        if follower == b:
            raise Outside("the leader fetches from itself")
        fields["off"] = args["fetch_offset"]
        fields["ep"] = _input_epoch(follower, args["broker_epoch"], "the follower")
    elif step.action == "alter_partition":
        fields["msg"] = _message(args["request"])
        fields["delivered"] = "end" if following is None else "yes" if (
            following.action == "handle_alter_partition_result"
            and following.input["broker_id"] == args["request"].broker_id) else "no"
    elif step.action == "handle_alter_partition_result":
        fields["consistent"] = _result_consistent(step, previous)
    return fields


@fixing
def _outputs(step: Step) -> dict[str, TlaValue]:
    """The stated outputs and post-state (``fixed`` FALSE instead when one is not as the spec fixes it: ``fixing``)."""
    fields: dict[str, TlaValue] = {}
    if step.action == "alter_partition":
        fields["outcome"], result = _outcome(step.response)
        if result is not None:
            fields["hasRes"], fields["res"] = True, result
    elif step.action in ("follower_fetch", "maybe_shrink_isr"):
        fields["prop"], fields["pmsg"] = _proposal(step.response)
    elif step.action == "handle_alter_partition_result" and step.response is not None and "resend" in step.response:
        fields["resend"] = "no" if step.response["resend"] is None else "yes"
    if step.records is not None:
        fields["nrec"], fields["recs"] = len(step.records), _records(step.records)
    return {**fields, **stated_post(_post(step.post or {}))}


def encode_step(step: Step, previous: Optional[Step], following: Optional[Step]) -> str:
    """The step as a ``PartitionLeadershipTrace`` step record (the steps around it decide an AlterPartition's
    delivery and the answer a leader handles). Raises :class:`Outside` when the spec cannot express it."""
    act = _SPEC_ACTIONS[modelled(step, _SPEC_ACTIONS, "the spec")]
    fields: dict[str, TlaValue] = {
        "act": act, "call": "", "b": 0, "f": 0, "off": 0, "ep": 0, "msg": _NO_MESSAGE, "delivered": "end",
        "outcome": "?", "hasRes": False, "res": _NO_RESULT, "prop": "?", "pmsg": _NO_PROPOSAL, "consistent": True,
        "resend": "?", "nrec": -1, "recs": (), "stated": frozenset(), "post": record(nothing=0)}
    fields.update(_arguments(step, previous, following))
    fields.update(_outputs(step))
    return to_tla(record(**fields))


def encode(trace: Trace, constants: Mapping[str, TlaValue]) -> Encoded:
    """``trace`` in the trace module's vocabulary, up to its first step the spec cannot express."""
    def steps() -> Iterator[str]:
        clock = 0
        for index, step in enumerate(trace.steps):
            now = step.input.get("now", clock)
            if now < clock:
                raise Outside(f"time goes back from {clock} to {now} (the spec's followers fall behind as time passes)")
            clock = now
            yield encode_step(step, trace.steps[index - 1] if index else None,
                              trace.steps[index + 1] if index + 1 < len(trace.steps) else None)
    return encoded(lambda: _initial(trace, constants), steps)


MODULE = TraceModule("partition", "PartitionLeadership",
                     ("leader", "isr", "leaderEpoch", "partitionEpoch", "fenced", "brokerEpoch", "net", "log", "known",
                      "ls", "appends", "committed", "t", "i", "outside", "answer"), encode)
"""``spec/PartitionLeadershipTrace.tla``: the spec's variables, then the trace index, the steps explained, why it
stopped and the broker an AlterPartition's answer reached."""
