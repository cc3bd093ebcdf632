"""RedisBloom's Bloom filter verbs: BF.RESERVE, BF.ADD, BF.MADD, BF.INSERT, BF.EXISTS,
BF.MEXISTS, BF.INFO, BF.CARD, BF.SCANDUMP and BF.LOADCHUNK, with RedisBloom 2.8's
arguments, replies and error texts (the filter itself: bloom_filter.py).

A module's verbs take any number of arguments (COMMAND INFO's arity -1) and answer a
wrong count themselves, naming the verb as it was sent. Writes go through the write
funnel: each event is the verb's name, lower case, of class `g`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from fakekey.codecs.errors import wrong_args
from fakekey.codecs.numbers import parse_float, parse_int, try_int
from fakekey.core.registry import command, keys_range
from fakekey.modules.stack import BLOOM_MODULE, STACK_SINCE
from fakekey.modules.stack.bloom_filter import FULL, ScalableBloom
from fakekey.resp.replies import OK, ReplyError, Simple

if TYPE_CHECKING:
    from fakekey.core.client import Client

DEFAULT_ERROR_RATE: Final = 0.01
DEFAULT_CAPACITY: Final = 100
DEFAULT_EXPANSION: Final = 2

NOT_FOUND = ReplyError("ERR not found")
ITEM_EXISTS = ReplyError("ERR item exists")
NOT_CREATED = ReplyError("ERR could not create filter")
FILTER_FULL = ReplyError("ERR non scaling filter is full")
INFO_FIELDS: Final = {  # BF.INFO's fields, in order, and how the reply names them
    b"CAPACITY": b"Capacity",
    b"SIZE": b"Size",
    b"FILTERS": b"Number of filters",
    b"ITEMS": b"Number of items inserted",
    b"EXPANSION": b"Expansion rate",
}

WRITE = "write denyoom"
READ = "readonly fast"
# a module's legacy key range (first, last, step 1, 1, 1) is a full-access key spec, its
# readonly verbs' included: Valkey gives it no finer flags
KEY_RW = KEY_RO = "RW access update"


def arity_error(argv: list[bytes]) -> ReplyError:
    """RedisModule_WrongArity: the verb's name as it was sent."""
    return wrong_args(argv[0].decode("utf-8", "replace"))


def lookup(c: Client, key: bytes) -> ScalableBloom | None:
    return c.db.lookup_type(key, ScalableBloom)  # type: ignore[no-any-return]


def existing(c: Client, key: bytes) -> ScalableBloom:
    chain = lookup(c, key)
    if chain is None:
        raise NOT_FOUND
    return chain


def arg_index(argv: list[bytes], word: bytes) -> int:
    """RMUtil_ArgIndex: the first argument (the verb and key included) equal to `word`
    without regard to case, or -1."""
    for i, arg in enumerate(argv):
        if arg.upper() == word:
            return i
    return -1


def event_of(argv: list[bytes]) -> str:
    return argv[0].decode("utf-8", "replace").lower()


# --- creating and adding ----------------------------------------------------------------------


@command("bf.reserve", -1, WRITE, keys=keys_range(1, flags=KEY_RW), group="module", module=BLOOM_MODULE,
         since=STACK_SINCE, summary="Creates an empty Bloom filter of the given error rate and capacity.")
def bf_reserve(c: Client, argv: list[bytes]) -> Any:
    if not 4 <= len(argv) <= 7:
        raise arity_error(argv)
    error_rate = parse_float(argv[2], ReplyError("ERR bad error rate"))
    if not 0 < error_rate < 1:
        raise ReplyError("ERR (0 < error rate range < 1) ")
    capacity = parse_int(argv[3], ReplyError("ERR bad capacity"))
    if capacity <= 0:
        raise ReplyError("ERR (capacity should be larger than 0)")
    nonscaling = arg_index(argv, b"NONSCALING") != -1
    expansion = DEFAULT_EXPANSION
    at = arg_index(argv, b"EXPANSION")
    if at + 1 == len(argv):
        raise ReplyError("ERR no expansion")
    if at != -1:
        if nonscaling:
            raise ReplyError("Nonscaling filters cannot expand")
        expansion = parse_int(argv[at + 1], ReplyError("ERR bad expansion"))
        if expansion <= 0:
            raise ReplyError("ERR expansion should be greater or equal to 1")
    if lookup(c, argv[1]) is not None:
        raise ITEM_EXISTS
    chain = ScalableBloom.create(capacity, error_rate, expansion, nonscaling)
    if chain is None:
        raise NOT_CREATED
    c.db.set_value(argv[1], chain, event=event_of(argv))
    return OK


@command("bf.add", -1, WRITE, keys=keys_range(1, flags=KEY_RW), group="module", module=BLOOM_MODULE,
         since=STACK_SINCE, summary="Adds an item to a Bloom filter, creating the filter if needed.")
def bf_add(c: Client, argv: list[bytes]) -> Any:
    if len(argv) != 3:
        raise arity_error(argv)
    replies = add_items(c, argv, argv[2:], DEFAULT_CAPACITY, DEFAULT_ERROR_RATE, DEFAULT_EXPANSION,
                        nonscaling=False, create=True)
    if isinstance(replies[0], ReplyError):
        raise replies[0]
    return replies[0]


@command("bf.madd", -1, WRITE, keys=keys_range(1, flags=KEY_RW), group="module", module=BLOOM_MODULE,
         since=STACK_SINCE, summary="Adds items to a Bloom filter, creating the filter if needed.")
def bf_madd(c: Client, argv: list[bytes]) -> Any:
    if len(argv) < 3:
        raise arity_error(argv)
    return add_items(c, argv, argv[2:], DEFAULT_CAPACITY, DEFAULT_ERROR_RATE, DEFAULT_EXPANSION,
                     nonscaling=False, create=True)


@command("bf.insert", -1, WRITE, keys=keys_range(1, flags=KEY_RW), group="module", module=BLOOM_MODULE,
         since=STACK_SINCE,
         summary="Adds items to a Bloom filter, creating it with the given settings unless NOCREATE.")
def bf_insert(c: Client, argv: list[bytes]) -> Any:
    if len(argv) < 4:
        raise arity_error(argv)
    capacity, error_rate, expansion = DEFAULT_CAPACITY, DEFAULT_ERROR_RATE, DEFAULT_EXPANSION
    create, nonscaling = True, False
    items_at = -1
    pos = 2
    # RedisBloom tells the options apart by their first letters (ERROR and EXPANSION by
    # the second, NOCREATE and NONSCALING by the third)
    while pos < len(argv) and items_at < 0:
        word = argv[pos].lower()
        first = word[:1]
        if first == b"i":
            pos += 1
            items_at = pos
        elif first == b"e":
            pos += 1
            if pos == len(argv):
                raise arity_error(argv)
            if word[1:2] == b"r":
                error_rate = parse_float(argv[pos], ReplyError("Bad error rate"))
            else:
                expansion = parse_int(argv[pos], ReplyError("Bad expansion"))
            pos += 1
        elif first == b"c":
            pos += 1
            if pos == len(argv):
                raise arity_error(argv)
            capacity = parse_int(argv[pos], ReplyError("Bad capacity"))
            pos += 1
        elif first == b"n":
            if word[2:3] == b"c":
                create = False
            else:
                nonscaling = True
            pos += 1
        else:
            raise ReplyError("Unknown argument received")
    if items_at < 0 or items_at == len(argv):
        raise arity_error(argv)
    if not 0 < error_rate < 1 or capacity < 1 or expansion < 1:
        raise ReplyError("Bad argument received")
    return add_items(c, argv, argv[items_at:], capacity, error_rate, expansion, nonscaling, create)


def add_items(c: Client, argv: list[bytes], items: list[bytes], capacity: int, error_rate: float,
              expansion: int, nonscaling: bool, create: bool) -> list[Any]:
    """bfInsertCommon: one reply per item, an error in place of the first item a full
    non-scaling filter refuses (and none after it)."""
    key = argv[1]
    chain = lookup(c, key)
    fresh = chain is None
    if chain is None:
        if not create:
            raise NOT_FOUND
        chain = ScalableBloom.create(capacity, error_rate, expansion, nonscaling)
        if chain is None:
            raise NOT_CREATED
    replies: list[Any] = []
    for item in items:
        outcome = chain.add(item)
        if outcome == FULL:
            replies.append(FILTER_FULL)
            break
        replies.append(1 if outcome else 0)
    if fresh:
        c.db.set_value(key, chain, event=event_of(argv))
    else:
        c.db.written(key, event_of(argv))
    return replies


# --- reading --------------------------------------------------------------------------------


@command("bf.exists", -1, READ, keys=keys_range(1, flags=KEY_RO), group="module", module=BLOOM_MODULE,
         since=STACK_SINCE, summary="Whether an item was added to a Bloom filter (maybe a false positive).")
def bf_exists(c: Client, argv: list[bytes]) -> Any:
    if len(argv) != 3:
        raise arity_error(argv)
    chain = lookup(c, argv[1])
    return int(chain is not None and chain.check(argv[2]))


@command("bf.mexists", -1, READ, keys=keys_range(1, flags=KEY_RO), group="module", module=BLOOM_MODULE,
         since=STACK_SINCE, summary="Whether each item was added to a Bloom filter.")
def bf_mexists(c: Client, argv: list[bytes]) -> Any:
    if len(argv) < 3:
        raise arity_error(argv)
    chain = lookup(c, argv[1])
    return [int(chain is not None and chain.check(item)) for item in argv[2:]]


@command("bf.card", -1, READ, keys=keys_range(1, flags=KEY_RO), group="module", module=BLOOM_MODULE,
         since=STACK_SINCE, summary="The number of items a Bloom filter took as new (0 if no filter).")
def bf_card(c: Client, argv: list[bytes]) -> Any:
    if len(argv) != 2:
        raise arity_error(argv)
    chain = lookup(c, argv[1])
    return 0 if chain is None else chain.size


@command("bf.info", -1, READ, keys=keys_range(1, flags=KEY_RO), group="module", module=BLOOM_MODULE,
         since=STACK_SINCE, summary="A Bloom filter's capacity, size, sub-filters, items and expansion.")
def bf_info(c: Client, argv: list[bytes]) -> Any:
    if len(argv) not in (2, 3):
        raise arity_error(argv)
    chain = existing(c, argv[1])
    figures = {
        b"CAPACITY": chain.capacity(),
        b"SIZE": chain.memory_usage(),
        b"FILTERS": len(chain.links),
        b"ITEMS": chain.size,
        b"EXPANSION": chain.growth if chain.scaling else None,
    }
    fields = list(INFO_FIELDS)
    if len(argv) == 3:
        field = argv[2].upper()
        if field not in INFO_FIELDS:
            raise ReplyError("Invalid information value")
        fields = [field]
    if c.protocol != 3 and len(fields) == 1:
        return [figures[fields[0]]]  # RESP2: the bare figure, in an array of one
    pairs = {Simple(INFO_FIELDS[field]): figures[field] for field in fields}
    if c.protocol == 3:
        return pairs
    return [part for pair in pairs.items() for part in pair]


# --- dumping and loading ----------------------------------------------------------------------


@command("bf.scandump", -1, READ, keys=keys_range(1, flags=KEY_RO), group="module", module=BLOOM_MODULE,
         since=STACK_SINCE, summary="The next chunk of a Bloom filter's dump, and the iterator after it.")
def bf_scandump(c: Client, argv: list[bytes]) -> Any:
    if len(argv) != 3:
        raise arity_error(argv)
    chain = existing(c, argv[1])
    position = try_int(argv[2])
    if position is None:
        raise ReplyError("Second argument must be numeric")
    if position == 0:
        return [1, chain.header()]
    following, data = chain.chunk(position)
    return [following, data]


@command("bf.loadchunk", -1, WRITE, keys=keys_range(1, flags=KEY_RW), group="module", module=BLOOM_MODULE,
         since=STACK_SINCE, summary="Restores a Bloom filter from the chunks BF.SCANDUMP gave.")
def bf_loadchunk(c: Client, argv: list[bytes]) -> Any:
    if len(argv) != 4:
        raise arity_error(argv)
    position = try_int(argv[2])
    if position is None:
        raise ReplyError("ERR Second argument must be numeric")
    key, data = argv[1], bytes(argv[3])
    chain = lookup(c, key)
    try:
        if chain is None and position == 1:
            c.db.set_value(key, ScalableBloom.from_header(data), event=event_of(argv))
            return OK
        if chain is None:
            raise NOT_FOUND
        chain.load_chunk(position, data)
    except ValueError as err:
        raise ReplyError(str(err)) from None
    c.db.written(key, event_of(argv))
    return OK
