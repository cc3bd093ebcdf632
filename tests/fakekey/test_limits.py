"""Limits, fakekey's side.

maxclients against the file-descriptor limit, as Valkey: a server started under a low
`ulimit -n` lowers maxclients to the limit less 32 (logging Valkey's lines), the client
past it gets `max number of clients reached`, and CONFIG SET maxclients beyond the limit
is refused. Each server runs in a subprocess with its own RLIMIT_NOFILE. Then what only
fakekey has: the pause for unread output, the maxmemory tracker's exactness, and the
bound on string.rep."""

from __future__ import annotations

import os
import re
import resource
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from fakekey.core.state import UNREAD_OUTPUT_PAUSE
from fakekey.memory.eviction import MemoryTracker
from fakekey.net.server import Server, UnreadOutputPause
from fakekey.testing.raw import RawClient
from fakekey.testing.targets import find_valkey_binary, free_port

REDUCED = [
    "You requested maxclients of 10000 requiring at least 10032 max file descriptors.",
    "Server can't set maximum open files to 10032 because of OS error: Operation not permitted.",
    "Current maximum open files is 64. maxclients has been reduced to 32 to compensate for low ulimit. "
    "If you need higher maxclients increase 'ulimit -n'.",
]
LOG_LINE = re.compile(r"\d+:M \d\d \w{3} \d{4} \d\d:\d\d:\d\d\.\d{3} # (.*)")


def _limit_descriptors(count: int):
    def preexec() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (count, count))
    return preexec


def _cannot_raise_hard_limit() -> bool:
    """The reduction only happens where the hard limit cannot be raised (no CAP_SYS_RESOURCE)."""
    probe = subprocess.run(
        [sys.executable, "-c",
         "import resource as r; r.setrlimit(r.RLIMIT_NOFILE, (64, 64)); r.setrlimit(r.RLIMIT_NOFILE, (128, 128))"],
        capture_output=True)
    return probe.returncode != 0


needs_unprivileged = pytest.mark.skipif(not _cannot_raise_hard_limit(),
                                        reason="this process may raise its descriptor hard limit")


def fakekey_command(port: int) -> list[str]:
    return [sys.executable, "-m", "fakekey", "--port", str(port)]


def valkey_command(port: int) -> list[str]:
    if "valkey" not in os.environ.get("FAKEKEY_TARGETS", "fakekey,valkey"):
        pytest.skip("FAKEKEY_TARGETS leaves out valkey")
    binary = find_valkey_binary()
    if binary is None:
        pytest.skip("no valkey-server binary")
    return [binary, "--port", str(port), "--save", "", "--appendonly", "no", "--dir", "/tmp"]


@contextmanager
def server_under_limit(command: list[str], port: int, descriptors: int) -> Iterator[subprocess.Popen[str]]:
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            preexec_fn=_limit_descriptors(descriptors), env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            try:
                with RawClient("127.0.0.1", port, timeout=2) as client:
                    if client.call("PING") == ("+", b"PONG"):
                        break
            except OSError:
                time.sleep(0.05)
        else:
            raise AssertionError("the server did not start")
        yield proc
    finally:
        proc.terminate()
        proc.wait(10)


def warnings_logged(proc: subprocess.Popen[str]) -> list[str]:
    assert proc.stdout is not None
    return [m.group(1) for line in proc.stdout.read().splitlines() if (m := LOG_LINE.match(line))]


def max_clients_of(port: int) -> bytes:
    with RawClient("127.0.0.1", port) as client:
        return client.call("CONFIG", "GET", "maxclients")[1][1][1]


def assert_client_past_maxclients_refused(port: int, maxclients: int) -> None:
    """maxclients connections answer PING; the next gets Valkey's error and is closed."""
    first = client_with_room(port)
    until_alone(first)  # connections closed before are gone from the server's count
    clients = [first] + [RawClient("127.0.0.1", port) for _ in range(maxclients - 1)]
    try:
        for client in clients:
            assert client.call("PING") == ("+", b"PONG")
        with socket.create_connection(("127.0.0.1", port), timeout=5) as extra:
            received = b""
            while chunk := extra.recv(100):
                received += chunk
            assert received == b"-ERR max number of clients reached\r\n"
    finally:
        for client in clients:
            client.close()


def until_alone(client: RawClient) -> None:
    """Wait until the server counts this client alone."""
    deadline = time.monotonic() + 10
    while b"connected_clients:1\r\n" not in client.call("INFO", "clients")[1]:
        if time.monotonic() > deadline:
            raise AssertionError("the server still counts closed connections")
        time.sleep(0.02)


def client_with_room(port: int) -> RawClient:
    """A new connection that the server accepted: the server notices closed connections
    a moment after the client closed them, and refuses newcomers until then."""
    deadline = time.monotonic() + 10
    while True:
        client = RawClient("127.0.0.1", port)
        try:
            if client.call("PING") == ("+", b"PONG"):
                return client
        except OSError:
            pass
        client.close()
        if time.monotonic() > deadline:
            raise AssertionError("no room for a client after the others closed")
        time.sleep(0.02)


@needs_unprivileged
@pytest.mark.parametrize("command", [fakekey_command, valkey_command], ids=["fakekey", "valkey"])
def test_low_descriptor_limit_lowers_maxclients(command):
    port = free_port()
    with server_under_limit(command(port), port, 64) as proc:
        assert max_clients_of(port) == b"32"
        assert_client_past_maxclients_refused(port, 32)
        with client_with_room(port) as client:
            assert client.call("CONFIG", "SET", "maxclients", "100") == ("-", (
                b"ERR CONFIG SET failed (possibly related to argument 'maxclients') - The operating "
                b"system is not able to handle the specified number of clients, try with 32"))
            assert client.call("CONFIG", "GET", "maxclients") == ("*", [("$", b"maxclients"), ("$", b"32")])
            assert client.call("CONFIG", "SET", "maxclients", "5") == ("+", b"OK")
        assert_client_past_maxclients_refused(port, 5)
        proc.terminate()
        logged = warnings_logged(proc)
    assert REDUCED[0] in logged
    start = logged.index(REDUCED[0])
    assert logged[start:start + 3] == REDUCED


@needs_unprivileged
def test_too_low_a_limit_refuses_to_start():
    proc = subprocess.run(fakekey_command(free_port()), capture_output=True, text=True,
                          preexec_fn=_limit_descriptors(30), timeout=30)
    assert proc.returncode == 1
    assert ("Your current 'ulimit -n' of 30 is not enough for the server to start. Please increase "
            "your open file limit to at least 10032. Exiting.") in proc.stdout


# --- unread output, maxmemory's estimate, string.rep: fakekey's own side ------------------------

MB = 1 << 20


def test_a_client_that_does_not_read_stops_being_read_and_memory_stays_bounded():
    """With no normal-class limit (the default), a client with more than
    UNREAD_OUTPUT_PAUSE unread is paused, not dropped: the backlog stays bounded, and once
    it reads it gets every reply, in order."""
    with Server() as srv, RawClient("127.0.0.1", srv.port) as admin:
        admin.call("SET", "big", "x" * MB)
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect(("127.0.0.1", srv.port))
        with sock:
            sock.sendall(b"GET big\r\n" * 200 + b"PING\r\n")  # 200 MB of replies
            backlogs = []
            for _ in range(20):
                time.sleep(0.05)
                backlogs.append(srv._on_loop(_largest_backlog, srv))
            assert max(backlogs) < UNREAD_OUTPUT_PAUSE + 4 * MB
            assert srv._on_loop(_paused_clients, srv) == 1
            assert srv.state.stats["client_output_buffer_limit_disconnections"] == 0
            reply = b"$%d\r\n%s\r\n" % (MB, b"x" * MB)
            expected = 200 * len(reply) + len(b"+PONG\r\n")
            received = bytearray()
            sock.settimeout(30)
            while len(received) < expected:
                chunk = sock.recv(4 * MB)
                assert chunk, "the server closed the connection"
                received += chunk
            assert received.endswith(reply + b"+PONG\r\n") and len(received) == expected
        assert srv._on_loop(_paused_clients, srv) == 0


def _largest_backlog(srv: Server) -> int:
    return max(client.connection.output_backlog() for client in srv.state.clients.values())


def _paused_clients(srv: Server) -> int:
    return sum(isinstance(client.blocked, UnreadOutputPause) for client in srv.state.clients.values())


def test_maxmemory_0_keeps_no_tracker_and_a_limit_keeps_it_exact():
    """The running estimate equals a fresh walk of the keyspace after every kind of write,
    expiry, rename, move, swap and flush; maxmemory 0 drops it."""
    with Server() as srv, RawClient("127.0.0.1", srv.port) as c:
        assert srv.state.memory is None
        c.call("SET", "before", "v" * 300)  # written before tracking starts: counted by the walk
        assert c.call("CONFIG", "SET", "maxmemory", "1gb") == ("+", b"OK")
        script = [
            ("SET", "s", "abc"), ("APPEND", "s", "x" * 100), ("SETRANGE", "s", "500", "y"),
            ("SETBIT", "bits", "10000", "1"), ("INCR", "n"), ("INCRBYFLOAT", "f", "1.5"),
            ("RPUSH", "l", *[str(i) * 20 for i in range(300)]), ("LPOP", "l", "100"), ("LTRIM", "l", "0", "9"),
            ("HSET", "h", *[f"f{i}" if j == 0 else "v" * i for i in range(200) for j in range(2)]),
            ("HDEL", "h", "f1", "f2"), ("SADD", "set", *[str(i) for i in range(600)]), ("SPOP", "set", "5"),
            ("ZADD", "z", *[x for i in range(200) for x in (str(i), f"m{i}")]), ("ZREM", "z", "m1"),
            ("XADD", "st", "*", "a", "1"), ("XADD", "st", "*", "b", "2"), ("XGROUP", "CREATE", "st", "g", "0"),
            ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "st", ">"), ("XTRIM", "st", "MAXLEN", "1"),
            ("PEXPIRE", "s", "1"), ("RENAME", "l", "l2"), ("COPY", "h", "h2"), ("MOVE", "h2", "1"),
            ("SWAPDB", "0", "1"), ("SWAPDB", "0", "1"), ("GETDEL", "n"), ("UNLINK", "f"),
            ("LPUSH", "tmp", "a"), ("LPOP", "tmp"), ("SELECT", "1"), ("SET", "in1", "x" * 1000),
            ("FLUSHDB",), ("SELECT", "0"), ("EVAL", "redis.call('set', 'lua', string.rep('q', 5000))", "0"),
        ]
        for argv in script:
            assert c.call(*argv)[0] != "-", argv
        time.sleep(0.05)
        assert c.call("GET", "s") == ("$", None)  # expired meanwhile
        tracked = srv._on_loop(lambda: srv.state.memory.used)
        walked = srv._on_loop(lambda: MemoryTracker(srv.state).used)
        assert tracked == walked
        assert c.call("CONFIG", "SET", "maxmemory", "0") == ("+", b"OK")
        assert srv.state.memory is None


def test_string_rep_past_512_mb_fails_as_an_allocation_would():
    with Server() as srv, RawClient("127.0.0.1", srv.port) as c:
        assert c.call("EVAL", "return string.rep('x', 2^30)", "0") == (
            "-", b"ERR not enough memory script: on @user_script:1.")
        assert c.call("EVAL", "local ok, err = pcall(string.rep, 'xx', 2^28 + 1) return {tostring(ok), err}", "0") == (
            "*", [("$", b"false"), ("$", b"not enough memory")])
        assert c.call("EVAL", "return #string.rep('x', 2^20)", "0") == (":", MB)
        assert c.call("PING") == ("+", b"PONG")
