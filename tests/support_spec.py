"""What the tests of a focused TLA+ spec share: the spec rewritten wrong and checked by TLC against one of its
invariants or properties (each one has teeth), its state graph and its bundled traces."""

from __future__ import annotations

from pathlib import Path

import networkx as nx

from kraftspec.spec.agree import SPEC_DIR, load_model
from kraftspec.spec.state_graph import state_graph
from kraftspec.spec.tlc import TlcResult, run_tlc
from kraftspec.traces.format import jsonl
from kraftspec.traces.format.envelope import Trace

BUNDLES = Path(jsonl.__file__).parents[1] / "tla"
"""The bundled TLC-recorded traces."""


def check_wrong_variant(tmp_path: Path, module: str, edits: list[tuple[str, str]], violated: str,
                        properties: set[str]) -> TlcResult:
    """TLC's verdict on ``module`` with each (old, new) text of ``edits`` replaced (each old text found exactly once),
    under its config's constants with ``violated`` alone as the invariant, or the property when in ``properties``."""
    source = (SPEC_DIR / f"{module}.tla").read_text()
    for old, new in edits:
        assert source.count(old) == 1, f"the spec no longer contains the text this variant rewrites: {old!r}"
        source = source.replace(old, new)
    (tmp_path / f"{module}.tla").write_text(source)
    config = (SPEC_DIR / f"{module}.cfg").read_text()
    section = "PROPERTIES" if violated in properties else "INVARIANTS"
    (tmp_path / f"{module}.cfg").write_text(f"{config[:config.index('INVARIANTS')]}{section}\n    {violated}\n")
    return run_tlc(tmp_path / f"{module}.tla", workers=1)


def spec_state_graph(component: str) -> nx.MultiDiGraph:
    """TLC's state graph of ``component``'s spec under its config (what its traces are recorded from)."""
    model = load_model(component)
    return state_graph(model.module_path, model.config_path, timeout_s=600)[0]


def bundled_traces(name: str) -> list[Trace]:
    """The traces of the bundle ``traces/tla/<name>.jsonl.gz``."""
    return [t for _, t in jsonl.read_jsonl(str(BUNDLES / f"{name}.jsonl.gz"))]
