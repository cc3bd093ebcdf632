"""Generic key commands: existence, types, expiry, iteration, renaming, copying, moving
and OBJECT introspection."""

from __future__ import annotations

import random
from typing import Any

import fakekey.memory.lfu as lfu
from fakekey.codecs.glob import Matcher, compile_glob
from fakekey.commands.args import (
    DB_RANGE,
    LLONG_MAX,
    LLONG_MIN,
    NO_SUCH_KEY,
    SYNTAX,
    c_text,
    parse_int,
    try_int,
)
from fakekey.commands.key_order import key_orders
from fakekey.commands.scan import orders_page, parse_cursor, parse_scan_options, table_bits
from fakekey.core.client import Client
from fakekey.core.dirty import INTEGER_REPLY, ONE_IF_WRITTEN
from fakekey.core.keyspace import STRING_TYPES, Database, type_name
from fakekey.core.registry import command, container, keys_range
from fakekey.memory.lazyfree import lazy_setting
from fakekey.resp.replies import OK, ReplyError, Simple
from fakekey.types.hash import HashValue

G = "generic"
KEYSPACE = "keyspace"
MULTI_SHARD = "request_policy:multi_shard response_policy:agg_sum"

SAME_OBJECT = ReplyError("ERR source and destination objects are the same")
INT_RANGE = ReplyError("ERR value is out of range, value must between -2147483648 and 2147483647")


def peek(db: Database, key: bytes) -> Any:
    """The live value without counting an access (Valkey's LOOKUP_NOTOUCH reads); a
    counter as its bytes."""
    if not db.exists(key):
        return None
    value = db.data[key]
    return db.counter_bytes(key, value) if type(value) is int else value


def notify(db: Database, event: str, key: bytes) -> None:
    """A generic-class keyspace event for a change the funnel already recorded."""
    state = db.state
    if state.notify_flags:
        state.notify(db, "g", event, key)


def parse_int32(raw: bytes) -> int:
    """getIntFromObject: a 64-bit integer first, then the int range."""
    value = parse_int(raw)
    if not -(2**31) <= value < 2**31:
        raise INT_RANGE
    return value


def other_db(c: Client, raw: bytes) -> Database:
    index = parse_int32(raw)
    if not 0 <= index < len(c.state.dbs):
        raise DB_RANGE
    return c.state.dbs[index]


# --- existence and type -------------------------------------------------------------------


def delete_keys(c: Client, keys: list[bytes], lazy: bool) -> int:
    """DEL frees per lazyfree-lazy-user-del, UNLINK always in the background."""
    db = c.db
    return sum(db.delete(key, lazy=lazy) for key in keys)


@command("del", -2, "write", keys=keys_range(1, -1, flags="RM delete"), acl=KEYSPACE, group=G,
         since="1.0.0", tips=MULTI_SHARD,
         complexity="O(N) where N is the number of keys that will be removed. When a key to "
         "remove holds a value other than a string, the individual complexity for this key is "
         "O(M) where M is the number of elements in the list, set, sorted set or hash. Removing "
         "a single key that holds a string value is O(1).",
         summary="Removes one or more keys and answers how many existed.")
def del_(c: Client, argv: list[bytes]) -> Any:
    return delete_keys(c, argv[1:], lazy_setting(c.state, "user-del"))


@command("unlink", -2, "write fast", keys=keys_range(1, -1, flags="RM delete"), acl=KEYSPACE,
         group=G, since="4.0.0", tips=MULTI_SHARD,
         complexity="O(1) for each key removed regardless of its size. Then the command does "
         "O(N) work in a different thread in order to reclaim memory, where N is the number of "
         "allocations the deleted objects where composed of.",
         summary="Removes one or more keys (memory reclaimed in the background in Valkey).")
def unlink(c: Client, argv: list[bytes]) -> Any:
    return delete_keys(c, argv[1:], lazy=True)


@command("exists", -2, "readonly fast", keys=keys_range(1, -1, flags="RO"), acl=KEYSPACE,
         group=G, since="1.0.0", tips=MULTI_SHARD,
         complexity="O(N) where N is the number of keys to check.",
         summary="Counts how many of the given keys exist; a key named twice counts twice.")
def exists(c: Client, argv: list[bytes]) -> Any:
    db = c.db
    return sum(db.exists(key) for key in argv[1:])


@command("touch", -2, "readonly fast", keys=keys_range(1, -1, flags="RO"), acl=KEYSPACE,
         group=G, since="3.2.1", tips=MULTI_SHARD,
         complexity="O(N) where N is the number of keys that will be touched.",
         summary="Marks keys as just accessed and counts those that exist.")
def touch(c: Client, argv: list[bytes]) -> Any:
    db = c.db
    now = c.state.now
    touched = 0
    for key in argv[1:]:
        if db.exists(key):  # TOUCH counts as an access even for a CLIENT NO-TOUCH client
            db.access[key] = now
            touched += 1
    return touched


@command("type", 2, "readonly fast", keys=keys_range(1, flags="RO"), acl=KEYSPACE, group=G,
         since="1.0.0", summary="Names the type of a key's value, or none.")
def type_(c: Client, argv: list[bytes]) -> Any:
    value = peek(c.db, argv[1])
    return Simple(b"none" if value is None else type_name(value).encode())


# --- expiry -------------------------------------------------------------------------------

NX, XX, GT, LT = 1, 2, 4, 8
_EXPIRE_OPTIONS = {b"NX": NX, b"XX": XX, b"GT": GT, b"LT": LT}
NX_CONFLICT = ReplyError("ERR NX and XX, GT or LT options at the same time are not compatible")
GT_LT_CONFLICT = ReplyError("ERR GT and LT options at the same time are not compatible")
# C's LLONG_MIN / 1000 truncates toward zero.
_MIN_SECONDS = -(-LLONG_MIN // 1000)


def expire_options(argv: list[bytes]) -> int:
    flags = 0
    for raw in argv[3:]:
        bit = _EXPIRE_OPTIONS.get(raw.upper())
        if bit is None:
            raise ReplyError(b"ERR Unsupported option " + c_text(raw))
        flags |= bit
    if flags & NX and flags & (XX | GT | LT):
        raise NX_CONFLICT
    if flags & GT and flags & LT:
        raise GT_LT_CONFLICT
    return flags


def expire_deadline(raw: bytes, seconds: bool, basetime: int, name: str) -> int:
    """The absolute ms deadline an EXPIRE-family argument asks for, with Valkey's range
    checks (a past or negative deadline is valid: it deletes the key)."""
    when = parse_int(raw)
    invalid = ReplyError(f"ERR invalid expire time in '{name}' command")
    if seconds:
        if when > LLONG_MAX // 1000 or when < _MIN_SECONDS:
            raise invalid
        when *= 1000
    if when > LLONG_MAX - basetime:
        raise invalid
    return when + basetime


def expire_allowed(current: int | None, when: int, flags: int) -> bool:
    """NX/XX/GT/LT against the current deadline; no deadline counts as infinite."""
    if flags & NX and current is not None:
        return False
    if flags & XX and current is None:
        return False
    if flags & GT and (current is None or when <= current):
        return False
    return not (flags & LT and current is not None and when >= current)


def expire_generic(c: Client, argv: list[bytes], seconds: bool, relative: bool) -> int:
    flags = expire_options(argv)
    now = c.state.now
    when = expire_deadline(argv[2], seconds, now if relative else 0, argv[0].decode().lower())
    db = c.db
    key = argv[1]
    if db.lookup(key) is None:
        return 0
    if flags and not expire_allowed(db.expires.get(key), when, flags):
        return 0
    if when <= now and not c.state.config["import-mode"]:  # (an import keeps it, expired)
        db.expire_now(key)  # Valkey deletes it at once, as an expiry
        return 1
    db.set_expire(key, when)
    db.written(key, "expire", "g")
    return 1


_EXPIRE_KEYS = keys_range(1, flags="RW update")


@command("expire", -3, "write fast", keys=_EXPIRE_KEYS, acl=KEYSPACE, group=G, since="1.0.0",
         summary="Gives a key a time to live in seconds (NX | XX | GT | LT).", dirty=INTEGER_REPLY)
def expire(c: Client, argv: list[bytes]) -> Any:
    return expire_generic(c, argv, seconds=True, relative=True)


@command("pexpire", -3, "write fast", keys=_EXPIRE_KEYS, acl=KEYSPACE, group=G, since="2.6.0",
         summary="Gives a key a time to live in milliseconds (NX | XX | GT | LT).", dirty=INTEGER_REPLY)
def pexpire(c: Client, argv: list[bytes]) -> Any:
    return expire_generic(c, argv, seconds=False, relative=True)


@command("expireat", -3, "write fast", keys=_EXPIRE_KEYS, acl=KEYSPACE, group=G, since="1.2.0",
         summary="Makes a key expire at a unix time in seconds (NX | XX | GT | LT).", dirty=INTEGER_REPLY)
def expireat(c: Client, argv: list[bytes]) -> Any:
    return expire_generic(c, argv, seconds=True, relative=False)


@command("pexpireat", -3, "write fast", keys=_EXPIRE_KEYS, acl=KEYSPACE, group=G,
         since="2.6.0",
         summary="Makes a key expire at a unix time in milliseconds (NX | XX | GT | LT).", dirty=INTEGER_REPLY)
def pexpireat(c: Client, argv: list[bytes]) -> Any:
    return expire_generic(c, argv, seconds=False, relative=False)


def deadline_of(c: Client, key: bytes) -> int:
    """The key's deadline in ms; -2 missing, -1 persistent, read without touching."""
    db = c.db
    if not db.exists(key):
        return -2
    when = db.expires.get(key)
    return -1 if when is None else when


def ttl_generic(c: Client, key: bytes, ms: bool) -> int:
    when = deadline_of(c, key)
    if when < 0:
        return when
    left = max(0, when - c.state.now)
    return left if ms else (left + 500) // 1000


_READ_KEY = keys_range(1, flags="RO access")
_TTL_TIPS = "nondeterministic_output"


@command("ttl", 2, "readonly fast", keys=_READ_KEY, acl=KEYSPACE, group=G, since="1.0.0",
         tips=_TTL_TIPS,
         summary="Seconds a key has left to live (rounded); -1 without expiry, -2 missing.")
def ttl(c: Client, argv: list[bytes]) -> Any:
    return ttl_generic(c, argv[1], ms=False)


@command("pttl", 2, "readonly fast", keys=_READ_KEY, acl=KEYSPACE, group=G, since="2.6.0",
         tips=_TTL_TIPS,
         summary="Milliseconds a key has left to live; -1 without expiry, -2 missing.")
def pttl(c: Client, argv: list[bytes]) -> Any:
    return ttl_generic(c, argv[1], ms=True)


@command("expiretime", 2, "readonly fast", keys=_READ_KEY, acl=KEYSPACE, group=G,
         since="7.0.0",
         summary="The unix time in seconds when a key expires; -1 without expiry, -2 missing.")
def expiretime(c: Client, argv: list[bytes]) -> Any:
    when = deadline_of(c, argv[1])
    return when if when < 0 else (when + 500) // 1000  # rounded, as Valkey does


@command("pexpiretime", 2, "readonly fast", keys=_READ_KEY, acl=KEYSPACE, group=G,
         since="7.0.0",
         summary="The unix time in ms when a key expires; -1 without expiry, -2 missing.")
def pexpiretime(c: Client, argv: list[bytes]) -> Any:
    return deadline_of(c, argv[1])


@command("persist", 2, "write fast", keys=keys_range(1, flags="RW update"), acl=KEYSPACE,
         group=G, since="2.2.0", summary="Removes a key's expiry; answers whether it had one.", dirty=INTEGER_REPLY)
def persist(c: Client, argv: list[bytes]) -> Any:
    db = c.db
    key = argv[1]
    if db.lookup(key) is None or not db.persist(key):
        return 0
    db.written(key, "persist", "g")
    return 1


# --- iteration ----------------------------------------------------------------------------


def live_keys(db: Database, keys: list[bytes]) -> list[bytes]:
    """`keys` without the logically expired ones (left in place, as Valkey's KEYS does)."""
    expires = db.expires
    if not expires:
        return keys
    client = db.state.current_client
    if client is not None and client.import_source:  # an import source sees expired keys too
        return keys
    now = db.state.now
    return [k for k in keys if k not in expires or now <= expires[k]]


@command("keys", 2, "readonly", acl=f"{KEYSPACE} dangerous", group=G, since="1.0.0",
         tips="request_policy:all_shards nondeterministic_output_order",
         complexity="O(N) with N being the number of keys in the database, under the "
         "assumption that the key names in the database and the given pattern have limited "
         "length.",
         summary="Lists every key whose name matches a glob pattern.")
def keys_(c: Client, argv: list[bytes]) -> Any:
    db = c.db
    pattern = argv[1]
    if pattern == b"*":  # Valkey's shortcut: here even the empty key name matches
        return live_keys(db, list(db.data))
    return live_keys(db, list(filter(compile_glob(pattern), db.data)))


def scan_page(
    db: Database, cursor: int, count: int, matches: Matcher | None, kind: bytes | None
) -> tuple[int, list[bytes]]:
    """One SCAN call: visit whole buckets from `cursor`'s on until `count` live keys are
    visited (db.exists skips keys deleted since and expires due ones on the way), then
    filter them."""
    orders = key_orders(db, now=db.state.deny_blocking)  # a script or EXEC cannot wait
    if orders is None:  # a big keyspace's first order is being built: come back
        return 1 << table_bits(len(db.data)), []  # masked to bucket 0, not the end
    next_cursor, visited = orders_page(orders, cursor, len(db.data), count, db.exists)
    found = [
        key for key in visited
        if (matches is None or matches(key))
        and (kind is None or type_name(db.data[key]).encode() == kind)
    ]
    return next_cursor, found


@command("scan", -2, "readonly", acl=KEYSPACE, group=G, since="2.8.0",
         tips="nondeterministic_output request_policy:special response_policy:special",
         complexity="O(1) for every call. O(N) for a complete iteration, including enough "
         "command calls for the cursor to return back to 0. N is the number of elements "
         "inside the collection.",
         summary="Iterates over key names with a cursor (MATCH, COUNT, TYPE); every key "
         "present for a whole iteration is returned.")
def scan(c: Client, argv: list[bytes]) -> Any:
    cursor = parse_cursor(argv[1])
    options = parse_scan_options(argv, 2, None, bool(c.state.config["enable-stack-modules"]))
    next_cursor, found = scan_page(c.db, cursor, options.count, options.matches, options.type_name)
    return [str(next_cursor).encode(), found]


@command("randomkey", 1, "readonly", acl=KEYSPACE, group=G, since="1.0.0",
         tips="request_policy:all_shards response_policy:special nondeterministic_output",
         summary="Answers a random key name, or null when the database is empty.")
def randomkey(c: Client, argv: list[bytes]) -> Any:
    if c.state.paused is None:  # O(1) a draw; an expired draw is deleted and another drawn
        return c.db.random_key()
    return random_key_while_paused(c)


def random_key_while_paused(c: Client) -> bytes | None:
    """CLIENT PAUSE keeps expired keys: draws skip them without deleting, and when every
    key has expired Valkey answers one of them."""
    db = c.db
    candidates = list(db.data)
    while candidates:
        i = random.randrange(len(candidates))
        key = candidates[i]
        if db.exists(key):  # an expired pick is deleted, as Valkey does, and another drawn
            return key
        candidates[i] = candidates[-1]
        candidates.pop()
    if c.state.paused is not None and db.data and len(db.expires) == len(db.data):
        return key  # CLIENT PAUSE keeps expired keys: Valkey then answers one of them
    return None


# --- renaming, copying, moving ------------------------------------------------------------


def rename_generic(c: Client, argv: list[bytes], nx: bool) -> bool:
    """Move src's value (and deadline) to dst; False when NX finds dst taken."""
    db = c.db
    src, dst = argv[1], argv[2]
    value = db.lookup(src)
    if value is None:
        raise NO_SUCH_KEY
    if src == dst:
        return not nx
    if db.exists(dst):
        if nx:
            return False
        db.delete(dst, event=None)  # a replaced destination gets no event of its own
    when = db.expires.get(src)
    db.set_value(dst, value, event=None)
    carry_string_form(db, src, db, dst)
    if when is not None:
        db.set_expire(dst, when)
    db.delete(src, event="rename_from")
    notify(db, "rename_to", dst)
    return True


@command("rename", 3, "write",
         keys=(keys_range(1, flags="RW access delete"), keys_range(2, flags="OW update")),
         acl=KEYSPACE, group=G, since="1.0.0",
         summary="Gives a key a new name, replacing any key of that name; the TTL follows.", dirty=ONE_IF_WRITTEN)
def rename(c: Client, argv: list[bytes]) -> Any:
    rename_generic(c, argv, nx=False)
    return OK


@command("renamenx", 3, "write fast",
         keys=(keys_range(1, flags="RW access delete"), keys_range(2, flags="OW insert")),
         acl=KEYSPACE, group=G, since="1.0.0",
         summary="Renames a key only when the new name is free; answers 1 if it did.", dirty=ONE_IF_WRITTEN)
def renamenx(c: Client, argv: list[bytes]) -> Any:
    return int(rename_generic(c, argv, nx=True))


def carry_string_form(source: Database, src: bytes, target: Database, dst: bytes) -> None:
    """RENAME, MOVE and COPY keep a string's stored form (a number stored as text stays
    text), as Valkey moves or duplicates the object itself."""
    if src in source.numbers_as_text:
        target.numbers_as_text.add(dst)


def copy_value(value: Any) -> Any:
    """A deep copy: strings keep their representation (a raw string stays raw)."""
    if type(value) is bytes:
        return value
    if type(value) is bytearray:
        return bytearray(value)
    return value.copy()


def copy_options(c: Client, argv: list[bytes]) -> tuple[Database, bool]:
    target = c.db
    replace = False
    i = 3
    while i < len(argv):
        opt = argv[i].upper()
        if opt == b"REPLACE":
            replace = True
            i += 1
        elif opt == b"DB" and i + 1 < len(argv):
            target = other_db(c, argv[i + 1])
            i += 2
        else:
            raise SYNTAX
    return target, replace


@command("copy", -3, "write denyoom",
         keys=(keys_range(1, flags="RO access"), keys_range(2, flags="OW update")),
         acl=KEYSPACE, group=G, since="6.2.0",
         complexity="O(N) worst case for collections, where N is the number of nested items. "
         "O(1) for string values.",
         summary="Copies a key's value (and TTL) to another key, in this or another database "
         "(DB, REPLACE).", dirty=ONE_IF_WRITTEN)
def copy(c: Client, argv: list[bytes]) -> Any:
    target, replace = copy_options(c, argv)
    src, dst = argv[1], argv[2]
    if target is c.db and src == dst:
        raise SAME_OBJECT
    value = c.db.lookup(src)
    c.db.count_read(value is not None)  # Valkey reads the source with lookupKeyRead
    if value is None:
        return 0
    if target.exists(dst):
        if not replace:
            return 0
        target.delete(dst, event=None)
    when = c.db.expires.get(src)
    if type(value) is HashValue:  # fields past their deadline are not copied (hashTypeDup)
        value = value.live(c.state.now)
    target.set_value(dst, copy_value(value), event=None)
    carry_string_form(c.db, src, target, dst)
    if when is not None:
        target.set_expire(dst, when)
    notify(target, "copy_to", dst)
    return 1


@command("move", 3, "write fast", keys=keys_range(1, flags="RW access update"), acl=KEYSPACE,
         group=G, since="1.0.0",
         summary="Moves a key to another database unless a key of that name is there.", dirty=ONE_IF_WRITTEN)
def move(c: Client, argv: list[bytes]) -> Any:
    source = c.db
    target = other_db(c, argv[2])
    if target is source:
        raise SAME_OBJECT
    key = argv[1]
    value = source.lookup(key)
    if value is None or target.exists(key):
        return 0
    when = source.expires.get(key)
    target.set_value(key, value, event=None)
    carry_string_form(source, key, target, key)
    if when is not None:
        target.set_expire(key, when)
    source.delete(key, event="move_from")
    notify(target, "move_to", key)
    return 1


# --- OBJECT -------------------------------------------------------------------------------

container("object", group=G, since="2.2.3", summary="Inspects how a key's value is stored.")

_OBJECT_KEY = keys_range(2, flags="RO")
_NONDETERMINISTIC = "nondeterministic_output"
IDLE_UNDER_LFU = ReplyError(
    "ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when "
    "switching between policies at runtime LRU and LFU data will take some time to adjust."
)
FREQ_WITHOUT_LFU = ReplyError(
    "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note "
    "that when switching between policies at runtime LRU and LFU data will take some time to "
    "adjust."
)
OBJECT_HELP = [
    "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "ENCODING <key>",
    "    Return the kind of internal representation used in order to store the value",
    "    associated with a <key>.",
    "FREQ <key>",
    "    Return the access frequency index of the <key>. The returned integer is",
    "    proportional to the logarithm of the recent access frequency of the key.",
    "IDLETIME <key>",
    "    Return the idle time of the <key>, that is the approximated number of",
    "    seconds elapsed since the last access to the key.",
    "REFCOUNT <key>",
    "    Return the number of references of the value associated with the specified",
    "    <key>.",
    "HELP",
    "    Print this help.",
]


def lfu_policy(c: Client) -> bool:
    return c.state.config["maxmemory-policy"].endswith("-lfu")


# Valkey stores a string value in one allocation with its key (and deadline) while they
# fit: key + value may reach 113 bytes, 2 fewer once the key needs a larger header (32
# bytes and up), 8 fewer with a deadline. Measured on Valkey 9.1.
EMBSTR_BUDGET = 113
LONG_KEY = 32


def string_encoding(key: bytes, value: bytes | bytearray, volatile: bool, as_text: bool = False) -> bytes:
    """int, embstr or raw, as Valkey decides for a string stored whole at `key`; a
    bytearray was modified in place (APPEND, SETRANGE, ...), which Valkey keeps raw;
    `as_text`: a number stored as text (Database.numbers_as_text)."""
    if type(value) is bytearray:
        return b"raw"
    if not as_text and try_int(value) is not None:
        return b"int"
    budget = EMBSTR_BUDGET - (2 if len(key) >= LONG_KEY else 0) - (8 if volatile else 0)
    return b"embstr" if len(key) + len(value) <= budget else b"raw"


@command("object|encoding", 3, "readonly", keys=_OBJECT_KEY, acl=KEYSPACE, since="2.2.3",
         tips=_NONDETERMINISTIC, summary="Names the internal encoding of a key's value.")
def object_encoding(c: Client, argv: list[bytes]) -> Any:
    db = c.db
    key = argv[2]
    value = peek(db, key)
    if value is None:
        return None
    if isinstance(value, STRING_TYPES):
        return string_encoding(key, value, key in db.expires, key in db.numbers_as_text)
    return value.encoding(c.state)


@command("object|freq", 3, "readonly", keys=_OBJECT_KEY, acl=KEYSPACE, since="4.0.0",
         tips=_NONDETERMINISTIC,
         summary="A key's logarithmic access-frequency counter (under an LFU policy).")
def object_freq(c: Client, argv: list[bytes]) -> Any:
    db = c.db
    key = argv[2]
    if peek(db, key) is None:
        return None
    if not lfu_policy(c):
        raise FREQ_WITHOUT_LFU
    # Valkey's counter, decayed, not touched (a key made before the policy was an LFU one
    # counts from LFU_INIT_VAL now: Valkey reads its LRU clock as a counter then)
    now = c.state.now
    return lfu.decayed(db.lfu.get(key) or lfu.fresh(now), now, c.state.config["lfu-decay-time"])


@command("object|help", 2, "loading stale", acl=KEYSPACE, since="6.2.0",
         summary="Lists the OBJECT subcommands.")
def object_help(c: Client, argv: list[bytes]) -> Any:
    return [Simple(line.encode()) for line in OBJECT_HELP]


@command("object|idletime", 3, "readonly", keys=_OBJECT_KEY, acl=KEYSPACE, since="2.2.3",
         tips=_NONDETERMINISTIC, summary="Seconds since a key was last read or written.")
def object_idletime(c: Client, argv: list[bytes]) -> Any:
    db = c.db
    key = argv[2]
    if peek(db, key) is None:
        return None
    if lfu_policy(c):
        raise IDLE_UNDER_LFU
    now = c.state.now
    # Valkey's LRU clock ticks in whole seconds.
    return now // 1000 - db.access.get(key, now) // 1000


@command("object|refcount", 3, "readonly", keys=_OBJECT_KEY, acl=KEYSPACE, since="2.2.3",
         tips=_NONDETERMINISTIC,
         summary="The reference count of a key's value (always 1: values are not shared).")
def object_refcount(c: Client, argv: list[bytes]) -> Any:
    return None if peek(c.db, argv[2]) is None else 1
