"""Small sets across their encodings: what intset and listpack sets answer at the edges
of fakekey's packed form (many members, long ones, binary and empty strings, thresholds
raised by CONFIG), and the conversions at Valkey's thresholds, on both targets. The
packed form itself: tests/fakekey/test_packed_values.py."""

import random

import pytest


def encoding(r, key):
    return r.call("OBJECT", "ENCODING", key)[1]


def members(r, key):
    kind, items = r.call("SMEMBERS", key)
    assert kind in ("*", "~")
    return [item[1] for item in items]


@pytest.fixture
def limits(r2):
    """Set the set-max-* thresholds for one test; the defaults come back after."""

    def configure(intset=512, entries=128, value=64):
        assert r2.call("CONFIG", "SET", "set-max-intset-entries", str(intset),
                       "set-max-listpack-entries", str(entries),
                       "set-max-listpack-value", str(value)) == ("+", b"OK")

    yield configure
    configure()


def test_an_intset_of_many_members_iterates_ascending(r):
    numbers = random.Random(7).sample(range(-10**6, 10**6), 300)
    for n in numbers:
        assert r.call("SADD", "s", n) == (":", 1)
    assert r.call("SREM", "s", numbers[0], numbers[1]) == (":", 2)
    assert encoding(r, "s") == b"intset"
    assert members(r, "s") == [b"%d" % n for n in sorted(numbers[2:])]
    assert r.call("SISMEMBER", "s", numbers[5]) == (":", 1)
    assert r.call("SISMEMBER", "s", numbers[0]) == (":", 0)


def test_an_intset_becomes_a_listpack_in_ascending_order(r, limits):
    limits(entries=1000)
    numbers = [5, -3, 200, 17, 0, 9999999999]
    for n in numbers:
        assert r.call("SADD", "s", n) == (":", 1)
    assert r.call("SADD", "s", "x", "-1") == (":", 2)
    assert encoding(r, "s") == b"listpack"
    assert members(r, "s") == [b"%d" % n for n in sorted(numbers)] + [b"x", b"-1"]


def test_a_listpack_of_many_members_keeps_insertion_order(r, limits):
    limits(entries=1000)
    order = [b"m%d" % i for i in range(300)]
    assert r.call("SADD", "s", *order) == (":", 300)
    for i in range(0, 300, 9):
        assert r.call("SREM", "s", order[i]) == (":", 1)
    assert r.call("SADD", "s", order[0]) == (":", 1)  # set again: goes last
    expected = [m for i, m in enumerate(order) if i % 9] + [order[0]]
    assert encoding(r, "s") == b"listpack"
    assert members(r, "s") == expected
    assert r.call("SCARD", "s") == (":", len(expected))


def test_listpack_limits_then_one_more_member_converts(r, limits):
    limits(entries=20)
    assert r.call("SADD", "s", *[b"m%d" % i for i in range(20)]) == (":", 20)
    assert encoding(r, "s") == b"listpack"
    assert r.call("SADD", "s", "m3") == (":", 0)
    assert encoding(r, "s") == b"listpack"
    assert r.call("SADD", "s", "one-more") == (":", 1)
    assert encoding(r, "s") == b"hashtable"
    assert r.call("SREM", "s", "one-more", "m0", "m1") == (":", 3)
    assert encoding(r, "s") == b"hashtable"  # never back while it lives
    assert sorted(members(r, "s")) == sorted(b"m%d" % i for i in range(2, 20))


def test_long_members_in_a_listpack_set(r, limits):
    limits(value=1000)
    long_member = b"L" * 300
    assert r.call("SADD", "s", "a", long_member, "b") == (":", 3)
    assert encoding(r, "s") == b"listpack"
    assert members(r, "s") == [b"a", long_member, b"b"]
    assert r.call("SISMEMBER", "s", long_member) == (":", 1)
    assert r.call("SADD", "s", b"w" * 1001) == (":", 1)
    assert encoding(r, "s") == b"hashtable"


def test_binary_and_empty_members(r):
    items = [b"", b"\x00", b"\x01\x00", b"\xff\xff", b"\x02", b"\x01", b"text"]
    assert r.call("SADD", "s", *items) == (":", len(items))
    assert encoding(r, "s") == b"listpack"
    assert members(r, "s") == items
    for item in items:
        assert r.call("SISMEMBER", "s", item) == (":", 1)
    assert r.call("SISMEMBER", "s", b"ext") == (":", 0)
    assert r.call("SREM", "s", b"", b"\x01") == (":", 2)
    assert members(r, "s") == [b"\x00", b"\x01\x00", b"\xff\xff", b"\x02", b"text"]
    picked = r.call("SRANDMEMBER", "s", 3)[1]
    assert len({p[1] for p in picked}) == 3


def test_spop_and_smove_on_small_sets(r):
    assert r.call("SADD", "s", "a", "b", "c", "d") == (":", 4)
    popped = r.call("SPOP", "s")[1]
    assert popped in (b"a", b"b", b"c", b"d")
    assert r.call("SCARD", "s") == (":", 3)
    left = members(r, "s")
    assert r.call("SMOVE", "s", "t", left[0]) == (":", 1)
    assert members(r, "t") == [left[0]]
    assert members(r, "s") == left[1:]
    assert encoding(r, "t") == b"listpack"


def test_dumps_are_valkeys_bytes(r):
    assert r.call("SADD", "ints", 3, -2, 1000000, 7) == (":", 4)
    assert r.call("SADD", "words", "b", "", "a", "\x00") == (":", 4)
    for key, payload in EXPECTED_DUMPS.items():
        assert r.call("DUMP", key) == ("$", payload), key
        assert r.call("RESTORE", key + "-copy", 0, payload) == ("+", b"OK")
        assert members(r, key + "-copy") == members(r, key)
        assert encoding(r, key + "-copy") == encoding(r, key)


# Valkey 9.1.2's DUMPs of those sets (an intset, a listpack; RDB version 11)
EXPECTED_DUMPS = {
    "ints": (b"\x0b\x18\x04\x00\x00\x00\x04\x00\x00\x00\xfe\xff\xff\xff\x03\x00\x00\x00\x07\x00\x00\x00"
             b"@B\x0f\x00P\x00\xc9\xf5\xa0\x99@W[f"),
    "words": (b"\x14\x12\x12\x00\x00\x00\x04\x00\x81b\x02\x80\x01\x81a\x02\x81\x00\x02\xffP\x00"
              b"\xd01_\xf5~B\xc8x"),
}
