"""Replicas and failovers between fakekey processes (net/cluster_bus.py, the decisions in
core/cluster_failover.py): CLUSTER REPLICATE of a node of another process replicates it
over TCP; CLUSTER FAILOVER TAKEOVER and FORCE swap a shard's roles; a primary's vote, one
per epoch. The whole flow on six processes (redis-cli --cluster create --cluster-replicas
1, a manual failover, a SIGKILL-ed primary replaced) runs on fakekey and Valkey in
tests/conformance/test_cluster_meet.py."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from fakekey.core.cluster import SLOTS, ClusterNode, enable_cluster
from fakekey.core.cluster_failover import Failover
from fakekey.net.server import new_state
from fakekey.testing.node_processes import (
    NodeProcess,
    NodeProcesses,
    all_ok,
    give_slots,
    join_by_meet,
    replication_info,
    wait_for,
)

NODE_TIMEOUT = 1000
DEADLINE = 20.0


@pytest.fixture
def shard() -> Iterator[list[NodeProcess]]:
    """Two processes met; the first serves every slot, the second replicates it."""
    with NodeProcesses("fakekey", 2, cluster_node_timeout=NODE_TIMEOUT, repl_diskless_sync_delay=0) as nodes:
        join_by_meet(nodes)
        give_slots(nodes[:1], [(0, SLOTS - 1)])
        wait_for("cluster_state:ok", lambda: all_ok(nodes), DEADLINE)
        assert nodes[1].call("CLUSTER", "REPLICATE", nodes[0].node_id()) == ("+", b"OK")
        wait_for("the replica's link up", lambda: linked(nodes[1], nodes[0]), DEADLINE)
        yield nodes


def linked(replica: NodeProcess, primary: NodeProcess) -> bool:
    info = replication_info(replica)
    return info.get("master_port") == str(primary.port) and info.get("master_link_status") == "up"


def flags_seen(nodes: list[NodeProcess]) -> list[dict[str, tuple[str, str]]]:
    """Each node's CLUSTER NODES: id -> (flags without myself, primary id)."""
    return [{f[0]: (f[2].replace("myself,", ""), f[3]) for f in node.nodes()} for node in nodes]


def test_replicate_a_node_of_another_process(shard):
    primary, replica = shard
    primary_id, replica_id = primary.node_id(), replica.node_id()
    expected = {primary_id: ("master", "-"), replica_id: ("slave", primary_id)}
    wait_for("both nodes see the shard", lambda: flags_seen(shard) == [expected, expected], DEADLINE)
    for node in shard:
        lines = node.call("CLUSTER", "REPLICAS", primary_id)[1]
        assert [line[1].split()[0].decode() for line in lines] == [replica_id]
    assert replication_info(primary)["connected_slaves"] == "1"
    client = redis.Redis(replica.host, replica.port)
    writer = redis.Redis(primary.host, primary.port)
    try:
        writer.set("foo", "bar")
        assert writer.wait(1, 5000) == 1
        with pytest.raises(redis.ResponseError, match=f"12182 127.0.0.1:{primary.port}"):
            client.get("foo")
        client.execute_command("READONLY")
        assert client.get("foo") == b"bar"
        with pytest.raises(redis.ResponseError, match=f"12182 127.0.0.1:{primary.port}"):
            client.set("foo", "baz")  # MOVED: redis-py keeps the slot and address
    finally:
        client.close()
        writer.close()


def test_takeover_and_force_swap_the_roles(shard):
    primary, replica = shard
    with redis.Redis(primary.host, primary.port) as writer:
        writer.set("k", "1")
        assert writer.wait(1, 5000) == 1
    first_epoch = int(next(f[6] for f in primary.nodes() if "myself" in f[2]))
    assert replica.call("CLUSTER", "FAILOVER", "TAKEOVER") == ("+", b"OK")
    wait_for("the old primary follows its replica", lambda: linked(primary, replica), DEADLINE)
    assert replica.call("GET", "k") == ("$", b"1")
    assert replication_info(replica)["role"] == "master"
    assert primary.call("CLUSTER", "FAILOVER", "FORCE") == ("+", b"OK")
    wait_for("the roles swapped back", lambda: linked(replica, primary), DEADLINE)
    primary_id, replica_id = primary.node_id(), replica.node_id()
    expected = {primary_id: ("master", "-"), replica_id: ("slave", primary_id)}
    wait_for("both nodes see it", lambda: flags_seen(shard) == [expected, expected], DEADLINE)
    epochs = [{int(f[6]) for f in node.nodes()} for node in shard]  # a shard shows one epoch
    assert epochs[0] == epochs[1] and len(epochs[0]) == 1
    assert epochs[0].pop() > first_epoch  # the winner's claim is newer
    assert primary.call("GET", "k") == ("$", b"1")


def test_a_manual_failover_waits_for_the_replica_then_swaps(shard):
    primary, replica = shard
    with redis.Redis(primary.host, primary.port) as writer:
        for i in range(50):
            writer.set(f"key{{t}}{i}", i)
    assert replica.call("CLUSTER", "FAILOVER") == ("+", b"OK")
    wait_for("the old primary follows its replica", lambda: linked(primary, replica), DEADLINE)
    assert replica.call("GET", "key{t}49") == ("$", b"49")
    assert primary.call("SET", "x", "1")[1].startswith(b"MOVED ")
    assert primary.info()["cluster_state"] == "ok"


# --- a primary's vote, without processes ----------------------------------------------------------


def voter() -> tuple[Failover, ClusterNode, ClusterNode]:
    """A primary serving half the slots, another primary (failed) serving the rest and its
    replica asking for votes."""
    state = new_state()
    state.config.values["cluster-enabled"] = True
    view = enable_cluster(state, "127.0.0.1", 7000)
    failed = ClusterNode("f" * 40, "127.0.0.1", 7001)
    failed.failing = True
    failed.config_epoch = 2
    replica = ClusterNode("r" * 40, "127.0.0.1", 7002)
    replica.primary = failed
    view.nodes.update({failed.id: failed, replica.id: replica})
    view.myself.config_epoch = 1
    view.owners[:SLOTS // 2] = [view.myself] * (SLOTS // 2)
    view.owners[SLOTS // 2:] = [failed] * (SLOTS // 2)
    view.current_epoch = 3
    return Failover(view), failed, replica


def test_a_primary_votes_once_per_epoch():
    failover, _failed, replica = voter()
    claimed = [(SLOTS // 2, SLOTS - 1)]
    assert failover.should_vote(replica, 3, 2, claimed, force_ack=False)
    assert not failover.should_vote(replica, 3, 2, claimed, force_ack=False)  # spent for epoch 3
    failover.view.current_epoch = 4
    assert not failover.should_vote(replica, 4, 2, claimed, force_ack=False)  # twice node-timeout


def test_no_vote_for_a_live_primary_an_old_epoch_or_a_stale_claim():
    failover, failed, replica = voter()
    claimed = [(SLOTS // 2, SLOTS - 1)]
    assert not failover.should_vote(replica, 2, 2, claimed, force_ack=False)  # an older epoch
    assert not failover.should_vote(replica, 3, 1, claimed, force_ack=False)  # a claim older than the owner's
    failover, failed, replica = voter()
    failed.failing = False
    assert not failover.should_vote(replica, 3, 2, claimed, force_ack=False)
    assert failover.should_vote(replica, 3, 2, claimed, force_ack=True)  # a manual failover
