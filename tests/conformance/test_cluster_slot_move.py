"""A slot moved by hand (CLUSTER SETSLOT IMPORTING / MIGRATING / NODE) between the two
primaries of fakekey's cluster (fakekey.Cluster) and of a real Valkey cluster, each
primary with a replica, RESP2 and RESP3: the open slots in CLUSTER NODES, the epoch the
importing node takes, the blocked client and the shard subscriber the slot leaves behind,
and what the cluster then says (SLOTS, REPLICAS). Node ids and ports are the cluster's."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from fakekey.core.cluster import key_slot
from fakekey.testing.raw import RawClient, read_within, wait_blocked
from fakekey.testing.targets import find_valkey_binary

TARGETS = [t.strip() for t in os.environ.get("FAKEKEY_TARGETS", "fakekey,valkey").split(",")
           if t.strip() in ("fakekey", "valkey")]
OK = ("+", b"OK")


class Node:
    def __init__(self, host: str, port: int, node_id: str) -> None:
        self.host, self.port, self.id = host, port, node_id.encode()

    @property
    def address(self) -> bytes:
        return b"%s:%d" % (self.host.encode(), self.port)

    def raw(self, proto: int) -> RawClient:
        client = RawClient(self.host, self.port)
        if proto == 3:
            assert client.call("HELLO", "3")[0] == "%"
        return client


@pytest.fixture(scope="module", params=TARGETS)
def nodes(request: pytest.FixtureRequest) -> Iterator[list[Node]]:
    """[P0, P1, R0, R1]: P0 serves 0-8191, P1 8192-16383, Rk replicates Pk."""
    if request.param == "fakekey":
        from fakekey.net.cluster import Cluster

        with Cluster(primaries=2, replicas=1) as cluster:
            yield [Node(n.host, n.port, n.node_id) for n in cluster.nodes]
        return
    if find_valkey_binary() is None:
        if os.environ.get("CI"):
            pytest.fail("no valkey-server binary")
        pytest.skip("no valkey-server binary")
    from fakekey.testing.valkey_cluster import ValkeyCluster

    with ValkeyCluster(primaries=2, replicas=1) as cluster:
        yield [Node(n.host, n.port, n.node_id) for n in cluster.nodes]


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def proto(request: pytest.FixtureRequest) -> int:
    return int(request.param)


def tag_in_first_half(salt: str) -> str:
    """A hash tag whose slot P0 serves, one per test run (slots moved stay moved)."""
    for i in range(10_000):
        tag = f"{salt}{i}"
        if 100 < key_slot(tag.encode()) < 8000:
            return tag
    raise AssertionError("no tag")


def myself_line(client: RawClient) -> bytes:
    text = client.call("CLUSTER", "NODES")[1].removeprefix(b"txt:")
    return next(line for line in text.split(b"\n") if b"myself" in line)


def info(client: RawClient) -> dict[str, str]:
    text = client.call("CLUSTER", "INFO")[1].removeprefix(b"txt:").decode()
    return dict(line.split(":", 1) for line in text.splitlines())


def served(line: bytes) -> set[int]:
    """The slots a CLUSTER NODES line lists."""
    slots: set[int] = set()
    for field in line.split(b" ")[8:]:
        if field[:1].isdigit():
            first, _, last = field.partition(b"-")
            slots.update(range(int(first), int(last or first) + 1))
    return slots


def test_a_slot_moved_by_hand(nodes, proto):
    p0, p1, r0, r1 = nodes
    tag = tag_in_first_half(f"move{proto}-")
    slot = key_slot(tag.encode())
    key = "{%s}" % tag
    push = "*" if proto == 2 else ">"
    with p0.raw(proto) as source, p1.raw(proto) as target, p0.raw(proto) as subscriber, \
            p0.raw(proto) as waiter, r0.raw(proto) as replica:
        assert source.call("SET", key + "a", "1") == OK
        assert subscriber.call("SSUBSCRIBE", key + "ch")[0] == push
        waiter.send("BLPOP", key + "list", "0")
        wait_blocked(source, 1)
        fields = info(target)
        mine, current = int(fields["cluster_my_epoch"]), int(fields["cluster_current_epoch"])

        assert target.call("CLUSTER", "SETSLOT", slot, "IMPORTING", p0.id) == OK
        assert source.call("CLUSTER", "SETSLOT", slot, "MIGRATING", p1.id) == OK
        assert myself_line(source).endswith(b"-8191 [%d->-%s]" % (slot, p1.id))
        assert myself_line(target).endswith(b" 8192-16383 [%d-<-%s]" % (slot, p0.id))
        assert slot in served(myself_line(source)) and slot not in served(myself_line(target))
        assert replica.call("CLUSTER", "SETSLOT", slot, "STABLE") == \
            ("-", b"ERR Please use SETSLOT only with masters.")
        assert replica.call("CLUSTER", "FORGET", p0.id) == ("-", b"ERR Can't forget my master!")

        ask = ("-", b"ASK %d %s" % (slot, p1.address))
        assert source.call("GET", key + "a") == ("$", b"1")
        assert source.call("GET", key + "b") == ask
        assert source.call("MGET", key + "a", key + "b") == \
            ("-", b"TRYAGAIN Multiple keys request during rehashing of slot")
        assert target.call("GET", key + "b") == ("-", b"MOVED %d %s" % (slot, p0.address))
        assert target.call("ASKING") == OK
        assert target.call("SET", key + "b", "2") == OK
        assert target.call("CLUSTER", "COUNTKEYSINSLOT", slot) == (":", 1)

        assert source.call("CLUSTER", "SETSLOT", slot, "NODE", p1.id) == ("-", (
            b"ERR Can't assign hashslot %d to a different node while I still hold keys for this "
            b"hash slot." % slot))
        assert source.call("DEL", key + "a") == (":", 1)
        assert read_within(waiter, 0.2) == "nothing"  # its slot is still served here
        assert target.call("CLUSTER", "SETSLOT", slot, "NODE", p1.id) == OK
        assert source.call("CLUSTER", "SETSLOT", slot, "NODE", p1.id) == OK

        # the importing node took a new config epoch, unless it had the greatest already;
        # neither node says the slot is open
        fields = info(target)
        bumped = current if mine == current else current + 1
        assert int(fields["cluster_my_epoch"]) == int(fields["cluster_current_epoch"]) == bumped
        assert myself_line(target).endswith(b" 8192-16383")
        assert slot in served(myself_line(target)) and slot not in served(myself_line(source))
        assert b"[" not in myself_line(source) + myself_line(target)
        moved = ("-", b"MOVED %d %s" % (slot, p1.address))
        assert read_within(waiter, 3) == moved
        assert read_within(subscriber, 3) == (push, [("$", b"sunsubscribe"), ("$", (key + "ch").encode()),
                                                     (":", 0)])
        assert waiter.call("PING") == ("+", b"PONG")
        assert source.call("GET", key + "b") == moved
        assert target.call("GET", key + "b") == ("$", b"2")

        kind, ranges = source.call("CLUSTER", "SLOTS")
        table = [(r[1][0][1], r[1][1][1], r[1][2][1][2][1], r[1][3][1][2][1]) for r in ranges]
        at = table.index((slot, slot, p1.id, r1.id))  # primary then replica, ranges in slot order
        assert table[at - 1][1:] == (slot - 1, p0.id, r0.id) and table[at + 1][0] == slot + 1
        assert table[0][:1] == (0,) and table[-1] == (8192, 16383, p1.id, r1.id)
        kind, lines = source.call("CLUSTER", "REPLICAS", p1.id)
        assert kind == "*" and len(lines) == 1
        fields = lines[0][1].split(b" ")
        assert fields[0] == r1.id and fields[2:4] == [b"slave", p1.id]
        assert source.call("CLUSTER", "REPLICAS", r1.id) == ("-", b"ERR The specified node is not a master")
        assert len(source.call("CLUSTER", "LINKS")[1]) == 6  # a link each way with each other node
