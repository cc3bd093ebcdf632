"""One node with `cluster-enabled yes`, never met by another, on fakekey and on a real
valkey-server, RESP2 and RESP3: the CLUSTER subcommands' replies and errors, the slots it
serves, and the commands cluster mode refuses. Node ids, shard ids and ports are read from
the node; every other byte is Valkey's.

Each test starts from the same node: every slot its own, none open, no key (the `node`
fixture restores it). A real node waits 500 ms (its rejoin delay, at cluster-node-timeout
500) before it says `cluster_state:ok` again after it had no slot at all: the tests that
go through that state are the ones that pay it."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from typing import Any

import pytest

from fakekey.net.server import Server
from fakekey.testing.node_processes import port_with_free_bus
from fakekey.testing.raw import RawClient, read_within, wait_blocked
from fakekey.testing.targets import find_valkey_binary, server_flags

TARGETS = [t.strip() for t in os.environ.get("FAKEKEY_TARGETS", "fakekey,valkey").split(",")
           if t.strip() in ("fakekey", "valkey")]
OK = ("+", b"OK")
NODE_TIMEOUT = 500  # ms: the shortest rejoin delay a real node allows


class LoneNode:
    """A cluster node of either kind, alone, with its folder (its nodes.conf)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.host = "127.0.0.1"
        self.port = 0
        self.dir = tempfile.mkdtemp(prefix=f"fakekey-cluster-node-{kind}-")
        self.server: Server | None = None
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        if self.kind == "fakekey":
            self.server = Server(cluster_enabled="yes", cluster_node_timeout=NODE_TIMEOUT,
                                 dir=self.dir, save="", appendonly="no")
            self.server.start()
            self.port = self.server.port
            return
        binary = find_valkey_binary()
        assert binary is not None
        self.port = port_with_free_bus()
        self.proc = subprocess.Popen(
            [binary, "--port", str(self.port), "--cluster-enabled", "yes",
             "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", str(NODE_TIMEOUT),
             *server_flags(self.dir)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with self.raw() as client:
                    if client.call("PING") == ("+", b"PONG"):
                        return
            except OSError:
                time.sleep(0.02)
        raise RuntimeError(f"valkey-server in cluster mode did not start on port {self.port}")

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait(10)
        shutil.rmtree(self.dir, ignore_errors=True)

    def raw(self, protocol: int = 2) -> RawClient:
        client = RawClient(self.host, self.port)
        if protocol == 3:
            assert client.call("HELLO", "3")[0] == "%"
        return client


@pytest.fixture(scope="module", params=TARGETS)
def lone(request: pytest.FixtureRequest) -> Iterator[LoneNode]:
    if request.param == "valkey" and find_valkey_binary() is None:
        if os.environ.get("CI"):
            pytest.fail("no valkey-server binary")
        pytest.skip("no valkey-server binary")
    node = LoneNode(request.param)
    node.start()
    yield node
    node.stop()


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def proto(request: pytest.FixtureRequest) -> int:
    return int(request.param)


DEFAULTS = (("cluster-slot-stats-enabled", "no"), ("cluster-announce-hostname", ""),
            ("cluster-preferred-endpoint-type", "ip"), ("cluster-require-full-coverage", "yes"))


@pytest.fixture
def node(lone: LoneNode, proto: int) -> Iterator[RawClient]:
    """A client of the node, which serves every slot, none open, and has no key."""
    with lone.raw() as admin:
        admin.call("FLUSHALL")
        for name, value in DEFAULTS:
            admin.call("CONFIG", "SET", name, value)
        if not myself_line(admin).endswith(" connected 0-16383"):
            assert admin.call("CLUSTER", "RESET", "SOFT") == OK
            assert admin.call("CLUSTER", "ADDSLOTSRANGE", "0", "16383") == OK
        wait_for_state(admin, b"ok")
    client = lone.raw(proto)
    yield client
    client.close()


# --- helpers ---------------------------------------------------------------------------------


def myself_line(client: RawClient) -> str:
    return client.call("CLUSTER", "NODES")[1].decode().removeprefix("txt:").strip()


def text(reply: tuple[str, Any], proto: int) -> bytes:
    """INFO's and NODES' text: a bulk string in RESP2, a verbatim `txt` string in RESP3."""
    if proto == 2:
        assert reply[0] == "$", reply
        return reply[1]
    assert reply[0] == "=" and reply[1].startswith(b"txt:"), reply
    return reply[1][4:]


def info(client: RawClient) -> dict[str, str]:
    reply = client.call("CLUSTER", "INFO")[1].removeprefix(b"txt:").decode()
    return dict(line.split(":", 1) for line in reply.splitlines())


def wait_for_state(client: RawClient, state: bytes, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while b"cluster_state:" + state not in client.call("CLUSTER", "INFO")[1]:
        assert time.monotonic() < deadline, f"cluster_state never became {state!r}"
        time.sleep(0.01)


def ids(client: RawClient) -> tuple[bytes, bytes]:
    return client.call("CLUSTER", "MYID")[1], client.call("CLUSTER", "MYSHARDID")[1]


def info_text(state: str, assigned: int, size: int, current: int, mine: int) -> bytes:
    fields = [("cluster_state", state), ("cluster_slots_assigned", assigned),
              ("cluster_slots_ok", assigned), ("cluster_slots_pfail", 0), ("cluster_slots_fail", 0),
              ("cluster_nodes_pfail", 0), ("cluster_nodes_fail", 0),
              ("cluster_voting_nodes_pfail", 0), ("cluster_voting_nodes_fail", 0),
              ("cluster_known_nodes", 1), ("cluster_size", size),
              ("cluster_current_epoch", current), ("cluster_my_epoch", mine),
              ("cluster_stats_messages_sent", 0), ("cluster_stats_messages_received", 0),
              ("cluster_stats_bytes_sent", 0), ("cluster_stats_bytes_received", 0),
              ("cluster_stats_pubsub_bytes_sent", 0), ("cluster_stats_pubsub_bytes_received", 0),
              ("cluster_stats_module_bytes_sent", 0), ("cluster_stats_module_bytes_received", 0),
              ("total_cluster_links_buffer_limit_exceeded", 0)]
    return "".join(f"{name}:{value}\r\n" for name, value in fields).encode()


# --- a new node ----------------------------------------------------------------------------


def test_a_new_node_refuses_keys_until_it_serves_slots(lone, node, proto):
    assert node.call("CLUSTER", "RESET", "HARD") == OK
    me, shard = ids(node)
    assert re.fullmatch(rb"[0-9a-f]{40}", me) and re.fullmatch(rb"[0-9a-f]{40}", shard) and me != shard
    assert text(node.call("CLUSTER", "INFO"), proto) == info_text("fail", 0, 0, 0, 0)
    assert text(node.call("CLUSTER", "NODES"), proto) == \
        b"%s :%d@%d myself,master - 0 0 0 connected\n" % (me, lone.port, lone.port + 10000)
    assert node.call("CLUSTER", "SLOTS") == ("*", [])
    assert node.call("CLUSTER", "LINKS") == ("*", [])
    assert node.call("CLUSTER", "REPLICAS", me) == ("*", [])
    unserved = ("-", b"CLUSTERDOWN Hash slot not served")
    assert node.call("GET", "x") == unserved
    assert node.call("SET", "x", "1") == unserved
    assert node.call("PING") == ("+", b"PONG")  # keyless: served
    assert node.call("CLUSTER", "DELSLOTS", "5") == ("-", b"ERR Slot 5 is already unassigned")
    assert node.call("CLUSTER", "FLUSHSLOTS") == OK
    # a config epoch is given only to a node alone and without one
    assert node.call("CLUSTER", "SET-CONFIG-EPOCH", "-1") == ("-", b"ERR Invalid config epoch specified: -1")
    assert node.call("CLUSTER", "SET-CONFIG-EPOCH", "x") == ("-", b"ERR value is not an integer or out of range")
    assert node.call("CLUSTER", "SET-CONFIG-EPOCH", "7") == OK
    assert node.call("CLUSTER", "SET-CONFIG-EPOCH", "8") == ("-", b"ERR Node config epoch is already non-zero")
    assert node.call("CLUSTER", "BUMPEPOCH") == ("+", b"STILL 7")
    assert node.call("CLUSTER", "ADDSLOTSRANGE", "0", "16383") == OK
    wait_for_state(node, b"ok")
    assert text(node.call("CLUSTER", "INFO"), proto) == info_text("ok", 16384, 1, 7, 7)
    assert node.call("SET", "x", "1") == OK
    assert node.call("GET", "x") == ("$", b"1")


def test_bumpepoch_takes_a_new_epoch_once(node):
    assert node.call("CLUSTER", "RESET", "HARD") == OK
    assert node.call("CLUSTER", "BUMPEPOCH") == ("+", b"BUMPED 1")
    assert node.call("CLUSTER", "BUMPEPOCH") == ("+", b"STILL 1")
    assert node.call("CLUSTER", "SET-CONFIG-EPOCH", "3") == ("-", b"ERR Node config epoch is already non-zero")
    fields = info(node)
    assert (fields["cluster_current_epoch"], fields["cluster_my_epoch"]) == ("1", "1")


# --- what the node says of itself ------------------------------------------------------------


def test_info_nodes_myid(lone, node, proto):
    me, _shard = ids(node)
    epoch = int(info(node)["cluster_my_epoch"])
    current = int(info(node)["cluster_current_epoch"])
    assert text(node.call("CLUSTER", "INFO"), proto) == info_text("ok", 16384, 1, current, epoch)
    assert text(node.call("CLUSTER", "NODES"), proto) == \
        b"%s :%d@%d myself,master - 0 0 %d connected 0-16383\n" % (me, lone.port, lone.port + 10000, epoch)
    assert node.call("CLUSTER", "MYID")[0] == "$"
    assert node.call("CLUSTER", "REPLICAS", me) == ("*", [])
    assert node.call("CLUSTER", "SLAVES", me) == ("*", [])
    assert node.call("CLUSTER", "COUNT-FAILURE-REPORTS", me) == (":", 0)
    assert node.call("CLUSTER", "LINKS") == ("*", [])
    assert text(node.call("INFO", "cluster"), proto) == b"# Cluster\r\ncluster_enabled:1\r\n"


def test_slots_and_shards(lone, node, proto):
    me, shard = ids(node)
    meta = ("*", []) if proto == 2 else ("%", [])
    assert node.call("CLUSTER", "SLOTS") == ("*", [
        ("*", [(":", 0), (":", 16383), ("*", [("$", b""), (":", lone.port), ("$", me), meta])])])
    fields = [("id", ("$", me)), ("port", (":", lone.port)), ("ip", ("$", b"")),
              ("endpoint", ("$", b"")), ("role", ("$", b"master")),
              ("replication-offset", (":", 0)), ("health", ("$", b"online"))]
    shard_fields = [("slots", ("*", [(":", 0), (":", 16383)])), ("nodes", ("*", [as_map(fields, proto)])),
                    ("id", ("$", shard))]
    assert node.call("CLUSTER", "SHARDS") == ("*", [as_map(shard_fields, proto)])


def test_an_announced_hostname_and_the_preferred_endpoint(lone, node, proto):
    me, _shard = ids(node)
    assert node.call("CONFIG", "SET", "cluster-announce-hostname", "host-1") == OK
    assert myself_line(node).startswith(f"{me.decode()} :{lone.port}@{lone.port + 10000},host-1 myself,")
    hostname = as_map([("hostname", ("$", b"host-1"))], proto)
    assert node.call("CLUSTER", "SLOTS")[1][0][1][2] == ("*", [("$", b""), (":", lone.port), ("$", me), hostname])
    assert node.call("CONFIG", "SET", "cluster-preferred-endpoint-type", "hostname") == OK
    ip = as_map([("ip", ("$", b""))], proto)
    assert node.call("CLUSTER", "SLOTS")[1][0][1][2] == ("*", [("$", b"host-1"), (":", lone.port), ("$", me), ip])
    shard = dict((plain_key(k), v) for k, v in pairs(node.call("CLUSTER", "SHARDS")[1][0]))
    shard_node = shard["nodes"][1][0]
    assert [plain_key(k) for k, *_ in pairs(shard_node)] == \
        ["id", "port", "ip", "endpoint", "hostname", "role", "replication-offset", "health"]
    assert dict((plain_key(k), v) for k, v in pairs(shard_node))["endpoint"] == ("$", b"host-1")
    assert node.call("CONFIG", "SET", "cluster-preferred-endpoint-type", "unknown-endpoint") == OK
    both = as_map([("ip", ("$", b"")), ("hostname", ("$", b"host-1"))], proto)
    null = ("$", None) if proto == 2 else ("_", None)
    assert node.call("CLUSTER", "SLOTS")[1][0][1][2] == ("*", [null, (":", lone.port), ("$", me), both])


def as_map(fields: list[tuple[str, Any]], proto: int) -> tuple[str, Any]:
    if proto == 2:
        return ("*", [item for name, value in fields for item in (("$", name.encode()), value)])
    return ("%", [(("$", name.encode()), value) for name, value in fields])


def pairs(reply: tuple[str, Any]) -> list[tuple[Any, Any]]:
    if reply[0] == "%":
        return list(reply[1])
    items = reply[1]
    return list(zip(items[::2], items[1::2], strict=True))


def plain_key(key: tuple[str, bytes]) -> str:
    return key[1].decode()


@pytest.mark.parametrize(("key", "slot"), [("foo", 12182), ("{user1000}.following", 3443),
                                           ("foo{}{bar}", 8363), ("foo{{bar}}zap", 4015),
                                           ("foo{bar}{zap}", 5061), ("", 0)])
def test_keyslot(node, key, slot):
    assert node.call("CLUSTER", "KEYSLOT", key) == (":", slot)


def test_keys_of_a_slot(node):
    for name in ("a", "b", "c"):
        assert node.call("SET", "{t2}" + name, "v" + name) == OK
    assert node.call("CLUSTER", "COUNTKEYSINSLOT", "4748") == (":", 3)
    kind, keys = node.call("CLUSTER", "GETKEYSINSLOT", "4748", "10")
    assert kind == "*" and sorted(keys) == [("$", b"{t2}a"), ("$", b"{t2}b"), ("$", b"{t2}c")]
    kind, two = node.call("CLUSTER", "GETKEYSINSLOT", "4748", "2")
    assert kind == "*" and len(two) == 2 and set(two) < set(keys)
    assert node.call("CLUSTER", "GETKEYSINSLOT", "4748", "0") == ("*", [])
    assert node.call("CLUSTER", "GETKEYSINSLOT", "1", "10") == ("*", [])
    assert node.call("DEL", "{t2}a") == (":", 1)
    assert node.call("CLUSTER", "COUNTKEYSINSLOT", "4748") == (":", 2)
    assert node.call("FLUSHALL") == OK
    assert node.call("CLUSTER", "COUNTKEYSINSLOT", "4748") == (":", 0)


def test_slot_stats(node, proto):
    for name in ("a", "b", "c"):
        node.call("SET", "{t2}" + name, "v")

    def stat(slot: int, fields: list[tuple[str, int]]) -> tuple[str, Any]:
        return ("*", [(":", slot), as_map([(n, (":", v)) for n, v in fields], proto)])

    assert node.call("CLUSTER", "SLOT-STATS", "SLOTSRANGE", "0", "2") == \
        ("*", [stat(s, [("key-count", 0)]) for s in (0, 1, 2)])
    assert node.call("CLUSTER", "SLOT-STATS", "SLOTSRANGE", "4748", "4748") == \
        ("*", [stat(4748, [("key-count", 3)])])
    assert node.call("CLUSTER", "SLOT-STATS", "ORDERBY", "key-count", "LIMIT", "2", "DESC") == \
        ("*", [stat(4748, [("key-count", 3)]), stat(0, [("key-count", 0)])])
    assert node.call("CLUSTER", "SLOT-STATS", "ORDERBY", "key-count", "LIMIT", "2", "ASC") == \
        ("*", [stat(0, [("key-count", 0)]), stat(1, [("key-count", 0)])])
    assert node.call("CLUSTER", "DELSLOTS", "1") == OK  # not this node's: not listed
    assert node.call("CLUSTER", "SLOT-STATS", "SLOTSRANGE", "0", "2") == \
        ("*", [stat(s, [("key-count", 0)]) for s in (0, 2)])
    assert node.call("CLUSTER", "ADDSLOTS", "1") == OK
    assert node.call("CONFIG", "SET", "cluster-slot-stats-enabled", "yes") == OK
    reply = node.call("CLUSTER", "SLOT-STATS", "SLOTSRANGE", "0", "0")
    stats = reply[1][0][1][1]
    assert stats[0] == ("*" if proto == 2 else "%")
    assert [plain_key(k) for k, _ in pairs(stats)] == \
        ["key-count", "cpu-usec", "network-bytes-in", "network-bytes-out"]
    assert len(node.call("CLUSTER", "SLOT-STATS", "ORDERBY", "network-bytes-out", "LIMIT", "3")[1]) == 3


# --- errors ----------------------------------------------------------------------------------

FFF = "f" * 40
ERRORS = [
    (("CLUSTER", "SETSLOT", "4748", "NODE", FFF), b"ERR Unknown node " + FFF.encode()),
    (("CLUSTER", "SETSLOT", "4748", "IMPORTING", FFF), b"ERR I'm already the owner of hash slot 4748"),
    (("CLUSTER", "SETSLOT", "4748", "MIGRATING", FFF), b"ERR I don't know about node " + FFF.encode()),
    (("CLUSTER", "SETSLOT", "4748", "MIGRATING", "abc"), b"ERR I don't know about node abc"),
    (("CLUSTER", "SETSLOT", "4748", "NODE", "abc"), b"ERR Unknown node abc"),
    (("CLUSTER", "SETSLOT", "16384", "STABLE"), b"ERR Invalid or out of range slot"),
    (("CLUSTER", "SETSLOT", "-1", "STABLE"), b"ERR Invalid or out of range slot"),
    (("CLUSTER", "SETSLOT", "x", "STABLE"), b"ERR Invalid or out of range slot"),
    (("CLUSTER", "SETSLOT", "4748", "BOGUS"), b"ERR Invalid CLUSTER SETSLOT action or number of arguments. "
                                               b"Try CLUSTER HELP"),
    (("CLUSTER", "SETSLOT", "4748", "NODE"), b"ERR Invalid CLUSTER SETSLOT action or number of arguments. "
                                              b"Try CLUSTER HELP"),
    (("CLUSTER", "SETSLOT", "4748", "IMPORTING"), b"ERR Invalid CLUSTER SETSLOT action or number of "
                                                   b"arguments. Try CLUSTER HELP"),
    (("CLUSTER", "SETSLOT", "4748", "STABLE", "TIMEOUT"), b"ERR Missing timeout value"),
    (("CLUSTER", "SETSLOT", "4748", "STABLE", "TIMEOUT", "x"), b"ERR timeout is not an integer or out of range"),
    (("CLUSTER", "SETSLOT", "4748", "STABLE", "TIMEOUT", "-1"), b"ERR timeout is negative"),
    (("CLUSTER", "ADDSLOTS", "0"), b"ERR Slot 0 is already busy"),
    (("CLUSTER", "ADDSLOTS", "16384"), b"ERR Invalid or out of range slot"),
    (("CLUSTER", "ADDSLOTS", "-1"), b"ERR Invalid or out of range slot"),
    (("CLUSTER", "ADDSLOTS", "abc"), b"ERR Invalid or out of range slot"),
    (("CLUSTER", "ADDSLOTS", "0", "abc"), b"ERR Invalid or out of range slot"),
    (("CLUSTER", "ADDSLOTSRANGE", "10", "5"), b"ERR start slot number 10 is greater than end slot number 5"),
    (("CLUSTER", "ADDSLOTSRANGE", "0", "16384"), b"ERR Invalid or out of range slot"),
    (("CLUSTER", "ADDSLOTSRANGE", "1"), b"ERR wrong number of arguments for 'cluster|addslotsrange' command"),
    (("CLUSTER", "ADDSLOTSRANGE", "1", "2", "3"), b"ERR wrong number of arguments for "
                                                   b"'cluster|addslotsrange' command"),
    (("CLUSTER", "DELSLOTS", "16384"), b"ERR Invalid or out of range slot"),
    (("CLUSTER", "DELSLOTSRANGE", "5", "1"), b"ERR start slot number 5 is greater than end slot number 1"),
    (("CLUSTER", "COUNTKEYSINSLOT", "16384"), b"ERR Invalid slot"),
    (("CLUSTER", "COUNTKEYSINSLOT", "-1"), b"ERR Invalid slot"),
    (("CLUSTER", "COUNTKEYSINSLOT", "x"), b"ERR value is not an integer or out of range"),
    (("CLUSTER", "GETKEYSINSLOT", "16384", "1"), b"ERR Invalid slot or number of keys"),
    (("CLUSTER", "GETKEYSINSLOT", "0", "-1"), b"ERR Invalid slot or number of keys"),
    (("CLUSTER", "GETKEYSINSLOT", "x", "1"), b"ERR value is not an integer or out of range"),
    (("CLUSTER", "GETKEYSINSLOT", "16384", "x"), b"ERR value is not an integer or out of range"),
    (("CLUSTER", "KEYSLOT"), b"ERR wrong number of arguments for 'cluster|keyslot' command"),
    (("CLUSTER", "FORGET", FFF), b"ERR Unknown node " + FFF.encode()),
    (("CLUSTER", "COUNT-FAILURE-REPORTS", FFF), b"ERR Unknown node " + FFF.encode()),
    (("CLUSTER", "COUNT-FAILURE-REPORTS"), b"ERR wrong number of arguments for "
                                            b"'cluster|count-failure-reports' command"),
    (("CLUSTER", "REPLICAS", FFF), b"ERR Unknown node " + FFF.encode()),
    (("CLUSTER", "REPLICAS", "abc"), b"ERR Unknown node abc"),
    (("CLUSTER", "RESET", "BOGUS"), b"ERR syntax error"),
    (("CLUSTER", "RESET", "SOFT", "x"), b"ERR unknown subcommand or wrong number of arguments for 'RESET'. "
                                         b"Try CLUSTER HELP."),
    (("CLUSTER", "SET-CONFIG-EPOCH", "-1"), b"ERR Invalid config epoch specified: -1"),
    (("CLUSTER", "BOGUS"), b"ERR unknown subcommand 'BOGUS'. Try CLUSTER HELP."),
    (("CLUSTER", "INFO", "extra"), b"ERR wrong number of arguments for 'cluster|info' command"),
    (("CLUSTER", "MYID", "extra"), b"ERR wrong number of arguments for 'cluster|myid' command"),
    (("CLUSTER", "SLOT-STATS", "SLOTSRANGE", "0", "16384"), b"ERR Invalid or out of range slot"),
    (("CLUSTER", "SLOT-STATS", "SLOTSRANGE", "5", "1"), b"ERR Start slot number 5 is greater than end "
                                                         b"slot number 1"),
    (("CLUSTER", "SLOT-STATS", "SLOTSRANGE", "-1", "3"), b"ERR Invalid or out of range slot"),
    (("CLUSTER", "SLOT-STATS", "ORDERBY", "nosuch"), b"ERR Unrecognized sort metric for ORDERBY."),
    (("CLUSTER", "SLOT-STATS", "ORDERBY", "cpu-usec"), b"ERR Unrecognized sort metric for ORDERBY."),
    (("CLUSTER", "SLOT-STATS", "ORDERBY", "key-count", "LIMIT", "0"),
     b"ERR Limit has to lie in between 1 and 16384 (maximum number of slots)."),
    (("CLUSTER", "SLOT-STATS", "ORDERBY", "key-count", "LIMIT", "16385"),
     b"ERR Limit has to lie in between 1 and 16384 (maximum number of slots)."),
    (("CLUSTER", "SLOT-STATS", "ORDERBY", "key-count", "LIMIT", "x"),
     b"ERR Limit has to lie in between 1 and 16384 (maximum number of slots)."),
    (("CLUSTER", "SLOT-STATS", "ORDERBY", "key-count", "LIMIT", "1", "LIMIT", "2"),
     b"ERR Multiple filters of the same type are disallowed."),
    (("CLUSTER", "SLOT-STATS", "ORDERBY", "key-count", "ASC", "DESC"),
     b"ERR Multiple filters of the same type are disallowed."),
    (("CLUSTER", "SLOT-STATS", "ORDERBY", "key-count", "LIMIT"), b"ERR syntax error"),
    (("CLUSTER", "SLOT-STATS", "ORDERBY", "key-count", "bogus"), b"ERR syntax error"),
    (("CLUSTER", "SLOT-STATS", "SLOTSRANGE", "0"), b"ERR unknown subcommand or wrong number of arguments "
                                                    b"for 'SLOT-STATS'. Try CLUSTER HELP."),
    (("CLUSTER", "SLOT-STATS", "nosuch"), b"ERR wrong number of arguments for 'cluster|slot-stats' command"),
    (("SELECT", "1"), b"ERR DB index is out of range"),
    (("MOVE", "{t2}a", "1"), b"ERR DB index is out of range"),
    (("COPY", "{t2}a", "{t2}z", "DB", "1"), b"ERR DB index is out of range"),
    (("SWAPDB", "0", "1"), b"ERR SWAPDB is not allowed in cluster mode"),
    (("SWAPDB", "x", "y"), b"ERR SWAPDB is not allowed in cluster mode"),
    (("REPLICAOF", "127.0.0.1", "55259"), b"ERR REPLICAOF not allowed in cluster mode."),
    (("SLAVEOF", "NO", "ONE"), b"ERR REPLICAOF not allowed in cluster mode."),
    (("FAILOVER",), b"ERR FAILOVER not allowed in cluster mode. Use CLUSTER FAILOVER command instead."),
]


@pytest.mark.parametrize(("command", "error"), ERRORS, ids=[" ".join(c)[:60] for c, _ in ERRORS])
def test_errors(node, command, error):
    assert node.call(*command) == ("-", error)


def test_errors_that_name_this_node(node):
    me = node.call("CLUSTER", "MYID")[1]
    assert node.call("CLUSTER", "SETSLOT", "4748", "MIGRATING", me) == ("-", b"ERR Target node is myself")
    assert node.call("CLUSTER", "SETSLOT", "4748", "IMPORTING", me) == \
        ("-", b"ERR I'm already the owner of hash slot 4748")
    assert node.call("CLUSTER", "FORGET", me) == ("-", b"ERR I tried hard but I can't forget myself...")
    assert node.call("SET", "k", "v") == OK
    assert node.call("CLUSTER", "SETSLOT", "7629", "STABLE", "extra", "words") == OK
    assert node.call("CLUSTER", "SETSLOT", "7629", "NODE", me, "TIMEOUT", "10") == OK  # keys: to itself
    assert node.call("CLUSTER", "RESET") == \
        ("-", b"ERR CLUSTER RESET can't be called with master nodes containing keys")
    assert node.call("CLUSTER", "FLUSHSLOTS") == ("-", b"ERR DB must be empty to perform CLUSTER FLUSHSLOTS.")


# --- changing the slots ---------------------------------------------------------------------------


def test_slots_given_and_taken_back(lone, node, proto):
    me = node.call("CLUSTER", "MYID")[1].decode()
    assert node.call("CLUSTER", "DELSLOTSRANGE", "0", "20") == OK
    wait_for_state(node, b"fail")
    fields = info(node)
    assert (fields["cluster_slots_assigned"], fields["cluster_size"]) == ("16363", "1")
    assert node.call("GET", "{t2}x") == ("-", b"CLUSTERDOWN The cluster is down")
    # a script's undeclared key while the cluster is down
    assert node.call("EVAL", "return redis.call('get', '{t2}x')", "0") == \
        ("-", b"ERR Can not execute a command 'get' while the cluster is down script: on @user_script:1.")
    assert node.call("CLUSTER", "DELSLOTS", "5") == ("-", b"ERR Slot 5 is already unassigned")
    assert node.call("CLUSTER", "ADDSLOTS", "5", "5") == ("-", b"ERR Slot 5 specified multiple times")
    assert node.call("CLUSTER", "ADDSLOTSRANGE", "0", "10", "5", "20") == \
        ("-", b"ERR Slot 5 specified multiple times")
    assert node.call("CLUSTER", "ADDSLOTS", "3", "30") == ("-", b"ERR Slot 30 is already busy")
    assert node.call("CLUSTER", "SETSLOT", "8", "MIGRATING", me) == ("-", b"ERR I'm not the owner of hash slot 8")
    assert node.call("CLUSTER", "SETSLOT", "8", "IMPORTING", me) == ("-", b"ERR Target node is myself")
    assert node.call("CLUSTER", "SETSLOT", "7", "NODE", me) == OK
    assert node.call("CLUSTER", "ADDSLOTS", "9", "11") == OK
    assert myself_line(node).endswith(" connected 7 9 11 21-16383")
    assert node.call("CLUSTER", "SLOTS")[1][0][1][:2] == [(":", 7), (":", 7)]
    assert node.call("CLUSTER", "DELSLOTS", "7", "9") == OK
    assert node.call("CLUSTER", "ADDSLOTSRANGE", "0", "10", "12", "20") == OK
    wait_for_state(node, b"ok")
    assert myself_line(node).endswith(" connected 0-16383")


def test_flushslots_and_reset(lone, node, proto):
    me, shard = ids(node)
    assert node.call("CLUSTER", "FLUSHSLOTS") == OK
    fields = info(node)
    assert (fields["cluster_state"], fields["cluster_slots_assigned"], fields["cluster_size"]) == ("fail", "0", "0")
    assert node.call("CLUSTER", "ADDSLOTSRANGE", "0", "100") == OK
    assert node.call("CLUSTER", "RESET", "SOFT") == OK  # the slots go, the node id stays
    assert ids(node)[0] == me and ids(node)[1] != shard
    assert info(node)["cluster_slots_assigned"] == "0"
    assert node.call("CLUSTER", "RESET") == OK
    assert node.call("CLUSTER", "RESET", "HARD") == OK  # new ids, epochs back to 0
    new_me, _shard = ids(node)
    assert new_me != me
    assert (info(node)["cluster_current_epoch"], info(node)["cluster_my_epoch"]) == ("0", "0")
    assert text(node.call("CLUSTER", "NODES"), proto) == \
        b"%s :%d@%d myself,master - 0 0 0 connected\n" % (new_me, lone.port, lone.port + 10000)


def test_saveconfig_writes_nodes_conf(lone, node):
    me, shard = ids(node)
    epoch = info(node)["cluster_my_epoch"]
    current = info(node)["cluster_current_epoch"]
    assert node.call("CLUSTER", "SAVECONFIG") == OK
    with open(os.path.join(lone.dir, "nodes.conf"), "rb") as saved:
        assert saved.read() == (
            b"%s :%d@%d,,tls-port=0,shard-id=%s myself,master - 0 0 %s connected 0-16383\n"
            b"vars currentEpoch %s lastVoteEpoch 0\n"
            % (me, lone.port, lone.port + 10000, shard, epoch.encode(), current.encode()))


# --- connections -------------------------------------------------------------------------------


def test_readonly_readwrite_asking(node):
    assert node.call("READONLY") == OK
    assert b" flags=r " in node.call("CLIENT", "INFO")[1]
    assert node.call("READWRITE") == OK
    assert b" flags=N " in node.call("CLIENT", "INFO")[1]
    assert node.call("READONLY") == OK
    node.call("RESET")
    assert b" flags=N " in node.call("CLIENT", "INFO")[1]
    assert node.call("ASKING") == OK
    assert node.call("GET", "x") == ("$", None)


def test_help(node):
    kind, lines = node.call("CLUSTER", "HELP")
    assert kind == "*" and len(lines) == 66 and {k for k, _ in lines} == {"+"}
    assert lines[0][1] == b"CLUSTER <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
    assert lines[15][1] == (b"    <id> <ip:port@bus-port[,hostname]> <flags> <primary> <pings> <pongs> "
                            b"<epoch> <link> <slot> ...")
    assert lines[-3:] == [("+", b"    Get information about ongoing and recently finished slot imports and "
                                b"exports."), ("+", b"HELP"), ("+", b"    Print this help.")]


def test_a_slot_that_goes_away_ends_waits_and_shard_subscriptions(lone, node, proto):
    me = node.call("CLUSTER", "MYID")[1]
    slot = str(node.call("CLUSTER", "KEYSLOT", "{x}")[1])
    assert node.call("CONFIG", "RESETSTAT") == OK
    push = "*" if proto == 2 else ">"
    with lone.raw(proto) as subscriber, lone.raw(proto) as waiter, lone.raw(proto) as other:
        subscriber.send("SSUBSCRIBE", "{x}a", "{x}b")
        assert [subscriber.read()[0], subscriber.read()[0]] == [push, push]
        assert subscriber.call("SSUBSCRIBE", "{y}c")[1][2] == (":", 3)
        waiter.send("BLPOP", "{x}list", "0")
        other.send("BLPOP", "{y}list", "0")
        wait_blocked(node, 2)
        # given again, even to the node that had it: its shard channels are dropped
        assert node.call("CLUSTER", "SETSLOT", slot, "NODE", me) == OK
        first, second = subscriber.read(), subscriber.read()  # in the server's hash order
        assert {first[1][1][1], second[1][1][1]} == {b"{x}a", b"{x}b"}
        assert first == (push, [("$", b"sunsubscribe"), first[1][1], (":", 2)])
        assert second == (push, [("$", b"sunsubscribe"), second[1][1], (":", 1)])
        assert read_within(waiter, 0.3) == "nothing"
        # unassigned: the cluster is down, and every wait on keys ends with it
        assert node.call("CLUSTER", "DELSLOTS", slot) == OK
        down = ("-", b"CLUSTERDOWN The cluster is down")
        assert read_within(waiter, 3) == down
        assert read_within(other, 3) == down
        assert node.call("CLUSTER", "ADDSLOTS", slot) == OK
        assert read_within(subscriber, 0.2) == "nothing"
        assert waiter.call("PING") == ("+", b"PONG")
        pong = ("*", [("$", b"pong"), ("$", b"")]) if proto == 2 else ("+", b"PONG")
        assert subscriber.call("PING") == pong  # still subscribed to {y}c
    stats = node.call("INFO", "commandstats")[1]
    assert re.search(rb"cmdstat_blpop:calls=2,usec=\d+,usec_per_call=[\d.]+,rejected_calls=2,failed_calls=0",
                     stats)
