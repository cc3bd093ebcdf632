"""FAILOVER on a primary with replicas (Valkey's coordinated failover): the writers paused
while it waits for a replica to catch up, then the roles swapped by `PSYNC replid offset
FAILOVER`; its errors, ABORT and TIMEOUT; the replica's side of that PSYNC. A replica that
never acknowledges is a raw connection that asked PSYNC, so the wait lasts."""

from __future__ import annotations

import time

import pytest

from fakekey.testing.raw import RawClient, read_within

DEADLINE_S = 15.0
OK = ("+", b"OK")
SILENT_PORT = "7"  # the port the never-acknowledging replica announces


def info(client: RawClient, section: str) -> dict[str, str]:
    text = client.call("INFO", section)[1].decode()
    return dict(line.split(":", 1) for line in text.split("\r\n") if ":" in line)


def wait_until(predicate) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not predicate():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.02)


def read_rdb_bulk(client: RawClient) -> None:
    header = client._line()
    assert header.startswith(b"$")
    size = int(header[1:])
    while len(client.buf) < size:
        client._fill()
    client.buf = client.buf[size:]


@pytest.fixture
def pair(private_target):
    """A primary and its replica (their servers, then a client of each)."""
    flags = ("--repl-diskless-sync-delay", "0", "--enable-debug-command", "yes")
    primary, replica = private_target(*flags), private_target(*flags)
    p, r = primary.raw(2), replica.raw(2)
    r.call("REPLICAOF", "127.0.0.1", str(primary.port))
    wait_until(lambda: info(r, "replication")["master_link_status"] == "up")
    wait_until(lambda: info(p, "replication")["connected_slaves"] == "1")
    yield primary, replica, p, r
    p.close()
    r.close()


@pytest.fixture
def silent(private_target):
    """A primary whose one replica (a raw connection) never acknowledges: (its server, a
    client, the replica's connection)."""
    primary = private_target("--repl-diskless-sync-delay", "0")
    p, fake = primary.raw(2), primary.raw(2)
    assert fake.call("REPLCONF", "listening-port", SILENT_PORT) == OK
    fake.send("PSYNC", "?", "-1")
    assert fake.read()[1].startswith(b"FULLRESYNC")
    read_rdb_bulk(fake)
    wait_until(lambda: info(p, "replication")["connected_slaves"] == "1")
    yield primary, p, fake
    if info(p, "replication")["master_failover_state"] != "no-failover":
        p.call("FAILOVER", "ABORT")
    p.close()
    fake.close()


def test_failover_swaps_the_roles(pair):
    primary, replica, p, r = pair
    p.call("SET", "k", "v")
    wait_until(lambda: r.call("GET", "k") == ("$", b"v"))
    old_replid = info(p, "replication")["master_replid"]
    assert p.call("FAILOVER", "TO", "127.0.0.1", str(replica.port)) == OK
    wait_until(lambda: info(p, "replication")["master_failover_state"] == "no-failover")
    now_replica, now_primary = info(p, "replication"), info(r, "replication")
    assert now_replica["role"] == "slave" and now_replica["master_port"] == str(replica.port)
    assert now_primary["role"] == "master" and now_primary["master_replid2"] == old_replid
    assert info(r, "stats")["sync_partial_ok"] == "1"  # the old primary continued its stream
    assert info(p, "clients")["paused_reason"] == "none"
    r.call("SET", "k2", "v2")
    wait_until(lambda: p.call("GET", "k2") == ("$", b"v2"))
    assert p.call("SET", "k3", "v") == ("-", b"READONLY You can't write against a read only replica.")


def test_own_keys_stay_tracked_through_a_failover(pair):
    _, replica, p, r = pair
    r.call("CONFIG", "SET", "replica-read-only", "no")
    r.call("DEBUG", "SET-ACTIVE-EXPIRE", "0")
    for i in range(3):
        r.call("SET", f"mine{i}", "v", "PX", "200")
    assert info(r, "stats")["slave_expires_tracked_keys"] == "3"
    assert p.call("FAILOVER", "TO", "127.0.0.1", str(replica.port)) == OK
    wait_until(lambda: info(p, "replication")["master_failover_state"] == "no-failover")
    assert info(r, "replication")["role"] == "master"
    assert info(r, "stats")["slave_expires_tracked_keys"] == "3"
    r.call("DEBUG", "SET-ACTIVE-EXPIRE", "1")
    wait_until(lambda: info(r, "stats")["slave_expires_tracked_keys"] == "0")
    assert r.call("DBSIZE") == (":", 0)


@pytest.mark.parametrize(("args", "error"), [
    (("TO", "127.0.0.1", "1"), b"ERR FAILOVER target HOST and PORT is not a replica."),
    (("FORCE",), b"ERR FAILOVER with force option requires both a timeout and target HOST and IP."),
    (("TO", "127.0.0.1", SILENT_PORT, "FORCE"),
     b"ERR FAILOVER with force option requires both a timeout and target HOST and IP."),
    (("TIMEOUT", "100", "FORCE"),
     b"ERR FAILOVER with force option requires both a timeout and target HOST and IP."),
    (("ABORT",), b"ERR No failover in progress."),
])
def test_failover_errors_with_a_replica(silent, args, error):
    _, p, _ = silent
    assert p.call("FAILOVER", *args) == ("-", error)


def test_waiting_for_the_replica_pauses_writes_until_abort(silent):
    primary, p, _ = silent
    writer = primary.raw(2)
    try:
        assert p.call("FAILOVER", "TO", "127.0.0.1", SILENT_PORT) == OK
        assert info(p, "replication")["master_failover_state"] == "waiting-for-sync"
        clients = info(p, "clients")
        assert (clients["paused_reason"], clients["paused_actions"]) == ("failover_in_progress", "write")
        assert p.call("FAILOVER") == ("-", b"ERR FAILOVER already in progress.")
        assert p.call("REPLICAOF", "NO", "ONE") == ("-", b"ERR REPLICAOF not allowed while failing over.")
        assert p.call("CLIENT", "UNPAUSE") == OK  # not the failover's pause
        assert info(p, "clients")["paused_reason"] == "failover_in_progress"
        with primary.raw(2) as other:
            assert other.call("PSYNC", "?", "-1") == ("-", b"NOMASTERLINK Can't SYNC while failing over")
        writer.send("SET", "k", "v")
        wait_until(lambda: info(p, "clients")["blocked_clients"] == "1")  # held back
        assert p.call("GET", "k") == ("$", None)  # reads go on
        assert p.call("FAILOVER", "ABORT") == OK
        assert read_within(writer, 5) == OK
        assert info(p, "replication")["master_failover_state"] == "no-failover"
        assert info(p, "clients")["paused_reason"] == "none"
    finally:
        writer.close()


def test_failover_timeout_without_force_aborts(silent):
    _, p, _ = silent
    assert p.call("FAILOVER", "TIMEOUT", "50") == OK
    wait_until(lambda: info(p, "replication")["master_failover_state"] == "no-failover")
    assert info(p, "clients")["paused_reason"] == "none"
    assert info(p, "replication")["role"] == "master"


def test_psync_failover_on_the_replica_side(pair):
    primary, replica, p, r = pair
    with replica.raw(2) as other:
        assert other.call("PSYNC", "0" * 40, "1", "FAILOVER") == (
            "-", b"ERR PSYNC FAILOVER replid must match my replid.")
    assert info(r, "replication")["role"] == "slave"
    with primary.raw(2) as other:
        assert other.call("PSYNC", "0" * 40, "1", "FAILOVER") == (
            "-", b"ERR PSYNC FAILOVER can't be sent to a master.")
