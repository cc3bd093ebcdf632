"""RedisBloom's Count-Min Sketch verbs (CMS.*) as Redis Stack answers them: replies in
RESP2 and RESP3, error texts, the keyspace (TYPE, WRONGTYPE, events, DUMP/RESTORE), and
the verbs unknown while enable-stack-modules is off."""

from __future__ import annotations

import pytest

from fakekey.modules.stack.cms_sketch import CountMinSketch, dims_from_prob
from fakekey.net.server import Server
from fakekey.testing.raw import RawClient, plain


def info(r: RawClient, key: str) -> dict[bytes, int]:
    """CMS.INFO as a dict, whichever the protocol."""
    reply = plain(r.call("CMS.INFO", key))
    return reply if isinstance(reply, dict) else dict(zip(reply[::2], reply[1::2], strict=True))


def test_counts_and_estimates(r: RawClient, proto: int) -> None:
    assert r.call("CMS.INITBYDIM", "c", 2000, 5) == ("+", b"OK")
    assert r.call("CMS.INCRBY", "c", "a", 3, "b", 4, "a", 1) == ("*", [(":", 3), (":", 4), (":", 4)])
    assert r.call("CMS.QUERY", "c", "a", "b", "nothing") == ("*", [(":", 4), (":", 4), (":", 0)])
    assert plain(r.call("CMS.INFO", "c")) == (
        [b"width", 2000, b"depth", 5, b"count", 8] if proto == 2 else
        {b"width": 2000, b"depth": 5, b"count": 8})


def test_info_is_a_map_in_resp3_with_simple_string_names(r: RawClient, proto: int) -> None:
    r.call("CMS.INITBYDIM", "c", 10, 2)
    kind, body = r.call("CMS.INFO", "c")
    if proto == 3:
        assert kind == "%"
        assert body == [(("+", b"width"), (":", 10)), (("+", b"depth"), (":", 2)),
                        (("+", b"count"), (":", 0))]
    else:
        assert (kind, body) == ("*", [("+", b"width"), (":", 10), ("+", b"depth"), (":", 2),
                                      ("+", b"count"), (":", 0)])


def test_initbyprob_sizes_as_redisbloom() -> None:
    assert dims_from_prob(0.001, 0.01) == (2000, 7)  # the documented example
    assert dims_from_prob(0.5, 0.5) == (4, 1)
    assert dims_from_prob(0.01, 0.001) == (200, 10)


def test_initbyprob_and_info(r: RawClient) -> None:
    assert r.call("CMS.INITBYPROB", "p", "0.001", "0.01") == ("+", b"OK")
    assert info(r, "p") == {b"width": 2000, b"depth": 7, b"count": 0}


@pytest.mark.parametrize(("args", "error"), [
    (("CMS.INITBYDIM", "c", 0, 5), b"CMS: invalid width"),
    (("CMS.INITBYDIM", "c", "x", 5), b"CMS: invalid width"),
    (("CMS.INITBYDIM", "c", 5, -1), b"CMS: invalid depth"),
    (("CMS.INITBYPROB", "c", 1, 0.5), b"CMS: invalid overestimation value"),
    (("CMS.INITBYPROB", "c", 0.1, 0), b"CMS: invalid prob value"),
    (("CMS.INITBYPROB", "c", 0.1, "nan"), b"CMS: invalid prob value"),
    (("CMS.INITBYDIM", "c", 1 << 62, 4), b"CMS: invalid init arguments"),
    (("CMS.INITBYPROB", "c", 1e-300, 0.5), b"CMS: invalid init arguments"),
    (("CMS.INITBYPROB", "c", 0.5, 1e-300), b"CMS: invalid init arguments"),
    (("CMS.QUERY", "none", "a"), b"CMS: key does not exist"),
    (("CMS.INCRBY", "none", "a", 1), b"CMS: key does not exist"),
    (("CMS.INFO", "none"), b"CMS: key does not exist"),
    (("CMS.INCRBY", "c", "a"), b"ERR wrong number of arguments for 'cms.incrby' command"),
    (("CMS.INITBYDIM", "c", 1), b"ERR wrong number of arguments for 'cms.initbydim' command"),
])
def test_errors(r: RawClient, args: tuple[object, ...], error: bytes) -> None:
    assert r.call(*args) == ("-", error)
    assert r.call("EXISTS", "c") == (":", 0)


def test_items_land_in_redisbloom_counters(r: RawClient) -> None:
    """MurmurHash2 per row, as the module: which items share counters is the module's."""
    r.call("CMS.INITBYDIM", "tiny", 2, 2)
    assert plain(r.call("CMS.INCRBY", "tiny", "foo", 10, "bar", 42)) == [10, 42]
    large = 2**31 - 1
    r.call("CMS.INITBYDIM", "c", 5, 2)
    assert plain(r.call("CMS.INCRBY", "c", "a", large, "b", 10, "c", 7, "d", 5)) == [large, 10, 17, 5]
    assert plain(r.call("CMS.QUERY", "c", "a", "b", "c", "d")) == [large, 17, 17, 5]
    assert plain(r.call("CMS.INCRBY", "c", "a", large, "b", 10, "c", 7, "d", 5)) == [2 * large, 27, 34, 10]
    reply = r.call("CMS.INCRBY", "c", "a", large, "b", 10, "c", 7, "d", 5)
    assert reply == ("*", [("-", b"CMS: INCRBY overflow"), (":", 44), (":", 51), (":", 15)])


def test_incrby_checks_every_number_before_counting(r: RawClient) -> None:
    r.call("CMS.INITBYDIM", "c", 100, 3)
    assert r.call("CMS.INCRBY", "c", "a", 1, "b", "x") == ("-", b"CMS: Cannot parse number")
    assert r.call("CMS.INCRBY", "c", "a", 1, "b", -1) == ("-", b"CMS: Number cannot be negative")
    assert r.call("CMS.QUERY", "c", "a") == ("*", [(":", 0)])


def test_incrby_overflow_is_an_error_in_the_array(r: RawClient) -> None:
    r.call("CMS.INITBYDIM", "c", 100, 3)
    assert r.call("CMS.INCRBY", "c", "a", 0xFFFFFFFE, "b", 1) == ("*", [(":", 0xFFFFFFFE), (":", 1)])
    assert r.call("CMS.INCRBY", "c", "a", 5) == ("*", [("-", b"CMS: INCRBY overflow")])


def test_existing_key_of_any_type_refuses_creation(r: RawClient) -> None:
    r.call("SET", "s", "v")
    assert r.call("CMS.INITBYDIM", "s", 10, 2) == ("-", b"CMS: key already exists")
    r.call("CMS.INITBYDIM", "c", 10, 2)
    assert r.call("CMS.INITBYPROB", "c", 0.1, 0.1) == ("-", b"CMS: key already exists")
    wrongtype = b"WRONGTYPE Operation against a key holding the wrong kind of value"
    assert r.call("CMS.QUERY", "s", "a") == ("-", wrongtype)
    assert r.call("GET", "c") == ("-", wrongtype)
    assert r.call("TYPE", "c") == ("+", b"CMSk-TYPE")


def test_merge_with_and_without_weights(r: RawClient) -> None:
    for key in ("a", "b", "dest"):
        r.call("CMS.INITBYDIM", key, 50, 4)
    r.call("CMS.INCRBY", "a", "x", 3, "y", 1)
    r.call("CMS.INCRBY", "b", "x", 2)
    assert r.call("CMS.MERGE", "dest", 2, "a", "b") == ("+", b"OK")
    assert r.call("CMS.QUERY", "dest", "x", "y") == ("*", [(":", 5), (":", 1)])
    assert r.call("CMS.MERGE", "dest", 2, "a", "b", "WEIGHTS", 2, 3) == ("+", b"OK")
    assert r.call("CMS.QUERY", "dest", "x", "y") == ("*", [(":", 12), (":", 2)])
    assert info(r, "dest")[b"count"] == 14
    # the destination may be one of the sources
    assert r.call("CMS.MERGE", "dest", 2, "dest", "a") == ("+", b"OK")
    assert r.call("CMS.QUERY", "dest", "x") == ("*", [(":", 15)])


@pytest.mark.parametrize(("tail", "error"), [
    (("x",), b"CMS: invalid numkeys"),
    ((0, "a"), b"CMS: Number of keys must be positive"),
    ((2, "a"), b"CMS: wrong number of keys"),
    ((1, "a", "WEIGHTS"), b"CMS: wrong number of keys/weights"),
    ((1, "a", "WEIGHTS", "w"), b"CMS: invalid weight value"),
    ((1, "missing"), b"CMS: key does not exist"),
    ((1, "other"), b"CMS: width/depth is not equal"),
    ((1, "a", "WEIGHTS", -1), b"CMS: MERGE overflow"),
])
def test_merge_errors(r: RawClient, tail: tuple[object, ...], error: bytes) -> None:
    r.call("CMS.INITBYDIM", "dest", 50, 4)
    r.call("CMS.INITBYDIM", "a", 50, 4)
    r.call("CMS.INCRBY", "a", "x", 1)
    r.call("CMS.INITBYDIM", "other", 40, 4)
    args = ("CMS.MERGE", "dest", *tail) if len(tail) > 1 else ("CMS.MERGE", "dest", tail[0], "a")
    assert r.call(*args) == ("-", error)


def test_merge_into_a_missing_destination(r: RawClient) -> None:
    r.call("CMS.INITBYDIM", "a", 50, 4)
    assert r.call("CMS.MERGE", "dest", 1, "a") == ("-", b"CMS: key does not exist")


def test_dump_restore_and_copy(r: RawClient) -> None:
    r.call("CMS.INITBYDIM", "c", 64, 3)
    r.call("CMS.INCRBY", "c", "item", 7)
    payload = r.call("DUMP", "c")[1]
    assert r.call("RESTORE", "copy", 0, payload) == ("+", b"OK")
    assert r.call("CMS.QUERY", "copy", "item") == ("*", [(":", 7)])
    assert r.call("COPY", "c", "twin") == (":", 1)
    r.call("CMS.INCRBY", "twin", "item", 1)
    assert r.call("CMS.QUERY", "c", "item") == ("*", [(":", 7)])


def test_payload_round_trip() -> None:
    sketch = CountMinSketch(30, 3)
    sketch.increment(b"x", 9)
    again = CountMinSketch.from_payload(sketch.payload(), 0)
    assert (again.width, again.depth, again.count, again.query(b"x")) == (30, 3, 9, 9)
    with pytest.raises(ValueError):
        CountMinSketch.from_payload(sketch.payload()[:-3], 0)


def test_keyspace_events(server: Server) -> None:
    with RawClient(server.host, server.port) as sub, RawClient(server.host, server.port) as client:
        client.call("CONFIG", "SET", "notify-keyspace-events", "KEA")
        try:
            sub.call("PSUBSCRIBE", "__keyevent@0__:cms.*")
            client.call("CMS.INITBYDIM", "evented", 10, 2)
            client.call("CMS.INCRBY", "evented", "a", 1)
            seen = [plain(sub.read())[2] for _ in range(2)]
            assert seen == [b"__keyevent@0__:cms.initbydim", b"__keyevent@0__:cms.incrby"]
        finally:
            client.call("CONFIG", "SET", "notify-keyspace-events", "")
            client.call("DEL", "evented")


def test_verbs_unknown_without_the_setting() -> None:
    with Server() as srv, RawClient(srv.host, srv.port) as client:
        kind, text = client.call("CMS.INITBYDIM", "c", 10, 2)
        assert kind == "-" and text.startswith(b"ERR unknown command 'CMS.INITBYDIM'")
