------------------------- MODULE PartitionLeadership -------------------------
(***************************************************************************)
(* Controller-side leadership of one partition (kraftspec facts            *)
(* kraft-semantics §2.3-§2.6, §2.9, §2.10): replicas <<1, 2, 3>> in        *)
(* preference order, metadata.version 4.3-IV0, ELR and unclean election    *)
(* disabled. The controller fences and unfences brokers and re-elects; the *)
(* leader proposes ISRs with AlterPartition as conditional updates on its  *)
(* leader and partition epochs. Proposals stay in the network until        *)
(* delivered, in any order, so they may arrive stale.                      *)
(*                                                                         *)
(* Actions carry the names of the reference functions                     *)
(* (kraftspec.reference): Fence ~ partition_events.handle_broker_fenced,   *)
(* Unfence ~ handle_broker_unfenced, Propose ~ the leader sending an       *)
(* AlterPartition (partition_leader), AlterPartition ~                     *)
(* alter_partition.alter_partition. Every state change bumps the          *)
(* partition epoch; actions are enabled while it is below MaxEpoch.        *)
(* Broker logs, the HW and followers are in models/partition.py, not here. *)
(***************************************************************************)
EXTENDS Integers, Sequences, FiniteSets

CONSTANTS MaxEpoch, \* bound on the partition epoch
          MaxSends  \* bound on the AlterPartition requests ever sent

Replicas == <<1, 2, 3>>
Brokers == {1, 2, 3}
NoLeader == -1

VARIABLES leader, isr, leaderEpoch, partitionEpoch, fenced, net, sent

vars == <<leader, isr, leaderEpoch, partitionEpoch, fenced, net, sent>>

(* §2.4 ONLINE election: keep a valid current leader, else the first valid replica in order, else none. *)
Elect(targetIsr, acceptable) ==
    IF leader \in targetIsr /\ leader \in acceptable THEN leader
    ELSE LET valid == {i \in 1..Len(Replicas) : Replicas[i] \in targetIsr /\ Replicas[i] \in acceptable}
         IN IF valid = {} THEN NoLeader ELSE Replicas[CHOOSE i \in valid : \A j \in valid : i <= j]

(* §2.3: the ISR is written only when it changes and stays non-empty (no ELR); a new leader bumps the *)
(* leader epoch; any change bumps the partition epoch.                                              *)
Change(targetIsr, newLeader) ==
    LET newIsr == IF targetIsr = {} THEN isr ELSE targetIsr
    IN IF newIsr = isr /\ newLeader = leader
       THEN UNCHANGED <<leader, isr, leaderEpoch, partitionEpoch>>
       ELSE /\ isr' = newIsr
            /\ leader' = newLeader
            /\ leaderEpoch' = IF newLeader = leader THEN leaderEpoch ELSE leaderEpoch + 1
            /\ partitionEpoch' = partitionEpoch + 1

Init ==
    /\ leader = 1
    /\ isr = Brokers
    /\ leaderEpoch = 0
    /\ partitionEpoch = 0
    /\ fenced = {}
    /\ net = {}
    /\ sent = 0

(* §2.9: the broker leaves the ISR (unless it is the last member) and is no leader candidate. *)
Fence(b) ==
    /\ partitionEpoch < MaxEpoch
    /\ b \notin fenced
    /\ fenced' = fenced \cup {b}
    /\ IF b \in isr
       THEN Change(isr \ {b}, Elect(isr \ {b}, Brokers \ (fenced \cup {b})))
       ELSE UNCHANGED <<leader, isr, leaderEpoch, partitionEpoch>>
    /\ UNCHANGED <<net, sent>>

(* §2.9: a leaderless partition re-elects, the broker being unfenced counting as acceptable. *)
Unfence(b) ==
    /\ partitionEpoch < MaxEpoch
    /\ b \in fenced
    /\ fenced' = fenced \ {b}
    /\ IF leader = NoLeader
       THEN Change(isr, Elect(isr, (Brokers \ fenced) \cup {b}))
       ELSE UNCHANGED <<leader, isr, leaderEpoch, partitionEpoch>>
    /\ UNCHANGED <<net, sent>>

(* The leader proposes an ISR that contains itself, at the epochs it knows (the current ones). *)
Propose(newIsr) ==
    /\ partitionEpoch < MaxEpoch
    /\ sent < MaxSends
    /\ leader # NoLeader
    /\ leader \in newIsr
    /\ net' = net \cup {<<leader, leaderEpoch, partitionEpoch, newIsr>>}
    /\ sent' = sent + 1
    /\ UNCHANGED <<leader, isr, leaderEpoch, partitionEpoch, fenced>>

(* §2.10: applied only from the leader at both current epochs with every ISR member eligible. *)
AlterPartition(m) ==
    /\ partitionEpoch < MaxEpoch
    /\ m \in net
    /\ net' = net \ {m}
    /\ IF /\ m[1] = leader
          /\ m[2] = leaderEpoch
          /\ m[3] = partitionEpoch
          /\ m[4] \cap fenced = {}
       THEN Change(m[4], leader)
       ELSE UNCHANGED <<leader, isr, leaderEpoch, partitionEpoch>>
    /\ UNCHANGED <<fenced, sent>>

Next ==
    \/ \E b \in Brokers : Fence(b) \/ Unfence(b)
    \/ \E s \in SUBSET Brokers : Propose(s)
    \/ \E s \in Brokers, le, pe \in 0..MaxEpoch, i \in SUBSET Brokers : AlterPartition(<<s, le, pe, i>>)

Spec == Init /\ [][Next]_vars

----------------------------------------------------------------------------
TypeOK ==
    /\ leader \in Brokers \cup {NoLeader}
    /\ isr \subseteq Brokers
    /\ fenced \subseteq Brokers
    /\ leaderEpoch \in Nat /\ partitionEpoch \in Nat

LeaderInIsrOrNone == leader = NoLeader \/ leader \in isr

IsrNeverEmpty == isr # {}

OnlyUnfencedBrokersLead == leader = NoLeader \/ leader \notin fenced

EpochsOnlyGrow == [][leaderEpoch' >= leaderEpoch /\ partitionEpoch' >= partitionEpoch]_vars

LeaderEpochBumpImpliesPartitionEpochBump == [][leaderEpoch' > leaderEpoch => partitionEpoch' > partitionEpoch]_vars
=============================================================================
