"""Hashes: every command, its options and errors, field expiry included, replies pinned
to wire types in RESP2 and RESP3. Orders are pinned where Valkey's is deterministic (a
listpack hash iterates in insertion order) and compared as sets where it is not
(hashtable). Field expiry in real time is kept to one short wait; the frozen-clock tests
at the end are fakekey-only."""

import time

import pytest

from fakekey.core.client import Client
from fakekey.core.field_expiry import expire_fields_some
from fakekey.net.server import new_state

WRONGTYPE = ("-", b"WRONGTYPE Operation against a key holding the wrong kind of value")
NOT_INT = ("-", b"ERR value is not an integer or out of range")
NOT_FLOAT = ("-", b"ERR value is not a valid float")
SYNTAX = ("-", b"ERR syntax error")
NUMFIELDS = ("-", b"ERR numfields should be greater than 0 and match the provided number of fields")
INVALID_CURSOR = ("-", b"ERR invalid cursor")
FAR_MS = 99999999999999  # a unix time in ms far in the future (year 5138)


def null(proto):
    return ("$", None) if proto == 2 else ("_", None)


def bulks(*items):
    return ("*", [("$", i if isinstance(i, bytes) else i.encode()) for i in items])


def ints(*values):
    return ("*", [(":", v) for v in values])


def as_map(proto, *pairs):
    """HGETALL's reply: a map in RESP3, a flat array in RESP2."""
    items = [(("$", f.encode()), ("$", v.encode())) for f, v in pairs]
    if proto == 3:
        return ("%", items)
    return ("*", [x for pair in items for x in pair])


def encoding(r, key):
    return r.call("OBJECT", "ENCODING", key)[1]


def invalid_expire(name):
    return ("-", f"ERR invalid expire time in '{name}' command".encode())


@pytest.fixture
def listpack_limits(r2):
    """Set hash-max-listpack-entries/-value for one test; the defaults come back after."""

    def configure(entries=512, value=64):
        assert r2.call(
            "CONFIG", "SET", "hash-max-listpack-entries", str(entries),
            "hash-max-listpack-value", str(value),
        ) == ("+", b"OK")

    yield configure
    configure()


# --- HSET, HMSET, HSETNX, HGET, HMGET --------------------------------------------------------


def test_hset_counts_new_fields_and_hget_reads(r, proto):
    assert r.call("HSET", "h", "a", "1", "b", "2") == (":", 2)
    assert r.call("HSET", "h", "a", "10", "c", "3") == (":", 1)
    assert r.call("HSET", "h", "a", "11", "a", "12") == (":", 0)
    assert r.call("HGET", "h", "a") == ("$", b"12")
    assert r.call("HGET", "h", "zz") == null(proto)
    assert r.call("HGET", "nokey", "a") == null(proto)
    assert r.call("HSET", "h", "", "") == (":", 1)
    assert r.call("HGET", "h", "") == ("$", b"")


def test_hmset_answers_ok(r):
    assert r.call("HMSET", "h", "a", "1", "b", "2") == ("+", b"OK")
    assert r.call("HMSET", "h", "a", "3") == ("+", b"OK")
    assert r.call("HMGET", "h", "a", "b") == bulks("3", "2")


def test_hset_and_hmset_need_pairs(r):
    for name in ("HSET", "HMSET"):
        error = ("-", f"ERR wrong number of arguments for '{name.lower()}' command".encode())
        assert r.call(name, "h", "a") == error
        assert r.call(name, "h", "a", "1", "b") == error
    assert r.call("SET", "s", "v") == ("+", b"OK")
    assert r.call("HSET", "s", "a", "1", "b") == ("-", b"ERR wrong number of arguments for 'hset' command")
    assert r.call("EXISTS", "h") == (":", 0)


def test_hsetnx(r):
    assert r.call("HSETNX", "h", "a", "1") == (":", 1)
    assert r.call("HSETNX", "h", "a", "2") == (":", 0)
    assert r.call("HSETNX", "h", "b", "3") == (":", 1)
    assert r.call("HMGET", "h", "a", "b") == bulks("1", "3")


def test_hmget_answers_null_for_each_missing_field(r, proto):
    r.call("HSET", "h", "a", "1", "b", "2")
    assert r.call("HMGET", "h", "a", "zz", "b", "a") == (
        "*", [("$", b"1"), null(proto), ("$", b"2"), ("$", b"1")])
    assert r.call("HMGET", "nokey", "a", "b") == ("*", [null(proto), null(proto)])


# --- HGETALL, HKEYS, HVALS and the listpack order ---------------------------------------------


def test_hgetall_is_a_map_in_resp3_and_flat_in_resp2(r, proto):
    r.call("HSET", "h", "a", "1", "b", "2", "c", "3")
    assert r.call("HGETALL", "h") == as_map(proto, ("a", "1"), ("b", "2"), ("c", "3"))
    assert r.call("HGETALL", "nokey") == as_map(proto)
    assert r.call("HKEYS", "h") == bulks("a", "b", "c")
    assert r.call("HVALS", "h") == bulks("1", "2", "3")
    assert r.call("HKEYS", "nokey") == ("*", [])
    assert r.call("HVALS", "nokey") == ("*", [])


def test_listpack_order_overwrite_keeps_place_readd_goes_last(r, proto):
    r.call("HSET", "h", "a", "1", "b", "2", "c", "3")
    r.call("HSET", "h", "a", "10")
    assert r.call("HKEYS", "h") == bulks("a", "b", "c")
    r.call("HDEL", "h", "a")
    r.call("HSET", "h", "a", "11", "d", "4")
    assert encoding(r, "h") == b"listpack"
    assert r.call("HGETALL", "h") == as_map(
        proto, ("b", "2"), ("c", "3"), ("a", "11"), ("d", "4"))
    assert r.call("HVALS", "h") == bulks("2", "3", "11", "4")


def test_hashtable_holds_every_field(r, proto, listpack_limits):
    listpack_limits(entries=2)
    r.call("HSET", "h", "a", "1", "b", "2", "c", "3")
    assert encoding(r, "h") == b"hashtable"
    kind, items = r.call("HGETALL", "h")
    pairs = items if proto == 3 else list(zip(items[::2], items[1::2], strict=True))
    assert kind == ("%" if proto == 3 else "*")
    assert sorted(pairs) == [(("$", b"a"), ("$", b"1")), (("$", b"b"), ("$", b"2")),
                             (("$", b"c"), ("$", b"3"))]
    assert sorted(r.call("HKEYS", "h")[1]) == [("$", b"a"), ("$", b"b"), ("$", b"c")]


# --- HDEL, HLEN, HEXISTS, HSTRLEN ------------------------------------------------------------


def test_hdel_counts_and_deletes_the_emptied_hash(r):
    r.call("HSET", "h", "a", "1", "b", "2", "c", "3")
    assert r.call("HDEL", "h", "a", "zz", "a") == (":", 1)
    assert r.call("HLEN", "h") == (":", 2)
    assert r.call("HDEL", "h", "b", "c", "d") == (":", 2)
    assert r.call("EXISTS", "h") == (":", 0)
    assert r.call("HDEL", "nokey", "a") == (":", 0)


def test_hlen_hexists_hstrlen(r):
    r.call("HSET", "h", "a", "hello", "n", "-123", "e", "")
    assert r.call("HLEN", "h") == (":", 3)
    assert r.call("HLEN", "nokey") == (":", 0)
    assert r.call("HEXISTS", "h", "a") == (":", 1)
    assert r.call("HEXISTS", "h", "zz") == (":", 0)
    assert r.call("HEXISTS", "nokey", "a") == (":", 0)
    assert r.call("HSTRLEN", "h", "a") == (":", 5)
    assert r.call("HSTRLEN", "h", "n") == (":", 4)
    assert r.call("HSTRLEN", "h", "e") == (":", 0)
    assert r.call("HSTRLEN", "h", "zz") == (":", 0)
    assert r.call("HSTRLEN", "nokey", "a") == (":", 0)


# --- HINCRBY, HINCRBYFLOAT ------------------------------------------------------------------


def test_hincrby(r):
    assert r.call("HINCRBY", "h", "n", "5") == (":", 5)
    assert r.call("HINCRBY", "h", "n", "-7") == (":", -2)
    r.call("HSET", "h", "m", "9223372036854775806")
    assert r.call("HINCRBY", "h", "m", "1") == (":", 9223372036854775807)
    assert r.call("HGET", "h", "m") == ("$", b"9223372036854775807")


def test_hincrby_errors(r):
    overflow = ("-", b"ERR increment or decrement would overflow")
    not_hash_int = ("-", b"ERR hash value is not an integer")
    r.call("HSET", "h", "max", "9223372036854775807", "min", "-9223372036854775808",
           "s", "abc", "f", "1.5", "sp", " 1", "z", "007", "neg", "-0",
           "big", "99999999999999999999")
    assert r.call("HINCRBY", "h", "max", "1") == overflow
    assert r.call("HINCRBY", "h", "min", "-1") == overflow
    assert r.call("HINCRBY", "h", "min", "9223372036854775807") == (":", -1)
    for field in ("s", "f", "sp", "z", "neg", "big"):
        assert r.call("HINCRBY", "h", field, "1") == not_hash_int, field
    for incr in ("x", "1.5", "", "9223372036854775808", " 1"):
        assert r.call("HINCRBY", "h", "new", incr) == NOT_INT, incr
    assert r.call("HEXISTS", "h", "new") == (":", 0)


@pytest.mark.parametrize(("start", "incr", "result"), [
    (None, "1.5", b"1.5"),
    ("0.1", "0.2", b"0.3"),
    ("10.5", "-10.5", b"0"),
    (None, "-0.0", b"0"),
    (None, "3.0e0", b"3"),
    (None, "1e17", b"100000000000000000"),
    ("1e19", "1", b"10000000000000000001"),  # a long double holds 64 bits of significand
    ("1e20", "1", b"100000000000000000000"),
    (None, "1.23456789012345678", b"1.23456789012345678"),
    (None, "3.14159265358979323846264338327950288", b"3.14159265358979324"),
    (None, "5e-18", b"0"),
    (None, "2.5e-17", b"0.00000000000000002"),
    (None, "1e-4940", b"0"),  # a subnormal long double, printed with 17 decimals
    (None, ".5", b"0.5"),
    (None, "5.", b"5"),
    (None, "+5", b"5"),
    (None, "0x10", b"16"),
    (None, "0x1p-2", b"0.25"),
    ("007", "1", b"8"),
    ("-0", "1", b"1"),
    ("99999999999999999999", "1", b"100000000000000000000"),
    ("0x10", "1.5", b"17.5"),
])
def test_hincrbyfloat_formats_as_valkey(r, start, incr, result):
    if start is not None:
        r.call("HSET", "h", "f", start)
    assert r.call("HINCRBYFLOAT", "h", "f", incr) == ("$", result)
    assert r.call("HGET", "h", "f") == ("$", result)


def test_hincrbyfloat_huge_values_are_exact(r):
    reply = r.call("HINCRBYFLOAT", "h", "f", "1e4000")
    assert reply[0] == "$" and len(reply[1]) == 4000
    assert reply[1].startswith(b"99999999999999999999654638730996")  # the long double nearest
    assert r.call("HSTRLEN", "h", "f") == (":", 4000)
    assert r.call("HINCRBYFLOAT", "h", "g", "1.18e4932")[0] == "$"
    assert r.call("HINCRBYFLOAT", "h", "g", "1.18e4932") == (
        "-", b"ERR increment would produce NaN or Infinity")


def test_hincrbyfloat_errors(r):
    nan_or_inf = ("-", b"ERR value is NaN or Infinity")
    for incr in ("abc", "nan", "-nan", " 1", "1 ", "", "1e", "0x", "1e5000", "1e-5000",
                 "infinit", b"1\x00"):
        assert r.call("HINCRBYFLOAT", "h", "f", incr) == NOT_FLOAT, incr
    for incr in ("inf", "-inf", "INFINITY", "+Inf"):
        assert r.call("HINCRBYFLOAT", "h", "f", incr) == nan_or_inf, incr
    r.call("HSET", "h", "s", "abc", "sp", " 1", "inf", "inf", "big", "1e5000")
    for field in ("s", "sp", "big"):
        assert r.call("HINCRBYFLOAT", "h", field, "1") == ("-", b"ERR hash value is not a float")
    assert r.call("HINCRBYFLOAT", "h", "inf", "1") == (
        "-", b"ERR increment would produce NaN or Infinity")
    assert r.call("HEXISTS", "h", "f") == (":", 0)


# --- HRANDFIELD ------------------------------------------------------------------------------


def test_hrandfield_without_count(r, proto):
    r.call("HSET", "h", "a", "1", "b", "2", "c", "3")
    for _ in range(5):
        kind, field = r.call("HRANDFIELD", "h")
        assert kind == "$" and field in (b"a", b"b", b"c")
    assert r.call("HRANDFIELD", "nokey") == null(proto)


def test_hrandfield_positive_count_is_distinct_and_in_hash_order(r):
    r.call("HSET", "h", "a", "1", "b", "2", "c", "3", "d", "4", "e", "5")
    order = [b"a", b"b", b"c", b"d", b"e"]
    for _ in range(10):
        kind, items = r.call("HRANDFIELD", "h", "3")
        fields = [v for _, v in items]
        assert kind == "*" and len(set(fields)) == 3
        assert fields == sorted(fields, key=order.index)
    assert r.call("HRANDFIELD", "h", "5") == bulks(*order)
    assert r.call("HRANDFIELD", "h", "100") == bulks(*order)
    assert r.call("HRANDFIELD", "h", "0") == ("*", [])
    assert r.call("HRANDFIELD", "nokey", "3") == ("*", [])
    assert r.call("HRANDFIELD", "nokey", "3", "WITHVALUES") == ("*", [])


def test_hrandfield_negative_count_repeats(r):
    r.call("HSET", "h", "a", "1", "b", "2")
    kind, items = r.call("HRANDFIELD", "h", "-20")
    assert kind == "*" and len(items) == 20
    assert {v for _, v in items} <= {b"a", b"b"}


def test_hrandfield_withvalues_pairs_in_resp3(r, proto):
    r.call("HSET", "h", "a", "1", "b", "2", "c", "3")
    reply = r.call("HRANDFIELD", "h", "3", "withvalues")
    if proto == 3:
        assert reply == ("*", [bulks("a", "1"), bulks("b", "2"), bulks("c", "3")])
    else:
        assert reply == bulks("a", "1", "b", "2", "c", "3")
    kind, items = r.call("HRANDFIELD", "h", "-7", "WITHVALUES")
    assert kind == "*"
    pairs = [p[1] for p in items] if proto == 3 else [items[i:i + 2] for i in range(0, 14, 2)]
    assert len(pairs) == 7
    expected = {b"a": b"1", b"b": b"2", b"c": b"3"}
    assert all(expected[f[1]] == v[1] for f, v in pairs)
    assert r.call("HRANDFIELD", "h", "0", "withvalues") == ("*", [])


def test_hrandfield_errors(r, proto):
    r.call("HSET", "h", "a", "1")
    r.call("SET", "s", "v")
    out_of_range = ("-", b"ERR value is out of range")
    assert r.call("HRANDFIELD", "h", "x") == NOT_INT
    assert r.call("HRANDFIELD", "h", "1", "foo") == SYNTAX
    assert r.call("HRANDFIELD", "h", "1", "withvalues", "x") == SYNTAX
    assert r.call("HRANDFIELD", "h", "-9223372036854775808") == (
        "-", b"ERR value is out of range, value must between -9223372036854775807 and "
        b"9223372036854775807")
    assert r.call("HRANDFIELD", "h", "4611686018427387904", "withvalues") == out_of_range
    assert r.call("HRANDFIELD", "h", "-4611686018427387904", "withvalues") == out_of_range
    reply = r.call("HRANDFIELD", "h", "4611686018427387903", "withvalues")
    assert reply == (("*", [bulks("a", "1")]) if proto == 3 else bulks("a", "1"))
    assert r.call("HRANDFIELD", "s", "x") == NOT_INT  # the count is read before the key
    assert r.call("HRANDFIELD", "s", "1", "foo") == SYNTAX
    assert r.call("HRANDFIELD", "s") == WRONGTYPE
    assert r.call("HRANDFIELD", "s", "1") == WRONGTYPE


# --- HSCAN -----------------------------------------------------------------------------------


def test_hscan_listpack_answers_everything_at_once(r):
    r.call("HSET", "h", "a1", "1", "b1", "2", "a2", "3")
    assert r.call("HSCAN", "h", "0") == ("*", [("$", b"0"), bulks("a1", "1", "b1", "2", "a2", "3")])
    assert r.call("HSCAN", "h", "0", "COUNT", "1") == (
        "*", [("$", b"0"), bulks("a1", "1", "b1", "2", "a2", "3")])
    assert r.call("HSCAN", "h", "0", "MATCH", "a*") == ("*", [("$", b"0"), bulks("a1", "1", "a2", "3")])
    assert r.call("HSCAN", "h", "0", "match", "a*", "novalues") == ("*", [("$", b"0"), bulks("a1", "a2")])
    assert r.call("HSCAN", "h", "0", "NOVALUES", "NOVALUES") == ("*", [("$", b"0"), bulks("a1", "b1", "a2")])
    assert r.call("HSCAN", "h", "0", "MATCH", "a", "MATCH", "b?") == ("*", [("$", b"0"), bulks("b1", "2")])
    assert r.call("HSCAN", "h", "0", "MATCH", "*") == ("*", [("$", b"0"), bulks("a1", "1", "b1", "2", "a2", "3")])
    assert r.call("HSCAN", "nokey", "0") == ("*", [("$", b"0"), ("*", [])])


def test_hscan_hashtable_full_iteration(r, listpack_limits):
    listpack_limits(entries=4)
    fields = [f"f{i}" for i in range(30)]
    r.call("HSET", "h", *[x for f in fields for x in (f, f.upper())])
    assert encoding(r, "h") == b"hashtable"
    seen, cursor, calls = {}, b"0", 0
    while True:
        kind, (cur, items) = r.call("HSCAN", "h", cursor, "COUNT", "5")
        assert kind == "*" and cur[0] == "$" and items[0] == "*"
        values = [v for _, v in items[1]]
        seen.update(zip(values[::2], values[1::2], strict=True))
        cursor, calls = cur[1], calls + 1
        if cursor == b"0":
            break
        assert calls < 100
    assert seen == {f.encode(): f.upper().encode() for f in fields}
    kind, (cur, items) = r.call("HSCAN", "h", "0", "COUNT", "1000", "MATCH", "f1*", "NOVALUES")
    assert cur == ("$", b"0")
    assert sorted(v for _, v in items[1]) == sorted(f.encode() for f in fields if f.startswith("f1"))


def test_hscan_errors(r):
    r.call("HSET", "h", "a", "1")
    r.call("SET", "s", "v")
    for cursor in ("x", "-1", "18446744073709551616", "", "1 "):
        assert r.call("HSCAN", "h", cursor) == INVALID_CURSOR, cursor
    assert r.call("HSCAN", "h", "0", "COUNT", "0") == SYNTAX
    assert r.call("HSCAN", "h", "0", "COUNT", "-1") == SYNTAX
    assert r.call("HSCAN", "h", "0", "COUNT", "x") == NOT_INT
    assert r.call("HSCAN", "h", "0", "MATCH") == SYNTAX
    assert r.call("HSCAN", "h", "0", "COUNT") == SYNTAX
    assert r.call("HSCAN", "h", "0", "foo", "bar") == SYNTAX
    assert r.call("HSCAN", "h", "0", "TYPE", "string") == SYNTAX
    assert r.call("HSCAN", "s", "0") == WRONGTYPE
    assert r.call("HSCAN", "s", "x") == INVALID_CURSOR  # the cursor is read before the key
    # a missing key answers before its options are read
    assert r.call("HSCAN", "nokey", "0", "foo") == ("*", [("$", b"0"), ("*", [])])
    assert r.call("HSCAN", "nokey", "x") == INVALID_CURSOR


def test_hscan_cursor_forms_of_strtoull(r):
    r.call("HSET", "h", "a", "1")
    everything = ("*", [("$", b"0"), bulks("a", "1")])
    for cursor in ("18446744073709551615", "+0", " 0", "00"):
        assert r.call("HSCAN", "h", cursor) == everything, cursor


# --- WRONGTYPE everywhere --------------------------------------------------------------------


def test_wrongtype_everywhere(r):
    r.call("SET", "s", "v")
    calls = [
        ("HSET", "s", "a", "1"), ("HMSET", "s", "a", "1"), ("HSETNX", "s", "a", "1"),
        ("HGET", "s", "a"), ("HMGET", "s", "a"), ("HGETALL", "s"), ("HKEYS", "s"),
        ("HVALS", "s"), ("HDEL", "s", "a"), ("HLEN", "s"), ("HEXISTS", "s", "a"),
        ("HSTRLEN", "s", "a"), ("HINCRBY", "s", "a", "1"), ("HINCRBYFLOAT", "s", "a", "1"),
        ("HRANDFIELD", "s"), ("HSCAN", "s", "0"),
        ("HEXPIRE", "s", "10", "FIELDS", "1", "a"), ("HPEXPIRE", "s", "10", "FIELDS", "1", "a"),
        ("HEXPIREAT", "s", "10", "FIELDS", "1", "a"),
        ("HPEXPIREAT", "s", "10", "FIELDS", "1", "a"),
        ("HTTL", "s", "FIELDS", "1", "a"), ("HPTTL", "s", "FIELDS", "1", "a"),
        ("HEXPIRETIME", "s", "FIELDS", "1", "a"), ("HPEXPIRETIME", "s", "FIELDS", "1", "a"),
        ("HPERSIST", "s", "FIELDS", "1", "a"), ("HGETDEL", "s", "FIELDS", "1", "a"),
        ("HGETEX", "s", "FIELDS", "1", "a"), ("HSETEX", "s", "FIELDS", "1", "a", "1"),
    ]
    for call in calls:
        assert r.call(*call) == WRONGTYPE, call
    assert r.call("GET", "s") == ("$", b"v")


# --- OBJECT ENCODING -------------------------------------------------------------------------


def test_encoding_converts_once_on_size(r, listpack_limits):
    listpack_limits(entries=3, value=5)
    r.call("HSET", "h", "a", "1", "b", "2", "c", "3")
    assert encoding(r, "h") == b"listpack"
    r.call("HSET", "h", "d", "4")
    assert encoding(r, "h") == b"hashtable"
    r.call("HDEL", "h", "d", "c", "b")
    assert encoding(r, "h") == b"hashtable"  # never back
    r.call("HSET", "fits", "a", "12345")
    assert encoding(r, "fits") == b"listpack"
    r.call("HSET", "long-value", "a", "1")
    r.call("HSET", "long-value", "b", "123456")
    assert encoding(r, "long-value") == b"hashtable"
    r.call("HSET", "long-field", "abcdef", "1")
    assert encoding(r, "long-field") == b"hashtable"
    r.call("HSETNX", "nx", "a", "123456")
    assert encoding(r, "nx") == b"hashtable"
    r.call("HSETNX", "nx-kept", "a", "1")
    r.call("HSETNX", "nx-kept", "a", "123456")  # not set, not converted
    assert encoding(r, "nx-kept") == b"listpack"


def test_encoding_counts_pairs_of_hset_duplicates_included(r, listpack_limits):
    listpack_limits(entries=3, value=5)
    r.call("HSET", "h", "a", "1", "a", "2", "a", "3", "a", "4")
    assert r.call("HLEN", "h") == (":", 1)
    assert encoding(r, "h") == b"hashtable"
    r.call("HMSET", "m", "a", "1", "a", "2", "a", "3", "a", "4")
    assert encoding(r, "m") == b"hashtable"
    r.call("HSETEX", "x", "FIELDS", "4", "a", "1", "a", "2", "a", "3", "a", "4")
    assert encoding(r, "x") == b"listpack"  # HSETEX checks field by field


def test_encoding_of_counters(r, listpack_limits):
    listpack_limits(entries=3, value=5)
    r.call("HINCRBY", "h", "a", "99999")
    assert encoding(r, "h") == b"listpack"
    r.call("HINCRBY", "h", "a", "1")  # "100000" is too long
    assert encoding(r, "h") == b"hashtable"
    r.call("HINCRBY", "g", "abcdef", "1")
    assert encoding(r, "g") == b"hashtable"
    r.call("HINCRBYFLOAT", "f", "a", "1.125")
    assert encoding(r, "f") == b"listpack"
    r.call("HINCRBYFLOAT", "f", "a", "0.0001")
    assert encoding(r, "f") == b"hashtable"


def test_encoding_field_ttl_means_hashtable(r):
    r.call("HSET", "h", "a", "1", "b", "2")
    assert r.call("HPEXPIRE", "h", "100000", "FIELDS", "1", "zz") == ints(-2)
    assert r.call("HPEXPIRE", "h", "100000", "XX", "FIELDS", "1", "a") == ints(0)
    assert r.call("HPEXPIRE", "h", "100000", "GT", "FIELDS", "1", "a") == ints(0)
    assert r.call("HPERSIST", "h", "FIELDS", "1", "a") == ints(-1)
    assert r.call("HSETEX", "h", "KEEPTTL", "FIELDS", "1", "b", "3") == (":", 1)
    assert r.call("HGETEX", "h", "PERSIST", "FIELDS", "1", "a") == bulks("1")
    assert encoding(r, "h") == b"listpack"
    assert r.call("HPEXPIRE", "h", "100000", "LT", "FIELDS", "1", "a") == ints(1)
    assert encoding(r, "h") == b"hashtable"
    assert r.call("HPERSIST", "h", "FIELDS", "1", "a") == ints(1)
    assert encoding(r, "h") == b"hashtable"
    r.call("HSET", "g", "a", "1")
    r.call("HGETEX", "g", "PX", "100000", "FIELDS", "1", "a")
    assert encoding(r, "g") == b"hashtable"
    r.call("HSETEX", "x", "PX", "100000", "FIELDS", "1", "a", "1")
    assert encoding(r, "x") == b"hashtable"


# --- HEXPIRE, HPEXPIRE, HEXPIREAT, HPEXPIREAT and the TTL readers -----------------------------


def test_hexpire_family_sets_deadlines(r):
    r.call("HSET", "h", "a", "1", "b", "2", "c", "3", "d", "4")
    assert r.call("HPEXPIREAT", "h", str(FAR_MS), "FIELDS", "2", "a", "zz") == ints(1, -2)
    assert r.call("HPEXPIRETIME", "h", "FIELDS", "3", "a", "b", "zz") == ints(FAR_MS, -1, -2)
    assert r.call("HEXPIRETIME", "h", "FIELDS", "1", "a") == ints(100000000000)  # rounded
    assert r.call("HEXPIREAT", "h", "99999999999", "FIELDS", "1", "b") == ints(1)
    assert r.call("HPEXPIRETIME", "h", "FIELDS", "1", "b") == ints(99999999999000)
    assert r.call("HPEXPIREAT", "h", "99999999999499", "FIELDS", "1", "c") == ints(1)
    assert r.call("HEXPIRETIME", "h", "FIELDS", "1", "c") == ints(99999999999)
    assert r.call("hpexpireat", "h", "99999999999500", "fields", "1", "c") == ints(1)
    assert r.call("HEXPIRETIME", "h", "FIELDS", "1", "c") == ints(100000000000)
    assert r.call("HEXPIRE", "h", "100", "FIELDS", "1", "d") == ints(1)
    assert r.call("HTTL", "h", "FIELDS", "2", "d", "zz") == ints(100, -2)
    kind, [(_, left)] = r.call("HPTTL", "h", "FIELDS", "1", "d")
    assert kind == "*" and 99000 < left <= 100000
    assert r.call("HPEXPIRE", "h", "5000", "FIELDS", "1", "d") == ints(1)
    assert r.call("HTTL", "h", "FIELDS", "1", "d") == ints(5)
    for name in ("HTTL", "HPTTL", "HEXPIRETIME", "HPEXPIRETIME"):
        assert r.call(name, "nokey", "FIELDS", "2", "a", "b") == ints(-2, -2)


def test_hexpire_conditions(r):
    r.call("HSET", "h", "a", "1", "b", "2", "c", "3", "d", "4")
    t = FAR_MS - 10**6  # absolute deadlines, so no condition depends on the clock

    def expire(ms, *args):
        return r.call("HPEXPIREAT", "h", str(t + ms), *args)

    assert expire(100, "FIELDS", "1", "a") == ints(1)
    assert expire(200, "GT", "FIELDS", "3", "a", "b", "zz") == ints(1, 0, -2)
    assert expire(50, "LT", "FIELDS", "2", "a", "c") == ints(1, 1)
    assert expire(60, "LT", "FIELDS", "1", "a") == ints(0)
    assert expire(50, "LT", "FIELDS", "1", "a") == ints(0)
    assert expire(50, "GT", "FIELDS", "1", "a") == ints(0)
    assert expire(60, "NX", "FIELDS", "2", "a", "d") == ints(0, 1)
    assert expire(70, "XX", "FIELDS", "2", "a", "b") == ints(1, 0)
    assert expire(70, "XX", "GT", "FIELDS", "1", "a") == ints(0)
    assert expire(80, "xx", "gt", "FIELDS", "1", "a") == ints(1)
    assert expire(40, "XX", "LT", "FIELDS", "2", "a", "b") == ints(1, 0)
    assert expire(80, "NX", "NX", "FIELDS", "1", "b") == ints(1)
    assert r.call("HPEXPIRETIME", "h", "FIELDS", "4", "a", "b", "c", "d") == ints(
        t + 40, t + 80, t + 50, t + 60)
    assert r.call("HPEXPIRE", "h", "0", "GT", "FIELDS", "1", "a") == ints(0)
    assert r.call("HPEXPIRE", "h", "0", "LT", "FIELDS", "1", "a") == ints(2)
    assert r.call("HKEYS", "h") == bulks("b", "c", "d")


def test_hexpire_in_the_past_deletes_fields_and_the_emptied_hash(r, proto):
    r.call("HSET", "h", "a", "1", "b", "2")
    assert r.call("HEXPIREAT", "h", "1", "FIELDS", "2", "a", "zz") == ints(2, -2)
    assert r.call("HGETALL", "h") == as_map(proto, ("b", "2"))
    assert r.call("HEXPIRE", "h", "0", "NX", "FIELDS", "2", "b", "b") == ints(2, -2)
    assert r.call("EXISTS", "h") == (":", 0)
    assert r.call("HPEXPIRE", "nokey", "0", "FIELDS", "1", "a") == ints(-2)
    assert r.call("HPEXPIREAT", "nokey", "0", "FIELDS", "1", "a") == ints(-2)


def test_hexpire_argument_errors(r):
    r.call("SET", "s", "v")
    nx_conflict = ("-", b"ERR NX and XX, GT or LT options at the same time are not compatible")
    gt_lt = ("-", b"ERR GT and LT options at the same time are not compatible")
    assert r.call("HEXPIRE", "nokey", "10", "FIELDS", "2", "a") == NUMFIELDS
    assert r.call("HEXPIRE", "nokey", "10", "FIELDS", "0", "a") == NUMFIELDS
    assert r.call("HEXPIRE", "nokey", "10", "FIELDS", "-1", "a") == NUMFIELDS
    assert r.call("HEXPIRE", "nokey", "10", "FIELDS", "x", "a") == NOT_INT
    assert r.call("HEXPIRE", "nokey", "10", "a", "b", "c") == NUMFIELDS
    assert r.call("HEXPIRE", "nokey", "10", "FIELDS", "1", "a", "FIELDS") == NUMFIELDS
    assert r.call("HEXPIRE", "nokey", "10", "FIELDS", "FIELDS", "1", "a") == NOT_INT
    assert r.call("HEXPIRE", "nokey", "10", "FIELDS", "1", "FIELDS") == ints(-2)
    assert r.call("HEXPIRE", "nokey", "10", "FIELDS", "1") == (
        "-", b"ERR wrong number of arguments for 'hexpire' command")
    assert r.call("HEXPIRE", "nokey", "10", "FOO", "FIELDS", "1", "a") == (
        "-", b"ERR Unsupported option FOO")
    assert r.call("HEXPIRE", "nokey", "10", "NX", "XX", "foo", "FIELDS", "1", "a") == (
        "-", b"ERR Unsupported option foo")
    assert r.call("HEXPIRE", "nokey", "10", "NX", "XX", "FIELDS", "1", "a") == nx_conflict
    assert r.call("HEXPIRE", "nokey", "10", "GT", "LT", "NX", "FIELDS", "1", "a") == nx_conflict
    assert r.call("HEXPIRE", "nokey", "10", "LT", "GT", "XX", "FIELDS", "1", "a") == gt_lt
    assert r.call("HEXPIRE", "nokey", "abc", "NX", "XX", "FIELDS", "1", "a") == nx_conflict
    assert r.call("HEXPIRE", "nokey", "10", "XX", "LT", "FIELDS", "1", "a") == ints(-2)
    # the time is checked before the key's type
    assert r.call("HEXPIRE", "s", "abc", "FIELDS", "1", "a") == NOT_INT
    assert r.call("HEXPIRE", "s", "-1", "FIELDS", "1", "a") == invalid_expire("hexpire")
    assert r.call("HPEXPIRE", "nokey", "-1", "FIELDS", "1", "a") == invalid_expire("hpexpire")
    assert r.call("HEXPIRE", "nokey", "9223372036854775", "FIELDS", "1", "a") == (
        invalid_expire("hexpire"))
    assert r.call("HPEXPIRE", "nokey", "9223372036854775807", "FIELDS", "1", "a") == (
        invalid_expire("hpexpire"))
    assert r.call("HEXPIREAT", "nokey", "9223372036854776", "FIELDS", "1", "a") == (
        invalid_expire("hexpireat"))
    assert r.call("HEXPIREAT", "nokey", "9223372036854775", "FIELDS", "1", "a") == ints(-2)
    assert r.call("HPEXPIREAT", "nokey", "9223372036854775807", "FIELDS", "1", "a") == ints(-2)


def test_httl_family_errors(r):
    r.call("HSET", "h", "a", "1")
    r.call("SET", "s", "v")
    for name in ("HTTL", "HPTTL", "HEXPIRETIME", "HPEXPIRETIME"):
        assert r.call(name, "h", "XXX", "1", "a") == SYNTAX
        assert r.call(name, "h", "XXX", "x", "a") == SYNTAX
        assert r.call(name, "h", "FIELDS", "2", "a") == SYNTAX
        assert r.call(name, "h", "FIELDS", "0", "a") == SYNTAX
        assert r.call(name, "h", "FIELDS", "-1", "a") == SYNTAX
        assert r.call(name, "h", "FIELDS", "x", "a") == NOT_INT
        assert r.call(name, "h", "FIELDS", "99999999999999999999", "a") == NOT_INT
        assert r.call(name, "s", "FIELDS", "2", "a") == SYNTAX
        assert r.call(name, "h", "fields", "1", "a") == ints(-1)


def test_field_ttl_survives_counters_and_keepttl_not_hset(r):
    r.call("HSET", "h", "a", "1")
    r.call("HPEXPIREAT", "h", str(FAR_MS), "FIELDS", "1", "a")
    assert r.call("HSETNX", "h", "a", "6") == (":", 0)
    assert r.call("HINCRBY", "h", "a", "1") == (":", 2)
    assert r.call("HINCRBYFLOAT", "h", "a", "1.5") == ("$", b"3.5")
    assert r.call("HSETEX", "h", "KEEPTTL", "FIELDS", "1", "a", "7") == (":", 1)
    assert r.call("HPEXPIRETIME", "h", "FIELDS", "1", "a") == ints(FAR_MS)
    assert r.call("HSET", "h", "a", "8") == (":", 0)
    assert r.call("HPEXPIRETIME", "h", "FIELDS", "1", "a") == ints(-1)
    r.call("HPEXPIREAT", "h", str(FAR_MS), "FIELDS", "1", "a")
    r.call("HMSET", "h", "a", "9")
    assert r.call("HPEXPIRETIME", "h", "FIELDS", "1", "a") == ints(-1)
    r.call("HPEXPIREAT", "h", str(FAR_MS), "FIELDS", "1", "a")
    assert r.call("HSETEX", "h", "FIELDS", "1", "a", "10") == (":", 1)
    assert r.call("HPEXPIRETIME", "h", "FIELDS", "1", "a") == ints(-1)
    r.call("HPEXPIREAT", "h", str(FAR_MS), "FIELDS", "1", "a")
    assert r.call("HGETDEL", "h", "FIELDS", "1", "a") == bulks("10")
    r.call("HSET", "h", "a", "1")
    assert r.call("HPEXPIRETIME", "h", "FIELDS", "1", "a") == ints(-1)


# --- HPERSIST --------------------------------------------------------------------------------


def test_hpersist(r):
    r.call("HSET", "h", "a", "1", "b", "2")
    r.call("HPEXPIRE", "h", "100000", "FIELDS", "1", "a")
    assert r.call("HPERSIST", "h", "FIELDS", "3", "a", "b", "zz") == ints(1, -1, -2)
    assert r.call("HPERSIST", "h", "FIELDS", "1", "a") == ints(-1)
    assert r.call("HTTL", "h", "FIELDS", "1", "a") == ints(-1)
    assert r.call("HPERSIST", "nokey", "FIELDS", "2", "a", "b") == ints(-2, -2)


def test_hpersist_and_hgetdel_errors(r):
    r.call("HSET", "h", "a", "1")
    r.call("SET", "s", "v")
    for name in ("HPERSIST", "HGETDEL"):
        assert r.call(name, "h", "XXX", "1", "a") == SYNTAX
        assert r.call(name, "h", "XXX", "x", "a") == SYNTAX
        assert r.call(name, "s", "XXX", "1", "a") == SYNTAX
        assert r.call(name, "h", "FIELDS", "2", "a") == NUMFIELDS
        assert r.call(name, "h", "FIELDS", "0", "a") == NUMFIELDS
        assert r.call(name, "h", "FIELDS", "-1", "a") == NUMFIELDS
        assert r.call(name, "h", "FIELDS", "x", "a") == NOT_INT
        assert r.call(name, "s", "FIELDS", "2", "a") == NUMFIELDS
        assert r.call(name, "h", "FIELDS") == (
            "-", f"ERR wrong number of arguments for '{name.lower()}' command".encode())
    assert r.call("HGET", "h", "a") == ("$", b"1")


# --- HGETDEL ---------------------------------------------------------------------------------


def test_hgetdel(r, proto):
    r.call("HSET", "h", "a", "1", "b", "2", "c", "3")
    assert r.call("HGETDEL", "h", "FIELDS", "3", "a", "zz", "a") == (
        "*", [("$", b"1"), null(proto), null(proto)])
    assert r.call("HKEYS", "h") == bulks("b", "c")
    assert r.call("hgetdel", "h", "fields", "2", "b", "c") == bulks("2", "3")
    assert r.call("EXISTS", "h") == (":", 0)
    assert r.call("HGETDEL", "nokey", "FIELDS", "2", "a", "b") == ("*", [null(proto), null(proto)])


# --- HGETEX ----------------------------------------------------------------------------------


def test_hgetex_sets_and_removes_deadlines(r, proto):
    r.call("HSET", "h", "a", "1", "b", "2", "c", "3")
    assert r.call("HGETEX", "h", "FIELDS", "2", "a", "zz") == ("*", [("$", b"1"), null(proto)])
    assert r.call("HGETEX", "h", "PXAT", str(FAR_MS), "FIELDS", "2", "a", "zz") == (
        "*", [("$", b"1"), null(proto)])
    assert r.call("HPEXPIRETIME", "h", "FIELDS", "2", "a", "b") == ints(FAR_MS, -1)
    assert r.call("HGETEX", "h", "EXAT", "99999999999", "FIELDS", "1", "b") == bulks("2")
    assert r.call("HPEXPIRETIME", "h", "FIELDS", "1", "b") == ints(99999999999000)
    assert r.call("HGETEX", "h", "EX", "10", "EX", "20", "FIELDS", "1", "c") == bulks("3")
    assert r.call("HTTL", "h", "FIELDS", "1", "c") == ints(20)  # the last EX wins
    assert r.call("HGETEX", "h", "PX", "5000", "FIELDS", "1", "c") == bulks("3")
    assert r.call("HTTL", "h", "FIELDS", "1", "c") == ints(5)
    assert r.call("HGETEX", "h", "persist", "PERSIST", "fields", "2", "a", "a") == bulks("1", "1")
    assert r.call("HTTL", "h", "FIELDS", "2", "a", "c") == ints(-1, 5)
    assert r.call("HPEXPIRETIME", "h", "FIELDS", "1", "b") == ints(99999999999000)
    assert r.call("HGETEX", "nokey", "EX", "10", "FIELDS", "2", "a", "b") == (
        "*", [null(proto), null(proto)])


def test_hgetex_in_the_past_deletes_after_reading(r, proto):
    r.call("HSET", "h", "a", "1", "b", "2", "c", "3")
    assert r.call("HGETEX", "h", "PX", "0", "FIELDS", "3", "a", "a", "zz") == (
        "*", [("$", b"1"), null(proto), null(proto)])
    assert r.call("HGETEX", "h", "PXAT", "1", "FIELDS", "1", "b") == bulks("2")
    assert r.call("HGETEX", "h", "EXAT", "0", "FIELDS", "1", "c") == bulks("3")
    assert r.call("EXISTS", "h") == (":", 0)
    r.call("HSET", "h", "a", "1")
    assert r.call("HGETEX", "h", "EX", "0", "FIELDS", "1", "a") == bulks("1")
    assert r.call("EXISTS", "h") == (":", 0)


def test_hgetex_errors(r):
    r.call("HSET", "h", "a", "1")
    r.call("SET", "s", "v")
    cases = [
        (("EX", "10", "PX", "10"), SYNTAX), (("EX", "10", "PERSIST"), SYNTAX),
        (("PERSIST", "EX", "10"), SYNTAX), (("KEEPTTL",), SYNTAX), (("NX",), SYNTAX),
        (("FNX",), SYNTAX), (("EX",), SYNTAX), (("BLAH",), SYNTAX),
        (("PX", "abc"), NOT_INT), (("PX", "-1"), invalid_expire("hgetex")),
        (("EX", "-1"), invalid_expire("hgetex")),
        (("PX", "9223372036854775807"), invalid_expire("hgetex")),
        (("EX", "9223372036854775"), invalid_expire("hgetex")),
    ]
    for options, error in cases:
        assert r.call("HGETEX", "h", *options, "FIELDS", "1", "a") == error, options
    assert r.call("HGETEX", "h", "FIELDS", "2", "a") == NUMFIELDS
    assert r.call("HGETEX", "h", "FIELDS", "0", "a") == NUMFIELDS
    assert r.call("HGETEX", "h", "FIELDS", "-1", "a") == NUMFIELDS
    assert r.call("HGETEX", "h", "FIELDS", "x", "a") == NOT_INT
    assert r.call("HGETEX", "h", "FIELDS", "1", "a", "b") == NUMFIELDS
    assert r.call("HGETEX", "h", "a", "b", "c") == NUMFIELDS
    assert r.call("HGETEX", "h", "FIELDS", "b", "c", "d") == NOT_INT
    assert r.call("HGETEX", "h", "EX", "10", "b", "c", "d") == NUMFIELDS
    assert r.call("HGETEX", "h", "EX") == ("-", b"ERR wrong number of arguments for 'hgetex' command")
    # a key named "fields" is taken for the FIELDS token, as in Valkey
    assert r.call("HGETEX", "fields", "FIELDS", "1", "a") == NOT_INT
    # order: options, numfields, then the key's type, then the time
    assert r.call("HGETEX", "s", "FIELDS", "2", "a") == NUMFIELDS
    assert r.call("HGETEX", "s", "BLAH", "FIELDS", "1", "a") == SYNTAX
    assert r.call("HGETEX", "s", "PX", "abc", "FIELDS", "1", "a") == WRONGTYPE
    assert r.call("HGETEX", "nokey", "PX", "abc", "FIELDS", "1", "a") == NOT_INT
    assert r.call("HGETEX", "nokey", "PX", "-5", "FIELDS", "1", "a") == invalid_expire("hgetex")
    assert r.call("HGETEX", "h", "EXAT", "9223372036854775", "FIELDS", "1", "a") == bulks("1")
    assert r.call("HPEXPIRETIME", "h", "FIELDS", "1", "a") == ints(9223372036854775000)


# --- HSETEX ----------------------------------------------------------------------------------


def test_hsetex_sets_fields_with_deadlines(r):
    assert r.call("HSETEX", "h", "FIELDS", "2", "a", "1", "b", "2") == (":", 1)
    assert r.call("HSETEX", "h", "PXAT", str(FAR_MS), "FIELDS", "1", "a", "10") == (":", 1)
    assert r.call("HPEXPIRETIME", "h", "FIELDS", "2", "a", "b") == ints(FAR_MS, -1)
    assert r.call("HSETEX", "h", "EXAT", "99999999999", "FIELDS", "1", "b", "20") == (":", 1)
    assert r.call("HPEXPIRETIME", "h", "FIELDS", "1", "b") == ints(99999999999000)
    assert r.call("HSETEX", "h", "ex", "30", "EX", "40", "fields", "1", "c", "3") == (":", 1)
    assert r.call("HTTL", "h", "FIELDS", "1", "c") == ints(40)
    assert r.call("HSETEX", "h", "PX", "5000", "FIELDS", "1", "c", "4") == (":", 1)
    assert r.call("HTTL", "h", "FIELDS", "1", "c") == ints(5)
    assert r.call("HSETEX", "h", "KEEPTTL", "KEEPTTL", "FIELDS", "1", "c", "5") == (":", 1)
    assert r.call("HTTL", "h", "FIELDS", "1", "c") == ints(5)
    assert r.call("HMGET", "h", "a", "b", "c") == bulks("10", "20", "5")


def test_hsetex_key_and_field_conditions(r):
    r.call("HSET", "h", "a", "1", "b", "2")
    assert r.call("HSETEX", "h", "NX", "FIELDS", "1", "c", "3") == (":", 0)
    assert r.call("HSETEX", "h", "XX", "XX", "FIELDS", "1", "c", "3") == (":", 1)
    assert r.call("HSETEX", "nokey", "XX", "FIELDS", "1", "c", "3") == (":", 0)
    assert r.call("EXISTS", "nokey") == (":", 0)
    assert r.call("HSETEX", "new", "NX", "NX", "FIELDS", "1", "c", "3") == (":", 1)
    assert r.call("HSETEX", "h", "FNX", "FIELDS", "2", "d", "4", "a", "1") == (":", 0)
    assert r.call("HSETEX", "h", "FNX", "FNX", "FIELDS", "2", "d", "4", "e", "5") == (":", 1)
    assert r.call("HSETEX", "h", "FXX", "FIELDS", "2", "d", "40", "zz", "1") == (":", 0)
    assert r.call("HSETEX", "h", "fxx", "FIELDS", "2", "d", "40", "e", "50") == (":", 1)
    assert r.call("HSETEX", "h", "XX", "FXX", "FIELDS", "1", "a", "10") == (":", 1)
    assert r.call("HSETEX", "h", "NX", "FNX", "FIELDS", "1", "zz", "1") == (":", 0)
    assert r.call("HSETEX", "fnx-new", "FNX", "FIELDS", "1", "a", "1") == (":", 1)
    assert r.call("HSETEX", "fxx-new", "FXX", "FIELDS", "1", "a", "1") == (":", 0)
    assert r.call("EXISTS", "fxx-new") == (":", 0)
    assert r.call("HSETEX", "h", "KEEPTTL", "FXX", "XX", "FIELDS", "1", "a", "11") == (":", 1)
    assert r.call("HKEYS", "h") == bulks("a", "b", "c", "d", "e")
    assert r.call("HMGET", "h", "a", "c", "d", "e") == bulks("11", "3", "40", "50")


def test_hsetex_in_the_past_deletes_the_fields(r, proto):
    r.call("HSET", "h", "a", "1", "b", "2")
    assert r.call("HSETEX", "h", "EX", "0", "FIELDS", "2", "a", "1", "zz", "2") == (":", 1)
    assert r.call("HGETALL", "h") == as_map(proto, ("b", "2"))
    assert r.call("HSETEX", "h", "PXAT", "1", "FIELDS", "2", "b", "1", "b", "2") == (":", 1)
    assert r.call("EXISTS", "h") == (":", 0)
    assert r.call("HSETEX", "nokey", "EX", "0", "FIELDS", "1", "a", "1") == (":", 1)
    assert r.call("EXISTS", "nokey") == (":", 0)
    r.call("HSET", "h", "a", "1")
    assert r.call("HSETEX", "h", "NX", "EX", "0", "FIELDS", "1", "a", "1") == (":", 0)
    assert r.call("HSETEX", "h", "FNX", "EX", "0", "FIELDS", "1", "zz", "1") == (":", 1)
    assert r.call("HSETEX", "h", "XX", "EX", "0", "FIELDS", "1", "a", "1") == (":", 1)
    assert r.call("EXISTS", "h") == (":", 0)


def test_hsetex_errors(r):
    r.call("HSET", "h", "a", "1")
    r.call("SET", "s", "v")
    for options in [("FNX", "FXX"), ("NX", "XX"), ("EX", "10", "PX", "10"),
                    ("EX", "10", "KEEPTTL"), ("KEEPTTL", "EX", "10"), ("PERSIST",), ("GET",),
                    ("IFEQ", "x"), ("FOO",), ("EX",)]:
        assert r.call("HSETEX", "h", *options, "FIELDS", "1", "a", "1") == SYNTAX, options
    assert r.call("HSETEX", "h", "FIELDS", "1", "a") == (
        "-", b"ERR wrong number of arguments for 'hsetex' command")
    assert r.call("HSETEX", "h", "FIELDS", "2", "a", "1") == NUMFIELDS
    assert r.call("HSETEX", "h", "FIELDS", "0", "a", "1") == NUMFIELDS
    assert r.call("HSETEX", "h", "FIELDS", "1", "a", "1", "b") == NUMFIELDS
    assert r.call("HSETEX", "h", "FIELDS", "x", "a", "1") == NOT_INT
    assert r.call("HSETEX", "h", "FIELDS", "4611686018427387904", "a", "1") == NUMFIELDS
    assert r.call("HSETEX", "h", "a", "1", "b", "2") == NUMFIELDS
    assert r.call("HSETEX", "h", "EX", "-1", "FIELDS", "1", "a", "1") == invalid_expire("hsetex")
    assert r.call("HSETEX", "h", "PX", "abc", "FIELDS", "1", "a", "1") == NOT_INT
    assert r.call("HSETEX", "fields", "FIELDS", "1", "a", "1") == NOT_INT
    # order: options, numfields, the key's type, NX/XX, the time, then FNX/FXX
    assert r.call("HSETEX", "s", "FOO", "FIELDS", "1", "a", "1") == SYNTAX
    assert r.call("HSETEX", "s", "EX", "abc", "FIELDS", "1", "a", "1") == WRONGTYPE
    assert r.call("HSETEX", "h", "NX", "EX", "-1", "FIELDS", "1", "a", "1") == (":", 0)
    assert r.call("HSETEX", "nokey", "XX", "EX", "abc", "FIELDS", "1", "a", "1") == (":", 0)
    assert r.call("HSETEX", "h", "FNX", "EX", "-1", "FIELDS", "1", "a", "1") == invalid_expire("hsetex")
    assert r.call("HGET", "h", "a") == ("$", b"1")


def expired_fields(r2):
    info = r2.call("INFO", "stats")[1].decode()
    return int(info.split("expired_fields:", 1)[1].split("\r\n", 1)[0])


def test_past_deadlines_count_as_expired_fields(r2):
    r2.call("HSET", "h", "a", "1", "b", "2", "c", "3")
    steps = [
        (("HSETEX", "h", "EX", "0", "FIELDS", "2", "zz", "1", "yy", "2"), 2),  # every field named
        (("HEXPIRE", "h", "0", "FIELDS", "2", "a", "zz"), 1),
        (("HGETEX", "h", "EX", "0", "FIELDS", "2", "b", "zz"), 1),
        (("HSET", "h", "x", "1"), 0),
        (("HDEL", "h", "x"), 0),
    ]
    for call, added in steps:
        before = expired_fields(r2)
        r2.call(*call)
        assert expired_fields(r2) - before == added, call


# --- field expiry in real time ---------------------------------------------------------------


def test_due_fields_are_invisible(r, proto):
    r.call("HSET", "h", "a", "1", "b", "2", "c", "3")
    assert r.call("HPEXPIRE", "h", "20", "FIELDS", "2", "a", "c") == ints(1, 1)
    time.sleep(0.06)
    assert r.call("HGET", "h", "a") == null(proto)
    assert r.call("HEXISTS", "h", "a") == (":", 0)
    assert r.call("HSTRLEN", "h", "a") == (":", 0)
    assert r.call("HMGET", "h", "a", "b") == ("*", [null(proto), ("$", b"2")])
    assert r.call("HGETALL", "h") == as_map(proto, ("b", "2"))
    assert r.call("HKEYS", "h") == bulks("b")
    assert r.call("HVALS", "h") == bulks("2")
    assert r.call("HTTL", "h", "FIELDS", "2", "a", "b") == ints(-2, -1)
    assert r.call("HPERSIST", "h", "FIELDS", "1", "a") == ints(-2)
    assert r.call("HEXPIRE", "h", "10", "FIELDS", "1", "a") == ints(-2)
    assert r.call("HSCAN", "h", "0", "COUNT", "100") == ("*", [("$", b"0"), bulks("b", "2")])
    assert r.call("HRANDFIELD", "h", "-5") == bulks("b", "b", "b", "b", "b")
    assert r.call("HSETNX", "h", "a", "new") == (":", 1)
    assert r.call("HINCRBY", "h", "c", "5") == (":", 5)
    assert r.call("HTTL", "h", "FIELDS", "2", "a", "c") == ints(-1, -1)


# --- fields past their deadline, before active expiry deletes them ---------------------------
# Valkey has no lazy expiry of fields: a field past its deadline stays in its hash, hidden
# from every command but HLEN, until active expiry (or a write of that very field) deletes it.


@pytest.fixture
def no_active_expiry(r2):
    """DEBUG SET-ACTIVE-EXPIRE 0 for one test (back on after it)."""
    assert r2.call("DEBUG", "SET-ACTIVE-EXPIRE", "0") == ("+", b"OK")
    yield
    r2.call("DEBUG", "SET-ACTIVE-EXPIRE", "1")


def expire_fields_now(r, key, *fields):
    """Give fields a 1 ms deadline and let it pass (the server sleeps past it)."""
    assert r.call("HPEXPIRE", key, "1", "FIELDS", str(len(fields)), *fields) == ints(*[1] * len(fields))
    r.call("DEBUG", "SLEEP", "0.01")


def wait_for(predicate):
    deadline = time.monotonic() + 10
    while not predicate():
        assert time.monotonic() < deadline, "active expiry never came"
        time.sleep(0.02)


def test_expired_fields_are_hidden_but_counted_until_active_expiry(r, proto, r2, no_active_expiry):
    r.call("HSET", "h", "a", "1", "b", "2", "c", "3")
    expire_fields_now(r, "h", "a", "b")
    assert r.call("HLEN", "h") == (":", 3)
    assert r.call("EXISTS", "h") == (":", 1)
    assert r.call("OBJECT", "ENCODING", "h") == ("$", b"hashtable")
    assert r.call("HGETALL", "h") == as_map(proto, ("c", "3"))
    assert r.call("HKEYS", "h") == bulks("c")
    assert r.call("HVALS", "h") == bulks("3")
    assert r.call("HSCAN", "h", "0") == ("*", [("$", b"0"), bulks("c", "3")])
    assert r.call("HSCAN", "h", "0", "NOVALUES") == ("*", [("$", b"0"), bulks("c")])
    assert r.call("HRANDFIELD", "h") == ("$", b"c")
    assert r.call("HRANDFIELD", "h", "5") == bulks("c")
    assert r.call("HRANDFIELD", "h", "-3") == bulks("c", "c", "c")
    pair = [("$", b"c"), ("$", b"3")]
    assert r.call("HRANDFIELD", "h", "-2", "WITHVALUES") == (
        ("*", pair * 2) if proto == 2 else ("*", [("*", pair)] * 2))
    assert r.call("HGET", "h", "a") == null(proto)
    assert r.call("HMGET", "h", "a", "c") == ("*", [null(proto), ("$", b"3")])
    assert r.call("HEXISTS", "h", "a") == (":", 0)
    assert r.call("HSTRLEN", "h", "a") == (":", 0)
    assert r.call("HTTL", "h", "FIELDS", "2", "a", "c") == ints(-2, -1)
    assert r.call("HPEXPIRETIME", "h", "FIELDS", "1", "b") == ints(-2)
    # the writes that do not set it leave it as it is
    assert r.call("HPERSIST", "h", "FIELDS", "1", "a") == ints(-2)
    assert r.call("HEXPIRE", "h", "100", "FIELDS", "1", "a") == ints(-2)
    assert r.call("HEXPIRE", "h", "0", "FIELDS", "1", "a") == ints(-2)
    assert r.call("HDEL", "h", "a") == (":", 0)
    assert r.call("HGETDEL", "h", "FIELDS", "1", "a") == ("*", [null(proto)])
    assert r.call("HGETEX", "h", "EX", "100", "FIELDS", "1", "a") == ("*", [null(proto)])
    assert r.call("HGETEX", "h", "PERSIST", "FIELDS", "1", "a") == ("*", [null(proto)])
    assert r.call("HGETEX", "h", "PX", "0", "FIELDS", "1", "b") == ("*", [null(proto)])
    assert r.call("HSETEX", "h", "FXX", "FIELDS", "1", "a", "x") == (":", 0)
    assert r.call("HLEN", "h") == (":", 3)
    assert "keys_with_volatile_items=1" in r2.call("INFO", "keyspace")[1].decode()
    r2.call("DEBUG", "SET-ACTIVE-EXPIRE", "1")
    wait_for(lambda: r.call("HLEN", "h") == (":", 1))
    assert r.call("HGETALL", "h") == as_map(proto, ("c", "3"))
    assert "keys_with_volatile_items=0" in r2.call("INFO", "keyspace")[1].decode()


def test_a_hash_of_expired_fields_stays_until_active_expiry(r, proto, r2, no_active_expiry):
    r.call("HSET", "h", "a", "1", "b", "2")
    expire_fields_now(r, "h", "a", "b")
    assert r.call("EXISTS", "h") == (":", 1)
    assert r.call("TYPE", "h") == ("+", b"hash")
    assert r.call("HLEN", "h") == (":", 2)
    assert r.call("HGETALL", "h") == as_map(proto)
    assert r.call("HRANDFIELD", "h") == null(proto)
    assert r.call("HRANDFIELD", "h", "3") == ("*", [])
    assert r.call("HRANDFIELD", "h", "-3", "WITHVALUES") == ("*", [])
    assert r.call("HSCAN", "h", "0") == ("*", [("$", b"0"), ("*", [])])
    assert r.call("HDEL", "h", "a", "b") == (":", 0)
    assert r.call("EXISTS", "h") == (":", 1)
    # a new field joins the same hash: still a hashtable, the expired ones still counted
    assert r.call("HSET", "h", "z", "1") == (":", 1)
    assert r.call("OBJECT", "ENCODING", "h") == ("$", b"hashtable")
    assert r.call("HLEN", "h") == (":", 3)
    r.call("HDEL", "h", "z")
    r2.call("DEBUG", "SET-ACTIVE-EXPIRE", "1")
    wait_for(lambda: r.call("EXISTS", "h") == (":", 0))


@pytest.mark.parametrize("call, events, reply", [
    (("HSET", "h", "a", "x", "b", "y"), ["hexpired", "hset"], (":", 2)),
    (("HMSET", "h", "a", "x"), ["hexpired", "hset"], ("+", b"OK")),
    (("HSETNX", "h", "a", "x"), ["hexpired", "hset"], (":", 1)),
    (("HINCRBY", "h", "a", "5"), ["hexpired", "hincrby"], (":", 5)),
    (("HINCRBYFLOAT", "h", "a", "1.5"), ["hexpired", "hincrbyfloat"], ("$", b"1.5")),
    (("HSETEX", "h", "KEEPTTL", "FIELDS", "1", "a", "x"), ["hexpired", "hset"], (":", 1)),
    (("HSETEX", "h", "FNX", "EX", "100", "FIELDS", "1", "a", "x"), ["hexpired", "hset", "hexpire"], (":", 1)),
])
def test_writing_an_expired_field_expires_it_first(r2, keyevents, no_active_expiry, call, events, reply):
    """The write deletes it as an expiry (counted, announced) and sets a new field: no
    deadline kept, the hash never deleted even when that was its only field."""
    r2.call("HSET", "h", "a", "1", "b", "2", "c", "3")
    expire_fields_now(r2, "h", "a", "b")
    expired = 2 if call[0] == "HSET" else 1
    keyevents()
    before = expired_fields(r2)
    assert r2.call(*call) == reply
    assert keyevents() == [(name, "h") for name in events]
    assert expired_fields(r2) - before == expired
    assert r2.call("HLEN", "h") == (":", 3)
    assert r2.call("HTTL", "h", "FIELDS", "1", "a") == ints(100 if "hexpire" in events else -1)
    r2.call("DEL", "h")
    r2.call("HSET", "h", "a", "1")
    expire_fields_now(r2, "h", "a")
    keyevents()
    assert r2.call(*call) == reply
    assert keyevents() == [(name, "h") for name in events]  # no del, no new
    assert r2.call("OBJECT", "ENCODING", "h") == ("$", b"hashtable")


def test_copy_takes_the_live_fields_only(r, proto, no_active_expiry):
    r.call("HSET", "h", "a", "1", "b", "2", "c", "3")
    r.call("HEXPIRE", "h", "100", "FIELDS", "1", "c")
    expire_fields_now(r, "h", "a")
    assert r.call("COPY", "h", "h2") == (":", 1)
    assert r.call("HLEN", "h2") == (":", 2)
    assert r.call("HTTL", "h2", "FIELDS", "3", "a", "b", "c") == ints(-2, -1, 100)
    assert r.call("RENAME", "h", "h3") == ("+", b"OK")
    assert r.call("HLEN", "h3") == (":", 3)  # RENAME keeps the hash as it is


@pytest.fixture
def replica_pair(private_target):
    primary = private_target("--repl-diskless-sync-delay", "0")
    replica = private_target()
    p, s = primary.raw(2), replica.raw(2)
    s.call("REPLICAOF", primary.host, str(primary.port))
    wait_for(lambda: b"master_link_status:up" in s.call("INFO", "replication")[1])
    yield p, s
    s.call("REPLICAOF", "NO", "ONE")
    p.close()
    s.close()


def test_a_replica_hides_expired_fields_until_the_primary_deletes_them(replica_pair):
    primary, replica = replica_pair
    primary.call("DEBUG", "SET-ACTIVE-EXPIRE", "0")
    primary.call("HSET", "h", "a", "1", "b", "2")
    expire_fields_now(primary, "h", "a")
    assert primary.call("WAIT", "1", "5000") == (":", 1)
    assert replica.call("HLEN", "h") == (":", 2)
    assert replica.call("HGETALL", "h") == as_map(2, ("b", "2"))
    assert replica.call("HTTL", "h", "FIELDS", "1", "a") == ints(-2)
    primary.call("DEBUG", "SET-ACTIVE-EXPIRE", "1")  # the primary's HDEL reaches it
    wait_for(lambda: replica.call("HLEN", "h") == (":", 1))


# --- fakekey's clock: field expiry to the millisecond ----------------------------------------


@pytest.mark.fakekey_only
def test_frozen_clock_expires_fields_exactly(r, proto):
    r.call("FAKEKEY.CLOCK", "SET", "1000000000000")
    r.call("HSET", "h", "a", "1", "b", "2", "c", "3")
    assert r.call("HPEXPIRE", "h", "100", "FIELDS", "1", "a") == ints(1)
    assert r.call("HEXPIRE", "h", "10", "FIELDS", "1", "b") == ints(1)
    assert r.call("HPTTL", "h", "FIELDS", "2", "a", "b") == ints(100, 10000)
    assert r.call("HPEXPIRETIME", "h", "FIELDS", "1", "a") == ints(1000000000100)
    r.call("FAKEKEY.CLOCK", "ADVANCE", "100")
    assert r.call("HPTTL", "h", "FIELDS", "1", "a") == ints(0)  # alive at its deadline
    assert r.call("HGET", "h", "a") == ("$", b"1")
    r.call("FAKEKEY.CLOCK", "ADVANCE", "1")
    assert r.call("HGET", "h", "a") == null(proto)
    assert r.call("HLEN", "h") == (":", 2)
    r.call("FAKEKEY.CLOCK", "ADVANCE", "4399")
    assert r.call("HTTL", "h", "FIELDS", "1", "b") == ints(6)  # 5.5 s rounds up
    r.call("FAKEKEY.CLOCK", "ADVANCE", "5501")
    assert r.call("HGETALL", "h") == as_map(proto, ("c", "3"))
    r.call("HPEXPIRE", "h", "1", "FIELDS", "1", "c")
    r.call("FAKEKEY.CLOCK", "ADVANCE", "2")
    assert r.call("HLEN", "h") == (":", 0)
    assert r.call("EXISTS", "h") == (":", 0)


@pytest.mark.fakekey_only
def test_frozen_clock_relative_options(r):
    r.call("FAKEKEY.CLOCK", "SET", "1000000000000")
    r.call("HSETEX", "h", "PX", "1500", "FIELDS", "1", "a", "1")
    r.call("HSETEX", "h", "EX", "2", "FIELDS", "1", "b", "2")
    r.call("HSET", "h", "c", "3")
    r.call("HGETEX", "h", "PX", "2500", "FIELDS", "1", "c")
    assert r.call("HPEXPIRETIME", "h", "FIELDS", "3", "a", "b", "c") == ints(
        1000000001500, 1000000002000, 1000000002500)
    assert r.call("HEXPIRETIME", "h", "FIELDS", "3", "a", "b", "c") == ints(
        1000000002, 1000000002, 1000000003)
    r.call("FAKEKEY.CLOCK", "ADVANCE", "2000")
    assert r.call("HKEYS", "h") == bulks("b", "c")
    r.call("FAKEKEY.CLOCK", "ADVANCE", "1000")
    # advancing the clock reclaims due fields at once, and the emptied hash with them
    assert r.call("EXISTS", "h") == (":", 0)
    assert r.call("HKEYS", "h") == ("*", [])


# --- keyspace notifications ----------------------------------------------------------------


@pytest.fixture
def keyevents(target, r2):
    """A function returning the keyspace events (event, key) of db 0 since its last call.
    A PUBLISH on a marker channel closes each batch, so no read waits on a timeout."""
    r2.call("CONFIG", "SET", "notify-keyspace-events", "KEAn")
    sub = target.raw(2)
    sub.call("PSUBSCRIBE", "__keyevent@0__:*")
    sub.call("SUBSCRIBE", "marker")

    def collect():
        r2.call("PUBLISH", "marker", "end")
        out = []
        while True:
            message = [v for _, v in sub.read()[1]]
            if message[0] == b"message":
                return out
            out.append((message[2].split(b":", 1)[1].decode(), message[3].decode()))

    yield collect
    sub.close()


def test_keyspace_events_are_valkeys(r2, keyevents):
    expected = [
        (("HSET", "h", "a", "1"), ["new", "hset"]),
        (("HSET", "h", "a", "1"), ["hset"]),
        (("HSETNX", "h", "a", "2"), []),
        (("HSETNX", "h", "b", "2"), ["hset"]),
        (("HMSET", "h", "c", "3"), ["hset"]),
        (("HDEL", "h", "zz"), []),
        (("HDEL", "h", "c"), ["hdel"]),
        (("HINCRBY", "h", "n", "1"), ["hincrby"]),
        (("HINCRBYFLOAT", "h", "f", "1.5"), ["hincrbyfloat"]),
        (("HINCRBY", "g", "n", "1"), ["new", "hincrby"]),
        (("HEXPIRE", "h", "100", "FIELDS", "2", "a", "zz"), ["hexpire"]),
        (("HEXPIRE", "h", "100", "NX", "FIELDS", "1", "a"), []),
        (("HPERSIST", "h", "FIELDS", "1", "a"), ["hpersist"]),
        (("HPERSIST", "h", "FIELDS", "1", "a"), []),
        (("HEXPIRE", "h", "0", "FIELDS", "1", "a"), ["hexpired"]),
        (("HGETEX", "h", "EX", "100", "FIELDS", "1", "b"), ["hexpire"]),
        (("HGETEX", "h", "PERSIST", "FIELDS", "1", "b"), ["hpersist"]),
        (("HGETEX", "h", "PERSIST", "FIELDS", "1", "b"), []),
        (("HGETEX", "h", "EX", "0", "FIELDS", "1", "b"), ["hexpired"]),
        (("HGETEX", "h", "EX", "100", "FIELDS", "1", "zz"), []),
        (("HSETEX", "h", "FIELDS", "1", "x", "1"), ["hset"]),
        (("HSETEX", "h", "EX", "100", "FIELDS", "1", "x", "1"), ["hset", "hexpire"]),
        (("HSETEX", "h", "KEEPTTL", "FIELDS", "1", "x", "2"), ["hset"]),
        (("HSETEX", "h", "NX", "FIELDS", "1", "x", "1"), []),
        (("HSETEX", "h", "EX", "0", "FIELDS", "1", "x", "1"), ["hset", "hexpire", "hexpired"]),
        (("HSETEX", "h", "EX", "0", "FIELDS", "1", "zz", "1"), ["hset", "hexpire", "hexpired"]),
        (("HSETEX", "x", "PX", "100000", "FIELDS", "1", "a", "1"), ["new", "hset", "hexpire"]),
        (("HGETDEL", "h", "FIELDS", "1", "zz"), []),
        (("HGETDEL", "h", "FIELDS", "1", "n"), ["hdel"]),
        (("HDEL", "h", "f"), ["hdel", "del"]),
        (("HSET", "h", "a", "1"), ["new", "hset"]),
        (("HGETDEL", "h", "FIELDS", "2", "a", "zz"), ["hdel", "del"]),
        (("HSET", "h", "a", "1"), ["new", "hset"]),
        (("HEXPIRE", "h", "0", "FIELDS", "1", "a"), ["hexpired", "del"]),
        (("HSET", "h", "a", "1", "b", "2"), ["new", "hset"]),
        (("HSETEX", "h", "EX", "0", "FIELDS", "2", "a", "1", "b", "2"),
         ["hset", "hexpire", "hexpired", "del"]),
        (("HSETEX", "h2", "EX", "0", "FIELDS", "1", "a", "1"),
         ["new", "hset", "hexpire", "hexpired", "del"]),
        (("HSET", "h", "a", "1", "b", "2"), ["new", "hset"]),
        (("HGETEX", "h", "EX", "0", "FIELDS", "2", "a", "b"), ["hexpired", "del"]),
    ]
    keyevents()
    for call, names in expected:
        r2.call(*call)
        assert keyevents() == [(name, call[1]) for name in names], call


@pytest.mark.fakekey_only
def test_frozen_clock_expiry_announces_hexpired_then_del(r2, keyevents):
    r2.call("FAKEKEY.CLOCK", "SET", "1000000000000")
    r2.call("HSET", "h", "a", "1", "b", "2")
    r2.call("HPEXPIRE", "h", "10", "FIELDS", "1", "a")
    r2.call("HPEXPIRE", "h", "20", "FIELDS", "1", "b")
    keyevents()
    r2.call("FAKEKEY.CLOCK", "ADVANCE", "11")
    assert r2.call("HLEN", "h") == (":", 1)
    assert keyevents() == [("hexpired", "h")]
    r2.call("FAKEKEY.CLOCK", "ADVANCE", "10")
    assert r2.call("HSET", "h", "c", "3") == (":", 1)
    assert keyevents() == [("hexpired", "h"), ("del", "h"), ("new", "h"), ("hset", "h")]


# --- fakekey internals: the active-expiry hook ------------------------------------------------


def run(state, client, *args):
    return state.call(client, [a if isinstance(a, bytes) else a.encode() for a in args])


@pytest.mark.fakekey_only
def test_active_expiry_hook_reclaims_fields_and_keys():
    """Active expiry's step for fields (`expire_fields_some`), driven directly."""
    state = new_state()
    client = Client(state)
    events = []
    state.notify_flags = frozenset("KEh$gx")  # anything non-empty turns notifications on
    state.pubsub.notify = lambda db, klass, event, key: events.append((klass, event, key))
    state.clock.freeze(1_000_000_000_000)
    state.tick()
    run(state, client, "HSET", "h", "a", "1", "b", "2")
    run(state, client, "HSET", "g", "a", "1")
    run(state, client, "HPEXPIRE", "h", "10", "FIELDS", "1", "a")
    run(state, client, "HPEXPIRE", "g", "10", "FIELDS", "1", "a")
    db = state.dbs[0]
    events.clear()
    assert expire_fields_some(db, state.now + 10, 20) == (2, 0)
    assert expire_fields_some(db, state.now + 11, 20) == (2, 2)
    assert sorted(events) == [("g", "del", b"g"), ("h", "hexpired", b"g"), ("h", "hexpired", b"h")]
    assert list(db.data) == [b"h"] and db.data[b"h"].field_names() == [b"b"]
    assert state.stats["expired_fields"] == 2
    # g went; h has no TTL left: met once more, then forgotten
    assert expire_fields_some(db, state.now + 1000, 20) == (1, 0)
    assert expire_fields_some(db, state.now + 1000, 20) == (0, 0)
