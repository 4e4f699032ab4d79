---------------------------- MODULE KRaftShutdown ----------------------------
(***************************************************************************)
(* Graceful shutdown and EndQuorumEpoch's election back-off as Kafka 4.3   *)
(* runs them (kraftspec rule book §3.13, §3.5, §3.9): one node of a small  *)
(* voter set (a voter of three, the only voter, or an observer) and its    *)
(* environment. shutdown(timeoutMs) starts a timer; every poll first asks  *)
(* maybeCompleteShutdown, which times the shutdown out once the timer has  *)
(* expired, else completes it when the node is an observer, the only voter *)
(* or knows a leader other than itself; a finished node is polled no more. *)
(* Until then a leader resigns (EndQuorumEpoch to the other voters, never  *)
(* the epoch's LeaderChange record if it wins while shutting down), a      *)
(* nominee keeps its election, an Unattached voter waits, and no election  *)
(* timer fires. A follower told by its leader's EndQuorumEpoch where it    *)
(* stands among the preferred successors waits 0 ms if first (or the list  *)
(* is empty), else min(max, (max >> (n-1)) << (p-1)), the maximum if       *)
(* absent, then starts a pre-vote (Prospective, keeping the leader).       *)
(*                                                                         *)
(* Each action is one input with the poll that follows it (Kafka's poll),  *)
(* named after the reference function it follows (kraftspec.reference      *)
(* raft, raft_rules):                                                      *)
(*   HandleShutdown ~ _handle_shutdown, then _maybe_complete_shutdown      *)
(*     (raft_rules.shutdown_can_complete) or _resign;                      *)
(*   Poll ~ _poll after a Tick one ms later (the shutdown's timer, the     *)
(*     follower's back-off deadline): the environment's time;              *)
(*   HandleEndQuorumEpochRequest ~ _handle_end_quorum_epoch_request        *)
(*     (raft_rules.end_quorum_epoch_backoff);                              *)
(*   HandleBeginQuorumEpochRequest ~ _handle_begin_quorum_epoch_request    *)
(*     (a remote leader becomes known: an election lost);                  *)
(*   HandleVoteResponsePreVote ~ _handle_vote_response of pre-votes        *)
(*     (_maybe_prospective_won, _prospective_lost);                        *)
(*   HandleVoteResponse ~ _handle_vote_response (_maybe_candidate_won,     *)
(*     _to_leader, and _resign in the poll while shutting down);           *)
(*   HandleQuorumEpochResponse ~ _handle_quorum_epoch_response (the        *)
(*     resigned leader's EndQuorumEpoch answered);                         *)
(*   HandleAppend ~ _handle_append.                                        *)
(*                                                                         *)
(* Abstracted: the election, fetch, request and check-quorum timeouts lie  *)
(* beyond MaxTime (only the shutdown's timer and the back-off fire); the   *)
(* other voters are an environment answering at once; requests on the      *)
(* wire, fetched records and the successors' order are not modelled.       *)
(* Observers get neither Begin- nor EndQuorumEpoch (Kafka sends both to    *)
(* voters only).                                                           *)
(*                                                                         *)
(* Where Kafka differs from KIP-595's text: the KIP has a resigning leader *)
(* send EndQuorumEpoch and stop; Kafka keeps it Resigned (granting votes,  *)
(* resending EndQuorumEpoch) until a new leader is known or its shutdown   *)
(* times out; the KIP's follower starts a vote at once, Kafka's a pre-vote *)
(* (KIP-996) that keeps the leader, so a shutting-down Prospective that    *)
(* knows its old leader may still leave; an empty successor list puts      *)
(* every follower first (0 ms); the only voter completes while Leader.     *)
(***************************************************************************)
EXTENDS Integers, Sequences, FiniteSets

CONSTANTS Ids,             \* the replica ids
          Local,           \* the node followed
          VoterSets,       \* the voter sets tried (Local's role in each: a voter, the only voter, an observer)
          ShutdownTimeout, \* shutdown(timeoutMs)'s timeoutMs
          BackoffMax,      \* controller.quorum.election.backoff.max.ms
          MaxTime,         \* bound on the clock (ms)
          MaxEpoch,        \* bound on the epoch
          MaxLog           \* bound on the log's length

VARIABLES voters,   \* the voter set (fixed)
          role,     \* "Leader", "Resigned", "Follower", "Unattached", "Prospective" or "Candidate"
          epoch,    \* the node's epoch
          leader,   \* the leader it knows in this epoch (None: none; a Candidate knows none)
          shutdown, \* "none", "running", "completed" or "timed_out"
          deadline, \* the shutdown's timer (None before shutdown)
          now,      \* the clock (ms)
          backoff,  \* a Follower's election deadline set by EndQuorumEpoch (None: the fetch timeout, beyond MaxTime)
          unacked,  \* a Resigned leader's voters that have not answered its EndQuorumEpoch
          logEnd    \* the log's end offset

vars == <<voters, role, epoch, leader, shutdown, deadline, now, backoff, unacked, logEnd>>

None == -1
Finished == {"completed", "timed_out"}
IsVoter == Local \in voters
Others == voters \ {Local}

(* raft_rules.shutdown_can_complete: an observer, the only voter, or a remote leader known. *)
CanComplete == ~IsVoter \/ voters = {Local} \/ leader \notin {None, Local}

(* raft_rules.end_quorum_epoch_backoff (strictExponentialElectionBackoffMs): 0 first, the maximum if absent. *)
EndQuorumEpochBackoff(position, size) ==
    IF position = 0 THEN 0
    ELSE IF position >= size THEN BackoffMax
    ELSE LET shifted == (BackoffMax \div (2 ^ (size - 1))) * (2 ^ (position - 1))
         IN IF shifted < BackoffMax THEN shifted ELSE BackoffMax

(* endEpochElectionBackoff: the local node's place in the list, its length when absent. *)
Position(succ) ==
    IF \E i \in 1..Len(succ) : succ[i] = Local THEN CHOOSE i \in 0..Len(succ) - 1 : succ[i + 1] = Local ELSE Len(succ)

(* The wait EndQuorumEpoch with this list of successors gives the local node. *)
Backoff(succ) == EndQuorumEpochBackoff(Position(succ), Len(succ))

(* Orderings of some of the ids in S. *)
Orderings(S) ==
    UNION {{s \in [1..n -> S] : \A i, j \in 1..n : i # j => s[i] # s[j]} : n \in 0..Cardinality(S)}

(* Every list of preferred successors over the ids. *)
SuccessorLists == Orderings(Ids)

(* The node still takes input: no shutdown, or one still running. *)
Running == shutdown \in {"none", "running"}

(* One poll's shutdown check (maybeCompleteShutdown) at time t; the rest of the poll runs only when it is false. *)
Finishes(t) == shutdown = "running" /\ (t >= deadline \/ CanComplete)
Finish(t) == shutdown' = IF t >= deadline THEN "timed_out" ELSE "completed"

----------------------------------------------------------------------------
Init ==
    /\ voters \in VoterSets
    /\ role \in IF voters = {Local} THEN {"Leader"}
                ELSE IF IsVoter THEN {"Leader", "Follower", "Unattached", "Candidate"}
                ELSE {"Follower", "Unattached"}
    /\ epoch = 1
    /\ leader = CASE role = "Leader" -> Local
                  [] role = "Follower" -> CHOOSE l \in Others : \A m \in Others : l <= m
                  [] OTHER -> None
    /\ shutdown = "none"
    /\ deadline = None
    /\ now = 0
    /\ backoff = None
    /\ unacked = {}
    /\ logEnd = IF role = "Leader" THEN 1 ELSE 0

(* shutdown(timeoutMs) replaces any running shutdown; the poll completes it, or a leader resigns (pollLeader). *)
HandleShutdown ==
    /\ Running
    /\ deadline' = now + ShutdownTimeout
    /\ IF CanComplete
       THEN /\ shutdown' = "completed"
            /\ UNCHANGED <<role, unacked>>
       ELSE /\ shutdown' = "running"
            /\ IF role = "Leader"
               THEN role' = "Resigned" /\ unacked' = Others
               ELSE UNCHANGED <<role, unacked>>
    /\ UNCHANGED <<voters, epoch, leader, now, backoff, logEnd>>

(* A poll one ms later: the shutdown times out at its timer; a voter following a leader campaigns (pre-vote)
   once the back-off EndQuorumEpoch set has passed (no other timer fires within MaxTime). *)
Poll ==
    /\ Running
    /\ now < MaxTime
    /\ now' = now + 1
    /\ IF Finishes(now + 1)
       THEN /\ Finish(now + 1)
            /\ UNCHANGED <<role, backoff>>
       ELSE /\ IF role = "Follower" /\ IsVoter /\ backoff # None /\ now + 1 >= backoff
               THEN role' = "Prospective" /\ backoff' = None
               ELSE UNCHANGED <<role, backoff>>
            /\ UNCHANGED shutdown
    /\ UNCHANGED <<voters, epoch, leader, deadline, unacked, logEnd>>

(* EndQuorumEpoch from the leader the node follows: its election deadline moves to its back-off by position;
   the poll that follows starts the pre-vote at once when that is 0. *)
HandleEndQuorumEpochRequest(succ) ==
    /\ Running
    /\ IsVoter
    /\ role = "Follower"
    /\ succ \in Orderings(voters \ {leader})  \* the preferred-successor lists the leader may send
    /\ IF Backoff(succ) = 0
       THEN role' = "Prospective" /\ backoff' = None
       ELSE role' = role /\ backoff' = now + Backoff(succ)
    /\ UNCHANGED <<voters, epoch, leader, shutdown, deadline, now, unacked, logEnd>>

(* BeginQuorumEpoch from another voter: a leader of a later epoch, or of this one when the node knows none
   (an election it lost); it follows it, and a running shutdown completes in the poll. *)
HandleBeginQuorumEpochRequest(l, e) ==
    /\ Running
    /\ IsVoter
    /\ l \in Others
    /\ \/ e = epoch + 1 /\ e <= MaxEpoch
       \/ e = epoch /\ leader = None
    /\ role' = "Follower"
    /\ leader' = l
    /\ epoch' = e
    /\ backoff' = None
    /\ unacked' = {}
    /\ IF shutdown = "running" THEN shutdown' = "completed" ELSE UNCHANGED shutdown
    /\ UNCHANGED <<voters, deadline, now, logEnd>>

(* Pre-vote answers: granted by a majority, the Prospective becomes a Candidate of the next epoch; rejected by a
   majority, it goes back to following its leader (_prospective_lost). *)
HandleVoteResponsePreVote(granted) ==
    /\ Running
    /\ role = "Prospective"
    /\ IF granted
       THEN /\ epoch < MaxEpoch
            /\ role' = "Candidate" /\ epoch' = epoch + 1 /\ leader' = None
       ELSE /\ role' = "Follower"
            /\ UNCHANGED <<epoch, leader>>
    /\ UNCHANGED <<voters, shutdown, deadline, now, backoff, unacked, logEnd>>

(* A granted vote makes a majority: the Candidate leads; it writes the LeaderChange record unless it is shutting
   down, when the same poll resigns first. *)
HandleVoteResponse ==
    /\ Running
    /\ role = "Candidate"
    /\ leader' = Local
    /\ IF shutdown = "running"
       THEN role' = "Resigned" /\ unacked' = Others /\ UNCHANGED logEnd
       ELSE role' = "Leader" /\ logEnd < MaxLog /\ logEnd' = logEnd + 1 /\ UNCHANGED unacked
    /\ UNCHANGED <<voters, epoch, shutdown, deadline, now, backoff>>

(* A voter answers the resigned leader's EndQuorumEpoch. *)
HandleQuorumEpochResponse(v) ==
    /\ Running
    /\ role = "Resigned"
    /\ v \in unacked
    /\ unacked' = unacked \ {v}
    /\ UNCHANGED <<voters, role, epoch, leader, shutdown, deadline, now, backoff, logEnd>>

(* The state machine above Raft appends a batch (a leader not shutting down writes it in its poll). *)
HandleAppend ==
    /\ Running
    /\ role = "Leader"
    /\ shutdown = "none"
    /\ logEnd < MaxLog
    /\ logEnd' = logEnd + 1
    /\ UNCHANGED <<voters, role, epoch, leader, shutdown, deadline, now, backoff, unacked>>

Next ==
    \/ HandleShutdown
    \/ Poll
    \/ \E s \in SuccessorLists : HandleEndQuorumEpochRequest(s)
    \/ \E l \in Ids, e \in 1..MaxEpoch : HandleBeginQuorumEpochRequest(l, e)
    \/ \E granted \in BOOLEAN : HandleVoteResponsePreVote(granted)
    \/ HandleVoteResponse
    \/ \E v \in Ids : HandleQuorumEpochResponse(v)
    \/ HandleAppend

Spec == Init /\ [][Next]_vars

----------------------------------------------------------------------------
TypeOK ==
    /\ voters \in VoterSets
    /\ role \in {"Leader", "Resigned", "Follower", "Unattached", "Prospective", "Candidate"}
    /\ epoch \in 1..MaxEpoch
    /\ leader \in {None} \cup Ids
    /\ shutdown \in {"none", "running"} \cup Finished
    /\ deadline \in {None} \cup 0..MaxTime + ShutdownTimeout
    /\ now \in 0..MaxTime
    /\ backoff \in {None} \cup 0..MaxTime + BackoffMax
    /\ unacked \subseteq Others
    /\ logEnd \in 0..MaxLog

(* A node that finished its shutdown is not Leader, unless it is the only voter (which completes at once). *)
FinishedNeverLeads ==
    shutdown \in Finished => role # "Leader" \/ voters = {Local}

(* While its shutdown runs, a node is never Leader: the first poll resigned. *)
ShuttingDownNeverLeads ==
    shutdown = "running" => role # "Leader"

(* A shutdown completes only for an observer, the only voter, or a node that knows a remote leader: a voter with
   no remote leader known waits for its timer. *)
CompletesOnlyWhenItMayLeave ==
    shutdown = "completed" => CanComplete /\ now < deadline

(* A running shutdown has not reached its timer; a timed-out one has. *)
RunsUntilItsTimer ==
    /\ shutdown = "running" => now < deadline
    /\ shutdown = "timed_out" => now >= deadline

(* A node is Resigned only because it is shutting down (the one way this spec resigns). *)
ResignedOnlyWhileShuttingDown ==
    role = "Resigned" => shutdown # "none"

(* A voter's back-off deadline lies ahead, within the maximum back-off. *)
BackoffAhead ==
    backoff # None => role = "Follower" /\ now < backoff /\ backoff <= now + BackoffMax

(* A node that finished its shutdown takes no input: nothing changes any more. *)
FinishedTakesNoInput ==
    [][(shutdown \in Finished) => UNCHANGED vars]_vars

(* A node shutting down never writes to its log (a resigned leader never appends, a won election writes no
   LeaderChange record). *)
NoAppendWhileShuttingDown ==
    [][shutdown # "none" => logEnd' = logEnd]_vars
=============================================================================
