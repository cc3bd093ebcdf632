"""RedisBloom's Bloom filter verbs (BF.*) on fakekey with enable-stack-modules: replies,
error texts, RedisBloom's sizes and scaling, SCANDUMP/LOADCHUNK, events, WRONGTYPE. Real
Valkey has no such module: these run on fakekey only, through redis-py, and through a
raw client where the wire type matters (RESP3 maps, nulls)."""

import math
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from fakekey import Server
from fakekey.testing.raw import RawClient


@pytest.fixture
def r(server: Server) -> Iterator[redis.Redis]:
    client = redis.Redis(port=server.port)
    client.flushall()
    yield client
    client.close()


def raw(server: Server, protocol: int) -> RawClient:
    client = RawClient(server.host, server.port)
    if protocol == 3:
        client.call("HELLO", "3")
    return client


def plain(r: redis.Redis, *args: object) -> Any:
    """The reply as sent, typed (redis-py reshapes BF.INFO's and drops errors' ERR)."""
    kwargs = r.connection_pool.connection_kwargs
    with RawClient(kwargs["host"], kwargs["port"]) as c:
        return c.call(*args)


def error_of(r: redis.Redis, *args: object) -> str:
    kind, text = plain(r, *args)
    assert kind == "-", (args, text)
    return str(text.decode())


def filter_bytes(entries: int, error: float) -> int:
    """A RedisBloom filter's bit array: entries x bits per entry, in whole 64-bit words."""
    bits = int(entries * -math.log(error) / 0.480453013918201)
    return -(-bits // 64) * 8


def test_the_verbs_are_unknown_commands_with_the_setting_off() -> None:
    with Server() as plain, RawClient(plain.host, plain.port) as c:
        for verb in ("BF.ADD", "BF.RESERVE", "BF.INFO", "CF.ADD", "CF.RESERVE"):
            kind, text = c.call(verb, "k", "v")
            assert kind == "-" and text.startswith(b"ERR unknown command '" + verb.encode() + b"'")


def test_add_exists_madd_mexists_and_card(r: redis.Redis) -> None:
    assert r.execute_command("BF.ADD", "bf", "a") == 1
    assert r.execute_command("BF.ADD", "bf", "a") == 0
    assert r.execute_command("BF.MADD", "bf", "a", "b", "c") == [0, 1, 1]
    assert r.execute_command("BF.EXISTS", "bf", "b") == 1
    assert r.execute_command("BF.EXISTS", "bf", "zz") == 0
    assert r.execute_command("BF.EXISTS", "missing", "a") == 0
    assert r.execute_command("BF.MEXISTS", "bf", "a", "zz", "c") == [1, 0, 1]
    assert r.execute_command("BF.MEXISTS", "missing", "a", "b") == [0, 0]
    assert r.execute_command("BF.CARD", "bf") == 3
    assert r.execute_command("BF.CARD", "missing") == 0
    assert r.type("bf") == b"MBbloom--"


def test_info_figures_are_redisblooms(r: redis.Redis) -> None:
    r.execute_command("BF.ADD", "bf1", "observation1")
    # RedisBloom's documented example: 100 items at 1%, one filter of 144 bytes
    assert r.execute_command("BF.INFO", "bf1") == {
        b"Capacity": 100, b"Size": 240, b"Number of filters": 1,
        b"Number of items inserted": 1, b"Expansion rate": 2}
    assert plain(r, "BF.INFO", "bf1", "capacity") == ("*", [(":", 100)])
    assert plain(r, "BF.INFO", "bf1", "ITEMS") == ("*", [(":", 1)])
    assert error_of(r, "BF.INFO", "bf1", "nope") == "Invalid information value"
    assert error_of(r, "BF.INFO", "missing") == "ERR not found"


def test_info_in_resp2_and_resp3(server: Server, r: redis.Redis) -> None:
    r.execute_command("BF.RESERVE", "fixed", "0.01", "10", "NONSCALING")
    with raw(server, 2) as c2, raw(server, 3) as c3:
        assert c2.call("BF.INFO", "fixed", "EXPANSION") == ("*", [("$", None)])
        assert c3.call("BF.INFO", "fixed", "EXPANSION") == ("%", [(("+", b"Expansion rate"), ("_", None))])
        assert c3.call("BF.INFO", "fixed", "FILTERS") == ("%", [(("+", b"Number of filters"), (":", 1))])
        kind, flat = c2.call("BF.INFO", "fixed")
        assert kind == "*" and flat[0] == ("+", b"Capacity") and flat[1] == (":", 10)
        kind, pairs = c3.call("BF.INFO", "fixed")
        assert kind == "%" and [key for key, _ in pairs] == [
            ("+", b"Capacity"), ("+", b"Size"), ("+", b"Number of filters"),
            ("+", b"Number of items inserted"), ("+", b"Expansion rate")]


def test_a_full_filter_scales_as_redisbloom(r: redis.Redis) -> None:
    r.execute_command("BF.RESERVE", "grow", "0.01", "100", "EXPANSION", "3")
    r.execute_command("BF.MADD", "grow", *[f"item{i}" for i in range(250)])
    info = r.execute_command("BF.INFO", "grow")
    assert info[b"Number of filters"] == 2
    assert info[b"Capacity"] == 100 + 300
    assert info[b"Expansion rate"] == 3
    # one chain, two links, each whole 64-bit words of entries x bits per entry
    assert info[b"Size"] == 32 + 64 * 2 + filter_bytes(100, 0.005) + filter_bytes(300, 0.0025)
    assert all(r.execute_command("BF.MEXISTS", "grow", *[f"item{i}" for i in range(250)]))
    assert r.execute_command("BF.CARD", "grow") == info[b"Number of items inserted"]


def test_a_non_scaling_filter_refuses_items_past_its_capacity(r: redis.Redis) -> None:
    r.execute_command("BF.RESERVE", "small", "0.01", "2", "NONSCALING")
    reply = r.execute_command("BF.MADD", "small", "a", "b", "c", "d")
    assert reply[:2] == [1, 1] and len(reply) == 3  # nothing after the error
    assert isinstance(reply[2], redis.ResponseError) and str(reply[2]) == "non scaling filter is full"
    assert error_of(r, "BF.ADD", "small", "e") == "ERR non scaling filter is full"
    assert plain(r, "BF.INFO", "small", "FILTERS") == ("*", [(":", 1)])


def test_reserve_errors(r: redis.Redis) -> None:
    assert error_of(r, "BF.RESERVE", "k", "0.01") == "ERR wrong number of arguments for 'BF.RESERVE' command"
    assert error_of(r, "bf.reserve", "k") == "ERR wrong number of arguments for 'bf.reserve' command"
    assert error_of(r, "BF.RESERVE", "k", "x", "100") == "ERR bad error rate"
    assert error_of(r, "BF.RESERVE", "k", "1", "100") == "ERR (0 < error rate range < 1) "
    assert error_of(r, "BF.RESERVE", "k", "0.01", "x") == "ERR bad capacity"
    assert error_of(r, "BF.RESERVE", "k", "0.01", "0") == "ERR (capacity should be larger than 0)"
    assert error_of(r, "BF.RESERVE", "k", "0.01", "10", "EXPANSION") == "ERR no expansion"
    assert error_of(r, "BF.RESERVE", "k", "0.01", "10", "EXPANSION", "x") == "ERR bad expansion"
    assert error_of(r, "BF.RESERVE", "k", "0.01", "10", "NONSCALING", "EXPANSION", "2") == (
        "Nonscaling filters cannot expand")
    r.execute_command("BF.RESERVE", "k", "0.01", "10")
    assert error_of(r, "BF.RESERVE", "k", "0.01", "10") == "ERR item exists"


def test_insert_options(r: redis.Redis) -> None:
    assert r.execute_command("BF.INSERT", "ins", "CAPACITY", "1000", "ERROR", "0.001", "EXPANSION", "4",
                             "ITEMS", "a", "b", "a") == [1, 1, 0]
    assert plain(r, "BF.INFO", "ins", "CAPACITY") == ("*", [(":", 1000)])
    assert plain(r, "BF.INFO", "ins", "EXPANSION") == ("*", [(":", 4)])
    assert r.execute_command("BF.INSERT", "ins2", "NONSCALING", "ITEMS", "x") == [1]
    assert plain(r, "BF.INFO", "ins2", "EXPANSION") == ("*", [("$", None)])
    assert error_of(r, "BF.INSERT", "nothere", "NOCREATE", "ITEMS", "a") == "ERR not found"
    assert error_of(r, "BF.INSERT", "k", "CAPACITY", "x", "ITEMS", "a") == "Bad capacity"
    assert error_of(r, "BF.INSERT", "k", "ERROR", "x", "ITEMS", "a") == "Bad error rate"
    assert error_of(r, "BF.INSERT", "k", "EXPANSION", "x", "ITEMS", "a") == "Bad expansion"
    assert error_of(r, "BF.INSERT", "k", "ERROR", "2", "ITEMS", "a") == "Bad argument received"
    assert error_of(r, "BF.INSERT", "k", "BOGUS", "ITEMS", "a") == "Unknown argument received"
    assert error_of(r, "BF.INSERT", "k", "CAPACITY", "10", "ITEMS") == (
        "ERR wrong number of arguments for 'BF.INSERT' command")
    assert not r.exists("k")


def test_scandump_and_loadchunk_rebuild_the_filter(r: redis.Redis) -> None:
    r.execute_command("BF.RESERVE", "src", "0.001", "1000", "EXPANSION", "2")
    items = [f"v{i}" for i in range(1500)]  # two links
    r.execute_command("BF.MADD", "src", *items)
    chunks = []
    position = 0
    while True:
        position, data = r.execute_command("BF.SCANDUMP", "src", position)
        if position == 0:
            assert data == b""
            break
        chunks.append((position, data))
    assert chunks[0][0] == 1 and len(chunks) == 3  # the header, then one chunk per link
    for position, data in chunks:
        assert r.execute_command("BF.LOADCHUNK", "copy", position, data) == b"OK"
    assert r.execute_command("BF.INFO", "copy") == r.execute_command("BF.INFO", "src")
    assert all(r.execute_command("BF.MEXISTS", "copy", *items))
    assert r.dump("copy") == r.dump("src")


def test_scandump_and_loadchunk_errors(r: redis.Redis) -> None:
    assert error_of(r, "BF.SCANDUMP", "missing", "0") == "ERR not found"
    r.execute_command("BF.ADD", "bf", "a")
    assert error_of(r, "BF.SCANDUMP", "bf", "x") == "Second argument must be numeric"
    assert error_of(r, "BF.LOADCHUNK", "new", "x", "data") == "ERR Second argument must be numeric"
    assert error_of(r, "BF.LOADCHUNK", "new", "1", "not a header") == "ERR received bad data"
    assert error_of(r, "BF.LOADCHUNK", "new", "5", "data") == "ERR not found"
    assert error_of(r, "BF.LOADCHUNK", "bf", "1", "abc") == "ERR received bad data"
    assert error_of(r, "BF.LOADCHUNK", "bf", "100000", "abc") == "ERR invalid offset - no link found"
    assert not r.exists("new")


def test_other_types_meet_wrongtype_both_ways(r: redis.Redis) -> None:
    r.set("s", "v")
    wrongtype = "WRONGTYPE Operation against a key holding the wrong kind of value"
    for args in (("BF.ADD", "s", "a"), ("BF.EXISTS", "s", "a"), ("BF.INFO", "s"), ("BF.CARD", "s"),
                 ("BF.RESERVE", "s", "0.1", "10"), ("BF.SCANDUMP", "s", "0")):
        assert error_of(r, *args) == wrongtype
    r.execute_command("BF.ADD", "bf", "a")
    for args in (("GET", "bf"), ("LPUSH", "bf", "x"), ("HGET", "bf", "f"), ("CF.ADD", "bf", "a")):
        assert error_of(r, *args) == wrongtype


def test_writes_emit_events_named_after_the_verb(server: Server, r: redis.Redis) -> None:
    r.config_set("notify-keyspace-events", "KEA")
    try:
        pubsub = r.pubsub()
        pubsub.psubscribe("__keyevent@0__:*")
        assert pubsub.get_message(timeout=5)["type"] == "psubscribe"
        r.execute_command("BF.RESERVE", "ev", "0.01", "10")
        r.execute_command("BF.MADD", "ev", "a")
        events = []
        while len(events) < 2:
            message = pubsub.get_message(timeout=5)
            assert message is not None
            events.append(message["channel"].split(b":", 1)[1])
        assert events == [b"bf.reserve", b"bf.madd"]
        pubsub.close()
    finally:
        r.config_set("notify-keyspace-events", "")
