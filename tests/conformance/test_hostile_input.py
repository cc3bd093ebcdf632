"""Hostile input that Valkey answers at once: long numeric garbage, huge glob patterns,
counts at the extremes, odd DEBUG SLEEP values. Each request must get Valkey's reply and
get it quickly (the bound is generous: the bugs these guard against took seconds to
minutes). fakekey's own limits (huge random picks, the clock's range) are pinned in
the fakekey_only tests at the end."""

from __future__ import annotations

import time

import pytest

from fakekey.commands.picks import STREAM_ABOVE

QUICK = 3.0  # seconds: generous for a busy machine; the bugs took 10 s to minutes
DIGITS = b"1" * 60_000
LLONG_MAX = 2**63 - 1
LLONG_MIN = -(2**63)
LONG_MAX_HALF = LLONG_MAX // 2

NOT_FLOAT = ("-", b"ERR value is not a valid float")
NOT_INTEGER = ("-", b"ERR value is not an integer or out of range")
MIN_MAX = ("-", b"ERR min or max is not a float")
TIMEOUT_NOT_FLOAT = ("-", b"ERR timeout is not a float or out of range")
TIMEOUT_NOT_INTEGER = ("-", b"ERR timeout is not an integer or out of range")
OUT_OF_RANGE = ("-", b"ERR value is out of range")
LLONG_MIN_REFUSED = (
    "-",
    b"ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807",
)
EMPTY = ("*", [])


def quick(r, *args, again: bool = True):
    """The reply to `args`, which must come within QUICK seconds. A slow answer is asked
    again once (unless `again` is False: a request whose reply changes when repeated): a
    busy machine can stall any request, a request that is slow by itself is slow twice."""
    reply, elapsed = _timed(r, args)
    if elapsed >= QUICK and again:
        reply, elapsed = _timed(r, args)
    assert elapsed < QUICK, (args[0], elapsed)
    return reply


def _timed(r, args):
    start = time.perf_counter()
    reply = r.call(*args)
    return reply, time.perf_counter() - start


# --- numbers ---------------------------------------------------------------------------------


def garbage_cases(bad: bytes) -> list[tuple[tuple, tuple]]:
    """Every numeric argument kind, given `bad`, and Valkey's error for it."""
    return [
        (("ZADD", "z", bad, "m"), NOT_FLOAT),
        (("ZINCRBY", "z", bad, "m"), NOT_FLOAT),
        (("ZUNIONSTORE", "d", "1", "z", "WEIGHTS", bad), ("-", b"ERR weight value is not a float")),
        (("ZRANGEBYSCORE", "z", b"(" + bad, "+inf"), MIN_MAX),
        (("ZCOUNT", "z", "-inf", bad), MIN_MAX),
        (("ZRANGE", "z", bad, "1", "BYSCORE"), MIN_MAX),
        (("INCRBYFLOAT", "f", bad), NOT_FLOAT),
        (("HINCRBYFLOAT", "h", "f", bad), NOT_FLOAT),
        (("BLPOP", "k", bad), TIMEOUT_NOT_FLOAT),
        (("BZPOPMIN", "k", bad), TIMEOUT_NOT_FLOAT),
        (("BLMOVE", "a", "b", "LEFT", "LEFT", bad), TIMEOUT_NOT_FLOAT),
        (("XREAD", "BLOCK", bad, "STREAMS", "s", "$"), TIMEOUT_NOT_INTEGER),
        (("SET", "k", "v", "EX", bad), NOT_INTEGER),
        (("EXPIRE", "k", bad), NOT_INTEGER),
        (("LRANGE", "l", bad, "1"), NOT_INTEGER),
    ]


@pytest.mark.parametrize(
    "bad",
    [DIGITS + b"x", b"-" + DIGITS + b".5x", b"0x" + DIGITS + b"x", b"." + DIGITS + b"e5e"],
    ids=["digits", "signed-fraction", "hex", "exponent"],
)
def test_long_numeric_garbage_is_refused_at_once(r2, bad):
    r2.call("ZADD", "z", "1", "m")
    for args, error in garbage_cases(bad):
        assert quick(r2, *args) == error, args[0]


def test_long_numbers_that_are_numbers(r2):
    zeros = b"0" * 100_000
    assert quick(r2, "ZADD", "z", zeros + b"1", "m", again=False) == (":", 1)
    assert r2.call("ZSCORE", "z", "m") == ("$", b"1")
    assert quick(r2, "ZADD", "z", DIGITS, "m") == NOT_FLOAT  # overflows a double
    assert quick(r2, "ZCOUNT", "z", b"(" + DIGITS, b"(" + DIGITS) == (":", 0)  # +inf: no error
    assert quick(r2, "ZRANGEBYSCORE", "z", b"0." + zeros + b"1", "1") == ("*", [("$", b"m")])


def test_long_double_arguments_stop_at_5119_characters(r2):
    r2.call("RPUSH", "k", "a", "b")
    assert quick(r2, "BLPOP", "k", b"0" * 5119, again=False) == ("*", [("$", b"k"), ("$", b"a")])
    assert quick(r2, "BLPOP", "k", b"0" * 5120) == TIMEOUT_NOT_FLOAT
    assert quick(r2, "BLPOP", "k", b"0." + b"0" * 5116 + b"1") == TIMEOUT_NOT_FLOAT  # underflow
    assert quick(r2, "INCRBYFLOAT", "f", b"0" * 5119) == ("$", b"0")
    assert quick(r2, "INCRBYFLOAT", "f", b"0" * 5120) == NOT_FLOAT
    assert quick(r2, "HINCRBYFLOAT", "h", "f", b"0" * 5120) == NOT_FLOAT


@pytest.mark.parametrize(
    ("timeout", "error"),
    [
        ("1e5000", TIMEOUT_NOT_FLOAT),  # past the long double range
        ("1e4000", ("-", b"ERR timeout is out of range")),
        ("-1e4000", ("-", b"ERR timeout is negative")),
        ("1e-5000", TIMEOUT_NOT_FLOAT),  # underflows to zero
        ("0x1p-16446", TIMEOUT_NOT_FLOAT),
        ("9223372036854775.807", ("-", b"ERR timeout is out of range")),
        ("-inf", ("-", b"ERR timeout is negative")),
        ("nan", TIMEOUT_NOT_FLOAT),
    ],
)
def test_timeout_range(r2, timeout, error):
    assert quick(r2, "BLPOP", "nokey", timeout) == error


def test_tiny_timeouts_that_are_numbers(r2):
    r2.call("RPUSH", "k", *"abcdefgh")  # enough for a retried pop
    for timeout in ("1e-4940", "0x1p-16445", "-0.0001"):
        assert quick(r2, "BLPOP", "k", timeout)[0] == "*", timeout


@pytest.mark.parametrize("name,why", [
    ("maxmemory", b"argument must be a memory value"),
    ("hz", b"argument couldn't be parsed into an integer"),
    ("maxclients", b"argument couldn't be parsed into an integer"),
])
def test_config_set_with_thousands_of_digits(r2, name, why):
    # Python's int() refuses 4300+ digits: the parsers must not hand it such a run
    reply = quick(r2, "CONFIG", "SET", name, "1" * 5000)
    assert reply == ("-", b"ERR CONFIG SET failed (possibly related to argument '" + name.encode()
                     + b"') - " + why)
    assert r2.call("PING") == ("+", b"PONG")


def test_long_stream_ids_are_invalid(r2):
    invalid = ("-", b"ERR Invalid stream ID specified as stream command argument")
    assert quick(r2, "XADD", "s", DIGITS[:5000] + b"-1", "f", "v") == invalid
    assert quick(r2, "XADD", "s", b"1-" + DIGITS[:5000], "f", "v") == invalid
    assert quick(r2, "XRANGE", "s", b" " + DIGITS[:5000], "+") == invalid
    assert quick(r2, "XRANGE", "s", "-", b"0" * 200 + b"1") == invalid


# --- glob patterns ----------------------------------------------------------------------------


def test_long_negated_set_patterns_answer_at_once(r2):
    wide = b"b" * 25_000
    r2.call("SET", wide, "1")
    r2.call("SET", "short", "1")
    assert quick(r2, "KEYS", b"[^a]" * 25_000) == ("*", [("$", wide)])
    assert quick(r2, "KEYS", b"[^a]" * 24_999 + b"a") == EMPTY
    for i in range(8):  # distinct long patterns: nothing kept for good
        pattern = b"[^%d]" % i * 12_500 + b"*"
        assert quick(r2, "SCAN", "0", "MATCH", pattern, "COUNT", "1000") == (
            "*", [("$", b"0"), ("*", [("$", wide)])]
        )


def _star_patterns(n: int) -> dict[str, bytes]:
    return {
        "(a*)n": b"a*" * n,
        "(a*)n a": b"a*" * n + b"a",
        "(*a)n": b"*a" * n,
        "*(a*)n": b"*" + b"a*" * n,
        "*{n}a": b"*" * n + b"a",
        "(a*)n ?": b"a*" * n + b"?",
        "(*a)n **": b"*a" * n + b"**",
    }


# Valkey's matcher recurses once per run of stars and gives up past 1000 of them: the
# keys each pattern finds among a, a*1000, a*1001, a*1002 and a*3000 (by length).
STAR_NESTING = {
    1000: {"(a*)n": [1000, 1001, 1002, 3000], "(a*)n a": [1001, 1002, 3000],
           "(*a)n": [1000, 1001, 1002, 3000], "*(a*)n": [1000, 1001, 1002, 3000],
           "*{n}a": [1, 1000, 1001, 1002, 3000], "(a*)n ?": [1001, 1002, 3000],
           "(*a)n **": [1000, 1001, 1002, 3000]},
    1001: {"(a*)n": [1001, 1002, 3000], "(a*)n a": [], "(*a)n": [], "*(a*)n": [],
           "*{n}a": [1, 1000, 1001, 1002, 3000], "(a*)n ?": [], "(*a)n **": []},
    1002: {"(a*)n": [], "(a*)n a": [], "(*a)n": [], "*(a*)n": [],
           "*{n}a": [1, 1000, 1001, 1002, 3000], "(a*)n ?": [], "(*a)n **": []},
}


@pytest.mark.parametrize("n", sorted(STAR_NESTING))
def test_star_nesting_limit(r2, n):
    for length in (1, 1000, 1001, 1002, 3000):
        r2.call("SET", b"a" * length, "1")
    for name, pattern in _star_patterns(n).items():
        kind, keys = quick(r2, "KEYS", pattern)
        assert kind == "*"
        assert sorted(len(key) for _, key in keys) == STAR_NESTING[n][name], name


def test_many_stars_against_a_long_key(r2):
    r2.call("SET", b"a" * 100_000, "1")
    assert quick(r2, "KEYS", b"*a" * 900 + b"*b") == EMPTY
    assert quick(r2, "KEYS", b"*" + b"[ab]" * 300 + b"c*") == EMPTY
    assert len(quick(r2, "KEYS", b"*" + b"[ab]" * 300 + b"*")[1]) == 1


# --- counts ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "reply"),
    [
        (("SRANDMEMBER", "s", LLONG_MIN), LLONG_MIN_REFUSED),
        (("HRANDFIELD", "h", LLONG_MIN), LLONG_MIN_REFUSED),
        (("ZRANDMEMBER", "z", LLONG_MIN, "WITHSCORES"), LLONG_MIN_REFUSED),
        (("SRANDMEMBER", "s", 2**63), NOT_INTEGER),
        (("HRANDFIELD", "h", -LONG_MAX_HALF - 1, "WITHVALUES"), OUT_OF_RANGE),
        (("HRANDFIELD", "h", LONG_MAX_HALF + 1, "WITHVALUES"), OUT_OF_RANGE),
        (("ZRANDMEMBER", "z", -LLONG_MAX, "WITHSCORES"), OUT_OF_RANGE),
        (("ZRANDMEMBER", "z", LONG_MAX_HALF + 1, "WITHSCORES"), OUT_OF_RANGE),
        (("ZRANDMEMBER", "nokey", -LLONG_MAX, "WITHSCORES"), OUT_OF_RANGE),
        (("SRANDMEMBER", "nokey", -LLONG_MAX), EMPTY),
        (("HRANDFIELD", "nokey", -LLONG_MAX), EMPTY),
        (("ZRANDMEMBER", "nokey", -(2**31), "WITHSCORES"), EMPTY),
        (("SRANDMEMBER", "str", -(2**31)), ("-", b"WRONGTYPE Operation against a key holding the wrong kind of value")),
        (("ZRANDMEMBER", "z", -(2**31), "BAD"), ("-", b"ERR syntax error")),
        (("SRANDMEMBER", "s", LLONG_MAX), ("*", [("$", b"a"), ("$", b"b"), ("$", b"c")])),
    ],
)
def test_random_member_count_limits(r2, args, reply):
    r2.call("SADD", "s", "a", "b", "c")
    r2.call("HSET", "h", "a", "1")
    r2.call("ZADD", "z", "1", "a")
    r2.call("SET", "str", "x")
    got = quick(r2, *args)
    if args[:2] == ("SRANDMEMBER", "s") and got[0] == "*":
        got = ("*", sorted(got[1]))
    assert got == reply


# --- DEBUG SLEEP -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "seconds", ["inf", "-inf", "nan", "1e400", "-1", "-0.5", "1e13", "0x1p60", "abc", "  0"]
)
def test_debug_sleep_that_does_not_sleep(r2, seconds):
    """strtod, times 1e6 into a long long (NaN and overflow become LLONG_MIN), and a
    negative time makes nanosleep fail at once."""
    assert quick(r2, "DEBUG", "SLEEP", seconds) == ("+", b"OK")


def test_debug_sleep_reads_a_prefix(r2):
    start = time.perf_counter()
    assert r2.call("DEBUG", "SLEEP", "0.05xyz") == ("+", b"OK")
    assert time.perf_counter() - start >= 0.05


# --- fakekey's own bounds ------------------------------------------------------------------------


# --- big replies of repeated random picks ----------------------------------------------------
# fakekey streams a reply of more than STREAM_ABOVE picks (fakekey/resp/streaming.py); Valkey
# builds it whole. A client sees the same reply either way.

BIG = STREAM_ABOVE + 5_000


def fill_pick_sources(r) -> None:
    r.call("SADD", "s", "a", "b", "c")
    r.call("HSET", "h", "a", "1", "b", "2")
    r.call("ZADD", "z", "1", "a", "2.5", "b")


def test_big_repeated_picks_arrive_whole_and_in_order(r, proto):
    fill_pick_sources(r)
    replies = r.pipeline(("SRANDMEMBER", "s", -BIG), ("HRANDFIELD", "h", -BIG, "WITHVALUES"),
                         ("ZRANDMEMBER", "z", -BIG, "WITHSCORES"), ("PING",))
    members, fields, pairs, pong = replies
    assert members[0] == "*" and len(members[1]) == BIG
    assert {m for _, m in members[1]} <= {b"a", b"b", b"c"}
    if proto == 2:
        assert len(fields[1]) == 2 * BIG and len(pairs[1]) == 2 * BIG
        assert {(f[1], v[1]) for f, v in zip(fields[1][::2], fields[1][1::2])} <= {(b"a", b"1"), (b"b", b"2")}
        assert {(m[1], x[1]) for m, x in zip(pairs[1][::2], pairs[1][1::2])} <= {(b"a", b"1"), (b"b", b"2.5")}
    else:
        assert len(fields[1]) == BIG and len(pairs[1]) == BIG
        assert {(p[1][0][1], p[1][1][1]) for p in fields[1]} <= {(b"a", b"1"), (b"b", b"2")}
        assert {(p[1][0], p[1][1]) for p in pairs[1]} <= {(("$", b"a"), (",", b"1")), (("$", b"b"), (",", b"2.5"))}
    assert pong == ("+", b"PONG")  # the request behind a big reply is answered after it


def test_a_reply_past_the_normal_output_limit_drops_the_client(target, r2):
    """Valkey builds the reply, passes the hard limit and frees the client: the reply
    never arrives whole (fakekey: it stops sending past the limit)."""
    fill_pick_sources(r2)
    before = _stat(r2, "client_output_buffer_limit_disconnections")
    assert r2.call("CONFIG", "SET", "client-output-buffer-limit", "normal 1mb 0 0") == ("+", b"OK")
    try:
        victim = target.raw(2)
        victim.send("SRANDMEMBER", "s", -2_000_000)  # about 14 MB of reply
        with pytest.raises((ConnectionError, OSError)):
            for _ in range(2_000_001):
                victim.read()
        victim.close()
    finally:
        r2.call("CONFIG", "SET", "client-output-buffer-limit", "normal 0 0 0")
    assert _stat(r2, "client_output_buffer_limit_disconnections") == before + 1


def _stat(r, name: str) -> int:
    info = r.call("INFO", "stats")[1].decode()
    return int(next(line.split(":")[1] for line in info.splitlines() if line.startswith(name + ":")))


@pytest.mark.fakekey_only
@pytest.mark.parametrize(
    "args, length",
    [
        (("SRANDMEMBER", "s", -(2**31) + 1), 2**31 - 1),
        (("HRANDFIELD", "h", -9_999_999_999), 9_999_999_999),
        (("HRANDFIELD", "h", -(2**32), "WITHVALUES"), 2 * 2**32),
        (("ZRANDMEMBER", "z", -9_999_999_999, "WITHSCORES"), 2 * 9_999_999_999),
        (("ZRANDMEMBER", "z", -LLONG_MAX), LLONG_MAX),
    ],
)
def test_a_huge_reply_streams_while_others_are_served(target, r2, args, length):
    """Counts Valkey accepts and would take minutes and gigabytes to answer: the reply
    starts at once and goes on while another client is served."""
    fill_pick_sources(r2)
    hostile = target.raw(2)
    hostile.send(*args)
    assert hostile.peek_line() == b"*%d" % length
    for _ in range(5):
        start = time.perf_counter()
        assert r2.call("PING") == ("+", b"PONG")
        assert time.perf_counter() - start < 0.5
    hostile.close()
    assert r2.call("PING") == ("+", b"PONG")


TOO_MANY = ("-", f"ERR value is out of range, fakekey answers at most {STREAM_ABOVE} repeated "
                 "picks inside a transaction or a script".encode())


@pytest.mark.fakekey_only
def test_a_huge_pick_inside_exec_or_a_script_is_refused(r2):
    """A reply that is part of EXEC's or a script's cannot be streamed: past the bound
    it is refused, in Valkey's words for a count out of range."""
    fill_pick_sources(r2)
    r2.call("MULTI")
    r2.call("SRANDMEMBER", "s", -BIG)
    r2.call("SRANDMEMBER", "s", -3)
    kind, replies = r2.call("EXEC")
    assert kind == "*" and replies[0] == TOO_MANY and len(replies[1][1]) == 3
    assert quick(r2, "EVAL", "return redis.pcall('HRANDFIELD', 'h', ARGV[1])", 0, -BIG) == TOO_MANY


@pytest.mark.fakekey_only
def test_clock_stops_at_the_latest_time_pexpireat_takes(r2):
    assert r2.call("FAKEKEY.CLOCK", "SET", LLONG_MAX) == ("+", b"OK")
    assert r2.call("FAKEKEY.CLOCK", "GET") == (":", LLONG_MAX)
    past = ("-", b"ERR clock time is out of range, it must be at most 9223372036854775807 ms")
    assert r2.call("FAKEKEY.CLOCK", "ADVANCE", "1") == past
    assert r2.call("FAKEKEY.CLOCK", "ADVANCE", "0") == ("+", b"OK")
    assert r2.call("FAKEKEY.CLOCK", "SET", 2**63) == NOT_INTEGER
    # everything derived from the clock stays in range: ids, deadlines, TTLs, TIME
    assert r2.call("XADD", "s", "*", "f", "v") == ("$", b"9223372036854775807-0")
    assert quick(r2, "BLPOP", "nokey", "1") == ("-", b"ERR timeout is out of range")
    assert r2.call("SET", "k", "v", "EX", "1") == ("-", b"ERR invalid expire time in 'set' command")
    seconds, micros = r2.call("TIME")[1]
    assert seconds == ("$", b"%d" % (LLONG_MAX // 1000))
    assert micros == ("$", b"%d" % (LLONG_MAX % 1000 * 1000))


@pytest.mark.fakekey_only
def test_clock_advance_checks_the_sum(r2):
    assert r2.call("FAKEKEY.CLOCK", "SET", LLONG_MAX - 10) == ("+", b"OK")
    assert r2.call("FAKEKEY.CLOCK", "ADVANCE", "10") == ("+", b"OK")
    assert r2.call("FAKEKEY.CLOCK", "SET", "1000") == ("+", b"OK")
    assert r2.call("FAKEKEY.CLOCK", "ADVANCE", LLONG_MAX)[0] == "-"
    assert r2.call("FAKEKEY.CLOCK", "GET") == (":", 1000)
