"""Small hashes across their encodings: what a listpack hash answers at the edges of
fakekey's packed form (many fields, long items, binary and empty strings, thresholds
raised by CONFIG), the one-way conversion at Valkey's thresholds, and a hashtable hash
that shrank coming back as a listpack through DUMP/RESTORE and DEBUG RELOAD, on both
targets. The packed form itself: tests/fakekey/test_packed_values.py."""

import pytest


def encoding(r, key):
    return r.call("OBJECT", "ENCODING", key)[1]


def flat(pairs):
    return [x for pair in pairs for x in pair]


def hgetall_pairs(r, proto, key):
    """HGETALL as a list of (field, value), in the server's order."""
    kind, items = r.call("HGETALL", key)
    if proto == 3:
        assert kind == "%"
        return [(f[1], v[1]) for f, v in items]
    assert kind == "*"
    values = [item[1] for item in items]
    return list(zip(values[0::2], values[1::2], strict=True))


@pytest.fixture
def limits(r2):
    """Set hash-max-listpack-entries/-value for one test; the defaults come back after."""

    def configure(entries=512, value=64):
        assert r2.call("CONFIG", "SET", "hash-max-listpack-entries", str(entries),
                       "hash-max-listpack-value", str(value)) == ("+", b"OK")

    yield configure
    configure()


def test_order_kept_by_a_listpack_hash_of_many_fields(r, proto, limits):
    """Past 128 fields (where fakekey leaves its packed form) the hash is still a
    listpack: insertion order, overwrites in place, a field set again goes last."""
    limits(entries=1000)
    model = {}
    for i in range(300):
        field, value = b"f%d" % i, b"v%d" % i
        assert r.call("HSET", "h", field, value) == (":", 1)
        model[field] = value
    for i in range(0, 300, 7):
        assert r.call("HSET", "h", b"f%d" % i, b"new%d" % i) == (":", 0)
        model[b"f%d" % i] = b"new%d" % i
    for i in range(1, 300, 11):
        assert r.call("HDEL", "h", b"f%d" % i) == (":", 1)
        del model[b"f%d" % i]
    assert r.call("HSET", "h", b"f1", b"back") == (":", 1)
    model[b"f1"] = b"back"
    assert encoding(r, "h") == b"listpack"
    assert hgetall_pairs(r, proto, "h") == list(model.items())
    assert r.call("HLEN", "h") == (":", len(model))
    assert r.call("HGET", "h", "f7") == ("$", b"new7")


def test_listpack_limits_then_one_more_field_converts(r, proto, limits):
    limits(entries=200)
    pairs = [(b"f%d" % i, b"%d" % i) for i in range(200)]
    assert r.call("HSET", "h", *flat(pairs)) == (":", 200)
    assert encoding(r, "h") == b"listpack"
    assert hgetall_pairs(r, proto, "h") == pairs
    assert r.call("HSET", "h", "f0", "again") == (":", 0)  # no new field: stays
    assert encoding(r, "h") == b"listpack"
    assert r.call("HSET", "h", "one-more", "x") == (":", 1)
    assert encoding(r, "h") == b"hashtable"
    assert r.call("HDEL", "h", "one-more", "f1", "f2") == (":", 3)
    assert encoding(r, "h") == b"hashtable"  # never back while it lives
    got = dict(hgetall_pairs(r, proto, "h"))
    assert got == dict([(b"f0", b"again"), *pairs[3:]])


def test_long_items_in_a_listpack_hash(r, proto, limits):
    """Items longer than a length byte holds, allowed in a listpack by a raised limit."""
    limits(value=1000)
    long_value, long_field = b"v" * 300, b"F" * 256
    assert r.call("HSET", "h", "a", "1", long_field, "2", "b", long_value) == (":", 3)
    assert encoding(r, "h") == b"listpack"
    assert hgetall_pairs(r, proto, "h") == [(b"a", b"1"), (long_field, b"2"), (b"b", long_value)]
    assert r.call("HSTRLEN", "h", "b") == (":", 300)
    assert r.call("HSET", "h", "c", b"w" * 1001) == (":", 1)
    assert encoding(r, "h") == b"hashtable"
    assert r.call("HGET", "h", long_field) == ("$", b"2")


def test_binary_and_empty_fields_and_values(r, proto):
    """Bytes that look like lengths, NULs, an empty field and an empty value."""
    pairs = [(b"", b"empty field"), (b"\x00", b""), (b"\x01\x00", b"\x03abc"),
             (b"\xff\xff", b"\x00\x00\x00"), (b"\x02", b"\x01"), (b"\x01", b"\x02")]
    assert r.call("HSET", "h", *flat(pairs)) == (":", len(pairs))
    assert encoding(r, "h") == b"listpack"
    assert hgetall_pairs(r, proto, "h") == pairs
    for field, value in pairs:
        assert r.call("HGET", "h", field) == ("$", value)
        assert r.call("HEXISTS", "h", field) == (":", 1)
    assert r.call("HEXISTS", "h", b"\x03") == (":", 0)
    assert r.call("HEXISTS", "h", b"abc") == (":", 0)  # inside a value, not a field
    assert r.call("HGET", "h", b"empty field")[1] is None
    assert r.call("HDEL", "h", b"\x00", b"") == (":", 2)
    assert hgetall_pairs(r, proto, "h") == pairs[2:]
    assert r.call("HSET", "h", b"\x01", b"") == (":", 0)
    assert r.call("HGET", "h", b"\x01") == ("$", b"")


def test_counters_and_setnx_on_a_listpack_hash(r, proto):
    assert r.call("HSET", "h", "n", "10", "x", "1.5", "s", "text") == (":", 3)
    assert r.call("HINCRBY", "h", "n", 5) == (":", 15)
    assert r.call("HINCRBY", "h", "new", -2) == (":", -2)
    assert r.call("HINCRBYFLOAT", "h", "x", "0.25")[1] == b"1.75"
    assert r.call("HSETNX", "h", "s", "other") == (":", 0)
    assert r.call("HSETNX", "h", "t", "v") == (":", 1)
    assert encoding(r, "h") == b"listpack"
    assert hgetall_pairs(r, proto, "h") == [(b"n", b"15"), (b"x", b"1.75"), (b"s", b"text"),
                                            (b"new", b"-2"), (b"t", b"v")]


def test_a_field_ttl_converts_and_keeps_the_order(r, proto):
    pairs = [(b"f%d" % i, b"v%d" % i) for i in range(5)]
    assert r.call("HSET", "h", *flat(pairs)) == (":", 5)
    assert r.call("HEXPIRE", "h", 1000, "FIELDS", 1, "f2") == ("*", [(":", 1)])
    assert encoding(r, "h") == b"hashtable"
    assert r.call("HPERSIST", "h", "FIELDS", 1, "f2") == ("*", [(":", 1)])
    assert encoding(r, "h") == b"hashtable"
    assert sorted(hgetall_pairs(r, proto, "h")) == pairs


def test_a_shrunk_hashtable_comes_back_as_listpack_through_restore(r, proto, limits):
    limits(entries=4)
    pairs = [(b"f%d" % i, b"v%d" % i) for i in range(6)]
    assert r.call("HSET", "h", *flat(pairs)) == (":", 6)
    assert encoding(r, "h") == b"hashtable"
    assert r.call("HDEL", "h", "f0", "f1", "f2") == (":", 3)
    payload = r.call("DUMP", "h")[1]
    assert r.call("RESTORE", "copy", 0, payload) == ("+", b"OK")
    assert encoding(r, "copy") == b"listpack"
    assert dict(hgetall_pairs(r, proto, "copy")) == dict(pairs[3:])
    assert r.call("DEBUG", "DIGEST-VALUE", "copy") == r.call("DEBUG", "DIGEST-VALUE", "h")
    listpack_dump = r.call("DUMP", "copy")[1]
    assert r.call("RESTORE", "again", 0, listpack_dump) == ("+", b"OK")
    assert r.call("DUMP", "again")[1] == listpack_dump


def test_listpack_dump_is_valkeys_bytes(r):
    assert r.call("HSET", "h", "a", "1", "", "", b"\x00", "x" * 64) == (":", 3)
    assert r.call("DUMP", "h") == ("$", EXPECTED_DUMP)
    assert r.call("DEL", "h") == (":", 1)
    assert r.call("RESTORE", "h", 0, EXPECTED_DUMP) == ("+", b"OK")
    assert encoding(r, "h") == b"listpack"
    assert r.call("HGET", "h", b"\x00") == ("$", b"x" * 64)


def test_debug_reload_keeps_encodings_and_order(r, proto, limits):
    limits(entries=3)
    assert r.call("HSET", "small", "b", "2", "a", "1") == (":", 2)
    assert r.call("HSET", "big", "a", "1", "b", "2", "c", "3", "d", "4") == (":", 4)
    assert r.call("HDEL", "big", "a", "b") == (":", 2)
    assert r.call("DEBUG", "RELOAD") == ("+", b"OK")
    assert encoding(r, "small") == b"listpack"
    assert hgetall_pairs(r, proto, "small") == [(b"b", b"2"), (b"a", b"1")]
    assert encoding(r, "big") == b"listpack"  # loaded from its content
    assert sorted(hgetall_pairs(r, proto, "big")) == [(b"c", b"3"), (b"d", b"4")]


# Valkey 9.1.2's DUMP of that hash (a listpack, RDB version 11)
EXPECTED_DUMP = (b"\x10\xc3\x1c@V\x0bV\x00\x00\x00\x06\x00\x81a\x02\x01\x01\x80 \x01\x05\x81\x00\x02"
                 b"\xe0@x\xe06\x00\x01B\xffP\x00\x87\xedJ\xf4\xf3\xba\x14\xdb")
