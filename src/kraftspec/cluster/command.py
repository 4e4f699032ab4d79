"""``kraftspec cluster``: fetch Kafka's jars, or start a cluster, run fault scenarios on it and check it."""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Optional

from kraftspec.cluster import jars, netns
from kraftspec.cluster.runner import Cluster, ClusterError
from kraftspec.cluster.scenarios import COMBINED, DYNAMIC, SCENARIOS, SEPARATE, check_cluster, run_scenario

DYNAMIC_BROKERS = 1
"""Brokers of a ``--quorum dynamic`` cluster: 3 controllers (one a spare) and 1 broker keep it small."""

EXIT_OK, EXIT_FINDING, EXIT_ERROR = 0, 1, 2


def _say(line: str) -> None:
    print(line, flush=True)


def run_cluster(version: str, layout: str, scenarios: list[str], seed: int, folder: Optional[str],
                keep: bool = False, tool: bool = True, log=_say, network: Optional[str] = None,
                quorum: str = "static") -> dict[str, Any]:
    """Start a cluster (``network``: see ``netns.choose_mode``; ``quorum``: static voters, or a dynamic quorum of
    3 controllers, one a spare, and 1 broker in the separate layout), check it, run ``scenarios`` in turn (scenario i
    gets seed ``seed + i``), stop it gracefully and audit the real data directories once more. Returns a summary."""
    root = Path(folder) if folder else Path(tempfile.mkdtemp(prefix="kraftspec-cluster-"))
    log(f"kraftspec cluster: Kafka {version}, {layout} layout, {quorum} quorum, seed {seed}, folder {root}")
    summary: dict[str, Any] = {"version": version, "layout": layout, "quorum": quorum, "seed": seed,
                               "folder": str(root), "scenarios": []}
    sizes = {"brokers": DYNAMIC_BROKERS} if quorum == "dynamic" and layout == "separate" else {}
    cluster = Cluster(root / "cluster", version=version, layout=layout, seed=seed, log=log, network=network,
                      quorum=quorum, **sizes)
    summary["network"], summary["network_reason"] = cluster.mode, cluster.mode_reason
    with cluster:
        cluster.start()
        summary["timings"] = {"fetch_jars_s": round(cluster.timings.fetch_jars, 1),
                              "format_s": round(cluster.timings.format, 1), "start_s": round(cluster.timings.start, 1)}
        summary["memory_mb"] = {str(k): v >> 20 for k, v in cluster.memory().items()}
        log(f"memory (RSS, MB): {summary['memory_mb']}")
        initial = check_cluster(cluster, root / "checks" / "initial", "initial", tool=tool)
        log(initial.line())
        summary["initial_ok"] = initial.ok
        for i, name in enumerate(scenarios):
            result = run_scenario(cluster, name, seed + i, root / "checks", tool=tool)
            summary["scenarios"].append({"name": name, "seed": seed + i, "ok": result.ok,
                                         "seconds": round(result.seconds, 1), "notes": result.notes,
                                         "error": result.error,
                                         "checks": [{"label": c.label, "ok": c.ok, "seconds": round(c.seconds, 1),
                                                     "findings": c.audit_findings + c.quorum_findings
                                                     + c.live_mismatches} for c in result.checks]})
        summary["memory_mb_end"] = {str(k): v >> 20 for k, v in cluster.memory().items()}
        started = time.monotonic()
        cluster.stop()
        summary["stop_s"] = round(time.monotonic() - started, 1)
    from kraftspec.traces.metalog.audit import audit_paths
    from kraftspec.traces.metalog.quorum import audit_quorum

    data_dirs = [str(d) for d in cluster.data_dirs()]
    final = audit_paths(data_dirs)
    quorum = audit_quorum(data_dirs)
    summary["final_audit_ok"], summary["final_quorum_ok"] = final.ok, quorum.ok
    summary["final_findings"] = ([f"{v.rule} at {v.offset}: {v.explanation}" for d in final.directories
                                  for v in d.violations] + [f"{f.path}: {f.error}" for d in final.directories
                                                            for f in d.errors]
                                 + [f"{v.rule} at {v.offset} in {v.replica}: {v.explanation}" for v in quorum.violations])
    summary["committed_end"] = quorum.committed_end
    log(f"after stopping: audit {'clean' if final.ok else 'FINDINGS'}, quorum audit "
        f"{'clean' if quorum.ok else 'FINDINGS'} (committed prefix to offset {quorum.committed_end})")
    for finding in summary["final_findings"]:
        log(f"    {finding}")
    summary["ok"] = (summary["initial_ok"] and all(s["ok"] for s in summary["scenarios"]) and final.ok and quorum.ok)
    if not keep and folder is None and summary["ok"]:
        shutil.rmtree(root, ignore_errors=True)
        summary["folder"] = None
    return summary


def cluster_command(action: str, version: str, layout: str, scenarios: list[str], seed: int, folder: Optional[str],
                    keep: bool, as_json: bool, tool: bool = True, network: Optional[str] = None,
                    quorum: str = "static") -> int:
    if action == "fetch":
        try:
            path = jars.classpath(version)
        except jars.JarsUnavailable as exc:
            print(f"kraftspec cluster: {exc}", file=sys.stderr)
            return EXIT_ERROR
        print(f"Kafka {version}: {len(path.split(':'))} jars on the class path")
        return EXIT_OK
    if action == "list":
        for name, fn in SCENARIOS.items():
            print(f"{name:26} {' '.join((fn.__doc__ or '').split())}")
        return EXIT_OK
    default = DYNAMIC if quorum == "dynamic" and layout == "separate" else \
        COMBINED if layout == "combined" else SEPARATE
    names = scenarios or default
    if names == ["all"]:
        names = default
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        print(f"kraftspec cluster: unknown scenario(s) {unknown}; known: {', '.join(SCENARIOS)}", file=sys.stderr)
        return EXIT_ERROR
    if quorum == "dynamic" and jars.version_tuple(version) < (4, 0, 0):
        print(f"kraftspec cluster: --quorum dynamic needs Kafka 4.0 or later, not {version}", file=sys.stderr)
        return EXIT_ERROR
    try:
        netns.choose_mode(network)  # an unknown or unavailable mode is refused before any folder is made
        summary = run_cluster(version, layout, names, seed, folder, keep, tool,
                              log=(lambda line: print(line, file=sys.stderr, flush=True)) if as_json else _say,
                              network=network, quorum=quorum)
    except (ClusterError, jars.JarsUnavailable, netns.NetworkError) as exc:
        print(f"kraftspec cluster: {exc}", file=sys.stderr)
        return EXIT_ERROR
    if as_json:
        print(json.dumps(summary, indent=2))
    else:
        for s in summary["scenarios"]:
            print(f"{s['name']:26} seed {s['seed']:<6} {'OK' if s['ok'] else 'FAILED':7} {s['seconds']:6.1f} s"
                  + (f"  {s['error']}" if s["error"] else ""))
        print(f"cluster: {'OK' if summary['ok'] else 'FINDINGS'} ({summary['network']} mode: "
              f"{summary['network_reason']}); start-up {summary['timings']['start_s']} s, memory {summary['memory_mb']} MB")
    return EXIT_OK if summary["ok"] else EXIT_FINDING
