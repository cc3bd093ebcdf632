"""Lazy freeing: what Valkey frees in its background thread is taken apart here a slice at
a time between event-loop turns, and INFO counts it as Valkey does."""

from __future__ import annotations

import time
from collections import deque

import redis

from fakekey import Server
from fakekey.memory.lazyfree import take_apart
from fakekey.types.hash import HashValue


def wait_lazyfree_done(r: redis.Redis) -> None:
    deadline = time.monotonic() + 10
    while r.info("memory")["lazyfree_pending_objects"]:
        assert time.monotonic() < deadline, "lazy freeing never ended"
        time.sleep(0.01)


def test_take_apart_empties_everything_a_bounded_slice_at_a_time() -> None:
    h = HashValue()
    h.to_hashtable()  # a dict holds its fields: the part taken apart
    for i in range(5000):
        h.set(b"f%d" % i, b"v")
    nested = {b"k%d" % i: {j: [j] * 100 for j in range(100)} for i in range(50)}
    parts = [{b"h": h, **nested}, set(range(10_000)), deque(range(10_000)), list(range(10_000))]
    stack = list(parts)
    slices = 0
    while not take_apart(stack, 0):  # a deadline already passed: one chunk per call
        slices += 1
    assert slices > 10
    assert not h and all(not part for part in parts)
    fresh = HashValue()  # the class itself is never taken apart: it still makes hashes
    fresh.set(b"f", b"v")
    assert fresh.TYPE_NAME == "hash" and fresh.get(b"f") == b"v"


def test_unlink_and_async_flush_free_in_slices_and_count_as_valkey() -> None:
    with Server() as server:
        r = redis.Redis.from_url(server.url)
        r.sadd("big", *range(20_000))
        r.mset({f"k{i}": "v" for i in range(20_000)})
        freed_before = r.info("memory")["lazyfreed_objects"]
        assert r.unlink("big") == 1
        wait_lazyfree_done(r)
        assert r.info("memory")["lazyfreed_objects"] == freed_before + 1
        assert r.flushall(asynchronous=True)
        r.set("after", "1")  # the new keyspace is usable while the old one is freed
        assert r.dbsize() == 1
        wait_lazyfree_done(r)
        assert r.info("memory")["lazyfreed_objects"] == freed_before + 1 + 20_000
        assert r.get("after") == b"1" and r.dbsize() == 1
        r.close()
