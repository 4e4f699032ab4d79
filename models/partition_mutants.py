"""Deliberately wrong variants of the partition rules, and the layers expected to catch each.

Layers: ``scenario`` (tests/test_partition_scenarios.py and tests/test_partition_leader.py), ``model``
(models/partition.py: the random search and its replayed RACES), ``crosshair`` (proofs/partition.py), ``agree`` (spec/PartitionLeadership.tla via
``kraftspec agree partition``), ``kafka`` (the differential machine of ``kraftspec.differential_partition`` against
Apache Kafka's own controller code, ``kraftspec.harness``). ``tests/test_partition_mutants.py``
applies each one and checks that every named layer fails.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from kraftspec.mutants import Mutant
from kraftspec.reference import partition_events
from kraftspec.reference.errors import Errors
from kraftspec.reference.partition_rules import KAFKA_4_3, PartitionBehaviour
from kraftspec.reference.records import NO_LEADER, PartitionChangeRecord


def acceptable_even_if_fenced(
    replica: int, registered: bool, active: bool, directory_online: bool, broker_to_remove: int, broker_to_add: int,
    unclean_shutdown_broker: int,
) -> bool:
    """Wrong: a fenced (or shutting-down) replica is acceptable as leader."""
    if replica == broker_to_remove or replica == unclean_shutdown_broker:
        return False
    return registered and directory_online


def epochs_ignoring_stale_partition_epoch(
    requester: int, request_leader_epoch: int, request_partition_epoch: int, leader: int, leader_epoch: int,
    partition_epoch: int,
) -> Errors:
    """Wrong: an AlterPartition built on an older partition epoch is accepted."""
    if request_leader_epoch > leader_epoch or request_partition_epoch > partition_epoch:
        return Errors.NOT_CONTROLLER
    if request_leader_epoch < leader_epoch:
        return Errors.FENCED_LEADER_EPOCH
    if requester != leader:
        return Errors.INVALID_REQUEST
    return Errors.NONE


def every_replica_bounds_hw(in_maximal_isr: bool, caught_up: bool, isr_eligible: bool) -> bool:
    """Wrong: the HW is the minimum LEO over all replicas, not over the (maximal) ISR."""
    return True


def bump_on_shrink_at_every_mv(metadata_version: int, new_isr: tuple[int, ...], current_isr: tuple[int, ...]) -> bool:
    """Wrong: an ISR shrink bumps the leader epoch at every MV (Kafka stopped at 3.6-IV0, KAFKA-15021)."""
    return any(r not in new_isr for r in current_isr)


def isr_may_become_empty(target_isr: tuple[int, ...], current_isr: tuple[int, ...],
                         elr_enabled: bool) -> Optional[tuple[int, ...]]:
    """Wrong: the ISR may become empty even without ELR."""
    return target_isr if target_isr != current_isr else None


def any_epoch_eligible(fenced: bool, in_controlled_shutdown: bool, requested_epoch: int, registered_epoch: int) -> bool:
    """Wrong: a replica named with the broker epoch of an earlier incarnation joins the ISR (KIP-903)."""
    return not fenced and not in_controlled_shutdown


def unregister_drops_elr(
    brokers: Any, topics: Any, partitions: Any, broker_id: int, *, metadata_version: int, elr_enabled: bool,
    behaviour: PartitionBehaviour = KAFKA_4_3, order: Sequence[Any] = (),
) -> tuple[PartitionChangeRecord, ...]:
    """Wrong (the reference before Kafka 4.3 judged it): unregistering a broker also drops it from every ELR, as an
    unclean shutdown would; Kafka's ``handleBrokerUnregistered`` only removes it as ``brokerToRemove``."""
    in_isr = partition_events.generate_leader_and_isr_updates(
        brokers, topics, partitions, partition_events._visit(partitions, lambda p: broker_id in p.isr, order),
        broker_to_remove=broker_id, broker_to_add=NO_LEADER, unclean_shutdown_broker=NO_LEADER,
        metadata_version=metadata_version, elr_enabled=elr_enabled, behaviour=behaviour)
    in_elr = partition_events.generate_leader_and_isr_updates(
        brokers, topics, partitions, partition_events._visit(partitions, lambda p: broker_id in p.elr, order),
        broker_to_remove=broker_id, broker_to_add=NO_LEADER, unclean_shutdown_broker=broker_id,
        metadata_version=metadata_version, elr_enabled=elr_enabled, behaviour=behaviour)
    return in_isr + in_elr


RULES = "kraftspec.reference.partition_rules"

MUTANTS: list[Mutant] = [
    Mutant("partition-elect-fenced-replica", "partition", "a fenced replica is acceptable as leader",
           f"{RULES}:is_acceptable_leader", acceptable_even_if_fenced, ("scenario", "model", "crosshair", "kafka")),
    Mutant("partition-accept-stale-partition-epoch", "partition",
           "AlterPartition with a stale partition epoch accepted",
           f"{RULES}:alter_partition_epoch_error", epochs_ignoring_stale_partition_epoch,
           ("scenario", "model", "crosshair", "agree", "kafka")),
    Mutant("partition-hw-over-all-replicas", "partition", "HW computed over all replicas instead of the ISR",
           f"{RULES}:is_hw_candidate", every_replica_bounds_hw, ("scenario", "crosshair", "agree", "kafka")),
    Mutant("partition-leader-epoch-bump-on-shrink", "partition", "leader epoch bumped on ISR shrink from MV 3.6-IV0 on",
           f"{RULES}:isr_shrink_requires_leader_epoch_bump", bump_on_shrink_at_every_mv,
           ("scenario", "crosshair", "agree", "kafka")),
    Mutant("partition-empty-isr-without-elr", "partition", "the ISR becomes empty without ELR",
           f"{RULES}:isr_record_field", isr_may_become_empty, ("scenario", "model", "crosshair", "agree", "kafka")),
    Mutant("partition-rejoin-with-old-broker-epoch", "partition",
           "a replica restarted with a new broker epoch rejoins the ISR on its old fetch state",
           f"{RULES}:is_isr_member_eligible", any_epoch_eligible, ("scenario", "model", "crosshair", "agree", "kafka")),
    Mutant("partition-unregister-drops-elr", "partition",
           "unregistering a broker drops it from every ELR (Kafka keeps it there)",
           "kraftspec.reference.partition_events:handle_broker_unregistered", unregister_drops_elr, ("kafka",)),
]
