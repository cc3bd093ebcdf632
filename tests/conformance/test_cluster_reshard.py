"""`redis-cli --cluster reshard` (Debian's redis-tools) moves slots and their keys on
fakekey's cluster as on a real Valkey cluster: SETSLOT IMPORTING/MIGRATING, GETKEYSINSLOT,
MIGRATE ... KEYS (RESTORE-ASKING on the target), SETSLOT NODE; then `--cluster check`
finds every node agreeing and every slot covered, and clients find every key."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
from redis.cluster import ClusterNode, RedisCluster

from fakekey.core.cluster import key_slot
from fakekey.testing.clusters import cluster_for_tests, cluster_targets
from fakekey.testing.raw import RawClient

TARGETS = cluster_targets()


@pytest.fixture(params=TARGETS)
def cluster(request: pytest.FixtureRequest) -> Iterator[Any]:
    if shutil.which("redis-cli") is None:
        pytest.skip("redis-cli is not installed (Debian's redis-tools; make tools)")
    # a cluster of its own: the reshard changes who serves what
    with cluster_for_tests(request.param, 3, 0, {"cluster_node_timeout": 5000}) as started:
        yield started


def node_id(node: Any) -> str:
    with RawClient(node.host, node.port) as client:
        return client.call("CLUSTER", "MYID")[1].decode()


def test_redis_cli_reshard_moves_slots_and_keys(cluster):
    client = RedisCluster(startup_nodes=[ClusterNode(h, p) for h, p in cluster.startup_nodes])
    keys = [k for k in (f"k{i}" for i in range(20_000)) if key_slot(k.encode()) < 50]
    for key in keys:
        client.set(key, key)
    source, target = cluster.primaries[0], cluster.primaries[1]
    done = subprocess.run(
        ["redis-cli", "--cluster", "reshard", f"{source.host}:{source.port}",
         "--cluster-from", node_id(source), "--cluster-to", node_id(target),
         "--cluster-slots", "50", "--cluster-yes"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr
    with RawClient(target.host, target.port) as raw:
        assert raw.call("CLUSTER", "COUNTKEYSINSLOT", "0") == (":", sum(key_slot(k.encode()) == 0 for k in keys))
    with RawClient(source.host, source.port) as raw:
        assert raw.call("CLUSTER", "COUNTKEYSINSLOT", "0") == (":", 0)
        assert raw.call("GET", keys[0])[0] == "-"  # MOVED to the target now
    fresh = RedisCluster(startup_nodes=[ClusterNode(h, p) for h, p in cluster.startup_nodes])
    assert [fresh.get(k) for k in keys] == [k.encode() for k in keys]
    check = subprocess.run(["redis-cli", "--cluster", "check", f"{source.host}:{source.port}"],
                           capture_output=True, text=True, timeout=60)
    assert "All nodes agree about slots configuration" in check.stdout
    assert "All 16384 slots covered" in check.stdout
    client.close()
    fresh.close()
