"""RedisBloom's Top-K verbs: TOPK.RESERVE, TOPK.ADD, TOPK.INCRBY, TOPK.QUERY, TOPK.COUNT,
TOPK.LIST [WITHCOUNT] and TOPK.INFO, with Redis Stack's replies (items as simple strings,
as the module sends them) and error texts (`TopK: key does not exist`). The sketch is
topk_sketch.py."""

from __future__ import annotations

from typing import Any

from fakekey.codecs.numbers import try_int
from fakekey.commands.args import parse_float, wrong_args
from fakekey.core.client import Client
from fakekey.modules.stack.sketch_keys import WRITES, changed, created, existing, sketch_verb
from fakekey.modules.stack.topk_sketch import MAX_BUCKETS, TopK
from fakekey.resp.replies import OK, ReplyError, Simple

DEFAULT_WIDTH, DEFAULT_DEPTH, DEFAULT_DECAY = 8, 7, 0.9
UINT32_MAX = 0xFFFFFFFF
MAX_INCREMENT = 100_000
MISSING = ReplyError("TopK: key does not exist")
EXISTS = ReplyError("TopK: key already exists")
BAD_K = ReplyError("TopK: invalid k")
BAD_WIDTH = ReplyError("TopK: invalid width")
BAD_DEPTH = ReplyError("TopK: invalid depth")
BAD_DECAY = ReplyError("TopK: invalid decay value. must be '<= 1' & '> 0'")
NO_MEMORY = ReplyError("ERR Insufficient memory to create topk data structure")
# the run of spaces is the module's: a line continuation inside its C string literal
BAD_INCREMENT = ReplyError("TopK: increment must be an integer greater or equal to 0"
                           + " " * 28 + "and smaller or equal to 100,000")
NOT_WITHCOUNT = ReplyError("WITHCOUNT keyword expected")

_verb = sketch_verb


def _dimension(raw: bytes, error: ReplyError) -> int:
    value = try_int(raw)
    if value is None or not 1 <= value <= UINT32_MAX:
        raise error
    return value


def _shown(item: bytes) -> Simple:
    """An item as the module replies it: a C string, so it ends at its first NUL."""
    return Simple(item.split(b"\0", 1)[0])


def _expelled(item: bytes | None) -> Simple | None:
    return None if item is None else _shown(item)


@_verb("topk.reserve", -3, "write denyoom",
       "Creates a Top-K sketch keeping the k heaviest items (width, depth and decay optional).",
       keys=WRITES)
def topk_reserve(c: Client, argv: list[bytes]) -> Any:
    if len(argv) not in (3, 6):
        raise wrong_args("topk.reserve")
    if c.db.lookup(argv[1]) is not None:
        raise EXISTS
    k = _dimension(argv[2], BAD_K)
    width, depth, decay = DEFAULT_WIDTH, DEFAULT_DEPTH, DEFAULT_DECAY
    if len(argv) == 6:
        width = _dimension(argv[3], BAD_WIDTH)
        depth = _dimension(argv[4], BAD_DEPTH)
        decay = parse_float(argv[5], BAD_DECAY)
        if not 0 < decay <= 1:
            raise BAD_DECAY
    if k > MAX_BUCKETS or width * depth > MAX_BUCKETS:  # fakekey's bound on what it allocates
        raise NO_MEMORY
    created(c, argv[1], TopK(k, width, depth, decay), "topk.reserve")
    return OK


@_verb("topk.add", -3, "write denyoom",
       "Counts items in a Top-K sketch; answers the item each one expelled from the list.",
       "O(n * k) where n is the number of items", keys=WRITES)
def topk_add(c: Client, argv: list[bytes]) -> Any:
    sketch = existing(c, argv[1], TopK, MISSING)
    reply = [_expelled(sketch.add(item, 1)[1]) for item in argv[2:]]
    changed(c, argv[1], "topk.add")
    return reply


@_verb("topk.incrby", -4, "write denyoom",
       "Adds to the counts of items in a Top-K sketch; answers the items they expelled.",
       "O(n * k * incr) where n is the number of items", keys=WRITES)
def topk_incrby(c: Client, argv: list[bytes]) -> Any:
    if len(argv) % 2:
        raise wrong_args("topk.incrby")
    sketch = existing(c, argv[1], TopK, MISSING)
    reply: list[Any] = []
    for pos in range(2, len(argv), 2):
        by = try_int(argv[pos + 1])
        if by is None or not 0 <= by <= MAX_INCREMENT:
            # the module stops at the first bad increment; its array then ends here
            reply.append(BAD_INCREMENT)
            break
        reply.append(_expelled(sketch.add(argv[pos], by)[1]))
    changed(c, argv[1], "topk.incrby")
    return reply


@_verb("topk.query", -3, "readonly", "Answers, for each item, whether it is in the Top-K list.",
       "O(n) where n is the number of items")
def topk_query(c: Client, argv: list[bytes]) -> Any:
    sketch = existing(c, argv[1], TopK, MISSING)
    return [sketch.query(item) for item in argv[2:]]  # RESP3 booleans, RESP2 1 and 0


@_verb("topk.count", -3, "readonly", "Returns the estimated counts of items in a Top-K sketch.",
       "O(n) where n is the number of items")
def topk_count(c: Client, argv: list[bytes]) -> Any:
    sketch = existing(c, argv[1], TopK, MISSING)
    return [sketch.count(item) for item in argv[2:]]


@_verb("topk.list", -2, "readonly",
       "Returns the items of the Top-K list, heaviest first, with their counts on WITHCOUNT.",
       "O(k*log(k)) where k is the value of top-k")
def topk_list(c: Client, argv: list[bytes]) -> Any:
    if len(argv) not in (2, 3):
        raise wrong_args("topk.list")
    # the module compares with strncasecmp over the word's length: any prefix will do
    with_count = len(argv) == 3
    if with_count and not b"WITHCOUNT".startswith(argv[2].upper()):
        raise NOT_WITHCOUNT
    sketch = existing(c, argv[1], TopK, MISSING)
    reply: list[Any] = []
    for slot in sketch.ranked():
        reply.append(_shown(slot.item or b""))
        if with_count:
            reply.append(slot.count)
    return reply


@_verb("topk.info", 2, "readonly", "Returns a Top-K sketch's k, width, depth and decay.")
def topk_info(c: Client, argv: list[bytes]) -> Any:
    sketch = existing(c, argv[1], TopK, MISSING)
    return {Simple(b"k"): sketch.k, Simple(b"width"): sketch.width,
            Simple(b"depth"): sketch.depth, Simple(b"decay"): sketch.decay}
