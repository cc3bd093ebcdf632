"""Sorted-set commands, the blocking pops (BZPOPMIN, BZPOPMAX, BZMPOP) at the end.

Parsing follows Valkey's order of checks, so the same bad request gets the same error:
options, then range arguments, then the key's type. Two pieces are shared with
the blocking pops: `parse_mpop` (the `numkeys key... MIN|MAX [COUNT n]` tail) and
`pop` / `pop_first_nonempty` (remove from a zset through the write funnel).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, Final

from fakekey.commands.args import (
    SYNTAX,
    WRONGTYPE,
    is_strtod_form,
    parse_float,
    parse_int,
    parse_timeout,
    try_int,
    wrong_args,
)
from fakekey.commands.picks import PickChunk, draws, repeated_picks
from fakekey.commands.scan import at_start, bucket_page, hash_order, parse_cursor, parse_scan_options
from fakekey.core.client import Client
from fakekey.core.dirty import ELEMENTS_CHANGED, INTEGER_REPLY, POPPED_MANY
from fakekey.core.registry import command, keys_numkeys, keys_range
from fakekey.resp.encoder import format_double
from fakekey.resp.replies import NULL_ARRAY, ReplyError
from fakekey.types.zset import (
    LEX_MAX,
    LEX_MIN,
    LexItem,
    LexRange,
    Pair,
    Range,
    ScoreRange,
    ZLimits,
    ZSet,
)

G = "sorted-set"
ACL = "sortedset"
LONG_MAX = 2**63 - 1

MIN_MAX_FLOAT = ReplyError("ERR min or max is not a float")
MIN_MAX_LEX = ReplyError("ERR min or max not valid string range item")
NAN_SCORE = ReplyError("ERR resulting score is not a number (NaN)")
XX_AND_NX = ReplyError("ERR XX and NX options at the same time are not compatible")
GT_LT_NX = ReplyError("ERR GT, LT, and/or NX options at the same time are not compatible")
INCR_ONE_PAIR = ReplyError("ERR INCR option supports a single increment-element pair")
LIMIT_NEEDS_RANGE = ReplyError(
    "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX"
)
WITHSCORES_BYLEX = ReplyError(
    "ERR syntax error, WITHSCORES not supported in combination with BYLEX"
)
MUST_BE_POSITIVE = ReplyError("ERR value is out of range, must be positive")
NUMKEYS = ReplyError("ERR numkeys should be greater than 0")
COUNT_POSITIVE = ReplyError("ERR count should be greater than 0")
WEIGHT_NOT_FLOAT = ReplyError("ERR weight value is not a float")
LIMIT_NEGATIVE = ReplyError("ERR LIMIT can't be negative")
OUT_OF_RANGE = ReplyError("ERR value is out of range")
RANDMEMBER_RANGE = ReplyError(
    "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807"
)



# --- shared helpers ------------------------------------------------------------------------


def zset_limits(c: Client) -> ZLimits:
    """The listpack thresholds as CONFIG has them now (kept by Config between changes)."""
    return c.state.config.zset_limits()


def lookup_zset(c: Client, key: bytes) -> ZSet | None:
    return c.db.lookup_type(key, ZSet)


def store(c: Client, dest: bytes, pairs: list[Pair], event: str) -> int:
    """A *STORE result replaces `dest` (TTL cleared); an empty result deletes it."""
    if not pairs:
        c.db.delete(dest)
        return 0
    c.db.set_value(dest, ZSet.from_pairs(pairs, zset_limits(c)), event=event, klass="z")
    return len(pairs)


def pairs_reply(c: Client, pairs: list[Pair], withscores: bool = True) -> list[Any]:
    """Members, or with scores: a flat array in RESP2, [member, score] pairs in RESP3."""
    if not withscores:
        return [member for member, _ in pairs]
    if c.protocol == 2:
        return [item for pair in pairs for item in pair]
    return [[member, score] for member, score in pairs]


def columns_reply(c: Client, scores: list[float], members: list[bytes]) -> list[Any]:
    """`pairs_reply` with scores, of members and their scores given side by side."""
    if c.protocol == 2:
        flat: list[Any] = [None] * (2 * len(members))
        flat[0::2] = members
        flat[1::2] = scores
        return flat
    return [[members[i], scores[i]] for i in range(len(members))]


def nested_pairs(pairs: list[Pair]) -> list[list[Any]]:
    """[member, score] pairs in both protocols (ZMPOP, BZMPOP, RESP3 ZPOPMIN with count)."""
    return [[member, score] for member, score in pairs]


def parse_positive(raw: bytes, error: ReplyError = MUST_BE_POSITIVE) -> int:
    """getPositiveLongFromObjectOrReply: 0..LONG_MAX, any failure is `error`."""
    value = parse_int(raw, error)
    if value < 0:
        raise error
    return value


# The range ends most requests send, as strtod reads them.
_COMMON_ENDS = {b"-inf": -math.inf, b"+inf": math.inf, b"inf": math.inf, b"0": 0.0}


def parse_range_float(raw: bytes) -> float:
    """One end of a score range after its `(`: strtod over the whole argument, where an
    empty string is 0 and overflow/underflow give inf/0 (no ERANGE check)."""
    value = _COMMON_ENDS.get(raw)
    if value is not None:
        return value
    if raw.isdigit():  # plain digits: float() reads them as strtod does
        return float(raw)
    body = raw.split(b"\0", 1)[0]  # the C string ends at a NUL
    if not body:
        return 0.0
    if not is_strtod_form(body):
        raise MIN_MAX_FLOAT
    return float(body)


def parse_score_range(lo: bytes, hi: bytes) -> ScoreRange:
    """zslParseRange: `(` makes an end exclusive; any failure is 'min or max is not a float'."""
    minex, maxex = lo[:1] == b"(", hi[:1] == b"("
    low = parse_range_float(lo[1:] if minex else lo)
    high = parse_range_float(hi[1:] if maxex else hi)
    return ScoreRange(low, high, minex, maxex)


def parse_lex_item(raw: bytes) -> tuple[LexItem, bool]:
    """`[x` inclusive, `(x` exclusive, `-` and `+` the ends (always exclusive)."""
    first = raw[:1]
    if first == b"+" and len(raw) == 1:
        return LEX_MAX, True
    if first == b"-" and len(raw) == 1:
        return LEX_MIN, True
    if first == b"(":
        return raw[1:], True
    if first == b"[":
        return raw[1:], False
    raise MIN_MAX_LEX


def parse_lex_range(lo: bytes, hi: bytes) -> LexRange:
    low, minex = parse_lex_item(lo)
    high, maxex = parse_lex_item(hi)
    return LexRange(low, minex, high, maxex)


def clamp_rank_range(start: int, end: int, size: int) -> tuple[int, int] | None:
    """Negative indexes from the end, clamped; None when the range is empty."""
    if start < 0:
        start += size
    if end < 0:
        end += size
    start = max(start, 0)
    if start > end or start >= size:
        return None
    return start, min(end, size - 1)


# --- ZADD / ZINCRBY ------------------------------------------------------------------------

NX: Final = 1
XX: Final = 2
GT: Final = 4
LT: Final = 8
INCR: Final = 16
CH: Final = 32
_ZADD_OPTIONS: Final = {b"NX": NX, b"XX": XX, b"GT": GT, b"LT": LT, b"INCR": INCR, b"CH": CH}


def zadd_options(argv: list[bytes], flags: int) -> tuple[int, int]:
    """The leading options, checked for conflicts; answers (flags, first score index)."""
    i = 2
    while i < len(argv):
        bit = _ZADD_OPTIONS.get(argv[i].upper())
        if bit is None:
            break
        flags |= bit
        i += 1
    elements = len(argv) - i
    if elements % 2 or not elements:
        raise SYNTAX
    if flags & NX and flags & XX:
        raise XX_AND_NX
    if (flags & NX and flags & (GT | LT)) or (flags & GT and flags & LT):
        raise GT_LT_NX
    if flags & INCR and elements > 2:
        raise INCR_ONE_PAIR
    return flags, i


def parse_score(raw: bytes) -> float:
    """A ZADD score: plain digits (the common form) go straight to float(), whose
    result is then exact and in range, and so does a short plain decimal; anything else
    through getDoubleFromObject's checks."""
    digits = _digits_value(raw)
    if digits >= 0:
        return float(digits)
    value = try_int(raw) if len(raw) < 16 else None  # below 2**53: exact as a float
    if value is not None:
        return float(value)
    if _short_decimal(raw):
        return float(raw)
    return parse_float(raw)


def _digits_value(raw: bytes) -> int:
    """The value of `raw` when it is 1 to 15 decimal digits, leading zeros allowed (as
    redis-benchmark pads its numbers), exact as a float; else -1."""
    size = len(raw)
    if not 0 < size <= 15:
        return -1
    value = 0
    for i in range(size):
        c = raw[i]
        if not 48 <= c <= 57:
            return -1
        value = value * 10 + c - 48
    return value


def _short_decimal(raw: bytes) -> bool:
    """Whether `raw` is `[-]digits[.digits]` with a digit somewhere, 24 bytes at most: a
    form strtod and float() read alike, never out of range (no exponent, no spaces)."""
    size = len(raw)
    if not 0 < size <= 24:
        return False
    i = 1 if raw[0] == 45 else 0  # '-'
    dot = False
    digits = 0
    while i < size:
        c = raw[i]
        if 48 <= c <= 57:
            digits += 1
        elif c == 46 and not dot:  # '.'
            dot = True
        else:
            return False
        i += 1
    return digits > 0


def _longest(members: list[bytes]) -> int:
    """The length of the longest member (a loop: compiled, max(map(len, ...)) looks `len`
    up in the builtins module each time)."""
    longest = 0
    for member in members:
        if len(member) > longest:
            longest = len(member)
    return longest


def zadd_generic(c: Client, argv: list[bytes], flags: int) -> Any:
    """ZADD and ZINCRBY. The dirty counter moves by the members added or given a new
    score, as Valkey counts (a member given twice counts each change)."""
    flags, first = zadd_options(argv, flags)
    scores = [parse_score(raw) for raw in argv[first::2]]
    members = argv[first + 1 :: 2]
    key = argv[1]
    zs = lookup_zset(c, key)
    incr = bool(flags & INCR)
    created = zs is None
    limits = None  # only a listpack (or a new set) reads the thresholds
    if zs is None:
        if flags & XX:
            return None if incr else 0
        limits = zset_limits(c)
        zs = ZSet.create(len(members), _longest(members), limits)
    elif not zs.skiplist:
        limits = zset_limits(c)
        zs.grow_for(len(members), _longest(members), limits)
    added = updated = processed = 0
    newscore = 0.0
    nan = False
    if not flags:  # plain ZADD, the common case: no option to weigh per member
        for i in range(len(members)):  # indexes: compiled, zip() is a generic call
            score, member = scores[i], members[i]
            current = zs.score(member)
            if current is None:
                zs.insert(member, score, limits)
                added += 1
            elif score != current:
                zs.update(member, score, current)
                updated += 1
    else:
        for i in range(len(members)):
            outcome = zadd_one(zs, members[i], scores[i], flags, limits)
            if outcome is None:
                nan = True
                break
            kind, newscore = outcome
            added += kind == "added"
            updated += kind == "updated"
            processed += kind != "nop"
    if added or updated:
        state = c.state
        start = state.dirty
        if created:
            c.db.set_value(key, zs, event="zincr" if incr else "zadd", klass="z")
        else:
            c.db.written(key, "zincr" if incr else "zadd", "z")
        state.dirty = start + added + updated
    if nan:
        raise NAN_SCORE
    if incr:
        return newscore if processed else None
    return added + updated if flags & CH else added


def zadd_one(
    zs: ZSet, member: bytes, score: float, flags: int, limits: ZLimits | None
) -> tuple[str, float] | None:
    """zsetAdd: ('added'|'updated'|'same'|'nop', resulting score), or None for NaN."""
    current = zs.score(member)
    if current is None:
        if flags & XX:
            return "nop", score
        zs.insert(member, score, limits)
        return "added", score
    if flags & NX:
        return "nop", score
    if flags & INCR:
        score += current
        if score != score:
            return None
    if (flags & LT and score >= current) or (flags & GT and score <= current):
        return "nop", score
    if score == current:
        return "same", score
    zs.update(member, score, current)
    return "updated", score


@command("zadd", -4, "write denyoom fast", keys=keys_range(1, flags="RW update"), acl=ACL,
         group=G, since="1.2.0",
         complexity="O(log(N)) for each item added, where N is the number of elements in "
         "the sorted set.",
         summary="Adds members with scores to a sorted set or updates their scores (NX, XX, "
         "GT, LT, CH, INCR); creates the key if needed.")
def zadd(c: Client, argv: list[bytes]) -> Any:
    if len(argv) == 4 and _not_an_option(argv[2]):
        return zadd_single(c, argv[1], parse_score(argv[2]), argv[3])
    return zadd_generic(c, argv, 0)


def _not_an_option(raw: bytes) -> bool:
    """Whether ZADD's argument cannot be one of its options: a score in digits (the
    commonest) is not, without upper-casing it."""
    if raw and 48 <= raw[0] <= 57:
        return True
    return raw.upper() not in _ZADD_OPTIONS


def zadd_single(c: Client, key: bytes, score: float, member: bytes) -> int:
    """`ZADD key score member`, the most common form, without the general loop. One
    change goes through the funnel once, which counts the one dirty change it makes."""
    zs = lookup_zset(c, key)
    if zs is None:
        limits = zset_limits(c)
        zs = ZSet.create(1, len(member), limits)
        zs.insert(member, score, limits)
        c.db.set_value(key, zs, event="zadd", klass="z")
        return 1
    listpack_limits = None if zs.skiplist else zset_limits(c)
    if listpack_limits is not None:
        zs.grow_for(1, len(member), listpack_limits)
    current = zs.score(member)
    if current is None:
        zs.insert(member, score, listpack_limits)
        added = 1
    elif score != current:
        zs.update(member, score, current)
        added = 0
    else:
        return 0
    c.db.written(key, "zadd", "z")
    return added


@command("zincrby", 4, "write denyoom fast", keys=keys_range(1, flags="RW access update"),
         acl=ACL, group=G, since="1.2.0",
         complexity="O(log(N)) where N is the number of elements in the sorted set.",
         summary="Adds an increment to a member's score; answers the new score.")
def zincrby(c: Client, argv: list[bytes]) -> Any:
    return zadd_generic(c, argv, INCR)


# --- removal -----------------------------------------------------------------------------


@command("zrem", -3, "write fast", keys=keys_range(1, flags="RW delete"), acl=ACL, group=G,
         since="1.2.0",
         complexity="O(M*log(N)) with N being the number of elements in the sorted set and "
         "M the number of elements to be removed.",
         summary="Removes members from a sorted set, deleting it when emptied; answers how "
         "many were removed.", dirty=INTEGER_REPLY)
def zrem(c: Client, argv: list[bytes]) -> Any:
    key = argv[1]
    zs = lookup_zset(c, key)
    if zs is None:
        return 0
    removed = 0
    for member in argv[2:]:
        removed += zs.remove(member)
        if not zs:
            break
    if removed:
        c.db.written(key, "zrem", "z")
    return removed


def zremrange(c: Client, argv: list[bytes], kind: str) -> int:
    """ZREMRANGEBYRANK/SCORE/LEX: parse the range, then look the key up."""
    lo, hi = argv[2], argv[3]
    rng: Range | None = None
    if kind == "rank":
        ranks = parse_int(lo), parse_int(hi)
    elif kind == "score":
        rng = parse_score_range(lo, hi)
    else:
        rng = parse_lex_range(lo, hi)
    key = argv[1]
    zs = lookup_zset(c, key)
    if zs is None:
        return 0
    if rng is None:
        bounds = clamp_rank_range(ranks[0], ranks[1], len(zs))
        removed = zs.delete_positions(bounds[0], bounds[1] + 1) if bounds else 0
    else:
        removed = zs.delete_range(rng)
    if removed:
        c.db.written(key, "zremrangeby" + kind, "z")
    return removed


_REMRANGE_COMPLEXITY = (
    "O(log(N)+M) with N being the number of elements in the sorted set and M the number "
    "of elements removed by the operation."
)


@command("zremrangebyrank", 4, "write", keys=keys_range(1, flags="RW delete"), acl=ACL,
         group=G, since="2.0.0", complexity=_REMRANGE_COMPLEXITY,
         summary="Removes the members within a range of ranks; answers how many.", dirty=INTEGER_REPLY)
def zremrangebyrank(c: Client, argv: list[bytes]) -> Any:
    return zremrange(c, argv, "rank")


@command("zremrangebyscore", 4, "write", keys=keys_range(1, flags="RW delete"), acl=ACL,
         group=G, since="1.2.0", complexity=_REMRANGE_COMPLEXITY,
         summary="Removes the members within a range of scores; answers how many.", dirty=INTEGER_REPLY)
def zremrangebyscore(c: Client, argv: list[bytes]) -> Any:
    return zremrange(c, argv, "score")


@command("zremrangebylex", 4, "write", keys=keys_range(1, flags="RW delete"), acl=ACL,
         group=G, since="2.8.9", complexity=_REMRANGE_COMPLEXITY,
         summary="Removes the members within a lexicographical range; answers how many.", dirty=INTEGER_REPLY)
def zremrangebylex(c: Client, argv: list[bytes]) -> Any:
    return zremrange(c, argv, "lex")


# --- reads of single members -----------------------------------------------------------------


@command("zcard", 2, "readonly fast", keys=keys_range(1, flags="RO"), acl=ACL, group=G,
         since="1.2.0", summary="Answers the number of members of a sorted set.")
def zcard(c: Client, argv: list[bytes]) -> Any:
    zs = lookup_zset(c, argv[1])
    return len(zs) if zs is not None else 0


@command("zscore", 3, "readonly fast", keys=keys_range(1, flags="RO access"), acl=ACL,
         group=G, since="1.2.0", summary="Answers the score of a member, or null.")
def zscore(c: Client, argv: list[bytes]) -> Any:
    zs = lookup_zset(c, argv[1])
    return zs.score(argv[2]) if zs is not None else None


@command("zmscore", -3, "readonly fast", keys=keys_range(1, flags="RO access"), acl=ACL,
         group=G, since="6.2.0",
         complexity="O(N) where N is the number of members being requested.",
         summary="Answers the scores of several members (null for each one missing).")
def zmscore(c: Client, argv: list[bytes]) -> Any:
    zs = lookup_zset(c, argv[1])
    if zs is None:
        return [None] * (len(argv) - 2)
    return [zs.score(member) for member in argv[2:]]


def zrank_generic(c: Client, argv: list[bytes], reverse: bool) -> Any:
    if len(argv) > 4:
        raise wrong_args("zrevrank" if reverse else "zrank")
    withscore = len(argv) == 4
    if withscore and argv[3].upper() != b"WITHSCORE":
        raise SYNTAX
    missing = NULL_ARRAY if withscore else None
    zs = lookup_zset(c, argv[1])
    if zs is None:
        return missing
    rank = zs.rank(argv[2], reverse)
    if rank is None:
        return missing
    return [rank, zs.score(argv[2])] if withscore else rank


@command("zrank", -3, "readonly fast", keys=keys_range(1, flags="RO access"), acl=ACL,
         group=G, since="2.0.0", complexity="O(log(N))",
         summary="Answers a member's rank by ascending score (WITHSCORE adds the score).")
def zrank(c: Client, argv: list[bytes]) -> Any:
    return zrank_generic(c, argv, reverse=False)


@command("zrevrank", -3, "readonly fast", keys=keys_range(1, flags="RO access"), acl=ACL,
         group=G, since="2.0.0", complexity="O(log(N))",
         summary="Answers a member's rank by descending score (WITHSCORE adds the score).")
def zrevrank(c: Client, argv: list[bytes]) -> Any:
    return zrank_generic(c, argv, reverse=True)


@command("zcount", 4, "readonly fast", keys=keys_range(1, flags="RO access"), acl=ACL,
         group=G, since="2.0.0",
         complexity="O(log(N)) with N being the number of elements in the sorted set.",
         summary="Counts the members whose scores are within a range.")
def zcount(c: Client, argv: list[bytes]) -> Any:
    rng = parse_score_range(argv[2], argv[3])
    zs = lookup_zset(c, argv[1])
    return zs.count_range(rng) if zs is not None else 0


@command("zlexcount", 4, "readonly fast", keys=keys_range(1, flags="RO access"), acl=ACL,
         group=G, since="2.8.9",
         complexity="O(log(N)) with N being the number of elements in the sorted set.",
         summary="Counts the members within a lexicographical range.")
def zlexcount(c: Client, argv: list[bytes]) -> Any:
    rng = parse_lex_range(argv[2], argv[3])
    zs = lookup_zset(c, argv[1])
    return zs.count_range(rng) if zs is not None else 0


# --- ZRANGE and its older forms -------------------------------------------------------------


class RangeRequest:
    """A parsed ZRANGE-style request (zrangeGenericCommand's options). A plain class, as
    every per-command record here: compiled, a dataclass's __init__ costs ten times more."""

    __slots__ = ("kind", "reverse", "withscores", "offset", "limit", "start", "end", "rng")

    def __init__(self, kind: str, reverse: bool, withscores: bool, offset: int, limit: int,
                 start: int = 0, end: int = 0, rng: Range | None = None) -> None:
        self.kind = kind  # "rank" | "score" | "lex"
        self.reverse = reverse
        self.withscores = withscores
        self.offset = offset
        self.limit = limit  # -1: no LIMIT given
        self.start = start
        self.end = end
        self.rng = rng


_RANGE_WITHSCORES: Final = 0
_RANGE_LIMIT: Final = 1
_RANGE_REV: Final = 2
_RANGE_BYLEX: Final = 3
_RANGE_BYSCORE: Final = 4
_RANGE_OPTIONS: Final = {b"WITHSCORES": _RANGE_WITHSCORES, b"LIMIT": _RANGE_LIMIT, b"REV": _RANGE_REV,
                  b"BYLEX": _RANGE_BYLEX, b"BYSCORE": _RANGE_BYSCORE}


def parse_range_request(
    argv: list[bytes], src: int, store: bool, kind: str | None, reverse: bool | None
) -> RangeRequest:
    """`<src> <min> <max> [BYSCORE|BYLEX] [REV] [WITHSCORES] [LIMIT offset count]` from
    argv[src]; `kind`/`reverse` are fixed by the older commands (None: from options)."""
    withscores = False
    offset, limit = 0, -1
    j = src + 3
    argc = len(argv)
    while j < argc:
        opt = _RANGE_OPTIONS.get(argv[j].upper())
        if opt == _RANGE_WITHSCORES and not store:
            withscores = True
        elif opt == _RANGE_LIMIT and argc - j - 1 >= 2:
            offset, limit = parse_int(argv[j + 1]), parse_int(argv[j + 2])
            j += 2
        elif opt == _RANGE_REV and reverse is None:
            reverse = True
        elif opt == _RANGE_BYLEX and kind is None:
            kind = "lex"
        elif opt == _RANGE_BYSCORE and kind is None:
            kind = "score"
        else:
            raise SYNTAX
        j += 1
    if kind is None:
        kind = "rank"
    reverse = bool(reverse)
    if limit != -1 and kind == "rank":
        raise LIMIT_NEEDS_RANGE
    if withscores and kind == "lex":
        raise WITHSCORES_BYLEX
    lo, hi = argv[src + 1], argv[src + 2]
    if reverse and kind != "rank":
        lo, hi = hi, lo  # given as max, min
    if kind == "score":
        return RangeRequest(kind, reverse, withscores or store, offset, limit,
                            rng=parse_score_range(lo, hi))
    if kind == "rank":
        return RangeRequest(kind, reverse, withscores or store, offset, limit,
                            parse_int(lo), parse_int(hi))
    return RangeRequest(kind, reverse, withscores or store, offset, limit,
                        rng=parse_lex_range(lo, hi))


def run_range(zs: ZSet, req: RangeRequest) -> list[Pair]:
    if req.rng is None:
        bounds = clamp_rank_range(req.start, req.end, len(zs))
        if bounds is None:
            return []
        start, end = bounds
        if req.reverse:  # ranks count from the highest score
            start, end = len(zs) - 1 - end, len(zs) - 1 - start
        return zs.pairs(start, end + 1, req.reverse)
    if isinstance(req.rng, ScoreRange) and req.offset > 0 and req.offset >= len(zs):
        return []
    return zs.range_query(req.rng, req.offset, req.limit, req.reverse)


def zrange_generic(c: Client, argv: list[bytes], kind: str | None, reverse: bool | None) -> Any:
    req = parse_range_request(argv, 1, False, kind, reverse)
    zs = lookup_zset(c, argv[1])
    if zs is None:
        return []
    if type(req.rng) is ScoreRange:  # straight from the columns of the keys
        scores, members = zs.range_by_score(req.rng, req.offset, req.limit, req.reverse, req.withscores)
        return columns_reply(c, scores, members) if req.withscores else members
    return pairs_reply(c, run_range(zs, req), req.withscores)


_RANGE_COMPLEXITY = (
    "O(log(N)+M) with N being the number of elements in the sorted set and M the number "
    "of elements returned."
)
_RANGE_BY_COMPLEXITY = (
    "O(log(N)+M) with N being the number of elements in the sorted set and M the number "
    "of elements being returned. If M is constant (e.g. always asking for the first 10 "
    "elements with LIMIT), you can consider it O(log(N))."
)
_READ_KEY = keys_range(1, flags="RO access")


@command("zrange", -4, "readonly", keys=_READ_KEY, acl=ACL, group=G, since="1.2.0",
         complexity=_RANGE_COMPLEXITY,
         summary="Answers the members within a range of ranks, scores (BYSCORE) or members "
         "(BYLEX), optionally reversed, limited, with scores.")
def zrange(c: Client, argv: list[bytes]) -> Any:
    return zrange_generic(c, argv, None, None)


@command("zrevrange", -4, "readonly", keys=_READ_KEY, acl=ACL, group=G, since="1.2.0",
         complexity=_RANGE_COMPLEXITY,
         summary="Answers the members within a range of ranks, highest score first.")
def zrevrange(c: Client, argv: list[bytes]) -> Any:
    return zrange_generic(c, argv, "rank", True)


@command("zrangebyscore", -4, "readonly", keys=_READ_KEY, acl=ACL, group=G, since="1.0.5",
         complexity=_RANGE_BY_COMPLEXITY,
         summary="Answers the members within a range of scores.")
def zrangebyscore(c: Client, argv: list[bytes]) -> Any:
    return zrange_generic(c, argv, "score", False)


@command("zrevrangebyscore", -4, "readonly", keys=_READ_KEY, acl=ACL, group=G,
         since="2.2.0", complexity=_RANGE_BY_COMPLEXITY,
         summary="Answers the members within a range of scores, highest first.")
def zrevrangebyscore(c: Client, argv: list[bytes]) -> Any:
    return zrange_generic(c, argv, "score", True)


@command("zrangebylex", -4, "readonly", keys=_READ_KEY, acl=ACL, group=G, since="2.8.9",
         complexity=_RANGE_BY_COMPLEXITY,
         summary="Answers the members within a lexicographical range.")
def zrangebylex(c: Client, argv: list[bytes]) -> Any:
    return zrange_generic(c, argv, "lex", False)


@command("zrevrangebylex", -4, "readonly", keys=_READ_KEY, acl=ACL, group=G, since="2.8.9",
         complexity=_RANGE_BY_COMPLEXITY,
         summary="Answers the members within a lexicographical range, in reverse order.")
def zrevrangebylex(c: Client, argv: list[bytes]) -> Any:
    return zrange_generic(c, argv, "lex", True)


@command("zrangestore", -5, "write denyoom",
         keys=(keys_range(1, flags="OW update"), keys_range(2, flags="RO access")), acl=ACL,
         group=G, since="6.2.0",
         complexity="O(log(N)+M) with N being the number of elements in the sorted set and "
         "M the number of elements stored into the destination key.",
         summary="Stores a range of a sorted set (by rank, score or member) in another key; "
         "answers its size.")
def zrangestore(c: Client, argv: list[bytes]) -> Any:
    req = parse_range_request(argv, 2, True, None, None)
    zs = lookup_zset(c, argv[2])
    pairs = run_range(zs, req) if zs is not None else []
    return store(c, argv[1], pairs, "zrangestore")


# --- pops ----------------------------------------------------------------------------------


def pop(c: Client, key: bytes, zs: ZSet, from_max: bool, count: int) -> list[Pair]:
    """Pop up to `count` members from the low (or high) end of `zs` at `key`, through the
    funnel (`zpopmin`/`zpopmax`, then `del` when emptied). Shared with the blocking pops."""
    pairs = zs.pop(count, from_max)
    if pairs:
        c.db.written(key, "zpopmax" if from_max else "zpopmin", "z")
    return pairs


def pop_first_nonempty(
    c: Client, keys: Iterable[bytes], from_max: bool, count: int
) -> tuple[bytes, list[Pair]] | None:
    """ZMPOP's pop: the first key that exists (WRONGTYPE if it is not a zset) gives up to
    `count` members; None when no key exists."""
    for key in keys:
        zs = lookup_zset(c, key)
        if zs is not None:
            return key, pop(c, key, zs, from_max, count)
    return None


class MpopArgs:
    __slots__ = ("keys", "from_max", "count")

    def __init__(self, keys: list[bytes], from_max: bool, count: int) -> None:
        self.keys = keys
        self.from_max = from_max
        self.count = count


def parse_mpop(argv: list[bytes], numkeys_at: int) -> MpopArgs:
    """`numkeys key [key ...] MIN|MAX [COUNT count]` from argv[numkeys_at] (ZMPOP: 1,
    BZMPOP: 2), with Valkey's errors."""
    numkeys = parse_int(argv[numkeys_at], NUMKEYS)
    if numkeys < 1:
        raise NUMKEYS
    where_at = numkeys_at + numkeys + 1
    if where_at >= len(argv):
        raise SYNTAX
    where = argv[where_at].upper()
    if where not in (b"MIN", b"MAX"):
        raise SYNTAX
    count = -1
    j = where_at + 1
    while j < len(argv):
        if count == -1 and argv[j].upper() == b"COUNT" and j + 1 < len(argv):
            count = parse_int(argv[j + 1], COUNT_POSITIVE)
            if count < 1:
                raise COUNT_POSITIVE
            j += 2
        else:
            raise SYNTAX
    return MpopArgs(argv[numkeys_at + 1 : where_at], where == b"MAX", max(count, 1))


def zpop_command(c: Client, argv: list[bytes], from_max: bool) -> Any:
    if len(argv) > 3:
        raise SYNTAX
    count = parse_positive(argv[2]) if len(argv) == 3 else -1
    key = argv[1]
    zs = lookup_zset(c, key)
    if zs is None or count == 0:
        return []
    pairs = pop(c, key, zs, from_max, max(count, 1))
    if count != -1 and c.protocol > 2:
        return nested_pairs(pairs)
    return [item for pair in pairs for item in pair]


_POP_COMPLEXITY = (
    "O(log(N)*M) with N being the number of elements in the sorted set, and M being the "
    "number of elements popped."
)


@command("zpopmin", -2, "write fast", keys=keys_range(1, flags="RW access delete"), acl=ACL,
         group=G, since="5.0.0", complexity=_POP_COMPLEXITY,
         summary="Removes and answers the lowest-scoring members; deletes the key when emptied.", dirty=ELEMENTS_CHANGED)
def zpopmin(c: Client, argv: list[bytes]) -> Any:
    return zpop_command(c, argv, from_max=False)


@command("zpopmax", -2, "write fast", keys=keys_range(1, flags="RW access delete"), acl=ACL,
         group=G, since="5.0.0", complexity=_POP_COMPLEXITY,
         summary="Removes and answers the highest-scoring members; deletes the key when "
         "emptied.", dirty=ELEMENTS_CHANGED)
def zpopmax(c: Client, argv: list[bytes]) -> Any:
    return zpop_command(c, argv, from_max=True)


@command("zmpop", -4, "write movablekeys", keys=keys_numkeys(1, flags="RW access delete"),
         acl=ACL, group=G, since="7.0.0",
         complexity="O(K) + O(M*log(N)) where K is the number of provided keys, N being the "
         "number of elements in the sorted set, and M being the number of elements popped.",
         summary="Pops the lowest or highest members of the first non-empty sorted set among "
         "several keys; answers the key and the members with scores.", dirty=POPPED_MANY)
def zmpop(c: Client, argv: list[bytes]) -> Any:
    args = parse_mpop(argv, 1)
    popped = pop_first_nonempty(c, args.keys, args.from_max, args.count)
    if popped is None:
        return NULL_ARRAY
    key, pairs = popped
    return [key, nested_pairs(pairs)]


# --- ZRANDMEMBER -----------------------------------------------------------------------------


@command("zrandmember", -2, "readonly", keys=_READ_KEY, acl=ACL, group=G, since="6.2.0",
         complexity="O(N) where N is the number of members returned",
         tips="nondeterministic_output",
         summary="Answers random members (a negative count allows repeats), optionally with "
         "scores.")
def zrandmember(c: Client, argv: list[bytes]) -> Any:
    if len(argv) == 2:
        zs = lookup_zset(c, argv[1])
        if zs is None:
            return None
        return zs.random_pairs(1)[0][0]
    count = parse_int(argv[2])
    if count < -LONG_MAX:
        raise RANDMEMBER_RANGE
    if len(argv) > 4 or (len(argv) == 4 and argv[3].upper() != b"WITHSCORES"):
        raise SYNTAX
    withscores = len(argv) == 4
    if withscores and not -(LONG_MAX // 2) <= count <= LONG_MAX // 2:
        raise OUT_OF_RANGE
    zs = lookup_zset(c, argv[1])
    if zs is None or count == 0:
        return []
    if count < 0:
        flat = withscores and c.protocol == 2
        return repeated_picks(c, -count, lambda k: pairs_reply(c, zs.random_pairs(k), withscores),
                              lambda: member_draws(c, zs.pairs(), withscores), 2 if flat else 1)
    return pairs_reply(c, random_members(zs, count), withscores)


def member_draws(c: Client, pairs: list[Pair], withscores: bool) -> PickChunk:
    """k random members (repeats allowed) of a zset as it was, with scores if asked."""
    pick = draws(pairs)
    return lambda k: pairs_reply(c, pick(k), withscores)


def random_members(zs: ZSet, count: int) -> list[Pair]:
    """Valkey's cases for a positive count: one pick; the whole set (count >= size) from
    the highest score down; else distinct members."""
    if count == 1:
        return zs.random_pairs(1)
    if count >= len(zs):
        return zs.pairs(reverse=True)
    return zs.random_distinct(count)


# --- ZUNION / ZINTER / ZDIFF ---------------------------------------------------------------


class Source:
    """One input of a set operation: a zset, a plain set (every score 1), or nothing."""

    __slots__ = ("value", "weight")

    def __init__(self, value: Any, weight: float = 1.0) -> None:
        self.value = value
        self.weight = weight

    def __len__(self) -> int:
        return len(self.value) if self.value is not None else 0

    def items(self) -> Iterable[tuple[bytes, float]]:
        if self.value is None:
            return ()
        if isinstance(self.value, ZSet):
            return self.value.items()
        return ((member, 1.0) for member in self.value)

    def find(self, member: bytes) -> float | None:
        if self.value is None:
            return None
        if isinstance(self.value, ZSet):
            return self.value.score(member)
        return 1.0 if member in self.value else None


def lookup_source(c: Client, key: bytes) -> Source:
    value = c.db.lookup(key)
    if value is not None and getattr(value, "TYPE_NAME", None) not in ("zset", "set"):
        raise WRONGTYPE
    return Source(value)


SUM, MIN, MAX = b"SUM", b"MIN", b"MAX"


def aggregate(target: float, value: float, how: bytes) -> float:
    """zunionInterAggregate: SUM turns inf + -inf into 0; MIN/MAX keep `target` on NaN."""
    if how == SUM:
        total = target + value
        return 0.0 if total != total else total
    if how == MIN:
        return value if value < target else target
    return value if value > target else target


class SetOp:
    """A parsed ZUNION/ZINTER/ZDIFF(STORE)/ZINTERCARD request."""

    __slots__ = ("sources", "how", "withscores", "limit")

    def __init__(self, sources: list[Source]) -> None:
        self.sources = sources
        self.how = SUM
        self.withscores = False
        self.limit = 0


def parse_setop(c: Client, argv: list[bytes], numkeys_at: int, op: str, name: str,
                store: bool = False, card: bool = False) -> SetOp:
    """numkeys, the keys (type-checked before any option), then the options."""
    setnum = parse_int(argv[numkeys_at])
    if setnum < 1:
        raise ReplyError(f"ERR at least 1 input key is needed for '{name}' command")
    if setnum > len(argv) - (numkeys_at + 1):
        raise SYNTAX
    first = numkeys_at + 1
    request = SetOp([lookup_source(c, key) for key in argv[first : first + setnum]])
    j = first + setnum
    argc = len(argv)
    while j < argc:
        remaining = argc - j
        opt = argv[j].upper()
        if op != "diff" and not card and remaining >= setnum + 1 and opt == b"WEIGHTS":
            for i, source in enumerate(request.sources):
                source.weight = parse_float(argv[j + 1 + i], WEIGHT_NOT_FLOAT)
            j += 1 + setnum
        elif op != "diff" and not card and remaining >= 2 and opt == b"AGGREGATE":
            request.how = argv[j + 1].upper()
            if request.how not in (SUM, MIN, MAX):
                raise SYNTAX
            j += 2
        elif not store and not card and opt == b"WITHSCORES":
            request.withscores = True
            j += 1
        elif card and remaining >= 2 and opt == b"LIMIT":
            request.limit = parse_positive(argv[j + 1], LIMIT_NEGATIVE)
            j += 2
        else:
            raise SYNTAX
    return request


def weighted(score: float, weight: float) -> float:
    product = score * weight
    return 0.0 if product != product else product


def union(request: SetOp) -> dict[bytes, float]:
    """Inputs from the smallest up; each member's weighted scores aggregated in that order."""
    result: dict[bytes, float] = {}
    for source in sorted(request.sources, key=len):
        for member, score in source.items():
            value = weighted(score, source.weight)
            if member in result:
                result[member] = aggregate(result[member], value, request.how)
            else:
                result[member] = value
    return result


def intersection(request: SetOp, limit: int = 0) -> dict[bytes, float]:
    """Members of the smallest input found in every other (up to `limit` of them)."""
    sources = sorted(request.sources, key=len)
    smallest, others = sources[0], sources[1:]
    result: dict[bytes, float] = {}
    if not len(smallest):
        return result
    for member, score in smallest.items():
        total = weighted(score, smallest.weight)
        for other in others:
            found = score if other.value is smallest.value else other.find(member)
            if found is None:
                break
            total = aggregate(total, found * other.weight, request.how)
        else:
            result[member] = total
            if limit and len(result) >= limit:
                break
    return result


def difference(request: SetOp) -> dict[bytes, float]:
    """Members of the first input in none of the others, with their own scores."""
    first, others = request.sources[0], request.sources[1:]
    if not len(first) or any(other.value is first.value for other in others):
        return {}
    return {
        member: score for member, score in first.items()
        if all(other.find(member) is None for other in others)
    }


_OPERATIONS = {"union": union, "inter": intersection, "diff": difference}


def ordered(result: dict[bytes, float]) -> list[Pair]:
    return sorted(result.items(), key=lambda item: (item[1], item[0]))


def setop_reply(c: Client, argv: list[bytes], op: str, name: str) -> Any:
    request = parse_setop(c, argv, 1, op, name)
    return pairs_reply(c, ordered(_OPERATIONS[op](request)), request.withscores)


def setop_store(c: Client, argv: list[bytes], op: str, name: str) -> Any:
    request = parse_setop(c, argv, 2, op, name, store=True)
    return store(c, argv[1], ordered(_OPERATIONS[op](request)), name)


_SOURCES = keys_numkeys(1, flags="RO access")
_STORE_KEYS = (keys_range(1, flags="OW update"), keys_numkeys(2, flags="RO access"))
_UNION_COMPLEXITY = (
    "O(N)+O(M*log(M)) with N being the sum of the sizes of the input sorted sets, and M "
    "being the number of elements in the resulting sorted set."
)
_INTER_COMPLEXITY = (
    "O(N*K)+O(M*log(M)) worst case with N being the smallest input sorted set, K being the "
    "number of input sorted sets and M being the number of elements in the resulting "
    "sorted set."
)
_DIFF_COMPLEXITY = (
    "O(L + (N-K)log(N)) worst case where L is the total number of elements in all the "
    "sets, N is the size of the first set, and K is the size of the result set."
)


@command("zunion", -3, "readonly movablekeys", keys=_SOURCES, acl=ACL, group=G,
         since="6.2.0", complexity=_UNION_COMPLEXITY,
         summary="Answers the union of sorted sets (and sets), with WEIGHTS and AGGREGATE.")
def zunion(c: Client, argv: list[bytes]) -> Any:
    return setop_reply(c, argv, "union", "zunion")


@command("zinter", -3, "readonly movablekeys", keys=_SOURCES, acl=ACL, group=G,
         since="6.2.0", complexity=_INTER_COMPLEXITY,
         summary="Answers the intersection of sorted sets (and sets), with WEIGHTS and "
         "AGGREGATE.")
def zinter(c: Client, argv: list[bytes]) -> Any:
    return setop_reply(c, argv, "inter", "zinter")


@command("zdiff", -3, "readonly movablekeys", keys=_SOURCES, acl=ACL, group=G,
         since="6.2.0", complexity=_DIFF_COMPLEXITY,
         summary="Answers the members of the first sorted set missing from the others.")
def zdiff(c: Client, argv: list[bytes]) -> Any:
    return setop_reply(c, argv, "diff", "zdiff")


@command("zunionstore", -4, "write denyoom movablekeys", keys=_STORE_KEYS, acl=ACL, group=G,
         since="2.0.0",
         complexity="O(N)+O(M log(M)) with N being the sum of the sizes of the input sorted "
         "sets, and M being the number of elements in the resulting sorted set.",
         summary="Stores the union of sorted sets (and sets) in a key; answers its size.")
def zunionstore(c: Client, argv: list[bytes]) -> Any:
    return setop_store(c, argv, "union", "zunionstore")


@command("zinterstore", -4, "write denyoom movablekeys", keys=_STORE_KEYS, acl=ACL, group=G,
         since="2.0.0", complexity=_INTER_COMPLEXITY,
         summary="Stores the intersection of sorted sets (and sets) in a key; answers its "
         "size.")
def zinterstore(c: Client, argv: list[bytes]) -> Any:
    return setop_store(c, argv, "inter", "zinterstore")


@command("zdiffstore", -4, "write denyoom movablekeys", keys=_STORE_KEYS, acl=ACL, group=G,
         since="6.2.0", complexity=_DIFF_COMPLEXITY,
         summary="Stores the difference of sorted sets in a key; answers its size.")
def zdiffstore(c: Client, argv: list[bytes]) -> Any:
    return setop_store(c, argv, "diff", "zdiffstore")


@command("zintercard", -3, "readonly movablekeys", keys=_SOURCES, acl=ACL, group=G,
         since="7.0.0",
         complexity="O(N*K) worst case with N being the smallest input sorted set, K being "
         "the number of input sorted sets.",
         summary="Counts the intersection of sorted sets, stopping at LIMIT.")
def zintercard(c: Client, argv: list[bytes]) -> Any:
    request = parse_setop(c, argv, 1, "inter", "zintercard", card=True)
    return len(intersection(request, request.limit))


# --- ZSCAN ---------------------------------------------------------------------------------


def live_score(zs: ZSet, member: bytes) -> float:
    """The score of a member known to be present."""
    score = zs.score(member)
    assert score is not None
    return score


def scan_page(zs: ZSet, cursor: int, count: int) -> tuple[int, list[bytes]]:
    """A skiplist-encoded set is visited a bucket at a time, `count` members or more a
    call (commands/scan.py). The order is fixed when an iteration starts (at bucket 0):
    members removed since are skipped, members added since may be missed, every other
    member comes at least once."""
    order = zs.scan_order
    if order is None or at_start(cursor, len(zs)):
        order = zs.scan_order = hash_order(zs.members())
    return bucket_page(order, cursor, len(zs), count, zs.__contains__)


@command("zscan", -3, "readonly", keys=_READ_KEY, acl=ACL, group=G, since="2.8.0",
         complexity="O(1) for every call. O(N) for a complete iteration, including enough "
         "command calls for the cursor to return back to 0. N is the number of elements "
         "inside the collection.",
         tips="nondeterministic_output",
         summary="Iterates over the members and scores of a sorted set with a cursor.")
def zscan(c: Client, argv: list[bytes]) -> Any:
    cursor = parse_cursor(argv[2])
    zs = lookup_zset(c, argv[1])
    if zs is None:
        return [b"0", []]
    options = parse_scan_options(argv, 3, "zset")
    matcher, noscores = options.matches, options.noscores
    if zs.skiplist:
        # a skiplist's scan prints scores with %.17g; a listpack answers its stored text
        cursor, members = scan_page(zs, cursor, options.count)
        pairs = [(m, b"%.17g" % live_score(zs, m)) for m in members]
    else:
        cursor = 0
        pairs = [(m, format_double(s)) for m, s in zs.pairs()]
    if matcher is not None:
        pairs = [pair for pair in pairs if matcher(pair[0])]
    items = [m for m, _ in pairs] if noscores else [x for pair in pairs for x in pair]
    return [b"%d" % cursor, items]


# --- blocking pops ---------------------------------------------------------------------------


def blocking_pop(c: Client, argv: list[bytes], from_max: bool) -> Any:
    """BZPOPMIN/BZPOPMAX: [key, member, score] from the first non-empty key, else wait."""
    deadline = parse_timeout(argv[-1], c.state.now)
    keys = argv[1:-1]
    for key in keys:
        zs = lookup_zset(c, key)
        if zs:
            member, score = pop(c, key, zs, from_max, 1)[0]
            return [key, member, score]
    return c.state.blocking.wait_or_deny(c, keys, deadline, argv, NULL_ARRAY, ("zset",))


_BZPOP_KEYS = keys_range(1, -2, flags="RW access delete")


@command("bzpopmin", -3, "write blocking fast", keys=_BZPOP_KEYS, acl=ACL, group=G,
         since="5.0.0", complexity="O(log(N)) with N being the number of elements in the sorted set.",
         summary="Pops the lowest-scored member of the first non-empty sorted set, waiting "
         "for one if all are empty.")
def bzpopmin(c: Client, argv: list[bytes]) -> Any:
    return blocking_pop(c, argv, from_max=False)


@command("bzpopmax", -3, "write blocking fast", keys=_BZPOP_KEYS, acl=ACL, group=G,
         since="5.0.0", complexity="O(log(N)) with N being the number of elements in the sorted set.",
         summary="Pops the highest-scored member of the first non-empty sorted set, waiting "
         "for one if all are empty.")
def bzpopmax(c: Client, argv: list[bytes]) -> Any:
    return blocking_pop(c, argv, from_max=True)


@command("bzmpop", -5, "write blocking movablekeys", keys=keys_numkeys(2, flags="RW access delete"),
         acl=ACL, group=G, since="7.0.0",
         complexity="O(K) + O(M*log(N)) where K is the number of provided keys, N being the "
         "number of elements in the sorted set, and M being the number of elements popped.",
         summary="Pops members from the first non-empty sorted set among several, waiting "
         "if all are empty.", dirty=POPPED_MANY)
def bzmpop(c: Client, argv: list[bytes]) -> Any:
    deadline = parse_timeout(argv[1], c.state.now)
    args = parse_mpop(argv, 2)
    popped = pop_first_nonempty(c, args.keys, args.from_max, args.count)
    if popped is not None:
        key, pairs = popped
        return [key, nested_pairs(pairs)]
    return c.state.blocking.wait_or_deny(c, args.keys, deadline, argv, NULL_ARRAY, ("zset",))
