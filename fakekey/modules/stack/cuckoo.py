"""RedisBloom's Cuckoo filter verbs: CF.RESERVE, CF.ADD, CF.ADDNX, CF.INSERT,
CF.INSERTNX, CF.EXISTS, CF.MEXISTS, CF.DEL, CF.COUNT, CF.INFO, CF.SCANDUMP and
CF.LOADCHUNK, with RedisBloom 2.8's arguments, replies and error texts (the filter
itself: cuckoo_filter.py). Arity and events as the Bloom verbs' (bloom.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from fakekey.codecs.numbers import parse_int, try_int
from fakekey.core.registry import command, keys_range
from fakekey.modules.stack import BLOOM_MODULE, STACK_SINCE
from fakekey.modules.stack.bloom import KEY_RO, KEY_RW, READ, WRITE, arg_index, arity_error, event_of
from fakekey.modules.stack.cuckoo_filter import HEADER, NO_MEMORY, NO_SPACE, CuckooFilter
from fakekey.resp.replies import OK, ReplyError, Simple

if TYPE_CHECKING:
    from fakekey.core.client import Client

DEFAULT_CAPACITY: Final = 1024
DEFAULT_BUCKET_SIZE: Final = 2
DEFAULT_MAX_ITERATIONS: Final = 20
DEFAULT_EXPANSION: Final = 1
MAX_EXPANSIONS: Final = 32  # sub-filters past which an insert is refused
MAX_ITERATIONS: Final = 65535
MAX_BUCKET_SIZE: Final = 255
MAX_EXPANSION: Final = 32768

NOT_FOUND = ReplyError("ERR not found")
ITEM_EXISTS = ReplyError("ERR item exists")
SMALL_CAPACITY = ReplyError("Capacity must be at least (BucketSize * 2)")
BAD_POSITION = ReplyError("Invalid position")


def lookup(c: Client, key: bytes) -> CuckooFilter | None:
    return c.db.lookup_type(key, CuckooFilter)  # type: ignore[no-any-return]


def existing(c: Client, key: bytes) -> CuckooFilter:
    cf = lookup(c, key)
    if cf is None:
        raise NOT_FOUND
    return cf


def option(argv: list[bytes], name: bytes, default: int, least: int, most: int) -> int:
    """A CF.RESERVE option found anywhere in the arguments (RMUtil_ArgIndex), checked."""
    at = arg_index(argv, name)
    if at == -1:
        return default
    text = name.decode()
    if at + 1 == len(argv):  # the module would read past its arguments
        raise ReplyError(f"Couldn't parse {text}")
    value = parse_int(argv[at + 1], ReplyError(f"Couldn't parse {text}"))
    if not least <= value <= most:
        raise ReplyError(f"{text}: value must be an integer between {least} and {most}, inclusive.")
    return value


# --- creating and adding ----------------------------------------------------------------------


@command("cf.reserve", -1, WRITE, keys=keys_range(1, flags=KEY_RW), group="module", module=BLOOM_MODULE,
         since=STACK_SINCE, summary="Creates an empty Cuckoo filter of the given capacity.")
def cf_reserve(c: Client, argv: list[bytes]) -> Any:
    if len(argv) < 3 or len(argv) % 2 == 0:
        raise arity_error(argv)
    capacity = parse_int(argv[2], ReplyError("Bad capacity"))
    iterations = option(argv, b"MAXITERATIONS", DEFAULT_MAX_ITERATIONS, 1, MAX_ITERATIONS)
    bucket_size = option(argv, b"BUCKETSIZE", DEFAULT_BUCKET_SIZE, 1, MAX_BUCKET_SIZE)
    expansion = option(argv, b"EXPANSION", DEFAULT_EXPANSION, 0, MAX_EXPANSION)
    if bucket_size * 2 > capacity:
        raise SMALL_CAPACITY
    if lookup(c, argv[1]) is not None:
        raise ITEM_EXISTS
    cf = CuckooFilter.create(capacity, bucket_size, iterations, expansion)
    if cf is None:
        raise ReplyError("Couldn't create Cuckoo Filter")
    c.db.set_value(argv[1], cf, event=event_of(argv))
    return OK


@command("cf.add", -1, WRITE, keys=keys_range(1, flags=KEY_RW), group="module", module=BLOOM_MODULE,
         since=STACK_SINCE, summary="Adds an item to a Cuckoo filter, creating the filter if needed.")
def cf_add(c: Client, argv: list[bytes]) -> Any:
    if len(argv) != 3:
        raise arity_error(argv)
    return insert_items(c, argv, argv[2:], DEFAULT_CAPACITY, unique=False, create=True, multi=False)


@command("cf.addnx", -1, WRITE, keys=keys_range(1, flags=KEY_RW), group="module", module=BLOOM_MODULE,
         since=STACK_SINCE, summary="Adds an item to a Cuckoo filter unless it seems present already.")
def cf_addnx(c: Client, argv: list[bytes]) -> Any:
    if len(argv) != 3:
        raise arity_error(argv)
    return insert_items(c, argv, argv[2:], DEFAULT_CAPACITY, unique=True, create=True, multi=False)


@command("cf.insert", -1, WRITE, keys=keys_range(1, flags=KEY_RW), group="module", module=BLOOM_MODULE,
         since=STACK_SINCE, summary="Adds items to a Cuckoo filter, creating it unless NOCREATE.")
def cf_insert(c: Client, argv: list[bytes]) -> Any:
    return insert_command(c, argv, unique=False)


@command("cf.insertnx", -1, WRITE, keys=keys_range(1, flags=KEY_RW), group="module", module=BLOOM_MODULE,
         since=STACK_SINCE, summary="Adds the items that seem absent to a Cuckoo filter.")
def cf_insertnx(c: Client, argv: list[bytes]) -> Any:
    return insert_command(c, argv, unique=True)


def insert_command(c: Client, argv: list[bytes], unique: bool) -> Any:
    """CF.INSERT[NX] key [CAPACITY n] [NOCREATE] ITEMS item...: options told apart by
    their first letter, as RedisBloom does."""
    if len(argv) < 4:
        raise arity_error(argv)
    capacity, create = DEFAULT_CAPACITY, True
    items_at = -1
    pos = 2
    while pos < len(argv) and items_at < 0:
        first = argv[pos][:1].lower()
        if first == b"c":
            pos += 1
            if pos == len(argv):
                raise arity_error(argv)
            capacity = parse_int(argv[pos], ReplyError("Bad capacity"))
            pos += 1
            if capacity < DEFAULT_BUCKET_SIZE * 2:
                raise SMALL_CAPACITY
        elif first == b"i":
            pos += 1
            items_at = pos
        elif first == b"n":
            create = False
            pos += 1
        else:
            raise ReplyError("Unknown argument received")
    if items_at < 0 or items_at == len(argv):
        raise arity_error(argv)
    return insert_items(c, argv, argv[items_at:], capacity, unique, create, multi=True)


def insert_items(c: Client, argv: list[bytes], items: list[bytes], capacity: int, unique: bool,
                 create: bool, multi: bool) -> Any:
    """cfInsertCommon: 1 inserted, 0 present (NX), -1 no room (one item: an error)."""
    key = argv[1]
    cf = lookup(c, key)
    fresh = cf is None
    if cf is None:
        if not create:
            raise NOT_FOUND
        cf = CuckooFilter.create(capacity, DEFAULT_BUCKET_SIZE, DEFAULT_MAX_ITERATIONS, DEFAULT_EXPANSION)
        if cf is None:
            raise ReplyError("Could not create filter")
    if len(cf.filters) >= MAX_EXPANSIONS:
        raise ReplyError("Maximum expansions reached")
    replies = []
    for item in items:
        outcome = cf.insert(item, unique)
        if outcome == NO_SPACE and not multi:
            store(c, argv, cf, fresh)
            raise ReplyError("Filter is full")
        replies.append(ReplyError("Memory allocation failure") if outcome == NO_MEMORY else outcome)
    store(c, argv, cf, fresh)
    if not multi and isinstance(replies[0], ReplyError):
        raise replies[0]
    return replies if multi else replies[0]


def store(c: Client, argv: list[bytes], cf: CuckooFilter, fresh: bool) -> None:
    if fresh:
        c.db.set_value(argv[1], cf, event=event_of(argv))
    else:
        c.db.written(argv[1], event_of(argv))


@command("cf.del", -1, "write fast", keys=keys_range(1, flags=KEY_RW), group="module", module=BLOOM_MODULE,
         since=STACK_SINCE, summary="Removes one occurrence of an item from a Cuckoo filter.")
def cf_del(c: Client, argv: list[bytes]) -> Any:
    if len(argv) != 3:
        raise arity_error(argv)
    cf = lookup(c, argv[1])
    if cf is None:
        raise ReplyError("Not found")
    deleted = cf.delete(argv[2])
    c.db.written(argv[1], event_of(argv))
    return int(deleted)


# --- reading --------------------------------------------------------------------------------


@command("cf.exists", -1, READ, keys=keys_range(1, flags=KEY_RO), group="module", module=BLOOM_MODULE,
         since=STACK_SINCE, summary="Whether an item seems to be in a Cuckoo filter.")
def cf_exists(c: Client, argv: list[bytes]) -> Any:
    if len(argv) != 3:
        raise arity_error(argv)
    cf = lookup(c, argv[1])
    return int(cf is not None and cf.check(argv[2]))


@command("cf.mexists", -1, READ, keys=keys_range(1, flags=KEY_RO), group="module", module=BLOOM_MODULE,
         since=STACK_SINCE, summary="Whether each item seems to be in a Cuckoo filter.")
def cf_mexists(c: Client, argv: list[bytes]) -> Any:
    if len(argv) < 3:
        raise arity_error(argv)
    cf = lookup(c, argv[1])
    return [int(cf is not None and cf.check(item)) for item in argv[2:]]


@command("cf.count", -1, READ, keys=keys_range(1, flags=KEY_RO), group="module", module=BLOOM_MODULE,
         since=STACK_SINCE, summary="How many times an item's fingerprint is in a Cuckoo filter.")
def cf_count(c: Client, argv: list[bytes]) -> Any:
    if len(argv) != 3:
        raise arity_error(argv)
    cf = lookup(c, argv[1])
    return 0 if cf is None else cf.count(argv[2])


@command("cf.info", -1, READ, keys=keys_range(1, flags=KEY_RO), group="module", module=BLOOM_MODULE,
         since=STACK_SINCE, summary="A Cuckoo filter's size, buckets, sub-filters, items and settings.")
def cf_info(c: Client, argv: list[bytes]) -> Any:
    if len(argv) != 2:
        raise arity_error(argv)
    cf = existing(c, argv[1])
    pairs = {
        Simple(b"Size"): cf.memory_usage(),
        Simple(b"Number of buckets"): cf.num_buckets,
        Simple(b"Number of filters"): len(cf.filters),
        Simple(b"Number of items inserted"): cf.num_items,
        Simple(b"Number of items deleted"): cf.num_deletes,
        Simple(b"Bucket size"): cf.bucket_size,
        Simple(b"Expansion rate"): cf.expansion,
        Simple(b"Max iterations"): cf.max_iterations,
    }
    if c.protocol == 3:
        return pairs
    return [part for pair in pairs.items() for part in pair]


# --- dumping and loading ----------------------------------------------------------------------


@command("cf.scandump", -1, READ, keys=keys_range(1, flags=KEY_RO), group="module", module=BLOOM_MODULE,
         since=STACK_SINCE, summary="The next chunk of a Cuckoo filter's dump, and the iterator after it.")
def cf_scandump(c: Client, argv: list[bytes]) -> Any:
    if len(argv) != 3:
        raise arity_error(argv)
    position = try_int(argv[2])
    if position is None:
        raise BAD_POSITION
    cf = existing(c, argv[1])
    if not cf.num_items:
        return [0, None]
    if position == 0:
        return [1, cf.header()]
    found = cf.chunk(position)
    return [0, None] if found is None else [found[0], found[1]]


@command("cf.loadchunk", -1, WRITE, keys=keys_range(1, flags=KEY_RW), group="module", module=BLOOM_MODULE,
         since=STACK_SINCE, summary="Restores a Cuckoo filter from the chunks CF.SCANDUMP gave.")
def cf_loadchunk(c: Client, argv: list[bytes]) -> Any:
    if len(argv) != 4:
        raise arity_error(argv)
    key = argv[1]
    position = try_int(argv[2])
    if position is None or position == 0:
        raise BAD_POSITION
    cf = lookup(c, key)
    data = bytes(argv[3])
    if position == 1:
        if cf is not None:
            raise ITEM_EXISTS
        if len(data) != HEADER.size:
            raise ReplyError("Invalid header")
        loaded = CuckooFilter.from_header(data)
        if loaded is None:
            raise ReplyError("Couldn't create filter!")
        c.db.set_value(key, loaded, event=event_of(argv))
        return OK
    if cf is None:
        raise NOT_FOUND
    if not cf.load_chunk(position, data):
        raise ReplyError("Couldn't load chunk!")
    c.db.written(key, event_of(argv))
    return OK
