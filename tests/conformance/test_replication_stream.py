"""The replication stream, read as a replica reads it (Valkey's attach_to_replication_stream:
SYNC, the RDB skipped, then the commands): the same writes give the same propagated
commands on fakekey and on a real Valkey, absolute times normalised."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import pytest

from fakekey.testing.raw import RawClient
from fakekey.testing.targets import Target, ValkeyTarget, find_valkey_binary

END = [b"SET", b"__end__", b"1"]
NOISE = ({b"ping"}, {b"replconf"})  # the replication PING, REPLCONF GETACK
MS = re.compile(rb"^1\d{12}$")  # an absolute time in ms, near now
ID = re.compile(rb"^1\d{12}-\d+$")  # a stream ID made from now


class Stream:
    """A connection that asked SYNC: the commands propagated after the snapshot."""

    def __init__(self, target: Target) -> None:
        self.client = RawClient(target.host, target.port)
        self.client.send("SYNC")
        size = self._rdb_header()
        while len(self.client.buf) < size:
            self.client._fill()
        self.client.buf = self.client.buf[size:]

    def _rdb_header(self) -> int:
        client = self.client
        while True:
            while not client.buf:
                client._fill()
            if client.buf[:1] == b"\n":  # the keepalive newlines before the file
                client.buf = client.buf[1:]
                continue
            line = client._line()
            assert line.startswith(b"$"), line
            return int(line[1:])

    def commands(self, writer: RawClient) -> list[list[bytes]]:
        """What was propagated up to now (a marker write ends it)."""
        writer.call(*END)
        out: list[list[bytes]] = []
        while True:
            kind, items = self.client.read()
            assert kind == "*"
            argv = [item[1] for item in items]
            if argv == END:  # less the SELECT the marker itself may need
                return out[:-1] if out and out[-1][0] == b"SELECT" else out
            if argv[0].lower() not in NOISE[0] and argv[0].lower() not in NOISE[1]:
                out.append([normalised(arg) for arg in argv])

    def close(self) -> None:
        self.client.close()


def normalised(arg: bytes) -> bytes:
    if MS.match(arg):
        return b"<ms>"
    if ID.match(arg):
        return b"<id>"
    return arg


@pytest.fixture
def stream(target: Target):
    attached = Stream(target)
    yield attached
    attached.close()


def ops(*lines: str) -> list[list[bytes]]:
    return [line.encode().split() for line in lines]


CASES = {
    "set": (
        [("SET", "a", "1"), ("SET", "a", "2", "EX", "100"), ("set", "a", "3", "px", "100000"),
         ("SET", "a", "4", "EXAT", "99999999999"), ("SET", "a", "5", "KEEPTTL"),
         ("SET", "a", "6", "GET"), ("SETEX", "b", "100", "v"), ("PSETEX", "b", "100000", "v"),
         ("SET", "c", "1", "XX", "PX", "5000"), ("SET", "a", "7", "XX", "PX", "5000"),
         ("SET", "a", "8", "PXAT", "99999999999999"), ("SET", "a", "9", "EXAT", "1")],
        ops("SELECT 0", "SET a 1", "SET a 2 PXAT <ms>", "set a 3 PXAT <ms>",
            "SET a 4 PXAT 99999999999000", "SET a 5 KEEPTTL", "SET a 6", "SET b v PXAT <ms>",
            "SET b v PXAT <ms>", "SET a 7 PXAT <ms>", "SET a 8 PXAT 99999999999999",
            "UNLINK a"),
    ),
    "msetex": (
        [("MSETEX", "2", "a", "1", "b", "2", "EX", "100"), ("msetex", "1", "a", "1", "px", "100000"),
         ("MSETEX", "1", "a", "1", "EXAT", "99999999999"),
         ("MSETEX", "1", "a", "1", "pxat", "99999999999999"), ("MSETEX", "1", "a", "1", "XX", "KEEPTTL"),
         ("MSETEX", "1", "a", "1", "NX", "EX", "100"), ("MSETEX", "2", "a", "1", "c", "2", "PXAT", "1000"),
         ("MSETEX", "1", "a", "2", "EX", "100", "XX")],
        ops("SELECT 0", "MSETEX 2 a 1 b 2 PXAT <ms>", "msetex 1 a 1 PXAT <ms>",
            "MSETEX 1 a 1 PXAT 99999999999000", "MSETEX 1 a 1 pxat 99999999999999",
            "MSETEX 1 a 1 XX KEEPTTL", "MSETEX 2 a 1 c 2 PXAT 1000", "UNLINK a"),
    ),
    "expire": (
        [("SET", "a", "1"), ("GETEX", "a", "EX", "10"), ("GETEX", "a", "PERSIST"), ("GETEX", "a"),
         ("EXPIRE", "a", "100"), ("PEXPIRE", "a", "100000"), ("EXPIREAT", "a", "99999999999"),
         ("pexpireat", "a", "99999999999999", "gt"), ("EXPIRE", "a", "100", "NX"),
         ("PERSIST", "a"), ("EXPIRE", "a", "-1"), ("EXPIRE", "nokey", "10")],
        ops("SELECT 0", "SET a 1", "PEXPIREAT a <ms>", "PERSIST a", "PEXPIREAT a <ms>",
            "PEXPIREAT a <ms>", "PEXPIREAT a 99999999999000", "pexpireat a 99999999999999 gt",
            "PERSIST a", "UNLINK a"),
    ),
    "numbers": (
        [("SET", "f", "1.5"), ("INCRBYFLOAT", "f", "2"), ("INCRBYFLOAT", "g", "0.25"),
         ("HSET", "h", "f", "1.5"), ("HINCRBYFLOAT", "h", "f", "2"), ("HINCRBY", "h", "g", "3"),
         ("INCR", "n"), ("SETNX", "x", "1"), ("SETNX", "x", "1"), ("GETSET", "x", "2"),
         ("GETDEL", "x"), ("DEL", "f", "zz")],
        ops("SELECT 0", "SET f 1.5", "SET f 3.5 KEEPTTL", "SET g 0.25 KEEPTTL", "HSET h f 1.5",
            "HSET h f 3.5", "HINCRBY h g 3", "INCR n", "SETNX x 1", "SET x 2", "DEL x", "DEL f zz"),
    ),
    "spop": (
        [("SADD", "s", "a"), ("SPOP", "s"), ("SADD", "s", "a", "b", "c"), ("SPOP", "s", "5"),
         ("SADD", "t", "x", "y"), ("SPOP", "t", "0")],
        ops("SELECT 0", "SADD s a", "SREM s a", "SADD s a b c", "UNLINK s", "SADD t x y"),
    ),
    "blocking served at once": (
        [("RPUSH", "l", "a", "b", "c", "d", "e"), ("BLPOP", "l", "0"), ("BRPOP", "l", "0"),
         ("BLMPOP", "0", "1", "l", "LEFT", "COUNT", "2"), ("LMPOP", "1", "l", "RIGHT"),
         ("RPUSH", "l", "f", "g"), ("BRPOPLPUSH", "l", "m", "0"),
         ("BLMOVE", "l", "m", "LEFT", "RIGHT", "0"),
         ("ZADD", "z", "1", "a", "2", "b", "3", "c"), ("BZPOPMIN", "z", "0"),
         ("BZMPOP", "0", "1", "z", "MAX", "COUNT", "1"), ("ZMPOP", "1", "z", "MIN")],
        ops("SELECT 0", "RPUSH l a b c d e", "LPOP l", "RPOP l", "LPOP l 2", "RPOP l 1",
            "RPUSH l f g", "RPOPLPUSH l m", "LMOVE l m LEFT RIGHT", "ZADD z 1 a 2 b 3 c",
            "ZPOPMIN z", "ZPOPMAX z 1", "ZPOPMIN z 1"),
    ),
    "streams": (
        [("XADD", "s", "*", "f", "v"), ("XADD", "s", "5-*", "f", "v"),
         ("XADD", "s", "MAXLEN", "1", "*", "f", "v"), ("XGROUP", "CREATE", "s", "g", "0"),
         ("XADD", "t", "1-1", "f", "v"), ("XADD", "t", "1-2", "f", "v"),
         ("XTRIM", "t", "MAXLEN", "1"), ("XDEL", "t", "1-2")],
        ops("SELECT 0", "XADD s <id> f v", "XADD s MAXLEN 1 <id> f v", "XGROUP CREATE s g 0",
            "XADD t 1-1 f v", "XADD t 1-2 f v", "XTRIM t MAXLEN 1", "XDEL t 1-2"),
    ),
    "transactions": (
        [("MULTI",), ("SET", "a", "1"), ("EXEC",),
         ("MULTI",), ("SET", "a", "1"), ("INCR", "a"), ("GET", "a"), ("EXEC",),
         ("MULTI",), ("GET", "a"), ("EXEC",)],
        ops("SELECT 0", "SET a 1", "MULTI", "SET a 1", "INCR a", "EXEC"),
    ),
    "scripts": (
        [("EVAL", "redis.call('set','a','1')", "0"),
         ("EVAL", "redis.call('set','a','1'); redis.call('incr','a')", "0"),
         ("EVAL", "return redis.call('get','a')", "0"),
         ("EVAL", "redis.call('select','1'); redis.call('set','b','1')", "0"),
         ("EVAL", "redis.call('set',KEYS[1],'1','ex','10'); redis.call('spop','nos')", "1", "k"),
         ("SET", "c", "1")],
        ops("SELECT 0", "set a 1", "MULTI", "set a 1", "incr a", "EXEC", "SELECT 1", "set b 1",
            "SELECT 0", "set k 1 PXAT <ms>", "SET c 1"),
    ),
    "databases": (
        [("SELECT", "2"), ("SET", "a", "1"), ("SWAPDB", "2", "3"), ("SET", "a", "2"),
         ("MOVE", "a", "0"), ("SET", "b", "1"), ("COPY", "b", "c", "DB", "5"), ("FLUSHDB",),
         ("PUBLISH", "ch", "hello"), ("FLUSHALL",), ("SELECT", "0")],
        ops("SELECT 2", "SET a 1", "SWAPDB 2 3", "SET a 2", "MOVE a 0", "SET b 1",
            "COPY b c DB 5", "FLUSHDB", "PUBLISH ch hello", "FLUSHALL"),
    ),
    "hash field deadlines": (
        [("HSET", "h", "a", "1", "b", "2", "c", "3"), ("HEXPIRE", "h", "100", "FIELDS", "2", "a", "b"),
         ("HPEXPIRE", "h", "100000", "NX", "FIELDS", "1", "c"),
         ("HEXPIREAT", "h", "99999999999", "FIELDS", "1", "a"),
         ("hpexpireat", "h", "99999999999999", "FIELDS", "2", "a", "zz"),
         ("HEXPIRE", "h", "100", "XX", "FIELDS", "1", "zz"), ("HPERSIST", "h", "FIELDS", "2", "a", "zz"),
         ("HEXPIRE", "h", "0", "FIELDS", "1", "b"), ("HEXPIREAT", "h", "1", "FIELDS", "3", "c", "zz", "a"),
         ("HEXPIRE", "nokey", "10", "FIELDS", "1", "a")],
        ops("SELECT 0", "HSET h a 1 b 2 c 3", "HPEXPIREAT h <ms> FIELDS 2 a b",
            "HPEXPIREAT h <ms> NX FIELDS 1 c", "HPEXPIREAT h 99999999999000 FIELDS 1 a",
            "hpexpireat h 99999999999999 FIELDS 2 a zz", "HPERSIST h FIELDS 2 a zz", "HDEL h b",
            "HDEL h c a"),
    ),
    "hsetex": (
        [("HSET", "h", "a", "1", "b", "2"), ("HSETEX", "h", "FIELDS", "1", "a", "9"),
         ("HSETEX", "h", "EX", "100", "FIELDS", "2", "a", "1", "n", "2"),
         ("hsetex", "h", "px", "100000", "FNX", "fields", "1", "q", "1"),
         ("HSETEX", "h", "FXX", "EXAT", "99999999999", "FIELDS", "1", "q", "2"),
         ("HSETEX", "h", "XX", "pxat", "99999999999999", "FIELDS", "1", "q", "3"),
         ("HSETEX", "h2", "NX", "KEEPTTL", "FIELDS", "1", "q", "3"),
         ("HSETEX", "h", "KEEPTTL", "FIELDS", "1", "q", "4"), ("HSETEX", "h", "FNX", "FIELDS", "1", "q", "3"),
         ("HSETEX", "h", "EX", "0", "FIELDS", "3", "a", "1", "zz", "2", "a", "3"),
         ("HSETEX", "h", "PXAT", "1", "FIELDS", "1", "zz", "1"),
         ("HSETEX", "nokey", "PXAT", "1", "FIELDS", "1", "zz", "1")],
        ops("SELECT 0", "HSET h a 1 b 2", "HSETEX h FIELDS 1 a 9", "HSETEX h PXAT <ms> FIELDS 2 a 1 n 2",
            "hsetex h PXAT <ms> fields 1 q 1", "HSETEX h PXAT 99999999999000 FIELDS 1 q 2",
            "HSETEX h pxat 99999999999999 FIELDS 1 q 3", "HSETEX h2 KEEPTTL FIELDS 1 q 3",
            "HSETEX h KEEPTTL FIELDS 1 q 4", "HDEL h a"),
    ),
    "hgetex": (
        [("HSET", "h", "b", "1", "c", "2", "n", "3"), ("HPEXPIRE", "h", "100000", "FIELDS", "1", "n"),
         ("HGETEX", "h", "FIELDS", "1", "b"), ("HGETEX", "h", "EX", "100", "FIELDS", "3", "b", "zz", "c"),
         ("HGETEX", "h", "PERSIST", "FIELDS", "4", "b", "zz", "n", "b"),
         ("HGETEX", "h", "PXAT", "99999999999999", "FIELDS", "2", "b", "b"),
         ("HGETEX", "h", "EXAT", "1", "FIELDS", "3", "b", "zz", "b"), ("HGETEX", "nokey", "EX", "10", "FIELDS", "1", "b"),
         ("HGETEX", "h", "PERSIST", "FIELDS", "1", "n"), ("HGETEX", "h", "PX", "0", "FIELDS", "2", "c", "n")],
        ops("SELECT 0", "HSET h b 1 c 2 n 3", "HPEXPIREAT h <ms> FIELDS 1 n",
            "HPEXPIREAT h <ms> FIELDS 2 b c", "HPERSIST h FIELDS 2 b n",
            "HPEXPIREAT h 99999999999999 FIELDS 2 b b", "HDEL h b", "HDEL h c n"),
    ),
    "stream groups read": (
        [("XADD", "s", "1-1", "f", "v"), ("XADD", "s", "1-2", "f", "v"), ("XADD", "s", "1-3", "f", "v"),
         ("XADD", "t", "1-1", "f", "v"), ("XGROUP", "CREATE", "s", "g", "0"), ("XGROUP", "CREATE", "t", "g", "0"),
         ("XREADGROUP", "GROUP", "g", "c1", "COUNT", "1", "STREAMS", "s", "t", ">", ">"),
         ("XREADGROUP", "GROUP", "g", "c1", "STREAMS", "s", "0"),
         ("XREADGROUP", "GROUP", "g", "new", "NOACK", "COUNT", "1", "STREAMS", "s", ">"),
         ("xreadgroup", "group", "g", "c1", "noack", "streams", "s", ">"),
         ("XREADGROUP", "GROUP", "g", "c2", "STREAMS", "s", ">"),
         ("XGROUP", "CREATE", "s", "g2", "$", "ENTRIESREAD", "3"), ("XGROUP", "SETID", "s", "g2", "1-1"),
         ("XDEL", "s", "1-1"), ("XCLAIM", "s", "g", "c9", "0", "1-1")],
        ops("SELECT 0", "XADD s 1-1 f v", "XADD s 1-2 f v", "XADD s 1-3 f v", "XADD t 1-1 f v",
            "XGROUP CREATE s g 0", "XGROUP CREATE t g 0", "MULTI",
            "XCLAIM s g c1 0 1-1 TIME <ms> RETRYCOUNT 1 FORCE JUSTID LASTID 1-1",
            "XGROUP SETID s g 1-1 ENTRIESREAD 1",
            "XCLAIM t g c1 0 1-1 TIME <ms> RETRYCOUNT 1 FORCE JUSTID LASTID 1-1",
            "XGROUP SETID t g 1-1 ENTRIESREAD 1", "EXEC", "MULTI", "XGROUP CREATECONSUMER s g new",
            "XGROUP SETID s g 1-2 ENTRIESREAD 2", "EXEC", "XGROUP SETID s g 1-3 ENTRIESREAD 3",
            "XGROUP CREATE s g2 $ ENTRIESREAD 3", "XGROUP SETID s g2 1-1", "XDEL s 1-1",
            "XCLAIM s g c1 0 1-1 TIME <ms> RETRYCOUNT 2 FORCE JUSTID LASTID 1-3"),
    ),
    "stream claims": (
        [("XADD", "s", "1-1", "f", "v"), ("XADD", "s", "1-2", "f", "v"), ("XADD", "s", "1-3", "f", "v"),
         ("XGROUP", "CREATE", "s", "g", "0"), ("XREADGROUP", "GROUP", "g", "c1", "COUNT", "2", "STREAMS", "s", ">"),
         ("XCLAIM", "s", "g", "c2", "0", "1-1"), ("XCLAIM", "s", "g", "c3", "0", "1-2", "JUSTID"),
         ("XCLAIM", "s", "g", "c3", "0", "1-1", "IDLE", "500", "RETRYCOUNT", "7", "FORCE", "LASTID", "1-2"),
         ("XCLAIM", "s", "g", "c3", "0", "1-9", "FORCE"), ("XCLAIM", "s", "g", "c2", "0", "1-9", "LASTID", "9-9"),
         ("XCLAIM", "s", "g", "c4", "0", "1-3", "1-2", "JUSTID"),
         ("XAUTOCLAIM", "s", "g", "c4", "0", "0", "COUNT", "1"), ("XDEL", "s", "1-2"),
         ("XAUTOCLAIM", "s", "g", "c5", "0", "0", "JUSTID"), ("XAUTOCLAIM", "s", "g", "c6", "0", "0"),
         ("XREADGROUP", "GROUP", "g", "c1", "COUNT", "1", "STREAMS", "s", ">"), ("XDEL", "s", "1-3"),
         ("XCLAIM", "s", "g", "c7", "0", "1-3", "1-1")],
        ops("SELECT 0", "XADD s 1-1 f v", "XADD s 1-2 f v", "XADD s 1-3 f v", "XGROUP CREATE s g 0",
            "MULTI", "XCLAIM s g c1 0 1-1 TIME <ms> RETRYCOUNT 1 FORCE JUSTID LASTID 1-1",
            "XCLAIM s g c1 0 1-2 TIME <ms> RETRYCOUNT 1 FORCE JUSTID LASTID 1-2",
            "XGROUP SETID s g 1-2 ENTRIESREAD 2", "EXEC",
            "XCLAIM s g c2 0 1-1 TIME <ms> RETRYCOUNT 2 FORCE JUSTID LASTID 1-2",
            "XCLAIM s g c3 0 1-2 TIME <ms> RETRYCOUNT 1 FORCE JUSTID LASTID 1-2",
            "XCLAIM s g c3 0 1-1 TIME <ms> RETRYCOUNT 7 FORCE JUSTID LASTID 1-2",
            "XGROUP SETID s g 9-9 ENTRIESREAD 2",
            "XCLAIM s g c4 0 1-2 TIME <ms> RETRYCOUNT 1 FORCE JUSTID LASTID 9-9",
            "XCLAIM s g c4 0 1-1 TIME <ms> RETRYCOUNT 8 FORCE JUSTID LASTID 9-9", "XDEL s 1-2",
            "MULTI", "XCLAIM s g c5 0 1-1 TIME <ms> RETRYCOUNT 8 FORCE JUSTID LASTID 9-9",
            "XCLAIM s g c4 0 1-2 TIME <ms> RETRYCOUNT 1 FORCE JUSTID LASTID 9-9", "EXEC",
            "XCLAIM s g c6 0 1-1 TIME <ms> RETRYCOUNT 9 FORCE JUSTID LASTID 9-9", "XDEL s 1-3",
            "XCLAIM s g c7 0 1-1 TIME <ms> RETRYCOUNT 10 FORCE JUSTID LASTID 9-9"),
    ),
    "geo and stores": (
        [("GEOADD", "geo", "13.361389", "38.115556", "Palermo"),
         ("GEOADD", "geo", "NX", "CH", "13.361389", "38.115556", "Palermo", "15.087269", "37.502669", "Catania"),
         ("GEOADD", "geo", "XX", "13.4", "38.1", "Palermo"), ("geoadd", "geo", "xx", "ch", "13.5", "38.1", "Palermo"),
         ("GEORADIUS", "geo", "15", "37", "200", "km", "STORE", "gdst"),
         ("GEORADIUSBYMEMBER", "geo", "Palermo", "200", "km", "STOREDIST", "gdst2"),
         ("GEORADIUS", "geo", "0", "0", "1", "km", "STORE", "gdst"),
         ("GEOSEARCHSTORE", "gs", "geo", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km"),
         ("RPUSH", "l", "3", "1", "2"), ("SORT", "l", "STORE", "dst"), ("SORT", "l", "BY", "nosort", "LIMIT", "0", "2", "STORE", "dst"),
         ("SORT", "nol", "STORE", "dst"), ("SPUBLISH", "ch", "x")],
        ops("SELECT 0", "ZADD geo 3479099956230698 Palermo",
            "ZADD geo NX CH 3479099956230698 Palermo 3479447370796909 Catania",
            "ZADD geo XX 3479099937378871 Palermo", "ZADD geo xx ch 3479100566894653 Palermo",
            "GEORADIUS geo 15 37 200 km STORE gdst", "GEORADIUSBYMEMBER geo Palermo 200 km STOREDIST gdst2",
            "GEORADIUS geo 0 0 1 km STORE gdst", "GEOSEARCHSTORE gs geo FROMLONLAT 15 37 BYRADIUS 200 km",
            "RPUSH l 3 1 2", "SORT l STORE dst", "SORT l BY nosort LIMIT 0 2 STORE dst",
            "SORT nol STORE dst", "SPUBLISH ch x"),
    ),
    "stream trims with LIMIT": (
        [("XADD", "x", "MAXLEN", "~", "2", "LIMIT", "1", "1-1", "f", "v"), ("XADD", "x", "1-2", "f", "v"),
         ("XADD", "x", "MAXLEN", "~", "1", "LIMIT", "100", "1-5", "f", "v"),
         ("XTRIM", "x", "MAXLEN", "~", "1", "LIMIT", "10"), ("XTRIM", "x", "MINID", "~", "1-5", "LIMIT", "10")],
        ops("SELECT 0", "XADD x MAXLEN = 1 LIMIT 1 1-1 f v", "XADD x 1-2 f v",
            "XADD x MAXLEN = 3 LIMIT 100 1-5 f v"),
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_propagated_commands(target, stream, name):
    writes, expected = CASES[name]
    with target.raw(2) as writer:
        for args in writes:
            writer.call(*args)
        writer.call("SELECT", "0")
        assert stream.commands(writer) == expected


def test_expired_keys_are_deleted_where_they_expire(target, stream, r2):
    """A key found expired: UNLINK on its own, or with the command that found it, wrapped
    in MULTI/EXEC (lazyfree-lazy-expire yes)."""
    assert r2.call("DEBUG", "SET-ACTIVE-EXPIRE", "0")[0] == "+"
    try:
        with target.raw(2) as writer:
            for follow_up in (("GET", "k"), ("INCR", "k")):
                writer.call("SET", "k", "1", "PX", "1")
                writer.call("DEBUG", "SLEEP", "0.01")  # the key's millisecond passes
                writer.call(*follow_up)
            writer.call("SET", "k", "1", "PX", "1")
            writer.call("DEBUG", "SLEEP", "0.01")
            writer.call("MULTI")
            writer.call("GET", "k")
            writer.call("SET", "z", "1")
            writer.call("EXEC")
            assert stream.commands(writer) == ops(
                "SELECT 0", "SET k 1 PXAT <ms>", "UNLINK k", "SET k 1 PXAT <ms>", "MULTI",
                "UNLINK k", "INCR k", "EXEC", "SET k 1 PXAT <ms>", "MULTI", "UNLINK k",
                "SET z 1", "EXEC")
    finally:
        r2.call("DEBUG", "SET-ACTIVE-EXPIRE", "1")


def test_lazyfree_lazy_expire_no_gives_del(target, stream, r2):
    assert r2.call("CONFIG", "SET", "lazyfree-lazy-expire", "no")[0] == "+"
    try:
        with target.raw(2) as writer:
            writer.call("SET", "a", "1")
            writer.call("EXPIRE", "a", "-1")
            assert stream.commands(writer) == ops("SELECT 0", "SET a 1", "DEL a")
    finally:
        r2.call("CONFIG", "SET", "lazyfree-lazy-expire", "yes")


def test_a_blocked_pop_is_propagated_as_served(target, stream):
    with target.raw(2) as blocked, target.raw(2) as writer:
        blocked.send("BLPOP", "q", "0")
        deadline = time.monotonic() + 10
        while b"blocked_clients:1" not in writer.call("INFO", "clients")[1]:
            assert time.monotonic() < deadline
        writer.call("RPUSH", "q", "x")
        assert blocked.read() == ("*", [("$", b"q"), ("$", b"x")])
        assert stream.commands(writer) == ops("SELECT 0", "RPUSH q x", "LPOP q")


def test_functions_are_their_commands(target, stream, r2):
    r2.call("FUNCTION", "FLUSH")
    library = ("#!lua name=replib\n"
               "server.register_function('two', function(keys, args)\n"
               "  server.call('set', keys[1], args[1]); return server.call('incr', keys[2]) end)")
    with target.raw(2) as writer:
        assert writer.call("FUNCTION", "LOAD", library) == ("$", b"replib")
        writer.call("FCALL", "two", "2", "a", "n", "v")
        assert stream.commands(writer) == [
            [b"SELECT", b"0"], [b"FUNCTION", b"FLUSH"], [b"FUNCTION", b"LOAD", library.encode()],
            *ops("MULTI", "set a v", "incr n", "EXEC")]
    r2.call("FUNCTION", "FLUSH")


def test_restore_goes_out_with_an_absolute_ttl(target, stream):
    with target.raw(2) as writer:
        writer.call("SET", "a", "1")
        payload = writer.call("DUMP", "a")[1]
        writer.call("RESTORE", "r1", "0", payload)
        writer.call("RESTORE", "r2", "100000", payload)
        writer.call("RESTORE", "r2", "99999999999999", payload, "REPLACE", "ABSTTL", "IDLETIME", "10")
        writer.call("RESTORE", "r2", "1", payload, "REPLACE", "ABSTTL")  # past: the key goes
        writer.call("RESTORE", "r3", "1", payload, "ABSTTL")  # past, nothing replaced: nothing
        writer.call("restore", "r4", "100000", payload, "FREQ", "5")
        assert stream.commands(writer) == [
            *ops("SELECT 0", "SET a 1"), [b"RESTORE", b"r1", b"0", payload],
            [b"RESTORE", b"r2", b"<ms>", payload, b"ABSTTL"],
            [b"RESTORE", b"r2", b"99999999999999", payload, b"REPLACE", b"ABSTTL", b"IDLETIME", b"10"],
            [b"UNLINK", b"r2"], [b"restore", b"r4", b"<ms>", payload, b"FREQ", b"5", b"ABSTTL"]]


@pytest.fixture
def destination() -> Iterator[ValkeyTarget]:
    """Another server to MIGRATE to: a real one (a fakekey server in this process would
    share the loop of a fakekey target, which waits on its reply)."""
    binary = find_valkey_binary()
    if binary is None:
        pytest.skip("no valkey-server binary")
    server = ValkeyTarget(binary)
    try:
        server.start()
        yield server
    finally:
        server.stop()


def test_migrate_is_the_del_of_the_keys_moved(target, stream, destination):
    """MIGRATE: the DEL of the keys that left (none with COPY)."""
    with target.raw(2) as writer:
        for key in ("a", "b", "c"):
            writer.call("SET", key, "1")
        host, port = destination.host, str(destination.port)
        assert writer.call("MIGRATE", host, port, "a", "0", "5000") == ("+", b"OK")
        assert writer.call("MIGRATE", host, port, "b", "0", "5000", "COPY") == ("+", b"OK")
        assert writer.call("MIGRATE", host, port, "", "0", "5000", "REPLACE", "KEYS", "b", "nokey", "c") \
            == ("+", b"OK")
        assert writer.call("MIGRATE", host, port, "nokey", "0", "5000") == ("+", b"NOKEY")
        assert stream.commands(writer) == ops("SELECT 0", "SET a 1", "SET b 1", "SET c 1", "DEL a",
                                              "DEL b c")


def test_a_blocked_xreadgroup_is_propagated_as_served(target, stream):
    with target.raw(2) as blocked, target.raw(2) as writer:
        writer.call("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
        blocked.send("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
        deadline = time.monotonic() + 10
        while b"blocked_clients:1" not in writer.call("INFO", "clients")[1]:
            assert time.monotonic() < deadline
        writer.call("XADD", "s", "1-1", "f", "v")
        assert blocked.read()[0] == "*"
        assert stream.commands(writer) == ops(
            "SELECT 0", "XGROUP CREATE s g $ MKSTREAM", "XADD s 1-1 f v", "MULTI",
            "XCLAIM s g c 0 1-1 TIME <ms> RETRYCOUNT 1 FORCE JUSTID LASTID 1-1",
            "XGROUP SETID s g 1-1 ENTRIESREAD 1", "EXEC")


def test_hsetex_keepttl_deletes_the_fields_it_overwrites_past_their_deadline(target, stream, r2):
    """The replica does not expire fields: the ones found past their deadline go first."""
    assert r2.call("DEBUG", "SET-ACTIVE-EXPIRE", "0")[0] == "+"
    try:
        with target.raw(2) as writer:
            writer.call("HSET", "h", "a", "1", "c", "3")
            writer.call("HPEXPIRE", "h", "1", "FIELDS", "1", "a")
            writer.call("DEBUG", "SLEEP", "0.01")  # its millisecond passes
            writer.call("HSETEX", "h", "KEEPTTL", "FIELDS", "3", "a", "new", "c", "4", "a", "5")
            assert stream.commands(writer) == ops(
                "SELECT 0", "HSET h a 1 c 3", "HPEXPIREAT h <ms> FIELDS 1 a", "MULTI",
                "HDEL h a", "HSETEX h KEEPTTL FIELDS 3 a new c 4 a 5", "EXEC")
    finally:
        r2.call("DEBUG", "SET-ACTIVE-EXPIRE", "1")


def test_a_read_that_meets_expired_fields_is_not_propagated(target, stream, r2):
    """HGET that meets an expired field is never propagated: the field stays, hidden, until
    active expiry deletes it (Valkey has no lazy expiry of fields), so nothing goes out."""
    assert r2.call("DEBUG", "SET-ACTIVE-EXPIRE", "0")[0] == "+"
    try:
        with target.raw(2) as writer:
            writer.call("HSET", "h", "a", "1", "b", "2")
            writer.call("HPEXPIRE", "h", "1", "FIELDS", "1", "a")
            writer.call("HSET", "g", "x", "1")
            writer.call("HPEXPIRE", "g", "1", "FIELDS", "1", "x")
            writer.call("DEBUG", "SLEEP", "0.01")  # their millisecond passes
            assert writer.call("HGET", "h", "a") == ("$", None)
            assert writer.call("HGETALL", "g") == ("*", [])
            assert writer.call("HDEL", "g", "x") == (":", 0)
            assert writer.call("HLEN", "g") == (":", 1)
            assert stream.commands(writer) == ops(
                "SELECT 0", "HSET h a 1 b 2", "HPEXPIREAT h <ms> FIELDS 1 a",
                "HSET g x 1", "HPEXPIREAT g <ms> FIELDS 1 x")
    finally:
        r2.call("DEBUG", "SET-ACTIVE-EXPIRE", "1")


@pytest.mark.parametrize("call, sent", [
    (("HSET", "h", "a", "3", "c", "5"), ["HSET h a 3 c 5"]),
    (("HMSET", "h", "a", "3"), ["HMSET h a 3"]),
    (("HSETNX", "h", "a", "3"), ["HSET h a 3"]),  # the replica, holding a, would refuse HSETNX
    (("HINCRBY", "h", "a", "4"), ["HSET h a 4"]),  # ... and add to the old value
    (("HINCRBYFLOAT", "h", "a", "1.5"), ["HSET h a 1.5"]),
    (("HSETEX", "h", "FIELDS", "1", "a", "3"), ["HSETEX h FIELDS 1 a 3"]),
    (("HSETEX", "h", "FNX", "FIELDS", "1", "a", "3"), ["HSETEX h FIELDS 1 a 3"]),
    (("HSETEX", "h", "FNX", "KEEPTTL", "FIELDS", "1", "a", "3"),  # ... and keep its deadline
     ["MULTI", "HDEL h a", "HSETEX h KEEPTTL FIELDS 1 a 3", "EXEC"]),
    (("HSETEX", "h", "FXX", "FIELDS", "1", "a", "3"), []),
    # the commands that meet it without setting it; b is alive, with a deadline
    (("HSETEX", "h", "PX", "0", "FIELDS", "2", "a", "9", "b", "1"), ["HDEL h a b"]),
    (("HGETEX", "h", "PXAT", "1", "FIELDS", "2", "a", "b"), ["HDEL h b"]),
    (("HEXPIRE", "h", "0", "FIELDS", "2", "a", "b"), ["HDEL h b"]),
    (("HGETEX", "h", "PERSIST", "FIELDS", "2", "a", "b"), ["HPERSIST h FIELDS 1 b"]),
    (("HPERSIST", "h", "FIELDS", "2", "a", "b"), ["HPERSIST h FIELDS 2 a b"]),
    (("HGETDEL", "h", "FIELDS", "2", "a", "b"), ["HGETDEL h FIELDS 2 a b"]),
    (("HDEL", "h", "a", "b"), ["HDEL h a b"]),
])
def test_a_write_meeting_an_expired_field_goes_out_as_valkeys(target, stream, r2, call, sent):
    """A write that sets a field past its deadline (Valkey deletes it as an expiry
    first) goes out in a form the replica, which still holds the field, applies alike;
    the others go out as they would without it (HDEL and HGETDEL as sent)."""
    assert r2.call("DEBUG", "SET-ACTIVE-EXPIRE", "0")[0] == "+"
    try:
        with target.raw(2) as writer:
            writer.call("HSET", "h", "a", "1", "b", "2")
            writer.call("HPEXPIRE", "h", "100000", "FIELDS", "1", "b")
            writer.call("HPEXPIRE", "h", "1", "FIELDS", "1", "a")
            writer.call("DEBUG", "SLEEP", "0.01")  # its millisecond passes
            writer.call(*call)
            assert stream.commands(writer) == ops(
                "SELECT 0", "HSET h a 1 b 2", "HPEXPIREAT h <ms> FIELDS 1 b",
                "HPEXPIREAT h <ms> FIELDS 1 a", *sent)
    finally:
        r2.call("DEBUG", "SET-ACTIVE-EXPIRE", "1")


def test_fields_expired_by_the_cron_go_as_hdel(target, stream):
    """Active expiry of fields reaches the replicas (they expire none themselves)."""
    with target.raw(2) as writer:
        writer.call("HSET", "h", "a", "1", "b", "2")
        writer.call("HPEXPIRE", "h", "1", "FIELDS", "1", "a")
        deadline = time.monotonic() + 10
        while writer.call("HLEN", "h") != (":", 1):  # the cron's step takes it
            assert time.monotonic() < deadline, "the field never expired"
            time.sleep(0.02)
        assert stream.commands(writer) == ops(
            "SELECT 0", "HSET h a 1 b 2", "HPEXPIREAT h <ms> FIELDS 1 a", "HDEL h a")
