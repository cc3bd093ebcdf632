"""DUMP, RESTORE, RESTORE-ASKING and MIGRATE: payloads byte for byte, values exchanged
between fakekey and a real Valkey in both directions, errors, and MIGRATE transfers."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from fakekey.persistence import rdb
from fakekey.testing.targets import FakekeyTarget, Target, ValkeyTarget, find_valkey_binary, free_port

# --- a second server of the other kind ------------------------------------------------------

_peers: dict[str, Target] = {}


def _peer_of(kind: str) -> Target:
    peer = _peers.get(kind)
    if peer is None:
        if kind == "valkey":
            binary = find_valkey_binary()
            if binary is None:
                pytest.skip("no valkey-server binary")
            peer = ValkeyTarget(binary)
        else:
            peer = FakekeyTarget()
        peer.start()
        _peers[kind] = peer
    peer.reset()
    return peer


@pytest.fixture(scope="module", autouse=True)
def _stop_peers() -> Iterator[None]:
    yield
    for peer in _peers.values():
        peer.stop()
    _peers.clear()


@pytest.fixture
def peer(target: Target) -> Target:
    """A server of the other kind (fakekey for valkey, valkey for fakekey)."""
    return _peer_of("valkey" if target.is_fakekey else "fakekey")


def _twin(target: Target) -> Target:
    kind = "fakekey" if target.is_fakekey else "valkey"
    key = kind + "-twin"
    twin = _peers.get(key)
    if twin is None:
        twin = FakekeyTarget() if kind == "fakekey" else ValkeyTarget(find_valkey_binary() or "")
        twin.start()
        _peers[key] = twin
    twin.reset()
    return twin


def _redis(t: Target) -> redis.Redis:
    return redis.Redis(host=t.host, port=t.port)


# --- building values and describing them -------------------------------------------------------


def build_values(c: redis.Redis) -> None:
    c.set("str", "hello")
    c.set("int", "12")
    c.set("neg", "-123456789")
    c.set("big", "12345678901234")
    c.set("long", "x" * 100)
    c.set("text", "The quick brown fox jumps over the lazy dog " * 5)
    c.rpush("list", "a", "b", "1", "-5", "hello world this is long enough")
    c.rpush("biglist", *[f"element-{i}" * 3 for i in range(600)])
    c.rpush("hugeitem", "small", "z" * 10000, "tail")
    c.sadd("intset", 1, 2, 3, -100000)
    c.sadd("wideintset", 1, 2**40)
    c.sadd("lpset", "a", "b", "c")
    c.sadd("htset", *[f"m{i}" for i in range(200)])
    c.hset("hash", mapping={"f": "v", "g": "12"})
    c.hset("bighash", mapping={f"f{i}": f"v{i}" for i in range(600)})
    c.hset("longhash", mapping={"f": "v" * 100})
    c.zadd("zset", {"a": 1, "b": 2.5, "c": -0.0, "d": 1e20, "e": 0.1, "f": float("inf")})
    c.zadd("bigzset", {f"m{i}": i / 3 for i in range(200)})
    c.xadd("stream", {"f": "v", "g": "1"}, id="1-1")
    c.xadd("stream", {"f": "w", "g": "2"}, id="1-2")
    c.xadd("stream", {"x": "y"}, id="5-0")
    c.xadd("stream", {"f": "z", "g": "3"}, id="6-0")
    c.xgroup_create("stream", "grp", "0")
    c.xgroup_create("stream", "other", "$")
    c.xreadgroup("grp", "alice", {"stream": ">"}, count=2)
    c.xreadgroup("grp", "bob", {"stream": ">"}, count=1)
    c.xclaim("stream", "grp", "bob", 0, ["1-1"])
    c.xdel("stream", "1-2")
    c.xadd("emptystream", {"a": "1"}, id="3-3")
    c.xdel("emptystream", "3-3")
    c.pexpire("hash", 100000)


def describe(c: redis.Redis, key: str) -> tuple[Any, ...]:
    kind = c.type(key).decode()
    encoding = c.object("encoding", key)
    ttl = c.pttl(key) > 0
    if kind == "string":
        content: Any = c.get(key)
    elif kind == "list":
        content = c.lrange(key, 0, -1)
    elif kind == "set":
        members = c.smembers(key)
        # intset and listpack sets iterate in a defined order; a hashtable's is Valkey's own
        content = c.execute_command("SMEMBERS", key) if encoding != b"hashtable" else sorted(members)
    elif kind == "hash":
        content = c.hgetall(key) if encoding == b"listpack" else sorted(c.hgetall(key).items())
    elif kind == "zset":
        content = c.zrange(key, 0, -1, withscores=True)
    else:
        info = c.execute_command("XINFO", "STREAM", key, "FULL")
        content = info
    return kind, encoding, ttl, content


# --- DUMP bytes ----------------------------------------------------------------------------------

# What Valkey 9.1.2 answers; fakekey must answer the same bytes.
EXPECTED_DUMPS = {
    "str": b"\x00\x05helloP\x00\xac\x58\x16\xe7\xfb\x66\x47\xfe",
    "int": b"\x00\xc0\x0cP\x00\xf3\x001\xc0\xc2V\xdb!",
    "neg": b"\x00\xc2\xeb2\xa4\xf8P\x00\xd45y\xab$\xd3\xe1\xaf",
    "big": b"\x00\x0e12345678901234P\x00`\xe1E\xea\xe8\xf2\xec\x9e",
    "long": b"\x00\xc3\t@d\x01xx\xe0W\x00\x01xxP\x00\x92\x9d?\xf2%Z\x05\xab",
    "list": b"\x12\x01\x0233\x00\x00\x00\x05\x00\x81a\x02\x81b\x02\x01\x01\xdf\xfb\x02\x9fhello "
            b"world this is long enough \xffP\x00v\x7fX\xff\xaa\xd3\xc8\xca",
    "intset": b"\x0b\x18\x04\x00\x00\x00\x04\x00\x00\x00`y\xfe\xff\x01\x00\x00\x00\x02\x00\x00"
              b"\x00\x03\x00\x00\x00P\x00D%\xb1\x934x\x10T",
    "lpset": b"\x14\x10\x10\x00\x00\x00\x03\x00\x81a\x02\x81b\x02\x81c\x02\xffP\x00\xcb\xc0 "
             b"\x85\xa8\xc5\x17J",
}


def test_dump_bytes_equal_valkeys(r: Any, client: redis.Redis) -> None:
    build_values(client)
    for key, payload in EXPECTED_DUMPS.items():
        assert r.call("DUMP", key) == ("$", payload), key


def test_dump_of_small_containers_is_valkeys_bytes(target: Target, peer: Target) -> None:
    """Hashes, sorted sets (scores as Valkey prints them) and streams: same bytes on
    both servers for the same commands (times aside, set equal by the test)."""
    here, there = _redis(target), _redis(peer)
    for c in (here, there):
        c.hset("hash", mapping={"f": "v", "g": "12", "n": "-77777"})
        c.zadd("zset", {"a": 1, "b": 2.5, "c": -0.0, "d": 1e20, "e": 0.1, "f": float("inf"),
                        "g": 2**63, "h": -1.5e-7, "i": 1e17})
        c.xadd("s", {"f": "v", "g": "1"}, id="1-1")
        c.xadd("s", {"f": "w", "g": "2"}, id="1-2")
        c.xadd("s", {"x": "y"}, id="5-0")
        c.xdel("s", "1-2")
        c.xgroup_create("s", "grp", "0", entries_read=0)
    for key in ("hash", "zset", "s"):
        assert here.dump(key) == there.dump(key), key


def test_dump_missing_key(r: Any, proto: int) -> None:
    assert r.call("DUMP", "nokey") == (("$", None) if proto == 2 else ("_", None))


# --- exchange between servers ----------------------------------------------------------------

KEYS = ["str", "int", "neg", "big", "long", "text", "list", "biglist", "hugeitem", "intset",
        "wideintset", "lpset", "htset", "hash", "bighash", "longhash", "zset", "bigzset",
        "stream", "emptystream"]


def _exchange(source: redis.Redis, sink: redis.Redis) -> None:
    for key in KEYS:
        payload = source.dump(key)
        ttl = max(source.pttl(key), 0)
        assert sink.restore(key, ttl, payload) == b"OK", key
        assert describe(sink, key) == describe(source, key), key


def test_restore_what_the_other_server_dumped(target: Target, peer: Target) -> None:
    here, there = _redis(target), _redis(peer)
    build_values(there)
    _exchange(there, here)


def test_other_server_restores_what_this_one_dumped(target: Target, peer: Target) -> None:
    here, there = _redis(target), _redis(peer)
    build_values(here)
    _exchange(here, there)


# values whose payload does not depend on hash order or on LZF (whose output on Valkey
# can vary with its uncleared hash table)
SAME_BYTES_AGAIN = {"str", "int", "neg", "big", "long", "list", "intset", "wideintset",
                    "lpset", "hash", "zset", "stream", "emptystream", "hugeitem"}


def test_restore_on_the_same_server(client: redis.Redis) -> None:
    build_values(client)
    for key in KEYS:
        before = describe(client, key)
        payload = client.dump(key)
        assert client.restore(key, 0, payload, replace=True) == b"OK"
        kind, encoding, _, content = describe(client, key)
        assert (kind, encoding, content) == (before[0], before[1], before[3]), key
        if key in SAME_BYTES_AGAIN:
            assert client.dump(key) == payload, key


def test_hash_field_ttls_travel(target: Target, peer: Target) -> None:
    here, there = _redis(target), _redis(peer)
    here.hset("h", mapping={"a": "1", "b": "2", "c": "3"})
    here.execute_command("HPEXPIRE", "h", 500000, "FIELDS", 1, "a")
    payload = here.dump("h")
    assert payload[0] == rdb.T_HASH_2
    there.restore("h", 0, payload)
    assert there.object("encoding", "h") == b"hashtable"
    assert sorted(there.hgetall("h").items()) == [(b"a", b"1"), (b"b", b"2"), (b"c", b"3")]
    assert (there.execute_command("HPEXPIRETIME", "h", "FIELDS", 3, "a", "b", "c")
            == here.execute_command("HPEXPIRETIME", "h", "FIELDS", 3, "a", "b", "c"))


def test_restored_encoding_follows_the_thresholds(client: redis.Redis) -> None:
    client.rpush("l", *range(10))
    client.sadd("s", *range(10))
    client.hset("h", mapping={str(i): i for i in range(10)})
    client.zadd("z", {str(i): i for i in range(10)})
    payloads = {k: client.dump(k) for k in "lshz"}
    names = ["list-max-listpack-size", "set-max-intset-entries", "hash-max-listpack-entries",
             "zset-max-listpack-entries"]
    saved = {name: client.config_get(name)[name] for name in names}
    try:
        for name, value in zip(names, (4, 4, 4, 4), strict=True):
            client.config_set(name, value)
        for k, payload in payloads.items():
            client.restore(k + "2", 0, payload)
        assert [client.object("encoding", k + "2") for k in "lshz"] == [
            b"quicklist", b"hashtable", b"hashtable", b"skiplist"]
        assert client.lrange("l2", 0, -1) == [str(i).encode() for i in range(10)]
    finally:
        for name, value in saved.items():
            client.config_set(name, value)


# --- RESTORE options and errors ------------------------------------------------------------------


def _with_version(payload: bytes, version: int, body: bytes | None = None) -> bytes:
    raw = (payload[:-10] if body is None else body) + version.to_bytes(2, "little")
    return raw + rdb.crc64(raw).to_bytes(8, "little")


def test_restore_errors(r: Any) -> None:
    r.call("SET", "a", "1")
    payload = r.call("DUMP", "a")[1]
    assert r.call("RESTORE", "a", "0", payload) == ("-", b"BUSYKEY Target key name already exists.")
    assert r.call("RESTORE", "a", "-1", "junk") == ("-", b"BUSYKEY Target key name already exists.")
    assert r.call("RESTORE", "b", "-1", "junk") == ("-", b"ERR Invalid TTL value, must be >= 0")
    assert r.call("RESTORE", "b", "x", payload) == ("-", b"ERR value is not an integer or out of range")
    wrong = ("-", b"ERR DUMP payload version or checksum are wrong")
    assert r.call("RESTORE", "b", "0", "junk") == wrong
    assert r.call("RESTORE", "b", "0", payload[:-1] + bytes([payload[-1] ^ 1])) == wrong
    assert r.call("RESTORE", "b", "0", payload, "IDLETIME", "-1") == (
        "-", b"ERR Invalid IDLETIME value, must be >= 0")
    assert r.call("RESTORE", "b", "0", payload, "FREQ", "256") == (
        "-", b"ERR Invalid FREQ value, must be >= 0 and <= 255")
    syntax = ("-", b"ERR syntax error")
    assert r.call("RESTORE", "b", "0", payload, "IDLETIME", "1", "FREQ", "2") == syntax
    assert r.call("RESTORE", "b", "0", payload, "FREQ", "2", "IDLETIME", "1") == syntax
    assert r.call("RESTORE", "b", "0", payload, "IDLETIME") == syntax
    assert r.call("RESTORE", "b", "0", payload, "BLAH") == syntax
    assert r.call("RESTORE", "b", "0", payload, "IDLETIME", "x") == (
        "-", b"ERR value is not an integer or out of range")
    assert r.call("EXISTS", "b") == (":", 0)
    assert r.call("RESTORE-ASKING", "a", "0", payload) == (
        "-", b"BUSYKEY Target key name already exists.")


def test_restore_versions(r: Any) -> None:
    r.call("SET", "a", "1")
    payload = r.call("DUMP", "a")[1]
    assert payload[-10:-8] == b"P\x00"  # RDB 80
    wrong = ("-", b"ERR DUMP payload version or checksum are wrong")
    for version in (0, 12, 79, 81, 300):
        assert r.call("RESTORE", f"v{version}", "0", _with_version(payload, version)) == wrong
    for version in (1, 9, 11, 80):
        assert r.call("RESTORE", f"v{version}", "0", _with_version(payload, version)) == ("+", b"OK")
        assert r.call("GET", f"v{version}") == ("$", b"1")


def test_restore_versions_relaxed(r: Any) -> None:
    """rdb-version-check relaxed: foreign (12..79) and future versions are read, but a
    foreign payload may only hold the types that existed before the ranges split."""
    assert r.call("CONFIG", "SET", "rdb-version-check", "relaxed") == ("+", b"OK")
    try:
        string = b"\x00\x02hi"
        hash2 = b"\x16\x01\x01a\xc0\x01" + (-1).to_bytes(8, "little", signed=True)
        ok = ("+", b"OK")
        assert r.call("RESTORE", "a", "0", _with_version(b"", 12, string)) == ok
        assert r.call("RESTORE", "b", "0", _with_version(b"", 12, hash2)) == (
            "-", b"ERR Unsupported foreign data type: 22")
        assert r.call("RESTORE", "c", "0", _with_version(b"", 81, string)) == ok
        assert r.call("RESTORE", "d", "0", _with_version(b"", 1000, string)) == ok
        assert r.call("RESTORE", "e", "0", _with_version(b"", 81, b"\x17\x00")) == (
            "-", b"ERR Bad data format")
        assert r.call("RESTORE", "g", "0", _with_version(b"", 0, string)) == (
            "-", b"ERR DUMP payload version or checksum are wrong")
        assert r.call("MGET", "a", "c", "d") == ("*", [("$", b"hi")] * 3)
    finally:
        r.call("CONFIG", "SET", "rdb-version-check", "strict")


def test_restore_bad_data_format(r: Any) -> None:
    bad = ("-", b"ERR Bad data format")
    for body in (b"\x08\x00", b"\x02\x00", b"\x17\x00", b"\x06\x00", b"\x12\x01\x03\x00",
                 b"\x0e\x00", b"\x05\x01\x01a" + b"\x00" * 6 + b"\xf8\x7f",
                 b"\x10\x0f\x0f\x00\x00\x00\x02\x00\x81a\x02\x81a\x02\xff",
                 b"\x16\x01\x01a\xc0\x01" + (-5).to_bytes(8, "little", signed=True)):
        assert r.call("RESTORE", "k", "0", _with_version(b"", 80, body)) == bad, body
    assert r.call("EXISTS", "k") == (":", 0)


def test_restore_reads_into_the_footer_and_ignores_trailing_bytes(r: Any) -> None:
    # a string length running past the body reads the footer's bytes, as Valkey's rio does
    payload = _with_version(b"", 80, b"\x00\x05ab")
    assert r.call("RESTORE", "k", "0", payload) == ("+", b"OK")
    assert r.call("GET", "k") == ("$", b"ab" + payload[-10:-7])
    assert r.call("RESTORE", "k2", "0", _with_version(b"", 80, b"\x00\x02abc")) == ("+", b"OK")
    assert r.call("GET", "k2") == ("$", b"ab")


def test_restore_ttl_options(r: Any) -> None:
    r.call("SET", "a", "1")
    payload = r.call("DUMP", "a")[1]
    assert r.call("RESTORE", "t", "100000", payload) == ("+", b"OK")
    assert 99000 <= r.call("PTTL", "t")[1] <= 100000
    future = int(time.time() * 1000) + 200000
    assert r.call("RESTORE", "u", str(future), payload, "ABSTTL") == ("+", b"OK")
    assert 190000 <= r.call("PTTL", "u")[1] <= 200000
    assert r.call("RESTORE", "gone", "1", payload, "ABSTTL") == ("+", b"OK")
    assert r.call("EXISTS", "gone") == (":", 0)
    assert r.call("RESTORE", "a", "1", payload, "ABSTTL", "REPLACE") == ("+", b"OK")
    assert r.call("EXISTS", "a") == (":", 0)
    assert r.call("RESTORE", "i", "0", payload, "IDLETIME", "1000") == ("+", b"OK")
    assert 1000 <= r.call("OBJECT", "IDLETIME", "i")[1] <= 1002
    assert r.call("RESTORE", "f", "0", payload, "FREQ", "7", "replace", "absttl") == ("+", b"OK")
    # a relative TTL that overflows when added to the clock: already expired
    assert r.call("RESTORE", "o", str(2**63 - 1), payload) == ("+", b"OK")
    assert r.call("EXISTS", "o") == (":", 0)
    assert r.call("RESTORE", "o", str(2**63 - 1000), payload, "ABSTTL") == ("+", b"OK")
    assert r.call("PTTL", "o")[1] > 2**62
    assert r.call("PTTL", "f") == (":", -1)


def test_restore_notifies_restore(target: Target) -> None:
    c = _redis(target)
    c.config_set("notify-keyspace-events", "KEA")
    pubsub = c.pubsub()
    pubsub.psubscribe("__keyevent@0__:*")
    pubsub.get_message(timeout=1)
    c.set("a", "1")
    c.restore("b", 0, c.dump("a"))
    events = []
    deadline = time.time() + 2
    while time.time() < deadline and b"__keyevent@0__:restore" not in events:
        message = pubsub.get_message(timeout=0.2)
        if message:
            events.append(message["channel"])
    pubsub.close()
    assert events == [b"__keyevent@0__:set", b"__keyevent@0__:restore"]


# --- MIGRATE ---------------------------------------------------------------------------------------


def _closed_port() -> int:
    return free_port()


class _Silent:
    """A listener that accepts and never answers (MIGRATE's read timeout)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(4)
        self.port = self.sock.getsockname()[1]
        self.conns: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        try:
            while True:
                conn, _ = self.sock.accept()
                self.conns.append(conn)
        except OSError:
            pass

    def close(self) -> None:
        for conn in self.conns:
            conn.close()
        self.sock.close()


def test_migrate_to_the_other_server_and_back(r: Any, target: Target, peer: Target) -> None:
    here, there = _redis(target), _redis(peer)
    build_values(here)
    expected = {key: describe(here, key) for key in KEYS}
    assert r.call("MIGRATE", peer.host, str(peer.port), "str", "0", "5000") == ("+", b"OK")
    assert here.exists("str") == 0
    assert describe(there, "str") == expected["str"]
    rest = [k for k in KEYS if k != "str"]
    assert r.call("MIGRATE", peer.host, str(peer.port), "", "0", "5000", "COPY", "KEYS",
                  *rest, "missing") == ("+", b"OK")
    for key in rest:
        assert describe(there, key) == expected[key], key
        assert describe(here, key) == expected[key], key
    assert r.call("MIGRATE", peer.host, str(peer.port), "list", "0", "5000") == (
        "-", b"ERR Target instance replied with error: BUSYKEY Target key name already exists.")
    assert here.exists("list") == 1
    assert r.call("MIGRATE", peer.host, str(peer.port), "list", "3", "5000", "REPLACE") == (
        "+", b"OK")
    assert _redis_db(peer, 3).lrange("list", 0, -1) == expected["list"][3]
    # and back: the peer migrates to this server
    assert there.migrate(target.host, target.port, ["str"], 0, 5000) == b"OK"
    assert describe(here, "str") == expected["str"]


def _redis_db(t: Target, db: int) -> redis.Redis:
    return redis.Redis(host=t.host, port=t.port, db=db)


def test_migrate_to_a_server_of_the_same_kind(r: Any, target: Target) -> None:
    other = _twin(target)
    here, there = _redis(target), _redis(other)
    build_values(here)
    expected = {key: describe(here, key) for key in KEYS}
    assert r.call("MIGRATE", other.host, str(other.port), "", "0", "5000", "REPLACE", "KEYS",
                  *KEYS) == ("+", b"OK")
    assert here.exists(*KEYS) == 0
    for key in KEYS:
        assert describe(there, key) == expected[key], key


def test_migrate_errors(r: Any) -> None:
    assert r.call("MIGRATE", "127.0.0.1", "1", "nokey", "0", "100") == ("+", b"NOKEY")
    assert r.call("MIGRATE", "127.0.0.1", "1", "", "0", "100", "KEYS", "a", "b") == ("+", b"NOKEY")
    r.call("SET", "a", "1")
    assert r.call("MIGRATE", "127.0.0.1", "1", "a", "0", "100", "KEYS", "a") == (
        "-", b"ERR When using MIGRATE KEYS option, the key argument must be set to the empty string")
    assert r.call("MIGRATE", "127.0.0.1", "1", "a", "x", "100") == (
        "-", b"ERR value is not an integer or out of range")
    assert r.call("MIGRATE", "127.0.0.1", "1", "a", "0", "x") == (
        "-", b"ERR value is not an integer or out of range")
    assert r.call("MIGRATE", "127.0.0.1", "1", "a", "0", "100", "AUTH") == ("-", b"ERR syntax error")
    assert r.call("MIGRATE", "127.0.0.1", "1", "a", "0", "100", "AUTH2", "u") == (
        "-", b"ERR syntax error")
    assert r.call("MIGRATE", "127.0.0.1", "1", "a", "0", "100", "FOO") == ("-", b"ERR syntax error")
    port = str(_closed_port())
    assert r.call("MIGRATE", "127.0.0.1", port, "a", "0", "200") == (
        "-", b"IOERR error or timeout writing to target instance")
    assert r.call("GET", "a") == ("$", b"1")


def test_migrate_read_timeout(r: Any) -> None:
    silent = _Silent()
    try:
        r.call("SET", "a", "1")
        start = time.time()
        assert r.call("MIGRATE", "127.0.0.1", str(silent.port), "a", "0", "300") == (
            "-", b"IOERR error or timeout reading to target instance")
        assert 0.25 <= time.time() - start < 3
        assert r.call("GET", "a") == ("$", b"1")
    finally:
        silent.close()


def test_migrate_auth(r: Any, target: Target) -> None:
    # a fresh server: Valkey keeps MIGRATE's connections for 10 s, and one opened (or
    # authenticated) earlier stays so after requirepass changes
    other = FakekeyTarget() if target.is_fakekey else ValkeyTarget(find_valkey_binary() or "")
    other.start()
    try:
        redis.Redis(host=other.host, port=other.port).config_set("requirepass", "secret")
        r.call("SET", "a", "1")
        assert r.call("MIGRATE", other.host, str(other.port), "a", "0", "2000") == (
            "-", b"ERR Target instance replied with error: NOAUTH Authentication required.")
        assert r.call("MIGRATE", other.host, str(other.port), "a", "0", "2000", "AUTH", "bad") == (
            "-", b"ERR Target instance replied with error: WRONGPASS invalid username-password "
            b"pair or user is disabled.")
        assert r.call("MIGRATE", other.host, str(other.port), "a", "0", "2000", "AUTH2",
                      "default", "secret") == ("+", b"OK")
        assert r.call("EXISTS", "a") == (":", 0)
        authed = redis.Redis(host=other.host, port=other.port, password="secret")
        assert authed.get("a") == b"1"
    finally:
        other.stop()


def test_migrate_key_positions(r: Any) -> None:
    assert r.call("COMMAND", "GETKEYS", "MIGRATE", "h", "p", "", "0", "5", "KEYS", "a", "b") == (
        "*", [("$", b"a"), ("$", b"b")])
    assert r.call("COMMAND", "GETKEYS", "MIGRATE", "h", "p", "k", "0", "5") == ("*", [("$", b"k")])
    assert r.call("COMMAND", "GETKEYS", "MIGRATE", "h", "p", "k", "0", "5", "AUTH", "KEYS", "x") == (
        "*", [("$", b"k")])


def test_migrate_keeps_its_connection(r: Any, target: Target) -> None:
    """Valkey reuses MIGRATE's connection for 10 s: SELECT only when the db changes, and
    a connection opened before requirepass stays authenticated."""
    other = FakekeyTarget() if target.is_fakekey else ValkeyTarget(find_valkey_binary() or "")
    other.start()
    try:
        there = redis.Redis(host=other.host, port=other.port)
        for key in ("a", "b", "c"):
            r.call("SET", key, "1")
        assert r.call("MIGRATE", other.host, str(other.port), "a", "0", "2000") == ("+", b"OK")
        assert r.call("MIGRATE", other.host, str(other.port), "b", "0", "2000") == ("+", b"OK")
        links = [c for c in there.client_list() if c["cmd"] == "restore"]
        assert [c["tot-cmds"] for c in links] == ["3"]  # SELECT, RESTORE, RESTORE
        there.config_set("requirepass", "secret")
        assert r.call("MIGRATE", other.host, str(other.port), "c", "0", "2000") == ("+", b"OK")
        authed = redis.Redis(host=other.host, port=other.port, password="secret")
        assert sorted(authed.keys()) == [b"a", b"b", b"c"]
    finally:
        other.stop()


def test_restore_freq_sets_the_lfu_counter(r2):
    r2.call("CONFIG", "SET", "maxmemory-policy", "allkeys-lfu")
    try:
        r2.call("SET", "k", "v")
        payload = r2.call("DUMP", "k")[1]
        assert r2.call("RESTORE", "k2", 0, payload, "FREQ", 100) == ("+", b"OK")
        assert r2.call("OBJECT", "FREQ", "k2") == (":", 100)
    finally:
        r2.call("CONFIG", "SET", "maxmemory-policy", "noeviction")
