----------------------------- MODULE KRaftQuorum -----------------------------
(***************************************************************************)
(* The KRaft metadata quorum's Raft (kraftspec rule book §3,               *)
(* KIP-595 as implemented in Kafka 4.x): three voters and an observer,     *)
(* pull-based replication. Followers fetch with their log end offset and   *)
(* last fetched epoch; the leader answers with records or with the         *)
(* diverging epoch from its epoch cache, and the follower truncates. New   *)
(* epochs spread by Vote and BeginQuorumEpoch requests and by the epoch    *)
(* every response carries (§3.8). Messages sit in a bag (message to its    *)
(* number of copies): any one may be delivered next (reordering),         *)
(* Duplicate copies one and Drop loses one. A crash keeps the quorum-state *)
(* file and the flushed records: voters flush every append, an observer    *)
(* never does (§3.7).                                                      *)
(*                                                                         *)
(* Actions carry the names of the reference's rules (the raft modules of   *)
(* kraftspec.reference): Timeout ~ the election timer (a voter becomes     *)
(* Prospective in its epoch, KIP-996's pre-vote; a Prospective whose timer *)
(* fires has lost it; a Resigned leader moves to the next epoch);          *)
(* MaybeSendVoteRequests ~ a Prospective's pre-vote request (epoch       *)
(* unchanged) or a Candidate's vote request, one voter at a time;          *)
(* MaybeSendBeginQuorumEpochRequests, MaybeSendFetchOrFetchSnapshot ~ the  *)
(* sends of reference/raft.py named so; HandleVoteRequest,                 *)
(* HandleVoteResponse, HandleBeginQuorumEpochRequest, HandleFetchRequest,  *)
(* HandleFetchResponse ~ its handlers _handle_vote_request, ... (node n    *)
(* takes one such message); Crash ~ raft.restart; ClientAppend ~ an        *)
(* Append to the leader. Timeout, ClientAppend, Crash, Drop and Duplicate  *)
(* move the environment.                                                   *)
(* Snapshots (KIP-630, §3.7): HandleCreateSnapshot ~ the state machine's   *)
(* snapshot of everything committed (raft_snapshot.handle_create_snapshot, *)
(* at the node's high watermark), DeleteBeforeSnapshot ~ the log cleaner   *)
(* moving the log start to a snapshot; a Fetch the leader cannot serve     *)
(* from its log is answered with its latest snapshot id, which the         *)
(* follower fetches (MaybeSendFetchOrFetchSnapshot to its leader, then     *)
(* HandleFetchSnapshotRequest / HandleFetchSnapshotResponse) and loads in  *)
(* place of its log. A snapshot is one chunk: the spec's requests ask from *)
(* position 0 and the whole snapshot is smaller than a chunk (the          *)
(* reference's chunking, raft_rules.snapshot_chunk_size, is abstracted).   *)
(* Snapshot contents are not modelled: a snapshot is its id (end offset,   *)
(* epoch), and log[n] holds the entries from the log start start[n] on.    *)
(* A crash recovers from the latest snapshot plus the flushed log.         *)
(* Timers and resends are not modelled: a node may send whenever its role  *)
(* allows, and the leader's check quorum and resignation are left out. A   *)
(* response counts only as the answer to the request the node has          *)
(* outstanding: a Vote response while the node is a Candidate of the epoch *)
(* it asked in (a pre-vote answer while a Prospective of that epoch), a     *)
(* Fetch response at the position it echoes (these stand for Kafka's       *)
(* correlation ids; a Prospective takes no Fetch response, its transition  *)
(* having reset its connections; a Fetch carries the snapshot download the *)
(* node had when sending it, so that a duplicated Fetch's second answer is *)
(* not taken once the first started a download: Kafka takes one answer per *)
(* request; without it the download would complete over a log it had not  *)
(* truncated, which KafkaRaftClient treats as fatal).                      *)
(* having reset its connections). Logs hold each entry's epoch only.       *)
(***************************************************************************)
EXTENDS Integers, Sequences, FiniteSets

CONSTANTS Voters,     \* the static voter set
          Observers,  \* replicas that fetch but never vote or campaign
          MaxEpoch,   \* elections stop at this epoch
          MaxLogLen,  \* appends stop at this log length
          MaxMsgs,    \* no node sends while MaxMsgs messages are in flight (a duplicate may exceed it)
          MaxFaults,  \* bound on the crashes, losses and duplications in a behaviour
          MaxTimeouts, \* bound on the election timeouts in a behaviour
          MaxSnapshots \* bound on the snapshots created (HandleCreateSnapshot) in a behaviour

Nodes == Voters \cup Observers
NoNode == -1
NoOffsets == [v \in Voters |-> -1]
Majority == Cardinality(Voters) \div 2 + 1
NoSnapshot == <<-1, -1>>  \* Kafka's empty snapshot id (end offset, epoch)

VARIABLES role,      \* Unattached, Prospective, Candidate, Leader, Follower or Resigned
          epoch,     \* the node's epoch (quorum-state file)
          leader,    \* the leader it knows in its epoch, itself when Leader or Resigned, else NoNode
          voted,     \* its vote in its epoch (a Candidate votes for itself), else NoNode
          granted,   \* a Candidate's granted votes, a Prospective's granted pre-votes (itself included)
          rejected,  \* a Prospective's rejected pre-votes
          fetched,   \* a Follower has fetched from its leader (it then refuses pre-votes)
          hw,        \* high watermark, -1 when unknown
          log,       \* the epochs of its log entries (offset i is log[i+1])
          flushed,   \* the flushed end offset: what survives a crash
          endOff,    \* a Leader's view of each voter's end offset (-1 unknown); NoOffsets otherwise
          msgs,      \* messages in flight: a bag, each message to its number of copies
          committed, \* history: the longest prefix any leader's high watermark covered
          faults,    \* crashes, losses and duplications so far
          timeouts,  \* election timeouts so far
          start,     \* the log start offset: log[n] holds the entries at offsets start[n]..LEO-1
          snaps,     \* the frozen snapshots' ids <<end offset, epoch>> (they survive a crash)
          fetchingSnap, \* a Follower's snapshot download (its id), else NoSnapshot
          snapshots, \* snapshots created so far
          logHw      \* the log's own high watermark (RaftLog.highWatermark): the last one known, 0 after a crash

snapVars == <<start, snaps, snapshots>>
vars == <<role, epoch, leader, voted, granted, rejected, fetched, hw, log, flushed, endOff, msgs, committed, faults,
          timeouts, start, snaps, fetchingSnap, snapshots, logHw>>

ASSUME Cardinality(Voters) >= 2  \* a lone voter wins its pre-vote and vote at once: not modelled

----------------------------------------------------------------------------
Max(a, b) == IF a > b THEN a ELSE b
Min(a, b) == IF a < b THEN a ELSE b
Prefix(l, n) == SubSeq(l, 1, n)
LastEpoch(l) == IF l = <<>> THEN 0 ELSE l[Len(l)]
EntriesUpTo(l, e) == Cardinality({i \in DOMAIN l : l[i] <= e})

(* Snapshot ids are ordered by end offset, then epoch (OffsetAndEpoch.compareTo). *)
SnapBefore(a, b) == a[1] < b[1] \/ (a[1] = b[1] /\ a[2] < b[2])
Latest(n) == CHOOSE s \in snaps[n] : \A x \in snaps[n] : ~SnapBefore(s, x)
Earliest(n) == CHOOSE s \in snaps[n] : \A x \in snaps[n] : ~SnapBefore(x, s)

(* The log end offset and the last fetched epoch: a log without entries ends at (and in the epoch of) its latest *)
(* snapshot (KIP-630).                                                                                         *)
LEO(n) == start[n] + Len(log[n])
LastEpochOf(n) == IF log[n] # <<>> THEN LastEpoch(log[n]) ELSE IF snaps[n] # {} THEN Latest(n)[2] ELSE 0
(* The epoch of the entry at offset o (start[n] <= o < LEO(n)). *)
EpochAt(n, o) == log[n][o - start[n] + 1]

(* §3.7 endOffsetForEpoch: (largest epoch <= e, start of the next epoch or LEO); (0, LEO) when empty. *)
EndOffsetForEpoch(l, e) ==
    IF l = <<>> THEN <<0, 0>>
    ELSE IF e < l[1] THEN <<e, 0>>
    ELSE <<l[EntriesUpTo(l, e)], EntriesUpTo(l, e)>>

(* §3.7 endOffsetForEpoch of a log with snapshots (MockLog.lastOffsetAndEpochFiltered): the epoch before the first *)
(* one above e (the earliest snapshot's before every entry) and where that one starts, else (last epoch, LEO).      *)
EndOffsetForEpochOf(n, e) ==
    IF snaps[n] = {} THEN EndOffsetForEpoch(log[n], e)
    ELSE LET later == {p \in DOMAIN log[n] : log[n][p] > e}
             p == CHOOSE q \in later : \A x \in later : q <= x
         IN IF later = {} THEN <<LastEpochOf(n), LEO(n)>>
            ELSE <<IF p = 1 THEN Earliest(n)[2] ELSE log[n][p - 1], start[n] + p - 1>>

(* §3.7 validateOffsetAndEpoch with snapshots (KIP-630, raft_log.fetch_snapshot_id): the latest snapshot's id when a *)
(* fetch at (off, le) must fetch it (an empty fetcher; a position before the log start, at it in another epoch, or  *)
(* older than the earliest snapshot), else NoSnapshot. The bootstrap checkpoint <<0, 0>> is never served.            *)
FetchSnapshotId(n, off, le) ==
    IF snaps[n] = {} THEN NoSnapshot
    ELSE IF off = 0 /\ Latest(n) # <<0, 0>> THEN Latest(n)
    ELSE IF off = 0 /\ start[n] = 0 THEN NoSnapshot
    ELSE IF off < start[n] \/ (off = start[n] /\ le # Earliest(n)[2]) \/ le < Earliest(n)[2] THEN Latest(n)
    ELSE NoSnapshot

(* §3.4 step 7: (last epoch, end offset) compared epoch first. *)
UpToDate(lastEpoch, lastOffset, n) ==
    \/ lastEpoch > LastEpochOf(n)
    \/ lastEpoch = LastEpochOf(n) /\ lastOffset >= LEO(n)

(* §3.6: the end offset a majority of voters reached, adopted only past the epoch start offset. *)
HwCandidate(offsets) ==
    CHOOSE x \in {offsets[v] : v \in Voters} :
        /\ Cardinality({v \in Voters : offsets[v] >= x}) >= Majority
        /\ \A v \in Voters : Cardinality({w \in Voters : offsets[w] >= offsets[v]}) >= Majority => offsets[v] <= x
NextHw(current, offsets, epochStart) ==
    IF HwCandidate(offsets) > epochStart /\ HwCandidate(offsets) > current THEN HwCandidate(offsets) ELSE current

(* KIP-630 RaftLog.highWatermark, which createSnapshot and deleteBeforeSnapshot check: the state's while it knows *)
(* one, else the last the log was given (a new Leader, Resigned and the states after it keep it).               *)
LogHw(n) == IF hw[n] >= 0 THEN hw[n] ELSE logHw[n]
(* log.updateHighWatermark wherever a high watermark becomes known (raft.step after the input and the poll). *)
LogHwFollows == logHw' = [x \in Nodes |-> IF hw'[x] >= 0 THEN hw'[x] ELSE logHw[x]]

(* The HW a state change carries over: a Resigned leader has none. *)
CarriedHw(n) == IF role[n] = "Resigned" THEN -1 ELSE hw[n]

BagAdd(b, m) == [x \in DOMAIN b \cup {m} |-> IF x = m THEN (IF m \in DOMAIN b THEN b[m] + 1 ELSE 1) ELSE b[x]]
BagRemove(b, m) == IF b[m] = 1 THEN [x \in DOMAIN b \ {m} |-> b[x]] ELSE [b EXCEPT ![m] = @ - 1]
InFlight(b) == Cardinality(UNION {{<<x, i>> : i \in 1..b[x]} : x \in DOMAIN b})

Send(m) ==
    /\ InFlight(msgs) < MaxMsgs
    /\ msgs' = BagAdd(msgs, m)

(* Delivering request m consumes it and puts its response r in flight. *)
Reply(m, r) == msgs' = BagAdd(BagRemove(msgs, m), r)
Consume(m) == msgs' = BagRemove(msgs, m)

(* Move node n to a role that is not Leader (no pre-vote rejected, nothing fetched yet). *)
Become(n, r, e, l, v, g, h) ==
    /\ role' = [role EXCEPT ![n] = r]
    /\ epoch' = [epoch EXCEPT ![n] = e]
    /\ leader' = [leader EXCEPT ![n] = l]
    /\ voted' = [voted EXCEPT ![n] = v]
    /\ granted' = [granted EXCEPT ![n] = g]
    /\ rejected' = [rejected EXCEPT ![n] = {}]
    /\ fetched' = [fetched EXCEPT ![n] = FALSE]
    /\ hw' = [hw EXCEPT ![n] = h]
    /\ endOff' = [endOff EXCEPT ![n] = NoOffsets]
    /\ fetchingSnap' = [fetchingSnap EXCEPT ![n] = NoSnapshot]

Unchanged(n) == UNCHANGED <<role, epoch, leader, voted, granted, rejected, fetched, hw, endOff, fetchingSnap>>

(* §3.8 maybeTransition: a newer epoch moves to its leader (or Unattached); the same epoch only learns an *)
(* unknown leader. The vote is kept within the epoch.                                                   *)
MaybeTransition(n, e, l) ==
    IF e > epoch[n]
    THEN IF l # NoNode THEN Become(n, "Follower", e, l, NoNode, {}, CarriedHw(n))
         ELSE Become(n, "Unattached", e, NoNode, NoNode, {}, CarriedHw(n))
    ELSE IF l # NoNode /\ leader[n] = NoNode THEN Become(n, "Follower", e, l, voted[n], {}, CarriedHw(n))
    ELSE Unchanged(n)

(* A node's whole log as the history knows it: its snapshot covers committed records (SnapshotsCommitted). *)
FullLog(s, l) == Prefix(committed, s) \o l
Full(n) == FullLog(start[n], log[n])

Commit(h, s, l) == committed' = IF h > Len(committed) THEN Prefix(FullLog(s, l), h) ELSE committed

Init ==
    /\ role = [n \in Nodes |-> "Unattached"]
    /\ epoch = [n \in Nodes |-> 0]
    /\ leader = [n \in Nodes |-> NoNode]
    /\ voted = [n \in Nodes |-> NoNode]
    /\ granted = [n \in Nodes |-> {}]
    /\ rejected = [n \in Nodes |-> {}]
    /\ fetched = [n \in Nodes |-> FALSE]
    /\ hw = [n \in Nodes |-> -1]
    /\ log = [n \in Nodes |-> <<>>]
    /\ flushed = [n \in Nodes |-> 0]
    /\ endOff = [n \in Nodes |-> NoOffsets]
    /\ msgs = <<>>
    /\ committed = <<>>
    /\ faults = 0
    /\ timeouts = 0
    /\ start = [n \in Nodes |-> 0]
    /\ snaps = [n \in Nodes |-> {}]
    /\ fetchingSnap = [n \in Nodes |-> NoSnapshot]
    /\ snapshots = 0
    /\ logHw = [n \in Nodes |-> 0]

----------------------------------------------------------------------------
(* §3.5 KafkaRaftClient.prospectiveTransitionAfterElectionLoss: a Prospective that lost its pre-vote goes *)
(* back to the leader it knew (Follower), else to Unattached, in its epoch and keeping its vote.           *)
PreVoteLost(n) ==
    IF leader[n] # NoNode THEN Become(n, "Follower", epoch[n], leader[n], voted[n], {}, hw[n])
    ELSE Become(n, "Unattached", epoch[n], NoNode, voted[n], {}, hw[n])

(* §3.2, §3.5 QuorumState.transitionToProspective (KIP-996): a voter's election (or fetch) timer makes it    *)
(* Prospective in its own epoch, keeping its leader and vote, its own pre-vote granted; observers never     *)
(* campaign. A Prospective's timer ends its pre-vote as lost. A Resigned leader's timer moves it to         *)
(* Unattached in the next epoch.                                                                          *)
Timeout(n) ==
    /\ epoch[n] < MaxEpoch
    /\ timeouts < MaxTimeouts
    /\ timeouts' = timeouts + 1
    /\ \/ /\ role[n] \in {"Unattached", "Follower", "Candidate"}
          /\ n \in Voters
          /\ LEO(n) < MaxLogLen
          /\ Become(n, "Prospective", epoch[n], leader[n], voted[n], {n}, hw[n])
       \/ /\ role[n] = "Prospective"
          /\ PreVoteLost(n)
       \/ /\ role[n] = "Resigned"
          /\ Become(n, "Unattached", epoch[n] + 1, NoNode, NoNode, {}, -1)
    /\ UNCHANGED <<log, flushed, msgs, committed, faults, snapVars>>
    /\ LogHwFollows

(* §3.5: a Prospective asks for a pre-vote (in its own epoch), a Candidate for a vote, each of the voters that *)
(* has not answered yet, with its (last epoch, end offset).                                                    *)
MaybeSendVoteRequests(n, v) ==
    /\ role[n] \in {"Prospective", "Candidate"}
    /\ v \in Voters \ (granted[n] \cup rejected[n])
    /\ Send([type |-> "VoteReq", src |-> n, dst |-> v, epoch |-> epoch[n], preVote |-> role[n] = "Prospective",
             lastEpoch |-> LastEpochOf(n), lastOffset |-> LEO(n)])
    /\ UNCHANGED <<role, epoch, leader, voted, granted, rejected, fetched, hw, log, flushed, endOff, committed, faults,
                   timeouts, fetchingSnap, snapVars>>
    /\ LogHwFollows

(* §3.4 EpochState.canGrantVote (KIP-996): a pre-vote is granted on an up-to-date log by every role but a Leader *)
(* and a Follower that has fetched from its leader; a standard vote only by Unattached or Prospective: its       *)
(* stored vote decides, else a known leader refuses, else the log comparison.                                  *)
CanGrantVote(r, preVote, upToDate, v, l, f, src) ==
    IF preVote THEN r # "Leader" /\ ~(r = "Follower" /\ f) /\ upToDate
    ELSE r \in {"Unattached", "Prospective"} /\ IF v # NoNode THEN v = src ELSE l = NoNode /\ upToDate

(* §3.4 KafkaRaftClient.handleVoteRequest: an older epoch is refused; a newer one (a pre-vote's too) makes the  *)
(* receiver Unattached first. A granted standard vote is stored (a Prospective restarts its pre-vote,           *)
(* QuorumState.prospectiveAddVotedState); a pre-vote changes nothing.                                          *)
OnVoteRequest(n, m) ==
    /\ m \in DOMAIN msgs /\ m.type = "VoteReq" /\ m.dst = n
    /\ LET newer == m.epoch > epoch[n]
           e == Max(m.epoch, epoch[n])
           r == IF newer THEN "Unattached" ELSE role[n]
           l == IF newer THEN NoNode ELSE leader[n]
           v == IF newer THEN NoNode ELSE voted[n]
           grant == /\ m.epoch >= epoch[n]
                    /\ CanGrantVote(r, m.preVote, UpToDate(m.lastEpoch, m.lastOffset, n), v, l,
                                     ~newer /\ fetched[n], m.src)
           stores == grant /\ ~m.preVote /\ v = NoNode
       IN /\ Reply(m, [type |-> "VoteResp", src |-> n, dst |-> m.src, reqEpoch |-> m.epoch, preVote |-> m.preVote,
                      epoch |-> e, leader |-> l, granted |-> grant])
          /\ IF newer \/ stores
             THEN Become(n, r, e, l, IF stores THEN m.src ELSE v, IF r = "Prospective" THEN {n} ELSE {},
                         IF newer THEN CarriedHw(n) ELSE hw[n])
             ELSE Unchanged(n)
    /\ UNCHANGED <<log, flushed, committed, faults, timeouts, snapVars>>
    /\ LogHwFollows

(* §3.6: the new leader's epoch starts at its LEO with a LeaderChange record, flushed at once; it has *)
(* no high watermark yet.                                                                            *)
BecomeLeader(n) ==
    LET newLog == Append(log[n], epoch[n])
        offsets == [NoOffsets EXCEPT ![n] = start[n] + Len(newLog)]
    IN /\ role' = [role EXCEPT ![n] = "Leader"]
       /\ leader' = [leader EXCEPT ![n] = n]
       /\ voted' = [voted EXCEPT ![n] = NoNode]
       /\ granted' = [granted EXCEPT ![n] = {}]
       /\ UNCHANGED <<rejected, fetched, fetchingSnap>>
       /\ log' = [log EXCEPT ![n] = newLog]
       /\ flushed' = [flushed EXCEPT ![n] = start[n] + Len(newLog)]
       /\ endOff' = [endOff EXCEPT ![n] = offsets]
       /\ hw' = [hw EXCEPT ![n] = NextHw(-1, offsets, LEO(n))]
       /\ UNCHANGED epoch

(* §3.5 KafkaRaftClient.handleVoteResponse for a Prospective: pre-votes may flip (EpochElection); a majority of *)
(* them makes a Candidate of the next epoch voting for itself (transitionToCandidate), a majority lost ends the  *)
(* pre-vote (PreVoteLost).                                                                                      *)
PreVoteCounted(n, src, yes) ==
    LET g == IF yes THEN granted[n] \cup {src} ELSE granted[n] \ {src}
        j == IF yes THEN rejected[n] \ {src} ELSE rejected[n] \cup {src}
    IN IF Cardinality(g) >= Majority
       THEN Become(n, "Candidate", epoch[n] + 1, NoNode, n, {n}, hw[n])
       ELSE IF Cardinality(g) + Cardinality(Voters \ (g \cup j)) < Majority
       THEN PreVoteLost(n)
       ELSE /\ granted' = [granted EXCEPT ![n] = g]
            /\ rejected' = [rejected EXCEPT ![n] = j]
            /\ UNCHANGED <<role, epoch, leader, voted, fetched, hw, endOff, fetchingSnap>>

(* §3.5, §3.8: only the answer to a request of the node's current pre-vote or candidacy counts; a newer epoch *)
(* or a leader it did not know moves the node; a Prospective counts pre-votes; a Candidate counts granted    *)
(* votes and becomes Leader with a majority.                                                                *)
OnVoteResponse(n, m) ==
    /\ m \in DOMAIN msgs /\ m.type = "VoteResp" /\ m.dst = n
    /\ IF role[n] # (IF m.preVote THEN "Prospective" ELSE "Candidate") \/ m.reqEpoch # epoch[n]
          \/ (~m.preVote /\ m.epoch = epoch[n] /\ m.leader = NoNode /\ ~m.granted)
       THEN UNCHANGED <<role, epoch, leader, voted, granted, rejected, fetched, hw, log, flushed, endOff, fetchingSnap>>
       ELSE IF m.epoch > epoch[n] \/ (m.leader # NoNode /\ leader[n] = NoNode)
       THEN MaybeTransition(n, m.epoch, m.leader) /\ UNCHANGED <<log, flushed>>
       ELSE IF m.preVote
       THEN PreVoteCounted(n, m.src, m.granted) /\ UNCHANGED <<log, flushed>>
       ELSE IF Cardinality(granted[n] \cup {m.src}) >= Majority
       THEN BecomeLeader(n)
       ELSE /\ granted' = [granted EXCEPT ![n] = granted[n] \cup {m.src}]
            /\ UNCHANGED <<role, epoch, leader, voted, rejected, fetched, hw, log, flushed, endOff, fetchingSnap>>
    /\ Consume(m)
    /\ UNCHANGED <<committed, faults, timeouts, snapVars>>
    /\ LogHwFollows

(* §3.9: the leader announces its epoch to a voter. *)
MaybeSendBeginQuorumEpochRequests(n, v) ==
    /\ role[n] = "Leader"
    /\ v \in Voters \ {n}
    /\ Send([type |-> "BeginEpoch", src |-> n, dst |-> v, epoch |-> epoch[n]])
    /\ UNCHANGED <<role, epoch, leader, voted, granted, rejected, fetched, hw, log, flushed, endOff, committed, faults,
                   timeouts, fetchingSnap, snapVars>>
    /\ LogHwFollows

(* §3.9: an older epoch is refused; otherwise the receiver follows the sender (its answer is not modelled). *)
OnBeginQuorumEpoch(n, m) ==
    /\ m \in DOMAIN msgs /\ m.type = "BeginEpoch" /\ m.dst = n
    /\ IF m.epoch < epoch[n] THEN Unchanged(n) ELSE MaybeTransition(n, m.epoch, m.src)
    /\ Consume(m)
    /\ UNCHANGED <<log, flushed, committed, faults, timeouts, snapVars>>
    /\ LogHwFollows

(* §3.15 UpdateRaftVoter at kraft.version 0 (static voters): a Kafka 4.x follower sends its leader one, and the *)
(* leader answers it (KafkaRaftClient.handleUpdateVoterRequest): the leader-only epoch checks                    *)
(* (validateLeaderOnlyRequest), then UpdateVoterHandler's: no directory id or no default listener is invalid, an *)
(* epoch not yet committed (high watermark unknown) times out, only a voter is updated. The update changes the   *)
(* leader's in-memory voters only, and the follower takes NONE or UNSUPPORTED_VERSION from its leader in its     *)
(* epoch without moving (setHasUpdatedLeader): no variable of this spec changes. Not in Next (the nodes here     *)
(* never send it): KRaftQuorumTrace judges a trace's UpdateRaftVoter steps with these.                          *)
NodeVarsButMsgs == <<role, epoch, leader, voted, granted, rejected, fetched, hw, log, flushed, endOff, committed,
                     faults, timeouts, start, snaps, fetchingSnap, snapshots, logHw>>

UpdateVoterError(n, m) ==
    CASE m.epoch < epoch[n] -> "FENCED_LEADER_EPOCH"
      [] m.epoch > epoch[n] -> "UNKNOWN_LEADER_EPOCH"
      [] role[n] # "Leader" -> "NOT_LEADER_OR_FOLLOWER"
      [] m.malformed -> "INVALID_REQUEST"
      [] hw[n] < 0 -> "REQUEST_TIMED_OUT"
      [] m.src \notin Voters -> "VOTER_NOT_FOUND"
      [] OTHER -> "NONE"

MaybeSendUpdateVoterRequest(n) ==
    /\ role[n] = "Follower"
    /\ Send([type |-> "UpdateVoterReq", src |-> n, dst |-> leader[n], epoch |-> epoch[n], malformed |-> FALSE])
    /\ UNCHANGED NodeVarsButMsgs

OnUpdateVoterRequest(n, m) ==
    /\ m \in DOMAIN msgs /\ m.type = "UpdateVoterReq" /\ m.dst = n
    /\ Reply(m, [type |-> "UpdateVoterResp", src |-> n, dst |-> m.src, error |-> UpdateVoterError(n, m),
                 epoch |-> epoch[n], leader |-> leader[n]])
    /\ UNCHANGED NodeVarsButMsgs

(* The answer taken without moving: one that answers no outstanding request is ignored. *)
UpdateVoterAnswerTaken(n, m) ==
    ~m.answers \/ (role[n] = "Follower" /\ m.epoch = epoch[n] /\ m.leader = leader[n]
                   /\ m.error \in {"NONE", "UNSUPPORTED_VERSION"})

OnUpdateVoterResponse(n, m) ==
    /\ m \in DOMAIN msgs /\ m.type = "UpdateVoterResp" /\ m.dst = n
    /\ UpdateVoterAnswerTaken(n, m)
    /\ Consume(m)
    /\ UNCHANGED NodeVarsButMsgs

(* §3.7 KafkaRaftClient.maybeSendFetchToBestNode / maybeSendFetchToAnyBootstrap: a follower fetches from its  *)
(* leader, or from any bootstrap server once its leader's Fetch timed out; a node without a leader, voter or    *)
(* observer, from any bootstrap server. The bootstrap servers are the static voters, the node itself included; *)
(* Kafka picks one at random (RequestManager.findReadyBootstrapServer). No Fetch while the node's last Fetch is *)
(* in flight (hasAnyInflightRequest; a lost one counts as timed out, request timeouts not being modelled).     *)
(* A Follower fetching a snapshot asks its leader for it (FetchSnapshot from position 0, KIP-630); what it   *)
(* sends to a bootstrap server after a timeout is a Fetch.                                                    *)
FetchInFlight(n) == \E m \in DOMAIN msgs : \/ m.type \in {"FetchReq", "FetchSnapReq"} /\ m.src = n
                                           \/ m.type \in {"FetchResp", "FetchSnapResp"} /\ m.dst = n

MaybeSendFetchOrFetchSnapshot(n, t) ==
    /\ role[n] \in {"Follower", "Unattached"}
    /\ t \in Voters
    /\ ~FetchInFlight(n)
    /\ \/ Send([type |-> "FetchReq", src |-> n, dst |-> t, epoch |-> epoch[n],
                offset |-> LEO(n), lastEpoch |-> LastEpochOf(n), download |-> fetchingSnap[n]])
       \/ /\ fetchingSnap[n] # NoSnapshot /\ t = leader[n]
          /\ Send([type |-> "FetchSnapReq", src |-> n, dst |-> t, epoch |-> epoch[n], snapshot |-> fetchingSnap[n]])
    /\ UNCHANGED <<role, epoch, leader, voted, granted, rejected, fetched, hw, log, flushed, endOff, committed, faults,
                   timeouts, fetchingSnap, snapVars>>
    /\ LogHwFollows

FetchResponse(n, m, error, h, div, snap, entries) ==
    [type |-> "FetchResp", src |-> n, dst |-> m.src, epoch |-> epoch[n], leader |-> leader[n], error |-> error,
     hw |-> h, diverging |-> div, snapshot |-> snap, entries |-> entries, offset |-> m.offset,
     lastEpoch |-> m.lastEpoch, download |-> m.download]

(* §3.7: epoch validation, then the latest snapshot's id when the fetch must fetch it (FetchSnapshotId), else a *)
(* DivergingEpoch from the epoch cache, else the records from the fetch offset; a voter's fetch offset is its   *)
(* end offset and may move the high watermark (§3.6).                                                          *)
OnFetchRequest(n, m) ==
    /\ m \in DOMAIN msgs /\ m.type = "FetchReq" /\ m.dst = n
    /\ LET error == IF m.epoch < epoch[n] THEN "FENCED_LEADER_EPOCH"
                    ELSE IF m.epoch > epoch[n] THEN "UNKNOWN_LEADER_EPOCH"
                    ELSE IF role[n] # "Leader" THEN "NOT_LEADER_OR_FOLLOWER" ELSE "NONE"
           snap == FetchSnapshotId(n, m.offset, m.lastEpoch)
           end == EndOffsetForEpochOf(n, m.lastEpoch)
           diverging == ~(m.offset = 0 /\ start[n] = 0) /\ (end[1] # m.lastEpoch \/ end[2] < m.offset)
           offsets == IF m.src \in Voters THEN [endOff[n] EXCEPT ![m.src] = m.offset] ELSE endOff[n]
           newHw == NextHw(hw[n], offsets, start[n] + EntriesUpTo(log[n], epoch[n] - 1))
       IN IF error # "NONE"
          THEN /\ Reply(m, FetchResponse(n, m, error, -1, <<-1, -1>>, NoSnapshot, <<>>))
               /\ UNCHANGED <<endOff, hw, committed>>
          ELSE IF snap # NoSnapshot
          THEN /\ Reply(m, FetchResponse(n, m, error, hw[n], <<-1, -1>>, snap, <<>>))
               /\ UNCHANGED <<endOff, hw, committed>>
          ELSE IF diverging
          THEN /\ Reply(m, FetchResponse(n, m, error, hw[n], end, NoSnapshot, <<>>))
               /\ UNCHANGED <<endOff, hw, committed>>
          ELSE /\ Reply(m, FetchResponse(n, m, error, newHw, <<-1, -1>>, NoSnapshot,
                                         SubSeq(log[n], m.offset - start[n] + 1, Len(log[n]))))
               /\ endOff' = [endOff EXCEPT ![n] = offsets]
               /\ hw' = [hw EXCEPT ![n] = newHw]
               /\ Commit(newHw, start[n], log[n])
    /\ UNCHANGED <<role, epoch, leader, voted, granted, rejected, fetched, log, flushed, faults, timeouts, fetchingSnap,
                   snapVars>>
    /\ LogHwFollows

(* §3.7 truncateToEndOffset: where a follower cuts its log for a DivergingEpoch (epoch, end offset). *)
TruncationOffset(n, div) ==
    LET local == EndOffsetForEpochOf(n, div[1])
    IN IF div[1] = 0 THEN Min(div[2], LEO(n))
       ELSE IF local[1] = div[1] THEN Min(local[2], div[2]) ELSE local[2]

(* §3.7: the follower truncates on a diverging epoch, else appends (a voter flushes) and takes      *)
(* min(LEO, leader HW).                                                                              *)
FollowerFetched(n, m) ==
    LET newLog == IF m.diverging[1] >= 0 THEN Prefix(log[n], Max(0, TruncationOffset(n, m.diverging) - start[n]))
                  ELSE log[n] \o m.entries
        newEnd == start[n] + Len(newLog)
    IN /\ log' = [log EXCEPT ![n] = newLog]
       /\ flushed' = [flushed EXCEPT ![n] = IF n \in Voters THEN newEnd ELSE Min(flushed[n], newEnd)]
       /\ hw' = [hw EXCEPT ![n] = IF m.diverging[1] < 0 /\ m.hw >= 0 THEN Min(newEnd, m.hw) ELSE hw[n]]
       /\ UNCHANGED fetchingSnap

(* KIP-630 handleFetchResponse: a snapshot id in the answer starts its download (none when the node holds it). *)
SnapshotAsked(n, m) ==
    /\ fetchingSnap' = [fetchingSnap EXCEPT ![n] = IF m.snapshot \in snaps[n] THEN NoSnapshot ELSE m.snapshot]
    /\ UNCHANGED <<log, flushed, hw>>

(* §3.7, §3.8: only the answer to the node's current position counts, never at a Prospective; an older or *)
(* unknown epoch is ignored, a newer epoch or a fencing error moves the node; a valid answer is applied by   *)
(* the follower (after learning the leader if it knew none), which has then fetched. A Candidate that learns *)
(* the leader of its epoch this way becomes a Follower holding no votes (maybeHandleCommonResponse calls      *)
(* transitionToFollower, then the fetch handler appends; found by `kraftspec agree raft --deep`).            *)
OnFetchResponse(n, m) ==
    /\ m \in DOMAIN msgs /\ m.type = "FetchResp" /\ m.dst = n
    /\ IF m.offset # LEO(n) \/ m.lastEpoch # LastEpochOf(n) \/ m.download # fetchingSnap[n] \/ m.epoch < epoch[n]
          \/ m.error = "UNKNOWN_LEADER_EPOCH" \/ role[n] = "Prospective"
       THEN UNCHANGED <<role, epoch, leader, voted, granted, rejected, fetched, hw, log, flushed, endOff, fetchingSnap>>
       ELSE IF m.epoch > epoch[n] \/ m.error \in {"FENCED_LEADER_EPOCH", "NOT_LEADER_OR_FOLLOWER"}
       THEN MaybeTransition(n, m.epoch, m.leader) /\ UNCHANGED <<log, flushed>>
       ELSE /\ role' = [role EXCEPT ![n] = "Follower"]
            /\ leader' = [leader EXCEPT ![n] = IF leader[n] = NoNode THEN m.leader ELSE leader[n]]
            /\ granted' = [granted EXCEPT ![n] = {}]
            /\ rejected' = [rejected EXCEPT ![n] = {}]
            /\ fetched' = [fetched EXCEPT ![n] = TRUE]
            /\ IF m.diverging[1] < 0 /\ m.snapshot # NoSnapshot THEN SnapshotAsked(n, m) ELSE FollowerFetched(n, m)
            /\ UNCHANGED <<epoch, voted, endOff>>
    /\ Consume(m)
    /\ UNCHANGED <<committed, faults, timeouts, snapVars>>
    /\ LogHwFollows

(* KIP-630 handleFetchSnapshotRequest: epoch validation as for a Fetch, then the snapshot asked for, whole (one *)
(* chunk), or SNAPSHOT_NOT_FOUND for one the leader does not hold or the bootstrap checkpoint.                 *)
OnFetchSnapshotRequest(n, m) ==
    /\ m \in DOMAIN msgs /\ m.type = "FetchSnapReq" /\ m.dst = n
    /\ LET error == IF m.epoch < epoch[n] THEN "FENCED_LEADER_EPOCH"
                    ELSE IF m.epoch > epoch[n] THEN "UNKNOWN_LEADER_EPOCH"
                    ELSE IF role[n] # "Leader" THEN "NOT_LEADER_OR_FOLLOWER"
                    ELSE IF m.snapshot \notin snaps[n] \/ m.snapshot = <<0, 0>> THEN "SNAPSHOT_NOT_FOUND" ELSE "NONE"
       IN Reply(m, [type |-> "FetchSnapResp", src |-> n, dst |-> m.src, epoch |-> epoch[n], leader |-> leader[n],
                    error |-> error, snapshot |-> IF error = "NONE" THEN m.snapshot ELSE <<0, 0>>,
                    reqSnapshot |-> m.snapshot])
    /\ UNCHANGED <<role, epoch, leader, voted, granted, rejected, fetched, hw, log, flushed, endOff, committed, faults,
                   timeouts, fetchingSnap, snapVars>>
    /\ LogHwFollows

(* KIP-630 handleFetchSnapshotResponse: only the answer for the download in progress counts (it stands for the *)
(* correlation id); a newer epoch or a fencing error moves the node (§3.8); SNAPSHOT_NOT_FOUND ends the download; *)
(* the snapshot loaded replaces the log (truncateToLatestSnapshot: the log starts and ends, flushed, at it, older *)
(* snapshots forgotten) and the high watermark moves to its end.                                                 *)
OnFetchSnapshotResponse(n, m) ==
    /\ m \in DOMAIN msgs /\ m.type = "FetchSnapResp" /\ m.dst = n
    /\ IF m.reqSnapshot # fetchingSnap[n] \/ m.epoch < epoch[n] \/ m.error = "UNKNOWN_LEADER_EPOCH"
       THEN UNCHANGED <<role, epoch, leader, voted, granted, rejected, fetched, hw, log, flushed, endOff, fetchingSnap,
                        start, snaps>>
       ELSE IF m.epoch > epoch[n] \/ m.error \in {"FENCED_LEADER_EPOCH", "NOT_LEADER_OR_FOLLOWER"}
       THEN MaybeTransition(n, m.epoch, m.leader) /\ UNCHANGED <<log, flushed, start, snaps>>
       ELSE IF m.error = "SNAPSHOT_NOT_FOUND"
       THEN /\ fetchingSnap' = [fetchingSnap EXCEPT ![n] = NoSnapshot]
            /\ UNCHANGED <<role, epoch, leader, voted, granted, rejected, fetched, hw, log, flushed, endOff, start, snaps>>
       ELSE /\ log' = [log EXCEPT ![n] = <<>>]
            /\ start' = [start EXCEPT ![n] = m.snapshot[1]]
            /\ snaps' = [snaps EXCEPT ![n] = {m.snapshot}]
            /\ flushed' = [flushed EXCEPT ![n] = m.snapshot[1]]
            /\ hw' = [hw EXCEPT ![n] = m.snapshot[1]]
            /\ fetchingSnap' = [fetchingSnap EXCEPT ![n] = NoSnapshot]
            /\ UNCHANGED <<role, epoch, leader, voted, granted, rejected, fetched, endOff>>
    /\ Consume(m)
    /\ UNCHANGED <<committed, faults, timeouts, snapshots>>
    /\ LogHwFollows

(* KIP-630 createSnapshot: the state machine snapshots everything committed, at the log's high watermark (LogHw: *)
(* a new or Resigned leader's too) past the log start, in the epoch of the last record it covers                 *)
(* (raft_log.can_create_snapshot); its id survives a crash.                                                       *)
HandleCreateSnapshot(n) ==
    /\ snapshots < MaxSnapshots
    /\ LogHw(n) > start[n]
    /\ <<LogHw(n), EpochAt(n, LogHw(n) - 1)>> \notin snaps[n]
    /\ snaps' = [snaps EXCEPT ![n] = @ \cup {<<LogHw(n), EpochAt(n, LogHw(n) - 1)>>}]
    /\ snapshots' = snapshots + 1
    /\ UNCHANGED <<role, epoch, leader, voted, granted, rejected, fetched, hw, log, flushed, endOff, msgs, committed,
                   faults, timeouts, start, fetchingSnap>>
    /\ LogHwFollows

(* KIP-630 deleteBeforeSnapshot (raft_log.delete_before_snapshot): the log cleaner moves the log start to a       *)
(* snapshot past it and at most the log's high watermark (LogHw); the records before it and the older snapshots   *)
(* are forgotten.                                                                                                 *)
DeleteBeforeSnapshot(n) ==
    \E s \in snaps[n] :
        /\ s[1] > start[n]
        /\ s[1] <= LogHw(n)
        /\ log' = [log EXCEPT ![n] = SubSeq(log[n], s[1] - start[n] + 1, Len(log[n]))]
        /\ start' = [start EXCEPT ![n] = s[1]]
        /\ snaps' = [snaps EXCEPT ![n] = {x \in snaps[n] : ~SnapBefore(x, s)}]
        /\ UNCHANGED <<role, epoch, leader, voted, granted, rejected, fetched, hw, flushed, endOff, msgs, committed,
                       faults, timeouts, fetchingSnap, snapshots>>
        /\ LogHwFollows

(* A client record appended by the leader and flushed at once; its own end offset may move the HW. *)
ClientAppend(n) ==
    /\ role[n] = "Leader"
    /\ LEO(n) < MaxLogLen
    /\ LET newLog == Append(log[n], epoch[n])
           offsets == [endOff[n] EXCEPT ![n] = start[n] + Len(newLog)]
           newHw == NextHw(hw[n], offsets, start[n] + EntriesUpTo(log[n], epoch[n] - 1))
       IN /\ log' = [log EXCEPT ![n] = newLog]
          /\ flushed' = [flushed EXCEPT ![n] = start[n] + Len(newLog)]
          /\ endOff' = [endOff EXCEPT ![n] = offsets]
          /\ hw' = [hw EXCEPT ![n] = newHw]
          /\ Commit(newHw, start[n], newLog)
    /\ UNCHANGED <<role, epoch, leader, voted, granted, rejected, fetched, msgs, faults, timeouts, fetchingSnap, snapVars>>
    /\ LogHwFollows

(* §3.2 QuorumState.initialize after a crash: unflushed entries and soft state are lost; a leader restarts *)
(* Resigned, a node that voted for itself Candidate, a node with a known leader Follower. A Prospective's  *)
(* leader and vote are those of its quorum-state file (transitionToProspective is not durable). The log      *)
(* keeps its snapshots and its flushed records, and its high watermark is 0 (MockLog.reopen); a latest snapshot *)
(* past what survived (by the last surviving record's epoch, UnifiedLog.latestEpoch) replaces it, as            *)
(* KafkaRaftLog.createLog's truncateToLatestSnapshot does (raft_log.recover, KIP-630): the log starts and ends,   *)
(* flushed, at the snapshot, older snapshots are forgotten and the snapshot's end is the log's high watermark.    *)
SnapshotReplaces(s, kept, from) == s[2] > LastEpoch(kept) \/ (s[2] = LastEpoch(kept) /\ s[1] > from + Len(kept))

Crash(n) ==
    /\ faults < MaxFaults
    /\ faults' = faults + 1
    /\ LET kept == IF flushed[n] <= start[n] THEN <<>> ELSE Prefix(log[n], flushed[n] - start[n])
       IN IF snaps[n] # {} /\ SnapshotReplaces(Latest(n), kept, start[n])
          THEN /\ log' = [log EXCEPT ![n] = <<>>]
               /\ start' = [start EXCEPT ![n] = Latest(n)[1]]
               /\ snaps' = [snaps EXCEPT ![n] = {Latest(n)}]
               /\ flushed' = [flushed EXCEPT ![n] = Latest(n)[1]]
               /\ logHw' = [logHw EXCEPT ![n] = Latest(n)[1]]
          ELSE /\ log' = [log EXCEPT ![n] = kept]
               /\ logHw' = [logHw EXCEPT ![n] = 0]
               /\ UNCHANGED <<start, snaps, flushed>>
    /\ IF leader[n] = n THEN Become(n, "Resigned", epoch[n], n, NoNode, {}, -1)
       ELSE IF voted[n] = n THEN Become(n, "Candidate", epoch[n], NoNode, n, {n}, -1)
       ELSE IF leader[n] # NoNode THEN Become(n, "Follower", epoch[n], leader[n], voted[n], {}, -1)
       ELSE Become(n, "Unattached", epoch[n], NoNode, voted[n], {}, -1)
    /\ UNCHANGED <<msgs, committed, timeouts, snapshots>>

(* The network loses a message, or delivers it twice. *)
LoseMessage(m) ==
    /\ m \in DOMAIN msgs
    /\ faults < MaxFaults
    /\ faults' = faults + 1
    /\ Consume(m)
    /\ UNCHANGED <<role, epoch, leader, voted, granted, rejected, fetched, hw, log, flushed, endOff, committed, timeouts,
                   fetchingSnap, snapVars>>
    /\ LogHwFollows

DuplicateMessage(m) ==
    /\ m \in DOMAIN msgs
    /\ faults < MaxFaults
    /\ faults' = faults + 1
    /\ msgs' = BagAdd(msgs, m)
    /\ UNCHANGED <<role, epoch, leader, voted, granted, rejected, fetched, hw, log, flushed, endOff, committed, timeouts,
                   fetchingSnap, snapVars>>
    /\ LogHwFollows

(* Message actions name the receiving node; the message is chosen inside (TLC labels each edge with the *)
(* action's name only when its parameters range over constant sets).                                  *)
HandleVoteRequest(n) == \E m \in DOMAIN msgs : OnVoteRequest(n, m)
HandleVoteResponse(n) == \E m \in DOMAIN msgs : OnVoteResponse(n, m)
HandleBeginQuorumEpochRequest(n) == \E m \in DOMAIN msgs : OnBeginQuorumEpoch(n, m)
HandleFetchRequest(n) == \E m \in DOMAIN msgs : OnFetchRequest(n, m)
HandleFetchResponse(n) == \E m \in DOMAIN msgs : OnFetchResponse(n, m)
HandleFetchSnapshotRequest(n) == \E m \in DOMAIN msgs : OnFetchSnapshotRequest(n, m)
HandleFetchSnapshotResponse(n) == \E m \in DOMAIN msgs : OnFetchSnapshotResponse(n, m)
Drop == \E m \in DOMAIN msgs : LoseMessage(m)
Duplicate == \E m \in DOMAIN msgs : DuplicateMessage(m)

Next ==
    \/ \E n \in Nodes : Timeout(n) \/ ClientAppend(n) \/ Crash(n) \/ HandleCreateSnapshot(n) \/ DeleteBeforeSnapshot(n)
    \/ \E n \in Nodes, v \in Voters : MaybeSendVoteRequests(n, v) \/ MaybeSendBeginQuorumEpochRequests(n, v)
                                     \/ MaybeSendFetchOrFetchSnapshot(n, v)
    \/ \E n \in Nodes : HandleVoteRequest(n) \/ HandleVoteResponse(n) \/ HandleBeginQuorumEpochRequest(n)
                        \/ HandleFetchRequest(n) \/ HandleFetchResponse(n) \/ HandleFetchSnapshotRequest(n)
                        \/ HandleFetchSnapshotResponse(n)
    \/ Drop
    \/ Duplicate

Spec == Init /\ [][Next]_vars

----------------------------------------------------------------------------
TypeOK ==
    /\ \A n \in Nodes :
        /\ role[n] \in {"Unattached", "Prospective", "Candidate", "Leader", "Follower", "Resigned"}
        /\ epoch[n] \in 0..MaxEpoch
        /\ LEO(n) <= MaxLogLen /\ flushed[n] \in 0..LEO(n) /\ start[n] \in 0..LEO(n)
        /\ hw[n] \in -1..LEO(n)
        /\ fetchingSnap[n] # NoSnapshot => role[n] = "Follower"
        /\ logHw[n] \in 0..MaxLogLen
    /\ InFlight(msgs) <= MaxMsgs + MaxFaults

(* A follower holds no votes: only a node campaigning counts them. *)
FollowerHoldsNoVotes == \A n \in Nodes : role[n] = "Follower" => granted[n] = {} /\ rejected[n] = {}

(* §3.5: at most one leader per epoch (a Resigned leader still leads its epoch). *)
OneLeaderPerEpoch ==
    \A a, b \in Nodes : role[a] \in {"Leader", "Resigned"} /\ role[b] \in {"Leader", "Resigned"}
                        /\ epoch[a] = epoch[b] => a = b

(* Log matching: the same epoch at the same offset means identical prefixes. *)
LogMatching ==
    \A a, b \in Nodes : \A i \in 1..Min(LEO(a), LEO(b)) :
        Full(a)[i] = Full(b)[i] => Prefix(Full(a), i) = Prefix(Full(b), i)

(* §3.6: a high watermark never exceeds what a majority of voters hold. *)
HwOnMajority ==
    \A n \in Nodes : hw[n] >= 0 =>
        Cardinality({v \in Voters : LEO(v) >= hw[n] /\ Prefix(Full(v), hw[n]) = Prefix(Full(n), hw[n])}) >= Majority

(* Leader completeness: a leader of a later epoch than a node's holds that node's committed prefix. *)
LeaderCompleteness ==
    \A l, n \in Nodes : role[l] = "Leader" /\ epoch[n] < epoch[l] /\ hw[n] > 0 =>
        LEO(l) >= hw[n] /\ Prefix(Full(l), hw[n]) = Prefix(Full(n), hw[n])

(* Committed records are never lost: a majority of voters keep them flushed. *)
CommittedNeverLost ==
    Cardinality({v \in Voters : flushed[v] >= Len(committed) /\ Prefix(Full(v), Len(committed)) = committed})
        >= Majority

(* KIP-630: a snapshot covers committed records only: its end is within the history, its epoch that of the last *)
(* record it covers; so is the log start (what precedes it is only in a snapshot).                              *)
SnapshotsCommitted ==
    \A n \in Nodes :
        /\ start[n] <= Len(committed)
        /\ \A s \in snaps[n] : s[1] <= Len(committed) /\ (s[1] > 0 => committed[s[1]] = s[2])

(* KIP-630: the log start is at most the high watermark while the node knows one. *)
LogStartBelowHw == \A n \in Nodes : hw[n] >= 0 => start[n] <= hw[n]

(* KIP-630: the log starts at a snapshot: what precedes it can be recovered and served. *)
LogStartsAtSnapshot == \A n \in Nodes : start[n] > 0 => \E s \in snaps[n] : s[1] = start[n]

(* KIP-630: the log keeps the high watermark the node knows. *)
LogKeepsKnownHw == \A n \in Nodes : hw[n] >= 0 => logHw[n] = hw[n]

(* §3.6: a known high watermark never decreases (a restart forgets it). *)
HwNeverDecreases == [][\A n \in Nodes : hw[n] >= 0 /\ hw'[n] >= 0 => hw'[n] >= hw[n]]_vars
=============================================================================
