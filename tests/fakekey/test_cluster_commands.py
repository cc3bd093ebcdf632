"""CLUSTER subcommands on fakekey's cluster where a real cluster is slow or unkind to test:
a forgotten node is forgotten by every node that sees the one that forgot it (Valkey's
forgotten-node gossip) and stays forgotten; a primary that gives its last slot away
becomes a replica of the taker (cluster-allow-replica-migration)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fakekey.net.cluster import Cluster, Node
from fakekey.testing.raw import RawClient

OK = ("+", b"OK")


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    with Cluster(primaries=2, replicas=1) as started:
        yield started


def call(node: Node, *args: object) -> object:
    with RawClient(node.host, node.port) as client:
        return client.call(*args)


def known_ids(node: Node) -> set[str]:
    text = call(node, "CLUSTER", "NODES")[1].decode()  # type: ignore[index]
    return {line.split(" ")[0] for line in text.splitlines()}


def test_a_forgotten_node_is_forgotten_by_the_others_but_itself(cluster):
    p0, p1, r0, r1 = cluster.nodes
    assert call(p0, "CLUSTER", "FORGET", r1.node_id) == OK
    for node in (p0, p1, r0):
        assert r1.node_id not in known_ids(node)
    assert known_ids(r1) == {n.node_id for n in cluster.nodes}  # it does not forget itself
    assert call(p0, "CLUSTER", "FORGET", r1.node_id) == OK  # already forgotten: OK all the same
    assert call(p0, "CLUSTER", "REPLICAS", r1.node_id) == ("-", b"ERR Unknown node " + r1.node_id.encode())
    assert call(p0, "CLUSTER", "INFO")[1].count(b"cluster_known_nodes:3\r\n") == 1  # type: ignore[index]


def test_a_primary_that_gives_its_last_slot_away_follows_the_taker(cluster):
    p0, p1, _r0, _r1 = cluster.nodes
    assert call(p0, "CLUSTER", "DELSLOTSRANGE", "1", "8191") == OK
    assert call(p1, "CLUSTER", "SETSLOT", "0", "IMPORTING", p0.node_id) == OK
    assert call(p0, "CLUSTER", "SETSLOT", "0", "NODE", p1.node_id) == OK  # the giver first
    assert call(p1, "CLUSTER", "SETSLOT", "0", "NODE", p1.node_id) == OK
    line = next(line for line in call(p0, "CLUSTER", "NODES")[1].decode().splitlines()  # type: ignore[index]
                if "myself" in line)
    assert line.split(" ")[2:4] == ["myself,slave", p1.node_id]
    assert call(p0, "CLUSTER", "MYSHARDID") == call(p1, "CLUSTER", "MYSHARDID")
    assert call(p0, "CLUSTER", "SETSLOT", "0", "STABLE") == ("-", b"ERR Please use SETSLOT only with masters.")
