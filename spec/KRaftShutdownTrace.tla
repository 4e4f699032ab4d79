------------------------- MODULE KRaftShutdownTrace -------------------------
(***************************************************************************)
(* Trace validation for KRaftShutdown (as BrokerLifecycleTrace does for    *)
(* BrokerLifecycle): raft traces of the spec's node Local, each step       *)
(* constrained to the spec's action for its input. TLC explores every      *)
(* trace of TraceSet at once (the trace index t is chosen in the initial   *)
(* state); i counts the steps of trace t the spec has explained.           *)
(*                                                                         *)
(* A step (kraftspec.spec.trace_validation_shutdown) is one input:         *)
(*   start        the only voter's first poll, which the initial state     *)
(*                already follows: nothing;                                *)
(*   shutdown     HandleShutdown;                                          *)
(*   tick         Poll when one ms later, nothing (a poll that sends the   *)
(*                requests the environment answers next) at the same time; *)
(*   endEpoch     HandleEndQuorumEpochRequest(succ);                       *)
(*   beginEpoch   HandleBeginQuorumEpochRequest(l, e);                     *)
(*   vote         HandleVoteResponsePreVote(granted) of a Prospective,     *)
(*                HandleVoteResponse of a granted vote to a Candidate, or  *)
(*                nothing (an answer short of a majority);                 *)
(*   epochAnswer  HandleQuorumEpochResponse(v);                            *)
(*   append       HandleAppend.                                            *)
(* Then the post-state fields the trace states (role, epoch, leader, log   *)
(* end, the shutdown's outcome, the clock) must be the successor's.        *)
(* Requests on the wire are not modelled (the spec's environment answers   *)
(* at once), so the node's sends are not judged. An input the spec's       *)
(* environment never gives (an EndQuorumEpoch of another leader or epoch,  *)
(* a BeginQuorumEpoch of an epoch the spec does not offer, time past       *)
(* MaxTime, ...) sets `outside` instead.                                   *)
(***************************************************************************)
EXTENDS KRaftShutdown, TLC

CONSTANT TraceSet   \* <<[init |-> spec state, steps |-> <<step, ...>>], ...>>

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
    /\ LET x == TraceSet[t].init IN
       /\ voters = x.voters /\ role = x.role /\ epoch = x.epoch /\ leader = x.leader /\ shutdown = x.shutdown
       /\ deadline = x.deadline /\ now = x.now /\ backoff = x.backoff /\ unacked = x.unacked /\ logEnd = x.logEnd
    /\ i = 0
    /\ outside = ""
    /\ Report(0, "")

(* Why the spec cannot judge step s from this state ("" when it can): inputs its environment never gives. *)
OutsideReason(s) ==
    CASE ~Running -> "an input after the shutdown finished (the node refuses it; the spec takes none)"
      [] s.kind = "tick" /\ s.now = now + 1 /\ now >= MaxTime -> "the clock reaches past MaxTime"
      [] s.kind = "tick" /\ s.now \notin {now, now + 1} -> "a poll more than one ms later (the spec's time steps by 1)"
      [] s.kind = "endEpoch" /\ <<s.l, s.e>> # <<leader, epoch>> -> "an EndQuorumEpoch of another leader or epoch"
      [] s.kind = "beginEpoch" /\ ~(s.e = epoch + 1 \/ (s.e = epoch /\ leader = None)) ->
             "a BeginQuorumEpoch of an epoch the spec's environment does not send"
      [] s.kind = "beginEpoch" /\ s.e > MaxEpoch -> "an epoch past MaxEpoch"
      [] s.kind = "vote" /\ role = "Prospective" /\ s.granted /\ epoch >= MaxEpoch -> "an epoch past MaxEpoch"
      [] s.kind = "append" /\ logEnd >= MaxLog -> "the log end has reached MaxLog"
      [] OTHER -> ""

StepAction(s) ==
    CASE s.kind = "start" -> UNCHANGED vars
      [] s.kind = "shutdown" -> HandleShutdown
      [] s.kind = "tick" -> IF s.now = now + 1 THEN Poll ELSE UNCHANGED vars
      [] s.kind = "endEpoch" -> HandleEndQuorumEpochRequest(s.succ)
      [] s.kind = "beginEpoch" -> HandleBeginQuorumEpochRequest(s.l, s.e)
      [] s.kind = "vote" -> \/ role = "Prospective" /\ HandleVoteResponsePreVote(s.granted)
                            \/ role = "Candidate" /\ s.granted /\ HandleVoteResponse
                            \/ UNCHANGED vars
      [] s.kind = "epochAnswer" -> HandleQuorumEpochResponse(s.v)
      [] s.kind = "append" -> HandleAppend

(* The post-state fields the trace states, against the spec's successor. *)
PostOK(s) ==
    /\ "role" \in s.stated => role' = s.post.role
    /\ "epoch" \in s.stated => epoch' = s.post.epoch
    /\ "leader" \in s.stated => leader' = s.post.leader
    /\ "logEnd" \in s.stated => logEnd' = s.post.logEnd
    /\ "shutdown" \in s.stated => shutdown' = s.post.shutdown
    /\ "now" \in s.stated => now' = s.post.now

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
