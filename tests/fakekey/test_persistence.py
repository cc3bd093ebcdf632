"""Persistence, end to end: fakekey-server as a process, killed and restarted.

The crash test: several clients write every data type (strings with TTLs, lists, sets,
sorted sets, hashes with field TTLs, streams with a consumer group, functions, scripts
with a random pop, transactions) under `appendfsync always`; the server gets SIGKILL at
a random moment; after a restart every acknowledged write is there (and the one in
flight at most once). Quick in CI; FAKEKEY_PERSIST_RUNS=N or HYPOTHESIS_PROFILE=deep
runs many more.
"""

from __future__ import annotations

import os
import random
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

SERVER = [sys.executable, "-m", "fakekey"]
READY = re.compile(r"fakekey ready port=(\d+) pid=(\d+)")
LIBRARY = ("#!lua name=plib\n"
           "redis.register_function('bump', function(keys, args) return redis.call('incr', keys[1]) end)")
POP_SCRIPT = "redis.call('incr', KEYS[1]) return redis.call('spop', KEYS[2])"
DEEP = os.environ.get("HYPOTHESIS_PROFILE") == "deep"
NO_RETRY = Retry(NoBackoff(), 0)  # a killed server is a failure to see, not to retry
RUNS = int(os.environ.get("FAKEKEY_PERSIST_RUNS", "40" if DEEP else "3"))


class Proc:
    def __init__(self, directory: Path, *args: str) -> None:
        self.proc = subprocess.Popen(
            [*SERVER, "--port", "0", "--dir", str(directory), *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"})
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            match = READY.match(line)
            if match:
                self.port = int(match.group(1))
                break
        else:
            raise AssertionError(f"no ready line: {self.proc.wait(10)} {self.proc.stderr.read()}")
        threading.Thread(target=self.proc.stdout.read, daemon=True).start()  # drain the log

    def client(self) -> redis.Redis:
        return redis.Redis(port=self.port, socket_timeout=10, retry=NO_RETRY)

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self, sig: int = signal.SIGTERM) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        return self.proc.wait(20)


def shutdown(server: Proc, *flags: str) -> None:
    """SHUTDOWN, which answers by closing the connection (redis-py would retry)."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(" ".join(["SHUTDOWN", *flags]).encode() + b"\r\n")
        assert sock.recv(100) == b""
    assert server.proc.wait(20) == 0


def refused(directory: Path, *args: str) -> str:
    """Start a server that must refuse to start: its stderr."""
    run = subprocess.run([*SERVER, "--port", "0", "--dir", str(directory), *args],
                         capture_output=True, text=True, timeout=30)
    assert run.returncode == 1, run.stdout
    return run.stderr


# --- the keyspace in a comparable form ----------------------------------------------------------


def canon(r: redis.Redis, key: bytes) -> Any:
    """A key's whole content (and whether it has a deadline), independent of encodings."""
    kind = r.type(key).decode()
    ttl = r.pexpiretime(key)
    if kind == "string":
        body: Any = r.get(key)
    elif kind == "list":
        body = r.lrange(key, 0, -1)
    elif kind == "set":
        body = sorted(r.smembers(key))
    elif kind == "zset":
        body = r.zrange(key, 0, -1, withscores=True)
    elif kind == "hash":
        fields = r.hgetall(key)
        times = r.execute_command("HPEXPIRETIME", key, "FIELDS", len(fields), *fields) if fields else []
        body = sorted((f, v, t) for (f, v), t in zip(fields.items(), times, strict=True))
    elif kind == "stream":
        groups = []
        for group in r.xinfo_groups(key):
            pending = r.xpending_range(key, group["name"], "-", "+", 10**6)
            groups.append((group["name"], group["last-delivered-id"], group["entries-read"],
                           sorted(c["name"] for c in r.xinfo_consumers(key, group["name"])),
                           [(p["message_id"], p["consumer"], p["times_delivered"]) for p in pending]))
        body = (r.xrange(key), groups, r.xinfo_stream(key)["max-deleted-entry-id"])
    else:
        body = kind
    return kind, body, ttl


def libraries(r: redis.Redis, withcode: bool = False) -> list[dict[bytes, Any]]:
    return [dict(zip(lib[0::2], lib[1::2], strict=True)) for lib in r.function_list(withcode=withcode)]


def everything(r: redis.Redis) -> dict[Any, Any]:
    out: dict[Any, Any] = {}
    for db in range(3):
        r.execute_command("SELECT", db)
        for key in r.keys("*"):
            out[(db, key)] = canon(r, key)
    r.execute_command("SELECT", 0)
    out["functions"] = sorted((lib[b"library_name"], lib[b"library_code"])
                              for lib in libraries(r, withcode=True))
    return out


def fill(r: redis.Redis) -> None:
    """Some of every type, in several databases, with deadlines."""
    r.set("s", "v")
    r.set("n", 10, px=10**7)
    r.append("raw", "abc")
    r.rpush("l", *range(50))
    r.sadd("ints", *range(20))
    r.sadd("strs", "a", "b", "c")
    r.zadd("z", {"a": 1.5, "b": -0.0, "c": float("inf")})
    r.hset("h", mapping={f"f{i}": i for i in range(10)})
    r.execute_command("HPEXPIRE", "h", 10**7, "FIELDS", 2, "f1", "f2")
    for i in range(30):
        r.xadd("x", {"i": i})
    r.xgroup_create("x", "g", id="0")
    r.xreadgroup("g", "alice", {"x": ">"}, count=5)
    r.xreadgroup("g", "bob", {"x": ">"}, count=3)
    r.xack("x", "g", r.xrange("x", count=1)[0][0])
    r.xdel("x", r.xrange("x")[10][0])
    r.xgroup_create("x", "g2", id="$")
    r.function_load(LIBRARY)
    r.execute_command("SELECT", 2)
    r.set("other-db", "yes")
    r.hset("h2", "a", "b")
    r.execute_command("SELECT", 0)
    r.set("gone-soon", "x", px=1)
    time.sleep(0.01)  # gone before anyone looks


# --- clean shutdowns ------------------------------------------------------------------------------


def test_shutdown_with_a_save_rule_keeps_everything(tmp_path: Path) -> None:
    server = Proc(tmp_path, "--save", "3600 1")
    r = server.client()
    fill(r)
    before = everything(r)
    shutdown(server)
    assert (tmp_path / "dump.rdb").exists()
    again = Proc(tmp_path, "--save", "3600 1")
    assert everything(again.client()) == before
    info = again.client().info("persistence")
    assert info["rdb_last_load_keys_loaded"] == len(before) - 1
    again.stop()


def test_sigterm_saves_when_a_save_rule_is_set_and_nosave_does_not(tmp_path: Path) -> None:
    server = Proc(tmp_path, "--save", "3600 1")
    server.client().set("k", "v")
    assert server.stop(signal.SIGTERM) == 0
    again = Proc(tmp_path, "--save", "3600 1")
    r = again.client()
    assert r.get("k") == b"v"
    r.set("k", "changed")
    shutdown(again, "NOSAVE")
    third = Proc(tmp_path)
    assert third.client().get("k") == b"v"
    third.stop()


def test_bgsave_and_lastsave(tmp_path: Path) -> None:
    server = Proc(tmp_path)
    r = server.client()
    fill(r)
    before = everything(r)
    last = r.lastsave()
    assert r.bgsave()
    deadline = time.monotonic() + 10
    while r.info("persistence")["rdb_bgsave_in_progress"] and time.monotonic() < deadline:
        time.sleep(0.01)
    info = r.info("persistence")
    assert info["rdb_last_bgsave_status"] == "ok"
    assert info["rdb_changes_since_last_save"] == 0
    assert r.lastsave() >= last
    server.kill()
    again = Proc(tmp_path)
    assert everything(again.client()) == before
    again.stop()


def test_expired_keys_are_not_resurrected(tmp_path: Path) -> None:
    server = Proc(tmp_path, "--appendonly", "yes")
    r = server.client()
    r.set("short", "x", px=300)
    r.hset("h", mapping={"a": 1, "b": 2})
    r.execute_command("HPEXPIRE", "h", 300, "FIELDS", 1, "a")
    r.set("long", "y", ex=1000)
    r.save()
    server.kill()
    time.sleep(0.4)
    for args in (["--appendonly", "yes"], []):  # through the log, then the snapshot
        again = Proc(tmp_path, *args)
        r = again.client()
        assert r.get("short") is None
        assert r.hgetall("h") == {b"b": b"2"}
        assert r.get("long") == b"y"
        again.kill()


# --- the append-only log ------------------------------------------------------------------------


def test_appendonly_turned_on_at_run_time_then_rewritten(tmp_path: Path) -> None:
    server = Proc(tmp_path)
    r = server.client()
    fill(r)
    r.config_set("appendonly", "yes")
    wait_rewrite(r)
    for i in range(200):
        r.incr("counter")
        r.set(f"k{i % 5}", i)
    folder = tmp_path / "appendonlydir"
    size = sum(f.stat().st_size for f in folder.glob("*.incr.*"))
    assert r.bgrewriteaof()
    wait_rewrite(r)
    assert sum(f.stat().st_size for f in folder.glob("*.incr.*")) < size  # compacted
    r.rpush("l", "after")
    before = everything(r)
    assert r.info("persistence")["aof_enabled"] == 1
    server.kill()
    names = (folder / "appendonly.aof.manifest").read_text()
    assert "base" in names
    again = Proc(tmp_path, "--appendonly", "yes")
    assert everything(again.client()) == before
    again.stop()


def wait_rewrite(r: redis.Redis) -> None:
    deadline = time.monotonic() + 10
    while r.info("persistence")["aof_rewrite_in_progress"] and time.monotonic() < deadline:
        time.sleep(0.01)


def test_a_torn_tail_is_reported_and_cut(tmp_path: Path) -> None:
    server = Proc(tmp_path, "--appendonly", "yes")
    r = server.client()
    r.set("a", 1)
    r.set("b", 2)
    server.kill()
    incr = next((tmp_path / "appendonlydir").glob("*.incr.*"))
    whole = incr.read_bytes()
    torn = b"*3\r\n$3\r\nSET\r\n$1\r\nc\r\n$1"  # part of a command, as a crash leaves it
    incr.write_bytes(whole + torn)
    message = refused(tmp_path, "--appendonly", "yes", "--aof-load-truncated", "no")
    assert str(incr) in message and "Unexpected end of file reading the append only file" in message
    assert incr.read_bytes() == whole + torn  # left as it was
    again = Proc(tmp_path, "--appendonly", "yes")
    r = again.client()
    assert (r.get("a"), r.get("b")) == (b"1", b"2")
    assert incr.read_bytes() == whole
    r.set("c", 3)
    again.kill()
    third = Proc(tmp_path, "--appendonly", "yes")
    assert third.client().mget("a", "b", "c") == [b"1", b"2", b"3"]
    third.stop()


def test_a_damaged_log_middle_or_snapshot_refuses_to_start(tmp_path: Path) -> None:
    server = Proc(tmp_path, "--appendonly", "yes")
    r = server.client()
    for i in range(20):
        r.set(f"k{i}", "x" * 50)
    r.save()
    server.kill()
    incr = next((tmp_path / "appendonlydir").glob("*.incr.*"))
    data = bytearray(incr.read_bytes())
    data[data.index(b"*", len(data) // 2)] = ord("!")  # a command of the middle damaged
    incr.write_bytes(bytes(data))
    message = refused(tmp_path, "--appendonly", "yes")
    assert str(incr) in message and "Bad file format reading the append only file" in message
    assert incr.read_bytes() == bytes(data)  # never overwritten
    snapshot = tmp_path / "dump.rdb"
    damaged = bytearray(snapshot.read_bytes())
    damaged[len(damaged) // 2] ^= 0xFF
    snapshot.write_bytes(bytes(damaged))
    message = refused(tmp_path)
    assert str(snapshot) in message and "offset" in message
    assert snapshot.read_bytes() == bytes(damaged)


# --- SIGKILL under load ---------------------------------------------------------------------------


class Writer(threading.Thread):
    """One client's writes on its own keys, and the model of what it was told."""

    def __init__(self, port: int, n: int) -> None:
        super().__init__(daemon=True)
        self.r = redis.Redis(port=port, socket_timeout=10, retry=NO_RETRY)
        self.n = n
        self.acked: list[tuple[str, Any]] = []  # (operation, reply) acknowledged
        self.inflight: str | None = None

    def key(self, kind: str) -> str:
        return f"{kind}:{self.n}"

    def run(self) -> None:
        ops = ["set", "rpush", "sadd", "zadd", "hset", "hexpire", "xadd", "xread", "fcall", "spop",
               "multi", "del"]
        self.r.xgroup_create(self.key("x"), "g", id="0", mkstream=True)
        self.acked.append(("group", None))
        j = 0
        while True:
            op = ops[j % len(ops)] if j % 7 else random.choice(ops)
            self.inflight = op
            try:
                reply = self.do(op, j)
            except (redis.ConnectionError, redis.TimeoutError, OSError):
                return
            self.acked.append((op, (j, reply)))
            self.inflight = None
            j += 1

    def do(self, op: str, j: int) -> Any:
        r, k = self.r, self.key
        if op == "set":
            return r.set(k("s"), j, px=10**7)
        if op == "rpush":
            return r.rpush(k("l"), j)
        if op == "sadd":
            return r.sadd(k("set"), j, f"m{j}")
        if op == "zadd":
            return r.zadd(k("z"), {f"m{j % 13}": j})
        if op == "hset":
            return r.hset(k("h"), f"f{j % 17}", j)
        if op == "hexpire":
            return r.execute_command("HPEXPIRE", k("h"), 10**7, "FIELDS", 1, f"f{(j - 1) % 17}")
        if op == "xadd":
            return r.xadd(k("x"), {"j": j})
        if op == "xread":
            return r.xreadgroup("g", "c", {k("x"): ">"}, count=1)
        if op == "fcall":
            return r.fcall("bump", 1, k("f"))
        if op == "spop":
            return r.eval(POP_SCRIPT, 2, k("e"), k("set"))
        if op == "multi":
            pipe = r.pipeline(transaction=True)
            pipe.incr(k("m"))
            pipe.lpush(k("ml"), j)
            return pipe.execute()
        return r.delete(k("l")) if j % 3 == 0 else r.lpop(k("l"))


def replay_model(n: int, acked: list[tuple[str, Any]]) -> dict[str, Any]:
    m: dict[str, Any] = {"s": None, "l": [], "set": set(), "z": {}, "h": {}, "httl": set(),
                         "x": [], "pel": [], "f": 0, "e": 0, "m": 0, "ml": []}
    for op, payload in acked:
        if op == "group":
            continue
        j, reply = payload
        if op == "set":
            m["s"] = str(j).encode()
        elif op == "rpush":
            m["l"].append(str(j).encode())
        elif op == "sadd":
            m["set"] |= {str(j).encode(), f"m{j}".encode()}
        elif op == "zadd":
            m["z"][f"m{j % 13}".encode()] = float(j)
        elif op == "hset":
            m["h"][f"f{j % 17}".encode()] = str(j).encode()
            m["httl"].discard(f"f{j % 17}".encode())
        elif op == "hexpire":
            if reply == [1]:
                m["httl"].add(f"f{(j - 1) % 17}".encode())
        elif op == "xadd":
            m["x"].append((reply, str(j).encode()))
        elif op == "xread":
            if reply:
                m["pel"].append(reply[0][1][0][0])
        elif op == "fcall":
            m["f"] = reply
        elif op == "spop":
            m["e"] += 1
            if reply is not None:
                m["set"].discard(reply)
        elif op == "multi":
            m["m"] = reply[0]
            m["ml"].insert(0, str(j).encode())
        elif op == "del":
            if j % 3 == 0:
                m["l"] = []
            elif m["l"]:
                m["l"].pop(0)
    return m


def observed(r: redis.Redis, n: int) -> dict[str, Any]:
    k = lambda kind: f"{kind}:{n}"  # noqa: E731
    h = r.hgetall(k("h"))
    ttls = r.execute_command("HPEXPIRETIME", k("h"), "FIELDS", len(h), *h) if h else []
    stream = r.xrange(k("x"))
    pending = r.xpending_range(k("x"), "g", "-", "+", 10**6)
    assert all(p["times_delivered"] == 1 and p["consumer"] == b"c" for p in pending)
    assert r.pexpiretime(k("s")) > 0 or r.get(k("s")) is None
    return {"s": r.get(k("s")), "l": r.lrange(k("l"), 0, -1), "set": r.smembers(k("set")),
            "z": dict(r.zrange(k("z"), 0, -1, withscores=True)), "h": h,
            "httl": {f for f, t in zip(h, ttls, strict=True) if t > 0},
            "x": [(sid, fields[b"j"]) for sid, fields in stream],
            "pel": [p["message_id"] for p in pending],
            "f": int(r.get(k("f")) or 0), "e": int(r.get(k("e")) or 0), "m": int(r.get(k("m")) or 0),
            "ml": r.lrange(k("ml"), 0, -1)}


def accepted(seen: dict[str, Any], writer: Writer) -> bool:
    """Everything acknowledged is there; the write in flight is there whole or not at all."""
    if seen == replay_model(writer.n, writer.acked):
        return True
    op = writer.inflight
    if op is None:
        return False
    j = len(writer.acked) - 1
    reply: Any = None
    if op == "xadd":
        reply = seen["x"][-1][0] if seen["x"] else None
    elif op == "xread":
        reply = [[b"x", [[seen["pel"][-1], {}]]]] if seen["pel"] else None
    elif op in ("fcall",):
        reply = seen["f"]
    elif op == "multi":
        reply = [seen["m"]]
    elif op == "spop":
        before = replay_model(writer.n, writer.acked)["set"]
        gone = before - seen["set"]
        reply = next(iter(gone)) if gone else None
    elif op == "hexpire":
        reply = [1]
    return seen == replay_model(writer.n, [*writer.acked, (op, (j, reply))])


def test_every_acknowledged_write_survives_sigkill(tmp_path: Path) -> None:
    for run in range(RUNS):
        directory = tmp_path / f"run{run}"
        directory.mkdir()
        server = Proc(directory, "--appendonly", "yes", "--appendfsync", "always")
        server.client().function_load(LIBRARY)
        writers = [Writer(server.port, n) for n in range(3)]
        for w in writers:
            w.start()
        time.sleep(random.uniform(0.15, 0.5 if not DEEP else 2.0))
        server.kill()
        for w in writers:
            w.join(10)
        again = Proc(directory, "--appendonly", "yes", "--appendfsync", "always")
        r = again.client()
        assert [lib[b"library_name"] for lib in libraries(r)] == [b"plib"]
        for w in writers:
            seen = observed(r, w.n)
            assert accepted(seen, w), (run, w.n, w.inflight, len(w.acked), seen,
                                       replay_model(w.n, w.acked))
        assert sum(len(w.acked) for w in writers) > 10
        again.kill()


def test_the_log_keeps_databases_scripts_blocking_and_deadlines(tmp_path: Path) -> None:
    server = Proc(tmp_path, "--appendonly", "yes")
    r = server.client()
    r.execute_command("SELECT", 1)
    r.eval("redis.call('set', KEYS[1], ARGV[1]) redis.call('pexpire', KEYS[1], 10000000)", 1, "scripted", "v")
    r.set("to-move", "m")
    r.move("to-move", 2)
    r.execute_command("SELECT", 0)
    r.expire("nothing", 10)
    r.set("rel", "x")
    r.expire("rel", 5000)
    r.execute_command("SWAPDB", 0, 2)
    waiter = server.client()
    popped: list[Any] = []
    thread = threading.Thread(target=lambda: popped.append(waiter.blpop(["q"], 5)))
    thread.start()
    time.sleep(0.2)
    r.rpush("q", "a", "b")
    thread.join(5)
    assert popped == [(b"q", b"a")]
    r.sadd("pool", *range(10))
    r.spop("pool", 3)
    before = everything(r)
    server.kill()
    again = Proc(tmp_path, "--appendonly", "yes")
    assert everything(again.client()) == before
    again.stop()


def test_the_emq_keyspace_survives_through_the_log_and_a_snapshot(tmp_path: Path) -> None:
    from fakekey.emq import Queue

    server = Proc(tmp_path, "--appendonly", "yes")
    r = server.client()
    for wire in (4, 6):
        queue = Queue(r, f"orders{wire}", wire=wire)
        for i in range(5):
            queue.enqueue(f"JOB-{i}", b"payload %d" % i, group="acme" if i % 2 and wire == 4 else None)
    before = everything(r)
    assert len(before) > 4
    server.kill()
    again = Proc(tmp_path, "--appendonly", "yes")
    r = again.client()
    assert everything(r) == before
    r.save()
    again.kill()
    third = Proc(tmp_path)  # the snapshot alone
    assert everything(third.client()) == before
    third.stop()


def test_a_rewrite_inside_a_transaction_counts_each_write_once(tmp_path: Path) -> None:
    server = Proc(tmp_path, "--appendonly", "yes")
    r = server.client()
    pipe = r.pipeline(transaction=True)
    pipe.incr("x")
    pipe.bgrewriteaof()
    pipe.incr("x")
    pipe.execute()
    wait_rewrite(r)
    time.sleep(0.1)
    server.kill()
    again = Proc(tmp_path, "--appendonly", "yes")
    assert again.client().get("x") == b"2"
    again.stop()


def test_shutdown_completes_the_first_rewrite_of_a_log_turned_on(tmp_path: Path) -> None:
    server = Proc(tmp_path)
    r = server.client()
    fill(r)
    r.config_set("rdb-key-save-delay", 200000)  # the background rewrite would take seconds
    r.config_set("appendonly", "yes")
    assert r.info("persistence")["aof_rewrite_in_progress"] == 1
    r.set("after", "yes")
    before = everything(r)
    shutdown(server, "NOSAVE")
    again = Proc(tmp_path, "--appendonly", "yes")
    assert everything(again.client()) == before
    again.stop()


def test_the_log_is_rewritten_when_it_outgrows_its_base(tmp_path: Path) -> None:
    server = Proc(tmp_path, "--appendonly", "yes", "--auto-aof-rewrite-min-size", "2000",
                  "--auto-aof-rewrite-percentage", "100")
    r = server.client()
    assert r.info("persistence")["aof_rewrites"] == 0
    for i in range(100):
        r.set("k", i)
    deadline = time.monotonic() + 10
    while r.info("persistence")["aof_rewrites"] == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    info = r.info("persistence")
    assert info["aof_rewrites"] >= 1 and info["aof_current_size"] < 2000
    server.kill()
    again = Proc(tmp_path, "--appendonly", "yes")
    assert again.client().get("k") == b"99"
    again.stop()


def test_a_dump_left_unloaded_is_named_in_the_log(tmp_path: Path) -> None:
    """With no persistence asked for, a dump.rdb in the working directory stays unloaded
    (an embedded server must start whatever lies there), and the log says how to load it."""
    server = Proc(tmp_path, "--save", "3600 1")
    r = server.client()
    r.set("k", "v")
    r.save()
    r.close()
    assert server.stop() == 0
    run = subprocess.Popen([*SERVER, "--port", "0"], cwd=tmp_path, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert run.stdout is not None
    lines = []
    for line in run.stdout:
        lines.append(line)
        if READY.match(line):
            break
    run.terminate()
    run.wait(20)
    assert any(f"{tmp_path / 'dump.rdb'} was not loaded" in line and "--save" in line for line in lines), lines
