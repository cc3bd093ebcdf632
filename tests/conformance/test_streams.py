"""Streams: every command, option and error, in RESP2 and RESP3, against both targets.

Times that depend on the wall clock (idle, delivery times) are asserted as ranges here;
exact values under a frozen clock are in test_streams_blocking.py (fakekey only).
"""

import time

import pytest

from fakekey.testing.raw import plain

WRONGTYPE = ("-", b"WRONGTYPE Operation against a key holding the wrong kind of value")
NOT_INT = ("-", b"ERR value is not an integer or out of range")
SYNTAX = ("-", b"ERR syntax error")
INVALID_ID = ("-", b"ERR Invalid stream ID specified as stream command argument")
TOO_SMALL = ("-", b"ERR The ID specified in XADD is equal or smaller than the target stream top item")
MAX = "18446744073709551615"


def null(proto):
    return ("$", None) if proto == 2 else ("_", None)


def null_array(proto):
    return ("*", None) if proto == 2 else ("_", None)


def entry(sid, *fields):
    return ("*", [("$", sid.encode()), ("*", [("$", f.encode()) for f in fields])])


def entries(*items):
    return ("*", list(items))


def ids(*values):
    return ("*", [("$", v.encode()) for v in values])


def as_map(proto, pairs):
    """A map reply: RESP3 `%`, RESP2 a flat array."""
    if proto == 3:
        return ("%", [(("$", k.encode()), v) for k, v in pairs])
    flat = []
    for k, v in pairs:
        flat += [("$", k.encode()), v]
    return ("*", flat)


def info(r, *args):
    """An XINFO reply as a plain dict (either protocol)."""
    value = plain(r.call("XINFO", *args))
    if isinstance(value, list):
        return dict(zip(value[::2], value[1::2], strict=True))
    return value


def plain_maps(value):
    """Plain list of RESP2 flat maps or RESP3 maps -> list of dicts."""
    return [v if isinstance(v, dict) else dict(zip(v[::2], v[1::2], strict=True)) for v in value]


def streams(reply):
    """An XREAD/XREADGROUP reply (RESP2 pairs or RESP3 map) as {key: entries}."""
    value = plain(reply)
    return value if isinstance(value, dict) else {key: items for key, items in value}


def fill(r, key, count, start=1, **fields):
    """`count` entries with ids start-1 .. (start+count-1)-1 (one per millisecond)."""
    pairs = [x for kv in (fields or {"f": "v"}).items() for x in kv]
    replies = r.pipeline(*[("XADD", key, f"{ms}-1", *pairs) for ms in range(start, start + count)])
    assert all(kind == "$" for kind, _ in replies)


@pytest.fixture
def node_config(target):
    """Restore the node-size settings a test changes."""
    yield
    with target.raw() as client:
        client.call("CONFIG", "SET", "stream-node-max-entries", "100")
        client.call("CONFIG", "SET", "stream-node-max-bytes", "4096")


# --- XADD -----------------------------------------------------------------------------------


def test_xadd_explicit_ids(r2):
    assert r2.call("XADD", "s", "1-1", "a", "1") == ("$", b"1-1")
    assert r2.call("XADD", "s", "1-1", "a", "1") == TOO_SMALL
    assert r2.call("XADD", "s", "1-0", "a", "1") == TOO_SMALL
    assert r2.call("XADD", "s", "1-*", "a", "1") == ("$", b"1-2")
    assert r2.call("XADD", "s", "2-*", "a", "1") == ("$", b"2-0")
    assert r2.call("XADD", "s", "1-*", "a", "1") == TOO_SMALL
    assert r2.call("XADD", "s", "5", "a", "1", "b", "2") == ("$", b"5-0")  # incomplete: seq 0
    assert r2.call("XADD", "s", "5-*", "a", "1") == ("$", b"5-1")
    assert r2.call("XLEN", "s") == (":", 5)
    assert r2.call("XRANGE", "s", "5", "5") == entries(entry("5-0", "a", "1", "b", "2"), entry("5-1", "a", "1"))


@pytest.mark.parametrize("sid", ["0", "0-0"])
def test_xadd_zero_id(r2, sid):
    assert r2.call("XADD", "s", sid, "a", "1") == ("-", b"ERR The ID specified in XADD must be greater than 0-0")
    assert r2.call("EXISTS", "s") == (":", 0)
    assert r2.call("XADD", "s", "0-*", "a", "1") == ("$", b"0-1")


def test_xadd_id_parsing_is_strtoull(r2):
    """Ids parse as Valkey's string2ull: a sign, blanks and leading zeros pass."""
    assert r2.call("XADD", "s", "+3", "a", "1") == ("$", b"3-0")
    assert r2.call("XADD", "s", "04-02", "a", "1") == ("$", b"4-2")
    assert r2.call("XADD", "s", " 5-1", "a", "1") == ("$", b"5-1")
    assert r2.call("XADD", "s", "6--01", "a", "1") == ("$", b"6-" + MAX.encode())  # C's wrap-around


@pytest.mark.parametrize(
    "sid", ["abc", "-1", "1-", "1--1", "-", "+", "1-2-3", "1-x", "18446744073709551616", "1-18446744073709551616",
            "0x10", "1 ", "", "*-1", "(1"],
)
def test_xadd_invalid_ids(r2, sid):
    assert r2.call("XADD", "s", sid, "a", "1") == INVALID_ID
    assert r2.call("EXISTS", "s") == (":", 0)


def test_xadd_exhausted(r2):
    assert r2.call("XADD", "s", f"{MAX}-{MAX}", "a", "1") == ("$", f"{MAX}-{MAX}".encode())
    exhausted = ("-", b"ERR The stream has exhausted the last possible ID, unable to add more items")
    assert r2.call("XADD", "s", "*", "a", "1") == exhausted
    assert r2.call("XADD", "s", "1-1", "a", "1") == exhausted
    assert r2.call("XADD", "t", f"5-{MAX}", "a", "1") == ("$", f"5-{MAX}".encode())
    assert r2.call("XADD", "t", "5-*", "a", "1") == TOO_SMALL
    assert r2.call("XADD", "t", "6-*", "a", "1") == ("$", b"6-0")
    assert r2.call("XADD", "u", f"{MAX}-*", "a", "1") == ("$", f"{MAX}-0".encode())


def test_ids_of_18_and_19_digits_keep_their_values(r2):
    """A plain id's parts are read in native integers up to 18 digits, and past that in
    integers that grow: either side of the line, and 19 digits past 2**63."""
    ids = ["999999999999999999-1", "1000000000000000000-999999999999999999",
           "9223372036854775808-9999999999999999999", "9999999999999999999-1"]
    for sid in ids:
        assert r2.call("XADD", "s", sid, "a", "1") == ("$", sid.encode())
    kind, entries = r2.call("XRANGE", "s", "999999999999999999-1", "9999999999999999999-1")
    assert [entry[1][0] for entry in entries] == [("$", sid.encode()) for sid in ids]
    assert r2.call("XDEL", "s", "9223372036854775808-9999999999999999999") == (":", 1)


def test_xadd_auto_id_never_goes_backwards(r2):
    future = 99999999999999
    r2.call("XADD", "s", f"{future}-5", "a", "1")
    assert r2.call("XADD", "s", "*", "a", "1") == ("$", f"{future}-6".encode())
    assert r2.call("XADD", "s", f"{future}-*", "a", "1") == ("$", f"{future}-7".encode())


def test_xadd_auto_id_uses_server_time(r2):
    now = int(time.time() * 1000)
    ms, seq = plain(r2.call("XADD", "s", "*", "a", "1")).split(b"-")
    assert abs(int(ms) - now) < 5000 and seq == b"0"
    again = plain(r2.call("XADD", "s", "*", "a", "1"))
    assert again > b"" and tuple(map(int, again.split(b"-"))) > (int(ms), 0)


def test_xadd_reply_types(r, proto):
    assert r.call("XADD", "s", "NOMKSTREAM", "1-1", "a", "1") == null(proto)
    assert r.call("EXISTS", "s") == (":", 0)
    assert r.call("XADD", "s", "1-1", "a", "1") == ("$", b"1-1")
    assert r.call("XADD", "s", "NOMKSTREAM", "2-1", "a", "1") == ("$", b"2-1")
    r.call("SET", "str", "x")
    assert r.call("XADD", "str", "*", "a", "1") == WRONGTYPE
    assert r.call("XADD", "str", "NOMKSTREAM", "*", "a", "1") == WRONGTYPE
    assert r.call("XADD", "str", "bad", "a", "1") == INVALID_ID  # ids are parsed first
    assert r.call("TYPE", "s") == ("+", b"stream")
    assert r.call("OBJECT", "ENCODING", "s") == ("$", b"stream")


@pytest.mark.parametrize(
    "args,error",
    [
        (["*", "a"], b"ERR wrong number of arguments for 'xadd' command"),
        (["*", "a", "1", "b"], b"ERR wrong number of arguments for 'xadd' command"),
        (["MAXLEN", "5"], b"ERR wrong number of arguments for 'xadd' command"),
        (["NOMKSTREAM", "a", "b"], b"ERR Invalid stream ID specified as stream command argument"),
        (["MAXLEN", "-1", "*", "a", "1"], b"ERR The MAXLEN argument must be >= 0."),
        (["MAXLEN", "x", "*", "a", "1"], b"ERR value is not an integer or out of range"),
        (["MAXLEN", "~", "*", "a", "1"], b"ERR value is not an integer or out of range"),
        (["MAXLEN", "1", "MINID", "1", "*", "a", "1"],
         b"ERR syntax error, MAXLEN and MINID options at the same time are not compatible"),
        (["LIMIT", "5", "*", "a", "1"],
         b"ERR syntax error, LIMIT cannot be used without specifying a trimming strategy"),
        (["LIMIT", "0", "*", "a", "1"], b"ERR syntax error, LIMIT cannot be used without the special ~ option"),
        (["MAXLEN", "1", "LIMIT", "10", "*", "a", "1"],
         b"ERR syntax error, LIMIT cannot be used without the special ~ option"),
        (["MAXLEN", "=", "1", "LIMIT", "10", "*", "a", "1"],
         b"ERR syntax error, LIMIT cannot be used without the special ~ option"),
        (["MINID", "~", "5", "LIMIT", "-1", "*", "a", "1"], b"ERR The LIMIT argument must be >= 0."),
        (["MINID", "+", "*", "a", "1"], b"ERR Invalid stream ID specified as stream command argument"),
        (["MINID", "~", "-", "*", "a", "1"], b"ERR Invalid stream ID specified as stream command argument"),
        (["MINID", "x", "*", "a", "1"], b"ERR Invalid stream ID specified as stream command argument"),
    ],
)
def test_xadd_option_errors(r2, args, error):
    assert r2.call("XADD", "s", *args) == ("-", error)
    assert r2.call("EXISTS", "s") == (":", 0)


def test_xadd_trims_exactly(r2):
    fill(r2, "s", 5)
    assert r2.call("XADD", "s", "MAXLEN", "3", "6-1", "f", "v") == ("$", b"6-1")
    assert r2.call("XRANGE", "s", "-", "+") == entries(entry("4-1", "f", "v"), entry("5-1", "f", "v"),
                                                       entry("6-1", "f", "v"))
    assert r2.call("XADD", "s", "MAXLEN", "=", "0", "7-1", "f", "v") == ("$", b"7-1")
    assert r2.call("XLEN", "s") == (":", 0)
    assert r2.call("EXISTS", "s") == (":", 1)  # an emptied stream is kept
    fill(r2, "m", 5)
    assert r2.call("XADD", "m", "MINID", "4", "6-1", "f", "v") == ("$", b"6-1")
    assert plain(r2.call("XRANGE", "m", "-", "+"))[0][0] == b"4-1"
    assert r2.call("XADD", "m", "MINID", "=", "100", "7-1", "f", "v") == ("$", b"7-1")
    assert r2.call("XLEN", "m") == (":", 0)


def test_xadd_approximate_trimming_removes_whole_nodes(r2):
    """100 entries per node by default: `~` keeps the partial tail node."""
    fill(r2, "s", 250)
    assert r2.call("XADD", "s", "MAXLEN", "~", "10", "251-1", "f", "v") == ("$", b"251-1")
    assert r2.call("XLEN", "s") == (":", 51)
    assert plain(r2.call("XRANGE", "s", "-", "+", "COUNT", "1"))[0][0] == b"201-1"
    fill(r2, "m", 250)
    assert r2.call("XADD", "m", "MINID", "~", "150", "251-1", "f", "v") == ("$", b"251-1")
    assert r2.call("XLEN", "m") == (":", 151)
    fill(r2, "l", 250)
    assert r2.call("XADD", "l", "MAXLEN", "~", "0", "LIMIT", "150", "251-1", "f", "v") == ("$", b"251-1")
    assert r2.call("XLEN", "l") == (":", 151)


# --- XTRIM ----------------------------------------------------------------------------------


def test_xtrim_strategies(r2):
    fill(r2, "s", 250)
    assert r2.call("XTRIM", "s", "MAXLEN", "~", "60") == (":", 100)
    assert r2.call("XTRIM", "s", "MAXLEN", "~", "60") == (":", 0)  # the head node must stay whole
    assert r2.call("XTRIM", "s", "MAXLEN", "60") == (":", 90)
    assert r2.call("XLEN", "s") == (":", 60)
    assert plain(r2.call("XRANGE", "s", "-", "+", "COUNT", "1"))[0][0] == b"191-1"
    assert r2.call("XTRIM", "s", "MINID", "=", "240-1") == (":", 49)
    assert r2.call("XTRIM", "s", "MINID", "~", "245") == (":", 0)  # the node reaches past 245
    assert r2.call("XTRIM", "s", "MINID", "~", "1000") == (":", 11)  # the whole node is older
    assert r2.call("XLEN", "s") == (":", 0)
    assert r2.call("XTRIM", "nokey", "MAXLEN", "0") == (":", 0)


def test_xtrim_limit(r2):
    fill(r2, "s", 250)
    assert r2.call("XTRIM", "s", "MAXLEN", "~", "0", "LIMIT", "150") == (":", 100)
    assert r2.call("XTRIM", "s", "MAXLEN", "~", "0", "LIMIT", "0") == (":", 150)  # 0: no limit
    assert r2.call("XLEN", "s") == (":", 0)


def test_xtrim_small_nodes(r2, node_config):
    r2.call("CONFIG", "SET", "stream-node-max-entries", "10")
    fill(r2, "s", 95)
    assert plain(r2.call("XINFO", "STREAM", "s"))[3] == 10  # radix-tree-keys
    assert r2.call("XTRIM", "s", "MAXLEN", "~", "21") == (":", 70)
    assert r2.call("XLEN", "s") == (":", 25)


def test_node_size_in_bytes(r2, node_config):
    """A node also closes when its listpack would reach stream-node-max-bytes."""
    r2.call("CONFIG", "SET", "stream-node-max-bytes", "200")
    fill(r2, "s", 30, f="v" * 20)
    stream = info(r2, "STREAM", "s")
    assert (stream[b"radix-tree-keys"], stream[b"radix-tree-nodes"]) == (5, 12)  # 6 entries a node
    assert r2.call("XTRIM", "s", "MAXLEN", "~", "7") == (":", 18)


@pytest.mark.parametrize(
    "args,error",
    [
        (["MAXLEN"], b"ERR wrong number of arguments for 'xtrim' command"),
        (["FOO"], b"ERR wrong number of arguments for 'xtrim' command"),
        (["FOO", "1"], b"ERR syntax error"),
        (["MAXLEN", "~"], b"ERR value is not an integer or out of range"),
        (["MAXLEN", "5", "LIMIT", "10"], b"ERR syntax error, LIMIT cannot be used without the special ~ option"),
        (["LIMIT", "10"], b"ERR syntax error, LIMIT cannot be used without specifying a trimming strategy"),
        (["LIMIT", "0"], b"ERR syntax error, XTRIM must be called with a trimming strategy"),
        (["MAXLEN", "5", "NOMKSTREAM"], b"ERR syntax error"),
        (["MAXLEN", "5", "*"], b"ERR syntax error"),
        (["MINID", "5", "MAXLEN", "5"],
         b"ERR syntax error, MAXLEN and MINID options at the same time are not compatible"),
        (["MAXLEN", "~", "-1"], b"ERR The MAXLEN argument must be >= 0."),
        (["MAXLEN", "5", "LIMIT", "x"], b"ERR value is not an integer or out of range"),
        (["MINID", "-"], b"ERR Invalid stream ID specified as stream command argument"),
    ],
)
def test_xtrim_errors(r2, args, error):
    r2.call("XADD", "s", "1-1", "f", "v")
    assert r2.call("XTRIM", "s", *args) == ("-", error)


def test_xtrim_wrong_type(r2):
    r2.call("SET", "str", "x")
    assert r2.call("XTRIM", "str", "MAXLEN", "1") == WRONGTYPE
    assert r2.call("XTRIM", "str", "MAXLEN", "x") == NOT_INT


# --- XRANGE, XREVRANGE, XLEN --------------------------------------------------------------------


@pytest.fixture
def three(r2):
    for sid, field in (("1-1", "a"), ("1-2", "b"), ("2-0", "c")):
        r2.call("XADD", "s", sid, field, "1")
    return r2


A, B, C = entry("1-1", "a", "1"), entry("1-2", "b", "1"), entry("2-0", "c", "1")


@pytest.mark.parametrize(
    "start,end,expected",
    [
        ("-", "+", [A, B, C]), ("1", "1", [A, B]), ("(1-1", "+", [B, C]), ("-", "(2", [A, B, C]),
        ("-", "(2-0", [A, B]), ("2", "1", []), ("-", "(0", []), (" 1", "+", [A, B, C]),
        ("1-2", "1-2", [B]), ("(1-2", "(2-0", []), (f"{MAX}", "+", []),
    ],
)
def test_xrange_bounds(three, start, end, expected):
    assert three.call("XRANGE", "s", start, end) == entries(*expected)
    assert three.call("XREVRANGE", "s", end, start) == entries(*reversed(expected))


def test_xrange_count(r, proto):
    for sid in ("1-1", "1-2", "2-0"):
        r.call("XADD", "s", sid, "f", "v")
    assert plain(r.call("XRANGE", "s", "-", "+", "COUNT", "2")) == [[b"1-1", [b"f", b"v"]], [b"1-2", [b"f", b"v"]]]
    assert plain(r.call("XREVRANGE", "s", "+", "-", "COUNT", "1")) == [[b"2-0", [b"f", b"v"]]]
    assert len(plain(r.call("XRANGE", "s", "-", "+", "COUNT", "1", "COUNT", "2"))) == 2  # the last wins
    assert r.call("XRANGE", "s", "-", "+", "COUNT", "0") == null_array(proto)
    assert r.call("XRANGE", "s", "-", "+", "COUNT", "-1") == null_array(proto)
    assert r.call("XREVRANGE", "s", "+", "-", "COUNT", "0") == null_array(proto)
    assert r.call("XRANGE", "nokey", "-", "+", "COUNT", "0") == ("*", [])
    assert r.call("XRANGE", "nokey", "-", "+") == ("*", [])


@pytest.mark.parametrize(
    "args,error",
    [
        (["(", "+"], INVALID_ID[1]), (["(-", "+"], INVALID_ID[1]), (["-", "(+"], INVALID_ID[1]),
        (["x", "+"], INVALID_ID[1]), (["-", "1-2-3"], INVALID_ID[1]),
        ([f"({MAX}-{MAX}", "+"], b"ERR invalid start ID for the interval"),
        (["-", "(0-0"], b"ERR invalid end ID for the interval"),
        (["-", "+", "COUNT"], b"ERR syntax error"), (["-", "+", "FOO", "1"], b"ERR syntax error"),
        (["-", "+", "COUNT", "x"], b"ERR value is not an integer or out of range"),
    ],
)
def test_xrange_errors(r2, args, error):
    r2.call("XADD", "s", "1-1", "f", "v")
    assert r2.call("XRANGE", "s", *args) == ("-", error)
    assert r2.call("XRANGE", "nokey", *args) == ("-", error)  # arguments first, then the key


def test_xrange_xlen_wrong_type(r2):
    r2.call("SET", "str", "x")
    assert r2.call("XRANGE", "str", "-", "+") == WRONGTYPE
    assert r2.call("XREVRANGE", "str", "+", "-") == WRONGTYPE
    assert r2.call("XLEN", "str") == WRONGTYPE
    assert r2.call("XLEN", "nokey") == (":", 0)


# --- XDEL -----------------------------------------------------------------------------------


def test_xdel(three):
    r = three
    assert r.call("XDEL", "s", "1-1", "9-9", "1-1") == (":", 1)
    assert r.call("XRANGE", "s", "-", "+") == entries(B, C)
    stream = info(r, "STREAM", "s")
    assert stream[b"max-deleted-entry-id"] == b"1-1"
    assert stream[b"recorded-first-entry-id"] == b"1-2"
    assert r.call("XDEL", "s", "1-2", "x") == INVALID_ID  # all ids checked before any delete
    assert r.call("XLEN", "s") == (":", 2)
    assert r.call("XDEL", "s", "2-0", "1-2") == (":", 2)
    assert r.call("XLEN", "s") == (":", 0)
    assert r.call("EXISTS", "s") == (":", 1)
    stream = info(r, "STREAM", "s")
    assert stream[b"max-deleted-entry-id"] == b"2-0"
    assert stream[b"recorded-first-entry-id"] == b"0-0"
    assert stream[b"last-generated-id"] == b"2-0"
    assert r.call("XADD", "s", "2-0", "f", "v") == TOO_SMALL  # the last id is remembered


def test_xdel_errors(r2):
    assert r2.call("XDEL", "nokey", "x") == (":", 0)  # no key: nothing is parsed
    r2.call("XADD", "s", "1-1", "f", "v")
    assert r2.call("XDEL", "s", "-") == INVALID_ID
    assert r2.call("XDEL", "s", "+") == INVALID_ID
    r2.call("SET", "str", "x")
    assert r2.call("XDEL", "str", "1") == WRONGTYPE


# --- XREAD ----------------------------------------------------------------------------------


def test_xread_reply_shapes(r, proto):
    r.call("XADD", "a", "1-1", "f", "1")
    r.call("XADD", "b", "2-1", "f", "2")
    reply = r.call("XREAD", "STREAMS", "a", "nokey", "b", "0", "0", "0")
    if proto == 2:
        assert reply == ("*", [("*", [("$", b"a"), entries(entry("1-1", "f", "1"))]),
                               ("*", [("$", b"b"), entries(entry("2-1", "f", "2"))])])
    else:
        assert reply == ("%", [(("$", b"a"), entries(entry("1-1", "f", "1"))),
                               (("$", b"b"), entries(entry("2-1", "f", "2")))])
    assert r.call("XREAD", "STREAMS", "a", "$") == null_array(proto)
    assert r.call("XREAD", "STREAMS", "nokey", "0") == null_array(proto)
    twice = r.call("XREAD", "STREAMS", "a", "a", "0", "0")  # a key given twice answers twice
    assert len(twice[1]) == 2


def test_xread_ids(r2):
    for sid in ("1-1", "1-2", "2-0"):
        r2.call("XADD", "s", sid, "f", "v")

    def read(*args):
        reply = plain(r2.call("XREAD", *args))
        return None if reply is None else [e[0] for e in reply[0][1]]

    assert read("STREAMS", "s", "0") == [b"1-1", b"1-2", b"2-0"]
    assert read("STREAMS", "s", "1") == [b"1-1", b"1-2", b"2-0"]  # incomplete: 1-0
    assert read("STREAMS", "s", "1-1") == [b"1-2", b"2-0"]
    assert read("STREAMS", "s", "+") == [b"2-0"]  # the last entry
    assert read("STREAMS", "s", "$") is None
    assert read("COUNT", "2", "STREAMS", "s", "0") == [b"1-1", b"1-2"]
    assert read("COUNT", "0", "STREAMS", "s", "0") == [b"1-1", b"1-2", b"2-0"]
    assert read("COUNT", "-5", "STREAMS", "s", "0") == [b"1-1", b"1-2", b"2-0"]
    assert read("STREAMS", "s", f"{MAX}-{MAX}") is None
    r2.call("XDEL", "s", "2-0")
    assert read("STREAMS", "s", "+") is None  # + is just before the last id ever added
    r2.call("XGROUP", "CREATE", "e", "g", "$", "MKSTREAM")
    assert read("STREAMS", "e", "+") is None


@pytest.mark.parametrize(
    "args,error",
    [
        (["BLOCK", "-1", "STREAMS", "s", "0"], b"ERR timeout is negative"),
        (["BLOCK", "1.5", "STREAMS", "s", "0"], b"ERR timeout is not an integer or out of range"),
        (["BLOCK", "abc", "STREAMS", "s", "0"], b"ERR timeout is not an integer or out of range"),
        (["BLOCK", "9223372036854775807", "STREAMS", "s", "$"], b"ERR timeout is out of range"),
        (["COUNT", "x", "STREAMS", "s", "0"], b"ERR value is not an integer or out of range"),
        (["STREAMS", "s"], b"ERR wrong number of arguments for 'xread' command"),
        (["STREAMS", "s", "t", "0"],
         b"ERR Unbalanced 'xread' list of streams: for each stream key an ID or '$' must be specified."),
        (["GROUP", "g", "c", "STREAMS", "s", "0"],
         b"ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead."),
        (["NOACK", "STREAMS", "s", "0"],
         b"ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead."),
        (["FOO", "STREAMS", "s", "0"], b"ERR syntax error"),
        (["COUNT", "1", "BLOCK", "10"], b"ERR syntax error"),
        (["STREAMS", "s", ">"],
         b"ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option."),
        (["STREAMS", "s", "-"], b"ERR Invalid stream ID specified as stream command argument"),
        (["STREAMS", "s", "(1"], b"ERR Invalid stream ID specified as stream command argument"),
        (["STREAMS", "s", "str", "0", "zz"], WRONGTYPE[1]),  # the type is checked before the id
        (["STREAMS", "s", "str", "zz", "0"], b"ERR Invalid stream ID specified as stream command argument"),
    ],
)
def test_xread_errors(r2, args, error):
    r2.call("XADD", "s", "1-1", "f", "v")
    r2.call("SET", "str", "x")
    assert r2.call("XREAD", *args) == ("-", error)


# --- XGROUP ---------------------------------------------------------------------------------

REQUIRES_KEY = (
    "-",
    b"ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use "
    b"the MKSTREAM option to create an empty stream automatically.",
)


def groups(r):
    return {g[b"name"]: g for g in plain_maps(plain(r.call("XINFO", "GROUPS", "s")))}


def test_xgroup_create(r2):
    assert r2.call("XGROUP", "CREATE", "s", "g", "$") == REQUIRES_KEY
    assert r2.call("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM") == ("+", b"OK")
    assert r2.call("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM") == ("-", b"BUSYGROUP Consumer Group name already exists")
    assert r2.call("TYPE", "s") == ("+", b"stream")
    r2.call("XADD", "s", "5-5", "f", "v")
    assert r2.call("XGROUP", "CREATE", "s", "dollar", "$") == ("+", b"OK")
    assert r2.call("XGROUP", "create", "s", "read", "1-1", "ENTRIESREAD", "1", "mkstream") == ("+", b"OK")
    assert r2.call("XGROUP", "CREATE", "s", "invalid", "0", "ENTRIESREAD", "-1") == ("+", b"OK")
    found = groups(r2)
    assert list(found) == [b"dollar", b"g", b"invalid", b"read"]  # by name
    assert found[b"dollar"][b"last-delivered-id"] == b"5-5"
    assert found[b"g"][b"last-delivered-id"] == b"0-0"
    assert found[b"read"][b"entries-read"] == 1
    assert found[b"invalid"][b"entries-read"] is None


@pytest.mark.parametrize(
    "args,error",
    [
        (["CREATE", "s", "g2", "0", "ENTRIESREAD", "-2"], b"ERR value for ENTRIESREAD must be positive or -1"),
        (["CREATE", "s", "g2", "0", "ENTRIESREAD", "x"], b"ERR value is not an integer or out of range"),
        (["CREATE", "s", "g2", "0", "FOO"],
         b"ERR unknown subcommand or wrong number of arguments for 'CREATE'. Try XGROUP HELP."),
        (["create", "s", "g2", "0", "ENTRIESREAD"],
         b"ERR unknown subcommand or wrong number of arguments for 'create'. Try XGROUP HELP."),
        (["CREATE", "s", "g2", "0", "MKSTREAM", "MKSTREAM", "MKSTREAM", "MKSTREAM"],
         b"ERR unknown subcommand or wrong number of arguments for 'CREATE'. Try XGROUP HELP."),
        (["CREATE", "s", "g2", "-"], INVALID_ID[1]), (["CREATE", "s", "g2", "+"], INVALID_ID[1]),
        (["CREATE", "s", "g2", "abc"], INVALID_ID[1]),
        (["CREATE", "s"], b"ERR wrong number of arguments for 'xgroup|create' command"),
        (["SETID", "s", "nog", "0"], b"NOGROUP No such consumer group 'nog' for key name 's'"),
        (["SETID", "s", "g", "0", "MKSTREAM"],
         b"ERR unknown subcommand or wrong number of arguments for 'SETID'. Try XGROUP HELP."),
        (["SETID", "s", "g", "0", "ENTRIESREAD"],
         b"ERR unknown subcommand or wrong number of arguments for 'SETID'. Try XGROUP HELP."),
        (["SETID", "s", "g", "0", "ENTRIESREAD", "3", "ENTRIESREAD", "4"],
         b"ERR unknown subcommand or wrong number of arguments for 'SETID'. Try XGROUP HELP."),
        (["SETID", "s", "g", "x"], INVALID_ID[1]),
        (["SETID", "nokey", "g", "0"], REQUIRES_KEY[1]),
        (["CREATECONSUMER", "s", "nog", "c"], b"NOGROUP No such consumer group 'nog' for key name 's'"),
        (["CREATECONSUMER", "nokey", "g", "c"], REQUIRES_KEY[1]),
        (["CREATECONSUMER", "s", "g"], b"ERR wrong number of arguments for 'xgroup|createconsumer' command"),
        (["DELCONSUMER", "s", "nog", "c"], b"NOGROUP No such consumer group 'nog' for key name 's'"),
        (["DELCONSUMER", "s", "g", "c", "d"], b"ERR wrong number of arguments for 'xgroup|delconsumer' command"),
        (["DESTROY", "nokey", "g"], REQUIRES_KEY[1]),
        (["DESTROY", "s", "g", "x"], b"ERR wrong number of arguments for 'xgroup|destroy' command"),
        (["FOO"], b"ERR unknown subcommand 'FOO'. Try XGROUP HELP."),
        (["FOO", "s", "g"], b"ERR unknown subcommand 'FOO'. Try XGROUP HELP."),
        (["HELP", "x"], b"ERR wrong number of arguments for 'xgroup|help' command"),
        (["CREATE", "str", "g", "$", "MKSTREAM"], WRONGTYPE[1]),
        (["DESTROY", "str", "g"], WRONGTYPE[1]),
        (["CREATE", "str", "g", "$", "FOO"],
         b"ERR unknown subcommand or wrong number of arguments for 'CREATE'. Try XGROUP HELP."),
    ],
)
def test_xgroup_errors(r2, args, error):
    r2.call("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    r2.call("SET", "str", "x")
    assert r2.call("XGROUP", *args) == ("-", error)


def test_xgroup_wrong_arity(r2):
    assert r2.call("XGROUP") == ("-", b"ERR wrong number of arguments for 'xgroup' command")
    assert r2.call("XINFO") == ("-", b"ERR wrong number of arguments for 'xinfo' command")


def test_xgroup_setid(r2):
    for sid in ("1-1", "2-1", "3-1"):
        r2.call("XADD", "s", sid, "f", "v")
    r2.call("XGROUP", "CREATE", "s", "g", "0")
    assert r2.call("XGROUP", "SETID", "s", "g", "2-1", "ENTRIESREAD", "2") == ("+", b"OK")
    assert (groups(r2)[b"g"][b"last-delivered-id"], groups(r2)[b"g"][b"entries-read"], groups(r2)[b"g"][b"lag"]) == (b"2-1", 2, 1)
    assert r2.call("XGROUP", "SETID", "s", "g", "$") == ("+", b"OK")
    assert (groups(r2)[b"g"][b"last-delivered-id"], groups(r2)[b"g"][b"entries-read"]) == (b"3-1", None)
    assert r2.call("XGROUP", "SETID", "s", "g", "-") == ("+", b"OK")  # - and + are accepted here
    assert groups(r2)[b"g"][b"last-delivered-id"] == b"0-0"
    assert r2.call("XGROUP", "SETID", "s", "g", "+") == ("+", b"OK")
    assert groups(r2)[b"g"][b"last-delivered-id"] == f"{MAX}-{MAX}".encode()


def test_xgroup_consumers(r2):
    r2.call("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    assert r2.call("XGROUP", "CREATECONSUMER", "s", "g", "c") == (":", 1)
    assert r2.call("XGROUP", "CREATECONSUMER", "s", "g", "c") == (":", 0)
    assert r2.call("XGROUP", "DELCONSUMER", "s", "g", "nobody") == (":", 0)
    for sid in ("1-1", "2-1"):
        r2.call("XADD", "s", sid, "f", "v")
    r2.call("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    assert r2.call("XGROUP", "DELCONSUMER", "s", "g", "c") == (":", 2)  # its pending count
    assert plain(r2.call("XPENDING", "s", "g"))[0] == 0  # and its entries left the PEL
    assert r2.call("XINFO", "CONSUMERS", "s", "g") == ("*", [])


def test_xgroup_destroy(r2):
    r2.call("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    assert r2.call("XGROUP", "DESTROY", "s", "nog") == (":", 0)
    assert r2.call("XGROUP", "DESTROY", "s", "g") == (":", 1)
    assert r2.call("XINFO", "GROUPS", "s") == ("*", [])
    assert r2.call("EXISTS", "s") == (":", 1)


def test_help(r2):
    lines = plain(r2.call("XGROUP", "HELP"))
    assert r2.call("XGROUP", "HELP")[1][0] == ("+", b"XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:")
    assert lines[-2:] == [b"HELP", b"    Print this help."] and len(lines) == 17
    assert plain(r2.call("XINFO", "HELP")) == [
        b"XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        b"CONSUMERS <key> <groupname>", b"    Show consumers of <groupname>.",
        b"GROUPS <key>", b"    Show the stream consumer groups.",
        b"STREAM <key> [FULL [COUNT <count>]", b"    Show information about the stream.",
        b"HELP", b"    Print this help.",
    ]


# --- XREADGROUP -----------------------------------------------------------------------------


@pytest.fixture
def grouped(r2):
    for sid, field in (("1-1", "a"), ("2-1", "b"), ("3-1", "c")):
        r2.call("XADD", "s", sid, field, "1")
    r2.call("XGROUP", "CREATE", "s", "g", "0")
    return r2


def read_ids(r, *args):
    reply = plain(r.call("XREADGROUP", *args))
    return None if reply is None else [[e[0] for e in stream[1]] for stream in reply]


def test_xreadgroup_new_entries(grouped):
    r = grouped
    assert read_ids(r, "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s", ">") == [[b"1-1"]]
    assert read_ids(r, "GROUP", "g", "d", "STREAMS", "s", ">") == [[b"2-1", b"3-1"]]
    assert read_ids(r, "GROUP", "g", "d", "STREAMS", "s", ">") is None
    assert plain(r.call("XPENDING", "s", "g")) == [3, b"1-1", b"3-1", [[b"c", b"1"], [b"d", b"2"]]]
    group = groups(r)[b"g"]
    assert (group[b"last-delivered-id"], group[b"entries-read"], group[b"lag"], group[b"consumers"]) == (b"3-1", 3, 0, 2)


def test_xreadgroup_history(r, proto):
    for sid in ("1-1", "2-1", "3-1"):
        r.call("XADD", "s", sid, "f", "v")
    r.call("XGROUP", "CREATE", "s", "g", "0")
    r.call("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    r.call("XDEL", "s", "2-1")
    reply = r.call("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "0")
    deleted = ("*", [("$", b"2-1"), null_array(proto)])  # pending, but gone from the stream
    history = entries(entry("1-1", "f", "v"), deleted, entry("3-1", "f", "v"))
    if proto == 2:
        assert reply == ("*", [("*", [("$", b"s"), history])])
    else:
        assert reply == ("%", [(("$", b"s"), history)])
    assert streams(r.call("XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s", "1-1")) == {
        b"s": [[b"2-1", None]]}
    empty = r.call("XREADGROUP", "GROUP", "g", "other", "STREAMS", "s", "0")  # no history: an empty list
    assert streams(empty) == {b"s": []}
    pending = {p[0]: p[3] for p in plain(r.call("XPENDING", "s", "g", "-", "+", "10"))}
    assert pending == {b"1-1": 2, b"2-1": 1, b"3-1": 2}  # a history read counts a delivery
    assert r.call("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">") == null_array(proto)


def test_xreadgroup_noack(grouped):
    r = grouped
    assert read_ids(r, "GROUP", "g", "c", "NOACK", "STREAMS", "s", ">") == [[b"1-1", b"2-1", b"3-1"]]
    assert plain(r.call("XPENDING", "s", "g"))[0] == 0
    consumer = plain_maps(plain(r.call("XINFO", "CONSUMERS", "s", "g")))[0]
    assert (consumer[b"name"], consumer[b"pending"], consumer[b"inactive"]) == (b"c", 0, -1)


def test_xreadgroup_redelivers_after_setid(grouped):
    r = grouped
    r.call("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    r.call("XGROUP", "SETID", "s", "g", "1-1")
    assert read_ids(r, "GROUP", "g", "d", "STREAMS", "s", ">") == [[b"2-1", b"3-1"]]
    owners = {p[0]: (p[1], p[3]) for p in plain(r.call("XPENDING", "s", "g", "-", "+", "10"))}
    assert owners == {b"1-1": (b"c", 1), b"2-1": (b"d", 1), b"3-1": (b"d", 1)}


def test_xreadgroup_max_id_means_new(grouped):
    r = grouped
    assert read_ids(r, "GROUP", "g", "c", "STREAMS", "s", f"{MAX}-{MAX}") == [[b"1-1", b"2-1", b"3-1"]]
    assert read_ids(r, "GROUP", "g", "c", "STREAMS", "s", f"{MAX}-0") == [[]]


def test_xreadgroup_creates_consumer(grouped):
    r = grouped
    r.call("XREADGROUP", "GROUP", "g", "newbie", "STREAMS", "s", "0")
    consumer = plain_maps(plain(r.call("XINFO", "CONSUMERS", "s", "g")))[0]
    assert (consumer[b"name"], consumer[b"pending"], consumer[b"inactive"]) == (b"newbie", 0, -1)
    assert 0 <= consumer[b"idle"] < 1000


@pytest.mark.parametrize(
    "args,error",
    [
        (["GROUP", "g", "c", "STREAMS", "nokey", ">"],
         b"NOGROUP No such key 'nokey' or consumer group 'g' in XREADGROUP with GROUP option"),
        (["GROUP", "nog", "c", "STREAMS", "s", ">"],
         b"NOGROUP No such key 's' or consumer group 'nog' in XREADGROUP with GROUP option"),
        (["GROUP", "g", "c", "STREAMS", "s", "nokey", ">", ">"],
         b"NOGROUP No such key 'nokey' or consumer group 'g' in XREADGROUP with GROUP option"),
        (["COUNT", "1", "STREAMS", "s", "t", ">", ">"], b"ERR Missing GROUP option for XREADGROUP"),
        (["GROUP", "g", "STREAMS", "s", ">"], b"ERR wrong number of arguments for 'xreadgroup' command"),
        (["GROUP", "g", "c", "STREAMS", "s", "$"],
         b"ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this "
         b"consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just "
         b"return an empty result set."),
        (["GROUP", "g", "c", "STREAMS", "s", "+"],
         b"ERR The + ID is meaningless in the context of XREADGROUP: you want to read the history of this "
         b"consumer by specifying a proper ID, or use the > ID to get new messages. The + ID would just "
         b"return an empty result set."),
        (["GROUP", "g", "c", "STREAMS", "s", "0", "extra"],
         b"ERR Unbalanced 'xreadgroup' list of streams: for each stream key an ID or '>' must be specified."),
        (["GROUP", "g", "c", "STREAMS", "s", "-"], INVALID_ID[1]),
        (["GROUP", "g", "c", "BLOCK", "x", "STREAMS", "s", ">"], b"ERR timeout is not an integer or out of range"),
        (["GROUP", "g", "c", "STREAMS", "str", ">"], WRONGTYPE[1]),
    ],
)
def test_xreadgroup_errors(grouped, args, error):
    grouped.call("SET", "str", "x")
    assert grouped.call("XREADGROUP", *args) == ("-", error)


# --- XACK -----------------------------------------------------------------------------------


def test_xack(grouped):
    r = grouped
    r.call("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    assert r.call("XACK", "s", "g", "1-1", "1-1", "9-9") == (":", 1)
    assert r.call("XACK", "s", "g", "2-1", "x") == INVALID_ID  # all or nothing
    assert r.call("XACK", "s", "g", "2-1", "3") == (":", 1)
    assert plain(r.call("XPENDING", "s", "g")) == [1, b"3-1", b"3-1", [[b"c", b"1"]]]
    assert r.call("XACK", "nokey", "g", "x") == (":", 0)  # no key or group: nothing is parsed
    assert r.call("XACK", "s", "nog", "x") == (":", 0)
    r.call("SET", "str", "x")
    assert r.call("XACK", "str", "g", "1") == WRONGTYPE


# --- XPENDING -------------------------------------------------------------------------------


def test_xpending_summary(r, proto):
    r.call("XADD", "s", "1-1", "f", "v")
    r.call("XGROUP", "CREATE", "s", "g", "0")
    assert r.call("XPENDING", "s", "g") == ("*", [(":", 0), null(proto), null(proto), null_array(proto)])
    r.call("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    assert r.call("XPENDING", "s", "g") == (
        "*", [(":", 1), ("$", b"1-1"), ("$", b"1-1"), ("*", [("*", [("$", b"c"), ("$", b"1")])])])


def test_xpending_extended(grouped):
    r = grouped
    r.call("XREADGROUP", "GROUP", "g", "c", "COUNT", "2", "STREAMS", "s", ">")
    r.call("XREADGROUP", "GROUP", "g", "d", "STREAMS", "s", ">")
    rows = plain(r.call("XPENDING", "s", "g", "-", "+", "10"))
    assert [(row[0], row[1], row[3]) for row in rows] == [(b"1-1", b"c", 1), (b"2-1", b"c", 1), (b"3-1", b"d", 1)]
    assert all(0 <= row[2] < 1000 for row in rows)
    kinds = [kind for kind, _ in r.call("XPENDING", "s", "g", "-", "+", "1")[1][0][1]]
    assert kinds == ["$", "$", ":", ":"]

    def pending(*args):
        return [row[0] for row in plain(r.call("XPENDING", "s", "g", *args))]

    assert pending("-", "+", "10", "c") == [b"1-1", b"2-1"]
    assert pending("-", "+", "10", "nobody") == []
    assert pending("-", "+", "1", "c", "ignored") == [b"1-1"]
    assert pending("(1-1", "+", "10") == [b"2-1", b"3-1"]
    assert pending("-", "(3-1", "10") == [b"1-1", b"2-1"]
    assert pending("2", "2", "10") == [b"2-1"]
    assert pending("-", "+", "-1") == []
    assert pending("IDLE", "0", "-", "+", "10") == [b"1-1", b"2-1", b"3-1"]
    assert pending("IDLE", "100000", "-", "+", "10") == []


@pytest.mark.parametrize(
    "args,error",
    [
        (["g", "-", "+"], b"ERR syntax error"), (["g", "1", "2"], b"ERR syntax error"),
        (["g", "a", "b", "c", "d", "e", "f", "g"], b"ERR syntax error"),
        (["g", "IDLE", "10", "-", "+"], b"ERR syntax error"),
        (["g", "IDLE", "x", "-", "+"], b"ERR value is not an integer or out of range"),
        (["g", "IDLE", "5", "-", "+", "10", "c", "extra"], b"ERR syntax error"),
        (["g", "-", "+", "x"], b"ERR value is not an integer or out of range"),
        (["g", "x", "+", "1"], INVALID_ID[1]), (["g", "(", "+", "1"], INVALID_ID[1]),
        (["g", f"({MAX}-{MAX}", "+", "10"], b"ERR invalid start ID for the interval"),
        (["g", "-", "(0-0", "10"], b"ERR invalid end ID for the interval"),
        (["nog"], b"NOGROUP No such key 's' or consumer group 'nog'"),
        (["nog", "-", "+", "1"], b"NOGROUP No such key 's' or consumer group 'nog'"),
    ],
)
def test_xpending_errors(r2, args, error):
    r2.call("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    assert r2.call("XPENDING", "s", *args) == ("-", error)


def test_xpending_missing_key(r2):
    assert r2.call("XPENDING", "nokey", "g") == ("-", b"NOGROUP No such key 'nokey' or consumer group 'g'")
    assert r2.call("XPENDING", "nokey", "g", "x", "+", "1") == INVALID_ID  # arguments first
    r2.call("SET", "str", "x")
    assert r2.call("XPENDING", "str", "g") == WRONGTYPE


# --- XCLAIM ---------------------------------------------------------------------------------


def pel(r):
    return {row[0]: (row[1], row[3]) for row in plain(r.call("XPENDING", "s", "g", "-", "+", "100"))}


def test_xclaim(grouped):
    r = grouped
    r.call("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    assert r.call("XCLAIM", "s", "g", "d", "0", "1-1", "2-1") == entries(entry("1-1", "a", "1"), entry("2-1", "b", "1"))
    assert pel(r) == {b"1-1": (b"d", 2), b"2-1": (b"d", 2), b"3-1": (b"c", 1)}
    assert r.call("XCLAIM", "s", "g", "e", "0", "1-1", "JUSTID") == ids("1-1")  # JUSTID: no count
    assert r.call("XCLAIM", "s", "g", "e", "100000", "2-1", "3-1") == ("*", [])  # not idle enough
    assert r.call("XCLAIM", "s", "g", "e", "-5", "2-1", "RETRYCOUNT", "7", "JUSTID") == ids("2-1")
    assert pel(r) == {b"1-1": (b"e", 2), b"2-1": (b"e", 7), b"3-1": (b"c", 1)}
    r.call("XCLAIM", "s", "g", "e", "0", "3-1", "IDLE", "5000", "JUSTID")
    idle = {row[0]: row[2] for row in plain(r.call("XPENDING", "s", "g", "-", "+", "10"))}
    assert 5000 <= idle[b"3-1"] < 6000
    r.call("XCLAIM", "s", "g", "e", "0", "3-1", "TIME", "1", "JUSTID")  # TIME in the past: kept
    idle = {row[0]: row[2] for row in plain(r.call("XPENDING", "s", "g", "-", "+", "10"))}
    assert idle[b"3-1"] > 10**12
    assert r.call("XCLAIM", "s", "g", "e", "0", "3-1", "TIME", "99999999999999", "JUSTID") == ids("3-1")
    idle = {row[0]: row[2] for row in plain(r.call("XPENDING", "s", "g", "-", "+", "10"))}
    assert idle[b"3-1"] < 1000  # a time in the future is taken as now


def test_xclaim_force_lastid_and_deleted(grouped):
    r = grouped
    r.call("XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s", ">")
    assert r.call("XCLAIM", "s", "g", "d", "0", "2-1") == ("*", [])  # not pending: ignored
    assert r.call("XCLAIM", "s", "g", "d", "0", "2-1", "9-9", "FORCE", "JUSTID") == ids("2-1")
    assert pel(r) == {b"1-1": (b"c", 1), b"2-1": (b"d", 1)}  # FORCE made it pending (9-9 is no entry)
    r.call("XDEL", "s", "1-1")
    assert r.call("XCLAIM", "s", "g", "d", "0", "1-1") == ("*", [])  # deleted: dropped from the PEL
    assert pel(r) == {b"2-1": (b"d", 1)}
    assert r.call("XCLAIM", "s", "g", "d", "0", "2-1", "LASTID", "9-9", "JUSTID") == ids("2-1")
    assert groups(r)[b"g"][b"last-delivered-id"] == b"9-9"
    r.call("XCLAIM", "s", "g", "d", "0", "2-1", "LASTID", "5-5", "JUSTID")  # never moves back
    assert groups(r)[b"g"][b"last-delivered-id"] == b"9-9"
    assert groups(r)[b"g"][b"consumers"] == 2


@pytest.mark.parametrize(
    "args,error",
    [
        (["g", "e", "0", "2-1", "FOO"], b"ERR Unrecognized XCLAIM option 'FOO'"),
        (["g", "e", "x", "2-1"], b"ERR Invalid min-idle-time argument for XCLAIM"),
        (["g", "e", "0", "2-1", "IDLE", "x"], b"ERR Invalid IDLE option argument for XCLAIM"),
        (["g", "e", "0", "2-1", "TIME", "x"], b"ERR Invalid TIME option argument for XCLAIM"),
        (["g", "e", "0", "2-1", "RETRYCOUNT", "x"], b"ERR Invalid RETRYCOUNT option argument for XCLAIM"),
        (["g", "e", "0", "2-1", "LASTID", "x"], INVALID_ID[1]),
        (["g", "e", "0", "2-1", "IDLE"], b"ERR Unrecognized XCLAIM option 'IDLE'"),
        (["g", "e", "0", "abc"], b"ERR Unrecognized XCLAIM option 'abc'"),
        (["g", "e", "0", "2-1", "JUSTID", "3-1"], b"ERR Unrecognized XCLAIM option '3-1'"),
        (["nog", "e", "0", "2-1"], b"NOGROUP No such key 's' or consumer group 'nog'"),
        (["nog", "e", "x", "2-1"], b"NOGROUP No such key 's' or consumer group 'nog'"),
    ],
)
def test_xclaim_errors(grouped, args, error):
    assert grouped.call("XCLAIM", "s", *args) == ("-", error)
    assert groups(grouped)[b"g"][b"consumers"] == 0  # a refused XCLAIM creates no consumer


# --- XAUTOCLAIM -----------------------------------------------------------------------------


def test_xautoclaim(grouped):
    r = grouped
    r.call("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    r.call("XDEL", "s", "2-1")
    assert r.call("XAUTOCLAIM", "s", "g", "d", "0", "0", "COUNT", "1") == (
        "*", [("$", b"2-1"), entries(entry("1-1", "a", "1")), ("*", [])])
    assert r.call("XAUTOCLAIM", "s", "g", "d", "0", "(1-1", "JUSTID") == (
        "*", [("$", b"0-0"), ids("3-1"), ids("2-1")])  # deleted entries leave the PEL
    assert pel(r) == {b"1-1": (b"d", 2), b"3-1": (b"d", 1)}
    assert r.call("XAUTOCLAIM", "s", "g", "e", "100000", "-") == ("*", [("$", b"0-0"), ("*", []), ("*", [])])
    assert r.call("XAUTOCLAIM", "s", "g", "e", "0", "+") == ("*", [("$", b"0-0"), ("*", []), ("*", [])])
    assert r.call("XAUTOCLAIM", "s", "g", "e", "0", "-", "COUNT", "1", "JUSTID") == ("*", [("$", b"3-1"), ids("1-1"), ("*", [])])
    assert pel(r) == {b"1-1": (b"e", 2), b"3-1": (b"d", 1)}


def test_xautoclaim_counts_deleted_ids(grouped):
    r = grouped
    r.call("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    r.call("XDEL", "s", "1-1", "2-1")
    assert r.call("XAUTOCLAIM", "s", "g", "d", "0", "0", "COUNT", "2") == (
        "*", [("$", b"3-1"), ("*", []), ids("1-1", "2-1")])


@pytest.mark.parametrize(
    "args,error",
    [
        (["g", "d", "0", "0", "COUNT", "0"], b"ERR COUNT must be > 0"),
        (["g", "d", "0", "0", "COUNT", "-1"], b"ERR COUNT must be > 0"),
        (["g", "d", "0", "0", "COUNT", "x"], b"ERR COUNT must be > 0"),
        (["g", "d", "0", "0", "COUNT", "922337203685477580"], b"ERR COUNT must be > 0"),
        (["g", "d", "x", "0"], b"ERR Invalid min-idle-time argument for XAUTOCLAIM"),
        (["g", "d", "0", "x"], INVALID_ID[1]), (["g", "d", "0", "(+"], INVALID_ID[1]),
        (["g", "d", "0", f"({MAX}-{MAX}"], b"ERR invalid start ID for the interval"),
        (["g", "d", "0", "0", "FOO"], b"ERR syntax error"),
        (["g", "d", "0", "0", "COUNT"], b"ERR syntax error"),
        (["nog", "d", "0", "0"], b"NOGROUP No such key 's' or consumer group 'nog'"),
    ],
)
def test_xautoclaim_errors(grouped, args, error):
    assert grouped.call("XAUTOCLAIM", "s", *args) == ("-", error)


def test_claims_on_missing_or_wrong_keys(r2):
    r2.call("SET", "str", "x")
    assert r2.call("XCLAIM", "nokey", "g", "c", "0", "1") == ("-", b"NOGROUP No such key 'nokey' or consumer group 'g'")
    assert r2.call("XCLAIM", "str", "g", "c", "0", "1") == WRONGTYPE
    assert r2.call("XAUTOCLAIM", "nokey", "g", "c", "0", "0") == ("-", b"NOGROUP No such key 'nokey' or consumer group 'g'")
    assert r2.call("XAUTOCLAIM", "nokey", "g", "c", "0", "x") == INVALID_ID
    assert r2.call("XAUTOCLAIM", "str", "g", "c", "0", "0") == WRONGTYPE
    assert r2.call("XAUTOCLAIM", "str", "g", "c", "x", "0") == ("-", b"ERR Invalid min-idle-time argument for XAUTOCLAIM")


# --- XSETID ---------------------------------------------------------------------------------


def test_xsetid(r2):
    for sid in ("1-1", "2-1", "3-1"):
        r2.call("XADD", "s", sid, "f", "v")
    assert r2.call("XSETID", "s", "2-1") == ("-", b"ERR The ID specified in XSETID is smaller than the target stream top item")
    assert r2.call("XSETID", "s", "5-1", "ENTRIESADDED", "1") == (
        "-", b"ERR The entries_added specified in XSETID is smaller than the target stream length")
    assert r2.call("XSETID", "s", "5-1", "MAXDELETEDID", "6-0") == (
        "-", b"ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id")
    assert r2.call("XSETID", "s", "5-1", "ENTRIESADDED", "9", "MAXDELETEDID", "4-0") == ("+", b"OK")
    stream = info(r2, "STREAM", "s")
    assert (stream[b"last-generated-id"], stream[b"entries-added"], stream[b"max-deleted-entry-id"]) == (b"5-1", 9, b"4-0")
    assert r2.call("XSETID", "s", "3-9") == ("-", b"ERR The ID specified in XSETID is smaller than current max_deleted_entry_id")
    assert r2.call("XSETID", "s", "5-1", "MAXDELETEDID", "0-0") == ("+", b"OK")  # 0-0 leaves it
    assert info(r2, "STREAM", "s")[b"max-deleted-entry-id"] == b"4-0"
    assert r2.call("XADD", "s", "5-1", "f", "v") == TOO_SMALL
    assert r2.call("XADD", "s", "*", "f", "v")[0] == "$"
    r2.call("XADD", "e", "1-1", "f", "v")
    r2.call("XDEL", "e", "1-1")
    assert r2.call("XSETID", "e", "1-0") == ("-", b"ERR The ID specified in XSETID is smaller than current max_deleted_entry_id")
    assert r2.call("XSETID", "e", "1-1", "ENTRIESADDED", "0") == ("+", b"OK")  # empty: no length check


@pytest.mark.parametrize(
    "args,error",
    [
        (["s", "5-1", "ENTRIESADDED", "-1"], b"ERR entries_added must be positive"),
        (["s", "5-1", "ENTRIESADDED", "x"], b"ERR value is not an integer or out of range"),
        (["s", "5-1", "FOO"], b"ERR syntax error"), (["s", "5-1", "ENTRIESADDED"], b"ERR syntax error"),
        (["s", "x"], INVALID_ID[1]), (["s", "-"], INVALID_ID[1]), (["nokey", "x"], INVALID_ID[1]),
        (["nokey", "1-1"], b"ERR no such key"), (["str", "1-1"], WRONGTYPE[1]),
        (["s", "5-1", "MAXDELETEDID", "+"], INVALID_ID[1]),
    ],
)
def test_xsetid_errors(r2, args, error):
    r2.call("XADD", "s", "1-1", "f", "v")
    r2.call("SET", "str", "x")
    assert r2.call("XSETID", *args) == ("-", error)


# --- XINFO ----------------------------------------------------------------------------------


def test_xinfo_stream(r, proto):
    r.call("XADD", "s", "1-1", "a", "1")
    r.call("XADD", "s", "2-1", "b", "2", "c", "3")
    r.call("XGROUP", "CREATE", "s", "g", "0")
    assert r.call("XINFO", "STREAM", "s") == as_map(proto, [
        ("length", (":", 2)), ("radix-tree-keys", (":", 1)), ("radix-tree-nodes", (":", 2)),
        ("last-generated-id", ("$", b"2-1")), ("max-deleted-entry-id", ("$", b"0-0")),
        ("entries-added", (":", 2)), ("recorded-first-entry-id", ("$", b"1-1")), ("groups", (":", 1)),
        ("first-entry", entry("1-1", "a", "1")), ("last-entry", entry("2-1", "b", "2", "c", "3")),
    ])
    r.call("XADD", "e", "1-1", "a", "1")
    r.call("XDEL", "e", "1-1")
    assert r.call("XINFO", "STREAM", "e") == as_map(proto, [
        ("length", (":", 0)), ("radix-tree-keys", (":", 0)), ("radix-tree-nodes", (":", 1)),
        ("last-generated-id", ("$", b"1-1")), ("max-deleted-entry-id", ("$", b"1-1")),
        ("entries-added", (":", 1)), ("recorded-first-entry-id", ("$", b"0-0")), ("groups", (":", 0)),
        ("first-entry", null(proto)), ("last-entry", null(proto)),
    ])


def test_xinfo_stream_full(r, proto):
    for sid in ("1-1", "2-1", "3-1"):
        r.call("XADD", "s", sid, "f", "v")
    r.call("XGROUP", "CREATE", "s", "g", "0")
    r.call("XREADGROUP", "GROUP", "g", "c", "COUNT", "2", "STREAMS", "s", ">")
    reply = r.call("XINFO", "STREAM", "s", "FULL", "COUNT", "1")
    full = plain(reply)
    if proto == 2:
        full = dict(zip(full[::2], full[1::2], strict=True))
        assert reply[0] == "*"
    else:
        assert reply[0] == "%"
    assert list(full) == [b"length", b"radix-tree-keys", b"radix-tree-nodes", b"last-generated-id",
                          b"max-deleted-entry-id", b"entries-added", b"recorded-first-entry-id",
                          b"entries", b"groups"]
    assert full[b"entries"] == [[b"1-1", [b"f", b"v"]]]
    (group,) = plain_maps(full[b"groups"])
    assert list(group) == [b"name", b"last-delivered-id", b"entries-read", b"lag", b"pel-count",
                           b"pending", b"consumers"]
    assert (group[b"name"], group[b"last-delivered-id"], group[b"entries-read"], group[b"lag"],
            group[b"pel-count"]) == (b"g", b"2-1", 2, 1, 2)
    [[pid, owner, delivered, count]] = group[b"pending"]  # COUNT 1 limits the PEL too
    assert (pid, owner, count) == (b"1-1", b"c", 1) and abs(delivered - time.time() * 1000) < 5000
    (consumer,) = plain_maps(group[b"consumers"])
    assert list(consumer) == [b"name", b"seen-time", b"active-time", b"pel-count", b"pending"]
    assert consumer[b"pel-count"] == 2 and len(consumer[b"pending"]) == 1
    assert consumer[b"pending"][0][0] == b"1-1" and consumer[b"pending"][0][2] == 1
    every = plain(r.call("XINFO", "STREAM", "s", "FULL", "COUNT", "0"))
    every = every if isinstance(every, dict) else dict(zip(every[::2], every[1::2], strict=True))
    assert len(every[b"entries"]) == 3
    default = plain(r.call("XINFO", "STREAM", "s", "full", "count", "-1"))  # negative: 10
    default = default if isinstance(default, dict) else dict(zip(default[::2], default[1::2], strict=True))
    assert len(default[b"entries"]) == 3


def test_xinfo_groups_lag_and_entries_read(r2):
    for sid in ("1-1", "2-1", "3-1"):
        r2.call("XADD", "s", sid, "f", "v")
    r2.call("XGROUP", "CREATE", "s", "at_end", "$")
    r2.call("XGROUP", "CREATE", "s", "at_start", "0")
    r2.call("XGROUP", "CREATE", "s", "in_middle", "2-1")
    r2.call("XGROUP", "CREATE", "s", "counted", "1-1", "ENTRIESREAD", "1")

    def lags():
        return {name: (g[b"entries-read"], g[b"lag"]) for name, g in groups(r2).items()}

    assert lags() == {b"at_end": (None, 0), b"at_start": (None, 3), b"in_middle": (None, None),
                      b"counted": (1, 2)}
    r2.call("XREADGROUP", "GROUP", "at_start", "c", "COUNT", "1", "STREAMS", "s", ">")
    r2.call("XREADGROUP", "GROUP", "in_middle", "c", "STREAMS", "s", ">")
    assert lags()[b"at_start"] == (1, 2) and lags()[b"in_middle"] == (3, 0)
    r2.call("XDEL", "s", "2-1")  # a tombstone ahead makes the lag unknowable
    assert lags()[b"at_start"] == (1, None) and lags()[b"counted"] == (1, None)
    r2.call("XREADGROUP", "GROUP", "at_start", "c", "STREAMS", "s", ">")
    assert lags()[b"at_start"] == (3, 0)


def test_xinfo_lag_after_trimming(r2):
    for sid in ("1-1", "2-1", "3-1", "4-1", "5-1"):
        r2.call("XADD", "s", sid, "f", "v")
    r2.call("XGROUP", "CREATE", "s", "g", "0", "ENTRIESREAD", "0")
    r2.call("XTRIM", "s", "MAXLEN", "2")
    assert (groups(r2)[b"g"][b"entries-read"], groups(r2)[b"g"][b"lag"]) == (0, 5)
    r2.call("XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s", ">")
    assert (groups(r2)[b"g"][b"entries-read"], groups(r2)[b"g"][b"lag"]) == (4, 1)


def test_xinfo_consumers(r, proto):
    r.call("XADD", "s", "1-1", "f", "v")
    r.call("XGROUP", "CREATE", "s", "g", "0")
    r.call("XGROUP", "CREATECONSUMER", "s", "g", "zed")
    r.call("XREADGROUP", "GROUP", "g", "amy", "STREAMS", "s", ">")
    reply = r.call("XINFO", "CONSUMERS", "s", "g")
    assert reply[0] == "*" and [item[0] for item in reply[1]] == ["%" if proto == 3 else "*"] * 2
    amy, zed = plain_maps(plain(reply))
    assert list(amy) == [b"name", b"pending", b"idle", b"inactive"]
    assert (amy[b"name"], amy[b"pending"], zed[b"name"], zed[b"pending"], zed[b"inactive"]) == (b"amy", 1, b"zed", 0, -1)
    assert 0 <= amy[b"idle"] < 1000 and 0 <= amy[b"inactive"] < 1000


@pytest.mark.parametrize(
    "args,error",
    [
        (["STREAM", "nokey"], b"ERR no such key"), (["STREAM", "nokey", "FOO"], b"ERR no such key"),
        (["GROUPS", "nokey"], b"ERR no such key"), (["CONSUMERS", "nokey", "g"], b"ERR no such key"),
        (["CONSUMERS", "s", "nog"], b"NOGROUP No such consumer group 'nog' for key name 's'"),
        (["STREAM", "str"], WRONGTYPE[1]), (["GROUPS", "str"], WRONGTYPE[1]),
        (["STREAM", "s", "FULL", "X"],
         b"ERR unknown subcommand or wrong number of arguments for 'STREAM'. Try XINFO HELP."),
        (["stream", "s", "FOO"],
         b"ERR unknown subcommand or wrong number of arguments for 'stream'. Try XINFO HELP."),
        (["STREAM", "s", "FULL", "COUNT"],
         b"ERR unknown subcommand or wrong number of arguments for 'STREAM'. Try XINFO HELP."),
        (["STREAM", "s", "FULL", "COUNT", "1", "X"],
         b"ERR unknown subcommand or wrong number of arguments for 'STREAM'. Try XINFO HELP."),
        (["STREAM", "s", "FULL", "COUNT", "x"], b"ERR value is not an integer or out of range"),
        (["CONSUMERS", "s", "g", "x"], b"ERR wrong number of arguments for 'xinfo|consumers' command"),
        (["GROUPS", "s", "x"], b"ERR wrong number of arguments for 'xinfo|groups' command"),
        (["STREAM"], b"ERR wrong number of arguments for 'xinfo|stream' command"),
        (["HELP", "x"], b"ERR wrong number of arguments for 'xinfo|help' command"),
        (["FOO", "s"], b"ERR unknown subcommand 'FOO'. Try XINFO HELP."),
    ],
)
def test_xinfo_errors(r2, args, error):
    r2.call("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    r2.call("SET", "str", "x")
    assert r2.call("XINFO", *args) == ("-", error)


# --- the stream value in the keyspace ---------------------------------------------------------


def test_empty_stream_is_kept(r2):
    r2.call("XADD", "s", "1-1", "f", "v")
    r2.call("XDEL", "s", "1-1")
    assert r2.call("EXISTS", "s") == (":", 1)
    assert r2.call("TYPE", "s") == ("+", b"stream")
    assert r2.call("XLEN", "s") == (":", 0)
    assert r2.call("SCAN", "0", "TYPE", "stream") == ("*", [("$", b"0"), ("*", [("$", b"s")])])


def test_copy_is_deep(r2):
    r2.call("XADD", "s", "1-1", "f", "v")
    r2.call("XGROUP", "CREATE", "s", "g", "0")
    r2.call("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    assert r2.call("COPY", "s", "t") == (":", 1)
    r2.call("XACK", "s", "g", "1-1")
    r2.call("XADD", "s", "2-1", "f", "v")
    assert plain(r2.call("XPENDING", "t", "g"))[:3] == [1, b"1-1", b"1-1"]
    assert r2.call("XLEN", "t") == (":", 1)
    assert plain(r2.call("XINFO", "CONSUMERS", "t", "g"))[0][1] == b"c"


def test_watch_sees_entry_changes_only(target):
    """XADD/XDEL/XTRIM dirty a WATCH; group-side commands do not (as in Valkey)."""
    a, b = target.raw(), target.raw()
    try:
        def touches(*command):
            a.call("WATCH", "s")
            b.call(*command)
            a.call("MULTI")
            a.call("PING")
            return a.call("EXEC") == ("*", None)

        b.call("XADD", "s", "1-1", "f", "v")
        assert touches("XGROUP", "CREATE", "s", "g", "0") is False
        assert touches("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">") is False
        assert touches("XCLAIM", "s", "g", "d", "0", "1-1") is False
        assert touches("XAUTOCLAIM", "s", "g", "c", "0", "0") is False
        assert touches("XACK", "s", "g", "1-1") is False
        assert touches("XGROUP", "SETID", "s", "g", "$") is False
        assert touches("XGROUP", "CREATECONSUMER", "s", "g", "e") is False
        assert touches("XGROUP", "DELCONSUMER", "s", "g", "e") is False
        assert touches("XSETID", "s", "5-5") is False
        assert touches("XGROUP", "DESTROY", "s", "g") is False
        assert touches("XDEL", "s", "9-9") is False
        assert touches("XTRIM", "s", "MAXLEN", "5") is False
        assert touches("XADD", "s", "*", "f", "v") is True
        assert touches("XDEL", "s", "1-1") is True
        assert touches("XTRIM", "s", "MAXLEN", "0") is True
        assert touches("XGROUP", "CREATE", "new", "g", "$", "MKSTREAM") is False
        a.call("WATCH", "new2")
        b.call("XGROUP", "CREATE", "new2", "g", "$", "MKSTREAM")
        a.call("MULTI")
        assert a.call("EXEC") == ("*", None)
    finally:
        a.close()
        b.close()


def test_keyspace_events(target):
    sub, r = target.raw(), target.raw()
    try:
        r.call("CONFIG", "SET", "notify-keyspace-events", "Et")
        sub.call("PSUBSCRIBE", "__keyevent@0__:*")
        commands = [
            ("XADD", "s", "1-1", "f", "v"), ("XADD", "s", "MAXLEN", "1", "2-1", "f", "v"),
            ("XGROUP", "CREATE", "s", "g", "0"), ("XGROUP", "CREATECONSUMER", "s", "g", "c"),
            ("XREADGROUP", "GROUP", "g", "d", "STREAMS", "s", ">"), ("XCLAIM", "s", "g", "e", "0", "2-1"),
            ("XGROUP", "SETID", "s", "g", "0"), ("XGROUP", "DELCONSUMER", "s", "g", "c"),
            ("XDEL", "s", "2-1"), ("XDEL", "s", "2-1"), ("XSETID", "s", "3-1"), ("XADD", "s", "4-1", "f", "v"),
            ("XTRIM", "s", "MAXLEN", "0"), ("XTRIM", "s", "MAXLEN", "0"), ("XGROUP", "DESTROY", "s", "g"),
            ("XGROUP", "CREATE", "m", "g", "$", "MKSTREAM"),
        ]
        for command in commands:
            r.call(*command)
        r.call("PUBLISH", "__keyevent@0__:end", "x")
        events = []
        while True:
            message = plain(sub.read())
            if message[2] == b"__keyevent@0__:end":
                break
            events.append(message[2].split(b":", 1)[1].decode())
        assert events == [
            "xadd", "xadd", "xtrim", "xgroup-create", "xgroup-createconsumer", "xgroup-createconsumer",
            "xgroup-createconsumer", "xgroup-setid", "xgroup-delconsumer", "xdel", "xsetid", "xadd",
            "xtrim", "xgroup-destroy", "xgroup-create",
        ]
    finally:
        sub.close()
        r.close()


def test_command_metadata(r2):
    xadd = plain(r2.call("COMMAND", "INFO", "XADD"))[0]
    assert xadd[:7] == [b"xadd", -5, [b"write", b"denyoom", b"fast"], 1, 1, 1, [b"@write", b"@stream", b"@fast"]]
    xread = plain(r2.call("COMMAND", "INFO", "XREAD"))[0]
    assert xread[:7] == [b"xread", -4, [b"readonly", b"blocking", b"movablekeys"], 0, 0, 0,
                         [b"@read", b"@stream", b"@slow", b"@blocking"]]
    group = plain(r2.call("COMMAND", "INFO", "XREADGROUP"))[0]
    assert group[:7] == [b"xreadgroup", -7, [b"write", b"blocking", b"movablekeys"], 0, 0, 0,
                         [b"@write", b"@stream", b"@slow", b"@blocking"]]
    assert plain(r2.call("COMMAND", "GETKEYS", "XREAD", "COUNT", "2", "STREAMS", "a", "b", "0", "0")) == [b"a", b"b"]
    assert plain(r2.call("COMMAND", "GETKEYS", "XREADGROUP", "GROUP", "g", "c", "STREAMS", "a", ">")) == [b"a"]
    names = sorted(plain(r2.call("COMMAND", "LIST", "FILTERBY", "PATTERN", "x*")))
    assert names == sorted([
        b"xack", b"xadd", b"xautoclaim", b"xclaim", b"xdel", b"xgroup", b"xgroup|create",
        b"xgroup|createconsumer", b"xgroup|delconsumer", b"xgroup|destroy", b"xgroup|help", b"xgroup|setid",
        b"xinfo", b"xinfo|consumers", b"xinfo|groups", b"xinfo|help", b"xinfo|stream", b"xlen", b"xpending",
        b"xrange", b"xread", b"xreadgroup", b"xrevrange", b"xsetid", b"xtrim",
    ])
