"""Each key's last access (core/access.py): a key added and never read stores nothing of
its own, its time follows from its place among the keys of its shard. Checked against a
plain record of every key's time, through the commands (OBJECT IDLETIME, DEBUG OBJECT,
SWAPDB, FLUSHDB, RENAME, an RDB save's idle times) on a keyspace past the table's split."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import redis

from fakekey import Server
from fakekey.config.settings import Config
from fakekey.core.client import Client
from fakekey.core.table import SPLIT_AT
from fakekey.net.server import new_state
from fakekey.resp.replies import ReplyError

START_MS = 1_765_000_000_000


class Driven:
    """One server without a network, on a frozen clock, and what each key's time must be."""

    def __init__(self, tmp_path: Path) -> None:
        self.state = new_state(Config({"enable-debug-command": "yes", "dir": str(tmp_path), "save": ""}))
        self.state.clock.freeze(START_MS)
        self.client = Client(self.state, None, "127.0.0.1:1", "127.0.0.1:2")
        self.expected: dict[bytes, int] = {}  # key -> the second of its last access

    def call(self, *args: Any) -> Any:
        reply = self.state.call(self.client, [a if isinstance(a, bytes) else str(a).encode() for a in args])
        assert not isinstance(reply, ReplyError), reply
        return reply

    def advance(self, ms: int) -> None:
        self.state.clock.advance(ms)

    def second(self) -> int:
        return self.state.clock.now_ms() // 1000

    def idle(self, key: bytes) -> int:
        return int(self.call("OBJECT", "IDLETIME", key))

    def check(self, keys: list[bytes]) -> None:
        now = self.second()
        for key in keys:
            assert self.idle(key) == now - self.expected[key], key


def test_keys_added_over_many_seconds_keep_their_idle_times(tmp_path: Path) -> None:
    d = Driven(tmp_path)
    keys = []
    for i in range(SPLIT_AT + 6000):
        if i % 700 == 0:
            d.advance(1000)
        key = b"key:%06d" % i
        d.call("SET", key, "v")
        d.expected[key] = d.second()
        keys.append(key)
    db = d.state.dbs[0]
    assert len(db.access.touched) < SPLIT_AT + 100  # the keys added after the split have none
    d.advance(5000)
    rng = random.Random(7)
    d.check(rng.sample(keys, 300))
    d.check(keys[-50:])


def test_removed_run_starts_pass_their_time_on(tmp_path: Path) -> None:
    d = Driven(tmp_path)
    rng = random.Random(3)
    live: list[bytes] = []
    for i in range(SPLIT_AT + 8000):
        if i % 500 == 0:
            d.advance(1000)
        key = b"k:%06d" % i
        d.call("SET", key, "v")
        d.expected[key] = d.second()
        live.append(key)
        roll = rng.random()
        if roll < 0.15 and i > SPLIT_AT:  # a removal, often of a run's first key
            gone = live.pop(rng.randrange(len(live)))
            d.call("DEL", gone)
            del d.expected[gone]
        elif roll < 0.17:  # a read: the key's own time from now on
            read = rng.choice(live)
            d.call("GET", read)
            d.expected[read] = d.second()
        elif roll < 0.18:  # an overwrite
            again = rng.choice(live)
            d.call("SET", again, "w")
            d.expected[again] = d.second()
    d.advance(3000)
    d.check(rng.sample(live, 400))
    d.check(live)  # every shard settled on the way: each key its own entry now
    assert not d.state.dbs[0].access.marks


def test_debug_object_rename_swapdb_and_flush(tmp_path: Path) -> None:
    d = Driven(tmp_path)
    for i in range(SPLIT_AT + 2000):
        d.call("SET", b"a:%06d" % i, "v")
    d.advance(4000)
    assert b"lru_seconds_idle:4" in d.call("DEBUG", "OBJECT", b"a:%06d" % (SPLIT_AT + 10))
    d.call("RENAME", b"a:%06d" % (SPLIT_AT + 11), "renamed")
    assert d.idle(b"renamed") == 0
    d.call("SWAPDB", 0, 1)
    d.call("SELECT", 1)
    d.advance(2000)
    assert d.idle(b"a:%06d" % (SPLIT_AT + 12)) == 6
    assert d.idle(b"renamed") == 2
    d.call("FLUSHDB", "ASYNC")
    for i in range(SPLIT_AT + 10):
        d.call("SET", b"b:%06d" % i, "v")
    d.advance(1000)
    assert d.idle(b"b:%06d" % (SPLIT_AT + 5)) == 1
    d.call("FLUSHDB", "SYNC")
    d.call("SET", "c", "v")
    d.advance(1000)
    assert d.idle(b"c") == 1


def test_an_rdb_save_keeps_the_idle_times_under_an_lru_policy(tmp_path: Path) -> None:
    with Server(enable_debug_command="yes", dir=str(tmp_path), save="") as srv:
        srv.freeze(START_MS)
        client = redis.Redis.from_url(srv.url)
        pipe = client.pipeline(transaction=False)
        for i in range(SPLIT_AT + 100):
            pipe.set(b"a:%06d" % i, "v")
        pipe.execute()
        srv.advance(7000)
        client.config_set("maxmemory-policy", "allkeys-lru")
        assert client.execute_command("DEBUG", "RELOAD")
        srv.advance(1000)
        assert client.object("idletime", b"a:%06d" % (SPLIT_AT + 50)) == 8
        assert client.object("idletime", b"a:%06d" % 5) == 8
        client.close()
