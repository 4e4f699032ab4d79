"""Seeded fault scenarios on a running :class:`~kraftspec.cluster.runner.Cluster`, each followed by the checks.

Each scenario is a function ``(ctx) -> None`` that breaks the cluster, waits (bounded) for Kafka to react, and
leaves it whole again (every broker registered and unfenced, a leader elected), so scenarios can share one
cluster. ``ctx.rng`` is seeded (the seed is printed); ``ctx.check(label)`` runs every check at that point:

1. ``kraftspec audit`` over a copy of every node's metadata files (nothing found),
2. the quorum audit over the same copies (``kraftspec.traces.metalog.quorum``; nothing found),
3. the live answers (``kraftspec.cluster.live``) against the reference on the active controller's audited log.

"A controller cut off from the others" is a controller whose link is set down (network-namespace mode: it runs on
alone, and is healed by setting the link up), or with loopback ports only a SIGSTOP'd controller (it neither sends
nor answers), later SIGCONT'd: what its peers see of a partition, not a node that runs on alone.
"""

from __future__ import annotations

import random
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from kraftspec.cluster import live
from kraftspec.cluster.runner import Cluster, ClusterError
from kraftspec.traces.metalog.audit import audit_paths
from kraftspec.traces.metalog.quorum import READABLE, audit_quorum

TOPIC = "kraftspec-isr"


@dataclass
class CheckResult:
    label: str
    audit_ok: bool
    audit_findings: list[str]
    quorum_ok: bool
    quorum_findings: list[str]
    committed_end: int
    live_ok: bool
    live_mismatches: list[str]
    live_asked: int
    seconds: float
    quorum_notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.audit_ok and self.quorum_ok and self.live_ok

    def line(self) -> str:
        return (f"[{self.label}] audit {'clean' if self.audit_ok else 'FINDINGS'}, quorum audit "
                f"{'clean' if self.quorum_ok else 'FINDINGS'} (committed to {self.committed_end}), live answers "
                f"{'equal' if self.live_ok else 'DIFFER'} ({self.live_asked} DescribeCluster calls) "
                f"in {self.seconds:.1f} s" + "".join(f"\n    {x}" for x in
                                                      self.audit_findings + self.quorum_findings + self.live_mismatches)
                + "".join(f"\n    quorum note: {x}" for x in self.quorum_notes))


@dataclass
class ScenarioResult:
    name: str
    seed: int
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    checks: list[CheckResult] = field(default_factory=list)
    error: Optional[str] = None

    @property
    def ok(self) -> bool:
        return self.error is None and all(c.ok for c in self.checks) and bool(self.checks)

    def render(self) -> str:
        head = f"scenario {self.name} (seed {self.seed}): {'OK' if self.ok else 'FAILED'} in {self.seconds:.1f} s"
        lines = [head, *(f"  - {n}" for n in self.notes), *(f"  {c.line()}" for c in self.checks)]
        if self.error:
            lines.append(f"  ERROR {self.error}")
        return "\n".join(lines)


class Context:
    def __init__(self, cluster: Cluster, seed: int, scratch: Path, result: ScenarioResult, tool: bool = True):
        self.cluster = cluster
        self.rng = random.Random(seed)
        self.scratch = scratch
        self.result = result
        self.tool = tool

    def note(self, text: str) -> None:
        self.result.notes.append(text)
        self.cluster.log(f"  {text}")

    def check(self, label: str) -> CheckResult:
        result = check_cluster(self.cluster, self.scratch / label.replace(" ", "-"), label, tool=self.tool)
        self.result.checks.append(result)
        self.cluster.log(result.line())
        return result

    def wait(self, condition: Callable[[], object], what: str, timeout: float = 60.0) -> float:
        seconds = self.cluster.wait_for(condition, what, timeout)
        self.note(f"{what}: after {seconds:.1f} s")
        return seconds


def copy_all(cluster: Cluster, into: Path) -> list[Path]:
    """A copy of every node's metadata files (see ``live.copy_metadata``)."""
    return [live.copy_metadata(n.data_dir, into) for n in cluster.nodes.values() if n.data_dir.exists()]


def check_cluster(cluster: Cluster, scratch: Path, label: str, tool: bool = True, attempts: int = 3) -> CheckResult:
    """The audit, the quorum audit and the live answers at this point (a copy torn by a concurrent append is
    taken again, up to ``attempts`` times)."""
    started = time.monotonic()
    for attempt in range(attempts):
        if scratch.exists():
            shutil.rmtree(scratch)
        copies = copy_all(cluster, scratch / "nodes")
        report = audit_paths([str(c) for c in copies])
        quorum = audit_quorum([str(c) for c in copies])
        torn = any(d.errors for d in report.directories) or any(v.rule == READABLE for v in quorum.violations)
        if not (torn or (not report.ok or not quorum.ok)) or attempt == attempts - 1:
            break
        time.sleep(1.0)
    audit_findings = [f"audit {d.path}: {v.rule} at {v.offset}: {v.explanation}" for d in report.directories
                      for v in d.violations] + [f"audit {f.path}: {f.error}" for d in report.directories for f in d.errors]
    quorum_findings = [f"quorum {v.rule} at {v.offset} in {v.replica}: {v.explanation}" for v in quorum.violations]
    result = live.live_checks(cluster, scratch / "live", tool=tool)
    return CheckResult(label, report.ok, audit_findings, quorum.ok, quorum_findings, quorum.committed_end,
                       result.ok, [m.line() for m in result.mismatches], result.asked, time.monotonic() - started,
                       quorum.notes)


def fenced(cluster: Cluster, broker: int) -> bool:
    """Listed as fenced (DescribeCluster v2), or not listed while the others are (v0–v1 list no fenced broker)."""
    view = cluster.broker_view()
    return bool(view) and view.get(broker) is not False


def unfenced(cluster: Cluster, broker: int) -> bool:
    return cluster.broker_view().get(broker) is False


def all_unfenced(cluster: Cluster) -> bool:
    return cluster.unfenced_brokers() == {b.node_id for b in cluster.brokers}


def pure_brokers(cluster: Cluster) -> list[int]:
    return sorted(n.node_id for n in cluster.brokers if not n.is_controller)


# -- the scenarios --------------------------------------------------------------------------------------------


def broker_kill_restart(ctx: Context) -> None:
    """kill -9 of a broker: fenced once its session expires; restarted, it registers again and is unfenced."""
    c = ctx.cluster
    broker = ctx.rng.choice(pure_brokers(c))
    ctx.note(f"kill -9 broker {broker}")
    c.kill(broker)
    ctx.wait(lambda: fenced(c, broker), f"broker {broker} fenced (session timeout)")
    ctx.check("broker killed")
    c.start_node(broker)
    ctx.wait(lambda: unfenced(c, broker), f"broker {broker} unfenced after restart")


def broker_paused(ctx: Context) -> None:
    """A broker paused (SIGSTOP) past its session timeout is fenced; resumed (SIGCONT) it heartbeats again, catches
    up and is unfenced, without a new registration."""
    c = ctx.cluster
    broker = ctx.rng.choice(pure_brokers(c))
    ctx.note(f"SIGSTOP broker {broker}")
    c.pause(broker)
    ctx.wait(lambda: fenced(c, broker), f"broker {broker} fenced while paused")
    ctx.check("broker paused, fenced")
    c.resume(broker)
    ctx.wait(lambda: unfenced(c, broker), f"broker {broker} unfenced after SIGCONT")


def controlled_shutdown(ctx: Context) -> None:
    """SIGTERM to a broker: a controlled shutdown (in-controlled-shutdown, leaderships moved, then fenced)."""
    c = ctx.cluster
    broker = ctx.rng.choice(pure_brokers(c))
    ctx.note(f"SIGTERM broker {broker}")
    seconds = c.stop_node(broker)
    ctx.note(f"broker {broker} exited after {seconds:.1f} s")
    ctx.wait(lambda: fenced(c, broker), f"broker {broker} fenced after its controlled shutdown")
    ctx.check("broker shut down")
    c.start_node(broker)
    ctx.wait(lambda: unfenced(c, broker), f"broker {broker} unfenced after restart")


def active_controller_killed(ctx: Context) -> None:
    """kill -9 of the active controller: the others elect a new Raft leader in a higher epoch; restarted, the old
    leader rejoins as a follower."""
    c = ctx.cluster
    quorum = c.quorum()
    if quorum is None:
        raise ClusterError("no leader to kill")
    old, epoch = quorum.leader_id, quorum.leader_epoch
    ctx.note(f"kill -9 active controller {old} (epoch {epoch})")
    c.kill(old)
    ctx.wait(lambda: (q := c.quorum()) is not None and q.leader_id != old and q.leader_epoch > epoch,
             "a new leader elected")
    q = c.quorum()
    assert q is not None
    ctx.note(f"new leader {q.leader_id} in epoch {q.leader_epoch}")
    ctx.wait(lambda: all_unfenced(c), "every broker unfenced under the new leader")
    ctx.check("active controller killed")
    c.start_node(old)
    ctx.wait(lambda: _caught_up(c, old), f"controller {old} caught up as a follower")


def _caught_up(cluster: Cluster, node_id: int) -> bool:
    q = cluster.quorum()
    if q is None:
        return False
    ends = {v.replica_id: v.log_end_offset for v in q.voters}
    return ends.get(node_id, -1) >= q.high_watermark > 0


def controller_cut_off(ctx: Context) -> None:
    """A controller cut off from the others (its link down; SIGSTOP in loopback mode) and healed. The one cut off is
    drawn from the controllers, the leader included: a leader cut off is replaced, and once healed it learns the
    higher epoch and follows."""
    c = ctx.cluster
    quorum = c.quorum()
    if quorum is None:
        raise ClusterError("no leader")
    _cut_off_and_heal(ctx, ctx.rng.choice(sorted(n.node_id for n in c.controllers)), quorum)


def active_controller_cut_off(ctx: Context) -> None:
    """The active controller cut off from the others (its link down; SIGSTOP in loopback mode) and healed: the others
    elect a new leader; in namespace mode the old one runs on alone, resigns, and keeps entries of its epoch that no
    majority took (the quorum audit notes that stale suffix) until, healed, it truncates them and follows."""
    c = ctx.cluster
    quorum = c.quorum()
    if quorum is None:
        raise ClusterError("no leader")
    _cut_off_and_heal(ctx, quorum.leader_id, quorum)


def _cut_off_and_heal(ctx: Context, victim: int, quorum: Any) -> None:
    """Cut controller ``victim`` off, wait for the quorum to go on without it, check, heal, wait until it caught up."""
    c = ctx.cluster
    was_leader = victim == quorum.leader_id
    how = c.cut_off(victim)
    ctx.note(f"controller {victim} cut off: {how} ({'the leader' if was_leader else 'a follower'}, "
             f"epoch {quorum.leader_epoch})")
    if was_leader:
        ctx.wait(lambda: (q := c.quorum()) is not None and q.leader_id != victim, "a new leader elected")
    else:
        time.sleep(3.0)  # past the fetch timeout: the leader sees the follower stop fetching
    ctx.wait(lambda: all_unfenced(c), "every broker unfenced with the controller cut off")
    ctx.check("controller cut off")
    c.heal(victim)
    ctx.wait(lambda: _caught_up(c, victim), f"controller {victim} caught up after healing")


def topics_isr(ctx: Context) -> None:
    """A topic (3 partitions, RF 3) produced to (acks=all, bounded) while a broker goes away and comes back: the
    ISRs shrink when it is fenced and expand when it has caught up."""
    c = ctx.cluster
    brokers = pure_brokers(c)
    c.run_tool("topics", "--bootstrap-server", c.bootstrap_servers, "--create", "--if-not-exists", "--topic", TOPIC,
               "--partitions", "3", "--replication-factor", str(min(3, len(brokers))))
    ctx.note(f"created topic {TOPIC} (3 partitions)")
    records = 30000
    producer = c.spawn_tool("producer-perf", "--topic", TOPIC, "--num-records", str(records), "--record-size", "100",
                            "--throughput", "3000", "--producer-props", f"bootstrap.servers={c.bootstrap_servers}",
                            "acks=all", "linger.ms=5", "request.timeout.ms=5000", "delivery.timeout.ms=60000",
                            output=ctx.scratch / "producer.log")
    time.sleep(2.0)
    broker = ctx.rng.choice(brokers)
    ctx.note(f"kill -9 broker {broker} while producing {records} records")
    c.kill(broker)
    ctx.wait(lambda: _isr_without(ctx, broker), f"every ISR shrunk without broker {broker}")
    ctx.check("ISR shrunk")
    c.start_node(broker)
    ctx.wait(lambda: unfenced(c, broker), f"broker {broker} unfenced after restart")
    ctx.wait(lambda: _isr_full(ctx), "every ISR expanded back to 3 replicas", timeout=90)
    try:
        producer.wait(timeout=90)
        ctx.note(f"producer exited {producer.returncode}: "
                 + (ctx.scratch / "producer.log").read_text(errors="replace").strip().splitlines()[-1][:200])
    except Exception:  # noqa: BLE001 - a producer still running is stopped; its result is only a note
        producer.kill()
        ctx.note("producer did not finish within 90 s; stopped")


def _topic_partitions(ctx: Context) -> list[Any]:
    c = ctx.cluster
    leader = c.leader()
    if leader is None:
        return []
    copy = live.copy_metadata(c.nodes[leader].data_dir, ctx.scratch / "isr")
    image = live.audited_image(copy).image
    topic_id = image.topic_id_by_name(TOPIC)
    return [p for (tid, _), p in image.partitions.items() if tid == topic_id]


def _isr_without(ctx: Context, broker: int) -> bool:
    parts = _topic_partitions(ctx)
    return bool(parts) and all(broker not in p.isr for p in parts)


def _isr_full(ctx: Context) -> bool:
    parts = _topic_partitions(ctx)
    return bool(parts) and all(len(p.isr) == len(p.replicas) for p in parts)


def broker_unregistered(ctx: Context) -> None:
    """A broker stopped, then unregistered (``kafka-cluster unregister``, Admin.unregisterBroker): it leaves the
    image (no longer listed, even with fenced brokers); restarted, it registers anew."""
    from kraftspec.reference.cluster_tool import unregister_output
    from kraftspec.reference.errors import Errors

    c = ctx.cluster
    broker = ctx.rng.choice(pure_brokers(c))
    c.stop_node(broker)
    ctx.wait(lambda: fenced(c, broker), f"broker {broker} fenced after stopping")
    done = c.run_tool("cluster", "unregister", "--bootstrap-server",
                      ",".join(f"{b.host}:{b.broker_port}" for b in c.reachable_brokers()), "--id", str(broker),
                      check=False)
    expected = unregister_output(broker, Errors.NONE)
    ctx.note(f"kafka-cluster unregister --id {broker}: {done.stdout.strip()!r} "
             f"({'as the reference prints' if done.stdout == expected else 'reference: ' + repr(expected)})")
    if done.stdout != expected:
        raise ClusterError(f"unregister printed {done.stdout!r} (exit {done.returncode}), expected {expected!r}: "
                           f"{done.stderr[-500:]}")
    ctx.wait(lambda: broker not in c.broker_view(), f"broker {broker} gone from DescribeCluster")
    ctx.check("broker unregistered")
    c.start_node(broker)
    ctx.wait(lambda: unfenced(c, broker), f"broker {broker} registered again and unfenced")


def combined_leader_killed(ctx: Context) -> None:
    """Combined mode: kill -9 the node that is the active controller (and a broker): a new leader, the node
    fenced as a broker; restarted, it rejoins both roles."""
    c = ctx.cluster
    quorum = c.quorum()
    if quorum is None:
        raise ClusterError("no leader")
    old, epoch = quorum.leader_id, quorum.leader_epoch
    ctx.note(f"kill -9 node {old} (active controller and broker, epoch {epoch})")
    c.kill(old)
    ctx.wait(lambda: (q := c.quorum()) is not None and q.leader_id != old and q.leader_epoch > epoch,
             "a new leader elected")
    ctx.wait(lambda: fenced(c, old), f"node {old} fenced as a broker")
    ctx.check("combined node killed")
    c.start_node(old)
    ctx.wait(lambda: unfenced(c, old), f"node {old} unfenced after restart")


def voter_ids(cluster: Cluster) -> set[int]:
    """The voters DescribeQuorum lists (empty while no leader answers)."""
    q = cluster.quorum()
    return set() if q is None else {v.replica_id for v in q.voters}


def _observing(cluster: Cluster, node_id: int) -> bool:
    """The leader lists ``node_id`` as an observer that has fetched up to the high watermark (AddRaftVoter asks
    of a new voter that it caught up once and fetched lately: ``LeaderState.isReplicaCaughtUp``)."""
    q = cluster.quorum()
    if q is None:
        return False
    ends = {o.replica_id: o.log_end_offset for o in q.observers}
    return ends.get(node_id, -1) >= q.high_watermark > 0


def _dynamic(cluster: Cluster) -> None:
    if cluster.quorum_mode != "dynamic":
        raise ClusterError("this scenario needs a dynamic quorum (cluster run --quorum dynamic)")


def _add(ctx: Context, node: int) -> None:
    """``add-controller`` for ``node`` once it fetches as an observer; wait until it is a voter and caught up."""
    c = ctx.cluster
    ctx.wait(lambda: _observing(c, node), f"controller {node} fetching as an observer, caught up")
    done = c.add_controller(node)
    ctx.note(f"kafka-metadata-quorum add-controller (node {node}, directory {c.directory_id(node)}): "
             f"{done.stdout.strip()!r}")
    ctx.wait(lambda: node in voter_ids(c), f"controller {node} in the voter set")
    ctx.wait(lambda: _caught_up(c, node), f"controller {node} caught up as a voter")


def controller_added(ctx: Context) -> None:
    """Dynamic quorum (KIP-853): a controller outside the voter set (the spare, formatted with
    --no-initial-controllers and running as an observer) added with ``kafka-metadata-quorum add-controller``: the
    leader appends a VotersRecord holding it, and it votes from then on."""
    c = ctx.cluster
    _dynamic(c)
    voters = voter_ids(c)
    spares = sorted(n.node_id for n in c.controllers if n.node_id not in voters)
    if not voters or not spares:
        raise ClusterError(f"no leader, or no controller outside the voter set {sorted(voters)} to add")
    node = ctx.rng.choice(spares)
    ctx.note(f"voters {sorted(voters)}; adding controller {node}")
    _add(ctx, node)
    ctx.check("controller added")


def controller_removed(ctx: Context) -> None:
    """Dynamic quorum (KIP-853): a voter drawn from the voter set, the leader included, removed with
    ``kafka-metadata-quorum remove-controller`` (its id and directory id): a VotersRecord without it (a leader
    removed resigns once that record is committed, and the others elect a new one); it runs on as an observer, and
    is added back with ``add-controller`` (the same directory id), so the quorum is whole again."""
    c = ctx.cluster
    _dynamic(c)
    quorum = c.quorum()
    if quorum is None or len(quorum.voters) < 2:
        raise ClusterError("removing a voter needs a leader and at least 2 voters")
    voters = sorted(v.replica_id for v in quorum.voters)
    victim = ctx.rng.choice(voters)
    done = c.remove_controller(victim)
    ctx.note(f"voters {voters}, leader {quorum.leader_id} (epoch {quorum.leader_epoch}); kafka-metadata-quorum "
             f"remove-controller {victim}: {done.stdout.strip()!r}")
    ctx.wait(lambda: (ids := voter_ids(c)) and victim not in ids, f"controller {victim} out of the voter set")
    q = c.quorum()
    assert q is not None
    ctx.note(f"voters now {sorted(v.replica_id for v in q.voters)}, leader {q.leader_id} (epoch {q.leader_epoch})")
    ctx.wait(lambda: _observing(c, victim), f"controller {victim} fetching as an observer")
    ctx.check("controller removed")
    _add(ctx, victim)


SCENARIOS: dict[str, Callable[[Context], None]] = {
    "broker-kill-restart": broker_kill_restart,
    "broker-paused": broker_paused,
    "controlled-shutdown": controlled_shutdown,
    "active-controller-killed": active_controller_killed,
    "controller-cut-off": controller_cut_off,
    "topics-isr": topics_isr,
    "broker-unregistered": broker_unregistered,
    "active-controller-cut-off": active_controller_cut_off,
    "combined-leader-killed": combined_leader_killed,
    "controller-added": controller_added,
    "controller-removed": controller_removed,
}
DYNAMIC_ONLY = ["controller-added", "controller-removed"]
SEPARATE = [name for name in SCENARIOS if name != "combined-leader-killed" and name not in DYNAMIC_ONLY]
COMBINED = ["combined-leader-killed"]
DYNAMIC = [*DYNAMIC_ONLY, "active-controller-killed"]
"""The default scenarios of ``--quorum dynamic`` (3 controllers, 2 of them initial voters, and 1 broker): the
spare added, a voter removed and added back, then the active controller killed with 3 voters."""


def run_scenario(cluster: Cluster, name: str, seed: int, scratch: Path, tool: bool = True) -> ScenarioResult:
    """Run one scenario and then the checks on the whole cluster again; exceptions become the result's error."""
    result = ScenarioResult(name, seed)
    cluster.log(f"scenario {name}: seed {seed}")
    started = time.monotonic()
    ctx = Context(cluster, seed, scratch / name, result, tool=tool)
    (scratch / name).mkdir(parents=True, exist_ok=True)
    try:
        SCENARIOS[name](ctx)
        ctx.wait(lambda: all_unfenced(cluster), "the cluster whole again")
        ctx.check("after")
    except (ClusterError, OSError, AssertionError) as exc:
        result.error = f"{type(exc).__name__}: {exc}"
    result.seconds = time.monotonic() - started
    cluster.log(result.render())
    return result
