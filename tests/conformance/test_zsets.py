"""Sorted-set commands, pinned to Valkey 9.1's replies in RESP2 and RESP3.

Scores are doubles: a bulk string in RESP2, a `,` double in RESP3. WITHSCORES replies are
a flat array in RESP2 and [member, score] pairs in RESP3.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fakekey.testing.targets import Target

WRONGTYPE = ("-", b"WRONGTYPE Operation against a key holding the wrong kind of value")
SYNTAX = ("-", b"ERR syntax error")
NOT_INT = ("-", b"ERR value is not an integer or out of range")
NOT_FLOAT = ("-", b"ERR value is not a valid float")
MINMAX_FLOAT = ("-", b"ERR min or max is not a float")
MINMAX_LEX = ("-", b"ERR min or max not valid string range item")
EMPTY = ("*", [])
ZERO = (":", 0)
ONE = (":", 1)


def err(text: str) -> tuple[str, bytes]:
    return ("-", text.encode())


def b(value: str | bytes) -> tuple[str, bytes]:
    return ("$", value.encode() if isinstance(value, str) else value)


def arr(*items: object) -> tuple[str, list]:
    return ("*", list(items))


def members(*names: str) -> tuple[str, list]:
    return arr(*(b(n) for n in names))


def dbl(proto: int, text: str) -> tuple[str, bytes]:
    return ("$", text.encode()) if proto == 2 else (",", text.encode())


def null(proto: int) -> tuple[str, None]:
    return ("$", None) if proto == 2 else ("_", None)


def null_array(proto: int) -> tuple[str, None]:
    return ("*", None) if proto == 2 else ("_", None)


def scored(proto: int, *pairs: tuple[str, str]) -> tuple[str, list]:
    """WITHSCORES: flat in RESP2, [member, score] pairs in RESP3."""
    if proto == 2:
        return arr(*(x for m, s in pairs for x in (b(m), dbl(2, s))))
    return arr(*(arr(b(m), dbl(3, s)) for m, s in pairs))


def nested(proto: int, *pairs: tuple[str, str]) -> tuple[str, list]:
    """[member, score] pairs in both protocols (ZMPOP)."""
    return arr(*(arr(b(m), dbl(proto, s)) for m, s in pairs))


@contextlib.contextmanager
def zset_limits(r, entries: int = 128, value: int = 64) -> Iterator[None]:
    """Set the listpack thresholds for a test, restoring Valkey's defaults afterwards."""
    r.call("CONFIG", "SET", "zset-max-listpack-entries", str(entries))
    r.call("CONFIG", "SET", "zset-max-listpack-value", str(value))
    try:
        yield
    finally:
        r.call("CONFIG", "SET", "zset-max-listpack-entries", "128")
        r.call("CONFIG", "SET", "zset-max-listpack-value", "64")


def fill(r, key: str = "z", *pairs: object) -> None:
    pairs = pairs or (1, "a", 2, "b", 3, "c", 4, "d", 5, "e")
    assert r.call("ZADD", key, *pairs)[0] == ":"


# --- ZADD / ZINCRBY ------------------------------------------------------------------------


def test_zadd_counts_added_or_changed_with_ch(r):
    assert r.call("ZADD", "z", 1, "a", 2, "b", 2, "b") == (":", 2)
    assert r.call("ZADD", "z", 5, "a", 2, "b", 7, "c") == ONE
    assert r.call("ZADD", "z", "CH", 6, "a", 2, "b", 8, "d") == (":", 2)
    assert r.call("ZADD", "z", "ch", "xx", 9, "a", 9, "x") == ONE
    assert r.call("ZCARD", "z") == (":", 4)
    # an option word after the first score is a member
    assert r.call("ZADD", "z", 1, "ch") == ONE
    assert r.call("ZSCORE", "z", "ch")[1] == b"1"


def test_zadd_conditions(r, proto):
    fill(r, "z", 5, "a")
    assert r.call("ZADD", "z", "NX", 1, "a", 1, "b") == ONE
    assert r.call("ZSCORE", "z", "a") == dbl(proto, "5")
    assert r.call("ZADD", "z", "XX", 1, "a", 1, "new") == ZERO
    assert r.call("ZSCORE", "z", "new") == null(proto)
    assert r.call("ZADD", "z", "GT", "CH", 0, "a", 9, "b", 3, "c") == (":", 2)
    assert r.call("ZRANGE", "z", 0, -1, "WITHSCORES") == scored(
        proto, ("a", "1"), ("c", "3"), ("b", "9")
    )
    assert r.call("ZADD", "z", "LT", "CH", 7, "b", 2, "a") == ONE
    assert r.call("ZADD", "z", "XX", "GT", 100, "a", 100, "nope") == ZERO
    assert r.call("ZSCORE", "z", "a") == dbl(proto, "100")
    assert r.call("ZADD", "missing", "XX", 1, "a") == ZERO
    assert r.call("EXISTS", "missing") == ZERO


def test_zadd_errors(r):
    r.call("ZADD", "z", 1, "a")
    assert r.call("ZADD", "z", "XX", "NX", 1, "a") == err(
        "ERR XX and NX options at the same time are not compatible"
    )
    gt_lt_nx = err("ERR GT, LT, and/or NX options at the same time are not compatible")
    assert r.call("ZADD", "z", "GT", "LT", 1, "a") == gt_lt_nx
    assert r.call("ZADD", "z", "NX", "GT", 1, "a") == gt_lt_nx
    assert r.call("ZADD", "z", "LT", "NX", 1, "a") == gt_lt_nx
    assert r.call("ZADD", "z", "INCR", 1, "a", 2, "b") == err(
        "ERR INCR option supports a single increment-element pair"
    )
    assert r.call("ZADD", "z", 1, "a", 2) == SYNTAX
    assert r.call("ZADD", "z", "ch", 1) == SYNTAX
    assert r.call("ZADD", "z", "nx", "xx") == SYNTAX  # pairs are checked before conflicts
    assert r.call("ZADD", "z", 1, "a", 2, "b", "XX") == SYNTAX
    assert r.call("ZADD", "z") == err("ERR wrong number of arguments for 'zadd' command")
    for bad in ("nan", "foo", "", " 1", "1.5e", "0x10", "1e400", "1e-400", "infin"):
        assert r.call("ZADD", "z", bad, "a") == NOT_FLOAT, bad
    r.call("SET", "s", "x")
    assert r.call("ZADD", "s", 1, "a") == WRONGTYPE
    assert r.call("ZADD", "s", "nan", "a") == NOT_FLOAT  # scores parse before the lookup


def test_zadd_accepts_strtod_forms(r, proto):
    forms = {"+.5": "0.5", "5.": "5", "2.5E+2": "250", "-inf": "-inf", "+inf": "inf",
             "Infinity": "inf", "01": "1", "-1e-3": "-0.001"}
    for i, (raw, shown) in enumerate(forms.items()):
        assert r.call("ZADD", "z", raw, f"m{i}") == ONE
        assert r.call("ZSCORE", "z", f"m{i}") == dbl(proto, shown), raw


def test_zadd_incr(r, proto):
    assert r.call("ZADD", "z", "INCR", 1.5, "a") == dbl(proto, "1.5")
    assert r.call("ZADD", "z", "INCR", 1, "a") == dbl(proto, "2.5")
    assert r.call("ZADD", "z", "NX", "INCR", 1, "a") == null(proto)
    assert r.call("ZADD", "z", "XX", "INCR", 1, "nope") == null(proto)
    assert r.call("ZADD", "z", "GT", "INCR", -1, "a") == null(proto)
    assert r.call("ZADD", "z", "LT", "INCR", -1, "a") == dbl(proto, "1.5")
    assert r.call("ZADD", "missing", "XX", "INCR", 1, "a") == null(proto)
    r.call("ZADD", "z", "inf", "i")
    assert r.call("ZADD", "z", "INCR", "-inf", "i") == err(
        "ERR resulting score is not a number (NaN)"
    )
    assert r.call("ZSCORE", "z", "i") == dbl(proto, "inf")


def test_zincrby(r, proto):
    assert r.call("ZINCRBY", "z", 0.1, "a") == dbl(proto, "0.1")
    assert r.call("ZINCRBY", "z", 0.2, "a") == dbl(proto, "0.30000000000000004")
    assert r.call("ZINCRBY", "z", -5, "b") == dbl(proto, "-5")
    assert r.call("ZINCRBY", "z", "inf", "c") == dbl(proto, "inf")
    assert r.call("ZINCRBY", "z", "-inf", "c") == err("ERR resulting score is not a number (NaN)")
    assert r.call("ZINCRBY", "z", "nan", "a") == NOT_FLOAT
    assert r.call("ZINCRBY", "z", "x", "a") == NOT_FLOAT
    assert r.call("ZINCRBY", "z", "nx", "a") == SYNTAX  # option words are still options
    assert r.call("ZINCRBY", "z", 1, "a", 2) == err(
        "ERR wrong number of arguments for 'zincrby' command"
    )
    r.call("SET", "s", "x")
    assert r.call("ZINCRBY", "s", 1, "a") == WRONGTYPE


def test_score_text(r, proto):
    cases = {
        "-0": "0", "1e300": "1e+300", "1e-300": "1e-300", "5e-324": "5e-324",
        "123456789012345678": "123456789012345680", "1.5e20": "1.5e+20", "1e21": "1e+21",
        "0.000123": "0.000123", "1e-7": "1e-7", "0.0000015": "1.5e-6", "0.000015": "0.000015",
        "4611686018427387904": "4611686018427387904", "9223372036854775808": "9223372036854776000",
        "1234567.1234567": "1.2345671234567e+6", "12345678.5": "12345678.5",
        "1.7976931348623157e308": "1.7976931348623157e+308", "-2.5": "-2.5", "3": "3",
    }
    for i, (raw, shown) in enumerate(cases.items()):
        r.call("ZADD", "z", raw, f"m{i}")
        assert r.call("ZSCORE", "z", f"m{i}") == dbl(proto, shown), raw
    assert r.call("ZINCRBY", "fresh", "-0", "m") == dbl(proto, "-0")  # the reply keeps -0
    assert r.call("ZSCORE", "fresh", "m") == dbl(proto, "0")  # a listpack stores 0


def test_negative_zero_survives_in_a_skiplist(r, proto):
    with zset_limits(r, entries=0):
        r.call("ZADD", "z", "-0", "a")
        assert r.call("OBJECT", "ENCODING", "z") == b("skiplist")
        assert r.call("ZSCORE", "z", "a") == dbl(proto, "-0")
        assert r.call("ZUNION", 1, "z", "WITHSCORES") == scored(proto, ("a", "-0"))
        assert r.call("ZUNION", 1, "z", "WEIGHTS", -1, "WITHSCORES") == scored(proto, ("a", "0"))
    r.call("ZUNIONSTORE", "copy", 1, "z")  # a result that fits becomes a listpack
    assert r.call("OBJECT", "ENCODING", "copy") == b("listpack")
    assert r.call("ZSCORE", "copy", "a") == dbl(proto, "0")


# --- single-member reads -------------------------------------------------------------------


def test_zscore_zmscore_zcard(r, proto):
    fill(r)
    assert r.call("ZSCORE", "z", "c") == dbl(proto, "3")
    assert r.call("ZSCORE", "z", "nope") == null(proto)
    assert r.call("ZSCORE", "nokey", "a") == null(proto)
    assert r.call("ZMSCORE", "z", "a", "nope", "e") == arr(
        dbl(proto, "1"), null(proto), dbl(proto, "5")
    )
    assert r.call("ZMSCORE", "nokey", "a", "b") == arr(null(proto), null(proto))
    assert r.call("ZCARD", "z") == (":", 5)
    assert r.call("ZCARD", "nokey") == ZERO


def test_zrank_zrevrank(r, proto):
    fill(r)
    assert r.call("ZRANK", "z", "b") == ONE
    assert r.call("ZREVRANK", "z", "b") == (":", 3)
    assert r.call("ZRANK", "z", "b", "WITHSCORE") == arr(ONE, dbl(proto, "2"))
    assert r.call("ZREVRANK", "z", "e", "withscore") == arr(ZERO, dbl(proto, "5"))
    assert r.call("ZRANK", "z", "nope") == null(proto)
    assert r.call("ZRANK", "z", "nope", "WITHSCORE") == null_array(proto)
    assert r.call("ZRANK", "nokey", "a") == null(proto)
    assert r.call("ZREVRANK", "nokey", "a", "WITHSCORE") == null_array(proto)
    assert r.call("ZRANK", "z", "b", "WITHSCORES") == SYNTAX
    assert r.call("ZRANK", "nokey", "b", "foo") == SYNTAX
    assert r.call("ZRANK", "z", "b", "WITHSCORE", "x") == err(
        "ERR wrong number of arguments for 'zrank' command"
    )
    assert r.call("ZREVRANK", "z", "b", "WITHSCORE", "x") == err(
        "ERR wrong number of arguments for 'zrevrank' command"
    )
    r.call("SET", "s", "x")
    assert r.call("ZRANK", "s", "a") == WRONGTYPE
    assert r.call("ZRANK", "s", "a", "foo") == SYNTAX


def test_order_is_score_then_bytes(r):
    r.call("ZADD", "z", 1, "b", 1, "a", 1, "ab", 1, "", 0.5, b"\xff", 1, "B")
    assert r.call("ZRANGE", "z", 0, -1) == arr(b(b"\xff"), b(""), b("B"), b("a"), b("ab"), b("b"))


# --- ZRANGE --------------------------------------------------------------------------------


def test_zrange_by_rank(r, proto):
    fill(r)
    assert r.call("ZRANGE", "z", 0, -1) == members("a", "b", "c", "d", "e")
    assert r.call("ZRANGE", "z", -2, 100) == members("d", "e")
    assert r.call("ZRANGE", "z", -100, 1) == members("a", "b")
    assert r.call("ZRANGE", "z", 3, 1) == EMPTY
    assert r.call("ZRANGE", "z", 5, 10) == EMPTY
    assert r.call("ZRANGE", "z", 0, 1, "WITHSCORES") == scored(proto, ("a", "1"), ("b", "2"))
    assert r.call("ZRANGE", "z", 0, 1, "REV", "WITHSCORES") == scored(
        proto, ("e", "5"), ("d", "4")
    )
    assert r.call("ZREVRANGE", "z", 1, 3) == members("d", "c", "b")
    assert r.call("ZREVRANGE", "z", -2, -1, "WITHSCORES") == scored(
        proto, ("b", "2"), ("a", "1")
    )
    assert r.call("ZRANGE", "nokey", 0, -1) == EMPTY
    assert r.call("ZRANGE", "z", 0, -1, "withscores", "withscores")[1][0] == (
        b("a") if proto == 2 else arr(b("a"), dbl(3, "1"))
    )


def test_zrange_by_score(r, proto):
    fill(r)
    assert r.call("ZRANGE", "z", "(1", "(5", "BYSCORE") == members("b", "c", "d")
    assert r.call("ZRANGE", "z", "-inf", "+inf", "BYSCORE", "LIMIT", 1, 2) == members("b", "c")
    assert r.call("ZRANGE", "z", 5, 1, "BYSCORE", "REV", "LIMIT", 1, 2, "WITHSCORES") == scored(
        proto, ("d", "4"), ("c", "3")
    )
    assert r.call("ZRANGE", "z", 1, 5, "BYSCORE", "LIMIT", 0, -1) == members(
        "a", "b", "c", "d", "e"
    )
    assert r.call("ZRANGE", "z", 1, 5, "BYSCORE", "LIMIT", 0, 0) == EMPTY
    assert r.call("ZRANGE", "z", 1, 5, "BYSCORE", "LIMIT", 5, 1) == EMPTY
    assert r.call("ZRANGE", "z", 1, 5, "BYSCORE", "LIMIT", -1, 2) == EMPTY  # a listpack
    assert r.call("ZRANGEBYSCORE", "z", 2, 4, "WITHSCORES") == scored(
        proto, ("b", "2"), ("c", "3"), ("d", "4")
    )
    assert r.call("ZREVRANGEBYSCORE", "z", "+inf", "(3") == members("e", "d")
    assert r.call("ZREVRANGEBYSCORE", "z", 3, 1, "LIMIT", 1, 1) == members("b")
    assert r.call("ZRANGEBYSCORE", "z", "inf", "-inf") == EMPTY
    assert r.call("ZRANGEBYSCORE", "z", "(3", "3") == EMPTY


def test_score_range_parsing(r):
    fill(r, "z", 0, "zero", 1, "a", 2, "b")
    assert r.call("ZRANGEBYSCORE", "z", "", "") == members("zero")  # empty is 0
    assert r.call("ZRANGEBYSCORE", "z", "(", 1) == members("a")
    assert r.call("ZRANGEBYSCORE", "z", "+1", "2.") == members("a", "b")
    assert r.call("ZRANGEBYSCORE", "z", "-.5e-3", "1E+0") == members("zero", "a")
    assert r.call("ZRANGEBYSCORE", "z", "-infinity", "+Infinity") == members("zero", "a", "b")
    assert r.call("ZRANGEBYSCORE", "z", "-1e400", "1e-400") == members("zero")  # no ERANGE
    assert r.call("ZRANGEBYSCORE", "z", "1e400", "inf") == EMPTY
    assert r.call("ZRANGEBYSCORE", "z", b"(0\x00junk", 1) == members("a")  # C stops at NUL
    for lo in ("nan", "(nan", " 1", "1 ", "0x1", "1e", ".", "-", "((1", "[1", "infin", "x"):
        assert r.call("ZRANGEBYSCORE", "z", lo, 2) == MINMAX_FLOAT, lo
        assert r.call("ZCOUNT", "z", 0, lo) == MINMAX_FLOAT, lo


def test_zrange_by_lex(r):
    fill(r, "z", 0, "a", 0, "b", 0, "c", 0, "d", 0, "e")
    assert r.call("ZRANGE", "z", "[b", "(d", "BYLEX") == members("b", "c")
    assert r.call("ZRANGE", "z", "[c", "[a", "BYLEX", "REV") == members("c", "b", "a")
    assert r.call("ZRANGE", "z", "[a", "[c", "BYLEX", "REV") == EMPTY
    assert r.call("ZRANGE", "z", "-", "+", "BYLEX", "LIMIT", 1, 2) == members("b", "c")
    assert r.call("ZRANGEBYLEX", "z", "-", "(c") == members("a", "b")
    assert r.call("ZRANGEBYLEX", "z", "(b", "[d", "LIMIT", 1, 5) == members("d")
    assert r.call("ZRANGEBYLEX", "z", "[e", "+") == members("e")
    assert r.call("ZRANGEBYLEX", "z", "", "+") == MINMAX_LEX
    assert r.call("ZREVRANGEBYLEX", "z", "+", "-", "LIMIT", 1, 2) == members("d", "c")
    assert r.call("ZREVRANGEBYLEX", "z", "[c", "-", "LIMIT", -1, 2) == EMPTY
    for lo, hi in (("+", "-"), ("-", "-"), ("+", "+"), ("(a", "(a")):
        assert r.call("ZRANGEBYLEX", "z", lo, hi) == EMPTY
    assert r.call("ZRANGEBYLEX", "z", "[a", "[a") == members("a")
    for lo, hi in (("a", "[b"), ("-a", "+"), ("[a", "+x"), ("1", "[b")):
        assert r.call("ZRANGEBYLEX", "z", lo, hi) == MINMAX_LEX
        assert r.call("ZLEXCOUNT", "z", lo, hi) == MINMAX_LEX


def test_lex_range_over_mixed_scores_walks_the_listpack(r):
    fill(r, "m", 5, "a", 1, "b", 3, "c", 2, "d", 4, "e")  # order: b d c e a
    assert r.call("ZRANGEBYLEX", "m", "[a", "[d") == members("b", "d", "c")
    assert r.call("ZREVRANGEBYLEX", "m", "[d", "[a") == members("a", "e", "c", "d", "b")
    assert r.call("ZLEXCOUNT", "m", "[a", "[d") == (":", 3)
    assert r.call("ZRANGEBYLEX", "m", "[c", "[d") == EMPTY


def test_skiplist_negative_limit_offset_counts_from_the_range_end(r):
    with zset_limits(r, entries=0):
        fill(r)
        assert r.call("ZRANGEBYSCORE", "z", 2, 4, "LIMIT", -1, 5) == members("d")
        assert r.call("ZRANGEBYSCORE", "z", 2, 4, "LIMIT", -3, 5) == members("b", "c", "d")
        assert r.call("ZRANGEBYSCORE", "z", 2, 4, "LIMIT", -4, 5) == EMPTY
        assert r.call("ZREVRANGEBYSCORE", "z", 4, 2, "LIMIT", -2, 5) == members("c", "b")
        assert r.call("ZRANGEBYLEX", "z", "[b", "[d", "LIMIT", -2, 5) == members("c", "d")
        assert r.call("ZRANGEBYSCORE", "z", 2, 4, "LIMIT", 1, 1) == members("c")


def test_zrange_option_errors(r):
    fill(r)
    assert r.call("ZRANGE", "z", 0, -1, "LIMIT", 0, 1) == err(
        "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX"
    )
    assert r.call("ZRANGE", "z", "-", "+", "BYLEX", "WITHSCORES") == err(
        "ERR syntax error, WITHSCORES not supported in combination with BYLEX"
    )
    for extra in (("BYSCORE", "BYLEX"), ("REV", "REV"), ("LIMIT", 1), ("XX",), ("foo",)):
        assert r.call("ZRANGE", "z", 0, -1, *extra) == SYNTAX, extra
    assert r.call("ZRANGE", "z", 0, 1, "BYSCORE", "LIMIT", 1, "x") == NOT_INT
    assert r.call("ZRANGE", "z", "x", 1) == NOT_INT
    assert r.call("ZRANGE", "z", 1, "x", "BYSCORE") == MINMAX_FLOAT
    assert r.call("ZRANGE", "z", "a", "b", "BYLEX") == MINMAX_LEX
    assert r.call("ZREVRANGE", "z", 0, 1, "BYSCORE") == SYNTAX
    assert r.call("ZREVRANGE", "z", 0, 1, "REV") == SYNTAX
    assert r.call("ZRANGEBYSCORE", "z", 0, 1, "REV") == SYNTAX
    assert r.call("ZRANGEBYSCORE", "z", 0, 1, "BYLEX") == SYNTAX
    assert r.call("ZRANGEBYLEX", "z", "-", "+", "WITHSCORES") == err(
        "ERR syntax error, WITHSCORES not supported in combination with BYLEX"
    )
    assert r.call("ZRANGE", "z", 0) == err("ERR wrong number of arguments for 'zrange' command")
    r.call("SET", "s", "x")
    assert r.call("ZRANGE", "s", 0, -1) == WRONGTYPE
    assert r.call("ZRANGE", "s", "x", 1, "BYSCORE") == MINMAX_FLOAT  # parsed before lookup
    assert r.call("ZRANGE", "s", 0, -1, "foo") == SYNTAX


def test_zrangestore(r, proto):
    fill(r)
    assert r.call("ZRANGESTORE", "dst", "z", 1, 3) == (":", 3)
    assert r.call("ZRANGE", "dst", 0, -1, "WITHSCORES") == scored(
        proto, ("b", "2"), ("c", "3"), ("d", "4")
    )
    assert r.call("ZRANGESTORE", "dst", "z", "[b", "+", "BYLEX", "REV", "LIMIT", 0, 1) == ZERO
    assert r.call("ZRANGESTORE", "dst", "z", "+", "[b", "BYLEX", "REV", "LIMIT", 0, 2) == (":", 2)
    assert r.call("ZRANGE", "dst", 0, -1) == members("d", "e")
    assert r.call("ZRANGESTORE", "dst", "z", 0, 1, "REV") == (":", 2)
    assert r.call("ZRANGE", "dst", 0, -1) == members("d", "e")
    r.call("EXPIRE", "dst", 100)
    assert r.call("ZRANGESTORE", "dst", "z", 0, 0) == ONE
    assert r.call("TTL", "dst") == (":", -1)
    assert r.call("ZRANGESTORE", "dst", "z", 10, 20, "BYSCORE") == ZERO
    assert r.call("EXISTS", "dst") == ZERO
    r.call("SET", "dst", "string")
    assert r.call("ZRANGESTORE", "dst", "z", 0, 0) == ONE
    assert r.call("TYPE", "dst") == ("+", b"zset")
    assert r.call("ZRANGESTORE", "dst", "nokey", 0, -1) == ZERO
    assert r.call("EXISTS", "dst") == ZERO
    assert r.call("ZRANGESTORE", "dst", "z", 0, -1, "WITHSCORES") == SYNTAX
    assert r.call("ZRANGESTORE", "dst", "z", 0, -1, "LIMIT", 0, 1) == err(
        "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX"
    )
    r.call("SET", "s", "x")
    assert r.call("ZRANGESTORE", "dst", "s", 0, -1) == WRONGTYPE


def test_zcount_zlexcount(r):
    fill(r)
    assert r.call("ZCOUNT", "z", "-inf", "+inf") == (":", 5)
    assert r.call("ZCOUNT", "z", "(1", 5) == (":", 4)
    assert r.call("ZCOUNT", "z", 2, "(2") == ZERO
    assert r.call("ZCOUNT", "nokey", 0, 1) == ZERO
    assert r.call("ZCOUNT", "z", "x", 1) == MINMAX_FLOAT
    fill(r, "l", 0, "a", 0, "b", 0, "c", 0, "d")
    assert r.call("ZLEXCOUNT", "l", "-", "+") == (":", 4)
    assert r.call("ZLEXCOUNT", "l", "[b", "(d") == (":", 2)
    assert r.call("ZLEXCOUNT", "l", "(a", "[a") == ZERO
    assert r.call("ZLEXCOUNT", "nokey", "-", "+") == ZERO
    assert r.call("ZLEXCOUNT", "l", "foo", "+") == MINMAX_LEX


# --- removal -------------------------------------------------------------------------------


def test_zrem(r):
    fill(r, "z", 1, "a", 2, "b", 3, "c")
    assert r.call("ZREM", "z", "a", "nope", "a") == ONE
    assert r.call("ZREM", "z", "nope") == ZERO
    assert r.call("ZREM", "nokey", "a") == ZERO
    assert r.call("ZREM", "z", "b", "c") == (":", 2)
    assert r.call("EXISTS", "z") == ZERO
    r.call("SET", "s", "x")
    assert r.call("ZREM", "s", "a") == WRONGTYPE


def test_zremrange(r):
    fill(r)
    assert r.call("ZREMRANGEBYRANK", "z", 0, 0) == ONE
    assert r.call("ZREMRANGEBYRANK", "z", -1, -1) == ONE
    assert r.call("ZREMRANGEBYRANK", "z", 5, 10) == ZERO
    assert r.call("ZRANGE", "z", 0, -1) == members("b", "c", "d")
    assert r.call("ZREMRANGEBYSCORE", "z", "(2", 3) == ONE
    assert r.call("ZREMRANGEBYSCORE", "z", 10, 20) == ZERO
    assert r.call("ZREMRANGEBYSCORE", "z", "-inf", "+inf") == (":", 2)
    assert r.call("EXISTS", "z") == ZERO
    fill(r, "l", 0, "a", 0, "b", 0, "c", 0, "d")
    assert r.call("ZREMRANGEBYLEX", "l", "[b", "(d") == (":", 2)
    assert r.call("ZRANGE", "l", 0, -1) == members("a", "d")
    assert r.call("ZREMRANGEBYLEX", "l", "-", "+") == (":", 2)
    assert r.call("EXISTS", "l") == ZERO
    assert r.call("ZREMRANGEBYRANK", "nokey", 0, -1) == ZERO
    assert r.call("ZREMRANGEBYRANK", "z", "x", 1) == NOT_INT
    assert r.call("ZREMRANGEBYSCORE", "z", "x", 1) == MINMAX_FLOAT
    assert r.call("ZREMRANGEBYLEX", "z", "x", "+") == MINMAX_LEX
    r.call("SET", "s", "x")
    assert r.call("ZREMRANGEBYRANK", "s", 0, 1) == WRONGTYPE
    assert r.call("ZREMRANGEBYSCORE", "s", "x", 1) == MINMAX_FLOAT  # range first
    assert r.call("ZREMRANGEBYLEX", "s", "-", "+") == WRONGTYPE


# --- pops ----------------------------------------------------------------------------------


def test_zpopmin_zpopmax_reply_shapes(r, proto):
    fill(r)
    assert r.call("ZPOPMIN", "z") == arr(b("a"), dbl(proto, "1"))  # flat without a count
    if proto == 2:
        assert r.call("ZPOPMAX", "z", 2) == arr(b("e"), dbl(2, "5"), b("d"), dbl(2, "4"))
    else:
        assert r.call("ZPOPMAX", "z", 2) == arr(arr(b("e"), dbl(3, "5")), arr(b("d"), dbl(3, "4")))
    assert r.call("ZPOPMIN", "z", 0) == EMPTY
    assert r.call("ZPOPMIN", "z", 1) == scored(proto, ("b", "2"))
    assert r.call("ZPOPMIN", "z", 100) == scored(proto, ("c", "3"))
    assert r.call("EXISTS", "z") == ZERO
    assert r.call("ZPOPMIN", "nokey") == EMPTY
    assert r.call("ZPOPMAX", "nokey", 3) == EMPTY


def test_zpop_errors(r):
    positive = err("ERR value is out of range, must be positive")
    assert r.call("ZPOPMIN", "z", -1) == positive
    assert r.call("ZPOPMIN", "z", "x") == positive
    assert r.call("ZPOPMIN", "z", 1, 2) == SYNTAX
    r.call("SET", "s", "x")
    assert r.call("ZPOPMIN", "s") == WRONGTYPE
    assert r.call("ZPOPMAX", "s", 0) == WRONGTYPE
    assert r.call("ZPOPMAX", "s", -1) == positive


def test_zmpop(r, proto):
    fill(r, "z", 1, "a", 2, "b", 3, "c")
    assert r.call("ZMPOP", 1, "z", "MIN") == arr(b("z"), nested(proto, ("a", "1")))
    assert r.call("ZMPOP", 2, "nokey", "z", "max", "COUNT", 5) == arr(
        b("z"), nested(proto, ("c", "3"), ("b", "2"))
    )
    assert r.call("ZMPOP", 1, "z", "MIN") == null_array(proto)
    assert r.call("EXISTS", "z") == ZERO


def test_zmpop_errors(r):
    fill(r, "z", 1, "a")
    numkeys = err("ERR numkeys should be greater than 0")
    count = err("ERR count should be greater than 0")
    for args, expected in [
        ((0, "z", "MIN"), numkeys), ((-1, "z", "MIN"), numkeys), (("x", "z", "MIN"), numkeys),
        (("9223372036854775808", "z", "MIN"), numkeys),
        (("9223372036854775807", "z", "MIN"), SYNTAX), ((5, "z", "MIN"), SYNTAX),
        ((1, "z", "foo"), SYNTAX), ((1, "z", "MIN", "foo"), SYNTAX),
        ((1, "z", "MIN", "COUNT"), SYNTAX), ((1, "z", "MIN", "COUNT", 1, "COUNT", 1), SYNTAX),
        ((1, "z", "MIN", "COUNT", 0), count), ((1, "z", "MIN", "COUNT", -1), count),
        ((1, "z", "MIN", "COUNT", "x"), count),
        ((1, "z"), err("ERR wrong number of arguments for 'zmpop' command")),
    ]:
        assert r.call("ZMPOP", *args) == expected, args
    r.call("SET", "s", "x")
    assert r.call("ZMPOP", 2, "s", "z", "MIN") == WRONGTYPE
    assert r.call("ZMPOP", 2, "nokey", "s", "MIN") == WRONGTYPE
    assert r.call("ZMPOP", 2, "z", "s", "MIN")[0] == "*"  # stops at the first existing key


# --- ZRANDMEMBER ---------------------------------------------------------------------------


def test_zrandmember(r, proto):
    fill(r, "z", 1, "a", 2, "b", 3, "c")
    assert r.call("ZRANDMEMBER", "z")[1] in (b"a", b"b", b"c")
    assert r.call("ZRANDMEMBER", "nokey") == null(proto)
    assert r.call("ZRANDMEMBER", "nokey", 5) == EMPTY
    assert r.call("ZRANDMEMBER", "z", 0, "WITHSCORES") == EMPTY
    # all of it: from the highest score down
    assert r.call("ZRANDMEMBER", "z", 5, "WITHSCORES") == scored(
        proto, ("c", "3"), ("b", "2"), ("a", "1")
    )
    assert r.call("ZRANDMEMBER", "z", 3) == members("c", "b", "a")
    kind, picks = r.call("ZRANDMEMBER", "z", -10)
    assert kind == "*" and len(picks) == 10 and {p[1] for p in picks} <= {b"a", b"b", b"c"}
    kind, two = r.call("ZRANDMEMBER", "z", 2)
    assert len({p[1] for p in two}) == 2
    fill(r, "one", 7, "x")
    assert r.call("ZRANDMEMBER", "one", -3, "WITHSCORES") == scored(
        proto, ("x", "7"), ("x", "7"), ("x", "7")
    )


def test_zrandmember_errors(r):
    fill(r, "z", 1, "a")
    assert r.call("ZRANDMEMBER", "z", "x") == NOT_INT
    assert r.call("ZRANDMEMBER", "z", 1, "foo") == SYNTAX
    assert r.call("ZRANDMEMBER", "z", 1, "WITHSCORES", "foo") == SYNTAX
    full_range = err(
        "ERR value is out of range, value must between -9223372036854775807 and "
        "9223372036854775807"
    )
    assert r.call("ZRANDMEMBER", "z", "-9223372036854775808") == full_range
    out_of_range = err("ERR value is out of range")
    for count in ("9223372036854775807", "4611686018427387904", "-4611686018427387904"):
        assert r.call("ZRANDMEMBER", "z", count, "WITHSCORES") == out_of_range
    assert r.call("ZRANDMEMBER", "nokey", "-4611686018427387903", "WITHSCORES") == EMPTY
    r.call("SET", "s", "x")
    assert r.call("ZRANDMEMBER", "s") == WRONGTYPE
    assert r.call("ZRANDMEMBER", "s", 1) == WRONGTYPE
    assert r.call("ZRANDMEMBER", "s", 1, "foo") == SYNTAX


# --- ZUNION / ZINTER / ZDIFF ---------------------------------------------------------------


def test_zunion_zinter_zdiff(r, proto):
    fill(r, "z1", 1, "a", 2, "b", 3, "c")
    fill(r, "z2", 10, "b", 20, "c", 30, "d")
    assert r.call("ZUNION", 2, "z1", "z2", "WITHSCORES") == scored(
        proto, ("a", "1"), ("b", "12"), ("c", "23"), ("d", "30")
    )
    assert r.call("ZINTER", 2, "z1", "z2") == members("b", "c")
    assert r.call("ZDIFF", 2, "z1", "z2", "WITHSCORES") == scored(proto, ("a", "1"))
    assert r.call("ZUNION", 2, "z1", "z2", "WEIGHTS", 2, 3, "WITHSCORES") == scored(
        proto, ("a", "2"), ("b", "34"), ("c", "66"), ("d", "90")
    )
    assert r.call("ZUNION", 2, "z1", "z2", "AGGREGATE", "MIN", "WITHSCORES") == scored(
        proto, ("a", "1"), ("b", "2"), ("c", "3"), ("d", "30")
    )
    assert r.call("ZINTER", 2, "z1", "z2", "aggregate", "max", "WITHSCORES") == scored(
        proto, ("b", "10"), ("c", "20")
    )
    assert r.call("ZUNION", 2, "z1", "z2", "AGGREGATE", "SUM", "AGGREGATE", "MAX") == members(
        "a", "b", "c", "d"
    )
    assert r.call("ZINTER", 2, "z1", "z1", "WEIGHTS", 1, 2, "WITHSCORES") == scored(
        proto, ("a", "3"), ("b", "6"), ("c", "9")
    )
    assert r.call("ZDIFF", 3, "z1", "nokey", "z2") == members("a")
    assert r.call("ZINTER", 2, "z1", "nokey") == EMPTY
    assert r.call("ZDIFF", 1, "nokey") == EMPTY


def test_plain_sets_count_as_score_one(r, proto):
    fill(r, "z", 1, "a", 2, "b", 3, "c")
    r.call("SADD", "s", "c", "d", "e")
    r.call("SADD", "ints", 1, 2)
    assert r.call("ZUNION", 2, "z", "s", "WITHSCORES") == scored(
        proto, ("a", "1"), ("d", "1"), ("e", "1"), ("b", "2"), ("c", "4")
    )
    assert r.call("ZINTER", 2, "s", "z", "WEIGHTS", 5, 1, "WITHSCORES") == scored(proto, ("c", "8"))
    assert r.call("ZUNION", 2, "s", "ints", "WITHSCORES") == scored(
        proto, ("1", "1"), ("2", "1"), ("c", "1"), ("d", "1"), ("e", "1")
    )
    assert r.call("ZDIFF", 2, "s", "z") == members("d", "e")
    assert r.call("ZINTERCARD", 2, "z", "s") == ONE


def test_setop_infinities(r, proto):
    fill(r, "pinf", "inf", "a")
    fill(r, "ninf", "-inf", "a")
    fill(r, "one", 1, "a")
    assert r.call("ZUNION", 2, "pinf", "ninf", "WITHSCORES") == scored(proto, ("a", "0"))
    assert r.call("ZINTER", 2, "pinf", "ninf", "WITHSCORES") == scored(proto, ("a", "0"))
    assert r.call("ZINTER", 2, "pinf", "ninf", "AGGREGATE", "MIN", "WITHSCORES") == scored(
        proto, ("a", "-inf")
    )
    assert r.call("ZUNION", 1, "pinf", "WEIGHTS", 0, "WITHSCORES") == scored(proto, ("a", "0"))
    # inf * 0 from a later input: a union zeroes it first, an intersection sums NaN to 0
    assert r.call("ZUNION", 2, "one", "pinf", "WEIGHTS", 1, 0, "WITHSCORES") == scored(
        proto, ("a", "1")
    )
    assert r.call("ZINTER", 2, "one", "pinf", "WEIGHTS", 1, 0, "WITHSCORES") == scored(
        proto, ("a", "0")
    )
    assert r.call("ZINTER", 2, "one", "pinf", "WEIGHTS", 1, 0, "AGGREGATE", "MAX",
                  "WITHSCORES") == scored(proto, ("a", "1"))
    assert r.call("ZUNION", 1, "one", "WEIGHTS", "inf", "WITHSCORES") == scored(proto, ("a", "inf"))


def test_setop_errors(r):
    fill(r, "z1", 1, "a")
    r.call("SET", "str", "x")
    for name in ("zunion", "zinter", "zdiff", "zintercard"):
        message = f"ERR at least 1 input key is needed for '{name}' command"
        assert r.call(name.upper(), 0, "z1") == err(message)
        assert r.call(name.upper(), -1, "z1") == err(message)
        assert r.call(name.upper(), "x", "z1") == NOT_INT
        assert r.call(name.upper(), 3, "z1") == SYNTAX
        assert r.call(name.upper(), 1, "str") == WRONGTYPE
        assert r.call(name.upper(), 2, "nokey", "str", "foo") == WRONGTYPE  # before options
    for name in ("zunionstore", "zinterstore", "zdiffstore"):
        message = f"ERR at least 1 input key is needed for '{name}' command"
        assert r.call(name.upper(), "d", 0, "z1") == err(message)
        assert r.call(name.upper(), "d", 1, "z1", "WITHSCORES") == SYNTAX
    weight = err("ERR weight value is not a float")
    assert r.call("ZUNION", 2, "z1", "z1", "WEIGHTS", 2, "WITHSCORES") == weight
    assert r.call("ZUNION", 1, "z1", "WEIGHTS", "nan") == weight
    assert r.call("ZUNION", 1, "z1", "WEIGHTS", "1e400") == weight
    assert r.call("ZUNION", 2, "z1", "z1", "WEIGHTS", 2) == SYNTAX
    assert r.call("ZUNION", 1, "z1", "AGGREGATE", "foo") == SYNTAX
    assert r.call("ZUNION", 1, "z1", "AGGREGATE") == SYNTAX
    assert r.call("ZDIFF", 1, "z1", "WEIGHTS", 1) == SYNTAX
    assert r.call("ZDIFF", 1, "z1", "AGGREGATE", "SUM") == SYNTAX
    assert r.call("ZINTERCARD", 1, "z1", "WITHSCORES") == SYNTAX
    assert r.call("ZINTERCARD", 1, "z1", "WEIGHTS", 1) == SYNTAX


def test_setop_store(r, proto):
    fill(r, "z1", 1, "a", 2, "b", 3, "c")
    fill(r, "z2", 10, "b", 20, "c", 30, "d")
    r.call("SET", "d", "string")
    r.call("EXPIRE", "d", 100)
    assert r.call("ZUNIONSTORE", "d", 2, "z1", "z2", "WEIGHTS", 1, 2, "AGGREGATE", "MAX") == (":", 4)
    assert r.call("TTL", "d") == (":", -1)
    assert r.call("ZRANGE", "d", 0, -1, "WITHSCORES") == scored(
        proto, ("a", "1"), ("b", "20"), ("c", "40"), ("d", "60")
    )
    assert r.call("ZINTERSTORE", "d", 2, "z1", "z2") == (":", 2)
    assert r.call("ZRANGE", "d", 0, -1, "WITHSCORES") == scored(proto, ("b", "12"), ("c", "23"))
    assert r.call("ZDIFFSTORE", "d", 2, "z1", "z2") == ONE
    assert r.call("ZDIFFSTORE", "d", 2, "z1", "z1") == ZERO
    assert r.call("EXISTS", "d") == ZERO
    assert r.call("ZUNIONSTORE", "d", 1, "nokey") == ZERO
    assert r.call("ZUNIONSTORE", "z1", 2, "z1", "z2") == (":", 4)  # a source may be the dest


def test_zintercard(r):
    fill(r, "z1", 1, "a", 2, "b", 3, "c")
    fill(r, "z2", 10, "b", 20, "c", 30, "d")
    assert r.call("ZINTERCARD", 2, "z1", "z2") == (":", 2)
    assert r.call("ZINTERCARD", 2, "z1", "z2", "LIMIT", 1) == ONE
    assert r.call("ZINTERCARD", 2, "z1", "z2", "LIMIT", 0) == (":", 2)
    assert r.call("ZINTERCARD", 2, "z1", "nokey") == ZERO
    negative = err("ERR LIMIT can't be negative")
    assert r.call("ZINTERCARD", 2, "z1", "z2", "LIMIT", -1) == negative
    assert r.call("ZINTERCARD", 2, "z1", "z2", "LIMIT", "x") == negative


# --- ZSCAN ---------------------------------------------------------------------------------


def test_zscan_listpack_answers_everything_at_once(r):
    fill(r, "z", 1, "a", 2, "b", 3, "c", 1.5, "dd", 0.1, "e", "-0", "f", "1e300", "g")
    expected = [b"f", b"0", b"e", b"0.1", b"a", b"1", b"dd", b"1.5", b"b", b"2", b"c", b"3",
                b"g", b"1e+300"]
    assert r.call("ZSCAN", "z", 0) == arr(b("0"), arr(*(b(x) for x in expected)))
    assert r.call("ZSCAN", "z", 0, "COUNT", 1, "NOSCORES") == arr(
        b("0"), members("f", "e", "a", "dd", "b", "c", "g")
    )
    assert r.call("ZSCAN", "z", 0, "MATCH", "*d") == arr(b("0"), arr(b("dd"), b("1.5")))
    assert r.call("ZSCAN", "z", 0, "MATCH", "[ab]", "NOSCORES") == arr(b("0"), members("a", "b"))
    assert r.call("ZSCAN", "nokey", 0) == arr(b("0"), EMPTY)
    assert r.call("ZSCAN", "nokey", 0, "foo") == arr(b("0"), EMPTY)


def test_zscan_errors(r):
    fill(r, "z", 1, "a")
    for opts in (("COUNT", 0), ("COUNT", -1), ("MATCH",), ("foo",), ("TYPE", "zset")):
        assert r.call("ZSCAN", "z", 0, *opts) == SYNTAX, opts
    assert r.call("ZSCAN", "z", 0, "COUNT", "x") == NOT_INT
    assert r.call("ZSCAN", "z", 0, "NOVALUES") == err(
        "ERR NOVALUES option can only be used in HSCAN"
    )
    for cursor in ("abc", "-1", "18446744073709551616"):
        assert r.call("ZSCAN", "z", cursor) == err("ERR invalid cursor"), cursor
    assert r.call("ZSCAN", "z", "18446744073709551615")[0] == "*"
    r.call("SET", "s", "x")
    assert r.call("ZSCAN", "s", 0) == WRONGTYPE
    assert r.call("ZSCAN", "s", 0, "foo") == WRONGTYPE
    assert r.call("ZSCAN", "s", "x") == err("ERR invalid cursor")


def test_zscan_skiplist_iterates_every_member_once(r):
    count = 300
    pairs = [x for i in range(count) for x in (i / 10, f"m{i}")]
    r.call("ZADD", "z", *pairs)
    assert r.call("OBJECT", "ENCODING", "z") == b("skiplist")
    seen: dict[bytes, bytes] = {}
    cursor = b"0"
    calls = 0
    while True:
        kind, (next_cursor, items) = r.call("ZSCAN", "z", cursor, "COUNT", 20)
        items = [x[1] for x in items[1]]
        seen.update(zip(items[::2], items[1::2], strict=True))
        calls += 1
        cursor = next_cursor[1]
        if cursor == b"0":
            break
    assert calls > 1
    assert set(seen) == {f"m{i}".encode() for i in range(count)}
    assert seen[b"m1"] == b"0.10000000000000001"  # a skiplist prints scores with %.17g
    assert seen[b"m30"] == b"3"


# --- encodings, events, types --------------------------------------------------------------


def test_encoding_thresholds_and_one_way_conversion(r):
    with zset_limits(r, entries=3, value=3):
        r.call("ZADD", "e1", 1, "a", 2, "b", 3, "c")
        assert r.call("OBJECT", "ENCODING", "e1") == b("listpack")
        r.call("ZADD", "e1", 4, "d")
        assert r.call("OBJECT", "ENCODING", "e1") == b("skiplist")
        r.call("ZREM", "e1", "a", "b", "c")
        assert r.call("OBJECT", "ENCODING", "e1") == b("skiplist")
        r.call("ZADD", "e2", 1, "abcd")
        assert r.call("OBJECT", "ENCODING", "e2") == b("skiplist")
        # the number of pairs in one ZADD counts, even repeats and skipped ones
        r.call("ZADD", "e3", 1, "a", 1, "a", 1, "a", 1, "a")
        assert r.call("OBJECT", "ENCODING", "e3") == b("skiplist")
        r.call("ZADD", "e4", 1, "a")
        r.call("ZADD", "e4", "XX", 1, "a", 2, "b", 3, "c", 4, "d")
        assert r.call("OBJECT", "ENCODING", "e4") == b("skiplist")
        assert r.call("ZCARD", "e4") == ONE
        # stored results are listpacks when they fit
        assert r.call("ZUNIONSTORE", "u", 1, "e1") == ONE
        assert r.call("OBJECT", "ENCODING", "u") == b("listpack")
        r.call("ZADD", "big", 1, "a", 2, "b", 3, "c", 4, "d")
        r.call("ZRANGESTORE", "r1", "big", 0, 2)
        assert r.call("OBJECT", "ENCODING", "r1") == b("listpack")
        r.call("ZRANGESTORE", "r2", "big", 0, -1)
        assert r.call("OBJECT", "ENCODING", "r2") == b("skiplist")
        r.call("ZINTERSTORE", "r3", 1, "e2")
        assert r.call("OBJECT", "ENCODING", "r3") == b("skiplist")
        r.call("COPY", "big", "bigcopy")
        assert r.call("OBJECT", "ENCODING", "bigcopy") == b("skiplist")
        r.call("ZPOPMIN", "big", 3)
        assert r.call("OBJECT", "ENCODING", "big") == b("skiplist")


def test_type_and_wrongtype(r):
    r.call("ZADD", "z", 1, "a")
    assert r.call("TYPE", "z") == ("+", b"zset")
    r.call("SET", "s", "x")
    for args in [("ZCARD", "s"), ("ZSCORE", "s", "a"), ("ZMSCORE", "s", "a"), ("ZREM", "s", "a"),
                 ("ZINCRBY", "s", 1, "a"), ("ZCOUNT", "s", 0, 1), ("ZLEXCOUNT", "s", "-", "+"),
                 ("ZRANGEBYSCORE", "s", 0, 1), ("ZRANGEBYLEX", "s", "-", "+"),
                 ("ZREVRANGE", "s", 0, 1), ("ZPOPMAX", "s"), ("ZRANDMEMBER", "s"),
                 ("ZUNIONSTORE", "d", 1, "s"), ("ZDIFF", 2, "z", "s")]:
        assert r.call(*args) == WRONGTYPE, args
    r.call("LPUSH", "list", "x")
    assert r.call("ZUNION", 1, "list") == WRONGTYPE


def _keyevents(sub, until: bytes) -> list[tuple[bytes, bytes]]:
    events = []
    while True:
        kind, message = sub.read()
        channel, key = message[2][1], message[3][1]
        if key == until:
            return events
        events.append((channel.rsplit(b":", 1)[1], key))


def test_keyspace_events(target):
    with target.raw(2) as r, target.raw(2) as sub:
        r.call("CONFIG", "SET", "notify-keyspace-events", "Egz")
        sub.call("PSUBSCRIBE", "__keyevent@0__:*")
        for command in [
            ("ZADD", "z", 1, "a", 2, "b", 3, "c"), ("ZADD", "z", 1, "a"), ("ZINCRBY", "z", 1, "a"),
            ("ZADD", "z", "INCR", 1, "b"), ("ZREM", "z", "nope"), ("ZREM", "z", "a"),
            ("ZREMRANGEBYRANK", "z", 0, 0), ("ZADD", "z", 1, "a", 2, "b"),
            ("ZREMRANGEBYSCORE", "z", 1, 1), ("ZREMRANGEBYLEX", "z", "[b", "[b"),
            ("ZPOPMIN", "z"), ("ZADD", "z", 1, "a", 2, "b"), ("ZPOPMAX", "z", 5),
            ("ZADD", "z", 1, "a", 2, "b"), ("ZMPOP", 1, "z", "MIN"),
            ("ZUNIONSTORE", "d", 1, "z"), ("ZINTERSTORE", "d", 1, "z"),
            ("ZDIFFSTORE", "d", 1, "z"), ("ZRANGESTORE", "d", "z", 0, 0),
            ("ZRANGESTORE", "d", "z", 5, 6), ("ZUNIONSTORE", "nothing", 1, "nokey"),
            ("ZADD", "end", 1, "x"),
        ]:
            r.call(*command)
        assert _keyevents(sub, b"end") == [
            (b"zadd", b"z"), (b"zincr", b"z"), (b"zincr", b"z"), (b"zrem", b"z"),
            (b"zremrangebyrank", b"z"), (b"zadd", b"z"), (b"zremrangebyscore", b"z"),
            (b"zremrangebylex", b"z"), (b"zpopmin", b"z"), (b"del", b"z"), (b"zadd", b"z"),
            (b"zpopmax", b"z"), (b"del", b"z"), (b"zadd", b"z"), (b"zpopmin", b"z"),
            (b"zunionstore", b"d"), (b"zinterstore", b"d"), (b"zdiffstore", b"d"),
            (b"zrangestore", b"d"), (b"del", b"d"),
        ]


# --- the same random histories on both servers -----------------------------------------------

_MEMBERS = st.sampled_from(["a", "b", "c", "d", "e", "ab", "", "B"])
_SCORES = st.sampled_from(["0", "1", "-1", "2.5", "0.1", "-0", "inf", "-inf", "1e300", "3"])
_BOUNDS = st.sampled_from(["-inf", "+inf", "0", "1", "(1", "2.5", "(0.1", "-1", "(3", "x"])
_LEX = st.sampled_from(["-", "+", "[a", "(a", "[b", "(c", "[d", "[", "(", "a"])
_INDEX = st.integers(-7, 7)
_OPTS = st.sampled_from([(), ("NX",), ("XX",), ("GT",), ("LT",), ("CH",), ("XX", "GT", "CH"),
                         ("INCR",), ("NX", "INCR"), ("LT", "INCR")])

_COMMANDS = st.one_of(
    st.tuples(st.just("ZADD"), _OPTS, st.lists(st.tuples(_SCORES, _MEMBERS), min_size=1,
                                                max_size=3)).map(
        lambda t: ("ZADD", "k", *t[1], *(x for pair in t[2] for x in pair))),
    st.tuples(_SCORES, _MEMBERS).map(lambda t: ("ZINCRBY", "k", *t)),
    st.lists(_MEMBERS, min_size=1, max_size=3).map(lambda ms: ("ZREM", "k", *ms)),
    st.tuples(_INDEX, _INDEX).map(lambda t: ("ZREMRANGEBYRANK", "k", *t)),
    st.tuples(_BOUNDS, _BOUNDS).map(lambda t: ("ZREMRANGEBYSCORE", "k", *t)),
    st.tuples(_LEX, _LEX).map(lambda t: ("ZREMRANGEBYLEX", "k", *t)),
    st.tuples(_INDEX, _INDEX, st.booleans()).map(
        lambda t: ("ZRANGE", "k", t[0], t[1], "WITHSCORES", *(("REV",) if t[2] else ()))),
    st.tuples(_BOUNDS, _BOUNDS, st.booleans(), _INDEX, _INDEX).map(
        lambda t: ("ZRANGE", "k", t[0], t[1], "BYSCORE", "WITHSCORES",
                   *(("REV",) if t[2] else ()), "LIMIT", t[3], t[4])),
    st.tuples(_LEX, _LEX, st.booleans(), _INDEX, _INDEX).map(
        lambda t: ("ZRANGE", "k", t[0], t[1], "BYLEX", *(("REV",) if t[2] else ()),
                   "LIMIT", t[3], t[4])),
    st.tuples(_BOUNDS, _BOUNDS).map(lambda t: ("ZCOUNT", "k", *t)),
    st.tuples(_LEX, _LEX).map(lambda t: ("ZLEXCOUNT", "k", *t)),
    _MEMBERS.map(lambda m: ("ZREVRANK", "k", m, "WITHSCORE")),
    st.integers(0, 3).map(lambda n: ("ZPOPMIN", "k", n)),
    st.just(("ZSCAN", "k", 0)),
)


@pytest.fixture(scope="module")
def both_targets(pytestconfig: pytest.Config) -> tuple[Target, Target]:
    """fakekey and valkey side by side (the instances the conformance fixture shares)."""
    if os.environ.get("FAKEKEY_TARGET_URL") or "valkey" not in os.environ.get(
        "FAKEKEY_TARGETS", "valkey"
    ):
        pytest.skip("compares fakekey with a valkey-server the suite starts")
    conftest = pytestconfig.pluginmanager.get_plugin(str(Path(__file__).with_name("conftest.py")))
    assert conftest is not None, "tests/conformance/conftest.py is not loaded"
    return conftest._started_target("fakekey"), conftest._started_target("valkey")


# Over members with different scores a skiplist's lex search depends on its random
# levels, and its ZSCAN order on hashing: those are compared with a listpack only.
_ORDER_DEPENDENT = ("BYLEX", "ZLEXCOUNT", "ZREMRANGEBYLEX", "ZSCAN")


@given(
    history=st.lists(_COMMANDS, min_size=1, max_size=25),
    proto=st.sampled_from([2, 3]),
    skiplist=st.booleans(),
)
def test_random_histories_agree_with_valkey(both_targets, history, proto, skiplist):
    fake, real = both_targets
    if skiplist:
        history = [cmd for cmd in history if not set(_ORDER_DEPENDENT) & set(cmd)]
    with fake.raw(proto) as f, real.raw(proto) as v:
        for client in (f, v):
            client.call("FLUSHALL")
            client.call("CONFIG", "SET", "zset-max-listpack-entries", 0 if skiplist else 128)
        try:
            for command in history:
                assert f.call(*command) == v.call(*command), command
            final = ("ZRANGE", "k", 0, -1, "WITHSCORES")
            assert f.call(*final) == v.call(*final)
        finally:
            for client in (f, v):
                client.call("CONFIG", "SET", "zset-max-listpack-entries", 128)
