"""What the raft harness cannot give Kafka is reported as not expressible, never as Kafka's answer.

An AddRaftVoter or RemoveRaftVoter naming a cluster id, sent to a node the trace gives none: Kafka's node always has
one, and the harness's stand-in would show in Kafka's refusal. A ``HarnessError`` raised inside Kafka's own call path
(the random draws) is remembered and thrown after Kafka's call, naming the step, since Kafka's own
``catch (Exception)`` would otherwise answer UNKNOWN_SERVER_ERROR (``harness/src/raft``). Each trace here is
hand-built (inputs only, helpers of tests/test_kafka_raft_dynamic.py) and applied to Kafka 4.3.1's client.
"""

from __future__ import annotations

import pytest

from kraftspec.harness import conform
from kraftspec.traces.format.envelope import trace_from_json
from test_kafka_raft_dynamic import ADMIN, DIRECTORY, STANDALONE, kafka, tick


@pytest.mark.parametrize("action", ["add_raft_voter_request", "remove_raft_voter_request"])
def test_a_voter_change_naming_a_cluster_id_at_a_node_without_one_is_not_expressible(action: str) -> None:
    """Kafka's node always has a cluster id; the harness's stand-in for a node the trace gives none would show in the
    refusal's message ("doesn't match the cluster id ..."), where the reference has none to name."""
    message = {"voter_id": 2, "voter_directory_id": DIRECTORY[2], "cluster_id": "kraftspec-other", "source": ADMIN,
               "correlation_id": 7}
    if action == "add_raft_voter_request":
        message["listeners"] = ["CONTROLLER://controller2:9093"]
    trace = trace_from_json({"format": "1.0", "component": "raft", "id": "no-cluster-id",
                             "initial": {"explicit": STANDALONE},
                             "steps": [{"input": tick(0)}, {"input": {"action": action, "now": 1, "message": message}}]})
    result = conform.conform_trace(trace, kafka())
    assert result.outcome == "not expressible" and result.inexpressible is not None
    assert "names cluster id kraftspec-other but the node has none" in result.inexpressible, result.inexpressible
