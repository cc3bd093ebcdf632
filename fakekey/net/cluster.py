"""fakekey.Cluster: a Valkey cluster's nodes in one process, each a whole fakekey server
(its own port, keyspace, clients and config) with `cluster-enabled yes`, formed as
`valkey-cli --cluster create` forms one: slots split as it splits them, a config epoch per
node, replicas attached; one clock for every node; one event loop thread for them all.

    with fakekey.Cluster(primaries=3) as cluster:
        client = redis.cluster.RedisCluster.from_url(cluster.url)
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from fakekey.core.cluster import Bus, ClusterView, split_slots
from fakekey.net.server import Server, new_event_loop
from fakekey.persistence.replicas import attach, promote, replica_feed


class Node:
    """One node of a Cluster: its server, address, id and role (as it is now)."""

    def __init__(self, server: Server) -> None:
        self.server = server

    @property
    def role(self) -> str:
        return "primary" if self.view.myself.is_primary else "replica"

    @property
    def host(self) -> str:
        return self.server.host

    @property
    def port(self) -> int:
        return self.server.port

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def view(self) -> ClusterView:
        view = self.server.state.cluster
        assert view is not None
        return view

    @property
    def node_id(self) -> str:
        return self.view.myself.id

    def __repr__(self) -> str:
        return f"<Node {self.role} {self.host}:{self.port} {self.node_id[:8]}>"


class Cluster:
    """`primaries` primaries and `replicas` replicas of each. `port`: the first node's port
    (the others follow it), or 0 for free ports. Settings apply to every node."""

    def __init__(self, primaries: int = 3, replicas: int = 0, *, host: str = "127.0.0.1",
                 port: int = 0, config: list[tuple[str, Any]] | None = None,
                 **settings: Any) -> None:
        if primaries < 1:
            raise ValueError("a cluster needs at least one primary")
        if replicas < 0:
            raise ValueError("replicas must be 0 or more")
        self.primaries_count = primaries
        self.replicas_count = replicas
        self.host = host
        self.first_port = port
        self.settings = settings
        self.config = config or []  # directives, as Server's config= takes them
        self.nodes: list[Node] = []
        self.bus = Bus()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    # --- what it is ---------------------------------------------------------------------

    @property
    def primaries(self) -> list[Node]:
        return [n for n in self.nodes if n.role == "primary"]

    @property
    def replicas(self) -> list[Node]:
        return [n for n in self.nodes if n.role == "replica"]

    @property
    def startup_nodes(self) -> list[tuple[str, int]]:
        return [(n.host, n.port) for n in self.nodes]

    @property
    def url(self) -> str:
        return self.nodes[0].url

    # --- start and stop ------------------------------------------------------------------

    def start(self) -> Cluster:
        """Start every node on one event loop thread; returns when the cluster is formed."""
        loop = new_event_loop()
        self._loop = loop
        ready = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(loop)
            loop.call_soon(ready.set)
            loop.run_forever()
            loop.close()

        self._thread = threading.Thread(target=run, name=f"fakekey-cluster-{id(self)}", daemon=True)
        self._thread.start()
        ready.wait()
        try:
            self._run(self._start_nodes())
        except BaseException:
            self.stop()
            raise
        return self

    async def start_async(self) -> Cluster:
        """Start every node in the running loop."""
        self._loop = asyncio.get_running_loop()
        await self._start_nodes()
        return self

    async def _start_nodes(self) -> None:
        count = self.primaries_count * (1 + self.replicas_count)
        for i in range(count):
            port = self.first_port + i if self.first_port else 0
            server = Server(self.host, port, config=self.config, cluster_enabled="yes", **self.settings)
            server._loop = asyncio.get_running_loop()
            server.cluster_bus_wanted = False  # its nodes gossip on the in-process Bus
            await server.start_async()
            self.nodes.append(Node(server))
        self._form()

    def _form(self) -> None:
        """What valkey-cli --cluster create does, at once: every node meets every other,
        a config epoch each, the slots split, the replicas attached; then one clock."""
        views = [node.view for node in self.nodes]
        states = [node.server.state for node in self.nodes]
        clock = states[0].clock
        for state in states:
            state.clock = clock
            state.clock_peers = states
        for epoch, view in enumerate(views, 1):
            view.myself.host = self.host
            view.myself.config_epoch = epoch
            view.current_epoch = len(views)
            self.bus.join(view)
        for view in views:
            for other in views:
                if other is not view:
                    view.meet_node(other.myself)
        for view, (first, last) in zip(views, split_slots(self.primaries_count), strict=False):
            for slot in range(first, last + 1):
                view.claim(slot, view.myself)
        firsts = self.nodes[:self.primaries_count]  # as started: the primaries, then replicas
        for k, replica in enumerate(self.nodes[self.primaries_count:]):
            self._attach(replica, firsts[k % self.primaries_count])
        self.bus.promote = promote
        self.bus.follow = attach
        self.bus.controls = WireControls(self)
        for view in views:
            view.announce()

    @staticmethod
    def _attach(replica: Node, primary: Node) -> None:
        """CLUSTER REPLICATE: `replica` takes `primary`'s data and follows its writes."""
        state = primary.server.state
        attach(replica.server.state, state)
        mine = replica.view.myself
        mine.primary = replica.view.nodes[primary.node_id]
        mine.shard_id = primary.view.myself.shard_id
        mine.repl_offset = replica.server.state.repl_offset
        primary.view.myself.repl_offset = replica.server.state.repl_offset

    def stop(self) -> None:
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        if not loop.is_closed() and loop.is_running():
            with_timeout = asyncio.run_coroutine_threadsafe(self.stop_async(), loop)
            with_timeout.result(10)
            loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        self._thread = self._loop = None

    async def stop_async(self) -> None:
        for node in self.nodes:
            await node.server.stop_async()

    def __enter__(self) -> Cluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def __aenter__(self) -> Cluster:
        return await self.start_async()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop_async()

    # --- the one clock -------------------------------------------------------------------

    def freeze(self, ms: int | None = None) -> None:
        """Stop every node's clock (at `ms`, or now)."""
        first = self.nodes[0].server
        first.freeze(ms)

    def advance(self, ms: int = 0, *, seconds: float = 0) -> None:
        self.nodes[0].server.advance(ms, seconds=seconds)

    def real_time(self) -> None:
        self.nodes[0].server.real_time()

    @contextmanager
    def frozen(self, ms: int | None = None) -> Iterator[Cluster]:
        self.freeze(ms)
        try:
            yield self
        finally:
            self.real_time()

    # --- failures ----------------------------------------------------------------------------

    def failover(self, node: Node) -> None:
        """CLUSTER FAILOVER on `node`, a replica: it becomes its shard's primary."""
        self._on_loop(promote, node.server.state)

    def kill(self, node: Node) -> None:
        """The node's process dies: connections refused, its peers stop hearing from it
        (after cluster-node-timeout on the cluster's clock they mark it failing, and a
        replica of a failed primary takes over)."""
        def down() -> None:
            node.view.alive = False
            node.view.down_since = node.server.state.clock.now_ms()
            node.server.faults._network.down(0)
            self._look()
        self._on_loop(down)

    def restart(self, node: Node) -> None:
        """The node comes back with its data and node id, and rejoins."""
        def up() -> None:
            node.server.faults._network.up()
            node.view.alive = True
            self.bus.rejoined(node.view)
            self._catch_up()
        self._on_loop(up)

    def partition(self, a: list[Node] | Node, b: list[Node] | Node) -> None:
        """The nodes of `a` and of `b` stop seeing each other (clients still reach all)."""
        side_a = a if isinstance(a, list) else [a]
        side_b = b if isinstance(b, list) else [b]

        def cut() -> None:
            for x in side_a:
                for y in side_b:
                    self.bus.cut.add(frozenset((x.node_id, y.node_id)))
            self._look()
        self._on_loop(cut)

    def heal(self) -> None:
        """Every node sees every live node again; they exchange what they claim."""
        def mend() -> None:
            self.bus.cut.clear()
            for node in self.nodes:
                if node.view.alive:
                    self.bus.rejoined(node.view)
            self._look()
            self._catch_up()
        self._on_loop(mend)

    def _catch_up(self) -> None:
        for node in self.nodes:
            feed = replica_feed(node.server.state)  # under a Propagation too (real replicas)
            if feed is not None:
                feed.catch_up()

    def _look(self) -> None:
        """The nodes notice at once whom they no longer hear (the timeout starts now)."""
        self.bus.tick(self.nodes[0].server.state.clock.now_ms())

    def _on_loop(self, fn: Any, *args: Any) -> Any:
        return self.nodes[0].server._on_loop(fn, *args)

    # --- helpers -----------------------------------------------------------------------------

    def node_for_slot(self, slot: int) -> Node:
        """The node serving `slot`, as a live node sees it."""
        seer = next((n for n in self.nodes if n.view.alive), self.nodes[0])
        owner = seer.view.owners[slot]
        for node in self.nodes:
            if owner is not None and node.node_id == owner.id:
                return node
        raise LookupError(f"no node serves slot {slot}")

    def _run(self, coro: Any) -> Any:
        loop = self._loop
        assert loop is not None
        return asyncio.run_coroutine_threadsafe(coro, loop).result(30)


class WireControls:
    """FAKEKEY.CLUSTER's way to this cluster's failures (core/cluster_controls.py): the
    nodes by id, on the loop already (a command runs there)."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster

    def _node(self, node_id: str) -> Node:
        return next(n for n in self.cluster.nodes if n.node_id == node_id)

    def kill(self, node_id: str) -> None:
        self.cluster.kill(self._node(node_id))

    def restart(self, node_id: str) -> None:
        self.cluster.restart(self._node(node_id))

    def failover(self, node_id: str) -> None:
        self.cluster.failover(self._node(node_id))

    def partition(self, side_a: list[str], side_b: list[str]) -> None:
        self.cluster.partition([self._node(i) for i in side_a], [self._node(i) for i in side_b])

    def heal(self) -> None:
        self.cluster.heal()
