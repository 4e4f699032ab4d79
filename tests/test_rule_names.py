"""One name per rule in every layer: each CrossHair contract and each model rule is named after a reference rule.

A name is a reference rule's (a public function of ``kraftspec.reference``), or that name followed by ``_`` and an
aspect when one rule has several (``backoff_ms_at_cap``, ``heartbeat_to_shut_down``). A contract must also call the
rule it is named after. Model rules that move the environment (the clock, the network, crashes) are listed by each
model module in ``ENVIRONMENT_RULES``.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from typing import Optional

import pytest
from hypothesis.stateful import RuleBasedStateMachine

import kraftspec.reference
from kraftspec.prove import contracts

COMPONENTS = ("broker", "controller", "partition", "raft")


def reference_rules() -> set[str]:
    rules = set()
    for info in pkgutil.iter_modules(kraftspec.reference.__path__):
        module = importlib.import_module(f"kraftspec.reference.{info.name}")
        rules |= {name for name, value in vars(module).items()
                  if inspect.isfunction(value) and value.__module__ == module.__name__ and not name.startswith("_")}
    return rules


RULES = reference_rules()


def rule_named(name: str) -> Optional[str]:
    """The reference rule ``name`` names (the longest that fits), or None."""
    fits = [rule for rule in RULES if name == rule or name.startswith(rule + "_")]
    return max(fits, key=len) if fits else None


@pytest.mark.parametrize("component", COMPONENTS)
def test_every_contract_is_named_after_the_reference_rule_it_calls(component: str) -> None:
    wrong = []
    for contract in contracts(f"kraftspec.proofs.{component}"):
        rule = rule_named(contract.__name__)
        if rule is None or rule not in contract.__code__.co_names:
            wrong.append(contract.__name__)
    assert not wrong, f"contracts named after no reference rule they call: {wrong}"


@pytest.mark.parametrize("component", COMPONENTS)
def test_every_model_rule_is_named_after_a_reference_rule(component: str) -> None:
    module = importlib.import_module(f"kraftspec.models.{component}")
    machines = [value for value in vars(module).values() if isinstance(value, type)
                and issubclass(value, RuleBasedStateMachine) and value.__module__ == module.__name__]
    assert machines
    names = {name for machine in machines for name, value in inspect.getmembers(machine)
             if getattr(value, "hypothesis_stateful_rule", None) is not None}
    assert module.ENVIRONMENT_RULES <= names
    wrong = sorted(name for name in names - module.ENVIRONMENT_RULES if rule_named(name) is None)
    assert not wrong, f"model rules named after no reference rule: {wrong}"


def test_a_drifted_name_is_caught() -> None:
    assert rule_named("session_expiry") is None and rule_named("send_gate") is None and rule_named("hw") is None
    assert rule_named("backoff_ms_at_cap") == "backoff_ms" and rule_named("session_expired") == "session_expired"
