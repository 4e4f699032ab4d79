"""Agreement benchmarks: the reference's exploration per component, exact sets against fingerprints, and reading a
TLC dot dump both ways (``kraftspec agree``'s two halves besides TLC itself).

Run: ``python benchmarks/bench_agree.py [COMPONENT ...] [--dot PATH]`` (``--dot``: a dump of the first component's
spec, e.g. written by ``run_tlc(..., dump_graph_to=PATH)``). CPU seconds are printed beside wall seconds, since the
machine is shared; figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import time
from typing import Any, Callable

from kraftspec.spec import agree, agree_fingerprint
from kraftspec.spec.tlc_config import read_constants


def timed(label: str, run: Callable[[], Any]) -> Any:
    """Run once and print wall and CPU seconds."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = run()
    print(f"{label:55} {time.perf_counter() - wall:7.1f} s wall {time.process_time() - cpu:7.1f} s CPU", flush=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("components", nargs="*", default=["raft"])
    parser.add_argument("--dot", help="a TLC dot dump of the first component's spec")
    args = parser.parse_args()
    for component in args.components:
        model = agree.load_model(component)
        constants = read_constants(model.config_path)
        graph = timed(f"{component}: exploration, exact sets", lambda: agree.explore_reference(model, constants))
        print(f"  {len(graph.nodes)} states, {len(graph.edges)} edges")
        timed(f"{component}: exploration, fingerprints", lambda: agree_fingerprint.explore_reference(
            model, constants, agree_fingerprint.Numbering(agree_fingerprint.ID_BITS),
            agree_fingerprint.Numbering(agree_fingerprint.ACTION_BITS)))
    if args.dot:
        timed("dot dump: exact sets (graph_from_dot)", lambda: agree.graph_from_dot(args.dot))
        timed("dot dump: fingerprints (read_dot)", lambda: agree_fingerprint.read_dot(
            args.dot, agree_fingerprint.Numbering(agree_fingerprint.ID_BITS),
            agree_fingerprint.Numbering(agree_fingerprint.ACTION_BITS)))


if __name__ == "__main__":
    main()
