"""`fakekey_clock` and the frozen clock's guard, through small projects run with pytester:
a client blocked under a frozen clock fails its test with a message naming the command
(guard from the marker, the ini option or the fixture's parameter); on a URL target that
is a fakekey the clock works through FAKEKEY.CLOCK and is real again after each test; on
a real Valkey a short advance sleeps and a longer one skips."""

import pytest

from fakekey.net.server import Server
from fakekey.testing.raw import RawClient
from fakekey.testing.targets import find_valkey_binary

pytest_plugins = ["pytester"]

needs_valkey = pytest.mark.skipif(find_valkey_binary() is None, reason="no valkey-server binary")


@pytest.fixture(autouse=True)
def user_project(pytester, monkeypatch):
    monkeypatch.delenv("FAKEKEY_TARGET", raising=False)
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")


BLOCKED = """
import pytest
import redis

@pytest.mark.fakekey_clock(guard=0.3)
def test_marker(fakekey_clock, fakekey_client):
    fakekey_client.blpop(["jobs"], timeout=1)

@pytest.mark.parametrize("fakekey_clock", [{"guard": 0.3}], indirect=True)
def test_fixture_argument(fakekey_clock, fakekey_client):
    fakekey_client.brpop(["jobs"], timeout=5)

@pytest.mark.fakekey_clock(guard=0.3)
def test_caught(fakekey_clock, fakekey_client):
    with pytest.raises(redis.ResponseError):
        fakekey_client.blpop(["jobs"], timeout=1)

@pytest.mark.fakekey_clock(guard=0.3)
def test_advanced_in_time(fakekey_clock, fakekey_client):
    fakekey_client.rpush("jobs", "a")
    assert fakekey_client.blpop(["jobs"], timeout=1) == (b"jobs", b"a")
"""


def test_a_wait_under_a_frozen_clock_fails_its_test_naming_the_command(pytester):
    pytester.makepyfile(BLOCKED)
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(failed=3, passed=1)
    for test, command in [("test_marker", "BLPOP jobs 1"), ("test_fixture_argument?fakekey_clock0?", "BRPOP jobs 5"),
                          ("test_caught", "BLPOP jobs 1")]:
        result.stdout.fnmatch_lines([f"*_ {test} _*", f"fakekey: '{command}' was blocked for 0.3 s of "
                                     "wall-clock time while the server's clock is frozen: nothing ends that "
                                     "wait until the clock moves*"])
    result.stdout.no_fnmatch_line("*During handling*")


def test_the_ini_guard_covers_a_clock_the_test_froze_itself(pytester):
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\nfakekey_frozen_guard = 0.3\n")
    pytester.makepyfile("""
        def test_frozen_by_hand(fakekey_client):
            fakekey_client.execute_command("FAKEKEY.CLOCK", "SET", "1700000000000")
            fakekey_client.blpop(["jobs"], timeout=2)
        """)
    result = pytester.runpytest("--fakekey-scope", "session")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*'BLPOP jobs 2' was blocked for 0.3 s*clock is frozen*"])


def test_on_a_url_fakekey_the_clock_works_and_is_real_after_each_test(pytester):
    with Server() as server:
        pytester.makepyfile("""
            def test_advance(fakekey_clock, fakekey_client):
                fakekey_client.set("k", "v", px=5000)
                fakekey_clock.advance(seconds=5, ms=1)
                assert fakekey_client.get("k") is None

            def test_frozen_at(fakekey_clock, fakekey_client):
                with fakekey_clock.frozen(at=1_893_456_000_000):
                    assert fakekey_client.time() == (1893456000, 0)

            def test_freezes_it_itself(fakekey_client):
                fakekey_client.execute_command("FAKEKEY.CLOCK", "SET", "1000")
            """)
        result = pytester.runpytest("-p", "no:randomly", "--fakekey-target", server.url)
        result.assert_outcomes(passed=3)
        with RawClient(server.host, server.port) as client:  # real time again after the last test
            kind, now = client.call("FAKEKEY.CLOCK", "GET")
        assert not server.state.clock.frozen and now > 1_700_000_000_000


VALKEY_CLOCK = """
import pytest

def test_short_advance(fakekey_clock, fakekey_client):
    assert fakekey_clock.time_ms() > 1_700_000_000_000
    fakekey_client.set("k", "v", px=100)
    fakekey_clock.advance(ms=150)
    assert fakekey_client.get("k") is None

def test_blocking_timeout(fakekey_clock, fakekey_client):
    import threading, time
    replies = []
    waiter = threading.Thread(target=lambda: replies.append(fakekey_client.blpop(["q"], timeout=0.1)))
    waiter.start()
    deadline = time.monotonic() + 10
    while not fakekey_client.info("clients")["blocked_clients"] and not replies:
        assert time.monotonic() < deadline, "the client never blocked"
    fakekey_clock.advance(ms=300)
    waiter.join(10)
    assert replies == [None]

def test_long_advance(fakekey_clock, fakekey_client):
    fakekey_clock.advance(seconds=60)
    assert fakekey_client.ping()
"""


@needs_valkey
def test_the_same_clock_tests_on_valkey(pytester):
    pytester.makepyfile(VALKEY_CLOCK)
    result = pytester.runpytest("-p", "no:randomly", "-rs", "--fakekey-target", "both")
    result.assert_outcomes(passed=5, skipped=1)
    result.stdout.fnmatch_lines([
        "SKIPPED*advancing the clock 60000 ms needs fakekey's clock: on valkey that is a sleep "
        "over the sleep cap (2 s: fakekey_clock_sleep_cap)*",
    ])


@needs_valkey
def test_the_sleep_cap_is_settable(pytester):
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\nfakekey_clock_sleep_cap = 0.1\n")
    pytester.makepyfile("""
        def test_advance(fakekey_clock):
            fakekey_clock.advance(ms=150)

        def test_freeze(fakekey_clock):
            fakekey_clock.freeze(at=0)
        """)
    result = pytester.runpytest("-rs", "--fakekey-target", "valkey")
    result.assert_outcomes(skipped=2)
    result.stdout.fnmatch_lines_random([
        "SKIPPED*advancing the clock 150 ms needs fakekey's clock*(0.1 s: fakekey_clock_sleep_cap)*",
        "SKIPPED*freezing the clock needs fakekey (target: valkey)*",
    ])
