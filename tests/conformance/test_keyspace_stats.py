"""INFO's keyspace_hits and keyspace_misses: Valkey counts each key lookup of a read
(lookupKeyRead, also the sources a write command reads), never a write's own lookup."""

from __future__ import annotations

import pytest


def hits_and_misses(r2) -> tuple[int, int]:
    info = r2.call("INFO", "stats")[1].decode()
    fields = dict(line.split(":", 1) for line in info.split("\r\n") if ":" in line)
    return int(fields["keyspace_hits"]), int(fields["keyspace_misses"])


@pytest.fixture
def filled(r2):
    r2.call("SET", "s", "v")
    r2.call("RPUSH", "l", "a", "b")
    r2.call("SADD", "st", "m")
    r2.call("HSET", "h", "f", "v")
    r2.call("ZADD", "z", "1", "a")
    r2.call("PFADD", "p", "a")
    r2.call("CONFIG", "RESETSTAT")
    return r2


@pytest.mark.parametrize(("command", "expected"), [
    (("GET", "s"), (1, 0)),
    (("GET", "nope"), (0, 1)),
    (("MGET", "s", "nope", "l"), (2, 1)),
    (("EXISTS", "s", "nope"), (1, 1)),
    (("TYPE", "s"), (1, 0)),
    (("TTL", "s"), (1, 0)),
    (("OBJECT", "ENCODING", "s"), (1, 0)),
    (("LRANGE", "l", "0", "-1"), (1, 0)),
    (("HGET", "h", "f"), (1, 0)),
    (("ZSCORE", "z", "a"), (1, 0)),
    (("XLEN", "nope"), (0, 1)),
    (("TOUCH", "s", "nope"), (1, 1)),
    (("EVAL", "return redis.call('get', 's')", "0"), (1, 0)),
    # writes: their own lookups do not count, the values they read do
    (("INCR", "n"), (0, 0)),
    (("LPUSH", "l", "x"), (0, 0)),
    (("LPOP", "l"), (0, 0)),
    (("SET", "s", "w"), (0, 0)),
    (("HINCRBY", "h", "n", "1"), (0, 0)),
    (("GETDEL", "s"), (1, 0)),
    (("GETEX", "s"), (1, 0)),
    (("SUNIONSTORE", "d", "st", "nope"), (1, 1)),
    (("ZUNIONSTORE", "zd", "1", "z"), (1, 0)),
    (("SORT", "l", "STORE", "dst"), (1, 0)),
    (("BITOP", "AND", "bd", "s"), (1, 0)),
    # a write's read of a key: SET's GET, GETSET, COPY's source (not its destination)
    (("SET", "s", "w", "GET"), (1, 0)),
    (("SET", "nope", "w", "GET"), (0, 1)),
    (("SET", "s", "w", "NX", "GET"), (1, 0)),
    (("SET", "s", "w", "XX"), (0, 0)),
    (("GETSET", "s", "w"), (1, 0)),
    (("COPY", "s", "h", "REPLACE"), (1, 0)),
    (("COPY", "s", "new"), (1, 0)),
    (("COPY", "nope", "new"), (0, 1)),
    # PFMERGE reads every key named, its destination included, once
    (("PFMERGE", "hll", "nope"), (0, 2)),
    (("PFMERGE", "hll"), (0, 1)),
    (("PFMERGE", "p", "p"), (2, 0)),
])
def test_lookups_count_as_valkey_counts(filled, command, expected):
    filled.call(*command)
    assert hits_and_misses(filled) == expected


def test_resetstat_zeroes_them(filled):
    filled.call("GET", "s")
    filled.call("GET", "nope")
    assert hits_and_misses(filled) == (1, 1)
    filled.call("CONFIG", "RESETSTAT")
    assert hits_and_misses(filled) == (0, 0)
