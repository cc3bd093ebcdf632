"""Blocking commands, served as Valkey serves them (both targets, RESP2 and RESP3)."""

import time

import pytest


def null_array(proto):
    return ("*", None) if proto == 2 else ("_", None)


def null(proto):
    return ("$", None) if proto == 2 else ("_", None)


def pair(key, value):
    return ("*", [("$", key), ("$", value)])


@pytest.fixture
def other(target):
    """A second connection, RESP2, that pushes and inspects."""
    client = target.raw(2)
    yield client
    client.close()


@pytest.fixture
def third(target, proto):
    client = target.raw(proto)
    yield client
    client.close()


def parked(conn, wait=0.05):
    """True while `conn` has no reply (it is still blocked)."""
    return not conn.is_closed(wait) and conn.buf == b""


def wait_blocked(other, count=1, timeout=2.0):
    """Until INFO shows `count` blocked clients: a waiter is parked before we push."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        info = other.call("INFO", "clients")[1].decode()
        if f"blocked_clients:{count}" in info:
            return
        time.sleep(0.005)
    raise AssertionError(f"never saw {count} blocked clients")


def test_blpop_answers_at_once_when_data(r):
    r.call("RPUSH", "k", "a", "b")
    assert r.call("BLPOP", "nokey", "k", "0") == pair(b"k", b"a")
    assert r.call("BRPOP", "k", "0") == pair(b"k", b"b")
    assert r.call("EXISTS", "k") == (":", 0)


def test_doorbell_wakes_within_milliseconds(r, other):
    r.send("BLPOP", "emq:{q}:wake", "1.0")
    wait_blocked(other)
    start = time.monotonic()
    assert other.call("LPUSH", "emq:{q}:wake", "1") == (":", 1)
    assert r.read() == pair(b"emq:{q}:wake", b"1")
    assert time.monotonic() - start < 0.5
    assert other.call("EXISTS", "emq:{q}:wake") == (":", 0)


def test_timeout_answers_null_array(r, proto):
    start = time.monotonic()
    assert r.call("BLPOP", "k", "0.1") == null_array(proto)
    assert 0.08 <= time.monotonic() - start < 1.0
    # a blocked BLMOVE that times out answers a null array (in MULTI: a null bulk)
    assert r.call("BLMOVE", "k", "d", "LEFT", "LEFT", "0.05") == null_array(proto)
    assert r.call("BRPOPLPUSH", "k", "d", "0.05") == null_array(proto)
    assert r.call("BLMPOP", "0.05", "1", "k", "LEFT") == null_array(proto)


@pytest.mark.parametrize(
    "timeout,error",
    [
        ("-1", b"ERR timeout is negative"),
        ("abc", b"ERR timeout is not a float or out of range"),
        ("nan", b"ERR timeout is not a float or out of range"),
        (" 1", b"ERR timeout is not a float or out of range"),
        ("inf", b"ERR timeout is out of range"),
        ("9999999999999999", b"ERR timeout is out of range"),
    ],
)
def test_timeout_errors(r2, timeout, error):
    assert r2.call("BLPOP", "k", timeout) == ("-", error)
    assert r2.call("BLMOVE", "k", "d", "LEFT", "LEFT", timeout) == ("-", error)


def test_timeout_checked_before_type(r2):
    r2.call("SET", "s", "v")
    assert r2.call("BLPOP", "s", "x") == ("-", b"ERR timeout is not a float or out of range")


def test_waiters_served_first_come_first_served(target, proto, other):
    w1, w2 = target.raw(proto), target.raw(proto)
    try:
        w1.send("BRPOP", "q", "2")
        wait_blocked(other, 1)
        w2.send("BRPOP", "q", "2")
        wait_blocked(other, 2)
        assert other.call("RPUSH", "q", "a", "b", "c") == (":", 3)
        assert w1.read() == pair(b"q", b"c")
        assert w2.read() == pair(b"q", b"b")
        assert other.call("LRANGE", "q", "0", "-1") == ("*", [("$", b"a")])
    finally:
        w1.close()
        w2.close()


def test_transaction_that_pushes_and_pops_wakes_nobody(r, other, proto):
    r.send("BLPOP", "k", "2")
    wait_blocked(other)
    replies = other.pipeline(("MULTI",), ("LPUSH", "k", "a"), ("LPOP", "k"), ("EXEC",))
    assert replies[-1] == ("*", [(":", 1), ("$", b"a")])
    assert parked(r)
    other.call("RPUSH", "k", "b")
    assert r.read() == pair(b"k", b"b")


def test_woken_command_reruns_against_all_its_keys(r, other):
    r.send("BLPOP", "k1", "k2", "2")
    wait_blocked(other)
    other.pipeline(("MULTI",), ("RPUSH", "k2", "x"), ("RPUSH", "k1", "y"), ("EXEC",))
    assert r.read() == pair(b"k1", b"y")
    assert other.call("LRANGE", "k2", "0", "-1") == ("*", [("$", b"x")])


def test_blocking_inside_multi_answers_as_timeout(r, proto):
    replies = r.pipeline(
        ("MULTI",), ("BLPOP", "nk", "0"), ("BLMOVE", "nk", "x", "LEFT", "LEFT", "0"),
        ("BLMPOP", "0", "1", "nk", "LEFT"), ("EXEC",),
    )
    assert replies[-1] == ("*", [null_array(proto), null(proto), null_array(proto)])


def test_blocking_inside_multi_pops_when_data(r2):
    r2.call("RPUSH", "k", "a")
    replies = r2.pipeline(("MULTI",), ("BLPOP", "k", "0"), ("EXEC",))
    assert replies[-1] == ("*", [pair(b"k", b"a")])


def test_blmove_push_wakes_a_further_waiter(target, proto, other):
    w1, w2 = target.raw(proto), target.raw(proto)
    try:
        w1.send("BLMOVE", "src", "dst", "LEFT", "LEFT", "2")
        wait_blocked(other, 1)
        w2.send("BLPOP", "dst", "2")
        wait_blocked(other, 2)
        other.call("LPUSH", "src", "v")
        assert w1.read() == ("$", b"v")
        assert w2.read() == pair(b"dst", b"v")
        assert other.call("EXISTS", "src", "dst") == (":", 0)
    finally:
        w1.close()
        w2.close()


def test_blmpop_woken(r, other):
    r.send("BLMPOP", "2", "2", "a", "b", "RIGHT", "COUNT", "2")
    wait_blocked(other)
    other.call("RPUSH", "b", "1", "2", "3")
    assert r.read() == ("*", [("$", b"b"), ("*", [("$", b"3"), ("$", b"2")])])


def test_key_replaced_by_other_type_keeps_waiting(r, other):
    r.send("BLPOP", "k", "2")
    wait_blocked(other)
    other.call("SET", "k", "str")
    assert parked(r)
    other.call("DEL", "k")
    other.call("LPUSH", "k", "x")
    assert r.read() == pair(b"k", b"x")


def test_disconnected_waiter_never_swallows_a_push(target, other):
    waiter = target.raw(2)
    waiter.send("BLPOP", "k", "0")
    wait_blocked(other)
    waiter.close()
    wait_blocked(other, 0)
    assert other.call("LPUSH", "k", "a") == (":", 1)
    assert other.call("LLEN", "k") == (":", 1)


def test_pipelined_commands_wait_for_the_blocked_one(r, other):
    r.send_raw(b"*3\r\n$5\r\nBLPOP\r\n$1\r\nk\r\n$1\r\n2\r\n*2\r\n$3\r\nGET\r\n$1\r\ng\r\n")
    wait_blocked(other)
    other.call("SET", "g", "later")
    other.call("RPUSH", "k", "v")
    assert r.read() == pair(b"k", b"v")
    assert r.read() == ("$", b"later")


def test_blocked_client_is_listed(r, other):
    r.send("BLPOP", "k", "2")
    wait_blocked(other)
    listing = other.call("CLIENT", "LIST")[1].decode()
    assert any("flags=b" in line and "cmd=blpop" in line for line in listing.splitlines())
    other.call("RPUSH", "k", "a")
    r.read()
    wait_blocked(other, 0)


def test_client_unblock_timeout_and_error(r, other, proto):
    client_id = r.call("CLIENT", "ID")[1]
    r.send("BLPOP", "k", "0")
    wait_blocked(other)
    assert other.call("CLIENT", "UNBLOCK", str(client_id)) == (":", 1)
    assert r.read() == null_array(proto)
    r.send("BLPOP", "k", "0")
    wait_blocked(other)
    assert other.call("CLIENT", "UNBLOCK", str(client_id), "ERROR") == (":", 1)
    assert r.read() == ("-", b"UNBLOCKED client unblocked via CLIENT UNBLOCK")
    assert other.call("CLIENT", "UNBLOCK", str(client_id)) == (":", 0)
    assert other.call("CLIENT", "UNBLOCK", str(client_id), "FOO") == (
        "-", b"ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR")


def test_killed_waiter_is_gone(r, other):
    client_id = r.call("CLIENT", "ID")[1]
    r.send("BLPOP", "k", "0")
    wait_blocked(other)
    assert other.call("CLIENT", "KILL", "ID", str(client_id)) == (":", 1)
    assert r.is_closed()
    wait_blocked(other, 0)
    other.call("LPUSH", "k", "a")
    assert other.call("LLEN", "k") == (":", 1)


@pytest.mark.fakekey_only
def test_frozen_clock_advance_times_out_at_once(r, other, proto):
    other.call("FAKEKEY.CLOCK", "SET", "1700000000000")
    r.send("BLPOP", "emq:{q}:wake", "1.0")
    wait_blocked(other)
    assert parked(r, 0.2)  # the frozen clock does not move: still waiting
    other.call("FAKEKEY.CLOCK", "ADVANCE", "999")
    assert parked(r)
    start = time.monotonic()
    other.call("FAKEKEY.CLOCK", "ADVANCE", "1")
    assert r.read() == null_array(proto)
    assert time.monotonic() - start < 0.2


def score(proto, text):
    return ("$", text) if proto == 2 else (",", text)


def test_bzpop_answers_at_once_and_on_timeout(r, proto):
    r.call("ZADD", "z", "1", "a", "2", "b")
    assert r.call("BZPOPMIN", "z", "0") == ("*", [("$", b"z"), ("$", b"a"), score(proto, b"1")])
    assert r.call("BZPOPMAX", "nz", "z", "0") == ("*", [("$", b"z"), ("$", b"b"), score(proto, b"2")])
    assert r.call("BZPOPMIN", "nz", "0.01") == null_array(proto)
    assert r.call("BZMPOP", "0.01", "1", "nz", "MIN") == null_array(proto)
    r.call("ZADD", "z", "3", "c", "4", "d")
    assert r.call("BZMPOP", "0", "1", "z", "MAX", "COUNT", "5") == ("*", [("$", b"z"), ("*", [
        ("*", [("$", b"d"), score(proto, b"4")]), ("*", [("$", b"c"), score(proto, b"3")])])])
    r.call("SET", "s", "v")
    assert r.call("BZPOPMIN", "s", "0")[0] == "-"
    assert r.call("BZPOPMIN", "s", "x") == ("-", b"ERR timeout is not a float or out of range")
    assert r.call("BZMPOP", "0", "0", "z", "MIN") == ("-", b"ERR numkeys should be greater than 0")
    replies = r.pipeline(("MULTI",), ("BZPOPMIN", "nz", "0"), ("BZMPOP", "0", "1", "nz", "MIN"), ("EXEC",))
    assert replies[-1] == ("*", [null_array(proto), null_array(proto)])


def test_bzpopmin_woken_by_zadd(r, other, proto):
    r.send("BZPOPMIN", "z1", "z2", "2")
    wait_blocked(other)
    other.call("ZADD", "z2", "5", "m", "3", "n")
    assert r.read() == ("*", [("$", b"z2"), ("$", b"n"), score(proto, b"3")])
    r.send("BZMPOP", "2", "1", "z2", "MAX")
    assert r.read() == ("*", [("$", b"z2"), ("*", [("*", [("$", b"m"), score(proto, b"5")])])])
    r.send("BZMPOP", "2", "1", "z2", "MAX")
    wait_blocked(other)
    other.call("ZADD", "z2", "7", "q")
    assert r.read() == ("*", [("$", b"z2"), ("*", [("*", [("$", b"q"), score(proto, b"7")])])])


def test_list_waiter_ignores_a_zset_on_its_key(r, other):
    r.send("BLPOP", "k", "2")
    wait_blocked(other)
    other.call("ZADD", "k", "1", "a")
    assert parked(r)
    other.call("DEL", "k")
    other.call("RPUSH", "k", "v")
    assert r.read() == pair(b"k", b"v")


def test_waiters_that_block_again_keep_their_order(target, proto, other):
    """Woken waiters that find nothing block again in the order they were served (Valkey
    adds each at its key's tail), so the first to park is still served first."""
    other.call("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    first, second = target.raw(proto), target.raw(proto)
    try:
        first.send("XREADGROUP", "GROUP", "g", "c1", "COUNT", "1", "BLOCK", "0", "STREAMS", "s", ">")
        wait_blocked(other, 1)
        second.send("XREADGROUP", "GROUP", "g", "c2", "COUNT", "1", "BLOCK", "0", "STREAMS", "s", ">")
        wait_blocked(other, 2)
        # the stream is written (both wake) but holds nothing new when they read: both block again
        other.pipeline(("MULTI",), ("XADD", "s", "1-1", "f", "v"), ("XDEL", "s", "1-1"), ("EXEC",))
        assert parked(first) and parked(second)
        other.call("XADD", "s", "2-1", "f", "w")
        reply = first.read()
        assert b"2-1" in repr(reply).encode()
        assert parked(second)
    finally:
        first.close()
        second.close()
