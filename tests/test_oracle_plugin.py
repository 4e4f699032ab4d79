"""The pytest plugin: ``--kraft-traces`` turns each trace into a test item; the ``oracle`` fixture."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

GOOD = ('{"format":"1.0","component":"broker","id":"%s","initial":{"standard":"broker/running-cluster"},"steps":['
        '{"input":{"action":"heartbeat","now":1,"request":{"broker_id":1,"broker_epoch":0,'
        '"current_metadata_offset":8,"want_fence":false,"want_shut_down":false}},'
        '"output":{"response":{"error":"NONE","is_fenced":%s}}}]}')


def test_each_trace_is_an_item_named_by_its_id(pytester: pytest.Pytester) -> None:
    pytester.makefile(".jsonl", traces="\n".join([
        GOOD % ("fine", "false"), GOOD % ("wrong", "true"), '{"format":"1.0"', GOOD.replace(
            '"1.0"', '"2.0"') % ("future", "false"), GOOD.replace('"id":"%s",', "") % "false"]) + "\n")
    result = pytester.runpytest("--kraft-traces", "traces.jsonl", "-v", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=3)
    result.stdout.fnmatch_lines([
        "*traces.jsonl::fine PASSED*",
        "*traces.jsonl::wrong FAILED*",
        "*traces.jsonl::line 3 FAILED*",
        "*traces.jsonl::line 4 FAILED*",
        "*traces.jsonl::line 5 PASSED*",
    ])
    result.stdout.fnmatch_lines([
        "*traces.jsonl:2 (wrong): DIVERGES at step 0 of 1: heartbeat",
        "*response.is_fenced: expected false, observed true",
        "*rule: kraftspec.reference.broker.heartbeat:*",
        "*traces.jsonl:3: error: invalid JSON*",
        "*traces.jsonl:4: error: format: trace format version 2.0 is not supported*",
    ])
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_keyword_selection_and_several_files(pytester: pytest.Pytester) -> None:
    pytester.makefile(".jsonl", a=GOOD % ("alpha", "false") + "\n", b=GOOD % ("beta", "false") + "\n")
    result = pytester.runpytest("--kraft-traces", "a.jsonl", "--kraft-traces", "b.jsonl", "-k", "beta",
                                "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, deselected=1)


def test_a_missing_file_is_a_usage_error(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--kraft-traces", "nope.jsonl", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*file or directory not found:*nope.jsonl*"])


def test_the_oracle_fixture(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_uses_oracle=f'''
GOOD = {GOOD!r}

def test_conformant(oracle):
    assert oracle.replay(GOOD % ("x", "false")).conformant
    oracle.assert_conformant(GOOD % ("x", "false"))

def test_divergent(oracle):
    oracle.assert_conformant(GOOD % ("y", "true"))
''')
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*trace y DIVERGES at step 0 of 1: heartbeat*"])


def test_parquet_rows_are_items(pytester: pytest.Pytester) -> None:
    from kraftspec.traces.format.parquet import write_parquet
    from kraftspec.traces.recording.broker_simulate import generate_sim

    write_parquet(pytester.path / "sim.parquet", generate_sim(seed=4, traces=3, steps=8))
    result = pytester.runpytest("--kraft-traces", "sim.parquet", "-v", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["*sim.parquet::sim-4-0 PASSED*"])
