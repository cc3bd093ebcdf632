"""SORT and SORT_RO: orders (numeric, ALPHA, BY, nosort, ties), LIMIT, GET, STORE, errors,
ACL refusals, key specs, notifications and scripts, as Valkey 9.1.2 answers them, in RESP2
and RESP3."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from fakekey.commands import sort as sort_module
from fakekey.testing.raw import RawClient

SYNTAX = ("-", b"ERR syntax error")
NOT_INT = ("-", b"ERR value is not an integer or out of range")
NOT_DOUBLE = ("-", b"ERR One or more scores can't be converted into double")
WRONGTYPE = ("-", b"WRONGTYPE Operation against a key holding the wrong kind of value")
BY_DENIED = ("-", b"ERR BY option of SORT denied due to insufficient ACL permissions.")
GET_DENIED = ("-", b"ERR GET option of SORT denied due to insufficient ACL permissions.")
NOPERM_KEY = ("-", b"NOPERM No permissions to access a key")
EMPTY = ("*", [])


def bulks(*items):
    return ("*", [("$", i if isinstance(i, bytes) else i.encode()) for i in items])


def null(proto):
    return ("$", None) if proto == 2 else ("_", None)


def with_nulls(proto, *items):
    """An array of bulks where None stands for the protocol's null."""
    return ("*", [null(proto) if i is None else ("$", i.encode() if isinstance(i, str) else i)
                  for i in items])


def lrange(r, key):
    return r.call("LRANGE", key, "0", "-1")


# --- numeric and ALPHA orders --------------------------------------------------------------


def test_numeric_sort_of_each_type(r):
    r.call("RPUSH", "l", "10", "-2", "3.5", "1e1", "+inf", "-inf", "0")
    assert r.call("SORT", "l") == bulks("-inf", "-2", "0", "3.5", "10", "1e1", "+inf")
    assert r.call("SORT", "l", "DESC") == bulks("+inf", "1e1", "10", "3.5", "0", "-2", "-inf")
    r.call("SADD", "s", "5", "1", "3")  # an intset
    assert r.call("SORT", "s") == bulks("1", "3", "5")
    r.call("SADD", "t", "2.5", "-1", "x1")
    assert r.call("SORT", "t") == NOT_DOUBLE
    r.call("ZADD", "z", "1", "30", "2", "4", "3", "-7")
    assert r.call("SORT_RO", "z") == bulks("-7", "4", "30")
    assert r.call("SORT", "missing") == EMPTY
    assert r.call("SORT_RO", "missing", "ALPHA", "DESC") == EMPTY


def test_equal_scores_are_ordered_by_their_bytes(r):
    r.call("RPUSH", "l", "1.0", "01", "1", "1e0", b"1\x00b", "2", b"1\x00a")
    expected = bulks("01", "1", b"1\x00a", b"1\x00b", "1.0", "1e0", "2")
    assert r.call("SORT", "l") == expected
    assert r.call("SORT", "l", "DESC") == ("*", list(reversed(expected[1])))


def test_integers_written_one_way_sort_by_value_alone(r):
    """Repeated canonical integers (equal score, equal bytes), and one written another
    way (-0) that must then tie with 0 by its bytes."""
    r.call("RPUSH", "l", "5", "3", "5", "-12", "0", "3", "100", "-12")
    assert r.call("SORT", "l") == bulks("-12", "-12", "0", "3", "3", "5", "5", "100")
    assert r.call("SORT", "l", "DESC", "LIMIT", "1", "3") == bulks("5", "5", "3")
    r.call("RPUSH", "l", "-0")
    assert r.call("SORT", "l") == bulks("-12", "-12", "-0", "0", "3", "3", "5", "5", "100")


@pytest.mark.parametrize("element, ok", [
    ("infinity", True), ("-Infinity", True), ("+inf", True), (".5", True), ("5.", True),
    ("+7", True), ("1E2", True), ("1e+2", True), ("4e-324", True), ("0e-5000", True),
    (b"1\x00junk", True), ("-0", True),
    ("0x10", False), ("0X1P3", False), (" 7", False), ("7 ", False), ("", False), ("nan", False),
    ("-nan", False), ("1e", False), (".", False), ("-", False), ("infinit", False),
    ("1e400", False), ("2e-324", False), ("1e-400", False), ("1.7976931348623159e308", False),
    (b"\x00", False), ("1_000", False),
])
def test_which_elements_read_as_numbers(r2, element, ok):
    r2.call("RPUSH", "l", element, "0.5")
    reply = r2.call("SORT", "l")
    assert (reply != NOT_DOUBLE) is ok, reply


def test_a_bad_score_anywhere_fails_even_outside_the_limit(r2):
    r2.call("RPUSH", "l", "1", "2", "x")
    assert r2.call("SORT", "l", "LIMIT", "0", "1") == NOT_DOUBLE
    assert r2.call("SORT", "l", "LIMIT", "0", "0", "STORE", "d") == NOT_DOUBLE
    assert r2.call("EXISTS", "d") == (":", 0)


def test_alpha_collates_up_to_a_nul_and_stores_by_bytes(r):
    r.call("RPUSH", "l", b"1\x00b", b"1\x00a", "1", "B", "a", "")
    # answering, strcoll stops at the NUL: the three "1" tie and keep the list's order
    assert r.call("SORT", "l", "ALPHA") == bulks("", b"1\x00b", b"1\x00a", "1", "B", "a")
    assert r.call("SORT", "l", "ALPHA", "DESC") == bulks("a", "B", b"1\x00b", b"1\x00a", "1", "")
    # storing compares whole strings
    assert r.call("SORT", "l", "ALPHA", "STORE", "d") == (":", 6)
    assert lrange(r, "d") == bulks("", "1", b"1\x00a", b"1\x00b", "B", "a")


# --- BY, GET ---------------------------------------------------------------------------------


@pytest.fixture
def weighted(r):
    """A list, weights for some of its elements, strings and hashes to GET."""
    r.call("RPUSH", "l", "b", "a", "c", "d")
    r.call("MSET", "w_a", "3", "w_b", "1", "w_c", "2", "o_a", "A", "o_b", "B")
    r.call("HSET", "h_a", "f", "30", "g", "x")
    r.call("HSET", "h_b", "f", "10")
    r.call("HSET", "h_c", "f", "20")
    r.call("RPUSH", "w_d", "not a string")
    return r


def test_by_weights_and_hash_fields(weighted, proto):
    r = weighted
    # d has no usable weight (w_d is a list, h_d is missing): it scores 0
    assert r.call("SORT", "l", "BY", "w_*") == bulks("d", "b", "c", "a")
    assert r.call("SORT", "l", "BY", "h_*->f", "DESC") == bulks("a", "c", "b", "d")
    # ALPHA: a missing weight sorts first
    assert r.call("SORT", "l", "BY", "w_*", "ALPHA") == bulks("d", "b", "c", "a")
    assert r.call("SORT", "l", "BY", "h_*->g", "ALPHA") == bulks("b", "c", "d", "a")
    r.call("SET", "w_c", "heavy")
    assert r.call("SORT", "l", "BY", "w_*") == NOT_DOUBLE


def test_get_patterns(weighted, proto):
    r = weighted
    assert r.call("SORT", "l", "BY", "w_*", "GET", "#", "GET", "o_*", "GET", "h_*->g") == with_nulls(
        proto, "d", None, None, "b", "B", None, "c", None, None, "a", "A", "x")
    # no `*`: nothing to look up; `h_*->` (no field) reads the string key "h_a->"
    assert r.call("SORT", "l", "BY", "nosort", "LIMIT", "0", "1", "GET", "nostar", "GET", "h_*->",
                  "GET", "w_*") == with_nulls(proto, None, None, "1")
    # only the first `*` is replaced; `->` before the `*` is part of the key name
    r.call("SET", "x->b_*", "first-star")
    r.call("SET", "x->b", "arrow-in-key")
    assert r.call("SORT", "l", "BY", "nosort", "LIMIT", "0", "1", "GET", "x->*_*",
                  "GET", "x->*") == with_nulls(proto, "first-star", "arrow-in-key")


def test_a_pattern_stops_at_a_nul(r, proto):
    r.call("RPUSH", "l", "1")
    r.call("SET", "w", "W")
    # `#` followed by a NUL is still `#`; a `*` after a NUL is not seen
    assert r.call("SORT", "l", "BY", "nosort", "GET", b"#\x00x", "GET", b"w\x00*") == with_nulls(
        proto, "1", None)
    r.call("RPUSH", "m", "2", "1")
    assert r.call("SORT", "m", "BY", b"n\x00*") == bulks("2", "1")  # a constant: nosort


def test_option_words_end_at_a_nul(r2):
    r2.call("RPUSH", "l", "b", "a")
    assert r2.call("SORT", "l", b"ALPHA\x00x") == bulks("a", "b")
    assert r2.call("SORT", "l", b"LIMIT\x00", "0", "1", "ALPHA") == bulks("a")
    assert r2.call("COMMAND", "GETKEYS", "SORT", "l", b"STORE\x00z", "d") == bulks("l", "d")


def test_expired_hash_field_reads_as_missing(r):
    r.call("RPUSH", "l", "1", "2")
    r.call("HSET", "h_1", "f", "9")
    r.call("HSET", "h_2", "f", "5", "g", "1")
    r.call("HPEXPIRE", "h_2", "1", "FIELDS", "1", "f")
    time.sleep(0.01)
    assert r.call("SORT", "l", "BY", "h_*->f") == bulks("2", "1")
    assert r.call("SORT", "l", "BY", "h_*->f", "ALPHA") == bulks("2", "1")


# --- LIMIT -----------------------------------------------------------------------------------


@pytest.mark.parametrize("offset, count, expected", [
    ("0", "2", ["1", "2"]), ("1", "-1", ["2", "3", "4"]), ("-5", "2", ["1", "2"]),
    ("2", "0", []), ("3", "100", ["4"]), ("4", "1", []), ("9223372036854775807", "1", []),
    ("-9223372036854775808", "-9223372036854775808", ["1", "2", "3", "4"]),
    ("1", "9223372036854775807", ["2", "3", "4"]),
])
def test_limit_is_clamped_to_the_size(r2, offset, count, expected):
    r2.call("RPUSH", "l", "3", "1", "4", "2")
    assert r2.call("SORT", "l", "LIMIT", offset, count) == bulks(*expected)
    assert r2.call("SORT", "l", "LIMIT", offset, count, "STORE", "d") == (":", len(expected))


def test_ties_under_by_and_limit_land_where_pqsort_leaves_them(r2):
    elements = [f"e{i:02d}" for i in range(45)]
    r2.call("RPUSH", "l", *elements)
    for i, e in enumerate(elements):
        if i % 3:
            r2.call("SET", f"w_{e}", "ab"[i % 2])  # two weights and missing ones: many ties
    first = r2.call("SORT", "l", "BY", "w_*", "ALPHA", "LIMIT", "10", "12")
    assert first == bulks("e00", "e36", "e12", "e33", "e15", "e44", "e02", "e04", "e08", "e10",
                          "e14", "e16")
    assert r2.call("SORT", "l", "BY", "w_*", "ALPHA", "DESC", "LIMIT", "0", "5") == bulks(
        "e05", "e41", "e17", "e29", "e19")
    # without LIMIT (or with the whole range) ties keep the list's order
    whole = r2.call("SORT", "l", "BY", "w_*", "ALPHA")
    assert whole[1][:3] == bulks("e00", "e03", "e06")[1]
    assert r2.call("SORT", "l", "BY", "w_*", "ALPHA", "LIMIT", "0", "45") == whole


@pytest.mark.fakekey_only
def test_pqsort_replay_gives_up_on_a_quadratic_input(r2, monkeypatch):
    """Past its comparison budget (an input built against quicksort) the replay stops and
    fakekey answers the stable order's range instead."""
    monkeypatch.setattr(sort_module, "PQSORT_BUDGET", 0)
    elements = [f"e{i:02d}" for i in range(45)]
    r2.call("RPUSH", "l", *elements)
    for i, e in enumerate(elements):
        if i % 3:
            r2.call("SET", f"w_{e}", "ab"[i % 2])  # the data pqsort orders as e00, e36, e12...
    whole = r2.call("SORT", "l", "BY", "w_*", "ALPHA")
    assert r2.call("SORT", "l", "BY", "w_*", "ALPHA", "LIMIT", "10", "12") == ("*", whole[1][10:22])
    assert whole[1][10:12] == bulks("e30", "e33")[1]


# --- BY nosort -------------------------------------------------------------------------------


def test_nosort_keeps_list_and_zset_order(r2):
    r2.call("RPUSH", "l", "c", "a", "b", "d")
    assert r2.call("SORT", "l", "BY", "nosort") == bulks("c", "a", "b", "d")
    assert r2.call("SORT", "l", "BY", "nosort", "DESC", "LIMIT", "1", "2") == bulks("b", "a")
    assert r2.call("SORT", "l", "BY", "nosort", "LIMIT", "-3", "2") == bulks("c", "a")
    r2.call("ZADD", "z", "3", "x", "1", "y", "2", "w", "0", "v")
    assert r2.call("SORT", "z", "BY", "nosort") == bulks("v", "y", "w", "x")
    assert r2.call("SORT", "z", "BY", "nosort", "DESC", "LIMIT", "1", "2") == bulks("w", "y")
    assert r2.call("SORT", "z", "BY", "nosort", "LIMIT", "3", "5") == bulks("x")
    # a later BY with `*` does not undo nosort
    assert r2.call("SORT", "l", "BY", "nosort", "BY", "w_*") == bulks("c", "a", "b", "d")


def test_nosort_on_a_set_answers_its_order_but_stores_it_sorted(r2):
    r2.call("SADD", "s", "c", "a", "b", "10", "2")  # a listpack: insertion order
    assert r2.call("SORT", "s", "BY", "nosort") == bulks("c", "a", "b", "10", "2")
    assert r2.call("SORT", "s", "BY", "nosort", "DESC", "LIMIT", "1", "2") == bulks("a", "b")
    assert r2.call("SORT", "s", "BY", "nosort", "STORE", "d") == (":", 5)
    assert lrange(r2, "d") == bulks("10", "2", "a", "b", "c")
    assert r2.call("SORT", "s", "BY", "nosort", "DESC", "LIMIT", "0", "2", "STORE", "d") == (":", 2)
    assert lrange(r2, "d") == bulks("c", "b")


def test_nosort_on_a_set_in_a_script_is_sorted(r):
    r.call("SADD", "s", "c", "a", "b", "10")
    script = "return redis.call(ARGV[1], KEYS[1], 'BY', 'nosort', unpack(ARGV, 2))"
    assert r.call("EVAL", script, "1", "s", "SORT") == bulks("10", "a", "b", "c")
    assert r.call("EVAL", script, "1", "s", "SORT_RO", "DESC", "LIMIT", "0", "2") == bulks("c", "b")
    r.call("FUNCTION", "LOAD", "REPLACE",
           "#!lua name=sortlib\nserver.register_function('sortset', function(keys, args) "
           "return server.call('SORT', keys[1], 'BY', 'nosort') end)")
    try:
        assert r.call("FCALL", "sortset", "1", "s") == bulks("10", "a", "b", "c")
    finally:
        r.call("FUNCTION", "DELETE", "sortlib")
    # inside MULTI it is not sorted
    r.call("MULTI")
    r.call("SORT", "s", "BY", "nosort")
    assert r.call("EXEC") == ("*", [bulks("c", "a", "b", "10")])


def test_sorted_sets_become_skiplists(r2):
    r2.call("ZADD", "z", "1", "a", "2", "b")
    assert r2.call("OBJECT", "ENCODING", "z") == ("$", b"listpack")
    assert r2.call("SORT", "z", "BADOPTION") == SYNTAX
    assert r2.call("OBJECT", "ENCODING", "z") == ("$", b"listpack")
    assert r2.call("SORT_RO", "z", "ALPHA") == bulks("a", "b")
    assert r2.call("OBJECT", "ENCODING", "z") == ("$", b"skiplist")
    r2.call("ZADD", "y", "1", "a")
    assert r2.call("SORT", "y", "BY", "nosort") == bulks("a")
    assert r2.call("OBJECT", "ENCODING", "y") == ("$", b"skiplist")


# --- STORE -----------------------------------------------------------------------------------


def test_store_replaces_the_destination(r2):
    r2.call("RPUSH", "l", "3", "1", "2")
    r2.call("SET", "d", "old", "EX", "100")
    assert r2.call("SORT", "l", "STORE", "d") == (":", 3)
    assert (r2.call("TYPE", "d"), r2.call("TTL", "d")) == (("+", b"list"), (":", -1))
    assert lrange(r2, "d") == bulks("1", "2", "3")
    # GET: one entry per pattern, a missing one stored as ""
    assert r2.call("SORT", "l", "GET", "#", "GET", "nothing_*", "STORE", "d") == (":", 6)
    assert lrange(r2, "d") == bulks("1", "", "2", "", "3", "")
    # the source itself
    assert r2.call("SORT", "l", "DESC", "STORE", "l") == (":", 3)
    assert lrange(r2, "l") == bulks("3", "2", "1")
    # an empty result deletes the destination
    assert r2.call("SORT", "l", "LIMIT", "0", "0", "STORE", "d") == (":", 0)
    assert r2.call("EXISTS", "d") == (":", 0)
    assert r2.call("SORT", "missing", "STORE", "d") == (":", 0)
    # the last STORE wins
    assert r2.call("SORT", "l", "STORE", "a", "STORE", "b") == (":", 3)
    assert (r2.call("EXISTS", "a"), r2.call("EXISTS", "b")) == ((":", 0), (":", 1))


def test_stored_list_encoding_follows_the_size_limits(r2):
    r2.call("RPUSH", "l", "3", "1", "2")
    try:
        r2.call("CONFIG", "SET", "list-max-listpack-size", "2")
        assert r2.call("SORT", "l", "STORE", "big") == (":", 3)
        assert r2.call("OBJECT", "ENCODING", "big") == ("$", b"quicklist")
    finally:
        r2.call("CONFIG", "SET", "list-max-listpack-size", "-2")
    assert r2.call("SORT", "l", "STORE", "small") == (":", 3)
    assert r2.call("OBJECT", "ENCODING", "small") == ("$", b"listpack")


def test_store_counts_every_element_as_a_change(r2):
    def dirty():
        text = r2.call("INFO", "persistence")[1].decode()
        return int(text.split("rdb_changes_since_last_save:")[1].split("\r\n")[0])

    r2.call("RPUSH", "l", "3", "1", "2")
    before = dirty()
    r2.call("SORT", "l", "GET", "#", "GET", "#", "STORE", "d")
    assert dirty() - before == 6
    before = dirty()
    r2.call("SORT", "missing", "STORE", "d")  # deletes d: one change
    assert dirty() - before == 1
    before = dirty()
    r2.call("SORT", "missing", "STORE", "d")
    r2.call("SORT", "l")
    assert dirty() == before


def test_store_touches_watchers_and_wakes_blocked_pops(target, r2):
    r2.call("RPUSH", "l", "b", "a")
    watcher = target.raw(2)
    try:
        watcher.call("WATCH", "d")
        r2.call("SORT", "l", "ALPHA", "STORE", "d")
        watcher.call("MULTI")
        watcher.call("GET", "x")
        assert watcher.call("EXEC") == ("*", None)
        r2.call("DEL", "d")
        watcher.send("BLPOP", "d", "5")
        time.sleep(0.05)
        r2.call("SORT", "l", "ALPHA", "STORE", "d")
        assert watcher.read() == bulks("d", "a")
        assert lrange(r2, "d") == bulks("b")
    finally:
        watcher.close()


def collect_events(target, commands):
    """(event, key) pairs of keyevent notifications (all classes) for `commands`."""
    actor, listener = target.raw(2), target.raw(2)
    try:
        actor.call("CONFIG", "SET", "notify-keyspace-events", "EA")
        listener.call("PSUBSCRIBE", "__keyevent@0__:*")
        for command in commands:
            actor.call(*command)
        actor.call("SET", "zzsentinel", "1")
        events = []
        while True:
            _, (_, _, (_, channel), (_, key)) = listener.read()
            if key == b"zzsentinel":
                return events
            events.append((channel.split(b":", 1)[1].decode(), key.decode()))
    finally:
        actor.call("CONFIG", "SET", "notify-keyspace-events", "")
        actor.close()
        listener.close()


def test_store_notifications(target):
    events = collect_events(target, [
        ("RPUSH", "l", "2", "1"), ("SORT", "l", "STORE", "d"), ("SORT", "l", "STORE", "d"),
        ("SORT", "l", "LIMIT", "0", "0", "STORE", "d"), ("SORT", "l", "LIMIT", "0", "0", "STORE", "d"),
        ("SORT", "l", "STORE", "x", "BADOPTION"), ("SORT", "l"),
    ])
    assert events == [("rpush", "l"), ("sortstore", "d"), ("sortstore", "d"), ("del", "d")]


# --- errors ----------------------------------------------------------------------------------


@pytest.mark.parametrize("args, error", [
    (("LIMIT", "1"), SYNTAX), (("LIMIT", "a", "1"), NOT_INT), (("LIMIT", "1", "1.5"), NOT_INT),
    (("LIMIT", "1", "99999999999999999999"), NOT_INT), (("FOO",), SYNTAX), (("STORE",), SYNTAX),
    (("BY",), SYNTAX), (("GET",), SYNTAX), (("ALPHA", "DESC", "ASC", "BY"), SYNTAX),
    (("LIMIT", "x", "1", "FOO"), NOT_INT), (("FOO", "LIMIT", "x", "1"), SYNTAX),
])
def test_option_errors(r2, args, error):
    r2.call("SET", "s", "not a list")
    assert r2.call("SORT", "l", *args) == error
    assert r2.call("SORT", "s", *args) == error  # the options are read before the type
    assert r2.call("SORT_RO", "l", *args) == error


def test_sort_ro_has_no_store(r2):
    r2.call("RPUSH", "l", "1")
    assert r2.call("SORT_RO", "l", "STORE", "d") == SYNTAX
    assert r2.call("SORT_RO", "l", "LIMIT", "0", "1", "GET", "#") == bulks("1")


def test_wrong_types(r2):
    r2.call("SET", "s", "x")
    r2.call("HSET", "h", "f", "v")
    r2.call("XADD", "x", "1-1", "f", "v")
    for key in ("s", "h", "x"):
        assert r2.call("SORT", key) == WRONGTYPE
        assert r2.call("SORT_RO", key, "ALPHA") == WRONGTYPE
        assert r2.call("SORT", key, "STORE", "d") == WRONGTYPE
    assert r2.call("EXISTS", "d") == (":", 0)


# --- ACL -------------------------------------------------------------------------------------


@pytest.fixture
def acl_users(target) -> Iterator[None]:
    with RawClient(target.host, target.port) as admin:
        admin.call("RPUSH", "k", "2", "1")
        admin.call("SET", "w_1", "5")
        for name, *rules in [
            ("keys_only", "~k*", "~d*"), ("read_all", "%R~*"), ("write_all", "%W~*", "~k*"),
            ("read_all_sel", "~k*", "(+sort %R~*)"), ("read_write_d", "%R~*", "%W~d*"),
            ("ro_sel", "~k*", "(+sort_ro ~*)"),
        ]:
            admin.call("ACL", "SETUSER", name, "on", "nopass", "+@all", *rules)
    yield
    with RawClient(target.host, target.port) as admin:
        admin.call("ACL", "DELUSER", "keys_only", "read_all", "write_all", "read_all_sel",
                   "read_write_d", "ro_sel")


ACL_CASES = {
    # user: replies to BY w_*, GET #, BY nosort GET # STORE d, SORT_RO BY w_*, GET # foo
    "keys_only": (BY_DENIED, GET_DENIED, GET_DENIED, BY_DENIED, GET_DENIED),
    "read_all": (bulks("2", "1"), bulks("1", "2"), NOPERM_KEY, bulks("2", "1"), SYNTAX),
    "write_all": (BY_DENIED, GET_DENIED, GET_DENIED, BY_DENIED, GET_DENIED),
    "read_all_sel": (bulks("2", "1"), bulks("1", "2"), NOPERM_KEY, BY_DENIED, SYNTAX),
    "read_write_d": (bulks("2", "1"), bulks("1", "2"), (":", 2), bulks("2", "1"), SYNTAX),
    "ro_sel": (BY_DENIED, GET_DENIED, NOPERM_KEY, bulks("2", "1"), GET_DENIED),
}


@pytest.mark.parametrize("user", list(ACL_CASES))
def test_by_and_get_need_read_access_to_every_key(target, acl_users, user):
    with RawClient(target.host, target.port) as c:
        assert c.call("AUTH", user, "x") == ("+", b"OK")
        assert c.call("SORT", "k") == bulks("1", "2")
        assert c.call("SORT", "k", "BY", "nosort") == bulks("2", "1")
        replies = (
            c.call("SORT", "k", "BY", "w_*"), c.call("SORT", "k", "GET", "#"),
            c.call("SORT", "k", "BY", "nosort", "GET", "#", "STORE", "d"),
            c.call("SORT_RO", "k", "BY", "w_*"), c.call("SORT", "k", "GET", "#", "FOO"),
        )
        assert replies == ACL_CASES[user]
        # a script runs SORT as its caller's user
        script = "return redis.pcall('SORT_RO', KEYS[1], 'BY', 'w_*')"
        assert c.call("EVAL_RO", script, "1", "k") == ACL_CASES[user][3]


# --- introspection ---------------------------------------------------------------------------


def test_command_info_and_keys(r2):
    info = r2.call("COMMAND", "INFO", "SORT", "SORT_RO")[1]
    sort, sort_ro = ([v for _, v in entry[1][:7]] for entry in info)
    assert sort[:6] == [b"sort", -2, [("+", b"write"), ("+", b"denyoom"), ("+", b"movablekeys")], 1, 1, 1]
    assert sort_ro[:6] == [b"sort_ro", -2, [("+", b"readonly"), ("+", b"movablekeys")], 1, 1, 1]
    assert [c for _, c in sort[6]] == [b"@write", b"@set", b"@sortedset", b"@list", b"@slow",
                                       b"@dangerous"]
    assert [c for _, c in sort_ro[6]] == [b"@read", b"@set", b"@sortedset", b"@list", b"@slow",
                                          b"@dangerous"]
    specs = info[0][1][8][1]
    assert len(specs) == 3 and len(info[1][1][8][1]) == 2
    unknown = ("*", [("$", b"type"), ("$", b"unknown"), ("$", b"spec"), ("*", [])])
    store_spec = dict(zip(specs[2][1][::2], specs[2][1][1::2], strict=True))
    assert store_spec[("$", b"flags")] == ("*", [("+", b"OW"), ("+", b"update")])
    assert store_spec[("$", b"begin_search")] == unknown
    assert store_spec[("$", b"find_keys")] == unknown


@pytest.mark.parametrize("args, keys", [
    (("SORT", "k"), ["k"]),
    (("SORT", "k", "STORE", "d"), ["k", "d"]),
    (("SORT", "k", "STORE", "d", "STORE", "e"), ["k", "e"]),
    (("SORT", "k", "STORE", "store", "x"), ["k", "x"]),  # Valkey 9.1 reads STORE's argument as an option
    (("SORT", "k", "GET", "store", "LIMIT", "1", "2"), ["k"]),
    (("SORT", "k", "LIMIT", "store", "x", "STORE", "y"), ["k", "y"]),
    (("SORT", "k", "STORE"), ["k"]),
    (("SORT_RO", "k", "STORE", "d"), ["k"]),
])
def test_getkeys(r2, args, keys):
    assert r2.call("COMMAND", "GETKEYS", *args) == bulks(*keys)


def test_getkeysandflags(r):
    reply = r.call("COMMAND", "GETKEYSANDFLAGS", "SORT", "k", "BY", "w_*", "STORE", "d")
    kind = "*" if r.call("HELLO")[0] == "*" else "~"
    assert reply == ("*", [
        ("*", [("$", b"k"), (kind, [("+", b"RO"), ("+", b"access")])]),
        ("*", [("$", b"d"), (kind, [("+", b"OW"), ("+", b"update")])]),
    ])


# --- hostile input ---------------------------------------------------------------------------


def test_big_limits_and_long_patterns_answer_at_once(r2):
    r2.call("RPUSH", "l", *[str(i) for i in range(2000)])
    start = time.perf_counter()
    assert r2.call("SORT", "l", "LIMIT", "9223372036854775807", "9223372036854775807") == EMPTY
    reply = r2.call("SORT", "l", "DESC", "LIMIT", "0", "9223372036854775807", "STORE", "d")
    assert reply == (":", 2000)
    pattern = "p" * 20_000 + "*" + "->" + "f" * 20_000
    reply = r2.call("SORT", "l", "BY", pattern, "LIMIT", "0", "2", "GET", pattern)
    assert reply == ("*", [("$", None)] * 2)
    assert r2.call("SORT", "l", "BY", "w_*", "ALPHA", "LIMIT", "5", "3") == bulks("5", "6", "7")
    assert time.perf_counter() - start < 5
