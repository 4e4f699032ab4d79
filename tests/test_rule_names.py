"""One name per rule in every layer: each CrossHair contract, each model rule and each TLA+ action is named after a
reference rule.

A name is a reference rule's (a public function of ``kraftspec.reference``), or that name followed by ``_`` and an
aspect when one rule has several (``backoff_ms_at_cap``, ``heartbeat_to_shut_down``). A contract must also call the
rule it is named after. Model rules that move the environment (the clock, the network, crashes) are listed by each
model module in ``ENVIRONMENT_RULES``. A TLA+ action of a spec's ``Next`` is read in snake_case
(``HandleVoteRequest``: ``handle_vote_request``) and may also name a private handler (``raft._handle_vote_request``);
actions that move the environment are listed by each agreement model (``spec/agree_X.py``) in
``ENVIRONMENT_ACTIONS``.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from pathlib import Path
from typing import Optional

import pytest
from hypothesis.stateful import RuleBasedStateMachine

import kraftspec.reference
import kraftspec.spec
from kraftspec.prove import contracts

COMPONENTS = ("broker", "controller", "partition", "raft")
SPECS = {"broker": "BrokerLifecycle", "controller": "ControllerRegistration", "partition": "PartitionLeadership",
         "raft": "KRaftQuorum", "voters": "KRaftVoters", "listener": "KRaftListener",
         "features": "FeatureLevels", "shutdown": "KRaftShutdown", "autojoin": "KRaftAutoJoin",
         "requests": "KRaftRequests"}
# voters, features, listener, shutdown, autojoin, requests: a spec and agreement model, no model or contracts


def reference_rules(private: bool = False) -> set[str]:
    """The public functions of ``kraftspec.reference``; with ``private``, also its private functions (handlers such as
    ``raft._handle_vote_request``) without their leading ``_``."""
    rules = set()
    for info in pkgutil.iter_modules(kraftspec.reference.__path__):
        module = importlib.import_module(f"kraftspec.reference.{info.name}")
        rules |= {name.lstrip("_") for name, value in vars(module).items()
                  if inspect.isfunction(value) and value.__module__ == module.__name__
                  and (private or not name.startswith("_")) and not name.startswith("__")}
    return rules


RULES = reference_rules()
HANDLERS = reference_rules(private=True)


def rule_named(name: str, rules: set[str] = RULES) -> Optional[str]:
    """The reference rule ``name`` names (the longest that fits), or None."""
    fits = [rule for rule in rules if name == rule or name.startswith(rule + "_")]
    return max(fits, key=len) if fits else None


def snake_case(action: str) -> str:
    """A TLA+ action's name as a Python one: ``HandleVoteRequest`` is ``handle_vote_request``."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", action).lower()


def next_actions(spec: str) -> set[str]:
    """The actions a spec's ``Next`` takes: the operators defined in the module that its disjuncts name."""
    defined = set(re.findall(r"^([A-Z][A-Za-z0-9]*)(?:\([^)]*\))? ==", spec, re.MULTILINE))
    match = re.search(r"^Next ==\n((?:[ \t]+.*\n)+)", spec, re.MULTILINE)
    assert match is not None, "no Next"
    named = re.findall(r"\b([A-Z][A-Za-z0-9]*)\(|\\/\s*([A-Z][A-Za-z0-9]*)\b", match.group(1))
    return {call or bare for call, bare in named} & defined


def drifted_actions(spec: str, environment: frozenset[str]) -> list[str]:
    """The actions of ``Next`` that name no reference rule or handler and are not the environment's."""
    return sorted(action for action in next_actions(spec) - environment
                  if rule_named(snake_case(action), HANDLERS) is None)


def spec_text(component: str) -> str:
    return (Path(kraftspec.spec.__file__).parent / f"{SPECS[component]}.tla").read_text()


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


@pytest.mark.parametrize("component", sorted(SPECS))
def test_every_tla_action_is_named_after_a_reference_rule(component: str) -> None:
    environment = importlib.import_module(f"kraftspec.spec.agree_{component}").ENVIRONMENT_ACTIONS
    actions = next_actions(spec_text(component))
    assert environment <= actions and len(actions - environment) >= 3, actions
    wrong = drifted_actions(spec_text(component), environment)
    assert not wrong, f"TLA+ actions of {SPECS[component]}'s Next named after no reference rule: {wrong}"


def test_a_drifted_tla_action_is_caught() -> None:
    broker = importlib.import_module("kraftspec.spec.agree_broker").ENVIRONMENT_ACTIONS
    drifted = spec_text("broker").replace("RegisterBroker(", "Register(")
    assert drifted_actions(drifted, broker) == ["Register"]
    raft = importlib.import_module("kraftspec.spec.agree_raft").ENVIRONMENT_ACTIONS
    assert drifted_actions(spec_text("raft"), raft - {"Drop"}) == ["Drop"]
    assert snake_case("HandleBeginQuorumEpochRequest") == "handle_begin_quorum_epoch_request"
    assert rule_named("handle_begin_quorum_epoch", HANDLERS) is None and rule_named("request_vote", HANDLERS) is None
    assert rule_named("register_controller_fails", HANDLERS) == "register_controller"


def test_a_drifted_name_is_caught() -> None:
    assert rule_named("session_expiry") is None and rule_named("send_gate") is None and rule_named("hw") is None
    assert rule_named("backoff_ms_at_cap") == "backoff_ms" and rule_named("session_expired") == "session_expired"
