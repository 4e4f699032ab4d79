"""The cluster runner's network modes (issue 20), without a JVM: each node a test host in its own network namespace,
reachable through the bridge, really cut off and healed; everything removed at the end, also when the body fails,
and leftovers of a crashed run swept; the loopback mode forced by ``$KRAFTSPEC_CLUSTER_NETWORK``."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

from kraftspec.cluster import netns
from kraftspec.cluster.runner import Cluster

needs_netns = pytest.mark.skipif(not netns.probe()[0], reason=f"network namespaces unavailable: {netns.probe()[1]}")
SERVER = ("import socket, sys\ns = socket.socket(); s.bind((sys.argv[1], 7000)); s.listen()\nprint('up', flush=True)\n"
          "while True:\n    c, _ = s.accept(); c.sendall(b'pong'); c.close()\n")


def _names(network: netns.Network) -> set[str]:
    return {network.bridge} | {h.namespace for h in network.hosts.values()} | {h.veth for h in network.hosts.values()}


def _present() -> set[str]:
    spaces, links = netns.leftovers()
    return set(spaces) | set(links)


def _answers(address: str, timeout: float = 1.5) -> bool:
    try:
        with socket.create_connection((address, 7000), timeout=timeout) as sock:
            return sock.recv(4) == b"pong"
    except OSError:
        return False


@pytest.fixture()
def network() -> Iterator[netns.Network]:
    built = netns.Network.create([1, 2])
    try:
        yield built
    finally:
        built.close()
    assert not _names(built) & _present()


@needs_netns
def test_test_hosts_talk_through_the_bridge_and_a_cut_off_host_is_unreachable_until_healed(
        network: netns.Network) -> None:
    server = subprocess.Popen(network.command(1, [sys.executable, "-c", SERVER, network.hosts[1].address]),
                              stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None and server.stdout.readline().strip() == "up"
        target = network.hosts[1].address
        assert target == f"{network.subnet}.1" and _answers(target)
        from_peer = network.command(2, [sys.executable, "-c", f"import socket; socket.create_connection(('{target}', "
                                        f"7000), timeout=1.5).recv(4)"])
        assert subprocess.run(from_peer, capture_output=True).returncode == 0  # node 2 reaches node 1
        network.cut(1)
        assert network.hosts[1].cut and not _answers(target)
        assert subprocess.run(from_peer, capture_output=True).returncode != 0
        assert server.poll() is None  # the node cut off keeps running on its side
        network.heal(1)
        assert _answers(target, timeout=5.0)
    finally:
        server.kill()
        server.wait()


@needs_netns
def test_leftovers_of_a_dead_run_are_swept_and_a_live_runs_are_kept() -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    pid = int(dead.stdout)
    stale_space, stale_bridge = f"kraftspec-{pid}-a-n1", f"ks{pid}ab"
    subprocess.run(["ip", "netns", "add", stale_space], check=True)
    subprocess.run(["ip", "link", "add", stale_bridge, "type", "bridge"], check=True)
    live = netns.Network.create([3])  # creating a network sweeps first
    try:
        present = _present()
        assert stale_space not in present and stale_bridge not in present
        assert _names(live) <= present
        assert netns.sweep() == [] and _names(live) <= _present()  # this process is alive: its network stays
    finally:
        live.close()


@needs_netns
def test_a_cluster_removes_its_namespaces_when_its_body_fails(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="a failing test"):
        with Cluster(tmp_path / "c", network="netns") as cluster:
            assert cluster.mode == "netns" and cluster.network is not None
            names = _names(cluster.network)
            assert names <= _present()
            assert [n.host for n in cluster.nodes.values()] == [f"{cluster.network.subnet}.{i}" for i in range(1, 7)]
            assert cluster.voters == ",".join(f"{i}@{cluster.network.subnet}.{i}:9093" for i in (1, 2, 3))
            raise RuntimeError("a failing test")
    assert not names & _present()


def test_the_loopback_mode_is_forced_by_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(netns.ENV, "loopback")
    assert netns.choose_mode() == ("loopback", f"loopback forced by ${netns.ENV}")
    with Cluster(tmp_path / "c", layout="combined") as cluster:
        assert cluster.mode == "loopback" and cluster.network is None
        assert {n.host for n in cluster.nodes.values()} == {"127.0.0.1"}
    monkeypatch.setenv(netns.ENV, "wifi")
    with pytest.raises(netns.NetworkError, match="one of auto, netns, loopback"):
        netns.choose_mode()


def test_an_unknown_network_mode_exits_2(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from kraftspec.cli import main

    monkeypatch.setenv(netns.ENV, "wifi")
    assert main(["cluster", "run", "broker-paused"]) == 2
    assert "network mode 'wifi'" in capsys.readouterr().err


def test_without_namespaces_auto_falls_back_to_loopback_and_netns_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(netns.ENV, raising=False)
    monkeypatch.setattr(netns, "probe", lambda: (False, "not root"))
    assert netns.choose_mode() == ("loopback", "namespaces unavailable (not root): 127.0.0.1 ports")
    with pytest.raises(netns.NetworkError, match="demanded but unavailable: not root"):
        netns.choose_mode("netns")
