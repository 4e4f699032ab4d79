"""``kraftspec validate``: the one-process engine, the accounting of unreadable input, the mutant share, audits."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from support_validate import make_bad_set

from kraftspec.traces.format import parquet
from kraftspec.traces.recording.generate import generate_command, mutant_plan
from kraftspec.traces.metalog.corpus import data_dirs, largest_log
from kraftspec.traces.recording.broker_simulate import generate_sim
from kraftspec.traces.engines.validate import EXIT_ERROR, EXIT_FINDING, EXIT_OK, validate_command
from kraftspec.traces.engines.trace_units import plan, validate_unit


def run(paths: list[str], report: Path, engine: str = "local", audit: bool = False) -> tuple[int, str]:
    out = io.StringIO()
    return validate_command(paths, engine, str(report), audit=audit, out=out, show_progress=False), out.getvalue()


def rows(report: Path) -> list[dict[str, Any]]:
    return pq.read_table(report).to_pylist()


def test_every_row_is_accounted_for_and_each_unreadable_row_says_why(tmp_path: Path) -> None:
    files = make_bad_set(tmp_path / "set")
    code, text = run([str(tmp_path / "set")], tmp_path / "report.parquet")
    report = {(Path(r["file"]).stem, r["row"]): r for r in rows(tmp_path / "report.parquet")}
    assert code == EXIT_ERROR, text
    assert len(report) == 6 + 1 + 3 + 3 + 4
    assert [report["good", i]["verdict"] for i in range(6)] == ["conformant"] * 6
    assert report["corrupt", None]["verdict"] == "unreadable"
    assert "not a readable Parquet file" in report["corrupt", None]["reason"]
    assert {report["no_steps", i]["reason"] for i in range(3)} == {"missing column(s) steps (absent from the file or null)"}
    assert report["mixed", 0]["verdict"] == "conformant"
    assert "trace format version 2.0 is not supported" in report["mixed", 1]["reason"]
    assert "missing column(s) initial" in report["mixed", 2]["reason"]
    assert [report["bad_group", i]["verdict"] for i in range(4)] == ["unreadable"] * 2 + ["conformant"] * 2
    assert "row group 0 (rows 0-1) unreadable" in report["bad_group", 0]["reason"]
    assert f"validated 17 traces ({6 * 12 + 5 + 2 * 5} steps): 9 conformant, 0 divergent, 8 unreadable" in text
    assert str(files["good"]) in {r["file"] for r in report.values()}


def test_a_mutant_share_is_exact_and_its_divergences_name_step_rule_and_diff(tmp_path: Path) -> None:
    assert sum(m is not None for m in mutant_plan(1000, 0.01, ["a", "b"])) == 10
    out = tmp_path / "sim.parquet"
    assert generate_command("sim", str(out), 40, 3, 30, mutant_share=0.25, row_group=8, stream=io.StringIO()) == EXIT_OK
    assert pq.ParquetFile(out).num_row_groups == 5
    code, text = run([str(out)], tmp_path / "report.parquet")
    report = rows(tmp_path / "report.parquet")
    mutated = [json.loads(r["meta"]).get("mutant") for r in pq.read_table(out, columns=["meta"]).to_pylist()]
    assert sum(m is not None for m in mutated) == 10
    divergent = [r for r in report if r["verdict"] == "divergent"]
    assert divergent and code == EXIT_FINDING, text
    assert all(mutated[r["row"]] is not None for r in divergent)  # only mutant traces diverge
    first = divergent[0]
    assert first["rule"].startswith("kraftspec.reference.broker.") and first["diff"] and first["step"] >= 0
    assert "divergences per rule" in text and first["rule"] in text


def test_validate_unit_reads_one_row_group_in_bounded_batches(tmp_path: Path) -> None:
    out = tmp_path / "sim.parquet"
    parquet.write_parquet(out, generate_sim(9, 10, 4), batch_size=10)
    (unit,) = plan([str(out)])
    batches = list(validate_unit(unit, batch_rows=3))
    assert [b.num_rows for b in batches] == [3, 3, 3, 1]
    assert [r["row"] for b in batches for r in b.to_pylist()] == list(range(10))


def test_no_input_found_is_an_error(tmp_path: Path) -> None:
    code, text = run([str(tmp_path)], tmp_path / "report.parquet")
    assert code == EXIT_ERROR and "no Parquet trace files (or no rows in them) found" in text


def test_audits_run_through_the_engine_one_row_per_data_directory(tmp_path: Path) -> None:
    corpus = data_dirs()
    broken = tmp_path / "00000000000000000000.log"
    data = bytearray(largest_log().read_bytes())
    data[100:110] = bytes(10)  # a zeroed batch header: a format error naming the file and the offset
    broken.write_bytes(bytes(data))
    paths = [str(corpus[0].parent.parent), str(tmp_path / "missing"), str(broken)]
    code, text = run(paths, tmp_path / "audit.parquet", audit=True)
    report = {r["path"]: r for r in rows(tmp_path / "audit.parquet")}
    assert set(report) == {str(p) for p in corpus} | set(paths[1:]), text
    assert all(report[str(p)]["verdict"] == "ok" and report[str(p)]["records"] > 0 for p in corpus)
    assert report[str(broken)]["verdict"] == "unreadable" and f"{broken}:99:" in report[str(broken)]["reason"]
    assert report[paths[1]]["verdict"] == "unreadable" and "no such file" in report[paths[1]]["reason"]
    assert code == EXIT_ERROR and f"audited {len(corpus) + 2} paths: {len(corpus)} ok, 0 violations, 0 meta.properties refused, 2 unreadable" in text


@pytest.mark.parametrize("bad", [{"engine": "flink"}, {"engine": "local", "master": "local[2]"}])
def test_bad_options_are_refused(tmp_path: Path, bad: dict[str, str]) -> None:
    out = io.StringIO()
    assert validate_command([str(tmp_path)], report=str(tmp_path / "r.parquet"), out=out, **bad) == EXIT_ERROR
    assert "validate: error:" in out.getvalue()


def test_generate_and_validate_from_the_command_line(tmp_path: Path) -> None:
    out = tmp_path / "set.parquet"
    command = [sys.executable, "-m", "kraftspec.cli"]
    made = subprocess.run([*command, "generate", "sim", "--traces", "4", "--steps", "6", "--mutant-share", "0.5",
                           "--row-group", "3", "--seed", "5", "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert made.returncode == 0 and "(seed 5, mutant share 0.5)" in made.stdout, made.stderr
    assert pq.ParquetFile(out).metadata.num_row_groups == 2
    checked = subprocess.run([*command, "validate", str(out), "--engine", "local", "--report", str(tmp_path / "r.parquet")],
                             capture_output=True, text=True, timeout=300)
    assert checked.returncode in (EXIT_OK, EXIT_FINDING), checked.stdout + checked.stderr
    assert "validated 4 traces (24 steps)" in checked.stdout and "Traceback" not in checked.stderr
