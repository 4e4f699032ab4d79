"""A running cluster's live answers against what the reference computes from the log it audited.

``audited_image(data_dir)`` audits one data directory (the per-directory audit of ``kraftspec audit``) and keeps
the image it replayed; ``cluster_image`` turns it into the reference's ``describe_cluster.ClusterImage``. Then:

* DescribeCluster v0–v2, endpoint type BROKER and CONTROLLER (v1+), fenced brokers included or not (v2), sent by
  ``wire`` to every reachable broker listener and controller listener, against
  ``reference.describe_cluster.describe_cluster`` (a broker's controller id is "a random unfenced broker": the
  live id must be one the reference gives for some choice);
* DescribeQuorum v2 to every reachable controller: the leader's id and epoch, its voters and observers against
  the log's last LeaderChange and the registered brokers, the followers' NOT_LEADER_OR_FOLLOWER
  (``reference.raft._handle_describe_quorum_request``); under kraft.version 1 (a dynamic quorum, KIP-853) the voters,
  their directory ids and endpoints against the voter set the reference's ``raft_voter_history`` holds last after
  replaying the log's KRaftVersion and Voters records (Kafka's leader describes its latest voter set, committed
  or not: ``LeaderState.describeQuorum``);
* ``kafka-cluster list-endpoints`` run from Kafka's tools jar (``--bootstrap-server`` with and without
  ``--include-fenced-brokers``, and ``--bootstrap-controller``), its stdout against ``reference.cluster_tool``.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from kraftspec.cluster import jars, wire
from kraftspec.reference import cluster_tool
from kraftspec.reference import raft_voter_history as vh
from kraftspec.reference.controller_registration import ControllerRegistration
from kraftspec.reference.controller_rules import ENDPOINT_BROKER, ENDPOINT_CONTROLLER
from kraftspec.reference.describe_cluster import (
    ClusterImage,
    DescribeClusterRequest,
    DescribeClusterResponse,
    Receiver,
    describe_cluster,
)
from kraftspec.reference.errors import Errors
from kraftspec.reference.frozen import FrozenMap
from kraftspec.reference.raft_voters import VoterSet
from kraftspec.traces.metalog import audit as metalog_audit
from kraftspec.traces.metalog.report import DirectoryReport
from kraftspec.traces.metalog.snapshot import snapshot_id

BROKER_LISTENER = "PLAINTEXT"
CONTROLLER_LISTENER = "CONTROLLER"


@dataclass
class Audited:
    """One data directory's audit report and the image its log replays to."""

    report: DirectoryReport
    image: Any
    leader_id: int
    leader_epoch: int
    voters: tuple[int, ...]
    voter_set: Optional[VoterSet] = None
    """kraft.version 1: the last voter set of the log (its latest VotersRecord, or the bootstrap checkpoint's)."""
    voter_history: tuple[tuple[int, VoterSet], ...] = ()
    """Every ``(offset, voter set)`` of the reference's ``VoterSetHistory`` after the replay (bootstrap at -1)."""


def audited_image(data_dir: str | Path) -> Audited:
    """The per-directory audit of ``data_dir`` (as ``kraftspec audit`` runs it), keeping the replayed image."""
    data_dir = Path(data_dir)
    report = metalog_audit.audit_directory(data_dir, data_dir / metalog_audit.METADATA_DIR)
    partition = data_dir / metalog_audit.METADATA_DIR
    entries = sorted(p for p in partition.iterdir() if p.is_file())
    segments = sorted((p for p in entries if metalog_audit.segment_offset(p.name) is not None),
                      key=lambda p: metalog_audit.segment_offset(p.name))
    snapshots = sorted((sid[0], sid[1], str(p)) for p in entries if (sid := snapshot_id(p.name)) is not None)
    replay = metalog_audit._LogAudit(DirectoryReport(str(data_dir)), [s for s in snapshots if s[0] > 0], None)
    for end, _, path in snapshots[:1]:
        if end == 0:
            replay.load_bootstrap_voters(path)
    metalog_audit._audit_log(replay, segments)
    replay.finish()
    epochs = report.raft_epochs
    leader_id = next((leader for _, _, leader in reversed(epochs) if leader is not None), -1)
    leader_epoch = epochs[-1][0] if epochs else -1
    voters = replay.leader_changes.get(leader_epoch, (None, ()))[1] if hasattr(replay, "leader_changes") else ()
    state = replay.voters.state
    entry = vh.last_voter_set_entry(state)
    return Audited(report, replay.image, leader_id, leader_epoch, tuple(sorted(voters)),
                   None if entry is None else entry[1], state.voter_set_history.entries)


def copy_metadata(data_dir: Path, into: Path) -> Path:
    """A copy of a running node's data directory files that the audit reads (meta.properties, bootstrap, the
    metadata partition), so the audit reads a still prefix of a growing log."""
    target = into / data_dir.parent.name / "data"
    if target.exists():
        shutil.rmtree(target)
    (target / metalog_audit.METADATA_DIR).mkdir(parents=True)
    for name in ("meta.properties", "bootstrap.checkpoint"):
        if (data_dir / name).exists():
            shutil.copy2(data_dir / name, target / name)
    files = [p for p in (data_dir / metalog_audit.METADATA_DIR).iterdir()
             if p.is_file() and not p.name.endswith((".index", ".timeindex", ".deleted", ".swap"))]

    def order(path: Path) -> int:  # the epoch cache is assigned before an append, quorum-state before an election's
        return {"leader-epoch-checkpoint": 0, "quorum-state": 2}.get(path.name, 1)  # first batch: copy in that order
    for path in sorted(files, key=lambda p: (order(p), p.name)):
        try:
            shutil.copy2(path, target / metalog_audit.METADATA_DIR / path.name)
        except FileNotFoundError:  # a segment deleted meanwhile (retention after a snapshot)
            pass
    return target


def cluster_image(audited: Audited) -> ClusterImage:
    """The reference's DescribeCluster input from an audited log (cluster id from meta.properties)."""
    image = audited.image
    controllers = {}
    for cid, (incarnation, zk_ready, endpoints, features) in image.controllers.items():
        controllers[cid] = ControllerRegistration(controller_id=cid, incarnation_id=incarnation,
                                                  zk_migration_ready=zk_ready, listeners=tuple(endpoints),
                                                  features=tuple(features))
    return ClusterImage(cluster_id=audited.report.cluster_id or "", brokers=FrozenMap(image.brokers),
                        controllers=FrozenMap(controllers),
                        raft_leader_id=audited.leader_id, metadata_version=image.metadata_version or 0)


@dataclass(frozen=True)
class Mismatch:
    what: str
    expected: str
    observed: str

    def line(self) -> str:
        return f"{self.what}: expected {self.expected}, observed {self.observed}"


def _nodes(nodes: Any, with_fenced: bool) -> list[tuple[Any, ...]]:
    return sorted((n.node_id, n.host, n.port, n.rack, n.is_fenced if with_fenced else False) for n in nodes)


def _compare_describe(expected_all: list[DescribeClusterResponse], live: wire.DescribeClusterAnswer, version: int,
                      what: str) -> Optional[Mismatch]:
    expected = expected_all[0]
    observed = (Errors(live.error_code).name if live.error_code in Errors._value2member_map_ else live.error_code,
                live.error_message, live.endpoint_type if version >= 1 else None, live.cluster_id,
                _nodes(live.nodes, version >= 2), live.cluster_authorized_operations)
    want = (expected.error.name, expected.error_message, expected.endpoint_type if version >= 1 else None,
            expected.cluster_id, _nodes(expected.nodes, version >= 2), expected.cluster_authorized_operations)
    if expected.error != Errors.NONE:  # an error response keeps every other field at its default
        want = want[:3] + ("", [], want[5])
        observed = observed[:3] + (observed[3], observed[4], observed[5])
    if observed != want:
        return Mismatch(what, repr(want), repr(observed))
    controller_ids = {e.controller_id for e in expected_all}
    if live.controller_id not in controller_ids:
        return Mismatch(what + " controllerId", f"one of {sorted(controller_ids)}", str(live.controller_id))
    return None


def describe_cluster_checks(cluster: Any, image: ClusterImage) -> tuple[list[Mismatch], int]:
    """Every reachable listener, DescribeCluster v0–v2 x endpoint type x include-fenced, against the reference."""
    mismatches, asked = [], 0
    targets = [(n, Receiver.BROKER, n.broker_port, BROKER_LISTENER) for n in cluster.reachable_brokers()]
    targets += [(n, Receiver.CONTROLLER, n.controller_port,
                 CONTROLLER_LISTENER) for n in cluster.reachable_controllers()]
    unfenced = max(1, sum(1 for b in image.brokers.values() if not b.fenced))
    for node, receiver, port, listener in targets:
        try:  # the versions this listener serves (Kafka 3.9 has no DescribeCluster v2; KIP-1073 came in 4.0)
            low, high = wire.api_versions(node.host, port).get(wire.DESCRIBE_CLUSTER, (0, -1))
        except (OSError, wire.WireError) as exc:
            mismatches.append(Mismatch(f"ApiVersions to {receiver.value} {node.node_id}", "an answer", str(exc)))
            continue
        for version in (v for v in (0, 1, 2) if low <= v <= high):
            for endpoint_type in ((ENDPOINT_BROKER,) if version == 0 else (ENDPOINT_BROKER, ENDPOINT_CONTROLLER)):
                for include_fenced in ((False,) if version < 2 else (False, True)):
                    request = DescribeClusterRequest(version=version, include_cluster_authorized_operations=False,
                                                     endpoint_type=endpoint_type, include_fenced_brokers=include_fenced)
                    expected = [describe_cluster(image, receiver, request, listener,
                                                 chooser=c) for c in range(unfenced)]
                    what = (f"DescribeCluster v{version} endpointType={endpoint_type} includeFenced={include_fenced} "
                            f"to {receiver.value} {node.node_id}")
                    asked += 1
                    try:
                        live = wire.describe_cluster(node.host, port, version, endpoint_type, include_fenced)
                    except (OSError, wire.WireError) as exc:
                        mismatches.append(Mismatch(what, "an answer", f"{type(exc).__name__}: {exc}"))
                        continue
                    found = _compare_describe(expected, live, version, what)
                    if found is not None:
                        mismatches.append(found)
    return mismatches, asked


def describe_quorum_checks(cluster: Any, audited: Audited, image: ClusterImage) -> tuple[list[Mismatch],
                                                                                         Optional[wire.DescribeQuorumAnswer]]:
    """DescribeQuorum v2 to each reachable controller: the leader describes, the others refuse
    (NOT_LEADER_OR_FOLLOWER, ``reference.raft._handle_describe_quorum_request``)."""
    mismatches: list[Mismatch] = []
    leader_answer = None
    for node in cluster.reachable_controllers():
        what = f"DescribeQuorum v2 to controller {node.node_id}"
        try:
            live = wire.describe_quorum(node.host, node.controller_port, 2)
        except (OSError, wire.WireError) as exc:
            mismatches.append(Mismatch(what, "an answer", f"{type(exc).__name__}: {exc}"))
            continue
        if node.node_id == audited.leader_id:
            leader_answer = live
            brokers = {b for b in image.brokers if not (cluster.nodes.get(b) and cluster.nodes[b].is_controller)}
            voter_ids = audited.voters if audited.voter_set is None else tuple(sorted(audited.voter_set.voters))
            want = (0, 0, audited.leader_id, audited.leader_epoch, voter_ids)
            got = (live.error_code, live.partition_error_code, live.leader_id, live.leader_epoch,
                   tuple(sorted(v.replica_id for v in live.voters)))
            if got != want:
                mismatches.append(Mismatch(what, repr(want), repr(got)))
            elif audited.voter_set is not None:
                mismatches += voter_set_mismatches(audited.voter_set, live, what)
            # observers: the replicas that fetched within the last 300 s (``raft_leader.describe``), so a broker
            # stopped or unregistered a moment ago is still one; every running broker fetches, so it is one; a
            # controller outside the voter set (kraft.version 1: a spare, or a voter removed) fetches as one too
            observers = {o.replica_id for o in live.observers}
            may_observe = {n.node_id for n in cluster.nodes.values()
                           if (n.is_broker and not n.is_controller) or (audited.voter_set is not None
                                                                       and n.node_id not in voter_ids)}
            running = {b.node_id for b in cluster.reachable_brokers() if not b.is_controller and b.node_id in brokers}
            if not running <= observers <= may_observe:
                mismatches.append(Mismatch(what + " observers", f"the running brokers {sorted(running)}, and only "
                                           f"nodes {sorted(may_observe)}", repr(sorted(observers))))
            leader_end = next((v.log_end_offset for v in live.voters if v.replica_id == live.leader_id), None)
            if leader_end is not None and live.high_watermark > leader_end:
                mismatches.append(Mismatch(what + " high watermark", f"<= leader's end {leader_end}",
                                           str(live.high_watermark)))
        else:
            got = (live.error_code, live.partition_error_code)
            want = (0, int(Errors.NOT_LEADER_OR_FOLLOWER.value))
            if got != want:
                mismatches.append(Mismatch(what + " (not the leader)", repr(want), repr(got)))
    return mismatches, leader_answer


def voter_set_mismatches(voters: VoterSet, live: wire.DescribeQuorumAnswer, what: str) -> list[Mismatch]:
    """kraft.version 1: each voter's directory id (``ReplicaState.replicaDirectoryId``) and the voters' endpoints
    (``DescribeQuorumResponse.nodes``, v2) against the voter set replayed from the log."""
    want_keys = sorted((vid, node.voter_key.directory_id) for vid, node in voters.voters.items())
    got_keys = sorted((v.replica_id, v.directory_id) for v in live.voters)
    found = [] if want_keys == got_keys else [Mismatch(what + " voter directory ids", repr(want_keys), repr(got_keys))]
    want_nodes = {vid: tuple(sorted((name, host, port) for name, (host, port) in node.listeners.items()))
                  for vid, node in voters.voters.items()}
    got_nodes = {vid: tuple(sorted(listeners)) for vid, listeners in live.nodes.items()}
    if want_nodes != got_nodes:
        found.append(Mismatch(what + " voter endpoints", repr(want_nodes), repr(got_nodes)))
    return found


def cluster_tool_checks(cluster: Any, image: ClusterImage) -> list[Mismatch]:
    """``kafka-cluster list-endpoints`` from Kafka's tools jar, its stdout against ``reference.cluster_tool``."""
    from kraftspec.reference.describe_cluster import broker_nodes, controller_nodes

    mismatches: list[Mismatch] = []
    if jars.version_tuple(cluster.version) < (4, 0, 0):  # list-endpoints (KIP-1073) is a 4.0 sub-command
        return mismatches
    brokers = cluster.reachable_brokers()
    runs = []
    if brokers:
        server = f"{brokers[0].host}:{brokers[0].broker_port}"
        runs += [(["--bootstrap-server", server], False, False), (["--bootstrap-server", server,
                                                                    "--include-fenced-brokers"], False, True)]
    controllers = cluster.reachable_controllers()
    if controllers:
        runs.append((["--bootstrap-controller", ",".join(f"{c.host}:{c.controller_port}" for c in controllers)],
                     True, False))
    for args, to_controller, include_fenced in runs:
        nodes = controller_nodes(image, CONTROLLER_LISTENER) if to_controller else \
            broker_nodes(image, BROKER_LISTENER, include_fenced)
        expected = cluster_tool.list_endpoints(nodes, to_controller, include_fenced)
        done = cluster.run_tool("cluster", "list-endpoints", *args, check=False)
        if done.stdout != expected:
            mismatches.append(Mismatch("kafka-cluster list-endpoints " + " ".join(args), repr(expected),
                                       repr(done.stdout) + (f" (exit {done.returncode}: {done.stderr[-500:]})"
                                                            if done.returncode else "")))
    return mismatches


@dataclass
class LiveReport:
    mismatches: list[Mismatch]
    asked: int
    attempts: int
    leader: int
    epoch: int
    high_watermark: Optional[int]
    log_end: Optional[int]

    @property
    def ok(self) -> bool:
        return not self.mismatches


def live_checks(cluster: Any, scratch: Path, settle: float = 30.0, tool: bool = True) -> LiveReport:
    """Copy the active controller's log, audit it, and compare every live answer with the reference's; a
    mismatch is retried with a fresh copy until ``settle`` seconds pass (brokers apply the log a little later)."""
    deadline = time.monotonic() + settle
    attempts = 0
    while True:
        attempts += 1
        leader = cluster.leader()
        source = cluster.nodes[leader] if leader in cluster.nodes else cluster.reachable_controllers()[0]
        copy = copy_metadata(source.data_dir, scratch)
        audited = audited_image(copy)
        image = cluster_image(audited)
        mismatches, asked = describe_cluster_checks(cluster, image)
        quorum, answer = describe_quorum_checks(cluster, audited, image)
        mismatches += quorum
        if not mismatches and tool:
            mismatches += cluster_tool_checks(cluster, image)
        if not mismatches or time.monotonic() > deadline:
            return LiveReport(mismatches, asked, attempts, audited.leader_id, audited.leader_epoch,
                              answer.high_watermark if answer else None, audited.report.log_end_offset)
        time.sleep(1.0)


def scratch_dir() -> Path:
    return Path(tempfile.mkdtemp(prefix="kraftspec-live-"))
