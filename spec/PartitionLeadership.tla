------------------------- MODULE PartitionLeadership -------------------------
(***************************************************************************)
(* One partition, replicas <<1, 2, 3>> in preference order, metadata.version*)
(* 4.3-IV0, ELR disabled, min.insync.replicas 1 (kraftspec facts           *)
(* rules §2.3-§2.6, §2.9, §2.10, §2.12).                                   *)
(*                                                                         *)
(* The controller fences, unfences and re-registers restarted brokers and  *)
(* re-elects (unclean election when the constant Unclean is TRUE). Brokers *)
(* learn the controller's state asynchronously (Learn), so a deposed       *)
(* leader keeps appending and serving fetches. A leader appends records    *)
(* (a record is the leader epoch it was appended in), followers fetch from *)
(* the leader they know at its leader epoch, truncating to the common      *)
(* prefix and copying the leader's log, and the leader's high watermark is *)
(* the smallest log end offset over itself and its maximal ISR, never      *)
(* moving back. The leader changes the ISR only by AlterPartition, a       *)
(* conditional update on its leader and partition epochs and on the broker *)
(* epochs its followers fetched with (KIP-903); the answer reaches it in   *)
(* the same step. A restart gives the broker a new broker epoch and may    *)
(* lose the unflushed tail of its log; we assume committed records are     *)
(* flushed (without ELR Kafka can lose one the last ISR member had not     *)
(* flushed, KIP-966). Time is abstract: the lag may have elapsed at any    *)
(* moment, so a follower is caught up only at the leader's LEO. A new      *)
(* leader starts from high watermark 0 (follower HWs are not modelled).    *)
(* With Unclean TRUE, elections at broker events may pick a replica outside*)
(* the ISR (ISR := {it}); the RECOVERING leader recovery state and the     *)
(* periodic unclean-election task are not modelled.                        *)
(*                                                                         *)
(* Actions carry the names of the reference functions (kraftspec.reference)*)
(* HandleBrokerFenced ~ partition_events.handle_broker_fenced,            *)
(* HandleBrokerUnfenced ~ handle_broker_unfenced, HandleBrokerShutdown ~   *)
(* handle_broker_shutdown (with the restart it ends), Learn (metadata      *)
(* propagation: the environment) ~                                         *)
(* partition_leader.become_leader / update_leader_metadata /               *)
(* update_broker_metadata, AppendRecords ~ append (Append is taken by     *)
(* Sequences), FollowerFetch ~ follower_fetch,                            *)
(* MaybeShrinkIsr ~ maybe_shrink_isr, AlterPartition ~                     *)
(* alter_partition.alter_partition + handle_alter_partition_result. All    *)
(* actions are enabled while the partition epoch is below MaxEpoch.        *)
(***************************************************************************)
EXTENDS Integers, Sequences, FiniteSets

CONSTANTS MaxEpoch,    \* bound on the partition epoch
          MaxAppends,  \* bound on the records appended by all leaders together
          MaxRestarts, \* bound on the restarts of all brokers together
          Unclean      \* unclean.leader.election.enable

Replicas == <<1, 2, 3>>
Brokers == {1, 2, 3}
NoLeader == -1
NoFetch == -2   \* a follower's fetch broker epoch before its first fetch in this leadership
NoPending == [isr |-> {}, max |-> {}]
NotLeading == [epoch |-> -1, pe |-> -1, isr |-> {}, hw |-> 0, start |-> 0,
               leo |-> [r \in Brokers |-> -1], fep |-> [r \in Brokers |-> NoFetch],
               elig |-> [r \in Brokers |-> -1], pending |-> NoPending]

VARIABLES
    leader, isr, leaderEpoch, partitionEpoch, \* the controller's partition registration
    fenced, brokerEpoch,                      \* the controller's broker registrations
    net,        \* AlterPartition requests on the wire
    log,        \* each broker's log: a sequence of leader epochs
    known,      \* <<leader, leader epoch>> each broker last learned
    ls,         \* each broker's partition-leader state (NotLeading unless it believes it leads)
    appends,    \* records appended so far by all leaders
    committed   \* history: every <<offset, leader epoch>> ever below a leader's high watermark

vars == <<leader, isr, leaderEpoch, partitionEpoch, fenced, brokerEpoch, net, log, known, ls, appends, committed>>

Min(S) == CHOOSE x \in S : \A y \in S : x <= y
Max2(a, b) == IF a > b THEN a ELSE b
Leading(b) == ls[b].epoch >= 0
Records(lg, h) == {<<o, lg[o]>> : o \in 1..h}

(* Every action: enabled below the partition-epoch bound; records below a new high watermark are committed. *)
Bounded == partitionEpoch < MaxEpoch
Commit == committed' = committed \cup UNION {Records(log'[b], ls'[b].hw) : b \in Brokers}

------------------------------------------------------------------------------
(* Controller side *)

(* §2.4: keep a valid current leader, else the first valid replica in order, else (unclean) the first *)
(* acceptable replica, else none. Result <<node, unclean>>.                                          *)
Elect(targetIsr, acceptable) ==
    IF leader \in targetIsr /\ leader \in acceptable THEN <<leader, FALSE>>
    ELSE LET valid == {i \in 1..Len(Replicas) : Replicas[i] \in targetIsr /\ Replicas[i] \in acceptable}
             any == {i \in 1..Len(Replicas) : Replicas[i] \in acceptable}
         IN IF valid # {} THEN <<Replicas[Min(valid)], FALSE>>
            ELSE IF Unclean /\ any # {} THEN <<Replicas[Min(any)], TRUE>>
            ELSE <<NoLeader, FALSE>>

(* §2.3: the ISR is written only when it changes and stays non-empty (no ELR); an unclean election *)
(* sets it to the new leader; a new leader bumps the leader epoch; any change the partition epoch.  *)
Change(targetIsr, elected) ==
    LET newLeader == elected[1]
        newIsr == IF elected[2] /\ newLeader # leader THEN {newLeader}
                  ELSE IF targetIsr = {} THEN isr ELSE targetIsr
    IN IF newIsr = isr /\ newLeader = leader
       THEN UNCHANGED <<leader, isr, leaderEpoch, partitionEpoch>>
       ELSE /\ isr' = newIsr
            /\ leader' = newLeader
            /\ leaderEpoch' = IF newLeader = leader THEN leaderEpoch ELSE leaderEpoch + 1
            /\ partitionEpoch' = partitionEpoch + 1

(* §2.9: the broker leaves the ISR (unless it is the last member) and is no leader candidate. *)
RemoveFromIsr(b) ==
    IF b \in isr
    THEN Change(isr \ {b}, Elect(isr \ {b}, Brokers \ (fenced \cup {b})))
    ELSE UNCHANGED <<leader, isr, leaderEpoch, partitionEpoch>>

(* The leader's view of ISR eligibility: broker epoch of each unfenced broker, -1 for the others. *)
Elig == [r \in Brokers |-> IF r \in fenced THEN -1 ELSE brokerEpoch[r]]

------------------------------------------------------------------------------
(* Partition leader side (§2.12) *)

MaximalIsr(s) == IF s.pending = NoPending THEN s.isr ELSE s.pending.max

(* KIP-903: the follower fetched with the broker epoch the leader's metadata has for it. *)
Eligible(s, r) == s.elig[r] >= 0 /\ s.fep[r] >= 0 /\ s.fep[r] = s.elig[r]

(* maybeIncrementLeaderHW: min LEO over the leader and the followers in the maximal ISR or caught up *)
(* and eligible; never backwards.                                                                    *)
NewHw(b, s, leo) ==
    LET candidates == {r \in Brokers \ {b} : r \in MaximalIsr(s) \/ (s.leo[r] = leo /\ Eligible(s, r))}
        h == Min({leo} \cup {s.leo[r] : r \in candidates})
    IN IF h > s.hw THEN h ELSE s.hw

WithHw(b, s, leo) == [s EXCEPT !.hw = NewHw(b, s, leo)]

BecomeLeader(b) ==
    WithHw(b, [epoch |-> leaderEpoch, pe |-> partitionEpoch, isr |-> isr, hw |-> 0, start |-> Len(log[b]),
               leo |-> [r \in Brokers |-> -1], fep |-> [r \in Brokers |-> NoFetch], elig |-> Elig,
               pending |-> NoPending], Len(log[b]))

UpdateLeader(b) ==
    WithHw(b, [ls[b] EXCEPT !.pe = partitionEpoch, !.isr = isr, !.elig = Elig, !.pending = NoPending], Len(log[b]))

(* The broker's AlterPartitionManager holds one request per partition until its answer: while one of b's *)
(* current incarnation is on the wire, a new proposal fails at once (OPERATION_NOT_ATTEMPTED) and is     *)
(* reverted (DefaultAlterPartitionManager.submit, Partition.handleAlterPartitionError).                  *)
Queued(b) == \E m \in net : m.s = b /\ m.se = brokerEpoch[b]

(* addBrokerEpochToIsr: own broker epoch for the leader, last fetch epoch for others, -1 if unknown. *)
Proposal(b, s, newIsr) ==
    [s |-> b, se |-> brokerEpoch[b], le |-> s.epoch, pe |-> s.pe,
     isr |-> {<<r, IF r = b THEN brokerEpoch[b] ELSE Max2(s.fep[r], -1)>> : r \in newIsr}]

------------------------------------------------------------------------------
Init ==
    /\ leader = 1
    /\ isr = Brokers
    /\ leaderEpoch = 0
    /\ partitionEpoch = 0
    /\ fenced = {}
    /\ brokerEpoch = [b \in Brokers |-> 0]
    /\ net = {}
    /\ log = [b \in Brokers |-> <<>>]
    /\ known = [b \in Brokers |-> <<1, 0>>]
    /\ ls = [b \in Brokers |-> IF b = 1 THEN BecomeLeader(1) ELSE NotLeading]
    /\ appends = 0
    /\ committed = {}

HandleBrokerFenced(b) ==
    /\ Bounded
    /\ b \notin fenced
    /\ fenced' = fenced \cup {b}
    /\ RemoveFromIsr(b)
    /\ UNCHANGED <<brokerEpoch, net, log, known, ls, appends>>
    /\ Commit

(* §2.9: a leaderless partition re-elects, the broker being unfenced counting as acceptable. *)
HandleBrokerUnfenced(b) ==
    /\ Bounded
    /\ b \in fenced
    /\ fenced' = fenced \ {b}
    /\ IF leader = NoLeader
       THEN Change(isr, Elect(isr, (Brokers \ fenced) \cup {b}))
       ELSE UNCHANGED <<leader, isr, leaderEpoch, partitionEpoch>>
    /\ UNCHANGED <<brokerEpoch, net, log, known, ls, appends>>
    /\ Commit

(* Lengths the log may keep on a restart: only an uncommitted suffix is lost. *)
Kept(b) == {n \in 0..Len(log[b]) : \A o \in (n + 1)..Len(log[b]) : <<o, log[b][o]>> \notin committed}

(* §1.3/§2.9: the broker restarts, keeping n records, and re-registers fenced with a new broker epoch; *)
(* with ELR off its ISR partitions change as for fencing. The new process knows nothing yet.         *)
HandleBrokerShutdown(b, n) ==
    /\ Bounded
    /\ brokerEpoch[1] + brokerEpoch[2] + brokerEpoch[3] < MaxRestarts
    /\ n \in Kept(b)
    /\ fenced' = fenced \cup {b}
    /\ brokerEpoch' = [brokerEpoch EXCEPT ![b] = @ + 1]
    /\ RemoveFromIsr(b)
    /\ log' = [log EXCEPT ![b] = SubSeq(@, 1, n)]
    /\ known' = [known EXCEPT ![b] = <<NoLeader, -1>>]
    /\ ls' = [ls EXCEPT ![b] = NotLeading]
    /\ UNCHANGED <<net, appends>>
    /\ Commit

(* Broker b applies the controller's latest partition and broker registrations (makeLeader / makeFollower). *)
Learn(b) ==
    /\ Bounded
    /\ known' = [known EXCEPT ![b] = <<leader, leaderEpoch>>]
    /\ ls' = [ls EXCEPT ![b] = IF leader # b THEN NotLeading
                               ELSE IF ls[b].epoch # leaderEpoch THEN BecomeLeader(b)
                               ELSE IF ls[b].pe # partitionEpoch THEN UpdateLeader(b)
                               ELSE [ls[b] EXCEPT !.elig = Elig]]
    /\ UNCHANGED <<leader, isr, leaderEpoch, partitionEpoch, fenced, brokerEpoch, net, log, appends>>
    /\ Commit

AppendRecords(b) ==
    /\ Bounded
    /\ Leading(b)
    /\ appends < MaxAppends
    /\ appends' = appends + 1
    /\ log' = [log EXCEPT ![b] = Append(@, ls[b].epoch)]
    /\ ls' = [ls EXCEPT ![b] = WithHw(b, @, Len(log'[b]))]
    /\ UNCHANGED <<leader, isr, leaderEpoch, partitionEpoch, fenced, brokerEpoch, net, known>>
    /\ Commit

CommonPrefix(a, b) == Min({Len(a), Len(b)} \cup {o - 1 : o \in {p \in 1..Len(a) : p > Len(b) \/ a[p] # b[p]}})

(* updateFollowerFetchState: the fetch offset is the follower's LEO after truncating to the common *)
(* prefix; the response copies the leader's log. Maybe propose an expansion; maybe move the HW.    *)
FollowerFetch(f) ==
    LET l == known[f][1]
    IN /\ Bounded
       /\ l # NoLeader /\ l # f
       /\ Leading(l) /\ ls[l].epoch = known[f][2]
       /\ LET s == ls[l]
              c == CommonPrefix(log[f], log[l])
              s1 == [s EXCEPT !.leo[f] = c, !.fep[f] = brokerEpoch[f]]
              expand == /\ s1.pending = NoPending /\ f \notin s1.isr /\ Eligible(s1, f)
                        /\ c >= s1.hw /\ c >= s1.start /\ ~Queued(l)
              s2 == IF expand THEN [s1 EXCEPT !.pending = [isr |-> s1.isr \cup {f}, max |-> s1.isr \cup {f}]] ELSE s1
              s3 == IF s.leo[f] # c THEN WithHw(l, s2, Len(log[l])) ELSE s2
          IN /\ ls' = [ls EXCEPT ![l] = s3]
             /\ net' = IF expand THEN net \cup {Proposal(l, s1, s1.isr \cup {f})} ELSE net
       /\ log' = [log EXCEPT ![f] = log[l]]
       /\ UNCHANGED <<leader, isr, leaderEpoch, partitionEpoch, fenced, brokerEpoch, known, appends>>
       /\ Commit

(* maybeShrinkIsr: propose the ISR without the followers not at the leader's LEO; nothing while an *)
(* AlterPartition is in flight (pending, or still queued); the maximal ISR stays the old ISR.     *)
MaybeShrinkIsr(b) ==
    LET s == ls[b]
        out == {r \in s.isr \ {b} : s.leo[r] # Len(log[b])}
    IN /\ Bounded
       /\ Leading(b)
       /\ s.pending = NoPending
       /\ ~Queued(b)
       /\ out # {}
       /\ ls' = [ls EXCEPT ![b].pending = [isr |-> s.isr \ out, max |-> s.isr]]
       /\ net' = net \cup {Proposal(b, s, s.isr \ out)}
       /\ UNCHANGED <<leader, isr, leaderEpoch, partitionEpoch, fenced, brokerEpoch, log, known, appends>>
       /\ Commit

(* §2.10: applied only from the current leader's incarnation at both current epochs with every ISR *)
(* member unfenced at the broker epoch it fetched with. The answer reaches the sender in the same   *)
(* step: success commits the ISR (if still at that leader epoch), INELIGIBLE_REPLICA drops the      *)
(* pending change, a stale epoch leaves it pending until new metadata arrives.                      *)
AlterPartition ==
  \E m \in net :
    LET current == brokerEpoch[m.s] = m.se
        epochsOk == m.le = leaderEpoch /\ m.pe = partitionEpoch /\ m.s = leader
        eligible == \A p \in m.isr : p[1] \notin fenced /\ (p[2] = -1 \/ p[2] = brokerEpoch[p[1]])
        answered == current /\ Leading(m.s) /\ ls[m.s].pending # NoPending
        s == ls[m.s]
    IN /\ Bounded
       /\ net' = net \ {m}
       /\ IF current /\ epochsOk /\ eligible
          THEN Change({p[1] : p \in m.isr}, Elect({p[1] : p \in m.isr}, Brokers \ fenced))
          ELSE UNCHANGED <<leader, isr, leaderEpoch, partitionEpoch>>
       /\ ls' = IF ~answered THEN ls
                ELSE IF current /\ epochsOk /\ eligible
                THEN IF leaderEpoch' # s.epoch \/ partitionEpoch' < s.pe THEN ls
                     ELSE [ls EXCEPT ![m.s] = WithHw(m.s, [s EXCEPT !.isr = isr', !.pe = partitionEpoch',
                                                             !.pending = NoPending], Len(log[m.s]))]
                ELSE IF current /\ epochsOk THEN [ls EXCEPT ![m.s].pending = NoPending]
                ELSE ls
       /\ UNCHANGED <<fenced, brokerEpoch, log, known, appends>>
       /\ Commit

Next ==
    \/ \E b \in Brokers : HandleBrokerFenced(b) \/ HandleBrokerUnfenced(b) \/ Learn(b) \/ AppendRecords(b)
                          \/ FollowerFetch(b) \/ MaybeShrinkIsr(b)
    \/ \E b \in Brokers, n \in 0..MaxAppends : HandleBrokerShutdown(b, n)
    \/ AlterPartition

Spec == Init /\ [][Next]_vars

----------------------------------------------------------------------------
TypeOK ==
    /\ leader \in Brokers \cup {NoLeader}
    /\ isr \subseteq Brokers
    /\ fenced \subseteq Brokers
    /\ leaderEpoch \in Nat /\ partitionEpoch \in Nat
    /\ \A b \in Brokers : Len(log[b]) <= MaxAppends /\ ls[b].hw <= Len(log[b])

LeaderInIsrOrNone == leader = NoLeader \/ leader \in isr

IsrNeverEmptyWithoutElr == isr # {} /\ isr \subseteq Brokers

OnlyUnfencedBrokersLead == leader = NoLeader \/ leader \notin fenced

(* The broker leading at the controller's current leader epoch, if it has learned it. *)
LegitLeaders == {b \in Brokers : b = leader /\ ls[b].epoch = leaderEpoch}

OffsetsBelowHwInIsr ==
    \A l \in LegitLeaders : \A r \in isr :
        Len(log[r]) >= ls[l].hw /\ SubSeq(log[r], 1, ls[l].hw) = SubSeq(log[l], 1, ls[l].hw)

(* With unclean election disabled, every committed record is in every ISR member's log. *)
NoCommittedLoss == ~Unclean => \A r \in isr : committed \subseteq Records(log[r], Len(log[r]))

(* Two brokers that both believe they lead never commit different records at one offset. *)
NoConflictingCommits == \A a, b \in committed : a[1] = b[1] => a[2] = b[2]

EpochsOnlyGrow == [][leaderEpoch' >= leaderEpoch /\ partitionEpoch' >= partitionEpoch]_vars

LeaderEpochBumpImpliesPartitionEpochBump == [][leaderEpoch' > leaderEpoch => partitionEpoch' > partitionEpoch]_vars

(* A leader's high watermark only advances while it leads at one leader epoch. *)
HwOnlyGrows == [][\A b \in Brokers : (Leading(b) /\ ls'[b].epoch = ls[b].epoch) => ls'[b].hw >= ls[b].hw]_vars
=============================================================================
