"""MEMORY and LATENCY, as test suites call them at setup: reply shapes, errors, and a
MEMORY USAGE estimate of the same order as Valkey's."""

from __future__ import annotations

import re

import pytest

NULL = {2: ("$", None), 3: ("_", None)}
MAP = {2: "*", 3: "%"}
DOUBLE = {2: "$", 3: ","}


def err(text: str) -> tuple[str, bytes]:
    return ("-", text.encode())


def text(proto: int, body: str) -> tuple[str, bytes]:
    """A report: a bulk string in RESP2, a verbatim txt string in RESP3."""
    return ("$", body.encode()) if proto == 2 else ("=", b"txt:" + body.encode())


def pairs(reply: tuple[str, list]) -> list[tuple]:
    kind, items = reply
    return items if kind == "%" else list(zip(items[::2], items[1::2], strict=True))


def usage(r, key: str, *options: str) -> int:
    kind, value = r.call("MEMORY", "USAGE", key, *options)
    assert kind == ":"
    return value


# --- MEMORY -----------------------------------------------------------------------------


def test_memory_help(r):
    kind, lines = r.call("MEMORY", "HELP")
    assert kind == "*" and all(k == "+" for k, _ in lines)
    assert [line for _, line in lines][:2] == [
        b"MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:", b"DOCTOR"]
    assert (lines[-2], lines[-1]) == (("+", b"HELP"), ("+", b"    Print this help."))
    assert len(lines) == 14


# (what is stored, bounds around Valkey's figure: within a factor of two)
USAGE_CASES = [
    (("SET", "k", "v"), 12, 48),
    (("SET", "k", "x" * 1000), 520, 2080),
    (("SET", "k", "x" * 10000), 5024, 20096),
    (("RPUSH", "k", *[f"item{i}" for i in range(10)]), 64, 256),
    (("RPUSH", "k", *[f"item{i}" for i in range(1000)]), 4464, 17856),
    (("HSET", "k", *[x for i in range(100) for x in (f"field{i}", f"value{i}")]), 912, 3648),
    (("HSET", "k", *[x for i in range(1000) for x in (f"field{i}", f"value{i}")]), 20472, 81888),
    (("SADD", "k", *[f"member{i}" for i in range(200)]), 3836, 15344),
    (("ZADD", "k", *[x for i in range(200) for x in (i, f"member{i}")]), 7300, 29200),
    (("XADD", "k", "1-1", "field", "value"), 2164, 8656),
]


@pytest.mark.parametrize(("write", "low", "high"), USAGE_CASES, ids=lambda v: str(v)[:20])
def test_memory_usage_is_of_valkeys_order(r2, write, low, high):
    r2.call(*write)
    assert low <= usage(r2, "k") <= high


def test_memory_usage_grows_with_the_value(r):
    r.call("SET", "small", "x" * 10)
    r.call("SET", "big", "x" * 5000)
    assert usage(r, "small") < 100 < 5000 < usage(r, "big")
    r.call("RPUSH", "l", *["x" * 100] * 10)
    ten = usage(r, "l")
    r.call("RPUSH", "l", *["x" * 100] * 990)
    assert usage(r, "l") > 50 * ten
    assert usage(r, "l", "SAMPLES", "0") > 50 * ten  # every element measured


def test_memory_usage_missing_key_and_errors(r, proto):
    assert r.call("MEMORY", "USAGE", "nokey") == NULL[proto]
    assert r.call("MEMORY", "USAGE", "nokey", "SAMPLES", "3") == NULL[proto]
    r.call("SET", "k", "v")
    syntax = err("ERR syntax error")
    assert r.call("MEMORY", "USAGE", "k", "SAMPLES") == syntax
    assert r.call("MEMORY", "USAGE", "k", "SAMPLES", "-1") == syntax
    assert r.call("MEMORY", "USAGE", "k", "FOO", "1") == syntax
    assert r.call("MEMORY", "USAGE", "k", "SAMPLES", "x") == err(
        "ERR value is not an integer or out of range")
    assert r.call("MEMORY", "USAGE", "nokey", "SAMPLES", "x") == err(
        "ERR value is not an integer or out of range")  # options before the lookup
    assert r.call("MEMORY", "USAGE", "k", "samples", "0")[0] == ":"
    assert r.call("MEMORY", "USAGE") == err(
        "ERR wrong number of arguments for 'memory|usage' command")
    assert r.call("MEMORY") == err("ERR wrong number of arguments for 'memory' command")
    assert r.call("MEMORY", "FOO") == err("ERR unknown subcommand 'FOO'. Try MEMORY HELP.")
    assert r.call("MEMORY", "DOCTOR", "x") == err(
        "ERR wrong number of arguments for 'memory|doctor' command")


def test_memory_doctor_purge_malloc_stats(private_target, proto):
    # "empty" is under 5 MiB allocated: a server of its own, since a Valkey shared with
    # earlier tests keeps more than they leave in keys (scripts, logs, buffers it grew),
    # close enough to 5 MiB that the answer would depend on which tests ran before
    r = private_target().raw(proto)
    try:
        assert r.call("MEMORY", "DOCTOR") == text(proto, (
            "Hi Sam, this instance is empty or is using very little memory, my issues detector "
            "can't be used in these conditions. Please, leave for your mission on Earth and fill "
            "it with some data. The new Sam and I will be back to our programming as soon as I "
            "finished rebooting.\n"))
        assert r.call("MEMORY", "PURGE") == ("+", b"OK")
        assert r.call("MEMORY", "MALLOC-STATS") == ("$", b"Stats not supported for the current allocator")
    finally:
        r.close()


STATS_FIELDS = [  # MEMORY STATS in order, less the db.<n> entries; True: a double
    ("peak.allocated", False), ("total.allocated", False), ("startup.allocated", False),
    ("replication.backlog", False), ("replicas.repl.buffer", False), ("clients.slaves", False),
    ("clients.normal", False), ("cluster.links", False), ("cluster.slot_import", False),
    ("cluster.slot_export", False), ("aof.buffer", False), ("lua.caches", False),
    ("functions.caches", False), ("overhead.db.hashtable.lut", False),
    ("overhead.db.hashtable.rehashing", False), ("overhead.total", False),
    ("db.dict.rehashing.count", False), ("keys.count", False), ("keys.bytes-per-key", False),
    ("dataset.bytes", False), ("dataset.percentage", True), ("peak.percentage", True),
    ("allocator.allocated", False), ("allocator.active", False), ("allocator.resident", False),
    ("allocator.muzzy", False), ("allocator-fragmentation.ratio", True),
    ("allocator-fragmentation.bytes", False), ("allocator-rss.ratio", True),
    ("allocator-rss.bytes", False), ("rss-overhead.ratio", True), ("rss-overhead.bytes", False),
    ("fragmentation", True), ("fragmentation.bytes", False),
]


def test_memory_stats_shape(r, proto):
    r.call("MSET", "a", "1", "b", "2")
    r.call("SELECT", "2")
    r.call("SET", "c", "3")
    reply = r.call("MEMORY", "STATS")
    assert reply[0] == MAP[proto]
    fields = {key[1].decode(): value for key, value in pairs(reply)}
    names = [name for name in fields if not re.fullmatch(r"db\.\d+", name)]
    assert names == [name for name, _ in STATS_FIELDS]
    for name, is_double in STATS_FIELDS:
        assert fields[name][0] == (DOUBLE[proto] if is_double else ":"), name
    assert fields["keys.count"] == (":", 3)
    for db in ("db.0", "db.2"):
        kind, _ = fields[db]
        assert kind == MAP[proto]
        assert [k[1] for k, _ in pairs(fields[db])] == [
            b"overhead.hashtable.main", b"overhead.hashtable.expires"]
    total, startup = fields["total.allocated"][1], fields["startup.allocated"][1]
    assert fields["peak.allocated"][1] >= total > startup > 0


# --- LATENCY ----------------------------------------------------------------------------------


def test_latency_help(r):
    kind, lines = r.call("LATENCY", "HELP")
    assert kind == "*" and len(lines) == 17
    assert lines[0] == ("+", b"LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:")
    assert ("+", b"HISTOGRAM [COMMAND ...]") in lines


def test_latency_without_samples(r, proto):
    assert r.call("LATENCY", "LATEST") == ("*", [])
    assert r.call("LATENCY", "HISTORY", "command") == ("*", [])
    assert r.call("LATENCY", "RESET") == (":", 0)
    assert r.call("LATENCY", "RESET", "command", "fast-command") == (":", 0)
    assert r.call("LATENCY", "GRAPH", "command") == err(
        "ERR No samples available for event 'command'")
    assert r.call("LATENCY", "DOCTOR") == text(proto, (
        "I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Valkey "
        "instance. You may use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" in "
        "order to enable it.\n"))
    r.call("CONFIG", "SET", "latency-monitor-threshold", "100000")
    try:
        assert r.call("LATENCY", "DOCTOR") == text(proto, (
            "No latency spike was observed during the lifetime of this Valkey instance, not "
            "in the slightest bit.\n"))
    finally:
        r.call("CONFIG", "SET", "latency-monitor-threshold", "0")


def test_latency_errors(r):
    assert r.call("LATENCY") == err("ERR wrong number of arguments for 'latency' command")
    assert r.call("LATENCY", "FOO") == err("ERR unknown subcommand 'FOO'. Try LATENCY HELP.")
    assert r.call("LATENCY", "HISTORY") == err(
        "ERR wrong number of arguments for 'latency|history' command")
    assert r.call("LATENCY", "GRAPH") == err(
        "ERR wrong number of arguments for 'latency|graph' command")
    assert r.call("LATENCY", "LATEST", "x") == err(
        "ERR wrong number of arguments for 'latency|latest' command")


def test_latency_histogram_counts_calls(r, proto):
    r.call("CONFIG", "RESETSTAT")
    r.call("SET", "a", "b")
    r.call("SET", "a", "c")
    reply = r.call("LATENCY", "HISTOGRAM", "set", "get", "nosuchcommand")
    assert reply[0] == MAP[proto]
    (name, entry), = pairs(reply)  # GET was not called since the reset
    assert name == ("$", b"set") and entry[0] == MAP[proto]
    fields = dict(pairs(entry))
    assert fields[("$", b"calls")] == (":", 2)
    assert fields[("$", b"histogram_usec")][0] == MAP[proto]
    assert r.call("LATENCY", "HISTOGRAM", "nosuchcommand") == (MAP[proto], [])


def test_latency_histogram_counts_a_command_once_it_ran(r, proto):
    # CONFIG RESETSTAT counts itself (after its reset); the running LATENCY HISTOGRAM does not
    r.call("CONFIG", "RESETSTAT")
    (name, entry), = pairs(r.call("LATENCY", "HISTOGRAM"))
    assert name == ("$", b"config|resetstat")
    assert dict(pairs(entry))[("$", b"calls")] == (":", 1)
    r.call("CLIENT", "ID")
    named = [name for name, _ in pairs(r.call("LATENCY", "HISTOGRAM", "client", "latency"))]
    assert sorted(named) == [("$", b"client|id"), ("$", b"latency|histogram")]


def test_latency_events_are_recorded_and_reset(r, proto):
    r.call("CONFIG", "SET", "latency-monitor-threshold", "50")
    try:
        r.call("LATENCY", "RESET")
        assert r.call("DEBUG", "SLEEP", "0.06") == ("+", b"OK")
        kind, events = r.call("LATENCY", "LATEST")
        (event,) = events
        name, at, latest, worst, total, count = event[1]
        assert (kind, name, count) == ("*", ("$", b"command"), (":", 1))
        assert latest[1] >= 50 and latest == worst == total
        assert r.call("LATENCY", "HISTORY", "command") == ("*", [("*", [at, latest])])
        assert r.call("LATENCY", "HISTORY", "COMMAND") == ("*", [])  # event names keep case
        graph = r.call("LATENCY", "GRAPH", "command")[1].decode()
        assert re.match(rf"(txt:)?command - high {latest[1]} ms, low {latest[1]} ms "
                        rf"\(all time high {latest[1]} ms\)\n-{{80}}\n \n \n \n_\n \n\d\ns\n$", graph)
        doctor = r.call("LATENCY", "DOCTOR")[1].decode()
        assert f"1. command: 1 latency spikes (average {latest[1]}ms, mean deviation 0ms" in doctor
        assert "- Check your Slow Log to understand" in doctor
        assert r.call("LATENCY", "RESET", "nosuch", "COMMAND") == (":", 1)  # any case
        assert r.call("LATENCY", "LATEST") == ("*", [])
    finally:
        r.call("CONFIG", "SET", "latency-monitor-threshold", "0")
        r.call("LATENCY", "RESET")
