"""RedisBloom's Count-Min Sketch verbs: CMS.INITBYDIM, CMS.INITBYPROB, CMS.INCRBY,
CMS.QUERY, CMS.MERGE and CMS.INFO, with Redis Stack's replies and error texts (which carry
no ERR prefix: `CMS: key does not exist`). The sketch is cms_sketch.py."""

from __future__ import annotations

from functools import partial
from typing import Any

from fakekey.codecs.numbers import LLONG_MAX, try_int
from fakekey.commands.args import parse_float, wrong_args
from fakekey.core.client import Client
from fakekey.core.registry import keys_numkeys, keys_range
from fakekey.modules.stack.cms_sketch import MAX_CELLS, CountMinSketch, dims_from_prob
from fakekey.modules.stack.sketch_keys import READS, WRITES, changed, created, existing, sketch_verb
from fakekey.resp.replies import OK, ReplyError, Simple

MISSING = ReplyError("CMS: key does not exist")
EXISTS = ReplyError("CMS: key already exists")
BAD_WIDTH = ReplyError("CMS: invalid width")
BAD_DEPTH = ReplyError("CMS: invalid depth")
BAD_ERROR = ReplyError("CMS: invalid overestimation value")
BAD_PROB = ReplyError("CMS: invalid prob value")
BAD_INIT = ReplyError("CMS: invalid init arguments")
NOT_NUMBER = ReplyError("CMS: Cannot parse number")
NEGATIVE = ReplyError("CMS: Number cannot be negative")
INCRBY_OVERFLOW = ReplyError("CMS: INCRBY overflow")
BAD_NUMKEYS = ReplyError("CMS: invalid numkeys")
NUMKEYS_NOT_POSITIVE = ReplyError("CMS: Number of keys must be positive")
WRONG_KEYS = ReplyError("CMS: wrong number of keys")
WRONG_KEYS_WEIGHTS = ReplyError("CMS: wrong number of keys/weights")
BAD_WEIGHT = ReplyError("CMS: invalid weight value")
SHAPES_DIFFER = ReplyError("CMS: width/depth is not equal")
MERGE_OVERFLOW = ReplyError("CMS: MERGE overflow")

_verb = partial(sketch_verb, keys=WRITES)  # most CMS verbs write


def _at_least_one(raw: bytes, error: ReplyError) -> int:
    value = try_int(raw)
    if value is None or value < 1:
        raise error
    return value


def _create(c: Client, argv: list[bytes], width: int, depth: int, verb: str) -> Any:
    if width > LLONG_MAX // depth:
        raise BAD_INIT
    if width * depth > MAX_CELLS:  # fakekey's own bound: Redis Stack would try to allocate it
        raise BAD_INIT
    created(c, argv[1], CountMinSketch(width, depth), verb)
    return OK


@_verb("cms.initbydim", 4, "write denyoom", "Creates a Count-Min Sketch of the given width and depth.")
def cms_initbydim(c: Client, argv: list[bytes]) -> Any:
    if c.db.lookup(argv[1]) is not None:
        raise EXISTS
    return _create(c, argv, _at_least_one(argv[2], BAD_WIDTH), _at_least_one(argv[3], BAD_DEPTH),
                   "cms.initbydim")


@_verb("cms.initbyprob", 4, "write denyoom",
       "Creates a Count-Min Sketch sized for an error rate and the probability of exceeding it.")
def cms_initbyprob(c: Client, argv: list[bytes]) -> Any:
    if c.db.lookup(argv[1]) is not None:
        raise EXISTS
    error = parse_float(argv[2], BAD_ERROR)
    if not 0 < error < 1:
        raise BAD_ERROR
    probability = parse_float(argv[3], BAD_PROB)
    if not 0 < probability < 1:
        raise BAD_PROB
    if 2 / error > LLONG_MAX:
        raise BAD_INIT
    dims = dims_from_prob(error, probability)
    if dims is None:
        raise BAD_INIT
    return _create(c, argv, dims[0], dims[1], "cms.initbyprob")


@_verb("cms.incrby", -4, "write denyoom", "Adds to the counts of one or more items.",
       "O(n) where n is the number of items")
def cms_incrby(c: Client, argv: list[bytes]) -> Any:
    if len(argv) % 2:
        raise wrong_args("cms.incrby")
    sketch = existing(c, argv[1], CountMinSketch, MISSING)
    pairs: list[tuple[bytes, int]] = []
    for pos in range(2, len(argv), 2):
        by = try_int(argv[pos + 1])
        if by is None:
            raise NOT_NUMBER
        if by < 0:
            raise NEGATIVE
        pairs.append((argv[pos], by))
    reply: list[Any] = []
    for item, by in pairs:
        estimate = sketch.increment(item, by)
        reply.append(INCRBY_OVERFLOW if estimate >= 0xFFFFFFFF else estimate)
    changed(c, argv[1], "cms.incrby")
    return reply


@_verb("cms.query", -3, "readonly", "Returns the estimated counts of one or more items.",
       "O(n) where n is the number of items", keys=READS)
def cms_query(c: Client, argv: list[bytes]) -> Any:
    sketch = existing(c, argv[1], CountMinSketch, MISSING)
    return [sketch.query(item) for item in argv[2:]]


def _merge_sources(c: Client, dest: CountMinSketch, rest: list[bytes],
                   numkeys: int) -> tuple[list[CountMinSketch], list[int]]:
    """The sources and weights after numkeys, checked in RedisBloom's order: the shape of
    the words, then each source's weight, existence and shape in turn."""
    upper = [word.upper() for word in rest]
    at = upper.index(b"WEIGHTS") if b"WEIGHTS" in upper else -1
    if at < 0:
        if numkeys != len(rest):
            raise WRONG_KEYS
    elif at != numkeys or len(rest) != 1 + 2 * numkeys:
        raise WRONG_KEYS_WEIGHTS
    sources: list[CountMinSketch] = []
    weights: list[int] = []
    for i in range(numkeys):
        weight = 1 if at < 0 else try_int(rest[numkeys + 1 + i])
        if weight is None:
            raise BAD_WEIGHT
        source = existing(c, rest[i], CountMinSketch, MISSING)
        if not source.same_shape(dest):
            raise SHAPES_DIFFER
        weights.append(weight)
        sources.append(source)
    return sources, weights


@_verb("cms.merge", -4, "write denyoom",
       "Merges several sketches of one shape into a destination sketch, with optional weights.",
       "O(n) where n is the number of sketches",
       keys=(keys_range(1, flags="RW update"), keys_numkeys(2, flags="RO access")))
def cms_merge(c: Client, argv: list[bytes]) -> Any:
    dest = existing(c, argv[1], CountMinSketch, MISSING)
    numkeys = try_int(argv[2])
    if numkeys is None:
        raise BAD_NUMKEYS
    if numkeys <= 0:
        raise NUMKEYS_NOT_POSITIVE
    sources, weights = _merge_sources(c, dest, argv[3:], numkeys)
    if not dest.merged_from(sources, weights):
        raise MERGE_OVERFLOW
    changed(c, argv[1], "cms.merge")
    return OK


@_verb("cms.info", 2, "readonly", "Returns a sketch's width, depth and total count.", keys=READS)
def cms_info(c: Client, argv: list[bytes]) -> Any:
    sketch = existing(c, argv[1], CountMinSketch, MISSING)
    return {Simple(b"width"): sketch.width, Simple(b"depth"): sketch.depth,
            Simple(b"count"): sketch.count}
