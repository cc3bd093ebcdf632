"""Blocking XREAD/XREADGROUP as Valkey serves them, and stream times under fakekey's clock."""

import time

import pytest

from fakekey.testing.raw import plain

NOGROUP = ("-", b"NOGROUP No such key 's' or consumer group 'g' in XREADGROUP with GROUP option")
T0 = 1700000000000


def null_array(proto):
    return ("*", None) if proto == 2 else ("_", None)


def entry(sid, *fields):
    return ("*", [("$", sid.encode()), ("*", [("$", f.encode()) for f in fields])])


def read_reply(proto, key, *items):
    """An XREAD/XREADGROUP reply for one stream."""
    if proto == 2:
        return ("*", [("*", [("$", key.encode()), ("*", list(items))])])
    return ("%", [(("$", key.encode()), ("*", list(items)))])


@pytest.fixture
def other(target):
    client = target.raw(2)
    yield client
    client.close()


@pytest.fixture
def waiters(target, proto):
    """Extra connections in the test's protocol, closed afterwards."""
    made = []

    def make():
        client = target.raw(proto)
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()


def parked(conn, wait=0.05):
    """True while `conn` has no reply (it is still blocked)."""
    return not conn.is_closed(wait) and conn.buf == b""


def wait_blocked(other, count=1, timeout=2.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if f"blocked_clients:{count}" in other.call("INFO", "clients")[1].decode():
            return
        time.sleep(0.005)
    raise AssertionError(f"never saw {count} blocked clients")


def block_group(conn, other, count=1, *options):
    conn.send("XREADGROUP", "GROUP", "g", "c%d" % count, *options, "BLOCK", "0", "STREAMS", "s", ">")
    wait_blocked(other, count)


# --- waking ---------------------------------------------------------------------------------


def test_xread_woken_by_xadd(r, proto, other):
    r.send("XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    wait_blocked(other)
    start = time.monotonic()
    assert other.call("XADD", "s", "1-1", "f", "v") == ("$", b"1-1")
    assert r.read() == read_reply(proto, "s", entry("1-1", "f", "v"))
    assert time.monotonic() - start < 0.5


def test_xread_answers_at_once_when_data(r, proto):
    r.call("XADD", "s", "1-1", "f", "v")
    assert r.call("XREAD", "BLOCK", "0", "STREAMS", "s", "0") == read_reply(proto, "s", entry("1-1", "f", "v"))


def test_dollar_is_resolved_when_blocking(r, proto, other):
    """`$` means the last id at the time the command blocked, whatever happens later."""
    other.call("XADD", "s", "5-1", "f", "v")
    r.send("XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    wait_blocked(other)
    other.call("DEL", "s")
    other.call("XADD", "s", "1-2", "f", "v")  # a new stream, below the old last id
    assert parked(r)
    other.call("XADD", "s", "6-2", "f", "v")
    assert r.read() == read_reply(proto, "s", entry("6-2", "f", "v"))


def test_xread_timeout(r, proto):
    start = time.monotonic()
    assert r.call("XREAD", "BLOCK", "100", "STREAMS", "s", "$") == null_array(proto)
    assert 0.08 <= time.monotonic() - start < 1.0
    assert r.call("XREADGROUP", "GROUP", "g", "c", "BLOCK", "50", "STREAMS", "s", ">")[0] == "-"  # no group


def test_xreadgroup_timeout_keeps_the_consumer(r, proto):
    r.call("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    assert r.call("XREADGROUP", "GROUP", "g", "c", "BLOCK", "50", "STREAMS", "s", ">") == null_array(proto)
    consumer = plain(r.call("XINFO", "CONSUMERS", "s", "g"))[0]
    consumer = consumer if isinstance(consumer, dict) else dict(zip(consumer[::2], consumer[1::2], strict=True))
    assert (consumer[b"name"], consumer[b"pending"], consumer[b"inactive"]) == (b"c", 0, -1)


def test_every_xread_waiter_gets_the_entry(r, proto, other, waiters):
    second = waiters()
    r.send("XREAD", "BLOCK", "0", "STREAMS", "s", "0")
    wait_blocked(other, 1)
    second.send("XREAD", "BLOCK", "0", "STREAMS", "s", "0")
    wait_blocked(other, 2)
    other.call("XADD", "s", "1-1", "f", "v")
    assert r.read() == read_reply(proto, "s", entry("1-1", "f", "v"))
    assert second.read() == read_reply(proto, "s", entry("1-1", "f", "v"))


def test_xreadgroup_waiters_first_come_first_served(r, proto, other, waiters):
    other.call("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    second = waiters()
    block_group(r, other, 1)
    block_group(second, other, 2)
    other.call("XADD", "s", "1-1", "f", "v")
    assert r.read() == read_reply(proto, "s", entry("1-1", "f", "v"))
    assert parked(second)  # the entry went to the first; the second waits on
    other.call("XADD", "s", "2-1", "f", "v")
    assert second.read() == read_reply(proto, "s", entry("2-1", "f", "v"))
    pending = {row[0]: row[1] for row in plain(other.call("XPENDING", "s", "g", "-", "+", "10"))}
    assert pending == {b"1-1": b"c1", b"2-1": b"c2"}


def test_woken_with_count(r, proto, other):
    r.send("XREAD", "COUNT", "2", "BLOCK", "0", "STREAMS", "s", "$")
    wait_blocked(other)
    other.pipeline(("MULTI",), *[("XADD", "s", f"{i}-1", "f", "v") for i in (1, 2, 3)], ("EXEC",))
    assert r.read() == read_reply(proto, "s", entry("1-1", "f", "v"), entry("2-1", "f", "v"))


def test_transaction_that_adds_and_deletes_wakes_nobody(r, proto, other):
    r.send("XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    wait_blocked(other)
    other.pipeline(("MULTI",), ("XADD", "s", "1-1", "f", "v"), ("XDEL", "s", "1-1"), ("EXEC",))
    assert parked(r)
    other.call("XADD", "s", "2-1", "f", "v")
    assert r.read() == read_reply(proto, "s", entry("2-1", "f", "v"))


def test_blocking_inside_multi_answers_as_timeout(r, proto):
    r.call("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    replies = r.pipeline(
        ("MULTI",), ("XREAD", "BLOCK", "0", "STREAMS", "s", "$"),
        ("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">"), ("EXEC",),
    )
    assert replies[-1] == ("*", [null_array(proto), null_array(proto)])


def test_client_unblock(r, proto, other):
    client_id = r.call("CLIENT", "ID")[1]
    r.send("XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    wait_blocked(other)
    assert other.call("CLIENT", "UNBLOCK", str(client_id)) == (":", 1)
    assert r.read() == null_array(proto)
    r.send("XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    wait_blocked(other)
    assert other.call("CLIENT", "UNBLOCK", str(client_id), "ERROR") == (":", 1)
    assert r.read() == ("-", b"UNBLOCKED client unblocked via CLIENT UNBLOCK")


# --- deletion, type changes, destroyed groups ----------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [("DEL", "s"), ("XGROUP", "DESTROY", "s", "g"), ("FLUSHALL",), ("UNLINK", "s"), ("RENAME", "s", "t")],
    ids=["del", "destroy", "flushall", "unlink", "rename"],
)
def test_xreadgroup_released_when_its_group_goes(r, other, command):
    other.call("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    block_group(r, other)
    other.call(*command)
    assert r.read() == NOGROUP
    wait_blocked(other, 0)


def test_xreadgroup_released_when_the_key_changes_type(r, other):
    other.call("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    block_group(r, other)
    other.call("SET", "s", "x")
    assert r.read() == ("-", b"WRONGTYPE Operation against a key holding the wrong kind of value")


def test_xreadgroup_waits_on_when_the_group_is_recreated(r, proto, other):
    other.call("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    block_group(r, other)
    other.pipeline(("MULTI",), ("DEL", "s"), ("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"), ("EXEC",))
    assert parked(r)
    other.call("XADD", "s", "1-1", "f", "v")
    assert r.read() == read_reply(proto, "s", entry("1-1", "f", "v"))


def test_deletion_releases_xreadgroup_behind_an_xread(r, proto, other, waiters):
    """An XREAD parked first does not stop the deletion reaching the XREADGROUP after it."""
    other.call("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    group_waiter = waiters()
    r.send("XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    wait_blocked(other, 1)
    block_group(group_waiter, other, 2)
    other.call("DEL", "s")
    assert group_waiter.read() == NOGROUP
    assert parked(r)
    other.call("XADD", "s", "1-1", "f", "v")
    assert r.read() == read_reply(proto, "s", entry("1-1", "f", "v"))


def test_xread_waits_through_a_type_change(r, proto, other):
    other.call("XADD", "s", "1-1", "f", "v")
    r.send("XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    wait_blocked(other)
    other.call("SET", "s", "x")
    assert parked(r)
    other.call("DEL", "s")
    other.call("XADD", "s", "2-1", "f", "v")
    assert r.read() == read_reply(proto, "s", entry("2-1", "f", "v"))


def test_xreadgroup_released_when_the_key_expires(r, other):
    other.call("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    other.call("PEXPIRE", "s", "30")
    block_group(r, other)
    r.sock.settimeout(3)
    assert r.read() == NOGROUP


# --- fakekey's clock ------------------------------------------------------------------------


@pytest.fixture
def frozen(target):
    """fakekey's clock frozen at T0 (the target's reset returns it to the wall clock)."""
    with target.raw() as client:
        client.call("FAKEKEY.CLOCK", "SET", str(T0))
    return T0


@pytest.mark.fakekey_only
def test_auto_ids_follow_the_frozen_clock(r2, frozen):
    assert r2.call("XADD", "s", "*", "f", "v") == ("$", b"%d-0" % T0)
    assert r2.call("XADD", "s", "*", "f", "v") == ("$", b"%d-1" % T0)  # the clock stands still
    r2.call("FAKEKEY.CLOCK", "ADVANCE", "5")
    assert r2.call("XADD", "s", "*", "f", "v") == ("$", b"%d-0" % (T0 + 5))
    r2.call("FAKEKEY.CLOCK", "SET", str(T0 - 1000))  # the clock goes back: the sequence grows
    assert r2.call("XADD", "s", "*", "f", "v") == ("$", b"%d-1" % (T0 + 5))
    replies = r2.pipeline(("MULTI",), ("XADD", "t", "*", "f", "v"), ("XADD", "t", "*", "f", "v"), ("EXEC",))
    assert plain(replies[-1]) == [b"%d-0" % (T0 - 1000), b"%d-1" % (T0 - 1000)]


@pytest.mark.fakekey_only
def test_block_times_out_when_the_clock_is_advanced(r, proto, other, frozen):
    r.send("XREAD", "BLOCK", "1000", "STREAMS", "s", "$")
    wait_blocked(other)
    assert parked(r, 0.2)  # a frozen clock does not move
    other.call("FAKEKEY.CLOCK", "ADVANCE", "999")
    assert parked(r)
    other.call("FAKEKEY.CLOCK", "ADVANCE", "1")
    assert r.read() == null_array(proto)


@pytest.mark.fakekey_only
def test_idle_times_follow_the_clock(r2, frozen):
    r2.call("XADD", "s", "1-1", "f", "v")
    r2.call("XADD", "s", "2-1", "f", "v")
    r2.call("XGROUP", "CREATE", "s", "g", "0")
    r2.call("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    r2.call("FAKEKEY.CLOCK", "ADVANCE", "250")
    assert plain(r2.call("XPENDING", "s", "g", "-", "+", "10")) == [[b"1-1", b"c", 250, 1], [b"2-1", b"c", 250, 1]]
    assert len(plain(r2.call("XPENDING", "s", "g", "IDLE", "250", "-", "+", "10"))) == 2
    assert plain(r2.call("XPENDING", "s", "g", "IDLE", "251", "-", "+", "10")) == []
    assert plain(r2.call("XINFO", "CONSUMERS", "s", "g")) == [[b"name", b"c", b"pending", 2, b"idle", 250,
                                                               b"inactive", 250]]
    r2.call("XCLAIM", "s", "g", "d", "0", "1-1", "IDLE", "100", "JUSTID")
    r2.call("XCLAIM", "s", "g", "d", "0", "2-1", "TIME", str(T0 - 50), "JUSTID")
    r2.call("FAKEKEY.CLOCK", "ADVANCE", "10")
    rows = plain(r2.call("XPENDING", "s", "g", "-", "+", "10"))
    assert [(row[0], row[1], row[2]) for row in rows] == [(b"1-1", b"d", 110), (b"2-1", b"d", 310)]
    full = plain(r2.call("XINFO", "STREAM", "s", "FULL"))
    group = dict(zip(full[-1][0][::2], full[-1][0][1::2], strict=True))
    assert group[b"pending"] == [[b"1-1", b"d", T0 + 150, 1], [b"2-1", b"d", T0 - 50, 1]]
    consumers = {c[1]: dict(zip(c[::2], c[1::2], strict=True)) for c in group[b"consumers"]}
    assert (consumers[b"c"][b"seen-time"], consumers[b"c"][b"active-time"]) == (T0, T0)
    assert (consumers[b"d"][b"seen-time"], consumers[b"d"][b"active-time"]) == (T0 + 250, T0 + 250)


@pytest.mark.fakekey_only
def test_xautoclaim_reclaims_after_the_lease(r2, frozen):
    for sid in ("1-1", "2-1"):
        r2.call("XADD", "s", sid, "f", "v")
    r2.call("XGROUP", "CREATE", "s", "g", "0")
    r2.call("XREADGROUP", "GROUP", "g", "dead", "STREAMS", "s", ">")
    r2.call("FAKEKEY.CLOCK", "ADVANCE", "99")
    assert plain(r2.call("XAUTOCLAIM", "s", "g", "alive", "100", "0", "JUSTID")) == [b"0-0", [], []]
    r2.call("FAKEKEY.CLOCK", "ADVANCE", "1")
    assert plain(r2.call("XAUTOCLAIM", "s", "g", "alive", "100", "0")) == [
        b"0-0", [[b"1-1", [b"f", b"v"]], [b"2-1", [b"f", b"v"]]], []]
    assert plain(r2.call("XPENDING", "s", "g", "-", "+", "10")) == [[b"1-1", b"alive", 0, 2], [b"2-1", b"alive", 0, 2]]
    assert plain(r2.call("XCLAIM", "s", "g", "dead", "1", "1-1")) == []  # idle 0 < 1
