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
(*            OnBeginQuorumEpoch, OnFetchRequest, OnFetchResponse,         *)
(*            OnFetchSnapshotRequest, OnFetchSnapshotResponse,             *)
(*            kraft.version 0's OnUpdateVoterRequest and                   *)
(*            OnUpdateVoterResponse; pre-votes and their answers           *)
(*            included), or ClientAppend (append),                         *)
(*            Crash (restart), HandleCreateSnapshot (create: the trace's id must *)
(*            be the spec's, at N's high watermark), DeleteBeforeSnapshot  *)
(*            (delete), nothing (tick, clock, noappend: a refused append;  *)
(*            a create that gave no writer; a delete to no snapshot past   *)
(*            the log start); a Fetch response is delivered as the answer  *)
(*            to N's current snapshot download (N's one outstanding        *)
(*            request was sent with it: a download starts on an answer);   *)
(*   take     the bag holds exactly the reply the trace states (its stated *)
(*            fields), and the environment takes it;                       *)
(*   timer    N's timer may fire: the spec's Timeout (a voter becomes      *)
(*            Prospective, a Prospective loses its pre-vote, a Resigned    *)
(*            node moves to the next epoch);                               *)
(*   send     each request the trace states N sent, in order, is the       *)
(*            message the spec's MaybeSendVoteRequests (a pre-vote's too), *)
(*            MaybeSendBeginQuorumEpochRequests,                           *)
(*            MaybeSendFetchOrFetchSnapshot or MaybeSendUpdateVoterRequest *)
(*            of N puts in the (empty) bag; then N's variables match the   *)
(*            stated post-state (outputs                                   *)
(*            stated in another shape than the reference's, not readable,  *)
(*            match nothing).                                              *)
(* What the spec does not model (check quorum, bounds reached, ...) sets   *)
(* `outside` instead.                                                      *)
(***************************************************************************)
EXTENDS KRaftQuorum, TLC

CONSTANT TraceSet   \* <<[init |-> [node |-> N, role |-> ..., ...], steps |-> <<step, ...>>], ...>>

VARIABLES t,        \* the trace being validated: an index of TraceSet
          i,        \* how many of its steps the spec has explained
          outside,  \* "" or why the next step is outside the spec's bounds
          ph,       \* the phase of step i + 1: "deliver", "act", "take", "timer", "send" or "sent"
          k         \* how many of the step's requests the spec has sent

Steps == TraceSet[t].steps
S == Steps[i + 1]
N == TraceSet[t].init.node
traceVars == <<t, i, outside, ph, k>>

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
          /\ rejected = Own(x.rejected, {})
          /\ fetched = Own(x.fetched, FALSE)
          /\ hw = Own(x.hw, -1)
          /\ log = Own(x.log, <<>>)
          /\ flushed = Own(x.flushed, 0)
          /\ endOff = Own(x.endOff, NoOffsets)
          /\ start = Own(x.start, 0)
          /\ snaps = Own(x.snaps, {})
          /\ fetchingSnap = Own(x.fetchingSnap, NoSnapshot)
          /\ \E h \in 0..MaxLogLen : logHw = Own(h, 0)  \* the log's own high watermark: no trace states it
    /\ msgs = <<>>
    /\ committed = <<>>
    /\ faults = 0
    /\ timeouts = 0
    /\ snapshots = 0
    /\ i = 0
    /\ outside = ""
    /\ ph = "deliver"
    /\ k = 0
    /\ Report(0, "")

OneMessage(m) == [x \in {m} |-> 1]
Delivered(m) == IF m.type = "FetchResp" THEN [m EXCEPT !.download = fetchingSnap[N]] ELSE m
(* Message x has every field the trace states of message r (the replay compares only those too). *)
Matches(x, r) == DOMAIN r \subseteq DOMAIN x /\ \A f \in DOMAIN r : x[f] = r[f]
(* The bag b holds one message, which matches r. *)
HoldsOne(b, r) == \E x \in DOMAIN b : b = OneMessage(x) /\ Matches(x, r)

(* The spec's Timeout of N is disabled by its bounds only (the log's length bounds only a voter's campaign). *)
TimeoutBounded(campaign) ==
    \/ epoch[N] >= MaxEpoch
    \/ timeouts >= MaxTimeouts
    \/ campaign /\ LEO(N) >= MaxLogLen

(* Why the spec cannot judge step s from the current state ("" when it can). A Prospective's timer ends it in *)
(* its epoch, back to its known leader or Unattached; its handlers do so only on losing the pre-vote or       *)
(* learning of a leader it did not know.                                                                    *)
OutsideReason(s) ==
    CASE role[N] \in {"Unattached", "Follower", "Candidate"} /\ s.role = "Prospective" /\ TimeoutBounded(TRUE) ->
            "the node's pre-vote is beyond MaxEpoch, MaxTimeouts or MaxLogLen"
      [] role[N] = "Prospective" /\ TimeoutBounded(FALSE) /\ ("epoch" \in s.stated => s.post.epoch = epoch[N])
         /\ \/ s.role = "Follower" /\ leader[N] # NoNode
            \/ s.role = "Unattached" /\ ~(s.kind = "msg" /\ s.m.type = "VoteResp" /\ s.m.preVote) ->
            "the node's pre-vote times out beyond MaxEpoch or MaxTimeouts"
      [] s.kind = "tick" /\ role[N] = "Resigned" /\ s.role = "Unattached" /\ TimeoutBounded(FALSE) ->
            "the resigned node's next epoch is beyond MaxEpoch or MaxTimeouts"
      [] s.kind = "append" /\ role[N] = "Leader" /\ LEO(N) >= MaxLogLen -> "the log has reached MaxLogLen"
      [] s.kind = "create" /\ s.created /\ snapshots >= MaxSnapshots -> "the snapshots have reached MaxSnapshots"
      [] s.kind = "create" /\ s.created /\ ~(LogHw(N) > start[N] /\ s.snap = <<LogHw(N), EpochAt(N, LogHw(N) - 1)>>) ->
            "the snapshot is not at the log's high watermark (the spec's state machine snapshots there)"
      [] s.kind = "restart" /\ faults >= MaxFaults -> "the crashes have reached MaxFaults"
      [] role[N] = "Leader" /\ s.role = "Resigned" /\ s.kind # "restart" ->
            "the leader resigns on check quorum (the spec's leaders never resign)"
      [] s.kind = "msg" /\ s.m.type = "UpdateVoterResp" /\ ~UpdateVoterAnswerTaken(N, s.m) ->
            "an UpdateRaftVoter answer from another leader or epoch (its common handling may move the node)"
      [] OTHER -> ""

Handle(m) ==
    CASE m.type = "VoteReq" -> OnVoteRequest(N, m)
      [] m.type = "VoteResp" -> OnVoteResponse(N, m)
      [] m.type = "BeginEpoch" -> OnBeginQuorumEpoch(N, m)
      [] m.type = "FetchReq" -> OnFetchRequest(N, m)
      [] m.type = "FetchResp" -> OnFetchResponse(N, m)
      [] m.type = "FetchSnapReq" -> OnFetchSnapshotRequest(N, m)
      [] m.type = "FetchSnapResp" -> OnFetchSnapshotResponse(N, m)
      [] m.type = "UpdateVoterReq" -> OnUpdateVoterRequest(N, m)
      [] m.type = "UpdateVoterResp" -> OnUpdateVoterResponse(N, m)

Act(s) ==
    CASE s.kind = "msg" -> Handle(s.m)
      [] s.kind = "append" -> ClientAppend(N)
      [] s.kind = "noappend" -> role[N] # "Leader" /\ UNCHANGED vars
      [] s.kind = "restart" -> Crash(N)
      [] s.kind = "create" /\ s.created -> HandleCreateSnapshot(N)
      [] s.kind = "delete" /\ s.snap \in snaps[N] /\ s.snap[1] > start[N] ->
            DeleteBeforeSnapshot(N) /\ start'[N] = s.snap[1]
      [] OTHER -> UNCHANGED vars

(* N's timer, polled after every input but a restart or a clock change: nothing, or the spec's Timeout. *)
Timer(s) ==
    \/ UNCHANGED vars
    \/ s.kind \in {"tick", "msg", "append", "noappend"} /\ Timeout(N)

SendAction(r) ==
    CASE r.type = "VoteReq" -> MaybeSendVoteRequests(N, r.dst)
      [] r.type = "BeginEpoch" -> MaybeSendBeginQuorumEpochRequests(N, r.dst)
      [] r.type \in {"FetchReq", "FetchSnapReq"} -> MaybeSendFetchOrFetchSnapshot(N, r.dst)
      [] r.type = "UpdateVoterReq" -> MaybeSendUpdateVoterRequest(N)

EpochCache(l) == {<<l[p], p - 1>> : p \in {q \in DOMAIN l : q = 1 \/ l[q - 1] # l[q]}}

(* N's variables against the stated post-state (the epoch cache of a log with snapshots is not judged: it *)
(* depends on how the log came to start where it does, which the spec's state forgets).                    *)
PostOK(s) ==
    LET st == s.stated
        p == s.post
    IN /\ "epoch" \in st => epoch[N] = p.epoch
       /\ "log" \in st => log[N] = p.log
       /\ "flushed" \in st => flushed[N] = p.flushed
       /\ "leo" \in st => LEO(N) = p.leo
       /\ "lfe" \in st => LastEpochOf(N) = p.lfe
       /\ "cache" \in st => snaps[N] # {} \/ EpochCache(log[N]) = p.cache
       /\ "start" \in st => start[N] = p.start
       /\ "latest" \in st => IF snaps[N] = {} THEN p.latest = NoSnapshot ELSE Latest(N) = p.latest
       /\ "qepoch" \in st => epoch[N] = p.qepoch
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
                   /\ UNCHANGED <<vars, t, i, ph, k>>
                   /\ Report(i, outside')
              ELSE /\ msgs' = IF S.kind = "msg" THEN OneMessage(Delivered(S.m)) ELSE msgs
                   /\ ph' = "act"
                   /\ UNCHANGED <<role, epoch, leader, voted, granted, rejected, fetched, hw, log, flushed, endOff,
                                  committed, faults, timeouts, start, snaps, fetchingSnap, snapshots, logHw,
                                  t, i, outside, k>>
         [] ph = "act" ->
              /\ Act(S)
              /\ ph' = "take"
              /\ UNCHANGED <<t, i, outside, k>>
         [] ph = "take" ->
              /\ IF S.reply = <<>> THEN msgs = <<>> ELSE HoldsOne(msgs, S.reply[1])
              /\ msgs' = <<>>
              /\ ph' = "timer"
              /\ UNCHANGED <<role, epoch, leader, voted, granted, rejected, fetched, hw, log, flushed, endOff,
                             committed, faults, timeouts, start, snaps, fetchingSnap, snapshots, logHw, t, i,
                             outside, k>>
         [] ph = "timer" ->
              /\ Timer(S)
              /\ ph' = "send"
              /\ UNCHANGED <<t, i, outside, k>>
         [] ph = "send" /\ k < Len(S.reqs) ->
              /\ SendAction(S.reqs[k + 1])
              /\ HoldsOne(msgs', S.reqs[k + 1])
              /\ ph' = "sent"
              /\ UNCHANGED <<t, i, outside, k>>
         [] ph = "sent" ->
              /\ msgs' = <<>>
              /\ k' = k + 1
              /\ ph' = "send"
              /\ UNCHANGED <<role, epoch, leader, voted, granted, rejected, fetched, hw, log, flushed, endOff,
                             committed, faults, timeouts, start, snaps, fetchingSnap, snapshots, logHw, t, i, outside>>
         [] ph = "send" /\ k = Len(S.reqs) ->
              /\ S.readable
              /\ PostOK(S)
              /\ i' = i + 1
              /\ ph' = "deliver"
              /\ k' = 0
              /\ UNCHANGED <<vars, t, outside>>
              /\ Report(i', "")

TraceSpec == TraceInit /\ [][TraceNext]_<<vars, traceVars>>
=============================================================================
