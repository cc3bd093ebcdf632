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
from typing import Any

import pytest
from redis.cluster import ClusterNode, RedisCluster

from fakekey.core.cluster import key_slot, split_slots
from fakekey.testing.node_processes import (
    NodeProcess,
    NodeProcesses,
    all_ok,
    cluster_create,
    give_slots,
    join_by_meet,
    primary_of,
    shards_formed,
    wait_for,
)
from fakekey.testing.raw import RawClient
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
        for node in nodes[:2]:
            # the other live primary's report: an integer, at most one per other primary.
            # Valkey refreshes it only when its random gossip names the dead node, and a
            # report lives 2 node timeouts, so on a loaded machine it is 0 or 1 from one
            # look to the next; fakekey's gossip keeps it fresh
            kind_, count = node.call("CLUSTER", "COUNT-FAILURE-REPORTS", dead_id)
            assert kind_ == ":" and count in (0, 1)
            if kind == "fakekey":
                wait_for("a failure report", lambda node=node: node.call(
                    "CLUSTER", "COUNT-FAILURE-REPORTS", dead_id) == (":", 1), READY)


# --- replicas and failover: 3 primaries and 3 replicas, each a process -------------------------

FAILOVER_TIMEOUT = 1000  # ms of cluster-node-timeout for the failover flow
FAILOVER_DEADLINE = 20.0  # s: a killed primary's replica has taken over by then


def test_replicas_and_failovers_between_processes(kind):
    """redis-cli --cluster create --cluster-replicas 1 over six processes; writes reach the
    replicas (READONLY reads, WAIT); a manual CLUSTER FAILOVER swaps one shard's roles; a
    primary killed with SIGKILL is replaced by its replica, no WAIT-ed write lost; redis-py
    follows each new topology."""
    if shutil.which("redis-cli") is None and shutil.which("valkey-cli") is None:
        pytest.skip("no redis-cli or valkey-cli (Debian's redis-tools)")
    with NodeProcesses(kind, 6, cluster_node_timeout=FAILOVER_TIMEOUT, repl_diskless_sync_delay=0) as nodes:
        output = cluster_create(nodes, replicas=1)
        assert "[OK] All 16384 slots covered." in output
        wait_for("three shards of a primary and a replica", lambda: shards_formed(nodes, 3), READY)
        check_roles_seen_alike(nodes)
        client = RedisCluster(startup_nodes=[ClusterNode(nodes[0].host, nodes[0].port)])
        try:
            written = write_and_wait(client, nodes, "a", 30)
            check_replicas_serve_reads(nodes, written)

            replica = replica_serving(nodes, "a:0")
            primary = primary_of(nodes, replica)
            assert replica.call("CLUSTER", "FAILOVER") == ("+", b"OK")
            wait_for("the manual failover", lambda: role_of(replica) == "master" and
                     role_of(primary, replica) == "slave", FAILOVER_DEADLINE)
            wait_for("the shards formed again", lambda: shards_formed(nodes, 3), FAILOVER_DEADLINE)
            written.update(write_and_wait(client, nodes, "b", 30))
            assert read_all(client, written) == written

            victim_replica = next(n for n in nodes if n is not replica and n is not primary
                                  and role_of(n) == "slave")
            victim = primary_of(nodes, victim_replica)
            victim.kill()
            alive = [n for n in nodes if n is not victim]
            wait_for("the killed primary's replica elected", lambda: role_of(victim_replica) == "master"
                     and all(node_flags(n, victim_replica) in ("master", "myself,master") for n in alive),
                     FAILOVER_DEADLINE)
            wait_for("cluster_state:ok again", lambda: all(n.info()["cluster_state"] == "ok" for n in alive),
                     FAILOVER_DEADLINE)
            assert read_all(client, written) == written  # no acknowledged write lost
            client.set("after-kill", "1")
            assert client.get("after-kill") == b"1"
        finally:
            client.close()


def check_roles_seen_alike(nodes: list[NodeProcess]) -> None:
    """CLUSTER NODES, SHARDS and REPLICAS say the same roles on every node."""
    roles = {f[0]: (f[2].replace("myself,", ""), f[3]) for f in nodes[0].nodes()}
    for node in nodes:
        assert {f[0]: (f[2].replace("myself,", ""), f[3]) for f in node.nodes()} == roles
    primaries = [node_id for node_id, (flags, _) in roles.items() if flags == "master"]
    for node in nodes:
        shards = node.call("CLUSTER", "SHARDS")[1]
        members = sorted(sorted(field_of(member, b"id").decode() for member in field_of(shard, b"nodes"))
                         for shard in shards)
        assert members == sorted(sorted([p, *(i for i, (_, of) in roles.items() if of == p)])
                                 for p in primaries)
        for primary in primaries:
            lines = node.call("CLUSTER", "REPLICAS", primary)[1]
            assert [line[1].split()[0].decode() for line in lines] == \
                [i for i, (_, of) in roles.items() if of == primary]


def field_of(pairs: Any, name: bytes) -> Any:
    """A field's value in a RESP2 map reply as RawClient reads it: ("*", [key, value, ...])."""
    items = pairs[1]
    for key, value in zip(items[::2], items[1::2], strict=True):
        if key[1] == name:
            return value[1]
    raise KeyError(name)


def write_and_wait(client: RedisCluster, nodes: list[NodeProcess], prefix: str, count: int) -> dict[str, bytes]:
    """`count` keys written, each acknowledged by its shard's replica (WAIT 1)."""
    written = {}
    for i in range(count):
        key = f"{prefix}:{i}"
        client.set(key, str(i))
        node = client.get_node_from_key(key)
        assert client.execute_command("WAIT", 1, 5000, target_nodes=node) == 1
        written[key] = str(i).encode()
    return written


def read_all(client: RedisCluster, keys: dict[str, bytes]) -> dict[str, bytes]:
    return {key: client.get(key) for key in keys}


def check_replicas_serve_reads(nodes: list[NodeProcess], written: dict[str, bytes]) -> None:
    """A replica answers MOVED for its shard's key, and the value after READONLY."""
    for key, value in written.items():
        replica = replica_serving(nodes, key)
        with RawClient(replica.host, replica.port) as raw:
            primary = primary_of(nodes, replica)
            assert raw.call("GET", key) == ("-", f"MOVED {key_slot(key.encode())} {primary.address}".encode())
            assert raw.call("READONLY") == ("+", b"OK")
            assert raw.call("GET", key) == ("$", value)
            assert raw.call("SET", key, "x")[1].startswith(b"MOVED ")


def replica_serving(nodes: list[NodeProcess], key: str) -> NodeProcess:
    """The live replica of the shard that serves `key`'s slot."""
    slot = key_slot(key.encode())
    for node in nodes:
        if node.proc is None or node.proc.poll() is not None or role_of(node) != "slave":
            continue
        owner = primary_of(nodes, node)
        mine = next(f for f in owner.nodes() if "myself" in f[2])
        if any(_in_range(slot, text) for text in mine[8:]):
            return node
    raise AssertionError(f"no replica serves {key}")


def _in_range(slot: int, text: str) -> bool:
    first, _, last = text.partition("-")
    return first.isdigit() and int(first) <= slot <= int(last or first)


def role_of(node: NodeProcess, seen_by: NodeProcess | None = None) -> str:
    """`node`'s role, master or slave, as `seen_by` (or itself) says."""
    return node_flags(seen_by or node, node).replace("myself,", "").split(",")[0]


def node_flags(observer: NodeProcess, node: NodeProcess) -> str:
    node_id = node.node_id()
    return next(f[2] for f in observer.nodes() if f[0] == node_id)
