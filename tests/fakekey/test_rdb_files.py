"""Valkey's RDB files, both ways, against real servers.

- fakekey saves (SAVE, BGSAVE, SHUTDOWN SAVE, a save rule) and a real valkey-server 9.1.2
  started on the file holds the same keyspace: every key, type, TTL, encoding, DEBUG
  DIGEST-VALUE, DUMP payload (where the encoding keeps an order), hash field TTLs, streams
  in full (XINFO STREAM FULL), the function libraries and the dataset's DEBUG DIGEST;
- a real Valkey saves and fakekey started on the file holds the same;
- RDB 9 and 10 files written by Redis 6.2.14 and 7.0.15 (fixtures in data/rdb/, made by
  this module's `__main__`) load into fakekey as their writer described them, and as
  Valkey 9.1.2 loads them; RDB 11 and 12 files (Valkey 9.1.2's output relabelled) load or
  are refused as Valkey 9.1.2 does;
- LRU idle times and LFU counters go through the file when the policy asks for them;
- damaged, cut, newer and foreign files are refused, with the offset and the cause, and
  the server does not start;
- a snapshot of fakekey's former format still loads, and the next save is Valkey's RDB.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import logging
import os
import random
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fakekey.cli import parse_argv
from fakekey.core.client import Client
from fakekey.net.server import Server, new_state
from fakekey.persistence import rdb, rdbfile
from fakekey.persistence.load import load_file
from fakekey.persistence.snapshot import LoadError, copied_image, live_image, snapshot_bytes
from fakekey.testing.raw import RawClient
from fakekey.testing.targets import find_valkey_binary, free_port

DATA = Path(__file__).parent / "data" / "rdb"
VALKEY = find_valkey_binary()
REDIS_70 = "/usr/bin/redis-check-rdb"  # Debian's redis-tools: the Redis 7.0 server binary
SERVER = [sys.executable, "-m", "fakekey"]
LIBRARY = ("#!lua name=lib1\n"
           "redis.register_function('f1', function(keys, args) return redis.call('get', keys[1]) end)")
LIBRARY2 = "#!lua name=lib2\nredis.register_function{function_name='f2', callback=function() return 2 end, flags={'no-writes'}}"
ORDERED = {b"listpack", b"intset", b"quicklist", b"skiplist", b"embstr", b"int", b"raw", b"stream"}

needs_valkey = pytest.mark.skipif(VALKEY is None, reason="no valkey-server binary")


# --- servers --------------------------------------------------------------------------------------


class Real:
    """A real server (valkey-server, or a Redis binary) in `directory`, on a free port."""

    def __init__(self, binary: str, directory: Path, *flags: str, name: str = "valkey-server") -> None:
        self.directory = directory
        if Path(binary).name != name:  # Redis binaries pick their mode by their name
            link = directory / "bin" / name
            link.parent.mkdir(exist_ok=True)
            if not link.exists():
                link.symlink_to(binary)
            binary = str(link)
        self.port = free_port()
        self.log = directory / "server.log"
        self.proc = subprocess.Popen(
            [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(directory),
             "--save", "", "--appendonly", "no", "--logfile", str(self.log), *flags],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.client = self._connect()

    def _connect(self) -> RawClient:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"the server exited: {self.log.read_text(errors='replace')[-2000:]}")
            try:
                client = RawClient("127.0.0.1", self.port, timeout=60)
            except OSError:
                time.sleep(0.02)
                continue
            try:
                if client.call("PING") == ("+", b"PONG"):  # not LOADING
                    return client
            except OSError:  # it listens while it loads: one that fails to load resets us
                pass
            client.close()
            time.sleep(0.02)
        raise AssertionError("the server did not start")

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            self.client.close()
        if self.proc.poll() is None:
            self.proc.terminate()  # save "": nothing is saved
        self.proc.wait(30)


@contextlib.contextmanager
def real(binary: str | None, directory: Path, *flags: str, name: str = "valkey-server") -> Iterator[Real]:
    assert binary is not None
    server = Real(binary, directory, *flags, name=name)
    try:
        yield server
    finally:
        server.stop()


@contextlib.contextmanager
def fakekey(directory: Path, *flags: str) -> Iterator[RawClient]:
    """fakekey in this process, on `directory` (so it loads its dbfilename)."""
    server = Server(config=parse_argv(["--dir", str(directory), "--save", "", *flags]))
    server.start()
    try:
        with RawClient("127.0.0.1", server.port, timeout=120) as client:
            yield client
    finally:
        server.stop()


def refused(directory: Path, *flags: str) -> str:
    """fakekey-server must refuse to start on `directory`: its stderr."""
    run = subprocess.run([*SERVER, "--port", "0", "--dir", str(directory), *flags],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 1, (run.stdout, run.stderr)
    assert "ready" not in run.stdout
    return run.stderr


def ready_port(proc: subprocess.Popen[str]) -> int:
    """The port of a fakekey-server that printed its ready line; its log drained after."""
    assert proc.stdout is not None
    for line in proc.stdout:
        match = re.match(r"fakekey ready port=(\d+)", line)
        if match:
            threading.Thread(target=proc.stdout.read, daemon=True).start()
            return int(match.group(1))
    raise AssertionError(f"no ready line: {proc.wait(10)}")


def ok(reply: tuple[str, Any]) -> Any:
    assert reply[0] != "-", reply
    return reply[1]


def wait_saved(client: RawClient, saves_before: int) -> None:
    """A background save ended, successfully."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        info = ok(client.call("INFO", "persistence")).decode()
        fields = dict(line.split(":", 1) for line in info.split("\r\n") if ":" in line)
        if fields["rdb_bgsave_in_progress"] == "0" and int(fields["rdb_saves"]) > saves_before:
            assert fields["rdb_last_bgsave_status"] == "ok"
            return
        time.sleep(0.02)
    raise AssertionError("the background save did not end")


def saves(client: RawClient) -> int:
    info = ok(client.call("INFO", "persistence")).decode()
    return int(re.search(r"rdb_saves:(\d+)", info).group(1))  # type: ignore[union-attr]


# --- the keyspace -----------------------------------------------------------------------------------


def populate(r: RawClient, *, functions: bool = True, field_ttls: bool = True, hash_2: bool = True,
             small: bool = False) -> None:
    """Every type in every encoding Valkey writes, in several databases, with TTLs.
    `small`: shorter incompressible data (the fixture files are kept in the tree)."""
    rnd = random.Random(28)
    calls: list[tuple[Any, ...]] = []
    add = calls.append
    # strings: integer encodings of each width, raw, compressible, incompressible, long
    for key, value in [("s", "hello"), ("i8", "-12"), ("i16", "1234"), ("i32", "-123456789"),
                       ("i64", "12345678901234"), ("lead0", "007"), ("empty", ""),
                       ("bin", bytes(range(256))), ("lzf", "abc" * 50),
                       ("noise", rnd.randbytes(100)), ("huge", "0123456789" * 10_000),
                       ("hugenoise", rnd.randbytes(4_000 if small else 40_000))]:
        add(("SET", key, value))
    add(("SET", "ttl", "v", "PXAT", 4_000_000_000_123))  # absolute: the fixtures stay valid
    add(("SET", "ttl-far", "v", "EXAT", 4_000_000_000))
    add(("APPEND", "appended", "abc"))
    # lists: a listpack, a quicklist of many nodes, one with an element too big for a node
    add(("RPUSH", "list", "a", "1", "-5", "x" * 70, 2**40, ""))
    add(("RPUSH", "quick", *[f"item:{i}:" + "z" * rnd.randrange(40) for i in range(600 if small else 3000)]))
    add(("RPUSH", "plain", "small", "P" * 20_000, "tail"))
    # sets: intsets of each width, a listpack, hashtables (by count and by length)
    add(("SADD", "int16", 1, 2, 3, -7))
    add(("SADD", "int32", 1, 100_000, -100_000))
    add(("SADD", "int64", 1, 2**40, -(2**50)))
    add(("SADD", "lpset", "a", "b", "c", "12"))
    add(("SADD", "htset", *[f"m{i}" for i in range(300)]))
    add(("SADD", "longset", "short", "l" * 100))
    add(("SADD", "bigints", *range(600)))
    # sorted sets: a listpack, skiplists (by count and by length), odd scores
    add(("ZADD", "z", 1, "a", 2.5, "b", "inf", "c", "-inf", "d", 0, "e", -0.0, "f", 1e-300, "g"))
    add(("ZADD", "bigz", *[x for i in range(300) for x in (i / 7, f"m{i}")]))
    add(("ZADD", "longz", 1, "a", 2, "l" * 100))
    # hashes: a listpack, hashtables (by count and by length), field TTLs
    add(("HSET", "h", "f", "v", "n", "12", "e", ""))
    add(("HSET", "bigh", *[x for i in range(600) for x in (f"f{i}", i)]))
    add(("HSET", "longh", "f", "v" * 100))
    if field_ttls:
        add(("HSET", "ttlh", "a", "1", "b", "2", "c", "3"))
        add(("HPEXPIREAT", "ttlh", 4_000_000_000, "FIELDS", 2, "a", "b"))
    if hash_2:
        add(("HSET", "ttlh2", *[x for i in range(20) for x in (f"f{i}", i)]))
        add(("HPEXPIREAT", "ttlh2", 4_000_000_000_000, "FIELDS", 1, "f3"))
    # streams: several nodes, tombstones, groups with PELs, consumers, an emptied stream
    for i in range(1, 251):
        fields = ("a", i, "b", "x" * (i % 5)) if i % 3 else ("c", i)
        add(("XADD", "stream", f"{1000 + i}-{i % 4}", *fields))
    add(("XDEL", "stream", "1010-2", "1011-3", "1200-0"))
    add(("XGROUP", "CREATE", "stream", "g1", "0"))
    add(("XGROUP", "CREATE", "stream", "g2", "1100-0"))
    add(("XGROUP", "CREATE", "stream", "empty-group", "$"))
    add(("XREADGROUP", "GROUP", "g1", "alice", "COUNT", 20, "STREAMS", "stream", ">"))
    add(("XREADGROUP", "GROUP", "g1", "bob", "COUNT", 7, "STREAMS", "stream", ">"))
    add(("XREADGROUP", "GROUP", "g2", "carol", "COUNT", 5, "STREAMS", "stream", ">"))
    add(("XACK", "stream", "g1", "1001-1", "1002-2"))
    add(("XCLAIM", "stream", "g1", "bob", 0, "1003-3"))
    add(("XGROUP", "CREATECONSUMER", "stream", "g1", "idle-one"))
    add(("XADD", "emptied", "1-1", "f", "v"))
    add(("XDEL", "emptied", "1-1"))
    for i in range(1, 8):
        add(("XADD", "trimmed", "MAXLEN", 3, f"5-{i}", "f", "v"))
    # other databases
    add(("SELECT", 1))
    add(("SET", "s", "in db 1"))
    add(("HSET", "h", "f", "v"))
    add(("SELECT", 5))
    add(("RPUSH", "list", "db", "5"))
    add(("SET", "ttl5", "v", "PXAT", 4_100_000_000_000))
    add(("SELECT", 0))
    if functions:
        add(("FUNCTION", "LOAD", LIBRARY))
        add(("FUNCTION", "LOAD", LIBRARY2))
    for reply in r.pipeline(*calls):
        ok(reply)


def describe(r: RawClient, key: bytes, exact: bool) -> tuple[Any, ...]:
    """A key as the server describes it. `exact`: with the encoding, the digest, the
    DUMP payload (where the encoding keeps an order) and the stream in full; else the
    content alone, in commands every server version has."""
    kind = ok(r.call("TYPE", key))
    ttl = ok(r.call("PEXPIRETIME", key)) if exact else ok(r.call("PTTL", key)) > 0
    if kind == b"string":
        body: Any = ok(r.call("GET", key))
    elif kind == b"list":
        body = ok(r.call("LRANGE", key, 0, -1))
    elif kind == b"set":
        body = sorted(ok(r.call("SMEMBERS", key)))
    elif kind == b"zset":
        body = ok(r.call("ZRANGE", key, 0, -1, "WITHSCORES"))
        if not exact:  # Redis 7.0 prints scores with 17 digits, Valkey with the fewest
            body = [(member, float(score[1]).hex()) for member, score in zip(body[0::2], body[1::2], strict=True)]
    elif kind == b"hash":
        body = sorted(ok(r.call("HGETALL", key)))
        if exact:
            fields = sorted(field for kind_, field in ok(r.call("HKEYS", key)))
            body = (body, ok(r.call("HPEXPIRETIME", key, "FIELDS", len(fields), *fields)))
    elif kind == b"stream":
        body = stream_view(r, key, exact)
    else:
        raise AssertionError(kind)
    if not exact:
        return kind, ttl, body
    encoding = ok(r.call("OBJECT", "ENCODING", key))
    digest = ok(r.call("DEBUG", "DIGEST-VALUE", key))
    payload = ok(r.call("DUMP", key)) if encoding in ORDERED else None
    return kind, ttl, encoding, digest, payload, body


def stream_view(r: RawClient, key: bytes, exact: bool) -> Any:
    entries = ok(r.call("XRANGE", key, "-", "+"))
    if exact:
        return entries, ok(r.call("XINFO", "STREAM", key, "FULL"))
    groups = []
    for _, group in ok(r.call("XINFO", "GROUPS", key)):
        info = dict(zip(group[0::2], group[1::2], strict=True))
        name = info[("$", b"name")][1]
        pending = ok(r.call("XPENDING", key, name, "-", "+", 10**6))
        consumers = sorted((dict(zip(c[1][0::2], c[1][1::2], strict=True))[("$", b"name")],
                            dict(zip(c[1][0::2], c[1][1::2], strict=True))[("$", b"pending")])
                           for c in ok(r.call("XINFO", "CONSUMERS", key, name)))
        groups.append((name, info[("$", b"last-delivered-id")], consumers,
                       [(p[1][0], p[1][1], p[1][3]) for p in pending]))  # no idle time
    return entries, sorted(groups)


def view(r: RawClient, exact: bool = True, databases: int = 16) -> dict[Any, Any]:
    out: dict[Any, Any] = {}
    for db in range(databases):
        ok(r.call("SELECT", db))
        for _, key in sorted(ok(r.call("KEYS", "*"))):
            out[(db, key)] = describe(r, key, exact)
    ok(r.call("SELECT", 0))
    if exact:
        out["digest"] = ok(r.call("DEBUG", "DIGEST"))
        out["functions"] = sorted(ok(r.call("FUNCTION", "LIST", "WITHCODE")))  # a dict's order
    return out


def digested(described: dict[Any, Any]) -> dict[Any, Any]:
    """A view with each key's content as a digest (a fixture's view stays small)."""
    return {key: (kind, ttl, hashlib.sha256(repr(body).encode()).hexdigest()[:32])
            for key, (kind, ttl, body) in described.items()}


def check_rdb(binary: str, path: Path) -> str:
    """valkey-check-rdb (valkey-server under that name) on a file: its report."""
    link = path.parent / "bin" / "valkey-check-rdb"
    link.parent.mkdir(exist_ok=True)
    if not link.exists():
        link.symlink_to(binary)
    run = subprocess.run([str(link), str(path)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "RDB looks OK" in run.stdout, run.stdout
    return run.stdout


def relabel(data: bytes, magic: bytes) -> bytes:
    """An RDB file under another magic and version, its checksum made again."""
    body = magic + data[9:-8]
    return body + rdb.crc64(body).to_bytes(8, "little")


# --- fakekey -> file -> Valkey -------------------------------------------------------------------


@needs_valkey
@pytest.mark.parametrize("how", ["save", "bgsave"])
def test_a_fakekey_save_loads_in_valkey_as_it_was(tmp_path: Path, how: str) -> None:
    with fakekey(tmp_path, "--enable-debug-command", "yes") as r:
        populate(r)
        before = view(r)
        if how == "save":
            assert r.call("SAVE") == ("+", b"OK")
        else:
            count = saves(r)
            assert r.call("BGSAVE") == ("+", b"Background saving started")
            wait_saved(r, count)
    dump = tmp_path / "dump.rdb"
    assert dump.read_bytes().startswith(b"VALKEY080")
    report = check_rdb(VALKEY, dump)  # type: ignore[arg-type]
    assert "Checksum OK" in report and "2 functions" in report
    with real(VALKEY, tmp_path, "--enable-debug-command", "yes") as valkey:
        assert view(valkey.client) == before
    with fakekey(tmp_path, "--enable-debug-command", "yes") as r:  # and back in fakekey
        assert view(r) == before


@needs_valkey
def test_shutdown_save_and_a_save_rule_write_valkeys_file(tmp_path: Path) -> None:
    proc = subprocess.Popen([*SERVER, "--port", "0", "--dir", str(tmp_path), "--save", "1 1",
                             "--enable-debug-command", "yes"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        port = ready_port(proc)
        with RawClient("127.0.0.1", port) as r:
            populate(r, functions=False)
            wait_saved(r, 0)  # the save rule's background save
            assert (tmp_path / "dump.rdb").read_bytes()[:9] == b"VALKEY080"
            ok(r.call("FUNCTION", "LOAD", LIBRARY))
            before = view(r)
            r.send("SHUTDOWN", "SAVE")
            with contextlib.suppress(ConnectionError):
                r.read()
        assert proc.wait(60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    with real(VALKEY, tmp_path, "--enable-debug-command", "yes") as valkey:
        assert view(valkey.client) == before


# --- Valkey -> file -> fakekey -------------------------------------------------------------------


@needs_valkey
@pytest.mark.parametrize("compression", ["yes", "no"])
def test_a_valkey_save_loads_in_fakekey_as_it_was(tmp_path: Path, compression: str) -> None:
    flags = ("--enable-debug-command", "yes", "--rdbcompression", compression)
    with real(VALKEY, tmp_path, *flags) as valkey:
        populate(valkey.client)
        before = view(valkey.client)
        assert valkey.client.call("SAVE") == ("+", b"OK")
    with fakekey(tmp_path, *flags) as r:
        assert view(r) == before
        ok(r.call("SAVE"))  # and back: fakekey's file of what it loaded
    with real(VALKEY, tmp_path, *flags) as valkey:
        assert view(valkey.client) == before


def options(**settings: Any) -> rdbfile.LoadOptions:
    return rdbfile.LoadOptions(rdb.Limits(**settings), databases=16)


@needs_valkey
def test_a_file_saved_without_checksum_loads_both_ways(tmp_path: Path,
                                                      caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="fakekey.net.server")
    with fakekey(tmp_path, "--enable-debug-command", "yes", "--rdbchecksum", "no") as r:
        populate(r, functions=False)
        before = view(r)
        ok(r.call("SAVE"))
    assert (tmp_path / "dump.rdb").read_bytes()[-8:] == bytes(8)
    with real(VALKEY, tmp_path, "--enable-debug-command", "yes") as valkey:
        assert view(valkey.client) == before
    assert "no check performed" in (tmp_path / "server.log").read_text()
    with real(VALKEY, tmp_path, "--enable-debug-command", "yes", "--rdbchecksum", "no") as valkey:
        ok(valkey.client.call("SAVE"))
    assert (tmp_path / "dump.rdb").read_bytes()[-8:] == bytes(8)
    with fakekey(tmp_path, "--enable-debug-command", "yes") as r:
        assert view(r) == before
    assert any("no check performed" in line for line in caplog.messages)


# --- LRU and LFU -----------------------------------------------------------------------------------


@needs_valkey
def test_idle_times_go_through_the_file_under_an_lru_policy(tmp_path: Path) -> None:
    flags = ("--maxmemory-policy", "allkeys-lru", "--enable-debug-command", "yes")
    with fakekey(tmp_path, *flags) as r:
        ok(r.call("SET", "old", "v"))
        ok(r.call("FAKEKEY.CLOCK", "ADVANCE", 500_000))
        ok(r.call("SET", "new", "v"))
        ok(r.call("SAVE"))
    contents = rdbfile.parse_rdb("dump", (tmp_path / "dump.rdb").read_bytes(), options())
    assert contents.dbs[0].idle == {b"old": 500, b"new": 0}
    with real(VALKEY, tmp_path, *flags) as valkey:
        assert 500 <= ok(valkey.client.call("OBJECT", "IDLETIME", "old")) < 5000
        assert ok(valkey.client.call("OBJECT", "IDLETIME", "new")) < 500
        ok(valkey.client.call("SAVE"))
    with fakekey(tmp_path, *flags) as r:
        assert 500 <= ok(r.call("OBJECT", "IDLETIME", "old")) < 5000


@needs_valkey
def test_lfu_counters_go_through_the_file_under_an_lfu_policy(tmp_path: Path) -> None:
    flags = ("--maxmemory-policy", "allkeys-lfu", "--lfu-log-factor", "0")
    with fakekey(tmp_path, *flags) as r:
        ok(r.call("SET", "hot", "v"))
        r.pipeline(*[("GET", "hot")] * 40)
        ok(r.call("SET", "cold", "v"))
        hot = ok(r.call("OBJECT", "FREQ", "hot"))
        assert hot > 20
        ok(r.call("SAVE"))
    contents = rdbfile.parse_rdb("dump", (tmp_path / "dump.rdb").read_bytes(), options())
    assert contents.dbs[0].freq[b"hot"] == hot
    with real(VALKEY, tmp_path, *flags) as valkey:
        assert ok(valkey.client.call("OBJECT", "FREQ", "hot")) == hot
        valkey.client.pipeline(*[("GET", "cold")] * 30)
        cold = ok(valkey.client.call("OBJECT", "FREQ", "cold"))
        ok(valkey.client.call("SAVE"))
    with fakekey(tmp_path, *flags) as r:
        assert ok(r.call("OBJECT", "FREQ", "cold")) == cold
        assert ok(r.call("OBJECT", "FREQ", "hot")) == hot


# --- older versions ----------------------------------------------------------------------------------

FIXTURES = [("redis-6.2.14", 9), ("redis-7.0.15", 10)]


@pytest.mark.parametrize(("name", "version"), FIXTURES)
def test_files_of_redis_6_and_7_load_as_their_writer_described_them(tmp_path: Path, name: str,
                                                                     version: int) -> None:
    data = (DATA / f"{name}.rdb").read_bytes()
    assert data[:9] == b"REDIS%04d" % version
    lines = (DATA / f"{name}.view").read_text().splitlines()
    expected = dict(ast.literal_eval(line) for line in lines)
    shutil.copy(DATA / f"{name}.rdb", tmp_path / "dump.rdb")
    with fakekey(tmp_path, "--enable-debug-command", "yes") as r:
        assert digested(view(r, exact=False)) == expected
        functions = ok(r.call("FUNCTION", "LIST"))
        assert len(functions) == (2 if version >= 10 else 0)


@needs_valkey
@pytest.mark.parametrize(("name", "version"), FIXTURES)
def test_files_of_redis_6_and_7_load_in_fakekey_as_in_valkey(tmp_path: Path, name: str,
                                                            version: int) -> None:
    shutil.copy(DATA / f"{name}.rdb", tmp_path / "dump.rdb")
    with real(VALKEY, tmp_path, "--enable-debug-command", "yes") as valkey:
        theirs = without_list_payloads(view(valkey.client))
    with fakekey(tmp_path, "--enable-debug-command", "yes") as r:
        assert without_list_payloads(view(r)) == theirs


def without_list_payloads(described: dict[Any, Any]) -> dict[Any, Any]:
    """Valkey keeps a loaded list's quicklist nodes as the file has them (Redis 7.0 packs
    an element of 20 KB into a listpack node, Valkey 9 makes it a plain node); fakekey
    makes the nodes again from the elements, so their DUMP payloads may differ."""
    return {key: (*item[:4], None, *item[5:]) if isinstance(item, tuple) and item[0] == b"list" else item
            for key, item in described.items()}


@pytest.mark.skipif(not os.access(REDIS_70, os.X_OK), reason="no Redis 7.0 binary")
def test_a_live_redis_7_file_loads_as_redis_describes_it(tmp_path: Path) -> None:
    with real(REDIS_70, tmp_path, "--enable-debug-command", "yes", name="redis-server") as redis7:
        populate(redis7.client, field_ttls=False, hash_2=False)
        before = view(redis7.client, exact=False)
        ok(redis7.client.call("SAVE"))
    assert (tmp_path / "dump.rdb").read_bytes()[:9] == b"REDIS0010"
    with fakekey(tmp_path, "--enable-debug-command", "yes") as r:
        assert view(r, exact=False) == before


@needs_valkey
def test_rdb_11_loads_and_12_only_under_relaxed_checks_as_in_valkey(tmp_path: Path) -> None:
    with real(VALKEY, tmp_path, "--enable-debug-command", "yes") as valkey:
        populate(valkey.client, field_ttls=False, hash_2=False)  # no type newer than RDB 11's
        ok(valkey.client.call("SAVE"))
    data = (tmp_path / "dump.rdb").read_bytes()
    for version in (11, 12):
        (tmp_path / "dump.rdb").write_bytes(relabel(data, b"REDIS%04d" % version))
        for check in ("strict", "relaxed"):
            flags = ("--enable-debug-command", "yes", "--rdb-version-check", check)
            if version == 12 and check == "strict":
                with pytest.raises(AssertionError, match="Can't handle RDB format version 12"):
                    Real(VALKEY, tmp_path, *flags)  # type: ignore[arg-type]
                assert "Can't handle RDB format version 12 at offset 0" in refused(tmp_path, *flags)
                continue
            with real(VALKEY, tmp_path, *flags) as valkey:
                theirs = view(valkey.client)
            with fakekey(tmp_path, *flags) as r:
                assert view(r) == theirs


# --- DEBUG RELOAD --------------------------------------------------------------------------------


def reload_script(r: RawClient) -> list[Any]:
    """DEBUG RELOAD's forms, and what each leaves (replies and views)."""
    seen: list[Any] = []
    populate(r)
    r.pipeline(*[("HDEL", "bigh", f"f{i}") for i in range(590)])  # a hashtable of 10 fields
    seen.append(r.call("DEBUG", "RELOAD"))
    seen.append(timeless(view(r)))  # the shrunk hash is a listpack again, as a reload makes it
    seen.append(r.call("DEBUG", "RELOAD", "BOGUS"))
    seen.append(r.call("DEBUG", "RELOAD", "NOFLUSH"))  # every key conflicts
    seen.append(r.call("SET", "later", "1"))
    seen.append(r.call("SET", "s", "changed"))
    seen.append(r.call("DEBUG", "RELOAD", "NOSAVE", "NOFLUSH", "MERGE"))
    seen.append(timeless(view(r)))  # "later" stays, "s" is the file's again
    seen.append(r.call("DEBUG", "RELOAD", "NOSAVE"))
    seen.append(timeless(view(r)))  # the file alone
    info = ok(r.call("INFO", "persistence")).decode()
    seen.append([line for line in info.split("\r\n") if line.startswith(("rdb_saves", "rdb_changes",
                                                                         "rdb_last_load"))])
    return seen


def timeless(described: dict[Any, Any]) -> dict[Any, Any]:
    """A view of two servers filled at different times: without what holds the time
    (a stream's delivery and seen times, in its DUMP and XINFO FULL) or a hashtable's
    order (Valkey's is by a hash seeded at random, so a hash or set made a listpack again
    by a reload has another order on every server)."""
    out = {}
    for key, item in described.items():
        if isinstance(item, tuple) and item[0] in (b"stream", b"hash", b"set"):
            kind, ttl, encoding, digest, _, body = item
            item = (kind, ttl, encoding, digest, None, body[0] if kind == b"stream" else body)
        out[key] = item
    return out


@needs_valkey
def test_debug_reload_as_valkey(tmp_path: Path) -> None:
    (tmp_path / "fk").mkdir()
    (tmp_path / "vk").mkdir()
    with fakekey(tmp_path / "fk", "--enable-debug-command", "yes") as r:
        ours = reload_script(r)
    with real(VALKEY, tmp_path / "vk", "--enable-debug-command", "yes") as valkey:
        theirs = reload_script(valkey.client)
    assert ours == theirs


# --- refusals ------------------------------------------------------------------------------------


def small_file() -> bytes:
    """fakekey's RDB file of a few keys, built in process."""
    state = new_state()
    db = state.dbs[0]
    db.load(b"k", b"value", -1, 0)
    db.load(b"n", b"12", 4_000_000_000_000, 0)
    options_ = rdbfile.SaveOptions(rdb.Limits(), "9.1.2", 0, used_memory=0)
    return rdbfile.rdb_bytes(live_image(state), options_, 0)


def first_key_offset(data: bytes) -> int:
    """Where the first key's type byte is (after SELECTDB and RESIZEDB)."""
    return data.index(b"\xfe\x00\xfb") + 5


@pytest.mark.parametrize(("damage", "message"), [
    (lambda d: b"VALKEY081" + d[9:], "Can't handle RDB format version 81 at offset 0"),
    (lambda d: b"REDIS0012" + d[9:], "Can't handle RDB format version 12 at offset 0"),
    (lambda d: b"XALKEY080" + d[9:], "Wrong signature trying to load DB from file: XALKEY080 at offset 0"),
    (lambda d: b"", "Unexpected EOF reading RDB file (Short read loading DB) at offset 0"),
    (lambda d: d[:-20], "Unexpected EOF reading RDB file"),
    (lambda d: d[:-1], "Unexpected EOF reading RDB file"),
    (lambda d: d[:-3] + bytes([d[-3] ^ 1]) + d[-2:], "Wrong RDB checksum expected: ("),
    (lambda d: relabel(d[:first_key_offset(d)] + b"\xc8" + d[first_key_offset(d) + 1:], b"VALKEY080"),
     "Unknown RDB encoding type 200 at offset"),
    (lambda d: relabel(d[:first_key_offset(d)] + b"\x08" + d[first_key_offset(d) + 1:], b"VALKEY080"),
     "Unknown RDB encoding type 8 at offset"),
    (lambda d: relabel(d[:first_key_offset(d)] + b"\x07\x01k\x81" + (12345 << 10).to_bytes(8, "big")
                       + d[first_key_offset(d):], b"VALKEY080"),
     "The RDB file contains module data I can't load: no matching module type 'AAAAAADA5'"),
    (lambda d: relabel(d[:9] + b"\xf7\x81" + (12345 << 10).to_bytes(8, "big") + b"\x02\x02" + d[9:],
                       b"VALKEY080"),
     "The RDB file contains AUX module data I can't load: no matching module 'AAAAAADA5' at offset 9"),
    (lambda d: relabel(d[:first_key_offset(d)] + b"\x00\x01k\x81" + (1 << 40).to_bytes(8, "big")
                       + b"abc" + d[first_key_offset(d):], b"VALKEY080"),
     "Unexpected EOF reading RDB file (Short read loading DB) at offset"),
    (lambda d: relabel(d[:first_key_offset(d)] + b"\x00\x01k\x01v" + d[first_key_offset(d):], b"VALKEY080"),
     "Duplicated key found in RDB file: b'k'"),
    (lambda d: relabel(d.replace(b"\xfe\x00\xfb", b"\xfe\x40\x40\xfb", 1), b"VALKEY080"),
     "configured to handle more than 16 databases (DB 64)"),
    (lambda d: relabel(d[:first_key_offset(d)] + b"\x16" + d[first_key_offset(d) + 1:], b"REDIS0011"),
     "Can't handle foreign type or opcode 22 in RDB with version 11"),
    (lambda d: relabel(d[:first_key_offset(d)] + b"\x10\x01h\x07" + b"\x09\x00\x00\x00\x00\x00\xff"
                       + d[first_key_offset(d):], b"VALKEY080"),
     "Bad data format in the value of key b'h' (listpack header)"),
])
def test_bad_files_are_refused_with_the_offset_and_the_cause(damage: Any, message: str) -> None:
    data = damage(small_file())
    with pytest.raises(LoadError) as raised:
        rdbfile.parse_rdb("dump.rdb", data, options())
    assert str(raised.value).startswith("dump.rdb: ")
    assert message in str(raised.value)
    assert re.search(r"at offset \d+", str(raised.value))


def test_a_refused_file_leaves_nothing_loaded() -> None:
    data = small_file()
    cut = data[:-5]
    state = new_state()
    with pytest.raises(LoadError):
        load_file(state, "dump.rdb", cut, drop_expired=True)
    assert not any(db.data for db in state.dbs)
    counts = load_file(state, "dump.rdb", data, drop_expired=True)
    assert counts.loaded == 2 and state.dbs[0].data[b"k"] == b"value"


@given(st.data())
def test_every_cut_and_every_flipped_byte_is_refused(data: st.DataObject) -> None:
    whole = small_file()
    cut = data.draw(st.integers(0, len(whole) - 1))
    with pytest.raises(LoadError):
        rdbfile.parse_rdb("dump.rdb", whole[:cut], options())
    at = data.draw(st.integers(9, len(whole) - 1))  # the magic's own damage is above
    flipped = bytearray(whole)
    flipped[at] ^= data.draw(st.integers(1, 255))
    with pytest.raises(LoadError):
        rdbfile.parse_rdb("dump.rdb", bytes(flipped), options())


def test_a_bad_file_stops_the_server_from_starting(tmp_path: Path) -> None:
    dump = tmp_path / "dump.rdb"
    for data, message in [(b"VALKEY081" + small_file()[9:], "Can't handle RDB format version 81"),
                          (small_file()[:-30], "Unexpected EOF reading RDB file"),
                          (small_file()[:-1] + b"\x00", "Wrong RDB checksum")]:
        dump.write_bytes(data)
        stderr = refused(tmp_path)
        assert f"{dump}: {message}" in stderr and "at offset" in stderr
        assert dump.read_bytes() == data  # never overwritten


def test_an_empty_key_is_skipped_as_valkey_skips_it() -> None:
    data = small_file()
    at = first_key_offset(data)
    data = relabel(data[:at] + b"\x02\x05empty\x00" + data[at:], b"VALKEY080")
    contents = rdbfile.parse_rdb("dump.rdb", data, options())
    assert contents.empty_keys == [b"empty"] and set(contents.dbs[0].values) == {b"k", b"n"}


# --- slices ----------------------------------------------------------------------------------------


def big_values() -> dict[bytes, Any]:
    """A value of each kind big enough to need many slices, built by commands."""
    state = new_state()
    client = Client(state)
    script = [
        ("SADD", "set", *[f"member:{i}" for i in range(20_000)]),
        ("ZADD", "zset", *[x for i in range(20_000) for x in (i, f"m{i}")]),
        ("HSET", "hash", *[x for i in range(20_000) for x in (f"f{i}", i)]),
        ("RPUSH", "list", *[f"element:{i}" for i in range(20_000)]),
        ("SET", "string", "compressible text " * 20_000),
        *[("XADD", "stream", f"1-{i}", "f", i) for i in range(1, 3_001)],
        ("XGROUP", "CREATE", "stream", "g", "0"),
        ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "stream", ">"),
    ]
    for argv in script:
        command = state.lookup_command([str(a).encode() for a in argv])
        state.now = state.clock.now_ms()
        command.handler(client, [str(a).encode() for a in argv])
    return dict(state.dbs[0].data.items())


def test_a_background_save_pauses_within_every_big_value() -> None:
    limits = rdb.Limits()
    for key, value in big_values().items():
        out = [bytes((rdb.object_type(value),))]
        pauses = sum(1 for _ in rdb.iter_body(value, limits, out))
        size = len(value) if not isinstance(value, bytes) else len(value) // rdb.LZF_SLICE * rdb.STEP
        assert pauses >= size // rdb.STEP - 1, key
        assert b"".join(out) == rdb.serialize(value, limits), key  # the same bytes, in pieces


def test_a_background_save_pauses_every_64_keys_and_within_the_checksum() -> None:
    state = new_state()
    for i in range(10_000):
        state.dbs[i % 3].load(b"key:%d" % i, b"value:%d" % i, -1, 0)
    out: list[bytes] = []
    options_ = rdbfile.SaveOptions(rdb.Limits(), "9.1.2", 0, used_memory=0)
    pauses = sum(1 for _ in rdbfile.iter_rdb(copied_image(state), options_, 0, out))
    data = b"".join(out)
    assert pauses >= 10_000 // 64 + len(data) // rdbfile.BLOCK
    assert data == rdbfile.rdb_bytes(live_image(state), options_, 0)


# --- fakekey's former snapshot --------------------------------------------------------------------


@needs_valkey
def test_a_snapshot_of_the_former_format_loads_and_the_next_save_is_valkeys(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    state = new_state()
    state.dbs[0].load(b"old", b"format", -1, 0)
    state.dbs[2].load(b"other", b"db", 4_000_000_000_000, 0)
    (tmp_path / "dump.rdb").write_bytes(snapshot_bytes(live_image(state), 0))
    with fakekey(tmp_path) as r:
        assert ok(r.call("GET", "old")) == b"format"
        ok(r.call("SAVE"))
    assert any("former format (FKSNAP)" in line and "Valkey's RDB format" in line
               for line in caplog.messages), caplog.messages
    assert (tmp_path / "dump.rdb").read_bytes()[:9] == b"VALKEY080"
    with real(VALKEY, tmp_path) as valkey:
        assert ok(valkey.client.call("GET", "old")) == b"format"
        ok(valkey.client.call("SELECT", 2))
        assert ok(valkey.client.call("PEXPIRETIME", "other")) == 4_000_000_000_000


# --- fixtures --------------------------------------------------------------------------------------


def make_fixture(binary: str, name: str, flags: tuple[str, ...] = ()) -> None:
    """Write data/rdb/<name>.rdb and .view: a real server's file of `populate`, and the
    content it describes (run: python tests/fakekey/test_rdb_files.py BINARY NAME)."""
    DATA.mkdir(parents=True, exist_ok=True)
    work = Path(os.environ.get("TMPDIR", "/tmp")) / f"rdb-fixture-{name}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    version = subprocess.run([binary, "--version"], capture_output=True, text=True).stdout
    old = "v=6." in version
    with real(binary, work, *flags, name="redis-server") as server:
        populate(server.client, functions=not old, field_ttls=False, hash_2=False, small=True)
        described = digested(view(server.client, exact=False))
        ok(server.client.call("SAVE"))
    shutil.copy(work / "dump.rdb", DATA / f"{name}.rdb")
    (DATA / f"{name}.view").write_text("".join(f"{item!r}\n" for item in sorted(described.items())))
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    make_fixture(sys.argv[1], sys.argv[2], tuple(sys.argv[3:]))
