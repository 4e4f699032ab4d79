"""Deliberately wrong variants of reference rules, used to show that each checking layer can fail.

A :class:`Mutant` names one reference function and a wrong replacement. Applying it swaps the
function in every loaded ``kraftspec`` module that holds it, so callers see the variant however they
imported it. Components list their mutants in ``kraftspec.models.<component>_mutants.MUTANTS``;
``KRAFTSPEC_MUTANT=name`` applies one in a child process (TLC agreement, CrossHair, the CLI).
"""

from __future__ import annotations

import importlib
import os
import sys
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator

COMPONENT_MUTANT_MODULES: tuple[str, ...] = (
    "kraftspec.models.broker_mutants",
    "kraftspec.models.partition_mutants",
    "kraftspec.models.raft_mutants",
    "kraftspec.models.controller_mutants",
    "kraftspec.models.raft_voters_mutants",
    "kraftspec.models.raft_snapshot_mutants",
)
ENV_VAR = "KRAFTSPEC_MUTANT"


@dataclass(frozen=True)
class Mutant:
    """One wrong variant: ``target`` is ``module:function`` in the reference; ``replacement`` has its signature."""

    name: str
    component: str
    description: str
    target: str
    replacement: Callable[..., Any]
    caught_by: tuple[str, ...]  # the layers expected to catch it: scenario, model, agree, crosshair, oracle
    agree_component: str = ""  # the agreement its "agree" layer runs when not its component's (e.g. "listener")

    @contextmanager
    def applied(self) -> Iterator[None]:
        """Swap the target for the replacement in every loaded kraftspec module, restoring on exit."""
        module_name, func_name = self.target.split(":")
        module = importlib.import_module(module_name)
        original = getattr(module, func_name)
        patched: list[tuple[Any, str]] = []
        for mod in list(sys.modules.values()):
            if mod is None or not getattr(mod, "__name__", "").startswith("kraftspec"):
                continue
            for attr, value in list(vars(mod).items()):
                if value is original:
                    setattr(mod, attr, self.replacement)
                    patched.append((mod, attr))
        try:
            yield
        finally:
            for mod, attr in patched:
                setattr(mod, attr, original)


def all_mutants() -> dict[str, Mutant]:
    """Every registered mutant by name (component modules that do not exist yet are skipped)."""
    found: dict[str, Mutant] = {}
    for module_name in COMPONENT_MUTANT_MODULES:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name != module_name:
                raise
            continue
        for mutant in module.MUTANTS:
            found[mutant.name] = mutant
    return found


def get(name: str) -> Mutant:
    """The mutant called ``name``, or a ``KeyError`` listing the known ones."""
    mutants = all_mutants()
    if name not in mutants:
        raise KeyError(f"unknown mutant {name!r}; known: {', '.join(sorted(mutants))}")
    return mutants[name]


_APPLIED: list[AbstractContextManager[None]] = []  # kept alive: dropping the context would undo the swap


def apply_from_environment() -> None:
    """Apply the mutant named by ``KRAFTSPEC_MUTANT`` for the rest of this process (child processes only)."""
    name = os.environ.get(ENV_VAR)
    if name:
        context = get(name).applied()
        context.__enter__()
        _APPLIED.append(context)
