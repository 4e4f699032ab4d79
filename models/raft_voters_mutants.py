"""Deliberately wrong variants of the dynamic-voter rules (rules §3.14) and the layers expected to catch each one.

Each replacement keeps the signature of its target in ``kraftspec.reference``; ``tests/test_raft_voters_mutants.py``
applies each one and checks that every layer in ``caught_by`` fails: ``scenario`` (``test_raft_voters_scenarios.py``),
``audit`` (the crafted kraft.version 1 logs of ``test_metalog_voters.py``), ``agree`` (``kraftspec agree voters``: the
reference's state graph against ``spec/KRaftVoters.tla``'s) and ``kafka`` (Kafka's own ``VoterSet`` and
``VoterSetHistory`` through the harness, ``test_kafka_voters.py``); for the Raft client's own rules, ``client`` (the
``KafkaRaftClientReconfigTest`` cases of ``test_raft_reconfig_client_scenarios.py``) and ``model``
(``models/raft_reconfig.py``'s simulated quorum under voter changes).
"""

from __future__ import annotations

from typing import Optional

from kraftspec.mutants import Mutant
from kraftspec.reference.raft_state import Leader, ReplicaKey
from kraftspec.reference.raft_voter_history import LogHistory
from kraftspec.reference.raft_voters import KRaftVersionRecord, VoterNode, VoterSet, VotersRecord, voter_keys


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


def _committed_at_its_own_offset(high_watermark: Optional[int], last_offset: int) -> bool:
    """Counts a VotersRecord committed once the high watermark reaches its offset (the high watermark is exclusive)."""
    return high_watermark is not None and high_watermark >= last_offset


def _no_bootstrap_records(voters_at_epoch_start: VoterSet, voters_offset_at_epoch_start: Optional[int],
                          kraft_version_at_epoch_start: int,
                          local: VoterNode) -> tuple[KRaftVersionRecord | VotersRecord, ...]:
    """A new leader never copies the bootstrap checkpoint's voter set into the log."""
    return ()


def _majority_of_the_epoch_start(leader: Leader, voters: frozenset[int]) -> Leader:
    """The leader keeps the replica states of its epoch's voters: its majorities ignore a voter change until the next
    election (a removed leader still counts itself, an added voter is not counted)."""
    return leader


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
           ("client", "model")),
]
