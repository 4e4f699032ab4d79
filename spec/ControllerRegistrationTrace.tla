------------------- MODULE ControllerRegistrationTrace -------------------
(***************************************************************************)
(* Trace validation for ControllerRegistration (the technique of etcd's    *)
(* and CCF's Raft trace validation, as PartitionLeadershipTrace does for   *)
(* partitions): the spec's actions, constrained to the steps of recorded   *)
(* controller traces.  TLC explores every trace of TraceSet at once (the   *)
(* trace index t is chosen in the initial state); i counts the steps of    *)
(* trace t the spec has explained.                                         *)
(*                                                                         *)
(* A step (mapped by kraftspec.spec.trace_validation_controller) names the *)
(* spec action its reference call is: Start, Register (register_controller *)
(* on the active controller: RegisterController with either choice of      *)
(* duplicate), Fails (refused: RegisterControllerFails, with the refusal   *)
(* the input asks for in `deny`), Response (OnResponse with success `ok`), *)
(* Update (OnMetadataUpdate: `reg` the registration changed, `mv` the      *)
(* features did), Deadline (OnDeadline, or not yet due: the spec's time is *)
(* abstract), MaybeSend, Restart (to incarnation `n`) and Tick.  Requests  *)
(* and responses carry no id in a trace: any in flight of the step's       *)
(* incarnation and outcome will do.  An update that changes neither, a     *)
(* self-check that would not send and a deadline with no resend scheduled  *)
(* change nothing (the reference ignores them): the spec stutters.         *)
(* Checked against the successor: the incarnations of the requests sent    *)
(* (`sends`), the answer (`err`), the incarnations of the records written  *)
(* (`recs`), the stated post-state (`post`, fields in `stated`) and        *)
(* whether the fields the spec fixes are as it fixes them (`fixed`).  A    *)
(* step whose inputs the spec's environment would not make (a request or   *)
(* response not in flight, an update publishing other changes than the     *)
(* log made, ...) or beyond MaxSends / MaxRestarts sets `outside` instead. *)
(***************************************************************************)
EXTENDS ControllerRegistration, Sequences, TLC

CONSTANT TraceSet   \* <<[init |-> spec state, steps |-> <<step, ...>>], ...>>

VARIABLES t,        \* the trace being validated: an index of TraceSet
          i,        \* how many of its steps the spec has explained
          outside   \* "" or why the next step is outside the spec's bounds

Steps == TraceSet[t].steps
S == Steps[i + 1]

(* A marker line per explained prefix, read back by kraftspec.spec.trace_validation. *)
Report(k, why) == PrintT(<<"kraftspec-trace", t, k, why>>)

TraceInit ==
    /\ t \in DOMAIN TraceSet
    /\ Init
    /\ LET x == TraceSet[t].init IN
       /\ inc = x.inc /\ started = x.started /\ mvKnown = x.mvKnown /\ registered = x.registered
       /\ pending = x.pending /\ failed = x.failed /\ timer = x.timer /\ log = x.log /\ net = x.net
       /\ resp = x.resp /\ publishReg = x.publishReg /\ publishMv = x.publishMv /\ sent = x.sent
       /\ restarts = x.restarts
    /\ i = 0
    /\ outside = ""
    /\ Report(0, "")

InFlight(n) == \E id \in RequestIds : <<id, n>> \in net
Answer(ok) == \E m \in resp : m[2] = inc /\ m[3] = ok
MaySend(s) ==
    CASE s.act = "Start" -> TRUE
      [] s.act = "Update" -> s.reg \/ s.mv
      [] s.act = "Deadline" -> timer
      [] s.act = "MaybeSend" -> ShouldSend(registered, started, mvKnown, pending)
      [] OTHER -> FALSE

(* Why the spec cannot judge step s from the current state ("" when it can). *)
OutsideReason(s) ==
    CASE s.act = "Start" /\ started -> "the channel is already started (the spec starts it once per process)"
      [] MaySend(s) /\ sent >= MaxSends -> "the requests sent have reached MaxSends"
      [] s.act \in {"Register", "Fails"} /\ ~InFlight(s.n) ->
            "the request is not in flight in the spec's network (sent by an incarnation and not yet answered)"
      [] s.act = "Response" /\ ~Answer(s.ok) ->
            "no answer of that outcome to the running incarnation's requests is in flight (the spec's assumption on the network)"
      [] s.act = "Update" /\ (s.reg \/ s.mv) /\ <<s.reg, s.mv>> # <<publishReg, publishMv>> ->
            "the metadata update publishes other changes than the spec's log and features image have for the manager"
      [] s.act = "Restart" /\ restarts >= MaxRestarts -> "the restarts have reached MaxRestarts"
      [] s.act = "Restart" /\ s.n # inc + 1 -> "the new process's incarnation is not the spec's next one"
      [] OTHER -> ""

StepAction(s) ==
    CASE s.act = "Start" -> Start
      [] s.act = "Register" -> \E id \in RequestIds, d \in BOOLEAN : RegisterController(<<id, s.n>>, d)
      [] s.act = "Fails" -> \E id \in RequestIds : RegisterControllerFails(<<id, s.n>>)
      [] s.act = "Response" -> \E id \in RequestIds : OnResponse(<<id, inc, s.ok>>)
      [] s.act = "Update" -> IF s.reg \/ s.mv THEN OnMetadataUpdate ELSE UNCHANGED vars
      [] s.act = "Deadline" -> OnDeadline \/ UNCHANGED vars
      [] s.act = "MaybeSend" -> IF MaySend(s) THEN MaybeSend ELSE UNCHANGED vars
      [] s.act = "Restart" -> Restart
      [] s.act = "Tick" -> UNCHANGED vars

(* The trace's post-state fields, in the spec's vocabulary, after the step. *)
After == [inc |-> inc', started |-> started', mvKnown |-> mvKnown', registered |-> registered',
          pending |-> pending', failed |-> failed', timer |-> timer', log |-> log']

(* The outputs and post-state fields the trace states, against the spec's successor. *)
PostOK(s) ==
    /\ s.fixed
    /\ s.hasSends => s.sends = [k \in 1..(sent' - sent) |-> inc']
    /\ s.err # "?" => s.err = IF s.act = "Register" THEN "NONE" ELSE s.deny
    /\ s.nrec >= 0 => s.recs = IF s.act = "Register" THEN <<log'>> ELSE << >>
    /\ \A f \in s.stated : After[f] = s.post[f]

TraceNext ==
    /\ outside = ""
    /\ i < Len(Steps)
    /\ IF OutsideReason(S) # ""
       THEN /\ outside' = OutsideReason(S)
            /\ UNCHANGED <<vars, t, i>>
            /\ Report(i, outside')
       ELSE /\ StepAction(S)
            /\ PostOK(S)
            /\ i' = i + 1
            /\ UNCHANGED <<t, outside>>
            /\ Report(i', "")

TraceSpec == TraceInit /\ [][TraceNext]_<<vars, t, i, outside>>
=============================================================================
