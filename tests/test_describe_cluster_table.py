"""Every cell of the DescribeCluster table against rules §4.2/§4.3, stated independently here.

The example cluster (``describe_cluster_table.example_image``): brokers 1 unfenced, 2 fenced, 3 unfenced
without the PLAINTEXT listener; controllers 3000 (Raft leader) and 3001 on CONTROLLER, 3002 on another
listener. The broker's controller id is the chooser's pick (index 0 → broker 1).
"""

from __future__ import annotations

import itertools

import pytest

import kraftspec.reference.describe_cluster_table as dct


def expected_client(version: int, endpoint_type: int, include_fenced: bool) -> str:
    """§4.3: endpointType ≠ 1 below v1 and includeFencedBrokers=true below v2 cannot be encoded."""
    if version < 1 and endpoint_type != 1:
        return f"UnsupportedVersionException: Attempted to write a non-default endpointType at version {version}"
    if version < 2 and include_fenced:
        return f"UnsupportedVersionException: Attempted to write a non-default includeFencedBrokers at version {version}"
    return "sent"


def expected_server(version: int, receiver: str, endpoint_type: int, include_fenced: bool) -> str:
    """§4.2 steps 1–4 with the broker and controller node rules."""
    served = 2 if receiver == "controller" else 1
    if endpoint_type not in (1, 2):
        return "INVALID_REQUEST" if version == 0 else "UNSUPPORTED_ENDPOINT_TYPE"
    if endpoint_type != served:
        return "INVALID_REQUEST" if version == 0 else "MISMATCHED_ENDPOINT_TYPE"
    if receiver == "controller":
        return "nodes [3000, 3001] controllerId 3000"
    return "nodes [1, 2 (fenced)] controllerId 1" if include_fenced else "nodes [1] controllerId 1"


CASES = list(itertools.product(dct.VERSIONS, ("broker", "controller"), dct.ENDPOINT_TYPES, dct.INCLUDE_FENCED))


def test_table_has_every_combination_once() -> None:
    keys = [(c.version, c.receiver.value, c.endpoint_type, c.include_fenced) for c in dct.table()]
    assert keys == CASES


@pytest.mark.parametrize("version,receiver,endpoint_type,include_fenced", CASES)
def test_cell(version: int, receiver: str, endpoint_type: int, include_fenced: bool) -> None:
    cells = {(c.version, c.receiver.value, c.endpoint_type, c.include_fenced): c for c in dct.table()}
    cell = cells[(version, receiver, endpoint_type, include_fenced)]
    assert cell.client == expected_client(version, endpoint_type, include_fenced)
    assert cell.server == expected_server(version, receiver, endpoint_type, include_fenced)


def test_markdown_lists_every_row() -> None:
    text = dct.markdown()
    lines = text.splitlines()
    assert lines[0] == "| version | receiver | endpointType | includeFencedBrokers | client | server |"
    assert len(lines) == 2 + len(CASES)
    assert "| 2 | broker | 1 | true | sent | nodes [1, 2 (fenced)] controllerId 1 |" in lines
    assert all(len(row) == 6 for row in dct.rows())


def test_the_generated_documentation_is_current() -> None:
    from pathlib import Path

    doc = (Path(__file__).resolve().parent.parent / "docs" / "describe-cluster.md").read_text()
    assert dct.markdown() in doc, "docs/describe-cluster.md is stale: regenerate it with `kraftspec table describe-cluster`"
