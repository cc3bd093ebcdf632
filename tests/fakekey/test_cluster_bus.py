"""The cluster bus between fakekey processes (net/cluster_bus.py): separate
`fakekey-server --cluster-enabled yes --port 0` processes joined by CLUSTER MEET, given
slots by hand, serving redis-py's RedisCluster; a killed or stopped process seen failing;
garbage on a bus port. (tests/conformance/test_cluster_meet.py runs the joins on real
Valkey processes too.)"""

from __future__ import annotations

import signal
import socket
from collections.abc import Iterator

import pytest
import redis
from redis.cluster import ClusterNode, RedisCluster

from fakekey.core.cluster import key_slot, split_slots
from fakekey.testing.node_processes import (
    NodeProcess,
    NodeProcesses,
    all_ok,
    give_slots,
    join_by_meet,
    wait_for,
)

NODE_TIMEOUT = 500


@pytest.fixture(scope="module")
def formed() -> Iterator[list[NodeProcess]]:
    """Three processes met in a chain (A MEET B, B MEET C) and given a third of the slots each."""
    with NodeProcesses("fakekey", 3, cluster_node_timeout=NODE_TIMEOUT) as nodes:
        join_by_meet(nodes)
        give_slots(nodes, split_slots(3))
        wait_for("cluster_state:ok on every node", lambda: all_ok(nodes))
        yield nodes


def test_a_chain_of_meets_makes_every_node_know_every_node(formed):
    ids = [node.node_id() for node in formed]
    for node in formed:
        lines = {fields[0]: fields for fields in node.nodes()}
        assert set(lines) == set(ids)
        for other, other_id in zip(formed, ids, strict=True):
            fields = lines[other_id]
            assert fields[1] == f"127.0.0.1:{other.port}@{other.port + 10000}"
            assert fields[2] == ("myself,master" if other is node else "master")
            assert fields[7] == "connected"
        assert node.info()["cluster_known_nodes"] == "3"
        assert node.info()["cluster_size"] == "3"


def test_every_node_sees_every_nodes_slots(formed):
    expected = sorted([first, last, formed[i].port] for i, (first, last) in enumerate(split_slots(3)))
    for node in formed:
        slots = node.call("CLUSTER", "SLOTS")[1]
        assert sorted([e[0][1], e[1][1], e[2][1][1][1]] for _, e in slots) == expected


def test_config_epochs_end_distinct(formed):
    """Three nodes that all start at config epoch 0 collide; each collision makes the node
    with the smaller id take a new epoch, until all differ (Valkey's rule)."""
    def distinct() -> bool:
        epochs = {fields[0]: fields[6] for fields in formed[0].nodes()}
        return len(set(epochs.values())) == 3 and all(
            {f[0]: f[6] for f in node.nodes()} == epochs for node in formed)
    wait_for("distinct config epochs seen alike", distinct)


def test_moved_points_at_the_process_that_serves_the_slot(formed):
    owner = next(n for n, (first, last) in zip(formed, split_slots(3), strict=True)
                 if first <= key_slot(b"foo") <= last)
    for node in formed:
        reply = node.call("SET", "foo", "bar")
        if node is owner:
            assert reply == ("+", b"OK")
        else:
            assert reply == ("-", f"MOVED {key_slot(b'foo')} 127.0.0.1:{owner.port}".encode())


def test_redis_py_routes_keys_to_the_processes(formed):
    client = RedisCluster(startup_nodes=[ClusterNode(formed[0].host, formed[0].port)])
    try:
        for i in range(60):
            client.set(f"key:{i}", i)
        assert [int(client.get(f"key:{i}")) for i in range(60)] == list(range(60))
        counts = [int(node.call("DBSIZE")[1]) for node in formed]
        assert all(counts) and sum(counts) >= 60
    finally:
        client.close()


def test_publish_reaches_the_subscribers_of_every_process(formed):
    subscriber = redis.Redis(port=formed[2].port).pubsub()
    try:
        subscriber.subscribe("news")
        assert subscriber.get_message(timeout=5)["type"] == "subscribe"
        formed[0].call("PUBLISH", "news", "hello")
        message = subscriber.get_message(timeout=5)
        assert message is not None and message["data"] == b"hello"
    finally:
        subscriber.close()


def test_replicate_across_processes_is_refused_clearly(formed):
    spare_id = formed[1].node_id()
    reply = formed[0].call("CLUSTER", "REPLICATE", spare_id)
    assert reply[0] == "-"  # a primary with slots refuses first, as Valkey
    assert b"must be empty" in reply[1]


def test_a_new_process_becomes_a_replica_of_another_process(formed):
    """(Replication and failovers between processes: test_cluster_bus_replicas.py.)"""
    with NodeProcesses("fakekey", 1, cluster_node_timeout=NODE_TIMEOUT) as (spare,):
        spare.call("CLUSTER", "MEET", formed[0].host, formed[0].port)
        wait_for("the spare known to all", lambda: all(knows(n, 4) for n in [*formed, spare]))
        primary_id = formed[0].node_id()
        assert spare.call("CLUSTER", "REPLICATE", primary_id) == ("+", b"OK")
        spare_id = spare.node_id()
        wait_for("the spare seen as a replica by all", lambda: all(
            {f[0]: f[2:4] for f in n.nodes()}[spare_id] == [flags, primary_id]
            for n, flags in [(formed[0], "slave"), (formed[1], "slave"), (spare, "myself,slave")]))
    # gone for good: FORGET on one node spreads to the others
    formed[0].call("CLUSTER", "FORGET", spare_id)
    wait_for("the spare forgotten by all",
             lambda: all(len(n.nodes()) == 3 for n in formed))
    assert formed[1].call("CLUSTER", "FORGET", spare_id) == ("+", b"OK")  # already forgotten


def knows(node: NodeProcess, count: int) -> bool:
    """The node knows `count` nodes, each by its id (none still in handshake)."""
    lines = node.nodes()
    return len(lines) == count and not any("handshake" in fields[2] for fields in lines)


def test_garbage_on_the_bus_port_closes_that_connection_only(formed):
    node = formed[0]
    before = node.info()
    for data in (b"\x00\xff garbage\r\n", b"*99999999999\r\n", b"*4\r\n$999999999\r\n",
                 b"*1\r\n$4\r\nPING\r\n", b"PING\r\n", b"*4\r\n$11\r\nfakekey-bus\r\n$4\r\nping\r\n"
                 b"$2\r\n{}\r\n$0\r\n\r\n"):
        with socket.create_connection((node.host, node.bus_port()), timeout=5) as sock:
            sock.sendall(data)
            if not data.endswith(b"$999999999\r\n"):  # a long bulk string waits for its bytes
                assert sock.recv(100) == b""  # closed by the node, nothing answered
    assert node.call("PING") == ("+", b"PONG")
    after = node.info()
    assert after["cluster_state"] == "ok" and after["cluster_known_nodes"] == before["cluster_known_nodes"]


def test_a_stopped_process_fails_then_comes_back_when_it_answers():
    with NodeProcesses("fakekey", 3, cluster_node_timeout=NODE_TIMEOUT) as nodes:
        join_by_meet(nodes)
        give_slots(nodes, split_slots(3))
        wait_for("cluster_state:ok on every node", lambda: all_ok(nodes))
        paused_id = nodes[2].node_id()

        def flags() -> list[str]:
            return [{f[0]: f for f in n.nodes()}[paused_id][2] for n in nodes[:2]]
        nodes[2].signal(signal.SIGSTOP)
        wait_for("the stopped node flagged fail", lambda: flags() == ["master,fail"] * 2)
        nodes[2].signal(signal.SIGCONT)
        wait_for("the node back", lambda: flags() == ["master"] * 2)
        wait_for("cluster_state:ok on every node", lambda: all_ok(nodes))
