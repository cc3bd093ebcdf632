"""fakekey.Cluster: several nodes in one process, one clock, replicas that follow their
primary, and failures on cue (kill, restart, failover, partition) on the cluster's clock."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from fakekey.codecs.digest import database_digest
from fakekey.core.cluster import key_slot
from fakekey.net.cluster import Cluster, Node

TIMEOUT = 2000  # cluster-node-timeout, ms of the cluster's (frozen) clock


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    with Cluster(primaries=3, replicas=1, cluster_node_timeout=TIMEOUT) as started:
        started.freeze()
        yield started


def client(node: Node) -> redis.Redis:
    return redis.Redis(host=node.host, port=node.port, socket_timeout=5)


def answering_at(node: Node) -> str | None:
    """The node id of whatever answers at `node`'s address now; None when nothing does."""
    try:
        return client(node).execute_command("CLUSTER", "MYID").decode()
    except redis.exceptions.ConnectionError:
        return None


def replica_of(cluster: Cluster, primary: Node) -> Node:
    return next(n for n in cluster.nodes if n.view.myself.primary is not None
                and n.view.myself.primary.id == primary.node_id)


def test_the_shape_of_a_new_cluster(cluster):
    assert [n.role for n in cluster.nodes] == ["primary"] * 3 + ["replica"] * 3
    assert len({n.port for n in cluster.nodes}) == 6
    assert all(len(n.node_id) == 40 for n in cluster.nodes)
    assert cluster.startup_nodes == [(n.host, n.port) for n in cluster.nodes]
    for primary in cluster.primaries:  # each primary has one replica, in its shard
        assert replica_of(cluster, primary).view.myself.shard_id == primary.view.myself.shard_id
    # every node agrees who serves every slot (valkey-cli's split)
    owners = {tuple(o.id if o else None for o in n.view.owners) for n in cluster.nodes}
    assert len(owners) == 1
    assert cluster.node_for_slot(0) is cluster.primaries[0]
    assert cluster.node_for_slot(16383) is cluster.primaries[2]


def test_a_replica_follows_every_kind_of_write(cluster):
    slot = key_slot(b"k")
    primary = cluster.node_for_slot(slot)
    p = client(primary)
    p.set("k", "1", px=60_000)
    p.rpush("{k}list", 1, 2, 3)
    p.sadd("{k}set", *range(20))
    p.spop("{k}set", 3)  # random: the replica removes what the primary popped
    p.eval("redis.call('INCR', KEYS[1]); return redis.call('INCR', KEYS[1])", 1, "{k}n")
    with p.pipeline(transaction=True) as tx:
        tx.hset("{k}h", "f", "v").lpop("{k}list").execute()
    p.set("{k}gone", "x", px=10)
    cluster.advance(50)
    p.get("{k}gone")  # expired on the primary: the replica learns it as a removal
    replica = replica_of(cluster, primary)
    mine, theirs = primary.server.state.dbs[0], replica.server.state.dbs[0]
    now = primary.server.state.clock.now_ms()
    assert database_digest(theirs.data, theirs.expires, now) == database_digest(mine.data, mine.expires, now)
    assert sorted(theirs.data) == sorted(mine.data)
    assert dict(theirs.expires.items()) == dict(mine.expires.items())
    assert b"{k}gone" not in theirs.data
    assert replica.server.state.repl_offset > 0


def test_a_replica_redirects_writes_and_refuses_keyless_ones(cluster):
    slot = key_slot(b"k")
    primary = cluster.node_for_slot(slot)
    r = client(replica_of(cluster, primary))
    with pytest.raises(redis.exceptions.ResponseError, match=f"{slot} .*:{primary.port}"):
        r.set("k", "v")
    with pytest.raises(redis.exceptions.ReadOnlyError):
        r.flushall()


def test_one_clock_for_every_node(cluster):
    first, last = cluster.primaries[0], cluster.primaries[2]
    first_client = client(first)
    first_client.execute_command("FAKEKEY.CLOCK", "SET", "1700000000000")
    assert client(last).time()[0] == 1_700_000_000
    cluster.advance(5000)
    assert client(last).time()[0] == 1_700_000_005


def test_a_killed_primary_is_replaced_by_its_replica_after_the_node_timeout(cluster):
    slot = key_slot(b"k")
    primary = cluster.node_for_slot(slot)
    heir = replica_of(cluster, primary)
    client(primary).set("k", "kept")
    assert answering_at(primary) == primary.node_id
    cluster.kill(primary)
    # refused; or, once in a while in a parallel run, another test's server took the freed
    # port: never the killed node itself
    assert answering_at(primary) != primary.node_id
    watcher = cluster.primaries[0] if primary is not cluster.primaries[0] else cluster.primaries[1]
    cluster.advance(TIMEOUT // 2)
    assert watcher.view.nodes[primary.node_id].flags(watcher.view.myself) == "master"
    cluster.advance(TIMEOUT)
    assert "fail" in watcher.view.nodes[primary.node_id].flags(watcher.view.myself)
    assert cluster.node_for_slot(slot) is heir and heir.view.myself.is_primary
    assert client(heir).get("k") == b"kept"
    # back: it follows its old replica and gets what was written meanwhile
    client(heir).set("k", "new")
    cluster.restart(primary)
    assert primary.view.myself.primary is not None and primary.view.myself.primary.id == heir.node_id
    client(heir).set("k", "newer")
    assert primary.server.state.dbs[0].data.get(b"k") == b"newer"


def test_failover_by_hand_swaps_primary_and_replica(cluster):
    primary = cluster.primaries[1]
    replica = replica_of(cluster, primary)
    cluster.failover(replica)
    assert replica.role == "primary" and primary.role == "replica"
    slot = 6000
    assert cluster.node_for_slot(slot) is replica
    with pytest.raises(redis.exceptions.ResponseError, match=f"{slot} .*:{replica.port}"):
        client(primary).set(_key_in(slot), "v")


def test_the_minority_side_of_a_partition_stops_taking_writes(cluster):
    lonely = cluster.primaries[0]
    others = [n for n in cluster.nodes if n is not lonely]
    key = _key_in(0)
    client(lonely).set(key, "before")
    cluster.partition(lonely, others)
    client(lonely).set(key, "still within the timeout")
    cluster.advance(TIMEOUT + 1)
    with pytest.raises(redis.exceptions.ResponseError, match="The cluster is down"):
        client(lonely).set(key, "after")
    cluster.heal()
    owner = cluster.node_for_slot(0)  # its replica took over on the majority side
    assert owner is not lonely and lonely.view.myself.primary is not None
    # what the minority primary took after the cut is lost, as on Valkey; it follows now
    assert client(owner).get(key) == b"before"
    client(owner).set(key, "healed")
    assert lonely.server.state.dbs[0].data.get(key.encode()) == b"healed"


def _key_in(slot: int) -> str:
    for i in range(100_000):
        key = f"key:{i}"
        if key_slot(key.encode()) == slot:
            return key
    raise AssertionError(slot)
