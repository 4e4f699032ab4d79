-------------------------- MODULE KRaftVotersTrace --------------------------
(***************************************************************************)
(* Trace validation for KRaftVoters (as KRaftShutdownTrace does for        *)
(* KRaftShutdown): raft traces of the spec's node Local, each step         *)
(* constrained to the spec's action for its input. TLC explores every      *)
(* trace of TraceSet at once (the trace index t is chosen in the initial   *)
(* state); i counts the steps of trace t the spec has explained.           *)
(*                                                                         *)
(* A step (kraftspec.spec.trace_validation_voters) is one input; `must`    *)
(* says the node's answer shows it took the input, else the spec may also  *)
(* take no action (a refused or ignored input, or one whose effect only    *)
(* the stated post-state shows):                                           *)
(*   start        none: the election of the spec's initial leader (Init);  *)
(*   add          HandleAddVoterRequest(r) (must: no answer at once);      *)
(*   remove       HandleRemoveVoterRequest(r) (likewise);                  *)
(*   update       HandleUpdateVoterRequest(r);                             *)
(*   upgrade      MaybeAppendUpgradedKraftVersion (must: upgraded);        *)
(*   apiVersions  HandleAddVoterApiVersions(c) of the pending add of r,    *)
(*                taken when its ApiVersions are still awaited; caught up  *)
(*                only when r may join (supports kraft.version 1 and the   *)
(*                node sent no refusal);                                   *)
(*   fetchReq     NextHighWatermark(m), m at most the fetch offset o;      *)
(*   fetchResp    TruncateControlRecords(o) (a diverging epoch's end);     *)
(*   beginEpoch   LoseLeadership (must: accepted by a Leader);             *)
(*   tick         PendingOperationExpires or LoseLeadership;               *)
(*   vote         BecomeLeader (must: the node sends BeginQuorumEpoch);    *)
(*   append       ClientAppend (must: appended).                           *)
(* Then the post-state fields the trace states (the log, its end and       *)
(* start, the role, a Leader's high watermark) must be the successor's.    *)
(* A step the spec's bounds stop (MaxLog, MaxChanges, MaxElections) sets   *)
(* `outside` instead.                                                      *)
(***************************************************************************)
EXTENDS KRaftVoters, TLC

CONSTANT TraceSet   \* <<[init |-> [bootstrapVersion |-> v], steps |-> <<step, ...>>], ...>>

VARIABLES t,        \* the trace being validated: an index of TraceSet
          i,        \* how many of its steps the spec has explained
          outside   \* "" or why the next step is outside the spec's bounds

Steps == TraceSet[t].steps
S == Steps[i + 1]

(* A marker line per explained prefix, read back by kraftspec.spec.trace_validation. *)
Report(n, why) == PrintT(<<"kraftspec-trace", t, n, why>>)

TraceInit ==
    /\ t \in DOMAIN TraceSet
    /\ Init
    /\ bootstrapVersion = TraceSet[t].init.bootstrapVersion
    /\ i = 0
    /\ outside = ""
    /\ Report(0, "")

(* Whether the ApiVersions answer of step s is the one the pending add of its source awaits. *)
Awaited(s) == pending.kind = "add" /\ pending.voter = s.r /\ pending.offset = None

(* Why the spec cannot judge step s from this state ("" when it can): an action its bounds stop. *)
OutsideReason(s) ==
    CASE s.kind \in {"add", "remove", "update"} /\ s.must /\ changes >= MaxChanges -> "a voter change past MaxChanges"
      [] s.kind \in {"remove", "append"} /\ s.must /\ LogEnd >= MaxLog -> "the log end has reached MaxLog"
      [] s.kind = "upgrade" /\ s.must /\ LogEnd + 2 > MaxLog -> "the log end would pass MaxLog"
      [] s.kind = "apiVersions" /\ Awaited(s) /\ s.joins /\ LogEnd >= MaxLog -> "the log end has reached MaxLog"
      [] s.kind = "vote" /\ s.must /\ elections >= MaxElections -> "an election past MaxElections"
      [] s.kind = "vote" /\ s.must /\ LogEnd + Len(StartOfEpochBatch) > MaxLog -> "the log end would pass MaxLog"
      [] OTHER -> ""

(* The spec's action for step s, or (when s.must is FALSE) none. *)
StepAction(s) ==
    \/ CASE s.kind = "start" -> FALSE
         [] s.kind = "add" -> HandleAddVoterRequest(s.r)
         [] s.kind = "remove" -> HandleRemoveVoterRequest(s.r)
         [] s.kind = "update" -> HandleUpdateVoterRequest(s.r)
         [] s.kind = "upgrade" -> MaybeAppendUpgradedKraftVersion
         [] s.kind = "apiVersions" -> Awaited(s) /\ \E c \in BOOLEAN : (c => s.joins) /\ HandleAddVoterApiVersions(c)
         [] s.kind = "fetchReq" -> \E m \in 1..s.o : NextHighWatermark(m)
         [] s.kind = "fetchResp" -> s.o >= 0 /\ TruncateControlRecords(s.o)
         [] s.kind = "beginEpoch" -> LoseLeadership
         [] s.kind = "tick" -> PendingOperationExpires \/ LoseLeadership
         [] s.kind = "vote" -> BecomeLeader
         [] s.kind = "append" -> ClientAppend
    \/ /\ ~s.must
       /\ ~(s.kind = "apiVersions" /\ Awaited(s))
       /\ UNCHANGED vars
    \/ /\ s.kind = "beginEpoch" /\ s.must /\ role = "Follower"
       /\ UNCHANGED vars

(* The post-state fields the trace states, against the spec's successor. *)
PostOK(s) ==
    /\ "role" \in s.stated => role' = s.post.role
    /\ "hw" \in s.stated => (IF role' = "Leader" /\ hw' > epochStart' THEN hw' ELSE None) = s.post.hw
    /\ "logEnd" \in s.stated => logStart' + Len(log') = s.post.logEnd
    /\ "logStart" \in s.stated => logStart' = s.post.logStart
    /\ "log" \in s.stated => log' = s.post.log

TraceNext ==
    /\ outside = ""
    /\ i < Len(Steps)
    /\ IF OutsideReason(S) # ""
       THEN /\ outside' = OutsideReason(S)
            /\ UNCHANGED <<vars, t, i>>
            /\ Report(i, outside')
       ELSE /\ StepAction(S)
            /\ PostOK(S)
            /\ i' = i + 1
            /\ UNCHANGED <<t, outside>>
            /\ Report(i', "")

TraceSpec == TraceInit /\ [][TraceNext]_<<vars, t, i, outside>>
=============================================================================
