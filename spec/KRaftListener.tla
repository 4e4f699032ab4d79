---------------------------- MODULE KRaftListener ----------------------------
(***************************************************************************)
(* The listener's view (kraftspec rule book §3.12): what the state machine *)
(* above Raft (a registered RaftClient.Listener) learns from one node, as  *)
(* Kafka 4.3's KafkaRaftClient tells it: the committed records up to the   *)
(* high watermark (handleCommit), the latest snapshot when it is new or    *)
(* the log no longer holds its next offset (handleLoadSnapshot, KIP-630),  *)
(* and the leader and epoch (handleLeaderChange), the local leadership     *)
(* only once the records up to and including the epoch start have been     *)
(* handed over (ListenerContext.maybeFireLeaderChange with the epoch       *)
(* start offset), and never by a Resigned node (pollListeners).            *)
(*                                                                         *)
(* Each listener action of Next is named after the reference function it   *)
(* follows (kraftspec.reference.raft, raft_rules):                          *)
(* UpdateListenersProgress ~ _update_listeners_progress with               *)
(* listener_loads_snapshot, MaybeFireLeaderChange ~                        *)
(* _maybe_fire_leader_change with should_fire_leader_change and            *)
(* listener_caught_up, PollListeners ~ _poll_listeners (registers the      *)
(* listener, then both). Kafka runs them at fixed points of a poll (after  *)
(* a handler moved the high watermark, on the transitions to Unattached,   *)
(* Candidate and Follower, last in every poll); here they may run between  *)
(* any two moves of the node, which includes Kafka's points.               *)
(*                                                                         *)
(* The environment moves the node: AdvanceHighWatermark (a majority, or    *)
(* the leader's answer to a follower), AppendRecord (the leader's state    *)
(* machine, or a follower's fetch), CreateSnapshot (of committed records   *)
(* past the latest snapshot), AdvanceLogStart (to the latest snapshot),    *)
(* StartElection (Prospective elided) and WinElection (the LeaderChange    *)
(* record at the epoch start), LearnLeader (another node's leadership),    *)
(* Restart (a new process: the listener registers anew; a leader comes     *)
(* back Resigned).                                                         *)
(*                                                                         *)
(* Abstracted: records are their epochs, every record is flushed (a        *)
(* restart keeps the log), no follower truncation, one other replica       *)
(* leads at a time. "committed" is the environment's: the highest high     *)
(* watermark the node has known (a later one is never lower, since a       *)
(* leader holds every committed record).                                   *)
(*                                                                         *)
(* What the KIP text leaves open, as Kafka 4.3 runs it: the local         *)
(* leadership waits for the epoch start on an empty log too (KAFKA-15345,  *)
(* Kafka 3.6; before, such a leader told its listener at once); a newly    *)
(* registered listener learns the current leader at its first poll         *)
(* (KAFKA-13321); a Resigned node tells it nothing; a listener handed      *)
(* nothing yet counts as new (Kafka's next offset -1) and is handed the    *)
(* latest snapshot even where the log still holds what it covers.          *)
(***************************************************************************)
EXTENDS Integers, Sequences

CONSTANTS Local,        \* the node followed
          Others,       \* the other replicas, which may lead
          MaxEpoch,     \* bound on the epochs
          MaxLog,       \* bound on the log end offset
          MaxRestarts   \* bound on the restarts

VARIABLES log,          \* the epochs of the records the log holds: offset logStart + i - 1 at log[i]
          logStart,     \* the log start offset
          snapshot,     \* the latest snapshot's id (end offset, epoch), or NoSnapshot
          hw,           \* the node's high watermark (None: unknown in this state)
          committed,    \* the highest high watermark the node has known (the environment's)
          role,         \* "Unattached", "Candidate", "Leader", "Follower" or "Resigned"
          epoch,        \* the node's epoch
          votedSelf,    \* whether it holds its own vote in that epoch (a restart then comes back Candidate)
          leader,       \* the leader it knows in that epoch (None: none)
          epochStart,   \* the leader's epoch start offset (None when not leading)
          registered,   \* whether the listener is registered (by the first pollListeners of a process)
          listener,     \* its view: next offset, leader and epoch told, snapshot loaded
          restarts      \* restarts so far

vars == <<log, logStart, snapshot, hw, committed, role, epoch, votedSelf, leader, epochStart, registered, listener,
          restarts>>

None == -1
NoSnapshot == [end |-> None, epoch |-> None]
NewView == [next |-> 0, leader |-> None, epoch |-> 0, snapshot |-> NoSnapshot]
LogEnd == logStart + Len(log)
Max(a, b) == IF a >= b THEN a ELSE b

(* raft_rules.listener_loads_snapshot: behind a known high watermark, new or below the log start. *)
LoadsSnapshot(v) ==
    LET starting == v.next = 0 /\ v.snapshot = NoSnapshot
        next == IF starting THEN -1 ELSE v.next
    IN snapshot # NoSnapshot /\ next < hw /\ (starting \/ next < logStart)

(* updateListenersProgress: the latest snapshot if it loads one, then the committed records up to the high
   watermark (each batch read at once). *)
Progressed(v) ==
    IF hw < 0 THEN v
    ELSE LET w == IF LoadsSnapshot(v) THEN [v EXCEPT !.next = snapshot.end, !.snapshot = snapshot] ELSE v
         IN IF hw > w.next THEN [w EXCEPT !.next = hw] ELSE w

(* raft_rules.should_fire_leader_change: a later epoch, or the same epoch now with a leader where it had none. *)
ShouldFire(v) ==
    /\ <<leader, epoch>> # <<v.leader, v.epoch>>
    /\ \/ epoch > v.epoch
       \/ leader # None /\ v.leader = None

(* maybeFireLeaderChange: the local leadership only once raft_rules.listener_caught_up to the epoch start. *)
Fired(v) ==
    IF ShouldFire(v) /\ (role = "Leader" => v.next > epochStart)
    THEN [v EXCEPT !.leader = leader, !.epoch = epoch]
    ELSE v

----------------------------------------------------------------------------
Init ==
    /\ log = <<>>
    /\ logStart = 0
    /\ snapshot = NoSnapshot
    /\ hw = None
    /\ committed = 0
    /\ role = "Unattached"
    /\ epoch = 0
    /\ votedSelf = FALSE
    /\ leader = None
    /\ epochStart = None
    /\ registered = FALSE
    /\ listener = NewView
    /\ restarts = 0

ListenerVars == <<registered, listener>>
NodeVars == <<log, logStart, snapshot, hw, committed, role, epoch, votedSelf, leader, epochStart, restarts>>

(* handleCommit and handleLoadSnapshot: the listener catches up to the high watermark. *)
UpdateListenersProgress ==
    /\ registered
    /\ listener' = Progressed(listener)
    /\ UNCHANGED <<registered>>
    /\ UNCHANGED NodeVars

(* handleLeaderChange; Kafka calls it outside Resigned only. *)
MaybeFireLeaderChange ==
    /\ registered
    /\ role # "Resigned"
    /\ listener' = Fired(listener)
    /\ UNCHANGED <<registered>>
    /\ UNCHANGED NodeVars

(* pollListeners: register a new listener, catch it up, then tell it the leader (not in Resigned). *)
PollListeners ==
    LET v == Progressed(IF registered THEN listener ELSE NewView)
    IN /\ registered' = TRUE
       /\ listener' = IF role = "Resigned" THEN v ELSE Fired(v)
       /\ UNCHANGED NodeVars

(* Environment: the leader's majority reaches m past the epoch start, or a follower learns its leader's m
   (never below what was committed, never past its log end). *)
AdvanceHighWatermark(m) ==
    /\ \/ role = "Leader" /\ m > epochStart
       \/ role = "Follower" /\ m >= committed
    /\ m > hw
    /\ m <= LogEnd
    /\ hw' = m
    /\ committed' = Max(committed, m)
    /\ UNCHANGED <<log, logStart, snapshot, role, epoch, votedSelf, leader, epochStart, restarts>>
    /\ UNCHANGED ListenerVars

(* Environment: the leader's state machine appends a record, or a follower fetches one of its epoch. *)
AppendRecord ==
    /\ role \in {"Leader", "Follower"}
    /\ LogEnd < MaxLog
    /\ log' = Append(log, epoch)
    /\ UNCHANGED <<logStart, snapshot, hw, committed, role, epoch, votedSelf, leader, epochStart, restarts>>
    /\ UNCHANGED ListenerVars

(* Environment: the state machine snapshots the committed records up to e, past the latest snapshot. *)
CreateSnapshot(e) ==
    /\ e > logStart
    /\ e > snapshot.end
    /\ e <= hw
    /\ snapshot' = [end |-> e, epoch |-> log[e - logStart]]
    /\ UNCHANGED <<log, logStart, hw, committed, role, epoch, votedSelf, leader, epochStart, restarts>>
    /\ UNCHANGED ListenerVars

(* Environment: the log forgets the records the latest snapshot holds (deleteBeforeSnapshot). *)
AdvanceLogStart ==
    /\ snapshot # NoSnapshot
    /\ snapshot.end > logStart
    /\ snapshot.end <= hw
    /\ log' = SubSeq(log, snapshot.end - logStart + 1, Len(log))
    /\ logStart' = snapshot.end
    /\ UNCHANGED <<snapshot, hw, committed, role, epoch, votedSelf, leader, epochStart, restarts>>
    /\ UNCHANGED ListenerVars

(* Environment: an election timeout; the node (Prospective elided) is a Candidate of the next epoch. *)
StartElection ==
    /\ role \in {"Unattached", "Candidate", "Follower"}
    /\ epoch < MaxEpoch
    /\ role' = "Candidate"
    /\ epoch' = epoch + 1
    /\ votedSelf' = TRUE
    /\ leader' = None
    /\ UNCHANGED <<log, logStart, snapshot, hw, committed, epochStart, restarts>>
    /\ UNCHANGED ListenerVars

(* Environment: the Candidate wins; its LeaderChange record starts the epoch at the log end. *)
WinElection ==
    /\ role = "Candidate"
    /\ LogEnd < MaxLog
    /\ role' = "Leader"
    /\ leader' = Local
    /\ epochStart' = LogEnd
    /\ log' = Append(log, epoch)
    /\ hw' = None
    /\ votedSelf' = FALSE
    /\ UNCHANGED <<logStart, snapshot, committed, epoch, restarts>>
    /\ UNCHANGED ListenerVars

(* Environment: another replica r leads epoch e: a later epoch, or the same one from Unattached, Candidate or
   Resigned (KAFKA-18379); the vote for itself is kept within the epoch. *)
LearnLeader(r, e) ==
    /\ e >= epoch
    /\ e = epoch => role \in {"Unattached", "Candidate", "Resigned"}
    /\ role' = "Follower"
    /\ epoch' = e
    /\ votedSelf' = (votedSelf /\ e = epoch)
    /\ leader' = r
    /\ epochStart' = None
    /\ hw' = IF role = "Resigned" THEN None ELSE hw
    /\ UNCHANGED <<log, logStart, snapshot, committed, restarts>>
    /\ UNCHANGED ListenerVars

(* Environment: a crash and restart: the quorum-state file gives the role (a leader comes back Resigned, a node
   that voted for itself Candidate), the high watermark is unknown, the listener is registered anew by the next
   poll. *)
Restart ==
    /\ restarts < MaxRestarts
    /\ role' = CASE role \in {"Leader", "Resigned"} -> "Resigned"
                  [] votedSelf -> "Candidate"
                  [] OTHER -> role
    /\ leader' = IF role' = "Candidate" THEN None ELSE leader
    /\ hw' = None
    /\ epochStart' = None
    /\ registered' = FALSE
    /\ listener' = NewView
    /\ restarts' = restarts + 1
    /\ UNCHANGED <<log, logStart, snapshot, committed, epoch, votedSelf>>

Next ==
    \/ UpdateListenersProgress
    \/ MaybeFireLeaderChange
    \/ PollListeners
    \/ \E m \in 0..MaxLog : AdvanceHighWatermark(m)
    \/ AppendRecord
    \/ \E e \in 1..MaxLog : CreateSnapshot(e)
    \/ AdvanceLogStart
    \/ StartElection
    \/ WinElection
    \/ \E r \in Others, e \in 0..MaxEpoch : LearnLeader(r, e)
    \/ Restart

Spec == Init /\ [][Next]_vars

----------------------------------------------------------------------------
Snapshots == {NoSnapshot} \cup [end : 1..MaxLog, epoch : 0..MaxEpoch]

TypeOK ==
    /\ log \in Seq(0..MaxEpoch) /\ LogEnd <= MaxLog
    /\ logStart \in 0..MaxLog
    /\ snapshot \in Snapshots
    /\ hw \in {None} \cup 0..MaxLog
    /\ committed \in 0..MaxLog
    /\ role \in {"Unattached", "Candidate", "Leader", "Follower", "Resigned"}
    /\ epoch \in 0..MaxEpoch
    /\ votedSelf \in BOOLEAN
    /\ leader \in {None, Local} \cup Others
    /\ epochStart \in {None} \cup 0..MaxLog - 1
    /\ registered \in BOOLEAN
    /\ listener \in [next : 0..MaxLog, leader : {None, Local} \cup Others, epoch : 0..MaxEpoch, snapshot : Snapshots]
    /\ restarts \in 0..MaxRestarts

(* The listener never passes the high watermark: it holds committed records only. *)
ListenerNeverPassesHighWatermark ==
    registered => /\ listener.next <= committed
                  /\ hw # None => listener.next <= hw

(* The local leadership is visible only to a listener that has the records up to and including the epoch start. *)
LocalLeaderVisibleOnlyCaughtUp ==
    registered /\ role = "Leader" /\ listener.leader = Local /\ listener.epoch = epoch => listener.next > epochStart

(* A snapshot handed to the listener holds committed records only. *)
LoadedSnapshotCommitted ==
    registered /\ listener.snapshot # NoSnapshot => listener.snapshot.end <= committed

(* A listener is never told of an older epoch after a newer one. *)
ListenerNeverToldAnOlderEpoch ==
    [][registered /\ registered' => listener'.epoch >= listener.epoch]_vars

(* The listener is told of the local leadership only while the node leads (never by a Resigned node). *)
LocalLeaderToldOnlyWhileLeading ==
    [][/\ registered'
       /\ listener'.leader = Local
       /\ <<listener'.leader, listener'.epoch>> # <<listener.leader, listener.epoch>>
       => role' = "Leader"]_vars
=============================================================================
