---------------------------- MODULE KRaftRequests ----------------------------
(***************************************************************************)
(* A node's requests as Kafka 4.3 sends them (kraftspec rule book §3.13,   *)
(* §3.5, §3.7): one voter of three static voters, seen through what it     *)
(* has outstanding, to whom, since when, and which connections back off.   *)
(* Kafka's RequestManager keeps one ConnectionState per destination:       *)
(* ready, awaiting the answer to one request (until                        *)
(* controller.quorum.request.timeout.ms has passed, hasRequestTimedOut),   *)
(* or backing off for quorum.retry.backoff.ms after a failed answer        *)
(* (isBackingOff; a disconnect reaches the client as a                     *)
(* BROKER_NOT_AVAILABLE answer). isReady: neither awaiting nor backing     *)
(* off. A transition to another role resets every connection (resetAll).   *)
(*                                                                         *)
(* What each role sends in its poll:                                       *)
(*   Follower (maybeSendFetchToBestNode): when the Fetch to its leader     *)
(*     timed out, it resets that connection and fetches a bootstrap server *)
(*     instead; while the leader's connection backs off, likewise; else it *)
(*     fetches the leader once no request at all is in flight;             *)
(*   Unattached (maybeSendFetchToAnyBootstrap): once no request is in      *)
(*     flight, one Fetch to the server findReadyBootstrapServer picks: the *)
(*     first ready one in list order from a random start index (here every *)
(*     start is tried: the draw is the action's parameter s); with static  *)
(*     voters the list is every voter by id, the node itself included;     *)
(*   Prospective, Candidate (maybeSendVoteRequests): a (pre-)vote request  *)
(*     to each other voter that has not answered and is ready, so a voter  *)
(*     whose request failed is asked again only once its back-off is over; *)
(*     a Candidate that lost its election sends nothing more.              *)
(*                                                                         *)
(* Each action is one input with the poll that follows it (Kafka's poll),  *)
(* named after the reference function it follows (kraftspec.reference      *)
(* raft, raft_node):                                                       *)
(*   Poll ~ _poll after a Tick one ms later: the environment's time;       *)
(*   HandleFetchResponseFailed, HandleVoteResponseFailed ~                 *)
(*     _handle_fetch_response, _handle_vote_response of a                  *)
(*     BROKER_NOT_AVAILABLE answer to the request outstanding              *)
(*     (raft_node.answered: the connection backs off);                     *)
(*   HandleFetchResponse ~ _handle_fetch_response of an answer naming the  *)
(*     epoch's leader (or none): an Unattached node follows the leader it  *)
(*     learns, else the connection is ready again;                         *)
(*   HandleVoteResponse ~ _handle_vote_response: a granted pre-vote makes  *)
(*     a Candidate of the next epoch; a rejection is recorded, and a       *)
(*     Prospective rejected by every other voter goes back to its leader   *)
(*     (_prospective_lost).                                                *)
(*                                                                         *)
(* Abstracted: the election, fetch and check-quorum timeouts lie beyond    *)
(* MaxTime (a node changes role only by an answer); the other voters are   *)
(* an environment that answers a request outstanding (never one timed      *)
(* out), never grants a standard vote (no Leader) and names the leader of  *)
(* the node's own epoch; records, the request kinds (a fetching role       *)
(* sends Fetch, a voting one Vote) and correlation ids are not modelled.   *)
(***************************************************************************)
EXTENDS Integers, FiniteSets

CONSTANTS N,              \* the voters are 1..N, also the bootstrap servers in this order
          Local,          \* the node followed
          KnownLeader,    \* the leader a Follower or Prospective starts with
          RetryBackoff,   \* quorum.retry.backoff.ms
          RequestTimeout, \* controller.quorum.request.timeout.ms
          MaxTime         \* bound on the clock (ms)

VARIABLES role,     \* "Follower", "Unattached", "Prospective" or "Candidate"
          epoch,    \* the node's epoch
          leader,   \* the leader it knows in this epoch (None: none)
          inflight, \* per destination, when the request awaited there was sent (None: none awaited)
          failed,   \* per destination, when its last request failed while that back-off runs (None: not backing off)
          rejected, \* the voters that rejected this (pre-)vote round
          now       \* the clock (ms)

vars == <<role, epoch, leader, inflight, failed, rejected, now>>

None == -1
Ids == 1..N
Others == Ids \ {Local}
NoConnections == [d \in Ids |-> None]
Fetching == {"Follower", "Unattached"}
Voting == {"Prospective", "Candidate"}

(* The connections at time t: the requests not timed out (hasRequestTimedOut) and the back-offs still running
   (isBackoffComplete); hasAnyInflightRequest forgets the others. A connection is a record [inf, fl]. *)
Live(inf, t) == [d \in Ids |-> IF inf[d] # None /\ t < inf[d] + RequestTimeout THEN inf[d] ELSE None]
Running(fl, t) == [d \in Ids |-> IF fl[d] # None /\ t < fl[d] + RetryBackoff THEN fl[d] ELSE None]

(* RequestManager.isReady: nothing awaited (or it timed out) and no back-off running. *)
IsReady(c, d, t) == Live(c.inf, t)[d] = None /\ Running(c.fl, t)[d] = None
IsBackingOff(c, d, t) == Running(c.fl, t)[d] # None
HasRequestTimedOut(c, d, t) == c.inf[d] # None /\ t >= c.inf[d] + RequestTimeout
HasAnyInflightRequest(c, t) == \E d \in Ids : Live(c.inf, t)[d] # None
Send(c, d, t) == [c EXCEPT !.inf[d] = t]

(* The i-th bootstrap server counted from start index s (the list is 1..N). *)
Server(s, i) == ((s + i) % N) + 1

(* RequestManager.findReadyBootstrapServer: the first ready server from the start index s; None when all back off. *)
FindReadyBootstrapServer(c, t, s) ==
    LET ready == {i \in 0..N - 1 : IsReady(c, Server(s, i), t)}
    IN IF ready = {} THEN None ELSE Server(s, CHOOSE i \in ready : \A j \in ready : i <= j)

(* maybeSendFetchToAnyBootstrap: nothing while any request is in flight, else one Fetch to a ready server. *)
MaybeSendFetchToAnyBootstrap(c, t, s) ==
    IF HasAnyInflightRequest(c, t) THEN c
    ELSE LET d == FindReadyBootstrapServer(c, t, s) IN IF d = None THEN c ELSE Send(c, d, t)

(* maybeSendFetchToBestNode: a bootstrap server when the leader's Fetch timed out (that connection reset first) or
   its connection backs off; else the leader, once no request at all is in flight. *)
MaybeSendFetchToBestNode(c, l, t, s) ==
    IF HasRequestTimedOut(c, l, t) THEN MaybeSendFetchToAnyBootstrap([c EXCEPT !.inf[l] = None], t, s)
    ELSE IF IsBackingOff(c, l, t) THEN MaybeSendFetchToAnyBootstrap(c, t, s)
    ELSE IF HasAnyInflightRequest(c, t) THEN c
    ELSE Send(c, l, t)

(* maybeSendVoteRequests: each other voter that has not answered, if its connection is ready. *)
MaybeSendVoteRequests(c, rej, t) ==
    [c EXCEPT !.inf = [d \in Ids |-> IF d \in Others \ rej /\ IsReady(c, d, t) THEN t ELSE c.inf[d]]]

(* pollCurrentState's requests at time t for role r (leader l, rejections rej), bootstrap draw s. *)
PollRequests(r, l, rej, c, t, s) ==
    CASE r = "Follower" -> MaybeSendFetchToBestNode(c, l, t, s)
      [] r = "Unattached" -> MaybeSendFetchToAnyBootstrap(c, t, s)
      [] r = "Candidate" /\ rej = Others -> c  \* the election is lost: it waits for its timer
      [] OTHER -> MaybeSendVoteRequests(c, rej, t)

(* The poll after the input, with bootstrap draw s: the connections c become the node's, as seen at time t. *)
PollAt(r, l, rej, c, t, s) ==
    LET p == PollRequests(r, l, rej, c, t, s)
    IN inflight' = Live(p.inf, t) /\ failed' = Running(p.fl, t)

Connections == [inf |-> inflight, fl |-> failed]
Draws == 0..N - 1  \* the start indexes findReadyBootstrapServer may draw (random.nextInt)
Reset == [inf |-> NoConnections, fl |-> NoConnections]

----------------------------------------------------------------------------
(* A restarted voter at time 0 after its first poll: a Follower of KnownLeader, Unattached, a Prospective that
   still knows KnownLeader (EndQuorumEpoch sent it campaigning), or a Candidate (it had voted for itself). *)
Init ==
    /\ role \in Fetching \cup Voting
    /\ epoch = 1
    /\ leader = IF role \in {"Follower", "Prospective"} THEN KnownLeader ELSE None
    /\ rejected = {}
    /\ now = 0
    /\ \E s \in Draws :
        LET p == PollRequests(role, leader, {}, Reset, 0, s)
        IN inflight = p.inf /\ failed = p.fl

(* A poll one ms later: timed-out requests and finished back-offs free their connections. *)
Poll(s) ==
    /\ now < MaxTime
    /\ now' = now + 1
    /\ PollAt(role, leader, rejected, Connections, now + 1, s)
    /\ UNCHANGED <<role, epoch, leader, rejected>>

(* The request outstanding to d fails (BROKER_NOT_AVAILABLE): handleTopLevelError is false, so
   onResponseResult backs the connection off (ConnectionState.onResponseError). *)
ResponseFailed(d, s) ==
    /\ inflight[d] # None
    /\ LET c == [inf |-> [inflight EXCEPT ![d] = None], fl |-> [failed EXCEPT ![d] = now]]
       IN PollAt(role, leader, rejected, c, now, s)
    /\ UNCHANGED <<role, epoch, leader, rejected, now>>

(* A fetching node's Fetch fails, a voting node's (pre-)vote request fails. *)
HandleFetchResponseFailed(d, s) == role \in Fetching /\ ResponseFailed(d, s)
HandleVoteResponseFailed(v, s) == role \in Voting /\ ResponseFailed(v, s)

(* A Fetch answer from d naming leader l of the node's epoch (the node itself names what it knows): an Unattached
   node follows l (maybeHandleCommonResponse, transitionToFollower: connections reset); otherwise the answer
   succeeds and d's connection is ready again. *)
HandleFetchResponse(d, l, s) ==
    /\ role \in Fetching
    /\ inflight[d] # None
    /\ l = leader \/ (role = "Unattached" /\ d # Local /\ l \in Others)
    /\ IF role = "Unattached" /\ l # None
       THEN /\ role' = "Follower" /\ leader' = l
            /\ PollAt("Follower", l, rejected, Reset, now, s)
       ELSE /\ UNCHANGED <<role, leader>>
            /\ PollAt(role, leader, rejected, [Connections EXCEPT !.inf[d] = None], now, s)
    /\ UNCHANGED <<epoch, rejected, now>>

(* A (pre-)vote answer from voter v: a granted pre-vote makes a majority (the node's own and v's), so the node is
   a Candidate of the next epoch; a rejection is recorded, and a Prospective that every other voter rejected goes
   back to following its leader, or to Unattached when it knows none. *)
HandleVoteResponse(v, granted, s) ==
    /\ role \in Voting
    /\ inflight[v] # None
    /\ granted => role = "Prospective"
    /\ IF granted
       THEN /\ role' = "Candidate" /\ epoch' = epoch + 1 /\ leader' = None /\ rejected' = {}
            /\ PollAt("Candidate", None, {}, Reset, now, s)
       ELSE IF role = "Prospective" /\ rejected \cup {v} = Others
       THEN /\ role' = IF leader # None THEN "Follower" ELSE "Unattached"
            /\ rejected' = {}
            /\ PollAt(role', leader, {}, Reset, now, s)
            /\ UNCHANGED <<epoch, leader>>
       ELSE /\ rejected' = rejected \cup {v}
            /\ PollAt(role, leader, rejected', [Connections EXCEPT !.inf[v] = None], now, s)
            /\ UNCHANGED <<role, epoch, leader>>
    /\ UNCHANGED now

Next ==
    \E s \in Draws :
        \/ Poll(s)
        \/ \E d \in Ids : HandleFetchResponseFailed(d, s)
        \/ \E v \in Others : HandleVoteResponseFailed(v, s)
        \/ \E d \in Ids, l \in Others \cup {None} : HandleFetchResponse(d, l, s)
        \/ \E v \in Others, granted \in BOOLEAN : HandleVoteResponse(v, granted, s)

Spec == Init /\ [][Next]_vars

----------------------------------------------------------------------------
TypeOK ==
    /\ role \in Fetching \cup Voting
    /\ epoch \in 1..2
    /\ leader \in {None} \cup Others
    /\ inflight \in [Ids -> {None} \cup 0..MaxTime]
    /\ failed \in [Ids -> {None} \cup 0..MaxTime]
    /\ rejected \subseteq Others
    /\ now \in 0..MaxTime

(* Nothing is sent to a connection backing off: a destination awaited is not backing off. *)
NothingSentWhileBackingOff ==
    \A d \in Ids : inflight[d] # None => failed[d] = None

(* A fetching node has at most one request in flight, across all destinations (hasAnyInflightRequest). *)
OneFetchAtATime ==
    role \in Fetching => Cardinality({d \in Ids : inflight[d] # None}) <= 1

(* A fetching node is never idle while some server is ready: it awaits an answer, or every server backs off. *)
FetchingNodeNeverIdle ==
    role \in Fetching => (\E d \in Ids : inflight[d] # None) \/ (\A d \in Ids : failed[d] # None)

(* A voter that has not answered the round is asked, or its connection backs off; none other, nor the node itself,
   is asked (a Candidate that lost waits). *)
VoteRoundNeverIdle ==
    role \in Voting =>
        /\ \A v \in Ids : inflight[v] # None => v \in Others \ rejected
        /\ rejected # Others => \A v \in Others \ rejected : inflight[v] # None \/ failed[v] # None

(* A Follower fetches a server other than its leader only when the leader's connection backs off or its request
   timed out: never while the leader is ready. *)
FollowerFallsBackOnlyWhenLeaderUnavailable ==
    [][role' = "Follower" =>
        \A d \in Ids \ {leader'} :
            (inflight'[d] = now' /\ inflight[d] # now') =>
                \/ failed'[leader'] # None
                \/ inflight[leader'] # None /\ now' >= inflight[leader'] + RequestTimeout]_vars
=============================================================================
