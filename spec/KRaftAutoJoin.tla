---------------------------- MODULE KRaftAutoJoin ----------------------------
(***************************************************************************)
(* The non-leader side of KIP-853 as Kafka 4.3 runs it (kraftspec rule     *)
(* book §3.15): one node following leader Leader in epoch 1. A voter       *)
(* (pollFollowerAsVoter) tells its leader its endpoints by UpdateRaftVoter *)
(* once the update-voter-set period has passed, if its node in the voter   *)
(* set differs from its own (kraft.version 1) or the leader has not yet    *)
(* answered it (kraft.version 0, hasUpdatedLeader); an observer            *)
(* (pollFollowerAsObserver) with controller.quorum.auto.join.enable that   *)
(* may become a voter (canBecomeVoter) asks, under kraft.version 1 only,   *)
(* to remove its id's voter of another directory (RemoveRaftVoter), else   *)
(* to add itself (AddRaftVoter). Either request leaves only on the         *)
(* leader's ready connection (maybeSendRequest) and then restarts the      *)
(* period; while one is due but cannot leave, the poll sends nothing, not  *)
(* even a Fetch. Otherwise the poll fetches from the leader when nothing   *)
(* is outstanding (maybeSendFetchToBestNode); a voter whose period passed  *)
(* without a need to update restarts it. The period is the fetch timeout   *)
(* (FollowerState.updateVoterPeriodMs), both started at time 0.            *)
(*                                                                         *)
(* Answers: AddRaftVoter and RemoveRaftVoter answered NONE,                *)
(* REQUEST_TIMED_OUT or DUPLICATE_VOTER (add) / VOTER_NOT_FOUND (remove)   *)
(* restart the period (handleAddVoterResponse, handleRemoveVoterResponse); *)
(* another error is unexpected (handleUnexpectedError): the period runs    *)
(* on. UpdateRaftVoter answered NONE or UNSUPPORTED_VERSION marks the      *)
(* leader updated and restarts the fetch timer as a fetch does             *)
(* (handleUpdateVoterResponse); another error changes nothing here. A      *)
(* Fetch answer restarts the fetch timer and may carry a VotersRecord that *)
(* adds the node, removes its id's old directory, or takes its listeners.  *)
(*                                                                         *)
(* Each action is one input with the poll that follows it (Kafka's poll),  *)
(* named after the reference function it follows (kraftspec.reference      *)
(* raft, raft_reconfig_client, raft_rules):                                *)
(*   Poll ~ _poll after a Tick one ms later;                               *)
(*   HandleFetchResponse ~ _handle_fetch_response;                         *)
(*   HandleVoterChangeResponse ~ handle_voter_change_response;             *)
(*   HandleUpdateVoterResponse ~ handle_update_voter_response;             *)
(* the poll's sends ~ update_voter (should_send_update_voter), auto_join   *)
(* (should_send_add_or_remove_voter_request, auto_join_removes_old_voter)  *)
(* and _maybe_send_fetch_to_best_node.                                     *)
(*                                                                         *)
(* Abstracted: the leader and epoch never change (no BeginQuorumEpoch, no  *)
(* answer naming another leader); the request timeout and the election    *)
(* timeout lie beyond MaxTime; quorum.retry.backoff.ms is 0, so an         *)
(* unexpected answer leaves the connection ready at once (no Fetch to a    *)
(* bootstrap server); a voter is polled only before its fetch timeout (the *)
(* leader answers in time: no pre-vote); the voter set is the node's own   *)
(* entry in it (the leader and another voter never change); the log, the   *)
(* high watermark and the requests' contents are not modelled. The leader *)
(* may answer anything listed whenever a request is outstanding, and a     *)
(* Fetch may bring a voter change at any time.                             *)
(***************************************************************************)
EXTENDS Integers

CONSTANTS Local,   \* the node followed
          Leader,  \* the leader it follows
          Period,  \* controller.quorum.fetch.timeout.ms: the fetch timeout and the update-voter-set period
          MaxTime  \* bound on the clock (ms)

VARIABLES kraftVersion,   \* partitionState.lastKraftVersion (0: static voters)
          entry,          \* the node's entry in the voter set: "absent", "old" (its id, another directory),
                          \* "same" (its key and listeners; a static voter) or "stale" (its key, other listeners)
          canBecomeVoter, \* KafkaRaftClient's canBecomeVoter (the controller role)
          autoJoin,       \* controller.quorum.auto.join.enable
          now,            \* the clock (ms)
          fetchDeadline,  \* FollowerState's fetch timer
          updateDeadline, \* FollowerState's update-voter-set period timer
          updatedLeader,  \* FollowerState.hasUpdatedLeader
          inflight        \* the request outstanding to the leader ("none": its connection is ready)

vars == <<kraftVersion, entry, canBecomeVoter, autoJoin, now, fetchDeadline, updateDeadline, updatedLeader, inflight>>

Entries == {"absent", "old", "same", "stale"}
Requests == {"none", "Fetch", "AddRaftVoter", "RemoveRaftVoter", "UpdateRaftVoter"}
VoterChanges == {"AddRaftVoter", "RemoveRaftVoter", "UpdateRaftVoter"}
VoterChangeErrors == {"NONE", "REQUEST_TIMED_OUT", "DUPLICATE_VOTER", "VOTER_NOT_FOUND", "NOT_LEADER_OR_FOLLOWER"}
UpdateVoterErrors == {"NONE", "UNSUPPORTED_VERSION", "REQUEST_TIMED_OUT"}

(* QuorumState.isVoter: the node's key is in the voter set. *)
IsVoter(e) == e \in {"same", "stale"}

(* shouldSendUpdateVoteRequest: its node differs from the voter set's (kraft.version 1), or the leader has not
   answered it yet (kraft.version 0). *)
ShouldSendUpdateVoter(e, updated) == IF kraftVersion = 1 THEN e = "stale" ELSE ~updated

(* shouldSendAddOrRemoveVoterRequest. *)
ShouldSendAddOrRemoveVoter(t, upd) == kraftVersion = 1 /\ canBecomeVoter /\ autoJoin /\ t >= upd

(* What a VotersRecord from the leader makes of the node's entry: it added the node, removed its id's old directory,
   or took its listeners. *)
Fetched(e) == CASE e = "absent" -> "same" [] e = "old" -> "absent" [] e = "stale" -> "same"

(* maybeSendFetchToBestNode: a Fetch to the leader once nothing is outstanding. *)
Fetch(inf) == IF inf = "none" THEN "Fetch" ELSE inf

(* A voter change request due: sent on a ready connection, which restarts the period; else nothing leaves. *)
Send(request, t, inf, upd) == IF inf = "none" THEN <<request, t + Period>> ELSE <<inf, upd>>

(* The poll at time t (pollFollowerAsVoter / pollFollowerAsObserver) of a node with entry e, hasUpdatedLeader u,
   the request inf outstanding and the period's timer upd: the request outstanding and the timer after it. *)
PollSends(t, e, u, inf, upd) ==
    IF IsVoter(e)
    THEN IF t < upd THEN <<Fetch(inf), upd>>
         ELSE IF ShouldSendUpdateVoter(e, u) THEN Send("UpdateRaftVoter", t, inf, upd)
         ELSE <<Fetch(inf), t + Period>>
    ELSE IF ShouldSendAddOrRemoveVoter(t, upd)
         THEN Send(IF e = "old" THEN "RemoveRaftVoter" ELSE "AddRaftVoter", t, inf, upd)
         ELSE <<Fetch(inf), upd>>

Polled(t, e, u, inf, upd) ==
    LET sent == PollSends(t, e, u, inf, upd)
    IN inflight' = sent[1] /\ updateDeadline' = sent[2]

----------------------------------------------------------------------------
Init ==
    /\ kraftVersion \in {0, 1}
    /\ entry \in IF kraftVersion = 0 THEN {"absent", "same"} ELSE Entries
    /\ canBecomeVoter \in BOOLEAN
    /\ autoJoin \in BOOLEAN
    /\ now = 0
    /\ fetchDeadline = Period
    /\ updateDeadline = Period
    /\ updatedLeader = FALSE
    /\ inflight = "none"

(* A poll one ms later (a voter's only before its fetch timeout). *)
Poll ==
    /\ now < MaxTime
    /\ IsVoter(entry) => now + 1 < fetchDeadline
    /\ now' = now + 1
    /\ Polled(now + 1, entry, updatedLeader, inflight, updateDeadline)
    /\ UNCHANGED <<kraftVersion, entry, canBecomeVoter, autoJoin, fetchDeadline, updatedLeader>>

(* The leader answers the Fetch, with a VotersRecord changing the node's entry or not. *)
HandleFetchResponse(change) ==
    /\ inflight = "Fetch"
    /\ change => kraftVersion = 1 /\ entry # "same"
    /\ entry' = IF change THEN Fetched(entry) ELSE entry
    /\ fetchDeadline' = now + Period
    /\ Polled(now, entry', updatedLeader, "none", updateDeadline)
    /\ UNCHANGED <<kraftVersion, canBecomeVoter, autoJoin, now, updatedLeader>>

(* The leader answers AddRaftVoter or RemoveRaftVoter (handleAddVoterResponse, handleRemoveVoterResponse): NONE,
   REQUEST_TIMED_OUT and the error saying it is done already restart the period; another error is unexpected. *)
HandleVoterChangeResponse(error) ==
    /\ inflight \in {"AddRaftVoter", "RemoveRaftVoter"}
    /\ LET settled == IF inflight = "AddRaftVoter" THEN "DUPLICATE_VOTER" ELSE "VOTER_NOT_FOUND"
       IN Polled(now, entry, updatedLeader, "none",
                 IF error \in {"NONE", "REQUEST_TIMED_OUT", settled} THEN now + Period ELSE updateDeadline)
    /\ UNCHANGED <<kraftVersion, entry, canBecomeVoter, autoJoin, now, fetchDeadline, updatedLeader>>

(* The leader answers UpdateRaftVoter: NONE or UNSUPPORTED_VERSION marks it updated and restarts the fetch timer. *)
HandleUpdateVoterResponse(error) ==
    /\ inflight = "UpdateRaftVoter"
    /\ LET accepted == error \in {"NONE", "UNSUPPORTED_VERSION"}
       IN /\ updatedLeader' = (updatedLeader \/ accepted)
          /\ fetchDeadline' = IF accepted THEN now + Period ELSE fetchDeadline
    /\ Polled(now, entry, updatedLeader', "none", updateDeadline)
    /\ UNCHANGED <<kraftVersion, entry, canBecomeVoter, autoJoin, now>>

Next ==
    \/ Poll
    \/ \E change \in BOOLEAN : HandleFetchResponse(change)
    \/ \E error \in VoterChangeErrors : HandleVoterChangeResponse(error)
    \/ \E error \in UpdateVoterErrors : HandleUpdateVoterResponse(error)

Spec == Init /\ [][Next]_vars

----------------------------------------------------------------------------
TypeOK ==
    /\ kraftVersion \in {0, 1}
    /\ entry \in Entries
    /\ canBecomeVoter \in BOOLEAN
    /\ autoJoin \in BOOLEAN
    /\ now \in 0..MaxTime
    /\ fetchDeadline \in Period..MaxTime + Period
    /\ updateDeadline \in Period..MaxTime + Period
    /\ updatedLeader \in BOOLEAN
    /\ inflight \in Requests

(* Only a kraft.version 1 observer that may become a voter, with auto-join on, asks to join. *)
JoinsOnlyWhenAllowed ==
    inflight \in {"AddRaftVoter", "RemoveRaftVoter"} =>
        kraftVersion = 1 /\ canBecomeVoter /\ autoJoin /\ ~IsVoter(entry)

(* RemoveRaftVoter only for the node's own id under another directory; AddRaftVoter only when its id is absent. *)
RemovesOnlyItsOldDirectory ==
    /\ inflight = "RemoveRaftVoter" => entry = "old"
    /\ inflight = "AddRaftVoter" => entry = "absent"

(* UpdateRaftVoter only from a voter: under kraft.version 1 one whose listeners differ from the voter set's, under
   kraft.version 0 one the leader has not answered yet. *)
UpdatesOnlyWhenNeeded ==
    inflight = "UpdateRaftVoter" =>
        /\ IsVoter(entry)
        /\ kraftVersion = 1 => entry = "stale"
        /\ kraftVersion = 0 => ~updatedLeader

(* Both timers lie ahead within one period; a voter's fetch timer never passes (the leader answers in time). *)
TimersWithinPeriod ==
    /\ updateDeadline <= now + Period
    /\ fetchDeadline <= now + Period
    /\ IsVoter(entry) => now < fetchDeadline

(* One request at a time to the leader: a poll sends nothing while one is outstanding (time passing never replaces
   it; only its answer does). *)
OneRequestInFlight ==
    [][inflight # "none" /\ now' # now => inflight' = inflight]_vars

(* AddRaftVoter, RemoveRaftVoter and UpdateRaftVoter leave only once the period has passed, and restart it. *)
NothingBeforeThePeriod ==
    [][inflight' \in VoterChanges /\ inflight' # inflight =>
        now' >= updateDeadline /\ updateDeadline' = now' + Period]_vars
=============================================================================
