"""The fingerprint agreement check (``kraftspec agree``, ``--deep``): TLC's dot dump streamed into numbers, compared
with the reference's as sorted arrays. On ControllerRegistration.cfg (small) it must give the exact check's verdict
and counts, and catch deliberately wrong reference variants with a path to the first difference."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Iterator, Mapping

import pytest

from kraftspec.spec.agree import AgreementModel, Step, check_agreement, graph_from_tlc, load_model
from kraftspec.spec.agree_fingerprint import (
    check_fingerprints,
    explain_fingerprints,
    pack,
    printed_digest,
    projected_digest,
    unpack,
)
from kraftspec.spec.state_graph import load_dot
from kraftspec.spec.tla_parse import parse_state
from kraftspec.spec.tlc import run_tlc


@pytest.fixture(scope="module")
def dump(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """TLC's state graph of the controller spec, dumped once."""
    model = load_model("controller")
    dot = tmp_path_factory.mktemp("agree") / "states.dot"
    result = run_tlc(model.module_path, model.config_path, dump_graph_to=dot)
    assert result.verdict == "ok", result.summary()
    return dot


def test_printed_and_projected_states_share_a_digest_exactly_when_equal() -> None:
    text = '/\\ x = {2, 1}\n/\\ y = [b |-> <<TRUE>>, a |-> "s"]\n/\\ z = (3 :> 0 @@ 1 :> 0)'
    state = parse_state(text)
    assert printed_digest(text) == projected_digest(state)
    assert printed_digest(text.replace("<<TRUE>>", "<<1>>")) != projected_digest(state)
    assert projected_digest({**state, "x": frozenset({1})}) != projected_digest(state)


def test_edges_pack_and_unpack() -> None:
    assert unpack(pack(5, 3, (1 << 28) - 1)) == (5, 3, (1 << 28) - 1)


def test_same_verdict_and_counts_as_the_exact_check(dump: Path) -> None:
    model = load_model("controller")
    check = check_fingerprints(model, dump, run=False)
    exact = check_agreement(model, spec=(graph_from_tlc(load_dot(dump)), 0.0))
    assert check.report.identical and exact.identical, check.report.summary()
    assert (check.report.spec_states, check.report.spec_edges) == (exact.spec_states, exact.spec_edges)
    assert (check.report.reference_states, check.report.reference_edges) == (exact.reference_states,
                                                                              exact.reference_edges)


def _first_action(model: AgreementModel[Any]) -> str:
    from kraftspec.spec.tlc_config import read_constants

    constants = read_constants(model.config_path)
    initial = next(iter(model.initial_states(constants)))
    return next(iter(model.successors(initial, constants))).action


def test_a_reference_that_never_takes_an_action_is_caught(dump: Path) -> None:
    model = load_model("controller")
    dropped = _first_action(model)

    def successors(state: Any, constants: Mapping[str, Any]) -> Iterator[Step[Any]]:
        return (step for step in model.successors(state, constants) if step.action != dropped)

    check = check_fingerprints(replace(model, successors=successors), dump, run=False)
    assert not check.report.identical and check.found is not None
    assert check.found.kind == "edge only in spec" and check.found.edge is not None
    assert check.actions[check.found.edge[1]] == dropped
    text = explain_fingerprints(check, dump)
    assert f"spec action {dropped}  DIFFERS (edge only in spec)" in text and "/\\" in text


def test_a_reference_that_names_an_action_wrongly_is_caught(dump: Path) -> None:
    model = load_model("controller")
    renamed = _first_action(model)

    def successors(state: Any, constants: Mapping[str, Any]) -> Iterator[Step[Any]]:
        for step in model.successors(state, constants):
            yield replace(step, action="Renamed") if step.action == renamed else step

    check = check_fingerprints(replace(model, successors=successors), dump, run=False)
    assert check.found is not None and check.found.edge is not None and check.found.depth == 0
    assert check.found.kind == "edge only in reference" and check.actions[check.found.edge[1]] == "Renamed"
    assert "spec action Renamed  DIFFERS (edge only in reference)" in explain_fingerprints(check, dump)
