"""CLUSTER MEET, REPLICATE and FAILOVER on fakekey's cluster and on a real Valkey cluster
(3 primaries, a replica each): their refusals byte for byte, and a manual failover and back,
with the redirects following the new primary."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Any

import pytest

from fakekey.core.cluster import key_slot
from fakekey.testing.clusters import cluster_for_tests, cluster_targets
from fakekey.testing.raw import RawClient

TARGETS = cluster_targets()


@pytest.fixture(scope="module", params=TARGETS)
def cluster(request: pytest.FixtureRequest) -> Iterator[Any]:
    with cluster_for_tests(request.param) as started:
        yield started


def call(node: Any, *args: Any) -> Any:
    with RawClient(node.host, node.port) as client:
        return client.call(*args)


def table(node: Any) -> dict[str, dict[str, Any]]:
    """CLUSTER NODES as node id -> port, flags, primary id."""
    _kind, text = call(node, "CLUSTER", "NODES")
    out = {}
    for line in text.decode().splitlines():
        fields = line.split()
        out[fields[0]] = {"port": int(fields[1].split("@")[0].rsplit(":", 1)[1]),
                          "flags": fields[2].split(","), "primary": fields[3]}
    return out


def my_id(node: Any) -> str:
    return call(node, "CLUSTER", "MYID")[1].decode()


def shard_of(cluster: Any, primary: Any) -> Any:
    """The replica of `primary`, as the cluster says now (after a failover a real cluster
    takes a moment to settle: asked again until it names one)."""
    primary_id = my_id(primary)
    deadline = time.monotonic() + 10
    while True:
        for node in cluster.nodes:
            if table(node)[my_id(node)]["primary"] == primary_id:
                return node
        if time.monotonic() > deadline:
            raise AssertionError(f"no replica of {primary_id} in {table(primary)}")
        time.sleep(0.05)


def test_the_refusals_of_meet_replicate_and_failover(cluster):
    primary, other = cluster.primaries[0], cluster.primaries[1]
    replica = shard_of(cluster, primary)
    err = lambda text: ("-", text)  # noqa: E731
    assert call(primary, "CLUSTER", "FAILOVER") == err(b"ERR You should send CLUSTER FAILOVER to a replica")
    assert call(replica, "CLUSTER", "FAILOVER", "BOGUS") == err(b"ERR syntax error")
    assert call(primary, "CLUSTER", "REPLICATE", "f" * 40) == err(b"ERR Unknown node " + b"f" * 40)
    assert call(primary, "CLUSTER", "REPLICATE", my_id(primary)) == err(b"ERR Can't replicate myself")
    assert call(primary, "CLUSTER", "REPLICATE", my_id(replica)) == \
        err(b"ERR I can only replicate a master, not a replica.")
    assert call(primary, "CLUSTER", "REPLICATE", my_id(other)) == \
        err(b"ERR To set a master the node must be empty and without assigned slots.")
    assert call(primary, "CLUSTER", "MEET", "127.0.0.1", "abc") == err(b"ERR Invalid base port specified: abc")
    for port in ("99999", "-5"):
        assert call(primary, "CLUSTER", "MEET", "127.0.0.1", port) == err(b"ERR Port number is out of range")
    assert call(primary, "CLUSTER", "MEET", "127.0.0.1", "60000") == \
        err(b"ERR Cluster bus port number is out of range")
    for host in ("300.1.1.1", "localhost"):
        assert call(primary, "CLUSTER", "MEET", host, "7000") == \
            err(b"ERR Invalid node address specified: " + host.encode() + b":7000")


def wait_primary(node: Any) -> None:
    deadline = time.monotonic() + 15
    while "master" not in table(node)[my_id(node)]["flags"]:
        assert time.monotonic() < deadline, "no failover"
        time.sleep(0.05)


def test_a_manual_failover_and_back(cluster):
    key = "failover:{x}"
    slot = call(cluster.primaries[0], "CLUSTER", "KEYSLOT", key)[1]
    owner = next(n for n in cluster.primaries
                 if any(first <= slot <= last for first, last in _ranges(n)))
    replica = shard_of(cluster, owner)
    assert call(owner, "SET", key, "before") == ("+", b"OK")
    assert call(replica, "CLUSTER", "FAILOVER") == ("+", b"OK")
    wait_primary(replica)
    assert call(replica, "GET", key) == ("$", b"before")
    moved = call(owner, "GET", key)
    deadline = time.monotonic() + 15
    while moved[0] != "-":  # the old primary turns replica once it learns the new epoch
        assert time.monotonic() < deadline
        time.sleep(0.05)
        moved = call(owner, "GET", key)
    assert moved == ("-", b"MOVED %d %s:%d" % (slot, replica.host.encode(), replica.port))
    # and back, so the cluster is as it was
    assert call(owner, "CLUSTER", "FAILOVER") == ("+", b"OK")
    wait_primary(owner)
    assert call(owner, "GET", key) == ("$", b"before")
    assert call(owner, "DEL", key) == (":", 1)


def _ranges(node: Any) -> list[tuple[int, int]]:
    kind, slots = call(node, "CLUSTER", "SLOTS")
    me = node.port
    return [(s[0][1], s[1][1]) for _k, s in slots if s[2][1][1][1] == me]


def test_role_info_and_wait_on_a_primary_and_its_replica(cluster):
    primary = cluster.primaries[2]
    replica = shard_of(cluster, primary)
    first, last = _ranges(primary)[0]
    key = next(k for k in (f"role:{i}" for i in range(100_000)) if first <= key_slot(k.encode()) <= last)
    assert call(primary, "SET", key, "1") == ("+", b"OK")
    assert call(primary, "WAIT", "1", "1000") == (":", 1)
    kind, (role, offset, replicas) = call(primary, "ROLE")
    assert kind == "*" and role == ("$", b"master") and offset[0] == ":" and offset[1] > 0
    # the replica as the primary lists it; its offset is the last one it acknowledged
    [(_, (host, port, acked))] = replicas[1]
    assert (host, port, acked[0]) == (("$", replica.host.encode()), ("$", str(replica.port).encode()), "$")
    assert 0 <= int(acked[1]) <= offset[1]
    assert call(replica, "ROLE") == ("*", [("$", b"slave"), ("$", primary.host.encode()),
                                           (":", primary.port), ("$", b"connected"), offset])
    info = dict(line.split(":", 1) for line in call(replica, "INFO", "replication")[1].decode().splitlines()
                if ":" in line)
    assert (info["role"], info["master_port"], info["master_link_status"]) == ("slave", str(primary.port), "up")
    assert info["slave_repl_offset"] == info["master_repl_offset"] == str(offset[1])
    mine = dict(line.split(":", 1) for line in call(primary, "INFO", "replication")[1].decode().splitlines()
                if ":" in line)
    assert mine["connected_slaves"] == "1" and mine["master_replid"] == info["master_replid"]
    # the offset the replica acknowledged last (a real one acknowledges once a second)
    assert re.fullmatch(f"ip={replica.host},port={replica.port},state=online,offset=\\d+,lag=\\d+,type=replica",
                        mine["slave0"])
    assert call(replica, "WAIT", "0", "0")[0] == "-"
    assert call(primary, "DEL", key) == (":", 1)


def test_publish_reaches_every_node_and_spublish_the_shards_replicas(cluster):
    first, second = cluster.primaries[0], cluster.primaries[1]
    with RawClient(second.host, second.port) as listener:
        assert listener.call("SUBSCRIBE", "news")[0] == "*"
        assert call(first, "PUBLISH", "news", "hello") == (":", 0)  # this node's subscribers
        assert listener.read() == ("*", [("$", b"message"), ("$", b"news"), ("$", b"hello")])
    channel = "orders:{eu}"
    owner = next(n for n in cluster.primaries
                 if any(a <= key_slot(channel.encode()) <= b for a, b in _ranges(n)))
    replica = shard_of(cluster, owner)
    with RawClient(replica.host, replica.port) as listener:
        assert listener.call("SSUBSCRIBE", channel)[0] == "*"
        assert call(owner, "SPUBLISH", channel, "sharded") == (":", 0)
        assert listener.read() == ("*", [("$", b"smessage"), ("$", channel.encode()), ("$", b"sharded")])
