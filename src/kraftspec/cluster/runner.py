"""Start and break a real KRaft cluster: Apache Kafka's jars (``jars.py``), one JVM process per node, each on a test
host of its own in a network namespace (``netns.py``), or on 127.0.0.1 ports where namespaces cannot be used.

Layouts: ``separate`` (3 controllers, ids 1–3, and 3 brokers, ids 4–6, by default) and ``combined`` (3 nodes, ids
1–3, each ``process.roles=broker,controller``). Each node has its own folder under the cluster's root:
``server.properties``, ``data/`` (its only log dir, holding ``__cluster_metadata-0``) and ``server.log`` (the
JVM's output). Storage is formatted by Kafka's own storage tool.

Quorums (``quorum``): ``static`` lists the voters in ``controller.quorum.voters`` (kraft.version 0); ``dynamic``
(Kafka 4.x, KIP-853) sets ``controller.quorum.bootstrap.servers`` instead and formats the controllers but the last
with ``--initial-controllers`` (each with a directory id drawn from the seed), so the log starts at kraft.version 1
with a VotersRecord in its bootstrap checkpoint; the last controller and the brokers are formatted with
``--no-initial-controllers``: that controller starts as an observer, a spare for ``add-controller``
(:meth:`Cluster.add_controller`, :meth:`Cluster.remove_controller`, Kafka's ``kafka-metadata-quorum``). Its nodes take
a KRaft snapshot every 10 s of new records, so the logs carry snapshots holding the voter set.

Network modes (``network``, see :func:`netns.choose_mode`): ``netns`` gives node N the address ``10.217.X.N`` in its
own namespace (broker port 9092, controller port 9093), and :meth:`Cluster.cut_off` sets its link down, so a node
cut off keeps running on its own side; ``loopback`` gives each node free ports on 127.0.0.1, and a node "cut off"
is a stopped process (SIGSTOP, later SIGCONT): it neither sends nor answers, which is what its peers see of a
partition. ``Cluster.mode`` says which ran, ``Cluster.mode_reason`` why.

Every process is started in its own process group with the parent-death signal set (SIGKILL when this
Python process dies), registered for ``atexit``, and killed by :meth:`Cluster.close` (also the context
manager's exit, so a failing test stops its cluster).
"""

from __future__ import annotations

import atexit
import base64
import ctypes
import os
import random
import signal
import socket
import subprocess
import time
import weakref
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Optional

from kraftspec.cluster import jars, netns, wire
from kraftspec.harness.jvm import DEFAULT_VERSION

HEAP = "256m"
JVM_OPTIONS = ("-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xss512k", "-XX:MaxDirectMemorySize=64m",
               "-XX:+ExitOnOutOfMemoryError", "-Xshare:auto", "-Djava.awt.headless=true",
               "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-Dorg.slf4j.simpleLogger.showDateTime=true",
               "-Dorg.slf4j.simpleLogger.log.org.apache.kafka.raft=info",
               "-Dorg.slf4j.simpleLogger.log.org.apache.kafka.controller.QuorumController=info",
               "-Dlog4j2.level=warn")
TOOL_OPTIONS = ("-Xmx192m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto",
                "-Dorg.slf4j.simpleLogger.defaultLogLevel=error", "-Dlog4j2.level=error")
NETNS_BROKER_PORT, NETNS_CONTROLLER_PORT = 9092, 9093
SESSION_TIMEOUT_MS = 4000
HEARTBEAT_MS = 500
REPLICA_LAG_MS = 4000
DYNAMIC_SNAPSHOT_INTERVAL_MS = 10000

_LIVE: "weakref.WeakSet[Cluster]" = weakref.WeakSet()


def _close_all() -> None:
    for cluster in list(_LIVE):
        cluster.close()


atexit.register(_close_all)


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """PR_SET_PDEATHSIG(SIGKILL): the JVM dies when the Python process that started it dies."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)
    except OSError:
        pass


def free_ports(count: int) -> list[int]:
    """``count`` distinct free TCP ports on 127.0.0.1 (bound to port 0, then released)."""
    sockets, ports = [], []
    try:
        for _ in range(count):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
            ports.append(s.getsockname()[1])
    finally:
        for s in sockets:
            s.close()
    return ports


def cluster_id_from_seed(seed: int) -> str:
    """A Kafka ``Uuid`` string (URL-safe base64 of 16 bytes, no padding) drawn from ``seed``."""
    raw = random.Random(seed).getrandbits(128).to_bytes(16, "big")
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def directory_ids_from_seed(seed: int, count: int) -> list[str]:
    """``count`` distinct Kafka ``Uuid`` strings drawn from ``seed`` for ``--initial-controllers``; like
    ``Uuid.randomUuid`` none starts with ``-`` (it would read as an option) and none is one of the reserved ids."""
    rng, ids = random.Random(f"directory-ids-{seed}"), []
    while len(ids) < count:
        raw = rng.getrandbits(128).to_bytes(16, "big")
        text = base64.urlsafe_b64encode(raw).decode().rstrip("=")
        if not text.startswith("-") and raw[:15] != bytes(15) and text not in ids:
            ids.append(text)
    return ids


class ClusterError(RuntimeError):
    """A node did not start, a tool failed, or the cluster did not reach the state waited for."""


@dataclass
class Node:
    node_id: int
    roles: tuple[str, ...]
    folder: Path
    broker_port: Optional[int] = None
    controller_port: Optional[int] = None
    host: str = "127.0.0.1"
    process: Optional[subprocess.Popen] = None
    paused: bool = False
    cut: bool = False
    starts: int = 0

    @property
    def is_controller(self) -> bool:
        return "controller" in self.roles

    @property
    def is_broker(self) -> bool:
        return "broker" in self.roles

    @property
    def data_dir(self) -> Path:
        return self.folder / "data"

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    @property
    def pid(self) -> Optional[int]:
        return self.process.pid if self.running and self.process is not None else None


@dataclass
class Timings:
    fetch_jars: float = 0.0
    format: float = 0.0
    start: float = 0.0
    extra: dict[str, float] = field(default_factory=dict)


class Cluster:
    """A KRaft cluster of Kafka ``version`` under ``root``. Use as a context manager."""

    def __init__(self, root: str | os.PathLike[str], version: str = DEFAULT_VERSION, layout: str = "separate",
                 controllers: int = 3, brokers: int = 3, seed: int = 0, heap: str = HEAP,
                 log: Callable[[str], None] = lambda line: None, network: Optional[str] = None,
                 quorum: str = "static") -> None:
        if layout not in ("separate", "combined"):
            raise ValueError(f"layout {layout!r}: separate or combined")
        if quorum not in ("static", "dynamic"):
            raise ValueError(f"quorum {quorum!r}: static or dynamic")
        if quorum == "dynamic" and (jars.version_tuple(version) < (4, 0, 0) or controllers < 2):
            raise ValueError("a dynamic quorum needs Kafka 4.0 or later and at least 2 controllers (one a spare)")
        self.quorum_mode = quorum
        self.mode, self.mode_reason = netns.choose_mode(network)
        self.root = Path(root)
        self.version = version
        self.layout = layout
        self.seed = seed
        self.heap = heap
        self.log = log
        self.cluster_id = cluster_id_from_seed(seed)
        self.timings = Timings()
        self.nodes: dict[int, Node] = {}
        self.directory_ids: dict[int, str] = {}
        """Dynamic quorum: the directory id each initial voter is formatted with (``--initial-controllers``)."""
        if self.mode == "netns":
            ports = [NETNS_CONTROLLER_PORT] * controllers + [NETNS_BROKER_PORT] * brokers
        else:
            ports = free_ports(controllers + brokers)
        if layout == "separate":
            for i in range(controllers):
                self._add(Node(i + 1, ("controller",), self.root / f"node-{i + 1}", controller_port=ports[i]))
            for i in range(brokers):
                nid = controllers + i + 1
                self._add(Node(nid, ("broker",), self.root / f"node-{nid}", broker_port=ports[controllers + i]))
        else:
            ports = [NETNS_BROKER_PORT, NETNS_CONTROLLER_PORT] * controllers if self.mode == "netns" \
                else free_ports(2 * controllers)
            for i in range(controllers):
                self._add(Node(i + 1, ("broker", "controller"), self.root / f"node-{i + 1}",
                               broker_port=ports[2 * i], controller_port=ports[2 * i + 1]))
        self.network: Optional[netns.Network] = None
        if self.mode == "netns":
            self.network = netns.Network.create(list(self.nodes))
            for node in self.nodes.values():
                node.host = self.network.hosts[node.node_id].address
        log(f"network: {self.mode} ({self.mode_reason})" + (
            f", test hosts {self.network.subnet}.N, bridge {self.network.bridge}" if self.network else ""))
        self._classpath: Optional[str] = None
        self._dc_version: Optional[int] = None
        self.tools: list[subprocess.Popen] = []
        """Tools started in the background (a producer), killed by :meth:`close` if still running."""
        _LIVE.add(self)

    def _add(self, node: Node) -> None:
        self.nodes[node.node_id] = node

    # -- layout -------------------------------------------------------------------------------------------------

    @property
    def controllers(self) -> list[Node]:
        return [n for n in self.nodes.values() if n.is_controller]

    @property
    def brokers(self) -> list[Node]:
        return [n for n in self.nodes.values() if n.is_broker]

    @property
    def voters(self) -> str:
        return ",".join(f"{n.node_id}@{n.host}:{n.controller_port}" for n in self.controllers)

    @property
    def initial_voters(self) -> list[Node]:
        """The controllers the quorum starts with: all (static), all but the last, the spare (dynamic)."""
        return self.controllers if self.quorum_mode == "static" else self.controllers[:-1]

    @property
    def initial_controllers(self) -> str:
        """``--initial-controllers``: ``id@host:port:directory`` of each initial voter."""
        return ",".join(f"{n.node_id}@{n.host}:{n.controller_port}:{self.directory_ids[n.node_id]}"
                        for n in self.initial_voters)

    def directory_id(self, node_id: int) -> str:
        """The ``directory.id`` in the node's ``meta.properties`` (what it registers and fetches with)."""
        for line in (self.nodes[node_id].data_dir / "meta.properties").read_text().splitlines():
            if line.startswith("directory.id="):
                return line.split("=", 1)[1].strip()
        raise ClusterError(f"node {node_id}: no directory.id in meta.properties")

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"{n.host}:{n.broker_port}" for n in self.brokers)

    @property
    def bootstrap_controllers(self) -> str:
        return ",".join(f"{n.host}:{n.controller_port}" for n in self.controllers)

    def data_dirs(self) -> list[Path]:
        return [n.data_dir for n in self.nodes.values()]

    def properties(self, node: Node) -> dict[str, str]:
        """The node's ``server.properties``: small timeouts so scenarios are quick, small thread pools and segments."""
        listeners, advertised, protocols = [], [], ["CONTROLLER:PLAINTEXT", "PLAINTEXT:PLAINTEXT"]
        if node.is_broker:
            listeners.append(f"PLAINTEXT://{node.host}:{node.broker_port}")
            advertised.append(f"PLAINTEXT://{node.host}:{node.broker_port}")
        if node.is_controller:
            listeners.append(f"CONTROLLER://{node.host}:{node.controller_port}")
        props = {
            "process.roles": ",".join(node.roles),
            "node.id": str(node.node_id),
            "controller.listener.names": "CONTROLLER",
            "listeners": ",".join(listeners),
            "listener.security.protocol.map": ",".join(protocols),
            "log.dirs": str(node.data_dir),
            "controller.quorum.election.timeout.ms": "1000",
            "controller.quorum.fetch.timeout.ms": "2000",
            "broker.session.timeout.ms": str(SESSION_TIMEOUT_MS),
            "broker.heartbeat.interval.ms": str(HEARTBEAT_MS),
            "num.network.threads": "1",
            "num.io.threads": "2",
            "background.threads": "2",
            "num.recovery.threads.per.data.dir": "1",
            "log.cleaner.threads": "1",
            "log.cleaner.dedupe.buffer.size": "2097152",
        }
        if self.quorum_mode == "static":
            props["controller.quorum.voters"] = self.voters
        else:
            props["controller.quorum.bootstrap.servers"] = ",".join(f"{n.host}:{n.controller_port}"
                                                                     for n in self.initial_voters)
            # a snapshot every few seconds of new records (default: an hour): the logs then carry KRaft snapshots
            # holding the voter set (KRaftVersion and Voters records) for the audit to compare with the log
            props["metadata.log.max.snapshot.interval.ms"] = str(DYNAMIC_SNAPSHOT_INTERVAL_MS)
        if node.is_broker:
            props.update({
                "advertised.listeners": ",".join(advertised),
                "inter.broker.listener.name": "PLAINTEXT",
                "num.replica.fetchers": "1",
                "replica.lag.time.max.ms": str(REPLICA_LAG_MS),
                "replica.socket.timeout.ms": "3000",
                "offsets.topic.replication.factor": str(min(3, len(self.brokers))),
                "offsets.topic.num.partitions": "3",
                "transaction.state.log.replication.factor": str(min(3, len(self.brokers))),
                "transaction.state.log.min.isr": "1",
                "transaction.state.log.num.partitions": "3",
                "share.coordinator.state.topic.replication.factor": str(min(3, len(self.brokers))),
                "share.coordinator.state.topic.num.partitions": "3",
                "group.initial.rebalance.delay.ms": "0",
                "group.coordinator.threads": "1",
                "auto.create.topics.enable": "false",
                "log.segment.bytes": "1048576",
                "num.partitions": "1",
            })
        return props

    # -- processes ----------------------------------------------------------------------------------------------

    def classpath(self) -> str:
        if self._classpath is None:
            started = time.monotonic()
            self._classpath = jars.classpath(self.version)
            self.timings.fetch_jars = time.monotonic() - started
        return self._classpath

    def run_tool(self, tool: str, *args: str, timeout: float = 120.0, check: bool = True) -> subprocess.CompletedProcess:
        """Run one of Kafka's command-line tools (``jars.main_class``) in a bounded JVM; returns its output."""
        command = ["java", *TOOL_OPTIONS, "-cp", self.classpath(), jars.main_class(tool, self.version), *args]
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, preexec_fn=_die_with_parent)
        if check and done.returncode != 0:
            raise ClusterError(f"{tool} {' '.join(args)} exited {done.returncode}:\n{(done.stdout + done.stderr)[-3000:]}")
        return done

    def spawn_tool(self, tool: str, *args: str, output: Optional[Path] = None) -> subprocess.Popen:
        """Start one of Kafka's tools in the background (its own process group; killed by :meth:`close`)."""
        command = ["java", *TOOL_OPTIONS, "-cp", self.classpath(), jars.main_class(tool, self.version), *args]
        out = open(output, "a") if output is not None else subprocess.DEVNULL
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                   start_new_session=True, preexec_fn=_die_with_parent)
        if output is not None:
            out.close()  # type: ignore[union-attr]
        self.tools.append(process)
        return process

    def format(self) -> None:
        """Write each node's ``server.properties`` and format its storage with Kafka's storage tool."""
        started = time.monotonic()
        if self.quorum_mode == "dynamic":
            initial = self.initial_voters
            drawn = directory_ids_from_seed(self.seed, len(initial))
            self.directory_ids = dict(zip((n.node_id for n in initial), drawn))
        jobs = [(self._write_config(node), self._format_options(node)) for node in self.nodes.values()]
        with ThreadPoolExecutor(max_workers=2) as pool:  # two storage-tool JVMs at a time (2 cores)
            list(pool.map(lambda job: self.run_tool("storage", "format", "-t", self.cluster_id, "-c", str(job[0]),
                                                    *job[1]), jobs))
        self.timings.format = time.monotonic() - started
        self.log(f"formatted {len(self.nodes)} nodes, cluster id {self.cluster_id} ({self.timings.format:.1f} s)")

    def _format_options(self, node: Node) -> tuple[str, ...]:
        """The storage tool's quorum options for ``node``: none (static voters), ``--initial-controllers`` for an
        initial voter, ``--no-initial-controllers`` for the spare controller and the brokers."""
        if self.quorum_mode == "static":
            return ()
        if node.node_id in self.directory_ids:
            return ("--initial-controllers", self.initial_controllers)
        return ("--no-initial-controllers",)

    def add_controller(self, node_id: int) -> subprocess.CompletedProcess:
        """``kafka-metadata-quorum --bootstrap-controller ... --command-config NODE/server.properties add-controller``:
        the tool reads the node's id, directory id and controller endpoint from its config and storage (KIP-853)."""
        return self.run_tool("metadata-quorum", "--bootstrap-controller", self._reachable_voter_endpoints(),
                             "--command-config", str(self.nodes[node_id].folder / "server.properties"),
                             "add-controller")

    def remove_controller(self, node_id: int) -> subprocess.CompletedProcess:
        """``kafka-metadata-quorum --bootstrap-controller ... remove-controller --controller-id N
        --controller-directory-id D`` (D from the node's meta.properties)."""
        return self.run_tool("metadata-quorum", "--bootstrap-controller", self._reachable_voter_endpoints(),
                             "remove-controller", "--controller-id", str(node_id),
                             "--controller-directory-id", self.directory_id(node_id))

    def _reachable_voter_endpoints(self) -> str:
        return ",".join(f"{n.host}:{n.controller_port}" for n in self.reachable_controllers())

    def _write_config(self, node: Node) -> Path:
        node.folder.mkdir(parents=True, exist_ok=True)
        config = node.folder / "server.properties"
        config.write_text("".join(f"{k}={v}\n" for k, v in self.properties(node).items()))
        return config

    def start_node(self, node_id: int) -> None:
        node = self.nodes[node_id]
        if node.running:
            raise ClusterError(f"node {node_id} is already running")
        self._write_config(node)
        out = open(node.folder / "server.log", "a")
        out.write(f"=== start {node.starts + 1} at {time.strftime('%H:%M:%S')} ===\n")
        out.flush()
        logging: list[str] = []
        if jars.version_tuple(self.version) < (4, 0, 0):  # Kafka 3.x logs through log4j 1 (reload4j)
            config = self.root / "log4j.properties"
            config.write_text("log4j.rootLogger=WARN, stdout\nlog4j.logger.org.apache.kafka.raft=INFO\n"
                              "log4j.appender.stdout=org.apache.log4j.ConsoleAppender\n"
                              "log4j.appender.stdout.layout=org.apache.log4j.PatternLayout\n"
                              "log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n\n")
            logging.append(f"-Dlog4j.configuration=file:{config}")
        command = ["java", f"-Xmx{self.heap}", "-Xms32m", *JVM_OPTIONS, *logging, "-cp", self.classpath(),
                   jars.main_class("server", self.version), str(node.folder / "server.properties")]
        if self.network is not None:
            command = self.network.command(node_id, command)
        node.process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                        start_new_session=True, preexec_fn=_die_with_parent)
        out.close()
        node.paused = False
        node.starts += 1
        self.log(f"node {node_id} started (pid {node.process.pid}, {node.host})")

    def start(self, timeout: float = 180.0) -> None:
        """Format (if not yet), start every node, and wait until a leader is elected and every broker is unfenced."""
        started = time.monotonic()
        self.classpath()
        if not all((n.data_dir / "meta.properties").exists() for n in self.nodes.values()):
            self.format()
        started = time.monotonic()
        for node in self.controllers:
            self.start_node(node.node_id)
        for node in self.brokers:
            if not node.running:
                self.start_node(node.node_id)
        self.wait_for(lambda: self.unfenced_brokers() == {b.node_id for b in self.brokers},
                      "every broker registered and unfenced", timeout)
        self.timings.start = time.monotonic() - started
        self.log(f"cluster up in {self.timings.start:.1f} s")

    def signal(self, node_id: int, sig: int) -> None:
        node = self.nodes[node_id]
        if node.process is None or node.process.poll() is not None:
            raise ClusterError(f"node {node_id} is not running")
        os.killpg(node.process.pid, sig)

    def kill(self, node_id: int) -> None:
        """kill -9: no controlled shutdown, no clean-shutdown marker."""
        node = self.nodes[node_id]
        self.signal(node_id, signal.SIGKILL)
        assert node.process is not None
        node.process.wait(timeout=30)
        node.paused = False
        self.log(f"node {node_id} killed (SIGKILL)")

    def stop_node(self, node_id: int, timeout: float = 60.0) -> float:
        """SIGTERM: Kafka's shutdown hook; a broker makes a controlled shutdown first. Returns the seconds it took."""
        node = self.nodes[node_id]
        started = time.monotonic()
        self.signal(node_id, signal.SIGTERM)
        assert node.process is not None
        try:
            node.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(node.process.pid, signal.SIGKILL)
            node.process.wait()
            raise ClusterError(f"node {node_id} did not stop within {timeout} s of SIGTERM (killed)")
        self.log(f"node {node_id} stopped (SIGTERM, exit {node.process.returncode})")
        return time.monotonic() - started

    def pause(self, node_id: int) -> None:
        self.signal(node_id, signal.SIGSTOP)
        self.nodes[node_id].paused = True
        self.log(f"node {node_id} paused (SIGSTOP)")

    def resume(self, node_id: int) -> None:
        self.signal(node_id, signal.SIGCONT)
        self.nodes[node_id].paused = False
        self.log(f"node {node_id} resumed (SIGCONT)")

    def cut_off(self, node_id: int) -> str:
        """Cut a node off from every other (and from this process): its link down in ``netns`` mode, SIGSTOP in
        ``loopback`` mode. Returns how, for the scenario's notes."""
        if self.network is None:
            self.pause(node_id)
            return "SIGSTOP (loopback mode)"
        self.network.cut(node_id)
        self.nodes[node_id].cut = True
        self.log(f"node {node_id} cut off (link down)")
        return f"link of test host {self.nodes[node_id].host} down (netns mode)"

    def heal(self, node_id: int) -> None:
        """Undo :meth:`cut_off`."""
        if self.network is None:
            self.resume(node_id)
            return
        self.network.heal(node_id)
        self.nodes[node_id].cut = False
        self.log(f"node {node_id} healed (link up)")

    def close(self) -> None:
        """Kill every process this cluster started (process groups, SIGKILL; paused ones included), then remove its
        network (namespaces, veths, bridge)."""
        for process in [*(n.process for n in self.nodes.values()), *self.tools]:
            if process is not None and process.poll() is None:
                try:
                    os.killpg(process.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:  # pragma: no cover
                    pass
        for node in self.nodes.values():
            node.paused = node.cut = False
        if self.network is not None:
            self.network.close()
        _LIVE.discard(self)

    def stop(self, timeout: float = 60.0) -> None:
        """Stop every node gracefully: brokers one by one (each a controlled shutdown), then the controllers all at
        once (one by one, the last ones would wait for a quorum that is gone); kills what does not stop in time."""
        for node in [n for n in self.nodes.values() if n.cut]:
            self.heal(node.node_id)
        for node in [n for n in self.brokers if not n.is_controller]:
            if node.running:
                if node.paused:
                    self.resume(node.node_id)
                try:
                    self.stop_node(node.node_id, timeout)
                except ClusterError:
                    pass
        last = [n for n in self.controllers if n.running]
        for node in last:
            if node.paused:
                self.resume(node.node_id)
            os.killpg(node.process.pid, signal.SIGTERM)  # type: ignore[union-attr]
        deadline = time.monotonic() + (20.0 if any(n.is_broker for n in last) else timeout)
        for node in last:
            try:
                node.process.wait(timeout=max(0.1, deadline - time.monotonic()))  # type: ignore[union-attr]
                self.log(f"node {node.node_id} stopped (SIGTERM, exit {node.process.returncode})")  # type: ignore[union-attr]
            except subprocess.TimeoutExpired:
                self.log(f"node {node.node_id} still running after SIGTERM: killed")
        self.close()

    def __enter__(self) -> "Cluster":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- observing ----------------------------------------------------------------------------------------------

    def memory(self) -> dict[int, int]:
        """Resident memory (bytes) of each running node's JVM, from /proc."""
        sizes = {}
        for node in self.nodes.values():
            if node.running and node.process is not None:
                try:
                    for line in Path(f"/proc/{node.process.pid}/status").read_text().splitlines():
                        if line.startswith("VmRSS:"):
                            sizes[node.node_id] = int(line.split()[1]) * 1024
                except OSError:
                    pass
        return sizes

    def reachable_brokers(self) -> list[Node]:
        return [n for n in self.brokers if n.running and not n.paused and not n.cut]

    def reachable_controllers(self) -> list[Node]:
        return [n for n in self.controllers if n.running and not n.paused and not n.cut]

    def broker_view(self) -> dict[int, bool]:
        """broker id -> fenced, as every reachable broker's image says (DescribeCluster v2, fenced included); {}
        while they disagree (a broker just resumed from SIGSTOP still holds its old image) or none answers."""
        views = []
        for node in self.reachable_brokers():
            try:
                version = self._describe_cluster_version(node)
                answer = wire.describe_cluster(node.host, node.broker_port, version,  # type: ignore[arg-type]
                                               include_fenced=version >= 2)
            except (OSError, wire.WireError):
                return {}
            if answer.error_code != 0:
                return {}
            # before v2 (Kafka < 4.0) fenced brokers are not listed: a listed broker is unfenced, the others absent
            views.append({n.node_id: n.is_fenced for n in answer.nodes})
        return views[0] if views and all(v == views[0] for v in views) else {}

    def _describe_cluster_version(self, node: Node) -> int:
        """The highest DescribeCluster version (at most 2) the broker listener serves (ApiVersions, asked once)."""
        if self._dc_version is None:
            served = wire.api_versions(node.host, node.broker_port)  # type: ignore[arg-type]
            self._dc_version = min(2, served.get(wire.DESCRIBE_CLUSTER, (0, 0))[1])
        return self._dc_version

    def unfenced_brokers(self) -> set[int]:
        return {b for b, fenced in self.broker_view().items() if not fenced}

    def quorum(self) -> Optional[wire.DescribeQuorumAnswer]:
        """DescribeQuorum from whichever reachable controller is the leader (None if none answers as leader)."""
        for node in self.reachable_controllers():
            try:
                answer = wire.describe_quorum(node.host, node.controller_port, 2)  # type: ignore[arg-type]
            except (OSError, wire.WireError):
                continue
            if answer.error_code == 0 and answer.partition_error_code == 0:
                return answer
        return None

    def leader(self) -> Optional[int]:
        answer = self.quorum()
        return answer.leader_id if answer is not None else None

    def wait_for(self, condition: Callable[[], object], what: str, timeout: float = 60.0, poll: float = 0.25) -> float:
        """Wait (bounded) until ``condition()`` is true; returns the seconds waited, raises ClusterError on time-out."""
        started = time.monotonic()
        while True:
            if condition():
                return time.monotonic() - started
            if time.monotonic() - started > timeout:
                raise ClusterError(f"timed out after {timeout:.0f} s waiting for {what}; "
                                   f"brokers {self.broker_view()}, nodes running "
                                   f"{[n.node_id for n in self.nodes.values() if n.running]}\n{self.tail_logs()}")
            for node in self.nodes.values():
                if node.process is not None and node.process.poll() is not None and node.starts and \
                        node.process.returncode not in (0, 143, -9, 137, -15):
                    raise ClusterError(f"node {node.node_id} exited {node.process.returncode} while waiting for "
                                       f"{what}\n{self.tail_logs([node.node_id])}")
            time.sleep(poll)

    def tail_logs(self, node_ids: Optional[Iterable[int]] = None, lines: int = 15) -> str:
        out = []
        for nid in node_ids if node_ids is not None else self.nodes:
            path = self.nodes[nid].folder / "server.log"
            if path.exists():
                text = path.read_text(errors="replace").splitlines()[-lines:]
                out.append(f"--- node {nid} server.log (last {len(text)} lines)\n" + "\n".join(text))
        return "\n".join(out)
