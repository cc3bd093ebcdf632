"""A real valkey-server as a replica of fakekey (`--replicaof`): the full sync, the stream
of a mixed workload (every type, expiries, scripts, functions, transactions, SPOP, served
blocking pops, EMQ verbs by their effect), WAIT, a partial resync after the link is
killed, INFO/ROLE/CLIENT LIST, and the replica holding the same data key by key."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from fakekey.net.cluster import Cluster, Node
from fakekey.net.server import Server
from fakekey.testing.raw import RawClient
from fakekey.testing.targets import ValkeyTarget, find_valkey_binary

TTL_TOLERANCE_MS = 5000  # the replica's PTTL is read later than the primary's


@pytest.fixture
def primary() -> Iterator[Server]:
    with Server(repl_diskless_sync_delay=0, enable_debug_command="yes") as server:
        yield server


@pytest.fixture
def replica(primary: Server) -> Iterator[ValkeyTarget]:
    binary = find_valkey_binary()
    if binary is None:
        pytest.skip("no valkey-server binary")
    with RawClient(primary.host, primary.port) as client:  # data before the replica: in the RDB
        client.call("SET", "before", "1")
        client.call("HSET", "h0", "f", "v")
    target = ValkeyTarget(binary, "--replicaof", "127.0.0.1", str(primary.port))
    try:
        target.start()
        wait_for(lambda: info_field(target.raw(), "replication", "master_link_status") == "up")
        yield target
    finally:
        target.stop()


def wait_for(condition, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def info_field(client: RawClient, section: str, name: str) -> str:
    with client:
        text = client.call("INFO", section)[1].decode()
    for line in text.splitlines():
        if line.startswith(name + ":"):
            return line.split(":", 1)[1]
    return ""


LIBRARY = ("#!lua name=replib\n"
           "server.register_function('two', function(keys, args)\n"
           "  server.call('set', keys[1], args[1]); return server.call('incr', keys[2]) end)")


def workload(c: RawClient, primary: Server) -> None:
    c.call("SET", "s", "v", "EX", "1000")
    c.call("SETEX", "s2", "500", "v")
    c.call("INCRBYFLOAT", "f", "1.25")
    c.call("APPEND", "s", "w")
    c.call("SETBIT", "bits", "100", "1")
    c.call("PFADD", "hll", "a", "b", "c")
    c.call("RPUSH", "l", *[f"e{i}" for i in range(20)])
    c.call("LPOP", "l")
    c.call("BLPOP", "l", "0")
    c.call("BLMOVE", "l", "l2", "LEFT", "RIGHT", "0")
    c.call("HSET", "h", *[x for i in range(10) for x in (f"k{i}", f"v{i}")])
    c.call("HINCRBYFLOAT", "h", "n", "2.5")
    c.call("HEXPIRE", "h", "1000", "FIELDS", "1", "k1")
    c.call("SADD", "set", *[f"m{i}" for i in range(30)])
    c.call("SPOP", "set")
    c.call("SPOP", "set", "3")
    c.call("ZADD", "z", "1", "a", "2", "b", "3", "c")
    c.call("ZINCRBY", "z", "5", "a")
    c.call("BZPOPMIN", "z", "0")
    c.call("GEOADD", "geo", "13.361389", "38.115556", "Palermo")
    c.call("XADD", "st", "*", "f", "v")
    c.call("XADD", "st", "MAXLEN", "~", "100", "*", "f", "v2")
    c.call("XGROUP", "CREATE", "st", "g", "0")
    c.call("XREADGROUP", "GROUP", "g", "c1", "COUNT", "1", "STREAMS", "st", ">")
    c.call("XREADGROUP", "GROUP", "g", "c2", "NOACK", "STREAMS", "st", ">")
    c.call("XCLAIM", "st", "g", "c3", "0", c.call("XADD", "st", "*", "f", "v3")[1], "FORCE")
    c.call("XAUTOCLAIM", "st", "g", "c4", "0", "0", "COUNT", "1")
    c.call("HSETEX", "h", "FNX", "EX", "1000", "FIELDS", "1", "new", "v")
    c.call("HSETEX", "h", "PX", "0", "FIELDS", "1", "k2", "v")
    c.call("HGETEX", "h", "PX", "3000000", "FIELDS", "2", "k3", "k4")
    c.call("HGETEX", "h", "PERSIST", "FIELDS", "1", "k3")
    c.call("HEXPIRE", "h", "0", "FIELDS", "1", "k5")
    c.call("GEOADD", "geo", "XX", "CH", "13.4", "38.2", "Palermo")
    c.call("RESTORE", "restored", "2000000", c.call("DUMP", "h")[1])
    c.call("EXPIRE", "l2", "2000")
    c.call("PEXPIREAT", "z", str(int(time.time() * 1000) + 3_000_000))
    c.call("EVAL", "redis.call('set', KEYS[1], ARGV[1]); redis.call('rpush', KEYS[2], 'x')", "2",
           "ev", "evl", "val")
    c.call("FUNCTION", "LOAD", LIBRARY)
    c.call("FCALL", "two", "2", "fa", "fn", "v")
    c.call("MULTI")
    c.call("INCR", "counter")
    c.call("SADD", "tx", "a")
    c.call("SELECT", "1")
    c.call("SET", "db1", "x")
    c.call("SELECT", "0")
    assert c.call("EXEC")[0] == "*"
    c.call("SELECT", "0")
    c.call("MULTI")  # a transaction with a part by effect (XREADGROUP): the order holds
    c.call("XADD", "st2", "1-1", "f", "v")
    c.call("XGROUP", "CREATE", "st2", "g2", "0")
    c.call("XREADGROUP", "GROUP", "g2", "c", "COUNT", "1", "STREAMS", "st2", ">")
    c.call("XADD", "st2", "1-2", "f", "v")
    c.call("XACK", "st2", "g2", "1-1")
    assert c.call("EXEC")[0] == "*"
    assert c.call("EMQ.ENQUEUE", "3", "emq:{q}:JOB1", "emq:{q}:pending", "emq:{q}:schedule",
                  "payload", "0", "0") == (":", 1)
    assert c.call("EMQ.ENQUEUE", "3", "emq:{q}:JOB2", "emq:{q}:pending", "emq:{q}:schedule",
                  "p2", "60000", "0") == (":", 1)
    claimed = c.call("EMQ.CLAIM", "2", "emq:{q}:pending", "emq:{q}:active", "30000")
    assert claimed[0] == "*" and claimed[1]
    assert c.call("EMQ.PUBLISH", "1", "emq:{bus}:stream", "0", "id", "1", "type", "t",
                  "data", "d")[0] == "$"
    with RawClient(primary.host, primary.port) as blocked:  # a pop that waits, then is served
        blocked.send("BLPOP", "later", "0")
        wait_for(lambda: b"blocked_clients:1" in c.call("INFO", "clients")[1])
        c.call("RPUSH", "later", "a", "b")
        assert blocked.read() == ("*", [("$", b"later"), ("$", b"a")])


def keys_of(client: RawClient) -> set[bytes]:
    return {item[1] for item in client.call("KEYS", "*")[1]}


def same_data(primary: Server, replica: ValkeyTarget) -> None:
    with RawClient(primary.host, primary.port) as mine, replica.raw() as theirs:
        for db in ("0", "1"):
            mine.call("SELECT", db)
            theirs.call("SELECT", db)
            keys = keys_of(mine)
            assert keys == keys_of(theirs), db
            for key in sorted(keys):
                assert mine.call("TYPE", key) == theirs.call("TYPE", key), key
                assert mine.call("DEBUG", "DIGEST-VALUE", key) == \
                    theirs.call("DEBUG", "DIGEST-VALUE", key), key
                ttl_mine, ttl_theirs = mine.call("PTTL", key)[1], theirs.call("PTTL", key)[1]
                assert (ttl_mine < 0) == (ttl_theirs < 0), key
                assert abs(ttl_mine - ttl_theirs) < TTL_TOLERANCE_MS, key


def synced(primary: Server, replica: ValkeyTarget) -> None:
    """The replica has processed everything the primary propagated (WAIT answered 1)."""
    with RawClient(primary.host, primary.port) as client:
        client.call("SET", "sync-mark", str(time.monotonic()))
        assert client.call("WAIT", "1", "5000") == (":", 1)


def test_a_real_replica_follows_fakekey(primary, replica):
    with RawClient(primary.host, primary.port) as c:
        workload(c, primary)
        assert c.call("WAIT", "1", "5000") == (":", 1)
    same_data(primary, replica)
    with replica.raw() as theirs:
        assert theirs.call("FUNCTION", "LIST")[1], "the library came with the RDB or the stream"


def test_primary_side_introspection(primary, replica):
    with RawClient(primary.host, primary.port) as c:
        wait_for(lambda: info_field(RawClient(primary.host, primary.port), "replication",
                                    "connected_slaves") == "1")
        text = c.call("INFO", "replication")[1].decode()
        assert f"slave0:ip=127.0.0.1,port={replica.port},state=online," in text
        assert "repl_backlog_active:1" in text
        role = c.call("ROLE")
        assert role[1][0] == ("$", b"master")
        assert role[1][2][1][0][1][1] == ("$", b"%d" % replica.port)
        listed = c.call("CLIENT", "LIST", "TYPE", "replica")[1]
        assert b" flags=S " in listed and listed.count(b"\n") == 1
        assert c.call("CONFIG", "SET", "min-replicas-to-write", "1") == ("+", b"OK")
        assert c.call("SET", "allowed", "1") == ("+", b"OK")  # one good replica
        assert c.call("CONFIG", "SET", "min-replicas-to-write", "2") == ("+", b"OK")
        assert c.call("SET", "refused", "1") == \
            ("-", b"NOREPLICAS Not enough good replicas to write.")
        assert c.call("CONFIG", "SET", "min-replicas-to-write", "0") == ("+", b"OK")


def test_partial_resync_after_the_link_is_killed(primary, replica):
    synced(primary, replica)
    with RawClient(primary.host, primary.port) as c:
        c.call("CONFIG", "RESETSTAT")
        assert c.call("CLIENT", "KILL", "TYPE", "replica") == (":", 1)
        c.call("SET", "while-away", "1")
        c.call("RPUSH", "list-away", "a", "b")
        wait_for(lambda: info_field(RawClient(primary.host, primary.port), "stats",
                                    "sync_partial_ok") == "1")
        assert info_field(RawClient(primary.host, primary.port), "stats", "sync_full") == "0"
    synced(primary, replica)
    same_data(primary, replica)


def test_wait_times_out_with_the_count_when_nobody_acknowledges(primary):
    with RawClient(primary.host, primary.port) as c:
        c.call("SET", "a", "1")
        assert c.call("WAIT", "1", "50") == (":", 0)  # no replica: answered at its timeout


# --- a fakekey.Cluster's in-process replicas and real replicas together ---------------------


@contextmanager
def real_replica_of(host: str, port: int) -> Iterator[ValkeyTarget]:
    binary = find_valkey_binary()
    if binary is None:
        pytest.skip("no valkey-server binary")
    target = ValkeyTarget(binary, "--replicaof", host, str(port))
    try:
        target.start()
        wait_for(lambda: info_field(target.raw(), "replication", "master_link_status") == "up")
        yield target
    finally:
        target.stop()


def contents(host: str, port: int) -> dict[bytes, tuple[Any, Any]]:
    """Each key's type and digest (READONLY: a cluster replica's own)."""
    with RawClient(host, port) as client:
        client.call("READONLY")
        return {key: (client.call("TYPE", key), client.call("DEBUG", "DIGEST-VALUE", key))
                for key in keys_of(client)}


def cluster_writes(node: Node, tag: str) -> None:
    """Writes of every kind to slots the node serves (a one-primary cluster: all)."""
    with RawClient(node.host, node.port) as c:
        c.call("SET", f"s-{tag}", "v", "EX", "1000")
        c.call("RPUSH", f"l-{tag}", "a", "b", "c")
        c.call("LPOP", f"l-{tag}")
        c.call("HSET", f"h-{tag}", "f", "1", "g", "2")
        c.call("HEXPIRE", f"h-{tag}", "1000", "FIELDS", "1", "f")
        c.call("SADD", f"set-{tag}", "a", "b", "c")
        c.call("SPOP", f"set-{tag}")
        c.call("XADD", f"x-{tag}", "*", "f", "v")
        c.call("INCRBYFLOAT", f"n-{tag}", "1.5")


def all_follow(primary: Node, in_process: Node, real: ValkeyTarget) -> None:
    """The in-process replica and the real one hold what the primary holds."""
    with RawClient(primary.host, primary.port) as c:
        c.call("SET", "sync-mark", str(time.monotonic()))
        assert c.call("WAIT", "2", "5000") == (":", 2)
    mine = contents(primary.host, primary.port)
    assert contents(in_process.host, in_process.port) == mine
    assert contents(real.host, real.port) == mine
    with RawClient(primary.host, primary.port) as c:
        assert info_field(RawClient(primary.host, primary.port), "replication",
                          "connected_slaves") == "2"
        assert len(c.call("ROLE")[1][2][1]) == 2


def test_a_real_replica_joins_a_cluster_primary_that_has_in_process_replicas():
    with Cluster(primaries=1, replicas=1, repl_diskless_sync_delay=0,
                 enable_debug_command="yes") as cluster:
        primary, in_process = cluster.primaries[0], cluster.replicas[0]
        cluster_writes(primary, "before")
        with real_replica_of(primary.host, primary.port) as real:
            cluster_writes(primary, "after")
            all_follow(primary, in_process, real)
            # the in-process replica misses writes, then resyncs (the cluster's catch-up)
            cluster.partition(primary, in_process)
            cluster_writes(primary, "cut")
            cluster.heal()
            cluster_writes(primary, "healed")
            all_follow(primary, in_process, real)


def test_an_in_process_replica_joins_a_cluster_primary_that_has_a_real_replica():
    with Cluster(primaries=2, repl_diskless_sync_delay=0, enable_debug_command="yes") as cluster:
        primary, other = cluster.primaries
        with RawClient(other.host, other.port) as c:  # the second node gives its slots away
            assert c.call("CLUSTER", "DELSLOTSRANGE", "8192", "16383") == ("+", b"OK")
        with RawClient(primary.host, primary.port) as c:  # and the first takes them
            assert c.call("CLUSTER", "DELSLOTSRANGE", "8192", "16383") == ("+", b"OK")
            assert c.call("CLUSTER", "ADDSLOTSRANGE", "8192", "16383") == ("+", b"OK")
        cluster_writes(primary, "before")
        with real_replica_of(primary.host, primary.port) as real:
            cluster_writes(primary, "real")
            with RawClient(other.host, other.port) as c:
                assert c.call("CLUSTER", "REPLICATE", primary.node_id) == ("+", b"OK")
            cluster_writes(primary, "both")
            all_follow(primary, other, real)
            # the real replica's link breaks: it continues from the backlog, in-process
            # replica or not
            with RawClient(primary.host, primary.port) as c:
                assert c.call("CLIENT", "KILL", "TYPE", "replica") == (":", 1)
            cluster_writes(primary, "away")
            wait_for(lambda: info_field(RawClient(primary.host, primary.port), "stats",
                                        "sync_partial_ok") == "1")
            all_follow(primary, other, real)
