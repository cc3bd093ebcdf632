"""Memory: fakekey's bytes per key against Valkey's, and a leak check over a long mixed run.

    .venv/bin/python bench/memory.py                          # both parts (1M elements, 1M requests)
    .venv/bin/python bench/memory.py --part size --elements 1000000
    .venv/bin/python bench/memory.py --part size --elements 200000 --runs 5 --root /tmp/other  # a built checkout
    .venv/bin/python bench/memory.py --part leak --requests 10000000      # the issue's long run
    .venv/bin/python bench/memory.py --part leak --requests 1000000 --count  # live blocks, objects by type
    .venv/bin/python bench/memory.py --part leak --requests 100000 --trace  # where the growth is (slow)

**size**: for each data set (small strings, fields of one hash, 10-field hashes, members of
one sorted set, lists, sets and sorted sets of 10 elements, streams of 10 entries), a fresh fakekey and a fresh valkey-server; the RSS of each (VmRSS from
/proc, fakekey's after a full `gc.collect()`) and Valkey's `used_memory` are read before
and after the load, and the table gives the growth per element (with `--runs N`, each
figure's median over N runs). `--root DIR` runs another checkout's fakekey.

**leak**: one fakekey, driven by threads that mix every family (strings, lists, hashes,
sets, sorted sets, streams with groups, pub/sub, EVAL/EVALSHA/FCALL, MULTI/EXEC, blocking
pops that time out or are woken, connect/disconnect churn with tracking, subscriptions,
blocked and mid-MULTI disconnects, EMQ verbs) over a bounded keyspace, so the data stops
growing after warm-up; fakekey's RSS is sampled every N requests. After warm-up it should
stay flat: the report gives the first, last and highest sample and the least-squares slope.
`--trace` runs fakekey under tracemalloc and diffs a snapshot taken at the end of warm-up
with one taken at the end (both inside the server, after a gc), listing the lines whose
allocations grew most.

fakekey runs as `python bench/memory.py --serve-fakekey <fakekey-server args>`: the server,
with SIGUSR1 = gc.collect() and SIGUSR2 = a tracemalloc snapshot written to a file, each
acknowledged in `$FAKEKEY_MEM_ACK`.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from types import ModuleType
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent


def _load_harness() -> ModuleType:
    """bench/run.py (servers, prefill), loaded once under the name the tests use."""
    if "bench_run" in sys.modules:
        return sys.modules["bench_run"]
    spec = importlib.util.spec_from_file_location("bench_run", BENCH_DIR / "run.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_run"] = module  # dataclasses look their module up while defining
    spec.loader.exec_module(module)
    return module


# --- the fakekey process: gc and tracemalloc on a signal ------------------------------------

ACK_ENV = "FAKEKEY_MEM_ACK"
TRACE_ENV = "FAKEKEY_MEM_TRACE"


def serve_fakekey(argv: list[str]) -> int:
    """Run fakekey-server with the two signal handlers (in this process's main thread: a
    Python signal handler runs between bytecodes, with the loop idle or not)."""
    ack = os.environ.get(ACK_ENV)
    if os.environ.get(TRACE_ENV):
        import tracemalloc

        tracemalloc.start(int(os.environ[TRACE_ENV]))
    done = [0]

    def acknowledge(what: str) -> None:
        done[0] += 1
        if ack:
            Path(ack + ".tmp").write_text(f"{done[0]} {what}")
            os.replace(ack + ".tmp", ack)

    def collect(signum: int, frame: Any) -> None:
        gc.collect()
        acknowledge("gc")

    def snapshot(signum: int, frame: Any) -> None:
        import tracemalloc

        gc.collect()
        path = f"{ack}.snap{done[0] + 1}" + ("" if tracemalloc.is_tracing() else ".json")
        if tracemalloc.is_tracing():
            tracemalloc.take_snapshot().dump(path)
        else:  # without tracemalloc: live blocks and the objects the gc tracks, by type
            gc.unfreeze()  # what fakekey-server set aside at start counts too (memory/collector.py)
            types = Counter(type(o).__qualname__ for o in gc.get_objects())
            Path(path).write_text(json.dumps({"blocks": sys.getallocatedblocks(), "types": types}))
        acknowledge(path)

    signal.signal(signal.SIGUSR1, collect)
    signal.signal(signal.SIGUSR2, snapshot)
    from fakekey.cli import main

    return main(argv)


@dataclass
class FakekeyProcess:
    """fakekey started by `fakekey_process`: its port, pid and the signal acknowledgements."""

    port: int
    pid: int
    ack: Path
    acks: int = 0

    def signal(self, signum: int, timeout: float = 120.0) -> str:
        """Send SIGUSR1/SIGUSR2 and wait for the handler's acknowledgement (what it did)."""
        self.acks += 1
        os.kill(self.pid, signum)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError, ValueError):
                count, what = self.ack.read_text().split(" ", 1)
                if int(count) >= self.acks:
                    return what
            time.sleep(0.01)
        raise RuntimeError("fakekey did not acknowledge the signal")

    def gc(self) -> None:
        self.signal(signal.SIGUSR1)

    def snapshot(self) -> str:
        return self.signal(signal.SIGUSR2)


@contextlib.contextmanager
def fakekey_process(trace_frames: int = 0, root: Path | None = None) -> Iterator[FakekeyProcess]:
    """fakekey-server in a process of its own; `root`: another checkout's fakekey (its
    directory first on PYTHONPATH; build it first to measure it compiled)."""
    harness = _load_harness()
    port = harness.free_port()
    with tempfile.TemporaryDirectory(prefix="fakekey-mem-") as tmp, tempfile.TemporaryFile() as log:
        env = dict(os.environ, **{ACK_ENV: str(Path(tmp) / "ack")})
        if trace_frames:
            env[TRACE_ENV] = str(trace_frames)
        if root is not None:
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))
        proc = subprocess.Popen(
            [sys.executable, __file__, "--serve-fakekey", "--port", str(port), "--bind", "127.0.0.1"],
            stdout=log, stderr=subprocess.STDOUT, env=env, cwd=root,
        )
        try:
            try:  # slow to start under tracemalloc on a busy machine
                harness.wait_for_ping("127.0.0.1", port, 120, lambda: proc.poll() is None)
            except RuntimeError:
                log.seek(0)
                raise RuntimeError(f"fakekey did not start:\n{log.read().decode(errors='replace')}") from None
            yield FakekeyProcess(port, proc.pid, Path(tmp) / "ack")
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


def info_field(port: int, name: str, section: str = "memory") -> int:
    harness = _load_harness()
    text = harness.call(harness.Endpoint("", "127.0.0.1", port), "INFO", section)
    for line in text.decode().splitlines():
        if line.startswith(name + ":"):
            return int(line.split(":", 1)[1])
    raise RuntimeError(f"INFO memory has no {name}")


# --- part 1: bytes per element ---------------------------------------------------------------


@dataclass(frozen=True)
class DataSet:
    """What one load builds: `commands(n)` yields the commands, `elements` what a byte is
    counted per (keys, fields or members) and `keys` the keys it makes."""

    name: str
    unit: str
    build: Callable[[int], Iterator[list[Any]]] = field(repr=False)
    keys: Callable[[int], int] = field(repr=False)


def _strings(n: int) -> Iterator[list[Any]]:
    # one SET per key, as most strings arrive: each command's clock reading (the key's
    # access time) is then an int of its own, where MSET would share one
    for i in range(n):
        yield ["SET", b"key:%08d" % i, b"val:%08d" % i]


def _hash_fields(n: int) -> Iterator[list[Any]]:
    for start in range(0, n, 500):
        args: list[Any] = ["HSET", "bench:hash"]
        for i in range(start, min(n, start + 500)):
            args += [b"f:%08d" % i, b"v:%08d" % i]
        yield args


def _small_hashes(n: int) -> Iterator[list[Any]]:
    for i in range(n // 10):
        args: list[Any] = ["HSET", b"h:%07d" % i]
        for f in range(10):
            args += [b"field%d" % f, b"v:%08d" % (i * 10 + f)]
        yield args


def _zset_members(n: int) -> Iterator[list[Any]]:
    for start in range(0, n, 500):
        args: list[Any] = ["ZADD", "bench:zset"]
        for i in range(start, min(n, start + 500)):
            args += [i, b"m:%08d" % i]
        yield args


def _small_lists(n: int) -> Iterator[list[Any]]:
    for i in range(n // 10):
        yield ["RPUSH", b"l:%07d" % i, *[b"v:%08d" % (i * 10 + e) for e in range(10)]]


def _small_sets(n: int) -> Iterator[list[Any]]:
    for i in range(n // 10):
        yield ["SADD", b"s:%07d" % i, *[b"m:%08d" % (i * 10 + e) for e in range(10)]]


def _small_zsets(n: int) -> Iterator[list[Any]]:
    for i in range(n // 10):
        args: list[Any] = ["ZADD", b"z:%07d" % i]
        for e in range(10):
            args += [i * 10 + e, b"m:%08d" % (i * 10 + e)]
        yield args


def _small_streams(n: int) -> Iterator[list[Any]]:
    # one field a entry, ids given (ms = the key's number) so that both servers hold the same
    for i in range(n // 10):
        for e in range(10):
            yield ["XADD", b"x:%07d" % i, b"%d-%d" % (i + 1, e + 1), "f", b"v:%08d" % (i * 10 + e)]


DATA_SETS = (
    DataSet("strings", "key", _strings, lambda n: n),
    DataSet("hash fields (1 hash)", "field", _hash_fields, lambda n: 1),
    DataSet("hashes of 10 fields", "field", _small_hashes, lambda n: n // 10),
    DataSet("zset members (1 zset)", "member", _zset_members, lambda n: 1),
    DataSet("lists of 10 elements", "element", _small_lists, lambda n: n // 10),
    DataSet("sets of 10 members", "member", _small_sets, lambda n: n // 10),
    DataSet("zsets of 10 members", "member", _small_zsets, lambda n: n // 10),
    DataSet("streams of 10 entries", "entry", _small_streams, lambda n: n // 10),
)


@dataclass
class SizeResult:
    data_set: str
    unit: str
    elements: int
    keys: int
    fk_rss: float  # bytes per element of fakekey's RSS growth
    fk_used: float  # fakekey's own used_memory estimate, per element
    vk_used: float
    vk_rss: float
    fk_load_s: float
    vk_load_s: float


def settle(gc_fakekey: Callable[[], None] | None) -> None:
    if gc_fakekey is not None:
        gc_fakekey()
    time.sleep(0.3)


def load_and_measure(port: int, pid: int, data: DataSet, elements: int,
                     gc_fakekey: Callable[[], None] | None) -> tuple[float, float, float]:
    """(RSS growth per element, used_memory growth per element, load seconds)."""
    harness = _load_harness()
    endpoint = harness.Endpoint("", "127.0.0.1", port)
    settle(gc_fakekey)
    rss0, used0 = rss_bytes(pid), info_field(port, "used_memory")
    started = time.perf_counter()
    harness.prefill(endpoint, (harness.encode_command(*c) for c in data.build(elements)), batch=100)
    loaded = time.perf_counter() - started
    settle(gc_fakekey)
    rss1, used1 = rss_bytes(pid), info_field(port, "used_memory")
    return (rss1 - rss0) / elements, (used1 - used0) / elements, loaded


def measure_size(data: DataSet, elements: int, root: Path | None = None) -> SizeResult:
    harness = _load_harness()
    with fakekey_process(root=root) as fk:
        fk_rss, fk_used, fk_s = load_and_measure(fk.port, fk.pid, data, elements, fk.gc)
    with harness.valkey_process() as vk:
        vk_rss, vk_used, vk_s = load_and_measure(vk.port, vk.pid, data, elements, None)
    return SizeResult(data.name, data.unit, elements, data.keys(elements), fk_rss, fk_used,
                      vk_used, vk_rss, fk_s, vk_s)


def median_result(runs: list[SizeResult]) -> SizeResult:
    """Each figure's median over the runs of one data set."""
    def median(values: list[float]) -> float:
        ordered = sorted(values)
        middle = len(ordered) // 2
        return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2

    first = runs[0]
    figures = {name: median([getattr(r, name) for r in runs])
               for name in ("fk_rss", "fk_used", "vk_used", "vk_rss", "fk_load_s", "vk_load_s")}
    return SizeResult(first.data_set, first.unit, first.elements, first.keys, **figures)


def plural(unit: str) -> str:
    return unit[:-1] + "ies" if unit.endswith("y") and unit[-2:-1] not in "aeiou" else unit + "s"


def size_table(results: list[SizeResult]) -> str:
    harness = _load_harness()
    header = ("data set", "elements", "fk RSS B/el", "vk used B/el", "vk RSS B/el",
              "fk/vk used", "fk/vk RSS", "fk est B/el", "fk load s", "vk load s")
    rows = [(r.data_set, f"{r.elements:,} {plural(r.unit)}", f"{r.fk_rss:.1f}", f"{r.vk_used:.1f}",
             f"{r.vk_rss:.1f}", f"{r.fk_rss / r.vk_used:.2f}" if r.vk_used else "-",
             f"{r.fk_rss / r.vk_rss:.2f}" if r.vk_rss else "-", f"{r.fk_used:.1f}",
             f"{r.fk_load_s:.1f}", f"{r.vk_load_s:.1f}") for r in results]
    return harness.format_table(rows, header)


# --- part 2: the leak check ------------------------------------------------------------------

SCRIPT = "return redis.call('INCR', KEYS[1])"
# an error inside a script, caught by pcall
SCRIPT_ERROR = "local r = redis.pcall('HSET', KEYS[1]) return r['err'] and 1 or 0"
LIBRARY = ("#!lua name=memlib\nredis.register_function('mem_incr', function(keys, args) "
           "return redis.call('INCR', keys[1]) end)")
VARIANTS = 64  # rounds differ by key and field suffix; data stays within 64 of each


def encode(*args: Any) -> bytes:
    return _load_harness().encode_command(*args)


def mix_round(w: int, v: int, workers: int, sha: str) -> list[bytes]:
    """One pipelined round of worker `w`, variant `v`: every family, bounded data."""
    n = (w + 1) % workers
    old = (v + VARIANTS // 2) % VARIANTS
    s, x = f"s:{w}:{v}", f"x:{w}"
    cmds: list[tuple[Any, ...]] = [
        ("SET", s, "value"), ("GET", s), ("APPEND", s, "more"), ("STRLEN", s), ("INCR", f"n:{w}"),
        ("SET", f"e:{w}:{v}", "x", "PX", 5), ("GETDEL", f"s:{w}:{old}"), ("MSET", f"m:{w}:a", v, f"m:{w}:b", v),
        ("MGET", f"m:{w}:a", f"m:{w}:b", f"e:{w}:{old}"), ("EXPIRE", s, 100), ("TTL", s), ("TYPE", s),
        ("LPUSH", f"l:{w}", "a", "b", "c"), ("LTRIM", f"l:{w}", 0, 99), ("LRANGE", f"l:{w}", 0, 9),
        ("RPOP", f"l:{w}"), ("LMOVE", f"l:{w}", f"l2:{w}", "LEFT", "RIGHT"), ("LTRIM", f"l2:{w}", 0, 9),
        ("HSET", f"h:{w}", f"f{v}", "value", "n", v), ("HGET", f"h:{w}", f"f{v}"), ("HINCRBY", f"h:{w}", "c", 1),
        ("HDEL", f"h:{w}", f"f{old}"), ("HGETALL", f"h:{w}:small"), ("HSET", f"h:{w}:small", "a", 1, "b", v),
        ("HSCAN", f"h:{w}", 0, "COUNT", 10),
        ("SADD", f"st:{w}", f"m{v}"), ("SREM", f"st:{w}", f"m{old}"), ("SMEMBERS", f"st:{w}"),
        ("SINTER", f"st:{w}", f"st:{n}"), ("SUNIONSTORE", f"su:{w}", f"st:{w}", f"st:{n}"),
        ("ZADD", f"z:{w}", v, f"m{v}"), ("ZINCRBY", f"z:{w}", 1, f"m{v}"), ("ZREM", f"z:{w}", f"m{old}"),
        ("ZRANGE", f"z:{w}", 0, -1, "WITHSCORES"), ("ZRANGE", f"z:{w}", 10, "+inf", "BYSCORE", "LIMIT", 0, 5),
        ("ZUNIONSTORE", f"zu:{w}", 2, f"z:{w}", f"z:{n}"), ("ZRANK", f"z:{w}", f"m{v}"),
        ("XADD", x, "MAXLEN", "~", 100, "*", "f", v), ("XADD", x, "*", "g", v),
        ("XREADGROUP", "GROUP", "g", f"c{v % 4}", "COUNT", 5, "STREAMS", x, ">"),
        ("XAUTOCLAIM", x, "g", "c9", 0, "0-0", "COUNT", 5), ("XPENDING", x, "g"), ("XRANGE", x, "-", "+", "COUNT", 3),
        ("XREAD", "COUNT", 2, "STREAMS", x, "0-0"), ("XLEN", x), ("XINFO", "GROUPS", x),
        ("PUBLISH", f"ch:{v % 4}", "message"), ("PUBSUB", "NUMSUB", "ch:0"),
        ("EVAL", SCRIPT, 1, f"sc:{w}"), ("EVALSHA", sha, 1, f"sc:{w}"), ("FCALL", "mem_incr", 1, f"sc:{w}"),
        ("EVAL", SCRIPT_ERROR, 1, f"sc:{w}:h"), ("EVAL_RO", "return redis.call('GET', KEYS[1])", 1, s),
        ("MULTI",), ("INCR", f"t:{w}"), ("LPUSH", f"tl:{w}", v), ("LTRIM", f"tl:{w}", 0, 4), ("EXEC",),
        ("WATCH", f"t:{w}"), ("MULTI",), ("GET", f"t:{w}"), ("EXEC",),
        ("MULTI",), ("SET", f"t:{w}", 0), ("DISCARD",),
        ("LPUSH", f"bl:{n}", "x"), ("LTRIM", f"bl:{n}", 0, 4),
        ("EXISTS", s, f"l:{w}"), ("SCAN", 0, "MATCH", f"s:{w}:*", "COUNT", 20), ("OBJECT", "ENCODING", f"z:{w}"),
        ("MEMORY", "USAGE", f"h:{w}"), ("DBSIZE",), ("PING",),
    ]
    if v == 0:  # a fresh group now and then, so its PEL (XREADGROUP without XACK) stays bounded
        cmds[:0] = [("XADD", x, "*", "f", v), ("XGROUP", "DESTROY", x, "g"), ("XGROUP", "CREATE", x, "g", "$")]
    blocking = (  # one wait per round, with a 1 ms timeout: some time out, some are served
        ("BLPOP", f"bl:{w}", 0.001), ("BZPOPMIN", f"bz:{w}", 0.001),
        ("BLMOVE", f"bl:{w}", f"l2:{w}", "LEFT", "LEFT", 0.001),
        ("XREAD", "BLOCK", 1, "STREAMS", f"xb:{w}", "$"),
        ("XREADGROUP", "GROUP", "g", "cb", "BLOCK", 1, "COUNT", 1, "STREAMS", x, ">"),
    )
    cmds.append(blocking[v % len(blocking)])
    return [encode(*c) for c in cmds]


class Tally:
    """Requests sent and unexpected error replies, shared by the driver threads."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.errors: Counter[str] = Counter()
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.failure: BaseException | None = None

    def add(self, name: str, n: int) -> None:
        self.counts[name] = self.counts.get(name, 0) + n  # one writer per name

    def total(self) -> int:
        return sum(list(self.counts.values()))

    def error(self, text: str) -> None:
        with self.lock:
            self.errors[text[:80]] += 1


class Conn:
    """A socket with hiredis' reader: replies come back parsed, errors as ReplyError."""

    def __init__(self, port: int, timeout: float = 30.0) -> None:
        import hiredis

        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.reader = hiredis.Reader()
        self.error_type = hiredis.ReplyError

    def send(self, payload: bytes) -> None:
        self.sock.sendall(payload)

    def reply(self) -> Any:
        while True:
            got = self.reader.gets()
            if got is not False:
                return got
            data = self.sock.recv(1 << 16)
            if not data:
                raise ConnectionError("server closed the connection")
            self.reader.feed(data)

    def replies(self, n: int, tally: Tally) -> list[Any]:
        out = [self.reply() for _ in range(n)]
        for got in out:
            if isinstance(got, self.error_type):
                tally.error(str(got))
            elif isinstance(got, list):  # EXEC's replies
                for inner in got:
                    if isinstance(inner, self.error_type):
                        tally.error(str(inner))
        return out

    def close(self) -> None:
        self.sock.close()


def _guarded(fn: Callable[..., None]) -> Callable[..., None]:
    def run(tally: Tally, *args: Any) -> None:
        try:
            fn(tally, *args)
        except BaseException as err:  # reported by the main thread
            if not tally.stop.is_set():
                tally.failure = err
                tally.stop.set()
    return run


@_guarded
def mix_worker(tally: Tally, port: int, w: int, workers: int, sha: str) -> None:
    rounds = [mix_round(w, v, workers, sha) for v in range(VARIANTS)]
    blobs = [(b"".join(r), len(r)) for r in rounds]
    conn = Conn(port)
    name = f"mix{w}"
    i = 0
    while not tally.stop.is_set():
        blob, n = blobs[i % VARIANTS]
        conn.send(blob)
        conn.replies(n, tally)
        tally.add(name, n)
        i += 1
    conn.close()


@_guarded
def subscriber(tally: Tally, port: int) -> None:
    """Reads every message PUBLISH sends (discarding the bytes), so no output buffer grows."""
    conn = Conn(port)
    conn.send(encode("SUBSCRIBE", "ch:0", "ch:1", "ch:2", "ch:3") + encode("PSUBSCRIBE", "ch:*"))
    conn.sock.settimeout(0.2)
    while not tally.stop.is_set():
        with contextlib.suppress(TimeoutError):
            if not conn.sock.recv(1 << 18):
                raise ConnectionError("subscriber: server closed the connection")
    conn.close()


def churn_session(port: int, i: int, tally: Tally) -> int:
    """One short connection that leaves in a different way each time; the commands sent."""
    conn = Conn(port)
    mark = f"end:{i}"
    kind = i % 4
    cmds: list[tuple[Any, ...]]
    if kind == 0:  # leaves in the middle of a transaction, holding a WATCH
        cmds = [("CLIENT", "SETNAME", f"churn{i}"), ("WATCH", "t:0", f"s:0:{i % VARIANTS}"),
                ("ECHO", mark), ("MULTI",), ("SET", "churn", i)]
    elif kind == 1:  # leaves subscribed (RESP2)
        cmds = [("SUBSCRIBE", "ch:0", f"churn:{i % 16}"), ("PSUBSCRIBE", "churn:*"), ("PING", mark)]
    elif kind == 2:  # RESP3, tracking, subscribed, and leaves while blocked
        cmds = [("HELLO", 3), ("CLIENT", "TRACKING", "ON"), ("GET", f"s:0:{i % VARIANTS}"),
                ("SUBSCRIBE", "ch:1"), ("ECHO", mark), ("BLPOP", f"never:{i % 8}", 10)]
    else:  # tracking with a prefix (broadcast), a script, then QUIT
        cmds = [("HELLO", 3), ("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "s:1:"),
                ("EVAL", SCRIPT, 1, "sc:churn"), ("ECHO", mark), ("QUIT",)]
    conn.send(b"".join(encode(*c) for c in cmds))
    want = mark.encode()
    while True:
        got = conn.reply()
        if got == want or (isinstance(got, list) and want in got):
            break
        if isinstance(got, conn.error_type):
            tally.error(str(got))
    if kind == 3:
        conn.reply()  # QUIT's +OK, then the server closes
    conn.close()
    return len(cmds)


@_guarded
def churner(tally: Tally, port: int) -> None:
    i = 0
    while not tally.stop.is_set():
        tally.add("churn", churn_session(port, i, tally))
        i += 1


@_guarded
def emq_worker(tally: Tally, port: int, batch: int) -> None:
    """Jobs through ENQUEUE -> CLAIM -> COMPLETE (one FAILed to the schedule and PROMOTEd
    back, one RELEASEd, which the stalled check recovers once its 1 s lease is over; rows
    REMOVEd once dead), with the bus verbs and the sweeps beside them."""
    p = "emq:{leak}:"
    conn = Conn(port)
    job = 0
    dead: list[bytes] = []
    while not tally.stop.is_set():
        ids = [f"JOB{job + k:012d}" for k in range(batch)]
        job += batch
        sent = [encode("EMQ.ENQUEUE", 3, p + j, p + "pending", p + "schedule", "payload", 0, k % 3)
                for k, j in enumerate(ids)]
        # more claims than jobs enqueued: the RELEASEd and re-PROMOTEd jobs come back to
        # pending too, and would pile up (growth of data, not a leak); the rest answer []
        sent += [encode("EMQ.CLAIM", 2, p + "pending", p + "active", 1_000)] * (batch + 4)
        conn.send(b"".join(sent))
        leases = [r for r in conn.replies(len(sent), tally)[batch:] if isinstance(r, list) and r]
        settle = [encode("EMQ.REMOVE", 1, row) for row in dead]  # a dead row stays until removed
        for k, (jid, _payload, _attempts, fence) in enumerate(leases):
            row = p.encode() + jid
            if k == 0:
                settle.append(encode("EMQ.FAIL", 4, row, p + "active", p + "schedule", p + "dead",
                                     fence, 0, "boom"))
            elif k == 1:
                settle.append(encode("EMQ.RELEASE", 2, row, p + "active", fence))
            else:
                settle.append(encode("EMQ.COMPLETE", 2, row, p + "active", fence))
        settle += [
            encode("EMQ.PROMOTE", 3, p + "schedule", p + "pending", p, 100),
            encode("EMQ.STALLED.CHECK", 4, p + "active", p + "pending", p + "dead", p, 100, 3),
            encode("EMQ.STATS", 1, p + "meta"),
            encode("EMQ.PUBLISH", 1, p + "stream", 100, "id", job, "type", "t", "data", "d"),
            encode("EMQ.FAILURES.INCR", 1, f"{p}failures:{job}-0", 20),
            encode("ZRANGE", p + "dead", 0, 9),
        ]
        conn.send(b"".join(settle))
        replies = conn.replies(len(settle), tally)
        dead = [p.encode() + jid for jid in replies[-1]]
        tally.add("emq", len(sent) + len(settle))
    conn.close()


def prepare(port: int) -> str:
    """Load the script and library every round calls; the sha of SCRIPT."""
    harness = _load_harness()
    endpoint = harness.Endpoint("", "127.0.0.1", port)
    sha = harness.call(endpoint, "SCRIPT", "LOAD", SCRIPT).decode()
    harness.call(endpoint, "FUNCTION", "LOAD", "REPLACE", LIBRARY)
    return sha


@dataclass
class LeakResult:
    requests: int
    seconds: float
    warmup: int
    samples: list[tuple[int, int]]  # (requests so far, RSS bytes)
    first: int = 0  # RSS at the end of warm-up
    last: int = 0
    peak: int = 0
    slope: float = 0.0  # bytes of RSS per million requests after warm-up (least squares)
    errors: dict[str, int] = field(default_factory=dict)
    per_thread: dict[str, int] = field(default_factory=dict)
    trace: list[str] = field(default_factory=list)

    @property
    def growth(self) -> int:
        return self.last - self.first

    def summarize(self) -> None:
        after = [(n, rss) for n, rss in self.samples if n >= self.warmup]
        if not after:
            return
        self.first, self.last = after[0][1], after[-1][1]
        self.peak = max(rss for _, rss in after)
        self.slope = least_squares_slope(after) * 1e6


def least_squares_slope(points: Sequence[tuple[int, int]]) -> float:
    if len(points) < 2:
        return 0.0
    mx = sum(x for x, _ in points) / len(points)
    my = sum(y for _, y in points) / len(points)
    den = sum((x - mx) ** 2 for x, _ in points)
    return sum((x - mx) * (y - my) for x, y in points) / den if den else 0.0


def leak_check(port: int, pid: int, requests: int, every: int, warmup: int, workers: int = 3,
               snapshot: Callable[[], str] | None = None, progress: bool = False) -> LeakResult:
    """Drive the server with the mix until `requests` have been sent; sample its RSS every
    `every` requests. `snapshot` (tracemalloc in the server) is called at the end of warm-up
    and at the end; their paths land in `trace`."""
    sha = prepare(port)
    tally = Tally()
    threads = [threading.Thread(target=mix_worker, args=(tally, port, w, workers, sha), daemon=True)
               for w in range(workers)]
    threads += [threading.Thread(target=subscriber, args=(tally, port), daemon=True),
                threading.Thread(target=churner, args=(tally, port), daemon=True),
                threading.Thread(target=emq_worker, args=(tally, port, 16), daemon=True)]
    result = LeakResult(requests, 0.0, warmup, [])
    started = time.perf_counter()
    for t in threads:
        t.start()
    next_sample, traced = every, False
    try:
        while not tally.stop.is_set():
            time.sleep(0.02)
            done = tally.total()
            if done >= next_sample:
                result.samples.append((done, rss_bytes(pid)))
                next_sample = (done // every + 1) * every
                if progress and len(result.samples) % 10 == 0:
                    print(f"  {done:>12,} requests  RSS {result.samples[-1][1] / 2**20:8.1f} MiB",
                          file=sys.stderr, flush=True)
            if snapshot is not None and not traced and done >= warmup:
                result.trace.append(snapshot())
                traced = True
            if done >= requests:
                break
    finally:
        tally.stop.set()
        for t in threads:
            t.join(15)
    if tally.failure is not None:
        raise RuntimeError(f"a driver thread failed: {tally.failure!r}") from tally.failure
    result.seconds = time.perf_counter() - started
    result.requests = tally.total()
    result.samples.append((result.requests, rss_bytes(pid)))
    if snapshot is not None:
        wait_for_hangups(port)
        result.trace.append(snapshot())
    result.errors = dict(tally.errors)
    result.per_thread = dict(tally.counts)
    result.summarize()
    return result


def wait_for_hangups(port: int, timeout: float = 10.0) -> None:
    """Until the server has seen every driver leave (only the asking connection is left)."""
    deadline = time.monotonic() + timeout
    while info_field(port, "connected_clients", "clients") > 1 and time.monotonic() < deadline:
        time.sleep(0.05)


def diff_snapshots(first: str, last: str, top: int = 15) -> list[str]:
    """The lines whose live allocations grew most between two tracemalloc snapshots."""
    import tracemalloc

    if not tracemalloc.is_tracing() and first.endswith(".json"):
        return diff_counts(first, last, top)
    before, after = tracemalloc.Snapshot.load(first), tracemalloc.Snapshot.load(last)
    stats = after.compare_to(before, "traceback")
    total = sum(stat.size_diff for stat in stats)
    lines = [f"{total:+,} B traced in all"]
    for stat in stats[:top]:
        frames = " <- ".join(f"{_short(f.filename)}:{f.lineno}" for f in reversed(stat.traceback[-4:]))
        lines.append(f"{stat.size_diff:+,} B  {stat.count_diff:+,} blocks  {frames}")
    return lines


def diff_counts(first: str, last: str, top: int) -> list[str]:
    """Without tracemalloc: the change in live blocks and in gc-tracked objects by type."""
    before, after = json.loads(Path(first).read_text()), json.loads(Path(last).read_text())
    types = Counter(after["types"])
    types.subtract(before["types"])
    lines = [f"{after['blocks'] - before['blocks']:+,} live Python blocks"]
    for name, change in sorted(types.items(), key=lambda kv: -abs(kv[1]))[:top]:
        if change:
            lines.append(f"{change:+,} {name} objects")
    return lines


def _short(filename: str) -> str:
    """A path from the package (fakekey/...) or the bare name."""
    parts = Path(filename).parts
    return "/".join(parts[parts.index("fakekey"):]) if "fakekey" in parts else parts[-1]


def leak_report(result: LeakResult) -> str:
    mib = 2**20
    lines = [
        f"leak check: {result.requests:,} requests in {result.seconds:.0f} s "
        f"({result.requests / result.seconds:,.0f}/s), warm-up {result.warmup:,}, "
        f"{len(result.samples)} RSS samples",
        f"  RSS after warm-up: first {result.first / mib:.1f} MiB, last {result.last / mib:.1f} MiB, "
        f"max {result.peak / mib:.1f} MiB, growth {result.growth / 1024:+,.0f} KiB, "
        f"slope {result.slope / 1024:+,.1f} KiB per million requests",
        "  requests per driver: " + ", ".join(f"{k} {v:,}" for k, v in sorted(result.per_thread.items())),
    ]
    if result.errors:
        lines.append("  unexpected error replies: " + "; ".join(f"{n} x {e}" for e, n in result.errors.items()))
    if result.trace:
        lines.append("  inside the server, end of warm-up -> end (after a gc):")
        lines += [f"    {line}" for line in result.trace]
    return "\n".join(lines)


# --- main ------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--part", choices=("size", "leak", "both"), default="both")
    ap.add_argument("--elements", type=int, default=1_000_000, help="elements per data set (size)")
    ap.add_argument("--data", default="", help="comma list of data-set numbers (1-8) to run (size)")
    ap.add_argument("--requests", "-n", type=int, default=1_000_000, help="requests of the leak check")
    ap.add_argument("--every", type=int, default=0, help="sample RSS every N requests (default requests/100)")
    ap.add_argument("--warmup", type=int, default=0, help="warm-up requests (default 20%% of --requests)")
    ap.add_argument("--workers", type=int, default=3, help="pipelined mix connections")
    ap.add_argument("--trace", action="store_true", help="run fakekey under tracemalloc and diff snapshots")
    ap.add_argument("--count", action="store_true",
                    help="diff live blocks and objects by type (cheap: no tracemalloc)")
    ap.add_argument("--json", type=Path, default=None, help="where to write the results")
    ap.add_argument("--runs", type=int, default=1, help="runs of each data set; the table gives medians (size)")
    ap.add_argument("--root", type=Path, default=None,
                    help="measure another checkout's fakekey (build it first to measure it compiled)")
    return ap.parse_args(argv)


def run_size(args: argparse.Namespace) -> list[SizeResult]:
    picked = [int(x) - 1 for x in args.data.split(",") if x] or range(len(DATA_SETS))
    results = []
    for index in picked:
        data = DATA_SETS[index]
        runs = []
        for run in range(args.runs):
            print(f"loading {args.elements:,} {plural(data.unit)}: {data.name} (run {run + 1})",
                  file=sys.stderr, flush=True)
            runs.append(measure_size(data, args.elements, args.root))
        results.append(median_result(runs))
    where = f"fakekey from {args.root.resolve()}; " if args.root else ""
    print(f"\nbytes per element ({args.elements:,} elements, median of {args.runs}; {where}RSS after a gc; "
          "fakekey RSS vs Valkey)")
    print(size_table(results))
    return results


def run_leak(args: argparse.Namespace) -> LeakResult:
    every = args.every or max(1_000, args.requests // 100)
    warmup = args.warmup or args.requests // 5
    with fakekey_process(trace_frames=8 if args.trace else 0, root=args.root) as fk:
        result = leak_check(fk.port, fk.pid, args.requests, every, warmup, args.workers,
                            snapshot=fk.snapshot if args.trace or args.count else None, progress=True)
        if len(result.trace) == 2:
            result.trace = diff_snapshots(*result.trace)
    print(leak_report(result))
    return result


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    out: dict[str, Any] = {"when": datetime.now().isoformat(timespec="seconds")}
    if args.part in ("size", "both"):
        out["size"] = [asdict(r) for r in run_size(args)]
    if args.part in ("leak", "both"):
        result = run_leak(args)
        out["leak"] = asdict(result) | {"growth": result.growth}
    path = args.json or BENCH_DIR / "results" / f"memory-{datetime.now():%Y%m%d-%H%M%S}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=1))
    print(f"results: {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve-fakekey"]:
        sys.exit(serve_fakekey(sys.argv[2:]))
    sys.exit(main())
