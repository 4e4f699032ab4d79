--------------------- MODULE PartitionLeadershipTrace ---------------------
(***************************************************************************)
(* Trace validation for PartitionLeadership (the technique of etcd's and   *)
(* CCF's Raft trace validation, as BrokerLifecycleTrace does for the       *)
(* broker): the spec's actions, constrained to the steps of recorded       *)
(* partition traces.  TLC explores every trace of TraceSet at once (the    *)
(* trace index t is chosen in the initial state); i counts the steps of    *)
(* trace t the spec has explained.                                         *)
(*                                                                         *)
(* A step (mapped by kraftspec.spec.trace_validation_partition) names the  *)
(* spec action its reference call is: Fence, Unfence, Restart (the       *)
(* actions HandleBrokerFenced, HandleBrokerUnfenced and                    *)
(* HandleBrokerShutdown), Learn (with                                      *)
(* the call the broker made: become_leader, update_leader_metadata,        *)
(* update_broker_metadata or stop_leading), Append, Fetch (leader b,       *)
(* follower f), Shrink, Alter (the request as the spec's message), Result  *)
(* (the leader handles the answer to the Alter just before: the spec       *)
(* delivers it in the Alter step, so Result only checks what the leader    *)
(* reported) and Tick (the spec's time is abstract).  Checked against the  *)
(* successor: the AlterPartition outcome (`outcome`, `res`), the proposal  *)
(* a fetch or an ISR check sent (`prop`, `pmsg`), that no request is       *)
(* resent, the records written (`nrec`, `recs`), the stated post-state     *)
(* (`post`) and whether the fields the spec fixes are as it fixes them     *)
(* (`fixed`).  A step whose inputs the spec's environment would not make   *)
(* (a fetch offset other than the follower's truncated log end, a request  *)
(* no leader proposed, ...) or beyond the bounds sets `outside` instead;   *)
(* so does an Alter whose outputs match but whose answer goes elsewhere    *)
(* than the spec sends it (`delivered`).                                   *)
(***************************************************************************)
EXTENDS PartitionLeadership, TLC

CONSTANT TraceSet   \* <<[init |-> spec state, steps |-> <<step, ...>>], ...>>

VARIABLES t,        \* the trace being validated: an index of TraceSet
          i,        \* how many of its steps the spec has explained
          outside,  \* "" or why the next step is outside the spec's bounds
          answer    \* the broker the last Alter's answer reached (its Result step is next), else 0

Steps == TraceSet[t].steps
S == Steps[i + 1]

(* A marker line per explained prefix, read back by kraftspec.spec.trace_validation. *)
Report(k, why) == PrintT(<<"kraftspec-trace", t, k, why>>)

TraceInit ==
    /\ t \in DOMAIN TraceSet
    /\ Init
    /\ LET x == TraceSet[t].init IN
       /\ leader = x.leader /\ isr = x.isr /\ leaderEpoch = x.leaderEpoch
       /\ partitionEpoch = x.partitionEpoch /\ fenced = x.fenced /\ brokerEpoch = x.brokerEpoch
       /\ net = x.net /\ log = x.log /\ known = x.known /\ ls = x.ls /\ appends = x.appends
       /\ committed = x.committed
    /\ i = 0
    /\ outside = ""
    /\ answer = 0
    /\ Report(0, "")

(* AlterPartition's conditions on a request m (§2.10), as the spec's AlterPartition states them. *)
Current(m) == brokerEpoch[m.s] = m.se
EpochsOk(m) == m.le = leaderEpoch /\ m.pe = partitionEpoch /\ m.s = leader
IsrEligible(m) == \A p \in m.isr : p[1] \notin fenced /\ (p[2] = -1 \/ p[2] = brokerEpoch[p[1]])
Answered(m) == Current(m) /\ Leading(m.s) /\ ls[m.s].pending # NoPending

(* The call Learn(b) is on the broker (agree_partition's choice): §2.12 makeLeader / makeFollower. *)
LearnCall(b) ==
    IF leader # b THEN "stop_leading"
    ELSE IF ls[b].epoch # leaderEpoch THEN "become_leader"
    ELSE IF ls[b].pe # partitionEpoch THEN "update_leader_metadata"
    ELSE "update_broker_metadata"

SpecActs == {"Fence", "Unfence", "Restart", "Learn", "Append", "Fetch", "Shrink", "Alter"}

(* Why the spec cannot judge step s from the current state ("" when it can). *)
OutsideReason(s) ==
    CASE s.act = "Result" /\ answer # s.b ->
            "the leader handles an answer that is not to the request delivered just before (the spec delivers each answer with its request)"
      [] s.act = "Result" /\ ~s.consistent -> "the leader handles a result other than the controller's answer"
      [] s.act \in SpecActs /\ ~Bounded -> "the partition epoch has reached MaxEpoch"
      [] s.act = "Fence" /\ s.b \in fenced -> "the broker is already fenced (the spec fences unfenced brokers only)"
      [] s.act = "Unfence" /\ s.b \notin fenced -> "the broker is not fenced (the spec unfences fenced brokers only)"
      [] s.act = "Restart" /\ brokerEpoch[1] + brokerEpoch[2] + brokerEpoch[3] >= MaxRestarts ->
            "the restarts have reached MaxRestarts"
      [] s.act = "Restart" /\ s.ep # brokerEpoch[s.b] + 1 ->
            "the broker re-registers with a broker epoch other than its next incarnation's"
      [] s.act = "Learn" /\ s.call # LearnCall(s.b) ->
            "the broker applies the metadata with " \o s.call \o " where the spec's broker calls " \o LearnCall(s.b)
      [] s.act = "Learn" /\ s.call = "become_leader" /\ s.off # Len(log[s.b]) ->
            "become_leader's log end offset is not the broker's log end in the spec"
      [] s.act = "Append" /\ appends >= MaxAppends -> "the appends have reached MaxAppends"
      [] s.act = "Fetch" /\ Leading(s.b) /\ known[s.f] # <<s.b, ls[s.b].epoch>> ->
            "the follower fetches from a leader or leader epoch it has not learned (the spec's assumption on followers)"
      [] s.act = "Fetch" /\ Leading(s.b) /\ s.off # CommonPrefix(log[s.f], log[s.b]) ->
            "the fetch offset is not the follower's log end after truncation in the spec (the spec's assumption on followers)"
      [] s.act = "Fetch" /\ s.ep # brokerEpoch[s.f] ->
            "the follower fetches with a broker epoch other than its registration's (the spec's assumption on followers)"
      [] s.act = "Alter" /\ s.msg \notin net ->
            "the request is not one a leader of the spec proposed and has not sent yet (the spec's assumption on the network)"
      [] OTHER -> ""

(* Why the spec cannot follow on after an Alter whose outputs it explains: where the answer goes next *)
(* (delivered: "yes" the sender's Result step is next, "no" another step is, "end" the trace ends).  *)
DeliveryReason(s) ==
    CASE s.act # "Alter" -> ""
      [] s.delivered = "yes" /\ ~Current(s.msg) ->
            "the answer reaches a broker incarnation that did not send the request"
      [] s.delivered = "no" /\ Current(s.msg) ->
            "the answer does not reach the incarnation that sent the request (the spec delivers it at once)"
      [] OTHER -> ""

(* The request a fetch or an ISR check of leader s.b proposed, on the wire after the step. *)
Sent(s) == [s |-> s.b, se |-> brokerEpoch[s.b], le |-> s.pmsg.le, pe |-> s.pmsg.pe, isr |-> s.pmsg.isr] \in net'

(* The controller's answer to an Alter (the response's partition error, or STALE_BROKER_EPOCH for the request). *)
OutcomeOK(s) ==
    LET m == s.msg
        applies == Current(m) /\ EpochsOk(m) /\ IsrEligible(m)
    IN CASE s.outcome = "applied" -> applies /\ leader' = m.s
         [] s.outcome = "newleader" -> applies /\ leader' # m.s
         [] s.outcome = "ineligible" -> Current(m) /\ EpochsOk(m) /\ ~IsrEligible(m)
         [] s.outcome = "epochs" -> Current(m) /\ ~EpochsOk(m)
         [] s.outcome = "current" -> Current(m)
         [] s.outcome = "stale" -> ~Current(m)
         [] s.outcome = "?" -> TRUE
         [] OTHER -> FALSE

StepAction(s) ==
    CASE s.act = "Fence" -> HandleBrokerFenced(s.b)
      [] s.act = "Unfence" -> HandleBrokerUnfenced(s.b)
      [] s.act = "Restart" -> \E n \in 0..MaxAppends : HandleBrokerShutdown(s.b, n)
      [] s.act = "Learn" -> Learn(s.b)
      [] s.act = "Append" -> AppendRecords(s.b)
      [] s.act = "Fetch" ->
            /\ known[s.f][1] = s.b
            /\ FollowerFetch(s.f)
            /\ s.prop = "yes" => ls'[s.b].pending # ls[s.b].pending /\ Sent(s)
            /\ s.prop = "no" => ls'[s.b].pending = ls[s.b].pending
      [] s.act = "Shrink" ->
            CASE s.prop = "yes" -> MaybeShrinkIsr(s.b) /\ Sent(s)
              [] s.prop = "no" -> Leading(s.b) /\ ~ENABLED MaybeShrinkIsr(s.b) /\ UNCHANGED vars
              [] OTHER -> MaybeShrinkIsr(s.b) \/ (Leading(s.b) /\ ~ENABLED MaybeShrinkIsr(s.b) /\ UNCHANGED vars)
      [] s.act = "Alter" ->
            /\ AlterPartition
            /\ net' = net \ {s.msg}
            /\ OutcomeOK(s)
            /\ s.hasRes => <<leader', leaderEpoch', isr', partitionEpoch'>> = <<s.res.leader, s.res.le, s.res.isr, s.res.pe>>
      [] s.act = "Result" -> UNCHANGED vars /\ s.resend # "yes"
      [] s.act = "Tick" -> UNCHANGED vars

(* A PartitionChangeRecord against the successor: the ISR and leader it sets (-2: leader unchanged). *)
RecordOK(r) ==
    /\ isr' = IF r.hasIsr THEN r.isr ELSE isr
    /\ leader' = IF r.leader = -2 THEN leader ELSE r.leader

(* The leader states after the step; an Alter's post-state precedes its answer's (its Result step). *)
LsAfter(s) == IF s.act = "Alter" THEN ls ELSE ls'

(* The outputs and post-state fields the trace states, against the spec's successor. *)
PostOK(s) ==
    /\ s.fixed
    /\ s.nrec >= 0 => s.nrec = partitionEpoch' - partitionEpoch
    /\ s.nrec = 1 => RecordOK(s.recs[1])
    /\ "part" \in s.stated =>
          <<leader', isr', leaderEpoch', partitionEpoch'>> =
          <<s.post.part.leader, s.post.part.isr, s.post.part.leaderEpoch, s.post.part.partitionEpoch>>
    /\ "brokers" \in s.stated => fenced' = s.post.brokers.fenced /\ brokerEpoch' = s.post.brokers.brokerEpoch
    /\ "leaders" \in s.stated =>
          /\ LsAfter(s) = s.post.leaders.ls
          /\ \A b \in Brokers : s.post.leaders.leo[b] >= 0 => Len(log'[b]) = s.post.leaders.leo[b]

TraceNext ==
    /\ outside = ""
    /\ i < Len(Steps)
    /\ IF OutsideReason(S) # ""
       THEN /\ outside' = OutsideReason(S)
            /\ UNCHANGED <<vars, t, i, answer>>
            /\ Report(i, outside')
       ELSE /\ StepAction(S)
            /\ PostOK(S)
            /\ IF DeliveryReason(S) # ""
               THEN /\ outside' = DeliveryReason(S)
                    /\ UNCHANGED <<t, i, answer>>
                    /\ Report(i, outside')
               ELSE /\ answer' = IF S.act = "Alter" /\ S.delivered = "yes" THEN S.msg.s ELSE 0
                    /\ i' = i + 1
                    /\ UNCHANGED <<t, outside>>
                    /\ Report(i', "")

TraceSpec == TraceInit /\ [][TraceNext]_<<vars, t, i, outside, answer>>
=============================================================================
