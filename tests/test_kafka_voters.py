"""Dynamic voters (rules §3.14) against Apache Kafka's own ``VoterSet`` and ``VoterSetHistory`` (the harness's
``voters`` session, Kafka 4.3.1's jars).

Seeded random voter sets, each ``VoterSet`` operation applied by Kafka and by ``reference/raft_voters.py``, and
seeded random histories applied by Kafka's ``VoterSetHistory`` and by ``reference/raft_voter_history.py``; every
answer must be equal. Each failure names its seed and operation; a disagreement is fixed in the reference.
"""

from __future__ import annotations

import random
from typing import Any, Optional

import pytest

import kraftspec.reference.raft_voter_history as vh
import kraftspec.reference.raft_voters as rv
from kraftspec.harness.jvm import DEFAULT_VERSION, shared
from kraftspec.reference.frozen import FrozenMap, evolve
from kraftspec.reference.raft_state import ReplicaKey
from kraftspec.reference.raft_voters import VoterNode, VoterSet, VotersRecord

SEEDS = range(8)
OPERATIONS_PER_SEED = 60
HISTORY_STEPS = 25
DIRECTORIES = ("AAAAAAAAAAAAAAAAAAAAAQ", "AAAAAAAAAAAAAAAAAAAAAg", "AAAAAAAAAAAAAAAAAAAAAw")


def kafka() -> Any:
    process = shared(DEFAULT_VERSION)
    if "voters" not in process.components:
        pytest.fail(f"the harness for Kafka {DEFAULT_VERSION} offers no voters session: {process.components}")
    return process


# --- the reference's values as the session's JSON ---------------------------------------------------------------------

def key_json(key: ReplicaKey) -> dict[str, Any]:
    return {"id": key.id, "directory_id": key.directory_id}


def node_json(node: VoterNode) -> dict[str, Any]:
    return {**key_json(node.voter_key), "listeners": {name: [host, port] for name, (host, port) in
                                                      sorted(node.listeners.items())},
            "supported": list(node.supported_kraft_version)}


def set_json(voters: Optional[VoterSet]) -> Optional[list[dict[str, Any]]]:
    return None if voters is None else [node_json(voters.voters[i]) for i in sorted(voters.voters)]


# --- seeded random values -------------------------------------------------------------------------------------------

def random_key(rng: random.Random) -> ReplicaKey:
    return rv.replica_key(rng.randint(1, 6), rng.choice((None, *DIRECTORIES)))


def random_node(rng: random.Random, key: Optional[ReplicaKey] = None) -> VoterNode:
    key = key or random_key(rng)
    listeners = {"CONTROLLER": (f"c{key.id}", rng.choice((9093, 9094)))}
    if rng.random() < 0.3:
        listeners["OTHER"] = (f"o{key.id}", 9095)
    return VoterNode(voter_key=key, listeners=FrozenMap(listeners),
                     supported_kraft_version=rng.choice(((0, 0), (0, 1), (1, 1))))


def random_set(rng: random.Random) -> VoterSet:
    ids = rng.sample(range(1, 6), rng.randint(1, 5))
    return VoterSet(voters=FrozenMap({i: random_node(rng, rv.replica_key(i, rng.choice((None, *DIRECTORIES))))
                                      for i in ids}))


def nearby(rng: random.Random, voters: VoterSet) -> VoterSet:
    """Another voter set a few adds and removes away (so overlapping majorities come up both ways)."""
    for _ in range(rng.randint(0, 3)):
        changed = rv.add_voter(voters, random_node(rng)) if rng.random() < 0.5 else \
            rv.remove_voter(voters, rng.choice(sorted(rv.voter_keys(voters), key=lambda k: k.id)))
        voters = changed or voters
    return voters


def reference_op(op: str, voters: VoterSet, arg: Any) -> Any:
    """The reference's answer to one ``VoterSet`` operation, in the session's JSON."""
    if op in ("add_voter", "update_voter", "update_voter_ignoring_directory_id", "remove_voter"):
        return set_json(getattr(rv, op)(voters, arg))
    if op == "voter_ids":
        return sorted(rv.voter_ids(voters))
    if op == "from_voters_record":
        return set_json(rv.from_voters_record(VotersRecord(voters=arg)))
    return getattr(rv, op)(voters, arg)


def random_op(rng: random.Random, voters: VoterSet) -> tuple[str, Any, dict[str, Any]]:
    """An operation, its argument for the reference and its fields for the session."""
    op = rng.choice(("add_voter", "update_voter", "update_voter_ignoring_directory_id", "voter_node_needs_update",
                     "remove_voter", "is_voter", "is_only_voter", "has_overlapping_majority", "supports_version",
                     "voter_ids", "from_voters_record"))
    if op in ("add_voter", "update_voter", "update_voter_ignoring_directory_id", "voter_node_needs_update"):
        existing = [voters.voters[i].voter_key for i in sorted(voters.voters)]
        node = random_node(rng, rng.choice(existing) if existing and rng.random() < 0.5 else None)
        return op, node, {"node": node_json(node)}
    if op in ("remove_voter", "is_voter", "is_only_voter"):
        existing = [voters.voters[i].voter_key for i in sorted(voters.voters)]
        key = rng.choice(existing) if rng.random() < 0.5 else random_key(rng)
        return op, key, {"key": key_json(key)}
    if op == "has_overlapping_majority":
        other = nearby(rng, voters)
        return op, other, {"other": set_json(other)}
    if op == "supports_version":
        version = rng.choice((0, 1))
        return op, version, {"version": version}
    if op == "from_voters_record":
        entries = tuple(random_node(rng) for _ in range(rng.randint(1, 4)))  # ids may repeat
        return op, entries, {"voters": [node_json(n) for n in entries]}
    return op, None, {}


@pytest.mark.parametrize("seed", SEEDS)
def test_voter_set_operations_agree_with_kafka(seed: int) -> None:
    rng, process = random.Random(seed), kafka()
    process.open("voters", {"static": []})
    for index in range(OPERATIONS_PER_SEED):
        voters = random_set(rng)
        op, arg, fields = random_op(rng, voters)
        answer = process.step({"action": "voter_set", "op": op, "voters": set_json(voters)
                               if op != "from_voters_record" else fields.pop("voters"), **fields})
        assert "refused" not in answer, f"seed {seed}, operation {index} ({op}): Kafka threw {answer['refused']}"
        expected = reference_op(op, voters, arg)
        assert answer["output"]["result"] == expected, (
            f"seed {seed}, operation {index}: {op} on {set_json(voters)} with {fields}: "
            f"Kafka {answer['output']['result']}, reference {expected}")


def reference_history_step(state: vh.ControlRecordState, op: str, offset: int,
                           voters: VoterSet) -> tuple[vh.ControlRecordState, Any, bool]:
    """The reference's ``VoterSetHistory`` step: (state, answer, refused)."""
    history = state.voter_set_history
    if op == "add_at":
        try:
            return evolve(state, voter_set_history=vh.add_at(history, offset, voters)), None, False
        except ValueError:
            return state, None, True
    if op == "value_at_or_before":
        return state, set_json(vh.value_at_or_before(history, offset)), False
    if op == "last_value":
        return state, set_json(vh.last_voter_set(state)), False
    if op == "last_voter_set_offset":
        entry = vh.last_voter_set_entry(state)
        return state, None if entry is None else entry[0], False
    if op == "truncate_new_entries":
        return evolve(state, voter_set_history=vh.truncate_new_entries(history, offset)), None, False
    if op == "truncate_old_entries":
        return evolve(state, voter_set_history=vh.truncate_old_entries(history, offset)), None, False
    return evolve(state, voter_set_history=vh.EMPTY_HISTORY), None, False  # clear


@pytest.mark.parametrize("seed", SEEDS)
def test_voter_set_history_agrees_with_kafka(seed: int) -> None:
    rng, process = random.Random(1000 + seed), kafka()
    static = random_set(rng) if rng.random() < 0.7 else rv.EMPTY_VOTER_SET
    process.open("voters", {"static": set_json(static)})
    state, last_offset = vh.ControlRecordState(static_voter_set=static), -2
    for index in range(HISTORY_STEPS):
        op = rng.choice(("add_at", "add_at", "add_at", "value_at_or_before", "value_at_or_before", "last_value",
                         "last_voter_set_offset", "truncate_new_entries", "truncate_old_entries", "clear"))
        held = [at for at, _ in state.voter_set_history.entries]
        if op == "add_at" and rng.random() < 0.8:
            offset = last_offset + rng.randint(1, 30)
        elif op.startswith("truncate") and held and rng.random() < 0.5:  # at an entry's own offset, the edge case
            offset = rng.choice(held)
        else:
            offset = rng.randint(-3, 120)
        voters = nearby(rng, random_set(rng))
        answer = process.step({"action": "history", "op": op, "offset": offset, "voters": set_json(voters)})
        state, expected, refused = reference_history_step(state, op, offset, voters)
        where = f"seed {1000 + seed}, step {index}: {op} at {offset}"
        assert ("refused" in answer) == refused, f"{where}: Kafka {answer}, reference refused={refused}"
        if refused:
            continue
        assert answer["output"]["result"] == expected, f"{where}: Kafka {answer['output']['result']}, " \
                                                       f"reference {expected}"
        assert answer["post"]["last_value"] == set_json(vh.last_voter_set(state)), where
        last = vh.last_voter_set_entry(state)
        last_offset = last[0] if last is not None else -2
