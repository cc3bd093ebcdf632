"""Lone cluster nodes, each a process of its own (`fakekey-server --cluster-enabled yes
--port 0`, or a real valkey-server on a free port whose bus port is free), for the tests
that join them by hand: CLUSTER MEET and ADDSLOTS, or `redis-cli --cluster create`.

    with NodeProcesses("fakekey", 3, cluster_node_timeout=500) as nodes:
        nodes[0].call("CLUSTER", "MEET", "127.0.0.1", nodes[1].port)

Every process started is killed and reaped on exit, whatever happened."""

from __future__ import annotations

import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

from fakekey.testing.raw import RawClient
from fakekey.testing.servers import setting_flags
from fakekey.testing.targets import find_valkey_binary, free_port, server_flags

START_TIMEOUT = 20.0  # seconds a process may take to say it is ready


class NodeProcess:
    """One cluster-enabled server process and its folder."""

    def __init__(self, kind: str, directory: str, flags: list[str]) -> None:
        self.kind = kind
        self.host = "127.0.0.1"
        self.port = 0
        self.dir = directory
        self.flags = flags
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def start(self) -> None:
        if self.kind == "fakekey":
            self._start_fakekey()
        else:
            self._start_valkey()

    def _start_fakekey(self) -> None:
        args = [sys.executable, "-m", "fakekey", "--port", "0", "--cluster-enabled", "yes",
                *server_flags(self.dir), *self.flags]
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     stdin=subprocess.DEVNULL)
        self.port = _ready_port(self.proc)

    def _start_valkey(self) -> None:
        binary = find_valkey_binary()
        assert binary is not None
        self.port = port_with_free_bus()
        self.proc = subprocess.Popen(
            [binary, "--port", str(self.port), "--cluster-enabled", "yes",
             "--cluster-config-file", "nodes.conf", *server_flags(self.dir), *self.flags],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)

    def wait_ready(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            try:
                if self.call("PING") == ("+", b"PONG"):
                    return
            except OSError:
                pass
            if time.monotonic() > deadline or (self.proc is not None and self.proc.poll() is not None):
                raise RuntimeError(f"{self.kind} cluster node did not start on port {self.port}")
            time.sleep(0.02)

    def call(self, *args: Any) -> Any:
        with RawClient(self.host, self.port, timeout=10) as client:
            return client.call(*args)

    def info(self) -> dict[str, str]:
        text = self.call("CLUSTER", "INFO")[1].decode()
        return dict(line.split(":", 1) for line in text.split("\r\n") if ":" in line)

    def nodes(self) -> list[list[str]]:
        """CLUSTER NODES, a list of fields per line."""
        return [line.split() for line in self.call("CLUSTER", "NODES")[1].decode().splitlines()]

    def node_id(self) -> str:
        return str(self.call("CLUSTER", "MYID")[1].decode())

    def bus_port(self) -> int:
        myself = next(fields for fields in self.nodes() if "myself" in fields[2])
        return int(myself[1].split("@")[1].split(",")[0])

    def signal(self, signum: int) -> None:
        assert self.proc is not None
        self.proc.send_signal(signum)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


class NodeProcesses:
    """`count` lone cluster nodes of `kind` ("fakekey" or "valkey"), started together."""

    def __init__(self, kind: str, count: int, **settings: Any) -> None:
        self.kind = kind
        self.count = count
        self.flags = setting_flags(settings)
        self.root = tempfile.mkdtemp(prefix=f"fakekey-nodes-{kind}-")
        self.nodes: list[NodeProcess] = []

    def __enter__(self) -> list[NodeProcess]:
        try:
            for i in range(self.count):
                directory = os.path.join(self.root, str(i))
                os.mkdir(directory)
                node = NodeProcess(self.kind, directory, self.flags)
                self.nodes.append(node)
                node.start()
            for node in self.nodes:
                node.wait_ready()
        except BaseException:
            self.stop()
            raise
        return self.nodes

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        for node in self.nodes:
            if node.proc is not None and node.proc.poll() is None:
                node.proc.send_signal(signal.SIGCONT)  # a stopped one must die too
                node.proc.kill()
        for node in self.nodes:
            if node.proc is not None:
                node.proc.wait(10)
        shutil.rmtree(self.root, ignore_errors=True)


def _ready_port(proc: subprocess.Popen[bytes]) -> int:
    """The port of fakekey-server's `fakekey ready port=PORT ...` line (its log comes first)."""
    assert proc.stdout is not None
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 0.5)
        if not ready:
            continue
        line = proc.stdout.readline().decode()
        if not line:
            break
        if line.startswith("fakekey ready port="):
            return int(line.split("port=")[1].split()[0])
    raise RuntimeError("fakekey-server did not say it was ready")


def port_with_free_bus() -> int:
    """A free port whose cluster bus port (+10000) is free too."""
    while True:
        port = free_port()
        if port + 10000 > 65535:
            continue
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port + 10000))
            except OSError:
                continue
        return port


def wait_for(what: str, check: Callable[[], bool], timeout: float = 15.0) -> None:
    """Poll `check` until it holds; AssertionError naming `what` past the deadline."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def join_by_meet(nodes: list[NodeProcess]) -> None:
    """A MEET B, B MEET C, ...: gossip must do the rest."""
    for a, b in zip(nodes, nodes[1:], strict=False):
        assert a.call("CLUSTER", "MEET", b.host, b.port) == ("+", b"OK")


def give_slots(nodes: list[NodeProcess], ranges: list[tuple[int, int]]) -> None:
    for node, (first, last) in zip(nodes, ranges, strict=True):
        assert node.call("CLUSTER", "ADDSLOTSRANGE", first, last) == ("+", b"OK")


def all_ok(nodes: list[NodeProcess]) -> bool:
    """Every node says cluster_state:ok and knows every node, none in handshake."""
    for node in nodes:
        if node.info().get("cluster_state") != "ok":
            return False
        lines = node.nodes()
        if len(lines) != len(nodes) or any("handshake" in fields[2] for fields in lines):
            return False
    return True


# --- replicas and failover (3 primaries, 3 replicas) --------------------------------------------


def cluster_create(nodes: list[NodeProcess], replicas: int = 0) -> str:
    """`redis-cli --cluster create` (or valkey-cli's) over `nodes`, `replicas` per primary;
    its output. AssertionError when it fails; None of it when no such tool is installed."""
    cli = shutil.which("redis-cli") or shutil.which("valkey-cli")
    assert cli is not None, "no redis-cli or valkey-cli"
    done = subprocess.run([cli, "--cluster", "create", *(n.address for n in nodes),
                           "--cluster-replicas", str(replicas), "--cluster-yes"],
                          capture_output=True, timeout=60, check=False)
    output = done.stdout.decode() + done.stderr.decode()
    assert done.returncode == 0, output
    return output


def replication_info(node: NodeProcess) -> dict[str, str]:
    text = node.call("INFO", "replication")[1].decode()
    return dict(line.split(":", 1) for line in text.split("\r\n") if ":" in line)


def shards_formed(nodes: list[NodeProcess], primaries: int) -> bool:
    """Every live node says cluster_state:ok and sees `primaries` primaries serving slots,
    each other node a replica of one of them, none failing; every replica's link is up."""
    for node in nodes:
        if node.info().get("cluster_state") != "ok":
            return False
        lines = node.nodes()
        if len(lines) != len(nodes) or any("fail" in f[2] or "handshake" in f[2] for f in lines):
            return False
        serving = {f[0] for f in lines if "master" in f[2] and len(f) > 8}
        if len(serving) != primaries or any(f[3] not in serving for f in lines if "slave" in f[2]):
            return False
        role = replication_info(node)
        if role.get("role") == "slave" and role.get("master_link_status") != "up":
            return False
    return True


def primary_of(nodes: list[NodeProcess], replica: NodeProcess) -> NodeProcess:
    """The process `replica` replicates, as its own CLUSTER NODES says."""
    mine = next(f for f in replica.nodes() if "myself" in f[2])
    return next(n for n in nodes if n.node_id() == mine[3])
