"""CONFIG GET / SET / RESETSTAT / REWRITE / HELP, as Valkey answers them."""

from collections.abc import Iterator

import pytest

from fakekey.testing.raw import RawClient

CHANGED = ("maxmemory", "maxmemory-policy", "hz", "timeout", "hash-max-listpack-entries",
           "client-output-buffer-limit")


def pairs(reply):
    """CONFIG GET's reply as (name, value) pairs: a map in RESP3, a flat array in RESP2."""
    kind, items = reply
    if kind == "%":
        return [(k[1], v[1]) for k, v in items]
    assert kind == "*"
    return [(items[i][1], items[i + 1][1]) for i in range(0, len(items), 2)]


def get(r, *patterns):
    return dict(pairs(r.call("CONFIG", "GET", *patterns)))


@pytest.fixture(autouse=True)
def restore_settings(target) -> Iterator[None]:
    """Put back every setting these tests change, so the shared servers stay default."""
    with target.raw() as client:
        saved = get(client, *CHANGED)
    yield
    with target.raw() as client:
        for name, value in saved.items():
            assert client.call("CONFIG", "SET", name, value) == ("+", b"OK")


def set_failed(name: str, why: str) -> tuple[str, bytes]:
    return ("-", f"ERR CONFIG SET failed (possibly related to argument '{name}') - {why}".encode())


def test_get_one_setting_wire_type(r, proto):
    reply = r.call("CONFIG", "GET", "maxmemory")
    if proto == 3:
        assert reply == ("%", [(("$", b"maxmemory"), ("$", b"0"))])
    else:
        assert reply == ("*", [("$", b"maxmemory"), ("$", b"0")])


def test_get_glob_is_sorted_and_includes_matches(r):
    names = [name for name, _ in pairs(r.call("CONFIG", "GET", "maxmemory*"))]
    assert names == sorted(names)
    assert {b"maxmemory", b"maxmemory-policy"} <= set(names)


def test_get_glob_matches_aliases_too(r):
    found = get(r, "hash-max-*")
    assert found[b"hash-max-listpack-entries"] == found[b"hash-max-ziplist-entries"] == b"512"


def test_get_exact_name_answers_as_asked(r):
    assert pairs(r.call("CONFIG", "GET", "MAXMEMORY")) == [(b"MAXMEMORY", b"0")]
    assert pairs(r.call("CONFIG", "GET", "hash-max-ziplist-value")) == [(b"hash-max-ziplist-value", b"64")]


def test_get_several_patterns_once_each(r):
    assert pairs(r.call("CONFIG", "GET", "maxmemory", "maxmemory", "hz")) == [
        (b"hz", b"10"), (b"maxmemory", b"0")]
    names = [n for n, _ in pairs(r.call("CONFIG", "GET", "maxmemory*", "maxmemory"))]
    assert names.count(b"maxmemory") == 1


def test_get_unknown_is_empty(r, proto):
    assert r.call("CONFIG", "GET", "no-such-setting") == ("%" if proto == 3 else "*", [])


def test_get_values_clients_read(r):
    found = get(r, "databases", "appendonly", "save", "maxmemory-policy", "timeout")
    assert found == {b"databases": b"16", b"appendonly": b"no", b"save": b"",
                     b"maxmemory-policy": b"noeviction", b"timeout": b"0"}


def test_set_several_at_once(r):
    assert r.call("CONFIG", "SET", "maxmemory", "10mb", "maxmemory-policy", "allkeys-lru") == ("+", b"OK")
    assert get(r, "maxmemory", "maxmemory-policy") == {
        b"maxmemory": b"10485760", b"maxmemory-policy": b"allkeys-lru"}
    assert r.call("CONFIG", "SET", "maxmemory", "1k") == ("+", b"OK")
    assert get(r, "maxmemory") == {b"maxmemory": b"1000"}


def test_set_is_all_or_nothing(r):
    assert r.call("CONFIG", "SET", "maxmemory", "1000", "hz", "abc") == set_failed(
        "hz", "argument couldn't be parsed into an integer")
    assert get(r, "maxmemory") == {b"maxmemory": b"0"}


def test_set_alias_changes_the_setting(r):
    assert r.call("CONFIG", "SET", "hash-max-ziplist-entries", "100") == ("+", b"OK")
    assert get(r, "hash-max-listpack-entries") == {b"hash-max-listpack-entries": b"100"}


def test_set_hz_is_clamped(r):
    assert r.call("CONFIG", "SET", "hz", "0") == ("+", b"OK")
    assert get(r, "hz") == {b"hz": b"1"}
    assert r.call("CONFIG", "SET", "hz", "1000") == ("+", b"OK")
    assert get(r, "hz") == {b"hz": b"500"}


def test_set_output_buffer_limit_merges_classes(r):
    assert r.call("CONFIG", "SET", "client-output-buffer-limit", "normal 1mb 2mb 3") == ("+", b"OK")
    assert get(r, "client-output-buffer-limit") == {
        b"client-output-buffer-limit":
            b"normal 1048576 2097152 3 slave 268435456 67108864 60 pubsub 33554432 8388608 60"}


def test_notify_keyspace_events_shown_normalised(r):
    assert r.call("CONFIG", "SET", "notify-keyspace-events", "KEA") == ("+", b"OK")
    assert get(r, "notify-keyspace-events") == {b"notify-keyspace-events": b"AKE"}
    assert r.call("CONFIG", "SET", "notify-keyspace-events", "Kgnm") == ("+", b"OK")
    assert get(r, "notify-keyspace-events") == {b"notify-keyspace-events": b"gnKm"}
    assert r.call("CONFIG", "SET", "notify-keyspace-events", "Q") == set_failed(
        "notify-keyspace-events", "Invalid event class character. Use 'Ag$lshzxeKEtmdn'.")


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (("foo", "bar"), ("-", b"ERR Unknown option or number of arguments for CONFIG SET - 'foo'")),
        (("databases", "3"), set_failed("databases", "can't set immutable config")),
        (("dir", "/tmp"), set_failed("dir", "can't set protected config")),
        (("maxmemory", "1", "MAXMEMORY", "2"), set_failed("MAXMEMORY", "duplicate parameter")),
        (("hz", "abc", "databases", "1"), set_failed("databases", "can't set immutable config")),
        (("maxmemory", "-1"), set_failed("maxmemory", "argument must be a memory value")),
        (("maxmemory", "1.5gb"), set_failed("maxmemory", "argument must be a memory value")),
        (("timeout", "01"), set_failed("timeout", "argument couldn't be parsed into an integer")),
        (("timeout", "-1"), set_failed("timeout", "argument must be between 0 and 2147483647 inclusive")),
        (("maxclients", "0"), set_failed("maxclients", "argument must be between 1 and 4294967295 inclusive")),
        (("appendonly", "maybe"), set_failed("appendonly", "argument must be 'yes' or 'no'")),
        (("maxmemory-policy", "x"), set_failed(
            "maxmemory-policy", "argument(s) must be one of the following: volatile-lru, "
            "volatile-lfu, volatile-random, volatile-ttl, allkeys-lru, allkeys-lfu, "
            "allkeys-random, noeviction")),
        (("appendfsync", "x"), set_failed(
            "appendfsync", "argument(s) must be one of the following: everysec, always, no")),
        (("hz", "5", "hz"), ("-", b"ERR syntax error")),
        (("hz",), ("-", b"ERR wrong number of arguments for 'config|set' command")),
    ],
)
def test_set_errors(r2: RawClient, args, error):
    assert r2.call("CONFIG", "SET", *args) == error


def test_get_arity(r2):
    assert r2.call("CONFIG", "GET") == ("-", b"ERR wrong number of arguments for 'config|get' command")


def test_resetstat_rewrite_help_unknown(r2):
    assert r2.call("CONFIG", "RESETSTAT") == ("+", b"OK")
    assert r2.call("CONFIG", "REWRITE") == ("-", b"ERR The server is running without a config file")
    kind, lines = r2.call("CONFIG", "HELP")
    assert kind == "*" and all(k == "+" for k, _ in lines)
    assert lines[0] == ("+", b"CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:")
    assert ("+", b"RESETSTAT") in lines
    assert r2.call("CONFIG", "FOO") == ("-", b"ERR unknown subcommand 'FOO'. Try CONFIG HELP.")
