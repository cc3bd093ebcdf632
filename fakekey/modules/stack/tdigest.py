"""RedisBloom's t-digest verbs: TDIGEST.CREATE, RESET, ADD, MERGE, MIN, MAX, QUANTILE, CDF,
TRIMMED_MEAN, RANK, REVRANK, BYRANK, BYREVRANK and INFO, with Redis Stack's replies
(doubles: RESP3 doubles, RESP2 bulk strings; "nan" and "inf" where it answers them) and
its error texts (`ERR T-Digest: ...`). The digest itself is tdigest_sketch.py."""

from __future__ import annotations

import math
from typing import Any

from fakekey.codecs.numbers import LLONG_MIN, try_int
from fakekey.commands.args import parse_float, wrong_args
from fakekey.core.client import Client
from fakekey.core.registry import keys_numkeys, keys_range
from fakekey.modules.stack.sketch_keys import (
    WRITES,
    changed,
    created,
    existing,
    existing_or_none,
    sketch_verb,
)
from fakekey.modules.stack.tdigest_sketch import INT_MAX, Overflow, TDigest, capacity_for
from fakekey.resp.replies import OK, ReplyError, Simple

DEFAULT_COMPRESSION = 100
MISSING = ReplyError("ERR T-Digest: key does not exist")
EXISTS = ReplyError("ERR T-Digest: key already exists")
WRONG_KEYWORD = ReplyError("ERR T-Digest: wrong keyword")
BAD_COMPRESSION = ReplyError("ERR T-Digest: error parsing compression parameter")
COMPRESSION_NOT_POSITIVE = ReplyError("ERR T-Digest: compression parameter needs to be a positive integer")
ALLOCATION = ReplyError("ERR T-Digest: allocation failed")
MERGE_ALLOCATION = ReplyError("ERR T-Digest: allocation of destination digest failed")
BAD_VAL = ReplyError("ERR T-Digest: error parsing val parameter")
VAL_NOT_FINITE = ReplyError("ERR T-Digest: val parameter needs to be a finite number")
OVERFLOW = ReplyError("ERR T-Digest: overflow detected")
BAD_NUMKEYS = ReplyError("ERR T-Digest: error parsing numkeys")
NUMKEYS_NOT_POSITIVE = ReplyError("ERR T-Digest: numkeys needs to be a positive integer")
BAD_QUANTILE = ReplyError("ERR T-Digest: error parsing quantile")
QUANTILE_RANGE = ReplyError("ERR T-Digest: quantile should be in [0,1]")
BAD_CDF = ReplyError("ERR T-Digest: error parsing cdf")
BAD_LOW = ReplyError("ERR T-Digest: error parsing low_cut_percentile")
BAD_HIGH = ReplyError("ERR T-Digest: error parsing high_cut_percentile")
CUTS_RANGE = ReplyError("ERR T-Digest: low_cut_percentile and high_cut_percentile should be in [0,1]")
CUTS_ORDER = ReplyError("ERR T-Digest: low_cut_percentile should be lower than high_cut_percentile")
BAD_VALUE = ReplyError("ERR T-Digest: error parsing value")
BAD_RANK = ReplyError("ERR T-Digest: error parsing rank")
RANK_NEGATIVE = ReplyError("ERR T-Digest: rank needs to be non negative")

_verb = sketch_verb


def _arg_index(word: bytes, args: list[bytes]) -> int:
    """RMUtil_ArgIndex: where `word` (any case) first is among `args`, or -1."""
    for i, arg in enumerate(args):
        if arg.upper() == word:
            return i
    return -1


def _compression(raw: bytes) -> int:
    value = try_int(raw)
    if value is None:
        raise BAD_COMPRESSION
    if value <= 0:
        raise COMPRESSION_NOT_POSITIVE
    return value


def _fits(compression: int) -> bool:
    """td_init's bound: the buffer's capacity must be an int."""
    return capacity_for(compression) <= INT_MAX


def _digest(c: Client, key: bytes) -> TDigest:
    return existing(c, key, TDigest, MISSING)


# --- creating and changing ----------------------------------------------------------------


@_verb("tdigest.create", -2, "write denyoom", "Creates an empty t-digest sketch.", keys=WRITES)
def tdigest_create(c: Client, argv: list[bytes]) -> Any:
    if len(argv) not in (2, 4):
        raise wrong_args("tdigest.create")
    if existing_or_none(c, argv[1], TDigest) is not None:
        raise EXISTS
    compression = DEFAULT_COMPRESSION
    if len(argv) == 4:
        if _arg_index(b"COMPRESSION", argv[2:]) < 0:
            raise WRONG_KEYWORD
        compression = _compression(argv[3])
    if not _fits(compression):
        raise ALLOCATION
    created(c, argv[1], TDigest(compression), "tdigest.create")
    return OK


@_verb("tdigest.reset", 2, "write denyoom", "Empties a t-digest sketch, keeping its compression.",
       keys=WRITES)
def tdigest_reset(c: Client, argv: list[bytes]) -> Any:
    _digest(c, argv[1]).reset()
    changed(c, argv[1], "tdigest.reset")
    return OK


@_verb("tdigest.add", -3, "write denyoom", "Adds observations to a t-digest sketch.",
       "O(N), where N is the number of samples to add", keys=WRITES)
def tdigest_add(c: Client, argv: list[bytes]) -> Any:
    digest = _digest(c, argv[1])
    values = []
    for raw in argv[2:]:
        value = parse_float(raw, BAD_VAL)
        if math.isinf(value):
            raise VAL_NOT_FINITE
        values.append(value)
    try:
        for value in values:
            digest.add(value, 1)
    except Overflow:
        raise OVERFLOW from None
    changed(c, argv[1], "tdigest.add")
    return OK


def _merge_options(rest: list[bytes], compression: int, use_max: bool) -> tuple[int, bool, bool]:
    """COMPRESSION and OVERRIDE after the source keys: (compression, use the sources'
    largest, override)."""
    at = _arg_index(b"COMPRESSION", rest)
    if at >= 0:
        use_max = False
        if at + 1 >= len(rest):
            raise wrong_args("tdigest.merge")
        compression = _compression(rest[at + 1])
    override = _arg_index(b"OVERRIDE", rest) >= 0
    if override and at < 0:  # OVERRIDE alone: the largest compression among the sources
        use_max, compression = True, 0
    if at < 0 and not override:
        raise WRONG_KEYWORD
    return compression, use_max, override


@_verb("tdigest.merge", -4, "write denyoom",
       "Merges t-digest sketches into a destination sketch, created or replaced.",
       "O(N*K), where N is the number of centroids and K being the number of input sketches",
       keys=(keys_range(1, flags="RW update"), keys_numkeys(2, flags="RO access")))
def tdigest_merge(c: Client, argv: list[bytes]) -> Any:
    dest_key = argv[1]
    start = existing_or_none(c, dest_key, TDigest)
    numkeys = try_int(argv[2])
    if numkeys is None:
        raise BAD_NUMKEYS
    if numkeys <= 0:
        raise NUMKEYS_NOT_POSITIVE
    if numkeys > len(argv) - 3:
        raise wrong_args("tdigest.merge")
    compression, use_max, override = start.compression if start else 0, start is None, False
    rest = argv[3 + numkeys :]
    if rest:
        compression, use_max, override = _merge_options(rest, compression, use_max)
    sources: list[TDigest] = []
    for key in argv[3 : 3 + numkeys]:
        source = _digest(c, key) if key != dest_key or start is None else start
        sources.append(source)
        if use_max:
            compression = max(compression, source.compression)
    if not _fits(compression):
        raise MERGE_ALLOCATION
    merged = TDigest(compression)
    try:
        if start is not None and not override:
            merged.merge_from(start)
        for source in sources:
            merged.merge_from(source)
    except Overflow:
        raise OVERFLOW from None
    created(c, dest_key, merged, "tdigest.merge")
    return OK


# --- reading -----------------------------------------------------------------------------


@_verb("tdigest.min", 2, "readonly", "Returns the smallest observation of a t-digest sketch.")
def tdigest_min(c: Client, argv: list[bytes]) -> Any:
    digest = _digest(c, argv[1])
    return digest.min if digest.size() > 0 else math.nan


@_verb("tdigest.max", 2, "readonly", "Returns the largest observation of a t-digest sketch.")
def tdigest_max(c: Client, argv: list[bytes]) -> Any:
    digest = _digest(c, argv[1])
    return digest.max if digest.size() > 0 else math.nan


@_verb("tdigest.quantile", -3, "readonly",
       "Estimates, for each fraction, the value below which that fraction of observations lies.")
def tdigest_quantile(c: Client, argv: list[bytes]) -> Any:
    digest = _digest(c, argv[1])
    qs = []
    for raw in argv[2:]:
        q = parse_float(raw, BAD_QUANTILE)
        if not 0 <= q <= 1:
            raise QUANTILE_RANGE
        qs.append(q)
    values: list[float] = []
    run_start = 0
    for i in range(1, len(qs) + 1):  # each ascending run in one walk, as the module does
        if i == len(qs) or qs[i] < qs[i - 1]:
            values.extend(digest.quantiles(qs[run_start:i]))
            run_start = i
    return values


@_verb("tdigest.cdf", -3, "readonly",
       "Estimates, for each value, the fraction of observations below it (plus half of those at it).",
       "O(N) where N is the number of values specified.")
def tdigest_cdf(c: Client, argv: list[bytes]) -> Any:
    digest = _digest(c, argv[1])
    points = [parse_float(raw, BAD_CDF) for raw in argv[2:]]
    return [digest.cdf(point) for point in points]


@_verb("tdigest.trimmed_mean", 4, "readonly",
       "Estimates the mean of the observations between two quantiles.",
       "O(N) where N is the number of centroids")
def tdigest_trimmed_mean(c: Client, argv: list[bytes]) -> Any:
    digest = _digest(c, argv[1])
    low = parse_float(argv[2], BAD_LOW)
    high = parse_float(argv[3], BAD_HIGH)
    if not (0 <= low <= 1 and 0 <= high <= 1):
        raise CUTS_RANGE
    if low >= high:
        raise CUTS_ORDER
    return digest.trimmed_mean(low, high)


def _c_round(value: float) -> float:
    """C's round(): halves away from zero."""
    return math.copysign(math.floor(abs(value) + 0.5), value)


def _half_round_down(value: float) -> float:
    """RedisBloom's _halfRoundDown: halves toward zero, the rest to nearest."""
    frac, whole = math.modf(value)
    if abs(frac) <= 0.5:
        return whole
    return whole + 1.0 if whole >= 0 else whole - 1.0


def _ranks(c: Client, argv: list[bytes], reverse: bool) -> list[int]:
    digest = _digest(c, argv[1])
    values = [parse_float(raw, BAD_VALUE) for raw in argv[2:]]
    size = float(digest.size())
    out: list[int] = []
    for value in values:
        if size == 0:
            rank = -2.0
        elif value < digest.min:
            rank = size if reverse else -1.0
        elif value > digest.max:
            rank = -1.0 if reverse else size
        else:
            absolute = digest.cdf(value) * size
            if reverse:
                rank = _c_round(size - _c_round(absolute))
            else:
                rank = _half_round_down(absolute)
        out.append(LLONG_MIN if math.isnan(rank) else int(rank))  # C's (long long)NAN on x86-64
    return out


@_verb("tdigest.rank", -3, "readonly",
       "Estimates, for each value, how many observations are below it (plus half of those at it).")
def tdigest_rank(c: Client, argv: list[bytes]) -> Any:
    return _ranks(c, argv, reverse=False)


@_verb("tdigest.revrank", -3, "readonly",
       "Estimates, for each value, how many observations are above it (plus half of those at it).")
def tdigest_revrank(c: Client, argv: list[bytes]) -> Any:
    return _ranks(c, argv, reverse=True)


def _by_ranks(c: Client, argv: list[bytes], reverse: bool) -> list[float]:
    digest = _digest(c, argv[1])
    ranks = []
    for raw in argv[2:]:
        rank = try_int(raw)
        if rank is None:
            raise BAD_RANK
        if rank < 0:
            raise RANK_NEGATIVE
        ranks.append(rank)
    size = float(digest.size())
    out: list[float] = []
    for rank in ranks:
        if size == 0:
            out.append(math.nan)
        elif rank == 0:
            out.append(digest.max if reverse else digest.min)
        elif rank >= size:
            out.append(-math.inf if reverse else math.inf)
        else:
            at = size - rank - 1 if reverse else float(rank)
            out.append(digest.quantile(at / size))
    return out


@_verb("tdigest.byrank", -3, "readonly", "Estimates, for each rank, the value with that rank.",
       "O(N) where N is the number of ranks specified")
def tdigest_byrank(c: Client, argv: list[bytes]) -> Any:
    return _by_ranks(c, argv, reverse=False)


@_verb("tdigest.byrevrank", -3, "readonly",
       "Estimates, for each reverse rank, the value with that reverse rank.",
       "O(N) where N is the number of reverse ranks specified.")
def tdigest_byrevrank(c: Client, argv: list[bytes]) -> Any:
    return _by_ranks(c, argv, reverse=True)


@_verb("tdigest.info", 2, "readonly", "Returns a t-digest sketch's parameters and counts.")
def tdigest_info(c: Client, argv: list[bytes]) -> Any:
    digest = _digest(c, argv[1])
    return {
        Simple(b"Compression"): digest.compression,
        Simple(b"Capacity"): digest.capacity,
        Simple(b"Merged nodes"): digest.merged_nodes,
        Simple(b"Unmerged nodes"): digest.unmerged_nodes,
        Simple(b"Merged weight"): digest.merged_weight,
        Simple(b"Unmerged weight"): digest.unmerged_weight,
        Simple(b"Observations"): digest.size(),
        Simple(b"Total compressions"): digest.total_compressions,
        Simple(b"Memory usage"): digest.memory_usage(),
    }
