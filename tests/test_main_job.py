"""The main job (kraftspec.main_job): one TLC run per config gives the verdict and TLC's side of the agreement; the
stages run in worker processes (a mutant named in the environment applied in each) and the report keeps its order."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kraftspec import main_job


def test_one_tlc_run_gives_the_verdict_and_the_agreement() -> None:
    (tlc_section, tlc_status, tlc), (agree_section, agree_status, agree) = main_job.spec_job("controller", 600.0, 1)
    assert (tlc_section, tlc_status, agree_section, agree_status) == (main_job.TLC, 0, main_job.AGREE, 0), (tlc, agree)
    distinct = re.match(r"TLC ControllerRegistration: ok, (\d+) distinct states", tlc)
    states = re.match(r"agree controller: (\d+) states, \d+ edges, identical", agree)
    assert distinct and states and distinct.group(1) == states.group(1), (tlc, agree)


def test_the_report_keeps_its_order_and_a_mutant_reaches_every_worker(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)  # no checkout here: the scenario stage says so
    monkeypatch.setenv("KRAFTSPEC_MUTANT", "controller-stale-incarnation-accepted")  # caught by the agreement
    status = main_job.run_main(["controller"], deep=False, timeout_s=600.0, workers=1, jobs=2)
    out = capsys.readouterr().out
    assert status == main_job.EXIT_FINDING, out
    headings = [out.index(heading) for heading in main_job.HEADINGS.values()]
    assert headings == sorted(headings), out
    tlc, agree, scenarios, traces, audit = (out[start:end] for start, end in zip(headings, [*headings[1:], len(out)]))
    assert re.search(r"TLC ControllerRegistration: ok, \d+ distinct states", tlc), out
    assert "agree controller: DIFFERENT" in agree, out
    assert "no kraftspec checkout here" in scenarios and "checked " in traces and "audit: " in audit, out
    assert out.rstrip().splitlines()[-1].startswith("main: FINDINGS above"), out
