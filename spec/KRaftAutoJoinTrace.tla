------------------------- MODULE KRaftAutoJoinTrace -------------------------
(***************************************************************************)
(* Trace validation for KRaftAutoJoin (as KRaftShutdownTrace does for      *)
(* KRaftShutdown): raft traces of the spec's node Local, each step         *)
(* constrained to the spec's action for its input. TLC explores every      *)
(* trace of TraceSet at once (the trace index t is chosen in the initial   *)
(* state); i counts the steps of trace t the spec has explained.           *)
(*                                                                         *)
(* A step (kraftspec.spec.trace_validation_autojoin) is one input:         *)
(*   tick         Poll (one ms later);                                     *)
(*   fetch        HandleFetchResponse (entry: the node's entry in the      *)
(*                VotersRecord it carries, "" for none);                   *)
(*   voterChange  HandleVoterChangeResponse(error);                        *)
(*   updateVoter  HandleUpdateVoterResponse(error).                        *)
(* Then what the trace states must be the successor's: the request the     *)
(* step's poll sent to the leader ("none" if none), the role (Follower),   *)
(* epoch (1), leader (Leader) and the clock. An input the spec's           *)
(* environment never gives (an answer to no request outstanding, an error *)
(* or a VotersRecord its leader does not send, time past MaxTime or past a *)
(* voter's fetch timeout, ...) sets `outside` instead.                     *)
(***************************************************************************)
EXTENDS KRaftAutoJoin, Sequences, TLC

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
       /\ kraftVersion = x.kraftVersion /\ entry = x.entry /\ canBecomeVoter = x.canBecomeVoter
       /\ autoJoin = x.autoJoin /\ now = x.now /\ fetchDeadline = x.fetchDeadline
       /\ updateDeadline = x.updateDeadline /\ updatedLeader = x.updatedLeader /\ inflight = x.inflight
    /\ i = 0
    /\ outside = ""
    /\ Report(0, "")

(* The request awaited that an answer of this kind answers. *)
Answers(s) ==
    CASE s.kind = "fetch" -> inflight = "Fetch"
      [] s.kind = "voterChange" -> inflight = s.api
      [] s.kind = "updateVoter" -> inflight = "UpdateRaftVoter"

(* Why the spec cannot judge step s from this state ("" when it can): inputs its environment never gives. *)
OutsideReason(s) ==
    CASE s.kind = "tick" /\ s.now # now + 1 -> "a poll other than one ms later (the spec's time steps by 1)"
      [] s.kind = "tick" /\ now >= MaxTime -> "the clock reaches past MaxTime"
      [] s.kind = "tick" /\ IsVoter(entry) /\ now + 1 >= fetchDeadline ->
             "a voter's fetch timeout (the spec's leader answers in time)"
      [] s.kind # "tick" /\ ~Answers(s) -> "an answer to no request outstanding"
      [] s.kind = "fetch" /\ s.entry # "" /\ (kraftVersion = 0 \/ entry = "same" \/ s.entry # Fetched(entry)) ->
             "a VotersRecord the spec's leader does not send"
      [] s.kind = "voterChange" /\ s.error \notin VoterChangeErrors ->
             "an AddRaftVoter or RemoveRaftVoter error not modelled"
      [] s.kind = "updateVoter" /\ s.error \notin UpdateVoterErrors -> "an UpdateRaftVoter error not modelled"
      [] OTHER -> ""

StepAction(s) ==
    CASE s.kind = "tick" -> Poll
      [] s.kind = "fetch" -> HandleFetchResponse(s.entry # "")
      [] s.kind = "voterChange" -> HandleVoterChangeResponse(s.error)
      [] s.kind = "updateVoter" -> HandleUpdateVoterResponse(s.error)

(* The request a step's poll sent: a tick's when the request outstanding changed, an answer's whatever it left. *)
Sent(s) == IF s.kind = "tick" THEN IF inflight' = inflight THEN "none" ELSE inflight' ELSE inflight'

(* What the trace states of the step, against the spec's successor. *)
PostOK(s) ==
    /\ "sent" \in s.stated => Sent(s) = s.post.sent
    /\ "role" \in s.stated => s.post.role = "Follower"
    /\ "epoch" \in s.stated => s.post.epoch = 1
    /\ "leader" \in s.stated => s.post.leader = Leader
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
