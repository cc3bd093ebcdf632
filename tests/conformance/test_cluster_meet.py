"""Lone cluster nodes, each a process of its own, joined by hand as users join Valkey's:
CLUSTER MEET and ADDSLOTSRANGE, or `redis-cli --cluster create`; on fakekey processes
(`fakekey-server --cluster-enabled yes --port 0`, joined over fakekey's cluster bus) and
on real valkey-server processes. The same checks hold on both: every node knows every
node and its slots, MOVED points at the right process, redis-py's RedisCluster routes
keys, config epochs end distinct, a killed node is flagged `fail`. No reply here differs
between RESP2 and RESP3 (CLUSTER NODES and INFO are bulk strings on both; the protocol is
covered by test_cluster_node.py), so each runs once per target."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator

import pytest
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
from fakekey.testing.targets import find_valkey_binary

TARGETS = [t.strip() for t in os.environ.get("FAKEKEY_TARGETS", "fakekey,valkey").split(",")
           if t.strip() in ("fakekey", "valkey")]
NODE_TIMEOUT = 500  # ms: a dead node is flagged fail soon after
READY = 20.0  # s: a real node waits for its own writable delay (2 s) before it says ok


def skip_without(kind: str) -> None:
    if kind == "valkey" and find_valkey_binary() is None:
        if os.environ.get("CI"):
            pytest.fail("no valkey-server binary")
        pytest.skip("no valkey-server binary")


@pytest.fixture(scope="module", params=TARGETS)
def kind(request: pytest.FixtureRequest) -> str:
    skip_without(request.param)
    return str(request.param)


@pytest.fixture(scope="module")
def met(kind: str) -> Iterator[list[NodeProcess]]:
    """A MEET B, B MEET C, then a third of the slots each, by ADDSLOTSRANGE."""
    with NodeProcesses(kind, 3, cluster_node_timeout=NODE_TIMEOUT) as nodes:
        join_by_meet(nodes)
        give_slots(nodes, split_slots(3))
        wait_for("cluster_state:ok on every node", lambda: all_ok(nodes), READY)
        yield nodes


def test_a_chain_of_meets_makes_every_node_know_every_node(met):
    ids = [node.node_id() for node in met]
    for node in met:
        lines = {fields[0]: fields for fields in node.nodes()}
        assert set(lines) == set(ids)
        for other, other_id, (first, last) in zip(met, ids, split_slots(3), strict=True):
            fields = lines[other_id]
            assert fields[1] == f"127.0.0.1:{other.port}@{other.port + 10000}"
            assert fields[2] == ("myself,master" if other is node else "master")
            assert fields[3] == "-"
            assert fields[7] == "connected"
            assert fields[8:] == [f"{first}-{last}"]
        info = node.info()
        assert (info["cluster_known_nodes"], info["cluster_size"], info["cluster_slots_ok"]) == \
            ("3", "3", "16384")


def test_every_node_maps_every_slot_alike(met):
    expected = sorted([first, last, met[i].port] for i, (first, last) in enumerate(split_slots(3)))
    for node in met:
        slots = node.call("CLUSTER", "SLOTS")[1]
        assert sorted([e[0][1], e[1][1], e[2][1][1][1]] for _, e in slots) == expected


def test_colliding_config_epochs_end_distinct(met):
    """All three start at config epoch 0; each collision gives the node with the smaller
    id a new epoch, until every epoch differs, seen alike by all."""
    def distinct() -> bool:
        epochs = {fields[0]: fields[6] for fields in met[0].nodes()}
        return len(set(epochs.values())) == 3 and all(
            {f[0]: f[6] for f in node.nodes()} == epochs for node in met)
    wait_for("distinct config epochs seen alike", distinct, READY)


def test_moved_points_at_the_process_that_serves_the_slot(met):
    slot = key_slot(b"foo")
    owner = next(n for n, (first, last) in zip(met, split_slots(3), strict=True) if first <= slot <= last)
    for node in met:
        reply = node.call("SET", "foo", "bar")
        assert reply == (("+", b"OK") if node is owner else ("-", f"MOVED {slot} 127.0.0.1:{owner.port}".encode()))


def test_redis_py_cluster_routes_keys_to_the_processes(met):
    client = RedisCluster(startup_nodes=[ClusterNode(met[1].host, met[1].port)])
    try:
        for i in range(60):
            client.set(f"key:{i}", i)
        assert [int(client.get(f"key:{i}")) for i in range(60)] == list(range(60))
        assert all(int(node.call("DBSIZE")[1]) for node in met)
    finally:
        client.close()


def test_redis_cli_cluster_create_joins_the_processes(kind):
    cli = shutil.which("redis-cli") or shutil.which("valkey-cli")
    if cli is None:
        pytest.skip("no redis-cli or valkey-cli (Debian's redis-tools)")
    with NodeProcesses(kind, 3, cluster_node_timeout=NODE_TIMEOUT) as nodes:
        done = subprocess.run([cli, "--cluster", "create", *(n.address for n in nodes), "--cluster-yes"],
                              capture_output=True, timeout=60, check=False)
        assert done.returncode == 0, done.stdout.decode() + done.stderr.decode()
        assert b"[OK] All 16384 slots covered." in done.stdout
        wait_for("cluster_state:ok on every node", lambda: all_ok(nodes), READY)
        client = RedisCluster(startup_nodes=[ClusterNode(nodes[2].host, nodes[2].port)])
        try:
            client.mset_nonatomic({f"k{i}": i for i in range(30)})
            assert client.mget_nonatomic([f"k{i}" for i in range(30)]) == [str(i).encode() for i in range(30)]
        finally:
            client.close()
        epochs = {fields[6] for fields in nodes[0].nodes()}
        assert epochs == {"1", "2", "3"}  # redis-cli sets them before the nodes meet


def test_a_killed_node_is_flagged_fail_by_the_others(kind):
    with NodeProcesses(kind, 3, cluster_node_timeout=NODE_TIMEOUT) as nodes:
        join_by_meet(nodes)
        give_slots(nodes, split_slots(3))
        wait_for("cluster_state:ok on every node", lambda: all_ok(nodes), READY)
        dead_id = nodes[2].node_id()
        nodes[2].kill()

        def flags() -> list[str]:
            return [{f[0]: f for f in n.nodes()}[dead_id][2] for n in nodes[:2]]
        wait_for("the dead node flagged fail", lambda: flags() == ["master,fail"] * 2, READY)
        for node in nodes[:2]:
            info = node.info()
            assert (info["cluster_state"], info["cluster_nodes_fail"], info["cluster_slots_fail"]) == \
                ("fail", "1", str(16384 - 10923))
            line = {f[0]: f for f in node.nodes()}[dead_id]
            assert line[7] == "disconnected"
        for node in nodes[:2]:  # the other live primary's gossip keeps its report fresh
            wait_for("a failure report", lambda node=node: node.call(
                "CLUSTER", "COUNT-FAILURE-REPORTS", dead_id) == (":", 1), READY)
