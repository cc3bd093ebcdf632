"""Sets: every command, its options and errors, replies pinned to wire types, in RESP2
and RESP3. Orders are pinned where Valkey's is deterministic (intset: ascending; listpack
and small results: insertion order) and compared sorted where it is not (hashtable)."""

from collections import Counter

import pytest

WRONGTYPE = ("-", b"WRONGTYPE Operation against a key holding the wrong kind of value")
NOT_INT = ("-", b"ERR value is not an integer or out of range")
SYNTAX = ("-", b"ERR syntax error")
POSITIVE = ("-", b"ERR value is out of range, must be positive")
INVALID_CURSOR = ("-", b"ERR invalid cursor")


def set_kind(proto):
    """The wire type of a set reply: an array in RESP2, a set in RESP3."""
    return "*" if proto == 2 else "~"


def as_set(proto, *items):
    return (set_kind(proto), [("$", i) for i in items])


def bulks(*items):
    return ("*", [("$", i) for i in items])


def null(proto):
    return ("$", None) if proto == 2 else ("_", None)


def values(reply, kind):
    """The bulk strings of an array/set reply, after checking its wire types."""
    assert reply[0] == kind, reply
    assert all(t == "$" for t, _ in reply[1]), reply
    return [v for _, v in reply[1]]


def encoding(r, key):
    return r.call("OBJECT", "ENCODING", key)[1]


def nums(*ints):
    return [str(i) for i in ints]


@pytest.fixture
def limits(r2):
    """Set the set-max-* thresholds for one test; Valkey's defaults come back after."""

    def configure(intset=512, entries=128, value=64):
        assert r2.call(
            "CONFIG", "SET", "set-max-intset-entries", str(intset),
            "set-max-listpack-entries", str(entries), "set-max-listpack-value", str(value),
        ) == ("+", b"OK")

    yield configure
    configure()


# --- SADD / SREM / SCARD / SISMEMBER / SMISMEMBER / SMEMBERS --------------------------------


def test_sadd_counts_only_new_members(r):
    assert r.call("SADD", "s", "a", "b", "a") == (":", 2)
    assert r.call("SADD", "s", "b", "c") == (":", 1)
    assert r.call("SADD", "s", "a") == (":", 0)
    assert r.call("SCARD", "s") == (":", 3)
    assert r.call("SCARD", "nokey") == (":", 0)
    assert r.call("SADD", "e", "") == (":", 1)
    assert r.call("SISMEMBER", "e", "") == (":", 1)


def test_sadd_of_many_members_to_a_hashtable_counts_each_new_one_once(r):
    members = [f"m{i % 300}" for i in range(400)]  # 300 distinct, 100 repeats
    assert r.call("SADD", "h", *members) == (":", 300)
    assert r.call("OBJECT", "ENCODING", "h")[1] == b"hashtable"
    assert r.call("SADD", "h", "m0", "new", "new", "m299") == (":", 1)
    assert r.call("SCARD", "h") == (":", 301)
    held = sorted(value for _, value in r.call("SMEMBERS", "h")[1])
    assert held == sorted(m.encode() for m in {*members, "new"})
    picks = [value for _, value in r.call("SRANDMEMBER", "h", -50)[1]]
    assert len(picks) == 50 and set(picks) <= set(held)


def test_srem_counts_and_deletes_emptied_set(r):
    r.call("SADD", "s", "a", "b", "c")
    assert r.call("SREM", "s", "a", "zz", "a") == (":", 1)
    assert r.call("SREM", "nokey", "a") == (":", 0)
    assert r.call("SREM", "s", "b", "c", "d") == (":", 2)
    assert r.call("EXISTS", "s") == (":", 0)
    assert r.call("SCARD", "s") == (":", 0)


def test_sismember_and_smismember(r):
    r.call("SADD", "s", "a", "1")
    assert r.call("SISMEMBER", "s", "a") == (":", 1)
    assert r.call("SISMEMBER", "s", "b") == (":", 0)
    assert r.call("SISMEMBER", "nokey", "a") == (":", 0)
    assert r.call("SMISMEMBER", "s", "a", "b", "1", "a") == (
        "*", [(":", 1), (":", 0), (":", 1), (":", 1)]
    )
    assert r.call("SMISMEMBER", "nokey", "a", "b") == ("*", [(":", 0), (":", 0)])


def test_integer_members_match_only_canonical_forms(r):
    r.call("SADD", "ints", "1", "-5")
    r.call("SADD", "strs", "x", "1")
    for key in ("ints", "strs"):
        assert r.call("SISMEMBER", key, "1") == (":", 1)
        assert r.call("SMISMEMBER", key, "01", "+1", "1.0", " 1") == ("*", [(":", 0)] * 4)
    assert r.call("SADD", "ints", "01", "-0") == (":", 2)
    assert r.call("SCARD", "ints") == (":", 4)


def test_smembers_is_a_set_reply(r, proto):
    r.call("SADD", "s", "b", "a")
    assert r.call("SMEMBERS", "s") == as_set(proto, b"b", b"a")
    assert r.call("SMEMBERS", "nokey") == (set_kind(proto), [])


def test_intset_iterates_in_ascending_order(r, proto):
    r.call("SADD", "s", "10", "-3", "7", "0", "9223372036854775807", "-9223372036854775808")
    assert encoding(r, "s") == b"intset"
    assert values(r.call("SMEMBERS", "s"), set_kind(proto)) == [
        b"-9223372036854775808", b"-3", b"0", b"7", b"10", b"9223372036854775807"
    ]


def test_listpack_iterates_in_insertion_order(r, proto):
    r.call("SADD", "s", "x", "5", "3")
    r.call("SADD", "s", "b", "1")
    assert encoding(r, "s") == b"listpack"
    assert values(r.call("SMEMBERS", "s"), set_kind(proto)) == [b"x", b"5", b"3", b"b", b"1"]
    r.call("SREM", "s", "5")
    assert values(r.call("SMEMBERS", "s"), set_kind(proto)) == [b"x", b"3", b"b", b"1"]


def test_intset_becoming_listpack_keeps_ascending_order_then_appends(r, proto):
    r.call("SADD", "s", "9", "1", "5")
    r.call("SADD", "s", "x", "3")
    assert encoding(r, "s") == b"listpack"
    assert values(r.call("SMEMBERS", "s"), set_kind(proto)) == [b"1", b"5", b"9", b"x", b"3"]


def test_hashtable_members(r, proto):
    members = [f"m{i}".encode() for i in range(200)]
    r.call("SADD", "s", *members)
    assert encoding(r, "s") == b"hashtable"
    assert sorted(values(r.call("SMEMBERS", "s"), set_kind(proto))) == sorted(members)


# --- encodings ---------------------------------------------------------------------------


def test_encoding_thresholds_at_defaults(r):
    r.call("SADD", "i512", *nums(*range(512)))
    assert encoding(r, "i512") == b"intset"
    r.call("SADD", "i512", "512")
    assert encoding(r, "i512") == b"hashtable"
    r.call("SADD", "l128", *[f"m{i}" for i in range(128)])
    assert encoding(r, "l128") == b"listpack"
    r.call("SADD", "l128", "m128")
    assert encoding(r, "l128") == b"hashtable"
    r.call("SADD", "v64", "x" * 64)
    assert encoding(r, "v64") == b"listpack"
    r.call("SADD", "v65", "x" * 65)
    assert encoding(r, "v65") == b"hashtable"
    r.call("SADD", "big", "9223372036854775808")  # beyond int64: a string
    assert encoding(r, "big") == b"listpack"
    r.call("SADD", "lead0", "01")
    assert encoding(r, "lead0") == b"listpack"


def test_intset_gaining_a_string(r):
    r.call("SADD", "a", *nums(*range(127)))
    r.call("SADD", "a", "x")
    assert encoding(r, "a") == b"listpack"
    r.call("SADD", "b", *nums(*range(128)))
    r.call("SADD", "b", "x")  # a listpack could not hold 129 entries
    assert encoding(r, "b") == b"hashtable"
    r.call("SADD", "c", "1", "x" * 65)
    assert encoding(r, "c") == b"hashtable"


def test_encoding_follows_the_argument_count(r):
    # Valkey sizes the set for every argument, duplicates included.
    r.call("SADD", "a", *["x"] * 129)
    assert r.call("SCARD", "a") == (":", 1)
    assert encoding(r, "a") == b"hashtable"
    r.call("SADD", "b", "x")
    r.call("SADD", "b", *["y"] * 129)
    assert encoding(r, "b") == b"hashtable"
    r.call("SADD", "c", "1")
    r.call("SADD", "c", *["2"] * 513)
    assert encoding(r, "c") == b"hashtable"
    r.call("SADD", "d", "1", "1", "1")
    assert encoding(r, "d") == b"intset"
    # the first argument alone picks intset vs listpack
    r.call("SADD", "e", "x", "1", "2")
    assert encoding(r, "e") == b"listpack"


def test_encoding_never_shrinks_back(r):
    r.call("SADD", "s", *[f"m{i}" for i in range(130)])
    r.call("SREM", "s", *[f"m{i}" for i in range(128)])
    assert encoding(r, "s") == b"hashtable"
    r.call("SADD", "t", "1", "x")
    r.call("SREM", "t", "x")
    assert encoding(r, "t") == b"listpack"


def test_encoding_thresholds_from_config(r, limits):
    limits(intset=3, entries=4, value=5)
    r.call("SADD", "i", "1", "2", "3")
    assert encoding(r, "i") == b"intset"
    r.call("SADD", "i", "4")  # past the intset limit: straight to hashtable
    assert encoding(r, "i") == b"hashtable"
    r.call("SADD", "l", "a", "b", "c", "d")
    assert encoding(r, "l") == b"listpack"
    r.call("SADD", "l", "e")
    assert encoding(r, "l") == b"hashtable"
    r.call("SADD", "v", "abcde")
    assert encoding(r, "v") == b"listpack"
    r.call("SADD", "v", "abcdef")
    assert encoding(r, "v") == b"hashtable"
    # an intset whose widest number is longer than the listpack value limit
    r.call("SADD", "w", "123456")
    r.call("SADD", "w", "x")
    assert encoding(r, "w") == b"hashtable"
    limits(intset=0)
    r.call("SADD", "z", "1")
    assert encoding(r, "z") == b"listpack"


def test_existing_sets_keep_their_encoding_when_limits_change(r, limits):
    r.call("SADD", "s", "a", "b", "c")
    limits(entries=2)
    assert encoding(r, "s") == b"listpack"
    r.call("SREM", "s", "a")
    assert encoding(r, "s") == b"listpack"
    r.call("SADD", "s", "d")
    assert encoding(r, "s") == b"hashtable"


def test_store_results_encoding(r):
    r.call("SADD", "I", *nums(*range(300)))  # intset
    r.call("SADD", "H", *nums(*range(600)))  # hashtable of integers
    r.call("SADD", "HS", *nums(*range(600)), "x")
    r.call("SADD", "L", *nums(*range(5)), "x")  # listpack
    assert r.call("SINTERSTORE", "d1", "I", "H") == (":", 300)
    assert encoding(r, "d1") == b"intset"
    assert r.call("SINTERSTORE", "d2", "H", "HS") == (":", 600)
    assert encoding(r, "d2") == b"hashtable"
    assert r.call("SINTERSTORE", "d3", "L", "H") == (":", 5)
    assert encoding(r, "d3") == b"intset"  # only integers: back to an intset
    assert r.call("SINTERSTORE", "d4", "L", "HS") == (":", 6)
    assert encoding(r, "d4") == b"listpack"
    assert r.call("SUNIONSTORE", "d5", "H") == (":", 600)
    assert encoding(r, "d5") == b"hashtable"
    assert r.call("SUNIONSTORE", "d6", "L") == (":", 6)
    assert encoding(r, "d6") == b"listpack"
    r.call("SADD", "LI", "x", "9", "1")
    r.call("SREM", "LI", "x")  # a listpack holding only integers
    assert encoding(r, "LI") == b"listpack"
    for cmd, dest in (("SUNIONSTORE", "e1"), ("SDIFFSTORE", "e2"), ("SINTERSTORE", "e3")):
        assert r.call(cmd, dest, "LI") == (":", 2)
        assert encoding(r, dest) == b"intset"


def test_sdiffstore_encoding_follows_valkeys_algorithm(r):
    r.call("SADD", "A", *[f"s{i}" for i in range(200)])
    r.call("SADD", "B", *[f"s{i}" for i in range(150)])
    for k in "CDEFG":
        r.call("SADD", k, "zz")
    # comparing each member of A: only the 50 survivors are added
    assert r.call("SDIFFSTORE", "d1", "A", "B") == (":", 50)
    assert encoding(r, "d1") == b"listpack"
    # copying A then removing the others: the result passed through a hashtable
    assert r.call("SDIFFSTORE", "d2", "A", "B", "C", "D", "E", "F", "G") == (":", 50)
    assert encoding(r, "d2") == b"hashtable"


def test_spop_most_of_a_set_leaves_a_new_set(r, proto):
    r.call("SADD", "h", *[f"m{i}" for i in range(200)])
    assert len(values(r.call("SPOP", "h", "190"), set_kind(proto))) == 190
    assert encoding(r, "h") == b"listpack"
    r.call("SADD", "hi", *nums(*range(600)))
    assert len(values(r.call("SPOP", "hi", "590"), set_kind(proto))) == 590
    assert encoding(r, "hi") == b"listpack"
    r.call("SADD", "h2", *nums(*range(600)))
    assert len(values(r.call("SPOP", "h2", "10"), set_kind(proto))) == 10
    assert encoding(r, "h2") == b"hashtable"
    assert r.call("SCARD", "h2") == (":", 590)
    r.call("SADD", "i", *nums(*range(100)))
    values(r.call("SPOP", "i", "95"), set_kind(proto))
    assert encoding(r, "i") == b"intset"
    assert r.call("SCARD", "i") == (":", 5)
    left = values(r.call("SMEMBERS", "i"), set_kind(proto))
    popped = values(r.call("SPOP", "i", "2"), set_kind(proto))
    assert len(set(popped)) == 2 and set(popped) <= set(left)
    assert sorted(values(r.call("SMEMBERS", "i"), set_kind(proto)) + popped, key=int) == left


# --- SPOP / SRANDMEMBER ----------------------------------------------------------------------


def test_spop_single(r, proto):
    r.call("SADD", "s", "a", "b")
    first = r.call("SPOP", "s")
    assert first[0] == "$" and first[1] in (b"a", b"b")
    second = r.call("SPOP", "s")
    assert {first[1], second[1]} == {b"a", b"b"}
    assert r.call("EXISTS", "s") == (":", 0)
    assert r.call("SPOP", "s") == null(proto)


def test_spop_count(r, proto):
    r.call("SADD", "s", *[f"m{i}" for i in range(20)])
    assert r.call("SPOP", "s", "0") == (set_kind(proto), [])
    popped = values(r.call("SPOP", "s", "3"), set_kind(proto))
    assert len(set(popped)) == 3
    assert r.call("SCARD", "s") == (":", 17)
    assert r.call("SMISMEMBER", "s", *popped) == ("*", [(":", 0)] * 3)
    popped += values(r.call("SPOP", "s", "15"), set_kind(proto))
    assert len(set(popped)) == 18
    rest = values(r.call("SPOP", "s", "100"), set_kind(proto))
    assert sorted(popped + rest) == sorted(f"m{i}".encode() for i in range(20))
    assert r.call("EXISTS", "s") == (":", 0)
    assert r.call("SPOP", "s", "2") == (set_kind(proto), [])
    assert r.call("SPOP", "s", "0") == (set_kind(proto), [])


def test_spop_everything_answers_in_set_order(r, proto):
    r.call("SADD", "i", "5", "3", "9")
    assert r.call("SPOP", "i", "3") == as_set(proto, b"3", b"5", b"9")
    r.call("SADD", "l", "x", "9", "1")
    assert r.call("SPOP", "l", "10") == as_set(proto, b"x", b"9", b"1")


def test_spop_count_errors(r2):
    r2.call("SADD", "s", "a")
    r2.call("SET", "str", "x")
    for bad in ("-1", "x", "1.0", "-0", "9223372036854775808"):
        assert r2.call("SPOP", "s", bad) == POSITIVE
    assert r2.call("SPOP", "str", "-1") == POSITIVE  # the count is checked first
    assert r2.call("SPOP", "str", "0") == WRONGTYPE
    assert r2.call("SPOP", "s", "1", "2") == SYNTAX
    assert r2.call("SPOP", "s", "9223372036854775807") == bulks(b"a")


def test_srandmember_single(r, proto):
    r.call("SADD", "s", "a", "b", "c")
    for _ in range(5):
        kind, value = r.call("SRANDMEMBER", "s")
        assert kind == "$" and value in (b"a", b"b", b"c")
    assert r.call("SCARD", "s") == (":", 3)
    assert r.call("SRANDMEMBER", "nokey") == null(proto)


def test_srandmember_positive_count_is_distinct(r):
    r.call("SADD", "s", *[f"m{i}" for i in range(50)])  # listpack
    r.call("SADD", "h", *[f"m{i}" for i in range(300)])  # hashtable
    r.call("SADD", "i", *nums(*range(40)))  # intset
    for key, size in (("s", 50), ("h", 300), ("i", 40)):
        for count in (1, 2, 10, size - 1):
            got = values(r.call("SRANDMEMBER", key, str(count)), "*")
            assert len(got) == count and len(set(got)) == count
            assert r.call("SMISMEMBER", key, *got) == ("*", [(":", 1)] * count)
    assert r.call("SCARD", "s") == (":", 50)


def test_srandmember_count_beyond_size_answers_the_set_in_order(r):
    r.call("SADD", "i", "5", "1", "3")
    assert r.call("SRANDMEMBER", "i", "3") == bulks(b"1", b"3", b"5")
    assert r.call("SRANDMEMBER", "i", "100") == bulks(b"1", b"3", b"5")
    r.call("SADD", "l", "e", "d", "c", "b", "a")
    assert r.call("SRANDMEMBER", "l", "5") == bulks(b"e", b"d", b"c", b"b", b"a")


def test_srandmember_listpack_sample_keeps_set_order(r):
    order = [b"e", b"d", b"c", b"b", b"a"]
    r.call("SADD", "l", *order)
    for _ in range(5):
        got = values(r.call("SRANDMEMBER", "l", "3"), "*")
        assert got == [m for m in order if m in got]


def test_srandmember_negative_count_may_repeat(r):
    r.call("SADD", "s", "a", "b")
    got = values(r.call("SRANDMEMBER", "s", "-50"), "*")
    assert len(got) == 50
    counts = Counter(got)
    assert set(counts) <= {b"a", b"b"} and max(counts.values()) > 1
    r.call("SADD", "one", "x")
    assert r.call("SRANDMEMBER", "one", "-3") == bulks(b"x", b"x", b"x")
    r.call("SADD", "h", *[f"m{i}" for i in range(200)])
    got = values(r.call("SRANDMEMBER", "h", "-20"), "*")
    assert len(got) == 20 and r.call("SMISMEMBER", "h", *got) == ("*", [(":", 1)] * 20)


def test_srandmember_count_zero_and_missing_key_are_empty_arrays(r):
    r.call("SADD", "s", "a")
    assert r.call("SRANDMEMBER", "s", "0") == ("*", [])
    assert r.call("SRANDMEMBER", "nokey", "3") == ("*", [])
    assert r.call("SRANDMEMBER", "nokey", "-3") == ("*", [])
    assert r.call("SRANDMEMBER", "nokey", "0") == ("*", [])


def test_srandmember_errors(r2):
    r2.call("SADD", "s", "a")
    r2.call("SET", "str", "x")
    assert r2.call("SRANDMEMBER", "s", "x") == NOT_INT
    assert r2.call("SRANDMEMBER", "s", "9223372036854775808") == NOT_INT
    assert r2.call("SRANDMEMBER", "s", "-9223372036854775808") == (
        "-",
        b"ERR value is out of range, value must between -9223372036854775807 and "
        b"9223372036854775807",
    )
    assert r2.call("SRANDMEMBER", "str", "x") == NOT_INT
    assert r2.call("SRANDMEMBER", "str", "0") == WRONGTYPE
    assert r2.call("SRANDMEMBER", "s", "1", "2") == SYNTAX


# --- SMOVE -------------------------------------------------------------------------------------


def test_smove(r):
    r.call("SADD", "src", "a", "b")
    assert r.call("SMOVE", "src", "dst", "zz") == (":", 0)
    assert r.call("EXISTS", "dst") == (":", 0)
    assert r.call("SMOVE", "src", "dst", "a") == (":", 1)
    assert r.call("SMEMBERS", "dst")[1] == [("$", b"a")]
    r.call("SADD", "other", "b")
    assert r.call("SMOVE", "src", "other", "b") == (":", 1)  # already there: moved anyway
    assert r.call("EXISTS", "src") == (":", 0)
    assert r.call("SMEMBERS", "other")[1] == [("$", b"b")]
    assert r.call("SMOVE", "nokey", "other", "b") == (":", 0)


def test_smove_to_the_same_key(r):
    r.call("SADD", "s", "a")
    assert r.call("SMOVE", "s", "s", "a") == (":", 1)
    assert r.call("SMOVE", "s", "s", "zz") == (":", 0)
    assert r.call("SMEMBERS", "s")[1] == [("$", b"a")]


def test_smove_type_checks(r):
    r.call("SET", "str", "x")
    r.call("SADD", "s", "a")
    assert r.call("SMOVE", "nokey", "str", "a") == (":", 0)  # a missing source wins
    assert r.call("SMOVE", "str", "s", "a") == WRONGTYPE
    assert r.call("SMOVE", "s", "str", "a") == WRONGTYPE
    assert r.call("SMOVE", "s", "str", "zz") == WRONGTYPE
    assert r.call("SISMEMBER", "s", "a") == (":", 1)


def test_smove_creates_destination_by_member_type(r):
    r.call("SADD", "src", "x", "7", "y")
    r.call("SMOVE", "src", "d1", "7")
    assert encoding(r, "d1") == b"intset"
    r.call("SMOVE", "src", "d2", "x")
    assert encoding(r, "d2") == b"listpack"


def test_smove_keeps_ttls(r):
    r.call("SADD", "src", "a", "b")
    r.call("SADD", "dst", "c")
    r.call("PEXPIRE", "src", "100000")
    r.call("PEXPIRE", "dst", "100000")
    r.call("SMOVE", "src", "dst", "a")
    assert r.call("PTTL", "src")[1] > 0
    assert r.call("PTTL", "dst")[1] > 0


# --- SINTER / SUNION / SDIFF and their STORE forms --------------------------------------------


def test_algebra_reply_types(r, proto):
    r.call("SADD", "a", "1", "2", "3")
    r.call("SADD", "b", "2", "3", "4")
    assert r.call("SINTER", "a", "b") == as_set(proto, b"2", b"3")
    assert r.call("SUNION", "a", "b") == as_set(proto, b"1", b"2", b"3", b"4")
    assert r.call("SDIFF", "a", "b") == as_set(proto, b"1")
    assert r.call("SDIFF", "b", "a") == as_set(proto, b"4")
    assert r.call("SINTER", "a", "nokey") == (set_kind(proto), [])
    assert r.call("SUNION", "nokey", "nokey2") == (set_kind(proto), [])
    assert r.call("SDIFF", "nokey", "a") == (set_kind(proto), [])
    assert r.call("SUNION", "a", "nokey") == as_set(proto, b"1", b"2", b"3")
    assert r.call("SDIFF", "a", "nokey") == as_set(proto, b"1", b"2", b"3")
    assert r.call("SDIFF", "a", "a") == (set_kind(proto), [])
    assert r.call("SDIFF", "a", "b", "a") == (set_kind(proto), [])
    assert r.call("SINTER", "a", "a") == as_set(proto, b"1", b"2", b"3")


def test_sinter_follows_the_smallest_set(r, proto):
    r.call("SADD", "big", "x", "5", "3", "z")  # listpack in insertion order
    r.call("SADD", "small", "5", "3", "x")  # intset {3, 5} then x: [3, 5, x]
    expected = as_set(proto, b"3", b"5", b"x")
    assert r.call("SINTER", "big", "small") == expected
    assert r.call("SINTER", "small", "big") == expected
    r.call("SADD", "lp", "x", "9", "1", "q")
    r.call("SADD", "ints", *nums(*range(20)))
    assert r.call("SINTER", "ints", "lp") == as_set(proto, b"9", b"1")


def test_sunion_and_sdiff_orders(r, proto):
    r.call("SADD", "i1", "9", "1")
    r.call("SADD", "i2", "5")
    r.call("SADD", "lp", "y")
    r.call("SADD", "big", *nums(*range(1, 21)))
    r.call("SADD", "s1", "30", "20", "10")
    # only intsets: the result is an intset, ascending
    assert values(r.call("SUNION", "s1", "big"), set_kind(proto)) == [
        str(i).encode() for i in [*range(1, 21), 30]
    ]
    assert r.call("SUNION", "i1", "i2") == as_set(proto, b"1", b"5", b"9")
    # with another encoding: first-seen order, each set in its own order
    assert r.call("SUNION", "i1", "i2", "lp") == as_set(proto, b"1", b"9", b"5", b"y")
    assert r.call("SUNION", "lp", "i1", "i2") == as_set(proto, b"y", b"1", b"9", b"5")
    r.call("SADD", "kk", "y", "9", "1", "x")
    r.call("SREM", "kk", "y")  # listpack [9, 1, x]
    assert r.call("SUNION", "kk") == as_set(proto, b"9", b"1", b"x")
    assert r.call("SDIFF", "kk", "i2") == as_set(proto, b"9", b"1", b"x")
    for k in ("o1", "o2", "o3", "o4"):
        r.call("SADD", k, "q" + k)
    assert r.call("SDIFF", "kk", "o1", "o2", "o3", "o4") == as_set(proto, b"9", b"1", b"x")
    assert r.call("SDIFF", "kk", "i1") == as_set(proto, b"x")


def test_stored_results_order(r, proto):
    r.call("SADD", "kk", "y", "9", "1", "x")
    r.call("SREM", "kk", "y")  # listpack [9, 1, x]
    r.call("SUNIONSTORE", "u", "kk")
    assert r.call("SMEMBERS", "u") == as_set(proto, b"1", b"9", b"x")
    r.call("SDIFFSTORE", "d", "kk")
    assert r.call("SMEMBERS", "d") == as_set(proto, b"1", b"9", b"x")
    r.call("SINTERSTORE", "i", "kk")
    assert r.call("SMEMBERS", "i") == as_set(proto, b"9", b"1", b"x")
    r.call("SADD", "s", "5", "3", "1")
    r.call("SADD", "l", "b", "a", "c")
    assert r.call("SUNIONSTORE", "u2", "s", "l") == (":", 6)
    assert r.call("SMEMBERS", "u2") == as_set(proto, b"1", b"3", b"5", b"b", b"a", b"c")


def test_hashtable_algebra(r, proto):
    a = {f"m{i}".encode() for i in range(0, 300)}
    b = {f"m{i}".encode() for i in range(200, 400)}
    r.call("SADD", "a", *a)
    r.call("SADD", "b", *b)
    assert sorted(values(r.call("SINTER", "a", "b"), set_kind(proto))) == sorted(a & b)
    assert sorted(values(r.call("SUNION", "a", "b"), set_kind(proto))) == sorted(a | b)
    assert sorted(values(r.call("SDIFF", "a", "b"), set_kind(proto))) == sorted(a - b)
    assert r.call("SINTERCARD", "2", "a", "b") == (":", 100)


def test_algebra_wrongtype_even_with_a_missing_key(r):
    r.call("SET", "str", "x")
    r.call("SADD", "s", "a")
    for cmd in ("SINTER", "SUNION", "SDIFF"):
        assert r.call(cmd, "nokey", "str") == WRONGTYPE
        assert r.call(cmd, "s", "str") == WRONGTYPE
        assert r.call(cmd, "str") == WRONGTYPE
    for cmd in ("SINTERSTORE", "SUNIONSTORE", "SDIFFSTORE"):
        assert r.call(cmd, "dst", "nokey", "str") == WRONGTYPE
    assert r.call("EXISTS", "dst") == (":", 0)


def test_store_commands(r):
    r.call("SADD", "a", "1", "2", "3")
    r.call("SADD", "b", "2", "3", "4")
    assert r.call("SINTERSTORE", "d", "a", "b") == (":", 2)
    assert r.call("SMEMBERS", "d")[1] == [("$", b"2"), ("$", b"3")]
    assert r.call("SUNIONSTORE", "d", "a", "b") == (":", 4)
    assert r.call("SCARD", "d") == (":", 4)
    assert r.call("SDIFFSTORE", "d", "a", "b") == (":", 1)
    assert r.call("SMEMBERS", "d")[1] == [("$", b"1")]


def test_store_with_empty_result_deletes_destination(r):
    r.call("SADD", "a", "1")
    r.call("SADD", "b", "2")
    for cmd, srcs in (
        ("SINTERSTORE", ("a", "b")), ("SINTERSTORE", ("a", "nokey")),
        ("SUNIONSTORE", ("nokey",)), ("SDIFFSTORE", ("a", "a")), ("SDIFFSTORE", ("nokey", "a")),
    ):
        r.call("SET", "dst", "string")  # any type is replaced
        assert r.call(cmd, "dst", *srcs) == (":", 0)
        assert r.call("EXISTS", "dst") == (":", 0)
        assert r.call(cmd, "dst", *srcs) == (":", 0)


def test_store_overwrites_any_type_and_clears_ttl(r):
    r.call("SADD", "a", "1", "2")
    r.call("SET", "dst", "string")
    r.call("PEXPIRE", "dst", "100000")
    assert r.call("SUNIONSTORE", "dst", "a") == (":", 2)
    assert r.call("TYPE", "dst") == ("+", b"set")
    assert r.call("PTTL", "dst") == (":", -1)


def test_store_destination_among_sources(r, proto):
    r.call("SADD", "x", "1", "2", "3")
    r.call("SADD", "y", "2", "3", "4")
    assert r.call("SINTERSTORE", "x", "x", "y") == (":", 2)
    assert r.call("SMEMBERS", "x") == as_set(proto, b"2", b"3")
    assert r.call("SUNIONSTORE", "y", "y", "x") == (":", 3)
    assert r.call("SMEMBERS", "y") == as_set(proto, b"2", b"3", b"4")
    assert r.call("SDIFFSTORE", "y", "y", "x") == (":", 1)
    assert r.call("SMEMBERS", "y") == as_set(proto, b"4")
    assert r.call("SDIFFSTORE", "y", "y") == (":", 1)  # one set: itself
    assert r.call("SDIFFSTORE", "y", "y", "y") == (":", 0)
    assert r.call("EXISTS", "y") == (":", 0)


# --- SINTERCARD -----------------------------------------------------------------------------


def test_sintercard(r):
    r.call("SADD", "a", "1", "2", "3", "4")
    r.call("SADD", "b", "2", "3", "4", "5")
    assert r.call("SINTERCARD", "2", "a", "b") == (":", 3)
    assert r.call("SINTERCARD", "1", "a") == (":", 4)
    assert r.call("SINTERCARD", "2", "a", "b", "LIMIT", "2") == (":", 2)
    assert r.call("SINTERCARD", "2", "a", "b", "limit", "0") == (":", 3)
    assert r.call("SINTERCARD", "2", "a", "b", "LIMIT", "10") == (":", 3)
    assert r.call("SINTERCARD", "2", "a", "b", "LIMIT", "1", "LIMIT", "3") == (":", 3)
    assert r.call("SINTERCARD", "2", "a", "nokey") == (":", 0)
    assert r.call("SINTERCARD", "1", "nokey", "LIMIT", "5") == (":", 0)


def test_sintercard_errors(r2):
    r2.call("SADD", "s", "a")
    r2.call("SET", "str", "x")
    numkeys = ("-", b"ERR numkeys should be greater than 0")
    for bad in ("0", "-1", "x", "9223372036854775808"):
        assert r2.call("SINTERCARD", bad, "s") == numkeys
    too_many = ("-", b"ERR Number of keys can't be greater than number of args")
    assert r2.call("SINTERCARD", "2", "s") == too_many
    assert r2.call("SINTERCARD", "9223372036854775807", "s") == too_many
    negative = ("-", b"ERR LIMIT can't be negative")
    assert r2.call("SINTERCARD", "1", "s", "LIMIT", "-1") == negative
    assert r2.call("SINTERCARD", "1", "s", "LIMIT", "x") == negative
    assert r2.call("SINTERCARD", "1", "str", "LIMIT", "-1") == negative  # options first
    assert r2.call("SINTERCARD", "1", "s", "LIMIT") == SYNTAX
    assert r2.call("SINTERCARD", "1", "s", "FOO") == SYNTAX
    assert r2.call("SINTERCARD", "1", "s", "s") == SYNTAX
    assert r2.call("SINTERCARD", "1", "str") == WRONGTYPE
    assert r2.call("SINTERCARD", "2", "nokey", "str") == WRONGTYPE


# --- SSCAN -----------------------------------------------------------------------------------


def scan_page(reply):
    """(cursor, members) of an SSCAN reply, after checking its wire types."""
    assert reply[0] == "*" and len(reply[1]) == 2, reply
    (ckind, cursor), page = reply[1]
    assert ckind == "$"
    return int(cursor), values(page, "*")


def test_sscan_compact_sets_answer_in_one_call(r):
    r.call("SADD", "i", "5", "3", "1")
    expected = ("*", [("$", b"0"), bulks(b"1", b"3", b"5")])
    assert r.call("SSCAN", "i", "0") == expected
    assert r.call("SSCAN", "i", "0", "COUNT", "1") == expected
    assert r.call("SSCAN", "i", "7") == expected  # the cursor is ignored
    r.call("SADD", "l", "b", "a", "c")
    assert r.call("SSCAN", "l", "0", "COUNT", "1") == ("*", [("$", b"0"), bulks(b"b", b"a", b"c")])
    assert r.call("SSCAN", "nokey", "0") == ("*", [("$", b"0"), ("*", [])])


def test_sscan_match(r):
    r.call("SADD", "i", "5", "15", "1", "51")
    assert r.call("SSCAN", "i", "0", "MATCH", "1*") == ("*", [("$", b"0"), bulks(b"1", b"15")])
    assert r.call("SSCAN", "i", "0", "match", "*5", "count", "10") == (
        "*", [("$", b"0"), bulks(b"5", b"15")]
    )
    r.call("SADD", "l", "b", "a", "c", "")
    assert r.call("SSCAN", "l", "0", "MATCH", "[ab]") == ("*", [("$", b"0"), bulks(b"b", b"a")])
    assert r.call("SSCAN", "l", "0", "MATCH", "*") == (
        "*", [("$", b"0"), bulks(b"b", b"a", b"c", b"")]
    )
    assert r.call("SSCAN", "l", "0", "MATCH", "") == ("*", [("$", b"0"), bulks(b"")])
    assert r.call("SSCAN", "l", "0", "MATCH", "x", "MATCH", "a") == (
        "*", [("$", b"0"), bulks(b"a")]
    )


@pytest.mark.parametrize(
    "cursor,valid",
    [
        ("0", True), ("18446744073709551615", True), ("+5", True), ("00", True), ("-0", True),
        (" 1", True), ("\t1", True), (" -1", True), ("-1", False), ("1 ", False), ("", False),
        ("abc", False), ("0x10", False), ("1.5", False), ("18446744073709551616", False),
    ],
)
def test_sscan_cursor_forms(r2, cursor, valid):
    r2.call("SADD", "s", "a")
    expected = ("*", [("$", b"0"), bulks(b"a")]) if valid else INVALID_CURSOR
    assert r2.call("SSCAN", "s", cursor) == expected


def test_sscan_errors(r2):
    r2.call("SADD", "s", "a")
    r2.call("SET", "str", "x")
    assert r2.call("SSCAN", "nokey", "abc") == INVALID_CURSOR
    assert r2.call("SSCAN", "str", "abc") == INVALID_CURSOR  # the cursor comes first
    assert r2.call("SSCAN", "str", "0") == WRONGTYPE
    assert r2.call("SSCAN", "str", "0", "COUNT", "0") == WRONGTYPE
    assert r2.call("SSCAN", "nokey", "0", "FOO", "bar") == ("*", [("$", b"0"), ("*", [])])
    assert r2.call("SSCAN", "s", "0", "COUNT", "0") == SYNTAX
    assert r2.call("SSCAN", "s", "0", "COUNT", "-1") == SYNTAX
    assert r2.call("SSCAN", "s", "0", "COUNT", "abc") == NOT_INT
    assert r2.call("SSCAN", "s", "0", "COUNT", "05") == NOT_INT
    assert r2.call("SSCAN", "s", "0", "COUNT", "9223372036854775808") == NOT_INT
    assert r2.call("SSCAN", "s", "0", "COUNT") == SYNTAX
    assert r2.call("SSCAN", "s", "0", "MATCH") == SYNTAX
    assert r2.call("SSCAN", "s", "0", "TYPE", "string") == SYNTAX
    assert r2.call("SSCAN", "s", "0", "FOO", "bar") == SYNTAX
    novalues = ("-", b"ERR NOVALUES option can only be used in HSCAN")
    assert r2.call("SSCAN", "s", "0", "NOVALUES") == novalues
    assert r2.call("SSCAN", "s", "0", "novalues", "COUNT", "0") == novalues
    assert r2.call("SSCAN", "s", "0", "COUNT", "0", "NOVALUES") == SYNTAX
    assert r2.call("SSCAN", "s", "0", "NOSCORES") == (
        "-", b"ERR NOSCORES option can only be used in ZSCAN"
    )


def test_sscan_hashtable_full_iteration(r):
    members = {f"m{i}".encode() for i in range(300)}
    r.call("SADD", "h", *members)
    cursor, seen, calls = 0, [], 0
    while True:
        cursor, page = scan_page(r.call("SSCAN", "h", str(cursor), "COUNT", "20"))
        seen += page
        calls += 1
        if cursor == 0:
            break
    assert set(seen) == members
    assert calls > 1
    cursor, page = scan_page(r.call("SSCAN", "h", "0", "COUNT", "1000"))
    assert cursor == 0 and sorted(page) == sorted(members)


def test_sscan_returns_every_member_present_throughout(r):
    stable = [f"keep{i}".encode() for i in range(200)]
    churn = [f"tmp{i}".encode() for i in range(200)]
    r.call("SADD", "h", *stable, *churn)
    cursor, seen, step = 0, set(), 0
    while True:
        cursor, page = scan_page(r.call("SSCAN", "h", str(cursor), "COUNT", "15"))
        seen.update(page)
        # churn between calls: remove some temporary members, add new ones
        gone = churn[step * 10 : step * 10 + 10]
        if gone:
            r.call("SREM", "h", *gone)
        r.call("SADD", "h", *[f"new{step}-{i}" for i in range(10)])
        step += 1
        if cursor == 0:
            break
    assert set(stable) <= seen
    added = {f"new{s}-{i}".encode() for s in range(step) for i in range(10)}
    assert seen <= set(stable) | set(churn) | added


def test_sscan_hashtable_match_filters_each_page(r):
    members = [f"m{i}".encode() for i in range(300)]
    r.call("SADD", "h", *members)
    cursor, seen = 0, []
    while True:
        cursor, page = scan_page(r.call("SSCAN", "h", str(cursor), "MATCH", "m1*"))
        assert all(m.startswith(b"m1") for m in page)
        seen += page
        if cursor == 0:
            break
    assert sorted(seen) == sorted(m for m in members if m.startswith(b"m1"))


# --- errors shared by the family --------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ("SADD", "str", "a"), ("SREM", "str", "a"), ("SMEMBERS", "str"), ("SISMEMBER", "str", "a"),
        ("SMISMEMBER", "str", "a"), ("SCARD", "str"), ("SPOP", "str"), ("SPOP", "str", "1"),
        ("SRANDMEMBER", "str"), ("SRANDMEMBER", "str", "2"), ("SINTER", "str"),
        ("SINTERCARD", "1", "str"), ("SUNION", "str"), ("SDIFF", "str"), ("SSCAN", "str", "0"),
        ("SINTERSTORE", "d", "str"), ("SUNIONSTORE", "d", "str"), ("SDIFFSTORE", "d", "str"),
    ],
)
def test_wrongtype(r2, args):
    r2.call("SET", "str", "x")
    assert r2.call(*args) == WRONGTYPE
    assert r2.call("GET", "str") == ("$", b"x")


@pytest.mark.parametrize(
    "args",
    [
        ("SADD", "s"), ("SREM", "s"), ("SMEMBERS",), ("SMEMBERS", "s", "t"), ("SISMEMBER", "s"),
        ("SISMEMBER", "s", "a", "b"), ("SMISMEMBER", "s"), ("SCARD",), ("SCARD", "s", "t"),
        ("SPOP",), ("SRANDMEMBER",), ("SMOVE", "a", "b"), ("SMOVE", "a", "b", "c", "d"),
        ("SINTER",), ("SINTERCARD", "1"), ("SINTERSTORE", "d"), ("SUNION",),
        ("SUNIONSTORE", "d"), ("SDIFF",), ("SDIFFSTORE", "d"), ("SSCAN", "s"),
    ],
)
def test_arity(r2, args):
    name = args[0].lower()
    assert r2.call(*args) == ("-", f"ERR wrong number of arguments for '{name}' command".encode())


# --- keyspace events --------------------------------------------------------------------------


def keyevents(target, r, commands):
    """Run `commands` on `r` and answer the (event, key) notifications they caused."""
    sub = target.raw(2)
    try:
        assert r.call("CONFIG", "SET", "notify-keyspace-events", "KEA")[0] == "+"
        subscribed = sub.call("PSUBSCRIBE", "__keyevent@0__:*")
        assert subscribed == ("*", [("$", b"psubscribe"), ("$", b"__keyevent@0__:*"), (":", 1)])
        for command in commands:
            r.call(*command)
        r.call("SADD", "__end__", "x")
        events = []
        while True:
            _, (_, _, (_, channel), (_, key)) = sub.read()
            if key == b"__end__":
                return events
            events.append((channel.split(b":", 1)[1].decode(), key.decode()))
    finally:
        sub.close()


def test_keyspace_events(target, r):
    commands = [
        ("SADD", "s", "a", "b"), ("SADD", "s", "a"), ("SREM", "s", "zz"), ("SREM", "s", "a"),
        ("SREM", "s", "b"), ("SADD", "s", "a", "b", "c"), ("SPOP", "s"), ("SPOP", "s", "0"),
        ("SPOP", "s", "1"), ("SPOP", "s", "5"), ("SPOP", "nokey"), ("SPOP", "nokey", "1"),
    ]
    assert keyevents(target, r, commands) == [
        ("sadd", "s"), ("srem", "s"), ("srem", "s"), ("del", "s"), ("sadd", "s"),
        ("spop", "s"), ("spop", "s"), ("spop", "s"), ("del", "s"),
    ]


def test_keyspace_events_smove(target, r):
    r.call("SADD", "s", "a", "b")
    r.call("SADD", "d", "b")
    commands = [
        ("SMOVE", "s", "d", "a"), ("SMOVE", "s", "d", "b"), ("SMOVE", "d", "d", "a"),
        ("SMOVE", "d", "n", "zz"), ("SMOVE", "d", "n", "a"),
    ]
    assert keyevents(target, r, commands) == [
        ("srem", "s"), ("sadd", "d"), ("srem", "s"), ("del", "s"), ("srem", "d"), ("sadd", "n"),
    ]


def test_keyspace_events_store(target, r):
    r.call("SADD", "x", "1", "2")
    commands = [
        ("SINTERSTORE", "dst", "x"), ("SINTERSTORE", "dst", "nokey"), ("SINTERSTORE", "dst", "nokey"),
        ("SUNIONSTORE", "dst", "x"), ("SDIFFSTORE", "dst", "x", "x"), ("SDIFFSTORE", "dst", "x"),
        ("SINTERCARD", "1", "x"), ("SMEMBERS", "x"),
    ]
    assert keyevents(target, r, commands) == [
        ("sinterstore", "dst"), ("del", "dst"), ("sunionstore", "dst"), ("del", "dst"),
        ("sdiffstore", "dst"),
    ]


# --- a client library ---------------------------------------------------------------------------


def test_redis_py_set_api(client):
    assert client.sadd("s", "a", "b", "c") == 3
    assert client.smembers("s") == {b"a", b"b", b"c"}
    assert client.sinter("s", "nokey") == set()
    assert set(client.sscan_iter("s", match="[ab]")) == {b"a", b"b"}
    assert client.smove("s", "t", "a") is True
    assert client.smismember("s", ["a", "b"]) == [0, 1]
