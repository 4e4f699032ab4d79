-------------------------- MODULE KRaftQuorumTrace --------------------------
(***************************************************************************)
(* Trace validation for KRaftQuorum (the technique of etcd's and CCF's     *)
(* Raft trace validation, as BrokerLifecycleTrace does for the broker): a  *)
(* raft trace is ONE node's view, so the spec's own per-node actions judge *)
(* that node N and the other nodes are the environment.  TLC explores      *)
(* every trace of TraceSet at once (the trace index t is chosen in the     *)
(* initial state); i counts the steps of trace t the spec has explained.   *)
(*                                                                         *)
(* N starts in the trace's initial state (its variables mapped by          *)
(* kraftspec.spec.trace_validation_raft), the other nodes in Init's; the   *)
(* bag is empty between steps.  A step (kind) is explained in phases:      *)
(*   deliver  the environment puts the input message m in the bag (msg);   *)
(*   act      N's handler of m (OnVoteRequest, OnVoteResponse,             *)
(*            OnBeginQuorumEpoch, OnFetchRequest, OnFetchResponse), or     *)
(*            ClientAppend (append), Crash (restart), nothing (tick,       *)
(*            clock, prevote, noappend: a refused append, prevotereq:      *)
(*            another node's pre-vote request, whose answer is not judged);*)
(*   take     the bag holds exactly the reply the trace states (its stated *)
(*            fields), and the environment takes it;                       *)
(*   timer    N's timer may fire: a voter enters its pre-vote (pre), whose *)
(*            majority (prevote) is the spec's Timeout (the spec takes the *)
(*            pre-vote of KIP-996 as won), or a Resigned node's Timeout;   *)
(*   send     each request the trace states N sent, in order, is the       *)
(*            message the spec's RequestVote, SendBeginQuorumEpoch or      *)
(*            SendFetch of N puts in the (empty) bag; then N's variables   *)
(*            match the stated post-state (outputs stated in another shape *)
(*            than the reference's, not readable, match nothing).          *)
(* While N is in its pre-vote the spec's N is still in its previous role  *)
(* (its handlers answer for N; its epoch and log are compared, its role    *)
(* once N leaves the pre-vote).                                            *)
(* What the spec does not model (a lost pre-vote, check quorum, bounds    *)
(* reached, ...) sets `outside` instead.                                   *)
(***************************************************************************)
EXTENDS KRaftQuorum, TLC

CONSTANT TraceSet   \* <<[init |-> [node |-> N, role |-> ..., ...], steps |-> <<step, ...>>], ...>>

VARIABLES t,        \* the trace being validated: an index of TraceSet
          i,        \* how many of its steps the spec has explained
          outside,  \* "" or why the next step is outside the spec's bounds
          ph,       \* the phase of step i + 1: "deliver", "act", "take", "timer", "send" or "sent"
          k,        \* how many of the step's requests the spec has sent
          pre       \* N is in its pre-vote (Prospective), which the spec takes as won

Steps == TraceSet[t].steps
S == Steps[i + 1]
N == TraceSet[t].init.node
traceVars == <<t, i, outside, ph, k, pre>>

(* A marker line per explained prefix, read back by kraftspec.spec.trace_validation. *)
Report(n, why) == PrintT(<<"kraftspec-trace", t, n, why>>)

TraceInit ==
    /\ t \in DOMAIN TraceSet
    /\ LET x == TraceSet[t].init
           Own(v, init) == [p \in Nodes |-> IF p = x.node THEN v ELSE init]
       IN /\ role = Own(x.role, "Unattached")
          /\ epoch = Own(x.epoch, 0)
          /\ leader = Own(x.leader, NoNode)
          /\ voted = Own(x.voted, NoNode)
          /\ granted = Own(x.granted, {})
          /\ hw = Own(x.hw, -1)
          /\ log = Own(x.log, <<>>)
          /\ flushed = Own(x.flushed, 0)
          /\ endOff = Own(x.endOff, NoOffsets)
    /\ msgs = <<>>
    /\ committed = <<>>
    /\ faults = 0
    /\ timeouts = 0
    /\ i = 0
    /\ outside = ""
    /\ ph = "deliver"
    /\ k = 0
    /\ pre = FALSE
    /\ Report(0, "")

OneMessage(m) == [x \in {m} |-> 1]
(* Message x has every field the trace states of message r (the replay compares only those too). *)
Matches(x, r) == DOMAIN r \subseteq DOMAIN x /\ \A f \in DOMAIN r : x[f] = r[f]
(* The bag b holds one message, which matches r. *)
HoldsOne(b, r) == \E x \in DOMAIN b : b = OneMessage(x) /\ Matches(x, r)

(* The spec's Timeout of N is disabled by its bounds only. *)
TimeoutBounded ==
    \/ epoch[N] >= MaxEpoch
    \/ timeouts >= MaxTimeouts
    \/ role[N] # "Resigned" /\ Len(log[N]) >= MaxLogLen

(* A response no outstanding request awaits (kraftspec.spec.trace_validation_raft): both drop it, so a change of *)
(* role in its step comes from the node's poll.                                                                 *)
Unanswered(m) == \/ m.type = "VoteResp" /\ m.reqEpoch = -1
                 \/ m.type = "FetchResp" /\ m.offset = -1

(* Why the spec cannot judge step s from the current state ("" when it can). *)
OutsideReason(s) ==
    CASE pre /\ (s.kind \in {"prevote", "tick", "prevotereq"} \/ (s.kind = "msg" /\ Unanswered(s.m)))
             /\ s.role \in {"Unattached", "Follower"} ->
            "the node loses its pre-vote (the spec takes the pre-vote as won)"
      [] ~pre /\ s.kind = "prevote" -> "a pre-vote response reaches a node that is not in its pre-vote"
      [] s.kind = "prevotereq" /\ s.m.epoch > epoch[N] ->
            "a pre-vote request of a newer epoch (it moves the node; the spec takes pre-votes as won)"
      [] s.kind = "prevote" /\ s.role = "Candidate" /\ TimeoutBounded ->
            "the node's election is beyond MaxEpoch, MaxTimeouts or MaxLogLen"
      [] s.kind = "tick" /\ role[N] = "Resigned" /\ s.role = "Unattached" /\ TimeoutBounded ->
            "the resigned node's next epoch is beyond MaxEpoch or MaxTimeouts"
      [] s.kind = "append" /\ role[N] = "Leader" /\ Len(log[N]) >= MaxLogLen -> "the log has reached MaxLogLen"
      [] s.kind = "restart" /\ faults >= MaxFaults -> "the crashes have reached MaxFaults"
      [] role[N] = "Leader" /\ s.role = "Resigned" /\ s.kind # "restart" ->
            "the leader resigns on check quorum (the spec's leaders never resign)"
      [] OTHER -> ""

Handle(m) ==
    CASE m.type = "VoteReq" -> OnVoteRequest(N, m)
      [] m.type = "VoteResp" -> OnVoteResponse(N, m)
      [] m.type = "BeginEpoch" -> OnBeginQuorumEpoch(N, m)
      [] m.type = "FetchReq" -> OnFetchRequest(N, m)
      [] m.type = "FetchResp" -> OnFetchResponse(N, m)

Act(s) ==
    CASE s.kind = "msg" -> Handle(s.m)
      [] s.kind = "append" -> ClientAppend(N)
      [] s.kind = "noappend" -> role[N] # "Leader" /\ UNCHANGED vars
      [] s.kind = "restart" -> Crash(N)
      [] OTHER -> UNCHANGED vars

(* N's timer: nothing, the start of its pre-vote, the won pre-vote (Timeout) or a Resigned node's Timeout; *)
(* or N leaves its pre-vote for a newer epoch or leader, or a restart, handled by the spec's N (whose      *)
(* timer never fired).                                                                                 *)
Timer(s) ==
    \/ UNCHANGED <<vars, pre>>
    \/ /\ ~pre /\ s.kind \in {"tick", "msg", "prevotereq"}
       /\ N \in Voters /\ role[N] \in {"Unattached", "Follower", "Candidate"}
       /\ pre' = TRUE
       /\ UNCHANGED vars
    \/ /\ pre /\ s.kind = "prevote" /\ s.m.granted
       /\ Timeout(N)
       /\ pre' = FALSE
    \/ /\ ~pre /\ s.kind = "tick" /\ role[N] = "Resigned"
       /\ Timeout(N)
       /\ UNCHANGED pre
    \/ /\ pre /\ s.kind \in {"msg", "restart"}
       /\ pre' = FALSE
       /\ UNCHANGED vars

SendAction(r) ==
    CASE r.type = "VoteReq" -> RequestVote(N, r.dst)
      [] r.type = "BeginEpoch" -> SendBeginQuorumEpoch(N, r.dst)
      [] r.type = "FetchReq" -> SendFetch(N, r.dst)

EpochCache(l) == {<<l[p], p - 1>> : p \in {q \in DOMAIN l : q = 1 \/ l[q - 1] # l[q]}}

(* N's variables against the stated post-state; during the pre-vote only what Prospective keeps. *)
PostOK(s) ==
    LET st == s.stated
        p == s.post
    IN /\ "epoch" \in st => epoch[N] = p.epoch
       /\ "log" \in st => log[N] = p.log
       /\ "flushed" \in st => flushed[N] = p.flushed
       /\ "leo" \in st => Len(log[N]) = p.leo
       /\ "lfe" \in st => LastEpoch(log[N]) = p.lfe
       /\ "cache" \in st => EpochCache(log[N]) = p.cache
       /\ "qepoch" \in st => epoch[N] = p.qepoch
       /\ IF pre
          THEN s.role \in {"Prospective", "?"}
          ELSE /\ s.role # "Prospective"
               /\ "role" \in st => role[N] = p.role
               /\ "leader" \in st => leader[N] = p.leader
               /\ "voted" \in st => voted[N] = p.voted
               /\ "hw" \in st => hw[N] = p.hw

TraceNext ==
    /\ outside = ""
    /\ i < Len(Steps)
    /\ CASE ph = "deliver" ->
              IF OutsideReason(S) # ""
              THEN /\ outside' = OutsideReason(S)
                   /\ UNCHANGED <<vars, t, i, ph, k, pre>>
                   /\ Report(i, outside')
              ELSE /\ msgs' = IF S.kind = "msg" THEN OneMessage(S.m) ELSE msgs
                   /\ ph' = "act"
                   /\ UNCHANGED <<role, epoch, leader, voted, granted, hw, log, flushed, endOff, committed, faults,
                                  timeouts, t, i, outside, k, pre>>
         [] ph = "act" ->
              /\ Act(S)
              /\ ph' = "take"
              /\ UNCHANGED <<t, i, outside, k, pre>>
         [] ph = "take" ->
              /\ IF S.reply = <<>> THEN msgs = <<>> ELSE HoldsOne(msgs, S.reply[1])
              /\ msgs' = <<>>
              /\ ph' = "timer"
              /\ UNCHANGED <<role, epoch, leader, voted, granted, hw, log, flushed, endOff, committed, faults,
                             timeouts, t, i, outside, k, pre>>
         [] ph = "timer" ->
              /\ Timer(S)
              /\ ph' = "send"
              /\ UNCHANGED <<t, i, outside, k>>
         [] ph = "send" /\ k < Len(S.reqs) ->
              /\ SendAction(S.reqs[k + 1])
              /\ HoldsOne(msgs', S.reqs[k + 1])
              /\ ph' = "sent"
              /\ UNCHANGED <<t, i, outside, k, pre>>
         [] ph = "sent" ->
              /\ msgs' = <<>>
              /\ k' = k + 1
              /\ ph' = "send"
              /\ UNCHANGED <<role, epoch, leader, voted, granted, hw, log, flushed, endOff, committed, faults,
                             timeouts, t, i, outside, pre>>
         [] ph = "send" /\ k = Len(S.reqs) ->
              /\ S.readable
              /\ S.prevotes => pre
              /\ PostOK(S)
              /\ i' = i + 1
              /\ ph' = "deliver"
              /\ k' = 0
              /\ UNCHANGED <<vars, t, outside, pre>>
              /\ Report(i', "")

TraceSpec == TraceInit /\ [][TraceNext]_<<vars, traceVars>>
=============================================================================
