----------------------------- MODULE KRaftVoters -----------------------------
(***************************************************************************)
(* KIP-853 voter-set changes as Kafka 4.3 runs them (kraftspec rule book   *)
(* §3.14, §3.15): one node's log of control records and its leadership.    *)
(* The voter set in force at an offset is the latest VotersRecord at or    *)
(* before it, else the bootstrap checkpoint's (at offset -1, kraft.version *)
(* 1) or controller.quorum.voters (kraft.version 0, no directory ids); the *)
(* kraft.version in force is the latest KRaftVersionRecord's, else the     *)
(* bootstrap's: Kafka's KRaftControlRecordStateMachine and VoterSetHistory.*)
(*                                                                         *)
(* While leader the node answers AddRaftVoter, RemoveRaftVoter and         *)
(* UpdateRaftVoter as AddVoterHandler, RemoveVoterHandler and               *)
(* UpdateVoterHandler do: one add or remove pending at a time, nothing     *)
(* before the leader's epoch is committed (its high watermark is unknown   *)
(* until a majority has the epoch's LeaderChange record), a change only    *)
(* from a committed voter set, kraft.version 1 for Add and Remove. Under   *)
(* kraft.version 0 an update stays in the leader's memory (its volatile    *)
(* voters: the voter's directory id and kraft.version range), and the      *)
(* upgrade to 1 (LeaderState.maybeAppendUpgradedKRaftVersion) waits until  *)
(* every static voter is known so, then appends a KRaftVersionRecord and   *)
(* that voter set in one batch. A VotersRecord holds the whole new set;   *)
(* the pending add or remove completes when the high watermark passes it, *)
(* and a leader that removed itself then resigns. As a follower the node   *)
(* may have its uncommitted suffix truncated, which forgets the voter sets *)
(* and the kraft.version written there (truncateNewEntries). A new leader's*)
(* first batch is its LeaderChange record and, at kraft.version 1 while    *)
(* the voter set is still the bootstrap checkpoint's, a KRaftVersionRecord *)
(* and a VotersRecord (appendStartOfEpochControlRecords ~                  *)
(* start_of_epoch_control_records).                                        *)
(*                                                                         *)
(* Every action of Next is named after the reference function it follows   *)
(* (kraftspec.reference.raft_reconfig, raft_voter_history, raft_rules):    *)
(* HandleAddVoterRequest ~ handle_add_voter_request, HandleAddVoterApi-    *)
(* Versions ~ handle_add_voter_api_versions, HandleRemoveVoterRequest ~    *)
(* handle_remove_voter_request, HandleUpdateVoterRequest ~                 *)
(* handle_update_voter_request, MaybeAppendUpgradedKraftVersion ~          *)
(* maybe_append_upgraded_kraft_version (to kraft.version 1, in the         *)
(* leader's own epoch), NextHighWatermark ~ next_high_watermark with       *)
(* voter_change_committed and leader_resigns_after_removal,                *)
(* TruncateControlRecords ~ truncate_control_records. BecomeLeader,        *)
(* LoseLeadership, ClientAppend and PendingOperationExpires move the       *)
(* environment (the other nodes' elections, the data records the state    *)
(* machine above Raft appends, the pending operation's timer).             *)
(*                                                                         *)
(* Abstracted: replicas are their ids (one directory id each, the same     *)
(* listeners and kraft.version range 0..1, so an update rewrites the same  *)
(* set and names the voter's directory); a voter set is its ids and those  *)
(* whose directory id it holds; "a majority has replicated up to m" is a   *)
(* choice of m; records a follower receives from another leader are not    *)
(* modelled, only the truncation of its own uncommitted ones. Kafka        *)
(* requests a resign and takes it at the next poll; here it is taken with  *)
(* the commit. An upgrade Kafka answers false (asked for already, the      *)
(* version already 1) or refuses changes nothing (no step).                *)
(*                                                                         *)
(* Vanlightly's kraft/kip_853 spec (Vanlightly/kafka-tlaplus) models the   *)
(* whole quorum with join and remove commands answered at once; this one  *)
(* follows one node's log as Kafka 4.3 runs it: the answer waits for the  *)
(* commit, an add first asks the new voter's ApiVersions, a pending        *)
(* operation may expire while its VotersRecord stays, a new leader copies  *)
(* the bootstrap voter set into the log, and static voters upgrade.        *)
(*                                                                         *)
(* Where Kafka differs from KIP-853: the KIP has a busy leader wait; Kafka *)
(* answers REQUEST_TIMED_OUT at once (KAFKA-17147), so a refused request  *)
(* changes nothing (no step here).                                         *)
(***************************************************************************)
EXTENDS Integers, Sequences, FiniteSets

CONSTANTS Ids,          \* the replica ids
          Local,        \* the node followed
          InitVoters,   \* the bootstrap voter set (kraft.version 1) or the static voters (kraft.version 0)
          MaxLog,       \* bound on the log's length (offsets 0..MaxLog-1)
          MaxChanges,   \* bound on the voter changes the leader accepts
          MaxElections  \* bound on the node's elections after the first

VARIABLES bootstrapVersion, \* the bootstrap checkpoint's kraft.version: 1, or 0 for static voters (no checkpoint)
          log,          \* the log: LeaderChange, KRaftVersionRecord, VotersRecord and data records; offset o at log[o+1]
          hw,           \* the node's high watermark: offsets below it are committed
          epochStart,   \* the offset of the current (or last) leader epoch's LeaderChange record
          role,         \* "Leader" or "Follower" (any state that is not the leader's)
          pending,      \* the leader's pending add or remove: kind, voter, offset of its VotersRecord (-1: none yet)
          volatileVoters,   \* a kraft.version 0 leader's in-memory voters: the static voters of which these are
                            \* known by their UpdateRaftVoter or are the leader itself; {} when it keeps none
          requestedVersion, \* the kraft.version the leader's upgrade asked for in its epoch (None: not asked)
          changes,      \* voter changes accepted so far
          elections     \* elections won after the first

vars == <<bootstrapVersion, log, hw, epochStart, role, pending, volatileVoters, requestedVersion, changes, elections>>

None == -1
(* A record of the log, the first of its batch. *)
LeaderChange == [type |-> "LeaderChange", voters |-> {}, directoryIds |-> {}, batchStart |-> TRUE]
Data == [type |-> "Data", voters |-> {}, directoryIds |-> {}, batchStart |-> TRUE]
KRaftVersion1 == [type |-> "KRaftVersion", voters |-> {}, directoryIds |-> {}, batchStart |-> TRUE]
(* A voter set: its voters and those of them it names with a directory id. *)
VotersRecord(s, d) == [type |-> "Voters", voters |-> s, directoryIds |-> d, batchStart |-> TRUE]
(* Records written as one batch (Kafka writes, replicates and truncates a batch whole). *)
Batch(rs) == [i \in 1..Len(rs) |-> [rs[i] EXCEPT !.batchStart = (i = 1)]]
NoPending == [kind |-> "none", voter |-> 0, offset |-> None]

Max(s) == CHOOSE x \in s : \A y \in s : y <= x
At(o) == log[o + 1]
VotersOffsets == {o \in 0..Len(log) - 1 : At(o).type = "Voters"}

(* kraftVersionAtOffset: 1 from a KRaftVersionRecord at or before o on, else the bootstrap's. *)
KRaftVersionAt(o) == IF \E p \in 0..o : At(p).type = "KRaftVersion" THEN 1 ELSE bootstrapVersion

(* lastKraftVersion: the version the log read so far finalizes, committed or not. *)
LastKRaftVersion == KRaftVersionAt(Len(log) - 1)

(* VoterSetHistory.lastEntry's offset: the latest VotersRecord, -1 for the bootstrap's, None for static voters. *)
LastVoterSetOffset ==
    IF VotersOffsets # {} THEN Max(VotersOffsets) ELSE IF bootstrapVersion = 1 THEN -1 ELSE None

(* voterSetAtOffset: the latest VotersRecord at or before o, else the bootstrap's set (with the directory ids) or the
   static voters (without). *)
VotersAt(o) ==
    LET before == {p \in VotersOffsets : p <= o}
    IN IF before # {} THEN At(Max(before))
       ELSE VotersRecord(InitVoters, IF bootstrapVersion = 1 THEN InitVoters ELSE {})

VoterSetAt(o) == VotersAt(o).voters
LastVoters == VotersAt(Len(log) - 1)
LastVoterSet == LastVoters.voters

(* LeaderState.appendStartOfEpochControlRecords: the LeaderChange record and, at kraft.version 1 while no
   VotersRecord is in the log (the set is the bootstrap's), a KRaftVersionRecord and the voter set with the leader's
   own node updated. *)
StartOfEpochBatch ==
    Batch(<<LeaderChange>> \o (IF LastKRaftVersion = 1 /\ LastVoterSetOffset = -1
                               THEN <<KRaftVersion1, VotersRecord(LastVoterSet, LastVoters.directoryIds \cup {Local})>>
                               ELSE <<>>))

(* LeaderState's constructor: a kraft.version 0 leader keeps the static voters in memory with its own node. *)
VolatileVotersAtEpochStart == IF LastKRaftVersion = 0 THEN {Local} ELSE {}

(* LeaderState.highWatermark: unknown until it passes the epoch's start offset. *)
LeaderHwm == IF role = "Leader" /\ hw > epochStart THEN hw ELSE None

(* VoterSet.hasOverlappingMajority: at most one voter added and one removed. *)
HasOverlappingMajority(a, b) == Cardinality(a \ b) <= 1 /\ Cardinality(b \ a) <= 1

(* The checks AddVoterHandler and RemoveVoterHandler share: nothing pending, the epoch committed, kraft.version 1,
   the latest VotersRecord committed. *)
ChangeAllowed ==
    /\ role = "Leader"
    /\ changes < MaxChanges
    /\ pending = NoPending
    /\ LeaderHwm # None
    /\ LastKRaftVersion = 1
    /\ LastVoterSetOffset < LeaderHwm

----------------------------------------------------------------------------
Init ==
    /\ bootstrapVersion \in {0, 1}
    /\ log = Batch(<<LeaderChange>> \o (IF bootstrapVersion = 1
                                        THEN <<KRaftVersion1, VotersRecord(InitVoters, InitVoters)>> ELSE <<>>))
    /\ hw = 0
    /\ epochStart = 0
    /\ role = "Leader"
    /\ pending = NoPending
    /\ volatileVoters = IF bootstrapVersion = 0 THEN {Local} ELSE {}
    /\ requestedVersion = None
    /\ changes = 0
    /\ elections = 0

(* AddRaftVoter for a new voter: the leader asks it for its ApiVersions; the add is pending from now on. *)
HandleAddVoterRequest(r) ==
    /\ ChangeAllowed
    /\ r \notin LastVoterSet
    /\ pending' = [kind |-> "add", voter |-> r, offset |-> None]
    /\ changes' = changes + 1
    /\ UNCHANGED <<bootstrapVersion, log, hw, epochStart, role, volatileVoters, requestedVersion, elections>>

(* The new voter's ApiVersions answer: caught up, the set with it (and its directory id) is appended; lagging, the
   add is aborted. *)
HandleAddVoterApiVersions(caughtUp) ==
    /\ role = "Leader"
    /\ pending.kind = "add"
    /\ pending.offset = None
    /\ IF caughtUp
       THEN /\ Len(log) < MaxLog
            /\ log' = Append(log, VotersRecord(LastVoterSet \cup {pending.voter},
                                               LastVoters.directoryIds \cup {pending.voter}))
            /\ pending' = [pending EXCEPT !.offset = Len(log)]
       ELSE /\ pending' = NoPending
            /\ UNCHANGED log
    /\ UNCHANGED <<bootstrapVersion, hw, epochStart, role, volatileVoters, requestedVersion, changes, elections>>

(* RemoveRaftVoter of a voter of the committed set, never the last one: the set without it is appended. *)
HandleRemoveVoterRequest(r) ==
    /\ ChangeAllowed
    /\ Len(log) < MaxLog
    /\ r \in LastVoterSet
    /\ Cardinality(LastVoterSet) > 1
    /\ log' = Append(log, VotersRecord(LastVoterSet \ {r}, LastVoters.directoryIds \ {r}))
    /\ pending' = [kind |-> "remove", voter |-> r, offset |-> Len(log)]
    /\ changes' = changes + 1
    /\ UNCHANGED <<bootstrapVersion, hw, epochStart, role, volatileVoters, requestedVersion, elections>>

(* UpdateRaftVoter of a voter: answered at once; kraft.version 1 appends the set, 0 updates the in-memory voters. *)
HandleUpdateVoterRequest(r) ==
    /\ role = "Leader"
    /\ changes < MaxChanges
    /\ pending = NoPending
    /\ LeaderHwm # None
    /\ IF LastKRaftVersion = 1
       THEN /\ Len(log) < MaxLog
            /\ LastVoterSetOffset < LeaderHwm
            /\ r \in LastVoterSet
            /\ log' = Append(log, VotersRecord(LastVoterSet, LastVoters.directoryIds \cup {r}))
            /\ UNCHANGED volatileVoters
       ELSE /\ r \in InitVoters
            /\ volatileVoters' = volatileVoters \cup {r}
            /\ UNCHANGED log
    /\ changes' = changes + 1
    /\ UNCHANGED <<bootstrapVersion, hw, epochStart, role, pending, requestedVersion, elections>>

(* UpgradeKRaftVersion to 1 in the leader's epoch, Kafka's checks in order: not asked for in this epoch yet; the
   kraft.version not 1 already (nor above); in-memory voters kept (kraft.version 0), with the static voters' ids
   (always, here); every one supporting kraft.version 1, then every one with a directory id (both known from its
   UpdateRaftVoter or the leader's own node: one check here). The KRaftVersionRecord and the in-memory voter set,
   which differs from the static one (no directory ids there), are appended as one batch; the leader keeps the
   requested version instead of the voters. *)
MaybeAppendUpgradedKraftVersion ==
    /\ role = "Leader"
    /\ requestedVersion = None
    /\ LastKRaftVersion = 0
    /\ volatileVoters # {}
    /\ volatileVoters = InitVoters
    /\ Len(log) + 2 <= MaxLog
    /\ log' = log \o Batch(<<KRaftVersion1, VotersRecord(InitVoters, volatileVoters)>>)
    /\ volatileVoters' = {}
    /\ requestedVersion' = 1
    /\ UNCHANGED <<bootstrapVersion, hw, epochStart, role, pending, changes, elections>>

(* A majority has replicated up to m: the high watermark moves past the epoch start; a pending change whose
   VotersRecord is now committed completes, and a leader no longer in the committed set resigns. *)
NextHighWatermark(m) ==
    /\ role = "Leader"
    /\ m > epochStart
    /\ m > hw
    /\ m <= Len(log)
    /\ hw' = m
    /\ IF pending.offset # None /\ m > pending.offset
       THEN /\ pending' = NoPending
            /\ IF pending.kind = "remove" /\ Local \notin LastVoterSet
               THEN role' = "Follower" /\ requestedVersion' = None
               ELSE UNCHANGED <<role, requestedVersion>>
       ELSE UNCHANGED <<pending, role, requestedVersion>>
    /\ UNCHANGED <<bootstrapVersion, log, epochStart, volatileVoters, changes, elections>>

(* A follower's log truncated to end, a batch's start (never below the high watermark): later voter sets and
   kraft.version are forgotten. *)
TruncateControlRecords(end) ==
    /\ role = "Follower"
    /\ hw <= end
    /\ end < Len(log)
    /\ At(end).batchStart
    /\ log' = SubSeq(log, 1, end)
    /\ UNCHANGED <<bootstrapVersion, hw, epochStart, role, pending, volatileVoters, requestedVersion, changes,
                   elections>>

(* Environment: the node, a voter of the latest voter set, wins an election and writes its first batch. *)
BecomeLeader ==
    /\ role = "Follower"
    /\ elections < MaxElections
    /\ Len(log) + Len(StartOfEpochBatch) <= MaxLog
    /\ Local \in LastVoterSet
    /\ log' = log \o StartOfEpochBatch
    /\ epochStart' = Len(log)
    /\ role' = "Leader"
    /\ volatileVoters' = VolatileVotersAtEpochStart
    /\ elections' = elections + 1
    /\ UNCHANGED <<bootstrapVersion, hw, pending, requestedVersion, changes>>

(* Environment: the state machine above Raft appends a batch of data records (one offset). *)
ClientAppend ==
    /\ role = "Leader"
    /\ Len(log) < MaxLog
    /\ log' = Append(log, Data)
    /\ UNCHANGED <<bootstrapVersion, hw, epochStart, role, pending, volatileVoters, requestedVersion, changes,
                   elections>>

(* Environment: another node is elected; the pending operation fails with NOT_LEADER_OR_FOLLOWER. *)
LoseLeadership ==
    /\ role = "Leader"
    /\ role' = "Follower"
    /\ pending' = NoPending
    /\ volatileVoters' = {}
    /\ requestedVersion' = None
    /\ UNCHANGED <<bootstrapVersion, log, hw, epochStart, changes, elections>>

(* Environment: the pending add or remove times out (REQUEST_TIMED_OUT); its VotersRecord, if any, stays. *)
PendingOperationExpires ==
    /\ role = "Leader"
    /\ pending # NoPending
    /\ pending' = NoPending
    /\ UNCHANGED <<bootstrapVersion, log, hw, epochStart, role, volatileVoters, requestedVersion, changes, elections>>

Next ==
    \/ \E r \in Ids : HandleAddVoterRequest(r)
    \/ \E caughtUp \in BOOLEAN : HandleAddVoterApiVersions(caughtUp)
    \/ \E r \in Ids : HandleRemoveVoterRequest(r)
    \/ \E r \in Ids : HandleUpdateVoterRequest(r)
    \/ MaybeAppendUpgradedKraftVersion
    \/ \E m \in 1..MaxLog : NextHighWatermark(m)
    \/ \E end \in 0..MaxLog - 1 : TruncateControlRecords(end)
    \/ BecomeLeader
    \/ ClientAppend
    \/ LoseLeadership
    \/ PendingOperationExpires

Spec == Init /\ [][Next]_vars

----------------------------------------------------------------------------
Record == {[r EXCEPT !.batchStart = b] : r \in {LeaderChange, Data, KRaftVersion1}
                                          \cup {VotersRecord(s, d) : s \in SUBSET Ids, d \in SUBSET Ids},
                                     b \in BOOLEAN}

TypeOK ==
    /\ bootstrapVersion \in {0, 1}
    /\ log \in Seq(Record) /\ Len(log) <= MaxLog
    /\ hw \in 0..Len(log)
    /\ epochStart \in 0..MaxLog - 1
    /\ role \in {"Leader", "Follower"}
    /\ pending \in {NoPending} \cup [kind : {"add", "remove"}, voter : Ids, offset : {None} \cup 0..MaxLog - 1]
    /\ volatileVoters \in SUBSET InitVoters
    /\ requestedVersion \in {None, 1}
    /\ changes \in 0..MaxChanges
    /\ elections \in 0..MaxElections

(* Each VotersRecord shares a majority with the voter set before it (one change at a time). *)
ConsecutiveVoterSetsOverlap ==
    \A o \in VotersOffsets : HasOverlappingMajority(VoterSetAt(o - 1), At(o).voters)

(* At most one VotersRecord is uncommitted. *)
AtMostOneUncommittedVotersRecord ==
    Cardinality({o \in VotersOffsets : o >= hw}) <= 1

(* Under kraft.version 0 the voters are static: every VotersRecord is written at kraft.version 1 (the upgrade's
   after its KRaftVersionRecord). *)
NoVotersRecordAtKRaftVersion0 ==
    \A o \in VotersOffsets : KRaftVersionAt(o) = 1

(* An add or remove runs only once kraft.version 1 is committed. *)
VoterChangesOnlyAtKRaftVersion1 ==
    pending # NoPending => KRaftVersionAt(hw - 1) = 1

(* Every VotersRecord names each of its voters' directory ids, the upgrade's too. *)
VotersRecordsNameEveryDirectory ==
    \A o \in VotersOffsets : At(o).directoryIds = At(o).voters

(* The voter set in force is never empty at any offset. *)
VoterSetNeverEmpty ==
    \A o \in -1..Len(log) - 1 : VoterSetAt(o) # {}

(* A pending change's VotersRecord is the latest one and is not committed yet. *)
PendingChangeIsTheLatestRecord ==
    pending.offset # None => /\ pending.offset = LastVoterSetOffset
                             /\ pending.offset >= hw

(* The high watermark never decreases and the committed records never change (truncation stops at it). *)
CommittedRecordsStay ==
    [][/\ hw' >= hw
       /\ Len(log') >= hw
       /\ \A o \in 0..hw - 1 : log'[o + 1] = log[o + 1]]_vars

(* The committed kraft.version never decreases: an upgrade is taken back only while uncommitted. *)
CommittedKRaftVersionNeverDecreases ==
    [][KRaftVersionAt(hw - 1) <= (KRaftVersionAt(hw - 1))']_vars
=============================================================================
