"""import-mode yes: expired keys stay (neither active nor lazy expiry deletes them, and
EXPIRE into the past keeps the key), hidden from ordinary clients; a client in CLIENT
IMPORT-SOURCE ON state (flag I in CLIENT LIST) still sees and uses them."""

from __future__ import annotations

import time

import pytest


def server_ms(r2) -> int:
    seconds, micros = r2.call("TIME")[1]
    return int(seconds[1]) * 1000 + int(micros[1]) // 1000


def wait_past(r2, ms: int) -> None:
    deadline = time.monotonic() + 10
    while server_ms(r2) <= ms:
        assert time.monotonic() < deadline
        time.sleep(0.001)


@pytest.fixture
def importing(r2):
    r2.call("CONFIG", "SET", "import-mode", "yes")
    yield r2
    r2.call("CLIENT", "IMPORT-SOURCE", "OFF")
    r2.call("CONFIG", "SET", "import-mode", "no")


def test_import_source_flag(importing):
    me = importing.call("CLIENT", "ID")[1]
    assert importing.call("CLIENT", "IMPORT-SOURCE", "ON") == ("+", b"OK")
    assert b" flags=I " in importing.call("CLIENT", "LIST", "ID", str(me))[1]
    assert importing.call("CLIENT", "IMPORT-SOURCE", "OFF") == ("+", b"OK")
    assert b" flags=N " in importing.call("CLIENT", "LIST", "ID", str(me))[1]


def test_expired_key_is_kept_and_seen_by_the_import_source_only(importing):
    r = importing
    r.call("SET", "foo1", "1", "PX", "1")
    wait_past(r, server_ms(r) + 2)
    assert r.call("GET", "foo1") == ("$", None)
    assert r.call("TTL", "foo1") == (":", -2)
    assert r.call("DBSIZE") == (":", 1)
    r.call("CLIENT", "IMPORT-SOURCE", "ON")
    assert r.call("TTL", "foo1") == (":", 0)
    assert r.call("GET", "foo1") == ("$", b"1")
    assert r.call("INCR", "foo1") == (":", 2)
    assert r.call("RANDOMKEY") == ("$", b"foo1")
    assert r.call("KEYS", "*") == ("*", [("$", b"foo1")])
    r.call("CLIENT", "IMPORT-SOURCE", "OFF")
    r.call("CONFIG", "SET", "import-mode", "no")
    assert r.call("GET", "foo1") == ("$", None)
    assert r.call("DBSIZE") == (":", 0)


def test_expire_into_the_past_keeps_the_key(importing):
    r = importing
    r.call("SET", "foo", "bar")
    assert r.call("EXPIREAT", "foo", "-1") == (":", 1)
    assert r.call("DBSIZE") == (":", 1)
    assert r.call("EXISTS", "foo") == (":", 0)


def test_no_active_expiry_while_importing(importing):
    r = importing
    r.call("SET", "foo1", "bar", "PX", "1")
    r.call("SET", "foo2", "bar", "PX", "1")
    wait_past(r, server_ms(r) + 250)  # two cron turns and more (hz 10)
    assert r.call("DBSIZE") == (":", 2)
    r.call("CONFIG", "SET", "import-mode", "no")
    deadline = time.monotonic() + 10
    while r.call("DBSIZE") != (":", 0):  # the active expiry takes them now
        assert time.monotonic() < deadline
        time.sleep(0.02)
