------------------------- MODULE KRaftRequestsTrace -------------------------
(***************************************************************************)
(* Trace validation for KRaftRequests (as KRaftShutdownTrace does for      *)
(* KRaftShutdown): raft traces of the spec's node Local, each step         *)
(* constrained to the spec's action for its input, with the bootstrap draw *)
(* the step states (modulo N, as the reference takes it). TLC explores     *)
(* every trace of TraceSet at once (the trace index t is chosen in the     *)
(* initial state); i counts the steps of trace t the spec has explained.   *)
(*                                                                         *)
(* A step (kraftspec.spec.trace_validation_requests) is one input:         *)
(*   start        a step of the prefix that brings the node to its initial *)
(*                state (its first poll; the Prospective's EndQuorumEpoch  *)
(*                before it): nothing, the initial state follows it;       *)
(*   tick         Poll(draw) one ms later;                                 *)
(*   fetchFailed  HandleFetchResponseFailed(d, draw);                      *)
(*   fetch        HandleFetchResponse(d, l, draw);                         *)
(*   voteFailed   HandleVoteResponseFailed(d, draw);                       *)
(*   vote         HandleVoteResponse(d, granted, draw).                    *)
(* Then the post-state fields the trace states (role, epoch, leader, the   *)
(* clock) must be the successor's. The node's sends are not stated as     *)
(* spec variables: the spec's state follows them (what is awaited where), *)
(* so an answer from a destination the spec awaits nothing from, or to a  *)
(* request timed out, is outside its environment, as are a poll at the    *)
(* same time or past MaxTime, an answer of another epoch and one naming a *)
(* leader the spec's environment does not name.                           *)
(***************************************************************************)
EXTENDS KRaftRequests, Sequences, TLC

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
       /\ role = x.role /\ epoch = x.epoch /\ leader = x.leader /\ inflight = x.inflight /\ failed = x.failed
       /\ rejected = x.rejected /\ now = x.now
    /\ i = 0
    /\ outside = ""
    /\ Report(0, "")

Answers == {"fetchFailed", "fetch", "voteFailed", "vote"}

(* Why the spec cannot judge step s from this state ("" when it can): inputs its environment never gives. *)
OutsideReason(s) ==
    CASE s.kind = "tick" /\ s.now # now + 1 -> "a poll other than one ms later (the spec's time steps by 1)"
      [] s.kind = "tick" /\ now >= MaxTime -> "the clock reaches past MaxTime"
      [] s.kind \in Answers /\ inflight[s.d] = None -> "an answer to no request awaited (none sent, or timed out)"
      [] s.kind \in {"fetch", "vote"} /\ s.e # epoch -> "an answer of another epoch"
      [] s.kind = "fetch" /\ ~(s.l = leader \/ (role = "Unattached" /\ s.d # Local /\ s.l \in Others)) ->
             "a Fetch answer naming a leader the spec's environment does not name"
      [] s.kind = "vote" /\ s.granted /\ role = "Candidate" -> "a standard vote granted (the spec grants none)"
      [] OTHER -> ""

StepAction(s) ==
    CASE s.kind = "start" -> UNCHANGED vars
      [] s.kind = "tick" -> Poll(s.draw)
      [] s.kind = "fetchFailed" -> HandleFetchResponseFailed(s.d, s.draw)
      [] s.kind = "fetch" -> HandleFetchResponse(s.d, s.l, s.draw)
      [] s.kind = "voteFailed" -> HandleVoteResponseFailed(s.d, s.draw)
      [] s.kind = "vote" -> HandleVoteResponse(s.d, s.granted, s.draw)

(* The post-state fields the trace states, against the spec's successor. *)
PostOK(s) ==
    /\ "role" \in s.stated => role' = s.post.role
    /\ "epoch" \in s.stated => epoch' = s.post.epoch
    /\ "leader" \in s.stated => leader' = s.post.leader
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
