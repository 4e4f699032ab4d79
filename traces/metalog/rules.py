"""What the active controller may legally write, judged record by record against the image before it.

Each rule is a function named after the rule, registered for the apiKeys it judges; it returns a
plain explanation when the record breaks it, else ``None``. Docstrings cite the fact and state any
tolerance for what real logs do. Rules whose facts only hold for controller-written state are not
applied while a ZooKeeper migration is in progress (ZkMigrationState 1 or 2, rules §5.5),
since the migration copies ZooKeeper's partition state as it is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from kraftspec.reference.metadata_version import (
    LEVELS,
    MV_3_3_IV2,
    MV_3_3_IV3,
    MV_3_6_IV1,
    MV_3_7_IV0,
    MV_3_7_IV2,
    MV_4_3_IV0,
    partition_change_record_version,
    register_broker_record_version,
)
from kraftspec.reference.partition import PartitionRegistration, change_record_is_no_op, merge
from kraftspec.reference.partition_rules import (
    RECOVERING,
    is_valid_isr,
    isr_shrink_requires_leader_epoch_bump,
    reassignment_requires_leader_epoch_bump,
)
from kraftspec.reference.records import NO_LEADER, NO_LEADER_CHANGE
from kraftspec.traces.metalog.image import METADATA_VERSION, Image

MV_3_2_IV0 = LEVELS["3.2-IV0"]
PRE_FEATURE_MV = LEVELS["3.0-IV1"]
"""A log without FeatureLevelRecord predates KIP-778 and runs at 3.0-IV1 (rules §5.6)."""
MIGRATION_STATES = (1, 2)
"""ZkMigrationState values during a migration in either numbering (3.4 swapped 1 and 2; rules §5.5)."""


@dataclass
class History:
    """What the rules remember beyond the image: every broker id's last epoch and incarnation, open transactions."""

    broker_epochs: dict[int, tuple[int, str]] = field(default_factory=dict)
    in_transaction: bool = False
    partition_after: Optional[PartitionRegistration] = None
    """The partition as the Partition(Change)Record under judgment leaves it (set by the audit before the rules)."""


Check = Callable[[Image, History, Any, int], Optional[str]]
RECORD_RULES: dict[int, list[Check]] = {}
"""apiKey -> the rules judging records of that type, in registration order."""
RULE_DOCS: dict[str, str] = {}
"""Every rule name (record, raft and file rules alike) -> its docstring."""


def rule(*api_keys: int) -> Callable[[Check], Check]:
    """Register a record rule for ``api_keys`` under its function name."""
    def register(check: Check) -> Check:
        RULE_DOCS[check.__name__] = (check.__doc__ or "").strip()
        for key in api_keys:
            RECORD_RULES.setdefault(key, []).append(check)
        return check
    return register


def mv_of(image: Image) -> int:
    """The metadata.version in force (3.0-IV1 before any FeatureLevelRecord)."""
    mv = image.metadata_version
    return PRE_FEATURE_MV if mv is None else mv


def migrating(image: Image) -> bool:
    """A ZooKeeper migration is in progress."""
    return image.zk_migration_state in MIGRATION_STATES


def _broker_id(rec: Any) -> int:
    return rec.id if hasattr(rec, "id") else rec.broker_id


def _broker_epoch(rec: Any) -> int:
    return rec.epoch if hasattr(rec, "epoch") else rec.broker_epoch


# ---------------------------------------------------------------------------------------------------
# Broker registrations (rules §1.3, §1.4).

@rule(0)
def broker_epoch_increases(image: Image, history: History, rec: Any, offset: int) -> Optional[str]:
    """rules §1.3: a new incarnation gets a new epoch (the next write offset), larger than any earlier
    epoch of the broker id; re-registering the same incarnation keeps the epoch (an amendment), or, as controllers
    before the amendment did (3.7's ``registerBroker``; a log does not say which wrote it), gets a new, larger one."""
    previous = history.broker_epochs.get(rec.broker_id)
    if previous is None:
        return None
    epoch, incarnation = previous
    if rec.incarnation_id == incarnation:
        if rec.broker_epoch < epoch:
            return f"broker {rec.broker_id} re-registered incarnation {incarnation} with epoch {rec.broker_epoch}, was {epoch}"
        return None
    if rec.broker_epoch <= epoch:
        return f"broker {rec.broker_id} registered with epoch {rec.broker_epoch}, not above its earlier epoch {epoch}"
    return None


@rule(0)
def broker_epoch_not_after_record(image: Image, history: History, rec: Any, offset: int) -> Optional[str]:
    """rules §1.3: the epoch is the offset of the operation's first record, so it is at most the
    RegisterBrokerRecord's own offset (it is smaller when cleanup records come first, or for a re-registration)."""
    if rec.broker_epoch > offset:
        return f"broker {rec.broker_id} epoch {rec.broker_epoch} is after the record's offset {offset}"
    return None


@rule(0)
def new_registration_fenced(image: Image, history: History, rec: Any, offset: int) -> Optional[str]:
    """rules §1.3: a new incarnation is registered fenced and not in controlled shutdown; re-registering
    the same incarnation at its epoch (an amendment) copies both flags from the current registration, and at a new
    epoch (controllers before the amendment) is a registration like a new incarnation's."""
    current = image.brokers.get(rec.broker_id)
    if current is not None and current.incarnation_id == rec.incarnation_id and current.epoch == rec.broker_epoch:
        if (rec.fenced, rec.in_controlled_shutdown) != (current.fenced, current.in_controlled_shutdown):
            return (f"broker {rec.broker_id} re-registration changed fenced/ICS from "
                    f"{current.fenced}/{current.in_controlled_shutdown} to {rec.fenced}/{rec.in_controlled_shutdown}")
        return None
    if not rec.fenced or rec.in_controlled_shutdown:
        return f"broker {rec.broker_id} new incarnation registered with fenced={rec.fenced}, ICS={rec.in_controlled_shutdown}"
    return None


@rule(1, 7, 8, 17)
def broker_change_matches_epoch(image: Image, history: History, rec: Any, offset: int) -> Optional[str]:
    """rules §1.4: fence, unfence, change and unregister records name a registered broker and its
    current epoch (Kafka's replay throws otherwise)."""
    broker_id, epoch = _broker_id(rec), _broker_epoch(rec)
    current = image.brokers.get(broker_id)
    if current is None:
        return f"broker {broker_id} is not registered"
    if current.epoch != epoch:
        return f"broker {broker_id} has epoch {current.epoch}, the record says {epoch}"
    return None


@rule(17)
def broker_change_values(image: Image, history: History, rec: Any, offset: int) -> Optional[str]:
    """rules §1.4: ``Fenced`` is 1, 0 or −1 and ``InControlledShutdown`` is 0 or 1 (no "leave ICS")."""
    if rec.fenced not in (-1, 0, 1) or rec.in_controlled_shutdown not in (0, 1):
        return f"broker {rec.broker_id} change has fenced={rec.fenced}, in_controlled_shutdown={rec.in_controlled_shutdown}"
    return None


@rule(7, 8, 17)
def fencing_record_for_mv(image: Image, history: History, rec: Any, offset: int) -> Optional[str]:
    """rules §5.5–5.6: FenceBrokerRecord/UnfenceBrokerRecord are written only below 3.3-IV2, from which
    BrokerRegistrationChangeRecord replaces them."""
    mv = mv_of(image)
    if hasattr(rec, "id") and mv >= MV_3_3_IV2:
        return f"{type(rec).__name__} written at metadata.version {mv} (only below 3.3-IV2)"
    if not hasattr(rec, "id") and mv < MV_3_3_IV2:
        return f"BrokerRegistrationChangeRecord written at metadata.version {mv} (from 3.3-IV2 only)"
    return None


@rule(17)
def broker_change_fields_for_mv(image: Image, history: History, rec: Any, offset: int) -> Optional[str]:
    """rules §5.5–5.6: controlled shutdown needs 3.3-IV3, log directories 3.7-IV2, cordoned directories 4.3-IV0."""
    mv = mv_of(image)
    for present, needed, what in ((rec.in_controlled_shutdown != 0, MV_3_3_IV3, "InControlledShutdown"),
                                  (bool(rec.log_dirs), MV_3_7_IV2, "LogDirs"),
                                  (rec.cordoned_log_dirs is not None, MV_4_3_IV0, "CordonedLogDirs")):
        if present and mv < needed:
            return f"{what} set at metadata.version {mv} (needs level {needed})"
    return None


@rule(7, 17)
def fenced_broker_leads_nothing(image: Image, history: History, rec: Any, offset: int) -> Optional[str]:
    """rules §2.9: fencing writes the PartitionChangeRecords moving leadership away first, then the fence
    record, so a broker being fenced leads no partition."""
    if not hasattr(rec, "id") and rec.fenced != 1:
        return None
    broker_id = _broker_id(rec)
    led = image.partitions.led_by(broker_id)  # indexed by leader: not a scan of every partition
    if led:
        return f"broker {broker_id} fenced while still leading {len(led)} partition(s), e.g. {led[0]}"
    return None


@rule(0, 3, 5)
def record_version_for_mv(image: Image, history: History, rec: Any, offset: int) -> Optional[str]:
    """rules §5.5 "Record versions the controller writes": RegisterBrokerRecord per
    ``registerBrokerRecordVersion`` (0 below 3.3-IV3), Partition(Change)Record per ``partitionChangeRecordVersion``."""
    mv = mv_of(image)
    if rec.API_KEY == 0:
        expected = register_broker_record_version(mv) if mv >= MV_3_3_IV3 else 0
    else:
        expected = partition_change_record_version(mv)
    if rec.version != expected:
        return f"{type(rec).__name__} v{rec.version} at metadata.version {mv}, the controller writes v{expected}"
    return None


@rule(27)
def controller_registration_for_mv(image: Image, history: History, rec: Any, offset: int) -> Optional[str]:
    """rules §5.5: RegisterControllerRecord (KIP-919) needs metadata.version ≥ 3.7-IV0."""
    mv = mv_of(image)
    if mv < MV_3_7_IV0:
        return f"controller {rec.controller_id} registered at metadata.version {mv} (needs 3.7-IV0)"
    return None


# ---------------------------------------------------------------------------------------------------
# Features and transactions (rules §5.5–5.7).

@rule(12)
def metadata_version_valid(image: Image, history: History, rec: Any, offset: int) -> Optional[str]:
    """rules §5.5–5.6: metadata.version is a defined level and is never removed (level 0)."""
    if rec.name == METADATA_VERSION and rec.feature_level not in LEVELS.values():
        return f"metadata.version set to undefined level {rec.feature_level}"
    return None


@rule(23, 24, 25)
def transaction_nesting(image: Image, history: History, rec: Any, offset: int) -> Optional[str]:
    """rules §5.5: Begin/End/AbortTransactionRecord bracket a metadata transaction; they do not nest."""
    begin = "name" in rec
    if begin and history.in_transaction:
        return "BeginTransactionRecord inside an open transaction"
    if not begin and not history.in_transaction:
        return "transaction end marker without a BeginTransactionRecord"
    return None


@rule(23, 24, 25)
def transactions_for_mv(image: Image, history: History, rec: Any, offset: int) -> Optional[str]:
    """rules §5.5: metadata transactions need metadata.version ≥ 3.6-IV1. Tolerance: the bootstrap
    transaction opens before its own FeatureLevelRecord, so records before any metadata.version pass."""
    mv = image.metadata_version
    if mv is not None and mv < MV_3_6_IV1:
        return f"transaction record at metadata.version {mv} (needs 3.6-IV1)"
    return None


# ---------------------------------------------------------------------------------------------------
# Topics and partitions (rules §2).

@rule(2)
def topic_unique(image: Image, history: History, rec: Any, offset: int) -> Optional[str]:
    """rules §5.7: a TopicRecord creates a topic; its id and name are not already in use."""
    if rec.topic_id in image.topics:
        return f"topic id {rec.topic_id} already exists (as {image.topics[rec.topic_id]!r})"
    if image.topic_id_by_name(rec.name) is not None:
        return f"topic name {rec.name!r} already exists"
    return None


@rule(3, 5, 9)
def partition_topic_exists(image: Image, history: History, rec: Any, offset: int) -> Optional[str]:
    """rules §5.7: partition records and RemoveTopicRecord refer to an existing topic; a
    PartitionChangeRecord to an existing partition."""
    if rec.topic_id not in image.topics:
        return f"topic {rec.topic_id} does not exist"
    if rec.API_KEY == 5 and (rec.topic_id, rec.partition_id) not in image.partitions:
        return f"partition {rec.partition_id} of topic {image.topics[rec.topic_id]!r} does not exist"
    return None


@rule(3)
def partition_record_is_new(image: Image, history: History, rec: Any, offset: int) -> Optional[str]:
    """rules §2.1: PartitionRecord is written when a partition is created; later changes are
    PartitionChangeRecords. Not applied during a ZooKeeper migration."""
    if not migrating(image) and (rec.topic_id, rec.partition_id) in image.partitions:
        return f"PartitionRecord for existing partition {rec.partition_id} of {image.topics.get(rec.topic_id)!r}"
    return None


@rule(3)
def partition_created_at_epoch_zero(image: Image, history: History, rec: Any, offset: int) -> Optional[str]:
    """rules §2.1: at creation leaderEpoch = partitionEpoch = 0, RECOVERED, leader = isr[0]. Not applied
    during a ZooKeeper migration."""
    if migrating(image) or (rec.topic_id, rec.partition_id) in image.partitions:
        return None
    if (rec.leader_epoch, rec.partition_epoch, rec.leader_recovery_state) != (0, 0, 0):
        return (f"partition created with leader epoch {rec.leader_epoch}, partition epoch {rec.partition_epoch}, "
                f"recovery state {rec.leader_recovery_state} (expected 0, 0, 0)")
    if rec.isr and rec.leader != rec.isr[0]:
        return f"partition created with leader {rec.leader}, not the first ISR member {rec.isr[0]}"
    return None


def partition_after(image: Image, rec: Any) -> Optional[PartitionRegistration]:
    """The partition a PartitionRecord creates or a PartitionChangeRecord merges into (None: unknown partition)."""
    if rec.API_KEY == 3:
        return PartitionRegistration.from_record(rec)
    current = image.partitions.get((rec.topic_id, rec.partition_id))
    return None if current is None else merge(current, rec)


@rule(3, 5)
def replicas_valid(image: Image, history: History, rec: Any, offset: int) -> Optional[str]:
    """rules §2.1, §2.6: replicas are distinct non-negative broker ids with one directory each."""
    after = history.partition_after
    if after is None:
        return None
    if len(set(after.replicas)) != len(after.replicas) or any(r < 0 for r in after.replicas):
        return f"replicas {after.replicas} have duplicates or negative ids"
    if len(after.directories) != len(after.replicas):
        return f"{len(after.directories)} directories for {len(after.replicas)} replicas"
    return None


@rule(3, 5)
def isr_valid(image: Image, history: History, rec: Any, offset: int) -> Optional[str]:
    """rules §2.6 ``Replicas.validateIsr``: ISR ⊆ replicas, no duplicates, no negative ids."""
    after = history.partition_after
    if after is not None and not is_valid_isr(after.isr, after.replicas):
        return f"ISR {after.isr} is not a duplicate-free subset of replicas {after.replicas}"
    return None


@rule(3, 5)
def leader_in_isr(image: Image, history: History, rec: Any, offset: int) -> Optional[str]:
    """rules §2.6: after a controller change the leader is in the ISR, or there is no leader (−1)."""
    after = history.partition_after
    if after is not None and after.leader != NO_LEADER and after.leader not in after.isr:
        return f"leader {after.leader} is not in ISR {after.isr}"
    return None


@rule(5)
def partition_change_values(image: Image, history: History, rec: Any, offset: int) -> Optional[str]:
    """rules §2.1: Leader is −2 (no change), −1 or a broker id; LeaderRecoveryState is −1, 0 or 1."""
    if rec.leader < NO_LEADER_CHANGE or rec.leader_recovery_state not in (-1, 0, 1):
        return f"leader {rec.leader}, leader recovery state {rec.leader_recovery_state}"
    return None


@rule(5)
def partition_change_not_empty(image: Image, history: History, rec: Any, offset: int) -> Optional[str]:
    """rules §2.3 step 11: the controller writes no PartitionChangeRecord that changes nothing."""
    if change_record_is_no_op(rec):
        return f"PartitionChangeRecord for partition {rec.partition_id} changes nothing"
    return None


def _inactive(image: Image, broker: int) -> Optional[str]:
    registration = image.brokers.get(broker)
    if registration is None:
        return "not registered"
    if registration.fenced:
        return "fenced"
    if registration.in_controlled_shutdown:
        return "in controlled shutdown"
    return None


@rule(3, 5)
def new_leader_active(image: Image, history: History, rec: Any, offset: int) -> Optional[str]:
    """rules §2.1, §2.4: a newly chosen leader is registered, unfenced and not in controlled shutdown
    (unfencing writes its BrokerRegistrationChangeRecord before the elections, §2.9). Re-setting the current
    leader (epoch bump) is not an election. Not applied during a ZooKeeper migration."""
    if migrating(image) or rec.leader < 0:
        return None
    if rec.API_KEY == 5:
        current = image.partitions.get((rec.topic_id, rec.partition_id))
        if current is None or current.leader == rec.leader:
            return None
    problem = _inactive(image, rec.leader)
    if problem is not None:
        return f"broker {rec.leader} made leader while {problem}"
    return None


@rule(3, 5)
def isr_additions_active(image: Image, history: History, rec: Any, offset: int) -> Optional[str]:
    """rules §2.1 (creation ISR = active replicas) and §2.10 step 11 (INELIGIBLE_REPLICA): a broker
    joining the ISR is registered, unfenced and not in controlled shutdown. Not applied during a ZooKeeper migration."""
    if migrating(image) or rec.isr is None:
        return None
    current = image.partitions.get((rec.topic_id, rec.partition_id)) if rec.API_KEY == 5 else None
    old = () if current is None else current.isr
    for broker in rec.isr:
        if broker not in old:
            problem = _inactive(image, broker)
            if problem is not None:
                return f"broker {broker} added to ISR {rec.isr} while {problem}" + _explained_by_version(image, problem)
    return None


def _explained_by_version(image: Image, problem: str) -> str:
    """A fenced broker taken into an ISR by a log without metadata.version (Kafka 3.0–3.2): KAFKA-13916, fixed in 3.3,
    explains it (issue 20: the finding is real, Kafka's, and of a known version)."""
    if problem == "fenced" and image.metadata_version is None:
        return (" (a log without metadata.version, written by Kafka 3.0–3.2: AlterPartition let a fenced replica into "
                "the ISR until KAFKA-13916, fixed in 3.3)")
    return ""


@rule(5)
def leader_epoch_bump_on_isr_shrink(image: Image, history: History, rec: Any, offset: int) -> Optional[str]:
    """rules §2.3 step 7, §2.5: below metadata.version 3.6-IV0 an ISR shrink bumps the leader epoch, so the
    record sets Leader (≠ −2)."""
    current = image.partitions.get((rec.topic_id, rec.partition_id))
    if current is None or rec.isr is None or rec.leader != NO_LEADER_CHANGE:
        return None
    if isr_shrink_requires_leader_epoch_bump(mv_of(image), rec.isr, current.isr):
        return f"ISR shrank from {current.isr} to {rec.isr} at metadata.version {mv_of(image)} without a leader epoch bump"
    return None


@rule(5)
def leader_epoch_bump_on_replica_removal(image: Image, history: History, rec: Any, offset: int) -> Optional[str]:
    """rules §2.3 step 4, §2.5: a replica set that drops a current replica bumps the leader epoch
    (Leader ≠ −2)."""
    current = image.partitions.get((rec.topic_id, rec.partition_id))
    if current is None or rec.replicas is None or rec.leader != NO_LEADER_CHANGE:
        return None
    if reassignment_requires_leader_epoch_bump(rec.replicas, current.replicas):
        return f"replicas went from {current.replicas} to {rec.replicas} without a leader epoch bump"
    return None


@rule(5)
def isr_not_empty_without_elr(image: Image, history: History, rec: Any, offset: int) -> Optional[str]:
    """rules §2.3 step 6, §2.6: without ELR (eligible.leader.replicas.version < 1) the ISR never becomes empty."""
    if rec.isr == () and not image.elr_enabled:
        return "ISR set to empty while ELR is disabled"
    return None


@rule(5)
def unclean_leader_recovering(image: Image, history: History, rec: Any, offset: int) -> Optional[str]:
    """rules §2.3 step 3, §2.6: a leader from outside the ISR and ELR is an unclean election: ISR = [leader]
    and the partition is RECOVERING. Tolerance: an adding replica may lead when a reassignment completes in the same
    record (§2.3 step 1). Leader recovery exists from metadata.version 3.2-IV0 (rules §5.6)."""
    current = image.partitions.get((rec.topic_id, rec.partition_id))
    if current is None or rec.leader < 0 or mv_of(image) < MV_3_2_IV0:
        return None
    if rec.leader in current.isr or rec.leader in current.elr or rec.leader in current.adding_replicas:
        return None
    after = history.partition_after
    if after is not None and (after.isr != (rec.leader,) or after.leader_recovery_state != RECOVERING):
        return (f"leader {rec.leader} from outside ISR {current.isr} and ELR {current.elr} left ISR {after.isr}, "
                f"recovery state {after.leader_recovery_state}")
    return None
