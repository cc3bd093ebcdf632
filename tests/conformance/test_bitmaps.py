"""Bitmap commands: SETBIT, GETBIT, BITCOUNT, BITPOS, BITOP, BITFIELD, BITFIELD_RO.

Expected values were read from a real Valkey 9.1 server."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fakekey.testing.targets import find_valkey_binary

SYNTAX = ("-", b"ERR syntax error")
NOT_INT = ("-", b"ERR value is not an integer or out of range")
WRONGTYPE = ("-", b"WRONGTYPE Operation against a key holding the wrong kind of value")
BAD_OFFSET = ("-", b"ERR bit offset is not an integer or out of range")
BAD_BIT = ("-", b"ERR bit is not an integer or out of range")
BAD_TYPE = (
    "-",
    b"ERR Invalid bitfield type. Use something like i16 u8. "
    b"Note that u64 is not supported but i64 is.",
)
NULL2 = ("$", None)


def nil(proto: int) -> tuple[str, None]:
    return ("$", None) if proto == 2 else ("_", None)


def ints(*values: int) -> tuple[str, list]:
    return ("*", [(":", v) for v in values])


# --- SETBIT / GETBIT -----------------------------------------------------------------------


def test_setbit_getbit(r):
    assert r.call("SETBIT", "b", "7", "1") == (":", 0)
    assert r.call("GET", "b") == ("$", b"\x01")
    assert r.call("SETBIT", "b", "7", "1") == (":", 1)
    assert r.call("SETBIT", "b", "7", "0") == (":", 1)
    assert r.call("SETBIT", "b", "17", "1") == (":", 0)
    assert r.call("GET", "b") == ("$", b"\x00\x00\x40")
    assert r.call("GETBIT", "b", "17") == (":", 1)
    assert r.call("GETBIT", "b", "16") == (":", 0)
    assert r.call("GETBIT", "b", "1000") == (":", 0)
    assert r.call("GETBIT", "missing", "0") == (":", 0)
    assert r.call("SETBIT", "z", "3", "0") == (":", 0)  # creates a zero byte
    assert r.call("GET", "z") == ("$", b"\x00")
    r.call("SET", "i", "12")
    assert r.call("GETBIT", "i", "2") == (":", 1)  # '1' is 0x31
    assert r.call("GETBIT", "b", "4294967295") == (":", 0)  # the last bit of 512MB


@pytest.mark.parametrize(
    "offset, value, reply",
    [
        ("-1", "1", BAD_OFFSET), ("4294967296", "0", BAD_OFFSET), ("abc", "1", BAD_OFFSET),
        ("#1", "1", BAD_OFFSET), ("1", "2", BAD_BIT), ("1", "-1", BAD_BIT),
        ("1", "abc", BAD_BIT), ("-1", "2", BAD_OFFSET),
    ],
)
def test_setbit_errors(r, offset, value, reply):
    assert r.call("SETBIT", "b", offset, value) == reply
    r.call("RPUSH", "list", "a")
    assert r.call("SETBIT", "list", offset, value) == reply  # arguments before the type


def test_bit_commands_on_other_types(r):
    r.call("RPUSH", "list", "a")
    assert r.call("SETBIT", "list", "1", "1") == WRONGTYPE
    assert r.call("GETBIT", "list", "0") == WRONGTYPE
    assert r.call("GETBIT", "list", "-1") == BAD_OFFSET
    assert r.call("BITCOUNT", "list") == WRONGTYPE
    assert r.call("BITPOS", "list", "1") == WRONGTYPE


# --- BITCOUNT ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args, count",
    [
        ([], 26), (["0", "0"], 4), (["1", "1"], 6), (["1", "1", "BYTE"], 6),
        (["5", "30", "BIT"], 17), (["0", "-1", "bit"], 26), (["-1", "-1"], 4), (["0"], 26),
        (["2"], 16), (["0", "1", "BIT"], 1), (["-100", "-50"], 4), (["3", "1"], 0),
        (["-1", "-3"], 0), (["-3", "-1", "BIT"], 1), (["7", "-9", "BIT"], 18),
        (["-9223372036854775808", "9223372036854775807"], 26),
        (["-9223372036854775808", "9223372036854775807", "BIT"], 26),
        (["0", "9223372036854775807", "BIT"], 26),
    ],
)
def test_bitcount(r, args, count):
    r.call("SET", "s", "foobar")
    assert r.call("BITCOUNT", "s", *args) == (":", count)


def test_bitcount_errors_and_missing_keys(r):
    r.call("SET", "s", "foobar")
    assert r.call("BITCOUNT", "s", "0", "1", "2") == SYNTAX
    assert r.call("BITCOUNT", "s", "0", "1", "bogus") == SYNTAX
    assert r.call("BITCOUNT", "s", "0", "1", "BYTE", "BYTE") == SYNTAX
    assert r.call("BITCOUNT", "s", "a", "1") == NOT_INT
    assert r.call("BITCOUNT", "s", "0", "a") == NOT_INT
    assert r.call("BITCOUNT", "s", "0", "a", "bogus") == SYNTAX  # the unit before the end
    assert r.call("BITCOUNT", "s", "a", "b", "bogus") == NOT_INT
    assert r.call("BITCOUNT", "missing") == (":", 0)
    assert r.call("BITCOUNT", "missing", "0", "1") == (":", 0)
    assert r.call("BITCOUNT", "missing", "0", "1", "bogus") == SYNTAX
    assert r.call("BITCOUNT", "missing", "a", "b") == NOT_INT
    r.call("RPUSH", "list", "a")
    assert r.call("BITCOUNT", "list", "a", "b") == NOT_INT
    assert r.call("BITCOUNT", "list", "0", "1", "bogus") == SYNTAX
    assert r.call("BITCOUNT", "list", "0", "1", "BYTE", "x") == SYNTAX
    r.call("SET", "e", "")
    assert r.call("BITCOUNT", "e") == (":", 0)
    assert r.call("BITCOUNT", "e", "0", "-1") == (":", 0)


# --- BITPOS --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value, args, pos",
    [
        (b"\xff\xf0\x00", ["0"], 12), (b"\xff\xf0\x00", ["1"], 0),
        (b"\xff\xf0\x00", ["0", "0"], 12), (b"\xff\xf0\x00", ["1", "2"], -1),
        (b"\xff\xf0\x00", ["0", "2", "-1"], 16), (b"\xff\xf0\x00", ["0", "0", "0"], -1),
        (b"\xff\xf0\x00", ["0", "0", "0", "BIT"], -1), (b"\xff\xf0\x00", ["0", "3", "11", "BIT"], -1),
        (b"\xff\xf0\x00", ["0", "3", "12", "bit"], 12), (b"\xff\xf0\x00", ["1", "9", "30", "BIT"], 9),
        (b"\xff\xf0\x00", ["1", "12", "23", "BIT"], -1), (b"\xff\xf0\x00", ["0", "12", "23", "BIT"], 12),
        (b"\xff\xff\xff", ["0"], 24), (b"\xff\xff\xff", ["0", "1"], 24),
        (b"\xff\xff\xff", ["0", "0", "-1"], -1), (b"\xff\xff\xff", ["0", "0", "-1", "BIT"], -1),
        (b"\xff\xff\xff", ["1", "1", "1", "BIT"], 1), (b"\xff\xff\xff", ["0", "5"], -1),
        (b"\xff\xff\xff", ["0", "-1"], 24), (b"\x00\x00\x01", ["1", "-1"], 23),
        (b"\x00\x00\x01", ["1", "-9", "-1", "BIT"], 23), (b"\x00\x00\x01", ["1", "0", "-2"], -1),
        (b"\x00\x00\x01", ["1", "3", "2"], -1), (b"\x00\x00\x01", ["0", "-1", "-3"], -1),
        (b"\x00\x00\x00", ["1"], -1), (b"\x00\x00\x00", ["0", "1"], 8),
        (b"", ["0"], -1), (b"", ["1"], -1), (b"", ["0", "0"], -1),
        (b"12", ["1"], 2), (b"\x00" * 40 + b"\x08" + b"\xff" * 30, ["1", "3"], 324),
        (b"\xff" * 50 + b"\xfe", ["0", "10", "-1"], 407),
    ],
)
def test_bitpos(r, value, args, pos):
    r.call("SET", "k", value)
    assert r.call("BITPOS", "k", *args) == (":", pos)


def test_bitpos_errors_and_missing_keys(r):
    must = ("-", b"ERR The bit argument must be 1 or 0.")
    assert r.call("BITPOS", "missing", "0") == (":", 0)
    assert r.call("BITPOS", "missing", "1") == (":", -1)
    assert r.call("BITPOS", "missing", "0", "5", "7", "BIT") == (":", 0)
    assert r.call("BITPOS", "missing", "2") == must
    assert r.call("BITPOS", "missing", "abc") == NOT_INT
    assert r.call("BITPOS", "missing", "1", "a") == NOT_INT
    assert r.call("BITPOS", "missing", "1", "0", "a") == NOT_INT
    assert r.call("BITPOS", "missing", "1", "0", "1", "bogus") == SYNTAX
    assert r.call("BITPOS", "missing", "1", "0", "1", "BIT", "extra") == SYNTAX
    r.call("RPUSH", "list", "a")
    assert r.call("BITPOS", "list", "2") == must
    assert r.call("BITPOS", "list", "1", "a") == NOT_INT
    assert r.call("BITPOS", "list", "1", "0", "1", "bogus") == SYNTAX


# --- BITOP -----------------------------------------------------------------------------------


def test_bitop(r):
    r.call("SET", "a", b"\xff\xf0\x00")
    r.call("SET", "b", b"\x0f\x0f")
    r.call("SET", "c", b"\x01")
    assert r.call("BITOP", "AND", "d", "a", "b") == (":", 3)
    assert r.call("GET", "d") == ("$", b"\x0f\x00\x00")
    assert r.call("BITOP", "or", "d", "a", "b", "c") == (":", 3)
    assert r.call("GET", "d") == ("$", b"\xff\xff\x00")
    assert r.call("BITOP", "XOR", "d", "a", "b", "c") == (":", 3)
    assert r.call("GET", "d") == ("$", b"\xf1\xff\x00")
    assert r.call("BITOP", "NOT", "d", "a") == (":", 3)
    assert r.call("GET", "d") == ("$", b"\x00\x0f\xff")
    assert r.call("BITOP", "AND", "d", "a", "missing") == (":", 3)
    assert r.call("GET", "d") == ("$", b"\x00\x00\x00")
    r.call("SET", "i", "12")
    assert r.call("BITOP", "NOT", "d", "i") == (":", 2)
    assert r.call("GET", "d") == ("$", b"\xce\xcd")
    assert r.call("BITOP", "OR", "a", "a", "b") == (":", 3)  # the destination may be a source
    assert r.call("GET", "a") == ("$", b"\xff\xff\x00")


def test_bitop_long_values(r):
    long = bytes(range(256)) * 3
    r.call("SET", "l", long)
    r.call("SET", "s", b"\xaa" * 100)
    assert r.call("BITOP", "XOR", "d", "l", "s") == (":", 768)
    expected = bytes(x ^ 0xAA for x in long[:100]) + long[100:]
    assert r.call("GET", "d") == ("$", expected)
    assert r.call("BITOP", "NOT", "d", "l") == (":", 768)
    assert r.call("GET", "d") == ("$", bytes(255 - x for x in long))


def test_bitop_of_nothing_deletes_the_destination(r):
    r.call("SET", "dest", "x", "EX", "100")
    assert r.call("BITOP", "AND", "dest", "missing1", "missing2") == (":", 0)
    assert r.call("EXISTS", "dest") == (":", 0)
    r.call("SET", "src", "a")
    r.call("SET", "dest", "x", "EX", "100")
    assert r.call("BITOP", "AND", "dest", "src") == (":", 1)
    assert r.call("PTTL", "dest") == (":", -1)


def test_bitop_errors(r):
    r.call("SET", "a", "x")
    r.call("RPUSH", "list", "a")
    assert r.call("BITOP", "bogus", "d", "a") == SYNTAX
    assert r.call("BITOP", "DIFF", "d", "a", "a") == SYNTAX
    assert r.call("BITOP", "NOT", "d", "a", "a") == (
        "-", b"ERR BITOP NOT must be called with a single source key."
    )
    assert r.call("BITOP", "AND", "d") == ("-", b"ERR wrong number of arguments for 'bitop' command")
    assert r.call("BITOP", "AND", "d", "a", "list") == WRONGTYPE
    assert r.call("BITOP", "AND", "d", "list", "missing") == WRONGTYPE
    assert r.call("EXISTS", "d") == (":", 0)


# --- BITFIELD --------------------------------------------------------------------------------


def test_bitfield_set_get_incrby(r, proto):
    assert r.call("BITFIELD", "k", "SET", "i5", "3", "-7", "GET", "i5", "3", "GET", "u5", "3",
                  "GET", "u3", "5", "GET", "i13", "1") == ints(0, -7, 25, 1, 1600)
    assert r.call("BITFIELD", "k", "INCRBY", "u2", "100", "1", "incrby", "u2", "100", "1",
                  "INCRBY", "u2", "100", "1", "INCRBY", "u2", "100", "1") == ints(1, 2, 3, 0)
    assert r.call("BITFIELD", "k", "OVERFLOW", "SAT", "INCRBY", "u2", "102", "1",
                  "INCRBY", "u2", "102", "1", "INCRBY", "u2", "102", "1",
                  "INCRBY", "u2", "102", "-5") == ints(1, 2, 3, 0)
    assert r.call("BITFIELD", "k", "OVERFLOW", "FAIL", "INCRBY", "i3", "200", "3",
                  "INCRBY", "i3", "200", "1", "INCRBY", "i3", "200", "-8",
                  "INCRBY", "i3", "200", "-7") == ("*", [(":", 3), nil(proto), nil(proto), (":", -4)])
    assert r.call("GET", "k") == ("$", b"\x19" + b"\x00" * 24 + b"\x80")
    assert r.call("BITFIELD", "k", "GET", "u8", "400", "GET", "i64", "300") == ints(0, 0)
    assert r.call("BITFIELD", "k") == ("*", [])
    assert r.call("BITFIELD", "k", "OVERFLOW", "SAT") == ("*", [])


def test_bitfield_overflow_policies(r, proto):
    assert r.call("BITFIELD", "k", "SET", "u8", "0", "-1") == ints(0)
    assert r.call("BITFIELD", "k", "OVERFLOW", "SAT", "SET", "u8", "0", "-1") == ints(255)
    assert r.call("BITFIELD", "k", "OVERFLOW", "SAT", "SET", "i8", "0", "-200") == ints(-1)
    assert r.call("BITFIELD", "k", "GET", "i8", "0", "GET", "u8", "0") == ints(-128, 128)
    # SET reads its value as unsigned 64 bits: a negative one saturates at the top
    assert r.call("BITFIELD", "k", "OVERFLOW", "SAT", "SET", "u8", "0", "-300") == ints(128)
    assert r.call("BITFIELD", "k", "GET", "u8", "0") == ints(255)
    assert r.call("BITFIELD", "k", "set", "u8", "0", "0", "OVERFLOW", "sat", "INCRBY", "i8", "0",
                  "1000", "overflow", "WRAP", "INCRBY", "i8", "0", "1000") == ints(255, 127, 103)
    assert r.call("BITFIELD", "k", "OVERFLOW", "WRAP", "SET", "i4", "0", "100", "OVERFLOW", "SAT",
                  "SET", "i4", "4", "100", "SET", "u4", "0", "100") == ints(6, 7, 4)
    assert r.call("BITFIELD", "k", "OVERFLOW", "FAIL", "SET", "i4", "0", "100", "SET", "u4", "0",
                  "100", "SET", "u4", "0", "15") == ("*", [nil(proto), nil(proto), (":", 15)])


def test_bitfield_64_bit_edges(r, proto):
    assert r.call("BITFIELD", "k", "SET", "i64", "0", "1") == ints(0)
    assert r.call("BITFIELD", "k", "INCRBY", "i64", "0", "9223372036854775807",
                  "INCRBY", "i64", "0", "9223372036854775807") == ints(
        -9223372036854775808, -1
    )
    assert r.call("BITFIELD", "k", "OVERFLOW", "SAT", "INCRBY", "i64", "0",
                  "9223372036854775807") == ints(9223372036854775806)
    assert r.call("BITFIELD", "k", "OVERFLOW", "SAT", "INCRBY", "i64", "0",
                  "-9223372036854775808", "INCRBY", "i64", "0",
                  "-9223372036854775808") == ints(-2, -9223372036854775808)
    assert r.call("BITFIELD", "k", "OVERFLOW", "WRAP", "INCRBY", "u63", "0", "-1") == ints(
        4611686018427387903
    )
    assert r.call("BITFIELD", "k", "OVERFLOW", "FAIL", "INCRBY", "u63", "0", "-1", "INCRBY",
                  "u63", "0", "9223372036854775807") == ("*", [(":", 4611686018427387902),
                                                                nil(proto)])
    # Valkey's limits are computed in 64 bits and wrap: a SET far below the range
    # saturates at the top
    assert r.call("BITFIELD", "s", "OVERFLOW", "SAT", "SET", "i8", "0", "-9223372036854775808",
                  "GET", "i8", "0", "SET", "i8", "0", "-9223372036854775680",
                  "GET", "i8", "0") == ints(0, 127, 127, -128)
    assert r.call("BITFIELD", "k", "OVERFLOW", "SAT", "SET", "u63", "0", "-1", "SET", "i64", "0",
                  "-1", "GET", "u63", "1") == ints(4611686018427387902, -2, 9223372036854775807)


def test_bitfield_offsets(r):
    assert r.call("BITFIELD", "k", "SET", "u8", "#1", "255", "GET", "u8", "8") == ints(0, 255)
    assert r.call("BITFIELD", "k", "GET", "u4", "#3") == ints(15)
    # "#N" is N * bits in 64-bit arithmetic: 2**61 + 1 bytes wraps round to byte 1
    assert r.call("BITFIELD", "k", "GET", "u8", "#2305843009213693953") == ints(255)
    for offset in ("-1", "##1", "#-1", "#", "4294967296", "abc", "#536870912"):
        assert r.call("BITFIELD", "k", "GET", "u8", offset) == BAD_OFFSET
    assert r.call("BITFIELD", "k", "GET", "u8", "4294967295") == ints(0)


@pytest.mark.parametrize("kind", ["u64", "i65", "i0", "u0", "x8", "I8", "U8", "i08", "i", "", "i-1"])
def test_bitfield_bad_types(r, kind):
    assert r.call("BITFIELD", "k", "GET", kind, "0") == BAD_TYPE
    assert r.call("BITFIELD_RO", "k", "GET", kind, "0") == BAD_TYPE


def test_bitfield_errors(r):
    bad_overflow = ("-", b"ERR Invalid OVERFLOW type specified")
    assert r.call("BITFIELD", "k", "SET", "u8", "0", "abc") == NOT_INT
    assert r.call("BITFIELD", "k", "SET", "u8", "0") == SYNTAX
    assert r.call("BITFIELD", "k", "GET", "u8") == SYNTAX
    assert r.call("BITFIELD", "k", "bogus") == SYNTAX
    assert r.call("BITFIELD", "k", "OVERFLOW") == SYNTAX
    assert r.call("BITFIELD", "k", "OVERFLOW", "bogus") == bad_overflow
    assert r.call("BITFIELD", "k", "GET", "u8", "0", "OVERFLOW", "bogus") == bad_overflow
    assert r.call("BITFIELD", "k", "GET", "x8", "0", "OVERFLOW", "bogus") == BAD_TYPE
    assert r.call("BITFIELD", "k", "SET", "u8", "0", "1", "GET", "x8", "0") == BAD_TYPE
    assert r.call("EXISTS", "k") == (":", 0)  # nothing runs when any part is wrong
    r.call("RPUSH", "list", "a")
    assert r.call("BITFIELD", "list", "GET", "u8", "0") == WRONGTYPE
    assert r.call("BITFIELD", "list", "SET", "u8", "0", "1") == WRONGTYPE
    assert r.call("BITFIELD", "list", "SET", "x8", "0", "1") == BAD_TYPE


def test_bitfield_creates_the_key_even_when_every_write_fails(r, proto):
    assert r.call("BITFIELD", "k", "OVERFLOW", "FAIL", "INCRBY", "u8", "8", "300") == (
        "*", [nil(proto)]
    )
    assert r.call("GET", "k") == ("$", b"\x00\x00")
    assert r.call("BITFIELD", "g", "GET", "u8", "0") == ints(0)
    assert r.call("EXISTS", "g") == (":", 0)


def test_bitfield_ro(r):
    only_get = ("-", b"ERR BITFIELD_RO only supports the GET subcommand")
    r.call("SET", "k", "abc")
    assert r.call("BITFIELD_RO", "k", "GET", "u8", "0", "GET", "i4", "#2") == ints(97, 6)
    assert r.call("BITFIELD_RO", "k", "OVERFLOW", "SAT", "GET", "u8", "8") == ints(98)
    assert r.call("BITFIELD_RO", "k") == ("*", [])
    assert r.call("BITFIELD_RO", "missing", "GET", "i64", "0") == ints(0)
    assert r.call("BITFIELD_RO", "k", "GET", "u8", "0", "INCRBY", "u8", "0", "1") == only_get
    assert r.call("BITFIELD_RO", "k", "SET", "u8", "0", "1") == only_get
    r.call("RPUSH", "list", "a")
    assert r.call("BITFIELD_RO", "list", "GET", "u8", "0") == WRONGTYPE
    assert r.call("BITFIELD_RO", "list", "SET", "u8", "0", "1") == only_get


def test_bit_writes_make_the_value_raw(r):
    for key in ("a", "b", "c", "d"):
        r.call("SET", key, "abc")
    r.call("SETBIT", "a", "0", "0")  # even a write that changes nothing
    r.call("BITFIELD", "b", "OVERFLOW", "FAIL", "INCRBY", "u8", "0", "300")
    r.call("BITFIELD", "c", "GET", "u8", "0")  # a read leaves the value alone
    r.call("BITOP", "OR", "d", "d")
    assert r.call("OBJECT", "ENCODING", "a") == ("$", b"raw")
    assert r.call("OBJECT", "ENCODING", "b") == ("$", b"raw")
    assert r.call("OBJECT", "ENCODING", "c") == ("$", b"embstr")
    assert r.call("OBJECT", "ENCODING", "d") == ("$", b"raw")


def test_bit_writes_keep_the_ttl(r):
    r.call("SET", "k", "abc", "EX", "100")
    r.call("SETBIT", "k", "100", "1")
    r.call("BITFIELD", "k", "SET", "u8", "0", "1")
    kind, ttl = r.call("PTTL", "k")
    assert kind == ":" and 99_000 < ttl <= 100_000


# --- fakekey and Valkey side by side ---------------------------------------------------------


@pytest.fixture(scope="module")
def both(pytestconfig):
    """Raw clients on fakekey and on the real server, for comparing replies."""
    names = os.environ.get("FAKEKEY_TARGETS", "fakekey,valkey")
    if os.environ.get("FAKEKEY_TARGET_URL") or "valkey" not in names or "fakekey" not in names:
        pytest.skip("needs both fakekey and a valkey-server it starts")
    if find_valkey_binary() is None and not os.environ.get("CI"):
        pytest.skip("no valkey-server binary")
    conftest = pytestconfig.pluginmanager.get_plugin(str(Path(__file__).with_name("conftest.py")))
    clients = [conftest._started_target(n).raw(2) for n in ("fakekey", "valkey")]
    yield clients
    for client in clients:
        client.close()


_types = st.builds(
    lambda signed, bits: f"i{bits}" if signed else f"u{min(bits, 63)}",
    st.booleans(),
    st.integers(1, 64),
)
_offsets = st.one_of(st.integers(0, 200).map(str), st.integers(0, 20).map(lambda n: f"#{n}"))
_values = st.one_of(
    st.integers(-300, 300),
    st.integers(-(2**63), 2**63 - 1),
    st.sampled_from([2**63 - 1, -(2**63), 2**62, -(2**62), 255, 256, -129]),
).map(str)
_field_ops = st.one_of(
    st.tuples(st.just("GET"), _types, _offsets),
    st.tuples(st.sampled_from(["SET", "INCRBY"]), _types, _offsets, _values),
    st.tuples(st.just("OVERFLOW"), st.sampled_from(["WRAP", "SAT", "FAIL"])),
)


@settings(deadline=None)
@given(
    start=st.binary(max_size=12),
    commands=st.lists(st.lists(_field_ops, min_size=1, max_size=5), min_size=1, max_size=4),
)
def test_bitfield_matches_valkey(both, start, commands):
    for client in both:
        client.call("SET", "hyp:b", start)
    for ops in commands:
        argv = ["BITFIELD", "hyp:b", *(part for op in ops for part in op)]
        fake, real = (client.call(*argv) for client in both)
        assert fake == real, " ".join(argv)
    fake, real = (client.call("GET", "hyp:b") for client in both)
    assert fake == real
