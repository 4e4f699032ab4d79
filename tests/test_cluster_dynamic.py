"""Real Kafka 4.x clusters at kraft.version 1 (issue 23 part 3, KIP-853): a dynamic quorum formatted with
``--initial-controllers`` and ``controller.quorum.bootstrap.servers``, a spare controller formatted with
``--no-initial-controllers`` added, a voter removed and added back.

Without a JVM: the bundled run ``kraftspec__cluster-runs/netns-dynamic-quorum-seed30`` (see the corpus README) audits
clean, and the voter sets the reference's ``VoterSetHistory`` replays from each node's log are the ones the run made,
read from the data itself (who was formatted as an initial voter, each node's directory id and registered endpoint);
each epoch's first batch holds the KRaftVersion and Voters records ``raft_reconfig.start_of_epoch_control_records``
says, which a deliberately wrong variant does not. With Kafka's jars (Maven, as ``test_cluster_scenarios.py``): the
scenarios on a real cluster, each followed by the audit, the quorum audit and DescribeQuorum against the reference.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftspec.cluster import live
from kraftspec.cluster.runner import Cluster, directory_ids_from_seed
from kraftspec.cluster.scenarios import DYNAMIC, check_cluster, run_scenario
from kraftspec.mutants import get as mutant
from kraftspec.reference import raft_reconfig
from kraftspec.reference.raft_voters import VoterNode, VoterSet, replica_key
from kraftspec.reference.frozen import FrozenMap
from kraftspec.traces.metalog import voters as V
from kraftspec.traces.metalog.audit import audit_paths
from kraftspec.traces.metalog.control import LEADER_CHANGE, decode_control
from kraftspec.traces.metalog.corpus import RUNS_DIR
from kraftspec.traces.metalog.files import read_quorum_state
from kraftspec.traces.metalog.quorum import audit_quorum
from kraftspec.traces.metalog.segments import read_batches

RUN = RUNS_DIR / "netns-dynamic-quorum-seed30"
BOOTSTRAP = "00000000000000000000-0000000000.checkpoint"
SEED = 30
MOMENTS = ("added", "removed", "stopped")
"""The bundled moments: the spare just added, a voter removed, the cluster stopped (see the corpus README)."""


def nodes(moment: str) -> dict[int, Path]:
    return {int(p.parent.name.split("-")[1]): p for p in sorted((RUN / moment).glob("node-*/data"))}


def directory_id(data: Path) -> str:
    return next(line.split("=", 1)[1] for line in (data / "meta.properties").read_text().splitlines()
                if line.startswith("directory.id="))


def keys(voters: VoterSet) -> dict[int, str]:
    return {vid: node.voter_key.directory_id for vid, node in voters.voters.items()}


def changes(history: tuple[tuple[int, VoterSet], ...]) -> list[tuple[str, int]]:
    """The run's voter changes: ``("+", id)`` / ``("-", id)`` between consecutive distinct voter sets."""
    out = []
    for (_, before), (_, after) in zip(history, history[1:]):
        out += [("+", v) for v in sorted(set(after.voters) - set(before.voters))]
        out += [("-", v) for v in sorted(set(before.voters) - set(after.voters))]
    return out


@pytest.fixture(scope="module")
def audited() -> dict[str, dict[int, live.Audited]]:
    return {moment: {n: live.audited_image(d) for n, d in nodes(moment).items()} for moment in MOMENTS}


@pytest.mark.parametrize("moment", MOMENTS)
def test_the_bundled_kraft_version_1_run_audits_clean(moment: str, audited: dict[str, dict[int, live.Audited]]) -> None:
    dirs = list(nodes(moment).values())
    report = audit_paths(dirs)
    assert report.ok, report.render()
    for d in report.directories:
        assert d.kraft_version == 1 and d.voters_records >= 2, (d.path, d.kraft_version, d.voters_records)
        snapshots = [p for p in Path(d.path).glob("__cluster_metadata-0/*.checkpoint") if p.name != BOOTSTRAP]
        assert len(d.snapshots_compared) == len(snapshots), d.path  # each KRaft snapshot's voters compared with the log
    assert any(d.snapshots_compared for d in report.directories)
    quorum = audit_quorum(dirs)
    assert quorum.ok, quorum.render()
    last = {n: tuple(sorted(a.voter_set.voters)) for n, a in audited[moment].items() if a.voter_set is not None}
    assert len(set(last.values())) == 1 and len(last) == len(dirs)
    assert quorum.voters == next(iter(last.values()))  # the quorum audit counts majorities over the VotersRecords'


def test_the_voter_sets_are_what_the_run_did(audited: dict[str, dict[int, live.Audited]]) -> None:
    """Initial voters = the nodes formatted with ``--initial-controllers`` (they hold the bootstrap checkpoint); the
    spare = the other registered controller; the run added the spare, removed a voter, and added it back."""
    final = audited["stopped"]
    image = next(iter(final.values())).image
    controllers, data = set(image.controllers), nodes("stopped")
    initial = {n for n, d in data.items() if (d / "__cluster_metadata-0" / BOOTSTRAP).exists()}
    (spare,) = controllers - initial
    for n, a in final.items():
        history = a.voter_history
        assert (history[0][0] == -1) == (n in initial), n  # the bootstrap checkpoint's set stands at offset -1
        assert set(history[0][1].voters) == initial
        assert all(at >= 0 for at, _ in history[1:])
        run = changes(history)
        assert run[0] == ("+", spare) and len(run) == 3 and run[1][0] == "-" and run[2] == ("+", run[1][1]), run
        assert set(history[-1][1].voters) == controllers
        for _, voters in history:  # every voter with its own storage's directory id and its registered endpoint
            assert keys(voters) == {v: directory_id(data[v]) for v in voters.voters}
            for vid, node in voters.voters.items():
                registered = image.controllers[vid][2]
                assert {e.name: (e.host, e.port) for e in registered} == dict(node.listeners)
        assert [(at, keys(v)) for at, v in history if at >= 0] == \
            [(at, keys(v)) for at, v in final[min(final)].voter_history if at >= 0]  # every node holds one history
    removed = audited["removed"]
    (gone,) = controllers - set(next(iter(removed.values())).voter_set.voters)
    assert changes(final[min(final)].voter_history)[1] == ("-", gone)


def test_observer_quorum_state_files_of_version_0_are_read(audited: dict[str, dict[int, live.Audited]]) -> None:
    """A node formatted with ``--no-initial-controllers`` wrote its quorum-state before it read the log's
    KRaftVersionRecord: data_version 0 with no currentVoters (``FileQuorumStateStore``, ``QuorumStateData`` v0),
    which the audit accepts in a kraft.version 1 log; every other file there is version 1."""
    data = nodes("added")
    initial = {n for n, d in data.items() if (d / "__cluster_metadata-0" / BOOTSTRAP).exists()}
    states = {n: read_quorum_state(str(d / "__cluster_metadata-0" / "quorum-state")) for n, d in data.items()}
    assert {n for n, s in states.items() if s.data_version == 0} == set(data) - initial
    assert all(s.current_voters == () for s in states.values() if s.data_version == 0)
    assert all(audited["added"][n].report.ok for n in data)


def _first_batches(data: Path) -> list[tuple[int, int, list[object]]]:
    """``(epoch, base offset, control records after the LeaderChange)`` of each epoch's first batch."""
    out, seen = [], set()
    segment = data / "__cluster_metadata-0" / "00000000000000000000.log"
    with open(segment, "rb") as stream:
        for batch in read_batches(stream, str(segment)):
            if batch.leader_epoch in seen or not batch.is_control:
                continue
            seen.add(batch.leader_epoch)
            decoded = [decode_control(r.key, r.value) for r in batch.iter_records()]
            assert decoded[0].type == LEADER_CHANGE
            out.append((batch.leader_epoch, batch.base_offset,
                        [V.control_record(d.type, d.fields) for d in decoded[1:]]))
    return out


def _expected_start_records(a: live.Audited, epoch_start: int, leader: int) -> tuple[object, ...]:
    at, voters = [(at, v) for at, v in a.voter_history if at < epoch_start][-1]  # the set at the epoch's start
    incarnation, _, endpoints, features = a.image.controllers[leader]
    kraft = next(f for f in features if f.name == "kraft.version")
    local = VoterNode(voter_key=replica_key(leader, voters.voters[leader].voter_key.directory_id),
                      listeners=FrozenMap({e.name: (e.host, e.port) for e in endpoints}),
                      supported_kraft_version=(kraft.min_supported, kraft.max_supported))
    return raft_reconfig.start_of_epoch_control_records(voters, at, 1, local)


def test_each_epochs_first_batch_holds_the_references_start_of_epoch_records(
        audited: dict[str, dict[int, live.Audited]]) -> None:
    """``LeaderState.appendStartOfEpochControlRecords`` on the real log: the first leader copies the bootstrap
    checkpoint's voters (offset -1) into its first batch, a later leader whose node is unchanged writes none; the
    wrong variant that never copies them disagrees with Kafka's log."""
    for moment in MOMENTS:
        for n, data in nodes(moment).items():
            a = audited[moment][n]
            if a.voter_history[0][0] != -1:  # no bootstrap checkpoint: the first epoch's starting set is not here
                continue
            leaders = {e: leader for e, _, leader in a.report.raft_epochs}
            for epoch, start, written in _first_batches(data):
                expected = _expected_start_records(a, start, leaders[epoch])
                assert list(expected) == written, (moment, n, epoch, start)
    a = audited["stopped"][1]
    epoch, start, written = _first_batches(nodes("stopped")[1])[0]
    assert written  # the first epoch's batch copies the bootstrap voters
    with mutant("voters_no_bootstrap_records").applied():
        assert list(_expected_start_records(a, start, dict((e, ld) for e, _, ld in a.report.raft_epochs)[epoch])) \
            != written


def test_dynamic_layout_formats_initial_controllers_and_a_spare(tmp_path: Path) -> None:
    """No JVM: the storage tool's options and the configs of a dynamic quorum (loopback ports, nothing started)."""
    cluster = Cluster(tmp_path, seed=SEED, brokers=1, network="loopback", quorum="dynamic")
    try:
        ids = directory_ids_from_seed(SEED, 2)
        assert ids == directory_ids_from_seed(SEED, 2) and len(set(ids)) == 2
        assert all(len(i) == 22 and not i.startswith("-") for i in ids)
        cluster.directory_ids = dict(zip((1, 2), ids))
        initial = cluster.initial_controllers
        assert [part.split("@")[0] for part in initial.split(",")] == ["1", "2"]
        assert cluster._format_options(cluster.nodes[1]) == ("--initial-controllers", initial)
        assert cluster._format_options(cluster.nodes[3]) == ("--no-initial-controllers",)
        assert cluster._format_options(cluster.nodes[4]) == ("--no-initial-controllers",)
        for node in cluster.nodes.values():
            props = cluster.properties(node)
            assert "controller.quorum.voters" not in props
            assert props["controller.quorum.bootstrap.servers"] == ",".join(
                f"127.0.0.1:{cluster.nodes[n].controller_port}" for n in (1, 2))
        static = Cluster(tmp_path / "static", seed=SEED, brokers=1, network="loopback")
        assert "controller.quorum.voters" in static.properties(static.nodes[1])
        assert static._format_options(static.nodes[1]) == ()
        static.close()
    finally:
        cluster.close()


def test_dynamic_quorum_on_a_real_cluster(tmp_path: Path) -> None:
    """3 controllers (1 and 2 initial voters, 3 a spare observer) and 1 broker of Kafka 4.3.1: the dynamic
    scenarios, then the stopped cluster's directories audited, with every node's last voter set the live one's."""
    print(f"dynamic quorum seed {SEED} (reproduce: kraftspec cluster run --quorum dynamic --seed {SEED})")
    with Cluster(tmp_path / "cluster", seed=SEED, brokers=1, log=print, quorum="dynamic") as running:
        print(f"network mode {running.mode} ({running.mode_reason})")
        running.start()
        initial = check_cluster(running, tmp_path / "checks" / "initial", "initial")
        assert initial.ok, initial.line()
        for i, name in enumerate(DYNAMIC):
            result = run_scenario(running, name, SEED + i, tmp_path / "checks")
            assert result.ok, result.render()
        quorum = running.quorum()
        assert quorum is not None
        live_voters = sorted((v.replica_id, v.directory_id) for v in quorum.voters)
        assert [v for v, _ in live_voters] == sorted(n.node_id for n in running.controllers)
        leader = live.audited_image(live.copy_metadata(running.nodes[quorum.leader_id].data_dir, tmp_path / "leader"))
        assert leader.voter_set is not None and not live.voter_set_mismatches(leader.voter_set, quorum, "leader")
        earlier = leader.voter_history[-2][1]  # a replay that missed the last VotersRecord is told apart
        assert [m.what for m in live.voter_set_mismatches(earlier, quorum, "leader")] == \
            ["leader voter directory ids", "leader voter endpoints"]
        running.stop()
    data_dirs = [str(d) for d in running.data_dirs()]
    report = audit_paths(data_dirs)
    assert report.ok, report.render()
    assert audit_quorum(data_dirs).ok
    for d in running.data_dirs():
        voters = live.audited_image(d).voter_set
        assert voters is not None and sorted(keys(voters).items()) == live_voters, d


def test_a_dynamic_quorum_before_kafka_4_is_refused_before_anything_starts(capsys: pytest.CaptureFixture[str]) -> None:
    from kraftspec.cli import main

    assert main(["cluster", "run", "--quorum", "dynamic", "--kafka", "3.9.1"]) == 2
    assert "--quorum dynamic needs Kafka 4.0 or later" in capsys.readouterr().err
