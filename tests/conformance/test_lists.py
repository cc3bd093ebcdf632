"""Lists: every command, its options and errors, in RESP2 and RESP3."""

import pytest

WRONGTYPE = ("-", b"WRONGTYPE Operation against a key holding the wrong kind of value")
NOT_INT = ("-", b"ERR value is not an integer or out of range")
SYNTAX = ("-", b"ERR syntax error")


def bulks(*items):
    return ("*", [("$", i) for i in items])


def null(proto):
    return ("$", None) if proto == 2 else ("_", None)


def null_array(proto):
    return ("*", None) if proto == 2 else ("_", None)


def test_push_and_range(r):
    assert r.call("LPUSH", "l", "a", "b") == (":", 2)
    assert r.call("RPUSH", "l", "c", "d") == (":", 4)
    assert r.call("LRANGE", "l", "0", "-1") == bulks(b"b", b"a", b"c", b"d")
    assert r.call("LLEN", "l") == (":", 4)
    assert r.call("LLEN", "nolist") == (":", 0)


@pytest.mark.parametrize(
    "start,end,expected",
    [
        ("0", "0", [b"a"]), ("-2", "-1", [b"d", b"e"]), ("-100", "1", [b"a", b"b"]),
        ("3", "100", [b"d", b"e"]), ("4", "2", []), ("5", "10", []), ("-1", "-2", []),
        ("1", "-100", []),
    ],
)
def test_lrange_index_rules(r2, start, end, expected):
    r2.call("RPUSH", "l", "a", "b", "c", "d", "e")
    assert r2.call("LRANGE", "l", start, end) == bulks(*expected)


def test_pushx_only_existing(r):
    assert r.call("LPUSHX", "l", "a") == (":", 0)
    assert r.call("RPUSHX", "l", "a") == (":", 0)
    assert r.call("EXISTS", "l") == (":", 0)
    r.call("RPUSH", "l", "x")
    assert r.call("LPUSHX", "l", "a", "b") == (":", 3)
    assert r.call("RPUSHX", "l", "z") == (":", 4)
    assert r.call("LRANGE", "l", "0", "-1") == bulks(b"b", b"a", b"x", b"z")


def test_pop_single_and_count(r, proto):
    r.call("RPUSH", "l", "a", "b", "c", "d")
    assert r.call("LPOP", "l") == ("$", b"a")
    assert r.call("RPOP", "l") == ("$", b"d")
    assert r.call("LPOP", "l", "0") == ("*", [])
    assert r.call("RPOP", "l", "5") == bulks(b"c", b"b")
    assert r.call("EXISTS", "l") == (":", 0)
    assert r.call("LPOP", "l") == null(proto)
    assert r.call("LPOP", "l", "2") == null_array(proto)
    assert r.call("LPOP", "l", "0") == null_array(proto)


def test_pop_count_errors(r2):
    r2.call("RPUSH", "l", "a")
    assert r2.call("LPOP", "l", "-1") == ("-", b"ERR value is out of range, must be positive")
    assert r2.call("LPOP", "l", "x") == ("-", b"ERR value is out of range, must be positive")
    assert r2.call("LPOP", "l", "1", "2") == ("-", b"ERR wrong number of arguments for 'lpop' command")


def test_lindex_lset(r, proto):
    r.call("RPUSH", "l", "a", "b", "c")
    assert r.call("LINDEX", "l", "0") == ("$", b"a")
    assert r.call("LINDEX", "l", "-1") == ("$", b"c")
    assert r.call("LINDEX", "l", "3") == null(proto)
    assert r.call("LINDEX", "nolist", "0") == null(proto)
    assert r.call("LINDEX", "l", "x") == NOT_INT
    assert r.call("LSET", "l", "-1", "z") == ("+", b"OK")
    assert r.call("LSET", "l", "1", "y") == ("+", b"OK")
    assert r.call("LRANGE", "l", "0", "-1") == bulks(b"a", b"y", b"z")
    assert r.call("LSET", "l", "3", "q") == ("-", b"ERR index out of range")
    assert r.call("LSET", "nolist", "0", "q") == ("-", b"ERR no such key")
    # the key is looked up before the index is parsed
    assert r.call("LSET", "nolist", "x", "q") == ("-", b"ERR no such key")
    assert r.call("LINDEX", "nolist", "x") == null(proto)


def test_linsert(r2):
    r2.call("RPUSH", "l", "a", "c")
    assert r2.call("LINSERT", "l", "BEFORE", "c", "b") == (":", 3)
    assert r2.call("LINSERT", "l", "after", "c", "d") == (":", 4)
    assert r2.call("LINSERT", "l", "before", "zz", "x") == (":", -1)
    assert r2.call("LINSERT", "nolist", "before", "a", "x") == (":", 0)
    assert r2.call("LINSERT", "l", "middle", "a", "x") == SYNTAX
    assert r2.call("LRANGE", "l", "0", "-1") == bulks(b"a", b"b", b"c", b"d")


@pytest.mark.parametrize(
    "count,removed,rest",
    [
        ("2", 2, [b"b", b"a", b"c", b"a"]),
        ("-2", 2, [b"a", b"a", b"b", b"c"]),
        ("0", 4, [b"b", b"c"]),
        ("10", 4, [b"b", b"c"]),
    ],
)
def test_lrem(r2, count, removed, rest):
    r2.call("RPUSH", "l", "a", "a", "b", "a", "c", "a")
    assert r2.call("LREM", "l", count, "a") == (":", removed)
    assert r2.call("LRANGE", "l", "0", "-1") == bulks(*rest)


def test_lrem_empties_and_errors(r2):
    r2.call("RPUSH", "l", "a", "a")
    assert r2.call("LREM", "l", "0", "a") == (":", 2)
    assert r2.call("EXISTS", "l") == (":", 0)
    assert r2.call("LREM", "l", "0", "a") == (":", 0)
    assert r2.call("LREM", "l", "x", "a") == NOT_INT


@pytest.mark.parametrize(
    "start,end,rest",
    [
        ("1", "-2", [b"b", b"c", b"d"]), ("0", "0", [b"a"]), ("-2", "-1", [b"d", b"e"]),
        ("3", "100", [b"d", b"e"]), ("-100", "1", [b"a", b"b"]),
    ],
)
def test_ltrim(r2, start, end, rest):
    r2.call("RPUSH", "l", "a", "b", "c", "d", "e")
    assert r2.call("LTRIM", "l", start, end) == ("+", b"OK")
    assert r2.call("LRANGE", "l", "0", "-1") == bulks(*rest)


def test_ltrim_to_nothing_deletes(r2):
    r2.call("RPUSH", "l", "a", "b")
    assert r2.call("LTRIM", "l", "5", "10") == ("+", b"OK")
    assert r2.call("EXISTS", "l") == (":", 0)
    assert r2.call("LTRIM", "nolist", "0", "1") == ("+", b"OK")
    assert r2.call("LTRIM", "l", "a", "b") == NOT_INT


def test_lpos(r, proto):
    r.call("RPUSH", "l", "a", "b", "c", "a", "b", "c", "a")
    assert r.call("LPOS", "l", "a") == (":", 0)
    assert r.call("LPOS", "l", "c") == (":", 2)
    assert r.call("LPOS", "l", "a", "RANK", "2") == (":", 3)
    assert r.call("LPOS", "l", "a", "RANK", "-1") == (":", 6)
    assert r.call("LPOS", "l", "a", "RANK", "-2") == (":", 3)
    assert r.call("LPOS", "l", "a", "COUNT", "0") == ("*", [(":", 0), (":", 3), (":", 6)])
    assert r.call("LPOS", "l", "a", "COUNT", "2") == ("*", [(":", 0), (":", 3)])
    assert r.call("LPOS", "l", "a", "COUNT", "0", "RANK", "-1") == ("*", [(":", 6), (":", 3), (":", 0)])
    assert r.call("LPOS", "l", "a", "COUNT", "0", "MAXLEN", "4") == ("*", [(":", 0), (":", 3)])
    assert r.call("LPOS", "l", "c", "MAXLEN", "2") == null(proto)
    assert r.call("LPOS", "l", "z") == null(proto)
    assert r.call("LPOS", "l", "z", "COUNT", "2") == ("*", [])
    assert r.call("LPOS", "nolist", "z") == null(proto)
    assert r.call("LPOS", "nolist", "z", "COUNT", "0") == ("*", [])


def test_lpos_errors(r2):
    r2.call("RPUSH", "l", "a")
    assert r2.call("LPOS", "l", "a", "RANK", "0") == (
        "-",
        b"ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... "
        b"or use negative to start from the end of the list",
    )
    assert r2.call("LPOS", "l", "a", "RANK", "-9223372036854775808") == (
        "-",
        b"ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807",
    )
    assert r2.call("LPOS", "l", "a", "COUNT", "-1") == ("-", b"ERR COUNT can't be negative")
    assert r2.call("LPOS", "l", "a", "MAXLEN", "-1") == ("-", b"ERR MAXLEN can't be negative")
    assert r2.call("LPOS", "l", "a", "FOO", "1") == SYNTAX
    assert r2.call("LPOS", "l", "a", "RANK") == SYNTAX
    assert r2.call("LPOS", "l", "a", "RANK", "x") == NOT_INT
    assert r2.call("LPOS", "l", "a", "COUNT", "x") == ("-", b"ERR COUNT can't be negative")
    assert r2.call("LPOS", "l", "a", "MAXLEN", "x") == ("-", b"ERR MAXLEN can't be negative")
    assert r2.call("LPOS", "l", "a", "MAXLEN", "99999999999999999999") == ("-", b"ERR MAXLEN can't be negative")


def test_lmove_and_rpoplpush(r, proto):
    r.call("RPUSH", "src", "a", "b", "c")
    assert r.call("LMOVE", "src", "dst", "LEFT", "RIGHT") == ("$", b"a")
    assert r.call("LMOVE", "src", "dst", "right", "left") == ("$", b"c")
    assert r.call("RPOPLPUSH", "src", "dst") == ("$", b"b")
    assert r.call("EXISTS", "src") == (":", 0)
    assert r.call("LRANGE", "dst", "0", "-1") == bulks(b"b", b"c", b"a")
    assert r.call("LMOVE", "src", "dst", "LEFT", "LEFT") == null(proto)
    assert r.call("RPOPLPUSH", "nolist", "dst") == null(proto)
    assert r.call("LMOVE", "dst", "dst", "LEFT", "RIGHT") == ("$", b"b")
    assert r.call("LRANGE", "dst", "0", "-1") == bulks(b"c", b"a", b"b")
    assert r.call("LMOVE", "dst", "dst", "up", "left") == SYNTAX


def test_lmove_single_element_onto_itself(r2):
    r2.call("RPUSH", "one", "x")
    assert r2.call("LMOVE", "one", "one", "LEFT", "RIGHT") == ("$", b"x")
    assert r2.call("LRANGE", "one", "0", "-1") == bulks(b"x")


def test_lmove_wrongtype_destination_only_checked_with_data(r2):
    r2.call("SET", "str", "v")
    assert r2.call("LMOVE", "nolist", "str", "LEFT", "LEFT") == ("$", None)
    r2.call("RPUSH", "src", "a")
    assert r2.call("LMOVE", "src", "str", "LEFT", "LEFT") == WRONGTYPE
    assert r2.call("LRANGE", "src", "0", "-1") == bulks(b"a")


def test_lmpop(r, proto):
    r.call("RPUSH", "l2", "a", "b", "c")
    assert r.call("LMPOP", "2", "l1", "l2", "LEFT") == ("*", [("$", b"l2"), bulks(b"a")])
    assert r.call("LMPOP", "2", "l1", "l2", "RIGHT", "COUNT", "5") == (
        "*", [("$", b"l2"), bulks(b"c", b"b")])
    assert r.call("LMPOP", "2", "l1", "l2", "LEFT") == null_array(proto)


@pytest.mark.parametrize(
    "args,error",
    [
        (("0", "l", "LEFT"), b"ERR numkeys should be greater than 0"),
        (("-1", "l", "LEFT"), b"ERR numkeys should be greater than 0"),
        (("x", "l", "LEFT"), b"ERR numkeys should be greater than 0"),
        (("1", "l", "MIDDLE"), b"ERR syntax error"),
        (("2", "l", "LEFT"), b"ERR syntax error"),
        (("1", "l", "LEFT", "COUNT", "0"), b"ERR count should be greater than 0"),
        (("1", "l", "LEFT", "COUNT", "2", "COUNT", "3"), b"ERR syntax error"),
        (("1", "l", "LEFT", "COUNT"), b"ERR syntax error"),
        (("5", "l", "LEFT"), b"ERR syntax error"),
    ],
)
def test_lmpop_errors(r2, args, error):
    assert r2.call("LMPOP", *args) == ("-", error)


def test_wrongtype(r2):
    r2.call("SET", "s", "v")
    for args in (
        ("LPUSH", "s", "a"), ("RPUSH", "s", "a"), ("LPUSHX", "s", "a"), ("LPOP", "s"),
        ("RPOP", "s", "2"), ("LLEN", "s"), ("LRANGE", "s", "0", "1"), ("LINDEX", "s", "0"),
        ("LSET", "s", "0", "a"), ("LINSERT", "s", "BEFORE", "a", "b"), ("LREM", "s", "0", "a"),
        ("LTRIM", "s", "0", "1"), ("LPOS", "s", "a"), ("LMOVE", "s", "d", "LEFT", "LEFT"),
        ("LMPOP", "1", "s", "LEFT"), ("BLPOP", "s", "0"), ("BRPOPLPUSH", "s", "d", "0"),
    ):
        assert r2.call(*args) == WRONGTYPE, args


def test_arity(r2):
    for args, name in (
        (("LPUSH", "l"), "lpush"), (("LRANGE", "l", "0"), "lrange"), (("LINSERT", "l", "a", "b"), "linsert"),
        (("BLPOP", "l"), "blpop"), (("LMOVE", "a", "b", "LEFT"), "lmove"), (("LMPOP", "1", "l"), "lmpop"),
    ):
        assert r2.call(*args) == ("-", f"ERR wrong number of arguments for '{name}' command".encode())


def test_object_encoding_small_and_large(r2):
    r2.call("RPUSH", "small", "a", "b")
    assert r2.call("OBJECT", "ENCODING", "small") == ("$", b"listpack")
    r2.call("RPUSH", "big", *(["x" * 100] * 200))
    assert r2.call("OBJECT", "ENCODING", "big") == ("$", b"quicklist")
