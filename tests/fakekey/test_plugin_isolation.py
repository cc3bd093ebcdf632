"""The pytest plugin's isolation (a fresh server per test, or one per session emptied between
tests), pytest-xdist, and the clock fixture."""

import datetime
import statistics
import threading
import time

import pytest
import redis

from fakekey.testing.servers import ServerPool

pytest_plugins = ["pytester"]

INI = "[pytest]\nasyncio_default_fixture_loop_scope = function\n"


@pytest.fixture(autouse=True)
def user_project(pytester, monkeypatch):
    """A user's project: no target from outside; its ini sets pytest-asyncio's loop scope."""
    monkeypatch.delenv("FAKEKEY_TARGET", raising=False)
    pytester.makeini(INI)


SESSION = """
import os

def record(server):
    path = os.path.join(os.environ["PORTS_DIR"], os.environ.get("PYTEST_XDIST_WORKER", "main"))
    with open(path, "a") as out:
        out.write(f"{server.port}\\n")

def test_dirty(fakekey_server, fakekey_client):
    record(fakekey_server)
    fakekey_client.set("k", "v")
    fakekey_client.script_load("return 1")
    fakekey_client.function_load("#!lua name=lib\\nserver.register_function('f', function() return 1 end)")
    fakekey_client.config_set("notify-keyspace-events", "KEA")
    fakekey_server.freeze(0)

def test_clean(fakekey_server, fakekey_client):
    record(fakekey_server)
    assert fakekey_client.dbsize() == 0
    assert fakekey_client.script_exists("e0e1f9fabfc9d4800c877a703b823ac0578ff8db") == [False]
    assert fakekey_client.function_list() == []
    assert fakekey_client.config_get("notify-keyspace-events") == {"notify-keyspace-events": ""}
    assert fakekey_client.time()[0] > 1_700_000_000
"""


def _ports(directory):
    return {path.name: path.read_text().split() for path in directory.iterdir()}


@pytest.mark.parametrize("how", ["option", "ini"])
def test_session_scope_shares_one_server_emptied_between_tests(pytester, monkeypatch, how):
    pytester.makepyfile(SESSION)
    monkeypatch.setenv("PORTS_DIR", str(pytester.mkdir("ports")))
    if how == "ini":
        pytester.makeini(INI + "fakekey_scope = session\n")
        args = []
    else:
        args = ["--fakekey-scope", "session"]
    pytester.runpytest("-p", "no:randomly", *args).assert_outcomes(passed=2)
    (first, second), = _ports(pytester.path / "ports").values()
    assert first == second


def test_function_scope_gives_each_test_its_own_server(pytester, monkeypatch):
    pytester.makepyfile(SESSION)
    monkeypatch.setenv("PORTS_DIR", str(pytester.mkdir("ports")))
    pytester.runpytest("-p", "no:randomly").assert_outcomes(passed=2)
    (first, second), = _ports(pytester.path / "ports").values()
    assert first != second


def test_unknown_scope_is_a_usage_error(pytester):
    pytester.makeini(INI + "fakekey_scope = module\n")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*fakekey_scope must be one of function, session, not 'module'*"])


def test_xdist_workers_each_have_their_own_session_server(pytester, monkeypatch):
    pytest.importorskip("xdist")
    pytester.makepyfile(**{f"test_part{i}": SESSION for i in range(2)})
    monkeypatch.setenv("PORTS_DIR", str(pytester.mkdir("ports")))
    result = pytester.runpytest_subprocess("-n", "2", "-p", "xdist", "--dist", "loadfile",
                                           "--fakekey-scope", "session")
    result.assert_outcomes(passed=4)
    ports = _ports(pytester.path / "ports")
    assert sorted(ports) == ["gw0", "gw1"]
    per_worker = [set(worker_ports) for worker_ports in ports.values()]
    assert all(len(used) == 1 for used in per_worker)  # one server per worker ...
    assert per_worker[0] != per_worker[1]  # ... on its own port


def test_a_fresh_server_per_test_takes_milliseconds():
    pool = ServerPool("function")
    timings = []
    for _ in range(20):
        started = time.perf_counter()
        running, own = pool.for_test("fakekey", {})
        running.stop()
        timings.append(time.perf_counter() - started)
    assert own
    # typically about 1 ms on an idle machine; generous for a loaded CI box
    assert statistics.median(timings) < 0.05


# --- the clock fixture, in this session (target fakekey) -----------------------------------


def test_clock_fixture_starts_frozen_and_advances(fakekey_clock, fakekey_client):
    start = fakekey_clock.time_ms()
    time.sleep(0.01)
    assert fakekey_clock.time_ms() == start
    fakekey_client.set("k", "v", px=2500)
    fakekey_clock.advance(seconds=2, ms=500)
    assert fakekey_clock.time_ms() == start + 2500
    assert fakekey_client.get("k") == b"v"  # at the deadline the key still lives
    fakekey_clock.advance(ms=1)
    assert fakekey_client.get("k") is None


def test_clock_freezes_at_a_datetime_or_ms(fakekey_clock, fakekey_client):
    fakekey_clock.freeze(at=datetime.datetime(2030, 1, 1, tzinfo=datetime.UTC))
    assert fakekey_client.time() == (1_893_456_000, 0)
    fakekey_clock.freeze(at=1_700_000_000_123)
    assert fakekey_client.time() == (1_700_000_000, 123_000)
    fakekey_clock.freeze(1_000)  # the positional form the README documents
    assert fakekey_clock.time_ms() == 1_000


def test_frozen_block_restores_real_time(fakekey_clock, fakekey_client):
    with fakekey_clock.frozen(at=datetime.datetime(2001, 9, 9, 1, 46, 40, tzinfo=datetime.UTC)):
        assert fakekey_client.time() == (1_000_000_000, 0)
        fakekey_clock.advance(seconds=1.5)
        assert fakekey_clock.time_ms() == 1_000_000_001_500
    assert abs(fakekey_clock.time_ms() - time.time() * 1000) < 1000
    assert fakekey_client.time()[0] >= int(time.time()) - 1


def test_clock_only_moves_forward(fakekey_clock):
    with pytest.raises(ValueError, match="only moves forward"):
        fakekey_clock.advance(seconds=-1)


def test_advance_on_a_running_clock_freezes_it_ahead(fakekey_server):
    fakekey_server.real_time()
    before = time.time_ns() // 1_000_000
    fakekey_server.advance(seconds=60)
    assert fakekey_server.time_ms() >= before + 60_000
    assert fakekey_server.state.clock.frozen


def test_advancing_the_clock_times_out_a_blocked_waiter(fakekey_clock, fakekey_server, fakekey_client):
    waiter = redis.Redis(host=fakekey_server.host, port=fakekey_server.port)
    result = []
    thread = threading.Thread(target=lambda: result.append(waiter.blpop(["q"], timeout=30)))
    thread.start()
    deadline = time.time() + 5
    while not fakekey_client.info("clients")["blocked_clients"] and time.time() < deadline:
        time.sleep(0.005)
    fakekey_clock.advance(seconds=30)
    thread.join(5)
    assert result == [None]
    waiter.close()
