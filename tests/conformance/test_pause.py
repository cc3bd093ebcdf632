"""CLIENT PAUSE / UNPAUSE: which commands wait, what the waiting clients look like, how
a pause ends, and keys that do not expire meanwhile (Valkey 9.1's pauseActions)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from fakekey.testing.raw import RawClient, read_within

PENDING = "nothing"  # read_within's answer when no reply came


def info_field(client: RawClient, section: str, name: str) -> str:
    text = client.call("INFO", section)[1].decode()
    return next(line.split(":", 1)[1] for line in text.split("\r\n") if line.startswith(name + ":"))


@pytest.fixture
def ctl(target) -> Iterator[RawClient]:
    """A controlling client; a WRITE pause a test leaves behind is lifted after it."""
    client = target.raw(2)
    yield client
    client.call("CLIENT", "UNPAUSE")
    client.close()


@pytest.mark.parametrize(("args", "error"), [
    (("abc",), b"ERR timeout is not an integer or out of range"),
    (("1.5",), b"ERR timeout is not an integer or out of range"),
    (("-1",), b"ERR timeout is negative"),
    (("10", "foo"), b"ERR CLIENT PAUSE mode must be WRITE or ALL"),
    (("abc", "foo"), b"ERR CLIENT PAUSE mode must be WRITE or ALL"),  # the mode first
    (("9223372036854775807",), b"ERR timeout is out of range"),
    ((), b"ERR wrong number of arguments for 'client|pause' command"),
])
def test_pause_errors(r2, args, error):
    assert r2.call("CLIENT", "PAUSE", *args) == ("-", error)


def test_unpause_arity_and_answers(r2):
    assert r2.call("CLIENT", "UNPAUSE") == ("+", b"OK")  # nothing paused: OK all the same
    assert r2.call("CLIENT", "UNPAUSE", "x") == (
        "-", b"ERR wrong number of arguments for 'client|unpause' command")
    assert r2.call("CLIENT", "PAUSE", "0", "WRITE") == ("+", b"OK")  # over at once
    assert info_field(r2, "clients", "paused_reason") == "none"


def test_write_pause_holds_a_write_until_unpause(target, proto, ctl):
    reader = target.raw(proto)
    writer = target.raw(proto)
    writer_id = writer.call("CLIENT", "ID")[1]
    assert ctl.call("CLIENT", "PAUSE", "10000", "WRITE") == ("+", b"OK")
    assert info_field(ctl, "clients", "paused_reason") == "client_pause"
    assert info_field(ctl, "clients", "paused_actions") == "write"
    assert 9000 < int(info_field(ctl, "clients", "paused_timeout_milliseconds")) <= 10000
    writer.send("SET", "k", "v")
    assert read_within(writer, 0.2) == PENDING
    assert reader.call("GET", "k") == (("_", None) if proto == 3 else ("$", None))
    assert reader.call("PING") == ("+", b"PONG")
    assert info_field(ctl, "clients", "blocked_clients") == "1"
    line = next(line for line in ctl.call("CLIENT", "LIST")[1].decode().splitlines()
                if line.startswith(f"id={writer_id} "))
    assert " flags=b " in line and " cmd=set " in line
    assert ctl.call("CLIENT", "UNBLOCK", writer_id) == (":", 0)  # a pause is no wait to end
    assert ctl.call("CLIENT", "UNPAUSE") == ("+", b"OK")
    assert read_within(writer, 5) == ("+", b"OK")
    assert reader.call("GET", "k") == ("$", b"v")
    assert info_field(ctl, "clients", "blocked_clients") == "0"
    assert info_field(ctl, "clients", "paused_actions") == "none"
    reader.close()
    writer.close()


# (command, held back by a WRITE pause)
WRITE_PAUSE_CASES = [
    (("SET", "k", "v"), True),
    (("DEL", "nokey"), True),
    (("EXPIRE", "k", "100"), True),
    (("FLUSHALL",), True),
    (("PUBLISH", "ch", "m"), True),
    (("SPUBLISH", "ch", "m"), True),
    (("PFCOUNT", "hll"), True),
    (("BLPOP", "list", "1"), True),
    (("EVAL", "return 1", "0"), True),
    (("EVAL", "#!lua\nreturn 1", "0"), True),
    (("FUNCTION", "FLUSH"), True),
    (("GET", "k"), False),
    (("PING",), False),
    (("SCRIPT", "FLUSH"), False),
    (("EVAL", "#!lua flags=no-writes\nreturn 1", "0"), False),
    (("EVAL_RO", "return 1", "0"), False),
    (("WAIT", "0", "0"), False),
    (("SELECT", "1"), False),
    (("XREAD", "STREAMS", "s", "0"), False),
]


@pytest.mark.parametrize(("command", "held"), WRITE_PAUSE_CASES,
                         ids=[" ".join(c[0][:2]).replace("\n", " ") for c in WRITE_PAUSE_CASES])
def test_write_pause_holds_what_may_write(target, ctl, command, held):
    client = target.raw(2)
    ctl.call("CLIENT", "PAUSE", "10000", "WRITE")
    client.send(*command)
    first = read_within(client, 0.15)
    ctl.call("CLIENT", "UNPAUSE")
    if held:
        assert first == PENDING
        assert read_within(client, 5) != PENDING  # it runs once the pause ends
    else:
        assert first != PENDING
    client.close()


def test_write_pause_and_transactions(target, ctl):
    queuing, reading, publishing = target.raw(2), target.raw(2), target.raw(2)
    assert publishing.call("MULTI") == ("+", b"OK")
    assert publishing.call("PUBLISH", "ch", "m") == ("+", b"QUEUED")
    ctl.call("SET", "k", "v")
    ctl.call("CLIENT", "PAUSE", "10000", "WRITE")
    assert queuing.call("MULTI") == ("+", b"OK")
    queuing.send("SET", "k", "w")  # checked before it is queued: it waits
    assert read_within(queuing, 0.15) == PENDING
    assert reading.call("MULTI") == ("+", b"OK")
    assert reading.call("GET", "k") == ("+", b"QUEUED")
    assert reading.call("EXEC") == ("*", [("$", b"v")])  # reads only: runs
    publishing.send("EXEC")  # a queued PUBLISH may replicate: the EXEC waits
    assert read_within(publishing, 0.15) == PENDING
    ctl.call("CLIENT", "UNPAUSE")
    assert read_within(queuing, 5) == ("+", b"QUEUED")
    assert queuing.call("EXEC") == ("*", [("+", b"OK")])
    assert read_within(publishing, 5) == ("*", [(":", 0)])
    for client in (queuing, reading, publishing):
        client.close()


def test_keys_do_not_expire_while_paused(target, proto, ctl):
    ctl.call("SET", "t", "v", "PX", "50")
    ctl.call("CLIENT", "PAUSE", "10000", "WRITE")
    time.sleep(0.15)
    r = target.raw(proto)
    null = ("_", None) if proto == 3 else ("$", None)
    assert r.call("GET", "t") == null  # expired to a reader ...
    assert r.call("EXISTS", "t") == (":", 0)
    assert r.call("TTL", "t") == (":", -2)
    assert r.call("DBSIZE") == (":", 1)  # ... but kept until the pause ends
    assert r.call("RANDOMKEY") == ("$", b"t")  # every key volatile: Valkey gives one
    assert r.call("KEYS", "*")[1] == []
    ctl.call("CLIENT", "UNPAUSE")
    assert r.call("GET", "t") == null
    assert r.call("DBSIZE") == (":", 0)  # the lookup after the pause deletes it
    r.close()


def test_all_pause_holds_every_command_even_unpause(target):
    ctl, other = target.raw(2), target.raw(2)
    assert ctl.call("CLIENT", "PAUSE", "400", "ALL") == ("+", b"OK")
    started = time.monotonic()
    other.send("PING")
    ctl.send("CLIENT", "UNPAUSE")
    assert read_within(other, 0.1) == PENDING
    assert read_within(ctl, 0.05) == PENDING
    assert read_within(other, 5) == ("+", b"PONG")  # the timeout ended it
    assert read_within(ctl, 5) == ("+", b"OK")
    assert time.monotonic() - started >= 0.3
    ctl.close()
    other.close()


def test_a_new_pause_takes_its_mode_and_the_later_end(target):
    ctl, other = target.raw(2), target.raw(2)
    ctl.call("CLIENT", "PAUSE", "500", "WRITE")
    ctl.call("CLIENT", "PAUSE", "10", "ALL")  # ALL now, until the WRITE pause's end
    other.send("PING")
    assert read_within(other, 0.2) == PENDING
    assert read_within(other, 5) == ("+", b"PONG")
    ctl.close()
    other.close()


def test_a_four_word_pause_alone_reads_the_mode(target):
    ctl, other = target.raw(2), target.raw(2)
    # Valkey reads the mode only from CLIENT PAUSE timeout mode: with more, it pauses ALL
    assert ctl.call("CLIENT", "PAUSE", "300", "WRITE", "extra") == ("+", b"OK")
    other.send("GET", "k")
    assert read_within(other, 0.1) == PENDING
    assert read_within(other, 5)[0] in "$_"
    ctl.close()
    other.close()


def test_held_clients_run_in_arrival_order_when_the_pause_times_out(target, ctl):
    first, second = target.raw(2), target.raw(2)
    ctl.call("CLIENT", "PAUSE", "300", "WRITE")
    first.send("SET", "k", "1")
    assert read_within(first, 0.05) == PENDING
    second.send("SET", "k", "2")
    assert read_within(second, 0.05) == PENDING
    assert read_within(first, 5) == ("+", b"OK")
    assert read_within(second, 5) == ("+", b"OK")
    assert ctl.call("GET", "k") == ("$", b"2")
    first.close()
    second.close()


def test_a_held_client_that_leaves_is_forgotten(target, ctl):
    leaving = target.raw(2)
    ctl.call("CLIENT", "PAUSE", "10000", "WRITE")
    leaving.send("SET", "k", "gone")
    assert read_within(leaving, 0.1) == PENDING
    leaving.close()
    time.sleep(0.1)
    ctl.call("CLIENT", "UNPAUSE")
    # Valkey drops the request of a client that left; nothing ran
    assert ctl.call("EXISTS", "k") == (":", 0)


@pytest.mark.fakekey_only
def test_pause_follows_the_server_clock(target, ctl):
    writer = target.raw(2)
    ctl.call("FAKEKEY.CLOCK", "SET", "1700000000000")
    ctl.call("CLIENT", "PAUSE", "1000", "WRITE")
    writer.send("SET", "k", "v")
    time.sleep(0.3)
    assert read_within(writer, 0.1) == PENDING  # the frozen clock has not moved
    assert info_field(ctl, "clients", "paused_timeout_milliseconds") == "1000"
    ctl.call("FAKEKEY.CLOCK", "ADVANCE", "1000")
    assert read_within(writer, 5) == ("+", b"OK")
    assert info_field(ctl, "clients", "paused_reason") == "none"
    writer.close()


def test_write_pause_reads_a_functions_flags(target, ctl):
    library = ("#!lua name=pauselib\n"
               "server.register_function{function_name='ro', callback=function() return 1 end,"
               " flags={'no-writes'}}\n"
               "server.register_function('rw', function() return 2 end)")
    assert ctl.call("FUNCTION", "LOAD", "REPLACE", library) == ("$", b"pauselib")
    client = target.raw(2)
    try:
        ctl.call("CLIENT", "PAUSE", "10000", "WRITE")
        assert client.call("FCALL", "ro", "0") == (":", 1)  # declares no-writes: runs
        assert client.call("FCALL_RO", "ro", "0") == (":", 1)
        client.send("FCALL", "rw", "0")  # may write: waits
        assert read_within(client, 0.15) == PENDING
        ctl.call("CLIENT", "UNPAUSE")
        assert read_within(client, 5) == (":", 2)
    finally:
        ctl.call("CLIENT", "UNPAUSE")
        ctl.call("FUNCTION", "FLUSH")
        client.close()


def test_a_pause_stops_eviction_and_the_oom_refusal_until_it_ends(target, ctl):
    writer = target.raw(2)
    ctl.call("SET", "big", "x" * 10000)
    assert ctl.call("CONFIG", "SET", "maxmemory", "1") == ("+", b"OK")
    try:
        oom = ("-", b"OOM command not allowed when used memory > 'maxmemory'.")
        assert writer.call("SET", "a", "b") == oom
        ctl.call("CLIENT", "PAUSE", "10000", "WRITE")
        writer.send("SET", "a", "b")  # no OOM while paused: held back instead
        assert read_within(writer, 0.15) == PENDING
        ctl.call("CLIENT", "UNPAUSE")
        assert read_within(writer, 5) == oom  # checked again when it runs
    finally:
        ctl.call("CONFIG", "SET", "maxmemory", "0")
        writer.close()
