------------------------- MODULE KRaftListenerTrace -------------------------
(***************************************************************************)
(* Trace validation for KRaftListener (as BrokerLifecycleTrace does for    *)
(* BrokerLifecycle): raft traces of the spec's node Local. TLC explores    *)
(* every trace of TraceSet at once (the trace index t is chosen in the     *)
(* initial state); i counts the steps of trace t the spec has explained.   *)
(*                                                                         *)
(* A raft input runs its handler and then a poll, and Kafka tells the      *)
(* listener at fixed points of both; the spec lets its listener actions    *)
(* run between any two moves of the node. So a step (kind, mapped by       *)
(* kraftspec.spec.trace_validation_listener) is explained by any sequence  *)
(* of the listener actions and of the environment actions its input may   *)
(* cause (at least `need` of them), then a commit where the spec's state is *)
(* the stated post-state:                                                  *)
(*   append        AppendRecord (a leader's);                              *)
(*   fetchReq      AdvanceHighWatermark (the fetcher's offset a majority); *)
(*   fetchResp     AppendRecord per record, AdvanceHighWatermark up to the *)
(*                 answer's high watermark;                                *)
(*   vote          StartElection (a granted pre-vote: the Prospective the  *)
(*                 spec elides) or WinElection;                            *)
(*   beginEpoch    LearnLeader(l, e);                                      *)
(*   create        CreateSnapshot(e); delete AdvanceLogStart;              *)
(*   restart       Restart;                                                *)
(*   tick          none (the listener actions only).                       *)
(* Inputs and values the spec does not model set `outside` instead.        *)
(***************************************************************************)
EXTENDS KRaftListener, TLC

CONSTANT TraceSet   \* <<[init |-> spec state, steps |-> <<step, ...>>], ...>>

VARIABLES t,        \* the trace being validated: an index of TraceSet
          i,        \* how many of its steps the spec has explained
          outside,  \* "" or why the next step is outside the spec's bounds
          env       \* the environment actions taken for step i + 1 so far

Steps == TraceSet[t].steps
S == Steps[i + 1]

(* A marker line per explained prefix, read back by kraftspec.spec.trace_validation. *)
Report(n, why) == PrintT(<<"kraftspec-trace", t, n, why>>)

TraceInit ==
    /\ t \in DOMAIN TraceSet
    /\ Init
    /\ i = 0
    /\ outside = ""
    /\ env = 0
    /\ Report(0, "")

(* Why the spec cannot judge step s from this state ("" when it can). *)
OutsideReason(s) ==
    CASE s.kind = "beginEpoch" /\ s.e > MaxEpoch -> "an epoch past MaxEpoch"
      [] s.kind = "vote" /\ s.granted /\ role # "Candidate" /\ epoch >= MaxEpoch -> "an election past MaxEpoch"
      [] s.kind \in {"append", "fetchResp"} /\ LogEnd + s.n > MaxLog -> "the log end would pass MaxLog"
      [] s.kind = "vote" /\ s.granted /\ role = "Candidate" /\ LogEnd >= MaxLog -> "the log end has reached MaxLog"
      [] s.kind = "restart" /\ restarts >= MaxRestarts -> "a restart past MaxRestarts"
      [] OTHER -> ""

Listener == UpdateListenersProgress \/ MaybeFireLeaderChange \/ PollListeners

(* The environment actions step s's input may cause: s.n appends (the records an append or a Fetch answer adds),
   then the high watermark; s.n snapshots (1 when a writer was given); an election only on a granted vote; one of
   every other. A step needs at least s.need of them before its commit. *)
EnvAction(s) ==
    CASE s.kind = "append" -> env < s.n /\ AppendRecord
      [] s.kind = "fetchReq" -> env = 0 /\ role = "Leader" /\ \E m \in 0..MaxLog : AdvanceHighWatermark(m)
      [] s.kind = "fetchResp" -> \/ env < s.n /\ AppendRecord
                                 \/ env >= s.n /\ role = "Follower" /\ \E m \in 0..s.hw : AdvanceHighWatermark(m)
      [] s.kind = "vote" -> env = 0 /\ s.granted /\ (StartElection \/ WinElection)
      [] s.kind = "beginEpoch" -> env = 0 /\ LearnLeader(s.l, s.e)
      [] s.kind = "create" -> env < s.n /\ CreateSnapshot(s.e)
      [] s.kind = "delete" -> env = 0 /\ AdvanceLogStart
      [] s.kind = "restart" -> env = 0 /\ Restart
      [] OTHER -> FALSE

(* The post-state fields the trace states, against the spec's state. *)
PostOK(s) ==
    /\ "role" \in s.stated => role = s.post.role
    /\ "epoch" \in s.stated => epoch = s.post.epoch
    /\ "leader" \in s.stated => leader = s.post.leader
    /\ "hw" \in s.stated => hw = s.post.hw
    /\ "logEnd" \in s.stated => LogEnd = s.post.logEnd
    /\ "logStart" \in s.stated => logStart = s.post.logStart
    /\ "snapshot" \in s.stated => snapshot = s.post.snapshot
    /\ "listener" \in s.stated => listener = s.post.listener

TraceNext ==
    /\ outside = ""
    /\ i < Len(Steps)
    /\ IF env = 0 /\ OutsideReason(S) # ""
       THEN /\ outside' = OutsideReason(S)
            /\ UNCHANGED <<vars, t, i, env>>
            /\ Report(i, outside')
       ELSE \/ /\ Listener
               /\ UNCHANGED <<t, i, outside, env>>
            \/ /\ EnvAction(S)
               /\ env' = env + 1
               /\ UNCHANGED <<t, i, outside>>
            \/ /\ PostOK(S)
               /\ env >= S.need
               /\ UNCHANGED vars
               /\ i' = i + 1
               /\ env' = 0
               /\ UNCHANGED <<t, outside>>
               /\ Report(i', "")

TraceSpec == TraceInit /\ [][TraceNext]_<<vars, t, i, outside, env>>
=============================================================================
