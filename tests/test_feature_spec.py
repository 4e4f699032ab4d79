"""spec/FeatureLevels.tla (§1.11): TLC finds no violation under its bounds, each invariant and property has teeth (a
wrong variant of the spec violates it), the reference explored under the same bounds has exactly TLC's reachable states
and labelled edges (``kraftspec agree features``), which the feature mutant breaks, and the traces recorded from
TLC's state graph (``kraftspec generate tla --component features``) replay conformant and are accepted by the spec
step by step (``FeatureLevelsTrace.tla``), while the feature mutant's runs of their inputs diverge and are rejected."""

from __future__ import annotations

import dataclasses
import gzip
import io
import itertools
import json
import re
from collections import Counter
from pathlib import Path

import pytest

from kraftspec import traces
from kraftspec.models.broker_mutants import MUTANTS
from kraftspec.spec import agree_features
from kraftspec.spec.agree import SPEC_DIR, check_agreement, load_model
from kraftspec.spec.tlc_config import read_constants
from kraftspec.spec.tlc import run_tlc
from kraftspec.spec.trace_validation import validate
from kraftspec.traces.format.envelope import Trace
from kraftspec.traces.format.jsonl import read_jsonl
from kraftspec.traces.recording.generate import generate_command
from kraftspec.traces.recording.features_tla import spec_post
from kraftspec.traces.replay import broker as broker_replay
from kraftspec.traces.replay.check import EXIT_FINDING, EXIT_OK, check_command
from mutant_layers import agreement_difference

BUNDLED = Path(traces.__file__).parent / "tla" / "features.jsonl.gz"
FEATURE_MUTANTS = [m for m in MUTANTS if ".feature_control:" in m.target]

VARIANTS = [
    ("UpdateFeatures checks only the local controller's range",
     [("    ~InRange(level, LocalRange(f)) \\/ \\E b \\in Brokers : Registered(b) /\\ "
       "~InRange(level, SupportedBy(reg[b], f))\n", "    ~InRange(level, LocalRange(f))\n")],
     "FinalizedSupportedByEveryNode"),
    ("a broker registers whatever the finalized levels",
     [("    /\\ \\A f \\in Features : InRange(fin[f], SupportedBy(s, f))\n", "")],
     "FinalizedSupportedByEveryNode"),
    ("metadata.version is checked like any feature, by a controller that supports it from 1",
     [("LocalRange(f) == IF f = MV THEN <<MinMV, 30>>", "LocalRange(f) == IF f = MV THEN <<1, 30>>"),
      ("CASE u.f = MV -> ~MetadataVersionError(u.level)", "CASE u.f = MV -> TRUE")],
     "MetadataVersionAtLeastMinimum"),
    ("ELR is enabled without its metadata.version",
     [("    \\/ u.f = ELR /\\ u.level >= 1 /\\ Proposed(req, MV) < ElrNeedsMV\n", "")],
     "DependenciesMet"),
    ("a metadata.version downgrade may cross a metadata change",
     [("    level \\notin DefinedMV \\/ (level < fin[MV] /\\ MetadataChanged(fin[MV], level))",
       "    level \\notin DefinedMV")],
     "MetadataDowngradesKeepMetadata"),
    ("an UPGRADE request may lower a level",
     [("    /\\ ~(u.level < fin[u.f] /\\ u.type = UPGRADE)\n", "")],
     "DowngradeOnlyWhenAsked"),
    ("kraft.version is downgraded like any feature",
     [("ELSE u.level = fin[KV]", "ELSE TRUE")],
     "KRaftVersionNeverDecreases"),
]
PROPERTIES = {"MetadataDowngradesKeepMetadata", "DowngradeOnlyWhenAsked", "KRaftVersionNeverDecreases"}


def test_tlc_checks_the_invariants() -> None:
    result = run_tlc(SPEC_DIR / "FeatureLevels.tla", workers=1)
    assert result.verdict == "ok", result.summary()


@pytest.mark.parametrize("name,edits,violated", VARIANTS, ids=[v[0] for v in VARIANTS])
def test_wrong_spec_variant_is_caught(tmp_path: Path, name: str, edits: list[tuple[str, str]], violated: str) -> None:
    source = (SPEC_DIR / "FeatureLevels.tla").read_text()
    for old, new in edits:
        assert source.count(old) == 1, f"the spec no longer contains the text this variant rewrites: {old!r}"
        source = source.replace(old, new)
    (tmp_path / "FeatureLevels.tla").write_text(source)
    config = (SPEC_DIR / "FeatureLevels.cfg").read_text()
    section = "PROPERTIES" if violated in PROPERTIES else "INVARIANTS"
    (tmp_path / "FeatureLevels.cfg").write_text(f"{config[:config.index('INVARIANTS')]}{section}\n    {violated}\n")
    result = run_tlc(tmp_path / "FeatureLevels.tla", workers=1)
    assert result.verdict != "ok" and result.violated == violated, (name, result.summary())


def test_reference_agrees_with_the_spec() -> None:
    report = check_agreement(load_model("features"), workers=1)
    assert report.identical, report.summary()
    assert report.spec_states > 300 and report.spec_edges > report.spec_states


@pytest.mark.parametrize("mutant", FEATURE_MUTANTS, ids=lambda m: m.name)
def test_a_wrong_feature_rule_is_found(mutant) -> None:  # type: ignore[no-untyped-def]
    with mutant.applied():
        found = agreement_difference("features")
    assert found is not None, f"the agreement misses {mutant.name}: {mutant.description}"


def test_recorded_traces_take_every_action_and_replay_conformant(tmp_path: Path) -> None:
    out, report = str(tmp_path / "features.jsonl"), io.StringIO()
    assert generate_command("tla", out, 10, 5, component="features", stream=report) == EXIT_OK, report.getvalue()
    steps = [json.loads(line)["steps"] for line in Path(out).read_text().splitlines()]
    actions = Counter(step["input"]["action"] for trace in steps for step in trace)
    assert set(actions) == {"register_broker", "unregister_broker", "update_features"}, actions
    errors = Counter(step["output"]["response"]["error"] for trace in steps for step in trace
                     if step["input"]["action"] != "unregister_broker")
    assert {"NONE", "INVALID_UPDATE_VERSION", "UNSUPPORTED_VERSION"} <= set(errors), errors  # refusals stated too
    checked = io.StringIO()
    assert check_command([out], False, checked) == EXIT_OK, checked.getvalue()


def test_the_bundled_traces_replay_conformant_and_catch_the_feature_mutant() -> None:
    with gzip.open(BUNDLED, "rt") as stream:
        assert sum(1 for _ in stream) > 1000  # the walks and the edge cover (FORMAT.md says how they were made)
    report = io.StringIO()
    assert check_command([str(BUNDLED)], False, report) == EXIT_OK, report.getvalue()
    for mutant in FEATURE_MUTANTS:
        with mutant.applied():
            report = io.StringIO()
            assert check_command([str(BUNDLED)], False, report) == EXIT_FINDING, mutant.name
        divergent = re.search(r"(\d+) divergent", report.getvalue().splitlines()[-1])
        assert divergent is not None and int(divergent.group(1)) > 100, report.getvalue().splitlines()[-1]


def rerecorded(trace: Trace) -> Trace:
    """``trace``'s inputs with the outputs and post-state (finalized levels, log end) of the reference as it stands."""
    (state,) = agree_features.initial_states(read_constants(SPEC_DIR / "FeatureLevels.cfg"))
    control, steps = state.control, []
    for step in trace.steps:
        control, _, response, written = broker_replay.apply(control, 0, step)
        post = spec_post(agree_features.project(dataclasses.replace(state, control=control)))
        steps.append(dataclasses.replace(step, response=response, records=written, post=post))
    return dataclasses.replace(trace, steps=tuple(steps))


def test_the_spec_accepts_the_bundled_traces_and_rejects_the_feature_mutants_runs() -> None:
    bundled = [t for _, t in itertools.islice(read_jsonl(BUNDLED), 200)]
    assert all(isinstance(t, Trace) for t in bundled)
    assert {v.outcome for v in validate(bundled)} == {"accepted"}  # refused steps: the spec's action is disabled
    assert [rerecorded(t) for t in bundled] == bundled  # the reference as it stands records the same traces
    for mutant in FEATURE_MUTANTS:
        with mutant.applied():
            wrong = [rerecorded(t) for t in bundled]
        verdicts = validate(wrong)
        assert "rejected" in {v.outcome for v in verdicts}, mutant.name
        assert {v.outcome for v in verdicts} <= {"accepted", "rejected"}, mutant.name
