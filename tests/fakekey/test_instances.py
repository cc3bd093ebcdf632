"""Cheap in-process servers: every server a process starts with `start()` shares one
background loop thread (fakekey/net/loop_thread.py) and nothing else; an idle one holds
a listening socket and no other descriptor; a thousand of them run under `ulimit -n
4096`; embedding them leaves the process's descriptor limit alone and prints nothing.
What an instance costs in time is measured in bench/instances.py, not here."""

from __future__ import annotations

import asyncio
import gc
import os
import resource
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

import fakekey
from fakekey.net import beats
from fakekey.net.loop_thread import THREAD_NAME, shared_loop_thread
from fakekey.net.server import Server
from fakekey.persistence.snapshot import LoadError
from fakekey.testing.raw import RawClient

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts descriptors in /proc")


def open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def loop_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == THREAD_NAME]


def wait_for(condition: Callable[[], bool], what: str, seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"still not {what} after {seconds} s")
        time.sleep(0.01)


def refuses_connections(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return True
    return False


def ping(server: Server) -> bool:
    with RawClient(server.host, server.port) as client:
        return client.call("PING") == ("+", b"PONG")


@contextmanager
def servers(count: int, **settings: object) -> Iterator[list[Server]]:
    started: list[Server] = []
    try:
        for _ in range(count):
            started.append(Server(**settings).start())
        yield started
    finally:
        for server in started:
            server.stop()


def test_many_servers_share_one_loop_thread_and_nothing_else():
    with servers(20) as many:
        assert len(loop_threads()) == 1
        assert {server.loop_thread for server in many} == {shared_loop_thread().thread}
        assert len({server.port for server in many}) == 20
        first, second = many[0], many[1]
        with RawClient(first.host, first.port) as a, RawClient(second.host, second.port) as b:
            assert a.call("SET", "k", "first") == ("+", b"OK")
            assert b.call("GET", "k") == ("$", None)
            assert a.call("CONFIG", "SET", "hz", "50") == ("+", b"OK")
            assert b.call("CONFIG", "GET", "hz") == ("*", [("$", b"hz"), ("$", b"10")])
            first.freeze(at=1_000_000)
            assert a.call("TIME")[1][0] == ("$", b"1000")
            assert int(b.call("TIME")[1][0][1]) > 1_000_000
        assert all(ping(server) for server in many)


def test_a_new_server_makes_a_commands_counters_at_its_first_count():
    """INFO commandstats' counters are made as commands are counted, run or rejected:
    a new server holds none."""
    with servers(1) as (server,), RawClient(server.host, server.port) as client:
        assert all(stats is None for stats in server.state.command_stats)
        assert client.call("SET", "k", "v") == ("+", b"OK")
        assert client.call("GET")[0] == "-"  # wrong arity: a rejected call
        stats = client.call("INFO", "commandstats")[1]
        assert b"cmdstat_set:calls=1," in stats
        assert b"cmdstat_get:calls=0,usec=0,usec_per_call=0.00,rejected_calls=1,failed_calls=0" in stats
        assert client.call("CONFIG", "RESETSTAT") == ("+", b"OK")
        assert b"cmdstat_set" not in client.call("INFO", "commandstats")[1]


def made_databases(server: Server) -> list[int]:
    return [index for index in range(len(server.state.dbs)) if server.state.dbs.made_at(index) is not None]


def test_a_database_is_made_at_its_first_use():
    """A new server makes none of its sixteen databases; a client's SELECT (or MOVE,
    COPY DB, SWAPDB) makes the ones it names, and what walks every database (FLUSHALL,
    INFO keyspace, DBSIZE) makes none, answering as Valkey does."""
    with servers(1) as (server,):
        assert len(server.state.dbs) == 16 and made_databases(server) == []
        with RawClient(server.host, server.port) as client:
            assert client.call("PING") == ("+", b"PONG")
            assert made_databases(server) == [0]  # the connection's current database
            assert client.call("SET", "k", "v", "PX", "100000") == ("+", b"OK")
            assert client.call("FLUSHALL") == ("+", b"OK")
            assert client.call("SET", "k", "v") == ("+", b"OK")
            assert client.call("INFO", "keyspace")[1].endswith(b"db0:keys=1,expires=0,avg_ttl=0,keys_with_volatile_items=0\r\n")
            assert client.call("MOVE", "k", "3") == (":", 1)
            assert client.call("COPY", "k2", "k", "DB", "5") == (":", 0)
            assert made_databases(server) == [0, 3, 5]
            assert client.call("SWAPDB", "3", "9") == ("+", b"OK")
            assert client.call("SELECT", "9") == ("+", b"OK")
            assert client.call("GET", "k") == ("$", b"v")
            assert client.call("DBSIZE") == (":", 1)
            assert client.call("SELECT", "16")[0] == "-"
            assert made_databases(server) == [0, 3, 5, 9]
            assert server.state.dbs[9].index == 9 and [db.index for db in server.state.dbs] == [0, 3, 5, 9]


def test_a_new_server_makes_its_rarely_used_parts_at_first_use():
    """The slow log, the tracking table, the lost-wake detector and the lazy freer are
    made by the first command that needs them, one server's alone."""
    with servers(2) as (server, other), RawClient(server.host, server.port) as client:
        parts = ("_commandlog", "_tracking_table", "_wakes", "_reclaimer")
        assert [getattr(server.state, part) for part in parts] == [None] * 4
        assert client.call("SET", "k", "v") == ("+", b"OK")
        assert [getattr(server.state, part) for part in parts] == [None] * 4
        assert client.call("SLOWLOG", "LEN") == (":", 0)
        assert client.call("CLIENT", "TRACKING", "ON") == ("+", b"OK")
        assert client.call("FAKEKEY.WAKES", "GET")[0] == "*"
        assert client.call("FLUSHALL", "ASYNC") == ("+", b"OK")
        assert all(getattr(server.state, part) is not None for part in parts)
        assert [getattr(other.state, part) for part in parts] == [None] * 4


def test_a_new_servers_default_user_is_its_own():
    """Each server's default user is a copy of one made once: a server that changes its
    own leaves the next new server's as new (no password, every command)."""
    with servers(1) as (first,), RawClient(first.host, first.port) as client:
        assert client.call("ACL", "SETUSER", "default", ">secret", "-get") == ("+", b"OK")
        assert client.call("GET", "k")[0] == "-"  # NOPERM on this server
        with servers(1) as (second,), RawClient(second.host, second.port) as other:
            assert other.call("GET", "k") == ("$", None)
            assert other.call("ACL", "LIST")[1] == [("$", b"user default on nopass ~* &* +@all")]


def test_the_instantaneous_figures_are_the_mean_of_the_last_sixteen_samples(monkeypatch):
    """INFO's instantaneous_* figures: each series' rate at every sample (a PERIOD_MS
    apart), the mean of the last SAMPLES of them, as Valkey's trackInstantaneousMetric."""
    from types import SimpleNamespace

    from fakekey.core import loop_metrics

    clock = [1000.0]
    monkeypatch.setattr(loop_metrics, "time", SimpleNamespace(monotonic=lambda: clock[0]))
    state = SimpleNamespace(commands_processed=0, clients={}, command_stats=[])
    metrics = loop_metrics.LoopMetrics()
    ops_rates = []
    for step in range(40):  # one sample a 100 ms apart, 7 * step commands in each
        state.commands_processed += 7 * step
        clock[0] += 0.1
        metrics.tick(state, 5.0)
        ops_rates.append(7 * step * 1000 / 100 if step else state.commands_processed * 1000 / 1_000_100)
        recent = ops_rates[-loop_metrics.SAMPLES:]
        assert metrics.instantaneous("ops") == pytest.approx(sum(recent) / len(recent))
        assert metrics.instantaneous("net_in") == 0.0
    assert metrics.instantaneous("cycles") == pytest.approx(sum(
        (7 * step + 1) * 10 for step in range(40 - loop_metrics.SAMPLES, 40)) / loop_metrics.SAMPLES)
    assert metrics.instantaneous("duration") > 0
    metrics.reset()
    assert metrics.instantaneous("ops") == 0.0 and metrics.instantaneous("cycles") == 0.0


def test_a_server_started_in_a_running_loop_serves_on_that_loop():
    async def main() -> tuple[bool, bool]:
        async with Server() as server:
            reader, writer = await asyncio.open_connection(server.host, server.port)
            writer.write(b"PING\r\n")
            answered = await reader.readline() == b"+PONG\r\n"
            writer.close()
            return answered, server._loop is asyncio.get_running_loop()

    assert asyncio.run(main()) == (True, True)


def test_an_idle_server_holds_at_most_two_descriptors():
    with servers(1):  # the shared loop's own descriptors exist before counting
        before = open_descriptors()
        with servers(20):
            held = open_descriptors() - before
            assert held <= 2 * 20, held
        wait_for(lambda: open_descriptors() <= before, "closed")


def test_stopping_or_restarting_one_server_leaves_the_others_serving():
    with servers(3) as (left, middle, right), RawClient(left.host, left.port) as kept:
        assert kept.call("SET", "k", "v") == ("+", b"OK")
        middle.stop()
        assert refuses_connections(middle.port)
        assert kept.call("GET", "k") == ("$", b"v")  # the connection made before goes on
        assert ping(right)
        middle.start()  # again, on the same loop
        assert ping(middle) and ping(left) and ping(right)
        assert middle.loop_thread is left.loop_thread


def test_shutdown_stops_that_server_alone():
    with servers(2) as (first, second), RawClient(first.host, first.port) as client:
        client.send("SHUTDOWN", "NOSAVE")
        assert client.is_closed()
        assert first._stopped.wait(10)
        assert refuses_connections(first.port)
        assert ping(second)


def test_a_server_that_cannot_start_says_why_and_leaves_the_loop_serving():
    with servers(1) as (running,):
        with pytest.raises(OSError):
            Server(port=running.port).start()  # the port is taken
        assert ping(running)


def test_a_dropped_fake_server_is_stopped_by_its_finalizer():
    with servers(1) as (other,):
        r = fakekey.FakeRedis()
        assert r.ping()
        port = r.fake_server.port
        r.close()
        del r
        gc.collect()
        wait_for(lambda: refuses_connections(port), "stopped")
        assert ping(other)


def test_a_finalizer_run_on_the_loop_thread_only_asks_the_server_to_stop():
    """The collector may run a finalizer on the loop's own thread: waiting there for
    the server to stop would hold the very loop that stops it."""
    with servers(1) as (other,):
        fake = fakekey.FakeServer()
        port = fake.port
        loop = shared_loop_thread().loop
        asked = asyncio.run_coroutine_threadsafe(_call(fake.close), loop)
        asked.result(5)  # returned at once, without waiting for the stop
        wait_for(lambda: refuses_connections(port), "stopped")
        assert ping(other)


async def _call(fn: Callable[[], object]) -> None:
    fn()


def crons_beating_every(period: float) -> dict[Callable[[], None], None]:
    beat = beats._beats.get((id(shared_loop_thread().loop), period))
    return dict(beat.crons) if beat is not None else {}


def test_the_crons_of_a_loops_servers_share_one_timer_per_period():
    """Each server's cron (every 1/hz s) and persistence's (every 0.1 s) run on the
    loop's beat of that period (net/beats.py): one timer for every idle server, not two
    each. CONFIG SET hz moves that server's cron to the beat of the new period."""
    with servers(3) as many:
        crons = [server._cron for server in many] + [server._persistence_cron for server in many]
        assert all(cron in crons_beating_every(0.1) for cron in crons)
        first = many[0]
        with RawClient(first.host, first.port) as client:
            assert client.call("CONFIG", "SET", "hz", "50") == ("+", b"OK")
            wait_for(lambda: first._cron in crons_beating_every(0.02), "on the beat of hz 50")
            assert first._cron not in crons_beating_every(0.1) and many[1]._cron in crons_beating_every(0.1)
            assert client.call("SET", "k", "v", "PX", "1") == ("+", b"OK")
            wait_for(lambda: client.call("DBSIZE") == (":", 0), "expired by the cron")
    assert not any(cron in crons_beating_every(0.1) or cron in crons_beating_every(0.02) for cron in crons)


def test_a_fake_server_returns_listening_and_its_start_ends_on_the_loop():
    """FakeServer() binds its port in the caller's thread and leaves the rest of the
    start to the loop thread: a connection made at once waits in the backlog and is
    served; the direct API, close() and a finalizer wait for the start first."""
    for _ in range(10):
        fake = fakekey.FakeServer()
        port = fake.port
        fake.close()  # at once: the start ends, then the server stops
        assert refuses_connections(port)
    fake = fakekey.FakeServer()
    with RawClient(fake.host, fake.port) as client:
        fake.server.set("k", "v")
        assert client.call("GET", "k") == ("$", b"v")
    fake.close()
    loop = shared_loop_thread().loop
    release = threading.Event()
    loop.call_soon_threadsafe(release.wait, 10)  # the loop busy: the start waits in its queue
    fake = fakekey.FakeServer()
    port = fake.port
    asked = asyncio.run_coroutine_threadsafe(_call(fake.close), loop)  # close() on the loop thread
    release.set()
    asked.result(10)
    wait_for(lambda: refuses_connections(port), "stopped")


def test_a_start_that_can_be_refused_waits_for_the_loop_whatever_it_is_asked(tmp_path):
    """start(wait=False) waits all the same when something after the bind may refuse
    the start (data to load, here a damaged snapshot): the caller hears why."""
    (tmp_path / "dump.rdb").write_bytes(b"REDIS0011 not a snapshot")
    with pytest.raises(LoadError):
        Server(dir=str(tmp_path)).start(wait=False)


def test_an_embedded_server_leaves_the_descriptor_limit_alone(capfd):
    limit = resource.getrlimit(resource.RLIMIT_NOFILE)
    with servers(1, maxclients=limit[0] + 1000) as (server,), RawClient(server.host, server.port) as client:
        assert client.call("CONFIG", "GET", "maxclients")[1][1] == ("$", b"%d" % (limit[0] + 1000))
        assert client.call("CONFIG", "SET", "maxclients", str(limit[1] + 1000)) == ("+", b"OK")
    assert resource.getrlimit(resource.RLIMIT_NOFILE) == limit
    assert capfd.readouterr().err == ""


THOUSAND = textwrap.dedent("""
    import resource, sys, threading
    import fakekey
    limit = resource.getrlimit(resource.RLIMIT_NOFILE)
    clients = [fakekey.FakeRedis() for _ in range(1000)]
    for i, r in enumerate(clients):
        r.set("k", i)
    assert [int(r.get("k")) for r in clients] == list(range(1000))
    assert resource.getrlimit(resource.RLIMIT_NOFILE) == limit, resource.getrlimit(resource.RLIMIT_NOFILE)
    print(threading.active_count(), len(set(r.fake_server.port for r in clients)))
""")


def test_a_thousand_instances_under_ulimit_4096():
    """In a subprocess whose soft descriptor limit is 4096: a thousand FakeRedis, each
    with its own server and a connection to it, answer; the limit is as it was, and
    nothing is printed to stderr."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 4096:
        pytest.skip("the hard descriptor limit is below 4096")

    def lower_the_soft_limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (4096, hard))

    proc = subprocess.Popen([sys.executable, "-c", THOUSAND], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, preexec_fn=lower_the_soft_limit,
                            env={**os.environ, "PYTHONWARNINGS": "ignore::RuntimeWarning"})
    try:
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert proc.returncode == 0, err
    assert err == ""
    assert out.split() == ["2", "1000"]  # the caller's thread and the one loop thread
