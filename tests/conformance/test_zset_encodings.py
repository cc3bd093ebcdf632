"""Small sorted sets across their encodings: what a listpack sorted set answers at the
edges of fakekey's packed form (many members, long ones, binary and empty members,
special scores, thresholds raised by CONFIG), and the conversion at Valkey's thresholds,
on both targets. The packed form itself: tests/fakekey/test_packed_values.py."""

import pytest


def encoding(r, key):
    return r.call("OBJECT", "ENCODING", key)[1]


def with_scores(r, proto, *args):
    """ZRANGE ... WITHSCORES as (member, score text) pairs."""
    kind, items = r.call("ZRANGE", *args, "WITHSCORES")
    assert kind == "*"
    if proto == 3:
        return [(m[1], s[1]) for m, s in (pair[1] for pair in items)]
    values = [item[1] for item in items]
    return list(zip(values[0::2], values[1::2], strict=True))


@pytest.fixture
def limits(r2):
    """Set zset-max-listpack-entries/-value for one test; the defaults come back after."""

    def configure(entries=128, value=64):
        assert r2.call("CONFIG", "SET", "zset-max-listpack-entries", str(entries),
                       "zset-max-listpack-value", str(value)) == ("+", b"OK")

    yield configure
    configure()


def test_order_by_score_then_member_with_special_scores(r, proto):
    entries = ["+inf", "top", "-inf", "bottom", "0", "zero", "-0", "negzero", "1.5", "b",
               "1.5", "a", "-2.5e-300", "tiny", "1e300", "huge", "-1", "", "1.5", "\x00"]
    assert r.call("ZADD", "z", *entries) == (":", 10)
    assert encoding(r, "z") == b"listpack"
    got = [m for m, _ in with_scores(r, proto, "z", 0, -1)]
    assert got == [b"bottom", b"", b"tiny", b"negzero", b"zero", b"\x00", b"a", b"b", b"huge", b"top"]
    assert r.call("ZSCORE", "z", "negzero")[1] == b"0"  # a listpack keeps -0 as 0
    assert r.call("ZRANK", "z", "a") == (":", 6)
    assert r.call("ZREVRANK", "z", "a") == (":", 3)
    assert r.call("ZCOUNT", "z", "(0", "+inf") == (":", 5)


def test_updates_move_members_and_counters(r, proto):
    assert r.call("ZADD", "z", 1, "a", 2, "b", 3, "c") == (":", 3)
    assert r.call("ZADD", "z", 10, "a") == (":", 0)
    assert r.call("ZINCRBY", "z", -20, "c")[1] == b"-17"
    assert [m for m, _ in with_scores(r, proto, "z", 0, -1)] == [b"c", b"b", b"a"]
    assert r.call("ZADD", "z", "GT", "CH", 5, "a", 5, "b") == (":", 1)
    assert [m for m, _ in with_scores(r, proto, "z", 0, -1)] == [b"c", b"b", b"a"]
    assert r.call("ZREM", "z", "b", "nope") == (":", 1)
    r.call("ZPOPMAX", "z")
    assert with_scores(r, proto, "z", 0, -1) == [(b"c", b"-17")]


def test_many_members_with_raised_limits_stay_listpack(r, proto, limits):
    limits(entries=1000)
    members = [(i % 17, b"m%03d" % i) for i in range(300)]
    assert r.call("ZADD", "z", *[x for s, m in members for x in (s, m)]) == (":", 300)
    assert r.call("ZREMRANGEBYRANK", "z", 0, 9) == (":", 10)
    assert r.call("ZREMRANGEBYSCORE", "z", 16, 16) == (":", 17)
    assert encoding(r, "z") == b"listpack"
    expected = sorted(members)[10:]
    expected = [(s, m) for s, m in expected if s != 16]
    assert [m for m, _ in with_scores(r, proto, "z", 0, -1)] == [m for _, m in expected]
    assert r.call("ZRANK", "z", expected[100][1]) == (":", 100)


def test_limits_then_one_more_member_converts(r, proto, limits):
    limits(entries=5, value=10)
    assert r.call("ZADD", "z", 1, "a", 2, "b", 3, "c", 4, "d", 5, "e") == (":", 5)
    assert encoding(r, "z") == b"listpack"
    assert r.call("ZADD", "z", 9, "f") == (":", 1)
    assert encoding(r, "z") == b"skiplist"
    assert r.call("ZREM", "z", "f", "e") == (":", 2)
    assert encoding(r, "z") == b"skiplist"  # never back while it lives
    assert r.call("ZADD", "long", 1, "x" * 11) == (":", 1)
    assert encoding(r, "long") == b"skiplist"
    payload = r.call("DUMP", "z")[1]
    assert r.call("RESTORE", "back", 0, payload) == ("+", b"OK")
    assert encoding(r, "back") == b"listpack"  # loaded from its content
    assert with_scores(r, proto, "back", 0, -1) == with_scores(r, proto, "z", 0, -1)


def test_long_members_in_a_listpack(r, proto, limits):
    limits(value=1000)
    long_member = b"L" * 300
    assert r.call("ZADD", "z", 2, "a", 1, long_member, 3, "b") == (":", 3)
    assert encoding(r, "z") == b"listpack"
    assert [m for m, _ in with_scores(r, proto, "z", 0, -1)] == [long_member, b"a", b"b"]
    assert r.call("ZRANK", "z", long_member) == (":", 0)


def test_listpack_dump_is_valkeys_bytes(r):
    assert r.call("ZADD", "z", 1.5, "a", -3, "b", 0, "", 1e20, "c") == (":", 4)
    assert r.call("DUMP", "z") == ("$", EXPECTED_DUMP)
    assert r.call("RESTORE", "copy", 0, EXPECTED_DUMP) == ("+", b"OK")
    assert r.call("DEBUG", "DIGEST-VALUE", "copy") == r.call("DEBUG", "DIGEST-VALUE", "z")


# Valkey 9.1.2's DUMP of that sorted set (a listpack, RDB version 11)
EXPECTED_DUMP = (b"\x11##\x00\x00\x00\x08\x00\x81b\x02\xdf\xfd\x02\x80\x01\x00\x01\x81a\x02\x831.5\x04"
                 b"\x81c\x02\x851e+20\x06\xffP\x00\x9a[\x17\xad\x8d\xe1\x1a\x15")
