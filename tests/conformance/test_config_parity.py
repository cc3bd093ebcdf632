"""Configuration parity with Valkey 9.1.2: every setting `CONFIG GET *` lists exists in
fakekey with Valkey's value, and CONFIG SET parses, validates, refuses and reports as
Valkey does (ranges, memory and percent forms, enums, the settings with their own
syntax, immutable and protected ones, aliases), all or nothing."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from fakekey.config.settings import SETTINGS
from fakekey.testing.raw import RawClient
from fakekey.testing.targets import Target, free_port

# fakekey's own switches, which Valkey has not
FAKEKEY_OWN = {"enable-fakekey-commands", "enable-emq-module", "enable-stack-modules"}
# Valkey settings fakekey does not list, each with its reason (none today)
MISSING_IN_FAKEKEY: dict[str, str] = {}
# settings whose value differs between the two targets, and why
DIFFERENT_VALUES = {
    "port": "each target listens on its own free port",
    "dir": "each target runs in its own temporary directory",
}
HIDDEN = ("key-load-delay", "rdb-key-save-delay", "use-exit-on-panic", "watchdog-period",
          "cluster-ping-interval", "loading-process-events-interval-bytes",
          "aof-disable-auto-gc", "enable-debug-assert", "debug-context")


def pairs(reply) -> dict[bytes, bytes]:
    """CONFIG GET's reply: a map in RESP3, a flat array in RESP2."""
    kind, items = reply
    if kind == "%":
        return {k[1]: v[1] for k, v in items}
    assert kind == "*"
    return {items[i][1]: items[i + 1][1] for i in range(0, len(items), 2)}


def config_get(client: RawClient, *patterns: str) -> dict[bytes, bytes]:
    return pairs(client.call("CONFIG", "GET", *patterns))


def set_failed(name: str, why: str) -> tuple[str, bytes]:
    return ("-", f"ERR CONFIG SET failed (possibly related to argument '{name}') - {why}".encode())


@pytest.fixture(scope="module")
def both(pytestconfig: pytest.Config) -> tuple[Target, Target]:
    """fakekey and valkey, the instances the conformance fixture shares."""
    conftest = pytestconfig.pluginmanager.get_plugin(str(Path(__file__).with_name("conftest.py")))
    assert conftest is not None, "tests/conformance/conftest.py is not loaded"
    names = conftest._target_names()
    if names != ["fakekey", "valkey"]:
        pytest.skip("compares the fakekey and valkey targets side by side")
    return conftest._started_target("fakekey"), conftest._started_target("valkey")


@pytest.fixture(autouse=True)
def restore_settings(target: Target) -> Iterator[None]:
    """Put back every setting a test changed, so the shared servers stay as started."""
    with target.raw() as client:
        saved = config_get(client, "*")
    yield
    with target.raw() as client:
        for name, value in config_get(client, "*").items():
            if saved.get(name, value) != value:
                assert client.call("CONFIG", "SET", name, saved[name]) == ("+", b"OK"), name


# --- the list and the values -----------------------------------------------------------------


def test_config_get_star_lists_valkeys_names(both):
    fake, real = ({name.decode() for name in config_get(t.raw(), "*")} for t in both)
    assert real - fake == set(MISSING_IN_FAKEKEY)
    assert fake - real == FAKEKEY_OWN == {s.name for s in SETTINGS if s.own}


def test_config_get_star_shows_valkeys_values(both):
    fake, real = (config_get(t.raw(), "*") for t in both)
    differing = {name.decode() for name in real if fake.get(name) != real[name]}
    assert differing == set(DIFFERENT_VALUES)


@pytest.mark.parametrize("name", HIDDEN)
def test_hidden_settings_answer_an_exact_name_only(r2, name):
    assert list(config_get(r2, name)) == [name.encode()]
    assert name.encode() not in config_get(r2, "*")


def test_aliases_answer_under_their_own_name(r2):
    assert config_get(r2, "min-slave*-max-lag", "slaveof", "lua-time-limit") == {
        b"min-slaves-max-lag": b"10", b"slaveof": b"", b"lua-time-limit": b"5000"}
    assert r2.call("CONFIG", "SET", "min-slaves-to-write", "2") == ("+", b"OK")
    assert config_get(r2, "min-replicas-to-write") == {b"min-replicas-to-write": b"2"}


# --- accepted values and how they are shown ----------------------------------------------------


@pytest.mark.parametrize(
    ("name", "value", "shown"),
    [
        ("list-compress-depth", "2", b"2"),
        ("repl-backlog-size", "1mb", b"1048576"),
        ("repl-backlog-size", "5K", b"16384"),
        ("maxmemory", "", b"0"),
        ("maxmemory", "18446744073709551615", b"18446744073709551615"),
        ("maxmemory-clients", "50%", b"50%"),
        ("maxmemory-clients", "0%", b"0"),
        ("maxmemory-clients", "1gb", b"1073741824"),
        ("slot-migration-max-failover-repl-bytes", "-1", b"-1"),
        ("key-load-delay", "-5", b"-5"),
        ("shutdown-on-sigterm", "NOW save", b"save now"),
        ("tls-auth-clients-user", "cn", b"CN"),
        ("loglevel", "WARNING", b"warning"),
        ("latency-tracking-info-percentiles", "50 99.99 0.5 100", b"50 99.99 0.5 100"),
        ("latency-tracking-info-percentiles", "", b""),
        ("oom-score-adj-values", "0 100 -20", b"0 100 -20"),
        ("save", "3600 1 300 100", b"3600 1 300 100"),
        ("client-output-buffer-limit", "replica 1mb 2mb 3",
         b"normal 0 0 0 slave 1048576 2097152 3 pubsub 33554432 8388608 60"),
        ("proc-title-template", "x {{ }", b"x {{ }"),
        ("protected-mode", "no", b"no"),
        ("io-threads", "1", b"1"),
    ],
)
def test_set_accepts_and_shows(r2, name, value, shown):
    assert r2.call("CONFIG", "SET", name, value) == ("+", b"OK")
    assert config_get(r2, name) == {name.encode(): shown}


# --- refused values ------------------------------------------------------------------------------

BETWEEN = "argument must be between {} and {} inclusive"
ENUM = "argument(s) must be one of the following: {}"


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (("hz", "-5"), set_failed("hz", BETWEEN.format(0, 2147483647))),
        (("list-compress-depth", "-1"), set_failed("list-compress-depth", BETWEEN.format(0, 2147483647))),
        (("repl-backlog-size", "0"), set_failed("repl-backlog-size", BETWEEN.format(1, 2**63 - 1))),
        (("proto-max-bulk-len", "9223372036854775808"),
         set_failed("proto-max-bulk-len", BETWEEN.format(1048576, 2**63 - 1))),
        (("io-threads", "0"), set_failed("io-threads", BETWEEN.format(1, 256))),
        (("maxclients", "-1"), set_failed("maxclients", BETWEEN.format(1, 4294967295))),
        (("min-replicas-to-write", "x"),
         set_failed("min-replicas-to-write", "argument couldn't be parsed into an integer")),
        (("timeout", "-0"), set_failed("timeout", "argument couldn't be parsed into an integer")),
        (("maxmemory", "18446744073709551616"), set_failed("maxmemory", "argument must be a memory value")),
        (("maxmemory", "+5"), set_failed("maxmemory", "argument must be a memory value")),
        (("maxmemory-clients", "101%"),
         set_failed("maxmemory-clients", "percentage argument must be less or equal to 100")),
        (("maxmemory-clients", "-5%"),
         set_failed("maxmemory-clients", "argument must be a memory or percent value")),
        (("slot-migration-max-failover-repl-bytes", "-2"),
         set_failed("slot-migration-max-failover-repl-bytes", BETWEEN.format(-1, 2**63 - 1))),
        (("Hash-Max-Ziplist-Entries", "-1"),
         set_failed("hash-max-ziplist-entries", BETWEEN.format(0, 2**63 - 1))),
        (("activedefrag", "1"), set_failed("activedefrag", "argument must be 'yes' or 'no'")),
        (("log-format", "x"), set_failed("log-format", ENUM.format("legacy, logfmt, json"))),
        (("tls-auth-clients-user", "x"), set_failed("tls-auth-clients-user", ENUM.format("CN, URI, off"))),
        (("repl-diskless-load", "x"), set_failed(
            "repl-diskless-load", ENUM.format("disabled, on-empty-db, swapdb, flush-before-load"))),
        (("shutdown-on-sigterm", "save nosave"),
         set_failed("shutdown-on-sigterm", "shutdown options SAVE and NOSAVE can't be used simultaneously")),
        (("shutdown-on-sigterm", "save  now"), set_failed(
            "shutdown-on-sigterm", ENUM.format("default, save, nosave, now, force, safe, failover"))),
        (("oom-score-adj-values", "0 200"), set_failed("oom-score-adj-values", "wrong number of arguments")),
        (("oom-score-adj-values", "0 200 2001"), set_failed(
            "oom-score-adj-values", "Invalid oom-score-adj-values, elements must be between -2000 and 2000.")),
        (("latency-tracking-info-percentiles", "50 101"), set_failed(
            "latency-tracking-info-percentiles",
            "latency-tracking-info-percentiles parameters should sit between [0.0,100.0]")),
        (("latency-tracking-info-percentiles", "x"), set_failed(
            "latency-tracking-info-percentiles", "Invalid latency-tracking-info-percentiles parameters")),
        (("save", "0 1"), set_failed("save", "Invalid save parameters")),
        (("save", "3600  1"), set_failed("save", "Invalid save parameters")),
        (("client-output-buffer-limit", "master 1 1 1"), set_failed(
            "client-output-buffer-limit", "Invalid client class specified in buffer limit configuration.")),
        (("client-output-buffer-limit", "normal 1 1 -1"), set_failed(
            "client-output-buffer-limit",
            "Error in hard, soft or soft_seconds setting in buffer limit configuration.")),
        (("cluster-announce-hostname", "a_b"), set_failed(
            "cluster-announce-hostname", "Hostnames may only contain alphanumeric characters, hyphens or dots")),
        (("cluster-announce-human-nodename", "a b"), set_failed(
            "cluster-announce-human-nodename", "Announced human node name contained invalid character")),
        (("cluster-announce-client-ipv4", "::1"), set_failed("cluster-announce-client-ipv4", "Invalid IPv4 address")),
        (("proc-title-template", "{title}"), set_failed(
            "proc-title-template", "template format is invalid or contains unknown variables")),
        (("proc-title-template", "{nope}"), set_failed(
            "proc-title-template", "template format is invalid or contains unknown variables")),
        (("locale-collate", "xx_NOPE"), set_failed("locale-collate", "Invalid locale name")),
        (("rdma-bind", ""), set_failed("rdma-bind", "No RDMA building support.")),
        (("bind", "10.99.99.99"), set_failed("bind", "Failed to bind to specified addresses.")),
        (("slaveof", "no one"), set_failed("slaveof", "can't set immutable config")),
        (("Daemonize", "no"), set_failed("Daemonize", "can't set immutable config")),
        (("cluster-databases", "2"), set_failed("cluster-databases", "can't set immutable config")),
        (("unixsocketperm", "700"), set_failed("unixsocketperm", "can't set immutable config")),
        (("dbfilename", "x.rdb"), set_failed("dbfilename", "can't set protected config")),
        (("hz", "5", "HZ", "6"), set_failed("HZ", "duplicate parameter")),
        (("daemonize", "no", "nope", "1"), set_failed("daemonize", "can't set immutable config")),
        (("hz", "x", "nope", "1"), ("-", b"ERR Unknown option or number of arguments for CONFIG SET - 'nope'")),
    ],
)
def test_set_refuses_as_valkey(r2, args, error):
    assert r2.call("CONFIG", "SET", *args) == error


def test_set_several_is_all_or_nothing(r2):
    assert r2.call("CONFIG", "SET", "list-compress-depth", "3", "repl-backlog-size", "0") == set_failed(
        "repl-backlog-size", BETWEEN.format(1, 2**63 - 1))
    assert r2.call("CONFIG", "SET", "hz", "20", "bind", "10.99.99.99") == set_failed(
        "bind", "Failed to bind to specified addresses.")
    assert config_get(r2, "list-compress-depth", "hz") == {b"list-compress-depth": b"0", b"hz": b"10"}


# --- port and bind at run time ---------------------------------------------------------------------


def test_set_port_rebinds_the_listener(target, r2):
    """The new port takes connections; open ones stay; the old one is put back."""
    old = target.port
    new = free_port()
    assert r2.call("CONFIG", "SET", "port", str(new)) == ("+", b"OK")
    try:
        with RawClient(target.host, new) as moved:
            assert moved.call("CONFIG", "GET", "port") == ("*", [("$", b"port"), ("$", str(new).encode())])
        assert r2.call("PING") == ("+", b"PONG")
        with pytest.raises(OSError):
            RawClient(target.host, old, timeout=1).call("PING")
    finally:
        assert r2.call("CONFIG", "SET", "port", str(old)) == ("+", b"OK")
    with RawClient(target.host, old) as back:
        assert back.call("PING") == ("+", b"PONG")


def test_set_port_that_is_taken_is_refused(r2, target):
    with RawClient(target.host, target.port) as other:
        taken = free_port()
        with socket.socket() as blocker:
            blocker.bind(("127.0.0.1", taken))
            blocker.listen()
            assert other.call("CONFIG", "SET", "port", str(taken)) == set_failed(
                "port", "Unable to listen on this port. Check server logs.")
    assert config_get(r2, "port") == {b"port": str(target.port).encode()}


def test_set_bind_rebinds(r2, target):
    assert r2.call("CONFIG", "SET", "bind", "127.0.0.1 -::1") == ("+", b"OK")
    assert config_get(r2, "bind") == {b"bind": b"127.0.0.1 -::1"}
    with RawClient(target.host, target.port) as again:
        assert again.call("PING") == ("+", b"PONG")
