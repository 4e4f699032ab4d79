"""The TLC bridge against real TLC runs on the small modules in tests/tla/."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from kraftspec.spec.state_graph import load_dot, state_graph, state_key
from kraftspec.spec.tla_values import Fn, ModelValue, record
from kraftspec.spec.tlc import (
    TlcConfigError,
    TlcNotAvailable,
    TlcParseError,
    TlcTimeout,
    TraceStep,
    read_simulation_trace,
    run_tlc,
)

TLA = Path(__file__).parent / "tla"
N1 = ModelValue("n1")


def test_counter_passes_with_hand_counted_states() -> None:
    result = run_tlc(TLA / "Counter.tla", timeout_s=120)
    assert (result.verdict, result.distinct_states, result.states_generated, result.depth) == ("ok", 6, 8, 4)
    assert (result.violated, result.trace, result.error_message) == (None, [], None)
    assert "@!@!@STARTMSG 2193" in result.output


def test_invariant_violation_trace() -> None:
    result = run_tlc(TLA / "Election.tla", timeout_s=120)
    assert (result.verdict, result.violated) == ("invariant_violated", "EpochBelowTwo")
    entry1 = record(node=N1, epoch=1)
    assert result.trace == [
        TraceStep(None, {"epoch": 0, "leader": "none", "log": ()}),
        TraceStep("Elect", {"epoch": 1, "leader": N1, "log": (entry1,)}),
        TraceStep("Elect", {"epoch": 2, "leader": N1, "log": (entry1, record(node=N1, epoch=2))}),
    ]


def test_deadlock_when_checked() -> None:
    result = run_tlc(TLA / "Counter.tla", check_deadlock=True, timeout_s=120)
    assert result.verdict == "deadlock"
    assert result.trace[0] == TraceStep(None, {"x": 0, "y": 0})
    assert result.trace[-1].state == {"x": 2, "y": 1}
    assert sorted(step.action for step in result.trace[1:]) == ["IncX", "IncX", "IncY"]


def test_liveness_violation_ends_stuttering() -> None:
    result = run_tlc(TLA / "Counter.tla", TLA / "Liveness.cfg", timeout_s=120)
    assert result.verdict == "property_violated"
    assert result.trace[0] == TraceStep(None, {"x": 0, "y": 0})
    assert result.loop_index == len(result.trace) - 1


def test_parse_error_names_file_and_line() -> None:
    with pytest.raises(TlcParseError) as err:
        run_tlc(TLA / "SyntaxError.tla", timeout_s=120)
    message = str(err.value)
    assert "SyntaxError.tla" in message and "line 6, column 20" in message
    assert "\n" not in message
    assert err.value.result is not None and "Parse Error" in err.value.result.output


def test_abort_at_no_location_gives_its_reason(tmp_path: Path) -> None:
    (tmp_path / "Missing.tla").write_text("---- MODULE Missing ----\nEXTENDS Naturals, NoSuchModule\nVARIABLE x\n"
                                          "Init == x = 0\nNext == x' = x\n====\n")
    (tmp_path / "Missing.cfg").write_text("INIT Init\nNEXT Next\n")
    with pytest.raises(TlcParseError) as err:
        run_tlc(tmp_path / "Missing.tla", timeout_s=120)
    assert "Cannot find source file for module NoSuchModule imported in module Missing" in str(err.value)


def test_standard_modules_are_read_from_a_directory_of_the_run_alone() -> None:
    """SANY copies Naturals.tla out of the jar into java.io.tmpdir; parallel runs must not share that copy."""
    result = run_tlc(TLA / "Counter.tla", timeout_s=120)
    read = [Path(line.split("Parsing file ", 1)[1]) for line in result.output.splitlines()
            if line.startswith("Parsing file ") and line.endswith("Naturals.tla")]
    assert len(read) == 1 and read[0].parent.name.startswith("kraftspec-sany-"), read
    assert not read[0].parent.exists()  # removed with the run


def test_config_naming_missing_invariant() -> None:
    with pytest.raises(TlcConfigError, match="MissingInvariant.cfg: The invariant NoSuchInvariant specified"):
        run_tlc(TLA / "Counter.tla", TLA / "MissingInvariant.cfg", timeout_s=120)


def test_missing_config_file() -> None:
    with pytest.raises(TlcConfigError, match="Nope.cfg: the file does not exist"):
        run_tlc(TLA / "Counter.tla", TLA / "Nope.cfg", timeout_s=120)


def _processes_mentioning(text: str) -> list[int]:
    """Pids of live processes whose command line contains ``text``."""
    pids = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if text.encode() in cmdline.read_bytes():
                pids.append(int(cmdline.parent.name))
        except OSError:
            continue
    return pids


def test_timeout_kills_tlc() -> None:
    start = time.monotonic()
    with pytest.raises(TlcTimeout, match="within 3 s") as err:
        run_tlc(TLA / "Unbounded.tla", timeout_s=3)
    assert time.monotonic() - start < 3 + 5
    result = err.value.result
    assert result is not None and result.verdict == "timeout"
    metadir = result.command[result.command.index("-metadir") + 1]
    assert _processes_mentioning(metadir) == []
    assert not Path(metadir).exists()


def test_java_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(TlcNotAvailable, match="no `java` executable on PATH"):
        run_tlc(TLA / "Counter.tla", timeout_s=120)


def test_counter_state_graph_matches_hand_computed() -> None:
    graph, result = state_graph(TLA / "Counter.tla", timeout_s=120)
    assert result.verdict == "ok"

    def k(x: int, y: int) -> object:
        return state_key({"x": x, "y": y})

    assert set(graph.nodes) == {k(x, y) for x in range(3) for y in range(2)}
    assert [n for n, initial in graph.nodes(data="initial") if initial] == [k(0, 0)]
    assert graph.nodes[k(1, 0)]["state"] == {"x": 1, "y": 0}
    expected = {(k(x, y), k(x + 1, y), "IncX") for x in range(2) for y in range(2)}
    expected |= {(k(x, 0), k(x, 1), "IncY") for x in range(3)}
    assert sorted(graph.edges(data="action"), key=repr) == sorted(expected, key=repr)
    assert graph.number_of_edges() == 7


def test_graph_with_escapes_and_long_values() -> None:
    graph, _ = state_graph(TLA / "Escapes.tla", timeout_s=120)
    a, b = ModelValue("a"), ModelValue("b")
    init = {"msg": 'say "hi" \\ bye', "log": (), "owner": Fn({1: a, 3: b})}
    entries = tuple(
        record(text='say "hi" \\ bye', index=i, peers=frozenset({a, b}), votes=Fn({a: True, b: False}))
        for i in range(1, 5)
    )
    written = {**init, "log": entries}
    assert dict(graph.nodes(data="state")) == {state_key(init): init, state_key(written): written}
    assert list(graph.edges(data="action")) == [(state_key(init), state_key(written), "Write")]


def test_load_dot_joins_states_defined_after_their_edges(tmp_path: Path) -> None:
    dot = tmp_path / "g.dot"
    dot.write_text(
        'strict digraph DiskGraph {\n1 [label="/\\\\ s = \\"a\\\\\\\\b\\"",style = filled]\n'
        '1 -> -2 [label="Go",color="black",fontcolor="black"];\n1 -> -2 [label="Go",color="black"];\n'
        '1 -> 1 [label="Stay",color="black"];\n-2 [label="/\\\\ s = <<1,\\n 2>>"];\n}\n'
    )
    graph = load_dot(dot)
    first, second = state_key({"s": "a\\b"}), state_key({"s": (1, 2)})
    assert sorted(graph.edges(data="action"), key=repr) == sorted(
        [(first, second, "Go"), (first, first, "Stay")], key=repr
    )
    assert dict(graph.nodes(data="initial")) == {first: True, second: False}


def test_simulation_writes_readable_traces(tmp_path: Path) -> None:
    result = run_tlc(TLA / "Counter.tla", simulate=f"file={tmp_path}/trace,num=3", depth=10, seed=7, timeout_s=120)
    assert result.verdict == "ok"
    traces = [read_simulation_trace(path) for path in sorted(tmp_path.iterdir())]
    assert len(traces) >= 3
    for trace in traces:
        assert trace[0] == {"x": 0, "y": 0}
        assert trace[-1] == {"x": 2, "y": 1}
        assert len(trace) == 4


def test_liveness_violation_with_lasso() -> None:
    result = run_tlc(TLA / "Lasso.tla", timeout_s=120)
    assert (result.verdict, result.loop_index) == ("property_violated", 0)
    assert result.trace == [TraceStep(None, {"x": 0}), TraceStep("Flip", {"x": 1})]
