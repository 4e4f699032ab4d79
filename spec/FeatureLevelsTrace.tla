------------------------- MODULE FeatureLevelsTrace -------------------------
(***************************************************************************)
(* Trace validation for FeatureLevels (as BrokerLifecycleTrace does for    *)
(* BrokerLifecycle): the spec's actions, constrained to the steps of       *)
(* recorded broker traces whose controller is the spec's. TLC explores     *)
(* every trace of TraceSet at once (the trace index t is chosen in the     *)
(* initial state); i counts the steps of trace t the spec has explained.   *)
(*                                                                         *)
(* A step names a spec action and its arguments (kraftspec's trace         *)
(* vocabulary mapped by kraftspec.spec.trace_validation_features):         *)
(* RegisterBroker(b, s), UnregisterBroker(b) or UpdateFeatures(req). What  *)
(* the implementation reported is checked against the spec's successor:    *)
(* whether the request succeeded (`ok`: a refused request is one the spec  *)
(* has no step for), the number of records written (`nrec`) and the        *)
(* post-state variables the trace states (`post`). A step at MaxOffset     *)
(* sets `outside` instead.                                                 *)
(***************************************************************************)
EXTENDS FeatureLevels, Sequences, TLC

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
       fin = x.fin /\ reg = x.reg /\ minIsr = x.minIsr /\ nextOffset = x.nextOffset
    /\ i = 0
    /\ outside = ""
    /\ Report(0, "")

(* The reference refused the request: the spec's action is disabled and nothing changes. *)
Refused(A) == ~ENABLED A /\ UNCHANGED vars
Outcome(A, ok) == CASE ok = "yes" -> A [] ok = "no" -> Refused(A) [] OTHER -> A \/ Refused(A)

StepAction(s) ==
    CASE s.act = "RegisterBroker" -> Outcome(RegisterBroker(s.b, s.s), s.ok)
      [] s.act = "UnregisterBroker" -> Outcome(UnregisterBroker(s.b), s.ok)
      [] s.act = "UpdateFeatures" -> Outcome(UpdateFeatures(s.req), s.ok)

(* The outputs and post-state fields the trace states, against the spec's successor. *)
PostOK(s) ==
    /\ s.nrec >= 0 => nextOffset' = nextOffset + s.nrec
    /\ "fin" \in s.stated => fin' = s.post.fin
    /\ "nextOffset" \in s.stated => nextOffset' = s.post.nextOffset

TraceNext ==
    /\ outside = ""
    /\ i < Len(Steps)
    /\ IF nextOffset >= MaxOffset
       THEN /\ outside' = "the log end has reached MaxOffset"
            /\ UNCHANGED <<vars, t, i>>
            /\ Report(i, outside')
       ELSE /\ StepAction(S)
            /\ PostOK(S)
            /\ i' = i + 1
            /\ UNCHANGED <<t, outside>>
            /\ Report(i', "")

TraceSpec == TraceInit /\ [][TraceNext]_<<vars, t, i, outside>>
=============================================================================
