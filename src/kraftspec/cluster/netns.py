"""Network namespaces for the cluster runner: each node on a test host of its own, so that a node can really be cut off.

A :class:`Network` is one Linux bridge in the root namespace (address ``10.217.X.254/24``, a subnet not yet routed
here) and, per node, a network namespace holding one end of a veth pair (address ``10.217.X.N``, N the node id)
whose other end is a port of the bridge. Python, Kafka's tools and the checks stay in the root namespace and reach
every node through the bridge; the nodes reach each other the same way. Cutting a node off sets the bridge side of
its veth down (nothing passes either way until it is set up again); the node keeps running on its side.

Every name starts with the project's prefixes and carries the owning process id (namespaces
``kraftspec-PID-L-nN``, links ``ksPIDLb`` for the bridge and ``ksPIDLhN`` for a veth, L a letter per network of one
process), so :func:`sweep` can remove what a crashed earlier run left without touching a live run's. A network is
removed by :meth:`Network.close` (also at exit); deleting a namespace deletes its veth pair.

:func:`choose_mode` picks ``netns`` when this process may use them (root, ``ip netns``, veth and bridge permitted,
probed once) and ``loopback`` otherwise; ``KRAFTSPEC_CLUSTER_NETWORK=loopback`` (or ``--network loopback``) forces
the loopback mode, ``netns`` demands namespaces.
"""

from __future__ import annotations

import atexit
import ipaddress
import itertools
import os
import re
import shutil
import subprocess
import weakref
from dataclasses import dataclass, field
from typing import Optional

NETNS_PREFIX = "kraftspec-"
LINK_PREFIX = "ks"
SUBNET_PREFIX = "10.217."
ENV = "KRAFTSPEC_CLUSTER_NETWORK"
MODES = ("auto", "netns", "loopback")

_NETNS_NAME = re.compile(r"^kraftspec-(\d+)-[a-z]-n\d+$")
_LINK_NAME = re.compile(r"^ks(\d+)[a-z](?:b|h\d+)(?:@\S+)?$")
_LIVE: "weakref.WeakSet[Network]" = weakref.WeakSet()
_letters = itertools.cycle("abcdefghijklmnopqrstuvwxy")  # "z" is the probe's


class NetworkError(RuntimeError):
    """An ``ip`` command failed while building, changing or removing a network."""


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    """Run ``ip ARGS`` (iproute2); raise :class:`NetworkError` with its stderr when ``check`` and it fails."""
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if check and done.returncode != 0:
        raise NetworkError(f"ip {' '.join(args)} exited {done.returncode}: {done.stderr.strip()}")
    return done


def _alive(pid: int) -> bool:
    """Whether a process with this id exists (a leftover's owner still running)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def leftovers() -> tuple[list[str], list[str]]:
    """The project's namespaces and links (bridges, host-side veths) here, whatever their owner: ``(netns, links)``."""
    spaces = [line.split()[0] for line in _ip("netns", "list", check=False).stdout.splitlines() if line.strip()]
    links = [line.split()[0].split("@")[0] for line in _ip("-br", "link", check=False).stdout.splitlines() if line.strip()]
    return [n for n in spaces if _NETNS_NAME.match(n)], [n for n in links if _LINK_NAME.match(n)]


def sweep() -> list[str]:
    """Remove the namespaces and links that runs whose process is gone left behind (a crashed run); returns their
    names. A live process's network is left alone."""
    spaces, links = leftovers()
    removed = []
    for name in spaces:
        match = _NETNS_NAME.match(name)
        if match and not _alive(int(match.group(1))) and _ip("netns", "delete", name, check=False).returncode == 0:
            removed.append(name)
    for name in links:
        match = _LINK_NAME.match(name)
        if match and not _alive(int(match.group(1))) and _ip("link", "delete", name, check=False).returncode == 0:
            removed.append(name)
    return removed


_probed: Optional[tuple[bool, str]] = None


def probe() -> tuple[bool, str]:
    """Whether namespaces can be used here, and why not: root, ``ip`` on the PATH, and a namespace, a veth pair and a
    bridge actually created (and removed) under the project's prefix. Probed once per process."""
    global _probed
    if _probed is not None:
        return _probed
    if os.geteuid() != 0:
        _probed = (False, "not root")
    elif shutil.which("ip") is None:
        _probed = (False, "no ip command (iproute2)")
    else:
        tag = f"{os.getpid()}z"
        space, bridge, veth = f"{NETNS_PREFIX}{os.getpid()}-z-n0", f"{LINK_PREFIX}{tag}b", f"{LINK_PREFIX}{tag}h0"
        try:
            _ip("netns", "add", space)
            _ip("link", "add", bridge, "type", "bridge")
            _ip("link", "add", veth, "type", "veth", "peer", "name", f"{LINK_PREFIX}{tag}n0", "netns", space)
            _probed = (True, "root, and ip netns, veth and bridge are permitted")
        except (NetworkError, OSError, subprocess.TimeoutExpired) as exc:
            _probed = (False, f"namespaces not permitted ({exc})")
        finally:
            _ip("link", "delete", bridge, check=False)
            _ip("netns", "delete", space, check=False)  # deletes the veth pair with it
    return _probed


def choose_mode(requested: Optional[str] = None) -> tuple[str, str]:
    """``(mode, why)``: the network mode a cluster runs in, from ``requested`` (else ``$KRAFTSPEC_CLUSTER_NETWORK``,
    else ``auto``). Raises NetworkError on an unknown mode or when ``netns`` is demanded but unavailable."""
    wanted = requested or os.environ.get(ENV) or "auto"
    if wanted not in MODES:
        raise NetworkError(f"network mode {wanted!r}: one of {', '.join(MODES)} (option --network or ${ENV})")
    if wanted == "loopback":
        return "loopback", "loopback forced" + ("" if requested else f" by ${ENV}")
    usable, why = probe()
    if usable:
        return "netns", why
    if wanted == "netns":
        raise NetworkError(f"network namespaces demanded but unavailable: {why}")
    return "loopback", f"namespaces unavailable ({why}): 127.0.0.1 ports"


def _free_subnet() -> str:
    """The first ``10.217.X.0/24`` (X from 1) that no route here covers yet."""
    used = _ip("-4", "route", "show", check=False).stdout + _ip("-4", "addr", "show", check=False).stdout
    taken = [ipaddress.ip_network(m, strict=False) for m in re.findall(r"(\d+\.\d+\.\d+\.\d+/\d+)", used)]
    for x in range(1, 255):
        net = ipaddress.ip_network(f"{SUBNET_PREFIX}{x}.0/24")
        if not any(net.overlaps(t) for t in taken):
            return f"{SUBNET_PREFIX}{x}"
    raise NetworkError(f"no free {SUBNET_PREFIX}X.0/24 subnet")


@dataclass
class Host:
    """A node's test host: its namespace, the bridge-side veth, its address, and whether it is cut off."""

    namespace: str
    veth: str
    address: str
    cut: bool = False


@dataclass(eq=False)
class Network:
    """A bridge and one namespace per node (see the module docstring). Build with :meth:`create`."""

    bridge: str
    subnet: str
    tag: str
    hosts: dict[int, Host] = field(default_factory=dict)
    closed: bool = False

    @classmethod
    def create(cls, node_ids: list[int]) -> "Network":
        """Sweep leftovers of dead runs, then build the bridge and a namespace per node id (1..253)."""
        sweep()
        tag = f"{os.getpid()}{next(_letters)}"
        network = cls(f"{LINK_PREFIX}{tag}b", _free_subnet(), tag)
        _LIVE.add(network)
        try:
            _ip("link", "add", network.bridge, "type", "bridge", "forward_delay", "0")
            _ip("addr", "add", f"{network.subnet}.254/24", "dev", network.bridge)
            _ip("link", "set", network.bridge, "up")
            for node_id in node_ids:
                network._add_host(node_id)
        except BaseException:
            network.close()
            raise
        return network

    def _add_host(self, node_id: int) -> None:
        """A namespace with loopback up and a veth end at ``SUBNET.node_id``, the other end on the bridge."""
        if not 1 <= node_id <= 253:
            raise NetworkError(f"node id {node_id}: a test host needs an id in 1..253")
        space = f"{NETNS_PREFIX}{self.tag[:-1]}-{self.tag[-1]}-n{node_id}"
        veth, inner = f"{LINK_PREFIX}{self.tag}h{node_id}", f"{LINK_PREFIX}{self.tag}n{node_id}"
        host = Host(space, veth, f"{self.subnet}.{node_id}")
        _ip("netns", "add", space)
        self.hosts[node_id] = host
        _ip("link", "add", veth, "type", "veth", "peer", "name", inner, "netns", space)
        _ip("link", "set", veth, "master", self.bridge)
        _ip("link", "set", veth, "up")
        _ip("-n", space, "link", "set", "lo", "up")
        _ip("-n", space, "addr", "add", f"{host.address}/24", "dev", inner)
        _ip("-n", space, "link", "set", inner, "up")

    def command(self, node_id: int, argv: list[str]) -> list[str]:
        """``argv`` run inside the node's namespace (``ip netns exec`` replaces itself with it: same pid)."""
        return ["ip", "netns", "exec", self.hosts[node_id].namespace, *argv]

    def cut(self, node_id: int) -> None:
        """Cut the node off: its bridge port down, so no packet reaches it or leaves it."""
        _ip("link", "set", self.hosts[node_id].veth, "down")
        self.hosts[node_id].cut = True

    def heal(self, node_id: int) -> None:
        """Reconnect a node cut off by :meth:`cut`."""
        _ip("link", "set", self.hosts[node_id].veth, "up")
        self.hosts[node_id].cut = False

    def close(self) -> None:
        """Delete every namespace (and with it its veth pair) and the bridge; idempotent, never raises."""
        if self.closed:
            return
        for host in self.hosts.values():
            _ip("netns", "delete", host.namespace, check=False)
            _ip("link", "delete", host.veth, check=False)  # gone with its namespace unless that failed
        _ip("link", "delete", self.bridge, check=False)
        self.closed = True
        _LIVE.discard(self)


def _close_all() -> None:
    """At exit: remove every network this process still holds."""
    for network in list(_LIVE):
        network.close()


atexit.register(_close_all)
