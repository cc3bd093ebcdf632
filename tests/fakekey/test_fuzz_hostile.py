"""Hostile-input fuzzing: long numeric arguments with a bad tail, long and nested glob
patterns, counts at the extremes. Each request must be answered within a bound, and while
it runs the server must keep serving another client: a PING sent right behind the hostile
request (the server is single-threaded, so it waits for it) must come back in time too.

Also checks the glob matcher's paths for long patterns (bitsets over masks, never a
compiled expression) against the literal model of Valkey's stringmatchlen."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fakekey.codecs import glob as fglob
from fakekey.codecs.glob import glob_match
from fakekey.commands.args import parse_float, parse_timeout
from fakekey.commands.picks import STREAM_ABOVE
from fakekey.commands.zsets import parse_range_float
from fakekey.net.server import Server
from fakekey.resp.replies import ReplyError
from fakekey.testing.raw import RawClient, encode_command

sys.path.insert(0, str(Path(__file__).parent))
from test_glob_model import model_match  # noqa: E402

BOUND = 2.0  # seconds for the hostile request and the PING behind it: generous, not tight

LLONG_MIN, LLONG_MAX = -(2**63), 2**63 - 1
EXTREME_COUNTS = [LLONG_MIN, LLONG_MAX, LLONG_MIN + 1, -(2**31), 2**31, 2**31 - 1, -(2**32),
                  2**32, -(2**32) + 1, 2**63, -(2**63) - 1, 0, -1, 1]


class Harness:
    """A private server holding a few keys of each type, a hostile client and a watcher."""

    def __init__(self) -> None:
        self.server = Server().start()
        self.errors: list[dict[str, Any]] = []
        loop = self.server._loop
        assert loop is not None
        loop.set_exception_handler(lambda _loop, context: self.errors.append(context))
        self.hostile = RawClient(self.server.host, self.server.port, timeout=30)
        self.watcher = RawClient(self.server.host, self.server.port, timeout=30)
        for command in [
            ("RPUSH", "l", "a", "b", "c"), ("SADD", "s", "a", "b", "c"),
            ("HSET", "h", "a", "1", "b", "2"), ("ZADD", "z", "1", "a", "2", "b"),
            ("XADD", "x", "1-1", "f", "v"), ("SET", "str", "hello"),
            ("SET", b"k" * 20_000, "long"), ("SET", b"ab" * 5_000, "long"),
        ]:
            assert self.hostile.call(*command)[0] in (":", "+", "$")

    def answered_quickly(self, *args: Any) -> Any:
        """Send `args`, then a PING from the watcher: both replies within BOUND. A slow
        answer is asked again once: a busy machine can stall any request, but a request
        that is slow by itself is slow twice (these requests change nothing, or the same
        thing again)."""
        reply, elapsed = self._with_ping(args)
        if elapsed >= BOUND:
            reply, elapsed = self._with_ping(args)
        assert elapsed < BOUND, (args[0], elapsed)
        assert not self.errors, self.errors
        return reply

    def _with_ping(self, args: tuple[Any, ...]) -> tuple[Any, float]:
        start = time.perf_counter()
        self.hostile.send_raw(encode_command(*args))
        assert self.watcher.call("PING") == ("+", b"PONG")
        header = self.hostile.peek_line()
        if header[:1] == b"*" and int(header[1:]) > STREAM_ABOVE * 2:
            # a streamed reply (fakekey/resp/streaming.py): the PING was served while it went
            # on; the hostile client leaves instead of reading gigabytes
            elapsed = time.perf_counter() - start
            self.hostile.close()
            self.hostile = RawClient(self.server.host, self.server.port, timeout=30)
            return ("*", int(header[1:])), elapsed
        reply = self.hostile.read()
        return reply, time.perf_counter() - start

    def stop(self) -> None:
        self.hostile.close()
        self.watcher.close()
        self.server.stop()
        loop = self.server._loop
        assert loop is not None
        loop.set_exception_handler(None)  # the loop is every in-process server's: as it was


@pytest.fixture(scope="module")
def harness() -> Iterator[Harness]:
    h = Harness()
    yield h
    h.stop()


FIXTURE_OK = settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

# --- numbers ---------------------------------------------------------------------------------

# A bad tail makes every whole-string parser refuse the argument (so no timeout is valid
# and nothing blocks); prefixes keep each parser's other forms in play. No NUL: a score
# range is read as a C string, which a NUL ends; no bare "e": after "0x" it is a digit.
TAIL = st.sampled_from([b"x", b" ", b"..", b"e+", b"E-", b"p", b"p+", b"+", b"-", b"(", b"inf",
                        b"nan", b"\xff"])
PREFIX = st.sampled_from([b"", b"-", b"+", b"0x", b".", b"0.", b"1e", b" "])
DIGIT_RUN = st.builds(lambda d, n: d * n, st.sampled_from([b"0", b"1", b"9", b"01"]),
                      st.integers(1_000, 40_000))
LONG_BAD_NUMBER = st.builds(lambda p, d, t: p + d + t, PREFIX, DIGIT_RUN, TAIL)

# Where a number goes, for every numeric argument kind.
NUMERIC_SLOTS = [
    lambda n: ("ZADD", "z", n, "m"),
    lambda n: ("ZINCRBY", "z", n, "m"),
    lambda n: ("ZUNIONSTORE", "d", "1", "z", "WEIGHTS", n),
    lambda n: ("ZRANGEBYSCORE", "z", b"(" + n, "+inf"),
    lambda n: ("ZCOUNT", "z", "-inf", n),
    lambda n: ("ZRANGE", "z", n, "1", "BYSCORE"),
    lambda n: ("INCRBYFLOAT", "f", n),
    lambda n: ("HINCRBYFLOAT", "h", "f", n),
    lambda n: ("BLPOP", "nokey", n),
    lambda n: ("BZPOPMIN", "nokey", n),
    lambda n: ("BLMOVE", "nokey", "b", "LEFT", "LEFT", n),
    lambda n: ("XREAD", "BLOCK", n, "STREAMS", "x", "$"),
    lambda n: ("SET", "k", "v", "EX", n),
    lambda n: ("EXPIRE", "str", n),
    lambda n: ("LRANGE", "l", n, "1"),
    lambda n: ("SRANDMEMBER", "s", n),
    lambda n: ("GETRANGE", "str", "0", n),
    lambda n: ("INCRBY", "counter", n),
]


@FIXTURE_OK
@given(number=LONG_BAD_NUMBER, slot=st.sampled_from(NUMERIC_SLOTS))
def test_long_bad_numbers_are_refused_quickly(harness, number, slot):
    kind, _ = harness.answered_quickly(*slot(number))
    assert kind == "-"


def refuse_with_every_parser(number: bytes) -> float:
    """Seconds the number parsers take to refuse `number` (each must refuse it)."""
    start = time.perf_counter()
    for parse in (parse_float, parse_range_float, lambda raw: parse_timeout(raw, 0)):
        with pytest.raises(ReplyError):
            parse(number)
    return time.perf_counter() - start


@given(number=LONG_BAD_NUMBER)
def test_number_parsers_are_linear(number):
    """The parsers themselves, without the network: each refuses at once (timed again
    once when slow: a busy machine stalls anything, a quadratic parser is slow twice)."""
    elapsed = refuse_with_every_parser(number)
    if elapsed >= BOUND:
        elapsed = refuse_with_every_parser(number)
    assert elapsed < BOUND


# --- glob patterns ----------------------------------------------------------------------------

UNIT = st.sampled_from([b"*", b"?", b"[^a]", b"[a-z]", b"a", b"b", b"\\*", b"[", b"]", b"^",
                        b"[\\]]", b"[ab", b"k", b"*a", b"*k*"])
LONG_PATTERN = st.builds(lambda units, n, tail: b"".join(units) * n + tail,
                         st.lists(UNIT, min_size=1, max_size=4), st.integers(1, 6_000),
                         st.sampled_from([b"", b"*", b"b", b"?"]))


@FIXTURE_OK
@given(pattern=LONG_PATTERN, where=st.sampled_from(["KEYS", "SCAN", "HSCAN", "PUBSUB"]))
def test_long_and_nested_patterns_answer_quickly(harness, pattern, where):
    args: tuple[Any, ...] = {
        "KEYS": ("KEYS", pattern),
        "SCAN": ("SCAN", "0", "MATCH", pattern, "COUNT", "100"),
        "HSCAN": ("HSCAN", "h", "0", "MATCH", pattern),
        "PUBSUB": ("PUBSUB", "CHANNELS", pattern),
    }[where]
    kind, _ = harness.answered_quickly(*args)
    assert kind == "*"


PATTERN_BYTES = b"aAb*?[]^\\-\x80"
TEXT_BYTES = b"aAb*?[]^\\-\x80"


def from_alphabet(alphabet: bytes, min_size: int, max_size: int) -> st.SearchStrategy[bytes]:
    return st.lists(st.sampled_from(alphabet), min_size=min_size, max_size=max_size).map(bytes)


@pytest.fixture
def long_pattern_paths(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Make every pattern take the long-pattern paths (masks and bitsets, no regex)."""
    monkeypatch.setattr(fglob, "_REGEX_MAX_TOKENS", 0)
    fglob.clear_cache()
    yield
    fglob.clear_cache()


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(from_alphabet(PATTERN_BYTES, 0, 14), from_alphabet(TEXT_BYTES, 0, 12), st.booleans())
def test_long_pattern_paths_match_the_model(long_pattern_paths, pattern, text, nocase):
    fglob.clear_cache()
    assert glob_match(pattern, text, nocase) == model_match(pattern, text, nocase)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(from_alphabet(b"ab?*[]^", 1, 20), from_alphabet(b"ab", 60, 400), st.booleans())
def test_windowed_search_on_long_texts_matches_the_model(long_pattern_paths, pattern, text, nocase):
    """Texts longer than a search window, so the doubling windows are crossed."""
    fglob.clear_cache()
    assert glob_match(pattern, text, nocase) == model_match(pattern, text, nocase)


@given(from_alphabet(b"ab?*[]^", 1, 20), from_alphabet(b"ab", 60, 400))
def test_short_pattern_paths_agree_on_long_texts(pattern, text):
    assert glob_match(pattern, text) == model_match(pattern, text)


def test_pattern_cache_is_bounded_by_bytes():
    for i in range(200):
        fglob.compile_glob(b"[^%d]*" % i * 200)  # 200 patterns of ~1.2 KB
    kept = sum(len(pattern) for pattern, _ in fglob._cache)
    assert kept <= fglob._CACHE_BUDGET
    huge = b"[^a]" * 10_000
    fglob.compile_glob(huge)
    assert (huge, False) not in fglob._cache  # past the per-pattern size: never kept


def test_nesting_limit_on_star_runs():
    text = b"a" * 3000
    assert glob_match(b"a*" * 1000 + b"a", text)
    assert not glob_match(b"a*" * 1001 + b"a", text)  # something after the 1001st run
    assert glob_match(b"a*" * 1001, text)  # the 1001st run is last: no recursion
    assert glob_match(b"*" * 5000 + b"a", text)  # one run of stars


# --- counts ----------------------------------------------------------------------------------

COUNT_SLOTS = [
    lambda c: ("SRANDMEMBER", "s", c),
    lambda c: ("HRANDFIELD", "h", c),
    lambda c: ("HRANDFIELD", "h", c, "WITHVALUES"),
    lambda c: ("ZRANDMEMBER", "z", c),
    lambda c: ("ZRANDMEMBER", "z", c, "WITHSCORES"),
    lambda c: ("LRANGE", "l", "0", c),
    lambda c: ("LRANGE", "l", c, c),
    lambda c: ("LPOS", "l", "a", "RANK", c, "COUNT", c, "MAXLEN", c),
    lambda c: ("LINDEX", "l", c),
    lambda c: ("ZRANGE", "z", "0", c),
    lambda c: ("ZRANGEBYSCORE", "z", "-inf", "+inf", "LIMIT", c, c),
    lambda c: ("XRANGE", "x", "-", "+", "COUNT", c),
    lambda c: ("XREAD", "COUNT", c, "STREAMS", "x", "0"),
    lambda c: ("SCAN", "0", "COUNT", c),
    lambda c: ("SSCAN", "s", "0", "COUNT", c),
    lambda c: ("ZSCAN", "z", "0", "COUNT", c),
    lambda c: ("GETRANGE", "str", c, c),
    lambda c: ("BITCOUNT", "str", c, c),
    lambda c: ("BITPOS", "str", "1", c, c),
    lambda c: ("SPOP", "nokey", c),
    lambda c: ("LPOP", "nokey", c),
    lambda c: ("ZREMRANGEBYRANK", "nokey", c, c),
    lambda c: ("SETRANGE", "str", c, ""),
    lambda c: ("OBJECT", "FREQ", c),
    lambda c: ("SELECT", c),
]


@FIXTURE_OK
@given(count=st.sampled_from(EXTREME_COUNTS), slot=st.sampled_from(COUNT_SLOTS))
def test_extreme_counts_answer_quickly(harness, count, slot):
    harness.answered_quickly(*slot(count))
    harness.answered_quickly("SELECT", "0")


def test_every_extreme_count_in_every_slot(harness):
    """The whole grid once, whatever the profile draws."""
    for slot in COUNT_SLOTS:
        for count in EXTREME_COUNTS:
            harness.answered_quickly(*slot(count))
    harness.answered_quickly("SELECT", "0")
