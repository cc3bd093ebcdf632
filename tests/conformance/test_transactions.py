"""MULTI/EXEC/DISCARD/WATCH/UNWATCH (both targets, RESP2 and RESP3)."""

import time

import pytest


def null_array(proto):
    return ("*", None) if proto == 2 else ("_", None)


@pytest.fixture
def other(target):
    client = target.raw(2)
    yield client
    client.close()


def run_tx(r, *commands):
    """MULTI, the commands, EXEC: the EXEC reply."""
    return r.pipeline(("MULTI",), *commands, ("EXEC",))[-1]


def test_queued_replies_and_exec(r):
    assert r.call("MULTI") == ("+", b"OK")
    assert r.call("SET", "a", "1") == ("+", b"QUEUED")
    assert r.call("INCR", "a") == ("+", b"QUEUED")
    assert r.call("GET", "a") == ("+", b"QUEUED")
    assert r.call("EXEC") == ("*", [("+", b"OK"), (":", 2), ("$", b"2")])


def test_runtime_errors_do_not_stop_the_rest(r):
    assert run_tx(r, ("SET", "a", "x"), ("INCR", "a"), ("LPUSH", "a", "v"), ("GET", "a")) == (
        "*",
        [
            ("+", b"OK"),
            ("-", b"ERR value is not an integer or out of range"),
            ("-", b"WRONGTYPE Operation against a key holding the wrong kind of value"),
            ("$", b"x"),
        ],
    )


def test_queue_time_errors_abort(r):
    assert r.call("MULTI") == ("+", b"OK")
    assert r.call("SET", "a") == ("-", b"ERR wrong number of arguments for 'set' command")
    assert r.call("NOSUCHCMD") == ("-", b"ERR unknown command 'NOSUCHCMD', with args beginning with: ")
    assert r.call("SET", "b", "1") == ("+", b"QUEUED")
    assert r.call("EXEC") == ("-", b"EXECABORT Transaction discarded because of previous errors.")
    assert r.call("EXISTS", "b") == (":", 0)


def test_nested_multi_and_watch_inside_multi(r):
    r.call("MULTI")
    assert r.call("MULTI") == ("-", b"ERR Command 'multi' not allowed inside a transaction")
    assert r.call("WATCH", "x") == ("-", b"ERR Command 'watch' not allowed inside a transaction")
    assert r.call("EXEC") == ("-", b"EXECABORT Transaction discarded because of previous errors.")


def test_exec_and_discard_without_multi(r):
    assert r.call("EXEC") == ("-", b"ERR EXEC without MULTI")
    assert r.call("DISCARD") == ("-", b"ERR DISCARD without MULTI")


def test_discard_drops_the_queue(r):
    r.call("MULTI")
    r.call("SET", "a", "1")
    assert r.call("DISCARD") == ("+", b"OK")
    assert r.call("EXISTS", "a") == (":", 0)
    assert r.call("EXEC") == ("-", b"ERR EXEC without MULTI")


def test_empty_transaction(r):
    assert run_tx(r) == ("*", [])


def test_watch_aborts_on_another_clients_write(r, other, proto):
    r.call("SET", "k", "v")
    assert r.call("WATCH", "k") == ("+", b"OK")
    other.call("SET", "k", "v")  # the same value still counts as a write
    assert run_tx(r, ("SET", "k", "mine")) == null_array(proto)
    assert r.call("GET", "k") == ("$", b"v")


def test_watch_survives_reads_and_other_keys(r, other):
    r.call("SET", "k", "v")
    r.call("WATCH", "k")
    other.call("GET", "k")
    other.call("SET", "unrelated", "1")
    assert run_tx(r, ("SET", "k", "mine")) == ("*", [("+", b"OK")])


def test_exec_unwatches(r, other):
    r.call("WATCH", "k")
    run_tx(r, ("PING",))
    other.call("SET", "k", "x")
    assert run_tx(r, ("PING",)) == ("*", [("+", b"PONG")])


def test_own_write_also_aborts(r, proto):
    r.call("SET", "k", "v")
    r.call("WATCH", "k")
    r.call("SET", "k", "w")
    assert run_tx(r, ("PING",)) == null_array(proto)


def test_unwatch(r, other):
    r.call("WATCH", "k")
    assert r.call("UNWATCH") == ("+", b"OK")
    other.call("SET", "k", "x")
    assert run_tx(r, ("PING",)) == ("*", [("+", b"PONG")])


@pytest.mark.parametrize(
    "change",
    [
        ("DEL", "k"), ("EXPIRE", "k", "100"), ("RENAME", "k", "k2"), ("APPEND", "k", "x"),
        ("FLUSHDB",), ("FLUSHALL",), ("SWAPDB", "0", "1"),
    ],
)
def test_watch_aborts_on_each_kind_of_change(r, other, proto, change):
    r.call("SET", "k", "v")
    r.call("WATCH", "k")
    other.call(*change)
    assert run_tx(r, ("PING",)) == null_array(proto)


def test_watched_missing_key_survives_flush(r, other):
    r.call("WATCH", "nokey")
    other.call("FLUSHDB")
    other.call("DEL", "nokey")
    assert run_tx(r, ("PING",)) == ("*", [("+", b"PONG")])


def test_rename_onto_watched_key_aborts(r, other, proto):
    other.call("SET", "src", "v")
    r.call("WATCH", "dst")
    other.call("RENAME", "src", "dst")
    assert run_tx(r, ("PING",)) == null_array(proto)


def test_expiry_after_watch_aborts(r, proto):
    r.call("SET", "k", "v", "PX", "150")  # long enough to be alive at WATCH on a busy machine
    r.call("WATCH", "k")
    time.sleep(0.2)
    assert run_tx(r, ("PING",)) == null_array(proto)


def test_key_already_expired_when_watched_does_not_abort(r):
    r.call("SET", "k", "v", "PX", "20")
    time.sleep(0.05)
    r.call("WATCH", "k")
    assert run_tx(r, ("PING",)) == ("*", [("+", b"PONG")])


def test_watch_is_per_database(r, other, proto):
    r.call("WATCH", "k")
    r.call("SELECT", "1")
    other.call("SET", "k", "x")  # db 0, where the key was watched
    assert run_tx(r, ("PING",)) == null_array(proto)


@pytest.mark.fakekey_only
def test_frozen_clock_expiry_after_watch_aborts(r, other, proto):
    other.call("FAKEKEY.CLOCK", "SET", "1700000000000")
    r.call("SET", "k", "v", "PX", "100")
    r.call("WATCH", "k")
    other.call("FAKEKEY.CLOCK", "ADVANCE", "101")
    assert run_tx(r, ("PING",)) == null_array(proto)


def test_each_reply_of_exec_is_in_the_protocol_in_force_when_it_ran(r, proto):
    """HELLO inside MULTI: the replies before it keep the old protocol, those after it
    take the new one, as Valkey writes each reply as its command ends."""
    r.call("HSET", "h", "a", "1")
    other = 3 if proto == 2 else 2
    reply = run_tx(r, ("HGETALL", "h"), ("HELLO", str(other)), ("HGETALL", "h"))
    r.call("HELLO", str(proto))
    first, _, last = reply[1]
    assert (first[0], last[0]) == (("*", "%") if proto == 2 else ("%", "*"))
    assert (first if proto == 2 else last) == ("*", [("$", b"a"), ("$", b"1")])
