"""Controller traces recorded under the controller mutants (``models/controller_mutants.py``) are flagged by
``kraftspec check`` at the step where the mutant first changes an output, with the rule that decides that step."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from test_traces_controller import BUNDLED, CONTROLLER_ENDPOINTS, FENCED_BROKERS, STALE_RECORD, backoff_trace

from kraftspec import mutants
from kraftspec.models.controller_mutants import MUTANTS
from kraftspec.traces.replay import controller as controller_replay
from kraftspec.traces.format import jsonl
from kraftspec.traces.replay.check import EXIT_FINDING, check_command
from kraftspec.traces.format.envelope import Trace, trace_from_json
from kraftspec.traces.replay.verdict import replay

LISTENER = {"name": "CONTROLLER", "host": "controller1", "port": 9093, "security_protocol": 0}
ZK_READY_REQUEST = {"format": "1.0", "component": "controller", "initial": {"standard": "controller/new-process"},
                    "steps": [{"input": {"action": "register_controller", "request": {
                        "controller_id": 1, "incarnation_id": "inc1", "zk_migration_ready": True,
                        "listeners": [LISTENER]}},
                        "output": {"response": {"error": "NONE", "message": ""}, "records": [
                            {"offset": 0, "type": "RegisterControllerRecord", "controller_id": 1,
                             "incarnation_id": "inc1", "end_points": [LISTENER]}]}}]}
"""Kafka 4.x writes ZkMigrationReady false whatever the request says (issue 17)."""
LATE_SUCCESS = {"format": "1.0", "component": "controller", "initial": {"explicit": {
    "manager": {"node_id": 1, "incarnation_id": "inc1", "listeners": [LISTENER], "metadata_version": 30,
                "channel_started": True, "pending_rpcs": 1, "failed_rpcs": 1, "resend_deadline_ms": 100}}},
    "steps": [{"input": {"action": "on_response", "error": "NONE", "now": 150}, "output": {"response": {"sends": []}},
               "post": {"resend_deadline_ms": None, "pending_rpcs": 0}}]}
"""A success handled after the resend deadline: the due resend fired first (the manager's event queue)."""

# mutant -> (a trace that shows it, the step flagged, its action, the first differing field)
SHOWN: dict[str, tuple[dict[str, Any], int, str, str]] = {
    "controller-zk-migration-ready-copied": (ZK_READY_REQUEST, 0, "register_controller",
                                             "records[0].zk_migration_ready"),
    "controller-due-resend-kept": (LATE_SUCCESS, 0, "on_response", "post.resend_deadline_ms"),
    "controller-stale-incarnation-accepted": (STALE_RECORD, 1, "on_metadata_update", "response.sends[0]"),
    "controller-fenced-brokers-to-v1": (FENCED_BROKERS, 0, "describe_cluster", "response.nodes[2]"),
    "controller-unknown-endpoint-mismatched": (CONTROLLER_ENDPOINTS, 3, "describe_cluster", "response.error"),
    "controller-backoff-uncapped": (backoff_trace(13), 2 + 2 * 11, "on_response", "post.resend_deadline_ms"),
}
OUTSIDE = {"kraftspec.reference.cluster_tool", "kraftspec.reference.admin_bootstrap"}
"""Targets no controller trace reaches: the kafka-cluster tool's printing and the admin client's configuration."""


def recorded(trace: Trace, name: str) -> Trace:
    return controller_replay.record(trace, mutants.get(name).applied())


def test_every_controller_mutant_is_shown_by_a_trace_or_targets_a_tool_outside_the_component() -> None:
    for mutant in MUTANTS:
        assert (mutant.name in SHOWN) != (mutant.target.split(":")[0] in OUTSIDE), mutant.name


@pytest.mark.parametrize("name", sorted(SHOWN))
def test_a_trace_recorded_under_a_mutant_is_flagged_at_its_first_changed_step(name: str) -> None:
    obj, index, action, path = SHOWN[name]
    original = trace_from_json(obj)
    wrong = recorded(original, name)
    assert len(wrong.steps) > index  # a recording ends before an input the variant refuses
    assert replay(wrong, mutants.get(name).applied()).conformant
    divergence = replay(wrong).divergence
    assert divergence is not None and divergence.step == index and divergence.input["action"] == action
    assert divergence.diffs[0].path == path
    assert divergence.rule == f"kraftspec.reference.{controller_replay.ACTIONS[action].rule}"


def test_check_flags_the_bundled_traces_recorded_under_the_stale_incarnation_mutant(tmp_path: Path) -> None:
    """registeredInLog ignoring the incarnation (§4.1): every recording it changes is flagged where the manager
    reads the log, the first step that differs."""
    name = "controller-stale-incarnation-accepted"
    originals = [t for _, t in jsonl.read_jsonl(BUNDLED)]
    wrong = [recorded(t, name) for t in originals]
    changed = [(o, w) for o, w in zip(originals, wrong) if o != w]
    assert len(changed) >= 100
    for original, mutated in changed:
        divergence = replay(mutated).divergence
        first = next(i for i, (a, b) in enumerate(zip(original.steps, mutated.steps)) if a != b)
        assert divergence is not None and divergence.step == first
        assert divergence.rule == "kraftspec.reference.controller_registration.on_metadata_update"
    path = tmp_path / "stale.jsonl"
    jsonl.write_jsonl(str(path), [w for _, w in changed])
    out = io.StringIO()
    assert check_command([str(path)], False, out) == EXIT_FINDING
    assert out.getvalue().splitlines()[-1] == \
        f"checked {len(changed)} traces from 1 file(s): 0 conformant, {len(changed)} divergent, 0 unreadable"
