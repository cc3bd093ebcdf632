"""Replication and cluster-mode commands on a lone primary without cluster support:
READONLY, READWRITE, ASKING, REPLICAOF/SLAVEOF, REPLCONF, FAILOVER, WAITAOF, CLIENT
IMPORT-SOURCE (Valkey 9.1's answers and errors), and SYNC/PSYNC's RDB snapshot.
`REPLICAOF host port` starts replication on both (tests/fakekey/test_replica_link.py
follows a real primary), so only its checks before that are compared here."""

from __future__ import annotations

import time

import pytest

from fakekey.persistence import rdb
from fakekey.testing.raw import RawClient, read_within

OK = ("+", b"OK")
SYNTAX = ("-", b"ERR syntax error")
NOT_INTEGER = ("-", b"ERR value is not an integer or out of range")


@pytest.mark.parametrize(("command", "reply"), [
    (("READONLY",), OK),
    (("READWRITE",), OK),
    (("READONLY", "x"), ("-", b"ERR wrong number of arguments for 'readonly' command")),
    (("ASKING",), ("-", b"ERR This instance has cluster support disabled")),
    (("REPLICAOF", "NO", "ONE"), OK),
    (("SLAVEOF", "no", "one"), OK),
    (("REPLICAOF", "no", "two"), ("-", b"ERR Invalid master port")),
    (("REPLICAOF", "localhost", "abc"), ("-", b"ERR Invalid master port")),
    (("REPLICAOF", "localhost", "-1"), ("-", b"ERR Invalid master port")),
    (("REPLICAOF", "localhost", "65536"), ("-", b"ERR Invalid master port")),
    (("REPLICAOF", "no"), ("-", b"ERR wrong number of arguments for 'replicaof' command")),
    (("PSYNC", "?", "x"), NOT_INTEGER),
    (("SYNC", "x"), ("-", b"ERR wrong number of arguments for 'sync' command")),
])
def test_lone_primary_answers(r, command, reply):
    assert r.call(*command) == reply


@pytest.mark.parametrize(("args", "reply"), [
    ((), OK),
    (("listening-port", "6380"), OK),
    (("listening-port", "1", "ip-address", "1.2.3.4", "capa", "eof", "capa", "psync2"), OK),
    (("rdb-only", "1"), OK),
    (("rdb-only", "0", "rdb-filter-only", "functions"), OK),
    (("version", "9.1.2"), OK),
    (("x",), SYNTAX),
    (("listening-port",), SYNTAX),
    (("getack",), SYNTAX),
    (("listening-port", "abc"), NOT_INTEGER),
    (("rdb-only", "x"), NOT_INTEGER),
    (("rdb-only", "2"), ("-", b"ERR value is out of range, value must between 0 and 1")),
    (("rdb-filter-only", "x"), ("-", b"ERR Unsupported rdb-filter-only option: x")),
    (("version", "1"), ("-", b"ERR Unrecognized version format: 1")),
    (("fack", "1"), ("-", b"ERR Unrecognized REPLCONF option: fack")),
])
def test_replconf_from_a_client(r2, args, reply):
    assert r2.call("REPLCONF", *args) == reply


@pytest.mark.parametrize("args", [("ACK", "5"), ("GETACK", "*")])
def test_replconf_ack_and_getack_get_no_answer(r2, args):
    r2.send("REPLCONF", *args)
    assert read_within(r2, 0.2) == "nothing"  # meant for a replica link: no reply at all
    assert r2.call("PING") == ("+", b"PONG")


@pytest.mark.parametrize(("args", "error"), [
    ((), b"ERR FAILOVER requires connected replicas."),
    (("TO", "127.0.0.1", "7000"), b"ERR FAILOVER requires connected replicas."),
    (("FORCE",), b"ERR FAILOVER requires connected replicas."),
    (("TIMEOUT", "10", "FORCE"), b"ERR FAILOVER requires connected replicas."),
    (("ABORT",), b"ERR No failover in progress."),
    (("ABORT", "TIMEOUT", "5"), b"ERR syntax error"),
    (("ABORT", "ABORT"), b"ERR syntax error"),
    (("TO", "h", "1", "TO", "h", "2"), b"ERR syntax error"),
    (("TO", "h"), b"ERR syntax error"),
    (("TIMEOUT", "5", "TIMEOUT", "6"), b"ERR syntax error"),
    (("foo",), b"ERR syntax error"),
    (("TIMEOUT", "0"), b"ERR FAILOVER timeout must be greater than 0"),
    (("TIMEOUT", "-1"), b"ERR FAILOVER timeout must be greater than 0"),
    (("TIMEOUT", "x"), b"ERR value is not an integer or out of range"),
    (("TO", "h", "x"), b"ERR value is not an integer or out of range"),
])
def test_failover_without_replicas(r2, args, error):
    assert r2.call("FAILOVER", *args) == ("-", error)


@pytest.mark.parametrize(("args", "error"), [
    (("1", "0", "0"), b"ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled."),
    (("-1", "0", "0"), b"ERR value is out of range, value must between 0 and 1"),
    (("2", "0", "0"), b"ERR value is out of range, value must between 0 and 1"),
    (("a", "0", "0"), b"ERR value is not an integer or out of range"),
    (("0", "-1", "0"), b"ERR value is out of range, must be positive"),
    (("0", "0", "-1"), b"ERR timeout is negative"),
    (("0", "0", "x"), b"ERR timeout is not an integer or out of range"),
    (("0", "0"), b"ERR wrong number of arguments for 'waitaof' command"),
])
def test_waitaof_errors(r2, args, error):
    assert r2.call("WAITAOF", *args) == ("-", error)


def test_waitaof_as_a_lone_primary(r, r2):
    assert r.call("WAITAOF", "0", "0", "0") == ("*", [(":", 0), (":", 0)])
    started = time.monotonic()
    # no replica will acknowledge: it waits out its timeout, then answers what it has
    assert r.call("WAITAOF", "0", "1", "100") == ("*", [(":", 0), (":", 0)])
    assert time.monotonic() - started >= 0.09
    assert r2.call("MULTI") == OK
    assert r2.call("WAITAOF", "0", "1", "0") == ("+", b"QUEUED")
    assert r2.call("EXEC") == ("*", [("*", [(":", 0), (":", 0)])])  # no blocking in EXEC


def test_waitaof_with_no_timeout_waits_until_unblocked(target, r2):
    waiting = target.raw(2)
    waiting_id = waiting.call("CLIENT", "ID")[1]
    waiting.send("WAITAOF", "0", "1", "0")
    assert read_within(waiting, 0.2) == "nothing"
    assert r2.call("CLIENT", "UNBLOCK", waiting_id) == (":", 1)
    assert read_within(waiting, 5) == ("*", [(":", 0), (":", 0)])
    waiting.close()


def test_waitaof_with_appendonly(target, r2):
    assert r2.call("CONFIG", "SET", "appendonly", "yes") == OK
    try:
        r2.call("SET", "k", "v")
        deadline = time.monotonic() + 10
        while True:  # numlocal is accepted once the log is on
            reply = r2.call("WAITAOF", "1", "0", "0")
            if reply[0] == "*" or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert reply == ("*", [(":", 1), (":", 0)])
        assert r2.call("WAITAOF", "0", "0", "0") == ("*", [(":", 1), (":", 0)])
    finally:
        assert r2.call("CONFIG", "SET", "appendonly", "no") == OK


def test_client_import_source(r2):
    assert r2.call("CLIENT", "IMPORT-SOURCE", "OFF") == OK
    assert r2.call("CLIENT", "IMPORT-SOURCE", "ON") == ("-", b"ERR Server is not in import mode")
    assert r2.call("CLIENT", "IMPORT-SOURCE", "x") == ("-", b"ERR Server is not in import mode")
    assert r2.call("CONFIG", "SET", "import-mode", "yes") == OK
    try:
        assert r2.call("CLIENT", "IMPORT-SOURCE", "ON") == OK
        assert r2.call("CLIENT", "IMPORT-SOURCE", "x") == SYNTAX
        assert r2.call("CLIENT", "IMPORT-SOURCE", "OFF") == OK
    finally:
        assert r2.call("CONFIG", "SET", "import-mode", "no") == OK


# --- SYNC / PSYNC: the data set as an RDB file ---------------------------------------------


def read_rdb_bulk(client: RawClient) -> bytes:
    """`$len` then that many bytes, without the CRLF a bulk string ends with."""
    header = client._line()
    assert header.startswith(b"$")
    size = int(header[1:])
    while len(client.buf) < size:
        client._fill()
    data, client.buf = client.buf[:size], client.buf[size:]
    return data


def check_rdb_file(data: bytes) -> None:
    assert data.startswith(b"VALKEY080")
    assert data[9:21] == b"\xfa\x0avalkey-ver"  # the first aux field: the version
    assert data[-9:-8] == b"\xff"  # EOF, then the CRC64 of everything before it
    assert int.from_bytes(data[-8:], "little") == rdb.crc64(data[:-8])
    assert b"\xfe\x00\xfb\x01\x00\x00\x03foo\x03bar" in data  # db 0, 1 key, a string


def test_sync_sends_the_data_set_as_an_rdb_file(target):
    with target.raw(2) as client:
        client.call("SET", "foo", "bar")
        client.send("SYNC")
        check_rdb_file(read_rdb_bulk(client))


def test_psync_answers_a_full_resync(target):
    with target.raw(2) as client:
        client.call("SET", "foo", "bar")
        client.send("PSYNC", "?", "-1")
        kind, line = client.read()
        words = line.split()
        assert kind == "+" and words[0] == b"FULLRESYNC"
        assert len(words[1]) == 40 and int(words[2]) >= 0
        check_rdb_file(read_rdb_bulk(client))


def test_syncs_are_counted(target, r2):
    r2.call("CONFIG", "RESETSTAT")
    with target.raw(2) as client:
        client.send("PSYNC", "8de1d2c2a1b5a3f0e7e4b7a3a1c9d0e1f2a3b4c5", "100")
        assert client.read()[1].startswith(b"FULLRESYNC")
        read_rdb_bulk(client)
    stats = r2.call("INFO", "stats")[1].decode()
    assert "sync_full:1\r\n" in stats and "sync_partial_err:1\r\n" in stats


def test_rdb_only_sync_closes_after_the_file(target):
    with target.raw(2) as client:
        client.call("SET", "foo", "bar")
        assert client.call("REPLCONF", "rdb-only", "1") == OK
        client.send("SYNC")
        check_rdb_file(read_rdb_bulk(client))
        assert client.is_closed(5)


def test_sync_refused_with_replies_pending(target):
    with target.raw(2) as client:
        replies = client.pipeline(("PING",), ("SYNC",))
        assert replies == [("+", b"PONG"),
                           ("-", b"ERR SYNC and PSYNC are invalid with pending output")]
