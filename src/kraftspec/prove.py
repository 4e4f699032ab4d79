"""``kraftspec prove``: run CrossHair over the contracts in ``kraftspec.proofs`` and report each one.

Each contract is a small function in a proofs module whose PEP 316 docstring (``pre:`` / ``post:``)
states a rule from the facts; it calls the reference rule by name, so an applied mutant is what
CrossHair analyses. A contract is *confirmed* only when CrossHair says "confirmed over all paths";
a counterexample makes it *refuted*; anything else (budget exhausted) is *unknown*: a missing
counterexample is not a proof.
"""

from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass
from typing import Callable, Iterator

PROOF_MODULES: dict[str, str] = {
    "broker": "kraftspec.proofs.broker",
    "partition": "kraftspec.proofs.partition",
    "raft": "kraftspec.proofs.raft",
    "controller": "kraftspec.proofs.controller",
}


@dataclass(frozen=True)
class ContractResult:
    """The verdict on one contract: ``confirmed``, ``refuted`` (with CrossHair's counterexample) or ``unknown``."""

    component: str
    contract: str
    verdict: str
    detail: str

    def line(self) -> str:
        return f"{self.component}.{self.contract}: {self.verdict}" + (f" ({self.detail})" if self.detail else "")


def contracts(module_name: str) -> list[Callable[..., object]]:
    """The functions of a proofs module that carry a ``post:`` condition, in source order."""
    module = importlib.import_module(module_name)
    found = [obj for _, obj in inspect.getmembers(module, inspect.isfunction)
             if obj.__module__ == module_name and "post:" in (obj.__doc__ or "")]
    return sorted(found, key=lambda f: f.__code__.co_firstlineno)


def check_contract(component: str, function: Callable[..., object], per_condition_timeout: float) -> ContractResult:
    """Analyse one contract with CrossHair (PEP 316 conditions) within ``per_condition_timeout`` seconds per condition."""
    from crosshair.core import run_checkables
    from crosshair.core_and_libs import AnalysisKind, analyze_function
    from crosshair.options import AnalysisOptionSet
    from crosshair.statespace import MessageType

    options = AnalysisOptionSet(analysis_kind=[AnalysisKind.PEP316], per_condition_timeout=per_condition_timeout,
                                report_all=True)
    messages = list(run_checkables(analyze_function(function, options)))
    refuted = [m for m in messages if m.state in (MessageType.POST_FAIL, MessageType.POST_ERR, MessageType.EXEC_ERR)]
    if refuted:
        return ContractResult(component, function.__name__, "refuted", refuted[0].message)
    if messages and all(m.state is MessageType.CONFIRMED for m in messages):
        return ContractResult(component, function.__name__, "confirmed", "")
    detail = "; ".join(sorted({m.message for m in messages})) or "no condition was analysed"
    return ContractResult(component, function.__name__, "unknown", detail)


def prove(components: list[str], per_condition_timeout: float = 10.0) -> Iterator[ContractResult]:
    """Every contract of the named components (those without a proofs module yet are skipped)."""
    for component in components:
        try:
            functions = contracts(PROOF_MODULES[component])
        except ModuleNotFoundError as exc:
            if exc.name == PROOF_MODULES[component]:
                continue
            raise
        for function in functions:
            yield check_contract(component, function, per_condition_timeout)
