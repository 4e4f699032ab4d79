"""The controller component's behaviours that differ between Kafka versions, each shown by a minimal case.

Run: ``python benchmarks/controller_versions.py [--kafka 3.9.1 4.0.1 4.1.1 4.2.0 4.3.1 4.4.0]``.
For every case (a few inputs from an explicit initial state) and every Kafka version, Kafka's own classes run the
inputs (``kraftspec.harness``), and the reference judges Kafka's run twice: with the behaviour of that version
(``differential_controller.profile``: it must agree) and with each other behaviour (where the case differs, it
disagrees). It prints, per case, what Kafka answered on each version and which behaviours' reference agrees, as a
Markdown table, and exits 1 if some version disagrees with its own behaviour.
"""

from __future__ import annotations

import argparse
import sys

from kraftspec.differential_controller import VERSION_CASES as CASES, profile
from kraftspec.harness import jvm
from kraftspec.harness.adapter import hooks
from kraftspec.harness.conform import judge, kafka_trace
from kraftspec.reference.controller_registration import CONTROLLER_BEHAVIOURS
from kraftspec.traces.format.envelope import trace_from_json, trace_to_json

def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kafka", nargs="+", default=["3.9.1", "4.0.1", "4.1.1", "4.2.0", "4.3.1", "4.4.0"])
    args = parser.parse_args()
    component_hooks = hooks("controller")
    failures = 0
    rows = []
    for name, explicit, inputs, show in CASES:
        cells = []
        for version in args.kafka:
            own = profile(version).behaviour
            with jvm.KafkaProcess(version) as process:
                base = {"format": "1.0", "component": "controller", "id": name, "initial": {"explicit": explicit},
                        "steps": [{"input": i} for i in inputs]}
                try:
                    ran, refusal = kafka_trace(trace_from_json({**base, "initial": {"explicit": {
                        **explicit, "behaviour": own}}}), process, component_hooks)
                except jvm.HarnessError as exc:
                    cells.append(f"not expressible ({str(exc).splitlines()[0]})")
                    continue
            seen = "refused" if refusal is not None else show(ran.steps)
            agreeing = []
            for behaviour in CONTROLLER_BEHAVIOURS:
                obj = trace_to_json(ran)
                obj["initial"] = {"explicit": {**explicit, "behaviour": behaviour}}
                if judge(trace_from_json(obj), refusal).conformant:
                    agreeing.append(behaviour)
            if own not in agreeing:
                failures += 1
            cells.append(f"{seen} (reference agrees as {', '.join(agreeing) or 'none'})")
        rows.append((name, cells))
    print("| case | " + " | ".join(args.kafka) + " |")
    print("|---|" + "---|" * len(args.kafka))
    for name, cells in rows:
        print(f"| {name} | " + " | ".join(cells) + " |")
    print(f"\n{failures} version(s) disagreeing with their own behaviour")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
