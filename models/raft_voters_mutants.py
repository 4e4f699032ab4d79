"""Deliberately wrong variants of the dynamic-voter rules (rules §3.14) and the layers expected to catch each one.

Each replacement keeps the signature of its target in ``kraftspec.reference``; ``tests/test_raft_voters_mutants.py``
applies each one and checks that every layer in ``caught_by`` fails: ``scenario`` (``test_raft_voters_scenarios.py``),
``audit`` (the crafted kraft.version 1 logs of ``test_metalog_voters.py``), ``agree`` (``kraftspec agree voters``: the
reference's state graph against ``spec/KRaftVoters.tla``'s, with snapshots under ``KRaftVoters.snapshots.cfg``; for
the auto-join rules ``kraftspec agree autojoin`` against ``spec/KRaftAutoJoin.tla``'s) and ``kafka`` (Kafka's own
``VoterSet`` and ``VoterSetHistory`` through the harness, ``test_kafka_voters.py``); for the Raft client's own rules,
``client`` (the ``KafkaRaftClientReconfigTest`` cases of ``test_raft_reconfig_client_scenarios.py`` and the snapshot
fetches of ``test_raft_snapshot_fetch_scenarios.py``), ``replay`` (a ``--dynamic``
simulated raft trace recorded under the mutant, replayed by the reference, ``test_traces_raft_dynamic.py``) and ``model``
(``models/raft_reconfig.py``'s simulated quorum under voter changes, then ``models/raft_upgrade.py``'s kraft.version 0
quorum upgraded to 1); ``crosshair`` (``kraftspec.proofs.raft``'s contracts on the auto-join and snapshot-loading rules).
"""

from __future__ import annotations

from typing import Optional

from kraftspec.mutants import Mutant
from kraftspec.reference.raft_reconfig import KRaftUpgrade
from kraftspec.reference.raft_state import Leader, ReplicaKey
from kraftspec.reference.raft_voter_history import STARTING_NEXT_OFFSET, LogHistory
from kraftspec.reference.raft_voters import KRaftVersionRecord, VoterNode, VoterSet, VotersRecord, to_voters_record, \
    voter_keys


def _two_changes_at_once(this: VoterSet, that: VoterSet) -> bool:
    """Counts two voters added or removed as still sharing a majority (KIP-853 allows one change at a time)."""
    this_keys, that_keys = voter_keys(this), voter_keys(that)
    return len(this_keys - that_keys) <= 2 and len(that_keys - this_keys) <= 2


def _remove_last_voter(voters: VoterSet, key: ReplicaKey) -> Optional[VoterSet]:
    """Removes a voter even when it is the only one, leaving an empty voter set."""
    node = voters.voters.get(key.id)
    if node is not None and node.voter_key == key:
        return VoterSet(voters=voters.voters.remove(key.id))
    return None


def _truncation_keeps_the_end_offset(history: LogHistory, end_offset: int) -> LogHistory:
    """Truncating the log to ``end_offset`` keeps the voter set written at ``end_offset`` itself (an off-by-one)."""
    return LogHistory(entries=tuple(e for e in history.entries if e[0] <= end_offset))


def _trim_forgets_the_voter_set(history: LogHistory, start_offset: int) -> LogHistory:
    """Trimming the history to a new snapshot drops every entry at or before its end, the one in force there too: a
    deleted prefix takes the voter set and kraft.version with it."""
    return LogHistory(entries=tuple(e for e in history.entries if e[0] > start_offset))


def _committed_at_its_own_offset(high_watermark: Optional[int], last_offset: int) -> bool:
    """Counts a VotersRecord committed once the high watermark reaches its offset (the high watermark is exclusive)."""
    return high_watermark is not None and high_watermark >= last_offset


def _no_bootstrap_records(voters_at_epoch_start: VoterSet, voters_offset_at_epoch_start: Optional[int],
                          kraft_version_at_epoch_start: int,
                          local: VoterNode) -> tuple[KRaftVersionRecord | VotersRecord, ...]:
    """A new leader never copies the bootstrap checkpoint's voter set into the log."""
    return ()


def _snapshot_loaded_only_at_start(next_offset: int, log_start_offset: int) -> bool:
    """Loads a snapshot's control records only before anything was read: a snapshot fetched from the leader replaces
    the log, but the follower keeps the voters it had (the loaded snapshot's voters ignored)."""
    return next_offset == STARTING_NEXT_OFFSET


def _majority_of_the_epoch_start(leader: Leader, voters: frozenset[ReplicaKey]) -> Leader:
    """The leader keeps the replica states of its epoch's voters: its majorities ignore a voter change until the next
    election (a removed leader still counts itself, an added voter is not counted)."""
    return leader


def _upgrade_without_every_voter(leader_epoch: int, requested_kraft_version: Optional[int],
                                 volatile_voters: Optional[VoterSet], epoch: int, new_version: int,
                                 persisted_version: int, persisted_voters: VoterSet,
                                 validate_only: bool) -> KRaftUpgrade:
    """Upgrades as soon as asked, without waiting for each voter's UpdateRaftVoter: the voter set written may hold
    voters without directory id that cannot run kraft.version 1."""
    if epoch != leader_epoch or volatile_voters is None or new_version in (requested_kraft_version, persisted_version):
        return KRaftUpgrade(upgraded=False)
    if validate_only:
        return KRaftUpgrade(upgraded=True)
    return KRaftUpgrade(upgraded=True, records=(KRaftVersionRecord(kraft_version=new_version),
                                                to_voters_record(volatile_voters)))


def _static_nodes_read_no_control_records(record: object) -> bool:
    """A node with static voters never takes a record for a control record: an upgrade it writes or fetches leaves it
    at kraft.version 0 with its configured voters."""
    return False


def _auto_join_at_kraft_version0(reconfig_supported: bool, can_become_voter: bool, auto_join: bool,
                                 update_period_expired: bool) -> bool:
    """Auto-joins whatever the kraft.version: a kraft.version 0 observer asks a leader whose voters are static."""
    return can_become_voter and auto_join and update_period_expired


def _auto_join_without_controller_role(reconfig_supported: bool, can_become_voter: bool, auto_join: bool,
                                       update_period_expired: bool) -> bool:
    """Any observer configured with auto-join asks to join, a broker (``canBecomeVoter`` false) too."""
    return reconfig_supported and auto_join and update_period_expired


def _never_removes_old_directory(local_id_in_voters: bool) -> bool:
    """An observer whose id a voter holds under an old directory asks to be added all the same (DUPLICATE_VOTER)."""
    return False


MUTANTS: list[Mutant] = [
    Mutant("voters_two_changes_at_once", "voters",
           "lets consecutive voter sets differ by two voters (majorities counted over sets that may not overlap)",
           "kraftspec.reference.raft_voters:has_overlapping_majority", _two_changes_at_once,
           ("scenario", "audit", "kafka")),
    Mutant("voters_remove_last_voter", "voters",
           "removes the only voter, emptying the voter set",
           "kraftspec.reference.raft_voters:remove_voter", _remove_last_voter,
           ("scenario", "client", "kafka", "agree")),
    Mutant("voters_truncation_keeps_end_offset", "voters",
           "a log truncated to offset e keeps the voter set written at e, which the truncation removed",
           "kraftspec.reference.raft_voter_history:truncate_new_entries", _truncation_keeps_the_end_offset,
           ("scenario", "client", "agree", "kafka")),
    Mutant("voters_trim_forgets_voter_set", "voters",
           "a snapshot's trim of the history drops the voter set and kraft.version in force at its end",
           "kraftspec.reference.raft_voter_history:truncate_old_entries", _trim_forgets_the_voter_set,
           ("scenario", "client", "agree")),
    Mutant("voters_committed_at_own_offset", "voters",
           "completes a voter change when the high watermark reaches its VotersRecord's offset, before it commits",
           "kraftspec.reference.raft_reconfig:voter_change_committed", _committed_at_its_own_offset,
           ("scenario", "client", "agree")),
    Mutant("voters_no_bootstrap_records", "voters",
           "a kraft.version 1 leader's first batch lacks the KRaftVersionRecord and VotersRecord of the bootstrap set",
           "kraftspec.reference.raft_reconfig:start_of_epoch_control_records", _no_bootstrap_records,
           ("scenario", "client", "agree")),
    Mutant("voters_majority_of_epoch_start", "voters",
           "the leader's high watermark and check quorum count the voters of its epoch start, not the set in force",
           "kraftspec.reference.raft_leader:update_voter_and_observer_states", _majority_of_the_epoch_start,
           ("client", "model", "replay")),
    Mutant("voters_upgrade_without_every_voter", "voters",
           "the kraft.version 0 -> 1 upgrade writes the in-memory voters before every voter has sent UpdateRaftVoter",
           "kraftspec.reference.raft_reconfig:maybe_append_upgraded_kraft_version", _upgrade_without_every_voter,
           ("client", "model", "agree")),
    Mutant("voters_upgrade_not_read", "voters",
           "nodes with static voters never read the upgrade's KRaftVersionRecord and VotersRecord: they stay at "
           "kraft.version 0", "kraftspec.reference.raft_voter_history:is_control_record",
           _static_nodes_read_no_control_records, ("client", "model")),
    Mutant("voters_auto_join_without_controller_role", "voters",
           "an observer that cannot become a voter (a broker) with controller.quorum.auto.join.enable asks to join",
           "kraftspec.reference.raft_rules:should_send_add_or_remove_voter_request", _auto_join_without_controller_role,
           ("client", "model", "crosshair", "agree"), agree_component="autojoin"),
    Mutant("voters_auto_join_at_kraft_version0", "voters",
           "an auto-joining observer asks to join under kraft.version 0, whose voters are static",
           "kraftspec.reference.raft_rules:should_send_add_or_remove_voter_request", _auto_join_at_kraft_version0,
           ("client", "crosshair", "agree"), agree_component="autojoin"),
    Mutant("voters_auto_join_keeps_old_directory", "voters",
           "an auto-joining observer whose id is a voter's under an old directory never asks to remove that voter",
           "kraftspec.reference.raft_rules:auto_join_removes_old_voter", _never_removes_old_directory,
           ("client", "crosshair", "agree"), agree_component="autojoin"),
    Mutant("voters_fetched_snapshot_ignored", "voters",
           "a follower that loads a snapshot fetched from its leader keeps its voters instead of the snapshot's",
           "kraftspec.reference.raft_voter_history:snapshot_load_needed", _snapshot_loaded_only_at_start,
           ("client", "model", "crosshair", "agree")),
]
