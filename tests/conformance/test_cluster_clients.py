"""Cluster clients on fakekey's cluster and on a real Valkey cluster (3 primaries, a
replica each): redis-py's RedisCluster (sync and asyncio), valkey-py's, valkey-glide's
cluster client. Each routes keys to every shard, runs pipelines and scripts, and
sharded pub/sub reaches the shard's subscribers."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from fakekey.core.cluster import key_slot
from fakekey.testing.clusters import cluster_client, cluster_for_tests, cluster_targets

TARGETS = cluster_targets()
KEYS = [f"user:{i}" for i in range(60)]


@pytest.fixture(scope="module", params=TARGETS)
def cluster(request: pytest.FixtureRequest) -> Iterator[Any]:
    with cluster_for_tests(request.param) as started:
        yield started


def test_the_keys_reach_every_shard(cluster):
    assert len({cluster.primaries[0].port, cluster.primaries[1].port, cluster.primaries[2].port}) == 3
    assert {key_slot(k.encode()) // 5462 for k in KEYS} == {0, 1, 2}


def test_redis_py_routes_pipelines_and_scripts(cluster):
    client = cluster_client(cluster, decode_responses=True)
    try:
        for i, key in enumerate(KEYS):
            client.set(key, i)
        assert [client.get(k) for k in KEYS] == [str(i) for i in range(len(KEYS))]
        with client.pipeline() as pipe:  # RedisCluster's pipeline splits by node
            for key in KEYS:
                pipe.incr(key)
            assert pipe.execute() == list(range(1, len(KEYS) + 1))
        assert client.mset_nonatomic({"{t}a": "1", "{t}b": "2"}) and client.mget("{t}a", "{t}b") == ["1", "2"]
        script = client.register_script("return redis.call('GET', KEYS[1]) .. ARGV[1]")
        assert script(keys=["user:7"], args=["!"]) == "8!"
        with pytest.raises(Exception, match="CROSSSLOT|don't hash to the same slot|same slot"):
            client.execute_command("MGET", "user:1", "user:2", target_nodes=client.get_random_node())
        assert client.delete(*KEYS) == len(KEYS)
    finally:
        client.close()


def test_redis_py_reads_from_replicas(cluster):
    from redis.cluster import ClusterNode, RedisCluster

    writer = cluster_client(cluster)
    reader = RedisCluster(startup_nodes=[ClusterNode(h, p) for h, p in cluster.startup_nodes],
                          read_from_replicas=True)
    try:
        writer.set("replicated", "yes")
        writer.wait(1, 1000)  # the replica acknowledged it (WAIT: every target)
        assert {reader.get("replicated") for _ in range(6)} == {b"yes"}
    finally:
        writer.delete("replicated")
        writer.close()
        reader.close()


def test_redis_py_asyncio_cluster(cluster):
    from redis.asyncio.cluster import ClusterNode, RedisCluster

    async def run() -> list[Any]:
        client = RedisCluster(startup_nodes=[ClusterNode(h, p) for h, p in cluster.startup_nodes])
        try:
            for key in KEYS[:20]:
                await client.set(key, "a")
            got = [await client.get(key) for key in KEYS[:20]]
            await client.delete(*KEYS[:20])
            return got
        finally:
            await client.aclose()

    assert asyncio.run(run()) == [b"a"] * 20


def test_valkey_py_cluster(cluster):
    from valkey.cluster import ClusterNode, ValkeyCluster

    client = ValkeyCluster(startup_nodes=[ClusterNode(h, p) for h, p in cluster.startup_nodes])
    try:
        for key in KEYS[:20]:
            client.lpush(key, "x")
        assert [client.llen(key) for key in KEYS[:20]] == [1] * 20
        assert client.delete(*KEYS[:20]) == 20
    finally:
        client.close()


def test_glide_cluster_client(cluster):
    glide = pytest.importorskip("glide")

    async def run() -> list[Any]:
        config = glide.GlideClusterClientConfiguration(
            [glide.NodeAddress(h, p) for h, p in cluster.startup_nodes])
        client = await glide.GlideClusterClient.create(config)
        try:
            for key in KEYS[:20]:
                await client.set(key, "g")
            got = [await client.get(key) for key in KEYS[:20]]
            await client.delete(KEYS[:20])
            return got
        finally:
            await client.close()

    assert asyncio.run(run()) == [b"g"] * 20


def test_sharded_pubsub_reaches_the_shards_subscriber(cluster):
    client = cluster_client(cluster)
    pubsub = client.pubsub()
    try:
        pubsub.ssubscribe("orders:{eu}")
        assert pubsub.get_sharded_message(timeout=5)["type"] == "ssubscribe"
        assert client.spublish("orders:{eu}", "hello") == 1
        message = pubsub.get_sharded_message(timeout=5)
        assert message["type"] == "smessage" and message["data"] == b"hello"
    finally:
        pubsub.close()
        client.close()
