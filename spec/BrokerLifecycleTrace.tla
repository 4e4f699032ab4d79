------------------------ MODULE BrokerLifecycleTrace ------------------------
(***************************************************************************)
(* Trace validation for BrokerLifecycle (the technique of etcd's and       *)
(* CCF's Raft trace validation): the spec's actions, constrained to the    *)
(* steps of recorded traces.  TLC explores every trace of TraceSet at      *)
(* once (the trace index t is chosen in the initial state); i counts the   *)
(* steps of trace t the spec has explained.  A trace is a behaviour of the *)
(* spec when some reachable state has consumed all its steps.              *)
(*                                                                         *)
(* A step names a spec action and its arguments (kraftspec's trace         *)
(* vocabulary mapped by kraftspec.spec.trace_validation): RegisterBroker, *)
(* Heartbeat, FenceStaleBroker, UnregisterBroker, Failover or Tick         *)
(* (advance the clock to `now`).  What the implementation reported is      *)
(* checked against                                                         *)
(* the spec's successor: whether the request succeeded (`ok`), the state a *)
(* heartbeat granted (`reply`), the number of records written (`nrec`) and *)
(* the post-state variables the trace states (`post`).  A step the spec    *)
(* cannot judge (beyond MaxOffset or MaxTime, or against the spec's        *)
(* assumptions on brokers) sets `outside` to the reason instead.           *)
(* Timed steps first let the spec's clock Tick up to the step's `now`.     *)
(***************************************************************************)
EXTENDS BrokerLifecycle, TLC

CONSTANT TraceSet   \* <<[init |-> spec state, steps |-> <<step, ...>>], ...>>

VARIABLES t,        \* the trace being validated: an index of TraceSet
          i,        \* how many of its steps the spec has explained
          outside   \* "" or why the next step is outside the spec's bounds

Steps == TraceSet[t].steps
S == Steps[i + 1]

(* A marker line per explained prefix, read back by kraftspec.spec.trace_validation. *)
Report(k, why) == PrintT(<<"kraftspec-trace", t, k, why>>)

TraceInit ==
    /\ t \in DOMAIN TraceSet
    /\ Init
    /\ LET x == TraceSet[t].init IN
       /\ clock = x.clock /\ nextOffset = x.nextOffset /\ reg = x.reg /\ hb = x.hb
       /\ sessions = x.sessions /\ part = x.part /\ lastReply = x.lastReply
    /\ i = 0
    /\ outside = ""
    /\ Report(0, "")

Writes(s) == s.act \in {"RegisterBroker", "Heartbeat", "FenceStaleBroker", "UnregisterBroker"}

(* Why the spec cannot judge step s from the current state ("" when it can). *)
OutsideReason(s) ==
    CASE s.now > MaxTime -> "its time is beyond MaxTime"
      [] clock > s.now -> "its time is before the clock (the spec's clock never goes back)"
      [] Writes(s) /\ nextOffset >= MaxOffset -> "the log end has reached MaxOffset"
      [] s.act = "Heartbeat" /\ s.e \notin KnownEpochs(s.b) ->
            "the broker heartbeats with an epoch it never had (the spec's assumption on brokers)"
      [] s.act = "Heartbeat" /\ s.off \notin ReportableOffsets(s.b) ->
            "the broker reports an offset the spec's brokers do not report (the spec's assumption on brokers)"
      [] s.act = "Heartbeat" /\ ~NeverRetractsShutdown(s.b, s.e, s.ws) ->
            "the broker retracts a controlled shutdown (the spec's assumption on brokers)"
      [] OTHER -> ""

(* The reference refused the request: the spec's action is disabled and nothing changes. *)
Refused(A) == ~ENABLED A /\ UNCHANGED vars
Outcome(A, ok) == CASE ok = "yes" -> A [] ok = "no" -> Refused(A) [] OTHER -> A \/ Refused(A)
AnyFence == \E b \in Brokers, e \in 0..MaxOffset : FenceStaleBroker(b, e)

(* Heartbeat's accepting branch: the broker is registered with this epoch. *)
Accepted(b, e) == Registered(b) /\ reg[b].epoch = e

StepAction(s) ==
    CASE s.act = "RegisterBroker" ->
            /\ Outcome(RegisterBroker(s.b, s.i), s.ok)
            /\ (s.ok = "yes" /\ s.ep # -2) => reg'[s.b].epoch = s.ep
      [] s.act = "Heartbeat" ->
            /\ Heartbeat(s.b, s.e, s.off, s.wf, s.ws)
            /\ s.ok = "yes" => Accepted(s.b, s.e) /\ (s.reply # "?" => lastReply'[s.b] = s.reply)
            /\ s.ok = "no" => ~Accepted(s.b, s.e)
      [] s.act = "FenceStaleBroker" ->
            IF s.b = -1 THEN Outcome(AnyFence, s.ok) ELSE Outcome(FenceStaleBroker(s.b, s.e), s.ok)
      [] s.act = "UnregisterBroker" -> Outcome(UnregisterBroker(s.b), s.ok)
      [] s.act = "Failover" -> Failover
      [] s.act = "Tick" -> UNCHANGED vars

(* The outputs and post-state fields the trace states, against the spec's successor. *)
PostOK(s) ==
    /\ s.nrec >= 0 => nextOffset' = nextOffset + s.nrec
    /\ "clock" \in s.stated => clock' = s.post.clock
    /\ "nextOffset" \in s.stated => nextOffset' = s.post.nextOffset
    /\ "reg" \in s.stated =>
          \A b \in Brokers : [epoch |-> reg'[b].epoch, inc |-> reg'[b].inc, fenced |-> reg'[b].fenced,
                              ics |-> reg'[b].ics] = s.post.reg[b]
    /\ "hb" \in s.stated => hb' = s.post.hb
    /\ "sessions" \in s.stated => {<<p[1], p[2], sessions'[p]>> : p \in DOMAIN sessions'} = s.post.sessions
    /\ "part" \in s.stated => part' = s.post.part

TraceNext ==
    /\ outside = ""
    /\ i < Len(Steps)
    /\ IF OutsideReason(S) # ""
       THEN /\ outside' = OutsideReason(S)
            /\ UNCHANGED <<vars, t, i>>
            /\ Report(i, outside')
       ELSE IF clock < S.now
       THEN /\ Tick
            /\ UNCHANGED <<t, i, outside>>
       ELSE /\ StepAction(S)
            /\ PostOK(S)
            /\ i' = i + 1
            /\ UNCHANGED <<t, outside>>
            /\ Report(i', "")

TraceSpec == TraceInit /\ [][TraceNext]_<<vars, t, i, outside>>
=============================================================================
