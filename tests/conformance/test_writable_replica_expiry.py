"""A writable replica (replica-read-only no) expires the keys its own clients gave a
deadline, by its active expiry (Valkey's replicaKeysWithExpire, INFO's
slave_expires_tracked_keys); the keys its primary sends wait for the primary's DEL."""

from __future__ import annotations

import time

import pytest

DEADLINE_S = 10.0


def info_field(client, section: str, name: str) -> str:
    info = client.call("INFO", section)[1].decode()
    fields = dict(line.split(":", 1) for line in info.split("\r\n") if ":" in line)
    return fields[name]


def wait_until(predicate) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not predicate():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.02)


@pytest.fixture
def pair(private_target):
    primary = private_target("--repl-diskless-sync-delay", "0")
    replica = private_target()
    p, r = primary.raw(2), replica.raw(2)
    r.call("REPLICAOF", primary.host, str(primary.port))
    wait_until(lambda: info_field(r, "replication", "master_link_status") == "up")
    r.call("CONFIG", "SET", "replica-read-only", "no")
    yield p, r
    r.call("REPLICAOF", "NO", "ONE")
    p.close()
    r.close()


@pytest.mark.parametrize("db", ["0", "9"])
def test_own_key_is_expired_by_active_expiry(pair, db):
    _, replica = pair
    replica.call("SELECT", db)
    before = int(info_field(replica, "stats", "expired_keys"))
    replica.call("SET", "foo", "bar", "PX", "1")
    wait_until(lambda: int(info_field(replica, "stats", "expired_keys")) == before + 1)
    assert replica.call("GET", "foo") == ("$", None)
    assert replica.call("DBSIZE") == (":", 0)
    assert info_field(replica, "stats", "slave_expires_tracked_keys") == "0"


def test_own_keys_with_a_deadline_are_tracked(pair):
    primary, replica = pair
    replica.call("SET", "mine", "v", "PX", "100000")
    replica.call("SET", "also", "v")
    replica.call("EXPIRE", "also", "100")
    assert info_field(replica, "stats", "slave_expires_tracked_keys") == "2"
    primary.call("SET", "theirs", "v", "PX", "100000")
    wait_until(lambda: replica.call("EXISTS", "theirs") == (":", 1))
    assert info_field(replica, "stats", "slave_expires_tracked_keys") == "2"
    replica.call("PERSIST", "mine")
    wait_until(lambda: info_field(replica, "stats", "slave_expires_tracked_keys") == "1")
