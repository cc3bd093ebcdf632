"""An in-process server's running clock is the test process's `time.time()`, as
`unittest.mock`, freezegun and time-machine patch it: expiry, TIME, stream ids and
blocking timeouts follow the patched time; FAKEKEY.CLOCK still wins while it is frozen;
a server in another process keeps its own clock."""

import contextlib
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from unittest import mock

import freezegun
import pytest
import redis
import time_machine

from fakekey.net.server import Server
from fakekey.testing.raw import RawClient
from fakekey.testing.targets import free_port

START = 1_893_456_000  # 2030-01-01T00:00:00Z, far from today's time


@contextlib.contextmanager
def with_mock() -> Iterator[Callable[[float], None]]:
    with mock.patch("time.time", return_value=float(START)) as patched:
        def move(seconds: float) -> None:
            patched.return_value += seconds
        yield move


@contextlib.contextmanager
def with_freezegun() -> Iterator[Callable[[float], None]]:
    with freezegun.freeze_time("2030-01-01") as frozen:
        yield frozen.tick


@contextlib.contextmanager
def with_time_machine() -> Iterator[Callable[[float], None]]:
    with time_machine.travel(START, tick=False) as traveller:
        yield traveller.shift


PATCHES = {"mock": with_mock, "freezegun": with_freezegun, "time_machine": with_time_machine}


@pytest.fixture(scope="module")
def server():
    with Server() as srv:
        yield srv


@pytest.fixture
def client(server):
    client = redis.Redis(port=server.port)
    client.flushall()
    yield client
    client.close()


def wait_blocked(client: redis.Redis, count: int) -> None:
    """Poll without time.monotonic (freezegun stops it): a bounded count of short waits."""
    pause = threading.Event()
    for _ in range(1000):
        if client.info("clients")["blocked_clients"] == count:
            return
        pause.wait(0.01)
    raise AssertionError("the client never blocked")


@pytest.mark.parametrize("patch", PATCHES)
def test_time_and_expiry_follow_the_patched_time(patch, client):
    with PATCHES[patch]() as move:
        assert client.time() == (START, 0)
        client.set("k", "v", ex=10)
        assert client.ttl("k") == 10
        move(9)
        assert client.ttl("k") == 1
        move(2)
        assert client.get("k") is None


@pytest.mark.parametrize("patch", PATCHES)
def test_stream_ids_follow_the_patched_time(patch, client):
    with PATCHES[patch]():
        assert client.xadd("s", {"f": "v"}) == f"{START}000-0".encode()
        assert client.xadd("s", {"f": "v"}) == f"{START}000-1".encode()


@pytest.mark.parametrize("patch", PATCHES)
def test_pipelined_requests_follow_a_patch_made_between_reads(patch, client):
    """A batch's requests after its first skip the look at time.time (net/server.py): a
    batch run before the patch leaves nothing of that behind, and each request of one run
    under the patch sees it."""
    with client.pipeline(transaction=False) as pipe:
        for _ in range(3):
            pipe.time()
        assert all(seconds != START for seconds, _ in pipe.execute())
    with PATCHES[patch]():
        assert client.time() == (START, 0)
        with client.pipeline(transaction=False) as pipe:
            for _ in range(3):
                pipe.time()
            assert pipe.execute() == [(START, 0)] * 3
    assert client.time()[0] != START


@pytest.mark.parametrize(("patched", "time_reply"), [
    (1234567890.1234567, (1234567890, 123457)),  # the float is ...123456.7 µs: the nearest is 457
    (1234567890.0000004, (1234567890, 0)),
    (1234567890.9999996, (1234567891, 0)),
])
def test_the_patched_time_is_read_to_the_nearest_microsecond(client, patched, time_reply):
    with mock.patch("time.time", return_value=patched):
        assert client.time() == time_reply


@pytest.mark.parametrize("patch", PATCHES)
def test_blocking_timeouts_follow_the_patched_time(patch, server, client):
    with PATCHES[patch]() as move:
        replies: list[object] = []
        other = redis.Redis(port=server.port)
        waiter = threading.Thread(target=lambda: replies.append(other.blpop(["q"], timeout=5)))
        waiter.start()
        try:
            wait_blocked(client, 1)
            move(4)
            assert client.execute_command("PING")  # a command: still blocked at +4 s
            assert client.info("clients")["blocked_clients"] == 1
            move(2)
            waiter.join(10)
        finally:
            client.lpush("q", "release")  # never leave the thread blocked
            waiter.join(10)
            other.close()
        assert replies == [None]


def test_the_fakekey_clock_wins_while_frozen(server, client):
    with with_mock():
        server.freeze(at=1_000_000)
        try:
            assert client.time() == (1000, 0)
        finally:
            server.real_time()
        assert client.time() == (START, 0)


def test_a_server_in_another_process_keeps_its_own_clock():
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "fakekey", "--port", str(port), "--save", ""],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        ready = threading.Event()
        for _ in range(500):
            with contextlib.suppress(OSError), RawClient("127.0.0.1", port) as probe:
                probe.call("PING")
                break
            ready.wait(0.02)
        with freezegun.freeze_time("2030-01-01"), RawClient("127.0.0.1", port) as raw:
            _, ((_, seconds), _) = raw.call("TIME")
        assert int(seconds) < START
    finally:
        process.terminate()
        process.wait(10)
