"""The main job (``kraftspec main``): its stages run side by side on the machine's cores, its report prints in one
fixed order.

Each spec's TLC run is the agreement's run: TLC dumps the state graph while it checks the config's invariants and
properties (and the reference is explored meanwhile), so one run gives both the model-checking verdict and TLC's side
of the agreement. The other stages (the
``.deep.cfg`` runs under ``--deep``, the bundled traces, the audit) are independent jobs in worker processes, and the
scenario tests a pytest subprocess started first. A job's text is printed under its section once every earlier
part of the report is printed, so the report reads the same whichever job finishes first.
"""

from __future__ import annotations

import io
import multiprocessing
import subprocess
import sys
import tempfile
import time
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path
from typing import IO, TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from kraftspec.spec.tlc import TlcResult

EXIT_OK, EXIT_FINDING, EXIT_ERROR = 0, 1, 2

TLC, AGREE, SCENARIOS, TRACES, AUDIT = "tlc", "agree", "scenarios", "traces", "audit"
HEADINGS = {
    TLC: "== Model checking (TLC) ==",
    AGREE: "== Spec / reference agreement ==",
    SCENARIOS: "== Kafka's scenarios, replayed through the reference ==",
    TRACES: "== The bundled TLC-recorded traces, replayed through the reference (kraftspec check) ==",
    AUDIT: "== Audit of the bundled real KRaft metadata logs ==",
}
REAL_CLUSTER_SCENARIOS = "test_cluster_scenarios.py"  # a real Kafka cluster under faults: with --deep only

Part = tuple[str, int, str]  # (section, exit status, text)


def tlc_report(name: str, result: "TlcResult") -> tuple[int, str]:
    """TLC's line for one run and, unless the verdict is ok, what was violated and the error trace with action names."""
    from kraftspec.spec.tla_parse import to_tla

    lines = [f"TLC {name}: {result.verdict}, {result.distinct_states} distinct states "
             f"({result.states_generated} generated, depth {result.depth}) in {result.duration:.1f} s"]
    if result.verdict == "ok":
        return EXIT_OK, lines[0]
    lines.append(f"  violated: {result.violated or result.error_message or result.verdict}; error trace:")
    for index, step in enumerate(result.trace, start=1):
        lines.append(f"  {index}. {step.action or 'initial state'}")
        lines.extend(f"       /\\ {variable} = {to_tla(value)}" for variable, value in sorted(step.state.items()))
    return EXIT_FINDING, "\n".join(lines)


def spec_job(component: str, timeout_s: float, workers: int) -> list[Part]:
    """One TLC run of the component's spec, its state graph dumped, while the reference is explored (as ``kraftspec
    agree``): TLC's verdict, then the agreement of the two graphs (a difference explained by the exact check)."""
    from kraftspec.spec.agree import check_agreement, explain, graph_from_dot, load_model
    from kraftspec.spec.agree_fingerprint import check_fingerprints
    from kraftspec.spec.tlc import TlcError

    parts: list[Part] = []
    for model in load_model(component).under_each_config():  # the spec's .cfg, then any extra configs
        with tempfile.TemporaryDirectory(prefix="kraftspec-main-") as tmp:
            dot = Path(tmp) / "states.dot"
            try:
                check = check_fingerprints(model, dot, timeout_s=timeout_s, workers=workers)
            except TlcError as exc:
                parts += [(TLC, EXIT_ERROR, f"TLC {model.run_name}: error: {exc}"),
                          (AGREE, EXIT_ERROR, f"agree {component}: error: {exc}")]
                continue
            assert check.tlc is not None  # run by check_fingerprints
            tlc = (TLC, *tlc_report(model.run_name, check.tlc))
            report = check.report
            text = report.summary() + (f"  ({model.config_path.name}; TLC and reading its graph "
                                       f"{report.tlc_seconds:.1f} s, reference {report.reference_seconds:.1f} s)")
            if report.identical:
                parts += [tlc, (AGREE, EXIT_OK, text)]
                continue
            exact = check_agreement(model, spec=(graph_from_dot(dot), report.tlc_seconds))
            parts += [tlc, (AGREE, EXIT_FINDING, text + "\n" + explain(exact, model))]
    return parts


def deep_job(component: str, timeout_s: float, workers: int) -> list[Part]:
    """TLC alone on the component's ``.deep.cfg`` (bounds too large for the agreement)."""
    from kraftspec.spec.agree import load_model
    from kraftspec.spec.tlc import TlcError, run_tlc

    model = load_model(component)
    deep = model.module_path.with_suffix(".deep.cfg")
    name = f"{model.spec_module} ({deep.name})"
    try:
        result = run_tlc(model.module_path, deep, timeout_s=timeout_s, workers=workers)
    except TlcError as exc:
        return [(TLC, EXIT_ERROR, f"TLC {name}: error: {exc}")]
    return [(TLC, *tlc_report(name, result))]


def traces_job() -> list[Part]:
    """``kraftspec check`` on every bundled ``traces/tla/*.jsonl.gz``: the per-component lines, the totals and any
    divergence in full (one line per conformant trace is left out)."""
    from kraftspec import traces
    from kraftspec.traces.replay.check import check_command

    bundled = sorted(str(p) for p in (Path(traces.__file__).parent / "tla").glob("*.jsonl.gz"))
    buffer = io.StringIO()
    status = check_command(bundled, False, buffer)
    text = "\n".join(line for line in buffer.getvalue().splitlines() if ": conformant (" not in line)
    return [(TRACES, status, text)]


def audit_job() -> list[Part]:
    """The audit of the bundled real KRaft metadata logs."""
    from kraftspec.traces.metalog.audit import audit_paths
    from kraftspec.traces.metalog.corpus import data_dirs

    report = audit_paths([str(p) for p in data_dirs()])
    if report.ok:
        return [(AUDIT, EXIT_OK, report.summary_line())]
    return [(AUDIT, EXIT_FINDING, report.summary_line() + "\n" + report.render())]


def scenario_tests(deep: bool) -> Optional[list[Path]]:
    """The scenario test files of a kraftspec checkout (the current directory or above), if there is one; the real
    cluster's scenarios only when ``deep``."""
    for folder in (Path.cwd(), *Path.cwd().parents):
        tests = folder / "tests"
        if (folder / "pyproject.toml").exists() and tests.is_dir():
            return sorted(f for f in tests.glob("test_*_scenarios.py") if deep or f.name != REAL_CLUSTER_SCENARIOS)
    return None


def _scenario_part(process: Optional["subprocess.Popen[str]"], stdout: IO[str], stderr: IO[str]) -> Part:
    """pytest's closing line (its error output when it printed nothing)."""
    if process is None:
        return (SCENARIOS, EXIT_OK,
                "scenarios: no kraftspec checkout here (run from the repository to replay tests/test_*_scenarios.py)")
    process.wait()
    stdout.seek(0)
    stderr.seek(0)
    out = stdout.read().strip()
    return (SCENARIOS, EXIT_OK if process.returncode == 0 else EXIT_FINDING, out.splitlines()[-1] if out else stderr.read())


def _apply_mutant() -> None:  # each worker process, as the parent: the mutant KRAFTSPEC_MUTANT names, if any
    from kraftspec.mutants import apply_from_environment

    apply_from_environment()


def _has_deep_config(component: str) -> bool:
    from kraftspec.spec.agree import load_model

    return load_model(component).module_path.with_suffix(".deep.cfg").exists()


def run_main(components: list[str], *, deep: bool, timeout_s: float, workers: int, jobs: int) -> int:
    """Run every stage (``jobs`` worker processes), print the report in its fixed order, return the exit status."""
    started = time.perf_counter()
    files = scenario_tests(deep)
    stdout, stderr = tempfile.TemporaryFile("w+"), tempfile.TemporaryFile("w+")  # never a full pipe that stops it
    scenarios = None if files is None else subprocess.Popen(  # -n 0: one process; the jobs below use the cores
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0", *map(str, files)],
        stdout=stdout, stderr=stderr, text=True)
    status = EXIT_OK
    pool = ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn"),
                               initializer=_apply_mutant)
    try:
        # submitted the longest first (the deep runs), listed in the report's order (a component's deep run after it)
        deep_runs = {c: pool.submit(deep_job, c, timeout_s, workers) for c in components if deep and _has_deep_config(c)}
        report: list[Future[list[Part]]] = []
        for component in components:
            report.append(pool.submit(spec_job, component, timeout_s, workers))
            report += [deep_runs[component]] if component in deep_runs else []
        report += [pool.submit(traces_job), pool.submit(audit_job)]
        for section, heading in HEADINGS.items():
            print(("" if section == TLC else "\n") + heading, flush=True)
            for future in [None] if section == SCENARIOS else report:
                parts = [_scenario_part(scenarios, stdout, stderr)] if future is None else future.result()
                for part_section, part_status, text in parts:
                    if part_section == section:
                        print(text, flush=True)
                        status = max(status, part_status)
    finally:  # on an error or an interrupt, no job is left running
        pool.shutdown(cancel_futures=True)
        if scenarios is not None and scenarios.poll() is None:
            scenarios.kill()
            scenarios.wait()
        stdout.close()
        stderr.close()
    print(f"\nmain: {'all checks passed' if status == EXIT_OK else 'FINDINGS above'} "
          f"in {time.perf_counter() - started:.0f} s")
    return status
