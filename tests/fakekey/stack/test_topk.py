"""RedisBloom's Top-K verbs (TOPK.*) as Redis Stack answers them: items as simple
strings, the expelled item on ADD and INCRBY, LIST by count, INFO as a map in RESP3, and
the error texts. Sketches here are wide enough that no two items share a bucket in every
row, so the random decay never decides a result."""

from __future__ import annotations

import pytest

from fakekey.modules.stack.topk_sketch import TopK
from fakekey.net.server import Server
from fakekey.testing.raw import RawClient, plain

NIL = ("$", None)
WRONGTYPE = b"WRONGTYPE Operation against a key holding the wrong kind of value"


def nil(proto: int) -> tuple[str, None]:
    return ("_", None) if proto == 3 else NIL


def flags(proto: int, *values: bool) -> tuple[str, list[tuple[str, object]]]:
    """TOPK.QUERY's answers: booleans in RESP3, 1 and 0 in RESP2."""
    return ("*", [("#", v) if proto == 3 else (":", int(v)) for v in values])


def items(r: RawClient, *args: object) -> list[object]:
    """An array reply's values, items as text."""
    return [v.decode() if isinstance(v, bytes) else v for v in plain(r.call(*args))]


def test_reserve_defaults_and_info(r: RawClient, proto: int) -> None:
    assert r.call("TOPK.RESERVE", "t", 3) == ("+", b"OK")
    kind, body = r.call("TOPK.INFO", "t")
    decay = (",", b"0.9") if proto == 3 else ("$", b"0.9")
    fields = [(("+", b"k"), (":", 3)), (("+", b"width"), (":", 8)), (("+", b"depth"), (":", 7)),
              (("+", b"decay"), decay)]
    if proto == 3:
        assert (kind, body) == ("%", fields)
    else:
        assert (kind, body) == ("*", [part for pair in fields for part in pair])
    assert r.call("TYPE", "t") == ("+", b"TopK-TYPE")


def test_incrby_add_expel_and_list(r: RawClient, proto: int) -> None:
    r.call("TOPK.RESERVE", "t", 2, 1000, 5, "0.9")
    assert r.call("TOPK.INCRBY", "t", "a", 5, "b", 3) == ("*", [nil(proto), nil(proto)])
    assert r.call("TOPK.ADD", "t", "c") == ("*", [nil(proto)])
    assert r.call("TOPK.INCRBY", "t", "c", 10) == ("*", [("+", b"b")])
    assert r.call("TOPK.LIST", "t") == ("*", [("+", b"c"), ("+", b"a")])
    assert r.call("TOPK.LIST", "t", "WITHCOUNT") == ("*", [("+", b"c"), (":", 11), ("+", b"a"), (":", 5)])
    assert r.call("TOPK.LIST", "t", "with") == r.call("TOPK.LIST", "t", "WITHCOUNT")
    assert r.call("TOPK.QUERY", "t", "a", "b", "c", "z") == flags(proto, True, False, True, False)
    assert r.call("TOPK.COUNT", "t", "a", "b", "c", "z") == ("*", [(":", 5), (":", 3), (":", 11), (":", 0)])


def test_list_of_a_fresh_sketch_is_empty(r: RawClient) -> None:
    r.call("TOPK.RESERVE", "t", 5)
    assert r.call("TOPK.LIST", "t", "WITHCOUNT") == ("*", [])


@pytest.mark.parametrize(("args", "error"), [
    (("TOPK.RESERVE", "t", 0), b"TopK: invalid k"),
    (("TOPK.RESERVE", "t", "k"), b"TopK: invalid k"),
    (("TOPK.RESERVE", "t", 2, 0, 5, 0.9), b"TopK: invalid width"),
    (("TOPK.RESERVE", "t", 2, 10, 0, 0.9), b"TopK: invalid depth"),
    (("TOPK.RESERVE", "t", 2, 10, 5, 0), b"TopK: invalid decay value. must be '<= 1' & '> 0'"),
    (("TOPK.RESERVE", "t", 2, 10, 5, 1.5), b"TopK: invalid decay value. must be '<= 1' & '> 0'"),
    (("TOPK.RESERVE", "t", 2, 10), b"ERR wrong number of arguments for 'topk.reserve' command"),
    (("TOPK.ADD", "none", "x"), b"TopK: key does not exist"),
    (("TOPK.QUERY", "none", "x"), b"TopK: key does not exist"),
    (("TOPK.COUNT", "none", "x"), b"TopK: key does not exist"),
    (("TOPK.LIST", "none"), b"TopK: key does not exist"),
    (("TOPK.LIST", "none", "bogus"), b"WITHCOUNT keyword expected"),
    (("TOPK.INFO", "none"), b"TopK: key does not exist"),
    (("TOPK.INCRBY", "none", "x"), b"ERR wrong number of arguments for 'topk.incrby' command"),
])
def test_errors(r: RawClient, args: tuple[object, ...], error: bytes) -> None:
    assert r.call(*args) == ("-", error)


def test_existing_keys_and_wrong_types(r: RawClient) -> None:
    r.call("SET", "s", "v")
    assert r.call("TOPK.RESERVE", "s", 2) == ("-", b"TopK: key already exists")
    assert r.call("TOPK.ADD", "s", "x") == ("-", WRONGTYPE)
    r.call("TOPK.RESERVE", "t", 2)
    assert r.call("TOPK.RESERVE", "t", 2) == ("-", b"TopK: key already exists")
    assert r.call("LPUSH", "t", "x") == ("-", WRONGTYPE)


def test_bad_increment_ends_the_reply(r: RawClient, proto: int) -> None:
    r.call("TOPK.RESERVE", "t", 2, 1000, 5, 0.9)
    error = ("-", b"TopK: increment must be an integer greater or equal to 0" + b" " * 28
             + b"and smaller or equal to 100,000")
    assert r.call("TOPK.INCRBY", "t", "a", 1, "b", 100001, "c", 1) == ("*", [nil(proto), error])
    assert r.call("TOPK.QUERY", "t", "a", "c") == flags(proto, True, False)


# Scenarios whose outcome RedisBloom's own suite pins (the decay never decides them).


def test_an_item_as_heavy_as_the_least_takes_its_place(r: RawClient) -> None:
    r.call("TOPK.RESERVE", "t", 2, 50, 5, 0.9)
    r.call("TOPK.ADD", "t", "foo", "bar", "baz", "42", "foo", "bar", "baz")
    r.call("TOPK.ADD", "t", "foo", "baz", "42", "foo", "baz")
    r.call("TOPK.ADD", "t", "foo", "bar", "baz", "foo", "baz")
    assert items(r, "TOPK.LIST", "t") == ["foo", "baz"]
    assert items(r, "TOPK.ADD", "t", *["bar"] * 5) == [None, None, "foo", None, None]
    assert items(r, "TOPK.LIST", "t") == ["bar", "baz"]


def test_incrby_with_full_decay(r: RawClient) -> None:
    r.call("TOPK.RESERVE", "t", 3, 10, 3, 1)
    assert items(r, "TOPK.INCRBY", "t", "bar", 3, "baz", 6, "42", 2) == [None, None, None]
    assert items(r, "TOPK.INCRBY", "t", "42", 8, "xyzzy", 4) == [None, "bar"]
    assert items(r, "TOPK.COUNT", "t", "bar", "baz", "42", "xyzzy", 4) == [3, 6, 10, 4, 0]


def test_default_sketch_lists_by_count(r: RawClient) -> None:
    r.call("TOPK.RESERVE", "t", 3)
    r.call("TOPK.ADD", "t", "foo", "bar", "baz", "42", "foo", "bar", "baz")
    r.call("TOPK.ADD", "t", "foo", "baz", "42", "foo")
    r.call("TOPK.ADD", "t", "foo", "bar", "baz", "foo")
    assert items(r, "TOPK.LIST", "t", "WITHCOUNT") == ["foo", 6, "baz", 4, "bar", 3]


def test_empty_item(r: RawClient) -> None:
    r.call("TOPK.RESERVE", "t", 3)
    r.call("TOPK.ADD", "t", "")
    assert items(r, "TOPK.LIST", "t", "withcount") == ["", 1]
    r.call("TOPK.INCRBY", "t", "", 100)
    r.call("TOPK.ADD", "t", "foo", "bar", "baz")
    r.call("TOPK.ADD", "t", "foo", "bar", "baz", "")
    r.call("TOPK.ADD", "t", "foo", "bar", "")
    r.call("TOPK.ADD", "t", "foo", "")
    assert items(r, "TOPK.LIST", "t", "WITHCOUNT") == ["", 104, "foo", 4, "bar", 3]
    r.call("TOPK.INCRBY", "t", "foo", 500, "bar", 500, "baz", 500)
    assert items(r, "TOPK.LIST", "t", "WITHCOUNT") == ["foo", 504, "bar", 503, "baz", 502]


def test_dump_restore_keeps_the_list(r: RawClient, proto: int) -> None:
    r.call("TOPK.RESERVE", "t", 3, 500, 4, 0.8)
    r.call("TOPK.INCRBY", "t", "x", 4, "y", 2, "z\x00tail", 7)
    payload = r.call("DUMP", "t")[1]
    assert r.call("RESTORE", "u", 0, payload) == ("+", b"OK")
    expected = ("*", [("+", b"z"), (":", 7), ("+", b"x"), (":", 4), ("+", b"y"), (":", 2)])
    assert r.call("TOPK.LIST", "u", "WITHCOUNT") == expected  # an item is a C string on the wire
    assert r.call("TOPK.QUERY", "u", "z\x00tail", "z") == flags(proto, True, False)


def test_payload_round_trip_and_copy() -> None:
    sketch = TopK(2, 50, 3, 0.9)
    sketch.add(b"item", 3)
    again = TopK.from_payload(sketch.payload(), 0)
    assert [(s.item, s.count) for s in again.ranked()] == [(b"item", 3)]
    twin = sketch.copy()
    twin.add(b"item", 1)
    assert sketch.count(b"item") == 3 and twin.count(b"item") == 4
    with pytest.raises(ValueError):
        TopK.from_payload(sketch.payload()[:20], 0)


def test_verbs_unknown_without_the_setting() -> None:
    with Server() as srv, RawClient(srv.host, srv.port) as client:
        kind, text = client.call("TOPK.RESERVE", "t", 2)
        assert kind == "-" and text.startswith(b"ERR unknown command 'TOPK.RESERVE'")
