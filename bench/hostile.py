"""How long can one hostile request hold fakekey's loop? A measurement, not a test.

Starts fakekey as a subprocess, keeps a watchdog client sending PING every few ms, and
sends a battery of hostile requests (long numeric garbage for every numeric argument kind,
long and nested glob patterns, counts at the extremes, deeply nested Lua replies, huge
argument counts) from another client. Prints the number of requests sent, the slowest
single request, the watchdog's worst PING round trip (how long any other client waited)
and the server's peak RSS (VmHWM).

    .venv/bin/python bench/hostile.py [--rounds N]
"""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fakekey.testing.raw import RawClient, encode_command  # noqa: E402

DIGITS = "1" * 60_000
HUGE = 10_000_000  # elements: a reply read in part only
STREAM_SAMPLE = 4 << 20  # bytes of it read
LLONG = ["9223372036854775807", "-9223372036854775808", "2147483647", "-2147483648",
         "4294967296", "-4294967297"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def hostile_requests() -> Iterator[tuple[str, ...]]:
    """One round of hostile requests."""
    bad_float = DIGITS + "x"
    yield from (("ZADD", "z", bad_float, "m"), ("ZINCRBY", "z", bad_float, "m"),
                ("ZRANGEBYSCORE", "z", "(" + bad_float, "+inf"), ("ZCOUNT", "z", bad_float, "1"),
                ("INCRBYFLOAT", "s", bad_float), ("HINCRBYFLOAT", "h", "f", bad_float),
                ("BLPOP", "nolist", bad_float), ("BZPOPMIN", "nozset", bad_float),
                ("ZUNIONSTORE", "d", "1", "z", "WEIGHTS", bad_float),
                ("SETRANGE", "s", DIGITS, "x"), ("EXPIRE", "s", DIGITS),
                ("XADD", "x", DIGITS + "-1", "f", "v"), ("CONFIG", "SET", "hz", DIGITS))
    for pattern in ("[^a]" * 25_000, "*a" * 20_000 + "b", "?" * 50_000, "[" * 30_000,
                    "\\" * 50_000, "*" * 50_000 + "x"):
        yield ("KEYS", pattern)
        yield ("SCAN", "0", "MATCH", pattern, "COUNT", "1000")
        yield ("PUBSUB", "CHANNELS", pattern)
    for count in LLONG:
        yield ("SRANDMEMBER", "set", count)
        yield ("HRANDFIELD", "hash", count)
        yield ("ZRANDMEMBER", "z", count, "WITHSCORES")
        yield ("LRANGE", "list", "0", count)
        yield ("LPOS", "list", "a", "COUNT", count)
    yield ("EVAL", "local a = {} local b = {a} a[1] = b return a", "0")
    yield ("EVAL", "local t = {} for i = 1, 7999 do t[i] = i end "
                   "return redis.call('RPUSH', 'biglist', unpack(t))", "0")
    yield ("EVAL", "return cjson.decode(string.rep('[', 5000) .. string.rep(']', 5000))", "0")
    yield ("DEL", "biglist")


class Requester:
    """Sends one request and reads its whole reply without recursing (the deepest replies
    nest thousands of levels), counting the elements still to come."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=120)
        self.buf = b""
        self.streamed = 0  # replies too big to read whole (fakekey streams them)

    def _line(self) -> bytes:
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError("connection closed by server")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _skip(self, n: int) -> None:
        while len(self.buf) < n + 2:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError("connection closed by server")
            self.buf += chunk
        self.buf = self.buf[n + 2:]

    def call(self, *args: str) -> None:
        self.sock.sendall(encode_command(*args))
        pending = 1
        while pending:
            line = self._line()
            pending -= 1
            kind, rest = line[:1], line[1:]
            if kind == b"*" and int(rest) > HUGE:
                self._sample_and_leave()
                return
            if kind in (b"$", b"=", b"!") and int(rest) >= 0:
                self._skip(int(rest))
            elif kind in (b"*", b"~", b">") and int(rest) > 0:
                pending += int(rest)
            elif kind == b"%" and int(rest) > 0:
                pending += 2 * int(rest)


    def _sample_and_leave(self) -> None:
        """A reply of billions of elements: read its first STREAM_SAMPLE bytes (they come
        while the watchdog's PINGs are served), then leave and connect again."""
        got = len(self.buf)
        while got < STREAM_SAMPLE:
            got += len(self.sock.recv(1 << 20))
        self.streamed += 1
        self.sock.close()
        self.sock = socket.create_connection(("127.0.0.1", self.port), timeout=120)
        self.buf = b""


def seed(client: RawClient) -> None:
    client.call("SADD", "set", "a", "b", "c")
    client.call("HSET", "hash", "f", "v", "g", "w")
    client.call("ZADD", "z", "1", "m", "2", "n")
    client.call("RPUSH", "list", "a", "b", "a")
    for i in range(2000):
        client.call("SET", f"key:{i}", "v")


class Watchdog(threading.Thread):
    """PINGs every `every` seconds; keeps the worst round trip."""

    def __init__(self, port: int, every: float = 0.005) -> None:
        super().__init__(daemon=True)
        self.client = RawClient("127.0.0.1", port, timeout=120)
        self.every = every
        self.worst = 0.0
        self.pings = 0
        self.stopping = threading.Event()

    def run(self) -> None:
        while not self.stopping.is_set():
            started = time.perf_counter()
            self.client.call("PING")
            self.worst = max(self.worst, time.perf_counter() - started)
            self.pings += 1
            time.sleep(self.every)


def peak_rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="rounds of the battery (5)")
    args = parser.parse_args()
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "fakekey", "--port", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                client = RawClient("127.0.0.1", port, timeout=120)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        seed(client)
        client.close()
        requester = Requester(port)
        rss_before = peak_rss_kb(server.pid)
        watchdog = Watchdog(port)
        watchdog.start()
        sent, slowest, slowest_cmd = 0, 0.0, ""
        for _ in range(args.rounds):
            for request in hostile_requests():
                started = time.perf_counter()
                requester.call(*request)
                took = time.perf_counter() - started
                sent += 1
                if took > slowest:
                    slowest, slowest_cmd = took, " ".join(w[:20] for w in request[:3])
        watchdog.stopping.set()
        watchdog.join()
        print(f"hostile requests sent:     {sent} ({requester.streamed} streamed replies, "
              f"{STREAM_SAMPLE >> 20} MB of each read)")
        print(f"slowest request:           {slowest * 1000:.1f} ms ({slowest_cmd} ...)")
        print(f"worst PING of another client while they ran: {watchdog.worst * 1000:.1f} ms "
              f"({watchdog.pings} PINGs)")
        print(f"server peak RSS:           {peak_rss_kb(server.pid) / 1024:.1f} MB "
              f"(after seeding: {rss_before / 1024:.1f} MB)")
    finally:
        server.terminate()
        server.wait(10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
