"""A key that clients wait on but that has expired: SWAPDB does not count it as ready (its
waiters stay blocked, the key stays until something reads it); a key that expired during
the EXEC that pushed to it is looked at under a fresh clock, so the waiter's command runs
again, deletes it and blocks again. And the PING Valkey 9.1.2 sends at once into the first
replication stream of a server (its offset still 0)."""

from __future__ import annotations

import time

import pytest

from fakekey.testing.raw import RawClient

OK = ("+", b"OK")


@pytest.fixture
def lazy(r2: RawClient):
    """r2 with active expiry off: an expired key stays until a command looks it up."""
    assert r2.call("DEBUG", "SET-ACTIVE-EXPIRE", "0") == OK
    yield r2
    r2.call("DEBUG", "SET-ACTIVE-EXPIRE", "1")
    r2.call("SELECT", "9")


def still_blocked(r2: RawClient, client_id: int) -> bool:
    return b"flags=b" in r2.call("CLIENT", "LIST", "ID", str(client_id))[1]


def wait_until_blocked(r2: RawClient, client_id: int) -> None:
    """Until that client is blocked (a count of blocked clients would also count another
    test's client still closing on a shared server)."""
    deadline = time.monotonic() + 5
    while not still_blocked(r2, client_id):
        assert time.monotonic() < deadline
        time.sleep(0.01)


def test_swapdb_brings_an_expired_key_its_waiter_stays_blocked(target, lazy):
    lazy.call("SELECT", "1")
    lazy.call("RPUSH", "k", "hello")
    lazy.call("PEXPIRE", "k", "50")
    with target.raw(2) as waiter:
        waiter.call("SELECT", "9")
        waiter_id = waiter.call("CLIENT", "ID")[1]
        waiter.send("BRPOP", "k", "0")
        wait_until_blocked(lazy, waiter_id)
        lazy.call("DEBUG", "SLEEP", "0.06")  # past the key's deadline
        assert lazy.call("SWAPDB", "1", "9") == OK
        assert still_blocked(lazy, waiter_id)
        lazy.call("SELECT", "9")
        assert lazy.call("DBSIZE") == (":", 1)  # expired, not deleted
        assert lazy.call("CLIENT", "UNBLOCK", str(waiter_id)) == (":", 1)
        assert waiter.read() == ("*", None)


def test_a_key_expired_during_exec_leaves_its_waiter_blocked(target, lazy):
    with target.raw(2) as waiter:
        waiter_id = waiter.call("CLIENT", "ID")[1]
        waiter.send("BRPOP", "k", "0")
        wait_until_blocked(lazy, waiter_id)
        lazy.call("MULTI")
        lazy.call("RPUSH", "k", "hello")
        lazy.call("PEXPIRE", "k", "100")
        lazy.call("DEBUG", "SLEEP", "0.2")
        assert lazy.call("EXEC")[0] == "*"
        assert still_blocked(lazy, waiter_id)  # its BRPOP ran again: it deleted the key
        assert lazy.call("DBSIZE") == (":", 0)
        assert lazy.call("CLIENT", "UNBLOCK", str(waiter_id)) == (":", 1)
        assert waiter.read() == ("*", None)


def attach(host: str, port: int) -> RawClient:
    """SYNC, the snapshot skipped: the stream follows."""
    client = RawClient(host, port)
    client.send("SYNC")
    while True:
        while not client.buf:
            client._fill()
        if client.buf[:1] == b"\n":  # keepalive newlines before the file
            client.buf = client.buf[1:]
            continue
        size = int(client._line()[1:])
        break
    while len(client.buf) < size:
        client._fill()
    client.buf = client.buf[size:]
    return client


def next_command(stream: RawClient) -> list[bytes]:
    kind, items = stream.read()
    assert kind == "*"
    return [item[1] for item in items]


def test_the_first_stream_of_a_server_starts_with_a_ping(private_target):
    server = private_target()
    with RawClient(server.host, server.port) as writer:
        writer.call("CONFIG", "SET", "repl-ping-replica-period", "3600")
        writer.call("SET", "before", "1")  # no replica yet: the offset stays 0
        first = attach(server.host, server.port)
        try:
            assert next_command(first) == [b"ping"]
        finally:
            first.close()
        second = attach(server.host, server.port)
        try:
            writer.call("SET", "k", "v")
            assert next_command(second) == [b"SELECT", b"0"]  # no PING: the offset moved
            assert next_command(second) == [b"SET", b"k", b"v"]
        finally:
            second.close()
