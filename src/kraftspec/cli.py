"""The ``kraftspec`` command: model checking, agreement, proofs, mutants and the main job."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Callable, Optional, Sequence

EXIT_OK, EXIT_FINDING, EXIT_ERROR = 0, 1, 2


def _components_with_specs() -> list[str]:
    """Components whose agreement model (and so whose spec) exists in this installation."""
    from kraftspec.spec.agree import COMPONENTS, load_model

    available = []
    for component in COMPONENTS:
        try:
            load_model(component)
        except KeyError:
            continue
        available.append(component)
    return available


def cmd_tlc(args: argparse.Namespace) -> int:
    """Model-check each component's spec with TLC: its config, then (``--deep``) its ``.deep.cfg`` (larger bounds)
    where one exists."""
    from kraftspec.main_job import tlc_report
    from kraftspec.spec.agree import load_model
    from kraftspec.spec.tlc import TlcError, run_tlc

    status = EXIT_OK
    if args.module:
        runs = [(Path(args.module).stem, Path(args.module), Path(args.config) if args.config else None)]
    else:
        models = [load_model(component) for component in args.components or _components_with_specs()]
        runs = []
        for m in models:
            runs += [(each.run_name, each.module_path, each.config_path) for each in m.under_each_config()]
            deep = m.config_path.with_suffix(".deep.cfg")  # larger bounds checked by TLC alone
            if args.deep and deep.exists():
                runs.append((f"{m.spec_module} ({deep.name})", m.module_path, deep))
    for name, module_path, config_path in runs:
        try:
            result = run_tlc(module_path, config_path, timeout_s=args.timeout, workers=args.workers)
        except TlcError as exc:
            print(f"TLC {name}: error: {exc}")
            status = EXIT_ERROR
            continue
        run_status, text = tlc_report(name, result)
        print(text)
        status = max(status, run_status)
    return status


def cmd_agree(args: argparse.Namespace) -> int:
    """Compare the reference's reachable graph with TLC's, per component, by fingerprints (under each spec's
    ``.deep.cfg`` with ``--deep``, where one exists); a difference is explained by the exact check where it fits."""
    import tempfile

    from kraftspec.spec.agree import check_agreement, explain, graph_from_dot, load_model
    from kraftspec.spec.agree_fingerprint import check_fingerprints, explain_fingerprints
    from kraftspec.spec.tlc import TlcError

    status = EXIT_OK
    runs = []
    for component in args.components or _components_with_specs():
        model = load_model(component)
        runs += [(component, model.deepened() or model)] if getattr(args, "deep", False) else [
            (component, each) for each in model.under_each_config()]
    for component, model in runs:
        with tempfile.TemporaryDirectory(prefix="kraftspec-agree-") as tmp:
            dot = Path(tmp) / "states.dot"
            try:
                check = check_fingerprints(model, dot, timeout_s=args.timeout, workers=args.workers,
                                           progress=(lambda line: print(line, flush=True)) if model.deep else None)
            except TlcError as exc:
                print(f"agree {component}: error: {exc}")
                status = EXIT_ERROR
                continue
            report = check.report
            print(report.summary() + f"  ({model.config_path.name}; TLC and reading its graph "
                  f"{report.tlc_seconds:.1f} s, reference {report.reference_seconds:.1f} s)", flush=True)
            if report.identical:
                continue
            status = max(status, EXIT_FINDING)
            if model.deep:
                print(explain_fingerprints(check, dot))
                continue
            exact = check_agreement(model, spec=(graph_from_dot(dot), report.tlc_seconds))
            print(explain(exact, model))
    return status


def cmd_prove(args: argparse.Namespace) -> int:
    """Run CrossHair over the contracts of each component."""
    from kraftspec.prove import PROOF_MODULES, prove

    unknown = [c for c in args.components if c not in PROOF_MODULES]
    if unknown:
        raise KeyError(f"unknown component {unknown[0]!r}; known: {', '.join(sorted(PROOF_MODULES))}")
    counts = {"confirmed": 0, "refuted": 0, "unknown": 0}
    for result in prove(args.components or list(PROOF_MODULES), args.per_condition_timeout):
        counts[result.verdict] += 1
        print(result.line())
    print(f"prove: {counts['confirmed']} confirmed, {counts['refuted']} refuted, {counts['unknown']} unknown")
    return EXIT_FINDING if counts["refuted"] else EXIT_OK


def cmd_mutants(args: argparse.Namespace) -> int:
    """List the deliberately wrong variants and the layers expected to catch each."""
    from kraftspec.mutants import all_mutants

    for mutant in sorted(all_mutants().values(), key=lambda m: (m.component, m.name)):
        print(f"{mutant.name:45} {mutant.component:11} caught by {', '.join(mutant.caught_by):35} {mutant.description}")
    return EXIT_OK


def cmd_audit(args: argparse.Namespace) -> int:
    """Audit KRaft metadata logs: read, CRC-check and replay every record through the reference's rules."""
    from kraftspec.traces.metalog.audit import audit_command
    from kraftspec.traces.metalog.corpus import data_dirs

    if args.quorum:  # the replicas' logs against each other (kraftspec.traces.metalog.quorum)
        from kraftspec.traces.metalog.quorum import quorum_command
        return quorum_command(args.paths, as_json=args.json)
    paths = args.paths or [str(p) for p in data_dirs()]
    return audit_command(paths, as_json=args.json)


def _positive(text: str) -> int:
    """An argument that must be a whole number of at least 1."""
    if not (text.isascii() and text.isdigit() and int(text) >= 1):
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return int(text)


def _jobs_or_all(jobs: Optional[int]) -> int:
    """``--jobs`` as given, or all the cores this process may use."""
    from kraftspec.traces.engines.jobs import default_jobs

    return default_jobs() if jobs is None else jobs


def cmd_check(args: argparse.Namespace) -> int:
    """Replay trace files through the reference; report each trace's first divergence."""
    if args.with_tlc:
        from kraftspec.traces.replay.tlc_validate import check_with_tlc
        return check_with_tlc(args.traces, as_json=args.json)
    from kraftspec.traces.replay.check import check_command
    return check_command(args.traces, as_json=args.json, jobs=_jobs_or_all(args.jobs))


def cmd_cluster(args: argparse.Namespace) -> int:
    """Real Kafka KRaft clusters (network namespaces, or 127.0.0.1 ports): fault scenarios, each followed by the
    audits and the live answers."""
    from kraftspec.cluster.command import cluster_command
    return cluster_command(args.action, args.kafka, args.layout, args.scenarios, args.seed, args.dir, args.keep,
                           args.json, tool=not args.no_tool, network=args.network, quorum=args.quorum)


def cmd_conform(args: argparse.Namespace) -> int:
    """Give each trace's inputs to Apache Kafka's own code and judge Kafka's outputs with the reference."""
    from kraftspec.harness.conform import conform_command
    return conform_command(args.traces, args.kafka, as_json=args.json, record=args.record)


def cmd_generate(args: argparse.Namespace) -> int:
    """Generate traces: seeded simulations (optionally under a mutant) or walks of TLC's state graph."""
    from kraftspec.traces.recording.generate import generate_command
    return generate_command(args.kind, args.out, args.traces, args.seed, args.steps, args.mutant, cover=args.cover,
                            mutant_share=args.mutant_share, row_group=args.row_group, component=args.component,
                            faults=args.faults, snapshots=args.snapshots, dynamic=args.dynamic)


def cmd_validate(args: argparse.Namespace) -> int:
    """Validate Parquet trace sets (or audit metadata logs) on Spark or in one process; Parquet report and summary."""
    from kraftspec.traces.engines.validate import validate_command
    return validate_command(args.paths, args.engine, args.report, args.master, args.audit, jobs=args.jobs)


def cmd_vectors(args: argparse.Namespace) -> int:
    """Export test vectors (one folder per case, with a manifest), or check a consumer's read log against them."""
    from kraftspec.traces.replay.vectors import vectors_command
    if args.verify and not args.read_log:
        print("kraftspec vectors: --verify needs --read-log FILE (the files a consumer run opened)", file=sys.stderr)
        return EXIT_ERROR
    if args.read_log and not args.verify:
        print("kraftspec vectors: --read-log is for --verify (check DIR against the files a consumer run opened); "
              "nothing exported", file=sys.stderr)
        return EXIT_ERROR
    if args.verify and args.traces:
        print("kraftspec vectors: --from is for exporting, not with --verify", file=sys.stderr)
        return EXIT_ERROR
    return vectors_command(args.folder, args.traces, args.read_log if args.verify else None, rules=args.rules)


def cmd_explain(args: argparse.Namespace) -> int:
    """Print rule-book entries: what a rule decides, Kafka's source, the KIP section, where they differ."""
    from kraftspec.rulebook import explain_command
    return explain_command(args.names, list_all=args.list)


def cmd_diff(args: argparse.Namespace) -> int:
    """Search (CrossHair diffbehavior) for inputs where a user's function and a reference rule disagree."""
    from kraftspec.diff import EXIT_ERROR, diff_command, list_command
    if args.list:
        return list_command()
    if args.function is None or args.rule is None:
        print("kraftspec diff: give MODULE:FUNC and RULE (or --list for the comparable rules)", file=sys.stderr)
        return EXIT_ERROR
    return diff_command(args.function, args.rule, max_iterations=args.max_iterations,
                        per_condition_timeout=args.per_condition_timeout)


def cmd_table(args: argparse.Namespace) -> int:
    """Print a generated documentation table."""
    from kraftspec.reference import describe_cluster_table

    print(describe_cluster_table.markdown())
    return EXIT_OK


def cmd_main(args: argparse.Namespace) -> int:
    """The main job on bundled inputs: TLC on every spec (its state graph compared with the reference's), the bundled
    scenarios and recorded traces, the audit of the bundled metadata logs; side by side on ``--jobs`` processes."""
    from kraftspec.main_job import run_main

    return run_main(_components_with_specs(), deep=args.deep, timeout_s=args.timeout, workers=args.workers,
                    jobs=_jobs_or_all(args.jobs))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kraftspec", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, handler: Callable[[argparse.Namespace], int], text: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=text, description=text)
        sub.set_defaults(handler=handler)
        return sub

    def tlc_options(sub: argparse.ArgumentParser) -> None:
        sub.add_argument("--timeout", type=float, default=2400.0, help="seconds allowed per TLC run (default 2400)")
        sub.add_argument("--workers", type=int, default=2, help="TLC worker threads (default 2)")

    def deep_option(sub: argparse.ArgumentParser) -> None:
        sub.add_argument("--deep", action="store_true",
                         help="also model-check each spec's .deep.cfg (larger bounds: tens of minutes on 2 cores)")

    main = add("main", cmd_main, "run the main job: TLC, agreement and scenarios, with a short report (--deep: also "
                                 "the .deep.cfg bounds and the real-cluster scenarios)")
    tlc_options(main)
    deep_option(main)
    main.add_argument("--jobs", type=_positive, help="worker processes for its stages (default: all cores)")
    tlc = add("tlc", cmd_tlc, "model-check component specs with TLC")
    tlc.add_argument("components", nargs="*", help="components (default: all with a spec)")
    tlc.add_argument("--module", help="check this TLA+ module instead of the components' specs")
    tlc.add_argument("--config", help="its TLC config (default: the .cfg beside the module)")
    tlc_options(tlc)
    deep_option(tlc)
    agree = add("agree", cmd_agree, "check that the reference and the TLA+ spec have the same state graph")
    agree.add_argument("components", nargs="*", help="components (default: all with a spec)")
    agree.add_argument("--deep", action="store_true",
                       help="under each spec's .deep.cfg where one exists (raft: about 10 million states)")
    tlc_options(agree)
    prove = add("prove", cmd_prove, "run CrossHair over the contracts in kraftspec.proofs")
    prove.add_argument("components", nargs="*", help="components (default: all)")
    prove.add_argument("--per-condition-timeout", type=float, default=10.0,
                       help="CrossHair's budget per condition, in seconds (default 10)")
    audit = add("audit", cmd_audit, "audit KRaft metadata logs (data directories, .log or .checkpoint files)")
    audit.add_argument("paths", nargs="*", help="data directories or files (default: the bundled corpus)")
    audit.add_argument("--json", action="store_true", help="print the report as JSON")
    audit.add_argument("--quorum", action="store_true",
                       help="quorum audit: check the replicas' metadata logs (DIR...: every replica's data directory, "
                            "or a folder holding them) against each other")
    cluster = add("cluster", cmd_cluster, "start a real Apache Kafka KRaft cluster, each node on a test host in its own "
                  "network namespace or on 127.0.0.1 ports (jars fetched with Maven), run seeded fault scenarios, and "
                  "audit it and compare its live answers after each")
    cluster.add_argument("action", choices=["run", "fetch", "list"],
                         help="run: start, run the scenarios, check, stop; fetch: only fetch the jars; list: scenarios")
    cluster.add_argument("scenarios", nargs="*", help="scenario names (default: all of the layout's; see `list`)")
    cluster.add_argument("--kafka", default="4.3.1", metavar="VERSION", help="the Kafka version (default 4.3.1)")
    cluster.add_argument("--layout", choices=["separate", "combined"], default="separate",
                         help="separate: 3 controllers + 3 brokers (default); combined: 3 broker+controller nodes")
    cluster.add_argument("--seed", type=int, default=0, help="the seed (scenario i gets seed+i; printed)")
    cluster.add_argument("--dir", help="the cluster's folder (default: a new temporary one, removed when all is OK)")
    cluster.add_argument("--keep", action="store_true", help="keep the temporary folder")
    cluster.add_argument("--json", action="store_true", help="print the summary as JSON")
    cluster.add_argument("--no-tool", action="store_true", help="skip the kafka-cluster list-endpoints runs (faster)")
    cluster.add_argument("--network", choices=["auto", "netns", "loopback"], default=None,
                         help="auto (default, or $KRAFTSPEC_CLUSTER_NETWORK): network namespaces when root may use them, "
                              "else 127.0.0.1 ports; netns: demand namespaces; loopback: force 127.0.0.1 ports")
    cluster.add_argument("--quorum", choices=["static", "dynamic"], default="static",
                         help="static: controller.quorum.voters (default); dynamic: KIP-853, formatted with "
                              "--initial-controllers, 3 controllers (one a spare observer) and 1 broker")
    check = add("check", cmd_check, "replay traces (.jsonl, .jsonl.gz, .parquet) through the reference")
    check.add_argument("traces", nargs="+", metavar="TRACES", help="trace files")
    check.add_argument("--json", action="store_true", help="print the report as JSON")
    check.add_argument("--jobs", type=_positive, metavar="N",
                       help="worker processes replaying the traces (default: all cores); the report is the same")
    check.add_argument("--with-tlc", action="store_true",
                       help="also validate each trace against the TLA+ spec with TLC; report both verdicts side by side")
    conform = add("conform", cmd_conform, "apply each trace's inputs to Apache Kafka's own classes (a JVM harness "
                  "built from Kafka's released jars) and judge Kafka's outputs with the reference")
    conform.add_argument("traces", nargs="+", metavar="TRACES", help="trace files (.jsonl, .jsonl.gz, .parquet)")
    conform.add_argument("--kafka", default="4.3.1", metavar="VERSION", help="the Kafka version (default 4.3.1)")
    conform.add_argument("--json", action="store_true", help="print the report as JSON")
    conform.add_argument("--record", metavar="OUT.jsonl", help="also write Kafka's runs as traces (kraftspec check replays them)")
    generate = add("generate", cmd_generate, "write seeded simulated or TLA+-recorded traces")
    generate.add_argument("kind", choices=["sim", "tla"], help="sim: simulation on the reference; tla: TLC's state graph")
    generate.add_argument("--traces", type=int, default=100, help="simulations, or random walks for tla (default 100)")
    generate.add_argument("--seed", type=int, default=0, help="the seed (printed with the result)")
    generate.add_argument("--steps", type=int,
                          help="steps per simulated trace (default 40; 150 with --dynamic, for voter changes to happen)")
    generate.add_argument("--mutant", help="record the simulation under this deliberately wrong variant")
    generate.add_argument("--faults", action="store_true",
                          help="sim --component raft: the network also fails requests and nodes shut down gracefully")
    generate.add_argument("--snapshots", action="store_true",
                          help="--component raft: nodes also create snapshots, clean their logs and fetch snapshots "
                               "(tla: the graph of KRaftQuorum.snapshots.cfg)")
    generate.add_argument("--dynamic", action="store_true",
                          help="sim --component raft: a kraft.version 1 quorum (voters 1-3 from the bootstrap checkpoint, "
                               "spare observers) whose voters an admin adds and removes (AddRaftVoter, RemoveRaftVoter)")
    generate.add_argument("--cover", choices=["kinds", "edges"], default="kinds",
                          help="tla: after the walks, cover every kind of transition or every edge (default kinds)")
    generate.add_argument("--mutant-share", type=float, default=0.0,
                          help="sim: record this share of the traces (0..1) under the component's mutants, in turn")
    generate.add_argument("--row-group", type=int, default=250,
                          help="Parquet traces per row group, validate's unit of work (default 250)")
    generate.add_argument("--out", required=True, help="output file: .jsonl, .jsonl.gz or .parquet")
    generate.add_argument("--component", choices=["broker", "partition", "raft", "controller", "features",
                                                   "listener", "shutdown", "voters", "requests", "autojoin"],
                          default="broker",
                          help="sim: broker or raft (one node of a simulated quorum); tla: broker, partition, controller, "
                               "features (broker traces of FeatureLevels.tla), raft, listener, shutdown, voters, "
                               "requests or autojoin (raft traces of the node KRaftListener.tla, KRaftShutdown.tla, "
                               "KRaftVoters.tla, KRaftRequests.tla or KRaftAutoJoin.tla follows), the "
                               "component whose spec's state graph is walked (default broker)")
    validate = add("validate", cmd_validate, "validate Parquet trace sets at scale (Spark or one process); "
                   "with --audit, audit many metadata logs")
    validate.add_argument("paths", nargs="+", metavar="PATH",
                          help="Parquet trace files or folders of them (with --audit: data directories or log files)")
    validate.add_argument("--engine", choices=["spark", "local"], default="spark",
                          help="spark: a Spark session, local[*] unless --master (default); local: one Python process")
    validate.add_argument("--master", help="Spark master URL, e.g. spark://HOST:7077 (default local[*])")
    validate.add_argument("--report", default="validate-report.parquet",
                          help="the report, one row per trace (default validate-report.parquet)")
    validate.add_argument("--audit", action="store_true", help="audit KRaft metadata logs instead of replaying traces")
    validate.add_argument("--jobs", type=_positive, metavar="N",
                          help="--engine local: worker processes (default: all cores); the report is the same")
    vectors = add("vectors", cmd_vectors, "export test vectors for other implementations (default source: the "
                  "bundled TLA+ traces), or with --verify check a consumer run's read log against the manifest")
    vectors.add_argument("folder", metavar="DIR", help="the vectors folder (written, or checked with --verify)")
    vectors.add_argument("--from", dest="traces", action="append", default=[], metavar="TRACES",
                         help="export the steps of these .jsonl/.jsonl.gz trace files instead (repeatable)")
    vectors.add_argument("--verify", action="store_true", help="check DIR against its manifest and --read-log")
    vectors.add_argument("--read-log", metavar="FILE", help="with --verify: the files a consumer run opened, one a line")
    vectors.add_argument("--rule", dest="rules", action="append", default=[], metavar="PATTERN",
                         help="only the rules an implementation covers (broker.heartbeat, heartbeat, 'raft/*'; "
                              "repeatable), for the export and for --verify")
    explain = add("explain", cmd_explain, "print the rule book's entry for a rule (what it decides, Kafka's source, "
                  "the KIP section, where they differ) or a section")
    explain.add_argument("names", nargs="*", metavar="RULE", help="e.g. broker.heartbeat, heartbeat, §1.5")
    explain.add_argument("--list", action="store_true", help="list every section and rule")
    diff = add("diff", cmd_diff, "search for inputs where your function and a reference rule disagree "
               "(CrossHair diffbehavior); print them as a pytest test")
    diff.add_argument("function", metavar="MODULE:FUNC", nargs="?",
                      help="your function, importable from the current directory")
    diff.add_argument("rule", metavar="RULE", nargs="?", help="a reference rule, e.g. broker_rules.session_expired")
    diff.add_argument("--list", action="store_true",
                      help="list the comparable rules with their signatures and domains (contract preconditions)")
    diff.add_argument("--max-iterations", type=int, default=100,
                      help="CrossHair's max_uninteresting_iterations (default 100)")
    diff.add_argument("--per-condition-timeout", type=float, default=20.0,
                      help="CrossHair's budget in CPU seconds (default 20)")
    table = add("table", cmd_table, "print generated documentation tables")
    table.add_argument("name", choices=["describe-cluster"],
                       help="describe-cluster: version x receiver x endpoint type x include-fenced")
    add("mutants", cmd_mutants, "list the deliberately wrong rule variants and the layers that catch them")
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    from kraftspec.mutants import apply_from_environment

    try:
        apply_from_environment()
        return int(args.handler(args))
    except KeyError as exc:  # unknown component or mutant: the message says which exist
        text = str(exc.args[0]) if exc.args else ""
        if "known: " not in text and "has no agreement model" not in text:
            return _internal_error(exc)  # a defect, not a user's typo: never printed as a bare `'key'`
        print(f"kraftspec: {_escape(text)}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # the reader went away (e.g. `| head`): stop quietly, as a Unix filter does
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the exit flush cannot fail again
        return EXIT_ERROR
    except Exception as exc:  # noqa: BLE001 - never a traceback, and never exit 1 (a finding) for a crash
        return _internal_error(exc)


def _escape(text: str) -> str:
    from kraftspec.traces.format.limits import one_line

    return one_line(text)


def _internal_error(exc: BaseException) -> int:
    """A failure no command turned into a message (a defect of kraftspec on this input): one paragraph, exit 2."""
    detail = _escape(f"{type(exc).__name__}: {exc}")
    print(f"kraftspec: internal error: {detail[:2000]} (exit 2: an error, not a finding; please report it with the "
          f"input that caused it)", file=sys.stderr)
    return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
