"""The client matrix, on fakekey's cluster and on a real Valkey cluster (3 primaries, a
replica each): redis-py's RedisCluster (sync and asyncio), valkey-py's ValkeyCluster and
valkey-glide's GlideClusterClient, each holding the slot map it learnt, then:

- MOVED after a reshard: a slot and its keys moved (SETSLOT IMPORTING/MIGRATING, MIGRATE,
  SETSLOT NODE); the client follows the redirect to the new owner.
- ASK during one: a key already migrated while the slot is MIGRATING on its source and
  IMPORTING on its target; the client follows ASK (ASKING, then the command) to the
  target, reads and writes, while the keys not yet moved are served by the source.
- A failover (CLUSTER FAILOVER on the shard's replica): the client goes on reading and
  writing through the new primary.

Each test leaves the cluster as it found it: the slot moved back, the failover undone."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from fakekey.core.cluster import key_slot
from fakekey.testing.clusters import cluster_for_tests, cluster_targets, settle
from fakekey.testing.raw import RawClient

TARGETS = cluster_targets()
CLIENTS = ["redis-py", "redis-py-asyncio", "valkey-py", "glide"]


@pytest.fixture(scope="module", params=TARGETS)
def cluster(request: pytest.FixtureRequest) -> Iterator[Any]:
    with cluster_for_tests(request.param) as started:
        yield started


# --- the clients, each behind the same small face --------------------------------------------


class SyncDriver:
    def __init__(self, client: Any) -> None:
        self.client = client

    def get(self, key: str) -> Any:
        return self.client.get(key)

    def set(self, key: str, value: str) -> Any:
        return self.client.set(key, value)

    def close(self) -> None:
        self.client.close()


class AsyncDriver:
    """An asyncio client on a loop of its own, driven one call at a time."""

    def __init__(self, make: Callable[[], Any], close: str) -> None:
        self.loop = asyncio.new_event_loop()
        self.client = self.loop.run_until_complete(make())
        self.close_name = close

    def get(self, key: str) -> Any:
        return self.loop.run_until_complete(self.client.get(key))

    def set(self, key: str, value: str) -> Any:
        return self.loop.run_until_complete(self.client.set(key, value))

    def close(self) -> None:
        try:
            self.loop.run_until_complete(getattr(self.client, self.close_name)())
        finally:
            self.loop.close()


def driver(name: str, cluster: Any) -> Any:
    nodes = cluster.startup_nodes
    if name == "redis-py":
        from redis.cluster import ClusterNode, RedisCluster
        return SyncDriver(RedisCluster(startup_nodes=[ClusterNode(h, p) for h, p in nodes]))
    if name == "valkey-py":
        from valkey.cluster import ClusterNode as ValkeyNode
        from valkey.cluster import ValkeyCluster
        return SyncDriver(ValkeyCluster(startup_nodes=[ValkeyNode(h, p) for h, p in nodes]))
    if name == "redis-py-asyncio":
        from redis.asyncio.cluster import ClusterNode as AsyncNode
        from redis.asyncio.cluster import RedisCluster as AsyncCluster

        async def make_redis() -> Any:
            client = AsyncCluster(startup_nodes=[AsyncNode(h, p) for h, p in nodes])
            await client.initialize()
            return client
        return AsyncDriver(make_redis, "aclose")
    glide = pytest.importorskip("glide")

    async def make_glide() -> Any:
        config = glide.GlideClusterClientConfiguration([glide.NodeAddress(h, p) for h, p in nodes])
        return await glide.GlideClusterClient.create(config)
    return AsyncDriver(make_glide, "close")


@pytest.fixture(params=CLIENTS)
def client(request: pytest.FixtureRequest, cluster: Any) -> Iterator[Any]:
    made = driver(request.param, cluster)
    try:
        yield made
    finally:
        made.close()


# --- the cluster, node by node -----------------------------------------------------------------


def call(node: Any, *args: Any) -> Any:
    with RawClient(node.host, node.port) as raw:
        return raw.call(*args)


def ok(reply: Any) -> None:
    assert reply == ("+", b"OK"), reply


def my_id(node: Any) -> bytes:
    return bytes(call(node, "CLUSTER", "MYID")[1])


def nodes_table(node: Any) -> dict[bytes, list[bytes]]:
    """CLUSTER NODES as id -> its fields."""
    return {line.split()[0]: line.split() for line in call(node, "CLUSTER", "NODES")[1].splitlines()}


def owner(cluster: Any, slot: int, seer: Any = None) -> Any:
    """The node serving `slot` now, as `seer`'s (by default the first node's) CLUSTER
    SLOTS says."""
    _kind, ranges = call(seer or cluster.nodes[0], "CLUSTER", "SLOTS")
    for _k, entry in ranges:
        if entry[0][1] <= slot <= entry[1][1]:
            port = entry[2][1][1][1]
            return next(n for n in cluster.nodes if n.port == port)
    raise LookupError(slot)


def replica_of(cluster: Any, primary: Any) -> Any:
    primary_id = my_id(primary)
    return next(n for n in cluster.nodes if nodes_table(n)[my_id(n)][3] == primary_id)


def tagged_keys(tag: str) -> tuple[int, list[str]]:
    keys = [f"{{{tag}}}:{i}" for i in range(3)]
    return key_slot(keys[0].encode()), keys


def asking_get(node: Any, key: str) -> Any:
    """GET on a node importing the key's slot: ASKING first, as a client that follows ASK."""
    with RawClient(node.host, node.port) as raw:
        ok(raw.call("ASKING"))
        return raw.call("GET", key)


def migrate(source: Any, target: Any, keys: list[str]) -> None:
    ok(call(source, "MIGRATE", target.host, str(target.port), "", "0", "5000", "KEYS", *keys))


def open_slot(slot: int, source: Any, target: Any) -> None:
    ok(call(target, "CLUSTER", "SETSLOT", str(slot), "IMPORTING", my_id(source)))
    ok(call(source, "CLUSTER", "SETSLOT", str(slot), "MIGRATING", my_id(target)))


def close_slot(cluster: Any, slot: int, source: Any, target: Any) -> None:
    """Every key left moved, then the slot given to `target` (target and source first, as
    valkey-cli does, then every other primary)."""
    _kind, left = call(source, "CLUSTER", "GETKEYSINSLOT", str(slot), "1000")
    if left:
        migrate(source, target, [k[1].decode() for k in left])
    target_id = my_id(target)
    ok(call(target, "CLUSTER", "SETSLOT", str(slot), "NODE", target_id))
    ok(call(source, "CLUSTER", "SETSLOT", str(slot), "NODE", target_id))
    for node in cluster.nodes:
        if node not in (source, target) and b"master" in nodes_table(node)[my_id(node)][2]:
            ok(call(node, "CLUSTER", "SETSLOT", str(slot), "NODE", target_id))
    # replicas learn it from their primaries' gossip (Valkey's within a moment): a client
    # that asks one for the slot map before then would be sent round in MOVED
    wait_until(lambda: all(owner(cluster, slot, node) is target for node in cluster.nodes),
               "every node to see the slot's new owner")


def move_slot(cluster: Any, slot: int, source: Any, target: Any) -> None:
    settle(cluster)  # after the last move or failover: one claim per epoch
    open_slot(slot, source, target)
    close_slot(cluster, slot, source, target)


def other_primary(cluster: Any, node: Any) -> Any:
    return next(n for n in cluster.nodes if n is not node
                and b"master" in nodes_table(n)[my_id(n)][2])


def wait_until(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 15
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def is_primary(node: Any) -> bool:
    return b"master" in nodes_table(node)[my_id(node)][2].split(b",")


def fail_over(replica: Any, old: Any) -> None:
    """CLUSTER FAILOVER on `replica`; returns once both nodes agree on the new roles."""
    ok(call(replica, "CLUSTER", "FAILOVER"))
    wait_until(lambda: is_primary(replica) and not is_primary(old), "the failover to end")


# --- the tests ------------------------------------------------------------------------------


def test_moved_after_a_reshard(cluster, client):
    slot, keys = tagged_keys("moved")
    source = owner(cluster, slot)
    for i, key in enumerate(keys):
        client.set(key, str(i))  # the client learns the slot map, and the slot's owner
    target = other_primary(cluster, source)
    move_slot(cluster, slot, source, target)
    try:
        assert call(source, "GET", keys[0]) == ("-", b"MOVED %d %s:%d" % (slot, target.host.encode(), target.port))
        assert [client.get(key) for key in keys] == [b"0", b"1", b"2"]  # MOVED followed
        client.set(keys[0], "changed")
        assert call(target, "GET", keys[0]) == ("$", b"changed")
    finally:
        move_slot(cluster, slot, target, source)
    assert client.get(keys[0]) == b"changed"  # and back again
    for key in keys:
        call(source, "DEL", key)


def test_ask_during_a_reshard(cluster, client):
    slot, keys = tagged_keys("ask")
    source = owner(cluster, slot)
    for i, key in enumerate(keys[:2]):
        client.set(key, str(i))
    target = other_primary(cluster, source)
    open_slot(slot, source, target)
    try:
        migrate(source, target, keys[:1])  # the first key moved, the second not yet
        assert call(source, "GET", keys[0]) == ("-", b"ASK %d %s:%d" % (slot, target.host.encode(), target.port))
        assert client.get(keys[0]) == b"0"  # ASK followed: only the target has it
        assert client.get(keys[1]) == b"1"  # served by the source
        client.set(keys[0], "written")  # a write follows ASK too
        client.set(keys[2], "new")  # a new key: missing on the source, made on the target
        assert asking_get(target, keys[0]) == ("$", b"written")
        assert asking_get(target, keys[2]) == ("$", b"new")
        ask = ("-", b"ASK %d %s:%d" % (slot, target.host.encode(), target.port))
        assert call(source, "GET", keys[2]) == ask  # the source has it not
        close_slot(cluster, slot, source, target)
        assert [client.get(key) for key in keys] == [b"written", b"1", b"new"]  # MOVED now
    finally:
        if owner(cluster, slot) is source:  # the test broke half way: the slot closed where it is
            close_slot(cluster, slot, source, target)
        move_slot(cluster, slot, target, source)
    for key in keys:
        call(source, "DEL", key)


def test_the_client_goes_on_after_a_failover(cluster, client):
    slot, keys = tagged_keys("failover")
    primary = owner(cluster, slot)
    replica = replica_of(cluster, primary)
    client.set(keys[0], "before")
    assert call(primary, "WAIT", "1", "5000") == (":", 1)  # the replica has it
    fail_over(replica, primary)
    try:
        assert client.get(keys[0]) == b"before"
        client.set(keys[0], "after")
        assert client.get(keys[0]) == b"after"
        assert call(replica, "GET", keys[0]) == ("$", b"after")
    finally:
        fail_over(primary, replica)  # back, so the cluster is as it was
    assert client.get(keys[0]) == b"after"
    client.set(keys[0], "again")
    assert call(primary, "GET", keys[0]) == ("$", b"again")
    call(primary, "DEL", keys[0])
