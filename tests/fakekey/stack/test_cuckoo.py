"""RedisBloom's Cuckoo filter verbs (CF.*) on fakekey with enable-stack-modules: replies,
error texts, RedisBloom's sizes, expansion and compaction, SCANDUMP/LOADCHUNK, WRONGTYPE.
fakekey only (real Valkey has no such module), through redis-py and a raw client."""

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


def plain(server: Server, *args: object, protocol: int = 2) -> Any:
    """The reply as sent, typed (redis-py reshapes the INFO replies and drops ERR)."""
    with RawClient(server.host, server.port) as c:
        if protocol == 3:
            c.call("HELLO", "3")
        return c.call(*args)


def error_of(server: Server, *args: object) -> str:
    kind, text = plain(server, *args)
    assert kind == "-", (args, text)
    return str(text.decode())


def test_add_exists_count_and_delete(r: redis.Redis) -> None:
    assert r.execute_command("CF.ADD", "cf", "a") == 1
    assert r.execute_command("CF.ADD", "cf", "a") == 1  # a cuckoo filter counts duplicates
    assert r.execute_command("CF.ADDNX", "cf", "a") == 0
    assert r.execute_command("CF.ADDNX", "cf", "b") == 1
    assert r.execute_command("CF.COUNT", "cf", "a") == 2
    assert r.execute_command("CF.EXISTS", "cf", "b") == 1
    assert r.execute_command("CF.MEXISTS", "cf", "a", "zz", "b") == [1, 0, 1]
    assert r.execute_command("CF.DEL", "cf", "a") == 1
    assert r.execute_command("CF.COUNT", "cf", "a") == 1
    assert r.execute_command("CF.DEL", "cf", "zz") == 0
    assert r.execute_command("CF.EXISTS", "missing", "a") == 0
    assert r.execute_command("CF.COUNT", "missing", "a") == 0
    assert r.type("cf") == b"MBbloomCF"


def test_info_in_resp2_and_resp3(server: Server, r: redis.Redis) -> None:
    r.execute_command("CF.RESERVE", "cf", "1000", "BUCKETSIZE", "4", "MAXITERATIONS", "10", "EXPANSION", "2")
    r.execute_command("CF.ADD", "cf", "x")
    r.execute_command("CF.DEL", "cf", "x")
    expected = [(b"Size", 40 + 16 + 256 * 4), (b"Number of buckets", 256), (b"Number of filters", 1),
                (b"Number of items inserted", 0), (b"Number of items deleted", 1), (b"Bucket size", 4),
                (b"Expansion rate", 2), (b"Max iterations", 10)]
    flat = [part for name, value in expected for part in (("+", name), (":", value))]
    assert plain(server, "CF.INFO", "cf") == ("*", flat)
    assert plain(server, "CF.INFO", "cf", protocol=3) == (
        "%", [(("+", name), (":", value)) for name, value in expected])
    assert error_of(server, "CF.INFO", "missing") == "ERR not found"


def test_a_full_filter_expands_or_refuses(server: Server, r: redis.Redis) -> None:
    r.execute_command("CF.RESERVE", "fixed", "4", "EXPANSION", "0")
    replies = r.execute_command("CF.INSERT", "fixed", "ITEMS", *[f"i{n}" for n in range(12)])
    assert replies.count(1) == 4 and set(replies) == {1, -1}  # four slots, then no room
    assert error_of(server, "CF.ADD", "fixed", "more") == "Filter is full"
    r.execute_command("CF.RESERVE", "grows", "4", "EXPANSION", "2")
    assert r.execute_command("CF.INSERT", "grows", "ITEMS", *[f"i{n}" for n in range(12)]) == [1] * 12
    info = r.execute_command("CF.INFO", "grows")
    assert info[b"Number of filters"] >= 2 and info[b"Number of items inserted"] == 12
    for n in range(12):  # deleting most empties the later sub-filters again
        r.execute_command("CF.DEL", "grows", f"i{n}")
    assert r.execute_command("CF.INFO", "grows")[b"Number of filters"] == 1


def test_reserve_errors(server: Server, r: redis.Redis) -> None:
    assert error_of(server, "CF.RESERVE", "k") == "ERR wrong number of arguments for 'CF.RESERVE' command"
    assert error_of(server, "CF.RESERVE", "k", "x") == "Bad capacity"
    assert error_of(server, "CF.RESERVE", "k", "3") == "Capacity must be at least (BucketSize * 2)"
    assert error_of(server, "CF.RESERVE", "k", "100", "BUCKETSIZE", "x") == "Couldn't parse BUCKETSIZE"
    assert error_of(server, "CF.RESERVE", "k", "100", "BUCKETSIZE", "0") == (
        "BUCKETSIZE: value must be an integer between 1 and 255, inclusive.")
    assert error_of(server, "CF.RESERVE", "k", "100", "MAXITERATIONS", "0") == (
        "MAXITERATIONS: value must be an integer between 1 and 65535, inclusive.")
    assert error_of(server, "CF.RESERVE", "k", "100", "EXPANSION", "-1") == (
        "EXPANSION: value must be an integer between 0 and 32768, inclusive.")
    r.execute_command("CF.RESERVE", "k", "100")
    assert error_of(server, "CF.RESERVE", "k", "100") == "ERR item exists"


def test_insert_options_and_errors(server: Server, r: redis.Redis) -> None:
    assert r.execute_command("CF.INSERT", "ins", "CAPACITY", "100", "ITEMS", "a", "b") == [1, 1]
    assert r.execute_command("CF.INFO", "ins")[b"Number of buckets"] == 64
    assert r.execute_command("CF.INSERTNX", "ins", "ITEMS", "a", "c") == [0, 1]
    assert error_of(server, "CF.INSERT", "nothere", "NOCREATE", "ITEMS", "a") == "ERR not found"
    assert error_of(server, "CF.INSERT", "k", "CAPACITY", "x", "ITEMS", "a") == "Bad capacity"
    assert error_of(server, "CF.INSERT", "k", "BOGUS", "ITEMS", "a") == "Unknown argument received"
    assert error_of(server, "CF.INSERT", "k", "ITEMS") == (
        "ERR wrong number of arguments for 'CF.INSERT' command")
    assert error_of(server, "CF.DEL", "nothere", "a") == "Not found"


def test_scandump_and_loadchunk_rebuild_the_filter(server: Server, r: redis.Redis) -> None:
    assert r.execute_command("CF.RESERVE", "src", "64", "EXPANSION", "2") == b"OK"
    assert plain(server, "CF.SCANDUMP", "src", "0") == ("*", [(":", 0), ("$", None)])  # empty
    items = [f"v{n}" for n in range(100)]
    r.execute_command("CF.INSERT", "src", "ITEMS", *items)
    chunks = []
    position = 0
    while True:
        position, data = r.execute_command("CF.SCANDUMP", "src", position)
        if position == 0:
            assert data is None
            break
        chunks.append((position, data))
    for position, data in chunks:
        assert r.execute_command("CF.LOADCHUNK", "copy", position, data) == b"OK"
    assert r.execute_command("CF.INFO", "copy") == r.execute_command("CF.INFO", "src")
    assert all(r.execute_command("CF.MEXISTS", "copy", *items))
    assert r.dump("copy") == r.dump("src")
    assert error_of(server, "CF.SCANDUMP", "src", "x") == "Invalid position"
    assert error_of(server, "CF.LOADCHUNK", "src", "0", "x") == "Invalid position"
    assert error_of(server, "CF.LOADCHUNK", "new", "1", "short") == "Invalid header"
    assert error_of(server, "CF.LOADCHUNK", "src", "1", chunks[0][1]) == "ERR item exists"
    assert error_of(server, "CF.LOADCHUNK", "src", "999999", "abc") == "Couldn't load chunk!"


def test_other_types_meet_wrongtype_both_ways(server: Server, r: redis.Redis) -> None:
    r.set("s", "v")
    wrongtype = "WRONGTYPE Operation against a key holding the wrong kind of value"
    for args in (("CF.ADD", "s", "a"), ("CF.EXISTS", "s", "a"), ("CF.INFO", "s"), ("CF.COUNT", "s", "a"),
                 ("CF.RESERVE", "s", "100")):
        assert error_of(server, *args) == wrongtype
    r.execute_command("CF.ADD", "cf", "a")
    for args in (("GET", "cf"), ("SADD", "cf", "x"), ("BF.ADD", "cf", "a")):
        assert error_of(server, *args) == wrongtype
