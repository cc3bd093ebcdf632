"""Random commands for differential testing against a real Valkey.

`FAMILIES` is a table: per command family, one `Spec` per command with a Hypothesis
strategy for whole requests and the way two replies are compared. To cover a new family,
add its list here; `available()` keeps only the commands fakekey registers, so a command
that is not implemented yet is never generated.

Keys come from a tiny alphabet so that commands hit each other's keys and types; values
mix integers, floats, empty strings and binary bytes. Expiry times are either in the past
(the key goes at once) or far away, so no key expires between the two servers' replies.
Comparisons are exact except where Valkey itself is not deterministic: remaining TTLs
(compared within a tolerance), replies whose order Valkey leaves unspecified (sorted), and
random picks (compared by shape).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from fakekey.testing.raw import Reply

Argv = list[bytes]
Compare = Callable[[Reply, Reply], bool]

# --- comparisons ------------------------------------------------------------------------


def exact(a: Reply, b: Reply) -> bool:
    return a == b


def within(tolerance: int) -> Compare:
    """Integers equal within `tolerance` when both are >= 0 (a TTL read a moment apart on
    each server); negative answers (-1 no expiry, -2 no key) must be equal."""

    def compare(a: Reply, b: Reply) -> bool:
        if a[0] == b[0] == ":" and a[1] >= 0 and b[1] >= 0:
            return abs(a[1] - b[1]) <= tolerance
        return a == b

    return compare


def each_within(tolerance: int) -> Compare:
    """Per-field TTLs: the same array, each integer within `tolerance` as in `within`."""
    close = within(tolerance)

    def compare(a: Reply, b: Reply) -> bool:
        if a[0] == b[0] == "*" and a[1] is not None and b[1] is not None and len(a[1]) == len(b[1]):
            return all(close(x, y) for x, y in zip(a[1], b[1], strict=True))
        return a == b

    return compare


def _sorted_elements(reply: Reply) -> Reply:
    kind, value = reply
    if kind in "*~" and value is not None:
        return (kind, sorted(value, key=repr))
    return reply


def unordered(a: Reply, b: Reply) -> bool:
    """Arrays and sets whose element order Valkey does not specify."""
    return _sorted_elements(a) == _sorted_elements(b)


def unordered_pairs(a: Reply, b: Reply) -> bool:
    """A field/value reply (RESP2 flat array, RESP3 map) in unspecified order."""

    def pairs(reply: Reply) -> Reply:
        kind, value = reply
        if kind == "*" and value:
            return (kind, sorted(zip(value[::2], value[1::2], strict=True), key=repr))
        if kind == "%":
            return (kind, sorted(value, key=repr))
        return reply

    return pairs(a) == pairs(b)


def scan_reply(a: Reply, b: Reply) -> bool:
    """SCAN-like: the same cursor (the keyspace is tiny: one call covers it) and the same
    elements in any order."""
    if a[0] != "*" or b[0] != "*" or a[1] is None or b[1] is None or len(a[1]) != 2 or len(b[1]) != 2:
        return a == b
    return a[1][0] == b[1][0] and unordered(a[1][1], b[1][1])


def shape(a: Reply, b: Reply) -> bool:
    """Random picks: the same reply type, nullness and number of elements."""
    if a[0] != b[0] or (a[1] is None) != (b[1] is None):
        return False
    if a[0] in "*~%" and a[1] is not None:
        return len(a[1]) == len(b[1])
    return a[0] != "-" or a == b


# --- the alphabets --------------------------------------------------------------------------

KEY = st.sampled_from([b"k1", b"k2", b"k3"])
VALUE = st.sampled_from(
    [b"", b"0", b"1", b"-1", b"10", b"3.5", b"-0.5", b"1e3", b"01", b" 1", b"abc", b"a",
     b"\x00\xff", b"9223372036854775807", b"-9223372036854775808", b"inf", b"x" * 45, b"y" * 65]
)
MEMBER = st.sampled_from([b"a", b"b", b"c", b"1", b"2", b"", b"m" * 65])
# many elements at once: past the small-encoding thresholds (128 entries, 512 integers)
MANY = st.sampled_from(
    [
        [str(i).encode() for i in range(130)],
        [str(i).encode() for i in range(520)],
        [b"e%d" % i for i in range(130)],
    ]
)
INT = st.sampled_from(
    [b"0", b"1", b"-1", b"2", b"7", b"-3", b"100", b"9223372036854775807",
     b"-9223372036854775808", b"9223372036854775808", b"1.5", b"x", b""]
)
FLOAT = st.sampled_from([b"0", b"1.5", b"-2", b"1e2", b"0.1", b"inf", b"nan", b"x", b"", b"5.0e3"])
INDEX = st.sampled_from([b"0", b"1", b"2", b"-1", b"-2", b"-100", b"100", b"x"])
SMALL_OFFSET = st.sampled_from([b"0", b"1", b"3", b"7", b"-1", b"x", b"4294967296"])
COUNT = st.sampled_from([b"0", b"1", b"2", b"3", b"-1", b"-3", b"100", b"x"])
# relative expiry: 0/negative (gone at once or refused), far (never reached during a run)
SECONDS = st.sampled_from([b"0", b"-1", b"1000", b"100000", b"x", b"9223372036854775807"])
MILLIS = st.sampled_from([b"0", b"-1", b"1000000", b"100000000", b"x"])
UNIX_S = st.sampled_from([b"0", b"1", b"4102444800", b"-1", b"x"])  # 2100-01-01
UNIX_MS = st.sampled_from([b"0", b"1", b"4102444800000", b"x"])


def _cmd(*parts: Any) -> st.SearchStrategy[Argv]:
    """A request from fixed words (bytes/str) and strategies, flattened."""
    items = [st.just(p.encode() if isinstance(p, str) else p) if isinstance(p, str | bytes) else p for p in parts]
    return st.tuples(*items).map(_flatten)


def _flatten(parts: Iterable[Any]) -> Argv:
    out: Argv = []
    for part in parts:
        if isinstance(part, list | tuple):
            out.extend(_flatten(part))
        elif part is not None:
            out.append(part)
    return out


def _opt(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.none() | strategy


def _some(strategy: st.SearchStrategy[Any], max_size: int = 3, min_size: int = 1) -> st.SearchStrategy[Any]:
    return st.lists(strategy, min_size=min_size, max_size=max_size)


def _pairs(first: st.SearchStrategy[bytes], second: st.SearchStrategy[bytes]) -> st.SearchStrategy[Any]:
    return _some(st.tuples(first, second))


EXPIRY = st.one_of(
    st.tuples(st.just(b"EX"), SECONDS),
    st.tuples(st.just(b"PX"), MILLIS),
    st.tuples(st.just(b"EXAT"), UNIX_S),
    st.tuples(st.just(b"PXAT"), UNIX_MS),
    st.just(b"KEEPTTL"),
)
SET_OPTIONS = st.lists(
    st.one_of(
        st.sampled_from([b"NX", b"XX", b"GET"]),
        st.tuples(st.just(b"IFEQ"), VALUE),
        EXPIRY,
    ),
    max_size=3,
)
EXPIRE_FLAG = _opt(st.sampled_from([b"NX", b"XX", b"GT", b"LT"]))


@dataclass(frozen=True)
class Spec:
    """A command to generate: `name` as the registry knows it ("set", "object|encoding"),
    `argv` a strategy for whole requests, `compare` how two replies must agree."""

    name: str
    argv: st.SearchStrategy[Argv]
    compare: Compare = exact


STRING = [
    Spec("get", _cmd("GET", KEY)),
    Spec("set", _cmd("SET", KEY, VALUE, SET_OPTIONS)),
    Spec("setnx", _cmd("SETNX", KEY, VALUE)),
    Spec("setex", _cmd("SETEX", KEY, SECONDS, VALUE)),
    Spec("psetex", _cmd("PSETEX", KEY, MILLIS, VALUE)),
    Spec("getset", _cmd("GETSET", KEY, VALUE)),
    Spec("getdel", _cmd("GETDEL", KEY)),
    Spec("getex", _cmd("GETEX", KEY, _opt(EXPIRY.filter(lambda e: e != b"KEEPTTL") | st.just(b"PERSIST")))),
    Spec("mget", _cmd("MGET", _some(KEY))),
    Spec("mset", _cmd("MSET", _pairs(KEY, VALUE))),
    Spec("msetnx", _cmd("MSETNX", _pairs(KEY, VALUE))),
    Spec(
        "msetex",
        _cmd("MSETEX", st.sampled_from([b"1", b"2", b"0", b"x"]), _pairs(KEY, VALUE),
             _opt(st.sampled_from([b"NX", b"XX"])), _opt(EXPIRY)),
    ),
    Spec("append", _cmd("APPEND", KEY, VALUE)),
    Spec("strlen", _cmd("STRLEN", KEY)),
    Spec("incr", _cmd("INCR", KEY)),
    Spec("decr", _cmd("DECR", KEY)),
    Spec("incrby", _cmd("INCRBY", KEY, INT)),
    Spec("decrby", _cmd("DECRBY", KEY, INT)),
    Spec("incrbyfloat", _cmd("INCRBYFLOAT", KEY, FLOAT)),
    Spec("getrange", _cmd("GETRANGE", KEY, INDEX, INDEX)),
    Spec("substr", _cmd("SUBSTR", KEY, INDEX, INDEX)),
    Spec("setrange", _cmd("SETRANGE", KEY, SMALL_OFFSET, VALUE)),
    Spec("delifeq", _cmd("DELIFEQ", KEY, VALUE)),
    Spec(
        "lcs",
        _cmd("LCS", KEY, KEY, _opt(st.sampled_from([b"LEN", b"IDX"])),
             _opt(st.tuples(st.just(b"MINMATCHLEN"), COUNT)), _opt(st.just(b"WITHMATCHLEN"))),
    ),
]

GENERIC = [
    Spec("exists", _cmd("EXISTS", _some(KEY))),
    Spec("del", _cmd("DEL", _some(KEY))),
    Spec("unlink", _cmd("UNLINK", _some(KEY))),
    Spec("touch", _cmd("TOUCH", _some(KEY))),
    Spec("type", _cmd("TYPE", KEY)),
    Spec("expire", _cmd("EXPIRE", KEY, SECONDS, EXPIRE_FLAG)),
    Spec("pexpire", _cmd("PEXPIRE", KEY, MILLIS, EXPIRE_FLAG)),
    Spec("expireat", _cmd("EXPIREAT", KEY, UNIX_S, EXPIRE_FLAG)),
    Spec("pexpireat", _cmd("PEXPIREAT", KEY, UNIX_MS, EXPIRE_FLAG)),
    Spec("persist", _cmd("PERSIST", KEY)),
    Spec("ttl", _cmd("TTL", KEY), within(1)),
    Spec("pttl", _cmd("PTTL", KEY), within(1000)),
    Spec("expiretime", _cmd("EXPIRETIME", KEY), within(1)),
    Spec("pexpiretime", _cmd("PEXPIRETIME", KEY), within(1000)),
    Spec("rename", _cmd("RENAME", KEY, KEY)),
    Spec("renamenx", _cmd("RENAMENX", KEY, KEY)),
    Spec("copy", _cmd("COPY", KEY, KEY, _opt(st.just(b"REPLACE")))),
    Spec("keys", _cmd("KEYS", st.sampled_from([b"*", b"k[12]", b"k?", b"x*", b"\\k1"])), unordered),
    Spec(
        "scan",
        _cmd("SCAN", "0", _opt(st.tuples(st.just(b"MATCH"), st.sampled_from([b"k[13]", b"*"]))),
             "COUNT", "100", _opt(st.tuples(st.just(b"TYPE"), st.sampled_from([b"string", b"list", b"set"])))),
        scan_reply,
    ),
    Spec("randomkey", _cmd("RANDOMKEY"), shape),
    Spec("object|encoding", _cmd("OBJECT", "ENCODING", KEY)),
]

LIST = [
    Spec("lpush", _cmd("LPUSH", KEY, _some(MEMBER))),
    Spec("rpush", _cmd("RPUSH", KEY, _some(MEMBER) | MANY)),
    Spec("lpushx", _cmd("LPUSHX", KEY, _some(MEMBER))),
    Spec("rpushx", _cmd("RPUSHX", KEY, _some(MEMBER))),
    Spec("lpop", _cmd("LPOP", KEY, _opt(COUNT))),
    Spec("rpop", _cmd("RPOP", KEY, _opt(COUNT))),
    Spec("llen", _cmd("LLEN", KEY)),
    Spec("lrange", _cmd("LRANGE", KEY, INDEX, INDEX)),
    Spec("lindex", _cmd("LINDEX", KEY, INDEX)),
    Spec("lset", _cmd("LSET", KEY, INDEX, MEMBER)),
    Spec("ltrim", _cmd("LTRIM", KEY, INDEX, INDEX)),
    Spec("lrem", _cmd("LREM", KEY, COUNT, MEMBER)),
    Spec("linsert", _cmd("LINSERT", KEY, st.sampled_from([b"BEFORE", b"AFTER", b"x"]), MEMBER, MEMBER)),
    Spec(
        "lpos",
        _cmd("LPOS", KEY, MEMBER, _opt(st.tuples(st.just(b"RANK"), INDEX)),
             _opt(st.tuples(st.just(b"COUNT"), COUNT)), _opt(st.tuples(st.just(b"MAXLEN"), COUNT))),
    ),
    Spec("rpoplpush", _cmd("RPOPLPUSH", KEY, KEY)),
    Spec("lmove", _cmd("LMOVE", KEY, KEY, st.sampled_from([b"LEFT", b"RIGHT"]), st.sampled_from([b"LEFT", b"RIGHT"]))),
    Spec(
        "lmpop",
        _cmd("LMPOP", st.sampled_from([b"1", b"2"]), KEY, KEY, st.sampled_from([b"LEFT", b"RIGHT"]),
             _opt(st.tuples(st.just(b"COUNT"), COUNT))),
    ),
    # a blocking pop on an empty list waits 10 ms, then both answer with their timeout reply
    Spec("blpop", _cmd("BLPOP", _some(KEY, 2), "0.01")),
    Spec("brpop", _cmd("BRPOP", _some(KEY, 2), "0.01")),
]

SET = [
    Spec("sadd", _cmd("SADD", KEY, _some(MEMBER) | MANY)),
    Spec("srem", _cmd("SREM", KEY, _some(MEMBER))),
    Spec("scard", _cmd("SCARD", KEY)),
    Spec("sismember", _cmd("SISMEMBER", KEY, MEMBER)),
    Spec("smismember", _cmd("SMISMEMBER", KEY, _some(MEMBER))),
    Spec("smembers", _cmd("SMEMBERS", KEY), unordered),
    Spec("sinter", _cmd("SINTER", _some(KEY)), unordered),
    Spec("sunion", _cmd("SUNION", _some(KEY)), unordered),
    Spec("sdiff", _cmd("SDIFF", _some(KEY)), unordered),
    Spec("sinterstore", _cmd("SINTERSTORE", KEY, _some(KEY))),
    Spec("sunionstore", _cmd("SUNIONSTORE", KEY, _some(KEY))),
    Spec("sdiffstore", _cmd("SDIFFSTORE", KEY, _some(KEY))),
    Spec(
        "sintercard",
        _cmd("SINTERCARD", st.sampled_from([b"1", b"2", b"0"]), KEY, KEY,
             _opt(st.tuples(st.just(b"LIMIT"), COUNT))),
    ),
    Spec("smove", _cmd("SMOVE", KEY, KEY, MEMBER)),
    # SPOP takes random members: only counts that take none or all of them keep both in step
    Spec("spop", _cmd("SPOP", KEY, st.sampled_from([b"0", b"1000", b"-1"])), unordered),
    Spec("srandmember", _cmd("SRANDMEMBER", KEY, _opt(COUNT)), shape),
]

BITMAP = [
    Spec("setbit", _cmd("SETBIT", KEY, SMALL_OFFSET, st.sampled_from([b"0", b"1", b"2"]))),
    Spec("getbit", _cmd("GETBIT", KEY, SMALL_OFFSET)),
    Spec("bitcount", _cmd("BITCOUNT", KEY, _opt(st.tuples(INDEX, INDEX, _opt(st.sampled_from([b"BYTE", b"BIT"])))))),
    Spec(
        "bitpos",
        _cmd("BITPOS", KEY, st.sampled_from([b"0", b"1"]),
             _opt(st.tuples(INDEX, _opt(st.tuples(INDEX, _opt(st.sampled_from([b"BYTE", b"BIT"]))))))),
    ),
    Spec("bitop", _cmd("BITOP", st.sampled_from([b"AND", b"OR", b"XOR", b"NOT"]), KEY, _some(KEY))),
]

FIELD = st.sampled_from([b"f1", b"f2", b"f3"])
FIELD_EXPIRY_COND = _opt(st.sampled_from([b"NX", b"XX", b"GT", b"LT"]))


def _fields(strategy: st.SearchStrategy[bytes] = FIELD) -> st.SearchStrategy[Any]:
    """`FIELDS numfields field...`, sometimes with a wrong count."""
    return st.lists(strategy, min_size=1, max_size=3).flatmap(
        lambda fields: st.tuples(
            st.just(b"FIELDS"), st.sampled_from([str(len(fields)).encode(), b"0", b"5", b"x"]), st.just(fields)
        )
    )


HASH = [
    Spec("hset", _cmd("HSET", KEY, _pairs(FIELD, VALUE) | MANY.map(lambda names: [(n, n) for n in names]))),
    Spec("hsetnx", _cmd("HSETNX", KEY, FIELD, VALUE)),
    Spec("hmset", _cmd("HMSET", KEY, _pairs(FIELD, VALUE))),
    Spec("hget", _cmd("HGET", KEY, FIELD)),
    Spec("hmget", _cmd("HMGET", KEY, _some(FIELD))),
    Spec("hdel", _cmd("HDEL", KEY, _some(FIELD))),
    Spec("hlen", _cmd("HLEN", KEY)),
    Spec("hstrlen", _cmd("HSTRLEN", KEY, FIELD)),
    Spec("hexists", _cmd("HEXISTS", KEY, FIELD)),
    Spec("hkeys", _cmd("HKEYS", KEY), unordered),
    Spec("hvals", _cmd("HVALS", KEY), unordered),
    Spec("hgetall", _cmd("HGETALL", KEY), unordered_pairs),
    Spec("hincrby", _cmd("HINCRBY", KEY, FIELD, INT)),
    Spec("hincrbyfloat", _cmd("HINCRBYFLOAT", KEY, FIELD, FLOAT)),
    Spec("hrandfield", _cmd("HRANDFIELD", KEY, _opt(st.tuples(COUNT, _opt(st.just(b"WITHVALUES"))))), shape),
    Spec("hexpire", _cmd("HEXPIRE", KEY, SECONDS, FIELD_EXPIRY_COND, _fields())),
    Spec("hpexpire", _cmd("HPEXPIRE", KEY, MILLIS, FIELD_EXPIRY_COND, _fields())),
    Spec("hexpireat", _cmd("HEXPIREAT", KEY, UNIX_S, FIELD_EXPIRY_COND, _fields())),
    Spec("hpexpireat", _cmd("HPEXPIREAT", KEY, UNIX_MS, FIELD_EXPIRY_COND, _fields())),
    Spec("hpersist", _cmd("HPERSIST", KEY, _fields())),
    Spec("httl", _cmd("HTTL", KEY, _fields()), each_within(1)),
    Spec("hpttl", _cmd("HPTTL", KEY, _fields()), each_within(1000)),
    Spec("hexpiretime", _cmd("HEXPIRETIME", KEY, _fields()), each_within(1)),
    Spec("hpexpiretime", _cmd("HPEXPIRETIME", KEY, _fields()), each_within(1000)),
]

SCORE = st.sampled_from([b"0", b"1", b"-1", b"1.5", b"2", b"+inf", b"-inf", b"1e3", b"nan", b"x", b""])
SCORE_RANGE = st.sampled_from([b"-inf", b"+inf", b"0", b"1", b"(1", b"(-1", b"2.5", b"x", b"((1"])
LEX_RANGE = st.sampled_from([b"-", b"+", b"[a", b"(b", b"[1", b"(", b"c"])
WITHSCORES = _opt(st.just(b"WITHSCORES"))
LIMIT = _opt(st.tuples(st.just(b"LIMIT"), INDEX, COUNT))
AGGREGATE = _opt(st.tuples(st.just(b"AGGREGATE"), st.sampled_from([b"SUM", b"MIN", b"MAX", b"x"])))
ZADD_FLAGS = st.lists(st.sampled_from([b"NX", b"XX", b"GT", b"LT", b"CH", b"INCR"]), max_size=2, unique=True)


def _numkeys() -> st.SearchStrategy[Any]:
    """`numkeys key...`, sometimes with a count that does not match."""
    return _some(KEY).flatmap(
        lambda keys: st.tuples(st.sampled_from([str(len(keys)).encode(), b"0", b"x"]), st.just(keys))
    )


def _weights() -> st.SearchStrategy[Any]:
    return _opt(st.tuples(st.just(b"WEIGHTS"), _some(st.sampled_from([b"1", b"2", b"-1", b"0.5", b"x"]))))


ZSET = [
    Spec("zadd", _cmd("ZADD", KEY, ZADD_FLAGS, _pairs(SCORE, MEMBER) | MANY.map(lambda ms: [(b"1", m) for m in ms]))),
    Spec("zincrby", _cmd("ZINCRBY", KEY, SCORE, MEMBER)),
    Spec("zcard", _cmd("ZCARD", KEY)),
    Spec("zscore", _cmd("ZSCORE", KEY, MEMBER)),
    Spec("zmscore", _cmd("ZMSCORE", KEY, _some(MEMBER))),
    Spec("zrank", _cmd("ZRANK", KEY, MEMBER, _opt(st.just(b"WITHSCORE")))),
    Spec("zrevrank", _cmd("ZREVRANK", KEY, MEMBER, _opt(st.just(b"WITHSCORE")))),
    Spec("zrem", _cmd("ZREM", KEY, _some(MEMBER))),
    Spec("zcount", _cmd("ZCOUNT", KEY, SCORE_RANGE, SCORE_RANGE)),
    Spec("zlexcount", _cmd("ZLEXCOUNT", KEY, LEX_RANGE, LEX_RANGE)),
    Spec(
        "zrange",
        _cmd("ZRANGE", KEY, st.one_of(st.tuples(INDEX, INDEX), st.tuples(SCORE_RANGE, SCORE_RANGE, st.just(b"BYSCORE")),
                                       st.tuples(LEX_RANGE, LEX_RANGE, st.just(b"BYLEX"))),
             _opt(st.just(b"REV")), LIMIT, WITHSCORES),
    ),
    Spec("zrangebyscore", _cmd("ZRANGEBYSCORE", KEY, SCORE_RANGE, SCORE_RANGE, WITHSCORES, LIMIT)),
    Spec("zrevrangebyscore", _cmd("ZREVRANGEBYSCORE", KEY, SCORE_RANGE, SCORE_RANGE, WITHSCORES, LIMIT)),
    Spec("zrangebylex", _cmd("ZRANGEBYLEX", KEY, LEX_RANGE, LEX_RANGE, LIMIT)),
    Spec("zrevrangebylex", _cmd("ZREVRANGEBYLEX", KEY, LEX_RANGE, LEX_RANGE, LIMIT)),
    Spec("zrevrange", _cmd("ZREVRANGE", KEY, INDEX, INDEX, WITHSCORES)),
    Spec("zrangestore", _cmd("ZRANGESTORE", KEY, KEY, INDEX, INDEX)),
    Spec("zremrangebyrank", _cmd("ZREMRANGEBYRANK", KEY, INDEX, INDEX)),
    Spec("zremrangebyscore", _cmd("ZREMRANGEBYSCORE", KEY, SCORE_RANGE, SCORE_RANGE)),
    Spec("zremrangebylex", _cmd("ZREMRANGEBYLEX", KEY, LEX_RANGE, LEX_RANGE)),
    Spec("zpopmin", _cmd("ZPOPMIN", KEY, _opt(COUNT))),
    Spec("zpopmax", _cmd("ZPOPMAX", KEY, _opt(COUNT))),
    Spec(
        "zmpop",
        _cmd("ZMPOP", _numkeys(), st.sampled_from([b"MIN", b"MAX"]), _opt(st.tuples(st.just(b"COUNT"), COUNT))),
    ),
    Spec("zunion", _cmd("ZUNION", _numkeys(), _weights(), AGGREGATE, WITHSCORES)),
    Spec("zinter", _cmd("ZINTER", _numkeys(), _weights(), AGGREGATE, WITHSCORES)),
    Spec("zdiff", _cmd("ZDIFF", _numkeys(), WITHSCORES)),
    Spec("zunionstore", _cmd("ZUNIONSTORE", KEY, _numkeys(), _weights(), AGGREGATE)),
    Spec("zinterstore", _cmd("ZINTERSTORE", KEY, _numkeys(), _weights(), AGGREGATE)),
    Spec("zdiffstore", _cmd("ZDIFFSTORE", KEY, _numkeys())),
    Spec("zintercard", _cmd("ZINTERCARD", _numkeys(), _opt(st.tuples(st.just(b"LIMIT"), COUNT)))),
    Spec("zrandmember", _cmd("ZRANDMEMBER", KEY, _opt(st.tuples(COUNT, WITHSCORES))), shape),
    # a blocking pop on an empty key waits 10 ms, then both answer with their timeout reply
    Spec("bzpopmin", _cmd("BZPOPMIN", _some(KEY, 2), "0.01")),
]

# SORT: patterns put an element in a key name ("1" -> "k1"), so BY and GET meet the keys
# above. Every request has one deterministic answer on Valkey: numeric orders break ties
# by the element, ALPHA without BY has no ties (no NULs here), and BY nosort only stores
# (a hashtable set's own order is Valkey's hash order; stored, it is sorted).
SORT_PATTERN = st.sampled_from([b"k*", b"k*->f1", b"#", b"nostar", b"k*->"])
SORT_GETS = _some(st.tuples(st.just(b"GET"), SORT_PATTERN), max_size=2, min_size=0)
SORT_ORDER = _opt(st.sampled_from([b"ASC", b"DESC"]))
SORT_BY = _opt(st.tuples(st.just(b"BY"), st.sampled_from([b"k*", b"k*->f1"])))


def _sort_requests(name: str, store: st.SearchStrategy[Any]) -> st.SearchStrategy[Argv]:
    return st.one_of(
        _cmd(name, KEY, SORT_BY, LIMIT, SORT_GETS, SORT_ORDER, store),
        _cmd(name, KEY, LIMIT, SORT_GETS, SORT_ORDER, "ALPHA", store),
    )


SORT_STORE = _opt(st.tuples(st.just(b"STORE"), KEY))
SORT = [
    Spec("sort", _sort_requests("SORT", SORT_STORE)
         | _cmd("SORT", KEY, "BY", "nosort", LIMIT, SORT_GETS, SORT_ORDER, "STORE", KEY)),
    Spec("sort_ro", _sort_requests("SORT_RO", st.none())),
]

# a HyperLogLog past the sparse limit (3000 bytes) becomes dense
HLL_ELEMENTS = st.sampled_from([[b"h%d" % i for i in range(n)] for n in (30, 700, 3000)])

HLL = [
    Spec("pfadd", _cmd("PFADD", KEY, _some(MEMBER, min_size=0) | HLL_ELEMENTS)),
    Spec("pfcount", _cmd("PFCOUNT", _some(KEY))),
    Spec("pfmerge", _cmd("PFMERGE", KEY, _some(KEY, min_size=0))),
    Spec("pfdebug", _cmd("PFDEBUG", st.sampled_from([b"ENCODING", b"TODENSE", b"DECODE", b"GETREG", b"x"]), KEY)),
]

# Geo: positions from a small alphabet (valid, on the edges, out of range, not numbers), so
# searches find members, distances repeat (ties) and errors come up; STOREDIST scores of
# these positions print the same on both servers.
GEO_LON = st.sampled_from([b"0", b"13.361389", b"15.087269", b"15.1", b"-122.27", b"180", b"-180",
                           b"181", b"x", b"1e3"])
GEO_LAT = st.sampled_from([b"0", b"38.115556", b"37.502669", b"37.5", b"37.8", b"85.05112878",
                           b"-85.05112878", b"86", b"nan"])
GEO_UNIT = st.sampled_from([b"m", b"km", b"ft", b"mi", b"KM", b"x"])
GEO_SIZE = st.sampled_from([b"0", b"100", b"200", b"1000", b"20000", b"-1", b"x", b"inf", b"5000"])
GEO_FROM = st.one_of(st.tuples(st.just(b"FROMMEMBER"), MEMBER), st.tuples(st.just(b"FROMLONLAT"), GEO_LON, GEO_LAT))
GEO_POLYGON = st.tuples(
    st.just(b"BYPOLYGON"), st.sampled_from([b"3", b"3", b"2", b"x"]),
    st.sampled_from([(b"10", b"30", b"20", b"30", b"15", b"45"), (b"-130", b"30", b"0", b"0", b"20", b"40")]),
)
# a centre and a circle or a box; a polygon (no centre); now and then both (an error)
GEO_AREA = st.one_of(
    st.tuples(GEO_FROM, st.just(b"BYRADIUS"), GEO_SIZE, GEO_UNIT),
    st.tuples(GEO_FROM, st.just(b"BYBOX"), GEO_SIZE, GEO_SIZE, GEO_UNIT),
    GEO_POLYGON,
    st.tuples(_opt(GEO_FROM), GEO_POLYGON),
)
GEO_COUNT = _opt(st.tuples(st.just(b"COUNT"), st.sampled_from([b"1", b"2", b"3", b"0", b"x"]),
                           _opt(st.just(b"ANY"))))
GEO_WITH = st.lists(st.sampled_from([b"WITHDIST", b"WITHHASH", b"WITHCOORD", b"ASC", b"DESC"]),
                    max_size=3, unique=True)
GEO_STORE = _opt(st.tuples(st.sampled_from([b"STORE", b"STOREDIST"]), KEY))


def _geo_search(name: str, store: st.SearchStrategy[Any]) -> st.SearchStrategy[Argv]:
    """A GEOSEARCH-like request: the source key (after the destination for the STORE form),
    the area, options."""
    return _cmd(name, store, KEY, GEO_AREA, GEO_WITH, GEO_COUNT,
                _opt(st.just(b"STOREDIST")) if name == "GEOSEARCHSTORE" else st.none())


GEO = [
    Spec("geoadd", _cmd("GEOADD", KEY, st.lists(st.sampled_from([b"NX", b"XX", b"CH"]), max_size=2),
                        _some(st.tuples(GEO_LON, GEO_LAT, MEMBER)))),
    Spec("geopos", _cmd("GEOPOS", KEY, _some(MEMBER))),
    Spec("geohash", _cmd("GEOHASH", KEY, _some(MEMBER))),
    Spec("geodist", _cmd("GEODIST", KEY, MEMBER, MEMBER, _opt(GEO_UNIT))),
    Spec("geosearch", _geo_search("GEOSEARCH", st.none())),
    Spec("geosearchstore", _geo_search("GEOSEARCHSTORE", KEY)),
    Spec("georadius", _cmd("GEORADIUS", KEY, GEO_LON, GEO_LAT, GEO_SIZE, GEO_UNIT, GEO_WITH, GEO_COUNT, GEO_STORE)),
    Spec("georadius_ro", _cmd("GEORADIUS_RO", KEY, GEO_LON, GEO_LAT, GEO_SIZE, GEO_UNIT, GEO_WITH, GEO_COUNT)),
    Spec("georadiusbymember", _cmd("GEORADIUSBYMEMBER", KEY, MEMBER, GEO_SIZE, GEO_UNIT, GEO_WITH, GEO_COUNT,
                                   GEO_STORE)),
    Spec("georadiusbymember_ro", _cmd("GEORADIUSBYMEMBER_RO", KEY, MEMBER, GEO_SIZE, GEO_UNIT, GEO_WITH, GEO_COUNT)),
]

# DUMP/RESTORE: payloads that fakekey's DUMP makes (Valkey must take them as fakekey
# does), two with a broken checksum, and garbage. DUMP's own bytes are compared by shape:
# Valkey's can depend on its history (docs/differences.md).


@functools.cache
def _payloads() -> list[bytes]:
    from fakekey.config.settings import Config
    from fakekey.core.client import Client
    from fakekey.net.server import new_state

    state = new_state(Config())
    client = Client(state)
    made = []
    for argv in ([b"SET", b"p", b"abc"], [b"SET", b"p", b"12345"], [b"RPUSH", b"p", b"a", b"b"],
                 [b"SADD", b"p", b"1", b"2"], [b"SADD", b"p", b"a", b"b"], [b"HSET", b"p", b"f", b"v"],
                 [b"ZADD", b"p", b"1", b"a", b"2.5", b"b"], [b"XADD", b"p", b"1-1", b"f", b"v"]):
        state.call(client, [b"DEL", b"p"])
        state.call(client, argv)
        made.append(state.call(client, [b"DUMP", b"p"]))
    broken = [p[:-1] + bytes([p[-1] ^ 1]) for p in made[:2]]
    return made + broken + [b"garbage"]


PAYLOAD = st.deferred(lambda: st.sampled_from(_payloads()))
RESTORE_TTL = st.sampled_from([b"0", b"100000000", b"-1", b"x", b"4102444800000"])
DUMPS = [
    Spec("dump", _cmd("DUMP", KEY), shape),
    Spec("restore", _cmd("RESTORE", KEY, RESTORE_TTL, PAYLOAD, _opt(st.just(b"REPLACE")),
                         _opt(st.just(b"ABSTTL")),
                         _opt(st.tuples(st.just(b"IDLETIME"), st.sampled_from([b"0", b"10", b"-1"]))),
                         _opt(st.tuples(st.just(b"FREQ"), st.sampled_from([b"0", b"255", b"256"]))))),
]

FAMILIES: dict[str, list[Spec]] = {
    "string": STRING,
    "generic": GENERIC,
    "list": LIST,
    "set": SET,
    "bitmap": BITMAP,
    "hash": HASH,
    "zset": ZSET,
    "hll": HLL,
    "dump": DUMPS,
    "sort": SORT,
    "geo": GEO,
}


def is_registered(registry: Any, name: str) -> bool:
    """Whether fakekey implements `name` ("cmd" or "cmd|sub")."""
    parent, _, sub = name.partition("|")
    cmd = registry.lookup(parent.encode())
    if cmd is None:
        return False
    return not sub or sub.encode() in cmd.subcommands


def available(registry: Any, families: Iterable[str] | None = None) -> list[Spec]:
    """The specs of `families` (default: all) whose command fakekey registers."""
    names = FAMILIES if families is None else families
    return [spec for family in names for spec in FAMILIES[family] if is_registered(registry, spec.name)]


def requests(specs: list[Spec]) -> st.SearchStrategy[Argv]:
    """A strategy for requests of any of `specs`."""
    return st.one_of([spec.argv for spec in specs])


def comparison(specs: list[Spec], argv: Argv) -> Compare:
    """How to compare the replies to `argv`, one of the requests of `specs`."""
    by_name = {spec.name: spec.compare for spec in specs}
    name = argv[0].decode().lower()
    if len(argv) > 1:
        sub = f"{name}|{argv[1].decode(errors='replace').lower()}"
        if sub in by_name:
            return by_name[sub]
    return by_name[name]
