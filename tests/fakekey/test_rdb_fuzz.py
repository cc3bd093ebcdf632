"""Hostile DUMP payloads: mutations of valid payloads of every type and encoding, given a
valid CRC, must restore to a value or fail with the format's own errors, quickly and
without large allocations; a restored value must serialize again. Over the wire, RESTORE
answers such payloads with Valkey's errors and the server keeps serving."""

from __future__ import annotations

import struct
import time
import tracemalloc
from collections.abc import Iterator

import pytest
import redis
from hypothesis import given
from hypothesis import strategies as st

from fakekey.net.server import Server
from fakekey.persistence import rdb

LIMITS = rdb.Limits()
SMALL = rdb.Limits(hash_entries=4, set_intset_entries=4, set_entries=4, zset_entries=4,
                   list_size=2)


def _seal(body: bytes, version: int = rdb.RDB_VERSION) -> bytes:
    raw = body + version.to_bytes(2, "little")
    return raw + rdb.crc64(raw).to_bytes(8, "little")


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    srv = Server().start()
    yield srv
    srv.stop()


def _build(c: redis.Redis) -> None:
    c.set("str", "hello")
    c.set("int", "-1234567")
    c.set("lzf", "abcabcabcabcabcabcabcabcabcabc" * 4)
    c.rpush("list", "a", "b", "1", "-5", "x" * 70, 2**40)
    c.rpush("quick", *[f"item{i}" * 40 for i in range(60)])
    c.sadd("intset", 1, 2, 3, -100000, 2**40)
    c.sadd("lpset", "a", "b", "c")
    c.sadd("htset", *[f"m{i}" for i in range(200)])
    c.hset("hash", mapping={"f": "v", "g": "12"})
    c.hset("bighash", mapping={f"f{i}": i for i in range(600)})
    c.hset("ttlhash", mapping={"a": "1", "b": "2"})
    c.execute_command("HPEXPIRE", "ttlhash", 100000, "FIELDS", 1, "a")
    c.zadd("zset", {"a": 1, "b": 2.5, "c": float("inf")})
    c.zadd("bigzset", {f"m{i}": i / 7 for i in range(200)})
    c.xadd("stream", {"f": "v", "g": "1"}, id="1-1")
    c.xadd("stream", {"f": "w", "g": "2"}, id="1-2")
    c.xadd("stream", {"x": "y"}, id="5-0")
    c.xgroup_create("stream", "grp", "0")
    c.xreadgroup("grp", "alice", {"stream": ">"}, count=2)
    c.xdel("stream", "1-2")


@pytest.fixture(scope="module")
def seeds(server: Server) -> list[bytes]:
    c = redis.Redis(host=server.host, port=server.port)
    _build(c)
    payloads = [c.dump(key) for key in sorted(c.keys())]
    # older encodings Valkey still loads: LIST, ZSET with text scores, ziplists
    old = [
        b"\x01\x02\x01a\xc0\x05",
        b"\x03\x02\x01a\x031.5\x01b\xfe",
        _ziplist_body(10, [b"a", b"12", b"hello"]),
        _ziplist_body(13, [b"f", b"v", b"g", b"1"]),
        _ziplist_body(12, [b"m", b"1.5", b"n", b"2"]),
        b"\x09\x0d\x02\x01a\x01\x00b\x01c\x02\x00dd\xff",
    ]
    return payloads + [_seal(body, 9) for body in old]


def _ziplist_body(rdb_type: int, items: list[bytes]) -> bytes:
    entries = b""
    prev = 0
    last = 10
    for item in items:
        last = 10 + len(entries)
        entry = bytes((prev,)) + bytes((len(item),)) + item
        entries += entry
        prev = len(entry)
    total = 10 + len(entries) + 1
    blob = (total.to_bytes(4, "little") + last.to_bytes(4, "little")
            + len(items).to_bytes(2, "little") + entries + b"\xff")
    return bytes((rdb_type,)) + bytes((len(blob),)) + blob


def _restore(payload: bytes, limits: rdb.Limits = LIMITS) -> object | None:
    try:
        value = rdb.restore(payload, limits)
    except (rdb.FormatError, rdb.PayloadError, rdb.ForeignTypeError):
        return None
    rdb.dump(value, limits)  # whatever came back is a whole value
    return value


def test_every_seed_restores_and_round_trips(seeds: list[bytes]) -> None:
    for payload in seeds:
        for limits in (LIMITS, SMALL):
            value = rdb.restore(payload, limits)
            again = rdb.restore(rdb.dump(value, limits), limits)
            assert rdb.dump(again, limits) == rdb.dump(value, limits)


mutation = st.tuples(
    st.sampled_from(["flip", "set", "insert", "delete", "truncate", "big"]),
    st.integers(min_value=0, max_value=10_000),
    st.integers(min_value=0, max_value=255),
)


@given(data=st.data())
def test_mutated_payloads_fail_cleanly(seeds: list[bytes], data: st.DataObject) -> None:
    payload = data.draw(st.sampled_from(seeds))
    body = bytearray(payload[:-10])
    for kind, where, byte in data.draw(st.lists(mutation, min_size=1, max_size=4)):
        pos = where % (len(body) + 1)
        if kind == "flip" and pos < len(body):
            body[pos] ^= 1 << (byte % 8)
        elif kind == "set" and pos < len(body):
            body[pos] = byte
        elif kind == "insert":
            body[pos:pos] = bytes((byte,))
        elif kind == "delete":
            del body[pos : pos + 1 + byte % 8]
        elif kind == "truncate":
            del body[pos:]
        elif kind == "big" and pos < len(body):
            # a length marker claiming 2**32 or 2**64 - 1 bytes or elements
            body[pos : pos + 1] = b"\x81" + b"\xff" * 8 if byte % 2 else b"\x80\xff\xff\xff\xff"
    start = time.perf_counter()
    tracemalloc.start()
    try:
        _restore(_seal(bytes(body)))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert time.perf_counter() - start < 5
    assert peak < 50 * len(payload) + 4_000_000


@pytest.mark.parametrize("body", [
    b"\x00\x81" + b"\xff" * 8,  # a string of 2**64 - 1 bytes
    b"\x00\xc3\x05\x80\x7f\xff\xff\xff" + b"\x00abcde",  # LZF claiming 2 GiB
    b"\x01\x81" + b"\x0f" * 8 + b"\x01a",  # a list of 2**60 elements
    b"\x02\x80\xff\xff\xff\xff\x01a",
    b"\x04\x81\x7f\xff\xff\xff\xff\xff\xff\xff\x01a\x01b",
    b"\x05\x80\x7f\xff\xff\xff\x01a",
    b"\x15\x80\x7f\xff\xff\xff",  # a stream of 2**31 nodes
    b"\x15\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x7f\xff\xff\xff",  # and groups
    b"\x12\x80\x7f\xff\xff\xff\x02\x05abcde",
])
def test_huge_claims_are_refused_without_allocating(body: bytes) -> None:
    tracemalloc.start()
    start = time.perf_counter()
    try:
        assert _restore(_seal(body)) is None
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert time.perf_counter() - start < 1
    assert peak < 1_000_000


def test_lzf_round_trip() -> None:
    for data in (b"a" * 1000, b"abc" * 300, bytes(range(256)) * 4, b"hello world " * 50):
        packed = rdb.lzf_compress(data, len(data) - 4)
        assert packed is not None
        assert rdb.lzf_decompress(packed, len(data)) == data
    assert rdb.lzf_compress(bytes(range(100)), 96) is None


def test_crc64_check_value() -> None:
    assert rdb.crc64(b"123456789") == 0xE9C6D914C4B8D9CA


def test_restore_over_the_wire_keeps_serving(server: Server, seeds: list[bytes]) -> None:
    c = redis.Redis(host=server.host, port=server.port)
    for index, payload in enumerate(seeds):
        body = bytearray(payload[:-10])
        for pos in range(0, len(body), max(1, len(body) // 16)):
            mutated = bytearray(body)
            mutated[pos] ^= 0x5A
            try:
                c.restore(f"k{index}-{pos}", 0, _seal(bytes(mutated)))
            except redis.ResponseError as err:
                assert str(err) == "Bad data format", err
        assert c.ping() is True
    huge = _seal(b"\x01\x81" + b"\x0f" * 8 + b"\x01a")
    with pytest.raises(redis.ResponseError, match="Bad data format"):
        c.restore("huge", 0, huge)
    assert struct.calcsize("<q") == 8
