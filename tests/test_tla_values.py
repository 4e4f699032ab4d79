"""Reading TLC's value syntax (kraftspec.spec.tla_parse) and printing values back."""

from __future__ import annotations

import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kraftspec.spec.tla_parse import TlaParseError, parse_state, parse_value, to_tla
from kraftspec.spec.tla_values import Fn, ModelValue, fn, record

_LETTERS = string.ascii_letters + "_"
IDENTS = st.builds(str.__add__, st.sampled_from(_LETTERS), st.text(_LETTERS + string.digits, max_size=5)).filter(
    lambda s: s not in ("TRUE", "FALSE")
)
SCALARS = st.one_of(
    st.integers(min_value=-(10**12), max_value=10**12),
    st.text(max_size=8),
    st.booleans(),
    IDENTS.map(ModelValue),
)


KEYS = st.one_of(SCALARS, st.lists(SCALARS, max_size=2).map(tuple), st.frozensets(SCALARS, max_size=2))
"""Function domains: scalars, tuples and sets of scalars (as node ids, pairs and quorums are)."""
VALUES: st.SearchStrategy = st.deferred(
    lambda: st.one_of(
        SCALARS,
        st.lists(VALUES, max_size=3).map(tuple),
        st.frozensets(VALUES, max_size=3),
        st.dictionaries(IDENTS, VALUES, min_size=1, max_size=3).map(fn),
        st.dictionaries(KEYS, VALUES, max_size=3).map(fn),
    )
)
"""Every kind of value, nested: sequences, sets, records and general functions, built canonically."""


@settings(max_examples=300, deadline=None)
@given(VALUES)
def test_round_trip(value: object) -> None:
    assert parse_value(to_tla(value)) == value


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(IDENTS, VALUES, min_size=1, max_size=5))
def test_state_round_trip(state: dict[str, object]) -> None:
    text = "\n".join(f"/\\ {var} = {to_tla(value)}" for var, value in state.items())
    assert parse_state(text) == state


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("42", 42),
        ("-7", -7),
        ('"q\\"u\\\\o"', 'q"u\\o'),
        ('"a\\nb"', "a\nb"),
        ("TRUE", True),
        ("FALSE", False),
        ("n1", ModelValue("n1")),
        ("<<>>", ()),
        ("<< >>", ()),
        ("<<1, <<2>>, {}>>", (1, (2,), frozenset())),
        ("{a, b}", frozenset({ModelValue("a"), ModelValue("b")})),
        ("-1..2", frozenset({-1, 0, 1, 2})),
        ('[n |-> "z", m |-> {a}]', Fn({"n": "z", "m": frozenset({ModelValue("a")})})),
        ("(a :> 1..2 @@ b :> -2)", Fn({ModelValue("a"): frozenset({1, 2}), ModelValue("b"): -2})),
        ("(1 :> 2 @@ 2 :> 3)", (2, 3)),
        ('("a b" :> 0 @@ "c" :> 0)', Fn({"a b": 0, "c": 0})),
        ("(<<1, 2>> :> (a :> TRUE))", Fn({(1, 2): Fn({ModelValue("a"): True})})),
        ("<<[epoch |-> 1,\n   node |-> n1]>>", (record(epoch=1, node=ModelValue("n1")),)),
    ],
)
def test_parse_value(text: str, expected: object) -> None:
    assert parse_value(text) == expected


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (frozenset({"b", "a", "c"}), '{"a", "b", "c"}'),
        (frozenset({10, -1, 2}), "{-1, 2, 10}"),
        ((), "<<>>"),
        (Fn({}), "<< >>"),
        (record(b=1, a=True), "[a |-> TRUE, b |-> 1]"),
        (fn({ModelValue("y"): 1, ModelValue("x"): 2}), "(x :> 2 @@ y :> 1)"),
        (Fn({"a b": 1}), '("a b" :> 1)'),
        ('tab\t"q"\\', '"tab\\t\\"q\\"\\\\"'),
    ],
)
def test_to_tla(value: object, text: str) -> None:
    assert to_tla(value) == text


def test_parse_state_forms() -> None:
    trace_state = '/\\ f = (a :> 1 @@ b :> -2)\n/\\ r = [n |-> "q\\"u\\\\o", m |-> {a, b}]\n/\\ s = <<>>\n/\\ x = 0'
    assert parse_state(trace_state) == {
        "f": Fn({ModelValue("a"): 1, ModelValue("b"): -2}),
        "r": Fn({"n": 'q"u\\o', "m": frozenset({ModelValue("a"), ModelValue("b")})}),
        "s": (),
        "x": 0,
    }
    assert parse_state("x = <<1>>") == {"x": (1,)}


@pytest.mark.parametrize("text", ["<<1,", "{1 2}", "[a |-> ]", '"open', "1 :> 2", "x == 1"])
def test_parse_errors(text: str) -> None:
    with pytest.raises(TlaParseError):
        parse_value(text)


def test_state_error_names_conjunct() -> None:
    with pytest.raises(TlaParseError, match="y == 2"):
        parse_state("/\\ x = 1\n/\\ y == 2")


def test_to_tla_rejects_non_values() -> None:
    with pytest.raises(TypeError, match="not a TLA\\+ value"):
        to_tla(1.5)
