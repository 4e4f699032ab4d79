"""Running each checking layer against an applied mutant: scenario tests, a Hypothesis model, CrossHair, agreement."""

from __future__ import annotations

import functools
import inspect
from types import ModuleType
from typing import Any, Callable, Iterable, Optional

import pytest
from hypothesis import Phase, settings
from hypothesis.stateful import RuleBasedStateMachine, run_state_machine_as_test

from kraftspec.models.determinism import without_local_constants


LAYERS_BY_COST = ("scenario", "model", "agree", "crosshair", "kafka")  # the cheapest layer first


def mutant_cases(mutants: Iterable[Any]) -> list[Any]:
    """``(mutant, layer)`` for every layer each mutant names. Only the mutant's cheapest layer runs by default (so every
    mutant is still caught there); its other layers are marked ``exhaustive`` (``pytest -m exhaustive``, run by CI)."""
    cases = []
    for mutant in mutants:
        cheapest = min(mutant.caught_by, key=LAYERS_BY_COST.index)
        cases += [pytest.param(mutant, layer, id=f"{mutant.name}-{layer}",
                               marks=() if layer == cheapest else pytest.mark.exhaustive) for layer in mutant.caught_by]
    return cases


def _calls(function: Callable[..., Any]) -> list[tuple[Any, ...]]:
    """The argument tuples a (possibly parametrized) test function runs with."""
    marks = [m for m in getattr(function, "pytestmark", []) if m.name == "parametrize"]
    if not marks:
        return [()]
    values = marks[0].args[1]
    single = "," not in marks[0].args[0] and len(inspect.signature(function).parameters) == 1
    return [(v,) if single else tuple(v) for v in values]


def scenario_failures(module: ModuleType) -> list[str]:
    """Names of the scenario tests in ``module`` that fail (raise) as they stand."""
    failed = []
    for name, function in sorted(vars(module).items()):
        if not name.startswith("test_") or not callable(function):
            continue
        if any(p.name in ("tmp_path", "request") for p in inspect.signature(function).parameters.values()):
            continue
        for args in _calls(function):
            try:
                function(*args)
            except (Exception, pytest.fail.Exception):  # any failure counts as caught, a failed pytest.raises too
                failed.append(name)
                break
    return failed


def model_failure(machine: type[RuleBasedStateMachine], *, max_examples: int = 300, steps: int = 50) -> Optional[str]:
    """The model's failure message under a fixed seed (derandomized), or None if it found nothing.

    Seeing the mutant fail is enough here, so the first failure is reported unshrunk. The examples depend
    on the seed alone, not on the modules earlier checks imported
    (:func:`kraftspec.models.determinism.without_local_constants`).
    """
    try:
        with without_local_constants():
            run_state_machine_as_test(machine, settings=settings(
                max_examples=max_examples, stateful_step_count=steps, derandomize=True, database=None,
                deadline=None, print_blob=False, report_multiple_bugs=False,
                phases=(Phase.explicit, Phase.reuse, Phase.generate)))
    except Exception as exc:  # the model's invariant or rule assertion
        return f"{type(exc).__name__}: {exc}".splitlines()[0]
    return None


def crosshair_refutations(component: str, per_condition_timeout: float = 5.0) -> list[str]:
    """Contracts of ``component`` that CrossHair refutes."""
    from kraftspec.prove import prove

    return [r.line() for r in prove([component], per_condition_timeout) if r.verdict == "refuted"]


@functools.lru_cache(maxsize=None)
def _spec_graph(component: str, config: str = "") -> Any:
    from dataclasses import replace

    from kraftspec.spec.agree import load_model, spec_graph

    return spec_graph(replace(load_model(component), config=config))


def agreement_difference(component: str, config: str = "") -> Optional[str]:
    """The first difference between the (mutated) reference and TLC's graph, or None when identical; ``config``: one of
    the model's ``extra_configs`` ("": the spec's own ``.cfg``)."""
    from dataclasses import replace

    from kraftspec.spec.agree import check_agreement, load_model

    try:
        report = check_agreement(replace(load_model(component), config=config), spec=_spec_graph(component, config),
                                 stop_early=True)
    except Exception as exc:  # the mutated reference fails on a state the spec's bounds reach
        return f"the reference raised {type(exc).__name__} while explored: {exc}"
    return None if report.identical else report.summary()


def layer_result(layer: str, component: str, scenarios: ModuleType, machine: type[RuleBasedStateMachine], *,
                 model_steps: int = 50, model_examples: int = 300, agree_component: str = "") -> Optional[str]:
    """What ``layer`` reports against the currently applied mutant (None = it did not catch it); ``agree`` runs
    ``agree_component``'s agreement when the mutant names one (``Mutant.agree_component``), else ``component``'s."""
    if layer == "scenario":
        failed = scenario_failures(scenarios)
        return f"{len(failed)} scenario(s) fail, e.g. {failed[0]}" if failed else None
    if layer == "model":
        return model_failure(machine, max_examples=model_examples, steps=model_steps)
    if layer == "crosshair":
        refuted = crosshair_refutations(component)
        return refuted[0] if refuted else None
    if layer == "agree":
        return agreement_difference(agree_component or component)
    raise ValueError(f"unknown layer {layer!r}")
