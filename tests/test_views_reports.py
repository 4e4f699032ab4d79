"""Partial views, refused output fields, error codes by number, and reports that name the rule checks (issue 22).

Each behaviour is shown with a variant that must fail: a vote-only trace without its view diverges on the poll's
FetchRequest, a wrong vote inside the view still diverges, a misspelt output field is refused rather than
reported as a divergence, and an empty file is an error rather than a pass.
"""

from __future__ import annotations

import copy
import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kraftspec import oracle
from kraftspec.traces.replay.check import EXIT_ERROR, EXIT_FINDING, EXIT_OK, check_command

VOTE = {"action": "vote_request", "now": 5,
        "message": {"replica_id": 2, "replica_epoch": 1, "last_offset_epoch": 0, "last_offset": 0}}
VOTES_ONLY: dict[str, Any] = {
    "format": "1.0", "component": "raft", "id": "votes-only", "view": {"sends": ["VoteResponse"]},
    "initial": {"standard": "raft/fresh-voter"},
    "steps": [{"input": VOTE, "output": {"response": {"sends": [
        {"destination": 2, "type": "VoteResponse", "vote_granted": True}]}}}]}
HEARTBEAT: dict[str, Any] = {
    "format": "1.0", "component": "broker", "id": "stale", "initial": {"standard": "broker/running-cluster"},
    "steps": [{"input": {"action": "heartbeat", "now": 1, "request": {
        "broker_id": 1, "broker_epoch": 99, "current_metadata_offset": 0, "want_fence": False,
        "want_shut_down": False}}, "output": {"response": {"error": "STALE_BROKER_EPOCH"}}}]}


def _check(tmp_path: Path, *traces: dict[str, Any]) -> tuple[int, str]:
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for t in traces))
    out = io.StringIO()
    return check_command([str(path)], False, out), out.getvalue()


def test_a_vote_only_trace_conforms_within_its_view_and_diverges_without_it(tmp_path: Path) -> None:
    assert oracle.replay(VOTES_ONLY).conformant
    whole = {k: v for k, v in VOTES_ONLY.items() if k != "view"}
    divergence = oracle.replay(whole).divergence
    assert divergence is not None and str(divergence.diffs[0]).startswith('response.sends[1]: expected {"destination"')
    wrong = copy.deepcopy(VOTES_ONLY)
    wrong["steps"][0]["output"]["response"]["sends"][0]["vote_granted"] = False
    assert [str(d) for d in oracle.replay(wrong).divergence.diffs] == [  # type: ignore[union-attr]
        "response.sends[0].vote_granted: expected true, observed false"]


@pytest.mark.parametrize("view, message", [
    ({"sends": ["VoteRespnse"]}, "view.sends[0]: unknown type 'VoteRespnse'"),
    ({"records": ["VoteResponse"]}, "a raft trace restricts only sends"),
    ([], "view: expected a non-empty object"),
])
def test_a_malformed_view_is_refused(view: Any, message: str) -> None:
    with pytest.raises(oracle.TraceError, match=message.replace("[", r"\[").replace("]", r"\]")):
        oracle.replay({**VOTES_ONLY, "view": view})


def test_a_stated_send_outside_the_view_is_refused() -> None:
    outside = copy.deepcopy(VOTES_ONLY)
    outside["steps"][0]["output"]["response"]["sends"].append({"destination": 1, "type": "FetchRequest"})
    with pytest.raises(oracle.TraceError, match=r"steps\[0\].output.response.sends\[1\].type: 'FetchRequest' is "
                                                r"outside the trace's view"):
        oracle.replay(outside)


def test_a_broker_view_restricts_the_records_compared() -> None:
    registration = {"format": "1.0", "component": "broker", "initial": {"standard": "broker/running-cluster"},
                    "steps": [{"input": {"action": "fence_stale_broker", "now": 100}, "output": {"records": []}}]}
    assert not oracle.replay(registration).conformant  # the fencing record is missing
    assert oracle.replay({**registration, "view": {"records": ["RegisterBrokerRecord"]}}).conformant


def test_a_misspelt_output_field_is_refused_with_its_path(tmp_path: Path) -> None:
    misspelt = copy.deepcopy(HEARTBEAT)
    misspelt["steps"][0]["output"]["response"] = {"eror": "STALE_BROKER_EPOCH"}
    code, text = _check(tmp_path, misspelt)
    assert code == EXIT_ERROR
    assert "steps[0].output.response.eror: unknown field (the reference's heartbeat output has: error," in text
    assert _check(tmp_path, HEARTBEAT)[0] == EXIT_OK  # spelt right, the same step conforms
    in_a_send = copy.deepcopy(VOTES_ONLY)
    in_a_send["steps"][0]["output"]["response"]["sends"][0]["vote_grantd"] = True
    with pytest.raises(oracle.TraceError, match=r"steps\[0\].output.response.sends\[0\].vote_grantd: unknown field"):
        oracle.replay(in_a_send)
    in_post = copy.deepcopy(HEARTBEAT)
    in_post["steps"][0]["post"] = {"next_ofset": 9}
    with pytest.raises(oracle.TraceError, match=r"steps\[0\].post.next_ofset: unknown post-state field"):
        oracle.replay(in_post)


def test_error_codes_are_taken_as_numbers_in_every_component() -> None:
    numbered = copy.deepcopy(VOTES_ONLY)
    numbered["steps"][0]["output"]["response"]["sends"][0].update(error=0, partition_error=0)
    assert oracle.replay(numbered).conformant
    numbered["steps"][0]["output"]["response"]["sends"][0]["error"] = 74  # FENCED_LEADER_EPOCH: still compared
    assert [str(d) for d in oracle.replay(numbered).divergence.diffs] == [  # type: ignore[union-attr]
        'response.sends[0].error: expected "NONE", observed "FENCED_LEADER_EPOCH"']
    stale = copy.deepcopy(HEARTBEAT)
    stale["steps"][0]["output"]["response"]["error"] = 77  # STALE_BROKER_EPOCH
    assert oracle.replay(stale).conformant


def test_a_report_names_the_rule_checks_with_their_values_as_json(tmp_path: Path) -> None:
    wrong = copy.deepcopy(VOTES_ONLY)
    wrong["steps"][0]["output"]["response"]["sends"][0]["vote_granted"] = False
    code, text = _check(tmp_path, wrong)
    assert code == EXIT_FINDING
    assert ("kraftspec.reference.raft_rules.grant_vote(role=\"Unattached\", pre_vote=false, log_up_to_date=true, "
            "has_voted=false, vote_matches=false, leader_known=false, fetched_from_leader=false) -> true  <- decides") in text
    assert "can_start_election(is_voter=true) -> true\n" in text  # answered otherwise, the vote is the same
    assert "None" not in text.split("state before")[0] and "True" not in text.split("state before")[0]
    path = tmp_path / "t.jsonl"
    out = io.StringIO()
    check_command([str(path)], True, out)
    report = json.loads(out.getvalue())["traces"][0]["divergence"]
    assert report["diff"] == [{"path": "response.sends[0].vote_granted", "expected": True, "observed": False}]
    assert {"rule": "kraftspec.reference.raft_rules.is_log_up_to_date", "result": True, "decides": True,
            "args": {"last_epoch": 0, "end_offset": 0, "local_last_epoch": 0, "local_end_offset": 0}} in report["checks"]
    assert [c["decides"] for c in report["checks"] if c["rule"].endswith("bootstrap_server")] == [False]


def test_a_report_under_a_mutant_names_the_mutated_check(tmp_path: Path) -> None:
    from kraftspec.models.raft_mutants import MUTANTS
    from kraftspec.traces.replay.verdict import replay
    from kraftspec.traces.format.envelope import trace_from_json

    mutant = next(m for m in MUTANTS if m.target.endswith("is_log_up_to_date"))
    behind = copy.deepcopy(VOTES_ONLY)
    behind["initial"] = {"explicit": {"local_id": 1, "log": [{"epoch": 1, "record": "a"}, {"epoch": 1, "record": "b"}]}}
    behind["steps"][0]["input"]["message"].update(replica_epoch=2, last_offset_epoch=1, last_offset=1)
    behind["steps"][0]["output"]["response"]["sends"][0]["vote_granted"] = False
    verdict = replay(trace_from_json(behind), mutant.applied())
    assert verdict.divergence is not None
    assert any(c.rule.endswith("is_log_up_to_date") and c.result is True and c.decides
               for c in verdict.divergence.checks)


def test_an_empty_trace_file_is_an_error_not_a_pass(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    out = io.StringIO()
    assert check_command([str(empty)], False, out) == EXIT_ERROR
    assert "no trace in this file: nothing was checked" in out.getvalue()
    assert _check(tmp_path, HEARTBEAT)[0] == EXIT_OK


def test_pytest_with_an_empty_file_or_a_folder_without_traces_says_so(tmp_path: Path) -> None:
    (tmp_path / "empty.jsonl").write_text("")
    (tmp_path / "none").mkdir()
    (tmp_path / "some").mkdir()
    (tmp_path / "some" / "votes.jsonl").write_text(json.dumps(VOTES_ONLY) + "\n")

    def pytest(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args], cwd=tmp_path,
                              capture_output=True, text=True)

    done = pytest("--kraft-traces", "empty.jsonl", "empty.jsonl")
    assert done.returncode == 1 and "no trace in this file" in done.stdout
    done = pytest("--kraft-traces", "none", "none")
    assert done.returncode == 4 and "no trace file" in done.stderr
    done = pytest("--kraft-traces", "some", "some")
    assert done.returncode == 0 and "1 passed" in done.stdout


def test_the_schema_documents_views() -> None:
    import jsonschema

    from kraftspec.traces.format import jsonl
    from kraftspec.traces.format.envelope import view_kinds

    schema = json.loads((Path(jsonl.__file__).parents[1] / "trace-v1.schema.json").read_text())
    validator = jsonschema.Draft202012Validator(schema)
    assert validator.is_valid(VOTES_ONLY)
    assert not validator.is_valid({**VOTES_ONLY, "view": {"sends": ["VoteRespnse"]}})
    assert not validator.is_valid({**VOTES_ONLY, "view": {"sent": ["VoteResponse"]}})
    assert set(schema["properties"]["view"]["properties"]["sends"]["items"]["enum"]) == view_kinds("raft")["sends"]


def test_a_trace_with_a_view_is_never_written_to_parquet_without_it(tmp_path: Path) -> None:
    from kraftspec.traces.format.envelope import trace_from_json
    from kraftspec.traces.format.parquet import write_parquet

    with pytest.raises(oracle.TraceError, match="cannot be written to Parquet"):
        write_parquet(tmp_path / "t.parquet", [trace_from_json(VOTES_ONLY)])
