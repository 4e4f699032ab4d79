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
(* Snapshots (KIP-630 with KIP-853's control records): the state machine   *)
(* snapshots a committed prefix at a batch's end, and the snapshot carries *)
(* the kraft.version and voter set in force at its last offset             *)
(* (KafkaRaftClient.createSnapshot: kraftVersionAtOffset,                  *)
(* voterSetAtOffset; RecordsSnapshotWriter writes them at kraft.version 1  *)
(* only), after which the history before it is trimmed                     *)
(* (truncateOldEntries); the log's cleaner deletes the prefix before a     *)
(* snapshot (ReplicatedLog.deleteBeforeSnapshot), which keeps the voter    *)
(* set in force; a follower loads a snapshot fetched from its leader in    *)
(* place of its whole log (truncateToLatestSnapshot; maybeLoadSnapshot     *)
(* replaces both histories). The voter set in force at an offset is then   *)
(* the latest VotersRecord in the log at or before it, else the snapshot's *)
(* at the log start, else the bootstrap's. HandleCreateSnapshot ~          *)
(* raft_snapshot.handle_create_snapshot with _snapshot_control_records,    *)
(* DeleteBeforeSnapshot ~ raft_log.delete_before_snapshot,                 *)
(* HandleFetchSnapshotResponse ~ raft_snapshot._snapshot_fetched with      *)
(* snapshot_load_needed and load_snapshot. Bounds and left out: only a     *)
(* snapshot past the latest is created; the fetched snapshot lies past     *)
(* what the node has read (readEnd ~                                       *)
(* KRaftControlRecordStateMachine.nextOffset, which a truncation does not  *)
(* move back: below it Kafka 4.3 loads nothing, docs/kafka-findings.md 1)  *)
(* and holds the committed voter set or one change of it; a truncation to  *)
(* a snapshot's end where a VotersRecord starts is left out (Kafka 4.3     *)
(* forgets every voter set there, docs/kafka-findings.md 3).               *)
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
          MaxElections, \* bound on the node's elections after the first
          MaxSnapshots  \* bound on the snapshots the node creates or fetches

VARIABLES bootstrapVersion, \* the bootstrap checkpoint's kraft.version: 1, or 0 for static voters (no checkpoint)
          log,          \* the log from logStart: LeaderChange, KRaftVersionRecord, VotersRecord and data records
          hw,           \* the node's high watermark: offsets below it are committed
          epochStart,   \* the offset of the current (or last) leader epoch's LeaderChange record
          role,         \* "Leader" or "Follower" (any state that is not the leader's)
          pending,      \* the leader's pending add or remove: kind, voter, offset of its VotersRecord (-1: none yet)
          volatileVoters,   \* a kraft.version 0 leader's in-memory voters: the static voters of which these are
                            \* known by their UpdateRaftVoter or are the leader itself; {} when it keeps none
          requestedVersion, \* the kraft.version the leader's upgrade asked for in its epoch (None: not asked)
          changes,      \* voter changes accepted so far
          elections,    \* elections won after the first
          logStart,     \* the log's start offset (offset o at log[o - logStart + 1]): a snapshot's end, or 0
          snapshots,    \* the frozen snapshots from the log start on: end offset, kraft.version and voter set carried
          readEnd,      \* the offset past the last record the control-record state machine has read (its nextOffset)
                        \* while a snapshot may still be fetched (the only thing it decides here), else the log end
          snapshotsTaken \* snapshots created or fetched so far

vars == <<bootstrapVersion, log, hw, epochStart, role, pending, volatileVoters, requestedVersion, changes, elections,
          logStart, snapshots, readEnd, snapshotsTaken>>
snapshotVars == <<logStart, snapshots, readEnd, snapshotsTaken>>

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
LogEnd == logStart + Len(log)
At(o) == log[o - logStart + 1]
VotersOffsets == {o \in logStart..LogEnd - 1 : At(o).type = "Voters"}

(* The latest snapshot's end offset, 0 with none past the bootstrap checkpoint. *)
LatestSnapshotEnd == Max({0} \cup {sn.end : sn \in snapshots})
(* The snapshot at the log start (its prefix was deleted before it, or it replaced the log); only when logStart > 0. *)
StartSnapshot == CHOOSE sn \in snapshots : sn.end = logStart
(* What is in force before the log start: the snapshot's there when it carries a voter set, else the bootstrap's. *)
FromSnapshot == logStart > 0 /\ StartSnapshot.kraftVersion = 1
BaseKRaftVersion == IF logStart > 0 THEN StartSnapshot.kraftVersion ELSE bootstrapVersion
BaseVoters ==
    IF FromSnapshot THEN VotersRecord(StartSnapshot.voters, StartSnapshot.directoryIds)
    ELSE VotersRecord(InitVoters, IF bootstrapVersion = 1 THEN InitVoters ELSE {})

(* kraftVersionAtOffset: 1 from a KRaftVersionRecord at or before o on, else the snapshot's or the bootstrap's. *)
KRaftVersionAt(o) == IF \E p \in logStart..o : At(p).type = "KRaftVersion" THEN 1 ELSE BaseKRaftVersion

(* lastKraftVersion: the version the log read so far finalizes, committed or not. *)
LastKRaftVersion == KRaftVersionAt(LogEnd - 1)

(* VoterSetHistory.lastEntry's offset: the latest VotersRecord, the snapshot's last offset for its set, -1 for the
   bootstrap's, None for static voters. *)
LastVoterSetOffset ==
    IF VotersOffsets # {} THEN Max(VotersOffsets)
    ELSE IF FromSnapshot THEN logStart - 1 ELSE IF bootstrapVersion = 1 THEN -1 ELSE None

(* voterSetAtOffset: the latest VotersRecord at or before o, else the snapshot's at the log start, else the bootstrap's
   set (with the directory ids) or the static voters (without). *)
VotersAt(o) ==
    LET before == {p \in VotersOffsets : p <= o}
    IN IF before # {} THEN At(Max(before)) ELSE BaseVoters

VoterSetAt(o) == VotersAt(o).voters
LastVoters == VotersAt(LogEnd - 1)
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

(* The snapshot createSnapshot writes at end offset s: RecordsSnapshotWriter's KRaftVersionRecord and VotersRecord of
   what is in force at s - 1, none at kraft.version 0. *)
SnapshotAt(s) ==
    [end |-> s, kraftVersion |-> KRaftVersionAt(s - 1),
     voters |-> IF KRaftVersionAt(s - 1) = 1 THEN VoterSetAt(s - 1) ELSE {},
     directoryIds |-> IF KRaftVersionAt(s - 1) = 1 THEN VotersAt(s - 1).directoryIds ELSE {}]

(* The read position as far as it decides something: a snapshot fetch still to come (else the log end). *)
ReadEnd(position, end, taken) == IF taken < MaxSnapshots THEN position ELSE end

(* The log grows by rs, which the control-record state machine reads (maybeLoadLog). *)
Appended(rs) ==
    /\ log' = log \o rs
    /\ readEnd' = ReadEnd(Max({readEnd, LogEnd + Len(rs)}), LogEnd + Len(rs), snapshotsTaken)

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
    /\ logStart = 0
    /\ snapshots = {}
    /\ readEnd = Len(log)
    /\ snapshotsTaken = 0

(* AddRaftVoter for a new voter: the leader asks it for its ApiVersions; the add is pending from now on. *)
HandleAddVoterRequest(r) ==
    /\ ChangeAllowed
    /\ r \notin LastVoterSet
    /\ pending' = [kind |-> "add", voter |-> r, offset |-> None]
    /\ changes' = changes + 1
    /\ UNCHANGED <<bootstrapVersion, log, hw, epochStart, role, volatileVoters, requestedVersion, elections,
                   snapshotVars>>

(* The new voter's ApiVersions answer: caught up, the set with it (and its directory id) is appended; lagging, the
   add is aborted. *)
HandleAddVoterApiVersions(caughtUp) ==
    /\ role = "Leader"
    /\ pending.kind = "add"
    /\ pending.offset = None
    /\ IF caughtUp
       THEN /\ LogEnd < MaxLog
            /\ Appended(<<VotersRecord(LastVoterSet \cup {pending.voter},
                                       LastVoters.directoryIds \cup {pending.voter})>>)
            /\ pending' = [pending EXCEPT !.offset = LogEnd]
       ELSE /\ pending' = NoPending
            /\ UNCHANGED <<log, readEnd>>
    /\ UNCHANGED <<bootstrapVersion, hw, epochStart, role, volatileVoters, requestedVersion, changes, elections,
                   logStart, snapshots, snapshotsTaken>>

(* RemoveRaftVoter of a voter of the committed set, never the last one: the set without it is appended. *)
HandleRemoveVoterRequest(r) ==
    /\ ChangeAllowed
    /\ LogEnd < MaxLog
    /\ r \in LastVoterSet
    /\ Cardinality(LastVoterSet) > 1
    /\ Appended(<<VotersRecord(LastVoterSet \ {r}, LastVoters.directoryIds \ {r})>>)
    /\ pending' = [kind |-> "remove", voter |-> r, offset |-> LogEnd]
    /\ changes' = changes + 1
    /\ UNCHANGED <<bootstrapVersion, hw, epochStart, role, volatileVoters, requestedVersion, elections,
                   logStart, snapshots, snapshotsTaken>>

(* UpdateRaftVoter of a voter: answered at once; kraft.version 1 appends the set, 0 updates the in-memory voters. *)
HandleUpdateVoterRequest(r) ==
    /\ role = "Leader"
    /\ changes < MaxChanges
    /\ pending = NoPending
    /\ LeaderHwm # None
    /\ IF LastKRaftVersion = 1
       THEN /\ LogEnd < MaxLog
            /\ LastVoterSetOffset < LeaderHwm
            /\ r \in LastVoterSet
            /\ Appended(<<VotersRecord(LastVoterSet, LastVoters.directoryIds \cup {r})>>)
            /\ UNCHANGED volatileVoters
       ELSE /\ r \in InitVoters
            /\ volatileVoters' = volatileVoters \cup {r}
            /\ UNCHANGED <<log, readEnd>>
    /\ changes' = changes + 1
    /\ UNCHANGED <<bootstrapVersion, hw, epochStart, role, pending, requestedVersion, elections,
                   logStart, snapshots, snapshotsTaken>>

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
    /\ LogEnd + 2 <= MaxLog
    /\ Appended(Batch(<<KRaftVersion1, VotersRecord(InitVoters, volatileVoters)>>))
    /\ volatileVoters' = {}
    /\ requestedVersion' = 1
    /\ UNCHANGED <<bootstrapVersion, hw, epochStart, role, pending, changes, elections,
                   logStart, snapshots, snapshotsTaken>>

(* A majority has replicated up to m: the high watermark moves past the epoch start; a pending change whose
   VotersRecord is now committed completes, and a leader no longer in the committed set resigns. *)
NextHighWatermark(m) ==
    /\ role = "Leader"
    /\ m > epochStart
    /\ m > hw
    /\ m <= LogEnd
    /\ hw' = m
    /\ IF pending.offset # None /\ m > pending.offset
       THEN /\ pending' = NoPending
            /\ IF pending.kind = "remove" /\ Local \notin LastVoterSet
               THEN role' = "Follower" /\ requestedVersion' = None
               ELSE UNCHANGED <<role, requestedVersion>>
       ELSE UNCHANGED <<pending, role, requestedVersion>>
    /\ UNCHANGED <<bootstrapVersion, log, epochStart, volatileVoters, changes, elections, snapshotVars>>

(* A follower's log truncated to end, a batch's start (never below the high watermark): later voter sets and
   kraft.version are forgotten; the read position stays (truncateNewEntries). Left out: end a snapshot's end where a
   VotersRecord starts (Kafka 4.3 forgets every voter set there). *)
TruncateControlRecords(end) ==
    /\ role = "Follower"
    /\ hw <= end
    /\ end < LogEnd
    /\ At(end).batchStart
    /\ ~(end \in {sn.end : sn \in snapshots} /\ At(end).type = "Voters")
    /\ log' = SubSeq(log, 1, end - logStart)
    /\ readEnd' = ReadEnd(readEnd, end, snapshotsTaken)
    /\ UNCHANGED <<bootstrapVersion, hw, epochStart, role, pending, volatileVoters, requestedVersion, changes,
                   elections, logStart, snapshots, snapshotsTaken>>

(* The state machine snapshots the committed prefix up to s, a batch's end past the latest snapshot: the snapshot
   carries what is in force at s - 1 (SnapshotAt); freezing it trims the history before it, which changes no value
   from s on. *)
HandleCreateSnapshot(s) ==
    /\ snapshotsTaken < MaxSnapshots
    /\ s > LatestSnapshotEnd
    /\ s <= hw
    /\ s < LogEnd => At(s).batchStart
    /\ snapshots' = snapshots \cup {SnapshotAt(s)}
    /\ snapshotsTaken' = snapshotsTaken + 1
    /\ readEnd' = ReadEnd(readEnd, LogEnd, snapshotsTaken + 1)
    /\ UNCHANGED <<bootstrapVersion, log, hw, epochStart, role, pending, volatileVoters, requestedVersion, changes,
                   elections, logStart>>

(* The log's cleaner deletes the records before the snapshot ending at s, past the log start (at most the high
   watermark); the older snapshots go, the voter set in force stays (the snapshot's before the new log start). *)
DeleteBeforeSnapshot(s) ==
    /\ s \in {sn.end : sn \in snapshots}
    /\ s > logStart
    /\ s <= hw
    /\ log' = SubSeq(log, s - logStart + 1, Len(log))
    /\ logStart' = s
    /\ snapshots' = {sn \in snapshots : sn.end >= s}
    /\ UNCHANGED <<bootstrapVersion, hw, epochStart, role, pending, volatileVoters, requestedVersion, changes,
                   elections, readEnd, snapshotsTaken>>

(* The voter sets a leader's snapshot may carry here: the node's committed set, or one voter added or removed. *)
FetchableVoterSets ==
    LET c == VoterSetAt(hw - 1)
    IN ({c} \cup {c \cup {r} : r \in Ids} \cup {c \ {r} : r \in c}) \ {{}}

(* A follower fetches its leader's snapshot ending at e past what it has read (so maybeLoadSnapshot loads it): the
   snapshot replaces the whole log, its kraft.version (at least the committed one) and voter set replace the node's,
   and the high watermark moves to its end. *)
HandleFetchSnapshotResponse(e, v, s) ==
    /\ role = "Follower"
    /\ snapshotsTaken < MaxSnapshots
    /\ e > readEnd
    /\ v >= KRaftVersionAt(hw - 1)
    /\ IF v = 1 THEN s \in FetchableVoterSets ELSE s = {}
    /\ log' = <<>>
    /\ logStart' = e
    /\ snapshots' = {[end |-> e, kraftVersion |-> v, voters |-> s, directoryIds |-> s]}
    /\ hw' = e
    /\ readEnd' = e
    /\ snapshotsTaken' = snapshotsTaken + 1
    /\ UNCHANGED <<bootstrapVersion, epochStart, role, pending, volatileVoters, requestedVersion, changes, elections>>

(* Environment: the node, a voter of the latest voter set, wins an election and writes its first batch. *)
BecomeLeader ==
    /\ role = "Follower"
    /\ elections < MaxElections
    /\ LogEnd + Len(StartOfEpochBatch) <= MaxLog
    /\ Local \in LastVoterSet
    /\ Appended(StartOfEpochBatch)
    /\ epochStart' = LogEnd
    /\ role' = "Leader"
    /\ volatileVoters' = VolatileVotersAtEpochStart
    /\ elections' = elections + 1
    /\ UNCHANGED <<bootstrapVersion, hw, pending, requestedVersion, changes, logStart, snapshots, snapshotsTaken>>

(* Environment: the state machine above Raft appends a batch of data records (one offset). *)
ClientAppend ==
    /\ role = "Leader"
    /\ LogEnd < MaxLog
    /\ Appended(<<Data>>)
    /\ UNCHANGED <<bootstrapVersion, hw, epochStart, role, pending, volatileVoters, requestedVersion, changes,
                   elections, logStart, snapshots, snapshotsTaken>>

(* Environment: another node is elected; the pending operation fails with NOT_LEADER_OR_FOLLOWER. *)
LoseLeadership ==
    /\ role = "Leader"
    /\ role' = "Follower"
    /\ pending' = NoPending
    /\ volatileVoters' = {}
    /\ requestedVersion' = None
    /\ UNCHANGED <<bootstrapVersion, log, hw, epochStart, changes, elections, snapshotVars>>

(* Environment: the pending add or remove times out (REQUEST_TIMED_OUT); its VotersRecord, if any, stays. *)
PendingOperationExpires ==
    /\ role = "Leader"
    /\ pending # NoPending
    /\ pending' = NoPending
    /\ UNCHANGED <<bootstrapVersion, log, hw, epochStart, role, volatileVoters, requestedVersion, changes, elections,
                   snapshotVars>>

Next ==
    \/ \E r \in Ids : HandleAddVoterRequest(r)
    \/ \E caughtUp \in BOOLEAN : HandleAddVoterApiVersions(caughtUp)
    \/ \E r \in Ids : HandleRemoveVoterRequest(r)
    \/ \E r \in Ids : HandleUpdateVoterRequest(r)
    \/ MaybeAppendUpgradedKraftVersion
    \/ \E m \in 1..MaxLog : NextHighWatermark(m)
    \/ \E end \in 0..MaxLog - 1 : TruncateControlRecords(end)
    \/ \E s \in 1..MaxLog : HandleCreateSnapshot(s)
    \/ \E s \in 1..MaxLog : DeleteBeforeSnapshot(s)
    \/ \E e \in 1..MaxLog - 1, v \in {0, 1}, s \in SUBSET Ids : HandleFetchSnapshotResponse(e, v, s)
    \/ BecomeLeader
    \/ ClientAppend
    \/ LoseLeadership
    \/ PendingOperationExpires

Spec == Init /\ [][Next]_vars

----------------------------------------------------------------------------
Record == {[r EXCEPT !.batchStart = b] : r \in {LeaderChange, Data, KRaftVersion1}
                                          \cup {VotersRecord(s, d) : s \in SUBSET Ids, d \in SUBSET Ids},
                                     b \in BOOLEAN}

Snapshot == [end : 1..MaxLog, kraftVersion : {0, 1}, voters : SUBSET Ids, directoryIds : SUBSET Ids]

TypeOK ==
    /\ bootstrapVersion \in {0, 1}
    /\ logStart \in 0..MaxLog
    /\ log \in Seq(Record) /\ LogEnd <= MaxLog
    /\ hw \in logStart..LogEnd
    /\ epochStart \in 0..MaxLog - 1
    /\ role \in {"Leader", "Follower"}
    /\ pending \in {NoPending} \cup [kind : {"add", "remove"}, voter : Ids, offset : {None} \cup 0..MaxLog - 1]
    /\ volatileVoters \in SUBSET InitVoters
    /\ requestedVersion \in {None, 1}
    /\ changes \in 0..MaxChanges
    /\ elections \in 0..MaxElections
    /\ snapshots \subseteq Snapshot
    /\ readEnd \in LogEnd..MaxLog
    /\ snapshotsTaken \in 0..MaxSnapshots

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
    \A o \in logStart - 1..LogEnd - 1 : VoterSetAt(o) # {}

(* A pending change's VotersRecord is the latest one and is not committed yet. *)
PendingChangeIsTheLatestRecord ==
    pending.offset # None => /\ pending.offset = LastVoterSetOffset
                             /\ pending.offset >= hw

(* The high watermark never decreases and the committed records never change (truncation stops at it; a deleted
   prefix or a log replaced by a snapshot is gone, not changed). *)
CommittedRecordsStay ==
    [][/\ hw' >= hw
       /\ LogEnd' >= hw
       /\ \A o \in logStart'..hw - 1 : o >= logStart => log'[o - logStart' + 1] = log[o - logStart + 1]]_vars

(* A snapshot covers committed records only: its end is at most the high watermark. *)
SnapshotsAreCommitted ==
    \A sn \in snapshots : sn.end <= hw

(* The log starts at a snapshot's end (or at 0), and no snapshot lies before the log start. *)
LogStartsAtASnapshot ==
    /\ \A sn \in snapshots : sn.end >= logStart
    /\ logStart > 0 => \E sn \in snapshots : sn.end = logStart

(* A snapshot past the log start carries the kraft.version in force at its last offset and, at kraft.version 1, the
   voter set in force there (RecordsSnapshotWriter's control records). *)
SnapshotCarriesTheVotersInForce ==
    \A sn \in snapshots :
        sn.end > logStart => /\ sn.kraftVersion = KRaftVersionAt(sn.end - 1)
                             /\ sn.kraftVersion = 1 => /\ VoterSetAt(sn.end - 1) = sn.voters
                                                      /\ VotersAt(sn.end - 1).directoryIds = sn.directoryIds

(* Deleting the log's prefix before a snapshot changes neither the voter set nor the kraft.version in force at any
   offset from the snapshot's last on. *)
DeletingThePrefixKeepsTheVotersInForce ==
    [][logStart' > logStart /\ snapshotsTaken' = snapshotsTaken =>
       \A o \in logStart' - 1..LogEnd - 1 : /\ (VoterSetAt(o))' = VoterSetAt(o)
                                            /\ (VotersAt(o).directoryIds)' = VotersAt(o).directoryIds
                                            /\ (KRaftVersionAt(o))' = KRaftVersionAt(o)]_vars

(* The committed kraft.version never decreases: an upgrade is taken back only while uncommitted. *)
CommittedKRaftVersionNeverDecreases ==
    [][KRaftVersionAt(hw - 1) <= (KRaftVersionAt(hw - 1))']_vars
=============================================================================
