--------------------------- MODULE BrokerLifecycle ---------------------------
(***************************************************************************)
(* Broker registration, heartbeats, session fencing, controlled shutdown  *)
(* and unregistration on the active KRaft controller (KIP-631 as          *)
(* implemented in Kafka 4.1+; kraftspec rule book §1).                    *)
(*                                                                         *)
(* One partition over Replicas shows what fencing and shutdown do to      *)
(* leadership (§2.9): ONLINE election, no ELR, metadata.version >= 3.6    *)
(* (an ISR shrink alone does not bump the leader epoch).                  *)
(*                                                                         *)
(* Every action has the name of the reference function that implements   *)
(* it (kraftspec.reference.broker): RegisterBroker ~ register_broker,    *)
(* Heartbeat ~ heartbeat, FenceStaleBroker ~ fence_stale_broker,          *)
(* UnregisterBroker ~ unregister_broker; Failover (deactivate + activate) *)
(* and Tick move the environment.                                          *)
(* Actions that may write records are enabled while nextOffset <          *)
(* MaxOffset; Tick while clock < MaxTime.                                  *)
(***************************************************************************)
EXTENDS Integers, Sequences, FiniteSets

CONSTANTS Brokers,        \* broker ids, e.g. {1, 2}
          Incarnations,   \* incarnation ids a broker process may start with, e.g. {1, 2}
          SessionTimeout, \* broker.session.timeout.ms, in ticks
          MaxTime,        \* bound on the clock
          MaxOffset       \* bound on the log end offset

VARIABLES clock,      \* the controller's monotonic clock, in ticks
          nextOffset, \* the metadata log's next write offset
          reg,        \* hard state: broker id -> registration (epoch -1 = not registered)
          hb,         \* soft state: broker id -> heartbeat-manager entry
          sessions,   \* soft state: <<id, epoch>> -> last contact time
          part,       \* the partition: leader, ISR and epochs
          lastReply   \* the control state granted by each broker's last accepted heartbeat

vars == <<clock, nextOffset, reg, hb, sessions, part, lastReply>>

NoReg == [epoch |-> -1, inc |-> 0, fenced |-> TRUE, ics |-> FALSE, offset |-> -1]
NoHb == [present |-> FALSE, fenced |-> TRUE, offset |-> -1, cso |-> -1]
States == {"none", "FENCED", "UNFENCED", "CONTROLLED_SHUTDOWN", "SHUTDOWN_NOW"}

Range(s) == {s[i] : i \in DOMAIN s}
(* The partition's replicas: every broker, in ascending id order (the preferred replica first). *)
Replicas == [i \in 1..Cardinality(Brokers) |-> CHOOSE b \in Brokers : Cardinality({x \in Brokers : x < b}) = i - 1]
Registered(b) == reg[b].epoch >= 0
Active(b) == Registered(b) /\ ~reg[b].fenced /\ ~reg[b].ics

(* Sessions: BrokerHeartbeatTracker, keyed by (id, epoch). *)
Expired(t) == clock > t /\ t + SessionTimeout < clock
ValidSession(b, e) == <<b, e>> \in DOMAIN sessions /\ ~Expired(sessions[<<b, e>>])
TouchSession(key) == [p \in DOMAIN sessions \cup {key} |-> IF p = key THEN clock ELSE sessions[p]]
DropSession(key) == [p \in DOMAIN sessions \ {key} |-> sessions[p]]

(* The partition: generateLeaderAndIsrUpdates with an ONLINE election (§2.3, §2.4, §2.9). *)
Acceptable(r, remove, add) == r # remove /\ (r = add \/ Active(r))
RECURSIVE FirstValid(_, _, _, _)
FirstValid(rs, isr, remove, add) ==
    IF rs = <<>> THEN -1
    ELSE IF Head(rs) \in Range(isr) /\ Acceptable(Head(rs), remove, add) THEN Head(rs)
    ELSE FirstValid(Tail(rs), isr, remove, add)
Elect(p, isr, remove, add) ==
    IF p.leader \in Range(isr) /\ Acceptable(p.leader, remove, add) THEN p.leader
    ELSE FirstValid(Replicas, isr, remove, add)
Changed(p, remove, add) ==
    LET target == SelectSeq(p.isr, LAMBDA r : r # remove)
        leader == Elect(p, target, remove, add)
        isr == IF target # <<>> THEN target ELSE p.isr   \* without ELR the ISR never becomes empty
    IN IF leader = p.leader /\ isr = p.isr THEN p
       ELSE [leader |-> leader, isr |-> isr,
             leaderEpoch |-> IF leader # p.leader THEN p.leaderEpoch + 1 ELSE p.leaderEpoch,
             partitionEpoch |-> p.partitionEpoch + 1]
OnRemoval(b) == IF b \in Range(part.isr) THEN Changed(part, b, -1) ELSE part
OnUnfence(b) == IF part.leader = -1 THEN Changed(part, -1, b) ELSE part
Count(p) == IF p # part THEN 1 ELSE 0

(* The heartbeat transition table (§1.5 step 4). *)
CurrentState(b) ==
    IF hb[b].cso >= 0 THEN "CONTROLLED_SHUTDOWN"
    ELSE IF hb[b].fenced THEN "FENCED" ELSE "UNFENCED"
ActiveOffsets == {hb[b].offset : b \in {x \in Brokers : hb[x].present /\ ~hb[x].fenced /\ hb[x].cso < 0}}
LowestActiveOffset(default) == IF ActiveOffsets = {} THEN default
                               ELSE CHOOSE o \in ActiveOffsets : \A o2 \in ActiveOffsets : o <= o2
NextState(b, cur, wantFence, wantShutDown, caughtUp) ==
    LET leads == part.leader = b IN
    CASE cur = "FENCED" ->
           IF wantShutDown THEN "SHUTDOWN_NOW"
           ELSE IF ~wantFence /\ caughtUp THEN "UNFENCED" ELSE "FENCED"
      [] cur = "UNFENCED" ->
           IF wantFence THEN (IF wantShutDown THEN "SHUTDOWN_NOW" ELSE "FENCED")
           ELSE IF wantShutDown THEN (IF leads THEN "CONTROLLED_SHUTDOWN" ELSE "SHUTDOWN_NOW")
           ELSE "UNFENCED"
      [] OTHER ->
           IF ~leads /\ hb[b].cso <= LowestActiveOffset(hb[b].cso) THEN "SHUTDOWN_NOW"
           ELSE "CONTROLLED_SHUTDOWN"

(* Offsets a broker may report: what it reported last, or everything written so far. *)
ReportableOffsets(b) == {IF hb[b].present THEN hb[b].offset ELSE -1, nextOffset - 1}
(* Epochs a broker may heartbeat with: its current one, and old ones still in the tracker (delayed heartbeats). *)
KnownEpochs(b) == {reg[b].epoch : x \in {b} \cap {y \in Brokers : Registered(y)}}
                  \cup {p[2] : p \in {q \in DOMAIN sessions : q[1] = b}}

----------------------------------------------------------------------------
(* A controller that has just become active on a running cluster (ClusterControlManager.activate): *)
(* every broker registered and unfenced (broker Replicas[i] with epoch and record offset i - 1),    *)
(* with a session from now but no reported offset yet; the partition led by its preferred replica.  *)
Init ==
    /\ clock = 0
    /\ nextOffset = Len(Replicas)
    /\ reg = [b \in Brokers |-> LET i == CHOOSE j \in DOMAIN Replicas : Replicas[j] = b IN
                [epoch |-> i - 1, inc |-> 1, fenced |-> FALSE, ics |-> FALSE, offset |-> i - 1]]
    /\ hb = [b \in Brokers |-> [present |-> TRUE, fenced |-> FALSE, offset |-> -1, cso |-> -1]]
    /\ sessions = [p \in {<<b, reg[b].epoch>> : b \in Brokers} |-> 0]
    /\ part = [leader |-> Replicas[1], isr |-> Replicas, leaderEpoch |-> 0, partitionEpoch |-> 0]
    /\ lastReply = [b \in Brokers |-> "none"]

(* registerBroker (§1.3): refused while another incarnation holds a valid session; a new  *)
(* incarnation first leaves every ISR, and its epoch is the offset of that first record. *)
RegisterBroker(b, i) ==
    /\ nextOffset < MaxOffset
    /\ ~(Registered(b) /\ reg[b].inc # i /\ ValidSession(b, reg[b].epoch))
    /\ IF Registered(b) /\ reg[b].inc = i
       THEN /\ reg' = [reg EXCEPT ![b].offset = nextOffset]
            /\ nextOffset' = nextOffset + 1
            /\ hb' = [hb EXCEPT ![b] = [present |-> TRUE, fenced |-> reg[b].fenced, offset |-> -1, cso |-> -1]]
            /\ UNCHANGED part
       ELSE LET p2 == OnRemoval(b) IN
            /\ part' = p2
            /\ reg' = [reg EXCEPT ![b] = [epoch |-> nextOffset, inc |-> i, fenced |-> TRUE, ics |-> FALSE,
                                          offset |-> nextOffset + Count(p2)]]
            /\ nextOffset' = nextOffset + Count(p2) + 1
            /\ hb' = [hb EXCEPT ![b] = [present |-> TRUE, fenced |-> TRUE, offset |-> -1, cso |-> -1]]
    /\ lastReply' = [lastReply EXCEPT ![b] = "none"]
    /\ UNCHANGED <<clock, sessions>>

(* Broker behaviour assumed (BrokerLifecycleManager): once its registration is in controlled   *)
(* shutdown, a broker never retracts; Kafka itself would unfence and elect it again (§2.4).     *)
NeverRetractsShutdown(b, e, wantShutDown) == (Registered(b) /\ e = reg[b].epoch /\ reg[b].ics) => wantShutDown

(* processBrokerHeartbeat (§1.5): the session is refreshed before any validation; the entry is touched  *)
(* with the next state and the reported offset before the records are replayed, and the replay of a    *)
(* fence, unfence or in-controlled-shutdown record registers it again with that same flag              *)
(* (BrokerHeartbeatManager.register), which forgets the reported offset until the next heartbeat.       *)
Heartbeat(b, e, off, wantFence, wantShutDown) ==
    /\ nextOffset < MaxOffset
    /\ e \in KnownEpochs(b)
    /\ off \in ReportableOffsets(b)
    /\ NeverRetractsShutdown(b, e, wantShutDown)
    /\ sessions' = TouchSession(<<b, e>>)
    /\ IF ~Registered(b) \/ reg[b].epoch # e
       THEN UNCHANGED <<clock, nextOffset, reg, hb, part, lastReply>>
       ELSE LET cur == CurrentState(b)
                nxt == NextState(b, cur, wantFence, wantShutDown, off >= reg[b].offset)
                fenced == nxt \in {"FENCED", "SHUTDOWN_NOW"}
                p2 == IF cur = nxt THEN part
                      ELSE IF fenced THEN OnRemoval(b)
                      ELSE IF nxt = "UNFENCED" THEN OnUnfence(b)
                      ELSE OnRemoval(b)
                brokerRecords == IF cur = nxt THEN 0
                                 ELSE IF nxt = "CONTROLLED_SHUTDOWN" /\ reg[b].ics THEN 0 ELSE 1
                next == nextOffset + brokerRecords + Count(p2)
                cso == IF fenced THEN -1
                       ELSE IF nxt = "CONTROLLED_SHUTDOWN" /\ hb[b].cso < 0 THEN next - 1
                       ELSE hb[b].cso
            IN /\ part' = p2
               /\ nextOffset' = next
               /\ reg' = IF cur = nxt THEN reg
                         ELSE IF fenced THEN [reg EXCEPT ![b].fenced = TRUE]
                         ELSE IF nxt = "UNFENCED" THEN [reg EXCEPT ![b].fenced = FALSE]
                         ELSE [reg EXCEPT ![b].ics = TRUE]
               /\ hb' = [hb EXCEPT ![b] = [present |-> TRUE, fenced |-> fenced,
                                           offset |-> IF brokerRecords = 1 THEN -1 ELSE off, cso |-> cso]]
               /\ lastReply' = [lastReply EXCEPT ![b] = nxt]
               /\ UNCHANGED clock

(* maybeFenceOneStaleBroker (§1.6): drop one expired session; fence its broker if the epoch is current, *)
(* even when the broker is already fenced. The entry is marked fenced before the fence record is       *)
(* replayed, so the replay's register forgets its offsets: a broker in controlled shutdown is FENCED.  *)
FenceStaleBroker(b, e) ==
    /\ nextOffset < MaxOffset
    /\ <<b, e>> \in DOMAIN sessions /\ Expired(sessions[<<b, e>>])
    /\ sessions' = DropSession(<<b, e>>)
    /\ IF ~Registered(b)
       THEN /\ hb' = [hb EXCEPT ![b] = NoHb]
            /\ UNCHANGED <<reg, part, nextOffset>>
       ELSE IF reg[b].epoch # e
       THEN UNCHANGED <<reg, hb, part, nextOffset>>
       ELSE LET p2 == OnRemoval(b) IN
            /\ part' = p2
            /\ nextOffset' = nextOffset + Count(p2) + 1
            /\ reg' = [reg EXCEPT ![b].fenced = TRUE]
            /\ hb' = [hb EXCEPT ![b] = [present |-> TRUE, fenced |-> TRUE, offset |-> -1, cso |-> -1]]
    /\ UNCHANGED <<clock, lastReply>>

(* unregisterBroker (§1.8): leave every ISR, then UnregisterBrokerRecord. *)
UnregisterBroker(b) ==
    /\ nextOffset < MaxOffset
    /\ Registered(b)
    /\ LET p2 == OnRemoval(b) IN
       /\ part' = p2
       /\ nextOffset' = nextOffset + Count(p2) + 1
    /\ reg' = [reg EXCEPT ![b] = NoReg]
    /\ hb' = [hb EXCEPT ![b] = NoHb]
    /\ lastReply' = [lastReply EXCEPT ![b] = "none"]
    /\ UNCHANGED <<clock, sessions>>

(* Controller failover (§1.2 activate, 4.1+): soft state rebuilt; only unfenced brokers get a session. *)
Failover ==
    /\ hb' = [b \in Brokers |-> IF Registered(b)
                                 THEN [present |-> TRUE, fenced |-> reg[b].fenced, offset |-> -1, cso |-> -1]
                                 ELSE NoHb]
    /\ sessions' = [p \in {<<b, reg[b].epoch>> : b \in {x \in Brokers : Registered(x) /\ ~reg[x].fenced}} |-> clock]
    /\ UNCHANGED <<clock, nextOffset, reg, part, lastReply>>

Tick ==
    /\ clock < MaxTime
    /\ clock' = clock + 1
    /\ UNCHANGED <<nextOffset, reg, hb, sessions, part, lastReply>>

Next ==
    \/ \E b \in Brokers, i \in Incarnations : RegisterBroker(b, i)
    \/ \E b \in Brokers, e \in 0..MaxOffset, off \in -1..MaxOffset, wf, ws \in BOOLEAN : Heartbeat(b, e, off, wf, ws)
    \/ \E b \in Brokers, e \in 0..MaxOffset : FenceStaleBroker(b, e)
    \/ \E b \in Brokers : UnregisterBroker(b)
    \/ Failover
    \/ Tick

Spec == Init /\ [][Next]_vars

----------------------------------------------------------------------------
(* Invariants and properties. *)
TypeOK ==
    /\ clock \in 0..MaxTime
    /\ nextOffset \in 0..(MaxOffset + 2)
    /\ \A b \in Brokers : lastReply[b] \in States
    /\ part.leader \in Range(Replicas) \cup {-1}

(* The ISR is a non-empty subset of the replicas and holds the leader, if any. *)
LeaderInIsr ==
    /\ part.isr # <<>>
    /\ Range(part.isr) \subseteq Range(Replicas)
    /\ part.leader # -1 => part.leader \in Range(part.isr)

(* Fenced, shutting-down and unregistered brokers lead nothing. *)
OnlyActiveBrokersLead == part.leader # -1 => Active(part.leader)

(* A broker granted SHUTDOWN_NOW leads nothing. *)
ShutdownNowLeadsNothing == \A b \in Brokers : lastReply[b] = "SHUTDOWN_NOW" => part.leader # b

(* A broker id is never handed to a new incarnation while the old incarnation's session is live. *)
NoTwoLiveIncarnations ==
    [][\A b \in Brokers : (Registered(b) /\ reg'[b].epoch >= 0 /\ reg'[b].inc # reg[b].inc)
                            => ~ValidSession(b, reg[b].epoch)]_vars

(* A broker is unfenced only by a heartbeat reporting an offset at or past its RegisterBrokerRecord's. The  *)
(* replay of the unfence record forgets the reported offset, so the property reads the step's parameters. *)
UnfencedOnlyWhenCaughtUp ==
    [][\A b \in Brokers : (Registered(b) /\ reg[b].fenced /\ reg'[b].epoch = reg[b].epoch /\ ~reg'[b].fenced)
                            => \A e \in 0..MaxOffset, off \in -1..MaxOffset, wf, ws \in BOOLEAN :
                                   Heartbeat(b, e, off, wf, ws) => off >= reg[b].offset]_vars

(* Broker epochs per id only grow, and a new incarnation always gets a larger one (else the old   *)
(* incarnation's heartbeats would still be accepted).                                            *)
EpochsOnlyGrow ==
    [][\A b \in Brokers : (Registered(b) /\ reg'[b].epoch >= 0) =>
                             /\ reg'[b].epoch >= reg[b].epoch
                             /\ (reg'[b].inc # reg[b].inc => reg'[b].epoch > reg[b].epoch)]_vars

(* Leader and partition epochs only grow; the partition epoch grows whenever the leader epoch does. *)
PartitionEpochsGrow ==
    [][/\ part'.leaderEpoch >= part.leaderEpoch
       /\ part'.partitionEpoch >= part.partitionEpoch
       /\ part'.leaderEpoch > part.leaderEpoch => part'.partitionEpoch > part.partitionEpoch]_vars
=============================================================================
