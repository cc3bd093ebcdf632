"""CLUSTERSCAN (Valkey 9.1), on fakekey's cluster and on a real Valkey cluster (3 primaries,
a replica each), RESP2 and RESP3: a walk from cursor 0, following the cursors and the MOVED
redirects, meets every key once; each node walks its run of slots and hands over with the
next slot's tag; MATCH, TYPE, SLOT and COUNT; the errors, with Valkey's texts.

Cursors are `0`, `0-{tag}-0` (a fresh start at the tag's slot) or `<fingerprint>-{tag}-<local>`;
a fingerprint and a local cursor are each server's own (they follow its hash table), so only
their form is compared, and where the walk goes."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from fnmatch import fnmatchcase
from typing import Any

import pytest

from fakekey.commands.cluster import slot_tags
from fakekey.core.cluster import key_slot
from fakekey.testing.clusters import cluster_for_tests, cluster_targets
from fakekey.testing.raw import RawClient
from fakekey.testing.targets import find_valkey_binary

TARGETS = cluster_targets()
TAG = rb"\{[0-9A-Za-z]{1,3}\}"
CURSOR = re.compile(rb"0|0-" + TAG + rb"-0|[0-o]{6}-" + TAG + rb"-[0-9]+")  # fingerprint: '0' + 6 bits
FIRST, SECOND, THIRD = b"0-{06S}-0", b"0-{8M}-0", b"0-{63n}-0"  # slots 0, 5461, 10923: each primary's first
Address = tuple[str, int]


@pytest.fixture(scope="module", params=TARGETS)
def cluster(request: pytest.FixtureRequest) -> Iterator[Any]:
    with cluster_for_tests(request.param) as started:
        yield started


class Nodes:
    """The cluster's primaries, in slot order, and a raw client on any node."""

    def __init__(self, cluster: Any, proto: int) -> None:
        self.cluster = cluster
        self.proto = proto
        self.primaries: list[Address] = [(n.host, n.port) for n in cluster.primaries]
        self.clients: dict[Address, RawClient] = {}

    def client(self, address: Address) -> RawClient:
        if address not in self.clients:
            client = self.clients[address] = RawClient(*address)
            if self.proto == 3:
                client.call("HELLO", "3")
        return self.clients[address]

    def serving(self, slot: int) -> Address:
        return self.primaries[0 if slot <= 5460 else 1 if slot <= 10922 else 2]

    def scan(self, address: Address, *args: Any) -> tuple[str, Any]:
        return self.client(address).call("CLUSTERSCAN", *args)

    def put(self, keys: list[bytes]) -> None:
        """SET each key on the node serving it."""
        for address in self.primaries:
            mine = [k for k in keys if self.serving(key_slot(k)) == address]
            if mine:
                replies = self.client(address).pipeline(*[("SET", k, "v") for k in mine])
                assert all(reply == ("+", b"OK") for reply in replies), replies

    def close(self) -> None:
        for client in self.clients.values():
            client.close()


@pytest.fixture
def nodes(cluster: Any, proto: int) -> Iterator[Nodes]:
    """The cluster, emptied, and clients speaking `proto`."""
    out = Nodes(cluster, proto)
    for address in out.primaries:
        assert out.client(address).call("FLUSHALL") == ("+", b"OK")
    yield out
    out.close()


def page(reply: tuple[str, Any]) -> tuple[bytes, list[bytes]]:
    """A CLUSTERSCAN reply: the next cursor (of Valkey's form) and the keys."""
    assert reply[0] == "*" and len(reply[1]) == 2, reply
    (cursor_type, cursor), (keys_type, keys) = reply[1]
    assert cursor_type == "$" and keys_type == "*", reply
    assert CURSOR.fullmatch(cursor), cursor
    assert all(kind == "$" for kind, _ in keys), keys
    return cursor, [key for _, key in keys]


def moved(slot: int, address: Address) -> tuple[str, bytes]:
    return ("-", b"MOVED %d %s:%d" % (slot, address[0].encode(), address[1]))


def walk(nodes: Nodes, *options: Any, cursor: bytes = b"0", at: Address | None = None,
         limit: int = 5000) -> tuple[list[bytes], list[bytes]]:
    """Follow a walk from `cursor` to "0": each cursor asked of the node that answered last
    (first `at`, else the first primary), a MOVED followed. The keys met, and the cursors."""
    address = at or nodes.primaries[0]
    keys: list[bytes] = []
    cursors = [cursor]
    for _ in range(limit):
        reply = nodes.scan(address, cursor, *options)
        if reply[0] == "-":
            found = re.fullmatch(rb"MOVED (\d+) ([0-9.]+):(\d+)", reply[1])
            assert found is not None and int(found[1]) == key_slot(cursor), reply
            address = (found[2].decode(), int(found[3]))
            continue
        cursor, met = page(reply)
        keys += met
        cursors.append(cursor)
        if cursor == b"0":
            return keys, cursors
    raise AssertionError(f"no end after {limit} calls")


def spread_keys(count: int) -> list[bytes]:
    return [b"key:%d" % i for i in range(count)]


def tagged(tag: bytes, count: int) -> list[bytes]:
    return [b"{%s}:%d" % (tag, i) for i in range(count)]


# --- walks --------------------------------------------------------------------------------------


def test_a_walk_from_cursor_0_meets_every_key_once(nodes):
    keys = spread_keys(240) + tagged(b"06S", 30) + tagged(b"6ZJ", 3)
    nodes.put(keys)
    met, cursors = walk(nodes, "COUNT", 7)
    assert Counter(met) == Counter(keys)
    assert cursors[1] == FIRST  # cursor 0 (on 13907's node, after a MOVED) only says where to begin
    handovers = [c for c in cursors[1:] if c.startswith(b"0-")]
    assert handovers == [FIRST, SECOND, THIRD]
    slots = [key_slot(c) for c in cursors[1:-1]]
    assert slots == sorted(slots)  # slot order, node after node


def test_a_key_present_throughout_a_walk_is_met(nodes):
    stable = tagged(b"06S", 150) + spread_keys(60)
    nodes.put(stable)
    first = nodes.primaries[0]
    cursor, met = page(nodes.scan(first, FIRST, "COUNT", 5))
    seen = set(met)
    for i in range(400):
        if cursor == b"0":
            break
        if i < 30:  # keys come and go in the slot being walked
            nodes.put([b"{06S}:new:%d" % i])
            assert nodes.client(first).call("DEL", b"{06S}:new:%d" % (i // 2)) in ((":", 0), (":", 1))
        address = nodes.serving(key_slot(cursor))
        cursor, met = page(nodes.scan(address, cursor, "COUNT", 5))
        seen.update(met)
    assert cursor == b"0"
    assert set(stable) <= seen


def test_cursor_0_says_where_the_walk_begins(nodes, proto):
    nodes.put(tagged(b"06S", 5))
    start = nodes.serving(key_slot(b"0"))
    other = nodes.primaries[0]
    assert nodes.scan(other, "0") == moved(13907, start)
    cases = {
        (): FIRST, ("COUNT", 1): FIRST, ("TYPE", "string"): FIRST, ("MATCH", "k*"): FIRST,
        ("SLOT", 5): b"0-{460}-0", ("SLOT", 13907): b"0-{0}-0", ("COUNT", 1, "SLOT", 16383): b"0-{6ZJ}-0",
        ("MATCH", "{5L5}-*"): b"0-{5L5}-0", ("MATCH", "k1"): b"0-{k1}-0", ("MATCH", ""): FIRST,
        ("SLOT", 1, "MATCH", "{Qi}-*"): b"0-{Qi}-0", ("SLOT", 0, "MATCH", "{Qi}-*"): b"0",
        ("MATCH", "{06S}*", "MATCH", "{Qi}*"): b"0-{Qi}-0",
    }
    for options, expected in cases.items():
        assert page(nodes.scan(start, "0", *options)) == (expected, []), options


def test_each_node_walks_its_run_of_slots_then_hands_over(nodes, proto):
    p0, p1, p2 = nodes.primaries
    assert page(nodes.scan(p0, FIRST)) == (SECOND, [])
    assert page(nodes.scan(p1, SECOND)) == (THIRD, [])
    assert page(nodes.scan(p2, THIRD)) == (b"0", [])
    assert nodes.scan(p1, FIRST) == moved(0, p0)
    assert page(nodes.scan(p1, b"0-06S-0")) == (SECOND, [])  # the slot of what is between the dashes
    nodes.put([b"{4ZG}:key", b"{0or}:key"])  # slots 50 and 100
    cursor, keys = page(nodes.scan(p0, b"0-{4ZG}-0"))
    assert (cursor, sorted(keys)) == (SECOND, [b"{0or}:key", b"{4ZG}:key"])
    cursor, keys = page(nodes.scan(p0, b"0-{4ZG}-0", "COUNT", 1))
    assert keys == [b"{4ZG}:key"]
    assert re.fullmatch(rb"[0-o]{6}-\{0or\}-100", cursor)  # the next slot with keys, from its start
    assert page(nodes.scan(p0, cursor)) == (SECOND, [b"{0or}:key"])
    assert page(nodes.scan(p0, b"Xx-{4ZG}-100", "COUNT", 1))[1] == [b"{4ZG}:key"]  # not its fingerprint


@pytest.fixture(params=TARGETS)
def resharded(request: pytest.FixtureRequest) -> Iterator[Nodes]:
    """A cluster of its own (3 primaries: Valkey's gossip may undo a slot moved back and
    forth at once), its slot 51 moved to the second primary."""
    with cluster_for_tests(request.param, 3, 0) as started:
        out = Nodes(started, 2)
        try:
            p0, p1, _ = out.primaries
            ids = [out.client(p).call("CLUSTER", "MYID")[1] for p in (p0, p1)]
            move_slot(out, 51, (p0, ids[0]), (p1, ids[1]))
            yield out
        finally:
            out.close()


def test_the_walk_ends_where_the_owner_changes(resharded):
    nodes = resharded
    p0, p1, _ = nodes.primaries
    nodes.put([b"{4ZG}:key"])  # slot 50
    assert page(nodes.scan(p0, b"0-{4ZG}-0")) == (b"0-{6od}-0", [b"{4ZG}:key"])  # 51 is the second's
    assert page(nodes.scan(p1, b"0-{6od}-0")) == (b"0-{6AH}-0", [])  # back to the first at 52
    assert nodes.scan(p0, b"0-{6od}-0") == moved(51, p1)


def move_slot(nodes: Nodes, slot: int, source: tuple[Address, bytes], target: tuple[Address, bytes]) -> None:
    """Move an empty slot as a reshard does: IMPORTING, MIGRATING, then NODE on both."""
    (src, src_id), (dst, dst_id) = source, target
    ok = ("+", b"OK")
    assert nodes.client(dst).call("CLUSTER", "SETSLOT", slot, "IMPORTING", src_id) == ok
    assert nodes.client(src).call("CLUSTER", "SETSLOT", slot, "MIGRATING", dst_id) == ok
    assert nodes.client(src).call("CLUSTER", "SETSLOT", slot, "NODE", dst_id) == ok
    assert nodes.client(dst).call("CLUSTER", "SETSLOT", slot, "NODE", dst_id) == ok


# --- options ------------------------------------------------------------------------------------


def test_slot_keeps_the_walk_to_one_slot(nodes, proto):
    slot0, slot1 = tagged(b"06S", 40), tagged(b"Qi", 5)
    nodes.put(slot0 + slot1 + spread_keys(20))
    met, cursors = walk(nodes, "SLOT", 0, "COUNT", 3, cursor=FIRST)
    assert Counter(met) == Counter(slot0)
    assert len(cursors) > 3  # COUNT 3: several calls
    assert all(key_slot(c) == 0 for c in cursors[:-1]) and cursors[-1] == b"0"
    cursor, keys = page(nodes.scan(nodes.primaries[0], b"0-{Qi}-0", "SLOT", 1))
    assert (cursor, sorted(keys)) == (b"0", sorted(slot1))
    assert page(nodes.scan(nodes.primaries[0], b"0-{5L5}-0", "SLOT", 2)) == (b"0", [])


def test_match_of_one_slot_walks_only_that_slot(nodes, proto):
    slot0, slot1 = tagged(b"06S", 12), tagged(b"Qi", 5)
    nodes.put(slot0 + slot1 + spread_keys(30))
    p0 = nodes.primaries[0]
    assert page(nodes.scan(p0, FIRST, "MATCH", "{Qi}*")) == (b"0-{Qi}-0", [])  # a jump to it
    assert page(nodes.scan(p0, FIRST, "MATCH", "{6ZJ}*")) == (b"0-{6ZJ}-0", [])
    assert page(nodes.scan(p0, FIRST, "MATCH", "{Qi")) == (b"0-{5ps}-0", [])  # no wildcard: its own slot
    cursor, keys = page(nodes.scan(p0, b"0-{Qi}-0", "MATCH", "{Qi}*"))
    assert (cursor, sorted(keys)) == (b"0", sorted(slot1))
    assert page(nodes.scan(p0, b"0-{Qi}-0", "MATCH", "{06S}*")) == (b"0", [])  # behind: the end
    assert page(nodes.scan(p0, FIRST, "SLOT", 0, "MATCH", "{Qi}*")) == (b"0", [])
    met, _ = walk(nodes, "MATCH", "{06S}*", "COUNT", 2)
    assert Counter(met) == Counter(slot0)


def test_match_filters_the_keys_met(nodes, proto):
    keys = spread_keys(120) + tagged(b"06S", 12)
    nodes.put(keys)
    for pattern in ("*1*", "key:?", "{06S}:1[0-9]", "nothing*"):
        met, _ = walk(nodes, "MATCH", pattern, "COUNT", 20)
        assert Counter(met) == Counter(k for k in keys if fnmatchcase(k.decode(), pattern)), pattern


def test_type_keeps_the_keys_of_one_type(nodes, proto):
    p0 = nodes.primaries[0]
    nodes.put(tagged(b"06S", 10) + [b"{Qi}:s"])
    client = nodes.client(p0)
    assert client.call("RPUSH", "{06S}list", "a") == (":", 1)
    assert client.call("HSET", "{06S}hash", "f", "v") == (":", 1)
    assert client.call("SADD", "{Qi}set", "m") == (":", 1)
    assert page(nodes.scan(p0, FIRST, "TYPE", "list", "COUNT", 1000)) == (SECOND, [b"{06S}list"])
    assert page(nodes.scan(p0, FIRST, "TYPE", "HASH", "COUNT", 1000)) == (SECOND, [b"{06S}hash"])
    assert page(nodes.scan(p0, FIRST, "TYPE", "set", "COUNT", 1000)) == (SECOND, [b"{Qi}set"])
    cursor, strings = page(nodes.scan(p0, FIRST, "TYPE", "string", "COUNT", 1000))
    assert (cursor, sorted(strings)) == (SECOND, sorted(tagged(b"06S", 10) + [b"{Qi}:s"]))


def test_count_is_the_keys_a_call_visits(nodes, proto):
    slot0 = tagged(b"06S", 40)
    nodes.put(slot0 + tagged(b"Qi", 3))
    p0 = nodes.primaries[0]
    cursor, keys = page(nodes.scan(p0, FIRST, "COUNT", 1))
    assert 1 <= len(keys) < 40 and set(keys) <= set(slot0)
    assert key_slot(cursor) == 0 and not cursor.startswith(b"0-")  # within slot 0, on this node
    cursor, keys = page(nodes.scan(p0, FIRST, "COUNT", 1000))
    assert (cursor, Counter(keys)) == (SECOND, Counter(slot0 + tagged(b"Qi", 3)))


def test_a_replica_walks_after_readonly(nodes, proto):
    p0 = nodes.primaries[0]
    slot0 = tagged(b"06S", 20)
    nodes.put(slot0)
    assert nodes.client(p0).call("WAIT", 1, 2000) == (":", 1)
    primary_id = nodes.client(p0).call("CLUSTER", "MYID")[1]
    line = nodes.client(p0).call("CLUSTER", "REPLICAS", primary_id)[1][0][1]
    host, port = line.split()[1].split(b"@")[0].rsplit(b":", 1)
    replica = (host.decode(), int(port))
    assert nodes.scan(replica, FIRST) == moved(0, p0)
    cursor, keys = page(nodes.scan(p0, FIRST, "COUNT", 5))
    assert nodes.client(replica).call("READONLY") == ("+", b"OK")
    seen = set(keys)
    for _ in range(100):  # the primary's cursor on its replica: at worst the slot again
        cursor, keys = page(nodes.scan(replica, cursor, "COUNT", 5))
        seen.update(keys)
        if cursor == SECOND:
            break
    assert (cursor, seen) == (SECOND, set(slot0))


# --- errors -------------------------------------------------------------------------------------

ERRORS = {
    ("COUNT", 0): b"ERR syntax error",
    ("COUNT", -1): b"ERR syntax error",
    ("COUNT", "abc"): b"ERR value is not an integer or out of range",
    ("COUNT",): b"ERR syntax error",
    ("MATCH",): b"ERR syntax error",
    ("BOGUS",): b"ERR syntax error",
    ("TYPE", "notatype"): b"ERR unknown type name 'notatype'",
    ("TYPE", "none"): b"ERR unknown type name 'none'",
    ("NOVALUES",): b"ERR NOVALUES option can only be used in HSCAN",
    ("NOSCORES",): b"ERR NOSCORES option can only be used in ZSCAN",
    ("SLOT", 16384): b"ERR Invalid or out of range slot",
    ("SLOT", -1): b"ERR Invalid or out of range slot",
    ("SLOT", "00"): b"ERR Invalid or out of range slot",
    ("SLOT", "abc"): b"ERR Invalid or out of range slot",
    ("SLOT",): b"ERR syntax error",
    ("SLOT", 0, "SLOT", 0): b"ERR SLOT option can only be specified once",
    ("SLOT", 0, "SLOT", 20000): b"ERR SLOT option can only be specified once",
    ("SLOT", 20000, "SLOT", 1): b"ERR Invalid or out of range slot",
    ("SLOT", 1): b"ERR Cursor slot mismatch with SLOT argument",
    ("SLOT", 1, "COUNT", 0): b"ERR syntax error",  # options first, in their order
    ("TYPE", "zz", "COUNT", 0): b"ERR unknown type name 'zz'",
}
BAD_CURSORS = ["invalid", "abc-def-ghi", "0-", "0-{06S}", "0-{06S}-", "0-{06S}-abc", "0-{06S}--1",
               "0-{06S}-0-0", "0-{06S}-18446744073709551616", "0-{06S}-0 ", "0-{a-b}-0", "--", "1", "00", "-1"]


def test_the_errors(nodes, proto):
    p0 = nodes.primaries[0]
    for options, text in ERRORS.items():
        assert nodes.scan(p0, FIRST, *options) == ("-", text), options
    for cursor in BAD_CURSORS:
        assert nodes.scan(nodes.serving(key_slot(cursor.encode())), cursor) == ("-", b"ERR Invalid cursor"), cursor
    assert nodes.scan(p0, "0-{06S}-x", "COUNT", 0) == ("-", b"ERR syntax error")  # before the cursor
    assert nodes.scan(p0, "0-{06S}-x", "SLOT", 1) == ("-", b"ERR Invalid cursor")  # before the mismatch


def test_cursors_valkey_takes(nodes, proto):
    """strtoull's local cursor, the tag's hash slot rules, any fingerprint."""
    nodes.put(tagged(b"06S", 3) + tagged(b"Qi", 2))
    p0 = nodes.primaries[0]
    fresh = sorted(page(nodes.scan(p0, FIRST, "COUNT", 1000))[1])
    for cursor in ("x-{06S}-0", "-{06S}-0", "0-{06S}- 0", "0-{06S}-+5", "0-{06S}-007", "0-x{06S}-0",
                   "0-{06S}}-0", "0-{06S}-18446744073709551615", "0-{06S}-0\x00x"):
        assert sorted(page(nodes.scan(p0, cursor, "COUNT", 1000))[1]) == fresh, cursor
    assert sorted(page(nodes.scan(p0, "0-{Qi}x-0", "COUNT", 1000))[1]) == sorted(tagged(b"Qi", 2))
    assert page(nodes.scan(nodes.serving(key_slot(b"0-{}-0")), "0-{}-0")) == (b"0", [])  # slot of "{}": 15257


def test_clusterscan_needs_cluster_mode_before_all(r):
    for args in (("0", "COUNT", 0), ("bad",), ("0", "SLOT", 99999)):
        assert r.call("CLUSTERSCAN", *args) == ("-", b"ERR This instance has cluster support disabled")


# --- the slot tags ------------------------------------------------------------------------------


def test_the_slot_tags_are_valkeys(nodes):
    start = nodes.serving(key_slot(b"0"))
    sample = sorted({*range(0, 16384, 61), 16383, 13907, 5461, 10923})
    replies = nodes.client(start).pipeline(*[("CLUSTERSCAN", "0", "SLOT", s) for s in sample])
    tags = slot_tags()
    assert [page(reply)[0] for reply in replies] == [b"0-{%s}-0" % tags[s] for s in sample]


def test_the_tag_table_is_the_one_in_valkeys_binary():
    binary = find_valkey_binary()
    if binary is None:
        pytest.skip("no valkey-server binary")
    with open(binary, "rb") as f:
        data = f.read()
    at = data.find(b"06S\0Qi\0\0005L5\0")  # crc16_slot_table: 16384 entries of 4 bytes
    assert at >= 0
    table = tuple(data[at + 4 * s:at + 4 * s + 4].rstrip(b"\0") for s in range(16384))
    assert slot_tags() == table
    assert all(key_slot(tag) == slot for slot, tag in enumerate(table))
