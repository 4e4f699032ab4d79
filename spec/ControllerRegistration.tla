------------------------- MODULE ControllerRegistration -------------------------
(***************************************************************************)
(* KIP-919 controller registration (kraftspec rule book §4.1):             *)
(* one controller process (node 1) runs ControllerRegistrationManager; an  *)
(* always-active quorum controller with metadata.version >= 3.7-IV0        *)
(* writes a RegisterControllerRecord per request it handles, replacing the *)
(* previous registration of node 1 whatever its incarnation.               *)
(*                                                                         *)
(* Requests of every incarnation stay in the network until delivered, in  *)
(* any order, possibly more than once (a duplicate writes its record again *)
(* but only the first delivery is answered). A restart starts a new        *)
(* incarnation with fresh manager state; its old requests may still land.  *)
(*                                                                         *)
(* Every action has the name of the reference function that implements   *)
(* it (kraftspec.reference.controller_registration): Start ~ start,        *)
(* RegisterController ~ register_controller + replay_register_controller, *)
(* RegisterControllerFails ~ an error response, OnResponse ~ on_response,  *)
(* OnMetadataUpdate ~ on_metadata_update, OnDeadline ~ on_deadline,        *)
(* MaybeSend ~ maybe_send (the periodic self-check), Restart ~ a new       *)
(* ManagerState. Time is abstracted: a scheduled resend fires at any time. *)
(* Actions that may send are enabled while sent < MaxSends.                *)
(***************************************************************************)
EXTENDS Integers, FiniteSets

CONSTANTS MaxRestarts, \* restarts of the controller process (incarnations 1..MaxRestarts+1)
          MaxSends     \* bound on the requests ever sent

VARIABLES inc,        \* the running incarnation
          started,    \* the manager's channel is started
          mvKnown,    \* the manager has learnt a metadata.version >= 3.7-IV0
          registered, \* registeredInLog as the manager last computed it
          pending,    \* the manager's pending RPCs
          failed,     \* the manager's failed RPCs since the last success
          timer,      \* a deferred resend is scheduled
          log,        \* the incarnation of node 1's registration in the log, 0 = none
          net,        \* requests in flight: <<request id, incarnation>>
          resp,       \* responses in flight: <<request id, incarnation, success>>
          publishReg, \* the log changed node 1's registration since the manager last saw it
          publishMv,  \* the manager has not yet seen the features image
          sent,       \* requests sent so far (the next request id)
          restarts    \* restarts so far

vars == <<inc, started, mvKnown, registered, pending, failed, timer, log, net, resp, publishReg, publishMv,
          sent, restarts>>

ManagerVars == <<inc, started, mvKnown, registered, pending, failed, timer>>

(* maybeSendControllerRegistration: send only when unregistered, started, MV known and nothing pending. *)
ShouldSend(reg, st, mvk, pend) == ~reg /\ st /\ mvk /\ pend = 0
SendIf(cond) ==
    IF cond
    THEN /\ net' = net \cup {<<sent, inc>>}
         /\ sent' = sent + 1
         /\ pending' = pending + 1
    ELSE UNCHANGED <<net, sent, pending>>

----------------------------------------------------------------------------
Init ==
    /\ inc = 1
    /\ started = FALSE
    /\ mvKnown = FALSE
    /\ registered = FALSE
    /\ pending = 0
    /\ failed = 0
    /\ timer = FALSE
    /\ log = 0
    /\ net = {}
    /\ resp = {}
    /\ publishReg = FALSE
    /\ publishMv = TRUE
    /\ sent = 0
    /\ restarts = 0

(* start(channelManager): the channel is available; try to send. *)
Start ==
    /\ sent < MaxSends
    /\ ~started
    /\ started' = TRUE
    /\ SendIf(ShouldSend(registered, TRUE, mvKnown, pending))
    /\ UNCHANGED <<inc, mvKnown, registered, failed, timer, log, resp, publishReg, publishMv, restarts>>

(* registerController + replay: one RegisterControllerRecord; a duplicate delivery is not answered. *)
RegisterController(r, duplicate) ==
    /\ r \in net
    /\ log' = r[2]
    /\ publishReg' = TRUE
    /\ IF duplicate
       THEN UNCHANGED <<net, resp>>
       ELSE /\ net' = net \ {r}
            /\ resp' = resp \cup {<<r[1], r[2], TRUE>>}
    /\ UNCHANGED <<inc, started, mvKnown, registered, pending, failed, timer, publishMv, sent, restarts>>

(* The controller answers with an error (NOT_CONTROLLER, timeout, ...) and writes nothing. *)
RegisterControllerFails(r) ==
    /\ r \in net
    /\ net' = net \ {r}
    /\ resp' = resp \cup {<<r[1], r[2], FALSE>>}
    /\ UNCHANGED <<inc, started, mvKnown, registered, pending, failed, timer, log, publishReg, publishMv,
                   sent, restarts>>

(* RegistrationResponseHandler: success does not mark registered; a failure schedules a resend. *)
OnResponse(m) ==
    /\ m \in resp
    /\ resp' = resp \ {m}
    /\ m[2] = inc
    /\ pending' = pending - 1
    /\ IF m[3]
       THEN /\ failed' = 0
            /\ UNCHANGED timer
       ELSE /\ failed' = failed + 1
            /\ timer' = TRUE
    /\ UNCHANGED <<inc, started, mvKnown, registered, log, net, publishReg, publishMv, sent, restarts>>

(* onMetadataUpdate: registeredInLog comes only from the log: our id with our incarnation. *)
OnMetadataUpdate ==
    /\ sent < MaxSends
    /\ publishReg \/ publishMv
    /\ LET mvk == mvKnown \/ publishMv
           reg == IF publishReg THEN log = inc ELSE registered
       IN /\ mvKnown' = mvk
          /\ registered' = reg
          /\ SendIf(ShouldSend(reg, started, mvk, pending))
    /\ publishReg' = FALSE
    /\ publishMv' = FALSE
    /\ UNCHANGED <<inc, started, failed, timer, log, resp, restarts>>

(* The deferred "communication" event fires and runs maybeSendControllerRegistration. *)
OnDeadline ==
    /\ sent < MaxSends
    /\ timer
    /\ timer' = FALSE
    /\ SendIf(ShouldSend(registered, started, mvKnown, pending))
    /\ UNCHANGED <<inc, started, mvKnown, registered, failed, log, resp, publishReg, publishMv, restarts>>

(* The periodic self-check: maybeSendControllerRegistration on a timer (Kafka 4.3 has no such timer). *)
MaybeSend ==
    /\ sent < MaxSends
    /\ ShouldSend(registered, started, mvKnown, pending)
    /\ SendIf(TRUE)
    /\ UNCHANGED <<inc, started, mvKnown, registered, failed, timer, log, resp, publishReg, publishMv, restarts>>

(* A new process: new incarnation, fresh manager; its old requests may still arrive, its connections are gone. *)
Restart ==
    /\ restarts < MaxRestarts
    /\ restarts' = restarts + 1
    /\ inc' = inc + 1
    /\ started' = FALSE
    /\ mvKnown' = FALSE
    /\ registered' = FALSE
    /\ pending' = 0
    /\ failed' = 0
    /\ timer' = FALSE
    /\ resp' = {}
    /\ publishReg' = TRUE
    /\ publishMv' = TRUE
    /\ UNCHANGED <<log, net, sent>>

(* Parameters range over constant sets (each action checks membership), so TLC labels edges by action name. *)
RequestIds == 0..(MaxSends - 1)
Incarnations == 1..(MaxRestarts + 1)

Next ==
    \/ Start
    \/ \E id \in RequestIds, i \in Incarnations, d \in BOOLEAN : RegisterController(<<id, i>>, d)
    \/ \E id \in RequestIds, i \in Incarnations : RegisterControllerFails(<<id, i>>)
    \/ \E id \in RequestIds, i \in Incarnations, ok \in BOOLEAN : OnResponse(<<id, i, ok>>)
    \/ OnMetadataUpdate
    \/ OnDeadline
    \/ MaybeSend
    \/ Restart

Spec == Init /\ [][Next]_vars

----------------------------------------------------------------------------
TypeOK ==
    /\ inc \in 1..(MaxRestarts + 1)
    /\ log \in 0..(MaxRestarts + 1)
    /\ pending \in 0..MaxSends
    /\ failed \in 0..MaxSends
    /\ sent \in 0..MaxSends
    /\ net \subseteq RequestIds \X Incarnations

(* Every RPC the running incarnation counts as pending is in flight, as a request or as its answer. *)
PendingMatchesNetwork ==
    pending = Cardinality({r \in net : r[2] = inc}) + Cardinality({m \in resp : m[2] = inc})

(* Once nothing is in flight or unpublished and the self-check would not send, the log holds the *)
(* running incarnation's registration and the manager knows it.                                 *)
Settled == net = {} /\ resp = {} /\ ~publishReg /\ ~publishMv /\ ~timer /\ started /\ mvKnown
           /\ ~ShouldSend(registered, started, mvKnown, pending)
SettledOnRunningIncarnation == Settled => (log = inc /\ registered)

(* Registered is never claimed for another incarnation's record once the manager has seen the log. *)
RegisteredMeansOurs == (registered /\ ~publishReg) => log = inc
=============================================================================
