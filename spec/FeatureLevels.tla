---------------------------- MODULE FeatureLevels ----------------------------
(***************************************************************************)
(* Finalized feature levels on the active KRaft controller, UpdateFeatures *)
(* and the compatibility check a broker registration gets against them    *)
(* (Kafka 4.1+ FeatureControlManager and ClusterControlManager; kraftspec  *)
(* rule book §1.11 and §1.3 checks 5-7).                                   *)
(*                                                                         *)
(* Three features: metadata.version (MV), eligible.leader.replicas.version *)
(* (ELR, whose level 1 depends on MV 4.0-IV1) and kraft.version (KV, which *)
(* the Raft client upgrades and never downgrades). Brokers register with   *)
(* one of two software versions (SupportedBy), a rolling upgrade's old    *)
(* and new; the local controller (the whole quorum) supports LocalRange.  *)
(*                                                                         *)
(* Every action of Next is named after the reference function it follows  *)
(* (kraftspec.reference): RegisterBroker ~ broker.register_broker (its     *)
(* feature checks _feature_error), UnregisterBroker ~                      *)
(* broker.unregister_broker, UpdateFeatures ~                              *)
(* feature_control.update_features, whose operators follow                 *)
(* feature_control's: UpdateFeatureOK ~ update_feature, ReasonNotSupported *)
(* ~ reason_not_supported, MetadataVersionError ~ metadata_version_error,  *)
(* MetadataChanged ~ metadata_changed, DependencyError ~ dependency_error, *)
(* ElrSafetyRecords ~ elr_safety_records.                                  *)
(*                                                                         *)
(* Where Kafka differs from the KIPs: KIP-584's allowDowngrade flag is     *)
(* KIP-778's upgrade type; an MV downgrade across a level that changed the *)
(* metadata is refused even as UNSAFE_DOWNGRADE (KAFKA-13896), although    *)
(* KIP-778 describes performing it; KIP-584 answers per feature, Kafka 4.x *)
(* fails the whole request at its first failing feature (so a request is   *)
(* accepted iff every update passes, in whatever order Kafka checks them). *)
(*                                                                         *)
(* Abstracted: no partitions, sessions or heartbeats (registration then    *)
(* writes one record and a new incarnation is never a duplicate); a        *)
(* request holds one update, or an MV and an ELR upgrade together (the     *)
(* dependency read from the request's proposed levels); upgrade types 1    *)
(* UPGRADE, 2 SAFE_DOWNGRADE, 3 UNSAFE_DOWNGRADE (an unknown one is always *)
(* refused, so it has no edge); validate-only requests write nothing (no   *)
(* edge). The local controller is the whole quorum, so no other            *)
(* controller's range counts (reason_not_supported takes none here), and   *)
(* the Raft client's own checks of a kraft.version upgrade (the voters'    *)
(* ranges, the raft component's) pass, as in the reference.                *)
(* Actions that write are enabled while nextOffset < MaxOffset.            *)
(***************************************************************************)
EXTENDS Integers, FiniteSets

CONSTANTS Brokers,      \* broker ids, e.g. {1, 2}
          Softwares,    \* broker software versions, e.g. {1, 2} (SupportedBy)
          MVRequests,   \* the metadata.version levels requests name
          MaxOffset     \* bound on the log end offset

VARIABLES fin,          \* feature name -> finalized level (0: not finalized)
          reg,          \* broker id -> the software it registered with (0: not registered)
          minIsr,       \* the cluster-level min.insync.replicas config exists
          nextOffset    \* the metadata log's next write offset

vars == <<fin, reg, minIsr, nextOffset>>

MV == "metadata.version"
ELR == "eligible.leader.replicas.version"
KV == "kraft.version"
Features == {MV, ELR, KV}
UPGRADE == 1
SAFE_DOWNGRADE == 2
UNSAFE_DOWNGRADE == 3
UpgradeTypes == {UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE}

(* What this Kafka (4.3's MetadataVersion and Feature tables) defines. *)
MinMV == 7                                   \* 3.3-IV3, MetadataVersion.MINIMUM_VERSION
DefinedMV == MinMV..31                       \* up to 4.4-IV0, the latest testing level
ChangingMV == {7, 8, 11, 13, 14, 15, 17, 23, 30}   \* didMetadataChange
ElrNeedsMV == 23                             \* ELR 1 depends on 4.0-IV1
DefinedLevels(f) == IF f = MV THEN DefinedMV ELSE {0, 1}
RequestLevels(f) == IF f = MV THEN MVRequests ELSE {0, 1}

(* Supported ranges <<min, max>>: a node that does not list a feature supports only level 0. *)
LocalRange(f) == IF f = MV THEN <<MinMV, 30>> ELSE <<0, 1>>
SupportedBy(s, f) ==
    CASE f = MV -> IF s = 1 THEN <<MinMV, 23>> ELSE <<MinMV, 24>>
      [] f = ELR -> IF s = 1 THEN <<0, 0>> ELSE <<0, 1>>
      [] OTHER -> <<0, 1>>
InRange(level, r) == r[1] <= level /\ level <= r[2]
Registered(b) == reg[b] # 0

----------------------------------------------------------------------------
(* reason_not_supported: the local controller's range, then every registered broker's. *)
ReasonNotSupported(f, level) ==
    ~InRange(level, LocalRange(f)) \/ \E b \in Brokers : Registered(b) /\ ~InRange(level, SupportedBy(reg[b], f))

(* metadata_changed: some level above the lower one, up to the higher, changed the metadata. *)
MetadataChanged(cur, target) ==
    \E l \in ChangingMV : (IF cur < target THEN cur ELSE target) < l /\ l <= (IF cur < target THEN target ELSE cur)

(* metadata_version_error: a defined level; no downgrade across a metadata change, unsafe included. *)
MetadataVersionError(level) ==
    level \notin DefinedMV \/ (level < fin[MV] /\ MetadataChanged(fin[MV], level))

(* The levels the request would leave finalized (proposedUpdatedVersions). *)
Proposed(req, f) == IF \E u \in req : u.f = f THEN (CHOOSE u \in req : u.f = f).level ELSE fin[f]

(* dependency_error: a defined level whose dependencies the proposed levels meet. *)
DependencyError(req, u) ==
    \/ u.level \notin DefinedLevels(u.f)
    \/ u.level >= 1 /\ Proposed(req, MV) < MinMV
    \/ u.f = ELR /\ u.level >= 1 /\ Proposed(req, MV) < ElrNeedsMV

(* update_feature: one feature's checks. kraft.version goes to the Raft client: an upgrade to a *)
(* level it knows, a "downgrade" only to the current level (which writes nothing).               *)
UpdateFeatureOK(req, u) ==
    /\ u.level >= 0
    /\ ~ReasonNotSupported(u.f, u.level)
    /\ ~(u.level < fin[u.f] /\ u.type = UPGRADE)
    /\ ~(u.level > fin[u.f] /\ u.type # UPGRADE)
    /\ CASE u.f = MV -> ~MetadataVersionError(u.level)
         [] u.f = KV -> IF u.type = UPGRADE THEN u.level \in DefinedLevels(KV) ELSE u.level = fin[KV]
         [] OTHER -> ~DependencyError(req, u)

(* An accepted update writes one record (a FeatureLevelRecord, or kraft.version's NoOpRecord to *)
(* wait on), except kraft.version kept at its level.                                               *)
Writes(u) == u.f # KV \/ u.type = UPGRADE
(* elr_safety_records: enabling ELR first sets the cluster-level min.insync.replicas unless set. *)
EnablesElr(req) == \E u \in req : u.f = ELR /\ u.level > 0
ElrSafetyRecords(req) == IF EnablesElr(req) /\ ~minIsr THEN 1 ELSE 0

Updates(f) == [f : {f}, level : RequestLevels(f), type : UpgradeTypes]
Requests == {{u} : u \in Updates(MV) \cup Updates(ELR) \cup Updates(KV)}
            \cup {{u, v} : u \in {x \in Updates(MV) : x.type = UPGRADE}, v \in {x \in Updates(ELR) : x.type = UPGRADE}}

----------------------------------------------------------------------------
(* A freshly bootstrapped active controller at MV 4.0-IV0: no broker registered, nothing else finalized. *)
Init ==
    /\ fin = [f \in Features |-> IF f = MV THEN 22 ELSE 0]
    /\ reg = [b \in Brokers |-> 0]
    /\ minIsr = FALSE
    /\ nextOffset = 0

(* register_broker's feature checks (§1.3 checks 5-7): every finalized level within the broker's *)
(* range (a feature it does not list: level 0 only). A new incarnation or an amendment alike      *)
(* writes one RegisterBrokerRecord.                                                               *)
RegisterBroker(b, s) ==
    /\ nextOffset < MaxOffset
    /\ \A f \in Features : InRange(fin[f], SupportedBy(s, f))
    /\ reg' = [reg EXCEPT ![b] = s]
    /\ nextOffset' = nextOffset + 1
    /\ UNCHANGED <<fin, minIsr>>

(* unregister_broker: UnregisterBrokerRecord; the broker's ranges no longer count. *)
UnregisterBroker(b) ==
    /\ nextOffset < MaxOffset
    /\ Registered(b)
    /\ reg' = [reg EXCEPT ![b] = 0]
    /\ nextOffset' = nextOffset + 1
    /\ UNCHANGED <<fin, minIsr>>

(* update_features: all or nothing; the ELR safety records, then a record per update. *)
UpdateFeatures(req) ==
    /\ nextOffset < MaxOffset
    /\ \A u \in req : UpdateFeatureOK(req, u)
    /\ fin' = [f \in Features |-> Proposed(req, f)]
    /\ minIsr' = (minIsr \/ EnablesElr(req))
    /\ nextOffset' = nextOffset + ElrSafetyRecords(req) + Cardinality({u \in req : Writes(u)})
    /\ UNCHANGED reg

Next ==
    \/ \E b \in Brokers, s \in Softwares : RegisterBroker(b, s)
    \/ \E b \in Brokers : UnregisterBroker(b)
    \/ \E req \in Requests : UpdateFeatures(req)

Spec == Init /\ [][Next]_vars

----------------------------------------------------------------------------
(* Invariants and properties. *)
TypeOK ==
    /\ fin \in [Features -> Nat]
    /\ reg \in [Brokers -> Softwares \cup {0}]
    /\ minIsr \in BOOLEAN
    /\ nextOffset \in 0..(MaxOffset + 2)

(* Every finalized level lies within the local controller's range and every registered broker's. *)
FinalizedSupportedByEveryNode ==
    \A f \in Features : /\ InRange(fin[f], LocalRange(f))
                       /\ \A b \in Brokers : Registered(b) => InRange(fin[f], SupportedBy(reg[b], f))

(* metadata.version is always one this Kafka defines (DefinedMV starts at the minimum, MinMV). *)
MetadataVersionAtLeastMinimum == fin[MV] \in DefinedMV

(* A finalized ELR level's dependency holds; enabling ELR left the min.insync.replicas config. *)
DependenciesMet == fin[ELR] >= 1 => fin[MV] >= ElrNeedsMV /\ minIsr

(* A metadata.version downgrade never crosses a level that changed the metadata. *)
MetadataDowngradesKeepMetadata == [][fin'[MV] < fin[MV] => ~MetadataChanged(fin[MV], fin'[MV])]_vars

(* A level goes down only by a request that asks to downgrade that feature. *)
DowngradeOnlyWhenAsked ==
    [][(\E f \in Features : fin'[f] < fin[f]) =>
          \A req \in Requests : UpdateFeatures(req) =>
              \A u \in req : fin'[u.f] < fin[u.f] => u.type \in {SAFE_DOWNGRADE, UNSAFE_DOWNGRADE}]_vars

(* kraft.version never goes down (KIP-853: the voters' records cannot be taken back). *)
KRaftVersionNeverDecreases == [][fin'[KV] >= fin[KV]]_vars
=============================================================================
