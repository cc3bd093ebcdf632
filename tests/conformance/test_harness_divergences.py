"""What Valkey's own test suite found differing (docs/harness.md): WATCH on stale keys
(expired, not yet deleted) across FLUSHDB and SWAPDB, RESTORE ABSTTL in the past, and
INFO's event-loop figures that move as Valkey's do, MSETEX with a deadline past, MEMORY
STATS' entry for every database made (an empty one too)."""

from __future__ import annotations

import re
import time

import pytest

DEADLINE_S = 10.0


def server_ms(r2) -> int:
    seconds, micros = r2.call("TIME")[1]
    return int(seconds[1]) * 1000 + int(micros[1]) // 1000


def set_stale(r2, key: str, value: str = "v") -> None:
    """`key` set with a 1 ms TTL, then left until it is past it (active expiry is off,
    and nothing reads the key, so it stays stored)."""
    r2.call("SET", key, value, "PX", "1")
    due = server_ms(r2) + 2
    deadline = time.monotonic() + DEADLINE_S
    while server_ms(r2) <= due:
        assert time.monotonic() < deadline
        time.sleep(0.001)


@pytest.fixture
def stale(r2):
    r2.call("DEBUG", "SET-ACTIVE-EXPIRE", "0")
    yield r2
    r2.call("DEBUG", "SET-ACTIVE-EXPIRE", "1")


def exec_after_watch(r2, *change: tuple[str, ...]) -> object:
    for command in change:
        r2.call(*command)
    r2.call("MULTI")
    r2.call("PING")
    return r2.call("EXEC")


PASSED = ("*", [("+", b"PONG")])
ABORTED = ("*", None)


@pytest.mark.parametrize("flush", ["FLUSHDB", "FLUSHALL"])
def test_flush_while_watching_a_stale_key_is_no_change(stale, flush):
    set_stale(stale, "x")
    stale.call("WATCH", "x")
    assert exec_after_watch(stale, (flush,)) == PASSED


def test_flush_while_watching_a_live_key_aborts(stale):
    stale.call("SET", "x", "v")
    stale.call("WATCH", "x")
    assert exec_after_watch(stale, ("FLUSHDB",)) == ABORTED


def test_swapdb_stale_key_replaced_by_nothing(stale):
    stale.call("SELECT", "1")
    set_stale(stale, "x")
    stale.call("WATCH", "x")
    assert exec_after_watch(stale, ("SWAPDB", "0", "1")) == PASSED


def test_swapdb_missing_key_replaced_by_a_stale_one(stale):
    set_stale(stale, "x")
    stale.call("SELECT", "1")
    stale.call("WATCH", "x")
    assert exec_after_watch(stale, ("SWAPDB", "0", "1")) == PASSED


def test_swapdb_stale_key_replaced_by_another_stale_one(stale):
    set_stale(stale, "x")
    stale.call("SELECT", "1")
    set_stale(stale, "x", "other")
    stale.call("WATCH", "x")
    assert exec_after_watch(stale, ("SWAPDB", "0", "1")) == PASSED


def test_swapdb_stale_key_replaced_by_a_live_one_aborts(stale):
    stale.call("SET", "x", "live")
    stale.call("SELECT", "1")
    set_stale(stale, "x")
    stale.call("WATCH", "x")
    assert exec_after_watch(stale, ("SWAPDB", "0", "1")) == ABORTED


def test_restore_absttl_in_the_past_stores_nothing(stale):
    stale.call("SET", "foo", "bar")
    payload = stale.call("DUMP", "foo")[1]
    past = server_ms(stale) - 3000
    assert stale.call("RESTORE", "foo", str(past), payload, "ABSTTL", "REPLACE") == ("+", b"OK")
    assert stale.call("DEBUG", "OBJECT", "foo") == ("-", b"ERR no such key")  # not even stored
    assert stale.call("DBSIZE") == (":", 0)


def test_msetex_with_a_past_deadline_stores_the_keys(stale):
    """Valkey 9.1.2 (unlike SET) stores them: DBSIZE counts them until they are met."""
    stale.call("CONFIG", "RESETSTAT")
    assert stale.call("MSETEX", "2", "a", "1", "b", "2", "PXAT", "1000") == (":", 1)
    assert stale.call("MSETEX", "1", "c", "3", "EXAT", "1") == (":", 1)
    assert stale.call("DBSIZE") == (":", 3)
    assert stats(stale)["expired_keys"] == "0"
    assert stale.call("GET", "a") == ("$", None)
    assert stale.call("MSETEX", "1", "b", "x", "XX", "EX", "100") == (":", 0)
    assert stale.call("DBSIZE") == (":", 1)
    assert stats(stale)["expired_keys"] == "2"


def stats(r2) -> dict[str, str]:
    text = r2.call("INFO", "stats")[1].decode()
    return dict(line.split(":", 1) for line in text.splitlines() if ":" in line)


def test_eventloop_counters_move(r2):
    first = stats(r2)
    assert int(first["eventloop_cycles"]) > 0
    assert int(first["eventloop_duration_sum"]) > 0
    assert int(first["eventloop_duration_cmd_sum"]) > 0
    deadline = time.monotonic() + DEADLINE_S
    while True:  # a cron tick and the first INFO's own time are counted by the next
        second = stats(r2)
        if int(second["eventloop_cycles"]) > int(first["eventloop_cycles"]) + 1:
            break
        assert time.monotonic() < deadline
        time.sleep(0.01)
    for name in ("eventloop_duration_sum", "eventloop_duration_cmd_sum"):
        assert int(second[name]) > int(first[name]), name


def test_instantaneous_eventloop_figures_fill_in(r2):
    r2.call("CONFIG", "RESETSTAT")
    deadline = time.monotonic() + DEADLINE_S
    while int(stats(r2)["instantaneous_eventloop_cycles_per_sec"]) == 0:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    figures = stats(r2)
    assert int(figures["instantaneous_eventloop_duration_usec"]) >= 0
    assert re.fullmatch(r"\d+\.\d\d", figures["instantaneous_input_kbps"])
    assert re.fullmatch(r"\d+", figures["instantaneous_ops_per_sec"])


def test_info_debug_only_when_named(r2):
    text = r2.call("INFO", "debug")[1].decode()
    fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
    assert text.startswith("# Debug\r\n")
    assert list(fields) == ["eventloop_duration_aof_sum", "eventloop_duration_cron_sum", "eventloop_duration_max",
                            "eventloop_cmd_per_cycle_max", "io_threaded_reads_pending",
                            "io_threaded_writes_pending"]
    for section in ("all", "everything"):
        assert b"eventloop_duration_aof_sum" not in r2.call("INFO", section)[1]


@pytest.mark.parametrize("hello", ["2", "3"])
def test_hello_names_the_availability_zone_when_set(r2, hello):
    r2.call("CONFIG", "SET", "availability-zone", "myzone")
    try:
        reply = r2.call("HELLO", hello)[1]
        pairs = reply if isinstance(reply[0], tuple) and len(reply[0]) == 2 and hello == "3" else None
        flat = [item for pair in pairs for item in pair] if pairs else reply
        assert flat[-2:] == [("$", b"availability_zone"), ("$", b"myzone")]
    finally:
        r2.call("CONFIG", "SET", "availability-zone", "")
    reply = r2.call("HELLO", "2")[1]
    assert ("$", b"availability_zone") not in reply


def database_entries(client) -> dict[bytes, object]:
    """MEMORY STATS' db.<n> entries (RESP2: a flat list of names and values)."""
    flat = client.call("MEMORY", "STATS")[1]
    return {name[1]: value for name, value in zip(flat[0::2], flat[1::2], strict=True)
            if re.fullmatch(rb"db\.\d+", name[1])}


def table_figures(entry) -> dict[bytes, int]:
    flat = entry[1]
    return {name[1]: value[1] for name, value in zip(flat[0::2], flat[1::2], strict=True)}


def test_memory_stats_lists_every_database_made(private_target):
    with private_target().raw(2) as client:
        empty = {b"overhead.hashtable.main": 112, b"overhead.hashtable.expires": 112}
        assert list(database_entries(client)) == [b"db.0"]
        assert table_figures(database_entries(client)[b"db.0"]) == empty
        client.call("SELECT", "9")
        client.call("GET", "x")
        assert list(database_entries(client)) == [b"db.0", b"db.9"]
        assert table_figures(database_entries(client)[b"db.9"]) == empty
        for i in range(128):
            client.call("SET", f"{i}", "a")
        for i in range(128):
            client.call("DEL", f"{i}")
        assert table_figures(database_entries(client)[b"db.9"])[b"overhead.hashtable.main"] < 400

