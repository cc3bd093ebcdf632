"""String commands: every option, every error text and the wire type of each reply.

Expected values were read from a real Valkey 9.1 server."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fakekey.testing.targets import find_valkey_binary

OK = ("+", b"OK")
SYNTAX = ("-", b"ERR syntax error")
NOT_INT = ("-", b"ERR value is not an integer or out of range")
NOT_FLOAT = ("-", b"ERR value is not a valid float")
WRONGTYPE = ("-", b"WRONGTYPE Operation against a key holding the wrong kind of value")
NAN_INF = ("-", b"ERR increment would produce NaN or Infinity")


def nil(proto: int) -> tuple[str, None]:
    return ("$", None) if proto == 2 else ("_", None)


def bad_expire(command: str) -> tuple[str, bytes]:
    return ("-", f"ERR invalid expire time in '{command}' command".encode())


def arity(command: str) -> tuple[str, bytes]:
    return ("-", f"ERR wrong number of arguments for '{command}' command".encode())


def pttl(r, key: str) -> int:
    kind, value = r.call("PTTL", key)
    assert kind == ":"
    return value


# --- GET / SET ---------------------------------------------------------------------------


def test_get_set_wire_types(r, proto):
    assert r.call("SET", "k", "v") == OK
    assert r.call("GET", "k") == ("$", b"v")
    assert r.call("GET", "missing") == nil(proto)
    assert r.call("SET", "empty", "") == OK
    assert r.call("GET", "empty") == ("$", b"")
    assert r.call("SET", "bin", b"\x00\xff\r\n") == OK
    assert r.call("GET", "bin") == ("$", b"\x00\xff\r\n")


def test_get_and_set_on_other_types(r, proto):
    r.call("RPUSH", "list", "a")
    assert r.call("GET", "list") == WRONGTYPE
    assert r.call("SET", "list", "v", "NX") == nil(proto)
    assert r.call("SET", "list", "v", "GET") == WRONGTYPE
    assert r.call("SET", "list", "v", "IFEQ", "x") == WRONGTYPE
    assert r.call("SET", "list", "v", "IFEQ", "x", "GET") == WRONGTYPE
    assert r.call("SET", "list", "v") == OK  # a plain SET replaces any type
    assert r.call("TYPE", "list") == ("+", b"string")


@pytest.mark.parametrize(
    "options",
    [
        ["NX", "XX"], ["XX", "NX"], ["EX", "1", "PX", "1"], ["PX", "1", "EXAT", "1"],
        ["KEEPTTL", "EX", "1"], ["EX", "1", "KEEPTTL"], ["IFEQ", "a", "NX"], ["NX", "IFEQ", "a"],
        ["XX", "IFEQ", "a"], ["IFEQ", "a", "IFEQ", "b"], ["IFEQ"], ["EX"], ["PXAT"],
        ["PERSIST"], ["bogus"], ["GET", "bogus"], ["bogus", "EX", "0"],
    ],
)
def test_set_option_syntax_errors(r, options):
    assert r.call("SET", "k", "v", *options) == SYNTAX
    assert r.call("EXISTS", "k") == (":", 0)


def test_set_syntax_is_checked_before_expire_and_type(r):
    r.call("RPUSH", "list", "a")
    assert r.call("SET", "list", "v", "bogus", "GET") == SYNTAX
    assert r.call("SET", "list", "v", "EX", "abc", "GET") == NOT_INT
    assert r.call("SET", "list", "v", "XX", "GET", "EX", "0") == bad_expire("set")


@pytest.mark.parametrize(
    "unit, value, reply",
    [
        ("EX", "0", bad_expire("set")),
        ("EX", "-1", bad_expire("set")),
        ("PX", "0", bad_expire("set")),
        ("EXAT", "0", bad_expire("set")),
        ("PXAT", "-5", bad_expire("set")),
        ("EX", "abc", NOT_INT),
        ("PX", "1.5", NOT_INT),
        ("EX", "9223372036854775807", bad_expire("set")),
        ("PX", "9223372036854775807", bad_expire("set")),
        ("EXAT", "9223372036854776", bad_expire("set")),
        ("EX", "9223372036854775808", NOT_INT),
    ],
)
def test_set_expire_errors(r, unit, value, reply):
    assert r.call("SET", "k", "v", unit, value) == reply


def test_set_expiry_options(r):
    assert r.call("SET", "k", "v", "EX", "100") == OK
    assert 99_000 < pttl(r, "k") <= 100_000
    assert r.call("SET", "k", "v", "PX", "5000") == OK
    assert 4_000 < pttl(r, "k") <= 5_000
    assert r.call("SET", "k", "v", "EX", "100", "ex", "200") == OK  # same unit again: last wins
    assert 199_000 < pttl(r, "k") <= 200_000
    assert r.call("SET", "k", "v2", "KEEPTTL") == OK
    assert 199_000 < pttl(r, "k") <= 200_000
    assert r.call("SET", "k", "v3", "KEEPTTL", "keepttl") == OK
    assert r.call("SET", "k", "v4") == OK  # no KEEPTTL: the TTL goes
    assert pttl(r, "k") == -1
    assert r.call("SET", "k", "v", "EXAT", "9223372036854775") == OK
    assert r.call("SET", "k", "v", "PXAT", "9223372036854775807") == OK
    assert pttl(r, "k") > 9_000_000_000_000_000_000


def test_set_with_a_past_deadline(r, proto):
    assert r.call("SET", "gone", "v", "PXAT", "1") == OK
    assert r.call("EXISTS", "gone") == (":", 0)
    r.call("SET", "k", "old")
    assert r.call("SET", "k", "new", "EXAT", "1", "GET") == ("$", b"old")
    assert r.call("EXISTS", "k") == (":", 0)
    r.call("SET", "k", "old")
    assert r.call("SET", "k", "new", "XX", "PXAT", "1") == OK
    assert r.call("GET", "k") == nil(proto)


def test_set_nx_xx_get(r, proto):
    assert r.call("SET", "k", "1", "XX") == nil(proto)
    assert r.call("SET", "k", "1", "NX") == OK
    assert r.call("SET", "k", "2", "NX") == nil(proto)
    assert r.call("SET", "k", "2", "nx", "nx") == nil(proto)
    assert r.call("SET", "k", "2", "XX") == OK
    assert r.call("SET", "k", "3", "NX", "GET") == ("$", b"2")  # old value, nothing set
    assert r.call("GET", "k") == ("$", b"2")
    assert r.call("SET", "k", "4", "GET", "get") == ("$", b"2")
    assert r.call("SET", "new", "1", "GET") == nil(proto)
    assert r.call("SET", "other", "1", "XX", "GET") == nil(proto)
    assert r.call("EXISTS", "other") == (":", 0)


def test_set_ifeq(r, proto):
    assert r.call("SET", "missing", "v", "IFEQ", "x") == nil(proto)
    assert r.call("SET", "missing", "v", "IFEQ", "x", "GET") == nil(proto)
    assert r.call("EXISTS", "missing") == (":", 0)
    r.call("SET", "k", "v1")
    assert r.call("SET", "k", "v2", "IFEQ", "nope") == nil(proto)
    assert r.call("SET", "k", "v2", "IFEQ", "nope", "GET") == ("$", b"v1")
    assert r.call("GET", "k") == ("$", b"v1")
    assert r.call("SET", "k", "v2", "IFEQ", "v1") == OK
    assert r.call("SET", "k", "v3", "ifeq", "v2", "GET", "EX", "100") == ("$", b"v2")
    assert r.call("GET", "k") == ("$", b"v3")
    assert pttl(r, "k") > 99_000


# --- SETNX / SETEX / PSETEX / GETSET / GETDEL / DELIFEQ ------------------------------------


def test_setnx(r):
    assert r.call("SETNX", "k", "1") == (":", 1)
    assert r.call("SETNX", "k", "2") == (":", 0)
    assert r.call("GET", "k") == ("$", b"1")
    r.call("RPUSH", "list", "a")
    assert r.call("SETNX", "list", "1") == (":", 0)


def test_setex_and_psetex(r):
    assert r.call("SETEX", "k", "100", "v") == OK
    assert 99_000 < pttl(r, "k") <= 100_000
    assert r.call("PSETEX", "p", "100000", "v") == OK
    assert 99_000 < pttl(r, "p") <= 100_000
    assert r.call("SETEX", "k", "0", "v") == bad_expire("setex")
    assert r.call("SETEX", "k", "-5", "v") == bad_expire("setex")
    assert r.call("SETEX", "k", "9223372036854775807", "v") == bad_expire("setex")
    assert r.call("SETEX", "k", "abc", "v") == NOT_INT
    assert r.call("PSETEX", "k", "0", "v") == bad_expire("psetex")
    assert r.call("PSETEX", "k", "1.5", "v") == NOT_INT
    r.call("RPUSH", "list", "a")
    assert r.call("SETEX", "list", "10", "v") == OK
    assert r.call("TYPE", "list") == ("+", b"string")


def test_getset(r, proto):
    assert r.call("GETSET", "k", "1") == nil(proto)
    r.call("EXPIRE", "k", "100")
    assert r.call("GETSET", "k", "2") == ("$", b"1")
    assert pttl(r, "k") == -1  # GETSET drops the TTL
    r.call("RPUSH", "list", "a")
    assert r.call("GETSET", "list", "x") == WRONGTYPE


def test_getdel(r, proto):
    r.call("SET", "k", "v")
    assert r.call("GETDEL", "k") == ("$", b"v")
    assert r.call("GETDEL", "k") == nil(proto)
    assert r.call("EXISTS", "k") == (":", 0)
    r.call("RPUSH", "list", "a")
    assert r.call("GETDEL", "list") == WRONGTYPE


def test_delifeq(r):
    assert r.call("DELIFEQ", "missing", "x") == (":", 0)
    r.call("SET", "k", "v")
    assert r.call("DELIFEQ", "k", "w") == (":", 0)
    assert r.call("DELIFEQ", "k", "v") == (":", 1)
    assert r.call("EXISTS", "k") == (":", 0)
    r.call("RPUSH", "list", "a")
    assert r.call("DELIFEQ", "list", "a") == WRONGTYPE


# --- GETEX ---------------------------------------------------------------------------------


def test_getex(r, proto):
    assert r.call("GETEX", "missing") == nil(proto)
    assert r.call("GETEX", "missing", "EX", "10") == nil(proto)
    r.call("SET", "k", "v")
    assert r.call("GETEX", "k") == ("$", b"v")
    assert pttl(r, "k") == -1
    assert r.call("GETEX", "k", "EX", "100") == ("$", b"v")
    assert 99_000 < pttl(r, "k") <= 100_000
    assert r.call("GETEX", "k", "ex", "10", "EX", "20") == ("$", b"v")
    assert 19_000 < pttl(r, "k") <= 20_000
    assert r.call("GETEX", "k", "PX", "50000") == ("$", b"v")
    assert 49_000 < pttl(r, "k") <= 50_000
    assert r.call("GETEX", "k", "PERSIST", "persist") == ("$", b"v")
    assert pttl(r, "k") == -1
    assert r.call("GETEX", "k", "PXAT", "9223372036854775807") == ("$", b"v")
    assert r.call("GETEX", "k", "EXAT", "1") == ("$", b"v")  # a past time deletes the key
    assert r.call("EXISTS", "k") == (":", 0)


@pytest.mark.parametrize(
    "options, reply",
    [
        (["PERSIST", "EX", "10"], SYNTAX),
        (["EX", "10", "PERSIST"], SYNTAX),
        (["EX", "10", "PX", "20"], SYNTAX),
        (["NX"], SYNTAX),
        (["KEEPTTL"], SYNTAX),
        (["GET"], SYNTAX),
        (["EX"], SYNTAX),
        (["bogus"], SYNTAX),
        (["EX", "0"], bad_expire("getex")),
        (["EXAT", "9223372036854776"], bad_expire("getex")),
        (["PX", "abc"], NOT_INT),
    ],
)
def test_getex_errors(r, options, reply):
    r.call("SET", "k", "v")
    assert r.call("GETEX", "k", *options) == reply
    assert r.call("GETEX", "missing", *options) == reply


def test_getex_wrong_type_comes_after_the_options(r):
    r.call("RPUSH", "list", "a")
    assert r.call("GETEX", "list") == WRONGTYPE
    assert r.call("GETEX", "list", "PERSIST") == WRONGTYPE
    assert r.call("GETEX", "list", "EX", "0") == bad_expire("getex")
    assert r.call("GETEX", "list", "bogus") == SYNTAX


# --- MGET / MSET / MSETNX / MSETEX ---------------------------------------------------------


def test_mget(r, proto):
    r.call("SET", "a", "1")
    r.call("RPUSH", "list", "x")
    r.call("APPEND", "raw", "z")
    r.call("APPEND", "raw", "z")
    assert r.call("MGET", "a", "list", "missing", "raw") == (
        "*", [("$", b"1"), nil(proto), nil(proto), ("$", b"zz")]
    )


def test_mset_and_msetnx(r):
    assert r.call("MSET", "a", "1") == OK
    assert r.call("MSET", "a", "1", "b") == arity("mset")
    assert r.call("MSET", "a") == arity("mset")
    assert r.call("MSET", "a", "1", "b", "2", "a", "3") == OK
    assert r.call("MGET", "a", "b") == ("*", [("$", b"3"), ("$", b"2")])
    assert r.call("MSETNX", "a", "1", "b") == arity("msetnx")
    assert r.call("MSETNX", "c", "1", "a", "2") == (":", 0)
    assert r.call("EXISTS", "c") == (":", 0)
    assert r.call("MSETNX", "c", "1", "d", "2", "c", "3") == (":", 1)
    assert r.call("GET", "c") == ("$", b"3")
    r.call("RPUSH", "list", "x")
    assert r.call("MSETNX", "e", "1", "list", "2") == (":", 0)


def test_msetex(r):
    assert r.call("MSETEX", "1", "a", "1") == (":", 1)
    assert pttl(r, "a") == -1
    assert r.call("MSETEX", "2", "a", "1", "b", "2", "EX", "100") == (":", 1)
    assert 99_000 < pttl(r, "b") <= 100_000
    assert r.call("MSETEX", "2", "a", "x", "b", "y", "NX") == (":", 0)
    assert r.call("MSETEX", "2", "a", "x", "c", "y", "XX") == (":", 0)
    assert r.call("EXISTS", "c") == (":", 0)
    assert r.call("MGET", "a", "b") == ("*", [("$", b"1"), ("$", b"2")])
    assert r.call("MSETEX", "1", "a", "k", "KEEPTTL", "xx") == (":", 1)
    assert 99_000 < pttl(r, "a") <= 100_000
    assert r.call("MSETEX", "1", "a", "j") == (":", 1)
    assert pttl(r, "a") == -1
    assert r.call("MSETEX", "2", "d", "1", "d", "2", "NX", "PX", "5000") == (":", 1)
    assert r.call("GET", "d") == ("$", b"2")
    assert r.call("MSETEX", "2", "a", "1", "e", "2", "PXAT", "1") == (":", 1)
    assert r.call("EXISTS", "a", "e") == (":", 0)
    r.call("RPUSH", "list", "x")
    assert r.call("MSETEX", "1", "list", "s", "XX") == (":", 1)
    assert r.call("TYPE", "list") == ("+", b"string")


@pytest.mark.parametrize(
    "args, reply",
    [
        (["0"], arity("msetex")),
        (["1", "a"], arity("msetex")),
        (["0", "a", "1"], ("-", b"ERR invalid numkeys value or out of range")),
        (["-1", "a", "1"], ("-", b"ERR invalid numkeys value or out of range")),
        (["x", "a", "1"], ("-", b"ERR invalid numkeys value or out of range")),
        (["01", "a", "1"], ("-", b"ERR invalid numkeys value or out of range")),
        (["2147483648", "a", "1"], ("-", b"ERR invalid numkeys value or out of range")),
        (["2147483647", "a", "1"], SYNTAX),
        (["2", "a", "1"], SYNTAX),
        (["1", "a", "1", "b"], SYNTAX),
        (["1", "a", "1", "GET"], SYNTAX),
        (["1", "a", "1", "PERSIST"], SYNTAX),
        (["1", "a", "1", "IFEQ", "1"], SYNTAX),
        (["1", "a", "1", "NX", "XX"], SYNTAX),
        (["1", "a", "1", "EX", "1", "PX", "1"], SYNTAX),
        (["1", "a", "1", "EX", "100", "KEEPTTL"], SYNTAX),
        (["1", "a", "1", "EX"], SYNTAX),
        (["1", "a", "1", "EX", "0", "bogus"], SYNTAX),
        (["1", "a", "1", "EX", "0"], bad_expire("msetex")),
        (["1", "a", "1", "EX", "abc"], NOT_INT),
    ],
)
def test_msetex_errors(r, args, reply):
    assert r.call("MSETEX", *args) == reply
    assert r.call("EXISTS", "a") == (":", 0)


# --- counters ----------------------------------------------------------------------------


def test_incr_decr(r):
    assert r.call("INCR", "n") == (":", 1)
    assert r.call("INCRBY", "n", "41") == (":", 42)
    assert r.call("DECR", "n") == (":", 41)
    assert r.call("DECRBY", "n", "-9") == (":", 50)
    assert r.call("GET", "n") == ("$", b"50")
    assert r.call("DECRBY", "m", "9223372036854775807") == (":", -9223372036854775807)
    assert r.call("INCRBY", "m", "-1") == (":", -9223372036854775808)


def test_incr_overflow_and_errors(r):
    overflow = ("-", b"ERR increment or decrement would overflow")
    r.call("SET", "max", "9223372036854775807")
    assert r.call("INCR", "max") == overflow
    assert r.call("INCRBY", "max", "0") == (":", 9223372036854775807)
    r.call("SET", "min", "-9223372036854775808")
    assert r.call("DECR", "min") == overflow
    assert r.call("INCRBY", "min", "-1") == overflow
    assert r.call("DECRBY", "min", "-9223372036854775808") == (
        "-", b"ERR decrement would overflow"
    )
    assert r.call("DECRBY", "new", "-9223372036854775808") == ("-", b"ERR decrement would overflow")
    assert r.call("INCRBY", "n", "1.5") == NOT_INT
    assert r.call("INCRBY", "n", "9223372036854775808") == NOT_INT
    assert r.call("GET", "max") == ("$", b"9223372036854775807")


@pytest.mark.parametrize("stored", ["abc", " 1", "1 ", "01", "+1", "-0", "", "1.0", "1e3"])
def test_incr_needs_a_canonical_integer(r, stored):
    r.call("SET", "k", stored)
    assert r.call("INCR", "k") == NOT_INT
    assert r.call("DECRBY", "k", "1") == NOT_INT


def test_incr_on_other_types(r):
    r.call("RPUSH", "list", "a")
    assert r.call("INCR", "list") == WRONGTYPE
    assert r.call("INCRBY", "list", "abc") == NOT_INT  # the increment is read first
    assert r.call("DECRBY", "list", "abc") == NOT_INT
    assert r.call("INCRBYFLOAT", "list", "abc") == WRONGTYPE  # the key is read first


def test_counters_keep_the_ttl(r):
    r.call("SET", "k", "5", "EX", "100")
    r.call("INCR", "k")
    r.call("INCRBYFLOAT", "k", "1.5")
    r.call("APPEND", "k", "0")
    r.call("SETRANGE", "k", "0", "9")
    assert r.call("GET", "k") == ("$", b"9.50")
    assert 99_000 < pttl(r, "k") <= 100_000


# --- INCRBYFLOAT -----------------------------------------------------------------------------

# (stored value or None, increment, reply): Valkey adds in 80-bit long double and prints
# "%.17Lf" without trailing zeros.
INCRBYFLOAT_CASES = [
    (None, "0.1", b"0.1"),
    ("0.1", "0.1", b"0.2"),
    ("0.1", "0.2", b"0.3"),
    ("10.50", "0.1", b"10.6"),
    (None, "5.0e3", b"5000"),
    (None, "3", b"3"),
    ("5", "-5", b"0"),
    (None, "-0", b"0"),
    (None, "-0.0", b"0"),
    (None, "1.23456789012345678901234", b"1.23456789012345679"),
    ("1e18", "1e3", b"1000000000000001000"),
    (None, "0x1p3", b"8"),
    ("10.5", "0X1P-2", b"10.75"),
    (None, "0xA.Bp-1", b"5.34375"),
    (None, "0x.8", b"0.5"),
    (None, "+5", b"5"),
    (None, ".5", b"0.5"),
    (None, "5.", b"5"),
    (None, "00001.5000", b"1.5"),
    (None, "-.5e-3", b"-0.0005"),
    (None, "1e-400", b"0"),
    (None, "0.000000000000000005", b"0"),  # a tie at the 17th decimal rounds to even
    (None, "0.000000000000000015", b"0.00000000000000002"),
    (None, "0x1p-18", b"0.00000381469726562"),
    (None, "0x3p-18", b"0.00001144409179688"),
    ("3.0000000000000000001", "0", b"3"),
    ("9007199254740993", "1", b"9007199254740994"),
    (None, "18446744073709551617", b"18446744073709551616"),
    (None, "123456789012345678901234567890", b"123456789012345678899921813504"),
    ("-1.5", "1.5", b"0"),
    ("12345", "0.5", b"12345.5"),
    (None, "0e99999999999999999999", b"0"),
]


@pytest.mark.parametrize("stored, increment, reply", INCRBYFLOAT_CASES)
def test_incrbyfloat_values(r, stored, increment, reply):
    if stored is not None:
        r.call("SET", "f", stored)
    assert r.call("INCRBYFLOAT", "f", increment) == ("$", reply)  # a bulk string in RESP3 too
    assert r.call("GET", "f") == ("$", reply)


def test_incrbyfloat_huge_values_print_every_digit(r):
    kind, text = r.call("INCRBYFLOAT", "f", "1e400")
    assert kind == "$"
    assert text.startswith(b"10000000000000000000281880683947586514586453433629052")
    assert len(text) == 401 and text.endswith(b"946880")
    kind, text = r.call("INCRBYFLOAT", "g", "1e4932")
    assert kind == "$" and len(text) == 4933 and text.startswith(b"10000000000000000000060189")


@pytest.mark.parametrize(
    "increment",
    ["abc", "nan", "nan(1)", " 1", "1 ", "", "1e", "1e+", ".", "+", "0x", "0x.", "0x1p",
     "infin", "1_0", "1e5000", "1e4933", "1e-4951", "0x1p16384",
     "1e99999999999999999999", "1e-99999999999999999999", "1" * 5120],
)
def test_incrbyfloat_refuses(r, increment):
    assert r.call("INCRBYFLOAT", "f", increment) == NOT_FLOAT
    assert r.call("EXISTS", "f") == (":", 0)


@pytest.mark.parametrize("increment", ["inf", "-inf", "INF", "infinity", "-Infinity"])
def test_incrbyfloat_infinity(r, increment):
    assert r.call("INCRBYFLOAT", "f", increment) == NAN_INF


def test_incrbyfloat_range_edges(r):
    largest = "0x1.fffffffffffffffep16383"
    assert r.call("INCRBYFLOAT", "big", largest)[0] == "$"
    assert r.call("INCRBYFLOAT", "big", largest) == NAN_INF  # the sum overflows
    assert r.call("INCRBYFLOAT", "x", "0x1.ffffffffffffffffp16383") == NOT_FLOAT  # rounds up
    assert r.call("INCRBYFLOAT", "tiny", "0x1p-16445") == ("$", b"0")  # the least subnormal
    assert r.call("INCRBYFLOAT", "tiny2", "0x1.1p-16446") == ("$", b"0")  # rounds up to it
    assert r.call("INCRBYFLOAT", "zero", "0x1p-16446") == NOT_FLOAT  # a tie to even: zero


@pytest.mark.parametrize("stored", ["abc", " 5", "5 ", "1e5000", ""])
def test_incrbyfloat_stored_value_must_be_a_float(r, stored):
    r.call("SET", "f", stored)
    assert r.call("INCRBYFLOAT", "f", "1") == NOT_FLOAT
    assert r.call("GET", "f") == ("$", stored.encode())


# --- APPEND / STRLEN / GETRANGE / SETRANGE -------------------------------------------------


def test_append_and_strlen(r):
    assert r.call("APPEND", "k", "Hello") == (":", 5)
    assert r.call("APPEND", "k", " World") == (":", 11)
    assert r.call("GET", "k") == ("$", b"Hello World")
    assert r.call("STRLEN", "k") == (":", 11)
    assert r.call("STRLEN", "missing") == (":", 0)
    assert r.call("APPEND", "empty", "") == (":", 0)
    assert r.call("EXISTS", "empty") == (":", 1)
    r.call("SET", "i", "12345")
    assert r.call("STRLEN", "i") == (":", 5)
    assert r.call("APPEND", "i", "6") == (":", 6)
    assert r.call("INCR", "i") == (":", 123457)
    r.call("RPUSH", "list", "a")
    assert r.call("APPEND", "list", "x") == WRONGTYPE
    assert r.call("STRLEN", "list") == WRONGTYPE


@pytest.mark.parametrize(
    "start, end, reply",
    [
        ("0", "4", b"Hello"), ("-5", "-1", b"World"), ("-1", "-5", b""), ("5", "3", b""),
        ("-100", "100", b"Hello World"), ("0", "-100", b"H"), ("-3", "-100", b""),
        ("100", "200", b""), ("0", "-1", b"Hello World"),
        ("9223372036854775807", "9223372036854775807", b""),
        ("-9223372036854775808", "-9223372036854775808", b"H"),
        ("-9223372036854775808", "9223372036854775807", b"Hello World"),
    ],
)
def test_getrange(r, start, end, reply):
    r.call("SET", "s", "Hello World")
    assert r.call("GETRANGE", "s", start, end) == ("$", reply)
    assert r.call("SUBSTR", "s", start, end) == ("$", reply)


def test_getrange_errors_and_edges(r):
    assert r.call("GETRANGE", "missing", "0", "-1") == ("$", b"")
    assert r.call("GETRANGE", "missing", "a", "1") == NOT_INT
    r.call("SET", "e", "")
    assert r.call("GETRANGE", "e", "0", "-1") == ("$", b"")
    r.call("SET", "i", "12345")
    assert r.call("GETRANGE", "i", "1", "2") == ("$", b"23")
    r.call("RPUSH", "list", "a")
    assert r.call("GETRANGE", "list", "0", "1") == WRONGTYPE
    assert r.call("GETRANGE", "list", "0", "a") == NOT_INT  # arguments are read first


def test_setrange(r):
    r.call("SET", "s", "Hello World")
    assert r.call("SETRANGE", "s", "6", "Redis") == (":", 11)
    assert r.call("GET", "s") == ("$", b"Hello Redis")
    assert r.call("SETRANGE", "s", "13", "!") == (":", 14)
    assert r.call("GET", "s") == ("$", b"Hello Redis\x00\x00!")
    assert r.call("SETRANGE", "s", "0", "") == (":", 14)
    assert r.call("SETRANGE", "new", "0", "") == (":", 0)
    assert r.call("EXISTS", "new") == (":", 0)
    assert r.call("SETRANGE", "new", "3", "ab") == (":", 5)
    assert r.call("GET", "new") == ("$", b"\x00\x00\x00ab")


def test_setrange_errors(r):
    too_big = ("-", b"ERR string exceeds maximum allowed size (proto-max-bulk-len)")
    assert r.call("SETRANGE", "k", "-1", "x") == ("-", b"ERR offset is out of range")
    assert r.call("SETRANGE", "k", "a", "x") == NOT_INT
    assert r.call("SETRANGE", "k", "9223372036854775808", "x") == NOT_INT
    assert r.call("SETRANGE", "k", "536870912", "x") == too_big
    assert r.call("SETRANGE", "k", "9223372036854775807", "x") == too_big
    assert r.call("SETRANGE", "k", "536870912", "") == (":", 0)
    r.call("RPUSH", "list", "a")
    assert r.call("SETRANGE", "list", "0", "x") == WRONGTYPE
    assert r.call("SETRANGE", "list", "0", "") == WRONGTYPE
    assert r.call("SETRANGE", "list", "-1", "x") == ("-", b"ERR offset is out of range")


def test_size_limit_follows_proto_max_bulk_len(r):
    too_big = ("-", b"ERR string exceeds maximum allowed size (proto-max-bulk-len)")
    limit = 1024 * 1024
    assert r.call("CONFIG", "SET", "proto-max-bulk-len", str(limit)) == OK
    try:
        assert r.call("SETRANGE", "k", str(limit - 1), "x") == (":", limit)
        assert r.call("APPEND", "k", "y") == too_big
        assert r.call("SETRANGE", "k", str(limit), "x") == too_big
        assert r.call("SET", "j", "x" * (limit - 10)) == OK
        assert r.call("APPEND", "j", "0123456789") == (":", limit)
        assert r.call("APPEND", "j", "!") == too_big
        assert r.call("STRLEN", "j") == (":", limit)
    finally:
        r.call("CONFIG", "SET", "proto-max-bulk-len", str(512 * 1024 * 1024))


def test_encodings_after_in_place_changes(r):
    r.call("SET", "i", "123")
    r.call("SET", "s", "abc")
    r.call("APPEND", "a", "12")
    r.call("APPEND", "b", "xy")
    assert r.call("OBJECT", "ENCODING", "i") == ("$", b"int")
    assert r.call("OBJECT", "ENCODING", "s") == ("$", b"embstr")
    assert r.call("OBJECT", "ENCODING", "a") == ("$", b"int")
    assert r.call("OBJECT", "ENCODING", "b") == ("$", b"embstr")
    r.call("APPEND", "i", "")  # even an empty append makes the value raw
    r.call("SETRANGE", "s", "0", "")  # but an empty SETRANGE does not touch it
    assert r.call("OBJECT", "ENCODING", "i") == ("$", b"raw")
    assert r.call("OBJECT", "ENCODING", "s") == ("$", b"embstr")
    r.call("SETRANGE", "s", "0", "x")
    r.call("SETRANGE", "new", "2", "x")
    assert r.call("OBJECT", "ENCODING", "s") == ("$", b"raw")
    assert r.call("OBJECT", "ENCODING", "new") == ("$", b"raw")
    r.call("INCR", "s2")
    assert r.call("OBJECT", "ENCODING", "s2") == ("$", b"int")
    r.call("INCRBYFLOAT", "f", "1.5")
    assert r.call("OBJECT", "ENCODING", "f") == ("$", b"embstr")


def test_incrbyfloat_stores_a_whole_result_as_text(r):
    """INCRBYFLOAT's result is a string object, never int-encoded, even when it reads as
    an integer; RENAME, COPY and MOVE keep that form; the next INCR or SET does not."""
    assert r.call("INCRBYFLOAT", "f", "3") == ("$", b"3")
    assert r.call("OBJECT", "ENCODING", "f") == ("$", b"embstr")
    r.call("RENAME", "f", "g")
    r.call("COPY", "g", "h")
    assert r.call("OBJECT", "ENCODING", "g") == ("$", b"embstr")
    assert r.call("OBJECT", "ENCODING", "h") == ("$", b"embstr")
    assert r.call("MOVE", "h", "1") == (":", 1)
    r.call("SELECT", "1")
    assert r.call("OBJECT", "ENCODING", "h") == ("$", b"embstr")
    r.call("DEL", "h")
    r.call("SELECT", "0")
    r.call("INCR", "g")
    assert r.call("OBJECT", "ENCODING", "g") == ("$", b"int")
    r.call("INCRBYFLOAT", "g", "1")
    r.call("SET", "g", "5")
    assert r.call("OBJECT", "ENCODING", "g") == ("$", b"int")
    r.call("INCRBYFLOAT", "g", "1")
    r.call("DEL", "g")
    r.call("SET", "g", "7")
    assert r.call("OBJECT", "ENCODING", "g") == ("$", b"int")


# --- LCS ---------------------------------------------------------------------------------------


def test_lcs(r, proto):
    r.call("MSET", "key1", "ohmytext", "key2", "mynewtext")
    assert r.call("LCS", "key1", "key2") == ("$", b"mytext")
    assert r.call("LCS", "key1", "key2", "LEN") == (":", 6)
    assert r.call("LCS", "key1", "key2", "withmatchlen") == ("$", b"mytext")
    assert r.call("LCS", "key1", "key2", "LEN", "WITHMATCHLEN") == (":", 6)
    assert r.call("LCS", "key1", "missing") == ("$", b"")
    kind = "*" if proto == 2 else "%"

    def idx_reply(matches):
        entries = [("$", b"matches"), ("*", matches), ("$", b"len"), (":", 6)]
        return (kind, entries if proto == 2 else [tuple(entries[:2]), tuple(entries[2:])])

    def span(a, b):
        return ("*", [(":", a), (":", b)])

    assert r.call("LCS", "key1", "key2", "IDX") == idx_reply([
        ("*", [span(4, 7), span(5, 8)]),
        ("*", [span(2, 3), span(0, 1)]),
    ])
    assert r.call("LCS", "key1", "key2", "IDX", "MINMATCHLEN", "4", "WITHMATCHLEN") == idx_reply(
        [("*", [span(4, 7), span(5, 8), (":", 4)])]
    )
    assert r.call("LCS", "key1", "key2", "idx", "withmatchlen", "minmatchlen", "-5") == idx_reply([
        ("*", [span(4, 7), span(5, 8), (":", 4)]),
        ("*", [span(2, 3), span(0, 1), (":", 2)]),
    ])


def test_lcs_of_missing_keys(r, proto):
    assert r.call("LCS", "a", "b", "LEN") == (":", 0)
    expected = [("$", b"matches"), ("*", []), ("$", b"len"), (":", 0)]
    if proto == 2:
        assert r.call("LCS", "a", "b", "IDX") == ("*", expected)
    else:
        assert r.call("LCS", "a", "b", "IDX") == ("%", [tuple(expected[:2]), tuple(expected[2:])])


def test_lcs_errors(r):
    not_strings = ("-", b"ERR The specified keys must contain string values")
    both = ("-", b"ERR If you want both the length and indexes, please just use IDX.")
    r.call("MSET", "a", "abc", "b", "abd")
    r.call("RPUSH", "list", "x")
    assert r.call("LCS", "a", "list") == not_strings
    assert r.call("LCS", "list", "a", "bogus") == not_strings  # types are checked first
    assert r.call("LCS", "a", "b", "LEN", "IDX") == both
    assert r.call("LCS", "a", "b", "IDX", "LEN") == both
    assert r.call("LCS", "a", "b", "LEN", "IDX", "bogus") == SYNTAX
    assert r.call("LCS", "a", "b", "MINMATCHLEN") == SYNTAX
    assert r.call("LCS", "a", "b", "MINMATCHLEN", "abc", "LEN", "IDX") == NOT_INT


def test_lcs_of_long_strings(r):
    a = bytes(b"ACGT"[(i * i + 3 * i) % 4] for i in range(3000))
    b = bytes(b"ACGT"[(i * 7 + i // 5) % 4] for i in range(2500))
    r.call("MSET", "a", a, "b", b)
    kind, common = r.call("LCS", "a", "b")
    assert kind == "$"
    assert r.call("LCS", "a", "b", "LEN") == (":", len(common))
    assert _is_subsequence(common, a) and _is_subsequence(common, b)
    kind, reply = r.call("LCS", "a", "b", "IDX", "MINMATCHLEN", "6")
    assert kind in ("*", "%")


def _is_subsequence(small: bytes, big: bytes) -> bool:
    it = iter(big)
    return all(ch in it for ch in small)


def test_lcs_table_size_limit(r):
    limit = 1024 * 1024
    r.call("CONFIG", "SET", "proto-max-bulk-len", str(limit))
    try:
        r.call("MSET", "a", "x" * 600, "b", "y" * 600)
        assert r.call("LCS", "a", "b") == (
            "-", b"ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len"
        )
    finally:
        r.call("CONFIG", "SET", "proto-max-bulk-len", str(512 * 1024 * 1024))


# --- fakekey and Valkey side by side ---------------------------------------------------------


@pytest.fixture(scope="module")
def both(pytestconfig):
    """Raw RESP2 clients on fakekey and on the real server, for comparing replies."""
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


def _decimal(digits: str, point: int, exponent: int | None) -> str:
    text = digits[:point] + "." + digits[point:] if point < len(digits) else digits
    return text if exponent is None else f"{text}e{exponent}"


_floats = st.one_of(
    st.builds(
        _decimal,
        st.text("0123456789", min_size=1, max_size=24),
        st.integers(0, 24),
        st.none() | st.integers(-40, 40),
    ),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.integers(-(10**30), 10**30).map(str),
    st.builds(lambda m, e: f"{m:#x}p{e}", st.integers(0, 2**70), st.integers(-90, 90)),
)
_signed_floats = st.builds(lambda sign, text: sign + text, st.sampled_from(["", "-", "+"]), _floats)


@settings(deadline=None)
@given(start=st.none() | _signed_floats, increments=st.lists(_signed_floats, min_size=1, max_size=8))
def test_incrbyfloat_sequences_match_valkey(both, start, increments):
    for client in both:
        client.call("DEL", "hyp:f")
        if start is not None:
            client.call("SET", "hyp:f", start)
    for increment in increments:
        fake, real = (client.call("INCRBYFLOAT", "hyp:f", increment) for client in both)
        assert fake == real, f"INCRBYFLOAT {increment!r} from {start!r}"
