"""CrossHair contracts on the partition rules (rules §2); each post-condition is a fact, not the code.

Run: ``kraftspec prove partition`` or
``python -m crosshair check --analysis_kind=PEP316 --per_condition_timeout=5 kraftspec.proofs.partition``.
Replica lists are bounded to small tuples of small ids so that the analysis finishes.
"""

from __future__ import annotations

from typing import Optional

from kraftspec.reference import partition_rules


def implies(a: bool, b: bool) -> bool:
    """Logical implication, for the post-conditions below."""
    return (not a) or b


def is_acceptable_leader(
    replica: int, registered: bool, active: bool, directory_online: bool, broker_to_remove: int, broker_to_add: int,
    unclean_shutdown_broker: int,
) -> bool:
    """A leader is registered with its directory online, never the broker being removed or that shut down
    uncleanly, and active unless it is the broker being unfenced (§2.4, §2.9).

    post: implies(__return__, registered and directory_online)
    post: implies(__return__, replica != broker_to_remove and replica != unclean_shutdown_broker)
    post: implies(__return__ and not active, replica == broker_to_add)
    post: implies(registered and active and directory_online and replica not in (broker_to_remove, unclean_shutdown_broker), __return__)
    """
    return partition_rules.is_acceptable_leader(
        replica, registered, active, directory_online, broker_to_remove, broker_to_add, unclean_shutdown_broker
    )


def elect_leader(
    election_type: int,
    current_leader: int,
    target_replicas: tuple[int, ...],
    target_isr: tuple[int, ...],
    target_elr: tuple[int, ...],
    last_known_elr: tuple[int, ...],
    acceptable_leaders: tuple[int, ...],
    elr_enabled: bool,
) -> tuple[int, bool]:
    """§2.4: a leader is acceptable; a clean one is in the ISR (or in the ELR while the ISR is empty);
    ONLINE/UNCLEAN keep a valid current leader; only UNCLEAN goes outside the ISR/ELR except for the last
    known leader; no leader only when no replica is an acceptable ISR member.

    pre: 0 <= election_type <= 2
    pre: len(target_replicas) <= 2 and len(target_isr) <= 2 and len(target_elr) <= 1 and len(last_known_elr) <= 1
    pre: len(acceptable_leaders) <= 2
    pre: current_leader >= -1 and all(r >= 0 for r in target_replicas + target_isr + target_elr + acceptable_leaders)
    post: implies(__return__[0] != -1, __return__[0] in acceptable_leaders)
    post: implies(__return__[0] != -1 and not __return__[1], __return__[0] in target_isr or (not target_isr and __return__[0] in target_elr))
    post: implies(__return__[1] and __return__[0] not in last_known_elr, election_type == 2)
    post: implies(election_type != 0 and current_leader in acceptable_leaders and current_leader in target_isr, __return__ == (current_leader, False))
    post: implies(__return__[0] == -1, not any(r in acceptable_leaders and r in target_isr for r in target_replicas))
    """
    return partition_rules.elect_leader(
        election_type, current_leader, target_replicas, target_isr, target_elr, last_known_elr, acceptable_leaders,
        elr_enabled, True,
    )


def is_isr_member_eligible(fenced: bool, in_controlled_shutdown: bool, requested_epoch: int,
                           registered_epoch: int) -> bool:
    """KIP-841/903 (§2.10 check 11): an ISR member is eligible exactly when it is unfenced, not shutting down,
    and named with epoch -1 or its registered epoch.

    post: __return__ == (not fenced and not in_controlled_shutdown and requested_epoch in (-1, registered_epoch))
    """
    return partition_rules.is_isr_member_eligible(fenced, in_controlled_shutdown, requested_epoch, registered_epoch)


def alter_partition_epoch_error(
    requester: int, request_leader_epoch: int, request_partition_epoch: int, leader: int, leader_epoch: int,
    partition_epoch: int,
) -> int:
    """§2.10 checks 2–6: a request passes only from the leader at both current epochs; a stale partition epoch
    from the current leader epoch is INVALID_UPDATE_VERSION (95), epochs ahead are NOT_CONTROLLER (41).

    post: (__return__ == 0) == (requester == leader and request_leader_epoch == leader_epoch and request_partition_epoch == partition_epoch)
    post: implies(request_leader_epoch == leader_epoch and request_partition_epoch < partition_epoch and requester == leader, __return__ == 95)
    post: implies(request_leader_epoch > leader_epoch or request_partition_epoch > partition_epoch, __return__ == 41)
    post: implies(request_leader_epoch < leader_epoch and request_partition_epoch <= partition_epoch, __return__ == 74)
    """
    return int(partition_rules.alter_partition_epoch_error(
        requester, request_leader_epoch, request_partition_epoch, leader, leader_epoch, partition_epoch
    ))


def isr_record_field(target_isr: tuple[int, ...], current_isr: tuple[int, ...],
                     elr_enabled: bool) -> Optional[tuple[int, ...]]:
    """§2.3 step 6: without ELR a record never empties the ISR; a changed non-empty target is always written.

    pre: len(target_isr) <= 3 and len(current_isr) <= 3
    post: implies(not elr_enabled, __return__ != ())
    post: implies(__return__ is not None, __return__ == target_isr and target_isr != current_isr)
    post: implies(target_isr != current_isr and len(target_isr) > 0, __return__ == target_isr)
    """
    return partition_rules.isr_record_field(target_isr, current_isr, elr_enabled)


def merged_leader_epoch(leader_epoch: int, record_leader: int) -> int:
    """§2.2: the leader epoch grows by exactly one when the record's leader is not -2, else stays.

    post: __return__ == (leader_epoch if record_leader == -2 else leader_epoch + 1)
    """
    return partition_rules.merged_leader_epoch(leader_epoch, record_leader)


def isr_shrink_requires_leader_epoch_bump(metadata_version: int, new_isr: tuple[int, ...],
                                          current_isr: tuple[int, ...]) -> bool:
    """KAFKA-15021 (§2.3 step 7): from MV 3.6-IV0 (12) on an ISR change alone never bumps the leader epoch;
    before, exactly a shrink (a current member dropped) does.

    pre: len(new_isr) <= 3 and len(current_isr) <= 3
    post: implies(metadata_version >= 12, not __return__)
    post: implies(metadata_version < 12, __return__ == any(r not in new_isr for r in current_isr))
    """
    return partition_rules.isr_shrink_requires_leader_epoch_bump(metadata_version, new_isr, current_isr)


def reassignment_requires_leader_epoch_bump(target_replicas: tuple[int, ...],
                                            current_replicas: tuple[int, ...]) -> bool:
    """§2.5: a replica set that drops a current replica bumps the leader epoch; a superset never does.

    pre: len(target_replicas) <= 3 and len(current_replicas) <= 3
    post: __return__ == (not all(r in target_replicas for r in current_replicas))
    """
    return partition_rules.reassignment_requires_leader_epoch_bump(target_replicas, current_replicas)


def high_watermark(current_hw: int, leader_leo: int, candidate_leos: tuple[int, ...], isr_size: int,
                   min_isr: int) -> int:
    """§2.12: the HW never moves back, never passes the leader's LEO or a candidate's LEO (when it moves), and
    is frozen while the ISR is below the effective min ISR.

    pre: len(candidate_leos) <= 3
    pre: 0 <= current_hw <= leader_leo
    post: __return__ >= current_hw
    post: implies(__return__ > current_hw, __return__ <= leader_leo and all(__return__ <= leo for leo in candidate_leos))
    post: implies(isr_size < min_isr, __return__ == current_hw)
    post: implies(isr_size >= min_isr and all(leo >= leader_leo for leo in candidate_leos), __return__ == leader_leo)
    """
    return partition_rules.high_watermark(current_hw, leader_leo, candidate_leos, isr_size, min_isr)


def is_hw_candidate(in_maximal_isr: bool, caught_up: bool, isr_eligible: bool) -> bool:
    """§2.12: a follower bounds the HW exactly when it is in the maximal ISR, or caught up and ISR-eligible.

    post: __return__ == (in_maximal_isr or (caught_up and isr_eligible))
    """
    return partition_rules.is_hw_candidate(in_maximal_isr, caught_up, isr_eligible)


def is_broker_epoch_isr_eligible(fetched_broker_epoch: int, cached_broker_epoch: int) -> bool:
    """KIP-903 (§2.12): a follower that fetched with a different (older) epoch than the registered one
    cannot join the ISR; -1 (unknown) is accepted, no fetch yet (-2) is not.

    pre: cached_broker_epoch >= 0
    post: __return__ == (fetched_broker_epoch == -1 or fetched_broker_epoch == cached_broker_epoch)
    """
    return partition_rules.is_broker_epoch_isr_eligible(fetched_broker_epoch, cached_broker_epoch)


def complete_reassignment(
    target_isr: tuple[int, ...], target_replicas: tuple[int, ...], removing: tuple[int, ...], adding: tuple[int, ...]
) -> Optional[tuple[tuple[int, ...], tuple[int, ...]]]:
    """§2.3 step 1: a completed reassignment drops every removing replica and has every adding replica in the ISR.

    pre: len(target_isr) <= 2 and len(target_replicas) <= 3 and len(removing) <= 1 and len(adding) <= 1
    pre: all(r in target_replicas for r in target_isr)
    post: implies(__return__ is not None, not any(r in removing for r in __return__[1]))
    post: implies(__return__ is not None, all(r in __return__[0] for r in adding))
    """
    return partition_rules.complete_reassignment(target_isr, target_replicas, removing, adding)
