"""Cluster mode's routing, on fakekey's cluster (fakekey.Cluster) and on a real Valkey
cluster (fakekey.testing.valkey_cluster), RESP2 and RESP3: a command goes to the node that
serves its keys' slot, or is answered MOVED, CROSSSLOT... with Valkey's texts."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from fakekey.core.cluster import key_slot
from fakekey.testing.raw import RawClient
from fakekey.testing.targets import find_valkey_binary

TARGETS = [t.strip() for t in os.environ.get("FAKEKEY_TARGETS", "fakekey,valkey").split(",")
           if t.strip() in ("fakekey", "valkey")]


class Nodes:
    """The primaries of either cluster: (host, port) in slot order, and who serves a slot."""

    def __init__(self, cluster: Any, kind: str) -> None:
        self.cluster = cluster
        self.kind = kind
        self.primaries = [(n.host, n.port) for n in cluster.primaries]

    def serving(self, slot: int) -> tuple[str, int]:
        bounds = [5460, 10922, 16383]
        return self.primaries[next(i for i, last in enumerate(bounds) if slot <= last)]

    def other_than(self, slot: int) -> tuple[str, int]:
        owner = self.serving(slot)
        return next(p for p in self.primaries if p != owner)


@pytest.fixture(scope="module", params=TARGETS)
def nodes(request: pytest.FixtureRequest) -> Iterator[Nodes]:
    if request.param == "fakekey":
        from fakekey.net.cluster import Cluster

        with Cluster(primaries=3) as cluster:
            yield Nodes(cluster, "fakekey")
        return
    if find_valkey_binary() is None:
        if os.environ.get("CI"):
            pytest.fail("no valkey-server binary")
        pytest.skip("no valkey-server binary")
    from fakekey.testing.valkey_cluster import ValkeyCluster

    with ValkeyCluster(primaries=3, replicas=0) as cluster:
        yield Nodes(cluster, "valkey")


@pytest.fixture(params=[2, 3])
def proto(request: pytest.FixtureRequest) -> int:
    return int(request.param)


def raw(address: tuple[str, int], proto: int) -> RawClient:
    client = RawClient(*address)
    if proto == 3:
        client.call("HELLO", "3")
    return client


def moved(slot: int, address: tuple[str, int]) -> tuple[str, bytes]:
    return ("-", b"MOVED %d %s:%d" % (slot, address[0].encode(), address[1]))


def test_a_key_is_served_where_its_slot_is_and_moved_elsewhere(nodes, proto):
    slot = key_slot(b"user:1")
    with raw(nodes.serving(slot), proto) as owner, raw(nodes.other_than(slot), proto) as other:
        assert owner.call("SET", "user:1", "v") == ("+", b"OK")
        assert owner.call("GET", "user:1") == ("$", b"v")
        assert other.call("GET", "user:1") == moved(slot, nodes.serving(slot))
        assert other.call("SET", "user:1", "w") == moved(slot, nodes.serving(slot))
        assert owner.call("GET", "user:1") == ("$", b"v")  # the refused SET wrote nothing


def test_hash_tags_keep_keys_together_and_other_slots_are_crossslot(nodes, proto):
    slot = key_slot(b"{acct}")
    with raw(nodes.serving(slot), proto) as owner:
        assert owner.call("MSET", "{acct}:a", "1", "{acct}:b", "2") == ("+", b"OK")
        assert owner.call("MGET", "{acct}:a", "{acct}:b")[1] == [("$", b"1"), ("$", b"2")]
        crossslot = ("-", b"CROSSSLOT Keys in request don't hash to the same slot")
        assert owner.call("MGET", "{acct}:a", "other") == crossslot
        assert owner.call("DEL", "{acct}:a", "{acct}:b") == (":", 2)


def test_keyless_commands_run_on_any_node(nodes, proto):
    for address in nodes.primaries:
        with raw(address, proto) as client:
            assert client.call("PING") == ("+", b"PONG")
            assert client.call("EVAL", "return 1", "0") == (":", 1)
            assert client.call("CLUSTER", "KEYSLOT", "{acct}:x") == (":", key_slot(b"acct"))


def test_a_transaction_is_refused_whole_when_its_keys_are_elsewhere(nodes, proto):
    slot = key_slot(b"tx:1")
    with raw(nodes.other_than(slot), proto) as other, raw(nodes.serving(slot), proto) as owner:
        assert other.call("MULTI") == ("+", b"OK")
        assert other.call("SET", "tx:1", "v") == moved(slot, nodes.serving(slot))
        assert other.call("EXEC") == (
            "-", b"EXECABORT Transaction discarded because of previous errors.")
        # queued keys of two slots of one node: CROSSSLOT at EXEC, the queue discarded
        a, b = _two_keys_of_one_node(nodes, nodes.serving(slot))
        assert owner.call("MULTI") == ("+", b"OK")
        assert owner.call("SET", a, "1") == ("+", b"QUEUED")
        assert owner.call("SET", b, "2") == ("+", b"QUEUED")
        assert owner.call("EXEC") == ("-", b"CROSSSLOT Keys in request don't hash to the same slot")
        assert owner.call("EXISTS", a) == (":", 0)
        assert owner.call("EXEC") == ("-", b"ERR EXEC without MULTI")


def test_scripts_are_routed_by_their_declared_keys(nodes, proto):
    slot = key_slot(b"script:k")
    with raw(nodes.other_than(slot), proto) as other, raw(nodes.serving(slot), proto) as owner:
        assert other.call("EVAL", "return redis.call('SET', KEYS[1], 'x')", "1", "script:k") == \
            moved(slot, nodes.serving(slot))
        assert owner.call("EVAL", "return redis.call('SET', KEYS[1], 'x')", "1", "script:k") == \
            ("+", b"OK")
        assert owner.call("DEL", "script:k") == (":", 1)


def test_select_past_the_cluster_databases_and_swapdb(nodes, proto):
    with raw(nodes.primaries[0], proto) as client:
        assert client.call("SELECT", "0") == ("+", b"OK")
        assert client.call("SELECT", "1") == ("-", b"ERR DB index is out of range")


def _two_keys_of_one_node(nodes: Nodes, address: tuple[str, int]) -> tuple[str, str]:
    found: list[str] = []
    slots: set[int] = set()
    for i in range(10_000):
        key = f"pair:{i}"
        slot = key_slot(key.encode())
        if nodes.serving(slot) == address and slot not in slots:
            found.append(key)
            slots.add(slot)
            if len(found) == 2:
                return found[0], found[1]
    raise AssertionError("no two keys")


def test_a_script_may_touch_undeclared_keys_of_its_node_only(nodes, proto):
    here = nodes.primaries[0]
    local_a, local_b = _two_keys_of_one_node(nodes, here)
    remote = next(f"remote:{i}" for i in range(10_000)
                  if nodes.serving(key_slot(f"remote:{i}".encode())) != here)
    with raw(here, proto) as client:
        assert client.call("SET", local_b, "vb") == ("+", b"OK")
        # another slot of this node, undeclared: allowed
        assert client.call("EVAL", f"return redis.call('GET', '{local_b}')", "1", local_a) == ("$", b"vb")
        refused = client.call("EVAL", f"return redis.call('GET', '{remote}')", "0")
        assert refused == ("-", b"ERR Attempted to access a non local key in a cluster node script: "
                                b"on @user_script:1.")
        assert client.call("DEL", local_b) == (":", 1)
