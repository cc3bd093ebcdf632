"""A counter INCR left is a string like any other to every reader.

fakekey keeps the result of INCR, DECR, INCRBY and DECRBY as an int (Valkey's "int"
encoding); the first reader that wants bytes gets them. Each check below writes a fresh
counter `c` with INCRBY and compares what one reader sees of it with what it sees of `s`,
the same text written by SET (on Valkey both are int-encoded strings)."""

from __future__ import annotations

import pytest

VALUES = [0, 7, -12, 12345, 9007199254740993, -9223372036854775808]


def counters(r, value: int) -> None:
    """`c` left by INCRBY (a counter), `s` the same text by SET."""
    r.call("DEL", "c", "s")
    r.call("SET", "c", "0")
    assert r.call("INCRBY", "c", str(value)) == (":", value)
    assert r.call("SET", "s", str(value)) == ("+", b"OK")


@pytest.mark.parametrize("value", VALUES)
def test_string_readers(r2, value):
    text = str(value).encode()
    checks = [
        ("GET", "{}"), ("STRLEN", "{}"), ("GETRANGE", "{}", "1", "3"), ("TYPE", "{}"),
        ("OBJECT", "ENCODING", "{}"), ("DUMP", "{}"), ("DEBUG", "DIGEST-VALUE", "{}"),
        ("MEMORY", "USAGE", "{}"), ("GETBIT", "{}", "3"), ("BITCOUNT", "{}"),
        ("EXISTS", "{}"), ("LCS", "{}", "s"), ("SUBSTR", "{}", "0", "-1"),
        ("OBJECT", "REFCOUNT", "{}"),
    ]
    for check in checks:
        counters(r2, value)
        seen = [r2.call(*(part.format(key) for part in check)) for key in ("c", "s")]
        assert seen[0] == seen[1], check
    counters(r2, value)
    assert r2.call("GET", "c") == ("$", text)


@pytest.mark.parametrize("value", [0, 12345])
def test_debug_object_of_a_counter(r2, value):
    counters(r2, value)
    seen = [r2.call("DEBUG", "OBJECT", key)[1].split(b" ") for key in ("c", "s")]
    fields = [dict(part.split(b":", 1) for part in each[1:] if b":" in part) for each in seen]
    for each in fields:
        for varying in (b"at", b"lru", b"lru_seconds_idle"):
            each.pop(varying, None)
    assert fields[0] == fields[1]
    assert fields[0][b"encoding"] == b"int"


def test_writers_after_a_counter(r2):
    counters(r2, 12345)
    assert r2.call("APPEND", "c", "x") == (":", 6)
    assert r2.call("GET", "c") == ("$", b"12345x")
    counters(r2, 12345)
    assert r2.call("SETRANGE", "c", "1", "9") == (":", 5)
    assert r2.call("GET", "c") == ("$", b"19345")
    counters(r2, 12345)
    assert r2.call("INCRBYFLOAT", "c", "0.5") == ("$", b"12345.5")
    counters(r2, 12345)
    assert r2.call("SETBIT", "c", "0", "1") == (":", 0)
    assert r2.call("GET", "c") == ("$", b"\xb12345")
    counters(r2, 12345)
    assert r2.call("GETSET", "c", "v") == ("$", b"12345")
    counters(r2, 12345)
    assert r2.call("SET", "c", "w", "GET") == ("$", b"12345")
    counters(r2, 12345)
    assert r2.call("GETDEL", "c") == ("$", b"12345")
    counters(r2, 12345)
    assert r2.call("SET", "c", "9", "IFEQ", "12345") == ("+", b"OK")
    assert r2.call("GET", "c") == ("$", b"9")


def test_a_counter_moves_and_copies_as_a_string(r2):
    counters(r2, 12345)
    assert r2.call("COPY", "c", "d") == (":", 1)
    assert r2.call("RENAME", "c", "e") == ("+", b"OK")
    assert r2.call("MGET", "d", "e") == ("*", [("$", b"12345")] * 2)
    counters(r2, 42)
    assert r2.call("MOVE", "c", "1") == (":", 1)
    r2.call("SELECT", "1")
    assert r2.call("INCR", "c") == (":", 43)
    assert r2.call("GET", "c") == ("$", b"43")
    r2.call("DEL", "c")
    r2.call("SELECT", "0")


def test_a_counter_at_zero_is_a_key(r2):
    r2.call("SET", "z", "1")
    assert r2.call("DECR", "z") == (":", 0)
    assert r2.call("EXISTS", "z") == (":", 1)
    assert r2.call("DECR", "z") == (":", -1)
    assert r2.call("INCR", "z") == (":", 0)
    assert r2.call("GET", "z") == ("$", b"0")


def test_readers_by_pattern_and_scripts(r2):
    r2.call("DEL", "l", "w1", "w2")
    r2.call("RPUSH", "l", "1", "2")
    r2.call("INCRBY", "w1", "20")
    r2.call("INCRBY", "w2", "10")
    assert r2.call("SORT", "l", "BY", "w*", "GET", "w*") == ("*", [("$", b"10"), ("$", b"20")])
    r2.call("INCR", "w1")
    assert r2.call("EVAL", "return redis.call('GET', KEYS[1])", "1", "w1") == ("$", b"21")
    r2.call("INCR", "w1")
    assert r2.call("SCAN", "0", "TYPE", "string", "MATCH", "w1", "COUNT", "1000") == (
        "*", [("$", b"0"), ("*", [("$", b"w1")])])


def test_counters_survive_a_reload(r2):
    r2.call("FLUSHALL")
    r2.call("INCRBY", "a", "12345")
    r2.call("INCRBY", "b", "-3")
    r2.call("SET", "t", "5")
    r2.call("INCR", "t")
    r2.call("EXPIRE", "t", "1000")
    digest = r2.call("DEBUG", "DIGEST")
    assert r2.call("DEBUG", "RELOAD") == ("+", b"OK")
    assert r2.call("DEBUG", "DIGEST") == digest
    assert r2.call("MGET", "a", "b", "t") == ("*", [("$", b"12345"), ("$", b"-3"), ("$", b"6")])
    assert r2.call("OBJECT", "ENCODING", "a") == ("$", b"int")
    assert r2.call("INCR", "a") == (":", 12346)
    r2.call("FLUSHALL")
