"""The basics every other test relies on."""

import pytest


def test_ping(r):
    assert r.call("PING") == ("+", b"PONG")
    assert r.call("PING", "hi") == ("$", b"hi")


def test_set_get(r):
    assert r.call("SET", "k", "v") == ("+", b"OK")
    assert r.call("GET", "k") == ("$", b"v")


def test_get_missing_is_null(r, proto):
    assert r.call("GET", "nope") == (("$", None) if proto == 2 else ("_", None))


@pytest.mark.fakekey_only
def test_fakekey_clock_get(r):
    kind, value = r.call("FAKEKEY.CLOCK", "GET")
    assert kind == ":" and value > 0
