"""Generic key commands: DEL, UNLINK, EXISTS, TOUCH, TYPE, the EXPIRE family, TTL family,
PERSIST, KEYS, SCAN, RANDOMKEY, RENAME, RENAMENX, COPY, MOVE and OBJECT."""

from __future__ import annotations

import time

import pytest

from fakekey.testing.raw import plain

NULL = {2: ("$", None), 3: ("_", None)}
OK = ("+", b"OK")


def err(text: str | bytes) -> tuple[str, bytes]:
    return ("-", text.encode() if isinstance(text, str) else text)


def names(reply: tuple[str, list]) -> list[bytes]:
    """An array of bulk strings, sorted (key order is unspecified)."""
    kind, items = reply
    assert kind == "*"
    assert all(t == "$" for t, _ in items)
    return sorted(v for _, v in items)


def full_scan(r, *options) -> list[bytes]:
    """Every key one complete SCAN iteration returns (duplicates kept)."""
    cursor = b"0"
    seen: list[bytes] = []
    while True:
        kind, (cur, page) = r.call("SCAN", cursor, *options)
        assert kind == "*" and cur[0] == "$" and page[0] == "*"
        seen.extend(v for _, v in page[1])
        cursor = cur[1]
        if cursor == b"0":
            return seen


@pytest.fixture
def no_active_expire(r):
    """Keys past their deadline stay in memory until touched (lazy expiry only)."""
    r.call("DEBUG", "SET-ACTIVE-EXPIRE", "0")
    yield
    r.call("DEBUG", "SET-ACTIVE-EXPIRE", "1")


def set_logically_expired(r, *keys: str) -> None:
    """Keys whose deadline has passed but that nothing has deleted yet."""
    for key in keys:
        assert r.call("SET", key, "v", "PX", "1") == OK
    time.sleep(0.01)


# --- DEL / UNLINK / EXISTS / TOUCH / TYPE ---------------------------------------------------


@pytest.mark.parametrize("cmd", ["DEL", "UNLINK"])
def test_delete_counts_removed_keys(r, cmd):
    r.call("MSET", "a", "1", "b", "2")
    r.call("RPUSH", "l", "x")
    assert r.call(cmd, "a", "nokey", "l", "a") == (":", 2)
    assert r.call("EXISTS", "a", "l", "b") == (":", 1)
    assert r.call(cmd) == err(f"ERR wrong number of arguments for '{cmd.lower()}' command")


def test_exists_counts_repeats(r):
    r.call("SET", "a", "1")
    assert r.call("EXISTS", "a", "a", "nokey", "a") == (":", 3)
    assert r.call("EXISTS", "nokey") == (":", 0)
    assert r.call("EXISTS") == err("ERR wrong number of arguments for 'exists' command")


def test_touch_counts_existing(r):
    r.call("MSET", "a", "1", "b", "2")
    assert r.call("TOUCH", "a", "b", "nokey", "a") == (":", 3)
    assert r.call("TOUCH") == err("ERR wrong number of arguments for 'touch' command")


def test_type_names(r):
    r.call("SET", "s", "v")
    r.call("APPEND", "raw", "v")
    r.call("RPUSH", "l", "x")
    r.call("SADD", "set", "m")
    assert r.call("TYPE", "s") == ("+", b"string")
    assert r.call("TYPE", "raw") == ("+", b"string")
    assert r.call("TYPE", "l") == ("+", b"list")
    assert r.call("TYPE", "set") == ("+", b"set")
    assert r.call("TYPE", "nokey") == ("+", b"none")
    assert r.call("TYPE", "a", "b") == err("ERR wrong number of arguments for 'type' command")


def test_reads_skip_logically_expired_keys(r, proto, no_active_expire):
    r.call("SET", "live", "v")
    set_logically_expired(r, "x1", "x2", "x3", "x4", "x5", "x6", "x7")
    assert r.call("EXISTS", "x1", "live") == (":", 1)
    assert r.call("TYPE", "x2") == ("+", b"none")
    assert r.call("TTL", "x3") == (":", -2)
    assert r.call("OBJECT", "ENCODING", "x4") == NULL[proto]
    assert names(r.call("KEYS", "*")) == [b"live"]
    assert names(r.call("KEYS", "x*")) == []
    assert full_scan(r) == [b"live"]
    assert r.call("RANDOMKEY") == ("$", b"live")
    assert r.call("TOUCH", "x5") == (":", 0)
    assert r.call("RENAME", "x6", "y") == err("ERR no such key")
    assert r.call("COPY", "x7", "y") == (":", 0)
    assert r.call("EXISTS", "y") == (":", 0)


# --- EXPIRE family ---------------------------------------------------------------------------


@pytest.mark.parametrize("cmd", ["EXPIRE", "PEXPIRE", "EXPIREAT", "PEXPIREAT"])
def test_expire_option_errors(r, cmd):
    r.call("SET", "k", "v")
    nx_error = err("ERR NX and XX, GT or LT options at the same time are not compatible")
    gt_lt_error = err("ERR GT and LT options at the same time are not compatible")
    far = "99999999999"
    assert r.call(cmd, "k", far, "NX", "XX") == nx_error
    assert r.call(cmd, "k", far, "nx", "gt") == nx_error
    assert r.call(cmd, "k", far, "LT", "NX") == nx_error
    assert r.call(cmd, "k", far, "GT", "lt") == gt_lt_error
    assert r.call(cmd, "k", far, "xx", "gt", "lt") == gt_lt_error
    assert r.call(cmd, "k", far, "GT", "lt", "nx") == nx_error
    # Options are read before the time, and an unknown one stops the reading at once.
    assert r.call(cmd, "k", "abc", "NX", "XX") == nx_error
    assert r.call(cmd, "k", far, "NX", "XX", "Foo") == err("ERR Unsupported option Foo")
    assert r.call(cmd, "k", far, "100") == err("ERR Unsupported option 100")
    assert r.call(cmd, "k", far, b"a\r\nb\x00c") == err("ERR Unsupported option a  b")
    assert r.call(cmd, "k", "abc") == err("ERR value is not an integer or out of range")
    assert r.call(cmd, "k", "1.5") == err("ERR value is not an integer or out of range")
    assert r.call(cmd, "nokey", "abc") == err("ERR value is not an integer or out of range")
    assert r.call(cmd, "k") == err(f"ERR wrong number of arguments for '{cmd.lower()}' command")
    assert r.call("TTL", "k") == (":", -1)


@pytest.mark.parametrize(
    ("cmd", "value"),
    [
        ("EXPIRE", "9223372036854775807"),
        ("EXPIRE", "9223372036854775"),  # fits once in ms, not once now is added
        ("EXPIRE", "-9223372036854776"),
        ("EXPIRE", "-9223372036854775808"),
        ("PEXPIRE", "9223372036854775807"),
        ("EXPIREAT", "9223372036854775807"),
        ("EXPIREAT", "9223372036854776"),
    ],
)
def test_expire_overflow_is_invalid(r, cmd, value):
    r.call("SET", "k", "v")
    message = err(f"ERR invalid expire time in '{cmd.lower()}' command")
    assert r.call(cmd, "k", value) == message
    assert r.call(cmd, "nokey", value) == message
    assert r.call("TTL", "k") == (":", -1)


@pytest.mark.parametrize(
    ("cmd", "value"),
    [
        ("EXPIRE", "0"),
        ("EXPIRE", "-1"),
        ("EXPIRE", "-9223372036854775"),
        ("PEXPIRE", "-9223372036854775808"),
        ("EXPIREAT", "1"),
        ("PEXPIREAT", "1"),
        ("PEXPIREAT", "-9223372036854775808"),
    ],
)
def test_expire_in_the_past_deletes(r, cmd, value):
    r.call("SET", "k", "v")
    assert r.call(cmd, "k", value) == (":", 1)
    assert r.call("EXISTS", "k") == (":", 0)
    assert r.call(cmd, "nokey", value) == (":", 0)


def test_expire_sets_ttl_in_each_unit(r):
    r.call("MSET", "a", "1", "b", "2", "c", "3", "d", "4")
    now_s = int(time.time())
    assert r.call("EXPIRE", "a", "100") == (":", 1)
    assert r.call("PEXPIRE", "b", "100000") == (":", 1)
    assert r.call("EXPIREAT", "c", str(now_s + 100)) == (":", 1)
    assert r.call("PEXPIREAT", "d", str(now_s * 1000 + 100_000)) == (":", 1)
    for key in "ab":
        assert r.call("TTL", key) == (":", 100)
        kind, ms = r.call("PTTL", key)
        assert kind == ":" and 99_000 < ms <= 100_000
    assert r.call("EXPIRETIME", "c") == (":", now_s + 100)
    assert r.call("PEXPIRETIME", "d") == (":", now_s * 1000 + 100_000)
    assert r.call("EXPIRE", "nokey", "100") == (":", 0)


def test_expire_conditions(r):
    t = int(time.time()) + 1000  # absolute deadlines, so equal ones compare equal
    r.call("SET", "k", "v")
    # Without a TTL: NX and LT apply, XX and GT do not (no TTL counts as infinite).
    assert r.call("EXPIREAT", "k", t, "XX") == (":", 0)
    assert r.call("EXPIREAT", "k", t, "GT") == (":", 0)
    assert r.call("TTL", "k") == (":", -1)
    assert r.call("EXPIREAT", "k", t, "LT") == (":", 1)
    assert r.call("PERSIST", "k") == (":", 1)
    assert r.call("EXPIREAT", "k", t, "NX", "nx") == (":", 1)
    # With a deadline of t.
    assert r.call("EXPIREAT", "k", t + 1, "NX") == (":", 0)
    assert r.call("EXPIREAT", "k", t - 1, "GT") == (":", 0)
    assert r.call("EXPIREAT", "k", t, "GT") == (":", 0)
    assert r.call("EXPIREAT", "k", t, "LT") == (":", 0)
    assert r.call("EXPIREAT", "k", t + 1, "xx", "GT") == (":", 1)
    assert r.call("EXPIRETIME", "k") == (":", t + 1)
    assert r.call("EXPIREAT", "k", t + 2, "LT") == (":", 0)
    assert r.call("EXPIREAT", "k", t - 1, "XX", "LT") == (":", 1)
    assert r.call("EXPIRETIME", "k") == (":", t - 1)
    assert r.call("PEXPIRE", "k", "1000", "gt") == (":", 0)
    # A past deadline that the condition refuses leaves the key alone.
    assert r.call("EXPIRE", "k", "-1", "GT") == (":", 0)
    assert r.call("EXPIRE", "k", "-1", "NX") == (":", 0)
    assert r.call("EXISTS", "k") == (":", 1)
    assert r.call("EXPIRE", "k", "-1", "LT") == (":", 1)
    assert r.call("EXISTS", "k") == (":", 0)
    assert r.call("EXPIRE", "nokey", "100", "NX") == (":", 0)


def test_ttl_rounds_to_nearest_second(r):
    r.call("SET", "k", "v")
    r.call("PEXPIRE", "k", "9800")
    assert r.call("TTL", "k") == (":", 10)
    r.call("PEXPIRE", "k", "9200")
    assert r.call("TTL", "k") == (":", 9)
    r.call("PEXPIRE", "k", "300")
    assert r.call("TTL", "k") == (":", 0)


def test_ttl_family_missing_and_persistent(r):
    r.call("SET", "k", "v")
    for cmd in ("TTL", "PTTL", "EXPIRETIME", "PEXPIRETIME"):
        assert r.call(cmd, "nokey") == (":", -2)
        assert r.call(cmd, "k") == (":", -1)
        assert r.call(cmd) == err(f"ERR wrong number of arguments for '{cmd.lower()}' command")


def test_expiretime_rounds_ms_to_nearest_second(r):
    r.call("SET", "k", "v")
    r.call("PEXPIREAT", "k", "99999999999499")
    assert r.call("EXPIRETIME", "k") == (":", 99999999999)
    r.call("PEXPIREAT", "k", "99999999999500")
    assert r.call("EXPIRETIME", "k") == (":", 100000000000)
    r.call("PEXPIREAT", "k", "9223372036854775807")
    assert r.call("PEXPIRETIME", "k") == (":", 9223372036854775807)
    assert r.call("EXPIRETIME", "k") == (":", 9223372036854776)
    r.call("EXPIREAT", "k", "9223372036854775")
    assert r.call("PEXPIRETIME", "k") == (":", 9223372036854775000)


def test_persist(r):
    r.call("SET", "k", "v", "EX", "100")
    assert r.call("PERSIST", "k") == (":", 1)
    assert r.call("TTL", "k") == (":", -1)
    assert r.call("PERSIST", "k") == (":", 0)
    assert r.call("PERSIST", "nokey") == (":", 0)
    assert r.call("PERSIST") == err("ERR wrong number of arguments for 'persist' command")


@pytest.mark.fakekey_only
def test_expiry_follows_the_server_clock(r):
    r.call("FAKEKEY.CLOCK", "SET", "1000000000000")
    r.call("SET", "k", "v")
    r.call("EXPIRE", "k", "10")
    assert r.call("PTTL", "k") == (":", 10_000)
    assert r.call("EXPIRETIME", "k") == (":", 1_000_000_010)
    r.call("FAKEKEY.CLOCK", "ADVANCE", "4500")
    assert r.call("TTL", "k") == (":", 6)  # 5.5 s rounds up
    r.call("FAKEKEY.CLOCK", "ADVANCE", "5500")
    assert r.call("PTTL", "k") == (":", 0)
    r.call("FAKEKEY.CLOCK", "ADVANCE", "1")
    assert r.call("EXISTS", "k") == (":", 0)


# --- KEYS / SCAN / RANDOMKEY -----------------------------------------------------------------


def test_keys_patterns(r):
    r.call("MSET", "one", "1", "two", "2", "three", "3", "", "empty")
    assert names(r.call("KEYS", "*")) == [b"", b"one", b"three", b"two"]
    assert names(r.call("KEYS", "t*")) == [b"three", b"two"]
    assert names(r.call("KEYS", "?wo")) == [b"two"]
    assert names(r.call("KEYS", "[ot]*e")) == [b"one", b"three"]
    assert names(r.call("KEYS", "")) == [b""]
    assert names(r.call("KEYS", "**")) == [b"one", b"three", b"two"]  # only '*' takes ""
    assert names(r.call("KEYS", "nomatch*")) == []
    assert r.call("KEYS") == err("ERR wrong number of arguments for 'keys' command")


def test_scan_returns_every_key_once_when_nothing_changes(r):
    keys = [f"key:{i}".encode() for i in range(150)]
    r.call("MSET", *[x for k in keys for x in (k, b"v")])
    seen = full_scan(r, "COUNT", "7")
    assert sorted(set(seen)) == sorted(keys)
    assert sorted(full_scan(r)) == sorted(set(full_scan(r, "COUNT", "1000")))


def test_scan_reply_shape(r):
    r.call("MSET", "a", "1", "b", "2", "c", "3")
    kind, (cursor, page) = r.call("SCAN", "0", "COUNT", "100")
    assert kind == "*" and cursor == ("$", b"0")
    assert names(page) == [b"a", b"b", b"c"]
    kind, (cursor, page) = r.call("SCAN", "0", "MATCH", "zz*")
    assert cursor == ("$", b"0") and page == ("*", [])


def test_scan_match_count_type(r):
    r.call("MSET", "s1", "v", "s2", "v", "", "v")
    r.call("RPUSH", "l1", "x")
    r.call("SADD", "set1", "m")
    assert sorted(full_scan(r, "MATCH", "s*")) == [b"s1", b"s2", b"set1"]
    assert sorted(full_scan(r, "TYPE", "string")) == [b"", b"s1", b"s2"]
    assert sorted(full_scan(r, "type", "LIST")) == [b"l1"]
    assert sorted(full_scan(r, "TYPE", "set", "COUNT", "1")) == [b"set1"]
    assert sorted(full_scan(r, "TYPE", "hash")) == []
    assert sorted(full_scan(r, "MATCH", "*", "TYPE", "string")) == [b"", b"s1", b"s2"]
    assert sorted(full_scan(r, "MATCH", "**")) == [b"l1", b"s1", b"s2", b"set1"]
    # The last MATCH, COUNT and TYPE win.
    assert sorted(full_scan(r, "MATCH", "s*", "MATCH", "l*")) == [b"l1"]
    assert sorted(full_scan(r, "TYPE", "list", "TYPE", "set", "count", "2", "COUNT", "5")) == [b"set1"]


def test_scan_errors(r):
    syntax = err("ERR syntax error")
    cursor_error = err("ERR invalid cursor")
    for bad in ("-1", "abc", "", "1 ", "18446744073709551616", "-18446744073709551616", "0x1"):
        assert r.call("SCAN", bad) == cursor_error, bad
    assert r.call("SCAN", "0", "COUNT", "0") == syntax
    assert r.call("SCAN", "0", "COUNT", "-1") == syntax
    assert r.call("SCAN", "0", "COUNT", "abc") == err("ERR value is not an integer or out of range")
    assert r.call("SCAN", "0", "COUNT", "9223372036854775808") == err(
        "ERR value is not an integer or out of range"
    )
    assert r.call("SCAN", "0", "MATCH") == syntax
    assert r.call("SCAN", "0", "TYPE") == syntax
    assert r.call("SCAN", "0", "COUNT") == syntax
    assert r.call("SCAN", "0", "FOO", "bar") == syntax
    assert r.call("SCAN", "0", "TYPE", "foo") == err("ERR unknown type name 'foo'")
    for unknown in ("none", "module", "vectorset", "ReJSON-RL"):
        assert r.call("SCAN", "0", "TYPE", unknown) == err(f"ERR unknown type name '{unknown}'")
    assert r.call("SCAN", "0", "TYPE", b"a\r\nb\x00c") == err("ERR unknown type name 'a  b'")
    assert r.call("SCAN", "0", "novalues") == err("ERR NOVALUES option can only be used in HSCAN")
    assert r.call("SCAN", "0", "NOSCORES") == err("ERR NOSCORES option can only be used in ZSCAN")
    # Checked in argument order: the first bad one answers.
    assert r.call("SCAN", "abc", "TYPE", "foo") == cursor_error
    assert r.call("SCAN", "0", "COUNT", "0", "TYPE", "foo") == syntax
    assert r.call("SCAN", "0", "TYPE", "foo", "COUNT", "0") == err("ERR unknown type name 'foo'")
    assert r.call("SCAN", "0", "TYPE", "list", "TYPE", "foo") == err("ERR unknown type name 'foo'")
    assert r.call("SCAN") == err("ERR wrong number of arguments for 'scan' command")


@pytest.mark.parametrize("cursor", ["0", "-0", " 0", "\t0", "+0", "00"])
def test_scan_cursor_forms_of_zero(r, cursor):
    """The cursor is read as C's strtoull reads it."""
    r.call("SET", "k", "v")
    assert r.call("SCAN", cursor, "COUNT", "100") == ("*", [("$", b"0"), ("*", [("$", b"k")])])


def test_scan_guarantee_under_concurrent_changes(r):
    """Keys present for the whole iteration are all returned, whatever is added and
    deleted between calls."""
    stable = {f"stable:{i}".encode() for i in range(120)}
    doomed = [f"doomed:{i}".encode() for i in range(120)]
    r.call("MSET", *[x for k in [*stable, *doomed] for x in (k, b"v")])
    cursor = b"0"
    seen: set[bytes] = set()
    step = 0
    while True:
        kind, (cur, page) = r.call("SCAN", cursor, "COUNT", "5")
        seen.update(v for _, v in page[1])
        cursor = cur[1]
        if cursor == b"0":
            break
        step += 1
        # Between calls: delete some keys, add new ones, delete-and-recreate others.
        if doomed:
            r.call("DEL", doomed.pop())
        r.call("SET", f"new:{step}", "v")
        r.call("DEL", f"new:{step - 1}")
    assert step > 20  # the iteration really was interleaved with changes
    assert stable <= seen


def test_randomkey(r, proto):
    assert r.call("RANDOMKEY") == NULL[proto]
    r.call("MSET", "a", "1", "b", "2")
    picks = {r.call("RANDOMKEY") for _ in range(30)}
    assert picks <= {("$", b"a"), ("$", b"b")}
    assert r.call("RANDOMKEY", "x") == err("ERR wrong number of arguments for 'randomkey' command")


# --- RENAME / RENAMENX --------------------------------------------------------------------------


@pytest.mark.parametrize("cmd", ["RENAME", "RENAMENX"])
def test_rename_missing_source(r, cmd):
    assert r.call(cmd, "nokey", "x") == err("ERR no such key")
    assert r.call(cmd, "nokey", "nokey") == err("ERR no such key")
    assert r.call(cmd, "a") == err(f"ERR wrong number of arguments for '{cmd.lower()}' command")


def test_rename(r):
    r.call("SET", "a", "1", "EX", "100")
    r.call("RPUSH", "l", "x", "y")
    assert r.call("RENAME", "a", "a") == OK
    assert r.call("TTL", "a") == (":", 100)
    assert r.call("RENAME", "a", "b") == OK
    assert r.call("EXISTS", "a") == (":", 0)
    assert r.call("GET", "b") == ("$", b"1")
    assert r.call("TTL", "b") == (":", 100)  # the TTL moves with the key
    # Replacing a key with a TTL by one without: the destination ends up persistent.
    assert r.call("RENAME", "l", "b") == OK
    assert r.call("TYPE", "b") == ("+", b"list")
    assert r.call("TTL", "b") == (":", -1)
    assert r.call("LRANGE", "b", "0", "-1") == ("*", [("$", b"x"), ("$", b"y")])


def test_renamenx(r):
    r.call("MSET", "a", "1", "b", "2")
    r.call("EXPIRE", "a", "100")
    assert r.call("RENAMENX", "a", "a") == (":", 0)
    assert r.call("RENAMENX", "a", "b") == (":", 0)
    assert r.call("GET", "b") == ("$", b"2")
    assert r.call("RENAMENX", "a", "c") == (":", 1)
    assert r.call("EXISTS", "a") == (":", 0)
    assert r.call("GET", "c") == ("$", b"1")
    assert r.call("TTL", "c") == (":", 100)


# --- COPY / MOVE -----------------------------------------------------------------------------


def test_copy(r):
    r.call("SET", "s", "v", "PX", "100000")
    r.call("RPUSH", "l", "x", "y")
    assert r.call("COPY", "s", "t") == (":", 1)
    assert r.call("GET", "t") == ("$", b"v")
    kind, ms = r.call("PTTL", "t")
    assert kind == ":" and 99_000 < ms <= 100_000
    assert r.call("COPY", "s", "t") == (":", 0)
    assert r.call("COPY", "l", "t") == (":", 0)
    assert r.call("COPY", "l", "t", "REPLACE") == (":", 1)
    assert r.call("TTL", "t") == (":", -1)
    # The copy is independent of its source.
    r.call("RPUSH", "t", "z")
    assert r.call("LRANGE", "l", "0", "-1") == ("*", [("$", b"x"), ("$", b"y")])
    assert r.call("LRANGE", "t", "0", "-1") == ("*", [("$", b"x"), ("$", b"y"), ("$", b"z")])
    assert r.call("COPY", "nokey", "t") == (":", 0)
    assert r.call("COPY", "s", "t", "replace", "REPLACE") == (":", 1)
    assert r.call("GET", "t") == ("$", b"v")


def test_copy_modified_string_stays_independent(r):
    r.call("APPEND", "a", "x")  # a new key: stored as given (embstr)
    r.call("APPEND", "a", "y")  # modified in place: raw
    assert r.call("COPY", "a", "b") == (":", 1)
    r.call("APPEND", "a", "z")
    assert r.call("GET", "b") == ("$", b"xy")
    assert r.call("OBJECT", "ENCODING", "b") == ("$", b"raw")
    assert r.call("RENAME", "b", "c") == OK
    assert r.call("OBJECT", "ENCODING", "c") == ("$", b"raw")


def test_copy_to_another_db(r):
    r.call("SET", "k", "v", "EX", "100")
    assert r.call("COPY", "k", "k", "DB", "1") == (":", 1)
    assert r.call("COPY", "k", "k", "DB", "1") == (":", 0)
    assert r.call("COPY", "k", "k", "db", "1", "replace") == (":", 1)
    r.call("SELECT", "1")
    assert r.call("GET", "k") == ("$", b"v")
    assert r.call("TTL", "k") == (":", 100)
    r.call("SELECT", "0")
    assert r.call("COPY", "k", "other", "DB", "0") == (":", 1)


def test_copy_errors(r):
    r.call("SET", "a", "v")
    same = err("ERR source and destination objects are the same")
    assert r.call("COPY", "a", "a") == same
    assert r.call("COPY", "nokey", "nokey") == same
    assert r.call("COPY", "a", "a", "DB", "0") == same
    assert r.call("COPY", "a", "b", "DB", "16") == err("ERR DB index is out of range")
    assert r.call("COPY", "a", "b", "DB", "-1") == err("ERR DB index is out of range")
    assert r.call("COPY", "a", "b", "DB", "abc") == err("ERR value is not an integer or out of range")
    assert r.call("COPY", "a", "b", "DB", "99999999999999999999") == err(
        "ERR value is not an integer or out of range"
    )
    assert r.call("COPY", "a", "b", "DB", "4294967296") == err(
        "ERR value is out of range, value must between -2147483648 and 2147483647"
    )
    assert r.call("COPY", "a", "b", "DB") == err("ERR syntax error")
    assert r.call("COPY", "a", "b", "foo") == err("ERR syntax error")
    assert r.call("COPY", "a", "b", "REPLACE", "DB") == err("ERR syntax error")
    # Options are checked in order: a bad DB answers before a later unknown word.
    assert r.call("COPY", "a", "b", "DB", "16", "foo") == err("ERR DB index is out of range")
    assert r.call("COPY", "a", "b", "foo", "DB", "16") == err("ERR syntax error")
    assert r.call("COPY", "a") == err("ERR wrong number of arguments for 'copy' command")
    assert r.call("EXISTS", "b") == (":", 0)


def test_move(r):
    r.call("SET", "k", "v", "EX", "100")
    assert r.call("MOVE", "k", "1") == (":", 1)
    assert r.call("EXISTS", "k") == (":", 0)
    assert r.call("MOVE", "k", "1") == (":", 0)
    r.call("SELECT", "1")
    assert r.call("GET", "k") == ("$", b"v")
    assert r.call("TTL", "k") == (":", 100)
    r.call("SELECT", "0")
    r.call("SET", "k", "here")
    assert r.call("MOVE", "k", "1") == (":", 0)  # taken in the target: nothing moves
    assert r.call("GET", "k") == ("$", b"here")


def test_move_errors(r):
    r.call("SET", "k", "v")
    same = err("ERR source and destination objects are the same")
    assert r.call("MOVE", "k", "0") == same
    assert r.call("MOVE", "nokey", "0") == same
    assert r.call("MOVE", "k", "16") == err("ERR DB index is out of range")
    assert r.call("MOVE", "k", "-1") == err("ERR DB index is out of range")
    assert r.call("MOVE", "k", "abc") == err("ERR value is not an integer or out of range")
    assert r.call("MOVE", "k", "2147483648") == err(
        "ERR value is out of range, value must between -2147483648 and 2147483647"
    )
    assert r.call("MOVE", "k") == err("ERR wrong number of arguments for 'move' command")
    assert r.call("MOVE", "nokey", "1") == (":", 0)


# --- OBJECT ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "encoding"),
    [
        ("0", b"int"),
        ("-1", b"int"),
        ("10000", b"int"),
        ("9223372036854775807", b"int"),
        ("-9223372036854775808", b"int"),
        ("9223372036854775808", b"embstr"),
        ("-0", b"embstr"),
        ("007", b"embstr"),
        ("+1", b"embstr"),
        (" 1", b"embstr"),
        ("1.5", b"embstr"),
        ("", b"embstr"),
        ("x" * 112, b"embstr"),
        ("x" * 113, b"raw"),
    ],
)
def test_object_encoding_of_set_strings(r, value, encoding):
    r.call("SET", "k", value)
    assert r.call("OBJECT", "ENCODING", "k") == ("$", encoding)


@pytest.mark.parametrize(
    ("key_len", "largest_embstr"),
    [(1, 112), (20, 93), (31, 82), (32, 79), (60, 51), (111, 0)],
)
def test_object_encoding_embstr_limit_counts_the_key(r, key_len, largest_embstr):
    key = "k" * key_len
    r.call("SET", key, "x" * largest_embstr)
    assert r.call("OBJECT", "ENCODING", key) == ("$", b"embstr")
    r.call("SET", key, "x" * (largest_embstr + 1))
    assert r.call("OBJECT", "ENCODING", key) == ("$", b"raw")
    # A deadline given with the value takes 8 more bytes.
    r.call("SET", key, "x" * (largest_embstr - 8), "EX", "100")
    if largest_embstr >= 8:
        assert r.call("OBJECT", "ENCODING", key) == ("$", b"embstr")
    r.call("SET", key, "x" * (largest_embstr - 7), "EX", "100")
    assert r.call("OBJECT", "ENCODING", key) == ("$", b"raw")


def test_object_encoding_of_modified_strings(r):
    r.call("APPEND", "a", "5")
    r.call("APPEND", "a", "5")
    assert r.call("OBJECT", "ENCODING", "a") == ("$", b"raw")
    r.call("SET", "n", "5")
    r.call("INCR", "n")
    assert r.call("OBJECT", "ENCODING", "n") == ("$", b"int")
    r.call("SETRANGE", "sr", "0", "5")
    assert r.call("OBJECT", "ENCODING", "sr") == ("$", b"raw")


def test_object_encoding_of_containers(r):
    r.call("RPUSH", "l", "x")
    r.call("SADD", "s", "1")
    r.call("SADD", "t", "a")
    assert r.call("OBJECT", "ENCODING", "l") == ("$", b"listpack")
    assert r.call("OBJECT", "ENCODING", "s") == ("$", b"intset")
    assert r.call("OBJECT", "ENCODING", "t") == ("$", b"listpack")


def test_object_on_missing_key(r, proto):
    for sub in ("ENCODING", "REFCOUNT", "IDLETIME", "FREQ"):
        assert r.call("OBJECT", sub, "nokey") == NULL[proto]


def test_object_refcount_and_idletime(r):
    r.call("SET", "k", "1")
    r.call("RPUSH", "l", "x")
    assert r.call("OBJECT", "REFCOUNT", "k") == (":", 1)
    assert r.call("OBJECT", "REFCOUNT", "l") == (":", 1)
    # whole seconds of an LRU clock (Valkey's too): a second boundary may fall in between
    assert r.call("OBJECT", "IDLETIME", "k") in ((":", 0), (":", 1))


def test_object_freq_and_idletime_follow_the_policy(r, proto):
    lfu_only = err(
        "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please "
        "note that when switching between policies at runtime LRU and LFU data will take some "
        "time to adjust."
    )
    not_under_lfu = err(
        "ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when "
        "switching between policies at runtime LRU and LFU data will take some time to adjust."
    )
    r.call("SET", "k", "v")
    assert r.call("OBJECT", "FREQ", "k") == lfu_only
    try:
        for policy in ("allkeys-lfu", "volatile-lfu"):
            assert r.call("CONFIG", "SET", "maxmemory-policy", policy) == OK
            # A new key (an overwritten one keeps the counter bits of the old value).
            r.call("SET", policy, "v")
            assert r.call("OBJECT", "FREQ", policy) == (":", 5)
            assert r.call("OBJECT", "IDLETIME", "k") == not_under_lfu
            assert r.call("OBJECT", "IDLETIME", "nokey") == NULL[proto]
        r.call("CONFIG", "SET", "maxmemory-policy", "allkeys-lru")
        assert r.call("OBJECT", "FREQ", "k") == lfu_only
    finally:
        r.call("CONFIG", "SET", "maxmemory-policy", "noeviction")


@pytest.mark.fakekey_only
def test_object_idletime_counts_whole_seconds(r):
    r.call("FAKEKEY.CLOCK", "SET", "1000000000900")
    r.call("MSET", "k", "v", "j", "v")
    r.call("FAKEKEY.CLOCK", "ADVANCE", "200")  # crosses a second boundary
    assert r.call("OBJECT", "IDLETIME", "k") == (":", 1)
    r.call("FAKEKEY.CLOCK", "ADVANCE", "5000")
    assert r.call("OBJECT", "IDLETIME", "k") == (":", 6)
    r.call("GET", "k")
    r.call("TOUCH", "j")
    assert r.call("OBJECT", "IDLETIME", "k") == (":", 0)
    assert r.call("OBJECT", "IDLETIME", "j") == (":", 0)
    r.call("FAKEKEY.CLOCK", "ADVANCE", "3000")
    r.call("TYPE", "k")  # TYPE, TTL, EXISTS and OBJECT do not count as access
    r.call("TTL", "k")
    r.call("EXISTS", "k")
    assert r.call("OBJECT", "IDLETIME", "k") == (":", 3)


def test_object_help_and_errors(r):
    kind, lines = r.call("OBJECT", "HELP")
    assert kind == "*"
    assert lines[0] == ("+", b"OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:")
    assert ("+", b"FREQ <key>") in lines and lines[-1] == ("+", b"    Print this help.")
    assert len(lines) == 15
    assert r.call("OBJECT", "help", "x") == err(
        "ERR wrong number of arguments for 'object|help' command"
    )
    assert r.call("OBJECT", "foo") == err("ERR unknown subcommand 'foo'. Try OBJECT HELP.")
    assert r.call("OBJECT") == err("ERR wrong number of arguments for 'object' command")
    assert r.call("OBJECT", "ENCODING") == err(
        "ERR wrong number of arguments for 'object|encoding' command"
    )
    assert r.call("OBJECT", "encoding", "a", "b") == err(
        "ERR wrong number of arguments for 'object|encoding' command"
    )


# --- keyspace events -------------------------------------------------------------------------


def read_events(sub, count: int) -> list[str]:
    events = []
    for _ in range(count):
        kind, message = sub.read()
        assert kind in (">", "*")
        channel, key = message[2][1], message[3][1]
        events.append(channel.split(b":", 1)[1].decode() + "(" + key.decode() + ")")
    return events


@pytest.fixture
def events(r, target):
    """A subscriber to every generic/expired keyevent; yields a reader of N events."""
    sub = target.raw(2)
    kind, reply = sub.call("PSUBSCRIBE", "__keyevent@*__:*")
    if kind == "-":  # pub/sub is another family's; until it exists there are no events
        sub.close()
        pytest.skip(reply.decode())
    r.call("CONFIG", "SET", "notify-keyspace-events", "Egx")
    yield lambda count: read_events(sub, count)
    r.call("CONFIG", "SET", "notify-keyspace-events", "")
    sub.close()


def test_keyspace_events(r, events):
    r.call("MSET", "a", "1", "b", "2", "c", "3")
    r.call("DEL", "a", "nokey")
    r.call("UNLINK", "b")
    assert events(2) == ["del(a)", "del(b)"]
    r.call("EXPIRE", "c", "100")
    r.call("EXPIRE", "c", "100", "NX")  # refused: no event
    r.call("PERSIST", "c")
    r.call("PERSIST", "c")
    r.call("PEXPIREAT", "c", "1")
    assert events(3) == ["expire(c)", "persist(c)", "expired(c)"]
    r.call("MSET", "d", "1", "e", "2")
    r.call("RENAME", "d", "d")
    r.call("RENAME", "d", "e")
    r.call("RENAMENX", "e", "f")
    assert events(4) == ["rename_from(d)", "rename_to(e)", "rename_from(e)", "rename_to(f)"]
    r.call("COPY", "f", "g")
    r.call("COPY", "f", "g")
    r.call("MOVE", "g", "1")
    r.call("TOUCH", "f")
    r.call("DEL", "f")
    assert events(4) == ["copy_to(g)", "move_from(g)", "move_to(g)", "del(f)"]


# --- COMMAND INFO --------------------------------------------------------------------------


def key_spec(index: int, flags: list[bytes], lastkey: int = 0) -> list:
    return [b"flags", flags, b"begin_search", [b"type", b"index", b"spec", [b"index", index]],
            b"find_keys", [b"type", b"range", b"spec",
                           [b"lastkey", lastkey, b"keystep", 1, b"limit", 0]]]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("copy", [b"copy", -3, [b"write", b"denyoom"], 1, 2, 1,
                  [b"@keyspace", b"@write", b"@slow"], [],
                  [key_spec(1, [b"RO", b"access"]), key_spec(2, [b"OW", b"update"])], []]),
        ("renamenx", [b"renamenx", 3, [b"write", b"fast"], 1, 2, 1,
                      [b"@keyspace", b"@write", b"@fast"], [],
                      [key_spec(1, [b"RW", b"access", b"delete"]),
                       key_spec(2, [b"OW", b"insert"])], []]),
        ("del", [b"del", -2, [b"write"], 1, -1, 1, [b"@keyspace", b"@write", b"@slow"],
                 [b"request_policy:multi_shard", b"response_policy:agg_sum"],
                 [key_spec(1, [b"RM", b"delete"], -1)], []]),
        ("keys", [b"keys", 2, [b"readonly"], 0, 0, 0,
                  [b"@keyspace", b"@read", b"@slow", b"@dangerous"],
                  [b"request_policy:all_shards", b"nondeterministic_output_order"], [], []]),
        ("scan", [b"scan", -2, [b"readonly"], 0, 0, 0, [b"@keyspace", b"@read", b"@slow"],
                  [b"nondeterministic_output", b"request_policy:special",
                   b"response_policy:special"], [], []]),
        ("pttl", [b"pttl", 2, [b"readonly", b"fast"], 1, 1, 1, [b"@keyspace", b"@read", b"@fast"],
                  [b"nondeterministic_output"], [key_spec(1, [b"RO", b"access"])], []]),
    ],
)
def test_command_info(r2, name, expected):
    kind, entries = r2.call("COMMAND", "INFO", name)
    assert kind == "*"
    assert plain(entries[0]) == expected


def test_object_subcommands_in_command_info(r2):
    kind, entries = r2.call("COMMAND", "INFO", "object")
    subcommands = plain(entries[0])[9]
    assert [entry[0] for entry in subcommands] == [
        b"object|encoding", b"object|freq", b"object|help", b"object|idletime", b"object|refcount"
    ]
    assert subcommands[2][:7] == [b"object|help", 2, [b"loading", b"stale"], 0, 0, 0,
                                  [b"@keyspace", b"@slow"]]


def test_object_freq_counts_accesses_under_an_lfu_policy(r2):
    """Valkey's LFU counter: a new key starts at 5; with lfu-log-factor 0 every lookup
    adds one (an overwrite keeps the counter and counts its own lookup; SET ... GET looks
    the key up twice); CLIENT NO-TOUCH reads count nothing."""
    r2.call("CONFIG", "SET", "maxmemory-policy", "allkeys-lfu")
    r2.call("CONFIG", "SET", "lfu-log-factor", "0")
    try:
        freq = []
        steps = [("SET", "k", "v"), ("GET", "k"), ("GET", "k"), ("SET", "k", "v2"), ("APPEND", "k", "x"),
                 ("MSET", "k", "1", "k3", "2"), ("INCR", "k"), ("SET", "k", "x", "GET"), ("EXISTS", "k")]
        for step in steps:
            r2.call(*step)
            freq.append(r2.call("OBJECT", "FREQ", "k"))
        assert freq == [(":", n) for n in (5, 6, 7, 8, 9, 10, 11, 13, 13)]  # EXISTS does not touch
        r2.call("CLIENT", "NO-TOUCH", "on")
        r2.call("GET", "k")
        assert r2.call("OBJECT", "FREQ", "k") == (":", 13)
        r2.call("CLIENT", "NO-TOUCH", "off")
        r2.call("HSET", "h", "f", "v")
        r2.call("HSET", "h", "f", "v2")
        assert r2.call("OBJECT", "FREQ", "h") == (":", 6)
    finally:
        r2.call("CONFIG", "SET", "lfu-log-factor", "10")
        r2.call("CONFIG", "SET", "maxmemory-policy", "noeviction")


@pytest.mark.fakekey_only
def test_object_freq_decays_one_per_lfu_decay_time_minutes(r2):
    r2.call("FAKEKEY.CLOCK", "SET", 1_700_000_000_000)
    r2.call("CONFIG", "SET", "maxmemory-policy", "allkeys-lfu")
    r2.call("CONFIG", "SET", "lfu-log-factor", "0")
    try:
        r2.call("SET", "k", "v")
        r2.call("GET", "k")
        assert r2.call("OBJECT", "FREQ", "k") == (":", 6)
        r2.call("FAKEKEY.CLOCK", "ADVANCE", 2 * 60_000)  # lfu-decay-time 1: two periods
        assert r2.call("OBJECT", "FREQ", "k") == (":", 4)
        r2.call("GET", "k")  # decayed, then counted
        assert r2.call("OBJECT", "FREQ", "k") == (":", 5)
    finally:
        r2.call("CONFIG", "SET", "lfu-log-factor", "10")
        r2.call("CONFIG", "SET", "maxmemory-policy", "noeviction")
        r2.call("FAKEKEY.CLOCK", "REAL")
