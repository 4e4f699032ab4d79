"""The replay's one comparison (``kraftspec.traces.replay.match``) says "equal" only when the field-level diff finds nothing.

Each value (plain reference values and the views a component observes: :class:`Fields`, :class:`Entries`,
:class:`Tagged`, :class:`Each`) is compared with its own stated JSON and with every perturbation of it (true for 1,
1.0 for 1, a string subclass, a dropped or added element or key); ``matches`` must agree with the diff on each.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from kraftspec.reference.errors import Errors
from kraftspec.reference.frozen import FrozenMap
from kraftspec.reference.raft_log import LogEntry
from kraftspec.reference.raft_records import LeaderChangeMessage
from kraftspec.reference.raft_state import ElectionState, ReplicaKey
from kraftspec.traces.replay.match import Each, Entries, Fields, Tagged, matches, observe, post_matcher, stated_fields_match, stated_json
from kraftspec.traces.replay.verdict import diff
from support_perturb import perturbed

LEADER_CHANGE = LeaderChangeMessage(leader_id=1, voters=(1, 2, 3), granting_voters=(1, 3))


def _entry(entry: LogEntry) -> Any:
    record = Tagged(entry.record) if type(entry.record) is LeaderChangeMessage else entry.record
    return {"epoch": entry.epoch, "record": record}


VALUES = {
    "scalars": (0, 1, True, False, None, "x", 1.5),
    "error": Errors.NOT_CONTROLLER,
    "dataclass": ElectionState(epoch=3, leader_id=2, voted_key=ReplicaKey(id=2, directory_id="d")),
    "map with int keys": FrozenMap({2: 5, 1: 7}),
    "fields": Fields(ElectionState(epoch=1), ("leader_id", "epoch")),
    "entries with tuple keys": Entries(FrozenMap({(2, 0): 9, (1, 1): 4})),
    "entries of fields": Entries(FrozenMap({"t": ElectionState(epoch=1), "s": ElectionState(epoch=2)}), ("epoch",)),
    "entries through a view": Entries(FrozenMap({1: (3, 1), 0: ()}), view=lambda v: {"sorted": sorted(v)}),
    "tagged": Tagged(LEADER_CHANGE),
    "each": Each((LogEntry(epoch=1, record=LEADER_CHANGE), LogEntry(epoch=1, record="a"), LogEntry(epoch=2)), _entry),
}


@pytest.mark.parametrize("name", sorted(VALUES))
def test_matches_agrees_with_the_diff_on_the_stated_json_and_every_perturbation(name: str) -> None:
    value = VALUES[name]
    stated = stated_json(value)
    assert matches(value, stated)
    checked = 0
    for other in perturbed(stated):
        assert matches(value, other) == (not diff(stated, other, "")), (name, other)
        checked += 1
    assert checked >= 2


def test_the_views_are_written_as_a_trace_states_them() -> None:
    assert stated_json(VALUES["entries with tuple keys"]) == {"1:1": 4, "2:0": 9}
    assert list(stated_json(VALUES["map with int keys"])) == ["2", "1"]
    assert stated_json(VALUES["fields"]) == {"leader_id": -1, "epoch": 1}
    assert stated_json(VALUES["tagged"]) == {"type": "LeaderChangeMessage", **stated_json(LEADER_CHANGE)}
    assert stated_json(VALUES["each"])[2] == {"epoch": 2, "record": None}


def test_stated_fields_are_read_alone_on_a_response_or_an_observed_post_state() -> None:
    response = ElectionState(epoch=3, leader_id=2)
    assert stated_fields_match(response, {"epoch": 3})
    assert not stated_fields_match(response, {"epoch": 3.0})
    assert not stated_fields_match(response, {"unknown": 1})  # the diff names it
    assert stated_fields_match(None, {}) and not stated_fields_match(None, {"epoch": 3})
    post_matches = post_matcher({"epoch": lambda state, clock: state.epoch, "clock": lambda state, clock: clock})
    assert post_matches(response, 7, {"clock": 7, "epoch": 3})
    assert not post_matches(response, 7, {"clock": True})
    assert not post_matches(response, 7, {"role": "Leader"})


RESPONSES = {
    "dataclass": ElectionState(epoch=3, leader_id=2, voted_key=ReplicaKey(id=2, directory_id="d")),
    "mapping": {"error": Errors.NONE, "is_caught_up": True, "epoch": 4},
}


@pytest.mark.parametrize("name", sorted(RESPONSES))
def test_stated_fields_match_agrees_with_the_diff_on_every_stated_subset_and_perturbation(name: str) -> None:
    """Each subset of a response's fields, stated as a trace states it and then perturbed one value at a time:
    matched exactly when the diff finds nothing (every stated field is read, not only the first)."""
    response = RESPONSES[name]
    full = {key: stated_json(value) for key, value in
            (response.items() if isinstance(response, dict) else ((f, getattr(response, f)) for f in
                                                                   ("epoch", "leader_id", "voted_key")))}
    checked = 0
    for size in range(1, len(full) + 1):
        for keys in itertools.combinations(full, size):
            stated = {key: full[key] for key in keys}
            assert stated_fields_match(response, stated), stated
            for key in keys:
                for other in perturbed(stated[key]):
                    wrong = {**stated, key: other}
                    assert stated_fields_match(response, wrong) == (not diff(stated, wrong, "")), (name, wrong)
                    checked += 1
    assert checked >= 10


def test_a_recognized_post_state_field_is_only_the_very_same_pair_found_equal_before() -> None:
    """``post_matcher`` skips the walk only for the same stated object over the same anchor; a stated value or a
    reference value that changed is compared again (a variant that recognizes by field name alone is caught)."""
    entries = tuple(LogEntry(epoch=1, record=i) for i in range(3))
    observers = {"log": lambda state, clock: Each(state, lambda e: e)}
    post_matches = post_matcher(observers)
    stated = observe(observers, entries, 0)["log"]
    assert post_matches(entries, 0, {"log": stated}) and post_matches(entries, 0, {"log": stated})
    assert observe(observers, entries, 0)["log"] is stated  # the recorder shares what its steps restate
    assert not post_matches(entries, 0, {"log": stated[:2]})  # another stated value: compared, and differs
    longer = (*entries, LogEntry(epoch=2, record=3))
    assert not post_matches(longer, 0, {"log": stated})  # another anchor: compared, and differs
    assert observe(observers, longer, 0)["log"] is not stated
