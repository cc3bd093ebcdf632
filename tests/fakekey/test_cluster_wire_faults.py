"""FAKEKEY.CLUSTER: a fakekey.Cluster's failures staged over the wire, from any node, with
the clients a test uses (redis-py's RedisCluster, RawClient for the exact replies)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from redis.cluster import ClusterNode, RedisCluster

import fakekey
from fakekey.core.cluster import key_slot
from fakekey.testing.raw import RawClient

KEY = "wire:{a}"


@pytest.fixture
def cluster() -> Iterator[fakekey.Cluster]:
    with fakekey.Cluster(primaries=3, replicas=1, cluster_node_timeout=2000) as started:
        yield started


def call(node: Any, *args: Any) -> Any:
    with RawClient(node.host, node.port) as client:
        return client.call(*args)


def client_of(cluster: fakekey.Cluster) -> RedisCluster:
    return RedisCluster(startup_nodes=[ClusterNode(h, p) for h, p in cluster.startup_nodes])


def address(node: Any) -> str:
    return f"{node.host}:{node.port}"


def test_kill_then_restart_over_the_wire(cluster):
    client = client_of(cluster)
    try:
        client.set(KEY, "1")
        primary = cluster.node_for_slot(key_slot(KEY.encode()))
        [replica] = [n for n in cluster.replicas if n.view.myself.primary.id == primary.node_id]
        other = next(n for n in cluster.primaries if n is not primary)
        assert call(other, "FAKEKEY.CLOCK", "SET", "1000000") == ("+", b"OK")  # every node's clock
        assert call(other, "FAKEKEY.CLUSTER", "KILL", address(primary)) == ("+", b"OK")
        with pytest.raises(ConnectionRefusedError):
            RawClient(primary.host, primary.port)
        assert call(other, "FAKEKEY.CLOCK", "ADVANCE", "2001") == ("+", b"OK")  # past the node timeout
        assert replica.role == "primary"
        assert client.get(KEY) == b"1" and client.set(KEY, "2")  # the client follows the new primary
        assert call(other, "FAKEKEY.CLUSTER", "RESTART", primary.node_id) == ("+", b"OK")
        assert primary.role == "replica"  # back as the replica of the node that replaced it
        assert call(primary, "READONLY") == ("+", b"OK")
        assert call(primary, "GET", KEY) == ("-", b"MOVED %d %s" % (key_slot(KEY.encode()),
                                                                  address(replica).encode()))
    finally:
        client.close()


def test_a_node_that_kills_itself_answers_first(cluster):
    node = cluster.primaries[2]
    with RawClient(node.host, node.port) as raw:
        assert raw.call("FAKEKEY.CLUSTER", "KILL", node.node_id) == ("+", b"OK")
    with pytest.raises(ConnectionRefusedError):
        RawClient(node.host, node.port)
    assert call(cluster.nodes[0], "FAKEKEY.CLUSTER", "RESTART", address(node)) == ("+", b"OK")
    assert call(node, "PING") == ("+", b"PONG")


def test_failover_over_the_wire(cluster):
    client = client_of(cluster)
    try:
        client.set(KEY, "before")
        primary = cluster.node_for_slot(key_slot(KEY.encode()))
        [replica] = [n for n in cluster.replicas if n.view.myself.primary.id == primary.node_id]
        assert call(primary, "FAKEKEY.CLUSTER", "FAILOVER", replica.node_id) == ("+", b"OK")
        assert (replica.role, primary.role) == ("primary", "replica")
        assert client.get(KEY) == b"before" and client.set(KEY, "after")
        assert call(replica, "GET", KEY) == ("$", b"after")
    finally:
        client.close()


def test_partition_and_heal_over_the_wire(cluster):
    cluster.freeze()
    primary = cluster.node_for_slot(key_slot(KEY.encode()))
    [replica] = [n for n in cluster.replicas if n.view.myself.primary.id == primary.node_id]
    rest = ",".join(n.node_id for n in cluster.nodes if n is not primary)
    assert call(replica, "FAKEKEY.CLUSTER", "PARTITION", primary.node_id, rest) == ("+", b"OK")
    cluster.advance(2001)
    assert call(primary, "SET", KEY, "lost") == ("-", b"CLUSTERDOWN The cluster is down")
    assert replica.role == "primary"
    assert call(replica, "SET", KEY, "kept") == ("+", b"OK")
    assert call(primary, "FAKEKEY.CLUSTER", "HEAL") == ("+", b"OK")
    assert primary.role == "replica"
    assert call(replica, "GET", KEY) == ("$", b"kept")


def test_the_refusals(cluster):
    node = cluster.nodes[0]
    primary, replica = cluster.primaries[1], cluster.replicas[0]
    err = lambda text: ("-", text)  # noqa: E731
    assert call(node, "FAKEKEY.CLUSTER", "KILL", "nobody") == err(b"ERR no node of this cluster is named nobody")
    assert call(node, "FAKEKEY.CLUSTER", "KILL", "127.0.0.1:1") == \
        err(b"ERR no node of this cluster is named 127.0.0.1:1")
    assert call(node, "FAKEKEY.CLUSTER", "RESTART", primary.node_id) == \
        err(f"ERR node {primary.node_id} is not killed".encode())
    assert call(node, "FAKEKEY.CLUSTER", "FAILOVER", primary.node_id) == \
        err(f"ERR node {primary.node_id} is not a replica".encode())
    assert call(node, "FAKEKEY.CLUSTER", "KILL", replica.node_id) == ("+", b"OK")
    assert call(node, "FAKEKEY.CLUSTER", "KILL", replica.node_id) == \
        err(f"ERR node {replica.node_id} is already killed".encode())
    assert call(node, "FAKEKEY.CLUSTER", "FAILOVER", replica.node_id) == \
        err(f"ERR node {replica.node_id} is killed".encode())
    assert call(node, "FAKEKEY.CLUSTER", "PARTITION", f"{primary.node_id},{node.node_id}", node.node_id) == \
        err(b"ERR a node cannot be on both sides of a partition")
    assert call(node, "FAKEKEY.CLUSTER", "PARTITION", primary.node_id, "x") == \
        err(b"ERR no node of this cluster is named x")
    for args in (("HEAL", "x"), ("KILL",), ("PARTITION", "a")):
        assert call(node, "FAKEKEY.CLUSTER", *args) == \
            err(b"ERR wrong number of arguments for 'fakekey.cluster' command")
    assert call(node, "FAKEKEY.CLUSTER", "BOGUS") == \
        err(b"ERR unknown subcommand 'BOGUS'. Try FAKEKEY.CLUSTER KILL|RESTART|FAILOVER|PARTITION|HEAL|HELP.")
    kind, lines = call(node, "FAKEKEY.CLUSTER", "HELP")
    assert kind == "*" and lines[0][1].startswith(b"FAKEKEY.CLUSTER <subcommand>")


def test_a_server_outside_a_fakekey_cluster_refuses():
    for settings in ({}, {"cluster_enabled": "yes"}):
        with fakekey.Server(**settings) as server:
            assert call(server, "FAKEKEY.CLUSTER", "HEAL") == \
                ("-", b"ERR this server is not a node of a fakekey.Cluster")


def test_hidden_with_fakekey_commands_off():
    with fakekey.Cluster(primaries=1, enable_fakekey_commands=False) as cluster:
        kind, text = call(cluster.nodes[0], "FAKEKEY.CLUSTER", "HEAL")
        assert kind == "-" and text.startswith(b"ERR unknown command 'FAKEKEY.CLUSTER'")


def test_migrateslots_to_a_killed_node_fails_the_job(cluster):
    source, target = cluster.primaries[0], cluster.primaries[1]
    assert call(source, "FAKEKEY.CLUSTER", "KILL", target.node_id) == ("+", b"OK")
    assert call(source, "CLUSTER", "MIGRATESLOTS", "SLOTSRANGE", "0", "0", "NODE", target.node_id) == ("+", b"OK")
    kind, [(_, fields)] = call(source, "CLUSTER", "GETSLOTMIGRATIONS")
    job = {fields[i][1]: fields[i + 1] for i in range(0, len(fields), 2)}
    assert job[b"state"] == ("$", b"failed")
    assert job[b"message"] == ("$", b"Unable to connect to target node: Connection refused")
    assert cluster.node_for_slot(0) is source
