"""EMQ.TIMER (spec emq.md 7.4): the queue's timer in the server, and the module's promise:
with the timer armed and no client sending any sweep, a delayed job is claimed by a
parked EMQ.BCLAIM at its due time, and an expired lease is recovered and claimed again,
each within one firing. fakekey only (the verbs are the module's), RESP2 and RESP3."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from fakekey.net.server import Server
from fakekey.testing.raw import RawClient

NOW = 1_700_000_000_000  # the conftest freezes the clock here
Q = "emq:{orders}:"


def k(suffix: str) -> str:
    return Q + suffix


def arm(r: RawClient, batch: int = 10, limit: int = 10, max_stalls: int = 1) -> None:
    assert r.call("EMQ.TIMER", 1, k("meta"), "ON", batch, limit, max_stalls) == ("+", b"OK")


def enqueue(r: RawClient, job: str, delay: int = 0) -> None:
    assert r.call("EMQ.ENQUEUE", 3, k(job), k("pending"), k("schedule"), "p", delay, 0) == (":", 1)


def info_text(r: RawClient, *sections: str) -> str:
    return r.call("INFO", *sections)[1].decode().removeprefix("txt:")  # RESP3: verbatim


def emq_info(r: RawClient) -> dict[str, int]:
    text = info_text(r, "emq")
    assert text.startswith("# emq\r\n")
    return {line.split(":")[0]: int(line.split(":")[1]) for line in text.splitlines()[1:] if ":" in line}


def bclaim(conn: RawClient, timeout: int = 0) -> None:
    conn.send("EMQ.BCLAIM", 2, k("pending"), k("active"), 1000, timeout)


def wait_blocked(r: RawClient, count: int) -> None:
    deadline = time.time() + 2
    while f"blocked_clients:{count}\r" not in info_text(r, "clients"):
        assert time.time() < deadline
        time.sleep(0.005)


@pytest.fixture
def worker(server: Server, r: RawClient):
    conn = RawClient(server.host, server.port)
    yield conn
    conn.close()


def test_timer_settings_live_in_meta(r):
    arm(r, 5, 7, 2)
    fields = r.call("HMGET", k("meta"), "timer_batch", "timer_limit", "timer_max_stalls")
    assert fields == ("*", [("$", b"5"), ("$", b"7"), ("$", b"2")])
    assert emq_info(r)["emq_timers_armed"] == 1
    assert r.call("EMQ.TIMER", 1, k("meta"), "OFF") == ("+", b"OK")
    assert r.call("EXISTS", k("meta")) == (":", 0)
    assert emq_info(r)["emq_timers_armed"] == 0


def test_timer_argument_checks(r):
    meta = k("meta")
    assert r.call("EMQ.TIMER", 1, meta, "MAYBE") == ("-", b"EMQARG switch must be ON or OFF")
    assert r.call("EMQ.TIMER", 1, meta, "ON", 1, 1) == ("-", b"ERR wrong number of arguments for 'emq.timer' command")
    assert r.call("EMQ.TIMER", 1, meta, "OFF", 1) == ("-", b"ERR wrong number of arguments for 'emq.timer' command")
    assert r.call("EMQ.TIMER", 1, meta, "ON", 0, 1, 1) == ("-", b"EMQARG batch must be a positive integer")
    assert r.call("EMQ.TIMER", 1, meta, "ON", 1, 0, 1) == ("-", b"EMQARG limit must be a positive integer")
    assert r.call("EMQ.TIMER", 1, meta, "ON", 1, 1, -1) == ("-", b"EMQARG max_stalls must be a non-negative integer")
    assert r.call("EMQ.TIMER", 1, meta) == ("-", b"ERR wrong number of arguments for 'emq.timer' command")
    assert r.call("EXISTS", meta) == (":", 0)


def test_a_delayed_job_reaches_a_parked_claimer_at_its_due_time(r, worker):
    before = emq_info(r)  # the counters are the server's, kept across tests
    arm(r)
    bclaim(worker)
    wait_blocked(r, 1)
    enqueue(r, "JOB1", delay=500)
    r.call("FAKEKEY.CLOCK", "ADVANCE", 499)
    assert r.call("ZCARD", k("schedule")) == (":", 1)
    r.call("FAKEKEY.CLOCK", "ADVANCE", 1)
    assert worker.read() == ("*", [("$", b"JOB1"), ("$", b"p"), (":", 1), (":", 1)])
    # the firing's time is the due time: the lease runs from it
    assert r.call("ZSCORE", k("active"), "JOB1")[1] == str(NOW + 500 + 1000).encode()
    assert emq_info(r)["emq_timer_jobs_promoted"] == before["emq_timer_jobs_promoted"] + 1


def test_an_expired_lease_is_recovered_and_claimed_again(r, worker):
    before = emq_info(r)
    arm(r, max_stalls=5)
    enqueue(r, "JOB1")
    assert r.call("EMQ.CLAIM", 2, k("pending"), k("active"), 1000)[0] == "*"
    bclaim(worker)
    wait_blocked(r, 1)
    r.call("FAKEKEY.CLOCK", "ADVANCE", 1000)  # the lease's deadline: one firing recovers it
    assert worker.read() == ("*", [("$", b"JOB1"), ("$", b"p"), (":", 2), (":", 2)])
    assert r.call("HGET", k("JOB1"), "stalls") == ("$", b"1")
    assert emq_info(r)["emq_timer_leases_recovered"] == before["emq_timer_leases_recovered"] + 1


def test_firings_come_in_due_time_order_within_one_advance(r):
    before = emq_info(r)
    arm(r, max_stalls=1)
    enqueue(r, "JOB1", delay=100)
    r.call("FAKEKEY.CLOCK", "ADVANCE", 100)
    assert r.call("EMQ.CLAIM", 2, k("pending"), k("active"), 1000)[0] == "*"
    # one advance: the lease expires at +1100 (recovered, stall 1), nobody claims, and
    # nothing further is due
    r.call("FAKEKEY.CLOCK", "ADVANCE", 10_000)
    assert r.call("ZCARD", k("pending")) == (":", 1)
    info = emq_info(r)
    assert info["emq_timer_firings"] - before["emq_timer_firings"] == 2
    assert info["emq_timer_leases_recovered"] - before["emq_timer_leases_recovered"] == 1


def test_a_firing_is_bounded_by_batch_and_fires_again(r):
    before = emq_info(r)
    arm(r, batch=2)
    for i in range(5):
        enqueue(r, f"JOB{i}", delay=10)
    r.call("FAKEKEY.CLOCK", "ADVANCE", 10)
    assert r.call("ZCARD", k("pending")) == (":", 5)
    assert emq_info(r)["emq_timer_firings"] - before["emq_timer_firings"] == 3


def test_a_firing_is_logged_as_a_write(r, worker):
    arm(r)
    worker.call("WATCH", k("pending"))
    enqueue(r, "JOB1", delay=10)
    worker.call("MULTI")
    worker.call("PING")
    r.call("FAKEKEY.CLOCK", "ADVANCE", 10)
    # the timer's promotion wrote pending: the watcher's EXEC aborts
    assert worker.call("EXEC")[1] is None
    stats = info_text(r, "commandstats")
    assert "cmdstat_emq.gpromote:" in stats


def test_a_meta_deleted_drops_the_timer(r):
    arm(r)
    enqueue(r, "JOB1", delay=10)
    r.call("DEL", k("meta"))
    r.call("FAKEKEY.CLOCK", "ADVANCE", 10)
    assert r.call("ZCARD", k("schedule")) == (":", 1)
    assert emq_info(r)["emq_timers_armed"] == 0


def test_the_real_clock_fires_on_time(r, worker):
    r.call("FAKEKEY.CLOCK", "REAL")
    arm(r)
    bclaim(worker)
    wait_blocked(r, 1)
    started = time.monotonic()
    enqueue(r, "JOB1", delay=100)
    reply = worker.read()
    assert reply[1][0] == ("$", b"JOB1")
    assert 0.09 <= time.monotonic() - started < 1.0


def test_info_emq_is_shown_by_name_and_with_everything(r):
    assert "# emq\r\n" in info_text(r, "emq")
    assert "# emq\r\n" in info_text(r, "everything")
    assert "# emq\r\n" not in info_text(r)


def test_a_firing_announces_its_writes(r, worker):
    """Keyspace events of a firing are the verbs' own (GPROMOTE's zrem, hset, zadd)."""
    r.call("CONFIG", "SET", "notify-keyspace-events", "KEA")
    try:
        worker.call("SUBSCRIBE", "__keyspace@0__:" + k("pending"))
        arm(r)
        enqueue(r, "JOB1", delay=10)
        r.call("FAKEKEY.CLOCK", "ADVANCE", 10)
        message = worker.read()
        assert message[1][-1] == ("$", b"zadd")
    finally:
        r.call("CONFIG", "SET", "notify-keyspace-events", "")


def test_a_firings_effects_survive_a_restart(tmp_path: Path):
    """The append-only log holds what a firing wrote: after a restart the job it promoted
    is still in pending (and a firing is not run twice by the replay)."""
    with Server(dir=str(tmp_path), appendonly="yes") as first:
        conn = RawClient(first.host, first.port)
        arm(conn)
        enqueue(conn, "JOB1", delay=20)
        deadline = time.time() + 3
        while conn.call("ZCARD", k("pending")) != (":", 1):
            assert time.time() < deadline, "the timer never fired"
            time.sleep(0.01)
        firings = emq_info(conn)["emq_timer_firings"]
        conn.close()
    with Server(dir=str(tmp_path), appendonly="yes") as second:
        conn = RawClient(second.host, second.port)
        assert conn.call("ZCARD", k("pending")) == (":", 1)
        assert conn.call("EXISTS", k("schedule")) == (":", 0)
        assert conn.call("HGET", k("JOB1"), "state") == ("$", b"pending")
        assert emq_info(conn)["emq_timer_firings"] == 0 < firings  # the replay fires nothing
        conn.close()


def test_a_restart_arms_the_timer_again(tmp_path: Path):
    with Server(dir=str(tmp_path), appendonly="yes") as first:
        conn = RawClient(first.host, first.port)
        arm(conn)
        due = int(conn.call("TIME")[1][0][1]) * 1000 + 300
        enqueue(conn, "JOB1", delay=300)
        conn.close()
    with Server(dir=str(tmp_path), appendonly="yes") as second:
        conn = RawClient(second.host, second.port)
        assert emq_info(conn)["emq_timers_armed"] == 1
        deadline = time.time() + 3
        while conn.call("ZCARD", k("pending")) != (":", 1):
            assert time.time() < deadline, "the timer never fired after the restart"
            time.sleep(0.02)
        assert int(conn.call("TIME")[1][0][1]) * 1000 >= due - 1000
        conn.close()


def test_a_due_time_a_script_writes_sets_the_loop_timer(server, r, worker):
    """A wire-4 producer's delayed enqueue (a script) sets the loop timer for its due time
    before the script's reply, as a verb's does: the cron is not what finds it."""
    from fakekey.emq.scripts import SCRIPTS

    r.call("FAKEKEY.CLOCK", "REAL")
    arm(r)
    bclaim(worker)
    wait_blocked(r, 1)
    now = int(r.call("TIME")[1][0][1]) * 1000 + 60_000  # a minute ahead: the cron stays out
    assert r.call("EVAL", SCRIPTS["enqueue"].source, 3, k("JOB1"), k("pending"), k("schedule"),
                  "p", 500, 0, now) == (":", 1)
    assert server.state.timers._at == now + 500


def test_nothing_fires_while_clients_are_paused(r):
    """A firing writes; while clients are paused (CLIENT PAUSE) the server writes nothing
    of its own, as keys do not expire then; the timer fires once the pause ends."""
    arm(r)
    enqueue(r, "JOB1", delay=10)
    assert r.call("CLIENT", "PAUSE", 100_000, "WRITE") == ("+", b"OK")
    try:
        r.call("FAKEKEY.CLOCK", "ADVANCE", 10)
        assert r.call("ZCARD", k("schedule")) == (":", 1)
    finally:
        assert r.call("CLIENT", "UNPAUSE") == ("+", b"OK")
    r.call("FAKEKEY.CLOCK", "ADVANCE", 0)
    assert r.call("ZCARD", k("pending")) == (":", 1)
